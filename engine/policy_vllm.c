/* policy_vllm.c -- the vLLM scheduler of the system's engine version: the v0.1.x
 * mixed steps (policy vllm-v0.1, the paper's), the v0.2.x alternating ones (policy
 * vllm-v0.2) or V1's chunked ones, as params->step_mode says (YAML `engine:
 * v0.1|v0.2|v1`, or `step_mode:`).  FCFS waiting order.  Options: none (preemption mode, step
 * structure, budgets and max_paddings are engine parameters). */
#include "engine.h"   /* pb_engine_params */
#include "policy.h"
#include "replay.h"

static pb_status vllm_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_step(s);
}

static const pb_policy_i VLLM_IFACE = {
    .name = "vllm",
    .waiting_key = NULL,   /* FCFS: arrival time */
    .schedule = vllm_schedule,
    .destroy = pb_policy_plain_destroy,
    .steady = &pb_vllm_steady_engine,
};

pb_status pb_policy_vllm_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    return pb_policy_plain_create(&VLLM_IFACE, opts, out, err);
}
