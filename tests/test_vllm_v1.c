/* test_vllm_v1.c -- `engine: v1` (engine/vllm_version.h), one rule per test: the
 * defaults table and its GPU tiers; the token budget of a step; decodes before
 * prefill chunks; chunking of prompts over the budget (a partial prefill samples
 * nothing); nothing admitted in a step that preempted; recompute, never swap; V1's KV
 * sizing by hand; the sim's asynchronous scheduling (max(host, GPU) + sync) and CUDA
 * graph issue terms; the custom all-reduce terms; the flash attention kernel's terms
 * by hand; the fast path
 * declining V1's steps with results equal to the step-by-step ones.  Automatic prefix caching by default and the config errors
 * (swap, beam search) are checked through `pagedbench run` in tests/cli_engine_v1.sh.
 *   build/cpu/test_vllm_v1 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_manager.h"
#include "engine.h"
#include "engine_rig.h"
#include "executor_fixed.h"
#include "executor_sim.h"
#include "pbtest.h"
#include "rng.h"
#include "spec.h"
#include "vllm_version.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

PB_TEST(defaults_table_and_gpu_tiers) {
    pb_vllm_knobs k;
    pb_hw a100 = {.name = "A100-80GB", .mem_bytes = 79.25 * GIB};
    pb_hw h100 = {.name = "H100-SXM", .mem_bytes = 79.1 * GIB};
    pb_hw h200 = {.name = "H200", .mem_bytes = 139.8 * GIB};
    pb_hw b200 = {.name = "B200", .mem_bytes = 178 * GIB};
    pb_hw small = {.name = "L4", .mem_bytes = 22 * GIB};
    pb_vllm_knobs_default(PB_VLLM_V1, 2048, &a100, &k);
    PB_CHECK(k.step_mode == PB_STEP_CHUNKED && k.kv_rule == PB_KV_RULE_V1);
    PB_CHECK_EQ_INT(k.max_num_batched_tokens, 2048);
    PB_CHECK_EQ_INT(k.max_num_seqs, 256);
    PB_CHECK_NEAR(k.gpu_mem_util, 0.92, 0);
    PB_CHECK(k.prefix_caching && k.preemption == PB_PREEMPT_RECOMPUTE && k.watermark == 0);
    PB_CHECK(k.async_scheduling && k.cuda_graphs && k.max_paddings == -1);
    PB_CHECK_EQ_INT(pb_vllm_knobs_profile_tokens(&k), 2048);
    pb_vllm_knobs_default(PB_VLLM_V1, 4096, &h100, &k);
    PB_CHECK_EQ_INT(k.max_num_batched_tokens, 8192);   /* not max(max_model_len, ...): chunked */
    PB_CHECK_EQ_INT(k.max_num_seqs, 1024);
    pb_vllm_knobs_default(PB_VLLM_V1, 2048, &h200, &k);
    PB_CHECK_EQ_INT(k.max_num_batched_tokens, 8192);
    pb_vllm_knobs_default(PB_VLLM_V1, 2048, &b200, &k);
    PB_CHECK_EQ_INT(k.max_num_batched_tokens, 16384);
    PB_CHECK_EQ_INT(k.max_num_seqs, 1024);
    pb_vllm_knobs_default(PB_VLLM_V1, 2048, &small, &k);
    PB_CHECK_EQ_INT(k.max_num_batched_tokens, 2048);
    pb_vllm_knobs_default(PB_VLLM_V1, 2048, NULL, &k);   /* unknown device: the small tier */
    PB_CHECK_EQ_INT(k.max_num_seqs, 256);
    pb_vllm_knobs_default(PB_VLLM_V01, 2048, &h100, &k);  /* the old versions ignore the GPU */
    PB_CHECK_EQ_INT(k.max_num_batched_tokens, 2560);
    PB_CHECK(!k.prefix_caching && k.preemption == PB_PREEMPT_AUTO && !k.async_scheduling && !k.cuda_graphs);
    pb_vllm_version v;
    PB_CHECK(pb_vllm_version_parse("v1", &v) && v == PB_VLLM_V1 && !strcmp(pb_vllm_version_str(v), "v1"));
    pb_step_mode sm;
    PB_CHECK(pb_step_mode_parse("chunked", &sm) && sm == PB_STEP_CHUNKED && !strcmp(pb_step_mode_str(sm), "chunked"));
}

/* ---- the step, on the fixed-latency executor ---- */

typedef pb_test_sys sys;

static void sys_init(sys *s, int32_t bs, int32_t gpu, bool apc, const pb_engine_params *ep) {
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.block_size = bs;
    pp.n_gpu_blocks = gpu;
    pp.n_cpu_blocks = 0;
    pp.watermark = 0;
    pp.prefix_caching = apc;
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    PB_ASSERT(pb_test_sys_init(s, &pp, "vllm", &xp, ep, true) == PB_OK);
}

