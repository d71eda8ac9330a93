/* test_model_cpu.c -- the real tiny models (OPT and LLaMA) on the cpu executor,
 * driven by hand-built batches (no engine): a sequence's tokens and log-probs must
 * not depend on the KV layout (paged with block sizes 1/2/16/32, or contiguous), on
 * the batch it ran in, on prefix caching, on a swap out / swap in round trip, on
 * recompute, or on copy-on-write forks -- bit for bit.  A negative control checks
 * that a corrupted KV block does change the result (the tests can fail).
 *
 *   cmake --build build && (cd build && ctest -R test_model_cpu --output-on-failure)
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_ops.h"
#include "commands.h"
#include "executor_real.h"
#include "model.h"
#include "pbtest.h"
#include "rng.h"
#include "sim_profile.h"
#include "spec.h"

/* ---- a hand-driven sequence: tokens, KV location, what the next step computes ---- */

#define MAXT 160

typedef struct {
    int32_t id, group;
    int32_t tok[MAXT], len;       /* prompt + generated                              */
    int32_t n_cached;             /* tokens whose KV is in the cache                 */
    int32_t bt[MAXT], nb;         /* paged block table                               */
    int64_t off;                  /* contiguous first slot                           */
    float lp[MAXT];               /* logprob of each generated token (by position)   */
} tseq;

typedef struct {                  /* a block pool handing out blocks in shuffled order */
    int32_t *free_list, n_free, bs;
    int64_t next_off;
} tpool;

static void pool_init_(tpool *p, int32_t n_blocks, int32_t bs, uint64_t seed) {
    p->free_list = pb_xmalloc((size_t)n_blocks * sizeof(int32_t));
    p->n_free = n_blocks;
    p->bs = bs;
    p->next_off = 0;
    for (int32_t i = 0; i < n_blocks; i++) p->free_list[i] = i;
    pb_rng r;
    pb_rng_seed(&r, seed, 77);
    for (int32_t i = n_blocks - 1; i > 0; i--) {
        int32_t j = (int32_t)pb_rng_below(&r, (uint64_t)i + 1), t = p->free_list[i];
        p->free_list[i] = p->free_list[j];
        p->free_list[j] = t;
    }
}
static int32_t pool_take_(tpool *p) { PB_ASSERT(p->n_free > 0); return p->free_list[--p->n_free]; }
static void pool_give_(tpool *p, int32_t b) { p->free_list[p->n_free++] = b; }

static void seq_init_(tseq *s, int32_t id, int32_t group, int32_t prompt_len, uint64_t seed,
                      int32_t vocab) {
    memset(s, 0, sizeof *s);
    s->id = id;
    s->group = group;
    pb_rng r;
    pb_rng_seed(&r, seed, (uint64_t)group);
    for (int32_t i = 0; i < prompt_len; i++) s->tok[i] = (int32_t)pb_rng_below(&r, (uint64_t)vocab);
    s->len = prompt_len;
    s->off = -1;
}

/* Give s blocks (paged) or a region (contiguous, reserved for MAXT tokens) for len. */
static void seq_place_(tseq *s, tpool *p, bool paged) {
    if (paged) {
        while (s->nb * p->bs < s->len) s->bt[s->nb++] = pool_take_(p);
    } else if (s->off < 0) {
        s->off = p->next_off;
        p->next_off += MAXT;
    }
}

static void seq_free_blocks_(tseq *s, tpool *p) {
    for (int32_t i = 0; i < s->nb; i++) pool_give_(p, s->bt[i]);
    s->nb = 0;
}

/* One step over seqs: each computes tokens [n_cached, len) (prefill if more than one
 * or if it has no KV yet) and samples the next token, appended to the sequence. */
static pb_status step_(pb_executor *ex, tseq **seqs, int32_t n, int32_t bs, tpool *pool,
                       int32_t n_top, pb_candidates *cand_out, const pb_block_pair *copies,
                       int32_t n_copies) {
    pb_batch_seq bsq[16];
    pb_candidates cand[16];
    PB_ASSERT(n <= 16);
    pb_batch b;
    memset(&b, 0, sizeof b);
    for (int32_t i = 0; i < n; i++) {
        tseq *s = seqs[i];
        seq_place_(s, pool, bs > 0);
        pb_batch_seq *q = &bsq[i];
        memset(q, 0, sizeof *q);
        q->seq_id = s->id;
        q->group_id = s->group;
        q->n_cached = s->n_cached;
        q->n_new = s->len - s->n_cached;
        q->context_len = s->len;
        q->is_prefill = s->n_cached == 0 || q->n_new > 1;
        q->sample = true;
        q->block_table = bs > 0 ? s->bt : NULL;
        q->n_blocks = bs > 0 ? s->nb : 0;
        q->kv_offset = bs > 0 ? 0 : s->off;
        q->tokens = s->tok;
        if (q->is_prefill) b.n_prefill_tokens += q->n_new; else b.n_decode++;
    }
    b.n_seqs = n;
    b.seqs = bsq;
    b.block_size = bs;
    b.n_top = n_top;
    b.copies = copies;
    b.n_copies = n_copies;
    pb_step_result res;
    pb_status st = pb_executor_execute(ex, &b, &res, cand);
    if (st != PB_OK) return st;
    PB_ASSERT(res.has_tokens && res.latency_s >= 0);
    for (int32_t i = 0; i < n; i++) {
        tseq *s = seqs[i];
        PB_ASSERT(cand[i].n >= 1);
        s->n_cached = s->len;
        s->lp[s->len] = cand[i].logprob[0];
        s->tok[s->len++] = cand[i].token[0];
        if (cand_out) cand_out[i] = cand[i];
    }
    return PB_OK;
}

