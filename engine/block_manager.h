/* block_manager.h -- the `paged` KV manager (paper §4, docs/DESIGN.md §4).
 *
 * Per-sequence block tables (logical block i -> physical GPU or CPU block; the fill
 * of every physical block is kept by the allocator), over two block allocators (GPU
 * and CPU swap space, block_alloc.h).  Implements kv_manager.h:
 *   allocate   a group's prompt blocks once, shared by all its waiting sequences
 *              (reference counts); a shared prefix's blocks are reserved ONCE per
 *              prefix_id, kept for the whole run, and mapped into every request
 *              that uses it; its last partial block is copied on write;
 *   append     a new block when the last is full; copy-on-write when the last block
 *              is shared (returns the (src, dst) pair); O(1);
 *   fork       the child maps the parent's blocks (ref++), O(blocks);
 *   free       ref-- on every block, O(blocks);
 *   swap       whole groups; a block shared inside the group moves once; the CPU
 *              pool holds at most as many blocks as the GPU pool (paper §4.5);
 *   admission  OK / LATER / NEVER with a watermark (a share of the GPU blocks):
 *              vLLM v0.2.3 rules; can_append: running seqs of the group <= free
 *              blocks (vLLM can_append_slot); can_swap_in reserves one block per
 *              sequence above the watermark.
 * usage(): token slots = sum of block fills; reserved = empty slots of last blocks
 * that their sequence will still write (min(empty, tokens still to come)); the rest
 * of the allocated slots are internal fragmentation; unallocated blocks are free.
 * Shared-prefix blocks pinned by the pool count as token slots.
 * Memory saving: logical = sum of GPU-resident block-table lengths.
 *
 * Automatic prefix caching (params.prefix_caching; vLLM APC): the shared-prefix pool
 * is off; instead a FULL block whose KV has been computed is PUBLISHED in a hash table
 * under a chain hash (the previous block's hash and the block's token identities: the
 * token ids when the engine stores tokens, else the trace keys of trace.h, where the
 * generated tokens of a single-sequence request are its own / its transcript's keys
 * and those of a multi-sequence group are unknown, so never cached).  Publication
 * happens only in computed() (the engine's hook after a step), never at allocation: a
 * prefill may take several steps.  A block whose hash is already published stays
 * private (a duplicate).
 *   allocate / can_allocate / cached_tokens look up each waiting sequence's leading
 *       full blocks (stopping at the first miss, and before the block holding its last
 *       token, which is always computed): hits are mapped (ref++), s->n_cached =
 *       hit tokens (a recomputed group's later sequences: the first's full prompt
 *       blocks, then their own hits);
 *   free: a published block reaching ref 0 stays CACHED (evictable; in LRU order, a
 *       sequence's last block first), not free; swap-out leaves its GPU blocks cached
 *       the same way;
 *   new blocks come from the free list first, then by evicting the least recently
 *       used cached block (unpublished);
 *   admission, can_append and can_swap_in count cached blocks as available (a hit on
 *       a cached block uses one of them).
 * A published block is full, so no append ever writes it: copy on write only ever
 * copies a partial last block.  usage() counts cached blocks as free slots
 * (gpu_blocks_free includes them; gpu_blocks_cached tells them).
 *
 * The CPU tier (n_tier_blocks > 0, with prefix caching; vLLM's CPU offloading
 * connector, LMCache): a cached block evicted from the GPU SPILLS to a CPU block of
 * the tier (its content copied GPU -> CPU), unless the tier holds that hash already;
 * a full tier first drops its least recently spilled block.  Lookups that miss on the
 * GPU look in the tier: a hit there RELOADS the block into a new GPU block (CPU -> GPU)
 * and publishes it on the GPU again; the tier's copy is released (the tiers are
 * exclusive).  Spills and reloads are (gpu, cpu) / (cpu, gpu) pairs the manager queues
 * and take_tier_moves hands to the engine, which adds them to the step's swap-out and
 * swap-in maps: the executors run and price them as swaps (swap-outs before swap-ins,
 * then the model), so a spill's source is read before its GPU block is reused and a
 * reload lands before attention reads it.  A reloaded block's CPU copy stays held
 * until the next take (no spill of the same step can overwrite it before it is read).
 * The tier's blocks are a pool of their own, numbered after the swap space's in the
 * moves (an executor's CPU pool holds both: swap blocks, then n_tier_blocks), so no
 * swap-in of the step frees a CPU block that a spill then overwrites first; a group
 * is never swapped out while a reload into its blocks is still queued (it is swapped
 * out in a later step than the one that admitted it).  Admission counts a tier hit like a miss (one GPU
 * block); cached_tokens counts its tokens as cached (no prefill). */
