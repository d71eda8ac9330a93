/* test_vllm_v02.c -- the modelled vLLM versions (engine/vllm_version.h): the defaults
 * table, v0.2's KV sizing by a profiling pass (spec.h pb_kv_capacity_profile) against
 * numbers computed by hand, and the sim charging a padded prompt step at its padded
 * size (executor.h n_padded_tokens).
 *   cmake --build build && (cd build && ctest -R test_vllm_v02 --output-on-failure) */
#include <stdio.h>
#include <string.h>

#include "executor_sim.h"
#include "pbtest.h"
#include "spec.h"
#include "vllm_version.h"

PB_TEST(version_defaults_table) {
    pb_vllm_knobs k;
    pb_vllm_knobs_default(PB_VLLM_V01, 2048, NULL, &k);
    PB_CHECK(k.step_mode == PB_STEP_MIXED && k.kv_rule == PB_KV_RULE_HARNESS);
    PB_CHECK_EQ_INT(k.max_paddings, -1);
    PB_CHECK_EQ_INT(k.max_num_batched_tokens, 2560);
    PB_CHECK_EQ_INT(k.max_num_seqs, 256);
    PB_CHECK_NEAR(k.gpu_mem_util, 0.95, 0);
    PB_CHECK_EQ_INT(pb_vllm_knobs_profile_tokens(&k), PB_KV_PROFILE_TOKENS);
    pb_vllm_knobs_default(PB_VLLM_V02, 2048, NULL, &k);
    PB_CHECK(k.step_mode == PB_STEP_ALTERNATE && k.kv_rule == PB_KV_RULE_PROFILE);
    PB_CHECK_EQ_INT(k.max_paddings, 256);
    PB_CHECK_EQ_INT(k.max_num_batched_tokens, 2048);          /* max(2048, 2048) */
    PB_CHECK_NEAR(k.gpu_mem_util, 0.90, 0);
    PB_CHECK_EQ_INT(pb_vllm_knobs_profile_tokens(&k), 2048);
    pb_vllm_knobs_default(PB_VLLM_V02, 4096, NULL, &k);
    PB_CHECK_EQ_INT(k.max_num_batched_tokens, 4096);          /* max(4096, 2048) */
    k.max_num_batched_tokens = 5000;                           /* an override ...   */
    PB_CHECK_EQ_INT(pb_vllm_knobs_profile_tokens(&k), 5000);   /* ... moves the pass */
    pb_vllm_version v;
    PB_CHECK(pb_vllm_version_parse("v0.2", &v) && v == PB_VLLM_V02);
    PB_CHECK(!pb_vllm_version_parse("v0.3", &v));
    PB_CHECK(!strcmp(pb_vllm_version_str(PB_VLLM_V01), "v0.1"));
}

static pb_model tiny_opt(void) {
    pb_model m;
    memset(&m, 0, sizeof m);
    m.arch = PB_ARCH_OPT;
    m.n_layers = 2; m.hidden = 64; m.n_heads = 4; m.n_kv_heads = 4; m.head_size = 16;
    m.ffn = 256; m.vocab = 1000; m.max_len = 128; m.n_params = 1; m.dtype_bytes = 2;
    return m;
}

