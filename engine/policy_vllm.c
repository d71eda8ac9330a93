/* policy_vllm.c -- the vLLM scheduler of the system's engine version: the v0.1.x
 * mixed steps (policy vllm-v0.1, the paper's) or the v0.2.x alternating ones
 * (policy vllm-v0.2), as params->step_mode says (YAML `engine: v0.1|v0.2`, or
 * `step_mode:`).  FCFS waiting order.  Options: none (preemption mode, step
 * structure, budgets and max_paddings are engine parameters). */
#include "engine.h"   /* pb_engine_params */
#include "policy.h"

static pb_status vllm_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_step(s);
}

static bool vllm_steady_preempted(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_steady_preempted(s, pb_sched_params(s)->step_mode);
}

static bool vllm_decodes_first(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_decodes_first(pb_sched_params(s)->step_mode);
}

static const pb_policy_i VLLM_IFACE = {
    .name = "vllm",
    .waiting_key = NULL,   /* FCFS: arrival time */
    .schedule = vllm_schedule,
    .destroy = pb_policy_plain_destroy,
    .steady = pb_policy_vllm_steady,
    .steady_preempted = vllm_steady_preempted,
    .decodes_first = vllm_decodes_first,
};

pb_status pb_policy_vllm_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    return pb_policy_plain_create(&VLLM_IFACE, opts, out, err);
}
