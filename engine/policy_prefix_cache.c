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
#include <stdlib.h>

#include "policy.h"

static pb_status prefix_cache_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_step(s);
}

static void prefix_cache_destroy(pb_policy *p) { free(p); }

static const pb_policy_i PREFIX_CACHE_IFACE = {
    .name = "prefix-cache",
    .waiting_key = NULL,   /* FCFS: arrival time */
    .schedule = prefix_cache_schedule,
    .on_group_done = NULL,
    .destroy = prefix_cache_destroy,
    .prefix_caching = true,
};

pb_status pb_policy_prefix_cache_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    if (opts && opts->kind == PB_NODE_MAP && opts->n_kids > 0) {
        if (err) pb_cfg_fail(err, opts->kids[0], true, "policy prefix-cache takes no options (unknown key '%s')",
                             opts->kids[0]->key);
        return PB_ERR_INVALID;
    }
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = &PREFIX_CACHE_IFACE;
    *out = p;
    return PB_OK;
}
