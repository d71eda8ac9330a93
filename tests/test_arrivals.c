/* test_arrivals.c -- gamma arrivals and rate ramps (workloads/arrivals.h), by their laws.
 *
 * Fixed seeds; every bound comes from the distribution being tested, at about five
 * standard errors (or a Kolmogorov-Smirnov level of 1e-6), never from a recorded output:
 *   - gamma gaps: mean 1/rate (standard error CV/(rate sqrt N)), squared CV 1/burstiness
 *     (the sample variance's relative error sqrt((2 + 6/k)/N) for shape k), and the whole
 *     law by a KS test against the Gamma(k, 1/(k rate)) CDF; burstiness 1 is `exponential`;
 *   - ramps over a duration (linear, exponential; gamma, exponential and 10 ms poisson
 *     arrivals, up and down): the count in each of 8 windows against Lambda(b) - Lambda(a)
 *     (the renewal count's sd ~ CV sqrt(Lambda));
 *   - a ramp over num_requests (vLLM's rule): the time the gaps before requests of each
 *     tenth of the run take against the sum of their means 1/r(i/(num - 1));
 *   - the YAML keys (workload.burstiness, workload.ramp) and their cross-key errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrivals.h"
#include "config.h"
#include "pbtest.h"
#include "workload.h"

static double *gen(const pb_arrival_cfg *c, uint64_t seed, int64_t *n) {
    pb_rng r;
    pb_rng_seed(&r, seed, 1);
    double *t = NULL;
    char err[256] = "";
    if (pb_arrivals_generate(c, &r, NULL, 0, &t, n, err, sizeof err) != PB_OK) {
        fprintf(stderr, "  generate: %s\n", err);
        return NULL;
    }
    return t;
}

/* regularized lower incomplete gamma P(a, x): series below a + 1, continued fraction above */
static double gamma_p(double a, double x) {
    if (x <= 0) return 0;
    double lg = lgamma(a);
    if (x < a + 1) {
        double ap = a, sum = 1 / a, del = sum;
        for (int n = 0; n < 10000; n++) {
            ap += 1;
            del *= x / ap;
            sum += del;
            if (fabs(del) < fabs(sum) * 1e-15) break;
        }
        return sum * exp(-x + a * log(x) - lg);
    }
    double b = x + 1 - a, c = 1 / 1e-300, d = 1 / b, h = d;
    for (int i = 1; i < 10000; i++) {
        double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < 1e-300) d = 1e-300;
        c = b + an / c;
        if (fabs(c) < 1e-300) c = 1e-300;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-15) break;
    }
    return 1 - exp(-x + a * log(x) - lg) * h;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

PB_TEST(gamma_gaps_have_vllm_burstiness_law) {
    static const double B[] = {0.25, 0.5, 1, 4};
    const double rate = 4;
    const int64_t N = 60000;
    for (size_t k = 0; k < sizeof B / sizeof B[0]; k++) {
        pb_arrival_cfg c = {.kind = PB_ARRIVALS_GAMMA, .rate = rate, .num = N, .quantum_s = 0.01, .burstiness = B[k]};
        int64_t n;
        double *t = gen(&c, 100 + k, &n);
        PB_REQUIRE(t);
        PB_CHECK_EQ_INT(n, N);
        PB_CHECK(t[0] == 0);
        int64_t m = n - 1;
        double *g = malloc((size_t)m * sizeof *g), s = 0, ss = 0;
        for (int64_t i = 0; i < m; i++) {
            g[i] = t[i + 1] - t[i];
            PB_CHECK(g[i] >= 0);
            s += g[i];
        }
        double mean = s / m;
        for (int64_t i = 0; i < m; i++) ss += (g[i] - mean) * (g[i] - mean);
        double var = ss / (m - 1), cv2 = 1 / B[k];
        /* the mean: 1/rate within 5 standard errors (sd of a gap = CV / rate) */
        PB_CHECK_NEAR(mean, 1 / rate, 5 * sqrt(cv2) / rate / sqrt((double)m));
        /* the squared CV 1/burstiness: relative error of s^2 is sqrt((2 + 6/k)/m) for shape k */
        PB_CHECK_NEAR(var * rate * rate / cv2, 1.0, 5 * sqrt((2 + 6 * cv2) / (double)m));
        /* the law: KS against Gamma(shape B, scale 1/(rate B)) */
        qsort(g, (size_t)m, sizeof *g, cmp_d);
        double d = 0;
        for (int64_t i = 0; i < m; i++) {
            double F = gamma_p(B[k], g[i] * rate * B[k]);
            d = fmax(d, fmax(fabs(F - (double)i / m), fabs(F - (double)(i + 1) / m)));
        }
        PB_CHECK(d < sqrt(-log(1e-6 / 2) / (2.0 * m)));   /* KS at the 1e-6 level */
        free(g);
        free(t);
    }
}

