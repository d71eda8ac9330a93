/* point_out.c -- a serving point's metrics, checks and side files (point_out.h). */
#include "point_out.h"

#include "measure.h"
#include "workload.h"   /* pb_workload_schema: workload.duration_s */

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

int pb_point_percentiles(const pb_node *root, double *p) {
    int n = 0;
    p[n++] = 50;
    const pb_node *pc = pb_node_get(root, "percentiles");
    if (!pc) { p[n++] = 90; p[n++] = 99; }
    for (int i = 0; pc && i < pc->n_kids && i < PB_POINT_MAX_PCTS; i++) p[n++] = strtod(pc->kids[i]->value, NULL);
    for (int i = 1; i < n; i++)   /* sort (insertion: at most 9) */
        for (int j = i; j > 0 && p[j] < p[j - 1]; j--) { double t = p[j]; p[j] = p[j - 1]; p[j - 1] = t; }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || p[i] != p[k - 1]) p[k++] = p[i];
    return k;
}

void pb_point_pct_name(const char *what, double p, char *buf, size_t n) {
    if (p == floor(p)) snprintf(buf, n, "%s_p%.0f_ms", what, p);
    else snprintf(buf, n, "%s_p%.10g_ms", what, p);
}

/* ---- the metrics: one table (point_out.h lists them) ----
 * Each is a field of the run's summary times a scale, defined only when the run has
 * what it measures: latencies need a finished request, batch and memory averages a
 * step, throughputs a duration.  An undefined metric is NaN: an empty CSV cell, null
 * in the JSON, never a zero that would plot as the best result. */
enum { ALWAYS, IF_FINISHED, IF_STEPS, IF_DURATION };
typedef struct {
    const char *name;
    size_t off;                 /* offsetof(pb_run_summary, field)              */
    bool i64;                   /* an int64_t field (else double)               */
    double scale;
    int defined;
} metric_def;
#define MD(name, field, scale, when) {name, offsetof(pb_run_summary, field), false, scale, when}
#define MI(name, field) {name, offsetof(pb_run_summary, field), true, 1, ALWAYS}
static const metric_def METRICS[] = {
    MD("normalized_latency", norm_latency_mean, 1, IF_FINISHED),
    MD("normalized_latency_p50", norm_latency_p50, 1, IF_FINISHED),
    MD("normalized_latency_p90", norm_latency_p90, 1, IF_FINISHED),
    MD("normalized_latency_p99", norm_latency_p99, 1, IF_FINISHED),
    MD("batched_requests", avg_batched_requests, 1, IF_STEPS),
    MD("batched_seqs", avg_batched_seqs, 1, IF_STEPS),
    MD("token_states_pct", mem_token_frac, 100, IF_STEPS),
    MD("reservation_pct", mem_reserved_frac, 100, IF_STEPS),
    MD("internal_frag_pct", mem_internal_frac, 100, IF_STEPS),
    MD("external_frag_pct", mem_free_frac, 100, IF_STEPS),
    MD("saving_pct", mem_saving, 100, IF_STEPS),
    MD("request_throughput_per_s", req_throughput, 1, IF_DURATION),
    MD("output_token_throughput_per_s", output_tok_throughput, 1, IF_DURATION),
    MD("total_token_throughput_per_s", total_tok_throughput, 1, IF_DURATION),
    MI("input_tokens", prompt_tokens),   /* the first after the latencies (set_metrics) */
    MI("output_tokens", output_tokens),
    MD("duration_s", duration_s, 1, ALWAYS),
    MI("n_requests", n_requests),
    MI("n_finished", n_finished),
    MI("n_rejected", n_rejected),
    MI("n_unfinished", n_unfinished),
    MI("preempt_recompute", n_preempt_recompute),
    MI("preempt_swap", n_preempt_swap),
    MD("swap_gib", swap_bytes, 1.0 / GIB, ALWAYS),
    MI("steps", n_steps),
};
/* set outside the table: the latencies (latency_metrics, over the requests), the
   checks and SLO (below), the prefix cache's hit rate, the KV space, the dropped
   requests and, with a CPU tier, the hits per tier and the tier's spills, reloads and
   size in blocks (system.c), the measurement window's counts (measure.h), the error
   bars: the step-time factor interval and the banded metrics' 80% intervals
   (uncertainty.h) */
