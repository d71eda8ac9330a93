/* metrics.h -- what a run measured: per request, per step, per run (DESIGN §7).
 *
 * The engine records into a pb_metrics during pb_engine_run(); the experiment
 * runner then reads the summary (pb_metrics_summary), the per-request rows and,
 * when asked for, the per-step rows.  All times are simulated-clock seconds.
 *
 * Definitions (paper §6.1, DESIGN §7):
 *   normalized latency  (finish - arrival) / output_len, computed per SEQUENCE
 *                       (a group's n or beam_width sequences share its arrival and
 *                       finish, as CacheFlow's harness), s/token; mean, p50/p90/p99
 *                       over finished requests' sequences;
 *   TTFT                first_token - arrival (first token = end of the prefill
 *                       step), per request;
 *   TPOT                (finish - first_token) / (output_len - 1), requests with
 *                       output_len > 1 (vLLM benchmark_serving);
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
 *                       swap_unit_tokens * kv_bytes_per_token).
 * Percentiles: linear interpolation between closest ranks (numpy's default). */
#ifndef PB_METRICS_H
#define PB_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kv_manager.h"
#include "pb.h"

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
    int32_t n_recompute;      /* preemptions by recompute                            */
    int32_t n_swap;           /* preemptions by swapping                             */
    int64_t swap_blocks;      /* pairs moved out + in                                */
    double swap_bytes;
    bool finished, rejected;
} pb_req_metrics;

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
    int64_t n_requests, n_finished, n_rejected, n_unfinished;
    int64_t n_steps, n_prefill_steps;
    double duration_s, busy_s;
    double norm_latency_mean, norm_latency_p50, norm_latency_p90, norm_latency_p99;
    double e2e_latency_mean;                                  /* per request, s   */
    double ttft_mean, ttft_p50, ttft_p99;
    double tpot_mean, tpot_p50, tpot_p99;
    double req_throughput, output_tok_throughput, total_tok_throughput;
    int64_t prompt_tokens, output_tokens;                     /* finished requests */
    double avg_batched_requests, avg_batched_seqs;
    double mem_token_frac, mem_reserved_frac, mem_internal_frac, mem_free_frac;
    double mem_saving;                                        /* sharing, [0,1)    */
    int64_t n_preempt_recompute, n_preempt_swap, swap_blocks;
    double swap_bytes;
} pb_run_summary;

typedef struct pb_metrics pb_metrics;

/* record_steps: keep every pb_step_metrics row (else only the aggregates). */
pb_metrics *pb_metrics_create(bool record_steps);
void pb_metrics_destroy(pb_metrics *m);
void pb_metrics_reset(pb_metrics *m);

/* Results (valid after pb_engine_run). */
void pb_metrics_summary(const pb_metrics *m, pb_run_summary *out);
const pb_req_metrics *pb_metrics_requests(const pb_metrics *m, int64_t *n);
const pb_step_metrics *pb_metrics_steps(const pb_metrics *m, int64_t *n);  /* NULL, 0 if not recorded */

/* vLLM benchmark_serving-style block ("============ Serving Benchmark Result ...") */
void pb_metrics_print_summary(FILE *f, const pb_run_summary *s, const char *title);

/* ---- recording (engine.c) ---- */
void pb_metrics_begin(pb_metrics *m, int64_t n_requests);
pb_req_metrics *pb_metrics_req(pb_metrics *m, int64_t id);
void pb_metrics_add_step(pb_metrics *m, const pb_step_metrics *st);
void pb_metrics_end(pb_metrics *m, double clock_s);

/* Invariants (O(requests + recorded steps), valid at any point of a run):
 *   per request: id == index; prompt_len, output_len, n_seqs >= 1; preemption and
 *     swap counters >= 0; finished XOR rejected XOR unfinished; a finished request
 *     has arrival <= first token <= finish (all finite), an unfinished or rejected
 *     one no finish time, and any first token is >= arrival;
 *   per recorded step: latency, swap and copy times finite and >= 0, swap and copy
 *     each within the latency; batch counts consistent (prefill seqs + decode
 *     tokens == seqs, groups <= seqs); the memory breakdown's four classes >= 0 and
 *     summing to the total slots; steps in clock order (t + latency <= next t);
 *   aggregates: step and prefill-step counts and busy time equal the recorded rows
 *     (when recorded); the averaged memory fractions sum to one per step.
 * PB_OK or PB_ERR_INVALID with the first violation logged through pb_log_error. */
pb_status pb_metrics_check(const pb_metrics *m);

/* Percentile p in [0,100] of v[0..n) (sorts v in place).  n == 0 -> 0. */
double pb_percentile(double *v, int64_t n, double p);

#ifdef __cplusplus
}
#endif
#endif /* PB_METRICS_H */
