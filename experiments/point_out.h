/* point_out.h -- what one serving point reports: its named metrics, its
 * benchmark_serving block with named checks, and (when the runner asks) its
 * per-request and per-step files.  Called by the point function (system.c) after
 * the engine run; docs/outputs.md is the column dictionary.
 *
 * Metrics set (pb_point_metrics names; every latency in ms, the unit in every name
 * but the paper's normalized latency, s/token):
 *   normalized_latency (mean) _p50 _p90 _p99      s/token, per sequence (docs/DESIGN.md §7)
 *   {ttft,tpot,itl,e2el}_{mean,std,p<P>}_ms    over finished requests (itl: every gap of
 *                              every request pooled); std is the population's (numpy's
 *                              np.std, as vLLM bench serve); P = 50 and each of the
 *                              experiment's `percentiles:` (default [50, 90, 99]; "p99.9"
 *                              for 99.9, as vLLM's p_word)
 *   request_throughput_per_s  output_token_throughput_per_s  total_token_throughput_per_s
 *   input_tokens output_tokens  the finished requests' prompt and output tokens (vLLM's
 *                              total_input_tokens, total_output_tokens)
 *   max_concurrent_requests    the most requests in flight in one second of the run (vLLM
 *                              bench serve's "Peak concurrent requests": each request counts
 *                              in every whole second from its arrival to its finish)
 *   batched_requests batched_seqs token_states_pct reservation_pct internal_frag_pct
 *   external_frag_pct saving_pct duration_s n_requests n_finished n_rejected n_unfinished
 *   preempt_recompute preempt_swap swap_gib steps
 *   complete                   1 when every request finished (none rejected/unfinished)
 *   with a `measure:` window in the experiment YAML (measure.h): the request and step
 *   averages above over the window, and measured_requests / measured_steps
 *   with error bars (uncertainty.h; set by system.c and the runner): step_factor_lo
 *   step_factor_hi, and <m>_lo <m>_hi for m in normalized_latency ttft_mean_ms
 *   tpot_mean_ms e2el_mean_ms request_throughput_per_s output_token_throughput_per_s
 *   batched_requests saving_pct token_states_pct
 *   with `slo: {ttft_ms, tpot_ms, e2el_ms}` in the experiment YAML (any may be absent):
 *   slo_ttft_ms slo_tpot_ms slo_e2el_ms   the bounds
 *   goodput_fraction           requests that finished within every bound (TTFT, TPOT --
 *                              output_len 1: none --, E2EL; vLLM bench serve's --goodput
 *                              rule) / all requests
 *   goodput_per_s              the same requests / duration_s (vLLM's request_goodput)
 *   slo_met                    1 when complete and each bound holds at the 99th percentile
 *                              (p99 TTFT, TPOT, E2EL; MLPerf LoadGen's server rule), else 0
 *   n_dropped                  requests dropped from the trace before the run, for every
 *                              system alike: prompts longer than the model's context (set by
 *                              system.c, and only when some were)
 *   n_aborted                  requests taken out while served (their client went away, the
 *                              server stopped: a served or load-generated run), apart from
 *                              n_rejected (refused by admission); only when some were
 * A metric the run cannot define is NaN (an empty CSV cell, docs/outputs.md): the latencies
 * when no request finished, batch and memory averages when no step ran, throughputs
 * when the run lasted no time -- never a zero that would plot as the best result.
 * The summary block ends with the checks, one per line:
 *   "Check complete: PASS (...)" / "Check slo_met: FAIL (p99 TTFT 812.40 ms > 200 ms; ...)" /
 *   "Check slo_met: n/a (...)".
 *
 * The per-request file (pt->requests_path) has the columns of PB_POINT_REQUEST_COLUMNS
 * (metrics.h's, written by pb_metrics_write_request_row, then slo_met), a row per request in id order, numbers as %.17g (the metrics above are computed over exactly
 * these doubles), undefined cells empty; slo_met is the request's own flag (1 when it
 * finished within every bound), empty without an SLO. */
#ifndef PB_POINT_OUT_H
#define PB_POINT_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"
#include "point.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PB_POINT_REQUEST_COLUMNS PB_METRICS_REQUEST_COLUMNS ",slo_met"

#define PB_POINT_MAX_PCTS 8   /* the experiment's `percentiles:`, at most */

/* The experiment's percentiles (`percentiles:`, default 50, 90, 99) with 50 added, sorted,
 * distinct, into p[PB_POINT_MAX_PCTS + 1]; returns how many. */
int pb_point_percentiles(const pb_node *root, double *p);
/* The metric name of latency `what` ("ttft") at percentile p: "ttft_p99_ms", "ttft_p99.9_ms". */
void pb_point_pct_name(const char *what, double p, char *buf, size_t n);

/* The TTFT, TPOT and E2EL statistics ({ttft,tpot,e2el}_{mean,std,p<P>}_ms: mean, population
 * std, the experiment root's percentiles) of the finished requests arriving in [from, to]
 * (the measurement window's, measure.h; -inf, inf: all), then the ITLs' over the whole
 * run, into out; p99[] gets the TTFT, TPOT and E2EL 99th percentiles (the SLO check).
 * No such request: every one of them NaN (an empty cell). */
void pb_point_latencies(pb_metrics *m, const pb_node *root, double from, double to, pb_point_metrics *out,
                        double p99[3]);

/* Fill out from the finished run m (title heads the summary block; the experiment's
 * `measure:` window, measure.h, sets the averages: m must have recorded its steps when
 * pb_measure_needs_steps says so, and its request rows are made), then write
 * pt->requests_path / pt->timeline_path when set (atomically; the timeline needs m
 * created with record_steps).  PB_ERR_IO with a message in err when a file cannot
 * be written. */
pb_status pb_point_out_fill(const pb_point_ctx *pt, pb_metrics *m, const char *title,
                            pb_point_metrics *out, char *err, size_t err_n);

/* Is name a metric of a serving point of the experiment root (the list above, with its
 * `percentiles:`; point_out.c's tables are the one place that lists them)?  `knee.metric` and `columns` are checked against it. */
bool pb_point_metric_known(const pb_node *root, const char *name);
/* Every metric name of the experiment root (its percentiles), space-separated, for messages. */
void pb_point_metric_names(const pb_node *root, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* PB_POINT_OUT_H */