static pb_model load_(const char *name) {
    pb_model m;
    pb_cfg_err err;
    memset(&err, 0, sizeof err);
    pb_status st = pb_model_load(pb_spec_dir(), name, &m, &err);
    PB_ASSERT(st == PB_OK);
    return m;
}

static pb_executor *make_(const pb_model *m, int32_t bs, int32_t n_blocks, int32_t cpu_blocks,
                          float temperature) {
    pb_real_exec_params p;
    pb_real_exec_params_default(&p);
    p.block_size = bs;
    p.num_gpu_blocks = n_blocks;
    p.num_slots = (int64_t)MAXT * 16;
    p.num_cpu_blocks = cpu_blocks;
    p.weight_seed = 1234;
    p.sample_seed = 99;
    p.sampling.temperature = temperature;
    p.sampling.top_p = 0.9f;
    p.max_tokens_hint = 64;
    pb_executor *ex = NULL;
    pb_status st = pb_executor_cpu_create(m, &p, &ex);
    PB_ASSERT(st == PB_OK && ex);
    return ex;
}

/* Generate n_out tokens for one sequence alone (prefill then decodes). */
static void run_alone_(const pb_model *m, int32_t bs, tseq *s, int32_t n_out, float temp) {
    int32_t nblk = bs > 0 ? PB_CDIV(MAXT, bs) + 2 : 0;
    pb_executor *ex = make_(m, bs, nblk > 0 ? nblk : 1, 0, temp);
    tpool pool;
    pool_init_(&pool, nblk > 0 ? nblk : 1, bs > 0 ? bs : 1, 5);
    tseq *one[1] = {s};
    for (int32_t k = 0; k < n_out; k++) PB_ASSERT(step_(ex, one, 1, bs, &pool, 1, NULL, NULL, 0) == PB_OK);
    free(pool.free_list);
    pb_executor_destroy(ex);
}

static bool same_tokens_(const tseq *a, const tseq *b) {
    return a->len == b->len && !memcmp(a->tok, b->tok, (size_t)a->len * sizeof(int32_t)) &&
           !memcmp(a->lp, b->lp, sizeof a->lp);
}

static const char *MODELS[] = {"tiny-opt", "tiny-llama"};

/* ---- tests ---- */

PB_TEST(outputs_are_finite_and_depend_on_the_prompt) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = load_(MODELS[mi]);
        tseq s, t;
        seq_init_(&s, 1, 1, 9, 3, m.vocab);
        run_alone_(&m, 16, &s, 24, 0.0f);
        seq_init_(&t, 1, 2, 9, 3, m.vocab);      /* another prompt */
        run_alone_(&m, 16, &t, 24, 0.0f);
        int distinct_lp = 0;
        for (int32_t i = 9; i < s.len; i++) {
            PB_CHECK(isfinite(s.lp[i]) && s.lp[i] <= 0.0f);
            distinct_lp += i > 9 && s.lp[i] != s.lp[i - 1];
        }
        /* random weights: greedy decoding may settle on a repeated token, but the
           distributions still move with the context, and prompts matter */
        PB_CHECK(distinct_lp >= 20);
        PB_CHECK(memcmp(s.tok + 9, t.tok + 9, 24 * sizeof(int32_t)) != 0);
        PB_CHECK(s.lp[20] > -logf((float)m.vocab));   /* greedy beats uniform */
    }
}

PB_TEST(paged_block_sizes_and_contiguous_give_identical_tokens) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = load_(MODELS[mi]);
        tseq ref;
        seq_init_(&ref, 1, 7, 21, 11, m.vocab);
        run_alone_(&m, 0, &ref, 40, 0.0f);                   /* contiguous */
        static const int32_t bss[] = {1, 2, 16, 32};
        for (size_t k = 0; k < PB_ARRAY_LEN(bss); k++) {
            tseq s;
            seq_init_(&s, 1, 7, 21, 11, m.vocab);
            run_alone_(&m, bss[k], &s, 40, 0.0f);
            PB_CHECK(same_tokens_(&s, &ref));
        }
    }
}

PB_TEST(tokens_do_not_depend_on_the_batch) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = load_(MODELS[mi]);
        for (int layout = 0; layout < 2; layout++) {
            int32_t bs = layout ? 2 : 0;
            /* alone */
            tseq alone[3];
            int32_t plen[3] = {5, 17, 33};
            for (int i = 0; i < 3; i++) {
                seq_init_(&alone[i], 10 + i, 20 + i, plen[i], 4, m.vocab);
                run_alone_(&m, bs, &alone[i], 12, 0.0f);
            }
            /* together, staggered: seq i joins at step 3*i, so steps mix prefills and decodes */
            pb_executor *ex = make_(&m, bs, 256, 0, 0.0f);
            tpool pool;
            pool_init_(&pool, 256, bs ? bs : 1, 8);
            tseq s[3];
            for (int i = 0; i < 3; i++) seq_init_(&s[i], 10 + i, 20 + i, plen[i], 4, m.vocab);
            for (int step = 0; step < 3 * 2 + 12; step++) {
                tseq *in[3];
                int n = 0;
                for (int i = 0; i < 3; i++)
                    if (step >= 3 * i && s[i].len < plen[i] + 12) in[n++] = &s[i];
                if (n) PB_REQUIRE(step_(ex, in, n, bs, &pool, 1, NULL, NULL, 0) == PB_OK);
            }
            for (int i = 0; i < 3; i++) PB_CHECK(same_tokens_(&s[i], &alone[i]));
            free(pool.free_list);
            pb_executor_destroy(ex);
        }
    }
}