static void sys_free(sys *s) { pb_test_sys_free(s); }

/* V1's engine parameters with a token budget */
static pb_engine_params v1_params(int32_t budget) {
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    pb_vllm_knobs k;
    pb_vllm_knobs_default(PB_VLLM_V1, 2048, NULL, &k);
    ep.step_mode = k.step_mode;
    ep.preemption = k.preemption;
    ep.max_paddings = k.max_paddings;
    ep.max_num_seqs = k.max_num_seqs;
    ep.max_num_batched_tokens = budget;
    ep.check_every_step = true;
    return ep;
}

static pb_request req(int64_t id, double t, int32_t p, int32_t o) {
    pb_request r = pb_request_make(t, p, o);
    r.id = id;
    return r;
}

/* Every step of a random trace: tokens <= budget whenever the decodes alone fit it;
   decodes come before prefills in the batch; at most one partial prefill; a prefill
   entry samples only when it completes its prompt. */
PB_TEST(token_budget_decodes_first_one_partial_prefill) {
    enum { N = 80 };
    pb_request r[N];
    pb_rng rng;
    pb_rng_seed(&rng, 36, 1);
    double at = 0;
    for (int i = 0; i < N; i++) {
        at += pb_rng_exp(&rng, 40.0);
        r[i] = req(i, at, 1 + (int32_t)pb_rng_below(&rng, 300), 1 + (int32_t)pb_rng_below(&rng, 80));
    }
    pb_trace t = {r, N};
    pb_engine_params ep = v1_params(96);
    sys s;
    sys_init(&s, 16, 4000, true, &ep);   /* room for all: no preemption, so a prefill is its prompt */
    PB_REQUIRE(pb_engine_begin(s.e, &t, s.m) == PB_OK);
    bool done = false;
    int64_t steps = 0, mixed = 0, chunked = 0;
    while (!done) {
        PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
        const pb_batch *b = pb_engine_last_batch(s.e);
        if (!b || b->n_seqs == 0) continue;
        steps++;
        int64_t tokens = b->n_prefill_tokens + b->n_decode;
        if (b->n_decode < 96) PB_CHECK(tokens <= 96);
        bool seen_prefill = false;
        int partial = 0;
        for (int32_t i = 0; i < b->n_seqs; i++) {
            const pb_batch_seq *q = &b->seqs[i];
            if (q->is_prefill) {
                seen_prefill = true;
                int32_t prompt = r[q->group_id].prompt_len;
                PB_CHECK(q->context_len <= prompt);
                if (q->context_len < prompt) {   /* a chunk that does not complete the prompt */
                    partial++;
                    PB_CHECK(!q->sample);
                    chunked++;
                } else {
                    PB_CHECK(q->sample);
                }
            } else {
                PB_CHECK(!seen_prefill);   /* decodes first */
            }
        }
        PB_CHECK(partial <= 1);
        if (b->n_decode > 0 && b->n_prefill_tokens > 0) mixed++;
    }
    PB_CHECK(pb_engine_end(s.e) == PB_OK);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK_EQ_INT(su.n_finished, N);
    PB_CHECK_EQ_INT(su.n_rejected, 0);
    PB_CHECK(mixed > 0 && chunked > 0 && steps > 0);   /* the rules above were exercised */
    sys_free(&s);
}

/* A prompt of 1000 tokens under a budget of 64 is chunked (V1 admits prompts up to
   max_model_len), takes ceil(1000 / 64) = 16 steps alone, and its first token comes
   with the last chunk. */
PB_TEST(prompt_over_the_budget_is_chunked_not_rejected) {
    pb_request r[1] = {req(0, 0, 1000, 3)};
    pb_trace t = {r, 1};
    pb_engine_params ep = v1_params(64);
    sys s;
    sys_init(&s, 16, 200, true, &ep);
    PB_REQUIRE(pb_engine_begin(s.e, &t, s.m) == PB_OK);
    bool done = false;
    int prefill_steps = 0;
    while (!done) {
        PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
        const pb_batch *b = pb_engine_last_batch(s.e);
        if (b && b->n_prefill_tokens > 0) {
            prefill_steps++;
            PB_CHECK(b->n_prefill_tokens <= 64);
            PB_CHECK(b->seqs[0].sample == (b->seqs[0].context_len == 1000));
        }
    }
    PB_CHECK(pb_engine_end(s.e) == PB_OK);
    PB_CHECK_EQ_INT(prefill_steps, 16);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK_EQ_INT(su.n_finished, 1);
    sys_free(&s);
}

/* Memory pressure: preemption is by recompute only (never a swap, none configured),
   and a step that preempted admits nobody (prefix caching off here, so a prefill
   entry with no cached tokens is an admission; a partial prefill continues). */
