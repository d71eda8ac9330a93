/* test_block_manager.c -- the paged KV manager: the paper's Fig. 6-9 scenarios as
 * exact block-level checks, shared prefixes, swapping, admission, automatic prefix
 * caching (hits, LRU eviction, copy-on-write, forks, swap, recompute), and 100k-op
 * random property tests (with and without the cache; forks, reforks, frees, swaps)
 * with pb_kv_check() after every operation, and the replayed beam steps against the
 * ordinary ops (arrivals admitted and joining mid-replay included). */
#include <stdlib.h>
#include <string.h>

#include "block_manager.h"
#include "pbtest.h"
#include "replay.h"
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

static void rig_init_tier(rig *r, int32_t bs, int32_t gpu, int32_t cpu, double wm, bool caching, int32_t tier) {
    memset(r, 0, sizeof *r);
    pb_paged_params p;
    pb_paged_params_default(&p);
    p.block_size = bs;
    p.n_gpu_blocks = gpu;
    p.n_cpu_blocks = cpu;
    p.watermark = wm;
    p.prefix_caching = caching;
    p.n_tier_blocks = tier;
    PB_ASSERT(pb_paged_kv_create(&p, &r->kv) == PB_OK);
    r->pool = pb_seq_pool_create(false);
}
static void rig_init_with(rig *r, int32_t bs, int32_t gpu, int32_t cpu, double wm, bool caching) {
    rig_init_tier(r, bs, gpu, cpu, wm, caching, 0);
}
static void rig_init(rig *r, int32_t bs, int32_t gpu, int32_t cpu, double wm) {
    rig_init_with(r, bs, gpu, cpu, wm, false);
}
/* the same with automatic prefix caching */
static void rig_init_apc(rig *r, int32_t bs, int32_t gpu, int32_t cpu, double wm) {
    rig_init_with(r, bs, gpu, cpu, wm, true);
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

/* ---- automatic prefix caching ---- */

static bool published(rig *r, int32_t blk) { return pb_paged_block_published(r->kv, blk); }

/* s's first kv_len tokens were computed by a step (the engine's hook) */
static void computed(rig *r, pb_seq *s) {
    pb_kv_computed(r->kv, s, s->kv_len);
    PB_ASSERT(pb_kv_check(r->kv) == PB_OK);
}

/* a decode step of a single-sequence group: one more token, its KV computed */
static void decode(rig *r, pb_group *g) {
    step_append(r, g->seqs[0]);
    g->len++;
    g->n_generated++;
    computed(r, g->seqs[0]);
}

static void free_group(rig *r, pb_group *g) {
    for (int32_t i = 0; i < g->n_seqs; i++) pb_kv_free(r->kv, g->seqs[i]);
    PB_ASSERT(pb_kv_check(r->kv) == PB_OK);
}

static int32_t cached_blocks(rig *r) {
    pb_paged_cache_stats cs;
    pb_paged_cache_stats_get(r->kv, &cs);
    return cs.cached_blocks;
}

PB_TEST(apc_hits_only_after_the_kv_is_computed) {
    rig r;
    rig_init_apc(&r, 4, 32, 0, 0);
    /* two requests sharing a 16-token prefix (4 blocks), own tokens after it */
    pb_group *a = rig_group(&r, 22, 5, 0, 16);
    pb_group *b = rig_group(&r, 22, 5, 0, 16);
    PB_REQUIRE(pb_kv_allocate(r.kv, a, &r.copies) == PB_OK);
    PB_CHECK_EQ_INT(a->seqs[0]->n_cached, 0);
    PB_CHECK_EQ_INT(pb_kv_cached_tokens(r.kv, b), 0);   /* allocated, not computed: no hit */
    computed(&r, a->seqs[0]);
    int32_t na, nb;
    const int32_t *ta = tab(&r, a->seqs[0], &na);
    for (int i = 0; i < 5; i++) PB_CHECK(published(&r, ta[i]));   /* 5 full blocks */
    PB_CHECK(!published(&r, ta[5]));                               /* the partial one */
    PB_CHECK_EQ_INT(pb_kv_cached_tokens(r.kv, b), 16);   /* block 4 holds a's own tokens */
    PB_CHECK(pb_kv_can_allocate(r.kv, b) == PB_ALLOC_OK);
    PB_REQUIRE(pb_kv_allocate(r.kv, b, &r.copies) == PB_OK);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    PB_CHECK_EQ_INT(b->seqs[0]->n_cached, 16);
    PB_CHECK_EQ_INT(r.copies.n, 0);
    const int32_t *tb = tab(&r, b->seqs[0], &nb);
    PB_CHECK_EQ_INT(nb, 6);
    for (int i = 0; i < 4; i++) {
        PB_CHECK_EQ_INT(tb[i], ta[i]);
        PB_CHECK_EQ_INT(ref(&r, ta[i]), 2);
    }
    PB_CHECK(tb[4] != ta[4] && tb[5] != ta[5]);
    pb_paged_cache_stats cs;
    pb_paged_cache_stats_get(r.kv, &cs);
    PB_CHECK_EQ_INT(cs.hit_tokens, 16);
    PB_CHECK_EQ_INT(cs.query_tokens, 44);
    pb_kv_usage u;
    pb_kv_usage_get(r.kv, &u);
    PB_CHECK_EQ_INT(u.physical_blocks, 8);
    PB_CHECK_EQ_INT(u.logical_blocks, 12);
    PB_CHECK_EQ_INT(u.gpu_blocks_cached, 0);
    rig_free(&r);
}

PB_TEST(apc_the_last_token_is_always_computed) {
    rig r;
    rig_init_apc(&r, 4, 32, 0, 0);
    /* turn 0 of a conversation, then a turn whose 16 tokens are the same transcript */
    pb_group *a = rig_group(&r, 16, 4, -1, 0);
    r.reqs[0].conversation_id = 3;
    pb_group *b = rig_group(&r, 16, 4, -1, 0);
    r.reqs[1].conversation_id = 3;
    r.reqs[1].turn = 1;
    r.reqs[1].prefix_len = 12;   /* its whole history: in the transcript */
    PB_REQUIRE(pb_kv_allocate(r.kv, a, &r.copies) == PB_OK);
    computed(&r, a->seqs[0]);
    PB_CHECK_EQ_INT(pb_kv_cached_tokens(r.kv, b), 12);   /* 4 blocks cached, 3 taken */
    PB_REQUIRE(pb_kv_allocate(r.kv, b, &r.copies) == PB_OK);
    PB_CHECK_EQ_INT(b->seqs[0]->n_cached, 12);
    int32_t na, nb;
    const int32_t *ta = tab(&r, a->seqs[0], &na), *tb = tab(&r, b->seqs[0], &nb);
    PB_CHECK(tb[3] != ta[3]);   /* the block of its last token is its own */
    /* the next turn re-sends the reply too: a's generated tokens are transcript tokens */
    for (int i = 0; i < 4; i++) decode(&r, a);
    pb_group *c = rig_group(&r, 26, 4, -1, 0);
    r.reqs[2].conversation_id = 3;
    r.reqs[2].turn = 2;
    r.reqs[2].prefix_len = 20;
    PB_CHECK_EQ_INT(pb_kv_cached_tokens(r.kv, c), 20);   /* 16 prompt + 4 reply tokens */
    /* a truncated turn (history cut: prefix_len 0) has its own tokens */
    pb_group *d = rig_group(&r, 26, 4, -1, 0);
    r.reqs[3].conversation_id = 3;
    r.reqs[3].turn = 3;
    PB_CHECK_EQ_INT(pb_kv_cached_tokens(r.kv, d), 0);
    rig_free(&r);
}

PB_TEST(apc_freed_blocks_stay_cached_and_are_evicted_lru_first) {
    rig r;
    rig_init_apc(&r, 4, 12, 0, 0);
    pb_group *a = rig_group(&r, 17, 2, 0, 16);   /* 4 prefix blocks + 1 partial */
    PB_REQUIRE(pb_kv_allocate(r.kv, a, &r.copies) == PB_OK);
    computed(&r, a->seqs[0]);
    int32_t na, ta[5];
    memcpy(ta, tab(&r, a->seqs[0], &na), sizeof ta);
    free_group(&r, a);
    PB_CHECK_EQ_INT(cached_blocks(&r), 4);
    PB_CHECK_EQ_INT(pb_block_alloc_free_count(pb_paged_gpu(r.kv)), 8);
    PB_CHECK_EQ_INT(pb_paged_lru_head(r.kv), ta[3]);   /* a sequence's tail goes first */
    pb_kv_usage u;
    pb_kv_usage_get(r.kv, &u);
    PB_CHECK_EQ_INT(u.gpu_blocks_cached, 4);
    PB_CHECK_EQ_INT(u.gpu_blocks_free, 12);          /* cached blocks count as free */
    PB_CHECK_EQ_INT(u.free_slots, u.total_slots);
    PB_CHECK_EQ_INT(u.physical_blocks, 0);
    /* b (own tokens, 8 blocks) computed and freed later: more recently used */
    pb_group *b = rig_group(&r, 32, 2, -1, 0);
    PB_REQUIRE(pb_kv_allocate(r.kv, b, &r.copies) == PB_OK);
    computed(&r, b->seqs[0]);
    int32_t nb, tb[8];
    memcpy(tb, tab(&r, b->seqs[0], &nb), sizeof tb);
    free_group(&r, b);
    PB_CHECK_EQ_INT(cached_blocks(&r), 12);
    PB_CHECK_EQ_INT(pb_block_alloc_free_count(pb_paged_gpu(r.kv)), 0);
    /* c needs 2 new blocks with nothing free: admission counts cached blocks, and the
       two least recently used (a's blocks 3 and 2) are evicted */
    pb_group *c = rig_group(&r, 8, 2, -1, 0);
    PB_CHECK(pb_kv_can_allocate(r.kv, c) == PB_ALLOC_OK);
    PB_REQUIRE(pb_kv_allocate(r.kv, c, &r.copies) == PB_OK);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    PB_CHECK(!published(&r, ta[3]) && !published(&r, ta[2]));
    PB_CHECK(published(&r, ta[0]) && published(&r, ta[1]));
    for (int i = 0; i < 8; i++) PB_CHECK(published(&r, tb[i]));
    pb_paged_cache_stats cs;
    pb_paged_cache_stats_get(r.kv, &cs);
    PB_CHECK_EQ_INT(cs.evictions, 2);
    /* the prefix now hits only its first two blocks; a hit takes a cached block */
    pb_group *d = rig_group(&r, 17, 2, 0, 16);
    PB_CHECK_EQ_INT(pb_kv_cached_tokens(r.kv, d), 8);
    PB_REQUIRE(pb_kv_allocate(r.kv, d, &r.copies) == PB_OK);
    PB_CHECK_EQ_INT(d->seqs[0]->n_cached, 8);
    const int32_t *td = tab(&r, d->seqs[0], &na);
    PB_CHECK(td[0] == ta[0] && td[1] == ta[1] && ref(&r, ta[0]) == 1);
    PB_CHECK_EQ_INT(cached_blocks(&r), 10 - 2 - 3);   /* 2 hits revived, 3 evicted */
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_free(&r);
}

PB_TEST(apc_admission_counts_cached_blocks_and_hits_on_them) {
    rig r;
    rig_init_apc(&r, 4, 10, 0, 0.1);   /* 1 watermark block */
    pb_group *a = rig_group(&r, 36, 2, 0, 32);
    PB_REQUIRE(pb_kv_allocate(r.kv, a, &r.copies) == PB_OK);
    computed(&r, a->seqs[0]);
    free_group(&r, a);
    PB_CHECK_EQ_INT(cached_blocks(&r), 9);
    pb_group *x = rig_group(&r, 4, 2, -1, 0);   /* takes the one free block */
    PB_REQUIRE(pb_kv_allocate(r.kv, x, &r.copies) == PB_OK);
    /* b: 8 hits on cached blocks (a hit takes an available block too) + 1 new = all 9
       available, which would eat the watermark */
    pb_group *b = rig_group(&r, 36, 2, 0, 32);
    PB_CHECK_EQ_INT(pb_kv_cached_tokens(r.kv, b), 32);
    PB_CHECK(pb_kv_can_allocate(r.kv, b) == PB_ALLOC_LATER);
    pb_group *c = rig_group(&r, 37, 2, 0, 32);   /* 10 blocks: never, even with hits */
    PB_CHECK(pb_kv_can_allocate(r.kv, c) == PB_ALLOC_NEVER);
    free_group(&r, x);   /* never computed: its block is simply free */
    PB_CHECK_EQ_INT(pb_block_alloc_free_count(pb_paged_gpu(r.kv)), 1);
    PB_CHECK(pb_kv_can_allocate(r.kv, b) == PB_ALLOC_OK);
    PB_REQUIRE(pb_kv_allocate(r.kv, b, &r.copies) == PB_OK);
    PB_CHECK_EQ_INT(b->seqs[0]->n_cached, 32);
    PB_CHECK_EQ_INT(cached_blocks(&r), 1);   /* a's own block 8 */
    PB_CHECK_EQ_INT(pb_block_alloc_free_count(pb_paged_gpu(r.kv)), 0);
    /* b's decode needs a new block: the cached one counts, and is evicted for it */
    PB_CHECK(pb_kv_can_append(r.kv, b));
    for (int i = 0; i < 4; i++) decode(&r, b);
    PB_CHECK_EQ_INT(cached_blocks(&r), 0);
    PB_CHECK(!pb_kv_can_append(r.kv, b));   /* full block, nothing free or cached */
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_free(&r);
}

PB_TEST(apc_copy_on_write_and_forks_never_write_a_cached_block) {
    rig r;
    rig_init_apc(&r, 4, 32, 0, 0);
    /* parallel sampling over a 16-token prompt computed earlier by another request */
    pb_group *a = rig_group(&r, 17, 3, 0, 16);
    PB_REQUIRE(pb_kv_allocate(r.kv, a, &r.copies) == PB_OK);
    computed(&r, a->seqs[0]);
    pb_group *g = rig_group(&r, 18, 6, 0, 16);
    g->n = g->max_seqs = 3;
    PB_REQUIRE(pb_kv_allocate(r.kv, g, &r.copies) == PB_OK);
    PB_CHECK_EQ_INT(g->seqs[0]->n_cached, 16);
    computed(&r, g->seqs[0]);
    pb_seq *p = g->seqs[0];
    int32_t n;
    int32_t shared[4];
    memcpy(shared, tab(&r, p, &n), sizeof shared);
    for (int i = 0; i < 2; i++) {   /* the samples fork after the prompt step */
        pb_seq *c = pb_seq_clone(r.pool, p);
        PB_REQUIRE(pb_kv_fork(r.kv, p, c) == PB_OK);
        PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    }
    PB_CHECK_EQ_INT(ref(&r, shared[0]), 4);   /* a + three samples */
    /* every sample appends: the partial last block (18 tokens: 2 of 4) is copied on
       write; no published block is ever a copy's destination or changes */
    for (int step = 0; step < 6; step++) {
        pb_pair_vec_clear(&r.copies);
        for (int i = 0; i < g->n_seqs; i++) {
            step_append(&r, g->seqs[i]);
            computed(&r, g->seqs[i]);
        }
        g->len++;
        g->n_generated++;
        for (int k = 0; k < r.copies.n; k++) {
            PB_CHECK(!published(&r, r.copies.v[k].dst));
            PB_CHECK(!published(&r, r.copies.v[k].src));   /* a partial block: never published */
        }
        for (int k = 0; k < 4; k++) PB_CHECK(published(&r, shared[k]) && fill(&r, shared[k]) == 4);
    }
    /* the samples' generated blocks have unknown tokens here (no stored tokens): only
       the prompt's 4 full blocks are published */
    pb_paged_cache_stats cs;
    pb_paged_cache_stats_get(r.kv, &cs);
    PB_CHECK_EQ_INT(cs.published_blocks, 4);
    /* beam-style: free the parent, the children keep the cached prefix */
    pb_kv_free(r.kv, p);
    pb_seq_delete(r.pool, p);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    PB_CHECK_EQ_INT(ref(&r, shared[0]), 3);
    free_group(&r, g);
    free_group(&r, a);
    PB_CHECK_EQ_INT(cached_blocks(&r), 4);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r.kv)), 0);
    rig_free(&r);
}

