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
    return m == PB_STEP_ALTERNATE ? "alternate" : "mixed";
}

bool pb_step_mode_parse(const char *s, pb_step_mode *out) {
    if (!s) return false;
    if (!strcmp(s, "mixed") || !strcmp(s, "v0.1")) *out = PB_STEP_MIXED;
    else if (!strcmp(s, "alternate") || !strcmp(s, "v0.2")) *out = PB_STEP_ALTERNATE;
    else return false;
    return true;
}

/* ---- ordering ---- */

static inline bool arrival_before(const pb_group *a, const pb_group *b) {
    if (a->arrival_s != b->arrival_s) return a->arrival_s < b->arrival_s;
    return a->id < b->id;
}

/* ---- waiting heap: entries carry the order's keys (no group is read to compare) ---- */

static inline bool heap_before(const pb_heap_entry *a, const pb_heap_entry *b) {
    if (a->key != b->key) return a->key < b->key;
    if (a->arrival_s != b->arrival_s) return a->arrival_s < b->arrival_s;
    return a->id < b->id;
}

static void heap_set(pb_sched *s, int32_t i, pb_heap_entry e) {
    s->heap[i] = e;
    e.g->heap_idx = i;
}

static void heap_up(pb_sched *s, int32_t i) {
    pb_heap_entry e = s->heap[i];
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (!heap_before(&e, &s->heap[p])) break;
        heap_set(s, i, s->heap[p]);
        i = p;
    }
    heap_set(s, i, e);
}

static void heap_down(pb_sched *s, int32_t i) {
    pb_heap_entry e = s->heap[i];
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= s->n_waiting) break;
        if (c + 1 < s->n_waiting && heap_before(&s->heap[c + 1], &s->heap[c])) c++;
        if (!heap_before(&s->heap[c], &e)) break;
        heap_set(s, i, s->heap[c]);
        i = c;
    }
    heap_set(s, i, e);
}

static void heap_push(pb_sched *s, pb_group *g) {
    if (s->n_waiting == s->cap_heap) {
        s->cap_heap = s->cap_heap ? 2 * s->cap_heap : 256;
        s->heap = pb_xrealloc(s->heap, (size_t)s->cap_heap * sizeof *s->heap);
    }
    heap_set(s, s->n_waiting++, (pb_heap_entry){.key = g->wait_key, .arrival_s = g->arrival_s, .id = g->id, .g = g});
    heap_up(s, s->n_waiting - 1);
}

static void heap_remove(pb_sched *s, pb_group *g) {
    int32_t i = g->heap_idx;
    PB_ASSERT(i >= 0 && i < s->n_waiting && s->heap[i].g == g);
    pb_heap_entry last = s->heap[--s->n_waiting];
    g->heap_idx = -1;
    if (last.g != g) {
        heap_set(s, i, last);
        heap_up(s, i);
        heap_down(s, last.g->heap_idx);
    }
}

/* ---- sorted lists ---- */

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

static void synth_prompt(pb_sched *s, pb_group *g, pb_seq *q);

void pb_sched_enqueue_waiting(pb_sched *s, pb_group *g) {
    if (g->n_seqs == 0) {   /* arrival: the prompt sequence */
        PB_ASSERT(g->state == PB_GROUP_PENDING);
        synth_prompt(s, g, pb_seq_new(s->pool, g));
    }
    g->wait_key = s->policy->iface->waiting_key ? s->policy->iface->waiting_key(s->policy, g)
                                                : g->arrival_s;
    g->state = PB_GROUP_WAITING;
    heap_push(s, g);
}

/* ---- lifecycle ---- */

void pb_sched_free(pb_sched *s) {
    free(s->heap);
    free(s->bseq);
    free(s->bseq_seq);
    free(s->bgroups);
    pb_pair_vec_free(&s->copies);
    pb_pair_vec_free(&s->swap_in);
    pb_pair_vec_free(&s->swap_out);
    free(s->cand);
    free(s->prompt_tok);
    free(s->ff_seqs);
    free(s->ff_phase);
}

