/* test_costmodel_terms.c -- every term of the sim's cost model (executors/executor_sim.h)
 * against a value derived by hand, on a tiny model and a made-up GPU written here (not
 * the calibrated specs: these tests pin the FORMULAS, so they survive recalibration).
 *
 * Model (OPT layout): L = 2 layers, hidden h = 64, 4 query and 4 KV heads of d = 16,
 * FFN 256, vocab 1000, fp16 (2 bytes).  KV bytes per token per layer: 2 x 4 x 16 x 2 = 256.
 * GPU: 1 TFLOP/s fp16 peak, 100 GB/s HBM, 4 SMs.  Cost model:
 *   GEMM   50% of peak = 5e11 FLOP/s = 1.25e11 per SM; L2 20 GB/s = 5e9 per SM; tiles
 *          32x32 and 64x64; memory-bound at 50% of HBM = 5e10 B/s; 3 us per GEMM.
 *          Tile rates: 32x32 min(5e9 x 2 x 32 x 32 / (64 x 2), 1.25e11) = 8e10 (L2-bound),
 *                      64x64 min(5e9 x 2 x 64 x 64 / (128 x 2), 1.25e11) = 1.25e11.
 *          One wave of 32x32 tiles over K: 2 x 32 x 32 x K / 8e10 = K x 2.56e-8 s (K = 64:
 *          1.6384 us); of 64x64 tiles: 2 x 64 x 64 x K / 1.25e11 = K x 6.5536e-8 s
 *          (K = 64: 4.194304 us).
 *   element-wise 20% of HBM = 2e10 B/s, 1 us per kernel; prefill attention 10% of peak
 *          = 1e11 FLOP/s, 4 us per call; decode attention 1 us per call, 10 ns per
 *          (sequence, head), live KV at 50% of HBM = 5e10 B/s, paged 1 ns per (sequence,
 *          KV head, block); 0.2 us GPU gap per kernel.
 *   all-reduce tp 2 / 4 / 8: 5 / 6 / 7 us + bytes at 10 / 20 / 40 GB/s.
 *   swap h2d 10 GB/s + 10 us per copy, d2h 5 GB/s + 20 us per copy.
 *   host, python: 1 ms per step, 10 us per sequence, 2 us per kernel launch, TP > 1:
 *          500 us per step + 20 us per sequence; cpp: 100 us, 1 us, 1 us, 100 us, 1 us. */
#include <math.h>
#include <string.h>

#include "executor_sim.h"
#include "pbtest.h"

static pb_model tiny_model(void) {
    pb_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "tiny");
    m.arch = PB_ARCH_OPT;
    m.n_layers = 2;
    m.hidden = 64;
    m.n_heads = 4;
    m.n_kv_heads = 4;
    m.head_size = 16;
    m.ffn = 256;
    m.vocab = 1000;
    m.max_len = 2048;
    m.n_params = 1e5;
    m.dtype_bytes = 2;
    return m;
}

static pb_hw tiny_hw(void) {
    pb_hw hw;
    memset(&hw, 0, sizeof hw);
    snprintf(hw.name, sizeof hw.name, "test-gpu");
    hw.mem_bytes = 1e9;
    hw.hbm_bw = 1e11;
    hw.fp16_flops = 1e12;
    hw.n_sms = 4;
    return hw;
}

