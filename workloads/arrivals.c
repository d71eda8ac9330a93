/* arrivals.c -- arrival processes (see arrivals.h). */
#include "arrivals.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_reader.h"

static const char *const KIND_NAMES[] = {"poisson", "exponential", "burst", "replay", "gamma"};
static const char *const RAMP_NAMES[] = {"none", "linear", "exponential"};

pb_status pb_arrival_kind_by_name(const char *name, pb_arrival_kind *out) {
    for (int k = 0; k < (int)PB_ARRAY_LEN(KIND_NAMES); k++)
        if (!strcmp(name, KIND_NAMES[k])) { *out = (pb_arrival_kind)k; return PB_OK; }
    return PB_ERR_INVALID;
}
const char *pb_arrival_kind_name(pb_arrival_kind k) {
    return (unsigned)k < PB_ARRAY_LEN(KIND_NAMES) ? KIND_NAMES[k] : "?";
}

pb_status pb_ramp_kind_by_name(const char *name, pb_ramp_kind *out) {
    for (int k = 0; k < (int)PB_ARRAY_LEN(RAMP_NAMES); k++)
        if (!strcmp(name, RAMP_NAMES[k])) { *out = (pb_ramp_kind)k; return PB_OK; }
    return PB_ERR_INVALID;
}
const char *pb_ramp_kind_name(pb_ramp_kind k) {
    return (unsigned)k < PB_ARRAY_LEN(RAMP_NAMES) ? RAMP_NAMES[k] : "?";
}

double pb_arrival_rate_at(const pb_arrival_cfg *c, double p) {
    switch (c->ramp) {
    case PB_RAMP_LINEAR: return c->ramp_start + (c->ramp_end - c->ramp_start) * p;
    case PB_RAMP_EXPONENTIAL: return c->ramp_start * pow(c->ramp_end / c->ramp_start, p);
    default: return c->rate;
    }
}

/* Lambda(t): the rate integrated over [0, t] of a ramp over [0, T] (t <= T). */
static double ramp_cum(const pb_arrival_cfg *c, double t, double T) {
    double r0 = c->ramp_start, r1 = c->ramp_end;
    if (c->ramp == PB_RAMP_LINEAR) return r0 * t + (r1 - r0) * t * t / (2 * T);
    if (r1 == r0) return r0 * t;
    double lk = log(r1 / r0);
    return r0 * T / lk * expm1(lk * t / T);
}

/* The inverse: the t in [0, T] with Lambda(t) = s (s <= Lambda(T)). */
static double ramp_inv(const pb_arrival_cfg *c, double s, double T) {
    double r0 = c->ramp_start, r1 = c->ramp_end;
    if (c->ramp == PB_RAMP_LINEAR) {
        double a = (r1 - r0) / (2 * T);
        if (fabs(a) * T < 1e-12 * (r0 > 0 ? r0 : 1)) return s / r0;
        /* a t^2 + r0 t - s = 0: the root in [0, T], in the form without cancellation */
        return 2 * s / (r0 + sqrt(r0 * r0 + 4 * a * s));
    }
    if (r1 == r0) return s / r0;
    double lk = log(r1 / r0);
    return T / lk * log1p(s * lk / (r0 * T));
}

double pb_arrival_expected_count(const pb_arrival_cfg *c) {
    if (c->kind == PB_ARRIVALS_BURST || c->kind == PB_ARRIVALS_REPLAY) return NAN;
    if (c->num > 0) return (double)c->num;
    if (c->ramp == PB_RAMP_NONE) return c->rate * c->duration_s;
    return ramp_cum(c, c->duration_s, c->duration_s);
}

/* Gamma(shape, 1) (Marsaglia and Tsang 2000; shape < 1 by Gamma(shape + 1) U^(1/shape)). */
static double gamma_draw(pb_rng *r, double shape) {
    if (shape < 1) {
        double u = pb_rng_uniform(r);
        return gamma_draw(r, shape + 1) * pow(u > 0 ? u : 0x1.0p-53, 1 / shape);
    }
    double d = shape - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x = pb_rng_normal(r), v = 1 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        double u = pb_rng_uniform(r);
        if (u < 1 - 0.0331 * x * x * x * x) return d * v;
        if (u > 0 && log(u) < 0.5 * x * x + d * (1 - v + log(v))) return d * v;
    }
}

/* A gap of the stationary process of mean 1: exponential or gamma(burstiness) / burstiness. */
static double unit_gap(const pb_arrival_cfg *c, pb_rng *r) {
    if (c->kind == PB_ARRIVALS_GAMMA) return gamma_draw(r, c->burstiness) / c->burstiness;
    return pb_rng_exp(r, 1.0);
}

