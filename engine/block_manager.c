/* block_manager.c -- the `paged` KV manager (see block_manager.h).
 *
 * Per sequence a bm_table (s->kv): physical block numbers of the GPU pool, or of the
 * CPU pool while swapped.  Invariants (bm_check): a table of kv_len tokens has
 * ceil(kv_len / bs) blocks; all but the last are full; the last block's fill equals
 * the tokens the sequence has in it (so a shared block is never written: appends
 * copy on write first); reference counts equal the references from tables plus the
 * prefix pool's pins; free + used (+ cached, GPU) == total in both pools; the running
 * reservation counters (below) equal a walk over every live table; a GPU table's
 * sequence holds its last block in s->kv_aux (append's fast path); the prefix cache's
 * structures agree with each other and with the tables (cache_check). */
#include "block_manager.h"

#include <stdlib.h>
#include <string.h>

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

/* Replayed decode steps (kv_manager.h replay_*; "replayed decode steps" below). */
typedef struct {
    pb_seq *const *seqs;     /* the engine's array                                  */
    int32_t n, k;            /* sequences still in; steps done                      */
    int32_t next;            /* the next sequence to append in step k (0: none yet) */
    int32_t cur;             /* step k's next sequence taking a block: order[cur]   */
    int32_t *base;           /* [n] kv_len at begin: seqs[i] has base[i] + k now    */
    int32_t *phase;          /* [n] the step phase at which seqs[i] takes a block   */
    int32_t *order;          /* sequence indices by phase, each phase in order:     */
    int32_t *start, *end;    /*   phase p's are order[start[p] .. end[p])           */
    int32_t steps_left;      /* steps before some group's last token (contract)     */
    int64_t pending;         /* slots written in place, not yet in block fills      */
    int32_t cap_n, cap_bs;
    bool on;
} bm_replay;

/* Replayed beam-search steps (kv_manager.h beam_*; "replayed beam steps" below). */
#define BM_BEAMS (PB_MAX_TOP / 2)
_Static_assert(BM_BEAMS <= 8, "beam_select keys (walk rank, beam) in 3 + 3 bits");
typedef struct {
    pb_group *g;
    int32_t nb, kv, n;       /* beams; their kv_len; blocks of each table, ceil(kv / bs) */
    int32_t to_end;          /* prompt_len + output_len - 1: tokens to come = to_end - kv */
    int32_t phys, lasts;     /* distinct blocks; distinct last blocks                  */
    int32_t phys0, n0;       /* phys and n at begin (the frozen tables')               */
    int64_t tok0, res0;      /* token and reserved slots at begin (beam_slots)          */
    int32_t dfs[BM_BEAMS];   /* the beams in the order of a walk of their block tree    */
    int32_t rank[BM_BEAMS];  /* rank[dfs[r]] = r                                        */
    int32_t lcp[BM_BEAMS];   /* r >= 1: leading blocks beams dfs[r - 1] and dfs[r] share
                                (lcp[0] and past the beams 0)                         */
} bm_beam;

typedef struct {
    bm_beam *gr;
    int32_t n, cap;
    int32_t beams;           /* the groups' beams (sum of nb)                           */
    int32_t held;            /* blocks the groups hold beyond their frozen tables (< 0:
                                fewer): physical blocks and gpu_avail count it       */
    int64_t logical;         /* logical blocks beyond the frozen tables' (token and
                                reserved slots: beam_slots, summed by usage())     */
    int64_t tok, res;        /* beams_slots' sums as the last beam_step left them,  */
    bool sums;               /*   while nothing changed since (sums true)           */
    bool on;
} bm_beams;

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
    bm_replay rp;            /* replayed decode steps (below); rp.on between begin/end */
    bm_beams bb;             /* replayed beam steps (below); bb.on between begin/end    */
} bm;

static const pb_kv_manager_i BM_IFACE;
static void beams_rebase(bm *b);

static bm *BM(pb_kv_manager *m) { return (bm *)m->impl; }
static const bm *BMc(const pb_kv_manager *m) { return (const bm *)m->impl; }

void pb_paged_params_default(pb_paged_params *p) {
    p->block_size = PB_PAGED_BLOCK_SIZE;
    p->n_gpu_blocks = 0;
    p->n_cpu_blocks = 0;
    p->watermark = PB_PAGED_WATERMARK;
    p->prefix_caching = false;
}

/* ---- tables ---- */

static bm_table *table_new(bm *b, pb_seq *s, bool on_cpu) {
    bm_table *t = b->free_tables;
    if (t) {
        b->free_tables = t->next_free;
    } else {
        t = pb_xcalloc(1, sizeof *t);
    }
    t->n = 0;
    t->n_hashed = t->n_pub = 0;
    t->on_cpu = on_cpu;
    t->seq = s;
    t->next_free = NULL;
    if (b->n_live == b->cap_live) {
        b->cap_live = b->cap_live ? 2 * b->cap_live : 256;
        b->live = pb_xrealloc(b->live, (size_t)b->cap_live * sizeof *b->live);
    }
    t->live_idx = b->n_live;
    b->live[b->n_live++] = t;
    s->kv = t;
    return t;
}

static void table_release(bm *b, bm_table *t) {
    bm_table *last = b->live[--b->n_live];
    b->live[t->live_idx] = last;
    last->live_idx = t->live_idx;
    t->seq = NULL;
    t->next_free = b->free_tables;
    b->free_tables = t;
}

static inline void table_push(bm *b, bm_table *t, int32_t blk) {
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->blocks = pb_xrealloc(t->blocks, (size_t)t->cap * sizeof(int32_t));
    }
    t->blocks[t->n++] = blk;
    if (!t->on_cpu) b->logical_gpu++;
}

static uint32_t next_epoch(bm *b) {
    if (++b->epoch == 0) {   /* wrapped: clear the stamps */
        memset(b->stamp_gpu, 0, (size_t)b->gpu->n_blocks * sizeof(uint32_t));
        memset(b->stamp_cpu, 0, (size_t)(b->cpu->n_blocks + 1) * sizeof(uint32_t));
        b->epoch = 1;
    }
    return b->epoch;
}

/* ---- the running reservation (see bm.reserved) ---- */

/* Slots of t's last block that t's sequence will still fill. */
static int32_t last_share(const bm *b, const bm_table *t) {
    const pb_seq *s = t->seq;
    const pb_group *g = s->group;
    int32_t empty = b->bs - pb_block_alloc_fill(b->gpu, t->blocks[t->n - 1]);
    int32_t to_come = g ? g->prompt_len + g->output_len - 1 - s->kv_len : 0;
    return to_come > 0 ? PB_MIN(empty, to_come) : 0;
}

/* t (GPU) takes part / stops taking part in the reservation: call last_enter after a
 * change of its last block or length, last_leave before one. */
static inline void last_enter(bm *b, const bm_table *t) {
    if (t->n == 0) return;
    t->seq->kv_aux = t->blocks[t->n - 1];   /* append's fast path reads it there */
    if (t->on_cpu) return;
    if (b->last_refs[t->blocks[t->n - 1]]++ == 0) b->reserved += last_share(b, t);
}
static inline void last_leave(bm *b, const bm_table *t) {
    if (t->on_cpu || t->n == 0) return;
    if (--b->last_refs[t->blocks[t->n - 1]] == 0) b->reserved -= last_share(b, t);
}

/* ---- the prefix cache (automatic prefix caching) ---- */

#define HASH0 0x243F6A8885A308D3ULL   /* chain hash before block 0 */

