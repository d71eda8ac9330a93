/* executor_cuda.c -- the `cuda` executor (see executor_real.h): the forward pass of
 * executors/model.c on a GPU through the cuda backend below (fp16 activations and KV,
 * cuBLAS GEMMs, kernels/layers.cu, kernels/attention.cu, kernels/cache_ops.cu), a
 * device KV cache, a pinned host swap pool, CUDA-event latencies, NVTX ranges, and
 * Megatron-style tensor parallelism with NCCL (one thread per GPU in this process).
 *
 * Per step, on every rank's stream: [ev0] swap out, swap in [ev1] copy-on-write
 * [ev2] forward pass (+ candidates on rank 0) [ev3].
 *
 * CUDA graphs (p.cuda_graphs; paged cache, tp 1; graph_pool.h): a decode step of
 * 1..256 sequences is padded to its bucket (pb_graph_pad_meta), its metadata goes to
 * buffers at fixed addresses (graph_prepare_), and the layers (pb_lm_forward_layers:
 * embedding, every layer) replay the bucket's graph; the final norm, LM head and
 * sampling run eagerly (pb_lm_forward_logits), as vLLM v0.2.6 does.  All 35 buckets
 * are captured at create, largest first (the scratch buffers reach their size with
 * the first), after activations for 256 rows are reserved; each capture follows an
 * eager warm-up of the same shapes, so nothing allocates inside a capture.  A graph
 * bakes in buffer addresses: when an eager step grows the activations or the
 * attention workspace the pool's generation moves and the graphs are captured again
 * on first use (counted in stats.graph_captures).  latency_s = ev0 -> ev3 of
 * rank 0 (so GPU idle time waiting for host launches counts, as it would in a
 * server), swap_s = ev0 -> ev1, copy_s = ev1 -> ev2.
 *
 * NCCL is loaded at run time (dlopen libnccl.so.2) so that the build needs no NCCL
 * library and tp = 1 needs no NCCL at all.
 *
 * Without PB_HAVE_CUDA only pb_cuda_available() (false) and a create() that returns
 * PB_ERR_UNSUPPORTED are compiled. */
#include "executor_real.h"
#include "gpu_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* plain-words reason (gpu_probe.h), with or without a CUDA build */
bool pb_cuda_available(char *reason, size_t reason_len) {
    char why[512];
    int ok = pb_gpu_probe(why, sizeof why);
    if (reason && reason_len) snprintf(reason, reason_len, "%s", why);
    return ok != 0;
}

#ifndef PB_HAVE_CUDA

pb_status pb_executor_cuda_create(const pb_model *m, const pb_real_exec_params *p,
                                  pb_executor **out) {
    *out = NULL;
    pb_log_error("executor cuda: this build has no CUDA (configure with -DPB_CUDA=ON and nvcc)");
    return PB_ERR_UNSUPPORTED;
}

#else /* PB_HAVE_CUDA */

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>

#include "attention.h"
#include "slot_copy.h"   /* pb_copy_slots_cuda */
#include "cache_ops.h"
#include "graph_pool.h"  /* CUDA graphs: buckets, pool, padding */
#include "layers.h"
#include "model.h"

/* ---- NCCL, loaded at run time ---- */
#if defined(__has_include)
#  if __has_include(<nccl.h>)
#    include <nccl.h>
#    define PB_HAVE_NCCL_H 1
#  endif
#endif
#ifndef PB_HAVE_NCCL_H   /* the few NCCL declarations we use (ABI-stable since 2.0) */
typedef struct ncclComm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef enum { ncclSuccess = 0 } ncclResult_t;
typedef enum { ncclHalf = 6 } ncclDataType_t;
typedef enum { ncclSum = 0 } ncclRedOp_t;
#endif

typedef struct {
    void *lib;
    ncclResult_t (*get_unique_id)(ncclUniqueId *);
    ncclResult_t (*comm_init_rank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                               ncclComm_t, cudaStream_t);
    ncclResult_t (*comm_destroy)(ncclComm_t);
    const char *(*get_error_string)(ncclResult_t);
} nccl_api;

static pb_status nccl_load_(nccl_api *n) {
    memset(n, 0, sizeof *n);
    n->lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) n->lib = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        pb_log_error("executor cuda: tensor parallelism needs NCCL: %s", dlerror());
        return PB_ERR_UNSUPPORTED;
    }
    *(void **)&n->get_unique_id = dlsym(n->lib, "ncclGetUniqueId");
    *(void **)&n->comm_init_rank = dlsym(n->lib, "ncclCommInitRank");
    *(void **)&n->all_reduce = dlsym(n->lib, "ncclAllReduce");
    *(void **)&n->comm_destroy = dlsym(n->lib, "ncclCommDestroy");
    *(void **)&n->get_error_string = dlsym(n->lib, "ncclGetErrorString");
    if (!n->get_unique_id || !n->comm_init_rank || !n->all_reduce || !n->comm_destroy ||
        !n->get_error_string) {
        pb_log_error("executor cuda: libnccl lacks a symbol we need");
        dlclose(n->lib);
        n->lib = NULL;
        return PB_ERR_UNSUPPORTED;
    }
    return PB_OK;
}

#define TRY_CUDA(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) {                \
    pb_log_error("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));       \
    return PB_ERR_CUDA; } } while (0)
#define TRY(call) do { pb_status st_ = (call); if (st_ != PB_OK) return st_; } while (0)


/* ------------------------------------------------------------------------------ */
/* the cuda backend of pb_model_ops                                                 */

typedef struct {
    int device, rank, tp;
    cudaStream_t stream;
    cublasHandle_t cublas;
    void *cublas_ws;            /* its workspace (pb_cublas_setup) */
    const nccl_api *nccl;
    ncclComm_t comm;
    bool nvtx;
    int num_sms;
    const pb_fwd_meta *meta;
    /* the meta, packed: one pinned staging buffer, one device buffer, one copy */
    char *meta_h, *meta_d;
    size_t meta_cap;
    int32_t *d_tokens, *d_positions, *d_ctx_lens, *d_block_tables, *d_cu_q, *d_cu_k,
        *d_sample_rows;
    int64_t *d_slots, *d_kv_offsets, *d_pf_slots;
    uint64_t *d_keys;
    /* scratch */
    void *kv_gather;                   /* prefill over a cached prefix: dense K | V      */
    size_t kv_gather_cap;
    void *attn_ws;                     /* split-K (V2) workspace                         */
    size_t attn_ws_cap;
    uint64_t ws_generation;            /* bumped when attn_ws or kv_gather moves         */
    /* CUDA graphs: the padded meta's fixed buffers (pinned staging + device), laid out
       for PB_GRAPH_MAX_BATCH rows of gmax_blocks block ids whatever the bucket */
    char *gmeta_h, *gmeta_d;
    size_t gmeta_bytes;
    int32_t gmax_blocks;
    int32_t *d_tok, *d_nout, *h_tok, *h_nout;   /* candidates [cap * PB_MAX_TOP]       */
    float *d_lp, *h_lp;
    int32_t cand_cap;
} cuda_ctx;

/* zero-filled, ordered on the rank's stream (which does not sync with stream 0) */
static void *cu_alloc_(void *ctx, size_t bytes) {
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 16) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    if (cudaMemsetAsync(p, 0, bytes ? bytes : 16, ((cuda_ctx *)ctx)->stream) != cudaSuccess) {
        cudaFree(p);
        return NULL;
    }
    return p;
}
static void cu_free_(void *ctx, void *p) { if (p) cudaFree(p); }

