/* test_attention.c -- C references of attention.h against an independent naive dense
 * attention (the paged blocks gathered back into contiguous K/V), on awkward shapes:
 * batch 1/12/17, context 1/15/16/17/54/97/2048, partial last blocks, block sizes
 * 1/8/16/32/256, head sizes 64/80/96/128, GQA, fp32/fp16/bf16, NaN-poisoned unused
 * cache memory.  Also prefill (causal varlen, cached prefix) and argument checks.
 * FP8 caches (e4m3, e5m2, kv_scale 1 / 1/8 / 2): the references over the x = 16
 * layout equal dense attention over the dequantized K/V, and stay within
 * pb_attn_fp8_bound (kcheck.h, derived from the formats' precision) of the same
 * K/V through an fp16/bf16/fp32 cache, with an RMS error under the unit roundoff u
 * times the RMS output (2^-4 e4m3, 2^-3 e5m2); a wrong kv_scale fails both.
 *   cmake --build build && (cd build && ctest -R test_attention --output-on-failure) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "attn_case.h"
#include "kcheck.h"
#include "pbtest.h"
#include "rng.h"

static pb_kcheck_tol tol_for(pb_kv_dtype t) {
    pb_kcheck_tol tol = {1e-5, 1e-4, 1e-9, 5};
    if (t == PB_KV_F16) { tol.atol = 2e-3; tol.rtol = 1e-2; tol.nmse_max = 1e-5; }
    if (t == PB_KV_BF16) { tol.atol = 1.6e-2; tol.rtol = 2e-2; tol.nmse_max = 1e-3; }
    return tol;
}

/* naive dense attention over the fixture's dense K/V -> out fp32 [S, H, D] */
static void dense_attention(const pb_attn_case *c, float *out) {
    const pb_attn_params *p = &c->p;
    const int32_t S = p->num_seqs, H = p->num_heads, Hkv = p->num_kv_heads, D = p->head_size;
    const int32_t L = p->max_context_len;
    double *w = malloc(sizeof(double) * (size_t)(L > 0 ? L : 1));
    for (int32_t s = 0; s < S; s++)
        for (int32_t h = 0; h < H; h++) {
            int32_t kh = h / (H / Hkv), n = c->context_lens[s];
            double mx = -INFINITY, sum = 0;
            for (int32_t t = 0; t < n; t++) {
                double dot = 0;
                for (int32_t d = 0; d < D; d++)
                    dot += (double)pb_kv_load(c->q, p->dtype, ((size_t)s * H + h) * D + d) *
                           c->dense_k[(((size_t)s * L + t) * Hkv + kh) * D + d];
                w[t] = dot / sqrt((double)D);
                if (w[t] > mx) mx = w[t];
            }
            for (int32_t t = 0; t < n; t++) { w[t] = exp(w[t] - mx); sum += w[t]; }
            for (int32_t d = 0; d < D; d++) {
                double acc = 0;
                for (int32_t t = 0; t < n; t++) acc += w[t] * c->dense_v[(((size_t)s * L + t) * Hkv + kh) * D + d];
                out[((size_t)s * H + h) * D + d] = n ? (float)(acc / sum) : 0.0f;
            }
        }
    free(w);
}

