/* test_token_equivalence.c -- the real engine on the cpu executor (tiny OPT / LLaMA)
 * produces the same tokens whatever the system, the block size, the batch, or the
 * preemption: a request's output is a function of the request alone.
 *
 *   - the same trace gives identical tokens under vLLM (paged), Orca (Oracle / Pow2 /
 *     Max, contiguous) and FasterTransformer (contiguous, request-level batches);
 *   - vLLM with block sizes 1, 2, 16, 32;
 *   - vLLM forced to preempt by swap and by recompute (a KV pool of a few blocks);
 *   - each request alone (the others arrive after it finished) == in the busy run;
 *   - parallel samples (n = 3, seeded top-p sampling) alone == in the busy run, and
 *     under swapping;
 *   - beam search (width 3) through the engine == a reference beam search run by
 *     hand on the executor (full prefill of every beam at every step);
 *   - shared prefixes (vLLM shares blocks, Orca recomputes them) give equal tokens;
 *   - vLLM v0.2 semantics (prompt-only / decode-only steps, padded prompt batches
 *     under a padding cap) give the tokens of v0.1's mixed steps, also under
 *     recompute preemption;
 *   - Sarathi-Serve's chunked prefill under token budgets of 5, 7 and 33 gives the
 *     tokens of vLLM v0.1, with parallel samples, beams, swap and recompute;
 *   - automatic prefix caching (policy prefix-cache) gives vLLM's tokens on shared
 *     prefixes and chatbot turns, with beam search and parallel sampling over cached
 *     blocks, and under swap and recompute preemption (small KV pools);
 *   - the prefix cache's CPU tier: cached blocks evicted from a small GPU pool spill
 *     to the CPU and later hits reload them, with the tokens of no tier (and of vLLM
 *     without caching), under recompute and swap preemption;
 *   - vLLM V1's steps (engine: v1: one token budget, decodes first, prompts in chunks,
 *     recompute only) under budgets of 5, 33 and 512 give v0.1's tokens, with and
 *     without its prefix cache, with parallel samples, in a pool small enough to
 *     preempt, on chat turns and with the CPU tier.
 * Paged vs contiguous equality is bit for bit: the cpu model computes every token
 * row as one query over the cache (model.h), and tokens AND log-probabilities are
 * compared exactly.
 *
 *   cmake --build build && (cd build && ctest -R test_token_equivalence --output-on-failure)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "baselines.h"
#include "beam.h"
#include "block_manager.h"
#include "engine.h"
#include "executor_real.h"
#include "kv_contiguous.h"
#include "metrics.h"
#include "pbtest.h"
#include "policy.h"
#include "rng.h"
#include "spec.h"
#include "trace.h"
#include "vllm_version.h"

/* ---- outputs collected through pb_engine_params.on_finish ---- */

#define MAX_REQ 32
#define MAX_SEQ 4
#define MAX_OUT 64

typedef struct {
    int32_t prompt[MAX_REQ][128], prompt_len[MAX_REQ];
    int32_t n_seqs[MAX_REQ];
    int32_t tok[MAX_REQ][MAX_SEQ][MAX_OUT];
    int32_t out_len[MAX_REQ];
    bool done[MAX_REQ];
} outputs;

static int cmp_seq_(const void *a, const void *b) { return memcmp(a, b, MAX_OUT * sizeof(int32_t)); }

static void on_finish_(void *user, const pb_group *g) {
    outputs *o = user;
    PB_ASSERT(g->id >= 0 && g->id < MAX_REQ && g->n_seqs <= MAX_SEQ);
    int32_t L = g->len - g->prompt_len;
    PB_ASSERT(L <= MAX_OUT);
    o->n_seqs[g->id] = g->n_seqs;
    o->out_len[g->id] = L;
    o->done[g->id] = true;
    PB_ASSERT(g->prompt_len <= 128);
    o->prompt_len[g->id] = g->prompt_len;
    memcpy(o->prompt[g->id], g->seqs[0]->tokens, (size_t)g->prompt_len * sizeof(int32_t));
    memset(o->tok[g->id], 0xff, sizeof o->tok[g->id]);
    for (int32_t i = 0; i < g->n_seqs; i++) {
        PB_ASSERT(g->seqs[i]->tokens);
        memcpy(o->tok[g->id][i], g->seqs[i]->tokens + g->prompt_len, (size_t)L * sizeof(int32_t));
    }
    /* samples / beams of a request in a canonical order */
    qsort(o->tok[g->id], (size_t)g->n_seqs, sizeof o->tok[g->id][0], cmp_seq_);
}

/* ---- systems ---- */

typedef enum { SYS_VLLM, SYS_ORCA_ORACLE, SYS_ORCA_POW2, SYS_ORCA_MAX, SYS_FT, SYS_APC } sys_kind;

typedef struct {
    sys_kind kind;
    int32_t block_size;         /* vLLM                                             */
    int32_t gpu_blocks, cpu_blocks;
    int64_t slots;              /* contiguous                                       */
    pb_preempt_mode preempt;
    float temperature;
    int32_t tier_blocks;        /* the prefix cache's CPU tier (SYS_APC); 0: none   */
} sys_cfg;

typedef struct {
    int64_t n_recompute, n_swap, n_finished, n_steps;
    int64_t n_partial;          /* batch entries of a prefill chunk that did not sample */
    int64_t hit_tokens;         /* prefix-cache hits (SYS_APC)                      */
    pb_paged_cache_stats cache; /* the manager's counters (SYS_APC)                 */
    pb_real_exec_stats ex;      /* the executor's counters */
} run_info;

/* How a vLLM system schedules: the policy (NULL = "vllm") with its options as YAML
   text (NULL = none), v0.2 steps when v02_max_paddings > 0, V1's steps
   (vllm_version.h: its step mode and preemption; the system's kind SYS_APC turns on
   its prefix cache, the knob, under the plain vllm policy) with this token budget when
   v1_budget > 0. */
typedef struct {
    const char *policy, *options;
    int32_t v02_max_paddings;
    int32_t v1_budget;
} sched_cfg;

static pb_model model_(const char *name) {
    pb_model m;
    pb_cfg_err err;
    memset(&err, 0, sizeof err);
    PB_ASSERT(pb_model_load(pb_spec_dir(), name, &m, &err) == PB_OK);
    return m;
}

