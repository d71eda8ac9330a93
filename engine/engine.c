/* engine.c -- the engine loop (see engine.h). */
#include "engine.h"

#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "beam.h"
#include "scheduler.h"
#include "vllm_version.h"

struct pb_engine {
    pb_sched s;
};

void pb_engine_params_default(pb_engine_params *p) {
    memset(p, 0, sizeof *p);
    pb_vllm_knobs k;
    pb_vllm_knobs_default(PB_VLLM_V01, 2048, &k);
    p->max_num_batched_tokens = k.max_num_batched_tokens;
    p->max_num_seqs = k.max_num_seqs;
    p->max_model_len = 2048;
    p->preemption = PB_PREEMPT_AUTO;
    p->step_mode = k.step_mode;
    p->max_paddings = k.max_paddings;
    p->seed = 0;
    p->kv_bytes_per_token = 0;
    p->store_tokens = false;
    p->vocab_size = 32000;
    p->check_every_step = false;
    p->max_clock_s = 0;
    p->max_steps = 0;
    p->fast_forward = true;
}

pb_status pb_engine_create(const pb_engine_params *p, pb_kv_manager *kv, pb_policy *policy,
                           pb_executor *ex, pb_engine **out) {
    *out = NULL;
    if (!p || !kv || !policy || !ex) return PB_ERR_INVALID;
    if (p->max_num_batched_tokens < 1 || p->max_num_seqs < 1 || p->max_model_len < 1 ||
        p->vocab_size < 1 || p->kv_bytes_per_token < 0 || p->max_paddings < -1) {
        pb_log_error("engine: invalid parameters (budgets, max_model_len and vocab_size must be >= 1, "
                     "max_paddings >= -1)");
        return PB_ERR_INVALID;
    }
    pb_engine *e = pb_xcalloc(1, sizeof *e);
    e->s.p = *p;
    e->s.kv = kv;
    e->s.policy = policy;
    e->s.ex = ex;
    *out = e;
    return PB_OK;
}

/* ---- group storage: a group per arrived request, recycled after it is done ---- */

static void ptr_push(pb_group ***v, int32_t *n, int32_t *cap, pb_group *g) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *v = pb_xrealloc(*v, (size_t)*cap * sizeof **v);
    }
    (*v)[(*n)++] = g;
}

/* The group of request `id`, arrived now: a recycled struct when there is one. */
static pb_group *group_arrive(pb_sched *s, int64_t id) {
    pb_group *g;
    if (s->n_free_groups > 0) {
        g = s->free_groups[--s->n_free_groups];
        pb_group_reuse(g, (int32_t)id, &s->reqs[id], s->p.max_model_len, s->p.seed);
    } else {
        g = pb_xmalloc(sizeof *g);
        pb_group_init(g, (int32_t)id, &s->reqs[id], s->p.max_model_len, s->p.seed);
    }
    g->live_idx = s->n_live;
    ptr_push(&s->live, &s->n_live, &s->cap_live, g);
    return g;
}

static void groups_recycle(pb_sched *s) {
    for (int32_t i = 0; i < s->n_dead; i++) {
        pb_group *g = s->dead[i];
        pb_group *last = s->live[--s->n_live];
        s->live[g->live_idx] = last;
        last->live_idx = g->live_idx;
        ptr_push(&s->free_groups, &s->n_free_groups, &s->cap_free_groups, g);
    }
    s->n_recycled += s->n_dead;
    s->n_dead = 0;
}

static void engine_clear_run(pb_sched *s) {
    groups_recycle(s);
    for (int32_t i = 0; i < s->n_live; i++) ptr_push(&s->free_groups, &s->n_free_groups, &s->cap_free_groups, s->live[i]);
    for (int32_t i = 0; i < s->n_free_groups; i++) {
        pb_group_release(s->free_groups[i]);
        free(s->free_groups[i]);
    }
    free(s->live);
    free(s->dead);
    free(s->free_groups);
    s->live = s->dead = s->free_groups = NULL;
    s->n_live = s->cap_live = s->n_dead = s->cap_dead = s->n_free_groups = s->cap_free_groups = 0;
    s->reqs = NULL;
    s->n_requests = 0;
    pb_seq_pool_destroy(s->pool);
    s->pool = NULL;
    s->running_run = false;
}

void pb_engine_destroy(pb_engine *e) {
    if (!e) return;
    if (e->s.running_run) pb_engine_end(e);
    pb_sched_free(&e->s);
    free(e);
}

double pb_engine_now(const pb_engine *e) { return e->s.now; }
int64_t pb_engine_steps(const pb_engine *e) { return e->s.step; }
int64_t pb_engine_fast_forwarded(const pb_engine *e) { return e->s.ff_steps; }
int64_t pb_engine_fast_mixed(const pb_engine *e) { return e->s.ff_mixed; }
const pb_group *pb_engine_group(const pb_engine *e, int64_t id) {
    for (int32_t i = 0; i < e->s.n_live; i++)
        if (e->s.live[i]->id == id) return e->s.live[i];
    return NULL;
}
const pb_batch *pb_engine_last_batch(const pb_engine *e) { return &e->s.batch; }

pb_status pb_engine_begin(pb_engine *e, const pb_trace *t, pb_metrics *m) {
    pb_sched *s = &e->s;
    if (s->running_run) return PB_ERR_INVALID;
    if (!t || !m || t->n < 0 || (t->n > 0 && !t->reqs) || t->n > INT32_MAX) return PB_ERR_INVALID;
    for (int64_t i = 0; i < t->n; i++) {
        const pb_request *r = &t->reqs[i];
        if (!isfinite(r->arrival_s) || r->arrival_s < 0 || r->prompt_len < 1 || r->output_len < 1 ||
            r->n < 1 || r->beam_width < 1 || (i > 0 && r->arrival_s < t->reqs[i - 1].arrival_s)) {
            pb_log_error("engine: trace row %lld invalid (arrival %g, prompt %d, output %d, n %d, "
                         "beam %d; arrivals must be sorted)", (long long)i, r->arrival_s,
                         r->prompt_len, r->output_len, r->n, r->beam_width);
            return PB_ERR_INVALID;
        }
    }
    s->metrics = m;
    s->reqs = t->reqs;
    s->n_requests = t->n;
    s->n_recycled = 0;
    s->pool = pb_seq_pool_create(s->p.store_tokens);
    s->next_arrival = 0;
    s->n_done = 0;
    s->now = 0;
    s->step = 0;
    s->run_head = s->run_tail = s->swp_head = s->swp_tail = NULL;
    s->steady = s->replayed = false;
    s->ff_steps = s->ff_mixed = 0;
    s->n_running = s->running_seqs = s->n_swapped = s->n_waiting = 0;
    s->n_heap = s->dq_head = s->dq_len = s->dq_live = 0;   /* an empty waiting queue */
    memset(&s->batch, 0, sizeof s->batch);
    pb_metrics_begin(m, t, s->p.max_model_len);   /* rows made as requests are touched */
    s->running_run = true;
    return PB_OK;
}

/* ---- post-processing ---- */

