/* vllm_layout.c -- a sweep point as vLLM bench serve's --save-result JSON (vllm_layout.h). */
#include "vllm_layout.h"

#include <ctype.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "point_out.h"   /* pb_point_percentiles, pb_point_pct_name */
#include "report.h"      /* pb_csv_table */
#include "workload.h"

#define NA_DATE "a simulation has no wall-clock date (same config and seed: byte-identical files); loadgen writes it"
#define NA_TOKENS "needs each request's token times; the engine pools the gaps (metrics.h), not per request"

const pb_vllm_field pb_vllm_fields[] = {
    {"date", NULL, NA_DATE},
    {"endpoint_type", NULL, NULL},
    {"backend", NULL, NULL},
    {"label", NULL, NULL},
    {"model_id", NULL, NULL},
    {"tokenizer_id", NULL, NULL},
    {"num_prompts", "n_requests", NULL},
    {"request_rate", NULL, NULL},
    {"burstiness", NULL, NULL},
    {"max_concurrency", NULL, NULL},
    {"ramp_up_strategy", NULL, NULL},
    {"ramp_up_start_rps", NULL, NULL},
    {"ramp_up_end_rps", NULL, NULL},
    {"duration", "duration_s", NULL},
    {"completed", "n_finished", NULL},
    {"failed", NULL, NULL},
    {"total_input_tokens", "input_tokens", NULL},
    {"total_output_tokens", "output_tokens", NULL},
    {"request_throughput", "request_throughput_per_s", NULL},
    {"request_goodput", "goodput_per_s", NULL},
    {"output_throughput", "output_token_throughput_per_s", NULL},
    {"total_token_throughput", "total_token_throughput_per_s", NULL},
    {"max_output_tokens_per_s", NULL, NA_TOKENS},
    {"max_concurrent_requests", "max_concurrent_requests", NULL},
    {"rps_change_events", NULL, "wall-clock times of a live ramp's integer rate steps; the ramp here is "
                                "a function of simulated time (arrivals.h)"},
    {"input_lens", NULL, NULL},
    {"output_lens", NULL, NULL},
    {"ttfts", NULL, NULL},
    {"itls", NULL, NA_TOKENS},
    {"generated_texts", NULL, "no text is generated: requests are token counts"},
    {"errors", NULL, NULL},
    {"mean_ttft_ms", "ttft_mean_ms", NULL},
    {"median_ttft_ms", "ttft_p50_ms", NULL},
    {"std_ttft_ms", "ttft_std_ms", NULL},
    {"p99_ttft_ms", "ttft_p99_ms", NULL},
    {"mean_tpot_ms", "tpot_mean_ms", NULL},
    {"median_tpot_ms", "tpot_p50_ms", NULL},
    {"std_tpot_ms", "tpot_std_ms", NULL},
    {"p99_tpot_ms", "tpot_p99_ms", NULL},
    {"mean_itl_ms", "itl_mean_ms", NULL},
    {"median_itl_ms", "itl_p50_ms", NULL},
    {"std_itl_ms", "itl_std_ms", NULL},
    {"p99_itl_ms", "itl_p99_ms", NULL},
    {"mean_e2el_ms", "e2el_mean_ms", NULL},
    {"median_e2el_ms", "e2el_p50_ms", NULL},
    {"std_e2el_ms", "e2el_std_ms", NULL},
    {"p99_e2el_ms", "e2el_p99_ms", NULL},
    {NULL, NULL, NULL}};

static const char *const LAT[] = {"ttft", "tpot", "itl", "e2el"};