PB_TEST(gamma_with_burstiness_one_is_exponential) {
    pb_arrival_cfg g = {.kind = PB_ARRIVALS_GAMMA, .rate = 3, .num = 20000, .quantum_s = 0.01, .burstiness = 1};
    pb_arrival_cfg e = g;
    e.kind = PB_ARRIVALS_EXPONENTIAL;
    int64_t ng, ne;
    double *tg = gen(&g, 7, &ng), *te = gen(&e, 7, &ne);
    PB_REQUIRE(tg && te);
    /* two samples of one law: two-sample KS on the gaps at the 1e-6 level */
    double *a = malloc((size_t)ng * sizeof *a), *b = malloc((size_t)ne * sizeof *b);
    for (int64_t i = 1; i < ng; i++) a[i - 1] = tg[i] - tg[i - 1];
    for (int64_t i = 1; i < ne; i++) b[i - 1] = te[i] - te[i - 1];
    int64_t na = ng - 1, nb = ne - 1, i = 0, j = 0;
    qsort(a, (size_t)na, sizeof *a, cmp_d);
    qsort(b, (size_t)nb, sizeof *b, cmp_d);
    double d = 0;
    while (i < na && j < nb) {
        if (a[i] <= b[j]) i++;
        else j++;
        d = fmax(d, fabs((double)i / na - (double)j / nb));
    }
    PB_CHECK(d < sqrt(-log(1e-6 / 2) / 2.0) * sqrt((double)(na + nb) / ((double)na * nb)));
    free(a);
    free(b);
    free(tg);
    free(te);
}

/* Lambda(t) of a ramp over [0, T] */
static double cum(const pb_arrival_cfg *c, double t, double T) {
    double r0 = c->ramp_start, r1 = c->ramp_end;
    if (c->ramp == PB_RAMP_LINEAR) return r0 * t + (r1 - r0) * t * t / (2 * T);
    return r0 * T / log(r1 / r0) * (pow(r1 / r0, t / T) - 1);
}

