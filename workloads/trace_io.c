/* trace_io.c -- request CSV writer and strict reader (see trace_io.h). */
#include "trace_io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "csv_reader.h"

static int format_row(char *buf, size_t n, const pb_request *r) {
    return snprintf(buf, n, "%.6f,%d,%d,%d,%d,%d,%d,%d,%d\n", r->arrival_s, r->prompt_len,
                    r->output_len, r->n, r->beam_width, r->prefix_id, r->prefix_len,
                    r->conversation_id, r->turn);
}

char *pb_trace_to_csv(const pb_trace *t, size_t *len) {
    size_t cap = 256 + (size_t)t->n * 64, used = 0;
    char *buf = pb_xmalloc(cap);
    used = (size_t)snprintf(buf, cap, "%s\n", PB_TRACE_CSV_HEADER);
    for (int64_t i = 0; i < t->n; i++) {
        if (cap - used < 256) { cap *= 2; buf = pb_xrealloc(buf, cap); }
        used += (size_t)format_row(buf + used, cap - used, &t->reqs[i]);
    }
    if (len) *len = used;
    return buf;
}

pb_status pb_trace_write_csv(FILE *f, const pb_trace *t) {
    size_t len;
    char *buf = pb_trace_to_csv(t, &len);
    size_t k = fwrite(buf, 1, len, f);
    free(buf);
    return k == len && fflush(f) == 0 ? PB_OK : PB_ERR_IO;
}

pb_status pb_trace_write_file(const char *path, const pb_trace *t, char *err, size_t errlen) {
    size_t len;
    char *buf = pb_trace_to_csv(t, &len);
    pb_status s = pb_write_file_atomic(path, buf, len);
    free(buf);
    if (s && err) snprintf(err, errlen, "%s: cannot write the trace", path);
    return s;
}

/* ---- reader ---- */
enum { C_ARRIVAL, C_PROMPT, C_OUTPUT, C_N, C_BEAM, C_PREFIX_ID, C_PREFIX_LEN, C_CONV, C_TURN, C_COUNT };
static const char *const COLS[C_COUNT] = {"arrival_s", "prompt_len", "output_len", "n", "beam_width",
                                          "prefix_id", "prefix_len", "conversation_id", "turn"};
/* smallest accepted value per integer column */
static const int64_t COL_MIN[C_COUNT] = {0, 1, 1, 1, 1, -1, 0, -1, 0};

#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); goto fail; } while (0)

