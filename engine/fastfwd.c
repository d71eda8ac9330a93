/* fastfwd.c -- the fast path (see fastfwd.h).
 *
 * Decode replay (single-sequence groups).  The running groups' sequences are handed
 * to the manager's replay; per replayed step k the batch's decode sums follow from
 * step k - 1's: every context one token longer, those whose kv_len before the append
 * is a multiple of the block size one block longer -- a context c starts a block at
 * the steps k = (bs - c % bs) % bs mod bs, so phase[k % bs] counts them.  The step's
 * n groups share one inter-token gap.  A step in which a group cannot append
 * preempts the latest groups as the policy's decode would (replay.h steady); then the
 * policy says whether the step schedules anything more (steady_preempted: if so its
 * schedule completes it as an ordinary step) and, after it, whether the heads stay
 * held.  When the replay stops, the groups are brought up to date and those whose
 * last token the last step produced finish, in running order.
 *
 * Beam replay (some group has several sequences: beam groups at full width, the
 * others single).  The manager keeps each group as a tree of block counts; after
 * each step every beam group's selection is drawn from its stream exactly as
 * postprocessing would draw it (pb_beam_synth_advance, or pb_beam_table_advance under
 * a measured score table; the scores are kept here, by rank, until the group leaves
 * the replay) and handed to the manager as the beams' parents.  A step in which a
 * group cannot append is not replayed.  Beams that die free blocks, so after a step
 * whose selections left more blocks free than when the policy last answered steady,
 * it is asked again.  Groups whose last token a step produced leave the replay and
 * finish there, and the replay goes on if the next step would be replayed after it.
 *
 * Mixed steps.  Arrivals that change the waiting head end a replay: the policy must
 * look at it.  In a beam replay, when the policy decodes first (decodes_first) and
 * nothing is swapped, the step instead stays a replayed one with the policy's
 * admissions added: the replayed groups append, the policy's schedule runs with
 * them marked decoded (in_batch, their decodes in the batch's token count) and
 * admits or rejects from the head as its step would, the batch is the replay's sums
 * plus the admissions' entries.  After it the admitted groups take their first token
 * and, if the next step would be replayed and they are the running list's tail,
 * join the replay (beam_join); otherwise the replay ends there. */
#include "fastfwd.h"

#include <stdlib.h>
#include <string.h>

#include "beam.h"
#include "engine_step.h"
#include "replay.h"

typedef struct {   /* a group's beams in a beam replay */
    double cum[PB_MAX_TOP / 2];     /* by rank: beam order[m]'s cum_logprob, best first
                                       (in index order until its first replayed step) */
    int32_t order[PB_MAX_TOP / 2];  /* by rank: the beams (positions in the group)      */
    int32_t k0;                     /* the replayed step it joined at (0: the first)    */
} ff_beams;

struct pb_fastfwd {
    pb_engine *e;
    const pb_engine_parts *x;
    const pb_kv_replay_i *kr;       /* the manager's replay operations                  */
    const pb_policy_steady_i *ps;   /* the policy's steady answers                      */
    pb_seq **seqs;                  /* decode replay: the running groups' sequences    */
    int32_t cap_seqs;
    int32_t *phase;                 /* [block size]: contexts starting a block at the
                                       replayed steps k with k % bs == index          */
    int32_t cap_phase;
    pb_group **groups;              /* beam replay: the running groups, in order        */
    ff_beams *beams;                /* and their beams                                  */
    int32_t cap_groups;
    int64_t steps, mixed;           /* steps replayed this run; of them, mixed steps    */
};

/* A replay's sums: the sequences, the decode contexts, the last tokens' time. */
typedef struct {
    int32_t n, bs, sh;     /* sequences; block size; its log2 when a power of two, else -1 */
    int32_t left;          /* the replayed step that produces the first last token         */
    int64_t ctx, blocks;   /* sums over the contexts, as of the last step                  */
    double last_token;     /* every replayed group's latest token time                     */
} ff_state;