bool pb_vllm_field_to_ours(const char *v, char *buf, size_t n) {
    for (const pb_vllm_field *f = pb_vllm_fields; f->name; f++)
        if (f->ours && !strcmp(f->name, v) && strncmp(v, "p", 1)) {
            snprintf(buf, n, "%s", f->ours);
            return true;
        }
    /* pP_X_ms: any percentile */
    for (size_t i = 0; i < PB_ARRAY_LEN(LAT); i++) {
        char suf[16];
        snprintf(suf, sizeof suf, "_%s_ms", LAT[i]);
        size_t l = strlen(v), sl = strlen(suf);
        if (l > sl + 1 && v[0] == 'p' && !strcmp(v + l - sl, suf)) {
            snprintf(buf, n, "%s_p%.*s_ms", LAT[i], (int)(l - sl - 1), v + 1);
            return true;
        }
    }
    return false;
}

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* input_lens, output_lens, ttfts, errors from the point's per-request file. */
static pb_status add_requests(json_t *o, const char *req_csv, char *err, size_t err_n) {
    pb_csv_table t;
    if (pb_csv_table_load(req_csv, &t)) {
        snprintf(err, err_n, "%s: cannot read the per-request rows", req_csv);
        return PB_ERR_IO;
    }
    int ci = pb_csv_table_col(&t, "prompt_len"), co = pb_csv_table_col(&t, "output_len"),
        ct = pb_csv_table_col(&t, "ttft_ms"), cf = pb_csv_table_col(&t, "finish_s"),
        cr = pb_csv_table_col(&t, "rejected"), ca = pb_csv_table_col(&t, "aborted");
    if (ci < 0 || co < 0 || ct < 0 || cf < 0 || cr < 0 || ca < 0) {
        snprintf(err, err_n, "%s: not a per-request file (point_out.h columns)", req_csv);
        pb_csv_table_free(&t);
        return PB_ERR_INVALID;
    }
    json_t *in = json_array(), *out = json_array(), *tt = json_array(), *er = json_array();
    for (int r = 0; r < t.n_rows; r++) {
        char **row = t.rows[r];
        bool done = *row[cf] != 0;
        json_array_append_new(in, json_integer(strtoll(row[ci], NULL, 10)));
        json_array_append_new(out, json_integer(done ? strtoll(row[co], NULL, 10) : 0));
        json_array_append_new(tt, *row[ct] ? json_real(strtod(row[ct], NULL) / 1e3) : json_null());
        json_array_append_new(er, json_string(done                     ? ""
                                                : !strcmp(row[cr], "1") ? "rejected"
                                                : !strcmp(row[ca], "1") ? "aborted"
                                                                        : "unfinished"));
    }
    pb_csv_table_free(&t);
    json_object_set_new(o, "input_lens", in);
    json_object_set_new(o, "output_lens", out);
    json_object_set_new(o, "ttfts", tt);
    json_object_set_new(o, "errors", er);
    return PB_OK;
}

static void put_metric(json_t *o, const char *vllm, const pb_point_metrics *m, const char *ours) {
    json_object_set_new(o, vllm, num_or_null(pb_pm_get(m, ours, NAN)));
}

