/* test_measure.c -- the measurement window (experiments/measure.h) on a hand-made run:
 * four requests arriving at 0, 1, 2, 3 s (one with two sequences) and five steps at
 * 0.5 .. 4.5 s, every expected value worked out by hand below.
 *   build/cpu/test_measure */
#include <math.h>
#include <string.h>

#include "measure.h"
#include "metrics.h"
#include "pbtest.h"
#include "point_out.h"   /* pb_point_latencies: the window's TTFT, TPOT, E2EL */

/* request i: arrival i s, output 10 tokens, first token 0.5 s later, finish 2 + 2i s
   after arrival, so normalized latency (2 + 2i) / 10; request 1 has two sequences */
static void record(pb_metrics *m, pb_trace *t) {
    int64_t cap = 0;
    memset(t, 0, sizeof *t);
    for (int i = 0; i < 4; i++) {
        pb_request r = pb_request_make(i, 5, 10);
        if (i == 1) r.n = 2;
        pb_trace_push(t, &cap, &r);
    }
    pb_metrics_begin(m, t, 2048);
    for (int i = 0; i < 4; i++) {
        pb_req_metrics *q = pb_metrics_req(m, i);
        q->first_token_s = i + 0.5;
        q->finish_s = i + 2.0 + 2.0 * i;
        q->finished = true;
    }
    /* steps at 0.5 .. 4.5 s: latency 0.1 * (k + 1), k + 1 groups, 2 (k + 1) sequences,
       logical 4 (k + 1) blocks on 2 (k + 1) + 1 physical */
    for (int k = 0; k < 5; k++) {
        pb_step_metrics st;
        memset(&st, 0, sizeof st);
        st.t_s = k + 0.5;
        st.latency_s = 0.1 * (k + 1);
        st.n_groups = k + 1;
        st.n_seqs = st.decode_tokens = 2 * (k + 1);
        st.mem.total_slots = 100;
        st.mem.token_slots = 10 * (k + 1);
        st.mem.free_slots = 100 - st.mem.token_slots;
        st.mem.logical_blocks = 4 * (k + 1);
        st.mem.physical_blocks = 2 * (k + 1) + 1;
        pb_metrics_add_step(m, &st);
    }
    pb_metrics_end(m, 11);
}

PB_TEST(defaults_change_nothing) {
    pb_measure w = pb_measure_default();
    PB_CHECK(pb_measure_is_default(&w) && !pb_measure_needs_steps(&w));
    pb_metrics *m = pb_metrics_create(true);
    pb_trace t;
    record(m, &t);
    pb_point_metrics out;
    memset(&out, 0, sizeof out);
    pb_measure_apply(&w, 4, m, &out);
    PB_CHECK(out.n == 0);
    double from, to;
    pb_measure_request_window(&w, 4, m, &from, &to);
    PB_CHECK(from == -INFINITY && to == INFINITY);
    pb_metrics_destroy(m);
    pb_trace_free(&t);
}

PB_TEST(requests_by_arrival) {
    pb_metrics *m = pb_metrics_create(true);
    pb_trace t;
    record(m, &t);
    pb_measure w = pb_measure_default();
    w.warmup_s = 1;
    w.cooldown_s = 1.5;   /* trace end 4: arrivals in [1, 2.5] -> requests 1 and 2 */
    PB_CHECK(!pb_measure_needs_steps(&w) || w.warmup_s > 0);
    pb_point_metrics out;
    memset(&out, 0, sizeof out);
    pb_measure_apply(&w, 4, m, &out);
    double from, to, p99[3];
    pb_measure_request_window(&w, 4, m, &from, &to);
    PB_CHECK(from == 1 && to == 2.5);
    pb_point_latencies(m, NULL, from, to, &out, p99);
    PB_CHECK_NEAR(pb_pm_get(&out, "measured_requests", -1), 2, 0);
    /* per sequence: request 1 (0.4 s/token) twice, request 2 (0.6) once */
    PB_CHECK_NEAR(pb_pm_get(&out, "normalized_latency", -1), (0.4 + 0.4 + 0.6) / 3, 1e-12);
    PB_CHECK_NEAR(pb_pm_get(&out, "normalized_latency_p50", -1), 0.4, 1e-12);
    PB_CHECK_NEAR(pb_pm_get(&out, "ttft_mean_ms", -1), 500, 1e-9);
    PB_CHECK_NEAR(pb_pm_get(&out, "e2el_mean_ms", -1), (4 + 6) / 2.0 * 1e3, 1e-9);
    PB_CHECK_NEAR(pb_pm_get(&out, "e2el_std_ms", -1), 1e3, 1e-9);
    PB_CHECK_NEAR(p99[2], (4 + 0.99 * 2) * 1e3, 1e-9);
    PB_CHECK_NEAR(pb_pm_get(&out, "tpot_p50_ms", -1), ((3.5 / 9) + (5.5 / 9)) / 2 * 1e3, 1e-9);
    pb_metrics_destroy(m);
    pb_trace_free(&t);
}

