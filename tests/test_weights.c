/* test_weights.c -- the physics behind a system's `weights` key (fp16 | int8 | fp8 |
 * int4-awq | int4-gptq; experiments/system.c sets pb_model.weights, tests/cli_weights.sh
 * runs it from a YAML), one check per value:
 *   - the linear layers' bytes (spec.h pb_linear_weight_bytes) are the format's
 *     (kernels/wquant.h), by hand for LLaMA-13B; embeddings and the LM head stay fp16;
 *   - the KV space grows by exactly the bytes saved, under the paper harness's rule
 *     and v0.2's profiling rule (Table 1 style slot counts);
 *   - the cost model (executor_sim.h "Quantized weights"), each layer GEMM by hand:
 *     a batch-1 decode step's read the format's weight bytes (memory-bound, faster
 *     than fp16), a 4096-token prefill's run their FLOPs at wq_<format>_compute_ratio
 *     of the fp16 rate (compute-bound, slower than fp16); the LM head, attention and
 *     element-wise terms do not move;
 *   - a hardware spec without the format's ratio is refused.
 *   ctest --test-dir build/cpu -R test_weights */
#include <math.h>
#include <string.h>

#include "executor_sim.h"
#include "pbtest.h"
#include "spec.h"
#include "wquant.h"

static void load_spec(const char *model, const char *hw, pb_model *m, pb_hw *h, pb_sim_cost *c) {
    pb_cfg_err e;
    memset(&e, 0, sizeof e);
    PB_ASSERT(pb_model_load(pb_spec_dir(), model, m, &e) == PB_OK);
    PB_ASSERT(pb_hw_load(pb_spec_dir(), hw, h, &e) == PB_OK);
    if (c) PB_ASSERT(pb_sim_cost_load(pb_spec_dir(), hw, c, &e) == PB_OK);
}

/* LLaMA-13B's layer GEMMs, K x N: QKV 5120 x 15360, o 5120 x 5120, gate_up 5120 x
   27648, down 13824 x 5120; 40 layers */
static double llama13b_linear_bytes(pb_weight_format f) {
    const double K[4] = {5120, 5120, 5120, 13824}, N[4] = {15360, 5120, 27648, 5120};
    double b = 0;
    for (int g = 0; g < 4; g++) {
        double kn = K[g] * N[g];
        if (f == PB_WEIGHTS_FP16) b += 2 * kn;
        else if (f == PB_WEIGHTS_INT8 || f == PB_WEIGHTS_FP8) b += kn + 2 * N[g];
        else b += kn / 2 + K[g] / 128 * N[g] * 2.5;
    }
    return 40 * b;
}

PB_TEST(linear_weight_bytes_by_hand) {
    pb_model m;
    pb_hw h;
    load_spec("llama-13b", "a100-40gb", &m, &h, NULL);
    double full = pb_weight_bytes_per_gpu(&m, 1), params = pb_param_bytes(&m);
    for (int f = 0; f < PB_WEIGHTS_COUNT; f++) {
        pb_model q = m;
        q.weights = f;
        PB_CHECK_NEAR(pb_linear_weight_bytes(&q, 1), llama13b_linear_bytes((pb_weight_format)f), 0.5);
        double saved = llama13b_linear_bytes(PB_WEIGHTS_FP16) - llama13b_linear_bytes((pb_weight_format)f);
        PB_CHECK_NEAR(pb_weight_bytes_per_gpu(&q, 1), full - saved, 1);
        PB_CHECK_NEAR(pb_param_bytes(&q), params - saved, 1);
        /* tp = 2 halves every linear weight, but for the per-channel scales of the
           row-parallel layers (o, down: N = h on both GPUs) */
        PB_CHECK_NEAR(pb_linear_weight_bytes(&q, 2), 0.5 * pb_linear_weight_bytes(&q, 1),
                      f == PB_WEIGHTS_INT8 || f == PB_WEIGHTS_FP8 ? 40 * 2 * 5120 : 1);
    }
    /* int4 keeps the linear layers at 0.26x: LLaMA-13B 25.4 GB -> 6.6 GB */
    pb_model q = m;
    q.weights = PB_WEIGHTS_INT4_AWQ;
    PB_CHECK_NEAR(pb_linear_weight_bytes(&q, 1) / pb_linear_weight_bytes(&m, 1), 0.25 + 2.5 / 256, 1e-12);
}

