/* slot_copy.h -- range copies inside a contiguous KV cache (Orca / FasterTransformer
 * forks: a parallel sample or beam candidate gets a copy of its parent's KV, since a
 * contiguous cache cannot share it).
 *
 * Cache layouts of attention.h with num_blocks = 1 and block_size = S slots:
 *   K [1, Hkv, D/x, S, x]   V [1, Hkv, D, S]   (x = 16 bytes / element)
 * A copy moves slots [src, src+n) to [dst, dst+n) for every head and dimension, in
 * every layer's K and V.  Copies are applied in order; the src and dst ranges of one
 * copy must not overlap (they are different sequences' regions; a strided device copy
 * of overlapping ranges is undefined), else PB_ERR_INVALID and nothing is copied.
 * C reference in slot_copy_ref.c; CUDA (strided cudaMemcpy2DAsync) in slot_copy.cu. */
#ifndef PB_SLOT_COPY_H
#define PB_SLOT_COPY_H

#include "cache_ops.h"   /* pb_kv_cache_shape */
#include "copy_map.h"    /* pb_slot_copy */

#ifdef __cplusplus
extern "C" {
#endif

/* PB_OK when every range lies in [0, S) of a contiguous shape (num_blocks == 1) and no
 * copy's src and dst ranges overlap. */
pb_status pb_copy_slots_check(const pb_kv_cache_shape *c, const pb_slot_copy *copies, int32_t n_copies);

/* k_caches/v_caches [num_layers] host tensors.  PB_ERR_INVALID (nothing copied) when a
 * range leaves [0, S), a copy overlaps itself or the shape is not contiguous. */
pb_status pb_copy_slots_ref(const pb_kv_cache_shape *c, void *const *k_caches, void *const *v_caches,
                            int32_t num_layers, const pb_slot_copy *copies, int32_t n_copies);

#ifdef PB_HAVE_CUDA
/* Same on device tensors: two cudaMemcpy2DAsync per (layer, copy) on stream. */
pb_status pb_copy_slots_cuda(const pb_kv_cache_shape *c, void *const *k_caches, void *const *v_caches,
                             int32_t num_layers, const pb_slot_copy *copies, int32_t n_copies,
                             struct CUstream_st *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif /* PB_SLOT_COPY_H */