static pb_sim_cost tiny_cost(void) {
    pb_sim_cost c;
    memset(&c, 0, sizeof c);
    c.gemm_flops_eff = 0.5;
    c.l2_bw = 2e10;
    c.n_tiles = 2;
    c.tile_m[0] = c.tile_n[0] = 32;
    c.tile_m[1] = c.tile_n[1] = 64;
    c.gemm_bw_eff = 0.5;
    c.elem_bw_eff = 0.2;
    c.prefill_attn_flops_eff = 0.1;
    c.attn_fixed_s = 1e-6;
    c.attn_seq_head_s = 1e-8;
    c.attn_stream_eff = 0.5;
    c.attn_paged_block_s = 1e-9;
    c.kernel_gap_s = 2e-7;
    c.gemm_fixed_s = 3e-6;
    c.elem_fixed_s = 1e-6;
    c.prefill_attn_fixed_s = 4e-6;
    c.ar_lat_s[0] = 5e-6;
    c.ar_lat_s[1] = 6e-6;
    c.ar_lat_s[2] = 7e-6;
    c.ar_bw[0] = 1e10;
    c.ar_bw[1] = 2e10;
    c.ar_bw[2] = 4e10;
    c.swap_h2d_bw = 1e10;
    c.swap_d2h_bw = 5e9;
    c.swap_h2d_copy_s = 1e-5;
    c.swap_d2h_copy_s = 2e-5;
    c.fw[PB_SIM_FW_PYTHON] = (pb_sim_fw_cost){1e-3, 1e-5, 2e-6, 5e-4, 2e-5};
    c.fw[PB_SIM_FW_CPP] = (pb_sim_fw_cost){1e-4, 1e-6, 1e-6, 1e-4, 1e-6};
    return c;
}

static pb_sim *tiny_sim(int tp, pb_sim_attn attn, pb_sim_framework fw) {
    pb_model m = tiny_model();
    pb_hw hw = tiny_hw();
    pb_sim_cost c = tiny_cost();
    pb_sim_params p = pb_sim_params_default();
    p.attn = attn;
    p.framework = fw;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    pb_sim *s = NULL;
    if (pb_sim_create(&m, &hw, &c, tp, &p, &s, &e) != PB_OK) fprintf(stderr, "  tiny sim: %s\n", e.msg);
    return s;
}

/* relative 1e-12: every value below is a short sum of exact decimal products */
#define NEAR(a, b) PB_CHECK_NEAR(a, b, 1e-12 * fabs((double)(b)) + 1e-18)

/* a batch built by hand (the engine's sums left unset: the sim walks seqs) */
typedef struct {
    pb_batch_seq seqs[8];
    pb_batch b;
} tbatch;

static void add_seq(tbatch *t, bool prefill, int32_t n_new, int32_t n_cached, bool sample) {
    pb_batch_seq *q = &t->seqs[t->b.n_seqs++];
    memset(q, 0, sizeof *q);
    q->seq_id = q->group_id = t->b.n_seqs - 1;
    q->is_prefill = prefill;
    q->n_new = n_new;
    q->n_cached = n_cached;
    q->context_len = n_cached + n_new;
    q->sample = sample;
    t->b.seqs = t->seqs;
    if (prefill) t->b.n_prefill_tokens += n_new;
    else t->b.n_decode++;
}

static void batch_init(tbatch *t, int32_t block_size) {
    memset(t, 0, sizeof *t);
    t->b.block_size = block_size;
    t->b.n_top = 1;
}

/* three decodes at KV lengths 20, 33, 48 (blocks of 16: 2 + 3 + 3 = 8) */
static void decode3(tbatch *t, int32_t block_size) {
    batch_init(t, block_size);
    add_seq(t, false, 1, 19, true);
    add_seq(t, false, 1, 32, true);
    add_seq(t, false, 1, 47, true);
}

