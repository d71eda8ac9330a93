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
    MD("ttft_mean_ms", ttft_mean_ms, 1, IF_FINISHED),
    MD("ttft_p50_ms", ttft_p50_ms, 1, IF_FINISHED),
    MD("ttft_p90_ms", ttft_p90_ms, 1, IF_FINISHED),
    MD("ttft_p99_ms", ttft_p99_ms, 1, IF_FINISHED),
    MD("tpot_mean_ms", tpot_mean_ms, 1, IF_FINISHED),
    MD("tpot_p50_ms", tpot_p50_ms, 1, IF_FINISHED),
    MD("tpot_p90_ms", tpot_p90_ms, 1, IF_FINISHED),
    MD("tpot_p99_ms", tpot_p99_ms, 1, IF_FINISHED),
    MD("itl_mean_ms", itl_mean_ms, 1, IF_FINISHED),
    MD("itl_p50_ms", itl_p50_ms, 1, IF_FINISHED),
    MD("itl_p90_ms", itl_p90_ms, 1, IF_FINISHED),
    MD("itl_p99_ms", itl_p99_ms, 1, IF_FINISHED),
    MD("e2e_mean_s", e2e_latency_mean, 1, IF_FINISHED),
    MD("e2e_p50_s", e2e_p50, 1, IF_FINISHED),
    MD("e2e_p90_s", e2e_p90, 1, IF_FINISHED),
    MD("e2e_p99_s", e2e_p99, 1, IF_FINISHED),
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
/* set outside the table: the checks and SLO (below), the prefix cache's hit rate, the
   KV space and the dropped requests (system.c), the measurement window's counts
   (measure.h), the error bars: the step-time factor interval and the banded metrics'
   80% intervals (uncertainty.h) */
static const char *const OTHER_METRICS[] = {
    "complete", "slo_ttft_ms", "slo_tpot_ms", "goodput_fraction", "goodput_per_s", "slo_met", "prefix_hit_pct",
    "kv_slots", "kv_blocks", "n_dropped", "measured_requests", "measured_steps", "step_factor_lo", "step_factor_hi",
    "normalized_latency_lo", "normalized_latency_hi", "ttft_mean_ms_lo", "ttft_mean_ms_hi", "tpot_mean_ms_lo",
    "tpot_mean_ms_hi", "e2e_mean_s_lo", "e2e_mean_s_hi", "request_throughput_per_s_lo", "request_throughput_per_s_hi",
    "output_token_throughput_per_s_lo", "output_token_throughput_per_s_hi", "batched_requests_lo",
    "batched_requests_hi", "saving_pct_lo", "saving_pct_hi", "token_states_pct_lo", "token_states_pct_hi"};

bool pb_point_metric_known(const char *name) {
    for (size_t i = 0; i < PB_ARRAY_LEN(METRICS); i++)
        if (!strcmp(METRICS[i].name, name)) return true;
    for (size_t i = 0; i < PB_ARRAY_LEN(OTHER_METRICS); i++)
        if (!strcmp(OTHER_METRICS[i], name)) return true;
    return false;
}

void pb_point_metric_names(char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < PB_ARRAY_LEN(METRICS) + PB_ARRAY_LEN(OTHER_METRICS) && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? " " : "",
                              i < PB_ARRAY_LEN(METRICS) ? METRICS[i].name : OTHER_METRICS[i - PB_ARRAY_LEN(METRICS)]);
}

static void set_metrics(pb_point_metrics *out, const pb_run_summary *s) {
    bool defined[] = {[ALWAYS] = true, [IF_FINISHED] = s->n_finished > 0, [IF_STEPS] = s->n_steps > 0,
                      [IF_DURATION] = s->duration_s > 0};
    for (size_t i = 0; i < PB_ARRAY_LEN(METRICS); i++) {
        const metric_def *d = &METRICS[i];
        const char *f = (const char *)s + d->off;
        double v = d->i64 ? (double)*(const int64_t *)f : *(const double *)f * d->scale;
        pb_pm_set(out, d->name, defined[d->defined] ? v : NAN);
    }
    if (s->prefix_caching) pb_pm_set(out, "prefix_hit_pct", s->prefix_query_tokens > 0 ? 100 * s->prefix_hit_frac : NAN);
}

/* Write a side file: header line, then the rows, to a unique temporary (pb.h), then
   rename -- concurrent runs writing one point never share a temporary. */