static const char *const OTHER_METRICS[] = {
    "max_concurrent_requests", "complete", "slo_ttft_ms", "slo_tpot_ms", "slo_e2el_ms", "goodput_fraction",
    "goodput_per_s", "slo_met", "prefix_hit_pct", "kv_slots", "kv_blocks", "n_dropped", "n_aborted", "prefix_hit_pct_gpu",
    "prefix_hit_pct_cpu", "kv_tier_spills", "kv_tier_reloads", "kv_tier_blocks", "measured_requests",
    "measured_steps", "step_factor_lo", "step_factor_hi", "normalized_latency_lo", "normalized_latency_hi",
    "ttft_mean_ms_lo", "ttft_mean_ms_hi", "tpot_mean_ms_lo", "tpot_mean_ms_hi", "e2el_mean_ms_lo", "e2el_mean_ms_hi",
    "request_throughput_per_s_lo", "request_throughput_per_s_hi", "output_token_throughput_per_s_lo",
    "output_token_throughput_per_s_hi", "batched_requests_lo", "batched_requests_hi", "saving_pct_lo",
    "saving_pct_hi", "token_states_pct_lo", "token_states_pct_hi"};
/* the latencies, each with _mean_ms, _std_ms and _p<P>_ms for the experiment's percentiles */
static const char *const LATENCIES[] = {"ttft", "tpot", "itl", "e2el"};

bool pb_point_metric_known(const pb_node *root, const char *name) {
    for (size_t i = 0; i < PB_ARRAY_LEN(METRICS); i++)
        if (!strcmp(METRICS[i].name, name)) return true;
    for (size_t i = 0; i < PB_ARRAY_LEN(OTHER_METRICS); i++)
        if (!strcmp(OTHER_METRICS[i], name)) return true;
    double p[PB_POINT_MAX_PCTS + 1];
    int np = pb_point_percentiles(root, p);
    char buf[48];
    for (size_t i = 0; i < PB_ARRAY_LEN(LATENCIES); i++) {
        for (int k = -2; k < np; k++) {
            if (k < 0) snprintf(buf, sizeof buf, "%s_%s_ms", LATENCIES[i], k == -2 ? "mean" : "std");
            else pb_point_pct_name(LATENCIES[i], p[k], buf, sizeof buf);
            if (!strcmp(buf, name)) return true;
        }
    }
    return false;
}

void pb_point_metric_names(const pb_node *root, char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < PB_ARRAY_LEN(METRICS) + PB_ARRAY_LEN(OTHER_METRICS) && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? " " : "",
                              i < PB_ARRAY_LEN(METRICS) ? METRICS[i].name : OTHER_METRICS[i - PB_ARRAY_LEN(METRICS)]);
    double p[PB_POINT_MAX_PCTS + 1];
    int np = pb_point_percentiles(root, p);
    for (size_t i = 0; i < PB_ARRAY_LEN(LATENCIES) && k < n; i++) {
        k += (size_t)snprintf(buf + k, n - k, " %s_mean_ms %s_std_ms", LATENCIES[i], LATENCIES[i]);
        for (int j = 0; j < np && k < n; j++) {
            char one[48];
            pb_point_pct_name(LATENCIES[i], p[j], one, sizeof one);
            k += (size_t)snprintf(buf + k, n - k, " %s", one);
        }
    }
}

/* The table's metrics before (first) or after the latencies, which the CSV puts after
   the throughputs: a CSV's columns come in the order a point sets them. */