typedef struct { double *t; int64_t n, cap; } tvec;
static void tpush(tvec *v, double t) {
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 1024;
        v->t = pb_xrealloc(v->t, (size_t)v->cap * sizeof *v->t);
    }
    v->t[v->n++] = t;
}

/* an error: the message, and the times made so far freed */
#define BAD(...) do { if (err) snprintf(err, errlen, __VA_ARGS__); free(v.t); return PB_ERR_INVALID; } while (0)

pb_status pb_arrivals_generate(const pb_arrival_cfg *c, pb_rng *rng, const double *replay_ts,
                               int64_t n_replay, double **times, int64_t *n, char *err, size_t errlen) {
    *times = NULL;
    *n = 0;
    tvec v = {0};
    if (!(c->duration_s >= 0) || c->num < 0) BAD("duration and count must not be negative");
    bool has_dur = c->duration_s > 0, has_num = c->num > 0, ramp = c->ramp != PB_RAMP_NONE;
    if (ramp) {
        if (c->kind == PB_ARRIVALS_BURST || c->kind == PB_ARRIVALS_REPLAY)
            BAD("a ramp needs poisson, exponential or gamma arrivals (not %s)", pb_arrival_kind_name(c->kind));
        if (!(c->ramp_start >= 0 && c->ramp_end >= 0 && isfinite(c->ramp_start) && isfinite(c->ramp_end)) ||
            !(c->ramp_start + c->ramp_end > 0))
            BAD("a ramp needs start and end rates >= 0, not both 0 (got %g, %g)", c->ramp_start, c->ramp_end);
        if (c->ramp == PB_RAMP_EXPONENTIAL && !(c->ramp_start > 0 && c->ramp_end > 0))
            BAD("an exponential ramp needs start and end rates > 0 (got %g, %g)", c->ramp_start, c->ramp_end);
    }
    if (has_num) {   /* room for the count up front (at most 2^26 times), no doubling slack */
        v.cap = PB_MIN(c->num, (int64_t)1 << 26);
        v.t = pb_xmalloc((size_t)v.cap * sizeof *v.t);
    }
    switch (c->kind) {
    case PB_ARRIVALS_POISSON: {
        if (!ramp && (!(c->rate > 0) || !isfinite(c->rate))) BAD("poisson arrivals need a rate > 0 (got %g)", c->rate);
        if (!(c->quantum_s > 0)) BAD("poisson arrivals need a quantum > 0 (got %g)", c->quantum_s);
        if (!has_dur && !has_num) BAD("poisson arrivals need a duration or a request count");
        if (ramp && !has_dur) BAD("a ramp of poisson arrivals needs a duration (its quanta are in time)");
        double lam = c->rate * c->quantum_s;
        int64_t quanta = has_dur ? (int64_t)floor(c->duration_s / c->quantum_s + 1e-9) : INT64_MAX;
        for (int64_t q = 0; q < quanta && (!has_num || v.n < c->num); q++) {
            if (ramp) {
                double T = c->duration_s, hi = PB_MIN((double)(q + 1) * c->quantum_s, T);
                lam = ramp_cum(c, hi, T) - ramp_cum(c, (double)q * c->quantum_s, T);
                if (!(lam >= 0)) lam = 0;
            }
            int64_t k = pb_rng_poisson(rng, lam);
            for (int64_t j = 0; j < k && (!has_num || v.n < c->num); j++) tpush(&v, (double)q * c->quantum_s);
        }
        break;
    }
    case PB_ARRIVALS_EXPONENTIAL:
    case PB_ARRIVALS_GAMMA: {
        const char *kn = pb_arrival_kind_name(c->kind);
        if (c->kind == PB_ARRIVALS_GAMMA && !(c->burstiness > 0 && isfinite(c->burstiness)))
            BAD("gamma arrivals need a burstiness > 0 (got %g)", c->burstiness);
        if (!ramp && (!(c->rate > 0) || !isfinite(c->rate))) BAD("%s arrivals need a rate > 0 (got %g)", kn, c->rate);
        if (!has_dur && !has_num) BAD("%s arrivals need a duration or a request count", kn);
        double t = 0;
        if (ramp && has_dur) {   /* the unit-rate process on Lambda(t) */
            double T = c->duration_s, total = ramp_cum(c, T, T), s = 0;
            while ((!has_num || v.n < c->num) && s < total) {
                double x = ramp_inv(c, s, T);
                if (x >= T) break;
                tpush(&v, x);
                s += unit_gap(c, rng);
            }
        } else {
            while ((!has_num || v.n < c->num) && (!has_dur || t < c->duration_s)) {
                tpush(&v, t);
                if (has_num && v.n >= c->num) break;
                /* the gap before request i = v.n is drawn at the rate of progress i / (num - 1) */
                double r = ramp ? pb_arrival_rate_at(c, (double)v.n / (double)PB_MAX(c->num - 1, 1)) : c->rate;
                if (!(r > 0))
                    BAD("the ramp's rate is %g at request %lld: a linear ramp from or to 0 needs duration_s",
                        r, (long long)v.n);
                t += unit_gap(c, rng) / r;
            }
        }
        break;
    }
    case PB_ARRIVALS_BURST:
        if (!has_num) BAD("burst arrivals need a request count");
        for (int64_t i = 0; i < c->num; i++) tpush(&v, 0.0);
        break;
    case PB_ARRIVALS_REPLAY: {
        if (!replay_ts || n_replay < 1) BAD("replay arrivals need recorded timestamps");
        if (c->rate < 0 || !isfinite(c->rate)) BAD("replay rate must be >= 0 (got %g)", c->rate);
        double t0 = replay_ts[0], span = replay_ts[n_replay - 1] - t0, scale = 1;
        if (c->rate > 0) {
            if (n_replay < 2 || !(span > 0))
                BAD("cannot rescale a replay of %s to a rate (%lld timestamp%s over %g s)",
                    n_replay < 2 ? "one request" : "one instant", (long long)n_replay, n_replay == 1 ? "" : "s", span);
            scale = ((double)(n_replay - 1) / span) / c->rate;
        }
        for (int64_t i = 0; i < n_replay && (!has_num || v.n < c->num); i++) {
            if (i > 0 && replay_ts[i] < replay_ts[i - 1]) BAD("replay timestamps out of order at row %lld", (long long)i);
            double t = (replay_ts[i] - t0) * scale;
            if (has_dur && t >= c->duration_s) break;
            tpush(&v, t);
        }
        break;
    }
    default:
        BAD("unknown arrival process %d", (int)c->kind);
    }
    *times = v.t ? v.t : pb_xmalloc(sizeof(double));
    *n = v.n;
    return PB_OK;
}

