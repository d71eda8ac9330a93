/* groups.c -- a run's groups and sequences (see groups.h). */
#include "groups.h"

#include <stdlib.h>
#include <string.h>

static void ptr_push(pb_group ***v, int32_t *n, int32_t *cap, pb_group *g) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *v = pb_xrealloc(*v, (size_t)*cap * sizeof **v);
    }
    (*v)[(*n)++] = g;
}

void pb_groups_begin(pb_groups *G, int32_t max_model_len, uint64_t seed, int32_t vocab_size, bool store_tokens) {
    G->n_live = G->n_dead = 0;
    G->n_recycled = 0;
    G->max_model_len = max_model_len;
    G->seed = seed;
    G->vocab_size = vocab_size;
    G->pool = pb_seq_pool_create(store_tokens);
}

void pb_groups_recycle_dead(pb_groups *G) {
    for (int32_t i = 0; i < G->n_dead; i++) {
        pb_group *g = G->dead[i];
        pb_group *last = G->live[--G->n_live];
        G->live[g->live_idx] = last;
        last->live_idx = g->live_idx;
        ptr_push(&G->spare, &G->n_spare, &G->cap_spare, g);
    }
    G->n_recycled += G->n_dead;
    G->n_dead = 0;
}

void pb_groups_end(pb_groups *G) {
    pb_groups_recycle(G);
    for (int32_t i = 0; i < G->n_live; i++) ptr_push(&G->spare, &G->n_spare, &G->cap_spare, G->live[i]);
    for (int32_t i = 0; i < G->n_spare; i++) {
        pb_group_release(G->spare[i]);
        free(G->spare[i]);
    }
    G->n_live = G->n_spare = 0;
    pb_seq_pool_destroy(G->pool);
    G->pool = NULL;
}

void pb_groups_free(pb_groups *G) {
    free(G->live);
    free(G->dead);
    free(G->spare);
    free(G->prompt_tok);
    memset(G, 0, sizeof *G);
}

/* With stored tokens, q's prompt: token i is the trace key of (request, i) (trace.h:
   the same key, the same token, e.g. shared prefixes, a chatbot turn's history). */
static void synth_prompt(pb_groups *G, pb_group *g, pb_seq *q) {
    if (!pb_seq_pool_stores_tokens(G->pool)) return;
    if (G->cap_prompt_tok < g->prompt_len) {
        G->cap_prompt_tok = g->prompt_len;
        G->prompt_tok = pb_xrealloc(G->prompt_tok, (size_t)g->prompt_len * sizeof(int32_t));
    }
    uint64_t vocab = (uint64_t)PB_MAX(G->vocab_size, 1);
    for (int32_t i = 0; i < g->prompt_len; i++)
        G->prompt_tok[i] = (int32_t)(pb_token_key(g->req, i, G->seed) % vocab);
    pb_seq_set_tokens(G->pool, q, G->prompt_tok, g->prompt_len);
}

pb_group *pb_groups_arrive(pb_groups *G, int64_t id, const pb_request *r) {
    pb_group *g;
    if (G->n_spare > 0) {
        g = G->spare[--G->n_spare];
        pb_group_reuse(g, (int32_t)id, r, G->max_model_len, G->seed);
    } else {
        g = pb_xmalloc(sizeof *g);
        pb_group_init(g, (int32_t)id, r, G->max_model_len, G->seed);
    }
    g->live_idx = G->n_live;
    ptr_push(&G->live, &G->n_live, &G->cap_live, g);
    synth_prompt(G, g, pb_seq_new(G->pool, g));
    return g;
}

void pb_groups_release(pb_groups *G, pb_group *g, pb_kv_manager *kv) {
    while (g->n_seqs > 0) {
        pb_seq *q = g->seqs[g->n_seqs - 1];
        if (q->kv) pb_kv_free(kv, q);
        pb_seq_delete(G->pool, q);
    }
}

void pb_groups_done(pb_groups *G, pb_group *g) { ptr_push(&G->dead, &G->n_dead, &G->cap_dead, g); }

static int id_cmp(const void *a, const void *b) {
    int32_t x = (*(pb_group *const *)a)->id, y = (*(pb_group *const *)b)->id;
    return (x > y) - (x < y);
}

void pb_groups_sort(pb_groups *G) {
    if (G->n_live > 1) qsort(G->live, (size_t)G->n_live, sizeof *G->live, id_cmp);
    for (int32_t i = 0; i < G->n_live; i++) G->live[i]->live_idx = i;
}

const pb_group *pb_groups_find(const pb_groups *G, int64_t id) {
    for (int32_t i = 0; i < G->n_live; i++)
        if (G->live[i]->id == id) return G->live[i];
    return NULL;
}
