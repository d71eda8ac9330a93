/* executor_sim.c -- the cost-model executor (see executor_sim.h for the model). */
#include "executor_sim.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"   /* pb_percentile */
#include "rng.h"
#include "graph_pool.h"   /* pb_graph_bucket: CUDA-graph batch sizes */
#include "wquant.h"       /* weight formats: bytes of a quantized linear weight */
#include "sim_profile.h"

_Static_assert(PB_WEIGHTS_COUNT == sizeof ((pb_sim_cost *)0)->wq_ratio / sizeof(double), "one ratio per weight format");

/* ---- schemas ---- */
static const pb_key FW_SCHEMA[] = {
    {.name = "step_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e6,
     .doc = "host time per step (schedule, prepare, output)"},
    {.name = "seq_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e5,
     .doc = "host time per sequence per step"},
    {.name = "launch_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e4,
     .doc = "host time to issue one kernel"},
    {.name = "worker_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e6,
     .doc = "host time per step when tp > 1 (worker RPC, barrier)"},
    {.name = "worker_seq_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e5,
     .doc = "host time per sequence per step when tp > 1"},
    {.name = "sources", .type = PB_T_MAP, .required = true, .doc = "key -> where the number comes from"},
    {0},
};

static const pb_key RESID_SCHEMA[] = {
    {.name = "gemm", .type = PB_T_NUM_LIST, .lo = 0.01, .hi = 100, .doc = "GEMMs: [p10, p90] of measured / predicted"},
    {.name = "elementwise", .type = PB_T_NUM_LIST, .lo = 0.01, .hi = 100, .doc = "element-wise kernels: [p10, p90]"},
    {.name = "prefill_attn", .type = PB_T_NUM_LIST, .lo = 0.01, .hi = 100, .doc = "prefill attention: [p10, p90]"},
    {.name = "decode_attn", .type = PB_T_NUM_LIST, .lo = 0.01, .hi = 100, .doc = "decode attention: [p10, p90]"},
    {.name = "allreduce", .type = PB_T_NUM_LIST, .lo = 0.01, .hi = 100, .doc = "all-reduce: [p10, p90]"},
    {.name = "host", .type = PB_T_NUM_LIST, .lo = 0.01, .hi = 100, .doc = "framework host work: [p10, p90]"},
    {.name = "swap", .type = PB_T_NUM_LIST, .lo = 0.01, .hi = 100, .doc = "swap and copy: [p10, p90]"},
    {.name = "sources", .type = PB_T_MAP, .required = true, .doc = "key -> where the interval comes from"},
    {0},
};

static const pb_key FRAMEWORKS_SCHEMA[] = {
    {.name = "python", .type = PB_T_MAP, .required = true, .sub = FW_SCHEMA,
     .doc = "Python engine (vLLM 2023, the Orca re-implementation)"},
    {.name = "cpp", .type = PB_T_MAP, .required = true, .sub = FW_SCHEMA, .doc = "C++ engine (FasterTransformer)"},
    {0},
};

const pb_key pb_sim_cost_schema[] = {
    {.name = "gemm_flops_efficiency", .type = PB_T_NUM, .required = true, .lo = 0.01, .hi = 1,
     .doc = "achievable / peak fp16 FLOP/s of large GEMMs"},
    {.name = "gemm_tiles", .type = PB_T_LIST, .required = true, .elem = PB_T_STR,
     .doc = "GEMM output tile shapes \"MxN\" the library picks from"},
    {.name = "l2_bandwidth_GBps", .type = PB_T_NUM, .required = true, .lo = 1, .hi = 1e6,
     .doc = "L2 -> SM bandwidth of the whole GPU, GB/s (feeds GEMM tiles)"},
    {.name = "gemm_bw_efficiency", .type = PB_T_NUM, .required = true, .lo = 0.01, .hi = 1,
     .doc = "memory-bound GEMM bandwidth / datasheet HBM"},
    {.name = "gemm_sm_bw_GBps", .type = PB_T_NUM, .required = true, .lo = 0.1, .hi = 1e5,
     .doc = "GEMM operand bandwidth one SM's CTAs pull from HBM, GB/s (few CTAs cannot fill HBM)"},
    {.name = "gemm_splitk", .type = PB_T_LIST, .required = true, .elem = PB_T_INT,
     .doc = "split-K factors the library picks from (1 = none)"},
    {.name = "elementwise_bw_efficiency", .type = PB_T_NUM, .required = true, .lo = 0.01, .hi = 1,
     .doc = "element-wise kernel bandwidth / datasheet HBM"},
    {.name = "prefill_attn_flops_efficiency", .type = PB_T_NUM, .required = true, .lo = 0.01, .hi = 1,
     .doc = "prefill attention FLOP/s / peak"},
    {.name = "attn_fixed_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e4,
     .doc = "decode attention: per kernel call, us"},
    {.name = "attn_per_seq_head_ns", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e5,
     .doc = "decode attention: per (sequence, head), ns"},
    {.name = "attn_stream_efficiency", .type = PB_T_NUM, .required = true, .lo = 0.01, .hi = 1,
     .doc = "decode attention: live-KV read rate / datasheet HBM"},
    {.name = "attn_paged_block_ns", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e4,
     .doc = "paged kernel: per (sequence, KV head, block), ns"},
    {.name = "flash_decode_fixed_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e4,
     .doc = "flash kernel (FlashAttention-2, paged), decode: per call, us"},
    {.name = "flash_decode_seq_head_ns", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e5,
     .doc = "flash kernel, decode: per (sequence, query head), ns"},
    {.name = "flash_decode_bw_efficiency", .type = PB_T_NUM, .required = true, .lo = 0.01, .hi = 1,
     .doc = "flash kernel, decode: live-KV read rate / datasheet HBM"},
    {.name = "flash_prefill_fixed_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e4,
     .doc = "flash kernel, prefill (whole or chunked): per call, us"},
    {.name = "flash_prefill_flops_efficiency", .type = PB_T_NUM, .required = true, .lo = 0.01, .hi = 1,
     .doc = "flash kernel, prefill: causal FLOP/s / peak"},
    {.name = "flash_prefill_bw_efficiency", .type = PB_T_NUM, .required = true, .lo = 0.01, .hi = 1,
     .doc = "flash kernel, prefill: bytes (Q, K, V, O, cached KV) / datasheet HBM rate"},
    {.name = "flash3_prefill_flops_efficiency", .type = PB_T_NUM, .lo = 0.01, .hi = 1,
     .dflt_rule = "none: a system's flash_attn_version 3 needs it (V1's auto picks 3 where it is given)",
     .doc = "flash kernel as FlashAttention-3 (Hopper), prefill: causal FLOP/s / peak (fixed and bytes terms "
            "as FlashAttention-2's)"},
    {.name = "kernel_gap_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e3,
     .doc = "GPU idle between dependent kernels, us"},
    {.name = "gemm_fixed_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e3,
     .doc = "per GEMM kernel on top of max(compute, bytes), us"},
    {.name = "elementwise_fixed_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e3,
     .doc = "per element-wise kernel on top of its bytes, us"},
    {.name = "prefill_attn_fixed_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e4,
     .doc = "per prefill attention kernel call, us"},
    {.name = "allreduce_tp2_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e4,
     .doc = "one all-reduce at tp 2: latency, us"},
    {.name = "allreduce_tp2_GBps", .type = PB_T_NUM, .required = true, .lo = 0.1, .hi = 1e5,
     .doc = "one all-reduce at tp 2: bytes / (time - latency), GB/s"},
    {.name = "allreduce_tp4_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e4,
     .doc = "one all-reduce at tp 4: latency, us"},
    {.name = "allreduce_tp4_GBps", .type = PB_T_NUM, .required = true, .lo = 0.1, .hi = 1e5,
     .doc = "one all-reduce at tp 4: GB/s"},
    {.name = "allreduce_tp8_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e4,
     .doc = "one all-reduce at tp 8 (and above): latency, us"},
    {.name = "allreduce_tp8_GBps", .type = PB_T_NUM, .required = true, .lo = 0.1, .hi = 1e5,
     .doc = "one all-reduce at tp 8 (and above): GB/s"},
    {.name = "custom_allreduce_tp2_us", .type = PB_T_NUM, .lo = 0, .hi = 1e4,
     .dflt_rule = "none: a vllm system's custom_allreduce: true at tp 2 needs it",
     .doc = "vLLM's own all-reduce kernels at tp 2 (fastest per size): latency, us"},
    {.name = "custom_allreduce_tp2_GBps", .type = PB_T_NUM, .lo = 0.1, .hi = 1e5,
     .dflt_rule = "none: a vllm system's custom_allreduce: true at tp 2 needs it",
     .doc = "vLLM's own all-reduce kernels at tp 2: bytes / (time - latency), GB/s"},
    {.name = "custom_allreduce_tp4_us", .type = PB_T_NUM, .lo = 0, .hi = 1e4,
     .dflt_rule = "none: a vllm system's custom_allreduce: true at tp 3-4 needs it",
     .doc = "vLLM's own all-reduce kernels at tp 4: latency, us"},
    {.name = "custom_allreduce_tp4_GBps", .type = PB_T_NUM, .lo = 0.1, .hi = 1e5,
     .dflt_rule = "none: a vllm system's custom_allreduce: true at tp 3-4 needs it",
     .doc = "vLLM's own all-reduce kernels at tp 4: GB/s"},
    {.name = "custom_allreduce_tp8_us", .type = PB_T_NUM, .lo = 0, .hi = 1e4,
     .dflt_rule = "none: a vllm system's custom_allreduce: true at tp 5 and above needs it",
     .doc = "vLLM's own all-reduce kernels at tp 8 (and above): latency, us"},
    {.name = "custom_allreduce_tp8_GBps", .type = PB_T_NUM, .lo = 0.1, .hi = 1e5,
     .dflt_rule = "none: a vllm system's custom_allreduce: true at tp 5 and above needs it",
     .doc = "vLLM's own all-reduce kernels at tp 8 (and above): GB/s"},
    {.name = "allreduce_norm_fusion_tp2_MB", .type = PB_T_NUM, .lo = 0.01, .hi = 1e5,
     .dflt_rule = "none: no all-reduce + RMSNorm fusion at tp 2 on this GPU",
     .doc = "vLLM V1's all-reduce + RMSNorm fusion (FlashInfer) at tp 2: largest all-reduce it takes, MiB"},
    {.name = "allreduce_norm_fusion_tp4_MB", .type = PB_T_NUM, .lo = 0.01, .hi = 1e5,
     .dflt_rule = "none: no all-reduce + RMSNorm fusion at tp 4 on this GPU",
     .doc = "the same at tp 4, MiB"},
    {.name = "allreduce_norm_fusion_tp8_MB", .type = PB_T_NUM, .lo = 0.01, .hi = 1e5,
     .dflt_rule = "none: no all-reduce + RMSNorm fusion at tp 8 on this GPU",
     .doc = "the same at tp 8, MiB"},
    {.name = "swap_h2d_GBps", .type = PB_T_NUM, .required = true, .lo = 0.01, .hi = 1e4,
     .doc = "one block copy host->device, GB/s"},
    {.name = "swap_d2h_GBps", .type = PB_T_NUM, .required = true, .lo = 0.01, .hi = 1e4,
     .doc = "one block copy device->host, GB/s"},
    {.name = "swap_h2d_copy_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e3,
     .doc = "per cudaMemcpyAsync host->device, us"},
    {.name = "swap_d2h_copy_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e3,
     .doc = "per cudaMemcpyAsync device->host, us"},
    {.name = "framework", .type = PB_T_MAP, .required = true, .sub = FRAMEWORKS_SCHEMA,
     .doc = "host overheads per framework"},
    {.name = "residuals", .type = PB_T_MAP, .sub = RESID_SCHEMA,
     .doc = "calibration residuals per term, [p10, p90] of measured / predicted: the error bars' inputs"},
    {.name = "cuda_graph_launch_us", .type = PB_T_NUM, .lo = 0, .hi = 1e4,
     .dflt_rule = "none: a system's cuda_graphs: true needs it",
     .doc = "CUDA graphs: host time of one graph launch, us"},
    {.name = "cuda_graph_node_gap_us", .type = PB_T_NUM, .lo = 0, .hi = 1e3,
     .dflt_rule = "none: a system's cuda_graphs: true needs it",
     .doc = "CUDA graphs: GPU idle between the kernels of a replayed graph, us"},
    {.name = "wq_int8_compute_ratio", .type = PB_T_NUM, .lo = 0.01, .hi = 4,
     .dflt_rule = "none: a system's weights: int8 needs it",
     .doc = "int8-weight GEMM kernel: compute-bound throughput / the fp16 GEMM's"},
    {.name = "wq_fp8_compute_ratio", .type = PB_T_NUM, .lo = 0.01, .hi = 4,
     .dflt_rule = "none: a system's weights: fp8 needs it",
     .doc = "fp8-weight GEMM kernel: compute-bound throughput / the fp16 GEMM's"},
    {.name = "wq_int4_awq_compute_ratio", .type = PB_T_NUM, .lo = 0.01, .hi = 4,
     .dflt_rule = "none: a system's weights: int4-awq needs it",
     .doc = "AWQ int4 GEMM kernel: compute-bound throughput / the fp16 GEMM's"},
    {.name = "wq_int4_gptq_compute_ratio", .type = PB_T_NUM, .lo = 0.01, .hi = 4,
     .dflt_rule = "none: a system's weights: int4-gptq needs it",
     .doc = "GPTQ int4 GEMM kernel: compute-bound throughput / the fp16 GEMM's"},
    {.name = "sources", .type = PB_T_MAP, .required = true, .doc = "key -> where the number comes from"},
    {0},
};

