/* arrivals.h -- request arrival times: Poisson (the paper's 10 ms quanta), exponential
 * gaps, a burst at t = 0, and replay of recorded timestamps.
 *
 *   poisson      as the paper's harness (CacheFlow benchmark/trace.py): time runs in
 *                quanta of quantum_s (10 ms); quantum q gets Poisson(rate * quantum_s)
 *                arrivals, all at time q * quantum_s.  With a duration there are
 *                floor(duration_s / quantum_s) quanta.
 *   exponential  gaps ~ Exp(rate), the first request at t = 0 (vLLM's later
 *                benchmark_serving); requests arriving at t >= duration_s are dropped.
 *   burst        num requests, all at t = 0 (offline throughput).
 *   replay       recorded timestamps (e.g. the Azure LLM inference trace), shifted so
 *                the first is 0; with rate > 0 the times are scaled so the mean rate
 *                ((count - 1) / span) equals `rate`; then cut at duration_s / num.
 * Limits: duration_s > 0 keeps arrivals < duration_s, num > 0 keeps the first num;
 * poisson and exponential need at least one of the two, burst needs num.
 * All randomness comes from the caller's pb_rng (the arrivals stream). */
#ifndef PB_ARRIVALS_H
#define PB_ARRIVALS_H

#include <stdint.h>

#include "pb.h"
#include "rng.h"

#define PB_ARRIVAL_NAMES "poisson|exponential|burst|replay"

typedef enum {
    PB_ARRIVALS_POISSON = 0,
    PB_ARRIVALS_EXPONENTIAL,
    PB_ARRIVALS_BURST,
    PB_ARRIVALS_REPLAY
} pb_arrival_kind;

typedef struct {
    pb_arrival_kind kind;
    double rate;            /* requests per second (replay: 0 = as recorded)          */
    double duration_s;      /* 0 = no time limit                                      */
    int64_t num;            /* 0 = no count limit                                     */
    double quantum_s;       /* poisson: the time quantum (0.01 = the paper's 10 ms)   */
} pb_arrival_cfg;

pb_status pb_arrival_kind_by_name(const char *name, pb_arrival_kind *out);
const char *pb_arrival_kind_name(pb_arrival_kind k);

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
