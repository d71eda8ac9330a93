/* test_kv_dtype.c -- host fp16 / bf16 / fp8 conversions: every fp16 pattern
 * round-trips, float -> fp16/bf16 rounds to nearest even, overflow to Inf, NaN stays
 * NaN; fp8 e4m3 / e5m2 at every special value (zeros, subnormals, the normal
 * boundary, ties, max finite, saturation of overflow and Inf, NaN), all 256 codes
 * round-trip, and every fp16 value lands within the format's error bound
 * (kv_dtype.h).  The same bits as CUDA's conversion: kernels/emu (emu_fp8.cpp). */
#include <math.h>
#include <string.h>

#include "kv_dtype.h"
#include "pbtest.h"

PB_TEST(f16_all_patterns_roundtrip) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = pb_f16_to_f32((uint16_t)h);
        if (isnan(f)) { bad += !isnan(pb_f16_to_f32(pb_f32_to_f16(f))); continue; }
        bad += pb_f32_to_f16(f) != (uint16_t)h;
    }
    PB_CHECK_EQ_INT(bad, 0);
}

PB_TEST(f16_rounding) {
    PB_CHECK(pb_f16_to_f32(0x3c00) == 1.0f);
    PB_CHECK(pb_f32_to_f16(1.0f + ldexpf(1, -11)) == 0x3c00);      /* tie -> even */
    PB_CHECK(pb_f32_to_f16(1.0f + 3 * ldexpf(1, -11)) == 0x3c02);  /* tie -> even (up) */
    PB_CHECK(pb_f32_to_f16(65504.0f) == 0x7bff);
    PB_CHECK(pb_f32_to_f16(65520.0f) == 0x7c00);                   /* overflow -> Inf */
    PB_CHECK(pb_f32_to_f16(-1e9f) == 0xfc00);
    PB_CHECK(pb_f32_to_f16(ldexpf(1, -24)) == 0x0001);             /* smallest subnormal */
    PB_CHECK(pb_f32_to_f16(ldexpf(1, -25)) == 0x0000);             /* tie -> even (0) */
    PB_CHECK(pb_f32_to_f16(ldexpf(3, -26)) == 0x0001);
    PB_CHECK(isnan(pb_f16_to_f32(pb_f32_to_f16(NAN))));
    PB_CHECK(pb_f32_to_f16(-0.0f) == 0x8000);
}

PB_TEST(bf16_rounding) {
    PB_CHECK(pb_f32_to_bf16(1.0f) == 0x3f80);
    PB_CHECK(pb_bf16_to_f32(0x3f80) == 1.0f);
    PB_CHECK(pb_f32_to_bf16(1.0f + ldexpf(1, -8)) == 0x3f80);       /* tie -> even */
    PB_CHECK(pb_f32_to_bf16(1.0f + 3 * ldexpf(1, -8)) == 0x3f82);
    PB_CHECK(isnan(pb_bf16_to_f32(pb_f32_to_bf16(NAN))));
    PB_CHECK(isinf(pb_bf16_to_f32(pb_f32_to_bf16(INFINITY))));
}

PB_TEST(typed_arrays) {
    float src[5] = {0.5f, -2.0f, 3.25f, 1e-3f, 7.0f}, back[5];
    uint16_t h[5];
    pb_kv_from_f32(h, PB_KV_F16, src, 5);
    pb_kv_to_f32(back, h, PB_KV_F16, 5);
    for (int i = 0; i < 5; i++) PB_CHECK_NEAR(back[i], src[i], 1e-3 * fabs(src[i]));
    PB_CHECK_EQ_INT(pb_kv_x(PB_KV_F32), 4);
    PB_CHECK_EQ_INT(pb_kv_x(PB_KV_BF16), 8);
    pb_kv_dtype t;
    PB_CHECK(pb_kv_dtype_parse("half", &t) == 0 && t == PB_KV_F16);
    PB_CHECK(pb_kv_dtype_parse("fp8", &t) == -1);
}

/* the value of code b, independent of pb_fp8_to_f32: sign, exponent, mantissa */
static double fp8_value(int b, int ebits, int mbits) {
    int bias = (1 << (ebits - 1)) - 1, E = (b & 0x7f) >> mbits, M = b & ((1 << mbits) - 1);
    double v = E ? ldexp(1.0 + M / (double)(1 << mbits), E - bias) : ldexp(M / (double)(1 << mbits), 1 - bias);
    return (b & 0x80) ? -v : v;
}

