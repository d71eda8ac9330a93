/* block_manager.c -- the `paged` KV manager (see block_manager.h; its state and
 * invariants: block_manager_int.h; its replayed steps: bm_replay.c). */
#include "block_manager_int.h"

#include <stdlib.h>
#include <string.h>

static const bm *BMc(const pb_kv_manager *m) { return (const bm *)m->impl; }

void pb_paged_params_default(pb_paged_params *p) {
    p->block_size = PB_PAGED_BLOCK_SIZE;
    p->n_gpu_blocks = 0;
    p->n_cpu_blocks = 0;
    p->watermark = PB_PAGED_WATERMARK;
    p->prefix_caching = false;
    p->n_tier_blocks = 0;
}

/* ---- tables ---- */

bm_table *bm_table_new(bm *b, pb_seq *s, bool on_cpu) {
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

uint32_t bm_next_epoch(bm *b) {
    if (++b->epoch == 0) {   /* wrapped: clear the stamps */
        memset(b->stamp_gpu, 0, (size_t)b->gpu->n_blocks * sizeof(uint32_t));
        memset(b->stamp_cpu, 0, (size_t)(b->cpu->n_blocks + 1) * sizeof(uint32_t));
        b->epoch = 1;
    }
    return b->epoch;
}

/* ---- the prefix pool ---- */

bool bm_uses_prefix(const bm *b, const pb_group *g) {
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
    if (!bm_uses_prefix(b, g)) return 0;
    if (g->prefix_id < b->n_prefixes && b->prefixes[g->prefix_id].present) return 0;
    return PB_CDIV(g->prefix_len, b->bs);
}

/* ---- admission ---- */

/* Blocks allocate(g) takes from the GPU pool (shared blocks counted once). */
static int32_t blocks_needed(const bm *b, const pb_group *g) {
    int32_t bs = b->bs;
    int32_t per_seq = PB_CDIV(g->len, bs);
    int32_t first = per_seq;
    if (bm_uses_prefix(b, g)) first = per_seq - g->prefix_len / bs;   /* full prefix blocks mapped */
    int32_t shared = PB_MIN(g->prompt_len / bs, per_seq);
    int32_t others = PB_MAX(g->n_seqs - 1, 0) * (per_seq - shared);
    return prefix_new_blocks(b, g) + first + others;
}

static pb_alloc_status bm_can_allocate(pb_kv_manager *m, const pb_group *g) {
    bm *b = BM(m);
    if (b->caching) return bm_cache_can_allocate(b, g);
    int32_t need = blocks_needed(b, g);
    int32_t usable = b->gpu->n_blocks - b->pinned_blocks - b->watermark_blocks;
    if (need > usable) return PB_ALLOC_NEVER;
    if (bm_gpu_avail(b) - need >= b->watermark_blocks) return PB_ALLOC_OK;
    return PB_ALLOC_LATER;
}

/* Grow t (GPU) from *kv_len to target tokens: new blocks when the last is full, copy
 * on write when it is shared.  Enough free blocks must exist (checked by callers). */
void bm_extend(bm *b, bm_table *t, int32_t *kv_len, int32_t target, pb_pair_vec *copies) {
    int32_t bs = b->bs;
    while (*kv_len < target) {
        int32_t off = bm_offset(b, *kv_len);
        int32_t take = PB_MIN(bs - off, target - *kv_len);
        if (off == 0) {
            int32_t nb = bm_gpu_get(b);
            PB_ASSERT(nb >= 0);
            pb_block_alloc_set_fill(b->gpu, nb, take);
            bm_table_push(b, t, nb);
        } else {
            int32_t last = t->blocks[t->n - 1];
            PB_ASSERT(pb_block_alloc_fill(b->gpu, last) == off);
            if (pb_block_alloc_ref(b->gpu, last) == 1) {
                pb_block_alloc_set_fill(b->gpu, last, off + take);
            } else {   /* copy on write (a partial block: never published) */
                int32_t nb = bm_gpu_get(b);
                PB_ASSERT(nb >= 0);
                pb_block_alloc_set_fill(b->gpu, nb, off + take);
                if (copies) pb_pair_vec_push(copies, last, nb);
                bm_gpu_release(b, last);
                t->blocks[t->n - 1] = nb;
            }
        }
        *kv_len += take;
    }
}

static pb_status bm_allocate(pb_kv_manager *m, pb_group *g, pb_pair_vec *copies) {
    bm *b = BM(m);
    if (g->n_seqs < 1) return PB_ERR_INVALID;
    if (b->caching) return bm_cache_allocate(b, g, copies);
    int32_t need = blocks_needed(b, g);
    if (need > pb_block_alloc_free_count(b->gpu)) return PB_ERR_NO_SPACE;
    int32_t bs = b->bs;
    pb_seq *s0 = g->seqs[0];
    PB_ASSERT(s0->kv == NULL);
    bm_table *t0 = bm_table_new(b, s0, false);
    int32_t kv = 0;
    s0->n_cached = 0;
    if (bm_uses_prefix(b, g)) {
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
            bm_table_push(b, t0, p->blocks[i]);
        }
        kv = p->len;
        /* KV of the full prefix blocks exists (or is computed earlier in this batch by
           the first user); the partial block is copied on write below and its tokens
           recomputed, since its pinned copy is never written by anyone. */
        s0->n_cached = fresh ? 0 : (p->len / bs) * bs;
    }
    bm_extend(b, t0, &kv, s0->len, copies);
    s0->kv_len = kv;
    bm_last_enter(b, t0);
    /* other waiting sequences (recompute of a multi-sequence group): share the full
       prompt blocks of the first, the rest private */
    int32_t shared = PB_MIN(g->prompt_len / bs, t0->n);
    for (int32_t i = 1; i < g->n_seqs; i++) {
        pb_seq *s = g->seqs[i];
        PB_ASSERT(s->kv == NULL);
        bm_table *t = bm_table_new(b, s, false);
        for (int32_t k = 0; k < shared; k++) {
            pb_block_alloc_incref(b->gpu, t0->blocks[k]);
            bm_table_push(b, t, t0->blocks[k]);
        }
        int32_t kl = shared * bs;
        s->n_cached = kl;
        bm_extend(b, t, &kl, s->len, copies);
        s->kv_len = kl;
        bm_last_enter(b, t);
    }
    return PB_OK;
}

