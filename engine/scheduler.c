/* scheduler.c -- the queues and the pb_sched_* actions of policy.h.  The building
 * blocks of a step and the vLLM step are in sched_step.c.
 *
 * A prefill is scheduled from n_computed (n_cached at admission) for at most the
 * caller's max_tokens tokens; the batch entry samples only when it completes the
 * sequence (context_len == len).  A group preempted in its prefill phase is always
 * recomputed: it has no token yet and a swapped group resumes by decoding. */
#include "scheduler.h"

#include <stdlib.h>
#include <string.h>

#include "kv_manager.h"

/* ---- mode names ---- */

const char *pb_preempt_mode_str(pb_preempt_mode m) {
    switch (m) {
    case PB_PREEMPT_AUTO: return "auto";
    case PB_PREEMPT_RECOMPUTE: return "recompute";
    case PB_PREEMPT_SWAP: return "swap";
    }
    return "?";
}

bool pb_preempt_mode_parse(const char *s, pb_preempt_mode *out) {
    if (!s) return false;
    if (!strcmp(s, "auto")) *out = PB_PREEMPT_AUTO;
    else if (!strcmp(s, "recompute")) *out = PB_PREEMPT_RECOMPUTE;
    else if (!strcmp(s, "swap")) *out = PB_PREEMPT_SWAP;
    else return false;
    return true;
}

const char *pb_step_mode_str(pb_step_mode m) {
    return m == PB_STEP_ALTERNATE ? "alternate" : m == PB_STEP_CHUNKED ? "chunked" : "mixed";
}

bool pb_step_mode_parse(const char *s, pb_step_mode *out) {
    if (!s) return false;
    if (!strcmp(s, "mixed") || !strcmp(s, "v0.1")) *out = PB_STEP_MIXED;
    else if (!strcmp(s, "alternate") || !strcmp(s, "v0.2")) *out = PB_STEP_ALTERNATE;
    else if (!strcmp(s, "chunked") || !strcmp(s, "v1")) *out = PB_STEP_CHUNKED;
    else return false;
    return true;
}

/* ---- the lists ---- */

static inline bool arrival_before(const pb_group *a, const pb_group *b) {
    if (a->arrival_s != b->arrival_s) return a->arrival_s < b->arrival_s;
    return a->id < b->id;
}

static void list_insert(pb_group **head, pb_group **tail, pb_group *g) {
    pb_group *after = *tail;
    while (after && arrival_before(g, after)) after = after->prev;
    g->prev = after;
    g->next = after ? after->next : *head;
    if (g->next) g->next->prev = g; else *tail = g;
    if (after) after->next = g; else *head = g;
}

static void list_remove(pb_group **head, pb_group **tail, pb_group *g) {
    if (g->prev) g->prev->next = g->next; else *head = g->next;
    if (g->next) g->next->prev = g->prev; else *tail = g->prev;
    g->prev = g->next = NULL;
}

static void running_add(pb_sched *s, pb_group *g) {
    list_insert(&s->run_head, &s->run_tail, g);
    s->n_running++;
    s->running_seqs += PB_MAX(g->n_seqs, g->max_seqs);
    g->state = PB_GROUP_RUNNING;
}

void pb_sched_running_remove(pb_sched *s, pb_group *g) {
    PB_ASSERT(g->state == PB_GROUP_RUNNING);
    list_remove(&s->run_head, &s->run_tail, g);
    s->n_running--;
    s->running_seqs -= PB_MAX(g->n_seqs, g->max_seqs);
}

void pb_sched_enqueue_waiting(pb_sched *s, pb_group *g) {
    g->wait_key = s->policy->iface->waiting_key ? s->policy->iface->waiting_key(s->policy, g)
                                                : g->arrival_s;
    g->state = PB_GROUP_WAITING;
    pb_waitq_push(&s->waiting, g);
}

/* ---- lifecycle ---- */

void pb_sched_init(pb_sched *s, const pb_engine_params *p, pb_kv_manager *kv, pb_policy *policy,
                   pb_batch_builder *batch, pb_groups *groups) {
    memset(s, 0, sizeof *s);
    s->p = p;
    s->kv = kv;
    s->policy = policy;
    s->batch = batch;
    s->groups = groups;
}

