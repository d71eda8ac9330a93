/* beam.c -- beam-search selection and the synthetic model (see beam.h). */
#include "beam.h"

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