/* Run the engine step by step, counting the prefill chunks that did not sample. */
static pb_status engine_run_(pb_engine *e, const pb_trace *t, pb_metrics *met, run_info *info) {
    pb_status st = pb_engine_begin(e, t, met);
    bool done = false;
    int64_t steps = 0;
    while (st == PB_OK && !done) {
        st = pb_engine_step(e, &done);
        if (st != PB_OK || pb_engine_steps(e) == steps) continue;
        steps = pb_engine_steps(e);
        const pb_batch *b = pb_engine_last_batch(e);
        for (int32_t i = 0; i < b->n_seqs; i++) info->n_partial += !b->seqs[i].sample;
    }
    pb_status st2 = pb_engine_end(e);
    return st != PB_OK ? st : st2;
}

static pb_status run_steps_(const pb_model *m, const sys_cfg *c, const pb_trace *t, outputs *o,
                            run_info *info, const sched_cfg *sc) {
    static const sched_cfg VLLM = {NULL, NULL, 0, 0};
    if (!sc) sc = &VLLM;
    memset(o, 0, sizeof *o);
    memset(info, 0, sizeof *info);
    pb_kv_manager *kv = NULL;
    pb_policy *pol = NULL;
    pb_config *opts = NULL;
    pb_cfg_err err;
    memset(&err, 0, sizeof err);
    pb_real_exec_params xp;
    pb_real_exec_params_default(&xp);
    xp.weight_seed = 31;
    xp.sample_seed = 5;
    xp.sampling.temperature = c->temperature;
    xp.sampling.top_p = 0.9f;
    xp.fixed_latency_s = 0.01;   /* deterministic clock: same schedule every run */
    xp.max_tokens_hint = 256;
    pb_status st;
    if (c->kind == SYS_VLLM || c->kind == SYS_APC) {
        pb_paged_params pp;
        pb_paged_params_default(&pp);
        pp.block_size = c->block_size;
        pp.n_gpu_blocks = c->gpu_blocks;
        pp.n_cpu_blocks = c->cpu_blocks;
        pp.prefix_caching = c->kind == SYS_APC;
        pp.n_tier_blocks = c->tier_blocks;
        st = pb_paged_kv_create(&pp, &kv);
        const char *pname = sc->policy ? sc->policy : c->kind == SYS_APC && !sc->v1_budget ? "prefix-cache" : "vllm";
        if (st == PB_OK && sc->options) st = pb_config_load_string("options", sc->options, &opts, &err);
        if (st == PB_OK) st = pb_policy_create(pname, opts ? pb_config_root(opts) : NULL, &pol, &err);
        if (st == PB_OK) PB_ASSERT(pol->iface->prefix_caching == (c->kind == SYS_APC && !sc->v1_budget));
        xp.block_size = c->block_size;
        xp.num_gpu_blocks = c->gpu_blocks;
        xp.num_cpu_blocks = PB_MIN(c->cpu_blocks, c->gpu_blocks) + c->tier_blocks;
    } else {
        pb_kv_contiguous_params cp;
        memset(&cp, 0, sizeof cp);
        cp.num_slots = c->slots;
        cp.max_len = m->max_len;
        cp.rule = c->kind == SYS_ORCA_ORACLE ? PB_RESV_ORACLE
                : c->kind == SYS_ORCA_POW2   ? PB_RESV_POW2 : PB_RESV_MAX;
        st = pb_kv_contiguous_create(&cp, &kv);
        if (st == PB_OK)
            st = c->kind == SYS_FT ? pb_policy_ft_create(NULL, &pol, &err)
                                   : pb_policy_orca_create(NULL, &pol, &err);
        xp.block_size = 0;
        xp.num_slots = c->slots;
    }
    pb_config_destroy(opts);
    if (st != PB_OK) {
        fprintf(stderr, "  setup: %s %s\n", pb_status_str(st), err.msg);
        pb_kv_destroy(kv);
        pb_policy_destroy(pol);
        return st;
    }
    pb_executor *ex = NULL;
    st = pb_executor_cpu_create(m, &xp, &ex);
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.max_model_len = m->max_len;
    ep.max_num_batched_tokens = 512;
    ep.preemption = c->preempt;
    if (sc->v02_max_paddings > 0) {
        ep.step_mode = PB_STEP_ALTERNATE;
        ep.max_paddings = sc->v02_max_paddings;
    }
    if (sc->v1_budget > 0) {
        pb_vllm_knobs k;
        pb_vllm_knobs_default(PB_VLLM_V1, m->max_len, NULL, &k);
        PB_ASSERT(c->preempt == k.preemption);
        ep.step_mode = k.step_mode;
        ep.max_paddings = k.max_paddings;
        ep.max_num_batched_tokens = sc->v1_budget;
    }
    ep.store_tokens = true;
    ep.vocab_size = m->vocab;
    ep.check_every_step = true;
    ep.seed = 77;
    ep.on_finish = on_finish_;
    ep.on_finish_user = o;
    pb_engine *e = NULL;
    pb_metrics *met = pb_metrics_create(false);
    if (st == PB_OK) st = pb_engine_create(&ep, kv, pol, ex, &e);
    if (st == PB_OK) st = engine_run_(e, t, met, info);
    if (st == PB_OK) {
        pb_run_summary sum;
        pb_metrics_summary(met, &sum);
        info->n_recompute = sum.n_preempt_recompute;
        info->n_swap = sum.n_preempt_swap;
        info->n_finished = sum.n_finished;
        info->n_steps = pb_engine_steps(e);
        if (c->kind == SYS_APC) {
            pb_paged_cache_stats cs;
            pb_paged_cache_stats_get(kv, &cs);
            info->hit_tokens = cs.hit_tokens;
            info->cache = cs;
        }
    }
    pb_real_exec_get_stats(ex, &info->ex);
    pb_engine_destroy(e);
    pb_metrics_destroy(met);
    pb_executor_destroy(ex);
    pb_policy_destroy(pol);
    pb_kv_destroy(kv);
    return st;
}

static pb_status run_(const pb_model *m, const sys_cfg *c, const pb_trace *t, outputs *o,
                      run_info *info) {
    return run_steps_(m, c, t, o, info, NULL);
}

/* ---- traces ---- */

static pb_trace trace_(uint64_t seed, int32_t n, double gap_s, int32_t samples, int32_t beam) {
    pb_trace t = {0};
    int64_t cap = 0;
    pb_rng r;
    pb_rng_seed(&r, seed, 3);
    double at = 0;
    for (int32_t i = 0; i < n; i++) {
        pb_request q = pb_request_make(at, 4 + (int32_t)pb_rng_below(&r, 60),
                                       3 + (int32_t)pb_rng_below(&r, 30));
        q.n = beam > 1 ? beam : samples;
        q.beam_width = beam;
        pb_trace_push(&t, &cap, &q);
        at += gap_s * pb_rng_uniform(&r) * 2;
    }
    return t;
}

