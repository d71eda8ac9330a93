// emu_attention.cpp -- attention.cu decode (V1/V2, paged/contiguous) and prefill kernels,
// run through cuda_emu.h, against the C references (attention_ref.c).  Built by run.sh.
// FP8 caches: the kernel against the C reference over the same fp8 cache (fp16/bf16
// tolerances), and against the same K/V through an fp16/bf16 cache within
// pb_attn_fp8_bound (kcheck.h), over every (VVEC, NC) class of an fp8 cache (x = 16, V vectors of at most 8).
// Arguments: --quick (a subset), --long (only the 8K..64K-token decode cases); none = all.
#include "att_emu.cpp"
#include "rng.h"
#include "attn_case.h"
#include "kcheck.h"
#include <cstdio>

static int check(uint64_t seed, int S, const int32_t *ctx, int H, int Hkv, int D, int bs, pb_kv_dtype dt,
                 pb_attn_algo algo, int layout) {
    pb_attn_case c;
    const int paged = layout == 1;
    int flags = PB_ATTN_CASE_POISON | (layout >= 2 ? PB_ATTN_CASE_ODD_OFFSETS : 0) | (layout == 3 ? PB_ATTN_CASE_ODD_SLOTS : 0);
    if (pb_attn_case_make(&c, seed, S, ctx, H, Hkv, D, bs, dt, flags, 0) != PB_OK) return 1;
    const pb_attn_params *p = paged ? &c.p : &c.pc;
    size_t es = pb_kv_dtype_size(dt), ws = pb_paged_attention_workspace_bytes(p);
    void *ref = malloc(es * c.out_elems), *got = malloc(es * c.out_elems), *w = aligned_alloc(16, ws + 16);
    void *out = aligned_alloc(16, es * c.out_elems + 16);
    memset(out, 0xff, es * c.out_elems);
    pb_status st = paged ? pb_paged_attention_cuda(p, algo, out, c.q, c.k_cache, c.v_cache, c.block_tables, c.context_lens, w, ws, nullptr)
                         : pb_contig_attention_cuda(p, algo, out, c.q, c.kc_contig, c.vc_contig, c.kv_offsets, c.context_lens, w, ws, nullptr);
    int fails = st != PB_OK;
    if (paged) pb_paged_attention_ref(p, ref, c.q, c.k_cache, c.v_cache, c.block_tables, c.context_lens);
    else pb_contig_attention_ref(p, ref, c.q, c.kc_contig, c.vc_contig, c.kv_offsets, c.context_lens);
    std::vector<float> rf(c.out_elems), gf(c.out_elems);
    pb_kv_to_f32(rf.data(), ref, dt, c.out_elems);
    pb_kv_to_f32(gf.data(), out, dt, c.out_elems);
    pb_kcheck_tol tol = {1e-4, 1e-3, 1e-8, 5};
    if (dt == PB_KV_F16) { tol.atol = 2e-3; tol.rtol = 1e-2; tol.nmse_max = 1e-5; }
    if (dt == PB_KV_BF16) { tol.atol = 1.6e-2; tol.rtol = 2e-2; tol.nmse_max = 1e-3; }
    char what[128];
    snprintf(what, sizeof what, "L%d S%d H%d/%d D%d bs%d %s algo%d", layout, S, H, Hkv, D, bs, pb_kv_dtype_name(dt), (int)algo);
    fails += pb_kcheck(what, rf.data(), gf.data(), c.out_elems, &tol, nullptr);
    printf("%-40s %s\n", what, fails ? "FAIL" : "ok");
    free(ref); free(got); free(w); free(out);
    pb_attn_case_free(&c);
    return fails;
}

