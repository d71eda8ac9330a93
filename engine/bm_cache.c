/* bm_cache.c -- the paged manager's automatic prefix caching (block_manager.h):
 * chain hashes of full blocks, the hash table of published blocks, the LRU list of
 * cached ones (published, at ref 0), lookups and the allocation that maps hits, the
 * publication of computed blocks, the GPU pool's block source with eviction
 * (bm_gpu_get / bm_gpu_release, every GPU block of the manager passes through them),
 * and the CPU tier that evicted blocks spill to and hits reload from. */
#include "block_manager_int.h"

#include <stdlib.h>
#include <string.h>

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

/* ---- the CPU tier (block_manager.h) ---- */

void bm_tier_init(bm *b, int32_t n_tier) {
    b->n_tier = n_tier;
    b->tier_head = b->tier_tail = -1;
    if (n_tier == 0) return;
    b->tier_pool = pb_block_alloc_create(n_tier, b->bs);
    size_t n = (size_t)n_tier + 1;
    uint32_t buckets = 16;
    while (buckets < 2u * (uint32_t)n_tier && buckets < (1u << 30)) buckets *= 2;
    b->tier_ht_mask = buckets - 1;
    b->tier_ht_head = pb_xmalloc((size_t)buckets * sizeof(int32_t));
    for (uint32_t i = 0; i < buckets; i++) b->tier_ht_head[i] = -1;
    b->tier_ht_next = pb_xcalloc(n, sizeof(int32_t));
    b->tier = pb_xcalloc(n, 1);
    b->tier_hash = pb_xcalloc(n, sizeof(uint64_t));
    b->tier_prev = pb_xcalloc(n, sizeof(int32_t));
    b->tier_next = pb_xcalloc(n, sizeof(int32_t));
    b->tier_gpu = pb_xcalloc(n, sizeof(int32_t));
    b->tier_stamp = pb_xcalloc(n, sizeof(uint32_t));
    b->releasing = pb_xcalloc(n, sizeof(int32_t));
}

void bm_tier_free(bm *b) {
    free(b->tier_ht_head);
    free(b->tier_ht_next);
    free(b->tier);
    free(b->tier_hash);
    free(b->tier_prev);
    free(b->tier_next);
    free(b->tier_gpu);
    free(b->tier_stamp);
    free(b->releasing);
    pb_block_alloc_destroy(b->tier_pool);
    pb_pair_vec_free(&b->tier_out);
    pb_pair_vec_free(&b->tier_in);
}

static int32_t tier_find(const bm *b, uint64_t h) {
    if (b->n_tier == 0) return -1;
    for (int32_t c = b->tier_ht_head[h & b->tier_ht_mask]; c >= 0; c = b->tier_ht_next[c])
        if (b->tier_hash[c] == h) return c;
    return -1;
}

static void tier_unlink(bm *b, int32_t c) {   /* out of the tier's hash table */
    int32_t *p = &b->tier_ht_head[b->tier_hash[c] & b->tier_ht_mask];
    while (*p != c) p = &b->tier_ht_next[*p];
    *p = b->tier_ht_next[c];
}

static void tier_lru_push(bm *b, int32_t c) {
    b->tier_prev[c] = b->tier_tail;
    b->tier_next[c] = -1;
    if (b->tier_tail >= 0) b->tier_next[b->tier_tail] = c;
    else b->tier_head = c;
    b->tier_tail = c;
    b->n_tier_idle++;
}

static void tier_lru_remove(bm *b, int32_t c) {
    int32_t p = b->tier_prev[c], n = b->tier_next[c];
    if (p >= 0) b->tier_next[p] = n;
    else b->tier_head = n;
    if (n >= 0) b->tier_prev[n] = p;
    else b->tier_tail = p;
    b->n_tier_idle--;
}

/* The queued move of vec whose block (its src when src_side, else its dst) is blk,
 * removed (the others keep their order); false when there is none. */
static bool unqueue(pb_pair_vec *vec, int32_t blk, bool src_side) {
    for (int32_t i = 0; i < vec->n; i++)
        if ((src_side ? vec->v[i].src : vec->v[i].dst) == blk) {
            memmove(vec->v + i, vec->v + i + 1, (size_t)(vec->n - i - 1) * sizeof *vec->v);
            vec->n--;
            return true;
        }
    return false;
}

