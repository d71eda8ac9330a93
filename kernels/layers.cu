/* layers.cu -- CUDA launchers of the decoder layers (see layers.h for contracts).
 *
 * Activations are fp16 (__half), every reduction and every GEMM accumulates in fp32,
 * logits are fp32.  GEMMs go through cuBLAS (cublasGemmEx, fp16 in, fp32 compute);
 * the rest are simple memory-bound kernels: norms one CTA per row, element-wise
 * kernels grid-stride, candidates one CTA per row.  The C references are in
 * layers_ref.c; tests/kernels/test_gpu_layers.c compares the two on a device. */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>

#include "kernel_common.cuh"
#include "layers.h"

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float h2f(__half v) { return __half2float(v); }
__device__ __forceinline__ __half f2h(float v) { return __float2half_rn(v); }

/* block-wide sum / max; every thread gets the result. red: kThreads/32 floats. */
__device__ float block_sum(float v, float *red) {
    v = pbk::warp_sum(v);
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    __syncthreads();
    if (l == 0) red[w] = v;
    __syncthreads();
    float t = 0.0f;
    for (int i = 0; i < (int)(blockDim.x / 32); i++) t += red[i];
    return t;
}
__device__ float block_max(float v, float *red) {
    v = pbk::warp_max(v);
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    __syncthreads();
    if (l == 0) red[w] = v;
    __syncthreads();
    float t = -INFINITY;
    for (int i = 0; i < (int)(blockDim.x / 32); i++) t = fmaxf(t, red[i]);
    return t;
}

/* (value, id) ordering of the candidates: larger value first, then lower id. */
__device__ __forceinline__ bool before(float v, int id, float w, int jd) {
    return v > w || (v == w && id < jd);
}
__device__ void block_best(float &v, int &id, float *rv, int *ri) {
    for (int m = 16; m >= 1; m >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, m);
        int oi = __shfl_xor_sync(0xffffffffu, id, m);
        if (before(ov, oi, v, id)) { v = ov; id = oi; }
    }
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    __syncthreads();
    if (l == 0) { rv[w] = v; ri[w] = id; }
    __syncthreads();
    v = rv[0];
    id = ri[0];
    for (int i = 1; i < (int)(blockDim.x / 32); i++)
        if (before(rv[i], ri[i], v, id)) { v = rv[i]; id = ri[i]; }
}

int grid_for(int64_t n) {
    int64_t b = (n + kThreads - 1) / kThreads;
    return (int)(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);
}

/* ---- kernels ---- */

__global__ void bias_act_k(__half *x, const __half *bias, int64_t M, int N, int relu) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < M * N;
         i += (int64_t)gridDim.x * blockDim.x) {
        float v = h2f(x[i]) + (bias ? h2f(bias[i % N]) : 0.0f);
        x[i] = f2h(relu && v < 0.0f ? 0.0f : v);
    }
}

__global__ void layernorm_k(__half *out, const __half *in, const __half *g, const __half *b,
                            int N, float eps) {
    __shared__ float red[kThreads / 32];
    const __half *x = in + (size_t)blockIdx.x * N;
    __half *o = out + (size_t)blockIdx.x * N;
    float s = 0.0f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) s += h2f(x[i]);
    float mean = block_sum(s, red) / (float)N;
    float v = 0.0f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) { float d = h2f(x[i]) - mean; v += d * d; }
    float rstd = rsqrtf(block_sum(v, red) / (float)N + eps);
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        o[i] = f2h((h2f(x[i]) - mean) * rstd * h2f(g[i]) + (b ? h2f(b[i]) : 0.0f));
}

__global__ void rmsnorm_k(__half *out, const __half *in, const __half *g, int N, float eps) {
    __shared__ float red[kThreads / 32];
    const __half *x = in + (size_t)blockIdx.x * N;
    __half *o = out + (size_t)blockIdx.x * N;
    float s = 0.0f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) { float t = h2f(x[i]); s += t * t; }
    float rstd = rsqrtf(block_sum(s, red) / (float)N + eps);
    for (int i = threadIdx.x; i < N; i += blockDim.x) o[i] = f2h(h2f(x[i]) * rstd * h2f(g[i]));
}

__global__ void silu_mul_k(__half *out, const __half *gu, int64_t M, int F) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < M * F;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t m = i / F, f = i % F;
        float g = h2f(gu[m * 2 * F + f]), u = h2f(gu[m * 2 * F + F + f]);
        out[i] = f2h(g / (1.0f + __expf(-g)) * u);
    }
}