PB_TEST(fp8_all_codes_roundtrip) {
    static const pb_kv_dtype fmts[] = {PB_KV_FP8_E4M3, PB_KV_FP8_E5M2};
    for (size_t f = 0; f < 2; f++) {
        pb_kv_dtype t = fmts[f];
        int ebits = t == PB_KV_FP8_E4M3 ? 4 : 5, mbits = 7 - ebits, bad = 0, nans = 0, infs = 0;
        for (int b = 0; b < 256; b++) {
            float v = pb_fp8_to_f32((uint8_t)b, t);
            if (isnan(v)) { nans++; bad += pb_f32_to_fp8(v, t) != 0x7f; continue; }
            if (isinf(v)) { infs++; continue; }
            bad += (double)v != fp8_value(b, ebits, mbits);
            bad += pb_f32_to_fp8(v, t) != (uint8_t)b;
        }
        PB_CHECK_EQ_INT(bad, 0);
        PB_CHECK_EQ_INT(nans, t == PB_KV_FP8_E4M3 ? 2 : 6);   /* S.1111.111; S.11111.{01,10,11} */
        PB_CHECK_EQ_INT(infs, t == PB_KV_FP8_E4M3 ? 0 : 2);
    }
}

PB_TEST(fp8_e4m3_special_values) {
    const pb_kv_dtype t = PB_KV_FP8_E4M3;
    PB_CHECK(pb_f32_to_fp8(0.0f, t) == 0x00);
    PB_CHECK(pb_f32_to_fp8(-0.0f, t) == 0x80);
    PB_CHECK(pb_f32_to_fp8(ldexpf(1, -9), t) == 0x01);           /* smallest subnormal */
    PB_CHECK(pb_f32_to_fp8(ldexpf(1, -10), t) == 0x00);          /* half of it: tie -> even (0) */
    PB_CHECK(pb_f32_to_fp8(ldexpf(3, -11), t) == 0x01);          /* 0.75 of it rounds up */
    PB_CHECK(pb_f32_to_fp8(ldexpf(3, -10), t) == 0x02);          /* 1.5 units: tie -> even (2) */
    PB_CHECK(pb_f32_to_fp8(ldexpf(7, -9), t) == 0x07);           /* largest subnormal */
    PB_CHECK(pb_f32_to_fp8(ldexpf(15, -10), t) == 0x08);         /* rounds up into the normal range */
    PB_CHECK(pb_f32_to_fp8(ldexpf(1, -6), t) == 0x08);           /* smallest normal */
    PB_CHECK(pb_f32_to_fp8(1.0f, t) == 0x38);
    PB_CHECK(pb_f32_to_fp8(1.0f + ldexpf(1, -4), t) == 0x38);    /* tie -> even */
    PB_CHECK(pb_f32_to_fp8(1.0f + 3 * ldexpf(1, -4), t) == 0x3a);/* tie -> even (up) */
    PB_CHECK(pb_f32_to_fp8(448.0f, t) == 0x7e);                  /* max finite */
    PB_CHECK(pb_f32_to_fp8(464.0f, t) == 0x7e);                  /* tie between 448 and 480: even */
    PB_CHECK(pb_f32_to_fp8(465.0f, t) == 0x7e);                  /* saturates (480 is the NaN code) */
    PB_CHECK(pb_f32_to_fp8(-1e30f, t) == 0xfe);
    PB_CHECK(pb_f32_to_fp8(INFINITY, t) == 0x7e);                /* SATFINITE: Inf -> max */
    PB_CHECK(pb_f32_to_fp8(-INFINITY, t) == 0xfe);
    PB_CHECK(pb_f32_to_fp8(NAN, t) == 0x7f);
    PB_CHECK(pb_f32_to_fp8(-NAN, t) == 0x7f);                    /* sign dropped, as CUDA */
    PB_CHECK(isnan(pb_fp8_to_f32(0xff, t)));
    PB_CHECK(pb_fp8_to_f32(0x7e, t) == 448.0f && pb_fp8_max(t) == 448.0f);
    PB_CHECK(pb_fp8_to_f32(0x80, t) == 0.0f && signbit(pb_fp8_to_f32(0x80, t)));
    PB_CHECK(pb_f32_to_fp8(ldexpf(1, -140), t) == 0x00);         /* float subnormal input */
}

