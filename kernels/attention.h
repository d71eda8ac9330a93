/* attention.h -- attention kernels over the paged KV cache (PagedAttention), the
 * FasterTransformer-style contiguous baseline, and causal variable-length prefill.
 * Each has a plain C11 reference (attention_ref.c, fp32 math on any pb_kv_dtype)
 * and a CUDA launcher (attention.cu, declared only when PB_HAVE_CUDA).
 *
 * Layouts (one layer; x = 16 / sizeof(elem): 4 fp32, 8 fp16/bf16; vLLM §1.1):
 *   paged K cache   [num_blocks, num_kv_heads, head_size/x, block_size, x]
 *   paged V cache   [num_blocks, num_kv_heads, head_size, block_size]
 *   contiguous K    [num_kv_heads, head_size/x, num_slots, x]
 *   contiguous V    [num_kv_heads, head_size, num_slots]
 * The contiguous layout is the FasterTransformer one ([B, H, Dh/x, L, x]) with B*L
 * merged into num_slots, so that a sequence is addressed by its first slot
 * (kv_offset, as the contiguous managers hand it out).  It is exactly a paged
 * cache with num_blocks = 1 and block_size = num_slots, so reshape_and_cache
 * (cache_ops.h) fills it with slot = kv_offset + position.
 *
 * Decode (one query per sequence): out[s, h, :] = softmax(scale * q[s,h]·K^T) V over
 * tokens 0..context_lens[s]-1 of sequence s, with KV head h / (num_heads /
 * num_kv_heads) (GQA/MQA).  context_lens[s] == 0 gives zeros.
 *
 * FP8 KV cache (kv_cache_dtype fp8_e4m3 / fp8_e5m2, kv_dtype.h): q and out keep
 * dtype, the caches hold fp8(x / kv_scale) (x = 16) and are read as
 * fp8 * kv_scale.  The CUDA kernels fold the scale out of the loops (q is scaled
 * by softmax scale * kv_scale before q.K, the output by kv_scale after logits.V);
 * the references dequantize element by element.  Accuracy against the same
 * inputs through an fp16 cache: pb_attn_fp8_bound (kcheck.h).
 *
 * GPU support: head_size 64, 80, 96, 128 (others -> PB_ERR_UNSUPPORTED); fp32,
 * fp16, bf16; fp8 caches (paged layout only) with fp16 or bf16 q/out;
 * block_size a power of two 1..256 (others -> PB_ERR_UNSUPPORTED);
 * q, out and the caches 16-byte aligned, q_stride % x == 0.  Contiguous layout:
 * any kv_offsets; num_slots % x == 0 keeps V reads 16 bytes wide (otherwise a
 * slower scalar-V variant runs).
 * The references accept any head_size that is a multiple of x and any block size.
 * Block sizes: a warp reads 16 consecutive tokens per q.K step (one whole block
 * at block size 16, the paper's "warp per block"); tokens of small blocks (1..8)
 * come from different blocks in the same step (16-byte K chunks keep every
 * access sector-sized), large blocks (32..256) take several steps.  The block
 * ids of a CTA's token range are prefetched into shared memory first.
 *
 * Algorithms: V1 = one CTA per (sequence, head), logits of the whole context in
 * shared memory; V2 = split-K: the context is cut into PB_ATTN_PARTITION-token
 * partitions, one CTA each, then a reduce kernel merges them (flash-decoding).
 * PB_ATTN_AUTO picks with pb_paged_attention_choose().
 *
 * C11 and C++17 clean (included by .cu files). */
#ifndef PB_ATTENTION_H
#define PB_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "pb.h"        /* pb_status, PB_RESTRICT */
#include "kv_dtype.h"  /* pb_kv_dtype */

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;    /* == cudaStream_t (NULL = legacy default stream) */

