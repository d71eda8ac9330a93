/* block_manager.c -- the `paged` KV manager (see block_manager.h).
 *
 * Per sequence a bm_table (s->kv): physical block numbers of the GPU pool, or of the
 * CPU pool while swapped.  Invariants (bm_check): a table of kv_len tokens has
 * ceil(kv_len / bs) blocks; all but the last are full; the last block's fill equals
 * the tokens the sequence has in it (so a shared block is never written: appends
 * copy on write first); reference counts equal the references from tables plus the
 * prefix pool's pins; free + used == total in both pools; the running reservation
 * counters (below) equal a walk over every live table. */
#include "block_manager.h"

#include <stdlib.h>
#include <string.h>

typedef struct bm_table {
    int32_t *blocks;
    int32_t n, cap;
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
} bm;

static const pb_kv_manager_i BM_IFACE;

static bm *BM(pb_kv_manager *m) { return (bm *)m->impl; }
static const bm *BMc(const pb_kv_manager *m) { return (const bm *)m->impl; }

void pb_paged_params_default(pb_paged_params *p) {
    p->block_size = 16;
    p->n_gpu_blocks = 0;
    p->n_cpu_blocks = 0;
    p->watermark = 0.01;
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
    if (t->on_cpu || t->n == 0) return;
    if (b->last_refs[t->blocks[t->n - 1]]++ == 0) b->reserved += last_share(b, t);
}
static inline void last_leave(bm *b, const bm_table *t) {
    if (t->on_cpu || t->n == 0) return;
    if (--b->last_refs[t->blocks[t->n - 1]] == 0) b->reserved -= last_share(b, t);
}

/* ---- the prefix pool ---- */

static bool uses_prefix(const bm *b, const pb_group *g) {
    /* a prompt that is only the prefix is allocated privately (its last token must be
       computed by the request itself, never written into a pinned block) */
    (void)b;
    return g->prefix_id >= 0 && g->prefix_len > 0 && g->prompt_len > g->prefix_len;
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
    int32_t need = blocks_needed(b, g);
    int32_t usable = b->gpu->n_blocks - b->pinned_blocks - b->watermark_blocks;
    if (need > usable) return PB_ALLOC_NEVER;
    if (pb_block_alloc_free_count(b->gpu) - need >= b->watermark_blocks) return PB_ALLOC_OK;
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
            int32_t nb = pb_block_alloc_get(b->gpu);
            PB_ASSERT(nb >= 0);
            pb_block_alloc_set_fill(b->gpu, nb, take);
            table_push(b, t, nb);
        } else {
            int32_t last = t->blocks[t->n - 1];
            PB_ASSERT(pb_block_alloc_fill(b->gpu, last) == off);
            if (pb_block_alloc_ref(b->gpu, last) == 1) {
                pb_block_alloc_set_fill(b->gpu, last, off + take);
            } else {   /* copy on write */
                int32_t nb = pb_block_alloc_get(b->gpu);
                PB_ASSERT(nb >= 0);
                pb_block_alloc_set_fill(b->gpu, nb, off + take);
                if (copies) pb_pair_vec_push(copies, last, nb);
                pb_block_alloc_decref(b->gpu, last);
                t->blocks[t->n - 1] = nb;
            }
        }
        *kv_len += take;
    }
}

static pb_status bm_allocate(pb_kv_manager *m, pb_group *g, pb_pair_vec *copies) {
    bm *b = BM(m);
    if (g->n_seqs < 1) return PB_ERR_INVALID;
    int32_t need = blocks_needed(b, g);
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
    return g->n_seqs <= pb_block_alloc_free_count(BM(m)->gpu);
}

static pb_status bm_append(pb_kv_manager *m, pb_seq *s, pb_pair_vec *copies) {
    bm *b = BM(m);
    bm_table *t = s->kv;
    PB_ASSERT(t && !t->on_cpu);
    if (pb_block_alloc_free_count(b->gpu) == 0) {
        int32_t off = s->kv_len % b->bs;
        if (off == 0 || pb_block_alloc_ref(b->gpu, t->blocks[t->n - 1]) > 1) return PB_ERR_NO_SPACE;
    }
    int32_t kv = s->kv_len;
    int32_t off = b->bs_mask >= 0 ? (kv & b->bs_mask) : kv % b->bs;
    if (off != 0 && pb_block_alloc_ref(b->gpu, t->blocks[t->n - 1]) == 1) {
        /* the common case, a private last block with room: written in place, and its
           share of the reservation (min(empty, to come), both one less) drops by one
           unless nothing was to come */
        const pb_group *g = s->group;
        if (g && g->prompt_len + g->output_len - 1 - kv >= 1) b->reserved--;
        pb_block_alloc_set_fill(b->gpu, t->blocks[t->n - 1], off + 1);
        s->kv_len = kv + 1;
        return PB_OK;
    }
    last_leave(b, t);
    extend(b, t, &kv, kv + 1, copies);
    s->kv_len = kv;
    last_enter(b, t);
    return PB_OK;
}

