/* test_executor_sim.c -- the cost-model executor: physics sanity, monotonicity,
 * tensor parallelism, swap vs recompute, determinism, profiles, config errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor_sim.h"
#include "fig_sim.h"
#include "pbtest.h"
#include "sim_profile.h"
#include "spec.h"

/* ---- helpers ---- */
typedef struct { pb_model m; pb_hw hw; pb_sim_cost c; } specs;

static int load(const char *model, const char *hw, specs *s) {
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    const char *dir = pb_spec_dir();
    if (pb_model_load(dir, model, &s->m, &e) || pb_hw_load(dir, hw, &s->hw, &e) ||
        pb_sim_cost_load(dir, hw, &s->c, &e)) {
        fprintf(stderr, "  load %s/%s: %s\n", model, hw, e.msg);
        return 0;
    }
    return 1;
}

static pb_sim *mk(const specs *s, int tp, pb_sim_attn attn, pb_sim_framework fw) {
    pb_sim_params p = pb_sim_params_default();
    p.attn = attn;
    p.framework = fw;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    pb_sim *sim = NULL;
    if (pb_sim_create(&s->m, &s->hw, &s->c, tp, &p, &sim, &e)) fprintf(stderr, "  sim: %s\n", e.msg);
    return sim;
}

/* a batch of n decode seqs of context ctx (or one prefill of ctx tokens) */
typedef struct { pb_batch_seq seqs[512]; int32_t table[8]; pb_batch b; } tbatch;
static void make_decode(tbatch *t, int n, int ctx, int bs) {
    memset(t, 0, sizeof *t);
    for (int i = 0; i < n; i++) {
        pb_batch_seq *q = &t->seqs[i];
        q->seq_id = i;
        q->group_id = i;
        q->n_new = 1;
        q->n_cached = ctx - 1;
        q->context_len = ctx;
        q->sample = true;
        q->block_table = t->table;
        q->n_blocks = bs ? (ctx + bs - 1) / bs : 0;
    }
    t->b.n_seqs = n;
    t->b.seqs = t->seqs;
    t->b.n_decode = n;
    t->b.block_size = bs;
    t->b.n_top = 1;
}

static double step_s(const pb_sim *s, const pb_batch *b) {
    pb_step_result r;
    memset(&r, 0, sizeof r);
    pb_sim_step(s, b, &r);
    return r.latency_s;
}

/* ---- tests ---- */
PB_TEST(specs_have_cost_models) {
    const char *hws[] = {"a100-40gb", "a100-80gb", "h100-sxm", "h200"};
    for (size_t i = 0; i < PB_ARRAY_LEN(hws); i++) {
        specs s;
        PB_CHECK(load("opt-13b", hws[i], &s));
    }
}

