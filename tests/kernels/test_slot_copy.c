/* test_slot_copy.c -- the contiguous-cache range copy (slot_copy.h) against a slot-by-slot
 * copy through the layout's index formula, and its range checks.
 *   build/cpu/test_slot_copy */
#include <stdlib.h>
#include <string.h>

#include "kv_dtype.h"
#include "pbtest.h"
#include "slot_copy.h"

enum { L = 2, H = 3, D = 16, S = 40 };

/* element index of (head h, dim d, slot s) in K [1, H, D/x, S, x] and V [1, H, D, S] */
static size_t k_idx(int h, int d, int s, int x) { return (((size_t)h * (D / x) + d / x) * S + s) * x + d % x; }
static size_t v_idx(int h, int d, int s) { return ((size_t)h * D + d) * S + s; }

PB_TEST(copies_exactly_the_ranges_in_every_layer) {
    for (int dt = 0; dt < 2; dt++) {
        pb_kv_cache_shape c = {1, H, D, S, dt ? PB_KV_F16 : PB_KV_F32, PB_KV_CACHE_AUTO, 0.0f};
        size_t el = pb_kv_dtype_size(c.dtype), n = (size_t)H * D * S;
        int x = (int)(16 / el);
        void *k[L], *v[L], *ek[L], *ev[L];
        for (int l = 0; l < L; l++) {
            k[l] = malloc(n * el); v[l] = malloc(n * el); ek[l] = malloc(n * el); ev[l] = malloc(n * el);
            for (size_t i = 0; i < n; i++) {
                pb_kv_store(k[l], c.dtype, i, (float)(i % 1000) + 1000.0f * l);
                pb_kv_store(v[l], c.dtype, i, -(float)(i % 1000) - 1000.0f * l);
            }
            memcpy(ek[l], k[l], n * el);
            memcpy(ev[l], v[l], n * el);
        }
        const pb_slot_copy cp[2] = {{3, 20, 7}, {30, 0, 5}};
        for (int l = 0; l < L; l++)            /* expected: slot by slot, in order */
            for (int q = 0; q < 2; q++)
                for (int t = 0; t < cp[q].n; t++)
                    for (int h = 0; h < H; h++)
                        for (int d = 0; d < D; d++) {
                            int s0 = (int)cp[q].src + t, s1 = (int)cp[q].dst + t;
                            pb_kv_store(ek[l], c.dtype, k_idx(h, d, s1, x), pb_kv_load(ek[l], c.dtype, k_idx(h, d, s0, x)));
                            pb_kv_store(ev[l], c.dtype, v_idx(h, d, s1), pb_kv_load(ev[l], c.dtype, v_idx(h, d, s0)));
                        }
        PB_CHECK(pb_copy_slots_ref(&c, k, v, L, cp, 2) == PB_OK);
        for (int l = 0; l < L; l++) {
            PB_CHECK(memcmp(k[l], ek[l], n * el) == 0);
            PB_CHECK(memcmp(v[l], ev[l], n * el) == 0);
            free(k[l]); free(v[l]); free(ek[l]); free(ev[l]);
        }
    }
}

PB_TEST(rejects_ranges_outside_the_cache) {
    pb_kv_cache_shape c = {1, H, D, S, PB_KV_F32, PB_KV_CACHE_AUTO, 0.0f};
    const pb_slot_copy bad[3] = {{35, 0, 6}, {0, 36, 5}, {-1, 0, 1}};
    for (int i = 0; i < 3; i++) PB_CHECK(pb_copy_slots_check(&c, &bad[i], 1) == PB_ERR_INVALID);
    const pb_slot_copy ok = {34, 0, 6};
    PB_CHECK(pb_copy_slots_check(&c, &ok, 1) == PB_OK);
    pb_kv_cache_shape paged = {4, H, D, 16, PB_KV_F32, PB_KV_CACHE_AUTO, 0.0f};
    PB_CHECK(pb_copy_slots_check(&paged, &ok, 0) == PB_ERR_INVALID);
}

PB_TEST(rejects_a_copy_onto_its_own_source) {
    pb_kv_cache_shape c = {1, H, D, S, PB_KV_F32, PB_KV_CACHE_AUTO, 1.0f};
    /* src [0,5) onto [3,8), [10,15) onto [6,11), onto itself: undefined for cudaMemcpy2DAsync */
    const pb_slot_copy overl[3] = {{0, 3, 5}, {10, 6, 5}, {7, 7, 2}};
    for (int i = 0; i < 3; i++) PB_CHECK(pb_copy_slots_check(&c, &overl[i], 1) == PB_ERR_INVALID);
    /* touching ranges, an empty copy, and a later copy overwriting an earlier one's source */
    const pb_slot_copy fine[3] = {{0, 5, 5}, {9, 9, 0}, {5, 0, 5}};
    PB_CHECK(pb_copy_slots_check(&c, fine, 3) == PB_OK);
    /* nothing is copied when one copy of the list is refused */
    size_t n = (size_t)H * D * S;
    float *k = malloc(n * sizeof(float)), *v = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) { k[i] = (float)i; v[i] = -(float)i; }
    void *kl[1] = {k}, *vl[1] = {v};
    const pb_slot_copy mixed[2] = {{20, 0, 4}, {0, 2, 4}};
    PB_CHECK(pb_copy_slots_ref(&c, kl, vl, 1, mixed, 2) == PB_ERR_INVALID);
    int same = 1;
    for (size_t i = 0; i < n; i++) same &= k[i] == (float)i && v[i] == -(float)i;
    PB_CHECK(same);
    free(k);
    free(v);
}

PB_TEST_MAIN()