static inline uint64_t mix64(uint64_t x) {   /* splitmix64's finalizer */
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* Identity of token i of s: the token id when tokens are stored, else the trace key
 * (trace.h; only equality matters, so seed 0). */
static uint64_t tok_key(const pb_seq *s, int32_t i) {
    if (s->tokens) return (uint64_t)(uint32_t)s->tokens[i];
    return pb_token_key(s->group->req, i, 0);
}

/* Full blocks of s's first n tokens whose identities are known: all of them, except
 * that without stored tokens the generated tokens of a group with several sequences
 * (samples or beams, which differ) have none: such blocks are never cached. */
static int32_t known_blocks(const bm *b, const pb_seq *s, int32_t n) {
    if (!s->tokens && s->group->max_seqs > 1) n = PB_MIN(n, s->group->prompt_len);
    return n / b->bs;
}

/* Chain hash of full block j of s given the hash of block j - 1 (HASH0 for j = 0). */
static uint64_t block_hash(const bm *b, const pb_seq *s, uint64_t prev, int32_t j) {
    uint64_t h = prev;
    for (int32_t i = j * b->bs; i < (j + 1) * b->bs; i++) h = mix64(h ^ (tok_key(s, i) + 0x9E3779B97F4A7C15ULL));
    return h;
}

static int32_t ht_find(const bm *b, uint64_t h) {
    for (int32_t k = b->ht_head[h & b->ht_mask]; k >= 0; k = b->ht_next[k])
        if (b->blk_hash[k] == h) return k;
    return -1;
}

static void publish(bm *b, int32_t blk, uint64_t h) {
    uint32_t i = (uint32_t)(h & b->ht_mask);
    b->blk_hash[blk] = h;
    b->pub[blk] = 1;
    b->ht_next[blk] = b->ht_head[i];
    b->ht_head[i] = blk;
    b->n_published++;
}

static void unpublish(bm *b, int32_t blk) {
    int32_t *p = &b->ht_head[b->blk_hash[blk] & b->ht_mask];
    while (*p != blk) p = &b->ht_next[*p];
    *p = b->ht_next[blk];
    b->pub[blk] = 0;
    b->n_published--;
}

static void lru_push(bm *b, int32_t blk) {   /* most recently released: the tail */
    b->lru_prev[blk] = b->lru_tail;
    b->lru_next[blk] = -1;
    if (b->lru_tail >= 0) b->lru_next[b->lru_tail] = blk;
    else b->lru_head = blk;
    b->lru_tail = blk;
    b->n_lru++;
}

static void lru_remove(bm *b, int32_t blk) {
    int32_t p = b->lru_prev[blk], n = b->lru_next[blk];
    if (p >= 0) b->lru_next[p] = n;
    else b->lru_head = n;
    if (n >= 0) b->lru_prev[n] = p;
    else b->lru_tail = p;
    b->n_lru--;
}

/* GPU blocks an allocation can take: free, then evictable cached ones. */
static inline int32_t gpu_avail(const bm *b) {
    return pb_block_alloc_free_count(b->gpu) + b->n_lru - b->bb.held;
}

/* A GPU block (ref 1, fill 0): a free one, else the least recently used cached one is
 * evicted for it; -1 when neither exists. */
static int32_t gpu_get(bm *b) {
    if (pb_block_alloc_free_count(b->gpu) == 0 && b->lru_head >= 0) {
        int32_t v = b->lru_head;
        b->evictions++;
        lru_remove(b, v);
        unpublish(b, v);
        pb_block_alloc_evict(b->gpu, v);
    }
    return pb_block_alloc_get(b->gpu);
}

/* Drop one reference to a GPU block; a published block at ref 0 stays cached. */
static void gpu_release(bm *b, int32_t blk) {
    if (!b->caching || !b->pub[blk]) {
        pb_block_alloc_decref(b->gpu, blk);
    } else if (pb_block_alloc_decref_keep(b->gpu, blk) == 0) {
        lru_push(b, blk);
    }
}

/* A cache hit: one more reference to published blk (off the LRU when it was idle). */
static void gpu_hit(bm *b, int32_t blk) {
    if (pb_block_alloc_ref(b->gpu, blk) == 0) {
        lru_remove(b, blk);
        pb_block_alloc_revive(b->gpu, blk, b->bs);
    } else {
        pb_block_alloc_incref(b->gpu, blk);
    }
}

static void hashes_reserve(bm_table *t, int32_t n) {
    if (t->hash_cap >= n) return;
    t->hash_cap = PB_MAX(n, 2 * t->hash_cap);
    t->hashes = pb_xrealloc(t->hashes, (size_t)t->hash_cap * sizeof(uint64_t));
}

/* Cache lookup for WAITING s (len tokens): the chain hashes of its full blocks, and
 * the published blocks that hold blocks j0, j0 + 1, ... up to the first miss, only
 * among the known blocks of its first len - 1 tokens (the last token is always
 * computed).  Writes
 * the hashes of blocks [0, j0 + hits) to hashes and the hit blocks to blks (either
 * may be NULL).  Returns the hits. */
static int32_t lookup(const bm *b, const pb_seq *s, int32_t j0, uint64_t *hashes, int32_t *blks) {
    int32_t max = known_blocks(b, s, s->len - 1), k = 0;
    if (hashes) PB_ASSERT(j0 <= max);
    uint64_t h = HASH0;
    for (int32_t j = 0; j < max; j++) {
        h = block_hash(b, s, h, j);
        if (j >= j0) {
            int32_t blk = ht_find(b, h);
            if (blk < 0) break;
            if (blks) blks[k] = blk;
            k++;
        }
        if (hashes) hashes[j] = h;
    }
    return k;
}

/* Full prompt blocks the later sequences of g share with its first (a recomputed
 * multi-sequence group; the first computes them in the same batch). */
static int32_t sibling_shared(const bm *b, const pb_group *g) {
    return PB_MIN(g->prompt_len / b->bs, PB_CDIV(g->len, b->bs));
}

static void hit_scratch_reserve(bm *b, int32_t n) {
    if (b->hit_cap >= n) return;
    b->hit_cap = PB_MAX(n, 2 * b->hit_cap);
    b->hit_scratch = pb_xrealloc(b->hit_scratch, (size_t)b->hit_cap * sizeof(int32_t));
}

/* Blocks allocate(g) takes from the available ones (free + evictable): new blocks,
 * plus the distinct evictable blocks its hits take off the LRU.  *mapped: distinct
 * blocks g maps (new or hit), what an empty cache would need. */
static int32_t cache_need(bm *b, const pb_group *g, int32_t *mapped) {
    int32_t bs = b->bs, per_seq = PB_CDIV(g->len, bs), shared = sibling_shared(b, g);
    hit_scratch_reserve(b, per_seq);
    uint32_t ep = next_epoch(b);
    int32_t need = 0;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        int32_t j0 = i == 0 ? 0 : shared;
        int32_t k = lookup(b, g->seqs[i], j0, NULL, b->hit_scratch);
        need += per_seq - j0 - k;
        for (int32_t x = 0; x < k; x++) {
            int32_t blk = b->hit_scratch[x];
            if (pb_block_alloc_ref(b->gpu, blk) == 0 && b->stamp_gpu[blk] != ep) {
                b->stamp_gpu[blk] = ep;
                need++;
            }
        }
    }
    *mapped = per_seq + PB_MAX(g->n_seqs - 1, 0) * (per_seq - shared);
    return need;
}

static pb_alloc_status cache_can_allocate(bm *b, const pb_group *g) {
    int32_t mapped, need = cache_need(b, g, &mapped);
    if (mapped > b->gpu->n_blocks - b->watermark_blocks) return PB_ALLOC_NEVER;
    if (gpu_avail(b) - need >= b->watermark_blocks) return PB_ALLOC_OK;
    return PB_ALLOC_LATER;
}

static void extend(bm *b, bm_table *t, int32_t *kv_len, int32_t target, pb_pair_vec *copies);

/* allocate() with the cache: every sequence first takes its hits (pinned, so that no
 * eviction for another sequence's new blocks can take them), then its new blocks. */
static pb_status cache_allocate(bm *b, pb_group *g, pb_pair_vec *copies) {
    int32_t mapped;
    if (cache_need(b, g, &mapped) > gpu_avail(b)) return PB_ERR_NO_SPACE;
    int32_t bs = b->bs, per_seq = PB_CDIV(g->len, bs), shared = sibling_shared(b, g);
    hit_scratch_reserve(b, g->n_seqs * per_seq);
    int32_t *hits = b->hit_scratch;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        pb_seq *s = g->seqs[i];
        PB_ASSERT(s->kv == NULL);
        bm_table *t = table_new(b, s, false);
        hashes_reserve(t, per_seq);
        /* a later sequence hashes past the shared blocks only when it has more known
           blocks (a recomputed group has generated tokens: len > prompt_len) */
        int32_t j0 = i == 0 ? 0 : shared;
        int32_t k = j0 <= known_blocks(b, s, s->len - 1) ? lookup(b, s, j0, t->hashes, hits + i * per_seq) : 0;
        t->n_hashed = k > 0 ? j0 + k : 0;   /* what the loop below reads back */
        for (int32_t x = 0; x < k; x++) gpu_hit(b, hits[i * per_seq + x]);
    }
    bm_table *t0 = g->seqs[0]->kv;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        pb_seq *s = g->seqs[i];
        bm_table *t = s->kv;
        int32_t j0 = i == 0 ? 0 : shared, k = t->n_hashed > 0 ? t->n_hashed - j0 : 0;
        for (int32_t x = 0; x < j0; x++) {
            pb_block_alloc_incref(b->gpu, t0->blocks[x]);
            table_push(b, t, t0->blocks[x]);
        }
        for (int32_t x = 0; x < k; x++) table_push(b, t, hits[i * per_seq + x]);
        int32_t kv = (j0 + k) * bs;
        if (i == 0) {
            b->query_tokens += g->len;
            b->hit_tokens += kv;
        }
        s->n_cached = kv;
        extend(b, t, &kv, s->len, copies);
        s->kv_len = kv;
        last_enter(b, t);
    }
    return PB_OK;
}

/* ---- the prefix pool ---- */

static bool uses_prefix(const bm *b, const pb_group *g) {
    /* a prompt that is only the prefix is allocated privately (its last token must be
       computed by the request itself, never written into a pinned block); the prefix
       cache replaces the pool */
    return !b->caching && g->prefix_id >= 0 && g->prefix_len > 0 && g->prompt_len > g->prefix_len;
}

static bm_prefix *prefix_get(bm *b, int32_t id) {
    if (id >= b->n_prefixes) {
        int32_t n = PB_MAX(id + 1, 2 * b->n_prefixes);
        b->prefixes = pb_xrealloc(b->prefixes, (size_t)n * sizeof *b->prefixes);
        memset(b->prefixes + b->n_prefixes, 0, (size_t)(n - b->n_prefixes) * sizeof *b->prefixes);
        b->n_prefixes = n;
    }
    return &b->prefixes[id];
}

static int32_t prefix_new_blocks(const bm *b, const pb_group *g) {
    if (!uses_prefix(b, g)) return 0;
    if (g->prefix_id < b->n_prefixes && b->prefixes[g->prefix_id].present) return 0;
    return PB_CDIV(g->prefix_len, b->bs);
}

/* ---- admission ---- */