static bool bm_can_append(pb_kv_manager *m, const pb_group *g) {
    /* vLLM can_append_slot: one possible new block per running sequence */
    return g->n_seqs <= bm_gpu_avail(BM(m));
}

/* append's common case, a private last block with room: written in place, and its
   share of the reservation (min(empty, to come), both one less) drops by one unless
   nothing was to come.  False (nothing done) otherwise. */
static inline bool append_in_place(bm *b, pb_seq *s) {
    int32_t kv = s->kv_len;
    int32_t off = bm_offset(b, kv);
    int32_t last = (int32_t)s->kv_aux;   /* the table's last block (last_enter), without
                                            reading the table */
    if (off == 0 || pb_block_alloc_ref(b->gpu, last) != 1) return false;
    const pb_group *g = s->group;
    if (g && g->prompt_len + g->output_len - 1 - kv >= 1) b->reserved--;
    pb_block_alloc_set_fill(b->gpu, last, off + 1);
    s->kv_len = kv + 1;
    return true;
}

pb_status bm_append(pb_kv_manager *m, pb_seq *s, pb_pair_vec *copies) {
    bm *b = BM(m);
    if (append_in_place(b, s)) return PB_OK;
    int32_t kv = s->kv_len;
    int32_t off = bm_offset(b, kv);
    bm_table *t = s->kv;
    PB_ASSERT(t && !t->on_cpu && t->n == PB_CDIV(kv, b->bs));
    if (bm_gpu_avail(b) == 0 && (off == 0 || pb_block_alloc_ref(b->gpu, t->blocks[t->n - 1]) > 1))
        return PB_ERR_NO_SPACE;
    bm_last_leave(b, t);
    bm_extend(b, t, &kv, kv + 1, copies);
    s->kv_len = kv;
    bm_last_enter(b, t);
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
        bm_hashes_reserve(t, pt->n_hashed);
        memcpy(t->hashes, pt->hashes, (size_t)pt->n_hashed * sizeof(uint64_t));
    }
    t->n_hashed = pt->n_hashed;
    t->n_pub = pt->n_pub;
    s->kv_len = parent->kv_len;
    s->n_cached = parent->n_cached;
    bm_last_enter(b, t);
}

