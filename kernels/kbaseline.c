/* kbaseline.c -- baseline files and the regression check (see kbaseline.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kbaseline.h"

void pb_kb_set_init(pb_kb_set *s) {
    memset(s, 0, sizeof(*s));
    s->tolerance = 0.10;
    s->ratio_tolerance = 0.05;
}

void pb_kb_set_free(pb_kb_set *s) {
    free(s->e);
    pb_kb_set_init(s);
}

pb_kb_result *pb_kb_set_add(pb_kb_set *s, const pb_kb_result *r) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->e = pb_xrealloc(s->e, sizeof(*s->e) * (size_t)s->cap);
    }
    s->e[s->n] = *r;
    return &s->e[s->n++];
}

const pb_kb_result *pb_kb_set_find(const pb_kb_set *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->e[i].name, name)) return &s->e[i];
    return NULL;
}

/* ---- reader: one key per line at the top, one entry per line in "entries" ---- */

/* find "key": in line; returns pointer after the colon and spaces, or NULL */
static const char *find_key(const char *line, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(line, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

/* parse a JSON string (no escapes other than \" and \\) into buf */
static int parse_str(const char *p, char *buf, size_t n) {
    if (*p != '"') return -1;
    p++;
    size_t k = 0;
    while (*p && *p != '"') {
        if (*p == '\\' && (p[1] == '"' || p[1] == '\\')) p++;
        if (k + 1 >= n) return -1;
        buf[k++] = *p++;
    }
    if (*p != '"') return -1;
    buf[k] = 0;
    return 0;
}

static int parse_num(const char *p, double *v) {
    char *end;
    errno = 0;
    *v = strtod(p, &end);
    if (end == p || errno || !isfinite(*v)) return -1;
    while (*end == ' ' || *end == '\t') end++;
    return (*end == ',' || *end == '}' || *end == 0 || *end == '\n' || *end == '\r') ? 0 : -1;
}

#define FAIL(col, ...) do { int o_ = snprintf(err, err_len, "%s:%d:%d: ", path, lineno, (int)(col)); \
    if (o_ >= 0 && (size_t)o_ < err_len) snprintf(err + o_, err_len - (size_t)o_, __VA_ARGS__);        \
    pb_kb_set_free(out); return PB_ERR_INVALID; } while (0)

pb_status pb_kb_parse(const char *path, const char *text, pb_kb_set *out, char *err, size_t err_len) {
    pb_kb_set_init(out);
    int lineno = 0, have_tol = 0, have_rtol = 0, have_mode = 0;
    const char *line = text;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[512];
        lineno++;
        if (len >= sizeof buf) FAIL(1, "line too long");
        memcpy(buf, line, len);
        buf[len] = 0;
        line = nl ? nl + 1 : NULL;
        const char *p;
        if ((p = find_key(buf, "name"))) {
            pb_kb_result r;
            memset(&r, 0, sizeof r);
            r.pct_peak = r.pct_measured = -1;
            char kind[16];
            if (parse_str(p, r.name, sizeof r.name)) FAIL(p - buf + 1, "bad \"name\" string");
            const char *k = find_key(buf, "kind"), *v = find_key(buf, "value");
            if (!k || parse_str(k, kind, sizeof kind)) FAIL(1, "entry without a \"kind\" string");
            if (!strcmp(kind, "us")) r.kind = PB_KB_US;
            else if (!strcmp(kind, "ratio")) r.kind = PB_KB_RATIO;
            else FAIL(k - buf + 1, "kind must be \"us\" or \"ratio\", not \"%s\"", kind);
            if (!v || parse_num(v, &r.value) || r.value <= 0)
                FAIL(v ? v - buf + 1 : 1, "entry needs a positive numeric \"value\"");
            if (pb_kb_set_find(out, r.name)) FAIL(p - buf + 1, "duplicate entry \"%s\"", r.name);
            pb_kb_set_add(out, &r);
        } else if ((p = find_key(buf, "device"))) {
            if (parse_str(p, out->device, sizeof out->device)) FAIL(p - buf + 1, "bad \"device\" string");
        } else if ((p = find_key(buf, "mode"))) {
            if (parse_str(p, out->mode, sizeof out->mode)) FAIL(p - buf + 1, "bad \"mode\" string");
            have_mode = 1;
        } else if ((p = find_key(buf, "ratio_tolerance"))) {
            if (parse_num(p, &out->ratio_tolerance) || out->ratio_tolerance < 0)
                FAIL(p - buf + 1, "ratio_tolerance must be a number >= 0");
            have_rtol = 1;
        } else if ((p = find_key(buf, "tolerance"))) {
            if (parse_num(p, &out->tolerance) || out->tolerance < 0)
                FAIL(p - buf + 1, "tolerance must be a number >= 0");
            have_tol = 1;
        } else {
            const char *q = buf;
            while (*q == ' ' || *q == '\t' || *q == '\r') q++;
            if (*q && *q != '{' && *q != '}' && *q != ']' && strncmp(q, "\"entries\"", 9) != 0)
                FAIL(q - buf + 1, "unexpected line (one key or one entry per line expected)");
        }
    }
    lineno = 0;
    if (!have_tol || !have_rtol || !have_mode) FAIL(1, "missing \"mode\", \"tolerance\" or \"ratio_tolerance\"");
    if (out->n == 0) FAIL(1, "no entries");
    return PB_OK;
}