/* Blocks allocate(g) takes from the GPU pool (shared blocks counted once). */
static int32_t blocks_needed(const bm *b, const pb_group *g) {
    int32_t bs = b->bs;
    int32_t per_seq = PB_CDIV(g->len, bs);
    int32_t first = per_seq;
    if (uses_prefix(b, g)) first = per_seq - g->prefix_len / bs;   /* full prefix blocks mapped */
    int32_t shared = PB_MIN(g->prompt_len / bs, per_seq);
    int32_t others = PB_MAX(g->n_seqs - 1, 0) * (per_seq - shared);
    return prefix_new_blocks(b, g) + first + others;
}

static pb_alloc_status bm_can_allocate(pb_kv_manager *m, const pb_group *g) {
    bm *b = BM(m);
    if (b->caching) return cache_can_allocate(b, g);
    int32_t need = blocks_needed(b, g);
    int32_t usable = b->gpu->n_blocks - b->pinned_blocks - b->watermark_blocks;
    if (need > usable) return PB_ALLOC_NEVER;
    if (gpu_avail(b) - need >= b->watermark_blocks) return PB_ALLOC_OK;
    return PB_ALLOC_LATER;
}

/* Grow t (GPU) from *kv_len to target tokens: new blocks when the last is full, copy
 * on write when it is shared.  Enough free blocks must exist (checked by callers). */
static void extend(bm *b, bm_table *t, int32_t *kv_len, int32_t target, pb_pair_vec *copies) {
    int32_t bs = b->bs;
    while (*kv_len < target) {
        int32_t off = b->bs_mask >= 0 ? (*kv_len & b->bs_mask) : *kv_len % bs;
        int32_t take = PB_MIN(bs - off, target - *kv_len);
        if (off == 0) {
            int32_t nb = gpu_get(b);
            PB_ASSERT(nb >= 0);
            pb_block_alloc_set_fill(b->gpu, nb, take);
            table_push(b, t, nb);
        } else {
            int32_t last = t->blocks[t->n - 1];
            PB_ASSERT(pb_block_alloc_fill(b->gpu, last) == off);
            if (pb_block_alloc_ref(b->gpu, last) == 1) {
                pb_block_alloc_set_fill(b->gpu, last, off + take);
            } else {   /* copy on write (a partial block: never published) */
                int32_t nb = gpu_get(b);
                PB_ASSERT(nb >= 0);
                pb_block_alloc_set_fill(b->gpu, nb, off + take);
                if (copies) pb_pair_vec_push(copies, last, nb);
                gpu_release(b, last);
                t->blocks[t->n - 1] = nb;
            }
        }
        *kv_len += take;
    }
}

static pb_status bm_allocate(pb_kv_manager *m, pb_group *g, pb_pair_vec *copies) {
    bm *b = BM(m);
    if (g->n_seqs < 1) return PB_ERR_INVALID;
    if (b->caching) return cache_allocate(b, g, copies);
    int32_t need = blocks_needed(b, g);
    if (need > pb_block_alloc_free_count(b->gpu) && b->bb.on && b->bb.held < 0) beams_rebase(b);
    if (need > pb_block_alloc_free_count(b->gpu)) return PB_ERR_NO_SPACE;
    int32_t bs = b->bs;
    pb_seq *s0 = g->seqs[0];
    PB_ASSERT(s0->kv == NULL);
    bm_table *t0 = table_new(b, s0, false);
    int32_t kv = 0;
    s0->n_cached = 0;
    if (uses_prefix(b, g)) {
        bm_prefix *p = prefix_get(b, g->prefix_id);
        bool fresh = !p->present;
        if (fresh) {   /* reserve the prefix once; the first user computes it */
            p->present = true;
            p->len = g->prefix_len;
            p->n = PB_CDIV(p->len, bs);
            p->blocks = pb_xmalloc((size_t)p->n * sizeof(int32_t));
            for (int32_t i = 0; i < p->n; i++) {
                int32_t nb = pb_block_alloc_get(b->gpu);
                PB_ASSERT(nb >= 0);
                pb_block_alloc_set_fill(b->gpu, nb, PB_MIN(bs, p->len - i * bs));
                p->blocks[i] = nb;
            }
            b->pinned_blocks += p->n;
        } else {
            PB_ASSERT(p->len == g->prefix_len);   /* one length per prefix id */
        }
        for (int32_t i = 0; i < p->n; i++) {
            pb_block_alloc_incref(b->gpu, p->blocks[i]);
            table_push(b, t0, p->blocks[i]);
        }
        kv = p->len;
        /* KV of the full prefix blocks exists (or is computed earlier in this batch by
           the first user); the partial block is copied on write below and its tokens
           recomputed, since its pinned copy is never written by anyone. */
        s0->n_cached = fresh ? 0 : (p->len / bs) * bs;
    }
    extend(b, t0, &kv, s0->len, copies);
    s0->kv_len = kv;
    last_enter(b, t0);
    /* other waiting sequences (recompute of a multi-sequence group): share the full
       prompt blocks of the first, the rest private */
    int32_t shared = PB_MIN(g->prompt_len / bs, t0->n);
    for (int32_t i = 1; i < g->n_seqs; i++) {
        pb_seq *s = g->seqs[i];
        PB_ASSERT(s->kv == NULL);
        bm_table *t = table_new(b, s, false);
        for (int32_t k = 0; k < shared; k++) {
            pb_block_alloc_incref(b->gpu, t0->blocks[k]);
            table_push(b, t, t0->blocks[k]);
        }
        int32_t kl = shared * bs;
        s->n_cached = kl;
        extend(b, t, &kl, s->len, copies);
        s->kv_len = kl;
        last_enter(b, t);
    }
    return PB_OK;
}

static bool bm_can_append(pb_kv_manager *m, const pb_group *g) {
    /* vLLM can_append_slot: one possible new block per running sequence */
    return g->n_seqs <= gpu_avail(BM(m));
}

/* append's common case, a private last block with room: written in place, and its
   share of the reservation (min(empty, to come), both one less) drops by one unless
   nothing was to come.  False (nothing done) otherwise. */
static inline bool append_in_place(bm *b, pb_seq *s) {
    int32_t kv = s->kv_len;
    int32_t off = b->bs_mask >= 0 ? (kv & b->bs_mask) : kv % b->bs;
    int32_t last = (int32_t)s->kv_aux;   /* the table's last block (last_enter), without
                                            reading the table */
    if (off == 0 || pb_block_alloc_ref(b->gpu, last) != 1) return false;
    const pb_group *g = s->group;
    if (g && g->prompt_len + g->output_len - 1 - kv >= 1) b->reserved--;
    pb_block_alloc_set_fill(b->gpu, last, off + 1);
    s->kv_len = kv + 1;
    return true;
}

static pb_status bm_append(pb_kv_manager *m, pb_seq *s, pb_pair_vec *copies) {
    bm *b = BM(m);
    if (append_in_place(b, s)) return PB_OK;
    int32_t kv = s->kv_len;
    int32_t off = b->bs_mask >= 0 ? (kv & b->bs_mask) : kv % b->bs;
    bm_table *t = s->kv;
    PB_ASSERT(t && !t->on_cpu && t->n == PB_CDIV(kv, b->bs));
    if (gpu_avail(b) == 0 && (off == 0 || pb_block_alloc_ref(b->gpu, t->blocks[t->n - 1]) > 1))
        return PB_ERR_NO_SPACE;
    last_leave(b, t);
    extend(b, t, &kv, kv + 1, copies);
    s->kv_len = kv;
    last_enter(b, t);
    return PB_OK;
}

/* t (of s) becomes a copy of pt (of parent) from block `from` on (the caller has
 * taken the references of pt's blocks from `from` and dropped t's): blocks, hash
 * chain, lengths; t re-enters the reservation. */
static void table_follow(bm *b, bm_table *t, const bm_table *pt, int32_t from, pb_seq *s,
                         const pb_seq *parent) {
    if (t->cap < pt->n) {
        t->cap = pt->n;
        t->blocks = pb_xrealloc(t->blocks, (size_t)t->cap * sizeof(int32_t));
    }
    memcpy(t->blocks + from, pt->blocks + from, (size_t)(pt->n - from) * sizeof(int32_t));
    if (!t->on_cpu) b->logical_gpu += pt->n - t->n;
    t->n = pt->n;
    if (pt->n_hashed > 0) {
        hashes_reserve(t, pt->n_hashed);
        memcpy(t->hashes, pt->hashes, (size_t)pt->n_hashed * sizeof(uint64_t));
    }
    t->n_hashed = pt->n_hashed;
    t->n_pub = pt->n_pub;
    s->kv_len = parent->kv_len;
    s->n_cached = parent->n_cached;
    last_enter(b, t);
}

static pb_status bm_fork(pb_kv_manager *m, const pb_seq *parent, pb_seq *child) {
    bm *b = BM(m);
    const bm_table *pt = parent->kv;
    PB_ASSERT(pt && child->kv == NULL);
    bm_table *t = table_new(b, child, pt->on_cpu);
    pb_block_alloc *a = pt->on_cpu ? b->cpu : b->gpu;
    for (int32_t i = 0; i < pt->n; i++) pb_block_alloc_incref(a, pt->blocks[i]);
    table_follow(b, t, pt, 0, child, parent);
    return PB_OK;
}

/* Only the blocks past the common prefix change hands: parent's are taken first (a
 * block the two share is never dropped on the way), then s's are released in
 * bm_free's order. */