static void finish_group(pb_sched *s, pb_group *g) {
    if (s->p.on_finish) s->p.on_finish(s->p.on_finish_user, g);
    pb_sched_running_remove(s, g);
    pb_sched_release_group(s, g);
    g->state = PB_GROUP_FINISHED;
    g->finish_s = s->now;
    pb_req_metrics *r = pb_metrics_req(s->metrics, g->id);
    r->finished = true;
    r->finish_s = s->now;
    s->n_done++;
    if (s->policy->iface->on_group_done) s->policy->iface->on_group_done(s->policy, s, g);
    pb_sched_group_done(s, g);
}

static const pb_candidates *seq_cands(pb_sched *s, pb_seq *q, bool has_tokens, int32_t n_top,
                                      pb_candidates *tmp) {
    if (has_tokens && q->batch_idx >= 0 && s->cand[q->batch_idx].n > 0) return &s->cand[q->batch_idx];
    pb_beam_synth_candidates(&q->group->rng, n_top, s->p.vocab_size, tmp);
    return tmp;
}

static pb_status beam_step(pb_sched *s, pb_group *g, bool has_tokens) {
    int32_t k = g->beam_width, nb = g->n_seqs;
    PB_ASSERT(nb >= 1 && nb <= PB_MAX_TOP / 2 && k <= PB_MAX_TOP / 2);
    pb_candidates cands[PB_MAX_TOP / 2];
    double cum[PB_MAX_TOP / 2];
    pb_seq *par[PB_MAX_TOP / 2] = {NULL};
    for (int32_t i = 0; i < nb; i++) {
        par[i] = g->seqs[i];
        cum[i] = par[i]->cum_logprob;
    }
    pb_beam_choice ch[PB_MAX_TOP / 2];
    int32_t nc;
    if (!has_tokens) {   /* all synthetic: drawn best-first in one stream (same law of choices; beam.h) */
        nc = pb_beam_synth_select(&g->rng, cum, NULL, nb, 2 * k, s->p.store_tokens ? s->p.vocab_size : 0, k, ch);
    } else {
        for (int32_t i = 0; i < nb; i++) {
            const pb_candidates *c = seq_cands(s, par[i], has_tokens, 2 * k, &cands[i]);
            if (c != &cands[i]) cands[i] = *c;
        }
        nc = pb_beam_select(cum, cands, nb, k, ch);
    }
    PB_ASSERT(nc >= 1);
    /* A choice continues its parent (the first choice of it) or is a child of it.
       Parents nobody chose die and free their blocks (paper Fig. 9); a dead parent's
       struct is reused for a child (refork: only the blocks past what the two share
       change hands) when the manager can, the rest are forked, then freed.  The
       order afterwards is pb_beam_plan's. */
    pb_beam_plan pl;
    pb_beam_plan_make(ch, nc, nb, &pl);
    pb_seq *dst[PB_MAX_TOP / 2] = {NULL};
    for (int32_t c = 0; c < nc; c++) dst[c] = par[ch[c].parent];   /* kids' replaced below */
    int32_t n_pairs = s->kv->iface->refork ? PB_MIN(pl.n_kids, pl.n_dead) : 0;
    for (int32_t j = 0; j < pl.n_kids; j++) {   /* children in choice order: their ids */
        pb_seq *p = par[ch[pl.kid[j]].parent], *child;
        pb_status st;
        if (j < n_pairs) {
            child = par[pl.dead[j]];
            st = pb_kv_refork(s->kv, p, child);
            pb_seq_reclone(s->pool, child, p);
        } else {
            child = pb_seq_clone(s->pool, p);
            st = pb_kv_fork(s->kv, p, child);
        }
        if (st != PB_OK) return st;
        dst[pl.kid[j]] = child;
    }
    for (int32_t d = n_pairs; d < pl.n_dead; d++) {
        par[pl.dead[d]]->batch_idx = -1;
        pb_kv_free(s->kv, par[pl.dead[d]]);
        pb_seq_delete(s->pool, par[pl.dead[d]]);
    }
    pb_seq *order[PB_MAX_TOP / 2];
    for (int32_t e = 0; e < nc; e++) order[e] = dst[pl.at[e]];
    pb_group_set_order(g, order);
    for (int32_t c = 0; c < nc; c++) {
        if (s->p.store_tokens) pb_seq_append_token(s->pool, dst[c], ch[c].token, ch[c].logprob);
        else pb_seq_advance(dst[c], ch[c].logprob);   /* the pool keeps no ids */
        dst[c]->cum_logprob = ch[c].score;   /* cum + logprob; the synthetic model's unrounded score */
    }
    return PB_OK;
}

static pb_status parallel_fork(pb_sched *s, pb_group *g, bool has_tokens) {
    pb_seq *p = g->seqs[0];
    pb_candidates tmp;
    const pb_candidates *c = seq_cands(s, p, has_tokens, PB_MIN(g->n, PB_MAX_TOP), &tmp);
    pb_candidates cc = *c;
    for (int32_t i = 1; i < g->n; i++) {
        pb_seq *child = pb_seq_clone(s->pool, p);
        pb_status st = pb_kv_fork(s->kv, p, child);
        if (st != PB_OK) return st;
        int32_t j = i % cc.n;
        pb_seq_append_token(s->pool, child, cc.token[j], cc.logprob[j]);
    }
    pb_seq_append_token(s->pool, p, cc.token[0], cc.logprob[0]);
    return PB_OK;
}

/* g's next token(s) after a step that ran it; nothing while its prefill is partial
   (only the completing chunk samples: first token, parallel forks). */
static pb_status group_token(pb_sched *s, pb_group *g, bool has_tokens) {
    g->in_batch = false;
    if (g->prefill && g->seqs[0]->n_computed < g->len) {   /* a partial prefill */
        for (int32_t i = 0; i < g->n_seqs; i++) g->seqs[i]->batch_idx = -1;
        return PB_OK;
    }
    g->prefill = false;
    bool first = g->n_generated == 0;
    pb_status st = PB_OK;
    if (g->beam_width > 1) {
        st = beam_step(s, g, has_tokens);
    } else if (first && g->n > 1 && g->n_seqs == 1) {
        st = parallel_fork(s, g, has_tokens);
    } else {
        for (int32_t i = 0; i < g->n_seqs; i++) {
            pb_seq *q = g->seqs[i];
            int32_t tok = 0;
            float lp = 0;
            if (has_tokens && q->batch_idx >= 0 && s->cand[q->batch_idx].n > 0) {
                tok = s->cand[q->batch_idx].token[0];
                lp = s->cand[q->batch_idx].logprob[0];
            } else if (s->p.store_tokens) {
                tok = (int32_t)pb_rng_below(&g->rng, (uint64_t)s->p.vocab_size);
            }
            if (s->p.store_tokens) pb_seq_append_token(s->pool, q, tok, lp);
            else pb_seq_advance(q, lp);   /* the pool keeps no ids */
            q->batch_idx = -1;
        }
    }
    if (st != PB_OK) return st;
    if (g->beam_width > 1 || first)   /* forks: children, moved beams */
        for (int32_t i = 0; i < g->n_seqs; i++) g->seqs[i]->batch_idx = -1;
    g->n_generated++;
    g->len++;
    pb_metrics_token(s->metrics, g->last_token_s, s->now);
    g->last_token_s = s->now;
    if (first) {
        g->first_token_s = s->now;
        pb_metrics_req(s->metrics, g->id)->first_token_s = s->now;
    }
    if (g->n_generated >= g->output_len) finish_group(s, g);
    return PB_OK;
}

