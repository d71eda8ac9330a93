/* sched_step.c -- the building blocks of a scheduling step (policy.h) and the vLLM
 * step composed of them.
 *
 * Blocks, each one loop over one queue:
 *   decode_running     running groups in FCFS order, not in their prefill phase;
 *                      while a group cannot get a slot for each of its sequences,
 *                      preempt the victim rule's choice (all-or-nothing; vLLM: the
 *                      LATEST-arrived running group, the group itself when it is the
 *                      latest); survivors decode;
 *   continue_prefills  running groups in their prefill phase (chunked prefill), FCFS,
 *                      each the next chunk within the token budget left;
 *   swap_in_fcfs       swapped groups in FCFS order while can_swap_in == OK and the
 *                      sequence budget allows;
 *   admit_waiting      waiting groups from the head while the manager says OK and the
 *                      token budget (counting this step's decodes; a prefill costs
 *                      its uncached tokens; under chunking a first chunk is what
 *                      the budget leaves), the sequence budget (max_num_seqs,
 *                      counting a group's future sequences, max(n_seqs, n / beam
 *                      width)) and the rule's group cap allow; NEVER => rejected.
 *
 * vLLM step (pb_sched_vllm_step), paper §4.5 and docs/DESIGN.md §3:
 *   mixed (v0.1.x, default): decode_running; if nothing was swapped out this step
 *     swap_in_fcfs; only if no group is swapped admit_waiting
 *     (max_num_batched_tokens).
 *   alternate (v0.2.x): if no group is swapped, admit_waiting first (prefill tokens
 *     only); if anything was admitted the step is prompt-only; otherwise
 *     decode_running, then swap_in_fcfs if nothing was preempted.  With
 *     max_paddings >= 0 (v0.2.2+) the prompt step is a padded [rows, longest] batch:
 *     admission continues while rows x longest <= max_num_batched_tokens and rows x
 *     longest - sum of lengths <= max_paddings (instead of the summed-token budget),
 *     and the batch carries n_padded_tokens.
 *   In both modes a prompt longer than min(max_model_len, max_num_batched_tokens)
 *   is rejected (v0.2: FINISHED_IGNORED).
 *   chunked (V1, vllm v0.33.0 v1/core/sched/scheduler.py schedule()): one budget of
 *     max_num_batched_tokens tokens per step: decode_running (the running requests
 *     in order, each its one token; a request that cannot get its slot preempts the
 *     latest running one, by recompute -- the engine's preemption mode, which
 *     `engine: v1` fixes), continue_prefills (the partial prefill gets what the
 *     budget leaves), then, only if nothing was preempted this step, admit_waiting
 *     with chunks of the budget left (prompts up to max_model_len, chunked over
 *     steps).  Never swaps.  V1 walks its running list once, decodes and partial
 *     prefills in list order; with chunked admission the only partial prefill is the
 *     last admitted, the list's tail, so decodes-then-prefill is the same order (a
 *     long_prefill_token_threshold, off by default, is not modelled).  Admission
 *     checks the whole prompt's blocks (scheduler_reserve_full_isl, on by default)
 *     and the engine allocates them at admission, where V1 allocates each chunk's
 *     blocks as it is scheduled; a parallel-sampling group is one prompt then n
 *     sequences (V1 fans it out into n requests whose prompt blocks the prefix
 *     cache shares: the same blocks, less each child's recompute of the prompt's
 *     last partial block).
 * Deviations from vLLM, on purpose: a recompute-resumed group whose prompt +
 * generated tokens exceed max_num_batched_tokens is admitted alone rather than
 * dropped; swap falls back to recompute when the CPU space is full instead of
 * aborting the server. */
#include "scheduler.h"

#include "kv_manager.h"
#include "replay.h"

/* ---- decode ---- */

pb_group *pb_victim_latest(pb_sched *s, pb_group *needy, void *user) {
    (void)user;
    pb_group *v = s->run_tail;
    return pb_sched_in_batch(v) ? needy : v;
}

pb_status pb_sched_decode_running(pb_sched *s, pb_victim_fn victim, void *user) {
    for (pb_group *g = s->run_head, *next; g; g = next) {
        next = g->next;
        if (g->prefill || pb_sched_in_batch(g)) continue;
        bool self = false;
        while (!self && !pb_kv_can_append(s->kv, g)) {   /* pb_sched_can_decode, inline */
            if (!victim) {
                pb_log_error("policy %s: group %d cannot decode and the policy never preempts",
                             s->policy->iface->name, g->id);
                return PB_ERR_INVALID;
            }
            pb_group *v = victim(s, g, user);
            PB_ASSERT(v && v->state == PB_GROUP_RUNNING && (v == g || !pb_sched_in_batch(v)));
            self = v == g;
            if (self) next = g->next;
            pb_sched_preempt(s, v, s->p->preemption);
        }
        if (self) continue;
        pb_status st = pb_sched_decode(s, g);
        if (st != PB_OK) return st;
        next = g->next;   /* victims may have been g's successors */
    }
    return PB_OK;
}

