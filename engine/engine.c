/* engine.c -- the engine loop (see engine.h).
 *
 * The engine owns the run: the group store (groups.h), the queues (scheduler.h), the
 * batch builder (batch.h), the clock and the step index.  A step is schedule
 * (arrivals, then the policy), execute, postprocess; the fast path (fastfwd.h), when
 * there is one, is asked after every ordinary step that ran a batch. */
#include "engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "beam.h"
#include "engine_step.h"
#include "fastfwd.h"
#include "vllm_version.h"

struct pb_engine {
    pb_engine_params p;
    pb_engine_parts x;            /* the KV manager, policy, executor, metrics and the
                                     parts below, as the fast path sees them          */
    pb_groups groups;
    pb_sched sched;
    pb_batch_builder batch;
    pb_fastfwd *ff;               /* NULL: no fast path for this engine                 */
    const pb_request *trace;      /* the run's trace: rows [0, n_trace)                 */
    int64_t n_trace, next_trace;  /* next_trace: the first row not yet arrived          */
    int64_t n_added;              /* requests the caller added (ids from n_trace on)    */
    pb_candidates *cand;          /* executor candidates, [cap_cand]                    */
    int32_t cap_cand;
    double now;
    int64_t step;
    int64_t n_preempted;          /* groups preempted in the run's steps so far        */
    bool in_run;                  /* between begin and end                              */
};

void pb_engine_params_default(pb_engine_params *p) {
    memset(p, 0, sizeof *p);
    pb_vllm_knobs k;
    pb_vllm_knobs_default(PB_VLLM_V01, 2048, NULL, &k);
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
    e->p = *p;
    pb_batch_init(&e->batch, kv->block_size);
    pb_sched_init(&e->sched, &e->p, kv, policy, &e->batch, &e->groups);
    e->x = (pb_engine_parts){.p = &e->p, .kv = kv, .policy = policy, .ex = ex, .sched = &e->sched,
                             .batch = &e->batch};
    e->ff = pb_fastfwd_create(e);
    *out = e;
    return PB_OK;
}

void pb_engine_destroy(pb_engine *e) {
    if (!e) return;
    if (e->in_run) pb_engine_end(e);
    pb_fastfwd_destroy(e->ff);
    pb_sched_free(&e->sched);
    pb_batch_free(&e->batch);
    pb_groups_free(&e->groups);
    free(e->cand);
    free(e);
}

const pb_engine_parts *pb_engine_parts_of(const pb_engine *e) { return &e->x; }
double pb_engine_now(const pb_engine *e) { return e->now; }
int64_t pb_engine_steps(const pb_engine *e) { return e->step; }
int64_t pb_engine_fast_forwarded(const pb_engine *e) { return e->ff ? pb_fastfwd_steps(e->ff) : 0; }
int64_t pb_engine_fast_mixed(const pb_engine *e) { return e->ff ? pb_fastfwd_mixed(e->ff) : 0; }
const pb_group *pb_engine_group(const pb_engine *e, int64_t id) { return pb_groups_find(&e->groups, id); }
const pb_batch *pb_engine_last_batch(const pb_engine *e) { return &e->batch.b; }

/* A trace row or an added request the engine can serve (as its metrics need). */
static bool request_ok(const pb_request *r) {
    return isfinite(r->arrival_s) && r->arrival_s >= 0 && r->prompt_len >= 1 && r->output_len >= 1 && r->n >= 1 &&
           r->beam_width >= 1;
}

