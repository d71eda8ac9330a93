/* block_alloc.h -- a pool of fixed-size KV blocks: O(1) allocate and free with
 * reference counts (paper §4.2-4.4, vLLM BlockAllocator).
 *
 * One allocator per device (GPU KV cache, CPU swap space).  Free blocks sit on a LIFO
 * stack (vLLM pops from the end of its free list), so allocate and free are O(1).
 * Every block has a reference count (number of block-table entries mapping it, plus
 * pins such as a shared-prefix pool) and a fill (token slots written, 0..block_size),
 * which the block manager keeps; token_slots is the running sum of fills of used
 * blocks, so the memory breakdown costs O(1).
 *
 * CACHED blocks (automatic prefix caching, block_manager.h): a block released with
 * pb_block_alloc_decref_keep keeps its content at ref 0 OFF the free stack; its owner
 * (the block manager's prefix cache) either reuses it (pb_block_alloc_revive) or
 * gives it up (pb_block_alloc_evict, onto the free stack).  A cached block is neither
 * free nor used; its fill reads 0 (the owner knows its content).
 *
 * RESERVED blocks are counted as used without a number: pb_block_alloc_reserve takes
 * n of the free blocks by count (they stay on the stack, fill 0, unavailable to get),
 * pb_block_alloc_unreserve gives them back (a holder of blocks kept as counts, such
 * as a replay's block trees, replay.h).
 *
 * The struct is public only so the hot accessors can be inline; mutate it only
 * through the functions.  pb_block_alloc_check() verifies: free + used + cached ==
 * total, the free stack holds distinct blocks with ref 0 and fill 0, every block off
 * it has ref >= 1 or is one of the n_cached blocks (ref 0, fill 0), token_slots ==
 * sum of fills, 0 <= reserved <= the stack's blocks. */
#ifndef PB_BLOCK_ALLOC_H
#define PB_BLOCK_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t ref;           /* reference count                                        */
    int32_t fill;          /* token slots written                                    */
} pb_block_meta;           /* side by side: one cache line serves both              */

typedef struct pb_block_alloc {
    int32_t n_blocks, block_size;
    int32_t n_free;        /* blocks on the free stack, n_reserved of them reserved  */
    int32_t n_reserved;
    int32_t n_cached;      /* blocks at ref 0 kept off the free stack (see above)     */
    int32_t *free_stack;   /* [n_blocks]; free blocks in [0, n_free)                */
    pb_block_meta *meta;   /* [n_blocks] reference count and fill of each block     */
    int64_t token_slots;   /* sum of fill over used blocks                           */
    int64_t n_allocs, n_frees;   /* lifetime counters (statistics)                  */
} pb_block_alloc;

pb_block_alloc *pb_block_alloc_create(int32_t n_blocks, int32_t block_size);
void pb_block_alloc_destroy(pb_block_alloc *a);

/* A free block with ref = 1, fill = 0; -1 when none is free. */
static inline int32_t pb_block_alloc_get(pb_block_alloc *a) {
    if (a->n_free == a->n_reserved) return -1;
    int32_t b = a->free_stack[--a->n_free];
    a->meta[b].ref = 1;
    a->meta[b].fill = 0;
    a->n_allocs++;
    return b;
}
static inline void pb_block_alloc_incref(pb_block_alloc *a, int32_t b) {
    PB_ASSERT(a->meta[b].ref > 0);
    a->meta[b].ref++;
}
/* ref--; at 0 the block returns to the free list (its fill leaves token_slots).
 * Returns the new reference count.  Double free aborts. */
static inline int32_t pb_block_alloc_decref(pb_block_alloc *a, int32_t b) {
    PB_ASSERT(a->meta[b].ref > 0);   /* "Double free" */
    if (--a->meta[b].ref == 0) {
        a->token_slots -= a->meta[b].fill;
        a->meta[b].fill = 0;
        a->free_stack[a->n_free++] = b;
        a->n_frees++;
    }
    return a->meta[b].ref;
}
/* ref--; at 0 the block becomes CACHED (kept off the free stack, fill 0 here).
 * Returns the new reference count. */
static inline int32_t pb_block_alloc_decref_keep(pb_block_alloc *a, int32_t b) {
    PB_ASSERT(a->meta[b].ref > 0);
    if (--a->meta[b].ref == 0) {
        a->token_slots -= a->meta[b].fill;
        a->meta[b].fill = 0;
        a->n_cached++;
    }
    return a->meta[b].ref;
}
/* A cached block in use again: ref = 1 with the given fill. */
static inline void pb_block_alloc_revive(pb_block_alloc *a, int32_t b, int32_t fill) {
    PB_ASSERT(a->meta[b].ref == 0 && a->n_cached > 0 && fill >= 0 && fill <= a->block_size);
    a->n_cached--;
    a->meta[b].ref = 1;
    a->meta[b].fill = fill;
    a->token_slots += fill;
    a->n_allocs++;
}
/* A cached block given up: onto the free stack. */
static inline void pb_block_alloc_evict(pb_block_alloc *a, int32_t b) {
    PB_ASSERT(a->meta[b].ref == 0 && a->n_cached > 0);
    a->n_cached--;
    a->free_stack[a->n_free++] = b;
    a->n_frees++;
}
static inline void pb_block_alloc_set_fill(pb_block_alloc *a, int32_t b, int32_t fill) {
    PB_ASSERT(a->meta[b].ref > 0 && fill >= 0 && fill <= a->block_size);
    a->token_slots += fill - a->meta[b].fill;
    a->meta[b].fill = fill;
}
static inline int32_t pb_block_alloc_ref(const pb_block_alloc *a, int32_t b) { return a->meta[b].ref; }
static inline int32_t pb_block_alloc_fill(const pb_block_alloc *a, int32_t b) { return a->meta[b].fill; }
/* n free blocks reserved (n <= the free count) / n reserved ones free again. */
static inline void pb_block_alloc_reserve(pb_block_alloc *a, int32_t n) {
    PB_ASSERT(n >= 0 && a->n_reserved + n <= a->n_free);
    a->n_reserved += n;
}
static inline void pb_block_alloc_unreserve(pb_block_alloc *a, int32_t n) {
    PB_ASSERT(n >= 0 && n <= a->n_reserved);
    a->n_reserved -= n;
}
static inline int32_t pb_block_alloc_free_count(const pb_block_alloc *a) { return a->n_free - a->n_reserved; }
static inline int32_t pb_block_alloc_cached(const pb_block_alloc *a) { return a->n_cached; }
static inline int32_t pb_block_alloc_reserved(const pb_block_alloc *a) { return a->n_reserved; }
static inline int32_t pb_block_alloc_used(const pb_block_alloc *a) {
    return a->n_blocks - a->n_free - a->n_cached + a->n_reserved;
}

/* Invariants (O(n_blocks)); PB_OK or PB_ERR_INVALID with the reason logged. */
pb_status pb_block_alloc_check(const pb_block_alloc *a);

#ifdef __cplusplus
}
#endif
#endif /* PB_BLOCK_ALLOC_H */