PB_TEST(roofline_batch1_decode_opt13b_a100) {
    specs s;
    PB_REQUIRE(load("opt-13b", "a100-40gb", &s));
    pb_sim *vllm = mk(&s, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    pb_sim *ft = mk(&s, 1, PB_SIM_ATTN_CONTIGUOUS, PB_SIM_FW_CPP);
    PB_REQUIRE(vllm && ft);
    double floor_s = pb_param_bytes(&s.m) / s.hw.hbm_bw;           /* 26 GB / 1555 GB/s */
    PB_CHECK(floor_s > 0.0160 && floor_s < 0.0172);
    tbatch t;
    make_decode(&t, 1, 330, 16);
    pb_sim_breakdown o;
    pb_sim_step_breakdown(vllm, &t.b, &o);
    /* the GPU forward pass: at batch 1 every layer GEMM is the library's pick at one row
       (the tabulated pick is the direct one, exactly), no faster than its weights (and
       the one row in and out) streaming at the fitted GEMM bandwidth (gemm_bw_efficiency
       of datasheet HBM, calibrate.py) plus the per-GEMM fixed time, and at most 15% above
       it (the compute side of a one-wave tile, sqrt(compute^2 + memory^2): 7-13% today);
       the forward pass is the sum of its terms and gaps, and sits within 30% of the
       weight-read time (the GEMMs' compute side, attention, element-wise, LM head, fixed
       costs: 27.5% today, with the weights read at 97.9% of HBM) */
    double h = s.m.hidden, f = s.m.ffn, gK[4] = {h, h, h, f}, gN[4] = {3 * h, h, f, h}, gemms = 0;
    for (int i = 0; i < 4; i++) {
        double g = pb_sim_gemm_time(vllm, 1, gK[i], gN[i]);
        double mem = (gK[i] * gN[i] + gK[i] + gN[i]) * s.m.dtype_bytes / (s.hw.hbm_bw * s.c.gemm_bw_eff) + s.c.gemm_fixed_s;
        PB_CHECK(g >= mem && g <= 1.15 * mem);
        gemms += g;
    }
    PB_CHECK_NEAR(o.gemm_s, s.m.n_layers * gemms, 1e-12 * o.gemm_s);
    PB_CHECK_NEAR(o.gpu_s, o.gemm_s + o.lm_head_s + o.prefill_attn_s + o.decode_attn_s + o.elementwise_s + o.allreduce_s +
                               o.sampling_s + (double)o.kernels * s.c.kernel_gap_s, 1e-12 * o.gpu_s);
    double wfloor = floor_s / s.c.gemm_bw_eff;
    fprintf(stderr, "  OPT-13B batch-1 decode on A100: forward pass %.3f ms, %.3fx the weight-read time %.3f ms\n",
            1e3 * o.gpu_s, o.gpu_s / wfloor, 1e3 * wfloor);
    PB_CHECK(o.gpu_s >= wfloor && o.gpu_s <= 1.30 * wfloor);
    /* FasterTransformer's C++ step: its framework + the same forward pass, exactly */
    pb_sim_breakdown of;
    pb_sim_step_breakdown(ft, &t.b, &of);
    double t_ft = step_s(ft, &t.b);
    PB_CHECK_NEAR(t_ft, s.c.fw[PB_SIM_FW_CPP].step_s + s.c.fw[PB_SIM_FW_CPP].seq_s + (of.gpu_s > of.host_issue_s ? of.gpu_s : of.host_issue_s), 1e-12);
    PB_CHECK(t_ft >= wfloor && t_ft <= 1.30 * wfloor);
    /* vLLM's Python step adds the fitted host work (framework.python step + seq) */
    double t_v = step_s(vllm, &t.b);
    PB_CHECK(t_v > t_ft);
    PB_CHECK_NEAR(t_v - o.gpu_s, s.c.fw[PB_SIM_FW_PYTHON].step_s + s.c.fw[PB_SIM_FW_PYTHON].seq_s, 1e-12);
    pb_sim_destroy(vllm);
    pb_sim_destroy(ft);
}

PB_TEST(hopper_floors) {
    specs s;
    PB_REQUIRE(load("opt-13b", "h100-sxm", &s));
    pb_sim *ft = mk(&s, 1, PB_SIM_ATTN_CONTIGUOUS, PB_SIM_FW_CPP);
    PB_REQUIRE(ft);
    tbatch t;
    make_decode(&t, 1, 128, 0);
    double floor_s = pb_param_bytes(&s.m) / s.hw.hbm_bw;           /* ~7.7 ms */
    double x = step_s(ft, &t.b);
    /* weights stream at the fitted GEMM bandwidth (H100: the datasheet's), and the one
       row is padded to a 64-row tile whose math adds in quadrature (sqrt(c^2 + m^2)):
       1.43x the weight-read time at this revision; the profiled H100 GEMMs of 1-64 rows
       sit at 0.98x the model's median (calibrate.py) */
    double w = floor_s / s.c.gemm_bw_eff;
    printf("  H100 batch-1 decode %.3f ms, weights at the fitted GEMM bandwidth %.3f ms\n", 1e3 * x, 1e3 * w);
    PB_CHECK(x >= w && x <= 1.6 * w);
    pb_sim_destroy(ft);
}

PB_TEST(monotone_in_batch_context_tokens) {
    specs s;
    PB_REQUIRE(load("opt-13b", "a100-40gb", &s));
    pb_sim *sims[2] = {mk(&s, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON), mk(&s, 1, PB_SIM_ATTN_CONTIGUOUS, PB_SIM_FW_CPP)};
    PB_REQUIRE(sims[0] && sims[1]);
    for (int k = 0; k < 2; k++) {
        const pb_sim *sim = sims[k];
        int bs = k == 0 ? 16 : 0;
        double prev = 0;
        for (int n = 1; n <= 256; n++) {
            double x = pb_sim_decode_time(sim, n, 512, bs);
            PB_CHECK(x > prev);
            prev = x;
        }
        prev = 0;
        for (int c = 1; c <= 2048; c += 7) {
            double x = pb_sim_decode_time(sim, 32, c, bs);
            PB_CHECK(x >= prev);
            prev = x;
        }
        prev = 0;
        for (int n = 1; n <= 4096; n += 5) {
            double x = pb_sim_prefill_time(sim, n);
            PB_CHECK(x >= prev);
            prev = x;
        }
    }
    /* the paged kernel costs more than the contiguous one, less with larger blocks */
    pb_sim *paged = mk(&s, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_CPP);
    PB_REQUIRE(paged);
    double contig = pb_sim_decode_time(sims[1], 64, 1024, 0);
    double prev = 1e9;
    for (int bs = 1; bs <= 256; bs *= 2) {
        double x = pb_sim_decode_time(paged, 64, 1024, bs);
        PB_CHECK(x < prev && x > contig);
        prev = x;
    }
    /* a mixed batch costs at least its parts' GEMMs: adding a prefill never helps */
    tbatch t;
    make_decode(&t, 8, 300, 16);
    double d = step_s(sims[0], &t.b);
    t.seqs[8] = (pb_batch_seq){.seq_id = 8, .group_id = 8, .is_prefill = true, .n_new = 200, .context_len = 200,
                               .sample = true};
    t.b.n_seqs = 9;
    t.b.n_prefill_tokens = 200;
    PB_CHECK(step_s(sims[0], &t.b) > d);
    pb_sim_destroy(paged);
    pb_sim_destroy(sims[0]);
    pb_sim_destroy(sims[1]);
}

PB_TEST(fig18a_kernel_latencies) {
    /* the decode-attention model against the paper's Fig. 18a points it was fitted on
       (OPT-13B geometry assumed): per layer = decode_attn / n_layers */
    specs s;
    PB_REQUIRE(load("opt-13b", "a100-40gb", &s));
    pb_sim *v = mk(&s, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_CPP), *f = mk(&s, 1, PB_SIM_ATTN_CONTIGUOUS, PB_SIM_FW_CPP);
    PB_REQUIRE(v && f);
    static const int bs[] = {8, 8, 8, 32, 32, 32}, ctx[] = {64, 128, 256, 64, 128, 256};
    static const double pv[] = {31.46, 43.56, 84.32, 77.12, 127.06, 235.29}, pf[] = {21.88, 34.90, 62.34, 61.42, 106.74, 194.51};
    for (int i = 0; i < 6; i++) {
        tbatch t;
        pb_sim_breakdown o;
        make_decode(&t, bs[i], ctx[i], 16);
        pb_sim_step_breakdown(v, &t.b, &o);
        double us_v = o.decode_attn_s / s.m.n_layers * 1e6;
        make_decode(&t, bs[i], ctx[i], 0);
        pb_sim_step_breakdown(f, &t.b, &o);
        double us_f = o.decode_attn_s / s.m.n_layers * 1e6;
        PB_CHECK(fabs(us_f / pf[i] - 1) < 0.15);
        PB_CHECK(fabs(us_v / pv[i] - 1) < 0.20);
        PB_CHECK(us_v > us_f);
    }
    pb_sim_destroy(v);
    pb_sim_destroy(f);
}

PB_TEST(tensor_parallel_scaling) {
    specs s;
    PB_REQUIRE(load("opt-66b", "a100-40gb", &s));
    pb_sim *t1 = mk(&s, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_CPP), *t2 = mk(&s, 2, PB_SIM_ATTN_PAGED, PB_SIM_FW_CPP),
           *t4 = mk(&s, 4, PB_SIM_ATTN_PAGED, PB_SIM_FW_CPP);
    PB_REQUIRE(t1 && t2 && t4);
    tbatch t;
    make_decode(&t, 32, 512, 16);
    pb_sim_breakdown o1, o2, o4;
    pb_sim_step_breakdown(t1, &t.b, &o1);
    pb_sim_step_breakdown(t2, &t.b, &o2);
    pb_sim_step_breakdown(t4, &t.b, &o4);
    PB_CHECK(o4.total_s < o2.total_s && o2.total_s < o1.total_s);
    PB_CHECK(o4.total_s > o1.total_s / 4);                 /* all-reduces and fixed costs */
    PB_CHECK_NEAR(o4.gemm_s, o1.gemm_s / 4, o1.gemm_s * 0.02);
    PB_CHECK(o1.allreduce_s == 0 && o2.allreduce_s > 0 && o4.allreduce_s > 0);
    /* each all-reduce is the measured NCCL fit at that tp: latency + bytes / bandwidth,
       two per layer over 32 tokens x hidden fp16, plus the logits gather */
    double L = s.m.n_layers, by = 32 * s.m.hidden * 2.0, lg = 32.0 * s.m.vocab * 2;
    PB_CHECK_NEAR(o2.allreduce_s, L * 2 * (s.c.ar_lat_s[0] + by / s.c.ar_bw[0]) + s.c.ar_lat_s[0] + lg / s.c.ar_bw[0],
                  1e-12);
    PB_CHECK_NEAR(o4.allreduce_s, L * 2 * (s.c.ar_lat_s[1] + by / s.c.ar_bw[1]) + s.c.ar_lat_s[1] + lg / s.c.ar_bw[1],
                  1e-12);
    /* a step reads every weight: OPT-66B at TP4 on an A100-40GB, 21.1 ms at least */
    make_decode(&t, 1, 128, 16);
    PB_CHECK(step_s(t4, &t.b) >= pb_param_bytes(&s.m) / 4 / s.hw.hbm_bw);
    /* tp must divide the heads */
    pb_sim_params p = pb_sim_params_default();
    pb_sim *bad = NULL;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_sim_create(&s.m, &s.hw, &s.c, 5, &p, &bad, &e) == PB_ERR_INVALID && !bad);
    pb_sim_destroy(bad);
    PB_CHECK_STR_CONTAINS(e.msg, "tensor-parallel");
    pb_sim_destroy(t1);
    pb_sim_destroy(t2);
    pb_sim_destroy(t4);
}