__global__ void rope_k(__half *qkv, int stride, const int32_t *pos, int64_t T, int n_heads,
                       int D, float theta) {
    int half = D / 2;
    int64_t n = T * n_heads * half;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int j = (int)(i % half);
        int64_t th = i / half;
        int hh = (int)(th % n_heads);
        int64_t t = th / n_heads;
        __half *v = qkv + t * stride + (int64_t)hh * D;
        float inv_freq = powf(theta, -2.0f * (float)j / (float)D);
        float s, c;
        sincosf((float)pos[t] * inv_freq, &s, &c);
        float a = h2f(v[j]), b = h2f(v[j + half]);
        v[j] = f2h(a * c - b * s);
        v[j + half] = f2h(b * c + a * s);
    }
}

__global__ void embed_k(__half *out, const __half *wte, const int32_t *tok, const __half *wpe,
                        const int32_t *pos, int pos_offset, int h) {
    int64_t t = blockIdx.x;
    const __half *e = wte + (int64_t)tok[t] * h;
    const __half *p = wpe ? wpe + (int64_t)(pos[t] + pos_offset) * h : nullptr;
    for (int i = threadIdx.x; i < h; i += blockDim.x)
        out[t * h + i] = p ? f2h(h2f(e[i]) + h2f(p[i])) : e[i];
}

__global__ void add_k(__half *x, const __half *y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        x[i] = f2h(h2f(x[i]) + h2f(y[i]));
}

__global__ void gather_rows_k(__half *out, const __half *in, const int32_t *rows, int h) {
    const __half *src = in + (int64_t)rows[blockIdx.x] * h;
    for (int i = threadIdx.x; i < h; i += blockDim.x) out[(int64_t)blockIdx.x * h + i] = src[i];
}

__global__ void weight_init_k(__half *dst, int rows, int cols, uint64_t seed, uint64_t tensor,
                              int64_t row0, int64_t col0, int64_t full_cols, float scale) {
    int64_t n = (int64_t)rows * cols;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / cols, c = i % cols;
        uint64_t idx = (uint64_t)((row0 + r) * full_cols + col0 + c);
        dst[i] = f2h(scale * (2.0f * pb_hash_uniform(seed, tensor, idx) - 1.0f));
    }
}

__global__ void fill_k(__half *dst, int64_t n, float v) {
    __half hv = f2h(v);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = hv;
}

/* One CTA per row: logsumexp, the top-p threshold (sampling), then n_top rounds of
 * "best (value, id) strictly after the previous pick" -- no exclusion list needed. */
__global__ void candidates_k(const float *logits, int V, int n_top, float temperature,
                             float top_p, const uint64_t *keys, int32_t *tokens, float *logprobs,
                             int32_t *n_out) {
    __shared__ float red[kThreads / 32];
    __shared__ float rv[kThreads / 32];
    __shared__ int ri[kThreads / 32];
    const float *z = logits + (int64_t)blockIdx.x * V;
    bool greedy = !(temperature > 0.0f);
    float inv_t = greedy ? 1.0f : 1.0f / temperature;
    uint64_t key = greedy ? 0 : keys[blockIdx.x];
    float m = -INFINITY;
    for (int i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, z[i] * inv_t);
    m = block_max(m, red);
    float s = 0.0f;
    for (int i = threadIdx.x; i < V; i += blockDim.x) s += __expf(z[i] * inv_t - m);
    float lse = m + logf(block_sum(s, red));
    float pcut = 0.0f;
    if (!greedy && top_p < 1.0f) {
        /* largest t with sum_{p_i >= t} p_i >= top_p, by bisection on float bits */
        unsigned lo = 0u, hi = __float_as_uint(1.0f) + 1u;   /* S(lo) >= top_p, S(hi) < */
        while (hi - lo > 1u) {
            unsigned mid = lo + (hi - lo) / 2u;
            float t = __uint_as_float(mid), acc = 0.0f;
            for (int i = threadIdx.x; i < V; i += blockDim.x) {
                float p = expf(z[i] * inv_t - lse);
                acc += p >= t ? p : 0.0f;
            }
            if (block_sum(acc, red) >= top_p) lo = mid; else hi = mid;
        }
        pcut = __uint_as_float(lo);
    }
    float pv = INFINITY;
    int pid = -1;
    int k = 0;
    for (; k < n_top; k++) {
        float bv = -INFINITY;
        int bid = 0x7fffffff;
        for (int i = threadIdx.x; i < V; i += blockDim.x) {
            float sc = z[i] * inv_t;
            if (!greedy) {
                if (expf(sc - lse) < pcut) continue;
                float u = pb_hash_uniform(key, 0, (uint64_t)i);
                sc += -logf(-logf(u));
            }
            if (before(pv, pid, sc, i) && before(sc, i, bv, bid)) { bv = sc; bid = i; }
        }
        block_best(bv, bid, rv, ri);
        if (bid == 0x7fffffff || bv == -INFINITY) break;
        if (threadIdx.x == 0) {
            tokens[(int64_t)blockIdx.x * n_top + k] = bid;
            logprobs[(int64_t)blockIdx.x * n_top + k] = z[bid] * inv_t - lse;
        }
        pv = bv;
        pid = bid;
    }
    if (threadIdx.x == 0) {
        n_out[blockIdx.x] = k;
        for (int j = k; j < n_top; j++) {
            tokens[(int64_t)blockIdx.x * n_top + j] = -1;
            logprobs[(int64_t)blockIdx.x * n_top + j] = -INFINITY;
        }
    }
}

}  // namespace

