/* policy_orca.c -- the Orca baseline's scheduler (paper §6.1; Yu et al., OSDI'22).
 *
 * Iteration-level scheduling without paging: every step
 *   1. every running group decodes one token (its contiguous reservation, made at
 *      admission by the contiguous KV manager, covers its whole output, so a decode
 *      never runs out of space and nothing is ever preempted);
 *   2. waiting groups are admitted first-come-first-served, as long as the head's
 *      reservation fits in the KV space (pb_sched_can_admit == OK: all of its
 *      max_seqs regions, the buddy allocator's power-of-two chunks) and the step's
 *      budgets allow it: prefill + decode tokens <= max_num_batched_tokens and
 *      running sequences <= max_num_seqs (the same budgets vLLM gets, so the
 *      comparison isolates memory management), and, when set, max_batch groups.
 *      Admission stops at the first head that does not fit (strict FCFS, no
 *      skipping), as vLLM's scheduler does.  A head that can NEVER fit is rejected.
 * Prompts and decodes share a step (Orca's selective batching).  No sharing: the KV
 * manager gives each parallel sample / beam candidate its own region and stores a
 * shared prefix per request.
 *
 * Options (the system's YAML map): max_batch (int, 0 = no limit beyond
 * max_num_seqs).  Registered as "orca"; the reservation rule is the KV manager's
 * (kv_contiguous.h). */
#include <stdlib.h>

#include "baselines.h"
#include "engine.h"

typedef struct {
    int32_t max_batch;       /* groups per batch, 0 = unlimited */
} orca_policy;

/* Admit waiting groups FCFS while they fit; shared with the FT policy. */
pb_status pb_baseline_admit_fcfs(pb_sched *s, int32_t max_groups, bool token_budget,
                                 int32_t *n_admitted) {
    const pb_engine_params *ep = pb_sched_params(s);
    int32_t admitted = 0;
    pb_group *g;
    while ((g = pb_sched_waiting_peek(s)) != NULL) {
        if (max_groups > 0 && pb_sched_n_running(s) >= max_groups) break;
        pb_alloc_status a = pb_sched_can_admit(s, g);
        if (a == PB_ALLOC_NEVER) {
            pb_sched_reject(s, g);
            continue;
        }
        if (a != PB_ALLOC_OK) break;
        int32_t seqs = g->max_seqs > g->n_seqs ? g->max_seqs : g->n_seqs;
        if (pb_sched_running_seqs(s) + seqs > ep->max_num_seqs) break;
        int64_t tokens = pb_sched_batch_tokens(s);       /* vLLM v0.1 token budget check */
        if (token_budget && tokens > 0 && tokens + g->len > ep->max_num_batched_tokens) break;
        pb_status st = pb_sched_admit(s, g);
        if (st == PB_ERR_NO_SPACE) break;
        if (st != PB_OK) return st;
        admitted++;
    }
    if (n_admitted) *n_admitted = admitted;
    return PB_OK;
}

/* Decode every running group (call before admitting anything this step); a group
 * that cannot decode means its reservation was too small: a bug under the
 * baselines' rules (no preemption). */
pb_status pb_baseline_decode_all(pb_sched *s) {
    for (pb_group *g = pb_sched_running_head(s); g; g = g->next) {
        if (!pb_sched_can_decode(s, g)) {
            pb_log_error("baseline policy: group %d cannot decode within its reservation", g->id);
            return PB_ERR_INVALID;
        }
        pb_status st = pb_sched_decode(s, g);
        if (st != PB_OK) return st;
    }
    return PB_OK;
}

static pb_status orca_schedule(pb_policy *p, pb_sched *s) {
    orca_policy *o = p->impl;
    pb_status st = pb_baseline_decode_all(s);
    if (st != PB_OK) return st;
    return pb_baseline_admit_fcfs(s, o->max_batch, true, NULL);
}

static void orca_destroy(pb_policy *p) {
    if (!p) return;
    free(p->impl);
    free(p);
}

static const pb_policy_i orca_iface = {
    .name = "orca",
    .waiting_key = NULL,          /* FCFS */
    .schedule = orca_schedule,
    .on_group_done = NULL,
    .destroy = orca_destroy,
};

pb_status pb_policy_orca_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    *out = NULL;
    int64_t mb = opts ? pb_node_int(opts, "max_batch", 0) : 0;
    if (mb < 0 || mb > (1 << 20)) {
        if (err && opts) pb_cfg_fail(err, pb_node_get(opts, "max_batch"), false,
                                     "max_batch: %lld out of range [0, 1048576]", (long long)mb);
        return PB_ERR_INVALID;
    }
    orca_policy *o = pb_xcalloc(1, sizeof *o);
    o->max_batch = (int32_t)mb;
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = &orca_iface;
    p->impl = o;
    *out = p;
    return PB_OK;
}
