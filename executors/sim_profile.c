/* sim_profile.c -- measured step-latency profiles (format in sim_profile.h). */
#include "sim_profile.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"   /* pb_parse_num */

struct pb_sim_profile {
    /* decode grid: nb batches x nc contexts, lat[i * nc + j] seconds */
    int nb, nc;
    double *batch, *ctx, *lat;
    /* prefill: np points sorted by tokens */
    int np;
    double *ptok, *plat;
};

typedef struct { double batch, tokens, context, lat_s; int line; } prow;

static pb_status perr(char *err, size_t n, const char *name, int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (err && n) {
        if (line > 0) snprintf(err, n, "%s:%d: %s", name, line, msg);
        else snprintf(err, n, "%s: %s", name, msg);
    }
    return PB_ERR_INVALID;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* sorted unique values of v[0..n) into out; returns count */
static int uniq(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || v[i] != v[k - 1]) v[k++] = v[i];
    return k;
}

static int find(const double *v, int n, double x) {
    for (int i = 0; i < n; i++)
        if (v[i] == x) return i;
    return -1;
}

/* split a line on ',' into at most 8 trimmed fields */
static int split(char *s, char **f, int max) {
    int n = 0;
    char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (n < max) f[n] = p;
        n++;
        char *c = strchr(p, ',');
        char *end = c ? c : p + strlen(p);
        char *t = end;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r')) t--;
        *t = '\0';
        if (!c) break;
        p = c + 1;
    }
    return n;
}

pb_status pb_sim_profile_parse(const char *name, const char *text, pb_sim_profile **out, char *err,
                               size_t errlen) {
    *out = NULL;
    char *buf = pb_xstrdup(text);
    prow *dec = NULL, *pre = NULL;
    int ndec = 0, npre = 0, cap_dec = 0, cap_pre = 0;
    pb_status st = PB_OK;
    bool header = false;
    int line = 0;
    char *save = NULL;
    for (char *ln = buf; ln; ln = save) {
        line++;
        char *nl = strchr(ln, '\n');
        save = nl ? nl + 1 : NULL;
        if (nl) *nl = '\0';
        char *p = ln;
        while (*p == ' ' || *p == '\t' || *p == '\r') p++;
        if (*p == '\0' || *p == '#') continue;
        char *f[8];
        int nf = split(p, f, 8);
        if (!header) {
            static const char *const H[] = {"phase", "batch", "tokens", "context", "latency_us"};
            if (nf != 5) { st = perr(err, errlen, name, line, "header must be phase,batch,tokens,context,latency_us"); goto done; }
            for (int i = 0; i < 5; i++)
                if (strcmp(f[i], H[i])) {
                    st = perr(err, errlen, name, line, "header field %d is '%s', expected '%s'", i + 1, f[i], H[i]);
                    goto done;
                }
            header = true;
            continue;
        }
        if (nf != 5) { st = perr(err, errlen, name, line, "expected 5 fields, got %d", nf); goto done; }
        prow r = {.line = line};
        double *dst[4] = {&r.batch, &r.tokens, &r.context, &r.lat_s};
        static const char *const NM[4] = {"batch", "tokens", "context", "latency_us"};
        for (int i = 0; i < 4; i++)
            if (!pb_parse_num(f[i + 1], dst[i]) || !isfinite(*dst[i]) || *dst[i] < 0) {
                st = perr(err, errlen, name, line, "%s: '%s' is not a non-negative number", NM[i], f[i + 1]);
                goto done;
            }
        if (r.lat_s <= 0) { st = perr(err, errlen, name, line, "latency_us must be > 0"); goto done; }
        r.lat_s *= 1e-6;
        if (!strcmp(f[0], "decode")) {
            if (r.batch < 1) { st = perr(err, errlen, name, line, "decode batch must be >= 1"); goto done; }
            if (ndec == cap_dec) { cap_dec = cap_dec ? 2 * cap_dec : 16; dec = pb_xrealloc(dec, (size_t)cap_dec * sizeof *dec); }
            dec[ndec++] = r;
        } else if (!strcmp(f[0], "prefill")) {
            if (r.tokens < 1) { st = perr(err, errlen, name, line, "prefill tokens must be >= 1"); goto done; }
            if (npre == cap_pre) { cap_pre = cap_pre ? 2 * cap_pre : 16; pre = pb_xrealloc(pre, (size_t)cap_pre * sizeof *pre); }
            pre[npre++] = r;
        } else {
            st = perr(err, errlen, name, line, "phase '%s' is not decode or prefill", f[0]);
            goto done;
        }
    }
    if (!header) { st = perr(err, errlen, name, 0, "empty profile (no header row)"); goto done; }
    if (ndec < 1) { st = perr(err, errlen, name, 0, "no decode rows"); goto done; }

    pb_sim_profile *P = pb_xcalloc(1, sizeof *P);
    /* decode grid */
    P->batch = pb_xmalloc((size_t)ndec * sizeof(double));
    P->ctx = pb_xmalloc((size_t)ndec * sizeof(double));
    for (int i = 0; i < ndec; i++) { P->batch[i] = dec[i].batch; P->ctx[i] = dec[i].context; }
    P->nb = uniq(P->batch, ndec);
    P->nc = uniq(P->ctx, ndec);
    P->lat = pb_xmalloc((size_t)P->nb * (size_t)P->nc * sizeof(double));
    for (int i = 0; i < P->nb * P->nc; i++) P->lat[i] = -1;
    for (int i = 0; i < ndec; i++) {
        int bi = find(P->batch, P->nb, dec[i].batch), ci = find(P->ctx, P->nc, dec[i].context);
        double *cell = &P->lat[bi * P->nc + ci];
        if (*cell >= 0) {
            st = perr(err, errlen, name, dec[i].line, "duplicate decode row (batch %g, context %g)",
                      dec[i].batch, dec[i].context);
            pb_sim_profile_destroy(P);
            goto done;
        }
        *cell = dec[i].lat_s;
    }
    for (int i = 0; i < P->nb * P->nc; i++)
        if (P->lat[i] < 0) {
            st = perr(err, errlen, name, 0, "decode rows do not form a full grid: (batch %g, context %g) missing",
                      P->batch[i / P->nc], P->ctx[i % P->nc]);
            pb_sim_profile_destroy(P);
            goto done;
        }
    /* prefill: sort by tokens, average equal token counts */
    P->ptok = pb_xmalloc((size_t)(npre ? npre : 1) * sizeof(double));
    P->plat = pb_xmalloc((size_t)(npre ? npre : 1) * sizeof(double));
    for (int i = 0; i < npre; i++) P->ptok[i] = pre[i].tokens;
    P->np = uniq(P->ptok, npre);
    for (int k = 0; k < P->np; k++) {
        double sum = 0;
        int cnt = 0;
        for (int i = 0; i < npre; i++)
            if (pre[i].tokens == P->ptok[k]) { sum += pre[i].lat_s; cnt++; }
        P->plat[k] = sum / cnt;
    }
    if (P->np < 2) {
        st = perr(err, errlen, name, 0, "need prefill rows at >= 2 distinct token counts (have %d)", P->np);
        pb_sim_profile_destroy(P);
        goto done;
    }
    *out = P;
done:
    free(dec);
    free(pre);
    free(buf);
    return st;
}