PB_TEST(smaller_weights_more_kv_slots) {
    pb_model m;
    pb_hw h;
    load_spec("llama-13b", "a100-40gb", &m, &h, NULL);
    pb_kv_capacity c0, c1, p0, p1;
    PB_REQUIRE(pb_kv_capacity_compute(&m, &h, 1, 16, PB_KV_PROFILE_TOKENS, 0.95, &c0) == PB_OK);
    PB_REQUIRE(pb_kv_capacity_profile(&m, &h, 1, 16, 2048, 256, 0.9, &p0) == PB_OK);
    int64_t prev = c0.num_slots;
    for (int f = 1; f < PB_WEIGHTS_COUNT; f++) {
        pb_model q = m;
        q.weights = f;
        double saved = llama13b_linear_bytes(PB_WEIGHTS_FP16) - llama13b_linear_bytes((pb_weight_format)f);
        PB_REQUIRE(pb_kv_capacity_compute(&q, &h, 1, 16, PB_KV_PROFILE_TOKENS, 0.95, &c1) == PB_OK);
        PB_REQUIRE(pb_kv_capacity_profile(&q, &h, 1, 16, 2048, 256, 0.9, &p1) == PB_OK);
        PB_CHECK_NEAR(c1.kv_bytes_per_gpu - c0.kv_bytes_per_gpu, saved, 1);
        PB_CHECK_NEAR(p1.kv_bytes_per_gpu - p0.kv_bytes_per_gpu, saved, 1);
        PB_CHECK_EQ_INT(c1.num_blocks, (int64_t)floor(c1.kv_bytes_per_gpu / (16 * pb_kv_bytes_per_token(&q, 1))));
        if (f == PB_WEIGHTS_INT4_AWQ) PB_CHECK(c1.num_slots > prev);          /* 4 bits hold more than 8 */
        if (f == PB_WEIGHTS_FP8 || f == PB_WEIGHTS_INT4_GPTQ) PB_CHECK_EQ_INT(c1.num_slots, prev);   /* same bytes */
        if (f == PB_WEIGHTS_INT8) PB_CHECK(c1.num_slots > c0.num_slots);
        prev = c1.num_slots;
    }
}

static void breakdown(const pb_sim *s, int32_t n_seqs, int32_t new_tokens, pb_sim_breakdown *o) {
    pb_batch_seq q[8];
    memset(q, 0, sizeof q);
    for (int i = 0; i < n_seqs; i++) {
        q[i].n_new = new_tokens;
        q[i].is_prefill = new_tokens > 1;
        q[i].n_cached = new_tokens > 1 ? 0 : 511;
        q[i].context_len = new_tokens > 1 ? new_tokens : 512;
        q[i].sample = true;
    }
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = n_seqs;
    b.seqs = q;
    b.block_size = 16;
    b.n_top = 1;
    if (new_tokens > 1) b.n_prefill_tokens = n_seqs * new_tokens;
    else b.n_decode = n_seqs;
    pb_sim_step_breakdown(s, &b, o);
}

