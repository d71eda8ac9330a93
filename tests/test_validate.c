/* test_validate.c -- `pagedbench validate` within its bounds, and the pieces behind it.
 *
 * ---- BOUNDS (update these, with the reasoning, when the cost model is recalibrated) ----
 * Measured after the GEMM fit's sampling fix (calibrate.py fits every 16th row of each of
 * the four GEMMs; it had fitted QKV rows only), `pagedbench validate --csv`, 108 rows
 * predicted, 1 skipped:
 *     median |err| 9.4 %, max |err| 45.4 % (Sarathi-Serve Yi-34B TP2 decode, batch 64, A100).
 *   per source (median / max): sarathi-fig2 23.6 / 45.4, sarathi-table2 6.7 / 45.2,
 *   sarathi-fig9 9.2 / 25.0, splitwise 10.5 / 44.5, ft-tp1 3.2 / 16.5, ft-shape 2.4 / 14.0;
 *   the H100 rows (all Splitwise) 13.8 / 44.5.
 *   (With the QKV-only fit: median 9.3 %, max 45.6 %; per source 21.4 / 44.5, 6.1 / 43.6,
 *   9.8 / 25.6, 10.8 / 45.6, 5.6 / 12.7, 6.0 / 8.9; H100 15.3.  The fix made A100 GEMMs at
 *   small M ~3-5 % faster: the FasterTransformer medians fell to 3.2 / 2.4 %, while their
 *   under-predicted rows (a greedy batch; a shape the table times twice, 13 % apart) and
 *   Sarathi's decodes, already low by a batch-size step no operator term has, moved further
 *   down -- so sarathi-fig2's median (23 -> 25) and the two ft maxima (14.5 -> 17.5, 11 -> 15)
 *   were widened with this fix, and the ft medians, splitwise and sarathi-fig9 tightened.
 *   After issue 12's recalibration: median 12.8 %, max 50.7 %; before it, with the
 *   figure-fitted parameters: median 22.3 %, max 129.3 %.)
 * The bounds sit just above today's numbers (a few points of headroom, no more: the sim is
 * deterministic, so any change in these numbers is a change in the model).  They must stay
 * tight enough to catch a broken cost model: with every prediction x2 today's rows give
 * median 87.2 % / max 150.1 %, with every prediction x0.5 median 53.2 % / max 72.7 %; both
 * fail the bounds, and bounds_reject_a_cost_model_off_by_2x checks that this stays so.
 * One term off by 2x is subtler: the table-wide numbers average it away (doubling the
 * element-wise bandwidth alone leaves the table within its bounds), so each source also has
 * bounds (VAL_SOURCE_BOUNDS below), and bounds_reject_each_term_off_by_2x_alone records, term
 * by term, which of x2 and x0.5 they catch.
 * Tighten them when a recalibration improves the numbers; never widen them to make a change
 * pass -- a change that makes validation worse has to say why in RESULTS.md and be reviewed.
 * The H100 rows' median has issue 36's bound, 15 %: VAL_H100_MEDIAN_MAX_PCT. */
#define VAL_MEDIAN_ABS_ERR_MAX_PCT 11.5
#define VAL_MAX_ABS_ERR_MAX_PCT 48.0
#define VAL_MIN_ROWS 108          /* predicted rows: dropping measurements does not pass */
/* Per source (rows of one publication), the same rule: just above today's median / max
 * |err| (sarathi-fig2 23.6 / 45.4, sarathi-table2 6.7 / 45.2, sarathi-fig9 9.2 / 25.0,
 * splitwise 10.5 / 44.5, ft-tp1 3.2 / 16.5, ft-shape 2.4 / 14.0).  A source's rows
 * exercise a few terms each (prefills, decodes, FasterTransformer batches), so these
 * catch an error in ONE term that the table-wide bounds average away:
 * bounds_reject_each_term_off_by_2x_alone doubles and halves every cost-model term alone
 * and needs each to break one of these, except the terms it lists as unseen, with why. */
