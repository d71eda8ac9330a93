/* measure.h -- the measurement window: which requests and steps a point's averages
 * cover, and the formulas of its step averages, as an experiment's `measure:` map
 * declares them (the paper artifact's protocol, cited per figure in its YAML).
 *
 *   measure:
 *     warmup_s: 0       requests that ARRIVE before t = warmup_s, and steps that START
 *                       before it, are left out of every average (default 0: none)
 *     cooldown_s: 0     requests that arrive after trace_end - cooldown_s are left out
 *                       (default 0); trace_end = workload.duration_s, or the last
 *                       arrival for a trace without one
 *     steps: run        step averages over the steps from warmup_s to the end of the run,
 *                       the drain after the last arrival included (run, default), or
 *                       only over steps starting in [warmup_s, trace_end - cooldown_s]
 *                       (window: the artifact's per-step statistics windows)
 *     step_mean: time   batched requests / sequences weighted by step latency (time,
 *                       default) or a plain mean over steps (step: np.mean over the
 *                       artifact's per-step samples)
 *     saving: blocks    memory saved by sharing: sum(L - P) / sum(L) over the steps
 *                       (blocks, default: the paper's words), or 1 - 1 / mean(L / P)
 *                       (ref_count: the artifact's plot_fig15.py), with L the logical
 *                       blocks of the GPU-resident sequences and P the physical blocks
 *
 * With every key at its default the engine's summary stands unchanged (metrics.h).
 * Otherwise pb_measure_apply recomputes, over the window:
 *   from the request rows (by arrival): normalized_latency (mean, p50, p90, p99; per
 *     sequence), and sets measured_requests; the TTFT, TPOT and E2EL statistics of the
 *     same requests are point_out.c's (pb_point_latencies over
 *     pb_measure_request_window), the one place that computes them;
 *   from the recorded steps (by start time): batched_requests, batched_seqs, the four
 *     memory classes (plain means over steps, as metrics.h), saving_pct, and sets
 *     measured_steps.
 * Throughputs, inter-token latencies, counts and durations stay the whole run's.
 * A step window needs the run's steps recorded (pb_measure_needs_steps says when). */
#ifndef PB_MEASURE_H
#define PB_MEASURE_H

#include <stdbool.h>

#include "config.h"
#include "metrics.h"
#include "pb.h"
#include "point.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_STEPS_RUN = 0, PB_STEPS_WINDOW = 1 } pb_measure_steps;
typedef enum { PB_STEP_MEAN_TIME = 0, PB_STEP_MEAN_STEP = 1 } pb_measure_step_mean;
typedef enum { PB_SAVING_BLOCKS = 0, PB_SAVING_REF_COUNT = 1 } pb_measure_saving;

typedef struct {
    double warmup_s, cooldown_s;
    pb_measure_steps steps;
    pb_measure_step_mean step_mean;
    pb_measure_saving saving;
} pb_measure;

extern const pb_key pb_measure_schema[];   /* the experiment's `measure:` map */

pb_measure pb_measure_default(void);
/* From the resolved experiment root (its `measure:` map; absent: the defaults). */
pb_measure pb_measure_from_root(const pb_node *root);
bool pb_measure_is_default(const pb_measure *w);
bool pb_measure_needs_steps(const pb_measure *w);   /* a step average differs from the run's */

/* trace_end: workload.duration_s (> 0), else the latest arrival of the rows.  Replaces
 * the windowed metrics in out (see above); m must have recorded its steps when
 * pb_measure_needs_steps(w).  A window holding no finished request leaves the request
 * metrics undefined (NaN, an empty cell: point_out.h) with measured_requests 0; the same
 * for steps. */
void pb_measure_apply(const pb_measure *w, double trace_end, pb_metrics *m, pb_point_metrics *out);
/* The arrival times [*from, *to] of the requests the window averages (trace_end as
 * above); the whole run (-inf, inf) with the defaults. */
void pb_measure_request_window(const pb_measure *w, double trace_end, pb_metrics *m, double *from,
                               double *to);

#ifdef __cplusplus
}
#endif
#endif /* PB_MEASURE_H */
