/* policy_prefix_cache.c -- vLLM scheduling with automatic prefix caching (vLLM APC).
 *
 * The step is the paper's vLLM step (pb_sched_vllm_step: FCFS, running first,
 * all-or-nothing preemption of the latest arrivals, swapped before waiting), and the
 * policy sets .prefix_caching, so the system's paged KV manager keeps computed full
 * blocks cached by content (block_manager.h): a request whose leading blocks hold
 * the same tokens as blocks computed earlier -- a shared prefix, a chatbot turn's
 * history, its own KV after a recompute preemption -- maps them instead of computing
 * them (its prefill starts at s->n_cached), and freed blocks stay cached until an
 * allocation evicts them, least recently used first.  The paper's pinned shared-
 * prefix pool is not used (the cache replaces it).  Options: none. */
#include "policy.h"

static pb_status prefix_cache_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_step(s);
}

static const pb_policy_i PREFIX_CACHE_IFACE = {
    .name = "prefix-cache",
    .waiting_key = NULL,   /* FCFS: arrival time */
    .schedule = prefix_cache_schedule,
    .destroy = pb_policy_plain_destroy,
    .prefix_caching = true,
};

pb_status pb_policy_prefix_cache_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    return pb_policy_plain_create(&PREFIX_CACHE_IFACE, opts, out, err);
}
