/* point_out.c -- a serving point's metrics, checks and side files (point_out.h). */
#include "point_out.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

static void set_metrics(pb_point_metrics *out, const pb_run_summary *s) {
    pb_pm_set(out, "normalized_latency", s->norm_latency_mean);
    pb_pm_set(out, "normalized_latency_p50", s->norm_latency_p50);
    pb_pm_set(out, "normalized_latency_p90", s->norm_latency_p90);
    pb_pm_set(out, "normalized_latency_p99", s->norm_latency_p99);
    pb_pm_set(out, "batched_requests", s->avg_batched_requests);
    pb_pm_set(out, "batched_seqs", s->avg_batched_seqs);
    pb_pm_set(out, "token_states_pct", 100 * s->mem_token_frac);
    pb_pm_set(out, "reservation_pct", 100 * s->mem_reserved_frac);
    pb_pm_set(out, "internal_frag_pct", 100 * s->mem_internal_frac);
    pb_pm_set(out, "external_frag_pct", 100 * s->mem_free_frac);
    pb_pm_set(out, "saving_pct", 100 * s->mem_saving);
    pb_pm_set(out, "request_throughput_per_s", s->req_throughput);
    pb_pm_set(out, "output_token_throughput_per_s", s->output_tok_throughput);
    pb_pm_set(out, "total_token_throughput_per_s", s->total_tok_throughput);
    pb_pm_set(out, "ttft_mean_ms", s->ttft_mean_ms);
    pb_pm_set(out, "ttft_p50_ms", s->ttft_p50_ms);
    pb_pm_set(out, "ttft_p90_ms", s->ttft_p90_ms);
    pb_pm_set(out, "ttft_p99_ms", s->ttft_p99_ms);
    pb_pm_set(out, "tpot_mean_ms", s->tpot_mean_ms);
    pb_pm_set(out, "tpot_p50_ms", s->tpot_p50_ms);
    pb_pm_set(out, "tpot_p90_ms", s->tpot_p90_ms);
    pb_pm_set(out, "tpot_p99_ms", s->tpot_p99_ms);
    pb_pm_set(out, "itl_mean_ms", s->itl_mean_ms);
    pb_pm_set(out, "itl_p50_ms", s->itl_p50_ms);
    pb_pm_set(out, "itl_p90_ms", s->itl_p90_ms);
    pb_pm_set(out, "itl_p99_ms", s->itl_p99_ms);
    pb_pm_set(out, "e2e_mean_s", s->e2e_latency_mean);
    pb_pm_set(out, "e2e_p50_s", s->e2e_p50);
    pb_pm_set(out, "e2e_p90_s", s->e2e_p90);
    pb_pm_set(out, "e2e_p99_s", s->e2e_p99);
    pb_pm_set(out, "duration_s", s->duration_s);
    pb_pm_set(out, "n_requests", (double)s->n_requests);
    pb_pm_set(out, "n_finished", (double)s->n_finished);
    pb_pm_set(out, "n_rejected", (double)s->n_rejected);
    pb_pm_set(out, "n_unfinished", (double)s->n_unfinished);
    pb_pm_set(out, "preempt_recompute", (double)s->n_preempt_recompute);
    pb_pm_set(out, "preempt_swap", (double)s->n_preempt_swap);
    pb_pm_set(out, "swap_gib", s->swap_bytes / GIB);
    pb_pm_set(out, "steps", (double)s->n_steps);
    if (s->prefix_caching) pb_pm_set(out, "prefix_hit_pct", 100 * s->prefix_hit_frac);
}

/* Write a side file: header line, then the rows, to path.tmp, then rename. */
static pb_status write_side(const char *path, const char *header, const pb_metrics *m, bool steps, char *err,
                            size_t err_n) {
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
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

pb_status pb_point_out_fill(const pb_point_ctx *pt, const pb_metrics *m, const char *title,
                            pb_point_metrics *out, char *err, size_t err_n) {
    pb_run_summary s;
    pb_metrics_summary(m, &s);
    set_metrics(out, &s);
    bool complete = s.n_unfinished == 0 && s.n_rejected == 0 && s.n_finished == s.n_requests;
    pb_pm_set(out, "complete", complete ? 1 : 0);

    const pb_node *slo = pb_node_get(pt->root, "slo");
    double slo_ttft = pb_node_num(slo, "ttft_ms", 0), slo_tpot = pb_node_num(slo, "tpot_ms", 0);
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
        fprintf(mf, "Check complete: %s (%lld of %lld requests finished, %lld rejected, %lld unfinished)\n",
                complete ? "PASS" : "FAIL", (long long)s.n_finished, (long long)s.n_requests,
                (long long)s.n_rejected, (long long)s.n_unfinished);
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
