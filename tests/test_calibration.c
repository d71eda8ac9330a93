/* test_calibration.c -- the C cost model reproduces the fit that set its GEMM parameters.
 *
 * experiments/calibrate/calibrate.py fits gemm_flops_efficiency, gemm_bw_efficiency,
 * gemm_sm_bw_GBps and gemm_fixed_us on 36,516 profiled A100 GEMMs with its own (Python)
 * copy of the sim's formula (tiles, split-K, weight streams, sqrt(compute^2 + memory^2)),
 * and reports a median |error| of 5.0% (p90 13.9%) and, per token-count bucket, a median
 * pred/measured within 0.99-1.03.  This test runs the C formula (pb_sim_gemm_time,
 * a100-80gb.yaml) over a committed sample of those GEMMs (tests/data/a100_gemm_sample.csv:
 * of each operator's rows -- QKV, out, FC1, FC2 -- every 45th and every 30th with at most
 * 256 tokens, made by `calibrate.py --gemm-sample`) and checks that it lands at the same
 * residuals -- so the two copies of the formula cannot drift apart, and a YAML edit that
 * breaks the fit fails here even where ../shared (and so tests/cli_calibrate.sh) is absent.
 *
 * Bounds: overall median |err| <= 8% and p90 <= 20%; per bucket (1-64, 65-192, 193-512,
 * 513+ tokens) the median pred/measured within 0.9-1.1.  The single-efficiency model of
 * the figure era (86.9% of peak, 87% of HBM, no fixed cost, no split-K) fails them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor_sim.h"
#include "pbtest.h"
#include "spec.h"

#define SAMPLE "tests/data/a100_gemm_sample.csv"
#define MEDIAN_MAX 0.08
#define P90_MAX 0.20

typedef struct { double M, K, N, us; } row;

static int load_rows(row **out) {
    FILE *f = fopen(SAMPLE, "r");
    if (!f) return -1;
    char line[256];
    int n = 0, cap = 0;
    row *r = NULL;
    while (fgets(line, sizeof line, f)) {
        row x;
        if (line[0] == '#' || sscanf(line, "%lf,%lf,%lf,%lf", &x.M, &x.K, &x.N, &x.us) != 4) continue;
        if (n == cap) r = realloc(r, (size_t)(cap = cap ? 2 * cap : 256) * sizeof *r);
        r[n++] = x;
    }
    fclose(f);
    *out = r;
    return n;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { N_BUCKETS = 4 };
static const double BUCKET_HI[N_BUCKETS] = {64, 192, 512, 1e9};   /* token-count buckets, as calibrate.py */

/* median and p90 of |pred / measured - 1| over the rows, and the median pred / measured
   per token-count bucket, for the given cost model */
static void residual(const pb_model *m, const pb_hw *hw, const pb_sim_cost *c, const row *r, int n, double *med,
                     double *p90, double bucket[N_BUCKETS]) {
    pb_sim_params p = pb_sim_params_default();
    pb_sim *s = NULL;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_ASSERT(pb_sim_create(m, hw, c, 1, &p, &s, &e) == PB_OK);
    double *err = malloc((size_t)n * sizeof *err), *ratio = malloc((size_t)n * sizeof *ratio);
    for (int i = 0; i < n; i++) {
        ratio[i] = pb_sim_gemm_time(s, r[i].M, r[i].K, r[i].N) / (r[i].us * 1e-6);
        err[i] = fabs(ratio[i] - 1);
    }
    qsort(err, (size_t)n, sizeof *err, cmp_d);
    *med = err[n / 2];
    *p90 = err[(9 * n) / 10];
    for (int k = 0; k < N_BUCKETS; k++) {
        int nb = 0;
        for (int i = 0; i < n; i++)
            if (r[i].M <= BUCKET_HI[k] && (k == 0 || r[i].M > BUCKET_HI[k - 1])) err[nb++] = ratio[i];
        qsort(err, (size_t)nb, sizeof *err, cmp_d);
        bucket[k] = nb ? err[nb / 2] : NAN;
    }
    free(err);
    free(ratio);
    pb_sim_destroy(s);
}

PB_TEST(c_gemm_model_matches_the_fit) {
    row *r = NULL;
    int n = load_rows(&r);
    PB_REQUIRE(n >= 150);
    pb_model m;
    pb_hw hw;
    pb_sim_cost c;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    const char *dir = pb_spec_dir();
    PB_REQUIRE(pb_model_load(dir, "opt-13b", &m, &e) == PB_OK && pb_hw_load(dir, "a100-80gb", &hw, &e) == PB_OK &&
               pb_sim_cost_load(dir, "a100-80gb", &c, &e) == PB_OK);
    double med, p90, bk[N_BUCKETS];
    residual(&m, &hw, &c, r, n, &med, &p90, bk);
    printf("  %d sampled A100 GEMMs: median |err| %.1f%%, p90 %.1f%%; median pred/measured at 1-64, 65-192, "
           "193-512, 513+ tokens: %.2f %.2f %.2f %.2f\n", n, 100 * med, 100 * p90, bk[0], bk[1], bk[2], bk[3]);
    PB_CHECK(med <= MEDIAN_MAX);
    PB_CHECK(p90 <= P90_MAX);
    for (int k = 0; k < N_BUCKETS; k++) PB_CHECK(bk[k] >= 0.9 && bk[k] <= 1.1);
    /* the figure-era parameters fail the same bounds (the check can fail) */
    pb_sim_cost old = c;
    old.gemm_flops_eff = 0.869;
    old.gemm_bw_eff = 0.87;
    old.gemm_fixed_s = 0;
    old.n_splits = 1;
    old.splitk[0] = 1;
    double om, op, ob[N_BUCKETS];
    residual(&m, &hw, &old, r, n, &om, &op, ob);
    printf("  the old single-efficiency model: median |err| %.1f%%, p90 %.1f%%; buckets %.2f %.2f %.2f %.2f\n",
           100 * om, 100 * op, ob[0], ob[1], ob[2], ob[3]);
    PB_CHECK(om > MEDIAN_MAX || ob[0] < 0.9 || ob[0] > 1.1 || ob[1] < 0.9 || ob[1] > 1.1);
    free(r);
}

PB_TEST_MAIN()
