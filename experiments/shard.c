/* shard.c -- point costs and the cost-balanced shard plan (LPT). */
#include "shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "point_key.h"   /* pb_point_resolved_workload */
#include "trace_fit.h"   /* pb_trace_fit */
#include "workload.h"    /* pb_workload_from_node, pb_workload_generate */

bool pb_shard_by_series(const pb_experiment *e) {
    return e->n_axes == 1 && e->knee_refine > 0 && e->knee_axis && !strcmp(e->axes[0].axis, e->knee_axis);
}

int64_t pb_point_cost(const pb_experiment *e, int sys, int point) {
    pb_node *w = pb_point_resolved_workload(e, sys, point);
    int64_t cost = 0;
    pb_workload_cfg wc;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    if (w && !pb_workload_from_node(w, &wc, &err)) {
        pb_trace t = {0};
        char msg[512];
        int lvl = pb_log_level;
        pb_log_level = 0;   /* "file not found, built-in distribution" is said when the point runs */
        if (!pb_workload_generate(&wc, e->seed, &t, msg, sizeof msg)) {
            pb_trace_fit(&t, pb_schema_num(pb_experiment_schema, pb_config_root(e->cfg), "length_scale"), false, 0);
            for (int64_t i = 0; i < t.n; i++) {
                const pb_request *r = &t.reqs[i];
                cost += r->prompt_len + (int64_t)r->output_len * PB_MAX(PB_MAX(r->n, r->beam_width), 1);
            }
        }
        pb_log_level = lvl;
        pb_trace_free(&t);
    }
    pb_point_tree_free(w);
    return PB_MAX(cost, 1);
}

struct pb_shard_plan {
    int n_shards, n_exps;
    int *base;          /* [exp * PB_EXP_MAX_SYSTEMS + sys]: first index of the series' points */
    int *n_grid;        /* same index: the series' grid points                                 */
    bool *by_series;    /* [exp]                                                                */
    int n_points;
    int64_t *cost;      /* [base + point]                                                       */
    int *owner;         /* [base + point]                                                       */
    int64_t *load;      /* [shard]                                                              */
};

typedef struct {
    int exp, sys, point;   /* point -1: the whole series */
    int64_t cost;
} unit;

static int unit_cmp(const void *pa, const void *pb) {
    const unit *a = pa, *b = pb;
    if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
    if (a->exp != b->exp) return a->exp < b->exp ? -1 : 1;
    if (a->sys != b->sys) return a->sys < b->sys ? -1 : 1;
    return (a->point > b->point) - (a->point < b->point);
}

pb_shard_plan *pb_shard_plan_make(pb_experiment *const *exps, int n_exps, int n_shards) {
    PB_ASSERT(n_shards >= 1);
    pb_shard_plan *p = pb_xcalloc(1, sizeof *p);
    p->n_shards = n_shards;
    p->n_exps = n_exps;
    p->base = pb_xcalloc((size_t)n_exps * PB_EXP_MAX_SYSTEMS + 1, sizeof *p->base);
    p->n_grid = pb_xcalloc((size_t)n_exps * PB_EXP_MAX_SYSTEMS + 1, sizeof *p->n_grid);
    p->by_series = pb_xcalloc((size_t)n_exps + 1, sizeof *p->by_series);
    p->load = pb_xcalloc((size_t)n_shards, sizeof *p->load);
    for (int x = 0; x < n_exps; x++) {
        p->by_series[x] = pb_shard_by_series(exps[x]);
        for (int s = 0; s < exps[x]->n_systems; s++) {
            p->base[x * PB_EXP_MAX_SYSTEMS + s] = p->n_points;
            p->n_grid[x * PB_EXP_MAX_SYSTEMS + s] = pb_experiment_n_points(exps[x], s);
            p->n_points += pb_experiment_n_points(exps[x], s);
        }
    }
    p->cost = pb_xcalloc((size_t)p->n_points + 1, sizeof *p->cost);
    p->owner = pb_xcalloc((size_t)p->n_points + 1, sizeof *p->owner);
    unit *u = pb_xcalloc((size_t)p->n_points + 1, sizeof *u);
    int nu = 0;
    for (int x = 0; x < n_exps; x++)
        for (int s = 0; s < exps[x]->n_systems; s++) {
            int b = p->base[x * PB_EXP_MAX_SYSTEMS + s], np = p->n_grid[x * PB_EXP_MAX_SYSTEMS + s];
            int64_t sum = 0;
            for (int q = 0; q < np; q++) sum += p->cost[b + q] = pb_point_cost(exps[x], s, q);
            if (p->by_series[x]) {
                if (np) u[nu++] = (unit){x, s, -1, sum};
            } else
                for (int q = 0; q < np; q++) u[nu++] = (unit){x, s, q, p->cost[b + q]};
        }
    qsort(u, (size_t)nu, sizeof *u, unit_cmp);
    for (int i = 0; i < nu; i++) {
        int best = 0;
        for (int k = 1; k < n_shards; k++)
            if (p->load[k] < p->load[best]) best = k;
        p->load[best] += u[i].cost;
        int b = p->base[u[i].exp * PB_EXP_MAX_SYSTEMS + u[i].sys];
        if (u[i].point >= 0) p->owner[b + u[i].point] = best;
        else
            for (int q = 0; q < p->n_grid[u[i].exp * PB_EXP_MAX_SYSTEMS + u[i].sys]; q++) p->owner[b + q] = best;
    }
    free(u);
    return p;
}