PB_TEST(prefill_with_a_cached_prefix_equals_a_full_prefill) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = load_(MODELS[mi]);
        tseq ref;
        seq_init_(&ref, 1, 3, 30, 6, m.vocab);
        run_alone_(&m, 16, &ref, 6, 0.0f);
        /* process the prompt in two chunks: 16 tokens (no sample kept), then 14 with
           n_cached = 16 (a shared-prefix style prefill), then decode */
        pb_executor *ex = make_(&m, 16, 32, 0, 0.0f);
        tpool pool;
        pool_init_(&pool, 32, 16, 9);
        tseq s;
        seq_init_(&s, 1, 3, 30, 6, m.vocab);
        s.len = 16;
        tseq *one[1] = {&s};
        PB_REQUIRE(step_(ex, one, 1, 16, &pool, 1, NULL, NULL, 0) == PB_OK);
        /* restore the real prompt tail over the sampled token */
        seq_init_(&ref, 1, 3, 30, 6, m.vocab);            /* fresh copy of the prompt */
        memcpy(s.tok, ref.tok, 30 * sizeof(int32_t));
        s.len = 30;
        s.n_cached = 16;
        memset(s.lp, 0, sizeof s.lp);
        for (int k = 0; k < 6; k++) PB_REQUIRE(step_(ex, one, 1, 16, &pool, 1, NULL, NULL, 0) == PB_OK);
        run_alone_(&m, 16, &ref, 6, 0.0f);
        PB_CHECK(same_tokens_(&s, &ref));
        free(pool.free_list);
        pb_executor_destroy(ex);
    }
}

PB_TEST(swap_out_and_in_round_trip_preserves_tokens) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = load_(MODELS[mi]);
        int32_t bs = 4, nblk = 24;
        tseq ref;
        seq_init_(&ref, 1, 1, 13, 2, m.vocab);
        run_alone_(&m, bs, &ref, 20, 0.0f);
        pb_executor *ex = make_(&m, bs, nblk, 16, 0.0f);
        tpool pool;
        pool_init_(&pool, nblk, bs, 3);
        tseq a, other;
        seq_init_(&a, 1, 1, 13, 2, m.vocab);
        seq_init_(&other, 2, 2, 40, 2, m.vocab);
        tseq *one[1] = {&a};
        for (int k = 0; k < 8; k++) PB_REQUIRE(step_(ex, one, 1, bs, &pool, 1, NULL, NULL, 0) == PB_OK);
        /* swap a out to CPU blocks 15, 14, ... and free its GPU blocks */
        pb_block_pair out[16], in[16];
        int32_t nb = a.nb;
        for (int32_t i = 0; i < nb; i++) { out[i].src = a.bt[i]; out[i].dst = 15 - i; }
        seq_free_blocks_(&a, &pool);
        /* another sequence reuses (overwrites) the freed GPU blocks in the same step */
        pb_batch_seq q;
        memset(&q, 0, sizeof q);
        pb_batch b;
        memset(&b, 0, sizeof b);
        b.swap_out = out;
        b.n_swap_out = nb;
        b.block_size = bs;
        b.n_top = 1;
        tseq *o1[1] = {&other};
        /* the swap-out goes with the other sequence's prefill: execute order is
           swap out, then forward, so a's KV is saved before being overwritten */
        {
            seq_place_(&other, &pool, true);
            q.seq_id = other.id; q.group_id = other.group; q.is_prefill = true;
            q.n_new = other.len; q.context_len = other.len; q.sample = true;
            q.block_table = other.bt; q.n_blocks = other.nb; q.tokens = other.tok;
            b.n_seqs = 1; b.seqs = &q; b.n_prefill_tokens = other.len;
            pb_step_result res;
            pb_candidates c;
            PB_REQUIRE(pb_executor_execute(ex, &b, &res, &c) == PB_OK);
            other.n_cached = other.len;
            other.tok[other.len++] = c.token[0];
        }
        for (int k = 0; k < 3; k++) PB_REQUIRE(step_(ex, o1, 1, bs, &pool, 1, NULL, NULL, 0) == PB_OK);
        /* swap a back in to fresh GPU blocks (the test pool's order is shuffled) */
        for (int32_t i = 0; i < nb; i++) { a.bt[i] = pool_take_(&pool); in[i].src = 15 - i; in[i].dst = a.bt[i]; }
        a.nb = nb;
        memset(&b, 0, sizeof b);
        b.swap_in = in;
        b.n_swap_in = nb;
        b.block_size = bs;
        b.n_top = 1;
        pb_step_result res;
        PB_REQUIRE(pb_executor_execute(ex, &b, &res, NULL) == PB_OK);   /* swap only */
        for (int k = 8; k < 20; k++) PB_REQUIRE(step_(ex, one, 1, bs, &pool, 1, NULL, NULL, 0) == PB_OK);
        PB_CHECK(same_tokens_(&a, &ref));
        pb_real_exec_stats stt;
        pb_real_exec_get_stats(ex, &stt);
        PB_CHECK_EQ_INT(stt.swapped_out_blocks, nb);
        PB_CHECK_EQ_INT(stt.swapped_in_blocks, nb);
        free(pool.free_list);
        pb_executor_destroy(ex);
    }
}

