/* graph_pool.h -- CUDA-graph decode steps the way vLLM captures them (a system's
 * `cuda_graphs: true`): which steps replay a graph, the padded batch sizes, the
 * padding of a step's metadata, and the bookkeeping of the captured graphs.  Pure
 * C, no CUDA: the cuda executor keeps its cudaGraphExec_t handles in the pool
 * through a destroy callback; the cost model (executor_sim.c) uses the buckets.
 *
 * vLLM v0.2.6 (PR #1926, vllm/worker/model_runner.py), the first release with CUDA
 * graphs, which later v0.2 / v0.3 releases kept:
 *   _BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [8 * i for i in 1..32]: 35 graphs of
 *     1, 2, 4, 8, 16, 24, ..., 256 sequences (_get_graph_batch_size rounds a batch
 *     up to the next one);
 *   a step replays a graph when it is a decode step (v0.2 steps are prompt-only or
 *     decode-only), enforce_eager is off, its batch is <= 256 and its longest
 *     context <= max_context_len_to_capture (8192 by default); otherwise eager;
 *   padding rows: token 0, position 0, slot _PAD_SLOT_ID (-1: no KV write),
 *     context length 1, an empty block table (block 0 read, result unused);
 *   the captured region is the model's forward pass (embedding, layers, final
 *     norm); the LM head and the sampler run eagerly after the replay.
 * Our sim applies the context limit through the model's max_len (every shipped
 * model has max_len <= 4096, so it never binds); the cuda executor checks the
 * step's own longest context and uses graphs for paged caches at tp = 1 only. */
#ifndef PB_GRAPH_POOL_H
#define PB_GRAPH_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"   /* pb_fwd_meta */
#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PB_GRAPH_MAX_BATCH 256     /* _BATCH_SIZES_TO_CAPTURE[-1]                   */
#define PB_GRAPH_MAX_CONTEXT 8192  /* vLLM's max_context_len_to_capture default     */
#define PB_GRAPH_N_BUCKETS 35      /* 1, 2, 4, then 8 .. 256 in steps of 8         */

/* The captured batch size a decode batch of n sequences replays: 1, 2, 4, then n
 * rounded up to a multiple of 8; 0 when n < 1 or n > PB_GRAPH_MAX_BATCH (eager). */
int32_t pb_graph_bucket(int32_t n);
/* Index 0..34 of a bucket size, -1 if b is not one; and the inverse. */
int pb_graph_bucket_index(int32_t b);
int32_t pb_graph_bucket_size(int idx);

/* Whether a step replays a graph: decode rows only (no prefill tokens), 1..256
 * sequences, longest context <= PB_GRAPH_MAX_CONTEXT. */
bool pb_graph_step_eligible(int64_t n_prefill_tokens, int32_t n_decode, int32_t max_context);

/* ---- the captured graphs of one GPU ----
 * One slot per bucket.  A graph bakes in the device addresses of the buffers it
 * reads and writes; the executor numbers each layout of those buffers (a
 * generation, bumped whenever one is reallocated).  get() returns a bucket's graph
 * only if it was captured at the current generation; a newer generation destroys
 * every graph (all of them point at the old buffers). */
typedef struct {
    void *exec[PB_GRAPH_N_BUCKETS];        /* backend graph per bucket, NULL = none */
    uint64_t generation;                   /* buffer layout the graphs were made at */
    void (*destroy)(void *ctx, void *exec);
    void *ctx;
    int64_t captures, replays, invalidations;
} pb_graph_pool;

void pb_graph_pool_init(pb_graph_pool *p, void (*destroy)(void *ctx, void *exec), void *ctx);
/* The graph of bucket b at generation gen, or NULL (never captured, or the pool was
 * at another generation: then every graph is destroyed first).  Counts a replay
 * when it returns one. */
void *pb_graph_pool_get(pb_graph_pool *p, int32_t b, uint64_t gen);
/* Keep exec as bucket b's graph at generation gen (destroying what was there, and
 * every graph of another generation). */
void pb_graph_pool_put(pb_graph_pool *p, int32_t b, uint64_t gen, void *exec);
void pb_graph_pool_clear(pb_graph_pool *p);      /* destroy every graph */
int pb_graph_pool_count(const pb_graph_pool *p); /* graphs held */
/* Invariants: counters >= 0, replays only with captures.  PB_OK or PB_ERR_INVALID. */
pb_status pb_graph_pool_check(const pb_graph_pool *p);

/* The metadata a graph of bucket B replays: src (a decode-only step of n <= B rows,
 * pb_fwd_meta_build) copied into dst with B rows -- rows n..B-1 are padding (token
 * 0, position 0, slot -1, context length 1, block-table row of zeros) -- and block
 * tables re-strided to max_blocks (>= src->max_blocks) columns, so every step of a
 * bucket has the same shapes; dst->attn_max_ctx = max_blocks * block_size sizes the
 * attention launch for the longest context a graph serves.  The sampled rows stay
 * src's.  dst's arrays are dst's own (pb_fwd_meta_free).  PB_ERR_INVALID when src
 * has prefill rows, more than B rows, B is not a bucket, or a table is too wide. */
pb_status pb_graph_pad_meta(const pb_fwd_meta *src, int32_t B, int32_t max_blocks, int32_t block_size,
                            pb_fwd_meta *dst);

#ifdef __cplusplus
}
#endif
#endif /* PB_GRAPH_POOL_H */
