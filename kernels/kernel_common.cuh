/* kernel_common.cuh -- device helpers shared by the .cu files: element conversion,
 * vector loads, warp reductions, launch-error checks.  C++17 / CUDA only. */
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "pb.h"

namespace pbk {

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/* raw vector type of a given byte width (all loads through the read-only path) */
template <int BYTES> struct raw_vec;
template <> struct raw_vec<16> { typedef uint4 type; };
template <> struct raw_vec<8> { typedef uint2 type; };
template <> struct raw_vec<4> { typedef unsigned int type; };
template <> struct raw_vec<2> { typedef unsigned short type; };

/* N consecutive elements of T at p (aligned to N*sizeof(T)) -> fp32 */
template <typename T, int N>
__device__ __forceinline__ void load_vec(const T *p, float (&o)[N]) {
    typedef typename raw_vec<(int)(N * sizeof(T))>::type R;
    R r = __ldg(reinterpret_cast<const R *>(p));
    const T *e = reinterpret_cast<const T *>(&r);
#pragma unroll
    for (int i = 0; i < N; i++) o[i] = to_f(e[i]);
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