static const struct { const char *source; double median_max, max_max; } VAL_SOURCE_BOUNDS[] = {
    {"sarathi-fig2", 25, 46.5}, {"sarathi-table2", 8, 45.5}, {"sarathi-fig9", 11, 27},
    {"splitwise", 12, 46.5},    {"ft-tp1", 4.5, 17.5},       {"ft-shape", 3.5, 15},
};
#define VAL_H100_MEDIAN_MAX_PCT 15.0   /* issue 36's done-when: validate's H100 rows at median <= 15% */

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "executor_sim.h"
#include "pbtest.h"
#include "spec.h"
#include "validate.h"

/* ---------------------------------------------------------------------------------------
 * the CLI, parsed */

#define MAX_ROWS 1024
typedef struct {
    int n;
    double meas[MAX_ROWS], pred[MAX_ROWS], err[MAX_ROWS];
    char gpu[MAX_ROWS][32];
    char summary[512], h100[512];   /* the summary line; the "gpu h100-sxm" line */
} cli_out;

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median and max of |100 (scale * pred - meas) / meas| */
static void stats(const cli_out *o, double scale, double *med, double *mx) {
    static double e[MAX_ROWS];
    for (int i = 0; i < o->n; i++) e[i] = fabs(100.0 * (scale * o->pred[i] - o->meas[i]) / o->meas[i]);
    qsort(e, (size_t)o->n, sizeof e[0], cmp_d);
    *med = o->n % 2 ? e[o->n / 2] : 0.5 * (e[o->n / 2 - 1] + e[o->n / 2]);
    *mx = e[o->n - 1];
}

/* Run `pagedbench validate --csv` and parse it: stdout must be a plain CSV (the header, then
 * 8 fields a row), the summary on stderr.  Returns 0 ok, -1 skip, 1 failure (checked). */
static int run_cli(cli_out *o) {
    const char *bin = getenv("PAGEDBENCH_BIN");
    if (!bin || !*bin) return -1;
    char cmd[4096];
    char errf[] = "/tmp/pb_validate_err_XXXXXX";
    int efd = mkstemp(errf);
    if (efd < 0) return 1;
    close(efd);
    snprintf(cmd, sizeof cmd, "'%s' validate --csv 2>'%s'", bin, errf);
    FILE *p = popen(cmd, "r");
    if (!p) return 1;
    memset(o, 0, sizeof *o);
    char line[2048];
    bool header = false;
    int bad = 0;
    while (fgets(line, sizeof line, p)) {
        if (line[0] == '#') bad++;   /* no comment lines in the CSV */
        if (!header) {
            header = true;
            if (strcmp(line, "source,model,gpu,tp,what,measured_ms,predicted_ms,err_pct\n")) bad++;
            continue;
        }
        /* source,model,gpu,tp,what,measured_ms,predicted_ms,err_pct: the last three numbers */
        char *f[8];
        int n = 0;
        for (char *s = line; n < 8; n++) {
            f[n] = s;
            char *c = strchr(s, ',');
            if (!c) { n++; break; }
            *c = 0;
            s = c + 1;
        }
        if (n != 8 || o->n >= MAX_ROWS) { bad++; continue; }
        o->meas[o->n] = atof(f[5]);
        o->pred[o->n] = atof(f[6]);
        o->err[o->n] = atof(f[7]);
        snprintf(o->gpu[o->n], sizeof o->gpu[0], "%s", f[2]);
        if (!(o->meas[o->n] > 0) || !(o->pred[o->n] > 0)) bad++;
        o->n++;
    }
    int rc = pclose(p);
    FILE *e = fopen(errf, "r");
    while (e && fgets(line, sizeof line, e))
        if (!strncmp(line, "summary:", 8)) snprintf(o->summary, sizeof o->summary, "%s", line);
        else if (!strncmp(line, "gpu    h100-sxm ", 16)) snprintf(o->h100, sizeof o->h100, "%s", line);
    if (e) fclose(e);
    unlink(errf);
    PB_CHECK_EQ_INT(rc, 0);
    PB_CHECK_EQ_INT(bad, 0);
    PB_CHECK(header);
    return rc || bad || !header || o->n == 0 ? 1 : 0;
}