const pb_key pb_sim_system_schema[] = {
    {.name = "attention_kernel", .type = PB_T_ENUM, .choices = "paged|contiguous|flash",
     .dflt_rule = "the system type's (pagedbench list: system types)",
     .doc = "attention kernel: paged (vLLM 2023), contiguous (FasterTransformer), flash (FlashAttention-2 paged, V1)"},
    {.name = "framework", .type = PB_T_ENUM, .choices = "python|cpp|v1",
     .dflt_rule = "the system type's (pagedbench list: system types)",
     .doc = "host overheads: python (vLLM 2023, Orca re-implementation), cpp (FasterTransformer), v1 (vLLM V1)"},
    {.name = "fused_add_norm", .type = PB_T_BOOL,
     .dflt_rule = "the engine's: v1 every model, v0.2 the Llama family, v0.1 none (executor_sim.h)",
     .doc = "each residual add + norm is one kernel (2 a layer, 8 h bytes a token) instead of 4 (10 h)"},
    {.name = "profile", .type = PB_T_STR, .dflt = "",
     .doc = "measured step profile CSV (executors/sim_profile.h; '' = the analytic model)"},
    {0},
};

/* an error without a node position (not a config file problem) */
static pb_status plain_err(pb_cfg_err *e, const char *fmt, ...) {
    if (!e) return PB_ERR_INVALID;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t used = strlen(e->msg);
    if (e->count < PB_CFG_MAX_ERRORS && used + 2 < sizeof e->msg)
        snprintf(e->msg + used, sizeof e->msg - used, "%s%s", e->count ? "\n" : "", msg);
    e->count++;
    return PB_ERR_INVALID;
}

/* every numeric key of map n (per schema) needs a non-empty n.sources.<key> */
static pb_status need_sources(const pb_node *n, const pb_key *schema, const char *path, pb_cfg_err *err) {
    const pb_node *src = pb_node_get(n, "sources");
    pb_status st = PB_OK;
    for (const pb_key *k = schema; k->name; k++) {
        if (k->type != PB_T_NUM && k->type != PB_T_INT && k->type != PB_T_LIST) continue;
        const pb_node *v = pb_node_get(n, k->name);
        if (!v) continue;
        const pb_node *s = src ? pb_node_get(src, k->name) : NULL;
        if (!s || s->kind != PB_NODE_SCALAR || !s->value || !*s->value)
            st = pb_cfg_fail(err, v, true, "%s.%s: no source given (add %s.sources.%s: \"...\")", path, k->name,
                             path, k->name);
    }
    return st;
}

static void fw_from_node(const pb_node *n, pb_sim_fw_cost *fw) {
    fw->step_s = pb_node_num(n, "step_us", 0) * 1e-6;
    fw->seq_s = pb_node_num(n, "seq_us", 0) * 1e-6;
    fw->launch_s = pb_node_num(n, "launch_us", 0) * 1e-6;
    fw->worker_s = pb_node_num(n, "worker_us", 0) * 1e-6;
    fw->worker_seq_s = pb_node_num(n, "worker_seq_us", 0) * 1e-6;
}

/* cost_model.residuals: [p10, p90] per term (absent: 1, 1), each with a source. */
static pb_status resid_from_node(const pb_node *n, pb_sim_cost *c, pb_cfg_err *err) {
    static const char *const NAMES[PB_SIM_N_TERMS] = PB_SIM_TERM_NAMES;
    for (int i = 0; i < PB_SIM_N_TERMS; i++) c->resid_lo[i] = c->resid_hi[i] = 1;
    if (!n) return PB_OK;
    if (need_sources(n, RESID_SCHEMA, "hardware.cost_model.residuals", err)) return PB_ERR_INVALID;
    for (int i = 0; i < PB_SIM_N_TERMS; i++) {
        const pb_node *v = pb_node_get(n, NAMES[i]);
        if (!v) continue;
        if (v->kind != PB_NODE_SEQ || v->n_kids != 2 || !(atof(v->kids[0]->value) <= atof(v->kids[1]->value)))
            return pb_cfg_fail(err, v, false, "hardware.cost_model.residuals.%s: expected [p10, p90] with p10 <= p90",
                               NAMES[i]);
        c->resid_lo[i] = atof(v->kids[0]->value);
        c->resid_hi[i] = atof(v->kids[1]->value);
    }
    return PB_OK;
}

