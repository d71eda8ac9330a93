/* dataset.c -- exact and built-in length distributions, filters, drawing (dataset.h). */
#include "dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "csv_reader.h"
#include "dist_tables.h"

/* ---- filters ---- */
pb_status pb_filter_by_name(const char *name, pb_length_filter *out) {
    pb_length_filter f = {"none", 0, 0, INT32_MAX, INT64_MAX};
    if (!strcmp(name, "none")) {
    } else if (!strcmp(name, "paper")) {
        f.name = "paper";
        f.max_total = 2047;                 /* input + output < 2048 */
    } else if (!strcmp(name, "fig11")) {
        f.name = "fig11";
        f.max_total = 2048;
    } else if (!strcmp(name, "vllm")) {
        f.name = "vllm";
        f.min_in = 4;
        f.min_out = 4;
        f.max_in = 1024;
        f.max_total = 2048;
    } else {
        return PB_ERR_INVALID;
    }
    *out = f;
    return PB_OK;
}

/* ---- the dataset ---- */
/* One side (input or output) of a built-in table: distinct values with cumulative
 * counts and value sums, and for each bin the index range of its values. */
typedef struct {
    int nv;                 /* distinct values                                       */
    const int32_t *marg;    /* (value, count) pairs                                  */
    int64_t *cum;           /* cum[i] = sum of counts of values 0..i-1 (nv + 1)      */
    double *vsum;           /* vsum[i] = sum of value*count of values 0..i-1 (nv + 1) */
    int nb;                 /* bins                                                  */
    const int32_t *edges;   /* nb + 1 edges                                          */
    int *vstart;            /* values of bin b are [vstart[b], vstart[b+1])          */
} side;

struct pb_dataset {
    char *name;
    bool exact;
    int32_t *in, *out;      /* exact rows                                            */
    int64_t n;
    const pb_dist_table *tab;
    side si, so;
};

static inline int32_t val(const side *s, int i) { return s->marg[2 * i]; }
static inline int64_t cnt(const side *s, int i) { return s->marg[2 * i + 1]; }

static void side_init(side *s, const int32_t *marg, int nv, const int32_t *edges, int n_edges) {
    s->nv = nv;
    s->marg = marg;
    s->cum = pb_xcalloc((size_t)nv + 1, sizeof *s->cum);
    s->vsum = pb_xcalloc((size_t)nv + 1, sizeof *s->vsum);
    for (int i = 0; i < nv; i++) {
        s->cum[i + 1] = s->cum[i] + cnt(s, i);
        s->vsum[i + 1] = s->vsum[i] + (double)val(s, i) * (double)cnt(s, i);
    }
    s->nb = n_edges - 1;
    s->edges = edges;
    s->vstart = pb_xcalloc((size_t)s->nb + 1, sizeof *s->vstart);
    int i = 0;
    for (int b = 0; b <= s->nb; b++) {
        while (i < nv && val(s, i) < edges[b]) i++;
        s->vstart[b] = i;
    }
}
static void side_free(side *s) {
    free(s->cum);
    free(s->vsum);
    free(s->vstart);
}

/* First index in [i0, i1) whose value is >= v (i1 if none). */
static int lower_idx(const side *s, int i0, int i1, int64_t v) {
    while (i0 < i1) {
        int m = i0 + (i1 - i0) / 2;
        if (val(s, m) < v) i0 = m + 1; else i1 = m;
    }
    return i0;
}
/* Values of bin b within [lo, hi]: index range [*a, *z). */
static void bin_range(const side *s, int b, int64_t lo, int64_t hi, int *a, int *z) {
    int i0 = s->vstart[b], i1 = s->vstart[b + 1];
    if (lo > hi) { *a = *z = i0; return; }
    *a = lower_idx(s, i0, i1, lo);
    *z = hi >= INT32_MAX ? i1 : lower_idx(s, *a, i1, hi + 1);
}
/* Index i in [a, z) with cum[i] - cum[a] <= r < cum[i+1] - cum[a]; r < cum[z] - cum[a]. */
static int pick_idx(const side *s, int a, int z, int64_t r) {
    int64_t target = s->cum[a] + r;
    int lo = a, hi = z - 1;
    while (lo < hi) {
        int m = lo + (hi - lo + 1) / 2;
        if (s->cum[m] <= target) lo = m; else hi = m - 1;
    }
    return lo;
}

