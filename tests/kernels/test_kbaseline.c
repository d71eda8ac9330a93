/* test_kbaseline.c -- baseline file round trip, parse errors with file:line:col, and
 * the regression rule (latency and ratio tolerances). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kbaseline.h"
#include "kbench.h"
#include "pbtest.h"

static pb_kb_result mk(const char *name, pb_kb_kind k, double v) {
    pb_kb_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", name);
    r.kind = k;
    r.value = v;
    return r;
}

PB_TEST(save_load_roundtrip) {
    pb_kb_set s, t;
    pb_kb_set_init(&s);
    snprintf(s.device, sizeof s.device, "Test GPU");
    snprintf(s.mode, sizeof s.mode, "gpu");
    s.tolerance = 0.1; s.ratio_tolerance = 0.05;
    pb_kb_result a = mk("fig18a/paged/b8-ctx64-bs16", PB_KB_US, 12.5), b = mk("fig18a/ratio/b8-ctx64", PB_KB_RATIO, 1.02);
    pb_kb_set_add(&s, &a);
    pb_kb_set_add(&s, &b);
    char path[64];
    snprintf(path, sizeof path, "/tmp/pb_kb_test_%d.json", (int)getpid());
    PB_REQUIRE(pb_kb_save(path, &s) == PB_OK);
    char err[256] = "";
    PB_REQUIRE(pb_kb_load(path, &t, err, sizeof err) == PB_OK);
    PB_CHECK_EQ_INT(t.n, 2);
    PB_CHECK_STR_CONTAINS(t.device, "Test GPU");
    PB_CHECK_STR_CONTAINS(t.mode, "gpu");
    PB_CHECK_NEAR(t.tolerance, 0.1, 1e-12);
    PB_CHECK_NEAR(pb_kb_set_find(&t, "fig18a/ratio/b8-ctx64")->value, 1.02, 1e-9);
    PB_CHECK(pb_kb_set_find(&t, "fig18a/ratio/b8-ctx64")->kind == PB_KB_RATIO);
    remove(path);
    pb_kb_set_free(&s);
    pb_kb_set_free(&t);
}

PB_TEST(parse_errors_have_positions) {
    pb_kb_set s;
    char err[256];
    const char *bad_kind = "{\n \"mode\": \"gpu\",\n \"tolerance\": 0.1,\n \"ratio_tolerance\": 0.05,\n"
                           " \"entries\": [\n  {\"name\": \"x\", \"kind\": \"ms\", \"value\": 3}\n ]\n}\n";
    PB_CHECK(pb_kb_parse("b.json", bad_kind, &s, err, sizeof err) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(err, "b.json:6:");
    PB_CHECK_STR_CONTAINS(err, "kind must be");
    const char *neg = "{\n \"mode\": \"gpu\",\n \"tolerance\": 0.1,\n \"ratio_tolerance\": 0.05,\n"
                      " \"entries\": [\n  {\"name\": \"x\", \"kind\": \"us\", \"value\": -3}\n ]\n}\n";
    PB_CHECK(pb_kb_parse("b.json", neg, &s, err, sizeof err) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(err, "positive");
    const char *junk = "{\n \"mode\": \"gpu\",\n garbage\n}\n";
    PB_CHECK(pb_kb_parse("b.json", junk, &s, err, sizeof err) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(err, "b.json:3:2:");
    const char *empty = "{\n \"mode\": \"gpu\",\n \"tolerance\": 0.1,\n \"ratio_tolerance\": 0.05,\n \"entries\": [\n ]\n}\n";
    PB_CHECK(pb_kb_parse("b.json", empty, &s, err, sizeof err) == PB_ERR_INVALID);
    PB_CHECK(pb_kb_load("/nonexistent/dir/x.json", &s, err, sizeof err) == PB_ERR_IO);
}

PB_TEST(regression_rule) {
    pb_kb_set base, cur;
    pb_kb_set_init(&base);
    pb_kb_set_init(&cur);
    base.tolerance = 0.10;
    base.ratio_tolerance = 0.05;
    pb_kb_result b1 = mk("k1", PB_KB_US, 100), b2 = mk("r1", PB_KB_RATIO, 1.0), b3 = mk("k3", PB_KB_US, 5);
    pb_kb_set_add(&base, &b1); pb_kb_set_add(&base, &b2); pb_kb_set_add(&base, &b3);
    pb_kb_result c1 = mk("k1", PB_KB_US, 109.9), c2 = mk("r1", PB_KB_RATIO, 1.049), c4 = mk("new", PB_KB_US, 1);
    pb_kb_set_add(&cur, &c1); pb_kb_set_add(&cur, &c2); pb_kb_set_add(&cur, &c4);
    FILE *null = fopen("/dev/null", "w");
    int n = 0;
    PB_CHECK_EQ_INT(pb_kb_compare(&base, &cur, null, &n), 0);
    PB_CHECK_EQ_INT(n, 2);
    cur.e[0].value = 110.1;                       /* > 10% slower */
    PB_CHECK_EQ_INT(pb_kb_compare(&base, &cur, null, &n), 1);
    cur.e[1].value = 1.06;                        /* ratio grew > 5% */
    PB_CHECK_EQ_INT(pb_kb_compare(&base, &cur, null, &n), 2);
    cur.e[0].value = 50;                          /* faster is fine */
    PB_CHECK_EQ_INT(pb_kb_compare(&base, &cur, null, &n), 1);
    fclose(null);
    pb_kb_set_free(&base);
    pb_kb_set_free(&cur);
}