#ifndef PB_BLOCK_MANAGER_H
#define PB_BLOCK_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "block_alloc.h"
#include "kv_manager.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PB_PAGED_BLOCK_SIZE 16      /* tokens per block unless a system says (vLLM's) */
#define PB_PAGED_WATERMARK 0.01     /* share of GPU blocks kept free at admission     */

typedef struct {
    int32_t block_size;      /* tokens per block                                     */
    int32_t n_gpu_blocks;    /* GPU KV blocks                                       */
    int32_t n_cpu_blocks;    /* swap-space blocks (clamped to n_gpu_blocks)          */
    double watermark;        /* fraction of GPU blocks kept free at admission         */
    bool prefix_caching;     /* automatic prefix caching (above); false               */
    int32_t n_tier_blocks;   /* the CPU tier (below; needs prefix_caching); 0 = none  */
} pb_paged_params;

/* PB_PAGED_BLOCK_SIZE, 0, 0, PB_PAGED_WATERMARK, false, 0 */
void pb_paged_params_default(pb_paged_params *p);

/* Create a paged manager (n_gpu_blocks >= 1, block_size >= 1). */
pb_status pb_paged_kv_create(const pb_paged_params *p, pb_kv_manager **out);

/* Introspection for tests and benchmarks (m must be a paged manager). */
const pb_block_alloc *pb_paged_gpu(const pb_kv_manager *m);
const pb_block_alloc *pb_paged_cpu(const pb_kv_manager *m);
/* Block table of s: *n entries; *on_cpu tells which pool the numbers index. */
const int32_t *pb_paged_table(const pb_kv_manager *m, const pb_seq *s, int32_t *n, bool *on_cpu);
int32_t pb_paged_watermark_blocks(const pb_kv_manager *m);
/* Blocks a shared prefix currently pins (0 if the prefix is not cached). */
int32_t pb_paged_prefix_blocks(const pb_kv_manager *m, int32_t prefix_id);

/* Prefix caching counters since creation (all 0 when off).  Per allocate(g): g->len
 * tokens looked up, and the tokens its first sequence found cached. */
typedef struct {
    int64_t hit_tokens, query_tokens;
    int64_t evictions;           /* cached blocks given up for new ones              */
    int32_t cached_blocks;       /* evictable: published, ref 0                       */
    int32_t published_blocks;    /* in the hash table (in use or cached)              */
    /* the CPU tier: tokens of hit_tokens found there, blocks spilled to it, reloaded
       from it and dropped from it (full), blocks it holds now */
    int64_t tier_hit_tokens, tier_spills, tier_reloads, tier_drops;
    int32_t tier_blocks;
} pb_paged_cache_stats;
void pb_paged_cache_stats_get(const pb_kv_manager *m, pb_paged_cache_stats *out);
/* The cached block evicted next (-1: none) and whether GPU block blk is published. */
int32_t pb_paged_lru_head(const pb_kv_manager *m);
bool pb_paged_block_published(const pb_kv_manager *m, int32_t blk);

#ifdef __cplusplus
}
#endif
#endif /* PB_BLOCK_MANAGER_H */