static const char *builtin_names_str;
const char *pb_dataset_builtin_names(void) {
    static char buf[256];
    if (!builtin_names_str) {
        size_t used = 0;
        for (int i = 0; i < pb_n_dist_tables; i++)
            used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? ", " : "", pb_dist_tables[i].name);
        builtin_names_str = buf;
    }
    return builtin_names_str;
}

pb_status pb_dataset_builtin(const char *table, pb_dataset **out) {
    *out = NULL;
    for (int i = 0; i < pb_n_dist_tables; i++) {
        const pb_dist_table *t = &pb_dist_tables[i];
        if (strcmp(t->name, table)) continue;
        pb_dataset *d = pb_xcalloc(1, sizeof *d);
        d->name = pb_xstrdup(t->name);
        d->tab = t;
        side_init(&d->si, t->in_marg, t->n_in_marg, t->in_edges, t->n_in_edges);
        side_init(&d->so, t->out_marg, t->n_out_marg, t->out_edges, t->n_out_edges);
        *out = d;
        return PB_OK;
    }
    return PB_ERR_INVALID;
}

pb_dataset *pb_dataset_from_arrays(const char *name, const int32_t *in, const int32_t *out, int64_t n) {
    pb_dataset *d = pb_xcalloc(1, sizeof *d);
    d->name = pb_xstrdup(name);
    d->exact = true;
    d->n = n;
    d->in = pb_xmalloc((size_t)(n ? n : 1) * sizeof *d->in);
    d->out = pb_xmalloc((size_t)(n ? n : 1) * sizeof *d->out);
    if (n) {
        memcpy(d->in, in, (size_t)n * sizeof *in);
        memcpy(d->out, out, (size_t)n * sizeof *out);
    }
    return d;
}

pb_status pb_dataset_load_csv(const char *path, const char *in_col, const char *out_col,
                              pb_dataset **out, char *err, size_t errlen) {
    *out = NULL;
    pb_csv c;
    pb_status s = pb_csv_open(&c, path, err, errlen);
    if (s) return s;
    int64_t n = 0, cap = 0;
    int32_t *in = NULL, *ou = NULL;
    int ci, co, nf;
    if (!pb_csv_next(&c)) { snprintf(err, errlen, "%s:1:1: empty file", path); goto fail; }
    ci = pb_csv_find(&c, in_col);
    co = pb_csv_find(&c, out_col);
    nf = c.n_fields;
    if (ci < 0 || co < 0) {
        snprintf(err, errlen, "%s:%d:1: missing column '%s' in the header", path, c.line, ci < 0 ? in_col : out_col);
        goto fail;
    }
    while (pb_csv_next(&c)) {
        int64_t a, b;
        if (c.n_fields != nf) {
            snprintf(err, errlen, "%s:%d:1: %d fields, the header has %d", path, c.line, c.n_fields, nf);
            goto fail;
        }
        if (!pb_parse_int(c.fields[ci], &a) || !pb_parse_int(c.fields[co], &b)) {
            snprintf(err, errlen, "%s:%d:%d: %s: not an integer", path, c.line,
                     pb_parse_int(c.fields[ci], &a) ? c.cols[co] : c.cols[ci], pb_parse_int(c.fields[ci], &a) ? out_col : in_col);
            goto fail;
        }
        if (a < 1 || b < 1 || a > INT32_MAX || b > INT32_MAX) {
            snprintf(err, errlen, "%s:%d:%d: lengths must be in [1, %d] (got %lld, %lld)", path, c.line,
                     c.cols[ci], INT32_MAX, (long long)a, (long long)b);
            goto fail;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            in = pb_xrealloc(in, (size_t)cap * sizeof *in);
            ou = pb_xrealloc(ou, (size_t)cap * sizeof *ou);
        }
        in[n] = (int32_t)a;
        ou[n] = (int32_t)b;
        n++;
    }
    if (n == 0) { snprintf(err, errlen, "%s:%d:1: no rows after the header", path, c.line); goto fail; }
    pb_csv_close(&c);
    pb_dataset *d = pb_xcalloc(1, sizeof *d);
    d->name = pb_xstrdup(path);
    d->exact = true;
    d->in = in;
    d->out = ou;
    d->n = n;
    *out = d;
    return PB_OK;
fail:
    pb_csv_close(&c);
    free(in);
    free(ou);
    return PB_ERR_INVALID;
}

