/* groups.h -- ENGINE-INTERNAL: a run's groups and their sequences.
 *
 * A request's group exists from its arrival until the step after it is done
 * (finished or rejected): it is LIVE from pb_groups_arrive, DEAD from pb_groups_done
 * (a policy may still hold it during the step that ended it), and recycled by the
 * next pb_groups_recycle, its struct reused for a later arrival.  Memory is
 * O(live requests).  Sequences come from one pool; with stored tokens an arrival's
 * prompt gets its synthetic token ids (trace.h token identity).  The engine and the
 * scheduler call these functions; only groups.c writes the fields. */
#ifndef PB_GROUPS_H
#define PB_GROUPS_H

#include <stdbool.h>
#include <stdint.h>

#include "kv_manager.h"
#include "sequence.h"
#include "trace.h"

typedef struct {
    pb_group **live;              /* arrived, not recycled; g->live_idx is the index   */
    pb_group **dead;              /* done since the last recycling                      */
    pb_group **spare;             /* recycled structs for the next arrivals             */
    int32_t n_live, cap_live, n_dead, cap_dead, n_spare, cap_spare;
    int64_t n_recycled;           /* groups recycled this run                           */
    pb_seq_pool *pool;            /* NULL between runs                                  */
    int32_t max_model_len, vocab_size;
    uint64_t seed;
    int32_t *prompt_tok;          /* scratch for synthetic prompt tokens                */
    int32_t cap_prompt_tok;
} pb_groups;

/* An empty store for a run: groups capped at max_model_len, seeded streams, token
   ids in [0, vocab_size) when store_tokens. */
void pb_groups_begin(pb_groups *G, int32_t max_model_len, uint64_t seed, int32_t vocab_size, bool store_tokens);
/* Every group and sequence freed (KV must be released already). */
void pb_groups_end(pb_groups *G);
void pb_groups_free(pb_groups *G);   /* the store's own buffers, after pb_groups_end */
/* Request r, id `id`, arrives: its group (PENDING) with the prompt sequence. */
pb_group *pb_groups_arrive(pb_groups *G, int64_t id, const pb_request *r);
/* Every sequence of g freed, its KV released first when it has any. */
void pb_groups_release(pb_groups *G, pb_group *g, pb_kv_manager *kv);
/* g is done: recycled by the next pb_groups_recycle. */
void pb_groups_done(pb_groups *G, pb_group *g);
void pb_groups_recycle_dead(pb_groups *G);
static inline void pb_groups_recycle(pb_groups *G) {
    if (G->n_dead > 0) pb_groups_recycle_dead(G);
}
/* The live groups in request order (ids ascending). */
void pb_groups_sort(pb_groups *G);
/* The live group of request id, or NULL.  O(live groups). */
const pb_group *pb_groups_find(const pb_groups *G, int64_t id);

#endif /* PB_GROUPS_H */
