/* block_manager_int.h -- PRIVATE to the paged KV manager: its state and the helpers
 * that block_manager.c (tables, allocation, swaps, usage, check) and bm_replay.c (its
 * replayed steps, replay.h) share.  Nothing else includes it.
 *
 * Per sequence a bm_table (s->kv): physical block numbers of the GPU pool, or of the
 * CPU pool while swapped.  Invariants (pb_kv_check): a table of kv_len tokens has
 * ceil(kv_len / bs) blocks; all but the last are full; the last block's fill equals
 * the tokens the sequence has in it (so a shared block is never written: appends
 * copy on write first); reference counts equal the references from tables plus the
 * prefix pool's pins; free + used (+ cached, GPU) == total in both pools; the
 * reservation counters (below) equal a walk over every live table; a GPU table's
 * sequence holds its last block in s->kv_aux (append's fast path); the prefix
 * cache's structures agree with each other and with the tables. */
#ifndef PB_BLOCK_MANAGER_INT_H
#define PB_BLOCK_MANAGER_INT_H

#include "block_manager.h"
#include "replay.h"

typedef struct bm_table {
    int32_t *blocks;
    int32_t n, cap;
    /* prefix caching: chain hashes of the first n_hashed full blocks (hashes[j] covers
       tokens [0, (j+1) bs)); the first n_pub blocks have been offered to the cache in
       this GPU residency (published, or left private as duplicates) */
    uint64_t *hashes;
    int32_t n_hashed, n_pub, hash_cap;
    bool on_cpu;
    int32_t live_idx;        /* index in bm->live (GPU and CPU tables alike)        */
    pb_seq *seq;
    struct bm_table *next_free;
} bm_table;

typedef struct {
    int32_t *blocks;         /* pinned GPU blocks: ceil(prefix_len / bs)            */
    int32_t n;
    int32_t len;             /* prefix tokens                                       */
    bool present;
} bm_prefix;

struct bm_replay;            /* bm_replay.c */

typedef struct {
    pb_kv_manager base;
    int32_t bs;
    int32_t bs_mask;         /* bs - 1 when bs is a power of two, else -1           */
    int32_t watermark_blocks;
    pb_block_alloc *gpu, *cpu;
    bm_table *free_tables;
    bm_table **live;
    int32_t n_live, cap_live;
    bm_prefix *prefixes;
    int32_t n_prefixes;      /* array size (indexed by prefix_id)                  */
    int32_t pinned_blocks;   /* GPU blocks pinned by prefixes                      */
    /* scratch for swaps / distinct counting / usage: per-block stamps */
    uint32_t *stamp_gpu, *stamp_cpu;
    int32_t *map_gpu, *map_cpu;
    uint32_t epoch;
    int64_t logical_gpu;     /* sum of table lengths of GPU-resident tables        */
    /* usage()'s reserved slots without a walk: the empty slots of each distinct GPU
       last block that its sequence will still fill (min(empty, tokens to come)).
       last_refs[blk] = GPU tables whose last block is blk; a block's share is added
       when its first such table arrives and removed when its last one leaves (the
       tables sharing a last block are forks at the same length: same share). */
    int32_t *last_refs;
    int64_t reserved;
    /* automatic prefix caching (block_manager.h); all empty when off */
    bool caching;
    uint64_t *blk_hash;      /* [gpu blocks] hash of a published block              */
    uint8_t *pub;            /* [gpu blocks] 1 = published in the hash table        */
    int32_t *ht_head;        /* [ht_mask + 1] bucket -> first published block, -1    */
    int32_t *ht_next;        /* [gpu blocks] next published block of its bucket      */
    uint32_t ht_mask;
    int32_t n_published;
    int32_t *lru_prev, *lru_next;   /* [gpu blocks] evictable blocks, LRU first      */
    int32_t lru_head, lru_tail, n_lru;
    int32_t *hit_scratch;    /* allocate(): pinned hits of all sequences             */
    int32_t hit_cap;
    int64_t hit_tokens, query_tokens, evictions;
    /* the CPU tier (block_manager.h; all empty when n_tier is 0): its own pool of
       blocks holding spilled cached KV, numbered after the swap space's in the moves
       (executor CPU block = cpu->n_blocks + tier block).  tier[c]: TIER_NONE,
       TIER_IDLE (in the tier's hash table and LRU), TIER_CLAIMED (hit by the
       allocation in progress: in the hash table, off the LRU), TIER_RELEASING
       (reloaded; its block held until the next take_tier_moves) */
    int32_t n_tier, tier_used;            /* capacity; blocks in any state but NONE  */
    pb_block_alloc *tier_pool;            /* n_tier blocks                          */
    uint8_t *tier;                        /* [n_tier]                                */
    uint64_t *tier_hash;                  /* [n_tier]                                */
    int32_t *tier_ht_head, *tier_ht_next; /* [tier_ht_mask + 1], [n_tier]            */
    uint32_t tier_ht_mask;
    int32_t *tier_prev, *tier_next;       /* [n_tier] IDLE blocks, LRU first         */
    int32_t tier_head, tier_tail, n_tier_idle;
    int32_t *tier_gpu;                    /* [n_tier] CLAIMED: its GPU block or -1   */
    uint32_t *tier_stamp;                 /* [n_tier] distinct counting              */
    pb_pair_vec tier_out, tier_in;        /* queued spills (gpu, cpu), reloads (cpu, gpu) */
    int32_t *releasing;                   /* RELEASING blocks, n_releasing of them    */
    int32_t n_releasing;
    int64_t tier_hit_tokens, tier_spills, tier_reloads, tier_drops;
    struct bm_replay *rp;    /* bm_replay.c's state; NULL before its first replay   */
} bm;