PB_TEST(recompute_only_and_no_admission_in_a_preempting_step) {
    enum { N = 40 };
    pb_request r[N];
    for (int i = 0; i < N; i++) r[i] = req(i, 0.001 * i, 40, 120);
    pb_trace t = {r, N};
    pb_engine_params ep = v1_params(256);
    sys s;
    sys_init(&s, 16, 60, false, &ep);   /* 960 slots: far fewer than 40 x 160 */
    PB_REQUIRE(pb_engine_begin(s.e, &t, s.m) == PB_OK);
    bool done = false;
    int64_t preempting = 0;
    while (!done) {
        int64_t before = pb_engine_steps(s.e);
        PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
        int64_t n;
        const pb_step_metrics *rows = pb_metrics_steps(s.m, &n);
        if (pb_engine_steps(s.e) == before || n < 1 || rows[n - 1].n_preempted == 0) continue;
        preempting++;
        PB_CHECK_EQ_INT(rows[n - 1].n_swap_out, 0);
        const pb_batch *b = pb_engine_last_batch(s.e);
        for (int32_t i = 0; i < b->n_seqs; i++) PB_CHECK(!(b->seqs[i].is_prefill && b->seqs[i].n_cached == 0));
    }
    PB_CHECK(pb_engine_end(s.e) == PB_OK);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK(preempting > 0 && su.n_preempt_recompute > 0 && su.n_preempt_swap == 0);
    PB_CHECK_EQ_INT(su.n_finished, N);
    sys_free(&s);
}

/* The fast path declines V1's steps (its steady answer is no; sched_step.c): with
   fast_forward on nothing is replayed and every metric equals the step-by-step run. */
PB_TEST(fast_path_declines_v1_with_equal_results) {
    enum { N = 50 };
    pb_request r[N];
    pb_rng rng;
    pb_rng_seed(&rng, 36, 2);
    double at = 0;
    for (int i = 0; i < N; i++) {
        at += pb_rng_exp(&rng, 20.0);
        r[i] = req(i, at, 1 + (int32_t)pb_rng_below(&rng, 200), 1 + (int32_t)pb_rng_below(&rng, 200));
    }
    pb_trace t = {r, N};
    for (int apc = 0; apc < 2; apc++) {   /* prefix caching off and on: declined both ways */
        pb_run_summary a, b;
        int64_t steps[2], fast = -1;
        for (int ff = 0; ff < 2; ff++) {
            pb_engine_params ep = v1_params(128);
            ep.check_every_step = false;
            ep.fast_forward = ff == 1;
            sys s;
            sys_init(&s, 16, 300, apc == 1, &ep);
            PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
            steps[ff] = pb_engine_steps(s.e);
            if (ff) fast = pb_engine_fast_forwarded(s.e);
            pb_metrics_summary(s.m, ff ? &b : &a);
            sys_free(&s);
        }
        PB_CHECK_EQ_INT(fast, 0);
        PB_CHECK_EQ_INT(steps[0], steps[1]);
        PB_CHECK(!memcmp(&a, &b, sizeof a));
    }
}

/* ---- V1's KV sizing (spec.h pb_kv_capacity_v1) by hand ---- */

