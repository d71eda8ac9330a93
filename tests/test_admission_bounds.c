/* test_admission_bounds.c -- every admission and capacity rule exactly at its bound and
 * one past it, seen from outside the scheduler: a tiny trace runs through the engine on
 * the fixed-latency executor (every step takes exactly 1 s, arrivals at 0, so a
 * request's first token comes at the end of the step that admitted it: first_token_s
 * = step number), and the metrics (per request, per step) say who ran when.
 *   token budget (v0.1 mixed steps, decodes counted), a prompt at the budget;
 *   padding cap and padded budget (v0.2 alternate steps), the summed budget unpadded;
 *   max_num_seqs (a group's future sequences counted);
 *   the watermark (paged admission OK / LATER / NEVER);
 *   a block boundary (the step that takes a sequence's next block);
 *   the KV capacity (decodes that fill the last block exactly, one token past it);
 *   max_model_len (prompt rejection, output cap);
 *   Orca's reservations (oracle, pow2, max) at the contiguous capacity;
 *   FasterTransformer's batch size; Sarathi's chunk budget. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines.h"
#include "block_manager.h"
#include "config.h"
#include "engine.h"
#include "executor_fixed.h"
#include "kv_contiguous.h"
#include "pbtest.h"

#define MAXR 8

typedef struct {
    const char *policy;       /* "vllm" (default), "orca", "ft", "sarathi"        */
    const char *opts;         /* the policy's options as YAML ("" none)             */
    /* paged manager (contig_slots == 0) */
    int32_t block_size, n_blocks;
    double watermark;
    /* contiguous manager */
    int64_t contig_slots;
    pb_resv_rule rule;
    int32_t contig_max_len;
    pb_engine_params ep;
} setup;

static setup setup_default(void) {
    setup s;
    memset(&s, 0, sizeof s);
    s.policy = "vllm";
    s.opts = "";
    s.block_size = 16;
    s.n_blocks = 4096;
    s.watermark = 0.01;
    pb_engine_params_default(&s.ep);
    s.ep.check_every_step = true;
    return s;
}

typedef struct {
    int n;
    pb_req_metrics req[MAXR];
    int64_t n_steps;
    pb_step_metrics step[64];
    pb_run_summary sum;
} outcome;

/* Run requests (prompt, output, n) arriving at 0 (or at arr[i] when given) under s. */
static pb_status run(const setup *su, int n, const int32_t (*pon)[3], const double *arr, outcome *out) {
    pb_kv_manager *kv = NULL;
    if (su->contig_slots > 0) {
        pb_kv_contiguous_params cp = {su->contig_slots, su->rule, su->contig_max_len ? su->contig_max_len : 2048};
        PB_ASSERT(pb_kv_contiguous_create(&cp, &kv) == PB_OK);
    } else {
        pb_paged_params pp;
        pb_paged_params_default(&pp);
        pp.block_size = su->block_size;
        pp.n_gpu_blocks = su->n_blocks;
        pp.n_cpu_blocks = su->n_blocks;
        pp.watermark = su->watermark;
        PB_ASSERT(pb_paged_kv_create(&pp, &kv) == PB_OK);
    }
    pb_config *cf = NULL;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    if (su->opts && *su->opts) PB_ASSERT(pb_config_load_string("opts.yaml", su->opts, &cf, &e) == PB_OK);
    pb_policy *pol = NULL;
    PB_ASSERT(pb_policy_create(su->policy, cf ? pb_config_root(cf) : NULL, &pol, &e) == PB_OK);
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    xp.step_s = 1;
    xp.prefill_token_s = xp.decode_seq_s = 0;
    pb_executor *ex = NULL;
    PB_ASSERT(pb_executor_fixed_create(&xp, &ex) == PB_OK);
    pb_engine *eng = NULL;
    PB_ASSERT(pb_engine_create(&su->ep, kv, pol, ex, &eng) == PB_OK);
    pb_request r[MAXR];
    for (int i = 0; i < n; i++) {
        r[i] = pb_request_make(arr ? arr[i] : 0, pon[i][0], pon[i][1]);
        r[i].n = pon[i][2] > 0 ? pon[i][2] : 1;
        r[i].id = i;
    }
    pb_trace t = {r, n};
    pb_metrics *m = pb_metrics_create(true);
    pb_status st = pb_engine_run(eng, &t, m);
    if (st == PB_OK) {
        pb_policy_finalize(pol, m);
        int64_t nr;
        const pb_req_metrics *rm = pb_metrics_requests(m, &nr);
        out->n = (int)nr;
        memcpy(out->req, rm, (size_t)nr * sizeof *rm);
        const pb_step_metrics *sm = pb_metrics_steps(m, &out->n_steps);
        if (out->n_steps > 64) out->n_steps = 64;
        memcpy(out->step, sm, (size_t)out->n_steps * sizeof *sm);
        pb_metrics_summary(m, &out->sum);
        PB_CHECK(pb_metrics_check(m) == PB_OK);
    }
    pb_metrics_destroy(m);
    pb_engine_destroy(eng);
    pb_executor_destroy(ex);
    pb_policy_destroy(pol);
    pb_kv_destroy(kv);
    pb_config_destroy(cf);
    return st;
}