static inline bm *BM(pb_kv_manager *m) { return (bm *)m->impl; }

enum { TIER_NONE = 0, TIER_IDLE, TIER_CLAIMED, TIER_RELEASING };

/* Is a reload into GPU block g queued (not yet taken by the engine)? */
static inline bool bm_reload_queued(const bm *b, int32_t g) {
    for (int32_t i = 0; i < b->tier_in.n; i++)
        if (b->tier_in.v[i].dst == g) return true;
    return false;
}

/* GPU blocks an allocation can take: free, then evictable cached ones. */
static inline int32_t bm_gpu_avail(const bm *b) { return pb_block_alloc_free_count(b->gpu) + b->n_lru; }

/* Offset of slot kv in its block. */
static inline int32_t bm_offset(const bm *b, int32_t kv) { return b->bs_mask >= 0 ? (kv & b->bs_mask) : kv % b->bs; }

/* Slots of t's last block that t's sequence will still fill. */
static inline int32_t bm_last_share(const bm *b, const bm_table *t) {
    const pb_seq *s = t->seq;
    const pb_group *g = s->group;
    int32_t empty = b->bs - pb_block_alloc_fill(b->gpu, t->blocks[t->n - 1]);
    int32_t to_come = g ? g->prompt_len + g->output_len - 1 - s->kv_len : 0;
    return to_come > 0 ? PB_MIN(empty, to_come) : 0;
}

/* t (GPU) takes part / stops taking part in the reservation: bm_last_enter after a
   change of its last block or length, bm_last_leave before one. */
static inline void bm_last_enter(bm *b, const bm_table *t) {
    if (t->n == 0) return;
    t->seq->kv_aux = t->blocks[t->n - 1];   /* append's fast path reads it there */
    if (t->on_cpu) return;
    if (b->last_refs[t->blocks[t->n - 1]]++ == 0) b->reserved += bm_last_share(b, t);
}
static inline void bm_last_leave(bm *b, const bm_table *t) {
    if (t->on_cpu || t->n == 0) return;
    if (--b->last_refs[t->blocks[t->n - 1]] == 0) b->reserved -= bm_last_share(b, t);
}

/* The memory breakdown of the tables and pools (kv_manager.h usage): token slots are
   the fills, reserved slots the reservation, the rest of the allocated blocks'
   slots internal fragmentation. */
