/* batch.h -- ENGINE-INTERNAL: the step's batch while the scheduler builds it.
 *
 * The scheduler's actions add entries: a prefill chunk or a decode per sequence
 * (pb_batch_seq, what the executor reads, beside the sequence it is of) and the
 * group they belong to; the KV manager pushes the step's memory operations onto the
 * three pair vectors.  The counts and the sums a cost model reads (executor.h
 * pb_batch: n_prefill_tokens, n_decode, n_top, sum_new, decode_ctx, decode_blocks,
 * prefill_pairs2, ...) are kept in `b` as entries are added; a replayed step
 * (fastfwd.h) adds its decodes by their sums alone (pb_batch_add_decode_sums).
 * pb_batch_ready() completes `b` for the executor.  The engine owns the builder;
 * only batch.c writes its fields, the others read them. */
#ifndef PB_BATCH_H
#define PB_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "executor.h"
#include "kv_manager.h"
#include "sequence.h"

typedef struct {
    pb_batch b;                   /* what the executor gets: counts and sums kept as
                                     entries are added, the rest set by pb_batch_ready */
    pb_batch_seq *seqs;           /* entries [n]                                      */
    pb_seq **seq_of;              /* the sequence of each entry                       */
    int32_t n, cap;
    pb_group **groups;            /* groups with entries, in the order added          */
    int32_t n_groups, cap_groups;
    /* prompt rows (padded prompt steps, and the scheduler's padded admission) */
    int32_t n_prefill_seqs;
    int32_t prefill_max_len;      /* longest prefill context_len                      */
    int64_t prefill_len_sum;      /* sum of prefill context_lens                      */
    bool padded;                  /* a padded prompt-only step: n_padded_tokens =
                                     prefill rows x the longest                       */
    int32_t max_paddings;         /* its padding cap                                  */
    /* decodes added by their sums alone (a replayed step): in b's counts and sums,
       not in the entries */
    int32_t sum_groups, sum_seqs, sum_copies;
    int64_t sum_ctx, sum_blocks;
    int32_t block_size, bs_shift; /* the manager's block size; its log2 when a power
                                     of two, else -1                                  */
    pb_pair_vec copies, swap_in, swap_out;
} pb_batch_builder;

void pb_batch_init(pb_batch_builder *bb, int32_t block_size);
void pb_batch_free(pb_batch_builder *bb);
/* An empty batch for the next step (no entries, sums 0, the vectors cleared). */
static inline void pb_batch_begin(pb_batch_builder *bb) {
    pb_batch *b = &bb->b;
    bb->n = bb->n_groups = 0;
    bb->n_prefill_seqs = bb->prefill_max_len = 0;
    bb->prefill_len_sum = 0;
    bb->padded = false;
    bb->max_paddings = 0;
    bb->sum_groups = bb->sum_seqs = bb->sum_copies = 0;
    bb->sum_ctx = bb->sum_blocks = 0;
    pb_pair_vec_clear(&bb->copies);
    pb_pair_vec_clear(&bb->swap_in);
    pb_pair_vec_clear(&bb->swap_out);
    b->n_seqs = 0;
    b->n_prefill_tokens = b->n_padded_tokens = 0;
    b->n_decode = 0;
    b->block_size = bb->block_size;
    b->n_top = 1;
    b->slot_copies = NULL;
    b->n_slot_copies = 0;
    b->has_sums = true;
    b->sum_new = b->decode_ctx = b->decode_blocks = b->prefill_pairs2 = b->prefill_cached = 0;
    b->n_sample = 0;
}

/* Entries of a step, one per sequence of g, and g into the batch's groups (its
   in_batch set).  A prefill entry computes min(max_new, len - n_computed) tokens from
   n_computed and samples only when that completes the sequence; a decode entry one. */
void pb_batch_add_prefill(pb_batch_builder *bb, pb_group *g, int32_t max_new);
void pb_batch_add_decode(pb_batch_builder *bb, pb_group *g);
/* Decodes of n_seqs sequences of n_groups groups without entries (a replayed step):
   their contexts sum to ctx tokens in blocks blocks, top the candidates they want,
   copies the copy-on-write copies their appends made (counted, no pairs). */
static inline void pb_batch_add_decode_sums(pb_batch_builder *bb, int32_t n_groups, int32_t n_seqs,
                                            int64_t ctx, int64_t blocks, int32_t top, int32_t copies) {
    pb_batch *b = &bb->b;
    bb->sum_groups += n_groups;
    bb->sum_seqs += n_seqs;
    bb->sum_copies += copies;
    bb->sum_ctx += ctx;
    bb->sum_blocks += blocks;
    b->n_decode += n_seqs;
    b->sum_new += n_seqs;
    b->n_sample += n_seqs;
    b->decode_ctx += ctx;
    b->decode_blocks += blocks;
    if (top > b->n_top) b->n_top = top;
}

/* A padded prompt-only step, padding cap max_paddings; PB_PAD_UNBOUNDED: no padding
   cap and no token cap (pb_sched_pad_prompts). */
#define PB_PAD_UNBOUNDED INT32_MAX
void pb_batch_set_padded(pb_batch_builder *bb, int32_t max_paddings);
/* Tokens of the step so far: prefill tokens + decodes. */
static inline int64_t pb_batch_tokens(const pb_batch_builder *bb) { return bb->b.n_prefill_tokens + bb->b.n_decode; }
/* Groups in the step (with entries or by sums). */
static inline int32_t pb_batch_groups(const pb_batch_builder *bb) { return bb->n_groups + bb->sum_groups; }
/* The range copies the manager queued for this step (a contiguous manager's forks,
   kv_manager.h take_slot_copies) and its CPU tier's moves (take_tier_moves, onto the
   swap maps), after the scheduler is done. */
void pb_batch_take_slot_copies(pb_batch_builder *bb, pb_kv_manager *kv);
/* Does the step run anything (entries, decodes or memory operations)? */
bool pb_batch_runs(const pb_batch_builder *bb);
/* b completed for the executor: entries, memory operations, padded size; with
   kv_layout the entries' block tables or offsets from the manager. */
static inline void pb_batch_ready(pb_batch_builder *bb, pb_kv_manager *kv, bool kv_layout) {
    pb_batch *b = &bb->b;
    if (kv_layout)
        for (int32_t i = 0; i < bb->n; i++) pb_kv_batch_info(kv, bb->seq_of[i], &bb->seqs[i]);
    b->seqs = bb->seqs;
    b->n_seqs = bb->n + bb->sum_seqs;
    b->n_padded_tokens = bb->padded ? (int64_t)bb->n_prefill_seqs * bb->prefill_max_len : 0;
    b->copies = bb->copies.v;
    b->n_copies = bb->copies.n + bb->sum_copies;
    b->swap_in = bb->swap_in.v;
    b->n_swap_in = bb->swap_in.n;
    b->swap_out = bb->swap_out.v;
    b->n_swap_out = bb->swap_out.n;
}

/* Invariants of the batch: every entry a valid prefill chunk or decode, b's sums
   those of the entries plus the decodes added by sums, a padded step within its
   budgets (max_tokens: the token budget).  PB_OK or PB_ERR_INVALID (logged). */
pb_status pb_batch_check(const pb_batch_builder *bb, int64_t max_tokens);

#endif /* PB_BATCH_H */
