/* cache_ops.cu -- CUDA reshape_and_cache, gather_cached_kv, copy_blocks (one launch
 * for all layers x pairs) and swap_blocks (per-block cudaMemcpyAsync vs merged runs
 * through cudaMemcpyBatchAsync).  Contracts: cache_ops.h.
 * FP8 caches: reshape_and_cache quantizes fp8(x / kv_scale) and gather returns
 * fp8 * kv_scale (vLLM v0.5.0 csrc/cache_kernels.cu reshape_and_cache_kernel with
 * fp8::scaled_convert, csrc/quantization/fp8/nvidia/quant_utils.cuh); copy_blocks
 * and swap copy bytes, so they serve fp8 blocks as they are (block_bytes from
 * pb_kv_block_bytes, one byte per element). */
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "cache_ops.h"
#include "kernel_common.cuh"

namespace {

using namespace pbk;

constexpr int RC_THREADS = 256;

/* One CTA per token; thread e handles the 16-byte cache chunk e of the token's Hkv*D
 * elements: head h = e / (D/X), chunk j = e % (D/X), X = 16 / sizeof(C).  K: one
 * 16-byte store; V: X scalar stores into X rows (the V layout is transposed).
 * C == T: the bytes are copied.  An fp8 cache (C = __nv_fp8_e4m3 / e5m2, X = 16):
 * the chunk's 16 activations are read (16-byte pieces) and stored as fp8(x / kv_scale). */
template <typename T, typename C>
__global__ void __launch_bounds__(RC_THREADS)
reshape_and_cache_kernel(C *__restrict__ k_cache, C *__restrict__ v_cache,
                         const T *__restrict__ key, const T *__restrict__ value,
                         int64_t key_stride, int64_t value_stride,
                         const int64_t *__restrict__ slot_mapping, int num_kv_heads,
                         int head_size, int block_size, float kv_scale) {
    constexpr int X = 16 / (int)sizeof(C);
    const int64_t slot = slot_mapping[blockIdx.x];
    if (slot < 0) return;
    const int64_t blk = slot / block_size, off = slot % block_size;
    const int nch = head_size / X, n = num_kv_heads * nch;
    const T *kin = key + (int64_t)blockIdx.x * key_stride;
    const T *vin = value + (int64_t)blockIdx.x * value_stride;
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
        const int h = e / nch, j = e % nch;
        const T *ks = kin + (int64_t)h * head_size + j * X, *vs = vin + (int64_t)h * head_size + j * X;
        const int64_t kd = (((blk * num_kv_heads + h) * nch + j) * block_size + off) * X;
        const int64_t vd = ((blk * num_kv_heads + h) * head_size + j * X) * block_size + off;
        if constexpr (std::is_same<T, C>::value) {
            *reinterpret_cast<uint4 *>(k_cache + kd) = __ldg(reinterpret_cast<const uint4 *>(ks));
            const uint4 vv = __ldg(reinterpret_cast<const uint4 *>(vs));
            const T *ve = reinterpret_cast<const T *>(&vv);
#pragma unroll
            for (int i = 0; i < X; i++) v_cache[vd + (int64_t)i * block_size] = ve[i];
        } else {
            float kf[X], vf[X];
            load_vec<T, X>(ks, kf);
            load_vec<T, X>(vs, vf);
            uint4 kq;
            C *ke = reinterpret_cast<C *>(&kq);
#pragma unroll
            for (int i = 0; i < X; i++) ke[i] = from_f<C>(kf[i] / kv_scale);
            *reinterpret_cast<uint4 *>(k_cache + kd) = kq;
#pragma unroll
            for (int i = 0; i < X; i++) v_cache[vd + (int64_t)i * block_size] = from_f<C>(vf[i] / kv_scale);
        }
    }
}

/* The inverse: dense T rows [token, Hkv*D] from the slots (zeros for slot < 0); an fp8
 * cache gives fp8 * kv_scale. */