static void tier_link(bm *b, int32_t c) {   /* into the tier's hash table and LRU, IDLE */
    uint32_t i = (uint32_t)(b->tier_hash[c] & b->tier_ht_mask);
    b->tier[c] = TIER_IDLE;
    b->tier_ht_next[c] = b->tier_ht_head[i];
    b->tier_ht_head[i] = c;
    tier_lru_push(b, c);
}

/* Published GPU block v (ref 0), about to be evicted, spills to the tier: a CPU block
 * of the tier gets a copy (a queued (v, c) move), unless the tier holds its hash
 * already.  A full tier first drops its least recently spilled idle block (and a
 * spill into it queued this step); with none idle the content is lost as without a
 * tier.  A v whose reload from c is queued this step (its KV not there yet) puts c
 * back into the tier instead, the reload unqueued. */
static void tier_spill(bm *b, int32_t v) {
    uint64_t h = b->blk_hash[v];
    for (int32_t i = 0; i < b->n_releasing; i++) {
        int32_t c = b->releasing[i];
        if (b->tier_gpu[c] != v || !unqueue(&b->tier_in, b->cpu->n_blocks + c, true)) continue;
        b->releasing[i] = b->releasing[--b->n_releasing];
        b->tier_gpu[c] = -1;
        b->tier_reloads--;
        tier_link(b, c);
        return;
    }
    if (tier_find(b, h) >= 0) return;
    if (b->tier_used == b->n_tier) {
        int32_t d = b->tier_head;
        if (d < 0) return;
        tier_lru_remove(b, d);
        tier_unlink(b, d);
        b->tier[d] = TIER_NONE;
        pb_block_alloc_decref(b->tier_pool, d);
        b->tier_used--;
        b->tier_drops++;
        if (unqueue(&b->tier_out, b->cpu->n_blocks + d, false)) b->tier_spills--;   /* never read: not copied */
    }
    int32_t c = pb_block_alloc_get(b->tier_pool);
    PB_ASSERT(c >= 0);
    pb_block_alloc_set_fill(b->tier_pool, c, b->bs);
    b->tier_hash[c] = h;
    tier_link(b, c);
    b->tier_used++;
    b->tier_spills++;
    pb_pair_vec_push(&b->tier_out, v, b->cpu->n_blocks + c);
}

/* The GPU block of claimed tier block c for this allocation: the first time a new
 * GPU block (ref 1), its content reloaded from c (a queued (c, g) move) and published
 * under c's hash, c leaving the tier; afterwards one more reference to it. */
static int32_t tier_reload(bm *b, int32_t c) {
    int32_t g = b->tier_gpu[c];
    if (g >= 0) {
        pb_block_alloc_incref(b->gpu, g);
        return g;
    }
    PB_ASSERT(b->tier[c] == TIER_CLAIMED);
    g = bm_gpu_get(b);
    PB_ASSERT(g >= 0);
    pb_block_alloc_set_fill(b->gpu, g, b->bs);
    publish(b, g, b->tier_hash[c]);
    tier_unlink(b, c);
    b->tier[c] = TIER_RELEASING;
    b->releasing[b->n_releasing++] = c;
    b->tier_gpu[c] = g;
    b->tier_reloads++;
    pb_pair_vec_push(&b->tier_in, b->cpu->n_blocks + c, g);
    return g;
}

void bm_take_tier_moves(pb_kv_manager *m, pb_pair_vec *swap_out, pb_pair_vec *swap_in) {
    bm *b = BM(m);
    for (int32_t i = 0; i < b->tier_out.n; i++) pb_pair_vec_push(swap_out, b->tier_out.v[i].src, b->tier_out.v[i].dst);
    for (int32_t i = 0; i < b->tier_in.n; i++) pb_pair_vec_push(swap_in, b->tier_in.v[i].src, b->tier_in.v[i].dst);
    pb_pair_vec_clear(&b->tier_out);
    pb_pair_vec_clear(&b->tier_in);
    for (int32_t i = 0; i < b->n_releasing; i++) {   /* their reloads are queued now: free */
        int32_t c = b->releasing[i];
        b->tier[c] = TIER_NONE;
        pb_block_alloc_decref(b->tier_pool, c);
        b->tier_used--;
    }
    b->n_releasing = 0;
}

/* A GPU block (ref 1, fill 0): a free one, else the least recently used cached one is
 * evicted for it (spilling to the CPU tier when there is one); -1 when neither exists. */