static pb_status bm_refork(pb_kv_manager *m, const pb_seq *parent, pb_seq *s) {
    bm *b = BM(m);
    const bm_table *pt = parent->kv;
    bm_table *t = s->kv;
    PB_ASSERT(pt && t && pt != t && pt->on_cpu == t->on_cpu);
    pb_block_alloc *a = t->on_cpu ? b->cpu : b->gpu;
    int32_t cp = 0;
    while (cp < t->n && cp < pt->n && t->blocks[cp] == pt->blocks[cp]) cp++;
    last_leave(b, t);
    for (int32_t i = cp; i < pt->n; i++) pb_block_alloc_incref(a, pt->blocks[i]);
    if (t->on_cpu || !b->caching) {
        for (int32_t i = cp; i < t->n; i++) pb_block_alloc_decref(a, t->blocks[i]);
    } else {
        for (int32_t i = t->n - 1; i >= cp; i--) gpu_release(b, t->blocks[i]);
    }
    table_follow(b, t, pt, cp, s, parent);
    return PB_OK;
}

static void bm_free(pb_kv_manager *m, pb_seq *s) {
    bm *b = BM(m);
    bm_table *t = s->kv;
    if (!t) return;
    last_leave(b, t);
    if (t->on_cpu) {
        for (int32_t i = 0; i < t->n; i++) pb_block_alloc_decref(b->cpu, t->blocks[i]);
    } else if (b->caching) {   /* last block first: a sequence's tail is evicted before its head */
        for (int32_t i = t->n - 1; i >= 0; i--) gpu_release(b, t->blocks[i]);
    } else {
        for (int32_t i = 0; i < t->n; i++) pb_block_alloc_decref(b->gpu, t->blocks[i]);
    }
    if (!t->on_cpu) b->logical_gpu -= t->n;
    t->n = 0;
    table_release(b, t);
    s->kv = NULL;
    s->kv_len = 0;
}

/* ---- swapping ---- */

static int32_t distinct_blocks(bm *b, const pb_group *g, bool on_cpu) {
    uint32_t ep = next_epoch(b);
    uint32_t *stamp = on_cpu ? b->stamp_cpu : b->stamp_gpu;
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        const bm_table *t = g->seqs[i]->kv;
        if (!t) continue;
        for (int32_t k = 0; k < t->n; k++) {
            int32_t blk = t->blocks[k];
            if (stamp[blk] != ep) { stamp[blk] = ep; n++; }
        }
    }
    return n;
}

static bool bm_can_swap_out(pb_kv_manager *m, const pb_group *g) {
    bm *b = BM(m);
    return distinct_blocks(b, g, false) <= pb_block_alloc_free_count(b->cpu);
}

/* Move every table of g from one pool to the other, each shared block once. */
static pb_status move_group(bm *b, pb_group *g, bool to_cpu, pb_pair_vec *map) {
    pb_block_alloc *src = to_cpu ? b->gpu : b->cpu, *dst = to_cpu ? b->cpu : b->gpu;
    uint32_t *stamp = to_cpu ? b->stamp_gpu : b->stamp_cpu;
    int32_t *mp = to_cpu ? b->map_gpu : b->map_cpu;
    int32_t need = distinct_blocks(b, g, !to_cpu);
    if (need > (to_cpu ? pb_block_alloc_free_count(dst) : gpu_avail(b))) return PB_ERR_NO_SPACE;
    if (to_cpu)
        for (int32_t i = 0; i < g->n_seqs; i++) last_leave(b, g->seqs[i]->kv);
    uint32_t ep = next_epoch(b);
    for (int32_t i = 0; i < g->n_seqs; i++) {
        bm_table *t = g->seqs[i]->kv;
        PB_ASSERT(t && t->on_cpu == !to_cpu);
        for (int32_t k = 0; k < t->n; k++) {
            int32_t from = t->blocks[k], to;
            if (stamp[from] == ep) {
                to = mp[from];
                pb_block_alloc_incref(dst, to);
            } else {
                to = to_cpu ? pb_block_alloc_get(dst) : gpu_get(b);
                PB_ASSERT(to >= 0);
                pb_block_alloc_set_fill(dst, to, pb_block_alloc_fill(src, from));
                stamp[from] = ep;
                mp[from] = to;
                pb_pair_vec_push(map, from, to);
            }
            if (to_cpu) gpu_release(b, from);   /* a published block stays cached */
            else pb_block_alloc_decref(src, from);
            t->blocks[k] = to;
        }
        t->on_cpu = to_cpu;
        t->n_pub = 0;   /* new GPU blocks: offered to the cache again after the next step */
        b->logical_gpu += to_cpu ? -t->n : t->n;
    }
    if (!to_cpu)
        for (int32_t i = 0; i < g->n_seqs; i++) last_enter(b, g->seqs[i]->kv);
    return PB_OK;
}

static pb_status bm_swap_out(pb_kv_manager *m, pb_group *g, pb_pair_vec *map) {
    return move_group(BM(m), g, true, map);
}

static pb_alloc_status bm_can_swap_in(pb_kv_manager *m, const pb_group *g) {
    bm *b = BM(m);
    int32_t need = distinct_blocks(b, g, true) + g->n_seqs;   /* + one append each */
    if (need > b->gpu->n_blocks - b->pinned_blocks - b->watermark_blocks) return PB_ALLOC_NEVER;
    if (gpu_avail(b) - need >= b->watermark_blocks) return PB_ALLOC_OK;
    return PB_ALLOC_LATER;
}

static pb_status bm_swap_in(pb_kv_manager *m, pb_group *g, pb_pair_vec *map) {
    return move_group(BM(m), g, false, map);
}

/* ---- the cache's kv_manager ops ---- */

static int32_t bm_cached_tokens(pb_kv_manager *m, const pb_group *g) {
    bm *b = BM(m);
    return b->caching && g->n_seqs > 0 ? lookup(b, g->seqs[0], 0, NULL, NULL) * b->bs : 0;
}

/* s's first n tokens have KV: offer its full blocks not offered yet to the cache (a
 * block whose content is already published elsewhere stays private). */
static void bm_computed(pb_kv_manager *m, pb_seq *s, int32_t n) {
    bm *b = BM(m);
    bm_table *t = s->kv;
    if (!b->caching || !t) return;
    PB_ASSERT(!t->on_cpu && n <= s->kv_len);
    int32_t full = known_blocks(b, s, n);
    if (full > t->n_hashed) hashes_reserve(t, full);
    for (int32_t j = t->n_pub; j < full; j++) {
        if (j >= t->n_hashed) {
            t->hashes[j] = block_hash(b, s, j ? t->hashes[j - 1] : HASH0, j);
            t->n_hashed = j + 1;
        }
        int32_t blk = t->blocks[j];
        if (!b->pub[blk] && ht_find(b, t->hashes[j]) < 0) publish(b, blk, t->hashes[j]);
        t->n_pub = j + 1;
    }
}

/* ---- executor view, usage, check ---- */

static void bm_batch_info(pb_kv_manager *m, const pb_seq *s, pb_batch_seq *out) {
    const bm_table *t = s->kv;
    PB_ASSERT(t && !t->on_cpu);
    out->block_table = t->blocks;
    out->n_blocks = t->n;
    out->kv_offset = 0;
}

/* ---- replayed decode steps (kv_manager.h replay_*) ----
 * At replay step k (from 0) sequence i has kv_len base[i] + k before its append; its
 * last block is full, and it takes a block, at the steps whose phase k % bs is
 * phase[i] = (bs - base[i] % bs) % bs.  Every other append writes in place, which
 * the replay counts instead of doing: one slot more in `pending` (usage adds it to
 * the token slots) and one reserved slot less (the sequence's share min(empty, to
 * come) drops by one, to come staying >= 1 by the contract).  A sequence taking a
 * block is brought up to date first (its kv_len, its full last block's fill), then
 * appends as append() does; a popped sequence and replay_end bring sequences up to
 * date.  So a step costs O(1 + the sequences taking a block) and leaves the pools,
 * reference counts and reservation exactly as can_append + append of each in turn
 * would. */

static inline int32_t phase_of(const bm *b, int32_t kv) {
    int32_t off = b->bs_mask >= 0 ? (kv & b->bs_mask) : kv % b->bs;
    return off ? b->bs - off : 0;
}

static pb_status bm_replay_begin(pb_kv_manager *m, pb_seq *const *seqs, int32_t n) {
    bm *b = BM(m);
    bm_replay *r = &b->rp;
    PB_ASSERT(!r->on && n >= 1);
    if (r->cap_n < n) {
        r->cap_n = PB_MAX(n, 2 * r->cap_n);
        r->base = pb_xrealloc(r->base, (size_t)r->cap_n * sizeof *r->base);
        r->phase = pb_xrealloc(r->phase, (size_t)r->cap_n * sizeof *r->phase);
        r->order = pb_xrealloc(r->order, (size_t)r->cap_n * sizeof *r->order);
    }
    if (r->cap_bs < b->bs + 1) {
        r->cap_bs = b->bs + 1;
        r->start = pb_xrealloc(r->start, (size_t)r->cap_bs * sizeof *r->start);
        r->end = pb_xrealloc(r->end, (size_t)r->cap_bs * sizeof *r->end);
    }
    memset(r->end, 0, (size_t)b->bs * sizeof *r->end);
    r->steps_left = INT32_MAX;
    for (int32_t i = 0; i < n; i++) {
        const pb_seq *q = seqs[i];
        const pb_group *g = q->group;
        PB_ASSERT(q->kv && !((const bm_table *)q->kv)->on_cpu && g->n_seqs == 1);
        int32_t kv = q->kv_len, p = phase_of(b, kv);
        if (p != 0 && pb_block_alloc_ref(b->gpu, (int32_t)q->kv_aux) != 1)
            return PB_ERR_UNSUPPORTED;   /* a shared partial last block: copy on write */
        r->base[i] = kv;
        r->phase[i] = p;
        r->end[p]++;
        r->steps_left = PB_MIN(r->steps_left, g->prompt_len + g->output_len - 1 - kv);
    }
    /* counting sort by phase, stable: end[p] counts phase p, then runs to its end */
    for (int32_t p = 0, at = 0; p < b->bs; p++) {
        r->start[p] = at;
        at += r->end[p];
        r->end[p] = r->start[p];
    }
    for (int32_t i = 0; i < n; i++) r->order[r->end[r->phase[i]]++] = i;
    r->seqs = seqs;
    r->n = n;
    r->k = r->next = 0;
    r->pending = 0;
    r->on = true;
    return PB_OK;
}

