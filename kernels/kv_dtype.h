/* kv_dtype.h -- element types of the attention / KV-cache kernels, the KV-cache
 * formats, and host-side fp16 / bf16 / fp8 <-> fp32 conversion, shared by the C
 * references, the tests and the CUDA launchers.
 *
 * The C references take `void *` tensors plus a pb_kv_dtype and compute in fp32,
 * so one reference covers every element type; the CPU tiny model uses fp32.
 * x (the K-cache chunk width) is 16 bytes / element: 4 for fp32, 8 for fp16/bf16,
 * 16 for fp8 (vLLM: x = 16 // cache element size).
 *
 * FP8 KV cache (vLLM's kv_cache_dtype and kv_scale; semantics of vLLM v0.5.0
 * csrc/quantization/fp8/nvidia/quant_utils.cuh scaled_convert and
 * csrc/cache_kernels.cu reshape_and_cache): activations keep their dtype (fp16,
 * bf16, fp32) and the cache stores
 *     c = fp8(x / kv_scale)       round to nearest even, SATURATING: a finite value
 *                                 beyond the largest finite fp8 becomes +-max, and
 *                                 so does +-Inf (CUDA's __NV_SATFINITE); NaN becomes
 *                                 the format's NaN 0x7f (sign dropped)
 *     x' = float(c) * kv_scale    (exact: every fp8 value is a float)
 * one scale per tensor (all layers, K and V).  Formats (OCP FP8, as CUDA's
 * __nv_fp8_e4m3 / __nv_fp8_e5m2):
 *     e4m3: 4 exponent bits (bias 7), 3 mantissa bits; no Inf; NaN = S.1111.111;
 *           max finite 448, min normal 2^-6, min subnormal 2^-9;
 *           unit roundoff u = 2^-4 (relative error of a normal value <= 6.25%)
 *     e5m2: 5 exponent bits (bias 15), 2 mantissa bits; Inf = S.11111.00 (never
 *           produced by the saturating conversion), NaN = S.11111.xx (xx != 0);
 *           max finite 57344, min normal 2^-14, min subnormal 2^-16; u = 2^-3
 *     below the normal range the absolute error is <= half the subnormal spacing:
 *           2^-10 (e4m3), 2^-17 (e5m2), times kv_scale.
 *
 * C11 and C++17 clean (included by .cu files). */
#ifndef PB_KV_DTYPE_H
#define PB_KV_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PB_KV_F32 = 0, PB_KV_F16 = 1, PB_KV_BF16 = 2,
    PB_KV_FP8_E4M3 = 3, PB_KV_FP8_E5M2 = 4     /* KV-cache elements only */
} pb_kv_dtype;

/* bytes per element: 4, 2, 2, 1, 1 */
size_t pb_kv_dtype_size(pb_kv_dtype t);
/* K-cache chunk width x = 16 / size: 4, 8, 8, 16, 16 */
int32_t pb_kv_x(pb_kv_dtype t);
/* "fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2"; NULL for an invalid value */
const char *pb_kv_dtype_name(pb_kv_dtype t);
/* parse "fp32"/"float", "fp16"/"half", "bf16"/"bfloat16", "fp8_e4m3", "fp8_e5m2";
 * returns 0 ok, -1 unknown */
int pb_kv_dtype_parse(const char *s, pb_kv_dtype *out);
/* 1 for the fp8 element types */
int pb_kv_dtype_is_fp8(pb_kv_dtype t);

/* The KV cache's format beside the activations' dtype (vLLM's kv_cache_dtype):
 * auto = the activations' own dtype; fp8 = one byte per element with a per-tensor
 * kv_scale.  Zero is auto, so zero-initialised shapes keep today's caches. */
typedef enum {
    PB_KV_CACHE_AUTO = 0, PB_KV_CACHE_FP8_E4M3 = 1, PB_KV_CACHE_FP8_E5M2 = 2
} pb_kv_cache_dtype;
#define PB_KV_CACHE_DTYPE_CHOICES "auto|fp8_e4m3|fp8_e5m2"
/* "auto", "fp8_e4m3", "fp8_e5m2"; NULL for an invalid value */
const char *pb_kv_cache_dtype_name(pb_kv_cache_dtype c);
/* parse the names above; returns 0 ok, -1 unknown */
int pb_kv_cache_dtype_parse(const char *s, pb_kv_cache_dtype *out);
/* The element type a cache of format c holds for activations of type act. */
pb_kv_dtype pb_kv_cache_elem(pb_kv_dtype act, pb_kv_cache_dtype c);
/* kv_scale is usable: finite and > 0 (1.0 = unscaled, vLLM's default). */
int pb_kv_scale_ok(float kv_scale);

/* IEEE binary16 and bfloat16 bit patterns <-> float (RNE, NaN kept NaN). */
uint16_t pb_f32_to_f16(float f);
float    pb_f16_to_f32(uint16_t h);
uint16_t pb_f32_to_bf16(float f);
float    pb_bf16_to_f32(uint16_t h);
/* fp8 (fmt PB_KV_FP8_E4M3 or PB_KV_FP8_E5M2) bit patterns <-> float, unscaled, with
 * the saturating semantics above (the same bits as CUDA's
 * __nv_cvt_float_to_fp8(x, __NV_SATFINITE, fmt); kernels/emu checks every fp16
 * value and a float sweep against it).  Decoding NaN gives NaN. */
uint8_t  pb_f32_to_fp8(float f, pb_kv_dtype fmt);
float    pb_fp8_to_f32(uint8_t b, pb_kv_dtype fmt);
/* Largest finite value of an fp8 format: 448 (e4m3), 57344 (e5m2). */
float    pb_fp8_max(pb_kv_dtype fmt);
/* Unit roundoff 2^-(mantissa bits + 1) and the largest absolute error below the
 * normal range (half the subnormal spacing), unscaled: e4m3 2^-4, 2^-10;
 * e5m2 2^-3, 2^-17; 0 for the other types. */
double   pb_fp8_unit_roundoff(pb_kv_dtype fmt);
double   pb_fp8_abs_floor(pb_kv_dtype fmt);

/* Element i of a typed array as float / store float into element i (fp8: the
 * unscaled value; callers divide by / multiply with kv_scale). */
float pb_kv_load(const void *base, pb_kv_dtype t, size_t i);
void  pb_kv_store(void *base, pb_kv_dtype t, size_t i, float v);
/* Convert n floats into a typed array (dst[n] elements of t) and back. */
void pb_kv_from_f32(void *dst, pb_kv_dtype t, const float *src, size_t n);
void pb_kv_to_f32(float *dst, const void *src, pb_kv_dtype t, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* PB_KV_DTYPE_H */
