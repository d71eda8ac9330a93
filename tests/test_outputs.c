/* test_outputs.c -- what `pagedbench run --requests --timeline` writes, read back:
 *   - every request's TTFT, TPOT, E2EL and normalized latency are derived here from its
 *     raw times and lengths in <exp>.requests.csv (arrival_s, first_token_s, finish_s,
 *     output_len; the definitions of docs/outputs.md, not pb_req_latency_of) and must
 *     equal the file's own columns; from these independent values every point's TTFT /
 *     TPOT / E2EL (ms) mean, std and percentiles (the YAML's `percentiles:`, 99.9 among
 *     them) and the normalized latency's mean and p50/p90/p99 in <exp>.csv are
 *     recomputed bit for bit (numpy's linear percentile and population std; normalized
 *     latency counts a request once per sequence, max(n, beam_width); the mean in
 *     request order), and the counts agree; goodput (TTFT, TPOT and E2EL bounds) is the
 *     number of requests whose own slo_met flag is 1;
 *   - the timeline has one row per engine step (`steps` of the point);
 *   - <exp>.json parses with jansson and holds the resolved config as an object
 *     (the slo map, the systems list, the axis value assigned), every point's
 *     metrics, and the machine;
 *   - each point's JSON entry carries the seed it ran with: the YAML's seed, or, when a
 *     sweep axis sets `seed`, that axis' value (and the experiment says it is swept);
 *   - the checks are printed (`Check complete:`, `Check slo_met:`), no "VALID";
 *   - --jobs 1 and --jobs 2 give byte-identical CSVs, per-request and per-step files.
 * Runs the real binary (PAGEDBENCH_BIN, set by ctest) on the sim executor, with the
 * built-in length distributions (PAGEDBENCH_SHARED_DATA at an empty folder), so it runs
 * the same in a bare clone and beside ../shared/data. */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pbtest.h"
#include "report.h"   /* pb_csv_table */

static const char *YAML =
    "name: outputs_t\n"
    "figure: outputs_t\n"
    "panel: a\n"
    "model: opt-13b\n"
    "hardware: a100-40gb\n"
    "slo: {ttft_ms: 60, tpot_ms: 30, e2el_ms: 9000}\n"
    "percentiles: [90, 99, 99.9]\n"
    "workload:\n"
    "  dataset: alpaca\n"
    "  arrivals: poisson\n"
    "  rate: 1.0\n"
    "  duration_s: 30\n"
    "sweep:\n"
    "  - {axis: request_rate, set: workload.rate, values: [2, 40]}\n"
    "  - {axis: n, set: workload.n, values: [1, 3]}\n"
    "systems:\n"
    "  - {name: orca_max, label: Orca (Max), type: orca, reservation: max}\n"
    "  - {name: vllm, label: vLLM, type: vllm}\n";

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy.percentile(v, p) with the default linear method; sorts v */
static double pct(double *v, int n, double p) {
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    double pos = p / 100.0 * (n - 1);
    int lo = (int)pos;
    if (lo >= n - 1) return v[n - 1];
    return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]);
}

static double mean_of(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return n ? s / n : 0;
}

static const char *cellv(const pb_csv_table *t, int r, const char *col) {
    int c = pb_csv_table_col(t, col);
    return c < 0 ? NULL : t->rows[r][c];
}

static double numv(const pb_csv_table *t, int r, const char *col) {
    const char *s = cellv(t, r, col);
    return s && *s ? strtod(s, NULL) : NAN;
}

/* the statistics of v[n] against the CSV row's <base>_{mean,std,p50,p90,p99,p99.9}<unit>
 * (normalized latency: mean, p50, p90, p99 under its own names) */
static int check_stats(const pb_csv_table *res, int row, const char *base, const char *unit, double *v, int n) {
    static const char *const W[] = {"mean", "std", "p50", "p90", "p99", "p99.9"};
    static const double P[] = {0, 0, 50, 90, 99, 99.9};
    bool nl = !strcmp(base, "normalized_latency");
    double got[6];
    got[0] = mean_of(v, n);
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (v[i] - got[0]) * (v[i] - got[0]);
    got[1] = n ? sqrt(ss / n) : 0;
    for (int k = 2; k < 6; k++) got[k] = pct(v, n, P[k]);
    int bad = 0;
    for (int k = 0; k < 6; k++) {
        char col[96];
        if (nl && (k == 1 || k == 5)) continue;
        if (nl) snprintf(col, sizeof col, k == 0 ? "normalized_latency" : "normalized_latency_%s", W[k]);
        else snprintf(col, sizeof col, "%s_%s%s", base, W[k], unit);
        double want = numv(res, row, col);
        /* std: the same sum in another order may differ in the last bits */
        if (!(want == got[k]) && !(k == 1 && fabs(want - got[k]) <= 1e-9 * fabs(got[k]))) {
            fprintf(stderr, "  row %d %s: results %.17g, recomputed from requests %.17g\n", row, col, want, got[k]);
            bad++;
        }
    }
    return bad;
}

