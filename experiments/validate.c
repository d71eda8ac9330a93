/* validate.c -- predict public GPU step measurements with the sim (validate.h). */
#include "validate.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "executor.h"
#include "spec.h"

/* ---------------------------------------------------------------------------------------
 * errors at a table cell */

static pb_status cell_fail(pb_cfg_err *err, const char *file, int line, int col, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static pb_status cell_fail(pb_cfg_err *err, const char *file, int line, int col, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pb_node at;                       /* a position for pb_cfg_fail, nothing else */
    memset(&at, 0, sizeof at);
    at.kind = PB_NODE_SCALAR;
    at.file = file;
    at.line = line;
    at.col = col;
    return pb_cfg_fail(err, &at, false, "%s", msg);
}

/* ---------------------------------------------------------------------------------------
 * the table */

enum { C_SOURCE, C_MODEL, C_GPU, C_TP, C_ENGINE, C_KIND, C_PARAMS, C_MEASURED, C_SKIP, C_REF, N_COLS };
static const char *const COLS[N_COLS] = {"source", "model", "gpu", "tp", "engine", "kind",
                                         "params", "measured_ms", "skip", "ref"};
static const char *const KINDS[] = {"decode", "prefill", "hybrid", "ft_batch"};
/* params each kind requires / allows (bit i = key i of PKEYS) */
static const char *const PKEYS[] = {"batch", "beams", "prompt", "chunk", "ctx", "in", "out"};
enum { P_BATCH = 1, P_BEAMS = 2, P_PROMPT = 4, P_CHUNK = 8, P_CTX = 16, P_IN = 32, P_OUT = 64 };
static const unsigned NEED[] = {P_BATCH | P_CTX, P_PROMPT, P_PROMPT | P_BATCH | P_CTX, P_BATCH | P_BEAMS | P_IN | P_OUT};
static const unsigned ALLOW[] = {P_BATCH | P_CTX, P_PROMPT | P_CHUNK, P_PROMPT | P_BATCH | P_CTX,
                                 P_BATCH | P_BEAMS | P_IN | P_OUT};

enum { MAX_TOKENS = 1 << 20, MAX_SEQS = 1 << 16 };

static bool parse_pos_int(const char *s, int64_t hi, int32_t *out) {
    int64_t v;
    if (!pb_parse_int(s, &v) || v < 1 || v > hi) return false;
    *out = (int32_t)v;
    return true;
}

/* "batch=8 ctx=1021..1023" -> row fields.  col0 = column of the params cell. */
static pb_status parse_params(pb_val_row *r, const char *file, int col0, pb_cfg_err *err) {
    char buf[sizeof r->params];
    snprintf(buf, sizeof buf, "%s", r->params);
    unsigned seen = 0;
    pb_status st = PB_OK;
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        int col = col0 + (int)(tok - buf);
        char *eq = strchr(tok, '=');
        if (!eq) {
            st = cell_fail(err, file, r->line, col, "params: '%s' is not key=value", tok);
            continue;
        }
        *eq = 0;
        const char *v = eq + 1;
        int k = -1;
        for (int i = 0; i < (int)PB_ARRAY_LEN(PKEYS); i++)
            if (!strcmp(tok, PKEYS[i])) k = i;
        if (k < 0 || !(ALLOW[r->kind] & (1u << k))) {
            st = cell_fail(err, file, r->line, col, "params: '%s' is not a parameter of kind %s", tok, KINDS[r->kind]);
            continue;
        }
        if (seen & (1u << k)) {
            st = cell_fail(err, file, r->line, col, "params: '%s' given twice", tok);
            continue;
        }
        seen |= 1u << k;
        bool ok = true;
        switch (1u << k) {
        case P_BATCH: ok = parse_pos_int(v, MAX_SEQS, &r->batch); break;
        case P_BEAMS: ok = parse_pos_int(v, PB_MAX_TOP / 2, &r->beams); break;
        case P_PROMPT: ok = parse_pos_int(v, MAX_TOKENS, &r->prompt); break;
        case P_CHUNK: ok = parse_pos_int(v, MAX_TOKENS, &r->chunk); break;
        case P_IN: ok = parse_pos_int(v, MAX_TOKENS, &r->in); break;
        case P_OUT: ok = parse_pos_int(v, MAX_TOKENS, &r->out); break;
        case P_CTX: {
            char lo[32], *dots;
            snprintf(lo, sizeof lo, "%s", v);
            dots = strstr(lo, "..");
            if (dots) *dots = 0;
            ok = parse_pos_int(lo, MAX_TOKENS, &r->ctx_lo) &&
                 (dots ? parse_pos_int(dots + 2, MAX_TOKENS, &r->ctx_hi) : (r->ctx_hi = r->ctx_lo, true)) &&
                 r->ctx_lo <= r->ctx_hi;
            break;
        }
        }
        if (!ok)
            st = cell_fail(err, file, r->line, col + (int)(v - tok),
                           "params: %s=%s: want a positive integer%s", tok, v,
                           (1u << k) == P_CTX ? " or LO..HI with LO <= HI" : "");
    }
    for (int i = 0; i < (int)PB_ARRAY_LEN(PKEYS); i++)
        if ((NEED[r->kind] & (1u << i)) && !(seen & (1u << i)))
            st = cell_fail(err, file, r->line, col0, "params: kind %s needs %s=", KINDS[r->kind], PKEYS[i]);
    return st;
}