/* ---- one step: schedule, execute, postprocess ---- */

static bool run_over(const pb_sched *s) {
    return s->n_done == s->n_requests || (s->p.max_steps > 0 && s->step >= s->p.max_steps) ||
           (s->p.max_clock_s > 0 && s->now > s->p.max_clock_s);
}

static pb_status policy_schedule(pb_sched *s, int64_t done0, bool *ready);
static pb_status step_run(pb_engine *e, bool ready);

/* Arrivals, then the policy's schedule.  *ready: a batch (or memory operations) to
   run; otherwise the clock jumped to the next arrival, or the state moved without
   anything to execute (a step of preemptions or rejections only). */
static pb_status schedule(pb_sched *s, bool *ready) {
    *ready = false;
    groups_recycle(s);
    while (s->next_arrival < s->n_requests && s->reqs[s->next_arrival].arrival_s <= s->now) {
        pb_group *g = group_arrive(s, s->next_arrival++);
        pb_sched_enqueue_waiting(s, g);
    }
    if (s->n_waiting + s->n_running + s->n_swapped == 0) {   /* idle: jump */
        PB_ASSERT(s->next_arrival < s->n_requests);
        s->now = s->reqs[s->next_arrival].arrival_s;
        return PB_OK;
    }
    pb_sched_begin_step(s);
    return policy_schedule(s, s->n_done, ready);
}

/* The policy's schedule on the step begun (pb_sched_begin_step; done0: the groups
   done before it), then *ready; a step of preemptions or rejections only counts
   here, a step with nothing to do moves the clock to the next arrival. */
static pb_status policy_schedule(pb_sched *s, int64_t done0, bool *ready) {
    *ready = false;
    pb_status st = s->policy->iface->schedule(s->policy, s);
    if (st != PB_OK) return st;
    /* fork copies of a contiguous manager, queued by this step's forks and appends */
    s->batch.n_slot_copies = pb_kv_take_slot_copies(s->kv, &s->batch.slot_copies);
    *ready = s->n_bseq > 0 || s->copies.n > 0 || s->swap_in.n > 0 || s->swap_out.n > 0 ||
             s->batch.n_slot_copies > 0;
    if (*ready) return PB_OK;
    if (s->n_preempted > 0 || s->n_done != done0) {   /* state moved, nothing to run */
        s->step++;
        return PB_OK;
    }
    if (s->next_arrival < s->n_requests) {
        s->now = PB_MAX(s->now, s->reqs[s->next_arrival].arrival_s);
        return PB_OK;
    }
    pb_log_error("engine: policy '%s' scheduled nothing with %d waiting, %d running, %d swapped "
                 "and no arrivals left (stalled)", s->policy->iface->name, s->n_waiting,
                 s->n_running, s->n_swapped);
    return PB_ERR_INVALID;
}

/* The scheduler's state -> the executor's batch. */
static void batch_fill(pb_sched *s) {
    if (s->ex->iface->caps & PB_EXEC_KV_LAYOUT)
        for (int32_t i = 0; i < s->n_bseq; i++) pb_kv_batch_info(s->kv, s->bseq_seq[i], &s->bseq[i]);
    pb_batch *b = &s->batch;
    b->n_seqs = s->n_bseq;
    b->seqs = s->bseq;
    b->n_prefill_tokens = s->b_prefill_tokens;
    b->n_padded_tokens = s->b_padded ? (int64_t)s->b_prefill_seqs * s->b_prefill_max_len : 0;
    b->n_decode = s->b_decode;
    b->block_size = s->kv->block_size;
    b->n_top = s->b_n_top;
    b->copies = s->copies.v;
    b->n_copies = s->copies.n;
    b->swap_in = s->swap_in.v;
    b->n_swap_in = s->swap_in.n;
    b->swap_out = s->swap_out.v;
    b->n_swap_out = s->swap_out.n;
}

/* The step's row of the timeline, as scheduled (before the executor runs). */
static void step_metrics_begin(pb_sched *s, pb_step_metrics *sm) {
    memset(sm, 0, sizeof *sm);
    sm->t_s = s->now;
    sm->n_groups = s->n_bgroups;
    sm->n_seqs = s->n_bseq;
    sm->n_prefill_seqs = s->b_prefill_seqs;
    sm->prefill_tokens = s->b_prefill_tokens;
    sm->decode_tokens = s->b_decode;
    sm->n_preempted = s->n_preempted;
    sm->n_swap_in_groups = s->n_swap_in_groups;
    sm->n_copies = s->copies.n;
    sm->n_swap_in = s->swap_in.n;
    sm->n_swap_out = s->swap_out.n;
    sm->n_running = s->n_running;
    sm->n_waiting = s->n_waiting;
    sm->n_swapped = s->n_swapped;
    pb_kv_usage_get(s->kv, &sm->mem);
}

/* Run the batch, advance the clock, record what became computed. */
/* The executor on s->batch into res: its status, or PB_ERR_INVALID when the result
   is not a latency (finite, >= 0) or has tokens it may not return. */
static pb_status run_executor(pb_sched *s, pb_candidates *cand, pb_step_result *res) {
    bool tokens = s->ex->iface->caps & PB_EXEC_TOKENS;
    memset(res, 0, sizeof *res);
    pb_status st = pb_executor_execute(s->ex, &s->batch, res, cand);
    if (st != PB_OK) {
        pb_log_error("engine: executor '%s' failed at step %lld: %s", s->ex->iface->name,
                     (long long)s->step, pb_status_str(st));
        return st;
    }
    if (!(res->latency_s >= 0) || !isfinite(res->latency_s) || (res->has_tokens && !tokens)) {
        pb_log_error("engine: executor '%s' returned latency %g%s", s->ex->iface->name, res->latency_s,
                     res->has_tokens && !tokens ? " and tokens without PB_EXEC_TOKENS" : "");
        return PB_ERR_INVALID;
    }
    return PB_OK;
}

/* After the batch ran: its sequences' KV computed up to their context (and told
   to a manager that publishes computed blocks). */
static void batch_computed(pb_sched *s) {
    for (int32_t i = 0; i < s->n_bseq; i++) s->bseq_seq[i]->n_computed = s->bseq[i].context_len;
    if (s->kv->iface->computed)
        for (int32_t i = 0; i < s->n_bseq; i++) pb_kv_computed(s->kv, s->bseq_seq[i], s->bseq[i].context_len);
}