PB_TEST(validate_within_bounds) {
    static cli_out o;
    int r = run_cli(&o);
    if (r < 0) PB_SKIP("PAGEDBENCH_BIN not set (run through ctest)");
    PB_REQUIRE(r == 0);
    PB_CHECK(o.n >= VAL_MIN_ROWS);
    for (int i = 0; i < o.n; i++)   /* the printed error is the error of the printed times */
        PB_CHECK_NEAR(o.err[i], 100.0 * (o.pred[i] - o.meas[i]) / o.meas[i], 0.06 + 0.01 * fabs(o.err[i]));
    double med, mx;
    stats(&o, 1.0, &med, &mx);
    fprintf(stderr, "  %d rows: median |err| %.1f%% (bound %.1f), max |err| %.1f%% (bound %.1f)\n", o.n, med,
            VAL_MEDIAN_ABS_ERR_MAX_PCT, mx, VAL_MAX_ABS_ERR_MAX_PCT);
    PB_CHECK(med <= VAL_MEDIAN_ABS_ERR_MAX_PCT);
    PB_CHECK(mx <= VAL_MAX_ABS_ERR_MAX_PCT);
    /* the summary line says the same */
    char want[128];
    snprintf(want, sizeof want, "median |err| %.1f%%, max |err| %.1f%%", med, mx);
    PB_CHECK_STR_CONTAINS(o.summary, want);
    /* the H100 rows: issue 36's bound, and their own summary line */
    static cli_out h;
    h.n = 0;
    for (int i = 0; i < o.n; i++)
        if (!strcmp(o.gpu[i], "h100-sxm")) {
            h.meas[h.n] = o.meas[i];
            h.pred[h.n++] = o.pred[i];
        }
    PB_REQUIRE(h.n >= 30);
    stats(&h, 1.0, &med, &mx);
    fprintf(stderr, "  %d H100 rows: median |err| %.1f%% (bound %.1f)\n", h.n, med, VAL_H100_MEDIAN_MAX_PCT);
    PB_CHECK(med <= VAL_H100_MEDIAN_MAX_PCT);
    snprintf(want, sizeof want, "%3d rows: median |err| %5.1f%%, max |err| %5.1f%%", h.n, med, mx);
    PB_CHECK_STR_CONTAINS(o.h100, want);
}

PB_TEST(bounds_reject_a_cost_model_off_by_2x) {
    static cli_out o;
    int r = run_cli(&o);
    if (r < 0) PB_SKIP("PAGEDBENCH_BIN not set (run through ctest)");
    PB_REQUIRE(r == 0);
    const double scales[] = {2.0, 0.5};
    for (int k = 0; k < 2; k++) {
        double med, mx;
        stats(&o, scales[k], &med, &mx);
        PB_CHECK(med > VAL_MEDIAN_ABS_ERR_MAX_PCT || mx > VAL_MAX_ABS_ERR_MAX_PCT);
    }
}

/* ---------------------------------------------------------------------------------------
 * one term at a time: each cost-model parameter scaled alone (x2 and x0.5) on every row */

typedef struct { const char *name; size_t off; } term;
#define T(f) {#f, offsetof(pb_sim_cost, f)}
static const term TERMS[] = {
    T(gemm_flops_eff), T(l2_bw), T(gemm_bw_eff), T(gemm_sm_bw), T(elem_bw_eff), T(prefill_attn_flops_eff),
    T(attn_fixed_s), T(attn_seq_head_s), T(attn_stream_eff), T(attn_paged_block_s), T(kernel_gap_s),
    T(gemm_fixed_s), T(elem_fixed_s), T(prefill_attn_fixed_s), T(ar_lat_s), T(ar_bw),
    T(fw[PB_SIM_FW_PYTHON].step_s), T(fw[PB_SIM_FW_PYTHON].seq_s), T(fw[PB_SIM_FW_PYTHON].launch_s),
    T(fw[PB_SIM_FW_PYTHON].worker_s), T(fw[PB_SIM_FW_PYTHON].worker_seq_s),
    T(fw[PB_SIM_FW_CPP].step_s), T(fw[PB_SIM_FW_CPP].seq_s), T(fw[PB_SIM_FW_CPP].launch_s),
    T(swap_h2d_bw), T(swap_d2h_bw), T(swap_h2d_copy_s), T(swap_d2h_copy_s),
};
#undef T

