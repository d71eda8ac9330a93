/* test_launch_baselines.c -- the two baselines of vLLM's launch comparison through the
 * engine, with an executor that records every step's batch:
 *   HF Transformers (policy_hf.c): batches form only when nothing runs, in arrival
 *     order, under run_hf's packing rule (longest prompt + longest output <= max_len)
 *     and max_batch; the batch's prompts run in one padded step (rows x longest
 *     prompt, no decodes); nothing joins a running batch; every member completes when
 *     the batch does; parallel samples hold a region each (no sharing);
 *   TGI (policy_tgi.c): joining steps are prefill-only; the running sequences'
 *     charges (prompt + max_new_tokens + 15 per sequence) never pass the token
 *     budget; with the batch running, waiting requests join only after
 *     max_waiting_tokens decode steps or when waiting_served_ratio x the running
 *     sequences of them fit; nothing is preempted.
 *   ctest --test-dir build/cpu -R test_launch_baselines */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "baselines.h"
#include "block_manager.h"
#include "config.h"
#include "engine.h"
#include "kv_contiguous.h"
#include "metrics.h"
#include "engine_rig.h"
#include "pbtest.h"
#include "rng.h"

/* ---- a recording executor: 10 ms a step, every batch's counts kept ---- */
typedef struct {
    int32_t n_seqs, n_decode;
    int64_t n_prefill_tokens, n_padded_tokens;
    int32_t max_prompt;       /* longest prefill row of the step */
} step_rec;
typedef struct {
    step_rec *r;
    int64_t n, cap;
} recorder;

static pb_status rec_execute(pb_executor *ex, const pb_batch *b, pb_step_result *res, pb_candidates *cand) {
    (void)cand;
    recorder *rc = ex->impl;
    if (rc->n == rc->cap) {
        rc->cap = rc->cap ? 2 * rc->cap : 256;
        rc->r = pb_xrealloc(rc->r, (size_t)rc->cap * sizeof *rc->r);
    }
    step_rec *s = &rc->r[rc->n++];
    memset(s, 0, sizeof *s);
    s->n_seqs = b->n_seqs;
    s->n_decode = b->n_decode;
    s->n_prefill_tokens = b->n_prefill_tokens;
    s->n_padded_tokens = b->n_padded_tokens;
    for (int32_t i = 0; i < b->n_seqs; i++)
        if (b->seqs[i].is_prefill) s->max_prompt = PB_MAX(s->max_prompt, b->seqs[i].context_len);
    memset(res, 0, sizeof *res);
    res->latency_s = 0.01;
    return PB_OK;
}
static void rec_destroy(pb_executor *ex) {
    recorder *rc = ex->impl;
    free(rc->r);
    free(rc);
    free(ex);
}
static const pb_executor_i REC_I = {.name = "recorder", .execute = rec_execute, .destroy = rec_destroy};

typedef struct {
    pb_kv_manager *kv;
    pb_policy *policy;
    pb_executor *ex;
    recorder *rec;
    pb_metrics *m;
    pb_status st;
    int64_t max_charge;       /* TGI: the largest sum of running charges seen */
} run_out;

static int64_t tgi_charge(const pb_group *g) {
    return (int64_t)PB_MAX(g->n_seqs, g->max_seqs) * (g->prompt_len + g->output_len + 15);
}

/* run trace t with policy `name` (options yaml) over kv (engine_rig.h) */
static void run(run_out *o, const pb_trace *t, pb_kv_manager *kv, const char *name, const char *yaml) {
    memset(o, 0, sizeof *o);
    o->kv = kv;
    pb_config *c = NULL;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_ASSERT(pb_config_load_string("sys.yaml", yaml, &c, &e) == PB_OK);
    PB_ASSERT((!strcmp(name, "hf") ? pb_policy_hf_create : pb_policy_tgi_create)(pb_config_root(c), &o->policy, &e) ==
              PB_OK);
    pb_config_destroy(c);
    o->rec = pb_xcalloc(1, sizeof *o->rec);
    o->ex = pb_xcalloc(1, sizeof *o->ex);
    o->ex->iface = &REC_I;
    o->ex->impl = o->rec;
    o->m = pb_metrics_create(true);
    o->st = pb_test_run_engine(o->kv, o->policy, o->ex, t, o->m);
}

static void run_free(run_out *o) {
    pb_metrics_destroy(o->m);
    pb_executor_destroy(o->ex);
    pb_policy_destroy(o->policy);
    pb_kv_destroy(o->kv);
}