static pb_status write_side(const char *path, const char *header, const pb_metrics *m, bool steps, char *err,
                            size_t err_n) {
    char tmp[4400];
    pb_tmp_path(path, tmp, sizeof tmp);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, err_n, "%s: cannot write: %s", tmp, strerror(errno));
        return PB_ERR_IO;
    }
    fprintf(f, "%s\n", header);
    if (steps) pb_metrics_write_steps(m, f, NULL);
    else pb_metrics_write_requests(m, f, NULL);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0) bad = true;
    if (bad || rename(tmp, path) != 0) {
        snprintf(err, err_n, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
        return PB_ERR_IO;
    }
    return PB_OK;
}

pb_status pb_point_out_fill(const pb_point_ctx *pt, pb_metrics *m, const char *title,
                            pb_point_metrics *out, char *err, size_t err_n) {
    pb_run_summary s;
    pb_metrics_summary(m, &s);
    set_metrics(out, &s);
    pb_measure w = pb_measure_from_root(pt->root);   /* the declared window's averages replace the run's */
    /* the trace's end: workload.duration_s as given, else 0 (measure.h: the last arrival) */
    double trace_end = pb_schema_num_or(pb_workload_schema, pb_node_get(pt->root, "workload"), "duration_s", 0);
    pb_measure_apply(&w, trace_end, m, out);
    bool complete = s.n_unfinished == 0 && s.n_rejected == 0 && s.n_finished == s.n_requests;
    pb_pm_set(out, "complete", complete ? 1 : 0);

    const pb_node *slo = pb_node_get(pt->root, "slo");
    double slo_ttft = pb_schema_num(pb_experiment_schema, pt->root, "slo.ttft_ms");
    double slo_tpot = pb_schema_num(pb_experiment_schema, pt->root, "slo.tpot_ms");
    int64_t met = 0;
    double frac = 0, rate = 0;
    bool slo_ok = false;
    if (slo) {
        pb_metrics_goodput(m, slo_ttft, slo_tpot, s.duration_s, &met, &frac, &rate);
        slo_ok = complete && (slo_ttft <= 0 || s.ttft_p99_ms <= slo_ttft) && (slo_tpot <= 0 || s.tpot_p99_ms <= slo_tpot);
        if (slo_ttft > 0) pb_pm_set(out, "slo_ttft_ms", slo_ttft);
        if (slo_tpot > 0) pb_pm_set(out, "slo_tpot_ms", slo_tpot);
        pb_pm_set(out, "goodput_fraction", frac);
        pb_pm_set(out, "goodput_per_s", rate);
        pb_pm_set(out, "slo_met", slo_ok ? 1 : 0);
    }

    char *text = NULL;
    size_t tl = 0;
    FILE *mf = open_memstream(&text, &tl);
    if (mf) {
        pb_metrics_print_summary(mf, &s, title);
        if (slo) {
            fprintf(mf, "%-40s %.2f%% (%lld requests)\n", "Goodput (meet the SLO, of all):", 100 * frac,
                    (long long)met);
            fprintf(mf, "%-40s %.3f\n", "Goodput (req/s):", rate);
        }
        double dropped = pb_pm_get(out, "n_dropped", 0);
        char drop[160] = "";
        if (dropped > 0)
            snprintf(drop, sizeof drop, "; %.0f more dropped before the run: prompt longer than the model's context",
                     dropped);
        fprintf(mf, "Check complete: %s (%lld of %lld requests finished, %lld rejected, %lld unfinished%s)\n",
                complete ? "PASS" : "FAIL", (long long)s.n_finished, (long long)s.n_requests,
                (long long)s.n_rejected, (long long)s.n_unfinished, drop);
        if (!slo)
            fprintf(mf, "Check slo_met: n/a (no `slo:` in the experiment)\n");
        else
            fprintf(mf, "Check slo_met: %s (p99 TTFT %.2f ms <= %g, p99 TPOT %.2f ms <= %g%s)\n",
                    slo_ok ? "PASS" : "FAIL", s.ttft_p99_ms, slo_ttft > 0 ? slo_ttft : INFINITY, s.tpot_p99_ms,
                    slo_tpot > 0 ? slo_tpot : INFINITY, complete ? "" : "; not complete");
        fclose(mf);
        snprintf(out->summary, sizeof out->summary, "%s", text ? text : "");
        free(text);
    }

    pb_status st = PB_OK;
    if (pt->requests_path) st = write_side(pt->requests_path, PB_METRICS_REQUEST_COLUMNS, m, false, err, err_n);
    if (!st && pt->timeline_path) st = write_side(pt->timeline_path, PB_METRICS_STEP_COLUMNS, m, true, err, err_n);
    return st;
}