void pb_sched_begin_step(pb_sched *s) {
    s->n_bseq = 0;
    s->n_bgroups = 0;
    s->b_prefill_tokens = 0;
    s->b_decode = 0;
    s->b_prefill_seqs = 0;
    s->b_prefill_max_len = 0;
    s->b_prefill_len_sum = 0;
    s->b_padded = false;
    s->b_n_top = 1;
    int32_t bs = s->kv->block_size;
    int32_t sh = 0;
    while (sh < 30 && (1 << sh) < bs) sh++;
    s->b_bs_shift = bs > 0 && (1 << sh) == bs ? sh : -1;
    pb_batch *b = &s->batch;
    b->has_sums = true;
    b->sum_new = b->decode_ctx = b->decode_blocks = b->prefill_pairs2 = b->prefill_cached = 0;
    b->n_sample = 0;
    pb_pair_vec_clear(&s->copies);
    pb_pair_vec_clear(&s->swap_in);
    pb_pair_vec_clear(&s->swap_out);
    s->n_preempted = 0;
    s->n_swapped_out_now = 0;
    s->n_swap_in_groups = 0;
    s->replayed = false;
}

void pb_sched_group_done(pb_sched *s, pb_group *g) {
    if (s->n_dead == s->cap_dead) {
        s->cap_dead = s->cap_dead ? 2 * s->cap_dead : 64;
        s->dead = pb_xrealloc(s->dead, (size_t)s->cap_dead * sizeof *s->dead);
    }
    s->dead[s->n_dead++] = g;
}

void pb_sched_release_group(pb_sched *s, pb_group *g) {
    while (g->n_seqs > 0) {
        pb_seq *q = g->seqs[g->n_seqs - 1];
        if (q->kv) pb_kv_free(s->kv, q);
        pb_seq_delete(s->pool, q);
    }
}

/* ---- batch ---- */

static void batch_reserve(pb_sched *s, int32_t extra) {
    if (s->n_bseq + extra <= s->cap_bseq) return;
    int32_t cap = s->cap_bseq ? s->cap_bseq : 256;
    while (cap < s->n_bseq + extra) cap *= 2;
    s->bseq = pb_xrealloc(s->bseq, (size_t)cap * sizeof *s->bseq);
    s->bseq_seq = pb_xrealloc(s->bseq_seq, (size_t)cap * sizeof *s->bseq_seq);
    s->cap_bseq = cap;
}

static void batch_add_group(pb_sched *s, pb_group *g) {
    g->in_batch = true;
    if (s->n_bgroups == s->cap_bgroups) {
        s->cap_bgroups = s->cap_bgroups ? 2 * s->cap_bgroups : 256;
        s->bgroups = pb_xrealloc(s->bgroups, (size_t)s->cap_bgroups * sizeof *s->bgroups);
    }
    s->bgroups[s->n_bgroups++] = g;
}

/* A prefill entry computes min(max_new, len - n_computed) tokens, a decode one. */
static void batch_add_seq(pb_sched *s, pb_seq *q, bool prefill, int32_t max_new) {
    pb_batch_seq *b = &s->bseq[s->n_bseq];
    const pb_group *g = q->group;
    b->seq_id = q->id;
    b->group_id = g->id;
    b->is_prefill = prefill;
    b->n_cached = q->n_computed;
    pb_batch *sum = &s->batch;
    if (prefill) {
        PB_ASSERT(q->kv_len == q->len && q->n_computed < q->len && max_new >= 1);
        b->n_new = PB_MIN(max_new, q->len - q->n_computed);
        s->b_prefill_tokens += b->n_new;
        s->b_prefill_seqs++;
        s->b_prefill_max_len = PB_MAX(s->b_prefill_max_len, q->n_computed + b->n_new);
        s->b_prefill_len_sum += q->n_computed + b->n_new;
        sum->prefill_pairs2 += (int64_t)b->n_new * (2 * (int64_t)b->n_cached + b->n_new + 1);
        sum->prefill_cached += b->n_cached;
    } else {
        PB_ASSERT(q->n_computed == q->kv_len - 1 && q->kv_len == q->len);
        b->n_new = 1;
        s->b_decode++;
    }
    b->context_len = b->n_cached + b->n_new;
    b->sample = b->context_len == q->len;
    sum->sum_new += b->n_new;
    sum->n_sample += b->sample;
    if (!prefill) {
        int32_t bs = s->kv->block_size;
        sum->decode_ctx += b->context_len;
        if (s->b_bs_shift >= 0) sum->decode_blocks += (b->context_len + bs - 1) >> s->b_bs_shift;
        else if (bs > 0) sum->decode_blocks += (b->context_len + bs - 1) / bs;
    }
    b->block_table = NULL;
    b->n_blocks = 0;
    b->kv_offset = 0;
    b->tokens = q->tokens;
    q->batch_idx = s->n_bseq;
    s->bseq_seq[s->n_bseq++] = q;
    int32_t top = g->beam_width > 1 ? 2 * g->beam_width
                  : (prefill && g->n_generated == 0 ? PB_MIN(g->n, PB_MAX_TOP) : 1);
    if (b->sample && top > s->b_n_top) s->b_n_top = top;
}


