/* kv_dtype.h -- element types of the attention / KV-cache kernels, and host-side
 * fp16 / bf16 <-> fp32 conversion (round to nearest even), shared by the C
 * references, the tests and the CUDA launchers.
 *
 * The C references take `void *` tensors plus a pb_kv_dtype and compute in fp32,
 * so one reference covers fp32, fp16 and bf16; the CPU tiny model uses fp32.
 * x (the K-cache chunk width) is 16 bytes / element: 4 for fp32, 8 for fp16/bf16.
 *
 * C11 and C++17 clean (included by .cu files). */
#ifndef PB_KV_DTYPE_H
#define PB_KV_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_KV_F32 = 0, PB_KV_F16 = 1, PB_KV_BF16 = 2 } pb_kv_dtype;

/* bytes per element: 4, 2, 2 */
size_t pb_kv_dtype_size(pb_kv_dtype t);
/* K-cache chunk width x = 16 / size: 4, 8, 8 */
int32_t pb_kv_x(pb_kv_dtype t);
/* "fp32", "fp16", "bf16"; NULL for an invalid value */
const char *pb_kv_dtype_name(pb_kv_dtype t);
/* parse "fp32"/"float", "fp16"/"half", "bf16"/"bfloat16"; returns 0 ok, -1 unknown */
int pb_kv_dtype_parse(const char *s, pb_kv_dtype *out);

/* IEEE binary16 and bfloat16 bit patterns <-> float (RNE, NaN kept NaN). */
uint16_t pb_f32_to_f16(float f);
float    pb_f16_to_f32(uint16_t h);
uint16_t pb_f32_to_bf16(float f);
float    pb_bf16_to_f32(uint16_t h);

/* Element i of a typed array as float / store float into element i. */
float pb_kv_load(const void *base, pb_kv_dtype t, size_t i);
void  pb_kv_store(void *base, pb_kv_dtype t, size_t i, float v);
/* Convert n floats into a typed array (dst[n] elements of t) and back. */
void pb_kv_from_f32(void *dst, pb_kv_dtype t, const float *src, size_t n);
void pb_kv_to_f32(float *dst, const void *src, pb_kv_dtype t, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* PB_KV_DTYPE_H */