/* the step (1-based) whose end gave request i its first token; -1 never, -2 rejected */
static int first_step(const outcome *o, int i) {
    if (o->req[i].rejected) return -2;
    if (o->req[i].first_token_s < 0) return -1;
    return (int)lround(o->req[i].first_token_s);
}

#define ADMITTED_AT(o, i, k) PB_CHECK_EQ_INT(first_step(&(o), i), k)

/* ---- token budget: v0.1 mixed steps ---- */
PB_TEST(token_budget_mixed_step) {
    setup s = setup_default();
    s.ep.max_num_batched_tokens = 64;
    outcome o;
    /* 30 + 34 = 64 = the budget: one step */
    const int32_t at[2][3] = {{30, 2, 1}, {34, 2, 1}};
    PB_REQUIRE(run(&s, 2, at, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 1);
    ADMITTED_AT(o, 1, 1);
    PB_CHECK_EQ_INT(o.step[0].prefill_tokens, 64);
    /* 30 + 35 = 65: the second waits a step (then R0's decode + 35 = 36 fits) */
    const int32_t past[2][3] = {{30, 2, 1}, {35, 2, 1}};
    PB_REQUIRE(run(&s, 2, past, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 1);
    ADMITTED_AT(o, 1, 2);
    PB_CHECK_EQ_INT(o.step[0].prefill_tokens, 30);
    /* the budget counts this step's decodes: R0 decodes in step 2, so R1 (arrived
       during step 1) fits with 63 prompt tokens (1 + 63 = 64) ... */
    const double arr[2] = {0, 0.5};
    const int32_t dec_at[2][3] = {{10, 5, 1}, {63, 2, 1}};
    PB_REQUIRE(run(&s, 2, dec_at, arr, &o) == PB_OK);
    ADMITTED_AT(o, 1, 2);
    /* ... not with 64 (65 > 64): it runs alone once R0 finished (step 5), in step 6 */
    const int32_t dec_past[2][3] = {{10, 5, 1}, {64, 2, 1}};
    PB_REQUIRE(run(&s, 2, dec_past, arr, &o) == PB_OK);
    ADMITTED_AT(o, 1, 6);
    /* a prompt of exactly the budget runs (alone); one token more can never run */
    const int32_t whole[2][3] = {{64, 1, 1}, {65, 1, 1}};
    PB_REQUIRE(run(&s, 2, whole, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 1);
    ADMITTED_AT(o, 1, -2);
    PB_CHECK_EQ_INT(o.sum.n_rejected, 1);
}

/* ---- v0.2 alternate steps: padded prompt batches ---- */
PB_TEST(padding_cap_and_padded_budget) {
    setup s = setup_default();
    s.ep.step_mode = PB_STEP_ALTERNATE;
    s.ep.max_num_batched_tokens = 60;
    s.ep.max_paddings = 20;
    outcome o;
    /* prompts 10 and 30: a [2, 30] batch, 60 token rows (= the budget), 20 padding (= the cap) */
    const int32_t p[2][3] = {{10, 2, 1}, {30, 2, 1}};
    PB_REQUIRE(run(&s, 2, p, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 1);
    ADMITTED_AT(o, 1, 1);
    /* padding cap one below: the second prompt gets its own (prompt-only) step 2 */
    s.ep.max_paddings = 19;
    PB_REQUIRE(run(&s, 2, p, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 1);
    ADMITTED_AT(o, 1, 2);
    /* padded budget one below (59 < 2 x 30), padding allowed */
    s.ep.max_paddings = 20;
    s.ep.max_num_batched_tokens = 59;
    PB_REQUIRE(run(&s, 2, p, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 1, 2);
    /* unpadded alternate steps (v0.2.0-0.2.1): the summed budget, 10 + 30 = 40 */
    s.ep.max_paddings = -1;
    s.ep.max_num_batched_tokens = 40;
    PB_REQUIRE(run(&s, 2, p, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 1, 1);
    s.ep.max_num_batched_tokens = 39;
    PB_REQUIRE(run(&s, 2, p, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 1, 2);
}

/* ---- max_num_seqs: a group counts its future sequences ---- */
PB_TEST(max_num_seqs_bound) {
    setup s = setup_default();
    s.ep.max_num_seqs = 3;
    outcome o;
    /* n = 2 + n = 1 = 3 sequences: together */
    const int32_t at[2][3] = {{8, 3, 2}, {8, 3, 1}};
    PB_REQUIRE(run(&s, 2, at, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 1, 1);
    /* n = 2 + n = 2 = 4: the second waits until the first finishes (step 3), step 4 */
    const int32_t past[2][3] = {{8, 3, 2}, {8, 3, 2}};
    PB_REQUIRE(run(&s, 2, past, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 1);
    ADMITTED_AT(o, 1, 4);
    /* a group of exactly max_num_seqs runs; one of more never can (rejected) */
    const int32_t whole[2][3] = {{8, 2, 3}, {8, 2, 4}};
    PB_REQUIRE(run(&s, 2, whole, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 1);
    ADMITTED_AT(o, 1, -2);
}

/* ---- the paged manager's watermark: 1% of 100 blocks = 1 block kept free ---- */
PB_TEST(watermark_bound) {
    setup s = setup_default();
    s.n_blocks = 100;
    s.ep.max_num_batched_tokens = 4096;
    s.ep.max_model_len = 4096;
    outcome o;
    /* 99 blocks (1584 tokens) leave the watermark: admitted; 100 blocks never fit */
    const int32_t one[2][3] = {{1584, 1, 1}, {1585, 1, 1}};
    PB_REQUIRE(run(&s, 2, one, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 1);
    ADMITTED_AT(o, 1, -2);
    /* 50 + 49 blocks: both in step 1 (1 block left = the watermark) */
    const int32_t two[2][3] = {{800, 1, 1}, {784, 1, 1}};
    PB_REQUIRE(run(&s, 2, two, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 1, 1);
    /* 50 + 50 blocks: the second waits (LATER) until the first frees its blocks */
    const int32_t later[2][3] = {{800, 1, 1}, {785, 1, 1}};
    PB_REQUIRE(run(&s, 2, later, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 1, 2);
    /* without a watermark 50 + 50 blocks fill the GPU exactly: one step */
    s.watermark = 0;
    const int32_t full[2][3] = {{800, 1, 1}, {800, 1, 1}};
    PB_REQUIRE(run(&s, 2, full, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 1, 1);
    PB_CHECK_EQ_INT(o.step[0].mem.gpu_blocks_free, 0);
}

/* ---- a block boundary: the step that writes token 17 takes a second block of 16 ---- */
static int64_t blocks_used(const outcome *o, int step) {
    const pb_kv_usage *u = &o->step[step - 1].mem;
    return u->gpu_blocks_total - u->gpu_blocks_free;
}

PB_TEST(block_boundary) {
    setup s = setup_default();
    outcome o;
    /* prompt 16: one full block; step 2 writes the first generated token's KV (the 17th) */
    const int32_t full[1][3] = {{16, 3, 1}};
    PB_REQUIRE(run(&s, 1, full, NULL, &o) == PB_OK);
    PB_REQUIRE(o.n_steps == 3);
    PB_CHECK_EQ_INT(blocks_used(&o, 1), 1);
    PB_CHECK_EQ_INT(blocks_used(&o, 2), 2);
    PB_CHECK_EQ_INT(blocks_used(&o, 3), 2);
    /* prompt 15: the 16th token still fits block 1 (step 2), the 17th takes block 2 (step 3) */
    const int32_t one_short[1][3] = {{15, 3, 1}};
    PB_REQUIRE(run(&s, 1, one_short, NULL, &o) == PB_OK);
    PB_CHECK_EQ_INT(blocks_used(&o, 1), 1);
    PB_CHECK_EQ_INT(blocks_used(&o, 2), 1);
    PB_CHECK_EQ_INT(blocks_used(&o, 3), 2);
    /* prompt 17: two blocks from admission */
    const int32_t over[1][3] = {{17, 1, 1}};
    PB_REQUIRE(run(&s, 1, over, NULL, &o) == PB_OK);
    PB_CHECK_EQ_INT(blocks_used(&o, 1), 2);
}

/* ---- the KV capacity: 4 blocks of 16, no watermark.  A group decodes while the free
 * blocks are at least its running sequences (vLLM's can_append_slot), whether or not
 * this token opens a block. ---- */
PB_TEST(kv_capacity_bound) {
    setup s = setup_default();
    s.n_blocks = 4;
    s.watermark = 0;
    outcome o;
    /* prompt 16 (block 1), output 34: step k >= 2 writes token index 14 + k; index 48
       (step 34) opens block 4 while 1 block is free: the last step, no preemption */
    const int32_t at[1][3] = {{16, 34, 1}};
    PB_REQUIRE(run(&s, 1, at, NULL, &o) == PB_OK);
    PB_CHECK_EQ_INT(o.sum.n_preempt_recompute + o.sum.n_preempt_swap, 0);
    PB_CHECK_EQ_INT(o.n_steps, 34);
    PB_CHECK_EQ_INT(blocks_used(&o, 34), 4);
    /* output 35: step 35 finds no free block and preempts the group (recompute), which
       is re-admitted at once: step 35 recomputes its 16 + 34 tokens (4 blocks) */
    const int32_t past[1][3] = {{16, 35, 1}};
    PB_REQUIRE(run(&s, 1, past, NULL, &o) == PB_OK);
    PB_CHECK_EQ_INT(o.req[0].n_recompute, 1);
    PB_REQUIRE(o.n_steps == 35);
    PB_CHECK_EQ_INT(o.step[33].prefill_tokens, 0);
    PB_CHECK_EQ_INT(o.step[34].prefill_tokens, 50);
    PB_CHECK(o.sum.n_finished == 1);
    /* a group of two sequences needs two free blocks: with 3 of 4 free after its prompt
       (16 tokens, shared) it decodes; a prompt of 33 (3 blocks, 1 free) cannot */
    const int32_t two[1][3] = {{16, 2, 2}};
    PB_REQUIRE(run(&s, 1, two, NULL, &o) == PB_OK);
    PB_CHECK_EQ_INT(o.req[0].n_swap + o.req[0].n_recompute, 0);
    s.n_blocks = 5;   /* 33 tokens (3 blocks) + 2 x 1 free: exactly enough */
    const int32_t two_full[1][3] = {{33, 2, 2}};
    PB_REQUIRE(run(&s, 1, two_full, NULL, &o) == PB_OK);
    PB_CHECK_EQ_INT(o.req[0].n_swap + o.req[0].n_recompute, 0);
    s.n_blocks = 4;   /* one block short: swapped out (a multi-sequence group), and it can
                         never swap back in (3 blocks + 1 per sequence > 4): rejected */
    PB_REQUIRE(run(&s, 1, two_full, NULL, &o) == PB_OK);
    PB_CHECK_EQ_INT(o.req[0].n_swap, 1);
    PB_CHECK(o.req[0].rejected);
}

/* ---- max_model_len: prompts over it rejected, outputs capped to it ---- */
PB_TEST(max_model_len_bound) {
    setup s = setup_default();
    s.ep.max_model_len = 100;
    outcome o;
    const int32_t p[3][3] = {{100, 1, 1}, {101, 1, 1}, {90, 20, 1}};
    PB_REQUIRE(run(&s, 3, p, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 1);
    ADMITTED_AT(o, 1, -2);
    PB_CHECK_EQ_INT(o.req[2].output_len, 10);    /* 90 + 10 = 100 */
    PB_CHECK_NEAR(o.req[2].finish_s - o.req[2].first_token_s, 9, 1e-12);
}

/* ---- Orca: the contiguous manager's reservations at its capacity ---- */
PB_TEST(orca_reservation_bounds) {
    setup s = setup_default();
    s.policy = "orca";
    s.contig_max_len = 64;
    /* R0 prompt 10 output 5, R1 prompt 20 output 3 */
    const int32_t p[2][3] = {{10, 5, 1}, {20, 3, 1}};
    /* reservations, then each rounded up to a power-of-two chunk by the buddy allocator */
    static const struct { pb_resv_rule rule; int64_t fits; } rules[] = {
        {PB_RESV_ORACLE, 16 + 32},   /* need 10 + 5 - 1 = 14 -> 16, 20 + 3 - 1 = 22 -> 32 */
        {PB_RESV_POW2, 32 + 32},     /* output to a power of two: 10 + 8 = 18 -> 32, 20 + 4 = 24 -> 32 */
        {PB_RESV_MAX, 64 + 64},      /* max_len each */
    };
    for (size_t k = 0; k < PB_ARRAY_LEN(rules); k++) {
        outcome o;
        s.rule = rules[k].rule;
        s.contig_slots = rules[k].fits;
        PB_REQUIRE(run(&s, 2, p, NULL, &o) == PB_OK);
        ADMITTED_AT(o, 0, 1);
        ADMITTED_AT(o, 1, 1);
        /* one slot less: R1 waits for R0 (done in step 5), runs in step 6 */
        s.contig_slots = rules[k].fits - 1;
        PB_REQUIRE(run(&s, 2, p, NULL, &o) == PB_OK);
        ADMITTED_AT(o, 0, 1);
        ADMITTED_AT(o, 1, 6);
    }
}

/* ---- FasterTransformer: request-level batches of max_batch ---- */
PB_TEST(ft_batch_bound) {
    setup s = setup_default();
    s.policy = "ft";
    s.opts = "max_batch: 2\n";
    s.contig_slots = 100000;
    s.rule = PB_RESV_MAX;
    s.contig_max_len = 64;
    outcome o;
    const int32_t p[3][3] = {{10, 3, 1}, {10, 5, 1}, {10, 2, 1}};
    PB_REQUIRE(run(&s, 3, p, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 1);
    ADMITTED_AT(o, 1, 1);
    /* the batch runs until its longest request (5 tokens: step 5); the third next */
    ADMITTED_AT(o, 2, 6);
    PB_CHECK_NEAR(o.req[0].finish_s, 5, 1e-12);   /* a batch completes together */
    PB_CHECK_NEAR(o.req[1].finish_s, 5, 1e-12);
}

/* ---- Sarathi: chunks of the per-step token budget ---- */
PB_TEST(sarathi_chunk_bound) {
    setup s = setup_default();
    s.policy = "sarathi";
    s.opts = "token_budget: 16\n";
    outcome o;
    /* 32 tokens = two full chunks: first token after step 2; 33 needs a third chunk */
    const int32_t p[1][3] = {{32, 2, 1}};
    PB_REQUIRE(run(&s, 1, p, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 2);
    PB_CHECK_EQ_INT(o.step[0].prefill_tokens, 16);
    const int32_t q[1][3] = {{33, 2, 1}};
    PB_REQUIRE(run(&s, 1, q, NULL, &o) == PB_OK);
    ADMITTED_AT(o, 0, 3);
    PB_CHECK_EQ_INT(o.step[2].prefill_tokens, 1);
    /* decodes come out of the budget first: beside R0's decode, R1's chunk is 15 */
    const double arr[2] = {0, 0.5};
    const int32_t d[2][3] = {{4, 10, 1}, {40, 2, 1}};
    PB_REQUIRE(run(&s, 2, d, arr, &o) == PB_OK);
    PB_CHECK_EQ_INT(o.step[1].decode_tokens, 1);
    PB_CHECK_EQ_INT(o.step[1].prefill_tokens, 15);
}

PB_TEST_MAIN()
