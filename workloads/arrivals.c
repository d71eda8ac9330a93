/* arrivals.c -- arrival processes (see arrivals.h). */
#include "arrivals.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_reader.h"

static const char *const KIND_NAMES[] = {"poisson", "exponential", "burst", "replay"};

pb_status pb_arrival_kind_by_name(const char *name, pb_arrival_kind *out) {
    for (int k = 0; k < (int)PB_ARRAY_LEN(KIND_NAMES); k++)
        if (!strcmp(name, KIND_NAMES[k])) { *out = (pb_arrival_kind)k; return PB_OK; }
    return PB_ERR_INVALID;
}
const char *pb_arrival_kind_name(pb_arrival_kind k) {
    return (unsigned)k < PB_ARRAY_LEN(KIND_NAMES) ? KIND_NAMES[k] : "?";
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
    bool has_dur = c->duration_s > 0, has_num = c->num > 0;
    if (has_num) {   /* room for the count up front (at most 2^26 times), no doubling slack */
        v.cap = PB_MIN(c->num, (int64_t)1 << 26);
        v.t = pb_xmalloc((size_t)v.cap * sizeof *v.t);
    }
    switch (c->kind) {
    case PB_ARRIVALS_POISSON: {
        if (!(c->rate > 0) || !isfinite(c->rate)) BAD("poisson arrivals need a rate > 0 (got %g)", c->rate);
        if (!(c->quantum_s > 0)) BAD("poisson arrivals need a quantum > 0 (got %g)", c->quantum_s);
        if (!has_dur && !has_num) BAD("poisson arrivals need a duration or a request count");
        double lam = c->rate * c->quantum_s;
        int64_t quanta = has_dur ? (int64_t)floor(c->duration_s / c->quantum_s + 1e-9) : INT64_MAX;
        for (int64_t q = 0; q < quanta && (!has_num || v.n < c->num); q++) {
            int64_t k = pb_rng_poisson(rng, lam);
            for (int64_t j = 0; j < k && (!has_num || v.n < c->num); j++) tpush(&v, (double)q * c->quantum_s);
        }
        break;
    }
    case PB_ARRIVALS_EXPONENTIAL: {
        if (!(c->rate > 0) || !isfinite(c->rate)) BAD("exponential arrivals need a rate > 0 (got %g)", c->rate);
        if (!has_dur && !has_num) BAD("exponential arrivals need a duration or a request count");
        double t = 0;
        while ((!has_num || v.n < c->num) && (!has_dur || t < c->duration_s)) {
            tpush(&v, t);
            t += pb_rng_exp(rng, c->rate);
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
