/* metrics.h -- what a run measured: per request, per step, per run (docs/DESIGN.md §7).
 *
 * The engine records into a pb_metrics during pb_engine_run(); the experiment
 * runner then reads the summary (pb_metrics_summary), the per-request rows and,
 * when asked for, the per-step rows.  All times are simulated-clock seconds.
 *
 * Definitions (paper §6.1, docs/DESIGN.md §7):
 *   normalized latency  (finish - arrival) / output_len, computed per SEQUENCE
 *                       (a group's n or beam_width sequences share its arrival and
 *                       finish, as CacheFlow's harness), s/token; mean, p50/p90/p99
 *                       over finished requests' sequences;
 *   TTFT                first_token - arrival (first token = end of the prefill
 *                       step), per request;
 *   TPOT                (finish - first_token) / (output_len - 1), requests with
 *                       output_len > 1 (vLLM benchmark_serving);
 *   ITL                 inter-token latency: the gaps between a request's successive
 *                       token-producing steps (pb_metrics_token), every gap of every
 *                       request pooled (vLLM benchmark_serving);
 *   e2e latency         finish - arrival, per finished request;
 *   goodput             (pb_metrics_goodput) requests that finished with TTFT <= the
 *                       SLO's and TPOT <= the SLO's (output_len 1: TTFT only), as a
 *                       fraction of all requests and per second of duration;
 *   duration            clock at the last finish (the trace starts at 0);
 *   throughput          finished requests / duration; output tokens (all
 *                       sequences) / duration; (prompt + output) tokens / duration;
 *   avg batched requests time-average over busy time of the number of groups in
 *                       the step's batch: sum(groups_i * latency_i) / sum(latency_i);
 *   memory breakdown    the KV manager's four classes (pb_kv_usage) at the end of
 *                       each step's scheduling (what the step's batch occupies),
 *                       averaged over steps, as fractions of total slots;
 *   memory saving       blocks saved by sharing / blocks needed without sharing,
 *                       = sum_steps(logical - physical) / sum_steps(logical) over
 *                       steps with logical > 0 (paper Fig. 15);
 *   preemptions         counts by mode; swap blocks and bytes (bytes = pairs *
 *                       swap_unit_tokens * kv_bytes_per_token);
 *   prefix-cache hits   (systems with automatic prefix caching, set after the run by
 *                       pb_metrics_set_prefix_cache) tokens admissions found cached /
 *                       tokens they had to provide KV for (per admission: the
 *                       group's len, prompt + generated after a recompute).
 * Percentiles: linear interpolation between closest ranks (numpy's default). */
#ifndef PB_METRICS_H
#define PB_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kv_manager.h"
#include "pb.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t id;               /* request index in the trace                          */
    double arrival_s;
    double first_token_s;     /* -1 if never produced                                */
    double finish_s;          /* -1 if not finished                                  */
    int32_t prompt_len;
    int32_t output_len;       /* tokens per sequence actually required (capped)      */
    int32_t n_seqs;           /* sequences that count for normalized latency        */
    int32_t n, beam_width;    /* the request's parallel samples and beam width       */
    int32_t n_recompute;      /* preemptions by recompute                            */
    int32_t n_swap;           /* preemptions by swapping                             */
    int64_t swap_blocks;      /* pairs moved out + in                                */
    double swap_bytes;
    bool finished;
    bool rejected;            /* refused: it can never be served (admission)         */
    bool aborted;             /* taken out while served: its client went away, or the
                                 server stopped (pb_engine_abort_request)            */
} pb_req_metrics;

/* A request's derived latencies, in the units of the per-request CSV; NAN where not
 * defined (no first token; unfinished; tpot needs output_len > 1).  The summary's
 * means and percentiles are taken over exactly these doubles, so a reader of the
 * per-request CSV (%.17g) recomputes them bit for bit. */
typedef struct {
    double ttft_ms, tpot_ms, e2e_s, norm_latency_s_per_token;
} pb_req_latency;
pb_req_latency pb_req_latency_of(const pb_req_metrics *r);

typedef struct {
    double t_s;               /* clock at the start of the step                      */
    double latency_s;         /* executor latency (swap_s, copy_s included)          */
    double swap_s, copy_s;
    int32_t n_groups, n_seqs; /* in the batch                                        */
    int32_t n_prefill_seqs;
    int64_t prefill_tokens;
    int32_t decode_tokens;
    int32_t n_preempted, n_swap_in_groups;
    int32_t n_copies, n_swap_in, n_swap_out;   /* block pairs                       */
    int32_t n_running, n_waiting, n_swapped;   /* groups after scheduling           */
    pb_kv_usage mem;          /* after scheduling                                    */
} pb_step_metrics;

