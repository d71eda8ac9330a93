/* test_buddy.c -- the buddy allocator against a brute-force model of the slot space. */
#include <stdlib.h>
#include <string.h>

#include "buddy.h"
#include "pbtest.h"
#include "rng.h"


/* Brute-force model: owner[i] = allocation index owning slot i, or -1. */
typedef struct {
    int64_t n;
    int32_t *owner;
} model;

static int64_t bf_free(const model *m) {
    int64_t c = 0;
    for (int64_t i = 0; i < m->n; i++) c += m->owner[i] < 0;
    return c;
}

/* Aligned windows of `chunk` slots lying inside [0, n) whose slots are all free. */
static int64_t bf_count_fit(const model *m, int64_t chunk) {
    int64_t c = 0;
    for (int64_t s = 0; s + chunk <= m->n; s += chunk) {
        int64_t i = s;
        while (i < s + chunk && m->owner[i] < 0) i++;
        c += i == s + chunk;
    }
    return c;
}

static int64_t bf_largest(const model *m) {
    int64_t best = 0;
    for (int64_t c = 1; c <= m->n; c *= 2)
        if (bf_count_fit(m, c) > 0) best = c;
    return best;
}

static void check_ok(const pb_buddy *b) {
    char err[256] = "";
    pb_status st = pb_buddy_check(b, err, sizeof err);
    if (st != PB_OK) fprintf(stderr, "  %s\n", err);
    PB_CHECK(st == PB_OK);
}

PB_TEST(chunk_rounding) {
    PB_CHECK_EQ_INT(pb_buddy_chunk_for(1), 1);
    PB_CHECK_EQ_INT(pb_buddy_chunk_for(25), 32);
    PB_CHECK_EQ_INT(pb_buddy_chunk_for(32), 32);
    PB_CHECK_EQ_INT(pb_buddy_chunk_for(33), 64);
    PB_CHECK_EQ_INT(pb_buddy_chunk_for(2048), 2048);
    PB_CHECK_EQ_INT(pb_buddy_chunk_for(2049), 4096);
}

PB_TEST(opt13b_space_holds_seven_max_chunks) {
    pb_buddy *b = pb_buddy_create(15728);
    PB_REQUIRE(b);
    check_ok(b);
    PB_CHECK_EQ_INT(pb_buddy_capacity_for(15728, 2048), 7);
    PB_CHECK_EQ_INT(pb_buddy_count_fit(b, 2048), 7);
    pb_buddy_stats s;
    pb_buddy_stats_get(b, &s);
    PB_CHECK_EQ_INT(s.largest_free, 8192);
    PB_CHECK_EQ_INT(s.n_free_chunks, 8);       /* 8192 4096 2048 1024 256 128 32 16 */
    int64_t offs[8];
    int got = 0;
    for (int i = 0; i < 8; i++) {
        offs[i] = pb_buddy_alloc(b, 2048);
        if (offs[i] >= 0) got++;
        check_ok(b);
    }
    PB_CHECK_EQ_INT(got, 7);
    PB_CHECK(offs[7] == -1);
    pb_buddy_stats_get(b, &s);
    PB_CHECK_EQ_INT(s.free_slots, 15728 - 7 * 2048);    /* 1456 slots = 8.85% */
    PB_CHECK(pb_buddy_can_alloc(b, 1024));
    PB_CHECK(!pb_buddy_can_alloc(b, 1025));
    for (int i = 0; i < 7; i++) pb_buddy_free(b, offs[i]);
    check_ok(b);
    pb_buddy_stats_get(b, &s);
    PB_CHECK_EQ_INT(s.free_slots, 15728);
    PB_CHECK_EQ_INT(s.n_free_chunks, 8);
    PB_CHECK_EQ_INT(s.largest_free, 8192);
    pb_buddy_destroy(b);
}

PB_TEST(out_of_range) {
    PB_CHECK(pb_buddy_create(0) == NULL);
    pb_buddy *b = pb_buddy_create(100);
    PB_REQUIRE(b);
    PB_CHECK(pb_buddy_alloc(b, 0) == -1);
    PB_CHECK(pb_buddy_alloc(b, 101) == -1);
    PB_CHECK(pb_buddy_alloc(b, 65) == -1);     /* needs a 128 chunk: never fits */
    PB_CHECK(pb_buddy_alloc(b, 64) == 0);
    check_ok(b);
    pb_buddy_destroy(b);
}