void pb_sched_free(pb_sched *s) { pb_waitq_free(&s->waiting); }

void pb_sched_begin_run(pb_sched *s, pb_metrics *m) {
    s->metrics = m;
    s->now = 0;
    s->step = 0;
    s->run_head = s->run_tail = s->swp_head = s->swp_tail = NULL;
    s->n_running = s->running_seqs = s->n_swapped = 0;
    s->waiting.n = 0;   /* empty (waitq.h) */
    s->n_preempted = s->n_swapped_out_now = s->n_swap_in_groups = 0;
    s->n_done = 0;
}

/* g finished or was rejected at clock t: the policy and the arrival source told,
   recycled after this step. */
static void group_done(pb_sched *s, pb_group *g, double t) {
    s->n_done++;
    if (s->policy->iface->on_group_done) s->policy->iface->on_group_done(s->policy, s, g);
    if (s->p->source && s->p->source->done) s->p->source->done(s->p->source->user, g, t);
    pb_groups_done(s->groups, g);
}

void pb_sched_finish(pb_sched *s, pb_group *g, double now) {
    if (s->p->on_finish) s->p->on_finish(s->p->on_finish_user, g);
    pb_sched_running_remove(s, g);
    pb_groups_release(s->groups, g, s->kv);
    g->state = PB_GROUP_FINISHED;
    g->finish_s = now;
    pb_req_metrics *r = pb_metrics_req(s->metrics, g->id);
    r->finished = true;
    r->finish_s = now;
    group_done(s, g, now);
}

/* ---- what a policy reads ---- */

double pb_sched_now(const pb_sched *s) { return s->now; }
int64_t pb_sched_step(const pb_sched *s) { return s->step; }
pb_kv_manager *pb_sched_kv(pb_sched *s) { return s->kv; }
const pb_engine_params *pb_sched_params(const pb_sched *s) { return s->p; }
pb_group *pb_sched_running_head(pb_sched *s) { return s->run_head; }
pb_group *pb_sched_running_tail(pb_sched *s) { return s->run_tail; }
int32_t pb_sched_n_running(const pb_sched *s) { return s->n_running; }
int32_t pb_sched_running_seqs(const pb_sched *s) { return s->running_seqs; }
pb_group *pb_sched_swapped_head(pb_sched *s) { return s->swp_head; }
pb_group *pb_sched_swapped_tail(pb_sched *s) { return s->swp_tail; }
int32_t pb_sched_n_swapped(const pb_sched *s) { return s->n_swapped; }
pb_group *pb_sched_waiting_peek(pb_sched *s) { return pb_waitq_peek(&s->waiting); }
int32_t pb_sched_n_waiting(const pb_sched *s) { return s->waiting.n; }
int64_t pb_sched_batch_tokens(const pb_sched *s) { return pb_batch_tokens(s->batch); }
int32_t pb_sched_batch_prefill_tokens(const pb_sched *s) { return (int32_t)s->batch->b.n_prefill_tokens; }
int32_t pb_sched_batch_groups(const pb_sched *s) { return pb_batch_groups(s->batch); }
int32_t pb_sched_n_preempted(const pb_sched *s) { return s->n_preempted; }
int32_t pb_sched_n_swapped_out(const pb_sched *s) { return s->n_swapped_out_now; }
bool pb_sched_preempted_this_step(const pb_sched *s, const pb_group *g) {
    return g->preempted_step == s->step;
}

/* ---- actions ---- */

pb_alloc_status pb_sched_can_admit(pb_sched *s, const pb_group *g) {
    return pb_sched_admit_status(s, g, false);
}

pb_alloc_status pb_sched_admit_status(pb_sched *s, const pb_group *g, bool chunked) {
    PB_ASSERT(g->state == PB_GROUP_WAITING);
    if (g->prompt_len > s->p->max_model_len || g->beam_width > PB_MAX_TOP / 2) return PB_ALLOC_NEVER;
    if (!chunked && g->n_generated == 0 && g->prompt_len > s->p->max_num_batched_tokens)
        return PB_ALLOC_NEVER;
    /* more sequences (n samples, beam width) than a step may run: never, in every
       policy (vLLM would otherwise wait for it forever at the head of the queue) */
    if (g->max_seqs > s->p->max_num_seqs) return PB_ALLOC_NEVER;
    return pb_kv_can_allocate(s->kv, g);
}