PB_TEST(kv_sizing_v1_by_hand) {
    pb_model m;
    memset(&m, 0, sizeof m);
    m.arch = PB_ARCH_OPT;
    m.n_layers = 2; m.hidden = 64; m.n_heads = 4; m.n_kv_heads = 4; m.head_size = 16;
    m.ffn = 256; m.vocab = 1000; m.max_len = 128; m.n_params = 1; m.dtype_bytes = 2;
    pb_hw hw;
    memset(&hw, 0, sizeof hw);
    hw.mem_bytes = 4 * GIB;
    pb_kv_capacity c;
    /* T = 100 tokens, S = 8 requests, no padding:
       attention 2*100*64 + 100*12*16 + 100*4*16 + 100*64 = 44800,
       MLP max(100*64 + 2*100*256, 2*100*64 + 100*256) = 57600 -> layer 115200 B;
       sampler (100*64 + 8*64)*2 + 8*1000*(2 + 12 + 8) = 13824 + 176000 = 189824 B;
       weights 347904 B (test_vllm_v02); peak 347904 + 189824 = 537728;
       usable ceil(0.92 * 4 GiB) = 3951369912 (3951369912.32 up);
       kv = usable - 537728 - 1.79 GiB - 0.36 GiB; block 8192 B */
    PB_REQUIRE(pb_kv_capacity_v1(&m, &hw, 1, 16, 100, 8, 0.92, true, &c) == PB_OK);
    PB_CHECK_NEAR(c.layer_act_bytes, 115200, 0);
    PB_CHECK_NEAR(c.sampler_bytes, 189824, 0);
    PB_CHECK_NEAR(c.peak_bytes, 537728, 0);
    PB_CHECK_NEAR(c.usable_bytes, 3951369913.0, 0);
    double kv = 3951369913.0 - 537728 - 1.79 * GIB - 0.36 * GIB;
    PB_CHECK_NEAR(c.kv_bytes_per_gpu, kv, 1e-3);
    PB_CHECK_EQ_INT(c.num_blocks, (int64_t)floor(kv / 8192));
    pb_kv_capacity nog;   /* without CUDA graphs their estimate is not taken */
    PB_REQUIRE(pb_kv_capacity_v1(&m, &hw, 1, 16, 100, 8, 0.92, false, &nog) == PB_OK);
    PB_CHECK_NEAR(nog.kv_bytes_per_gpu - c.kv_bytes_per_gpu, 0.36 * GIB, 1e-3);
    pb_kv_capacity tp2;   /* tensor parallel: NCCL's buffers */
    hw.mem_bytes = 8 * GIB;
    PB_REQUIRE(pb_kv_capacity_v1(&m, &hw, 2, 16, 100, 8, 0.92, true, &tp2) == PB_OK);
    PB_CHECK_NEAR(tp2.non_torch_bytes, 3.58 * GIB, 1e-3);
    PB_CHECK(tp2.num_blocks > 0);
    hw.mem_bytes = 2 * GIB;   /* 1.84 GiB usable < 2.15 GiB of non-torch + graphs */
    PB_CHECK(pb_kv_capacity_v1(&m, &hw, 1, 16, 100, 8, 0.92, true, &c) == PB_ERR_NO_SPACE);
    PB_CHECK(pb_kv_capacity_v1(&m, &hw, 1, 16, 8, 9, 0.92, true, &c) == PB_ERR_INVALID);   /* S > T */
}

/* ---- the sim: asynchronous scheduling and V1's CUDA graphs ---- */

/* OPT-13B on the A100-80GB spec */
/* model, hardware and its cost model from the shipped specs */
static void load_spec(const char *model, const char *hardware, pb_model *m, pb_hw *hw, pb_sim_cost *c) {
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_ASSERT(pb_model_load(pb_spec_dir(), model, m, &e) == PB_OK);
    PB_ASSERT(pb_hw_load(pb_spec_dir(), hardware, hw, &e) == PB_OK);
    PB_ASSERT(pb_sim_cost_load(pb_spec_dir(), hardware, c, &e) == PB_OK);
}

static void load_parts(pb_model *m, pb_hw *hw, pb_sim_cost *cost) {
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_ASSERT(pb_model_load(pb_spec_dir(), "opt-13b", m, &e) == PB_OK);
    PB_ASSERT(pb_hw_load(pb_spec_dir(), "a100-80gb", hw, &e) == PB_OK);
    PB_ASSERT(pb_sim_cost_load(pb_spec_dir(), "a100-80gb", cost, &e) == PB_OK);
}

static pb_sim *load_sim(bool async, int32_t graphs, pb_sim_framework fw) {
    pb_model m;
    pb_hw hw;
    pb_sim_cost cost;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    load_parts(&m, &hw, &cost);
    pb_sim_params p = pb_sim_params_default();
    p.framework = fw;
    p.async_sched = async;
    p.graph_max_tokens = graphs;
    pb_sim *s = NULL;
    PB_ASSERT(pb_sim_create(&m, &hw, &cost, 1, &p, &s, &e) == PB_OK);
    return s;
}

/* n decodes of context ctx, blocks of 16 */
static pb_batch decode_batch(pb_batch_seq *q, int n, int32_t ctx) {
    memset(q, 0, (size_t)n * sizeof *q);
    for (int i = 0; i < n; i++) {
        q[i].seq_id = q[i].group_id = i;
        q[i].n_new = 1;
        q[i].context_len = ctx;
        q[i].n_cached = ctx - 1;
        q[i].sample = true;
        q[i].n_blocks = (ctx + 15) / 16;
    }
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = n;
    b.seqs = q;
    b.n_decode = n;
    b.block_size = 16;
    b.n_top = 1;
    return b;
}

PB_TEST(async_scheduling_costs_max_of_host_and_gpu_plus_sync) {
    pb_sim *sync = load_sim(false, 0, PB_SIM_FW_V1), *async = load_sim(true, 0, PB_SIM_FW_V1);
    pb_batch_seq q[64];
    for (int n = 1; n <= 64; n *= 4) {
        pb_batch b = decode_batch(q, n, 500);
        pb_sim_breakdown s, a;
        pb_sim_step_breakdown(sync, &b, &s);
        pb_sim_step_breakdown(async, &b, &a);
        double fwd = fmax(s.gpu_s, s.host_issue_s);
        PB_CHECK_NEAR(s.total_s, s.framework_s + fwd, 1e-15);
        PB_CHECK_NEAR(a.total_s, fmax(a.framework_s, fwd) + 2.5e-6, 1e-15);   /* a100-80gb pcie_copy_latency_us */
        PB_CHECK(a.total_s < s.total_s);
    }
    pb_sim_destroy(sync);
    pb_sim_destroy(async);
}