static void set_metrics(pb_point_metrics *out, const pb_run_summary *s, bool first) {
    bool defined[] = {[ALWAYS] = true, [IF_FINISHED] = s->n_finished > 0, [IF_STEPS] = s->n_steps > 0,
                      [IF_DURATION] = s->duration_s > 0};
    size_t at = 0;
    while (strcmp(METRICS[at].name, "input_tokens")) at++;
    for (size_t i = first ? 0 : at; i < (first ? at : PB_ARRAY_LEN(METRICS)); i++) {
        const metric_def *d = &METRICS[i];
        const char *f = (const char *)s + d->off;
        double v = d->i64 ? (double)*(const int64_t *)f : *(const double *)f * d->scale;
        pb_pm_set(out, d->name, defined[d->defined] ? v : NAN);
    }
    if (!first && s->prefix_caching) pb_pm_set(out, "prefix_hit_pct", s->prefix_query_tokens > 0 ? 100 * s->prefix_hit_frac : NAN);
}

/* ---- per-request passes (pb_metrics_each_request) ---- */
typedef struct {
    double ttft, tpot, e2el;   /* SLO bounds, ms; <= 0: none */
    bool on;
} slo_bounds;

/* A finished request's own SLO verdict (vLLM bench serve's goodput rule: TPOT counts 0
 * for a single output token). */
static bool request_meets(const slo_bounds *b, const pb_req_metrics *r, const pb_req_latency *l) {
    if (!r->finished) return false;
    if (b->ttft > 0 && !(l->ttft_ms <= b->ttft)) return false;
    if (b->tpot > 0 && !isnan(l->tpot_ms) && !(l->tpot_ms <= b->tpot)) return false;
    if (b->e2el > 0 && !(l->e2e_s * 1e3 <= b->e2el)) return false;
    return true;
}

typedef enum { LAT_TTFT, LAT_TPOT, LAT_E2EL } lat_kind;
typedef struct {
    lat_kind k;
    double *v;
    int64_t n;
    double from, to;   /* the arrivals counted */
} lat_pass;

static void collect_latency(const pb_req_metrics *r, void *user) {
    lat_pass *lp = user;
    if (!r->finished || r->arrival_s < lp->from || r->arrival_s > lp->to) return;
    pb_req_latency l = pb_req_latency_of(r);
    double x = lp->k == LAT_TTFT ? l.ttft_ms : lp->k == LAT_TPOT ? l.tpot_ms : l.e2e_s * 1e3;
    if (!isnan(x)) lp->v[lp->n++] = x;
}

/* Rank k's value of v[lo..hi) (unsorted; reordered so that v[lo..k] <= v[k] <= v(k..hi)):
 * quickselect, median of three. */
static double select_rank(double *v, int64_t lo, int64_t hi, int64_t k) {
    while (hi - lo > 1) {
        double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
        double piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        int64_t lt = lo, i = lo, gt = hi;   /* v[lo..lt) < piv, v[lt..i) == piv, v[gt..hi) > piv */
        while (i < gt) {
            double t = v[i];
            if (t < piv) { v[i++] = v[lt]; v[lt++] = t; }
            else if (t > piv) { v[i] = v[--gt]; v[gt] = t; }
            else i++;
        }
        if (k < lt) hi = lt;
        else if (k >= gt) lo = gt;
        else return piv;
    }
    return v[k];
}

/* mean (values summed in order), population std and the percentiles p[0..np) (ascending)
 * of v[0..n) with numpy's linear interpolation between closest ranks; reorders v. */
static void stats(double *v, int64_t n, const double *p, int np, double *mean, double *std, double *out) {
    double sum = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) sum += v[i];
    *mean = n ? sum / (double)n : NAN;
    for (int64_t i = 0; i < n; i++) ss += (v[i] - *mean) * (v[i] - *mean);
    *std = n ? sqrt(ss / (double)n) : NAN;
    int64_t from = 0;
    for (int k = 0; k < np; k++) {
        if (n == 0) { out[k] = NAN; continue; }
        double pos = p[k] / 100.0 * (double)(n - 1);
        int64_t lo = (int64_t)pos;
        if (lo >= n - 1) { out[k] = select_rank(v, from, n, n - 1); continue; }
        double vlo = select_rank(v, from, n, lo), next = v[lo + 1];
        for (int64_t i = lo + 2; i < n; i++) if (v[i] < next) next = v[i];
        out[k] = vlo + (pos - (double)lo) * (next - vlo);
        from = lo;
    }
}