static pb_status cu_weight_init_(void *ctx, void *dst, int32_t rows, int32_t cols, uint64_t seed,
                                 uint64_t tensor, int64_t row0, int64_t col0, int64_t full_cols,
                                 float scale) {
    cuda_ctx *c = ctx;
    return pb_weight_init_cuda(dst, rows, cols, seed, tensor, row0, col0, full_cols, scale,
                               c->stream);
}
static pb_status cu_fill_(void *ctx, void *dst, int64_t n, float v) {
    return pb_fill_cuda(dst, n, v, ((cuda_ctx *)ctx)->stream);
}

static size_t align16_(size_t x) { return (x + 15) & ~(size_t)15; }

static pb_status cu_prepare_(void *ctx, const pb_fwd_meta *m) {
    cuda_ctx *c = ctx;
    c->meta = m;
    size_t T = (size_t)m->T, nbt = m->paged ? T * (size_t)m->max_blocks : 0;
    size_t npf = (size_t)m->n_pf_seqs + 1, npk = m->n_pf_seqs ? (size_t)m->cu_k[m->n_pf_seqs] : 0;
    size_t ns = (size_t)m->n_sample;
    struct { const void *src; size_t bytes; void **dst; } parts[] = {
        {m->tokens, T * 4, (void **)&c->d_tokens},
        {m->positions, T * 4, (void **)&c->d_positions},
        {m->ctx_lens, T * 4, (void **)&c->d_ctx_lens},
        {m->block_tables, nbt * 4, (void **)&c->d_block_tables},
        {m->cu_q, npf * 4, (void **)&c->d_cu_q},
        {m->cu_k, npf * 4, (void **)&c->d_cu_k},
        {m->sample_rows, ns * 4, (void **)&c->d_sample_rows},
        {m->slots, T * 8, (void **)&c->d_slots},
        {m->kv_offsets, T * 8, (void **)&c->d_kv_offsets},
        {m->pf_slots, npk * 8, (void **)&c->d_pf_slots},
        {m->keys, ns * 8, (void **)&c->d_keys},
    };
    size_t total = 0;
    for (size_t i = 0; i < PB_ARRAY_LEN(parts); i++) total += align16_(parts[i].bytes);
    if (total > c->meta_cap) {
        if (c->meta_h) cudaFreeHost(c->meta_h);
        if (c->meta_d) cudaFree(c->meta_d);
        c->meta_h = c->meta_d = NULL;
        c->meta_cap = 0;
        size_t cap = total * 2 + 4096;
        TRY_CUDA(cudaHostAlloc((void **)&c->meta_h, cap, cudaHostAllocDefault));
        TRY_CUDA(cudaMalloc((void **)&c->meta_d, cap));
        c->meta_cap = cap;
    }
    /* the staging buffer may still feed the previous step's copy */
    TRY_CUDA(cudaStreamSynchronize(c->stream));
    size_t off = 0;
    for (size_t i = 0; i < PB_ARRAY_LEN(parts); i++) {
        if (parts[i].bytes) memcpy(c->meta_h + off, parts[i].src, parts[i].bytes);
        *parts[i].dst = c->meta_d + off;
        off += align16_(parts[i].bytes);
    }
    TRY_CUDA(cudaMemcpyAsync(c->meta_d, c->meta_h, off, cudaMemcpyHostToDevice, c->stream));
    return PB_OK;
}

static pb_status cu_embed_(void *ctx, void *out, const void *wte, const void *wpe,
                           int32_t pos_offset, int32_t h) {
    cuda_ctx *c = ctx;
    return pb_embed_cuda(out, wte, c->d_tokens, wpe, c->d_positions, pos_offset, c->meta->T, h,
                         c->stream);
}
static pb_status cu_gemm_(void *ctx, void *out, int out_f32, const void *in, const void *w,
                          int32_t M, int32_t N, int32_t K) {
    cuda_ctx *c = ctx;
    return pb_gemm_cuda(c->cublas, out, out_f32, in, w, M, N, K, c->stream);
}
static pb_status cu_bias_act_(void *ctx, void *x, const void *bias, int32_t M, int32_t N, int relu) {
    return pb_bias_act_cuda(x, bias, M, N, relu, ((cuda_ctx *)ctx)->stream);
}
static pb_status cu_layernorm_(void *ctx, void *out, const void *in, const void *g, const void *b,
                               int32_t M, int32_t N, float eps) {
    return pb_layernorm_cuda(out, in, g, b, M, N, eps, ((cuda_ctx *)ctx)->stream);
}
static pb_status cu_rmsnorm_(void *ctx, void *out, const void *in, const void *g, int32_t M,
                             int32_t N, float eps) {
    return pb_rmsnorm_cuda(out, in, g, M, N, eps, ((cuda_ctx *)ctx)->stream);
}
static pb_status cu_silu_mul_(void *ctx, void *out, const void *gu, int32_t M, int32_t F) {
    return pb_silu_mul_cuda(out, gu, M, F, ((cuda_ctx *)ctx)->stream);
}
static pb_status cu_rope_(void *ctx, void *qkv, int32_t stride, int32_t nq, int32_t nk, int32_t D,
                          float theta) {
    cuda_ctx *c = ctx;
    return pb_rope_cuda(qkv, stride, c->d_positions, c->meta->T, nq, nk, D, theta, c->stream);
}
static pb_status cu_add_(void *ctx, void *x, const void *y, int64_t n) {
    return pb_add_cuda(x, y, n, ((cuda_ctx *)ctx)->stream);
}
static pb_status cu_gather_rows_(void *ctx, void *out, const void *in, int32_t h) {
    cuda_ctx *c = ctx;
    return pb_gather_rows_cuda(out, in, c->d_sample_rows, c->meta->n_sample, h, c->stream);
}

