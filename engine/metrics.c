/* metrics.c -- recording and summarising a run (see metrics.h). */
#include "metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double value;
    int64_t count;            /* >= 1 bitwise-equal values in a row */
} val_run;

struct pb_metrics {
    bool record_steps;
    const pb_request *trace;  /* the run's trace (pb_metrics_begin): requests [0, n_trace) */
    int64_t n_trace;
    int32_t max_len;          /* their groups' max_model_len                         */
    pb_req_metrics *reqs;     /* rows 0..n_rows-1, made in id order (pb_metrics_req);
                                 those past the trace made when added               */
    int64_t n_reqs, n_rows, cap_rows;
    pb_step_metrics *steps;
    int64_t n_steps_rec, cap_steps;
    /* aggregates over all steps */
    int64_t n_steps, n_prefill_steps;
    double busy_s, groups_x_t, seqs_x_t;
    double mem_token, mem_reserved, mem_internal, mem_free;   /* sums of fractions */
    int64_t mem_steps;
    double logical_sum, saved_sum;
    double clock_s;
    val_run *itl;             /* the inter-token gaps, s, in recording order, as runs */
    int64_t n_runs, cap_runs, n_itl;   /* n_itl: the gaps, the runs' counts summed */
    bool prefix_caching;
    int64_t prefix_hit_tokens, prefix_query_tokens;
};

pb_metrics *pb_metrics_create(bool record_steps) {
    pb_metrics *m = pb_xcalloc(1, sizeof *m);
    m->record_steps = record_steps;
    return m;
}

void pb_metrics_destroy(pb_metrics *m) {
    if (!m) return;
    free(m->reqs);
    free(m->steps);
    free(m->itl);
    free(m);
}

void pb_metrics_reset(pb_metrics *m) {
    bool rec = m->record_steps;
    free(m->reqs);
    free(m->steps);
    free(m->itl);
    memset(m, 0, sizeof *m);
    m->record_steps = rec;
}

/* Request id's row before the run touches it: its shape as its group sees it (padding
 * zeroed too: rows compare with memcmp). */
static void row_of(const pb_metrics *m, int64_t id, const pb_request *q, pb_req_metrics *r) {
    pb_group g;
    pb_group_shape(&g, q, m->max_len);
    memset(r, 0, sizeof *r);
    r->id = id;
    r->arrival_s = g.arrival_s;
    r->first_token_s = r->finish_s = -1;
    r->prompt_len = g.prompt_len;
    r->output_len = g.output_len;
    r->n_seqs = g.max_seqs;
    r->n = g.n;
    r->beam_width = g.beam_width;
}

/* Row id of the trace before the run touches it. */
static void row_init(const pb_metrics *m, int64_t id, pb_req_metrics *r) {
    PB_ASSERT(id < m->n_trace);
    row_of(m, id, &m->trace[id], r);
}

void pb_metrics_begin(pb_metrics *m, const pb_trace *t, int32_t max_model_len) {
    pb_metrics_reset(m);
    m->trace = t->reqs;
    m->n_trace = m->n_reqs = t->n;
    m->max_len = max_model_len;
}

void pb_metrics_set_prefix_cache(pb_metrics *m, int64_t hit_tokens, int64_t query_tokens) {
    PB_ASSERT(hit_tokens >= 0 && hit_tokens <= query_tokens);
    m->prefix_caching = true;
    m->prefix_hit_tokens = hit_tokens;
    m->prefix_query_tokens = query_tokens;
}

void pb_metrics_tokens(pb_metrics *m, double last_s, double t, int64_t n) {
    if (last_s < 0 || n <= 0) return;
    double gap = t - last_s;
    val_run *last = m->n_runs ? &m->itl[m->n_runs - 1] : NULL;
    if (last && memcmp(&last->value, &gap, sizeof gap) == 0) {
        last->count += n;
    } else {
        if (m->n_runs == m->cap_runs) {
            m->cap_runs = m->cap_runs ? 2 * m->cap_runs : 4096;
            m->itl = pb_xrealloc(m->itl, (size_t)m->cap_runs * sizeof *m->itl);
        }
        m->itl[m->n_runs++] = (val_run){gap, n};
    }
    m->n_itl += n;
}

void pb_metrics_token(pb_metrics *m, double last_s, double t) { pb_metrics_tokens(m, last_s, t, 1); }

