/* devfill.cu -- seeded uniform fill of device arrays (devfill.h). */
#include "devfill.h"
#include "kernel_common.cuh"

namespace {

__device__ __forceinline__ uint64_t mix64(uint64_t z) {   /* splitmix64 finalizer */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

template <typename T>
__global__ void fill_kernel(T *dst, size_t n, uint64_t seed, float lo, float hi) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float u = (float)(mix64(seed * 0x9e3779b97f4a7c15ull + i) >> 40) * (1.0f / 16777216.0f);
        dst[i] = pbk::from_f<T>(lo + (hi - lo) * u);
    }
}

} /* namespace */

extern "C" pb_status pb_fill_uniform_cuda(void *dst, size_t n, pb_kv_dtype t, uint64_t seed,
                                          float lo, float hi, struct CUstream_st *stream) {
    if (n == 0) return PB_OK;
    const unsigned blocks = (unsigned)(n / 256 + 1 < 65536 ? n / 256 + 1 : 65536);
    switch (t) {
    case PB_KV_F32: fill_kernel<float><<<blocks, 256, 0, stream>>>((float *)dst, n, seed, lo, hi); break;
    case PB_KV_F16: fill_kernel<__half><<<blocks, 256, 0, stream>>>((__half *)dst, n, seed, lo, hi); break;
    case PB_KV_BF16: fill_kernel<__nv_bfloat16><<<blocks, 256, 0, stream>>>((__nv_bfloat16 *)dst, n, seed, lo, hi); break;
    case PB_KV_FP8_E4M3: fill_kernel<__nv_fp8_e4m3><<<blocks, 256, 0, stream>>>((__nv_fp8_e4m3 *)dst, n, seed, lo, hi); break;
    case PB_KV_FP8_E5M2: fill_kernel<__nv_fp8_e5m2><<<blocks, 256, 0, stream>>>((__nv_fp8_e5m2 *)dst, n, seed, lo, hi); break;
    }
    PBK_LAUNCHED();
    return PB_OK;
}