/* ---- chunked prefill ---- */

pb_status pb_sched_continue_prefills(pb_sched *s, int64_t token_budget) {
    for (pb_group *g = s->run_head; g; g = g->next) {
        if (!g->prefill || pb_sched_in_batch(g)) continue;
        int64_t room = token_budget - pb_sched_batch_tokens(s);
        if (room <= 0) break;
        pb_status st = pb_sched_prefill(s, g, (int32_t)PB_MIN(room, INT32_MAX));
        if (st != PB_OK) return st;
    }
    return PB_OK;
}

/* ---- swap in ---- */

pb_status pb_sched_swap_in_fcfs(pb_sched *s) {
    pb_group *g;
    while ((g = s->swp_head) != NULL) {
        if (pb_sched_preempted_this_step(s, g)) break;
        pb_alloc_status st = pb_sched_can_swap_in(s, g);
        if (st == PB_ALLOC_NEVER) { pb_sched_reject(s, g); continue; }
        if (st == PB_ALLOC_LATER) break;
        if (s->running_seqs + PB_MAX(g->n_seqs, g->max_seqs) > s->p->max_num_seqs) break;
        pb_status e = pb_sched_swap_in(s, g);
        if (e != PB_OK) return e;
    }
    return PB_OK;
}

/* ---- admission ---- */

/* Would adding WAITING g's sequences as rows of this step's padded prompt batch
   break a budget (v0.2.2+ scheduler.py: len(seq_lens) * max(seq_lens) <=
   max_num_batched_tokens and num_paddings <= max_paddings)?  A row is a whole
   sequence (prompt + generated after recompute). */
static bool padded_batch_full(const pb_sched *s, const pb_admit_rule *r, const pb_group *g) {
    const pb_batch_builder *bb = s->batch;
    int64_t rows = bb->n_prefill_seqs + g->n_seqs, longest = bb->prefill_max_len;
    int64_t sum = bb->prefill_len_sum;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        longest = PB_MAX(longest, g->seqs[i]->len);
        sum += g->seqs[i]->len;
    }
    return rows * longest > r->token_budget || rows * longest - sum > r->max_paddings;
}

/* Does WAITING g fit this step's token budget?  *max_tokens: its prefill tokens
   this step (a chunk, or INT32_MAX for the whole prefill).  A first chunk covers a
   shared prefix (prefix_id) whole: the paged manager's prefix pool hands later
   users the prefix KV that its first user computes in its admission step
   (block_manager.c), so that step must compute all of it -- with the step's other
   tokens, or alone when the prefix is over the budget. */
static bool admit_fits(pb_sched *s, const pb_admit_rule *r, const pb_group *g, int32_t *max_tokens) {
    int64_t tokens = pb_sched_batch_tokens(s);
    *max_tokens = INT32_MAX;
    if (r->padded) return tokens == 0 || !padded_batch_full(s, r, g);
    if (r->chunk > 0 && g->n_seqs == 1) {
        int64_t room = PB_MIN(r->token_budget - tokens, (int64_t)r->chunk);
        int64_t least = g->prefix_id >= 0 ? PB_MIN(g->prefix_len, g->len) : 1;
        if (room < least && tokens > 0) return false;
        *max_tokens = (int32_t)PB_MIN(PB_MAX(room, least), INT32_MAX);
        return true;
    }
    int64_t need = g->len - pb_kv_cached_tokens(s->kv, g);
    return tokens == 0 || tokens + need <= r->token_budget;
}

pb_status pb_sched_admit_waiting(pb_sched *s, const pb_admit_rule *r, int32_t *n_admitted) {
    int32_t n = 0;
    pb_group *g;
    while ((g = pb_sched_waiting_peek(s)) != NULL) {
        if (pb_sched_preempted_this_step(s, g)) break;
        if (r->max_groups > 0 && s->n_running >= r->max_groups) break;
        pb_alloc_status a = pb_sched_admit_status(s, g, r->chunk > 0);
        if (a == PB_ALLOC_NEVER) { pb_sched_reject(s, g); continue; }
        if (a == PB_ALLOC_LATER) break;
        int32_t max_tokens;
        if (!admit_fits(s, r, g, &max_tokens)) break;
        if (s->running_seqs + PB_MAX(g->n_seqs, g->max_seqs) > s->p->max_num_seqs) break;
        pb_status e = pb_sched_admit(s, g, max_tokens);
        if (e == PB_ERR_NO_SPACE) break;
        if (e != PB_OK) return e;
        n++;
    }
    if (n_admitted) *n_admitted = n;
    return PB_OK;
}

void pb_sched_pad_prompts(pb_sched *s) { pb_batch_set_padded(s->batch, PB_PAD_UNBOUNDED); }

/* ---- the vLLM step ---- */

