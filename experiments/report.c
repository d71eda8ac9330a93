/* report.c -- paper-vs-ours tables (markdown) for every figure. */
#include "report.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_reader.h" /* pb_csv: the results CSV read back */
#include "runner.h"   /* pb_knee_find, pb_knee_fmt */

/* ---- CSV ---- */
/* The results CSV (runner.h: RFC 4180, quoted cells) read back with libcsv
   (csv_reader.h): a row shorter than the header is padded with empty cells, a longer
   one is an error. */
pb_status pb_csv_table_load(const char *path, pb_csv_table *out) {
    memset(out, 0, sizeof *out);
    pb_csv c;
    char err[256];
    pb_status st = pb_csv_open(&c, path, err, sizeof err);
    if (st) return st == PB_ERR_IO ? PB_ERR_IO : PB_ERR_INVALID;
    int rcap = 0;
    while (!st && pb_csv_next(&c)) {
        int n = PB_MIN(c.n_fields, PB_CSV_MAX_FIELDS);
        if (out->cols && c.n_fields > out->n_cols) { st = PB_ERR_INVALID; break; }
        int width = out->cols ? out->n_cols : n;
        char **cells = pb_xcalloc((size_t)width + 1, sizeof *cells);
        for (int i = 0; i < width; i++) cells[i] = pb_xstrdup(i < n ? c.fields[i] : "");
        if (!out->cols) {
            if (c.n_fields > PB_CSV_MAX_FIELDS) st = PB_ERR_INVALID;
            out->cols = cells;
            out->n_cols = n;
            continue;
        }
        if (out->n_rows == rcap) { rcap = rcap ? 2 * rcap : 64; out->rows = pb_xrealloc(out->rows, (size_t)rcap * sizeof *out->rows); }
        out->rows[out->n_rows++] = cells;
    }
    pb_csv_close(&c);
    if (st) pb_csv_table_free(out);
    return st;
}

void pb_csv_table_free(pb_csv_table *t) {
    for (int r = 0; r < t->n_rows; r++) {
        for (int c = 0; c < t->n_cols; c++) free(t->rows[r][c]);
        free(t->rows[r]);
    }
    for (int c = 0; c < t->n_cols; c++) free(t->cols[c]);
    free(t->rows);
    free(t->cols);
    memset(t, 0, sizeof *t);
}

int pb_csv_table_col(const pb_csv_table *t, const char *name) {
    for (int c = 0; c < t->n_cols; c++)
        if (!strcmp(t->cols[c], name)) return c;
    return -1;
}

static const char *cell(const pb_csv_table *t, int r, const char *col) {
    int c = pb_csv_table_col(t, col);
    return c < 0 ? "" : t->rows[r][c];
}
static double num(const pb_csv_table *t, int r, const char *col) {
    const char *s = cell(t, r, col);
    char *end;
    double v = strtod(s, &end);
    return *s && end != s ? v : NAN;
}

/* ---- output buffer ---- */
typedef pb_sbuf out_buf;
#define P pb_sbuf_printf

static const char *label_of(const char *sys) {
    static const char *const map[][2] = {{"ft", "FasterTransformer"}, {"orca_max", "Orca (Max)"},
                                         {"orca_pow2", "Orca (Pow2)"}, {"orca_oracle", "Orca (Oracle)"},
                                         {"vllm", "vLLM"}};
    for (size_t i = 0; i < PB_ARRAY_LEN(map); i++)
        if (!strcmp(map[i][0], sys)) return map[i][1];
    return sys;
}

static void fmt_v(char *buf, size_t n, double v, const char *fmt) {
    if (isnan(v)) snprintf(buf, n, "-");
    else snprintf(buf, n, fmt, v);
}

/* ---- knees ---- */
/* The knee of one series on column ycol (normalized_latency, or its error band's
   normalized_latency_hi / _lo: the band's lower / upper knee). */