PB_TEST(steps_by_start_and_formulas) {
    pb_metrics *m = pb_metrics_create(true);
    pb_trace t;
    record(m, &t);
    pb_point_metrics out;
    /* warm-up 1 s, to the run's end: steps 1..4 (t 1.5 .. 4.5) */
    pb_measure w = pb_measure_default();
    w.warmup_s = 1;
    PB_CHECK(pb_measure_needs_steps(&w));
    memset(&out, 0, sizeof out);
    pb_measure_apply(&w, 4, m, &out);
    PB_CHECK_NEAR(pb_pm_get(&out, "measured_steps", -1), 4, 0);
    /* time-weighted groups: sum (k+1) * 0.1 (k+1) / sum 0.1 (k+1), k = 1..4 */
    PB_CHECK_NEAR(pb_pm_get(&out, "batched_requests", -1), (4.0 + 9 + 16 + 25) / (2 + 3 + 4 + 5), 1e-12);
    PB_CHECK_NEAR(pb_pm_get(&out, "token_states_pct", -1), (20.0 + 30 + 40 + 50) / 4, 1e-9);
    /* saved / logical = sum (2 (k+1) - 1) / sum 4 (k+1) */
    PB_CHECK_NEAR(pb_pm_get(&out, "saving_pct", -1), 100 * (3.0 + 5 + 7 + 9) / (8 + 12 + 16 + 20), 1e-9);
    /* the arrival window (trace end 4): steps 1..3; per-step mean; 1 - 1/mean(L/P) */
    w.steps = PB_STEPS_WINDOW;
    w.step_mean = PB_STEP_MEAN_STEP;
    w.saving = PB_SAVING_REF_COUNT;
    memset(&out, 0, sizeof out);
    pb_measure_apply(&w, 4, m, &out);
    PB_CHECK_NEAR(pb_pm_get(&out, "measured_steps", -1), 3, 0);
    PB_CHECK_NEAR(pb_pm_get(&out, "batched_requests", -1), (2.0 + 3 + 4) / 3, 1e-12);
    PB_CHECK_NEAR(pb_pm_get(&out, "batched_seqs", -1), (4.0 + 6 + 8) / 3, 1e-12);
    double mean_ratio = (8.0 / 5 + 12.0 / 7 + 16.0 / 9) / 3;
    PB_CHECK_NEAR(pb_pm_get(&out, "saving_pct", -1), 100 * (1 - 1 / mean_ratio), 1e-9);
    pb_metrics_destroy(m);
    pb_trace_free(&t);
}

PB_TEST(empty_window) {
    pb_metrics *m = pb_metrics_create(true);
    pb_trace t;
    record(m, &t);
    pb_measure w = pb_measure_default();
    w.warmup_s = 100;
    pb_point_metrics out;
    memset(&out, 0, sizeof out);
    pb_measure_apply(&w, 4, m, &out);
    double from, to, p99[3];
    pb_measure_request_window(&w, 4, m, &from, &to);
    pb_point_latencies(m, NULL, from, to, &out, p99);
    PB_CHECK_NEAR(pb_pm_get(&out, "measured_requests", -1), 0, 0);
    PB_CHECK_NEAR(pb_pm_get(&out, "measured_steps", -1), 0, 0);
    /* nothing to average: undefined (an empty cell), never a zero (point_out.h) */
    static const char *const UNDEFINED[] = {"normalized_latency", "normalized_latency_p99", "ttft_mean_ms",
                                            "tpot_p50_ms", "e2el_mean_ms", "batched_requests", "batched_seqs",
                                            "token_states_pct", "external_frag_pct", "saving_pct"};
    for (size_t i = 0; i < PB_ARRAY_LEN(UNDEFINED); i++) PB_CHECK(isnan(pb_pm_get(&out, UNDEFINED[i], 0)));
    pb_metrics_destroy(m);
    pb_trace_free(&t);
}

PB_TEST_MAIN()
