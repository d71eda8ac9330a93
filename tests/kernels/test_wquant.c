/* test_wquant.c -- the weight formats of wquant.h and the C reference of the int4
 * group-quantized dequant-GEMM: format names and bytes, the quantizer's error
 * (every weight within half a step of its dequantized value, plus the fp16
 * rounding of the scale at a clamped end: 15 s 2^-11), AWQ's and GPTQ's
 * packings (known words, round trips), and pb_w4_gemm_ref from both packings
 * against fp32 dequantize-then-GEMM, within the summation bound
 * 2 (K + G) u sum_k |A_mk W'_kn| (u = 2^-24), at M = 1, 3, 17, K = 128, 384,
 * N = 8, 40; reading one packing as the other must miss it.
 *   ctest --test-dir build/cpu -R test_wquant */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pbtest.h"
#include "rng.h"
#include "wquant.h"

PB_TEST(format_names_and_bytes) {
    for (int i = 0; i < PB_WEIGHTS_COUNT; i++) {
        pb_weight_format f;
        PB_REQUIRE(pb_weight_format_name((pb_weight_format)i) != NULL);
        PB_CHECK(pb_weight_format_parse(pb_weight_format_name((pb_weight_format)i), &f) == 0 && (int)f == i);
    }
    pb_weight_format f;
    PB_CHECK(pb_weight_format_parse("int4", &f) == -1);
    PB_CHECK(pb_weight_format_name((pb_weight_format)PB_WEIGHTS_COUNT) == NULL);
    /* LLaMA-13B's q_proj, 5120 x 5120 */
    PB_CHECK_NEAR(pb_wq_matrix_bytes(PB_WEIGHTS_FP16, 5120, 5120, 2), 52428800, 0);
    PB_CHECK_NEAR(pb_wq_matrix_bytes(PB_WEIGHTS_INT8, 5120, 5120, 2), 26214400 + 10240, 0);
    PB_CHECK_NEAR(pb_wq_matrix_bytes(PB_WEIGHTS_FP8, 5120, 5120, 2), 26214400 + 10240, 0);
    PB_CHECK_NEAR(pb_wq_matrix_bytes(PB_WEIGHTS_INT4_AWQ, 5120, 5120, 2), 13107200 + 40 * 5120 * 2.5, 0);
    PB_CHECK_NEAR(pb_wq_matrix_bytes(PB_WEIGHTS_INT4_GPTQ, 5120, 5120, 2), 13107200 + 40 * 5120 * 2.5, 0);
    PB_CHECK(pb_weight_format_is_int4(PB_WEIGHTS_INT4_AWQ) && pb_weight_format_is_int4(PB_WEIGHTS_INT4_GPTQ));
    PB_CHECK(!pb_weight_format_is_int4(PB_WEIGHTS_INT8) && !pb_weight_format_is_int4(PB_WEIGHTS_FP16));
}

PB_TEST(packing_known_words) {
    enum { K = 128, N = 8, G = 128 };
    uint8_t q[K * N], z[N], q2[K * N], z2[N];
    memset(q, 0, sizeof q);
    for (int n = 0; n < N; n++) { q[n] = (uint8_t)n; z[n] = (uint8_t)(n + 1); }   /* row 0: 0..7 */
    for (int k = 0; k < 8; k++) q[k * N + 0] = (uint8_t)k;                          /* column 0: 0..7 */
    uint32_t qw[K * N / 8], qz[N / 8];
    pb_w4_pack(PB_WEIGHTS_INT4_AWQ, q, z, K, N, G, qw, qz);
    PB_CHECK_EQ_INT(qw[0], 0x75316420u);   /* row 0 in AWQ's order 0 2 4 6 1 3 5 7 */
    PB_CHECK_EQ_INT(qz[0], 0x86427531u);   /* zeros 1..8, same order             */
    pb_w4_unpack(PB_WEIGHTS_INT4_AWQ, qw, qz, K, N, G, q2, z2);
    PB_CHECK(!memcmp(q, q2, sizeof q) && !memcmp(z, z2, sizeof z));
    pb_w4_pack(PB_WEIGHTS_INT4_GPTQ, q, z, K, N, G, qw, qz);
    PB_CHECK_EQ_INT(qw[0], 0x76543210u);   /* column 0, rows 0..7                 */
    PB_CHECK_EQ_INT(qz[0], 0x76543210u);   /* zeros 1..8 stored as z - 1          */
    pb_w4_unpack(PB_WEIGHTS_INT4_GPTQ, qw, qz, K, N, G, q2, z2);
    PB_CHECK(!memcmp(q, q2, sizeof q) && !memcmp(z, z2, sizeof z));
}