static pb_knee series_knee_of(const pb_csv_table *t, const char *panel, const char *sys, double thr, const char *ycol) {
    int n = 0;
    double *x = pb_xmalloc((size_t)(t->n_rows + 1) * sizeof *x), *y = pb_xmalloc((size_t)(t->n_rows + 1) * sizeof *y);
    for (int r = 0; r < t->n_rows; r++) {
        if (strcmp(cell(t, r, "panel"), panel) || strcmp(cell(t, r, "system"), sys)) continue;
        double xv = num(t, r, "request_rate"), yv = num(t, r, ycol);
        if (isnan(xv) || isnan(yv)) continue;
        int i = n++;   /* insertion sort by x (stable) */
        while (i > 0 && x[i - 1] > xv) { x[i] = x[i - 1]; y[i] = y[i - 1]; i--; }
        x[i] = xv;
        y[i] = yv;
    }
    pb_knee k = pb_knee_find(x, y, n, thr);
    free(x);
    free(y);
    return k;
}

static pb_knee series_knee(const pb_csv_table *t, const char *panel, const char *sys, double thr) {
    return series_knee_of(t, panel, sys, thr, "normalized_latency");
}

/* "a-b", the 80% interval of our knee (experiments/uncertainty.h), or "-" without error bars */
static void knee_band(char *buf, size_t n, const pb_csv_table *t, const char *panel, const char *sys, double thr) {
    if (pb_csv_table_col(t, "normalized_latency_lo") < 0 || pb_csv_table_col(t, "normalized_latency_hi") < 0) {
        snprintf(buf, n, "-");
        return;
    }
    pb_knee lo = series_knee_of(t, panel, sys, thr, "normalized_latency_hi"),
            hi = series_knee_of(t, panel, sys, thr, "normalized_latency_lo");
    char a[32], c[32];
    pb_knee_fmt(lo, a, sizeof a);
    pb_knee_fmt(hi, c, sizeof c);
    snprintf(buf, n, "%s-%s", a, c);
}

static int distinct(const pb_csv_table *t, const char *col, const char **out, int max) {
    int n = 0;
    for (int r = 0; t && r < t->n_rows; r++) {
        const char *v = cell(t, r, col);
        bool seen = false;
        for (int i = 0; i < n; i++)
            if (!strcmp(out[i], v)) seen = true;
        if (!seen && n < max) out[n++] = v;
    }
    return n;
}

static void ratio_fmt(char *buf, size_t n, pb_knee v, pb_knee b) {
    if (v.kind == PB_KNEE_NO_DATA || b.kind == PB_KNEE_NO_DATA || !(b.rate > 0)) { snprintf(buf, n, "-"); return; }
    double r = v.rate / b.rate;
    /* a lower bound on vLLM or an upper bound on the baseline makes the ratio a lower bound */
    bool lower = v.kind == PB_KNEE_NOT_REACHED || b.kind == PB_KNEE_ABOVE_AT_START;
    bool upper = v.kind == PB_KNEE_ABOVE_AT_START || b.kind == PB_KNEE_NOT_REACHED;
    snprintf(buf, n, "%s%.2fx", lower && !upper ? ">" : upper && !lower ? "<" : lower ? "?" : "", r);
}

