/* test_layers.c -- CPU tests of the decoder-layer C references (kernels/layers.h).
 *
 *   cmake --build build && (cd build && ctest -R test_layers --output-on-failure)
 *
 * Each reference is checked against an independent double-precision computation or
 * a mathematical property (norm statistics, rotary relative-position invariance,
 * softmax normalisation, empirical sampling frequencies), on awkward shapes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "pbtest.h"
#include "rng.h"

static float *randv_(pb_rng *r, size_t n, float scale) {
    float *v = pb_xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) v[i] = (float)(scale * (2.0 * pb_rng_uniform(r) - 1.0));
    return v;
}

/* ---- GEMM ---- */

PB_TEST(gemm_matches_double_on_awkward_shapes) {
    static const int32_t shapes[][3] = {{1, 1, 1}, {1, 17, 64}, {12, 33, 7}, {17, 5, 129}};
    pb_rng r;
    pb_rng_seed(&r, 1, 0);
    for (size_t s = 0; s < PB_ARRAY_LEN(shapes); s++) {
        int32_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *in = randv_(&r, (size_t)M * K, 1.0f), *w = randv_(&r, (size_t)N * K, 1.0f);
        float *b = randv_(&r, (size_t)N, 1.0f), *out = pb_xmalloc((size_t)M * N * sizeof(float));
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            pb_gemm_ref(out, in, w, with_bias ? b : NULL, M, N, K);
            double maxerr = 0;
            for (int32_t m = 0; m < M; m++)
                for (int32_t n = 0; n < N; n++) {
                    double acc = with_bias ? b[n] : 0.0;
                    for (int32_t k = 0; k < K; k++) acc += (double)in[m * K + k] * w[n * K + k];
                    maxerr = fmax(maxerr, fabs(acc - out[m * N + n]) / (1.0 + fabs(acc)));
                }
            PB_CHECK(maxerr < 1e-5);
        }
        free(in); free(w); free(b); free(out);
    }
}

PB_TEST(gemm_row_results_do_not_depend_on_the_batch) {
    pb_rng r;
    pb_rng_seed(&r, 2, 0);
    int32_t M = 9, N = 31, K = 77;
    float *in = randv_(&r, (size_t)M * K, 1.0f), *w = randv_(&r, (size_t)N * K, 1.0f);
    float *all = pb_xmalloc((size_t)M * N * sizeof(float)), *one = pb_xmalloc((size_t)N * sizeof(float));
    pb_gemm_ref(all, in, w, NULL, M, N, K);
    for (int32_t m = 0; m < M; m++) {
        pb_gemm_ref(one, in + (size_t)m * K, w, NULL, 1, N, K);
        PB_CHECK(memcmp(one, all + (size_t)m * N, (size_t)N * sizeof(float)) == 0);
    }
    free(in); free(w); free(all); free(one);
}

PB_TEST(bias_act_adds_bias_and_clamps) {
    float x[6] = {-1, 0.5f, 2, -3, 0, 1};
    float b[3] = {0.5f, -1, 1};
    pb_bias_act_ref(x, b, 2, 3, 1);
    float want[6] = {0, 0, 3, 0, 0, 2};
    for (int i = 0; i < 6; i++) PB_CHECK_NEAR(x[i], want[i], 0);
    float y[3] = {-1, 2, -3};
    pb_bias_act_ref(y, NULL, 1, 3, 0);
    PB_CHECK_NEAR(y[0], -1, 0);
    PB_CHECK_NEAR(y[2], -3, 0);
}

/* ---- norms ---- */

PB_TEST(layernorm_normalises_rows_then_scales) {
    pb_rng r;
    pb_rng_seed(&r, 3, 0);
    int32_t M = 5, N = 97;
    float *in = randv_(&r, (size_t)M * N, 4.0f), *g = randv_(&r, N, 1.0f), *b = randv_(&r, N, 1.0f);
    for (int32_t i = 0; i < M * N; i++) in[i] += 3.0f;   /* non-zero mean */
    float *out = pb_xmalloc((size_t)M * N * sizeof(float));
    pb_layernorm_ref(out, in, g, b, M, N, 1e-5f);
    for (int32_t m = 0; m < M; m++) {
        double mean = 0, var = 0;
        for (int32_t n = 0; n < N; n++) mean += in[m * N + n];
        mean /= N;
        for (int32_t n = 0; n < N; n++) var += pow(in[m * N + n] - mean, 2);
        var /= N;
        for (int32_t n = 0; n < N; n++) {
            double want = (in[m * N + n] - mean) / sqrt(var + 1e-5) * g[n] + b[n];
            PB_CHECK_NEAR(out[m * N + n], want, 1e-4 * (1 + fabs(want)));
        }
    }
    free(in); free(g); free(b); free(out);
}

