/* executor_real.h -- the executors that run a real model: `cpu` (a tiny OPT / LLaMA
 * through the kernels' C references, fp32) and `cuda` (the same forward pass on a
 * GPU at real size: fp16, cuBLAS, our kernels, tensor parallelism with NCCL).
 *
 * Both own a model (executors/model.h) with seeded weights, a KV cache -- paged
 * (num_gpu_blocks x block_size, the batch carries block tables) or contiguous
 * (num_slots token slots, the batch carries kv_offset) -- and a host swap pool of
 * num_cpu_blocks blocks (pinned on the GPU).  execute() performs, in this order:
 * swap out (GPU -> host), swap in (host -> GPU), copy-on-write block copies, then the
 * forward pass, and returns the next-token candidates of every sampled sequence:
 *   greedy (sampling.temperature <= 0): the batch's n_top most likely tokens with
 *     their log-probabilities (beam search asks for 2 * beam_width);
 *   sampling: candidate 0 is a seeded top-p sample, 1.. further samples without
 *     replacement (kernels/layers.h).  The noise of a sequence's draw is a function
 *     of (sample_seed, group_id, position, last 64 tokens) only: it depends neither
 *     on the batch nor on the engine's seq ids, so a request's samples are the same
 *     in any run (its parallel samples differ from their first, distinct, token on).
 * Latency: wall clock around execute() on the cpu, CUDA events on the GPU; swap_s
 * and copy_s are the memory operations' shares.  fixed_latency_s > 0 reports that
 * constant instead (deterministic engine clocks in tests; tokens are unaffected).
 * Recompute needs nothing special: the engine sends a prefill of prompt + output.
 *
 * Errors: execute() returns PB_ERR_INVALID for a batch that does not fit the
 * executor (bad block ids, swaps or copies on a contiguous cache, n_top too large)
 * and leaves the KV cache untouched in that case; PB_ERR_CUDA on a device failure. */
#ifndef PB_EXECUTOR_REAL_H
#define PB_EXECUTOR_REAL_H

#include <stdbool.h>
#include <stdint.h>

#include "executor.h"
#include "kv_dtype.h" /* pb_kv_cache_dtype */
#include "layers.h"   /* pb_sample_params */
#include "pb.h"
#include "spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t block_size;        /* paged: tokens per block; 0 = contiguous cache      */
    int32_t num_gpu_blocks;    /* paged: KV blocks on the device                     */
    int64_t num_slots;         /* contiguous: token slots of the KV space            */
    int32_t num_cpu_blocks;    /* swap pool (paged only; 0 = no swapping)            */
    uint64_t weight_seed;      /* model weights                                      */
    uint64_t sample_seed;      /* sampling noise                                     */
    pb_sample_params sampling; /* temperature 0 = greedy                             */
    int32_t max_tokens_hint;   /* expected max tokens per step (activation buffers) */
    double fixed_latency_s;    /* > 0: report this latency instead of measuring      */
    bool cpu_split_attention;  /* cpu only: route attention as the GPU does (prefill
                                  kernel for prompts; model.h pb_model_ops_cpu_split)
                                  instead of one decode query per row (bit-exact)   */
    pb_kv_cache_dtype kv_cache_dtype;  /* KV cache format: auto, or fp8 (a system's
                                          kv_cache_dtype; kernels/kv_dtype.h)        */
    float kv_scale;            /* fp8 caches: per-tensor scale (a system's kv_scale) */
    /* cuda only */
    int32_t tp;                /* tensor-parallel degree (GPUs 0..tp-1); 0/1 = none  */
    int32_t device;            /* first GPU                                          */
    bool swap_batched;         /* merged swap copies instead of one per block        */
    bool nvtx;                 /* NVTX ranges per phase                              */
    bool cuda_graphs;          /* decode steps replay CUDA graphs (graph_pool.h; a
                                  system's cuda_graphs): paged caches, tp 1          */
} pb_real_exec_params;

/* Defaults: block PB_PAGED_BLOCK_SIZE, 256 GPU blocks, 0 CPU blocks, seeds 0, greedy (top_p 1),
 * hint 2560 tokens, measured latency, tp 1, device 0, per-block swap, nvtx on,
 * KV cache auto (kv_scale 1), no CUDA graphs. */
void pb_real_exec_params_default(pb_real_exec_params *p);

/* Create the cpu executor for model spec m (copied).  PB_ERR_INVALID on bad
 * params (message logged). */
pb_status pb_executor_cpu_create(const pb_model *m, const pb_real_exec_params *p,
                                 pb_executor **out);

/* Create the cuda executor.  PB_ERR_UNSUPPORTED in a build without CUDA or when no
 * device is usable (reason logged); PB_ERR_CUDA on device failure (e.g. the weights
 * plus the KV cache do not fit). */
pb_status pb_executor_cuda_create(const pb_model *m, const pb_real_exec_params *p,
                                  pb_executor **out);

/* Whether a CUDA device is usable; if not, reason (may be NULL) gets why. */
bool pb_cuda_available(char *reason, size_t reason_len);

/* Counters of a real executor (NULL ex or a non-real executor: all zero). */
typedef struct {
    int64_t steps, tokens, swapped_out_blocks, swapped_in_blocks, copied_blocks;
    int64_t cached_prefill_tokens;                 /* prefill tokens read from the cache
                                                      (n_cached of prefill sequences) */
    int64_t graph_steps, graph_captures;           /* cuda_graphs: steps that replayed a
                                                      graph; graphs captured (rank 0)   */
    double forward_s, swap_s, copy_s, prepare_s;   /* summed over steps */
} pb_real_exec_stats;
void pb_real_exec_get_stats(const pb_executor *ex, pb_real_exec_stats *out);
/* Add one executed batch to the counters (shared by the cpu and cuda executors):
 * tokens = forward-pass rows; times in seconds. */
void pb_real_account_step(pb_real_exec_stats *st, const pb_batch *b, int64_t tokens, double forward_s,
                          double swap_s, double copy_s);

/* Check every pair of a batch's memory operation against the pools before anything
 * moves (shared by the cpu and cuda executors): PB_OK, or PB_ERR_INVALID with a message
 * naming executor `who` and the operation `what`. */
pb_status pb_real_check_pairs(const char *who, const char *what, const pb_block_pair *pairs, int32_t n,
                              int32_t src_blocks, int32_t dst_blocks);

#ifdef __cplusplus
}
#endif
#endif /* PB_EXECUTOR_REAL_H */