pb_status pb_sched_admit(pb_sched *s, pb_group *g, int32_t max_tokens) {
    PB_ASSERT(g->state == PB_GROUP_WAITING && max_tokens >= 1 && (g->n_seqs == 1 || max_tokens >= g->len));
    pb_pair_vec *copies = &s->batch->copies;
    int32_t nc0 = copies->n;
    pb_status st = pb_kv_allocate(s->kv, g, copies);
    if (st != PB_OK) {
        copies->n = nc0;
        return st;
    }
    pb_waitq_remove(&s->waiting, g);
    running_add(s, g);
    g->prefill = true;
    g->admitted_step = s->step;
    for (int32_t i = 0; i < g->n_seqs; i++) g->seqs[i]->n_computed = g->seqs[i]->n_cached;
    return pb_sched_prefill(s, g, max_tokens);
}

pb_status pb_sched_prefill(pb_sched *s, pb_group *g, int32_t max_tokens) {
    PB_ASSERT(g->state == PB_GROUP_RUNNING && g->prefill && !pb_sched_in_batch(g));
    pb_batch_add_prefill(s->batch, g, max_tokens);
    return PB_OK;
}

/* g out of its queue, its sequences freed (KV first), REJECTED, done; its metrics row
   rejected, or aborted when its client took it out. */
static void group_drop(pb_sched *s, pb_group *g, bool aborted) {
    if (g->state == PB_GROUP_WAITING) {
        pb_waitq_remove(&s->waiting, g);
    } else if (g->state == PB_GROUP_SWAPPED) {
        list_remove(&s->swp_head, &s->swp_tail, g);
        s->n_swapped--;
    } else {
        PB_ASSERT(g->state == PB_GROUP_RUNNING && !g->in_batch);
        pb_sched_running_remove(s, g);
    }
    pb_groups_release(s->groups, g, s->kv);
    g->state = PB_GROUP_REJECTED;
    pb_req_metrics *r = pb_metrics_req(s->metrics, g->id);
    if (aborted) r->aborted = true;
    else r->rejected = true;
    group_done(s, g, s->now);
}

void pb_sched_abort(pb_sched *s, pb_group *g) { group_drop(s, g, true); }

void pb_sched_reject(pb_sched *s, pb_group *g) {
    PB_ASSERT(g->state == PB_GROUP_WAITING || g->state == PB_GROUP_SWAPPED);
    group_drop(s, g, false);
    if (s->p->on_progress) s->p->on_progress(s->p->on_progress_user, g);
    pb_log_debug("request %d rejected (prompt %d tokens, len %d)", g->id, g->prompt_len, g->len);
}

bool pb_sched_can_decode(pb_sched *s, const pb_group *g) {
    PB_ASSERT(g->state == PB_GROUP_RUNNING);
    return pb_kv_can_append(s->kv, g);
}

pb_status pb_sched_decode(pb_sched *s, pb_group *g) {
    PB_ASSERT(g->state == PB_GROUP_RUNNING && !g->prefill);
    for (int32_t i = 0; i < g->n_seqs; i++) {
        pb_seq *q = g->seqs[i];
        PB_ASSERT(q->batch_idx < 0 && q->kv_len == q->len - 1);
        pb_status st = pb_kv_append(s->kv, q, &s->batch->copies);
        if (st != PB_OK) return st;
    }
    pb_sched_decoded(s, g);
    return PB_OK;
}

void pb_sched_decoded(pb_sched *s, pb_group *g) {
    PB_ASSERT(g->state == PB_GROUP_RUNNING && !g->prefill && !g->in_batch);
    pb_batch_add_decode(s->batch, g);
}

/* g's swap map moved `moved` pairs (out or in): its counters and its request's. */
static void count_swap(pb_sched *s, pb_group *g, int32_t moved) {
    pb_req_metrics *r = pb_metrics_req(s->metrics, g->id);
    g->swap_blocks += moved;
    r->swap_blocks += moved;
    r->swap_bytes += (double)moved * s->kv->swap_unit_tokens * s->p->kv_bytes_per_token;
}