/* Make the rows up to id (geometric growth). */
static void make_rows(pb_metrics *m, int64_t id) {
    if (id >= m->cap_rows) {
        m->cap_rows = PB_MIN(PB_MAX(2 * m->cap_rows, PB_MAX(id + 1, 1024)), m->n_reqs);
        m->reqs = pb_xrealloc(m->reqs, (size_t)m->cap_rows * sizeof *m->reqs);
    }
    for (; m->n_rows <= id; m->n_rows++) row_init(m, m->n_rows, &m->reqs[m->n_rows]);
}

int64_t pb_metrics_add_request(pb_metrics *m, const pb_request *r) {
    int64_t id = m->n_reqs;
    if (id > 0) make_rows(m, id - 1);
    m->n_reqs++;
    if (id >= m->cap_rows) {
        m->cap_rows = PB_MAX(2 * m->cap_rows, 1024);
        m->reqs = pb_xrealloc(m->reqs, (size_t)m->cap_rows * sizeof *m->reqs);
    }
    row_of(m, id, r, &m->reqs[id]);
    m->n_rows = id + 1;
    return id;
}

pb_req_metrics *pb_metrics_req(pb_metrics *m, int64_t id) {
    PB_ASSERT(id >= 0 && id < m->n_reqs);
    if (id >= m->n_rows) make_rows(m, id);
    return &m->reqs[id];
}

void pb_metrics_add_step(pb_metrics *m, const pb_step_metrics *st) {
    m->n_steps++;
    if (st->n_prefill_seqs > 0) m->n_prefill_steps++;
    m->busy_s += st->latency_s;
    m->groups_x_t += (double)st->n_groups * st->latency_s;
    m->seqs_x_t += (double)st->n_seqs * st->latency_s;
    if (st->mem.total_slots > 0) {
        double tot = (double)st->mem.total_slots;
        m->mem_token += st->mem.token_slots / tot;
        m->mem_reserved += st->mem.reserved_slots / tot;
        m->mem_internal += st->mem.internal_frag_slots / tot;
        m->mem_free += st->mem.free_slots / tot;
        m->mem_steps++;
    }
    if (st->mem.logical_blocks > 0) {
        m->logical_sum += (double)st->mem.logical_blocks;
        m->saved_sum += (double)(st->mem.logical_blocks - st->mem.physical_blocks);
    }
    if (m->record_steps) {
        if (m->n_steps_rec == m->cap_steps) {
            m->cap_steps = m->cap_steps ? 2 * m->cap_steps : 1024;
            m->steps = pb_xrealloc(m->steps, (size_t)m->cap_steps * sizeof *m->steps);
        }
        m->steps[m->n_steps_rec++] = *st;
    }
}

void pb_metrics_end(pb_metrics *m, double clock_s) { m->clock_s = clock_s; }

const pb_req_metrics *pb_metrics_requests(pb_metrics *m, int64_t *n) {
    if (n) *n = m->n_reqs;
    if (m->n_reqs > 0) make_rows(m, m->n_reqs - 1);
    return m->reqs;
}

const pb_step_metrics *pb_metrics_steps(const pb_metrics *m, int64_t *n) {
    *n = m->record_steps ? m->n_steps_rec : 0;
    return m->record_steps ? m->steps : NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Percentile of an already sorted v (pb_percentile without the sort). */
static double percentile_sorted(const double *v, int64_t n, double p) {
    if (n <= 0) return 0;
    double pos = p / 100.0 * (double)(n - 1);
    int64_t lo = (int64_t)pos;
    if (lo >= n - 1) return v[n - 1];
    double frac = pos - (double)lo;
    return v[lo] + frac * (v[lo + 1] - v[lo]);
}

double pb_percentile(double *v, int64_t n, double p) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return percentile_sorted(v, n, p);
}

/* Percentiles read runs (value, count) by weighted selection, not by a sort: a run of
 * count c stands for c equal values of the multiset the runs expand to (the summary's
 * per-request values are runs of one, or of a request's sequences). r[from..n)
 * expands to the ranks base.. of that multiset (unsorted); each read moves from and
 * base up to the value it found, so that a read of a rank not smaller starts there. */
typedef struct {
    val_run *r;
    int64_t n, from, base;
} run_sel;

/* The value of rank k (from 0; k >= base, k below the counts summed) of the sorted
 * multiset, and in *next the value of rank k+1 (left alone if k is the last rank).
 * Three-way partitions r[lo..hi) around a median-of-three run's value, summing the
 * counts on each side, and goes on in the side holding k; O(runs) expected. */
