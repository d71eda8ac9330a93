/* attention_ref.c -- C11 references for attention.h: paged and contiguous decode
 * attention (token by token through the block table) and causal varlen prefill.
 * fp32 storage math with double accumulation; any pb_kv_dtype. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"

pb_kv_dtype pb_attn_cache_elem(const pb_attn_params *p) {
    return pb_kv_cache_elem(p->dtype, p->kv_cache_dtype);
}

pb_status pb_attn_params_check(const pb_attn_params *p, int paged) {
    if (!p) return PB_ERR_INVALID;
    const char *why = NULL;
    if (!pb_kv_dtype_name(p->dtype) || pb_kv_dtype_is_fp8(p->dtype)) why = "unknown dtype";
    else if (!pb_kv_cache_dtype_name(p->kv_cache_dtype)) why = "unknown kv_cache_dtype";
    else if (p->kv_cache_dtype != PB_KV_CACHE_AUTO && !pb_kv_scale_ok(p->kv_scale))
        why = "an fp8 cache needs a finite kv_scale > 0";
    else if (p->head_size % pb_kv_x(pb_attn_cache_elem(p)))
        why = "head_size must be a multiple of the cache's x = 16 / sizeof(elem)";
    else if (p->num_seqs < 0) why = "num_seqs < 0";
    else if (p->num_heads <= 0 || p->num_kv_heads <= 0) why = "num_heads and num_kv_heads must be > 0";
    else if (p->num_heads % p->num_kv_heads) why = "num_heads must be a multiple of num_kv_heads";
    else if (p->head_size <= 0 || p->head_size % pb_kv_x(p->dtype))
        why = "head_size must be a positive multiple of x = 16 / sizeof(elem)";
    else if (p->max_context_len < 0) why = "max_context_len < 0";
    else if (p->q_stride != 0 && p->q_stride < p->num_heads * p->head_size)
        why = "q_stride smaller than num_heads * head_size";
    else if (!(p->scale == p->scale)) why = "scale is NaN";
    else if (paged && p->block_size <= 0) why = "block_size must be > 0";
    else if (paged && p->max_blocks_per_seq < PB_CDIV(p->max_context_len, p->block_size))
        why = "max_blocks_per_seq < ceil(max_context_len / block_size)";
    else if (paged && p->num_blocks < 0) why = "num_blocks < 0";
    else if (!paged && p->num_slots < p->max_context_len) why = "num_slots < max_context_len";
    if (why) { pb_log_error("attention: %s", why); return PB_ERR_INVALID; }
    return PB_OK;
}

/* fraction of the last wave's CTA slots that are busy, averaged over all waves */
static double wave_efficiency(double ctas, double slots) {
    double waves = ctas / slots;
    return waves / ceil(waves);
}

pb_attn_algo pb_paged_attention_choose(const pb_attn_params *p, int32_t num_sms) {
    if (p->max_context_len > PB_ATTN_V1_MAX_CONTEXT) return PB_ATTN_V2;
    int32_t parts = PB_CDIV(p->max_context_len, PB_ATTN_PARTITION);
    if (parts <= 1 || p->num_seqs <= 0) return PB_ATTN_V1;
    /* 4 resident CTAs per SM (128 threads x ~124 registers); V2 pays ~5% for its
       reduce kernel and partial partitions.  NOTE: calibrate on a device. */
    const double slots = 4.0 * (num_sms > 0 ? num_sms : 1);
    const double ctas = (double)p->num_seqs * p->num_heads;
    double e1 = wave_efficiency(ctas, slots), e2 = 0.95 * wave_efficiency(ctas * parts, slots);
    return e2 > e1 ? PB_ATTN_V2 : PB_ATTN_V1;
}