static void trace_make(pb_trace *t, int n, double gap_s, uint64_t seed, int32_t n_samples) {
    pb_rng r;
    pb_rng_seed(&r, seed, 5);
    t->n = n;
    t->reqs = pb_xcalloc((size_t)n, sizeof *t->reqs);
    for (int i = 0; i < n; i++) {
        pb_request *q = &t->reqs[i];
        q->id = i;
        q->arrival_s = gap_s * i;
        q->prompt_len = 4 + (int32_t)pb_rng_below(&r, 1020);
        q->output_len = 4 + (int32_t)pb_rng_below(&r, 1020);
        q->n = n_samples;
        q->beam_width = 1;
        q->prefix_id = -1;
        q->conversation_id = -1;
    }
}

static pb_kv_manager *contiguous_max(int64_t slots) {
    pb_kv_contiguous_params kp = {slots, PB_RESV_MAX, 2048};
    pb_kv_manager *kv = NULL;
    PB_ASSERT(pb_kv_contiguous_create(&kp, &kv) == PB_OK);
    return kv;
}

static void hf_semantics(int32_t n_samples, const char *yaml, int32_t expect_max) {
    pb_trace t;
    trace_make(&t, 40, 0.0, 11, n_samples);
    run_out o;
    run(&o, &t, contiguous_max(15728), "hf", yaml);
    PB_REQUIRE(o.st == PB_OK);
    int64_t nr;
    const pb_req_metrics *rq = pb_metrics_requests(o.m, &nr);
    PB_REQUIRE(nr == 40);
    double *raw = pb_xmalloc((size_t)nr * sizeof *raw);
    for (int64_t i = 0; i < nr; i++) raw[i] = rq[i].finish_s;
    pb_policy_finalize(o.policy, o.m);
    /* batches: consecutive ids, packing rule, size cap, one common finish */
    int64_t prev_b = -1, first = 0, biggest = 0, n_batches = 0;
    for (int64_t i = 0; i <= nr; i++) {
        int64_t b = i < nr ? pb_policy_hf_batch_of(o.policy, i) : -2;
        if (i < nr) PB_CHECK(b >= 0 && b >= prev_b);   /* arrival order, every request ran */
        if (b == prev_b) continue;
        if (prev_b >= 0) {   /* batch [first, i) */
            int32_t mp = 0, mo = 0;
            double end = 0;
            for (int64_t k = first; k < i; k++) {
                mp = PB_MAX(mp, t.reqs[k].prompt_len);
                mo = PB_MAX(mo, t.reqs[k].output_len);
                end = fmax(end, raw[k]);
            }
            if (i - first > 1) PB_CHECK(mp + mo <= 2048);
            for (int64_t k = first; k < i; k++) PB_CHECK_NEAR(rq[k].finish_s, end, 0);
            biggest = PB_MAX(biggest, i - first);
            n_batches++;
        }
        prev_b = b;
        first = i;
    }
    PB_CHECK(n_batches > 1);
    PB_CHECK(biggest <= expect_max);
    /* prompt steps are padded (rows x longest, no decodes); a batch never grows */
    int padded_steps = 0;
    for (int64_t i = 0; i < o.rec->n; i++) {
        const step_rec *s = &o.rec->r[i];
        if (s->n_prefill_tokens == 0) continue;
        padded_steps++;
        PB_CHECK_EQ_INT(s->n_decode, 0);
        PB_CHECK_EQ_INT(s->n_padded_tokens, (int64_t)(s->n_seqs - s->n_decode) * s->max_prompt);
    }
    PB_CHECK_EQ_INT(padded_steps, n_batches);
    /* no sharing: a request with n samples held n regions */
    pb_kv_contiguous_stats cs;
    pb_kv_contiguous_stats_get(o.kv, &cs);
    if (n_samples > 1) PB_CHECK(cs.n_forks > 0 && cs.copied_slots > 0);
    free(raw);
    run_free(&o);
    pb_trace_free(&t);
}

/* 15,728 slots hold 7 max-length (2048) sequences: 7 requests, or 2 of 3 samples */
PB_TEST(hf_batches_memory_bound) { hf_semantics(1, "max_batch: 0\n", 7); }
PB_TEST(hf_batches_max_batch) { hf_semantics(1, "max_batch: 3\n", 3); }
PB_TEST(hf_parallel_samples_no_sharing) { hf_semantics(3, "max_batch: 0\n", 2); }

static pb_kv_manager *paged(int32_t blocks) {
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.n_gpu_blocks = blocks;
    pp.n_cpu_blocks = 0;
    pb_kv_manager *kv = NULL;
    PB_ASSERT(pb_paged_kv_create(&pp, &kv) == PB_OK);
    return kv;
}

/* TGI: the budget holds at every step, joining steps are prefill-only, nothing is
   preempted, everything completes; with the running batch, a join waits for
   max_waiting_tokens decode steps unless enough fit */
