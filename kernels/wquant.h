/* wquant.h -- quantized weight formats of the linear layers (a system's `weights`
 * key) and the C reference of the int4 group-quantized dequant-GEMM.
 *
 * Formats.  Only the linear layers' weights (QKV, output projection, FFN) are
 * quantized; embeddings, the LM head, norms and biases keep the model's dtype (as
 * vLLM's AWQ / GPTQ / fp8 / int8 linear methods leave them).  A K x N weight
 * (K inputs, N outputs) takes pb_wq_matrix_bytes():
 *   fp16       K N dtype_bytes                     (the model's own dtype)
 *   int8       K N + 2 N                           one byte per weight, one fp16
 *                                                  scale per output channel
 *   fp8        K N + 2 N                           e4m3 weights, per-channel scale
 *   int4-awq   K N / 2 + ceil(K/128) N (2 + 0.5)   4-bit codes; per (group of 128
 *                                                  inputs, output) an fp16 scale and
 *                                                  a 4-bit zero point
 *   int4-gptq  the same bytes as int4-awq          (GPTQ v1 checkpoints store qzeros
 *                                                  too; without act-order: no g_idx)
 *
 * int4 group quantization (AWQ, Lin et al. 2024; GPTQ, Frantar et al. 2023: the
 * asymmetric uint4 scheme both checkpoints store).  For input group g (rows
 * k in [g G, (g+1) G), G = 128) and output column n:
 *     s = (max - min) / 15      (max, min over the group's weights, with 0 included
 *                                so that the range holds 0; s = 1 if the range is 0)
 *     z = round(-min / s)       in 0..15
 *     q = clamp(round(w / s) + z, 0, 15)
 *     w' = (q - z) s            the dequantized weight
 * s is stored as fp16 (rounded to nearest even), as both checkpoints do.
 *
 * Packing (8 codes in a uint32, code i in bits 4i..4i+3):
 *   GPTQ  qweight[K/8][N]:  word (k/8, n) holds rows 8(k/8) .. +7 of column n in
 *         order; qzeros[K/G][N/8] packs zeros along N, stored as z - 1 (GPTQ v1's
 *         offset, which the loader adds back);
 *   AWQ   qweight[K][N/8]:  word (k, n/8) holds columns 8(n/8) .. +7 of row k in the
 *         interleaved order 0 2 4 6 1 3 5 7 (AutoAWQ's pack order); qzeros[K/G][N/8]
 *         the same way, stored as z.
 * K must be a multiple of G (and so of 8), N a multiple of 8.
 *
 * The reference dequant-GEMM, C[M][N] = A[M][K] x W'[K][N] in fp32, unpacks the
 * codes group by group as a fused kernel does:
 *     C[m][n] = sum_g s_gn * sum_{k in g} A[m][k] (q_kn - z_gn)
 * (the integer offsets summed first, the scale applied once per group), which
 * differs from dequantize-then-GEMM only by fp32 rounding: tests/test_wquant.c
 * checks it against pb_w4_dequantize + a plain fp32 GEMM with a bound derived
 * from the summation lengths.
 *
 * C11, no allocation in the GEMM. */
#ifndef PB_WQUANT_H
#define PB_WQUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PB_WEIGHTS_FP16 = 0, PB_WEIGHTS_INT8 = 1, PB_WEIGHTS_FP8 = 2,
    PB_WEIGHTS_INT4_AWQ = 3, PB_WEIGHTS_INT4_GPTQ = 4
} pb_weight_format;
#define PB_WEIGHTS_COUNT 5
#define PB_WEIGHTS_CHOICES "fp16|int8|fp8|int4-awq|int4-gptq"
#define PB_WQ_GROUP 128            /* int4 group size along K */

/* "fp16", "int8", "fp8", "int4-awq", "int4-gptq"; NULL for an invalid value */
const char *pb_weight_format_name(pb_weight_format f);
/* parse the names above; returns 0 ok, -1 unknown */
int pb_weight_format_parse(const char *s, pb_weight_format *out);
/* Bytes of a K x N linear weight in format f (the table above); dtype_bytes is the
 * model's dtype (fp16). */
double pb_wq_matrix_bytes(pb_weight_format f, double K, double N, double dtype_bytes);
/* 1 for the int4 formats */
bool pb_weight_format_is_int4(pb_weight_format f);

/* Quantize W[K][N] (row-major fp32) into int4 codes q[K][N] (one code per byte,
 * unpacked), fp16-rounded scales s[K/G][N] and zeros z[K/G][N] (the rule above). */
void pb_w4_quantize(const float *W, int32_t K, int32_t N, int32_t G, uint8_t *q, float *s, uint8_t *z);
/* W'[K][N] = (q - z) s */
void pb_w4_dequantize(const uint8_t *q, const float *s, const uint8_t *z, int32_t K, int32_t N, int32_t G,
                      float *W);
/* Pack codes and zeros in format f (PB_WEIGHTS_INT4_AWQ or _GPTQ): qweight has
 * K N / 8 words, qzeros (K/G) N / 8 words.  Unpack inverts it. */
void pb_w4_pack(pb_weight_format f, const uint8_t *q, const uint8_t *z, int32_t K, int32_t N, int32_t G,
                uint32_t *qweight, uint32_t *qzeros);
void pb_w4_unpack(pb_weight_format f, const uint32_t *qweight, const uint32_t *qzeros, int32_t K, int32_t N,
                  int32_t G, uint8_t *q, uint8_t *z);
/* C[M][N] = A[M][K] x dequant(qweight, s, qzeros) from the packed format f, fused
 * per group (above).  Returns 0, or -1 for a shape the format cannot hold. */
int pb_w4_gemm_ref(pb_weight_format f, const float *A, int32_t M, const uint32_t *qweight, const float *s,
                   const uint32_t *qzeros, int32_t K, int32_t N, int32_t G, float *C);

#ifdef __cplusplus
}
#endif
#endif /* PB_WQUANT_H */
