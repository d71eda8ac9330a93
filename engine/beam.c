/* beam.c -- beam-search selection and the score models (see beam.h). */
#include "beam.h"

#include <math.h>
#include <stdbool.h>

#include "pb.h"

void pb_beam_synth_candidates(pb_rng *r, int32_t n_top, int32_t vocab, pb_candidates *out) {
    if (n_top > PB_MAX_TOP) n_top = PB_MAX_TOP;
    if (n_top < 1) n_top = 1;
    double lp = 0;
    for (int32_t j = 0; j < n_top; j++) {
        lp -= pb_rng_exp(r, 1.0);
        out->logprob[j] = (float)lp;
        out->token[j] = (int32_t)pb_rng_below(r, (uint64_t)(vocab > 0 ? vocab : 1));
    }
    out->n = n_top;
}

void pb_beam_table_candidates(pb_rng *r, const pb_beam_table *t, int32_t n_top, int32_t vocab,
                              pb_candidates *out) {
    PB_ASSERT(n_top >= 1 && n_top <= t->n_top && n_top <= PB_MAX_TOP);
    const float *row = t->lp + (size_t)pb_rng_below(r, (uint64_t)t->n_rows) * (size_t)t->n_top;
    for (int32_t j = 0; j < n_top; j++) {
        out->logprob[j] = row[j];
        out->token[j] = vocab > 0 ? (int32_t)pb_rng_below(r, (uint64_t)vocab) : 0;
    }
    out->n = n_top;
}

int pb_beam_table_ok(const pb_beam_table *t, int32_t w) {
    if (!t || !t->lp || t->n_rows < 1 || t->n_top < 2 * w || t->n_top > PB_MAX_TOP) return 0;
    for (int64_t i = 0; i < (int64_t)t->n_rows; i++) {
        const float *row = t->lp + i * t->n_top;
        for (int32_t j = 0; j < t->n_top; j++)
            if (!isfinite(row[j]) || row[j] > 0 || (j > 0 && row[j] > row[j - 1])) return 0;
    }
    return 1;
}

/* better(a, b): a ranks before b */
static int better(const pb_beam_choice *a, const pb_beam_choice *b) {
    if (a->score != b->score) return a->score > b->score;
    if (a->parent != b->parent) return a->parent < b->parent;
    return a->rank < b->rank;
}

int32_t pb_beam_select(const double *cum, const pb_candidates *cand, int32_t n_beams, int32_t k,
                       pb_beam_choice *out) {
    int32_t n = 0;   /* out[0..n) sorted, best first (insertion into a k-list) */
    for (int32_t i = 0; i < n_beams; i++) {
        for (int32_t j = 0; j < cand[i].n; j++) {
            pb_beam_choice c = {i, j, cand[i].token[j], cand[i].logprob[j],
                                cum[i] + (double)cand[i].logprob[j]};
            if (n == k && !better(&c, &out[k - 1])) continue;
            int32_t pos = n < k ? n : k - 1;
            while (pos > 0 && better(&c, &out[pos - 1])) {
                out[pos] = out[pos - 1];
                pos--;
            }
            out[pos] = c;
            if (n < k) n++;
        }
    }
    return n;
}

/* ---- the fused synthetic path ---- */

enum { NB_MAX = PB_MAX_TOP / 2 };   /* beams of a group at most (beam width <= n_top / 2) */

/* The pairs (order[i], c[i]) -- beam order[i] and its cum -- sorted by cum, best
   first, ties by index: one pass of compares when they already are (most often), else
   an insertion sort in place. */
static inline void sort_pairs(int32_t nb, int32_t *order, double *c) {
    bool sorted = true;
    for (int32_t i = 1; i < nb; i++) sorted &= c[i - 1] > c[i];
    if (sorted) return;
    for (int32_t i = 1; i < nb; i++) {
        int32_t b = order[i], j = i;
        double cb = c[i];
        for (; j > 0 && (c[j - 1] < cb || (c[j - 1] == cb && order[j - 1] > b)); j--) {
            order[j] = order[j - 1];
            c[j] = c[j - 1];
        }
        order[j] = b;
        c[j] = cb;
    }
}