pb_status pb_sim_profile_load(const char *path, pb_sim_profile **out, char *err, size_t errlen) {
    *out = NULL;
    char *buf;
    size_t n;
    pb_status st = pb_input_read(path, false, &buf, &n, err, errlen);   /* a regular file, bounded */
    if (st) return st;
    st = pb_sim_profile_parse(path, buf, out, err, errlen);
    free(buf);
    return st;
}

void pb_sim_profile_destroy(pb_sim_profile *p) {
    if (!p) return;
    free(p->batch);
    free(p->ctx);
    free(p->lat);
    free(p->ptok);
    free(p->plat);
    free(p);
}

/* index i with v[i] <= x < v[i+1], clamped to [0, n-2] (linear extrapolation) */
static int seg(const double *v, int n, double x) {
    int i = 0;
    while (i + 2 < n && x >= v[i + 1]) i++;
    return i;
}

static double interp1(const double *x, const double *y, int n, double q) {
    if (n == 1 || q <= x[0]) return y[0];   /* below the grid: the smallest measurement */
    int i = seg(x, n, q);
    double t = (q - x[i]) / (x[i + 1] - x[i]);
    return y[i] + t * (y[i + 1] - y[i]);
}

static double decode_lat(const pb_sim_profile *p, double b, double c) {
    /* interpolate along context for each batch row that matters, then along batch */
    int nb = p->nb, nc = p->nc;
    if (nb == 1) return interp1(p->ctx, p->lat, nc, c);
    if (b <= p->batch[0]) return interp1(p->ctx, p->lat, nc, c);
    int i = seg(p->batch, nb, b);
    double y0 = interp1(p->ctx, p->lat + (size_t)i * nc, nc, c);
    double y1 = interp1(p->ctx, p->lat + (size_t)(i + 1) * nc, nc, c);
    double t = (b - p->batch[i]) / (p->batch[i + 1] - p->batch[i]);
    return y0 + t * (y1 - y0);
}

double pb_sim_profile_latency(const pb_sim_profile *p, double prefill_tokens, double n_decode,
                              double mean_ctx) {
    if (prefill_tokens <= 0 && n_decode <= 0) return 0;
    double t;
    if (prefill_tokens <= 0) t = decode_lat(p, n_decode, mean_ctx);
    else {
        t = interp1(p->ptok, p->plat, p->np, prefill_tokens + n_decode);
        if (n_decode > 0) t += decode_lat(p, n_decode, mean_ctx) - decode_lat(p, n_decode, p->ctx[0]);
    }
    return t > 0 ? t : 0;
}

pb_status pb_sim_profile_check(const pb_sim_profile *p) {
    if (!p || p->nb < 1 || p->nc < 1 || p->np < 2) return PB_ERR_INVALID;
    for (int i = 1; i < p->nb; i++)
        if (!(p->batch[i] > p->batch[i - 1])) return PB_ERR_INVALID;
    for (int i = 1; i < p->nc; i++)
        if (!(p->ctx[i] > p->ctx[i - 1])) return PB_ERR_INVALID;
    for (int i = 1; i < p->np; i++)
        if (!(p->ptok[i] > p->ptok[i - 1])) return PB_ERR_INVALID;
    for (int i = 0; i < p->nb * p->nc; i++)
        if (!(p->lat[i] > 0)) return PB_ERR_INVALID;
    for (int i = 0; i < p->np; i++)
        if (!(p->plat[i] > 0)) return PB_ERR_INVALID;
    return PB_OK;
}
