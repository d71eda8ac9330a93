/* test_costmodel_terms.c -- every term of the sim's cost model (executors/executor_sim.h)
 * against a value derived by hand, on a tiny model and a made-up GPU written here (not
 * the calibrated specs: these tests pin the FORMULAS, so they survive recalibration).
 *
 * Model (OPT layout): L = 2 layers, hidden h = 64, 4 query and 4 KV heads of d = 16,
 * FFN 256, vocab 1000, fp16 (2 bytes).  KV bytes per token per layer: 2 x 4 x 16 x 2 = 256.
 * GPU: 1 TFLOP/s fp16 peak, 100 GB/s HBM, 4 SMs.  Cost model:
 *   GEMM   50% of peak = 5e11 FLOP/s = 1.25e11 per SM; L2 20 GB/s = 5e9 per SM; tiles
 *          32x32 and 64x64 (tile-height unit 32: M is picked at ceil(M/32) x 32 rows);
 *          split-K 1, 2, 4 (only while the tiles are fewer than the 4 SMs and a slice
 *          keeps >= 128 of K); HBM at 50% = 5e10 B/s, one SM's CTAs stream 2e10 B/s: a
 *          configuration of ceil(N/n) x k tile columns streams min(columns, 4) x 2e10,
 *          at most 5e10 (1 column: 2e10, 2: 4e10, 3 or more: 5e10); 3 us per GEMM.
 *          Tile rates: 32x32 min(5e9 x 2 x 32 x 32 / (64 x 2), 1.25e11) = 8e10 (L2-bound),
 *                      64x64 min(5e9 x 2 x 64 x 64 / (128 x 2), 1.25e11) = 1.25e11.
 *          One wave of 32x32 tiles over K: 2 x 32 x 32 x K / 8e10 = K x 2.56e-8 s (K = 64:
 *          1.6384 us); of 64x64 tiles: 2 x 64 x 64 x K / 1.25e11 = K x 6.5536e-8 s
 *          (K = 64: 4.194304 us); a split k runs ceil(K/k) of K per CTA.
 *          time = sqrt(compute^2 + memory^2) + 3 us (6 us with a split: two kernels),
 *          memory = ((K N + M K + M N) x 2 B + (split: 8 M N k, fp32 partials)) / the
 *          streams' bandwidth; the pick is the fastest (tile, split) at the rounded M,
 *          its time then taken at M.  GEMM(c, m, f) below = sqrt(c^2 + m^2) + f, in us.
 *   element-wise 20% of HBM = 2e10 B/s, 1 us per kernel; prefill attention 10% of peak
 *          = 1e11 FLOP/s, 4 us per call; decode attention 1 us per call, 10 ns per
 *          (sequence, head), KV at 50% of HBM = 5e10 B/s (the paged kernel reads whole
 *          blocks: max(live tokens, block x blocks)), paged attn_paged_block 1 ns = 10
 *          warp requests of a block of 16 at head 128 (0.1 ns a request) times the
 *          requests the kernel adds per (sequence, KV head, block): at head 16, fp16,
 *          block 16 a block holds 16 x 16 x 2 = 512 B per K or V; K loads 256 B a warp
 *          (2 lanes a token, 8 B each), V 512 B a warp: 2 table loads + 512/256 + 512/512
 *          - 2 x 512/512 = 3 requests; 0.2 us GPU gap per kernel.
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
    c.gemm_sm_bw = 2e10;
    c.n_splits = 3;
    c.splitk[0] = 1;
    c.splitk[1] = 2;
    c.splitk[2] = 4;
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
    for (int i = 0; i < PB_SIM_N_TERMS; i++) c.resid_lo[i] = c.resid_hi[i] = 1;   /* no error bars */
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

/* relative 1e-12: every value below is a short sum of exact decimal products and the
   square roots of the GEMM formula */
#define NEAR(a, b) PB_CHECK_NEAR(a, b, 1e-12 * fabs((double)(b)) + 1e-18)

/* one GEMM, us: compute c and memory m overlap as sqrt(c^2 + m^2), + fixed f */
static double GEMM(double c, double m, double f) { return sqrt(c * c + m * m) + f; }

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