pb_status pb_sched_vllm_v01_step(pb_sched *s) {
    pb_admit_rule r = {.token_budget = s->p->max_num_batched_tokens};
    pb_status st = pb_sched_decode_running(s, pb_victim_latest, NULL);
    if (st == PB_OK && s->n_swapped_out_now == 0) st = pb_sched_swap_in_fcfs(s);
    if (st == PB_OK && s->n_swapped == 0) st = pb_sched_admit_waiting(s, &r, NULL);
    return st;
}

pb_status pb_sched_vllm_v02_step(pb_sched *s, int32_t max_paddings) {
    pb_admit_rule r = {.token_budget = s->p->max_num_batched_tokens, .padded = max_paddings >= 0,
                       .max_paddings = max_paddings};
    if (s->n_swapped == 0) {
        int32_t admitted = 0;
        pb_status st = pb_sched_admit_waiting(s, &r, &admitted);
        if (st != PB_OK) return st;
        if (admitted > 0) {   /* prompt-only step */
            if (r.padded) pb_batch_set_padded(s->batch, max_paddings);
            return PB_OK;
        }
    }
    pb_status st = pb_sched_decode_running(s, pb_victim_latest, NULL);
    if (st == PB_OK && s->n_preempted == 0) st = pb_sched_swap_in_fcfs(s);
    return st;
}

pb_status pb_sched_vllm_v1_step(pb_sched *s) {
    int64_t budget = s->p->max_num_batched_tokens;
    pb_admit_rule r = {.token_budget = budget, .chunk = (int32_t)PB_MIN(budget, INT32_MAX)};
    pb_status st = pb_sched_decode_running(s, pb_victim_latest, NULL);
    if (st == PB_OK) st = pb_sched_continue_prefills(s, budget);
    if (st == PB_OK && s->n_preempted == 0) st = pb_sched_admit_waiting(s, &r, NULL);
    return st;
}

/* Held heads: the swapped queue's head (if any) cannot swap in -- LATER, or over the
   sequence budget -- and, with nothing swapped, the waiting head (if any) cannot be
   admitted -- LATER, or over the sequence budget.  Both stay so while free blocks
   only shrink and the running set is the same; a NEVER head is not held (a step
   would reject it).  The vLLM steps then decode the running groups only, in either
   step mode: that is their pb_policy_i.steady answer. */
static bool held(const pb_sched *s, const pb_group *g, pb_alloc_status a) {
    return a == PB_ALLOC_LATER ||
           (a == PB_ALLOC_OK && s->running_seqs + PB_MAX(g->n_seqs, g->max_seqs) > s->p->max_num_seqs);
}

static bool vllm_steady(pb_policy *p, pb_sched *s) {
    (void)p;
    if (s->p->step_mode == PB_STEP_CHUNKED) return false;   /* V1's steps: no steady claim */
    pb_group *g = s->swp_head;
    if (g) return held(s, g, pb_sched_can_swap_in(s, g));
    g = pb_sched_waiting_peek(s);
    return !g || held(s, g, pb_sched_admit_status(s, g, false));
}

/* After a replayed step's preemptions: mixed steps go on to swap in unless a group
   was swapped out, then admit while nothing is swapped -- nothing more when a group
   was swapped out or the heads are held; alternating steps do nothing more. */
static bool steady_preempted(pb_policy *p, pb_sched *s, pb_step_mode mode) {
    return mode == PB_STEP_ALTERNATE || s->n_swapped_out_now > 0 || vllm_steady(p, s);
}
static bool v01_preempted(pb_policy *p, pb_sched *s) { return steady_preempted(p, s, PB_STEP_MIXED); }
static bool v02_preempted(pb_policy *p, pb_sched *s) { return steady_preempted(p, s, PB_STEP_ALTERNATE); }
static bool engine_preempted(pb_policy *p, pb_sched *s) { return steady_preempted(p, s, s->p->step_mode); }

/* The mixed step decodes first and its later blocks skip the decoded groups; the
   alternating one may be prompt-only. */
static bool v01_decodes_first(pb_policy *p, pb_sched *s) {
    (void)p, (void)s;
    return true;
}
static bool engine_decodes_first(pb_policy *p, pb_sched *s) {
    (void)p;
    return s->p->step_mode == PB_STEP_MIXED;
}

const pb_policy_steady_i pb_vllm_steady_v01 = {vllm_steady, v01_preempted, v01_decodes_first};
const pb_policy_steady_i pb_vllm_steady_v02 = {vllm_steady, v02_preempted, NULL};
const pb_policy_steady_i pb_vllm_steady_engine = {vllm_steady, engine_preempted, engine_decodes_first};

pb_status pb_sched_vllm_step(pb_sched *s) {
    switch (s->p->step_mode) {
    case PB_STEP_ALTERNATE: return pb_sched_vllm_v02_step(s, s->p->max_paddings);
    case PB_STEP_CHUNKED: return pb_sched_vllm_v1_step(s);
    case PB_STEP_MIXED: break;
    }
    return pb_sched_vllm_v01_step(s);
}