/* What the bounds catch, term by term: REJ2 = the term doubled alone breaks a bound,
 * REJH = halved alone does; for the terms not caught both ways, why.  The test needs
 * exactly these: a term that starts or stops mattering fails it (update the line, and
 * the reason).  Terms with no bit are ones this table cannot see. */
enum { REJ2 = 1, REJH = 2 };
static const struct { const char *name; int caught; const char *why; } SEEN[] = {
    {"gemm_flops_eff", REJ2 | REJH, ""},
    {"gemm_bw_eff", REJ2 | REJH, ""},
    {"elem_bw_eff", REJ2 | REJH, ""},
    {"prefill_attn_flops_eff", REJ2 | REJH, ""},
    {"attn_stream_eff", REJ2 | REJH, ""},
    {"ar_lat_s", REJ2 | REJH, ""},
    {"ar_bw", REJ2 | REJH, ""},
    {"l2_bw", REJ2 | REJH, ""},
    {"gemm_fixed_s", REJ2 | REJH, ""},
    {"elem_fixed_s", REJ2 | REJH, ""},
    {"fw[PB_SIM_FW_PYTHON].seq_s", REJ2 | REJH, ""},
    {"attn_fixed_s", REJH, "a few us per layer call: only halving shows, in ft-tp1's max row (already low)"},
    {"kernel_gap_s", REJH, "sub-us per kernel: halving shows only in sarathi-table2's max row, by tenths of a point"},
    {"fw[PB_SIM_FW_PYTHON].step_s", REJH, "2.7 ms of host time a step: halving shows in Sarathi's decodes (sarathi-fig2)"},
    {"fw[PB_SIM_FW_PYTHON].worker_s", REJH, "TP-2 host time: halving shows in Sarathi's TP-2 decodes"},
    {"fw[PB_SIM_FW_PYTHON].worker_seq_s", REJH, "likewise"},
    {"fw[PB_SIM_FW_PYTHON].launch_s", 0, "kernel issue stays under the GPU time"},
    {"gemm_sm_bw", 0, "binds only GEMMs of few tile columns (below HBM / gemm_sm_bw, ~16 on A100: TP-8 "
                      "shards, split-K): the rows' steps move, less than their error"},
    {"attn_seq_head_s", 0, "ns per (sequence, head): tens of us per step"},
    {"attn_paged_block_s", 0, "ns per block lookup: a few us of a decode step"},
    {"prefill_attn_fixed_s", 0, "a few us per layer call"},
    {"fw[PB_SIM_FW_CPP].step_s", 0, "the FasterTransformer batches' host time is small"},
    {"fw[PB_SIM_FW_CPP].seq_s", 0, "likewise"},
    {"fw[PB_SIM_FW_CPP].launch_s", 0, "kernel issue stays under the GPU time"},
    {"swap_h2d_bw", 0, "no row swaps (Fig. 19a's kernel check covers the swap terms)"},
    {"swap_d2h_bw", 0, "no row swaps"},
    {"swap_h2d_copy_s", 0, "no row swaps"},
    {"swap_d2h_copy_s", 0, "no row swaps"},
};

static void scale_term(pb_sim_cost *c, const term *t, double k) {
    double *v = (double *)((char *)c + t->off);
    int n = !strcmp(t->name, "ar_lat_s") || !strcmp(t->name, "ar_bw") ? PB_SIM_AR_TPS : 1;
    for (int i = 0; i < n; i++) v[i] *= k;
}