/* Split line (modified in place) at commas into at most max fields; returns the count. */
static int split_csv(char *line, char **f, int *col, int max) {
    int n = 0;
    char *p = line;
    for (;;) {
        if (n < max) {
            f[n] = p;
            col[n] = (int)(p - line) + 1;
        }
        n++;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

static bool copy_cell(char *dst, size_t n, const char *src) {
    if (strlen(src) >= n) return false;
    memcpy(dst, src, strlen(src) + 1);
    return true;
}

pb_status pb_val_load(const char *path, pb_val_table **out, pb_cfg_err *err) {
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) return cell_fail(err, path, 1, 1, "cannot open the measurements table: %s", strerror(errno));
    pb_val_table *t = pb_xcalloc(1, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    int map[N_COLS];              /* table column index of each known column */
    bool have_header = false;
    int n_header = 0, cap = 0, lineno = 0;
    pb_status st = PB_OK;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len == 0 || line[0] == '#') continue;
        char *cell[32];
        int col[32];
        int n = split_csv(line, cell, col, 32);
        if (!have_header) {
            have_header = true;
            n_header = n;
            for (int c = 0; c < N_COLS; c++) map[c] = -1;
            for (int i = 0; i < n && i < 32; i++) {
                int c = -1;
                for (int k = 0; k < N_COLS; k++)
                    if (!strcmp(cell[i], COLS[k])) c = k;
                if (c < 0) st = cell_fail(err, path, lineno, col[i], "header: unknown column '%s'", cell[i]);
                else if (map[c] >= 0) st = cell_fail(err, path, lineno, col[i], "header: column '%s' twice", cell[i]);
                else map[c] = i;
            }
            for (int c = 0; c < N_COLS; c++)
                if (map[c] < 0) st = cell_fail(err, path, lineno, 1, "header: column '%s' missing", COLS[c]);
            if (st) break;
            continue;
        }
        if (n != n_header) {
            st = cell_fail(err, path, lineno, 1, "row has %d cells, the header %d (no commas inside a cell)", n, n_header);
            continue;
        }
        if (t->n == cap) {
            cap = cap ? 2 * cap : 64;
            t->rows = pb_xrealloc(t->rows, (size_t)cap * sizeof *t->rows);
        }
        pb_val_row *r = &t->rows[t->n++];
        memset(r, 0, sizeof *r);
        r->line = lineno;
        r->col_model = col[map[C_MODEL]];
        r->col_gpu = col[map[C_GPU]];
        r->col_tp = col[map[C_TP]];
#define CELL(c) cell[map[c]]
#define AT(c) col[map[c]]
        struct { int c; char *dst; size_t n; } text[] = {
            {C_SOURCE, r->source, sizeof r->source}, {C_MODEL, r->model, sizeof r->model},
            {C_GPU, r->gpu, sizeof r->gpu},          {C_PARAMS, r->params, sizeof r->params},
            {C_SKIP, r->skip, sizeof r->skip},       {C_REF, r->ref, sizeof r->ref}};
        for (size_t i = 0; i < PB_ARRAY_LEN(text); i++)
            if (!copy_cell(text[i].dst, text[i].n, CELL(text[i].c)))
                st = cell_fail(err, path, lineno, AT(text[i].c), "%s: longer than %zu characters", COLS[text[i].c],
                               text[i].n - 1);
        for (int c = C_SOURCE; c <= C_GPU; c++)
            if (!*CELL(c)) st = cell_fail(err, path, lineno, AT(c), "%s: empty", COLS[c]);
        if (!parse_pos_int(CELL(C_TP), 64, &r->tp))
            st = cell_fail(err, path, lineno, AT(C_TP), "tp: '%s' is not a tensor-parallel degree (1..64)", CELL(C_TP));
        if (!strcmp(CELL(C_ENGINE), "vllm")) r->engine = PB_VAL_VLLM;
        else if (!strcmp(CELL(C_ENGINE), "ft")) r->engine = PB_VAL_FT;
        else st = cell_fail(err, path, lineno, AT(C_ENGINE), "engine: '%s' is not vllm|ft", CELL(C_ENGINE));
        int kind = -1;
        for (int k = 0; k < (int)PB_ARRAY_LEN(KINDS); k++)
            if (!strcmp(CELL(C_KIND), KINDS[k])) kind = k;
        if (kind < 0) {
            st = cell_fail(err, path, lineno, AT(C_KIND), "kind: '%s' is not decode|prefill|hybrid|ft_batch", CELL(C_KIND));
        } else {
            r->kind = (pb_val_kind)kind;
            if (parse_params(r, path, AT(C_PARAMS), err)) st = PB_ERR_INVALID;
        }
        if (!pb_parse_num(CELL(C_MEASURED), &r->measured_ms) || !(r->measured_ms > 0) || r->measured_ms > 1e9)
            st = cell_fail(err, path, lineno, AT(C_MEASURED), "measured_ms: '%s' is not a positive time in ms",
                           CELL(C_MEASURED));
#undef CELL
#undef AT
    }
    free(line);
    fclose(f);
    if (!st && !have_header) st = cell_fail(err, path, lineno ? lineno : 1, 1, "no header line");
    if (!st && pb_val_check(t)) st = cell_fail(err, path, 1, 1, "table fails its invariants");
    if (st) {
        pb_val_free(t);
        return st;
    }
    *out = t;
    return PB_OK;
}

