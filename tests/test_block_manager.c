/* test_block_manager.c -- the paged KV manager: the paper's Fig. 6-9 scenarios as
 * exact block-level checks, shared prefixes, swapping, admission, and a 100k-op
 * random property test with pb_kv_check() after every operation. */
#include <stdlib.h>
#include <string.h>

#include "block_manager.h"
#include "pbtest.h"
#include "rng.h"
#include "sequence.h"

typedef struct {
    pb_kv_manager *kv;
    pb_seq_pool *pool;
    pb_request reqs[256];
    pb_group groups[256];
    int n;
    pb_pair_vec copies, map;
} rig;

static void rig_init(rig *r, int32_t bs, int32_t gpu, int32_t cpu, double wm) {
    memset(r, 0, sizeof *r);
    pb_paged_params p;
    pb_paged_params_default(&p);
    p.block_size = bs;
    p.n_gpu_blocks = gpu;
    p.n_cpu_blocks = cpu;
    p.watermark = wm;
    PB_ASSERT(pb_paged_kv_create(&p, &r->kv) == PB_OK);
    r->pool = pb_seq_pool_create(false);
}

static void rig_free(rig *r) {
    for (int i = 0; i < r->n; i++) {
        pb_group *g = &r->groups[i];
        while (g->n_seqs) {
            pb_seq *s = g->seqs[g->n_seqs - 1];
            pb_kv_free(r->kv, s);
            pb_seq_delete(r->pool, s);
        }
        pb_group_release(g);
    }
    pb_kv_destroy(r->kv);
    pb_seq_pool_destroy(r->pool);
    pb_pair_vec_free(&r->copies);
    pb_pair_vec_free(&r->map);
}

/* a WAITING group with one prompt sequence */
static pb_group *rig_group(rig *r, int32_t prompt, int32_t output, int32_t prefix_id, int32_t prefix_len) {
    int i = r->n++;
    pb_request *q = &r->reqs[i];
    memset(q, 0, sizeof *q);
    q->id = i;
    q->prompt_len = prompt;
    q->output_len = output;
    q->n = 1;
    q->beam_width = 1;
    q->prefix_id = prefix_id;
    q->prefix_len = prefix_len;
    q->conversation_id = -1;
    pb_group *g = &r->groups[i];
    pb_group_init(g, i, q, 1 << 20, 7);
    g->state = PB_GROUP_WAITING;
    pb_seq_new(r->pool, g);
    return g;
}

static const int32_t *tab(rig *r, pb_seq *s, int32_t *n) { return pb_paged_table(r->kv, s, n, NULL); }
static int32_t ref(rig *r, int32_t b) { return pb_block_alloc_ref(pb_paged_gpu(r->kv), b); }
static int32_t fill(rig *r, int32_t b) { return pb_block_alloc_fill(pb_paged_gpu(r->kv), b); }

/* append one token slot to s (as a decode step does: the token sampled last step) */
static void step_append(rig *r, pb_seq *s) {
    s->len++;
    PB_ASSERT(pb_kv_append(r->kv, s, &r->copies) == PB_OK);
}

