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

/* A k-way merge of the beams' candidate lists, which are sorted (scores never rise
 * with rank): the best remaining candidate is always one of the beams' heads, so a
 * beam's rank j + 1 is drawn only once its rank j was chosen.  That draws n_beams +
 * k - 1 exponential gaps and k tokens, instead of n_beams * n_top of each. */
int32_t pb_beam_synth_select(pb_rng *r, const double *cum, int32_t n_beams, int32_t n_top,
                             int32_t vocab, int32_t k, pb_beam_choice *out) {
    if (n_top > PB_MAX_TOP) n_top = PB_MAX_TOP;
    if (n_top < 1) n_top = 1;
    PB_ASSERT(n_beams <= PB_MAX_TOP);
    if (k <= 0 || n_beams <= 0) return 0;
    uint64_t nv = (uint64_t)(vocab > 0 ? vocab : 1);
    pb_beam_choice head[PB_MAX_TOP];   /* each beam's best candidate not chosen yet */
    double lp[PB_MAX_TOP];             /* its log-probability, unrounded            */
    bool alive[PB_MAX_TOP];            /* the beam has a candidate left (rank < n_top) */
    for (int32_t i = 0; i < n_beams; i++) {
        lp[i] = -pb_rng_exp(r, 1.0);
        head[i] = (pb_beam_choice){.parent = i, .rank = 0, .logprob = (float)lp[i]};
        head[i].score = cum[i] + (double)head[i].logprob;
        alive[i] = true;
    }
    int32_t n = 0;
    while (n < k) {
        int32_t b = -1;
        for (int32_t i = 0; i < n_beams; i++)
            if (alive[i] && (b < 0 || better(&head[i], &head[b]))) b = i;
        if (b < 0) break;   /* every beam exhausted: fewer than k candidates */
        out[n] = head[b];
        out[n].token = (int32_t)pb_rng_below(r, nv);
        if (++n == k) break;
        if (head[b].rank + 1 >= n_top) {
            alive[b] = false;
            continue;
        }
        lp[b] -= pb_rng_exp(r, 1.0);
        head[b].rank++;
        head[b].logprob = (float)lp[b];
        head[b].score = cum[b] + (double)head[b].logprob;
    }
    return n;
}
