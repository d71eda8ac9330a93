/* test_kv_format.c -- the physics behind a system's kv_cache_dtype, kv_scale and
 * cuda_graphs keys (experiments/system.c passes them on; tests/cli_kv_graphs.sh runs
 * them from a YAML):
 *   kv_cache_dtype  one-byte KV elements (spec.h kv_dtype_bytes): Table 1's KV
 *                   blocks double (the same memory, half the block bytes), the cost
 *                   model's decode attention reads and swap copies halve;
 *   kv_scale        the cpu executor's KV cache stores fp8(x / kv_scale): its
 *                   logprobs move a little from the fp32 cache's with a good scale
 *                   and a lot with one that saturates every element;
 *   cuda_graphs     a decode step is priced at its padded batch size, with one graph
 *                   launch on the host and the graph's node gaps on the GPU; prefill
 *                   steps and batches over 256 stay eager.
 *   cmake --build build && (cd build && ctest -R test_kv_format --output-on-failure) */
#include <math.h>
#include <string.h>

#include "executor_real.h"
#include "executor_sim.h"
#include "graph_pool.h"
#include "pbtest.h"
#include "spec.h"

static void load_spec(const char *model, const char *hw, pb_model *m, pb_hw *h, pb_sim_cost *c) {
    pb_cfg_err e;
    memset(&e, 0, sizeof e);
    PB_ASSERT(pb_model_load(pb_spec_dir(), model, m, &e) == PB_OK);
    PB_ASSERT(pb_hw_load(pb_spec_dir(), hw, h, &e) == PB_OK);
    if (c) PB_ASSERT(pb_sim_cost_load(pb_spec_dir(), hw, c, &e) == PB_OK);
}

PB_TEST(fp8_kv_doubles_table1_slots) {
    pb_model m;
    pb_hw h;
    load_spec("opt-13b", "a100-40gb", &m, &h, NULL);
    pb_kv_capacity a, b;
    PB_REQUIRE(pb_kv_capacity_compute(&m, &h, 1, 16, PB_KV_PROFILE_TOKENS, 0.95, &a) == PB_OK);
    pb_model m8 = m;
    m8.kv_dtype_bytes = 1;
    PB_CHECK_NEAR(pb_kv_bytes_per_token(&m8, 1), 0.5 * pb_kv_bytes_per_token(&m, 1), 0);
    PB_REQUIRE(pb_kv_capacity_compute(&m8, &h, 1, 16, PB_KV_PROFILE_TOKENS, 0.95, &b) == PB_OK);
    PB_CHECK_NEAR(b.kv_bytes_per_gpu, a.kv_bytes_per_gpu, 0);      /* weights and activations stay fp16 */
    PB_CHECK(b.num_blocks == 2 * a.num_blocks || b.num_blocks == 2 * a.num_blocks + 1);
    /* v0.2's profiling rule too */
    PB_REQUIRE(pb_kv_capacity_profile(&m, &h, 1, 16, 2048, 256, 0.9, &a) == PB_OK);
    PB_REQUIRE(pb_kv_capacity_profile(&m8, &h, 1, 16, 2048, 256, 0.9, &b) == PB_OK);
    PB_CHECK(b.num_blocks == 2 * a.num_blocks || b.num_blocks == 2 * a.num_blocks + 1);
}

PB_TEST(fp8_kv_halves_the_cost_models_kv_bytes) {
    pb_model m, m8;
    pb_hw h;
    pb_sim_cost c;
    load_spec("opt-13b", "a100-40gb", &m, &h, &c);
    m8 = m;
    m8.kv_dtype_bytes = 1;
    pb_sim_params p = pb_sim_params_default();
    pb_sim *s, *s8;
    PB_REQUIRE(pb_sim_create(&m, &h, &c, 1, &p, &s, NULL) == PB_OK);
    PB_REQUIRE(pb_sim_create(&m8, &h, &c, 1, &p, &s8, NULL) == PB_OK);
    /* swap: per copy latency + bytes / bandwidth, the bytes halved */
    const double L = m.n_layers, blk = 16.0 * m.n_kv_heads * m.head_size;
    PB_CHECK_NEAR(pb_sim_swap_time(s8, 10, 16, true), 10 * L * 2 * (c.swap_h2d_copy_s + blk / c.swap_h2d_bw), 1e-12);
    PB_CHECK_NEAR(pb_sim_swap_time(s, 10, 16, true), 10 * L * 2 * (c.swap_h2d_copy_s + 2 * blk / c.swap_h2d_bw), 1e-12);
    /* decode attention: the live-KV term halves, the per-call and per-block terms stay */
    pb_batch_seq q[64];
    memset(q, 0, sizeof q);
    for (int i = 0; i < 64; i++) { q[i].n_new = 1; q[i].n_cached = 1023; q[i].context_len = 1024; q[i].sample = true; }
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = 64; b.seqs = q; b.n_decode = 64; b.block_size = 16; b.n_top = 1;
    pb_sim_breakdown o, o8;
    pb_sim_step_breakdown(s, &b, &o);
    pb_sim_step_breakdown(s8, &b, &o8);
    double stream = L * 64 * 1024 * 2.0 * m.n_kv_heads * m.head_size * 2 / (h.hbm_bw * c.attn_stream_eff);
    PB_CHECK_NEAR(o.decode_attn_s - o8.decode_attn_s, 0.5 * stream, 1e-12);
    PB_CHECK(o8.elementwise_s < o.elementwise_s);                 /* the KV write stores half */
    PB_CHECK_NEAR(o8.gemm_s, o.gemm_s, 0);                        /* the weights do not change */
    pb_sim_destroy(s);
    pb_sim_destroy(s8);
}

