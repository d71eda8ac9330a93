/* test_baselines.c -- the contiguous KV manager and the Orca / FasterTransformer
 * policies. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines.h"
#include "buddy.h"
#include "engine.h"
#include "executor_fixed.h"
#include "kv_contiguous.h"
#include "engine_rig.h"
#include "pbtest.h"
#include "rng.h"
#include "sequence.h"
#include "table1.h"

/* ---- a tiny driver that plays the engine's part of the KV-manager protocol ---- */
typedef struct {
    pb_kv_manager *kv;
    pb_seq_pool *pool;
    pb_request *reqs;
    pb_group *groups;
    int n;
} rig;

static void rig_init(rig *r, pb_kv_manager *kv, int n) {
    r->kv = kv;
    r->pool = pb_seq_pool_create(false);
    r->n = n;
    r->reqs = pb_xcalloc((size_t)n, sizeof *r->reqs);
    r->groups = pb_xcalloc((size_t)n, sizeof *r->groups);
}

static pb_group *rig_group(rig *r, int i, int32_t prompt, int32_t output, int32_t n,
                           int32_t beam) {
    pb_request *q = &r->reqs[i];
    memset(q, 0, sizeof *q);
    q->id = i;
    q->prompt_len = prompt;
    q->output_len = output;
    q->n = n;
    q->beam_width = beam;
    q->prefix_id = -1;
    q->conversation_id = -1;
    pb_group *g = &r->groups[i];
    pb_group_init(g, i, q, 2048, 1);
    g->state = PB_GROUP_WAITING;
    pb_seq_new(r->pool, g);
    return g;
}

static void rig_free_group(rig *r, pb_group *g) {
    while (g->n_seqs > 0) {
        pb_seq *s = g->seqs[g->n_seqs - 1];
        pb_kv_free(r->kv, s);
        pb_seq_delete(r->pool, s);
    }
    g->state = PB_GROUP_FINISHED;
}

static void rig_destroy(rig *r) {
    pb_kv_destroy(r->kv);
    for (int i = 0; i < r->n; i++) pb_group_release(&r->groups[i]);
    free(r->groups);
    free(r->reqs);
    pb_seq_pool_destroy(r->pool);
}

static pb_kv_manager *make_kv(int64_t slots, pb_resv_rule rule) {
    pb_kv_contiguous_params p = {slots, rule, 2048};
    pb_kv_manager *m = NULL;
    PB_ASSERT(pb_kv_contiguous_create(&p, &m) == PB_OK);
    return m;
}

static void usage_sums(pb_kv_manager *m) {
    pb_kv_usage u;
    pb_kv_usage_get(m, &u);
    PB_CHECK(u.token_slots >= 0 && u.reserved_slots >= 0 && u.internal_frag_slots >= 0 &&
             u.free_slots >= 0);
    PB_CHECK_EQ_INT(u.token_slots + u.reserved_slots + u.internal_frag_slots + u.free_slots,
                    u.total_slots);
}

/* ---- reservation rules ---- */

PB_TEST(reservation_rules) {
    /* Pow2: a true output of 25 reserves 32 output positions (paper §6.1) */
    PB_CHECK_EQ_INT(pb_kv_contiguous_reservation(PB_RESV_POW2, 100, 25, 2048), 100 + 32);
    PB_CHECK_EQ_INT(pb_kv_contiguous_reservation(PB_RESV_POW2, 100, 32, 2048), 100 + 32);
    PB_CHECK_EQ_INT(pb_kv_contiguous_reservation(PB_RESV_POW2, 100, 33, 2048), 100 + 64);
    PB_CHECK_EQ_INT(pb_kv_contiguous_reservation(PB_RESV_POW2, 1000, 1000, 2048), 2024);
    PB_CHECK_EQ_INT(pb_kv_contiguous_reservation(PB_RESV_POW2, 1000, 1040, 2048), 2048); /* cap */
    /* Oracle: exactly what the sequence writes (the last token's KV is never written) */
    PB_CHECK_EQ_INT(pb_kv_contiguous_need(100, 25), 124);
    PB_CHECK_EQ_INT(pb_kv_contiguous_reservation(PB_RESV_ORACLE, 100, 25, 2048), 124);
    PB_CHECK_EQ_INT(pb_kv_contiguous_reservation(PB_RESV_ORACLE, 7, 1, 2048), 7);
    /* Max: the model's max length, prompt included */
    PB_CHECK_EQ_INT(pb_kv_contiguous_reservation(PB_RESV_MAX, 100, 25, 2048), 2048);
    /* then the buddy chunk: the whole reservation rounded to a power of two */
    PB_CHECK_EQ_INT(pb_buddy_chunk_for(pb_kv_contiguous_reservation(PB_RESV_POW2, 100, 25, 2048)), 256);
    /* §6.5: a 1024-token prompt gets 1024 output slots whatever the rule */
    for (int r = PB_RESV_ORACLE; r <= PB_RESV_MAX; r++)
        PB_CHECK_EQ_INT(pb_buddy_chunk_for(pb_kv_contiguous_reservation((pb_resv_rule)r, 1024, 10, 2048)),
                        2048);
    pb_resv_rule rr;
    PB_CHECK(pb_resv_rule_parse("pow2", &rr) && rr == PB_RESV_POW2);
    PB_CHECK(pb_resv_rule_parse("max", &rr) && rr == PB_RESV_MAX);
    PB_CHECK(pb_resv_rule_parse("oracle", &rr) && rr == PB_RESV_ORACLE);
    PB_CHECK(!pb_resv_rule_parse("Max", &rr));
    PB_CHECK(!pb_resv_rule_parse(NULL, &rr));
}