void pb_val_free(pb_val_table *t) {
    if (!t) return;
    free(t->rows);
    free(t);
}

pb_status pb_val_check(const pb_val_table *t) {
    if (!t || t->n < 0 || (t->n > 0 && !t->rows)) return PB_ERR_INVALID;
    for (int i = 0; i < t->n; i++) {
        const pb_val_row *r = &t->rows[i];
        if (r->tp < 1 || !(r->measured_ms > 0) || r->kind < PB_VAL_DECODE || r->kind > PB_VAL_FT_BATCH) return PB_ERR_INVALID;
        if (!*r->model || !*r->gpu || !*r->source) return PB_ERR_INVALID;
        switch (r->kind) {
        case PB_VAL_DECODE:
        case PB_VAL_HYBRID:
            if (r->batch < 1 || r->ctx_lo < 1 || r->ctx_lo > r->ctx_hi) return PB_ERR_INVALID;
            if (r->kind == PB_VAL_HYBRID && r->prompt < 1) return PB_ERR_INVALID;
            break;
        case PB_VAL_PREFILL:
            if (r->prompt < 1 || r->chunk < 0) return PB_ERR_INVALID;
            break;
        case PB_VAL_FT_BATCH:
            if (r->batch < 1 || r->beams < 1 || r->in < 1 || r->out < 1) return PB_ERR_INVALID;
            if ((int64_t)r->batch * r->beams > MAX_SEQS) return PB_ERR_INVALID;
            break;
        }
    }
    return PB_OK;
}

/* ---------------------------------------------------------------------------------------
 * predictions */

pb_sim_params pb_val_engine_params(pb_val_engine e) {
    pb_sim_params p = pb_sim_params_default();
    if (e == PB_VAL_FT) {
        p.attn = PB_SIM_ATTN_CONTIGUOUS;
        p.framework = PB_SIM_FW_CPP;
    }
    return p;
}

static void set_decode(pb_batch_seq *q, int32_t id, int32_t ctx, int32_t block_size) {
    memset(q, 0, sizeof *q);
    q->seq_id = id;
    q->group_id = id;
    q->n_new = 1;
    q->n_cached = ctx - 1;
    q->context_len = ctx;
    q->sample = true;
    q->n_blocks = block_size > 0 ? (ctx + block_size - 1) / block_size : 0;
}