#define PB_ATTN_PARTITION       512   /* V2 tokens per partition (vLLM _PARTITION_SIZE) */
#define PB_ATTN_V1_MAX_CONTEXT  8192  /* above this V1's shared-memory logits are not used */

typedef enum { PB_ATTN_AUTO = 0, PB_ATTN_V1 = 1, PB_ATTN_V2 = 2 } pb_attn_algo;

/* Shape of a decode attention call (paged or contiguous). */
typedef struct {
    int32_t num_seqs;           /* queries: one per sequence                          */
    int32_t num_heads;          /* query heads                                        */
    int32_t num_kv_heads;       /* KV heads; num_heads % num_kv_heads == 0            */
    int32_t head_size;          /* multiple of x                                      */
    int32_t block_size;         /* paged: tokens per block (ignored by contiguous)    */
    int32_t max_blocks_per_seq; /* paged: row stride of block_tables                  */
    int32_t num_blocks;         /* paged: blocks in the cache (references check ids
                                   against it; 0 = unchecked)                         */
    int64_t num_slots;          /* contiguous: token slots per head (ignored by paged)*/
    int32_t max_context_len;    /* >= every context_lens[s]; sizes V1/V2 launches     */
    int32_t q_stride;           /* elements between sequences in q (fused QKV views);
                                   0 means num_heads * head_size                      */
    float scale;                /* softmax scale, usually 1 / sqrt(head_size)         */
    pb_kv_dtype dtype;          /* q and out (and the caches when kv_cache_dtype is
                                   auto)                                              */
    pb_kv_cache_dtype kv_cache_dtype;  /* auto (0), or fp8 caches                     */
    float kv_scale;             /* fp8 caches: per-tensor scale, finite and > 0       */
} pb_attn_params;

/* The caches' element type: dtype, or the fp8 format of kv_cache_dtype. */
pb_kv_dtype pb_attn_cache_elem(const pb_attn_params *p);

/* Argument checks shared by references and launchers (PB_OK / PB_ERR_INVALID;
 * the message goes to pb_log_error). */
pb_status pb_attn_params_check(const pb_attn_params *p, int paged);

/* V1 or V2 for this call on a GPU with num_sms SMs:
 *   V2 if max_context_len > PB_ATTN_V1_MAX_CONTEXT; V1 if the context fits one
 *   partition; otherwise the one whose grid fills the GPU's CTA slots (4 per SM)
 *   better, counting whole waves (V2 discounted 5% for its reduce): e.g. 40 heads
 *   on 132 SMs: 64 x 1K -> V1 (4.9 waves), 16 x 4K -> V2 (1.2 waves for V1),
 *   1 x 1K -> V2. */
pb_attn_algo pb_paged_attention_choose(const pb_attn_params *p, int32_t num_sms);

/* Device scratch V2 needs (exp_sums, max_logits, tmp_out, all fp32):
 *   num_seqs * num_heads * P * (2 + head_size) * 4 bytes, P = ceil(max_ctx / 512).
 * V1 needs none.  Pass at least this many bytes as workspace when V2 can be chosen. */
size_t pb_paged_attention_workspace_bytes(const pb_attn_params *p);

/* ---- C references (host memory) ---- */

/* out          [num_seqs, num_heads, head_size]
 * q            [num_seqs, q_stride] (head h at h*head_size)
 * k_cache      [num_blocks, num_kv_heads, head_size/x, block_size, x] (x of the cache)
 * v_cache      [num_blocks, num_kv_heads, head_size, block_size]
 * block_tables [num_seqs, max_blocks_per_seq] physical block ids (>= 0 where used)
 * context_lens [num_seqs]
 * Walks the block table token by token (vLLM ref_single_query_cached_kv_attention). */
pb_status pb_paged_attention_ref(const pb_attn_params *p, void *PB_RESTRICT out,
                                 const void *PB_RESTRICT q, const void *k_cache,
                                 const void *v_cache, const int32_t *block_tables,
                                 const int32_t *context_lens);