static double run_select(run_sel *s, int64_t k, double *next) {
    PB_ASSERT(k >= s->base);
    val_run *r = s->r;
    int64_t lo = s->from, hi = s->n, base = s->base;   /* r[lo..hi) holds ranks base.. */
    double above = *next;   /* the least value above r[lo..hi) (set once a step goes left) */
    for (;;) {
        PB_ASSERT(lo < hi);   /* r[lo..hi) holds rank k: not empty */
        double a = r[lo].value, b = r[lo + (hi - lo) / 2].value, c = r[hi - 1].value;
        double piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        int64_t lt = lo, i = lo, gt = hi, n_lt = 0, n_eq = 0;
        while (i < gt) {   /* r[lo..lt) < piv, r[lt..i) == piv, r[gt..hi) > piv */
            val_run t = r[i];
            if (t.value < piv) { n_lt += t.count; r[i++] = r[lt]; r[lt++] = t; }
            else if (t.value > piv) { r[i] = r[--gt]; r[gt] = t; }
            else { n_eq += t.count; i++; }
        }
        if (k < base + n_lt) { hi = lt; above = piv; continue; }
        if (k >= base + n_lt + n_eq) { base += n_lt + n_eq; lo = gt; continue; }
        s->from = lt;
        s->base = base + n_lt;
        if (k + 1 < base + n_lt + n_eq) *next = piv;
        else if (gt < hi) {
            *next = r[gt].value;
            for (int64_t j = gt + 1; j < hi; j++) if (r[j].value < *next) *next = r[j].value;
        } else *next = above;
        return piv;
    }
}

/* percentile_sorted over the n values the runs of s expand to; p must not decrease
 * from one call on s to the next. */
static double percentile_runs(run_sel *s, int64_t n, double p) {
    if (n <= 0) return 0;
    double pos = p / 100.0 * (double)(n - 1), next = 0;
    int64_t lo = (int64_t)pos;
    if (lo >= n - 1) return run_select(s, n - 1, &next);
    double frac = pos - (double)lo, v_lo = run_select(s, lo, &next);
    return v_lo + frac * (next - v_lo);
}

pb_req_latency pb_req_latency_of(const pb_req_metrics *r) {
    pb_req_latency l = {NAN, NAN, NAN, NAN};
    if (r->first_token_s >= 0) l.ttft_ms = (r->first_token_s - r->arrival_s) * 1e3;
    if (!r->finished) return l;
    l.e2e_s = r->finish_s - r->arrival_s;
    l.norm_latency_s_per_token = l.e2e_s / r->output_len;
    if (r->output_len > 1) l.tpot_ms = (r->finish_s - r->first_token_s) / (r->output_len - 1) * 1e3;
    return l;
}

/* The mean of the values r[0..n_runs) expands to (n of them), adding each in order
 * (bit for bit the sum over the expanded values), and p50/p90/p99 by selection over
 * the runs (the values a sort would give).  Reorders r. */
static void stats_runs(val_run *r, int64_t n_runs, int64_t n, double *mean, double *p50, double *p90,
                       double *p99) {
    double sum = 0;
    for (int64_t i = 0; i < n_runs; i++)
        for (int64_t c = 0; c < r[i].count; c++) sum += r[i].value;
    *mean = n ? sum / (double)n : 0;
    run_sel sel = {r, n_runs, 0, 0};
    *p50 = percentile_runs(&sel, n, 50);
    *p90 = percentile_runs(&sel, n, 90);
    *p99 = percentile_runs(&sel, n, 99);
}