/* run paged + contiguous references on one shape; returns failures */
static int check_shape_flags(uint64_t seed, int32_t S, const int32_t *ctx, int32_t H, int32_t Hkv,
                             int32_t D, int32_t bs, pb_kv_dtype dt, int flags) {
    pb_attn_case c;
    if (pb_attn_case_make(&c, seed, S, ctx, H, Hkv, D, bs, dt, flags, 1) != PB_OK) return 1;
    size_t n = c.out_elems, es = pb_kv_dtype_size(dt);
    float *want = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
    void *out = malloc(es * n);
    dense_attention(&c, want);
    char what[128];
    int fails = 0;
    pb_kcheck_tol tol = tol_for(dt);
    snprintf(what, sizeof what, "paged S%d H%d/%d D%d bs%d %s", S, H, Hkv, D, bs, pb_kv_dtype_name(dt));
    if (pb_paged_attention_ref(&c.p, out, c.q, c.k_cache, c.v_cache, c.block_tables, c.context_lens) != PB_OK)
        fails++;
    pb_kv_to_f32(got, out, dt, n);
    fails += pb_kcheck(what, want, got, n, &tol, NULL);
    snprintf(what, sizeof what, "contig S%d H%d/%d D%d %s", S, H, Hkv, D, pb_kv_dtype_name(dt));
    if (pb_contig_attention_ref(&c.pc, out, c.q, c.kc_contig, c.vc_contig, c.kv_offsets, c.context_lens) != PB_OK)
        fails++;
    pb_kv_to_f32(got, out, dt, n);
    fails += pb_kcheck(what, want, got, n, &tol, NULL);
    free(want); free(got); free(out);
    pb_attn_case_free(&c);
    return fails;
}

static int check_shape(uint64_t seed, int32_t S, const int32_t *ctx, int32_t H, int32_t Hkv,
                       int32_t D, int32_t bs, pb_kv_dtype dt) {
    return check_shape_flags(seed, S, ctx, H, Hkv, D, bs, dt, PB_ATTN_CASE_POISON);
}

PB_TEST(contiguous_odd_offsets_and_slots) {
    int32_t ctx[4] = {1, 17, 40, 9};
    int flags = PB_ATTN_CASE_POISON | PB_ATTN_CASE_ODD_OFFSETS;
    pb_attn_case c;
    PB_REQUIRE(pb_attn_case_make(&c, 1, 4, ctx, 2, 2, 64, 8, PB_KV_F16, flags | PB_ATTN_CASE_ODD_SLOTS, 0) == PB_OK);
    PB_CHECK(c.kv_offsets[1] % 8 != 0 && c.pc.num_slots % 8 != 0);
    pb_attn_case_free(&c);
    PB_CHECK(check_shape_flags(61, 4, ctx, 4, 2, 64, 8, PB_KV_F16, flags) == 0);
    PB_CHECK(check_shape_flags(62, 4, ctx, 4, 2, 64, 8, PB_KV_F32, flags | PB_ATTN_CASE_ODD_SLOTS) == 0);
}

PB_TEST(paged_and_contig_match_dense_awkward_shapes) {
    static const int32_t batches[] = {1, 12, 17};
    static const int32_t ctxs[] = {1, 15, 16, 17, 54, 97};
    static const int32_t bss[] = {1, 8, 16, 32, 256};
    pb_rng r;
    pb_rng_seed(&r, 42, 1);
    int cases = 0;
    for (size_t bi = 0; bi < PB_ARRAY_LEN(batches); bi++)
        for (size_t ki = 0; ki < PB_ARRAY_LEN(bss); ki++) {
            int32_t S = batches[bi], ctx[17];
            /* variable lengths: every awkward length appears, rest random */
            for (int32_t s = 0; s < S; s++)
                ctx[s] = s < (int32_t)PB_ARRAY_LEN(ctxs) ? ctxs[(s + ki) % PB_ARRAY_LEN(ctxs)]
                                                         : 1 + (int32_t)pb_rng_below(&r, 97);
            PB_CHECK(check_shape(100 + cases, S, ctx, 4, 2, 64, bss[ki], PB_KV_F32) == 0);
            cases++;
        }
    PB_CHECK(cases == 15);
}

PB_TEST(head_sizes_and_dtypes) {
    static const int32_t heads[] = {64, 80, 96, 128};
    static const pb_kv_dtype dts[] = {PB_KV_F32, PB_KV_F16, PB_KV_BF16};
    int32_t ctx[3] = {17, 1, 33};
    for (size_t hi = 0; hi < PB_ARRAY_LEN(heads); hi++)
        for (size_t di = 0; di < PB_ARRAY_LEN(dts); di++)
            PB_CHECK(check_shape(7 + hi * 3 + di, 3, ctx, 4, 4, heads[hi], 16, dts[di]) == 0);
}