size_t pb_paged_attention_workspace_bytes(const pb_attn_params *p) {
    size_t parts = (size_t)PB_CDIV(p->max_context_len > 0 ? p->max_context_len : 1, PB_ATTN_PARTITION);
    return (size_t)p->num_seqs * (size_t)p->num_heads * parts * (2 + (size_t)p->head_size) * 4;
}

/* ---- decode: one body, two address maps ---- */

typedef struct {
    const pb_attn_params *p;
    int paged;
    const int32_t *block_tables;   /* paged */
    const int64_t *kv_offsets;     /* contiguous */
} kv_map;

/* element index of K(token t, dim d) / V(token t, dim d) of sequence s, kv head kh */
static size_t k_index(const kv_map *m, int32_t s, int32_t kh, int32_t t, int32_t d) {
    const pb_attn_params *p = m->p;
    int64_t x = pb_kv_x(pb_attn_cache_elem(p)), D = p->head_size;
    if (m->paged) {
        int64_t bs = p->block_size;
        int64_t blk = m->block_tables[(int64_t)s * p->max_blocks_per_seq + t / bs];
        return (size_t)((((blk * p->num_kv_heads + kh) * (D / x) + d / x) * bs + t % bs) * x + d % x);
    }
    int64_t slot = m->kv_offsets[s] + t;
    return (size_t)(((kh * (D / x) + d / x) * p->num_slots + slot) * x + d % x);
}

static size_t v_index(const kv_map *m, int32_t s, int32_t kh, int32_t t, int32_t d) {
    const pb_attn_params *p = m->p;
    int64_t D = p->head_size;
    if (m->paged) {
        int64_t bs = p->block_size;
        int64_t blk = m->block_tables[(int64_t)s * p->max_blocks_per_seq + t / bs];
        return (size_t)(((blk * p->num_kv_heads + kh) * D + d) * bs + t % bs);
    }
    int64_t slot = m->kv_offsets[s] + t;
    return (size_t)((kh * D + d) * p->num_slots + slot);
}

static pb_status check_seqs(const kv_map *m, const int32_t *context_lens) {
    const pb_attn_params *p = m->p;
    for (int32_t s = 0; s < p->num_seqs; s++) {
        int32_t c = context_lens[s];
        if (c < 0 || c > p->max_context_len) {
            pb_log_error("attention: context_lens[%d] = %d outside [0, max_context_len %d]",
                         s, c, p->max_context_len);
            return PB_ERR_INVALID;
        }
        if (m->paged) {
            for (int32_t b = 0; b < PB_CDIV(c, p->block_size); b++) {
                int32_t blk = m->block_tables[(int64_t)s * p->max_blocks_per_seq + b];
                if (blk < 0 || (p->num_blocks > 0 && blk >= p->num_blocks)) {
                    pb_log_error("attention: block_tables[%d][%d] = %d out of range", s, b, blk);
                    return PB_ERR_INVALID;
                }
            }
        } else if (m->kv_offsets[s] < 0 || m->kv_offsets[s] + c > p->num_slots) {
            pb_log_error("attention: sequence %d slots [%lld, +%d) outside num_slots %lld", s,
                         (long long)m->kv_offsets[s], c, (long long)p->num_slots);
            return PB_ERR_INVALID;
        }
    }
    return PB_OK;
}