static inline void bm_usage_of(const bm *b, pb_kv_usage *u) {
    int64_t bs = b->bs, physical = pb_block_alloc_used(b->gpu), allocated = physical * bs;
    int64_t total = (int64_t)b->gpu->n_blocks * bs;
    *u = (pb_kv_usage){
        .total_slots = total,
        .token_slots = b->gpu->token_slots,
        .reserved_slots = b->reserved,
        .internal_frag_slots = allocated - b->gpu->token_slots - b->reserved,
        .free_slots = total - allocated,
        .logical_blocks = b->logical_gpu,
        .physical_blocks = physical,
        .gpu_blocks_total = b->gpu->n_blocks,
        .gpu_blocks_free = bm_gpu_avail(b),
        .gpu_blocks_cached = b->n_lru,
        .cpu_blocks_total = b->cpu->n_blocks,
        .cpu_blocks_used = pb_block_alloc_used(b->cpu),
    };
}

/* Block blk at the end of t (a logical GPU block more when t is on the GPU). */
static inline void bm_table_push(bm *b, bm_table *t, int32_t blk) {
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->blocks = pb_xrealloc(t->blocks, (size_t)t->cap * sizeof(int32_t));
    }
    t->blocks[t->n++] = blk;
    if (!t->on_cpu) b->logical_gpu++;
}

/* Room in t for n chain hashes. */
static inline void bm_hashes_reserve(bm_table *t, int32_t n) {
    if (t->hash_cap >= n) return;
    t->hash_cap = PB_MAX(n, 2 * t->hash_cap);
    t->hashes = pb_xrealloc(t->hashes, (size_t)t->hash_cap * sizeof(uint64_t));
}

/* block_manager.c */
bm_table *bm_table_new(bm *b, pb_seq *s, bool on_cpu);   /* s's empty table, s->kv */
uint32_t bm_next_epoch(bm *b);                            /* a fresh stamp value      */
/* Grow GPU table t from *kv_len to target tokens: new blocks, copy on write of a
   shared last block (pairs onto copies, may be NULL); the blocks must be there. */
void bm_extend(bm *b, bm_table *t, int32_t *kv_len, int32_t target, pb_pair_vec *copies);
pb_status bm_append(pb_kv_manager *m, pb_seq *s, pb_pair_vec *copies);
void bm_free(pb_kv_manager *m, pb_seq *s);
/* Does g map the prefix pool's blocks? */
bool bm_uses_prefix(const bm *b, const pb_group *g);

/* bm_cache.c: automatic prefix caching and the GPU block source. */
/* A GPU block (ref 1, fill 0): a free one, else the least recently used cached one
   evicted for it; -1 when neither exists. */
int32_t bm_gpu_get(bm *b);
/* One reference to GPU block blk dropped; a published block at ref 0 stays cached. */
void bm_gpu_release(bm *b, int32_t blk);
/* can_allocate / allocate with the cache: hits mapped, the rest new blocks. */
pb_alloc_status bm_cache_can_allocate(bm *b, const pb_group *g);
pb_status bm_cache_allocate(bm *b, pb_group *g, pb_pair_vec *copies);
int32_t bm_cached_tokens(pb_kv_manager *m, const pb_group *g);   /* kv_manager.h */
void bm_computed(pb_kv_manager *m, pb_seq *s, int32_t n);        /* kv_manager.h */
/* The cache's invariants (the hash table, the LRU list and the tables' hash chains
   agree; the CPU tier's table, LRU, states and queued moves agree); PB_OK without
   caching when nothing of it is in use. */
pb_status bm_cache_check(bm *b);
/* The CPU tier's pool and arrays, its take_tier_moves (kv_manager.h) and its release. */
void bm_tier_init(bm *b, int32_t n_tier);
void bm_take_tier_moves(pb_kv_manager *m, pb_pair_vec *swap_out, pb_pair_vec *swap_in);
void bm_tier_free(bm *b);

/* bm_replay.c */
extern const pb_kv_replay_i bm_replay_ops;
void bm_replay_free(struct bm_replay *r);

#endif /* PB_BLOCK_MANAGER_INT_H */
