/* test_uncertainty.c -- the error bars (experiments/uncertainty.h, executor_sim.h
 * pb_sim_step_factor): the step-time factor's interval from the terms' residuals, the
 * rate-scaling identity on a hand-made series, and a replicated point's _lo <= value <= _hi.
 *   build/cpu/test_uncertainty */
#include <math.h>
#include <string.h>

#include "executor_sim.h"
#include "experiment.h"
#include "pbtest.h"
#include "point_out.h"   /* pb_point_metric_known */
#include "system.h"
#include "uncertainty.h"

#include <stdlib.h>

static const char *tmpdir(void) { return pb_test_tmpdir("unc"); }

static pb_sim_cost one_term(double lo, double hi) {
    pb_sim_cost c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < PB_SIM_N_TERMS; i++) c.resid_lo[i] = c.resid_hi[i] = 1;
    c.resid_lo[PB_SIM_T_GEMM] = lo;
    c.resid_hi[PB_SIM_T_GEMM] = hi;
    return c;
}

PB_TEST(step_factor_from_the_terms_residuals) {
    pb_sim_totals t;
    memset(&t, 0, sizeof t);
    double lo, hi;
    pb_sim_cost c = one_term(0.9, 1.2);
    pb_sim_step_factor(&c, &t, 0.8, &lo, &hi);   /* no time: no interval */
    PB_CHECK(lo == 1 && hi == 1);
    /* all the time in one term: its own p10..p90 (4001 draws: within 2%) */
    t.t[PB_SIM_T_GEMM] = 1;
    t.steps = 1;
    pb_sim_step_factor(&c, &t, 0.8, &lo, &hi);
    PB_CHECK(fabs(lo - 0.9) < 0.02 && fabs(hi - 1.2) < 0.024);
    /* half of it in a term known exactly: the interval narrows toward 1 */
    t.t[PB_SIM_T_HOST] = 1;
    double lo2, hi2;
    pb_sim_step_factor(&c, &t, 0.8, &lo2, &hi2);
    PB_CHECK(lo2 > lo && hi2 < hi && lo2 < 1 && hi2 > 1);
    /* deterministic: the same inputs, the same interval */
    double lo3, hi3;
    pb_sim_step_factor(&c, &t, 0.8, &lo3, &hi3);
    PB_CHECK(lo3 == lo2 && hi3 == hi2);
}

/* a series L(rate) = exp(rate) at rates 1..8: the band at rate r for factor s is
   s * L(r s), log-linear between points (exact for an exponential) */
PB_TEST(rate_scaling_on_a_series) {
    static const char *Y = "name: u\nfigure: u\nmodel: opt-13b\nhardware: a100-40gb\n"
                           "workload: {dataset: alpaca, arrivals: poisson, rate: 1, duration_s: 10}\n"
                           "sweep: [{axis: request_rate, set: workload.rate, values: [1, 2, 3, 4, 5, 6, 7, 8]}]\n"
                           "systems: [{name: vllm, type: vllm}]\n";
    char path[256];
    snprintf(path, sizeof path, "%s/unc.yaml", tmpdir());
    FILE *f = fopen(path, "w");
    PB_REQUIRE(f);
    fputs(Y, f);
    fclose(f);
    pb_experiment *e = NULL;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    PB_REQUIRE(pb_experiment_load(path, NULL, 0, false, &e, &err) == PB_OK);
    PB_CHECK(pb_unc_method_of(e, pb_config_root(e->cfg)) == PB_UNC_RATE);
    pb_result_row rows[8];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < 8; i++) {
        rows[i].point = i;
        rows[i].axis[0] = i + 1;
        pb_pm_set(&rows[i].m, "normalized_latency", exp(i + 1.0));
        pb_pm_set(&rows[i].m, "request_throughput_per_s", i + 1.0);
        pb_pm_set(&rows[i].m, "step_factor_lo", 0.9);
        pb_pm_set(&rows[i].m, "step_factor_hi", 1.2);
    }
    pb_experiment *const exps[1] = {e};
    pb_results r = {exps, 1, rows, 8};
    pb_unc_fill_rate(&r);
    /* rate 3: lo = 0.9 exp(2.7), hi = 1.2 exp(3.6); throughput (log-linear between points):
       lo = min(3, T(2.7) / 0.9, T(3.6) / 1.2) = 2 * 1.5^0.7 / 0.9 */
    PB_CHECK_NEAR(pb_pm_get(&rows[2].m, "normalized_latency_lo", -1), 0.9 * exp(2.7), 1e-9);
    PB_CHECK_NEAR(pb_pm_get(&rows[2].m, "normalized_latency_hi", -1), 1.2 * exp(3.6), 1e-9);
    PB_CHECK_NEAR(pb_pm_get(&rows[2].m, "request_throughput_per_s_lo", -1), 2 * pow(1.5, 0.7) / 0.9, 1e-9);
    /* past the series' end the band takes the last point: rate 8 x 1.2 -> L(8) */
    PB_CHECK_NEAR(pb_pm_get(&rows[7].m, "normalized_latency_hi", -1), 1.2 * exp(8.0), 1e-6);
    pb_experiment_destroy(e);
}