void pb_metrics_summary(const pb_metrics *m, pb_run_summary *o) {
    memset(o, 0, sizeof *o);
    o->n_requests = m->n_reqs;
    o->n_steps = m->n_steps;
    o->n_prefill_steps = m->n_prefill_steps;
    o->busy_s = m->busy_s;
    o->prefix_caching = m->prefix_caching;
    o->prefix_hit_tokens = m->prefix_hit_tokens;
    o->prefix_query_tokens = m->prefix_query_tokens;
    o->prefix_hit_frac = m->prefix_query_tokens > 0 ? (double)m->prefix_hit_tokens / (double)m->prefix_query_tokens : 0;
    o->n_unfinished = m->n_reqs - m->n_rows;   /* rows not made: unfinished, no tokens */
    /* per finished request one value (normalized latency: one per sequence, a run) */
    size_t nr = (size_t)(m->n_rows + 1);
    val_run *nl = pb_xmalloc(nr * sizeof *nl), *ttft = pb_xmalloc(nr * sizeof *ttft);
    val_run *tpot = pb_xmalloc(nr * sizeof *tpot), *e2e = pb_xmalloc(nr * sizeof *e2e);
    int64_t n_nl = 0, n_done = 0, n_tpot = 0;
    double last_finish = 0;
    for (int64_t i = 0; i < m->n_rows; i++) {
        const pb_req_metrics *r = &m->reqs[i];
        o->n_preempt_recompute += r->n_recompute;
        o->n_preempt_swap += r->n_swap;
        o->swap_blocks += r->swap_blocks;
        o->swap_bytes += r->swap_bytes;
        if (r->rejected) { o->n_rejected++; continue; }
        if (r->aborted) { o->n_aborted++; continue; }
        if (!r->finished) { o->n_unfinished++; continue; }
        o->n_finished++;
        pb_req_latency l = pb_req_latency_of(r);
        if (r->finish_s > last_finish) last_finish = r->finish_s;
        nl[n_done] = (val_run){l.norm_latency_s_per_token, PB_MAX(r->n_seqs, 1)};
        n_nl += nl[n_done].count;
        e2e[n_done] = (val_run){l.e2e_s, 1};
        ttft[n_done++] = (val_run){l.ttft_ms, 1};
        if (!isnan(l.tpot_ms)) tpot[n_tpot++] = (val_run){l.tpot_ms, 1};
        o->prompt_tokens += r->prompt_len;
        o->output_tokens += (int64_t)r->output_len * PB_MAX(r->n_seqs, 1);
    }
    stats_runs(e2e, n_done, n_done, &o->e2e_latency_mean, &o->e2e_p50, &o->e2e_p90, &o->e2e_p99);
    stats_runs(nl, n_done, n_nl, &o->norm_latency_mean, &o->norm_latency_p50, &o->norm_latency_p90,
               &o->norm_latency_p99);
    stats_runs(ttft, n_done, n_done, &o->ttft_mean_ms, &o->ttft_p50_ms, &o->ttft_p90_ms, &o->ttft_p99_ms);
    stats_runs(tpot, n_tpot, n_tpot, &o->tpot_mean_ms, &o->tpot_p50_ms, &o->tpot_p90_ms, &o->tpot_p99_ms);
    free(nl);
    free(ttft);
    free(tpot);
    free(e2e);
    val_run *itl = pb_xmalloc((size_t)(m->n_runs + 1) * sizeof *itl);   /* in ms */
    for (int64_t i = 0; i < m->n_runs; i++) itl[i] = (val_run){m->itl[i].value * 1e3, m->itl[i].count};
    stats_runs(itl, m->n_runs, m->n_itl, &o->itl_mean_ms, &o->itl_p50_ms, &o->itl_p90_ms, &o->itl_p99_ms);
    free(itl);
    o->duration_s = o->n_unfinished ? m->clock_s : last_finish;
    if (o->duration_s > 0) {
        o->req_throughput = (double)o->n_finished / o->duration_s;
        o->output_tok_throughput = (double)o->output_tokens / o->duration_s;
        o->total_tok_throughput = (double)(o->output_tokens + o->prompt_tokens) / o->duration_s;
    }
    if (m->busy_s > 0) {
        o->avg_batched_requests = m->groups_x_t / m->busy_s;
        o->avg_batched_seqs = m->seqs_x_t / m->busy_s;
    }
    if (m->mem_steps) {
        double n = (double)m->mem_steps;
        o->mem_token_frac = m->mem_token / n;
        o->mem_reserved_frac = m->mem_reserved / n;
        o->mem_internal_frac = m->mem_internal / n;
        o->mem_free_frac = m->mem_free / n;
    }
    o->mem_saving = m->logical_sum > 0 ? m->saved_sum / m->logical_sum : 0;
}

void pb_metrics_goodput(const pb_metrics *m, double slo_ttft_ms, double slo_tpot_ms, double duration_s,
                        int64_t *met, double *frac, double *rate) {
    int64_t k = 0;
    for (int64_t i = 0; i < m->n_rows; i++) {
        const pb_req_metrics *r = &m->reqs[i];
        if (!r->finished) continue;
        pb_req_latency l = pb_req_latency_of(r);
        if (slo_ttft_ms > 0 && !(l.ttft_ms <= slo_ttft_ms)) continue;
        if (slo_tpot_ms > 0 && !isnan(l.tpot_ms) && !(l.tpot_ms <= slo_tpot_ms)) continue;
        k++;
    }
    *met = k;
    *frac = m->n_reqs > 0 ? (double)k / (double)m->n_reqs : 0;
    *rate = duration_s > 0 ? (double)k / duration_s : 0;
}