pb_status pb_kb_load(const char *path, pb_kb_set *out, char *err, size_t err_len) {
    pb_kb_set_init(out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        return PB_ERR_IO;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = pb_xmalloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) buf = pb_xrealloc(buf, cap *= 2);
    }
    fclose(f);
    buf[n] = 0;
    pb_status st = pb_kb_parse(path, buf, out, err, err_len);
    free(buf);
    return st;
}

pb_status pb_kb_save(const char *path, const pb_kb_set *s) {
    size_t cap = 512 + (size_t)s->n * 160, n = 0;
    char *buf = pb_xmalloc(cap);
    n += (size_t)snprintf(buf + n, cap - n, "{\n  \"device\": \"%s\",\n  \"mode\": \"%s\",\n"
                          "  \"tolerance\": %.4f,\n  \"ratio_tolerance\": %.4f,\n  \"entries\": [\n",
                          s->device, s->mode, s->tolerance, s->ratio_tolerance);
    for (int i = 0; i < s->n; i++)
        n += (size_t)snprintf(buf + n, cap - n, "    {\"name\": \"%s\", \"kind\": \"%s\", \"value\": %.6g}%s\n",
                              s->e[i].name, s->e[i].kind == PB_KB_US ? "us" : "ratio", s->e[i].value,
                              i + 1 < s->n ? "," : "");
    n += (size_t)snprintf(buf + n, cap - n, "  ]\n}\n");
    pb_status st = pb_write_file_atomic(path, buf, n);
    free(buf);
    return st;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The grid of an entry: its name up to the second '/' ("cpu/swap/host/bs1" -> "cpu/swap"). */
static size_t grid_len(const char *name) {
    const char *a = strchr(name, '/'), *b = a ? strchr(a + 1, '/') : NULL;
    return b ? (size_t)(b - name) : strlen(name);
}

/* cpu-reference: the median of current / baseline over the latencies of name's grid that
 * both have (1 for another mode, or none). */
static double machine_factor(const pb_kb_set *base, const pb_kb_set *cur, const char *name) {
    if (strcmp(base->mode, "cpu-reference")) return 1.0;
    size_t gl = grid_len(name);
    double *r = pb_xmalloc((size_t)(cur->n + 1) * sizeof *r);
    int n = 0;
    for (int i = 0; i < cur->n; i++) {
        const pb_kb_result *c = &cur->e[i], *b = pb_kb_set_find(base, c->name);
        if (grid_len(c->name) != gl || strncmp(c->name, name, gl)) continue;
        if (b && b->kind == PB_KB_US && c->kind == PB_KB_US && b->value > 0) r[n++] = c->value / b->value;
    }
    double m = 1.0;
    if (n) {
        qsort(r, (size_t)n, sizeof *r, cmp_dbl);
        m = n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
    }
    free(r);
    return m > 0 ? m : 1.0;
}

int pb_kb_compare(const pb_kb_set *base, const pb_kb_set *cur, FILE *f, int *n_compared) {
    int bad = 0, cmp = 0;
    bool cpu = !strcmp(base->mode, "cpu-reference");
    if (cpu)
        fprintf(f, "cpu-reference baseline (another host): each grid's latencies are scaled by this machine's factor,\n"
                   "the median current / baseline over the grid; 'baseline' below is the scaled value\n");
    fprintf(f, "%-44s %6s %12s %12s %8s  %s\n", "check", "kind", "baseline", "current", "change", "verdict");
    for (int i = 0; i < cur->n; i++) {
        const pb_kb_result *c = &cur->e[i], *b = pb_kb_set_find(base, c->name);
        if (!b) continue;
        if (b->kind != c->kind) {
            fprintf(f, "%-44s kind differs from the baseline: FAIL\n", c->name);
            bad++;
            cmp++;
            continue;
        }
        double tol = c->kind == PB_KB_US ? base->tolerance : base->ratio_tolerance;
        double factor = c->kind == PB_KB_US ? machine_factor(base, cur, c->name) : 1.0;
        double want = b->value * factor;
        if (cpu && c->kind == PB_KB_US && (i == 0 || grid_len(cur->e[i - 1].name) != grid_len(c->name) ||
                                           strncmp(cur->e[i - 1].name, c->name, grid_len(c->name))))
            fprintf(f, "%.*s: machine factor %.3g\n", (int)grid_len(c->name), c->name, factor);
        int reg = c->value > want * (1.0 + tol);
        fprintf(f, "%-44s %6s %12.4g %12.4g %+7.1f%%  %s\n", c->name, c->kind == PB_KB_US ? "us" : "ratio",
                want, c->value, 100.0 * (c->value / want - 1.0), reg ? "REGRESSION" : "ok");
        bad += reg;
        cmp++;
    }
    int missing = 0;
    for (int i = 0; i < base->n; i++) missing += pb_kb_set_find(cur, base->e[i].name) == NULL;
    if (missing) fprintf(f, "(%d baseline entries not measured in this run)\n", missing);
    if (n_compared) *n_compared = cmp;
    return bad;
}
