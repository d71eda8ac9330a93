/* cmd_compare.c -- `pagedbench compare A B`: metric-by-metric differences of two result files.
 *
 *   pagedbench compare out/fig19b.csv results/fig19b.csv
 *   pagedbench compare out/vllm/fig19b/<point>.json vllm-run.json --tolerance 5
 *
 * A and B may each be
 *   - a results CSV of ours (<name>.csv): a point per row, keyed by its experiment, system,
 *     the sweep axes (named by the <name>.json beside it; without one, every column that is
 *     not a number, and request_rate), the other numeric columns its metrics;
 *   - a results JSON of ours (<name>.json): points[] with experiment, system, axes, metrics;
 *   - a JSON in vLLM bench serve's --save-result layout (ours, run --vllm-json's files, or
 *     vLLM's own), one object, or one per line (--append-result): a point each, keyed by
 *     label and request rate, its numeric fields the metrics.
 * vLLM's field names are read as ours (vllm_layout.h: mean_ttft_ms = ttft_mean_ms,
 * request_throughput = request_throughput_per_s, ...) when the other file is ours, so a
 * vLLM run compares with our CSV.  Two single-point files are paired whatever their keys.
 * Each metric both points have is compared: diff = B - A, diff% = diff / |A| (0 when both
 * are 0); a value missing or not a number on one side differs.
 * Prints the points' differing metrics (all of them with --all), then a summary line;
 * --tolerance P makes the exit status 1 when some |diff%| exceeds P, or a point is on
 * one side only.  Exit status otherwise 0; 2 for unreadable or unrecognised files. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "pb.h"
#include "report.h"        /* pb_csv_table, pb_results_sidecar_axes */
#include "vllm_layout.h"   /* pb_vllm_field_to_ours */

#define MAX_KEYS 24
typedef struct {
    char key[512];                 /* the components, "name=value" space-separated (shown)   */
    int nk;
    char kname[MAX_KEYS][64], kval[MAX_KEYS][128];   /* what identifies the point           */
    int n;
    char **name;
    double *value;
} cpoint;

typedef struct {
    cpoint *p;
    int n;
    bool vllm;   /* the file is in vLLM's layout (its metric names are vLLM's) */
} ctable;

static void point_add(cpoint *p, const char *name, double v) {
    p->name = pb_xrealloc(p->name, (size_t)(p->n + 1) * sizeof *p->name);
    p->value = pb_xrealloc(p->value, (size_t)(p->n + 1) * sizeof *p->value);
    p->name[p->n] = pb_xstrdup(name);
    p->value[p->n++] = v;
}

static cpoint *table_add(ctable *t) {
    t->p = pb_xrealloc(t->p, (size_t)(t->n + 1) * sizeof *t->p);
    cpoint *p = &t->p[t->n++];
    memset(p, 0, sizeof *p);
    return p;
}

/* A component of the point's identity (shown in its key when `shown`). */
static void key_add(cpoint *p, const char *name, const char *val, bool shown) {
    if (p->nk == MAX_KEYS) return;
    snprintf(p->kname[p->nk], sizeof p->kname[0], "%s", name);
    snprintf(p->kval[p->nk], sizeof p->kval[0], "%s", val);
    p->nk++;
    size_t l = strlen(p->key);
    if (shown && l < sizeof p->key) snprintf(p->key + l, sizeof p->key - l, "%s%s=%s", l ? " " : "", name, val);
}

static void table_free(ctable *t) {
    for (int i = 0; i < t->n; i++) {
        for (int k = 0; k < t->p[i].n; k++) free(t->p[i].name[k]);
        free(t->p[i].name);
        free(t->p[i].value);
    }
    free(t->p);
    memset(t, 0, sizeof *t);
}

