/* test_runner.c -- the experiment runner with a stand-in point function: schema
 * errors, the point space (--quick thinning, per-system overrides), parallel runs
 * giving byte-identical CSVs, resume, failures, knee detection and refinement, and
 * the paper-vs-ours report.
 *
 *   build-eval/test_runner        (from the repository root; ctest does that) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "experiment.h"
#include "fig18a.h"
#include "pbtest.h"
#include "report.h"
#include "runner.h"
#include "spec.h"
#include "system.h"
#include "trace_fit.h"

/* ---- helpers ---- */
static const char *tmpdir(void) { return pb_test_tmpdir("runner"); }

static const char *write_yaml(const char *name, const char *text) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir(), name);
    FILE *f = fopen(path, "w");
    PB_ASSERT(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static const char *EXP =
    "name: toy\n"
    "figure: figtoy\n"
    "panel: a\n"
    "model: opt-13b\n"
    "hardware: a100-40gb\n"
    "executor: cpu\n"   /* the stand-in ignores it; keeps the test off the cost model's YAML */
    "workload: {dataset: sharegpt, rate: 1.0}\n"
    "columns: [panel, system, request_rate, normalized_latency]\n"
    "tags: {dataset: sharegpt}\n"
    "sweep:\n"
    "  - {axis: request_rate, set: workload.rate, values: [0.5, 1, 2, 3, 4, 5, 6]}\n"
    "knee: {threshold: 0.2, refine: 3}\n"
    "quick: {set: [\"workload.duration_s=60\"], thin: 2}\n"
    "systems:\n"
    "  - {name: slow, label: Slow, type: orca, reservation: max}\n"
    "  - {name: fast, label: Fast, type: vllm, block_size: 16, sweep: {request_rate: [1, 2, 4, 6, 8]}}\n";

/* The stand-in: latency explodes at a system-specific capacity (slow 2.5, fast 7.25),
 * read back from the RESOLVED config (so the axis `set` path is exercised); sleeps a
 * little so parallel workers finish out of order. */
static int g_fail_system = -1;
static pb_status toy_point(const pb_point_ctx *pt, pb_point_metrics *out, char *err, size_t n, void *user) {
    double rate = pb_node_num(pt->root, "workload.rate", NAN);
    if (pt->sys == g_fail_system) {
        snprintf(err, n, "toy failure at rate %g", rate);
        return PB_ERR_INVALID;
    }
    double cap = pt->sys == 0 ? 2.5 : 7.25;
    double y = rate < cap ? 0.03 + 0.01 / (cap - rate) : 5.0 + rate;
    struct timespec ts = {0, (long)((pt->point * 7919) % 5) * 3000000L};
    nanosleep(&ts, NULL);
    pb_pm_set(out, "normalized_latency", y);
    pb_pm_set(out, "rate_seen", rate);
    pb_pm_set(out, "duration_seen", pb_node_num(pt->root, "workload.duration_s", 3600));
    snprintf(out->summary, sizeof out->summary, "toy summary %g\n", rate);
    return PB_OK;
}

static pb_experiment *load(const char *text, bool quick) {
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_experiment *e = NULL;
    if (pb_experiment_load(write_yaml("toy.yaml", text), NULL, 0, quick, &e, &err))
        fprintf(stderr, "  load failed:\n%s", err.msg);
    return e;
}

static pb_status run_to(pb_experiment *e, const char *dir, int jobs, pb_runner_stats *st, char *csv, size_t n) {
    pb_runner_opts o = {jobs, dir, false, false, true, false, 0, toy_point, NULL, NULL, 0, false, false};
    pb_status s = PB_OK;
    for (int round = 0; !s; round++) {
        s = pb_runner_run(&e, 1, &o, st);
        if (s || !pb_runner_refine(&e, 1, dir, round)) break;
    }
    if (s) return s;
    pb_results r;
    if ((s = pb_runner_collect(&e, 1, dir, &r))) return s;
    snprintf(csv, n, "%s/toy.csv", dir);
    s = pb_results_write_csv(&r, csv);
    pb_results_free(&r);
    return s;
}

/* ---- config errors ---- */
PB_TEST(unknown_key_has_position_and_suggestion) {
    char *bad = malloc(strlen(EXP) + 64);
    sprintf(bad, "%s", EXP);
    char *p = strstr(bad, "columns:");
    memcpy(p, "colums: ", 8);
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_experiment *e = NULL;
    PB_CHECK(pb_experiment_load(write_yaml("bad1.yaml", bad), NULL, 0, false, &e, &err) == PB_ERR_INVALID);
    PB_CHECK(e == NULL);
    PB_CHECK_STR_CONTAINS(err.msg, "bad1.yaml:8:1:");
    PB_CHECK_STR_CONTAINS(err.msg, "did you mean 'columns'");
    free(bad);
}

PB_TEST(wrong_type_and_enum_in_a_system) {
    const char *bad =
        "name: t\nfigure: f\nmodel: opt-13b\nhardware: a100-40gb\nworkload: {dataset: sharegpt}\n"
        "gpus: two\n"
        "systems:\n  - {name: a, type: orcaa}\n  - {name: b, type: vllm, block_size: 1.5}\n";
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_experiment *e = NULL;
    PB_CHECK(pb_experiment_load(write_yaml("bad2.yaml", bad), NULL, 0, false, &e, &err) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(err.msg, "bad2.yaml:6:7: gpus: expected an integer, got 'two'");
    PB_CHECK_STR_CONTAINS(err.msg, "bad2.yaml:8:21: systems.0.type: 'orcaa' is not one of vllm|orca|ft");
    PB_CHECK_STR_CONTAINS(err.msg, "systems.1.block_size: expected an integer");
    PB_CHECK(err.count == 3);
}

PB_TEST(duplicate_key_and_duplicate_system) {
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_experiment *e = NULL;
    const char *dup = "name: t\nfigure: f\nname: u\nmodel: opt-13b\nhardware: a100-40gb\nworkload: {}\nsystems: []\n";
    PB_CHECK(pb_experiment_load(write_yaml("bad3.yaml", dup), NULL, 0, false, &e, &err) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(err.msg, "bad3.yaml:3:1:");
    PB_CHECK_STR_CONTAINS(err.msg, "duplicate");
    pb_cfg_err_clear(&err);
    const char *dsys = "name: t\nfigure: f\nmodel: opt-13b\nhardware: a100-40gb\nexecutor: cpu\nworkload: {dataset: alpaca}\n"
                       "systems:\n  - {name: a, type: vllm}\n  - {name: a, type: ft}\n";
    PB_CHECK(pb_experiment_load(write_yaml("bad4.yaml", dsys), NULL, 0, false, &e, &err) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(err.msg, "bad4.yaml:9:12: systems.1.name: 'a' appears twice");
    pb_cfg_err_clear(&err);
    const char *badax = "name: t\nfigure: f\nmodel: opt-13b\nhardware: a100-40gb\nexecutor: cpu\nworkload: {dataset: alpaca}\n"
                        "sweep: [{axis: r, set: rate, values: [1]}]\nsystems:\n  - {name: a, type: vllm, sweep: {x: 1}}\n";
    PB_CHECK(pb_experiment_load(write_yaml("bad5.yaml", badax), NULL, 0, false, &e, &err) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(err.msg, "sweep.0.set: 'rate' must start with");
}

PB_TEST(unknown_spec_name_lists_what_exists) {
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_experiment *e = NULL;
    const char *t = "name: t\nfigure: f\nmodel: opt-14b\nhardware: a100-40gb\nworkload: {}\nsystems: [{name: a, type: vllm}]\n";
    PB_CHECK(pb_experiment_load(write_yaml("bad6.yaml", t), NULL, 0, false, &e, &err) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(err.msg, "bad6.yaml:3:8: model: no spec 'opt-14b'");
    PB_CHECK_STR_CONTAINS(err.msg, "opt-13b");
}

/* ---- point space ---- */
PB_TEST(point_space_overrides_and_quick_thinning) {
    pb_experiment *e = load(EXP, false);
    PB_REQUIRE(e);
    PB_CHECK(pb_experiment_check(e) == PB_OK);
    PB_CHECK_EQ_INT(pb_experiment_n_points(e, 0), 7);
    PB_CHECK_EQ_INT(pb_experiment_n_points(e, 1), 5);
    double v;
    pb_experiment_point_values(e, 1, 4, &v);
    PB_CHECK_NEAR(v, 8, 0);
    PB_CHECK_EQ_INT(e->knee_refine, 3);
    pb_experiment_destroy(e);

    e = load(EXP, true);                      /* thin 2: indices 0 2 4 6 | 0 2 4 (last kept) */
    PB_REQUIRE(e);
    PB_CHECK_EQ_INT(pb_experiment_n_points(e, 0), 4);
    PB_CHECK_EQ_INT(pb_experiment_n_points(e, 1), 3);
    pb_experiment_point_values(e, 0, 3, &v);
    PB_CHECK_NEAR(v, 6, 0);
    pb_experiment_point_values(e, 1, 2, &v);
    PB_CHECK_NEAR(v, 8, 0);
    PB_CHECK_EQ_INT(e->knee_refine, 1);       /* --quick: at most one refinement round */
    PB_CHECK_NEAR(pb_node_num(pb_config_root(e->cfg), "workload.duration_s", 0), 60, 0);
    pb_experiment_destroy(e);
}

PB_TEST(hash_ignores_cosmetics_but_not_semantics) {
    pb_experiment *a = load(EXP, false);
    PB_REQUIRE(a);
    uint64_t h0 = pb_point_hash(a, 1, 2);
    PB_CHECK(h0 != pb_point_hash(a, 1, 3));
    PB_CHECK(h0 != pb_point_hash(a, 0, 2));
    pb_experiment_destroy(a);
    char *t = malloc(strlen(EXP) + 64);
    strcpy(t, EXP);
    memcpy(strstr(t, "label: Fast"), "label: Quik", 11);          /* cosmetic */
    a = load(t, false);
    PB_REQUIRE(a);
    PB_CHECK(pb_point_hash(a, 1, 2) == h0);
    pb_experiment_destroy(a);
    strcpy(t, EXP);
    memcpy(strstr(t, "block_size: 16"), "block_size: 32", 14);   /* semantic */
    a = load(t, false);
    PB_REQUIRE(a);
    PB_CHECK(pb_point_hash(a, 1, 2) != h0);
    pb_experiment_destroy(a);
    free(t);
}

/* ---- runs ---- */
PB_TEST(parallel_runs_are_byte_identical_and_resume) {
    char d1[300], d2[300], c1[400], c2[400];
    snprintf(d1, sizeof d1, "%s/j1", tmpdir());
    snprintf(d2, sizeof d2, "%s/j3", tmpdir());
    pb_runner_stats st;
    pb_experiment *e = load(EXP, false);
    PB_REQUIRE(e);
    PB_REQUIRE(run_to(e, d1, 1, &st, c1, sizeof c1) == PB_OK);
    int n_points = pb_experiment_n_points(e, 0) + pb_experiment_n_points(e, 1);
    PB_CHECK(n_points > 12);                   /* refinement added points */
    pb_experiment_destroy(e);
    e = load(EXP, false);
    PB_REQUIRE(e);
    PB_REQUIRE(run_to(e, d2, 3, &st, c2, sizeof c2) == PB_OK);
    pb_experiment_destroy(e);
    char *a = pb_test_slurp(c1), *b = pb_test_slurp(c2);
    PB_REQUIRE(a && b);
    PB_CHECK(strcmp(a, b) == 0);
    PB_CHECK(strncmp(a, "panel,system,request_rate,normalized_latency,", 45) == 0);
    PB_CHECK_STR_CONTAINS(a, "a,slow,0.5,");
    PB_CHECK_STR_CONTAINS(a, ",sharegpt,");

    /* rows: each series contiguous, x ascending */
    int series_changes = 0;
    char prev_sys[32] = "";
    double prev_x = -1;
    for (char *line = strchr(a, '\n') + 1; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char sys[32];
        double x;
        if (sscanf(line, "a,%31[^,],%lf", sys, &x) != 2) break;
        if (strcmp(sys, prev_sys)) { series_changes++; snprintf(prev_sys, sizeof prev_sys, "%s", sys); prev_x = -1; }
        PB_CHECK(x > prev_x);
        prev_x = x;
    }
    PB_CHECK_EQ_INT(series_changes, 2);
    free(a);
    free(b);

    /* resume: everything reused, then one deleted point recomputed */
    e = load(EXP, false);
    PB_REQUIRE(e);
    PB_REQUIRE(run_to(e, d1, 2, &st, c1, sizeof c1) == PB_OK);
    PB_CHECK_EQ_INT(st.computed, 0);
    PB_CHECK_EQ_INT(st.reused, st.total);
    char base[600];
    pb_point_path(e, 1, 0, d1, base, sizeof base);
    strcat(base, ".pt");
    PB_CHECK(unlink(base) == 0);
    pb_experiment_destroy(e);
    e = load(EXP, false);
    PB_REQUIRE(e);
    pb_runner_opts o = {2, d1, false, false, true, false, 0, toy_point, NULL, NULL, 0, false, false};
    PB_CHECK(pb_runner_run(&e, 1, &o, &st) == PB_OK);
    PB_CHECK_EQ_INT(st.computed, 1);
    PB_CHECK_EQ_INT(st.reused, st.total - 1);
    pb_experiment_destroy(e);
}

PB_TEST(knee_refinement_converges_on_the_capacity) {
    char d[300], c[400];
    snprintf(d, sizeof d, "%s/knee", tmpdir());
    pb_runner_stats st;
    pb_experiment *e = load(EXP, false);
    PB_REQUIRE(e);
    PB_REQUIRE(run_to(e, d, 2, &st, c, sizeof c) == PB_OK);
    pb_results r;
    PB_REQUIRE(pb_runner_collect(&e, 1, d, &r) == PB_OK);
    for (int s = 0; s < 2; s++) {
        double x[64], y[64];
        int n = 0;
        for (int i = 0; i < r.n && n < 64; i++)
            if (r.rows[i].sys == s) { x[n] = r.rows[i].axis[0]; y[n++] = pb_pm_get(&r.rows[i].m, "normalized_latency", NAN); }
        pb_knee k = pb_knee_find(x, y, n, 0.2);
        PB_CHECK(k.kind == PB_KNEE_FOUND);
        /* true crossing: 0.03 + 0.01/(cap - x) = 0.2 -> x = cap - 0.0588 */
        double truth = (s == 0 ? 2.5 : 7.25) - 0.01 / 0.17;
        PB_CHECK(fabs(k.rate - truth) / truth < 0.05);
    }
    pb_results_free(&r);
    pb_experiment_destroy(e);
}

PB_TEST(failed_points_leave_err_files_and_keep_the_rest) {
    char d[300];
    snprintf(d, sizeof d, "%s/fail", tmpdir());
    pb_experiment *e = load(EXP, false);
    PB_REQUIRE(e);
    g_fail_system = 1;
    pb_runner_opts o = {2, d, false, false, true, false, 0, toy_point, NULL, NULL, 0, false, false};
    pb_runner_stats st;
    PB_CHECK(pb_runner_run(&e, 1, &o, &st) != PB_OK);
    g_fail_system = -1;
    PB_CHECK_EQ_INT(st.failed, 5);
    PB_CHECK_EQ_INT(st.computed, 7);
    char base[600];
    pb_point_path(e, 1, 0, d, base, sizeof base);
    strcat(base, ".err");
    char *msg = pb_test_slurp(base);
    PB_CHECK_STR_CONTAINS(msg, "toy failure at rate 1");
    free(msg);
    pb_results r;
    PB_CHECK(pb_runner_collect(&e, 1, d, &r) == PB_ERR_IO);   /* incomplete: refuses */
    pb_results_free(&r);
    pb_experiment_destroy(e);
}

/* ---- knee ---- */
PB_TEST(knee_find_cases) {
    double x[] = {1, 2, 3, 4}, y[] = {0.1, 0.15, 0.3, 2.0};
    pb_knee k = pb_knee_find(x, y, 4, 0.2);
    PB_CHECK(k.kind == PB_KNEE_FOUND);
    PB_CHECK_NEAR(k.rate, 2 + (0.05 / 0.15), 1e-12);
    k = pb_knee_find(x, y, 4, 5.0);
    PB_CHECK(k.kind == PB_KNEE_NOT_REACHED && k.rate == 4);
    k = pb_knee_find(x, y, 4, 0.05);
    PB_CHECK(k.kind == PB_KNEE_ABOVE_AT_START && k.rate == 1);
    k = pb_knee_find(x, y, 0, 0.2);
    PB_CHECK(k.kind == PB_KNEE_NO_DATA);
    double y2[] = {0.1, 0.3, 0.1, 0.5};       /* first crossing counts */
    k = pb_knee_find(x, y2, 4, 0.2);
    PB_CHECK_NEAR(k.rate, 1.5, 1e-12);
    char buf[32];
    pb_knee_fmt((pb_knee){PB_KNEE_NOT_REACHED, 2}, buf, sizeof buf);
    PB_CHECK(strcmp(buf, ">2") == 0);
}

/* ---- report ---- */
PB_TEST(report_compares_knees_with_the_paper) {
    const char *ours = write_yaml("ours.csv",
                                  "panel,system,request_rate,normalized_latency\n"
                                  "a,orca_oracle,0.5,0.03\na,orca_oracle,1.0,0.1\na,orca_oracle,1.5,1.0\n"
                                  "a,vllm,1,0.03\na,vllm,2,0.1\na,vllm,3,0.3\n");
    char op[512];
    snprintf(op, sizeof op, "%s", ours);
    char pp[512];
    snprintf(pp, sizeof pp, "%s/paper/fig12.csv", pb_spec_dir());
    char md[512];
    snprintf(md, sizeof md, "%s/rep.md", tmpdir());
    PB_REQUIRE(pb_report_figure("fig12", op, pp, 0.2, NULL, md) == PB_OK);
    char *t = pb_test_slurp(md);
    PB_REQUIRE(t);
    /* ours: oracle 1.0 + 0.1/0.9*0.5 = 1.0556, vllm 2.5 -> 2.37x; paper (a): 1.86x */
    PB_CHECK_STR_CONTAINS(t, "| a | Orca (Oracle) | 1.06 | - | 1 | 1.05x |");
    PB_CHECK_STR_CONTAINS(t, "2.37x");
    PB_CHECK_STR_CONTAINS(t, "1.86x");
    free(t);
    /* with an error band: the knees of its upper (lower knee) and lower (upper knee) edges */
    const char *band = write_yaml("band.csv",
                                  "panel,system,request_rate,normalized_latency,normalized_latency_lo,normalized_latency_hi\n"
                                  "a,vllm,1,0.03,0.02,0.05\na,vllm,2,0.1,0.05,0.3\na,vllm,3,0.3,0.15,0.6\n");
    snprintf(op, sizeof op, "%s", band);
    PB_REQUIRE(pb_report_figure("fig12", op, pp, 0.2, NULL, md) == PB_OK);
    t = pb_test_slurp(md);
    PB_REQUIRE(t);
    PB_CHECK_STR_CONTAINS(t, "| a | vLLM | 2.5 | 1.6->3 |");   /* hi crosses at 1 + 0.15/0.25; lo never */
    free(t);
    pb_csv_table tb;
    PB_REQUIRE(pb_csv_table_load(pp, &tb) == PB_OK);
    PB_CHECK(pb_csv_table_col(&tb, "normalized_latency") == 3);
    PB_CHECK(tb.n_rows > 100);
    pb_csv_table_free(&tb);
}

/* ---- executor map, trace fitting, Fig. 18(a) ---- */
PB_TEST(executor_map_is_validated_and_read) {
    const char *good =
        "name: t\nfigure: f\nmodel: tiny-opt\nhardware: a100-40gb\nworkload: {dataset: sharegpt, rate: 1}\n"
        "executor: {type: cpu, fixed_latency_s: 0.01, kv_slots: 512}\nlength_scale: 0.25\nclamp_to_max_len: true\n"
        "systems:\n  - {name: a, type: vllm}\n";
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_experiment *e = NULL;
    PB_REQUIRE(pb_experiment_load(write_yaml("ex1.yaml", good), NULL, 0, false, &e, &err) == PB_OK);
    PB_CHECK(!strcmp(e->executor, "cpu"));
    PB_CHECK_NEAR(pb_node_num(pb_config_root(e->cfg), "executor.fixed_latency_s", 0), 0.01, 1e-12);
    pb_experiment_destroy(e);
    /* the scalar form still works and --set can switch it */
    const char *set = "executor=sim";
    pb_cfg_err_clear(&err);
    PB_REQUIRE(pb_experiment_load(write_yaml("ex1.yaml", good), &set, 1, false, &e, &err) == PB_OK);
    PB_CHECK(!strcmp(e->executor, "sim"));
    pb_experiment_destroy(e);
    const char *bad =
        "name: t\nfigure: f\nmodel: tiny-opt\nhardware: a100-40gb\nworkload: {dataset: sharegpt, rate: 1}\n"
        "executor:\n  type: cpux\n  kv_slot: 5\n"
        "systems:\n  - {name: a, type: vllm}\n";
    pb_cfg_err_clear(&err);
    e = NULL;
    PB_CHECK(pb_experiment_load(write_yaml("ex2.yaml", bad), NULL, 0, false, &e, &err) == PB_ERR_INVALID);
    PB_CHECK(e == NULL);
    PB_CHECK_STR_CONTAINS(err.msg, "ex2.yaml:7:9: executor.type: 'cpux' is not one of sim|cpu|cuda");
    PB_CHECK_STR_CONTAINS(err.msg, "ex2.yaml:8:3: executor.kv_slot: unknown key");
    PB_CHECK_STR_CONTAINS(err.msg, "did you mean 'kv_slots'");
}

PB_TEST(fit_trace_scales_and_clamps) {
    pb_request r[4];
    memset(r, 0, sizeof r);
    int32_t pl[4] = {1023, 1, 4000, 100}, ol[4] = {1025, 1, 10, 900};
    for (int i = 0; i < 4; i++) {
        r[i].id = i;
        r[i].prompt_len = pl[i];
        r[i].output_len = ol[i];
        r[i].n = r[i].beam_width = 1;
        r[i].prefix_id = -1;
    }
    r[3].prefix_id = 0;
    r[3].prefix_len = 80;
    pb_trace t = {.reqs = r, .n = 4};
    pb_trace_fit(&t, 0.25, true, 512);
    PB_CHECK_EQ_INT(r[0].prompt_len, 256);              /* ceil(255.75) */
    PB_CHECK_EQ_INT(r[0].output_len, 256);              /* ceil(256.25) = 257, clamped to 512 - 256 */
    PB_CHECK_EQ_INT(r[1].prompt_len, 1);                /* never below 1 */
    PB_CHECK_EQ_INT(r[1].output_len, 1);
    PB_CHECK_EQ_INT(r[2].prompt_len, 511);              /* 1000 -> max_len - 1 */
    PB_CHECK_EQ_INT(r[2].output_len, 1);
    PB_CHECK_EQ_INT(r[3].prompt_len, 25);
    PB_CHECK_EQ_INT(r[3].output_len, 225);
    PB_CHECK_EQ_INT(r[3].prefix_len, 20);               /* floor(80 / 4), still <= prompt */
    for (int i = 0; i < 4; i++) PB_CHECK(r[i].prompt_len + r[i].output_len <= 512);
    /* scale 1 without clamp: untouched */
    r[0].prompt_len = 3000;
    pb_trace_fit(&t, 1.0, false, 512);
    PB_CHECK_EQ_INT(r[0].prompt_len, 3000);
}

PB_TEST(fig18a_cost_model_is_a_calibration_check) {
    /* the sim's attention terms were fit to the paper's 12 points: every point within
       25%, paged slower than contiguous, latency growing with batch and context */
    static const int B[2] = {8, 32}, C[3] = {64, 128, 256};
    static const double PAPER[2][2][3] = {{{31.46, 43.56, 84.32}, {77.12, 127.06, 235.29}},
                                          {{21.88, 34.90, 62.34}, {61.42, 106.74, 194.51}}};
    for (int k = 0; k < 2; k++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 3; c++) {
                double us = 0, other = 0;
                PB_REQUIRE(pb_fig18a_cost_model_us(pb_spec_dir(), k == 0, B[b], C[c], &us) == PB_OK);
                PB_CHECK(fabs(us / PAPER[k][b][c] - 1) < 0.25);
                if (k == 0) {
                    PB_REQUIRE(pb_fig18a_cost_model_us(pb_spec_dir(), false, B[b], C[c], &other) == PB_OK);
                    PB_CHECK(us > other);
                }
                if (c > 0) {
                    PB_REQUIRE(pb_fig18a_cost_model_us(pb_spec_dir(), k == 0, B[b], C[c - 1], &other) == PB_OK);
                    PB_CHECK(us > other);
                }
            }
    char csv[512];
    snprintf(csv, sizeof csv, "%s/fig18a.csv", tmpdir());
    char gpu[256] = "";
    PB_REQUIRE(pb_fig18a_write(pb_spec_dir(), csv, false, NULL, gpu, sizeof gpu) == PB_OK);
    char *text = pb_test_slurp(csv);
    PB_REQUIRE(text);
    PB_CHECK_STR_CONTAINS(text, "source,device,kernel,batch,context_len,latency_us,paper_us,vs_paper_pct,overhead_pct\n");
    PB_CHECK_STR_CONTAINS(text, "cost_model,\"A100-40GB (cost model)\",vllm,8,64,");
    PB_CHECK(strstr(text, "\ngpu,") == NULL);
    free(text);
}

PB_TEST_MAIN()
