/* sequence.h -- sequences and sequence groups: the unit the KV managers and the
 * scheduler policies see.
 *
 * A request of the trace becomes one SEQUENCE GROUP (pb_group).  A group starts with
 * ONE sequence holding the prompt (vLLM >= v0.1.5 and paper §5.2): after the prompt
 * step, parallel sampling forks n-1 more sequences from it, and beam search keeps
 * beam_width sequences chosen by a real beam-search selection each step.  All
 * sequences of a group are scheduled, preempted, swapped and finished together
 * (gang scheduling, paper §4.5), so the scheduling STATE lives on the group.
 *
 * Output lengths are forced (end-of-sequence ignored, as in the paper): every
 * sequence of a group generates exactly group->output_len tokens, so all sequences of
 * a group have the same length at every step and finish in the same step.
 *
 * Lengths (per sequence):
 *   len     tokens in the sequence (prompt + generated so far);
 *   kv_len  token slots the KV manager holds for it (maintained BY THE MANAGER:
 *           allocate sets it to len, append adds 1, free/swap keep it);
 *   n_computed  tokens whose KV has been computed (the engine's; n_cached at
 *           admission, then context_len after every step that ran the sequence).
 *   A prefill (first admission, or re-admission after recompute preemption)
 *   computes the KV of tokens [n_cached, len): in one step, or -- under a chunking
 *   policy (chunked prefill) -- in chunks [n_computed, n_computed + n_new) over
 *   several steps.  KV slots are allocated for all len tokens at admission.  Only
 *   the step that completes the prefill samples (the group's first token).
 *   Between steps a RUNNING sequence is either decoding, kv_len == n_computed ==
 *   len - 1 (the last sampled token's KV is written by the next step, whose append
 *   gives it a slot), or -- its group in the prefill phase (g->prefill) -- mid-prefill,
 *   kv_len == len > n_computed.
 *
 * Ownership: the engine creates and destroys groups and sequences (sequence.c);
 * KV managers may write only the fields marked (kv) and policies only (policy).
 * Everything else is read-only outside engine/. */
#ifndef PB_SEQUENCE_H
#define PB_SEQUENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "pb.h"
#include "rng.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PB_GROUP_PENDING = 0,  /* not arrived yet (clock < arrival_s)                     */
    PB_GROUP_WAITING,      /* in the waiting queue: no KV (new, or recompute-preempted)*/
    PB_GROUP_RUNNING,      /* KV on the GPU, decoding (or prefilling this step)        */
    PB_GROUP_SWAPPED,      /* KV in the CPU swap space                                 */
    PB_GROUP_FINISHED,     /* generated output_len tokens                              */
    PB_GROUP_REJECTED      /* can never fit (prompt too long / KV NEVER): dropped      */
} pb_group_state;

typedef struct pb_group pb_group;
typedef struct pb_seq pb_seq;

struct pb_seq {
    int32_t id;            /* engine-wide, unique over the run, never reused         */
    pb_group *group;
    int32_t len;           /* tokens: prompt + generated                              */
    int32_t n_generated;   /* output tokens so far (== group->n_generated)            */
    int32_t kv_len;        /* (kv) token slots held by the KV manager                 */
    int32_t n_cached;      /* (kv) set by allocate(): leading tokens whose KV is valid
                              before the prefill (cached shared prefix, or blocks a
                              sibling of the same group computes earlier in the same
                              batch -- executors run prefills in batch order)        */
    int32_t n_computed;    /* tokens whose KV is computed (see above)                 */
    double cum_logprob;    /* beam search score (sum of chosen tokens' logprobs; the
                              synthetic model's: its unrounded score, beam.h)         */
    int32_t *tokens;       /* token ids [len] when the engine stores tokens, else NULL*/
    int32_t tokens_cap;
    int32_t parent_id;     /* seq id it was forked from (-1 = the prompt sequence)    */
    int32_t batch_idx;     /* index in the current step's batch, -1 when not in it    */
    int32_t idx;           /* index in group->seqs                                    */
    void *kv;              /* (kv) manager-private per-sequence state                 */
    int64_t kv_aux;        /* (kv) manager-private scalar                              */
};

