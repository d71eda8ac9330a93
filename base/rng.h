/* rng.h -- the one seeded random number generator of pagedbench.
 *
 * xoshiro256** (Blackman & Vigna, 2018) seeded through splitmix64.  Everything that
 * draws a number (workloads, synthetic beam scores, weights of the tiny models,
 * sampling, property tests) takes a pb_rng, so the same config and seed give
 * byte-identical output on every machine: no libc rand(), no time-based seeds.
 *
 * Streams: pb_rng_seed(r, seed, stream) gives statistically independent sequences
 * for different `stream` values under one seed (e.g. stream 1 = arrivals,
 * stream 2 = lengths), so adding draws to one consumer never shifts another.
 *
 * pb_rng is a caller-owned value struct; copying it forks the sequence. */
#ifndef PB_RNG_H
#define PB_RNG_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct { uint64_t s[4]; } pb_rng;

void     pb_rng_seed(pb_rng *r, uint64_t seed, uint64_t stream);

/* The core draws are inline: simulators call them per sequence per step. */
static inline uint64_t pb_rng_rotl_(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t pb_rng_u64(pb_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = pb_rng_rotl_(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = pb_rng_rotl_(s[3], 45);
    return result;
}

/* uniform in [0, 1) with 53 random bits */
static inline double pb_rng_uniform(pb_rng *r) { return (double)(pb_rng_u64(r) >> 11) * 0x1.0p-53; }

/* uniform integer in [0, n), unbiased (Lemire's multiply-shift with rejection); n > 0 */
uint64_t pb_rng_below_reject_(pb_rng *r, uint64_t n, uint64_t x);
static inline uint64_t pb_rng_below(pb_rng *r, uint64_t n) {
    uint64_t x = pb_rng_u64(r);
    if ((uint64_t)((__uint128_t)x * n) < n) return pb_rng_below_reject_(r, n, x);
    return (uint64_t)(((__uint128_t)x * n) >> 64);
}
/* The same draw from r, a local copy of *home that the caller keeps in registers
 * (its address goes only to inline code): the rare rejection runs on *home, spilled
 * and reloaded.  Same value, same stream. */
static inline uint64_t pb_rng_below_reg(pb_rng *r, pb_rng *home, uint64_t n) {
    uint64_t x = pb_rng_u64(r);
    if ((uint64_t)((__uint128_t)x * n) >= n) return (uint64_t)(((__uint128_t)x * n) >> 64);
    *home = *r;
    uint64_t v = pb_rng_below_reject_(home, n, x);
    *r = *home;
    return v;
}
/* standard normal (Box-Muller, no cached second value: one call = two uniforms) */
double   pb_rng_normal(pb_rng *r);
/* exponential with the given rate (mean 1/rate); rate > 0 */
double   pb_rng_exp(pb_rng *r, double rate);
/* standard exponential (rate 1) by the ziggurat method: the law of pb_rng_exp(r, 1)
 * from another stream, one u64 and no logarithm in 98.9% of draws (rng.c).  The
 * accepted case is inline; the table is built by the first pb_rng_seed (or by the
 * first slow case, for a generator that was never seeded). */
typedef struct { uint64_t k[256]; double w[256], f[256]; } pb_rng_zig_table;
extern pb_rng_zig_table pb_rng_zig_;
double pb_rng_exp_zig_slow_(pb_rng *r, uint64_t u);
static inline bool pb_rng_exp_zig_fast_(uint64_t u, double *x) {   /* the accepted case */
    uint64_t j = u >> 11;
    int i = (int)(u & 255);
    *x = (double)j * pb_rng_zig_.w[i];
    return j < pb_rng_zig_.k[i];
}
static inline double pb_rng_exp_zig(pb_rng *r) {
    uint64_t u = pb_rng_u64(r);
    double x;
    return pb_rng_exp_zig_fast_(u, &x) ? x : pb_rng_exp_zig_slow_(r, u);
}
/* One u64, two draws (the simulator's beam search, engine/beam.c): a standard
 * exponential and 32 spare uniform bits for pb_rng_below32_reg.  The exponential is
 * the ziggurat's with j cut to its top 24 bits (u's bits 40..63; layer from bits
 * 0..7): an accepted x is a multiple of 2^-24 of its layer's width (the law of Exp(1)
 * to 6e-8, finer than a float), the slow case as pb_rng_exp_zig's.  The spare bits
 * are u's bits 8..39, which the exponential never reads: independent of it.  r, home
 * as in pb_rng_below_reg. */
static inline double pb_rng_exp_zig24_reg(pb_rng *r, pb_rng *home, uint32_t *spare) {
    uint64_t u = pb_rng_u64(r);
    *spare = (uint32_t)(u >> 8);
    u &= ~(uint64_t)0xFFFFFFFF00u;   /* j = u >> 11: its top 24 bits */
    double x;
    if (pb_rng_exp_zig_fast_(u, &x)) return x;
    *home = *r;
    x = pb_rng_exp_zig_slow_(home, u);
    *r = *home;
    return x;
}
/* uniform integer in [0, n) from 32 uniform bits x (Lemire's multiply-shift on 32
 * bits, unbiased: the rare rejection, probability < n / 2^32, draws afresh from r);
 * 0 < n < 2^32.  r, home as in pb_rng_below_reg. */
uint32_t pb_rng_below32_reject_(pb_rng *r, uint32_t n, uint64_t m);
static inline uint32_t pb_rng_below32_reg(pb_rng *r, pb_rng *home, uint32_t n, uint32_t x) {
    uint64_t m = (uint64_t)x * n;
    if ((uint32_t)m >= n) return (uint32_t)(m >> 32);
    *home = *r;
    uint32_t v = pb_rng_below32_reject_(home, n, m);
    *r = *home;
    return v;
}
/* Poisson count with mean lambda >= 0 (Knuth for lambda < 30, PTRS above) */
int64_t  pb_rng_poisson(pb_rng *r, double lambda);
/* Gumbel(0,1), for sampling with the Gumbel-max trick */
double   pb_rng_gumbel(pb_rng *r);

#ifdef __cplusplus
}
#endif
#endif /* PB_RNG_H */
