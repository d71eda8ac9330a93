/* wquant_ref.c -- weight formats and the int4 dequant-GEMM reference (wquant.h). */
#include "wquant.h"

#include <math.h>
#include <string.h>

#include "kv_dtype.h"   /* pb_f32_to_f16: scales are stored as fp16 */

static const char *const NAMES[PB_WEIGHTS_COUNT] = {"fp16", "int8", "fp8", "int4-awq", "int4-gptq"};

const char *pb_weight_format_name(pb_weight_format f) {
    return (unsigned)f < PB_WEIGHTS_COUNT ? NAMES[f] : NULL;
}

int pb_weight_format_parse(const char *s, pb_weight_format *out) {
    for (int i = 0; s && i < PB_WEIGHTS_COUNT; i++)
        if (!strcmp(s, NAMES[i])) {
            *out = (pb_weight_format)i;
            return 0;
        }
    return -1;
}

bool pb_weight_format_is_int4(pb_weight_format f) { return f == PB_WEIGHTS_INT4_AWQ || f == PB_WEIGHTS_INT4_GPTQ; }

double pb_wq_matrix_bytes(pb_weight_format f, double K, double N, double dtype_bytes) {
    switch (f) {
    case PB_WEIGHTS_INT8:
    case PB_WEIGHTS_FP8: return K * N + 2.0 * N;
    case PB_WEIGHTS_INT4_AWQ:
    case PB_WEIGHTS_INT4_GPTQ: return K * N / 2.0 + ceil(K / PB_WQ_GROUP) * N * 2.5;
    default: return K * N * dtype_bytes;
    }
}

void pb_w4_quantize(const float *W, int32_t K, int32_t N, int32_t G, uint8_t *q, float *s, uint8_t *z) {
    for (int32_t g = 0; g < K / G; g++)
        for (int32_t n = 0; n < N; n++) {
            float lo = 0, hi = 0;
            for (int32_t k = g * G; k < (g + 1) * G; k++) {
                float w = W[(size_t)k * N + n];
                lo = w < lo ? w : lo;
                hi = w > hi ? w : hi;
            }
            float sc = hi > lo ? pb_f16_to_f32(pb_f32_to_f16((hi - lo) / 15.0f)) : 1.0f;
            float zf = rintf(-lo / sc);
            uint8_t zero = (uint8_t)(zf < 0 ? 0 : zf > 15 ? 15 : zf);
            s[(size_t)g * N + n] = sc;
            z[(size_t)g * N + n] = zero;
            for (int32_t k = g * G; k < (g + 1) * G; k++) {
                float c = rintf(W[(size_t)k * N + n] / sc) + zero;
                q[(size_t)k * N + n] = (uint8_t)(c < 0 ? 0 : c > 15 ? 15 : c);
            }
        }
}

void pb_w4_dequantize(const uint8_t *q, const float *s, const uint8_t *z, int32_t K, int32_t N, int32_t G,
                      float *W) {
    for (int32_t k = 0; k < K; k++)
        for (int32_t n = 0; n < N; n++) {
            size_t gi = (size_t)(k / G) * N + n;
            W[(size_t)k * N + n] = (float)((int)q[(size_t)k * N + n] - (int)z[gi]) * s[gi];
        }
}

/* AWQ's order of 8 columns in a word: slot i holds column AWQ_ORDER[i] */
static const int AWQ_ORDER[8] = {0, 2, 4, 6, 1, 3, 5, 7};

/* Pack a rows x N matrix of codes along N (8 columns per word) in AWQ's order or
   in plain order; add is added to each code before packing (GPTQ's zeros: -1). */
static void pack_along_n(const uint8_t *c, int32_t rows, int32_t N, bool awq, int add, uint32_t *out) {
    for (int32_t r = 0; r < rows; r++)
        for (int32_t w = 0; w < N / 8; w++) {
            uint32_t word = 0;
            for (int i = 0; i < 8; i++) {
                int col = 8 * w + (awq ? AWQ_ORDER[i] : i);
                word |= (uint32_t)((c[(size_t)r * N + col] + add) & 0xF) << (4 * i);
            }
            out[(size_t)r * (N / 8) + w] = word;
        }
}

