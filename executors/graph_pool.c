/* graph_pool.c -- CUDA-graph buckets, pool bookkeeping and metadata padding (see
 * graph_pool.h). */
#include "graph_pool.h"

#include <stdlib.h>
#include <string.h>

int32_t pb_graph_bucket(int32_t n) {
    if (n < 1 || n > PB_GRAPH_MAX_BATCH) return 0;
    if (n <= 2) return n;
    if (n <= 4) return 4;
    return (n + 7) / 8 * 8;
}

int pb_graph_bucket_index(int32_t b) {
    if (b == 1 || b == 2) return b - 1;
    if (b == 4) return 2;
    if (b >= 8 && b <= PB_GRAPH_MAX_BATCH && b % 8 == 0) return 2 + b / 8;
    return -1;
}

int32_t pb_graph_bucket_size(int idx) {
    if (idx < 0 || idx >= PB_GRAPH_N_BUCKETS) return 0;
    return idx < 2 ? idx + 1 : idx == 2 ? 4 : 8 * (idx - 2);
}

bool pb_graph_step_eligible(int64_t n_prefill_tokens, int32_t n_decode, int32_t max_context) {
    return n_prefill_tokens == 0 && pb_graph_bucket(n_decode) > 0 && max_context <= PB_GRAPH_MAX_CONTEXT;
}

void pb_graph_pool_init(pb_graph_pool *p, void (*destroy)(void *ctx, void *exec), void *ctx) {
    memset(p, 0, sizeof *p);
    p->destroy = destroy;
    p->ctx = ctx;
}

static void drop(pb_graph_pool *p, int i) {
    if (!p->exec[i]) return;
    if (p->destroy) p->destroy(p->ctx, p->exec[i]);
    p->exec[i] = NULL;
}

void pb_graph_pool_clear(pb_graph_pool *p) {
    for (int i = 0; i < PB_GRAPH_N_BUCKETS; i++) drop(p, i);
}

int pb_graph_pool_count(const pb_graph_pool *p) {
    int n = 0;
    for (int i = 0; i < PB_GRAPH_N_BUCKETS; i++) n += p->exec[i] != NULL;
    return n;
}

/* move the pool to generation gen: graphs of another one are stale */
static void to_generation(pb_graph_pool *p, uint64_t gen) {
    if (gen == p->generation) return;
    if (pb_graph_pool_count(p) > 0) p->invalidations++;
    pb_graph_pool_clear(p);
    p->generation = gen;
}

void *pb_graph_pool_get(pb_graph_pool *p, int32_t b, uint64_t gen) {
    int i = pb_graph_bucket_index(b);
    if (i < 0) return NULL;
    to_generation(p, gen);
    if (p->exec[i]) p->replays++;
    return p->exec[i];
}

void pb_graph_pool_put(pb_graph_pool *p, int32_t b, uint64_t gen, void *exec) {
    int i = pb_graph_bucket_index(b);
    PB_ASSERT(i >= 0);
    to_generation(p, gen);
    drop(p, i);
    p->exec[i] = exec;
    p->captures++;
}

pb_status pb_graph_pool_check(const pb_graph_pool *p) {
    if (p->captures < 0 || p->replays < 0 || p->invalidations < 0) return PB_ERR_INVALID;
    if (pb_graph_pool_count(p) > p->captures) return PB_ERR_INVALID;
    if (p->replays > 0 && p->captures == 0) return PB_ERR_INVALID;
    return PB_OK;
}

/* grow an array of dst to n elements (capacity cap, shared by the arrays of a group) */
static void *grow(void *a, int64_t n, size_t elem) { return pb_xrealloc(a, (size_t)(n > 0 ? n : 1) * elem); }