/* The same trace in which request `keep` runs alone: the requests before it keep
 * their arrivals (and finish long before), `keep` arrives at 1e4 s, the ones after
 * it at 2e4 s and later.  Ids (trace indexes), hence prompts and sampling keys, stay. */
static pb_trace alone_(const pb_trace *t, int32_t keep) {
    pb_trace a = {0};
    int64_t cap = 0;
    for (int64_t i = 0; i < t->n; i++) {
        pb_request q = t->reqs[i];
        if (i == keep) q.arrival_s = 1e4;
        else if (i > keep) q.arrival_s = 2e4 + (double)i;
        pb_trace_push(&a, &cap, &q);
    }
    return a;
}

static bool same_(const outputs *a, const outputs *b, int32_t n, const char *what) {
    bool ok = true;
    for (int32_t i = 0; i < n; i++) {
        if (!a->done[i] || !b->done[i] || a->n_seqs[i] != b->n_seqs[i] ||
            a->out_len[i] != b->out_len[i] || memcmp(a->tok[i], b->tok[i], sizeof a->tok[i])) {
            fprintf(stderr, "  %s: request %d differs (done %d/%d, seqs %d/%d, len %d/%d)\n", what, i,
                    a->done[i], b->done[i], a->n_seqs[i], b->n_seqs[i], a->out_len[i], b->out_len[i]);
            ok = false;
        }
    }
    return ok;
}

/* Sarathi-Serve's chunked prefill: prompts split over steps under small odd token
 * budgets, prefill chunks beside decodes, give the tokens of vLLM v0.1's whole-prompt
 * steps -- greedy and seeded sampling, parallel samples, beams, and runs forced into
 * swap and recompute preemption (check_every_step: the invariants hold each step). */
static const char *BUDGETS[] = {"token_budget: 5", "token_budget: 7", "token_budget: 33"};

static void sarathi_same_(const pb_model *m, const sys_cfg *c, const pb_trace *t, const outputs *ref,
                          const char *what, bool want_preempt) {
    static const sched_cfg V01 = {"vllm-v0.1", NULL, 0, 0};
    outputs o;
    run_info oi;
    PB_REQUIRE(run_steps_(m, c, t, &o, &oi, &V01) == PB_OK);
    PB_CHECK(same_(ref, &o, (int32_t)t->n, what));   /* the policy by name == the engine default */
    int64_t preempted = 0;
    for (size_t k = 0; k < PB_ARRAY_LEN(BUDGETS); k++) {
        const sched_cfg sar = {"sarathi", BUDGETS[k], 0, 0};
        PB_REQUIRE(run_steps_(m, c, t, &o, &oi, &sar) == PB_OK);
        fprintf(stderr, "  %s, sarathi %s: %lld steps, %lld partial chunks, %lld swaps, %lld recomputes\n",
                what, BUDGETS[k], (long long)oi.n_steps, (long long)oi.n_partial, (long long)oi.n_swap,
                (long long)oi.n_recompute);
        PB_CHECK_EQ_INT(oi.n_finished, t->n);
        PB_CHECK(oi.n_partial > 0);   /* prompts really were split */
        preempted += oi.n_swap + oi.n_recompute;
        char w[96];
        snprintf(w, sizeof w, "%s, sarathi %s", what, BUDGETS[k]);
        PB_CHECK(same_(ref, &o, (int32_t)t->n, w));
    }
    if (want_preempt) PB_CHECK(preempted > 0);
}

static const char *MODELS[] = {"tiny-opt", "tiny-llama"};

/* ---- tests ---- */

PB_TEST(vllm_orca_and_ft_produce_identical_tokens) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = model_(MODELS[mi]);
        pb_trace t = trace_(1, 12, 0.02, 1, 1);
        outputs ref, o;
        run_info ri, oi;
        sys_cfg v = {SYS_VLLM, 16, 256, 64, 0, PB_PREEMPT_AUTO, 0.0f, 0};
        PB_REQUIRE(run_(&m, &v, &t, &ref, &ri) == PB_OK);
        PB_CHECK_EQ_INT(ri.n_finished, t.n);
        static const sys_kind others[] = {SYS_ORCA_ORACLE, SYS_ORCA_POW2, SYS_ORCA_MAX, SYS_FT};
        static const char *names[] = {"orca-oracle", "orca-pow2", "orca-max", "ft"};
        for (size_t k = 0; k < PB_ARRAY_LEN(others); k++) {
            sys_cfg c = {others[k], 0, 0, 0, 4096, PB_PREEMPT_AUTO, 0.0f, 0};
            PB_REQUIRE(run_(&m, &c, &t, &o, &oi) == PB_OK);
            PB_CHECK_EQ_INT(oi.n_finished, t.n);
            PB_CHECK(same_(&ref, &o, (int32_t)t.n, names[k]));
        }
        pb_trace_free(&t);
    }
}

