/* test_shard.c -- point keys by content and sharded sweeps, with a stand-in
 * point function: keys ignore YAML order, quoting and the sweep's value lists but follow
 * every resolved value, the system's options and input file contents; a shard plan
 * partitions the points (series kept whole when they refine) and balances the cost;
 * shards run one by one into one folder, with their refinement, give the CSV of a
 * single run byte for byte, for every shard count.
 *
 *   build/cpu/test_shard        (from the repository root; ctest does that) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "experiment.h"
#include "pbtest.h"
#include "point_key.h"
#include "runner.h"
#include "shard.h"

static const char *tmpdir(void) { return pb_test_tmpdir("shard"); }

static const char *write_file(const char *name, const char *text) {
    static char path[4][512];
    static int k;
    char *p = path[k++ % 4];
    snprintf(p, 512, "%s/%s", tmpdir(), name);
    FILE *f = fopen(p, "w");
    PB_ASSERT(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static pb_experiment *load_sets(const char *text, const char *const *sets, int n_sets) {
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_experiment *e = NULL;
    if (pb_experiment_load(write_file("toy.yaml", text), sets, n_sets, false, &e, &err))
        fprintf(stderr, "  load failed:\n%s", err.msg);
    return e;
}
static pb_experiment *load(const char *text) { return load_sets(text, NULL, 0); }

static const char *EXP =
    "name: toy\n"
    "figure: figtoy\n"
    "panel: a\n"
    "model: opt-13b\n"
    "hardware: a100-40gb\n"
    "executor: cpu\n"
    "workload: {dataset: alpaca, rate: 1.0, duration_s: 60}\n"
    "columns: [panel, system, request_rate, normalized_latency]\n"
    "sweep:\n"
    "  - {axis: request_rate, set: workload.rate, values: [0.5, 1, 2, 3, 4, 5, 6]}\n"
    "knee: {threshold: 0.2, refine: 2}\n"
    "systems:\n"
    "  - {name: slow, label: Slow, type: orca, reservation: max}\n"
    "  - {name: mid, label: Mid, type: orca, reservation: pow2}\n"
    "  - {name: fast, label: Fast, type: vllm, block_size: 16, sweep: {request_rate: [1, 2, 4, 6, 8]}}\n";

/* Point (sys, rate) of EXP: the index of `rate` in the system's grid. */
static int point_of(const pb_experiment *e, int sys, double rate) {
    for (int p = 0; p < pb_experiment_n_points(e, sys); p++) {
        double v;
        pb_experiment_point_values(e, sys, p, &v);
        if (v == rate) return p;
    }
    return -1;
}