void pb_dataset_destroy(pb_dataset *d) {
    if (!d) return;
    if (d->tab) {
        side_free(&d->si);
        side_free(&d->so);
    }
    free(d->in);
    free(d->out);
    free(d->name);
    free(d);
}

const char *pb_dataset_name(const pb_dataset *d) { return d->name; }
bool pb_dataset_is_exact(const pb_dataset *d) { return d->exact; }
int64_t pb_dataset_rows(const pb_dataset *d, const int32_t **in, const int32_t **out) {
    if (in) *in = d->exact ? d->in : NULL;
    if (out) *out = d->exact ? d->out : NULL;
    return d->exact ? d->n : 0;
}

/* ---- the built-in model under a filter ---- */
/* Per cell: what passes f, as a fraction of the cell (0..1), and the partial sums of
 * the passing mass for means.  A cell is "full" when everything in it passes. */
typedef struct {
    double pass;            /* fraction of the cell that passes                      */
    double in_mean, out_mean; /* means of the passing part                           */
    bool full;
} cell_eval;

static int64_t out_hi(const pb_length_filter *f, int32_t vin) {
    int64_t h = f->max_total - vin;
    return h;
}

static cell_eval eval_cell(const pb_dataset *d, const pb_length_filter *f, int a, int b) {
    const side *si = &d->si, *so = &d->so;
    cell_eval e = {0};
    int ia = si->vstart[a], iz = si->vstart[a + 1], oa = so->vstart[b], oz = so->vstart[b + 1];
    double ta = (double)(si->cum[iz] - si->cum[ia]), tb = (double)(so->cum[oz] - so->cum[oa]);
    if (ia == iz || oa == oz) return e;
    int32_t in_lo = val(si, ia), in_hi = val(si, iz - 1), o_lo = val(so, oa), o_hi = val(so, oz - 1);
    if (in_lo >= f->min_in && in_hi <= f->max_in && o_lo >= f->min_out &&
        (int64_t)in_hi + o_hi <= f->max_total) {
        e.full = true;
        e.pass = 1.0;
        e.in_mean = (si->vsum[iz] - si->vsum[ia]) / ta;
        e.out_mean = (so->vsum[oz] - so->vsum[oa]) / tb;
        return e;
    }
    double w = 0, sin = 0, sout = 0;
    for (int k = lower_idx(si, ia, iz, f->min_in); k < iz && val(si, k) <= f->max_in; k++) {
        int x, y;
        bin_range(so, b, f->min_out, out_hi(f, val(si, k)), &x, &y);
        if (x >= y) continue;
        double m = (double)cnt(si, k) * (double)(so->cum[y] - so->cum[x]);
        w += m;
        sin += m * val(si, k);
        sout += (double)cnt(si, k) * (so->vsum[y] - so->vsum[x]);
    }
    e.pass = w / (ta * tb);
    if (w > 0) {
        e.in_mean = sin / w;
        e.out_mean = sout / w;
    }
    return e;
}

