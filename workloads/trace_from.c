/* trace_from.c -- traces from real datasets and logs (trace_from.h). */
#include "trace_from.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "arrivals.h"
#include "csv_reader.h"
#include "rng.h"

/* the records as read: lengths, (when the file has them) timestamps and conversations */
typedef struct {
    int64_t n, cap;
    int64_t *in, *out;
    double *ts;
    int32_t *conv, *turn;   /* -1 / 0: none */
    bool has_ts, has_turn;
} records;

static void rec_push(records *r, int64_t in, int64_t out, double ts) {
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->in = pb_xrealloc(r->in, (size_t)r->cap * sizeof *r->in);
        r->out = pb_xrealloc(r->out, (size_t)r->cap * sizeof *r->out);
        r->ts = pb_xrealloc(r->ts, (size_t)r->cap * sizeof *r->ts);
        r->conv = pb_xrealloc(r->conv, (size_t)r->cap * sizeof *r->conv);
        r->turn = pb_xrealloc(r->turn, (size_t)r->cap * sizeof *r->turn);
    }
    r->in[r->n] = in;
    r->out[r->n] = out;
    r->conv[r->n] = -1;
    r->turn[r->n] = 0;
    r->ts[r->n++] = ts;
}

static void rec_free(records *r) {
    free(r->in);
    free(r->out);
    free(r->ts);
    free(r->conv);
    free(r->turn);
    memset(r, 0, sizeof *r);
}

static int find_any(const pb_csv *c, const char *const *names) {
    for (; *names; names++) {
        int i = pb_csv_find(c, *names);
        if (i >= 0) return i;
    }
    return -1;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static bool parse_len(const char *s, int64_t *v) {
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(d) || d != floor(d) || fabs(d) > 1e9) return false;
    *v = (int64_t)d;
    return true;
}

/* Without a turn column, a conversation's rows are its turns in row order. */
static void number_turns(pb_trace *t) {
    int64_t *ix = pb_xmalloc((size_t)(t->n ? t->n : 1) * sizeof *ix), n = 0;
    for (int64_t i = 0; i < t->n; i++)
        if (t->reqs[i].conversation_id >= 0) ix[n++] = ((int64_t)t->reqs[i].conversation_id << 32) | i;
    qsort(ix, (size_t)n, sizeof *ix, cmp_i64);   /* by conversation, then row (rows < 2^31) */
    for (int64_t k = 0, turn = 0; k < n; k++) {
        turn = k > 0 && ix[k] >> 32 == ix[k - 1] >> 32 ? turn + 1 : 0;
        t->reqs[ix[k] & 0xffffffff].turn = (int32_t)turn;
    }
    free(ix);
}

/* csv (and the tokenizer's output): named columns; o (NULL: the defaults) may map them */
static pb_status read_csv(pb_csv *c, const pb_trace_from_opts *o, records *r, char *err, size_t errlen) {
    static const char *const IN[] = {"prompt_len", "input_len", "ContextTokens", NULL};
    static const char *const OUT[] = {"output_len", "GeneratedTokens", NULL};
    static const char *const TS[] = {"arrival_s", "timestamp", NULL};
    static const char *const CONV[] = {"conversation_id", NULL}, *const TURN[] = {"turn", NULL};
    if (!pb_csv_next(c)) {
        snprintf(err, errlen, "%s: empty file", c->path);
        return PB_ERR_INVALID;
    }
    static const char *const OPT[5] = {"input", "output", "arrival", "conversation", "turn"};
    const char *want[5] = {o ? o->input_column : NULL, o ? o->output_column : NULL, o ? o->arrival_column : NULL,
                           o ? o->conversation_column : NULL, o ? o->turn_column : NULL};
    int col[5] = {find_any(c, IN), find_any(c, OUT), find_any(c, TS), find_any(c, CONV), find_any(c, TURN)};
    for (int k = 0; k < 5; k++) {
        if (!want[k]) continue;
        col[k] = pb_csv_find(c, want[k]);
        if (col[k] < 0) {
            snprintf(err, errlen, "%s:%d: no column '%s' (--%s-column) in the header", c->path, c->line, want[k],
                     OPT[k]);
            return PB_ERR_INVALID;
        }
    }
    int ci = col[0], co = col[1], ct = col[2], cc = col[3], cn = cc >= 0 ? col[4] : -1;
    if (ci < 0 || co < 0) {
        snprintf(err, errlen, "%s:%d: needs a prompt_len (or input_len, ContextTokens) and an output_len (or "
                 "GeneratedTokens) column, or --input-column / --output-column", c->path, c->line);
        return PB_ERR_INVALID;
    }
    int need = PB_MAX(PB_MAX(ci, PB_MAX(co, ct)), PB_MAX(cc, cn)) + 1;
    r->has_ts = ct >= 0;
    r->has_turn = cn >= 0;
    while (pb_csv_next(c)) {
        int64_t in, out;
        double ts = 0;
        char *end = NULL;
        if (c->n_fields < need) {
            snprintf(err, errlen, "%s:%d: %d fields, expected at least %d", c->path, c->line, c->n_fields, need);
            return PB_ERR_INVALID;
        }
        if (!parse_len(c->fields[ci], &in) || !parse_len(c->fields[co], &out)) {
            snprintf(err, errlen, "%s:%d: a length is not an integer ('%s', '%s')", c->path, c->line, c->fields[ci],
                     c->fields[co]);
            return PB_ERR_INVALID;
        }
        if (ct >= 0) {
            ts = strtod(c->fields[ct], &end);
            if (end == c->fields[ct] || *end || !isfinite(ts) || ts < 0) {
                snprintf(err, errlen, "%s:%d: arrival '%s' is not a number of seconds >= 0", c->path, c->line,
                         c->fields[ct]);
                return PB_ERR_INVALID;
            }
        }
        rec_push(r, in, out, ts);
        int64_t cv = -1, tn = 0;
        if (cc >= 0 && (!parse_len(c->fields[cc], &cv) || cv < -1 || cv > INT32_MAX ||
                        (cn >= 0 && (!parse_len(c->fields[cn], &tn) || tn < 0 || tn > INT32_MAX)))) {
            snprintf(err, errlen, "%s:%d: conversation '%s' / turn '%s': integers (a conversation >= 0, -1 = none; "
                     "a turn >= 0)", c->path, c->line, c->fields[cc], cn >= 0 ? c->fields[cn] : "");
            return PB_ERR_INVALID;
        }
        r->conv[r->n - 1] = (int32_t)cv;
        r->turn[r->n - 1] = (int32_t)tn;
    }
    return PB_OK;
}

