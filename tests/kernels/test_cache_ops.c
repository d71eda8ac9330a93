/* test_cache_ops.c -- C references of cache_ops.h: reshape_and_cache against an
 * independent per-element formula, a reshape -> gather round trip, padding slots,
 * copy_blocks over all layers, swap run merging and host swap; fp32/fp16/bf16;
 * block sizes 1/8/16/32/256.
 *   cmake --build build && (cd build && ctest -R test_cache_ops --output-on-failure) */
#include <stdlib.h>
#include <string.h>

#include "cache_ops.h"
#include "pbtest.h"
#include "rng.h"

static void fill_bytes(void *p, size_t n, uint64_t seed) {
    pb_rng r;
    pb_rng_seed(&r, seed, 3);
    for (size_t i = 0; i < n; i++) ((unsigned char *)p)[i] = (unsigned char)pb_rng_u64(&r);
}

PB_TEST(reshape_and_cache_layout_and_roundtrip) {
    static const int32_t bss[] = {1, 8, 16, 32, 256};
    static const pb_kv_dtype dts[] = {PB_KV_F32, PB_KV_F16, PB_KV_BF16};
    for (size_t bi = 0; bi < PB_ARRAY_LEN(bss); bi++)
        for (size_t di = 0; di < PB_ARRAY_LEN(dts); di++) {
            pb_kv_cache_shape c = {0, 3, 80, bss[bi], dts[di]};
            const int32_t T = 37;
            c.num_blocks = (T + c.block_size - 1) / c.block_size + 3;
            const size_t es = pb_kv_dtype_size(c.dtype), hd = 3 * 80;
            const size_t cache_n = (size_t)c.num_blocks * pb_kv_block_bytes(&c) / es;
            const int32_t stride = 3 * (int32_t)hd;          /* fused QKV row */
            void *kc = calloc(cache_n, es), *vc = calloc(cache_n, es);
            void *key = malloc(es * T * stride), *val = malloc(es * T * stride);
            fill_bytes(key, es * T * stride, 1 + bi);
            fill_bytes(val, es * T * stride, 100 + di);
            int64_t slots[37];
            /* a permutation of slots over all blocks, and two padding tokens */
            pb_rng r;
            pb_rng_seed(&r, 9 + bi, 0);
            int64_t cap = (int64_t)c.num_blocks * c.block_size;
            int64_t *perm = malloc(sizeof(int64_t) * (size_t)cap);
            for (int64_t i = 0; i < cap; i++) perm[i] = i;
            for (int64_t i = cap - 1; i > 0; i--) {
                int64_t j = (int64_t)pb_rng_below(&r, (uint64_t)i + 1), t = perm[i];
                perm[i] = perm[j]; perm[j] = t;
            }
            for (int i = 0; i < T; i++) slots[i] = perm[i];
            slots[5] = -1; slots[30] = -1;
            PB_REQUIRE(pb_reshape_and_cache_ref(&c, kc, vc, key, val, stride, stride, slots, T) == PB_OK);
            /* independent formula, byte-exact */
            const int64_t x = pb_kv_x(c.dtype), bs = c.block_size, D = 80;
            int bad = 0;
            for (int i = 0; i < T; i++) {
                if (slots[i] < 0) continue;
                int64_t b = slots[i] / bs, o = slots[i] % bs;
                for (int64_t h = 0; h < 3; h++)
                    for (int64_t d = 0; d < D; d++) {
                        size_t ki = (size_t)((((b * 3 + h) * (D / x) + d / x) * bs + o) * x + d % x);
                        size_t vi = (size_t)(((b * 3 + h) * D + d) * bs + o);
                        size_t si = (size_t)i * stride + (size_t)(h * D + d);
                        bad += memcmp((char *)kc + ki * es, (char *)key + si * es, es) != 0;
                        bad += memcmp((char *)vc + vi * es, (char *)val + si * es, es) != 0;
                    }
            }
            PB_CHECK_EQ_INT(bad, 0);
            /* gather back into dense [T, Hkv*D]: equal to the inputs, zeros for padding */
            void *gk = malloc(es * T * hd), *gv = malloc(es * T * hd);
            PB_REQUIRE(pb_gather_cached_kv_ref(&c, gk, gv, kc, vc, slots, T) == PB_OK);
            for (int i = 0; i < T; i++) {
                const char *wk = (char *)key + (size_t)i * stride * es, *wv = (char *)val + (size_t)i * stride * es;
                if (slots[i] < 0) {
                    for (size_t e = 0; e < hd * es; e++) bad += ((char *)gk)[(size_t)i * hd * es + e] != 0;
                } else {
                    bad += memcmp((char *)gk + (size_t)i * hd * es, wk, hd * es) != 0;
                    bad += memcmp((char *)gv + (size_t)i * hd * es, wv, hd * es) != 0;
                }
            }
            PB_CHECK_EQ_INT(bad, 0);
            slots[0] = cap;                                    /* out of range */
            PB_CHECK(pb_reshape_and_cache_ref(&c, kc, vc, key, val, stride, stride, slots, T) == PB_ERR_INVALID);
            free(kc); free(vc); free(key); free(val); free(gk); free(gv); free(perm);
        }
}