/* Draw one pair from cell (a, b) restricted to f. */
static void draw_cell(const pb_dataset *d, const pb_length_filter *f, int a, int b, bool full,
                      pb_rng *rng, int32_t *vin, int32_t *vout) {
    const side *si = &d->si, *so = &d->so;
    int ia = si->vstart[a], iz = si->vstart[a + 1], oa = so->vstart[b], oz = so->vstart[b + 1];
    if (full) {
        int k = pick_idx(si, ia, iz, (int64_t)pb_rng_below(rng, (uint64_t)(si->cum[iz] - si->cum[ia])));
        int m = pick_idx(so, oa, oz, (int64_t)pb_rng_below(rng, (uint64_t)(so->cum[oz] - so->cum[oa])));
        *vin = val(si, k);
        *vout = val(so, m);
        return;
    }
    /* input value k with weight count_k * (output mass that passes with it) */
    uint64_t total = 0;
    int k0 = lower_idx(si, ia, iz, f->min_in);
    for (int k = k0; k < iz && val(si, k) <= f->max_in; k++) {
        int x, y;
        bin_range(so, b, f->min_out, out_hi(f, val(si, k)), &x, &y);
        total += (uint64_t)cnt(si, k) * (uint64_t)(so->cum[y] - so->cum[x]);
    }
    PB_ASSERT(total > 0);
    uint64_t r = pb_rng_below(rng, total);
    for (int k = k0; k < iz && val(si, k) <= f->max_in; k++) {
        int x, y;
        bin_range(so, b, f->min_out, out_hi(f, val(si, k)), &x, &y);
        uint64_t m = (uint64_t)cnt(si, k) * (uint64_t)(so->cum[y] - so->cum[x]);
        if (r < m) {
            *vin = val(si, k);
            int j = pick_idx(so, x, y, (int64_t)pb_rng_below(rng, (uint64_t)(so->cum[y] - so->cum[x])));
            *vout = val(so, j);
            return;
        }
        r -= m;
    }
    PB_ASSERT(0);
}

static void shuffle_pairs(int32_t *in, int32_t *out, int64_t n, pb_rng *rng) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)pb_rng_below(rng, (uint64_t)i + 1);
        int32_t t = in[i]; in[i] = in[j]; in[j] = t;
        t = out[i]; out[i] = out[j]; out[j] = t;
    }
}

pb_status pb_dataset_draw(const pb_dataset *d, const pb_length_filter *f, int64_t n, pb_rng *rng,
                          int32_t *in, int32_t *out) {
    if (d->exact) {
        int64_t kept = 0;
        for (int64_t i = 0; i < d->n; i++) kept += pb_filter_keep(f, d->in[i], d->out[i]);
        if (kept == 0) return PB_ERR_INVALID;
        /* the filtered rows in file order, repeated and truncated to n */
        int64_t k = 0;
        while (k < n) {
            for (int64_t i = 0; i < d->n && k < n; i++) {
                if (!pb_filter_keep(f, d->in[i], d->out[i])) continue;
                in[k] = d->in[i];
                out[k] = d->out[i];
                k++;
            }
        }
        shuffle_pairs(in, out, n, rng);
        return PB_OK;
    }
    const pb_dist_table *t = d->tab;
    double *cum = pb_xmalloc(((size_t)t->n_cells + 1) * sizeof *cum);
    bool *full = pb_xmalloc(((size_t)t->n_cells + 1) * sizeof *full);
    cum[0] = 0;
    for (int c = 0; c < t->n_cells; c++) {
        cell_eval e = eval_cell(d, f, t->cells[3 * c], t->cells[3 * c + 1]);
        full[c] = e.full;
        cum[c + 1] = cum[c] + (double)t->cells[3 * c + 2] * e.pass;
    }
    double total = cum[t->n_cells];
    if (!(total > 0)) {
        free(cum);
        free(full);
        return PB_ERR_INVALID;
    }
    for (int64_t k = 0; k < n; k++) {
        double u = ((double)k + pb_rng_uniform(rng)) / (double)n * total;
        /* the cell c with cum[c] <= u < cum[c+1] and a non-zero weight */
        int lo = 0, hi = t->n_cells - 1;
        while (lo < hi) {
            int m = lo + (hi - lo + 1) / 2;
            if (cum[m] <= u) lo = m; else hi = m - 1;
        }
        while (lo > 0 && cum[lo + 1] <= cum[lo]) lo--;       /* u == total edge case */
        draw_cell(d, f, t->cells[3 * lo], t->cells[3 * lo + 1], full[lo], rng, &in[k], &out[k]);
    }
    free(cum);
    free(full);
    shuffle_pairs(in, out, n, rng);
    return PB_OK;
}

