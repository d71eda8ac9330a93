/* cmd_plot.c -- `pagedbench plot`: a figure of any results CSVs, in the paper's style.
 *
 *   pagedbench plot out/my_exp.csv                               # normalized latency vs request rate
 *   pagedbench plot out/my_exp.csv --y ttft_p99_ms --y tpot_p99_ms --logy
 *   pagedbench plot out/study.csv --y ttft_p99_ms --relative-to vllm_v01
 *   pagedbench plot out/fig12.csv results/fig12.csv              # two runs, one figure
 *
 * Reads results CSVs (runner.h; docs/outputs.md) and the <name>.json beside each (titles,
 * sweep axis, --quick), computes every point to draw here, and hands gnuplot a data file
 * and a program that load plots/style.gp, the style the figure scripts share:
 *   - one row of panels per --y, one panel per `panel` value (or `experiment`, when the
 *     CSV has several), titled with the experiment's `title`; the figure's title is --title
 *     or, for one experiment, its title;
 *   - one line per series: system (+ --series columns) per file; the systems keep one
 *     style and one order in every figure (SYSTEM_STYLES below; plots/style.gp), other
 *     series take styles 21..28; a second CSV is drawn dashed with hollow markers;
 *   - one legend for the whole figure, above the panels: each series once, and one entry
 *     for each further CSV's line style;
 *   - a value outside the y range (above --ymax, or normalized latency above 1 s/token, the
 *     paper's axis; below --ymin; 0 or less on a log axis) is drawn as an arrow to the
 *     edge with its value along it, never dropped or flattened;
 *   - --relative-to SYS divides each series by SYS's value at the same x in the same panel
 *     (points without one are left out and counted on stderr);
 *   - a column in ms whose largest drawn value is 10,000 or more is shown in s (--yunit);
 *   - results of a --quick run carry a watermark saying so.
 * Prints the files written on stdout.  Exit: 0 ok, 1 gnuplot failed, 2 usage or unreadable
 * CSV / unknown column. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "pb.h"
#include "report.h"   /* pb_csv_table */

#define MAX_FILES 4
#define MAX_Y 4
#define MAX_SERIES 64
#define MAX_PANELS 32
#define MAX_SPLIT 4

/* The systems' styles (plots/style.gp line styles) in legend order: the paper's five, then
 * the scheduling study's policies and fig19's modes.  Any other series: 21.. in first-seen
 * order. */
static const struct { const char *sys; int style; } SYSTEM_STYLES[] = {
    {"ft", 1}, {"orca_max", 2}, {"orca_pow2", 3}, {"orca_oracle", 4}, {"vllm", 5},
    {"vllm_v01", 5}, {"vllm_v02", 24}, {"sarathi", 22}, {"prefix_cache", 23},
    {"recompute", 6}, {"swap", 8},
};