PB_TEST(apc_swap_and_recompute_hit_their_own_blocks) {
    rig r;
    rig_init_apc(&r, 4, 16, 16, 0);
    pb_group *a = rig_group(&r, 10, 12, -1, 0);
    PB_REQUIRE(pb_kv_allocate(r.kv, a, &r.copies) == PB_OK);
    computed(&r, a->seqs[0]);
    for (int i = 0; i < 5; i++) decode(&r, a);   /* 15 tokens: 3 full blocks */
    int32_t n, ta[4];
    memcpy(ta, tab(&r, a->seqs[0], &n), sizeof ta);
    PB_CHECK_EQ_INT(n, 4);
    /* swap out: the full blocks stay cached on the GPU (their KV is still there) */
    PB_REQUIRE(pb_kv_swap_out(r.kv, a, &r.map) == PB_OK);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    PB_CHECK_EQ_INT(cached_blocks(&r), 3);
    PB_CHECK_EQ_INT(pb_block_alloc_free_count(pb_paged_gpu(r.kv)), 13);
    PB_CHECK(pb_kv_can_swap_in(r.kv, a) == PB_ALLOC_OK);
    pb_pair_vec_clear(&r.map);
    PB_REQUIRE(pb_kv_swap_in(r.kv, a, &r.map) == PB_OK);
    PB_CHECK_EQ_INT(r.map.n, 4);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    decode(&r, a);   /* the swapped-in copies duplicate the cached blocks: stay private */
    pb_paged_cache_stats cs;
    pb_paged_cache_stats_get(r.kv, &cs);
    PB_CHECK_EQ_INT(cs.published_blocks, 4);    /* 3 old + the newly full block 3 */
    PB_CHECK_EQ_INT(cs.cached_blocks, 3);
    /* recompute: free, then allocate again with its 16 tokens (prompt + generated) */
    free_group(&r, a);
    a->state = PB_GROUP_WAITING;
    PB_CHECK_EQ_INT(a->len, 16);
    PB_CHECK_EQ_INT(pb_kv_cached_tokens(r.kv, a), 12);   /* the last token's block is computed */
    PB_REQUIRE(pb_kv_allocate(r.kv, a, &r.copies) == PB_OK);
    PB_CHECK_EQ_INT(a->seqs[0]->n_cached, 12);
    const int32_t *t2 = tab(&r, a->seqs[0], &n);
    PB_CHECK(t2[0] == ta[0] && t2[1] == ta[1] && t2[2] == ta[2]);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_free(&r);
}