static pb_status bm_fork(pb_kv_manager *m, const pb_seq *parent, pb_seq *child) {
    bm *b = BM(m);
    const bm_table *pt = parent->kv;
    PB_ASSERT(pt && child->kv == NULL);
    bm_table *t = table_new(b, child, pt->on_cpu);
    pb_block_alloc *a = pt->on_cpu ? b->cpu : b->gpu;
    if (t->cap < pt->n) {
        t->cap = pt->n;
        t->blocks = pb_xrealloc(t->blocks, (size_t)t->cap * sizeof(int32_t));
    }
    for (int32_t i = 0; i < pt->n; i++) pb_block_alloc_incref(a, pt->blocks[i]);
    memcpy(t->blocks, pt->blocks, (size_t)pt->n * sizeof(int32_t));
    t->n = pt->n;
    if (!t->on_cpu) b->logical_gpu += t->n;
    child->kv_len = parent->kv_len;
    child->n_cached = parent->n_cached;
    last_enter(b, t);
    return PB_OK;
}

static void bm_free(pb_kv_manager *m, pb_seq *s) {
    bm *b = BM(m);
    bm_table *t = s->kv;
    if (!t) return;
    pb_block_alloc *a = t->on_cpu ? b->cpu : b->gpu;
    last_leave(b, t);
    for (int32_t i = 0; i < t->n; i++) pb_block_alloc_decref(a, t->blocks[i]);
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
    if (need > pb_block_alloc_free_count(dst)) return PB_ERR_NO_SPACE;
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
                to = pb_block_alloc_get(dst);
                PB_ASSERT(to >= 0);
                pb_block_alloc_set_fill(dst, to, pb_block_alloc_fill(src, from));
                stamp[from] = ep;
                mp[from] = to;
                pb_pair_vec_push(map, from, to);
            }
            pb_block_alloc_decref(src, from);
            t->blocks[k] = to;
        }
        t->on_cpu = to_cpu;
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
    if (pb_block_alloc_free_count(b->gpu) - need >= b->watermark_blocks) return PB_ALLOC_OK;
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

static void bm_usage(pb_kv_manager *m, pb_kv_usage *u) {
    bm *b = BM(m);
    int32_t bs = b->bs;
    memset(u, 0, sizeof *u);
    u->gpu_blocks_total = b->gpu->n_blocks;
    u->gpu_blocks_free = pb_block_alloc_free_count(b->gpu);
    u->cpu_blocks_total = b->cpu->n_blocks;
    u->cpu_blocks_used = pb_block_alloc_used(b->cpu);
    u->physical_blocks = pb_block_alloc_used(b->gpu);
    u->logical_blocks = b->logical_gpu;
    u->total_slots = (int64_t)b->gpu->n_blocks * bs;
    int64_t allocated = u->physical_blocks * bs;
    u->token_slots = b->gpu->token_slots;
    u->free_slots = u->total_slots - allocated;
    u->reserved_slots = b->reserved;
    u->internal_frag_slots = allocated - u->token_slots - b->reserved;
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
        free(b->live[i]);
    }
    for (bm_table *t = b->free_tables, *nx; t; t = nx) {
        nx = t->next_free;
        free(t->blocks);
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
    pb_block_alloc_destroy(b->gpu);
    pb_block_alloc_destroy(b->cpu);
    free(b);
}

static const pb_kv_manager_i BM_IFACE = {
    .name = "paged",
    .can_allocate = bm_can_allocate,
    .allocate = bm_allocate,
    .can_append = bm_can_append,
    .append = bm_append,
    .fork = bm_fork,
    .free = bm_free,
    .can_swap_out = bm_can_swap_out,
    .swap_out = bm_swap_out,
    .can_swap_in = bm_can_swap_in,
    .swap_in = bm_swap_in,
    .batch_info = bm_batch_info,
    .usage = bm_usage,
    .check = bm_check,
    .destroy = bm_destroy,
};

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
    b->base.iface = &BM_IFACE;
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

int32_t pb_paged_prefix_blocks(const pb_kv_manager *m, int32_t prefix_id) {
    const bm *b = BMc(m);
    if (prefix_id < 0 || prefix_id >= b->n_prefixes || !b->prefixes[prefix_id].present) return 0;
    return b->prefixes[prefix_id].n;
}