PB_TEST(cost_model_reads_the_formats_bytes_and_dequant_rate) {
    pb_model m;
    pb_hw h;
    pb_sim_cost c;
    load_spec("llama-13b", "a100-40gb", &m, &h, &c);
    pb_sim_params p = pb_sim_params_default();
    pb_sim *s0;
    PB_REQUIRE(pb_sim_create(&m, &h, &c, 1, &p, &s0, NULL) == PB_OK);
    pb_sim_breakdown d0, f0;
    breakdown(s0, 1, 1, &d0);
    breakdown(s0, 1, 4096, &f0);
    const double bw = h.hbm_bw * c.gemm_bw_eff, L = m.n_layers, flops = h.fp16_flops * c.gemm_flops_eff;
    /* LLaMA-13B's layer GEMMs (K x N): QKV, output, gate_up, down */
    const double K[4] = {5120, 5120, 5120, 13824}, N[4] = {15360, 5120, 27648, 5120};
    for (int f = 1; f < PB_WEIGHTS_COUNT; f++) {
        pb_model q = m;
        q.weights = f;
        pb_sim *s;
        PB_REQUIRE(pb_sim_create(&q, &h, &c, 1, &p, &s, NULL) == PB_OK);
        pb_sim_breakdown d, pf;
        breakdown(s, 1, 1, &d);
        breakdown(s, 1, 4096, &pf);
        double ratio = c.wq_ratio[f];
        PB_CHECK(ratio > 0 && ratio < 1);
        /* each layer GEMM by hand, at M rows: compute at the ratio of the fp16 rate,
           memory the format's weight bytes + fp16 activations, rounded roofline */
        double dec = 0, pre = 0, dec_mem = 0, pre_fl = 0, wbytes = 0;
        for (int g = 0; g < 4; g++) {
            double W = pb_wq_matrix_bytes((pb_weight_format)f, K[g], N[g], 2);
            wbytes += W;
            for (int r = 0; r < 2; r++) {
                double M = r ? 4096 : 1;
                double fl = 2.0 * M * K[g] * N[g] / (flops * ratio), mem = (W + (M * K[g] + M * N[g]) * 2) / bw;
                if (r) { pre += sqrt(fl * fl + mem * mem) + c.gemm_fixed_s; pre_fl += fl; }
                else { dec += sqrt(fl * fl + mem * mem) + c.gemm_fixed_s; dec_mem += mem; }
            }
        }
        PB_CHECK_NEAR(wbytes, pb_linear_weight_bytes(&q, 1) / L, 1e-6 * wbytes);
        PB_CHECK_NEAR(d.gemm_s, L * dec, 1e-9 * d.gemm_s);
        PB_CHECK_NEAR(pf.gemm_s, L * pre, 1e-9 * pf.gemm_s);
        /* batch-1 decode is memory-bound (within 1% of the weight stream) and faster
           than fp16's; a 4096-token prefill compute-bound at the ratio, slower */
        PB_CHECK(d.gemm_s - L * 4 * c.gemm_fixed_s < 1.01 * L * dec_mem);
        PB_CHECK(d.gemm_s < d0.gemm_s);
        PB_CHECK(pf.gemm_s - L * 4 * c.gemm_fixed_s < 1.01 * L * pre_fl);
        PB_CHECK(pf.gemm_s > f0.gemm_s);
        /* untouched: LM head, attention, element-wise */
        PB_CHECK_NEAR(d.lm_head_s, d0.lm_head_s, 0);
        PB_CHECK_NEAR(d.decode_attn_s, d0.decode_attn_s, 0);
        PB_CHECK_NEAR(pf.prefill_attn_s, f0.prefill_attn_s, 0);
        PB_CHECK_NEAR(d.elementwise_s, d0.elementwise_s, 0);
        /* a hardware spec without this format's ratio refuses it */
        pb_sim_cost c2 = c;
        c2.wq_ratio[f] = 0;
        pb_cfg_err e;
        memset(&e, 0, sizeof e);
        pb_sim *bad = NULL;
        PB_CHECK(pb_sim_create(&q, &h, &c2, 1, &p, &bad, &e) == PB_ERR_INVALID && bad == NULL);
        PB_CHECK_STR_CONTAINS(e.msg, pb_weight_format_name((pb_weight_format)f));
        pb_sim_destroy(s);
    }
    pb_sim_destroy(s0);
}

int main(void) { return pb_test_main(); }
