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

/* xoshiro256** and Lemire's bounded draw, exactly as rng.c (pb_rng_u64 /
 * pb_rng_below), inlined on a register copy of the state because the fused loop
 * draws two numbers per candidate; test_engine checks the fused path against
 * synth + select, rng state included. */
typedef struct { uint64_t a, b, c, d; } beam_xs;

static inline uint64_t beam_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline void beam_advance(beam_xs *s) {
    uint64_t t = s->b << 17;
    s->c ^= s->a; s->d ^= s->b; s->b ^= s->c; s->a ^= s->d;
    s->c ^= t;
    s->d = beam_rotl(s->d, 45);
}

static inline uint64_t beam_u64(beam_xs *s) {
    uint64_t result = beam_rotl(s->b * 5, 7) * 9;
    beam_advance(s);
    return result;
}

/* pb_rng_below(r, n); t = (2^64 - n) % n, precomputed */
static inline uint64_t beam_below(beam_xs *s, uint64_t n, uint64_t t) {
    uint64_t x = beam_u64(s);
    __uint128_t m = (__uint128_t)x * n;
    uint64_t l = (uint64_t)m;
    if (l < n) {
        while (l < t) { x = beam_u64(s); m = (__uint128_t)x * n; l = (uint64_t)m; }
    }
    return (uint64_t)(m >> 64);
}

/* A lower bound of the exponential gap E = fl(-log1p(-u)) for u in [0, 1), without a
 * libm call: the series -log(1 - u) = u + u^2/2 + u^3/3 + ... has positive terms, so
 * its first three are below the true value; the factor (1 - 2^-30) covers the
 * rounding of this sum and of libm's log1p (both within a few ulps). */
static inline double exp_gap_lower(double u) {
    return (u + u * u * (0.5 + u * (1.0 / 3.0))) * (1.0 - 0x1.0p-30);
}

static inline void klist_insert(pb_beam_choice *out, int32_t *n, int32_t k, const pb_beam_choice *c) {
    int32_t pos = *n < k ? *n : k - 1;
    while (pos > 0 && better(c, &out[pos - 1])) {
        out[pos] = out[pos - 1];
        pos--;
    }
    out[pos] = *c;
    if (*n < k) (*n)++;
}

int32_t pb_beam_synth_select(pb_rng *r, const double *cum, int32_t n_beams, int32_t n_top,
                             int32_t vocab, int32_t k, pb_beam_choice *out) {
    if (n_top > PB_MAX_TOP) n_top = PB_MAX_TOP;
    if (n_top < 1) n_top = 1;
    uint64_t nv = (uint64_t)(vocab > 0 ? vocab : 1);
    uint64_t rej = -nv % nv;   /* pb_rng_below's rejection threshold */
    beam_xs s = {r->s[0], r->s[1], r->s[2], r->s[3]};
    int32_t n = 0;
    int32_t live = k > 0 ? PB_MIN(k, n_top) : 0;
    for (int32_t i = 0; i < n_beams; i++) {
        double lp = 0;
        int32_t j = 0;
        for (; j < live; j++) {   /* ranks >= live can never be chosen (see beam.h) */
            double u = (double)(beam_u64(&s) >> 11) * 0x1.0p-53;
            if (n == k) {   /* full: can this rank still beat the k-th choice? */
                pb_beam_choice ub;
                ub.parent = i;
                ub.rank = j;
                ub.score = cum[i] + (double)(float)(lp - exp_gap_lower(u));
                if (!better(&ub, &out[k - 1])) {   /* no, nor any later rank */
                    (void)beam_below(&s, nv, rej);
                    j++;
                    break;
                }
            }
            lp -= -log1p(-u);          /* pb_rng_exp(r, 1.0) = -log1p(-u) / 1.0 */
            pb_beam_choice c;
            c.parent = i;
            c.rank = j;
            c.token = (int32_t)beam_below(&s, nv, rej);
            c.logprob = (float)lp;
            c.score = cum[i] + (double)c.logprob;
            if (n == k && !better(&c, &out[k - 1])) {
                j++;
                break;
            }
            klist_insert(out, &n, k, &c);
        }
        for (; j < n_top; j++) {   /* the rest only advance the generator */
            beam_advance(&s);                    /* the exponential's uniform */
            (void)beam_below(&s, nv, rej);       /* the token                 */
        }
    }
    r->s[0] = s.a;
    r->s[1] = s.b;
    r->s[2] = s.c;
    r->s[3] = s.d;
    return n;
}