static void tgi_run(const char *yaml, bool strict, int32_t n_samples, int32_t max_wait) {
    pb_trace t;
    trace_make(&t, 60, 0.0, 12, n_samples);
    run_out o;
    run(&o, &t, paged(983), "tgi", yaml);   /* 15,728 slots */
    PB_REQUIRE(o.st == PB_OK);
    pb_run_summary sm;
    pb_metrics_summary(o.m, &sm);
    PB_CHECK_EQ_INT(sm.n_finished, 60);
    PB_CHECK_EQ_INT(sm.n_preempt_recompute + sm.n_preempt_swap, 0);
    int64_t prefills = 0, decodes_since = 0, short_joins = 0;
    for (int64_t i = 0; i < o.rec->n; i++) {
        const step_rec *s = &o.rec->r[i];
        if (s->n_prefill_tokens > 0) {
            PB_CHECK_EQ_INT(s->n_decode, 0);
            PB_CHECK_EQ_INT(s->n_padded_tokens, 0);
            if (i > 0 && decodes_since < max_wait) short_joins++;
            prefills++;
            decodes_since = 0;
        } else {
            decodes_since++;
        }
    }
    PB_CHECK(prefills > 1);
    PB_CHECK(short_joins < prefills);
    if (strict) {
        /* waiting_served_ratio so large that it never holds: a join before max_wait
           decode steps only into an empty batch -- every request that joined before
           it (first token at an earlier step's end; each step 10 ms) had finished */
        int64_t nr;
        const pb_req_metrics *rq = pb_metrics_requests(o.m, &nr);
        int64_t since = 0, bad = 0, checked = 0;
        for (int64_t i = 0; i < o.rec->n; i++) {
            if (o.rec->r[i].n_prefill_tokens == 0) { since++; continue; }
            if (i > 0 && since < max_wait) {
                checked++;
                for (int64_t k = 0; k < nr; k++)
                    if (rq[k].first_token_s < 0.01 * (double)(i + 1) - 1e-9 && rq[k].finish_s > 0.01 * (double)i + 1e-9)
                        bad++;
            }
            since = 0;
        }
        PB_CHECK_EQ_INT(bad, 0);
        PB_CHECK(checked > 0);
    }
    run_free(&o);
    pb_trace_free(&t);
}

PB_TEST(tgi_defaults) { tgi_run("max_batch_total_tokens: 0\n", false, 1, 20); }
PB_TEST(tgi_parallel_samples) { tgi_run("max_waiting_tokens: 5\n", false, 3, 5); }
PB_TEST(tgi_join_waits) { tgi_run("waiting_served_ratio: 1000000\nmax_waiting_tokens: 100000\n", true, 1, 100000); }

/* the budget: with a token budget of 4,000 no more than 4,000 charged tokens run at
   once (checked by the running requests' charges at every step through the
   per-request metrics: a request runs from its admission step to its finish) */
PB_TEST(tgi_budget_holds) {
    pb_trace t;
    trace_make(&t, 50, 0.0, 13, 1);
    run_out o;
    run(&o, &t, paged(983), "tgi", "max_batch_total_tokens: 4000\n");
    PB_REQUIRE(o.st == PB_OK);
    int64_t nr;
    const pb_req_metrics *rq = pb_metrics_requests(o.m, &nr);
    /* at each request's first token (its join), the charges of the requests then
       running: joined before or at it and finished after it */
    for (int64_t i = 0; i < nr; i++) {
        int64_t sum = 0;
        for (int64_t k = 0; k < nr; k++)
            if (rq[k].first_token_s <= rq[i].first_token_s && rq[k].finish_s > rq[i].first_token_s - 1e-12) {
                pb_group g;
                memset(&g, 0, sizeof g);
                g.n_seqs = 1;
                g.max_seqs = 1;
                g.prompt_len = t.reqs[k].prompt_len;
                g.output_len = t.reqs[k].output_len;
                sum += tgi_charge(&g);
            }
        PB_CHECK(sum <= 4000);
    }
    run_free(&o);
    pb_trace_free(&t);
}

PB_TEST(policy_options) {
    pb_config *c = NULL;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("sys.yaml", "waiting_served_ratio: -1\n", &c, &e) == PB_OK);
    pb_policy *p = NULL;
    PB_CHECK(pb_policy_tgi_create(pb_config_root(c), &p, &e) != PB_OK && p == NULL);
    pb_config_destroy(c);
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("sys.yaml", "max_batch: 2\n", &c, &e) == PB_OK);
    PB_REQUIRE(pb_policy_hf_create(pb_config_root(c), &p, &e) == PB_OK);
    PB_CHECK(pb_policy_is_hf(p) && !pb_policy_is_ft(p));
    pb_policy_destroy(p);
    pb_config_destroy(c);
}

PB_TEST_MAIN()
