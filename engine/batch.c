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

void pb_batch_begin(pb_batch_builder *bb) {
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

static void reserve(pb_batch_builder *bb, int32_t extra) {
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

/* ceil(c / block size), 0 without blocks */
static inline int64_t blocks_of(const pb_batch_builder *bb, int64_t c) {
    int32_t bs = bb->block_size;
    if (bb->bs_shift >= 0) return (c + bs - 1) >> bb->bs_shift;
    return bs > 0 ? (c + bs - 1) / bs : 0;
}

/* The entry of q: a prefill of min(max_new, len - n_computed) tokens, or a decode. */
static void add_seq(pb_batch_builder *bb, pb_seq *q, bool prefill, int32_t max_new) {
    pb_batch_seq *e = &bb->seqs[bb->n];
    pb_batch *b = &bb->b;
    const pb_group *g = q->group;
    e->seq_id = q->id;
    e->group_id = g->id;
    e->is_prefill = prefill;
    e->n_cached = q->n_computed;
    if (prefill) {
        PB_ASSERT(q->kv_len == q->len && q->n_computed < q->len && max_new >= 1);
        e->n_new = PB_MIN(max_new, q->len - q->n_computed);
        b->n_prefill_tokens += e->n_new;
        bb->n_prefill_seqs++;
        bb->prefill_max_len = PB_MAX(bb->prefill_max_len, q->n_computed + e->n_new);
        bb->prefill_len_sum += q->n_computed + e->n_new;
        b->prefill_pairs2 += (int64_t)e->n_new * (2 * (int64_t)e->n_cached + e->n_new + 1);
        b->prefill_cached += e->n_cached;
    } else {
        PB_ASSERT(q->n_computed == q->kv_len - 1 && q->kv_len == q->len);
        e->n_new = 1;
        b->n_decode++;
    }
    e->context_len = e->n_cached + e->n_new;
    e->sample = e->context_len == q->len;
    b->sum_new += e->n_new;
    b->n_sample += e->sample;
    if (!prefill) {
        b->decode_ctx += e->context_len;
        b->decode_blocks += blocks_of(bb, e->context_len);
    }
    e->block_table = NULL;
    e->n_blocks = 0;
    e->kv_offset = 0;
    e->tokens = q->tokens;
    q->batch_idx = bb->n;
    bb->seq_of[bb->n++] = q;
    b->n_seqs++;
    int32_t top = g->beam_width > 1 ? 2 * g->beam_width
                  : (prefill && g->n_generated == 0 ? PB_MIN(g->n, PB_MAX_TOP) : 1);
    if (e->sample && top > b->n_top) b->n_top = top;
}

static void add_group(pb_batch_builder *bb, pb_group *g, bool prefill, int32_t max_new) {
    reserve(bb, g->n_seqs);
    for (int32_t i = 0; i < g->n_seqs; i++) add_seq(bb, g->seqs[i], prefill, max_new);
    g->in_batch = true;
    bb->groups[bb->n_groups++] = g;
}

void pb_batch_add_prefill(pb_batch_builder *bb, pb_group *g, int32_t max_new) { add_group(bb, g, true, max_new); }
void pb_batch_add_decode(pb_batch_builder *bb, pb_group *g) { add_group(bb, g, false, 1); }

void pb_batch_add_decode_sums(pb_batch_builder *bb, int32_t n_groups, int32_t n_seqs, int64_t ctx,
                              int64_t blocks, int32_t top, int32_t copies) {
    pb_batch *b = &bb->b;
    bb->sum_groups += n_groups;
    bb->sum_seqs += n_seqs;
    bb->sum_copies += copies;
    bb->sum_ctx += ctx;
    bb->sum_blocks += blocks;
    b->n_seqs += n_seqs;
    b->n_decode += n_seqs;
    b->sum_new += n_seqs;
    b->n_sample += n_seqs;
    b->decode_ctx += ctx;
    b->decode_blocks += blocks;
    if (top > b->n_top) b->n_top = top;
}

void pb_batch_set_padded(pb_batch_builder *bb, int32_t max_paddings) {
    bb->padded = true;
    bb->max_paddings = max_paddings;
}

void pb_batch_take_slot_copies(pb_batch_builder *bb, pb_kv_manager *kv) {
    bb->b.n_slot_copies = pb_kv_take_slot_copies(kv, &bb->b.slot_copies);
}

bool pb_batch_runs(const pb_batch_builder *bb) {
    return bb->b.n_seqs > 0 || bb->copies.n > 0 || bb->sum_copies > 0 || bb->swap_in.n > 0 || bb->swap_out.n > 0 ||
           bb->b.n_slot_copies > 0;
}

void pb_batch_ready(pb_batch_builder *bb, pb_kv_manager *kv, bool kv_layout) {
    pb_batch *b = &bb->b;
    if (kv_layout)
        for (int32_t i = 0; i < bb->n; i++) pb_kv_batch_info(kv, bb->seq_of[i], &bb->seqs[i]);
    b->seqs = bb->seqs;
    b->n_padded_tokens = bb->padded ? (int64_t)bb->n_prefill_seqs * bb->prefill_max_len : 0;
    b->copies = bb->copies.v;
    b->n_copies = bb->copies.n + bb->sum_copies;
    b->swap_in = bb->swap_in.v;
    b->n_swap_in = bb->swap_in.n;
    b->swap_out = bb->swap_out.v;
    b->n_swap_out = bb->swap_out.n;
}

pb_status pb_batch_check(const pb_batch_builder *bb, int64_t max_tokens) {
    const pb_batch *bt = &bb->b;
    if (bb->padded) {   /* a padded prompt step: prompts only, within both budgets */
        int64_t padded = (int64_t)bb->n_prefill_seqs * bb->prefill_max_len;
        if (bt->n_decode > 0 || bb->n_prefill_seqs == 0 ||
            (bb->n_groups > 1 && (padded > max_tokens || padded - bb->prefill_len_sum > bb->max_paddings))) {
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
