/* policy_sarathi.c -- Sarathi-Serve's stall-free batching (Agrawal et al., OSDI'24):
 * chunked prefill under a per-step token budget, decodes first.
 *
 * Semantics.  Every step, in this order:
 *   1. every running group that is decoding gets its decode (one token per
 *      sequence), preempting the latest arrivals all-or-nothing when slots run out,
 *      as vLLM does (a group preempted in its prefill phase is recomputed);
 *   2. swapped groups come back FCFS (unless one was swapped out this step) and
 *      decode;
 *   3. partial prefills continue, in arrival order, each with the next chunk of its
 *      prompt that the budget left allows;
 *   4. only while nothing is swapped, waiting groups are admitted FCFS, each with
 *      the chunk of its prompt the budget left allows (at least one token); the
 *      first that does not fit (no budget left, KV space, max_num_seqs) ends the
 *      step.
 * The budget counts every token of the step, decodes included: decodes are never
 * held back by it (they run first), prefill chunks fill what is left, so a step
 * computes max(decodes, token_budget) tokens at most (a multi-sequence prefill or a
 * shared prefix that runs alone excepted, below).  KV is allocated for a whole
 * prompt when it is admitted (Sarathi-Serve on vLLM, and vLLM V0's chunked
 * prefill); a prompt samples only in the step that completes it (its first token).
 * A parallel-sampling / beam group re-admitted after recompute has several
 * sequences: its prefill is not split (it waits until it fits the budget left, or
 * runs alone); a prompt with a shared prefix (prefix_id) is admitted with a first
 * chunk covering its prefix (the paged manager's prefix pool: its first user
 * computes the prefix in its admission step), alone when the prefix is over the
 * budget.  Prompts longer than max_num_batched_tokens are admissible (the
 * chunks are what a step computes); max_num_batched_tokens is not used.
 *
 * Option token_budget (tokens per step, SARATHI_OPTIONS below): its default 512 is
 * what Sarathi-Serve runs under strict latency targets, and vLLM's default
 * max_num_batched_tokens when chunked prefill is enabled ("512 is the default
 * max_num_batched_tokens for chunked prefill", vLLM docs, Performance and Tuning,
 * v0.4-v0.5).  YAML: `policy: sarathi`, `token_budget: N` in the system's map. */
#include "policy.h"

typedef struct {
    int32_t token_budget;
} sarathi_policy;

static pb_status sarathi_schedule(pb_policy *p, pb_sched *s) {
    const sarathi_policy *q = p->impl;
    pb_admit_rule r = {.token_budget = q->token_budget, .chunk = q->token_budget};
    pb_status st = pb_sched_decode_running(s, pb_victim_latest, NULL);
    if (st == PB_OK && pb_sched_n_swapped_out(s) == 0) st = pb_sched_swap_in_fcfs(s);
    if (st == PB_OK) st = pb_sched_continue_prefills(s, q->token_budget);
    if (st == PB_OK && pb_sched_n_swapped(s) == 0) st = pb_sched_admit_waiting(s, &r, NULL);
    return st;
}

static const pb_policy_i SARATHI_IFACE = {
    .name = "sarathi",
    .waiting_key = NULL,   /* FCFS */
    .schedule = sarathi_schedule,
    .destroy = pb_policy_plain_destroy,
};

static const pb_policy_option SARATHI_OPTIONS[] = {
    {.name = "token_budget", .type = PB_T_INT, .lo = 1, .hi = 1 << 24, .dflt = "512",
     .doc = "tokens per step, decodes included (Sarathi-Serve's and vLLM's chunked-prefill budget)"},
    {0},
};
/* its step is fixed: the engine's step_mode and max_paddings do not apply */
const pb_policy_keys pb_policy_sarathi_keys = {SARATHI_OPTIONS, "step_mode|max_paddings"};

pb_status pb_policy_sarathi_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    *out = NULL;
    if (pb_policy_opts_check(SARATHI_IFACE.name, &pb_policy_sarathi_keys, opts, err)) return PB_ERR_INVALID;
    sarathi_policy *q = pb_xcalloc(1, sizeof *q);
    q->token_budget = (int32_t)pb_policy_opt_int(&pb_policy_sarathi_keys, opts, "token_budget");
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = &SARATHI_IFACE;
    p->impl = q;
    *out = p;
    return PB_OK;
}