PB_TEST(copy_blocks_all_layers) {
    pb_kv_cache_shape c = {10, 2, 64, 16, PB_KV_F16};
    const size_t bb = pb_kv_block_bytes(&c);
    PB_CHECK_EQ_INT(bb, 2 * 64 * 16 * 2);
    enum { L = 3 };
    void *k[L], *v[L], *k0[L], *v0[L];
    for (int l = 0; l < L; l++) {
        k[l] = malloc(bb * 10); v[l] = malloc(bb * 10);
        fill_bytes(k[l], bb * 10, 10 + l); fill_bytes(v[l], bb * 10, 20 + l);
        k0[l] = malloc(bb * 10); v0[l] = malloc(bb * 10);
        memcpy(k0[l], k[l], bb * 10); memcpy(v0[l], v[l], bb * 10);
    }
    pb_block_pair pairs[3] = {{1, 7}, {1, 8}, {4, 2}};
    PB_REQUIRE(pb_copy_blocks_ref(k, v, L, pairs, 3, bb) == PB_OK);
    for (int l = 0; l < L; l++)
        for (int b = 0; b < 10; b++) {
            int src = b == 7 || b == 8 ? 1 : b == 2 ? 4 : b;
            PB_CHECK(memcmp((char *)k[l] + b * bb, (char *)k0[l] + src * bb, bb) == 0);
            PB_CHECK(memcmp((char *)v[l] + b * bb, (char *)v0[l] + src * bb, bb) == 0);
        }
    pb_block_pair badp = {-1, 2};
    PB_CHECK(pb_copy_blocks_ref(k, v, L, &badp, 1, bb) == PB_ERR_INVALID);
    for (int l = 0; l < L; l++) { free(k[l]); free(v[l]); free(k0[l]); free(v0[l]); }
}

PB_TEST(swap_merge_runs) {
    pb_copy_run runs[8];
    /* 3,4,5 -> 10,11,12 merge; 7 -> 20 alone; 8 -> 22 (src consecutive, dst not) */
    pb_block_pair p[5] = {{5, 12}, {3, 10}, {8, 22}, {4, 11}, {7, 20}};
    int32_t n = pb_swap_merge_runs(p, 5, 100, runs);
    PB_REQUIRE(n == 3);
    PB_CHECK(runs[0].src_off == 300 && runs[0].dst_off == 1000 && runs[0].bytes == 300);
    PB_CHECK(runs[1].src_off == 700 && runs[1].dst_off == 2000 && runs[1].bytes == 100);
    PB_CHECK(runs[2].src_off == 800 && runs[2].dst_off == 2200 && runs[2].bytes == 100);
    PB_CHECK_EQ_INT(pb_swap_merge_runs(p, 0, 100, runs), 0);
    /* random sets: bytes preserved, runs never overlap in src */
    pb_rng r;
    pb_rng_seed(&r, 77, 0);
    for (int it = 0; it < 50; it++) {
        pb_block_pair q[64];
        int nq = 1 + (int)pb_rng_below(&r, 64);
        for (int i = 0; i < nq; i++) { q[i].src = i * 2 + (int)pb_rng_below(&r, 2); q[i].dst = (int)pb_rng_below(&r, 4) ? i : 1000 + i; }
        pb_copy_run rr[64];
        int32_t m = pb_swap_merge_runs(q, nq, 64, rr);
        int64_t tot = 0;
        for (int i = 0; i < m; i++) { tot += rr[i].bytes; if (i) PB_CHECK(rr[i].src_off >= rr[i - 1].src_off + rr[i - 1].bytes); }
        PB_CHECK_EQ_INT(tot, (int64_t)nq * 64);
    }
}

PB_TEST(swap_blocks_host) {
    enum { NB = 12, BB = 48, NT = 4 };
    void *src[NT], *dst[NT];
    for (int t = 0; t < NT; t++) {
        src[t] = malloc(NB * BB); dst[t] = calloc(NB, BB);
        fill_bytes(src[t], NB * BB, 50 + t);
    }
    pb_block_pair p[5] = {{0, 3}, {1, 4}, {2, 5}, {9, 0}, {6, 11}};
    PB_REQUIRE(pb_swap_blocks_ref(dst, (const void *const *)src, NT, p, 5, BB) == PB_OK);
    for (int t = 0; t < NT; t++)
        for (int i = 0; i < 5; i++)
            PB_CHECK(memcmp((char *)dst[t] + p[i].dst * BB, (char *)src[t] + p[i].src * BB, BB) == 0);
    PB_CHECK(((char *)dst[0])[BB * 1] == 0);                 /* untouched block stays */
    for (int t = 0; t < NT; t++) { free(src[t]); free(dst[t]); }
}

PB_TEST_MAIN()
