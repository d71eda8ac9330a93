/* layers.h -- the non-attention layers of a decoder (OPT, LLaMA): GEMM, LayerNorm,
 * RMSNorm, bias + ReLU, SiLU-gated FFN, rotary embedding, embedding lookup (+ OPT's
 * learned positions), residual add, row gather, the seeded weight generator, and
 * next-token candidates (greedy top-n with log-probabilities, or seeded top-p
 * sampling with the Gumbel-top-n trick).
 *
 * Each layer has a plain C11 reference (layers_ref.c, fp32 in and out, used by the
 * CPU tiny model and as the oracle of the device tests) and, when PB_HAVE_CUDA, a
 * CUDA launcher (layers.cu): activations fp16, accumulation fp32, logits fp32, GEMM
 * through cuBLAS (fp16 in, fp32 accumulate).  The references are batch-invariant:
 * an output row depends only on its own input row (fixed summation order), which the
 * token-equivalence tests of the CPU model rely on.
 *
 * Conventions (llm.c / PyTorch Linear):
 *   a linear layer's weight W is row-major [N out, K in]; out[M,N] = in[M,K] W^T + b
 *   "fused QKV" rows are [q (H*D) | k (Hkv*D) | v (Hkv*D)]
 *   "gate_up" rows are [gate (F) | up (F)]; silu_mul gives silu(gate) * up
 *   rotary: GPT-NeoX / HF LLaMA style (rotate halves), inv_freq = theta^(-2i/D)
 *
 * Randomness: weights and sampling noise come from pb_hash_uniform(), a counter-based
 * hash (splitmix64 finaliser), so host and device produce identical values without
 * sharing generator state: weight element (tensor t, flat index i of the FULL
 * unsharded tensor) = scale * (2u - 1), u = pb_hash_uniform(seed, t, i).  A tensor-
 * parallel shard generates exactly its slice of the full model.  The per-row sampling
 * key is derived by the caller from pb_rng (seed, request, sequence, position).
 *
 * C11 and C++17 clean (included by .cu files). */
#ifndef PB_LAYERS_H
#define PB_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "pb.h"   /* pb_status, PB_RESTRICT */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__)
#  define PB_HD __host__ __device__
#else
#  define PB_HD
#endif

/* ---- counter-based random numbers (host and device) ---- */

static inline PB_HD uint64_t pb_hash_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
/* Uniform in (0, 1) with 24 random bits, a pure function of (seed, stream, i). */
static inline PB_HD float pb_hash_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
    uint64_t h = pb_hash_mix(seed ^ pb_hash_mix(stream * 0x9e3779b97f4a7c15ULL + i + 1));
    return ((float)(h >> 40) + 0.5f) * (1.0f / 16777216.0f);
}

/* ---- sampling parameters and candidates ---- */

#define PB_LAYERS_MAX_TOP 16        /* == PB_MAX_TOP of executor.h */

typedef struct {
    float temperature;   /* <= 0: greedy (top-n by logit); > 0: sampling           */
    float top_p;         /* nucleus mass in (0, 1]; 1 keeps the whole vocabulary   */
} pb_sample_params;

/* ---- C references (host memory, fp32) ---- */

/* out[M,N] = in[M,K] W[N,K]^T (+ bias[N] if not NULL).  out must not alias in. */
void pb_gemm_ref(float *PB_RESTRICT out, const float *PB_RESTRICT in, const float *PB_RESTRICT w,
                 const float *bias, int32_t M, int32_t N, int32_t K);
/* x[M,N] += bias[N] (bias may be NULL), then ReLU if relu != 0. */
void pb_bias_act_ref(float *x, const float *bias, int32_t M, int32_t N, int relu);
/* out[M,N] = (in - mean) / sqrt(var + eps) * gamma + beta, per row (biased var). */
void pb_layernorm_ref(float *out, const float *in, const float *gamma, const float *beta,
                      int32_t M, int32_t N, float eps);
/* out[M,N] = in / sqrt(mean(in^2) + eps) * gamma, per row. */
void pb_rmsnorm_ref(float *out, const float *in, const float *gamma, int32_t M, int32_t N,
                    float eps);
/* out[M,F] = silu(gu[:, :F]) * gu[:, F:2F];  gu [M, 2F]. */
void pb_silu_mul_ref(float *PB_RESTRICT out, const float *PB_RESTRICT gu, int32_t M, int32_t F);
/* Rotary embedding in place on the q and k heads of a fused QKV buffer:
 * qkv [T, stride]; q heads at column 0 (n_q_heads * D), k heads at column
 * n_q_heads * D (n_k_heads * D); positions [T].  Pairs (j, j + D/2) of each head
 * rotate by angle pos * theta^(-2j/D), j < D/2. */
void pb_rope_ref(float *qkv, int32_t stride, const int32_t *positions, int32_t T,
                 int32_t n_q_heads, int32_t n_k_heads, int32_t head_size, float theta);
/* out[T,h] = wte[tokens[t], :] (+ wpe[positions[t] + pos_offset, :] if wpe != NULL). */
void pb_embed_ref(float *PB_RESTRICT out, const float *wte, const int32_t *tokens,
                  const float *wpe, const int32_t *positions, int32_t pos_offset, int32_t T,
                  int32_t h);
/* x[n] += y[n]. */
void pb_add_ref(float *PB_RESTRICT x, const float *PB_RESTRICT y, int64_t n);
/* out[i, :] = in[rows[i], :] for i < n_rows (row width h). */
void pb_gather_rows_ref(float *PB_RESTRICT out, const float *PB_RESTRICT in, const int32_t *rows,
                        int32_t n_rows, int32_t h);
/* dst[r, c] (rows x cols, row-major) = scale * (2u - 1) with
 * u = pb_hash_uniform(seed, tensor, (row0 + r) * full_cols + col0 + c). */