pb_status pb_dataset_means(const pb_dataset *d, const pb_length_filter *f, double *mean_in,
                           double *mean_out, double *kept) {
    double w = 0, si = 0, so = 0;
    if (d->exact) {
        for (int64_t i = 0; i < d->n; i++) {
            if (!pb_filter_keep(f, d->in[i], d->out[i])) continue;
            w += 1;
            si += d->in[i];
            so += d->out[i];
        }
    } else {
        const pb_dist_table *t = d->tab;
        for (int c = 0; c < t->n_cells; c++) {
            cell_eval e = eval_cell(d, f, t->cells[3 * c], t->cells[3 * c + 1]);
            double m = (double)t->cells[3 * c + 2] * e.pass;
            w += m;
            si += m * e.in_mean;
            so += m * e.out_mean;
        }
    }
    if (!(w > 0)) return PB_ERR_INVALID;
    if (mean_in) *mean_in = si / w;
    if (mean_out) *mean_out = so / w;
    if (kept) *kept = w;
    return PB_OK;
}

static void hist_add(double *p, int nbins, int32_t width, int32_t v, double m) {
    int64_t k = v / width;
    if (k >= 0 && k < nbins) p[k] += m;
}

pb_status pb_dataset_hist(const pb_dataset *d, const pb_length_filter *f, int32_t width, int nbins,
                          double *in_p, double *out_p) {
    if (width < 1 || nbins < 1) return PB_ERR_INVALID;
    for (int k = 0; k < nbins; k++) in_p[k] = out_p[k] = 0;
    double w = 0;
    if (d->exact) {
        for (int64_t i = 0; i < d->n; i++) {
            if (!pb_filter_keep(f, d->in[i], d->out[i])) continue;
            w += 1;
            hist_add(in_p, nbins, width, d->in[i], 1);
            hist_add(out_p, nbins, width, d->out[i], 1);
        }
    } else {
        const pb_dist_table *t = d->tab;
        const side *si = &d->si, *so = &d->so;
        for (int c = 0; c < t->n_cells; c++) {
            int a = t->cells[3 * c], b = t->cells[3 * c + 1];
            double cc = t->cells[3 * c + 2];
            int ia = si->vstart[a], iz = si->vstart[a + 1], oa = so->vstart[b], oz = so->vstart[b + 1];
            double ta = (double)(si->cum[iz] - si->cum[ia]), tb = (double)(so->cum[oz] - so->cum[oa]);
            if (ia == iz || oa == oz) continue;
            for (int k = ia; k < iz; k++) {            /* input values, with the output mass */
                if (val(si, k) < f->min_in || val(si, k) > f->max_in) continue;
                int x, y;
                bin_range(so, b, f->min_out, out_hi(f, val(si, k)), &x, &y);
                double m = cc * (double)cnt(si, k) / ta * (double)(so->cum[y] - so->cum[x]) / tb;
                w += m;
                hist_add(in_p, nbins, width, val(si, k), m);
            }
            for (int j = oa; j < oz; j++) {            /* output values, with the input mass */
                int32_t vo = val(so, j);
                if (vo < f->min_out) continue;
                int64_t hi = PB_MIN((int64_t)f->max_in, f->max_total - vo);
                int x, y;
                bin_range(si, a, f->min_in, hi, &x, &y);
                double m = cc * (double)cnt(so, j) / tb * (double)(si->cum[y] - si->cum[x]) / ta;
                hist_add(out_p, nbins, width, vo, m);
            }
        }
    }
    if (!(w > 0)) return PB_ERR_INVALID;
    for (int k = 0; k < nbins; k++) {
        in_p[k] /= w;
        out_p[k] /= w;
    }
    return PB_OK;
}