/* ---- GEMM: tile and wave quantization, tile shape and split-K, per-SM streams ---- */
PB_TEST(gemm_tile_wave_literals) {
    pb_sim *s = tiny_sim(1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(s);
    /* 64 x 64 x 64 (K = 64: no split, a slice would keep 32 < 128): 32x32 -> 2 x 2 = 4
       tiles, one wave of 4 SMs, 1.6384 us, 2 columns stream 4e10; bytes (4096 x 3) x 2 =
       24576 / 4e10 = 0.6144 us: GEMM(1.6384, 0.6144) = 1.7498 us.  64x64 -> 1 tile,
       4.194304 us, 1 column at 2e10: 24576 / 2e10 = 1.2288 us, GEMM = 4.3706 us.
       The pick 32x32: + 3 us fixed */
    NEAR(pb_sim_gemm_time(s, 64, 64, 64), GEMM(1.6384, 0.6144, 3) * 1e-6);
    /* tile quantization: 33 rows pick as 64 (a 32x32 tile grid of 2 x 2, the same compute);
       the bytes at 33 rows: (4096 + 33 x 64 x 2) x 2 = 16640 / 4e10 = 0.416 us */
    NEAR(pb_sim_gemm_time(s, 33, 64, 64), GEMM(1.6384, 0.416, 3) * 1e-6);
    /* wave quantization: 65 rows pick as 96.  32x32: 3 x 2 = 6 tiles = 2 waves (3.2768 us),
       4e10; 64x64: 2 x 1 = 2 tiles, 1 wave (4.194304 us), 2e10.  At 96 rows the bytes are
       (4096 + 96 x 128) x 2 = 32768: GEMM(3.2768, 0.8192) = 3.3776 vs GEMM(4.194304, 1.6384)
       = 4.5029: 32x32.  At 65 rows: (4096 + 65 x 128) x 2 = 24832 / 4e10 = 0.6208 us */
    NEAR(pb_sim_gemm_time(s, 65, 64, 64), GEMM(3.2768, 0.6208, 3) * 1e-6);
    /* 256 x 64 x 256: 32x32 -> 8 x 8 = 64 tiles = 16 waves (26.2144 us); 64x64 -> 4 x 4 =
       16 tiles = 4 waves (16.777216 us); both 4 columns or more: 5e10; bytes (64 x 256 x 2
       + 256 x 256) x 2 = 196608 / 5e10 = 3.93216 us: the larger tile wins */
    NEAR(pb_sim_gemm_time(s, 256, 64, 256), GEMM(16.777216, 3.93216, 3) * 1e-6);
    /* split-K: 1 x 4096 x 32, picked at 32 rows: one tile of either shape (< 4 SMs), K/k
       = 4096, 2048, 1024 (all >= 128).  Bytes at 32 rows (4096 x 32 x 2 + 32 x 32) x 2 =
       526336, + 8 x 32 x 32 x k of partials:
         32x32 k 1: 4096 x 2.56e-8 = 104.8576 us, 1 column 2e10: 26.3168 -> 108.11 + 3
         32x32 k 2: 2048 x 2.56e-8 =  52.4288 us, 2 columns 4e10: 542720 B 13.568 -> 54.16 + 6
         32x32 k 4: 1024 x 2.56e-8 =  26.2144 us, 4 columns 5e10: 559104 B 11.18208 -> 28.50 + 6
         64x64 k 4: 1024 x 6.5536e-8 = 67.108864 us, 5e10: 11.18208 -> 68.03 + 6 (k 1, 2: slower)
       the pick 32x32 k 4.  At 1 row: (4096 x 32 + 4096 + 32) x 2 = 270400 + 1 x 32 x 8 x 4 =
       271424 B / 5e10 = 5.42848 us; two kernels: + 6 us */
    NEAR(pb_sim_gemm_time(s, 1, 4096, 32), GEMM(26.2144, 5.42848, 6) * 1e-6);
    /* many tiles: 1 x 64 x 4,000,000 -- 125,000 tiles of 32x32 = 31,250 waves x 1.6384 us
       = 51.2 ms; 64x64: 62,500 tiles = 15,625 waves x 4.194304 us = 65.536 ms; both 5e10,
       32x32 wins; bytes at 1 row (64 x 4e6 + 64 + 4e6) x 2 = 520000128 / 5e10 =
       10.40000256 ms */
    NEAR(pb_sim_gemm_time(s, 1, 64, 4000000), GEMM(51.2e3, 10.40000256e3, 3) * 1e-6);
    PB_CHECK(pb_sim_gemm_time(s, 0, 64, 64) == 0);
    pb_sim_destroy(s);
    /* a slow HBM (gemm bandwidth 5e8 B/s, below every stream count): 1 x 4096 x 32 is
       memory-bound and a split only adds partials.  At 32 rows: 32x32 k 1 GEMM(104.8576,
       526336 / 5e8 = 1052.672) + 3 = 1060.88; k 2 GEMM(52.4288, 1085.44) + 6 = 1092.71;
       k 4 GEMM(26.2144, 1118.208) + 6 = 1124.52; 64x64 k 1 GEMM(268.435456, 1052.672) + 3
       = 1089.36: 32x32 k 1.  At 1 row: 270400 / 5e8 = 540.8 us */
    pb_model m = tiny_model();
    pb_hw hw = tiny_hw();
    pb_sim_cost c = tiny_cost();
    c.gemm_bw_eff = 0.005;
    pb_sim_params p = pb_sim_params_default();
    pb_cfg_err e;
    pb_sim *slow = NULL;
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 1, &p, &slow, &e) == PB_OK);
    NEAR(pb_sim_gemm_time(slow, 1, 4096, 32), GEMM(104.8576, 540.8, 3) * 1e-6);
    pb_sim_destroy(slow);
}