PB_TEST(ramps_over_a_duration_follow_the_integrated_rate) {
    const double T = 3000;
    struct { pb_arrival_kind kind; pb_ramp_kind ramp; double r0, r1, b; } CASES[] = {
        {PB_ARRIVALS_EXPONENTIAL, PB_RAMP_LINEAR, 1, 9, 1},
        {PB_ARRIVALS_EXPONENTIAL, PB_RAMP_LINEAR, 9, 0, 1},    /* down to 0 */
        {PB_ARRIVALS_GAMMA, PB_RAMP_LINEAR, 0.5, 6, 0.25},     /* bursty: CV 2 */
        {PB_ARRIVALS_GAMMA, PB_RAMP_EXPONENTIAL, 0.5, 8, 4},   /* regular: CV 0.5 */
        {PB_ARRIVALS_POISSON, PB_RAMP_EXPONENTIAL, 8, 1, 1},   /* 10 ms quanta, down */
        {PB_ARRIVALS_POISSON, PB_RAMP_LINEAR, 2, 7, 1},
    };
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        pb_arrival_cfg c = {.kind = CASES[k].kind, .duration_s = T, .quantum_s = 0.01, .burstiness = CASES[k].b,
                            .ramp = CASES[k].ramp, .ramp_start = CASES[k].r0, .ramp_end = CASES[k].r1};
        int64_t n;
        double *t = gen(&c, 40 + k, &n);
        PB_REQUIRE(t);
        double cv = c.kind == PB_ARRIVALS_GAMMA ? 1 / sqrt(c.burstiness) : 1;
        for (int64_t i = 1; i < n; i++) PB_CHECK(t[i] >= t[i - 1]);
        PB_CHECK(t[n - 1] < T);
        /* 8 windows: count vs Lambda, within 5 sd of the renewal count (CV sqrt(Lambda)) + 2 */
        int64_t i = 0;
        for (int w = 0; w < 8; w++) {
            double a = T * w / 8, b = T * (w + 1) / 8, want = cum(&c, b, T) - cum(&c, a, T);
            int64_t got = 0;
            while (i < n && t[i] < b) { got += t[i] >= a; i++; }
            if (fabs((double)got - want) > 5 * cv * sqrt(want) + 2)
                fprintf(stderr, "  case %zu window %d: %lld arrivals, expected %.1f\n", k, w, (long long)got, want);
            PB_CHECK(fabs((double)got - want) <= 5 * cv * sqrt(want) + 2);
        }
        PB_CHECK(fabs((double)n - cum(&c, T, T)) <= 5 * cv * sqrt(cum(&c, T, T)) + 2);
        free(t);
    }
}

PB_TEST(ramps_over_num_requests_take_vllms_rate_per_request) {
    const int64_t N = 40001;
    struct { pb_ramp_kind ramp; double r0, r1, b; } CASES[] = {
        {PB_RAMP_LINEAR, 1, 9, 1}, {PB_RAMP_EXPONENTIAL, 0.5, 16, 1}, {PB_RAMP_LINEAR, 8, 2, 0.5}};
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        pb_arrival_cfg c = {.kind = CASES[k].b == 1 ? PB_ARRIVALS_EXPONENTIAL : PB_ARRIVALS_GAMMA, .num = N,
                            .quantum_s = 0.01, .burstiness = CASES[k].b, .ramp = CASES[k].ramp,
                            .ramp_start = CASES[k].r0, .ramp_end = CASES[k].r1};
        int64_t n;
        double *t = gen(&c, 70 + k, &n);
        PB_REQUIRE(t);
        PB_CHECK_EQ_INT(n, N);
        PB_CHECK(t[0] == 0);
        /* each tenth of the requests: the gaps before them sum to sum 1/r(i/(N-1)), sd
           sqrt(sum CV^2/r^2) */
        double cv2 = 1 / c.burstiness;
        for (int d = 0; d < 10; d++) {
            int64_t lo = 1 + (N - 1) * d / 10, hi = 1 + (N - 1) * (d + 1) / 10;
            double want = 0, var = 0;
            for (int64_t i = lo; i < hi; i++) {
                double r = pb_arrival_rate_at(&c, (double)i / (double)(N - 1));
                want += 1 / r;
                var += cv2 / (r * r);
            }
            double got = t[hi - 1] - t[lo - 1];
            PB_CHECK(fabs(got - want) <= 5 * sqrt(var));
        }
        free(t);
    }
}

