/* cmd_plot.c -- `pagedbench plot`: a figure of any results CSV, in the paper's style.
 *
 *   pagedbench plot results/my_exp.csv                        # normalized latency vs request rate
 *   pagedbench plot results/my_exp.csv --x=block_size --y=ttft_p99_ms --out=plots/out/mine
 * Reads <results>/<name>.csv (runner.h; docs/outputs.md), draws one line per series
 * (the `system` column, plus any --series columns) in one panel per `panel` value
 * (or per `experiment` when there is no panel column or one panel), and writes
 * <out>.png and <out>.pdf with gnuplot through plots/style.gp, the style every
 * figure script shares: the paper's five systems keep their colours and markers,
 * any other series (a new policy, a new system) takes the next of eight more.
 * Axis labels carry units from the column names (docs/outputs.md).  Rows must be
 * sorted by x within a series, as the runner writes them.
 * Prints the files written on stdout.  Exit: 0 ok, 1 gnuplot failed, 2 usage or
 * unreadable CSV / unknown column. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "pb.h"
#include "report.h"   /* pb_csv_table */

static void usage(FILE *f) {
    fprintf(f,
            "usage: pagedbench plot RESULTS.csv [options]\n"
            "  --x COL        x column (default request_rate; else the first sweep axis, from the\n"
            "                 CSV's .json sidecar)\n"
            "  --y COL        y column (default normalized_latency)\n"
            "  --series COL   split each system's line by this column too (repeatable)\n"
            "  --ymax V       top of the y axis; larger values sit on the edge (default 1 for\n"
            "                 normalized latency, as the paper's figures; else automatic)\n"
            "  --logx         logarithmic x axis (base 2: block sizes, widths)\n"
            "  --title TEXT   figure title (default: the panel or experiment)\n"
            "  --out STEM     output path without extension (default plots/out/<csv name>-<y>)\n"
            "  --script FILE  keep the gnuplot program there (to restyle by hand)\n"
            "  --version      print the version and exit\n"
            "  -h, --help     this text\n"
            "Writes STEM.png and STEM.pdf (gnuplot, plots/style.gp) and prints their paths.\n"
            "Columns and units: docs/outputs.md.  Exit: 0 ok, 1 gnuplot failed, 2 usage error.\n");
}

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
    /* ttft_p99_ms -> "ttft p99 (ms)" */
    static const char *const UNITS[][2] = {{"_ms", "ms"}, {"_per_s", "/s"}, {"_s", "s"}, {"_pct", "%"},
                                           {"_gib", "GiB"}, {"_us", "us"}};
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
    base[0] = (char)(base[0] >= 'a' && base[0] <= 'z' ? base[0] - 32 : base[0]);
    if (!strncmp(base, "Ttft", 4)) memcpy(base, "TTFT", 4);
    if (!strncmp(base, "Tpot", 4)) memcpy(base, "TPOT", 4);
    if (!strncmp(base, "Itl", 3)) memcpy(base, "ITL", 3);
    if (!strncmp(base, "E2e", 3)) memcpy(base, "E2E", 3);
    if (unit) snprintf(buf, n, "%s (%s)", base, unit);
    else snprintf(buf, n, "%s", base);
}

/* s as a gnuplot single-quoted literal (' doubled) into buf */
static void sq(char *buf, size_t n, const char *s) {
    size_t k = 0;
    if (n < 3) { if (n) buf[0] = 0; return; }
    buf[k++] = '\'';
    for (; *s && k + 3 < n; s++) {
        if (*s == '\'') buf[k++] = '\'';
        buf[k++] = *s;
    }
    buf[k++] = '\'';
    buf[k] = 0;
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

/* The first sweep axis of the experiment that wrote csv, from its JSON sidecar
 * (<name>.json beside <name>.csv: experiments[0].config.sweep[0].axis); NULL if none. */
static const char *first_axis(const char *csv, char *buf, size_t n) {
    char path[1200];
    snprintf(path, sizeof path, "%s", csv);
    size_t l = strlen(path);
    if (l < 4 || strcmp(path + l - 4, ".csv")) return NULL;
    snprintf(path + l - 4, sizeof path - (l - 4), ".json");
    json_t *j = json_load_file(path, 0, NULL);
    json_t *cfg = json_object_get(json_array_get(json_object_get(j, "experiments"), 0), "config");
    const char *a = json_string_value(json_object_get(json_array_get(json_object_get(cfg, "sweep"), 0), "axis"));
    if (a) snprintf(buf, n, "%s", a);
    json_decref(j);
    return a ? buf : NULL;
}

/* style index of a series: the paper's systems 1..5 (plots/style.gp), others 21..28 */
static int style_of(const char *sys, bool split, int *next_generic) {
    static const char *const PAPER[] = {"ft", "orca_max", "orca_pow2", "orca_oracle", "vllm"};
    if (!split)
        for (int i = 0; i < 5; i++)
            if (!strcmp(sys, PAPER[i])) return i + 1;
    return 21 + ((*next_generic)++ % 8);
}

#define MAX_SERIES 64
#define MAX_PANELS 32
#define MAX_SPLIT 4

typedef struct {
    char key[512];      /* system + split values, '\x1f'-joined: the match */
    char title[512];
    char sys[128];
} series;

static int distinct_add(char (*v)[512], int *n, int max, const char *s) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(v[i], s)) return i;
    if (*n >= max) return -1;
    snprintf(v[*n], 512, "%s", s);
    return (*n)++;
}