/* The runs below use the built-in length distributions: an empty data folder. */
static void no_shared_data(const char *dir) {
    static char nodata[600];
    snprintf(nodata, sizeof nodata, "%s/nodata", dir);
    PB_ASSERT(mkdir(nodata, 0755) == 0);
    setenv("PAGEDBENCH_SHARED_DATA", nodata, 1);
}

/* A request's latencies from its raw cells (docs/outputs.md): TTFT = (first token -
 * arrival) ms; TPOT = (finish - first token) / (output_len - 1) ms, output_len > 1; E2EL =
 * (finish - arrival) ms; normalized = (finish - arrival) / output_len s/token.  NAN where undefined.  Each
 * must equal the file's own column; *bad counts those that do not. */
typedef struct { double ttft, tpot, e2e, nl; } lat4;
static lat4 derive(const pb_csv_table *t, int q, int *bad) {
    double arr = numv(t, q, "arrival_s"), ft = numv(t, q, "first_token_s"), fin = numv(t, q, "finish_s");
    double out = numv(t, q, "output_len");
    lat4 l = {NAN, NAN, NAN, NAN};
    if (!isnan(ft)) l.ttft = (ft - arr) * 1e3;
    if (!isnan(fin)) {
        l.e2e = (fin - arr) * 1e3;
        l.nl = (fin - arr) / out;
        if (out > 1) l.tpot = (fin - ft) / (out - 1) * 1e3;
    }
    static const char *const col[4] = {"ttft_ms", "tpot_ms", "e2el_ms", "normalized_latency_s_per_token"};
    const double v[4] = {l.ttft, l.tpot, l.e2e, l.nl};
    for (int k = 0; k < 4; k++) {
        double c = numv(t, q, col[k]);
        if (!(c == v[k] || (isnan(c) && isnan(v[k])))) {
            if (*bad < 5)
                fprintf(stderr, "  request row %d %s: file %.17g, from its times %.17g\n", q, col[k], c, v[k]);
            (*bad)++;
        }
    }
    return l;
}