static void report_knees(out_buf *b, const char *figure, const pb_csv_table *ours, const pb_csv_table *paper,
                         double thr) {
    const char *panels[32], *systems[16];
    int np = distinct(ours, "panel", panels, 32);
    int ns = distinct(ours, "system", systems, 16);
    P(b, "Knee = request rate (req/s) where normalized latency first crosses %.3g s/token (linear interpolation;\n"
         "'>x': never crossed up to x; '<x': already above at x).  Paper knees are computed the same way from\n"
         "the digitized points of PAPER.md.  80%% interval: the knees of our error band's upper and lower edges\n"
         "(the cost model's calibration residuals, experiments/uncertainty.h).\n\n", thr);
    P(b, "| panel | system | knee (ours) | 80%% interval | knee (paper) | ours / paper |\n|---|---|---|---|---|---|\n");
    for (int p = 0; p < np; p++)
        for (int s = 0; s < ns; s++) {
            pb_knee ko = series_knee(ours, panels[p], systems[s], thr);
            if (ko.kind == PB_KNEE_NO_DATA) continue;
            pb_knee kp = paper ? series_knee(paper, panels[p], systems[s], thr) : (pb_knee){PB_KNEE_NO_DATA, NAN};
            char a[32], c[32], r[32], iv[80];
            pb_knee_fmt(ko, a, sizeof a);
            pb_knee_fmt(kp, c, sizeof c);
            ratio_fmt(r, sizeof r, ko, kp);
            knee_band(iv, sizeof iv, ours, panels[p], systems[s], thr);
            P(b, "| %s | %s | %s | %s | %s | %s |\n", panels[p], label_of(systems[s]), a, iv, c, r);
        }
    P(b, "\nRatios of vLLM's knee to each baseline's (ours vs paper):\n\n| panel |");
    for (int s = 0; s < ns; s++)
        if (strcmp(systems[s], "vllm")) P(b, " vLLM/%s ours | paper |", label_of(systems[s]));
    P(b, "\n|---|");
    for (int s = 0; s < ns; s++)
        if (strcmp(systems[s], "vllm")) P(b, "---|---|");
    P(b, "\n");
    for (int p = 0; p < np; p++) {
        P(b, "| %s |", panels[p]);
        pb_knee vo = series_knee(ours, panels[p], "vllm", thr);
        pb_knee vp = paper ? series_knee(paper, panels[p], "vllm", thr) : (pb_knee){PB_KNEE_NO_DATA, NAN};
        for (int s = 0; s < ns; s++) {
            if (!strcmp(systems[s], "vllm")) continue;
            char r1[32], r2[32];
            ratio_fmt(r1, sizeof r1, vo, series_knee(ours, panels[p], systems[s], thr));
            ratio_fmt(r2, sizeof r2, vp, paper ? series_knee(paper, panels[p], systems[s], thr) : (pb_knee){PB_KNEE_NO_DATA, NAN});
            P(b, " %s | %s |", r1, r2);
        }
        P(b, "\n");
    }
    if (!strcmp(figure, "fig12")) {
        /* the quoted ranges, over the ShareGPT panels a-c */
        const char *base[3] = {"orca_oracle", "orca_max", "ft"};
        const char *name[3] = {"Orca (Oracle)", "Orca (Max)", "FasterTransformer"};
        const char *quote[3] = {"1.7-2.7x", "2.7-8x", "up to 22x"};
        P(b, "\nShareGPT panels a-c, the ranges the paper quotes (only crossings found on both sides count):\n\n"
             "| vLLM vs | ours | paper (digitized) | paper (text) |\n|---|---|---|---|\n");
        for (int k = 0; k < 3; k++) {
            double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
            for (int side = 0; side < 2; side++) {
                const pb_csv_table *t = side ? paper : ours;
                if (!t) continue;
                for (int q = 0; q < 3; q++) {
                    const char *pn = q == 0 ? "a" : q == 1 ? "b" : "c";
                    pb_knee v = series_knee(t, pn, "vllm", thr), x = series_knee(t, pn, base[k], thr);
                    if (v.kind != PB_KNEE_FOUND || x.kind != PB_KNEE_FOUND || !(x.rate > 0)) continue;
                    lo[side] = fmin(lo[side], v.rate / x.rate);
                    hi[side] = fmax(hi[side], v.rate / x.rate);
                }
            }
            char o[64] = "-", pd[64] = "-";
            if (isfinite(lo[0])) snprintf(o, sizeof o, "%.2f-%.2fx", lo[0], hi[0]);
            if (isfinite(lo[1])) snprintf(pd, sizeof pd, "%.2f-%.2fx", lo[1], hi[1]);
            P(b, "| %s | %s | %s | %s |\n", name[k], o, pd, quote[k]);
        }
        P(b, "\nPaper (text, §6.2): on ShareGPT vLLM sustains 1.7-2.7x the rate of Orca (Oracle), 2.7-8x Orca (Max),\n"
             "and up to 22x FasterTransformer; Alpaca follows a similar trend except (f) OPT-175B, where the gain\n"
             "over Orca (Oracle/Pow2) is small (compute-bound).  Panels: a-c ShareGPT 13B/66B/175B, d-f Alpaca.\n");
    } else if (!strcmp(figure, "fig14"))
        P(b, "\nPaper (text, §6.3): the gain over Orca (Oracle) grows with the number of sequences: 1.3x (basic\n"
             "sampling) to 2.3x (beam width 6); digitized 1.47 (n=2), 1.55 (n=4), 1.79/2.03/2.23 (beam 2/4/6).\n"
             "Panels: a-c parallel n=2/4/6, d-f beam width 2/4/6.\n");
    else if (!strcmp(figure, "fig16"))
        P(b, "\nPaper (text, §6.4): vLLM/Orca (Oracle) = 1.67x (1-shot, panel a) and 3.58x (5-shot, panel b).\n");
    else if (!strcmp(figure, "fig17"))
        P(b, "\nPaper (text, §6.5): vLLM sustains 2x the rate of the three Orca baselines (digitized: about\n"
             "1.5-1.7x at equal latency).\n");
}