/* V1's graphs, like v0.2.6's, are priced with the hardware's cuda_graph_* costs: a spec
   without them is refused when either graph mode is on, and accepted eager */
PB_TEST(graph_modes_need_the_hardware_graph_costs) {
    pb_model m;
    pb_hw hw;
    pb_sim_cost cost;
    pb_cfg_err e;
    load_parts(&m, &hw, &cost);
    cost.has_graph_costs = false;
    for (int mode = 0; mode < 3; mode++) {            /* eager, V1's graphs, v0.2.6's graphs */
        pb_sim_params p = pb_sim_params_default();
        p.framework = PB_SIM_FW_V1;
        p.graph_max_tokens = mode == 1 ? 512 : 0;
        p.cuda_graphs = mode == 2;
        pb_sim *s = NULL;
        pb_cfg_err_clear(&e);
        pb_status st = pb_sim_create(&m, &hw, &cost, 1, &p, &s, &e);
        if (mode == 0) {
            PB_CHECK(st == PB_OK);
        } else {
            PB_CHECK(st == PB_ERR_INVALID && s == NULL);
            PB_CHECK(strstr(e.msg, "cuda_graphs needs hardware.cost_model.cuda_graph_launch_us") != NULL);
        }
        pb_sim_destroy(s);
    }
}

PB_TEST(cuda_graphs_issue_one_launch_for_a_decode_step) {
    pb_sim *eager = load_sim(false, 0, PB_SIM_FW_V1), *graphs = load_sim(false, 512, PB_SIM_FW_V1);
    pb_batch_seq q[8];
    pb_batch b = decode_batch(q, 8, 100);
    pb_sim_breakdown e, g;
    pb_sim_step_breakdown(eager, &b, &e);
    pb_sim_step_breakdown(graphs, &b, &g);
    /* the same kernels; a graph's gaps (0.5 us, a100-80gb.yaml) instead of eager ones (0.9) */
    PB_CHECK_NEAR(g.gpu_s, e.gpu_s - (double)e.kernels * (0.9e-6 - 0.5e-6), 1e-12);
    PB_CHECK_NEAR(g.host_issue_s, 15e-6, 1e-15);                    /* one cuda_graph_launch_us */
    /* a prefill of 100 tokens: PIECEWISE, 40 layers x 1 attention launched eagerly (launch_us
       each: e's issue time per kernel) and 41 pieces, one graph launch each */
    pb_batch_seq p;
    memset(&p, 0, sizeof p);
    p.is_prefill = true;
    p.n_new = p.context_len = 100;
    p.sample = true;
    pb_batch pb;
    memset(&pb, 0, sizeof pb);
    pb.n_seqs = 1;
    pb.seqs = &p;
    pb.n_prefill_tokens = 100;
    pb.n_top = 1;
    pb_sim_step_breakdown(eager, &pb, &e);
    pb_sim_step_breakdown(graphs, &pb, &g);
    PB_CHECK_NEAR(g.host_issue_s, 40 * e.host_issue_s / (double)e.kernels + 41 * 15e-6, 1e-15);
    PB_CHECK_NEAR(g.gpu_s, e.gpu_s - ((double)e.kernels - 40) * (0.9e-6 - 0.5e-6), 1e-12);
    pb.n_prefill_tokens = p.n_new = p.context_len = 600;   /* over 512: eager */
    pb_sim_step_breakdown(eager, &pb, &e);
    pb_sim_step_breakdown(graphs, &pb, &g);
    PB_CHECK_NEAR(g.host_issue_s, e.host_issue_s, 0);
    pb_sim_destroy(eager);
    pb_sim_destroy(graphs);
}

/* The flash kernel's terms by hand: OPT-13B (40 layers, 40 heads of 128) on the
   A100-80GB's cost model. */
/* custom_allreduce (V1's default): the layers' two all-reduces per layer at the hardware's
   custom_allreduce_tpN terms, the logits gather at NCCL's; without it both at NCCL's; a
   spec without the terms at that tp is refused (h100-sxm has them, a100-80gb not) */
