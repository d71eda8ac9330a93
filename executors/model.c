/* model.c -- the decoder forward pass over an op table (see model.h), the step
 * metadata built from a pb_batch, the seeded weights, and the cpu backend (fp32, the
 * C references of kernels/). */
#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"   /* pb_paged_attention_ref, pb_contig_attention_ref */
#include "cache_ops.h"   /* pb_reshape_and_cache_ref */
#include "layers.h"      /* pb_*_ref */
#include "rng.h"         /* pb_rng: sampling keys */

/* ------------------------------------------------------------------------------ */
/* step metadata                                                                    */

void pb_fwd_meta_free(pb_fwd_meta *m) {
    free(m->tokens); free(m->positions); free(m->slots); free(m->ctx_lens);
    free(m->block_tables); free(m->kv_offsets); free(m->cu_q); free(m->cu_k);
    free(m->pf_slots); free(m->sample_rows); free(m->sample_seq); free(m->keys);
    memset(m, 0, sizeof *m);
}

static void grow_(void **p, int64_t *cap, int64_t need, size_t elem) {
    (void)cap;
    *p = pb_xrealloc(*p, (size_t)(need > 0 ? need : 1) * elem);
}

/* The noise key of a sampled token: a function of (seed, request, position, the last
 * PB_KEY_WINDOW tokens).  Not of the sequence id (engine-wide, run-dependent): the
 * samples of one request are told apart by their histories, which differ from the
 * first sampled token on (the parallel-sampling fork draws distinct tokens). */
#define PB_KEY_WINDOW 64
static uint64_t sample_key_(uint64_t seed, const pb_batch_seq *s) {
    uint64_t h = pb_hash_mix((uint64_t)(uint32_t)s->group_id + 0x51ed27ULL) ^ (uint64_t)s->context_len;
    for (int32_t t = PB_MAX(0, s->context_len - PB_KEY_WINDOW); t < s->context_len; t++)
        h = pb_hash_mix(h ^ ((uint64_t)(uint32_t)s->tokens[t] * 0x9e3779b97f4a7c15ULL));
    pb_rng r;
    pb_rng_seed(&r, seed, h);
    return pb_rng_u64(&r);
}

pb_status pb_fwd_meta_build(pb_fwd_meta *m, const pb_batch *b, const pb_model *spec,
                            const pb_kv_cache_shape *cache, uint64_t sample_seed) {
    bool paged = b->block_size > 0;
    int64_t num_slots = (int64_t)cache->num_blocks * cache->block_size;
    if (paged && b->block_size != cache->block_size) {
        pb_log_error("model: batch block_size %d but the KV cache has block_size %d",
                     b->block_size, cache->block_size);
        return PB_ERR_INVALID;
    }
    int64_t T = 0, n_bt = 0, n_pf_k = 0;
    int32_t max_blocks = 1, n_pf = 0, n_sample = 0;
    for (int32_t i = 0; i < b->n_seqs; i++) {
        const pb_batch_seq *s = &b->seqs[i];
        if (!s->tokens || s->n_new < 1 || s->n_cached < 0 ||
            s->context_len != s->n_cached + s->n_new || (!s->is_prefill && s->n_new != 1) ||
            s->context_len > spec->max_len) {
            pb_log_error("model: seq %d: bad shape (tokens %s, n_new %d, n_cached %d, "
                         "context_len %d, prefill %d, max_len %d)", s->seq_id,
                         s->tokens ? "set" : "NULL", s->n_new, s->n_cached, s->context_len,
                         (int)s->is_prefill, spec->max_len);
            return PB_ERR_INVALID;
        }
        for (int32_t t = s->n_cached; t < s->context_len; t++)
            if (s->tokens[t] < 0 || s->tokens[t] >= spec->vocab) {
                pb_log_error("model: seq %d: token %d at position %d outside the vocabulary (%d)",
                             s->seq_id, s->tokens[t], t, spec->vocab);
                return PB_ERR_INVALID;
            }
        if (paged) {
            int32_t need = PB_CDIV(s->context_len, b->block_size);
            if (!s->block_table || s->n_blocks < need) {
                pb_log_error("model: seq %d: block table has %d blocks, context %d needs %d",
                             s->seq_id, s->block_table ? s->n_blocks : 0, s->context_len, need);
                return PB_ERR_INVALID;
            }
            for (int32_t k = 0; k < need; k++)
                if (s->block_table[k] < 0 || s->block_table[k] >= cache->num_blocks) {
                    pb_log_error("model: seq %d: block %d outside the cache (%d blocks)",
                                 s->seq_id, s->block_table[k], cache->num_blocks);
                    return PB_ERR_INVALID;
                }
            max_blocks = PB_MAX(max_blocks, need);
        } else if (s->block_table || s->kv_offset < 0 || s->kv_offset + s->context_len > num_slots) {
            pb_log_error("model: seq %d: contiguous KV at %lld + %d outside %lld slots "
                         "(or a block table in a contiguous batch)", s->seq_id,
                         (long long)s->kv_offset, s->context_len, (long long)num_slots);
            return PB_ERR_INVALID;
        }
        T += s->n_new;
        if (s->is_prefill) { n_pf++; n_pf_k += s->context_len; }
        if (s->sample) n_sample++;
    }
    if (T > INT32_MAX / 2) return PB_ERR_INVALID;
    n_bt = paged ? T * max_blocks : 0;
    if (T > m->cap_T) {
        grow_((void **)&m->tokens, &m->cap_T, T, sizeof(int32_t));
        grow_((void **)&m->positions, &m->cap_T, T, sizeof(int32_t));
        grow_((void **)&m->slots, &m->cap_T, T, sizeof(int64_t));
        grow_((void **)&m->ctx_lens, &m->cap_T, T, sizeof(int32_t));
        grow_((void **)&m->kv_offsets, &m->cap_T, T, sizeof(int64_t));
        m->cap_T = T;
    }
    if (n_bt > m->cap_bt) {
        grow_((void **)&m->block_tables, &m->cap_bt, n_bt, sizeof(int32_t));
        m->cap_bt = n_bt;
    }
    if (n_pf_k > m->cap_pf) {
        grow_((void **)&m->pf_slots, &m->cap_pf, n_pf_k, sizeof(int64_t));
        m->cap_pf = n_pf_k;
    }
    if (b->n_seqs + 1 > m->cap_seq) {
        int64_t n = b->n_seqs + 1;
        grow_((void **)&m->cu_q, &m->cap_seq, n, sizeof(int32_t));
        grow_((void **)&m->cu_k, &m->cap_seq, n, sizeof(int32_t));
        grow_((void **)&m->sample_rows, &m->cap_seq, n, sizeof(int32_t));
        grow_((void **)&m->sample_seq, &m->cap_seq, n, sizeof(int32_t));
        grow_((void **)&m->keys, &m->cap_seq, n, sizeof(uint64_t));
        m->cap_seq = n;
    }
    if (!m->block_tables) m->block_tables = pb_xmalloc(sizeof(int32_t));
    m->T = (int32_t)T;
    m->paged = paged;
    m->max_blocks = max_blocks;
    m->max_ctx = 0;
    m->attn_max_ctx = 0;
    m->n_pf_seqs = n_pf;
    m->max_q = m->max_k = 0;
    m->pf_cached = false;
    m->n_sample = 0;
    m->cu_q[0] = m->cu_k[0] = 0;
    int32_t row = 0, pf_i = 0;
    int64_t pf_k = 0;
    for (int pass = 0; pass < 2; pass++) {          /* prefill rows first, then decode */
        for (int32_t i = 0; i < b->n_seqs; i++) {
            const pb_batch_seq *s = &b->seqs[i];
            if (s->is_prefill != (pass == 0)) continue;
            int32_t bs = paged ? b->block_size : 1;
            for (int32_t t = s->n_cached; t < s->context_len; t++, row++) {
                m->tokens[row] = s->tokens[t];
                m->positions[row] = t;
                m->ctx_lens[row] = t + 1;
                if (paged) {
                    m->slots[row] = (int64_t)s->block_table[t / bs] * bs + t % bs;
                    int32_t *bt = m->block_tables + (size_t)row * max_blocks;
                    int32_t need = PB_CDIV(s->context_len, bs);
                    memcpy(bt, s->block_table, (size_t)need * sizeof(int32_t));
                    memset(bt + need, 0, (size_t)(max_blocks - need) * sizeof(int32_t));
                    m->kv_offsets[row] = 0;
                } else {
                    m->slots[row] = s->kv_offset + t;
                    m->kv_offsets[row] = s->kv_offset;
                }
            }
            m->max_ctx = PB_MAX(m->max_ctx, s->context_len);
            if (pass == 0) {
                for (int32_t t = 0; t < s->context_len; t++)
                    m->pf_slots[pf_k + t] = paged
                        ? (int64_t)s->block_table[t / bs] * bs + t % bs : s->kv_offset + t;
                pf_k += s->context_len;
                m->cu_q[pf_i + 1] = m->cu_q[pf_i] + s->n_new;
                m->cu_k[pf_i + 1] = m->cu_k[pf_i] + s->context_len;
                m->max_q = PB_MAX(m->max_q, s->n_new);
                m->max_k = PB_MAX(m->max_k, s->context_len);
                if (s->n_cached > 0) m->pf_cached = true;
                pf_i++;
            }
            if (s->sample) {
                m->sample_rows[m->n_sample] = row - 1;
                m->sample_seq[m->n_sample] = i;
                m->keys[m->n_sample] = sample_key_(sample_seed, s);
                m->n_sample++;
            }
        }
        if (pass == 0) m->n_pf_tok = row;
    }
    return PB_OK;
}