static pb_status decode_ref(const kv_map *m, void *out, const void *q, const void *k_cache,
                            const void *v_cache, const int32_t *context_lens) {
    const pb_attn_params *p = m->p;
    pb_status st = pb_attn_params_check(p, m->paged);
    if (st != PB_OK) return st;
    if ((st = check_seqs(m, context_lens)) != PB_OK) return st;
    const int32_t D = p->head_size, H = p->num_heads, G = p->num_heads / p->num_kv_heads;
    const int64_t qs = p->q_stride ? p->q_stride : (int64_t)H * D;
    const pb_kv_dtype ce = pb_attn_cache_elem(p);   /* fp8: element * kv_scale */
    const double ks = p->kv_cache_dtype != PB_KV_CACHE_AUTO ? p->kv_scale : 1.0;
    double *logits = malloc(sizeof(double) * (size_t)(p->max_context_len > 0 ? p->max_context_len : 1));
    double *acc = malloc(sizeof(double) * (size_t)D);
    float *qv = malloc(sizeof(float) * (size_t)D);
    if (!logits || !acc || !qv) { free(logits); free(acc); free(qv); return PB_ERR_NOMEM; }
    for (int32_t s = 0; s < p->num_seqs; s++) {
        const int32_t ctx = context_lens[s];
        for (int32_t h = 0; h < H; h++) {
            const int32_t kh = h / G;
            for (int32_t d = 0; d < D; d++) qv[d] = pb_kv_load(q, p->dtype, (size_t)(s * qs + (int64_t)h * D + d));
            double mx = -INFINITY;
            for (int32_t t = 0; t < ctx; t++) {
                double dot = 0;
                for (int32_t d = 0; d < D; d++)
                    dot += (double)qv[d] * (pb_kv_load(k_cache, ce, k_index(m, s, kh, t, d)) * ks);
                logits[t] = dot * p->scale;
                if (logits[t] > mx) mx = logits[t];
            }
            double sum = 0;
            for (int32_t t = 0; t < ctx; t++) { logits[t] = exp(logits[t] - mx); sum += logits[t]; }
            for (int32_t d = 0; d < D; d++) acc[d] = 0;
            for (int32_t t = 0; t < ctx; t++)
                for (int32_t d = 0; d < D; d++)
                    acc[d] += logits[t] * (pb_kv_load(v_cache, ce, v_index(m, s, kh, t, d)) * ks);
            size_t o = ((size_t)s * H + h) * D;
            for (int32_t d = 0; d < D; d++)
                pb_kv_store(out, p->dtype, o + d, ctx > 0 ? (float)(acc[d] / sum) : 0.0f);
        }
    }
    free(logits); free(acc); free(qv);
    return PB_OK;
}

pb_status pb_paged_attention_ref(const pb_attn_params *p, void *PB_RESTRICT out,
                                 const void *PB_RESTRICT q, const void *k_cache,
                                 const void *v_cache, const int32_t *block_tables,
                                 const int32_t *context_lens) {
    kv_map m = {p, 1, block_tables, NULL};
    return decode_ref(&m, out, q, k_cache, v_cache, context_lens);
}

pb_status pb_contig_attention_ref(const pb_attn_params *p, void *PB_RESTRICT out,
                                  const void *PB_RESTRICT q, const void *k_cache,
                                  const void *v_cache, const int64_t *kv_offsets,
                                  const int32_t *context_lens) {
    kv_map m = {p, 0, NULL, kv_offsets};
    return decode_ref(&m, out, q, k_cache, v_cache, context_lens);
}

/* ---- prefill ---- */

pb_status pb_prefill_params_check(const pb_prefill_params *p) {
    if (!p) return PB_ERR_INVALID;
    const char *why = NULL;
    if (!pb_kv_dtype_name(p->dtype) || pb_kv_dtype_is_fp8(p->dtype)) why = "unknown dtype";
    else if (p->num_seqs < 0) why = "num_seqs < 0";
    else if (p->num_heads <= 0 || p->num_kv_heads <= 0 || p->num_heads % p->num_kv_heads)
        why = "num_heads must be a positive multiple of num_kv_heads";
    else if (p->head_size <= 0 || p->head_size % pb_kv_x(p->dtype))
        why = "head_size must be a positive multiple of x = 16 / sizeof(elem)";
    else if (p->max_q_len < 0 || p->max_k_len < p->max_q_len) why = "need 0 <= max_q_len <= max_k_len";
    else if (p->q_stride && p->q_stride < p->num_heads * p->head_size) why = "q_stride too small";
    else if (p->k_stride && p->k_stride < p->num_kv_heads * p->head_size) why = "k_stride too small";
    else if (p->v_stride && p->v_stride < p->num_kv_heads * p->head_size) why = "v_stride too small";
    if (why) { pb_log_error("prefill attention: %s", why); return PB_ERR_INVALID; }
    return PB_OK;
}

