/* batch.c -- the step's batch under construction (see batch.h). */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

void pb_batch_init(pb_batch_builder *bb, int32_t block_size) {
    memset(bb, 0, sizeof *bb);
    int32_t sh = 0;
    while (sh < 30 && (1 << sh) < block_size) sh++;
    bb->block_size = block_size;
    bb->bs_shift = block_size > 0 && (1 << sh) == block_size ? sh : -1;
    pb_batch_begin(bb);
}

void pb_batch_free(pb_batch_builder *bb) {
    free(bb->seqs);
    free(bb->seq_of);
    free(bb->groups);
    pb_pair_vec_free(&bb->copies);
    pb_pair_vec_free(&bb->swap_in);
    pb_pair_vec_free(&bb->swap_out);
    memset(bb, 0, sizeof *bb);
}


static void grow(pb_batch_builder *bb, int32_t extra) {
    if (bb->n + extra > bb->cap) {
        int32_t cap = bb->cap ? bb->cap : 256;
        while (cap < bb->n + extra) cap *= 2;
        bb->seqs = pb_xrealloc(bb->seqs, (size_t)cap * sizeof *bb->seqs);
        bb->seq_of = pb_xrealloc(bb->seq_of, (size_t)cap * sizeof *bb->seq_of);
        bb->cap = cap;
    }
    if (bb->n_groups == bb->cap_groups) {
        bb->cap_groups = bb->cap_groups ? 2 * bb->cap_groups : 256;
        bb->groups = pb_xrealloc(bb->groups, (size_t)bb->cap_groups * sizeof *bb->groups);
    }
}

/* Room for extra entries and a group. */
static inline void reserve(pb_batch_builder *bb, int32_t extra) {
    if (bb->n + extra > bb->cap || bb->n_groups == bb->cap_groups) grow(bb, extra);
}

/* ceil(c / block size), 0 without blocks */
static inline int64_t blocks_of(const pb_batch_builder *bb, int64_t c) {
    int32_t bs = bb->block_size;
    if (bb->bs_shift >= 0) return (c + bs - 1) >> bb->bs_shift;
    return bs > 0 ? (c + bs - 1) / bs : 0;
}

/* q's entry: its ids and cached tokens, n_new new ones, sampling when that completes
   q; the sums every entry counts. */
static inline pb_batch_seq *add_entry(pb_batch_builder *bb, pb_seq *q, int32_t n_new) {
    pb_batch_seq *e = &bb->seqs[bb->n];
    pb_batch *b = &bb->b;
    e->seq_id = q->id;
    e->group_id = q->group->id;
    e->n_cached = q->n_computed;
    e->n_new = n_new;
    e->context_len = e->n_cached + n_new;
    e->sample = e->context_len == q->len;
    e->block_table = NULL;
    e->n_blocks = 0;
    e->kv_offset = 0;
    e->tokens = q->tokens;
    b->sum_new += n_new;
    b->n_sample += e->sample;
    q->batch_idx = bb->n;
    bb->seq_of[bb->n++] = q;
    return e;
}

/* The candidates a sampled entry of g wants: 2 x the beam width, n at a parallel
   sampling group's first token, else 1. */
static inline void want_top(pb_batch_builder *bb, const pb_group *g, bool first) {
    int32_t top = g->beam_width > 1 ? 2 * g->beam_width : (first ? PB_MIN(g->n, PB_MAX_TOP) : 1);
    if (top > bb->b.n_top) bb->b.n_top = top;
}

void pb_batch_add_prefill(pb_batch_builder *bb, pb_group *g, int32_t max_new) {
    PB_ASSERT(max_new >= 1);
    reserve(bb, g->n_seqs);
    pb_batch *b = &bb->b;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        pb_seq *q = g->seqs[i];
        PB_ASSERT(q->kv_len == q->len && q->n_computed < q->len);
        pb_batch_seq *e = add_entry(bb, q, PB_MIN(max_new, q->len - q->n_computed));
        e->is_prefill = true;
        b->n_prefill_tokens += e->n_new;
        b->prefill_pairs2 += (int64_t)e->n_new * (2 * (int64_t)e->n_cached + e->n_new + 1);
        b->prefill_cached += e->n_cached;
        bb->n_prefill_seqs++;
        bb->prefill_max_len = PB_MAX(bb->prefill_max_len, e->context_len);
        bb->prefill_len_sum += e->context_len;
        if (e->sample) want_top(bb, g, g->n_generated == 0);
    }
    g->in_batch = true;
    bb->groups[bb->n_groups++] = g;
}