pb_status pb_sim_cost_from_node(const pb_node *hw, pb_sim_cost *c, pb_cfg_err *err) {
    const pb_node *n = hw ? pb_node_get(hw, "cost_model") : NULL;
    if (!hw) return plain_err(err, "hardware: no spec given");
    if (!n || n->kind != PB_NODE_MAP)
        return pb_cfg_fail(err, hw, false, "hardware '%s': no cost_model: map (the sim executor needs one)",
                           pb_node_str(hw, "name", "?"));
    if (pb_config_validate(n, pb_sim_cost_schema, "hardware.cost_model", err)) return PB_ERR_INVALID;
    pb_status st = need_sources(n, pb_sim_cost_schema, "hardware.cost_model", err);
    const pb_node *py = pb_node_get(n, "framework.python"), *cpp = pb_node_get(n, "framework.cpp");
    if (need_sources(py, FW_SCHEMA, "hardware.cost_model.framework.python", err)) st = PB_ERR_INVALID;
    if (need_sources(cpp, FW_SCHEMA, "hardware.cost_model.framework.cpp", err)) st = PB_ERR_INVALID;
    if (st) return st;
    memset(c, 0, sizeof *c);
    const pb_node *tl = pb_node_get(n, "gemm_tiles");
    if (tl->n_kids < 1 || tl->n_kids > PB_SIM_MAX_TILES)
        return pb_cfg_fail(err, tl, false, "hardware.cost_model.gemm_tiles: give 1 to %d tile shapes", PB_SIM_MAX_TILES);
    for (int i = 0; i < tl->n_kids; i++) {
        const char *v = tl->kids[i]->value;
        int tm = 0, tn = 0, used = 0;
        if (!v || sscanf(v, "%dx%d%n", &tm, &tn, &used) != 2 || v[used] || tm < 1 || tn < 1 || tm > 4096 || tn > 4096)
            return pb_cfg_fail(err, tl->kids[i], false,
                               "hardware.cost_model.gemm_tiles.%d: expected a tile shape MxN (e.g. 128x256), got '%s'", i,
                               v ? v : "");
        c->tile_m[i] = tm;
        c->tile_n[i] = tn;
    }
    c->n_tiles = tl->n_kids;
    const pb_node *sk = pb_node_get(n, "gemm_splitk");
    if (sk->n_kids < 1 || sk->n_kids > PB_SIM_MAX_SPLITS)
        return pb_cfg_fail(err, sk, false, "hardware.cost_model.gemm_splitk: give 1 to %d split-K factors", PB_SIM_MAX_SPLITS);
    for (int i = 0; i < sk->n_kids; i++) {
        const char *v = sk->kids[i]->value;
        char *end = NULL;
        long k = v ? strtol(v, &end, 10) : 0;
        if (!v || *end || k < 1 || k > 64)
            return pb_cfg_fail(err, sk->kids[i], false,
                               "hardware.cost_model.gemm_splitk.%d: expected an integer 1-64, got '%s'", i, v ? v : "");
        c->splitk[i] = (int32_t)k;
    }
    c->n_splits = sk->n_kids;
    c->gemm_sm_bw = pb_node_num(n, "gemm_sm_bw_GBps", 0) * 1e9;
    c->l2_bw = pb_node_num(n, "l2_bandwidth_GBps", 0) * 1e9;
    c->gemm_flops_eff = pb_node_num(n, "gemm_flops_efficiency", 0);
    c->gemm_bw_eff = pb_node_num(n, "gemm_bw_efficiency", 0);
    c->elem_bw_eff = pb_node_num(n, "elementwise_bw_efficiency", 0);
    c->prefill_attn_flops_eff = pb_node_num(n, "prefill_attn_flops_efficiency", 0);
    c->attn_fixed_s = pb_node_num(n, "attn_fixed_us", 0) * 1e-6;
    c->attn_seq_head_s = pb_node_num(n, "attn_per_seq_head_ns", 0) * 1e-9;
    c->attn_stream_eff = pb_node_num(n, "attn_stream_efficiency", 0);
    c->attn_paged_block_s = pb_node_num(n, "attn_paged_block_ns", 0) * 1e-9;
    c->flash_dec_fixed_s = pb_node_num(n, "flash_decode_fixed_us", 0) * 1e-6;
    c->flash_dec_seq_head_s = pb_node_num(n, "flash_decode_seq_head_ns", 0) * 1e-9;
    c->flash_dec_bw_eff = pb_node_num(n, "flash_decode_bw_efficiency", 0);
    c->flash_pre_fixed_s = pb_node_num(n, "flash_prefill_fixed_us", 0) * 1e-6;
    c->flash_pre_flops_eff = pb_node_num(n, "flash_prefill_flops_efficiency", 0);
    c->flash_pre_bw_eff = pb_node_num(n, "flash_prefill_bw_efficiency", 0);
    c->flash3_pre_flops_eff = pb_node_num(n, "flash3_prefill_flops_efficiency", 0);   /* 0: not given */
    c->kernel_gap_s = pb_node_num(n, "kernel_gap_us", 0) * 1e-6;
    c->gemm_fixed_s = pb_node_num(n, "gemm_fixed_us", 0) * 1e-6;
    c->elem_fixed_s = pb_node_num(n, "elementwise_fixed_us", 0) * 1e-6;
    c->prefill_attn_fixed_s = pb_node_num(n, "prefill_attn_fixed_us", 0) * 1e-6;
    static const char *const AR[PB_SIM_AR_TPS] = {"tp2", "tp4", "tp8"};
    for (int i = 0; i < PB_SIM_AR_TPS; i++) {
        char k[64];
        snprintf(k, sizeof k, "allreduce_%s_us", AR[i]);
        c->ar_lat_s[i] = pb_node_num(n, k, 0) * 1e-6;
        snprintf(k, sizeof k, "allreduce_%s_GBps", AR[i]);
        c->ar_bw[i] = pb_node_num(n, k, 0) * 1e9;
        char kl[64], kb[64];
        snprintf(kl, sizeof kl, "custom_allreduce_%s_us", AR[i]);
        snprintf(kb, sizeof kb, "custom_allreduce_%s_GBps", AR[i]);
        c->has_custom_ar[i] = pb_node_has(n, kl) && pb_node_has(n, kb);
        c->custom_ar_lat_s[i] = pb_node_num(n, kl, 0) * 1e-6;
        c->custom_ar_bw[i] = pb_node_num(n, kb, 0) * 1e9;
        snprintf(k, sizeof k, "allreduce_norm_fusion_%s_MB", AR[i]);
        c->ar_norm_fusion_bytes[i] = pb_node_num(n, k, 0) * 1024.0 * 1024.0;   /* 0: not given */
    }
    c->swap_h2d_bw = pb_node_num(n, "swap_h2d_GBps", 0) * 1e9;
    c->swap_d2h_bw = pb_node_num(n, "swap_d2h_GBps", 0) * 1e9;
    c->swap_h2d_copy_s = pb_node_num(n, "swap_h2d_copy_us", 0) * 1e-6;
    c->swap_d2h_copy_s = pb_node_num(n, "swap_d2h_copy_us", 0) * 1e-6;
    fw_from_node(py, &c->fw[PB_SIM_FW_PYTHON]);
    fw_from_node(cpp, &c->fw[PB_SIM_FW_CPP]);
    c->fw[PB_SIM_FW_V1] = (pb_sim_fw_cost){.step_s = PB_SIM_V1_STEP_S, .seq_s = PB_SIM_V1_SEQ_S,
                                           .launch_s = c->fw[PB_SIM_FW_PYTHON].launch_s};
    c->has_graph_costs = pb_node_has(n, "cuda_graph_launch_us") && pb_node_has(n, "cuda_graph_node_gap_us");
    c->graph_launch_s = pb_node_num(n, "cuda_graph_launch_us", 0) * 1e-6;
    c->graph_node_gap_s = pb_node_num(n, "cuda_graph_node_gap_us", 0) * 1e-6;
    c->wq_ratio[PB_WEIGHTS_FP16] = 1;
    for (int f = 1; f < PB_WEIGHTS_COUNT; f++) {   /* 0 = not given */
        char k[64], name[32];
        snprintf(name, sizeof name, "%s", pb_weight_format_name((pb_weight_format)f));
        for (char *ch = name; *ch; ch++) if (*ch == '-') *ch = '_';
        snprintf(k, sizeof k, "wq_%s_compute_ratio", name);
        c->wq_ratio[f] = pb_node_num(n, k, 0);
    }
    return resid_from_node(pb_node_get(n, "residuals"), c, err);
}

pb_status pb_sim_cost_load(const char *spec_dir, const char *hw_name, pb_sim_cost *out, pb_cfg_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/%s.yaml", spec_dir, hw_name);
    pb_config *cfg;
    pb_status st = pb_config_load(path, &cfg, err);
    if (st) return st;
    pb_hw hw;
    st = pb_hw_from_node(pb_config_root(cfg), &hw, err);   /* base keys and their sources */
    if (!st) st = pb_sim_cost_from_node(pb_config_root(cfg), out, err);
    pb_config_destroy(cfg);
    return st;
}

