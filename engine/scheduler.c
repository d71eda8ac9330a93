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

/* ---- waiting queue ----
 * The order is (wait_key, arrival_s, id), a strict total order (ids are unique), and
 * every entry carries copies of the three keys (no group is read to compare).  Groups
 * that come in order -- arrivals at the back, FCFS recompute preemptions at the
 * front -- go to a sorted ring buffer (the deque), the others to a binary heap; the
 * head is the smaller of the deque's front and the heap's top, so the pop sequence
 * is that of one priority queue.  g->heap_idx locates the entry: i >= 0 the heap's
 * slot i, -2 - i the ring's slot i, -1 not waiting.  A group removed from inside the
 * deque leaves a tombstone (g NULL, keys kept): the ends are trimmed at once, and the
 * ring is repacked when the tombstones outnumber the live entries (amortized O(1)).
 * n_waiting == 0 means empty whatever the other fields hold (a caller may zero only
 * n_waiting): the next push resets them. */

static inline bool wait_before(const pb_wait_entry *a, const pb_wait_entry *b) {
    if (a->key != b->key) return a->key < b->key;
    if (a->arrival_s != b->arrival_s) return a->arrival_s < b->arrival_s;
    return a->id < b->id;
}

static void heap_set(pb_sched *s, int32_t i, pb_wait_entry e) {
    s->heap[i] = e;
    e.g->heap_idx = i;
}

static void heap_up(pb_sched *s, int32_t i) {
    pb_wait_entry e = s->heap[i];
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (!wait_before(&e, &s->heap[p])) break;
        heap_set(s, i, s->heap[p]);
        i = p;
    }
    heap_set(s, i, e);
}

static void heap_down(pb_sched *s, int32_t i) {
    pb_wait_entry e = s->heap[i];
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= s->n_heap) break;
        if (c + 1 < s->n_heap && wait_before(&s->heap[c + 1], &s->heap[c])) c++;
        if (!wait_before(&s->heap[c], &e)) break;
        heap_set(s, i, s->heap[c]);
        i = c;
    }
    heap_set(s, i, e);
}

static void heap_push(pb_sched *s, pb_wait_entry e) {
    if (s->n_heap == s->cap_heap) {
        s->cap_heap = s->cap_heap ? 2 * s->cap_heap : 256;
        s->heap = pb_xrealloc(s->heap, (size_t)s->cap_heap * sizeof *s->heap);
    }
    heap_set(s, s->n_heap++, e);
    heap_up(s, s->n_heap - 1);
}

static void heap_remove(pb_sched *s, int32_t i) {
    pb_wait_entry last = s->heap[--s->n_heap];
    if (i < s->n_heap) {
        heap_set(s, i, last);
        heap_up(s, i);
        heap_down(s, last.g->heap_idx);
    }
}

/* deque slot k (0 = front) */
static inline int32_t dq_slot(const pb_sched *s, int32_t k) { return (s->dq_head + k) & (s->cap_dq - 1); }

static void dq_set(pb_sched *s, int32_t i, pb_wait_entry e) {
    s->dq[i] = e;
    e.g->heap_idx = -2 - i;
}

/* The live entries, in order, into a new ring of cap slots (a power of two). */
static void dq_repack(pb_sched *s, int32_t cap) {
    pb_wait_entry *old = s->dq;
    int32_t head = s->dq_head, len = s->dq_len, mask = s->cap_dq - 1;
    s->dq = pb_xmalloc((size_t)cap * sizeof *s->dq);
    s->cap_dq = cap;
    s->dq_head = s->dq_len = 0;
    for (int32_t k = 0; k < len; k++) {
        pb_wait_entry e = old[(head + k) & mask];
        if (e.g) dq_set(s, s->dq_len++, e);
    }
    free(old);
}

static void dq_push(pb_sched *s, pb_wait_entry e, bool front) {
    if (s->dq_len == s->cap_dq) dq_repack(s, s->cap_dq ? 2 * s->cap_dq : 256);
    if (front) s->dq_head = dq_slot(s, s->cap_dq - 1);   /* one slot before the front */
    s->dq_len++;
    s->dq_live++;
    dq_set(s, front ? s->dq_head : dq_slot(s, s->dq_len - 1), e);
}

static void dq_remove(pb_sched *s, int32_t i) {
    s->dq[i].g = NULL;
    s->dq_live--;
    while (s->dq_len > 0 && !s->dq[s->dq_head].g) {
        s->dq_head = dq_slot(s, 1);
        s->dq_len--;
    }
    while (s->dq_len > 0 && !s->dq[dq_slot(s, s->dq_len - 1)].g) s->dq_len--;
    if (s->dq_len - s->dq_live > s->dq_live) dq_repack(s, s->cap_dq);
}