PB_TEST(rmsnorm_gives_unit_rms_with_unit_gain) {
    pb_rng r;
    pb_rng_seed(&r, 4, 0);
    int32_t M = 3, N = 64;
    float *in = randv_(&r, (size_t)M * N, 10.0f), *g = pb_xmalloc(N * sizeof(float));
    pb_fill_ref(g, N, 1.0f);
    float *out = pb_xmalloc((size_t)M * N * sizeof(float));
    pb_rmsnorm_ref(out, in, g, M, N, 1e-6f);
    for (int32_t m = 0; m < M; m++) {
        double ss = 0;
        for (int32_t n = 0; n < N; n++) ss += (double)out[m * N + n] * out[m * N + n];
        PB_CHECK_NEAR(sqrt(ss / N), 1.0, 1e-4);
        /* direction preserved */
        PB_CHECK(out[m * N] * in[m * N] >= 0);
    }
    free(in); free(g); free(out);
}

/* ---- activations ---- */

PB_TEST(silu_mul_matches_formula) {
    float gu[2 * 2 * 3] = {-2, 0, 3, 1, 2, -1, /* row 1 */ 0.5f, -0.5f, 10, 2, 2, 2};
    float out[6];
    pb_silu_mul_ref(out, gu, 2, 3);
    for (int m = 0; m < 2; m++)
        for (int f = 0; f < 3; f++) {
            double g = gu[m * 6 + f], u = gu[m * 6 + 3 + f];
            PB_CHECK_NEAR(out[m * 3 + f], g / (1 + exp(-g)) * u, 1e-6);
        }
}

/* ---- rotary ---- */

PB_TEST(rope_is_identity_at_zero_and_relative_in_position) {
    pb_rng r;
    pb_rng_seed(&r, 5, 0);
    int32_t D = 16, nq = 2, nk = 1, stride = (nq + 2 * nk) * D;
    float *base = randv_(&r, (size_t)stride, 1.0f);
    /* position 0 leaves the vector unchanged */
    float *a = pb_xmalloc((size_t)stride * sizeof(float));
    memcpy(a, base, (size_t)stride * sizeof(float));
    int32_t pos0 = 0;
    pb_rope_ref(a, stride, &pos0, 1, nq, nk, D, 10000.0f);
    PB_CHECK(memcmp(a, base, (size_t)stride * sizeof(float)) == 0);
    /* q(m)·k(n) depends only on m - n; v (after q and k heads) untouched */
    double dots[2];
    int32_t pm[2][2] = {{7, 3}, {104, 100}};
    for (int c = 0; c < 2; c++) {
        float *rq = pb_xmalloc((size_t)stride * sizeof(float)), *rk = pb_xmalloc((size_t)stride * sizeof(float));
        memcpy(rq, base, (size_t)stride * sizeof(float));
        memcpy(rk, base, (size_t)stride * sizeof(float));
        pb_rope_ref(rq, stride, &pm[c][0], 1, nq, nk, D, 10000.0f);
        pb_rope_ref(rk, stride, &pm[c][1], 1, nq, nk, D, 10000.0f);
        double d = 0;
        for (int32_t i = 0; i < D; i++) d += (double)rq[i] * rk[nq * D + i];
        dots[c] = d;
        PB_CHECK(memcmp(rq + (nq + nk) * D, base + (nq + nk) * D, (size_t)nk * D * sizeof(float)) == 0);
        double n0 = 0, n1 = 0;   /* rotation preserves the norm of each head */
        for (int32_t i = 0; i < D; i++) { n0 += base[i] * base[i]; n1 += rq[i] * rq[i]; }
        PB_CHECK_NEAR(n0, n1, 1e-4);
        free(rq); free(rk);
    }
    PB_CHECK_NEAR(dots[0], dots[1], 1e-3);
    free(base); free(a);
}

/* ---- embedding, residual, gather ---- */

