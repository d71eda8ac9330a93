/* test_kv_dtype.c -- host fp16 / bf16 conversions: every fp16 pattern round-trips,
 * float -> fp16/bf16 rounds to nearest even, overflow to Inf, NaN stays NaN. */
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

PB_TEST_MAIN()