void pb_metrics_each_request(const pb_metrics *m, bool touched_only, void (*fn)(const pb_req_metrics *r, void *user),
                             void *user) {
    for (int64_t i = 0; i < (touched_only ? m->n_rows : m->n_reqs); i++) {
        pb_req_metrics tmp;
        if (i >= m->n_rows) row_init(m, i, &tmp);
        fn(i < m->n_rows ? &m->reqs[i] : &tmp, user);
    }
}

void pb_metrics_itl_stats(const pb_metrics *m, const double *pcts, int n_pcts, double *mean_ms, double *std_ms,
                          double *pct_ms) {
    val_run *itl = pb_xmalloc((size_t)(m->n_runs + 1) * sizeof *itl);   /* in ms, as the summary */
    for (int64_t i = 0; i < m->n_runs; i++) itl[i] = (val_run){m->itl[i].value * 1e3, m->itl[i].count};
    double sum = 0, ss = 0;
    for (int64_t i = 0; i < m->n_runs; i++)
        for (int64_t c = 0; c < itl[i].count; c++) sum += itl[i].value;
    *mean_ms = m->n_itl ? sum / (double)m->n_itl : NAN;
    for (int64_t i = 0; i < m->n_runs; i++) {
        double d = itl[i].value - *mean_ms;
        ss += d * d * (double)itl[i].count;
    }
    *std_ms = m->n_itl ? sqrt(ss / (double)m->n_itl) : NAN;
    run_sel sel = {itl, m->n_runs, 0, 0};
    for (int k = 0; k < n_pcts; k++) {
        PB_ASSERT(k == 0 || pcts[k] >= pcts[k - 1]);
        pct_ms[k] = m->n_itl ? percentile_runs(&sel, m->n_itl, pcts[k]) : NAN;
    }
    free(itl);
}

/* %.17g, or nothing for NAN */
static void put_num(FILE *f, double v) {
    if (!isnan(v)) fprintf(f, "%.17g", v);
}

void pb_metrics_write_request_row(FILE *f, const pb_req_metrics *r, const char *prefix) {
    pb_req_latency l = pb_req_latency_of(r);
    fprintf(f, "%s%lld,%.17g,", prefix ? prefix : "", (long long)r->id, r->arrival_s);
    put_num(f, r->first_token_s >= 0 ? r->first_token_s : NAN);
    fputc(',', f);
    put_num(f, r->finished ? r->finish_s : NAN);
    fprintf(f, ",%d,%d,%d,%d,", r->prompt_len, r->output_len, r->n, r->beam_width);
    put_num(f, l.ttft_ms);
    fputc(',', f);
    put_num(f, l.tpot_ms);
    fputc(',', f);
    put_num(f, l.e2e_s * 1e3);
    fputc(',', f);
    put_num(f, l.norm_latency_s_per_token);
    fprintf(f, ",%d,%d,%d", r->n_recompute + r->n_swap, r->rejected ? 1 : 0, r->aborted ? 1 : 0);
}

void pb_metrics_write_requests(const pb_metrics *m, FILE *f, const char *prefix) {
    for (int64_t i = 0; i < m->n_reqs; i++) {
        pb_req_metrics tmp;
        const pb_req_metrics *r = &tmp;
        if (i < m->n_rows) r = &m->reqs[i];
        else row_init(m, i, &tmp);
        pb_metrics_write_request_row(f, r, prefix);
        fputc('\n', f);
    }
}

void pb_metrics_write_steps(const pb_metrics *m, FILE *f, const char *prefix) {
    int64_t pairs = 0;
    double bytes = 0;
    for (int64_t i = 0; i < m->n_rows; i++) {
        pairs += m->reqs[i].swap_blocks;
        bytes += m->reqs[i].swap_bytes;
    }
    double per_pair = pairs > 0 ? bytes / (double)pairs : 0;
    for (int64_t i = 0; m->record_steps && i < m->n_steps_rec; i++) {
        const pb_step_metrics *st = &m->steps[i];
        fprintf(f, "%s%lld,%.17g,%.17g,%d,%d,%lld,%d,%lld,%lld,%d,%d,%d,%d,%d,%d,%.17g\n", prefix ? prefix : "",
                (long long)i, st->t_s, st->latency_s, st->n_groups, st->n_seqs, (long long)st->prefill_tokens,
                st->decode_tokens, (long long)(st->mem.gpu_blocks_total - st->mem.gpu_blocks_free),
                (long long)st->mem.gpu_blocks_free, st->n_running, st->n_waiting, st->n_swapped, st->n_preempted,
                st->n_swap_in, st->n_swap_out, (double)(st->n_swap_in + st->n_swap_out) * per_pair);
    }
}

