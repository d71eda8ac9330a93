/* kernel_common.cuh -- device helpers shared by the .cu files: element conversion,
 * vector loads, warp reductions, launch-error checks.  C++17 / CUDA only.
 *
 * fp8 elements are CUDA's __nv_fp8_e4m3 / __nv_fp8_e5m2: float -> fp8 through
 * their constructors (__nv_cvt_float_to_fp8 with __NV_SATFINITE: round to nearest
 * even, saturate to +-max, NaN -> 0x7f), fp8 -> float exactly (to_f below); the host
 * twins are kv_dtype.h's pb_f32_to_fp8 / pb_fp8_to_f32 (bit-identical: kernels/emu
 * checks both directions on every code and 2.26M floats). */
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "pb.h"

namespace pbk {

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
/* float from its bits: the device intrinsic under nvcc, memcpy in the host emulator */
__device__ __forceinline__ float bits_f(unsigned u) {
#if defined(__CUDACC__)
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}
/* fp8 -> float, exact for every code, in a few integer operations and one multiply
   (CUDA's own conversion is a software routine on sm_80 whose registers made the
   decode kernel spill).  The exponent and mantissa bits moved to the top of a
   float's fields make a float 2^(127 - bias) times too small, subnormals included
   (they land on float subnormals, exact without flush-to-zero), so one multiply by
   2^120 (e4m3, bias 7) or 2^112 (e5m2, bias 15) rescales it; then the special
   codes (e4m3: S.1111.111 is NaN, no infinity; e5m2: exponent 11111 is +-inf or
   NaN).  The sign bit moves with the fields (a multiply keeps it). */
__device__ __forceinline__ float to_f(__nv_fp8_e4m3 v) {
    const unsigned b = v.__x;
    const float f = bits_f(((b & 0x80u) << 24) | ((b & 0x7fu) << 20)) * bits_f(0x7b800000u);   /* 2^120 */
    return (b & 0x7fu) == 0x7fu ? bits_f(0x7fc00000u) : f;
}
__device__ __forceinline__ float to_f(__nv_fp8_e5m2 v) {
    const unsigned b = v.__x;
    const float f = bits_f(((b & 0x80u) << 24) | ((b & 0x7fu) << 21)) * bits_f(0x77800000u);   /* 2^112 */
    return (b & 0x7cu) == 0x7cu ? bits_f((b & 3u) ? 0x7fc00000u : ((b & 0x80u) << 24) | 0x7f800000u) : f;
}

template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __nv_fp8_e4m3 from_f<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }
template <> __device__ __forceinline__ __nv_fp8_e5m2 from_f<__nv_fp8_e5m2>(float v) { return __nv_fp8_e5m2(v); }

template <typename T> struct is_fp8 { static constexpr bool value = false; };
template <> struct is_fp8<__nv_fp8_e4m3> { static constexpr bool value = true; };
template <> struct is_fp8<__nv_fp8_e5m2> { static constexpr bool value = true; };

/* raw vector type of a given byte width (all loads through the read-only path) */
template <int BYTES> struct raw_vec;
template <> struct raw_vec<16> { typedef uint4 type; };
template <> struct raw_vec<8> { typedef uint2 type; };
template <> struct raw_vec<4> { typedef unsigned int type; };
template <> struct raw_vec<2> { typedef unsigned short type; };
template <> struct raw_vec<1> { typedef unsigned char type; };

/* N consecutive elements of T at p (aligned to min(N*sizeof(T), 16)) -> fp32; wider
   than 16 bytes (fp16 q against an fp8 cache's 16-element chunks): 16-byte pieces */
template <typename T, int N>
__device__ __forceinline__ void load_vec(const T *p, float (&o)[N]) {
    constexpr int BYTES = (int)(N * sizeof(T)) < 16 ? (int)(N * sizeof(T)) : 16;
    constexpr int PER = BYTES / (int)sizeof(T);
    typedef typename raw_vec<BYTES>::type R;
#pragma unroll
    for (int k = 0; k < N / PER; k++) {
        R r = __ldg(reinterpret_cast<const R *>(p + k * PER));
        const T *e = reinterpret_cast<const T *>(&r);
#pragma unroll
        for (int i = 0; i < PER; i++) o[k * PER + i] = to_f(e[i]);
    }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
    return v;
}

} /* namespace pbk */

/* launch-error check for launchers: log and return PB_ERR_CUDA */
#define PBK_TRY(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) {                \
    pb_log_error("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));       \
    return PB_ERR_CUDA; } } while (0)
#define PBK_LAUNCHED() PBK_TRY(cudaGetLastError())
