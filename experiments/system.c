/* system.c -- one serving point: trace + KV manager + policy + executor -> metrics. */
#include "system.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines.h"       /* pb_policy_orca_create, pb_policy_ft_create, pb_policy_finalize */
#include "block_manager.h"   /* pb_paged_kv_create */
#include "engine.h"          /* pb_engine_* */
#include "executor_real.h"   /* pb_executor_cpu_create, pb_executor_cuda_create */
#include "executor_sim.h"    /* pb_executor_sim_create */
#include "kv_contiguous.h"   /* pb_kv_contiguous_create */
#include "metrics.h"         /* pb_metrics (the engine's) */
#include "point_out.h"       /* pb_point_out_fill */
#include "spec.h"
#include "vllm_version.h"    /* pb_vllm_knobs: the `engine:` version's defaults */
#include "workload.h"        /* pb_workload_from_node, pb_workload_generate */

#define GIB (1024.0 * 1024.0 * 1024.0)

void pb_system_describe_executor(const pb_experiment *e, char *buf, size_t n) {
    const pb_node *root = pb_config_root(e->cfg);
    const char *hw = pb_node_str(root, "hardware.name", "?");
    const char *model = pb_node_str(root, "model.name", "?");
    if (!strcmp(e->executor, "sim"))
        snprintf(buf, n, "sim: cost model of %s x%d, %s (no GPU used)", hw, e->gpus, model);
    else if (!strcmp(e->executor, "cpu")) {
        const pb_node *x = pb_node_get(root, "executor");
        char kv[128], lat[64] = "";
        if (pb_node_int(x, "kv_slots", 0) > 0)
            snprintf(kv, sizeof kv, "KV space %lld token slots", (long long)pb_node_int(x, "kv_slots", 0));
        else
            snprintf(kv, sizeof kv, "KV space of %s x%d capped at %g MiB", hw, e->gpus,
                     pb_node_num(x, "kv_mib", PB_SYSTEM_CPU_KV_MIB));
        if (pb_node_num(x, "fixed_latency_s", 0) > 0)
            snprintf(lat, sizeof lat, ", fixed step latency %g s", pb_node_num(x, "fixed_latency_s", 0));
        snprintf(buf, n, "cpu: real %s forward pass on the host CPU, %s%s", model, kv, lat);
    } else {
        snprintf(buf, n, "cuda: real %s on the local GPU(s), KV budget of %s x%d", model, hw, e->gpus);
    }
}

void pb_system_fit_trace(pb_trace *t, double length_scale, bool clamp, int32_t max_len) {
    for (int64_t i = 0; i < t->n; i++) {
        pb_request *r = &t->reqs[i];
        if (length_scale > 0 && length_scale != 1.0) {
            r->prompt_len = (int32_t)PB_MAX(1.0, ceil(r->prompt_len * length_scale));
            r->output_len = (int32_t)PB_MAX(1.0, ceil(r->output_len * length_scale));
            r->prefix_len = (int32_t)floor(r->prefix_len * length_scale);
        }
        if (clamp && max_len >= 2) {
            r->prompt_len = PB_MIN(r->prompt_len, max_len - 1);
            r->output_len = PB_MAX(1, PB_MIN(r->output_len, max_len - r->prompt_len));
        }
        r->prefix_len = PB_MIN(r->prefix_len, r->prompt_len);
        if (r->prefix_len == 0 && r->prefix_id >= 0 && length_scale != 1.0) r->prefix_id = -1;
    }
}

/* The system's vLLM knobs: the defaults of its `engine:` version (v0.1 unless
   given; engine/vllm_version.h holds the table) with the explicit keys step_mode,
   max_paddings, max_num_batched_tokens, max_num_seqs, gpu_mem_util and
   kv_profile_tokens on top.  The schema has already checked every value. */