template <typename T, typename C>
__global__ void __launch_bounds__(RC_THREADS)
gather_cached_kv_kernel(T *__restrict__ key, T *__restrict__ value, const C *__restrict__ k_cache,
                        const C *__restrict__ v_cache, const int64_t *__restrict__ slot_mapping,
                        int num_kv_heads, int head_size, int block_size, float kv_scale) {
    constexpr int X = 16 / (int)sizeof(C);
    const int64_t slot = slot_mapping[blockIdx.x];
    const int nch = head_size / X, n = num_kv_heads * nch;
    T *kout = key + (int64_t)blockIdx.x * num_kv_heads * head_size;
    T *vout = value + (int64_t)blockIdx.x * num_kv_heads * head_size;
    const int64_t blk = slot < 0 ? 0 : slot / block_size, off = slot < 0 ? 0 : slot % block_size;
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
        const int h = e / nch, j = e % nch;
        const C *kc = k_cache + (((blk * num_kv_heads + h) * nch + j) * block_size + off) * X;
        const int64_t vs = ((blk * num_kv_heads + h) * head_size + j * X) * block_size + off;
        T *ko = kout + (int64_t)h * head_size + j * X, *vo = vout + (int64_t)h * head_size + j * X;
        if constexpr (std::is_same<T, C>::value) {
            uint4 kv = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
            if (slot >= 0) {
                kv = __ldg(reinterpret_cast<const uint4 *>(kc));
                T *ve = reinterpret_cast<T *>(&vv);
#pragma unroll
                for (int i = 0; i < X; i++) ve[i] = v_cache[vs + (int64_t)i * block_size];
            }
            *reinterpret_cast<uint4 *>(ko) = kv;
            *reinterpret_cast<uint4 *>(vo) = vv;
        } else {
            float kf[X], vf[X];
            if (slot >= 0) {
                load_vec<C, X>(kc, kf);
#pragma unroll
                for (int i = 0; i < X; i++) vf[i] = to_f(v_cache[vs + (int64_t)i * block_size]);
            }
#pragma unroll
            for (int i = 0; i < X; i++) {
                ko[i] = from_f<T>(slot >= 0 ? kf[i] * kv_scale : 0.f);
                vo[i] = from_f<T>(slot >= 0 ? vf[i] * kv_scale : 0.f);
            }
        }
    }
}

/* Launch the kernels of (activations T, cache elements C) for shape c. */
template <typename T, typename C>
void launch_rc(const pb_kv_cache_shape *c, void *k_cache, void *v_cache, const void *key,
               const void *value, int64_t ks, int64_t vs, const int64_t *slots, int32_t n, int th,
               cudaStream_t stream) {
    reshape_and_cache_kernel<T, C><<<n, th, 0, stream>>>((C *)k_cache, (C *)v_cache, (const T *)key, (const T *)value, ks, vs, slots, c->num_kv_heads, c->head_size, c->block_size, c->kv_scale);
}

template <typename T, typename C>
void launch_gather(const pb_kv_cache_shape *c, void *key, void *value, const void *k_cache,
                   const void *v_cache, const int64_t *slots, int32_t n, int th, cudaStream_t stream) {
    gather_cached_kv_kernel<T, C><<<n, th, 0, stream>>>((T *)key, (T *)value, (const C *)k_cache, (const C *)v_cache, slots, c->num_kv_heads, c->head_size, c->block_size, c->kv_scale);
}

struct LayerPtrs { uint4 *t[2][PB_CACHE_MAX_LAYERS]; };  /* [K/V][layer] */

/* grid (num_pairs, num_layers, 2): one CTA copies one block of one tensor with
 * 16-byte loads/stores, 4 in flight per thread. */
