/* policy_priority.c -- priority scheduling with aging: the vLLM scheduler of the
 * system's engine (pb_sched_vllm_step) with the waiting queue ordered by an aged
 * priority, so a request's standing improves the longer it waits and nothing
 * starves.
 *
 * Semantics.  Every request has a priority p (smaller = more urgent).  At time t a
 * waiting request that arrived at a has the effective priority
 *     p - aging_rate * (t - a)
 * and admission takes the smallest effective priority first (ties: arrival, id).
 * Because t is common to all waiting requests, that order is the order of the fixed
 * key p + aging_rate * a, which is what waiting_key returns: the heap needs no
 * re-keying as time passes.  Waiting time counts from arrival, so a group preempted
 * by recompute returns with the key it had (it keeps its seniority).
 *
 * Where p comes from (option priority_by; the options and their defaults are
 * PRIO_OPTIONS below): the trace carries no priorities, so p is a length in tokens --
 *     prompt  the prompt length: shortest-prompt-first with aging, i.e.
 *             SJF on what the server knows at arrival;
 *     total   prompt + output length: SJF with an oracle of the output length (an
 *             upper bound on what length prediction could give).
 * aging_rate is in priority units (tokens) per second of waiting: a
 * request overtakes any newer one whose priority is less than aging_rate * (the
 * difference in arrival times) smaller.  No starvation: a request with priority p
 * that arrived at a ranks ahead of every request arriving after a + (p - p_min) /
 * aging_rate (p_min = the smallest priority any request can have, >= 1), so only
 * finitely many requests can overtake it.  aging_rate: 0 disables aging (pure
 * shortest-first, which can starve long requests under a steady stream of short
 * ones).  Running groups keep FCFS order, so preemption still takes the latest
 * arrivals (paper §4.5).  YAML: `policy: priority`, options `priority_by` and
 * `aging_rate` in the system's map. */
#include <string.h>

#include "policy.h"
#include "replay.h"

typedef enum { PRIO_BY_PROMPT = 0, PRIO_BY_TOTAL } prio_by;

typedef struct {
    prio_by by;
    double aging_rate;       /* priority units per second of waiting, >= 0 */
} prio_policy;

static double prio_key(pb_policy *p, const pb_group *g) {
    const prio_policy *q = p->impl;
    double prio = (double)g->prompt_len;
    if (q->by == PRIO_BY_TOTAL) prio += (double)g->output_len;
    return prio + q->aging_rate * g->arrival_s;
}

static pb_status prio_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    return pb_sched_vllm_step(s);
}

static const pb_policy_i PRIO_IFACE = {
    .name = "priority",
    .waiting_key = prio_key,
    .schedule = prio_schedule,
    .destroy = pb_policy_plain_destroy,
    .steady = &pb_vllm_steady_engine,   /* the vLLM step's answers hold in any waiting order */
};

static const pb_policy_option PRIO_OPTIONS[] = {
    {.name = "priority_by", .type = PB_T_ENUM, .choices = "prompt|total", .dflt = "prompt",
     .doc = "a request's priority, its prompt length (prompt) or prompt + output length (total: an oracle)"},
    {.name = "aging_rate", .type = PB_T_NUM, .lo = 0, .hi = 1e12, .dflt = "1000",
     .doc = "priority units (tokens) gained per second of waiting (0 = no aging)"},
    {0},
};
const pb_policy_keys pb_policy_priority_keys = {PRIO_OPTIONS, NULL};

pb_status pb_policy_priority_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    *out = NULL;
    if (pb_policy_opts_check(PRIO_IFACE.name, &pb_policy_priority_keys, opts, err)) return PB_ERR_INVALID;
    prio_policy *q = pb_xcalloc(1, sizeof *q);
    q->by = strcmp(pb_policy_opt_str(&pb_policy_priority_keys, opts, "priority_by"), "total") ? PRIO_BY_PROMPT
                                                                                            : PRIO_BY_TOTAL;
    q->aging_rate = pb_policy_opt_num(&pb_policy_priority_keys, opts, "aging_rate");
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = &PRIO_IFACE;
    p->impl = q;
    *out = p;
    return PB_OK;
}