PB_TEST(custom_allreduce_prices_the_layers_allreduces) {
    pb_model m;
    pb_hw hw, a100;
    pb_sim_cost cost, cost_a100;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    pb_model ma;
    load_spec("llama-2-70b", "h100-sxm", &m, &hw, &cost);
    load_spec("llama-2-70b", "a100-80gb", &ma, &a100, &cost_a100);
    PB_CHECK(cost.has_custom_ar[0] && cost.has_custom_ar[1] && cost.has_custom_ar[2]);
    PB_CHECK(!cost_a100.has_custom_ar[0] && !cost_a100.has_custom_ar[2]);
    PB_CHECK_NEAR(cost.custom_ar_lat_s[2], 8.84e-6, 1e-12);     /* h100-sxm.yaml custom_allreduce_tp8_us */
    pb_batch_seq q[4];
    pb_batch b = decode_batch(q, 4, 300);
    const int tps[] = {2, 4, 8};
    for (int i = 0; i < 3; i++) {
        pb_sim_params p = pb_sim_params_default();
        p.framework = PB_SIM_FW_V1;
        pb_sim *nccl = NULL, *custom = NULL;
        PB_ASSERT(pb_sim_create(&m, &hw, &cost, tps[i], &p, &nccl, &e) == PB_OK);
        p.custom_allreduce = true;
        PB_ASSERT(pb_sim_create(&m, &hw, &cost, tps[i], &p, &custom, &e) == PB_OK);
        pb_sim_breakdown on, oc;
        pb_sim_step_breakdown(nccl, &b, &on);
        pb_sim_step_breakdown(custom, &b, &oc);
        double L = m.n_layers, bytes = 4.0 * m.hidden * 2, gather = 4.0 * m.vocab * 2;
        double ng = cost.ar_lat_s[i] + gather / cost.ar_bw[i];
        PB_CHECK_NEAR(on.allreduce_s, L * 2 * (cost.ar_lat_s[i] + bytes / cost.ar_bw[i]) + ng, 1e-12);
        PB_CHECK_NEAR(oc.allreduce_s, L * 2 * (cost.custom_ar_lat_s[i] + bytes / cost.custom_ar_bw[i]) + ng, 1e-12);
        PB_CHECK(oc.allreduce_s < on.allreduce_s / 2);                /* ~9 us vs ~30 us each at 32 KB */
        PB_CHECK_NEAR(oc.gpu_s - oc.allreduce_s, on.gpu_s - on.allreduce_s, 1e-12);   /* nothing else moves */
        pb_sim_destroy(nccl);
        pb_sim_destroy(custom);
        pb_sim *refused = NULL;
        pb_cfg_err_clear(&e);
        PB_CHECK(pb_sim_create(&m, &a100, &cost_a100, tps[i], &p, &refused, &e) == PB_ERR_INVALID && refused == NULL);
        PB_CHECK_STR_CONTAINS(e.msg, "custom_allreduce at tp");
    }
    pb_sim_params p = pb_sim_params_default();     /* tp 1: nothing to reduce, no terms needed */
    p.custom_allreduce = true;
    pb_sim *one = NULL;
    PB_CHECK(pb_sim_create(&m, &a100, &cost_a100, 1, &p, &one, &e) == PB_OK);
    pb_sim_destroy(one);
}

PB_TEST(flash_attention_terms_by_hand) {
    pb_model m;
    pb_hw hw;
    pb_sim_cost c;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_model_load(pb_spec_dir(), "opt-13b", &m, &e) == PB_OK);
    PB_REQUIRE(pb_hw_load(pb_spec_dir(), "a100-80gb", &hw, &e) == PB_OK);
    PB_REQUIRE(pb_sim_cost_load(pb_spec_dir(), "a100-80gb", &c, &e) == PB_OK);
    pb_sim_params p = pb_sim_params_default();
    p.attn = PB_SIM_ATTN_FLASH;
    pb_sim *s = NULL;
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 1, &p, &s, &e) == PB_OK);
    double kv_tok = 2.0 * 40 * 128 * 2;   /* K and V bytes per token per layer */
    pb_batch_seq q[8];
    pb_batch b = decode_batch(q, 8, 300);
    pb_sim_breakdown o;
    pb_sim_step_breakdown(s, &b, &o);
    double dec = 40 * (c.flash_dec_fixed_s + c.flash_dec_seq_head_s * 8 * 40 + 8 * 300 * kv_tok / (hw.hbm_bw * c.flash_dec_bw_eff));
    PB_CHECK_NEAR(o.decode_attn_s, dec, 1e-15);
    PB_CHECK_NEAR(o.prefill_attn_s, 0, 0);
    /* a chunk of 256 tokens after 512 cached: pairs 256 x 512 + 256 x 257 / 2 */
    pb_batch_seq pq;
    memset(&pq, 0, sizeof pq);
    pq.is_prefill = true;
    pq.n_new = 256;
    pq.n_cached = 512;
    pq.context_len = 768;
    pb_batch pb;
    memset(&pb, 0, sizeof pb);
    pb.n_seqs = 1;
    pb.seqs = &pq;
    pb.n_prefill_tokens = 256;
    pb.n_top = 1;
    pb_sim_step_breakdown(s, &pb, &o);
    double pairs = 256.0 * 512 + 256.0 * 257 / 2, flops = 4.0 * 40 * 128 * pairs;
    double bytes = 256.0 * (2 * 40 + 2 * 40) * 128 * 2 + 512 * kv_tok;
    double pre = 40 * (c.flash_pre_fixed_s + flops / (hw.fp16_flops * c.flash_pre_flops_eff) +
                       bytes / (hw.hbm_bw * c.flash_pre_bw_eff));
    PB_CHECK_NEAR(o.prefill_attn_s, pre, 1e-15);
    pb_sim_destroy(s);
}