/* ---- what a policy reads ---- */

double pb_sched_now(const pb_sched *s) { return s->now; }
int64_t pb_sched_step(const pb_sched *s) { return s->step; }
pb_kv_manager *pb_sched_kv(pb_sched *s) { return s->kv; }
const pb_engine_params *pb_sched_params(const pb_sched *s) { return &s->p; }
pb_group *pb_sched_running_head(pb_sched *s) { return s->run_head; }
pb_group *pb_sched_running_tail(pb_sched *s) { return s->run_tail; }
int32_t pb_sched_n_running(const pb_sched *s) { return s->n_running; }
int32_t pb_sched_running_seqs(const pb_sched *s) { return s->running_seqs; }
pb_group *pb_sched_swapped_head(pb_sched *s) { return s->swp_head; }
pb_group *pb_sched_swapped_tail(pb_sched *s) { return s->swp_tail; }
int32_t pb_sched_n_swapped(const pb_sched *s) { return s->n_swapped; }
pb_group *pb_sched_waiting_peek(pb_sched *s) { return s->n_waiting ? s->heap[0].g : NULL; }
int32_t pb_sched_n_waiting(const pb_sched *s) { return s->n_waiting; }
int64_t pb_sched_batch_tokens(const pb_sched *s) { return s->b_prefill_tokens + s->b_decode; }
int32_t pb_sched_batch_prefill_tokens(const pb_sched *s) { return (int32_t)s->b_prefill_tokens; }
int32_t pb_sched_batch_groups(const pb_sched *s) { return s->n_bgroups; }
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
    if (g->prompt_len > s->p.max_model_len || g->beam_width > PB_MAX_TOP / 2) return PB_ALLOC_NEVER;
    if (!chunked && g->n_generated == 0 && g->prompt_len > s->p.max_num_batched_tokens)
        return PB_ALLOC_NEVER;
    /* more sequences (n samples, beam width) than a step may run: never, in every
       policy (vLLM would otherwise wait for it forever at the head of the queue) */
    if (g->max_seqs > s->p.max_num_seqs) return PB_ALLOC_NEVER;
    return pb_kv_can_allocate(s->kv, g);
}

static void synth_prompt(pb_sched *s, pb_group *g, pb_seq *q) {
    if (!pb_seq_pool_stores_tokens(s->pool)) return;
    if (s->cap_prompt_tok < g->prompt_len) {
        s->cap_prompt_tok = g->prompt_len;
        s->prompt_tok = pb_xrealloc(s->prompt_tok, (size_t)g->prompt_len * sizeof(int32_t));
    }
    /* token identity (trace.h): same key => same token (shared prefixes, a chatbot
       turn's history) */
    uint64_t vocab = (uint64_t)PB_MAX(s->p.vocab_size, 1);
    for (int32_t i = 0; i < g->prompt_len; i++)
        s->prompt_tok[i] = (int32_t)(pb_token_key(g->req, i, s->p.seed) % vocab);
    pb_seq_set_tokens(s->pool, q, s->prompt_tok, g->prompt_len);
}

pb_status pb_sched_admit(pb_sched *s, pb_group *g, int32_t max_tokens) {
    PB_ASSERT(g->state == PB_GROUP_WAITING && max_tokens >= 1 && (g->n_seqs == 1 || max_tokens >= g->len));
    int32_t nc0 = s->copies.n;
    pb_status st = pb_kv_allocate(s->kv, g, &s->copies);
    if (st != PB_OK) {
        s->copies.n = nc0;
        return st;
    }
    heap_remove(s, g);
    running_add(s, g);
    g->prefill = true;
    g->admitted_step = s->step;
    for (int32_t i = 0; i < g->n_seqs; i++) g->seqs[i]->n_computed = g->seqs[i]->n_cached;
    return pb_sched_prefill(s, g, max_tokens);
}