PB_TEST(ramp_and_gamma_bad_settings_are_errors) {
    char err[256];
    int64_t n;
    double *t;
    pb_rng r;
    pb_rng_seed(&r, 1, 1);
    pb_arrival_cfg bad[] = {
        {.kind = PB_ARRIVALS_GAMMA, .rate = 1, .num = 10, .quantum_s = 0.01, .burstiness = 0},
        {.kind = PB_ARRIVALS_EXPONENTIAL, .num = 10, .quantum_s = 0.01, .burstiness = 1, .ramp = PB_RAMP_EXPONENTIAL,
         .ramp_start = 0, .ramp_end = 5},
        {.kind = PB_ARRIVALS_POISSON, .num = 10, .quantum_s = 0.01, .burstiness = 1, .ramp = PB_RAMP_LINEAR,
         .ramp_start = 1, .ramp_end = 5},   /* poisson ramps need a duration */
        {.kind = PB_ARRIVALS_BURST, .num = 10, .quantum_s = 0.01, .burstiness = 1, .ramp = PB_RAMP_LINEAR,
         .ramp_start = 1, .ramp_end = 5},
        {.kind = PB_ARRIVALS_EXPONENTIAL, .duration_s = 10, .quantum_s = 0.01, .burstiness = 1,
         .ramp = PB_RAMP_LINEAR, .ramp_start = 0, .ramp_end = 0},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        err[0] = 0;
        PB_CHECK(pb_arrivals_generate(&bad[k], &r, NULL, 0, &t, &n, err, sizeof err) == PB_ERR_INVALID);
        PB_CHECK(err[0] != 0);
    }
}

/* the YAML: the keys reach the generator; misuse is an error at the key */
static pb_status wl(const char *yaml, pb_workload_cfg *c, pb_cfg_err *e) {
    pb_config *cf;
    pb_cfg_err_clear(e);
    if (pb_config_load_string("t.yaml", yaml, &cf, e)) return PB_ERR_INVALID;
    pb_status st = pb_workload_from_node(pb_node_get(pb_config_root(cf), "workload"), c, e);
    pb_config_destroy(cf);
    return st;
}

PB_TEST(yaml_keys_burstiness_and_ramp) {
    pb_workload_cfg c;
    pb_cfg_err e;
    PB_REQUIRE(wl("workload: {dataset: alpaca, arrivals: gamma, burstiness: 0.3, rate: 2, num_requests: 5}\n", &c, &e) ==
               PB_OK);
    PB_CHECK(c.arrivals.kind == PB_ARRIVALS_GAMMA && c.arrivals.burstiness == 0.3 && c.arrivals.rate == 2);
    PB_REQUIRE(wl("workload:\n  dataset: alpaca\n  arrivals: exponential\n  duration_s: 60\n"
                  "  ramp: {shape: exponential, start_rate: 1, end_rate: 4}\n", &c, &e) == PB_OK);
    PB_CHECK(c.arrivals.ramp == PB_RAMP_EXPONENTIAL && c.arrivals.ramp_start == 1 && c.arrivals.ramp_end == 4);
    pb_trace tr = {0};
    char err[256];
    PB_REQUIRE(pb_workload_generate(&c, 3, &tr, err, sizeof err) == PB_OK);
    PB_CHECK(tr.n > 60 && tr.n < 300);   /* Lambda(60) = 60 * 3 / ln 4 = 129.8; 5 sd = 57 */
    pb_trace_free(&tr);
    static const struct { const char *yaml, *where; } BAD[] = {
        {"workload: {dataset: alpaca, arrivals: poisson, burstiness: 0.5, rate: 2}\n", "workload.burstiness"},
        {"workload: {dataset: alpaca, arrivals: poisson, rate: 2, ramp: {shape: linear, start_rate: 1, end_rate: 2}}\n",
         "workload.rate"},
        {"workload: {dataset: alpaca, arrivals: replay, ramp: {shape: linear, start_rate: 1, end_rate: 2}}\n",
         "workload.ramp"},
        {"workload: {dataset: alpaca, arrivals: gamma, num_requests: 9, ramp: {shape: exponential, start_rate: 0, "
         "end_rate: 2}}\n", "workload.ramp"},
        {"workload: {dataset: alpaca, ramp: {shape: linear, start_rate: 1}}\n", "end_rate"},
        {"workload: {dataset: alpaca, arrivals: gamma, burstiness: 0, rate: 1}\n", "burstiness"},
    };
    for (size_t k = 0; k < sizeof BAD / sizeof BAD[0]; k++) {
        PB_CHECK(wl(BAD[k].yaml, &c, &e) == PB_ERR_INVALID);
        PB_CHECK_STR_CONTAINS(e.msg, BAD[k].where);
        PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:");
    }
}

PB_TEST_MAIN()