static char *replace(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    PB_ASSERT(at);
    char *out = malloc(strlen(text) + strlen(to) + 1);
    sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

/* ---- keys ---- */
PB_TEST(key_follows_content_not_form) {
    pb_experiment *a = load(EXP);
    PB_REQUIRE(a);
    uint64_t k = pb_point_key(a, 2, point_of(a, 2, 4));
    PB_CHECK(k != pb_point_key(a, 2, point_of(a, 2, 6)));
    PB_CHECK(k != pb_point_key(a, 0, point_of(a, 0, 4)));
    PB_CHECK(pb_point_key(a, 0, 1) != pb_point_key(a, 1, 1));   /* other system options */
    char *text = pb_point_key_text(a, 2, point_of(a, 2, 4));
    PB_CHECK_STR_CONTAINS(text, "k4:rates1:4");                  /* the resolved value */
    PB_CHECK_STR_CONTAINS(text, "source ");
    PB_CHECK_STR_CONTAINS(text, "file workload.file ");
    PB_CHECK(strstr(text, "s4:Fast") == NULL && strstr(text, "k5:sweep") == NULL);
    free(text);
    pb_experiment_destroy(a);

    struct { const char *from, *to; bool same; } cases[] = {
        {"label: Fast", "label: Quick", true},                                          /* cosmetic */
        {"panel: a", "panel: b", true},
        {"{dataset: alpaca, rate: 1.0, duration_s: 60}", "{duration_s: 60, rate: 7, dataset: \"alpaca\"}", true},
        {"values: [0.5, 1, 2, 3, 4, 5, 6]", "values: [4]", true},                     /* a cut sweep */
        {"block_size: 16", "block_size: 32", false},                                   /* semantic */
        {"duration_s: 60", "duration_s: 61", false},
        {"executor: cpu", "executor: sim", false},
        {"name: toy\n", "name: toy\nseed: 3\n", false},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        char *t = replace(EXP, cases[i].from, cases[i].to);
        pb_experiment *b = load(t);
        PB_REQUIRE(b);
        int p = point_of(b, 2, 4);
        PB_REQUIRE(p >= 0);
        bool same = pb_point_key(b, 2, p) == k;
        if (same != cases[i].same) fprintf(stderr, "  case %zu (%s -> %s)\n", i, cases[i].from, cases[i].to);
        PB_CHECK(same == cases[i].same);
        pb_experiment_destroy(b);
        free(t);
    }
    /* --set sweep.0.values=[x]: the same key as the full grid's x point */
    const char *set[] = {"sweep.0.values=[3]"};
    pb_experiment *full = load(EXP), *cut = load_sets(EXP, set, 1);
    PB_REQUIRE(full && cut);
    PB_CHECK_EQ_INT(pb_experiment_n_points(cut, 0), 1);
    PB_CHECK(pb_point_key(cut, 0, 0) == pb_point_key(full, 0, point_of(full, 0, 3)));
    PB_CHECK(pb_point_key(cut, 1, 0) == pb_point_key(full, 1, point_of(full, 1, 3)));
    pb_experiment_destroy(full);
    pb_experiment_destroy(cut);
}

PB_TEST(key_follows_system_axes_and_input_files) {
    /* an axis on a system option ("system.X") keys like the option written in the map */
    const char *ax = "name: bs\nfigure: f\nmodel: opt-13b\nhardware: a100-40gb\n"
                     "workload: {trace: TRACE}\ncolumns: [system]\n"
                     "sweep: [{axis: block_size, set: system.block_size, values: [8, 32]}]\n"
                     "systems: [{name: v, label: V, type: vllm}]\n";
    const char *fixed = "name: bs\nfigure: f\nmodel: opt-13b\nhardware: a100-40gb\n"
                        "workload: {trace: TRACE}\ncolumns: [system]\n"
                        "systems: [{name: v, label: V, type: vllm, block_size: 32}]\n";
    const char *trace = write_file("trace.csv", "arrival_s,prompt_len,output_len\n0,10,5\n1,12,6\n");
    char *ta = replace(ax, "TRACE", trace), *tf = replace(fixed, "TRACE", trace);
    pb_experiment *a = load(ta), *f = load(tf);
    PB_REQUIRE(a && f);
    uint64_t k32 = pb_point_key(a, 0, 1);
    PB_CHECK(k32 == pb_point_key(f, 0, 0));
    PB_CHECK(k32 != pb_point_key(a, 0, 0));
    /* the trace's bytes are keyed, not its path: a copy elsewhere keys the same */
    const char *copy = write_file("copy.csv", "arrival_s,prompt_len,output_len\n0,10,5\n1,12,6\n");
    char *tc = replace(fixed, "TRACE", copy);
    pb_experiment *c = load(tc);
    PB_REQUIRE(c);
    PB_CHECK(pb_point_key(c, 0, 0) == k32);
    char *text = pb_point_key_text(c, 0, 0);
    PB_CHECK(strstr(text, "copy.csv") == NULL);
    PB_CHECK_STR_CONTAINS(text, "file workload.trace 46 ");
    free(text);
    /* appending a request changes the key: no stale reuse */
    write_file("trace.csv", "arrival_s,prompt_len,output_len\n0,10,5\n1,12,6\n2,9,9\n");
    PB_CHECK(pb_point_key(f, 0, 0) != k32);
    pb_experiment_destroy(a);
    pb_experiment_destroy(f);
    pb_experiment_destroy(c);
    free(ta);
    free(tf);
    free(tc);
}

/* ---- plans ---- */
PB_TEST(plan_partitions_and_balances) {
    int s, n;
    PB_CHECK(pb_shard_parse("2/8", &s, &n) && s == 1 && n == 8);
    PB_CHECK(pb_shard_parse("1/1", &s, &n) && s == 0 && n == 1);
    PB_CHECK(!pb_shard_parse("0/4", &s, &n) && !pb_shard_parse("5/4", &s, &n) && !pb_shard_parse("2", &s, &n) &&
             !pb_shard_parse("1/x", &s, &n) && !pb_shard_parse("1/4x", &s, &n) && !pb_shard_parse("/4", &s, &n));

    char *flat = replace(EXP, "refine: 2", "refine: 0");
    for (int variant = 0; variant < 2; variant++) {
        pb_experiment *e = load(variant ? flat : EXP);
        PB_REQUIRE(e);
        PB_CHECK(pb_shard_by_series(e) == (variant == 0));
        int64_t total = 0, biggest = 0;
        for (int sy = 0; sy < e->n_systems; sy++) {
            int64_t series = 0;
            for (int p = 0; p < pb_experiment_n_points(e, sy); p++) {
                int64_t c = pb_point_cost(e, sy, p);
                PB_CHECK(c > 1);
                series += c;
                if (!variant) continue;
                biggest = PB_MAX(biggest, c);
            }
            if (!variant) biggest = PB_MAX(biggest, series);
            total += series;
        }
        /* a higher rate means more requests: more work */
        PB_CHECK(pb_point_cost(e, 0, point_of(e, 0, 6)) > 5 * pb_point_cost(e, 0, point_of(e, 0, 0.5)));
        for (int ns = 1; ns <= 5; ns++) {
            pb_shard_plan *p = pb_shard_plan_make(&e, 1, ns);
            PB_CHECK(pb_shard_plan_check(p) == PB_OK);
            int64_t maxload = 0, sum = 0;
            for (int k = 0; k < ns; k++) {
                maxload = PB_MAX(maxload, pb_shard_plan_load(p, k));
                sum += pb_shard_plan_load(p, k);
            }
            PB_CHECK(sum == total);
            /* LPT: within 4/3 of the lower bound on the best largest shard */
            double lb = fmax((double)total / ns, (double)biggest);
            PB_CHECK(maxload <= 4.0 / 3.0 * lb + 1);
            /* the same plan again (deterministic) */
            pb_shard_plan *q = pb_shard_plan_make(&e, 1, ns);
            for (int sy = 0; sy < e->n_systems; sy++)
                for (int pt = 0; pt < pb_experiment_n_points(e, sy); pt++)
                    PB_CHECK(pb_shard_plan_owner(p, 0, sy, pt) == pb_shard_plan_owner(q, 0, sy, pt));
            pb_shard_plan_destroy(q);
            pb_shard_plan_destroy(p);
        }
        pb_experiment_destroy(e);
    }
    free(flat);
}

/* ---- sharded runs ---- */
static pb_status toy_point(const pb_point_ctx *pt, pb_point_metrics *out, char *err, size_t n, void *user) {
    double rate = pb_node_num(pt->root, "workload.rate", NAN);
    double cap = pt->sys == 0 ? 2.5 : pt->sys == 1 ? 3.5 : 7.25;
    pb_pm_set(out, "normalized_latency", rate < cap ? 0.03 + 0.01 / (cap - rate) : 5.0 + rate);
    snprintf(out->summary, sizeof out->summary, "toy summary\nrate %g\n", rate);
    return PB_OK;
}

/* Run (optionally shard `shard` of n_shards) with refinement rounds; then, when
 * collect is set, write the CSV to csv.  Returns the number of points computed. */
static int run(const char *text, const char *dir, int shard, int n_shards, const char *csv) {
    pb_experiment *e = load(text);
    PB_ASSERT(e);
    pb_shard_plan *plan = n_shards ? pb_shard_plan_make(&e, 1, n_shards) : NULL;
    pb_runner_opts o = {2, dir, false, false, true, false, 0, toy_point, NULL, plan, shard, false, false};
    pb_runner_stats st;
    int computed = 0;
    for (int round = 0;; round++) {
        PB_ASSERT(pb_runner_run(&e, 1, &o, &st) == PB_OK);
        computed += st.computed;
        if (!pb_runner_refine_shard(&e, 1, dir, round, plan, shard)) break;
    }
    if (csv) {   /* as merge does: a fresh load, refinement replayed from the point files */
        pb_experiment_destroy(e);
        e = load(text);
        PB_ASSERT(e);
        for (int round = 0; pb_runner_refine(&e, 1, dir, round); round++) {}
        pb_results r;
        PB_ASSERT(pb_runner_collect(&e, 1, dir, &r) == PB_OK);
        PB_ASSERT(pb_results_write_csv(&r, csv) == PB_OK);
        pb_results_free(&r);
    }
    pb_shard_plan_destroy(plan);
    pb_experiment_destroy(e);
    return computed;
}

PB_TEST(shards_then_merge_equal_one_run) {
    char *flat = replace(EXP, "refine: 2", "refine: 0");
    for (int variant = 0; variant < 2; variant++) {
        const char *text = variant ? flat : EXP;
        char d[400], csv1[500], csv2[500];
        snprintf(d, sizeof d, "%s/one%d", tmpdir(), variant);
        snprintf(csv1, sizeof csv1, "%s/one%d.csv", tmpdir(), variant);
        int all = run(text, d, 0, 0, csv1);
        PB_CHECK(all > 17);   /* variant 0: refinement added points */
        char *want = pb_test_slurp(csv1);
        PB_REQUIRE(want);
        for (int ns = 1; ns <= 4; ns++) {
            snprintf(d, sizeof d, "%s/sh%d_%d", tmpdir(), variant, ns);
            int sum = 0;
            for (int k = 0; k < ns; k++) sum += run(text, d, k, ns, NULL);
            PB_CHECK_EQ_INT(sum, all);             /* every point once, refinement included */
            snprintf(csv2, sizeof csv2, "%s/sh%d_%d.csv", tmpdir(), variant, ns);
            run(text, d, 0, 0, csv2);              /* nothing left to compute */
            char *got = pb_test_slurp(csv2);
            PB_REQUIRE(got);
            PB_CHECK(strcmp(want, got) == 0);
            free(got);
        }
        free(want);
    }
    free(flat);
}

PB_TEST(a_point_file_cut_short_is_computed_again) {
    char d[400], base[600];
    snprintf(d, sizeof d, "%s/torn", tmpdir());
    char *flat = replace(EXP, "refine: 2", "refine: 0");
    int all = run(flat, d, 0, 0, NULL);
    PB_CHECK_EQ_INT(run(flat, d, 0, 0, NULL), 0);   /* all reused */
    pb_experiment *e = load(flat);
    PB_REQUIRE(e);
    pb_point_path(e, 1, 2, d, base, sizeof base);
    strcat(base, ".pt");
    char *text = pb_test_slurp(base);
    PB_REQUIRE(text);
    PB_CHECK_STR_CONTAINS(text, "\ntoy summary\nrate ");
    PB_CHECK_STR_CONTAINS(text, "\nsummary ");
    /* the file minus its last 3 bytes, as a crash may leave it */
    FILE *f = fopen(base, "w");
    PB_REQUIRE(f);
    fwrite(text, 1, strlen(text) - 3, f);
    fclose(f);
    PB_CHECK_EQ_INT(run(flat, d, 0, 0, NULL), 1);
    PB_CHECK(all > 1);
    free(text);
    free(flat);
    pb_experiment_destroy(e);
}

PB_TEST_MAIN()
