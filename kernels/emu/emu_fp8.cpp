// emu_fp8.cpp -- the host fp8 conversions of kv_dtype.c (pb_f32_to_fp8, pb_fp8_to_f32)
// against CUDA's own (cuda_fp8.h: __nv_cvt_float_to_fp8 with __NV_SATFINITE, the
// conversion vLLM's fp8 KV cache uses, and __nv_cvt_fp8_to_halfraw), bit for bit: every
// float whose low 16 bits are zero (all exponents, NaN, Inf, subnormals), every fp16
// value, the two float neighbours of every midpoint between fp8 codes, and a million
// random floats; all 256 codes decoded; and the kernels' own conversions (kernel_common.cuh
// pbk::to_f, pbk::from_f) on every code and every fp16 value.  Built by run.sh.  On sm_89+ the device
// converts with cvt.rn.satfinite (the same rounding; unverified here, no GPU).
#include "cuda_emu.h"
#include "kernel_common.cuh"   // pbk::to_f, pbk::from_f: the kernels' own conversions
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "kv_dtype.h"

static int check_one(float x, pb_kv_dtype t, __nv_fp8_interpretation_t f, int *printed) {
    uint8_t ours = pb_f32_to_fp8(x, t), cuda = (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, f);
    if (ours == cuda) return 0;
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((*printed)++ < 5) printf("fp8 %s: %.9g (0x%08x): ours 0x%02x cuda 0x%02x\n", pb_kv_dtype_name(t), x, u, ours, cuda);
    return 1;
}

int main() {
    int fails = 0;
    const pb_kv_dtype ts[2] = {PB_KV_FP8_E4M3, PB_KV_FP8_E5M2};
    const __nv_fp8_interpretation_t fs[2] = {__NV_E4M3, __NV_E5M2};
    for (int k = 0; k < 2; k++) {
        int bad = 0, printed = 0;
        long n = 0;
        for (uint32_t hi = 0; hi < 65536; hi++, n++) {          // sign, exponent, 7 mantissa bits
            uint32_t u = hi << 16;
            float x;
            memcpy(&x, &u, 4);
            bad += check_one(x, ts[k], fs[k], &printed);
        }
        for (uint32_t h = 0; h < 65536; h++, n++) {             // every fp16 value
            __half_raw r;
            r.x = (unsigned short)h;
            bad += check_one(__half2float(__half(r)), ts[k], fs[k], &printed);
        }
        for (int b = 0; b < 255; b++) {                          // midpoints and their neighbours
            float lo = pb_fp8_to_f32((uint8_t)b, ts[k]), up = pb_fp8_to_f32((uint8_t)(b + 1), ts[k]);
            if (!std::isfinite(lo) || !std::isfinite(up) || (b & 0x80) != ((b + 1) & 0x80)) continue;
            float mid = 0.5f * (lo + up);
            float xs[3] = {mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)};
            for (float x : xs) { bad += check_one(x, ts[k], fs[k], &printed); bad += check_one(-x, ts[k], fs[k], &printed); n += 2; }
        }
        uint64_t s = 0x9e3779b97f4a7c15ull + (uint64_t)k;
        for (int i = 0; i < 1000000; i++, n++) {                 // random bit patterns
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            uint32_t u = (uint32_t)(s >> 11);
            float x;
            memcpy(&x, &u, 4);
            bad += check_one(x, ts[k], fs[k], &printed);
        }
        for (int b = 0; b < 256; b++) {                          // decode: CUDA's, ours, the kernels'
            __half_raw r = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, fs[k]);
            float want = __half2float(__half(r)), ours = pb_fp8_to_f32((uint8_t)b, ts[k]);
            float kern;
            if (k == 0) { __nv_fp8_e4m3 v; v.__x = (__nv_fp8_storage_t)b; kern = pbk::to_f(v); }
            else { __nv_fp8_e5m2 v; v.__x = (__nv_fp8_storage_t)b; kern = pbk::to_f(v); }
            int same = ((std::isnan(want) && std::isnan(ours)) || want == ours) &&
                       ((std::isnan(kern) && std::isnan(ours)) || kern == ours);
            if (!same && printed++ < 5)
                printf("decode %s 0x%02x: ours %g cuda %g kernel %g\n", pb_kv_dtype_name(ts[k]), b, ours, want, kern);
            bad += !same;
        }
        for (uint32_t h = 0; h < 65536; h++) {                   // encode: the kernels' from_f
            __half_raw hr;
            hr.x = (unsigned short)h;
            float x = __half2float(__half(hr));
            uint8_t kern = k == 0 ? pbk::from_f<__nv_fp8_e4m3>(x).__x : pbk::from_f<__nv_fp8_e5m2>(x).__x;
            if (kern != pb_f32_to_fp8(x, ts[k]) && printed++ < 5)
                printf("encode %s %g: kernel 0x%02x ours 0x%02x\n", pb_kv_dtype_name(ts[k]), x, kern, pb_f32_to_fp8(x, ts[k]));
            bad += kern != pb_f32_to_fp8(x, ts[k]);
        }
        printf("fp8 conversions %s vs cuda_fp8.h: %ld values %s\n", pb_kv_dtype_name(ts[k]), n, bad ? "FAIL" : "ok");
        fails += bad != 0;
    }
    printf("%s\n", fails ? "EMU FP8 FAIL" : "EMU FP8 OK");
    return fails != 0;
}
