/* policy_spf.c -- shortest-prompt-first: the vLLM scheduler of the system's engine
 * (pb_sched_vllm_step) with the waiting queue ordered by prompt length (ties:
 * arrival), so short requests overtake long ones at admission.  Running groups keep
 * FCFS order, so preemption still takes the latest arrivals.  It exists to show a
 * policy swap end to end (YAML `policy: spf`); it trades tail latency of long
 * prompts for mean latency.  Options: none. */
#include "policy.h"
#include "replay.h"

static double spf_key(pb_policy *p, const pb_group *g) {
    (void)p;
    return (double)g->prompt_len;
}

static pb_status spf_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_step(s);
}

static const pb_policy_i SPF_IFACE = {
    .name = "spf",
    .waiting_key = spf_key,
    .schedule = spf_schedule,
    .destroy = pb_policy_plain_destroy,
    .steady = &pb_vllm_steady_engine,   /* the vLLM step's answers hold in any waiting order */
};

pb_status pb_policy_spf_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    return pb_policy_plain_create(&SPF_IFACE, opts, out, err);
}
