/* copy_map.h -- the two copy maps a step hands from the KV manager to an executor and
 * its kernels: whole blocks (copy-on-write, swap) and token-slot ranges (contiguous
 * caches).  Plain data, no behaviour; C11 and C++17 clean (included by .cu files). */
#ifndef PB_COPY_MAP_H
#define PB_COPY_MAP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One block copy or swap: block src -> block dst (physical indices of the source and
 * destination caches, GPU or CPU as the map's use says). */
typedef struct { int32_t src, dst; } pb_block_pair;

/* A range copy inside a contiguous KV cache: token slots [src, src+n) -> [dst, dst+n)
 * of every layer's K and V.  Contiguous managers (Orca, FasterTransformer) cannot
 * share KV, so a fork (parallel sample, beam candidate) copies the parent's KV into
 * the child's region; these copies run before the forward pass, in order. */
typedef struct { int64_t src, dst; int32_t n; } pb_slot_copy;

#ifdef __cplusplus
}
#endif

#endif