static pb_status read_plain_csv(const char *path, const pb_trace_from_opts *o, records *r, char *err, size_t errlen) {
    pb_csv c;
    pb_status st = pb_csv_open(&c, path, err, errlen);
    if (st) return st;
    st = read_csv(&c, o, r, err, errlen);
    pb_csv_close(&c);
    return st;
}

static pb_status read_azure(const char *path, records *r, char *err, size_t errlen) {
    double *ts = NULL;
    int64_t n = 0;
    pb_status st = pb_arrivals_read_azure(path, &ts, &n, err, errlen);
    if (st) return st;
    pb_csv c;
    if ((st = pb_csv_open(&c, path, err, errlen))) { free(ts); return st; }
    pb_csv_next(&c);
    int ci = pb_csv_find(&c, "ContextTokens"), co = pb_csv_find(&c, "GeneratedTokens");
    if (ci < 0 || co < 0) {
        snprintf(err, errlen, "%s:%d: needs ContextTokens and GeneratedTokens columns", path, c.line);
        st = PB_ERR_INVALID;
    }
    int64_t k = 0;
    while (!st && pb_csv_next(&c)) {
        int64_t in, out;
        if (c.n_fields <= PB_MAX(ci, co) || !parse_len(c.fields[ci], &in) || !parse_len(c.fields[co], &out)) {
            snprintf(err, errlen, "%s:%d: ContextTokens / GeneratedTokens not integers", path, c.line);
            st = PB_ERR_INVALID;
        } else if (k >= n) {
            snprintf(err, errlen, "%s:%d: more rows than timestamps", path, c.line);
            st = PB_ERR_INVALID;
        } else
            rec_push(r, in, out, ts[k++]);
    }
    r->has_ts = true;
    pb_csv_close(&c);
    free(ts);
    return st;
}

/* A length: an integer, written as one or as a real with no fraction, |v| <= 1e9 (as
   parse_len: a larger value is an error, never dropped or wrapped). */
static bool json_len(json_t *v, int64_t *out) {
    double d = json_is_integer(v) ? (double)json_integer_value(v) : json_is_real(v) ? json_real_value(v) : NAN;
    if (!isfinite(d) || d != floor(d) || fabs(d) > 1e9) return false;
    *out = (int64_t)d;
    return true;
}