void pb_metrics_print_summary(FILE *f, const pb_run_summary *s, const char *title) {
    fprintf(f, "============ Serving Benchmark Result ============\n");
    if (title && *title) fprintf(f, "%-40s %s\n", "System:", title);
    fprintf(f, "%-40s %lld\n", "Successful requests:", (long long)s->n_finished);
    fprintf(f, "%-40s %lld\n", "Rejected requests:", (long long)s->n_rejected);
    if (s->n_aborted) fprintf(f, "%-40s %lld\n", "Aborted requests:", (long long)s->n_aborted);
    fprintf(f, "%-40s %lld\n", "Unfinished requests:", (long long)s->n_unfinished);
    fprintf(f, "%-40s %.2f\n", "Benchmark duration (s):", s->duration_s);
    fprintf(f, "%-40s %lld\n", "Total input tokens:", (long long)s->prompt_tokens);
    fprintf(f, "%-40s %lld\n", "Total generated tokens:", (long long)s->output_tokens);
    fprintf(f, "%-40s %.2f\n", "Request throughput (req/s):", s->req_throughput);
    fprintf(f, "%-40s %.2f\n", "Output token throughput (tok/s):", s->output_tok_throughput);
    fprintf(f, "%-40s %.2f\n", "Total token throughput (tok/s):", s->total_tok_throughput);
    fprintf(f, "%s\n", "---------------Normalized Latency-----------------");
    fprintf(f, "%-40s %.4f\n", "Mean normalized latency (s/token):", s->norm_latency_mean);
    fprintf(f, "%-40s %.4f\n", "Median normalized latency (s/token):", s->norm_latency_p50);
    fprintf(f, "%-40s %.4f\n", "P90 normalized latency (s/token):", s->norm_latency_p90);
    fprintf(f, "%-40s %.4f\n", "P99 normalized latency (s/token):", s->norm_latency_p99);
    fprintf(f, "%s\n", "---------------Time to First Token----------------");
    fprintf(f, "%-40s %.2f\n", "Mean TTFT (ms):", s->ttft_mean_ms);
    fprintf(f, "%-40s %.2f\n", "Median TTFT (ms):", s->ttft_p50_ms);
    fprintf(f, "%-40s %.2f\n", "P90 TTFT (ms):", s->ttft_p90_ms);
    fprintf(f, "%-40s %.2f\n", "P99 TTFT (ms):", s->ttft_p99_ms);
    fprintf(f, "%s\n", "-----Time per Output Token (excl. 1st token)------");
    fprintf(f, "%-40s %.2f\n", "Mean TPOT (ms):", s->tpot_mean_ms);
    fprintf(f, "%-40s %.2f\n", "Median TPOT (ms):", s->tpot_p50_ms);
    fprintf(f, "%-40s %.2f\n", "P90 TPOT (ms):", s->tpot_p90_ms);
    fprintf(f, "%-40s %.2f\n", "P99 TPOT (ms):", s->tpot_p99_ms);
    fprintf(f, "%s\n", "---------------Inter-token Latency----------------");
    fprintf(f, "%-40s %.2f\n", "Mean ITL (ms):", s->itl_mean_ms);
    fprintf(f, "%-40s %.2f\n", "Median ITL (ms):", s->itl_p50_ms);
    fprintf(f, "%-40s %.2f\n", "P90 ITL (ms):", s->itl_p90_ms);
    fprintf(f, "%-40s %.2f\n", "P99 ITL (ms):", s->itl_p99_ms);
    fprintf(f, "%s\n", "----------------End-to-end Latency---------------");
    fprintf(f, "%-40s %.2f\n", "Mean E2EL (ms):", s->e2e_latency_mean * 1e3);
    fprintf(f, "%-40s %.2f\n", "Median E2EL (ms):", s->e2e_p50 * 1e3);
    fprintf(f, "%-40s %.2f\n", "P90 E2EL (ms):", s->e2e_p90 * 1e3);
    fprintf(f, "%-40s %.2f\n", "P99 E2EL (ms):", s->e2e_p99 * 1e3);
    fprintf(f, "%s\n", "-------------------Scheduling---------------------");
    fprintf(f, "%-40s %lld (%lld prefill)\n", "Steps:", (long long)s->n_steps, (long long)s->n_prefill_steps);
    fprintf(f, "%-40s %.2f\n", "Avg batched requests:", s->avg_batched_requests);
    fprintf(f, "%-40s %lld\n", "Preemptions (recompute):", (long long)s->n_preempt_recompute);
    fprintf(f, "%-40s %lld\n", "Preemptions (swap):", (long long)s->n_preempt_swap);
    fprintf(f, "%-40s %.3f\n", "Swapped (GiB, out + in):", s->swap_bytes / (1024.0 * 1024 * 1024));
    if (s->prefix_caching)
        fprintf(f, "%-40s %.1f%% (%lld of %lld tokens)\n", "Prefix-cache hits:", 100 * s->prefix_hit_frac,
                (long long)s->prefix_hit_tokens, (long long)s->prefix_query_tokens);
    fprintf(f, "%s\n", "-----------------KV cache usage-------------------");
    fprintf(f, "%-40s %.1f%%\n", "Token states:", 100 * s->mem_token_frac);
    fprintf(f, "%-40s %.1f%%\n", "Reservation:", 100 * s->mem_reserved_frac);
    fprintf(f, "%-40s %.1f%%\n", "Internal fragmentation:", 100 * s->mem_internal_frac);
    fprintf(f, "%-40s %.1f%%\n", "External fragmentation + free:", 100 * s->mem_free_frac);
    fprintf(f, "%-40s %.1f%%\n", "Memory saving from sharing:", 100 * s->mem_saving);
    fprintf(f, "==================================================\n");
}