pb_preempt_mode pb_sched_preempt(pb_sched *s, pb_group *g, pb_preempt_mode mode) {
    PB_ASSERT(g->state == PB_GROUP_RUNNING);
    for (int32_t i = 0; i < g->n_seqs; i++) PB_ASSERT(g->seqs[i]->batch_idx < 0);
    if (mode == PB_PREEMPT_AUTO) mode = g->max_seqs > 1 ? PB_PREEMPT_SWAP : PB_PREEMPT_RECOMPUTE;
    if (mode == PB_PREEMPT_SWAP && (g->prefill || !pb_kv_can_swap_out(s->kv, g))) mode = PB_PREEMPT_RECOMPUTE;
    pb_sched_running_remove(s, g);
    if (mode == PB_PREEMPT_SWAP) {
        pb_pair_vec *map = &s->batch->swap_out;
        int32_t n0 = map->n;
        pb_status st = pb_kv_swap_out(s->kv, g, map);
        PB_ASSERT(st == PB_OK);
        (void)st;
        count_swap(s, g, map->n - n0);
        g->state = PB_GROUP_SWAPPED;
        list_insert(&s->swp_head, &s->swp_tail, g);
        s->n_swapped++;
        g->n_swap_out++;
        pb_metrics_req(s->metrics, g->id)->n_swap++;
        s->n_swapped_out_now++;
    } else {
        for (int32_t i = 0; i < g->n_seqs; i++) {
            pb_kv_free(s->kv, g->seqs[i]);
            g->seqs[i]->n_cached = g->seqs[i]->n_computed = 0;
        }
        g->prefill = false;
        g->n_recompute++;
        pb_metrics_req(s->metrics, g->id)->n_recompute++;
        pb_sched_enqueue_waiting(s, g);
    }
    g->preempted_step = s->step;
    s->n_preempted++;
    return mode;
}

pb_alloc_status pb_sched_can_swap_in(pb_sched *s, const pb_group *g) {
    PB_ASSERT(g->state == PB_GROUP_SWAPPED);
    return pb_kv_can_swap_in(s->kv, g);
}

pb_status pb_sched_swap_in(pb_sched *s, pb_group *g) {
    PB_ASSERT(g->state == PB_GROUP_SWAPPED);
    pb_pair_vec *map = &s->batch->swap_in;
    int32_t n0 = map->n;
    pb_status st = pb_kv_swap_in(s->kv, g, map);
    if (st != PB_OK) return st;
    count_swap(s, g, map->n - n0);
    list_remove(&s->swp_head, &s->swp_tail, g);
    s->n_swapped--;
    running_add(s, g);
    g->admitted_step = s->step;
    s->n_swap_in_groups++;
    return pb_sched_decode(s, g);
}

/* ---- invariants ---- */

pb_status pb_sched_check(const pb_sched *s) {
    pb_status st = pb_waitq_check(&s->waiting);
    if (st != PB_OK) return st;
    int32_t n = 0, seqs = 0;
    for (const pb_group *g = s->run_head; g; g = g->next, n++) {
        if (g->state != PB_GROUP_RUNNING || (g->next && arrival_before(g->next, g)) ||
            (g->next && g->next->prev != g)) {
            pb_log_error("sched: running list broken at group %d", g->id);
            return PB_ERR_INVALID;
        }
        seqs += PB_MAX(g->n_seqs, g->max_seqs);
    }
    if (n != s->n_running || seqs != s->running_seqs) {
        pb_log_error("sched: running count %d/%d seqs %d/%d", n, s->n_running, seqs, s->running_seqs);
        return PB_ERR_INVALID;
    }
    n = 0;
    for (const pb_group *g = s->swp_head; g; g = g->next, n++)
        if (g->state != PB_GROUP_SWAPPED || (g->next && arrival_before(g->next, g)) ||
            (g->next && g->next->prev != g)) {
            pb_log_error("sched: swapped list broken at group %d (%s)", g->id, pb_group_state_str(g->state));
            return PB_ERR_INVALID;
        }
    if (n != s->n_swapped) {
        pb_log_error("sched: swapped count %d/%d", n, s->n_swapped);
        return PB_ERR_INVALID;
    }
    return PB_OK;
}