void pb_sched_waiting_push(pb_sched *s, pb_group *g) {
    pb_wait_entry e = {.key = g->wait_key, .arrival_s = g->arrival_s, .id = g->id, .g = g};
    if (s->n_waiting++ == 0) s->n_heap = s->dq_head = s->dq_len = s->dq_live = 0;
    if (s->dq_len == 0 || !wait_before(&e, &s->dq[dq_slot(s, s->dq_len - 1)])) dq_push(s, e, false);
    else if (wait_before(&e, &s->dq[s->dq_head])) dq_push(s, e, true);
    else heap_push(s, e);
}

void pb_sched_waiting_remove(pb_sched *s, pb_group *g) {
    int32_t i = g->heap_idx;
    PB_ASSERT(s->n_waiting > 0 && i != -1);
    if (i >= 0) {
        PB_ASSERT(i < s->n_heap && s->heap[i].g == g);
        heap_remove(s, i);
    } else {
        PB_ASSERT(-2 - i < s->cap_dq && s->dq[-2 - i].g == g);
        dq_remove(s, -2 - i);
    }
    g->heap_idx = -1;
    s->n_waiting--;
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
    pb_sched_waiting_push(s, g);
}

/* ---- lifecycle ---- */

void pb_sched_free(pb_sched *s) {
    free(s->heap);
    free(s->dq);
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
    free(s->ff_groups);
    free(s->ff_beams);
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
pb_group *pb_sched_waiting_peek(pb_sched *s) {
    if (s->n_waiting == 0) return NULL;
    if (s->dq_len == 0) return s->heap[0].g;
    const pb_wait_entry *f = &s->dq[s->dq_head];
    return s->n_heap > 0 && wait_before(&s->heap[0], f) ? s->heap[0].g : f->g;
}
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
    pb_sched_waiting_remove(s, g);
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
        pb_sched_waiting_remove(s, g);
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

/* the entry of waiting group e->g at slot i (heap_idx encoding) */
static bool wait_entry_ok(const pb_wait_entry *e, int32_t idx) {
    const pb_group *g = e->g;
    return g->heap_idx == idx && g->state == PB_GROUP_WAITING && e->key == g->wait_key &&
           e->arrival_s == g->arrival_s && e->id == g->id;
}

pb_status pb_sched_waiting_check(const pb_sched *s) {
    if (s->n_waiting == 0) return PB_OK;   /* empty, whatever the fields hold */
    int32_t live = 0;
    for (int32_t k = 0; k < s->dq_len && k < s->cap_dq; k++) live += s->dq[dq_slot(s, k)].g != NULL;
    if (s->n_heap < 0 || s->n_heap > s->cap_heap || s->dq_len > s->cap_dq || (s->cap_dq & (s->cap_dq - 1)) ||
        live != s->dq_live || s->n_heap + live != s->n_waiting || s->dq_len - live > live) {
        pb_log_error("sched: waiting %d = heap %d + deque %d live (%d counted) of %d slots, ring of %d",
                     s->n_waiting, s->n_heap, s->dq_live, live, s->dq_len, s->cap_dq);
        return PB_ERR_INVALID;
    }
    for (int32_t i = 0; i < s->n_heap; i++)
        if (!wait_entry_ok(&s->heap[i], i) || (i > 0 && wait_before(&s->heap[i], &s->heap[(i - 1) / 2]))) {
            pb_log_error("sched: waiting heap broken at %d", i);
            return PB_ERR_INVALID;
        }
    for (int32_t k = 0; k < s->dq_len; k++) {   /* sorted, tombstones inside only */
        int32_t i = dq_slot(s, k);
        const pb_wait_entry *e = &s->dq[i];
        if ((e->g ? !wait_entry_ok(e, -2 - i) : k == 0 || k == s->dq_len - 1) ||
            (k > 0 && !wait_before(&s->dq[dq_slot(s, k - 1)], e))) {
            pb_log_error("sched: waiting deque broken at %d of %d", k, s->dq_len);
            return PB_ERR_INVALID;
        }
    }
    return PB_OK;
}

pb_status pb_sched_check(pb_sched *s) {
    pb_status st = pb_sched_waiting_check(s);
    if (st != PB_OK) return st;
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
    return PB_OK;
}