static int check8(uint64_t seed, int S, const int32_t *ctx, int H, int Hkv, int D, int bs, pb_kv_dtype dt,
                  pb_kv_cache_dtype fmt, float kv_scale, pb_attn_algo algo, int paged) {
    pb_attn_case c, r;
    if (pb_attn_case_make_kv(&c, seed, S, ctx, H, Hkv, D, bs, dt, fmt, kv_scale, PB_ATTN_CASE_POISON, 0) != PB_OK ||
        pb_attn_case_make_kv(&r, seed, S, ctx, H, Hkv, D, bs, dt, PB_KV_CACHE_AUTO, 1.0f, PB_ATTN_CASE_POISON, 1) != PB_OK)
        return 1;
    const pb_attn_params *p = paged ? &c.p : &c.pc;
    size_t es = pb_kv_dtype_size(dt), n = c.out_elems, ws = pb_paged_attention_workspace_bytes(p);
    void *w = aligned_alloc(16, ws + 16), *out = aligned_alloc(16, es * n + 16), *ref = malloc(es * n), *ref16 = malloc(es * n);
    memset(out, 0xff, es * n);
    pb_status st = paged ? pb_paged_attention_cuda(p, algo, out, c.q, c.k_cache, c.v_cache, c.block_tables, c.context_lens, w, ws, nullptr)
                         : pb_contig_attention_cuda(p, algo, out, c.q, c.kc_contig, c.vc_contig, c.kv_offsets, c.context_lens, w, ws, nullptr);
    int fails = st != PB_OK;
    if (paged) pb_paged_attention_ref(p, ref, c.q, c.k_cache, c.v_cache, c.block_tables, c.context_lens);
    else pb_contig_attention_ref(p, ref, c.q, c.kc_contig, c.vc_contig, c.kv_offsets, c.context_lens);
    pb_paged_attention_ref(&r.p, ref16, r.q, r.k_cache, r.v_cache, r.block_tables, r.context_lens);
    std::vector<float> rf(n), gf(n), r16(n), qf(n), bound(n);
    pb_kv_to_f32(rf.data(), ref, dt, n);
    pb_kv_to_f32(gf.data(), out, dt, n);
    pb_kv_to_f32(r16.data(), ref16, dt, n);
    pb_kv_to_f32(qf.data(), r.q, dt, n);
    pb_kcheck_tol tol = {2e-3, 1e-2, 1e-5, 5};
    if (dt == PB_KV_BF16) { tol.atol = 1.6e-2; tol.rtol = 2e-2; tol.nmse_max = 1e-3; }
    char what[160];
    snprintf(what, sizeof what, "fp8 %s L%d S%d H%d/%d D%d bs%d %s scale %g algo%d", pb_kv_cache_dtype_name(fmt), paged, S, H,
             Hkv, D, bs, pb_kv_dtype_name(dt), kv_scale, (int)algo);
    fails += pb_kcheck(what, rf.data(), gf.data(), n, &tol, nullptr);
    pb_attn_fp8_bound(p, qf.data(), r.dense_k, r.dense_v, r.context_lens, r.p.max_context_len, bound.data());
    pb_kcheck_result res;
    fails += pb_kcheck_bound(what, r16.data(), gf.data(), bound.data(), n, 1e-6, dt == PB_KV_BF16 ? ldexp(1, -7) : ldexp(1, -10), 5, &res);
    const double u = pb_fp8_unit_roundoff(pb_attn_cache_elem(p));
    fails += !(res.nmse <= u * u);   // RMS error under u x RMS output (as tests/kernels/test_attention.c)
    printf("%-60s %s\n", what, fails ? "FAIL" : "ok");
    free(w); free(out); free(ref); free(ref16);
    pb_attn_case_free(&c);
    pb_attn_case_free(&r);
    return fails;
}

/* the contiguous kernel refuses fp8 caches (PB_ERR_UNSUPPORTED, nothing written) */
static int refuse8_contig(uint64_t seed, const int32_t *ctx) {
    pb_attn_case c;
    if (pb_attn_case_make_kv(&c, seed, 3, ctx, 2, 2, 96, 16, PB_KV_F16, PB_KV_CACHE_FP8_E5M2, 0.25f,
                             PB_ATTN_CASE_POISON, 0) != PB_OK)
        return 1;
    size_t n = c.out_elems * 2, ws = pb_paged_attention_workspace_bytes(&c.pc);
    void *w = aligned_alloc(16, ws + 16), *out = aligned_alloc(16, n + 16);
    memset(out, 0xab, n);
    pb_status st = pb_contig_attention_cuda(&c.pc, PB_ATTN_V1, out, c.q, c.kc_contig, c.vc_contig, c.kv_offsets,
                                            c.context_lens, w, ws, nullptr);
    int fails = st != PB_ERR_UNSUPPORTED;
    for (size_t i = 0; i < n; i++) fails += ((unsigned char *)out)[i] != 0xab;
    printf("%-60s %s\n", "fp8 contiguous layout refused (error above expected)", fails ? "FAIL" : "ok");
    free(w); free(out);
    pb_attn_case_free(&c);
    return fails != 0;
}