/* flash_version 3 (FlashAttention-3, V1 on Hopper): the prefill's FLOPs at
   flash3_prefill_flops_efficiency, everything else as FlashAttention-2; a GPU without
   the term refuses it; V1's auto picks 3 exactly where the term is given. */
PB_TEST(flash_attention_3_prefill_by_hand) {
    pb_model m;
    pb_hw hw, a100;
    pb_sim_cost c, ca;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    pb_model ma;
    load_spec("llama-3-8b", "h100-sxm", &m, &hw, &c);
    load_spec("llama-3-8b", "a100-80gb", &ma, &a100, &ca);
    PB_CHECK_NEAR(c.flash3_pre_flops_eff, 0.7061, 1e-12);      /* h100-sxm.yaml */
    PB_CHECK(ca.flash3_pre_flops_eff == 0);                    /* not given on the A100 */
    pb_sim_params p = pb_sim_params_default();
    PB_CHECK(p.flash_version == 2);
    p.attn = PB_SIM_ATTN_FLASH;
    pb_sim *fa2 = NULL, *fa3 = NULL;
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 1, &p, &fa2, &e) == PB_OK);
    p.flash_version = 3;
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 1, &p, &fa3, &e) == PB_OK);
    /* a 1,000-token prompt in one chunk plus 8 decodes: 32 query / 8 KV heads of 128, 32 layers */
    pb_batch_seq q[9];
    pb_batch b = decode_batch(q, 8, 300);
    memset(&q[8], 0, sizeof q[8]);
    q[8].seq_id = q[8].group_id = 8;
    q[8].is_prefill = true;
    q[8].n_new = 1000;
    q[8].context_len = 1000;
    q[8].n_blocks = (1000 + 15) / 16;
    q[8].sample = true;
    b.n_seqs = 9;
    b.n_prefill_tokens = 1000;
    pb_sim_breakdown o2, o3;
    pb_sim_step_breakdown(fa2, &b, &o2);
    pb_sim_step_breakdown(fa3, &b, &o3);
    double L = 32, flops = 4.0 * 32 * 128 * (1000.0 * 1001 / 2), bytes = 1000.0 * (2 * 32 + 2 * 8) * 128 * 2;
    double rest = c.flash_pre_fixed_s + bytes / (hw.hbm_bw * c.flash_pre_bw_eff);
    PB_CHECK_NEAR(o2.prefill_attn_s, L * (rest + flops / (hw.fp16_flops * c.flash_pre_flops_eff)), 1e-15);
    PB_CHECK_NEAR(o3.prefill_attn_s, L * (rest + flops / (hw.fp16_flops * c.flash3_pre_flops_eff)), 1e-15);
    PB_CHECK(o3.prefill_attn_s < o2.prefill_attn_s);
    PB_CHECK_NEAR(o3.decode_attn_s, o2.decode_attn_s, 0);               /* decode stays FA2's */
    PB_CHECK_NEAR(o3.gpu_s - o3.prefill_attn_s, o2.gpu_s - o2.prefill_attn_s, 1e-15);   /* nothing else moves */
    pb_sim_destroy(fa2);
    pb_sim_destroy(fa3);
    pb_sim *refused = NULL;
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_sim_create(&m, &a100, &ca, 1, &p, &refused, &e) == PB_ERR_INVALID && refused == NULL);
    PB_CHECK_STR_CONTAINS(e.msg, "flash_attn_version 3 needs hardware.cost_model.flash3_prefill_flops_efficiency");
    p.flash_version = 4;
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_sim_create(&m, &hw, &c, 1, &p, &refused, &e) == PB_ERR_INVALID && refused == NULL);
    PB_CHECK_STR_CONTAINS(e.msg, "flash_version 4");
}

/* V1's fused element-wise work (executor_sim.h "Fused element-wise work"): fused_add_norm
   makes each layer's residual add + norm one kernel (2 a layer instead of 4; 8 h bytes a
   token instead of 10 h); ar_norm_max_tokens at tp > 1 drops them into the all-reduce
   kernels for steps of at most that many tokens, and nothing else moves. Llama-2-70B on
   the h100-sxm spec at tp 8; the spec's fusion size and the engines' defaults. */