static int run_cmd(const char *cmd) {
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

PB_TEST(requests_csv_recomputes_point_percentiles_and_json_holds_config) {
    const char *bin = getenv("PAGEDBENCH_BIN");
    if (!bin || !*bin) PB_SKIP("PAGEDBENCH_BIN not set (run through ctest)");
    char dir[] = "/tmp/pb_outputs_XXXXXX";
    PB_REQUIRE(mkdtemp(dir));
    char path[512], cmd[2048];
    no_shared_data(dir);
    snprintf(path, sizeof path, "%s/o.yaml", dir);
    FILE *f = fopen(path, "w");
    PB_REQUIRE(f);
    fputs(YAML, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' run '%s' --results='%s/r' --requests --timeline --jobs=2 >'%s/out' 2>'%s/err'",
             bin, path, dir, dir, dir);
    PB_REQUIRE(run_cmd(cmd) == 0);

    pb_csv_table res, req, tl;
    snprintf(path, sizeof path, "%s/r/outputs_t.csv", dir);
    PB_REQUIRE(pb_csv_table_load(path, &res) == PB_OK);
    snprintf(path, sizeof path, "%s/r/outputs_t.requests.csv", dir);
    PB_REQUIRE(pb_csv_table_load(path, &req) == PB_OK);
    snprintf(path, sizeof path, "%s/r/outputs_t.timeline.csv", dir);
    PB_REQUIRE(pb_csv_table_load(path, &tl) == PB_OK);
    PB_CHECK_EQ_INT(res.n_rows, 8);   /* 2 systems x 2 rates x 2 n */

    int total_req = 0, total_steps = 0, preempted_points = 0;
    double *ttft = calloc((size_t)req.n_rows + 1, sizeof(double)), *tpot = calloc((size_t)req.n_rows + 1, sizeof(double));
    double *e2e = calloc((size_t)req.n_rows + 1, sizeof(double));
    double *nl = calloc((size_t)req.n_rows * 8 + 1, sizeof(double));
    for (int r = 0; r < res.n_rows; r++) {
        const char *sys = cellv(&res, r, "system");
        double rate = numv(&res, r, "request_rate"), n = numv(&res, r, "n");
        int nt = 0, np = 0, ne = 0, nn = 0, rows = 0, fin = 0, rej = 0, good = 0, preempt = 0, bad = 0;
        for (int q = 0; q < req.n_rows; q++) {   /* this point's rows, in request order */
            if (strcmp(cellv(&req, q, "system"), sys) || numv(&req, q, "request_rate") != rate ||
                numv(&req, q, "axis.n") != n)
                continue;
            PB_CHECK_EQ_INT((long long)numv(&req, q, "request_id"), rows);
            rows++;
            rej += (int)numv(&req, q, "rejected");
            preempt += (int)numv(&req, q, "preemptions");
            lat4 l = derive(&req, q, &bad);
            if (isnan(numv(&req, q, "finish_s"))) continue;
            fin++;
            double t = l.ttft, p = l.tpot;
            ttft[nt++] = t;
            if (!isnan(p)) tpot[np++] = p;
            e2e[ne++] = l.e2e;
            int seqs = (int)fmax(numv(&req, q, "n"), numv(&req, q, "beam_width"));
            for (int k = 0; k < seqs; k++) nl[nn++] = l.nl;
            bool ok = t <= 60 && (isnan(p) || p <= 30) && l.e2e <= 9000;
            good += ok;
            PB_CHECK(numv(&req, q, "slo_met") == (ok ? 1 : 0));   /* the request's own flag */
        }
        PB_CHECK_EQ_INT(bad, 0);
        total_req += rows;
        preempted_points += preempt > 0;
        PB_CHECK(rows > 0);
        PB_CHECK_EQ_INT(rows, (long long)numv(&res, r, "n_requests"));
        PB_CHECK_EQ_INT(fin, (long long)numv(&res, r, "n_finished"));
        PB_CHECK_EQ_INT(rej, (long long)numv(&res, r, "n_rejected"));
        PB_CHECK_EQ_INT(preempt, (long long)(numv(&res, r, "preempt_recompute") + numv(&res, r, "preempt_swap")));
        PB_CHECK(check_stats(&res, r, "ttft", "_ms", ttft, nt) == 0);
        PB_CHECK(check_stats(&res, r, "tpot", "_ms", tpot, np) == 0);
        PB_CHECK(check_stats(&res, r, "e2el", "_ms", e2e, ne) == 0);
        PB_CHECK(check_stats(&res, r, "normalized_latency", "", nl, nn) == 0);
        PB_CHECK(numv(&res, r, "goodput_fraction") == (double)good / rows);
        PB_CHECK(numv(&res, r, "goodput_per_s") == good / numv(&res, r, "duration_s"));
        int steps = 0;
        for (int q = 0; q < tl.n_rows; q++)
            steps += !strcmp(cellv(&tl, q, "system"), sys) && numv(&tl, q, "request_rate") == rate &&
                     numv(&tl, q, "n") == n;
        PB_CHECK_EQ_INT(steps, (long long)numv(&res, r, "steps"));
        total_steps += steps;
        bool slo_met = numv(&res, r, "complete") == 1 && numv(&res, r, "ttft_p99_ms") <= 60 &&
                       numv(&res, r, "tpot_p99_ms") <= 30 && numv(&res, r, "e2el_p99_ms") <= 9000;
        PB_CHECK(numv(&res, r, "slo_met") == (slo_met ? 1 : 0));
    }
    PB_CHECK_EQ_INT(total_req, req.n_rows);
    PB_CHECK_EQ_INT(total_steps, tl.n_rows);
    PB_CHECK(preempted_points > 0);   /* the 40 req/s points are past vLLM's knee: a real mix */
    free(ttft);
    free(tpot);
    free(e2e);
    free(nl);
    pb_csv_table_free(&req);
    pb_csv_table_free(&tl);

    /* the JSON sidecar */
    snprintf(path, sizeof path, "%s/r/outputs_t.json", dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    PB_REQUIRE(j);
    json_t *cfg = json_object_get(json_array_get(json_object_get(j, "experiments"), 0), "config");
    PB_CHECK(json_is_object(cfg));
    PB_CHECK(json_integer_value(json_object_get(json_object_get(cfg, "slo"), "ttft_ms")) == 60);
    PB_CHECK(json_array_size(json_object_get(cfg, "systems")) == 2);
    PB_CHECK(!strcmp(json_string_value(json_object_get(json_array_get(json_object_get(cfg, "systems"), 1), "type")),
                     "vllm"));
    PB_CHECK(json_is_object(json_object_get(j, "machine")));
    const char *rev = json_string_value(json_object_get(j, "git_revision"));
    PB_CHECK(rev && *rev);
    json_t *x0 = json_array_get(json_object_get(j, "experiments"), 0);
    PB_CHECK(json_is_integer(json_object_get(x0, "seed")) && json_integer_value(json_object_get(x0, "seed")) == 0);
    PB_CHECK(json_is_null(json_object_get(x0, "seed_swept_by")));
    json_t *pts = json_object_get(j, "points");
    PB_CHECK_EQ_INT(json_array_size(pts), res.n_rows);
    for (int r = 0; r < res.n_rows && r < (int)json_array_size(pts); r++) {
        json_t *m = json_object_get(json_array_get(pts, r), "metrics");
        PB_CHECK(json_real_value(json_object_get(m, "ttft_p99_ms")) == numv(&res, r, "ttft_p99_ms"));
        json_t *ps = json_object_get(json_array_get(pts, r), "seed");
        PB_CHECK(json_is_integer(ps) && json_integer_value(ps) == 0);
    }
    json_decref(j);
    pb_csv_table_free(&res);

    /* the same bytes for another --jobs (points run in other workers, files concatenated in order) */
    snprintf(cmd, sizeof cmd, "'%s' run '%s/o.yaml' --results '%s/r1' --requests --timeline --jobs 1 >/dev/null 2>&1 && "
             "cmp -s '%s/r/outputs_t.requests.csv' '%s/r1/outputs_t.requests.csv' && "
             "cmp -s '%s/r/outputs_t.timeline.csv' '%s/r1/outputs_t.timeline.csv' && "
             "cmp -s '%s/r/outputs_t.csv' '%s/r1/outputs_t.csv'", bin, dir, dir, dir, dir, dir, dir, dir, dir);
    PB_CHECK(run_cmd(cmd) == 0);

    /* named checks, not "VALID" */
    snprintf(cmd, sizeof cmd, "grep -q '^Check complete: PASS' '%s/out' && grep -q '^Check slo_met: ' '%s/out' && "
             "! grep -q 'Result is' '%s/out'", dir, dir, dir);
    PB_CHECK(run_cmd(cmd) == 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    run_cmd(cmd);
}

/* A seed sweep: each point's JSON entry says the seed it ran with (the axis value, not
 * the YAML's base seed 11), the experiment says it is swept, and the seeds change the run. */
PB_TEST(json_seed_of_a_seed_sweep_is_each_points_own) {
    const char *bin = getenv("PAGEDBENCH_BIN");
    if (!bin || !*bin) PB_SKIP("PAGEDBENCH_BIN not set (run through ctest)");
    char dir[] = "/tmp/pb_seed_XXXXXX";
    PB_REQUIRE(mkdtemp(dir));
    char path[512], cmd[2048];
    no_shared_data(dir);
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    FILE *f = fopen(path, "w");
    PB_REQUIRE(f);
    fputs("name: seed_t\nfigure: seed_t\nmodel: opt-13b\nhardware: a100-40gb\nseed: 11\n"
          "workload: {dataset: alpaca, arrivals: poisson, rate: 4, duration_s: 20}\n"
          "sweep:\n  - {axis: seed_value, set: seed, values: [3, 7]}\n"
          "systems:\n  - {name: vllm, label: vLLM, type: vllm}\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' run '%s' --results '%s/r' >'%s/out' 2>'%s/err'", bin, path, dir, dir, dir);
    PB_REQUIRE(run_cmd(cmd) == 0);
    snprintf(path, sizeof path, "%s/r/seed_t.json", dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    PB_REQUIRE(j);
    json_t *x0 = json_array_get(json_object_get(j, "experiments"), 0);
    PB_CHECK(json_is_null(json_object_get(x0, "seed")));
    const char *by = json_string_value(json_object_get(x0, "seed_swept_by"));
    PB_CHECK(by && !strcmp(by, "seed_value"));
    json_t *pts = json_object_get(j, "points");
    PB_CHECK_EQ_INT(json_array_size(pts), 2);
    double e2e[2] = {0, 0};
    for (size_t r = 0; r < json_array_size(pts) && r < 2; r++) {
        json_t *p = json_array_get(pts, r);
        json_t *ps = json_object_get(p, "seed");
        double ax = json_number_value(json_object_get(json_object_get(p, "axes"), "seed_value"));
        PB_CHECK(json_is_integer(ps));
        PB_CHECK(ax == 3 || ax == 7);
        PB_CHECK_EQ_INT(json_integer_value(ps), (long long)ax);
        e2e[r] = json_number_value(json_object_get(json_object_get(p, "metrics"), "e2el_mean_ms"));
    }
    PB_CHECK(e2e[0] > 0 && e2e[1] > 0 && e2e[0] != e2e[1]);   /* two seeds, two runs */
    json_decref(j);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    run_cmd(cmd);
}

PB_TEST_MAIN()