pb_status pb_fwd_meta_check(const pb_fwd_meta *m, const pb_batch *b) {
#define META_FAIL(...) do { pb_log_error("fwd_meta_check: " __VA_ARGS__); return PB_ERR_INVALID; } while (0)
    int64_t T = 0;
    int32_t n_pf = 0, n_sample = 0;
    for (int32_t i = 0; i < b->n_seqs; i++) {
        T += b->seqs[i].n_new;
        n_pf += b->seqs[i].is_prefill;
        n_sample += b->seqs[i].sample;
    }
    if (m->T != T) META_FAIL("T %d != %lld", m->T, (long long)T);
    if (m->n_pf_seqs != n_pf || m->n_sample != n_sample) META_FAIL("seq counts");
    if (m->n_pf_tok != (n_pf ? m->cu_q[n_pf] : 0)) META_FAIL("n_pf_tok %d", m->n_pf_tok);
    for (int32_t r = 0; r < m->T; r++) {
        if (m->ctx_lens[r] != m->positions[r] + 1) META_FAIL("row %d ctx_len", r);
        if (m->ctx_lens[r] > m->max_ctx) META_FAIL("row %d exceeds max_ctx", r);
        if (m->slots[r] < 0) META_FAIL("row %d slot %lld", r, (long long)m->slots[r]);
        for (int32_t q = r + 1; q < m->T; q++)
            if (m->slots[q] == m->slots[r]) META_FAIL("rows %d and %d share slot %lld", r, q,
                                                      (long long)m->slots[r]);
    }
    for (int32_t i = 0; i < m->n_pf_seqs; i++) {
        int32_t q = m->cu_q[i + 1] - m->cu_q[i], k = m->cu_k[i + 1] - m->cu_k[i];
        if (q < 1 || k < q || q > m->max_q || k > m->max_k) META_FAIL("prefill seq %d", i);
        /* the last q of the k gathered slots are the rows' own slots */
        for (int32_t j = 0; j < q; j++)
            if (m->pf_slots[m->cu_k[i] + k - q + j] != m->slots[m->cu_q[i] + j])
                META_FAIL("prefill seq %d slot %d", i, j);
    }
    for (int32_t i = 0; i < m->n_sample; i++) {
        const pb_batch_seq *s = &b->seqs[m->sample_seq[i]];
        int32_t r = m->sample_rows[i];
        if (r < 0 || r >= m->T || !s->sample || m->positions[r] != s->context_len - 1)
            META_FAIL("sample %d row %d", i, r);
    }
    return PB_OK;
#undef META_FAIL
}

/* ------------------------------------------------------------------------------ */
/* cpu backend: fp32 host buffers, the C references                                */