typedef struct {
    int64_t n_requests, n_finished, n_rejected, n_aborted, n_unfinished;
    int64_t n_steps, n_prefill_steps;
    double duration_s, busy_s;
    double norm_latency_mean, norm_latency_p50, norm_latency_p90, norm_latency_p99;
    double e2e_latency_mean, e2e_p50, e2e_p90, e2e_p99;       /* per request, s   */
    double ttft_mean_ms, ttft_p50_ms, ttft_p90_ms, ttft_p99_ms;
    double tpot_mean_ms, tpot_p50_ms, tpot_p90_ms, tpot_p99_ms;
    double itl_mean_ms, itl_p50_ms, itl_p90_ms, itl_p99_ms;
    double req_throughput, output_tok_throughput, total_tok_throughput;
    int64_t prompt_tokens, output_tokens;                     /* finished requests */
    double avg_batched_requests, avg_batched_seqs;
    double mem_token_frac, mem_reserved_frac, mem_internal_frac, mem_free_frac;
    double mem_saving;                                        /* sharing, [0,1)    */
    int64_t n_preempt_recompute, n_preempt_swap, swap_blocks;
    double swap_bytes;
    bool prefix_caching;                                      /* the next three set */
    int64_t prefix_hit_tokens, prefix_query_tokens;
    double prefix_hit_frac;                                   /* hit / query, 0 if none */
} pb_run_summary;

typedef struct pb_metrics pb_metrics;

/* record_steps: keep every pb_step_metrics row (else only the aggregates). */
pb_metrics *pb_metrics_create(bool record_steps);
void pb_metrics_destroy(pb_metrics *m);
void pb_metrics_reset(pb_metrics *m);

/* Results (valid after pb_engine_run).  pb_metrics_requests makes every request's
 * row (O(requests) memory; tests and small runs); the summary, goodput and CSV writers
 * below do not: they read the rows of the requests the run touched and derive the
 * others (never arrived or never served: unfinished, no tokens) from the trace. */
void pb_metrics_summary(const pb_metrics *m, pb_run_summary *out);
const pb_req_metrics *pb_metrics_requests(pb_metrics *m, int64_t *n);   /* n may be NULL */
const pb_step_metrics *pb_metrics_steps(const pb_metrics *m, int64_t *n);  /* NULL, 0 if not recorded */

/* SLO goodput: slo_ttft_ms / slo_tpot_ms <= 0 mean "no bound".  *met = requests
 * meeting both, *frac = met / all requests (0 when none), *rate = met / duration_s
 * of the summary (0 when the duration is 0). */
void pb_metrics_goodput(const pb_metrics *m, double slo_ttft_ms, double slo_tpot_ms, double duration_s,
                        int64_t *met, double *frac, double *rate);

/* Call fn for every request of the run in id order, each row as pb_metrics_write_requests
 * sees it (rows the run never touched made on the fly, not kept): per-request outputs and
 * statistics the layers above derive, without pb_metrics_requests' O(requests) copy.
 * touched_only: only the rows the run touched (every finished, rejected or started request;
 * the others never arrived or never got a token). */
void pb_metrics_each_request(const pb_metrics *m, bool touched_only, void (*fn)(const pb_req_metrics *r, void *user),
                             void *user);

/* The pooled inter-token latencies in ms: their mean, population standard deviation
 * (numpy's np.std, as vLLM bench serve) and the percentiles pcts[0..n_pcts), which must
 * not decrease -- the summary's itl_mean_ms, itl_p50_ms ... bit for bit for the same p;
 * all NAN when there is no gap (no request produced a second token). */
void pb_metrics_itl_stats(const pb_metrics *m, const double *pcts, int n_pcts, double *mean_ms, double *std_ms,
                          double *pct_ms);

/* Per-request CSV rows (no header), one per request in id order: the columns of
 * PB_METRICS_REQUEST_COLUMNS, each row preceded by `prefix` (e.g. "vllm,2,").
 * Numbers print with %.17g (round-trip exact), undefined cells empty.  Streams to f.
 * pb_metrics_write_request_row writes one row's columns, no line end: the one writer of
 * these columns (a caller may add its own after them, point_out.h's slo_met). */
#define PB_METRICS_REQUEST_COLUMNS                                                              \
    "request_id,arrival_s,first_token_s,finish_s,prompt_len,output_len,n,beam_width,ttft_ms,"   \
    "tpot_ms,e2el_ms,normalized_latency_s_per_token,preemptions,rejected,aborted"
void pb_metrics_write_request_row(FILE *f, const pb_req_metrics *r, const char *prefix);
void pb_metrics_write_requests(const pb_metrics *m, FILE *f, const char *prefix);