/* ---- invariants ---- */

static bool finite_nonneg(double x) { return isfinite(x) && x >= 0; }

static pb_status req_check(const pb_req_metrics *r, int64_t i) {
    const char *why = NULL;
    if (r->id != i) why = "id differs from its index";
    else if (r->prompt_len < 1 || r->output_len < 1 || r->n_seqs < 1) why = "token or sequence count < 1";
    else if (r->n_recompute < 0 || r->n_swap < 0 || r->swap_blocks < 0 || !finite_nonneg(r->swap_bytes))
        why = "negative preemption or swap counter";
    else if (r->finished + r->rejected + r->aborted > 1) why = "more than one of finished, rejected, aborted";
    else if (!finite_nonneg(r->arrival_s)) why = "arrival not finite or negative";
    else if (r->finished && !(isfinite(r->first_token_s) && isfinite(r->finish_s) &&
                              r->arrival_s <= r->first_token_s && r->first_token_s <= r->finish_s))
        why = "finished but not arrival <= first token <= finish";
    else if (!r->finished && r->finish_s != -1) why = "finish time without finishing";
    else if (r->first_token_s != -1 && !(isfinite(r->first_token_s) && r->first_token_s >= r->arrival_s))
        why = "first token before arrival";
    if (!why) return PB_OK;
    pb_log_error("metrics: request %lld: %s (arrival %.17g, first token %.17g, finish %.17g, prompt %d, "
                 "output %d, seqs %d)", (long long)i, why, r->arrival_s, r->first_token_s, r->finish_s,
                 r->prompt_len, r->output_len, r->n_seqs);
    return PB_ERR_INVALID;
}

static pb_status step_check(const pb_step_metrics *st, const pb_step_metrics *next, int64_t i) {
    const char *why = NULL;
    const pb_kv_usage *u = &st->mem;
    if (!finite_nonneg(st->t_s) || !finite_nonneg(st->latency_s) || !finite_nonneg(st->swap_s) ||
        !finite_nonneg(st->copy_s))
        why = "time not finite or negative";
    else if (st->swap_s > st->latency_s || st->copy_s > st->latency_s)
        why = "swap or copy time exceeds the step latency";
    else if (st->n_groups < 0 || st->n_seqs < 0 || st->n_prefill_seqs < 0 || st->decode_tokens < 0 ||
             st->prefill_tokens < 0 || st->n_preempted < 0 || st->n_swap_in_groups < 0 ||
             st->n_copies < 0 || st->n_swap_in < 0 || st->n_swap_out < 0 || st->n_running < 0 ||
             st->n_waiting < 0 || st->n_swapped < 0)
        why = "negative count";
    else if (st->n_prefill_seqs + st->decode_tokens != st->n_seqs)
        why = "prefill sequences + decode tokens != batched sequences";
    else if (st->n_groups > st->n_seqs) why = "more groups than sequences in the batch";
    else if (u->token_slots < 0 || u->reserved_slots < 0 || u->internal_frag_slots < 0 || u->free_slots < 0)
        why = "negative memory class";
    else if (u->token_slots + u->reserved_slots + u->internal_frag_slots + u->free_slots != u->total_slots)
        why = "memory classes do not sum to the total";
    else if (next && st->t_s + st->latency_s > next->t_s) why = "next step starts before this one ends";
    if (!why) return PB_OK;
    pb_log_error("metrics: step %lld: %s (t %.17g, latency %.17g, swap %.17g, copy %.17g, seqs %d = %d "
                 "prefill + %d decode, groups %d; slots %lld = %lld token + %lld reserved + %lld "
                 "internal + %lld free)", (long long)i, why, st->t_s, st->latency_s, st->swap_s,
                 st->copy_s, st->n_seqs, st->n_prefill_seqs, st->decode_tokens, st->n_groups,
                 (long long)u->total_slots, (long long)u->token_slots, (long long)u->reserved_slots,
                 (long long)u->internal_frag_slots, (long long)u->free_slots);
    return PB_ERR_INVALID;
}

