/* test_cache_ops.c -- C references of cache_ops.h: reshape_and_cache against an
 * independent per-element formula, a reshape -> gather round trip, padding slots,
 * copy_blocks over all layers, swap run merging and host swap; fp32/fp16/bf16;
 * block sizes 1/8/16/32/256.  FP8 caches (e4m3, e5m2, with kv_scale): every cache
 * element is fp8(x / kv_scale) at the x = 16 layout, gather returns fp8 * kv_scale
 * in the activation dtype, blocks are half an fp16 block and copy_blocks / swap
 * move them byte for byte.
 *   cmake --build build && (cd build && ctest -R test_cache_ops --output-on-failure) */
#include <math.h>
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
            pb_kv_cache_shape c = {0, 3, 80, bss[bi], dts[di], PB_KV_CACHE_AUTO, 0.0f};
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
    pb_kv_cache_shape c = {10, 2, 64, 16, PB_KV_F16, PB_KV_CACHE_AUTO, 0.0f};
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

static float as_dtype(pb_kv_dtype t, float v) {
    unsigned char b[4];
    pb_kv_store(b, t, 0, v);
    return pb_kv_load(b, t, 0);
}

PB_TEST(fp8_reshape_gather_copy_swap) {
    static const pb_kv_cache_dtype fmts[] = {PB_KV_CACHE_FP8_E4M3, PB_KV_CACHE_FP8_E5M2};
    static const pb_kv_dtype acts[] = {PB_KV_F16, PB_KV_BF16, PB_KV_F32};
    static const int32_t bss[] = {1, 16, 32};
    for (size_t f = 0; f < 2; f++)
        for (size_t a = 0; a < 3; a++)
            for (size_t bi = 0; bi < 3; bi++) {
                const int32_t T = 21, Hkv = 2, D = 64, hd = Hkv * D, bs = bss[bi];
                const float scale = f ? 0.25f : 3.0f;
                pb_kv_cache_shape c = {PB_CDIV(T, bs) + 2, Hkv, D, bs, acts[a], fmts[f], scale};
                const pb_kv_dtype ce = pb_kv_cache_shape_elem(&c);
                PB_REQUIRE(pb_kv_cache_shape_check(&c) == PB_OK);
                PB_CHECK_EQ_INT((int)pb_kv_block_bytes(&c), Hkv * D * bs);   /* one byte per element */
                const size_t es = pb_kv_dtype_size(acts[a]), cb = (size_t)c.num_blocks * pb_kv_block_bytes(&c);
                unsigned char *kc = malloc(cb), *vc = malloc(cb);
                memset(kc, 0x7f, cb); memset(vc, 0x7f, cb);          /* NaN: unwritten slots stay NaN */
                void *key = malloc(es * T * hd), *val = malloc(es * T * hd);
                pb_rng r;
                pb_rng_seed(&r, 40 + f * 9 + a * 3 + bi, 1);
                for (int i = 0; i < T * hd; i++) {               /* values up to 2x the fp8 range */
                    double mag = ldexp(1.0, (int)pb_rng_below(&r, 40) - 30) * scale;
                    pb_kv_store(key, acts[a], (size_t)i, (float)((pb_rng_uniform(&r) < 0.5 ? -1 : 1) * mag));
                    pb_kv_store(val, acts[a], (size_t)i, (float)(2 * pb_rng_uniform(&r) - 1) * scale);
                }
                int64_t slots[21];
                for (int i = 0; i < T; i++) slots[i] = (int64_t)((i / bs + 1) % c.num_blocks) * bs + i % bs;
                slots[4] = -1;
                PB_REQUIRE(pb_reshape_and_cache_ref(&c, kc, vc, key, val, 0, 0, slots, T) == PB_OK);
                int bad = 0;
                for (int i = 0; i < T; i++) {
                    if (slots[i] < 0) continue;
                    int64_t b = slots[i] / bs, o = slots[i] % bs;
                    for (int64_t h = 0; h < Hkv; h++)
                        for (int64_t d = 0; d < D; d++) {
                            size_t ki = (size_t)((((b * Hkv + h) * (D / 16) + d / 16) * bs + o) * 16 + d % 16);
                            size_t vi = (size_t)(((b * Hkv + h) * D + d) * bs + o), si = (size_t)(i * hd + h * D + d);
                            bad += kc[ki] != pb_f32_to_fp8(pb_kv_load(key, acts[a], si) / scale, ce);
                            bad += vc[vi] != pb_f32_to_fp8(pb_kv_load(val, acts[a], si) / scale, ce);
                        }
                }
                PB_CHECK_EQ_INT(bad, 0);
                void *gk = malloc(es * T * hd), *gv = malloc(es * T * hd);
                PB_REQUIRE(pb_gather_cached_kv_ref(&c, gk, gv, kc, vc, slots, T) == PB_OK);
                for (int i = 0; i < T; i++)
                    for (int e = 0; e < hd; e++) {
                        size_t si = (size_t)(i * hd + e);
                        float k0 = pb_kv_load(key, acts[a], si), gkv = pb_kv_load(gk, acts[a], si);
                        float want = slots[i] < 0 ? 0.0f
                                   : as_dtype(acts[a], pb_fp8_to_f32(pb_f32_to_fp8(k0 / scale, ce), ce) * scale);
                        bad += gkv != want;
                        /* the error bound of kv_dtype.h, or saturation at +-max * scale */
                        double u = pb_fp8_unit_roundoff(ce), fl = pb_fp8_abs_floor(ce) * scale;
                        if (slots[i] >= 0 && fabsf(k0) <= pb_fp8_max(ce) * scale)
                            bad += !(fabs((double)gkv - k0) <= u * fabs(k0) + fl + 1e-2 * u * fabs(k0));
                        else if (slots[i] >= 0)
                            bad += fabsf(gkv) != as_dtype(acts[a], pb_fp8_max(ce) * scale);
                    }
                PB_CHECK_EQ_INT(bad, 0);
                /* copy_blocks and swap are byte moves of fp8 blocks */
                void *ks[1] = {kc}, *vs[1] = {vc};
                unsigned char *k0 = malloc(cb);
                memcpy(k0, kc, cb);
                pb_block_pair pr = {1, 0};
                PB_REQUIRE(pb_copy_blocks_ref(ks, vs, 1, &pr, 1, pb_kv_block_bytes(&c)) == PB_OK);
                PB_CHECK(memcmp(kc, k0 + pb_kv_block_bytes(&c), pb_kv_block_bytes(&c)) == 0);
                unsigned char *host = calloc(1, cb);
                void *dst[1] = {host};
                const void *src[1] = {kc};
                PB_REQUIRE(pb_swap_blocks_ref(dst, src, 1, &pr, 1, pb_kv_block_bytes(&c)) == PB_OK);
                PB_CHECK(memcmp(host, kc + pb_kv_block_bytes(&c), pb_kv_block_bytes(&c)) == 0);
                free(kc); free(vc); free(key); free(val); free(gk); free(gv); free(k0); free(host);
            }
    pb_kv_cache_shape bad = {4, 2, 64, 16, PB_KV_F16, PB_KV_CACHE_FP8_E4M3, 0.0f};
    PB_CHECK(pb_kv_cache_shape_check(&bad) == PB_ERR_INVALID);           /* kv_scale 0 */
    bad.kv_scale = 1.0f; bad.head_size = 72;
    PB_CHECK(pb_kv_cache_shape_check(&bad) == PB_ERR_INVALID);           /* 72 % 16 */
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
