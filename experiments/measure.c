/* measure.c -- the measurement window (measure.h). */
#include "measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const pb_key pb_measure_schema[] = {
    {.name = "warmup_s", .type = PB_T_NUM, .lo = 0, .hi = 1e9, .dflt = "0",
     .doc = "requests arriving, and steps starting, before this time (s) are not averaged"},
    {.name = "cooldown_s", .type = PB_T_NUM, .lo = 0, .hi = 1e9, .dflt = "0",
     .doc = "requests arriving in the trace's last cooldown_s seconds are not averaged"},
    {.name = "steps", .type = PB_T_ENUM, .choices = "run|window", .dflt = "run",
     .doc = "step averages: from warmup_s to the run's end (run) or in the arrival window (window)"},
    {.name = "step_mean", .type = PB_T_ENUM, .choices = "time|step", .dflt = "time",
     .doc = "batched requests/sequences: weighted by step latency (time) or per step (step)"},
    {.name = "saving", .type = PB_T_ENUM, .choices = "blocks|ref_count", .dflt = "blocks",
     .doc = "memory saving: sum(L-P)/sum(L) (blocks) or 1 - 1/mean(L/P) over steps (ref_count)"},
    {0},
};

pb_measure pb_measure_default(void) { return pb_measure_from_root(NULL); }

pb_measure pb_measure_from_root(const pb_node *root) {
    const pb_key *S = pb_measure_schema;
    const pb_node *n = root ? pb_node_get(root, "measure") : NULL;   /* NULL: every key's declared default */
    pb_measure w;
    memset(&w, 0, sizeof w);
    w.warmup_s = pb_schema_num(S, n, "warmup_s");
    w.cooldown_s = pb_schema_num(S, n, "cooldown_s");
    w.steps = strcmp(pb_schema_str(S, n, "steps"), "window") == 0 ? PB_STEPS_WINDOW : PB_STEPS_RUN;
    w.step_mean = strcmp(pb_schema_str(S, n, "step_mean"), "step") == 0 ? PB_STEP_MEAN_STEP : PB_STEP_MEAN_TIME;
    w.saving = strcmp(pb_schema_str(S, n, "saving"), "ref_count") == 0 ? PB_SAVING_REF_COUNT : PB_SAVING_BLOCKS;
    return w;
}

bool pb_measure_needs_steps(const pb_measure *w) {
    return w->warmup_s > 0 || w->steps != PB_STEPS_RUN || w->step_mean != PB_STEP_MEAN_TIME ||
           w->saving != PB_SAVING_BLOCKS;
}

bool pb_measure_is_default(const pb_measure *w) { return w->cooldown_s == 0 && !pb_measure_needs_steps(w); }

/* The normalized latency over the requests arriving in [from, to] (per sequence); the
   other latencies over the same requests are point_out.c's (pb_point_latencies). */
static void apply_requests(double from, double to, pb_metrics *m, pb_point_metrics *out) {
    int64_t n = 0;
    const pb_req_metrics *rows = pb_metrics_requests(m, &n);
    int64_t n_seq = 0;
    for (int64_t i = 0; i < n; i++) n_seq += rows[i].n_seqs > 1 ? rows[i].n_seqs : 1;
    double *nl = pb_xmalloc((size_t)(n_seq + 1) * sizeof *nl);
    int64_t k_nl = 0, k = 0;
    for (int64_t i = 0; i < n; i++) {
        const pb_req_metrics *r = &rows[i];
        if (!r->finished || r->arrival_s < from || r->arrival_s > to) continue;
        pb_req_latency l = pb_req_latency_of(r);
        for (int32_t j = 0; j < (r->n_seqs > 1 ? r->n_seqs : 1); j++) nl[k_nl++] = l.norm_latency_s_per_token;
        k++;
    }
    double sum = 0;
    for (int64_t i = 0; i < k_nl; i++) sum += nl[i];
    bool any = k > 0;   /* none: undefined, as point_out.c's IF_FINISHED */
    pb_pm_set(out, "normalized_latency", any ? sum / (double)k_nl : NAN);
    pb_pm_set(out, "normalized_latency_p50", any ? pb_percentile(nl, k_nl, 50) : NAN);
    pb_pm_set(out, "normalized_latency_p90", any ? pb_percentile(nl, k_nl, 90) : NAN);
    pb_pm_set(out, "normalized_latency_p99", any ? pb_percentile(nl, k_nl, 99) : NAN);
    pb_pm_set(out, "measured_requests", (double)k);
    free(nl);
}