pb_status pb_metrics_check(const pb_metrics *m) {
    if (m->n_rows < 0 || m->n_rows > m->n_reqs || (m->n_rows > 0 && !m->reqs) || (m->n_trace > 0 && !m->trace) ||
        (m->n_rows < m->n_reqs && m->n_reqs > m->n_trace)) {
        pb_log_error("metrics: %lld rows made of %lld requests", (long long)m->n_rows, (long long)m->n_reqs);
        return PB_ERR_INVALID;
    }
    for (int64_t i = 0; i < m->n_rows; i++)
        if (req_check(&m->reqs[i], i) != PB_OK) return PB_ERR_INVALID;
    if (m->record_steps) {
        int64_t prefill = 0;
        double busy = 0;
        for (int64_t i = 0; i < m->n_steps_rec; i++) {
            const pb_step_metrics *st = &m->steps[i];
            if (step_check(st, i + 1 < m->n_steps_rec ? &m->steps[i + 1] : NULL, i) != PB_OK)
                return PB_ERR_INVALID;
            prefill += st->n_prefill_seqs > 0;
            busy += st->latency_s;   /* same order as pb_metrics_add_step: exact */
        }
        if (m->n_steps_rec != m->n_steps || prefill != m->n_prefill_steps || busy != m->busy_s) {
            pb_log_error("metrics: aggregates disagree with the recorded steps (steps %lld/%lld, "
                         "prefill steps %lld/%lld, busy %.17g/%.17g)", (long long)m->n_steps,
                         (long long)m->n_steps_rec, (long long)m->n_prefill_steps, (long long)prefill,
                         m->busy_s, busy);
            return PB_ERR_INVALID;
        }
    }
    if (m->n_prefill_steps < 0 || m->n_prefill_steps > m->n_steps || m->mem_steps > m->n_steps ||
        !finite_nonneg(m->busy_s)) {
        pb_log_error("metrics: step aggregates out of range (steps %lld, prefill %lld, with memory %lld, "
                     "busy %g)", (long long)m->n_steps, (long long)m->n_prefill_steps,
                     (long long)m->mem_steps, m->busy_s);
        return PB_ERR_INVALID;
    }
    int64_t max_gaps = 0;   /* a request has at most output_len - 1 gaps (per group, not per sequence) */
    for (int64_t i = 0; i < m->n_rows; i++) max_gaps += m->reqs[i].output_len - 1;
    int64_t n_gaps = 0;
    for (int64_t i = 0; i < m->n_runs; i++) {
        if (!finite_nonneg(m->itl[i].value) || m->itl[i].count < 1) {
            pb_log_error("metrics: inter-token gap run %lld is %lld x %.17g", (long long)i,
                         (long long)m->itl[i].count, m->itl[i].value);
            return PB_ERR_INVALID;
        }
        n_gaps += m->itl[i].count;
    }
    if (n_gaps != m->n_itl || m->n_itl > max_gaps) {
        pb_log_error("metrics: %lld inter-token gaps (runs hold %lld), the requests allow at most %lld",
                     (long long)m->n_itl, (long long)n_gaps, (long long)max_gaps);
        return PB_ERR_INVALID;
    }
    double frac = m->mem_token + m->mem_reserved + m->mem_internal + m->mem_free;
    if (fabs(frac - (double)m->mem_steps) > 1e-9 * (double)(m->mem_steps + 1)) {
        pb_log_error("metrics: memory fractions sum to %.17g over %lld steps", frac, (long long)m->mem_steps);
        return PB_ERR_INVALID;
    }
    return PB_OK;
}