static pb_status grow_dev_(void **p, size_t *cap, size_t need) {
    if (need <= *cap) return PB_OK;
    if (*p) cudaFree(*p);
    *p = NULL;
    *cap = 0;
    size_t n = need + need / 4 + 4096;
    TRY_CUDA(cudaMalloc(p, n));
    *cap = n;
    return PB_OK;
}

/* a scratch buffer of the ctx grown to need bytes; a move changes the addresses a
   captured graph uses (ws_generation) */
static pb_status grow_ws_(cuda_ctx *c, void **p, size_t *cap, size_t need) {
    void *old = *p;
    TRY(grow_dev_(p, cap, need));
    if (*p != old) c->ws_generation++;
    return PB_OK;
}

/* ---- attention: the shared routing (model.c pb_attention_route) over our kernels ---- */

static pb_status ck_reshape_(void *ctx, const pb_kv_cache_shape *c, void *k, void *v,
                             const void *key, const void *value, int32_t ks, int32_t vs,
                             const int64_t *slots, int32_t n) {
    return pb_reshape_and_cache_cuda(c, k, v, key, value, ks, vs, slots, n, ((cuda_ctx *)ctx)->stream);
}
static pb_status ck_gather_(void *ctx, const pb_kv_cache_shape *c, void *key, void *value,
                            const void *k, const void *v, const int64_t *slots, int32_t n) {
    return pb_gather_cached_kv_cuda(c, key, value, k, v, slots, n, ((cuda_ctx *)ctx)->stream);
}
static pb_status ck_prefill_(void *ctx, const pb_prefill_params *p, void *out, const void *q,
                             const void *k, const void *v, const int32_t *cu_q, const int32_t *cu_k) {
    return pb_prefill_attention_cuda(p, out, q, k, v, cu_q, cu_k, ((cuda_ctx *)ctx)->stream);
}
static pb_status ck_paged_(void *ctx, const pb_attn_params *p, void *out, const void *q,
                           const void *k, const void *v, const int32_t *bt, const int32_t *cl) {
    cuda_ctx *c = ctx;
    TRY(grow_ws_(c, &c->attn_ws, &c->attn_ws_cap, pb_paged_attention_workspace_bytes(p)));
    return pb_paged_attention_cuda(p, PB_ATTN_AUTO, out, q, k, v, bt, cl, c->attn_ws,
                                   c->attn_ws_cap, c->stream);
}
static pb_status ck_contig_(void *ctx, const pb_attn_params *p, void *out, const void *q,
                            const void *k, const void *v, const int64_t *off, const int32_t *cl) {
    cuda_ctx *c = ctx;
    TRY(grow_ws_(c, &c->attn_ws, &c->attn_ws_cap, pb_paged_attention_workspace_bytes(p)));
    return pb_contig_attention_cuda(p, PB_ATTN_AUTO, out, q, k, v, off, cl, c->attn_ws,
                                    c->attn_ws_cap, c->stream);
}
static void *ck_scratch_(void *ctx, size_t bytes) {
    cuda_ctx *c = ctx;
    return grow_ws_(c, &c->kv_gather, &c->kv_gather_cap, bytes) == PB_OK ? c->kv_gather : NULL;
}
static const pb_attn_kernels cuda_kernels_ = {ck_reshape_, ck_gather_, ck_prefill_, ck_paged_,
                                              ck_contig_, ck_scratch_};

static pb_status cu_attention_(void *ctx, const pb_attn_call *a) {
    cuda_ctx *c = ctx;
    pb_meta_view v = {c->d_ctx_lens, c->d_block_tables, c->d_cu_q, c->d_cu_k,
                      c->d_slots, c->d_kv_offsets, c->d_pf_slots};
    return pb_attention_route(&cuda_kernels_, ctx, c->meta, &v, a, 2, PB_KV_F16);
}

/* The padded meta of a graph step into the graph's buffers: every array at its fixed
   offset (sized for PB_GRAPH_MAX_BATCH rows), only the used bytes copied. */
static pb_status graph_prepare_(cuda_ctx *c, const pb_fwd_meta *m) {
    const size_t R = PB_GRAPH_MAX_BATCH, W = (size_t)c->gmax_blocks, T = (size_t)m->T, ns = (size_t)m->n_sample;
    struct { const void *src; size_t bytes, cap; void **dst; } parts[] = {
        {m->tokens, T * 4, R * 4, (void **)&c->d_tokens},
        {m->positions, T * 4, R * 4, (void **)&c->d_positions},
        {m->ctx_lens, T * 4, R * 4, (void **)&c->d_ctx_lens},
        {m->block_tables, T * W * 4, R * W * 4, (void **)&c->d_block_tables},
        {m->cu_q, 4, 16, (void **)&c->d_cu_q},
        {m->cu_k, 4, 16, (void **)&c->d_cu_k},
        {m->sample_rows, ns * 4, R * 4, (void **)&c->d_sample_rows},
        {m->slots, T * 8, R * 8, (void **)&c->d_slots},
        {m->kv_offsets, T * 8, R * 8, (void **)&c->d_kv_offsets},
        {m->pf_slots, 0, 16, (void **)&c->d_pf_slots},
        {m->keys, ns * 8, R * 8, (void **)&c->d_keys},
    };
    if (T > R || m->max_blocks != c->gmax_blocks) {
        pb_log_error("executor cuda: a graph step of %zu rows x %d blocks (graphs: %zu x %d)", T, m->max_blocks, R,
                     c->gmax_blocks);
        return PB_ERR_INVALID;
    }
    c->meta = m;
    TRY_CUDA(cudaStreamSynchronize(c->stream));   /* the staging may still feed the last copy */
    size_t off = 0;
    for (size_t i = 0; i < PB_ARRAY_LEN(parts); i++) {
        *parts[i].dst = c->gmeta_d + off;
        if (parts[i].bytes) {
            memcpy(c->gmeta_h + off, parts[i].src, parts[i].bytes);
            TRY_CUDA(cudaMemcpyAsync(c->gmeta_d + off, c->gmeta_h + off, parts[i].bytes, cudaMemcpyHostToDevice,
                                     c->stream));
        }
        off += align16_(parts[i].cap);
    }
    PB_ASSERT(off <= c->gmeta_bytes);
    return PB_OK;
}