__global__ void __launch_bounds__(256)
copy_blocks_kernel(const LayerPtrs ptrs, const pb_block_pair *__restrict__ pairs, int64_t vecs) {
    const pb_block_pair pr = pairs[blockIdx.x];
    uint4 *base = ptrs.t[blockIdx.z][blockIdx.y];
    const uint4 *src = base + (int64_t)pr.src * vecs;
    uint4 *dst = base + (int64_t)pr.dst * vecs;
    int64_t i = threadIdx.x;
    for (; i + 3 * 256 < vecs; i += 4 * 256) {
        uint4 a = src[i], b = src[i + 256], c = src[i + 512], d = src[i + 768];
        dst[i] = a; dst[i + 256] = b; dst[i + 512] = c; dst[i + 768] = d;
    }
    for (; i < vecs; i += 256) dst[i] = src[i];
}

int aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

pb_status check_rc_args(const pb_kv_cache_shape *c, const void *key, const void *value,
                        int32_t key_stride, int32_t value_stride, const void *kc, const void *vc) {
    pb_status st = pb_kv_cache_shape_check(c);
    if (st != PB_OK) return st;
    if (c->kv_cache_dtype != PB_KV_CACHE_AUTO && c->dtype != PB_KV_F16 && c->dtype != PB_KV_BF16) {
        pb_log_error("kv cache: an fp8 cache needs fp16 or bf16 activations on the GPU (got %s)",
                     pb_kv_dtype_name(c->dtype));
        return PB_ERR_UNSUPPORTED;
    }
    const int x = pb_kv_x(c->dtype);
    if (!aligned16(key) || !aligned16(value) || !aligned16(kc) || !aligned16(vc) ||
        key_stride % x || value_stride % x) {
        pb_log_error("reshape_and_cache: CUDA path needs 16-byte aligned tensors and strides %% %d == 0", x);
        return PB_ERR_UNSUPPORTED;
    }
    const int32_t hd = c->num_kv_heads * c->head_size;
    if ((key_stride && key_stride < hd) || (value_stride && value_stride < hd)) {
        pb_log_error("reshape_and_cache: key/value stride < Hkv*D");
        return PB_ERR_INVALID;
    }
    return PB_OK;
}

int rc_threads(const pb_kv_cache_shape *c) {
    int n = c->num_kv_heads * c->head_size / pb_kv_x(pb_kv_cache_shape_elem(c));
    return n < RC_THREADS ? (n + 31) / 32 * 32 : RC_THREADS;
}

} /* namespace */