PB_TEST(embed_adds_learned_positions_with_offset) {
    int32_t V = 5, h = 3, P = 8;
    float wte[15], wpe[24];
    for (int i = 0; i < 15; i++) wte[i] = (float)i;
    for (int i = 0; i < 24; i++) wpe[i] = 100.0f * (float)i;
    int32_t tok[2] = {4, 1}, pos[2] = {0, 3};
    float out[6];
    pb_embed_ref(out, wte, tok, wpe, pos, 2, 2, h);
    PB_CHECK_NEAR(out[0], 12 + 100 * 6, 0);   /* token 4 row 12.., position 0+2 row 6.. */
    PB_CHECK_NEAR(out[5], 5 + 100 * 17, 0);   /* token 1 elem 2 = 5, position 5 elem 2 = 17 */
    pb_embed_ref(out, wte, tok, NULL, pos, 0, 2, h);
    PB_CHECK_NEAR(out[3], 3, 0);
    (void)V; (void)P;
}

PB_TEST(add_and_gather_rows) {
    float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
    pb_add_ref(x, y, 4);
    PB_CHECK_NEAR(x[3], 44, 0);
    float in[6] = {0, 1, 2, 3, 4, 5}, out[4];
    int32_t rows[2] = {2, 0};
    pb_gather_rows_ref(out, in, rows, 2, 2);
    PB_CHECK_NEAR(out[0], 4, 0);
    PB_CHECK_NEAR(out[3], 1, 0);
}

/* ---- weights ---- */

PB_TEST(weight_init_slices_equal_the_full_tensor) {
    int32_t R = 12, C = 10;
    float *full = pb_xmalloc((size_t)R * C * sizeof(float));
    pb_weight_init_ref(full, R, C, 42, 7, 0, 0, C, 0.5f);
    double mean = 0;
    for (int32_t i = 0; i < R * C; i++) {
        PB_CHECK(full[i] > -0.5f && full[i] < 0.5f);
        mean += full[i];
    }
    PB_CHECK(fabs(mean / (R * C)) < 0.1);
    float slice[3 * 4];
    pb_weight_init_ref(slice, 3, 4, 42, 7, 5, 6, C, 0.5f);   /* rows 5..7, cols 6..9 */
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++) PB_CHECK(slice[r * 4 + c] == full[(5 + r) * C + 6 + c]);
    float other[12];
    pb_weight_init_ref(other, 3, 4, 42, 8, 5, 6, C, 0.5f);   /* another tensor differs */
    PB_CHECK(memcmp(other, slice, sizeof slice) != 0);
    pb_weight_init_ref(other, 3, 4, 43, 7, 5, 6, C, 0.5f);   /* another seed differs */
    PB_CHECK(memcmp(other, slice, sizeof slice) != 0);
    free(full);
}

PB_TEST(hash_uniform_is_uniform_and_in_range) {
    int bins[10] = {0};
    int n = 100000;
    for (int i = 0; i < n; i++) {
        float u = pb_hash_uniform(9, 3, (uint64_t)i);
        PB_REQUIRE(u > 0.0f && u < 1.0f);
        bins[(int)(u * 10)]++;
    }
    double chi2 = 0;
    for (int b = 0; b < 10; b++) chi2 += pow(bins[b] - n / 10.0, 2) / (n / 10.0);
    PB_CHECK(chi2 < 30);   /* 9 dof: p < 0.0005 */
}

/* ---- candidates ---- */

PB_TEST(greedy_candidates_are_the_top_logits_with_logprobs) {
    pb_rng r;
    pb_rng_seed(&r, 6, 0);
    int32_t S = 3, V = 1000, n = 5;
    float *z = randv_(&r, (size_t)S * V, 5.0f);
    z[V + 17] = z[V + 18] = 100.0f;     /* a tie in row 1: lower id first */
    int32_t tok[15], nout[3];
    float lp[15];
    pb_sample_params sp = {0.0f, 1.0f};
    PB_REQUIRE(pb_candidates_ref(z, S, V, n, &sp, NULL, tok, lp, nout) == PB_OK);
    for (int32_t s = 0; s < S; s++) {
        PB_CHECK_EQ_INT(nout[s], n);
        const float *row = z + (size_t)s * V;
        double m = -1e30, sum = 0;
        for (int32_t i = 0; i < V; i++) m = fmax(m, row[i]);
        for (int32_t i = 0; i < V; i++) sum += exp(row[i] - m);
        for (int32_t k = 0; k < n; k++) {
            int32_t t = tok[s * n + k];
            int32_t greater = 0;
            for (int32_t i = 0; i < V; i++) greater += row[i] > row[t];
            PB_CHECK(greater <= k);
            PB_CHECK_NEAR(lp[s * n + k], row[t] - m - log(sum), 1e-4);
            if (k) PB_CHECK(lp[s * n + k] <= lp[s * n + k - 1]);
        }
    }
    PB_CHECK_EQ_INT(tok[n + 0], 17);
    PB_CHECK_EQ_INT(tok[n + 1], 18);
    free(z);
}