static void set_prefill(pb_batch_seq *q, int32_t id, int32_t cached, int32_t n, bool sample, int32_t block_size) {
    memset(q, 0, sizeof *q);
    q->seq_id = id;
    q->group_id = id;
    q->is_prefill = true;
    q->n_new = n;
    q->n_cached = cached;
    q->context_len = cached + n;
    q->sample = sample;
    q->n_blocks = block_size > 0 ? (cached + n + block_size - 1) / block_size : 0;
}

/* One step of the sim on seqs[0..n): milliseconds. */
static double step_ms(const pb_sim *s, const pb_batch_seq *seqs, int32_t n, int32_t block_size, int32_t n_top) {
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = n;
    b.seqs = seqs;
    b.block_size = block_size;
    b.n_top = n_top;
    for (int32_t i = 0; i < n; i++) {
        if (seqs[i].is_prefill) b.n_prefill_tokens += seqs[i].n_new;
        else b.n_decode++;
    }
    pb_step_result res;
    pb_sim_step(s, &b, &res);
    return res.latency_s * 1e3;
}

double pb_val_predict_row(const pb_sim *s, const pb_val_row *r) {
    int32_t bs = r->engine == PB_VAL_VLLM ? PB_VAL_VLLM_BLOCK : 0;   /* contiguous: no blocks */
    int32_t n_max = r->kind == PB_VAL_FT_BATCH ? r->batch * r->beams : r->batch + 1;
    pb_batch_seq *q = pb_xmalloc((size_t)(n_max > 1 ? n_max : 1) * sizeof *q);
    double ms = 0;
    switch (r->kind) {
    case PB_VAL_DECODE:
    case PB_VAL_HYBRID: {
        /* mean over KV lengths c: B decodes (+ one P-token prefill for hybrid) */
        for (int32_t c = r->ctx_lo; c <= r->ctx_hi; c++) {
            int32_t n = 0;
            if (r->kind == PB_VAL_HYBRID) set_prefill(&q[n++], 0, 0, r->prompt, true, bs);
            for (int32_t i = 0; i < r->batch; i++, n++) set_decode(&q[n], n, c, bs);
            ms += step_ms(s, q, n, bs, 1);
        }
        ms /= (double)(r->ctx_hi - r->ctx_lo + 1);
        break;
    }
    case PB_VAL_PREFILL: {
        int32_t chunk = r->chunk > 0 ? r->chunk : r->prompt;
        for (int32_t off = 0; off < r->prompt; off += chunk) {
            int32_t n = r->prompt - off < chunk ? r->prompt - off : chunk;
            set_prefill(&q[0], 0, off, n, off + n == r->prompt, bs);   /* the last chunk samples */
            ms += step_ms(s, q, 1, bs, 1);
        }
        break;
    }
    case PB_VAL_FT_BATCH: {
        /* FasterTransformer (ParallelGpt.cc): the context pass runs each distinct prompt once
           when batch > 1 (shared contexts), else once per beam; every prompt padded to the
           longest (in); it emits the first token.  Then out - 1 decoder steps of batch x
           beams sequences, KV length in + 1 .. in + out - 1. */
        int32_t n_top = r->beams > 1 ? 2 * r->beams : 1;
        int32_t n_ctx = r->batch > 1 ? r->batch : r->batch * r->beams;
        for (int32_t i = 0; i < n_ctx; i++) set_prefill(&q[i], i, 0, r->in, true, bs);
        ms = step_ms(s, q, n_ctx, bs, n_top);
        int32_t n = r->batch * r->beams;
        for (int32_t k = 1; k < r->out; k++) {
            for (int32_t i = 0; i < n; i++) set_decode(&q[i], i, r->in + k, bs);
            ms += step_ms(s, q, n, bs, n_top);
        }
        break;
    }
    }
    free(q);
    return ms;
}

typedef struct {
    char model[64], gpu[64];
    int32_t tp;
    pb_val_engine engine;
    pb_sim *sim;
} sim_slot;