PB_TEST(pow2_usage_classes) {
    rig r;
    rig_init(&r, make_kv(1024, PB_RESV_POW2), 1);
    pb_group *g = rig_group(&r, 0, 100, 25, 1, 1);
    PB_REQUIRE(pb_kv_can_allocate(r.kv, g) == PB_ALLOC_OK);
    PB_REQUIRE(pb_kv_allocate(r.kv, g, NULL) == PB_OK);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    pb_kv_usage u;
    pb_kv_usage_get(r.kv, &u);
    PB_CHECK_EQ_INT(u.token_slots, 100);            /* the prompt's KV, this step */
    PB_CHECK_EQ_INT(u.reserved_slots, 24);          /* 24 more output tokens' KV */
    PB_CHECK_EQ_INT(u.internal_frag_slots, 8);      /* 32 - 24 */
    PB_CHECK_EQ_INT(u.free_slots, 1024 - 132);      /* 124 slots of round-up + 768 unallocated */
    PB_CHECK_EQ_INT(u.gpu_blocks_free, 1024 - 256);
    pb_batch_seq bs;
    memset(&bs, 0, sizeof bs);
    pb_kv_batch_info(r.kv, g->seqs[0], &bs);
    PB_CHECK(bs.block_table == NULL && bs.kv_offset >= 0 && bs.kv_offset % 256 == 0);
    /* decode to the end: every token's slot fits, the reservation never grows */
    for (int t = 1; t < 25; t++) {
        g->seqs[0]->len++; g->len++; g->n_generated++; g->seqs[0]->n_generated++;
        PB_REQUIRE(pb_kv_can_append(r.kv, g));
        PB_REQUIRE(pb_kv_append(r.kv, g->seqs[0], NULL) == PB_OK);
        usage_sums(r.kv);
    }
    pb_kv_usage_get(r.kv, &u);
    PB_CHECK_EQ_INT(u.token_slots, 124);
    PB_CHECK_EQ_INT(u.reserved_slots, 0);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_free_group(&r, g);
    pb_kv_usage_get(r.kv, &u);
    PB_CHECK_EQ_INT(u.free_slots, 1024);
    PB_CHECK_EQ_INT(u.gpu_blocks_free, 1024);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_destroy(&r);
}

/* ---- Orca (Max) on OPT-13B / A100-40GB admits exactly 7 ---- */

static int64_t opt13b_slots(void) {
    pb_table1_opts o = pb_table1_default_opts();
    pb_table1_row rows[PB_TABLE1_ROWS];
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    if (pb_table1_compute(pb_spec_dir(), &o, rows, &e) != PB_OK) return -1;
    return rows[0].cap.num_slots;
}

PB_TEST(orca_max_admits_seven_on_opt13b) {
    int64_t slots = opt13b_slots();
    PB_REQUIRE(slots == 15600);
    rig r;
    rig_init(&r, make_kv(slots, PB_RESV_MAX), 20);
    int admitted = 0;
    for (int i = 0; i < 20; i++) {
        pb_group *g = rig_group(&r, i, 10 + 37 * i, 5 + 11 * i, 1, 1);
        pb_alloc_status a = pb_kv_can_allocate(r.kv, g);
        if (a != PB_ALLOC_OK) {
            PB_CHECK(a == PB_ALLOC_LATER);
            break;
        }
        PB_REQUIRE(pb_kv_allocate(r.kv, g, NULL) == PB_OK);
        admitted++;
        PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    }
    PB_CHECK_EQ_INT(admitted, 7);
    pb_kv_usage u;
    pb_kv_usage_get(r.kv, &u);
    PB_CHECK_EQ_INT(u.free_slots, 15600 - 7 * 2048);   /* Fig. 2's "external & others": 8.1% here, 8.9% there */
    PB_CHECK_EQ_INT(u.gpu_blocks_free, 15600 - 7 * 2048);
    PB_CHECK_EQ_INT(pb_kv_contiguous_capacity(slots, 2048, 1), 7);
    /* a 2-sample request needs two regions: 3 such requests fit */
    PB_CHECK_EQ_INT(pb_kv_contiguous_capacity(slots, 2048, 2), 3);
    for (int i = 0; i < 20; i++)
        if (r.groups[i].kv) rig_free_group(&r, &r.groups[i]);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_destroy(&r);
}