/* The latency metrics of `what`: mean, std, the percentiles; also *p99 (the SLO check's). */
static void set_latency(pb_point_metrics *out, const char *what, double mean, double sd, const double *p,
                        const double *v, int np) {
    char name[48];
    snprintf(name, sizeof name, "%s_mean_ms", what);
    pb_pm_set(out, name, mean);
    snprintf(name, sizeof name, "%s_std_ms", what);
    pb_pm_set(out, name, sd);
    for (int k = 0; k < np; k++) {
        pb_point_pct_name(what, p[k], name, sizeof name);
        pb_pm_set(out, name, v[k]);
    }
}

void pb_point_latencies(pb_metrics *m, const pb_node *root, double from, double to, pb_point_metrics *out,
                        double p99[3]) {
    static const char *const NAMES[] = {"ttft", "tpot", "e2el"};
    double p[PB_POINT_MAX_PCTS + 1];
    int np = pb_point_percentiles(root, p);
    int64_t n_rows;
    pb_metrics_requests(m, &n_rows);
    double q[PB_POINT_MAX_PCTS + 2], v[PB_POINT_MAX_PCTS + 2];
    int nq = 0;
    bool has99 = false;
    for (int k = 0; k < np; k++) has99 |= p[k] == 99;
    for (int k = 0; k < np; k++) {   /* p with 99 inserted in order */
        if (!has99 && p[k] > 99 && (nq == 0 || q[nq - 1] < 99)) q[nq++] = 99;
        q[nq++] = p[k];
    }
    if (!has99 && (nq == 0 || q[nq - 1] < 99)) q[nq++] = 99;
    lat_pass lp = {LAT_TTFT, pb_xmalloc((size_t)(n_rows + 1) * sizeof(double)), 0, from, to};
    for (int k = 0; k < 3; k++) {
        lp.k = (lat_kind)k;
        lp.n = 0;
        pb_metrics_each_request(m, true, collect_latency, &lp);
        double mean, sd;
        stats(lp.v, lp.n, q, nq, &mean, &sd, v);
        double shown[PB_POINT_MAX_PCTS + 2];
        int ns = 0;
        for (int i = 0; i < nq; i++) {
            if (q[i] == 99) p99[k] = v[i];
            if (q[i] != 99 || has99) shown[ns++] = v[i];
        }
        set_latency(out, NAMES[k], mean, sd, p, shown, ns);
        if (k == 1) {   /* the ITLs after TPOT, as in vLLM's block */
            double im, isd, iv[PB_POINT_MAX_PCTS + 2];
            pb_metrics_itl_stats(m, p, np, &im, &isd, iv);
            set_latency(out, "itl", im, isd, p, iv, np);
        }
    }
    free(lp.v);
}

/* vLLM's "Peak concurrent requests": over finished requests, each counts in every whole
 * second (from the first arrival) from int(arrival) to int(finish); the largest count. */
typedef struct {
    double t0, t1;
    int64_t *cnt, n_sec;
} conc_pass;

static void conc_range(const pb_req_metrics *r, void *user) {
    conc_pass *c = user;
    if (!r->finished) return;
    if (r->arrival_s < c->t0) c->t0 = r->arrival_s;
    if (r->finish_s > c->t1) c->t1 = r->finish_s;
}

static void conc_add(const pb_req_metrics *r, void *user) {
    conc_pass *c = user;
    if (!r->finished) return;
    int64_t a = (int64_t)(r->arrival_s - c->t0), b = (int64_t)(r->finish_s - c->t0);
    c->cnt[a]++;
    if (b + 1 < c->n_sec) c->cnt[b + 1]--;
}

