/* policy_vllm_v01.c -- the paper's scheduler (§4.5; vLLM v0.1.x, docs/DESIGN.md §3.1),
 * whatever the engine's step_mode: FCFS, iteration-level; each step decodes the
 * running groups first (preempting the latest arrivals all-or-nothing when a slot is
 * missing), then swaps groups back in (unless one was swapped out this step), then
 * -- only while nothing is swapped -- admits waiting groups whose whole prompts fit
 * max_num_batched_tokens with the step's decodes (mixed prompt + decode steps) and
 * max_num_seqs.  Options: none. */
#include "policy.h"
#include "replay.h"

static pb_status v01_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_v01_step(s);
}

static const pb_policy_i V01_IFACE = {
    .name = "vllm-v0.1",
    .waiting_key = NULL,   /* FCFS */
    .schedule = v01_schedule,
    .destroy = pb_policy_plain_destroy,
    .steady = &pb_vllm_steady_v01,
};

/* its step is fixed (mixed, unpadded): the engine's step_mode and max_paddings do not apply */
const pb_policy_keys pb_policy_vllm_v01_keys = {NULL, "step_mode|max_paddings"};

pb_status pb_policy_vllm_v01_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    return pb_policy_plain_create(&V01_IFACE, opts, out, err);
}