static pb_status read_csv(pb_csv *c, pb_trace *out, char *err, size_t errlen) {
    pb_trace t = {0};
    int64_t cap = 0, lcap = 0;
    int *lines = NULL, *plen_col = NULL;     /* per request: its line, its prefix_len column */
    int col_of[C_COUNT];
    int n_cols;
    if (!pb_csv_next(c)) BAD("%s:1:1: empty file (expected the header %s)", c->path, PB_TRACE_CSV_HEADER);
    n_cols = c->n_fields;
    if (n_cols > PB_CSV_MAX_FIELDS) BAD("%s:%d:%d: more than %d columns", c->path, c->line, c->cols[PB_CSV_MAX_FIELDS - 1], PB_CSV_MAX_FIELDS);
    for (int k = 0; k < C_COUNT; k++) col_of[k] = pb_csv_find(c, COLS[k]);
    for (int k = 0; k < 3; k++)
        if (col_of[k] < 0) BAD("%s:%d:%d: missing column '%s' in the header", c->path, c->line, c->cols[0], COLS[k]);
    for (int i = 0; i < n_cols; i++) {
        for (int j = 0; j < i; j++)
            if (!strcmp(c->fields[i], c->fields[j]))
                BAD("%s:%d:%d: duplicate column '%s'", c->path, c->line, c->cols[i], c->fields[i]);
        int known = pb_csv_find(c, "id") == i;
        for (int k = 0; k < C_COUNT; k++) known |= col_of[k] == i;
        if (!known) BAD("%s:%d:%d: unknown column '%s' (columns: %s)", c->path, c->line, c->cols[i], c->fields[i], PB_TRACE_CSV_HEADER);
    }
    double prev = 0;
    while (pb_csv_next(c)) {
        if (c->n_fields != n_cols)
            BAD("%s:%d:%d: %d fields, the header has %d", c->path, c->line, c->cols[0], PB_MIN(c->n_fields, PB_CSV_MAX_FIELDS), n_cols);
        pb_request r = pb_request_make(0, 1, 1);
        int64_t v[C_COUNT] = {0, 0, 0, 1, 1, -1, 0, -1, 0};
        double arrival;
        int ac = c->cols[col_of[C_ARRIVAL]];
        if (!pb_parse_num(c->fields[col_of[C_ARRIVAL]], &arrival))
            BAD("%s:%d:%d: arrival_s: not a number: '%s'", c->path, c->line, ac, c->fields[col_of[C_ARRIVAL]]);
        if (arrival < 0) BAD("%s:%d:%d: arrival_s: negative (%s)", c->path, c->line, ac, c->fields[col_of[C_ARRIVAL]]);
        if (t.n > 0 && arrival < prev)
            BAD("%s:%d:%d: arrivals out of order: %s after %.6f", c->path, c->line, ac, c->fields[col_of[C_ARRIVAL]], prev);
        for (int k = 1; k < C_COUNT; k++) {
            if (col_of[k] < 0) continue;
            const char *s = c->fields[col_of[k]];
            int fc = c->cols[col_of[k]];
            if (!pb_parse_int(s, &v[k])) BAD("%s:%d:%d: %s: not an integer: '%s'", c->path, c->line, fc, COLS[k], s);
            if (v[k] < COL_MIN[k]) {
                if (v[k] < 0) BAD("%s:%d:%d: %s: negative (%s)", c->path, c->line, fc, COLS[k], s);
                BAD("%s:%d:%d: %s: %s is below the minimum %lld", c->path, c->line, fc, COLS[k], s, (long long)COL_MIN[k]);
            }
            if (v[k] > INT32_MAX || ((k == C_N || k == C_BEAM) && v[k] > PB_TRACE_MAX_SEQS))
                BAD("%s:%d:%d: %s: %s is too large (at most %d)", c->path, c->line, fc, COLS[k], s,
                    k == C_N || k == C_BEAM ? PB_TRACE_MAX_SEQS : INT32_MAX);
        }
        r.arrival_s = arrival;
        r.prompt_len = (int32_t)v[C_PROMPT];
        r.output_len = (int32_t)v[C_OUTPUT];
        r.n = (int16_t)v[C_N];              /* <= PB_TRACE_MAX_SEQS: checked above */
        r.beam_width = (int16_t)v[C_BEAM];
        r.prefix_id = (int32_t)v[C_PREFIX_ID];
        r.prefix_len = (int32_t)v[C_PREFIX_LEN];
        r.conversation_id = (int32_t)v[C_CONV];
        r.turn = (int32_t)v[C_TURN];
        pb_trace tmp = {&r, 1};
        r.id = 0;
        char why[256];
        if (pb_trace_check(&tmp, why, sizeof why)) {
            const char *p = strstr(why, ": ");
            BAD("%s:%d:%d: %s", c->path, c->line, c->cols[0], p ? p + 2 : why);
        }
        if (t.n == lcap) {
            lcap = lcap ? 2 * lcap : 1024;
            lines = pb_xrealloc(lines, (size_t)lcap * sizeof *lines);
            plen_col = pb_xrealloc(plen_col, (size_t)lcap * sizeof *plen_col);
        }
        lines[t.n] = c->line;
        plen_col[t.n] = col_of[C_PREFIX_LEN] >= 0 ? c->cols[col_of[C_PREFIX_LEN]] : 1;
        pb_trace_push(&t, &cap, &r);
        prev = arrival;
    }
    if (t.n == 0) BAD("%s:%d:1: no requests after the header", c->path, c->line);
    int64_t first = -1, bad = pb_trace_prefix_conflict(&t, &first);
    if (bad >= 0)
        BAD("%s:%d:%d: prefix_len: %d for prefix_id %d, which line %d gave %d (one length per prefix)", c->path,
            lines[bad], col_of[C_PREFIX_LEN] >= 0 ? plen_col[bad] : 1, t.reqs[bad].prefix_len, t.reqs[bad].prefix_id,
            lines[first], t.reqs[first].prefix_len);
    free(lines);
    free(plen_col);
    lines = NULL;
    plen_col = NULL;
    *out = t;
    return PB_OK;
fail:
    free(lines);
    free(plen_col);
    pb_trace_free(&t);
    out->reqs = NULL;
    out->n = 0;
    return PB_ERR_INVALID;
}

pb_status pb_trace_read_csv(const char *path, pb_trace *out, char *err, size_t errlen) {
    pb_csv c;
    out->reqs = NULL;
    out->n = 0;
    pb_status s = pb_csv_open(&c, path, err, errlen);
    if (s) return s;
    s = read_csv(&c, out, err, errlen);
    pb_csv_close(&c);
    return s;
}

pb_status pb_trace_read_string(const char *name, const char *text, pb_trace *out, char *err, size_t errlen) {
    pb_csv c;
    out->reqs = NULL;
    out->n = 0;
    pb_status s = pb_csv_open_string(&c, name, text, err, errlen);
    if (s) return s;
    s = read_csv(&c, out, err, errlen);
    pb_csv_close(&c);
    return s;
}