pb_status pb_engine_begin(pb_engine *e, const pb_trace *t, pb_metrics *m) {
    if (e->in_run) return PB_ERR_INVALID;
    if (!t || !m || t->n < 0 || (t->n > 0 && !t->reqs) || t->n > INT32_MAX) return PB_ERR_INVALID;
    for (int64_t i = 0; i < t->n; i++) {
        const pb_request *r = &t->reqs[i];
        if (!request_ok(r) || (i > 0 && r->arrival_s < t->reqs[i - 1].arrival_s)) {
            pb_log_error("engine: trace row %lld invalid (arrival %g, prompt %d, output %d, n %d, "
                         "beam %d; arrivals must be sorted)", (long long)i, r->arrival_s,
                         r->prompt_len, r->output_len, r->n, r->beam_width);
            return PB_ERR_INVALID;
        }
    }
    e->x.metrics = m;
    e->trace = t->reqs;
    e->n_trace = t->n;
    e->next_trace = e->n_added = 0;
    e->now = 0;
    e->step = e->n_preempted = 0;
    pb_groups_begin(&e->groups, e->p.max_model_len, e->p.seed, e->p.vocab_size, e->p.store_tokens);
    pb_sched_begin_run(&e->sched, m);
    pb_batch_begin(&e->batch);
    if (e->ff) pb_fastfwd_begin_run(e->ff);
    pb_metrics_begin(m, t, e->p.max_model_len);   /* rows made as requests are touched */
    e->in_run = true;
    return PB_OK;
}

/* ---- arrivals ---- */

/* Requests known: the trace's and the caller's. */
static int64_t n_requests(const pb_engine *e) { return e->n_trace + e->n_added; }

/* Nothing queued, running or swapped. */
static bool idle(const pb_engine *e) {
    const pb_sched *s = &e->sched;
    return s->waiting.n + s->n_running + s->n_swapped == 0;
}

/* Why r cannot arrive now (NULL: it can); trace_row: it is the trace's next row. */
static const char *refusal(const pb_engine *e, const pb_request *r, bool trace_row) {
    if (!e->in_run || !r) return "no run";
    if (!request_ok(r)) return "a bad row";
    if (!trace_row && n_requests(e) >= INT32_MAX) return "too many requests";
    if (r->arrival_s <= e->now) return NULL;
    bool row_due = e->next_trace < e->n_trace && e->trace[e->next_trace].arrival_s < r->arrival_s;
    return trace_row || !idle(e) || row_due ? "an arrival after the clock while requests are queued or due before it"
                                           : NULL;
}

pb_status pb_engine_add_request(pb_engine *e, const pb_request *r) {
    bool trace_row = e->in_run && e->next_trace < e->n_trace && r == &e->trace[e->next_trace];
    const char *why = refusal(e, r, trace_row);
    if (why) {
        pb_log_error("engine: request not added: %s", why);
        return PB_ERR_INVALID;
    }
    if (r->arrival_s > e->now) e->now = r->arrival_s;   /* idle: the clock jumps to it */
    int64_t id;
    if (trace_row) {
        id = e->next_trace++;
    } else {
        id = pb_metrics_add_request(e->x.metrics, r);
        PB_ASSERT(id == n_requests(e));
        e->n_added++;
    }
    pb_sched_enqueue_waiting(&e->sched, pb_groups_arrive(&e->groups, id, r));
    return PB_OK;
}

/* Is the trace's next row due by the clock? */
static inline bool trace_due(const pb_engine *e) {
    return e->next_trace < e->n_trace && e->trace[e->next_trace].arrival_s <= e->now;
}

/* The arrival source's next request's time (INFINITY: none, or no source). */
static inline double source_next(const pb_engine *e) {
    const pb_arrival_source *src = e->p.source;
    return src ? src->next_s(src->user) : INFINITY;
}

/* The next arrival after the ones added: the trace's next row or the source's. */
static double next_arrival(const pb_engine *e) {
    double t = e->next_trace < e->n_trace ? e->trace[e->next_trace].arrival_s : INFINITY;
    return PB_MIN(t, source_next(e));
}