static double max_concurrent(const pb_metrics *m, int64_t n_finished) {
    if (n_finished == 0) return NAN;
    conc_pass c = {INFINITY, -INFINITY, NULL, 0};
    pb_metrics_each_request(m, true, conc_range, &c);
    c.n_sec = (int64_t)ceil(c.t1 - c.t0) + 2;
    c.cnt = pb_xcalloc((size_t)c.n_sec, sizeof *c.cnt);
    pb_metrics_each_request(m, true, conc_add, &c);
    int64_t run = 0, best = 0;
    for (int64_t i = 0; i < c.n_sec; i++) {
        run += c.cnt[i];
        if (run > best) best = run;
    }
    free(c.cnt);
    return (double)best;
}

/* Goodput and, when f is set, the per-request rows. */
typedef struct {
    const slo_bounds *b;
    int64_t met;
    FILE *f;
} req_pass;

static void request_row(const pb_req_metrics *r, void *user) {
    req_pass *q = user;
    pb_req_latency l = pb_req_latency_of(r);
    bool ok = request_meets(q->b, r, &l);
    q->met += ok;
    if (!q->f) return;
    pb_metrics_write_request_row(q->f, r, NULL);
    fputc(',', q->f);
    if (q->b->on) fputc(ok ? '1' : '0', q->f);
    fputc('\n', q->f);
}

/* Write a side file: header line, then the rows, to a unique temporary (pb.h), then
   rename -- concurrent runs writing one point never share a temporary. */
static pb_status write_side(const char *path, const pb_metrics *m, bool steps, req_pass *rq, char *err, size_t err_n) {
    char tmp[4400];
    pb_tmp_path(path, tmp, sizeof tmp);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, err_n, "%s: cannot write: %s", tmp, strerror(errno));
        return PB_ERR_IO;
    }
    fprintf(f, "%s\n", steps ? PB_METRICS_STEP_COLUMNS : PB_POINT_REQUEST_COLUMNS);
    if (steps) pb_metrics_write_steps(m, f, NULL);
    else {
        rq->f = f;
        rq->met = 0;
        pb_metrics_each_request(m, false, request_row, rq);
        rq->f = NULL;
    }
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0) bad = true;
    if (bad || rename(tmp, path) != 0) {
        snprintf(err, err_n, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
        return PB_ERR_IO;
    }
    return PB_OK;
}

/* ---- the summary block ---- */
static void block_latency(FILE *f, const pb_point_metrics *out, const char *header, const char *what,
                          const char *label, const double *p, int np) {
    char name[48], line[96];
    fprintf(f, "%s\n", header);
    static const char *const STAT[][2] = {{"mean", "Mean"}, {"std", "Std"}};
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "%s_%s_ms", what, STAT[i][0]);
        snprintf(line, sizeof line, "%s %s (ms):", STAT[i][1], label);
        fprintf(f, "%-40s %.2f\n", line, pb_pm_get(out, name, NAN));
    }
    for (int k = 0; k < np; k++) {
        pb_point_pct_name(what, p[k], name, sizeof name);
        if (p[k] == 50) snprintf(line, sizeof line, "Median %s (ms):", label);
        else snprintf(line, sizeof line, "P%.10g %s (ms):", p[k], label);
        fprintf(f, "%-40s %.2f\n", line, pb_pm_get(out, name, NAN));
    }
}