pb_status pb_sched_prefill(pb_sched *s, pb_group *g, int32_t max_tokens) {
    PB_ASSERT(g->state == PB_GROUP_RUNNING && g->prefill && !pb_sched_in_batch(g));
    batch_reserve(s, g->n_seqs);
    for (int32_t i = 0; i < g->n_seqs; i++) batch_add_seq(s, g->seqs[i], true, max_tokens);
    batch_add_group(s, g);
    return PB_OK;
}

void pb_sched_reject(pb_sched *s, pb_group *g) {
    if (g->state == PB_GROUP_WAITING) {
        heap_remove(s, g);
    } else if (g->state == PB_GROUP_SWAPPED) {
        list_remove(&s->swp_head, &s->swp_tail, g);
        s->n_swapped--;
    } else {
        PB_ASSERT(!"reject: group must be waiting or swapped");
    }
    pb_sched_release_group(s, g);
    g->state = PB_GROUP_REJECTED;
    s->n_done++;
    pb_req_metrics *r = pb_metrics_req(s->metrics, g->id);
    r->rejected = true;
    if (s->policy->iface->on_group_done) s->policy->iface->on_group_done(s->policy, s, g);
    pb_sched_group_done(s, g);
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
        pb_status st = pb_kv_append(s->kv, q, &s->copies);
        if (st != PB_OK) return st;
    }
    pb_sched_decoded(s, g);
    return PB_OK;
}

void pb_sched_decoded(pb_sched *s, pb_group *g) {
    PB_ASSERT(g->state == PB_GROUP_RUNNING && !g->prefill && !g->in_batch);
    batch_reserve(s, g->n_seqs);
    for (int32_t i = 0; i < g->n_seqs; i++) batch_add_seq(s, g->seqs[i], false, 1);
    batch_add_group(s, g);
}

