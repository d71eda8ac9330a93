/* uncertainty.c -- error bars on the cost model's predictions (uncertainty.h). */
#include "uncertainty.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* How a banded metric moves when every step takes s times as long (rate scaling). */
typedef enum { SCALE_TIME, SCALE_RATE, SCALE_NONE } scale_kind;
typedef struct {
    const char *name;
    scale_kind kind;
} banded;

static const banded BANDED[] = {
    {"normalized_latency", SCALE_TIME}, {"ttft_mean_ms", SCALE_TIME},        {"tpot_mean_ms", SCALE_TIME},
    {"e2el_mean_ms", SCALE_TIME},         {"request_throughput_per_s", SCALE_RATE},
    {"output_token_throughput_per_s", SCALE_RATE},                           {"batched_requests", SCALE_NONE},
};
static const char *const REPLICA_ONLY[] = {"saving_pct", "token_states_pct"};

pb_unc_method pb_unc_method_of(const pb_experiment *e, const pb_node *root) {
    const char *m = pb_schema_str(pb_experiment_schema, root, "uncertainty");
    if (!strcmp(m, "off")) return PB_UNC_OFF;
    if (!strcmp(m, "replicas")) return PB_UNC_REPLICAS;
    bool one_rate_axis = e->n_axes == 1 && !strcmp(e->axes[0].set, "workload.rate");
    if (!strcmp(m, "rate")) return one_rate_axis ? PB_UNC_RATE : PB_UNC_REPLICAS;
    return one_rate_axis ? PB_UNC_RATE : PB_UNC_REPLICAS;
}

void pb_unc_set_factors(pb_point_metrics *out, double lo, double hi) {
    pb_pm_set(out, "step_factor_lo", lo);
    pb_pm_set(out, "step_factor_hi", hi);
}

static void set_band(pb_point_metrics *out, const char *name, double a, double b) {
    double v = pb_pm_get(out, name, NAN);
    if (isnan(v)) return;
    double lo = v, hi = v;
    if (a < lo) lo = a;
    if (b < lo) lo = b;
    if (a > hi) hi = a;
    if (b > hi) hi = b;
    char k[40];
    snprintf(k, sizeof k, "%s_lo", name);
    pb_pm_set(out, k, lo);
    snprintf(k, sizeof k, "%s_hi", name);
    pb_pm_set(out, k, hi);
}

void pb_unc_from_replicas(pb_point_metrics *out, const pb_point_metrics *a, const pb_point_metrics *b) {
    for (size_t i = 0; i < PB_ARRAY_LEN(BANDED); i++)
        set_band(out, BANDED[i].name, pb_pm_get(a, BANDED[i].name, NAN), pb_pm_get(b, BANDED[i].name, NAN));
    for (size_t i = 0; i < PB_ARRAY_LEN(REPLICA_ONLY); i++)
        set_band(out, REPLICA_ONLY[i], pb_pm_get(a, REPLICA_ONLY[i], NAN), pb_pm_get(b, REPLICA_ONLY[i], NAN));
}

/* The metric of the series rows[0..n) (rate ascending) at rate x: log-linear between the
   points around it, the end point's value past either end; NAN when the series lacks it. */
static double at_rate(const pb_result_row *rows, int n, const char *name, double x) {
    int j = 0;
    while (j < n - 1 && rows[j + 1].axis[0] <= x) j++;
    double x0 = rows[j].axis[0], y0 = pb_pm_get(&rows[j].m, name, NAN);
    if (j == n - 1 || x <= x0) return y0;
    double x1 = rows[j + 1].axis[0], y1 = pb_pm_get(&rows[j + 1].m, name, NAN), f = (x - x0) / (x1 - x0);
    if (y0 > 0 && y1 > 0) return exp(log(y0) + f * (log(y1) - log(y0)));
    return y0 + f * (y1 - y0);
}

static double scaled(const pb_result_row *rows, int n, const banded *b, double rate, double s) {
    double v = at_rate(rows, n, b->name, rate * s);
    return b->kind == SCALE_TIME ? v * s : b->kind == SCALE_RATE ? v / s : v;
}

void pb_unc_fill_rate(pb_results *r) {
    for (int i = 0; i < r->n;) {   /* one series at a time */
        int j = i;
        while (j < r->n && r->rows[j].exp == r->rows[i].exp && r->rows[j].sys == r->rows[i].sys) j++;
        const pb_result_row *ser = &r->rows[i];
        const pb_experiment *e = r->exps[ser->exp];
        int n = j - i;
        for (int k = i; k < j && pb_unc_method_of(e, pb_config_root(e->cfg)) == PB_UNC_RATE; k++) {
            pb_result_row *row = &r->rows[k];
            double lo = pb_pm_get(&row->m, "step_factor_lo", NAN), hi = pb_pm_get(&row->m, "step_factor_hi", NAN);
            if (isnan(lo) || isnan(hi)) continue;
            for (size_t b = 0; b < PB_ARRAY_LEN(BANDED); b++)
                set_band(&row->m, BANDED[b].name, scaled(ser, n, &BANDED[b], row->axis[0], lo),
                         scaled(ser, n, &BANDED[b], row->axis[0], hi));
        }
        i = j;
    }
}