/* ---- property test ---- */

/* 100k random operations, pb_kv_check after each.  caching: the manager caches
 * prefixes; every operation that runs a step reports its KV computed, and a
 * recompute op frees a group and allocates it again (its own blocks are hits). */
/* The CPU tier's moves queued since the last step (what the engine adds to a step's
   swap maps): each spill into a distinct CPU block, each reload into a distinct GPU
   block, no CPU block both written and read (a spill of the step read back by a
   reload is fine: swap-outs run first, but then the spill's source must not be a
   reload's target).  Counts them. */
static bool take_moves(rig *r, long *spills, long *reloads) {
    pb_pair_vec out = {0}, in = {0};
    pb_kv_take_tier_moves(r->kv, &out, &in);
    bool ok = true;
    for (int32_t i = 0; i < out.n; i++)
        for (int32_t j = i + 1; j < out.n; j++) ok &= out.v[i].dst != out.v[j].dst;
    for (int32_t i = 0; i < in.n; i++)
        for (int32_t j = i + 1; j < in.n; j++) ok &= in.v[i].dst != in.v[j].dst && in.v[i].src != in.v[j].src;
    *spills += out.n;
    *reloads += in.n;
    pb_pair_vec_free(&out);
    pb_pair_vec_free(&in);
    return ok;
}