PB_TEST(fp8_e5m2_special_values) {
    const pb_kv_dtype t = PB_KV_FP8_E5M2;
    PB_CHECK(pb_f32_to_fp8(ldexpf(1, -16), t) == 0x01);          /* smallest subnormal */
    PB_CHECK(pb_f32_to_fp8(ldexpf(1, -17), t) == 0x00);          /* tie -> 0 */
    PB_CHECK(pb_f32_to_fp8(ldexpf(3, -18), t) == 0x01);
    PB_CHECK(pb_f32_to_fp8(ldexpf(1, -14), t) == 0x04);          /* smallest normal */
    PB_CHECK(pb_f32_to_fp8(1.0f, t) == 0x3c);
    PB_CHECK(pb_f32_to_fp8(1.0f + ldexpf(1, -3), t) == 0x3c);    /* tie -> even */
    PB_CHECK(pb_f32_to_fp8(1.0f + 3 * ldexpf(1, -3), t) == 0x3e);
    PB_CHECK(pb_f32_to_fp8(57344.0f, t) == 0x7b);                /* max finite */
    PB_CHECK(pb_f32_to_fp8(61440.0f, t) == 0x7b);                /* tie above max saturates */
    PB_CHECK(pb_f32_to_fp8(INFINITY, t) == 0x7b);                /* SATFINITE: never Inf */
    PB_CHECK(pb_f32_to_fp8(-INFINITY, t) == 0xfb);
    PB_CHECK(pb_f32_to_fp8(NAN, t) == 0x7f);
    PB_CHECK(isinf(pb_fp8_to_f32(0x7c, t)) && pb_fp8_to_f32(0xfc, t) < 0);
    PB_CHECK(isnan(pb_fp8_to_f32(0x7d, t)) && isnan(pb_fp8_to_f32(0xfe, t)));
}

/* every finite fp16 value: monotone, and within max(u |x|, floor) of x (or saturated) */
PB_TEST(fp8_error_bound_over_fp16) {
    static const pb_kv_dtype fmts[] = {PB_KV_FP8_E4M3, PB_KV_FP8_E5M2};
    for (size_t f = 0; f < 2; f++) {
        pb_kv_dtype t = fmts[f];
        double u = pb_fp8_unit_roundoff(t), a = pb_fp8_abs_floor(t), mx = pb_fp8_max(t), prev = 0;
        int bad = 0, nonmono = 0;
        for (uint32_t h = 0; h < 0x7c00; h++) {                   /* +0 .. max fp16 */
            float x = pb_f16_to_f32((uint16_t)h);
            double y = pb_fp8_to_f32(pb_f32_to_fp8(x, t), t);
            double err = fabs(y - x);
            if (x <= mx) bad += !(err <= u * x || err <= a);
            else bad += y != mx;                                  /* saturated */
            nonmono += y < prev;
            prev = y;
            bad += pb_fp8_to_f32(pb_f32_to_fp8(-x, t), t) != -y;  /* odd symmetry */
        }
        PB_CHECK_EQ_INT(bad, 0);
        PB_CHECK_EQ_INT(nonmono, 0);
    }
    PB_CHECK(pb_fp8_unit_roundoff(PB_KV_FP8_E4M3) == 0.0625 && pb_fp8_unit_roundoff(PB_KV_FP8_E5M2) == 0.125);
    PB_CHECK(pb_fp8_abs_floor(PB_KV_FP8_E4M3) == ldexp(1, -10) && pb_fp8_abs_floor(PB_KV_FP8_E5M2) == ldexp(1, -17));
}

PB_TEST(kv_cache_dtypes) {
    pb_kv_cache_dtype c;
    PB_CHECK(pb_kv_cache_dtype_parse("fp8_e5m2", &c) == 0 && c == PB_KV_CACHE_FP8_E5M2);
    PB_CHECK(pb_kv_cache_dtype_parse("auto", &c) == 0 && c == PB_KV_CACHE_AUTO);
    PB_CHECK(pb_kv_cache_dtype_parse("fp8", &c) == -1);
    PB_CHECK(pb_kv_cache_elem(PB_KV_F16, PB_KV_CACHE_AUTO) == PB_KV_F16);
    PB_CHECK(pb_kv_cache_elem(PB_KV_BF16, PB_KV_CACHE_FP8_E4M3) == PB_KV_FP8_E4M3);
    PB_CHECK_EQ_INT(pb_kv_x(PB_KV_FP8_E5M2), 16);
    PB_CHECK_EQ_INT((int)pb_kv_dtype_size(PB_KV_FP8_E4M3), 1);
    PB_CHECK(pb_kv_scale_ok(0.5f) && !pb_kv_scale_ok(0.0f) && !pb_kv_scale_ok(-1.0f) && !pb_kv_scale_ok(INFINITY));
    uint8_t b[3];
    float src[3] = {0.3f, -500.0f, 2.0f}, back[3];
    pb_kv_from_f32(b, PB_KV_FP8_E4M3, src, 3);
    pb_kv_to_f32(back, b, PB_KV_FP8_E4M3, 3);
    PB_CHECK(back[0] == 0.3125f && back[1] == -448.0f && back[2] == 2.0f);
}

PB_TEST_MAIN()