PB_TEST(fig6_block_table_growth) {
    rig r;
    rig_init(&r, 4, 8, 0, 0);
    pb_group *g = rig_group(&r, 7, 10, -1, 0);   /* "Four score and seven years ago our" */
    PB_REQUIRE(pb_kv_can_allocate(r.kv, g) == PB_ALLOC_OK);
    PB_REQUIRE(pb_kv_allocate(r.kv, g, &r.copies) == PB_OK);
    pb_seq *s = g->seqs[0];
    int32_t n;
    const int32_t *t = tab(&r, s, &n);
    PB_CHECK_EQ_INT(n, 2);
    PB_CHECK_EQ_INT(s->kv_len, 7);
    PB_CHECK(t[0] != t[1]);
    PB_CHECK_EQ_INT(fill(&r, t[0]), 4);    /* #filled 4 */
    PB_CHECK_EQ_INT(fill(&r, t[1]), 3);    /* #filled 3 */
    int32_t b1 = t[1];
    step_append(&r, s);                    /* step 1: "fathers" fills the last slot */
    t = tab(&r, s, &n);
    PB_CHECK_EQ_INT(n, 2);
    PB_CHECK_EQ_INT(t[1], b1);
    PB_CHECK_EQ_INT(fill(&r, b1), 4);
    step_append(&r, s);                    /* step 2: "brought" needs a new block */
    t = tab(&r, s, &n);
    PB_CHECK_EQ_INT(n, 3);
    PB_CHECK_EQ_INT(fill(&r, t[2]), 1);
    PB_CHECK(t[2] != t[0] && t[2] != t[1]);
    PB_CHECK_EQ_INT(r.copies.n, 0);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r.kv)), 3);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    pb_kv_usage u;
    pb_kv_usage_get(r.kv, &u);
    PB_CHECK_EQ_INT(u.token_slots, 9);
    PB_CHECK_EQ_INT(u.reserved_slots, 3);   /* 3 empty slots it will still write */
    PB_CHECK_EQ_INT(u.internal_frag_slots, 0);
    PB_CHECK_EQ_INT(u.free_slots, 5 * 4);
    PB_CHECK_EQ_INT(u.token_slots + u.reserved_slots + u.internal_frag_slots + u.free_slots, u.total_slots);
    rig_free(&r);
}

PB_TEST(fig7_two_requests_share_memory) {
    rig r;
    rig_init(&r, 4, 8, 0, 0);
    pb_group *a = rig_group(&r, 7, 10, -1, 0);
    pb_group *b = rig_group(&r, 5, 10, -1, 0);
    PB_REQUIRE(pb_kv_allocate(r.kv, a, &r.copies) == PB_OK);
    PB_REQUIRE(pb_kv_allocate(r.kv, b, &r.copies) == PB_OK);
    for (int i = 0; i < 3; i++) { step_append(&r, a->seqs[0]); step_append(&r, b->seqs[0]); }
    int32_t na, nb;
    const int32_t *ta = tab(&r, a->seqs[0], &na), *tb = tab(&r, b->seqs[0], &nb);
    PB_CHECK_EQ_INT(na, 3);   /* 10 tokens */
    PB_CHECK_EQ_INT(nb, 2);   /* 8 tokens  */
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) PB_CHECK(ta[i] != tb[j]);
    /* the blocks of a are not contiguous: b's blocks were allocated in between */
    PB_CHECK(ta[2] != ta[1] + 1 || ta[1] != ta[0] + 1);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r.kv)), 5);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_free(&r);
}

PB_TEST(fig8_parallel_sampling_copy_on_write) {
    rig r;
    rig_init(&r, 4, 8, 0, 0);
    pb_group *g = rig_group(&r, 7, 10, -1, 0);
    g->max_seqs = 2;
    PB_REQUIRE(pb_kv_allocate(r.kv, g, &r.copies) == PB_OK);
    pb_seq *a1 = g->seqs[0];
    pb_seq *a2 = pb_seq_clone(r.pool, a1);
    PB_REQUIRE(pb_kv_fork(r.kv, a1, a2) == PB_OK);
    int32_t n;
    const int32_t *t = tab(&r, a1, &n);
    int32_t b0 = t[0], b1 = t[1];
    PB_CHECK_EQ_INT(ref(&r, b0), 2);
    PB_CHECK_EQ_INT(ref(&r, b1), 2);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r.kv)), 2);
    /* A1 writes into the shared last block: copy on write */
    step_append(&r, a1);
    PB_CHECK_EQ_INT(r.copies.n, 1);
    int32_t b3 = tab(&r, a1, &n)[1];
    PB_CHECK_EQ_INT(r.copies.v[0].src, b1);
    PB_CHECK_EQ_INT(r.copies.v[0].dst, b3);
    PB_CHECK(b3 != b1 && b3 != b0);
    PB_CHECK_EQ_INT(ref(&r, b1), 1);
    PB_CHECK_EQ_INT(ref(&r, b0), 2);
    PB_CHECK_EQ_INT(fill(&r, b3), 4);
    PB_CHECK_EQ_INT(fill(&r, b1), 3);
    /* A2 now owns block 1 alone: writes in place, no copy */
    step_append(&r, a2);
    PB_CHECK_EQ_INT(r.copies.n, 1);
    PB_CHECK_EQ_INT(tab(&r, a2, &n)[1], b1);
    PB_CHECK_EQ_INT(fill(&r, b1), 4);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    pb_kv_usage u;
    pb_kv_usage_get(r.kv, &u);
    PB_CHECK_EQ_INT(u.logical_blocks, 4);
    PB_CHECK_EQ_INT(u.physical_blocks, 3);   /* block 0 shared: saving 1/4 */
    rig_free(&r);
}