PB_TEST(long_context_2048_and_mqa) {
    int32_t ctx[2] = {2048, 1000};
    PB_CHECK(check_shape(5, 1, ctx, 2, 1, 128, 16, PB_KV_F16) == 0);
    PB_CHECK(check_shape(6, 2, ctx, 8, 1, 64, 32, PB_KV_F32) == 0);   /* MQA 8:1 */
}

PB_TEST(empty_context_gives_zeros_and_q_stride) {
    int32_t ctx[3] = {0, 5, 0};
    pb_attn_case c;
    PB_REQUIRE(pb_attn_case_make(&c, 3, 3, ctx, 2, 2, 64, 8, PB_KV_F32, 1, 1) == PB_OK);
    float out[3 * 2 * 64], want[3 * 2 * 64];
    PB_REQUIRE(pb_paged_attention_ref(&c.p, out, c.q, c.k_cache, c.v_cache, c.block_tables,
                                      c.context_lens) == PB_OK);
    for (int i = 0; i < 128; i++) PB_CHECK(out[i] == 0.0f && out[256 + i] == 0.0f);
    dense_attention(&c, want);
    pb_kcheck_tol tol = tol_for(PB_KV_F32);
    PB_CHECK(pb_kcheck("ctx0", want, out, 384, &tol, NULL) == 0);
    /* q inside a wider (fused QKV-like) row: stride 3*H*D */
    float *qw = calloc(3 * 3 * 128, sizeof(float));
    for (int s = 0; s < 3; s++) memcpy(qw + s * 384, (float *)c.q + s * 128, 128 * sizeof(float));
    pb_attn_params p = c.p;
    p.q_stride = 384;
    float out2[384];
    PB_CHECK(pb_paged_attention_ref(&p, out2, qw, c.k_cache, c.v_cache, c.block_tables, c.context_lens) == PB_OK);
    PB_CHECK(memcmp(out, out2, sizeof out) == 0);
    free(qw);
    pb_attn_case_free(&c);
}

PB_TEST(bad_arguments_rejected) {
    int32_t ctx[2] = {9, 4};
    pb_attn_case c;
    PB_REQUIRE(pb_attn_case_make(&c, 4, 2, ctx, 4, 2, 64, 4, PB_KV_F32, 0, 0) == PB_OK);
    float out[2 * 4 * 64];
    pb_attn_params p = c.p;
    p.num_kv_heads = 3;
    PB_CHECK(pb_paged_attention_ref(&p, out, c.q, c.k_cache, c.v_cache, c.block_tables, c.context_lens) == PB_ERR_INVALID);
    p = c.p; p.head_size = 66;
    PB_CHECK(pb_attn_params_check(&p, 1) == PB_ERR_INVALID);
    p = c.p; p.max_context_len = 8;          /* ctx 9 > max */
    PB_CHECK(pb_paged_attention_ref(&p, out, c.q, c.k_cache, c.v_cache, c.block_tables, c.context_lens) == PB_ERR_INVALID);
    p = c.p;
    c.block_tables[0] = c.p.num_blocks;      /* out of range block id */
    PB_CHECK(pb_paged_attention_ref(&p, out, c.q, c.k_cache, c.v_cache, c.block_tables, c.context_lens) == PB_ERR_INVALID);
    p = c.pc; p.num_slots = 4;
    PB_CHECK(pb_contig_attention_ref(&p, out, c.q, c.kc_contig, c.vc_contig, c.kv_offsets, c.context_lens) == PB_ERR_INVALID);
    pb_attn_case_free(&c);
}