static void random_ops(bool caching, int32_t tier) {
    rig r;
    if (caching) rig_init_tier(&r, 4, 48, 24, 0.02, true, tier);
    else rig_init(&r, 4, 48, 24, 0.02);
    long spills = 0, reloads = 0;
    pb_rng rng;
    pb_rng_seed(&rng, 12345, 1);
    enum { MAXG = 200 };
    pb_group *live[MAXG];
    int n_live = 0;
    long ops = 0, cows = 0, swaps = 0, forks = 0, frees = 0, allocs = 0, recompute_hits = 0, reforks = 0;
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
                if (!caching) PB_CHECK(pb_block_alloc_free_count(pb_paged_gpu(r.kv)) <= free0);
                else (void)free0;
                if (caching && pb_rng_below(&rng, 4))   /* its prefill ran */
                    for (int i = 0; i < g->n_seqs; i++) pb_kv_computed(r.kv, g->seqs[i], g->seqs[i]->kv_len);
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
                for (int i = 0; caching && i < g->n_seqs; i++) pb_kv_computed(r.kv, g->seqs[i], g->seqs[i]->kv_len);
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
                int32_t i = (int32_t)pb_rng_below(&rng, (uint64_t)g->n_seqs);
                pb_seq *s = g->seqs[i];
                if (pb_rng_below(&rng, 2)) {   /* beam search: s is reused for a sibling's child */
                    pb_seq *p = g->seqs[(i + 1) % g->n_seqs];
                    if (pb_kv_refork(r.kv, p, s) != PB_OK) { ok = false; break; }
                    pb_seq_reclone(r.pool, s, p);
                    PB_CHECK_EQ_INT(s->kv_len, p->kv_len);
                    reforks++;
                } else {
                    pb_kv_free(r.kv, s);
                    pb_seq_delete(r.pool, s);
                }
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
        } else if (op < 93 && n_live) {   /* swap out, in a later step than its admission */
            pb_group *g = live[pb_rng_below(&rng, (uint64_t)n_live)];
            if (!take_moves(&r, &spills, &reloads)) { ok = false; break; }
            if (g->state == PB_GROUP_RUNNING && pb_kv_can_swap_out(r.kv, g)) {
                pb_pair_vec_clear(&r.map);
                if (pb_kv_swap_out(r.kv, g, &r.map) != PB_OK) { ok = false; break; }
                g->state = PB_GROUP_SWAPPED;
                swaps++;
            }
        } else if (caching && op < 96 && n_live) {   /* recompute: free a running group, allocate it again */
            pb_group *g = live[pb_rng_below(&rng, (uint64_t)n_live)];
            if (g->state == PB_GROUP_RUNNING) {
                for (int i = 0; i < g->n_seqs; i++) pb_kv_free(r.kv, g->seqs[i]);
                g->state = PB_GROUP_WAITING;
                pb_alloc_status st = pb_kv_can_allocate(r.kv, g);
                if (st == PB_ALLOC_OK) {
                    if (pb_kv_allocate(r.kv, g, &r.copies) != PB_OK) { ok = false; break; }
                    g->state = PB_GROUP_RUNNING;
                    if (g->seqs[0]->n_cached > 0) recompute_hits++;
                } else {   /* no room now: drop it */
                    int gi = 0;
                    while (live[gi] != g) gi++;
                    while (g->n_seqs) pb_seq_delete(r.pool, g->seqs[g->n_seqs - 1]);
                    g->state = PB_GROUP_FINISHED;
                    live[gi] = live[--n_live];
                }
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
        if (pb_rng_below(&rng, 3) == 0 && !take_moves(&r, &spills, &reloads)) {   /* a step's end */
            fprintf(stderr, "  tier moves wrong after op %ld\n", it);
            ok = false;
        }
        PB_CHECK(pb_paged_cpu(r.kv)->n_blocks <= pb_paged_gpu(r.kv)->n_blocks);
    }
    PB_CHECK(ok);
    PB_CHECK_EQ_INT(ops, 100000);
    PB_CHECK(allocs > 1000 && cows > 100 && swaps > 100 && forks > 100 && frees > 1000 && reforks > 100);
    pb_paged_cache_stats cs;
    pb_paged_cache_stats_get(r.kv, &cs);
    if (caching) {
        PB_CHECK(cs.hit_tokens > 1000 && cs.evictions > 100 && recompute_hits > 100);
        fprintf(stderr, "  cache: %lld of %lld tokens hit, %lld evictions, %ld recomputes hit\n",
                (long long)cs.hit_tokens, (long long)cs.query_tokens, (long long)cs.evictions, recompute_hits);
    } else {
        PB_CHECK(cs.hit_tokens == 0 && cs.published_blocks == 0);
    }
    if (tier) {   /* the tier took evicted blocks and served hits; the moves say so */
        PB_CHECK(cs.tier_spills > 100 && cs.tier_reloads > 100 && cs.tier_drops > 10 && cs.tier_hit_tokens > 100);
        PB_CHECK(take_moves(&r, &spills, &reloads));
        PB_CHECK_EQ_INT(spills, cs.tier_spills);
        PB_CHECK_EQ_INT(reloads, cs.tier_reloads);
        fprintf(stderr, "  tier: %lld spills, %lld reloads, %lld drops, %lld hit tokens\n", (long long)cs.tier_spills,
                (long long)cs.tier_reloads, (long long)cs.tier_drops, (long long)cs.tier_hit_tokens);
    } else {
        PB_CHECK(cs.tier_spills == 0 && cs.tier_reloads == 0);
    }
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
    if (caching) {   /* no pool with the cache; what stays is cached, all evictable */
        pb_paged_cache_stats_get(r.kv, &cs);
        PB_CHECK_EQ_INT(pinned, 0);
        PB_CHECK_EQ_INT(cs.cached_blocks, cs.published_blocks);
        PB_CHECK_EQ_INT(pb_block_alloc_free_count(pb_paged_gpu(r.kv)) + cs.cached_blocks, 48);
    }
    pb_paged_cache_stats_get(r.kv, &cs);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_cpu(r.kv)), 0);
    PB_CHECK(cs.tier_blocks <= tier && (tier == 0 || cs.tier_blocks > 0));   /* the tier keeps its blocks */
    PB_CHECK_EQ_INT(pb_seq_pool_live(r.pool), 0);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    fprintf(stderr, "  ops %ld allocs %ld cows %ld forks %ld reforks %ld frees %ld swaps %ld\n", ops, allocs,
            cows, forks, reforks, frees, swaps);
    rig_free(&r);
}

