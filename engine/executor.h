/* executor.h -- the executor interface: run one batch, say how long it took.
 *
 * The engine forms a batch each step (prefill chunks of prompts and/or one decode
 * token per running sequence), together with the memory operations the block
 * manager decided (copy-on-write copies, swap in, swap out).  An executor performs
 * them -- on a cost model (sim), a real tiny model on the CPU (cpu), or a real model
 * on a GPU (cuda) -- and returns the step's latency, which the engine adds to its
 * clock.  Real executors also return next-token candidates; the sim returns none
 * (has_tokens == false) and the engine draws synthetic ones (see engine docs).
 *
 * Shared by engine/, baselines/ and every executor: change it only together. */
#ifndef PB_EXECUTOR_H
#define PB_EXECUTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "copy_map.h"   /* pb_block_pair, pb_slot_copy */
#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One sequence's part of a batch. */
typedef struct {
    int32_t seq_id;          /* engine-wide sequence id                              */
    int32_t group_id;        /* request (sequence group) id                          */
    bool is_prefill;         /* prompt (or recompute) phase this step                */
    int32_t n_new;           /* tokens computed this step (prefill: prompt tokens not
                                cached; decode: 1)                                    */
    int32_t n_cached;        /* tokens whose KV already exists before this step
                                (decode: context_len - 1; prefill with a cached
                                shared prefix: prefix tokens; else 0)                  */
    int32_t context_len;     /* n_cached + n_new: KV length after this step          */
    bool sample;             /* produce next-token candidates for this sequence      */
    /* KV location.  Paged managers: block_table[n_blocks] physical GPU blocks.
       Contiguous managers: block_table == NULL and kv_offset = first slot. */
    const int32_t *block_table;
    int32_t n_blocks;
    int64_t kv_offset;
    /* Real executors: token ids of the whole sequence so far (context_len of them;
       the last n_new are this step's inputs).  NULL under the sim. */
    const int32_t *tokens;
} pb_batch_seq;

typedef struct {
    int32_t n_seqs;
    const pb_batch_seq *seqs;
    int64_t n_prefill_tokens;        /* sum of n_new over prefill sequences         */
    /* A prompt-only step run as a padded 2-D [prompts, longest] batch (vLLM v0.2.2+,
       engine max_paddings >= 0): the token rows the GPU computes, = prefill
       sequences x the longest one's context_len (v0.2 has no prefix caching, so a
       row is the whole sequence); >= n_prefill_tokens.  0 = not padded: the step
       computes exactly its tokens (flattened batches, decode steps).  Executors
       that model cost charge token-proportional work at this size; real executors
       compute the unpadded rows, which gives the same tokens.                      */
    int64_t n_padded_tokens;
    int32_t n_decode;                /* decode sequences                            */
    int32_t block_size;              /* paged: tokens per block; contiguous: 0      */
    int32_t n_top;                   /* candidates wanted per sampled sequence
                                        (1 greedy/sampling; 2*beam for beam search) */
    /* memory operations, done before the forward pass */
    const pb_block_pair *copies;  int32_t n_copies;     /* GPU block src -> dst (CoW) */
    const pb_block_pair *swap_in; int32_t n_swap_in;    /* CPU block -> GPU block     */
    const pb_block_pair *swap_out; int32_t n_swap_out;  /* GPU block -> CPU block     */
    const pb_slot_copy *slot_copies; int32_t n_slot_copies; /* contiguous caches only */
    /* Sums over seqs, kept by the engine as it builds the batch, so that a cost model
       need not walk seqs; valid only when has_sums (a batch built by hand leaves it
       false: read seqs).  All exact integers. */
    bool has_sums;
    int64_t sum_new;             /* sum of n_new                                    */
    int32_t n_sample;            /* sequences with sample                           */
    int64_t decode_ctx;          /* sum of context_len over decode sequences        */
    int64_t decode_blocks;       /* sum of ceil(context_len / block_size) over decode
                                    sequences (0 when block_size == 0)             */
    int64_t prefill_pairs2;      /* twice the causal (query, key) pairs of prefills:
                                    sum of n_new * (2 n_cached + n_new + 1)         */
    int64_t prefill_cached;      /* sum of n_cached over prefill sequences          */
} pb_batch;

#define PB_MAX_TOP 16
typedef struct {                 /* next-token candidates of one sampled sequence   */
    int32_t n;                   /* <= batch n_top                                  */
    int32_t token[PB_MAX_TOP];
    float logprob[PB_MAX_TOP];   /* log-probabilities, descending                   */
} pb_candidates;

typedef struct {
    double latency_s;            /* whole step: memory ops + forward pass            */
    double swap_s;               /* of which swapping                                */
    double copy_s;               /* of which copy-on-write copies                    */
    bool has_tokens;             /* cand[] was filled (real executors)               */
} pb_step_result;

typedef struct pb_executor pb_executor;
/* What an executor needs from the engine beyond lengths (pb_executor_i.caps). */
enum {
    PB_EXEC_KV_LAYOUT = 1,   /* reads block_table / n_blocks / kv_offset            */
    PB_EXEC_TOKENS = 2,      /* may return candidates (has_tokens): the engine
                                clears cand[].n before each call                   */
    PB_EXEC_SUMS_ONLY = 4    /* reads only the batch's counts, sums (has_sums) and
                                memory operations' counts, never seqs[] or the
                                copy pairs: the engine may run steps without
                                filling them (fast-forward; a replayed beam step
                                has n_copies and copies NULL)                      */
};

typedef struct {
    const char *name;
    /* Execute one batch.  cand has batch->n_seqs entries (filled for seqs with
       sample == true when the executor produces tokens).  Returns PB_OK or an
       error status (the engine stops the run on error). */
    pb_status (*execute)(pb_executor *ex, const pb_batch *batch, pb_step_result *res,
                         pb_candidates *cand);
    void (*destroy)(pb_executor *ex);
    unsigned caps;               /* PB_EXEC_* flags; 0: lengths only, no tokens      */
} pb_executor_i;

struct pb_executor {
    const pb_executor_i *iface;
    void *impl;
};

static inline pb_status pb_executor_execute(pb_executor *ex, const pb_batch *b, pb_step_result *r,
                                            pb_candidates *cand) {
    return ex->iface->execute(ex, b, r, cand);
}
static inline void pb_executor_destroy(pb_executor *ex) { if (ex) ex->iface->destroy(ex); }

#ifdef __cplusplus
}
#endif
#endif /* PB_EXECUTOR_H */