static pb_status execute(pb_sched *s, pb_step_metrics *sm, bool *has_tokens) {
    batch_fill(s);
    step_metrics_begin(s, sm);
    bool tokens = s->ex->iface->caps & PB_EXEC_TOKENS;
    if (tokens && s->cap_cand < s->n_bseq) {
        s->cap_cand = PB_MAX(s->n_bseq, 2 * s->cap_cand);
        s->cand = pb_xrealloc(s->cand, (size_t)s->cap_cand * sizeof *s->cand);
    }
    if (tokens)
        for (int32_t i = 0; i < s->n_bseq; i++) s->cand[i].n = 0;
    pb_step_result res;
    pb_status st = run_executor(s, s->cand, &res);
    if (st != PB_OK) return st;
    s->now += res.latency_s;
    batch_computed(s);
    sm->latency_s = res.latency_s;
    sm->swap_s = res.swap_s;
    sm->copy_s = res.copy_s;
    *has_tokens = res.has_tokens;
    return PB_OK;
}

/* Next tokens of the groups whose prefill is complete or that decoded; forks,
   beam selection, finished groups; the step's metrics. */
static pb_status postprocess(pb_sched *s, bool has_tokens, const pb_step_metrics *sm) {
    for (int32_t gi = 0; gi < s->n_bgroups; gi++) {
        pb_group *g = s->bgroups[gi];
        pb_status st = group_token(s, g, has_tokens);
        if (st != PB_OK) return st;
    }
    pb_metrics_add_step(s->metrics, sm);
    return PB_OK;
}

/* ---- fast-forward: the steps that repeat a pure decode step ----
 * A pure decode step decodes every running group, one sequence each, and does nothing
 * else.  When after a step every running group has one sequence past its prefill and
 * the policy answers steady (policy.h: it would schedule such a step, and keep doing
 * so while free blocks shrink and arrivals queue behind the waiting head), the
 * following steps are replayed here until the waiting head changes (the policy must
 * look at it) or a group's last token is produced: arrivals as in schedule(), the
 * manager's replayed appends (kv_manager.h replay_*: O(1) per step but for the
 * sequences taking a block), the batch's counts and sums for the executor
 * (PB_EXEC_SUMS_ONLY: no entries), the step's metrics and its n equal inter-token
 * gaps.  A step in which a group cannot append preempts the latest groups as the
 * policy's decode does; then the policy says whether the step schedules anything
 * more (steady_preempted: if so its schedule completes the step, an ordinary one
 * from there) and, after the step, whether the heads stay held (steady).  When the
 * replay stops the groups' lengths are brought up to date and the groups whose last
 * token the last replayed step produced finish, in running order, as post-processing
 * would finish them; the next step is an ordinary one.  Bit for bit the steps
 * pb_engine_step would run (tests/test_fastfwd.c). */

/* Is fast-forward possible for this run at all? */
static bool ff_possible(const pb_sched *s) {
    unsigned caps = s->ex->iface->caps;
    return s->p.fast_forward && s->policy->iface->steady && s->kv->iface->replay_begin &&
           !s->kv->iface->computed && (caps & PB_EXEC_SUMS_ONLY) &&
           !(caps & (PB_EXEC_KV_LAYOUT | PB_EXEC_TOKENS)) && !s->p.store_tokens;
}

/* Is the next step a pure decode step (so that it and the next ones may be
   replayed)?  Every running group got a token in the step just run, ordinary
   (steady_next) or replayed (so they share the last token time), and has one
   sequence, or its beams (beam search past its first token), past its prefill, and
   the policy says it would decode them and nothing else (pb_policy_i.steady). */
static bool steady_running(pb_sched *s) {
    if (s->n_running == 0 || !ff_possible(s)) return false;
    for (const pb_group *g = s->run_head; g; g = g->next)
        if (g->prefill || (g->n_seqs != 1 && (g->n_seqs != g->beam_width || !s->kv->iface->beam_begin)))
            return false;
    return s->policy->iface->steady(s->policy, s);
}

static bool steady_next(pb_sched *s, bool has_tokens) {
    return !has_tokens && s->n_bgroups == s->n_running && steady_running(s);
}

/* The batch of a replayed step: n decodes whose contexts (the kv_len each reached)
   sum to ctx tokens and blocks blocks, no copies (kv_manager.h); seqs[] not
   filled. */
static void ff_batch(pb_sched *s, int32_t n, int64_t ctx, int64_t blocks) {
    pb_batch *b = &s->batch;
    b->n_seqs = n;
    b->seqs = s->bseq;   /* last filled by an ordinary step; PB_EXEC_SUMS_ONLY reads none */
    b->n_prefill_tokens = b->n_padded_tokens = 0;
    b->n_decode = n;
    b->block_size = s->kv->block_size;
    b->n_top = 1;
    b->copies = b->swap_in = b->swap_out = NULL;   /* a beam replay sets n_copies alone */
    b->n_copies = b->n_swap_in = b->n_swap_out = 0;
    b->slot_copies = NULL;
    b->n_slot_copies = 0;
    b->has_sums = true;
    b->sum_new = n;
    b->n_sample = n;
    b->decode_ctx = ctx;
    b->decode_blocks = blocks;
    b->prefill_pairs2 = b->prefill_cached = 0;
}

/* The replay's state: the running groups' sequences in order, the decode sums and
   the blocks the contexts start at each step (ff_phase), the last tokens' time. */
typedef struct {
    int32_t n, bs, sh;     /* groups; block size; log2(bs) when a power of two, else -1 */
    int32_t left;          /* steps before the first group's last token               */
    int64_t ctx, blocks;   /* sums over the contexts, as of the last step             */
    double last_token;     /* every group's latest token time                         */
} ff_state;

/* Add (w > 0) or remove (w < 0) |w| contexts of c tokens each (kv_len before
   replayed step k's append; c - k before step 0, maybe negative for a group that
   joined late) to the sums and to their phase's count. */
static void ff_count(pb_sched *s, ff_state *f, int32_t c, int32_t k, int32_t w) {
    int32_t bs = f->bs, base = c - k, in_block = f->sh >= 0 ? base & (bs - 1) : (base % bs + bs) % bs;
    f->ctx += (int64_t)w * c;
    f->blocks += (int64_t)w * (f->sh >= 0 ? (c + bs - 1) >> f->sh : (c + bs - 1) / bs);
    s->ff_phase[in_block ? bs - in_block : 0] += w;
}

/* An empty replay state (no contexts) for the next steps: n sequences. */
static void ff_clear(pb_sched *s, ff_state *f, int32_t n) {
    int32_t bs = s->kv->block_size;
    PB_ASSERT(bs >= 1);
    if (s->cap_ff_phase < bs) {
        s->cap_ff_phase = bs;
        s->ff_phase = pb_xrealloc(s->ff_phase, (size_t)bs * sizeof *s->ff_phase);
    }
    memset(s->ff_phase, 0, (size_t)bs * sizeof *s->ff_phase);
    *f = (ff_state){.n = n, .bs = bs, .sh = s->b_bs_shift, .left = INT32_MAX, .last_token = s->now};
}

/* Step k's batch sums from step k - 1's (as of the last step: before step 0, the
   contexts before its appends): every context one token longer, those whose kv_len
   before the append is a multiple of bs one block longer (ff_phase[k % bs]). */