static bool is_number(const char *s, double *v) {
    char *end;
    if (!*s) return false;
    errno = 0;
    *v = strtod(s, &end);
    return !*end && !errno;
}

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static pb_status load_csv(const char *path, ctable *t, char *err, size_t errn) {
    pb_csv_table c;
    if (pb_csv_table_load(path, &c)) {
        snprintf(err, errn, "%s: cannot read as a results CSV", path);
        return PB_ERR_INVALID;
    }
    char axes[16][64];
    int na = pb_results_sidecar_axes(path, axes, 16);
    bool *is_key = pb_xcalloc((size_t)c.n_cols + 1, sizeof *is_key);
    for (int k = 0; k < c.n_cols; k++) {
        const char *col = c.cols[k];
        bool key = !strcmp(col, "experiment") || !strcmp(col, "system");
        if (na >= 0)
            for (int a = 0; a < na; a++) key |= !strcmp(col, axes[a]);
        else {   /* no sidecar: the columns that are not numbers, and request_rate */
            key |= !strcmp(col, "request_rate");
            for (int r = 0; r < c.n_rows && !key; r++) {
                double v;
                key = *c.rows[r][k] && !is_number(c.rows[r][k], &v);
            }
        }
        is_key[k] = key;
    }
    for (int r = 0; r < c.n_rows; r++) {
        cpoint *p = table_add(t);
        for (int k = 0; k < c.n_cols; k++)
            if (is_key[k]) key_add(p, c.cols[k], c.rows[r][k], true);
        for (int k = 0; k < c.n_cols; k++) {
            double v;
            if (is_key[k]) continue;
            if (is_number(c.rows[r][k], &v)) point_add(p, c.cols[k], v);
            else if (!*c.rows[r][k]) point_add(p, c.cols[k], NAN);
        }
    }
    free(is_key);
    pb_csv_table_free(&c);
    return PB_OK;
}

/* Every numeric field of a vLLM --save-result object (lists and strings skipped). */
/* Every numeric field of a vLLM --save-result object (lists and strings skipped); its
 * identity: label (as system, unless the file names its system), request_rate and the other
 * scalars --metadata may have added (ours: experiment, system, the sweep axes). */
static void vllm_point(ctable *t, json_t *o) {
    cpoint *p = table_add(t);
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        char val[128];
        if (json_is_string(v)) snprintf(val, sizeof val, "%s", json_string_value(v));
        else if (json_is_number(v)) snprintf(val, sizeof val, "%.17g", json_number_value(v));
        else continue;
        bool shown = !strcmp(k, "label") || !strcmp(k, "request_rate") || !strcmp(k, "experiment") ||
                     !strcmp(k, "system");
        key_add(p, k, val, shown);
    }
    const char *label = json_string_value(json_object_get(o, "label"));
    if (label && !json_object_get(o, "system")) key_add(p, "system", label, false);
    json_object_foreach(o, k, v) {
        if (json_is_number(v)) point_add(p, k, json_number_value(v));
        else if (json_is_null(v) && strcmp(k, "max_concurrency")) point_add(p, k, NAN);
    }
}

static pb_status load_json(const char *path, ctable *t, char *err, size_t errn) {
    json_error_t je;
    json_t *j = json_load_file(path, JSON_DISABLE_EOF_CHECK, &je);
    if (j && json_object_get(j, "points") && json_object_get(j, "format")) {   /* ours */
        size_t i;
        json_t *pt;
        json_array_foreach(json_object_get(j, "points"), i, pt) {
            cpoint *p = table_add(t);
            const char *ex = json_string_value(json_object_get(pt, "experiment"));
            const char *sy = json_string_value(json_object_get(pt, "system"));
            key_add(p, "experiment", ex ? ex : "", true);
            key_add(p, "system", sy ? sy : "", true);
            const char *k;
            json_t *v;
            json_object_foreach(json_object_get(pt, "axes"), k, v) {
                char val[64];
                snprintf(val, sizeof val, "%.17g", json_number_value(v));
                key_add(p, k, val, true);
            }
            json_object_foreach(json_object_get(pt, "metrics"), k, v) point_add(p, k, json_is_number(v) ? json_number_value(v) : NAN);
        }
        json_decref(j);
        return PB_OK;
    }
    json_decref(j);
    /* vLLM's layout: one object, or one per line */
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errn, "%s: %s", path, strerror(errno));
        return PB_ERR_IO;
    }
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, bad = 0;
    pb_sbuf all = {0};
    while (getline(&line, &cap, f) >= 0) pb_sbuf_printf(&all, "%s", line);
    free(line);
    fclose(f);
    const char *s = all.s ? all.s : "";
    size_t off = 0, len = all.len;
    while (off < len) {
        while (off < len && (s[off] == ' ' || s[off] == '\n' || s[off] == '\r' || s[off] == '\t')) off++;
        if (off >= len) break;
        lineno++;
        json_t *o = json_loadb(s + off, len - off, JSON_DISABLE_EOF_CHECK, &je);
        if (!json_is_object(o)) {
            snprintf(err, errn, "%s:%d:%d: not a results JSON (%s)", path, je.line, je.column, je.text);
            bad = 1;
            json_decref(o);
            break;
        }
        vllm_point(t, o);
        off += je.position;
        json_decref(o);
    }
    free(all.s);
    if (!bad && t->n == 0) {
        snprintf(err, errn, "%s: no results in it", path);
        bad = 1;
    }
    t->vllm = true;
    return bad ? PB_ERR_INVALID : PB_OK;
}