static pb_status read_vllm_json(const char *path, const pb_trace_from_opts *opt, records *r, char *err, size_t errlen) {
    char *text;
    size_t len;
    pb_status st = pb_input_read(path, true, &text, &len, err, errlen);
    if (st) return st;
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    free(text);
    if (!j) {
        snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        return PB_ERR_INVALID;
    }
    size_t rows = json_is_object(j) ? json_array_size(json_object_get(j, "input_lens")) : json_array_size(j);
    if (rows > PB_INPUT_MAX_ROWS) {
        snprintf(err, errlen, "%s: %zu records, above the cap of %d for an input file", path, rows, PB_INPUT_MAX_ROWS);
        json_decref(j);
        return PB_ERR_INVALID;
    }
    if (json_is_object(j)) {
        json_t *in = json_object_get(j, "input_lens"), *out = json_object_get(j, "output_lens");
        if (!json_is_array(in) || !json_is_array(out) || json_array_size(in) != json_array_size(out)) {
            snprintf(err, errlen, "%s: expected \"input_lens\" and \"output_lens\" arrays of one length "
                     "(benchmark_serving --save-result)", path);
            st = PB_ERR_INVALID;
        }
        for (size_t i = 0; !st && i < json_array_size(in); i++) {
            int64_t a, b;
            if (!json_len(json_array_get(in, i), &a) || !json_len(json_array_get(out, i), &b)) {
                snprintf(err, errlen, "%s: input_lens/output_lens[%zu]: not an integer length of at most 1e9", path, i);
                st = PB_ERR_INVALID;
            } else
                rec_push(r, a, b, 0);
        }
    } else if (json_is_array(j)) {
        size_t n = json_array_size(j);
        for (size_t i = 0; !st && i < n; i++) {
            json_t *o = json_array_get(j, i), *a, *t, *b;
            if (opt->input_column) a = json_object_get(o, opt->input_column);
            else if (!(a = json_object_get(o, "prompt_len"))) a = json_object_get(o, "input_len");
            if (opt->arrival_column) t = json_object_get(o, opt->arrival_column);
            else if (!(t = json_object_get(o, "arrival_s"))) t = json_object_get(o, "timestamp");
            b = json_object_get(o, opt->output_column ? opt->output_column : "output_len");
            int64_t in, out;
            if (!json_is_object(o) || !json_len(a, &in) || !json_len(b, &out)) {
                snprintf(err, errlen, "%s: item %zu: needs integer %s and %s (at most 1e9)", path, i,
                         opt->input_column ? opt->input_column : "prompt_len (or input_len)",
                         opt->output_column ? opt->output_column : "output_len");
                st = PB_ERR_INVALID;
                break;
            }
            if (i == 0) r->has_ts = t != NULL;
            if ((t != NULL) != r->has_ts || (t && !(json_is_number(t) && json_number_value(t) >= 0))) {
                snprintf(err, errlen, "%s: item %zu: arrival_s must be a number >= 0 on every item or on none", path, i);
                st = PB_ERR_INVALID;
                break;
            }
            rec_push(r, in, out, t ? json_number_value(t) : 0);
        }
    } else {
        snprintf(err, errlen, "%s: expected a JSON object or array", path);
        st = PB_ERR_INVALID;
    }
    json_decref(j);
    return st;
}

/* sharegpt-json: the tokenizer program writes id,prompt_len,output_len CSV */
static pb_status read_tokenized(const char *path, const pb_trace_from_opts *o, records *r, char *err, size_t errlen) {
    if (strchr(path, '\'') || (o->tokenizer && strchr(o->tokenizer, '\''))) {
        snprintf(err, errlen, "%s: a path with a quote character", path);
        return PB_ERR_INVALID;
    }
    pb_status st = PB_OK;
    FILE *in = pb_input_open(path, &st, err, errlen);   /* a regular file of bounded size, before python reads it */
    if (!in) return st;
    fclose(in);
    char cmd[4096];
    if (o->tokenizer)
        snprintf(cmd, sizeof cmd, "%s '%s' --format %s%s", o->tokenizer, path, o->format, o->bos ? "" : " --no-bos");
    else
        snprintf(cmd, sizeof cmd, "python3 '%s/tools/tokenize/pb_tokenize.py' '%s' --format %s%s", PB_SOURCE_DIR,
                 path, o->format, o->bos ? "" : " --no-bos");
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(err, errlen, "cannot run the tokenizer: %s", strerror(errno));
        return PB_ERR_IO;
    }
    size_t cap = 1 << 16, len = 0, k;
    char *buf = pb_xmalloc(cap);
    while ((k = fread(buf + len, 1, cap - len - 1, p)) > 0 && (int64_t)len <= PB_INPUT_MAX_BYTES) {
        len += k;
        if (cap - len < 2) { cap *= 2; buf = pb_xrealloc(buf, cap); }
    }
    buf[len] = 0;
    int rc = pclose(p);
    int code = rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
    if ((int64_t)len > PB_INPUT_MAX_BYTES) {
        snprintf(err, errlen, "%s: the tokenizer wrote more than %lld bytes", path, (long long)PB_INPUT_MAX_BYTES);
        st = PB_ERR_INVALID;
    } else if (code != 0) {
        snprintf(err, errlen, "%s: the tokenizer failed (exit %d%s; its message is above)", path, code,
                 code == 3 ? ": pip install tokenizers" : code == 127 ? ": python3 not found" : "");
        st = code == 2 ? PB_ERR_INVALID : PB_ERR_IO;
    } else {
        pb_csv c;
        char name[1100];
        snprintf(name, sizeof name, "%s (tokenized)", path);
        st = pb_csv_open_string(&c, name, buf, err, errlen);
        if (!st) {
            st = read_csv(&c, NULL, r, err, errlen);
            pb_csv_close(&c);
        }
    }
    free(buf);
    return st;
}