static void ff_advance(pb_sched *s, ff_state *f, int32_t k) {
    f->ctx += f->n;
    f->blocks += s->ff_phase[f->sh >= 0 ? k & (f->bs - 1) : k % f->bs];
}

/* Collect the running groups and the sums of the pure decode step just run.  A
   context starts a block (ceil(c / bs) grows) at the replayed steps k where its
   kv_len before the append, c + k, is a multiple of bs: k = (bs - c % bs) % bs, then
   every bs steps, so ff_phase[k % bs] counts the contexts starting one at step k. */
static void ff_begin(pb_sched *s, ff_state *f) {
    int32_t n = s->n_running;
    if (s->cap_ff_seqs < n) {
        s->cap_ff_seqs = PB_MAX(n, 2 * s->cap_ff_seqs);
        s->ff_seqs = pb_xrealloc(s->ff_seqs, (size_t)s->cap_ff_seqs * sizeof *s->ff_seqs);
    }
    ff_clear(s, f, n);
    int32_t i = 0;
    for (pb_group *g = s->run_head; g; g = g->next) {
        pb_seq *q = g->seqs[0];
        s->ff_seqs[i++] = q;
        f->left = PB_MIN(f->left, g->output_len - g->n_generated - 1);
        ff_count(s, f, q->kv_len, 0, 1);
    }
    PB_ASSERT(i == n);
}

/* Group g up to date after k replayed steps: k tokens in each sequence (lengths,
   computed KV), the token time. */
static void group_catch_up(pb_group *g, int32_t k, double last_token) {
    for (int32_t i = 0; i < g->n_seqs; i++) {
        pb_seq *q = g->seqs[i];
        q->len += k;
        q->n_generated += k;
        q->n_computed = q->len - 1;
    }
    g->len += k;
    g->n_generated += k;
    g->last_token_s = last_token;
}

/* Sequence q of the replay (and its group) up to date after k replayed steps. */
static void ff_catch_up(const ff_state *f, pb_seq *q, int32_t k) { group_catch_up(q->group, k, f->last_token); }

/* Step k could not append every group: as the policy's decode does (policy.h
   steady), the latest groups are preempted until the rest could append (step k
   begins here: pb_sched_begin_step, for its preemption counts and swap maps). */
static void ff_preempt(pb_sched *s, ff_state *f, int32_t k, int32_t stuck) {
    pb_sched_begin_step(s);
    while (stuck < f->n) {
        int32_t last = f->n - 1;
        pb_seq *q = s->ff_seqs[last];
        pb_kv_replay_pop(s->kv);   /* q->kv_len up to date: its context before step k */
        ff_catch_up(f, q, k);
        ff_count(s, f, q->kv_len, k, -1);
        f->n--;
        pb_sched_preempt(s, q->group, s->p.preemption);
        stuck = stuck == last ? f->n : pb_kv_replay_step(s->kv);
    }
}

/* What follows a replayed step: the next one, none (an ordinary step next), or the
   policy completes this one (steady_preempted false: an ordinary step from there). */
typedef enum { FF_NEXT, FF_STOP, FF_POLICY } ff_next;

/* A replayed step's row before it runs: no counts but its n_groups groups and n_seqs
   sequences decoding; ff_execute fills the clock, the queues and the memory
   breakdown (usage() writes all of mem).  Field by field: GCC 12 -O3 makes a memset
   of the row a `rep stos`, which was a third of beam_forward's own time. */
_Static_assert(offsetof(pb_step_metrics, mem) == 96, "a field added to pb_step_metrics: set it in ff_row");
static void ff_row(pb_step_metrics *sm, int32_t n_groups, int32_t n_seqs) {
    sm->t_s = sm->latency_s = sm->swap_s = sm->copy_s = 0;
    sm->n_groups = n_groups;
    sm->n_seqs = sm->decode_tokens = n_seqs;
    sm->n_prefill_seqs = 0;
    sm->prefill_tokens = 0;
    sm->n_preempted = sm->n_swap_in_groups = 0;
    sm->n_copies = sm->n_swap_in = sm->n_swap_out = 0;
    sm->n_running = sm->n_waiting = sm->n_swapped = 0;
}

/* A replayed step's batch (ff_batch) run: sm (ff_row, and the step's memory
   operations) gets the clock, the queues and the memory breakdown; then the
   executor, the clock, the n_decoded replayed groups' tokens (all at *last_token,
   now the step's end) and the step's row. */
static pb_status ff_execute(pb_sched *s, pb_step_metrics *sm, int32_t n_decoded, double *last_token) {
    sm->t_s = s->now;
    sm->n_running = s->n_running;
    sm->n_waiting = s->n_waiting;
    sm->n_swapped = s->n_swapped;
    pb_kv_usage_get(s->kv, &sm->mem);
    pb_step_result res;
    pb_status st = run_executor(s, NULL, &res);   /* no PB_EXEC_TOKENS (ff_possible) */
    if (st != PB_OK) return st;
    s->now += res.latency_s;
    sm->latency_s = res.latency_s;
    sm->swap_s = res.swap_s;
    sm->copy_s = res.copy_s;
    pb_metrics_tokens(s->metrics, *last_token, s->now, n_decoded);
    *last_token = s->now;
    pb_metrics_add_step(s->metrics, sm);
    s->step++;
    return PB_OK;
}

/* Replayed step k: the manager's appends (and the preemptions when a group cannot
   append), the executor, the clock, the metrics. */
static pb_status ff_step(pb_sched *s, ff_state *f, int32_t k, ff_next *next) {
    *next = FF_NEXT;
    int32_t stuck = pb_kv_replay_step(s->kv);
    bool preempted = stuck < f->n;
    if (preempted) {
        ff_preempt(s, f, k, stuck);
        if (!s->policy->iface->steady_preempted(s->policy, s)) {
            *next = FF_POLICY;
            return PB_OK;
        }
        /* the step runs as it is; after it the policy looks again, unless the
           heads stay held (steady: the running groups decode again next) */
        *next = f->n > 0 && s->policy->iface->steady(s->policy, s) ? FF_NEXT : FF_STOP;
        if (f->n == 0 && s->swap_out.n == 0) {   /* nothing to run (schedule(): step++) */
            s->step++;
            return PB_OK;
        }
    }
    ff_advance(s, f, k);
    ff_batch(s, f->n, f->ctx, f->blocks);
    pb_step_metrics sm;
    ff_row(&sm, f->n, f->n);
    if (preempted) {
        s->batch.swap_out = s->swap_out.v;
        s->batch.n_swap_out = sm.n_swap_out = s->swap_out.n;
        sm.n_preempted = s->n_preempted;
    }
    return ff_execute(s, &sm, f->n, &f->last_token);
}

/* After k replayed steps: the manager's replay ends, the groups are brought up to
   date, and those whose last token the last step produced finish, in running
   order. */