/* The step averages over the steps starting in [from, to]. */
static void apply_steps(const pb_measure *w, double from, double to, const pb_metrics *m, pb_point_metrics *out) {
    int64_t n = 0;
    const pb_step_metrics *st = pb_metrics_steps(m, &n);
    double busy = 0, groups_t = 0, seqs_t = 0, groups = 0, seqs = 0;
    double frac[4] = {0, 0, 0, 0}, logical = 0, saved = 0, ratio = 0;
    int64_t k = 0, k_mem = 0, k_ratio = 0;
    for (int64_t i = 0; i < n; i++) {
        const pb_step_metrics *s = &st[i];
        if (s->t_s < from || s->t_s > to) continue;
        k++;
        busy += s->latency_s;
        groups_t += (double)s->n_groups * s->latency_s;
        seqs_t += (double)s->n_seqs * s->latency_s;
        groups += s->n_groups;
        seqs += s->n_seqs;
        const pb_kv_usage *u = &s->mem;
        if (u->total_slots > 0) {
            double tot = (double)u->total_slots;
            frac[0] += u->token_slots / tot;
            frac[1] += u->reserved_slots / tot;
            frac[2] += u->internal_frag_slots / tot;
            frac[3] += u->free_slots / tot;
            k_mem++;
        }
        if (u->logical_blocks > 0) {
            logical += (double)u->logical_blocks;
            saved += (double)(u->logical_blocks - u->physical_blocks);
            if (u->physical_blocks > 0) {
                ratio += (double)u->logical_blocks / (double)u->physical_blocks;
                k_ratio++;
            }
        }
    }
    bool per_step = w->step_mean == PB_STEP_MEAN_STEP;
    pb_pm_set(out, "batched_requests", per_step ? (k ? groups / (double)k : 0) : (busy > 0 ? groups_t / busy : 0));
    pb_pm_set(out, "batched_seqs", per_step ? (k ? seqs / (double)k : 0) : (busy > 0 ? seqs_t / busy : 0));
    static const char *const MEM[4] = {"token_states_pct", "reservation_pct", "internal_frag_pct", "external_frag_pct"};
    for (int c = 0; c < 4; c++) pb_pm_set(out, MEM[c], k_mem ? 100 * frac[c] / (double)k_mem : 0);
    double sav = w->saving == PB_SAVING_REF_COUNT ? (k_ratio ? 1 - (double)k_ratio / ratio : 0)
                                                  : (logical > 0 ? saved / logical : 0);
    pb_pm_set(out, "saving_pct", 100 * sav);
    pb_pm_set(out, "measured_steps", (double)k);
    if (k == 0) {   /* no step in the window: undefined, as point_out.c's IF_STEPS */
        static const char *const STEP_METRICS[] = {"batched_requests", "batched_seqs", "token_states_pct",
                                                   "reservation_pct", "internal_frag_pct", "external_frag_pct",
                                                   "saving_pct"};
        for (size_t i = 0; i < PB_ARRAY_LEN(STEP_METRICS); i++) pb_pm_set(out, STEP_METRICS[i], NAN);
    }
}

void pb_measure_request_window(const pb_measure *w, double trace_end, pb_metrics *m, double *from,
                               double *to) {
    *from = -INFINITY;
    *to = INFINITY;
    if (pb_measure_is_default(w)) return;
    if (!(trace_end > 0)) {   /* no declared duration: the latest arrival */
        int64_t n = 0;
        const pb_req_metrics *rows = pb_metrics_requests(m, &n);
        for (int64_t i = 0; i < n; i++)
            if (rows[i].arrival_s > trace_end) trace_end = rows[i].arrival_s;
    }
    *from = w->warmup_s;
    *to = trace_end - w->cooldown_s;
}

void pb_measure_apply(const pb_measure *w, double trace_end, pb_metrics *m, pb_point_metrics *out) {
    if (pb_measure_is_default(w)) return;
    double from, to;
    pb_measure_request_window(w, trace_end, m, &from, &to);
    apply_requests(from, to, m, out);
    if (pb_measure_needs_steps(w)) apply_steps(w, from, w->steps == PB_STEPS_WINDOW ? to : INFINITY, m, out);
}
