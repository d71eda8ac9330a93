/* test_gpu_cache_ops.c -- CUDA reshape_and_cache / gather_cached_kv / copy_blocks /
 * swap_blocks against the C references (byte-exact), fp32/fp16/bf16 and fp8 caches
 * (e4m3 / e5m2 of fp16 / bf16 activations, kv_scale 0.5), block sizes
 * 1/8/16/32/256, padding slots, swap per-block and batched in both directions with
 * pinned host memory.  Skips (exit 77) without a CUDA device.
 *   ctest -L gpu --output-on-failure */
#include <stdlib.h>
#include <string.h>

#include "cache_ops.h"
#include "kbench.h"
#include "pbtest.h"
#include "rng.h"

#ifdef PB_HAVE_CUDA
#include <cuda_runtime.h>

#define NEED_GPU() do { char why_[256]; if (!pb_kbench_gpu_available(why_, sizeof why_)) \
    PB_SKIP_NO_GPU("%s", why_); } while (0)

static void fill_bytes(void *p, size_t n, uint64_t seed) {
    pb_rng r;
    pb_rng_seed(&r, seed, 3);
    for (size_t i = 0; i < n; i++) ((unsigned char *)p)[i] = (unsigned char)(pb_rng_u64(&r) & 0x3f);
}

static int32_t pb_gcd_i32(int32_t a, int32_t b) {
    while (b) { int32_t t = a % b; a = b; b = t; }
    return a;
}

static void *upload(const void *h, size_t n) {
    void *d = NULL;
    if (cudaMalloc(&d, n ? n : 16) != cudaSuccess) return NULL;
    cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
    return d;
}

PB_TEST(reshape_and_gather_match_reference) {
    NEED_GPU();
    static const int32_t bss[] = {1, 8, 16, 32, 256};
    static const pb_kv_dtype dts[] = {PB_KV_F32, PB_KV_F16, PB_KV_BF16};
    for (int f = 0; f < 3; f++)          /* auto, fp8_e4m3, fp8_e5m2 */
    for (size_t bi = 0; bi < 5; bi++)
        for (size_t di = f ? 1 : 0; di < 3; di++) {
            const int32_t T = 300, Hkv = 3, D = 128, stride = 3 * Hkv * D;
            pb_kv_cache_shape c = {PB_CDIV(T, bss[bi]) + 4, Hkv, D, bss[bi], dts[di], (pb_kv_cache_dtype)f, 0.5f};
            const size_t es = pb_kv_dtype_size(c.dtype), cb = (size_t)c.num_blocks * pb_kv_block_bytes(&c);
            void *kc = malloc(cb), *vc = malloc(cb), *key = malloc(es * T * stride), *val = malloc(es * T * stride);
            fill_bytes(kc, cb, 1); fill_bytes(vc, cb, 2);
            fill_bytes(key, es * T * stride, 3 + bi); fill_bytes(val, es * T * stride, 4 + di);
            /* a scattered but collision-free mapping (cache_ops.h: slots are distinct): the
             * logical block i / bs goes to physical block (i / bs) * m mod num_blocks, m coprime */
            int32_t m = 7;
            while (pb_gcd_i32(m, c.num_blocks) != 1) m++;
            int64_t slots[300];
            for (int32_t i = 0; i < T; i++) slots[i] = (int64_t)(((i / c.block_size) * m) % c.num_blocks) * c.block_size + i % c.block_size;
            slots[3] = -1;
            void *dkc = upload(kc, cb), *dvc = upload(vc, cb), *dkey = upload(key, es * T * stride);
            void *dval = upload(val, es * T * stride), *dsl = upload(slots, sizeof slots);
            PB_REQUIRE(dkc && dvc && dkey && dval && dsl);
            PB_CHECK(pb_reshape_and_cache_ref(&c, kc, vc, key, val, stride, stride, slots, T) == PB_OK);
            PB_CHECK(pb_reshape_and_cache_cuda(&c, dkc, dvc, dkey, dval, stride, stride, dsl, T, NULL) == PB_OK);
            void *gk = malloc(cb), *gv = malloc(cb);
            cudaMemcpy(gk, dkc, cb, cudaMemcpyDeviceToHost);
            cudaMemcpy(gv, dvc, cb, cudaMemcpyDeviceToHost);
            PB_CHECK(memcmp(gk, kc, cb) == 0);
            PB_CHECK(memcmp(gv, vc, cb) == 0);
            /* gather back */
            size_t dn = es * (size_t)T * Hkv * D;
            void *rk = malloc(dn), *rv = malloc(dn), *hk = malloc(dn), *hv = malloc(dn), *dk2 = NULL, *dv2 = NULL;
            cudaMalloc(&dk2, dn); cudaMalloc(&dv2, dn);
            PB_CHECK(pb_gather_cached_kv_ref(&c, rk, rv, kc, vc, slots, T) == PB_OK);
            PB_CHECK(pb_gather_cached_kv_cuda(&c, dk2, dv2, dkc, dvc, dsl, T, NULL) == PB_OK);
            cudaMemcpy(hk, dk2, dn, cudaMemcpyDeviceToHost);
            cudaMemcpy(hv, dv2, dn, cudaMemcpyDeviceToHost);
            PB_CHECK(memcmp(hk, rk, dn) == 0 && memcmp(hv, rv, dn) == 0);
            cudaFree(dkc); cudaFree(dvc); cudaFree(dkey); cudaFree(dval); cudaFree(dsl); cudaFree(dk2); cudaFree(dv2);
            free(kc); free(vc); free(key); free(val); free(gk); free(gv); free(rk); free(rv); free(hk); free(hv);
        }
}