/* ---- launchers ---- */

extern "C" pb_status pb_cublas_setup(struct cublasContext *h, struct CUstream_st *stream, void **ws) {
    *ws = NULL;
    if (cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS) {
        pb_log_error("cublas: cublasSetStream failed");
        return PB_ERR_CUDA;
    }
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
        pb_log_error("cublas: cannot read the device's compute capability");
        return PB_ERR_CUDA;
    }
    long mib = major >= 9 ? 32 : 4;
    const char *env = getenv("PB_CUBLAS_WORKSPACE_MIB");
    if (env && *env) {
        char *end = NULL;
        mib = strtol(env, &end, 10);
        if (*end || mib < 0 || mib > 4096) {
            pb_log_error("PB_CUBLAS_WORKSPACE_MIB=%s: expected a whole number of MiB in 0..4096", env);
            return PB_ERR_INVALID;
        }
    }
    if (mib == 0) return PB_OK;
    const size_t bytes = (size_t)mib << 20;
    if (cudaMalloc(ws, bytes) != cudaSuccess) {
        *ws = NULL;
        pb_log_error("cublas: cannot allocate a %ld MiB workspace", mib);
        return PB_ERR_CUDA;
    }
    if (cublasSetWorkspace(h, *ws, bytes) != CUBLAS_STATUS_SUCCESS) {
        cudaFree(*ws);
        *ws = NULL;
        pb_log_error("cublas: cublasSetWorkspace(%ld MiB) failed", mib);
        return PB_ERR_CUDA;
    }
    return PB_OK;
}

extern "C" pb_status pb_gemm_cuda(struct cublasContext *h, void *out, int out_f32, const void *in,
                                  const void *w, int32_t M, int32_t N, int32_t K,
                                  struct CUstream_st *stream) {
    if (M <= 0 || N <= 0 || K <= 0) return M == 0 ? PB_OK : PB_ERR_INVALID;
    const float alpha = 1.0f, beta = 0.0f;
    cudaStream_t bound = NULL;
    cublasStatus_t st = cublasGetStream(h, &bound);
    if (st == CUBLAS_STATUS_SUCCESS && bound != stream) st = cublasSetStream(h, stream);
    if (st == CUBLAS_STATUS_SUCCESS)
        /* row-major out[M,N] = in[M,K] W[N,K]^T  ==  column-major out^T = W in^T */
        st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, w, CUDA_R_16F, K, in,
                          CUDA_R_16F, K, &beta, out, out_f32 ? CUDA_R_32F : CUDA_R_16F, N,
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
        pb_log_error("%s:%d: cublasGemmEx(M=%d, N=%d, K=%d): %s", __FILE__, __LINE__, M, N, K,
                     cublasGetStatusString(st));
        return PB_ERR_CUDA;
    }
    return PB_OK;
}