/* ---- replayed beam steps (replay.h pb_kv_replay_i beam_*) ----
 * Two managers with the same beam groups, after up to 15 ordinary steps on both
 * (the beams diverge): one steps them with the ordinary ops (can_append + append
 * per beam, then each new beam forked from its parent and the old ones freed), the
 * other replays the same steps (beam_begin, beam_step, beam_select with the same
 * random parents, beam_free of a group now and then -- it finished -- and
 * beam_end); now and then an arrival is admitted after a step's appends (the same
 * can_allocate answer, allocate on both), forks its beams after the selections and
 * joins the replay (beam_join), as in the engine's mixed steps.  After every
 * step's appends, every admission, selection, join and group freed the usage
 * (every field) and the copies agree, a step one cannot run the other refuses
 * (nothing done), and after the end pb_kv_check passes and, unless a step was
 * refused, the tables share exactly as much (leading blocks of every pair of
 * beams). */
static pb_status kv_beam_begin(pb_kv_manager *m, pb_group *const *g, int32_t n) {
    return m->iface->replay->beam_begin(m, g, n);
}
static int32_t kv_beam_step(pb_kv_manager *m) { return m->iface->replay->beam_step(m); }
static int32_t kv_beam_select(pb_kv_manager *m, int32_t i, const int32_t *parent) {
    return m->iface->replay->beam_select(m, i, parent);
}
static void kv_beam_free(pb_kv_manager *m, int32_t i) { m->iface->replay->beam_free(m, i); }
static pb_status kv_beam_join(pb_kv_manager *m, pb_group *g) { return m->iface->replay->beam_join(m, g); }
static void kv_beam_end(pb_kv_manager *m) { m->iface->replay->beam_end(m); }