pb_preempt_mode pb_sched_preempt(pb_sched *s, pb_group *g, pb_preempt_mode mode) {
    PB_ASSERT(g->state == PB_GROUP_RUNNING);
    for (int32_t i = 0; i < g->n_seqs; i++) PB_ASSERT(g->seqs[i]->batch_idx < 0);
    if (mode == PB_PREEMPT_AUTO) mode = g->max_seqs > 1 ? PB_PREEMPT_SWAP : PB_PREEMPT_RECOMPUTE;
    if (mode == PB_PREEMPT_SWAP && (g->prefill || !pb_kv_can_swap_out(s->kv, g))) mode = PB_PREEMPT_RECOMPUTE;
    pb_sched_running_remove(s, g);
    pb_req_metrics *r = pb_metrics_req(s->metrics, g->id);
    if (mode == PB_PREEMPT_SWAP) {
        int32_t n0 = s->swap_out.n;
        pb_status st = pb_kv_swap_out(s->kv, g, &s->swap_out);
        PB_ASSERT(st == PB_OK);
        int32_t moved = s->swap_out.n - n0;
        g->swap_blocks += moved;
        r->swap_blocks += moved;
        r->swap_bytes += (double)moved * s->kv->swap_unit_tokens * s->p.kv_bytes_per_token;
        g->state = PB_GROUP_SWAPPED;
        list_insert(&s->swp_head, &s->swp_tail, g);
        s->n_swapped++;
        g->n_swap_out++;
        r->n_swap++;
        s->n_swapped_out_now++;
    } else {
        for (int32_t i = 0; i < g->n_seqs; i++) {
            pb_kv_free(s->kv, g->seqs[i]);
            g->seqs[i]->n_cached = g->seqs[i]->n_computed = 0;
        }
        g->prefill = false;
        g->n_recompute++;
        r->n_recompute++;
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
    int32_t n0 = s->swap_in.n;
    pb_status st = pb_kv_swap_in(s->kv, g, &s->swap_in);
    if (st != PB_OK) return st;
    int32_t moved = s->swap_in.n - n0;
    pb_req_metrics *r = pb_metrics_req(s->metrics, g->id);
    g->swap_blocks += moved;
    r->swap_blocks += moved;
    r->swap_bytes += (double)moved * s->kv->swap_unit_tokens * s->p.kv_bytes_per_token;
    list_remove(&s->swp_head, &s->swp_tail, g);
    s->n_swapped--;
    running_add(s, g);
    g->admitted_step = s->step;
    s->n_swap_in_groups++;
    return pb_sched_decode(s, g);
}

/* ---- invariants ---- */

pb_status pb_sched_check(pb_sched *s) {
    int32_t n = 0, seqs = 0;
    for (pb_group *g = s->run_head; g; g = g->next, n++) {
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
    for (pb_group *g = s->swp_head; g; g = g->next, n++)
        if (g->state != PB_GROUP_SWAPPED) {
            pb_log_error("sched: swapped list holds %s group %d", pb_group_state_str(g->state), g->id);
            return PB_ERR_INVALID;
        }
    if (n != s->n_swapped) return PB_ERR_INVALID;
    if (s->b_padded) {   /* a padded prompt step: prompts only, within both budgets */
        int64_t padded = (int64_t)s->b_prefill_seqs * s->b_prefill_max_len;
        if (s->b_decode > 0 || s->b_prefill_seqs == 0 ||
            (s->n_bgroups > 1 && (padded > s->p.max_num_batched_tokens ||
                                  padded - s->b_prefill_len_sum > s->b_max_paddings))) {
            pb_log_error("sched: padded prompt step of %d rows x %d (%d decodes) breaks its budgets",
                         s->b_prefill_seqs, s->b_prefill_max_len, s->b_decode);
            return PB_ERR_INVALID;
        }
    }
    int64_t pf = 0, sum_new = 0, ctx = 0, blocks = 0, pairs2 = 0, cached = 0;
    int32_t n_sample = 0, bs = s->kv->block_size;
    for (int32_t i = 0; i < s->n_bseq; i++) {   /* the last batch's entries */
        const pb_batch_seq *b = &s->bseq[i];
        if (b->n_new < 1 || b->n_cached < 0 || b->context_len != b->n_cached + b->n_new ||
            (!b->is_prefill && (b->n_new != 1 || !b->sample))) {
            pb_log_error("sched: batch entry %d (seq %d): %s of %d new over %d cached, context %d, sample %d", i,
                         b->seq_id, b->is_prefill ? "prefill" : "decode", b->n_new, b->n_cached, b->context_len,
                         (int)b->sample);
            return PB_ERR_INVALID;
        }
        sum_new += b->n_new;
        n_sample += b->sample;
        if (b->is_prefill) {
            pf += b->n_new;
            pairs2 += (int64_t)b->n_new * (2 * (int64_t)b->n_cached + b->n_new + 1);
            cached += b->n_cached;
        } else {
            ctx += b->context_len;
            if (bs > 0) blocks += (b->context_len + bs - 1) / bs;
        }
    }
    if (pf != s->b_prefill_tokens) {
        pb_log_error("sched: batch prefill tokens %lld, entries sum to %lld", (long long)s->b_prefill_tokens,
                     (long long)pf);
        return PB_ERR_INVALID;
    }
    const pb_batch *bt = &s->batch;
    if (bt->has_sums && !s->replayed && (bt->sum_new != sum_new || bt->n_sample != n_sample || bt->decode_ctx != ctx ||
                         bt->decode_blocks != blocks || bt->prefill_pairs2 != pairs2 ||
                         bt->prefill_cached != cached)) {
        pb_log_error("sched: batch sums (new %lld, sampled %d, decode context %lld, blocks %lld, prefill "
                     "pairs2 %lld, cached %lld) differ from its entries' (%lld, %d, %lld, %lld, %lld, %lld)",
                     (long long)bt->sum_new, bt->n_sample, (long long)bt->decode_ctx,
                     (long long)bt->decode_blocks, (long long)bt->prefill_pairs2, (long long)bt->prefill_cached,
                     (long long)sum_new, n_sample, (long long)ctx, (long long)blocks, (long long)pairs2,
                     (long long)cached);
        return PB_ERR_INVALID;
    }
    for (int32_t i = 0; i < s->n_waiting; i++) {
        const pb_heap_entry *e = &s->heap[i];
        const pb_group *g = e->g;
        if (g->heap_idx != i || g->state != PB_GROUP_WAITING || e->key != g->wait_key ||
            e->arrival_s != g->arrival_s || e->id != g->id || (i > 0 && heap_before(e, &s->heap[(i - 1) / 2]))) {
            pb_log_error("sched: waiting heap broken at %d", i);
            return PB_ERR_INVALID;
        }
    }
    return PB_OK;
}