PB_TEST(block_sizes_1_2_16_32_produce_identical_tokens) {
    pb_model m = model_("tiny-llama");
    pb_trace t = trace_(2, 10, 0.02, 1, 1);
    outputs ref, o;
    run_info ri;
    sys_cfg c0 = {SYS_ORCA_ORACLE, 0, 0, 0, 4096, PB_PREEMPT_AUTO, 0.0f, 0};
    PB_REQUIRE(run_(&m, &c0, &t, &ref, &ri) == PB_OK);
    static const int32_t bss[] = {1, 2, 16, 32};
    for (size_t k = 0; k < PB_ARRAY_LEN(bss); k++) {
        sys_cfg c = {SYS_VLLM, bss[k], 4096 / bss[k], 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
        PB_REQUIRE(run_(&m, &c, &t, &o, &ri) == PB_OK);
        char what[32];
        snprintf(what, sizeof what, "block size %d", bss[k]);
        PB_CHECK(same_(&ref, &o, (int32_t)t.n, what));
    }
    pb_trace_free(&t);
}

PB_TEST(forced_preemption_by_swap_and_by_recompute_keeps_tokens) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = model_(MODELS[mi]);
        pb_trace t = trace_(3, 12, 0.005, 1, 1);     /* arrivals close together */
        outputs ref, o;
        run_info ri, oi;
        sys_cfg big = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
        PB_REQUIRE(run_(&m, &big, &t, &ref, &ri) == PB_OK);
        PB_CHECK_EQ_INT(ri.n_recompute + ri.n_swap, 0);
        /* 40 blocks of 4 tokens: a few requests at a time, preemption every few steps */
        sys_cfg sw = {SYS_VLLM, 4, 40, 40, 0, PB_PREEMPT_SWAP, 0.0f, 0};
        PB_REQUIRE(run_(&m, &sw, &t, &o, &oi) == PB_OK);
        fprintf(stderr, "  %s swap: %lld swap preemptions\n", m.name, (long long)oi.n_swap);
        PB_CHECK(oi.n_swap > 0 && oi.ex.swapped_out_blocks > 0 && oi.ex.swapped_in_blocks > 0);
        PB_CHECK(same_(&ref, &o, (int32_t)t.n, "swap"));
        sys_cfg rc = {SYS_VLLM, 4, 40, 0, 0, PB_PREEMPT_RECOMPUTE, 0.0f, 0};
        PB_REQUIRE(run_(&m, &rc, &t, &o, &oi) == PB_OK);
        fprintf(stderr, "  %s recompute: %lld recompute preemptions\n", m.name, (long long)oi.n_recompute);
        PB_CHECK(oi.n_recompute > 0);
        PB_CHECK(same_(&ref, &o, (int32_t)t.n, "recompute"));
        pb_trace_free(&t);
    }
}

PB_TEST(a_request_alone_equals_the_request_in_a_busy_batch) {
    pb_model m = model_("tiny-opt");
    pb_trace t = trace_(4, 10, 0.01, 1, 1);
    outputs busy, alone;
    run_info ri;
    sys_cfg c = {SYS_VLLM, 16, 256, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
    PB_REQUIRE(run_(&m, &c, &t, &busy, &ri) == PB_OK);
    for (int32_t keep = 0; keep < (int32_t)t.n; keep += 3) {
        pb_trace a = alone_(&t, keep);
        PB_REQUIRE(run_(&m, &c, &a, &alone, &ri) == PB_OK);
        PB_CHECK(alone.done[keep] && !memcmp(alone.tok[keep], busy.tok[keep], sizeof busy.tok[keep]));
        pb_trace_free(&a);
    }
    pb_trace_free(&t);
}

PB_TEST(parallel_samples_with_a_seed_equal_the_same_samples_alone) {
    pb_model m = model_("tiny-llama");
    pb_trace t = trace_(5, 8, 0.01, 3, 1);
    outputs busy, alone, swapped;
    run_info ri;
    sys_cfg c = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_AUTO, 0.8f, 0};
    PB_REQUIRE(run_(&m, &c, &t, &busy, &ri) == PB_OK);
    PB_CHECK_EQ_INT(ri.n_finished, t.n);
    for (int32_t i = 0; i < (int32_t)t.n; i++) {
        PB_CHECK_EQ_INT(busy.n_seqs[i], 3);
        /* the samples differ from each other (distinct first tokens) */
        PB_CHECK(memcmp(busy.tok[i][0], busy.tok[i][1], sizeof busy.tok[i][0]) != 0);
    }
    for (int32_t keep = 0; keep < (int32_t)t.n; keep += 3) {
        pb_trace a = alone_(&t, keep);
        PB_REQUIRE(run_(&m, &c, &a, &alone, &ri) == PB_OK);
        PB_CHECK(alone.done[keep] && !memcmp(alone.tok[keep], busy.tok[keep], sizeof busy.tok[keep]));
        pb_trace_free(&a);
    }
    /* multi-sequence groups are swapped when memory runs out (copy-on-write blocks too) */
    sys_cfg small = {SYS_VLLM, 4, 60, 60, 0, PB_PREEMPT_AUTO, 0.8f, 0};
    PB_REQUIRE(run_(&m, &small, &t, &swapped, &ri) == PB_OK);
    fprintf(stderr, "  parallel sampling, small pool: %lld swaps, %lld recomputes\n",
            (long long)ri.n_swap, (long long)ri.n_recompute);
    PB_CHECK(ri.n_swap > 0 && ri.ex.copied_blocks > 0);   /* swapped, and CoW copies ran */
    PB_CHECK(same_(&busy, &swapped, (int32_t)t.n, "parallel samples under swapping"));
    pb_trace_free(&t);
}

/* Reference beam search for one request: every step, every live beam is run as a
 * full prefill (no KV reuse) on a contiguous cpu executor; pb_beam_select picks. */
static void ref_beam_(const pb_model *m, const int32_t *prompt, int32_t plen, int32_t out_len,
                      int32_t k, int32_t gid, int32_t res[MAX_SEQ][MAX_OUT]) {
    pb_real_exec_params xp;
    pb_real_exec_params_default(&xp);
    xp.block_size = 0;
    xp.num_slots = (int64_t)MAX_SEQ * 256;
    xp.weight_seed = 31;
    xp.sample_seed = 5;
    pb_executor *ex = NULL;
    PB_ASSERT(pb_executor_cpu_create(m, &xp, &ex) == PB_OK);
    int32_t beams[MAX_SEQ][256], nb = 1;
    double cum[MAX_SEQ] = {0};
    memcpy(beams[0], prompt, (size_t)plen * sizeof(int32_t));
    for (int32_t step = 0; step < out_len; step++) {
        int32_t len = plen + step;
        pb_batch_seq q[MAX_SEQ];
        memset(q, 0, sizeof q);
        for (int32_t b = 0; b < nb; b++) {
            q[b].seq_id = b; q[b].group_id = gid; q[b].is_prefill = true; q[b].n_new = len;
            q[b].context_len = len; q[b].sample = true; q[b].kv_offset = (int64_t)b * 256;
            q[b].tokens = beams[b];
        }
        pb_batch bt;
        memset(&bt, 0, sizeof bt);
        bt.n_seqs = nb; bt.seqs = q; bt.n_top = 2 * k;
        pb_step_result r;
        pb_candidates cand[MAX_SEQ];
        PB_ASSERT(pb_executor_execute(ex, &bt, &r, cand) == PB_OK);
        pb_beam_choice ch[MAX_SEQ];
        int32_t nc = pb_beam_select(cum, cand, nb, k, ch);
        int32_t nbeams[MAX_SEQ][256];
        double ncum[MAX_SEQ];
        for (int32_t i = 0; i < nc; i++) {
            memcpy(nbeams[i], beams[ch[i].parent], (size_t)len * sizeof(int32_t));
            nbeams[i][len] = ch[i].token;
            ncum[i] = ch[i].score;
        }
        memcpy(beams, nbeams, sizeof beams);
        memcpy(cum, ncum, sizeof cum);
        nb = nc;
    }
    memset(res, 0xff, sizeof(int32_t) * MAX_SEQ * MAX_OUT);
    for (int32_t b = 0; b < nb; b++) memcpy(res[b], beams[b] + plen, (size_t)out_len * sizeof(int32_t));
    qsort(res, (size_t)nb, sizeof res[0], cmp_seq_);
    pb_executor_destroy(ex);
}