/* one case: quantize a random W, check the quantizer, the GEMM from both packings */
static void gemm_case(int32_t M, int32_t K, int32_t N, uint64_t seed) {
    const int32_t G = PB_WQ_GROUP;
    pb_rng r;
    pb_rng_seed(&r, seed, 35);
    float *W = malloc(sizeof(float) * (size_t)K * N), *Wd = malloc(sizeof(float) * (size_t)K * N);
    float *A = malloc(sizeof(float) * (size_t)M * K), *s = malloc(sizeof(float) * (size_t)(K / G) * N);
    float *C = malloc(sizeof(float) * (size_t)M * N), *R = malloc(sizeof(float) * (size_t)M * N);
    double *bound = malloc(sizeof(double) * (size_t)M * N);
    uint8_t *q = malloc((size_t)K * N), *z = malloc((size_t)(K / G) * N);
    uint32_t *qw = malloc(sizeof(uint32_t) * (size_t)K * N / 8), *qz = malloc(sizeof(uint32_t) * (size_t)(K / G) * N / 8);
    for (int64_t i = 0; i < (int64_t)K * N; i++) W[i] = (float)(0.05 * pb_rng_normal(&r) + (i % 7 == 0 ? 0.02 : 0));
    for (int64_t i = 0; i < (int64_t)M * K; i++) A[i] = (float)pb_rng_normal(&r);
    pb_w4_quantize(W, K, N, G, q, s, z);
    pb_w4_dequantize(q, s, z, K, N, G, Wd);
    int worst_q = 0;
    for (int64_t i = 0; i < (int64_t)K * N; i++) {
        float step = s[(size_t)(i / N / G) * N + i % N];
        if (q[i] > 15 || fabsf(W[i] - Wd[i]) > step * (0.5f + 15 * 0x1.0p-11f)) worst_q++;
    }
    PB_CHECK_EQ_INT(worst_q, 0);
    /* fp32 dequantize-then-GEMM, and the bound on the two summation orders */
    const double u = 0x1.0p-24;
    for (int32_t m = 0; m < M; m++)
        for (int32_t n = 0; n < N; n++) {
            float acc = 0;
            double mag = 0;
            for (int32_t k = 0; k < K; k++) {
                acc += A[(size_t)m * K + k] * Wd[(size_t)k * N + n];
                mag += fabs((double)A[(size_t)m * K + k] * Wd[(size_t)k * N + n]);
            }
            R[(size_t)m * N + n] = acc;
            bound[(size_t)m * N + n] = 2.0 * (K + G) * u * mag + 1e-30;
        }
    for (int fi = 0; fi < 2; fi++) {
        pb_weight_format f = fi ? PB_WEIGHTS_INT4_GPTQ : PB_WEIGHTS_INT4_AWQ;
        pb_w4_pack(f, q, z, K, N, G, qw, qz);
        PB_REQUIRE(pb_w4_gemm_ref(f, A, M, qw, s, qz, K, N, G, C) == 0);
        int over = 0;
        for (int64_t i = 0; i < (int64_t)M * N; i++) over += fabs((double)C[i] - R[i]) > bound[i];
        PB_CHECK_EQ_INT(over, 0);
        /* the same words read as the other packing are another matrix */
        pb_weight_format other = fi ? PB_WEIGHTS_INT4_AWQ : PB_WEIGHTS_INT4_GPTQ;
        PB_REQUIRE(pb_w4_gemm_ref(other, A, M, qw, s, qz, K, N, G, C) == 0);
        over = 0;
        for (int64_t i = 0; i < (int64_t)M * N; i++) over += fabs((double)C[i] - R[i]) > bound[i];
        PB_CHECK(over > M * N / 2);
    }
    PB_CHECK(pb_w4_gemm_ref(PB_WEIGHTS_INT8, A, M, qw, s, qz, K, N, G, C) == -1);
    PB_CHECK(pb_w4_gemm_ref(PB_WEIGHTS_INT4_AWQ, A, M, qw, s, qz, K + 8, N, G, C) == -1);
    free(W); free(Wd); free(A); free(s); free(C); free(R); free(bound); free(q); free(z); free(qw); free(qz);
}

PB_TEST(dequant_gemm_matches_dequantize_then_gemm) {
    const int32_t Ms[] = {1, 3, 17}, Ks[] = {128, 384}, Ns[] = {8, 40};
    uint64_t seed = 1;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 2; c++) gemm_case(Ms[a], Ks[b], Ns[c], seed++);
}

PB_TEST(constant_group_and_zero_range) {
    /* a group of equal weights (range 0 with 0 included: s = w / 15 or 1) and an
       all-zero group dequantize exactly */
    enum { K = 128, N = 8 };
    float W[K * N], Wd[K * N], s[N];
    uint8_t q[K * N], z[N];
    for (int i = 0; i < K * N; i++) W[i] = (i % N) == 0 ? 0.0f : (i % N) == 1 ? 0.75f : -0.5f;
    pb_w4_quantize(W, K, N, PB_WQ_GROUP, q, s, z);
    pb_w4_dequantize(q, s, z, K, N, PB_WQ_GROUP, Wd);
    for (int i = 0; i < K * N; i++) PB_CHECK_NEAR(Wd[i], W[i], 1e-3);
    PB_CHECK_NEAR(s[0], 1.0, 0);
}

int main(void) { return pb_test_main(); }