static void ff_end(pb_sched *s, const ff_state *f, int32_t k) {
    pb_kv_replay_end(s->kv);
    pb_pair_vec_clear(&s->copies);   /* the pure decode step's, replayed without any */
    if (k == 0) return;
    for (int32_t i = 0; i < f->n; i++) ff_catch_up(f, s->ff_seqs[i], k);
    for (int32_t i = 0; i < f->n && k == f->left + 1; i++) {
        pb_group *g = s->ff_seqs[i]->group;
        if (g->n_generated >= g->output_len) finish_group(s, g);
    }
    s->ff_steps += k;
    s->replayed = true;
}

/* After a replay of k steps whose last step every running group decoded in (its
   groups finished, the waiting head changed or the run is over; not when a group
   could not append): may the next steps be replayed too?  As steady_next after the
   same step run by pb_engine_step -- without an ordinary step between. */
static void ff_again(pb_sched *s, int32_t k) { s->steady = k > 0 && steady_running(s); }

/* Replayed step k preempted and the policy completes it: the groups that decoded
   enter the batch, then the policy's schedule, and the step runs as an ordinary
   one. */
static pb_status ff_policy_completes(pb_engine *e, const ff_state *f, int32_t k) {
    pb_sched *s = &e->s;
    ff_end(s, f, k);   /* the survivors appended in step k: kv_len == len */
    s->replayed = false;   /* the batch is whole again: entries and sums */
    for (pb_group *g = s->run_head; g; g = g->next) pb_sched_decoded(s, g);
    bool ready = false;
    pb_status st = policy_schedule(s, s->n_done, &ready);
    return st == PB_OK ? step_run(e, ready) : st;
}

/* ---- fast-forward of beam search ----
 * The same replay when some running groups are beam-search groups (at their full
 * width, past their first token; the others single sequences): the manager keeps
 * each group's blocks as a tree of counts (kv_manager.h beam_*), the engine draws
 * each beam group's selection after the step (pb_beam_synth_advance from the
 * group's stream: exactly beam_step's pb_beam_synth_select and pb_beam_plan -- the
 * same choices, scores and beam order -- with the scores kept in pb_ff_beams until
 * the group leaves the replay) and hands the manager the beams' parents.  A step in
 * which a group cannot append is not replayed (the ordinary step preempts).  Beams
 * that die free blocks, so after a step whose selections left more blocks free than
 * when the policy last answered steady it is asked again; not steady: the replay
 * stops.  Groups whose last token a step produced leave the replay and finish there
 * (the manager frees their blocks: beam_free), and the replay goes on if the next
 * step would be replayed after it (steady_running, as steady_next asks).  An
 * arrival that changes the waiting head makes the step a mixed one (below) when
 * the policy allows: the groups it admits join the replay.  The batch's decode
 * sums come from ff_state as in the plain replay, each sequence of a group being
 * one context (a group that joined at step k0 counts from there).  At the end the
 * manager rebuilds the tables (the same sharing; block numbers, which nothing
 * observes under the cost model, may differ from the ordinary steps') and the
 * groups are brought up to date. */

/* Group i's selection after a replayed step (its beams' scores kept in b, not in
   the sequences, until it leaves the replay).  Returns the blocks freed. */
static int32_t beam_replay_select(pb_sched *s, int32_t i, pb_group *g, pb_ff_beams *b) {
    int32_t parent[PB_MAX_TOP / 2];
    pb_beam_synth_advance(&g->rng, b->cum, b->order, g->n_seqs, parent);   /* no ids (ff_possible) */
    return pb_kv_beam_select(s->kv, i, parent);
}

/* Group g, replayed k steps, up to date: its beams' scores (b), lengths, token time. */
static void beam_catch_up(pb_group *g, const pb_ff_beams *b, int32_t k, double last_token) {
    for (int32_t m = 0; m < g->n_seqs && g->beam_width > 1; m++)
        g->seqs[b->order[m]]->cum_logprob = b->cum[m];   /* pb_seq_advance's sums */
    group_catch_up(g, k, last_token);
}

/* Room for n groups in the replay's arrays (s->ff_groups moves). */
static void beam_reserve(pb_sched *s, int32_t n) {
    if (s->cap_ff_groups >= n) return;
    s->cap_ff_groups = PB_MAX(n, 2 * s->cap_ff_groups);
    s->ff_groups = pb_xrealloc(s->ff_groups, (size_t)s->cap_ff_groups * sizeof *s->ff_groups);
    s->ff_beams = pb_xrealloc(s->ff_beams, (size_t)s->cap_ff_groups * sizeof *s->ff_beams);
}

/* Group g is the replay's group i from replayed step k0 on: its beams' scores, its
   contexts in f's sums (kv_len len - 1 before step k0's appends). */
static void beam_track(pb_sched *s, ff_state *f, int32_t i, pb_group *g, int32_t k0) {
    pb_ff_beams *b = &s->ff_beams[i];
    for (int32_t e = 0; e < g->n_seqs && g->beam_width > 1; e++) {   /* advance sorts them */
        b->cum[e] = g->seqs[e]->cum_logprob;
        b->order[e] = e;
    }
    b->k0 = k0;
    s->ff_groups[i] = g;
    ff_count(s, f, g->len - 1, k0, g->n_seqs);
}

/* The replay's groups [0..n): their sequences (f->n), the replayed step producing
   the first of their last tokens (f->left) and the batch's sampling width (as
   batch_add_seq). */
static void beam_shape(const pb_sched *s, int32_t n, ff_state *f, int32_t *top) {
    f->n = 0, f->left = INT32_MAX, *top = 1;
    for (int32_t i = 0; i < n; i++) {
        const pb_group *g = s->ff_groups[i];
        f->n += g->n_seqs;
        f->left = PB_MIN(f->left, s->ff_beams[i].k0 + g->output_len - g->n_generated - 1);
        if (g->beam_width > 1) *top = PB_MAX(*top, 2 * g->beam_width);
    }
}

/* After replayed step k, which produced some groups' last tokens: they leave the
   replay (brought up to date, out of f's sums, their blocks freed by the manager:
   beam_free) and finish, in running order, as post-processing would finish them;
   the others move down.  Returns how many remain. */
static int32_t beam_finish(pb_sched *s, ff_state *f, int32_t n, int32_t k) {
    pb_group **gs = s->ff_groups;
    int32_t w = 0;
    for (int32_t i = 0; i < n; i++) {
        pb_group *g = gs[i];
        int32_t steps = k - s->ff_beams[i].k0;
        if (g->n_generated + steps < g->output_len) {
            gs[w] = g;
            if (w != i) s->ff_beams[w] = s->ff_beams[i];
            w++;
            continue;
        }
        beam_catch_up(g, &s->ff_beams[i], steps, f->last_token);
        ff_count(s, f, g->len - 1, k, -g->n_seqs);
        pb_kv_beam_free(s->kv, w);
        finish_group(s, g);
    }
    return w;
}