/* ---- bars: match rows on key columns, compare one value ---- */
static int find_row(const pb_csv_table *t, const char *const *keys, int nk, const pb_csv_table *src, int r) {
    for (int q = 0; t && q < t->n_rows; q++) {
        bool ok = true;
        for (int k = 0; k < nk && ok; k++) {
            const char *a = cell(src, r, keys[k]), *b = cell(t, q, keys[k]);
            double x, y;
            char *e1, *e2;
            x = strtod(a, &e1);
            y = strtod(b, &e2);
            if (*a && *b && !*e1 && !*e2) ok = fabs(x - y) <= 1e-9 * fmax(1, fabs(x));
            else ok = !strcmp(a, b);
        }
        if (ok) return q;
    }
    return -1;
}

static void report_values(out_buf *b, const pb_csv_table *ours, const pb_csv_table *paper,
                          const char *const *keys, int nk, const char *const *vals, int nv, bool points) {
    P(b, "|");
    for (int k = 0; k < nk; k++) P(b, " %s |", keys[k]);
    for (int v = 0; v < nv; v++) P(b, " %s ours | paper | %s |", vals[v], points ? "diff (pts)" : "ours/paper");
    P(b, "\n|");
    for (int k = 0; k < nk + 3 * nv; k++) P(b, "---|");
    P(b, "\n");
    for (int r = 0; r < ours->n_rows; r++) {
        int q = paper ? find_row(paper, keys, nk, ours, r) : -1;
        P(b, "|");
        for (int k = 0; k < nk; k++) {
            const char *c = cell(ours, r, keys[k]);
            P(b, " %s |", !strcmp(keys[k], "system") ? label_of(c) : c);
        }
        for (int v = 0; v < nv; v++) {
            double o = num(ours, r, vals[v]), p = q >= 0 ? num(paper, q, vals[v]) : NAN;
            char a[32], c[32], d[32];
            fmt_v(a, sizeof a, o, "%.4g");
            fmt_v(c, sizeof c, p, "%.4g");
            if (points) fmt_v(d, sizeof d, o - p, "%+.1f");
            else fmt_v(d, sizeof d, p != 0 ? o / p : NAN, "%.2f");
            P(b, " %s | %s | %s |", a, c, d);
        }
        P(b, "\n");
    }
}

/* best (lowest) block sizes: those within 10% of the minimum */
static void best_blocks(out_buf *b, const pb_csv_table *t, const char *group_col, const char *group, const char *who) {
    double best = INFINITY;
    for (int r = 0; r < t->n_rows; r++)
        if (!strcmp(cell(t, r, group_col), group)) best = fmin(best, num(t, r, "normalized_latency"));
    if (!isfinite(best)) return;
    P(b, "- %s, %s: best block sizes (within 10%% of the minimum %.3g s/token):", who, group, best);
    for (int r = 0; r < t->n_rows; r++)
        if (!strcmp(cell(t, r, group_col), group) && num(t, r, "normalized_latency") <= 1.1 * best)
            P(b, " %s", cell(t, r, "block_size"));
    P(b, "\n");
}

static void report_fig19a(out_buf *b, const pb_csv_table *ours, const pb_csv_table *paper) {
    const char *keys[] = {"block_size", "operation"}, *vals[] = {"time_ms"};
    report_values(b, ours, paper, keys, 2, vals, 1, false);
    for (int side = 0; side < 2; side++) {
        const pb_csv_table *t = side ? paper : ours;
        if (!t) continue;
        /* crossover: smallest block size where swap in + out <= recompute */
        const char *bs[16];
        int nb = distinct(t, "block_size", bs, 16);
        const char *cross = NULL;
        for (int i = 0; i < nb && !cross; i++) {
            double rec = NAN, in = NAN, outv = NAN;
            for (int r = 0; r < t->n_rows; r++) {
                if (strcmp(cell(t, r, "block_size"), bs[i])) continue;
                const char *op = cell(t, r, "operation");
                if (!strcmp(op, "recompute")) rec = num(t, r, "time_ms");
                else if (!strcmp(op, "swap_in")) in = num(t, r, "time_ms");
                else if (!strcmp(op, "swap_out")) outv = num(t, r, "time_ms");
            }
            if (in + outv <= rec) cross = bs[i];
        }
        P(b, "\n- %s: swap in + out is no slower than recompute from block size %s on (paper text: between 16 and 32)",
          side ? "paper" : "ours", cross ? cross : "(never)");
    }
    P(b, "\n");
}