PB_TEST(recompute_equals_the_uninterrupted_run) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = load_(MODELS[mi]);
        tseq ref;
        seq_init_(&ref, 4, 4, 11, 8, m.vocab);
        run_alone_(&m, 2, &ref, 25, 0.0f);
        pb_executor *ex = make_(&m, 2, 128, 0, 0.0f);
        tpool pool;
        pool_init_(&pool, 128, 2, 4);
        tseq s;
        seq_init_(&s, 4, 4, 11, 8, m.vocab);
        tseq *one[1] = {&s};
        for (int k = 0; k < 10; k++) PB_REQUIRE(step_(ex, one, 1, 2, &pool, 1, NULL, NULL, 0) == PB_OK);
        /* preempt by recompute: drop the KV, then prefill prompt + generated tokens */
        seq_free_blocks_(&s, &pool);
        s.n_cached = 0;
        for (int k = 10; k < 25; k++) PB_REQUIRE(step_(ex, one, 1, 2, &pool, 1, NULL, NULL, 0) == PB_OK);
        PB_CHECK(same_tokens_(&s, &ref));
        free(pool.free_list);
        pb_executor_destroy(ex);
    }
}

PB_TEST(copy_on_write_fork_continues_like_the_parent) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = load_(MODELS[mi]);
        int32_t bs = 16;
        tseq ref;
        seq_init_(&ref, 1, 1, 21, 12, m.vocab);
        run_alone_(&m, bs, &ref, 10, 0.0f);
        pb_executor *ex = make_(&m, bs, 32, 0, 0.0f);
        tpool pool;
        pool_init_(&pool, 32, bs, 6);
        tseq a, c;
        seq_init_(&a, 1, 1, 21, 12, m.vocab);
        tseq *one[1] = {&a};
        PB_REQUIRE(step_(ex, one, 1, bs, &pool, 1, NULL, NULL, 0) == PB_OK);   /* prompt */
        /* fork: c shares a's blocks; its last (partial) block is copied before the
           next decode writes into it (copy-on-write) */
        c = a;
        c.id = 2;
        int32_t last = a.nb - 1;
        c.bt[last] = pool_take_(&pool);
        pb_block_pair cp = {a.bt[last], c.bt[last]};
        tseq *both[2] = {&a, &c};
        PB_REQUIRE(step_(ex, both, 2, bs, &pool, 1, NULL, &cp, 1) == PB_OK);
        for (int k = 2; k < 10; k++) PB_REQUIRE(step_(ex, both, 2, bs, &pool, 1, NULL, NULL, 0) == PB_OK);
        PB_CHECK(same_tokens_(&a, &ref));
        PB_CHECK(same_tokens_(&c, &ref));     /* greedy: the fork repeats the parent */
        free(pool.free_list);
        pb_executor_destroy(ex);
    }
}

PB_TEST(a_corrupted_kv_block_changes_the_output) {
    /* negative control: without the copy-on-write copy, the fork reads a block that
       its parent keeps writing, and its tokens or logprobs differ */
    pb_model m = load_("tiny-opt");
    int32_t bs = 16;
    tseq ref;
    seq_init_(&ref, 1, 1, 21, 12, m.vocab);
    run_alone_(&m, bs, &ref, 10, 0.0f);
    pb_executor *ex = make_(&m, bs, 32, 0, 0.0f);
    tpool pool;
    pool_init_(&pool, 32, bs, 6);
    tseq a, c;
    seq_init_(&a, 1, 1, 21, 12, m.vocab);
    tseq *one[1] = {&a};
    PB_REQUIRE(step_(ex, one, 1, bs, &pool, 1, NULL, NULL, 0) == PB_OK);
    c = a;
    c.id = 2;
    c.bt[a.nb - 1] = pool_take_(&pool);      /* a fresh (zero) block, no copy */
    tseq *both[2] = {&a, &c};
    for (int k = 1; k < 10; k++) PB_REQUIRE(step_(ex, both, 2, bs, &pool, 1, NULL, NULL, 0) == PB_OK);
    PB_CHECK(same_tokens_(&a, &ref));
    PB_CHECK(!same_tokens_(&c, &ref));
    free(pool.free_list);
    pb_executor_destroy(ex);
}

PB_TEST(seeded_sampling_is_reproducible_and_batch_independent) {
    pb_model m = load_("tiny-llama");
    tseq a1, a2, b1;
    seq_init_(&a1, 5, 9, 12, 1, m.vocab);
    run_alone_(&m, 16, &a1, 15, 0.8f);
    seq_init_(&a2, 5, 9, 12, 1, m.vocab);
    run_alone_(&m, 0, &a2, 15, 0.8f);
    PB_CHECK(same_tokens_(&a1, &a2));          /* same seed, other layout: same draws */
    seq_init_(&b1, 6, 10, 12, 1, m.vocab);     /* another request */
    run_alone_(&m, 16, &b1, 15, 0.8f);
    PB_CHECK(memcmp(a1.tok + 12, b1.tok + 12, 15 * sizeof(int32_t)) != 0);
    /* together in one batch */
    pb_executor *ex = make_(&m, 16, 16, 0, 0.8f);
    tpool pool;
    pool_init_(&pool, 16, 16, 2);
    tseq x, y;
    seq_init_(&x, 5, 9, 12, 1, m.vocab);
    seq_init_(&y, 6, 10, 12, 1, m.vocab);
    tseq *both[2] = {&y, &x};
    for (int k = 0; k < 15; k++) PB_REQUIRE(step_(ex, both, 2, 16, &pool, 1, NULL, NULL, 0) == PB_OK);
    PB_CHECK(same_tokens_(&x, &a1));
    PB_CHECK(same_tokens_(&y, &b1));
    free(pool.free_list);
    pb_executor_destroy(ex);
}