/* The layer GEMMs (us, one layer) of a step of M <= 32 rows, picked at 32 (tp 1):
     QKV  64 x 192: 32x32 1 x 6 tiles = 2 waves 3.2768, 6 columns 5e10 | 64x64 3 tiles,
          1 wave 4.194304, 5e10: the bytes equal, 32x32
     out  64 x  64: 32x32 2 tiles, 1 wave 1.6384, 4e10 | 64x64 4.194304, 2e10: 32x32
     FC1  64 x 256: 32x32 8 tiles = 2 waves 3.2768, 5e10 | 64x64 4 tiles, 4.194304, 5e10
     FC2 256 x  64: 32x32 2 tiles, 1 wave 256 x 2.56e-8 = 6.5536, 4e10 (k 1), at 32 rows
          (16384 + 8192 + 2048) x 2 = 53248 B 1.3312 -> 9.6874 | k 2 (2 tiles < 4 SMs, a
          slice of 128): 3.2768, 4 columns 5e10, + 32 x 64 x 16 B of partials, 86016 B
          1.72032 -> 3.7009 + 6 = 9.7009 | 64x64 k 2: 8.388608, 4e10 -> 14.66: 32x32 k 1
   each with its bytes at M rows, (K N + M K + M N) x 2 B. */
static double gemms_upto32_us(double M) {
    return GEMM(3.2768, (12288 + 256 * M) * 2 / 5e10 * 1e6, 3) + GEMM(1.6384, (4096 + 128 * M) * 2 / 4e10 * 1e6, 3) +
           GEMM(3.2768, (16384 + 320 * M) * 2 / 5e10 * 1e6, 3) + GEMM(6.5536, (16384 + 320 * M) * 2 / 4e10 * 1e6, 3);
}

/* The LM head (64 x 1000) of S <= 32 sampled rows, picked at 32: 32x32 32 tiles = 8 waves
   13.1072 us | 64x64 16 tiles, 4 waves 16.777216; both 5e10: 32x32; bytes at S rows
   (64000 + 64 S + 1000 S) x 2. */
static double lm_head_upto32_us(double S) { return GEMM(13.1072, (64000 + 1064 * S) * 2 / 5e10 * 1e6, 3); }

/* decode3 at block 16, python framework, tp 1: the step derived in decode_step_terms_paged_python */
static double decode3_paged_python_s(void) {
    return 1.03e-3 + (2 * gemms_upto32_us(3) + lm_head_upto32_us(3) + 3.56992 + 20.96 + 3.6 + 6.2) * 1e-6;
}