/* Every arrival due by the clock, in arrival order (the trace's row first on a tie). */
static void add_due(pb_engine *e) {
    for (;;) {
        double ts = source_next(e);
        bool row = trace_due(e) && e->trace[e->next_trace].arrival_s <= ts;
        if (!row && !(ts <= e->now)) return;
        const pb_request *r = row ? &e->trace[e->next_trace] : e->p.source->take(e->p.source->user);
        PB_ASSERT(row || (r && r->arrival_s == ts));
        pb_status st = pb_engine_add_request(e, r);
        PB_ASSERT(st == PB_OK);
        (void)st;
    }
}

/* Every request known done (none to come from the source), or a step or clock limit
   passed. */
static bool run_over(const pb_engine *e) {
    return (e->sched.n_done == n_requests(e) && !isfinite(source_next(e))) ||
           (e->p.max_steps > 0 && e->step >= e->p.max_steps) || (e->p.max_clock_s > 0 && e->now > e->p.max_clock_s);
}

bool pb_engine_step_start(pb_engine *e) {
    if (run_over(e)) return false;
    pb_groups_recycle(&e->groups);
    if (trace_due(e) || (e->p.source && source_next(e) <= e->now)) add_due(e);
    pb_sched_begin_step(&e->sched, e->now, e->step);
    pb_batch_begin(&e->batch);
    return true;
}

/* ---- postprocess ---- */

static const pb_candidates *seq_cands(pb_engine *e, pb_seq *q, bool has_tokens, int32_t n_top,
                                      pb_candidates *tmp) {
    if (has_tokens && q->batch_idx >= 0 && e->cand[q->batch_idx].n > 0) return &e->cand[q->batch_idx];
    pb_beam_synth_candidates(&q->group->rng, n_top, e->p.vocab_size, tmp);
    return tmp;
}