PB_TEST(fig9_beam_search_frees_and_allocates) {
    /* k = 4 beams share the prompt; after a selection where beams 2 and 3 die and
       beams 0 and 1 each get two children, the dead beams' private blocks are freed
       (ref 0) and the children's next appends allocate new blocks */
    rig r;
    rig_init(&r, 4, 32, 0, 0);
    pb_group *g = rig_group(&r, 8, 20, -1, 0);   /* 2 full prompt blocks */
    g->max_seqs = 4;
    PB_REQUIRE(pb_kv_allocate(r.kv, g, &r.copies) == PB_OK);
    pb_seq *beam[4];
    beam[0] = g->seqs[0];
    for (int i = 1; i < 4; i++) {
        beam[i] = pb_seq_clone(r.pool, beam[0]);
        PB_REQUIRE(pb_kv_fork(r.kv, beam[0], beam[i]) == PB_OK);
    }
    for (int step = 0; step < 4; step++)   /* each beam writes its own third block */
        for (int i = 0; i < 4; i++) step_append(&r, beam[i]);
    int32_t n;
    const int32_t *t0 = tab(&r, beam[0], &n);
    int32_t p0 = t0[0], p1 = t0[1];
    PB_CHECK_EQ_INT(ref(&r, p0), 4);
    PB_CHECK_EQ_INT(ref(&r, p1), 4);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r.kv)), 2 + 4);
    int32_t dead2 = tab(&r, beam[2], &n)[2], dead3 = tab(&r, beam[3], &n)[2];
    /* selection: children c0,c1 of beam 0; c2,c3 of beam 1 */
    pb_seq *c1 = pb_seq_clone(r.pool, beam[0]);
    PB_REQUIRE(pb_kv_fork(r.kv, beam[0], c1) == PB_OK);
    pb_seq *c3 = pb_seq_clone(r.pool, beam[1]);
    PB_REQUIRE(pb_kv_fork(r.kv, beam[1], c3) == PB_OK);
    pb_kv_free(r.kv, beam[2]);
    pb_seq_delete(r.pool, beam[2]);
    pb_kv_free(r.kv, beam[3]);
    pb_seq_delete(r.pool, beam[3]);
    PB_CHECK_EQ_INT(ref(&r, dead2), 0);   /* freed */
    PB_CHECK_EQ_INT(ref(&r, dead3), 0);
    PB_CHECK_EQ_INT(ref(&r, p0), 4);      /* all candidates still share the prompt */
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r.kv)), 2 + 2);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    /* next step: every beam starts a new (4th) block: 4 new blocks, no copies since
       the shared third blocks are full */
    int32_t c0 = r.copies.n;
    pb_seq *live[4] = {beam[0], c1, beam[1], c3};
    for (int i = 0; i < 4; i++) step_append(&r, live[i]);
    PB_CHECK_EQ_INT(r.copies.n, c0);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r.kv)), 2 + 2 + 4);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_free(&r);
}

