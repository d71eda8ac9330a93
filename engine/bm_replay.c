/* bm_replay.c -- the paged manager's replayed steps (replay.h pb_kv_replay_i).
 *
 * Decode replay.  At replay step k (from 0) sequence i has kv_len base[i] + k before
 * its append; it takes a block at the steps whose phase k % bs is phase[i] =
 * (bs - base[i] % bs) % bs.  Every other append writes in place, which the replay
 * counts instead of doing: one slot more in `pending` (this file's usage adds it to
 * the token slots) and one reserved slot less in the manager's reservation (the
 * sequence's share min(empty, to come) drops by one, to come staying >= 1 by the
 * contract).  A sequence taking a block is brought up to date first (its kv_len, its
 * full last block's fill), then appends as append() does; a popped sequence and the
 * end bring sequences up to date.  A step costs O(1 + the sequences taking a block)
 * and leaves the pools, reference counts and reservation exactly as can_append +
 * append of each in turn would.
 *
 * Beam replay.  Each group is a tree of blocks: the beams' tables are paths from the
 * prompt's first block (a block at the same index in two tables means the same
 * blocks before it: forks copy tables, appends copy on write), kept as the beams in
 * the order of a walk of the tree (dfs) and the leading blocks each shares with the
 * one before it (lcp; no earlier beam shares more), so the group holds phys = nb n -
 * sum of lcp distinct blocks, of them lasts = nb - #(lcp == n) last blocks.  An
 * append takes a block per beam when the last is full (n + 1), else copies on write
 * each shared last block once per extra holder (nb - lasts copies; lcp n becomes
 * n - 1).  A selection puts each chosen parent's children where the parent was in
 * the walk, siblings sharing all n blocks, a parent's first child sharing with the
 * child before it the least lcp between their parents.  At begin (or a join) the
 * group's tables are emptied -- their blocks released, their share of the
 * reservation and logical blocks withdrawn -- and the pool reserves, instead, one
 * block per distinct block of the tree by count (`held`, block_alloc.h), more or
 * fewer as the counts change: the pool's free and used counts stay exact, and this
 * file's usage adds the groups' token, reserved and logical slots from their counts.
 * beam_end releases the reservation and builds the tables in walk order: a beam's
 * first lcp blocks are the previous beam's, the rest new blocks (the same sharing,
 * other block numbers).  A step costs O(beams) per group; begin and a join
 * O(beams^2 log n + table entries), the end O(table entries). */
#include "block_manager_int.h"

#include <stdlib.h>
#include <string.h>

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
} rp_decode;

#define BM_BEAMS (PB_MAX_TOP / 2)
_Static_assert(BM_BEAMS <= 8, "beam_select keys (walk rank, beam) in 3 + 3 bits");
typedef struct {
    pb_group *g;
    int32_t nb, kv, n;       /* beams; their kv_len; blocks of each table, ceil(kv / bs) */
    int32_t to_end;          /* prompt_len + output_len - 1: tokens to come = to_end - kv */
    int32_t phys, lasts;     /* distinct blocks; distinct last blocks                  */
    int32_t dfs[BM_BEAMS];   /* the beams in the order of a walk of their block tree    */
    int32_t rank[BM_BEAMS];  /* rank[dfs[r]] = r                                        */
    int32_t lcp[BM_BEAMS];   /* r >= 1: leading blocks beams dfs[r - 1] and dfs[r] share
                                (lcp[0] and past the beams 0)                         */
} rp_beam;

typedef struct {
    rp_beam *gr;
    int32_t n, cap;
    int32_t beams;           /* the groups' beams (sum of nb)                           */
    int32_t held;            /* blocks reserved in the pool for the groups (sum of phys) */
    int64_t logical;         /* the groups' logical blocks (sum of nb n)                */
    int64_t tok, res;        /* beam_slots summed as the last beam_step left them,      */
    bool sums;               /*   while nothing changed since (sums true)               */
    bool on;
} rp_beams;

struct bm_replay {
    rp_decode d;
    rp_beams bb;
};

static struct bm_replay *state(bm *b) {
    if (!b->rp) b->rp = pb_xcalloc(1, sizeof *b->rp);
    return b->rp;
}

void bm_replay_free(struct bm_replay *r) {
    if (!r) return;
    free(r->d.base);
    free(r->d.phase);
    free(r->d.order);
    free(r->d.start);
    free(r->d.end);
    free(r->bb.gr);
    free(r);
}

/* ---- decode replay ---- */

static inline int32_t phase_of(const bm *b, int32_t kv) {
    int32_t off = bm_offset(b, kv);
    return off ? b->bs - off : 0;
}