PB_TEST(swap_vs_recompute_fig19a) {
    specs s;
    PB_REQUIRE(load("opt-13b", "a100-40gb", &s));
    pb_sim *v = mk(&s, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(v);
    const int N = PB_FIG19A_TOKENS;
    double rec = pb_sim_prefill_time(v, N);
    double prev_total = 1e9, prev_block = 0, prev_tok = 1e9;
    double ratio1 = 0, ratio256 = 0, prev_ratio = 0;
    for (int bs = 1; bs <= 256; bs *= 2) {
        int64_t nb = (N + bs - 1) / bs;
        double in = pb_sim_swap_time(v, nb, bs, true), out = pb_sim_swap_time(v, nb, bs, false);
        double per_tok = pb_sim_swap_time(v, 1, bs, true) / bs;   /* per token of a block */
        PB_CHECK(in + out < prev_total);        /* total swap time falls with block size */
        PB_CHECK(per_tok < prev_tok);           /* so does the time per token swapped */
        PB_CHECK(pb_sim_swap_time(v, 1, bs, true) > prev_block);   /* one bigger block costs more */
        prev_tok = per_tok;
        prev_total = in + out;
        prev_block = pb_sim_swap_time(v, 1, bs, true);
        /* recompute (one 256-token prefill step) vs swap in + out: the ratio rises with
           the block size (fewer, larger copies); where it crosses 1 is a prediction,
           reported in RESULTS.md beside the paper's (between 16 and 32) */
        double r = rec / (in + out);
        PB_CHECK(r > prev_ratio);
        prev_ratio = r;
        if (bs == 1) ratio1 = r;
        if (bs == 256) ratio256 = r;
    }
    PB_CHECK(ratio1 < 0.5 && ratio256 > 0.8);
    /* what RESULTS.md claims (Fig. 19(a), a miss: "recompute 43.4 ms (paper 36-39:
       1.11-1.19x); recompute/swap 0.93 at block 8, 1.08 at 16"): the recompute above 1.11x
       the paper's 39 ms and below 1.21x its 36 ms, and swap in + out costlier than recompute at block 8,
       cheaper at block 16 (the paper: between 16 and 32) */
    PB_CHECK(rec * 1e3 > 39 * 1.11 && rec * 1e3 < 36 * 1.21);
    const int bs_cross[2] = {8, 16};
    double r_cross[2];
    for (int k = 0; k < 2; k++) {
        int64_t nb = (N + bs_cross[k] - 1) / bs_cross[k];
        r_cross[k] = rec / (pb_sim_swap_time(v, nb, bs_cross[k], true) + pb_sim_swap_time(v, nb, bs_cross[k], false));
    }
    PB_CHECK(r_cross[0] < 1 && r_cross[1] > 1);
    fprintf(stderr, "  fig19a: recompute %.1f ms (paper 36-39), recompute/swap %.2f (block 1), %.2f (8), %.2f (16), "
            "%.2f (256)\n", rec * 1e3, ratio1, r_cross[0], r_cross[1], ratio256);
    /* swap-in per copy: more small copies at small blocks dominate */
    PB_CHECK(pb_sim_swap_time(v, 256, 1, true) > 4 * pb_sim_swap_time(v, 1, 256, true));
    pb_sim_destroy(v);
}

PB_TEST(memory_ops_in_step) {
    specs s;
    PB_REQUIRE(load("opt-13b", "a100-40gb", &s));
    pb_executor *ex = pb_executor_sim_create(&s.m, &s.hw, &s.c, 1, NULL, NULL);
    PB_REQUIRE(ex);
    PB_CHECK(pb_executor_sim_model(ex) != NULL);
    tbatch t;
    make_decode(&t, 4, 100, 16);
    pb_block_pair pairs[3] = {{0, 1}, {2, 3}, {4, 5}};
    pb_step_result r0, r1;
    PB_CHECK(pb_executor_execute(ex, &t.b, &r0, NULL) == PB_OK);
    PB_CHECK(r0.swap_s == 0 && r0.copy_s == 0 && !r0.has_tokens);
    t.b.copies = pairs;
    t.b.n_copies = 3;
    t.b.swap_in = pairs;
    t.b.n_swap_in = 2;
    t.b.swap_out = pairs;
    t.b.n_swap_out = 1;
    PB_CHECK(pb_executor_execute(ex, &t.b, &r1, NULL) == PB_OK);
    PB_CHECK(r1.copy_s > 0 && r1.swap_s > 0);
    PB_CHECK_NEAR(r1.latency_s, r0.latency_s + r1.swap_s + r1.copy_s, 1e-12);
    const pb_sim *sim = pb_executor_sim_model(ex);
    PB_CHECK_NEAR(r1.swap_s, pb_sim_swap_time(sim, 2, 16, true) + pb_sim_swap_time(sim, 1, 16, false), 1e-15);
    /* swaps need a block size */
    t.b.block_size = 0;
    PB_CHECK(pb_executor_execute(ex, &t.b, &r1, NULL) == PB_ERR_INVALID);
    /* empty batch: nothing to do, no time */
    tbatch e;
    make_decode(&e, 0, 1, 16);
    PB_CHECK(pb_executor_execute(ex, &e.b, &r0, NULL) == PB_OK && r0.latency_s == 0);
    pb_executor_destroy(ex);
}

PB_TEST(determinism) {
    specs s;
    PB_REQUIRE(load("opt-13b", "a100-40gb", &s));
    pb_executor *a = pb_executor_sim_create(&s.m, &s.hw, &s.c, 1, NULL, NULL);
    pb_executor *b = pb_executor_sim_create(&s.m, &s.hw, &s.c, 1, NULL, NULL);
    PB_REQUIRE(a && b);
    tbatch t;
    make_decode(&t, 37, 777, 16);
    for (int i = 0; i < 37; i++) t.seqs[i].context_len = 10 + 31 * i;
    pb_step_result r1, r2, r3;
    PB_CHECK(pb_executor_execute(a, &t.b, &r1, NULL) == PB_OK);
    PB_CHECK(pb_executor_execute(a, &t.b, &r2, NULL) == PB_OK);
    PB_CHECK(pb_executor_execute(b, &t.b, &r3, NULL) == PB_OK);
    PB_CHECK(memcmp(&r1.latency_s, &r2.latency_s, sizeof(double)) == 0);
    PB_CHECK(memcmp(&r1.latency_s, &r3.latency_s, sizeof(double)) == 0);
    pb_executor_destroy(a);
    pb_executor_destroy(b);
}

static const char *PROFILE =
    "# pagedbench step profile v1\n"
    "phase,batch,tokens,context,latency_us\n"
    "decode,1,1,100,10000\n"
    "decode,1,1,300,10200\n"
    "decode,9,9,100,11000\n"
    "decode,9,9,300,12000\n"
    "prefill,1,100,0,12000\n"
    "prefill,2,300,0,20000\n";

PB_TEST(profile_interpolation) {
    pb_sim_profile *p = NULL;
    char err[256];
    PB_REQUIRE(pb_sim_profile_parse("t.csv", PROFILE, &p, err, sizeof err) == PB_OK);
    PB_CHECK(pb_sim_profile_check(p) == PB_OK);
    PB_CHECK_NEAR(pb_sim_profile_latency(p, 0, 1, 100), 0.010, 1e-12);
    PB_CHECK_NEAR(pb_sim_profile_latency(p, 0, 9, 300), 0.012, 1e-12);
    PB_CHECK_NEAR(pb_sim_profile_latency(p, 0, 5, 200), (0.0101 + 0.0115) / 2, 1e-12);   /* bilinear */
    PB_CHECK_NEAR(pb_sim_profile_latency(p, 0, 17, 100), 0.012, 1e-12);                   /* extrapolated */
    PB_CHECK_NEAR(pb_sim_profile_latency(p, 200, 0, 0), 0.016, 1e-12);
    /* mixed: prefill(P + D) + decode(D, c) - decode(D, c_min) */
    PB_CHECK_NEAR(pb_sim_profile_latency(p, 191, 9, 300), 0.016 + 0.001, 1e-12);
    PB_CHECK(pb_sim_profile_latency(p, 0, 0, 0) == 0);
    pb_sim_profile_destroy(p);

    const char *bad_grid = "phase,batch,tokens,context,latency_us\ndecode,1,1,100,1\ndecode,2,2,200,1\n"
                           "prefill,1,1,0,1\nprefill,1,2,0,1\n";
    PB_CHECK(pb_sim_profile_parse("g.csv", bad_grid, &p, err, sizeof err) == PB_ERR_INVALID && !p);
    PB_CHECK_STR_CONTAINS(err, "full grid");
    PB_CHECK(pb_sim_profile_parse("h.csv", "phase,batch,tokens\n", &p, err, sizeof err) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(err, "h.csv:1:");
    const char *bad_num = "phase,batch,tokens,context,latency_us\ndecode,1,1,100,fast\n";
    PB_CHECK(pb_sim_profile_parse("n.csv", bad_num, &p, err, sizeof err) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(err, "n.csv:2: latency_us");
    PB_CHECK(pb_sim_profile_load("/nonexistent/p.csv", &p, err, sizeof err) == PB_ERR_IO);
}

PB_TEST(profile_replaces_forward_pass) {
    specs s;
    PB_REQUIRE(load("opt-13b", "a100-40gb", &s));
    char path[] = "/tmp/pb_test_profile_XXXXXX";
    int fd = mkstemp(path);
    PB_REQUIRE(fd >= 0);
    PB_REQUIRE(write(fd, PROFILE, strlen(PROFILE)) == (ssize_t)strlen(PROFILE));
    close(fd);
    pb_sim_params p = pb_sim_params_default();
    snprintf(p.profile, sizeof p.profile, "%s", path);
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    pb_sim *sim = NULL;
    PB_REQUIRE(pb_sim_create(&s.m, &s.hw, &s.c, 1, &p, &sim, &e) == PB_OK);
    tbatch t;
    make_decode(&t, 9, 300, 16);
    double fw = s.c.fw[PB_SIM_FW_PYTHON].step_s + 9 * s.c.fw[PB_SIM_FW_PYTHON].seq_s;
    PB_CHECK_NEAR(step_s(sim, &t.b), 0.012 + fw, 1e-12);
    pb_sim_destroy(sim);
    unlink(path);
    snprintf(p.profile, sizeof p.profile, "/nonexistent/profile.csv");
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_sim_create(&s.m, &s.hw, &s.c, 1, &p, &sim, &e) == PB_ERR_IO && !sim);
    PB_CHECK_STR_CONTAINS(e.msg, "/nonexistent/profile.csv");
}

/* GEMM compute (K large enough to be compute-bound) over FLOP-rate time */
static double gemm_over_ideal(const pb_sim *sim, const specs *s, double M, double K, double N) {
    return (pb_sim_gemm_time(sim, M, K, N) - s->c.gemm_fixed_s) / (2.0 * M * K * N / (s->hw.fp16_flops * s->c.gemm_flops_eff));
}

PB_TEST(gemm_tile_and_wave_quantization) {
    specs s;
    PB_REQUIRE(load("opt-13b", "a100-40gb", &s));
    pb_sim *v = mk(&s, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(v);
    /* a large GEMM runs at the large-GEMM (MAMF) rate: quantization < 1% */
    double big = gemm_over_ideal(v, &s, 8192, 8192, 8192);
    PB_CHECK(big >= 1.0 - 1e-9 && big < 1.01);
    /* never faster than the FLOP rate, at any M */
    for (int M = 1; M <= 5000; M += 37) PB_CHECK(gemm_over_ideal(v, &s, M, 20480, 5120) >= 1.0 - 1e-9);
    /* tile quantization: rows are padded to the tile height (64), so 193..256 rows
       cost the same compute (only their activations' bytes differ: < 1%), and 257 rows
       take another tile row */
    double t193 = pb_sim_gemm_time(v, 193, 16384, 16384), t256 = pb_sim_gemm_time(v, 256, 16384, 16384);
    PB_CHECK(t193 <= t256 && t256 < 1.01 * t193);
    PB_CHECK(pb_sim_gemm_time(v, 257, 16384, 16384) > 1.1 * t256);
    /* wave quantization: M = 256 of OPT-13B's FFN-out (N = 5120) has 80 128x128 tiles
       or 320 64x64 tiles for 108 SMs (3 waves, nearly full); finer SMs in the same
       chip leave a partial wave, so the GEMM is further above its FLOP-rate time */
    double q = gemm_over_ideal(v, &s, 256, 20480, 5120);
    PB_CHECK(q >= 1.0 - 1e-9 && q < 1.5);   /* 1.01 at the fitted 71.7% SM rate: 320 64x64 tiles, 3 waves */
    specs s2 = s;
    s2.hw.n_sms = 2 * s.hw.n_sms;      /* twice the SMs, same total rate */
    pb_sim *w = mk(&s2, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(w);
    PB_CHECK(gemm_over_ideal(w, &s2, 256, 20480, 5120) > q);   /* finer SMs: fewer tiles per wave */
    pb_sim_destroy(w);
    /* the L2 operand feed caps small tiles: an unlimited L2 is never slower, and a
       slow L2 (a tenth) makes the small-tile GEMM slower */
    specs s3 = s;
    s3.c.l2_bw = 1e16;
    pb_sim *u = mk(&s3, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(u);
    PB_CHECK(pb_sim_gemm_time(u, 256, 5120, 5120) <= pb_sim_gemm_time(v, 256, 5120, 5120));
    specs s5 = s;
    s5.c.l2_bw = s.c.l2_bw / 10;
    pb_sim *slow = mk(&s5, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(slow);
    PB_CHECK(pb_sim_gemm_time(slow, 256, 5120, 5120) > pb_sim_gemm_time(v, 256, 5120, 5120));
    pb_sim_destroy(slow);
    pb_sim_destroy(u);
    /* one tile shape, 128x128: 4 x 27 = 108 tiles fill one wave exactly, 4 x 28 need two
       (memory made free, so the compute side is alone in the quadrature sum) */
    specs s4 = s;
    s4.c.n_tiles = 1;
    s4.c.tile_m[0] = s4.c.tile_n[0] = 128;
    s4.hw.hbm_bw *= 1e9;
    s4.c.gemm_sm_bw *= 1e9;
    pb_sim *t = mk(&s4, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(t);
    double one = pb_sim_gemm_time(t, 512, 65536, 27 * 128) - s.c.gemm_fixed_s,
           two = pb_sim_gemm_time(t, 512, 65536, 27 * 128 + 1) - s.c.gemm_fixed_s;
    PB_CHECK_NEAR(two / one, 2.0, 1e-9);
    pb_sim_destroy(t);
    /* the step uses the same GEMMs (tabulated up to 32,768 tokens, computed beyond) */
    double h = s.m.hidden, f = s.m.ffn;
    const int Ms[] = {1, 63, 256, 2560, 40000};
    for (size_t i = 0; i < PB_ARRAY_LEN(Ms); i++) {
        pb_batch_seq sq;
        memset(&sq, 0, sizeof sq);
        sq.is_prefill = true;
        sq.n_new = Ms[i];
        sq.context_len = Ms[i];
        sq.sample = true;
        pb_batch b;
        memset(&b, 0, sizeof b);
        b.n_seqs = 1;
        b.seqs = &sq;
        b.n_prefill_tokens = Ms[i];
        b.n_top = 1;
        pb_sim_breakdown o;
        pb_sim_step_breakdown(v, &b, &o);
        double want = s.m.n_layers * (pb_sim_gemm_time(v, Ms[i], h, 3 * h) + pb_sim_gemm_time(v, Ms[i], h, h) +
                                      pb_sim_gemm_time(v, Ms[i], h, f) + pb_sim_gemm_time(v, Ms[i], f, h));
        PB_CHECK_NEAR(o.gemm_s, want, want * 1e-12);
        PB_CHECK_NEAR(o.lm_head_s, pb_sim_gemm_time(v, 1, h, s.m.vocab), 1e-15);
    }
    PB_CHECK(pb_sim_check(v) == PB_OK);
    pb_sim_destroy(v);
}

/* Decode attention's paged-minus-contiguous time per layer for n sequences of ctx
   tokens in blocks of bs. */
static double paged_extra(const pb_sim *paged, const pb_sim *contig, const specs *s, int n, int ctx, int bs) {
    tbatch t;
    pb_sim_breakdown a, b;
    make_decode(&t, n, ctx, bs);
    pb_sim_step_breakdown(paged, &t.b, &a);
    pb_sim_step_breakdown(contig, &t.b, &b);
    return (a.decode_attn_s - b.decode_attn_s) / s->m.n_layers;
}

/* The paged kernel's block-size law (executor_sim.h): warp requests per token of the
   paper's kernel (table loads, narrow K/V loads below 32 / 8 tokens a block) relative
   to block 16, where attn_paged_block_ns was measured; whole blocks read. */
PB_TEST(paged_block_size_law) {
    specs s;
    PB_REQUIRE(load("opt-13b", "a100-40gb", &s));
    pb_sim *paged = mk(&s, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON), *contig = mk(&s, 1, PB_SIM_ATTN_CONTIGUOUS, PB_SIM_FW_PYTHON);
    PB_REQUIRE(paged && contig);
    double hkv = s.m.n_kv_heads, n = 8, ctx = 256;
    /* block 16: attn_paged_block_ns per (sequence, KV head, block), as calibrated */
    double e16 = paged_extra(paged, contig, &s, 8, 256, 16);
    PB_CHECK_NEAR(e16, s.c.attn_paged_block_s * hkv * n * ctx / 16, e16 * 1e-12);
    /* requests per token (fp16, head 128): 9, 6, 4.5, 1.75 at blocks 1, 2, 4, 8, 0.625
       at 16, 2/b from 32: blocks 1-4 pay the narrow 2-byte loads, not 1/b */
    const int bs[] = {1, 2, 4, 8, 32, 64, 128, 256};
    const double per_tok[] = {9, 6, 4.5, 1.75, 2.0 / 32, 2.0 / 64, 2.0 / 128, 2.0 / 256};
    for (size_t i = 0; i < PB_ARRAY_LEN(bs); i++) {
        double e = paged_extra(paged, contig, &s, 8, 256, bs[i]);
        PB_CHECK_NEAR(e / e16, per_tok[i] / 0.625, 1e-9);
    }
    /* whole blocks are read: 100 tokens in a block of 256 stream 256 slots of KV */
    double kv_tok = 2.0 * s.m.n_kv_heads * s.m.head_size * s.m.dtype_bytes, bw = s.hw.hbm_bw * s.c.attn_stream_eff;
    double e256 = paged_extra(paged, contig, &s, 8, 100, 256);
    PB_CHECK_NEAR(e256, n * (156 * kv_tok / bw + s.c.attn_paged_block_s / 10 * hkv * 2), e256 * 1e-9);
    pb_sim_destroy(paged);
    pb_sim_destroy(contig);
}

/* The GEMM's memory side: few CTAs cannot fill HBM (gemm_sm_bw per active SM), and
   split-K puts more CTAs on a GEMM whose tiles leave SMs idle. */
PB_TEST(gemm_splitk_and_sm_bandwidth) {
    specs s;
    PB_REQUIRE(load("opt-13b", "a100-40gb", &s));
    /* one row, N = 512: 8 64x64 tiles, K = 16384 (16 MiB of weights) */
    double M = 1, K = 16384, N = 512, bytes = (K * N + M * K + M * N) * 2;
    specs s1 = s;
    s1.c.n_splits = 1;
    s1.c.splitk[0] = 1;
    pb_sim *nosplit = mk(&s1, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON), *v = mk(&s, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(nosplit && v);
    /* without split-K: the weights stream through at most 8 tile columns (64 wide), each
       at the per-SM bandwidth */
    double t1 = pb_sim_gemm_time(nosplit, M, K, N);
    PB_CHECK(t1 >= bytes / (8 * s.c.gemm_sm_bw) + s.c.gemm_fixed_s);
    /* with split-K: at least 3x faster, never below the HBM floor, and a second kernel */
    double t2 = pb_sim_gemm_time(v, M, K, N);
    printf("  1 x 16384 x 512 GEMM: %.1f us without split-K, %.1f us with\n", 1e6 * t1, 1e6 * t2);
    PB_CHECK(t2 < t1 / 3);
    PB_CHECK(t2 >= bytes / (s.hw.hbm_bw * s.c.gemm_bw_eff) + 2 * s.c.gemm_fixed_s);
    /* a GEMM whose tiles fill the SMs never splits: the two models agree exactly */
    PB_CHECK_NEAR(pb_sim_gemm_time(v, 64, 5120, 15360), pb_sim_gemm_time(nosplit, 64, 5120, 15360), 1e-15);
    /* more per-SM bandwidth never slows a GEMM, less never speeds one up */
    specs s2 = s;
    s2.c.gemm_sm_bw *= 4;
    pb_sim *fast = mk(&s2, 1, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON);
    PB_REQUIRE(fast);
    for (int m = 1; m <= 512; m += 31) PB_CHECK(pb_sim_gemm_time(fast, m, K, N) <= pb_sim_gemm_time(v, m, K, N));
    PB_CHECK(pb_sim_check(v) == PB_OK && pb_sim_check(nosplit) == PB_OK);
    pb_sim_destroy(fast);
    pb_sim_destroy(v);
    pb_sim_destroy(nosplit);
}

PB_TEST(config_errors) {
    pb_config *c = NULL;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    /* a cost_model number without a source */
    const char *y = "name: X\ncost_model:\n  gemm_flops_efficiency: 0.8\n  sources: {}\n";
    PB_REQUIRE(pb_config_load_string("hw.yaml", y, &c, &e) == PB_OK);
    pb_sim_cost cost;
    PB_CHECK(pb_sim_cost_from_node(pb_config_root(c), &cost, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "hw.yaml:");
    pb_config_destroy(c);
    /* no cost_model at all */
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("hw2.yaml", "name: Y\n", &c, &e) == PB_OK);
    PB_CHECK(pb_sim_cost_from_node(pb_config_root(c), &cost, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "no cost_model");
    pb_config_destroy(c);
    /* system params */
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("sys.yaml", "attention_kernel: contiguous\nframework: cpp\n", &c, &e) == PB_OK);
    pb_sim_params p = pb_sim_params_default();
    PB_CHECK(pb_sim_params_from_node(pb_config_root(c), &p, &e) == PB_OK);
    PB_CHECK(p.attn == PB_SIM_ATTN_CONTIGUOUS && p.framework == PB_SIM_FW_CPP && !p.profile[0]);
    pb_config_destroy(c);
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("sys2.yaml", "attention_kernel: pagged\n", &c, &e) == PB_OK);
    PB_CHECK(pb_sim_params_from_node(pb_config_root(c), &p, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "sys2.yaml:1:");
    pb_config_destroy(c);
    p = pb_sim_params_default();
    PB_CHECK(pb_sim_params_from_node(NULL, &p, &e) == PB_OK && p.attn == PB_SIM_ATTN_PAGED);
    /* a malformed GEMM tile shape, and tiles without a source, in a real hardware file */
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/a100-40gb.yaml", pb_spec_dir());
    FILE *fp = fopen(path, "r");
    PB_REQUIRE(fp);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = '\0';
    char *tile = strstr(text, "\"128x64\"");
    PB_REQUIRE(tile);
    memcpy(tile, "\"128by4\"", 8);
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("bad_tiles.yaml", text, &c, &e) == PB_OK);
    PB_CHECK(pb_sim_cost_from_node(pb_config_root(c), &cost, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "gemm_tiles");
    PB_CHECK_STR_CONTAINS(e.msg, "128by4");
    pb_config_destroy(c);
    char *src = strstr(text, "\n    gemm_tiles: \"");
    PB_REQUIRE(src);
    memcpy(src + 5, "xemm", 4);        /* the source entry no longer names gemm_tiles */
    memcpy(tile, "\"128x64\"", 8);
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("nosrc.yaml", text, &c, &e) == PB_OK);
    PB_CHECK(pb_sim_cost_from_node(pb_config_root(c), &cost, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "gemm_tiles: no source");
    pb_config_destroy(c);
}

PB_TEST(figure_writers) {
    char dir[] = "/tmp/pb_test_fig_XXXXXX";
    PB_REQUIRE(mkdtemp(dir));
    char p1[256], p19[256];
    snprintf(p1, sizeof p1, "%s/fig1.csv", dir);
    snprintf(p19, sizeof p19, "%s/fig19a.csv", dir);
    PB_REQUIRE(pb_fig1_write(NULL, p1, NULL) == PB_OK);
    PB_REQUIRE(pb_fig19a_write(NULL, p19, NULL) == PB_OK);
    char line[256];
    FILE *f = fopen(p19, "r");
    PB_REQUIRE(f);
    int rows = 0;
    PB_CHECK(fgets(line, sizeof line, f) && !strcmp(line, "block_size,operation,time_ms,paper\n"));
    while (fgets(line, sizeof line, f)) rows++;
    fclose(f);
    PB_CHECK_EQ_INT(rows, 9 * 4);
    f = fopen(p1, "r");
    PB_REQUIRE(f);
    PB_CHECK(fgets(line, sizeof line, f) && !strcmp(line, "panel,series,batch,ours,paper\n"));
    int tput = 0;
    while (fgets(line, sizeof line, f)) {
        int b;
        double ours, paper;
        if (sscanf(line, "throughput_tok_s,vllm,%d,%lf,%lf", &b, &ours, &paper) == 3) {
            PB_CHECK(ours > 0 && paper > 0);   /* a prediction: the gap is in RESULTS.md */
            tput++;
        }
    }
    fclose(f);
    PB_CHECK_EQ_INT(tput, 10);
    unlink(p1);
    unlink(p19);
    rmdir(dir);
}

PB_TEST_MAIN()