PB_TEST(never_fits) {
    rig r;
    rig_init(&r, make_kv(3000, PB_RESV_MAX), 2);
    pb_group *g = rig_group(&r, 0, 100, 100, 2, 1);       /* 2 x 2048 > the 2048 arena */
    PB_CHECK(pb_kv_can_allocate(r.kv, g) == PB_ALLOC_NEVER);
    PB_CHECK(pb_kv_allocate(r.kv, g, NULL) == PB_ERR_NO_SPACE);
    pb_group *h = rig_group(&r, 1, 100, 100, 1, 1);
    PB_CHECK(pb_kv_can_allocate(r.kv, h) == PB_ALLOC_OK);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_destroy(&r);
}

/* ---- parallel sampling and beam search: no sharing ---- */

PB_TEST(parallel_samples_reserve_each) {
    rig r;
    rig_init(&r, make_kv(4096, PB_RESV_ORACLE), 1);
    pb_group *g = rig_group(&r, 0, 60, 40, 3, 1);           /* need 99 -> chunk 128 each */
    PB_REQUIRE(pb_kv_allocate(r.kv, g, NULL) == PB_OK);
    pb_kv_usage u;
    pb_kv_usage_get(r.kv, &u);
    PB_CHECK_EQ_INT(u.token_slots, 60);
    PB_CHECK_EQ_INT(u.reserved_slots, 3 * 99 - 60);          /* two spare regions to come */
    PB_CHECK_EQ_INT(u.internal_frag_slots, 0);
    PB_CHECK_EQ_INT(u.gpu_blocks_free, 4096 - 3 * 128);
    pb_seq *p = g->seqs[0];
    /* after the prompt step: fork 2 samples, each gets its own region + a copy */
    p->len++; g->len++; g->n_generated++; p->n_generated++;
    for (int k = 0; k < 2; k++) {
        pb_seq *c = pb_seq_clone(r.pool, p);
        PB_REQUIRE(pb_kv_fork(r.kv, p, c) == PB_OK);
        PB_CHECK_EQ_INT(c->kv_len, 60);
    }
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    pb_batch_seq b0, b1, b2;
    pb_kv_batch_info(r.kv, g->seqs[0], &b0);
    pb_kv_batch_info(r.kv, g->seqs[1], &b1);
    pb_kv_batch_info(r.kv, g->seqs[2], &b2);
    PB_CHECK(b0.kv_offset != b1.kv_offset && b1.kv_offset != b2.kv_offset &&
             b0.kv_offset != b2.kv_offset);
    pb_kv_contiguous_stats st;
    pb_kv_contiguous_stats_get(r.kv, &st);
    PB_CHECK_EQ_INT(st.copied_slots, 120);
    PB_CHECK_EQ_INT(st.n_regions, 3);
    pb_kv_usage_get(r.kv, &u);
    PB_CHECK_EQ_INT(u.token_slots, 180);
    PB_CHECK_EQ_INT(u.logical_blocks, u.physical_blocks);   /* no sharing */
    rig_free_group(&r, g);
    pb_kv_usage_get(r.kv, &u);
    PB_CHECK_EQ_INT(u.gpu_blocks_free, 4096);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_destroy(&r);
}

/* Beam steps fork before they free (vLLM's order): the group never needs more than
 * beam_width regions, even in a space with no room to spare. */
PB_TEST(beam_fork_before_free_stays_in_budget) {
    rig r;
    rig_init(&r, make_kv(512, PB_RESV_ORACLE), 1);         /* exactly 4 x 128 */
    pb_group *g = rig_group(&r, 0, 50, 60, 1, 4);           /* need 109 -> 128 */
    PB_REQUIRE(pb_kv_can_allocate(r.kv, g) == PB_ALLOC_OK);
    PB_REQUIRE(pb_kv_allocate(r.kv, g, NULL) == PB_OK);
    pb_rng rng;
    pb_rng_seed(&rng, 7, 0);
    for (int step = 0; step < 59; step++) {
        /* decode (the prompt step for step 0) */
        if (step > 0) {
            PB_REQUIRE(pb_kv_can_append(r.kv, g));
            for (int i = 0; i < g->n_seqs; i++)
                PB_REQUIRE(pb_kv_append(r.kv, g->seqs[i], NULL) == PB_OK);
        }
        usage_sums(r.kv);
        for (int i = 0; i < g->n_seqs; i++) {
            g->seqs[i]->len++;
            g->seqs[i]->n_generated++;
        }
        g->len++;
        g->n_generated++;
        /* selection: each of 4 slots picks a random parent among the current beams */
        int nb = g->n_seqs;
        pb_seq *old[8];
        int chosen[8] = {0};
        for (int i = 0; i < nb; i++) old[i] = g->seqs[i];
        for (int k = 0; k < 4; k++) chosen[pb_rng_below(&rng, (uint64_t)nb)]++;
        for (int i = 0; i < nb; i++)           /* forks first ... */
            for (int c = 1; c < chosen[i]; c++) {
                pb_seq *ch = pb_seq_clone(r.pool, old[i]);
                PB_REQUIRE(pb_kv_fork(r.kv, old[i], ch) == PB_OK);
            }
        for (int i = 0; i < nb; i++)           /* ... then frees */
            if (chosen[i] == 0) {
                pb_kv_free(r.kv, old[i]);
                pb_seq_delete(r.pool, old[i]);
            }
        PB_CHECK_EQ_INT(g->n_seqs, 4);
        PB_CHECK(pb_kv_check(r.kv) == PB_OK);
        pb_kv_contiguous_stats st;
        pb_kv_contiguous_stats_get(r.kv, &st);
        PB_CHECK_EQ_INT(st.n_regions, 4);
        PB_CHECK_EQ_INT(st.n_extra_regions, 0);
        for (int i = 0; i < g->n_seqs; i++) {          /* every beam has a region */
            pb_batch_seq bs;
            pb_kv_batch_info(r.kv, g->seqs[i], &bs);
            PB_CHECK(bs.kv_offset >= 0 && bs.kv_offset < 512);
        }
    }
    pb_kv_contiguous_stats st;
    pb_kv_contiguous_stats_get(r.kv, &st);
    PB_CHECK(st.copied_slots > 0);
    rig_free_group(&r, g);
    PB_CHECK(pb_kv_check(r.kv) == PB_OK);
    rig_destroy(&r);
}