/* ---- GEMM: tile and wave quantization, best tile shape, memory bound ---- */
PB_TEST(gemm_tile_wave_literals) {
    pb_sim *s = tiny_sim(1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(s);
    /* 64 x 64 x 64: 32x32 -> 2 x 2 = 4 tiles, one wave of 4 SMs, 1.6384 us; 64x64 -> 1
       tile, 4.194304 us; the best 1.6384 us; bytes (4096 x 3) x 2 / 5e10 = 0.49 us;
       + 3 us fixed = 4.6384 us */
    NEAR(pb_sim_gemm_time(s, 64, 64, 64), 4.6384e-6);
    /* tile quantization: 33 rows pad to 64 (a 32x32 tile grid of 2 x 2): the same */
    NEAR(pb_sim_gemm_time(s, 33, 64, 64), 4.6384e-6);
    /* wave quantization: 65 rows -> 3 x 2 = 6 tiles of 32x32 = 2 waves (3.2768 us);
       64x64: 2 x 1 = 2 tiles, 1 wave (4.194304 us); best 3.2768 + 3 = 6.2768 us */
    NEAR(pb_sim_gemm_time(s, 65, 64, 64), 6.2768e-6);
    /* 256 x 64 x 256: 32x32 -> 8 x 8 = 64 tiles = 16 waves (26.2144 us); 64x64 -> 4 x 4 =
       16 tiles = 4 waves (16.777216 us): the larger tile wins; + 3 = 19.777216 us */
    NEAR(pb_sim_gemm_time(s, 256, 64, 256), 19.777216e-6);
    /* memory bound: 1 x 4096 x 32 -- one 32x32 tile, 1 wave: 4096 x 2.56e-8 = 104.8576 us;
       64x64: 4096 x 6.5536e-8 = 268.435456 us; bytes (4096 x 32 + 4096 + 32) x 2 = 270400
       / 5e10 = 5.408 us: compute 104.8576 + 3 = 107.8576 us */
    NEAR(pb_sim_gemm_time(s, 1, 4096, 32), 107.8576e-6);
    /* many tiles: 1 x 64 x 4,000,000 -- 125,000 tiles of 32x32 = 31,250 waves x 1.6384 us
       = 51.2 ms; 64x64: 62,500 tiles = 15,625 waves x 4.194304 us = 65.536 ms; bytes
       (64 x 4e6 + 64 + 4e6) x 2 / 5e10 = 10.4 ms */
    NEAR(pb_sim_gemm_time(s, 1, 64, 4000000), 51.2e-3 + 3e-6);
    PB_CHECK(pb_sim_gemm_time(s, 0, 64, 64) == 0);
    pb_sim_destroy(s);
    /* a slow HBM (gemm bandwidth 5e8 B/s): the 1 x 4096 x 32 GEMM is memory bound:
       270400 / 5e8 = 540.8 us + 3 us */
    pb_model m = tiny_model();
    pb_hw hw = tiny_hw();
    pb_sim_cost c = tiny_cost();
    c.gemm_bw_eff = 0.005;
    pb_sim_params p = pb_sim_params_default();
    pb_cfg_err e;
    pb_sim *slow = NULL;
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 1, &p, &slow, &e) == PB_OK);
    NEAR(pb_sim_gemm_time(slow, 1, 4096, 32), 543.8e-6);
    pb_sim_destroy(slow);
}

