/* attn_case.c -- seeded attention inputs in paged and contiguous layouts (attn_case.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_case.h"
#include "rng.h"

static void fill_nan(void *buf, pb_kv_dtype t, size_t n) {
    for (size_t i = 0; i < n; i++) pb_kv_store(buf, t, i, NAN);
}

/* v rounded to element type t */
static float round_to(pb_kv_dtype t, float v) {
    unsigned char b[4];
    pb_kv_store(b, t, 0, v);
    return pb_kv_load(b, t, 0);
}

pb_status pb_attn_case_make(pb_attn_case *c, uint64_t seed, int32_t num_seqs,
                            const int32_t *ctx_lens, int32_t num_heads, int32_t num_kv_heads,
                            int32_t head_size, int32_t block_size, pb_kv_dtype dtype,
                            int flags, int want_dense) {
    return pb_attn_case_make_kv(c, seed, num_seqs, ctx_lens, num_heads, num_kv_heads, head_size, block_size,
                                dtype, PB_KV_CACHE_AUTO, 1.0f, flags, want_dense);
}

pb_status pb_attn_case_make_kv(pb_attn_case *c, uint64_t seed, int32_t num_seqs,
                               const int32_t *ctx_lens, int32_t num_heads, int32_t num_kv_heads,
                               int32_t head_size, int32_t block_size, pb_kv_dtype dtype,
                               pb_kv_cache_dtype kv_cache_dtype, float kv_scale, int flags,
                               int want_dense) {
    const int poison = flags & PB_ATTN_CASE_POISON;
    const int64_t gap = (flags & PB_ATTN_CASE_ODD_OFFSETS) ? 3 : 0;
    memset(c, 0, sizeof(*c));
    if (num_seqs <= 0 || block_size <= 0) return PB_ERR_INVALID;
    int32_t max_ctx = 0;
    int64_t total_blocks = 0, slots = 0;
    for (int32_t s = 0; s < num_seqs; s++) {
        if (ctx_lens[s] < 0) return PB_ERR_INVALID;
        if (ctx_lens[s] > max_ctx) max_ctx = ctx_lens[s];
        total_blocks += PB_CDIV(ctx_lens[s], block_size);
        slots += gap ? ctx_lens[s] + gap : (ctx_lens[s] + 7) / 8 * 8;
    }
    pb_attn_params p;
    memset(&p, 0, sizeof(p));
    p.num_seqs = num_seqs;
    p.num_heads = num_heads;
    p.num_kv_heads = num_kv_heads;
    p.head_size = head_size;
    p.block_size = block_size;
    p.max_blocks_per_seq = PB_MAX(1, PB_CDIV(max_ctx, block_size));
    p.num_blocks = (int32_t)(total_blocks + total_blocks / 4 + 1);
    p.num_slots = (flags & PB_ATTN_CASE_ODD_SLOTS) ? (slots + 8) / 8 * 8 + 5 : (slots + 8 + 7) / 8 * 8;
    p.max_context_len = max_ctx;
    p.scale = (float)(1.0 / sqrt((double)head_size));
    p.dtype = dtype;
    p.kv_cache_dtype = kv_cache_dtype;
    p.kv_scale = kv_cache_dtype != PB_KV_CACHE_AUTO ? kv_scale : 0.0f;
    if (pb_attn_params_check(&p, 1) != PB_OK) return PB_ERR_INVALID;
    c->p = p;
    c->pc = p;

    const size_t es = pb_kv_dtype_size(dtype);
    const pb_kv_dtype ce = pb_attn_cache_elem(&p);     /* the caches' elements */
    const size_t ces = pb_kv_dtype_size(ce);
    const float kvs = kv_cache_dtype != PB_KV_CACHE_AUTO ? kv_scale : 1.0f;
    const int64_t HD = (int64_t)num_kv_heads * head_size;
    c->q_elems = c->out_elems = (size_t)num_seqs * num_heads * head_size;
    c->cache_elems = (size_t)p.num_blocks * (size_t)HD * (size_t)block_size;
    c->contig_elems = (size_t)p.num_slots * (size_t)HD;
    c->context_lens = pb_xmalloc(sizeof(int32_t) * (size_t)num_seqs);
    c->block_tables = pb_xmalloc(sizeof(int32_t) * (size_t)num_seqs * (size_t)p.max_blocks_per_seq);
    c->kv_offsets = pb_xmalloc(sizeof(int64_t) * (size_t)num_seqs);
    c->q = pb_xmalloc(es * c->q_elems);
    c->k_cache = pb_xcalloc(c->cache_elems, ces);
    c->v_cache = pb_xcalloc(c->cache_elems, ces);
    c->kc_contig = pb_xcalloc(c->contig_elems, ces);
    c->vc_contig = pb_xcalloc(c->contig_elems, ces);
    if (poison) {
        fill_nan(c->k_cache, ce, c->cache_elems);
        fill_nan(c->v_cache, ce, c->cache_elems);
        fill_nan(c->kc_contig, ce, c->contig_elems);
        fill_nan(c->vc_contig, ce, c->contig_elems);
    }
    if (want_dense) {
        size_t dn = (size_t)num_seqs * (size_t)(max_ctx > 0 ? max_ctx : 1) * (size_t)HD;
        c->dense_k = pb_xcalloc(dn, sizeof(float));
        c->dense_v = pb_xcalloc(dn, sizeof(float));
    }

    pb_rng rng;
    pb_rng_seed(&rng, seed, 8);
    /* block ids: a random permutation, handed out in order */
    int32_t *perm = pb_xmalloc(sizeof(int32_t) * (size_t)p.num_blocks);
    for (int32_t i = 0; i < p.num_blocks; i++) perm[i] = i;
    for (int32_t i = p.num_blocks - 1; i > 0; i--) {
        int32_t j = (int32_t)pb_rng_below(&rng, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    int32_t next = 0;
    int64_t off = 0;
    for (int32_t s = 0; s < num_seqs; s++) {
        c->context_lens[s] = ctx_lens[s];
        c->kv_offsets[s] = off + gap;
        off += gap ? ctx_lens[s] + gap : (ctx_lens[s] + 7) / 8 * 8;
        for (int32_t b = 0; b < p.max_blocks_per_seq; b++)
            c->block_tables[(size_t)s * p.max_blocks_per_seq + b] =
                b < PB_CDIV(ctx_lens[s], block_size) ? perm[next++] : -1;
    }
    free(perm);
    for (size_t i = 0; i < c->q_elems; i++)
        pb_kv_store(c->q, dtype, i, (float)(2.0 * pb_rng_uniform(&rng) - 1.0));

    const int64_t x = pb_kv_x(ce), D = head_size, bs = block_size;
    for (int32_t s = 0; s < num_seqs; s++)
        for (int64_t t = 0; t < ctx_lens[s]; t++) {
            int64_t blk = c->block_tables[(size_t)s * p.max_blocks_per_seq + t / bs], o = t % bs;
            int64_t slot = c->kv_offsets[s] + t;
            for (int64_t h = 0; h < num_kv_heads; h++)
                for (int64_t d = 0; d < D; d++) {
                    for (int kv = 0; kv < 2; kv++) {
                        float v = (float)(2.0 * pb_rng_uniform(&rng) - 1.0);
                        if (ce != dtype) v = round_to(dtype, v);   /* an fp8 cache quantizes dtype K/V */
                        size_t pi, ci;
                        if (kv == 0) {
                            pi = (size_t)((((blk * num_kv_heads + h) * (D / x) + d / x) * bs + o) * x + d % x);
                            ci = (size_t)(((h * (D / x) + d / x) * p.num_slots + slot) * x + d % x);
                        } else {
                            pi = (size_t)(((blk * num_kv_heads + h) * D + d) * bs + o);
                            ci = (size_t)((h * D + d) * p.num_slots + slot);
                        }
                        void *pc = kv ? c->v_cache : c->k_cache, *cc = kv ? c->vc_contig : c->kc_contig;
                        pb_kv_store(pc, ce, pi, v / kvs);
                        pb_kv_store(cc, ce, ci, v / kvs);
                        if (want_dense) {
                            float *dd = kv ? c->dense_v : c->dense_k;
                            dd[(((size_t)s * (size_t)max_ctx + (size_t)t) * (size_t)num_kv_heads + (size_t)h) * (size_t)D + (size_t)d] =
                                pb_kv_load(pc, ce, pi) * kvs;
                        }
                    }
                }
        }
    return PB_OK;
}

void pb_attn_case_free(pb_attn_case *c) {
    free(c->context_lens); free(c->block_tables); free(c->kv_offsets); free(c->q);
    free(c->k_cache); free(c->v_cache); free(c->kc_contig); free(c->vc_contig);
    free(c->dense_k); free(c->dense_v);
    memset(c, 0, sizeof(*c));
}
