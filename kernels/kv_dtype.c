/* kv_dtype.c -- element sizes, KV-cache formats and host fp16 / bf16 / fp8
 * conversions (see kv_dtype.h). */
#include <math.h>
#include <string.h>

#include "kv_dtype.h"

int pb_kv_dtype_is_fp8(pb_kv_dtype t) { return t == PB_KV_FP8_E4M3 || t == PB_KV_FP8_E5M2; }
size_t pb_kv_dtype_size(pb_kv_dtype t) { return t == PB_KV_F32 ? 4 : pb_kv_dtype_is_fp8(t) ? 1 : 2; }
int32_t pb_kv_x(pb_kv_dtype t) { return (int32_t)(16 / pb_kv_dtype_size(t)); }

const char *pb_kv_dtype_name(pb_kv_dtype t) {
    switch (t) {
    case PB_KV_F32: return "fp32";
    case PB_KV_F16: return "fp16";
    case PB_KV_BF16: return "bf16";
    case PB_KV_FP8_E4M3: return "fp8_e4m3";
    case PB_KV_FP8_E5M2: return "fp8_e5m2";
    }
    return NULL;
}

int pb_kv_dtype_parse(const char *s, pb_kv_dtype *out) {
    if (!s) return -1;
    if (!strcmp(s, "fp32") || !strcmp(s, "float")) { *out = PB_KV_F32; return 0; }
    if (!strcmp(s, "fp16") || !strcmp(s, "half")) { *out = PB_KV_F16; return 0; }
    if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) { *out = PB_KV_BF16; return 0; }
    if (!strcmp(s, "fp8_e4m3")) { *out = PB_KV_FP8_E4M3; return 0; }
    if (!strcmp(s, "fp8_e5m2")) { *out = PB_KV_FP8_E5M2; return 0; }
    return -1;
}

const char *pb_kv_cache_dtype_name(pb_kv_cache_dtype c) {
    switch (c) {
    case PB_KV_CACHE_AUTO: return "auto";
    case PB_KV_CACHE_FP8_E4M3: return "fp8_e4m3";
    case PB_KV_CACHE_FP8_E5M2: return "fp8_e5m2";
    }
    return NULL;
}

int pb_kv_cache_dtype_parse(const char *s, pb_kv_cache_dtype *out) {
    for (int c = PB_KV_CACHE_AUTO; c <= PB_KV_CACHE_FP8_E5M2; c++)
        if (s && !strcmp(s, pb_kv_cache_dtype_name((pb_kv_cache_dtype)c))) {
            *out = (pb_kv_cache_dtype)c;
            return 0;
        }
    return -1;
}

pb_kv_dtype pb_kv_cache_elem(pb_kv_dtype act, pb_kv_cache_dtype c) {
    return c == PB_KV_CACHE_FP8_E4M3 ? PB_KV_FP8_E4M3 : c == PB_KV_CACHE_FP8_E5M2 ? PB_KV_FP8_E5M2 : act;
}

int pb_kv_scale_ok(float kv_scale) { return isfinite(kv_scale) && kv_scale > 0; }

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

/* ---- fp8 ---- */
typedef struct {
    int bias, mbits;      /* exponent bias, explicit mantissa bits */
    float max;            /* largest finite value                  */
} fp8_fmt;

static fp8_fmt fp8_of(pb_kv_dtype t) {
    return t == PB_KV_FP8_E5M2 ? (fp8_fmt){15, 2, 57344.0f} : (fp8_fmt){7, 3, 448.0f};
}

float pb_fp8_max(pb_kv_dtype fmt) { return fp8_of(fmt).max; }
double pb_fp8_unit_roundoff(pb_kv_dtype fmt) {
    return pb_kv_dtype_is_fp8(fmt) ? ldexp(1.0, -(fp8_of(fmt).mbits + 1)) : 0;
}
double pb_fp8_abs_floor(pb_kv_dtype fmt) {   /* half of the subnormal spacing 2^(1-bias-mbits) */
    fp8_fmt F = fp8_of(fmt);
    return pb_kv_dtype_is_fp8(fmt) ? ldexp(1.0, -F.bias - F.mbits) : 0;
}

/* Round |f| to the format's grid (the quantum of its binade, never finer than the
 * subnormal spacing) with the current rounding mode, round to nearest even; then
 * saturate; then encode the rounded value (it may have moved up a binade). */
uint8_t pb_f32_to_fp8(float f, pb_kv_dtype fmt) {
    const fp8_fmt F = fp8_of(fmt);
    if (isnan(f)) return 0x7f;
    const uint8_t sign = signbit(f) ? 0x80 : 0;
    const int emin = 1 - F.bias;                   /* exponent of the smallest normal */
    float a = fabsf(f);
    int e = 0;
    if (isfinite(a)) frexpf(a, &e);                /* a = m 2^e, m in [0.5, 1)         */
    const int be = e - 1 < emin ? emin : e - 1;    /* binade of a (subnormals: emin)   */
    float r = isfinite(a) ? nearbyintf(ldexpf(a, F.mbits - be)) : INFINITY;  /* units of the quantum */
    r = ldexpf(r, be - F.mbits);
    if (!(r <= F.max)) r = F.max;                  /* overflow and Inf saturate */
    if (r == 0) return sign;
    frexpf(r, &e);
    if (e - 1 < emin)                              /* subnormal: exponent field 0 */
        return (uint8_t)(sign | (uint8_t)ldexpf(r, F.mbits - emin));
    const int mant = (int)ldexpf(r, F.mbits - (e - 1)) - (1 << F.mbits);
    return (uint8_t)(sign | ((e - 1 + F.bias) << F.mbits) | mant);
}

float pb_fp8_to_f32(uint8_t b, pb_kv_dtype fmt) {
    const fp8_fmt F = fp8_of(fmt);
    const int E = (b & 0x7f) >> F.mbits, M = b & ((1 << F.mbits) - 1);
    const float s = (b & 0x80) ? -1.0f : 1.0f;
    if (fmt == PB_KV_FP8_E4M3 && (b & 0x7f) == 0x7f) return NAN;
    if (fmt == PB_KV_FP8_E5M2 && E == 31) return M ? NAN : s * INFINITY;
    if (E == 0) return s * ldexpf((float)M, 1 - F.bias - F.mbits);
    return s * ldexpf((float)((1 << F.mbits) | M), E - F.bias - F.mbits);
}

float pb_kv_load(const void *base, pb_kv_dtype t, size_t i) {
    switch (t) {
    case PB_KV_F32: return ((const float *)base)[i];
    case PB_KV_F16: return pb_f16_to_f32(((const uint16_t *)base)[i]);
    case PB_KV_BF16: return pb_bf16_to_f32(((const uint16_t *)base)[i]);
    case PB_KV_FP8_E4M3:
    case PB_KV_FP8_E5M2: return pb_fp8_to_f32(((const uint8_t *)base)[i], t);
    }
    return NAN;
}

void pb_kv_store(void *base, pb_kv_dtype t, size_t i, float v) {
    switch (t) {
    case PB_KV_F32: ((float *)base)[i] = v; break;
    case PB_KV_F16: ((uint16_t *)base)[i] = pb_f32_to_f16(v); break;
    case PB_KV_BF16: ((uint16_t *)base)[i] = pb_f32_to_bf16(v); break;
    case PB_KV_FP8_E4M3:
    case PB_KV_FP8_E5M2: ((uint8_t *)base)[i] = pb_f32_to_fp8(v, t); break;
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