PB_TEST(beam_search_through_the_engine_equals_a_reference_beam_search) {
    pb_model m = model_("tiny-opt");
    pb_trace t = trace_(6, 6, 0.01, 1, 3);
    for (int64_t i = 0; i < t.n; i++) t.reqs[i].output_len = PB_MIN(t.reqs[i].output_len, 12);
    outputs o;
    run_info ri;
    sys_cfg c = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
    PB_REQUIRE(run_(&m, &c, &t, &o, &ri) == PB_OK);
    for (int64_t i = 0; i < t.n; i++) {
        PB_REQUIRE(o.done[i] && o.n_seqs[i] == 3);
        int32_t ref[MAX_SEQ][MAX_OUT];
        ref_beam_(&m, o.prompt[i], o.prompt_len[i], o.out_len[i], 3, (int32_t)i, ref);
        if (memcmp(ref, o.tok[i], sizeof ref)) {
            fprintf(stderr, "  beam request %lld differs from the reference\n", (long long)i);
            PB_CHECK(0);
        }
    }
    /* and the same beams when the pool is small enough to force swapping */
    outputs sw;
    sys_cfg small = {SYS_VLLM, 4, 48, 48, 0, PB_PREEMPT_AUTO, 0.0f, 0};
    PB_REQUIRE(run_(&m, &small, &t, &sw, &ri) == PB_OK);
    fprintf(stderr, "  beam search, small pool: %lld swaps\n", (long long)ri.n_swap);
    PB_CHECK(same_(&o, &sw, (int32_t)t.n, "beam search under swapping"));
    pb_trace_free(&t);
}

/* Contiguous managers cannot share KV: a fork copies the parent's KV into the child's
 * region (pb_batch.slot_copies).  Parallel samples and beams must still come out as
 * under vLLM's copy-on-write sharing, for every reservation rule. */
PB_TEST(orca_and_ft_forks_copy_kv_parallel_and_beam_equal_vllm) {
    pb_model m = model_("tiny-llama");
    static const sys_kind others[] = {SYS_ORCA_ORACLE, SYS_ORCA_POW2, SYS_ORCA_MAX, SYS_FT};
    static const char *names[] = {"orca-oracle", "orca-pow2", "orca-max", "ft"};
    for (int mode = 0; mode < 2; mode++) {          /* 0: n = 3 samples, 1: beam width 3 */
        pb_trace t = mode ? trace_(8, 6, 0.01, 1, 3) : trace_(7, 8, 0.01, 3, 1);
        float temp = mode ? 0.0f : 0.8f;
        outputs ref, o;
        run_info ri, oi;
        sys_cfg v = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_AUTO, temp, 0};
        PB_REQUIRE(run_(&m, &v, &t, &ref, &ri) == PB_OK);
        for (size_t k = 0; k < PB_ARRAY_LEN(others); k++) {
            sys_cfg c = {others[k], 0, 0, 0, 4096, PB_PREEMPT_AUTO, temp, 0};
            PB_REQUIRE(run_(&m, &c, &t, &o, &oi) == PB_OK);
            PB_CHECK_EQ_INT(oi.n_finished, t.n);
            PB_CHECK(same_(&ref, &o, (int32_t)t.n, names[k]));
        }
        pb_trace_free(&t);
    }
}

PB_TEST(shared_prefixes_give_the_same_tokens_shared_or_not) {
    pb_model m = model_("tiny-llama");
    pb_trace t = trace_(7, 10, 0.005, 1, 1);
    for (int64_t i = 0; i < t.n; i++) {       /* two prefixes of 21 and 9 tokens */
        t.reqs[i].prefix_id = (int32_t)(i % 2);
        t.reqs[i].prefix_len = i % 2 ? 9 : 21;
        t.reqs[i].prompt_len = t.reqs[i].prefix_len + 1 + (int32_t)(i * 3 % 17);
    }
    char err[256];
    PB_REQUIRE(pb_trace_check(&t, err, sizeof err) == PB_OK);
    outputs a, b;
    run_info ri;
    sys_cfg v = {SYS_VLLM, 4, 512, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
    sys_cfg o = {SYS_ORCA_ORACLE, 0, 0, 0, 4096, PB_PREEMPT_AUTO, 0.0f, 0};
    PB_REQUIRE(run_(&m, &v, &t, &a, &ri) == PB_OK);
    fprintf(stderr, "  vLLM: %lld prefill tokens read from shared prefix blocks\n",
            (long long)ri.ex.cached_prefill_tokens);
    PB_CHECK(ri.ex.cached_prefill_tokens > 0);    /* the prefixes really were shared */
    PB_REQUIRE(run_(&m, &o, &t, &b, &ri) == PB_OK);
    PB_CHECK_EQ_INT(ri.ex.cached_prefill_tokens, 0);
    PB_CHECK(same_(&a, &b, (int32_t)t.n, "shared prefix"));
    /* chunked prefills (a first chunk covers the prefix), also when preempted */
    sarathi_same_(&m, &v, &t, &a, "shared prefix", false);
    sys_cfg small = {SYS_VLLM, 4, 28, 0, 0, PB_PREEMPT_RECOMPUTE, 0.0f, 0};
    sarathi_same_(&m, &small, &t, &a, "shared prefix, recompute", true);
    pb_trace_free(&t);
}

PB_TEST(vllm_v02_padded_alternate_steps_give_the_tokens_of_v01) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = model_(MODELS[mi]);
        pb_trace t = trace_(8, 16, 0.004, 1, 1);   /* prompts 4-63 tokens, close arrivals */
        outputs ref, o;
        run_info ri, oi;
        sys_cfg v01 = {SYS_VLLM, 16, 256, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
        PB_REQUIRE(run_(&m, &v01, &t, &ref, &ri) == PB_OK);
        PB_CHECK_EQ_INT(ri.n_finished, t.n);
        const sched_cfg v02 = {NULL, NULL, 8, 0};   /* a tight padding cap */
        PB_REQUIRE(run_steps_(&m, &v01, &t, &o, &oi, &v02) == PB_OK);
        PB_CHECK_EQ_INT(oi.n_finished, t.n);
        PB_CHECK(oi.n_steps != ri.n_steps);   /* a different schedule ... */
        PB_CHECK(same_(&ref, &o, (int32_t)t.n, "v0.2"));   /* ... the same tokens */
        sys_cfg rc = {SYS_VLLM, 4, 40, 0, 0, PB_PREEMPT_RECOMPUTE, 0.0f, 0};
        PB_REQUIRE(run_steps_(&m, &rc, &t, &o, &oi, &v02) == PB_OK);
        fprintf(stderr, "  %s v0.2 recompute: %lld preemptions, %lld steps (v0.1: %lld)\n", m.name,
                (long long)oi.n_recompute, (long long)oi.n_steps, (long long)ri.n_steps);
        PB_CHECK(oi.n_recompute > 0);
        PB_CHECK(same_(&ref, &o, (int32_t)t.n, "v0.2 recompute"));
        pb_trace_free(&t);
    }
}