/* Random groups through admission / decode / finish: the four classes always sum
 * to the whole space and agree with a direct count. */
PB_TEST(breakdown_matches_direct_count) {
    const pb_resv_rule rules[] = {PB_RESV_ORACLE, PB_RESV_POW2, PB_RESV_MAX};
    for (size_t ri = 0; ri < PB_ARRAY_LEN(rules); ri++) {
        rig r;
        rig_init(&r, make_kv(15728, rules[ri]), 100);
        pb_rng rng;
        pb_rng_seed(&rng, 99, ri);
        int next = 0;
        for (int step = 0; step < 40000; step++) {
            /* finish / decode running groups */
            int live = 0;
            for (int i = 0; i < next; i++) {
                pb_group *g = &r.groups[i];
                if (g->state != PB_GROUP_RUNNING) continue;
                if (g->n_generated == g->output_len) {
                    rig_free_group(&r, g);
                    continue;
                }
                live++;
                if (g->n_generated > 0) {
                    PB_REQUIRE(pb_kv_can_append(r.kv, g));
                    for (int k = 0; k < g->n_seqs; k++)
                        PB_REQUIRE(pb_kv_append(r.kv, g->seqs[k], NULL) == PB_OK);
                }
            }
            /* admit FCFS */
            while (next < r.n) {
                int32_t n = pb_rng_below(&rng, 4) == 0 ? 2 : 1;
                pb_group *g = rig_group(&r, next, 1 + (int32_t)pb_rng_below(&rng, 600),
                                        1 + (int32_t)pb_rng_below(&rng, 700), n, 1);
                pb_alloc_status a = pb_kv_can_allocate(r.kv, g);
                if (a != PB_ALLOC_OK) {           /* retry the same request next step */
                    pb_seq *s = g->seqs[0];
                    pb_seq_delete(r.pool, s);
                    pb_group_release(g);
                    break;
                }
                PB_REQUIRE(pb_kv_allocate(r.kv, g, NULL) == PB_OK);
                g->state = PB_GROUP_RUNNING;
                next++;
                live++;
            }
            /* usage vs a direct count over the live sequences */
            pb_kv_usage u;
            pb_kv_usage_get(r.kv, &u);
            int64_t tok = 0, need = 0, resv = 0, chunk = 0;
            for (int i = 0; i < next; i++) {
                pb_group *g = &r.groups[i];
                if (g->state != PB_GROUP_RUNNING) continue;
                int32_t nd = pb_kv_contiguous_need(g->prompt_len, g->output_len);
                int32_t rv = pb_kv_contiguous_reservation(rules[ri], g->prompt_len, g->output_len, 2048);
                for (int k = 0; k < g->n_seqs; k++) tok += g->seqs[k]->kv_len;
                int32_t regions = g->max_seqs;
                need += (int64_t)regions * nd;
                resv += (int64_t)regions * rv;
                chunk += (int64_t)regions * pb_buddy_chunk_for(rv);
            }
            PB_CHECK_EQ_INT(u.token_slots, tok);
            PB_CHECK_EQ_INT(u.reserved_slots, need - tok);
            PB_CHECK_EQ_INT(u.internal_frag_slots, resv - need);
            PB_CHECK_EQ_INT(u.free_slots, 15728 - resv);
            PB_CHECK_EQ_INT(u.gpu_blocks_free, 15728 - chunk);
            PB_CHECK_EQ_INT(u.token_slots + u.reserved_slots + u.internal_frag_slots + u.free_slots,
                            u.total_slots);
            if (step % 50 == 0) PB_CHECK(pb_kv_check(r.kv) == PB_OK);
            /* generate: each running group's sequences get a token; fork samples */
            for (int i = 0; i < next; i++) {
                pb_group *g = &r.groups[i];
                if (g->state != PB_GROUP_RUNNING) continue;
                for (int k = 0; k < g->n_seqs; k++) {
                    g->seqs[k]->len++;
                    g->seqs[k]->n_generated++;
                }
                g->len++;
                g->n_generated++;
                if (g->n_generated == 1)
                    while (g->n_seqs < g->n) {
                        pb_seq *c = pb_seq_clone(r.pool, g->seqs[0]);
                        PB_REQUIRE(pb_kv_fork(r.kv, g->seqs[0], c) == PB_OK);
                    }
            }
            if (next == r.n && live == 0) break;
        }
        PB_CHECK_EQ_INT(next, r.n);
        pb_kv_usage u;
        pb_kv_usage_get(r.kv, &u);
        PB_CHECK_EQ_INT(u.free_slots, 15728);
        PB_CHECK(pb_kv_check(r.kv) == PB_OK);
        rig_destroy(&r);
    }
}