/* Per-step timeline rows (needs record_steps), the columns of PB_METRICS_STEP_COLUMNS:
 * kv_blocks_used/free are the GPU KV manager's (paged: blocks; contiguous: slots);
 * preempted counts the groups preempted by the step's scheduling; swapped_bytes =
 * (swap-in + swap-out block pairs) x the run's bytes per pair (total swap bytes /
 * total swap pairs of the requests). */
#define PB_METRICS_STEP_COLUMNS                                                                 \
    "step,time_s,latency_s,batch_requests,batch_seqs,prefill_tokens,decode_tokens,"            \
    "kv_blocks_used,kv_blocks_free,running,waiting,swapped,preempted,swap_in_blocks,"          \
    "swap_out_blocks,swapped_bytes"
void pb_metrics_write_steps(const pb_metrics *m, FILE *f, const char *prefix);

/* vLLM benchmark_serving-style block ("============ Serving Benchmark Result ...") */
void pb_metrics_print_summary(FILE *f, const pb_run_summary *s, const char *title);

/* ---- recording (engine.c) ---- */
/* Start a run of trace t (which must outlive the metrics' results: rows not yet made
 * are derived from it).  A request's row is made, in id order, on its first
 * pb_metrics_req -- so a run holds rows only up to the latest
 * request it touched, O(arrived requests), not O(trace).  A new row holds the
 * request's shape as its group sees it (pb_group_shape under max_model_len: capped
 * output_len, n, beam_width, n_seqs = the group's max sequences), no times (-1),
 * zero counters. */
void pb_metrics_begin(pb_metrics *m, const pb_trace *t, int32_t max_model_len);
pb_req_metrics *pb_metrics_req(pb_metrics *m, int64_t id);
/* A request beyond the trace's arrives (engine.h pb_engine_add_request): its row,
 * made now (with every row before it), gets the next id, which is returned. */
int64_t pb_metrics_add_request(pb_metrics *m, const pb_request *r);
void pb_metrics_add_step(pb_metrics *m, const pb_step_metrics *st);
/* A request produced a token at clock t (every sequence of it in that step), its
 * previous one at last_s (< 0: this is its first, no gap): t - last_s is one ITL
 * sample.  The caller keeps last_s (the engine: pb_group.last_token_s), so recording
 * touches no request row; the request's row must exist by the end of the run (the
 * engine makes it at the first token).  Gaps are kept in recording order as runs of
 * bitwise-equal values (value, count): the groups that decoded in the previous step
 * share one gap, so memory and the summary's selection grow with the runs, about
 * O(steps), not O(tokens) (its mean still adds each gap in order); the summary's ITL
 * numbers are those of the expanded gaps, bit for bit. */
void pb_metrics_token(pb_metrics *m, double last_s, double t);
/* n requests each produced a token at t, their previous ones all at last_s: exactly
 * n calls of pb_metrics_token(m, last_s, t). */
void pb_metrics_tokens(pb_metrics *m, double last_s, double t, int64_t n);
void pb_metrics_end(pb_metrics *m, double clock_s);
/* After the run (pb_metrics_begin clears it): the KV manager's prefix-cache counters
 * over the run (block_manager.h pb_paged_cache_stats); marks the run as caching. */
void pb_metrics_set_prefix_cache(pb_metrics *m, int64_t hit_tokens, int64_t query_tokens);

/* Invariants (O(rows made + recorded steps), valid at any point of a run):
 *   per request row made: id == index; prompt_len, output_len, n_seqs >= 1; preemption and
 *     swap counters >= 0; at most one of finished, rejected, aborted; a finished request
 *     has arrival <= first token <= finish (all finite), any other
 *     one no finish time, and any first token is >= arrival;
 *   per recorded step: latency, swap and copy times finite and >= 0, swap and copy
 *     each within the latency; batch counts consistent (prefill seqs + decode
 *     tokens == seqs, groups <= seqs); the memory breakdown's four classes >= 0 and
 *     summing to the total slots; steps in clock order (t + latency <= next t);
 *   aggregates: step and prefill-step counts and busy time equal the recorded rows
 *     (when recorded); the averaged memory fractions sum to one per step;
 *   inter-token gaps: every run's value finite and >= 0, its count >= 1; the counts
 *     sum to the gaps recorded, at most sum(output_len - 1) over the rows made (a
 *     request without a row has produced no token).
 * PB_OK or PB_ERR_INVALID with the first violation logged through pb_log_error. */
pb_status pb_metrics_check(const pb_metrics *m);

/* Percentile p in [0,100] of v[0..n) (sorts v in place).  n == 0 -> 0. */
double pb_percentile(double *v, int64_t n, double p);

#ifdef __cplusplus
}
#endif
#endif /* PB_METRICS_H */