static pb_status beam_step(pb_engine *e, pb_group *g, bool has_tokens) {
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
    if (!has_tokens && e->p.beam_scores) {   /* the measured model: a row per beam, in index order */
        for (int32_t i = 0; i < nb; i++)
            pb_beam_table_candidates(&g->rng, e->p.beam_scores, 2 * k, e->p.store_tokens ? e->p.vocab_size : 0,
                                     &cands[i]);
        nc = pb_beam_select(cum, cands, nb, k, ch);
    } else if (!has_tokens) {   /* all synthetic: drawn best-first in one stream (same law of choices; beam.h) */
        nc = pb_beam_synth_select(&g->rng, cum, NULL, nb, 2 * k, e->p.store_tokens ? e->p.vocab_size : 0, k, ch);
    } else {
        for (int32_t i = 0; i < nb; i++) {
            const pb_candidates *c = seq_cands(e, par[i], has_tokens, 2 * k, &cands[i]);
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
    int32_t n_pairs = e->x.kv->iface->refork ? PB_MIN(pl.n_kids, pl.n_dead) : 0;
    for (int32_t j = 0; j < pl.n_kids; j++) {   /* children in choice order: their ids */
        pb_seq *p = par[ch[pl.kid[j]].parent], *child;
        pb_status st;
        if (j < n_pairs) {
            child = par[pl.dead[j]];
            st = pb_kv_refork(e->x.kv, p, child);
            pb_seq_reclone(e->groups.pool, child, p);
        } else {
            child = pb_seq_clone(e->groups.pool, p);
            st = pb_kv_fork(e->x.kv, p, child);
        }
        if (st != PB_OK) return st;
        dst[pl.kid[j]] = child;
    }
    for (int32_t d = n_pairs; d < pl.n_dead; d++) {
        par[pl.dead[d]]->batch_idx = -1;
        pb_kv_free(e->x.kv, par[pl.dead[d]]);
        pb_seq_delete(e->groups.pool, par[pl.dead[d]]);
    }
    pb_seq *order[PB_MAX_TOP / 2];
    for (int32_t i = 0; i < nc; i++) order[i] = dst[pl.at[i]];
    pb_group_set_order(g, order);
    for (int32_t c = 0; c < nc; c++) {
        if (e->p.store_tokens) pb_seq_append_token(e->groups.pool, dst[c], ch[c].token, ch[c].logprob);
        else pb_seq_advance(dst[c], ch[c].logprob);   /* the pool keeps no ids */
        dst[c]->cum_logprob = ch[c].score;   /* cum + logprob; the synthetic model's unrounded score */
    }
    return PB_OK;
}

static pb_status parallel_fork(pb_engine *e, pb_group *g, bool has_tokens) {
    pb_seq *p = g->seqs[0];
    pb_candidates tmp;
    const pb_candidates *c = seq_cands(e, p, has_tokens, PB_MIN(g->n, PB_MAX_TOP), &tmp);
    pb_candidates cc = *c;
    for (int32_t i = 1; i < g->n; i++) {
        pb_seq *child = pb_seq_clone(e->groups.pool, p);
        pb_status st = pb_kv_fork(e->x.kv, p, child);
        if (st != PB_OK) return st;
        int32_t j = i % cc.n;
        pb_seq_append_token(e->groups.pool, child, cc.token[j], cc.logprob[j]);
    }
    pb_seq_append_token(e->groups.pool, p, cc.token[0], cc.logprob[0]);
    return PB_OK;
}

/* g's next token(s) after a step that ran it; nothing while its prefill is partial
   (only the completing chunk samples: first token, parallel forks). */
pb_status pb_engine_group_token(pb_engine *e, pb_group *g, bool has_tokens) {
    g->in_batch = false;
    if (g->prefill && g->seqs[0]->n_computed < g->len) {   /* a partial prefill */
        for (int32_t i = 0; i < g->n_seqs; i++) g->seqs[i]->batch_idx = -1;
        return PB_OK;
    }
    g->prefill = false;
    bool first = g->n_generated == 0;
    pb_status st = PB_OK;
    if (g->beam_width > 1) {
        st = beam_step(e, g, has_tokens);
    } else if (first && g->n > 1 && g->n_seqs == 1) {
        st = parallel_fork(e, g, has_tokens);
    } else {
        for (int32_t i = 0; i < g->n_seqs; i++) {
            pb_seq *q = g->seqs[i];
            int32_t tok = 0;
            float lp = 0;
            if (has_tokens && q->batch_idx >= 0 && e->cand[q->batch_idx].n > 0) {
                tok = e->cand[q->batch_idx].token[0];
                lp = e->cand[q->batch_idx].logprob[0];
            } else if (e->p.store_tokens) {
                tok = (int32_t)pb_rng_below(&g->rng, (uint64_t)e->p.vocab_size);
            }
            if (e->p.store_tokens) pb_seq_append_token(e->groups.pool, q, tok, lp);
            else pb_seq_advance(q, lp);   /* the pool keeps no ids */
            q->batch_idx = -1;
        }
    }
    if (st != PB_OK) return st;
    if (g->beam_width > 1 || first)   /* forks: children, moved beams */
        for (int32_t i = 0; i < g->n_seqs; i++) g->seqs[i]->batch_idx = -1;
    g->n_generated++;
    g->len++;
    pb_metrics_token(e->x.metrics, g->last_token_s, e->now);
    g->last_token_s = e->now;
    if (first) {
        g->first_token_s = e->now;
        pb_metrics_req(e->x.metrics, g->id)->first_token_s = e->now;
    }
    if (e->p.on_progress) e->p.on_progress(e->p.on_progress_user, g);
    if (g->n_generated >= g->output_len) pb_sched_finish(&e->sched, g, e->now);
    return PB_OK;
}

/* ---- one step: schedule, execute, postprocess ---- */

/* The policy's schedule completes the step begun (done0: the groups done before the
   step); *ready: it runs a batch or memory operations.  A step of preemptions or
   rejections only counts here; a step with nothing to do moves the clock to the
   next arrival (no arrival left: the policy stalled). */
static pb_status policy_schedule(pb_engine *e, int64_t done0, bool *ready) {
    pb_sched *s = &e->sched;
    *ready = false;
    pb_status st = s->policy->iface->schedule(s->policy, s);
    if (st != PB_OK) return st;
    pb_batch_take_slot_copies(&e->batch, e->x.kv);
    *ready = pb_batch_runs(&e->batch);
    if (*ready) return PB_OK;
    if (s->n_preempted > 0 || s->n_done != done0) {   /* state moved, nothing to run */
        pb_engine_step_moved(e);
        return PB_OK;
    }
    double next = next_arrival(e);
    if (isfinite(next)) {
        e->now = PB_MAX(e->now, next);
        return PB_OK;
    }
    pb_log_error("engine: policy '%s' scheduled nothing with %d waiting, %d running, %d swapped "
                 "and no arrivals left (stalled)", s->policy->iface->name, pb_sched_n_waiting(s),
                 s->n_running, s->n_swapped);
    return PB_ERR_INVALID;
}

/* After the step's start (pb_engine_step_start: arrivals, an empty batch), the
   policy's schedule (*ready as policy_schedule says); with nothing queued, running or
   swapped the clock jumps to the next arrival instead. */
static pb_status schedule(pb_engine *e, bool *ready) {
    *ready = false;
    if (idle(e)) {   /* the clock jumps to the next arrival */
        double next = next_arrival(e);
        PB_ASSERT(isfinite(next));
        e->now = PB_MAX(e->now, next);
        return PB_OK;
    }
    return policy_schedule(e, e->sched.n_done, ready);
}

/* The step's row as scheduled (before the executor runs); its memory breakdown is
   the caller's. */
static void step_row(const pb_engine *e, pb_step_metrics *sm) {
    const pb_batch_builder *bb = &e->batch;
    const pb_sched *s = &e->sched;
    sm->t_s = e->now;
    sm->n_groups = pb_batch_groups(bb);
    sm->n_seqs = bb->b.n_seqs;
    sm->n_prefill_seqs = bb->n_prefill_seqs;
    sm->prefill_tokens = bb->b.n_prefill_tokens;
    sm->decode_tokens = bb->b.n_decode;
    sm->n_preempted = s->n_preempted;
    sm->n_swap_in_groups = s->n_swap_in_groups;
    sm->n_copies = bb->b.n_copies;
    sm->n_swap_in = bb->b.n_swap_in;
    sm->n_swap_out = bb->b.n_swap_out;
    sm->n_running = s->n_running;
    sm->n_waiting = s->waiting.n;
    sm->n_swapped = s->n_swapped;
}

/* The executor on the batch into res: its status, or PB_ERR_INVALID when the result
   is not a latency (finite, >= 0) or has tokens it may not return. */
static pb_status run_executor(pb_engine *e, pb_candidates *cand, pb_step_result *res) {
    pb_executor *ex = e->x.ex;
    bool tokens = ex->iface->caps & PB_EXEC_TOKENS;
    memset(res, 0, sizeof *res);
    pb_status st = pb_executor_execute(ex, &e->batch.b, res, cand);
    if (st != PB_OK) {
        pb_log_error("engine: executor '%s' failed at step %lld: %s", ex->iface->name, (long long)e->step,
                     pb_status_str(st));
        return st;
    }
    if (!(res->latency_s >= 0) || !isfinite(res->latency_s) || (res->has_tokens && !tokens)) {
        pb_log_error("engine: executor '%s' returned latency %g%s", ex->iface->name, res->latency_s,
                     res->has_tokens && !tokens ? " and tokens without PB_EXEC_TOKENS" : "");
        return PB_ERR_INVALID;
    }
    return PB_OK;
}

pb_status pb_engine_execute(pb_engine *e, pb_step_metrics *sm, bool *has_tokens) {
    pb_batch_builder *bb = &e->batch;
    pb_kv_manager *kv = e->x.kv;
    unsigned caps = e->x.ex->iface->caps;
    pb_batch_ready(bb, kv, caps & PB_EXEC_KV_LAYOUT);
    step_row(e, sm);   /* its times set below */
    bool tokens = caps & PB_EXEC_TOKENS;
    if (tokens && e->cap_cand < bb->n) {
        e->cap_cand = PB_MAX(bb->n, 2 * e->cap_cand);
        e->cand = pb_xrealloc(e->cand, (size_t)e->cap_cand * sizeof *e->cand);
    }
    if (tokens)
        for (int32_t i = 0; i < bb->n; i++) e->cand[i].n = 0;
    pb_step_result res;
    pb_status st = run_executor(e, e->cand, &res);
    if (st != PB_OK) return st;
    e->now += res.latency_s;
    for (int32_t i = 0; i < bb->n; i++) bb->seq_of[i]->n_computed = bb->seqs[i].context_len;
    if (kv->iface->computed)
        for (int32_t i = 0; i < bb->n; i++) pb_kv_computed(kv, bb->seq_of[i], bb->seqs[i].context_len);
    sm->latency_s = res.latency_s;
    sm->swap_s = res.swap_s;
    sm->copy_s = res.copy_s;
    if (has_tokens) *has_tokens = res.has_tokens;
    pb_metrics_add_step(e->x.metrics, sm);
    e->step++;
    return PB_OK;
}

void pb_engine_step_moved(pb_engine *e) { e->step++; }

/* Next tokens of the groups whose prefill is complete or that decoded: forks, beam
   selections, finished groups. */
static pb_status postprocess(pb_engine *e, bool has_tokens) {
    pb_batch_builder *bb = &e->batch;
    for (int32_t i = 0; i < bb->n_groups; i++) {
        pb_status st = pb_engine_group_token(e, bb->groups[i], has_tokens);
        if (st != PB_OK) return st;
    }
    return PB_OK;
}

/* A scheduled step (ready: with a batch or memory operations) run: execute (the
   step's row recorded), postprocess, the checks.  *ran: it was ready. */
static pb_status step_run(pb_engine *e, bool ready, bool *ran) {
    *ran = ready;
    if (!ready) return PB_OK;
    bool has_tokens = false;
    pb_step_metrics sm;
    pb_kv_usage_get(e->x.kv, &sm.mem);
    pb_status st = pb_engine_execute(e, &sm, &has_tokens);
    if (st == PB_OK) st = postprocess(e, has_tokens);
    if (st != PB_OK) return st;
    return e->p.check_every_step ? pb_engine_check(e) : PB_OK;
}

pb_status pb_engine_complete_step(pb_engine *e, bool *ran) {
    bool ready = false;
    pb_status st = policy_schedule(e, e->sched.n_done, &ready);
    return st == PB_OK ? step_run(e, ready, ran) : st;
}

/* One step; *ran: it executed a batch. */
static pb_status engine_step(pb_engine *e, bool *done, bool *ran) {
    *done = *ran = false;
    if (!e->in_run) return PB_ERR_INVALID;
    if (!pb_engine_step_start(e)) {
        *done = true;
        return PB_OK;
    }
    bool ready = false;
    pb_status st = schedule(e, &ready);
    e->n_preempted += e->sched.n_preempted;
    return st == PB_OK ? step_run(e, ready, ran) : st;
}

pb_status pb_engine_abort_request(pb_engine *e, int64_t id) {
    pb_group *g = e->in_run ? (pb_group *)pb_groups_find(&e->groups, id) : NULL;
    if (!g || (g->state != PB_GROUP_WAITING && g->state != PB_GROUP_RUNNING && g->state != PB_GROUP_SWAPPED)) {
        pb_log_error("engine: request %lld cannot be aborted: not waiting, running or swapped", (long long)id);
        return PB_ERR_INVALID;
    }
    pb_sched_abort(&e->sched, g);
    return PB_OK;
}

void pb_engine_set_progress(pb_engine *e, void (*fn)(void *user, const pb_group *g), void *user) {
    PB_ASSERT(!e->in_run);
    e->p.on_progress = fn;
    e->p.on_progress_user = user;
}

void pb_engine_load_get(const pb_engine *e, pb_engine_load *out) {
    out->n_waiting = pb_sched_n_waiting(&e->sched);
    out->n_running = e->sched.n_running;
    out->n_swapped = e->sched.n_swapped;
    out->n_preempted = e->n_preempted;
}

pb_status pb_engine_step(pb_engine *e, bool *done) {
    bool ran;
    return engine_step(e, done, &ran);
}

pb_status pb_engine_end(pb_engine *e) {
    if (!e->in_run) return PB_ERR_INVALID;
    pb_groups *G = &e->groups;
    pb_groups_recycle(G);
    pb_groups_sort(G);   /* what is left, unfinished, released in request order */
    for (int32_t i = 0; i < G->n_live; i++) {
        pb_group *g = G->live[i];
        if (g->state == PB_GROUP_RUNNING) pb_sched_running_remove(&e->sched, g);
        pb_groups_release(G, g, e->x.kv);
    }
    pb_metrics_end(e->x.metrics, e->now);
    pb_status st = e->p.check_every_step ? pb_metrics_check(e->x.metrics) : PB_OK;
    pb_groups_end(G);
    e->trace = NULL;
    e->n_trace = e->next_trace = e->n_added = 0;
    e->in_run = false;
    return st;
}

pb_status pb_engine_run(pb_engine *e, const pb_trace *t, pb_metrics *m) {
    pb_status st = pb_engine_begin(e, t, m);
    if (st != PB_OK) return st;
    bool done = false, ran = false;
    while (!done && st == PB_OK) {
        st = engine_step(e, &done, &ran);
        if (st == PB_OK && ran && e->ff) st = pb_fastfwd_run(e->ff);
    }
    pb_status st2 = pb_engine_end(e);
    return st != PB_OK ? st : st2;
}

pb_status pb_engine_check(pb_engine *e) {
    const pb_sched *s = &e->sched;
    const pb_groups *G = &e->groups;
    pb_status st = pb_sched_check(s);
    if (st == PB_OK) st = pb_batch_check(&e->batch, e->p.max_num_batched_tokens);
    if (st != PB_OK) return st;
    int32_t nw = 0, nr = 0, nsw = 0;
    int64_t done = G->n_recycled, arrived = e->next_trace + e->n_added;
    if (G->n_live + G->n_recycled != arrived || G->n_dead > G->n_live) {
        pb_log_error("engine: %d live + %lld recycled groups for %lld arrivals (%d dead)", G->n_live,
                     (long long)G->n_recycled, (long long)arrived, G->n_dead);
        return PB_ERR_INVALID;
    }
    for (int32_t i = 0; i < G->n_live; i++) {
        const pb_group *g = G->live[i];
        if ((st = pb_group_check(g)) != PB_OK) return st;
        if (g->live_idx != i || g->id < 0 || g->id >= n_requests(e) || g->state == PB_GROUP_PENDING) {
            pb_log_error("engine: live group %d at %d (live_idx %d, state %s, %lld requests)", g->id, i,
                         g->live_idx, pb_group_state_str(g->state), (long long)n_requests(e));
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
    if (nw != pb_sched_n_waiting(s) || nr != s->n_running || nsw != s->n_swapped || done != s->n_done) {
        pb_log_error("engine: state counts waiting %d/%d running %d/%d swapped %d/%d done %lld/%lld",
                     nw, pb_sched_n_waiting(s), nr, s->n_running, nsw, s->n_swapped, (long long)done,
                     (long long)s->n_done);
        return PB_ERR_INVALID;
    }
    return pb_kv_check(e->x.kv);
}