pb_sim_params pb_sim_params_default(void) {
    pb_sim_params p;
    memset(&p, 0, sizeof p);
    p.attn = PB_SIM_ATTN_PAGED;
    p.framework = PB_SIM_FW_PYTHON;
    p.time_scale = 1;
    p.flash_version = 2;
    return p;
}

pb_status pb_sim_params_from_node(const pb_node *n, pb_sim_params *out, pb_cfg_err *err) {
    if (!n) return PB_OK;
    if (pb_config_validate(n, pb_sim_system_schema, "sim", err)) return PB_ERR_INVALID;
    const pb_node *v;
    if ((v = pb_node_get(n, "attention_kernel")))
        out->attn = !strcmp(v->value, "contiguous") ? PB_SIM_ATTN_CONTIGUOUS
                    : !strcmp(v->value, "flash")    ? PB_SIM_ATTN_FLASH
                                                    : PB_SIM_ATTN_PAGED;
    if ((v = pb_node_get(n, "framework")))
        out->framework = !strcmp(v->value, "cpp") ? PB_SIM_FW_CPP : !strcmp(v->value, "v1") ? PB_SIM_FW_V1 : PB_SIM_FW_PYTHON;
    out->fused_add_norm = pb_schema_bool_or(pb_sim_system_schema, n, "fused_add_norm", out->fused_add_norm);
    const char *prof = pb_schema_str(pb_sim_system_schema, n, "profile");
    if (strlen(prof) >= sizeof out->profile)
        return pb_cfg_fail(err, pb_node_get(n, "profile"), false, "sim.profile: path too long");
    snprintf(out->profile, sizeof out->profile, "%s", prof);
    return PB_OK;
}

/* ---- the model ---- */
/* A GEMM configuration picked for a number of rows: its compute seconds, the seconds per
   byte its active CTAs stream at, and its split-K factor. */
typedef struct {
    double c, inv_bw;
    int32_t k;
} gemm_cfg;

struct pb_sim {
    pb_model m;
    pb_hw hw;
    pb_sim_cost c;
    pb_sim_params p;
    int32_t tp;
    pb_sim_profile *profile;
    /* derived, per GPU */
    double flops;            /* achievable FLOP/s of GEMMs                               */
    double tile_rate[PB_SIM_MAX_TILES]; /* FLOP/s of one SM working on a tile of shape i */
    int32_t m_unit;          /* gcd of the tile heights: compute depends on ceil(M/m_unit) */
    gemm_cfg *gemm_tab[5];   /* [GEMM][ceil(M/m_unit)] the library's pick, 4 layer GEMMs + LM head */
    double gemm_bw, elem_bw; /* achievable bytes/s                                       */
    double attn_flops;       /* prefill attention FLOP/s                                 */
    double attn_bw;          /* decode attention live-KV bytes/s                         */
    double dt;               /* dtype bytes (activations, weights)                       */
    double kvb;              /* KV-cache element bytes (kv_elem_bytes)                   */
    double hq, hkv, d, h, ffn_tp, vocab_tp;
    double gK[4], gN[4];     /* the layer's GEMMs (K x N weights)                        */
    double gW[5];            /* their weight bytes in the model's weight format (LM head
                                [4]: the dtype's)                                         */
    double wq_ratio;         /* the layer GEMMs' compute rate / fp16's (1 for fp16)      */
    double kv_tok_layer;     /* KV bytes per token per layer per GPU (K and V)           */
    double elem_tok_layer;   /* element-wise bytes per token per layer                   */
    double add_norm_tok_layer; /* of which the residual adds and norms                   */
    int add_norm_kernels;    /* their kernels per layer (4, or 2 with fused_add_norm)    */
    double ar_bytes_tok;     /* bytes per token per all-reduce                           */
    double ar_lat;           /* one all-reduce at this tp: latency (s)                   */
    double ar_inv_bw;        /* ... and seconds per byte                                 */
    double gather_lat, gather_inv_bw;   /* the logits gather (NCCL at every engine)      */
    int elem_kernels_layer;  /* element-wise kernels per layer                           */
    int elem_kernels_step;   /* element-wise kernels per step outside layers             */
    int kernels_layer;       /* per layer, without attention calls                       */
    int kernels_step;        /* per step, outside layers (embedding, norm, LM head, sampling) */
    int kernels_eager_step;  /* of which outside a CUDA graph: LM head, logits gather, sampling */
    double sample_bytes_tok; /* sampling bytes per sampled sequence                      */
};

enum { GEMM_TAB_UNITS = 512 };   /* tabulated M: up to 512 * m_unit tokens (32,768 for 64) */

/* ---- GEMM: tiles, split-K, per-SM bandwidth (executor_sim.h) ---- */
/* The configuration (tile shape i, split k) at Mr rows: the compute side, and the
   bandwidth its weight streams reach (one per tile column and K slice, each at most
   gemm_sm_bw). */
static gemm_cfg gemm_config(const pb_sim *s, int i, int32_t k, double Mr, double K, double N) {
    double tm = s->c.tile_m[i], tn = s->c.tile_n[i], sms = s->hw.n_sms;
    double cols = ceil(N / tn) * k, ctas = ceil(Mr / tm) * cols;
    double streams = cols < sms ? cols : sms;   /* more tile rows re-read the same tiles from L2 */
    double bw = streams * s->c.gemm_sm_bw;
    if (bw > s->gemm_bw) bw = s->gemm_bw;
    return (gemm_cfg){ceil(ctas / sms) * 2.0 * tm * tn * ceil(K / k) / s->tile_rate[i], 1.0 / bw, k};
}

/* Seconds of configuration g for M rows: sqrt(compute^2 + memory^2) + the kernels' fixed
   cost (a split-K reduction is a second kernel and moves fp32 partials). */
static double gemm_cfg_time(const pb_sim *s, const gemm_cfg *g, double M, double K, double N) {
    double by = (K * N + M * K + M * N) * s->dt + (g->k > 1 ? M * N * 8.0 * g->k : 0);
    double mem = by * g->inv_bw;
    return sqrt(g->c * g->c + mem * mem) + s->c.gemm_fixed_s * (g->k > 1 ? 2 : 1);
}

/* The library's pick for M rows: the fastest configuration at M rounded up to the
   tile-height unit (split-K only while the tiles leave SMs idle and a slice keeps
   PB_SIM_SPLITK_MIN_K of K). */
static gemm_cfg gemm_pick(const pb_sim *s, double M, double K, double N) {
    double Mr = ceil(M / s->m_unit) * s->m_unit, best_t = INFINITY;
    gemm_cfg best = {0, 0, 1};
    for (int i = 0; i < s->c.n_tiles; i++) {
        double tiles = ceil(Mr / s->c.tile_m[i]) * ceil(N / s->c.tile_n[i]);
        for (int j = 0; j < s->c.n_splits; j++) {
            int32_t k = s->c.splitk[j];
            if (k > 1 && (tiles >= s->hw.n_sms || K / k < PB_SIM_SPLITK_MIN_K)) continue;
            gemm_cfg g = gemm_config(s, i, k, Mr, K, N);
            double t = gemm_cfg_time(s, &g, Mr, K, N);
            if (t < best_t) {
                best_t = t;
                best = g;
            }
        }
    }
    return best;
}

double pb_sim_gemm_time(const pb_sim *s, double M, double K, double N) {
    if (M <= 0) return 0;
    gemm_cfg g = gemm_pick(s, M, K, N);
    return gemm_cfg_time(s, &g, M, K, N);
}

/* GEMM g of the step (0..3: the layer's, 4: LM head) for M rows: the tabulated pick. */
static double gemm_time(const pb_sim *s, int g, double M, double K, double N) {
    if (M <= 0) return 0;
    if (g < 4 && s->m.weights != PB_WEIGHTS_FP16) {   /* a dequant-GEMM (executor_sim.h "Quantized weights") */
        double fl = 2.0 * M * K * N / (s->flops * s->wq_ratio);
        double mem = (s->gW[g] + (M * K + M * N) * s->dt) / s->gemm_bw;
        return sqrt(fl * fl + mem * mem) + s->c.gemm_fixed_s;
    }
    double u = ceil(M / s->m_unit);
    if (u > GEMM_TAB_UNITS) return pb_sim_gemm_time(s, M, K, N);
    return gemm_cfg_time(s, &s->gemm_tab[g][(int)u], M, K, N);
}