PB_TEST(sarathi_chunked_prefill_gives_the_tokens_of_vllm_v01) {
    for (size_t mi = 0; mi < PB_ARRAY_LEN(MODELS); mi++) {
        pb_model m = model_(MODELS[mi]);
        pb_trace t = trace_(1, 12, 0.02, 1, 1);
        outputs ref;
        run_info ri;
        sys_cfg v = {SYS_VLLM, 16, 256, 64, 0, PB_PREEMPT_AUTO, 0.0f, 0};
        PB_REQUIRE(run_(&m, &v, &t, &ref, &ri) == PB_OK);
        PB_CHECK_EQ_INT(ri.n_partial, 0);
        sarathi_same_(&m, &v, &t, &ref, m.name, false);
        pb_trace_free(&t);
    }
}

PB_TEST(sarathi_parallel_samples_and_beams_equal_vllm_v01) {
    pb_model m = model_("tiny-llama");
    for (int mode = 0; mode < 2; mode++) {          /* 0: n = 3 samples, 1: beam width 3 */
        pb_trace t = mode ? trace_(6, 10, 0.002, 1, 3) : trace_(5, 8, 0.01, 3, 1);
        for (int64_t i = 0; i < t.n; i++) t.reqs[i].output_len = PB_MIN(t.reqs[i].output_len, 12);
        float temp = mode ? 0.0f : 0.8f;
        outputs ref;
        run_info ri;
        sys_cfg big = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_AUTO, temp, 0};
        PB_REQUIRE(run_(&m, &big, &t, &ref, &ri) == PB_OK);
        sarathi_same_(&m, &big, &t, &ref, mode ? "beam 3" : "n = 3", false);
        /* a pool small enough to swap the multi-sequence groups */
        sys_cfg small = {SYS_VLLM, 4, 36, 36, 0, PB_PREEMPT_AUTO, temp, 0};
        sarathi_same_(&m, &small, &t, &ref, mode ? "beam 3, small pool" : "n = 3, small pool", true);
        pb_trace_free(&t);
    }
}

PB_TEST(sarathi_forced_swap_and_recompute_keep_tokens) {
    pb_model m = model_("tiny-opt");
    pb_trace t = trace_(3, 12, 0.005, 1, 1);     /* arrivals close together */
    outputs ref;
    run_info ri;
    sys_cfg big = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
    PB_REQUIRE(run_(&m, &big, &t, &ref, &ri) == PB_OK);
    sys_cfg sw = {SYS_VLLM, 4, 40, 40, 0, PB_PREEMPT_SWAP, 0.0f, 0};
    sarathi_same_(&m, &sw, &t, &ref, "swap", true);
    sys_cfg rc = {SYS_VLLM, 4, 40, 0, 0, PB_PREEMPT_RECOMPUTE, 0.0f, 0};
    sarathi_same_(&m, &rc, &t, &ref, "recompute", true);
    pb_trace_free(&t);
}

/* ---- automatic prefix caching ---- */

/* n requests over two shared prefixes (21 and 9 tokens) */
static pb_trace prefix_trace_(uint64_t seed, int32_t n, double gap_s, int32_t samples, int32_t beam) {
    pb_trace t = trace_(seed, n, gap_s, samples, beam);
    for (int64_t i = 0; i < t.n; i++) {
        t.reqs[i].prefix_id = (int32_t)(i % 2);
        t.reqs[i].prefix_len = i % 2 ? 9 : 21;
        t.reqs[i].prompt_len = t.reqs[i].prefix_len + 1 + (int32_t)(i * 7 % 23);
        if (beam > 1) t.reqs[i].output_len = PB_MIN(t.reqs[i].output_len, 12);
    }
    return t;
}

/* 4 conversations of 3 turns; a turn re-sends the previous prompt + reply + a query
 * (trace.h: prefix_len = the history) and arrives after the previous one finished
 * (the cpu clock is 0.01 s a step), except conversation 3's second turn, which
 * arrives while its first is still decoding */
static pb_trace chat_trace_(void) {
    static const int32_t conv[12] = {0, 1, 2, 3, 3, 0, 1, 2, 0, 1, 2, 3};
    static const double at[12] = {0, 0.03, 0.06, 0.09, 0.1, 1.0, 1.03, 1.06, 2.0, 2.03, 2.06, 2.09};
    pb_trace t = {0};
    int64_t cap = 0;
    int32_t hist[4] = {0}, turn[4] = {0};
    for (int32_t k = 0; k < 12; k++) {
        int32_t c = conv[k], q = 5 + (k * 5) % 11, out = 4 + (k * 3) % 9;
        pb_request r = pb_request_make(at[k], hist[c] + q, out);
        r.conversation_id = c;
        r.turn = turn[c]++;
        r.prefix_len = hist[c];
        hist[c] += q + out;
        pb_trace_push(&t, &cap, &r);
    }
    char err[256];
    PB_ASSERT(pb_trace_check(&t, err, sizeof err) == PB_OK);
    return t;
}

