/* model.h -- one decoder forward pass (OPT and LLaMA) over a backend op table.
 *
 * The forward pass is written once (model.c) against pb_model_ops, a vtable of
 * layer operations on opaque buffers.  Two backends implement it:
 *   cpu   (model.c, pb_model_ops_cpu): fp32 host buffers, the C references of
 *         kernels/layers.h, kernels/attention.h and kernels/cache_ops.h;
 *   cuda  (executor_cuda.c): fp16 device buffers, cuBLAS GEMMs and our kernels.
 *
 * One step = one pb_batch: prompts (or recompute prefills, or prompts with a cached
 * shared prefix) and decode tokens of many sequences flattened into T token rows,
 * prefill rows first (vLLM 0.1 "mixed" batch).  Each layer writes the new tokens'
 * K/V into the KV cache through a slot mapping (reshape_and_cache), then attends
 * over the cache: paged (the batch carries block tables) or contiguous (the
 * FasterTransformer / Orca layout: block_table == NULL, tokens at kv_offset + pos).
 * The cpu backend computes every token row -- prefill or decode -- as a decode query
 * over the cache with its own context length (pos + 1), so a token's result does
 * not depend on how it was scheduled: prefill vs decode vs recompute, the batch it
 * ran in, the block size, paged vs contiguous -- all bit-identical (the basis of the
 * token-equivalence tests).  The cuda backend uses the prefill kernel for prompt rows
 * and the paged / contiguous decode kernel for decode rows.
 *
 * Architectures (pb_arch of spec.h), pre-norm decoder blocks:
 *   OPT:   x = wte[tok] + wpe[pos + 2]; LayerNorm; attention with biases; ReLU FFN
 *          (fc1, fc2 with biases); final LayerNorm; lm_head tied to wte.
 *   LLaMA: x = wte[tok]; RMSNorm; attention without biases, RoPE (theta 1e4) on q, k;
 *          SiLU-gated FFN (gate_up fused, down); final RMSNorm; separate lm_head.
 * Weights are generated from (seed, tensor, element) with pb_weight_init_* (the
 * "dummy" load format of vLLM), so the cpu and cuda backends hold the same model
 * (up to fp16 rounding) and a tensor-parallel shard holds its slice of it.
 *
 * Tensor parallelism (Megatron): rank r of tp holds heads [r*H/tp, (r+1)*H/tp) (and
 * the matching KV heads), FFN columns [r*F/tp, ...); out-projection and fc2/down are
 * row-parallel and followed by ops->allreduce; their biases are added by rank 0
 * only.  Embeddings and lm_head are replicated.
 *
 * Not thread-safe: one pb_lm per thread (one per GPU under tensor parallelism). */
#ifndef PB_MODEL_H
#define PB_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "pb.h"
#include "spec.h"        /* pb_model, pb_arch */
#include "executor.h"    /* pb_batch */
#include "kv_dtype.h"    /* pb_kv_dtype */
#include "attention.h"   /* pb_attn_params, pb_prefill_params */
#include "cache_ops.h"   /* pb_kv_cache_shape */
#include "layers.h"      /* pb_sample_params */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- forward-pass metadata (host), built from a pb_batch ---- */

/* Token rows: prefill sequences' new tokens first (rows [0, n_pf_tok)), then one row
 * per decode sequence (rows [n_pf_tok, T)).  All arrays are host memory owned by the
 * pb_fwd_meta (grown on demand, reused across steps). */
typedef struct {
    int32_t T;                  /* token rows this step                              */
    int32_t *tokens;            /* [T] input token ids                               */
    int32_t *positions;         /* [T] position of each row in its sequence          */
    int64_t *slots;             /* [T] KV slot each row writes (block*bs + off, or
                                   kv_offset + pos for contiguous)                   */
    int32_t *ctx_lens;          /* [T] keys each row attends to (= position + 1)     */
    int32_t *block_tables;      /* [T, max_blocks] paged (row = its sequence's table,
                                   zero-padded); NULL when contiguous                */
    int64_t *kv_offsets;        /* [T] contiguous: first slot of the row's sequence  */
    int32_t max_blocks;         /* row stride of block_tables (>= 1)                 */
    int32_t max_ctx;            /* max ctx_lens                                      */
    int32_t attn_max_ctx;       /* > 0: decode attention is launched for this longest
                                   context instead of the rows' (a CUDA graph's
                                   fixed launch, graph_pool.h); 0 from the build     */
    bool paged;
    /* prefill sequences (the cuda backend's prefill kernel) */
    int32_t n_pf_seqs, n_pf_tok;
    int32_t *cu_q;              /* [n_pf_seqs + 1] query row prefix sums             */
    int32_t *cu_k;              /* [n_pf_seqs + 1] key prefix sums (context lengths) */
    int64_t *pf_slots;          /* [cu_k[n_pf_seqs]] slots of positions 0..ctx-1     */
    int32_t max_q, max_k;
    bool pf_cached;             /* some prefill sequence has n_cached > 0            */
    /* sampled sequences */
    int32_t n_sample;
    int32_t *sample_rows;       /* [n_sample] row of the sequence's last new token   */
    int32_t *sample_seq;        /* [n_sample] index into batch->seqs                 */
    uint64_t *keys;             /* [n_sample] sampling noise keys                    */
    /* private: capacities */
    int64_t cap_T, cap_bt, cap_pf, cap_seq;
} pb_fwd_meta;

