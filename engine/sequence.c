/* sequence.c -- sequences and groups (see sequence.h). */
#include "sequence.h"

#include <stdlib.h>
#include <string.h>

#define SEQ_CHUNK 256

struct pb_seq_pool {
    bool store_tokens;
    pb_seq **chunks;          /* stable storage, SEQ_CHUNK seqs per chunk           */
    int32_t n_chunks, cap_chunks;
    pb_seq **free_list;       /* recycled seqs                                      */
    int32_t n_free, cap_free;
    int32_t next_id;
    int32_t live;
};

const char *pb_group_state_str(pb_group_state s) {
    switch (s) {
    case PB_GROUP_PENDING: return "pending";
    case PB_GROUP_WAITING: return "waiting";
    case PB_GROUP_RUNNING: return "running";
    case PB_GROUP_SWAPPED: return "swapped";
    case PB_GROUP_FINISHED: return "finished";
    case PB_GROUP_REJECTED: return "rejected";
    }
    return "?";
}

void pb_group_shape(pb_group *g, const pb_request *r, int32_t max_len) {
    g->req = r;
    g->prompt_len = r->prompt_len;
    g->output_len = r->output_len;
    if (max_len > 0 && g->prompt_len < max_len && (int64_t)g->prompt_len + g->output_len > max_len)
        g->output_len = max_len - g->prompt_len;   /* vLLM: FINISHED_LENGTH_CAPPED */
    g->beam_width = r->beam_width > 1 ? r->beam_width : 1;
    g->n = g->beam_width > 1 ? 1 : (r->n > 1 ? r->n : 1);
    g->max_seqs = g->beam_width > 1 ? g->beam_width : g->n;
    g->prefix_id = r->prefix_id >= 0 && r->prefix_len > 0 ? r->prefix_id : -1;
    g->prefix_len = g->prefix_id >= 0 ? PB_MIN(r->prefix_len, r->prompt_len) : 0;
    g->max_len = max_len;
    g->arrival_s = r->arrival_s;
}

void pb_group_init(pb_group *g, int32_t id, const pb_request *r, int32_t max_len, uint64_t seed) {
    memset(g, 0, sizeof *g);
    g->id = id;
    g->state = PB_GROUP_PENDING;
    pb_group_shape(g, r, max_len);
    g->len = g->prompt_len;
    g->heap_idx = -1;
    g->preempted_step = -1;
    g->admitted_step = -1;
    g->first_token_s = g->last_token_s = -1;
    g->finish_s = -1;
    pb_rng_seed(&g->rng, seed, 0x5e9000ULL + (uint64_t)id);
}

void pb_group_reuse(pb_group *g, int32_t id, const pb_request *r, int32_t max_len, uint64_t seed) {
    PB_ASSERT(g->n_seqs == 0);
    pb_seq **seqs = g->seqs;
    int32_t cap = g->cap_seqs;
    pb_group_init(g, id, r, max_len, seed);
    g->seqs = seqs;
    g->cap_seqs = cap;
}

void pb_group_release(pb_group *g) {
    free(g->seqs);
    g->seqs = NULL;
    g->n_seqs = g->cap_seqs = 0;
}

pb_seq_pool *pb_seq_pool_create(bool store_tokens) {
    pb_seq_pool *p = pb_xcalloc(1, sizeof *p);
    p->store_tokens = store_tokens;
    return p;
}

void pb_seq_pool_destroy(pb_seq_pool *p) {
    if (!p) return;
    for (int32_t c = 0; c < p->n_chunks; c++) {
        for (int32_t i = 0; i < SEQ_CHUNK; i++) free(p->chunks[c][i].tokens);
        free(p->chunks[c]);
    }
    free(p->chunks);
    free(p->free_list);
    free(p);
}

bool pb_seq_pool_stores_tokens(const pb_seq_pool *p) { return p->store_tokens; }
int32_t pb_seq_pool_live(const pb_seq_pool *p) { return p->live; }