pb_status pb_trace_from_file(const char *path, const pb_trace_from_opts *o, pb_trace *out, int64_t *dropped,
                             char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    *dropped = 0;
    records r = {0};
    pb_status st;
    if (!strcmp(path, "-") && strcmp(o->format, "csv") && strcmp(o->format, "vllm-json")) {
        snprintf(err, errlen, "-: standard input only for --format csv or vllm-json (%s reads a file)", o->format);
        return PB_ERR_INVALID;
    }
    if (!strcmp(o->format, "csv")) st = read_plain_csv(path, o, &r, err, errlen);
    else if (!strcmp(o->format, "azure-csv")) st = read_azure(path, &r, err, errlen);
    else if (!strcmp(o->format, "vllm-json")) st = read_vllm_json(path, o, &r, err, errlen);
    else if (!strcmp(o->format, "sharegpt-json")) st = read_tokenized(path, o, &r, err, errlen);
    else {
        snprintf(err, errlen, "unknown format '%s' (%s)", o->format, PB_FROM_FORMATS);
        st = PB_ERR_INVALID;
    }
    /* lengths and filter, then num; timestamps must not go back */
    int64_t k = 0;
    for (int64_t i = 0; !st && i < r.n; i++) {
        if (r.has_ts && i > 0 && r.ts[i] < r.ts[i - 1]) {
            snprintf(err, errlen, "%s: record %lld: timestamp %.17g before the previous one (%.17g)", path,
                     (long long)i, r.ts[i], r.ts[i - 1]);
            st = PB_ERR_INVALID;
            break;
        }
        bool keep = r.in[i] >= 1 && r.out[i] >= 1 && r.in[i] <= INT32_MAX && r.out[i] <= INT32_MAX &&
                    pb_filter_keep(&o->filter, (int32_t)r.in[i], (int32_t)r.out[i]);
        if (!keep) { (*dropped)++; continue; }
        if (o->num > 0 && k >= o->num) continue;
        r.in[k] = r.in[i];
        r.out[k] = r.out[i];
        r.conv[k] = r.conv[i];
        r.turn[k] = r.turn[i];
        r.ts[k++] = r.ts[i];
    }
    if (!st && k == 0) {
        snprintf(err, errlen, "%s: no request left (%lld dropped by the length checks and the filter)", path,
                 (long long)*dropped);
        st = PB_ERR_INVALID;
    }
    if (!st && !r.has_ts && !(o->rate > 0)) {
        snprintf(err, errlen, "%s: the file has no timestamps: give --rate for Poisson arrivals", path);
        st = PB_ERR_INVALID;
    }
    double *times = NULL;
    int64_t nt = 0;
    if (!st) {
        pb_arrival_cfg ac = {.kind = r.has_ts ? PB_ARRIVALS_REPLAY : PB_ARRIVALS_POISSON, .rate = o->rate, .num = k,
                             .quantum_s = 0.01, .burstiness = 1};
        pb_rng rng;
        pb_rng_seed(&rng, o->seed, 1);
        char why[512];
        st = pb_arrivals_generate(&ac, &rng, r.has_ts ? r.ts : NULL, r.has_ts ? k : 0, &times, &nt, why, sizeof why);
        if (st) snprintf(err, errlen, "%s: %s", path, why);
        if (!st && nt != k) {
            snprintf(err, errlen, "%s: %lld arrivals for %lld requests", path, (long long)nt, (long long)k);
            st = PB_ERR_INVALID;
        }
    }
    int64_t cap = 0;
    for (int64_t i = 0; !st && i < k; i++) {
        pb_request q = pb_request_make(times[i], (int32_t)r.in[i], (int32_t)r.out[i]);
        q.conversation_id = r.conv[i];
        q.turn = r.turn[i];
        pb_trace_push(out, &cap, &q);
    }
    if (!st && !r.has_turn) number_turns(out);
    free(times);
    rec_free(&r);
    if (!st) st = pb_trace_check(out, err, errlen);
    if (st) pb_trace_free(out);
    return st;
}