PB_TEST(shared_prefix_reserved_once_last_block_copied) {
    rig r;
    rig_init(&r, 4, 32, 0, 0);
    pb_group *a = rig_group(&r, 10, 5, 3, 6);   /* prefix 6 tokens: 1 full + 2 */
    pb_group *b = rig_group(&r, 9, 5, 3, 6);
    PB_REQUIRE(pb_kv_allocate(r.kv, a, &r.copies) == PB_OK);
    PB_CHECK_EQ_INT(pb_paged_prefix_blocks(r.kv, 3), 2);
    PB_CHECK_EQ_INT(a->seqs[0]->n_cached, 0);          /* first user computes it */
    PB_CHECK_EQ_INT(r.copies.n, 1);                    /* partial prefix block CoW */
    PB_REQUIRE(pb_kv_allocate(r.kv, b, &r.copies) == PB_OK);
    PB_CHECK_EQ_INT(b->seqs[0]->n_cached, 4);          /* full prefix block cached */
    PB_CHECK_EQ_INT(r.copies.n, 2);
    PB_CHECK_EQ_INT(r.copies.v[0].src, r.copies.v[1].src);   /* same pinned block */
    int32_t n;
    const int32_t *ta = tab(&r, a->seqs[0], &n), *tb = tab(&r, b->seqs[0], &n);
    PB_CHECK_EQ_INT(ta[0], tb[0]);
    PB_CHECK_EQ_INT(ref(&r, ta[0]), 3);                /* pool pin + 2 users */
    PB_CHECK(ta[1] != tb[1]);
    /* 2 pinned + a: copy + 1 more (10 tokens = 3 blocks); b: copy + 1 more (9) */
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r.kv)), 2 + 2 + 2);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_free(&r);
    /* all requests gone: only the pinned prefix remains */
}

PB_TEST(swap_out_in_moves_shared_blocks_once) {
    rig r;
    rig_init(&r, 4, 16, 100, 0);
    PB_CHECK_EQ_INT(pb_paged_cpu(r.kv)->n_blocks, 16);   /* swap space <= GPU blocks */
    pb_group *g = rig_group(&r, 7, 10, -1, 0);
    g->max_seqs = 3;
    PB_REQUIRE(pb_kv_allocate(r.kv, g, &r.copies) == PB_OK);
    for (int i = 0; i < 2; i++) {
        pb_seq *c = pb_seq_clone(r.pool, g->seqs[0]);
        PB_REQUIRE(pb_kv_fork(r.kv, g->seqs[0], c) == PB_OK);
    }
    for (int i = 0; i < 3; i++) step_append(&r, g->seqs[i]);   /* 2 CoW copies */
    int32_t used = pb_block_alloc_used(pb_paged_gpu(r.kv));
    PB_CHECK_EQ_INT(used, 4);
    PB_REQUIRE(pb_kv_can_swap_out(r.kv, g));
    PB_REQUIRE(pb_kv_swap_out(r.kv, g, &r.map) == PB_OK);
    PB_CHECK_EQ_INT(r.map.n, 4);                             /* each block once */
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r.kv)), 0);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_cpu(r.kv)), 4);
    bool on_cpu;
    int32_t n;
    const int32_t *t = pb_paged_table(r.kv, g->seqs[1], &n, &on_cpu);
    PB_CHECK(on_cpu);
    PB_CHECK_EQ_INT(pb_block_alloc_ref(pb_paged_cpu(r.kv), t[0]), 3);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    PB_CHECK(pb_kv_can_swap_in(r.kv, g) == PB_ALLOC_OK);
    pb_pair_vec_clear(&r.map);
    PB_REQUIRE(pb_kv_swap_in(r.kv, g, &r.map) == PB_OK);
    PB_CHECK_EQ_INT(r.map.n, 4);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r.kv)), 4);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_cpu(r.kv)), 0);
    t = pb_paged_table(r.kv, g->seqs[2], &n, &on_cpu);
    PB_CHECK(!on_cpu);
    PB_CHECK_EQ_INT(ref(&r, t[0]), 3);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_free(&r);
}

PB_TEST(admission_ok_later_never_with_watermark) {
    rig r;
    rig_init(&r, 16, 100, 0, 0.01);   /* watermark 1 block */
    PB_CHECK_EQ_INT(pb_paged_watermark_blocks(r.kv), 1);
    pb_group *huge = rig_group(&r, 100 * 16, 1, -1, 0);
    PB_CHECK(pb_kv_can_allocate(r.kv, huge) == PB_ALLOC_NEVER);   /* 100 > 100 - 1 */
    pb_group *big = rig_group(&r, 99 * 16, 1, -1, 0);
    PB_CHECK(pb_kv_can_allocate(r.kv, big) == PB_ALLOC_OK);
    pb_group *a = rig_group(&r, 50 * 16, 1, -1, 0);
    PB_REQUIRE(pb_kv_allocate(r.kv, a, &r.copies) == PB_OK);
    PB_CHECK(pb_kv_can_allocate(r.kv, big) == PB_ALLOC_LATER);
    pb_group *c = rig_group(&r, 49 * 16, 1, -1, 0);
    PB_CHECK(pb_kv_can_allocate(r.kv, c) == PB_ALLOC_OK);         /* 50 - 49 >= 1 */
    pb_group *d = rig_group(&r, 49 * 16 + 1, 1, -1, 0);
    PB_CHECK(pb_kv_can_allocate(r.kv, d) == PB_ALLOC_LATER);      /* would eat the watermark */
    rig_free(&r);
}