static void print_block(FILE *f, const pb_run_summary *s, const pb_point_metrics *out, const char *title,
                        const double *p, int np) {
    fprintf(f, "============ Serving Benchmark Result ============\n");
    if (title && *title) fprintf(f, "%-40s %s\n", "System:", title);
    fprintf(f, "%-40s %lld\n", "Successful requests:", (long long)s->n_finished);
    char ab[64] = "";   /* aborted requests: only a served run has them */
    if (s->n_aborted) snprintf(ab, sizeof ab, ", %lld aborted", (long long)s->n_aborted);
    fprintf(f, "%-40s %lld (%lld rejected%s, %lld unfinished)\n", "Failed requests:",
            (long long)(s->n_rejected + s->n_aborted + s->n_unfinished), (long long)s->n_rejected, ab,
            (long long)s->n_unfinished);
    fprintf(f, "%-40s %.2f\n", "Benchmark duration (s):", s->duration_s);
    fprintf(f, "%-40s %lld\n", "Total input tokens:", (long long)s->prompt_tokens);
    fprintf(f, "%-40s %lld\n", "Total generated tokens:", (long long)s->output_tokens);
    fprintf(f, "%-40s %.2f\n", "Request throughput (req/s):", s->req_throughput);
    double gp = pb_pm_get(out, "goodput_per_s", NAN);
    if (!isnan(gp)) fprintf(f, "%-40s %.2f\n", "Request goodput (req/s):", gp);
    fprintf(f, "%-40s %.2f\n", "Output token throughput (tok/s):", s->output_tok_throughput);
    fprintf(f, "%-40s %.0f\n", "Peak concurrent requests:", pb_pm_get(out, "max_concurrent_requests", NAN));
    fprintf(f, "%-40s %.2f\n", "Total token throughput (tok/s):", s->total_tok_throughput);
    fprintf(f, "---------------Normalized Latency-----------------\n");
    fprintf(f, "%-40s %.4f\n", "Mean normalized latency (s/token):", s->norm_latency_mean);
    fprintf(f, "%-40s %.4f\n", "P99 normalized latency (s/token):", s->norm_latency_p99);
    block_latency(f, out, "---------------Time to First Token----------------", "ttft", "TTFT", p, np);
    block_latency(f, out, "-----Time per Output Token (excl. 1st token)------", "tpot", "TPOT", p, np);
    block_latency(f, out, "---------------Inter-token Latency----------------", "itl", "ITL", p, np);
    block_latency(f, out, "----------------End-to-end Latency---------------", "e2el", "E2EL", p, np);
    fprintf(f, "-------------------Scheduling---------------------\n");
    fprintf(f, "%-40s %lld (%lld prefill)\n", "Steps:", (long long)s->n_steps, (long long)s->n_prefill_steps);
    fprintf(f, "%-40s %.2f\n", "Avg batched requests:", s->avg_batched_requests);
    fprintf(f, "%-40s %lld recompute, %lld swap (%.3f GiB out + in)\n", "Preemptions:",
            (long long)s->n_preempt_recompute, (long long)s->n_preempt_swap, s->swap_bytes / GIB);
    if (s->prefix_caching)
        fprintf(f, "%-40s %.1f%% (%lld of %lld tokens)\n", "Prefix-cache hits:", 100 * s->prefix_hit_frac,
                (long long)s->prefix_hit_tokens, (long long)s->prefix_query_tokens);
    fprintf(f, "%-40s %.1f%% token states, %.1f%% reserved, %.1f%% internal frag., %.1f%% external + free\n",
            "KV cache usage:", 100 * s->mem_token_frac, 100 * s->mem_reserved_frac, 100 * s->mem_internal_frac,
            100 * s->mem_free_frac);
    fprintf(f, "==================================================\n");
}

/* "p99 TTFT 812.40 ms > 200 ms" (the comparison as it came out) into buf at *k. */
static void slo_clause(char *buf, size_t n, size_t *k, const char *what, double v, double bound) {
    if (!(bound > 0) || *k >= n) return;
    *k += (size_t)snprintf(buf + *k, n - *k, "%sp99 %s %.2f ms %s %g ms", *k ? "; " : "", what, v,
                           v <= bound ? "<=" : ">", bound);
}