/* Random allocate / free against the brute-force model, on several space sizes. */
static void property_run(int64_t n, uint64_t seed, int ops) {
    pb_rng r;
    pb_rng_seed(&r, seed, 0);
    pb_buddy *b = pb_buddy_create(n);
    PB_REQUIRE(b);
    pb_buddy_stats s0;
    pb_buddy_stats_get(b, &s0);
    model m = {n, pb_xmalloc((size_t)n * sizeof(int32_t))};
    for (int64_t i = 0; i < n; i++) m.owner[i] = -1;
    int64_t *live_off = pb_xmalloc((size_t)ops * sizeof(int64_t));
    int64_t *live_req = pb_xmalloc((size_t)ops * sizeof(int64_t));
    int n_live = 0, fails = 0;
    int64_t requested = 0;
    for (int op = 0; op < ops; op++) {
        bool do_alloc = n_live == 0 || pb_rng_uniform(&r) < 0.55;
        if (do_alloc) {
            /* sizes: log-uniform up to n, so all orders get exercised */
            int64_t maxk = 0;
            while (((int64_t)1 << (maxk + 1)) <= n) maxk++;
            int64_t hi = (int64_t)1 << pb_rng_below(&r, (uint64_t)maxk + 1);
            int64_t size = 1 + (int64_t)pb_rng_below(&r, (uint64_t)hi);
            int64_t chunk = pb_buddy_chunk_for(size);
            int64_t expect_fit = bf_count_fit(&m, chunk);
            PB_CHECK_EQ_INT(pb_buddy_count_fit(b, size), expect_fit);
            PB_CHECK(pb_buddy_can_alloc(b, size) == (expect_fit > 0));
            int64_t off = pb_buddy_alloc(b, size);
            if (off < 0) {
                PB_CHECK_EQ_INT(expect_fit, 0);
                fails++;
            } else {
                PB_CHECK(expect_fit > 0);
                PB_CHECK_EQ_INT(off % chunk, 0);
                PB_CHECK(off + chunk <= n);
                PB_CHECK_EQ_INT(pb_buddy_chunk_size(b, off), chunk);
                for (int64_t i = off; i < off + chunk; i++) {   /* no overlap */
                    if (m.owner[i] >= 0) {
                        PB_CHECK(m.owner[i] < 0);
                        break;
                    }
                    m.owner[i] = n_live;
                }
                live_off[n_live] = off;
                live_req[n_live] = size;
                n_live++;
                requested += size;
            }
        } else {
            int victim = (int)pb_rng_below(&r, (uint64_t)n_live);
            int64_t off = live_off[victim];
            int64_t chunk = pb_buddy_chunk_size(b, off);
            PB_CHECK_EQ_INT(pb_buddy_requested(b, off), live_req[victim]);
            pb_buddy_free(b, off);
            for (int64_t i = off; i < off + chunk; i++) m.owner[i] = -1;
            requested -= live_req[victim];
            n_live--;
            if (victim != n_live) {                       /* move last into the hole */
                live_off[victim] = live_off[n_live];
                live_req[victim] = live_req[n_live];
                int64_t c2 = pb_buddy_chunk_size(b, live_off[victim]);
                for (int64_t i = live_off[victim]; i < live_off[victim] + c2; i++)
                    m.owner[i] = victim;
            }
        }
        if (op % 7 == 0 || n <= 512) {
            check_ok(b);
            pb_buddy_stats s;
            pb_buddy_stats_get(b, &s);
            PB_CHECK_EQ_INT(s.free_slots, bf_free(&m));
            PB_CHECK_EQ_INT(s.chunk_slots + s.free_slots, n);
            PB_CHECK_EQ_INT(s.requested_slots, requested);
            PB_CHECK_EQ_INT(s.rounding_slots, (n - bf_free(&m)) - requested);
            PB_CHECK_EQ_INT(s.largest_free, bf_largest(&m));
            PB_CHECK_EQ_INT(s.n_allocs, n_live);
        }
    }
    PB_CHECK(fails > 0);           /* the run did reach a full / fragmented space */
    /* free everything in random order: the space coalesces back to its initial state */
    while (n_live > 0) {
        int victim = (int)pb_rng_below(&r, (uint64_t)n_live);
        pb_buddy_free(b, live_off[victim]);
        live_off[victim] = live_off[--n_live];
    }
    check_ok(b);
    pb_buddy_stats s1;
    pb_buddy_stats_get(b, &s1);
    PB_CHECK(memcmp(&s0, &s1, sizeof s0) == 0);
    PB_CHECK_EQ_INT(s1.n_free_chunks, __builtin_popcountll((unsigned long long)n));
    free(live_off);
    free(live_req);
    free(m.owner);
    pb_buddy_destroy(b);
}

PB_TEST(property_vs_brute_force) {
    const int64_t sizes[] = {1, 2, 3, 64, 100, 255, 1000, 1024, 15728};
    for (size_t i = 0; i < PB_ARRAY_LEN(sizes); i++)
        property_run(sizes[i], 1234 + i, sizes[i] >= 1000 ? 3000 : 1500);
}

PB_TEST_MAIN()
