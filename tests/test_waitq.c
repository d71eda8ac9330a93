/* test_waitq.c -- the scheduler's waiting queue (waitq.h: sorted deque + heap)
 * against a reference: random pushes of in-order, front and out-of-order keys (with
 * ties on wait_key and arrival_s), removals of the head and of any waiting group;
 * after every operation the head is the reference's minimum under (wait_key,
 * arrival_s, id) and pb_waitq_check passes; the final drain pops in the
 * reference's sorted order. */
#include "pbtest.h"
#include "rng.h"
#include "waitq.h"

enum { N = 4000 };

static bool ref_before(const pb_group *a, const pb_group *b) {
    if (a->wait_key != b->wait_key) return a->wait_key < b->wait_key;
    if (a->arrival_s != b->arrival_s) return a->arrival_s < b->arrival_s;
    return a->id < b->id;
}

static int ref_cmp(const void *a, const void *b) {
    const pb_group *x = *(pb_group *const *)a, *y = *(pb_group *const *)b;
    return ref_before(x, y) ? -1 : ref_before(y, x) ? 1 : 0;
}

static pb_group *ref_min(pb_group **w, int32_t n) {
    pb_group *m = NULL;
    for (int32_t i = 0; i < n; i++)
        if (!m || ref_before(w[i], m)) m = w[i];
    return m;
}

static void ref_drop(pb_group **w, int32_t *n, pb_group *g) {
    for (int32_t i = 0; i < *n; i++)
        if (w[i] == g) { w[i] = w[--*n]; return; }
}

/* One random run; mix = percent of in-order / front pushes (the rest out of order),
   del = percent of removals that take a random waiting group rather than the head. */
static void run(uint64_t seed, int mix, int del) {
    static pb_group gs[N];
    static pb_group *w[N], *order[N];
    pb_waitq s;
    memset(&s, 0, sizeof s);
    memset(gs, 0, sizeof gs);
    pb_rng r;
    pb_rng_seed(&r, seed, 1);
    int32_t n = 0, next = 0, bad = 0;
    double lo = 0, hi = 0;   /* key range seen so far */
    while ((next < N || n > 0) && bad == 0) {
        bool push = next < N && (n == 0 || pb_rng_u64(&r) % 100 < 55);
        if (push) {
            pb_group *g = &gs[next];
            g->id = next++;
            g->heap_idx = -1;
            g->state = PB_GROUP_WAITING;
            g->arrival_s = (double)(pb_rng_u64(&r) % 8);
            int u = (int)(pb_rng_u64(&r) % 100);
            double d = (double)(pb_rng_u64(&r) % 3);
            if (u < mix / 2) g->wait_key = hi + d;               /* at or after the back */
            else if (u < mix) g->wait_key = lo - d;              /* at or before the front */
            else g->wait_key = lo + (double)(pb_rng_u64(&r) % (uint64_t)(hi - lo + 1));
            lo = PB_MIN(lo, g->wait_key);
            hi = PB_MAX(hi, g->wait_key);
            pb_waitq_push(&s, g);
            w[n++] = g;
        } else {
            pb_group *g = pb_rng_u64(&r) % 100 < (uint64_t)del ? w[pb_rng_u64(&r) % (uint64_t)n] : ref_min(w, n);
            pb_waitq_remove(&s, g);
            ref_drop(w, &n, g);
            if (g->heap_idx != -1) bad++;
        }
        if (pb_waitq_peek(&s) != (n ? ref_min(w, n) : NULL) || s.n != n ||
            pb_waitq_check(&s) != PB_OK)
            bad++;
        if (next == N / 2 && n > 1) {   /* from here on: push all, then drain in order */
            memcpy(order, w, (size_t)n * sizeof *w);
            qsort(order, (size_t)n, sizeof *order, ref_cmp);
            for (int32_t i = 0; i < n && bad == 0; i++) {
                pb_group *g = pb_waitq_peek(&s);
                if (g != order[i]) bad++;
                else pb_waitq_remove(&s, g);
                if (pb_waitq_check(&s) != PB_OK) bad++;
            }
            n = 0;
            lo = hi = 0;
        }
    }
    PB_CHECK_EQ_INT(bad, 0);
    PB_CHECK_EQ_INT(s.n, 0);
    pb_waitq_free(&s);
}

PB_TEST(fcfs_like_pushes_in_order_and_at_the_front) { run(1, 95, 5); }
PB_TEST(out_of_order_pushes_and_removals_anywhere) { run(2, 40, 50); }
PB_TEST(only_out_of_order_pushes) { run(3, 0, 20); }
PB_TEST(only_in_order_pushes_many_removals_inside) { run(4, 100, 90); }

/* A count zeroed alone (a run's start) means empty: the next push resets the rest. */
PB_TEST(zeroed_count_means_empty) {
    pb_waitq s;
    memset(&s, 0, sizeof s);
    pb_group g[3];
    memset(g, 0, sizeof g);
    for (int i = 0; i < 3; i++) {
        g[i].id = i;
        g[i].state = PB_GROUP_WAITING;
        g[i].wait_key = 2 - i;   /* 2 to the back, 1 and 0 to the front */
        pb_waitq_push(&s, &g[i]);
    }
    PB_CHECK(pb_waitq_peek(&s) == &g[2]);
    s.n = 0;
    PB_CHECK(pb_waitq_peek(&s) == NULL);
    PB_CHECK(pb_waitq_check(&s) == PB_OK);
    pb_waitq_push(&s, &g[0]);
    PB_CHECK(pb_waitq_peek(&s) == &g[0]);
    PB_CHECK_EQ_INT(s.n, 1);
    PB_CHECK(pb_waitq_check(&s) == PB_OK);
    pb_waitq_free(&s);
}

PB_TEST_MAIN()
