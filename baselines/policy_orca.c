/* policy_orca.c -- the Orca baseline's scheduler (paper §6.1; Yu et al., OSDI'22).
 *
 * Iteration-level scheduling without paging, built from the building blocks of
 * policy.h (decode without a victim rule, then admission).  Every step
 *   1. every running group decodes one token (its contiguous reservation, made at
 *      admission by the contiguous KV manager, covers its whole output, so a decode
 *      never runs out of space and nothing is ever preempted);
 *   2. waiting groups are admitted first-come-first-served, as long as the head's
 *      reservation fits in the KV space (pb_sched_can_admit == OK: all of its
 *      max_seqs regions, the buddy allocator's power-of-two chunks) and the step's
 *      budgets allow it: prefill + decode tokens <= max_num_batched_tokens and
 *      running sequences <= max_num_seqs (the same budgets vLLM gets, so the
 *      comparison isolates memory management), and, when set, max_batch groups.
 *      Admission stops at the first head that does not fit (strict FCFS, no
 *      skipping), as vLLM's scheduler does.  A head that can NEVER fit is rejected.
 * Prompts and decodes share a step (Orca's selective batching).  No sharing: the KV
 * manager gives each parallel sample / beam candidate its own region and stores a
 * shared prefix per request.
 *
 * Option (the system's YAML map): max_batch, PB_BASELINE_MAX_BATCH (baselines.h).
 * Registered as "orca"; the reservation rule is the KV manager's (kv_contiguous.h). */
#include <stdlib.h>

#include "baselines.h"
#include "engine.h"

typedef struct {
    int32_t max_batch;       /* groups per batch, 0 = unlimited */
} orca_policy;

static pb_status orca_schedule(pb_policy *p, pb_sched *s) {
    const orca_policy *o = p->impl;
    pb_admit_rule r = {.token_budget = pb_sched_params(s)->max_num_batched_tokens, .max_groups = o->max_batch};
    pb_status st = pb_sched_decode_running(s, NULL, NULL);   /* no preemption */
    if (st != PB_OK) return st;
    return pb_sched_admit_waiting(s, &r, NULL);
}

static const pb_policy_i orca_iface = {
    .name = "orca",
    .waiting_key = NULL,          /* FCFS */
    .schedule = orca_schedule,
    .destroy = pb_policy_plain_destroy,
};

static const pb_policy_option ORCA_OPTIONS[] = {PB_BASELINE_MAX_BATCH, {0}};
const pb_policy_keys pb_policy_orca_keys = {ORCA_OPTIONS, NULL};

pb_status pb_policy_orca_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    *out = NULL;
    if (pb_policy_opts_check(orca_iface.name, &pb_policy_orca_keys, opts, err)) return PB_ERR_INVALID;
    orca_policy *o = pb_xcalloc(1, sizeof *o);
    o->max_batch = (int32_t)pb_policy_opt_int(&pb_policy_orca_keys, opts, "max_batch");
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = &orca_iface;
    p->impl = o;
    *out = p;
    return PB_OK;
}