pb_status pb_prefill_attention_ref(const pb_prefill_params *p, void *PB_RESTRICT out,
                                   const void *q, const void *k, const void *v,
                                   const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k) {
    pb_status st = pb_prefill_params_check(p);
    if (st != PB_OK) return st;
    const int32_t H = p->num_heads, D = p->head_size, G = p->num_heads / p->num_kv_heads;
    const int64_t qs = p->q_stride ? p->q_stride : (int64_t)H * D;
    const int64_t ks = p->k_stride ? p->k_stride : (int64_t)p->num_kv_heads * D;
    const int64_t vs = p->v_stride ? p->v_stride : (int64_t)p->num_kv_heads * D;
    if (cu_seqlens_q[0] != 0 || cu_seqlens_k[0] != 0) {
        pb_log_error("prefill attention: cu_seqlens must start at 0");
        return PB_ERR_INVALID;
    }
    for (int32_t s = 0; s < p->num_seqs; s++) {
        int32_t ql = cu_seqlens_q[s + 1] - cu_seqlens_q[s], kl = cu_seqlens_k[s + 1] - cu_seqlens_k[s];
        if (ql < 0 || kl < ql || ql > p->max_q_len || kl > p->max_k_len) {
            pb_log_error("prefill attention: sequence %d has q_len %d, k_len %d (max %d, %d)",
                         s, ql, kl, p->max_q_len, p->max_k_len);
            return PB_ERR_INVALID;
        }
    }
    double *sc = malloc(sizeof(double) * (size_t)(p->max_k_len > 0 ? p->max_k_len : 1));
    double *acc = malloc(sizeof(double) * (size_t)D);
    if (!sc || !acc) { free(sc); free(acc); return PB_ERR_NOMEM; }
    for (int32_t s = 0; s < p->num_seqs; s++) {
        const int32_t q0 = cu_seqlens_q[s], k0 = cu_seqlens_k[s];
        const int32_t ql = cu_seqlens_q[s + 1] - q0, kl = cu_seqlens_k[s + 1] - k0;
        for (int32_t i = 0; i < ql; i++) {
            const int32_t nk = i + (kl - ql) + 1;          /* keys 0 .. i + kl - ql */
            for (int32_t h = 0; h < H; h++) {
                const int32_t kh = h / G;
                double mx = -INFINITY;
                for (int32_t j = 0; j < nk; j++) {
                    double dot = 0;
                    for (int32_t d = 0; d < D; d++)
                        dot += (double)pb_kv_load(q, p->dtype, (size_t)((q0 + i) * qs + (int64_t)h * D + d)) *
                               pb_kv_load(k, p->dtype, (size_t)((k0 + j) * ks + (int64_t)kh * D + d));
                    sc[j] = dot * p->scale;
                    if (sc[j] > mx) mx = sc[j];
                }
                double sum = 0;
                for (int32_t j = 0; j < nk; j++) { sc[j] = exp(sc[j] - mx); sum += sc[j]; }
                for (int32_t d = 0; d < D; d++) acc[d] = 0;
                for (int32_t j = 0; j < nk; j++)
                    for (int32_t d = 0; d < D; d++)
                        acc[d] += sc[j] * pb_kv_load(v, p->dtype, (size_t)((k0 + j) * vs + (int64_t)kh * D + d));
                size_t o = ((size_t)(q0 + i) * H + h) * D;
                for (int32_t d = 0; d < D; d++) pb_kv_store(out, p->dtype, o + d, (float)(acc[d] / sum));
            }
        }
    }
    free(sc); free(acc);
    return PB_OK;
}