/* The usage of a and b (every field) agree: the replay's usage (replay.h), exact
   inside a replay and the manager's usage() outside one. */
static void usage_same(pb_kv_manager *a, pb_kv_manager *b) {
    pb_kv_usage ua, ub;
    a->iface->replay->usage(a, &ua);
    b->iface->replay->usage(b, &ub);
    PB_REQUIRE(!memcmp(&ua, &ub, sizeof ua));
}

static int32_t shared_blocks(rig *r, pb_seq *x, pb_seq *y) {
    int32_t nx, ny, k = 0;
    const int32_t *tx = tab(r, x, &nx), *ty = tab(r, y, &ny);
    while (k < nx && k < ny && tx[k] == ty[k]) k++;
    return k;
}

/* Groups g[0][i] (rig r[0]) and g[1][i] (r[1]), i < n, have the same kv_len and
   share as many leading blocks between every pair of beams. */
static void same_sharing(rig *r, pb_group *(*g)[8], int32_t n) {
    for (int32_t i = 0; i < n; i++)
        for (int32_t e = 0; e < g[0][i]->n_seqs; e++) {
            PB_REQUIRE(g[0][i]->seqs[e]->kv_len == g[1][i]->seqs[e]->kv_len);
            for (int32_t f = 0; f < e; f++)
                PB_REQUIRE(shared_blocks(&r[0], g[0][i]->seqs[e], g[0][i]->seqs[f]) ==
                           shared_blocks(&r[1], g[1][i]->seqs[e], g[1][i]->seqs[f]));
        }
}

/* The ordinary ops of a selection: group x's beams become children of parent[],
   forked, the old ones freed. */
static void ordinary_select(rig *r, pb_group *x, const int32_t *parent) {
    int32_t nb = x->n_seqs;
    pb_seq *old[8], *kid[8] = {NULL};
    for (int32_t e = 0; e < nb; e++) old[e] = x->seqs[e];
    for (int32_t e = 0; e < nb; e++) {
        kid[e] = pb_seq_clone(r->pool, old[parent[e]]);
        PB_REQUIRE(pb_kv_fork(r->kv, old[parent[e]], kid[e]) == PB_OK);
    }
    for (int32_t e = 0; e < nb; e++) {
        pb_kv_free(r->kv, old[e]);
        pb_seq_delete(r->pool, old[e]);
    }
    pb_group_set_order(x, kid);
    for (int32_t e = 0; e < nb; e++) x->seqs[e]->len++;
}

/* Random parents for nb beams: often a beam's own, a previous one's or any. */
static void random_parents(pb_rng *rng, int32_t nb, int32_t *parent) {
    for (int32_t e = 0; e < nb; e++)
        parent[e] = pb_rng_below(rng, 3) ? (int32_t)pb_rng_below(rng, (uint64_t)nb) : (e > 0 ? parent[e - 1] : 0);
}