/* ---- a decode step, term by term ---- */
PB_TEST(decode_step_terms_paged_python) {
    pb_sim *s = tiny_sim(1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(s);
    tbatch t;
    decode3(&t, 16);
    pb_sim_breakdown o;
    pb_sim_step_breakdown(s, &t.b, &o);
    /* GEMMs at M = 3 (one row of 32x32 tiles):
         QKV   64 x 192: 6 tiles = 2 waves 3.2768 us (64x64: 3 tiles, 4.194304)   + 3 = 6.2768
         out   64 x  64: 2 tiles = 1 wave  1.6384                                 + 3 = 4.6384
         FC1   64 x 256: 8 tiles = 2 waves 3.2768                                 + 3 = 6.2768
         FC2  256 x  64: 2 tiles = 1 wave, 256 x 2.56e-8 = 6.5536                 + 3 = 9.5536
       per layer 26.7456 us, x 2 layers = 53.4912 us */
    NEAR(o.gemm_s, 53.4912e-6);
    /* LM head, 3 sampled rows: 64 x 1000 -> 32 tiles of 32x32 = 8 waves = 13.1072 us
       (64x64: 16 tiles, 4 waves = 16.777216); + 3 = 16.1072 us */
    NEAR(o.lm_head_s, 16.1072e-6);
    /* decode attention per layer: 1 us + 10 ns x 3 seqs x 4 heads (0.12 us) + live KV
       (20 + 33 + 48) x 256 B / 5e10 (0.51712 us) + paged 1 ns x 8 blocks x 4 KV heads
       (0.032 us) = 1.66912 us; x 2 layers */
    NEAR(o.decode_attn_s, 3.33824e-6);
    PB_CHECK(o.prefill_attn_s == 0 && o.allreduce_s == 0);
    /* element-wise bytes: embedding + positions 3 x 64 x 2 x 4 = 1536; per layer per token
       norms 4h + residuals 6h + ReLU 2 x 256 = 1152 elements x 2 B = 2304 + KV write
       2 x 256 = 2816 B, x 2 layers x 3 tokens = 16896; final norm 3 x 64 x 2 x 2 = 768;
       19200 B / 2e10 = 0.96 us; kernels 6 per layer x 2 + 8 per step = 20 x 1 us */
    NEAR(o.elementwise_s, 20.96e-6);
    /* sampling: 3 x 6 x 4 B x 1000 = 72000 B / 2e10 = 3.6 us */
    NEAR(o.sampling_s, 3.6e-6);
    /* kernels: (10 + 1 attention call) x 2 layers + 9 per step = 31; GPU gaps 6.2 us */
    PB_CHECK_EQ_INT(o.kernels, 31);
    NEAR(o.gpu_s, (53.4912 + 16.1072 + 3.33824 + 20.96 + 3.6 + 6.2) * 1e-6);
    /* host: 31 launches x 2 us = 62 us (under the GPU's 103.7 us); framework 1 ms + 3 x 10 us */
    NEAR(o.host_issue_s, 62e-6);
    NEAR(o.framework_s, 1.03e-3);
    NEAR(o.total_s, 1.03e-3 + 103.69664e-6);
    pb_step_result r;
    pb_sim_step(s, &t.b, &r);
    NEAR(r.latency_s, 1.13369664e-3);
    PB_CHECK(r.swap_s == 0 && r.copy_s == 0);
    /* the engine's sums (has_sums) give the same step as the walk */
    t.b.has_sums = true;
    t.b.sum_new = 3;
    t.b.n_sample = 3;
    t.b.decode_ctx = 101;
    t.b.decode_blocks = 8;
    pb_step_result r2;
    pb_sim_step(s, &t.b, &r2);
    NEAR(r2.latency_s, 1.13369664e-3);
    /* the convenience function: 3 sequences of 48 (3 blocks each): attention per layer
       1 + 0.12 + 144 x 256 / 5e10 (0.73728) + 9 x 4 x 0.001 (0.036) = 1.89328 us */
    NEAR(pb_sim_decode_time(s, 3, 48, 16), 1.13369664e-3 + 2 * (1.89328e-6 - 1.66912e-6));
    pb_sim_destroy(s);
}

PB_TEST(decode_step_contiguous_cpp) {
    pb_sim *s = tiny_sim(1, PB_SIM_ATTN_CONTIGUOUS, PB_SIM_FW_CPP);
    PB_REQUIRE(s);
    tbatch t;
    decode3(&t, 0);
    pb_sim_breakdown o;
    pb_sim_step_breakdown(s, &t.b, &o);
    /* no block lookups: 1 + 0.12 + 0.51712 = 1.63712 us per layer */
    NEAR(o.decode_attn_s, 3.27424e-6);
    /* C++ host: 31 launches x 1 us; framework 100 us + 3 x 1 us */
    NEAR(o.host_issue_s, 31e-6);
    NEAR(o.framework_s, 103e-6);
    NEAR(o.total_s, 103e-6 + (53.4912 + 16.1072 + 3.27424 + 20.96 + 3.6 + 6.2) * 1e-6);
    pb_sim_destroy(s);
}

/* ---- prefill attention, with and without a cached prefix ---- */
PB_TEST(prefill_attention_terms) {
    pb_sim *s = tiny_sim(1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(s);
    tbatch t;
    pb_sim_breakdown o;
    /* a 100-token prompt: causal pairs 100 x 101 / 2 = 5050; FLOPs 4 x 4 heads x 16 x 5050
       = 1,292,800 / 1e11 = 12.928 us; bytes 100 x (2 x 4 + 2 x 4) x 16 x 2 = 51200 / 2e10
       = 2.56 us: compute-bound; + 4 us per call = 16.928 us x 2 layers */
    batch_init(&t, 16);
    add_seq(&t, true, 100, 0, true);
    pb_sim_step_breakdown(s, &t.b, &o);
    NEAR(o.prefill_attn_s, 33.856e-6);
    /* GEMMs at M = 100 (4 rows of 32x32 tiles or 2 of 64x64):
         QKV 64 x 192: 4 x 6 = 24 tiles = 6 waves 9.8304 | 2 x 3 = 6 tiles = 2 waves 8.388608 -> 8.388608
         out 64 x  64: 4 x 2 =  8 tiles = 2 waves 3.2768 | 2 x 1 = 2 tiles = 1 wave  4.194304 -> 3.2768
         FC1 64 x 256: 4 x 8 = 32 tiles = 8 waves 13.1072 | 2 x 4 = 8 tiles = 2 waves 8.388608 -> 8.388608
         FC2 256 x 64: 8 tiles = 2 waves 13.1072 | 2 tiles = 1 wave 16.777216 -> 13.1072
       + 4 x 3 us = 45.161216 per layer, x 2 */
    NEAR(o.gemm_s, 90.322432e-6);
    /* element-wise: 100 x 64 x 2 x 4 = 51200 + 2 x 100 x 2816 = 563200 + one sampled row
       1 x 64 x 2 x 2 = 256: 614656 B / 2e10 = 30.7328 us + 20 kernels */
    NEAR(o.elementwise_s, 50.7328e-6);
    /* one sampled row: LM head as in the decode step (1 row of tiles) */
    NEAR(o.lm_head_s, 16.1072e-6);
    NEAR(o.sampling_s, 1.2e-6);
    NEAR(o.framework_s, 1.01e-3);
    NEAR(o.total_s, 1.208418432e-3);
    NEAR(pb_sim_prefill_time(s, 100), 1.208418432e-3);
    /* a 4-token chunk over a cached prefix of 1000 (samples nothing): FLOPs 4 x 64 x
       4 x (1000 + 2.5) = 1,026,560 / 1e11 = 10.2656 us; bytes 4 x 512 = 2048 new q/k/v/o
       + the prefix's KV 1000 x 256 = 256000: 258048 / 2e10 = 12.9024 us, which binds;
       + 4 us = 16.9024 x 2 layers */
    batch_init(&t, 16);
    add_seq(&t, true, 4, 1000, false);
    pb_sim_step_breakdown(s, &t.b, &o);
    NEAR(o.prefill_attn_s, 33.8048e-6);
    PB_CHECK(o.lm_head_s == 0 && o.sampling_s == 0);
    /* element-wise without a sampled row: 4 x 512 + 2 x 4 x 2816 = 24576 B -> 1.2288 us */
    NEAR(o.elementwise_s, 21.2288e-6);
    /* GPU: GEMMs 53.4912 (M = 4: as M = 3) + attention 33.8048 + element-wise 21.2288
       + 31 gaps 6.2 = 114.7248 us; framework 1 ms + 10 us */
    NEAR(o.total_s, 1.01e-3 + 114.7248e-6);
    pb_sim_destroy(s);
}

/* ---- a padded prompt step (vLLM v0.2.2+): every row at the longest length ---- */
PB_TEST(padded_prompt_step_terms) {
    pb_sim *s = tiny_sim(1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(s);
    tbatch t;
    batch_init(&t, 16);
    add_seq(&t, true, 10, 0, true);
    add_seq(&t, true, 20, 0, true);
    add_seq(&t, true, 30, 0, true);
    t.b.n_padded_tokens = 90;   /* 3 rows x 30 */
    pb_sim_breakdown o;
    pb_sim_step_breakdown(s, &t.b, &o);
    /* attention over 3 rows of 30: pairs 3 x 30 x 31 / 2 = 1395; FLOPs 64 x 4 x 1395 =
       357,120 / 1e11 = 3.5712 us; bytes 90 x 512 = 46080 / 2e10 = 2.304 us; + 4 us, x 2 */
    NEAR(o.prefill_attn_s, 15.1424e-6);
    /* element-wise over 90 tokens: 90 x 512 + 2 x 90 x 2816 + 3 x 256 = 553728 B = 27.6864 us */
    NEAR(o.elementwise_s, 47.6864e-6);
    NEAR(o.total_s, 1.208665216e-3);
    /* unpadded (60 tokens): pairs 55 + 210 + 465 = 730 -> FLOPs 186,880 / 1e11 = 1.8688
       us vs bytes 60 x 512 / 2e10 = 1.536 us: (4 + 1.8688) x 2 */
    t.b.n_padded_tokens = 0;
    pb_sim_step_breakdown(s, &t.b, &o);
    NEAR(o.prefill_attn_s, 11.7376e-6);
    pb_sim_destroy(s);
}

/* ---- tensor parallelism: all-reduces, per-GPU shapes, workers ---- */
PB_TEST(tensor_parallel_terms) {
    pb_sim *s = tiny_sim(2, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(s);
    tbatch t;
    batch_init(&t, 16);
    add_seq(&t, true, 40, 0, true);
    add_seq(&t, false, 1, 16, true);
    add_seq(&t, false, 1, 31, true);
    pb_sim_breakdown o;
    pb_sim_step_breakdown(s, &t.b, &o);
    /* tp 2: 2 heads per GPU, FFN 128, vocab 500.  All-reduces: 2 per layer of 42 tokens x
       64 x 2 B = 5376 B: 5 us + 0.5376 us; x 2 x 2 layers = 22.1504 us; logits gather of
       3 rows x 1000 x 2 B = 6000 B: 5 + 0.6 us; total 27.7504 us */
    NEAR(o.allreduce_s, 27.7504e-6);
    /* decode attention: 1 + 10 ns x 2 seqs x 2 heads (0.04) + (17 + 32) x 128 B / 5e10
       (0.12544) + 1 ns x (2 + 2) blocks x 2 KV heads (0.008) = 1.17344 us x 2 */
    NEAR(o.decode_attn_s, 2.34688e-6);
    /* prefill attention: 40 x 41 / 2 = 820 pairs x 4 x 2 x 16 = 104,960 FLOPs = 1.0496 us;
       bytes 40 x 8 x 16 x 2 = 10240 / 2e10 = 0.512 us; (4 + 1.0496) x 2 */
    NEAR(o.prefill_attn_s, 10.0992e-6);
    /* kernels: (10 + 2 all-reduces + 2 attention calls) x 2 + 10 per step = 38 */
    PB_CHECK_EQ_INT(o.kernels, 38);
    /* framework: 1 ms + 3 x 10 us + workers 500 us + 3 x 20 us */
    NEAR(o.framework_s, 1.59e-3);
    NEAR(o.total_s, 1.72596448e-3);
    pb_sim_destroy(s);
    /* tp 4 takes the tp-4 fit (6 us, 20 GB/s): 3 decodes, 2 layers x 2 x (6 us + 3 x 64
       x 2 B / 2e10) = 24.0768 us, + the gather 6 us + 6000 B / 2e10 = 6.3 us */
    s = tiny_sim(4, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(s);
    decode3(&t, 16);
    pb_sim_step_breakdown(s, &t.b, &o);
    NEAR(o.allreduce_s, 30.3768e-6);
    pb_sim_destroy(s);
}

/* ---- memory operations: swap (per block, layer, K and V) and copy-on-write ---- */
PB_TEST(swap_and_copy_terms) {
    pb_sim *s = tiny_sim(1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(s);
    /* one block of 16 tokens, one layer, K or V: 16 x 4 x 16 x 2 = 2048 B.
       in:  per copy 10 us + 2048 / 1e10 = 10.2048 us, x 2 layers x 2 (K, V) per block;
       out: 20 us + 2048 / 5e9 = 20.4096 us, likewise */
    NEAR(pb_sim_swap_time(s, 1, 16, true), 40.8192e-6);
    NEAR(pb_sim_swap_time(s, 1, 16, false), 81.6384e-6);
    NEAR(pb_sim_swap_time(s, 3, 32, true), 3 * 4 * (10e-6 + 4096 / 1e10));
    PB_CHECK(pb_sim_swap_time(s, 0, 16, true) == 0);
    pb_block_pair pairs[5] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}};
    tbatch t;
    decode3(&t, 16);
    t.b.copies = pairs;
    t.b.n_copies = 3;
    t.b.swap_in = pairs;
    t.b.n_swap_in = 2;
    t.b.swap_out = pairs;
    t.b.n_swap_out = 5;
    pb_step_result r;
    pb_sim_step(s, &t.b, &r);
    /* swap: 2 x 40.8192 + 5 x 81.6384 = 489.8304 us */
    NEAR(r.swap_s, 489.8304e-6);
    /* copy-on-write, one fused kernel: launch 2 us + gap 0.2 us + read and write of 3
       blocks x 16 tokens x 256 B x 2 layers x 2 = 49152 B / 2e10 = 2.4576 us */
    NEAR(r.copy_s, 4.6576e-6);
    NEAR(r.latency_s, 1.13369664e-3 + 489.8304e-6 + 4.6576e-6);
    pb_sim_destroy(s);
    /* a contiguous manager's slot copies (fork of a contiguous cache), C++ host: 7 slots:
       1 us + 0.2 us + 7 x 256 x 2 x 2 / 2e10 = 0.3584 us */
    s = tiny_sim(1, PB_SIM_ATTN_CONTIGUOUS, PB_SIM_FW_CPP);
    PB_REQUIRE(s);
    decode3(&t, 0);
    pb_slot_copy sc[2] = {{0, 100, 3}, {10, 200, 4}};
    t.b.slot_copies = sc;
    t.b.n_slot_copies = 2;
    pb_sim_step(s, &t.b, &r);
    NEAR(r.copy_s, 1.5584e-6);
    NEAR(r.latency_s, 206.63264e-6 + 1.5584e-6);
    pb_sim_destroy(s);
}

/* ---- host-bound steps: kernel issue beyond the GPU's time ---- */
PB_TEST(host_issue_bound_step) {
    pb_model m = tiny_model();
    pb_hw hw = tiny_hw();
    pb_sim_cost c = tiny_cost();
    c.fw[PB_SIM_FW_PYTHON].launch_s = 10e-6;   /* 31 x 10 us = 310 us > the GPU's 103.7 us */
    pb_sim_params p = pb_sim_params_default();
    pb_cfg_err e;
    pb_sim *s = NULL;
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 1, &p, &s, &e) == PB_OK);
    tbatch t;
    decode3(&t, 16);
    pb_sim_breakdown o;
    pb_sim_step_breakdown(s, &t.b, &o);
    NEAR(o.host_issue_s, 310e-6);
    NEAR(o.total_s, 1.03e-3 + 310e-6);
    /* an empty batch costs nothing */
    batch_init(&t, 16);
    pb_sim_step_breakdown(s, &t.b, &o);
    PB_CHECK(o.total_s == 0 && o.framework_s == 0 && o.gpu_s == 0);
    pb_sim_destroy(s);
}

PB_TEST_MAIN()