PB_TEST(fused_add_norm_and_allreduce_norm_fusion_by_hand) {
    pb_model m;
    pb_hw hw;
    pb_sim_cost c;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    load_spec("llama-2-70b", "h100-sxm", &m, &hw, &c);
    PB_CHECK_NEAR(c.ar_norm_fusion_bytes[2], 0.5 * 1024 * 1024, 0);   /* h100-sxm.yaml: tp 8, 0.5 MiB */
    PB_CHECK_NEAR(c.ar_norm_fusion_bytes[0], 64.0 * 1024 * 1024, 0);
    pb_sim_params p = pb_sim_params_default();
    PB_CHECK(!p.fused_add_norm && p.ar_norm_max_tokens == 0);
    p.framework = PB_SIM_FW_V1;
    p.custom_allreduce = true;
    pb_sim *plain = NULL, *fan = NULL, *arn = NULL;
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 8, &p, &plain, &e) == PB_OK);
    p.fused_add_norm = true;
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 8, &p, &fan, &e) == PB_OK);
    p.ar_norm_max_tokens = 32;   /* 0.5 MiB / (8192 x 2 bytes) */
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 8, &p, &arn, &e) == PB_OK);
    const double L = 80, h = 8192, dt = 2, ef = c.elem_fixed_s, bw = hw.hbm_bw * c.elem_bw_eff;
    pb_batch_seq q[64];
    const int sizes[] = {8, 32, 33, 64};
    for (int i = 0; i < 4; i++) {
        int n = sizes[i];
        pb_batch b = decode_batch(q, n, 300);
        pb_sim_breakdown o0, o1, o2;
        pb_sim_step_breakdown(plain, &b, &o0);
        pb_sim_step_breakdown(fan, &b, &o1);
        pb_sim_step_breakdown(arn, &b, &o2);
        /* fused add + norm: 2 kernels and 2 h dt bytes a token fewer in each layer */
        PB_CHECK_NEAR(o0.elementwise_s - o1.elementwise_s, L * (n * 2 * h * dt / bw + 2 * ef), 1e-12);
        PB_CHECK(o0.kernels - o1.kernels == 2 * 80);
        /* the all-reduce fusion: the remaining 2 a layer and their 8 h dt bytes, up to 32 tokens */
        double away = n <= 32 ? L * (n * 8 * h * dt / bw + 2 * ef) : 0;
        PB_CHECK_NEAR(o1.elementwise_s - o2.elementwise_s, away, 1e-12);
        PB_CHECK(o1.kernels - o2.kernels == (n <= 32 ? 2 * 80 : 0));
        PB_CHECK_NEAR(o2.allreduce_s, o1.allreduce_s, 0);         /* the all-reduces keep their terms */
        PB_CHECK_NEAR(o2.gemm_s + o2.decode_attn_s, o1.gemm_s + o1.decode_attn_s, 0);
    }
    pb_sim_destroy(plain);
    pb_sim_destroy(fan);
    pb_sim_destroy(arn);
    pb_sim *one = NULL;                                            /* tp 1: nothing to fuse into */
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 1, &p, &one, &e) == PB_OK);
    p.ar_norm_max_tokens = 0;
    pb_sim *one0 = NULL;
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 1, &p, &one0, &e) == PB_OK);
    pb_batch b = decode_batch(q, 8, 300);
    pb_sim_breakdown a, z;
    pb_sim_step_breakdown(one, &b, &a);
    pb_sim_step_breakdown(one0, &b, &z);
    PB_CHECK_NEAR(a.gpu_s, z.gpu_s, 0);
    pb_sim_destroy(one);
    pb_sim_destroy(one0);
    p.ar_norm_max_tokens = -1;
    pb_sim *bad = NULL;
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_sim_create(&m, &hw, &c, 8, &p, &bad, &e) == PB_ERR_INVALID && bad == NULL);
}

/* The engines' defaults of V1's kernel knobs: v0.1 / v0.2 run NCCL, FlashAttention-2 (when
   the flash kernel is chosen) and no fusion; v1 its own all-reduce kernels, FA3 where the
   GPU has its term, and the all-reduce + RMSNorm fusion where the GPU gives its size. */
PB_TEST(engine_defaults_of_the_kernel_knobs) {
    pb_hw hw = {.name = "H100-SXM", .mem_bytes = 80.0 * 1024 * 1024 * 1024};
    const pb_vllm_version vs[] = {PB_VLLM_V01, PB_VLLM_V02, PB_VLLM_V1};
    for (int i = 0; i < 3; i++) {
        pb_vllm_knobs k;
        pb_vllm_knobs_default(vs[i], 4096, &hw, &k);
        bool v1 = vs[i] == PB_VLLM_V1;
        PB_CHECK(k.custom_allreduce == v1);
        PB_CHECK(k.fuse_allreduce_rms == v1);
        PB_CHECK(k.flash_attn_version == (v1 ? PB_FLASH_AUTO : 2));
    }
}

PB_TEST_MAIN()