void pb_weight_init_ref(float *dst, int32_t rows, int32_t cols, uint64_t seed, uint64_t tensor,
                        int64_t row0, int64_t col0, int64_t full_cols, float scale);
void pb_fill_ref(float *dst, int64_t n, float v);

/* Next-token candidates from logits [S, V] (fp32).
 *   greedy (sp->temperature <= 0): the n_top largest logits (ties: lower id first),
 *     logprob = logit - logsumexp(row);
 *   sampling: s = logit / T, logprob = s - logsumexp(s); the nucleus is the set of
 *     tokens with p >= p*, p* = the probability of the k-th most likely token, k the
 *     smallest count whose cumulative mass reaches top_p (ties at p* all kept); the
 *     candidates are the n_top nucleus tokens with the largest s + g, g Gumbel(0,1)
 *     noise from pb_hash_uniform(keys[row], 0, token): candidate 0 is an exact sample
 *     of the renormalised nucleus, candidates 1.. are further samples without
 *     replacement (fewer than n_top if the nucleus is smaller).
 * tokens/logprobs [S, n_top] (row-major); n_out[S] how many were written per row.
 * n_top in 1..PB_LAYERS_MAX_TOP.  Returns PB_ERR_INVALID on bad arguments. */
pb_status pb_candidates_ref(const float *logits, int32_t S, int32_t V, int32_t n_top,
                            const pb_sample_params *sp, const uint64_t *keys,
                            int32_t *tokens, float *logprobs, int32_t *n_out);

/* ---- CUDA launchers (device pointers, fp16 activations; asynchronous on stream) ----
 * Same contracts as the references.  "half" buffers are IEEE fp16 (uint16_t bits).
 * Every launcher checks cudaGetLastError() after its launch (PB_ERR_CUDA). */
#ifdef PB_HAVE_CUDA
struct CUstream_st;      /* == cudaStream_t */
struct cublasContext;    /* == cublasHandle_t */

/* Binds cuBLAS handle h to `stream` and gives it its own workspace (cublasSetWorkspace):
 * PB_CUBLAS_WORKSPACE_MIB MiB when that is set (0: cuBLAS's default pool), else the size
 * cuBLAS's documentation recommends, 32 MiB on compute capability >= 9.0 and 4 MiB below.
 * *ws receives the buffer (cudaFree it after cublasDestroy; NULL with the default pool).
 * On an H200 its GEMM times equal the default pool's (results/gpu/NVIDIA-H200/README.md);
 * it follows cuBLAS's recommendation, not a measured gain.  pb_gemm_cuda keeps the
 * binding: it re-binds only when given another stream (cublasSetStream resets the
 * workspace to the default pool). */
pb_status pb_cublas_setup(struct cublasContext *h, struct CUstream_st *stream, void **ws);

/* out[M,N] = in[M,K] W[N,K]^T: fp16 in, fp32 accumulate (cublasGemmEx,
 * CUBLAS_COMPUTE_32F); out is fp16, or fp32 when out_f32 != 0.  The handle is bound to
 * `stream` (pb_cublas_setup's workspace is kept when it already is). */
pb_status pb_gemm_cuda(struct cublasContext *h, void *out, int out_f32, const void *in,
                       const void *w, int32_t M, int32_t N, int32_t K, struct CUstream_st *stream);
pb_status pb_bias_act_cuda(void *x, const void *bias, int32_t M, int32_t N, int relu,
                           struct CUstream_st *stream);
pb_status pb_layernorm_cuda(void *out, const void *in, const void *gamma, const void *beta,
                            int32_t M, int32_t N, float eps, struct CUstream_st *stream);
pb_status pb_rmsnorm_cuda(void *out, const void *in, const void *gamma, int32_t M, int32_t N,
                          float eps, struct CUstream_st *stream);
pb_status pb_silu_mul_cuda(void *out, const void *gu, int32_t M, int32_t F,
                           struct CUstream_st *stream);
pb_status pb_rope_cuda(void *qkv, int32_t stride, const int32_t *positions, int32_t T,
                       int32_t n_q_heads, int32_t n_k_heads, int32_t head_size, float theta,
                       struct CUstream_st *stream);
pb_status pb_embed_cuda(void *out, const void *wte, const int32_t *tokens, const void *wpe,
                        const int32_t *positions, int32_t pos_offset, int32_t T, int32_t h,
                        struct CUstream_st *stream);
pb_status pb_add_cuda(void *x, const void *y, int64_t n, struct CUstream_st *stream);
pb_status pb_gather_rows_cuda(void *out, const void *in, const int32_t *rows, int32_t n_rows,
                              int32_t h, struct CUstream_st *stream);
/* fp16 weights generated on the device (vLLM's "dummy" load format). */
pb_status pb_weight_init_cuda(void *dst, int32_t rows, int32_t cols, uint64_t seed,
                              uint64_t tensor, int64_t row0, int64_t col0, int64_t full_cols,
                              float scale, struct CUstream_st *stream);
pb_status pb_fill_cuda(void *dst, int64_t n, float v, struct CUstream_st *stream);
/* logits fp32 [S, V]; keys [S] (device); tokens/logprobs [S, n_top], n_out [S]
 * (device).  One CTA per row; top-p threshold by bisection over the float bit
 * patterns (exact set up to summation order). */
pb_status pb_candidates_cuda(const float *logits, int32_t S, int32_t V, int32_t n_top,
                             pb_sample_params sp, const uint64_t *keys, int32_t *tokens,
                             float *logprobs, int32_t *n_out, struct CUstream_st *stream);
#endif /* PB_HAVE_CUDA */

#ifdef __cplusplus
}
#endif
#endif /* PB_LAYERS_H */