extern "C" pb_status pb_bias_act_cuda(void *x, const void *bias, int32_t M, int32_t N, int relu,
                                      struct CUstream_st *stream) {
    if ((int64_t)M * N == 0) return PB_OK;
    bias_act_k<<<grid_for((int64_t)M * N), kThreads, 0, stream>>>((__half *)x, (const __half *)bias,
                                                                  M, N, relu);
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_layernorm_cuda(void *out, const void *in, const void *gamma,
                                       const void *beta, int32_t M, int32_t N, float eps,
                                       struct CUstream_st *stream) {
    if (M == 0) return PB_OK;
    layernorm_k<<<M, kThreads, 0, stream>>>((__half *)out, (const __half *)in,
                                            (const __half *)gamma, (const __half *)beta, N, eps);
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_rmsnorm_cuda(void *out, const void *in, const void *gamma, int32_t M,
                                     int32_t N, float eps, struct CUstream_st *stream) {
    if (M == 0) return PB_OK;
    rmsnorm_k<<<M, kThreads, 0, stream>>>((__half *)out, (const __half *)in, (const __half *)gamma,
                                          N, eps);
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_silu_mul_cuda(void *out, const void *gu, int32_t M, int32_t F,
                                      struct CUstream_st *stream) {
    if ((int64_t)M * F == 0) return PB_OK;
    silu_mul_k<<<grid_for((int64_t)M * F), kThreads, 0, stream>>>((__half *)out,
                                                                  (const __half *)gu, M, F);
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_rope_cuda(void *qkv, int32_t stride, const int32_t *positions, int32_t T,
                                  int32_t n_q_heads, int32_t n_k_heads, int32_t head_size,
                                  float theta, struct CUstream_st *stream) {
    int64_t n = (int64_t)T * (n_q_heads + n_k_heads) * (head_size / 2);
    if (n == 0) return PB_OK;
    rope_k<<<grid_for(n), kThreads, 0, stream>>>((__half *)qkv, stride, positions, T,
                                                 n_q_heads + n_k_heads, head_size, theta);
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_embed_cuda(void *out, const void *wte, const int32_t *tokens,
                                   const void *wpe, const int32_t *positions, int32_t pos_offset,
                                   int32_t T, int32_t h, struct CUstream_st *stream) {
    if (T == 0) return PB_OK;
    embed_k<<<T, kThreads, 0, stream>>>((__half *)out, (const __half *)wte, tokens,
                                        (const __half *)wpe, positions, pos_offset, h);
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_add_cuda(void *x, const void *y, int64_t n, struct CUstream_st *stream) {
    if (n == 0) return PB_OK;
    add_k<<<grid_for(n), kThreads, 0, stream>>>((__half *)x, (const __half *)y, n);
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_gather_rows_cuda(void *out, const void *in, const int32_t *rows,
                                         int32_t n_rows, int32_t h, struct CUstream_st *stream) {
    if (n_rows == 0) return PB_OK;
    gather_rows_k<<<n_rows, kThreads, 0, stream>>>((__half *)out, (const __half *)in, rows, h);
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_weight_init_cuda(void *dst, int32_t rows, int32_t cols, uint64_t seed,
                                         uint64_t tensor, int64_t row0, int64_t col0,
                                         int64_t full_cols, float scale,
                                         struct CUstream_st *stream) {
    int64_t n = (int64_t)rows * cols;
    if (n == 0) return PB_OK;
    weight_init_k<<<grid_for(n), kThreads, 0, stream>>>((__half *)dst, rows, cols, seed, tensor,
                                                        row0, col0, full_cols, scale);
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_fill_cuda(void *dst, int64_t n, float v, struct CUstream_st *stream) {
    if (n == 0) return PB_OK;
    fill_k<<<grid_for(n), kThreads, 0, stream>>>((__half *)dst, n, v);
    PBK_LAUNCHED();
    return PB_OK;
}

extern "C" pb_status pb_candidates_cuda(const float *logits, int32_t S, int32_t V, int32_t n_top,
                                        pb_sample_params sp, const uint64_t *keys,
                                        int32_t *tokens, float *logprobs, int32_t *n_out,
                                        struct CUstream_st *stream) {
    if (V <= 0 || n_top < 1 || n_top > PB_LAYERS_MAX_TOP) return PB_ERR_INVALID;
    bool greedy = !(sp.temperature > 0.0f);
    if (!greedy && (!keys || !(sp.top_p > 0.0f) || sp.top_p > 1.0f)) return PB_ERR_INVALID;
    if (S == 0) return PB_OK;
    candidates_k<<<S, kThreads, 0, stream>>>(logits, V, n_top, sp.temperature, sp.top_p, keys,
                                             tokens, logprobs, n_out);
    PBK_LAUNCHED();
    return PB_OK;
}