int pb_results_sidecar_axes(const char *csv, char names[][64], int max) {
    size_t l = strlen(csv);
    if (l < 4 || strcmp(csv + l - 4, ".csv")) return -1;
    char path[1200];
    snprintf(path, sizeof path, "%.*s.json", (int)(l - 4), csv);
    json_t *j = json_load_file(path, 0, NULL);
    if (!j) return -1;
    int n = 0;
    size_t i, k;
    json_t *x, *ax;
    json_array_foreach(json_object_get(j, "experiments"), i, x) {
        json_array_foreach(json_object_get(json_object_get(x, "config"), "sweep"), k, ax) {
            const char *a = json_string_value(json_object_get(ax, "axis"));
            bool dup = false;
            for (int q = 0; a && q < n; q++) dup |= !strcmp(names[q], a);
            if (a && !dup && n < max) snprintf(names[n++], 64, "%s", a);
        }
    }
    json_decref(j);
    return n;
}

pb_status pb_report_figure(const char *figure, const char *ours_csv, const char *paper_csv, double threshold,
                           FILE *out, const char *md_path) {
    pb_csv_table ours, paper;
    if (pb_csv_table_load(ours_csv, &ours)) {
        pb_log_error("%s: cannot read results", ours_csv);
        return PB_ERR_IO;
    }
    bool have_paper = paper_csv && pb_csv_table_load(paper_csv, &paper) == PB_OK;
    const pb_csv_table *pp = have_paper ? &paper : NULL;
    out_buf b = {0};
    if (have_paper) P(&b, "### %s: paper vs ours\n\n", figure);
    else P(&b, "### %s: results (no digitized paper data for it)\n\n", figure);
    if (!strcmp(figure, "fig12") || !strcmp(figure, "fig14") || !strcmp(figure, "fig16") || !strcmp(figure, "fig17")) {
        report_knees(&b, figure, &ours, pp, threshold);
    } else if (!strcmp(figure, "fig2")) {
        const char *keys[] = {"system"};
        const char *vals[] = {"token_states_pct", "reservation_pct", "internal_frag_pct", "external_frag_pct"};
        report_values(&b, &ours, pp, keys, 1, vals, 4, true);
        P(&b, "\nTarget: every class within 5 points.  Paper text: existing systems store token states in only\n"
              "20.4%%-38.2%% of the KV space; vLLM 96.3%%.\n");
    } else if (!strcmp(figure, "fig13")) {
        const char *keys[] = {"dataset", "system"}, *vals[] = {"batched_requests"};
        report_values(&b, &ours, pp, keys, 2, vals, 1, false);
        P(&b, "\nTarget: every bar within 15%%.  Paper: ShareGPT vLLM/Oracle 2.2x, vLLM/Max 4.3x; Alpaca 1.82x, 18.9x.\n");
    } else if (!strcmp(figure, "fig15")) {
        const char *keys[] = {"dataset", "mode", "width"}, *vals[] = {"saving_pct"};
        report_values(&b, &ours, pp, keys, 3, vals, 1, true);
        P(&b, "\nTarget: every bar within 5 points.  Paper text: 6.1%%-9.8%% (parallel), 37.6%%-55.2%% (beam) on Alpaca.\n");
    } else if (!strcmp(figure, "fig18b") || !strcmp(figure, "fig19b")) {
        bool b19 = !strcmp(figure, "fig19b");
        const char *keys18[] = {"dataset", "block_size"}, *keys19[] = {"mode", "block_size"};
        const char *vals[] = {"normalized_latency"};
        report_values(&b, &ours, pp, b19 ? keys19 : keys18, 2, vals, 1, false);
        P(&b, "\n");
        const char *groups[8];
        int ng = distinct(&ours, b19 ? "mode" : "dataset", groups, 8);
        for (int g = 0; g < ng; g++) {
            best_blocks(&b, &ours, b19 ? "mode" : "dataset", groups[g], "ours");
            if (pp) best_blocks(&b, pp, b19 ? "mode" : "dataset", groups[g], "paper");
        }
        P(&b, b19 ? "\nPaper: recompute better at blocks 1-8, swap better at 128-256, comparable at 16-64.\n"
                  : "\nPaper: best block sizes 16-128 on ShareGPT and 16-32 on Alpaca.\n");
    } else if (!strcmp(figure, "fig19a")) {
        report_fig19a(&b, &ours, pp);
    } else if (!strcmp(figure, "fig11")) {
        P(&b, "| dataset | series | mean ours (tokens) | paper | ours/paper |\n|---|---|---|---|---|\n");
        const char *ds[8];
        int nd = distinct(&ours, "dataset", ds, 8);
        for (int d = 0; d < nd; d++)
            for (int io = 0; io < 2; io++) {
                const char *series = io ? "output" : "input";
                double m = NAN, p = NAN;
                for (int r = 0; r < ours.n_rows; r++)
                    if (!strcmp(cell(&ours, r, "dataset"), ds[d]) && !strcmp(cell(&ours, r, "series"), series)) { m = num(&ours, r, "mean"); break; }
                for (int r = 0; pp && r < pp->n_rows; r++)
                    if (!strcmp(cell(pp, r, "dataset"), ds[d])) p = num(pp, r, io ? "output_mean" : "input_mean");
                char a[32], c[32], q[32];
                fmt_v(a, sizeof a, m, "%.2f");
                fmt_v(c, sizeof c, p, "%.2f");
                fmt_v(q, sizeof q, m / p, "%.3f");
                P(&b, "| %s | %s | %s | %s | %s |\n", ds[d], series, a, c, q);
            }
        P(&b, "\nPaper: ShareGPT has 8.4x longer inputs and 5.8x longer outputs than Alpaca on average.\n");
    } else {
        /* generic: the experiment's declared columns (the CSV's leading ones, up to the
           `experiment` column the runner appends); without `columns:`, the system, the
           sweep axes (from the .json beside the CSV) and the main latency metrics; one
           markdown row per result row */
        int cols[16], nc = 0, ec = pb_csv_table_col(&ours, "experiment");
        for (int c = 0; c < ec && c < 12; c++) cols[nc++] = c;
        if (nc == 0) {
            const char *want[16];
            char axes[6][64];
            int nw = 0, na = pb_results_sidecar_axes(ours_csv, axes, 6);
            want[nw++] = "system";
            for (int a = 0; a < na; a++) want[nw++] = axes[a];
            static const char *const METRICS[] = {"normalized_latency", "ttft_p99_ms", "tpot_p99_ms",
                                                  "request_throughput_per_s", "goodput_per_s", "slo_met"};
            for (size_t k = 0; k < PB_ARRAY_LEN(METRICS); k++) want[nw++] = METRICS[k];
            for (int k = 0; k < nw; k++) {
                int c = pb_csv_table_col(&ours, want[k]);
                bool dup = false;
                for (int q = 0; q < nc; q++) dup |= cols[q] == c;
                if (c >= 0 && !dup && nc < 16) cols[nc++] = c;
            }
        }
        for (int k = 0; k < nc; k++) P(&b, "| %s ", ours.cols[cols[k]]);
        P(&b, "|\n");
        for (int k = 0; k < nc; k++) P(&b, "|---");
        P(&b, "|\n");
        for (int r = 0; r < ours.n_rows; r++) {
            for (int k = 0; k < nc; k++) {
                char v[32];
                int c = cols[k];
                double x = num(&ours, r, ours.cols[c]);
                if (isnan(x)) P(&b, "| %s ", ours.rows[r][c]);
                else {
                    fmt_v(v, sizeof v, x, "%.4g");
                    P(&b, "| %s ", v);
                }
            }
            P(&b, "|\n");
        }
        P(&b, "\n%d rows of ours in %s", ours.n_rows, ours_csv);
        if (pp) P(&b, "; %d digitized paper rows in %s", pp->n_rows, paper_csv);
        P(&b, ".\n");
    }
    P(&b, "\n");
    if (out) { fwrite(b.s, 1, b.len, out); fflush(out); }
    pb_status st = PB_OK;
    if (md_path) st = pb_write_file_atomic(md_path, b.s, b.len);
    free(b.s);
    pb_csv_table_free(&ours);
    if (have_paper) pb_csv_table_free(&paper);
    return st;
}