static int fp8_checks(int quick) {
    int fails = 0;
    int32_t ctx_s[3] = {1, 17, 97}, ctx_l[3] = {700, 1, 1030};
    const pb_kv_cache_dtype E4 = PB_KV_CACHE_FP8_E4M3, E5 = PB_KV_CACHE_FP8_E5M2;
    for (int bs = 1; bs <= 256; bs *= 2)   // classes (1,1) (2,1) (4,1) (8,1) (8,2) (8,4)
        if (!quick || bs == 1 || bs == 16 || bs == 64)
            fails += check8(70 + bs, 3, ctx_s, 2, 1, 128, bs, PB_KV_F16, bs % 2 ? E5 : E4, 0.5f, PB_ATTN_V1, 1);
    int heads[4] = {64, 80, 96, 128};
    for (int h = 0; h < 4; h++)
        if (!quick || h == 1)
            fails += check8(80 + h, 3, ctx_s, 4, 2, heads[h], 16, h % 2 ? PB_KV_BF16 : PB_KV_F16, h < 2 ? E4 : E5, 2.0f,
                            PB_ATTN_V1, 1);
    fails += check8(90, 3, ctx_l, 2, 1, 64, 16, PB_KV_BF16, E4, 1.0f, PB_ATTN_V2, 1);    // split-K + reduce
    fails += refuse8_contig(91, ctx_s);   // fp8 caches are paged only on the GPU
    return fails;
}

static int decode_checks(int quick) {
    int fails = 0;
    int32_t ctx_s[3] = {1, 17, 97}, ctx_l[3] = {700, 1, 1030};
    for (int bs = 1; bs <= 256; bs *= 2) {
        fails += check(bs, 3, ctx_s, 2, 1, 128, bs, PB_KV_F16, PB_ATTN_V1, 1);
        if (!quick || bs == 16) fails += check(bs + 1, 3, ctx_l, 2, 1, 64, bs, PB_KV_F32, PB_ATTN_V2, 1);
    }
    int heads[4] = {64, 80, 96, 128};
    for (int h = 0; h < 4; h++)
        for (int d = 0; d < 3; d++) {
            fails += check(10 + h * 3 + d, 3, ctx_s, 4, 2, heads[h], 8, (pb_kv_dtype)d, PB_ATTN_V1, 1);
            fails += check(20 + h * 3 + d, 3, ctx_s, 4, 2, heads[h], 1, (pb_kv_dtype)d, PB_ATTN_V1, 0);
        }
    for (int layout = 0; layout <= 3; layout++) {
        fails += check(40 + layout, 3, ctx_l, 2, 2, 80, 16, PB_KV_BF16, PB_ATTN_V2, layout);
        fails += check(50 + layout, 3, ctx_s, 2, 1, 96, 16, PB_KV_F16, PB_ATTN_V1, layout);
    }
    return fails;
}

/* long contexts: V2 at 64K tokens (128 partitions; the reduce merges them), two
   sequences whose partition counts differ, contiguous V2 at 64K, and V1 at its 8K
   limit with block size 1 (the largest shared-memory request: 8K logits + 8K block
   ids, above the 48 KiB default).  Few heads keep the emulation to seconds. */