PB_TEST(v1_v2_choice_and_workspace) {
    pb_attn_params p;
    memset(&p, 0, sizeof p);
    p.num_seqs = 64; p.num_heads = 40; p.num_kv_heads = 40; p.head_size = 128;
    p.block_size = 16; p.max_blocks_per_seq = 64; p.max_context_len = 1024; p.dtype = PB_KV_F16;
    PB_CHECK(pb_paged_attention_choose(&p, 132) == PB_ATTN_V1);   /* 2560 CTAs fill it */
    p.num_seqs = 1;
    PB_CHECK(pb_paged_attention_choose(&p, 132) == PB_ATTN_V2);   /* 40 CTAs: split K   */
    p.max_context_len = 512;
    PB_CHECK(pb_paged_attention_choose(&p, 132) == PB_ATTN_V1);   /* one partition       */
    p.num_seqs = 16; p.max_context_len = 4096;
    PB_CHECK(pb_paged_attention_choose(&p, 132) == PB_ATTN_V2);   /* V1: 1.2 waves       */
    p.num_seqs = 256; p.max_context_len = 8193;
    PB_CHECK(pb_paged_attention_choose(&p, 132) == PB_ATTN_V2);   /* over V1's limit     */
    PB_CHECK_EQ_INT(pb_paged_attention_workspace_bytes(&p), 256ull * 40 * 17 * 130 * 4);
}

/* ---- prefill ---- */

static void prefill_naive(const pb_prefill_params *p, const float *q, const float *k, const float *v,
                          const int32_t *cq, const int32_t *ck, float *out) {
    int32_t H = p->num_heads, D = p->head_size, Hkv = p->num_kv_heads;
    for (int32_t s = 0; s < p->num_seqs; s++) {
        int32_t ql = cq[s + 1] - cq[s], kl = ck[s + 1] - ck[s];
        for (int32_t i = 0; i < ql; i++)
            for (int32_t h = 0; h < H; h++) {
                int32_t kh = h / (H / Hkv);
                double w[256], mx = -INFINITY, sum = 0;
                int32_t nk = kl - ql + i + 1;
                for (int32_t j = 0; j < nk; j++) {
                    double dot = 0;
                    for (int32_t d = 0; d < D; d++)
                        dot += (double)q[((size_t)(cq[s] + i) * H + h) * D + d] * k[((size_t)(ck[s] + j) * Hkv + kh) * D + d];
                    w[j] = dot * p->scale;
                    mx = w[j] > mx ? w[j] : mx;
                }
                for (int32_t j = 0; j < nk; j++) { w[j] = exp(w[j] - mx); sum += w[j]; }
                for (int32_t d = 0; d < D; d++) {
                    double acc = 0;
                    for (int32_t j = 0; j < nk; j++) acc += w[j] * v[((size_t)(ck[s] + j) * Hkv + kh) * D + d];
                    out[((size_t)(cq[s] + i) * H + h) * D + d] = (float)(acc / sum);
                }
            }
    }
}

PB_TEST(prefill_causal_varlen_and_cached_prefix) {
    /* 4 sequences: prompt lengths 1, 17, 40, 5; the last has a 30-token cached prefix */
    int32_t cq[5] = {0, 1, 18, 58, 63}, ck[5] = {0, 1, 18, 58, 93};
    pb_prefill_params p;
    memset(&p, 0, sizeof p);
    p.num_seqs = 4; p.num_heads = 4; p.num_kv_heads = 2; p.head_size = 64;
    p.max_q_len = 40; p.max_k_len = 40; p.scale = 0.125f; p.dtype = PB_KV_F32;
    const int32_t H = 4, Hkv = 2, D = 64, TQ = 63, TK = 93;
    float *q = malloc(sizeof(float) * TQ * H * D), *k = malloc(sizeof(float) * TK * Hkv * D);
    float *v = malloc(sizeof(float) * TK * Hkv * D);
    float *o = malloc(sizeof(float) * TQ * H * D), *want = malloc(sizeof(float) * TQ * H * D);
    pb_rng r;
    pb_rng_seed(&r, 11, 0);
    for (int i = 0; i < TQ * H * D; i++) q[i] = (float)(2 * pb_rng_uniform(&r) - 1);
    for (int i = 0; i < TK * Hkv * D; i++) { k[i] = (float)(2 * pb_rng_uniform(&r) - 1); v[i] = (float)pb_rng_normal(&r); }
    p.max_k_len = 35;
    PB_CHECK(pb_prefill_attention_ref(&p, o, q, k, v, cq, ck) == PB_ERR_INVALID);  /* 35 < max_q_len 40 */
    p.max_k_len = 40;
    PB_REQUIRE(pb_prefill_attention_ref(&p, o, q, k, v, cq, ck) == PB_OK);
    prefill_naive(&p, q, k, v, cq, ck, want);
    pb_kcheck_tol tol = tol_for(PB_KV_F32);
    PB_CHECK(pb_kcheck("prefill", want, o, (size_t)TQ * H * D, &tol, NULL) == 0);
    free(q); free(k); free(v); free(o); free(want);
}