static size_t graph_meta_bytes_(int32_t max_blocks) {
    const size_t R = PB_GRAPH_MAX_BATCH;
    return align16_(R * 4) * 4 + align16_(R * (size_t)max_blocks * 4) + 4 * 16 + align16_(R * 8) * 3;
}

static pb_status cu_allreduce_(void *ctx, void *x, int64_t n) {
    cuda_ctx *c = ctx;
    ncclResult_t r = c->nccl->all_reduce(x, x, (size_t)n, ncclHalf, ncclSum, c->comm, c->stream);
    if (r != ncclSuccess) {
        pb_log_error("executor cuda: ncclAllReduce (rank %d): %s", c->rank, c->nccl->get_error_string(r));
        return PB_ERR_CUDA;
    }
    return PB_OK;
}

static pb_status cu_candidates_(void *ctx, const float *logits, int32_t S, int32_t V,
                                int32_t n_top, const pb_sample_params *sp, int32_t *tokens,
                                float *logprobs, int32_t *n_out) {
    cuda_ctx *c = ctx;
    if (S > c->cand_cap) {
        cudaFree(c->d_tok); cudaFree(c->d_lp); cudaFree(c->d_nout);
        cudaFreeHost(c->h_tok); cudaFreeHost(c->h_lp); cudaFreeHost(c->h_nout);
        c->d_tok = c->d_nout = c->h_tok = c->h_nout = NULL;
        c->d_lp = c->h_lp = NULL;
        c->cand_cap = 0;
        size_t n = (size_t)S * PB_MAX_TOP;
        TRY_CUDA(cudaMalloc((void **)&c->d_tok, n * 4));
        TRY_CUDA(cudaMalloc((void **)&c->d_lp, n * 4));
        TRY_CUDA(cudaMalloc((void **)&c->d_nout, (size_t)S * 4));
        TRY_CUDA(cudaHostAlloc((void **)&c->h_tok, n * 4, cudaHostAllocDefault));
        TRY_CUDA(cudaHostAlloc((void **)&c->h_lp, n * 4, cudaHostAllocDefault));
        TRY_CUDA(cudaHostAlloc((void **)&c->h_nout, (size_t)S * 4, cudaHostAllocDefault));
        c->cand_cap = S;
    }
    TRY(pb_candidates_cuda(logits, S, V, n_top, *sp, c->d_keys, c->d_tok, c->d_lp, c->d_nout,
                           c->stream));
    size_t n = (size_t)S * n_top;
    TRY_CUDA(cudaMemcpyAsync(c->h_tok, c->d_tok, n * 4, cudaMemcpyDeviceToHost, c->stream));
    TRY_CUDA(cudaMemcpyAsync(c->h_lp, c->d_lp, n * 4, cudaMemcpyDeviceToHost, c->stream));
    TRY_CUDA(cudaMemcpyAsync(c->h_nout, c->d_nout, (size_t)S * 4, cudaMemcpyDeviceToHost, c->stream));
    TRY_CUDA(cudaStreamSynchronize(c->stream));
    memcpy(tokens, c->h_tok, n * 4);
    memcpy(logprobs, c->h_lp, n * 4);
    memcpy(n_out, c->h_nout, (size_t)S * 4);
    return PB_OK;
}

static void cu_range_(void *ctx, const char *name) {
    cuda_ctx *c = ctx;
    if (!c->nvtx) return;
    if (name) nvtxRangePushA(name);
    else nvtxRangePop();
}

static const pb_model_ops cuda_ops = {
    .name = "cuda",
    .act_bytes = 2,
    .kv_dtype = PB_KV_F16,
    .alloc = cu_alloc_,
    .free = cu_free_,
    .weight_init = cu_weight_init_,
    .fill = cu_fill_,
    .prepare = cu_prepare_,
    .embed = cu_embed_,
    .gemm = cu_gemm_,
    .bias_act = cu_bias_act_,
    .layernorm = cu_layernorm_,
    .rmsnorm = cu_rmsnorm_,
    .silu_mul = cu_silu_mul_,
    .rope = cu_rope_,
    .add = cu_add_,
    .gather_rows = cu_gather_rows_,
    .attention = cu_attention_,
    .allreduce = cu_allreduce_,
    .candidates = cu_candidates_,
    .range = cu_range_,
};

/* ------------------------------------------------------------------------------ */
/* one rank: device, model shard, caches, events                                    */

typedef struct cuda_exec cuda_exec;

typedef struct {
    cuda_exec *e;
    cuda_ctx ctx;
    pb_lm *lm;
    pb_kv_cache gpu;
    pb_kv_cache host;         /* pinned: k[l], v[l] point into host_slab             */
    void *host_slab;
    cudaEvent_t ev[4];
    pb_graph_pool graphs;     /* cuda_graphs: the captured decode steps per bucket    */
    pb_block_pair *d_pairs;
    int32_t pairs_cap;
    void **tens_a, **tens_b;  /* [2L] scratch pointer arrays for swaps                */
    pb_status st;
    float ms_total, ms_swap, ms_copy;
    pthread_t thread;
} rank_t;

struct cuda_exec {
    pb_real_exec_stats stats;   /* first member (pb_real_exec_get_stats)              */
    pb_model spec;
    pb_real_exec_params p;
    int tp;
    rank_t *ranks;
    nccl_api nccl;
    ncclUniqueId nccl_id;
    pb_fwd_meta meta;
    pb_fwd_meta gmeta;          /* cuda_graphs: this step's meta padded to its bucket  */
    int32_t graph_B;            /* this step's bucket; 0 = eager                       */
    /* the current job, shared read-only with the rank threads */
    const pb_batch *batch;
    int32_t n_top;
    int32_t *tok, *nout;
    float *lp;
    int32_t out_cap;
    /* rank threads (tp > 1) */
    pthread_mutex_t mu;
    pthread_cond_t cv_job, cv_done;
    int64_t gen;                /* job generation                                      */
    int pending;                /* ranks still working on the job                      */
    bool stop;
    int inited;                 /* ranks done with init                               */
};

/* ---- CUDA graphs ---- */

static void graph_destroy_(void *ctx, void *exec) {
    (void)ctx;
    cudaGraphExecDestroy((cudaGraphExec_t)exec);
}

/* The addresses a graph bakes in: the activations and the attention scratch. */
static uint64_t graph_generation_(const rank_t *r) {
    return (pb_lm_buffers_generation(r->lm) << 32) ^ r->ctx.ws_generation;
}

/* Capture the layers of padded meta gm (graph_prepare_ done) as bucket gm->T's graph.
   An eager pass of the same shapes first: it grows the scratch buffers and sets the
   kernels' attributes, so the capture itself allocates nothing. */