PB_TEST(top_n_candidates_for_beam_search) {
    pb_model m = load_("tiny-opt");
    pb_executor *ex = make_(&m, 16, 8, 0, 0.0f);
    tpool pool;
    pool_init_(&pool, 8, 16, 1);
    tseq s;
    seq_init_(&s, 1, 1, 7, 1, m.vocab);
    tseq *one[1] = {&s};
    pb_candidates c;
    PB_REQUIRE(step_(ex, one, 1, 16, &pool, 8, &c, NULL, 0) == PB_OK);
    PB_CHECK_EQ_INT(c.n, 8);
    double mass = 0;
    for (int k = 0; k < c.n; k++) {
        if (k) PB_CHECK(c.logprob[k] <= c.logprob[k - 1]);
        for (int j = 0; j < k; j++) PB_CHECK(c.token[j] != c.token[k]);
        mass += exp(c.logprob[k]);
    }
    PB_CHECK(mass > 0 && mass <= 1.0 + 1e-5);
    free(pool.free_list);
    pb_executor_destroy(ex);
}

PB_TEST(bad_batches_are_rejected_and_leave_the_cache_alone) {
    pb_model m = load_("tiny-opt");
    pb_executor *ex = make_(&m, 16, 4, 2, 0.0f);
    int32_t toks[8] = {1, 2, 3, 4, 5, 6, 7, 8}, bt_bad[1] = {4}, bt[1] = {0};
    pb_batch_seq q;
    memset(&q, 0, sizeof q);
    q.seq_id = 1; q.is_prefill = true; q.n_new = 8; q.context_len = 8; q.sample = true;
    q.block_table = bt_bad; q.n_blocks = 1; q.tokens = toks;
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = 1; b.seqs = &q; b.block_size = 16; b.n_top = 1;
    pb_step_result res;
    pb_candidates c;
    PB_CHECK(pb_executor_execute(ex, &b, &res, &c) == PB_ERR_INVALID);    /* block 4 of 4 */
    q.block_table = bt;
    b.block_size = 8;
    PB_CHECK(pb_executor_execute(ex, &b, &res, &c) == PB_ERR_INVALID);    /* block size */
    b.block_size = 16;
    b.n_top = PB_MAX_TOP + 1;
    PB_CHECK(pb_executor_execute(ex, &b, &res, &c) == PB_ERR_INVALID);
    b.n_top = 1;
    pb_block_pair sw = {0, 2};                                              /* cpu block 2 of 2 */
    b.swap_out = &sw; b.n_swap_out = 1;
    PB_CHECK(pb_executor_execute(ex, &b, &res, &c) == PB_ERR_INVALID);
    b.n_swap_out = 0;
    toks[3] = m.vocab;                                                      /* token out of range */
    PB_CHECK(pb_executor_execute(ex, &b, &res, &c) == PB_ERR_INVALID);
    toks[3] = 4;
    q.n_cached = 1;                                                         /* context != cached + new */
    PB_CHECK(pb_executor_execute(ex, &b, &res, &c) == PB_ERR_INVALID);
    q.n_cached = 0;
    PB_CHECK(pb_executor_execute(ex, &b, &res, &c) == PB_OK);
    PB_CHECK(res.latency_s > 0 && c.n == 1);
    pb_executor_destroy(ex);
    /* contiguous executors have no block copies */
    pb_executor *cx = make_(&m, 0, 0, 0, 0.0f);
    q.block_table = NULL; q.n_blocks = 0; q.kv_offset = 3;
    b.block_size = 0;
    pb_block_pair cp = {0, 1};
    b.copies = &cp; b.n_copies = 1;
    PB_CHECK(pb_executor_execute(cx, &b, &res, &c) == PB_ERR_INVALID);
    b.n_copies = 0;
    PB_CHECK(pb_executor_execute(cx, &b, &res, &c) == PB_OK);
    pb_executor_destroy(cx);
}

