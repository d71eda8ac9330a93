/* cache_ops.h -- KV-cache memory operations: reshape_and_cache (write new K/V into
 * their slots), gather_cached_kv (the inverse, for prefill over a cached prefix),
 * copy_blocks (copy-on-write, all layers x all pairs in one launch) and swap_blocks
 * (GPU <-> pinned host).  C references in cache_ops_ref.c, CUDA in cache_ops.cu.
 *
 * Layouts are those of attention.h: K [num_blocks, Hkv, D/x, block_size, x],
 * V [num_blocks, Hkv, D, block_size], in the cache's element type (x = 16 bytes /
 * element: 16 for an fp8 cache).  An fp8 cache (kv_cache_dtype, kv_dtype.h)
 * stores fp8(x / kv_scale) of the dtype activations written into it, and gather
 * returns fp8 * kv_scale in dtype; copy_blocks and swap move its bytes (blocks
 * are half the size of fp16 ones).  A slot is block * block_size + offset
 * (vLLM §1.4); slot < 0 is a padding token and is skipped.  The contiguous (FT)
 * layout is the same with num_blocks = 1, block_size = num_slots.
 *
 * Swap (vLLM §1.6): per-tensor (one layer's K or V) copies of whole blocks.
 *   PB_SWAP_PER_BLOCK: one cudaMemcpyAsync per (tensor, pair), what vLLM 2023 did
 *                      and what the paper's Fig. 19(a) measured;
 *   PB_SWAP_BATCHED:   pairs sorted by source and merged into contiguous runs
 *                      (pb_swap_merge_runs), all tensors' runs submitted with one
 *                      cudaMemcpyBatchAsync when the toolkit has it (CUDA >= 12.8)
 *                      and the stream is not the legacy NULL stream, else (or when
 *                      the batch call returns an error: said once on stderr) one
 *                      cudaMemcpyAsync per run.
 *
 * C11 and C++17 clean (included by .cu files). */
#ifndef PB_CACHE_OPS_H
#define PB_CACHE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "pb.h"         /* pb_status */
#include "kv_dtype.h"   /* pb_kv_dtype */
#include "copy_map.h"   /* pb_block_pair {src, dst} */

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;     /* == cudaStream_t */

#define PB_CACHE_MAX_LAYERS 128   /* copy_blocks passes layer pointers by value */

typedef struct {
    int32_t num_blocks;
    int32_t num_kv_heads;
    int32_t head_size;      /* multiple of x (of the cache's and the dtype's)      */
    int32_t block_size;
    pb_kv_dtype dtype;      /* activations: key/value written, gather's output;
                               the cache's elements when kv_cache_dtype is auto  */
    pb_kv_cache_dtype kv_cache_dtype;  /* auto (0) or fp8_e4m3 / fp8_e5m2        */
    float kv_scale;         /* fp8 caches: per-tensor scale, finite and > 0       */
} pb_kv_cache_shape;

/* The cache's element type: dtype, or the fp8 format of kv_cache_dtype. */
pb_kv_dtype pb_kv_cache_shape_elem(const pb_kv_cache_shape *c);
/* Bytes of one block of ONE layer's K (or V) tensor: Hkv * D * block_size * elem. */
size_t pb_kv_block_bytes(const pb_kv_cache_shape *c);
pb_status pb_kv_cache_shape_check(const pb_kv_cache_shape *c);

/* ---- C references (host memory) ---- */

/* k_cache/v_cache  one layer, layouts above
 * key, value       [num_tokens, key_stride] / [num_tokens, value_stride]
 *                  (token i, head h, dim d at i*stride + h*D + d; stride 0 = Hkv*D)
 * slot_mapping     [num_tokens]  (slot < 0: skipped; slot >= num_blocks*block_size:
 *                  PB_ERR_INVALID before anything is written).  The slots >= 0 must be
 *                  distinct, as the block manager makes them: the CUDA kernel writes the
 *                  tokens in parallel, so two tokens for one slot leave either (the
 *                  reference's last-wins order is not a contract). */
pb_status pb_reshape_and_cache_ref(const pb_kv_cache_shape *c, void *k_cache, void *v_cache,
                                   const void *key, const void *value, int32_t key_stride,
                                   int32_t value_stride, const int64_t *slot_mapping,
                                   int32_t num_tokens);