static void *cpu_alloc_(void *ctx, size_t bytes) { (void)ctx; return calloc(1, bytes ? bytes : 1); }
static void cpu_free_(void *ctx, void *p) { (void)ctx; free(p); }
static pb_status cpu_weight_init_(void *ctx, void *dst, int32_t rows, int32_t cols, uint64_t seed,
                                  uint64_t tensor, int64_t row0, int64_t col0, int64_t full_cols,
                                  float scale) {
    pb_weight_init_ref(dst, rows, cols, seed, tensor, row0, col0, full_cols, scale);
    return PB_OK;
}
static pb_status cpu_fill_(void *ctx, void *dst, int64_t n, float v) {
    pb_fill_ref(dst, n, v);
    return PB_OK;
}
static pb_status cpu_prepare_(void *ctx, const pb_fwd_meta *m) {
    ((pb_cpu_ctx *)ctx)->meta = m;
    return PB_OK;
}
static pb_status cpu_embed_(void *ctx, void *out, const void *wte, const void *wpe,
                            int32_t pos_offset, int32_t h) {
    const pb_fwd_meta *m = ((pb_cpu_ctx *)ctx)->meta;
    pb_embed_ref(out, wte, m->tokens, wpe, m->positions, pos_offset, m->T, h);
    return PB_OK;
}
static pb_status cpu_gemm_(void *ctx, void *out, int out_f32, const void *in, const void *w,
                           int32_t M, int32_t N, int32_t K) {
    pb_gemm_ref(out, in, w, NULL, M, N, K);
    return PB_OK;
}
static pb_status cpu_bias_act_(void *ctx, void *x, const void *bias, int32_t M, int32_t N,
                               int relu) {
    pb_bias_act_ref(x, bias, M, N, relu);
    return PB_OK;
}
static pb_status cpu_layernorm_(void *ctx, void *out, const void *in, const void *g,
                                const void *b, int32_t M, int32_t N, float eps) {
    pb_layernorm_ref(out, in, g, b, M, N, eps);
    return PB_OK;
}
static pb_status cpu_rmsnorm_(void *ctx, void *out, const void *in, const void *g, int32_t M,
                              int32_t N, float eps) {
    pb_rmsnorm_ref(out, in, g, M, N, eps);
    return PB_OK;
}
static pb_status cpu_silu_mul_(void *ctx, void *out, const void *gu, int32_t M, int32_t F) {
    pb_silu_mul_ref(out, gu, M, F);
    return PB_OK;
}
static pb_status cpu_rope_(void *ctx, void *qkv, int32_t stride, int32_t nq, int32_t nk,
                           int32_t D, float theta) {
    const pb_fwd_meta *m = ((pb_cpu_ctx *)ctx)->meta;
    pb_rope_ref(qkv, stride, m->positions, m->T, nq, nk, D, theta);
    return PB_OK;
}
static pb_status cpu_add_(void *ctx, void *x, const void *y, int64_t n) {
    pb_add_ref(x, y, n);
    return PB_OK;
}
static pb_status cpu_gather_rows_(void *ctx, void *out, const void *in, int32_t h) {
    const pb_fwd_meta *m = ((pb_cpu_ctx *)ctx)->meta;
    pb_gather_rows_ref(out, in, m->sample_rows, m->n_sample, h);
    return PB_OK;
}
/* Every row -- prefill or decode -- is one decode query over the cache with its own
 * context length, so its result is independent of how the step was composed. */
static pb_status cpu_attention_(void *ctx, const pb_attn_call *a) {
    const pb_fwd_meta *m = ((pb_cpu_ctx *)ctx)->meta;
    const float *qkv = a->qkv;
    int32_t D = a->head_size;
    pb_status st = pb_reshape_and_cache_ref(a->shape, a->k_cache, a->v_cache,
                                            qkv + (size_t)a->n_heads * D,
                                            qkv + (size_t)(a->n_heads + a->n_kv_heads) * D,
                                            a->qkv_stride, a->qkv_stride, m->slots, m->T);
    if (st != PB_OK || m->T == 0) return st;
    pb_attn_params p;
    memset(&p, 0, sizeof p);
    p.num_seqs = m->T;
    p.num_heads = a->n_heads;
    p.num_kv_heads = a->n_kv_heads;
    p.head_size = D;
    p.block_size = a->shape->block_size;
    p.max_blocks_per_seq = m->max_blocks;
    p.num_slots = (int64_t)a->shape->num_blocks * a->shape->block_size;
    p.max_context_len = m->max_ctx;
    p.q_stride = a->qkv_stride;
    p.scale = a->scale;
    p.dtype = PB_KV_F32;
    p.kv_cache_dtype = a->shape->kv_cache_dtype;
    p.kv_scale = a->shape->kv_scale;
    if (m->paged)
        return pb_paged_attention_ref(&p, a->out, qkv, a->k_cache, a->v_cache, m->block_tables,
                                      m->ctx_lens);
    return pb_contig_attention_ref(&p, a->out, qkv, a->k_cache, a->v_cache, m->kv_offsets,
                                   m->ctx_lens);
}
/* ---- the split routing (shared with the cuda backend) ---- */

