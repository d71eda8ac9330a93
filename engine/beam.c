/* beam.c -- beam-search selection and the synthetic model (see beam.h). */
#include "beam.h"

#include <math.h>
#include <string.h>

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

/* A lower bound of the exponential gap E = fl(-log1p(-u)), u in [0, 1), without a
 * libm call.  v = 1 - u is exact (u is a multiple of 2^-53); v = m * 2^e with m in
 * [1, 2); with m_i = 1 + i/64 (i = the top 6 mantissa bits), log(m) <= log(m_i) +
 * (m - m_i) / m_i (log is concave: the tangent lies above), so
 *     -log(v) >= -(e ln2 + log(m_i) + (m - m_i) / m_i)
 * within (1/64)^2 / 2 = 1.2e-4 nats.  The tables hold log(m_i) and 1/m_i rounded to
 * double; 1e-9 absolute covers every rounding here and in libm's log1p (values are
 * below 40, so a few ulps are ~1e-14). */
static const double LOG_M[64] = {
    0x0.0p+0, 0x1.fc0a8b0fc03e4p-7, 0x1.f829b0e783300p-6, 0x1.77458f632dcfcp-5,
    0x1.f0a30c01162a6p-5, 0x1.341d7961bd1d1p-4, 0x1.6f0d28ae56b4cp-4, 0x1.a926d3a4ad563p-4,
    0x1.e27076e2af2e6p-4, 0x1.0d77e7cd08e59p-3, 0x1.29552f81ff523p-3, 0x1.44d2b6ccb7d1ep-3,
    0x1.5ff3070a793d4p-3, 0x1.7ab890210d909p-3, 0x1.9525a9cf456b4p-3, 0x1.af3c94e80bff3p-3,
    0x1.c8ff7c79a9a22p-3, 0x1.e27076e2af2e6p-3, 0x1.fb9186d5e3e2bp-3, 0x1.0a324e27390e3p-2,
    0x1.1675cababa60ep-2, 0x1.22941fbcf7966p-2, 0x1.2e8e2bae11d31p-2, 0x1.3a64c556945eap-2,
    0x1.4618bc21c5ec2p-2, 0x1.51aad872df82dp-2, 0x1.5d1bdbf5809cap-2, 0x1.686c81e9b14afp-2,
    0x1.739d7f6bbd007p-2, 0x1.7eaf83b82afc3p-2, 0x1.89a3386c1425bp-2, 0x1.947941c2116fbp-2,
    0x1.9f323ecbf984cp-2, 0x1.a9cec9a9a084ap-2, 0x1.b44f77bcc8f63p-2, 0x1.beb4d9da71b7cp-2,
    0x1.c8ff7c79a9a22p-2, 0x1.d32fe7e00ebd5p-2, 0x1.dd46a04c1c4a1p-2, 0x1.e744261d68788p-2,
    0x1.f128f5faf06edp-2, 0x1.faf588f78f31fp-2, 0x1.02552a5a5d0ffp-1, 0x1.0723e5c1cdf40p-1,
    0x1.0be72e4252a83p-1, 0x1.109f39e2d4c97p-1, 0x1.154c3d2f4d5eap-1, 0x1.19ee6b467c96fp-1,
    0x1.1e85f5e7040d0p-1, 0x1.23130d7bebf43p-1, 0x1.2795e1289b11bp-1, 0x1.2c0e9ed448e8cp-1,
    0x1.307d7334f10bep-1, 0x1.34e289d9ce1d3p-1, 0x1.393e0d3562a1ap-1, 0x1.3d9026a7156fbp-1,
    0x1.41d8fe84672aep-1, 0x1.4618bc21c5ec2p-1, 0x1.4a4f85db03ebbp-1, 0x1.4e7d811b75bb1p-1,
    0x1.52a2d265bc5abp-1, 0x1.56bf9d5b3f399p-1, 0x1.5ad404c359f2dp-1, 0x1.5ee02a9241675p-1,
};
static const double INV_M[64] = {
    0x1.0000000000000p+0, 0x1.f81f81f81f820p-1, 0x1.f07c1f07c1f08p-1, 0x1.e9131abf0b767p-1,
    0x1.e1e1e1e1e1e1ep-1, 0x1.dae6076b981dbp-1, 0x1.d41d41d41d41dp-1, 0x1.cd85689039b0bp-1,
    0x1.c71c71c71c71cp-1, 0x1.c0e070381c0e0p-1, 0x1.bacf914c1bad0p-1, 0x1.b4e81b4e81b4fp-1,
    0x1.af286bca1af28p-1, 0x1.a98ef606a63bep-1, 0x1.a41a41a41a41ap-1, 0x1.9ec8e951033d9p-1,
    0x1.999999999999ap-1, 0x1.948b0fcd6e9e0p-1, 0x1.8f9c18f9c18fap-1, 0x1.8acb90f6bf3aap-1,
    0x1.8618618618618p-1, 0x1.8181818181818p-1, 0x1.7d05f417d05f4p-1, 0x1.78a4c8178a4c8p-1,
    0x1.745d1745d1746p-1, 0x1.702e05c0b8170p-1, 0x1.6c16c16c16c17p-1, 0x1.6816816816817p-1,
    0x1.642c8590b2164p-1, 0x1.6058160581606p-1, 0x1.5c9882b931057p-1, 0x1.58ed2308158edp-1,
    0x1.5555555555555p-1, 0x1.51d07eae2f815p-1, 0x1.4e5e0a72f0539p-1, 0x1.4afd6a052bf5bp-1,
    0x1.47ae147ae147bp-1, 0x1.446f86562d9fbp-1, 0x1.4141414141414p-1, 0x1.3e22cbce4a902p-1,
    0x1.3b13b13b13b14p-1, 0x1.3813813813814p-1, 0x1.3521cfb2b78c1p-1, 0x1.323e34a2b10bfp-1,
    0x1.2f684bda12f68p-1, 0x1.2c9fb4d812ca0p-1, 0x1.29e4129e4129ep-1, 0x1.27350b8812735p-1,
    0x1.2492492492492p-1, 0x1.21fb78121fb78p-1, 0x1.1f7047dc11f70p-1, 0x1.1cf06ada2811dp-1,
    0x1.1a7b9611a7b96p-1, 0x1.1811811811812p-1, 0x1.15b1e5f75270dp-1, 0x1.135c81135c811p-1,
    0x1.1111111111111p-1, 0x1.0ecf56be69c90p-1, 0x1.0c9714fbcda3bp-1, 0x1.0a6810a6810a7p-1,
    0x1.0842108421084p-1, 0x1.0624dd2f1a9fcp-1, 0x1.0410410410410p-1, 0x1.0204081020408p-1,
};