/* ---- property test ---- */

PB_TEST(random_ops_100k_with_check) {
    rig r;
    rig_init(&r, 4, 48, 24, 0.02);
    pb_rng rng;
    pb_rng_seed(&rng, 12345, 1);
    enum { MAXG = 200 };
    pb_group *live[MAXG];
    int n_live = 0;
    long ops = 0, cows = 0, swaps = 0, forks = 0, frees = 0, allocs = 0;
    bool ok = true;
    for (long it = 0; it < 100000 && ok; it++) {
        int op = (int)pb_rng_below(&rng, 100);
        if (r.n >= 250) {   /* recycle the rig's group slots */
            for (int i = 0; i < n_live; i++) {
                pb_group *g = live[i];
                while (g->n_seqs) {
                    pb_seq *s = g->seqs[g->n_seqs - 1];
                    pb_kv_free(r.kv, s);
                    pb_seq_delete(r.pool, s);
                }
            }
            n_live = 0;
            for (int i = 0; i < r.n; i++) pb_group_release(&r.groups[i]);
            r.n = 0;
        }
        if (op < 15 && n_live < MAXG) {   /* allocate a new group */
            int32_t prompt = 1 + (int32_t)pb_rng_below(&rng, 30);
            int32_t pid = pb_rng_below(&rng, 3) == 0 ? (int32_t)pb_rng_below(&rng, 3) : -1;
            int32_t plen = pid >= 0 ? 3 + 2 * pid : 0;   /* one length per prefix id */
            if (pid >= 0 && prompt <= plen) prompt = plen + 1 + (int32_t)pb_rng_below(&rng, 8);
            pb_group *g = rig_group(&r, prompt, 40, pid, plen);
            g->max_seqs = 4;
            if (pb_rng_below(&rng, 4) == 0) {   /* a recompute-style multi-seq group */
                int32_t gen = (int32_t)pb_rng_below(&rng, 9);
                g->n_generated = gen;
                g->len = prompt + gen;
                g->seqs[0]->len = g->len;
                pb_seq_new(r.pool, g);
            }
            pb_alloc_status st = pb_kv_can_allocate(r.kv, g);
            if (st == PB_ALLOC_OK) {
                int32_t free0 = pb_block_alloc_free_count(pb_paged_gpu(r.kv));
                if (pb_kv_allocate(r.kv, g, &r.copies) != PB_OK) { ok = false; break; }
                PB_CHECK(pb_block_alloc_free_count(pb_paged_gpu(r.kv)) <= free0);
                g->state = PB_GROUP_RUNNING;
                live[n_live++] = g;
                allocs++;
            } else {
                while (g->n_seqs) pb_seq_delete(r.pool, g->seqs[g->n_seqs - 1]);
                g->state = PB_GROUP_REJECTED;
            }
        } else if (op < 60 && n_live) {   /* a decode step of a running group */
            pb_group *g = live[pb_rng_below(&rng, (uint64_t)n_live)];
            if (g->state == PB_GROUP_RUNNING && pb_kv_can_append(r.kv, g)) {
                for (int i = 0; i < g->n_seqs; i++) {
                    pb_seq *s = g->seqs[i];
                    int32_t n;
                    const int32_t *t = tab(&r, s, &n);
                    int32_t last = n ? t[n - 1] : -1;
                    bool shared_partial = last >= 0 && s->kv_len % 4 != 0 && ref(&r, last) > 1;
                    int32_t nc = r.copies.n;
                    s->len++;
                    if (pb_kv_append(r.kv, s, &r.copies) != PB_OK) { ok = false; break; }
                    /* never write a shared block: a shared partial last block is copied */
                    if (shared_partial) {
                        PB_CHECK_EQ_INT(r.copies.n, nc + 1);
                        PB_CHECK_EQ_INT(r.copies.v[r.copies.n - 1].src, last);
                        cows++;
                    } else {
                        PB_CHECK_EQ_INT(r.copies.n, nc);
                    }
                }
                g->len++;
                g->n_generated++;
            }
        } else if (op < 70 && n_live) {   /* fork */
            pb_group *g = live[pb_rng_below(&rng, (uint64_t)n_live)];
            if (g->state == PB_GROUP_RUNNING && g->n_seqs < 4) {
                pb_seq *p = g->seqs[pb_rng_below(&rng, (uint64_t)g->n_seqs)];
                pb_seq *c = pb_seq_clone(r.pool, p);
                if (pb_kv_fork(r.kv, p, c) != PB_OK) { ok = false; break; }
                forks++;
            }
        } else if (op < 85 && n_live) {   /* free a sequence or a whole group */
            int gi = (int)pb_rng_below(&rng, (uint64_t)n_live);
            pb_group *g = live[gi];
            if (g->n_seqs > 1 && pb_rng_below(&rng, 2)) {
                pb_seq *s = g->seqs[pb_rng_below(&rng, (uint64_t)g->n_seqs)];
                pb_kv_free(r.kv, s);
                pb_seq_delete(r.pool, s);
            } else {
                while (g->n_seqs) {
                    pb_seq *s = g->seqs[g->n_seqs - 1];
                    pb_kv_free(r.kv, s);
                    pb_seq_delete(r.pool, s);
                }
                g->state = PB_GROUP_FINISHED;
                live[gi] = live[--n_live];
            }
            frees++;
        } else if (op < 93 && n_live) {   /* swap out */
            pb_group *g = live[pb_rng_below(&rng, (uint64_t)n_live)];
            if (g->state == PB_GROUP_RUNNING && pb_kv_can_swap_out(r.kv, g)) {
                pb_pair_vec_clear(&r.map);
                if (pb_kv_swap_out(r.kv, g, &r.map) != PB_OK) { ok = false; break; }
                g->state = PB_GROUP_SWAPPED;
                swaps++;
            }
        } else if (n_live) {   /* swap in */
            pb_group *g = live[pb_rng_below(&rng, (uint64_t)n_live)];
            if (g->state == PB_GROUP_SWAPPED && pb_kv_can_swap_in(r.kv, g) == PB_ALLOC_OK) {
                pb_pair_vec_clear(&r.map);
                if (pb_kv_swap_in(r.kv, g, &r.map) != PB_OK) { ok = false; break; }
                g->state = PB_GROUP_RUNNING;
                swaps++;
            }
        }
        pb_pair_vec_clear(&r.copies);
        ops++;
        if (pb_kv_check(r.kv) != PB_OK) {
            fprintf(stderr, "  check failed after op %ld (kind %d)\n", it, op);
            ok = false;
        }
        PB_CHECK(pb_paged_cpu(r.kv)->n_blocks <= pb_paged_gpu(r.kv)->n_blocks);
    }
    PB_CHECK(ok);
    PB_CHECK_EQ_INT(ops, 100000);
    PB_CHECK(allocs > 1000 && cows > 100 && swaps > 100 && forks > 100 && frees > 1000);
    /* free everything: only the prefix pins remain, nothing leaked */
    for (int i = 0; i < n_live; i++) {
        pb_group *g = live[i];
        while (g->n_seqs) {
            pb_seq *s = g->seqs[g->n_seqs - 1];
            pb_kv_free(r.kv, s);
            pb_seq_delete(r.pool, s);
        }
    }
    int32_t pinned = 0;
    for (int p = 0; p < 3; p++) pinned += pb_paged_prefix_blocks(r.kv, p);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r.kv)), pinned);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_cpu(r.kv)), 0);
    PB_CHECK_EQ_INT(pb_seq_pool_live(r.pool), 0);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    fprintf(stderr, "  ops %ld allocs %ld cows %ld forks %ld frees %ld swaps %ld\n", ops, allocs,
            cows, forks, frees, swaps);
    rig_free(&r);
}

PB_TEST_MAIN()