static int32_t gcd32(int32_t a, int32_t b) {
    while (b) {
        int32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void build_gemm_tables(pb_sim *s) {
    s->m_unit = 0;
    for (int i = 0; i < s->c.n_tiles; i++) {
        s->m_unit = gcd32(s->m_unit, s->c.tile_m[i]);
        double tm = s->c.tile_m[i], tn = s->c.tile_n[i];
        double feed = s->c.l2_bw / s->hw.n_sms * 2.0 * tm * tn / ((tm + tn) * s->dt);   /* FLOP/s per SM */
        double math = s->flops / s->hw.n_sms;
        s->tile_rate[i] = feed < math ? feed : math;
    }
    double K[5], N[5];
    for (int g = 0; g < 4; g++) { K[g] = s->gK[g]; N[g] = s->gN[g]; }
    K[4] = s->h;
    N[4] = s->vocab_tp;
    for (int g = 0; g < 5; g++) {
        s->gemm_tab[g] = pb_xcalloc(GEMM_TAB_UNITS + 1, sizeof(gemm_cfg));
        /* ceil(M/m) = ceil(ceil(M/m_unit) / (m/m_unit)), so M = u * m_unit stands for
           every M with that unit count */
        for (int u = 1; u <= GEMM_TAB_UNITS; u++) s->gemm_tab[g][u] = gemm_pick(s, (double)u * s->m_unit, K[g], N[g]);
    }
}

/* ---- KV-cache bytes (a system's kv_cache_dtype; executor_sim.h) ---- */

/* Bytes of one KV-cache element: the model's dtype, or 1 for an fp8 cache. */
static double kv_elem_bytes(const pb_model *m) { return pb_kv_elem_bytes(m); }

/* The KV-cache write per token per layer: K and V read as activations, stored as
   cache elements. */
static double kv_write_bytes(const pb_sim *s) { return 2.0 * s->hkv * s->d * (s->dt + s->kvb); }

pb_status pb_sim_create(const pb_model *m, const pb_hw *hw, const pb_sim_cost *c, int32_t tp,
                        const pb_sim_params *p, pb_sim **out, pb_cfg_err *err) {
    *out = NULL;
    if (tp < 1 || m->n_heads % tp || m->n_kv_heads % tp || m->ffn % tp) {
        plain_err(err, "sim: tensor-parallel degree %d does not divide the model's heads/ffn", tp);
        return PB_ERR_INVALID;
    }
    pb_sim *s = pb_xcalloc(1, sizeof *s);
    s->m = *m;
    s->hw = *hw;
    s->c = *c;
    s->p = p ? *p : pb_sim_params_default();
    s->tp = tp;
    if (s->p.profile[0]) {
        char e[1024];
        pb_status st = pb_sim_profile_load(s->p.profile, &s->profile, e, sizeof e);
        if (st) {
            plain_err(err, "sim.profile: %s", e);
            free(s);
            return st;
        }
    }
    s->flops = hw->fp16_flops * c->gemm_flops_eff;
    s->gemm_bw = hw->hbm_bw * c->gemm_bw_eff;
    s->elem_bw = hw->hbm_bw * c->elem_bw_eff;
    s->attn_flops = hw->fp16_flops * c->prefill_attn_flops_eff;
    s->attn_bw = hw->hbm_bw * c->attn_stream_eff;
    s->dt = m->dtype_bytes;
    s->kvb = kv_elem_bytes(m);
    s->hq = (double)m->n_heads / tp;
    s->hkv = (double)m->n_kv_heads / tp;
    s->d = m->head_size;
    s->h = m->hidden;
    s->ffn_tp = (double)m->ffn / tp;
    s->vocab_tp = (double)m->vocab / tp;
    bool llama = m->arch == PB_ARCH_LLAMA;
    s->gK[0] = s->h; s->gN[0] = (s->hq + 2 * s->hkv) * s->d;           /* QKV               */
    s->gK[1] = s->hq * s->d; s->gN[1] = s->h;                          /* output projection */
    s->gK[2] = s->h; s->gN[2] = (llama ? 2 : 1) * s->ffn_tp;            /* FC1 / gate+up     */
    s->gK[3] = s->ffn_tp; s->gN[3] = s->h;                             /* FC2 / down        */
    pb_weight_format wf = (pb_weight_format)m->weights;
    for (int g = 0; g < 4; g++) s->gW[g] = pb_wq_matrix_bytes(wf, s->gK[g], s->gN[g], s->dt);
    s->gW[4] = s->h * s->vocab_tp * s->dt;
    s->wq_ratio = wf == PB_WEIGHTS_FP16 ? 1 : pb_weight_format_name(wf) ? c->wq_ratio[wf] : 0;   /* fp16: the fp16 rate */
    s->kv_tok_layer = 2.0 * s->hkv * s->d * s->kvb;
    /* per token per layer: 2 norms (read+write h) and 2 residual adds (2 reads + write),
       or with fused_add_norm 2 fused add + norm kernels (read x and the residual, write
       both); activation (OPT ReLU r+w ffn; LLaMA SiLU*mul 2 reads + write), KV-cache
       write (kv_write_bytes), LLaMA rotary (read+write q and k). */
    s->add_norm_tok_layer = s->dt * (s->p.fused_add_norm ? 8 * s->h : 4 * s->h + 6 * s->h);
    s->add_norm_kernels = s->p.fused_add_norm ? 2 : 4;
    s->elem_tok_layer = s->add_norm_tok_layer + s->dt * (llama ? 3 : 2) * s->ffn_tp + kv_write_bytes(s) +
                        (llama ? 2 * s->dt * (s->hq + s->hkv) * s->d : 0);
    s->ar_bytes_tok = s->h * s->dt;
    int ar = pb_sim_ar_fit(tp);
    bool custom_ar = s->p.custom_allreduce && tp > 1;
    double ar_bw = custom_ar ? c->custom_ar_bw[ar] : c->ar_bw[ar];
    s->ar_lat = custom_ar ? c->custom_ar_lat_s[ar] : c->ar_lat_s[ar];
    s->ar_inv_bw = ar_bw > 0 ? 1.0 / ar_bw : 0;
    s->gather_lat = c->ar_lat_s[ar];             /* the logits gather: NCCL's terms */
    s->gather_inv_bw = c->ar_bw[ar] > 0 ? 1.0 / c->ar_bw[ar] : 0;
    /* kernels per layer: the add / norm kernels, QKV, KV write, out, FC1, act, FC2 (+ rotary
       for LLaMA) + 2 all-reduces with tp; attention calls are counted per step */
    s->kernels_layer = s->add_norm_kernels + 6 + (llama ? 1 : 0) + (tp > 1 ? 2 : 0);
    s->elem_kernels_layer = s->add_norm_kernels + 2 + (llama ? 1 : 0);   /* + activation, KV write (+ rotary) */
    /* per step: embedding (+ positions for OPT), final norm, LM head, logits gather with tp,
       sampling (fp32 cast, softmax, log-softmax, multinomial / top-k, gather) */
    s->kernels_step = (llama ? 1 : 2) + 1 + 1 + (tp > 1 ? 1 : 0) + 5;
    s->kernels_eager_step = 1 + (tp > 1 ? 1 : 0) + 5;
    s->elem_kernels_step = (llama ? 1 : 2) + 1 + 5;  /* embedding (+ positions), final norm, sampling */
    /* sampling: fp32 logits written and read ~6 times (cast, softmax, log-softmax, sample) */
    s->sample_bytes_tok = 6.0 * 4.0 * m->vocab;
    if (c->n_tiles < 1 || c->n_tiles > PB_SIM_MAX_TILES || hw->n_sms < 1 || !(c->l2_bw > 0)) {
        plain_err(err, "sim: the cost model needs GEMM tile shapes, an L2 bandwidth and the SM count (n_sms)");
        pb_sim_destroy(s);
        return PB_ERR_INVALID;
    }
    for (int i = 0; i < c->n_tiles; i++)
        if (c->tile_m[i] < 1 || c->tile_n[i] < 1) {
            plain_err(err, "sim: GEMM tile shape %d is not positive", i);
            pb_sim_destroy(s);
            return PB_ERR_INVALID;
        }
    if (custom_ar && !c->has_custom_ar[ar]) {
        plain_err(err, "sim: custom_allreduce at tp %d needs hardware.cost_model.custom_allreduce_tp%d_us and "
                       "custom_allreduce_tp%d_GBps (%s has none)", tp, 2 << ar, 2 << ar, hw->name);
        pb_sim_destroy(s);
        return PB_ERR_INVALID;
    }
    if (s->p.ar_norm_max_tokens < 0) {
        plain_err(err, "sim: ar_norm_max_tokens %d (>= 0)", s->p.ar_norm_max_tokens);
        pb_sim_destroy(s);
        return PB_ERR_INVALID;
    }
    if (s->p.flash_version != 2 && s->p.flash_version != 3) {
        plain_err(err, "sim: flash_version %d (2 or 3)", s->p.flash_version);
        pb_sim_destroy(s);
        return PB_ERR_INVALID;
    }
    if (s->p.flash_version == 3 && !(c->flash3_pre_flops_eff > 0)) {
        plain_err(err, "sim: flash_attn_version 3 needs hardware.cost_model.flash3_prefill_flops_efficiency (%s has "
                       "none)", hw->name);
        pb_sim_destroy(s);
        return PB_ERR_INVALID;
    }
    if ((s->p.cuda_graphs || s->p.graph_max_tokens > 0) && !c->has_graph_costs) {
        plain_err(err, "sim: cuda_graphs needs hardware.cost_model.cuda_graph_launch_us and cuda_graph_node_gap_us "
                       "(%s has none)", hw->name);
        pb_sim_destroy(s);
        return PB_ERR_INVALID;
    }
    if (!(s->wq_ratio > 0)) {
        plain_err(err, "sim: weights: %s needs hardware.cost_model.wq_*_compute_ratio for it (%s has none)",
                  pb_weight_format_name(wf) ? pb_weight_format_name(wf) : "?", hw->name);
        pb_sim_destroy(s);
        return PB_ERR_INVALID;
    }
    build_gemm_tables(s);
    pb_status st = pb_sim_check(s);
    if (st) {
        plain_err(err, "sim: invalid parameters (a rate is not positive)");
        pb_sim_destroy(s);
        return st;
    }
    *out = s;
    return PB_OK;
}

void pb_sim_destroy(pb_sim *s) {
    if (!s) return;
    pb_sim_profile_destroy(s->profile);
    for (int g = 0; g < 5; g++) free(s->gemm_tab[g]);
    free(s);
}

pb_status pb_sim_check(const pb_sim *s) {
    if (!s) return PB_ERR_INVALID;
    if (!(s->flops > 0 && s->gemm_bw > 0 && s->elem_bw > 0 && s->attn_flops > 0 && s->attn_bw > 0))
        return PB_ERR_INVALID;
    if (!(s->wq_ratio > 0)) return PB_ERR_INVALID;
    for (int g = 0; g < 5; g++)   /* a quantized weight is never larger than the dtype's */
        if (!(s->gW[g] > 0 && s->gW[g] <= (g < 4 ? s->gK[g] * s->gN[g] : s->h * s->vocab_tp) * s->dt)) return PB_ERR_INVALID;
    if (!(s->c.swap_h2d_bw > 0 && s->c.swap_d2h_bw > 0)) return PB_ERR_INVALID;
    if (!(s->p.time_scale > 0 && isfinite(s->p.time_scale))) return PB_ERR_INVALID;
    for (int i = 0; i < PB_SIM_N_TERMS; i++)
        if (!(s->c.resid_lo[i] > 0 && s->c.resid_lo[i] <= s->c.resid_hi[i])) return PB_ERR_INVALID;
    if (s->tp > 1 && !(s->ar_inv_bw > 0 && s->ar_lat >= 0 && s->gather_inv_bw > 0 && s->gather_lat >= 0))
        return PB_ERR_INVALID;
    if (!(s->c.gemm_fixed_s >= 0 && s->c.elem_fixed_s >= 0 && s->c.prefill_attn_fixed_s >= 0)) return PB_ERR_INVALID;
    for (int f = 0; f < 3; f++)
        if (!(s->c.fw[f].step_s >= 0 && s->c.fw[f].seq_s >= 0 && s->c.fw[f].worker_s >= 0 && s->c.fw[f].worker_seq_s >= 0))
            return PB_ERR_INVALID;
    if (!(s->hq >= 1 && s->hkv >= 1 && s->d >= 1 && s->m.n_layers >= 1)) return PB_ERR_INVALID;
    if (s->profile && pb_sim_profile_check(s->profile)) return PB_ERR_INVALID;
    if (s->hw.n_sms < 1 || s->c.n_tiles < 1 || s->c.n_tiles > PB_SIM_MAX_TILES || s->m_unit < 1) return PB_ERR_INVALID;
    for (int i = 0; i < s->c.n_tiles; i++) {
        if (s->c.tile_m[i] < 1 || s->c.tile_n[i] < 1 || s->c.tile_m[i] % s->m_unit) return PB_ERR_INVALID;
        if (!(s->tile_rate[i] > 0 && s->tile_rate[i] <= s->flops / s->hw.n_sms * (1 + 1e-12))) return PB_ERR_INVALID;
    }
    if (!(s->c.gemm_sm_bw > 0) || s->c.n_splits < 1 || s->c.n_splits > PB_SIM_MAX_SPLITS) return PB_ERR_INVALID;
    for (int j = 0; j < s->c.n_splits; j++)
        if (s->c.splitk[j] < 1) return PB_ERR_INVALID;
    for (int g = 0; g < 5; g++) {
        if (!s->gemm_tab[g]) return PB_ERR_INVALID;
        double K = g < 4 ? s->gK[g] : s->h, N = g < 4 ? s->gN[g] : s->vocab_tp, prev = 0;
        for (int u = 1; u <= GEMM_TAB_UNITS; u++) {   /* each pick is a real configuration;  */
            const gemm_cfg *c = &s->gemm_tab[g][u];      /* more rows never run faster          */
            double t = gemm_cfg_time(s, c, (double)u * s->m_unit, K, N);
            if (!(c->c > 0 && c->inv_bw > 0 && c->k >= 1 && t >= prev * (1 - 1e-12))) return PB_ERR_INVALID;
            prev = t;
        }
    }
    return PB_OK;
}

/* The sums a step needs from its batch: O(n_seqs), no allocation. */
typedef struct {
    double T;                 /* tokens computed                          */
    double P;                 /* prefill tokens                           */
    double prefill_flops;     /* prefill attention FLOPs per layer        */
    double prefill_kv_read;   /* cached-prefix KV tokens read by prefills */
    double D;                 /* decode sequences                         */
    double ctx;               /* live KV tokens read by decode attention  */
    double blocks;            /* (sequence, block) pairs read             */
    double bs;                /* tokens per KV block (0: no blocks)       */
    double S;                 /* sampled sequences                        */
    double n_seqs;
    int32_t graph_batch;      /* CUDA graphs: padded batch size; 0 eager  */
} step_sums;

static void sum_batch(const pb_sim *s, const pb_batch *b, step_sums *q) {
    memset(q, 0, sizeof *q);
    int32_t bs = b->block_size > 0 ? b->block_size : 0;
    double T = 0, P = 0, pf = 0, pkv = 0, D = 0, ctx = 0, blocks = 0, S = 0;
    if (b->has_sums) {   /* the engine's sums: the same exact integers as the walk */
        T = (double)b->sum_new;
        S = b->n_sample;
        P = (double)b->n_prefill_tokens;
        pf = 0.5 * (double)b->prefill_pairs2;
        pkv = (double)b->prefill_cached;
        D = b->n_decode;
        ctx = (double)b->decode_ctx;
        blocks = bs ? (double)b->decode_blocks : 0;
    }
    for (int32_t i = 0; i < (b->has_sums ? 0 : b->n_seqs); i++) {
        const pb_batch_seq *q1 = &b->seqs[i];
        double n = q1->n_new;
        T += n;
        S += q1->sample;
        if (q1->is_prefill) {
            P += n;
            /* causal: token j attends to n_cached + j + 1 keys */
            pf += n * (q1->n_cached + 0.5 * (n + 1));
            pkv += q1->n_cached;
        } else {
            D += 1;
            ctx += q1->context_len;
            if (bs) blocks += (q1->context_len + bs - 1) / bs;
        }
    }
    if (b->n_padded_tokens > T && b->n_seqs > 0) {
        /* a padded prompt step (vLLM v0.2.2+): every row runs at the longest prompt's
           length, attention included (xformers' causal mask over the padded rows) */
        double rows = b->n_seqs, len = (double)b->n_padded_tokens / rows;
        T = P = (double)b->n_padded_tokens;
        pf = rows * len * 0.5 * (len + 1);
    }
    q->T = T;
    q->P = P;
    q->prefill_flops = 4.0 * s->hq * s->d * pf;
    q->prefill_kv_read = pkv;
    q->D = D;
    q->ctx = ctx;
    q->blocks = blocks;
    q->bs = bs;
    q->S = S;
    q->n_seqs = b->n_seqs;
}

/* ---- paged decode attention: the block-size law (executor_sim.h) ---- */
/* Bytes one warp-wide load moves in the paper's kernel (CacheFlow/vLLM 2023
   attention_kernels.cu, 32-lane warps, 16-byte vectors) at block size b: K, a thread
   group of max(32/b, 1) lanes per token, each lane a vector of max(16/group, dtype)
   bytes; V, min(16/dtype, b) elements per lane.  FasterTransformer's kernel loads 16
   bytes a lane: 512 bytes a warp, the contiguous baseline. */
static double warp_bytes_k(double b, double dt) {
    double group = 32 / b > 1 ? 32 / b : 1, lane = 16 / group > dt ? 16 / group : dt;
    return 32 * lane;
}
static double warp_bytes_v(double b, double dt) { return 32 * dt * (b < 16 / dt ? b : 16 / dt); }

/* Warp memory requests the paged kernel issues per (sequence, KV head, block of b
   tokens) beyond the contiguous kernel's: one block-table load for the K loop and one
   for the V loop, and the narrower loads of a block's b*head K and V bytes. */
static double paged_requests_per_block(double b, double d, double dt) {
    double bytes = b * d * dt;
    return 2 + bytes / warp_bytes_k(b, dt) + bytes / warp_bytes_v(b, dt) - 2 * bytes / 512;
}

/* KV token slots the decode kernel reads per layer: the live tokens, or with the paged
   kernel whole blocks (a block's empty slots too). */
static double attn_read_tokens(const pb_sim *s, const step_sums *q) {
    double whole = q->bs * q->blocks;
    return s->p.attn == PB_SIM_ATTN_PAGED && whole > q->ctx ? whole : q->ctx;
}

/* The paged kernel's warp requests beyond the contiguous kernel's, per layer: each costs
   attn_paged_block_ns / 10, the requests of a block of 16 at Fig. 18a's geometry (head
   128, fp16) where it was measured.  An fp8 cache (kv_cache_dtype) issues as many
   requests: its kernel's K and V vectors hold as many elements as the activation
   dtype's, one byte each (kernels/attention.cu), so the count follows s->dt. */
static double paged_attn_requests(const pb_sim *s, const step_sums *q) {
    if (!(q->bs > 0) || !(q->blocks > 0)) return 0;
    double per_req = s->c.attn_paged_block_s / paged_requests_per_block(PB_SIM_PAGED_CALIB_BLOCK, 128, 2);
    return per_req * s->hkv * q->blocks * paged_requests_per_block(q->bs, s->d, s->dt);
}

/* The flash kernel's attention terms (executor_sim.h) into o; the calls per layer. */
static int flash_attention(const pb_sim *s, const step_sums *q, pb_sim_breakdown *o) {
    const pb_sim_cost *c = &s->c;
    double L = s->m.n_layers, hbm = s->hw.hbm_bw;
    int calls = 0;
    if (q->P > 0) {   /* FlashAttention-3 (flash_version 3): its own compute rate, FA2's other terms */
        double by = q->P * (2 * s->hq + 2 * s->hkv) * s->d * s->dt + q->prefill_kv_read * s->kv_tok_layer;
        double eff = s->p.flash_version == 3 ? c->flash3_pre_flops_eff : c->flash_pre_flops_eff;
        o->prefill_attn_s = L * (c->flash_pre_fixed_s + q->prefill_flops / (s->hw.fp16_flops * eff) +
                                 by / (hbm * c->flash_pre_bw_eff));
        calls++;
    }
    if (q->D > 0) {
        o->decode_attn_s = L * (c->flash_dec_fixed_s + c->flash_dec_seq_head_s * q->D * s->hq +
                                q->ctx * s->kv_tok_layer / (hbm * c->flash_dec_bw_eff));
        calls++;
    }
    return calls;
}

/* ---- CUDA graphs (executor_sim.h "Kernel launches"; graph_pool.h) ---- */

/* A decode step that replays a graph runs at its captured batch size: the padding
   rows are decode rows of one token (one block) each; the sampled rows and the
   framework's per-sequence host work stay the real ones. */
static void graph_pad(const pb_sim *s, step_sums *q) {
    q->graph_batch = 0;
    if (!s->p.cuda_graphs || q->n_seqs < 1 || q->n_seqs > PB_GRAPH_MAX_BATCH ||
        !pb_graph_step_eligible((int64_t)q->P, (int32_t)q->D, s->m.max_len))
        return;
    int32_t B = pb_graph_bucket((int32_t)q->D);
    double pad = B - q->D;
    q->graph_batch = B;
    q->T += pad;
    q->D += pad;
    q->ctx += pad;
    if (q->blocks > 0) q->blocks += pad;
}

/* Launch overheads of a step of `kernels` kernels (attn_calls attention kernels a
   layer): the GPU's idle gaps between them and the host time to issue them -- eager,
   V1's FULL / PIECEWISE graphs (graph_max_tokens) or v0.2.6's decode graph (graph_pad). */
static void launch_terms(const pb_sim *s, const step_sums *q, int64_t kernels, int attn_calls, double *gaps,
                         double *host) {
    const pb_sim_cost *c = &s->c;
    const double launch = c->fw[s->p.framework].launch_s, L = s->m.n_layers;
    if (s->p.graph_max_tokens > 0 && q->T <= s->p.graph_max_tokens) {   /* V1: PIECEWISE : FULL */
        const double eager = q->P > 0 ? L * attn_calls : 0, pieces = q->P > 0 ? L + 1 : 1;
        *gaps = ((double)kernels - eager) * c->graph_node_gap_s + eager * c->kernel_gap_s;
        *host = pieces * c->graph_launch_s + eager * launch;
        return;
    }
    if (q->graph_batch <= 0) {
        *gaps = (double)kernels * c->kernel_gap_s;
        *host = (double)kernels * launch;
        return;
    }
    const double eager = s->kernels_eager_step, in_graph = (double)kernels - eager;
    *gaps = in_graph * c->graph_node_gap_s + eager * c->kernel_gap_s;
    *host = c->graph_launch_s + eager * launch;
}

static void forward(const pb_sim *s, const step_sums *q, pb_sim_breakdown *o) {
    memset(o, 0, sizeof *o);
    const pb_sim_cost *c = &s->c;
    double L = s->m.n_layers;
    if (q->T <= 0) return;
    double g = 0;
    for (int i = 0; i < 4; i++) g += gemm_time(s, i, q->T, s->gK[i], s->gN[i]);
    o->gemm_s = L * g;
    int attn_calls = s->p.attn == PB_SIM_ATTN_FLASH ? flash_attention(s, q, o) : 0;
    o->graph_batch = q->graph_batch;
    if (s->p.attn != PB_SIM_ATTN_FLASH && q->P > 0) {
        double fl = q->prefill_flops / s->attn_flops;
        double by = (q->P * (2 * s->hq + 2 * s->hkv) * s->d * s->dt + q->prefill_kv_read * s->kv_tok_layer) /
                    s->elem_bw;
        o->prefill_attn_s = L * (c->prefill_attn_fixed_s + (fl > by ? fl : by));
        attn_calls++;
    }
    if (s->p.attn != PB_SIM_ATTN_FLASH && q->D > 0) {
        double t = c->attn_fixed_s + c->attn_seq_head_s * q->D * s->hq + attn_read_tokens(s, q) * s->kv_tok_layer / s->attn_bw;
        if (s->p.attn == PB_SIM_ATTN_PAGED) t += paged_attn_requests(s, q);
        o->decode_attn_s = L * t;
        attn_calls++;
    }
    /* a step small enough for the all-reduce + norm fusion: the layers' adds and norms run
       inside their all-reduce kernels (executor_sim.h ar_norm_max_tokens) */
    bool arn = s->tp > 1 && q->T <= s->p.ar_norm_max_tokens;
    int fused_away = arn ? s->add_norm_kernels : 0;
    /* embedding (+ learned positions): write T*h, read rows */
    double elem = q->T * s->h * s->dt * (s->m.arch == PB_ARCH_LLAMA ? 2 : 4);
    elem += L * q->T * (s->elem_tok_layer - (arn ? s->add_norm_tok_layer : 0));
    elem += q->S * s->h * s->dt * 2;                 /* final norm on the pruned rows */
    o->elementwise_s =
        elem / s->elem_bw + (L * (s->elem_kernels_layer - fused_away) + s->elem_kernels_step) * c->elem_fixed_s;
    if (s->tp > 1) {   /* two all-reduces per layer; a gather of the vocab-parallel logits */
        o->allreduce_s = L * 2 * (s->ar_lat + q->T * s->ar_bytes_tok * s->ar_inv_bw);
        if (q->S > 0) o->allreduce_s += s->gather_lat + q->S * s->m.vocab * s->dt * s->gather_inv_bw;
    }
    o->lm_head_s = gemm_time(s, 4, q->S, s->h, s->vocab_tp);
    o->sampling_s = q->S * s->sample_bytes_tok / s->elem_bw;
    o->kernels = (int64_t)(L * (s->kernels_layer - fused_away + attn_calls)) + s->kernels_step;
    double gaps;
    launch_terms(s, q, o->kernels, attn_calls, &gaps, &o->host_issue_s);
    o->gpu_s = o->gemm_s + o->lm_head_s + o->prefill_attn_s + o->decode_attn_s + o->elementwise_s + o->allreduce_s +
               o->sampling_s + gaps;
}

/* A step's latency from its parts: framework + max(GPU, issue), or with asynchronous
   scheduling max(framework, max(GPU, issue)) + sync (executor_sim.h). */
static double step_total(const pb_sim *s, double framework_s, double gpu_s, double issue_s) {
    double fwd = gpu_s > issue_s ? gpu_s : issue_s;
    if (!s->p.async_sched) return framework_s + fwd;
    return (framework_s > fwd ? framework_s : fwd) + s->hw.pcie_copy_latency_s;
}

/* Host work of one step that does not overlap the GPU (executor_sim.h). */
static double framework_time(const pb_sim *s, double n_seqs) {
    const pb_sim_fw_cost *fw = &s->c.fw[s->p.framework];
    double t = fw->step_s + fw->seq_s * n_seqs;
    if (s->tp > 1) t += fw->worker_s + fw->worker_seq_s * n_seqs;
    return t;
}

void pb_sim_step_breakdown(const pb_sim *s, const pb_batch *b, pb_sim_breakdown *o) {
    step_sums q;
    sum_batch(s, b, &q);
    graph_pad(s, &q);
    forward(s, &q, o);
    if (s->profile && q.T > 0) {
        o->gpu_s = pb_sim_profile_latency(s->profile, q.P, q.D, q.D > 0 ? q.ctx / q.D : 0);
        o->host_issue_s = 0;
    }
    o->framework_s = q.n_seqs > 0 ? framework_time(s, q.n_seqs) : 0;
    o->total_s = q.n_seqs > 0 ? step_total(s, o->framework_s, o->gpu_s, o->host_issue_s)
                              : o->framework_s + (o->gpu_s > o->host_issue_s ? o->gpu_s : o->host_issue_s);
}

double pb_sim_swap_time(const pb_sim *s, int64_t n_blocks, int32_t block_size, bool to_gpu) {
    if (n_blocks <= 0 || block_size <= 0) return 0;
    double bytes = (double)block_size * s->hkv * s->d * s->kvb;     /* one block, one layer, K or V */
    double lat = to_gpu ? s->c.swap_h2d_copy_s : s->c.swap_d2h_copy_s;
    double bw = to_gpu ? s->c.swap_h2d_bw : s->c.swap_d2h_bw;
    return (double)n_blocks * s->m.n_layers * 2.0 * (lat + bytes / bw);
}

static double copy_time(const pb_sim *s, int64_t n_copies, int32_t block_size) {
    if (n_copies <= 0 || block_size <= 0) return 0;
    double bytes = (double)n_copies * block_size * s->kv_tok_layer * s->m.n_layers * 2.0;   /* read + write */
    return s->c.fw[s->p.framework].launch_s + s->c.kernel_gap_s + bytes / s->elem_bw;
}

/* One step into res (latency, swap and copy times scaled by time_scale), its unscaled
   seconds per term added to tot when tot is not NULL. */
static void step(const pb_sim *s, const pb_batch *b, pb_step_result *res, pb_sim_totals *tot) {
    pb_sim_breakdown o;
    pb_sim_step_breakdown(s, b, &o);
    double swap = pb_sim_swap_time(s, b->n_swap_in, b->block_size, true) +
                  pb_sim_swap_time(s, b->n_swap_out, b->block_size, false);
    int64_t slots = 0;   /* contiguous managers' fork copies (one fused copy per step) */
    for (int32_t i = 0; i < b->n_slot_copies; i++) slots += b->slot_copies[i].n;
    double copy = copy_time(s, b->n_copies, b->block_size) + copy_time(s, slots, 1);
    double k = s->p.time_scale;
    res->swap_s = swap * k;
    res->copy_s = copy * k;
    res->latency_s = (o.total_s + swap + copy) * k;
    res->has_tokens = false;
    if (!tot) return;
    double gpu_rest = o.gpu_s - o.gemm_s - o.lm_head_s - o.prefill_attn_s - o.decode_attn_s - o.allreduce_s;
    tot->t[PB_SIM_T_GEMM] += o.gemm_s + o.lm_head_s;
    tot->t[PB_SIM_T_PREFILL_ATTN] += o.prefill_attn_s;
    tot->t[PB_SIM_T_DECODE_ATTN] += o.decode_attn_s;
    tot->t[PB_SIM_T_ALLREDUCE] += o.allreduce_s;
    tot->t[PB_SIM_T_ELEM] += gpu_rest;   /* element-wise, sampling, gaps (or a profile's forward pass) */
    tot->t[PB_SIM_T_HOST] += o.total_s - o.gpu_s;   /* framework, and host issue beyond the GPU */
    tot->t[PB_SIM_T_SWAP] += swap + copy;
    tot->steps++;
}

void pb_sim_step(const pb_sim *s, const pb_batch *b, pb_step_result *res) { step(s, b, res, NULL); }

void pb_sim_step_factor(const pb_sim_cost *c, const pb_sim_totals *t, double interval, double *lo, double *hi) {
    enum { DRAWS = 4001 };
    double total = 0, w[PB_SIM_N_TERMS], mu[PB_SIM_N_TERMS], sd[PB_SIM_N_TERMS];
    for (int i = 0; i < PB_SIM_N_TERMS; i++) total += t->t[i];
    *lo = *hi = 1;
    if (!(total > 0)) return;
    for (int i = 0; i < PB_SIM_N_TERMS; i++) {   /* the p10..p90 of a lognormal: mu -/+ 1.2816 sd */
        w[i] = t->t[i] / total;
        mu[i] = 0.5 * (log(c->resid_lo[i]) + log(c->resid_hi[i]));
        sd[i] = (log(c->resid_hi[i]) - log(c->resid_lo[i])) / (2 * 1.2815515655446004);
    }
    double *f = pb_xmalloc(DRAWS * sizeof *f);
    pb_rng r;
    pb_rng_seed(&r, 32, 0);
    for (int d = 0; d < DRAWS; d++) {
        double x = 0;
        for (int i = 0; i < PB_SIM_N_TERMS; i++) {
            double z = pb_rng_normal(&r);
            if (w[i] > 0) x += w[i] * exp(mu[i] + sd[i] * z);
        }
        f[d] = x;
    }
    double tail = 50 * (1 - interval);
    *lo = pb_percentile(f, DRAWS, tail);
    *hi = pb_percentile(f, DRAWS, 100 - tail);
    free(f);
}

double pb_sim_decode_time(const pb_sim *s, int32_t n_seqs, int32_t ctx, int32_t block_size) {
    if (n_seqs <= 0) return 0;
    /* build the sums directly: n_seqs identical sequences */
    step_sums q;
    memset(&q, 0, sizeof q);
    q.T = n_seqs;
    q.D = n_seqs;
    q.ctx = (double)n_seqs * ctx;
    q.blocks = block_size > 0 ? (double)n_seqs * ((ctx + block_size - 1) / block_size) : 0;
    q.bs = block_size > 0 ? block_size : 0;
    q.S = n_seqs;
    q.n_seqs = n_seqs;
    graph_pad(s, &q);
    pb_sim_breakdown o;
    forward(s, &q, &o);
    if (s->profile) { o.gpu_s = pb_sim_profile_latency(s->profile, 0, n_seqs, ctx); o.host_issue_s = 0; }
    return step_total(s, framework_time(s, n_seqs), o.gpu_s, o.host_issue_s);
}

double pb_sim_prefill_time(const pb_sim *s, int32_t n_tokens) {
    if (n_tokens <= 0) return 0;
    pb_batch_seq sq;
    memset(&sq, 0, sizeof sq);
    sq.is_prefill = true;
    sq.n_new = n_tokens;
    sq.context_len = n_tokens;
    sq.sample = true;
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = 1;
    b.seqs = &sq;
    b.n_prefill_tokens = n_tokens;
    b.n_top = 1;
    pb_sim_breakdown o;
    pb_sim_step_breakdown(s, &b, &o);
    return o.total_s;
}

/* ---- the executor ---- */
typedef struct {
    pb_sim *sim;
    pb_sim_totals tot;   /* every step run so far */
} sim_exec;

static pb_status sim_execute(pb_executor *ex, const pb_batch *b, pb_step_result *res, pb_candidates *cand) {
    (void)cand;
    sim_exec *x = ex->impl;
    if (!b || !res || b->n_seqs < 0 || (b->n_seqs > 0 && !b->seqs)) return PB_ERR_INVALID;
    if ((b->n_swap_in > 0 || b->n_swap_out > 0 || b->n_copies > 0) && b->block_size <= 0) return PB_ERR_INVALID;
    step(x->sim, b, res, &x->tot);
    return PB_OK;
}

static void sim_destroy(pb_executor *ex) {
    sim_exec *x = ex->impl;
    pb_sim_destroy(x->sim);
    free(x);
    free(ex);
}

/* with the engine's sums (has_sums) the cost model never reads seqs[] */
static const pb_executor_i SIM_IFACE = {"sim", sim_execute, sim_destroy, PB_EXEC_SUMS_ONLY};

pb_executor *pb_executor_sim_create(const pb_model *m, const pb_hw *hw, const pb_sim_cost *c, int32_t tp,
                                    const pb_sim_params *p, pb_cfg_err *err) {
    pb_sim *s;
    if (pb_sim_create(m, hw, c, tp, p, &s, err)) return NULL;
    pb_executor *ex = pb_xcalloc(1, sizeof *ex);
    sim_exec *x = pb_xcalloc(1, sizeof *x);
    x->sim = s;
    ex->iface = &SIM_IFACE;
    ex->impl = x;
    return ex;
}

const pb_sim *pb_executor_sim_model(const pb_executor *ex) {
    return ex && ex->iface == &SIM_IFACE ? ((const sim_exec *)ex->impl)->sim : NULL;
}

const pb_sim_totals *pb_executor_sim_totals(const pb_executor *ex) {
    return ex && ex->iface == &SIM_IFACE ? &((const sim_exec *)ex->impl)->tot : NULL;
}

/* experiments/calibrate/v1_host.py, vLLM 0.33.0 (Python 3.11.7) on this repository's
   2-core shared AMD EPYC host, process CPU time, medians of 3 rounds x 30 steps per
   batch size, B = 1, 8, 32, 64, 128, 256, 512 running requests in decode: step_us
   19.98, seq_us 8.617; residual median |err| 3.1%, max 12.1% (B = 512).  A lower bound
   of V1's host work: the worker's input preparation and the output processes are not
   timed (executor_sim.h). */
const double PB_SIM_V1_STEP_S = 19.98e-6, PB_SIM_V1_SEQ_S = 8.617e-6;
