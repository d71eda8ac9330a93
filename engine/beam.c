/* beam.c -- beam-search selection and the synthetic model (see beam.h). */
#include "beam.h"

#include <math.h>

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

/* Beam i's log-probabilities are -E0, -E0-E1, ... (Exp(1) gaps): its scores are the
 * points of a rate-1 Poisson process below cum[i], its first n_top points.  The
 * beams' processes together form one Poisson process whose rate at score s is the
 * number of live beams with cum > s, each point belonging to one of those beams
 * uniformly at random.  So the top k are drawn from the best down: one Exp(1) of
 * integrated rate per choice (spent across the cum steps the level passes, where a
 * beam joins), then the beam, uniform among the live ones (a beam leaves after
 * n_top choices), then the token.  Finally the choices are put in pb_beam_select's
 * order (the rounded scores, ties by beam then rank). */
int32_t pb_beam_synth_select(pb_rng *r, const double *cum, int32_t n_beams, int32_t n_top,
                             int32_t vocab, int32_t k, pb_beam_choice *out) {
    if (n_top > PB_MAX_TOP) n_top = PB_MAX_TOP;
    if (n_top < 1) n_top = 1;
    PB_ASSERT(n_beams <= PB_MAX_TOP);
    if (k <= 0 || n_beams <= 0) return 0;
    uint64_t nv = (uint64_t)(vocab > 0 ? vocab : 1);
    int32_t order[PB_MAX_TOP];   /* beams by cum, best first (ties by index) */
    for (int32_t i = 0; i < n_beams; i++) {
        int32_t j = i;
        for (; j > 0 && cum[order[j - 1]] < cum[i]; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    int32_t live[PB_MAX_TOP], n_live = 0, joined = 0, ranks[PB_MAX_TOP] = {0};
    double s = cum[order[0]];   /* the level: the last point drawn */
    int32_t n = 0;
    while (n < k) {
        double e = pb_rng_exp_zig(r);
        for (;;) {   /* beams whose cum the level reached join; spend e at rate n_live */
            while (joined < n_beams && cum[order[joined]] >= s) live[n_live++] = order[joined++];
            double next = joined < n_beams ? cum[order[joined]] : -INFINITY;
            if (n_live > 0 && e < (s - next) * n_live) {
                s -= e / n_live;
                break;
            }
            if (joined == n_beams) break;   /* no beam left to join: all exhausted */
            e -= (s - next) * n_live;
            s = next;
        }
        if (n_live == 0) break;   /* every beam exhausted: fewer than k candidates */
        int32_t w = n_live > 1 ? (int32_t)pb_rng_below(r, (uint64_t)n_live) : 0, b = live[w];
        float lp = (float)(s - cum[b]);
        out[n] = (pb_beam_choice){.parent = b, .rank = ranks[b], .token = (int32_t)pb_rng_below(r, nv),
                                  .logprob = lp, .score = cum[b] + (double)lp};
        n++;
        if (++ranks[b] == n_top) live[w] = live[--n_live];
    }
    for (int32_t i = 1; i < n; i++) {   /* nearly sorted already: float rounding of logprob */
        pb_beam_choice c = out[i];
        int32_t j = i;
        for (; j > 0 && better(&c, &out[j - 1]); j--) out[j] = out[j - 1];
        out[j] = c;
    }
    return n;
}