struct pb_group {
    int32_t id;            /* request index in the trace (0..n-1)                     */
    pb_group_state state;
    const pb_request *req; /* the trace row (read-only)                               */
    /* what a KV manager needs to know */
    int32_t prompt_len;    /* includes the shared prefix                              */
    int32_t output_len;    /* forced output length (the trace's, capped so that
                              prompt_len + output_len <= max_len)                     */
    int32_t n;             /* parallel samples (1 for beam search)                    */
    int32_t beam_width;    /* 1 = no beam search                                      */
    int32_t max_seqs;      /* sequences it will have while decoding: beam_width if
                              beam search, else n (vLLM get_max_num_running_seqs)    */
    int32_t prefix_id;     /* shared prefix, -1 = none                                */
    int32_t prefix_len;    /* tokens of the shared prefix (0 = none)                  */
    int32_t max_len;       /* the engine's max model length (prompt + output bound)    */
    double arrival_s;
    /* live sequences (all unfinished sequences of the group, same state as group);
       the prompt sequence is created when the request arrives (enters waiting) */
    pb_seq **seqs;
    int32_t n_seqs, cap_seqs;
    int32_t n_generated;   /* output tokens per sequence so far                       */
    int32_t len;           /* tokens per sequence (prompt_len + n_generated)          */
    /* scheduling (engine-owned; policies read) */
    pb_group *prev, *next; /* links in the running or swapped list                    */
    int32_t heap_idx;      /* entry in the waiting queue (scheduler.h), -1: not waiting */
    int32_t live_idx;      /* position in the engine's live groups                    */
    double wait_key;       /* policy priority key in the waiting queue (smaller first) */
    int64_t preempted_step;/* engine step index of the last preemption (-1 = never)   */
    int64_t admitted_step; /* step it was last admitted / swapped in                  */
    bool in_batch;         /* in the current step's batch (its sequences' batch_idx
                              >= 0); set when scheduled, cleared by post-processing  */
    bool prefill;          /* in the prefill phase: admitted, prefill not complete
                              (set at admission, cleared by the step that completes
                              it; only chunking policies leave it set between steps) */
    /* metrics */
    int32_t n_recompute;   /* times preempted by recompute                            */
    int32_t n_swap_out;    /* times preempted by swapping                             */
    int64_t swap_blocks;   /* blocks moved out + in (paged) / slots (contiguous)      */
    double first_token_s;  /* clock after the step that produced the first token       */
    double last_token_s;   /* ... the latest token (-1 before the first): ITL gaps    */
    double finish_s;       /* clock after the step that produced the last token        */
    pb_rng rng;            /* synthetic tokens / beam scores of this request           */
    void *kv;              /* (kv) manager-private per-group state                     */
    void *policy_data;     /* (policy) policy-private per-group state                  */
};

/* ---- engine-side helpers (sequence.c) ---- */

/* Initialise group g for request r with group id `id` (the engine uses the trace
 * index; state PENDING, no sequences).  max_len is the engine's max model length;
 * seed the engine seed (the group's rng stream is derived from id). */
void pb_group_init(pb_group *g, int32_t id, const pb_request *r, int32_t max_len, uint64_t seed);
/* pb_group_init for a group with no sequences left (a finished or rejected one,
 * recycled), keeping its sequence-pointer buffer. */
void pb_group_reuse(pb_group *g, int32_t id, const pb_request *r, int32_t max_len, uint64_t seed);
/* Only the fields request r determines (req, prompt_len, output_len capped to max_len,
 * n, beam_width, max_seqs, prefix_id/len, max_len, arrival_s); pb_group_init calls it.
 * The engine uses it to fill a request's metrics row before its group exists. */
void pb_group_shape(pb_group *g, const pb_request *r, int32_t max_len);
/* Free what pb_group_init and the seqs allocated (does not touch KV). */
void pb_group_release(pb_group *g);

/* Sequence pool: fixed-size structs recycled through a free list (no per-token
 * allocation).  store_tokens: keep token ids (real executors). */
typedef struct pb_seq_pool pb_seq_pool;
pb_seq_pool *pb_seq_pool_create(bool store_tokens);
void pb_seq_pool_destroy(pb_seq_pool *p);
/* New sequence in group g (appended to g->seqs): len = g->len, no KV, tokens empty. */
pb_seq *pb_seq_new(pb_seq_pool *p, pb_group *g);
/* New sequence as a copy of parent's logical state (len, n_generated, n_computed,
 * cum_logprob, tokens); NO KV: the caller forks it through the KV manager. */
pb_seq *pb_seq_clone(pb_seq_pool *p, const pb_seq *parent);
/* s, a sequence of parent's group, becomes a new sequence that copies parent's logical
 * state, as pb_seq_clone would make it (a fresh id, parent_id = parent's), in s's
 * struct and slot of g->seqs; its KV is the caller's (see kv refork).  Beam search
 * reuses a dropped beam for a child of a kept one this way. */
void pb_seq_reclone(pb_seq_pool *p, pb_seq *s, const pb_seq *parent);
/* Reorder g->seqs to order[0..g->n_seqs) (the same sequences). */
void pb_group_set_order(pb_group *g, pb_seq *const *order);
/* Remove s from its group (swap-remove in g->seqs) and recycle it.  Its KV must have
 * been freed already (s->kv == NULL is not required: managers may keep kv set). */
void pb_seq_delete(pb_seq_pool *p, pb_seq *s);
/* Append one generated token (len++, n_generated++, tokens when stored). */
void pb_seq_append_token(pb_seq_pool *p, pb_seq *s, int32_t token, float logprob);
/* The same in a pool that does not store tokens (the id is not kept): inline, for the
 * engine's per-token path. */
static inline void pb_seq_advance(pb_seq *s, float logprob) {
    s->len++;
    s->n_generated++;
    s->cum_logprob += logprob;
}
/* Set the first len tokens (prompt) when tokens are stored; no-op otherwise. */
void pb_seq_set_tokens(pb_seq_pool *p, pb_seq *s, const int32_t *tok, int32_t n);
bool pb_seq_pool_stores_tokens(const pb_seq_pool *p);
int32_t pb_seq_pool_live(const pb_seq_pool *p);     /* sequences not deleted */

/* Invariants of a group between steps: seqs[i]->idx == i, ->group == g, equal len ==
 * g->len, the lengths above by state (a mid-prefill group: RUNNING, one sequence,
 * kv_len == len > n_computed), a first token time exactly when a token exists. */
pb_status pb_group_check(const pb_group *g);

const char *pb_group_state_str(pb_group_state s);

#ifdef __cplusplus
}
#endif
#endif /* PB_SEQUENCE_H */
