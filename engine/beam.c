/* beam.c -- beam-search selection and the synthetic model (see beam.h). */
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

/* The beams by cum, best first, ties by index: an insertion sort starting from the
   hint's order (NULL: index order); with the right hint, nb - 1 compares. */
static inline void sort_by_cum(const double *cum, const int32_t *hint, int32_t nb, int32_t *order) {
    if (hint) {   /* most often already sorted: one pass of compares tells */
        bool sorted = true;
        for (int32_t i = 1; i < nb; i++) sorted &= cum[hint[i - 1]] > cum[hint[i]];
        if (sorted) {
            for (int32_t i = 0; i < nb; i++) order[i] = hint[i];
            return;
        }
    }
    for (int32_t i = 0; i < nb; i++) {
        int32_t b = hint ? hint[i] : i, j = i;
        double cb = cum[b];
        for (; j > 0 && (cum[order[j - 1]] < cb || (cum[order[j - 1]] == cb && order[j - 1] > b)); j--)
            order[j] = order[j - 1];
        order[j] = b;
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
 * Finding the segment is a count over the knots (padded to NB_MAX with +inf: no
 * data-dependent branch).  Then the choices are put in pb_beam_select's order (the
 * rounded scores, ties by beam then rank): drawn level by level they are sorted but
 * for the float rounding of logprob.  order: the beams by cum (sort_by_cum).  ranks:
 * fill out[].rank (else 0: a beam's choices are drawn in rank order, so the sort
 * needs no rank -- it is stable).  The generator is copied in and out (registers). */
static inline void draw_top(pb_rng *rp, const double *cum, const int32_t *order, int32_t nb, int32_t k,
                            int32_t vocab, bool ranks, pb_beam_choice *out) {
    static const double inv[NB_MAX + 1] = {0, 1.0, 1.0 / 2, 1.0 / 3, 1.0 / 4, 1.0 / 5, 1.0 / 6, 1.0 / 7, 1.0 / 8};
    double c[NB_MAX], knot[NB_MAX];   /* c_j and L(c_j) */
    for (int32_t j = 0; j < nb; j++) c[j] = cum[order[j]];
    knot[0] = 0;
    for (int32_t j = 1; j < NB_MAX; j++)
        knot[j] = j < nb ? knot[j - 1] + (double)j * (c[j - 1] - c[j]) : (double)INFINITY;
    int32_t rank[NB_MAX] = {0};
    pb_rng r = *rp;   /* in registers (pb_rng_*_reg) */
    double t = 0;
    for (int32_t m = 0; m < k; m++) {
        t += pb_rng_exp_zig_reg(&r, rp);
        int32_t j = 0;
        for (int32_t i = 1; i < NB_MAX; i++) j += knot[i] <= t;
        double s = c[j] - (t - knot[j]) * inv[j + 1];
        int32_t b = order[j > 0 ? (int32_t)pb_rng_below_reg(&r, rp, (uint64_t)j + 1) : 0];
        float lp = (float)(s - cum[b]);
        out[m] = (pb_beam_choice){.parent = b, .rank = ranks ? rank[b]++ : 0,
                                  .token = vocab > 0 ? (int32_t)pb_rng_below_reg(&r, rp, (uint64_t)vocab) : 0,
                                  .logprob = lp, .score = cum[b] + (double)lp};
    }
    *rp = r;
    for (int32_t i = 1; i < k; i++) {
        if (!better(&out[i], &out[i - 1])) continue;
        pb_beam_choice ch = out[i];
        int32_t j = i;
        for (; j > 0 && better(&ch, &out[j - 1]); j--) out[j] = out[j - 1];
        out[j] = ch;
    }
}

int32_t pb_beam_synth_select(pb_rng *r, const double *cum, const int32_t *hint, int32_t n_beams,
                             int32_t n_top, int32_t vocab, int32_t k, pb_beam_choice *out) {
    PB_ASSERT(n_beams <= NB_MAX && k <= n_top);
    if (k <= 0 || n_beams <= 0) return 0;
    int32_t order[NB_MAX];
    sort_by_cum(cum, hint, n_beams, order);
    draw_top(r, cum, order, n_beams, k, vocab, true, out);
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
        first[again ? NB_MAX : b] = c;
        kid[nk] = c;
        nk += again;
        chosen |= 1u << b;
    }
    for (int32_t i = 0, d = 0; i < nb; i++) {
        bool alive = (chosen >> i) & 1u;
        at[i] = alive ? first[i] : kid[PB_MAX(nk - 1 - d, 0)];
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

void pb_beam_synth_advance(pb_rng *r, double *cum, int32_t *order, int32_t nb, int32_t *parent) {
    PB_ASSERT(nb >= 1 && nb <= NB_MAX);
    int32_t o[NB_MAX] = {0};   /* zeroed for the compiler: draw_top reads o[0..nb) */
    sort_by_cum(cum, order, nb, o);
    pb_beam_choice ch[NB_MAX];
    draw_top(r, cum, o, nb, nb, 0, false, ch);
    int32_t at[NB_MAX], kid[NB_MAX], n_kids;   /* the plan with nc == nb: a permutation */
    plan_core(ch, nb, nb, at, kid, &n_kids);
    for (int32_t e = 0; e < nb; e++) {
        parent[e] = ch[at[e]].parent;
        cum[e] = ch[at[e]].score;
        order[at[e]] = e;
    }
}