#define CHK(cond, ...) do { if (!(cond)) { if (err) snprintf(err, errlen, __VA_ARGS__); return PB_ERR_INVALID; } } while (0)

static pb_status side_check(const side *s, const char *what, char *err, size_t errlen) {
    CHK(s->nb >= 1, "%s: no bins", what);
    for (int b = 0; b < s->nb; b++) CHK(s->edges[b] < s->edges[b + 1], "%s: edges not ascending at %d", what, b);
    for (int i = 0; i < s->nv; i++) {
        CHK(cnt(s, i) > 0, "%s: value %d has count %lld", what, val(s, i), (long long)cnt(s, i));
        CHK(i == 0 || val(s, i - 1) < val(s, i), "%s: values not ascending at %d", what, i);
    }
    CHK(s->nv > 0 && val(s, 0) >= s->edges[0] && val(s, s->nv - 1) < s->edges[s->nb],
        "%s: values outside the bins", what);
    CHK(s->vstart[0] == 0 && s->vstart[s->nb] == s->nv, "%s: bin index does not cover the values", what);
    return PB_OK;
}

pb_status pb_dataset_check(const pb_dataset *d, char *err, size_t errlen) {
    if (d->exact) {
        CHK(d->n > 0, "%s: no rows", d->name);
        for (int64_t i = 0; i < d->n; i++)
            CHK(d->in[i] >= 1 && d->out[i] >= 1, "%s: row %lld has a length < 1", d->name, (long long)i);
        return PB_OK;
    }
    const pb_dist_table *t = d->tab;
    pb_status s;
    if ((s = side_check(&d->si, "input", err, errlen))) return s;
    if ((s = side_check(&d->so, "output", err, errlen))) return s;
    int64_t *bin_in = pb_xcalloc((size_t)d->si.nb, sizeof *bin_in);
    int64_t *bin_out = pb_xcalloc((size_t)d->so.nb, sizeof *bin_out);
    int64_t total = 0;
    pb_status st = PB_OK;
    for (int c = 0; c < t->n_cells && !st; c++) {
        int a = t->cells[3 * c], b = t->cells[3 * c + 1], k = t->cells[3 * c + 2];
        if (a < 0 || a >= d->si.nb || b < 0 || b >= d->so.nb || k <= 0) {
            if (err) snprintf(err, errlen, "%s: cell %d (%d, %d, %d) out of range", d->name, c, a, b, k);
            st = PB_ERR_INVALID;
            break;
        }
        if (c > 0 && (t->cells[3 * c - 3] > a || (t->cells[3 * c - 3] == a && t->cells[3 * c - 2] >= b))) {
            if (err) snprintf(err, errlen, "%s: cells not sorted at %d", d->name, c);
            st = PB_ERR_INVALID;
        }
        bin_in[a] += k;
        bin_out[b] += k;
        total += k;
    }
    for (int b = 0; b < d->si.nb && !st; b++)
        if (bin_in[b] != d->si.cum[d->si.vstart[b + 1]] - d->si.cum[d->si.vstart[b]]) {
            if (err) snprintf(err, errlen, "%s: input bin %d: cells hold %lld, the marginal %lld", d->name, b,
                              (long long)bin_in[b], (long long)(d->si.cum[d->si.vstart[b + 1]] - d->si.cum[d->si.vstart[b]]));
            st = PB_ERR_INVALID;
        }
    for (int b = 0; b < d->so.nb && !st; b++)
        if (bin_out[b] != d->so.cum[d->so.vstart[b + 1]] - d->so.cum[d->so.vstart[b]]) {
            if (err) snprintf(err, errlen, "%s: output bin %d: cells and marginal disagree", d->name, b);
            st = PB_ERR_INVALID;
        }
    if (!st && total != t->n_rows) {
        if (err) snprintf(err, errlen, "%s: cells hold %lld rows, the source %lld", d->name, (long long)total, (long long)t->n_rows);
        st = PB_ERR_INVALID;
    }
    free(bin_in);
    free(bin_out);
    return st;
}