PB_TEST(meta_build_orders_prefill_rows_first_and_checks) {
    pb_model m = load_("tiny-llama");
    pb_kv_cache_shape sh = {64, 2, 16, 4, PB_KV_F32, PB_KV_CACHE_AUTO, 0.0f};
    int32_t t1[10], t2[10], bt1[3] = {5, 9, 2}, bt2[3] = {7, 8, 1};
    for (int i = 0; i < 10; i++) { t1[i] = i; t2[i] = 100 + i; }
    pb_batch_seq q[2];
    memset(q, 0, sizeof q);
    q[0].seq_id = 1; q[0].n_new = 1; q[0].n_cached = 9; q[0].context_len = 10; q[0].sample = true;
    q[0].block_table = bt1; q[0].n_blocks = 3; q[0].tokens = t1;
    q[1].seq_id = 2; q[1].is_prefill = true; q[1].n_new = 6; q[1].n_cached = 0;
    q[1].context_len = 6; q[1].sample = true; q[1].block_table = bt2; q[1].n_blocks = 2;
    q[1].tokens = t2;
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = 2; b.seqs = q; b.block_size = 4; b.n_top = 1;
    pb_fwd_meta fm;
    memset(&fm, 0, sizeof fm);
    PB_REQUIRE(pb_fwd_meta_build(&fm, &b, &m, &sh, 0) == PB_OK);
    PB_CHECK(pb_fwd_meta_check(&fm, &b) == PB_OK);
    PB_CHECK_EQ_INT(fm.T, 7);
    PB_CHECK_EQ_INT(fm.n_pf_tok, 6);
    PB_CHECK_EQ_INT(fm.tokens[0], 100);
    PB_CHECK_EQ_INT(fm.tokens[6], 9);
    PB_CHECK_EQ_INT(fm.slots[5], 8 * 4 + 1);        /* position 5 -> block 8, offset 1 */
    PB_CHECK_EQ_INT(fm.slots[6], 2 * 4 + 1);        /* position 9 -> block 2, offset 1 */
    PB_CHECK_EQ_INT(fm.sample_rows[0], 5);          /* the prefill seq samples first */
    PB_CHECK_EQ_INT(fm.sample_seq[0], 1);
    PB_CHECK_EQ_INT(fm.sample_rows[1], 6);
    PB_CHECK_EQ_INT(fm.ctx_lens[6], 10);
    q[0].n_blocks = 2;                              /* too short a table */
    PB_CHECK(pb_fwd_meta_build(&fm, &b, &m, &sh, 0) == PB_ERR_INVALID);
    pb_fwd_meta_free(&fm);
}

PB_TEST(tensor_parallel_shard_shapes) {
    pb_model m = load_("tiny-opt");
    pb_cpu_ctx c1 = {0};
    pb_lm_params lp;
    memset(&lp, 0, sizeof lp);
    lp.spec = &m; lp.ops = &pb_model_ops_cpu; lp.ctx = &c1; lp.tp_rank = 0; lp.tp_size = 1;
    lp.weight_seed = 5; lp.max_tokens_hint = 16;
    pb_lm *full = NULL;
    PB_REQUIRE(pb_lm_create(&lp, &full) == PB_OK);
    lp.tp_size = 3;
    pb_lm *bad = NULL;
    PB_CHECK(pb_lm_create(&lp, &bad) == PB_ERR_INVALID);   /* 4 heads over 3 shards */
    PB_CHECK(pb_lm_local_heads(full) == 4);
    lp.tp_size = 2;
    pb_lm *sh0 = NULL;
    PB_REQUIRE(pb_lm_create(&lp, &sh0) == PB_OK);
    PB_CHECK(pb_lm_local_heads(sh0) == 2 && pb_lm_local_kv_heads(sh0) == 2);
    PB_CHECK(pb_lm_weight_bytes(sh0) < pb_lm_weight_bytes(full));
    pb_lm_destroy(sh0);
    pb_lm_destroy(full);
}

/* ---- tensor parallelism on the cpu backend: 2 threads, a summing all-reduce ---- */

typedef struct {
    pb_cpu_ctx cpu;                 /* first: the cpu ops see a pb_cpu_ctx */
    int rank;
    pthread_barrier_t *bar;
    float **bufs;                   /* [2] posted buffers                  */
    pb_lm *lm;
    pb_kv_cache cache;
    const pb_fwd_meta *meta;
    int32_t tok[16];
    float lp[16];
    int32_t nout[2];
    pb_status st;
} tp_rank_;

static pb_status tp_allreduce_(void *ctx, void *x, int64_t n) {
    tp_rank_ *r = ctx;
    float *tmp = pb_xmalloc((size_t)n * sizeof(float));
    r->bufs[r->rank] = x;
    pthread_barrier_wait(r->bar);
    for (int64_t i = 0; i < n; i++) tmp[i] = r->bufs[0][i] + r->bufs[1][i];
    pthread_barrier_wait(r->bar);
    memcpy(x, tmp, (size_t)n * sizeof(float));
    free(tmp);
    return PB_OK;
}

static void *tp_run_(void *arg) {
    tp_rank_ *r = arg;
    pb_sample_params sp = {0.0f, 1.0f};
    r->st = pb_lm_forward(r->lm, r->meta, &r->cache, 8, &sp, r->rank == 0 ? r->tok : NULL,
                          r->lp, r->nout);
    return NULL;
}

