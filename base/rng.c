/* rng.c -- xoshiro256** with splitmix64 seeding; derived distributions. */
#include "rng.h"

#include <math.h>
#include <pthread.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* pb_rng_below's rare branch: the low product of draw x is < n; reject while it is
   below 2^64 mod n (Lemire 2019). */
uint64_t pb_rng_below_reject_(pb_rng *r, uint64_t n, uint64_t x) {
    __uint128_t m = (__uint128_t)x * n;
    uint64_t l = (uint64_t)m, t = -n % n;
    while (l < t) { x = pb_rng_u64(r); m = (__uint128_t)x * n; l = (uint64_t)m; }
    return (uint64_t)(m >> 64);
}

uint32_t pb_rng_below32_reject_(pb_rng *r, uint32_t n, uint64_t m) {
    uint32_t t = -n % n;
    while ((uint32_t)m < t) m = (pb_rng_u64(r) >> 32) * n;
    return (uint32_t)(m >> 32);
}

double pb_rng_normal(pb_rng *r) {
    double u1 = 1.0 - pb_rng_uniform(r); /* (0, 1] */
    double u2 = pb_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

double pb_rng_exp(pb_rng *r, double rate) { return -log1p(-pb_rng_uniform(r)) / rate; }

/* ---- standard exponential by the ziggurat (Marsaglia & Tsang, "The ziggurat method
 * for generating random variables", J. Stat. Softw. 5(8), 2000: 256 layers of equal
 * area V under exp(-x), the base layer ending at R with its tail).  One draw: a u64
 * whose low 8 bits pick layer i and whose top 53 bits give x = j * W[i]; x < the next
 * layer's edge (j < K[i], 98.9% of draws) is accepted as is.  Otherwise the layer's
 * wedge is tested against exp(-x), and the base layer's tail (x > R) is R + Exp(1)
 * by memorylessness. ---- */
enum { ZIG_LAYERS = 256 };
static const double ZIG_R = 7.697117470131487, ZIG_V = 3.949659822581572e-3;
pb_rng_zig_table pb_rng_zig_;   /* all zero (every draw slow) until built */
static pthread_once_t zig_once = PTHREAD_ONCE_INIT;

static void zig_build(void) {   /* Marsaglia & Tsang's zigset, with 53-bit j */
    pb_rng_zig_table *z = &pb_rng_zig_;
    const double m = 0x1.0p53;
    double de = ZIG_R, te = ZIG_R, q = ZIG_V / exp(-ZIG_R);
    z->k[0] = (uint64_t)((de / q) * m);
    z->k[1] = 0;
    z->w[0] = q / m;
    z->w[ZIG_LAYERS - 1] = de / m;
    z->f[0] = 1.0;
    z->f[ZIG_LAYERS - 1] = exp(-de);
    for (int i = ZIG_LAYERS - 2; i >= 1; i--) {
        de = -log(ZIG_V / de + exp(-de));
        z->k[i + 1] = (uint64_t)((de / te) * m);
        te = de;
        z->f[i] = exp(-de);
        z->w[i] = de / m;
    }
}

/* The draw u was not accepted by the inline test (or the table was not built yet). */
double pb_rng_exp_zig_slow_(pb_rng *r, uint64_t u) {
    pthread_once(&zig_once, zig_build);
    const pb_rng_zig_table *z = &pb_rng_zig_;
    for (;; u = pb_rng_u64(r)) {
        int i = (int)(u & (ZIG_LAYERS - 1));
        uint64_t j = u >> 11;
        double x = (double)j * z->w[i];
        if (j < z->k[i]) return x;
        if (i == 0) return ZIG_R - log1p(-pb_rng_uniform(r));
        if (z->f[i] + pb_rng_uniform(r) * (z->f[i - 1] - z->f[i]) < exp(-x)) return x;
    }
}

void pb_rng_seed(pb_rng *r, uint64_t seed, uint64_t stream) {
    pthread_once(&zig_once, zig_build);   /* pb_rng_exp_zig's table */
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

double pb_rng_gumbel(pb_rng *r) {
    double u = pb_rng_uniform(r);
    if (u <= 0.0) u = 0x1.0p-53;
    return -log(-log(u));
}

int64_t pb_rng_poisson(pb_rng *r, double lambda) {
    if (lambda <= 0.0) return 0;
    if (lambda < 30.0) {                        /* Knuth: multiply uniforms */
        double L = exp(-lambda), p = 1.0;
        int64_t k = 0;
        do { k++; p *= pb_rng_uniform(r); } while (p > L);
        return k - 1;
    }
    /* PTRS: Hoermann, "The transformed rejection method for generating Poisson
     * random variables", 1993. */
    double slam = sqrt(lambda), loglam = log(lambda);
    double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
        double U = pb_rng_uniform(r) - 0.5, V = pb_rng_uniform(r);
        double us = 0.5 - fabs(U);
        int64_t k = (int64_t)floor((2 * a / us + b) * U + lambda + 0.43);
        if (us >= 0.07 && V <= vr) return k;
        if (k < 0 || (us < 0.013 && V > us)) continue;
        if (log(V) + log(invalpha) - log(a / (us * us) + b) <=
            -lambda + (double)k * loglam - lgamma((double)k + 1))
            return k;
    }
}