PB_TEST(beam_replay_matches_the_ordinary_ops) {
    pb_rng rng;
    pb_rng_seed(&rng, 5, 5);
    int64_t steps = 0, copies = 0, stuck = 0, freed_groups = 0, admitted = 0;
    for (int trial = 0; trial < 300; trial++) {
        static const int32_t BS[] = {1, 2, 4, 16};
        int32_t bs = BS[trial % 4], n_groups = 1 + (int32_t)pb_rng_below(&rng, 4);
        int32_t gpu = (int32_t)(64 * n_groups + 16 + (int32_t)pb_rng_below(&rng, 1200)) / bs;   /* often too small */
        rig r[2];
        pb_group *g[2][8];
        for (int m = 0; m < 2; m++) rig_init(&r[m], bs, gpu, 0, 0.01);
        uint64_t seed = pb_rng_u64(&rng);
        pb_rng shape;
        pb_rng_seed(&shape, seed, 1);
        for (int32_t i = 0; i < n_groups; i++) {
            int32_t prompt = 1 + (int32_t)pb_rng_below(&shape, 60), k = i == 0 ? 1 + (int32_t)pb_rng_below(&shape, 8)
                                                                         : 2 + (int32_t)pb_rng_below(&shape, 7);
            for (int m = 0; m < 2; m++) {
                pb_group *x = g[m][i] = rig_group(&r[m], prompt, 400, -1, 0);
                x->beam_width = x->max_seqs = k;
                PB_REQUIRE(pb_kv_allocate(r[m].kv, x, &r[m].copies) == PB_OK);
                x->state = PB_GROUP_RUNNING;
                x->seqs[0]->len++;   /* the first token sampled, not in the KV yet */
                for (int32_t e = 1; e < k; e++)
                    PB_REQUIRE(pb_kv_fork(r[m].kv, x->seqs[0], pb_seq_clone(r[m].pool, x->seqs[0])) == PB_OK);
            }
        }
        int32_t warm = (int32_t)pb_rng_below(&rng, 16);   /* ordinary steps first: beams that diverged */
        for (int32_t t = 0; t < warm; t++) {
            pb_kv_usage u;
            pb_kv_usage_get(r[0].kv, &u);
            int64_t need = 0;
            for (int32_t i = 0; i < n_groups; i++) need += g[0][i]->n_seqs;
            if (u.gpu_blocks_free < need) break;   /* every append surely fits */
            for (int32_t i = 0; i < n_groups; i++) {
                int32_t parent[8];
                random_parents(&rng, g[0][i]->n_seqs, parent);
                for (int m = 0; m < 2; m++) {
                    for (int32_t e = 0; e < g[m][i]->n_seqs; e++) step_append(&r[m], g[m][i]->seqs[e]);
                    ordinary_select(&r[m], g[m][i], parent);
                }
            }
        }
        usage_same(r[0].kv, r[1].kv);
        PB_REQUIRE(kv_beam_begin(r[1].kv, g[1], n_groups) == PB_OK);
        usage_same(r[0].kv, r[1].kv);
        int32_t n_steps = 1 + (int32_t)pb_rng_below(&rng, 120);
        bool refused = false;
        for (int32_t t = 0; t < n_steps && !refused; t++) {
            bool ok = true;   /* the ordinary step: can_append then appends, group by group */
            r[0].copies.n = 0;
            for (int32_t i = 0; i < n_groups && ok; i++) {
                ok = pb_kv_can_append(r[0].kv, g[0][i]);
                for (int32_t e = 0; ok && e < g[0][i]->n_seqs; e++) step_append(&r[0], g[0][i]->seqs[e]);
            }
            int32_t c = kv_beam_step(r[1].kv);
            if (!ok) {   /* the replay refuses the same step (the ordinary one is left half done) */
                PB_REQUIRE(c == -1);
                stuck++;
                refused = true;
                break;
            }
            PB_REQUIRE(c == r[0].copies.n);
            copies += c;
            usage_same(r[0].kv, r[1].kv);
            pb_group *in[2] = {NULL, NULL};   /* an arrival admitted in this step (a mixed step) */
            if (n_groups < 8 && pb_rng_below(&rng, 8) == 0) {
                int32_t prompt = 1 + (int32_t)pb_rng_below(&rng, 120), k = 1 + (int32_t)pb_rng_below(&rng, 8);
                pb_alloc_status a[2];
                for (int m = 0; m < 2; m++) {
                    in[m] = rig_group(&r[m], prompt, 400, -1, 0);
                    in[m]->beam_width = in[m]->max_seqs = k;
                    a[m] = pb_kv_can_allocate(r[m].kv, in[m]);
                }
                PB_REQUIRE(a[0] == a[1]);
                if (a[0] == PB_ALLOC_OK) {
                    for (int m = 0; m < 2; m++) {
                        PB_REQUIRE(pb_kv_allocate(r[m].kv, in[m], &r[m].copies) == PB_OK);
                        in[m]->state = PB_GROUP_RUNNING;
                    }
                    usage_same(r[0].kv, r[1].kv);
                    admitted++;
                } else {
                    in[0] = in[1] = NULL;   /* left waiting (rig_free releases them) */
                }
            }
            for (int32_t i = 0; i < n_groups; i++) {   /* a selection with random parents */
                int32_t nb = g[0][i]->n_seqs, parent[8];
                random_parents(&rng, nb, parent);
                if (nb > 1) PB_REQUIRE(kv_beam_select(r[1].kv, i, parent) >= 0);
                ordinary_select(&r[0], g[0][i], parent);
                for (int32_t e = 0; e < nb; e++) g[1][i]->seqs[e]->len++;
            }
            usage_same(r[0].kv, r[1].kv);
            if (in[0]) {   /* its first token: the beams forked, then it joins the replay */
                for (int m = 0; m < 2; m++) {
                    in[m]->seqs[0]->len++;
                    for (int32_t e = 1; e < in[m]->beam_width; e++)
                        PB_REQUIRE(pb_kv_fork(r[m].kv, in[m]->seqs[0], pb_seq_clone(r[m].pool, in[m]->seqs[0])) ==
                                   PB_OK);
                    g[m][n_groups] = in[m];
                }
                PB_REQUIRE(kv_beam_join(r[1].kv, in[1]) == PB_OK);
                n_groups++;
                usage_same(r[0].kv, r[1].kv);
            }
            PB_REQUIRE(pb_kv_check(r[0].kv) == PB_OK);
            steps++;
            if (n_groups > 1 && pb_rng_below(&rng, 12) == 0) {   /* a group finishes: freed */
                int32_t j = (int32_t)pb_rng_below(&rng, (uint64_t)n_groups);
                for (int32_t e = 0; e < g[0][j]->n_seqs; e++) pb_kv_free(r[0].kv, g[0][j]->seqs[e]);
                kv_beam_free(r[1].kv, j);
                for (int32_t e = 0; e < g[1][j]->n_seqs; e++) PB_REQUIRE(g[1][j]->seqs[e]->kv == NULL);
                for (int m = 0; m < 2; m++)
                    memmove(&g[m][j], &g[m][j + 1], (size_t)(n_groups - j - 1) * sizeof g[m][j]);
                n_groups--;
                usage_same(r[0].kv, r[1].kv);
                freed_groups++;
            }
        }
        kv_beam_end(r[1].kv);
        PB_REQUIRE(pb_kv_check(r[1].kv) == PB_OK);
        if (!refused) same_sharing(r, g, n_groups);
        for (int m = 0; m < 2; m++) rig_free(&r[m]);
    }
    fprintf(stderr, "  %lld replayed steps, %lld copies on write, %lld refused, %lld groups freed, %lld admitted "
            "mid-replay\n", (long long)steps, (long long)copies, (long long)stuck, (long long)freed_groups,
            (long long)admitted);
    PB_CHECK(steps > 5000 && copies > 1000 && stuck > 10 && freed_groups > 50 && admitted > 100);
}