extern "C" pb_status pb_reshape_and_cache_cuda(const pb_kv_cache_shape *c, void *k_cache,
                                               void *v_cache, const void *key, const void *value,
                                               int32_t key_stride, int32_t value_stride,
                                               const int64_t *slot_mapping, int32_t num_tokens,
                                               struct CUstream_st *stream) {
    pb_status st = check_rc_args(c, key, value, key_stride, value_stride, k_cache, v_cache);
    if (st != PB_OK) return st;
    if (num_tokens <= 0) return num_tokens < 0 ? PB_ERR_INVALID : PB_OK;
    const int64_t hd = (int64_t)c->num_kv_heads * c->head_size;
    const int64_t ks = key_stride ? key_stride : hd, vs = value_stride ? value_stride : hd;
    const int th = rc_threads(c);
    const bool half = c->dtype == PB_KV_F16;
    switch (pb_kv_cache_shape_elem(c)) {
    case PB_KV_F32: launch_rc<float, float>(c, k_cache, v_cache, key, value, ks, vs, slot_mapping, num_tokens, th, stream); break;
    case PB_KV_F16: launch_rc<__half, __half>(c, k_cache, v_cache, key, value, ks, vs, slot_mapping, num_tokens, th, stream); break;
    case PB_KV_BF16: launch_rc<__nv_bfloat16, __nv_bfloat16>(c, k_cache, v_cache, key, value, ks, vs, slot_mapping, num_tokens, th, stream); break;
    case PB_KV_FP8_E4M3:
        if (half) launch_rc<__half, __nv_fp8_e4m3>(c, k_cache, v_cache, key, value, ks, vs, slot_mapping, num_tokens, th, stream);
        else launch_rc<__nv_bfloat16, __nv_fp8_e4m3>(c, k_cache, v_cache, key, value, ks, vs, slot_mapping, num_tokens, th, stream);
        break;
    case PB_KV_FP8_E5M2:
        if (half) launch_rc<__half, __nv_fp8_e5m2>(c, k_cache, v_cache, key, value, ks, vs, slot_mapping, num_tokens, th, stream);
        else launch_rc<__nv_bfloat16, __nv_fp8_e5m2>(c, k_cache, v_cache, key, value, ks, vs, slot_mapping, num_tokens, th, stream);
        break;
    }
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_gather_cached_kv_cuda(const pb_kv_cache_shape *c, void *key, void *value,
                                              const void *k_cache, const void *v_cache,
                                              const int64_t *slot_mapping, int32_t num_tokens,
                                              struct CUstream_st *stream) {
    pb_status st = check_rc_args(c, key, value, 0, 0, k_cache, v_cache);
    if (st != PB_OK) return st;
    if (num_tokens <= 0) return num_tokens < 0 ? PB_ERR_INVALID : PB_OK;
    const int th = rc_threads(c);
    const bool half = c->dtype == PB_KV_F16;
    switch (pb_kv_cache_shape_elem(c)) {
    case PB_KV_F32: launch_gather<float, float>(c, key, value, k_cache, v_cache, slot_mapping, num_tokens, th, stream); break;
    case PB_KV_F16: launch_gather<__half, __half>(c, key, value, k_cache, v_cache, slot_mapping, num_tokens, th, stream); break;
    case PB_KV_BF16: launch_gather<__nv_bfloat16, __nv_bfloat16>(c, key, value, k_cache, v_cache, slot_mapping, num_tokens, th, stream); break;
    case PB_KV_FP8_E4M3:
        if (half) launch_gather<__half, __nv_fp8_e4m3>(c, key, value, k_cache, v_cache, slot_mapping, num_tokens, th, stream);
        else launch_gather<__nv_bfloat16, __nv_fp8_e4m3>(c, key, value, k_cache, v_cache, slot_mapping, num_tokens, th, stream);
        break;
    case PB_KV_FP8_E5M2:
        if (half) launch_gather<__half, __nv_fp8_e5m2>(c, key, value, k_cache, v_cache, slot_mapping, num_tokens, th, stream);
        else launch_gather<__nv_bfloat16, __nv_fp8_e5m2>(c, key, value, k_cache, v_cache, slot_mapping, num_tokens, th, stream);
        break;
    }
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_copy_blocks_cuda(void *const *k_caches, void *const *v_caches,
                                         int32_t num_layers, const pb_block_pair *pairs_dev,
                                         int32_t num_pairs, size_t block_bytes,
                                         struct CUstream_st *stream) {
    if (num_layers < 0 || num_layers > PB_CACHE_MAX_LAYERS || num_pairs < 0 || block_bytes % 16) {
        pb_log_error("copy_blocks: need 0 <= num_layers <= %d, num_pairs >= 0, block_bytes %% 16 == 0",
                     PB_CACHE_MAX_LAYERS);
        return PB_ERR_INVALID;
    }
    if (num_layers == 0 || num_pairs == 0) return PB_OK;
    LayerPtrs lp;
    for (int l = 0; l < PB_CACHE_MAX_LAYERS; l++) {
        lp.t[0][l] = l < num_layers ? (uint4 *)k_caches[l] : nullptr;
        lp.t[1][l] = l < num_layers ? (uint4 *)v_caches[l] : nullptr;
        if (l < num_layers && (!aligned16(k_caches[l]) || !aligned16(v_caches[l]))) {
            pb_log_error("copy_blocks: layer %d base pointers not 16-byte aligned", l);
            return PB_ERR_INVALID;
        }
    }
    dim3 grid(num_pairs, num_layers, 2);
    copy_blocks_kernel<<<grid, 256, 0, stream>>>(lp, pairs_dev, (int64_t)(block_bytes / 16));
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" int pb_swap_has_batch_api(void) {   /* (and a non-NULL stream) */
#if CUDART_VERSION >= 12080
    return 1;
#else
    return 0;
#endif
}

extern "C" pb_status pb_swap_blocks_cuda(void *const *dst_tensors, const void *const *src_tensors,
                                         int32_t num_tensors, const pb_block_pair *pairs,
                                         int32_t num_pairs, size_t block_bytes, pb_swap_mode mode,
                                         struct CUstream_st *stream) {
    if (num_tensors < 0 || num_pairs < 0) return PB_ERR_INVALID;
    if (num_tensors == 0 || num_pairs == 0) return PB_OK;
    for (int32_t i = 0; i < num_pairs; i++)
        if (pairs[i].src < 0 || pairs[i].dst < 0) {
            pb_log_error("swap_blocks: pair %d (%d -> %d) has a negative block", i, pairs[i].src, pairs[i].dst);
            return PB_ERR_INVALID;
        }
    if (mode == PB_SWAP_PER_BLOCK) {           /* vLLM 2023: one call per block per tensor */
        for (int32_t t = 0; t < num_tensors; t++)
            for (int32_t i = 0; i < num_pairs; i++)
                PBK_TRY(cudaMemcpyAsync((char *)dst_tensors[t] + (size_t)pairs[i].dst * block_bytes,
                                        (const char *)src_tensors[t] + (size_t)pairs[i].src * block_bytes,
                                        block_bytes, cudaMemcpyDefault, stream));
        return PB_OK;
    }
    pb_copy_run *runs = (pb_copy_run *)malloc(sizeof(pb_copy_run) * (size_t)num_pairs);
    if (!runs) return PB_ERR_NOMEM;
    const int32_t nr = pb_swap_merge_runs(pairs, num_pairs, block_bytes, runs);
    cudaError_t e = cudaSuccess;
#if CUDART_VERSION >= 12080
    /* the batch API does not take the legacy NULL stream: fall back to the loop */
    if (stream != nullptr) {
        const size_t n = (size_t)nr * (size_t)num_tensors;
        void **dsts = (void **)malloc(n * sizeof(void *));
        void **srcs = (void **)malloc(n * sizeof(void *));
        size_t *sizes = (size_t *)malloc(n * sizeof(size_t));
        if (!dsts || !srcs || !sizes) { free(dsts); free(srcs); free(sizes); free(runs); return PB_ERR_NOMEM; }
        size_t k = 0;
        for (int32_t t = 0; t < num_tensors; t++)
            for (int32_t r = 0; r < nr; r++, k++) {
                dsts[k] = (char *)dst_tensors[t] + runs[r].dst_off;
                srcs[k] = (void *)((const char *)src_tensors[t] + runs[r].src_off);
                sizes[k] = (size_t)runs[r].bytes;
            }
        cudaMemcpyAttributes attr;
        memset(&attr, 0, sizeof(attr));
        attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        size_t attr_idx = 0;
#if CUDART_VERSION >= 13000
        e = cudaMemcpyBatchAsync(dsts, srcs, sizes, n, &attr, &attr_idx, 1, stream);
#else
        size_t fail_idx = 0;
        e = cudaMemcpyBatchAsync(dsts, srcs, sizes, n, &attr, &attr_idx, 1, &fail_idx, stream);
#endif
        free(dsts); free(srcs); free(sizes);
        if (e == cudaSuccess) {
            free(runs);
            return PB_OK;
        }
        /* refused (driver, memory kind or attributes): the same runs one copy each */
        static int said;
        if (!said++)
            pb_log_info("swap_blocks: cudaMemcpyBatchAsync: %s; copying run by run", cudaGetErrorString(e));
        cudaGetLastError();
        e = cudaSuccess;
    }
#endif
    for (int32_t t = 0; t < num_tensors && e == cudaSuccess; t++)
        for (int32_t r = 0; r < nr && e == cudaSuccess; r++)
            e = cudaMemcpyAsync((char *)dst_tensors[t] + runs[r].dst_off,
                                (const char *)src_tensors[t] + runs[r].src_off,
                                (size_t)runs[r].bytes, cudaMemcpyDefault, stream);
    free(runs);
    PBK_TRY(e);
    return PB_OK;
}