pb_status pb_attention_route(const pb_attn_kernels *k, void *ctx, const pb_fwd_meta *m,
                             const pb_meta_view *v, const pb_attn_call *a, size_t elem,
                             pb_kv_dtype dtype) {
    const char *qkv = a->qkv;
    int32_t H = a->n_heads, Hkv = a->n_kv_heads, D = a->head_size;
    const char *kp = qkv + (size_t)H * D * elem, *vp = qkv + (size_t)(H + Hkv) * D * elem;
    pb_status st = k->reshape_and_cache(ctx, a->shape, a->k_cache, a->v_cache, kp, vp,
                                        a->qkv_stride, a->qkv_stride, v->slots, m->T);
    if (st != PB_OK) return st;
    if (m->n_pf_seqs > 0) {
        pb_prefill_params pp;
        memset(&pp, 0, sizeof pp);
        pp.num_seqs = m->n_pf_seqs;
        pp.num_heads = H;
        pp.num_kv_heads = Hkv;
        pp.head_size = D;
        pp.max_q_len = m->max_q;
        pp.max_k_len = m->max_k;
        pp.q_stride = a->qkv_stride;
        pp.scale = a->scale;
        pp.dtype = dtype;
        if (!m->pf_cached) {          /* keys = the prompts' own, still in qkv */
            pp.k_stride = pp.v_stride = a->qkv_stride;
            st = k->prefill(ctx, &pp, a->out, qkv, kp, vp, v->cu_q, v->cu_q);
        } else {                      /* cached prefixes: gather all keys from the cache */
            int32_t nk = m->cu_k[m->n_pf_seqs];
            size_t bytes = (size_t)nk * Hkv * D * elem;
            char *gk = k->scratch(ctx, 2 * bytes);
            if (!gk) return PB_ERR_NOMEM;
            st = k->gather(ctx, a->shape, gk, gk + bytes, a->k_cache, a->v_cache, v->pf_slots, nk);
            if (st == PB_OK) st = k->prefill(ctx, &pp, a->out, qkv, gk, gk + bytes, v->cu_q, v->cu_k);
        }
        if (st != PB_OK) return st;
    }
    int32_t n_dec = m->T - m->n_pf_tok, max_ctx = 0;
    if (n_dec <= 0) return PB_OK;
    for (int32_t r = m->n_pf_tok; r < m->T; r++) max_ctx = PB_MAX(max_ctx, m->ctx_lens[r]);
    if (m->attn_max_ctx > 0) max_ctx = m->attn_max_ctx;   /* a graph's fixed launch */
    pb_attn_params p;
    memset(&p, 0, sizeof p);
    p.num_seqs = n_dec;
    p.num_heads = H;
    p.num_kv_heads = Hkv;
    p.head_size = D;
    p.block_size = a->shape->block_size;
    p.max_blocks_per_seq = m->max_blocks;
    p.num_slots = (int64_t)a->shape->num_blocks * a->shape->block_size;
    p.max_context_len = max_ctx;
    p.q_stride = a->qkv_stride;
    p.scale = a->scale;
    p.dtype = dtype;
    p.kv_cache_dtype = a->shape->kv_cache_dtype;
    p.kv_scale = a->shape->kv_scale;
    const char *q = qkv + (size_t)m->n_pf_tok * a->qkv_stride * elem;
    char *out = (char *)a->out + (size_t)m->n_pf_tok * H * D * elem;
    if (m->paged)
        return k->paged(ctx, &p, out, q, a->k_cache, a->v_cache,
                        v->block_tables + (size_t)m->n_pf_tok * m->max_blocks,
                        v->ctx_lens + m->n_pf_tok);
    return k->contig(ctx, &p, out, q, a->k_cache, a->v_cache, v->kv_offsets + m->n_pf_tok,
                     v->ctx_lens + m->n_pf_tok);
}

static pb_status ref_reshape_(void *ctx, const pb_kv_cache_shape *c, void *k, void *v,
                              const void *key, const void *value, int32_t ks, int32_t vs,
                              const int64_t *slots, int32_t n) {
    return pb_reshape_and_cache_ref(c, k, v, key, value, ks, vs, slots, n);
}
static pb_status ref_gather_(void *ctx, const pb_kv_cache_shape *c, void *key, void *value,
                             const void *k, const void *v, const int64_t *slots, int32_t n) {
    return pb_gather_cached_kv_ref(c, key, value, k, v, slots, n);
}
static pb_status ref_prefill_(void *ctx, const pb_prefill_params *p, void *out, const void *q,
                              const void *k, const void *v, const int32_t *cu_q, const int32_t *cu_k) {
    return pb_prefill_attention_ref(p, out, q, k, v, cu_q, cu_k);
}
static pb_status ref_paged_(void *ctx, const pb_attn_params *p, void *out, const void *q,
                            const void *k, const void *v, const int32_t *bt, const int32_t *cl) {
    return pb_paged_attention_ref(p, out, q, k, v, bt, cl);
}
static pb_status ref_contig_(void *ctx, const pb_attn_params *p, void *out, const void *q,
                             const void *k, const void *v, const int64_t *off, const int32_t *cl) {
    return pb_contig_attention_ref(p, out, q, k, v, off, cl);
}
static void *ref_scratch_(void *ctx, size_t bytes) {
    pb_cpu_ctx *c = ctx;
    if (bytes > c->scratch_cap) {
        c->scratch = pb_xrealloc(c->scratch, bytes);
        c->scratch_cap = bytes;
    }
    return c->scratch;
}
static const pb_attn_kernels ref_kernels_ = {ref_reshape_, ref_gather_, ref_prefill_, ref_paged_,
                                             ref_contig_, ref_scratch_};

static pb_status cpu_split_attention_(void *ctx, const pb_attn_call *a) {
    const pb_fwd_meta *m = ((pb_cpu_ctx *)ctx)->meta;
    pb_meta_view v = {m->ctx_lens, m->block_tables, m->cu_q, m->cu_k,
                      m->slots, m->kv_offsets, m->pf_slots};
    return pb_attention_route(&ref_kernels_, ctx, m, &v, a, sizeof(float), PB_KV_F32);
}

void pb_cpu_ctx_free(pb_cpu_ctx *c) {
    free(c->scratch);
    c->scratch = NULL;
    c->scratch_cap = 0;
}

static pb_status cpu_candidates_(void *ctx, const float *logits, int32_t S, int32_t V,
                                 int32_t n_top, const pb_sample_params *sp, int32_t *tokens,
                                 float *logprobs, int32_t *n_out) {
    const pb_fwd_meta *m = ((pb_cpu_ctx *)ctx)->meta;
    return pb_candidates_ref(logits, S, V, n_top, sp, m->keys, tokens, logprobs, n_out);
}

const pb_model_ops pb_model_ops_cpu = {
    .name = "cpu",
    .act_bytes = sizeof(float),
    .kv_dtype = PB_KV_F32,
    .alloc = cpu_alloc_,
    .free = cpu_free_,
    .weight_init = cpu_weight_init_,
    .fill = cpu_fill_,
    .prepare = cpu_prepare_,
    .embed = cpu_embed_,
    .gemm = cpu_gemm_,
    .bias_act = cpu_bias_act_,
    .layernorm = cpu_layernorm_,
    .rmsnorm = cpu_rmsnorm_,
    .silu_mul = cpu_silu_mul_,
    .rope = cpu_rope_,
    .add = cpu_add_,
    .gather_rows = cpu_gather_rows_,
    .attention = cpu_attention_,
    .allreduce = NULL,
    .candidates = cpu_candidates_,
    .range = NULL,
};