PB_TEST(policy_options) {
    pb_config *c = NULL;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("sys.yaml", "max_batch: 3\n", &c, &e) == PB_OK);
    pb_policy *p = NULL;
    PB_REQUIRE(pb_policy_ft_create(pb_config_root(c), &p, &e) == PB_OK);
    PB_CHECK(pb_policy_is_ft(p));
    pb_policy_destroy(p);
    PB_REQUIRE(pb_policy_orca_create(NULL, &p, &e) == PB_OK);
    PB_CHECK(!pb_policy_is_ft(p));
    pb_policy_destroy(p);
    pb_config_destroy(c);
}


/* ---- through the engine (fixed-latency executor) ---- */

typedef struct {
    pb_kv_manager *kv;
    pb_policy *policy;
    pb_executor *ex;
    pb_metrics *m;
    pb_status st;
} run_out;

static void run_engine(run_out *o, const pb_trace *t, pb_resv_rule rule, bool ft, int64_t slots,
                       int32_t max_batch) {
    memset(o, 0, sizeof *o);
    pb_kv_contiguous_params kp = {slots, rule, 2048};
    PB_ASSERT(pb_kv_contiguous_create(&kp, &o->kv) == PB_OK);
    pb_config *c = NULL;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    char yaml[64];
    snprintf(yaml, sizeof yaml, "max_batch: %d\n", max_batch);
    PB_ASSERT(pb_config_load_string("sys.yaml", yaml, &c, &e) == PB_OK);
    PB_ASSERT((ft ? pb_policy_ft_create : pb_policy_orca_create)(pb_config_root(c), &o->policy, &e) ==
              PB_OK);
    pb_config_destroy(c);
    pb_fixed_exec_params fp;
    pb_fixed_exec_params_default(&fp);
    fp.context_token_s = 1e-6;
    PB_ASSERT(pb_executor_fixed_create(&fp, &o->ex) == PB_OK);
    o->m = pb_metrics_create(true);
    o->st = pb_test_run_engine(o->kv, o->policy, o->ex, t, o->m);
}

static void run_free(run_out *o) {
    pb_metrics_destroy(o->m);
    pb_executor_destroy(o->ex);
    pb_policy_destroy(o->policy);
    pb_kv_destroy(o->kv);
}

static void trace_make(pb_trace *t, int n, double gap_s, uint64_t seed, bool multi) {
    pb_rng r;
    pb_rng_seed(&r, seed, 3);
    t->n = n;
    t->reqs = pb_xcalloc((size_t)n, sizeof *t->reqs);
    for (int i = 0; i < n; i++) {
        pb_request *q = &t->reqs[i];
        q->id = i;
        q->arrival_s = gap_s * i;
        q->prompt_len = 1 + (int32_t)pb_rng_below(&r, 700);
        q->output_len = 1 + (int32_t)pb_rng_below(&r, 600);
        q->n = 1;
        q->beam_width = 1;
        q->prefix_id = -1;
        q->conversation_id = -1;
        if (multi) {
            uint64_t k = pb_rng_below(&r, 4);
            if (k == 1) q->n = 2 + (int32_t)pb_rng_below(&r, 3);
            if (k == 2) q->beam_width = 2 + (int32_t)pb_rng_below(&r, 3);
            if (k == 3) { q->prefix_id = 0; q->prefix_len = PB_MIN(q->prompt_len, 80); }
        }
    }
}

/* every step: the four classes are non-negative and sum to the whole space */
static void check_steps_breakdown(const pb_metrics *m, int64_t slots) {
    int64_t n;
    const pb_step_metrics *st = pb_metrics_steps(m, &n);
    PB_REQUIRE(st && n > 0);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        const pb_kv_usage *u = &st[i].mem;
        if (u->total_slots != slots || u->token_slots < 0 || u->reserved_slots < 0 ||
            u->internal_frag_slots < 0 || u->free_slots < 0 ||
            u->token_slots + u->reserved_slots + u->internal_frag_slots + u->free_slots != slots)
            bad++;
    }
    PB_CHECK_EQ_INT(bad, 0);
    pb_run_summary s;
    pb_metrics_summary(m, &s);
    PB_CHECK_NEAR(s.mem_token_frac + s.mem_reserved_frac + s.mem_internal_frac + s.mem_free_frac, 1.0,
                  1e-9);
}