void pb_batch_add_decode(pb_batch_builder *bb, pb_group *g) {
    reserve(bb, g->n_seqs);
    pb_batch *b = &bb->b;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        pb_seq *q = g->seqs[i];
        PB_ASSERT(q->n_computed == q->kv_len - 1 && q->kv_len == q->len);
        pb_batch_seq *e = add_entry(bb, q, 1);
        e->is_prefill = false;
        b->n_decode++;
        b->decode_ctx += e->context_len;
        b->decode_blocks += blocks_of(bb, e->context_len);
    }
    if (g->beam_width > 1) want_top(bb, g, false);   /* decodes sample: a beam group wants more */
    g->in_batch = true;
    bb->groups[bb->n_groups++] = g;
}


void pb_batch_set_padded(pb_batch_builder *bb, int32_t max_paddings) {
    bb->padded = true;
    bb->max_paddings = max_paddings;
}

void pb_batch_take_slot_copies(pb_batch_builder *bb, pb_kv_manager *kv) {
    bb->b.n_slot_copies = pb_kv_take_slot_copies(kv, &bb->b.slot_copies);
    pb_kv_take_tier_moves(kv, &bb->swap_out, &bb->swap_in);
}

bool pb_batch_runs(const pb_batch_builder *bb) {
    return bb->n + bb->sum_seqs > 0 || bb->copies.n > 0 || bb->sum_copies > 0 || bb->swap_in.n > 0 || bb->swap_out.n > 0 ||
           bb->b.n_slot_copies > 0;
}

pb_status pb_batch_check(const pb_batch_builder *bb, int64_t max_tokens) {
    const pb_batch *bt = &bb->b;
    if (bb->padded) {   /* a padded prompt step: prompts only, within both budgets */
        int64_t padded = (int64_t)bb->n_prefill_seqs * bb->prefill_max_len;
        if (bt->n_decode > 0 || bb->n_prefill_seqs == 0 ||
            (bb->n_groups > 1 && bb->max_paddings != PB_PAD_UNBOUNDED &&
             (padded > max_tokens || padded - bb->prefill_len_sum > bb->max_paddings))) {
            pb_log_error("batch: padded prompt step of %d rows x %d (%d decodes) breaks its budgets",
                         bb->n_prefill_seqs, bb->prefill_max_len, bt->n_decode);
            return PB_ERR_INVALID;
        }
    }
    int64_t pf = 0, sum_new = bb->sum_seqs, ctx = bb->sum_ctx, blocks = bb->sum_blocks, pairs2 = 0, cached = 0;
    int32_t n_sample = bb->sum_seqs, n_decode = bb->sum_seqs;
    for (int32_t i = 0; i < bb->n; i++) {
        const pb_batch_seq *e = &bb->seqs[i];
        if (e->n_new < 1 || e->n_cached < 0 || e->context_len != e->n_cached + e->n_new ||
            (!e->is_prefill && (e->n_new != 1 || !e->sample))) {
            pb_log_error("batch: entry %d (seq %d): %s of %d new over %d cached, context %d, sample %d", i,
                         e->seq_id, e->is_prefill ? "prefill" : "decode", e->n_new, e->n_cached, e->context_len,
                         (int)e->sample);
            return PB_ERR_INVALID;
        }
        sum_new += e->n_new;
        n_sample += e->sample;
        if (e->is_prefill) {
            pf += e->n_new;
            pairs2 += (int64_t)e->n_new * (2 * (int64_t)e->n_cached + e->n_new + 1);
            cached += e->n_cached;
        } else {
            n_decode++;
            ctx += e->context_len;
            blocks += blocks_of(bb, e->context_len);
        }
    }
    if (pf != bt->n_prefill_tokens || n_decode != bt->n_decode || bb->n + bb->sum_seqs != bt->n_seqs ||
        sum_new != bt->sum_new || n_sample != bt->n_sample || ctx != bt->decode_ctx || blocks != bt->decode_blocks ||
        pairs2 != bt->prefill_pairs2 || cached != bt->prefill_cached) {
        pb_log_error("batch: counts and sums (prefill %lld, decodes %d, seqs %d, new %lld, sampled %d, decode "
                     "context %lld, blocks %lld, prefill pairs2 %lld, cached %lld) differ from the entries' and "
                     "the summed decodes' (%lld, %d, %d, %lld, %d, %lld, %lld, %lld, %lld)",
                     (long long)bt->n_prefill_tokens, bt->n_decode, bt->n_seqs, (long long)bt->sum_new,
                     bt->n_sample, (long long)bt->decode_ctx, (long long)bt->decode_blocks,
                     (long long)bt->prefill_pairs2, (long long)bt->prefill_cached, (long long)pf, n_decode,
                     bb->n + bb->sum_seqs, (long long)sum_new, n_sample, (long long)ctx, (long long)blocks,
                     (long long)pairs2, (long long)cached);
        return PB_ERR_INVALID;
    }
    return PB_OK;
}