void pb_shard_plan_destroy(pb_shard_plan *p) {
    if (!p) return;
    free(p->base);
    free(p->n_grid);
    free(p->by_series);
    free(p->cost);
    free(p->owner);
    free(p->load);
    free(p);
}

int pb_shard_plan_owner(const pb_shard_plan *p, int exp, int sys, int point) {
    PB_ASSERT(exp >= 0 && exp < p->n_exps && sys >= 0 && sys < PB_EXP_MAX_SYSTEMS && point >= 0);
    int i = exp * PB_EXP_MAX_SYSTEMS + sys;
    if (point >= p->n_grid[i]) {   /* a refinement point: its series' owner */
        PB_ASSERT(p->by_series[exp] && p->n_grid[i] > 0);
        point = 0;
    }
    return p->owner[p->base[i] + point];
}

int64_t pb_shard_plan_point_cost(const pb_shard_plan *p, int exp, int sys, int point) {
    int i = exp * PB_EXP_MAX_SYSTEMS + sys;
    return point < p->n_grid[i] ? p->cost[p->base[i] + point] : 0;
}

int64_t pb_shard_plan_load(const pb_shard_plan *p, int shard) { return p->load[shard]; }
int pb_shard_plan_n_shards(const pb_shard_plan *p) { return p->n_shards; }

bool pb_shard_parse(const char *s, int *shard, int *n_shards) {
    char *end;
    long i = strtol(s, &end, 10);
    if (end == s || *end != '/') return false;
    const char *t = end + 1;
    long n = strtol(t, &end, 10);
    if (end == t || *end || n < 1 || n > 100000 || i < 1 || i > n) return false;
    *shard = (int)i - 1;
    *n_shards = (int)n;
    return true;
}

pb_status pb_shard_plan_check(const pb_shard_plan *p) {
    int64_t *sum = pb_xcalloc((size_t)p->n_shards, sizeof *sum);
    pb_status st = PB_OK;
    for (int x = 0; x < p->n_exps && !st; x++)
        for (int s = 0; s < PB_EXP_MAX_SYSTEMS && !st; s++) {
            int i = x * PB_EXP_MAX_SYSTEMS + s, b = p->base[i];
            for (int q = 0; q < p->n_grid[i]; q++) {
                int o = p->owner[b + q];
                if (o < 0 || o >= p->n_shards || p->cost[b + q] < 1) { st = PB_ERR_INVALID; break; }
                if (p->by_series[x] && o != p->owner[b]) { st = PB_ERR_INVALID; break; }   /* series split */
                sum[o] += p->cost[b + q];
            }
        }
    for (int k = 0; k < p->n_shards && !st; k++)
        if (sum[k] != p->load[k]) st = PB_ERR_INVALID;
    free(sum);
    return st;
}