static pb_status graph_capture_(rank_t *r, const pb_fwd_meta *gm, cudaGraphExec_t *out) {
    cuda_ctx *c = &r->ctx;
    TRY(pb_lm_forward_layers(r->lm, gm, &r->gpu));
    const uint64_t gen = graph_generation_(r);
    cudaGraph_t graph = NULL;
    TRY_CUDA(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    pb_status st = pb_lm_forward_layers(r->lm, gm, &r->gpu);
    cudaError_t ce = cudaStreamEndCapture(c->stream, &graph);
    if (st != PB_OK || ce != cudaSuccess || graph_generation_(r) != gen) {
        if (graph) cudaGraphDestroy(graph);
        pb_log_error("executor cuda: capturing the graph of %d sequences failed (%s, %s)", gm->T, pb_status_str(st),
                     cudaGetErrorString(ce));
        return st != PB_OK ? st : PB_ERR_CUDA;
    }
    cudaGraphExec_t g = NULL;
#if CUDART_VERSION >= 12000
    ce = cudaGraphInstantiate(&g, graph, 0);
#else
    ce = cudaGraphInstantiate(&g, graph, NULL, NULL, 0);
#endif
    cudaGraphDestroy(graph);
    TRY_CUDA(ce);
    pb_graph_pool_put(&r->graphs, gm->T, gen, g);
    r->e->stats.graph_captures += c->rank == 0;
    *out = g;
    return PB_OK;
}

/* A graph step's forward pass: the bucket's graph (captured if missing or stale),
   then final norm, LM head and candidates eagerly. */
static pb_status graph_forward_(rank_t *r, const pb_fwd_meta *gm, bool first) {
    cuda_exec *e = r->e;
    cuda_ctx *c = &r->ctx;
    TRY(pb_lm_reserve(r->lm, gm->T, gm->n_sample));
    TRY(graph_prepare_(c, gm));
    cudaGraphExec_t g = pb_graph_pool_get(&r->graphs, gm->T, graph_generation_(r));
    if (!g) TRY(graph_capture_(r, gm, &g));
    TRY_CUDA(cudaGraphLaunch(g, c->stream));
    pb_sample_params sp = e->p.sampling;
    return pb_lm_forward_logits(r->lm, gm, e->n_top, &sp, first ? e->tok : NULL, first ? e->lp : NULL,
                                first ? e->nout : NULL);
}

/* Graph buffers, activations for 256 rows, then every bucket captured, largest first,
   on a dummy step of padding rows only (slot -1: nothing written to the cache).
   cuBLAS's workspace is pb_cublas_setup's: nothing is allocated inside a capture. */
static pb_status graph_init_(rank_t *r) {
    cuda_exec *e = r->e;
    cuda_ctx *c = &r->ctx;
    pb_graph_pool_init(&r->graphs, graph_destroy_, NULL);
    const int32_t cap_ctx = PB_MIN(e->spec.max_len, PB_GRAPH_MAX_CONTEXT);
    c->gmax_blocks = PB_CDIV(cap_ctx, e->p.block_size);
    c->gmeta_bytes = graph_meta_bytes_(c->gmax_blocks);
    TRY_CUDA(cudaHostAlloc((void **)&c->gmeta_h, c->gmeta_bytes, cudaHostAllocDefault));
    TRY_CUDA(cudaMalloc((void **)&c->gmeta_d, c->gmeta_bytes));
    if (!c->cublas_ws) {   /* PB_CUBLAS_WORKSPACE_MIB=0: cuBLAS's pool would allocate inside a capture */
        pb_log_error("executor cuda: cuda_graphs needs cuBLAS's own workspace (PB_CUBLAS_WORKSPACE_MIB is 0)");
        return PB_ERR_INVALID;
    }
    TRY(pb_lm_reserve(r->lm, PB_MAX(PB_GRAPH_MAX_BATCH, e->p.max_tokens_hint), PB_GRAPH_MAX_BATCH));
    pb_fwd_meta empty, gm;
    memset(&empty, 0, sizeof empty);
    memset(&gm, 0, sizeof gm);
    empty.paged = true;
    empty.max_blocks = 1;
    pb_status st = PB_OK;
    for (int i = PB_GRAPH_N_BUCKETS - 1; i >= 0 && st == PB_OK; i--) {
        cudaGraphExec_t g;
        st = pb_graph_pad_meta(&empty, pb_graph_bucket_size(i), c->gmax_blocks, e->p.block_size, &gm);
        if (st == PB_OK) st = graph_prepare_(c, &gm);
        if (st == PB_OK) st = graph_capture_(r, &gm, &g);
    }
    if (st == PB_OK && pb_graph_pool_count(&r->graphs) != PB_GRAPH_N_BUCKETS) st = PB_ERR_CUDA;   /* a capture moved a buffer */
    pb_fwd_meta_free(&gm);
    if (st == PB_OK) {
        TRY_CUDA(cudaStreamSynchronize(c->stream));
        c->meta = NULL;
    }
    return st;
}

static pb_status rank_init_(rank_t *r, int rank) {
    cuda_exec *e = r->e;
    cuda_ctx *c = &r->ctx;
    c->rank = rank;
    c->tp = e->tp;
    c->device = e->p.device + rank;
    c->nvtx = e->p.nvtx;
    c->nccl = &e->nccl;
    TRY_CUDA(cudaSetDevice(c->device));
    TRY_CUDA(cudaDeviceGetAttribute(&c->num_sms, cudaDevAttrMultiProcessorCount, c->device));
    TRY_CUDA(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    if (cublasCreate(&c->cublas) != CUBLAS_STATUS_SUCCESS) {
        pb_log_error("executor cuda: cublasCreate failed on device %d", c->device);
        return PB_ERR_CUDA;
    }
    pb_status cs = pb_cublas_setup(c->cublas, c->stream, &c->cublas_ws);
    if (cs != PB_OK) return cs;
    for (int i = 0; i < 4; i++) TRY_CUDA(cudaEventCreate(&r->ev[i]));
    if (e->tp > 1) {
        ncclResult_t nr = e->nccl.comm_init_rank(&c->comm, e->tp, e->nccl_id, rank);
        if (nr != ncclSuccess) {
            pb_log_error("executor cuda: ncclCommInitRank(rank %d of %d): %s", rank, e->tp,
                         e->nccl.get_error_string(nr));
            return PB_ERR_CUDA;
        }
    }
    pb_lm_params lp;
    memset(&lp, 0, sizeof lp);
    lp.spec = &e->spec;
    lp.ops = &cuda_ops;
    lp.ctx = c;
    lp.tp_rank = rank;
    lp.tp_size = e->tp;
    lp.weight_seed = e->p.weight_seed;
    lp.max_tokens_hint = PB_MAX(e->p.max_tokens_hint, 1);
    lp.kv_cache_dtype = e->p.kv_cache_dtype;
    lp.kv_scale = e->p.kv_scale;
    TRY(pb_lm_create(&lp, &r->lm));
    bool contig = e->p.block_size == 0;
    if (contig && e->p.kv_cache_dtype != PB_KV_CACHE_AUTO) {   /* attention.h: fp8 is paged only on the GPU */
        pb_log_error("executor cuda: an fp8 KV cache needs a paged cache (block_size > 0)");
        return PB_ERR_UNSUPPORTED;
    }
    TRY(pb_kv_cache_alloc(&r->gpu, r->lm, contig ? 1 : e->p.num_gpu_blocks,
                          contig ? (int32_t)e->p.num_slots : e->p.block_size, contig));
    int32_t L = e->spec.n_layers;
    r->tens_a = pb_xcalloc(2 * (size_t)L, sizeof(void *));
    r->tens_b = pb_xcalloc(2 * (size_t)L, sizeof(void *));
    if (!contig && e->p.num_cpu_blocks > 0) {
        pb_kv_cache *h = &r->host;
        h->n_layers = L;
        h->shape = r->gpu.shape;
        h->shape.num_blocks = e->p.num_cpu_blocks;
        size_t tb = pb_kv_block_bytes(&h->shape) * (size_t)e->p.num_cpu_blocks;
        TRY_CUDA(cudaHostAlloc(&r->host_slab, tb * 2 * (size_t)L, cudaHostAllocDefault));
        h->k = pb_xcalloc((size_t)L, sizeof(void *));
        h->v = pb_xcalloc((size_t)L, sizeof(void *));
        for (int32_t l = 0; l < L; l++) {
            h->k[l] = (char *)r->host_slab + (2 * (size_t)l) * tb;
            h->v[l] = (char *)r->host_slab + (2 * (size_t)l + 1) * tb;
        }
    }
    if (e->p.cuda_graphs && !contig) TRY(graph_init_(r));
    TRY_CUDA(cudaStreamSynchronize(c->stream));   /* weights generated */
    return PB_OK;
}

static void rank_fini_(rank_t *r) {
    cuda_ctx *c = &r->ctx;
    if (!c->stream) return;   /* never initialised */
    cudaSetDevice(c->device);
    cudaStreamSynchronize(c->stream);
    if (r->lm) pb_kv_cache_free(&r->gpu, r->lm);
    pb_lm_destroy(r->lm);
    r->lm = NULL;
    free(r->host.k);
    free(r->host.v);
    if (r->host_slab) cudaFreeHost(r->host_slab);
    free(r->tens_a);
    free(r->tens_b);
    if (r->d_pairs) cudaFree(r->d_pairs);
    for (int i = 0; i < 4; i++) if (r->ev[i]) cudaEventDestroy(r->ev[i]);
    if (c->comm) c->nccl->comm_destroy(c->comm);
    if (c->meta_h) cudaFreeHost(c->meta_h);
    if (c->meta_d) cudaFree(c->meta_d);
    pb_graph_pool_clear(&r->graphs);
    if (c->gmeta_h) cudaFreeHost(c->gmeta_h);
    if (c->gmeta_d) cudaFree(c->gmeta_d);
    if (c->kv_gather) cudaFree(c->kv_gather);
    if (c->attn_ws) cudaFree(c->attn_ws);
    cudaFree(c->d_tok); cudaFree(c->d_lp); cudaFree(c->d_nout);
    cudaFreeHost(c->h_tok); cudaFreeHost(c->h_lp); cudaFreeHost(c->h_nout);
    if (c->cublas) cublasDestroy(c->cublas);
    if (c->cublas_ws) cudaFree(c->cublas_ws);
    c->cublas_ws = NULL;
    cudaStreamDestroy(c->stream);
    c->stream = NULL;
}

static pb_status swap_(rank_t *r, pb_kv_cache *dst, pb_kv_cache *src, const pb_block_pair *pairs,
                       int32_t n) {
    int32_t L = r->gpu.n_layers;
    for (int32_t l = 0; l < L; l++) {
        r->tens_a[2 * l] = dst->k[l]; r->tens_a[2 * l + 1] = dst->v[l];
        r->tens_b[2 * l] = src->k[l]; r->tens_b[2 * l + 1] = src->v[l];
    }
    return pb_swap_blocks_cuda(r->tens_a, (const void *const *)r->tens_b, 2 * L, pairs, n,
                               pb_kv_block_bytes(&r->gpu.shape),
                               r->e->p.swap_batched ? PB_SWAP_BATCHED : PB_SWAP_PER_BLOCK,
                               r->ctx.stream);
}

/* One step on one rank: memory operations, forward pass, events. */
static pb_status rank_step_(rank_t *r) {
    cuda_exec *e = r->e;
    const pb_batch *b = e->batch;
    cudaStream_t s = r->ctx.stream;
    TRY_CUDA(cudaEventRecord(r->ev[0], s));
    if (r->ctx.nvtx && (b->n_swap_out || b->n_swap_in)) nvtxRangePushA("swap");
    if (b->n_swap_out) TRY(swap_(r, &r->host, &r->gpu, b->swap_out, b->n_swap_out));
    if (b->n_swap_in) TRY(swap_(r, &r->gpu, &r->host, b->swap_in, b->n_swap_in));
    if (r->ctx.nvtx && (b->n_swap_out || b->n_swap_in)) nvtxRangePop();
    TRY_CUDA(cudaEventRecord(r->ev[1], s));
    if (b->n_copies) {
        if (r->ctx.nvtx) nvtxRangePushA("copy_blocks");
        if (b->n_copies > r->pairs_cap) {
            if (r->d_pairs) cudaFree(r->d_pairs);
            r->d_pairs = NULL;
            r->pairs_cap = 0;
            TRY_CUDA(cudaMalloc((void **)&r->d_pairs, (size_t)b->n_copies * 2 * sizeof(pb_block_pair)));
            r->pairs_cap = b->n_copies * 2;
        }
        TRY_CUDA(cudaMemcpyAsync(r->d_pairs, b->copies, (size_t)b->n_copies * sizeof(pb_block_pair),
                                 cudaMemcpyHostToDevice, s));
        TRY(pb_copy_blocks_cuda(r->gpu.k, r->gpu.v, r->gpu.n_layers, r->d_pairs, b->n_copies,
                                pb_kv_block_bytes(&r->gpu.shape), s));
        if (r->ctx.nvtx) nvtxRangePop();
    }
    if (b->n_slot_copies) {
        if (r->ctx.nvtx) nvtxRangePushA("copy_slots");
        TRY(pb_copy_slots_cuda(&r->gpu.shape, r->gpu.k, r->gpu.v, r->gpu.n_layers, b->slot_copies,
                               b->n_slot_copies, s));
        if (r->ctx.nvtx) nvtxRangePop();
    }
    TRY_CUDA(cudaEventRecord(r->ev[2], s));
    if (r->ctx.nvtx) nvtxRangePushA("forward");
    pb_sample_params sp = e->p.sampling;
    bool first = r->ctx.rank == 0;
    pb_status st = e->graph_B > 0 ? graph_forward_(r, &e->gmeta, first)
                                  : pb_lm_forward(r->lm, &e->meta, &r->gpu, e->n_top, &sp, first ? e->tok : NULL,
                                                  first ? e->lp : NULL, first ? e->nout : NULL);
    if (r->ctx.nvtx) nvtxRangePop();
    if (st != PB_OK) return st;
    TRY_CUDA(cudaEventRecord(r->ev[3], s));
    TRY_CUDA(cudaEventSynchronize(r->ev[3]));
    TRY_CUDA(cudaEventElapsedTime(&r->ms_total, r->ev[0], r->ev[3]));
    TRY_CUDA(cudaEventElapsedTime(&r->ms_swap, r->ev[0], r->ev[1]));
    TRY_CUDA(cudaEventElapsedTime(&r->ms_copy, r->ev[1], r->ev[2]));
    return PB_OK;
}

/* rank threads (tp > 1): init, then one rank_step_ per job generation */
static void *rank_thread_(void *arg) {
    rank_t *r = arg;
    cuda_exec *e = r->e;
    int rank = (int)(r - e->ranks);
    r->st = rank_init_(r, rank);
    pthread_mutex_lock(&e->mu);
    e->inited++;
    pthread_cond_broadcast(&e->cv_done);
    int64_t seen = e->gen;
    for (;;) {
        while (!e->stop && e->gen == seen) pthread_cond_wait(&e->cv_job, &e->mu);
        if (e->stop) break;
        seen = e->gen;
        pthread_mutex_unlock(&e->mu);
        if (r->st == PB_OK) {
            cudaSetDevice(r->ctx.device);
            r->st = rank_step_(r);
        }
        pthread_mutex_lock(&e->mu);
        if (--e->pending == 0) pthread_cond_broadcast(&e->cv_done);
    }
    pthread_mutex_unlock(&e->mu);
    rank_fini_(r);
    return NULL;
}

/* ------------------------------------------------------------------------------ */
/* the executor                                                                     */


/* The bucket a step replays (graph_pool.h), 0 for an eager step: graphs on, paged,
   decode rows only, 1..256 of them, every context inside the captured tables. */
static int32_t graph_bucket_(const cuda_exec *e) {
    const pb_fwd_meta *m = &e->meta;
    if (!e->p.cuda_graphs || !m->paged || e->tp > 1) return 0;
    if (!pb_graph_step_eligible(m->n_pf_tok, m->T, m->max_ctx)) return 0;
    if (m->max_ctx > e->ranks[0].ctx.gmax_blocks * e->p.block_size) return 0;
    return pb_graph_bucket(m->T);
}

static pb_status cuda_execute_(pb_executor *ex, const pb_batch *b, pb_step_result *res,
                               pb_candidates *cand) {
    cuda_exec *e = ex->impl;
    memset(res, 0, sizeof *res);
    int32_t n_top = b->n_top > 0 ? b->n_top : 1;
    bool paged = e->p.block_size > 0;
    if (n_top > PB_MAX_TOP || b->n_seqs < 0 || (b->n_seqs > 0 && !b->seqs) ||
        (b->block_size > 0) != paged || (paged && b->block_size != e->p.block_size)) {
        pb_log_error("executor cuda: bad batch (n_top %d, n_seqs %d, block_size %d vs %d)",
                     b->n_top, b->n_seqs, b->block_size, e->p.block_size);
        return PB_ERR_INVALID;
    }
    if ((!paged && (b->n_copies || b->n_swap_in || b->n_swap_out)) || (paged && b->n_slot_copies)) {
        pb_log_error("executor cuda: block copies / swaps on a contiguous KV cache, or slot copies on a paged one");
        return PB_ERR_INVALID;
    }
    int32_t ng = e->ranks[0].gpu.shape.num_blocks, nh = paged ? e->p.num_cpu_blocks : 0;
    pb_status st;
    if ((st = pb_real_check_pairs("cuda", "swap out", b->swap_out, b->n_swap_out, ng, nh)) != PB_OK ||
        (st = pb_real_check_pairs("cuda", "swap in", b->swap_in, b->n_swap_in, nh, ng)) != PB_OK ||
        (st = pb_real_check_pairs("cuda", "copy", b->copies, b->n_copies, ng, ng)) != PB_OK)
        return st;
    double t0 = pb_now_s();
    st = pb_fwd_meta_build(&e->meta, b, &e->spec, &e->ranks[0].gpu.shape, e->p.sample_seed);
    if (st != PB_OK) return st;
    e->graph_B = graph_bucket_(e);
    if (e->graph_B > 0 &&
        (st = pb_graph_pad_meta(&e->meta, e->graph_B, e->ranks[0].ctx.gmax_blocks, e->p.block_size, &e->gmeta)) != PB_OK)
        return st;
    int32_t S = e->meta.n_sample;
    if (S > e->out_cap) {
        e->out_cap = S;
        e->tok = pb_xrealloc(e->tok, (size_t)S * PB_MAX_TOP * sizeof(int32_t));
        e->lp = pb_xrealloc(e->lp, (size_t)S * PB_MAX_TOP * sizeof(float));
        e->nout = pb_xrealloc(e->nout, (size_t)S * sizeof(int32_t));
    }
    e->batch = b;
    e->n_top = n_top;
    double t1 = pb_now_s();
    if (e->tp == 1) {
        st = cudaSetDevice(e->ranks[0].ctx.device) == cudaSuccess ? rank_step_(&e->ranks[0])
                                                                   : PB_ERR_CUDA;
    } else {
        pthread_mutex_lock(&e->mu);
        e->pending = e->tp;
        e->gen++;
        pthread_cond_broadcast(&e->cv_job);
        while (e->pending > 0) pthread_cond_wait(&e->cv_done, &e->mu);
        pthread_mutex_unlock(&e->mu);
        st = PB_OK;
        for (int i = 0; i < e->tp && st == PB_OK; i++) st = e->ranks[i].st;
    }
    e->batch = NULL;
    if (st != PB_OK) return st;
    rank_t *r0 = &e->ranks[0];
    if (cand) pb_real_scatter_candidates(&e->meta, e->tok, e->lp, e->nout, n_top, b->n_seqs, cand);
    res->has_tokens = cand != NULL;
    res->latency_s = e->p.fixed_latency_s > 0 ? e->p.fixed_latency_s : r0->ms_total * 1e-3;
    res->swap_s = e->p.fixed_latency_s > 0 ? 0 : r0->ms_swap * 1e-3;
    res->copy_s = e->p.fixed_latency_s > 0 ? 0 : r0->ms_copy * 1e-3;
    pb_real_account_step(&e->stats, b, e->meta.T, (r0->ms_total - r0->ms_swap - r0->ms_copy) * 1e-3,
                         r0->ms_swap * 1e-3, r0->ms_copy * 1e-3);
    e->stats.graph_steps += e->graph_B > 0;
    e->stats.prepare_s += t1 - t0;
    return PB_OK;
}

static void cuda_destroy_(pb_executor *ex) {
    cuda_exec *e = ex->impl;
    if (e) {
        if (e->tp > 1) {
            pthread_mutex_lock(&e->mu);
            e->stop = true;
            pthread_cond_broadcast(&e->cv_job);
            pthread_mutex_unlock(&e->mu);
            for (int i = 0; i < e->tp; i++)
                if (e->ranks[i].thread) pthread_join(e->ranks[i].thread, NULL);
            pthread_mutex_destroy(&e->mu);
            pthread_cond_destroy(&e->cv_job);
            pthread_cond_destroy(&e->cv_done);
        } else if (e->ranks) {
            rank_fini_(&e->ranks[0]);
        }
        if (e->nccl.lib) dlclose(e->nccl.lib);
        free(e->ranks);
        pb_fwd_meta_free(&e->meta);
        pb_fwd_meta_free(&e->gmeta);
        free(e->tok);
        free(e->lp);
        free(e->nout);
        free(e);
    }
    free(ex);
}

static const pb_executor_i cuda_iface = {.name = "cuda", .execute = cuda_execute_,
                                         .destroy = cuda_destroy_,
                                         .caps = PB_EXEC_KV_LAYOUT | PB_EXEC_TOKENS};

pb_status pb_executor_cuda_create(const pb_model *m, const pb_real_exec_params *p,
                                  pb_executor **out) {
    *out = NULL;
    char why[512];
    if (!pb_cuda_available(why, sizeof why)) {
        pb_log_error("executor cuda: no GPU (%s)", why);
        return PB_ERR_UNSUPPORTED;
    }
    int tp = p->tp > 1 ? p->tp : 1, ndev = 0;
    cudaGetDeviceCount(&ndev);
    if (p->cuda_graphs && tp > 1) {
        pb_log_error("executor cuda: cuda_graphs is captured at tp 1 only (got tp %d)", tp);
        return PB_ERR_UNSUPPORTED;
    }
    if (!m || p->block_size < 0 || (p->block_size > 0 && p->num_gpu_blocks < 1) ||
        (p->block_size == 0 && (p->num_slots < 1 || p->num_slots > INT32_MAX)) ||
        p->num_cpu_blocks < 0 || p->device < 0 || p->device + tp > ndev ||
        (p->sampling.temperature > 0 && !(p->sampling.top_p > 0 && p->sampling.top_p <= 1))) {
        pb_log_error("executor cuda: bad parameters (block_size %d, gpu blocks %d, slots %lld, "
                     "cpu blocks %d, devices %d..%d of %d)", p->block_size, p->num_gpu_blocks,
                     (long long)p->num_slots, p->num_cpu_blocks, p->device, p->device + tp - 1, ndev);
        return PB_ERR_INVALID;
    }
    cuda_exec *e = pb_xcalloc(1, sizeof *e);
    e->spec = *m;
    e->p = *p;
    e->tp = tp;
    e->ranks = pb_xcalloc((size_t)tp, sizeof(rank_t));
    for (int i = 0; i < tp; i++) e->ranks[i].e = e;
    pb_executor *ex = pb_xcalloc(1, sizeof *ex);
    ex->iface = &cuda_iface;
    ex->impl = e;
    pb_status st = PB_OK;
    if (tp == 1) {
        st = rank_init_(&e->ranks[0], 0);
    } else {
        st = nccl_load_(&e->nccl);
        if (st == PB_OK) {
            ncclResult_t nr = e->nccl.get_unique_id(&e->nccl_id);
            if (nr != ncclSuccess) {
                pb_log_error("executor cuda: ncclGetUniqueId: %s", e->nccl.get_error_string(nr));
                st = PB_ERR_CUDA;
            }
        }
        if (st == PB_OK) {
            pthread_mutex_init(&e->mu, NULL);
            pthread_cond_init(&e->cv_job, NULL);
            pthread_cond_init(&e->cv_done, NULL);
            for (int i = 0; i < tp; i++)
                if (pthread_create(&e->ranks[i].thread, NULL, rank_thread_, &e->ranks[i]) != 0) {
                    pb_log_error("executor cuda: cannot start the thread of rank %d", i);
                    e->ranks[i].st = PB_ERR_NOMEM;
                    pthread_mutex_lock(&e->mu);
                    e->inited++;
                    pthread_mutex_unlock(&e->mu);
                }
            pthread_mutex_lock(&e->mu);
            while (e->inited < tp) pthread_cond_wait(&e->cv_done, &e->mu);
            pthread_mutex_unlock(&e->mu);
            for (int i = 0; i < tp && st == PB_OK; i++) st = e->ranks[i].st;
        } else {
            e->tp = 1;   /* no threads were started: destroy as a single rank */
        }
    }
    if (st != PB_OK) {
        cuda_destroy_(ex);
        return st;
    }
    pb_log_info("executor cuda: %s on %d GPU(s) from device %d: %.2f GiB of weights per GPU, "
                "KV %s %s%s", m->name, tp, p->device,
                (double)pb_lm_weight_bytes(e->ranks[0].lm) / (1 << 30),
                p->block_size ? "paged" : "contiguous", pb_kv_cache_dtype_name(p->kv_cache_dtype),
                p->cuda_graphs && p->block_size ? ", CUDA graphs of 1..256 sequences captured" : "");
    *out = ex;
    return PB_OK;
}

#endif /* PB_HAVE_CUDA */