PB_TEST(tensor_parallel_shards_compute_the_full_model) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = load_(MODELS[mi]);
        pb_model_ops ops = pb_model_ops_cpu;
        ops.allreduce = tp_allreduce_;
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, 2);
        float *bufs[2];
        tp_rank_ R[2];
        memset(R, 0, sizeof R);
        pb_lm_params lp;
        memset(&lp, 0, sizeof lp);
        lp.spec = &m; lp.ops = &ops; lp.tp_size = 2; lp.weight_seed = 1234; lp.max_tokens_hint = 32;
        for (int k = 0; k < 2; k++) {
            R[k].rank = k; R[k].bar = &bar; R[k].bufs = bufs;
            lp.ctx = &R[k]; lp.tp_rank = k;
            PB_REQUIRE(pb_lm_create(&lp, &R[k].lm) == PB_OK);
            PB_REQUIRE(pb_kv_cache_alloc(&R[k].cache, R[k].lm, 8, 4, false) == PB_OK);
        }
        /* the same step on one unsharded model (the cpu executor, same weights) */
        pb_executor *ex = make_(&m, 4, 8, 0, 0.0f);
        tpool pool;
        pool_init_(&pool, 8, 4, 1);
        tseq a, b;
        seq_init_(&a, 1, 1, 9, 2, m.vocab);
        seq_init_(&b, 2, 2, 5, 2, m.vocab);
        tseq *two[2] = {&a, &b};
        pb_candidates full[2];
        for (int stepi = 0; stepi < 3; stepi++) {
            /* build the batch the executor is about to run, for the shards */
            pb_batch_seq q[2];
            pb_batch bt;
            memset(&bt, 0, sizeof bt);
            memset(q, 0, sizeof q);
            for (int i = 0; i < 2; i++) {
                tseq *s = two[i];
                seq_place_(s, &pool, true);
                q[i].seq_id = s->id; q[i].group_id = s->group; q[i].n_cached = s->n_cached;
                q[i].n_new = s->len - s->n_cached; q[i].context_len = s->len;
                q[i].is_prefill = s->n_cached == 0; q[i].sample = true;
                q[i].block_table = s->bt; q[i].n_blocks = s->nb; q[i].tokens = s->tok;
            }
            bt.n_seqs = 2; bt.seqs = q; bt.block_size = 4; bt.n_top = 8;
            pb_fwd_meta fm;
            memset(&fm, 0, sizeof fm);
            PB_REQUIRE(pb_fwd_meta_build(&fm, &bt, &m, &R[0].cache.shape, 99) == PB_OK);
            pthread_t th[2];
            for (int k = 0; k < 2; k++) {
                R[k].meta = &fm;
                pthread_create(&th[k], NULL, tp_run_, &R[k]);
            }
            for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
            PB_REQUIRE(R[0].st == PB_OK && R[1].st == PB_OK);
            PB_REQUIRE(step_(ex, two, 2, 4, &pool, 8, full, NULL, 0) == PB_OK);
            for (int i = 0; i < 2; i++) {       /* meta sample order: both prefill/decode alike */
                int si = fm.sample_seq[i];
                PB_CHECK_EQ_INT(R[0].nout[i], full[si].n);
                for (int k = 0; k < 8; k++) {
                    PB_CHECK_NEAR(R[0].lp[i * 8 + k], full[si].logprob[k], 1e-4);
                    if (k < 2) PB_CHECK_EQ_INT(R[0].tok[i * 8 + k], full[si].token[k]);
                }
            }
            pb_fwd_meta_free(&fm);
        }
        for (int k = 0; k < 2; k++) {
            pb_kv_cache_free(&R[k].cache, R[k].lm);
            pb_lm_destroy(R[k].lm);
        }
        pthread_barrier_destroy(&bar);
        free(pool.free_list);
        pb_executor_destroy(ex);
    }
}

/* ---- NVTX-style ranges stay balanced when an op fails inside one ---- */

static int range_depth_, gemm_calls_, gemm_fail_at_;
static void count_range_(void *ctx, const char *name) { (void)ctx; range_depth_ += name ? 1 : -1; }
static pb_status failing_gemm_(void *ctx, void *out, int out_f32, const void *in, const void *w, int32_t M,
                               int32_t N, int32_t K) {
    if (++gemm_calls_ == gemm_fail_at_) return PB_ERR_CUDA;
    return pb_model_ops_cpu.gemm(ctx, out, out_f32, in, w, M, N, K);
}

PB_TEST(ranges_close_when_an_op_fails) {
    pb_model m = load_("tiny-opt");
    pb_model_ops ops = pb_model_ops_cpu;
    ops.range = count_range_;
    ops.gemm = failing_gemm_;
    pb_cpu_ctx c = {0};
    pb_lm_params lp;
    memset(&lp, 0, sizeof lp);
    lp.spec = &m; lp.ops = &ops; lp.ctx = &c; lp.tp_size = 1; lp.weight_seed = 3; lp.max_tokens_hint = 16;
    pb_lm *lm = NULL;
    PB_REQUIRE(pb_lm_create(&lp, &lm) == PB_OK);
    pb_kv_cache cache;
    PB_REQUIRE(pb_kv_cache_alloc(&cache, lm, 8, 4, false) == PB_OK);
    tpool pool;
    pool_init_(&pool, 8, 4, 1);
    tseq a;
    seq_init_(&a, 1, 1, 6, 2, m.vocab);
    seq_place_(&a, &pool, true);
    pb_batch_seq q;
    memset(&q, 0, sizeof q);
    q.seq_id = 1; q.group_id = 1; q.n_new = a.len; q.context_len = a.len; q.is_prefill = true;
    q.sample = true; q.block_table = a.bt; q.n_blocks = a.nb; q.tokens = a.tok;
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = 1; b.seqs = &q; b.block_size = 4; b.n_top = 2;
    pb_fwd_meta fm;
    memset(&fm, 0, sizeof fm);
    PB_REQUIRE(pb_fwd_meta_build(&fm, &b, &m, &cache.shape, 5) == PB_OK);
    pb_sample_params sp = {0.0f, 1.0f};
    int32_t tok[2], nout[1];
    float lps[2];
    /* a clean pass counts the GEMMs: 4 per layer + the LM head */
    gemm_calls_ = 0; gemm_fail_at_ = -1; range_depth_ = 0;
    PB_CHECK(pb_lm_forward(lm, &fm, &cache, 2, &sp, tok, lps, nout) == PB_OK);
    PB_CHECK_EQ_INT(range_depth_, 0);
    const int n_gemm = gemm_calls_;
    PB_CHECK_EQ_INT(n_gemm, 4 * m.n_layers + 1);
    for (int k = 1; k <= n_gemm; k++) {       /* a failure in every layer's GEMMs and the head's */
        gemm_calls_ = 0; gemm_fail_at_ = k; range_depth_ = 0;
        PB_CHECK(pb_lm_forward(lm, &fm, &cache, 2, &sp, tok, lps, nout) == PB_ERR_CUDA);
        PB_CHECK_EQ_INT(range_depth_, 0);
    }
    pb_fwd_meta_free(&fm);
    pb_kv_cache_free(&cache, lm);
    pb_lm_destroy(lm);
    pb_cpu_ctx_free(&c);
    free(pool.free_list);
}

