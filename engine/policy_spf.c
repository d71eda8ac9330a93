/* policy_spf.c -- shortest-prompt-first: the vLLM scheduler (pb_sched_vllm_step)
 * with the waiting queue ordered by prompt length (ties: arrival), so short
 * requests overtake long ones at admission.  Running groups keep FCFS order, so
 * preemption still takes the latest arrivals.  It exists to show a policy swap end
 * to end (YAML `policy: spf`); it trades tail latency of long prompts for mean
 * latency.  Options: none. */
#include <stdlib.h>

#include "policy.h"

static double spf_key(pb_policy *p, const pb_group *g) {
    (void)p;
    return (double)g->prompt_len;
}

static pb_status spf_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_step(s);
}

static void spf_destroy(pb_policy *p) { free(p); }

static const pb_policy_i SPF_IFACE = {
    .name = "spf",
    .waiting_key = spf_key,
    .schedule = spf_schedule,
    .on_group_done = NULL,
    .destroy = spf_destroy,
};

pb_status pb_policy_spf_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    if (opts && opts->kind == PB_NODE_MAP && opts->n_kids > 0) {
        if (err) pb_cfg_fail(err, opts->kids[0], true, "policy spf takes no options (unknown key '%s')",
                    opts->kids[0]->key);
        return PB_ERR_INVALID;
    }
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = &SPF_IFACE;
    *out = p;
    return PB_OK;
}