PB_TEST(engine_orca_max_runs_seven_at_a_time) {
    pb_trace t;
    trace_make(&t, 40, 0.0, 5, false);          /* all arrive at once */
    for (int i = 0; i < 40; i++)                 /* 7 prompts fit one step's token budget */
        t.reqs[i].prompt_len = 1 + t.reqs[i].prompt_len % 300;
    run_out o;
    run_engine(&o, &t, PB_RESV_MAX, false, 15728, 0);
    PB_REQUIRE(o.st == PB_OK);
    int64_t n;
    const pb_step_metrics *st = pb_metrics_steps(o.m, &n);
    int32_t most = 0;
    for (int64_t i = 0; i < n; i++) {
        PB_CHECK(st[i].n_running <= 7);
        most = PB_MAX(most, st[i].n_running);
    }
    PB_CHECK_EQ_INT(most, 7);
    PB_CHECK_EQ_INT(st[0].n_groups, 7);          /* the first step admits exactly 7 */
    pb_run_summary s;
    pb_metrics_summary(o.m, &s);
    PB_CHECK_EQ_INT(s.n_finished, 40);
    PB_CHECK_EQ_INT(s.n_preempt_recompute + s.n_preempt_swap, 0);
    check_steps_breakdown(o.m, 15728);
    run_free(&o);
    pb_trace_free(&t);
}

/* Pow2 / Oracle admit more than Max from the same queue, in the order the paper has */
PB_TEST(engine_orca_rules_order) {
    pb_trace t;
    trace_make(&t, 60, 0.0, 6, false);
    double batched[3];
    const pb_resv_rule rules[] = {PB_RESV_MAX, PB_RESV_POW2, PB_RESV_ORACLE};
    for (int i = 0; i < 3; i++) {
        run_out o;
        run_engine(&o, &t, rules[i], false, 15728, 0);
        PB_REQUIRE(o.st == PB_OK);
        pb_run_summary s;
        pb_metrics_summary(o.m, &s);
        PB_CHECK_EQ_INT(s.n_finished, 60);
        batched[i] = s.avg_batched_requests;
        check_steps_breakdown(o.m, 15728);
        if (rules[i] == PB_RESV_ORACLE) PB_CHECK_NEAR(s.mem_internal_frac, 0.0, 1e-12);
        run_free(&o);
    }
    PB_CHECK(batched[0] <= 7.0 + 1e-9);
    PB_CHECK(batched[1] > batched[0] && batched[2] > batched[1]);
    pb_trace_free(&t);
}

/* parallel samples, beams and shared prefixes: no sharing, nothing preempted, every
 * request completes, the classes still sum up at every step */
PB_TEST(engine_orca_parallel_beam_prefix) {
    pb_trace t;
    trace_make(&t, 50, 0.02, 8, true);
    const pb_resv_rule rules[] = {PB_RESV_MAX, PB_RESV_POW2, PB_RESV_ORACLE};
    for (int i = 0; i < 3; i++) {
        run_out o;
        run_engine(&o, &t, rules[i], false, 15728, 0);
        PB_REQUIRE(o.st == PB_OK);
        pb_run_summary s;
        pb_metrics_summary(o.m, &s);
        PB_CHECK_EQ_INT(s.n_finished, 50);  /* <= 4 sequences x 2048 slots always fit */
        PB_CHECK_NEAR(s.mem_saving, 0.0, 1e-12);
        check_steps_breakdown(o.m, 15728);
        pb_kv_contiguous_stats cs;
        pb_kv_contiguous_stats_get(o.kv, &cs);
        PB_CHECK(cs.n_forks > 0 && cs.copied_slots > 0);
        PB_CHECK_EQ_INT(cs.n_extra_regions, 0);    /* beams re-use their own regions */
        PB_CHECK_EQ_INT(cs.n_regions, 0);
        run_free(&o);
    }
    pb_trace_free(&t);
}

/* FasterTransformer: batches form only when nothing runs, take the earliest
 * arrivals (up to B), and every member completes when the batch does */
