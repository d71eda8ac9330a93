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
#include "static_batch.h"

typedef struct {
    int32_t max_batch;       /* B, 0 = as many as memory allows                     */
    pb_static_batches batches;
} ft_policy;

static const pb_policy_i ft_iface;

static pb_status ft_schedule(pb_policy *p, pb_sched *s) {
    ft_policy *f = p->impl;
    if (pb_sched_n_running(s) > 0) return pb_sched_decode_running(s, NULL, NULL);   /* batch runs on */
    if (pb_sched_n_waiting(s) == 0) return PB_OK;
    int32_t n = 0;
    pb_admit_rule r = {.token_budget = INT64_MAX, .max_groups = f->max_batch};   /* no token budget */
    pb_status st = pb_sched_admit_waiting(s, &r, &n);
    if (st != PB_OK || n == 0) return st;
    pb_static_batches_note(&f->batches, s, n);
    return PB_OK;
}

static void ft_destroy(pb_policy *p) {
    if (!p) return;
    ft_policy *f = p->impl;
    pb_static_batches_free(&f->batches);
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
    const pb_static_batches *b = &((const ft_policy *)p->impl)->batches;
    memset(out, 0, sizeof *out);
    out->n_batches = b->n_batches;
    out->max_batch_seen = b->max_seen;
    out->mean_batch = b->n_batches ? (double)b->sum_batch / (double)b->n_batches : 0;
}

int64_t pb_policy_ft_batch_of(const pb_policy *p, int64_t id) {
    PB_ASSERT(pb_policy_is_ft(p));
    return pb_static_batches_of(&((const ft_policy *)p->impl)->batches, id);
}

void pb_policy_ft_finalize(pb_policy *p, pb_metrics *m) {
    PB_ASSERT(pb_policy_is_ft(p));
    pb_static_batches_finalize(&((ft_policy *)p->impl)->batches, m);
}

void pb_policy_finalize(pb_policy *p, pb_metrics *m) {
    if (pb_policy_is_ft(p)) pb_policy_ft_finalize(p, m);
    else if (pb_policy_is_hf(p)) pb_policy_hf_finalize(p, m);
}