const pb_model_ops pb_model_ops_cpu_split = {
    .name = "cpu-split",
    .act_bytes = sizeof(float),
    .kv_dtype = PB_KV_F32,
    .alloc = cpu_alloc_,
    .free = cpu_free_,
    .weight_init = cpu_weight_init_,
    .fill = cpu_fill_,
    .prepare = cpu_prepare_,
    .embed = cpu_embed_,
    .gemm = cpu_gemm_,
    .bias_act = cpu_bias_act_,
    .layernorm = cpu_layernorm_,
    .rmsnorm = cpu_rmsnorm_,
    .silu_mul = cpu_silu_mul_,
    .rope = cpu_rope_,
    .add = cpu_add_,
    .gather_rows = cpu_gather_rows_,
    .attention = cpu_split_attention_,
    .allreduce = NULL,
    .candidates = cpu_candidates_,
    .range = NULL,
};

/* ------------------------------------------------------------------------------ */
/* the model: weights and activation buffers                                        */

typedef struct {
    void *ln1_g, *ln1_b;    /* [h]                                                  */
    void *wqkv, *bqkv;      /* [Nqkv, h], [Nqkv]: local q | k | v heads              */
    void *wo, *bo;          /* [h, Hl*D] (row-parallel), [h] (rank 0)                */
    void *ln2_g, *ln2_b;    /* [h]                                                  */
    void *w1, *b1;          /* OPT fc1 [Fl, h], [Fl];  LLaMA gate_up [2Fl, h]        */
    void *w2, *b2;          /* OPT fc2 [h, Fl], [h];   LLaMA down [h, Fl]            */
} lm_layer;

struct pb_lm {
    pb_lm_params p;
    pb_model spec;
    const pb_model_ops *ops;
    void *ctx;
    int32_t h, D, V, Hl, Hkvl, Fl, Nqkv, n_ff;   /* n_ff: columns of w1's output     */
    float eps;
    lm_layer *layers;
    void *wte, *wpe, *lm_head, *lnf_g, *lnf_b;
    int64_t weight_bytes;
    pb_status init_status;
    /* activations (act dtype) [cap_T rows] and the sampled rows [cap_S] */
    void *x, *hn, *qkv, *attn, *proj, *ff, *ff2;
    void *xs, *xsn, *logits;
    int64_t cap_T, cap_S;
    uint64_t generation;          /* bumped at every reallocation of the T buffers   */
};

/* tensor ids of the weight generator (per layer: base + k) */
enum { T_WTE = 1, T_WPE = 2, T_LM_HEAD = 3, T_LNF_G = 4, T_LNF_B = 5, T_LAYER0 = 64, T_PER_LAYER = 32 };
enum { L_LN1_G, L_LN1_B, L_Q, L_K, L_V, L_BQ, L_BK, L_BV, L_WO, L_BO, L_LN2_G, L_LN2_B,
       L_W1, L_B1, L_W2, L_B2, L_UP };

static void *walloc_(pb_lm *lm, int64_t n_elems) {
    if (lm->init_status != PB_OK) return NULL;
    size_t bytes = (size_t)n_elems * lm->ops->act_bytes;
    void *p = lm->ops->alloc(lm->ctx, bytes);
    if (!p) {
        pb_log_error("model: cannot allocate %zu bytes of weights (%s)", bytes, lm->ops->name);
        lm->init_status = PB_ERR_NOMEM;
    } else {
        lm->weight_bytes += (int64_t)bytes;
    }
    return p;
}

/* dst[rows, cols] = slice (row0, col0) of full tensor `tid` with full_cols columns */
static void winit_(pb_lm *lm, void *dst, int32_t rows, int32_t cols, uint64_t tid, int64_t row0,
                   int64_t col0, int64_t full_cols, float scale) {
    if (lm->init_status != PB_OK || !dst) return;
    lm->init_status = lm->ops->weight_init(lm->ctx, dst, rows, cols, lm->p.weight_seed, tid, row0,
                                           col0, full_cols, scale);
}

static void wfill_(pb_lm *lm, void *dst, int64_t n, float v) {
    if (lm->init_status != PB_OK || !dst) return;
    lm->init_status = lm->ops->fill(lm->ctx, dst, n, v);
}

static void *act_(pb_lm *lm, int64_t n_elems, size_t elem) {
    if (lm->init_status != PB_OK) return NULL;
    void *p = lm->ops->alloc(lm->ctx, (size_t)(n_elems > 0 ? n_elems : 1) * elem);
    if (!p) lm->init_status = PB_ERR_NOMEM;
    return p;
}

static void free_acts_T_(pb_lm *lm) {
    void **bufs[] = {&lm->x, &lm->hn, &lm->qkv, &lm->attn, &lm->proj, &lm->ff, &lm->ff2};
    for (size_t i = 0; i < PB_ARRAY_LEN(bufs); i++) { lm->ops->free(lm->ctx, *bufs[i]); *bufs[i] = NULL; }
    lm->cap_T = 0;
}
static void free_acts_S_(pb_lm *lm) {
    lm->ops->free(lm->ctx, lm->xs); lm->ops->free(lm->ctx, lm->xsn); lm->ops->free(lm->ctx, lm->logits);
    lm->xs = lm->xsn = lm->logits = NULL;
    lm->cap_S = 0;
}

static pb_status ensure_acts_(pb_lm *lm, int64_t T, int64_t S) {
    size_t e = lm->ops->act_bytes;
    lm->init_status = PB_OK;
    if (T > lm->cap_T) {
        free_acts_T_(lm);
        int64_t cap = PB_MAX(T, (int64_t)16);
        lm->x = act_(lm, cap * lm->h, e);
        lm->hn = act_(lm, cap * lm->h, e);
        lm->qkv = act_(lm, cap * lm->Nqkv, e);
        lm->attn = act_(lm, cap * lm->Hl * lm->D, e);
        lm->proj = act_(lm, cap * lm->h, e);
        lm->ff = act_(lm, cap * lm->n_ff, e);
        lm->ff2 = act_(lm, cap * lm->Fl, e);
        if (lm->init_status != PB_OK) { free_acts_T_(lm); return lm->init_status; }
        lm->cap_T = cap;
        lm->generation++;
    }
    if (S > lm->cap_S) {
        free_acts_S_(lm);
        int64_t cap = PB_MAX(S, (int64_t)8);
        lm->xs = act_(lm, cap * lm->h, e);
        lm->xsn = act_(lm, cap * lm->h, e);
        lm->logits = act_(lm, cap * lm->V, sizeof(float));
        if (lm->init_status != PB_OK) { free_acts_S_(lm); return lm->init_status; }
        lm->cap_S = cap;
    }
    return PB_OK;
}