static bool file_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Build the sim of row r (model, hardware, tp, engine). */
static pb_status build_sim(const pb_val_table *t, const pb_val_row *r, const char *spec_dir, const char *hw_dir,
                           pb_sim_attn vllm_attn, pb_sim **out, pb_cfg_err *err) {
    *out = NULL;
    char path[2048];
    snprintf(path, sizeof path, "%s/models/%s.yaml", spec_dir, r->model);
    if (!file_exists(path)) return cell_fail(err, t->path, r->line, r->col_model, "model: no spec %s", path);
    pb_model m;
    if (pb_model_load(spec_dir, r->model, &m, err)) return PB_ERR_INVALID;
    snprintf(path, sizeof path, "%s/%s.yaml", hw_dir, r->gpu);
    if (!file_exists(path)) return cell_fail(err, t->path, r->line, r->col_gpu, "gpu: no hardware spec %s", path);
    pb_config *c;
    if (pb_config_load(path, &c, err)) return PB_ERR_INVALID;
    pb_hw hw;
    pb_sim_cost cost;
    pb_status st = pb_hw_from_node(pb_config_root(c), &hw, err);
    if (!st) st = pb_sim_cost_from_node(pb_config_root(c), &cost, err);
    pb_config_destroy(c);
    if (st) return st;
    pb_sim_params p = pb_val_engine_params(r->engine);
    if (r->engine != PB_VAL_FT) p.attn = vllm_attn;
    pb_cfg_err e2;
    pb_cfg_err_clear(&e2);
    if (pb_sim_create(&m, &hw, &cost, r->tp, &p, out, &e2))
        return cell_fail(err, t->path, r->line, r->col_tp, "tp: %s on %s at tp %d: %s", r->model, r->gpu, r->tp, e2.msg);
    return PB_OK;
}

pb_status pb_val_predict(const pb_val_table *t, const char *spec_dir, const char *hw_dir, double *pred_ms,
                         pb_cfg_err *err) {
    return pb_val_predict_kernel(t, spec_dir, hw_dir, PB_SIM_ATTN_PAGED, pred_ms, err);
}

pb_status pb_val_predict_kernel(const pb_val_table *t, const char *spec_dir, const char *hw_dir, pb_sim_attn vllm_attn,
                                double *pred_ms, pb_cfg_err *err) {
    if (pb_val_check(t)) return cell_fail(err, t ? t->path : "?", 1, 1, "table fails its invariants");
    sim_slot *slot = pb_xcalloc((size_t)(t->n > 0 ? t->n : 1), sizeof *slot);
    int *which = pb_xmalloc((size_t)(t->n > 0 ? t->n : 1) * sizeof *which);
    int n_slots = 0;
    pb_status st = PB_OK;
    /* every spec and sim first, so a bad row stops the run before any prediction */
    for (int i = 0; i < t->n; i++) {
        const pb_val_row *r = &t->rows[i];
        int k = 0;
        while (k < n_slots && !(slot[k].tp == r->tp && slot[k].engine == r->engine && !strcmp(slot[k].model, r->model) &&
                                !strcmp(slot[k].gpu, r->gpu)))
            k++;
        if (k == n_slots) {
            sim_slot *z = &slot[n_slots++];
            snprintf(z->model, sizeof z->model, "%s", r->model);
            snprintf(z->gpu, sizeof z->gpu, "%s", r->gpu);
            z->tp = r->tp;
            z->engine = r->engine;
            if (build_sim(t, r, spec_dir, hw_dir, vllm_attn, &z->sim, err)) st = PB_ERR_INVALID;
        }
        which[i] = k;
    }
    for (int i = 0; i < t->n; i++) {
        const pb_val_row *r = &t->rows[i];
        pred_ms[i] = (st || *r->skip || !slot[which[i]].sim) ? NAN : pb_val_predict_row(slot[which[i]].sim, r);
    }
    for (int k = 0; k < n_slots; k++) pb_sim_destroy(slot[k].sim);
    free(slot);
    free(which);
    return st;
}

/* ---------------------------------------------------------------------------------------
 * summaries */

double pb_val_err_pct(double pred_ms, double meas_ms) { return 100.0 * (pred_ms - meas_ms) / meas_ms; }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int pb_val_summary(const pb_val_table *t, const double *pred_ms, double *median_abs, double *max_abs) {
    double *e = pb_xmalloc((size_t)(t->n > 0 ? t->n : 1) * sizeof *e);
    int n = 0;
    for (int i = 0; i < t->n; i++)
        if (!isnan(pred_ms[i])) e[n++] = fabs(pb_val_err_pct(pred_ms[i], t->rows[i].measured_ms));
    qsort(e, (size_t)n, sizeof *e, cmp_double);
    *median_abs = n == 0 ? NAN : (n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]));
    *max_abs = n == 0 ? NAN : e[n - 1];
    free(e);
    return n;
}

void pb_val_what(const pb_val_row *r, char *buf, size_t n) {
    snprintf(buf, n, "%s %s", KINDS[r->kind], r->params);
}