PB_TEST(replicas_bracket_the_point) {
    static const char *Y = "name: u\nfigure: u\nmodel: opt-13b\nhardware: a100-40gb\n"
                           "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 60}\n"
                           "systems: [{name: vllm, type: vllm}]\n";
    char path[256];
    snprintf(path, sizeof path, "%s/unc2.yaml", tmpdir());
    FILE *f = fopen(path, "w");
    PB_REQUIRE(f);
    fputs(Y, f);
    fclose(f);
    pb_experiment *e = NULL;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    PB_REQUIRE(pb_experiment_load(path, NULL, 0, false, &e, &err) == PB_OK);
    PB_CHECK(pb_unc_method_of(e, pb_config_root(e->cfg)) == PB_UNC_REPLICAS);
    pb_point_ctx pt;
    memset(&pt, 0, sizeof pt);
    pt.exp = e;
    pt.root = pb_config_root(e->cfg);
    pt.system = e->systems[0].node;
    pb_point_metrics *m = pb_xcalloc(1, sizeof *m);
    char msg[512] = "";
    PB_REQUIRE(pb_system_run_point(&pt, m, msg, sizeof msg, NULL) == PB_OK);
    double lo = pb_pm_get(m, "step_factor_lo", NAN), hi = pb_pm_get(m, "step_factor_hi", NAN);
    PB_CHECK(lo < 1 && hi > 1);
    static const char *const M[] = {"normalized_latency", "ttft_mean_ms", "tpot_mean_ms", "request_throughput_per_s"};
    for (size_t i = 0; i < PB_ARRAY_LEN(M); i++) {
        char a[48], b[48];
        snprintf(a, sizeof a, "%s_lo", M[i]);
        snprintf(b, sizeof b, "%s_hi", M[i]);
        double v = pb_pm_get(m, M[i], NAN), l = pb_pm_get(m, a, NAN), h = pb_pm_get(m, b, NAN);
        PB_CHECK(l <= v && v <= h);
    }
    /* every step's time scaled by the factors: latencies move out, not just by chance */
    PB_CHECK(pb_pm_get(m, "tpot_mean_ms_lo", NAN) < pb_pm_get(m, "tpot_mean_ms", NAN));
    PB_CHECK(pb_pm_get(m, "tpot_mean_ms_hi", NAN) > pb_pm_get(m, "tpot_mean_ms", NAN));
    free(m);
    pb_experiment_destroy(e);
}

/* every metric a point sets -- the error bars, the window's counts -- is one that
   `columns:` and `knee.metric` accept (point_out.h's one table) */
PB_TEST(every_metric_set_is_known) {
    static const char *Y = "name: u\nfigure: u\nmodel: opt-13b\nhardware: a100-40gb\n"
                           "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 60, n: 2}\n"
                           "measure: {warmup_s: 0.5, steps: window}\n"
                           "systems: [{name: vllm, type: vllm}]\n";
    char path[256];
    snprintf(path, sizeof path, "%s/unc3.yaml", tmpdir());
    FILE *f = fopen(path, "w");
    PB_REQUIRE(f);
    fputs(Y, f);
    fclose(f);
    pb_experiment *e = NULL;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    PB_REQUIRE(pb_experiment_load(path, NULL, 0, false, &e, &err) == PB_OK);
    pb_point_ctx pt;
    memset(&pt, 0, sizeof pt);
    pt.exp = e;
    pt.root = pb_config_root(e->cfg);
    pt.system = e->systems[0].node;
    pb_point_metrics *m = pb_xcalloc(1, sizeof *m);
    char msg[512] = "";
    PB_REQUIRE(pb_system_run_point(&pt, m, msg, sizeof msg, NULL) == PB_OK);
    PB_CHECK(pb_pm_get(m, "saving_pct_hi", NAN) >= 0 && pb_pm_get(m, "measured_steps", 0) > 0);
    for (int i = 0; i < m->n; i++) {
        if (!pb_point_metric_known(pt.root, m->name[i])) fprintf(stderr, "  %s: not in point_out.c's tables\n", m->name[i]);
        PB_CHECK(pb_point_metric_known(pt.root, m->name[i]));
    }
    free(m);
    pb_experiment_destroy(e);
}

PB_TEST_MAIN()