PB_TEST(profile_pass_opt_by_hand) {
    pb_model m = tiny_opt();
    /* weights (elements): embed 1024*64 (vocab 1000 padded to 1024) = 65536; positions
       130*64 = 8320; per layer qkv 12288+192, out 4096+64, fc1 16384+256, fc2 16384+64,
       LayerNorms 256 = 49984, x2 = 99968; final LayerNorm 128: 173952 -> 347904 B */
    PB_CHECK_NEAR(pb_weight_bytes_per_gpu(&m, 1), 347904, 0);
    pb_hw hw;
    memset(&hw, 0, sizeof hw);
    hw.mem_bytes = 1e7;
    pb_kv_capacity c;
    /* T = 100 tokens over S = 8 seqs -> rows of ceil(100/8) = 13, Tp = 104
       attention: 2*104*64 + 104*12*16 + 104*4*16 + 104*64 = 46592
       MLP: max(104*64 + 2*104*256, 2*104*64 + 104*256) = 59904 -> layer 119808 B
       sampler: (104*64 + 8*64)*2 + 8*1000*(5*2 + 16 + 3) = 14336 + 232000 = 246336 B
       peak = 347904 + 246336 = 594240; kv = 0.9e7 - 594240 = 8405760 B
       block = 2*2 layers*4 heads*16*2 B*16 tokens = 8192 B -> 1026 blocks */
    PB_REQUIRE(pb_kv_capacity_profile(&m, &hw, 1, 16, 100, 8, 0.9, &c) == PB_OK);
    PB_CHECK_NEAR(c.layer_act_bytes, 119808, 0);
    PB_CHECK_NEAR(c.sampler_bytes, 246336, 0);
    PB_CHECK_NEAR(c.peak_bytes, 594240, 0);
    PB_CHECK_NEAR(c.kv_bytes_per_gpu, 8405760, 1e-6);
    PB_CHECK_EQ_INT(c.num_blocks, 1026);
    PB_CHECK_EQ_INT(c.num_slots, 1026 * 16);
    /* more sequences in the pass: a larger sampler, fewer blocks */
    pb_kv_capacity c2;
    PB_REQUIRE(pb_kv_capacity_profile(&m, &hw, 1, 16, 100, 50, 0.9, &c2) == PB_OK);
    PB_CHECK(c2.sampler_bytes > c.sampler_bytes && c2.num_blocks < c.num_blocks);
    /* bad arguments, and a peak that leaves nothing */
    PB_CHECK(pb_kv_capacity_profile(&m, &hw, 1, 16, 8, 9, 0.9, &c2) == PB_ERR_INVALID);   /* S > T */
    PB_CHECK(pb_kv_capacity_profile(&m, &hw, 3, 16, 100, 8, 0.9, &c2) == PB_ERR_INVALID); /* 4 heads % 3 */
    hw.mem_bytes = 6e5;
    PB_CHECK(pb_kv_capacity_profile(&m, &hw, 1, 16, 100, 8, 0.9, &c2) == PB_ERR_NO_SPACE);
}

PB_TEST(profile_pass_llama_gqa_tp2_by_hand) {
    pb_model m;
    memset(&m, 0, sizeof m);
    m.arch = PB_ARCH_LLAMA;
    m.n_layers = 1; m.hidden = 64; m.n_heads = 4; m.n_kv_heads = 2; m.head_size = 16;
    m.ffn = 128; m.vocab = 100; m.max_len = 64; m.n_params = 1; m.dtype_bytes = 2;
    /* per GPU at tp 2: embed + lm_head 2*128*64/2 = 8192; qkv 64*8*16/2 = 4096, o 2048,
       gate_up + down 3*64*128/2 = 12288, RMSNorms 128; norm 64: 26816 -> 53632 B */
    PB_CHECK_NEAR(pb_weight_bytes_per_gpu(&m, 2), 53632, 0);
    pb_hw hw;
    memset(&hw, 0, sizeof hw);
    hw.mem_bytes = 1e6;
    pb_kv_capacity c;
    /* T = 64, S = 4 -> Tp = 64
       attention: 2*64*64 + 64*8*16/2 + 64*4*16/2 + 64*64 = 18432
       MLP: 2*64*64 + 3*64*128/2 = 20480 -> layer 40960 B (> sampler)
       sampler: (64*64 + 4*64)*2 + 4*100*29 = 8704 + 11600 = 20304 B
       peak = 53632 + 40960 = 94592; kv = 0.5e6 - 94592 = 405408
       block = 2*1*(2/2)*16*2*8 = 512 B -> 791 blocks */
    PB_REQUIRE(pb_kv_capacity_profile(&m, &hw, 2, 8, 64, 4, 0.5, &c) == PB_OK);
    PB_CHECK_NEAR(c.layer_act_bytes, 40960, 0);
    PB_CHECK_NEAR(c.sampler_bytes, 20304, 0);
    PB_CHECK_NEAR(c.peak_bytes, 94592, 0);
    PB_CHECK_EQ_INT(c.num_blocks, 791);
    PB_CHECK_NEAR(c.kv_bytes_total, 2 * 405408.0, 1e-6);
}

