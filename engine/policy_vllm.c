/* policy_vllm.c -- the paper's scheduler (§4.5): FCFS, iteration-level, running
 * first, all-or-nothing preemption of the latest arrivals, swapped before waiting,
 * no admission while anything is swapped, watermark and token/sequence budgets.
 * The algorithm is pb_sched_vllm_step (scheduler.c); this policy keeps the waiting
 * queue in arrival order (FCFS).  Options: none (preemption mode and step structure
 * are engine parameters). */
#include <stdlib.h>

#include "policy.h"

static pb_status vllm_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_step(s);
}

static void vllm_destroy(pb_policy *p) { free(p); }

static const pb_policy_i VLLM_IFACE = {
    .name = "vllm",
    .waiting_key = NULL,   /* FCFS: arrival time */
    .schedule = vllm_schedule,
    .on_group_done = NULL,
    .destroy = vllm_destroy,
};

pb_status pb_policy_vllm_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    if (opts && opts->kind == PB_NODE_MAP && opts->n_kids > 0) {
        if (err) pb_cfg_fail(err, opts->kids[0], true, "policy vllm takes no options (unknown key '%s')",
                    opts->kids[0]->key);
        return PB_ERR_INVALID;
    }
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = &VLLM_IFACE;
    *out = p;
    return PB_OK;
}