/* Contiguous (FT-style) layout.
 * k_cache      [num_kv_heads, head_size/x, num_slots, x]
 * v_cache      [num_kv_heads, head_size, num_slots]
 * kv_offsets   [num_seqs] first slot of each sequence (tokens at kv_offset + t) */
pb_status pb_contig_attention_ref(const pb_attn_params *p, void *PB_RESTRICT out,
                                  const void *PB_RESTRICT q, const void *k_cache,
                                  const void *v_cache, const int64_t *kv_offsets,
                                  const int32_t *context_lens);

/* Causal variable-length prefill over contiguous token-major Q/K/V (the prompt's
 * own K/V, before or independent of the cache).  Sequence s has q_len =
 * cu_seqlens_q[s+1]-cu_seqlens_q[s] queries and k_len = cu_seqlens_k[s+1] -
 * cu_seqlens_k[s] >= q_len keys; query i attends keys j <= i + (k_len - q_len)
 * (k_len > q_len: a cached prefix, gathered with pb_gather_cached_kv_*). */
typedef struct {
    int32_t num_seqs;
    int32_t num_heads, num_kv_heads, head_size;
    int32_t max_q_len, max_k_len;   /* >= every sequence's q_len / k_len            */
    int32_t q_stride;               /* elements between tokens in q; 0 = H*D        */
    int32_t k_stride, v_stride;     /* elements between tokens in k / v; 0 = Hkv*D  */
    float scale;
    pb_kv_dtype dtype;
} pb_prefill_params;

pb_status pb_prefill_params_check(const pb_prefill_params *p);

/* out          [total_q, num_heads, head_size]   (total_q = cu_seqlens_q[num_seqs])
 * q            [total_q, q_stride]
 * k, v         [total_k, k_stride] / [total_k, v_stride]
 * cu_seqlens_q [num_seqs + 1], cu_seqlens_k [num_seqs + 1] prefix sums from 0 */
pb_status pb_prefill_attention_ref(const pb_prefill_params *p, void *PB_RESTRICT out,
                                   const void *q, const void *k, const void *v,
                                   const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k);

#ifdef PB_HAVE_CUDA
/* ---- CUDA launchers (all pointers are device pointers; asynchronous on stream) ----
 * Same shapes and contracts as the references.  algo PB_ATTN_AUTO chooses with the
 * current device's SM count.  workspace: >= pb_paged_attention_workspace_bytes(p)
 * device bytes when V2 may run (NULL/0 is fine when it cannot; then AUTO uses V1 if
 * max_context_len <= PB_ATTN_V1_MAX_CONTEXT, else PB_ERR_INVALID).
 * Returns PB_ERR_UNSUPPORTED for shapes the kernels do not cover, PB_ERR_CUDA on a
 * launch error (checked with cudaGetLastError right after the launch). */
pb_status pb_paged_attention_cuda(const pb_attn_params *p, pb_attn_algo algo,
                                  void *out, const void *q, const void *k_cache,
                                  const void *v_cache, const int32_t *block_tables,
                                  const int32_t *context_lens, void *workspace,
                                  size_t workspace_bytes, struct CUstream_st *stream);

pb_status pb_contig_attention_cuda(const pb_attn_params *p, pb_attn_algo algo,
                                   void *out, const void *q, const void *k_cache,
                                   const void *v_cache, const int64_t *kv_offsets,
                                   const int32_t *context_lens, void *workspace,
                                   size_t workspace_bytes, struct CUstream_st *stream);

/* Tiled causal prefill (fp32 accumulation in shared-memory tiles; no tensor cores). */
pb_status pb_prefill_attention_cuda(const pb_prefill_params *p, void *out, const void *q,
                                    const void *k, const void *v,
                                    const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k,
                                    struct CUstream_st *stream);
#endif /* PB_HAVE_CUDA */

#ifdef __cplusplus
}
#endif
#endif /* PB_ATTENTION_H */