/* ---- mixed steps ----
 * Arrivals that change the waiting head end a replay: the policy must look at it.
 * When the policy decodes first (pb_policy_i.decodes_first) and nothing is
 * swapped, the step instead stays one of the beam replay's, with the policy's
 * admissions added: the replayed groups append (beam_step: all can), the policy's
 * schedule runs with them marked decoded (in_batch, their decodes in the token
 * budget) and admits or rejects from the head as its step would -- allocation,
 * prefill entries and sums as in an ordinary step -- and the batch is the
 * replay's sums plus the prefills', the step's row counts both.  After it the
 * replayed groups select, those finishing finish, the admitted groups take their
 * first token (group_token: beam forks), all in the order post-processing takes
 * them; then, if the next step would be replayed (steady_running, as steady_next
 * asks) and the admitted groups are the running list's tail (always under FCFS:
 * the head changed because the queue was empty and an arrival came; a guard for
 * other orders), they join the replay (beam_join) from the next step on; otherwise
 * the replay ends there.  This keeps a beam replay going through arrivals: without
 * it each arrival rebuilt every group's tables and replayed an ordinary step of
 * all of them (bench/issue18_before_after.md, thirteenth round). */

/* May arrivals be admitted inside this beam replay (mixed steps)? */
static bool beam_mixes(pb_sched *s) {
    pb_policy *p = s->policy;
    return s->n_swapped == 0 && s->kv->iface->beam_join && p->iface->decodes_first &&
           p->iface->decodes_first(p, s);
}

/* Step k of the replay, its decodes in the batch (ff_batch: f's sums) and the row
   (ff_row), completed by the policy: its schedule runs with the replayed groups
   [0..n) marked decoded and their decodes in the token budget, and what it admits
   (entries, sums, copies) is added to the batch and the row as batch_fill and
   step_metrics_begin would count them. */
static pb_status mixed_step(pb_sched *s, const ff_state *f, int32_t n, pb_step_metrics *sm) {
    pb_sched_begin_step(s);   /* zeroes the batch's sums, not the rest of ff_batch's */
    s->b_decode = f->n;
    for (int32_t i = 0; i < n; i++) s->ff_groups[i]->in_batch = true;
    pb_status st = s->policy->iface->schedule(s->policy, s);
    for (int32_t i = 0; i < n; i++) s->ff_groups[i]->in_batch = false;
    s->ff_mixed++;
    if (st != PB_OK) return st;
    pb_batch *b = &s->batch;   /* its sums: the admissions' */
    b->n_seqs += s->n_bseq;
    b->n_prefill_tokens = s->b_prefill_tokens;
    b->n_top = PB_MAX(b->n_top, s->b_n_top);
    b->n_copies += s->copies.n;
    b->sum_new += f->n;
    b->n_sample += f->n;
    b->decode_ctx = f->ctx;
    b->decode_blocks = f->blocks;
    sm->n_groups += s->n_bgroups;
    sm->n_seqs += s->n_bseq;
    sm->n_prefill_seqs = s->b_prefill_seqs;
    sm->prefill_tokens = s->b_prefill_tokens;
    sm->n_copies = b->n_copies;
    return PB_OK;
}

/* After the step ran: the prefills computed, the admitted groups' first tokens. */
static pb_status mixed_tokens(pb_sched *s) {
    batch_computed(s);
    for (int32_t i = 0; i < s->n_bgroups; i++) {
        pb_status st = group_token(s, s->bgroups[i], false);
        if (st != PB_OK) return st;
    }
    return PB_OK;
}

/* The running groups after the replay's n join it from replayed step k on, if they
   are the running list's tail; false when not (or the manager cannot take one): the
   replay ends. */
static bool mixed_join(pb_sched *s, ff_state *f, int32_t *n, int32_t k) {
    pb_group *first = *n > 0 ? s->ff_groups[*n - 1]->next : s->run_head;
    int32_t more = 0;
    for (pb_group *g = first; g; g = g->next) more++;
    if (*n + more != s->n_running) return false;
    beam_reserve(s, *n + more);
    for (pb_group *g = first; g; g = g->next) {
        if (pb_kv_beam_join(s->kv, g) != PB_OK) return false;
        beam_track(s, f, (*n)++, g, k);
    }
    return true;
}

static pb_status beam_forward(pb_engine *e) {
    pb_sched *s = &e->s;
    int32_t n = s->n_running, top;
    ff_state f;   /* the replay's sequences, step sums, last tokens' time */
    ff_clear(s, &f, 0);
    beam_reserve(s, n);
    int32_t i = 0;
    for (pb_group *g = s->run_head; g; g = g->next) beam_track(s, &f, i++, g, 0);
    PB_ASSERT(i == n);
    beam_shape(s, n, &f, &top);
    if (pb_kv_beam_begin(s->kv, s->ff_groups, n) != PB_OK) return PB_OK;   /* an ordinary step next */
    const pb_group *head = pb_sched_waiting_peek(s);
    bool mixes = beam_mixes(s);   /* nothing swaps in or out inside the replay */
    pb_kv_usage u;
    pb_kv_usage_get(s->kv, &u);
    int64_t free_held = u.gpu_blocks_free;   /* when the policy last answered steady */
    int32_t k = 0;
    bool stuck = false;
    while (k <= f.left && !run_over(s)) {
        groups_recycle(s);   /* as schedule() */
        while (s->next_arrival < s->n_requests && s->reqs[s->next_arrival].arrival_s <= s->now)
            pb_sched_enqueue_waiting(s, group_arrive(s, s->next_arrival++));
        bool mixed = pb_sched_waiting_peek(s) != head;   /* the policy must look at it */
        if (mixed && !mixes) break;
        int32_t copies = pb_kv_beam_step(s->kv);
        if ((stuck = copies < 0)) break;   /* a group cannot append: the ordinary step preempts */
        ff_advance(s, &f, k);
        ff_batch(s, f.n, f.ctx, f.blocks);
        s->batch.n_top = top;
        s->batch.n_copies = copies;
        pb_step_metrics sm;
        ff_row(&sm, n, f.n);
        sm.n_copies = copies;
        pb_status st = mixed ? mixed_step(s, &f, n, &sm) : PB_OK;
        if (st == PB_OK) st = ff_execute(s, &sm, n, &f.last_token);
        if (st != PB_OK) return st;
        int64_t free_now = sm.mem.gpu_blocks_free;   /* after the appends, then the frees */
        for (i = 0; i < n; i++)
            if (s->ff_groups[i]->beam_width > 1)
                free_now += beam_replay_select(s, i, s->ff_groups[i], &s->ff_beams[i]);
        k++;
        bool ask = mixed || free_now > free_held, finished = k == f.left + 1;   /* freed blocks: still held? */
        if (finished) {   /* last tokens: those groups finish, the running set shrinks */
            n = beam_finish(s, &f, n, k);
            ask = true;
        }
        if (mixed && (st = mixed_tokens(s)) != PB_OK) return st;
        if (finished || mixed) {   /* blocks freed besides the selections' */
            pb_kv_usage_get(s->kv, &u);
            free_now = u.gpu_blocks_free;
        }
        if (ask) {   /* as steady_next after this step run by pb_engine_step */
            if (!steady_running(s) || (mixed && !mixed_join(s, &f, &n, k))) break;
            if (mixed || finished) beam_shape(s, n, &f, &top);
            free_held = free_now;
            head = pb_sched_waiting_peek(s);
        }
    }
    pb_kv_beam_end(s->kv);
    pb_pair_vec_clear(&s->copies);   /* the last ordinary (or mixed) step's */
    if (k == 0) return PB_OK;
    for (i = 0; i < n; i++) beam_catch_up(s->ff_groups[i], &s->ff_beams[i], k - s->ff_beams[i].k0, f.last_token);
    s->ff_steps += k;
    s->replayed = true;
    if (!stuck) ff_again(s, k);
    return s->p.check_every_step ? pb_engine_check(e) : PB_OK;
}