pb_fastfwd *pb_fastfwd_create(pb_engine *e) {
    const pb_engine_parts *x = pb_engine_parts_of(e);
    unsigned caps = x->ex->iface->caps;
    if (!x->p->fast_forward || !x->policy->iface->steady || !x->kv->iface->replay || x->kv->iface->computed ||
        !(caps & PB_EXEC_SUMS_ONLY) || (caps & (PB_EXEC_KV_LAYOUT | PB_EXEC_TOKENS)) || x->p->store_tokens ||
        x->kv->block_size < 1)
        return NULL;
    pb_fastfwd *f = pb_xcalloc(1, sizeof *f);
    f->e = e;
    f->x = x;
    f->kr = x->kv->iface->replay;
    f->ps = x->policy->iface->steady;
    return f;
}

void pb_fastfwd_destroy(pb_fastfwd *f) {
    if (!f) return;
    free(f->seqs);
    free(f->phase);
    free(f->groups);
    free(f->beams);
    free(f);
}

void pb_fastfwd_begin_run(pb_fastfwd *f) { f->steps = f->mixed = 0; }
int64_t pb_fastfwd_steps(const pb_fastfwd *f) { return f->steps; }
int64_t pb_fastfwd_mixed(const pb_fastfwd *f) { return f->mixed; }

/* ---- when to replay ---- */

/* Is the next step a pure decode step?  Every running group got a token in the step
   just run and has one sequence, or its beams, past its prefill, and the policy says
   it would decode them and nothing else. */
static bool steady_running(pb_fastfwd *f) {
    pb_sched *s = f->x->sched;
    if (s->n_running == 0) return false;
    for (const pb_group *g = s->run_head; g; g = g->next)
        if (g->prefill || (g->n_seqs != 1 && (g->n_seqs != g->beam_width || !f->kr->beam_begin))) return false;
    return f->ps->steady(f->x->policy, s);
}

/* After an ordinary step that ran a batch: did every running group decode in it? */
static bool steady_next(pb_fastfwd *f) {
    return pb_batch_groups(f->x->batch) == f->x->sched->n_running && steady_running(f);
}

/* ---- the replay's sums ---- */

/* Add (w > 0) or remove (w < 0) |w| contexts of c tokens each (kv_len before
   replayed step k's append; c - k before step 0, maybe negative for a group that
   joined late) to the sums and to their phase's count. */
static void ff_count(pb_fastfwd *f, ff_state *r, int32_t c, int32_t k, int32_t w) {
    int32_t bs = r->bs, base = c - k, in_block = r->sh >= 0 ? base & (bs - 1) : (base % bs + bs) % bs;
    r->ctx += (int64_t)w * c;
    r->blocks += (int64_t)w * (r->sh >= 0 ? (c + bs - 1) >> r->sh : (c + bs - 1) / bs);
    f->phase[in_block ? bs - in_block : 0] += w;
}

/* Empty sums (no contexts) for n sequences. */
static void ff_clear(pb_fastfwd *f, ff_state *r, int32_t n) {
    const pb_batch_builder *bb = f->x->batch;
    int32_t bs = bb->block_size;
    if (f->cap_phase < bs) {
        f->cap_phase = bs;
        f->phase = pb_xrealloc(f->phase, (size_t)bs * sizeof *f->phase);
    }
    memset(f->phase, 0, (size_t)bs * sizeof *f->phase);
    *r = (ff_state){.n = n, .bs = bs, .sh = bb->bs_shift, .left = INT32_MAX, .last_token = pb_engine_now(f->e)};
}

/* Step k's sums from step k - 1's (before step 0: the contexts before its appends). */
static void ff_advance(pb_fastfwd *f, ff_state *r, int32_t k) {
    r->ctx += r->n;
    r->blocks += f->phase[r->sh >= 0 ? k & (r->bs - 1) : k % r->bs];
}

/* Group g up to date after k replayed steps: k tokens in each sequence (lengths,
   computed KV), the token time. */