pb_status pb_vllm_write_point(const pb_experiment *e, int sys, int point, const double *vals,
                              const pb_point_metrics *m, const char *req_csv, const pb_vllm_measured *measured,
                              const char *path, char *err, size_t err_n) {
    pb_config *cfg = NULL;
    pb_cfg_err ce;
    pb_cfg_err_clear(&ce);
    if (pb_experiment_resolve(e, sys, point, &cfg, &ce)) {
        snprintf(err, err_n, "%s", ce.msg);
        return PB_ERR_INVALID;
    }
    const pb_node *root = pb_config_root(cfg);
    pb_workload_cfg wc;
    if (pb_workload_from_node(pb_node_get(root, "workload"), &wc, &ce)) pb_workload_defaults(&wc);
    const pb_arrival_cfg *a = &wc.arrivals;
    const char *model = pb_node_str(root, "model.name", "?");
    char backend[64];
    snprintf(backend, sizeof backend, "pagedbench-%s", measured ? "loadgen" : e->executor);

    json_t *o = json_object();
    if (measured) json_object_set_new(o, "date", json_string(measured->date));
    json_object_set_new(o, "endpoint_type", json_string(backend));
    json_object_set_new(o, "backend", json_string(backend));
    json_object_set_new(o, "label", json_string(e->systems[sys].id));
    json_object_set_new(o, "model_id", json_string(measured ? measured->model : model));
    json_object_set_new(o, "tokenizer_id", json_string(model));
    json_object_set_new(o, "num_prompts", json_integer((json_int_t)pb_pm_get(m, "n_requests", 0)));
    /* --metadata: the point's identity */
    json_object_set_new(o, "experiment", json_string(e->name));
    json_object_set_new(o, "system", json_string(e->systems[sys].id));
    int seed_axis = -1;
    for (int k = 0; k < e->n_axes; k++) {
        json_object_set_new(o, e->axes[k].axis, json_real(vals[k]));
        if (!strcmp(e->axes[k].set, "seed")) seed_axis = k;
    }
    json_object_set_new(o, "seed", json_integer(seed_axis < 0 ? (json_int_t)e->seed : (json_int_t)vals[seed_axis]));
    bool inf = a->kind == PB_ARRIVALS_BURST || a->ramp != PB_RAMP_NONE || wc.trace[0] ||
               (a->kind == PB_ARRIVALS_REPLAY && !(a->rate > 0));
    json_object_set_new(o, "request_rate", inf ? json_string("inf") : json_real(a->rate));
    json_object_set_new(o, "burstiness", json_real(a->kind == PB_ARRIVALS_GAMMA ? a->burstiness : 1.0));
    int32_t mc = wc.client.max_concurrency;   /* vLLM's --max-concurrency: null = none */
    json_object_set_new(o, "max_concurrency", mc > 0 ? json_integer(mc) : json_null());
    if (a->ramp != PB_RAMP_NONE) {
        json_object_set_new(o, "ramp_up_strategy", json_string(pb_ramp_kind_name(a->ramp)));
        json_object_set_new(o, "ramp_up_start_rps", json_real(a->ramp_start));
        json_object_set_new(o, "ramp_up_end_rps", json_real(a->ramp_end));
    }
    put_metric(o, "duration", m, "duration_s");
    json_object_set_new(o, "completed", json_integer((json_int_t)pb_pm_get(m, "n_finished", 0)));
    json_object_set_new(o, "failed", json_integer((json_int_t)(pb_pm_get(m, "n_rejected", 0) +
                                                               pb_pm_get(m, "n_aborted", 0) +
                                                               pb_pm_get(m, "n_unfinished", 0))));
    json_object_set_new(o, "total_input_tokens", json_integer((json_int_t)pb_pm_get(m, "input_tokens", 0)));
    json_object_set_new(o, "total_output_tokens", json_integer((json_int_t)pb_pm_get(m, "output_tokens", 0)));
    put_metric(o, "request_throughput", m, "request_throughput_per_s");
    double gp = pb_pm_get(m, "goodput_per_s", NAN);
    json_object_set_new(o, "request_goodput", isnan(gp) ? json_null() : json_real(gp));
    put_metric(o, "output_throughput", m, "output_token_throughput_per_s");
    put_metric(o, "total_token_throughput", m, "total_token_throughput_per_s");
    json_object_set_new(o, "max_concurrent_requests",
                        json_integer((json_int_t)pb_pm_get(m, "max_concurrent_requests", 0)));
    pb_status st = PB_OK;
    if (req_csv) st = add_requests(o, req_csv, err, err_n);
    double p[PB_POINT_MAX_PCTS + 1];
    int np = pb_point_percentiles(root, p);
    const pb_node *pc = pb_node_get(root, "percentiles");   /* p50 only when asked for: median is its own */
    bool asked50 = false;
    for (int k = 0; pc && k < pc->n_kids; k++) asked50 |= strtod(pc->kids[k]->value, NULL) == 50;
    for (size_t i = 0; i < PB_ARRAY_LEN(LAT) && !st; i++) {
        char v[64], ours[64];
        static const char *const STAT[][2] = {{"mean", "mean"}, {"median", "p50"}, {"std", "std"}};
        for (int k = 0; k < 3; k++) {
            snprintf(v, sizeof v, "%s_%s_ms", STAT[k][0], LAT[i]);
            snprintf(ours, sizeof ours, "%s_%s_ms", LAT[i], STAT[k][1]);
            put_metric(o, v, m, ours);
        }
        for (int k = 0; k < np; k++) {   /* vLLM's p_word: "99", "99.9" */
            pb_point_pct_name(LAT[i], p[k], ours, sizeof ours);
            if (p[k] == floor(p[k])) snprintf(v, sizeof v, "p%.0f_%s_ms", p[k], LAT[i]);
            else snprintf(v, sizeof v, "p%.10g_%s_ms", p[k], LAT[i]);
            if (p[k] != 50 || asked50) put_metric(o, v, m, ours);
        }
    }
    pb_config_destroy(cfg);
    if (st) {
        json_decref(o);
        return st;
    }
    char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (!text) {
        snprintf(err, err_n, "%s: cannot format the JSON", path);
        return PB_ERR_IO;
    }
    size_t len = strlen(text);
    text = pb_xrealloc(text, len + 2);
    text[len++] = '\n';
    text[len] = 0;
    st = pb_write_file_atomic(path, text, len);
    free(text);
    if (st) snprintf(err, err_n, "%s: cannot write", path);
    return st;
}

void pb_vllm_point_file(const pb_experiment *e, int sys, const double *vals, const char *dir, char *path, size_t pn) {
    size_t k = (size_t)snprintf(path, pn, "%s/%s-%s", dir, e->name, e->systems[sys].id);
    for (int a = 0; a < e->n_axes && k < pn; a++) {   /* the axis' name as a file name: [A-Za-z0-9._-] */
        char num[64];
        pb_fmt_num(num, sizeof num, vals[a]);
        size_t k0 = k + 1;
        k += (size_t)snprintf(path + k, pn - k, "-%s%s", e->axes[a].axis, num);
        for (size_t c = k0; c < k && c < pn; c++)
            if (!isalnum((unsigned char)path[c]) && !strchr("._-", path[c])) path[c] = '_';
    }
    if (k < pn) snprintf(path + k, pn - k, ".json");
}