PB_TEST(copy_blocks_one_launch_all_layers) {
    NEED_GPU();
    pb_kv_cache_shape c = {64, 4, 128, 16, PB_KV_F16, PB_KV_CACHE_AUTO, 0.0f};
    const size_t bb = pb_kv_block_bytes(&c), tb = bb * 64;
    enum { L = 5 };
    void *hk[L], *hv[L], *dk[L], *dv[L];
    for (int l = 0; l < L; l++) {
        hk[l] = malloc(tb); hv[l] = malloc(tb);
        fill_bytes(hk[l], tb, 10 + l); fill_bytes(hv[l], tb, 20 + l);
        dk[l] = upload(hk[l], tb); dv[l] = upload(hv[l], tb);
    }
    pb_block_pair pairs[6] = {{1, 40}, {1, 41}, {2, 42}, {10, 50}, {11, 51}, {63, 0}};
    void *dp = upload(pairs, sizeof pairs);
    PB_CHECK(pb_copy_blocks_ref(hk, hv, L, pairs, 6, bb) == PB_OK);
    PB_CHECK(pb_copy_blocks_cuda(dk, dv, L, dp, 6, bb, NULL) == PB_OK);
    void *g = malloc(tb);
    for (int l = 0; l < L; l++) {
        cudaMemcpy(g, dk[l], tb, cudaMemcpyDeviceToHost);
        PB_CHECK(memcmp(g, hk[l], tb) == 0);
        cudaMemcpy(g, dv[l], tb, cudaMemcpyDeviceToHost);
        PB_CHECK(memcmp(g, hv[l], tb) == 0);
        cudaFree(dk[l]); cudaFree(dv[l]); free(hk[l]); free(hv[l]);
    }
    free(g);
    cudaFree(dp);
}

PB_TEST(swap_per_block_and_batched_both_directions) {
    NEED_GPU();
    enum { NT = 6, NB = 40 };
    const size_t bb = 16 * 1024;
    cudaStream_t st;
    PB_REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
    for (int mode = 0; mode < 2; mode++)
        for (int dir = 0; dir < 2; dir++) {
            void *gpu[NT], *host[NT], *want[NT];
            for (int t = 0; t < NT; t++) {
                void *h0 = malloc(bb * NB), *g0 = malloc(bb * NB);
                fill_bytes(h0, bb * NB, 60 + t); fill_bytes(g0, bb * NB, 70 + t);
                cudaHostAlloc(&host[t], bb * NB, cudaHostAllocDefault);
                memcpy(host[t], h0, bb * NB);
                gpu[t] = upload(g0, bb * NB);
                want[t] = dir == 0 ? h0 : g0;              /* destination before the swap */
                free(dir == 0 ? g0 : h0);
            }
            pb_block_pair pairs[9] = {{0, 5}, {1, 6}, {2, 7}, {9, 1}, {30, 2}, {31, 3}, {12, 39}, {20, 20}, {3, 8}};
            const void *src[NT];
            void *dst[NT];
            for (int t = 0; t < NT; t++) { src[t] = dir == 0 ? gpu[t] : host[t]; dst[t] = dir == 0 ? host[t] : gpu[t]; }
            /* expected: destination with the pairs applied from the source contents */
            void *srch[NT];
            for (int t = 0; t < NT; t++) {
                srch[t] = malloc(bb * NB);
                cudaMemcpy(srch[t], src[t], bb * NB, cudaMemcpyDefault);
            }
            PB_CHECK(pb_swap_blocks_ref(want, (const void *const *)srch, NT, pairs, 9, bb) == PB_OK);
            PB_CHECK(pb_swap_blocks_cuda(dst, src, NT, pairs, 9, bb, (pb_swap_mode)mode, st) == PB_OK);
            PB_CHECK(cudaStreamSynchronize(st) == cudaSuccess);
            void *g = malloc(bb * NB);
            for (int t = 0; t < NT; t++) {
                cudaMemcpy(g, dst[t], bb * NB, cudaMemcpyDefault);
                PB_CHECK(memcmp(g, want[t], bb * NB) == 0);
                cudaFree(gpu[t]); cudaFreeHost(host[t]); free(want[t]); free(srch[t]);
            }
            free(g);
        }
    cudaStreamDestroy(st);
}

#else

PB_TEST(gpu_cache_ops) { char why_[512]; pb_kbench_gpu_available(why_, sizeof why_); PB_SKIP_NO_GPU("%s", why_); }

#endif

PB_TEST_MAIN()