static void unpack_along_n(const uint32_t *in, int32_t rows, int32_t N, bool awq, int add, uint8_t *c) {
    for (int32_t r = 0; r < rows; r++)
        for (int32_t w = 0; w < N / 8; w++) {
            uint32_t word = in[(size_t)r * (N / 8) + w];
            for (int i = 0; i < 8; i++) {
                int col = 8 * w + (awq ? AWQ_ORDER[i] : i);
                c[(size_t)r * N + col] = (uint8_t)((((word >> (4 * i)) & 0xF) + (unsigned)add) & 0xF);
            }
        }
}

void pb_w4_pack(pb_weight_format f, const uint8_t *q, const uint8_t *z, int32_t K, int32_t N, int32_t G,
                uint32_t *qweight, uint32_t *qzeros) {
    bool awq = f == PB_WEIGHTS_INT4_AWQ;
    if (awq) {
        pack_along_n(q, K, N, true, 0, qweight);
    } else {   /* GPTQ: 8 consecutive rows of one column per word */
        for (int32_t kw = 0; kw < K / 8; kw++)
            for (int32_t n = 0; n < N; n++) {
                uint32_t word = 0;
                for (int i = 0; i < 8; i++) word |= (uint32_t)(q[(size_t)(8 * kw + i) * N + n] & 0xF) << (4 * i);
                qweight[(size_t)kw * N + n] = word;
            }
    }
    pack_along_n(z, K / G, N, awq, awq ? 0 : -1, qzeros);
}

void pb_w4_unpack(pb_weight_format f, const uint32_t *qweight, const uint32_t *qzeros, int32_t K, int32_t N,
                  int32_t G, uint8_t *q, uint8_t *z) {
    bool awq = f == PB_WEIGHTS_INT4_AWQ;
    if (awq) {
        unpack_along_n(qweight, K, N, true, 0, q);
    } else {
        for (int32_t kw = 0; kw < K / 8; kw++)
            for (int32_t n = 0; n < N; n++) {
                uint32_t word = qweight[(size_t)kw * N + n];
                for (int i = 0; i < 8; i++) q[(size_t)(8 * kw + i) * N + n] = (uint8_t)((word >> (4 * i)) & 0xF);
            }
    }
    unpack_along_n(qzeros, K / G, N, awq, awq ? 0 : 1, z);
}

/* Code of row k, column n straight from the packed words. */
static int code_at(bool awq, const uint32_t *qweight, int32_t N, int32_t k, int32_t n) {
    if (awq) {
        static const int SLOT[8] = {0, 4, 1, 5, 2, 6, 3, 7};   /* inverse of AWQ_ORDER */
        return (int)((qweight[(size_t)k * (N / 8) + n / 8] >> (4 * SLOT[n % 8])) & 0xF);
    }
    return (int)((qweight[(size_t)(k / 8) * N + n] >> (4 * (k % 8))) & 0xF);
}

static int zero_at(bool awq, const uint32_t *qzeros, int32_t N, int32_t g, int32_t n) {
    if (awq) {
        static const int SLOT[8] = {0, 4, 1, 5, 2, 6, 3, 7};
        return (int)((qzeros[(size_t)g * (N / 8) + n / 8] >> (4 * SLOT[n % 8])) & 0xF);
    }
    return (int)(((qzeros[(size_t)g * (N / 8) + n / 8] >> (4 * (n % 8))) + 1) & 0xF);
}

int pb_w4_gemm_ref(pb_weight_format f, const float *A, int32_t M, const uint32_t *qweight, const float *s,
                   const uint32_t *qzeros, int32_t K, int32_t N, int32_t G, float *C) {
    if (!pb_weight_format_is_int4(f) || M < 0 || K < 1 || N < 8 || G < 8 || G % 8 || K % G || N % 8) return -1;
    bool awq = f == PB_WEIGHTS_INT4_AWQ;
    for (int32_t m = 0; m < M; m++)
        for (int32_t n = 0; n < N; n++) {
            float acc = 0;
            for (int32_t g = 0; g < K / G; g++) {
                int zero = zero_at(awq, qzeros, N, g, n);
                float part = 0;
                for (int32_t k = g * G; k < (g + 1) * G; k++)
                    part += A[(size_t)m * K + k] * (float)(code_at(awq, qweight, N, k, n) - zero);
                acc += s[(size_t)g * N + n] * part;
            }
            C[(size_t)m * N + n] = acc;
        }
    return 0;
}