pb_status pb_point_out_fill(const pb_point_ctx *pt, pb_metrics *m, const char *title,
                            pb_point_metrics *out, char *err, size_t err_n) {
    pb_run_summary s;
    pb_metrics_summary(m, &s);
    set_metrics(out, &s, true);
    pb_measure w = pb_measure_from_root(pt->root);   /* the declared window's averages replace the run's */
    /* the trace's end: workload.duration_s as given, else 0 (measure.h: the last arrival) */
    double trace_end = pb_schema_num_or(pb_workload_schema, pb_node_get(pt->root, "workload"), "duration_s", 0);
    double from, to, p99[3] = {0, 0, 0};
    pb_measure_request_window(&w, trace_end, m, &from, &to);
    pb_point_latencies(m, pt->root, from, to, out, p99);
    double p[PB_POINT_MAX_PCTS + 1];   /* the percentiles the summary block shows */
    int np = pb_point_percentiles(pt->root, p);
    set_metrics(out, &s, false);
    pb_pm_set(out, "max_concurrent_requests", max_concurrent(m, s.n_finished));
    if (s.n_aborted) pb_pm_set(out, "n_aborted", (double)s.n_aborted);   /* a served run's only */
    pb_measure_apply(&w, trace_end, m, out);
    bool complete = s.n_unfinished == 0 && s.n_rejected == 0 && s.n_finished == s.n_requests;
    pb_pm_set(out, "complete", complete ? 1 : 0);

    const pb_node *slo = pb_node_get(pt->root, "slo");
    slo_bounds b = {pb_schema_num(pb_experiment_schema, pt->root, "slo.ttft_ms"),
                    pb_schema_num(pb_experiment_schema, pt->root, "slo.tpot_ms"),
                    pb_schema_num(pb_experiment_schema, pt->root, "slo.e2el_ms"), slo != NULL};
    req_pass rq = {&b, 0, NULL};
    bool slo_ok = false;
    if (slo) {
        pb_metrics_each_request(m, true, request_row, &rq);   /* goodput: finished requests only */
        slo_ok = complete && (b.ttft <= 0 || p99[0] <= b.ttft) && (b.tpot <= 0 || p99[1] <= b.tpot) &&
                 (b.e2el <= 0 || p99[2] <= b.e2el);
        if (b.ttft > 0) pb_pm_set(out, "slo_ttft_ms", b.ttft);
        if (b.tpot > 0) pb_pm_set(out, "slo_tpot_ms", b.tpot);
        if (b.e2el > 0) pb_pm_set(out, "slo_e2el_ms", b.e2el);
        pb_pm_set(out, "goodput_fraction", s.n_requests > 0 ? (double)rq.met / (double)s.n_requests : NAN);
        pb_pm_set(out, "goodput_per_s", s.duration_s > 0 ? (double)rq.met / s.duration_s : NAN);
        pb_pm_set(out, "slo_met", slo_ok ? 1 : 0);
    }

    char *text = NULL;
    size_t tl = 0;
    FILE *mf = open_memstream(&text, &tl);
    if (mf) {
        print_block(mf, &s, out, title, p, np);
        if (slo) fprintf(mf, "%-40s %.2f%% (%lld requests)\n", "Goodput (meet the SLO, of all):",
                         100 * pb_pm_get(out, "goodput_fraction", 0), (long long)rq.met);
        double dropped = pb_pm_get(out, "n_dropped", 0);
        char drop[160] = "";
        if (dropped > 0)
            snprintf(drop, sizeof drop, "; %.0f more dropped before the run: prompt longer than the model's context",
                     dropped);
        fprintf(mf, "Check complete: %s (%lld of %lld requests finished, %lld rejected, %lld unfinished%s)\n",
                complete ? "PASS" : "FAIL", (long long)s.n_finished, (long long)s.n_requests,
                (long long)s.n_rejected, (long long)s.n_unfinished, drop);
        if (!slo) fprintf(mf, "Check slo_met: n/a (no `slo:` in the experiment)\n");
        else {
            char why[256] = "";
            size_t k = 0;
            slo_clause(why, sizeof why, &k, "TTFT", p99[0], b.ttft);
            slo_clause(why, sizeof why, &k, "TPOT", p99[1], b.tpot);
            slo_clause(why, sizeof why, &k, "E2EL", p99[2], b.e2el);
            fprintf(mf, "Check slo_met: %s (%s%s)\n", slo_ok ? "PASS" : "FAIL", k ? why : "no bound set",
                    complete ? "" : "; not every request finished");
        }
        fclose(mf);
        snprintf(out->summary, sizeof out->summary, "%s", text ? text : "");
        free(text);
    }

    pb_status st = PB_OK;
    if (pt->requests_path) st = write_side(pt->requests_path, m, false, &rq, err, err_n);
    if (!st && pt->timeline_path) st = write_side(pt->timeline_path, m, true, &rq, err, err_n);
    return st;
}
