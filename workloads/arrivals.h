/* arrivals.h -- request arrival times: Poisson (the paper's 10 ms quanta), exponential
 * or gamma gaps, a burst at t = 0, replay of recorded timestamps; a rate ramp.
 *
 *   poisson      as the paper's harness (CacheFlow benchmark/trace.py): time runs in
 *                quanta of quantum_s (10 ms); quantum q gets Poisson(rate * quantum_s)
 *                arrivals, all at time q * quantum_s.  With a duration there are
 *                floor(duration_s / quantum_s) quanta.
 *   exponential  gaps ~ Exp(rate), the first request at t = 0 (vLLM's later
 *                benchmark_serving); requests arriving at t >= duration_s are dropped.
 *   gamma        gaps ~ Gamma(shape = burstiness, scale = 1 / (rate * burstiness)): mean
 *                1 / rate, coefficient of variation 1 / sqrt(burstiness); the first
 *                request at t = 0.  This is vLLM bench serve's --burstiness (vllm-project/
 *                vllm, vllm/benchmarks/serve.py get_request at commit def9ce85ba10;
 *                AIPerf's --arrival-smoothness is the same shape): burstiness 1 is
 *                `exponential`, below 1 burstier, above 1 more regular.
 *   burst        num requests, all at t = 0 (offline throughput).
 *   replay       recorded timestamps (e.g. the Azure LLM inference trace), shifted so
 *                the first is 0; with rate > 0 the times are scaled so the mean rate
 *                ((count - 1) / span) equals `rate`; then cut at duration_s / num.
 * Limits: duration_s > 0 keeps arrivals < duration_s, num > 0 keeps the first num;
 * poisson, exponential and gamma need at least one of the two, burst needs num.
 *
 * Ramp (poisson, exponential, gamma; vLLM bench serve's --ramp-up-strategy with
 * --ramp-up-start-rps / --ramp-up-end-rps): the rate moves from start to end, linearly
 * (r(p) = start + (end - start) p) or exponentially (r(p) = start (end / start)^p, both
 * > 0), with p the progress of the run from 0 to 1; `rate` is then not used.
 *   duration_s > 0   p = t / duration_s.  The arrivals are an exact time change of the
 *                    stationary process: gaps of the unit-rate process (gamma of mean 1,
 *                    or exponential) laid out on Lambda(t) = integral of r over [0, t],
 *                    so the expected count in [a, b) is Lambda(b) - Lambda(a) (poisson:
 *                    quantum q gets Poisson(Lambda((q+1) quantum) - Lambda(q quantum))).
 *   num only         p = i / (num - 1) at the i-th request and the gap after it is drawn
 *                    at rate r(p): vLLM's rule (_get_current_request_rate, same file).
 *                    poisson needs duration_s (its quanta are in time).
 * A ramp may go down (start > end) as well as up.
 * All randomness comes from the caller's pb_rng (the arrivals stream). */
#ifndef PB_ARRIVALS_H
#define PB_ARRIVALS_H

#include <stdint.h>

#include "pb.h"
#include "rng.h"

#define PB_ARRIVAL_NAMES "poisson|exponential|gamma|burst|replay"
#define PB_RAMP_NAMES "none|linear|exponential"

typedef enum {
    PB_ARRIVALS_POISSON = 0,
    PB_ARRIVALS_EXPONENTIAL,
    PB_ARRIVALS_BURST,
    PB_ARRIVALS_REPLAY,
    PB_ARRIVALS_GAMMA
} pb_arrival_kind;

typedef enum { PB_RAMP_NONE = 0, PB_RAMP_LINEAR, PB_RAMP_EXPONENTIAL } pb_ramp_kind;

typedef struct {
    pb_arrival_kind kind;
    double rate;            /* requests per second (replay: 0 = as recorded)          */
    double duration_s;      /* 0 = no time limit                                      */
    int64_t num;            /* 0 = no count limit                                     */
    double quantum_s;       /* poisson: the time quantum (0.01 = the paper's 10 ms)   */
    double burstiness;      /* gamma: the gaps' shape (> 0; 1 = exponential)          */
    pb_ramp_kind ramp;      /* PB_RAMP_NONE: the constant `rate`                      */
    double ramp_start, ramp_end;   /* req/s at progress 0 and 1                       */
} pb_arrival_cfg;

pb_status pb_arrival_kind_by_name(const char *name, pb_arrival_kind *out);
const char *pb_arrival_kind_name(pb_arrival_kind k);
pb_status pb_ramp_kind_by_name(const char *name, pb_ramp_kind *out);
const char *pb_ramp_kind_name(pb_ramp_kind k);

/* The rate at progress p in [0, 1] (the constant rate without a ramp). */
double pb_arrival_rate_at(const pb_arrival_cfg *c, double p);
/* The expected number of arrivals of c (num when set, else the rate integrated over
 * duration_s: the ramp's mean rate x duration); NAN for burst and replay. */
double pb_arrival_expected_count(const pb_arrival_cfg *c);

/* Generate arrival times into *times (malloc'd, non-decreasing; caller frees) and
 * their count into *n.  replay_ts / n_replay are the recorded timestamps (seconds,
 * non-decreasing; only for replay).  Errors (PB_ERR_INVALID) name the bad setting. */
pb_status pb_arrivals_generate(const pb_arrival_cfg *c, pb_rng *rng, const double *replay_ts,
                               int64_t n_replay, double **times, int64_t *n, char *err,
                               size_t errlen);

/* Read the TIMESTAMP column of an Azure LLM inference trace CSV
 * ("2023-11-16 18:15:46.6805900") as seconds since its first row.  Errors name
 * file:line. */
pb_status pb_arrivals_read_azure(const char *path, double **ts, int64_t *n, char *err,
                                 size_t errlen);

#endif /* PB_ARRIVALS_H */