static pb_status fast_forward(pb_engine *e) {
    pb_sched *s = &e->s;
    s->steady = false;
    for (const pb_group *g = s->run_head; g; g = g->next)
        if (g->n_seqs > 1) return beam_forward(e);
    ff_state f;
    ff_begin(s, &f);
    if (pb_kv_replay_begin(s->kv, s->ff_seqs, f.n) != PB_OK) return PB_OK;   /* an ordinary step next */
    const pb_group *head = pb_sched_waiting_peek(s);
    int32_t k = 0;   /* steps replayed; step f.left produces a group's last token: the last */
    ff_next next = FF_NEXT;
    while (next == FF_NEXT && k <= f.left && !run_over(s)) {
        groups_recycle(s);   /* as schedule() */
        while (s->next_arrival < s->n_requests && s->reqs[s->next_arrival].arrival_s <= s->now)
            pb_sched_enqueue_waiting(s, group_arrive(s, s->next_arrival++));
        if (pb_sched_waiting_peek(s) != head) break;   /* the policy must look at it */
        pb_status st = ff_step(s, &f, k, &next);
        if (st != PB_OK) return st;
        if (next == FF_POLICY) return ff_policy_completes(e, &f, k);
        k++;
        head = pb_sched_waiting_peek(s);   /* a preempted group may lead now */
    }
    ff_end(s, &f, k);
    ff_again(s, k);
    return s->p.check_every_step && k > 0 ? pb_engine_check(e) : PB_OK;
}

/* A scheduled step (ready: with a batch or memory operations) run: execute,
   postprocess, whether the next steps may be replayed, the checks. */
static pb_status step_run(pb_engine *e, bool ready) {
    pb_sched *s = &e->s;
    if (!ready) return PB_OK;
    bool has_tokens = false;
    pb_step_metrics sm;
    pb_status st = execute(s, &sm, &has_tokens);
    if (st == PB_OK) st = postprocess(s, has_tokens, &sm);
    if (st != PB_OK) return st;
    s->step++;
    s->steady = steady_next(s, has_tokens);
    return s->p.check_every_step ? pb_engine_check(e) : PB_OK;
}

pb_status pb_engine_step(pb_engine *e, bool *done) {
    pb_sched *s = &e->s;
    *done = false;
    if (!s->running_run) return PB_ERR_INVALID;
    if (run_over(s)) {
        *done = true;
        return PB_OK;
    }
    bool ready = false;
    pb_status st = schedule(s, &ready);
    return st == PB_OK ? step_run(e, ready) : st;
}

static int group_id_cmp(const void *a, const void *b) {
    int32_t x = (*(pb_group *const *)a)->id, y = (*(pb_group *const *)b)->id;
    return (x > y) - (x < y);
}

pb_status pb_engine_end(pb_engine *e) {
    pb_sched *s = &e->s;
    if (!s->running_run) return PB_ERR_INVALID;
    groups_recycle(s);
    if (s->n_live > 1) qsort(s->live, (size_t)s->n_live, sizeof *s->live, group_id_cmp);   /* in request order */
    for (int32_t i = 0; i < s->n_live; i++) {   /* what is left: unfinished */
        pb_group *g = s->live[i];
        g->live_idx = i;
        if (g->state == PB_GROUP_RUNNING) pb_sched_running_remove(s, g);
        pb_sched_release_group(s, g);
    }
    pb_metrics_end(s->metrics, s->now);
    pb_status st = s->p.check_every_step ? pb_metrics_check(s->metrics) : PB_OK;
    engine_clear_run(s);
    return st;
}

pb_status pb_engine_run(pb_engine *e, const pb_trace *t, pb_metrics *m) {
    pb_status st = pb_engine_begin(e, t, m);
    if (st != PB_OK) return st;
    bool done = false;
    while (!done && st == PB_OK) st = e->s.steady ? fast_forward(e) : pb_engine_step(e, &done);
    pb_status st2 = pb_engine_end(e);
    return st != PB_OK ? st : st2;
}

pb_status pb_engine_check(pb_engine *e) {
    pb_sched *s = &e->s;
    pb_status st = pb_sched_check(s);
    if (st != PB_OK) return st;
    int32_t nw = 0, nr = 0, nsw = 0;
    int64_t done = s->n_recycled;
    if (s->n_live + s->n_recycled != s->next_arrival || s->n_dead > s->n_live) {
        pb_log_error("engine: %d live + %lld recycled groups for %lld arrivals (%d dead)", s->n_live,
                     (long long)s->n_recycled, (long long)s->next_arrival, s->n_dead);
        return PB_ERR_INVALID;
    }
    for (int32_t i = 0; i < s->n_live; i++) {
        const pb_group *g = s->live[i];
        if ((st = pb_group_check(g)) != PB_OK) return st;
        if (g->live_idx != i || g->id < 0 || g->id >= s->next_arrival || g->state == PB_GROUP_PENDING) {
            pb_log_error("engine: live group %d at %d (live_idx %d, state %s, %lld arrived)", g->id, i,
                         g->live_idx, pb_group_state_str(g->state), (long long)s->next_arrival);
            return PB_ERR_INVALID;
        }
        switch (g->state) {
        case PB_GROUP_WAITING: nw++; break;
        case PB_GROUP_RUNNING: nr++; break;
        case PB_GROUP_SWAPPED: nsw++; break;
        case PB_GROUP_FINISHED:
        case PB_GROUP_REJECTED: done++; break;
        default: break;
        }
        for (int32_t k = 0; k < g->n_seqs; k++) {
            const pb_seq *q = g->seqs[k];
            bool has_kv = q->kv != NULL;
            bool want = g->state == PB_GROUP_RUNNING || g->state == PB_GROUP_SWAPPED;
            if (has_kv != want) {
                pb_log_error("engine: group %d (%s) seq %d %s KV", g->id, pb_group_state_str(g->state),
                             q->id, has_kv ? "holds" : "lacks");
                return PB_ERR_INVALID;
            }
            if (q->batch_idx != -1 || g->in_batch) {
                pb_log_error("engine: seq %d still marked in a batch", q->id);
                return PB_ERR_INVALID;
            }
        }
    }
    if (nw != s->n_waiting || nr != s->n_running || nsw != s->n_swapped || done != s->n_done) {
        pb_log_error("engine: state counts waiting %d/%d running %d/%d swapped %d/%d done %lld/%lld",
                     nw, s->n_waiting, nr, s->n_running, nsw, s->n_swapped, (long long)done,
                     (long long)s->n_done);
        return PB_ERR_INVALID;
    }
    return pb_kv_check(s->kv);
}