void pb_fwd_meta_free(pb_fwd_meta *m);   /* frees the arrays; *m may be reused after */

/* Build the metadata of batch b for a model with max_len positions and vocab tokens.
 * The KV location comes from the sequences (block_table/n_blocks, or kv_offset when
 * block_table == NULL); all sequences must agree (paged iff b->block_size > 0).
 * Sampling key of a sampled sequence: pb_rng seeded by (sample_seed, a hash of
 * group_id, context_len and the last 64 tokens) -- nothing else in the batch, and not
 * the run-dependent seq_id: samples of one request differ by their histories.
 * Checks (PB_ERR_INVALID, message logged): tokens present, context_len == n_cached +
 * n_new, n_new >= 1, decode n_new == 1, positions < max_len, tokens in [0, vocab),
 * block tables long enough and ids in [0, num_blocks), contiguous slots in
 * [0, num_slots) -- num_blocks is the cache's block count (contiguous: 1 block of
 * num_slots = block_size slots). */
pb_status pb_fwd_meta_build(pb_fwd_meta *m, const pb_batch *b, const pb_model *spec,
                            const pb_kv_cache_shape *cache, uint64_t sample_seed);

/* ---- backend op table ---- */

/* One layer's attention call: write k/v of all rows into the cache, then
 * out[T, n_heads*D] = attention of each row's q over its sequence's cache. */
typedef struct {
    void *k_cache, *v_cache;          /* this layer's tensors (layouts of attention.h) */
    const pb_kv_cache_shape *shape;   /* contiguous: num_blocks 1, block_size = slots  */
    const void *qkv;                  /* [T, qkv_stride]: q | k | v heads              */
    int32_t qkv_stride;
    void *out;                        /* [T, n_heads * head_size]                      */
    int32_t n_heads, n_kv_heads, head_size;
    float scale;
} pb_attn_call;

typedef struct pb_model_ops {
    const char *name;
    size_t act_bytes;                 /* activation element: 4 (fp32) or 2 (fp16)      */
    pb_kv_dtype kv_dtype;
    void *(*alloc)(void *ctx, size_t bytes);             /* NULL on failure            */
    void (*free)(void *ctx, void *p);                    /* NULL is a no-op            */
    pb_status (*weight_init)(void *ctx, void *dst, int32_t rows, int32_t cols, uint64_t seed,
                             uint64_t tensor, int64_t row0, int64_t col0, int64_t full_cols,
                             float scale);
    pb_status (*fill)(void *ctx, void *dst, int64_t n, float v);
    /* make m visible to the ops below (the cuda backend uploads it) */
    pb_status (*prepare)(void *ctx, const pb_fwd_meta *m);
    pb_status (*embed)(void *ctx, void *out, const void *wte, const void *wpe, int32_t pos_offset,
                       int32_t h);
    pb_status (*gemm)(void *ctx, void *out, int out_f32, const void *in, const void *w, int32_t M,
                      int32_t N, int32_t K);
    pb_status (*bias_act)(void *ctx, void *x, const void *bias, int32_t M, int32_t N, int relu);
    pb_status (*layernorm)(void *ctx, void *out, const void *in, const void *g, const void *b,
                           int32_t M, int32_t N, float eps);
    pb_status (*rmsnorm)(void *ctx, void *out, const void *in, const void *g, int32_t M,
                         int32_t N, float eps);
    pb_status (*silu_mul)(void *ctx, void *out, const void *gu, int32_t M, int32_t F);
    pb_status (*rope)(void *ctx, void *qkv, int32_t stride, int32_t n_q_heads, int32_t n_k_heads,
                      int32_t head_size, float theta);
    pb_status (*add)(void *ctx, void *x, const void *y, int64_t n);
    pb_status (*gather_rows)(void *ctx, void *out, const void *in, int32_t h);  /* sample rows */
    pb_status (*attention)(void *ctx, const pb_attn_call *a);
    pb_status (*allreduce)(void *ctx, void *x, int64_t n);   /* (optional) tp > 1 only     */
    /* logits fp32 [n_sample, V] (backend memory) -> host tokens/logprobs [n_sample,
       n_top], n_out [n_sample], with the sampling keys of the prepared meta */
    pb_status (*candidates)(void *ctx, const float *logits, int32_t S, int32_t V, int32_t n_top,
                            const pb_sample_params *sp, int32_t *tokens, float *logprobs,
                            int32_t *n_out);
    /* (optional) NVTX-style phase markers; name NULL pops */
    void (*range)(void *ctx, const char *name);
} pb_model_ops;