/* Beam i's log-probabilities are -E0, -E0-E1, ... (Exp(1) gaps): its scores are the
 * points of a rate-1 Poisson process below cum[i].  Together the beams' points are one
 * Poisson process whose rate at level s is the number of beams with cum > s, each
 * point belonging to one of those beams uniformly at random (no beam runs out:
 * n_top >= k).  Its integrated rate from the top, L(s) = sum_i max(0, cum_i - s), is
 * piecewise linear with knots at the sorted cums c_0 >= c_1 >= ...: L(c_j) = sum over
 * i < j of (c_i - c_j).  The m-th point is where L reaches T_m = E_1 + ... + E_m
 * (a rate-1 process): on the segment of the last knot j with L(c_j) <= T_m, at
 * s = c_j - (T_m - L(c_j)) / (j + 1); its beam is uniform among the j + 1 above.
 * A draw is one u64: an exponential and, from its spare bits, the pick among j + 1
 * (j = 0 too: no branch on it; rng.h pb_rng_exp_zig24_reg); finding the segment is
 * a count over the nb - 1 knots past c_0 (no branch either).  A score is
 * s itself, not rounded through a float logprob; each is kept at most the one before
 * (float rounding of s at a knot could otherwise put it an ulp above): the points
 * come out best first, as drawn. */
typedef struct {
    double c[NB_MAX], knot[NB_MAX];   /* c_j; L(c_j) (j < nb)              */
    int32_t order[NB_MAX];            /* the beams by cum (sort_pairs)     */
    double t, s;                      /* T_m; the last point's score       */
} points;

/* p's knots from its sorted cums, no point drawn yet. */
static inline void points_begin(points *p, int32_t nb) {
    p->knot[0] = 0;
    for (int32_t j = 1; j < nb; j++) p->knot[j] = p->knot[j - 1] + (double)j * (p->c[j - 1] - p->c[j]);
    p->t = 0;
    p->s = (double)INFINITY;
}

/* The next point: returns its beam, its score in p->s.  r: the generator in registers
   (pb_rng_*_reg), home its place in memory. */
static inline int32_t points_next(points *p, int32_t nb, pb_rng *r, pb_rng *home) {
    static const double inv[NB_MAX + 1] = {0, 1.0, 1.0 / 2, 1.0 / 3, 1.0 / 4, 1.0 / 5, 1.0 / 6, 1.0 / 7, 1.0 / 8};
    uint32_t spare;
    double t = p->t += pb_rng_exp_zig24_reg(r, home, &spare);
    int32_t j = 0;
    for (int32_t i = 1; i < nb; i++) j += p->knot[i] <= t;
    double s = p->c[j] - (t - p->knot[j]) * inv[j + 1];
    p->s = s < p->s ? s : p->s;
    return p->order[pb_rng_below32_reg(r, home, (uint32_t)j + 1, spare)];
}

int32_t pb_beam_synth_select(pb_rng *rp, const double *cum, const int32_t *hint, int32_t n_beams,
                             int32_t n_top, int32_t vocab, int32_t k, pb_beam_choice *out) {
    PB_ASSERT(n_beams <= NB_MAX && k <= n_top);
    if (k <= 0 || n_beams <= 0) return 0;
    points p;
    for (int32_t i = 0; i < n_beams; i++) {   /* the beams in the hint's order (NULL: index order) */
        p.order[i] = hint ? hint[i] : i;
        p.c[i] = cum[p.order[i]];
    }
    sort_pairs(n_beams, p.order, p.c);
    points_begin(&p, n_beams);
    int32_t rank[NB_MAX] = {0};
    pb_rng r = *rp;
    for (int32_t m = 0; m < k; m++) {
        int32_t b = points_next(&p, n_beams, &r, rp);
        out[m] = (pb_beam_choice){.parent = b, .rank = rank[b]++,
                                  .token = vocab > 0 ? (int32_t)pb_rng_below_reg(&r, rp, (uint64_t)vocab) : 0,
                                  .logprob = (float)(p.s - cum[b]), .score = p.s};
    }
    *rp = r;
    return k;
}

/* The plan's core, without branches on the parents (they are random): the children
   (kid[0..*n_kids), choice indices in order), the chosen beams (a bit set) and at[e]
   for e < nb -- a beam chosen continues as its first choice; the dead, in index
   order, are swap-removed: each takes the last entity then, a child from the end
   (nc >= nb: as many children as dead at least). */