int32_t pb_lm_local_heads(const pb_lm *lm) { return lm->Hl; }
int32_t pb_lm_local_kv_heads(const pb_lm *lm) { return lm->Hkvl; }
int64_t pb_lm_weight_bytes(const pb_lm *lm) { return lm->weight_bytes; }

pb_status pb_lm_create(const pb_lm_params *p, pb_lm **out) {
    *out = NULL;
    const pb_model *s = p->spec;
    int32_t tp = p->tp_size, r = p->tp_rank;
    int32_t x = (int32_t)(16 / pb_kv_dtype_size(p->ops->kv_dtype));
    if (!s || tp < 1 || r < 0 || r >= tp || s->n_layers < 1 || s->hidden < 1 || s->n_heads < 1 ||
        s->n_kv_heads < 1 || s->head_size < 2 || s->head_size % 2 || s->ffn < 1 || s->vocab < 1 ||
        s->n_heads % s->n_kv_heads || s->n_heads % tp || s->n_kv_heads % tp || s->ffn % tp ||
        s->head_size % x) {
        pb_log_error("model: %s cannot be built with tensor parallelism %d (heads %d, kv heads "
                     "%d, head size %d, ffn %d)", s ? s->name : "(null)", tp,
                     s ? s->n_heads : 0, s ? s->n_kv_heads : 0, s ? s->head_size : 0,
                     s ? s->ffn : 0);
        return PB_ERR_INVALID;
    }
    pb_lm *lm = pb_xcalloc(1, sizeof *lm);
    lm->p = *p;
    lm->spec = *s;
    lm->p.spec = &lm->spec;
    lm->ops = p->ops;
    lm->ctx = p->ctx;
    lm->h = s->hidden;
    lm->D = s->head_size;
    lm->V = s->vocab;
    lm->Hl = s->n_heads / tp;
    lm->Hkvl = s->n_kv_heads / tp;
    lm->Fl = s->ffn / tp;
    lm->Nqkv = (lm->Hl + 2 * lm->Hkvl) * lm->D;
    bool opt = s->arch == PB_ARCH_OPT;
    lm->n_ff = opt ? lm->Fl : 2 * lm->Fl;
    lm->eps = opt ? 1e-5f : 1e-6f;
    int32_t h = lm->h, D = lm->D, Hq = s->n_heads * D, Hk = s->n_kv_heads * D;
    float a_emb = 3.0f * sqrtf(3.0f / (float)h);    /* logits std ~ 3 */
    float a_h = sqrtf(3.0f / (float)h), a_attn = sqrtf(3.0f / (float)Hq);
    float a_ff = sqrtf(3.0f / (float)s->ffn), a_b = 0.05f;

    lm->wte = walloc_(lm, (int64_t)lm->V * h);
    winit_(lm, lm->wte, lm->V, h, T_WTE, 0, 0, h, a_emb);
    if (opt) {
        lm->wpe = walloc_(lm, (int64_t)(s->max_len + 2) * h);
        winit_(lm, lm->wpe, s->max_len + 2, h, T_WPE, 0, 0, h, a_emb);
        lm->lm_head = lm->wte;
    } else {
        lm->lm_head = walloc_(lm, (int64_t)lm->V * h);
        winit_(lm, lm->lm_head, lm->V, h, T_LM_HEAD, 0, 0, h, a_emb);
    }
    lm->lnf_g = walloc_(lm, h);
    wfill_(lm, lm->lnf_g, h, 1.0f);
    if (opt) {
        lm->lnf_b = walloc_(lm, h);
        winit_(lm, lm->lnf_b, 1, h, T_LNF_B, 0, 0, h, a_b);
    }
    lm->layers = pb_xcalloc((size_t)s->n_layers, sizeof(lm_layer));
    size_t ab = p->ops->act_bytes;
    for (int32_t l = 0; l < s->n_layers && lm->init_status == PB_OK; l++) {
        lm_layer *L = &lm->layers[l];
        uint64_t t0 = T_LAYER0 + (uint64_t)l * T_PER_LAYER;
        int64_t q0 = (int64_t)r * lm->Hl * D, k0 = (int64_t)r * lm->Hkvl * D;
        int32_t nq = lm->Hl * D, nk = lm->Hkvl * D;
        L->ln1_g = walloc_(lm, h);
        wfill_(lm, L->ln1_g, h, 1.0f);
        L->ln2_g = walloc_(lm, h);
        wfill_(lm, L->ln2_g, h, 1.0f);
        /* fused local q | k | v rows, each a row slice of its full tensor */
        L->wqkv = walloc_(lm, (int64_t)lm->Nqkv * h);
        char *w = L->wqkv;
        winit_(lm, w, nq, h, t0 + L_Q, q0, 0, h, a_h);
        winit_(lm, w ? w + (size_t)nq * h * ab : NULL, nk, h, t0 + L_K, k0, 0, h, a_h);
        winit_(lm, w ? w + (size_t)(nq + nk) * h * ab : NULL, nk, h, t0 + L_V, k0, 0, h, a_h);
        L->wo = walloc_(lm, (int64_t)h * nq);
        winit_(lm, L->wo, h, nq, t0 + L_WO, 0, q0, Hq, a_attn);
        if (opt) {
            L->ln1_b = walloc_(lm, h);
            winit_(lm, L->ln1_b, 1, h, t0 + L_LN1_B, 0, 0, h, a_b);
            L->ln2_b = walloc_(lm, h);
            winit_(lm, L->ln2_b, 1, h, t0 + L_LN2_B, 0, 0, h, a_b);
            L->bqkv = walloc_(lm, lm->Nqkv);
            char *b = L->bqkv;
            winit_(lm, b, 1, nq, t0 + L_BQ, 0, q0, Hq, a_b);
            winit_(lm, b ? b + (size_t)nq * ab : NULL, 1, nk, t0 + L_BK, 0, k0, Hk, a_b);
            winit_(lm, b ? b + (size_t)(nq + nk) * ab : NULL, 1, nk, t0 + L_BV, 0, k0, Hk, a_b);
            if (r == 0) {
                L->bo = walloc_(lm, h);
                winit_(lm, L->bo, 1, h, t0 + L_BO, 0, 0, h, a_b);
                L->b2 = walloc_(lm, h);
                winit_(lm, L->b2, 1, h, t0 + L_B2, 0, 0, h, a_b);
            }
            L->w1 = walloc_(lm, (int64_t)lm->Fl * h);
            winit_(lm, L->w1, lm->Fl, h, t0 + L_W1, (int64_t)r * lm->Fl, 0, h, a_h);
            L->b1 = walloc_(lm, lm->Fl);
            winit_(lm, L->b1, 1, lm->Fl, t0 + L_B1, 0, (int64_t)r * lm->Fl, s->ffn, a_b);
        } else {
            L->w1 = walloc_(lm, (int64_t)2 * lm->Fl * h);
            char *g = L->w1;
            winit_(lm, g, lm->Fl, h, t0 + L_W1, (int64_t)r * lm->Fl, 0, h, a_h);
            winit_(lm, g ? g + (size_t)lm->Fl * h * ab : NULL, lm->Fl, h, t0 + L_UP,
                   (int64_t)r * lm->Fl, 0, h, a_h);
        }
        L->w2 = walloc_(lm, (int64_t)h * lm->Fl);
        winit_(lm, L->w2, h, lm->Fl, t0 + L_W2, 0, (int64_t)r * lm->Fl, s->ffn, a_ff);
    }
    pb_status st = lm->init_status;
    if (st == PB_OK) st = ensure_acts_(lm, PB_MAX(p->max_tokens_hint, 1), 8);
    if (st != PB_OK) {
        pb_lm_destroy(lm);
        return st;
    }
    *out = lm;
    return PB_OK;
}