PB_TEST(sampling_frequencies_follow_the_tempered_softmax) {
    int32_t V = 6;
    float z[6] = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, -3.0f};
    pb_sample_params sp = {0.7f, 1.0f};
    double p[6], sum = 0;
    for (int i = 0; i < V; i++) sum += (p[i] = exp(z[i] / 0.7));
    int counts[6] = {0};
    int n = 40000;
    for (int k = 0; k < n; k++) {
        uint64_t key = pb_hash_mix((uint64_t)k + 12345);
        int32_t tok, nout;
        float lp;
        PB_REQUIRE(pb_candidates_ref(z, 1, V, 1, &sp, &key, &tok, &lp, &nout) == PB_OK);
        PB_REQUIRE(tok >= 0 && tok < V);
        counts[tok]++;
        PB_CHECK_NEAR(lp, log(p[tok] / sum), 1e-5);
    }
    double chi2 = 0;
    for (int i = 0; i < V; i++) chi2 += pow(counts[i] - n * p[i] / sum, 2) / (n * p[i] / sum);
    PB_CHECK(chi2 < 25);   /* 5 dof */
}

PB_TEST(top_p_keeps_the_nucleus_and_samples_without_replacement) {
    int32_t V = 8;
    /* probabilities ~ 0.5, 0.25, 0.125, ... : top_p 0.7 keeps exactly 2 tokens */
    float z[8];
    for (int i = 0; i < V; i++) z[i] = -(float)i * logf(2.0f);
    pb_sample_params sp = {1.0f, 0.7f};
    int seen[8] = {0};
    for (int k = 0; k < 2000; k++) {
        uint64_t key = (uint64_t)k * 7919u;
        int32_t tok[4], nout;
        float lp[4];
        PB_REQUIRE(pb_candidates_ref(z, 1, V, 4, &sp, &key, tok, lp, &nout) == PB_OK);
        PB_CHECK_EQ_INT(nout, 2);
        PB_CHECK(tok[0] != tok[1]);
        PB_CHECK(tok[2] == -1);
        seen[tok[0]]++;
    }
    PB_CHECK(seen[0] > 0 && seen[1] > 0);
    for (int i = 2; i < V; i++) PB_CHECK_EQ_INT(seen[i], 0);
    /* same key, same draw; different keys differ somewhere */
    uint64_t k1 = 99;
    int32_t a, b, n1;
    float l1;
    pb_sample_params sp2 = {1.0f, 1.0f};
    pb_candidates_ref(z, 1, V, 1, &sp2, &k1, &a, &l1, &n1);
    pb_candidates_ref(z, 1, V, 1, &sp2, &k1, &b, &l1, &n1);
    PB_CHECK_EQ_INT(a, b);
}

PB_TEST(candidates_reject_bad_arguments) {
    float z[4] = {0};
    int32_t t[20], n[1];
    float lp[20];
    pb_sample_params g = {0.0f, 1.0f}, s = {1.0f, 0.0f};
    uint64_t key = 1;
    PB_CHECK(pb_candidates_ref(z, 1, 4, 0, &g, NULL, t, lp, n) == PB_ERR_INVALID);
    PB_CHECK(pb_candidates_ref(z, 1, 4, PB_LAYERS_MAX_TOP + 1, &g, NULL, t, lp, n) == PB_ERR_INVALID);
    PB_CHECK(pb_candidates_ref(z, 1, 4, 1, &s, &key, t, lp, n) == PB_ERR_INVALID);  /* top_p 0 */
    s.top_p = 1.0f;
    PB_CHECK(pb_candidates_ref(z, 1, 4, 1, &s, NULL, t, lp, n) == PB_ERR_INVALID);  /* no keys */
}

PB_TEST_MAIN()
