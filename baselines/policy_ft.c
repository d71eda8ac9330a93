/* policy_ft.c -- FasterTransformer's request-level dynamic batching (paper §6.1).
 *
 * FasterTransformer has no scheduler; the paper's authors gave it one "with a
 * dynamic batching mechanism similar to ... Triton": "we set a maximum batch size B
 * as large as possible for each experiment, according to the GPU memory capacity.
 * The scheduler takes up to B number of earliest arrived requests and sends the
 * batch to FasterTransformer for processing."  So:
 *   - when no batch is running, the up-to-B earliest waiting requests form a batch
 *     (with max-length reservations, the contiguous KV manager admits as many as
 *     the space holds: B = 7 for OPT-13B on an A100-40GB; max_batch caps it);
 *   - the batch runs (one prefill step for all its prompts, then decode steps)
 *     until its longest request finishes; nothing joins a running batch;
 *   - every request of the batch completes when the batch completes
 *     (pb_policy_ft_finalize rewrites the recorded finish times, see baselines.h).
 * The prompts of a batch are not limited by max_num_batched_tokens (FT runs a
 * batch's context phase in one go); max_num_seqs still bounds the batch.
 *
 * Simplification, stated: a request that finishes before its batch frees its
 * sequence slot in the engine, so later decode steps of the batch carry only the
 * unfinished requests (real FT keeps computing finished rows until the batch
 * ends).  Decode steps are weight-bandwidth-bound, so this slightly flatters FT. */
#include <stdlib.h>
#include <string.h>

#include "baselines.h"
#include "engine.h"

typedef struct {
    int32_t max_batch;       /* B, 0 = as many as memory allows                     */
    int64_t *batch_of;       /* [cap] batch index per request id, -1 = none         */
    int64_t cap;
    int64_t n_batches, sum_batch, max_seen;
} ft_policy;

static const pb_policy_i ft_iface;

static void note_batch(ft_policy *f, int64_t id, int64_t batch) {
    if (id >= f->cap) {
        int64_t nc = f->cap ? f->cap : 1024;
        while (nc <= id) nc *= 2;
        f->batch_of = pb_xrealloc(f->batch_of, (size_t)nc * sizeof *f->batch_of);
        for (int64_t i = f->cap; i < nc; i++) f->batch_of[i] = -1;
        f->cap = nc;
    }
    f->batch_of[id] = batch;
}

static pb_status ft_schedule(pb_policy *p, pb_sched *s) {
    ft_policy *f = p->impl;
    if (pb_sched_n_running(s) > 0) return pb_sched_decode_running(s, NULL, NULL);   /* batch runs on */
    if (pb_sched_n_waiting(s) == 0) return PB_OK;
    int32_t n = 0;
    pb_admit_rule r = {.token_budget = INT64_MAX, .max_groups = f->max_batch};   /* no token budget */
    pb_status st = pb_sched_admit_waiting(s, &r, &n);
    if (st != PB_OK || n == 0) return st;
    int64_t b = f->n_batches++;
    for (pb_group *g = pb_sched_running_head(s); g; g = g->next) note_batch(f, g->id, b);
    f->sum_batch += n;
    if (n > f->max_seen) f->max_seen = n;
    return PB_OK;
}

static void ft_destroy(pb_policy *p) {
    if (!p) return;
    ft_policy *f = p->impl;
    free(f->batch_of);
    free(f);
    free(p);
}

static const pb_policy_i ft_iface = {
    .name = "ft",
    .waiting_key = NULL,          /* earliest arrival first */
    .schedule = ft_schedule,
    .on_group_done = NULL,
    .destroy = ft_destroy,
};

static const pb_policy_option FT_OPTIONS[] = {PB_BASELINE_MAX_BATCH, {0}};
const pb_policy_keys pb_policy_ft_keys = {FT_OPTIONS, NULL};

pb_status pb_policy_ft_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    *out = NULL;
    if (pb_policy_opts_check(ft_iface.name, &pb_policy_ft_keys, opts, err)) return PB_ERR_INVALID;
    ft_policy *f = pb_xcalloc(1, sizeof *f);
    f->max_batch = (int32_t)pb_policy_opt_int(&pb_policy_ft_keys, opts, "max_batch");
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = &ft_iface;
    p->impl = f;
    *out = p;
    return PB_OK;
}

bool pb_policy_is_ft(const pb_policy *p) { return p && p->iface == &ft_iface; }

void pb_policy_ft_stats(const pb_policy *p, pb_ft_stats *out) {
    PB_ASSERT(pb_policy_is_ft(p));
    const ft_policy *f = p->impl;
    memset(out, 0, sizeof *out);
    out->n_batches = f->n_batches;
    out->max_batch_seen = f->max_seen;
    out->mean_batch = f->n_batches ? (double)f->sum_batch / (double)f->n_batches : 0;
}

int64_t pb_policy_ft_batch_of(const pb_policy *p, int64_t id) {
    PB_ASSERT(pb_policy_is_ft(p));
    const ft_policy *f = p->impl;
    return id >= 0 && id < f->cap ? f->batch_of[id] : -1;
}

void pb_policy_ft_finalize(pb_policy *p, pb_metrics *m) {
    PB_ASSERT(pb_policy_is_ft(p));
    ft_policy *f = p->impl;
    if (f->n_batches == 0) return;
    int64_t n;
    pb_metrics_requests(m, &n);
    /* end[b]: latest finish in batch b, or -1 when a member never finished (a run
       cut short): then the batch never completed and none of its results were
       returned, so its finished members count as unfinished too. */
    double *end = pb_xmalloc((size_t)f->n_batches * sizeof *end);
    bool *cut = pb_xcalloc((size_t)f->n_batches, sizeof *cut);
    for (int64_t b = 0; b < f->n_batches; b++) end[b] = -1;
    int64_t lim = PB_MIN(n, f->cap);
    for (int64_t i = 0; i < lim; i++) {
        int64_t b = f->batch_of[i];
        if (b < 0) continue;
        const pb_req_metrics *r = pb_metrics_req(m, i);
        if (!r->finished) cut[b] = true;
        else if (r->finish_s > end[b]) end[b] = r->finish_s;
    }
    for (int64_t i = 0; i < lim; i++) {
        int64_t b = f->batch_of[i];
        pb_req_metrics *r = pb_metrics_req(m, i);
        if (b < 0 || !r->finished) continue;
        if (cut[b]) {
            r->finished = false;
            r->finish_s = -1;
        } else {
            r->finish_s = end[b];
        }
    }
    free(cut);
    free(end);
}

void pb_policy_finalize(pb_policy *p, pb_metrics *m) {
    if (pb_policy_is_ft(p)) pb_policy_ft_finalize(p, m);
}
