/* bm_cache.c -- the paged manager's automatic prefix caching (block_manager.h):
 * chain hashes of full blocks, the hash table of published blocks, the LRU list of
 * cached ones (published, at ref 0), lookups and the allocation that maps hits, the
 * publication of computed blocks, and the GPU pool's block source with eviction
 * (bm_gpu_get / bm_gpu_release, every GPU block of the manager passes through them). */
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

/* A GPU block (ref 1, fill 0): a free one, else the least recently used cached one is
 * evicted for it; -1 when neither exists. */
int32_t bm_gpu_get(bm *b) {
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
    uint32_t ep = bm_next_epoch(b);
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

pb_alloc_status bm_cache_can_allocate(bm *b, const pb_group *g) {
    int32_t mapped, need = cache_need(b, g, &mapped);
    if (mapped > b->gpu->n_blocks - b->watermark_blocks) return PB_ALLOC_NEVER;
    if (bm_gpu_avail(b) - need >= b->watermark_blocks) return PB_ALLOC_OK;
    return PB_ALLOC_LATER;
}

/* allocate() with the cache: every sequence first takes its hits (pinned, so that no
 * eviction for another sequence's new blocks can take them), then its new blocks. */
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
        for (int32_t x = 0; x < k; x++) cache_hit(b, hits[i * per_seq + x]);
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
        for (int32_t x = 0; x < k; x++) bm_table_push(b, t, hits[i * per_seq + x]);
        int32_t kv = (j0 + k) * bs;
        if (i == 0) {
            b->query_tokens += g->len;
            b->hit_tokens += kv;
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

/* ---- invariants ----
 * The prefix cache: hash table == published blocks (each found under its hash, no
 * two with one hash); LRU list == published blocks at ref 0 == the allocator's cached
 * blocks, linked both ways; per table n_pub <= n_hashed <= full blocks, its hashes
 * the chain of its tokens, and a published block it maps at j < n_hashed carries
 * hashes[j]. */
pb_status bm_cache_check(bm *b) {
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