PB_TEST(prefill_last_query_equals_decode) {
    /* the last prompt token's prefill output == decode attention over the same KV */
    int32_t ctx[2] = {37, 16};
    pb_attn_case c;
    PB_REQUIRE(pb_attn_case_make(&c, 21, 2, ctx, 4, 2, 80, 8, PB_KV_F32, 0, 1) == PB_OK);
    const int32_t H = 4, Hkv = 2, D = 80, L = 37;
    float dec[2 * 4 * 80];
    PB_REQUIRE(pb_paged_attention_ref(&c.p, dec, c.q, c.k_cache, c.v_cache, c.block_tables, c.context_lens) == PB_OK);
    /* token-major K/V of both sequences; q of the last token in place */
    int32_t cq[3] = {0, 37, 53};
    float *q = calloc((size_t)53 * H * D, sizeof(float)), *k = calloc((size_t)53 * Hkv * D, sizeof(float));
    float *v = calloc((size_t)53 * Hkv * D, sizeof(float)), *o = calloc((size_t)53 * H * D, sizeof(float));
    for (int s = 0; s < 2; s++) {
        for (int t = 0; t < ctx[s]; t++)
            for (int e = 0; e < Hkv * D; e++) {
                k[(size_t)(cq[s] + t) * Hkv * D + e] = c.dense_k[((size_t)s * L + t) * Hkv * D + e];
                v[(size_t)(cq[s] + t) * Hkv * D + e] = c.dense_v[((size_t)s * L + t) * Hkv * D + e];
            }
        memcpy(q + (size_t)(cq[s + 1] - 1) * H * D, (float *)c.q + (size_t)s * H * D, sizeof(float) * H * D);
    }
    pb_prefill_params p;
    memset(&p, 0, sizeof p);
    p.num_seqs = 2; p.num_heads = H; p.num_kv_heads = Hkv; p.head_size = D;
    p.max_q_len = 37; p.max_k_len = 37; p.scale = c.p.scale; p.dtype = PB_KV_F32;
    PB_REQUIRE(pb_prefill_attention_ref(&p, o, q, k, v, cq, cq) == PB_OK);
    pb_kcheck_tol tol = tol_for(PB_KV_F32);
    PB_CHECK(pb_kcheck("prefill-vs-decode s0", dec, o + (size_t)36 * H * D, (size_t)H * D, &tol, NULL) == 0);
    PB_CHECK(pb_kcheck("prefill-vs-decode s1", dec + H * D, o + (size_t)52 * H * D, (size_t)H * D, &tol, NULL) == 0);
    free(q); free(k); free(v); free(o);
    pb_attn_case_free(&c);
}

/* One fp8 shape: the fp8 case's references vs dense attention over its dequantized K/V
   (tight), and vs the same draws through a dtype cache (the derived bound).  Returns
   failures; *ratio gets the largest |err| / bound seen. */