/* The cpu backend: fp32 host memory, the C references.  Its ctx is a pb_cpu_ctx.
 *   pb_model_ops_cpu        every row as one decode query over the cache (bit-exact
 *                           whatever the schedule; the token-equivalence tests);
 *   pb_model_ops_cpu_split  the cuda backend's routing (pb_attention_route below):
 *                           prompt rows through the prefill kernel's reference, decode
 *                           rows through the paged / contiguous one -- equal within
 *                           fp32 reassociation; it tests the routing the GPU runs. */
typedef struct {
    const pb_fwd_meta *meta;
    void *scratch;             /* split routing: gathered K/V of cached prefixes       */
    size_t scratch_cap;
} pb_cpu_ctx;
extern const pb_model_ops pb_model_ops_cpu;
extern const pb_model_ops pb_model_ops_cpu_split;
void pb_cpu_ctx_free(pb_cpu_ctx *c);   /* frees the scratch */

/* ---- attention routing shared by the split cpu backend and the cuda backend ---- */

/* The attention kernels of one backend (host references or CUDA launchers), with
 * the shapes and contracts of kernels/attention.h and kernels/cache_ops.h. */
typedef struct {
    pb_status (*reshape_and_cache)(void *ctx, const pb_kv_cache_shape *c, void *k_cache,
                                   void *v_cache, const void *key, const void *value,
                                   int32_t key_stride, int32_t value_stride,
                                   const int64_t *slots, int32_t n);
    pb_status (*gather)(void *ctx, const pb_kv_cache_shape *c, void *key, void *value,
                        const void *k_cache, const void *v_cache, const int64_t *slots, int32_t n);
    pb_status (*prefill)(void *ctx, const pb_prefill_params *p, void *out, const void *q,
                         const void *k, const void *v, const int32_t *cu_q, const int32_t *cu_k);
    pb_status (*paged)(void *ctx, const pb_attn_params *p, void *out, const void *q,
                       const void *k_cache, const void *v_cache, const int32_t *block_tables,
                       const int32_t *ctx_lens);
    pb_status (*contig)(void *ctx, const pb_attn_params *p, void *out, const void *q,
                        const void *k_cache, const void *v_cache, const int64_t *kv_offsets,
                        const int32_t *ctx_lens);
    void *(*scratch)(void *ctx, size_t bytes);   /* >= bytes of backend memory, or NULL */
} pb_attn_kernels;

/* Where the backend sees the meta's arrays (host pointers for cpu, device for cuda). */
typedef struct {
    const int32_t *ctx_lens, *block_tables, *cu_q, *cu_k;
    const int64_t *slots, *kv_offsets, *pf_slots;
} pb_meta_view;

/* One layer's attention the way the GPU does it: reshape_and_cache of all rows;
 * prefill rows [0, n_pf_tok) through k->prefill over their fresh K/V (or over K/V
 * gathered from the cache when a prefix is cached); decode rows [n_pf_tok, T) through
 * k->paged / k->contig.  m is the host meta (counts), v its backend view; elem the
 * activation element size. */
pb_status pb_attention_route(const pb_attn_kernels *k, void *ctx, const pb_fwd_meta *m,
                             const pb_meta_view *v, const pb_attn_call *a, size_t elem,
                             pb_kv_dtype dtype);

/* ---- the model ---- */

typedef struct pb_lm pb_lm;    /* opaque: spec, shard, weights, activation buffers */

typedef struct {
    const pb_model *spec;
    const pb_model_ops *ops;
    void *ctx;                /* backend context (pb_cpu_ctx for cpu)                */
    int32_t tp_rank, tp_size; /* 0, 1 without tensor parallelism                     */
    uint64_t weight_seed;
    int32_t max_tokens_hint;  /* initial activation capacity in token rows (>= 1)   */
    pb_kv_cache_dtype kv_cache_dtype;  /* caches of pb_kv_cache_alloc: auto (0) = the
                                          ops' kv_dtype, or fp8 (kernels/kv_dtype.h) */
    float kv_scale;           /* fp8 caches: per-tensor scale (> 0)                 */
} pb_lm_params;