/* predictions of every row with term t scaled by k (k = 1: today's) */
static void predict_scaled(const pb_val_table *tab, const term *t, double k, double *pred) {
    char hwdir[2048];
    snprintf(hwdir, sizeof hwdir, "%s/hardware", pb_spec_dir());
    for (int i = 0; i < tab->n; i++) {
        const pb_val_row *r = &tab->rows[i];
        pred[i] = NAN;
        if (*r->skip) continue;
        pb_model m;
        pb_hw hw;
        pb_sim_cost c;
        pb_cfg_err e;
        pb_cfg_err_clear(&e);
        if (pb_model_load(pb_spec_dir(), r->model, &m, &e) || pb_hw_load(pb_spec_dir(), r->gpu, &hw, &e) ||
            pb_sim_cost_load(pb_spec_dir(), r->gpu, &c, &e))
            continue;
        if (t) scale_term(&c, t, k);
        pb_sim_params p = pb_val_engine_params(r->engine);
        pb_sim *s = NULL;
        if (pb_sim_create(&m, &hw, &c, r->tp, &p, &s, &e) == PB_OK) pred[i] = pb_val_predict_row(s, r);
        pb_sim_destroy(s);
    }
}

/* Does some source of the table leave its VAL_SOURCE_BOUNDS?  (its median and max |err|
 * over its predicted rows; the median of an even count is the mean of the middle two) */
static bool source_out_of_bounds(const pb_val_table *tab, const double *pred, char *worst, size_t n_worst) {
    static double e[MAX_ROWS];
    bool out = false;
    double worst_excess = -1e9;
    for (size_t b = 0; b < PB_ARRAY_LEN(VAL_SOURCE_BOUNDS); b++) {
        int n = 0;
        for (int i = 0; i < tab->n && n < MAX_ROWS; i++)
            if (!isnan(pred[i]) && !strcmp(tab->rows[i].source, VAL_SOURCE_BOUNDS[b].source))
                e[n++] = fabs(100.0 * (pred[i] - tab->rows[i].measured_ms) / tab->rows[i].measured_ms);
        if (n == 0) continue;
        qsort(e, (size_t)n, sizeof e[0], cmp_d);
        double med = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]), mx = e[n - 1];
        double excess = fmax(med - VAL_SOURCE_BOUNDS[b].median_max, mx - VAL_SOURCE_BOUNDS[b].max_max);
        if (excess > 0) out = true;
        if (excess > worst_excess) {
            worst_excess = excess;
            snprintf(worst, n_worst, "%s %.1f/%.1f", VAL_SOURCE_BOUNDS[b].source, med, mx);
        }
    }
    return out;
}

PB_TEST(bounds_reject_each_term_off_by_2x_alone) {
    char path[2048];
    snprintf(path, sizeof path, "%s/validation/measurements.csv", pb_spec_dir());
    pb_val_table *tab;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_val_load(path, &tab, &e) == PB_OK);
    double *base = calloc((size_t)tab->n, sizeof *base), *pred = calloc((size_t)tab->n, sizeof *pred);
    predict_scaled(tab, NULL, 1, base);
    double med, mx;
    pb_val_summary(tab, base, &med, &mx);
    PB_CHECK(med <= VAL_MEDIAN_ABS_ERR_MAX_PCT && mx <= VAL_MAX_ABS_ERR_MAX_PCT);   /* today's passes */
    char worst[128];
    PB_CHECK(!source_out_of_bounds(tab, base, worst, sizeof worst));   /* every source too */
    for (size_t k = 0; k < PB_ARRAY_LEN(TERMS); k++) {
        int want = -1;
        for (size_t u = 0; u < PB_ARRAY_LEN(SEEN); u++)
            if (!strcmp(SEEN[u].name, TERMS[k].name)) want = SEEN[u].caught;
        PB_CHECK(want >= 0);   /* every term has its line */
        int got = 0;
        bool moved = false;
        char line[320];
        int len = snprintf(line, sizeof line, "  %-34s", TERMS[k].name);
        for (int j = 0; j < 2; j++) {
            double f = j ? 0.5 : 2.0;
            predict_scaled(tab, &TERMS[k], f, pred);
            for (int i = 0; i < tab->n; i++) moved |= !isnan(pred[i]) && pred[i] != base[i];
            pb_val_summary(tab, pred, &med, &mx);
            bool rej = source_out_of_bounds(tab, pred, worst, sizeof worst) || med > VAL_MEDIAN_ABS_ERR_MAX_PCT ||
                       mx > VAL_MAX_ABS_ERR_MAX_PCT;
            if (rej) got |= j ? REJH : REJ2;
            len += snprintf(line + len, sizeof line - (size_t)len, "  x%.1f: %-8s (%s)", f, rej ? "rejected" : "passes",
                            worst);
        }
        fprintf(stderr, "%s\n", line);
        if (got != want) fprintf(stderr, "  ^ %s: caught %d, the table says %d\n", TERMS[k].name, got, want);
        PB_CHECK(got == want);
        if (want) PB_CHECK(moved);
    }
    free(base);
    free(pred);
    pb_val_free(tab);
}