/* An admission mid-replay into blocks the replayed group's beams gave up (they
 * diverged before the replay, then all continue one of them): inside the replay the
 * pool's counts are exact, so the allocation finds them free.  Block size 1, one
 * group of 4 beams over a 4-token prompt: 3 ordinary steps with each beam its own
 * parent (16 blocks: 4 shared, 3 x 4 not), the replay, then 2 steps whose
 * selections keep beam 0's line only: after the second step's appends the group
 * holds 4 + 4 + 4 = 12 blocks and 20 of 32 are free in both managers.  An arrival
 * needing 17 blocks is admitted, forks 2 beams, joins, and both run one more step
 * (all 32 blocks used); the usage matches the ordinary ops' throughout and the
 * tables share as much at the end. */
PB_TEST(beam_replay_admits_into_blocks_its_beams_freed) {
    rig r[2];
    pb_group *g[2][8];
    for (int m = 0; m < 2; m++) {
        rig_init(&r[m], 1, 32, 0, 0);
        pb_group *x = g[m][0] = rig_group(&r[m], 4, 400, -1, 0);
        x->beam_width = x->max_seqs = 4;
        PB_REQUIRE(pb_kv_allocate(r[m].kv, x, &r[m].copies) == PB_OK);
        x->state = PB_GROUP_RUNNING;
        x->seqs[0]->len++;
        for (int32_t e = 1; e < 4; e++)
            PB_REQUIRE(pb_kv_fork(r[m].kv, x->seqs[0], pb_seq_clone(r[m].pool, x->seqs[0])) == PB_OK);
        for (int32_t t = 0; t < 3; t++) {   /* ordinary steps: the beams diverge */
            static const int32_t own[8] = {0, 1, 2, 3};
            for (int32_t e = 0; e < 4; e++) step_append(&r[m], x->seqs[e]);
            ordinary_select(&r[m], x, own);
        }
    }
    PB_REQUIRE(pb_block_alloc_used(pb_paged_gpu(r[1].kv)) == 16);
    PB_REQUIRE(kv_beam_begin(r[1].kv, g[1], 1) == PB_OK);
    static const int32_t zero[8] = {0};
    int32_t n = 1;
    for (int32_t t = 0; t < 3; t++) {
        r[0].copies.n = 0;
        for (int32_t i = 0; i < n; i++)
            for (int32_t e = 0; e < g[0][i]->n_seqs; e++) step_append(&r[0], g[0][i]->seqs[e]);
        PB_REQUIRE(kv_beam_step(r[1].kv) == r[0].copies.n);
        usage_same(r[0].kv, r[1].kv);
        if (t == 2)
            for (int m = 0; m < 2; m++) PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(r[m].kv)), 32);
        pb_group *in[2] = {NULL, NULL};
        if (t == 1) {   /* the arrival: 17 blocks */
            for (int m = 0; m < 2; m++) PB_REQUIRE(pb_block_alloc_free_count(pb_paged_gpu(r[m].kv)) == 20);
            for (int m = 0; m < 2; m++) {
                in[m] = rig_group(&r[m], 17, 400, -1, 0);
                in[m]->beam_width = in[m]->max_seqs = 2;
                PB_REQUIRE(pb_kv_can_allocate(r[m].kv, in[m]) == PB_ALLOC_OK);
                PB_REQUIRE(pb_kv_allocate(r[m].kv, in[m], &r[m].copies) == PB_OK);
                in[m]->state = PB_GROUP_RUNNING;
            }
            usage_same(r[0].kv, r[1].kv);
        }
        for (int32_t i = 0; i < n; i++) {   /* every beam continues beam 0 */
            if (g[0][i]->n_seqs > 1) PB_REQUIRE(kv_beam_select(r[1].kv, i, zero) >= 0);
            ordinary_select(&r[0], g[0][i], zero);
            for (int32_t e = 0; e < g[1][i]->n_seqs; e++) g[1][i]->seqs[e]->len++;
        }
        usage_same(r[0].kv, r[1].kv);
        if (in[0]) {
            for (int m = 0; m < 2; m++) {
                in[m]->seqs[0]->len++;
                PB_REQUIRE(pb_kv_fork(r[m].kv, in[m]->seqs[0], pb_seq_clone(r[m].pool, in[m]->seqs[0])) == PB_OK);
                g[m][n] = in[m];
            }
            PB_REQUIRE(kv_beam_join(r[1].kv, in[1]) == PB_OK);
            n++;
            usage_same(r[0].kv, r[1].kv);
        }
    }
    PB_CHECK_EQ_INT(n, 2);
    kv_beam_end(r[1].kv);
    usage_same(r[0].kv, r[1].kv);
    for (int m = 0; m < 2; m++) PB_REQUIRE(pb_kv_check(r[m].kv) == PB_OK);
    same_sharing(r, g, n);
    for (int m = 0; m < 2; m++) rig_free(&r[m]);
}

PB_TEST(random_ops_100k_with_check) { random_ops(false, 0); }
PB_TEST(random_ops_100k_with_prefix_caching_and_check) { random_ops(true, 0); }
PB_TEST(random_ops_100k_with_a_cpu_tier_and_check) { random_ops(true, 12); }

PB_TEST_MAIN()
