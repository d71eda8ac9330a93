/* point_out.h -- what one serving point reports: its named metrics, its
 * benchmark_serving block with named checks, and (when the runner asks) its
 * per-request and per-step files.  Called by the point function (system.c) after
 * the engine run; docs/outputs.md is the column dictionary.
 *
 * Metrics set (pb_point_metrics names; units in the name or in docs/outputs.md):
 *   normalized_latency (mean) _p50 _p90 _p99      s/token, per sequence (docs/DESIGN.md §7)
 *   ttft_{mean,p50,p90,p99}_ms  tpot_..._ms  itl_..._ms  e2e_{mean,p50,p90,p99}_s
 *   request_throughput_per_s  output_token_throughput_per_s  total_token_throughput_per_s
 *   batched_requests batched_seqs token_states_pct reservation_pct internal_frag_pct
 *   external_frag_pct saving_pct duration_s n_requests n_finished n_rejected n_unfinished
 *   preempt_recompute preempt_swap swap_gib steps
 *   complete                   1 when every request finished (none rejected/unfinished)
 *   with a `measure:` window in the experiment YAML (measure.h): the request and step
 *   averages above over the window, and measured_requests / measured_steps
 *   with error bars (uncertainty.h; set by system.c and the runner): step_factor_lo
 *   step_factor_hi, and <m>_lo <m>_hi for m in normalized_latency ttft_mean_ms
 *   tpot_mean_ms e2e_mean_s request_throughput_per_s output_token_throughput_per_s
 *   batched_requests saving_pct token_states_pct
 *   with `slo: {ttft_ms, tpot_ms}` in the experiment YAML (either may be absent):
 *   slo_ttft_ms slo_tpot_ms    the bounds
 *   goodput_fraction           requests with TTFT <= slo_ttft_ms and TPOT <= slo_tpot_ms
 *                              (metrics.h pb_metrics_goodput) / all requests
 *   goodput_per_s              the same requests / duration_s
 *   slo_met                    1 when complete and ttft_p99_ms <= slo_ttft_ms and
 *                              tpot_p99_ms <= slo_tpot_ms (MLPerf LoadGen's server rule:
 *                              the 99th percentile under the bound), else 0
 *   n_dropped                  requests dropped from the trace before the run, for every
 *                              system alike: prompts longer than the model's context (set by
 *                              system.c, and only when some were)
 * A metric the run cannot define is NaN (an empty CSV cell, docs/outputs.md): the latencies
 * when no request finished, batch and memory averages when no step ran, throughputs
 * when the run lasted no time -- never a zero that would plot as the best result.
 * The summary block ends with the checks, one per line:
 *   "Check complete: PASS (...)" / "Check slo_met: FAIL (...)" / "Check slo_met: n/a (...)". */
#ifndef PB_POINT_OUT_H
#define PB_POINT_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"
#include "point.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fill out from the finished run m (title heads the summary block; the experiment's
 * `measure:` window, measure.h, sets the averages: m must have recorded its steps when
 * pb_measure_needs_steps says so, and its request rows are made), then write
 * pt->requests_path / pt->timeline_path when set (atomically; the timeline needs m
 * created with record_steps).  PB_ERR_IO with a message in err when a file cannot
 * be written. */
pb_status pb_point_out_fill(const pb_point_ctx *pt, pb_metrics *m, const char *title,
                            pb_point_metrics *out, char *err, size_t err_n);

/* Is name a metric of a serving point (the list above; point_out.c's table is the one
 * place that lists them)?  `knee.metric` and `columns` are checked against it. */
bool pb_point_metric_known(const char *name);
/* Every metric name, space-separated, for messages. */
void pb_point_metric_names(char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* PB_POINT_OUT_H */