static pb_seq *seq_take(pb_seq_pool *p) {
    if (p->n_free == 0) {
        if (p->n_chunks == p->cap_chunks) {
            p->cap_chunks = p->cap_chunks ? 2 * p->cap_chunks : 8;
            p->chunks = pb_xrealloc(p->chunks, (size_t)p->cap_chunks * sizeof *p->chunks);
        }
        pb_seq *c = pb_xcalloc(SEQ_CHUNK, sizeof *c);
        p->chunks[p->n_chunks++] = c;
        if (p->cap_free < SEQ_CHUNK * p->n_chunks) {
            p->cap_free = SEQ_CHUNK * p->n_chunks;
            p->free_list = pb_xrealloc(p->free_list, (size_t)p->cap_free * sizeof *p->free_list);
        }
        for (int32_t i = SEQ_CHUNK - 1; i >= 0; i--) p->free_list[p->n_free++] = &c[i];
    }
    pb_seq *s = p->free_list[--p->n_free];
    int32_t *tok = s->tokens;
    int32_t cap = s->tokens_cap;
    memset(s, 0, sizeof *s);
    s->tokens = tok;            /* keep the buffer for reuse */
    s->tokens_cap = cap;
    s->id = p->next_id++;
    s->batch_idx = -1;
    s->parent_id = -1;
    p->live++;
    return s;
}

static void group_push(pb_group *g, pb_seq *s) {
    if (g->n_seqs == g->cap_seqs) {
        g->cap_seqs = g->cap_seqs ? 2 * g->cap_seqs : PB_MAX(2, 2 * g->max_seqs);
        g->seqs = pb_xrealloc(g->seqs, (size_t)g->cap_seqs * sizeof *g->seqs);
    }
    s->idx = g->n_seqs;
    g->seqs[g->n_seqs++] = s;
    s->group = g;
}

static void tokens_reserve(pb_seq *s, int32_t n) {
    if (s->tokens_cap >= n) return;
    int32_t cap = s->tokens_cap ? s->tokens_cap : 64;
    while (cap < n) cap *= 2;
    s->tokens = pb_xrealloc(s->tokens, (size_t)cap * sizeof(int32_t));
    s->tokens_cap = cap;
}

pb_seq *pb_seq_new(pb_seq_pool *p, pb_group *g) {
    pb_seq *s = seq_take(p);
    s->len = g->len;
    s->n_generated = g->n_generated;
    group_push(g, s);
    return s;
}

pb_seq *pb_seq_clone(pb_seq_pool *p, const pb_seq *parent) {
    pb_seq *s = seq_take(p);
    s->len = parent->len;
    s->n_generated = parent->n_generated;
    s->n_computed = parent->n_computed;
    s->cum_logprob = parent->cum_logprob;
    s->parent_id = parent->id;
    if (p->store_tokens && parent->tokens) {
        tokens_reserve(s, parent->len);
        memcpy(s->tokens, parent->tokens, (size_t)parent->len * sizeof(int32_t));
    }
    group_push(parent->group, s);
    return s;
}

void pb_seq_reclone(pb_seq_pool *p, pb_seq *s, const pb_seq *parent) {
    PB_ASSERT(s != parent && s->group == parent->group);
    s->id = p->next_id++;
    s->len = parent->len;
    s->n_generated = parent->n_generated;
    s->n_computed = parent->n_computed;
    s->cum_logprob = parent->cum_logprob;
    s->parent_id = parent->id;
    s->batch_idx = -1;
    if (p->store_tokens && parent->tokens) {
        tokens_reserve(s, parent->len);
        memcpy(s->tokens, parent->tokens, (size_t)parent->len * sizeof(int32_t));
    }
}

void pb_group_set_order(pb_group *g, pb_seq *const *order) {
    for (int32_t i = 0; i < g->n_seqs; i++) {
        PB_ASSERT(order[i]->group == g);
        g->seqs[i] = order[i];
        order[i]->idx = i;
    }
}

void pb_seq_delete(pb_seq_pool *p, pb_seq *s) {
    pb_group *g = s->group;
    if (g) {
        PB_ASSERT(s->idx >= 0 && s->idx < g->n_seqs && g->seqs[s->idx] == s);
        pb_seq *last = g->seqs[--g->n_seqs];
        g->seqs[s->idx] = last;
        last->idx = s->idx;
    }
    s->group = NULL;
    s->kv = NULL;
    p->live--;
    p->free_list[p->n_free++] = s;
}