static void ft_semantics(int32_t max_batch, int32_t expect_b) {
    pb_trace t;
    trace_make(&t, 45, 0.07, 9, false);
    run_out o;
    run_engine(&o, &t, PB_RESV_MAX, true, 15728, max_batch);
    PB_REQUIRE(o.st == PB_OK);
    int64_t n, nr;
    const pb_step_metrics *st = pb_metrics_steps(o.m, &n);
    const pb_req_metrics *rq = pb_metrics_requests(o.m, &nr);
    /* raw finish times, before the batch rule */
    double *raw = pb_xmalloc((size_t)nr * sizeof *raw);
    for (int64_t i = 0; i < nr; i++) raw[i] = rq[i].finish_s;
    pb_policy_finalize(o.policy, o.m);
    pb_ft_stats fs;
    pb_policy_ft_stats(o.policy, &fs);
    PB_CHECK(fs.n_batches > 1);
    PB_CHECK_EQ_INT(fs.max_batch_seen, expect_b);
    /* a prefill step holds only prefills (no request joins a running batch) */
    int64_t b = 0;
    double *start = pb_xcalloc((size_t)fs.n_batches, sizeof *start);
    for (int64_t i = 0; i < n; i++) {
        if (st[i].n_prefill_seqs == 0) continue;
        PB_CHECK_EQ_INT(st[i].n_prefill_seqs, st[i].n_seqs);
        PB_CHECK(b < fs.n_batches);
        if (b < fs.n_batches) start[b] = st[i].t_s;
        b++;
    }
    PB_CHECK_EQ_INT(b, fs.n_batches);
    double prev_end = -1;
    for (int64_t k = 0; k < fs.n_batches; k++) {
        int members = 0;
        double end = -1, first = -1, raw_min = 1e300, raw_max = -1;
        for (int64_t i = 0; i < nr; i++) {
            if (pb_policy_ft_batch_of(o.policy, i) != k) continue;
            members++;
            PB_CHECK(rq[i].finished);
            PB_CHECK(rq[i].arrival_s <= start[k]);            /* arrived before it formed */
            if (end < 0) end = rq[i].finish_s;
            PB_CHECK_NEAR(rq[i].finish_s, end, 0);              /* all finish together */
            if (first < 0) first = rq[i].first_token_s;
            PB_CHECK_NEAR(rq[i].first_token_s, first, 0);       /* one prefill step */
            raw_min = PB_MIN(raw_min, raw[i]);
            raw_max = PB_MAX(raw_max, raw[i]);
        }
        PB_CHECK(members >= 1 && members <= expect_b);
        PB_CHECK_NEAR(end, raw_max, 0);                         /* = the longest's finish */
        PB_CHECK(start[k] >= prev_end);                         /* batches do not overlap */
        prev_end = end;
        /* FCFS: a batch smaller than B took every request waiting when it formed */
        if (members < expect_b)
            for (int64_t i = 0; i < nr; i++)
                if (rq[i].arrival_s <= start[k]) PB_CHECK(pb_policy_ft_batch_of(o.policy, i) <= k);
        (void)raw_min;
    }
    pb_run_summary s;
    pb_metrics_summary(o.m, &s);
    PB_CHECK_EQ_INT(s.n_finished, 45);
    check_steps_breakdown(o.m, 15728);
    free(start);
    free(raw);
    run_free(&o);
    pb_trace_free(&t);
}

PB_TEST(engine_ft_batch_semantics_memory_bound) { ft_semantics(0, 7); }
PB_TEST(engine_ft_batch_semantics_yaml_b) { ft_semantics(3, 3); }


/* ---- end to end: the five systems on ShareGPT / OPT-13B at 1 req/s (CLI, sim) ---- */

#define E2E_COLS 16
typedef struct {
    char system[32];
    double v[E2E_COLS];
} e2e_row;

static const char *const e2e_cols[E2E_COLS] = {
    "normalized_latency", "batched_requests", "token_states_pct", "reservation_pct",
    "internal_frag_pct", "external_frag_pct", "n_requests", "n_finished", "n_rejected",
    "n_unfinished", "preempt_recompute", "preempt_swap", "request_throughput_per_s", "kv_slots",
    "duration_s", "steps"};
enum { C_NL, C_BATCH, C_TOK, C_RES, C_INT, C_EXT, C_NREQ, C_FIN, C_REJ, C_UNF, C_PRC, C_PSW,
       C_THR, C_SLOTS, C_DUR, C_STEPS };

static int split_csv(char *line, char **f, int max) {
    int n = 0;
    for (char *p = line; n < max;) {
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    char *nl = n ? strpbrk(f[n - 1], "\r\n") : NULL;
    if (nl) *nl = 0;
    return n;
}

static int e2e_read(const char *path, e2e_row *rows, int max) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[8192], *fl[128];
    int idx[E2E_COLS], sys_i = -1, n = 0;
    if (!fgets(line, sizeof line, f)) { fclose(f); return -1; }
    int nh = split_csv(line, fl, 128);
    for (int c = 0; c < E2E_COLS; c++) {
        idx[c] = -1;
        for (int i = 0; i < nh; i++) if (!strcmp(fl[i], e2e_cols[c])) idx[c] = i;
    }
    for (int i = 0; i < nh; i++) if (!strcmp(fl[i], "system")) sys_i = i;
    while (n < max && fgets(line, sizeof line, f)) {
        int nf = split_csv(line, fl, 128);
        if (sys_i < 0 || sys_i >= nf) break;
        snprintf(rows[n].system, sizeof rows[n].system, "%s", fl[sys_i]);
        for (int c = 0; c < E2E_COLS; c++)
            rows[n].v[c] = idx[c] >= 0 && idx[c] < nf ? strtod(fl[idx[c]], NULL) : NAN;
        n++;
    }
    fclose(f);
    return n;
}

static const e2e_row *e2e_find(const e2e_row *rows, int n, const char *sys) {
    for (int i = 0; i < n; i++) if (!strcmp(rows[i].system, sys)) return &rows[i];
    return NULL;
}