static inline uint32_t plan_core(const pb_beam_choice *ch, int32_t nc, int32_t nb, int32_t *at,
                                 int32_t *kid, int32_t *n_kids) {
    int32_t first[NB_MAX + 1] = {0}, nk = 0;   /* first[NB_MAX]: a sink for later choices */
    uint32_t chosen = 0;
    kid[0] = 0;
    for (int32_t c = 0; c < nc; c++) {
        int32_t b = ch[c].parent, again = (int32_t)((chosen >> b) & 1u);
        first[pb_select_i32(again, NB_MAX, b)] = c;
        kid[nk] = c;
        nk += again;
        chosen |= 1u << b;
    }
    for (int32_t i = 0, d = 0; i < nb; i++) {
        int32_t alive = (int32_t)((chosen >> i) & 1u);
        at[i] = pb_select_i32(alive, first[i], kid[PB_MAX(nk - 1 - d, 0)]);
        d += !alive;
    }
    *n_kids = nk;
    return chosen;
}

void pb_beam_plan_make(const pb_beam_choice *ch, int32_t nc, int32_t nb, pb_beam_plan *p) {
    PB_ASSERT(nb >= 1 && nb <= nc && nc <= NB_MAX);
    int32_t n_kids, n_dead = 0;
    uint32_t chosen = plan_core(ch, nc, nb, p->at, p->kid, &n_kids);
    for (int32_t i = 0; i < nb; i++) {
        p->dead[n_dead] = i;
        n_dead += !((chosen >> i) & 1u);
    }
    for (int32_t j = 0; j < n_kids - n_dead; j++) p->at[nb + j] = p->kid[j];
    for (int32_t e = 0; e < nc; e++) p->next[p->at[e]] = e;
    p->n_kids = n_kids;
    p->n_dead = n_dead;
}

/* Select and plan in one pass.  The m-th point (best first) is the new rank m: its
   score c[m], its beam order[m].  A beam's first choice continues it: it keeps its
   index (parent[b] = b) and holds rank m (order[m] = b).  A later choice is a child,
   kept (kb, km).  Then the dead, in index order, take the children from the end
   (plan_core's rule), each its child's rank. */
static inline void advance(pb_rng *rp, double *c, int32_t *order, int32_t nb, int32_t *parent) {
    PB_ASSERT(nb >= 1 && nb <= NB_MAX);
    points p;
    for (int32_t i = 0; i < nb; i++) {
        p.order[i] = order[i];
        p.c[i] = c[i];
    }
    sort_pairs(nb, p.order, p.c);
    points_begin(&p, nb);
    int32_t kb[NB_MAX], km[NB_MAX], nk = 0;
    uint32_t chosen = 0;
    pb_rng r = *rp;
    for (int32_t m = 0; m < nb; m++) {
        int32_t b = points_next(&p, nb, &r, rp), again = (int32_t)((chosen >> b) & 1u);
        chosen |= 1u << b;
        c[m] = p.s;
        order[m] = b;
        kb[nk] = b;
        km[nk] = m;
        nk += again;
    }
    *rp = r;
    for (int32_t e = 0; e < nb; e++) parent[e] = e;   /* the chosen continue; the dead below */
    for (uint32_t dead = ~chosen & ((1u << nb) - 1); dead; dead &= dead - 1) {   /* as many as children */
        int32_t i = __builtin_ctz(dead);
        nk--;
        parent[i] = kb[nk];
        order[km[nk]] = i;
    }
}

/* advance at the width, a constant in each case (the widths of the experiments), so
   that its loops over the beams and the knots unroll. */
void pb_beam_synth_advance(pb_rng *rp, double *c, int32_t *order, int32_t nb, int32_t *parent) {
    switch (nb) {
    case 2: advance(rp, c, order, 2, parent); break;
    case 4: advance(rp, c, order, 4, parent); break;
    case 6: advance(rp, c, order, 6, parent); break;
    default: advance(rp, c, order, nb, parent); break;
    }
}

void pb_beam_table_advance(pb_rng *r, const pb_beam_table *t, double *c, int32_t *order, int32_t nb,
                           int32_t *parent) {
    PB_ASSERT(nb >= 1 && nb <= NB_MAX);
    double cum[NB_MAX] = {0};
    pb_candidates cand[NB_MAX] = {{0}};   /* filled below (nb of them) */
    pb_beam_choice ch[NB_MAX];
    pb_beam_plan pl;
    for (int32_t m = 0; m < nb; m++) cum[order[m]] = c[m];
    for (int32_t i = 0; i < nb; i++) pb_beam_table_candidates(r, t, 2 * nb, 0, &cand[i]);
    int32_t nc = pb_beam_select(cum, cand, nb, nb, ch);
    pb_beam_plan_make(ch, nc, nb, &pl);
    for (int32_t m = 0; m < nb; m++) {
        order[m] = pl.next[m];
        c[m] = ch[m].score;
    }
    for (int32_t e = 0; e < nb; e++) parent[e] = ch[pl.at[e]].parent;
}