/* ---- a decode step, term by term ---- */
PB_TEST(decode_step_terms_paged_python) {
    pb_sim *s = tiny_sim(1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(s);
    tbatch t;
    decode3(&t, 16);
    pb_sim_breakdown o;
    pb_sim_step_breakdown(s, &t.b, &o);
    /* GEMMs at M = 3, picked at 32 rows (gemms_upto32_us above); bytes at 3 rows:
         QKV  (12288 + 3 x 64 + 3 x 192) x 2 = 26112 / 5e10 = 0.52224 us
         out  (4096 + 3 x 64 + 3 x 64) x 2   =  8960 / 4e10 = 0.224
         FC1  (16384 + 3 x 64 + 3 x 256) x 2 = 34688 / 5e10 = 0.69376
         FC2  (16384 + 3 x 256 + 3 x 64) x 2 = 34688 / 4e10 = 0.8672
       x 2 layers */
    double gemm_us = GEMM(3.2768, 0.52224, 3) + GEMM(1.6384, 0.224, 3) + GEMM(3.2768, 0.69376, 3) + GEMM(6.5536, 0.8672, 3);
    NEAR(o.gemm_s, 2 * gemm_us * 1e-6);
    NEAR(gemm_us, gemms_upto32_us(3));
    /* LM head, 3 sampled rows: 32x32 (lm_head_upto32_us); (64000 + 3 x 64 + 3 x 1000) x 2 =
       134384 B / 5e10 = 2.68768 us */
    NEAR(o.lm_head_s, GEMM(13.1072, 2.68768, 3) * 1e-6);
    /* decode attention per layer: 1 us + 10 ns x 3 seqs x 4 heads (0.12 us) + KV of whole
       blocks, max(20 + 33 + 48 = 101 live, 16 x 8 = 128) x 256 B / 5e10 (0.65536 us) +
       paged 0.1 ns x 3 requests x 8 blocks x 4 KV heads (0.0096 us) = 1.78496 us; x 2 */
    NEAR(o.decode_attn_s, 3.56992e-6);
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
    double gpu_us = 2 * gemm_us + GEMM(13.1072, 2.68768, 3) + 3.56992 + 20.96 + 3.6 + 6.2;   /* 104.6 us */
    NEAR(o.gpu_s, gpu_us * 1e-6);
    /* host: 31 launches x 2 us = 62 us (under the GPU's 104.6 us); framework 1 ms + 3 x 10 us */
    NEAR(o.host_issue_s, 62e-6);
    NEAR(o.framework_s, 1.03e-3);
    NEAR(o.total_s, 1.03e-3 + gpu_us * 1e-6);
    NEAR(o.total_s, decode3_paged_python_s());
    pb_step_result r;
    pb_sim_step(s, &t.b, &r);
    NEAR(r.latency_s, 1.03e-3 + gpu_us * 1e-6);
    PB_CHECK(r.swap_s == 0 && r.copy_s == 0);
    /* the engine's sums (has_sums) give the same step as the walk */
    t.b.has_sums = true;
    t.b.sum_new = 3;
    t.b.n_sample = 3;
    t.b.decode_ctx = 101;
    t.b.decode_blocks = 8;
    pb_step_result r2;
    pb_sim_step(s, &t.b, &r2);
    NEAR(r2.latency_s, 1.03e-3 + gpu_us * 1e-6);
    /* the convenience function: 3 sequences of 48 (3 blocks each, full): attention per
       layer 1 + 0.12 + 144 x 256 / 5e10 (0.73728) + 0.1 ns x 3 x 9 x 4 (0.0108) = 1.86808 us */
    NEAR(pb_sim_decode_time(s, 3, 48, 16), 1.03e-3 + (gpu_us + 2 * (1.86808 - 1.78496)) * 1e-6);
    /* the block-size law at head 16, fp16 (requests per block: 2 table loads + K bytes /
       K warp bytes + V bytes / V warp bytes - 2 x bytes / 512), decode attention per layer:
         block 1:  101 blocks, 32 B each; K 64 B a warp (a 32-lane group, 2 B a lane), V 64:
                   2 + 0.5 + 0.5 - 0.125 = 2.875; 1 + 0.12 + 101 x 256 / 5e10 (0.51712)
                   + 0.1 ns x 2.875 x 101 x 4 (0.11615) = 1.75327 us
         block 4:  5 + 9 + 12 = 26 blocks, 104 slots; 128 B each; K 64 B (8 lanes a token,
                   2 B a lane), V 256: 2 + 2 + 0.5 - 0.5 = 4; 1 + 0.12 + 104 x 256 / 5e10
                   (0.53248) + 0.1 ns x 4 x 26 x 4 (0.0416) = 1.69408 us
         block 64: 3 blocks, 192 slots; 2048 B each; K and V 512 B: 2 + 4 + 4 - 8 = 2;
                   1 + 0.12 + 192 x 256 / 5e10 (0.98304) + 0.1 ns x 2 x 3 x 4 (0.0024)
                   = 2.10544 us
       x 2 layers */
    static const int32_t BS[3] = {1, 4, 64};
    static const double ATTN_US[3] = {1.75327, 1.69408, 2.10544};
    for (int i = 0; i < 3; i++) {
        decode3(&t, BS[i]);
        pb_sim_step_breakdown(s, &t.b, &o);
        NEAR(o.decode_attn_s, 2 * ATTN_US[i] * 1e-6);
    }
    pb_sim_destroy(s);
}

PB_TEST(decode_step_contiguous_cpp) {
    pb_sim *s = tiny_sim(1, PB_SIM_ATTN_CONTIGUOUS, PB_SIM_FW_CPP);
    PB_REQUIRE(s);
    tbatch t;
    decode3(&t, 0);
    pb_sim_breakdown o;
    pb_sim_step_breakdown(s, &t.b, &o);
    /* no blocks: the live KV only, 1 + 0.12 + 101 x 256 / 5e10 (0.51712) = 1.63712 us per layer */
    NEAR(o.decode_attn_s, 3.27424e-6);
    /* C++ host: 31 launches x 1 us; framework 100 us + 3 x 1 us; the GEMMs, LM head and
       the rest as the paged step's */
    NEAR(o.host_issue_s, 31e-6);
    NEAR(o.framework_s, 103e-6);
    NEAR(o.total_s, 103e-6 + (2 * gemms_upto32_us(3) + GEMM(13.1072, 2.68768, 3) + 3.27424 + 20.96 + 3.6 + 6.2) * 1e-6);
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
    /* GEMMs at M = 100, picked at 128 rows (4 rows of 32x32 tiles or 2 of 64x64); bytes
       at 128 rows (K N + 128 K + 128 N) x 2, at 100 rows (K N + 100 K + 100 N) x 2:
         QKV  64 x 192: 32x32 24 tiles = 6 waves 9.8304 | 64x64 6 tiles = 2 waves 8.388608;
              both 5e10 (6 and 3 columns): 64x64; 75776 B / 5e10 = 1.51552
         out  64 x  64: 32x32 8 tiles = 2 waves 3.2768, 4e10 (at 128 rows 40960 B: 1.024 ->
              3.4331) | 64x64 2 tiles 4.194304, 2e10 (2.048 -> 4.6675): 32x32;
              33792 B / 4e10 = 0.8448
         FC1  64 x 256: 32x32 32 tiles = 8 waves 13.1072 | 64x64 8 tiles = 2 waves 8.388608;
              both 5e10: 64x64; 96768 B / 5e10 = 1.93536
         FC2 256 x  64: 32x32 8 tiles (no split: 8 >= 4 SMs) = 2 waves 13.1072, 4e10, at
              128 rows 114688 B 2.8672 -> 13.4171 + 3 = 16.4171 | 64x64 2 tiles: k 1 16.777216,
              2e10, 5.7344 -> 20.73; k 2 (a slice of 128) 4 CTAs, 1 wave 128 x 6.5536e-8 =
              8.388608, 2 columns 4e10, 114688 + 128 x 64 x 8 x 2 = 245760 B 6.144 -> 10.3980
              + 6 = 16.3980: 64x64 split 2, by 0.02 us; at 100 rows 96768 + 100 x 64 x 16 =
              199168 B / 4e10 = 4.9792
       x 2 layers */
    NEAR(o.gemm_s, 2 * (GEMM(8.388608, 1.51552, 3) + GEMM(3.2768, 0.8448, 3) + GEMM(8.388608, 1.93536, 3) +
                        GEMM(8.388608, 4.9792, 6)) * 1e-6);
    /* element-wise: 100 x 64 x 2 x 4 = 51200 + 2 x 100 x 2816 = 563200 + one sampled row
       1 x 64 x 2 x 2 = 256: 614656 B / 2e10 = 30.7328 us + 20 kernels */
    NEAR(o.elementwise_s, 50.7328e-6);
    /* one sampled row: LM head picked as in the decode step; (64000 + 64 + 1000) x 2 =
       130128 B / 5e10 = 2.60256 us */
    NEAR(o.lm_head_s, GEMM(13.1072, 2.60256, 3) * 1e-6);
    NEAR(o.sampling_s, 1.2e-6);
    NEAR(o.framework_s, 1.01e-3);
    /* GPU: GEMMs + LM head + attention 33.856 + element-wise 50.7328 + sampling 1.2 + 31
       gaps 6.2 (host issue 62 us is less) */
    double total = 1.01e-3 + o.gemm_s + (GEMM(13.1072, 2.60256, 3) + 33.856 + 50.7328 + 1.2 + 6.2) * 1e-6;
    NEAR(o.total_s, total);
    NEAR(pb_sim_prefill_time(s, 100), total);
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
    /* GPU: GEMMs at M = 4 (picked at 32 rows as M = 3), bytes (12288 + 4 x 256) x 2 = 26624
       / 5e10 = 0.53248, (4096 + 4 x 128) x 2 = 9216 / 4e10 = 0.2304, (16384 + 4 x 320) x 2 =
       35328 / 5e10 = 0.70656 and / 4e10 = 0.8832 us, x 2 layers; + attention 33.8048 +
       element-wise 21.2288 + 31 gaps 6.2; framework 1 ms + 10 us */
    double gemm4_us = GEMM(3.2768, 0.53248, 3) + GEMM(1.6384, 0.2304, 3) + GEMM(3.2768, 0.70656, 3) + GEMM(6.5536, 0.8832, 3);
    NEAR(gemm4_us, gemms_upto32_us(4));
    NEAR(o.total_s, 1.01e-3 + (2 * gemm4_us + 33.8048 + 21.2288 + 6.2) * 1e-6);
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
    /* GEMMs over 90 rows, picked at 96 (3 rows of 32x32 tiles, 2 of 64x64); bytes at 90
       rows (K N + 90 K + 90 N) x 2:
         QKV  32x32 18 tiles = 5 waves 8.192 | 64x64 6 tiles = 2 waves 8.388608, both 5e10:
              32x32; 70656 B / 5e10 = 1.41312
         out  32x32 6 tiles = 2 waves 3.2768, 4e10 | 64x64 4.194304, 2e10: 32x32;
              31232 B / 4e10 = 0.7808
         FC1  32x32 24 tiles = 6 waves 9.8304 | 64x64 8 tiles = 2 waves 8.388608, both 5e10:
              64x64; 90368 B / 5e10 = 1.80736
         FC2  32x32 6 tiles (no split) 2 waves 13.1072, 4e10, at 96 rows 94208 B 2.3552 ->
              16.3171 | 64x64 k 2: 4 CTAs 8.388608, 4e10, 94208 + 96 x 64 x 16 = 192512 B
              4.8128 -> 9.6712 + 6 = 15.6712: split 2; 90368 + 90 x 64 x 16 = 182528 B / 4e10
              = 4.5632
       x 2 layers; the LM head of 3 rows as in the decode step; + attention 15.1424 +
       element-wise 47.6864 + sampling 3.6 + 31 gaps 6.2; framework 1 ms + 3 x 10 us */
    double gemm90_us = GEMM(8.192, 1.41312, 3) + GEMM(3.2768, 0.7808, 3) + GEMM(8.388608, 1.80736, 3) +
                       GEMM(8.388608, 4.5632, 6);
    NEAR(o.total_s, 1.03e-3 + (2 * gemm90_us + GEMM(13.1072, 2.68768, 3) + 15.1424 + 47.6864 + 3.6 + 6.2) * 1e-6);
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
    /* decode attention: 1 + 10 ns x 2 seqs x 2 heads (0.04) + whole blocks max(17 + 32,
       16 x (2 + 2)) = 64 tokens x 128 B / 5e10 (0.16384) + 0.1 ns x 3 requests x 4 blocks x
       2 KV heads (0.0024) = 1.20624 us x 2 */
    NEAR(o.decode_attn_s, 2.41248e-6);
    /* prefill attention: 40 x 41 / 2 = 820 pairs x 4 x 2 x 16 = 104,960 FLOPs = 1.0496 us;
       bytes 40 x 8 x 16 x 2 = 10240 / 2e10 = 0.512 us; (4 + 1.0496) x 2 */
    NEAR(o.prefill_attn_s, 10.0992e-6);
    /* kernels: (10 + 2 all-reduces + 2 attention calls) x 2 + 10 per step = 38 */
    PB_CHECK_EQ_INT(o.kernels, 38);
    /* framework: 1 ms + 3 x 10 us + workers 500 us + 3 x 20 us */
    NEAR(o.framework_s, 1.59e-3);
    /* GEMMs per GPU over 42 rows, picked at 64 (no split: every K / 2 < 128, FC2's 128 / 2
       = 64); at 64 rows the shapes' bytes are equal, their column streams differ; at 42
       rows (K N + 42 K + 42 N) x 2:
         QKV  64 x 96: 32x32 6 tiles = 2 waves 3.2768, 3 columns 5e10 (0.65536 -> 3.3417) |
              64x64 2 tiles 4.194304, 4e10: 32x32; 25728 B / 5e10 = 0.51456
         out  32 x 64: 32x32 4 tiles, 1 wave 32 x 2.56e-8 = 0.8192, 4e10 | 64x64 2.097152,
              2e10: 32x32; 12160 B / 4e10 = 0.304
         FC1  64 x 128: 32x32 8 tiles = 2 waves 3.2768, 5e10 | 64x64 2 tiles 4.194304,
              4e10 (1.024 -> 4.3175): 32x32; 32512 B / 5e10 = 0.65024
         FC2 128 x 64: 32x32 4 tiles, 1 wave 128 x 2.56e-8 = 3.2768, 4e10 | 64x64 8.388608:
              32x32; 32512 B / 4e10 = 0.8128
       x 2 layers; LM head 64 x 500 of 3 rows at 32: 32x32 16 tiles = 4 waves 6.5536 | 64x64
       8 tiles = 2 waves 8.388608, both 5e10: 32x32; (32000 + 3 x 564) x 2 = 67384 B / 5e10
       = 1.34768.  Element-wise: embedding 42 x 64 x 2 x 4 = 21504 + 2 layers x 42 x (2 x
       (10 x 64 + 2 x 128) + 2 x 128) = 172032 + final norm 3 x 256 = 768: 194304 B / 2e10 =
       9.7152 + 20 kernels; sampling 3.6; 38 gaps 7.6 (host issue 76 us is less) */
    double gemm_us = GEMM(3.2768, 0.51456, 3) + GEMM(0.8192, 0.304, 3) + GEMM(3.2768, 0.65024, 3) + GEMM(3.2768, 0.8128, 3);
    NEAR(o.lm_head_s, GEMM(6.5536, 1.34768, 3) * 1e-6);
    NEAR(o.elementwise_s, 29.7152e-6);
    NEAR(o.total_s, 1.59e-3 + (2 * gemm_us + GEMM(6.5536, 1.34768, 3) + 27.7504 + 2.41248 + 10.0992 + 29.7152 + 3.6 +
                               7.6) * 1e-6);
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
    NEAR(r.latency_s, decode3_paged_python_s() + 489.8304e-6 + 4.6576e-6);
    pb_sim_destroy(s);
    /* time_scale (the error bars' replicas) multiplies the step, its swap and its copy */
    pb_model m = tiny_model();
    pb_hw hw = tiny_hw();
    pb_sim_cost c = tiny_cost();
    pb_sim_params p = pb_sim_params_default();
    p.time_scale = 1.25;
    pb_cfg_err e;
    PB_REQUIRE(pb_sim_create(&m, &hw, &c, 1, &p, &s, &e) == PB_OK);
    pb_sim_step(s, &t.b, &r);
    NEAR(r.swap_s, 1.25 * 489.8304e-6);
    NEAR(r.copy_s, 1.25 * 4.6576e-6);
    NEAR(r.latency_s, 1.25 * (decode3_paged_python_s() + 489.8304e-6 + 4.6576e-6));
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
    NEAR(r.latency_s, 103e-6 + (2 * gemms_upto32_us(3) + GEMM(13.1072, 2.68768, 3) + 3.27424 + 20.96 + 3.6 + 6.2) * 1e-6 +
                          1.5584e-6);
    pb_sim_destroy(s);
}

/* ---- host-bound steps: kernel issue beyond the GPU's time ---- */
PB_TEST(host_issue_bound_step) {
    pb_model m = tiny_model();
    pb_hw hw = tiny_hw();
    pb_sim_cost c = tiny_cost();
    c.fw[PB_SIM_FW_PYTHON].launch_s = 10e-6;   /* 31 x 10 us = 310 us > the GPU's 104.6 us */
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