/* Inverse: key/value [num_tokens, Hkv*D] (dense, dtype) from the slots in
 * slot_mapping (slot < 0 gives zeros). */
pb_status pb_gather_cached_kv_ref(const pb_kv_cache_shape *c, void *key, void *value,
                                  const void *k_cache, const void *v_cache,
                                  const int64_t *slot_mapping, int32_t num_tokens);

/* k_caches/v_caches [num_layers] base pointers of each layer's K/V tensor;
 * pairs [num_pairs] block src -> dst (same layer, same tensor); block_bytes =
 * pb_kv_block_bytes().  Pairs are applied in order (a dst never also a src). */
pb_status pb_copy_blocks_ref(void *const *k_caches, void *const *v_caches, int32_t num_layers,
                             const pb_block_pair *pairs, int32_t num_pairs, size_t block_bytes);

/* A merged copy: bytes from src_off to dst_off (byte offsets inside a tensor). */
typedef struct { int64_t src_off, dst_off, bytes; } pb_copy_run;

/* Sort pairs by src (stable) and merge neighbours whose src AND dst are both
 * consecutive into runs.  runs has room for num_pairs entries.  Returns the run
 * count (0..num_pairs).  Total bytes are preserved (checked by tests). */
int32_t pb_swap_merge_runs(const pb_block_pair *pairs, int32_t num_pairs, size_t block_bytes,
                           pb_copy_run *runs);

/* Host swap: for each of num_tensors tensors t, copy block pairs from
 * src_tensors[t] into dst_tensors[t] with memcpy (merged runs). */
pb_status pb_swap_blocks_ref(void *const *dst_tensors, const void *const *src_tensors,
                             int32_t num_tensors, const pb_block_pair *pairs,
                             int32_t num_pairs, size_t block_bytes);

#ifdef PB_HAVE_CUDA
/* ---- CUDA (asynchronous on stream) ---- */
typedef enum { PB_SWAP_PER_BLOCK = 0, PB_SWAP_BATCHED = 1 } pb_swap_mode;

/* Device pointers for caches, key, value and slot_mapping; one launch.  fp8 caches:
 * dtype fp16 or bf16 (PB_ERR_UNSUPPORTED otherwise), head_size % 16 == 0. */
pb_status pb_reshape_and_cache_cuda(const pb_kv_cache_shape *c, void *k_cache, void *v_cache,
                                    const void *key, const void *value, int32_t key_stride,
                                    int32_t value_stride, const int64_t *slot_mapping,
                                    int32_t num_tokens, struct CUstream_st *stream);

pb_status pb_gather_cached_kv_cuda(const pb_kv_cache_shape *c, void *key, void *value,
                                   const void *k_cache, const void *v_cache,
                                   const int64_t *slot_mapping, int32_t num_tokens,
                                   struct CUstream_st *stream);

/* k_caches/v_caches: HOST arrays [num_layers <= PB_CACHE_MAX_LAYERS] of device
 * pointers (passed to the kernel by value); pairs_dev: DEVICE array [num_pairs].
 * One launch, grid (num_pairs, num_layers, 2 tensors). */
pb_status pb_copy_blocks_cuda(void *const *k_caches, void *const *v_caches, int32_t num_layers,
                              const pb_block_pair *pairs_dev, int32_t num_pairs,
                              size_t block_bytes, struct CUstream_st *stream);

/* dst_tensors/src_tensors: HOST arrays [num_tensors] of base pointers (device or
 * pinned host, any direction; cudaMemcpyDefault); pairs: HOST array.  Returns after
 * the copies are enqueued (the caller synchronizes the stream). */
pb_status pb_swap_blocks_cuda(void *const *dst_tensors, const void *const *src_tensors,
                              int32_t num_tensors, const pb_block_pair *pairs,
                              int32_t num_pairs, size_t block_bytes, pb_swap_mode mode,
                              struct CUstream_st *stream);
/* 1 if pb_swap_blocks_cuda's batched mode uses cudaMemcpyBatchAsync in this build. */
int pb_swap_has_batch_api(void);
#endif /* PB_HAVE_CUDA */

#ifdef __cplusplus
}
#endif
#endif /* PB_CACHE_OPS_H */