/* ---------------------------------------------------------------------------------------
 * the table loader */

static char *write_tmp(const char *text) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/pb_test_validate_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

#define HDR "source,model,gpu,tp,engine,kind,params,measured_ms,skip,ref\n"

PB_TEST(table_loads_and_rejects_bad_rows) {
    pb_cfg_err e;
    pb_val_table *t;
    char *p = write_tmp("# comment\n" HDR "s,opt-13b,a100-80gb,1,vllm,decode,batch=8 ctx=100..120,30,,r\n"
                        "s,opt-13b,a100-80gb,1,ft,ft_batch,batch=2 beams=2 in=9 out=10,80,,r\n"
                        "s,opt-13b,a100-80gb,1,vllm,prefill,prompt=300 chunk=128,50,why not,r\n");
    PB_REQUIRE(p);
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_val_load(p, &t, &e) == PB_OK);
    PB_CHECK_EQ_INT(t->n, 3);
    PB_CHECK_EQ_INT(t->rows[0].batch, 8);
    PB_CHECK_EQ_INT(t->rows[0].ctx_lo, 100);
    PB_CHECK_EQ_INT(t->rows[0].ctx_hi, 120);
    PB_CHECK_EQ_INT(t->rows[0].line, 3);
    PB_CHECK_EQ_INT(t->rows[1].engine, PB_VAL_FT);
    PB_CHECK_EQ_INT(t->rows[1].out, 10);
    PB_CHECK_EQ_INT(t->rows[2].chunk, 128);
    PB_CHECK(!strcmp(t->rows[2].skip, "why not"));
    PB_CHECK(pb_val_check(t) == PB_OK);
    t->rows[0].ctx_lo = 200;   /* the checker sees a broken invariant */
    PB_CHECK(pb_val_check(t) != PB_OK);
    pb_val_free(t);
    unlink(p);

    struct { const char *row, *msg; } bad[] = {
        {"s,opt-13b,a100-80gb,1,vllm,decod,batch=8 ctx=1,30,,r\n", ":2:28: kind: 'decod' is not"},
        {"s,opt-13b,a100-80gb,1,vllm,decode,batch=8,30,,r\n", ":2:35: params: kind decode needs ctx="},
        {"s,opt-13b,a100-80gb,1,vllm,decode,batch=8 ctx=9..3,30,,r\n", ":2:47: params: ctx=9..3: want"},
        {"s,opt-13b,a100-80gb,1,vllm,prefill,prompt=8 beams=2,30,,r\n", ":2:45: params: 'beams' is not a parameter"},
        {"s,opt-13b,a100-80gb,0,vllm,prefill,prompt=8,30,,r\n", ":2:21: tp: '0' is not"},
        {"s,opt-13b,a100-80gb,1,tgi,prefill,prompt=8,30,,r\n", ":2:23: engine: 'tgi' is not vllm|ft"},
        {"s,opt-13b,a100-80gb,1,vllm,prefill,prompt=8,-3,,r\n", ":2:45: measured_ms: '-3'"},
        {"s,opt-13b,a100-80gb,1,vllm,prefill,prompt=8,3,r\n", ":2:1: row has 9 cells, the header 10"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, HDR "%s", bad[i].row);
        p = write_tmp(text);
        PB_REQUIRE(p);
        pb_cfg_err_clear(&e);
        t = (pb_val_table *)1;
        PB_CHECK(pb_val_load(p, &t, &e) == PB_ERR_INVALID);
        PB_CHECK(t == NULL);
        PB_CHECK_STR_CONTAINS(e.msg, bad[i].msg);
        unlink(p);
    }
    p = write_tmp("source,model,gpu,tp,engine,kind,params,measured,skip,ref\n");
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_val_load(p, &t, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, ":1:40: header: unknown column 'measured'");
    PB_CHECK_STR_CONTAINS(e.msg, "header: column 'measured_ms' missing");
    unlink(p);
}