/* logprobs of a prefill + 6 decode steps of tiny-opt on the cpu executor */
static void cpu_logprobs(pb_kv_cache_dtype kvc, float kv_scale, float *lp) {
    pb_model m;
    pb_hw h;
    load_spec("tiny-opt", "a100-40gb", &m, &h, NULL);
    pb_real_exec_params p;
    pb_real_exec_params_default(&p);
    p.block_size = 8;
    p.num_gpu_blocks = 16;
    p.weight_seed = 3;
    p.max_tokens_hint = 64;
    p.kv_cache_dtype = kvc;
    p.kv_scale = kv_scale;
    pb_executor *ex = NULL;
    PB_ASSERT(pb_executor_cpu_create(&m, &p, &ex) == PB_OK);
    int32_t tok[64], bt[8] = {3, 1, 4, 7, 5, 9, 2, 6};
    for (int i = 0; i < 40; i++) tok[i] = (i * 37 + 11) % m.vocab;
    int32_t len = 40;
    for (int step = 0; step < 7; step++) {
        pb_batch_seq q;
        memset(&q, 0, sizeof q);
        q.is_prefill = step == 0;
        q.n_new = step == 0 ? len : 1;
        q.n_cached = len - q.n_new;
        q.context_len = len;
        q.sample = true;
        q.block_table = bt; q.n_blocks = 8; q.tokens = tok;
        pb_batch b;
        memset(&b, 0, sizeof b);
        b.n_seqs = 1; b.seqs = &q; b.block_size = 8; b.n_top = 1;
        b.n_prefill_tokens = step == 0 ? len : 0;
        b.n_decode = step == 0 ? 0 : 1;
        pb_step_result r;
        pb_candidates cand;
        PB_ASSERT(pb_executor_execute(ex, &b, &r, &cand) == PB_OK);
        lp[step] = cand.logprob[0];
        tok[len++] = (step * 53 + 7) % m.vocab;        /* the same continuation in every run */
    }
    pb_executor_destroy(ex);
}

PB_TEST(kv_scale_moves_the_cpu_executors_numerics) {
    float ref[7], e4[7], e4s[7], e5[7], sat[7];
    cpu_logprobs(PB_KV_CACHE_AUTO, 1.0f, ref);
    cpu_logprobs(PB_KV_CACHE_FP8_E4M3, 1.0f, e4);
    cpu_logprobs(PB_KV_CACHE_FP8_E4M3, 0.25f, e4s);
    cpu_logprobs(PB_KV_CACHE_FP8_E5M2, 1.0f, e5);
    cpu_logprobs(PB_KV_CACHE_FP8_E4M3, 1e-6f, sat);   /* every element saturates at 448e-6 */
    double d4 = 0, d4s = 0, d5 = 0, ds = 0;
    for (int i = 0; i < 7; i++) {
        d4 = fmax(d4, fabs(e4[i] - ref[i]));
        d4s = fmax(d4s, fabs(e4s[i] - ref[i]));
        d5 = fmax(d5, fabs(e5[i] - ref[i]));
        ds = fmax(ds, fabs(sat[i] - ref[i]));
    }
    PB_CHECK(d4 > 0 && d4s > 0 && d4 != d4s);   /* the scale reaches the cache */
    PB_CHECK(d4 < 0.1 && d5 < 0.2);             /* small: 3 and 2 mantissa bits */
    PB_CHECK(ds > 10 * d4);                     /* a saturating scale wrecks it */
    /* a cache with a bad scale cannot be made */
    pb_model m;
    pb_hw h;
    load_spec("tiny-opt", "a100-40gb", &m, &h, NULL);
    pb_real_exec_params p;
    pb_real_exec_params_default(&p);
    p.kv_cache_dtype = PB_KV_CACHE_FP8_E4M3;
    p.kv_scale = 0;
    pb_executor *ex = NULL;
    PB_CHECK(pb_executor_cpu_create(&m, &p, &ex) == PB_ERR_INVALID);
}