static void system_vllm_knobs(const pb_node *sys, int32_t max_model_len, pb_vllm_knobs *k) {
    pb_vllm_version v = PB_VLLM_V01;
    pb_vllm_version_parse(pb_node_str(sys, "engine", "v0.1"), &v);
    pb_vllm_knobs_default(v, max_model_len, k);
    pb_step_mode_parse(pb_node_str(sys, "step_mode", pb_step_mode_str(k->step_mode)), &k->step_mode);
    k->max_paddings = (int32_t)pb_node_int(sys, "max_paddings", k->max_paddings);
    k->max_num_batched_tokens = (int32_t)pb_node_int(sys, "max_num_batched_tokens", k->max_num_batched_tokens);
    k->max_num_seqs = (int32_t)pb_node_int(sys, "max_num_seqs", k->max_num_seqs);
    k->gpu_mem_util = pb_node_num(sys, "gpu_mem_util", k->gpu_mem_util);
    k->kv_profile_tokens = (int32_t)pb_node_int(sys, "kv_profile_tokens", k->kv_profile_tokens);
}

static pb_status fail(char *err, size_t n, pb_status st, const char *fmt, const char *a, const char *b) {
    snprintf(err, n, fmt, a, b);
    return st ? st : PB_ERR_INVALID;
}

