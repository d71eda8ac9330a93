/* buddy.h -- a binary buddy allocator over the KV slot space (the Orca baselines').
 *
 * The paper's Orca re-implementation (§6.1) places each request's KV cache in one
 * contiguous region chosen by a buddy allocation algorithm.  This module is that
 * allocator, in units of token slots: a request of `size` slots gets a chunk of
 * next_pow2(size) slots, aligned to its own size.  Chunks are split in halves on
 * allocation and coalesced with their buddy on free, eagerly and completely, so an
 * aligned power-of-two window whose slots are all free is always one free chunk (or
 * part of a larger one).  The slack chunk - size of every allocation is recorded: it
 * is the allocator's rounding waste, which the contiguous KV manager counts as
 * external fragmentation (paper Fig. 2).
 *
 * Non-power-of-two spaces (15,728 slots for OPT-13B on an A100-40GB): the space is
 * covered by the binary decomposition of its size, largest part first,
 *     15,728 = 8192 + 4096 + 2048 + 1024 + 256 + 128 + 32 + 16,
 * each part an independent buddy tree ("arena") rooted at an offset that is a
 * multiple of its size.  This is exactly a buddy system over the next power of two
 * (16,384) whose tail [num_slots, 16,384) is never available, and no slot of the real
 * space is lost: 7 chunks of 2048 fit (8192/2048 + 4096/2048 + 2048/2048), leaving
 * 1,456 slots (8.85%) that a 2048-slot request can never use.  Chunks never cross
 * arena boundaries, so the largest allocatable chunk is the largest power of two
 * <= num_slots.
 *
 * Free chunks of each order sit in a LIFO doubly-linked free list (per-slot link
 * arrays), so allocate and free are O(log num_slots).  Deterministic: the same call
 * sequence gives the same offsets.
 *
 * Contract: num_slots in [1, 2^30]; sizes in [1, 2^30]; pb_buddy_free takes an offset
 * returned by pb_buddy_alloc and not freed since (anything else is a bug: asserts). */
#ifndef PB_BUDDY_H
#define PB_BUDDY_H

#include <stdbool.h>
#include <stdint.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pb_buddy pb_buddy;

typedef struct {
    int64_t num_slots;        /* size of the space                                       */
    int64_t free_slots;       /* slots in free chunks                                    */
    int64_t chunk_slots;      /* slots in allocated chunks (= num_slots - free_slots)    */
    int64_t requested_slots;  /* sum of the requested sizes of live allocations          */
    int64_t rounding_slots;   /* chunk_slots - requested_slots: power-of-two round-up    */
    int64_t largest_free;     /* largest free chunk (largest allocatable size), 0 if full*/
    int64_t n_free_chunks;
    int64_t n_allocs;         /* live allocations                                        */
} pb_buddy_stats;

/* Create an allocator over num_slots slots, all free.  NULL if num_slots is out of
 * range. */
pb_buddy *pb_buddy_create(int64_t num_slots);
void pb_buddy_destroy(pb_buddy *b);

/* Chunk size an allocation of `size` slots gets: next power of two >= size. */
int64_t pb_buddy_chunk_for(int64_t size);

/* Allocate a chunk for `size` slots: returns its first slot, or -1 when no free chunk
 * of order >= log2(chunk) exists (external fragmentation or a full space). */
int64_t pb_buddy_alloc(pb_buddy *b, int64_t size);
/* Would pb_buddy_alloc(b, size) succeed now? */
bool pb_buddy_can_alloc(const pb_buddy *b, int64_t size);
/* How many chunks for `size` slots could be allocated one after another right now
 * (= the number of aligned chunk-sized windows that are wholly free). */
int64_t pb_buddy_count_fit(const pb_buddy *b, int64_t size);
/* How many chunks for `size` slots an EMPTY allocator of num_slots slots holds
 * (7 for 2048 in 15,728). */
int64_t pb_buddy_capacity_for(int64_t num_slots, int64_t size);

/* Free the allocation at `offset` (coalescing with free buddies). */
void pb_buddy_free(pb_buddy *b, int64_t offset);

/* Chunk size / requested size of the live allocation at offset (asserts it is one). */
int64_t pb_buddy_chunk_size(const pb_buddy *b, int64_t offset);
int64_t pb_buddy_requested(const pb_buddy *b, int64_t offset);

void pb_buddy_stats_get(const pb_buddy *b, pb_buddy_stats *out);
int64_t pb_buddy_num_slots(const pb_buddy *b);
/* Slots in no chunk (pb_buddy_stats.free_slots, O(1)). */
int64_t pb_buddy_free_slots(const pb_buddy *b);

/* Invariant checker: chunks tile the space exactly, are aligned, free lists hold
 * exactly the free chunks, no two free buddies are left uncoalesced, counters match.
 * Returns PB_OK, or PB_ERR_INVALID with a message in err (if err != NULL). */
pb_status pb_buddy_check(const pb_buddy *b, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif /* PB_BUDDY_H */