PB_TEST(prefix_cache_gives_vllm_tokens_on_shared_prefixes_and_chat_turns) {
    pb_model m = model_("tiny-llama");
    for (int kind = 0; kind < 2; kind++) {
        pb_trace t = kind ? chat_trace_() : prefix_trace_(9, 12, 0.01, 1, 1);
        outputs ref, o;
        run_info ri, oi;
        sys_cfg v = {SYS_VLLM, 4, 512, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
        sys_cfg a = {SYS_APC, 4, 512, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
        PB_REQUIRE(run_(&m, &v, &t, &ref, &ri) == PB_OK);
        PB_REQUIRE(run_(&m, &a, &t, &o, &oi) == PB_OK);
        fprintf(stderr, "  %s: %lld prefix-cache hit tokens, %lld prefill tokens read from the cache\n",
                kind ? "chat" : "prefixes", (long long)oi.hit_tokens, (long long)oi.ex.cached_prefill_tokens);
        PB_CHECK_EQ_INT(oi.n_finished, t.n);
        PB_CHECK(oi.hit_tokens > 0 && oi.ex.cached_prefill_tokens >= oi.hit_tokens);
        for (int64_t i = 0; i < t.n; i++)   /* the same prompts: token identity (trace.h) */
            PB_CHECK(!memcmp(ref.prompt[i], o.prompt[i], sizeof ref.prompt[i]));
        PB_CHECK(same_(&ref, &o, (int32_t)t.n, kind ? "prefix cache, chat" : "prefix cache, prefixes"));
        pb_trace_free(&t);
    }
}

PB_TEST(prefix_cache_beam_search_and_parallel_samples_over_cached_prefixes) {
    pb_model m = model_("tiny-opt");
    for (int mode = 0; mode < 2; mode++) {   /* 0: n = 3 samples, 1: beam width 3 */
        pb_trace t = mode ? prefix_trace_(10, 8, 0.01, 1, 3) : prefix_trace_(11, 8, 0.01, 3, 1);
        float temp = mode ? 0.0f : 0.8f;
        outputs ref, o;
        run_info ri, oi;
        sys_cfg v = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_AUTO, temp, 0};
        sys_cfg a = {SYS_APC, 4, 1024, 0, 0, PB_PREEMPT_AUTO, temp, 0};
        PB_REQUIRE(run_(&m, &v, &t, &ref, &ri) == PB_OK);
        PB_REQUIRE(run_(&m, &a, &t, &o, &oi) == PB_OK);
        fprintf(stderr, "  %s: %lld hit tokens\n", mode ? "beam" : "samples", (long long)oi.hit_tokens);
        PB_CHECK(oi.hit_tokens > 0);
        PB_CHECK(same_(&ref, &o, (int32_t)t.n, mode ? "prefix cache, beam" : "prefix cache, samples"));
        /* and in a pool small enough to swap the multi-sequence groups */
        sys_cfg sm = {SYS_APC, 4, 56, 56, 0, PB_PREEMPT_AUTO, temp, 0};
        PB_REQUIRE(run_(&m, &sm, &t, &o, &oi) == PB_OK);
        fprintf(stderr, "  %s, small pool: %lld swaps, %lld hit tokens\n", mode ? "beam" : "samples",
                (long long)oi.n_swap, (long long)oi.hit_tokens);
        PB_CHECK(oi.n_swap > 0);
        PB_CHECK(same_(&ref, &o, (int32_t)t.n, "prefix cache, small pool"));
        pb_trace_free(&t);
    }
}

PB_TEST(prefix_cache_under_swap_and_recompute_preemption_keeps_tokens) {
    pb_model m = model_("tiny-llama");
    pb_trace t = prefix_trace_(12, 14, 0.004, 1, 1);
    outputs ref, o;
    run_info ri, oi;
    sys_cfg big = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
    PB_REQUIRE(run_(&m, &big, &t, &ref, &ri) == PB_OK);
    static const pb_preempt_mode modes[] = {PB_PREEMPT_RECOMPUTE, PB_PREEMPT_SWAP};
    for (size_t k = 0; k < PB_ARRAY_LEN(modes); k++) {
        sys_cfg c = {SYS_APC, 4, 40, 40, 0, modes[k], 0.0f, 0};
        PB_REQUIRE(run_(&m, &c, &t, &o, &oi) == PB_OK);
        fprintf(stderr, "  %s: %lld recomputes, %lld swaps, %lld hit tokens\n", pb_preempt_mode_str(modes[k]),
                (long long)oi.n_recompute, (long long)oi.n_swap, (long long)oi.hit_tokens);
        PB_CHECK(oi.n_recompute + oi.n_swap > 0 && oi.hit_tokens > 0);
        PB_CHECK(same_(&ref, &o, (int32_t)t.n, pb_preempt_mode_str(modes[k])));
    }
    pb_trace_free(&t);
}

/* 18 requests over 6 shared prefixes of 21-26 tokens, a prefix coming back every 6
   requests, in a GPU pool of 40 blocks of 4 that cannot keep them all cached */
static pb_trace six_prefixes_(void) {
    pb_trace t = trace_(14, 18, 0.06, 1, 1);
    for (int64_t i = 0; i < t.n; i++) {
        t.reqs[i].prefix_id = (int32_t)(i % 6);
        t.reqs[i].prefix_len = 21 + (int32_t)(i % 6);
        t.reqs[i].prompt_len = t.reqs[i].prefix_len + 1 + (int32_t)(i * 5 % 7);
        t.reqs[i].output_len = PB_MIN(t.reqs[i].output_len, 10);
    }
    return t;
}

PB_TEST(prefix_cache_cpu_tier_reloads_evicted_blocks_with_the_same_tokens) {
    pb_model m = model_("tiny-llama");
    pb_trace t = six_prefixes_();
    outputs ref, o, nt;
    run_info ri, oi, ni;
    sys_cfg big = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
    PB_REQUIRE(run_(&m, &big, &t, &ref, &ri) == PB_OK);
    static const pb_preempt_mode modes[] = {PB_PREEMPT_RECOMPUTE, PB_PREEMPT_SWAP};
    for (size_t k = 0; k < PB_ARRAY_LEN(modes); k++) {
        sys_cfg none = {SYS_APC, 4, 24, 24, 0, modes[k], 0.0f, 0};
        sys_cfg tier = {SYS_APC, 4, 24, 24, 0, modes[k], 0.0f, 64};
        PB_REQUIRE(run_(&m, &none, &t, &nt, &ni) == PB_OK);
        PB_REQUIRE(run_(&m, &tier, &t, &o, &oi) == PB_OK);
        const pb_paged_cache_stats *cs = &oi.cache;
        fprintf(stderr, "  %s (%lld recomputes, %lld swaps): hit tokens %lld without the tier, %lld with it (%lld from "
                "the CPU); %lld spills, %lld reloads; executor swapped %lld out, %lld in\n", pb_preempt_mode_str(modes[k]),
                (long long)oi.n_recompute, (long long)oi.n_swap,
                (long long)ni.hit_tokens, (long long)oi.hit_tokens, (long long)cs->tier_hit_tokens,
                (long long)cs->tier_spills, (long long)cs->tier_reloads, (long long)oi.ex.swapped_out_blocks,
                (long long)oi.ex.swapped_in_blocks);
        PB_CHECK_EQ_INT(oi.n_finished, t.n);
        /* the tier served hits the GPU had lost, read back by the executor */
        PB_CHECK(cs->tier_reloads > 0 && cs->tier_hit_tokens > 0 && oi.hit_tokens > ni.hit_tokens);
        PB_CHECK(oi.ex.swapped_in_blocks >= cs->tier_reloads && oi.ex.swapped_out_blocks >= cs->tier_spills);
        PB_CHECK(oi.ex.cached_prefill_tokens >= oi.hit_tokens);
        PB_CHECK(same_(&ref, &nt, (int32_t)t.n, "prefix cache, no tier"));
        PB_CHECK(same_(&ref, &o, (int32_t)t.n, "prefix cache, CPU tier"));
    }
    pb_trace_free(&t);
}

/* ---- vLLM V1's steps ---- */

/* V1 (engine: v1) on trace t under budgets 5, 33 and 512 against ref (v0.1's tokens):
   every request finished with ref's tokens; *sum gets the runs' partial chunks, hit
   tokens, recomputes and tier reloads summed. */
static void v1_same_(const pb_model *m, const sys_cfg *c, const pb_trace *t, const outputs *ref,
                     const char *what, run_info *sum) {
    static const int32_t budgets[] = {5, 33, 512};
    memset(sum, 0, sizeof *sum);
    for (size_t k = 0; k < PB_ARRAY_LEN(budgets); k++) {
        const sched_cfg v1 = {NULL, NULL, 0, budgets[k]};
        outputs o;
        run_info oi;
        PB_REQUIRE(run_steps_(m, c, t, &o, &oi, &v1) == PB_OK);
        fprintf(stderr, "  %s, V1 budget %d: %lld steps, %lld partial chunks, %lld hit tokens, %lld recomputes, "
                "%lld tier reloads\n", what, budgets[k], (long long)oi.n_steps, (long long)oi.n_partial,
                (long long)oi.hit_tokens, (long long)oi.n_recompute, (long long)oi.cache.tier_reloads);
        PB_CHECK_EQ_INT(oi.n_finished, t->n);
        PB_CHECK_EQ_INT(oi.n_swap, 0);
        char w[96];
        snprintf(w, sizeof w, "%s, V1 budget %d", what, budgets[k]);
        PB_CHECK(same_(ref, &o, (int32_t)t->n, w));
        sum->n_partial += oi.n_partial;
        sum->hit_tokens += oi.hit_tokens;
        sum->n_recompute += oi.n_recompute;
        sum->cache.tier_reloads += oi.cache.tier_reloads;
    }
}

PB_TEST(vllm_v1_steps_give_the_tokens_of_vllm_v01) {
    pb_model m = model_("tiny-opt");
    outputs ref;
    run_info ri, s;
    /* greedy, then n = 3 seeded samples; prefix caching off and on */
    for (int mode = 0; mode < 2; mode++) {
        pb_trace t = mode ? trace_(5, 8, 0.01, 3, 1) : trace_(1, 12, 0.02, 1, 1);
        float temp = mode ? 0.8f : 0.0f;
        sys_cfg v = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_AUTO, temp, 0};
        PB_REQUIRE(run_(&m, &v, &t, &ref, &ri) == PB_OK);
        sys_cfg v1 = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_RECOMPUTE, temp, 0};
        v1_same_(&m, &v1, &t, &ref, mode ? "n = 3" : "greedy", &s);
        PB_CHECK(s.n_partial > 0);   /* prompts really were split */
        sys_cfg apc = {SYS_APC, 4, 1024, 0, 0, PB_PREEMPT_RECOMPUTE, temp, 0};
        v1_same_(&m, &apc, &t, &ref, mode ? "n = 3, prefix cache" : "greedy, prefix cache", &s);
        /* a pool small enough to preempt (by recompute: V1 never swaps) */
        sys_cfg small = {SYS_APC, 4, 40, 0, 0, PB_PREEMPT_RECOMPUTE, temp, 0};
        v1_same_(&m, &small, &t, &ref, mode ? "n = 3, small pool" : "greedy, small pool", &s);
        PB_CHECK(s.n_recompute > 0);
        pb_trace_free(&t);
    }
}

