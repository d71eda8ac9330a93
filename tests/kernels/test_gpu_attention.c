/* test_gpu_attention.c -- CUDA attention kernels against their C references
 * (llm.c dev/cuda style): paged V1 / V2 / auto and contiguous decode on awkward
 * shapes (batch 1/12/17, context 1/15/16/17/54/97/2048 mixed in one batch, every
 * power-of-two block size 1..256, head sizes 64/80/96/128, fp32/fp16/bf16, GQA),
 * with NaN-poisoned unused cache memory; causal varlen prefill.  Without a CUDA
 * device (any cudaGetDeviceCount error) every test skips and the binary exits 77.
 *   cmake -DPB_CUDA=ON ... && ctest -L gpu --output-on-failure */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "kbench.h"
#include "kcheck.h"
#include "pbtest.h"
#include "rng.h"

#ifdef PB_HAVE_CUDA
#include <cuda_runtime.h>

static int have_gpu(char *why, size_t n) { return pb_kbench_gpu_available(why, n); }
#define NEED_GPU() do { char why_[256]; if (!have_gpu(why_, sizeof why_)) \
    PB_SKIP_NO_GPU("%s", why_); } while (0)

PB_TEST(decode_awkward_batches_and_block_sizes) {
    NEED_GPU();
    static const int32_t batches[] = {1, 12, 17};
    static const int32_t ctxs[] = {1, 15, 16, 17, 54, 97, 2048};
    pb_rng r;
    pb_rng_seed(&r, 5, 0);
    int fails = 0;
    for (size_t bi = 0; bi < PB_ARRAY_LEN(batches); bi++)
        for (int32_t bs = 1; bs <= 256; bs *= 2) {
            int32_t S = batches[bi], ctx[17];
            for (int32_t s = 0; s < S; s++)
                ctx[s] = s < 7 ? ctxs[(s + bs) % 7] : 1 + (int32_t)pb_rng_below(&r, 300);
            if (S == 1) ctx[0] = 2048;
            for (int algo = 0; algo <= 2; algo++)
                fails += pb_kbench_gpu_check_decode(100 + (uint64_t)bs, S, ctx, 4, 2, 128, bs, PB_KV_F16,
                                                    (pb_attn_algo)algo, 1);
        }
    PB_CHECK_EQ_INT(fails, 0);
}

/* fp8 caches (e4m3, e5m2) with fp16 / bf16 q: every (VVEC, NC) class of an fp8 cache,
   V1 / V2 / auto, paged, against the C reference over the same cache; contiguous is refused */
PB_TEST(decode_fp8_caches) {
    NEED_GPU();
    int32_t ctx[5] = {1, 17, 600, 97, 1030};
    int fails = 0;
    for (int32_t bs = 1; bs <= 256; bs *= 2)
        for (int f = 0; f < 2; f++)
            for (int algo = 0; algo <= 2; algo++)
                fails += pb_kbench_gpu_check_decode_kv(200 + (uint64_t)bs, 5, ctx, 8, 4, bs >= 64 ? 80 : 128, bs,
                                                       f ? PB_KV_BF16 : PB_KV_F16,
                                                       f ? PB_KV_CACHE_FP8_E5M2 : PB_KV_CACHE_FP8_E4M3,
                                                       bs == 16 ? 0.25f : 1.0f, (pb_attn_algo)algo, 1);
    /* contiguous fp8: refused (paged only on the GPU), so the check counts one failure */
    PB_CHECK_EQ_INT(pb_kbench_gpu_check_decode_kv(300, 5, ctx, 8, 8, 64, 16, PB_KV_F16, PB_KV_CACHE_FP8_E4M3, 2.0f,
                                                  PB_ATTN_V2, 0), 1);
    PB_CHECK_EQ_INT(fails, 0);
}

PB_TEST(decode_head_sizes_dtypes_contiguous) {
    NEED_GPU();
    static const int32_t heads[] = {64, 80, 96, 128};
    static const pb_kv_dtype dts[] = {PB_KV_F32, PB_KV_F16, PB_KV_BF16};
    int32_t ctx[5] = {1, 17, 600, 97, 1030};
    int fails = 0;
    for (size_t h = 0; h < 4; h++)
        for (size_t d = 0; d < 3; d++)
            for (int paged = 0; paged <= 1; paged++)
                for (int algo = 1; algo <= 2; algo++)
                    fails += pb_kbench_gpu_check_decode(7 + h * 3 + d, 5, ctx, 8, 8 / (1 + (int)d), heads[h],
                                                        paged ? 16 : 1, dts[d], (pb_attn_algo)algo, paged);
    PB_CHECK_EQ_INT(fails, 0);
}

PB_TEST(contiguous_unaligned_offsets_and_slots) {
    NEED_GPU();
    int32_t ctx[4] = {1, 17, 700, 33};
    int fails = 0;
    for (int layout = 2; layout <= 3; layout++)
        for (int d = 0; d < 3; d++)
            for (int algo = 1; algo <= 2; algo++)
                fails += pb_kbench_gpu_check_decode(50 + (uint64_t)(layout * 6 + d * 2 + algo), 4, ctx, 4, 2, 96, 1,
                                                    (pb_kv_dtype)d, (pb_attn_algo)algo, layout);
    PB_CHECK_EQ_INT(fails, 0);
}

PB_TEST(decode_long_context_split_k) {
    NEED_GPU();
    int32_t ctx[2] = {20000, 9000};          /* > V1 limit: AUTO must pick V2 */
    PB_CHECK_EQ_INT(pb_kbench_gpu_check_decode(31, 2, ctx, 2, 1, 128, 16, PB_KV_F16, PB_ATTN_AUTO, 1), 0);
    PB_CHECK_EQ_INT(pb_kbench_gpu_check_decode(32, 2, ctx, 2, 1, 128, 16, PB_KV_F16, PB_ATTN_AUTO, 0), 0);
}