static inline double exp_gap_lower(double u) {
    double v = 1.0 - u;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int32_t e = (int32_t)((bits >> 52) & 0x7ff) - 1023;
    uint32_t i = (uint32_t)(bits >> 46) & 63u;
    double dm = (double)(bits & ((UINT64_C(1) << 46) - 1)) * 0x1.0p-52;   /* m - m_i */
    double log_v_hi = (double)e * 0x1.62e42fefa39efp-1 + LOG_M[i] + dm * INV_M[i];
    return -log_v_hi - 1e-9;
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

/* Streaming version: beams in index order, drawing as it goes (any n_beams). */
static int32_t synth_select_stream(beam_xs *s, const double *cum, int32_t n_beams, int32_t n_top,
                                   uint64_t nv, uint64_t rej, int32_t k, pb_beam_choice *out) {
    int32_t n = 0;
    int32_t live = k > 0 ? PB_MIN(k, n_top) : 0;
    for (int32_t i = 0; i < n_beams; i++) {
        double lp = 0;
        int32_t j = 0;
        for (; j < live; j++) {   /* ranks >= live can never be chosen (see beam.h) */
            double u = (double)(beam_u64(s) >> 11) * 0x1.0p-53;
            if (n == k) {   /* full: can this rank still beat the k-th choice? */
                pb_beam_choice ub;
                ub.parent = i;
                ub.rank = j;
                ub.score = cum[i] + (double)(float)(lp - exp_gap_lower(u));
                if (!better(&ub, &out[k - 1])) {
                    (void)beam_below(s, nv, rej);
                    j++;
                    break;
                }
            }
            lp -= -log1p(-u);          /* pb_rng_exp(r, 1.0) = -log1p(-u) / 1.0 */
            pb_beam_choice c;
            c.parent = i;
            c.rank = j;
            c.token = (int32_t)beam_below(s, nv, rej);
            c.logprob = (float)lp;
            c.score = cum[i] + (double)c.logprob;
            if (n == k && !better(&c, &out[k - 1])) {
                j++;
                break;
            }
            klist_insert(out, &n, k, &c);
        }
        for (; j < n_top; j++) {   /* the rest only advance the generator */
            beam_advance(s);                    /* the exponential's uniform */
            (void)beam_below(s, nv, rej);       /* the token                 */
        }
    }
    return n;
}

#define BEAM_BUF 64   /* n_beams * min(k, n_top) up to which draws are buffered */

int32_t pb_beam_synth_select(pb_rng *r, const double *cum, int32_t n_beams, int32_t n_top,
                             int32_t vocab, int32_t k, pb_beam_choice *out) {
    if (n_top > PB_MAX_TOP) n_top = PB_MAX_TOP;
    if (n_top < 1) n_top = 1;
    uint64_t nv = (uint64_t)(vocab > 0 ? vocab : 1);
    uint64_t rej = -nv % nv;
    beam_xs s = {r->s[0], r->s[1], r->s[2], r->s[3]};
    int32_t live = k > 0 ? PB_MIN(k, n_top) : 0;
    int32_t n = 0;
    if (n_beams < 1 || live < 1 || n_beams * live > BEAM_BUF) {
        n = synth_select_stream(&s, cum, n_beams, n_top, nv, rej, k, out);
    } else {
        /* 1. all draws, in the generator's order (beam, rank; uniform then token) */
        double u[BEAM_BUF];
        int32_t tok[BEAM_BUF];
        for (int32_t i = 0; i < n_beams; i++) {
            for (int32_t j = 0; j < live; j++) {
                u[i * live + j] = (double)(beam_u64(&s) >> 11) * 0x1.0p-53;
                tok[i * live + j] = (int32_t)beam_below(&s, nv, rej);
            }
            for (int32_t j = live; j < n_top; j++) {
                beam_advance(&s);
                (void)beam_below(&s, nv, rej);
            }
        }
        /* 2. the selection in a better order: the top-k set and its order are unique
           (better() is a strict total order), so any visiting order gives the same
           result; visiting rank by rank, best beam first, fills the k-list with
           likely winners and lets the bound prune the rest before their log1p. */
        int32_t ord[BEAM_BUF];
        for (int32_t i = 0; i < n_beams; i++) {   /* beams by cum desc, then index */
            int32_t p = i;
            while (p > 0 && cum[ord[p - 1]] < cum[i]) {
                ord[p] = ord[p - 1];
                p--;
            }
            ord[p] = i;
        }
        double lp[BEAM_BUF];
        int32_t n_alive = n_beams;
        for (int32_t i = 0; i < n_beams; i++) lp[i] = 0;
        for (int32_t j = 0; j < live && n_alive > 0; j++) {
            for (int32_t o = 0; o < n_alive;) {
                int32_t i = ord[o];
                double uj = u[i * live + j];
                bool dead = false;
                if (n == k) {
                    pb_beam_choice ub;
                    ub.parent = i;
                    ub.rank = j;
                    ub.score = cum[i] + (double)(float)(lp[i] - exp_gap_lower(uj));
                    dead = !better(&ub, &out[k - 1]);
                }
                if (!dead) {
                    lp[i] -= -log1p(-uj);
                    pb_beam_choice c;
                    c.parent = i;
                    c.rank = j;
                    c.token = tok[i * live + j];
                    c.logprob = (float)lp[i];
                    c.score = cum[i] + (double)c.logprob;
                    if (n == k && !better(&c, &out[k - 1])) dead = true;
                    else klist_insert(out, &n, k, &c);
                }
                if (dead) {   /* later ranks of beam i score no higher: drop it */
                    for (int32_t q = o; q + 1 < n_alive; q++) ord[q] = ord[q + 1];
                    n_alive--;
                } else {
                    o++;
                }
            }
        }
    }
    r->s[0] = s.a;
    r->s[1] = s.b;
    r->s[2] = s.c;
    r->s[3] = s.d;
    return n;
}