PB_TEST(unknown_spec_is_an_error_at_its_cell_before_any_prediction) {
    pb_cfg_err e;
    pb_val_table *t;
    char *p = write_tmp(HDR "s,opt-13b,a100-80gb,1,vllm,prefill,prompt=8,3,,r\n"
                            "s,opt-14b,a100-80gb,1,vllm,prefill,prompt=8,3,,r\n"
                            "s,opt-13b,a100-80gb,3,vllm,prefill,prompt=8,3,,r\n");
    PB_REQUIRE(p);
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_val_load(p, &t, &e) == PB_OK);
    double pred[3];
    char hw[2048];
    snprintf(hw, sizeof hw, "%s/hardware", pb_spec_dir());
    PB_CHECK(pb_val_predict(t, pb_spec_dir(), hw, pred, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, ":3:3: model: no spec");
    PB_CHECK_STR_CONTAINS(e.msg, ":4:21: tp: opt-13b on a100-80gb at tp 3");
    PB_CHECK(isnan(pred[0]));   /* nothing predicted */
    pb_val_free(t);
    unlink(p);
}

/* ---------------------------------------------------------------------------------------
 * predictions agree with the sim's own convenience functions */

PB_TEST(row_predictions_match_the_sim_api) {
    pb_model m;
    pb_hw hw;
    pb_sim_cost c;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_model_load(pb_spec_dir(), "yi-34b", &m, &e) == PB_OK);
    PB_CHECK_EQ_INT(m.n_kv_heads, 8);        /* GQA reaches the model */
    PB_CHECK_EQ_INT(m.arch, PB_ARCH_LLAMA);
    PB_REQUIRE(pb_hw_load(pb_spec_dir(), "a100-80gb", &hw, &e) == PB_OK);
    PB_REQUIRE(pb_sim_cost_load(pb_spec_dir(), "a100-80gb", &c, &e) == PB_OK);
    pb_sim_params pv = pb_val_engine_params(PB_VAL_VLLM), pf = pb_val_engine_params(PB_VAL_FT);
    PB_CHECK(pv.attn == PB_SIM_ATTN_PAGED && pv.framework == PB_SIM_FW_PYTHON);
    PB_CHECK(pf.attn == PB_SIM_ATTN_CONTIGUOUS && pf.framework == PB_SIM_FW_CPP);
    pb_sim *s, *sf;
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 2, &pv, &s, &e) == PB_OK);
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 2, &pf, &sf, &e) == PB_OK);

    pb_val_row r;
    memset(&r, 0, sizeof r);
    r.tp = 2;
    r.measured_ms = 1;
    /* decode: the mean over ctx of pb_sim_decode_time */
    r.kind = PB_VAL_DECODE;
    r.batch = 8;
    r.ctx_lo = 1000;
    r.ctx_hi = 1040;
    double want = 0;
    for (int ctx = 1000; ctx <= 1040; ctx++) want += pb_sim_decode_time(s, 8, ctx, PB_VAL_VLLM_BLOCK);
    want = want / 41 * 1e3;
    PB_CHECK_NEAR(pb_val_predict_row(s, &r), want, 1e-9 * want);
    /* prefill unchunked: pb_sim_prefill_time; chunked costs more (cached-prefix attention
       reads, one framework overhead per chunk) */
    memset(&r, 0, sizeof r);
    r.tp = 2;
    r.kind = PB_VAL_PREFILL;
    r.prompt = 4095;
    double whole = pb_val_predict_row(s, &r);
    PB_CHECK_NEAR(whole, pb_sim_prefill_time(s, 4095) * 1e3, 1e-9 * whole);
    r.chunk = 4096;
    PB_CHECK_NEAR(pb_val_predict_row(s, &r), whole, 1e-9 * whole);
    r.chunk = 512;
    PB_CHECK(pb_val_predict_row(s, &r) > whole);
    /* hybrid: more than its prefill alone, less than prefill + a separate decode step */
    memset(&r, 0, sizeof r);
    r.tp = 2;
    r.kind = PB_VAL_HYBRID;
    r.prompt = 1021;
    r.batch = 3;
    r.ctx_lo = r.ctx_hi = 1030;
    double hyb = pb_val_predict_row(s, &r);
    double pre = pb_sim_prefill_time(s, 1021) * 1e3, dec = pb_sim_decode_time(s, 3, 1030, PB_VAL_VLLM_BLOCK) * 1e3;
    PB_CHECK(hyb > pre && hyb < pre + dec);
    /* ft_batch: out = 1 is the context pass alone (beams share it when batch > 1); each extra
       output token adds one decode step of batch x beams contiguous sequences */
    memset(&r, 0, sizeof r);
    r.tp = 2;
    r.engine = PB_VAL_FT;
    r.kind = PB_VAL_FT_BATCH;
    r.batch = 4;
    r.beams = 2;
    r.in = 50;
    r.out = 1;
    double ctx_pass = pb_val_predict_row(sf, &r);
    r.out = 3;
    double three = pb_val_predict_row(sf, &r);
    double steps = (pb_sim_decode_time(sf, 8, 51, 0) + pb_sim_decode_time(sf, 8, 52, 0)) * 1e3;
    PB_CHECK_NEAR(three - ctx_pass, steps, 1e-9 * three);
    pb_sim_destroy(s);
    pb_sim_destroy(sf);
}

