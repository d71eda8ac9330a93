/* uncertainty.h -- an 80% interval on every prediction of the cost model: beside a
 * point's metrics, <metric>_lo and <metric>_hi.
 *
 * The calibration residuals of each term of the cost model (cost_model.residuals,
 * [p10, p90] of measured / predicted) give the run's step-time factor interval
 * (executor_sim.h pb_sim_step_factor: the terms weighted by their share of the run's
 * time; step_factor_lo, step_factor_hi).  A run whose every step takes s times as long is
 * carried to the metrics one of two ways, per experiment (`uncertainty:` key):
 *   rate       (auto for an experiment whose one sweep axis sets workload.rate) -- such a
 *              run is the run at rate lambda * s with every time multiplied by s (the
 *              engine keys nothing to the clock; the Poisson trace is one of the same
 *              law), so from the series' own points, interpolated log-linearly in the
 *              metric along the rate:
 *                latencies L(lambda; s) = s L(lambda s); throughputs T(lambda s) / s;
 *                batched requests B(lambda s);
 *              no extra run; a rate past the series' last point takes the last point's
 *              value (the band is cut there);
 *   replicas   (auto otherwise) -- the point runs twice more, every step scaled by
 *              step_factor_lo and step_factor_hi (pb_sim_params.time_scale): 3x its cost;
 *   off        no intervals.
 * _lo / _hi are the smallest and largest of the nominal value and the two scaled ones.
 * Banded metrics: normalized_latency, ttft_mean_ms, tpot_mean_ms, e2el_mean_ms,
 * request_throughput_per_s, output_token_throughput_per_s, batched_requests; replicas
 * add saving_pct and token_states_pct.  The interval covers the calibration's error on
 * step time, not the trace's sampling noise; a real executor (cpu, cuda) gets none. */
#ifndef PB_UNCERTAINTY_H
#define PB_UNCERTAINTY_H

#include "config.h"
#include "experiment.h"
#include "point.h"
#include "runner.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_UNC_OFF = 0, PB_UNC_RATE, PB_UNC_REPLICAS } pb_unc_method;

#define PB_UNC_CHOICES "auto|rate|replicas|off"
#define PB_UNC_INTERVAL 0.8

/* The experiment's method (`uncertainty:` in the resolved root; auto resolved). */
pb_unc_method pb_unc_method_of(const pb_experiment *e, const pb_node *root);

/* Record the run's step-time factor interval (step_factor_lo, step_factor_hi). */
void pb_unc_set_factors(pb_point_metrics *out, double lo, double hi);

/* Replicas: the banded metrics' _lo / _hi from the nominal point and its two scaled runs. */
void pb_unc_from_replicas(pb_point_metrics *out, const pb_point_metrics *a, const pb_point_metrics *b);

/* Rate scaling: every row of an experiment whose method is PB_UNC_RATE gets its banded
 * metrics' _lo / _hi from its series (rows in runner.h order: series contiguous, rate
 * ascending) and its own step_factor_lo / _hi. */
void pb_unc_fill_rate(pb_results *r);

#ifdef __cplusplus
}
#endif
#endif /* PB_UNCERTAINTY_H */