static void catch_up(pb_group *g, int32_t k, double last_token) {
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

/* The step built so far (its decodes added by sums) runs as an ordinary step does:
   its row (the memory breakdown from the replay), the executor, the clock; the
   n_decoded replayed groups' tokens (all at *last_token, now the step's end).
   *free_blocks (may be NULL): the GPU blocks free as the step ran. */
static pb_status ff_execute(pb_fastfwd *f, int32_t n_decoded, double *last_token, int64_t *free_blocks) {
    pb_step_metrics sm;
    f->kr->usage(f->x->kv, &sm.mem);
    pb_status st = pb_engine_execute(f->e, &sm, NULL);
    if (st != PB_OK) return st;
    double now = sm.t_s + sm.latency_s;   /* the clock after the step */
    pb_metrics_tokens(f->x->metrics, *last_token, now, n_decoded);
    *last_token = now;
    if (free_blocks) *free_blocks = sm.mem.gpu_blocks_free;
    return PB_OK;
}

/* ---- decode replay ---- */

/* The running groups' sequences and the sums of the pure decode step just run. */
static void decode_begin(pb_fastfwd *f, ff_state *r) {
    pb_sched *s = f->x->sched;
    int32_t n = s->n_running;
    if (f->cap_seqs < n) {
        f->cap_seqs = PB_MAX(n, 2 * f->cap_seqs);
        f->seqs = pb_xrealloc(f->seqs, (size_t)f->cap_seqs * sizeof *f->seqs);
    }
    ff_clear(f, r, n);
    int32_t i = 0;
    for (pb_group *g = s->run_head; g; g = g->next) {
        pb_seq *q = g->seqs[0];
        f->seqs[i++] = q;
        r->left = PB_MIN(r->left, g->output_len - g->n_generated - 1);
        ff_count(f, r, q->kv_len, 0, 1);
    }
    PB_ASSERT(i == n);
}

/* Step k could not append every group: the latest groups are preempted until the
   rest could (into the step's preemption counts and swap map). */
static void decode_preempt(pb_fastfwd *f, ff_state *r, int32_t k, int32_t stuck) {
    pb_kv_manager *kv = f->x->kv;
    while (stuck < r->n) {
        int32_t last = r->n - 1;
        pb_seq *q = f->seqs[last];
        f->kr->pop(kv);   /* q->kv_len up to date: its context before step k */
        catch_up(q->group, k, r->last_token);
        ff_count(f, r, q->kv_len, k, -1);
        r->n--;
        pb_sched_preempt(f->x->sched, q->group, f->x->p->preemption);
        stuck = stuck == last ? r->n : f->kr->step(kv);
    }
}

/* What follows a replayed step: the next one, none (an ordinary step next), or the
   policy completes this one (steady_preempted false). */
typedef enum { FF_NEXT, FF_STOP, FF_POLICY } ff_next;

/* Replayed step k, begun (pb_engine_step_start): the manager's appends (and the
   preemptions when a group cannot append), the step run. */
static pb_status decode_step(pb_fastfwd *f, ff_state *r, int32_t k, ff_next *next) {
    const pb_engine_parts *x = f->x;
    *next = FF_NEXT;
    int32_t stuck = f->kr->step(x->kv);
    if (stuck < r->n) {
        decode_preempt(f, r, k, stuck);
        if (!f->ps->steady_preempted(x->policy, x->sched)) {
            *next = FF_POLICY;
            return PB_OK;
        }
        /* the step runs as it is; after it the policy looks again, unless the heads
           stay held (steady: the running groups decode again next) */
        *next = r->n > 0 && f->ps->steady(x->policy, x->sched) ? FF_NEXT : FF_STOP;
        if (r->n == 0 && x->batch->swap_out.n == 0) {   /* nothing to run */
            pb_engine_step_moved(f->e);
            return PB_OK;
        }
    }
    ff_advance(f, r, k);
    pb_batch_add_decode_sums(x->batch, r->n, r->n, r->ctx, r->blocks, 1, 0);
    return ff_execute(f, r->n, &r->last_token, NULL);
}

/* After k replayed steps: the manager's replay ends, the groups are brought up to
   date, and those whose last token the last step produced finish, in running order. */
static void decode_end(pb_fastfwd *f, const ff_state *r, int32_t k) {
    f->kr->end(f->x->kv);
    if (k == 0) return;
    for (int32_t i = 0; i < r->n; i++) catch_up(f->seqs[i]->group, k, r->last_token);
    for (int32_t i = 0; i < r->n && k == r->left + 1; i++) {
        pb_group *g = f->seqs[i]->group;
        if (g->n_generated >= g->output_len) pb_sched_finish(f->x->sched, g, pb_engine_now(f->e));
    }
    f->steps += k;
}

/* Replayed step k preempted and the policy completes it: the groups that decoded
   enter the batch, then the policy's schedule, and the step runs as an ordinary one.
   *again: the steps after it may be replayed. */
static pb_status policy_completes(pb_fastfwd *f, const ff_state *r, int32_t k, bool *again) {
    decode_end(f, r, k);   /* the survivors appended in step k: kv_len == len */
    pb_sched *s = f->x->sched;
    for (pb_group *g = s->run_head; g; g = g->next) pb_sched_decoded(s, g);
    bool ran = false;
    pb_status st = pb_engine_complete_step(f->e, &ran);
    *again = st == PB_OK && ran && steady_next(f);
    return st;
}

static pb_status decode_replay(pb_fastfwd *f, bool *again) {
    pb_sched *s = f->x->sched;
    ff_state r;
    decode_begin(f, &r);
    if (f->kr->begin(f->x->kv, f->seqs, r.n) != PB_OK) return PB_OK;   /* an ordinary step next */
    const pb_group *head = pb_sched_waiting_peek(s);
    int32_t k = 0;   /* steps replayed; step r.left produces a group's last token: the last */
    ff_next next = FF_NEXT;
    while (next == FF_NEXT && k <= r.left && pb_engine_step_start(f->e)) {
        if (pb_sched_waiting_peek(s) != head) break;   /* the policy must look at it */
        pb_status st = decode_step(f, &r, k, &next);
        if (st != PB_OK) return st;
        if (next == FF_POLICY) return policy_completes(f, &r, k, again);
        k++;
        head = pb_sched_waiting_peek(s);   /* a preempted group may lead now */
    }
    decode_end(f, &r, k);
    *again = k > 0 && steady_running(f);
    return f->x->p->check_every_step && k > 0 ? pb_engine_check(f->e) : PB_OK;
}

/* ---- beam replay ---- */

/* Room for n groups in the replay's arrays. */
static void beam_reserve(pb_fastfwd *f, int32_t n) {
    if (f->cap_groups >= n) return;
    f->cap_groups = PB_MAX(n, 2 * f->cap_groups);
    f->groups = pb_xrealloc(f->groups, (size_t)f->cap_groups * sizeof *f->groups);
    f->beams = pb_xrealloc(f->beams, (size_t)f->cap_groups * sizeof *f->beams);
}

/* Group g is the replay's group i from replayed step k0 on: its beams' scores, its
   contexts in the sums (kv_len len - 1 before step k0's appends). */
static void beam_track(pb_fastfwd *f, ff_state *r, int32_t i, pb_group *g, int32_t k0) {
    ff_beams *b = &f->beams[i];
    for (int32_t e = 0; e < g->n_seqs && g->beam_width > 1; e++) {   /* advance sorts them */
        b->cum[e] = g->seqs[e]->cum_logprob;
        b->order[e] = e;
    }
    b->k0 = k0;
    f->groups[i] = g;
    ff_count(f, r, g->len - 1, k0, g->n_seqs);
}

/* The replay's groups [0..n): their sequences (r->n), the replayed step producing the
   first of their last tokens (r->left) and the candidates they want (as an ordinary
   step's batch). */
static void beam_shape(const pb_fastfwd *f, int32_t n, ff_state *r, int32_t *top) {
    r->n = 0, r->left = INT32_MAX, *top = 1;
    for (int32_t i = 0; i < n; i++) {
        const pb_group *g = f->groups[i];
        r->n += g->n_seqs;
        r->left = PB_MIN(r->left, f->beams[i].k0 + g->output_len - g->n_generated - 1);
        if (g->beam_width > 1) *top = PB_MAX(*top, 2 * g->beam_width);
    }
}

/* Group g, replayed k steps, up to date: its beams' scores, lengths, token time. */
static void beam_catch_up(pb_group *g, const ff_beams *b, int32_t k, double last_token) {
    for (int32_t m = 0; m < g->n_seqs && g->beam_width > 1; m++)
        g->seqs[b->order[m]]->cum_logprob = b->cum[m];   /* pb_seq_advance's sums */
    catch_up(g, k, last_token);
}

/* Group i's selection after a replayed step.  Returns the blocks freed. */
static int32_t beam_select(pb_fastfwd *f, int32_t i) {
    pb_group *g = f->groups[i];
    ff_beams *b = &f->beams[i];
    int32_t parent[PB_MAX_TOP / 2];
    const pb_beam_table *t = f->x->p->beam_scores;
    if (t) pb_beam_table_advance(&g->rng, t, b->cum, b->order, g->n_seqs, parent);
    else pb_beam_synth_advance(&g->rng, b->cum, b->order, g->n_seqs, parent);   /* no token ids */
    return f->kr->beam_select(f->x->kv, i, parent);
}

/* After replayed step k, which produced some groups' last tokens: they leave the
   replay (up to date, out of the sums, their blocks freed by the manager) and finish,
   in running order; the others move down.  Returns how many remain. */
static int32_t beam_finish(pb_fastfwd *f, ff_state *r, int32_t n, int32_t k) {
    pb_group **gs = f->groups;
    int32_t w = 0;
    for (int32_t i = 0; i < n; i++) {
        pb_group *g = gs[i];
        int32_t steps = k - f->beams[i].k0;
        if (g->n_generated + steps < g->output_len) {
            gs[w] = g;
            if (w != i) f->beams[w] = f->beams[i];
            w++;
            continue;
        }
        beam_catch_up(g, &f->beams[i], steps, r->last_token);
        ff_count(f, r, g->len - 1, k, -g->n_seqs);
        f->kr->beam_free(f->x->kv, w);
        pb_sched_finish(f->x->sched, g, pb_engine_now(f->e));
    }
    return w;
}

/* May arrivals be admitted inside this beam replay (mixed steps)? */
static bool beam_mixes(pb_fastfwd *f) {
    pb_policy *p = f->x->policy;
    return f->x->sched->n_swapped == 0 && f->kr->beam_join && f->ps->decodes_first &&
           f->ps->decodes_first(p, f->x->sched);
}

/* A mixed step's admissions: the policy's schedule with the replayed groups [0..n)
   marked decoded (their decodes already in the batch's sums). */
static pb_status mixed_schedule(pb_fastfwd *f, int32_t n) {
    pb_policy *p = f->x->policy;
    for (int32_t i = 0; i < n; i++) f->groups[i]->in_batch = true;
    pb_status st = p->iface->schedule(p, f->x->sched);
    for (int32_t i = 0; i < n; i++) f->groups[i]->in_batch = false;
    f->mixed++;
    return st;
}

/* After a mixed step ran: the admitted groups' first tokens. */
static pb_status mixed_tokens(pb_fastfwd *f) {
    const pb_batch_builder *bb = f->x->batch;
    for (int32_t i = 0; i < bb->n_groups; i++) {
        pb_status st = pb_engine_group_token(f->e, bb->groups[i], false);
        if (st != PB_OK) return st;
    }
    return PB_OK;
}

/* The running groups after the replay's n join it from replayed step k on, if they
   are the running list's tail; false when not (or the manager cannot take one): the
   replay ends. */
static bool mixed_join(pb_fastfwd *f, ff_state *r, int32_t *n, int32_t k) {
    pb_sched *s = f->x->sched;
    pb_group *first = *n > 0 ? f->groups[*n - 1]->next : s->run_head;
    int32_t more = 0;
    for (pb_group *g = first; g; g = g->next) more++;
    if (*n + more != s->n_running) return false;
    beam_reserve(f, *n + more);
    for (pb_group *g = first; g; g = g->next) {
        if (f->kr->beam_join(f->x->kv, g) != PB_OK) return false;
        beam_track(f, r, (*n)++, g, k);
    }
    return true;
}

static pb_status beam_replay(pb_fastfwd *f, bool *again) {
    const pb_engine_parts *x = f->x;
    pb_sched *s = x->sched;
    int32_t n = s->n_running, top;
    ff_state r;
    ff_clear(f, &r, 0);
    beam_reserve(f, n);
    int32_t i = 0;
    for (pb_group *g = s->run_head; g; g = g->next) beam_track(f, &r, i++, g, 0);
    PB_ASSERT(i == n);
    beam_shape(f, n, &r, &top);
    if (f->kr->beam_begin(x->kv, f->groups, n) != PB_OK) return PB_OK;   /* an ordinary step next */
    const pb_group *head = pb_sched_waiting_peek(s);
    bool mixes = beam_mixes(f);   /* nothing swaps in or out inside the replay */
    pb_kv_usage u;
    f->kr->usage(x->kv, &u);
    int64_t free_held = u.gpu_blocks_free;   /* when the policy last answered steady */
    int32_t k = 0;
    bool stuck = false;
    while (k <= r.left && pb_engine_step_start(f->e)) {
        bool mixed = pb_sched_waiting_peek(s) != head;   /* the policy must look at it */
        if (mixed && !mixes) break;
        int32_t copies = f->kr->beam_step(x->kv);
        if ((stuck = copies < 0)) break;   /* a group cannot append: the ordinary step preempts */
        ff_advance(f, &r, k);
        pb_batch_add_decode_sums(x->batch, n, r.n, r.ctx, r.blocks, top, copies);
        pb_status st = mixed ? mixed_schedule(f, n) : PB_OK;
        int64_t free_now = 0;   /* after the appends, then the frees */
        if (st == PB_OK) st = ff_execute(f, n, &r.last_token, &free_now);
        if (st != PB_OK) return st;
        for (i = 0; i < n; i++)
            if (f->groups[i]->beam_width > 1) free_now += beam_select(f, i);
        k++;
        bool ask = mixed || free_now > free_held, finished = k == r.left + 1;   /* freed blocks: still held? */
        if (finished) {   /* last tokens: those groups finish, the running set shrinks */
            n = beam_finish(f, &r, n, k);
            ask = true;
        }
        if (mixed && (st = mixed_tokens(f)) != PB_OK) return st;
        if (finished || mixed) {   /* blocks freed besides the selections' */
            f->kr->usage(x->kv, &u);
            free_now = u.gpu_blocks_free;
        }
        if (ask) {   /* as after this step run as an ordinary one */
            if (!steady_running(f) || (mixed && !mixed_join(f, &r, &n, k))) break;
            if (mixed || finished) beam_shape(f, n, &r, &top);
            free_held = free_now;
            head = pb_sched_waiting_peek(s);
        }
    }
    f->kr->beam_end(x->kv);
    if (k == 0) return PB_OK;
    for (i = 0; i < n; i++) beam_catch_up(f->groups[i], &f->beams[i], k - f->beams[i].k0, r.last_token);
    f->steps += k;
    *again = !stuck && steady_running(f);
    return x->p->check_every_step ? pb_engine_check(f->e) : PB_OK;
}

/* ---- the entry point ---- */

pb_status pb_fastfwd_run(pb_fastfwd *f) {
    bool again = steady_next(f);
    pb_status st = PB_OK;
    while (again && st == PB_OK) {
        again = false;
        bool beams = false;
        for (const pb_group *g = f->x->sched->run_head; g && !beams; g = g->next) beams = g->n_seqs > 1;
        st = beams ? beam_replay(f, &again) : decode_replay(f, &again);
    }
    return st;
}