pb_status pb_system_run_point(const pb_point_ctx *pt, pb_point_metrics *out, char *err, size_t err_n, void *user) {
    const pb_experiment *e = pt->exp;
    const pb_node *root = pt->root, *sys = pt->system;
    const pb_system_spec *spec = &e->systems[pt->sys];
    pb_cfg_err ce;
    pb_cfg_err_clear(&ce);
    pb_status st;

    pb_model model;
    pb_hw hw;
    if ((st = pb_model_from_node(pb_node_get(root, "model"), &model, &ce)) ||
        (st = pb_hw_from_node(pb_node_get(root, "hardware"), &hw, &ce)))
        return fail(err, err_n, st, "%s%s", ce.msg, "");
    int32_t tp = e->gpus;

    /* options */
    int32_t block_size = (int32_t)pb_node_int(sys, "block_size", 16);
    pb_vllm_knobs knobs;
    system_vllm_knobs(sys, model.max_len, &knobs);
    int32_t max_tokens = knobs.max_num_batched_tokens;
    int32_t max_seqs = knobs.max_num_seqs;
    double util = knobs.gpu_mem_util;
    int32_t profile_tokens = pb_vllm_knobs_profile_tokens(&knobs);
    double swap_gib = pb_node_num(sys, "swap_space_gib", 20.0);
    double watermark = pb_node_num(sys, "watermark", 0.01);
    pb_preempt_mode pmode = PB_PREEMPT_AUTO;
    if (!pb_preempt_mode_parse(pb_node_str(sys, "preemption", "auto"), &pmode))
        return fail(err, err_n, PB_ERR_INVALID, "systems.%s: bad preemption '%s'", spec->id, pb_node_str(sys, "preemption", ""));

    /* executor options (executor: {type, ...}; absent for `executor: sim` etc.) */
    bool real = strcmp(e->executor, "sim") != 0;
    const pb_node *exn = pb_node_get(root, "executor");
    if (exn && exn->kind != PB_NODE_MAP) exn = NULL;
    double fixed_latency_s = pb_node_num(exn, "fixed_latency_s", 0);
    double kv_mib = real ? pb_node_num(exn, "kv_mib", !strcmp(e->executor, "cpu") ? PB_SYSTEM_CPU_KV_MIB : 0) : 0;
    int64_t swap_slots = pb_node_int(exn, "swap_slots", -1);

    /* KV space: the paper harness's rule; contiguous managers count slots.  Overrides:
       the system's kv_slots, else the executor's; real executors cap it at kv_mib. */
    bool paged = spec->type == PB_SYS_VLLM;
    int32_t unit = paged ? block_size : 1;
    pb_kv_capacity cap;
    if (knobs.kv_rule == PB_KV_RULE_PROFILE)
        st = pb_kv_capacity_profile(&model, &hw, tp, unit, profile_tokens, PB_MIN(max_seqs, profile_tokens), util, &cap);
    else
        st = pb_kv_capacity_compute(&model, &hw, tp, unit, profile_tokens, util, &cap);
    if (st) return fail(err, err_n, st, "%s on %s: no memory left for the KV cache", model.name, hw.name);
    int64_t kv_slots = pb_node_int(sys, "kv_slots", 0);
    if (kv_slots <= 0) kv_slots = pb_node_int(exn, "kv_slots", 0);
    int64_t n_gpu_blocks = kv_slots > 0 ? kv_slots / unit : cap.num_blocks;
    double bytes_per_token = pb_kv_bytes_per_token(&model, tp);
    if (kv_mib > 0) {
        int64_t max_blocks = (int64_t)floor(kv_mib * 1024.0 * 1024.0 / bytes_per_token) / unit;
        if (n_gpu_blocks > max_blocks) n_gpu_blocks = max_blocks;
    }
    int64_t slots = n_gpu_blocks * unit;
    double block_bytes_gpu = bytes_per_token * block_size;
    int64_t n_cpu_blocks = (int64_t)floor(swap_gib * GIB / block_bytes_gpu);
    /* a real executor allocates its swap pool: as large as the KV space unless stated */
    if (real) n_cpu_blocks = swap_slots >= 0 ? PB_MIN(n_cpu_blocks, swap_slots / block_size)
                                             : PB_MIN(n_cpu_blocks, n_gpu_blocks);
    if (!paged) n_cpu_blocks = 0;
    if (n_gpu_blocks < 1 || n_gpu_blocks > INT32_MAX)
        return fail(err, err_n, PB_ERR_INVALID, "KV space of %s on %s is out of range", model.name, hw.name);

    /* trace */
    pb_workload_cfg wc;
    if ((st = pb_workload_from_node(pb_node_get(root, "workload"), &wc, &ce)))
        return fail(err, err_n, st, "%s%s", ce.msg, "");
    pb_trace trace = {0};
    char werr[1024] = "";
    if ((st = pb_workload_generate(&wc, e->seed, &trace, werr, sizeof werr)))
        return fail(err, err_n, st, "workload: %s%s", werr, "");
    pb_system_fit_trace(&trace, pb_node_num(root, "length_scale", 1.0), pb_node_bool(root, "clamp_to_max_len", false),
                        model.max_len);

    /* KV manager */
    pb_kv_manager *kv = NULL;
    if (paged) {
        pb_paged_params pp;
        pb_paged_params_default(&pp);
        pp.block_size = block_size;
        pp.n_gpu_blocks = (int32_t)n_gpu_blocks;
        pp.n_cpu_blocks = (int32_t)PB_MIN(n_cpu_blocks, (int64_t)INT32_MAX);
        pp.watermark = watermark;
        st = pb_paged_kv_create(&pp, &kv);
    } else {
        pb_kv_contiguous_params cp;
        cp.num_slots = slots;
        cp.max_len = model.max_len;
        cp.rule = PB_RESV_MAX;
        if (spec->type == PB_SYS_ORCA && !pb_resv_rule_parse(pb_node_str(sys, "reservation", "oracle"), &cp.rule))
            st = PB_ERR_INVALID;
        if (!st) st = pb_kv_contiguous_create(&cp, &kv);
    }
    if (st) {
        pb_trace_free(&trace);
        return fail(err, err_n, st, "systems.%s: cannot create the KV manager (%s)", spec->id, pb_status_str(st));
    }

    /* policy */
    pb_policy *policy = NULL;
    const char *pname = pb_node_str(sys, "policy", NULL);
    const pb_node *popts = pb_node_get(sys, "policy_options");
    if (pname) st = pb_policy_create(pname, popts, &policy, &ce);
    else if (spec->type == PB_SYS_VLLM) st = pb_policy_vllm_create(popts, &policy, &ce);
    else if (spec->type == PB_SYS_ORCA) st = pb_policy_orca_create(sys, &policy, &ce);
    else st = pb_policy_ft_create(sys, &policy, &ce);
    if (st) {
        pb_kv_destroy(kv);
        pb_trace_free(&trace);
        return fail(err, err_n, st, "%s%s", ce.msg, "");
    }

    /* executor */
    pb_executor *ex = NULL;
    if (!strcmp(e->executor, "sim")) {
        pb_sim_cost cost;
        pb_sim_params sp = pb_sim_params_default();
        if (spec->type != PB_SYS_VLLM) sp.attn = PB_SIM_ATTN_CONTIGUOUS;
        if (spec->type == PB_SYS_FT) sp.framework = PB_SIM_FW_CPP;
        const pb_node *simn = pb_node_get(sys, "sim");
        st = pb_sim_cost_from_node(pb_node_get(root, "hardware"), &cost, &ce);
        if (!st && simn) {
            pb_sim_params over;
            st = pb_sim_params_from_node(simn, &over, &ce);
            if (!st) {
                if (pb_node_has(simn, "attention_kernel")) sp.attn = over.attn;
                if (pb_node_has(simn, "framework")) sp.framework = over.framework;
                if (pb_node_has(simn, "profile")) memcpy(sp.profile, over.profile, sizeof sp.profile);
            }
        }
        if (!st && !(ex = pb_executor_sim_create(&model, &hw, &cost, tp, &sp, &ce))) st = PB_ERR_INVALID;
    } else {
        pb_real_exec_params rp;
        pb_real_exec_params_default(&rp);
        rp.block_size = paged ? block_size : 0;
        rp.num_gpu_blocks = paged ? (int32_t)n_gpu_blocks : 0;
        rp.num_slots = paged ? 0 : slots;
        rp.num_cpu_blocks = (int32_t)PB_MIN(n_cpu_blocks, (int64_t)INT32_MAX);   /* = the manager's */
        rp.fixed_latency_s = fixed_latency_s;
        rp.weight_seed = e->seed;
        rp.sample_seed = e->seed;
        rp.max_tokens_hint = max_tokens;
        rp.tp = tp;
        st = !strcmp(e->executor, "cpu") ? pb_executor_cpu_create(&model, &rp, &ex)
                                         : pb_executor_cuda_create(&model, &rp, &ex);
        if (st) snprintf(ce.msg, sizeof ce.msg, "executor %s: %s", e->executor, pb_status_str(st));
    }
    if (st) {
        pb_policy_destroy(policy);
        pb_kv_destroy(kv);
        pb_trace_free(&trace);
        return fail(err, err_n, st, "%s%s", ce.msg, "");
    }

    /* engine */
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.max_num_batched_tokens = max_tokens;
    ep.max_num_seqs = max_seqs;
    ep.max_model_len = model.max_len;
    ep.preemption = pmode;
    ep.step_mode = knobs.step_mode;
    ep.max_paddings = knobs.max_paddings;
    ep.seed = e->seed;
    ep.kv_bytes_per_token = pb_kv_bytes_per_token(&model, tp) * tp;
    ep.store_tokens = real;
    if (real) ep.vocab_size = model.vocab;   /* token ids must be inside the real model's vocabulary */
    ep.max_clock_s = pb_node_num(sys, "max_clock_s", 0);
    pb_engine *eng = NULL;
    pb_metrics *m = pb_metrics_create(pt->timeline_path != NULL);
    st = pb_engine_create(&ep, kv, policy, ex, &eng);
    if (!st) st = pb_engine_run(eng, &trace, m);
    if (!st) pb_policy_finalize(policy, m);

    if (!st) {   /* metrics, checks and side files: point_out.h */
        char title[256];
        snprintf(title, sizeof title, "%s (%s)", spec->label, e->name);
        st = pb_point_out_fill(pt, m, title, out, err, err_n);
        pb_pm_set(out, "kv_slots", (double)slots);
        pb_pm_set(out, "kv_blocks", (double)n_gpu_blocks);
    } else {
        snprintf(err, err_n, "engine run failed: %s", pb_status_str(st));
    }
    pb_engine_destroy(eng);
    pb_metrics_destroy(m);
    pb_executor_destroy(ex);
    pb_policy_destroy(policy);
    pb_kv_destroy(kv);
    pb_trace_free(&trace);
    return st;
}