PB_TEST(e2e_sharegpt_opt13b_five_systems) {
    const char *bin = getenv("PAGEDBENCH_BIN");
    if (!bin || !*bin) PB_SKIP("PAGEDBENCH_BIN not set (run through ctest)");
    FILE *probe = fopen(bin, "r");
    if (!probe) PB_SKIP("%s not built", bin);
    fclose(probe);
    char dir[] = "/tmp/pb_baselines_e2e_XXXXXX";
    PB_REQUIRE(mkdtemp(dir) != NULL);
    /* 10 minutes of the fig12 (a) workload (ShareGPT, OPT-13B, one A100-40GB) at
       1 req/s, every system, from an experiment file of our own */
    char path[256], cmd[2048];
    snprintf(path, sizeof path, "%s/e2e.yaml", dir);
    FILE *y = fopen(path, "w");
    PB_REQUIRE(y != NULL);
    fputs("name: e2e_baselines\nfigure: e2e\nseed: 0\nmodel: opt-13b\nhardware: a100-40gb\n"
          "gpus: 1\nexecutor: sim\ncolumns: [system, normalized_latency]\n"
          "workload: {dataset: sharegpt, arrivals: poisson, rate: 1.0, duration_s: 600}\n"
          "systems:\n"
          "  - {name: ft, type: ft, reservation: max, max_batch: 0}\n"
          "  - {name: orca_max, type: orca, reservation: max}\n"
          "  - {name: orca_pow2, type: orca, reservation: pow2}\n"
          "  - {name: orca_oracle, type: orca, reservation: oracle}\n"
          "  - {name: vllm, type: vllm, block_size: 16, preemption: auto}\n", y);
    fclose(y);
    snprintf(cmd, sizeof cmd,
             "'%s' run '%s' --results '%s' --fresh --quiet --no-report > '%s/log' 2>&1", bin, path,
             dir, dir);
    int rc = system(cmd);
    snprintf(path, sizeof path, "%s/e2e_baselines.csv", dir);
    e2e_row rows[8];
    int n = e2e_read(path, rows, 8);
    if (rc != 0 || n != 5) {
        char log[300];
        snprintf(log, sizeof log, "cat '%s/log' >&2", dir);
        if (system(log) != 0) fprintf(stderr, "  (no log)\n");
    }
    PB_CHECK_EQ_INT(rc, 0);
    PB_REQUIRE(n == 5);
    const char *names[5] = {"ft", "orca_max", "orca_pow2", "orca_oracle", "vllm"};
    const e2e_row *r[5];
    for (int i = 0; i < 5; i++) {
        r[i] = e2e_find(rows, n, names[i]);
        PB_REQUIRE(r[i] != NULL);
        const double *v = r[i]->v;
        PB_CHECK(v[C_NREQ] > 400);                          /* ~600 Poisson arrivals */
        PB_CHECK_EQ_INT((long long)v[C_FIN], (long long)v[C_NREQ]);
        PB_CHECK_EQ_INT((long long)v[C_REJ], 0);
        PB_CHECK_EQ_INT((long long)v[C_UNF], 0);
        PB_CHECK(v[C_NL] > 0.005 && v[C_NL] < 1e4);         /* s/token */
        PB_CHECK(v[C_TOK] > 0 && v[C_TOK] < 100);
        PB_CHECK_NEAR(v[C_TOK] + v[C_RES] + v[C_INT] + v[C_EXT], 100.0, 1e-6);
        PB_CHECK(v[C_SLOTS] > 15000 && v[C_SLOTS] < 16000);  /* ~15.7K slots */
        if (i < 4) PB_CHECK_EQ_INT((long long)(v[C_PRC] + v[C_PSW]), 0);  /* no preemption */
    }
    /* the paper's order at a rate between the knees: FT worst, then Max, Pow2, Oracle */
    PB_CHECK(r[0]->v[C_NL] > r[1]->v[C_NL]);
    PB_CHECK(r[1]->v[C_NL] > r[2]->v[C_NL]);
    PB_CHECK(r[2]->v[C_NL] > r[3]->v[C_NL]);
    PB_CHECK(r[3]->v[C_NL] >= r[4]->v[C_NL]);
    PB_CHECK(r[1]->v[C_BATCH] <= 7.0 + 1e-9);            /* Orca (Max): 7 x 2048 slots */
    PB_CHECK(r[1]->v[C_BATCH] < r[2]->v[C_BATCH] && r[2]->v[C_BATCH] < r[3]->v[C_BATCH]);
    PB_CHECK_NEAR(r[3]->v[C_INT], 0.0, 1e-9);             /* Oracle: no internal frag. */
    PB_CHECK(r[1]->v[C_INT] > r[2]->v[C_INT]);            /* Max wastes most inside */
    PB_CHECK(r[2]->v[C_EXT] > r[1]->v[C_EXT]);            /* Pow2: buddy round-up */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "  could not remove %s\n", dir);
}

PB_TEST_MAIN()