int32_t bm_gpu_get(bm *b) {
    if (pb_block_alloc_free_count(b->gpu) == 0 && b->lru_head >= 0) {
        int32_t v = b->lru_head;
        b->evictions++;
        if (b->n_tier) tier_spill(b, v);
        lru_remove(b, v);
        unpublish(b, v);
        pb_block_alloc_evict(b->gpu, v);
    }
    return pb_block_alloc_get(b->gpu);
}

/* Drop one reference to a GPU block; a published block at ref 0 stays cached. */
void bm_gpu_release(bm *b, int32_t blk) {
    if (!b->caching || !b->pub[blk]) {
        pb_block_alloc_decref(b->gpu, blk);
    } else if (pb_block_alloc_decref_keep(b->gpu, blk) == 0) {
        lru_push(b, blk);
    }
}

/* A cache hit: one more reference to published blk (off the LRU when it was idle). */
static void cache_hit(bm *b, int32_t blk) {
    if (pb_block_alloc_ref(b->gpu, blk) == 0) {
        lru_remove(b, blk);
        pb_block_alloc_revive(b->gpu, blk, b->bs);
    } else {
        pb_block_alloc_incref(b->gpu, blk);
    }
}


/* Cache lookup for WAITING s (len tokens): the chain hashes of its full blocks, and
 * the published blocks that hold blocks j0, j0 + 1, ... up to the first miss, only
 * among the known blocks of its first len - 1 tokens (the last token is always
 * computed); a block not on the GPU is looked up in the CPU tier (hit c: ~c, < 0).
 * Writes the hashes of blocks [0, j0 + hits) to hashes and the hit blocks to blks
 * (either may be NULL).  Returns the hits. */
static int32_t lookup(const bm *b, const pb_seq *s, int32_t j0, uint64_t *hashes, int32_t *blks) {
    int32_t max = known_blocks(b, s, s->len - 1), k = 0;
    if (hashes) PB_ASSERT(j0 <= max);
    uint64_t h = HASH0;
    for (int32_t j = 0; j < max; j++) {
        h = block_hash(b, s, h, j);
        if (j >= j0) {
            int32_t blk = ht_find(b, h);
            if (blk < 0) {
                int32_t c = tier_find(b, h);
                if (c < 0) break;
                blk = ~c;
            }
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
 * plus the distinct evictable blocks its hits take off the LRU and a block for each
 * distinct CPU-tier hit.  *mapped: distinct blocks g maps (new or hit), what an
 * empty cache would need. */
static int32_t cache_need(bm *b, const pb_group *g, int32_t *mapped) {
    int32_t bs = b->bs, per_seq = PB_CDIV(g->len, bs), shared = sibling_shared(b, g);
    hit_scratch_reserve(b, per_seq);
    uint32_t ep = bm_next_epoch(b);
    int32_t need = 0;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        int32_t j0 = i == 0 ? 0 : shared;
        int32_t k = lookup(b, g->seqs[i], j0, NULL, b->hit_scratch);
        need += per_seq - j0 - k;
        for (int32_t x = 0; x < k; x++) {
            int32_t blk = b->hit_scratch[x];
            if (blk < 0) {
                if (b->tier_stamp[~blk] != ep) {
                    b->tier_stamp[~blk] = ep;
                    need++;
                }
            } else if (pb_block_alloc_ref(b->gpu, blk) == 0 && b->stamp_gpu[blk] != ep) {
                b->stamp_gpu[blk] = ep;
                need++;
            }
        }
    }
    *mapped = per_seq + PB_MAX(g->n_seqs - 1, 0) * (per_seq - shared);
    return need;
}

pb_alloc_status bm_cache_can_allocate(bm *b, const pb_group *g) {
    int32_t mapped, need = cache_need(b, g, &mapped);
    if (mapped > b->gpu->n_blocks - b->watermark_blocks) return PB_ALLOC_NEVER;
    if (bm_gpu_avail(b) - need >= b->watermark_blocks) return PB_ALLOC_OK;
    return PB_ALLOC_LATER;
}

/* allocate() with the cache: every sequence first takes its hits (pinned, so that no
 * eviction for another sequence's new blocks can take them; a CPU-tier hit is claimed:
 * off the tier's LRU, so that no spill drops it), then its reloads and new blocks. */
pb_status bm_cache_allocate(bm *b, pb_group *g, pb_pair_vec *copies) {
    int32_t mapped;
    if (cache_need(b, g, &mapped) > bm_gpu_avail(b)) return PB_ERR_NO_SPACE;
    int32_t bs = b->bs, per_seq = PB_CDIV(g->len, bs), shared = sibling_shared(b, g);
    hit_scratch_reserve(b, g->n_seqs * per_seq);
    int32_t *hits = b->hit_scratch;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        pb_seq *s = g->seqs[i];
        PB_ASSERT(s->kv == NULL);
        bm_table *t = bm_table_new(b, s, false);
        bm_hashes_reserve(t, per_seq);
        /* a later sequence hashes past the shared blocks only when it has more known
           blocks (a recomputed group has generated tokens: len > prompt_len) */
        int32_t j0 = i == 0 ? 0 : shared;
        int32_t k = j0 <= known_blocks(b, s, s->len - 1) ? lookup(b, s, j0, t->hashes, hits + i * per_seq) : 0;
        t->n_hashed = k > 0 ? j0 + k : 0;   /* what the loop below reads back */
        for (int32_t x = 0; x < k; x++) {
            int32_t blk = hits[i * per_seq + x];
            if (blk >= 0) {
                cache_hit(b, blk);
            } else if (b->tier[~blk] == TIER_IDLE) {
                tier_lru_remove(b, ~blk);
                b->tier[~blk] = TIER_CLAIMED;
                b->tier_gpu[~blk] = -1;
            }
        }
    }
    bm_table *t0 = g->seqs[0]->kv;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        pb_seq *s = g->seqs[i];
        bm_table *t = s->kv;
        int32_t j0 = i == 0 ? 0 : shared, k = t->n_hashed > 0 ? t->n_hashed - j0 : 0;
        for (int32_t x = 0; x < j0; x++) {
            pb_block_alloc_incref(b->gpu, t0->blocks[x]);
            bm_table_push(b, t, t0->blocks[x]);
        }
        int32_t from_tier = 0;
        for (int32_t x = 0; x < k; x++) {
            int32_t blk = hits[i * per_seq + x];
            if (blk < 0) {
                blk = tier_reload(b, ~blk);
                from_tier++;
            }
            bm_table_push(b, t, blk);
        }
        int32_t kv = (j0 + k) * bs;
        if (i == 0) {
            b->query_tokens += g->len;
            b->hit_tokens += kv;
            b->tier_hit_tokens += (int64_t)from_tier * bs;
        }
        s->n_cached = kv;
        bm_extend(b, t, &kv, s->len, copies);
        s->kv_len = kv;
        bm_last_enter(b, t);
    }
    return PB_OK;
}