static pb_status rp_begin(pb_kv_manager *m, pb_seq *const *seqs, int32_t n) {
    bm *b = BM(m);
    struct bm_replay *st = state(b);
    rp_decode *r = &st->d;
    PB_ASSERT(!r->on && !st->bb.on && n >= 1);
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
static void sync(bm *b, rp_decode *r, int32_t i, bool appended) {
    pb_seq *s = r->seqs[i];
    bm_table *t = s->kv;
    s->kv_len = r->base[i] + r->k + appended;
    int32_t last = t->blocks[t->n - 1], fill = s->kv_len - (t->n - 1) * b->bs;
    r->pending -= fill - pb_block_alloc_fill(b->gpu, last);
    pb_block_alloc_set_fill(b->gpu, last, fill);
}

/* Step k's appends from seqs[next] on, in order, until one cannot (can_append: no
   free block): its index; the step is complete (k + 1) when they all could. */
static int32_t rp_step(pb_kv_manager *m) {
    bm *b = BM(m);
    rp_decode *r = &b->rp->d;
    int32_t from = r->next;
    PB_ASSERT(r->on && r->k < r->steps_left);
    int32_t p = b->bs_mask >= 0 ? (r->k & b->bs_mask) : r->k % b->bs;
    if (from == 0) r->cur = r->start[p];
    int32_t taken = 0, stuck = r->n;   /* blocks taken in this call */
    if (bm_gpu_avail(b) < 1) {
        stuck = from;
    } else {
        for (; r->cur < r->end[p]; r->cur++) {
            int32_t i = r->order[r->cur];   /* from <= i: the ones before appended */
            sync(b, r, i, false);           /* its last block is full: share 0, as the
                                               reservation has it */
            pb_status st = bm_append(m, r->seqs[i], NULL);
            PB_ASSERT(st == PB_OK);
            (void)st;
            taken++;
            if (bm_gpu_avail(b) < 1 && i + 1 < r->n) {
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
static void rp_pop(pb_kv_manager *m) {
    bm *b = BM(m);
    rp_decode *r = &b->rp->d;
    int32_t i = r->n - 1;
    PB_ASSERT(r->on && i >= r->next && i >= 0);
    sync(b, r, i, false);
    int32_t p = r->phase[i];
    PB_ASSERT(r->order[r->end[p] - 1] == i);   /* the last of its phase */
    r->end[p]--;
    r->n--;
    if (r->n == r->next && r->next > 0) r->k++, r->next = 0;   /* the step is complete */
}

static void rp_end(pb_kv_manager *m) {
    bm *b = BM(m);
    rp_decode *r = &b->rp->d;
    PB_ASSERT(r->on && r->next == 0);
    for (int32_t i = 0; i < r->n; i++) sync(b, r, i, false);
    PB_ASSERT(r->pending == 0);
    r->on = false;
}

/* ---- beam replay ---- */

/* n more of the groups' blocks held (reserved in the pool by count) / released. */
static void hold(bm *b, rp_beams *bb, int32_t n) {
    pb_block_alloc_reserve(b->gpu, n);
    bb->held += n;
}
static void unhold(bm *b, rp_beams *bb, int32_t n) {
    PB_ASSERT(n <= bb->held);
    pb_block_alloc_unreserve(b->gpu, n);
    bb->held -= n;
}

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
static void beam_count(rp_beam *x) {
    int32_t shared = 0, lasts = x->nb;
    for (int32_t r = 1; r < x->nb; r++) {
        shared += x->lcp[r];
        lasts -= x->lcp[r] == x->n;
    }
    x->phys = x->nb * x->n - shared;
    x->lasts = lasts;
}

/* x's token and reserved slots (as the manager's usage counts them for tables) from
   its counts. */
static void beam_slots(const bm *b, const rp_beam *x, int64_t *tok, int64_t *res) {
    int32_t fill = x->kv - (x->n - 1) * b->bs, to_come = x->to_end - x->kv;
    *tok = (int64_t)(x->phys - x->lasts) * b->bs + (int64_t)x->lasts * fill;
    *res = to_come > 0 ? (int64_t)x->lasts * PB_MIN(b->bs - fill, to_come) : 0;
}

/* The groups' token and reserved slots: beam_step's sums when nothing changed since
   (usage right after a step: the common case), else a walk. */
static void beams_slots(const bm *b, const rp_beams *bb, int64_t *tok, int64_t *res) {
    if (bb->sums) {
        *tok = bb->tok;
        *res = bb->res;
        return;
    }
    int64_t tok_sum = 0, res_sum = 0;
    for (int32_t i = 0; i < bb->n; i++) {
        int64_t t, r;
        beam_slots(b, &bb->gr[i], &t, &r);
        tok_sum += t;
        res_sum += r;
    }
    *tok = tok_sum;
    *res = res_sum;
}

/* Group g into the replay as x: its walk and counts from its tables, then the tables
   emptied (their blocks, reservation and logical blocks withdrawn) and as many of
   the pool's blocks held as the tree has. */
static void beam_enter(bm *b, rp_beams *bb, rp_beam *x, pb_group *g) {
    x->g = g;
    x->nb = g->n_seqs;
    x->kv = g->seqs[0]->kv_len;
    x->n = PB_CDIV(x->kv, b->bs);
    x->to_end = g->prompt_len + g->output_len - 1;
    for (int32_t e = 0; e < x->nb; e++) {   /* the walk: tables in block order */
        const bm_table *t = g->seqs[e]->kv;
        PB_ASSERT(t && !t->on_cpu && t->n == x->n && g->seqs[e]->kv_len == x->kv);
        int32_t r = e;
        for (; r > 0 && walk_before(t, g->seqs[x->dfs[r - 1]]->kv, x->n); r--) x->dfs[r] = x->dfs[r - 1];
        x->dfs[r] = e;
    }
    memset(x->lcp, 0, sizeof x->lcp);   /* 0 past the beams too (beam_step reads all) */
    for (int32_t r = 0; r < x->nb; r++) {
        x->rank[x->dfs[r]] = r;
        if (r > 0) x->lcp[r] = common_blocks(g->seqs[x->dfs[r - 1]]->kv, g->seqs[x->dfs[r]]->kv, x->n);
    }
    beam_count(x);
    for (int32_t e = 0; e < x->nb; e++) {
        bm_table *t = g->seqs[e]->kv;
        bm_last_leave(b, t);
        for (int32_t k = 0; k < t->n; k++) pb_block_alloc_decref(b->gpu, t->blocks[k]);
        b->logical_gpu -= t->n;
        t->n = 0;
    }
    hold(b, bb, x->phys);
    bb->beams += x->nb;
    bb->logical += (int64_t)x->nb * x->n;
    bb->sums = false;
}

/* Room in bb for n groups. */
static void beams_reserve(rp_beams *bb, int32_t n) {
    if (bb->cap >= n) return;
    bb->cap = PB_MAX(n, 2 * bb->cap);
    bb->gr = pb_xrealloc(bb->gr, (size_t)bb->cap * sizeof *bb->gr);
}

/* A tree of at most BM_BEAMS beams whose blocks are all its own (no prefix pool). */
static bool beam_supported(const bm *b, const pb_group *g) {
    return g->n_seqs <= BM_BEAMS && !bm_uses_prefix(b, g);
}

static pb_status rp_beam_begin(pb_kv_manager *m, pb_group *const *groups, int32_t n) {
    bm *b = BM(m);
    struct bm_replay *st = state(b);
    rp_beams *bb = &st->bb;
    PB_ASSERT(!bb->on && !st->d.on && n >= 1);
    if (b->caching) return PB_ERR_UNSUPPORTED;
    for (int32_t i = 0; i < n; i++)
        if (!beam_supported(b, groups[i])) return PB_ERR_UNSUPPORTED;
    beams_reserve(bb, n);
    bb->held = 0;
    bb->logical = 0;
    bb->beams = 0;
    for (int32_t i = 0; i < n; i++) beam_enter(b, bb, &bb->gr[i], groups[i]);
    bb->n = n;
    bb->on = true;
    return PB_OK;
}

static pb_status rp_beam_join(pb_kv_manager *m, pb_group *g) {
    bm *b = BM(m);
    rp_beams *bb = &b->rp->bb;
    PB_ASSERT(bb->on);
    if (!beam_supported(b, g)) return PB_ERR_UNSUPPORTED;
    beams_reserve(bb, bb->n + 1);
    beam_enter(b, bb, &bb->gr[bb->n++], g);
    return PB_OK;
}

/* One step's appends; -1 (nothing done) when a group cannot append (can_append:
   one possible block per beam, after the groups before it took theirs). */
static int32_t rp_beam_step(pb_kv_manager *m) {
    bm *b = BM(m);
    rp_beams *bb = &b->rp->bb;
    PB_ASSERT(bb->on);
    int32_t avail = bm_gpu_avail(b), copies = 0, taken = 0;
    int64_t tok = 0, res = 0;   /* beams_slots' sums, after the appends */
    for (int32_t i = 0; i < bb->n && avail < bb->beams; i++) {   /* none when a block is free for every beam */
        const rp_beam *x = &bb->gr[i];
        if (x->nb > avail) return -1;
        avail -= phase_of(b, x->kv) == 0 ? x->nb : x->nb - x->lasts;
    }
    for (int32_t i = 0; i < bb->n; i++) {
        rp_beam *x = &bb->gr[i];
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
        taken += take;
        int64_t t, r;
        beam_slots(b, x, &t, &r);
        tok += t;
        res += r;
    }
    hold(b, bb, taken);
    bb->tok = tok;
    bb->res = res;
    bb->sums = true;
    return copies;
}

/* Children keyed (parent's walk rank, index) in one 64-bit set (nb <= 8: keys <
   64) come out of it in the new walk order; gap[r] is the least lcp between a chosen
   parent at rank r and the chosen one before it (0 for the first chosen: the walk's
   first beam shares nothing with one before it). */
static inline int32_t beam_select(rp_beam *x, int32_t nb, const int32_t *parent) {
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
static int32_t rp_beam_select(pb_kv_manager *m, int32_t i, const int32_t *parent) {
    bm *b = BM(m);
    rp_beams *bb = &b->rp->bb;
    PB_ASSERT(bb->on && i < bb->n);
    rp_beam *x = &bb->gr[i];
    int32_t freed;
    switch (x->nb) {
    case 2: freed = beam_select(x, 2, parent); break;
    case 4: freed = beam_select(x, 4, parent); break;
    case 6: freed = beam_select(x, 6, parent); break;
    default: freed = beam_select(x, x->nb, parent); break;
    }
    unhold(b, bb, freed);
    bb->sums = false;
    return freed;
}

/* Group i's blocks freed, its sequences' (empty) tables released, the group out of
   the replay (those after it move down one). */
static void rp_beam_free(pb_kv_manager *m, int32_t i) {
    bm *b = BM(m);
    rp_beams *bb = &b->rp->bb;
    PB_ASSERT(bb->on && i >= 0 && i < bb->n);
    rp_beam *x = &bb->gr[i];
    unhold(b, bb, x->phys);
    bb->logical -= (int64_t)x->nb * x->n;
    bb->beams -= x->nb;
    bb->sums = false;
    for (int32_t e = 0; e < x->nb; e++) bm_free(m, x->g->seqs[e]);
    memmove(x, x + 1, (size_t)(bb->n - i - 1) * sizeof *x);
    bb->n--;
}

/* The held blocks released and the tables built in walk order (see above): the
   pools, reservation and logical blocks as the replay's usage counted them. */
static void rp_beam_end(pb_kv_manager *m) {
    bm *b = BM(m);
    rp_beams *bb = &b->rp->bb;
    PB_ASSERT(bb->on);
    int64_t tok, res;
    beams_slots(b, bb, &tok, &res);
    int64_t used = pb_block_alloc_used(b->gpu), logical = b->logical_gpu + bb->logical;
    tok += b->gpu->token_slots;
    res += b->reserved;
    unhold(b, bb, bb->held);
    for (int32_t i = 0; i < bb->n; i++) {
        rp_beam *x = &bb->gr[i];
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
            bm_last_enter(b, t);
            prev = t;
        }
    }
    PB_ASSERT(pb_block_alloc_used(b->gpu) == used && b->gpu->token_slots == tok && b->reserved == res &&
              b->logical_gpu == logical);
    bb->logical = 0;
    bb->sums = false;
    bb->on = false;
}

/* ---- the memory breakdown inside a replay ---- */

static void rp_usage(pb_kv_manager *m, pb_kv_usage *u) {
    bm *b = BM(m);
    bm_usage_of(b, u);
    const struct bm_replay *st = b->rp;
    if (!st) return;
    int64_t tok = st->d.pending, res = 0;
    if (st->bb.on) {
        int64_t t, r;
        beams_slots(b, &st->bb, &t, &r);
        tok += t;
        res += r;
        u->logical_blocks += st->bb.logical;
    }
    u->token_slots += tok;
    u->reserved_slots += res;
    u->internal_frag_slots -= tok + res;
}

const pb_kv_replay_i bm_replay_ops = {
    .begin = rp_begin, .step = rp_step, .pop = rp_pop, .end = rp_end,
    .beam_begin = rp_beam_begin, .beam_step = rp_beam_step, .beam_select = rp_beam_select,
    .beam_free = rp_beam_free, .beam_join = rp_beam_join, .beam_end = rp_beam_end, .usage = rp_usage,
};