void pb_seq_append_token(pb_seq_pool *p, pb_seq *s, int32_t token, float logprob) {
    if (p->store_tokens) {
        tokens_reserve(s, s->len + 1);
        s->tokens[s->len] = token;
    }
    pb_seq_advance(s, logprob);
}

void pb_seq_set_tokens(pb_seq_pool *p, pb_seq *s, const int32_t *tok, int32_t n) {
    if (!p->store_tokens) return;
    tokens_reserve(s, n);
    memcpy(s->tokens, tok, (size_t)n * sizeof(int32_t));
}

pb_status pb_group_check(const pb_group *g) {
    for (int32_t i = 0; i < g->n_seqs; i++) {
        const pb_seq *s = g->seqs[i];
        if (s->idx != i || s->group != g) {
            pb_log_error("group %d: seq slot %d inconsistent (idx %d)", g->id, i, s->idx);
            return PB_ERR_INVALID;
        }
        if (s->len != g->len || s->n_generated != g->n_generated) {
            pb_log_error("group %d: seq %d len %d/%d gen %d/%d", g->id, s->id, s->len, g->len,
                         s->n_generated, g->n_generated);
            return PB_ERR_INVALID;
        }
    }
    if (g->len != g->prompt_len + g->n_generated) {
        pb_log_error("group %d: len %d != prompt %d + generated %d", g->id, g->len, g->prompt_len,
                     g->n_generated);
        return PB_ERR_INVALID;
    }
    /* a waiting group may not have its sequences yet (some policies create them at
       admission); running and swapped groups always have them */
    bool live = g->state == PB_GROUP_WAITING || g->state == PB_GROUP_RUNNING ||
                g->state == PB_GROUP_SWAPPED;
    if ((g->state == PB_GROUP_RUNNING || g->state == PB_GROUP_SWAPPED) && g->n_seqs < 1) {
        pb_log_error("group %d: %s with no sequences", g->id, pb_group_state_str(g->state));
        return PB_ERR_INVALID;
    }
    if (!live && g->n_seqs != 0) {
        pb_log_error("group %d: %s with %d sequences", g->id, pb_group_state_str(g->state), g->n_seqs);
        return PB_ERR_INVALID;
    }
    if (g->n_seqs > PB_MAX(g->max_seqs, 1)) {
        pb_log_error("group %d: %d sequences > max %d", g->id, g->n_seqs, g->max_seqs);
        return PB_ERR_INVALID;
    }
    if ((g->n_generated > 0) != (g->first_token_s >= 0)) {
        pb_log_error("group %d: %d tokens generated, first token time %g", g->id, g->n_generated,
                     g->first_token_s);
        return PB_ERR_INVALID;
    }
    if (g->prefill && (g->state != PB_GROUP_RUNNING || g->n_seqs != 1)) {
        pb_log_error("group %d: a prefill in progress while %s with %d sequences", g->id,
                     pb_group_state_str(g->state), g->n_seqs);
        return PB_ERR_INVALID;
    }
    for (int32_t i = 0; i < g->n_seqs; i++) {
        const pb_seq *s = g->seqs[i];
        bool ok;
        if (g->state == PB_GROUP_RUNNING && g->prefill)   /* mid-prefill */
            ok = s->kv_len == g->len && s->n_computed >= s->n_cached && s->n_computed < g->len;
        else if (g->state == PB_GROUP_RUNNING || g->state == PB_GROUP_SWAPPED)   /* decoding */
            ok = s->kv_len == g->len - 1 && s->n_computed == s->kv_len;
        else
            ok = s->n_computed == 0;
        if (!ok) {
            pb_log_error("group %d (%s%s): seq %d kv_len %d n_computed %d n_cached %d vs len %d", g->id,
                         pb_group_state_str(g->state), g->prefill ? ", mid-prefill" : "", s->id, s->kv_len,
                         s->n_computed, s->n_cached, g->len);
            return PB_ERR_INVALID;
        }
    }
    return PB_OK;
}