/* Sequence i of the replay up to date: kv_len (appended in step k or not), and its
   last block's fill (the slots written in place move from pending into the fills). */
static void replay_sync(bm *b, int32_t i, bool appended) {
    bm_replay *r = &b->rp;
    pb_seq *s = r->seqs[i];
    bm_table *t = s->kv;
    s->kv_len = r->base[i] + r->k + appended;
    int32_t last = t->blocks[t->n - 1], fill = s->kv_len - (t->n - 1) * b->bs;
    r->pending -= fill - pb_block_alloc_fill(b->gpu, last);
    pb_block_alloc_set_fill(b->gpu, last, fill);
}

/* Step k's appends from seqs[next] on, in order, until one cannot (can_append: no
   free block): its index; the step is complete (k + 1) when they all could. */
static int32_t bm_replay_step(pb_kv_manager *m) {
    bm *b = BM(m);
    bm_replay *r = &b->rp;
    int32_t from = r->next;
    PB_ASSERT(r->on && r->k < r->steps_left);
    int32_t p = b->bs_mask >= 0 ? (r->k & b->bs_mask) : r->k % b->bs;
    if (from == 0) r->cur = r->start[p];
    int32_t taken = 0, stuck = r->n;   /* blocks taken in this call */
    if (gpu_avail(b) < 1) {
        stuck = from;
    } else {
        for (; r->cur < r->end[p]; r->cur++) {
            int32_t i = r->order[r->cur];   /* from <= i: the ones before appended */
            replay_sync(b, i, false);       /* its last block is full: share 0, as the
                                               reservation has it */
            pb_status st = bm_append(m, r->seqs[i], NULL);
            PB_ASSERT(st == PB_OK);
            (void)st;
            taken++;
            if (gpu_avail(b) < 1 && i + 1 < r->n) {
                stuck = i + 1;
                r->cur++;
                break;
            }
        }
    }
    int32_t in_place = stuck - from - taken;   /* seqs [from, stuck) less those taking a block */
    r->pending += in_place;
    b->reserved -= in_place;
    r->next = stuck;
    if (stuck == r->n) r->k++, r->next = 0;
    return stuck;
}

/* The last sequence, not yet appended in step k, leaves the replay up to date. */
static void bm_replay_pop(pb_kv_manager *m) {
    bm *b = BM(m);
    bm_replay *r = &b->rp;
    int32_t i = r->n - 1;
    PB_ASSERT(r->on && i >= r->next && i >= 0);
    replay_sync(b, i, false);
    int32_t p = r->phase[i];
    PB_ASSERT(r->order[r->end[p] - 1] == i);   /* the last of its phase */
    r->end[p]--;
    r->n--;
    if (r->n == r->next && r->next > 0) r->k++, r->next = 0;   /* the step is complete */
}

static void bm_replay_end(pb_kv_manager *m) {
    bm *b = BM(m);
    bm_replay *r = &b->rp;
    PB_ASSERT(r->on && r->next == 0);
    for (int32_t i = 0; i < r->n; i++) replay_sync(b, i, false);
    PB_ASSERT(r->pending == 0);
    r->on = false;
}

/* ---- replayed beam steps (kv_manager.h beam_*) ----
 * Each group is a tree of blocks: the beams' tables are paths from the prompt's
 * first block (a block at the same index in two tables means the same blocks before
 * it: forks copy tables, appends copy on write), kept as the beams in the order of a
 * walk of the tree (dfs) and the leading blocks each shares with the one before it
 * (lcp; no earlier beam shares more), so the group holds phys = nb n - sum of lcp
 * distinct blocks, of them lasts = nb - #(lcp == n) last blocks.  An append takes a
 * block per beam when the last is full (n + 1), else copies on write each shared
 * last block once per extra holder (nb - lasts copies; lcp n becomes n - 1).  A
 * selection puts each chosen parent's children where the parent was in the walk,
 * siblings sharing all n blocks, a parent's first child sharing with the child
 * before it the least lcp between their parents.  The tables stay as they were at
 * begin (frozen: kv_len, fills and the reservation too); the difference in blocks
 * (held) and logical blocks is kept in bb for usage() and gpu_avail(), the token and
 * reserved slots are counted from each group's counts when usage() asks.  beam_end
 * drops the frozen tables and builds new ones in walk order: a beam's first lcp
 * blocks are the previous beam's, the rest new blocks (the same sharing, other block
 * numbers).  A group joins (beam_join: an arrival admitted mid-replay) with its own
 * frozen tables and baselines.  An allocation for a group outside the replay while
 * the groups hold fewer blocks than their frozen tables (held < 0: blocks free in
 * the count but still in the allocator's tables) first rebuilds the tables and
 * freezes them again (beams_rebase).  A step costs O(beams) per group, without a
 * branch on the draws; begin and a join O(beams^2 log n), the rebuild O(table
 * entries). */

/* Leading blocks tables a and c (n blocks each) share: equal up to some index,
   different from there on (see above), so a binary search finds it. */