/* A cpu-reference baseline was taken on another CPU: a grid's latencies scale by its median
 * current/baseline (a 10x faster or slower machine fails nothing), and a kernel that
 * slowed down against the others regresses whatever the machine. */
PB_TEST(cpu_reference_scales_by_the_machine) {
    pb_kb_set base, cur;
    pb_kb_set_init(&base);
    pb_kb_set_init(&cur);
    snprintf(base.mode, sizeof base.mode, "cpu-reference");
    base.tolerance = 0.5;
    base.ratio_tolerance = 0.25;
    const char *names[] = {"cpu/g/a", "cpu/g/b", "cpu/g/c", "cpu/g/d", "cpu/g/e"};   /* one grid */
    double bv[] = {100, 20, 5, 40, 80};
    for (int i = 0; i < 5; i++) {
        pb_kb_result b = mk(names[i], PB_KB_US, bv[i]), c = mk(names[i], PB_KB_US, bv[i] / 9.0);   /* 9x faster */
        pb_kb_set_add(&base, &b);
        pb_kb_set_add(&cur, &c);
    }
    FILE *null = fopen("/dev/null", "w");
    int n = 0;
    PB_CHECK_EQ_INT(pb_kb_compare(&base, &cur, null, &n), 0);   /* absolute: all -89%, no power */
    PB_CHECK_EQ_INT(n, 5);
    cur.e[2].value *= 1.6;                                      /* c: 1.6x slower than the others */
    PB_CHECK_EQ_INT(pb_kb_compare(&base, &cur, null, &n), 1);
    for (int i = 0; i < 5; i++) cur.e[i].value *= 20;           /* a 20x slower machine: still only c */
    PB_CHECK_EQ_INT(pb_kb_compare(&base, &cur, null, &n), 1);
    snprintf(base.mode, sizeof base.mode, "gpu");                /* a device's own baseline: absolute */
    PB_CHECK_EQ_INT(pb_kb_compare(&base, &cur, null, &n), 5);
    fclose(null);
    pb_kb_set_free(&base);
    pb_kb_set_free(&cur);
}

PB_TEST(goals_and_csv) {
    pb_kb_set r;
    pb_kb_set_init(&r);
    snprintf(r.device, sizeof r.device, "Test GPU");
    pb_kb_result a = mk("long/paged/b64-ctx1024-bs16", PB_KB_US, 100);
    a.pct_peak = 85;
    pb_kb_result b = mk("long/ratio/b64-ctx1024", PB_KB_RATIO, 1.07);     /* misses 1.05 */
    pb_kb_result c = mk("fig18a/ratio/b8-ctx128", PB_KB_RATIO, 1.07);     /* meets 1.10 */
    pb_kb_result d = mk("swap/batched-runs/in/bs8", PB_KB_US, 10);
    d.pct_measured = 79;                                                     /* misses 80 */
    pb_kb_result e = mk("swap/batched-runs/in/bs4", PB_KB_US, 10);
    e.pct_measured = 10;                                                     /* not a goal */
    pb_kb_result f = mk("fig18a/ratio/b8-ctx64", PB_KB_RATIO, 3.0);       /* not a goal */
    pb_kb_set_add(&r, &a); pb_kb_set_add(&r, &b); pb_kb_set_add(&r, &c);
    pb_kb_set_add(&r, &d); pb_kb_set_add(&r, &e); pb_kb_set_add(&r, &f);
    FILE *null = fopen("/dev/null", "w");
    PB_CHECK_EQ_INT(pb_kbench_goals(&r, null), 2);
    fclose(null);
    char path[64];
    snprintf(path, sizeof path, "/tmp/pb_kb_csv_%d.csv", (int)getpid());
    PB_REQUIRE(pb_kbench_write_csv(path, &r) == PB_OK);
    FILE *f2 = fopen(path, "r");
    PB_REQUIRE(f2 != NULL);
    char line[256];
    int lines = 0;
    while (fgets(line, sizeof line, f2)) lines++;
    fclose(f2);
    remove(path);
    PB_CHECK_EQ_INT(lines, 7);
    pb_kb_set_free(&r);
}

PB_TEST_MAIN()