/* ---- its kv_manager operations ---- */

int32_t bm_cached_tokens(pb_kv_manager *m, const pb_group *g) {
    bm *b = BM(m);
    return b->caching && g->n_seqs > 0 ? lookup(b, g->seqs[0], 0, NULL, NULL) * b->bs : 0;
}

/* s's first n tokens have KV: offer its full blocks not offered yet to the cache (a
 * block whose content is already published elsewhere stays private). */
void bm_computed(pb_kv_manager *m, pb_seq *s, int32_t n) {
    bm *b = BM(m);
    bm_table *t = s->kv;
    if (!b->caching || !t) return;
    PB_ASSERT(!t->on_cpu && n <= s->kv_len);
    int32_t full = known_blocks(b, s, n);
    if (full > t->n_hashed) bm_hashes_reserve(t, full);
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

/* The CPU tier's invariants (bm_cache_check): tier_used == blocks in a tier state ==
 * its pool's used blocks, each of ref 1 and fill bs, the rest free; its hash table ==
 * IDLE blocks (no CLAIMED one outlives an allocation), each under its hash; its LRU
 * == IDLE blocks, linked both ways; RELEASING blocks == the release list; queued
 * spills go from a GPU block to a tier block, reloads from a RELEASING block to a
 * published GPU block holding its hash. */
static pb_status tier_check(bm *b) {
    if (b->n_tier == 0) {
        if (b->tier_used || b->tier_out.n || b->tier_in.n || b->n_releasing) {
            pb_log_error("paged: CPU tier state without a tier");
            return PB_ERR_INVALID;
        }
        return PB_OK;
    }
    if (pb_block_alloc_check(b->tier_pool) != PB_OK) return PB_ERR_INVALID;
    int32_t n = b->n_tier, off = b->cpu->n_blocks, used = 0, idle = 0, releasing = 0, in_ht = 0;
    for (int32_t c = 0; c < n; c++) {
        int32_t want_ref = b->tier[c] == TIER_NONE ? 0 : 1;
        if (pb_block_alloc_ref(b->tier_pool, c) != want_ref ||
            (want_ref && pb_block_alloc_fill(b->tier_pool, c) != b->bs)) {
            pb_log_error("paged: tier block %d (state %d) has ref %d fill %d", c, b->tier[c],
                         pb_block_alloc_ref(b->tier_pool, c), pb_block_alloc_fill(b->tier_pool, c));
            return PB_ERR_INVALID;
        }
        if (b->tier[c] == TIER_NONE) continue;
        used++;
        if (b->tier[c] == TIER_IDLE) {
            idle++;
            if (tier_find(b, b->tier_hash[c]) != c) {
                pb_log_error("paged: tier block %d not found under its hash", c);
                return PB_ERR_INVALID;
            }
        } else if (b->tier[c] == TIER_RELEASING) {
            releasing++;
        } else {
            pb_log_error("paged: tier block %d in state %d between allocations", c, b->tier[c]);
            return PB_ERR_INVALID;
        }
    }
    for (uint32_t i = 0; i <= b->tier_ht_mask; i++)
        for (int32_t c = b->tier_ht_head[i]; c >= 0 && in_ht <= n; c = b->tier_ht_next[c]) {
            in_ht++;
            if (b->tier[c] != TIER_IDLE || (b->tier_hash[c] & b->tier_ht_mask) != i) {
                pb_log_error("paged: tier bucket %u holds block %d (state %d)", i, c, b->tier[c]);
                return PB_ERR_INVALID;
            }
        }
    int32_t walked = 0, prev = -1;
    for (int32_t c = b->tier_head; c >= 0 && walked <= n; prev = c, c = b->tier_next[c]) {
        walked++;
        if (b->tier[c] != TIER_IDLE || b->tier_prev[c] != prev) {
            pb_log_error("paged: tier LRU block %d (state %d) or its links wrong", c, b->tier[c]);
            return PB_ERR_INVALID;
        }
    }
    if (used != b->tier_used || used != pb_block_alloc_used(b->tier_pool) || in_ht != idle || walked != idle || idle != b->n_tier_idle ||
        prev != b->tier_tail || releasing != b->n_releasing) {
        pb_log_error("paged: tier %d used (counted %d of %d), %d idle: %d hashed, %d walked, %d counted; %d releasing "
                     "(listed %d)", used, b->tier_used, b->n_tier, idle, in_ht, walked, b->n_tier_idle, releasing,
                     b->n_releasing);
        return PB_ERR_INVALID;
    }
    for (int32_t i = 0; i < b->n_releasing; i++)
        if (b->tier[b->releasing[i]] != TIER_RELEASING) {
            pb_log_error("paged: release list holds tier block %d in state %d", b->releasing[i], b->tier[b->releasing[i]]);
            return PB_ERR_INVALID;
        }
    for (int32_t i = 0; i < b->tier_out.n; i++) {
        const pb_block_pair *p = &b->tier_out.v[i];
        if (p->src < 0 || p->src >= b->gpu->n_blocks || p->dst < off || p->dst >= off + n ||
            b->tier[p->dst - off] == TIER_NONE) {
            pb_log_error("paged: queued spill %d -> %d not into the tier", p->src, p->dst);
            return PB_ERR_INVALID;
        }
    }
    for (int32_t i = 0; i < b->tier_in.n; i++) {
        const pb_block_pair *p = &b->tier_in.v[i];
        if (p->src < off || p->src >= off + n || b->tier[p->src - off] != TIER_RELEASING || p->dst < 0 ||
            p->dst >= b->gpu->n_blocks || !b->pub[p->dst] || b->blk_hash[p->dst] != b->tier_hash[p->src - off]) {
            pb_log_error("paged: queued reload %d -> %d not from a released tier block into its GPU copy", p->src,
                         p->dst);
            return PB_ERR_INVALID;
        }
    }
    return PB_OK;
}

/* ---- invariants ----
 * The prefix cache: hash table == published blocks (each found under its hash, no
 * two with one hash); LRU list == published blocks at ref 0 == the allocator's cached
 * blocks, linked both ways; per table n_pub <= n_hashed <= full blocks, its hashes
 * the chain of its tokens, and a published block it maps at j < n_hashed carries
 * hashes[j]; the CPU tier's (tier_check). */
pb_status bm_cache_check(bm *b) {
    if (!b->caching) {
        if (b->n_lru != 0 || b->lru_head != -1 || b->n_published != 0 || pb_block_alloc_cached(b->gpu) != 0 ||
            b->n_tier != 0) {
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
    return tier_check(b);
}