/* days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil) */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static bool parse_timestamp(const char *s, double *out) {
    int y, mo, d, h, mi, n = 0;
    double sec;
    if (sscanf(s, "%d-%d-%d %d:%d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6) return false;
    while (s[n] == ' ') n++;
    if (s[n] || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        !(sec >= 0 && sec < 61))
        return false;
    *out = (double)days_from_civil(y, mo, d) * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
    return true;
}

pb_status pb_arrivals_read_azure(const char *path, double **ts, int64_t *n, char *err, size_t errlen) {
    *ts = NULL;
    *n = 0;
    pb_csv c;
    pb_status s = pb_csv_open(&c, path, err, errlen);
    if (s) return s;
    tvec v = {0};
    int col;
    double first = 0;
    if (!pb_csv_next(&c)) { snprintf(err, errlen, "%s:1:1: empty file", path); goto fail; }
    if ((col = pb_csv_find(&c, "TIMESTAMP")) < 0) {
        snprintf(err, errlen, "%s:%d:1: missing column 'TIMESTAMP' in the header", path, c.line);
        goto fail;
    }
    while (pb_csv_next(&c)) {
        double t;
        if (col >= c.n_fields || !parse_timestamp(c.fields[col], &t)) {
            snprintf(err, errlen, "%s:%d:%d: TIMESTAMP: not a 'YYYY-MM-DD hh:mm:ss.f' time", path, c.line,
                     col < c.n_fields ? c.cols[col] : 1);
            goto fail;
        }
        if (v.n == 0) first = t;
        t -= first;
        if (v.n > 0 && t < v.t[v.n - 1]) {
            snprintf(err, errlen, "%s:%d:%d: TIMESTAMP out of order", path, c.line, c.cols[col]);
            goto fail;
        }
        tpush(&v, t);
    }
    if (v.n == 0) { snprintf(err, errlen, "%s:%d:1: no rows after the header", path, c.line); goto fail; }
    pb_csv_close(&c);
    *ts = v.t;
    *n = v.n;
    return PB_OK;
fail:
    pb_csv_close(&c);
    free(v.t);
    return PB_ERR_INVALID;
}
