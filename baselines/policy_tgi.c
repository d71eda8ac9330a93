/* policy_tgi.c -- Text Generation Inference (2023, v0.8) as vLLM's launch post ran
 * it: continuous batching over per-request reservations, no paging (TGI's router,
 * router/src/infer.rs batching_task and queue.rs next_batch, v0.8).
 *
 *   - a request is charged, when it joins, its prompt plus its max_new_tokens for
 *     every sequence (the launch benchmark sends max_new_tokens = the output length;
 *     best_of = n runs n separate sequences), against a token budget
 *     (max_batch_total_tokens: 0 = the KV space); what it charges stays reserved
 *     until it finishes, whatever it has written -- contiguous reservations, no
 *     paging, no preemption;
 *   - joining is TGI's router rule: the waiting requests join (a prefill-only step;
 *     the running batch waits) when the batch is empty, or when at least
 *     floor(waiting_served_ratio x running sequences) of them fit the budget left,
 *     or when the batch has decoded max_waiting_tokens steps since the last join;
 *     then as many as fit join, in arrival order.  The count that fits is estimated
 *     from the head's charge (the queue's order behind the head is the engine's);
 *   - otherwise every running sequence decodes one token.
 * Storage underneath is the engine's KV manager (pair it with `type: vllm`, whose
 * paged manager then only stores: each sequence is charged 15 slots more, the most
 * its block rounding at block 16 can hold beyond its tokens, so the paged cache never
 * runs out before the budget does) and the contiguous attention kernel
 * (`sim: {attention_kernel: contiguous}`).  Not modelled, stated: TGI concatenating
 * and filtering its KV tensors when batches merge and requests leave, the n-fold
 * prompt computation of best_of = n (the prompt runs once, then forks).
 *
 * Options (the system's YAML map): max_batch_total_tokens, waiting_served_ratio,
 * max_waiting_tokens (TGI v0.8's launcher flags; their defaults are its own).
 * Registered as "tgi". */
#include <math.h>
#include <stdlib.h>

#include "baselines.h"
#include "engine.h"

typedef struct {
    int64_t budget;          /* max_batch_total_tokens; 0 until read from the KV space */
    double ratio;            /* waiting_served_ratio                                  */
    int32_t max_waiting;     /* max_waiting_tokens                                     */
    int32_t waited;          /* decode steps since the last join                       */
} tgi_policy;

enum { TGI_BLOCK_SLACK = 15 };   /* a paged sequence's rounding at block 16 */

/* What g is charged: its sequences' prompt + max_new_tokens (+ the block slack). */
static int64_t charge(const pb_group *g) {
    return (int64_t)PB_MAX(g->n_seqs, g->max_seqs) * (g->prompt_len + g->output_len + TGI_BLOCK_SLACK);
}

static pb_status tgi_schedule(pb_policy *p, pb_sched *s) {
    tgi_policy *t = p->impl;
    if (t->budget == 0) {
        pb_kv_usage u;
        pb_kv_usage_get(pb_sched_kv(s), &u);
        t->budget = u.total_slots;
    }
    pb_group *head = pb_sched_waiting_peek(s);
    if (head) {
        int64_t used = 0;
        for (pb_group *g = pb_sched_running_head(s); g; g = g->next) used += charge(g);
        int32_t running = pb_sched_running_seqs(s);
        int64_t min_size = running == 0 || t->waited >= t->max_waiting ? 1 : (int64_t)floor(running * t->ratio);
        int64_t per = PB_MAX(head->n_seqs, head->max_seqs), fit = (t->budget - used) / charge(head) * per;
        int32_t joined = 0;
        while (fit >= min_size && (head = pb_sched_waiting_peek(s)) != NULL) {
            if (used + charge(head) > t->budget) break;
            pb_alloc_status a = pb_sched_can_admit(s, head);
            if (a == PB_ALLOC_NEVER) { pb_sched_reject(s, head); continue; }
            if (a == PB_ALLOC_LATER) break;
            if (pb_sched_running_seqs(s) + PB_MAX(head->n_seqs, head->max_seqs) > pb_sched_params(s)->max_num_seqs) break;
            pb_status st = pb_sched_admit(s, head, INT32_MAX);
            if (st == PB_ERR_NO_SPACE) break;
            if (st != PB_OK) return st;
            used += charge(head);
            joined++;
        }
        if (joined > 0) {   /* a prefill-only step */
            t->waited = 0;
            return PB_OK;
        }
    }
    t->waited++;
    return pb_sched_decode_running(s, NULL, NULL);   /* the reservations cover every decode */
}

static const pb_policy_i tgi_iface = {
    .name = "tgi",
    .waiting_key = NULL,          /* arrival order */
    .schedule = tgi_schedule,
    .destroy = pb_policy_plain_destroy,
};

static const pb_policy_option TGI_OPTIONS[] = {
    {.name = "max_batch_total_tokens", .type = PB_T_INT, .lo = 0, .hi = 1LL << 40, .dflt = "0",
     .doc = "TGI's token budget: prompt + max_new_tokens of every running sequence (0 = the KV space)"},
    {.name = "waiting_served_ratio", .type = PB_T_NUM, .lo = 0, .hi = 1e6, .dflt = "1.2",
     .doc = "TGI: waiting requests join when this times the running sequences of them fit"},
    {.name = "max_waiting_tokens", .type = PB_T_INT, .lo = 1, .hi = 1 << 20, .dflt = "20",
     .doc = "TGI: decode steps after which waiting requests join whatever their number"},
    {0},
};
const pb_policy_keys pb_policy_tgi_keys = {TGI_OPTIONS, NULL};

pb_status pb_policy_tgi_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    *out = NULL;
    if (pb_policy_opts_check(tgi_iface.name, &pb_policy_tgi_keys, opts, err)) return PB_ERR_INVALID;
    tgi_policy *t = pb_xcalloc(1, sizeof *t);
    t->budget = pb_policy_opt_int(&pb_policy_tgi_keys, opts, "max_batch_total_tokens");
    t->ratio = pb_policy_opt_num(&pb_policy_tgi_keys, opts, "waiting_served_ratio");
    t->max_waiting = (int32_t)pb_policy_opt_int(&pb_policy_tgi_keys, opts, "max_waiting_tokens");
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = &tgi_iface;
    p->impl = t;
    *out = p;
    return PB_OK;
}