/* a decode step of n sequences of context ctx */
static pb_sim_breakdown decode_step(const pb_sim *s, int n, int ctx) {
    static pb_batch_seq q[300];
    memset(q, 0, sizeof q);
    for (int i = 0; i < n; i++) { q[i].n_new = 1; q[i].n_cached = ctx - 1; q[i].context_len = ctx; q[i].sample = true; }
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = n; b.seqs = q; b.n_decode = n; b.block_size = 16; b.n_top = 1;
    pb_sim_breakdown o;
    pb_sim_step_breakdown(s, &b, &o);
    return o;
}

PB_TEST(cuda_graphs_pad_and_collapse_launches) {
    pb_model m;
    pb_hw h;
    pb_sim_cost c;
    load_spec("llama-13b", "h100-sxm", &m, &h, &c);
    PB_REQUIRE(c.has_graph_costs);
    pb_sim_params pe = pb_sim_params_default(), pg = pe;
    pg.cuda_graphs = true;
    pb_sim *se, *sg;
    PB_REQUIRE(pb_sim_create(&m, &h, &c, 1, &pe, &se, NULL) == PB_OK);
    PB_REQUIRE(pb_sim_create(&m, &h, &c, 1, &pg, &sg, NULL) == PB_OK);
    pb_sim_breakdown e3 = decode_step(se, 3, 512), g3 = decode_step(sg, 3, 512), e4 = decode_step(se, 4, 512);
    PB_CHECK_EQ_INT(g3.graph_batch, 4);
    PB_CHECK_EQ_INT(e3.graph_batch, 0);
    PB_CHECK_NEAR(g3.gemm_s, e4.gemm_s, 0);                  /* GEMMs at the padded batch */
    PB_CHECK(g3.decode_attn_s > e3.decode_attn_s && g3.decode_attn_s < e4.decode_attn_s);  /* pads attend 1 token */
    PB_CHECK_EQ_INT(g3.kernels, e3.kernels);
    const double launch = c.fw[PB_SIM_FW_PYTHON].launch_s, eager = 6;   /* LM head + 5 sampling kernels */
    PB_CHECK_NEAR(g3.host_issue_s, c.graph_launch_s + eager * launch, 1e-15);
    PB_CHECK_NEAR(e3.host_issue_s, (double)e3.kernels * launch, 1e-15);
    PB_CHECK_NEAR(e4.gpu_s - e4.gemm_s - e4.decode_attn_s - e4.elementwise_s - e4.lm_head_s - e4.sampling_s -
                      (g3.gpu_s - g3.gemm_s - g3.decode_attn_s - g3.elementwise_s - g3.lm_head_s - g3.sampling_s),
                  ((double)e3.kernels - eager) * (c.kernel_gap_s - c.graph_node_gap_s), 1e-12);
    PB_CHECK(g3.sampling_s == e3.sampling_s);                /* sampling stays on the real rows */
    /* every batch 1..256 replays its bucket; 257 and prefills are eager */
    for (int n = 1; n <= 256; n += 17) PB_CHECK_EQ_INT(decode_step(sg, n, 100).graph_batch, pb_graph_bucket(n));
    PB_CHECK_EQ_INT(decode_step(sg, 257, 100).graph_batch, 0);
    PB_CHECK(pb_sim_prefill_time(sg, 100) == pb_sim_prefill_time(se, 100));
    /* at batch 1 the eager step is host-bound on H100 (LLaMA-13B: ~440 launches x 10 us); graphs are not */
    PB_CHECK(pb_sim_decode_time(sg, 1, 512, 16) < pb_sim_decode_time(se, 1, 512, 16));
    pb_sim_destroy(se);
    pb_sim_destroy(sg);
    /* a hardware spec without the graph costs refuses cuda_graphs */
    c.has_graph_costs = false;
    pb_cfg_err err;
    memset(&err, 0, sizeof err);
    PB_CHECK(pb_sim_create(&m, &h, &c, 1, &pg, &sg, &err) == PB_ERR_INVALID && strstr(err.msg, "cuda_graph"));
}

PB_TEST_MAIN()
