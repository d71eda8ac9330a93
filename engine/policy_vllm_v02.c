/* policy_vllm_v02.c -- vLLM v0.2.x's scheduler (VLLM-DESIGN §3.2), whatever the
 * engine's step_mode: steps alternate instead of mixing.  While nothing is swapped a
 * step first tries to admit waiting groups FCFS; if any was admitted the step is
 * prompt-only, padded to [prompts, longest prompt] when params max_paddings >= 0
 * (v0.2.2+: admission stops when prompts x longest > max_num_batched_tokens or the
 * padding > max_paddings; -1 = the summed-token budget of v0.2.0-0.2.1).  Otherwise
 * it decodes the running groups (preempting the latest arrivals) and swaps groups
 * in if nothing was preempted.  Options: none (max_paddings is the system's). */
#include "policy.h"

static pb_status v02_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_v02_step(s);
}

static const pb_policy_i V02_IFACE = {
    .name = "vllm-v0.2",
    .waiting_key = NULL,   /* FCFS */
    .schedule = v02_schedule,
    .destroy = pb_policy_plain_destroy,
};

pb_status pb_policy_vllm_v02_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    return pb_policy_plain_create(&V02_IFACE, opts, out, err);
}