void pb_lm_destroy(pb_lm *lm) {
    if (!lm) return;
    const pb_model_ops *o = lm->ops;
    free_acts_T_(lm);
    free_acts_S_(lm);
    if (lm->layers) {
        for (int32_t l = 0; l < lm->spec.n_layers; l++) {
            lm_layer *L = &lm->layers[l];
            void *ws[] = {L->ln1_g, L->ln1_b, L->wqkv, L->bqkv, L->wo, L->bo, L->ln2_g, L->ln2_b,
                          L->w1, L->b1, L->w2, L->b2};
            for (size_t i = 0; i < PB_ARRAY_LEN(ws); i++) o->free(lm->ctx, ws[i]);
        }
        free(lm->layers);
    }
    if (lm->lm_head != lm->wte) o->free(lm->ctx, lm->lm_head);
    o->free(lm->ctx, lm->wte);
    o->free(lm->ctx, lm->wpe);
    o->free(lm->ctx, lm->lnf_g);
    o->free(lm->ctx, lm->lnf_b);
    free(lm);
}

/* ------------------------------------------------------------------------------ */
/* KV cache                                                                         */

pb_status pb_kv_cache_alloc(pb_kv_cache *c, const pb_lm *lm, int32_t num_blocks,
                            int32_t block_size, bool contiguous) {
    memset(c, 0, sizeof *c);
    if (num_blocks < 1 || block_size < 1 || (contiguous && num_blocks != 1)) return PB_ERR_INVALID;
    c->n_layers = lm->spec.n_layers;
    c->shape.num_blocks = num_blocks;
    c->shape.num_kv_heads = lm->Hkvl;
    c->shape.head_size = lm->D;
    c->shape.block_size = block_size;
    c->shape.dtype = lm->ops->kv_dtype;
    c->shape.kv_cache_dtype = lm->p.kv_cache_dtype;
    c->shape.kv_scale = lm->p.kv_cache_dtype != PB_KV_CACHE_AUTO ? lm->p.kv_scale : 0.0f;
    c->contiguous = contiguous;
    pb_status st = pb_kv_cache_shape_check(&c->shape);
    if (st != PB_OK) return st;
    size_t bytes = pb_kv_block_bytes(&c->shape) * (size_t)num_blocks;
    c->k = pb_xcalloc((size_t)c->n_layers, sizeof(void *));
    c->v = pb_xcalloc((size_t)c->n_layers, sizeof(void *));
    for (int32_t l = 0; l < c->n_layers; l++) {
        c->k[l] = lm->ops->alloc(lm->ctx, bytes);
        c->v[l] = lm->ops->alloc(lm->ctx, bytes);
        if (!c->k[l] || !c->v[l]) {
            pb_log_error("model: cannot allocate the KV cache (%d layers x 2 x %zu bytes, %s)",
                         c->n_layers, bytes, lm->ops->name);
            pb_kv_cache_free(c, lm);
            return PB_ERR_NOMEM;
        }
    }
    return PB_OK;
}

