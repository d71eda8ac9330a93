/* kv_dtype.c -- element sizes and host fp16 / bf16 conversions (see kv_dtype.h). */
#include <math.h>
#include <string.h>

#include "kv_dtype.h"

size_t pb_kv_dtype_size(pb_kv_dtype t) { return t == PB_KV_F32 ? 4 : 2; }
int32_t pb_kv_x(pb_kv_dtype t) { return (int32_t)(16 / pb_kv_dtype_size(t)); }

const char *pb_kv_dtype_name(pb_kv_dtype t) {
    switch (t) {
    case PB_KV_F32: return "fp32";
    case PB_KV_F16: return "fp16";
    case PB_KV_BF16: return "bf16";
    }
    return NULL;
}

int pb_kv_dtype_parse(const char *s, pb_kv_dtype *out) {
    if (!s) return -1;
    if (!strcmp(s, "fp32") || !strcmp(s, "float")) { *out = PB_KV_F32; return 0; }
    if (!strcmp(s, "fp16") || !strcmp(s, "half")) { *out = PB_KV_F16; return 0; }
    if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) { *out = PB_KV_BF16; return 0; }
    return -1;
}

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* ---- binary16 ---- */
uint16_t pb_f32_to_f16(float f) {
    uint32_t x = f2u(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)                         /* Inf or NaN */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: Inf */
    if (ax < 0x38800000u) {                        /* result is subnormal or zero */
        if (ax < 0x33000000u) return sign;         /* < 2^-25: rounds to 0 */
        uint32_t e = ax >> 23;                     /* 102..112 */
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e;                 /* 14..24 */
        uint32_t h = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((ax >> 13) - (112u << 10));      /* rebias exponent 127 -> 15 */
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float pb_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    if (e == 31) return u2f(sign | 0x7f800000u | (m << 13));
    return u2f(sign | ((e + 112u) << 23) | (m << 13));
}

/* ---- bfloat16 ---- */
uint16_t pb_f32_to_bf16(float f) {
    uint32_t x = f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

float pb_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

float pb_kv_load(const void *base, pb_kv_dtype t, size_t i) {
    switch (t) {
    case PB_KV_F32: return ((const float *)base)[i];
    case PB_KV_F16: return pb_f16_to_f32(((const uint16_t *)base)[i]);
    case PB_KV_BF16: return pb_bf16_to_f32(((const uint16_t *)base)[i]);
    }
    return NAN;
}

void pb_kv_store(void *base, pb_kv_dtype t, size_t i, float v) {
    switch (t) {
    case PB_KV_F32: ((float *)base)[i] = v; break;
    case PB_KV_F16: ((uint16_t *)base)[i] = pb_f32_to_f16(v); break;
    case PB_KV_BF16: ((uint16_t *)base)[i] = pb_f32_to_bf16(v); break;
    }
}

void pb_kv_from_f32(void *dst, pb_kv_dtype t, const float *src, size_t n) {
    if (t == PB_KV_F32) { memcpy(dst, src, n * sizeof(float)); return; }
    for (size_t i = 0; i < n; i++) pb_kv_store(dst, t, i, src[i]);
}

void pb_kv_to_f32(float *dst, const void *src, pb_kv_dtype t, size_t n) {
    if (t == PB_KV_F32) { memcpy(dst, src, n * sizeof(float)); return; }
    for (size_t i = 0; i < n; i++) dst[i] = pb_kv_load(src, t, i);
}