PB_TEST(new_model_specs_load_with_their_shapes) {
    struct { const char *name; int layers, hidden, heads, kv, ffn, vocab; pb_arch arch; } want[] = {
        {"yi-34b", 60, 7168, 56, 8, 20480, 64000, PB_ARCH_LLAMA},
        {"llama-2-70b", 80, 8192, 64, 8, 28672, 32000, PB_ARCH_LLAMA},
        {"bloom-176b", 70, 14336, 112, 112, 57344, 250880, PB_ARCH_OPT},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        pb_model m;
        pb_cfg_err e;
        pb_cfg_err_clear(&e);
        PB_REQUIRE(pb_model_load(pb_spec_dir(), want[i].name, &m, &e) == PB_OK);
        PB_CHECK_EQ_INT(m.n_layers, want[i].layers);
        PB_CHECK_EQ_INT(m.hidden, want[i].hidden);
        PB_CHECK_EQ_INT(m.n_heads, want[i].heads);
        PB_CHECK_EQ_INT(m.n_kv_heads, want[i].kv);
        PB_CHECK_EQ_INT(m.head_size, 128);
        PB_CHECK_EQ_INT(m.ffn, want[i].ffn);
        PB_CHECK_EQ_INT(m.vocab, want[i].vocab);
        PB_CHECK_EQ_INT(m.arch, want[i].arch);
        /* the parameter count in the spec is the one its shapes give (within 0.5%) */
        double h = m.hidden, kvd = (double)m.n_kv_heads * m.head_size;
        double layer = 2 * h * h + 2 * h * kvd + (m.arch == PB_ARCH_LLAMA ? 3 : 2) * h * m.ffn;
        double emb = (m.arch == PB_ARCH_LLAMA ? 2.0 : 1.0) * m.vocab * h;
        double count = m.n_layers * layer + emb;
        PB_CHECK(fabs(count - m.n_params) < 0.005 * m.n_params);
    }
}

PB_TEST_MAIN()