PB_TEST(opt13b_a100_80gb_v02_profile_is_printed) {
    pb_model m;
    pb_hw hw;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_model_load(pb_spec_dir(), "opt-13b", &m, &e) == PB_OK);
    PB_REQUIRE(pb_hw_load(pb_spec_dir(), "a100-80gb", &hw, &e) == PB_OK);
    pb_kv_capacity v1, v2;
    PB_REQUIRE(pb_kv_capacity_compute(&m, &hw, 1, 16, PB_KV_PROFILE_TOKENS, 0.95, &v1) == PB_OK);
    PB_REQUIRE(pb_kv_capacity_profile(&m, &hw, 1, 16, 2048, 1024, 0.95, &v2) == PB_OK);
    fprintf(stderr, "  OPT-13B, A100-80GB, util 0.95: harness rule %lld blocks; v0.2 profile "
            "(2048 tokens, 1024 seqs) %lld blocks: weights %.3f GB, layer %.1f MB, sampler %.1f MB\n",
            (long long)v1.num_blocks, (long long)v2.num_blocks, v2.param_bytes_per_gpu / 1e9,
            v2.layer_act_bytes / 1e6, v2.sampler_bytes / 1e6);
    /* 1024 x 50272 logits at 29 B each dominate the activations */
    PB_CHECK(v2.sampler_bytes > v2.layer_act_bytes);
    PB_CHECK_NEAR(v2.sampler_bytes, (2048 * 5120 + 1024 * 5120) * 2.0 + 1024 * 50272 * 29.0, 0);
}

PB_TEST(sim_charges_a_padded_prompt_step_at_its_padded_size) {
    pb_model m;
    pb_hw hw;
    pb_sim_cost cost;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_model_load(pb_spec_dir(), "opt-13b", &m, &e) == PB_OK);
    PB_REQUIRE(pb_hw_load(pb_spec_dir(), "a100-80gb", &hw, &e) == PB_OK);
    PB_REQUIRE(pb_sim_cost_load(pb_spec_dir(), "a100-80gb", &cost, &e) == PB_OK);
    pb_sim_params p = pb_sim_params_default();
    pb_sim *sim = NULL;
    PB_REQUIRE(pb_sim_create(&m, &hw, &cost, 1, &p, &sim, &e) == PB_OK);
    /* 8 prompts: one of 500 tokens and seven of 20 -> 640 tokens, padded 8 x 500 */
    pb_batch_seq q[8], r[8];
    memset(q, 0, sizeof q);
    memset(r, 0, sizeof r);
    for (int i = 0; i < 8; i++) {
        q[i].seq_id = r[i].seq_id = i;
        q[i].group_id = r[i].group_id = i;
        q[i].is_prefill = r[i].is_prefill = true;
        q[i].sample = r[i].sample = true;
        q[i].n_new = q[i].context_len = i == 0 ? 500 : 20;
        r[i].n_new = r[i].context_len = 500;   /* eight real 500-token rows */
    }
    pb_batch b, full;
    memset(&b, 0, sizeof b);
    b.n_seqs = 8; b.seqs = q; b.n_prefill_tokens = 640; b.block_size = 16; b.n_top = 1;
    full = b;
    full.seqs = r;
    full.n_prefill_tokens = 4000;
    pb_sim_breakdown flat, padded, eight;
    pb_sim_step_breakdown(sim, &b, &flat);
    b.n_padded_tokens = 4000;
    pb_sim_step_breakdown(sim, &b, &padded);
    pb_sim_step_breakdown(sim, &full, &eight);
    PB_CHECK(padded.gemm_s > 3 * flat.gemm_s);
    PB_CHECK_NEAR(padded.gemm_s, eight.gemm_s, 1e-12);   /* GEMMs at 4000 rows */
    PB_CHECK_NEAR(padded.elementwise_s, eight.elementwise_s, 1e-12);
    PB_CHECK(padded.total_s > flat.total_s);
    /* a padded size below the real tokens changes nothing */
    b.n_padded_tokens = 100;
    pb_sim_breakdown low;
    pb_sim_step_breakdown(sim, &b, &low);
    PB_CHECK_NEAR(low.total_s, flat.total_s, 0);
    pb_sim_destroy(sim);
}

PB_TEST_MAIN()