static pb_status load(const char *path, ctable *t, char *err, size_t errn) {
    if (ends_with(path, ".csv")) return load_csv(path, t, err, errn);
    return load_json(path, t, err, errn);
}

/* vLLM's names as ours, in place (for comparing with a file of ours). */
static void rename_to_ours(ctable *t) {
    for (int i = 0; i < t->n; i++)
        for (int k = 0; k < t->p[i].n; k++) {
            char ours[64];
            if (pb_vllm_field_to_ours(t->p[i].name[k], ours, sizeof ours)) {
                free(t->p[i].name[k]);
                t->p[i].name[k] = pb_xstrdup(ours);
            }
        }
}

static bool same_value(const char *a, const char *b) {
    double x, y;
    if (is_number(a, &x) && is_number(b, &y)) return x == y;
    return !strcmp(a, b);
}

/* Do a and b name the same point: every component both have agrees, and they share one? */
static bool compatible(const cpoint *a, const cpoint *b) {
    int common = 0;
    for (int i = 0; i < a->nk; i++)
        for (int j = 0; j < b->nk; j++)
            if (!strcmp(a->kname[i], b->kname[j])) {
                if (!same_value(a->kval[i], b->kval[j])) return false;
                common++;
            }
    return common > 0;
}

/* The one point of t that names the same point as a (NULL: none; *many: more than one). */
static const cpoint *find_point(const ctable *t, const cpoint *a, int *many) {
    const cpoint *hit = NULL;
    *many = 0;
    for (int i = 0; i < t->n; i++)
        if (compatible(a, &t->p[i])) {
            if (hit) (*many)++;
            else hit = &t->p[i];
        }
    return *many ? NULL : hit;
}

/* --where K=V: the points all of whose K components are V (a point without K stays). */
static bool where_ok(const cpoint *p, const char *const *where, int nw) {
    for (int w = 0; w < nw; w++) {
        size_t l = strcspn(where[w], "=");
        for (int i = 0; i < p->nk; i++)
            if (strlen(p->kname[i]) == l && !strncmp(p->kname[i], where[w], l) &&
                !same_value(p->kval[i], where[w][l] ? where[w] + l + 1 : ""))
                return false;
    }
    return true;
}

static void filter(ctable *t, const char *const *where, int nw) {
    int k = 0;
    for (int i = 0; i < t->n; i++) {
        if (where_ok(&t->p[i], where, nw)) { t->p[k++] = t->p[i]; continue; }
        for (int q = 0; q < t->p[i].n; q++) free(t->p[i].name[q]);
        free(t->p[i].name);
        free(t->p[i].value);
    }
    t->n = k;
}

static int find_metric(const cpoint *p, const char *name) {
    for (int k = 0; k < p->n; k++)
        if (!strcmp(p->name[k], name)) return k;
    return -1;
}

static bool wanted(const char *metrics, const char *name) {
    if (!metrics) return true;
    size_t l = strlen(name);
    for (const char *s = metrics; *s;) {
        size_t m = strcspn(s, ",");
        if (m == l && !strncmp(s, name, l)) return true;
        s += m + (s[m] == ',');
    }
    return false;
}

enum { O_TOL = 256, O_ALL, O_METRICS, O_WHERE };
static const pb_cli_opt COMPARE_OPTS[] = {
    {"tolerance", O_TOL, "P", "exit 1 when a metric differs by more than P percent (of A's value), or a\n"
                              "point is in one file only"},
    {"metrics", O_METRICS, "LIST", "compare only these metrics (comma-separated names)"},
    {"where", O_WHERE, "K=V", "compare only the points whose K is V (system=vllm, request_rate=2;\n"
                              "repeatable), in both files"},
    {"all", O_ALL, NULL, "print every compared metric, not only those that differ"},
    {NULL, 0, NULL, NULL}};
static const pb_cli COMPARE_CLI = {
    "compare", "A B [--tolerance P] [--metrics LIST] [--where K=V] [--all]",
    "Prints the metric-by-metric differences of two result files: our results CSV or JSON\n"
    "(<name>.csv, <name>.json), or a JSON in vLLM bench serve's --save-result layout (ours under\n"
    "<results>/vllm/, or vLLM's own; one object or one per line).  Points are matched by\n"
    "experiment, system and sweep values (a vLLM JSON: its label as the system, request_rate, and\n"
    "the metadata ours adds); two files of one point each are paired.  vLLM's field names are\n"
    "read as ours when the other file is ours.\n"
    "diff = B - A, diff% = diff / |A|.",
    COMPARE_OPTS, NULL, "a difference beyond --tolerance, or a point in one file only", NULL};