/* "Request rate (req/s)" etc.: the axis label of a column, with its unit. */
static void axis_label(const char *col, char *buf, size_t n) {
    static const char *const KNOWN[][2] = {
        {"request_rate", "Request rate (req/s)"},
        {"normalized_latency", "Normalized latency (s/token)"},
        {"normalized_latency_p50", "p50 normalized latency (s/token)"},
        {"normalized_latency_p90", "p90 normalized latency (s/token)"},
        {"normalized_latency_p99", "p99 normalized latency (s/token)"},
        {"block_size", "Block size (tokens)"},
        {"context_len", "Context length (tokens)"},
        {"batched_requests", "Batched requests (# requests)"},
        {"batched_seqs", "Batched sequences"},
        {"width", "Parallel size / beam width"},
        {"n", "Parallel samples (n)"},
        {"beam_width", "Beam width"},
        {"saving_pct", "Memory saving (%)"},
        {"goodput_fraction", "Goodput (fraction of requests)"},
        {"goodput_per_s", "Goodput (req/s)"},
        {"request_throughput_per_s", "Request throughput (req/s)"},
        {"output_token_throughput_per_s", "Output throughput (tokens/s)"},
        {"total_token_throughput_per_s", "Token throughput (tokens/s)"},
        {"swap_gib", "Swapped (GiB)"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(KNOWN); i++)
        if (!strcmp(KNOWN[i][0], col)) { snprintf(buf, n, "%s", KNOWN[i][1]); return; }
    /* ttft_p99_ms -> "TTFT p99 (ms)" */
    static const char *const UNITS[][2] = {{"_ms", "ms"}, {"_per_s", "/s"}, {"_s", "s"}, {"_pct", "%"},
                                           {"_gib", "GiB"}, {"_us", "µs"}};
    char base[256];
    snprintf(base, sizeof base, "%s", col);
    const char *unit = NULL;
    size_t l = strlen(base);
    for (size_t i = 0; i < PB_ARRAY_LEN(UNITS) && !unit; i++) {
        size_t u = strlen(UNITS[i][0]);
        if (l > u && !strcmp(base + l - u, UNITS[i][0])) { base[l - u] = 0; unit = UNITS[i][1]; }
    }
    for (char *p = base; *p; p++)
        if (*p == '_') *p = ' ';
    static const char *const UP[] = {"ttft", "tpot", "itl", "e2el", "e2e"};
    for (size_t i = 0; i < PB_ARRAY_LEN(UP); i++) {
        size_t k = strlen(UP[i]);
        if (!strncmp(base, UP[i], k) && (base[k] == ' ' || !base[k]))
            for (size_t j = 0; j < k; j++)
                if (base[j] >= 'a' && base[j] <= 'z') base[j] = (char)(base[j] - 32);
    }
    if (base[0] >= 'a' && base[0] <= 'z') base[0] = (char)(base[0] - 32);
    if (unit) snprintf(buf, n, "%s (%s)", base, unit);
    else snprintf(buf, n, "%s", base);
}

/* gnuplot single-quoted string: ' doubled */
static void gq(FILE *f, const char *s) {
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

/* The <name>.json beside a <name>.csv (NULL when absent). */
static json_t *sidecar(const char *csv) {
    size_t l = strlen(csv);
    if (l < 4 || strcmp(csv + l - 4, ".csv")) return NULL;
    char path[1200];
    snprintf(path, sizeof path, "%.*s.json", (int)(l - 4), csv);
    return json_load_file(path, 0, NULL);
}

static const char *exp_cfg_str(json_t *side, const char *match_key, const char *match, const char *want) {
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(side, "experiments"), i, x) {
        json_t *cfg = json_object_get(x, "config");
        const char *v = json_string_value(json_object_get(cfg, match_key));
        if (v && !strcmp(v, match)) return json_string_value(json_object_get(cfg, want));
    }
    return NULL;
}

typedef struct {
    int file;
    char sys[128], key[512], title[256];
    int style, order;
} series;

typedef struct {
    char id[256], title[256];
} panel;

typedef struct {
    int panel, series;
    double x, y[MAX_Y];
} point;

typedef struct {
    const char *csv[MAX_FILES];
    int n_files;
    const char *x, *y[MAX_Y];
    int n_y;
    const char *split[MAX_SPLIT];
    int n_split;
    const char *relative, *title, *out, *script, *yunit;
    double ymax, ymin;
    bool logx, logy;
} plot_opts;

/* A table system's style and legend position; -1 for any other series (styled later). */
static int style_of(const char *sys, bool split, int *next_generic, int *order) {
    for (size_t i = 0; !split && i < PB_ARRAY_LEN(SYSTEM_STYLES); i++)
        if (!strcmp(sys, SYSTEM_STYLES[i].sys)) { *order = (int)i; return SYSTEM_STYLES[i].style; }
    *order = 100 + (*next_generic)++;
    return -1;
}

/* The other series: styles 21..28 in first-seen order, skipping those the table's took. */
static void style_generic(series *ser, int ns) {
    int next = 21;
    for (int s = 0; s < ns; s++) {
        if (ser[s].style > 0) continue;
        for (int tries = 0; tries < 8; tries++) {
            bool used = false;
            for (int q = 0; q < ns; q++) used |= ser[q].style == next;
            if (!used) break;
            next = next == 28 ? 21 : next + 1;
        }
        ser[s].style = next;
        for (int q = s + 1; q < ns; q++)   /* its twin in a later file */
            if (ser[q].style < 0 && !strcmp(ser[q].title, ser[s].title)) ser[q].style = next;
        next = next == 28 ? 21 : next + 1;
    }
}

static int ser_cmp(const void *a, const void *b) {
    const series *x = a, *y = b;
    if (x->order != y->order) return x->order - y->order;
    return x->file - y->file;
}

static int add_panel(panel *pn, int *np, const char *id) {
    for (int i = 0; i < *np; i++)
        if (!strcmp(pn[i].id, id)) return i;
    if (*np == MAX_PANELS) return -1;
    snprintf(pn[*np].id, sizeof pn[*np].id, "%s", id);
    snprintf(pn[*np].title, sizeof pn[*np].title, "%s", id);
    return (*np)++;
}

enum { O_X = 256, O_Y, O_SERIES, O_YMAX, O_YMIN, O_TITLE, O_OUT, O_SCRIPT, O_LOGX, O_LOGY, O_REL, O_YUNIT };
static const pb_cli_opt OPTS[] = {
    {"x", O_X, "COL", "x column (default request_rate; else the first sweep axis, from the CSV's\n"
                      ".json sidecar)"},
    {"y", O_Y, "COL", "y column, one row of panels each (repeatable, up to 4; default\n"
                      "normalized_latency)"},
    {"series", O_SERIES, "COL", "split each system's line by this column too (repeatable)"},
    {"relative-to", O_REL, "SYSTEM", "draw each series divided by SYSTEM's value at the same x and panel"},
    {"logx", O_LOGX, NULL, "logarithmic x axis (base 2: block sizes, widths)"},
    {"logy", O_LOGY, NULL, "logarithmic y axis"},
    {"ymax", O_YMAX, "V", "top of the y axes; larger values are drawn as markers on the edge with\n"
                          "their value (default 1 for normalized latency, as the paper; else\n"
                          "automatic)"},
    {"ymin", O_YMIN, "V", "bottom of the y axes (default 0, or automatic with --logy)"},
    {"yunit", O_YUNIT, "UNIT", "ms or s for a column in ms (default: s when values reach 10,000 ms)"},
    {"title", O_TITLE, "TEXT", "figure title (default: the experiment's title when there is one)"},
    {"out", O_OUT, "STEM", "output path without extension (default " PB_OUT_DIR "/plots/<csv name>-<y>)"},
    {"script", O_SCRIPT, "FILE", "keep the gnuplot program there (and its data beside it, FILE.dat)"},
    {NULL, 0, NULL, NULL}};
static const pb_cli CLI = {
    "plot", "RESULTS.csv [RESULTS.csv ...] [options]",
    "Draws results CSVs (x against y per system and panel) with gnuplot in the style the\n"
    "figure scripts share (plots/style.gp): one row of panels per y column, one legend for the\n"
    "figure, off-scale values as markers on the edge with their value, panel titles from the\n"
    "experiments, a watermark on --quick results.  A second CSV (another run, or the paper's\n"
    "points) is drawn dashed with hollow markers.",
    OPTS, "Writes STEM.png and STEM.pdf and prints their paths.  Columns and units: docs/outputs.md.",
    "gnuplot failed", NULL};

static int parse(int argc, char **argv, plot_opts *o) {
    memset(o, 0, sizeof *o);
    o->ymax = o->ymin = NAN;
    pb_cli_parser p;
    pb_cli_begin(&p, &CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        switch (c) {
        case O_X: o->x = p.arg; break;
        case O_Y:
            if (o->n_y == MAX_Y) pb_cli_bad(&p, "at most %d", MAX_Y);
            else o->y[o->n_y++] = p.arg;
            break;
        case O_SERIES:
            if (o->n_split == MAX_SPLIT) pb_cli_bad(&p, "at most %d", MAX_SPLIT);
            else o->split[o->n_split++] = p.arg;
            break;
        case O_YMAX: pb_cli_num(&p, -INFINITY, INFINITY, &o->ymax); break;
        case O_YMIN: pb_cli_num(&p, -INFINITY, INFINITY, &o->ymin); break;
        case O_YUNIT:
            if (strcmp(p.arg, "ms") && strcmp(p.arg, "s")) pb_cli_bad(&p, "expected ms or s, got '%s'", p.arg);
            o->yunit = p.arg;
            break;
        case O_TITLE: o->title = p.arg; break;
        case O_OUT: o->out = p.arg; break;
        case O_SCRIPT: o->script = p.arg; break;
        case O_LOGX: o->logx = true; break;
        case O_LOGY: o->logy = true; break;
        case O_REL: o->relative = p.arg; break;
        }
    }
    if (p.rc >= 0) return p.rc;
    if (p.optind == argc) return pb_cli_fail(&CLI, "name a results CSV");
    if (argc - p.optind > MAX_FILES) return pb_cli_fail(&CLI, "at most %d CSVs", MAX_FILES);
    for (int i = p.optind; i < argc; i++) o->csv[o->n_files++] = argv[i];
    if (!o->n_y) o->y[o->n_y++] = "normalized_latency";
    if (!isnan(o->ymax) && !isnan(o->ymin) && !(o->ymin < o->ymax))
        return pb_cli_fail(&CLI, "--ymin must be below --ymax");
    if (o->logy && !isnan(o->ymin) && !(o->ymin > 0)) return pb_cli_fail(&CLI, "--logy needs --ymin > 0");
    return -1;
}

/* a double as data-file text ("NaN" for none) */
static void put(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.17g", v);
    else fputs("NaN", f);
}

int pb_cmd_plot(int argc, char **argv) {
    plot_opts o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    rc = PB_EXIT_OK;

    pb_csv_table t[MAX_FILES];
    json_t *side[MAX_FILES] = {NULL};
    int nt = 0;
    bool quick = false;
    for (int f = 0; f < o.n_files && rc == PB_EXIT_OK; f++) {
        pb_status st = pb_csv_table_load(o.csv[f], &t[f]);
        if (st) {
            fprintf(stderr, "pagedbench plot: %s: %s\n", o.csv[f],
                    st == PB_ERR_IO ? strerror(errno) : "a row has more cells than the header");
            rc = PB_EXIT_USAGE;
            break;
        }
        nt++;
        side[f] = sidecar(o.csv[f]);
        quick |= json_is_true(json_object_get(side[f], "quick"));
    }
    static char axis[128];
    if (rc == PB_EXIT_OK && !o.x) {
        const char *a = json_string_value(json_object_get(
            json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(side[0], "experiments"), 0),
                                                           "config"), "sweep"), 0), "axis"));
        if (pb_csv_table_col(&t[0], "request_rate") >= 0) o.x = "request_rate";
        else if (a) o.x = snprintf(axis, sizeof axis, "%s", a) > 0 ? axis : NULL;
        if (!o.x) {
            fprintf(stderr, "pagedbench plot: %s has no request_rate column and no .json naming its sweep axis: "
                            "name the x axis with --x COL\n", o.csv[0]);
            rc = PB_EXIT_USAGE;
        }
    }
    for (int f = 0; f < nt && rc == PB_EXIT_OK; f++) {
        const char *need[3 + MAX_Y + MAX_SPLIT];
        int nn = 0;
        need[nn++] = "system";
        need[nn++] = o.x;
        for (int k = 0; k < o.n_y; k++) need[nn++] = o.y[k];
        for (int k = 0; k < o.n_split; k++) need[nn++] = o.split[k];
        for (int k = 0; k < nn && rc == PB_EXIT_OK; k++)
            if (pb_csv_table_col(&t[f], need[k]) < 0) {
                fprintf(stderr, "pagedbench plot: %s: no column '%s' (columns: docs/outputs.md)\n", o.csv[f], need[k]);
                rc = PB_EXIT_USAGE;
            }
        if (rc == PB_EXIT_OK && t[f].n_rows == 0) {
            fprintf(stderr, "pagedbench plot: %s: no rows\n", o.csv[f]);
            rc = PB_EXIT_USAGE;
        }
    }

    /* panels: `panel` when it has more than one value, else `experiment`, else one */
    static panel pn[MAX_PANELS];
    int np = 0;
    const char *pcol = NULL;
    const char *cands[] = {"panel", "experiment"};
    for (size_t k = 0; k < PB_ARRAY_LEN(cands) && !pcol && rc == PB_EXIT_OK; k++) {
        np = 0;
        for (int f = 0; f < nt; f++) {
            int ci = pb_csv_table_col(&t[f], cands[k]);
            for (int r = 0; ci >= 0 && r < t[f].n_rows; r++) add_panel(pn, &np, t[f].rows[r][ci]);
        }
        if (np > 1) pcol = cands[k];
    }
    if (!pcol) {
        np = 1;
        snprintf(pn[0].id, sizeof pn[0].id, "%s", "");
        pn[0].title[0] = 0;
    }
    for (int i = 0; pcol && i < np; i++)
        for (int f = 0; f < nt; f++) {
            const char *ttl = exp_cfg_str(side[f], !strcmp(pcol, "panel") ? "panel" : "name", pn[i].id, "title");
            if (ttl) { snprintf(pn[i].title, sizeof pn[i].title, "%s", ttl); break; }
        }
    char fig_title[512] = "";
    if (o.title) snprintf(fig_title, sizeof fig_title, "%s", o.title);
    else if (json_array_size(json_object_get(side[0], "experiments")) == 1 && !pcol) {
        const char *ttl = json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(side[0], "experiments"), 0), "config"), "title"));
        if (ttl) snprintf(fig_title, sizeof fig_title, "%s", ttl);
    }

    /* series and points */
    static series ser[MAX_SERIES];
    int ns = 0, gen = 0, npts = 0, cap = 0;
    point *pts = NULL;
    for (int f = 0; f < nt && rc == PB_EXIT_OK; f++) {
        int sc = pb_csv_table_col(&t[f], "system"), lc = pb_csv_table_col(&t[f], "label"),
            xc = pb_csv_table_col(&t[f], o.x), pc = pcol ? pb_csv_table_col(&t[f], pcol) : -1;
        for (int r = 0; r < t[f].n_rows; r++) {
            char **row = t[f].rows[r];
            char key[512], ttl[512];
            size_t k = (size_t)snprintf(key, sizeof key, "%d\x1f%s", f, row[sc]);
            size_t q = (size_t)snprintf(ttl, sizeof ttl, "%s", lc >= 0 && *row[lc] ? row[lc] : row[sc]);
            for (int i = 0; i < o.n_split; i++) {
                const char *v = row[pb_csv_table_col(&t[f], o.split[i])];
                if (k < sizeof key) k += (size_t)snprintf(key + k, sizeof key - k, "\x1f%s", v);
                if (q < sizeof ttl) q += (size_t)snprintf(ttl + q, sizeof ttl - q, ", %s %s", o.split[i], v);
            }
            int s = 0;
            while (s < ns && strcmp(ser[s].key, key)) s++;
            if (s == ns) {
                if (ns == MAX_SERIES) continue;
                series *S = &ser[ns++];
                memset(S, 0, sizeof *S);
                S->file = f;
                snprintf(S->key, sizeof S->key, "%s", key);
                snprintf(S->title, sizeof S->title, "%s", ttl);
                snprintf(S->sys, sizeof S->sys, "%s", row[sc]);
                S->style = style_of(row[sc], o.n_split > 0, &gen, &S->order);
                for (int e = 0; e < ns - 1; e++)   /* a series of a later file: the style of its twin */
                    if (!strcmp(ser[e].title, S->title)) { S->style = ser[e].style; S->order = ser[e].order; }
            }
            if (npts == cap) { cap = cap ? 2 * cap : 256; pts = pb_xrealloc(pts, (size_t)cap * sizeof *pts); }
            point *P = &pts[npts++];
            P->series = s;
            P->panel = pc >= 0 ? add_panel(pn, &np, row[pc]) : 0;
            P->x = *row[xc] ? strtod(row[xc], NULL) : NAN;
            for (int y = 0; y < o.n_y; y++) {
                const char *v = row[pb_csv_table_col(&t[f], o.y[y])];
                P->y[y] = *v ? strtod(v, NULL) : NAN;
            }
        }
    }
    /* --relative-to: each y over the reference's at the same file (else the first), panel, x */
    int dropped = 0;
    if (rc == PB_EXIT_OK && o.relative) {
        bool found = false;
        for (int s = 0; s < ns; s++) found |= !strcmp(ser[s].sys, o.relative);
        if (!found) {
            fprintf(stderr, "pagedbench plot: --relative-to %s: no such system in the CSVs\n", o.relative);
            rc = PB_EXIT_USAGE;
        }
        double (*ref)[MAX_Y] = pb_xmalloc((size_t)(npts + 1) * sizeof *ref);
        for (int i = 0; i < npts && rc == PB_EXIT_OK; i++) {
            const point *P = &pts[i];
            const point *R = NULL;
            for (int pass = 0; pass < 2 && !R; pass++)
                for (int j = 0; j < npts && !R; j++)
                    if (!strcmp(ser[pts[j].series].sys, o.relative) && pts[j].panel == P->panel && pts[j].x == P->x &&
                        ser[pts[j].series].file == (pass ? 0 : ser[P->series].file))
                        R = &pts[j];
            for (int y = 0; y < o.n_y; y++) ref[i][y] = R ? R->y[y] : NAN;
        }
        for (int i = 0; i < npts && rc == PB_EXIT_OK; i++)
            for (int y = 0; y < o.n_y; y++) {
                bool ok = isfinite(ref[i][y]) && ref[i][y] != 0;
                if (!ok && isfinite(pts[i].y[y])) dropped++;
                pts[i].y[y] = ok ? pts[i].y[y] / ref[i][y] : NAN;
            }
        free(ref);
        if (dropped)
            fprintf(stderr, "pagedbench plot: %d values have no %s value at their x to divide by: left out\n", dropped,
                    o.relative);
    }
    if (rc != PB_EXIT_OK) {
        for (int f = 0; f < nt; f++) { pb_csv_table_free(&t[f]); json_decref(side[f]); }
        free(pts);
        return rc;
    }
    style_generic(ser, ns);
    /* legend and drawing order: the table's, then first seen (a permutation: points keep
       their series index) */
    int ord[MAX_SERIES];
    for (int i = 0; i < ns; i++) ord[i] = i;
    for (int i = 1; i < ns; i++)
        for (int j = i; j > 0 && ser_cmp(&ser[ord[j]], &ser[ord[j - 1]]) < 0; j--) {
            int tmp = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = tmp;
        }

    /* per row: unit scale, y range */
    double scale[MAX_Y], top[MAX_Y], bot[MAX_Y], lo[MAX_Y], hi[MAX_Y];
    char ylab[MAX_Y][300];
    for (int y = 0; y < o.n_y; y++) {
        double mx = 0;
        for (int i = 0; i < npts; i++)
            if (isfinite(pts[i].y[y]) && fabs(pts[i].y[y]) > mx) mx = fabs(pts[i].y[y]);
        size_t l = strlen(o.y[y]);
        bool ms = l > 3 && !strcmp(o.y[y] + l - 3, "_ms");
        scale[y] = ms && !o.relative && (o.yunit ? !strcmp(o.yunit, "s") : mx >= 1e4) ? 1e-3 : 1;
        axis_label(o.y[y], ylab[y], sizeof ylab[y]);
        if (scale[y] != 1) {
            char *u = strstr(ylab[y], "(ms)");
            if (u) memcpy(u, "(s) ", 4);
            ylab[y][strcspn(ylab[y], ")") + 1] = 0;
        }
        if (o.relative) {   /* "TTFT p99 relative to vLLM v0.1" */
            const char *rl = o.relative;
            for (int q = 0; q < ns; q++)
                if (!strcmp(ser[q].sys, o.relative)) { rl = ser[q].title; break; }
            char tmp[300];
            int bl = (int)strcspn(ylab[y], "(");
            while (bl > 0 && ylab[y][bl - 1] == ' ') bl--;
            snprintf(tmp, sizeof tmp, "%.*s relative to %s", bl, ylab[y], rl);
            snprintf(ylab[y], sizeof ylab[y], "%s", tmp);
        }
        double minpos = INFINITY, mn = INFINITY, mxpos = -INFINITY;
        bool nonpos = false;
        for (int i = 0; i < npts; i++) {
            double v = pts[i].y[y] * scale[y];
            if (!isfinite(v)) continue;
            if (v > 0 && v < minpos) minpos = v;
            if (v > 0 && v > mxpos) mxpos = v;
            nonpos |= v <= 0;
            mn = fmin(mn, v);
        }
        top[y] = !isnan(o.ymax)                                                          ? o.ymax
                 : !strncmp(o.y[y], "normalized_latency", 18) && !o.relative && !o.logy ? 1.0
                                                                                         : NAN;
        bot[y] = !isnan(o.ymin) ? o.ymin : o.logy ? (nonpos && isfinite(minpos) ? minpos / 2 : NAN) : fmin(0, mn);
        if (o.logy) {   /* a log axis spans the data (gnuplot would widen it to whole decades) */
            lo[y] = isfinite(minpos) ? minpos / 1.2 : NAN;
            hi[y] = isfinite(mxpos) ? mxpos * 1.2 : NAN;
        } else lo[y] = hi[y] = NAN;
    }

    /* the data file: per row, panel, series one block of (x, y); then its off-scale points */
    char stem[1200];
    if (o.out) snprintf(stem, sizeof stem, "%s", o.out);
    else {
        const char *b = strrchr(o.csv[0], '/');
        b = b ? b + 1 : o.csv[0];
        snprintf(stem, sizeof stem, "%s/plots/%.*s-%s%s", PB_OUT_DIR, (int)(strlen(b) > 4 ? strlen(b) - 4 : strlen(b)),
                 b, o.y[0], o.relative ? "-relative" : "");
    }
    char gp[1300], dat[1400];
    FILE *f = NULL, *d = NULL;
    if (pb_cli_make_parent(&CLI, stem) == 0) {
        if (o.script) {
            snprintf(gp, sizeof gp, "%s", o.script);
            f = fopen(gp, "w");
        } else {
            snprintf(gp, sizeof gp, "/tmp/pagedbench_plot_XXXXXX");
            int fd = mkstemp(gp);
            f = fd >= 0 ? fdopen(fd, "w") : NULL;
        }
        snprintf(dat, sizeof dat, "%s.dat", gp);
        d = f ? fopen(dat, "w") : NULL;
    }
    if (!f || !d) {
        fprintf(stderr, "pagedbench plot: cannot write the gnuplot program or data (%s): %s\n", gp, strerror(errno));
        if (f) fclose(f);
        for (int q = 0; q < nt; q++) { pb_csv_table_free(&t[q]); json_decref(side[q]); }
        free(pts);
        return PB_EXIT_RUNTIME;
    }
    /* index of block (y, panel, series, kind): kind 0 the line, 1 off-scale above, 2 below */
    int *blk = pb_xcalloc((size_t)o.n_y * np * ns * 3, sizeof *blk);
    int nblk = 0, offscale = 0;
    for (int y = 0; y < o.n_y; y++)
        for (int p = 0; p < np; p++)
            for (int s = 0; s < ns; s++)
                for (int kind = 0; kind < 3; kind++) {
                    int *b = &blk[((y * np + p) * ns + s) * 3 + kind];
                    *b = -1;
                    int rows = 0;
                    for (int i = 0; i < npts; i++) {
                        const point *P = &pts[i];
                        if (P->panel != p || P->series != s) continue;
                        double v = P->y[y] * scale[y];
                        if (!isfinite(v) || !isfinite(P->x)) continue;
                        bool above = !isnan(top[y]) && v > top[y], below = (!isnan(bot[y]) && v < bot[y]) || (o.logy && v <= 0);
                        if ((kind == 0 && (above || below)) || (kind == 1 && !above) || (kind == 2 && (!below || above)))
                            continue;
                        if (!rows) fprintf(d, "# row %d panel %d series %d kind %d\n", y, p, s, kind);
                        put(d, P->x);
                        fputc(' ', d);
                        double edge = kind == 1 ? top[y] : kind == 2 ? bot[y] : v;
                        put(d, edge);
                        if (kind) {   /* the value, and where its arrow starts: 6% of the axis inside */
                            double span = o.logy ? 0 : top[y] - bot[y];
                            double start = o.logy ? (kind == 1 ? edge / 1.3 : edge * 1.3)
                                                  : edge + (kind == 1 ? -0.06 : 0.06) * span;
                            fprintf(d, " \"%.3g\" ", v);
                            put(d, start);
                        }
                        fputc('\n', d);
                        rows++;
                    }
                    if (rows) {
                        fprintf(d, "\n\n");
                        *b = nblk++;
                        if (kind) offscale += rows;
                    }
                }
    fclose(d);

    /* the legend strip: gnuplot fits as many entries in a row as the widest allows */
    int entries = nt - 1 + (offscale > 0), widest = offscale ? 24 : 0;
    for (int q = 0; q < ns; q++) {
        if (ser[q].file) continue;
        entries++;
        widest = PB_MAX(widest, (int)strlen(ser[q].title) + (o.relative ? 12 : 0));
    }
    for (int q = 1; q < nt; q++) widest = PB_MAX(widest, (int)strlen(o.csv[q]) + 16);
    int ncol = np <= 4 ? np : (np % 3 == 0 ? 3 : 4), prow = (np + ncol - 1) / ncol, nrow = prow * o.n_y;
    double pw = ncol == 1 ? 4.6 : ncol == 2 ? 3.2 : 3.0, ph = ncol == 1 ? 3.0 : 2.3, win = pw * ncol;
    int per_row = PB_MAX(1, (int)(win * 160 / ((widest + 7) * 8.5)));
    int keyrows = (entries + per_row - 1) / per_row;
    double titleh = fig_title[0] ? 0.32 : 0, keyh = 0.21 * keyrows + 0.12 + titleh;   /* inches */
    double hin = ph * nrow + keyh;
    fprintf(f, "# generated by pagedbench plot\nSTYLE = ");
    gq(f, PB_SOURCE_DIR "/plots/style.gp");
    fprintf(f, "\ndat = ");
    gq(f, dat);
    fprintf(f, "\nout = ");
    gq(f, stem);
    fprintf(f, "\nquick = %d\nload STYLE\nKEYF = %.6f\n", quick, keyh / hin);
    fprintf(f, "do for [t in \"png pdf\"] {\n");
    fprintf(f, "    if (t eq \"png\") { eval png(%d, %d) } else { eval pdf(%g, %g) }\n", (int)(win * 160),
            (int)(hin * 160), win, hin);
    fprintf(f, "    load STYLE\n    set datafile separator whitespace\n    set output out . '.' . t\n");
    fprintf(f, "    set multiplot\n");
    if (quick) fprintf(f, "    eval QUICK_WATERMARK\n");
    if (fig_title[0]) {
        fprintf(f, "    set label 90 ");
        gq(f, fig_title);
        fprintf(f, " at screen 0.5, %.6f center font (t eq 'png' ? ',16' : ',9') front noenhanced\n", 1 - 0.16 / hin);
    }
    for (int y = 0; y < o.n_y; y++)
        for (int p = 0; p < np; p++) {
            int r = y * prow + p / ncol, c = p % ncol;
            fprintf(f, "    set origin %.6f, (1 - KEYF) * %.6f\n    set size %.6f, (1 - KEYF) / %d.0\n",
                    (double)c / ncol, (double)(nrow - 1 - r) / nrow, 1.0 / ncol, nrow);
            fprintf(f, "    set title ");
            gq(f, y == 0 || o.n_y > 1 ? pn[p].title : "");
            fprintf(f, " offset 0, -0.6 noenhanced\n    unset key\n");
            fprintf(f, "    set xlabel ");
            char xl[256];
            axis_label(o.x, xl, sizeof xl);
            gq(f, r == nrow - 1 || (p + ncol >= np && y == o.n_y - 1) ? xl : "");
            fprintf(f, " noenhanced\n    set ylabel ");
            gq(f, c == 0 ? ylab[y] : "");
            fprintf(f, " noenhanced\n");
            if (o.logx) fprintf(f, "    set logscale x 2\n");
            else fprintf(f, "    unset logscale x\n");
            if (o.logy && o.relative && isfinite(lo[y]) && isfinite(hi[y])) {
                /* ratios: tics at powers of 2, or of sqrt 2 over a narrow range */
                double step = log2(hi[y] / lo[y]) < 3 ? 0.5 : 1;
                double kb = floor(log2(lo[y]) / step) * step, kt = ceil(log2(hi[y]) / step) * step;
                lo[y] = pow(2, kb);   /* the axis ends on tics */
                hi[y] = pow(2, kt);
                fprintf(f, "    set logscale y 2; set format y '%%g'; set ytics (");
                for (double k = kb; k <= kt + 1e-9; k += step) fprintf(f, "%s%.2g", k > kb ? ", " : "", pow(2, k));
                fprintf(f, ")\n");
            } else if (o.logy && o.relative) fprintf(f, "    set logscale y 2; set ytics 2; set format y '%%g'\n");
            else if (o.logy) fprintf(f, "    set logscale y; set ytics autofreq; set format y '%%g'\n");
            else fprintf(f, "    unset logscale y; set ytics autofreq; set format y '%%g'\n");
            fprintf(f, "    set yrange [");
            if (!isnan(bot[y])) fprintf(f, "%.17g", bot[y]);
            else if (!isnan(lo[y])) fprintf(f, "%.17g", lo[y]);
            else fprintf(f, "*");
            fprintf(f, ":");
            if (!isnan(top[y])) fprintf(f, "%.17g", top[y]);
            else if (!isnan(hi[y])) fprintf(f, "%.17g", hi[y]);
            else fprintf(f, "*");
            fprintf(f, "]\n    set xrange [%s:*]\n", o.logx ? "*" : "0");
            fprintf(f, "    set offsets 0, 0, %s, 0\n", !isnan(top[y]) ? "0" : "graph 0.05");
            int nplot = 0, stacked = 0;   /* off-scale labels of several series: one under another */
            for (int si = 0; si < ns; si++) {
                int s = ord[si];
                int b0 = blk[((y * np + p) * ns + s) * 3], b1 = blk[((y * np + p) * ns + s) * 3 + 1],
                    b2 = blk[((y * np + p) * ns + s) * 3 + 2];
                int ls = ser[s].style + (ser[s].file > 0 ? 10 : 0);
                if (ser[s].file > 0 && ser[s].style > 20) ls = ser[s].style;   /* generic: dashed below */
                const char *dash = ser[s].file > 0 ? " dt 2" : "";
                if (b0 >= 0)
                    fprintf(f, "%s dat index %d using 1:2 with linespoints ls %d%s notitle",
                            nplot++ ? ", \\\n        " : "    plot", b0, ls, dash);
                for (int kind = 1; kind <= 2; kind++) {
                    int b = kind == 1 ? b1 : b2;
                    if (b < 0) continue;
                    /* an arrow to the edge, the value along it (several series: side by side) */
                    fprintf(f, "%s dat index %d using 1:4:(0):($2 - $4) with vectors head filled size screen 0.008,30 "
                               "ls %d notitle, \\\n        dat index %d using 1:4:3 with labels rotate by 90 %s "
                               "offset %.2f, %s font OFF_FONT tc ls %d notitle",
                            nplot++ ? ", \\\n        " : "    plot", b, ls, b, kind == 1 ? "right" : "left",
                            -0.6 + 0.9 * stacked, kind == 1 ? "-0.2" : "0.2", ls);
                }
                stacked += b1 >= 0 || b2 >= 0;
            }
            if (!nplot) fprintf(f, "    plot NaN notitle");
            fprintf(f, "\n");
        }
    /* the one legend, above the panels */
    fprintf(f, "    set origin 0, %.6f\n    set size 1, %.6f\n", 1 - keyh / hin, (keyh - titleh) / hin);
    fprintf(f, "    unset title; unset xlabel; unset ylabel; unset logscale; unset label 90\n");
    fprintf(f, "    set border 0; unset tics; unset grid; set xrange [0:1]; set yrange [0:1]\n");
    fprintf(f, "    set lmargin 0; set rmargin 0; set tmargin 0; set bmargin 0\n");
    fprintf(f, "    set key center center horizontal Left reverse samplen 2 width 1 noenhanced\n");
    fprintf(f, "    plot ");
    int n = 0;
    for (int si = 0; si < ns; si++) {
        int s = ord[si];
        if (ser[s].file > 0) continue;
        fprintf(f, "%sNaN with linespoints ls %d title ", n++ ? ", " : "", ser[s].style);
        char ttl[300];
        snprintf(ttl, sizeof ttl, "%s%s", ser[s].title,
                 o.relative && !strcmp(ser[s].sys, o.relative) ? " (reference)" : "");
        gq(f, ttl);
    }
    for (int q = 1; q < nt; q++) {   /* each further CSV: one entry for its line style */
        const char *b = strrchr(o.csv[q], '/');
        char ttl[300];
        snprintf(ttl, sizeof ttl, "dashed, hollow: %s", b ? b + 1 : o.csv[q]);
        fprintf(f, "%sNaN with linespoints lc rgb '#606060' dt 2 pt 6 title ", n++ ? ", " : "");
        gq(f, ttl);
    }
    if (offscale) {
        fprintf(f, "%sNaN with vectors head filled lc rgb '#606060' title ", n++ ? ", " : "");
        gq(f, "off the axis (its value)");
    }
    if (!n) fprintf(f, "NaN notitle");
    fprintf(f, "\n    unset multiplot\n}\n");
    fclose(f);
    free(blk);
    for (int q = 0; q < nt; q++) { pb_csv_table_free(&t[q]); json_decref(side[q]); }
    free(pts);

    char cmd[3000];
    snprintf(cmd, sizeof cmd, "gnuplot '%s'", gp);
    int st_gp = system(cmd);
    if (st_gp != 0) {
        fprintf(stderr, "pagedbench plot: gnuplot failed (%s); the program is kept at %s\n",
                st_gp == -1 || (WIFEXITED(st_gp) && WEXITSTATUS(st_gp) == 127) ? "is gnuplot installed? apt-get install gnuplot-nox"
                                                                                 : "see above", gp);
        return PB_EXIT_RUNTIME;
    }
    if (!o.script) {
        unlink(gp);
        unlink(dat);
    }
    printf("%s.png\n%s.pdf\n", stem, stem);
    return PB_EXIT_OK;
}