static pb_status bm_fork(pb_kv_manager *m, const pb_seq *parent, pb_seq *child) {
    bm *b = BM(m);
    const bm_table *pt = parent->kv;
    PB_ASSERT(pt && child->kv == NULL);
    bm_table *t = bm_table_new(b, child, pt->on_cpu);
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
    bm_last_leave(b, t);
    for (int32_t i = cp; i < pt->n; i++) pb_block_alloc_incref(a, pt->blocks[i]);
    if (t->on_cpu || !b->caching) {
        for (int32_t i = cp; i < t->n; i++) pb_block_alloc_decref(a, t->blocks[i]);
    } else {
        for (int32_t i = t->n - 1; i >= cp; i--) bm_gpu_release(b, t->blocks[i]);
    }
    table_follow(b, t, pt, cp, s, parent);
    return PB_OK;
}

void bm_free(pb_kv_manager *m, pb_seq *s) {
    bm *b = BM(m);
    bm_table *t = s->kv;
    if (!t) return;
    bm_last_leave(b, t);
    if (t->on_cpu) {
        for (int32_t i = 0; i < t->n; i++) pb_block_alloc_decref(b->cpu, t->blocks[i]);
    } else if (b->caching) {   /* last block first: a sequence's tail is evicted before its head */
        for (int32_t i = t->n - 1; i >= 0; i--) bm_gpu_release(b, t->blocks[i]);
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
    uint32_t ep = bm_next_epoch(b);
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
    if (need > (to_cpu ? pb_block_alloc_free_count(dst) : bm_gpu_avail(b))) return PB_ERR_NO_SPACE;
    if (to_cpu)
        for (int32_t i = 0; i < g->n_seqs; i++) bm_last_leave(b, g->seqs[i]->kv);
    uint32_t ep = bm_next_epoch(b);
    for (int32_t i = 0; i < g->n_seqs; i++) {
        bm_table *t = g->seqs[i]->kv;
        PB_ASSERT(t && t->on_cpu == !to_cpu);
        for (int32_t k = 0; k < t->n; k++) {
            int32_t from = t->blocks[k], to;
            /* its reload from the CPU tier must have run: never in the step that queued it */
            PB_ASSERT(!to_cpu || b->tier_in.n == 0 || b->n_tier == 0 || !bm_reload_queued(b, from));
            if (stamp[from] == ep) {
                to = mp[from];
                pb_block_alloc_incref(dst, to);
            } else {
                to = to_cpu ? pb_block_alloc_get(dst) : bm_gpu_get(b);
                PB_ASSERT(to >= 0);
                pb_block_alloc_set_fill(dst, to, pb_block_alloc_fill(src, from));
                stamp[from] = ep;
                mp[from] = to;
                pb_pair_vec_push(map, from, to);
            }
            if (to_cpu) bm_gpu_release(b, from);   /* a published block stays cached */
            else pb_block_alloc_decref(src, from);
            t->blocks[k] = to;
        }
        t->on_cpu = to_cpu;
        t->n_pub = 0;   /* new GPU blocks: offered to the cache again after the next step */
        b->logical_gpu += to_cpu ? -t->n : t->n;
    }
    if (!to_cpu)
        for (int32_t i = 0; i < g->n_seqs; i++) bm_last_enter(b, g->seqs[i]->kv);
    return PB_OK;
}

static pb_status bm_swap_out(pb_kv_manager *m, pb_group *g, pb_pair_vec *map) {
    return move_group(BM(m), g, true, map);
}

static pb_alloc_status bm_can_swap_in(pb_kv_manager *m, const pb_group *g) {
    bm *b = BM(m);
    int32_t need = distinct_blocks(b, g, true) + g->n_seqs;   /* + one append each */
    if (need > b->gpu->n_blocks - b->pinned_blocks - b->watermark_blocks) return PB_ALLOC_NEVER;
    if (bm_gpu_avail(b) - need >= b->watermark_blocks) return PB_ALLOC_OK;
    return PB_ALLOC_LATER;
}

static pb_status bm_swap_in(pb_kv_manager *m, pb_group *g, pb_pair_vec *map) {
    return move_group(BM(m), g, false, map);
}

/* ---- executor view, usage, check ---- */

static void bm_batch_info(pb_kv_manager *m, const pb_seq *s, pb_batch_seq *out) {
    const bm_table *t = s->kv;
    PB_ASSERT(t && !t->on_cpu);
    out->block_table = t->blocks;
    out->n_blocks = t->n;
    out->kv_offset = 0;
}

static void bm_usage(pb_kv_manager *m, pb_kv_usage *u) { bm_usage_of(BM(m), u); }

/* The reservation by a walk over every live table (what bm.reserved must equal);
 * per distinct last block, the share of the first table in live order. */
static int64_t reserved_walk(bm *b) {
    uint32_t ep = bm_next_epoch(b);
    int64_t reserved = 0;
    for (int32_t i = 0; i < b->n_live; i++) {
        const bm_table *t = b->live[i];
        if (t->on_cpu || t->n == 0) continue;
        int32_t last = t->blocks[t->n - 1];
        if (b->stamp_gpu[last] == ep) continue;
        b->stamp_gpu[last] = ep;
        reserved += bm_last_share(b, t);
    }
    return reserved;
}

static pb_status bm_check(pb_kv_manager *m) {
    bm *b = BM(m);
    int32_t bs = b->bs;
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
    if (st == PB_OK) st = bm_cache_check(b);
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
    bm_tier_free(b);
    bm_replay_free(b->rp);
    pb_block_alloc_destroy(b->gpu);
    pb_block_alloc_destroy(b->cpu);
    free(b);
}

/* the operations of both forms; the caching form also has computed() (publishing
   blocks), which the engine then calls for every batch sequence after every step */
#define BM_OPS                                                                                 \
    .name = "paged", .can_allocate = bm_can_allocate, .allocate = bm_allocate,                \
    .can_append = bm_can_append, .append = bm_append, .replay = &bm_replay_ops,                   \
    .fork = bm_fork, .refork = bm_refork,                                                      \
    .free = bm_free, .can_swap_out = bm_can_swap_out, .swap_out = bm_swap_out,                \
    .can_swap_in = bm_can_swap_in, .swap_in = bm_swap_in, .batch_info = bm_batch_info,        \
    .cached_tokens = bm_cached_tokens, .usage = bm_usage, .check = bm_check, .destroy = bm_destroy
static const pb_kv_manager_i BM_IFACE = {BM_OPS, .computed = bm_computed, .take_tier_moves = bm_take_tier_moves};
static const pb_kv_manager_i BM_IFACE_NOCACHE = {BM_OPS};

pb_status pb_paged_kv_create(const pb_paged_params *p, pb_kv_manager **out) {
    *out = NULL;
    if (!p || p->block_size < 1 || p->n_gpu_blocks < 1 || p->n_cpu_blocks < 0 ||
        p->watermark < 0 || p->watermark >= 1 || p->n_tier_blocks < 0 || (p->n_tier_blocks > 0 && !p->prefix_caching) ||
        (int64_t)PB_MIN(p->n_cpu_blocks, p->n_gpu_blocks) + p->n_tier_blocks > INT32_MAX) {
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
    bm_tier_init(b, p->n_tier_blocks);
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
    out->tier_hit_tokens = b->tier_hit_tokens;
    out->tier_spills = b->tier_spills;
    out->tier_reloads = b->tier_reloads;
    out->tier_drops = b->tier_drops;
    out->tier_blocks = b->tier_used;
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