PB_TEST(vllm_v1_prefix_cache_and_cpu_tier_give_the_tokens_of_vllm_v01) {
    pb_model m = model_("tiny-llama");
    outputs ref;
    run_info ri, s;
    for (int kind = 0; kind < 2; kind++) {   /* chat turns; shared prefixes */
        pb_trace t = kind ? prefix_trace_(9, 12, 0.01, 1, 1) : chat_trace_();
        sys_cfg v = {SYS_VLLM, 4, 512, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
        PB_REQUIRE(run_(&m, &v, &t, &ref, &ri) == PB_OK);
        sys_cfg apc = {SYS_APC, 4, 512, 0, 0, PB_PREEMPT_RECOMPUTE, 0.0f, 0};
        v1_same_(&m, &apc, &t, &ref, kind ? "prefixes" : "chat", &s);
        PB_CHECK(s.hit_tokens > 0);
        pb_trace_free(&t);
    }
    /* the CPU tier: six prefixes in a 24-block pool that cannot keep them cached */
    pb_trace t = six_prefixes_();
    sys_cfg big = {SYS_VLLM, 4, 1024, 0, 0, PB_PREEMPT_AUTO, 0.0f, 0};
    PB_REQUIRE(run_(&m, &big, &t, &ref, &ri) == PB_OK);
    sys_cfg tier = {SYS_APC, 4, 24, 0, 0, PB_PREEMPT_RECOMPUTE, 0.0f, 64};
    v1_same_(&m, &tier, &t, &ref, "six prefixes, CPU tier", &s);
    PB_CHECK(s.cache.tier_reloads > 0 && s.hit_tokens > 0);
    pb_trace_free(&t);
}

PB_TEST_MAIN()
