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
 * Where p comes from (option priority_by): the trace carries no priorities, so p is
 * a length in tokens --
 *     prompt  (default) the prompt length: shortest-prompt-first with aging, i.e.
 *             SJF on what the server knows at arrival;
 *     total   prompt + output length: SJF with an oracle of the output length (an
 *             upper bound on what length prediction could give).
 * aging_rate (default 1000) is in priority units (tokens) per second of waiting: a
 * request overtakes any newer one whose priority is less than aging_rate * (the
 * difference in arrival times) smaller.  No starvation: a request with priority p
 * that arrived at a ranks ahead of every request arriving after a + (p - p_min) /
 * aging_rate (p_min = the smallest priority any request can have, >= 1), so only
 * finitely many requests can overtake it.  aging_rate: 0 disables aging (pure
 * shortest-first, which can starve long requests under a steady stream of short
 * ones).  Running groups keep FCFS order, so preemption still takes the latest
 * arrivals (paper §4.5).  YAML: `policy: priority`, options `priority_by` and
 * `aging_rate` in the system's map. */
#include <stdlib.h>
#include <string.h>

#include "policy.h"

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
};

pb_status pb_policy_priority_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    *out = NULL;
    prio_policy q = {PRIO_BY_PROMPT, 1000.0};
    for (int i = 0; opts && opts->kind == PB_NODE_MAP && i < opts->n_kids; i++) {
        const pb_node *k = opts->kids[i];
        if (!strcmp(k->key, "priority_by")) {
            const char *v = k->value ? k->value : "";
            if (!strcmp(v, "prompt")) q.by = PRIO_BY_PROMPT;
            else if (!strcmp(v, "total")) q.by = PRIO_BY_TOTAL;
            else {
                if (err) pb_cfg_fail(err, k, false, "priority_by: '%s' is not one of prompt|total", v);
                return PB_ERR_INVALID;
            }
        } else if (!strcmp(k->key, "aging_rate")) {
            q.aging_rate = pb_node_num(opts, "aging_rate", -1);
            if (!(q.aging_rate >= 0 && q.aging_rate <= 1e12)) {
                if (err) pb_cfg_fail(err, k, false, "aging_rate: must be a number in [0, 1e12]");
                return PB_ERR_INVALID;
            }
        } else {
            if (err) pb_cfg_fail(err, k, true, "policy priority: unknown key '%s' (known: priority_by, aging_rate)",
                                 k->key);
            return PB_ERR_INVALID;
        }
    }
    prio_policy *impl = pb_xcalloc(1, sizeof *impl);
    *impl = q;
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = &PRIO_IFACE;
    p->impl = impl;
    *out = p;
    return PB_OK;
}