int pb_cmd_plot(int argc, char **argv) {
    const char *x = NULL, *y = "normalized_latency", *out = NULL, *title = NULL, *script = NULL;
    const char *split[MAX_SPLIT];
    int n_split = 0;
    double ymax = NAN;
    bool logx = false;
    enum { O_X = 256, O_Y, O_SERIES, O_YMAX, O_TITLE, O_OUT, O_SCRIPT, O_VERSION, O_LOGX };
    static const struct option LONG[] = {{"x", required_argument, NULL, O_X},
                                         {"y", required_argument, NULL, O_Y},
                                         {"series", required_argument, NULL, O_SERIES},
                                         {"ymax", required_argument, NULL, O_YMAX},
                                         {"title", required_argument, NULL, O_TITLE},
                                         {"out", required_argument, NULL, O_OUT},
                                         {"script", required_argument, NULL, O_SCRIPT},
                                         {"version", no_argument, NULL, O_VERSION},
                                         {"logx", no_argument, NULL, O_LOGX},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", LONG, NULL)) != -1) {
        char *end;
        switch (c) {
        case O_X: x = optarg; break;
        case O_Y: y = optarg; break;
        case O_SERIES:
            if (n_split == MAX_SPLIT) { fprintf(stderr, "plot: at most %d --series\n", MAX_SPLIT); return PB_EXIT_USAGE; }
            split[n_split++] = optarg;
            break;
        case O_YMAX:
            ymax = strtod(optarg, &end);
            if (*end || !(ymax > 0)) { fprintf(stderr, "plot: --ymax needs a positive number\n"); return PB_EXIT_USAGE; }
            break;
        case O_TITLE: title = optarg; break;
        case O_OUT: out = optarg; break;
        case O_SCRIPT: script = optarg; break;
        case O_LOGX: logx = true; break;
        case O_VERSION: printf("pagedbench %s\n", pb_git_rev()); return PB_EXIT_OK;
        case 'h': usage(stdout); return PB_EXIT_OK;
        case ':': fprintf(stderr, "plot: option '%s' needs a value\n", argv[optind - 1]); return PB_EXIT_USAGE;
        default: fprintf(stderr, "plot: unknown option '%s'\n", argv[optind - 1]); usage(stderr); return PB_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) { usage(stderr); return PB_EXIT_USAGE; }
    const char *csv = argv[optind];

    pb_csv_table t;
    pb_status st = pb_csv_table_load(csv, &t);
    if (st) {
        fprintf(stderr, "plot: %s: %s\n", csv, st == PB_ERR_IO ? strerror(errno) : "a row has more cells than the header");
        return PB_EXIT_USAGE;
    }
    int rc = PB_EXIT_OK;
    static char axis[128];
    if (!x) x = pb_csv_table_col(&t, "request_rate") >= 0 ? "request_rate" : first_axis(csv, axis, sizeof axis);
    const char *need[3 + MAX_SPLIT] = {"system", x ? x : "", y};
    for (int i = 0; i < n_split; i++) need[3 + i] = split[i];
    if (!x) {
        fprintf(stderr, "plot: %s has no request_rate column and its .json names no sweep axis: name the x "
                        "axis with --x COL\n", csv);
        rc = PB_EXIT_USAGE;
    }
    for (int i = 0; i < 3 + n_split && rc == PB_EXIT_OK; i++)
        if (pb_csv_table_col(&t, need[i]) < 0) {
            fprintf(stderr, "plot: %s: no column '%s' (columns: docs/outputs.md)\n", csv, need[i]);
            rc = PB_EXIT_USAGE;
        }
    if (rc == PB_EXIT_OK && t.n_rows == 0) {
        fprintf(stderr, "plot: %s: no rows\n", csv);
        rc = PB_EXIT_USAGE;
    }
    if (rc != PB_EXIT_OK) { pb_csv_table_free(&t); return rc; }

    /* panels: `panel` when it has more than one value, else `experiment`, else one */
    static char panels[MAX_PANELS][512];
    int np = 0;
    const char *pcol = NULL;
    const char *cands[] = {"panel", "experiment"};
    for (size_t k = 0; k < PB_ARRAY_LEN(cands) && !pcol; k++) {
        int ci = pb_csv_table_col(&t, cands[k]);
        if (ci < 0) continue;
        np = 0;
        for (int r = 0; r < t.n_rows; r++) distinct_add(panels, &np, MAX_PANELS, t.rows[r][ci]);
        if (np > 1) pcol = cands[k];
    }
    if (!pcol) np = 1;
    /* series: system (+ split columns), in first-seen order; title from `label` */
    static series ser[MAX_SERIES];
    int ns = 0, sc = pb_csv_table_col(&t, "system"), lc = pb_csv_table_col(&t, "label");
    for (int r = 0; r < t.n_rows; r++) {
        char key[512], ttl[512];
        size_t k = (size_t)snprintf(key, sizeof key, "%s", t.rows[r][sc]);
        size_t q = (size_t)snprintf(ttl, sizeof ttl, "%s", lc >= 0 && *t.rows[r][lc] ? t.rows[r][lc] : t.rows[r][sc]);
        for (int i = 0; i < n_split; i++) {
            const char *v = t.rows[r][pb_csv_table_col(&t, split[i])];
            if (k < sizeof key) k += (size_t)snprintf(key + k, sizeof key - k, "\x1f%s", v);
            if (q < sizeof ttl) q += (size_t)snprintf(ttl + q, sizeof ttl - q, ", %s %s", split[i], v);
        }
        int i = 0;
        while (i < ns && strcmp(ser[i].key, key)) i++;
        if (i == ns && ns < MAX_SERIES) {
            snprintf(ser[ns].key, sizeof ser[ns].key, "%s", key);
            snprintf(ser[ns].title, sizeof ser[ns].title, "%s", ttl);
            snprintf(ser[ns].sys, sizeof ser[ns].sys, "%s", t.rows[r][sc]);
            ns++;
        }
    }
    if (isnan(ymax) && !strncmp(y, "normalized_latency", 18)) ymax = 1.0;

    char stem[1200];
    if (out) snprintf(stem, sizeof stem, "%s", out);
    else {
        const char *b = strrchr(csv, '/');
        b = b ? b + 1 : csv;
        char name[512];
        snprintf(name, sizeof name, "%s", b);
        size_t l = strlen(name);
        if (l > 4 && !strcmp(name + l - 4, ".csv")) name[l - 4] = 0;
        snprintf(stem, sizeof stem, "plots/out/%s-%s", name, y);
    }
    char xl[256], yl[256];
    axis_label(x, xl, sizeof xl);
    axis_label(y, yl, sizeof yl);

    /* the output folder */
    char dir[1200];
    snprintf(dir, sizeof dir, "%s", stem);
    for (char *q = dir + 1; *q; q++)
        if (*q == '/') {
            *q = 0;
            if (mkdir(dir, 0777) && errno != EEXIST) {
                fprintf(stderr, "plot: cannot create %s: %s\n", dir, strerror(errno));
                pb_csv_table_free(&t);
                return PB_EXIT_RUNTIME;
            }
            *q = '/';
        }

    /* the gnuplot program */
    char gp[1200] = "/tmp/pagedbench_plot_XXXXXX";
    FILE *f;
    if (script) {
        snprintf(gp, sizeof gp, "%s", script);
        f = fopen(gp, "w");
    } else {
        int fd = mkstemp(gp);
        f = fd >= 0 ? fdopen(fd, "w") : NULL;
    }
    if (!f) {
        fprintf(stderr, "plot: cannot create %s: %s\n", gp, strerror(errno));
        pb_csv_table_free(&t);
        return PB_EXIT_RUNTIME;
    }
    int ncol = np <= 3 ? np : 3, nrow = (np + ncol - 1) / ncol;
    fprintf(f, "# generated by pagedbench plot\nSTYLE = ");
    gq(f, PB_SOURCE_DIR "/plots/style.gp");
    fprintf(f, "\ndata = ");
    gq(f, csv);
    fprintf(f, "\nout = ");
    gq(f, stem);
    fprintf(f, "\nload STYLE\n");
    fprintf(f, "do for [t in \"png pdf\"] {\n");
    fprintf(f, "    if (t eq \"png\") { eval png(%d, %d) } else { eval pdf(%g, %g) }\n", 520 * ncol, 420 * nrow + 40,
            3.4 * ncol, 2.6 * nrow + 0.2);
    fprintf(f, "    load STYLE\n    set datafile columnheaders\n    set output out . '.' . t\n");
    fprintf(f, "    set multiplot layout %d, %d\n", nrow, ncol);
    fprintf(f, "    set xlabel ");
    gq(f, xl);
    fprintf(f, "\n    set ylabel ");
    gq(f, yl);
    /* the legend above the panels, so it never hides a curve */
    fprintf(f, "\n    set key outside top center horizontal Left reverse samplen 2 width 1\n");
    if (logx) fprintf(f, "    set logscale x 2\n");
    if (!isnan(ymax)) fprintf(f, "    set yrange [0:%.17g]\n", ymax);
    else fprintf(f, "    set yrange [0:*]\n");
    fprintf(f, "    set xrange [*:*]\n");
    char yexpr[400], ycol[300], xcol[300];
    sq(ycol, sizeof ycol, y);
    sq(xcol, sizeof xcol, x);
    if (isnan(ymax)) snprintf(yexpr, sizeof yexpr, "column(%s)", ycol);
    else snprintf(yexpr, sizeof yexpr, "clip(column(%s), %.17g)", ycol, ymax);
    for (int p = 0; p < np; p++) {
        char ttl[600];
        if (title) snprintf(ttl, sizeof ttl, "%s%s%s", title, np > 1 ? " " : "", np > 1 ? panels[p] : "");
        else snprintf(ttl, sizeof ttl, "%s", pcol ? panels[p] : "");
        fprintf(f, "    set title ");
        gq(f, ttl);
        fprintf(f, "\n    plot ");
        int gen = 0;
        for (int s = 0; s < ns; s++) {
            int ls = style_of(ser[s].sys, n_split > 0, &gen);
            /* the rows of this series in this panel: system, panel and split values */
            char cond[4096], lit[600];
            size_t k = 0;
            sq(lit, sizeof lit, ser[s].sys);
            k += (size_t)snprintf(cond + k, sizeof cond - k, "strcol('system') eq %s", lit);
            if (pcol) {
                sq(lit, sizeof lit, panels[p]);
                k += (size_t)snprintf(cond + k, sizeof cond - k, " && strcol('%s') eq %s", pcol, lit);
            }
            const char *v = strchr(ser[s].key, '\x1f');
            for (int i = 0; i < n_split && v && k < sizeof cond; i++) {
                const char *e = strchr(v + 1, '\x1f');
                char val[512], col[300];
                snprintf(val, sizeof val, "%.*s", e ? (int)(e - v - 1) : (int)strlen(v + 1), v + 1);
                sq(lit, sizeof lit, val);
                sq(col, sizeof col, split[i]);
                k += (size_t)snprintf(cond + k, sizeof cond - k, " && strcol(%s) eq %s", col, lit);
                v = e;
            }
            fprintf(f, "%sdata using ((%s) ? column(%s) : NaN):((%s) ? %s : NaN) with linespoints ls %d title ",
                    s ? ", \\\n         " : "", cond, xcol, cond, yexpr, ls);
            gq(f, ser[s].title);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "    unset multiplot\n}\n");
    fclose(f);
    pb_csv_table_free(&t);

    char cmd[1400];
    snprintf(cmd, sizeof cmd, "gnuplot '%s'", gp);
    int st_gp = system(cmd);
    if (st_gp != 0) {
        fprintf(stderr, "plot: gnuplot failed (%s); the program is kept at %s\n",
                st_gp == -1 || (WIFEXITED(st_gp) && WEXITSTATUS(st_gp) == 127) ? "is gnuplot installed? apt-get install gnuplot-nox"
                                                                                 : "see above", gp);
        return PB_EXIT_RUNTIME;
    }
    if (!script) unlink(gp);
    printf("%s.png\n%s.pdf\n", stem, stem);
    return 0;
}