static int32_t common_blocks(const bm_table *a, const bm_table *c, int32_t n) {
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (a->blocks[mid] == c->blocks[mid]) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Does table a come before table c in the walk (block numbers at their first
   difference; ties: equal tables)? */
static bool walk_before(const bm_table *a, const bm_table *c, int32_t n) {
    int32_t i = common_blocks(a, c, n);
    return i < n && a->blocks[i] < c->blocks[i];
}

/* x's distinct blocks and last blocks from its walk. */
static void beam_count(bm_beam *x) {
    int32_t shared = 0, lasts = x->nb;
    for (int32_t r = 1; r < x->nb; r++) {
        shared += x->lcp[r];
        lasts -= x->lcp[r] == x->n;
    }
    x->phys = x->nb * x->n - shared;
    x->lasts = lasts;
}

/* x's token and reserved slots (as usage() and last_share() count them) from its
   counts: computed when asked (bm_beam_step sums them for usage()), not kept. */
static void beam_slots(const bm *b, const bm_beam *x, int64_t *tok, int64_t *res) {
    int32_t fill = x->kv - (x->n - 1) * b->bs, to_come = x->to_end - x->kv;
    *tok = (int64_t)(x->phys - x->lasts) * b->bs + (int64_t)x->lasts * fill;
    *res = to_come > 0 ? (int64_t)x->lasts * PB_MIN(b->bs - fill, to_come) : 0;
}

/* The token and reserved slots the replayed beam groups hold beyond their frozen
   tables (bb.on): bm_beam_step's sums when nothing changed since (usage() right
   after a step: the common case), else a walk. */
static void beams_slots(const bm *b, int64_t *tok, int64_t *res) {
    if (b->bb.sums) {
        *tok = b->bb.tok;
        *res = b->bb.res;
        return;
    }
    int64_t tok_sum = 0, res_sum = 0;   /* summed here, not through tok and res */
    for (int32_t i = 0; i < b->bb.n; i++) {
        const bm_beam *x = &b->bb.gr[i];
        int64_t t, r;
        beam_slots(b, x, &t, &r);
        tok_sum += t - x->tok0;
        res_sum += r - x->res0;
    }
    *tok = tok_sum;
    *res = res_sum;
}

/* x's baselines: what its tables hold now (frozen from here). */
static void beam_freeze(bm *b, bm_beam *x) {
    b->bb.sums = false;
    beam_slots(b, x, &x->tok0, &x->res0);
    x->phys0 = x->phys;
    x->n0 = x->n;
}

/* Group g's walk, counts and baselines (its tables as they are: frozen from here). */
static void beam_enter(bm *b, bm_beam *x, pb_group *g) {
    x->g = g;
    x->nb = g->n_seqs;
    x->kv = g->seqs[0]->kv_len;
    x->n = PB_CDIV(x->kv, b->bs);
    x->to_end = g->prompt_len + g->output_len - 1;
    b->bb.beams += x->nb;
    for (int32_t e = 0; e < x->nb; e++) {   /* the walk: tables in block order */
        const bm_table *t = g->seqs[e]->kv;
        PB_ASSERT(t && !t->on_cpu && t->n == x->n && g->seqs[e]->kv_len == x->kv);
        int32_t r = e;
        for (; r > 0 && walk_before(t, g->seqs[x->dfs[r - 1]]->kv, x->n); r--) x->dfs[r] = x->dfs[r - 1];
        x->dfs[r] = e;
    }
    memset(x->lcp, 0, sizeof x->lcp);   /* 0 past the beams too (bm_beam_step reads all) */
    for (int32_t r = 0; r < x->nb; r++) {
        x->rank[x->dfs[r]] = r;
        if (r > 0) x->lcp[r] = common_blocks(g->seqs[x->dfs[r - 1]]->kv, g->seqs[x->dfs[r]]->kv, x->n);
    }
    beam_count(x);
    beam_freeze(b, x);
}

/* Room in bb for n groups. */
static void beams_reserve(bm_beams *bb, int32_t n) {
    if (bb->cap >= n) return;
    bb->cap = PB_MAX(n, 2 * bb->cap);
    bb->gr = pb_xrealloc(bb->gr, (size_t)bb->cap * sizeof *bb->gr);
}

static bool beam_supported(const bm *b, const pb_group *g) {
    return g->n_seqs <= BM_BEAMS && !uses_prefix(b, g);
}

static pb_status bm_beam_begin(pb_kv_manager *m, pb_group *const *groups, int32_t n) {
    bm *b = BM(m);
    bm_beams *bb = &b->bb;
    PB_ASSERT(!bb->on && !b->rp.on && n >= 1);
    if (b->caching) return PB_ERR_UNSUPPORTED;
    for (int32_t i = 0; i < n; i++)
        if (!beam_supported(b, groups[i])) return PB_ERR_UNSUPPORTED;
    beams_reserve(bb, n);
    bb->held = 0;
    bb->logical = 0;
    bb->beams = 0;
    for (int32_t i = 0; i < n; i++) beam_enter(b, &bb->gr[i], groups[i]);
    bb->n = n;
    bb->on = true;
    return PB_OK;
}

static pb_status bm_beam_join(pb_kv_manager *m, pb_group *g) {
    bm *b = BM(m);
    bm_beams *bb = &b->bb;
    PB_ASSERT(bb->on);
    if (!beam_supported(b, g)) return PB_ERR_UNSUPPORTED;
    beams_reserve(bb, bb->n + 1);
    beam_enter(b, &bb->gr[bb->n++], g);
    return PB_OK;
}

/* One step's appends; -1 (nothing done) when a group cannot append (can_append:
   one possible block per beam, after the groups before it took theirs). */
static int32_t bm_beam_step(pb_kv_manager *m) {
    bm *b = BM(m);
    bm_beams *bb = &b->bb;
    PB_ASSERT(bb->on);
    int32_t avail = gpu_avail(b), copies = 0;
    int64_t tok = 0, res = 0;   /* beams_slots' sums, after the appends */
    for (int32_t i = 0; i < bb->n && avail < bb->beams; i++) {   /* none when a block is free for every beam */
        const bm_beam *x = &bb->gr[i];
        if (x->nb > avail) return -1;
        avail -= phase_of(b, x->kv) == 0 ? x->nb : x->nb - x->lasts;
    }
    for (int32_t i = 0; i < bb->n; i++) {
        bm_beam *x = &bb->gr[i];
        PB_ASSERT(x->kv < x->to_end);
        int32_t take = x->nb;   /* a block per beam at a block boundary */
        if (phase_of(b, x->kv) == 0) {
            x->n++;
            bb->logical += x->nb;
        } else if ((take = x->nb - x->lasts) > 0) {   /* shared last blocks: copies */
            for (int32_t r = 0; r < BM_BEAMS; r++) x->lcp[r] -= x->lcp[r] == x->n;   /* (lcp[0] 0: n >= 1) */
            copies += take;
        }
        x->kv++;
        x->phys += take;
        x->lasts = x->nb;
        bb->held += take;
        int64_t t, r;
        beam_slots(b, x, &t, &r);
        tok += t - x->tok0;
        res += r - x->res0;
    }
    bb->tok = tok;
    bb->res = res;
    bb->sums = true;
    return copies;
}

/* Children keyed (parent's walk rank, index) in one 64-bit set (nb <= 8: keys <
   64) come out of it in the new walk order; gap[r] is the least lcp between a chosen
   parent at rank r and the chosen one before it (0 for the first chosen: the walk's
   first beam shares nothing with one before it). */
static inline int32_t beam_select(bm_beam *x, int32_t nb, const int32_t *parent) {
    int32_t n = x->n;
    uint64_t keys = 0;
    uint32_t chosen = 0, bad = 0;
    for (int32_t e = 0; e < nb; e++) {
        uint32_t p = (uint32_t)parent[e];
        bad |= p >= (uint32_t)nb;
        int32_t rk = x->rank[p & (BM_BEAMS - 1)];
        keys |= 1ull << (rk << 3 | e);
        chosen |= 1u << rk;
    }
    PB_ASSERT(!bad);   /* every parent in 0 .. nb - 1 */
    int32_t gap[BM_BEAMS], least = chosen & 1u ? n : 0;   /* 0 up to the first chosen: its lcp */
    gap[0] = 0;
    for (int32_t r = 1; r < nb; r++) {
        least = PB_MIN(least, x->lcp[r]);
        gap[r] = least;
        least = (chosen >> r) & 1u ? n : least;
    }
    int32_t shared = 0, lasts = nb, prev = -1;
    for (int32_t at = 0; at < nb; at++, keys &= keys - 1) {
        int32_t key = __builtin_ctzll(keys), rk = key >> 3, e = key & 7;
        int32_t l = pb_select_i32(rk == prev, n, gap[rk]);
        x->dfs[at] = e;
        x->rank[e] = at;
        x->lcp[at] = l;
        shared += l;
        lasts -= l == n;
        prev = rk;
    }
    int32_t phys = nb * n - shared, freed = x->phys - phys;
    x->phys = phys;
    x->lasts = lasts;
    return freed;
}

/* beam_select at the width, a constant in each case (the widths of the experiments),
   so that its loops unroll. */
static int32_t bm_beam_select(pb_kv_manager *m, int32_t i, const int32_t *parent) {
    bm *b = BM(m);
    PB_ASSERT(b->bb.on && i < b->bb.n);
    bm_beam *x = &b->bb.gr[i];
    int32_t freed;
    switch (x->nb) {
    case 2: freed = beam_select(x, 2, parent); break;
    case 4: freed = beam_select(x, 4, parent); break;
    case 6: freed = beam_select(x, 6, parent); break;
    default: freed = beam_select(x, x->nb, parent); break;
    }
    b->bb.held -= freed;
    b->bb.sums = false;
    return freed;
}

/* Group i's blocks freed -- its frozen tables, and in bb what it holds beyond them
   -- and the group out of the replay (those after it move down one). */
static void bm_beam_free(pb_kv_manager *m, int32_t i) {
    bm *b = BM(m);
    bm_beams *bb = &b->bb;
    PB_ASSERT(bb->on && i >= 0 && i < bb->n);
    bm_beam *x = &bb->gr[i];
    bb->held -= x->phys - x->phys0;
    bb->logical -= (int64_t)x->nb * (x->n - x->n0);
    bb->beams -= x->nb;
    bb->sums = false;
    for (int32_t e = 0; e < x->nb; e++) bm_free(m, x->g->seqs[e]);
    memmove(x, x + 1, (size_t)(bb->n - i - 1) * sizeof *x);
    bb->n--;
}

/* The tables rebuilt (see above): the frozen ones dropped, then new rows; what the
   groups hold is all in their tables again (held and logical 0). */
static void beams_rebuild(bm *b) {
    bm_beams *bb = &b->bb;
    PB_ASSERT(bb->on);
    int64_t tok, res;
    beams_slots(b, &tok, &res);
    int64_t used = pb_block_alloc_used(b->gpu) + bb->held, logical = b->logical_gpu + bb->logical;
    tok += b->gpu->token_slots;
    res += b->reserved;
    for (int32_t i = 0; i < bb->n; i++) {   /* the frozen tables dropped */
        bm_beam *x = &bb->gr[i];
        for (int32_t e = 0; e < x->nb; e++) {
            bm_table *t = x->g->seqs[e]->kv;
            last_leave(b, t);
            for (int32_t k = 0; k < t->n; k++) pb_block_alloc_decref(b->gpu, t->blocks[k]);
            b->logical_gpu -= t->n;
        }
    }
    bb->held = 0;
    for (int32_t i = 0; i < bb->n; i++) {   /* the new tables, in walk order */
        bm_beam *x = &bb->gr[i];
        int32_t n = x->n, fill = x->kv - (n - 1) * b->bs;
        const bm_table *prev = NULL;
        for (int32_t r = 0; r < x->nb; r++) {
            pb_seq *s = x->g->seqs[x->dfs[r]];
            bm_table *t = s->kv;
            if (t->cap < n) {
                t->cap = PB_MAX(n, 2 * t->cap);
                t->blocks = pb_xrealloc(t->blocks, (size_t)t->cap * sizeof(int32_t));
            }
            int32_t k = 0;
            for (; r > 0 && k < x->lcp[r]; k++) pb_block_alloc_incref(b->gpu, t->blocks[k] = prev->blocks[k]);
            for (; k < n; k++) {
                int32_t blk = pb_block_alloc_get(b->gpu);
                PB_ASSERT(blk >= 0);
                pb_block_alloc_set_fill(b->gpu, blk, k == n - 1 ? fill : b->bs);
                t->blocks[k] = blk;
            }
            t->n = n;
            b->logical_gpu += n;
            s->kv_len = x->kv;
            last_enter(b, t);
            prev = t;
        }
    }
    PB_ASSERT(pb_block_alloc_used(b->gpu) == used && b->gpu->token_slots == tok && b->reserved == res &&
              b->logical_gpu == logical);
    bb->logical = 0;
    bb->sums = false;   /* the baselines are the old tables' until frozen again */
}

static void bm_beam_end(pb_kv_manager *m) {
    bm *b = BM(m);
    beams_rebuild(b);
    b->bb.on = false;
}

/* The replay goes on from tables rebuilt as they stand (new baselines: frozen again).
   For an allocation while the groups hold fewer blocks than their frozen tables
   (held < 0): those blocks are free in the count but not in the allocator. */
static void beams_rebase(bm *b) {
    beams_rebuild(b);
    for (int32_t i = 0; i < b->bb.n; i++) beam_freeze(b, &b->bb.gr[i]);
}

static void bm_usage(pb_kv_manager *m, pb_kv_usage *u) {
    bm *b = BM(m);
    int32_t bs = b->bs;
    memset(u, 0, sizeof *u);
    u->gpu_blocks_total = b->gpu->n_blocks;
    u->gpu_blocks_free = gpu_avail(b);
    u->gpu_blocks_cached = b->n_lru;
    u->cpu_blocks_total = b->cpu->n_blocks;
    u->cpu_blocks_used = pb_block_alloc_used(b->cpu);
    u->physical_blocks = pb_block_alloc_used(b->gpu) + b->bb.held;
    u->logical_blocks = b->logical_gpu + b->bb.logical;
    u->total_slots = (int64_t)b->gpu->n_blocks * bs;
    int64_t allocated = u->physical_blocks * bs;
    u->token_slots = b->gpu->token_slots + b->rp.pending;
    u->free_slots = u->total_slots - allocated;
    u->reserved_slots = b->reserved;
    if (b->bb.on) {
        int64_t tok, res;
        beams_slots(b, &tok, &res);
        u->token_slots += tok;
        u->reserved_slots += res;
    }
    u->internal_frag_slots = allocated - u->token_slots - u->reserved_slots;
}

/* The reservation by a walk over every live table (what bm.reserved must equal);
 * per distinct last block, the share of the first table in live order. */
static int64_t reserved_walk(bm *b) {
    uint32_t ep = next_epoch(b);
    int64_t reserved = 0;
    for (int32_t i = 0; i < b->n_live; i++) {
        const bm_table *t = b->live[i];
        if (t->on_cpu || t->n == 0) continue;
        int32_t last = t->blocks[t->n - 1];
        if (b->stamp_gpu[last] == ep) continue;
        b->stamp_gpu[last] = ep;
        reserved += last_share(b, t);
    }
    return reserved;
}

/* The prefix cache: hash table == published blocks (each found under its hash, no
 * two with one hash); LRU list == published blocks at ref 0 == the allocator's cached
 * blocks, linked both ways; per table n_pub <= n_hashed <= full blocks, its hashes
 * the chain of its tokens, and a published block it maps at j < n_hashed carries
 * hashes[j]. */
static pb_status cache_check(bm *b) {
    if (!b->caching) {
        if (b->n_lru != 0 || b->lru_head != -1 || b->n_published != 0 || pb_block_alloc_cached(b->gpu) != 0) {
            pb_log_error("paged: cache state without prefix caching");
            return PB_ERR_INVALID;
        }
        return PB_OK;
    }
    int32_t n = b->gpu->n_blocks, published = 0, idle = 0, in_ht = 0;
    for (int32_t k = 0; k < n; k++) {
        if (!b->pub[k]) continue;
        published++;
        if (pb_block_alloc_ref(b->gpu, k) == 0) idle++;
        else if (pb_block_alloc_fill(b->gpu, k) != b->bs) {
            pb_log_error("paged: published block %d has fill %d", k, pb_block_alloc_fill(b->gpu, k));
            return PB_ERR_INVALID;
        }
        if (ht_find(b, b->blk_hash[k]) != k) {
            pb_log_error("paged: published block %d not found under its hash", k);
            return PB_ERR_INVALID;
        }
    }
    for (uint32_t i = 0; i <= b->ht_mask; i++)
        for (int32_t k = b->ht_head[i]; k >= 0 && in_ht <= n; k = b->ht_next[k]) {
            in_ht++;
            if (!b->pub[k] || (b->blk_hash[k] & b->ht_mask) != i) {
                pb_log_error("paged: hash bucket %u holds block %d (published %d)", i, k, b->pub[k]);
                return PB_ERR_INVALID;
            }
        }
    if (published != b->n_published || in_ht != published) {
        pb_log_error("paged: %d published blocks, %d in the hash table, counted %d", published, in_ht,
                     b->n_published);
        return PB_ERR_INVALID;
    }
    int32_t walked = 0, prev = -1;
    for (int32_t k = b->lru_head; k >= 0 && walked <= n; prev = k, k = b->lru_next[k]) {
        walked++;
        if (!b->pub[k] || pb_block_alloc_ref(b->gpu, k) != 0 || b->lru_prev[k] != prev) {
            pb_log_error("paged: LRU block %d (published %d, ref %d) or its links wrong", k, b->pub[k],
                         pb_block_alloc_ref(b->gpu, k));
            return PB_ERR_INVALID;
        }
    }
    if (walked != b->n_lru || idle != b->n_lru || prev != b->lru_tail || pb_block_alloc_cached(b->gpu) != b->n_lru) {
        pb_log_error("paged: LRU %d walked / %d counted / %d published idle / %d cached in the allocator", walked,
                     b->n_lru, idle, pb_block_alloc_cached(b->gpu));
        return PB_ERR_INVALID;
    }
    for (int32_t i = 0; i < b->n_live; i++) {
        const bm_table *t = b->live[i];
        const pb_seq *s = t->seq;
        if (t->n_pub < 0 || t->n_pub > t->n_hashed || t->n_hashed > s->len / b->bs) {
            pb_log_error("paged: seq %d offered %d, hashed %d of %d tokens", s->id, t->n_pub, t->n_hashed, s->len);
            return PB_ERR_INVALID;
        }
        uint64_t h = HASH0;
        for (int32_t j = 0; j < t->n_hashed; j++) {
            h = block_hash(b, s, h, j);
            bool stale = !t->on_cpu && j < t->n && b->pub[t->blocks[j]] && b->blk_hash[t->blocks[j]] != h;
            if (h != t->hashes[j] || stale) {
                pb_log_error("paged: seq %d block #%d hash is not its tokens' chain", s->id, j);
                return PB_ERR_INVALID;
            }
        }
    }
    return PB_OK;
}

static pb_status bm_check(pb_kv_manager *m) {
    bm *b = BM(m);
    int32_t bs = b->bs;
    if (b->rp.on || b->bb.on) {
        pb_log_error("paged: check inside a replay (kv_len and fills lag until its end)");
        return PB_ERR_INVALID;
    }
    if (pb_block_alloc_check(b->gpu) != PB_OK || pb_block_alloc_check(b->cpu) != PB_OK)
        return PB_ERR_INVALID;
    int32_t *rg = pb_xcalloc((size_t)b->gpu->n_blocks + 1, sizeof(int32_t));
    int32_t *rc = pb_xcalloc((size_t)b->cpu->n_blocks + 1, sizeof(int32_t));
    int32_t *rl = pb_xcalloc((size_t)b->gpu->n_blocks + 1, sizeof(int32_t));   /* last-block refs */
    pb_status st = PB_OK;
    int64_t logical = 0;
    int32_t pinned = 0;
    for (int32_t p = 0; p < b->n_prefixes; p++) {
        const bm_prefix *pf = &b->prefixes[p];
        if (!pf->present) continue;
        pinned += pf->n;
        for (int32_t i = 0; i < pf->n; i++) {
            rg[pf->blocks[i]]++;
            if (pb_block_alloc_fill(b->gpu, pf->blocks[i]) != PB_MIN(bs, pf->len - i * bs)) {
                pb_log_error("paged: prefix %d block %d fill %d", p, pf->blocks[i],
                             pb_block_alloc_fill(b->gpu, pf->blocks[i]));
                st = PB_ERR_INVALID;
            }
        }
    }
    if (pinned != b->pinned_blocks) {
        pb_log_error("paged: pinned %d != counted %d", b->pinned_blocks, pinned);
        st = PB_ERR_INVALID;
    }
    for (int32_t i = 0; i < b->n_live && st == PB_OK; i++) {
        const bm_table *t = b->live[i];
        const pb_seq *s = t->seq;
        if (t->live_idx != i || !s || s->kv != t) {
            pb_log_error("paged: live table %d inconsistent", i);
            st = PB_ERR_INVALID;
            break;
        }
        if (t->n != PB_CDIV(s->kv_len, bs)) {
            pb_log_error("paged: seq %d has %d blocks for %d tokens", s->id, t->n, s->kv_len);
            st = PB_ERR_INVALID;
            break;
        }
        if (!t->on_cpu && t->n > 0 && s->kv_aux != t->blocks[t->n - 1]) {
            pb_log_error("paged: seq %d's last block is %d, kv_aux says %lld", s->id, t->blocks[t->n - 1],
                         (long long)s->kv_aux);
            st = PB_ERR_INVALID;
            break;
        }
        const pb_block_alloc *a = t->on_cpu ? b->cpu : b->gpu;
        int32_t *r = t->on_cpu ? rc : rg;
        if (!t->on_cpu) logical += t->n;
        if (!t->on_cpu && t->n > 0 && t->blocks[t->n - 1] >= 0 && t->blocks[t->n - 1] < a->n_blocks)
            rl[t->blocks[t->n - 1]]++;
        for (int32_t k = 0; k < t->n; k++) {
            int32_t blk = t->blocks[k];
            if (blk < 0 || blk >= a->n_blocks) {
                pb_log_error("paged: seq %d maps invalid block %d", s->id, blk);
                st = PB_ERR_INVALID;
                break;
            }
            r[blk]++;
            int32_t want = k < t->n - 1 ? bs : s->kv_len - k * bs;
            if (pb_block_alloc_fill(a, blk) != want) {
                pb_log_error("paged: seq %d block %d (#%d, ref %d) fill %d, its tokens there %d",
                             s->id, blk, k, pb_block_alloc_ref(a, blk), pb_block_alloc_fill(a, blk), want);
                st = PB_ERR_INVALID;
                break;
            }
        }
    }
    if (st == PB_OK && logical != b->logical_gpu) {
        pb_log_error("paged: logical blocks %lld != counted %lld", (long long)b->logical_gpu,
                     (long long)logical);
        st = PB_ERR_INVALID;
    }
    for (int32_t k = 0; k < b->gpu->n_blocks && st == PB_OK; k++)
        if (rg[k] != pb_block_alloc_ref(b->gpu, k)) {
            pb_log_error("paged: GPU block %d ref %d but %d references", k, pb_block_alloc_ref(b->gpu, k), rg[k]);
            st = PB_ERR_INVALID;
        }
    for (int32_t k = 0; k < b->gpu->n_blocks && st == PB_OK; k++)
        if (rl[k] != b->last_refs[k]) {
            pb_log_error("paged: GPU block %d is the last block of %d tables but counted %d", k, rl[k],
                         b->last_refs[k]);
            st = PB_ERR_INVALID;
        }
    if (st == PB_OK) {
        int64_t walked = reserved_walk(b);
        if (walked != b->reserved) {
            pb_log_error("paged: reserved slots %lld != walked %lld", (long long)b->reserved, (long long)walked);
            st = PB_ERR_INVALID;
        }
    }
    for (int32_t k = 0; k < b->cpu->n_blocks && st == PB_OK; k++)
        if (rc[k] != pb_block_alloc_ref(b->cpu, k)) {
            pb_log_error("paged: CPU block %d ref %d but %d references", k, pb_block_alloc_ref(b->cpu, k), rc[k]);
            st = PB_ERR_INVALID;
        }
    if (st == PB_OK && b->cpu->n_blocks > b->gpu->n_blocks) {
        pb_log_error("paged: swap space %d blocks > GPU %d", b->cpu->n_blocks, b->gpu->n_blocks);
        st = PB_ERR_INVALID;
    }
    if (st == PB_OK) st = cache_check(b);
    free(rg);
    free(rc);
    free(rl);
    return st;
}

static void bm_destroy(pb_kv_manager *m) {
    bm *b = BM(m);
    for (int32_t i = 0; i < b->n_live; i++) {   /* tables still live: detach */
        b->live[i]->seq->kv = NULL;
        free(b->live[i]->blocks);
        free(b->live[i]->hashes);
        free(b->live[i]);
    }
    for (bm_table *t = b->free_tables, *nx; t; t = nx) {
        nx = t->next_free;
        free(t->blocks);
        free(t->hashes);
        free(t);
    }
    for (int32_t p = 0; p < b->n_prefixes; p++) free(b->prefixes[p].blocks);
    free(b->prefixes);
    free(b->live);
    free(b->stamp_gpu);
    free(b->stamp_cpu);
    free(b->map_gpu);
    free(b->map_cpu);
    free(b->last_refs);
    free(b->blk_hash);
    free(b->pub);
    free(b->ht_head);
    free(b->ht_next);
    free(b->lru_prev);
    free(b->lru_next);
    free(b->hit_scratch);
    free(b->rp.base);
    free(b->rp.phase);
    free(b->rp.order);
    free(b->rp.start);
    free(b->rp.end);
    free(b->bb.gr);
    pb_block_alloc_destroy(b->gpu);
    pb_block_alloc_destroy(b->cpu);
    free(b);
}

/* the operations of both forms; the caching form also has computed() (publishing
   blocks), which the engine then calls for every batch sequence after every step */
static const pb_kv_replay_i BM_REPLAY = {
    .begin = bm_replay_begin, .step = bm_replay_step, .pop = bm_replay_pop, .end = bm_replay_end,
    .beam_begin = bm_beam_begin, .beam_step = bm_beam_step, .beam_select = bm_beam_select,
    .beam_free = bm_beam_free, .beam_join = bm_beam_join, .beam_end = bm_beam_end, .usage = bm_usage,
};
#define BM_OPS                                                                                 \
    .name = "paged", .can_allocate = bm_can_allocate, .allocate = bm_allocate,                \
    .can_append = bm_can_append, .append = bm_append, .replay = &BM_REPLAY,                   \
    .fork = bm_fork, .refork = bm_refork,                                                      \
    .free = bm_free, .can_swap_out = bm_can_swap_out, .swap_out = bm_swap_out,                \
    .can_swap_in = bm_can_swap_in, .swap_in = bm_swap_in, .batch_info = bm_batch_info,        \
    .cached_tokens = bm_cached_tokens, .usage = bm_usage, .check = bm_check, .destroy = bm_destroy
static const pb_kv_manager_i BM_IFACE = {BM_OPS, .computed = bm_computed};
static const pb_kv_manager_i BM_IFACE_NOCACHE = {BM_OPS};

pb_status pb_paged_kv_create(const pb_paged_params *p, pb_kv_manager **out) {
    *out = NULL;
    if (!p || p->block_size < 1 || p->n_gpu_blocks < 1 || p->n_cpu_blocks < 0 ||
        p->watermark < 0 || p->watermark >= 1) {
        pb_log_error("paged: invalid parameters");
        return PB_ERR_INVALID;
    }
    bm *b = pb_xcalloc(1, sizeof *b);
    b->bs = p->block_size;
    b->bs_mask = (p->block_size & (p->block_size - 1)) == 0 ? p->block_size - 1 : -1;
    b->watermark_blocks = (int32_t)(p->watermark * p->n_gpu_blocks);   /* vLLM int() */
    b->gpu = pb_block_alloc_create(p->n_gpu_blocks, p->block_size);
    /* paper §4.5: swapped blocks never exceed the GPU's block count */
    b->cpu = pb_block_alloc_create(PB_MIN(p->n_cpu_blocks, p->n_gpu_blocks), p->block_size);
    b->stamp_gpu = pb_xcalloc((size_t)p->n_gpu_blocks + 1, sizeof(uint32_t));
    b->stamp_cpu = pb_xcalloc((size_t)b->cpu->n_blocks + 1, sizeof(uint32_t));
    b->map_gpu = pb_xcalloc((size_t)p->n_gpu_blocks + 1, sizeof(int32_t));
    b->map_cpu = pb_xcalloc((size_t)b->cpu->n_blocks + 1, sizeof(int32_t));
    b->last_refs = pb_xcalloc((size_t)p->n_gpu_blocks + 1, sizeof(int32_t));
    b->lru_head = b->lru_tail = -1;
    b->caching = p->prefix_caching;
    if (b->caching) {
        size_t n = (size_t)p->n_gpu_blocks + 1;
        uint32_t buckets = 16;
        while (buckets < 2u * (uint32_t)p->n_gpu_blocks && buckets < (1u << 30)) buckets *= 2;
        b->ht_mask = buckets - 1;
        b->ht_head = pb_xmalloc((size_t)buckets * sizeof(int32_t));
        for (uint32_t i = 0; i < buckets; i++) b->ht_head[i] = -1;
        b->ht_next = pb_xcalloc(n, sizeof(int32_t));
        b->blk_hash = pb_xcalloc(n, sizeof(uint64_t));
        b->pub = pb_xcalloc(n, 1);
        b->lru_prev = pb_xcalloc(n, sizeof(int32_t));
        b->lru_next = pb_xcalloc(n, sizeof(int32_t));
    }
    b->base.iface = b->caching ? &BM_IFACE : &BM_IFACE_NOCACHE;
    b->base.impl = b;
    b->base.block_size = p->block_size;
    b->base.swap_unit_tokens = p->block_size;
    *out = &b->base;
    return PB_OK;
}

/* ---- introspection ---- */

const pb_block_alloc *pb_paged_gpu(const pb_kv_manager *m) { return BMc(m)->gpu; }
const pb_block_alloc *pb_paged_cpu(const pb_kv_manager *m) { return BMc(m)->cpu; }
int32_t pb_paged_watermark_blocks(const pb_kv_manager *m) { return BMc(m)->watermark_blocks; }

const int32_t *pb_paged_table(const pb_kv_manager *m, const pb_seq *s, int32_t *n, bool *on_cpu) {
    (void)m;
    const bm_table *t = s->kv;
    if (!t) {
        *n = 0;
        if (on_cpu) *on_cpu = false;
        return NULL;
    }
    *n = t->n;
    if (on_cpu) *on_cpu = t->on_cpu;
    return t->blocks;
}

void pb_paged_cache_stats_get(const pb_kv_manager *m, pb_paged_cache_stats *out) {
    const bm *b = BMc(m);
    out->hit_tokens = b->hit_tokens;
    out->query_tokens = b->query_tokens;
    out->evictions = b->evictions;
    out->cached_blocks = b->n_lru;
    out->published_blocks = b->n_published;
}

int32_t pb_paged_lru_head(const pb_kv_manager *m) { return BMc(m)->lru_head; }

bool pb_paged_block_published(const pb_kv_manager *m, int32_t blk) {
    const bm *b = BMc(m);
    return b->caching && blk >= 0 && blk < b->gpu->n_blocks && b->pub[blk];
}

int32_t pb_paged_prefix_blocks(const pb_kv_manager *m, int32_t prefix_id) {
    const bm *b = BMc(m);
    if (prefix_id < 0 || prefix_id >= b->n_prefixes || !b->prefixes[prefix_id].present) return 0;
    return b->prefixes[prefix_id].n;
}