static int long_checks(void) {
    int fails = 0;
    int32_t c64[1] = {65536}, c2[2] = {65536, 40001}, c8[1] = {8192};
    fails += check(60, 1, c64, 2, 1, 128, 16, PB_KV_F16, PB_ATTN_V2, 1);
    fails += check(61, 2, c2, 1, 1, 128, 256, PB_KV_F16, PB_ATTN_V2, 1);
    fails += check(62, 1, c64, 1, 1, 128, 16, PB_KV_F16, PB_ATTN_V2, 0);
    fails += check(63, 1, c8, 1, 1, 128, 1, PB_KV_F16, PB_ATTN_V1, 1);
    fails += check(64, 1, c8, 1, 1, 128, 16, PB_KV_BF16, PB_ATTN_AUTO, 1);
    return fails;
}

static int prefill_checks(int quick) {
    int fails = 0;
    int32_t cq[5] = {0, 1, 18, 88, 121}, ck[5] = {0, 1, 18, 88, 141};
    int heads[4] = {64, 80, 96, 128};
    for (int di = 0; di < 3; di++)
        for (int hi = 0; hi < 4; hi++) {
            if (quick && (di == 0 || hi == 1 || hi == 2)) continue;
            const int H = 4, Hkv = 2, D = heads[hi], TQ = 121, TK = 141;
            pb_kv_dtype dt = (pb_kv_dtype)di;
            size_t es = pb_kv_dtype_size(dt), nq = (size_t)TQ * H * D, nk = (size_t)TK * Hkv * D;
            pb_prefill_params p;
            memset(&p, 0, sizeof p);
            p.num_seqs = 4; p.num_heads = H; p.num_kv_heads = Hkv; p.head_size = D;
            p.max_q_len = 70; p.max_k_len = 70; p.scale = 1.0f / sqrtf((float)D); p.dtype = dt;
            std::vector<float> f(nq > nk ? nq : nk);
            void *q = malloc(es * nq), *k = malloc(es * nk), *v = malloc(es * nk), *ref = malloc(es * nq), *got = malloc(es * nq);
            pb_rng r; pb_rng_seed(&r, 40 + di * 4 + hi, 0);
            for (size_t i = 0; i < nq; i++) f[i] = (float)(2 * pb_rng_uniform(&r) - 1);
            pb_kv_from_f32(q, dt, f.data(), nq);
            for (size_t i = 0; i < nk; i++) f[i] = (float)(2 * pb_rng_uniform(&r) - 1);
            pb_kv_from_f32(k, dt, f.data(), nk);
            for (size_t i = 0; i < nk; i++) f[i] = (float)(2 * pb_rng_uniform(&r) - 1);
            pb_kv_from_f32(v, dt, f.data(), nk);
            pb_prefill_attention_ref(&p, ref, q, k, v, cq, ck);
            int st = pb_prefill_attention_cuda(&p, got, q, k, v, cq, ck, nullptr);
            std::vector<float> rf(nq), gf(nq);
            pb_kv_to_f32(rf.data(), ref, dt, nq);
            pb_kv_to_f32(gf.data(), got, dt, nq);
            pb_kcheck_tol tol = {1e-4, 1e-3, 1e-8, 5};
            if (dt == PB_KV_F16) { tol.atol = 2e-3; tol.rtol = 1e-2; tol.nmse_max = 1e-5; }
            if (dt == PB_KV_BF16) { tol.atol = 1.6e-2; tol.rtol = 2e-2; tol.nmse_max = 1e-3; }
            char what[64]; snprintf(what, sizeof what, "prefill D%d %s", D, pb_kv_dtype_name(dt));
            int f1 = (st != PB_OK) + pb_kcheck(what, rf.data(), gf.data(), nq, &tol, nullptr);
            printf("%-30s %s\n", what, f1 ? "FAIL" : "ok");
            fails += f1;
            free(q); free(k); free(v); free(ref); free(got);
        }
    return fails;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick"), only_long = argc > 1 && !strcmp(argv[1], "--long");
    int fails = only_long ? long_checks()
                          : decode_checks(quick) + fp8_checks(quick) + prefill_checks(quick) + (quick ? 0 : long_checks());
    printf("%s (%d failures)\n", fails ? "EMU ATTENTION FAIL" : "EMU ATTENTION OK", fails);
    return fails != 0;
}