/* Create a model: allocate and generate the shard's weights.  PB_ERR_INVALID for
 * shapes the shard cannot split (heads, KV heads, ffn not divisible by tp_size) or
 * a head size the cache layout cannot hold; PB_ERR_NOMEM / PB_ERR_CUDA on failure. */
pb_status pb_lm_create(const pb_lm_params *p, pb_lm **out);
void pb_lm_destroy(pb_lm *lm);                      /* NULL is a no-op */

/* Heads and KV heads of this shard (what its KV cache holds). */
int32_t pb_lm_local_heads(const pb_lm *lm);
int32_t pb_lm_local_kv_heads(const pb_lm *lm);
/* Weight bytes of this shard (for memory planning and reports). */
int64_t pb_lm_weight_bytes(const pb_lm *lm);

/* Per-layer KV tensors of one shard: k[l], v[l] (layouts of attention.h). */
typedef struct {
    int32_t n_layers;
    void **k, **v;                 /* [n_layers] backend buffers                       */
    pb_kv_cache_shape shape;       /* contiguous caches: num_blocks 1, block_size slots */
    bool contiguous;
} pb_kv_cache;

/* Allocate a cache of num_blocks x block_size (paged) or 1 x num_slots (contiguous,
 * pass num_blocks = 1, block_size = num_slots, contiguous = true) with the shard's KV
 * heads in the model's KV format (pb_lm_params kv_cache_dtype, kv_scale), zero-filled.  PB_ERR_NOMEM/PB_ERR_CUDA on failure (nothing left allocated). */
pb_status pb_kv_cache_alloc(pb_kv_cache *c, const pb_lm *lm, int32_t num_blocks,
                            int32_t block_size, bool contiguous);
void pb_kv_cache_free(pb_kv_cache *c, const pb_lm *lm);

/* Run the forward pass of a prepared step (pb_fwd_meta_build) over cache, then the
 * candidates of the sampled rows: tokens/logprobs [m->n_sample, n_top], n_out
 * [m->n_sample] (host).  Rank 0 of tp computes the logits and candidates; the other
 * ranks (and a call with tokens == NULL) stop after the last layer.  Returns the
 * first backend error. */
pb_status pb_lm_forward(pb_lm *lm, const pb_fwd_meta *m, pb_kv_cache *cache, int32_t n_top,
                        const pb_sample_params *sp, int32_t *tokens, float *logprobs,
                        int32_t *n_out);

/* pb_lm_forward in the parts a CUDA graph needs apart (executor_cuda.c):
 *   pb_lm_reserve          activation buffers for T rows and S sampled rows (grown,
 *                          never shrunk; each reallocation bumps the generation)
 *   pb_lm_buffers_generation  that count: a graph captured at another generation
 *                          points at freed buffers (graph_pool.h)
 *   pb_lm_forward_layers   embedding and every layer over a meta already made visible
 *                          with ops->prepare: no allocation, no host synchronisation,
 *                          nothing but kernel launches (capturable); PB_ERR_INVALID
 *                          when the buffers are smaller than m->T rows
 *   pb_lm_forward_logits   final norm of the sampled rows, LM head, candidates (rank 0) */
pb_status pb_lm_reserve(pb_lm *lm, int64_t T, int64_t S);
uint64_t pb_lm_buffers_generation(const pb_lm *lm);
pb_status pb_lm_forward_layers(pb_lm *lm, const pb_fwd_meta *m, pb_kv_cache *cache);
pb_status pb_lm_forward_logits(pb_lm *lm, const pb_fwd_meta *m, int32_t n_top, const pb_sample_params *sp,
                               int32_t *tokens, float *logprobs, int32_t *n_out);

/* Copy the forward pass' candidates (tok/lp [m->n_sample, n_top], nout [m->n_sample])
 * to the batch's per-sequence cand[n_seqs] (unsampled sequences get n = 0). */
void pb_real_scatter_candidates(const pb_fwd_meta *m, const int32_t *tok, const float *lp,
                                const int32_t *nout, int32_t n_top, int32_t n_seqs, pb_candidates *cand);

/* Invariants of a built meta against its batch (rows, slots, prefix sums).  PB_OK or
 * PB_ERR_INVALID with a logged message.  Tests call it after every build. */
pb_status pb_fwd_meta_check(const pb_fwd_meta *m, const pb_batch *b);

#ifdef __cplusplus
}
#endif
#endif /* PB_MODEL_H */