PB_TEST(prefill_matches_reference) {
    NEED_GPU();
    static const pb_kv_dtype dts[] = {PB_KV_F32, PB_KV_F16, PB_KV_BF16};
    static const int32_t heads[] = {64, 80, 96, 128};
    /* q lengths 1, 17, 70, 33; the last has a 20-token cached prefix (k 53) */
    int32_t cq[5] = {0, 1, 18, 88, 121}, ck[5] = {0, 1, 18, 88, 141};
    for (size_t di = 0; di < 3; di++)
        for (size_t hi = 0; hi < 4; hi++) {
            const int32_t H = 4, Hkv = 2, D = heads[hi], TQ = 121, TK = 141;
            const pb_kv_dtype dt = dts[di];
            const size_t es = pb_kv_dtype_size(dt);
            pb_prefill_params p;
            memset(&p, 0, sizeof p);
            p.num_seqs = 4; p.num_heads = H; p.num_kv_heads = Hkv; p.head_size = D;
            p.max_q_len = 70; p.max_k_len = 70; p.scale = (float)(1 / sqrt((double)D)); p.dtype = dt;
            size_t nq = (size_t)TQ * H * D, nk = (size_t)TK * Hkv * D;
            float *f = malloc(sizeof(float) * (nq > nk ? nq : nk));
            void *q = malloc(es * nq), *k = malloc(es * nk), *v = malloc(es * nk), *ref = malloc(es * nq), *got = malloc(es * nq);
            pb_rng r;
            pb_rng_seed(&r, 40 + di * 4 + hi, 0);
            for (size_t i = 0; i < nq; i++) f[i] = (float)(2 * pb_rng_uniform(&r) - 1);
            pb_kv_from_f32(q, dt, f, nq);
            for (size_t i = 0; i < nk; i++) f[i] = (float)(2 * pb_rng_uniform(&r) - 1);
            pb_kv_from_f32(k, dt, f, nk);
            for (size_t i = 0; i < nk; i++) f[i] = (float)(2 * pb_rng_uniform(&r) - 1);
            pb_kv_from_f32(v, dt, f, nk);
            PB_REQUIRE(pb_prefill_attention_ref(&p, ref, q, k, v, cq, ck) == PB_OK);
            void *dq, *dk, *dv, *dout;
            int32_t *dcq, *dck;
            PB_REQUIRE(cudaMalloc(&dq, es * nq) == cudaSuccess && cudaMalloc(&dk, es * nk) == cudaSuccess &&
                       cudaMalloc(&dv, es * nk) == cudaSuccess && cudaMalloc(&dout, es * nq) == cudaSuccess &&
                       cudaMalloc((void **)&dcq, sizeof cq) == cudaSuccess && cudaMalloc((void **)&dck, sizeof ck) == cudaSuccess);
            cudaMemcpy(dq, q, es * nq, cudaMemcpyHostToDevice);
            cudaMemcpy(dk, k, es * nk, cudaMemcpyHostToDevice);
            cudaMemcpy(dv, v, es * nk, cudaMemcpyHostToDevice);
            cudaMemcpy(dcq, cq, sizeof cq, cudaMemcpyHostToDevice);
            cudaMemcpy(dck, ck, sizeof ck, cudaMemcpyHostToDevice);
            PB_CHECK(pb_prefill_attention_cuda(&p, dout, dq, dk, dv, dcq, dck, NULL) == PB_OK);
            PB_CHECK(cudaDeviceSynchronize() == cudaSuccess);
            cudaMemcpy(got, dout, es * nq, cudaMemcpyDeviceToHost);
            float *rf = malloc(sizeof(float) * nq), *gf = malloc(sizeof(float) * nq);
            pb_kv_to_f32(rf, ref, dt, nq);
            pb_kv_to_f32(gf, got, dt, nq);
            pb_kcheck_tol tol = {1e-4, 1e-3, 1e-8, 5};
            if (dt == PB_KV_F16) { tol.atol = 2e-3; tol.rtol = 1e-2; tol.nmse_max = 1e-5; }
            if (dt == PB_KV_BF16) { tol.atol = 1.6e-2; tol.rtol = 2e-2; tol.nmse_max = 1e-3; }
            char what[64];
            snprintf(what, sizeof what, "prefill D%d %s", D, pb_kv_dtype_name(dt));
            PB_CHECK(pb_kcheck(what, rf, gf, nq, &tol, NULL) == 0);
            cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(dout); cudaFree(dcq); cudaFree(dck);
            free(f); free(q); free(k); free(v); free(ref); free(got); free(rf); free(gf);
        }
}

PB_TEST(unsupported_shapes_are_reported) {
    NEED_GPU();
    pb_attn_params p;
    memset(&p, 0, sizeof p);
    p.num_seqs = 1; p.num_heads = 2; p.num_kv_heads = 2; p.head_size = 112; p.block_size = 16;
    p.max_blocks_per_seq = 1; p.max_context_len = 16; p.scale = 1; p.dtype = PB_KV_F16;
    PB_CHECK(pb_paged_attention_cuda(&p, PB_ATTN_V1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL) == PB_ERR_UNSUPPORTED);
    p.head_size = 128; p.block_size = 24; p.max_blocks_per_seq = 1;
    PB_CHECK(pb_paged_attention_cuda(&p, PB_ATTN_V1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL) == PB_ERR_UNSUPPORTED);
}

#else

PB_TEST(gpu_attention) { char why_[512]; pb_kbench_gpu_available(why_, sizeof why_); PB_SKIP_NO_GPU("%s", why_); }

#endif

PB_TEST_MAIN()