static int check_fp8(uint64_t seed, int32_t S, const int32_t *ctx, int32_t H, int32_t Hkv, int32_t D,
                     int32_t bs, pb_kv_dtype dt, pb_kv_cache_dtype fmt, float kv_scale, double *ratio) {
    pb_attn_case c8, cr;
    if (pb_attn_case_make_kv(&c8, seed, S, ctx, H, Hkv, D, bs, dt, fmt, kv_scale, PB_ATTN_CASE_POISON, 1) != PB_OK ||
        pb_attn_case_make_kv(&cr, seed, S, ctx, H, Hkv, D, bs, dt, PB_KV_CACHE_AUTO, 1.0f, PB_ATTN_CASE_POISON, 1) != PB_OK)
        return 1;
    size_t n = c8.out_elems, es = pb_kv_dtype_size(dt);
    float *dense = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n);
    float *bound = malloc(sizeof(float) * n), *qf = malloc(sizeof(float) * n);
    void *out = malloc(es * n);
    int fails = 0;
    char what[128];
    snprintf(what, sizeof what, "fp8 %s %s S%d H%d/%d D%d bs%d scale %g", pb_kv_cache_dtype_name(fmt),
             pb_kv_dtype_name(dt), S, H, Hkv, D, bs, kv_scale);
    dense_attention(&c8, dense);
    pb_kcheck_tol tol = tol_for(dt);
    fails += pb_paged_attention_ref(&c8.p, out, c8.q, c8.k_cache, c8.v_cache, c8.block_tables, c8.context_lens) != PB_OK;
    pb_kv_to_f32(got, out, dt, n);
    fails += pb_kcheck(what, dense, got, n, &tol, NULL);
    fails += pb_contig_attention_ref(&c8.pc, out, c8.q, c8.kc_contig, c8.vc_contig, c8.kv_offsets, c8.context_lens) != PB_OK;
    float *gotc = malloc(sizeof(float) * n);
    pb_kv_to_f32(gotc, out, dt, n);
    fails += memcmp(got, gotc, sizeof(float) * n) != 0;
    /* vs the dtype cache: both outputs rounded to dtype (2 half-ulps) */
    fails += pb_paged_attention_ref(&cr.p, out, cr.q, cr.k_cache, cr.v_cache, cr.block_tables, cr.context_lens) != PB_OK;
    pb_kv_to_f32(ref, out, dt, n);
    pb_kv_to_f32(qf, cr.q, dt, n);
    pb_attn_fp8_bound(&c8.p, qf, cr.dense_k, cr.dense_v, cr.context_lens, cr.p.max_context_len, bound);
    double rt = dt == PB_KV_BF16 ? ldexp(1, -7) : dt == PB_KV_F16 ? ldexp(1, -10) : 1e-6;
    pb_kcheck_result res;
    fails += pb_kcheck_bound(what, ref, got, bound, n, 1e-6, rt, 5, &res);
    /* and in aggregate: the RMS error stays under the unit roundoff times the RMS output
       (every output is a softmax average of elements each within u) -- a statistical
       check that a wrong scale or layout fails where the worst-case bound is loose */
    double u = pb_fp8_unit_roundoff(pb_attn_cache_elem(&c8.p));
    if (!(res.nmse <= u * u)) { fprintf(stderr, "  %s: RMS error %.3g of the RMS output > u %.3g\n", what, sqrt(res.nmse), u); fails++; }
    for (size_t i = 0; i < n; i++)
        if (bound[i] > 0 && fabs(ref[i] - got[i]) / bound[i] > *ratio) *ratio = fabs(ref[i] - got[i]) / bound[i];
    free(dense); free(got); free(gotc); free(ref); free(bound); free(qf); free(out);
    pb_attn_case_free(&c8);
    pb_attn_case_free(&cr);
    return fails;
}