pb_status pb_graph_pad_meta(const pb_fwd_meta *src, int32_t B, int32_t max_blocks, int32_t block_size,
                            pb_fwd_meta *dst) {
    const int32_t n = src->T;
    if (pb_graph_bucket_index(B) < 0 || n > B || src->n_pf_seqs > 0 || src->n_pf_tok > 0 || !src->paged ||
        max_blocks < src->max_blocks || max_blocks < 1 || block_size < 1) {
        pb_log_error("graph: cannot pad a step of %d rows (%d prefill, %s, %d blocks) to bucket %d of %d blocks",
                     n, src->n_pf_tok, src->paged ? "paged" : "contiguous", src->max_blocks, B, max_blocks);
        return PB_ERR_INVALID;
    }
    if (B > dst->cap_T) {
        dst->tokens = grow(dst->tokens, B, sizeof(int32_t));
        dst->positions = grow(dst->positions, B, sizeof(int32_t));
        dst->slots = grow(dst->slots, B, sizeof(int64_t));
        dst->ctx_lens = grow(dst->ctx_lens, B, sizeof(int32_t));
        dst->kv_offsets = grow(dst->kv_offsets, B, sizeof(int64_t));
        dst->cap_T = B;
    }
    if ((int64_t)B * max_blocks > dst->cap_bt) {
        dst->block_tables = grow(dst->block_tables, (int64_t)B * max_blocks, sizeof(int32_t));
        dst->cap_bt = (int64_t)B * max_blocks;
    }
    if (B + 1 > dst->cap_seq) {
        dst->cu_q = grow(dst->cu_q, B + 1, sizeof(int32_t));
        dst->cu_k = grow(dst->cu_k, B + 1, sizeof(int32_t));
        dst->sample_rows = grow(dst->sample_rows, B + 1, sizeof(int32_t));
        dst->sample_seq = grow(dst->sample_seq, B + 1, sizeof(int32_t));
        dst->keys = grow(dst->keys, B + 1, sizeof(uint64_t));
        dst->cap_seq = B + 1;
    }
    if (!dst->pf_slots) dst->pf_slots = pb_xmalloc(sizeof(int64_t));
    if (n > 0) {
        memcpy(dst->tokens, src->tokens, sizeof(int32_t) * (size_t)n);
        memcpy(dst->positions, src->positions, sizeof(int32_t) * (size_t)n);
        memcpy(dst->slots, src->slots, sizeof(int64_t) * (size_t)n);
        memcpy(dst->ctx_lens, src->ctx_lens, sizeof(int32_t) * (size_t)n);
    }
    for (int32_t r = 0; r < B; r++) {
        int32_t *row = dst->block_tables + (size_t)r * max_blocks;
        int32_t have = r < n ? src->max_blocks : 0;
        if (have) memcpy(row, src->block_tables + (size_t)r * src->max_blocks, sizeof(int32_t) * (size_t)have);
        memset(row + have, 0, sizeof(int32_t) * (size_t)(max_blocks - have));
        dst->kv_offsets[r] = 0;
        if (r < n) continue;
        dst->tokens[r] = 0;                 /* padding: vLLM's _PAD_SLOT_ID rows */
        dst->positions[r] = 0;
        dst->slots[r] = -1;
        dst->ctx_lens[r] = 1;
    }
    dst->T = B;
    dst->paged = true;
    dst->max_blocks = max_blocks;
    dst->max_ctx = n ? src->max_ctx : 1;
    dst->attn_max_ctx = max_blocks * block_size;
    dst->n_pf_seqs = dst->n_pf_tok = 0;
    dst->cu_q[0] = dst->cu_k[0] = 0;
    dst->max_q = dst->max_k = 0;
    dst->pf_cached = false;
    dst->n_sample = src->n_sample;
    if (src->n_sample > 0) {
        memcpy(dst->sample_rows, src->sample_rows, sizeof(int32_t) * (size_t)src->n_sample);
        memcpy(dst->sample_seq, src->sample_seq, sizeof(int32_t) * (size_t)src->n_sample);
        memcpy(dst->keys, src->keys, sizeof(uint64_t) * (size_t)src->n_sample);
    }
    return PB_OK;
}