/* ---- the GPU's attention routing, on the cpu (model.h pb_attention_route) ---- */

PB_TEST(split_attention_routing_matches_the_per_row_path) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = load_(MODELS[mi]);
        for (int layout = 0; layout < 2; layout++) {
            int32_t bs = layout ? 0 : 4;
            pb_executor *ex[2];
            for (int k = 0; k < 2; k++) {
                pb_real_exec_params p;
                pb_real_exec_params_default(&p);
                p.block_size = bs;
                p.num_gpu_blocks = 128;
                p.num_slots = (int64_t)MAXT * 16;
                p.weight_seed = 1234;
                p.cpu_split_attention = k == 1;
                PB_REQUIRE(pb_executor_cpu_create(&m, &p, &ex[k]) == PB_OK);
            }
            /* steps mixing prompts, decodes and a prompt with a cached prefix */
            tseq s[2][3];
            tpool pool[2];
            for (int k = 0; k < 2; k++) {
                pool_init_(&pool[k], 128, bs ? bs : 1, 3);
                seq_init_(&s[k][0], 1, 1, 13, 4, m.vocab);
                seq_init_(&s[k][1], 2, 2, 30, 4, m.vocab);
                seq_init_(&s[k][2], 3, 3, 25, 4, m.vocab);
                s[k][2].len = 10;       /* first 10 tokens now, the rest as a cached-prefix prefill */
            }
            double max_err = 0;
            for (int step = 0; step < 8; step++) {
                for (int k = 0; k < 2; k++) {
                    tseq *in[3] = {&s[k][0], &s[k][1], &s[k][2]};
                    if (step == 1) {     /* restore seq 3's real prompt: 15 tokens with 10 cached */
                        tseq fresh;
                        seq_init_(&fresh, 3, 3, 25, 4, m.vocab);
                        memcpy(s[k][2].tok, fresh.tok, 25 * sizeof(int32_t));
                        s[k][2].len = 25;
                        s[k][2].n_cached = 10;
                    }
                    PB_REQUIRE(step_(ex[k], in, 3, bs, &pool[k], 1, NULL, NULL, 0) == PB_OK);
                }
                for (int i = 0; i < 3; i++) {
                    int32_t last = s[0][i].len - 1;
                    PB_CHECK_EQ_INT(s[0][i].tok[last], s[1][i].tok[last]);
                    max_err = fmax(max_err, fabs(s[0][i].lp[last] - s[1][i].lp[last]));
                    s[1][i].tok[last] = s[0][i].tok[last];   /* continue on the same tokens */
                }
            }
            fprintf(stderr, "  %s %s: split routing max |logprob diff| %.3g\n", m.name,
                    bs ? "paged" : "contiguous", max_err);
            PB_CHECK(max_err < 1e-4);
            for (int k = 0; k < 2; k++) { free(pool[k].free_list); pb_executor_destroy(ex[k]); }
        }
    }
}

/* ---- pagedbench profile ---- */

PB_TEST(profile_command_writes_a_loadable_profile_on_the_cpu_executor) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/pb_test_profile_%d.csv", (int)getpid());
    char *argv[] = {"profile", "--executor", "cpu", "--model", "tiny-llama", "--out", path,
                    "--kv-gib", "0.01", "--batches", "1,3", "--contexts", "8,40",
                    "--prefill", "16,48", "--prompt-len", "20", "--reps", "3", "--warmup", "1", NULL};
    int argc = (int)(sizeof argv / sizeof argv[0]) - 1;
    PB_REQUIRE(pb_cmd_profile(argc, argv) == 0);
    pb_sim_profile *prof = NULL;
    char err[512] = "";
    PB_REQUIRE(pb_sim_profile_load(path, &prof, err, sizeof err) == PB_OK);
    PB_CHECK(pb_sim_profile_check(prof) == PB_OK);
    PB_CHECK(pb_sim_profile_latency(prof, 0, 3, 40) > 0);
    PB_CHECK(pb_sim_profile_latency(prof, 48, 0, 0) > 0);
    pb_sim_profile_destroy(prof);
    remove(path);
    /* usage errors and the no-GPU path */
    char *bad[] = {"profile", "--executor", "tpu", "--out", path, NULL};
    PB_CHECK_EQ_INT(pb_cmd_profile(5, bad), 2);
    char *noout[] = {"profile", "--executor", "cpu", NULL};
    PB_CHECK_EQ_INT(pb_cmd_profile(3, noout), 2);
#ifndef PB_HAVE_CUDA
    char *gpu[] = {"profile", "--out", path, NULL};
    PB_CHECK_EQ_INT(pb_cmd_profile(3, gpu), 77);
#endif
    char *help[] = {"profile", "--help", NULL};
    PB_CHECK_EQ_INT(pb_cmd_profile(2, help), 0);
}

PB_TEST_MAIN()