PB_TEST(fp8_cache_references_within_bound) {
    static const pb_kv_cache_dtype fmts[] = {PB_KV_CACHE_FP8_E4M3, PB_KV_CACHE_FP8_E5M2};
    static const pb_kv_dtype dts[] = {PB_KV_F16, PB_KV_BF16, PB_KV_F32};
    static const float scales[] = {1.0f, 0.125f, 2.0f};
    int32_t ctx[3] = {1, 40, 97}, ctx2[2] = {300, 17};
    double ratio = 0;
    int cases = 0;
    for (size_t f = 0; f < 2; f++)
        for (size_t d = 0; d < 3; d++)
            for (size_t k = 0; k < 3; k++) {
                PB_CHECK(check_fp8(300 + cases, 3, ctx, 4, 2, d == 2 ? 128 : 64, cases % 2 ? 16 : 1, dts[d], fmts[f],
                                   scales[k], &ratio) == 0);
                cases++;
            }
    PB_CHECK(check_fp8(350, 2, ctx2, 8, 1, 80, 32, PB_KV_F16, PB_KV_CACHE_FP8_E4M3, 0.25f, &ratio) == 0);  /* MQA */
    PB_CHECK(check_fp8(351, 2, ctx2, 4, 4, 96, 256, PB_KV_BF16, PB_KV_CACHE_FP8_E5M2, 1.0f, &ratio) == 0);
    PB_CHECK(ratio > 0 && ratio <= 1);
}

PB_TEST(fp8_bound_catches_a_wrong_scale) {
    int32_t ctx[2] = {1, 33};                             /* one key: out = dequantized v */
    pb_attn_case c8, cr;
    PB_REQUIRE(pb_attn_case_make_kv(&c8, 9, 2, ctx, 2, 2, 64, 16, PB_KV_F32, PB_KV_CACHE_FP8_E4M3, 0.5f, 0, 1) == PB_OK);
    PB_REQUIRE(pb_attn_case_make_kv(&cr, 9, 2, ctx, 2, 2, 64, 16, PB_KV_F32, PB_KV_CACHE_AUTO, 1.0f, 0, 1) == PB_OK);
    float out[256], ref[256], bound[256];
    pb_attn_fp8_bound(&c8.p, cr.q, cr.dense_k, cr.dense_v, cr.context_lens, 33, bound);
    PB_REQUIRE(pb_paged_attention_ref(&cr.p, ref, cr.q, cr.k_cache, cr.v_cache, cr.block_tables, cr.context_lens) == PB_OK);
    PB_REQUIRE(pb_paged_attention_ref(&c8.p, out, c8.q, c8.k_cache, c8.v_cache, c8.block_tables, c8.context_lens) == PB_OK);
    pb_kcheck_result res;
    PB_CHECK(pb_kcheck_bound("right scale", ref, out, bound, 256, 1e-6, 1e-6, 0, &res) == 0);
    PB_CHECK(res.nmse <= 0.0625 * 0.0625);
    pb_attn_params p = c8.p;
    p.kv_scale = 0.55f;                                   /* read back with 10% too much */
    PB_REQUIRE(pb_paged_attention_ref(&p, out, c8.q, c8.k_cache, c8.v_cache, c8.block_tables, c8.context_lens) == PB_OK);
    PB_CHECK(pb_kcheck_bound("wrong scale", ref, out, bound, 256, 1e-6, 1e-6, 0, &res) == 1);
    PB_CHECK(res.nmse > 0.0625 * 0.0625);                 /* 10% off fails the RMS check too */
    p = c8.p; p.kv_scale = 0;
    PB_CHECK(pb_attn_params_check(&p, 1) == PB_ERR_INVALID);
    p = c8.p; p.head_size = 72;                           /* fine for fp32's x = 4, not the cache's 16 */
    PB_CHECK(pb_attn_params_check(&p, 1) == PB_ERR_INVALID);
    pb_attn_case_free(&c8);
    pb_attn_case_free(&cr);
}

PB_TEST(kcheck_rejects_nan_and_reports) {
    float ref[4] = {1, 2, 3, 4}, out[4] = {1, 2, NAN, 4};
    pb_kcheck_tol tol = {1e-6, 0, 1, 5};
    pb_kcheck_result r;
    PB_CHECK(pb_kcheck("nan", ref, out, 4, &tol, &r) == 1);
    PB_CHECK_EQ_INT(r.n_nonfinite, 1);
    out[2] = 3.1f;
    PB_CHECK(pb_kcheck("off", ref, out, 4, &tol, &r) == 1);
    out[2] = 3.0f;
    PB_CHECK(pb_kcheck("same", ref, out, 4, &tol, &r) == 0);
}

PB_TEST_MAIN()