void pb_kv_cache_free(pb_kv_cache *c, const pb_lm *lm) {
    if (c->k)
        for (int32_t l = 0; l < c->n_layers; l++) {
            lm->ops->free(lm->ctx, c->k[l]);
            lm->ops->free(lm->ctx, c->v[l]);
        }
    free(c->k);
    free(c->v);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------------------ */
/* the forward pass, once for every backend                                         */

#define TRY(call) do { pb_status st_ = (call); if (st_ != PB_OK) return st_; } while (0)

static pb_status norm_(pb_lm *lm, void *out, const void *in, const void *g, const void *b,
                       int32_t M) {
    if (lm->spec.arch == PB_ARCH_OPT)
        return lm->ops->layernorm(lm->ctx, out, in, g, b, M, lm->h, lm->eps);
    return lm->ops->rmsnorm(lm->ctx, out, in, g, M, lm->h, lm->eps);
}

static void range_(pb_lm *lm, const char *name) {
    if (lm->ops->range) lm->ops->range(lm->ctx, name);
}
/* TRY inside an open range: close the range before returning the error */
#define TRY_IN_RANGE(call) do { pb_status st_ = (call); if (st_ != PB_OK) { range_(lm, NULL); return st_; } } while (0)

pb_status pb_lm_reserve(pb_lm *lm, int64_t T, int64_t S) { return ensure_acts_(lm, T, S); }
uint64_t pb_lm_buffers_generation(const pb_lm *lm) { return lm->generation; }

pb_status pb_lm_forward(pb_lm *lm, const pb_fwd_meta *m, pb_kv_cache *cache, int32_t n_top,
                        const pb_sample_params *sp, int32_t *tokens, float *logprobs,
                        int32_t *n_out) {
    if (m->T == 0) return pb_lm_forward_layers(lm, m, cache);   /* checks the cache only */
    TRY(ensure_acts_(lm, m->T, m->n_sample));
    TRY(lm->ops->prepare(lm->ctx, m));
    TRY(pb_lm_forward_layers(lm, m, cache));
    return pb_lm_forward_logits(lm, m, n_top, sp, tokens, logprobs, n_out);
}

pb_status pb_lm_forward_layers(pb_lm *lm, const pb_fwd_meta *m, pb_kv_cache *cache) {
    const pb_model_ops *o = lm->ops;
    void *c = lm->ctx;
    int32_t T = m->T, h = lm->h, D = lm->D;
    bool opt = lm->spec.arch == PB_ARCH_OPT, tp = lm->p.tp_size > 1;
    if (cache->n_layers != lm->spec.n_layers || cache->shape.num_kv_heads != lm->Hkvl ||
        cache->shape.head_size != D || cache->contiguous == m->paged || T > lm->cap_T)
        return PB_ERR_INVALID;
    if (T == 0) return PB_OK;
    range_(lm, "embed");
    TRY_IN_RANGE(o->embed(c, lm->x, lm->wte, opt ? lm->wpe : NULL, 2, h));
    range_(lm, NULL);
    pb_attn_call ac;
    memset(&ac, 0, sizeof ac);
    ac.shape = &cache->shape;
    ac.qkv = lm->qkv;
    ac.qkv_stride = lm->Nqkv;
    ac.out = lm->attn;
    ac.n_heads = lm->Hl;
    ac.n_kv_heads = lm->Hkvl;
    ac.head_size = D;
    ac.scale = 1.0f / sqrtf((float)D);
    for (int32_t l = 0; l < lm->spec.n_layers; l++) {
        lm_layer *L = &lm->layers[l];
        range_(lm, "layer");
        /* attention block */
        TRY_IN_RANGE(norm_(lm, lm->hn, lm->x, L->ln1_g, L->ln1_b, T));
        TRY_IN_RANGE(o->gemm(c, lm->qkv, 0, lm->hn, L->wqkv, T, lm->Nqkv, h));
        if (L->bqkv) TRY_IN_RANGE(o->bias_act(c, lm->qkv, L->bqkv, T, lm->Nqkv, 0));
        if (!opt) TRY_IN_RANGE(o->rope(c, lm->qkv, lm->Nqkv, lm->Hl, lm->Hkvl, D, 10000.0f));
        ac.k_cache = cache->k[l];
        ac.v_cache = cache->v[l];
        TRY_IN_RANGE(o->attention(c, &ac));
        TRY_IN_RANGE(o->gemm(c, lm->proj, 0, lm->attn, L->wo, T, h, lm->Hl * D));
        if (L->bo) TRY_IN_RANGE(o->bias_act(c, lm->proj, L->bo, T, h, 0));
        if (tp) TRY_IN_RANGE(o->allreduce(c, lm->proj, (int64_t)T * h));
        TRY_IN_RANGE(o->add(c, lm->x, lm->proj, (int64_t)T * h));
        /* feed-forward block */
        TRY_IN_RANGE(norm_(lm, lm->hn, lm->x, L->ln2_g, L->ln2_b, T));
        TRY_IN_RANGE(o->gemm(c, lm->ff, 0, lm->hn, L->w1, T, lm->n_ff, h));
        if (opt) {
            TRY_IN_RANGE(o->bias_act(c, lm->ff, L->b1, T, lm->Fl, 1));
            TRY_IN_RANGE(o->gemm(c, lm->proj, 0, lm->ff, L->w2, T, h, lm->Fl));
        } else {
            TRY_IN_RANGE(o->silu_mul(c, lm->ff2, lm->ff, T, lm->Fl));
            TRY_IN_RANGE(o->gemm(c, lm->proj, 0, lm->ff2, L->w2, T, h, lm->Fl));
        }
        if (L->b2) TRY_IN_RANGE(o->bias_act(c, lm->proj, L->b2, T, h, 0));
        if (tp) TRY_IN_RANGE(o->allreduce(c, lm->proj, (int64_t)T * h));
        TRY_IN_RANGE(o->add(c, lm->x, lm->proj, (int64_t)T * h));
        range_(lm, NULL);
    }
    return PB_OK;
}

pb_status pb_lm_forward_logits(pb_lm *lm, const pb_fwd_meta *m, int32_t n_top, const pb_sample_params *sp,
                               int32_t *tokens, float *logprobs, int32_t *n_out) {
    const pb_model_ops *o = lm->ops;
    void *c = lm->ctx;
    int32_t S = m->n_sample, h = lm->h;
    /* logits and candidates: rank 0 only (the layers' collectives are all done) */
    if (S == 0 || lm->p.tp_rank != 0 || !tokens) return PB_OK;
    if (S > lm->cap_S) return PB_ERR_INVALID;
    range_(lm, "logits");
    TRY_IN_RANGE(o->gather_rows(c, lm->xs, lm->x, h));
    TRY_IN_RANGE(norm_(lm, lm->xsn, lm->xs, lm->lnf_g, lm->lnf_b, S));
    TRY_IN_RANGE(o->gemm(c, lm->logits, 1, lm->xsn, lm->lm_head, S, lm->V, h));
    range_(lm, NULL);
    range_(lm, "sample");
    pb_status st = o->candidates(c, lm->logits, S, lm->V, n_top, sp, tokens, logprobs, n_out);
    range_(lm, NULL);
    return st;
}