int pb_cmd_compare(int argc, char **argv) {
    double tol = NAN;
    const char *metrics = NULL;
    bool all = false;
    const char *where[16];
    int nw = 0;
    pb_cli_parser p;
    pb_cli_begin(&p, &COMPARE_CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        switch (c) {
        case O_TOL: pb_cli_num(&p, 0, INFINITY, &tol); break;
        case O_METRICS: metrics = p.arg; break;
        case O_ALL: all = true; break;
        case O_WHERE:
            if (nw == 16 || !strchr(p.arg, '=')) pb_cli_bad(&p, "needs K=V (at most 16 of them)");
            else where[nw++] = p.arg;
            break;
        }
    }
    if (p.rc >= 0) return p.rc;
    if (argc - p.optind != 2) return pb_cli_fail(&COMPARE_CLI, "name two result files (A B), got %d", argc - p.optind);
    const char *fa = argv[p.optind], *fb = argv[p.optind + 1];
    ctable A = {0}, B = {0};
    char err[1400];
    if (load(fa, &A, err, sizeof err) || load(fb, &B, err, sizeof err)) {
        fprintf(stderr, "pagedbench compare: %s\n", err);
        table_free(&A);
        table_free(&B);
        return PB_EXIT_USAGE;
    }
    if (A.vllm != B.vllm) rename_to_ours(A.vllm ? &A : &B);
    filter(&A, where, nw);
    filter(&B, where, nw);
    bool pair_one = A.n == 1 && B.n == 1;
    bool a_many = A.n > 1 && B.n == 1, b_many = B.n > 1 && A.n == 1;   /* one point looked up among many */
    int points = 0, compared = 0, differ = 0, only = 0, beyond = 0;
    double worst = 0;
    char worst_at[700] = "";
    for (int i = 0; i < A.n; i++) {
        int many = 0;
        const cpoint *a = &A.p[i], *b = pair_one ? &B.p[0] : find_point(&B, a, &many);
        if (!b) {
            if (a_many && !many) continue;
            printf("%s: %s\n", many ? "matches several points of B (narrow with --where K=V)" : "only in A", a->key);
            only++;
            continue;
        }
        points++;
        bool header = false;
        for (int k = 0; k < a->n; k++) {
            if (!wanted(metrics, a->name[k])) continue;
            int kb = find_metric(b, a->name[k]);
            if (kb < 0) continue;
            double va = a->value[k], vb = b->value[kb];
            compared++;
            bool same = (isnan(va) && isnan(vb)) || va == vb;
            double d = vb - va, pct = va != 0 ? 100 * d / fabs(va) : (vb == 0 ? 0 : INFINITY);
            if (isnan(va) != isnan(vb)) pct = INFINITY;
            if (!same) differ++;
            if (!same && !(fabs(pct) <= tol)) beyond++;
            if (!same && (fabs(pct) > worst || isnan(pct))) {
                worst = isnan(pct) ? INFINITY : fabs(pct);
                snprintf(worst_at, sizeof worst_at, "%s at %s", a->name[k], a->key);
            }
            if (same && !all) continue;
            if (!header) {
                printf("%s%s\n  %-34s %16s %16s %14s %9s\n", pair_one ? "" : "point: ", pair_one ? "A vs B" : a->key,
                       "metric", "A", "B", "diff", "diff%");
                header = true;
            }
            if (isinf(pct) || isnan(pct))
                printf("  %-34s %16.6g %16.6g %14.6g %9s\n", a->name[k], va, vb, d, isnan(va) || isnan(vb) ? "n/a" : "inf");
            else printf("  %-34s %16.6g %16.6g %+14.6g %+8.2f%%\n", a->name[k], va, vb, d, pct);
        }
    }
    for (int i = 0; i < B.n && !pair_one; i++) {
        int many = 0;
        if (!find_point(&A, &B.p[i], &many) && !many && !b_many) {
            printf("only in B: %s\n", B.p[i].key);
            only++;
        }
    }
    printf("compare: %d points paired, %d only in one file; %d metric values compared, %d differ", points, only,
           compared, differ);
    if (differ) printf(" (largest |diff%%| %.3g%%: %s)", worst, worst_at);
    printf("\n");
    if (!isnan(tol)) printf("compare: %d beyond the tolerance of %g%%\n", beyond, tol);
    table_free(&A);
    table_free(&B);
    if (points == 0) {
        fprintf(stderr, "pagedbench compare: no point of %s matches one of %s\n", fa, fb);
        return PB_EXIT_RUNTIME;
    }
    return !isnan(tol) && (beyond || only) ? PB_EXIT_RUNTIME : PB_EXIT_OK;
}
