/* system.c -- one serving point: trace + KV manager + policy + executor -> metrics. */
#include "system.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baselines.h"       /* pb_policy_orca_create, pb_policy_ft_create, pb_policy_finalize */
#include "beam_tables.h"     /* pb_beam_table_by_name: workload.beam_scores */
#include "block_manager.h"   /* pb_paged_kv_create */
#include "client.h"          /* pb_client: closed loop, concurrency limit */
#include "engine.h"          /* pb_engine_* */
#include "executor_real.h"   /* pb_executor_cpu_create, pb_executor_cuda_create */
#include "executor_sim.h"    /* pb_executor_sim_create */
#include "kv_contiguous.h"   /* pb_kv_contiguous_create */
#include "measure.h"         /* pb_measure: does the window need the recorded steps */
#include "metrics.h"         /* pb_metrics (the engine's) */
#include "point_out.h"       /* pb_point_out_fill */
#include "policy.h"          /* pb_policy_create, pb_policy_find, pb_policy_option_find */
#include "sim_profile.h"     /* pb_sim_profile_load (checked up front) */
#include "spec.h"
#include "vllm_version.h"    /* pb_vllm_knobs: the `engine:` version's defaults */
#include "wquant.h"          /* pb_weight_format: a system's weights */
#include "trace_fit.h"       /* pb_trace_fit */
#include "uncertainty.h"     /* the error bars: method, factors, replicas */
#include "workload.h"        /* pb_workload_from_node, pb_workload_generate */

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The executor's map (executor: {type, ...}), or NULL for a bare `executor: sim` etc. */
static const pb_node *executor_map(const pb_node *root) {
    const pb_node *exn = pb_node_get(root, "executor");
    return exn && exn->kind == PB_NODE_MAP ? exn : NULL;
}

/* The real executor's cap of the KV space per GPU, MiB (0: none): kv_mib's rule. */
static double kv_mib_of(const pb_node *exn, const char *executor) {
    return pb_schema_num_or(pb_executor_schema, exn, "kv_mib", !strcmp(executor, "cpu") ? PB_SYSTEM_CPU_KV_MIB : 0);
}

void pb_system_describe_executor(const pb_experiment *e, char *buf, size_t n) {
    const pb_node *root = pb_config_root(e->cfg);
    const char *hw = pb_node_str(root, "hardware.name", "?");
    const char *model = pb_node_str(root, "model.name", "?");
    if (!strcmp(e->executor, "sim"))
        snprintf(buf, n, "sim: cost model of %s x%d, %s (no GPU used)", hw, e->gpus, model);
    else if (!strcmp(e->executor, "cpu")) {
        const pb_node *x = executor_map(root);
        char kv[128], lat[64] = "";
        int64_t slots = pb_schema_int(pb_executor_schema, x, "kv_slots");
        double fixed = pb_schema_num(pb_executor_schema, x, "fixed_latency_s");
        if (slots > 0)
            snprintf(kv, sizeof kv, "KV space %lld token slots", (long long)slots);
        else
            snprintf(kv, sizeof kv, "KV space of %s x%d capped at %g MiB", hw, e->gpus, kv_mib_of(x, "cpu"));
        if (fixed > 0) snprintf(lat, sizeof lat, ", fixed step latency %g s", fixed);
        snprintf(buf, n, "cpu: real %s forward pass on the host CPU, %s%s", model, kv, lat);
    } else {
        snprintf(buf, n, "cuda: real %s on the local GPU(s), KV budget of %s x%d", model, hw, e->gpus);
    }
}

#define SYS pb_system_entry_schema    /* a system's keys (experiment.c) */

/* The system's vLLM knobs: the table's values for its `engine:` version
   (engine/vllm_version.h) on its hardware, with the explicit keys step_mode,
   max_paddings, max_num_batched_tokens, max_num_seqs, gpu_mem_util,
   kv_profile_tokens, prefix_caching, preemption, watermark, async_scheduling,
   cuda_graphs, custom_allreduce, fuse_allreduce_rms and flash_attn_version on top (declared with
   that rule).  The schema has already checked
   every value.  Returns the version. */
static pb_vllm_version system_vllm_knobs(const pb_node *sys, int32_t max_model_len, const pb_hw *hw,
                                         pb_vllm_knobs *k) {
    pb_vllm_version v;
    PB_ASSERT(pb_vllm_version_parse(pb_schema_str(SYS, sys, "engine"), &v));
    pb_vllm_knobs_default(v, max_model_len, hw, k);
    pb_step_mode_parse(pb_schema_str_or(SYS, sys, "step_mode", pb_step_mode_str(k->step_mode)), &k->step_mode);
    k->max_paddings = (int32_t)pb_schema_int_or(SYS, sys, "max_paddings", k->max_paddings);
    k->max_num_batched_tokens =
        (int32_t)pb_schema_int_or(SYS, sys, "max_num_batched_tokens", k->max_num_batched_tokens);
    k->max_num_seqs = (int32_t)pb_schema_int_or(SYS, sys, "max_num_seqs", k->max_num_seqs);
    k->gpu_mem_util = pb_schema_num_or(SYS, sys, "gpu_mem_util", k->gpu_mem_util);
    k->kv_profile_tokens = (int32_t)pb_schema_int_or(SYS, sys, "kv_profile_tokens", k->kv_profile_tokens);
    k->prefix_caching = pb_schema_bool_or(SYS, sys, "prefix_caching", k->prefix_caching);
    pb_preempt_mode_parse(pb_schema_str_or(SYS, sys, "preemption", pb_preempt_mode_str(k->preemption)),
                          &k->preemption);
    k->watermark = pb_schema_num_or(SYS, sys, "watermark", k->watermark);
    k->async_scheduling = pb_schema_bool_or(SYS, sys, "async_scheduling", k->async_scheduling);
    k->cuda_graphs = pb_schema_bool_or(SYS, sys, "cuda_graphs", k->cuda_graphs);
    k->custom_allreduce = pb_schema_bool_or(SYS, sys, "custom_allreduce", k->custom_allreduce);
    k->fuse_allreduce_rms = pb_schema_bool_or(SYS, sys, "fuse_allreduce_rms", k->fuse_allreduce_rms);
    const char *fv = pb_schema_str_or(SYS, sys, "flash_attn_version", NULL);
    if (fv) k->flash_attn_version = !strcmp(fv, "auto") ? PB_FLASH_AUTO : atoi(fv);
    return v;
}

/* ---- the system types: one table ----
 * Each type names its KV manager and the defaults that follow from the type (the
 * keys declared "the type's": policy, reservation, sim attention_kernel and
 * framework).  Which keys a type reads is each key's declaration (pb_key.scope).
 * Whatever names the policy (the type, or `policy:`), the policy gets ONE options
 * node: the keys of the system's map that the policy declares as its options
 * (policy.h pb_policy_keys), so `type: ft` and `type: ft, policy: ft` read max_batch
 * the same way. */
typedef struct {
    const char *name;           /* its `type:` choice (PB_SYSTEM_TYPES)                  */
    pb_system_type type;
    bool paged;                 /* paged KV manager (else contiguous)                   */
    const char *policy;         /* its policy (experiments/policy_registry.c)            */
    const char *reservation;    /* contiguous managers' reservation rule                 */
    pb_sim_attn attn;           /* the sim executor's attention kernel and framework     */
    pb_sim_framework fw;
} sys_type;

static const sys_type TYPES[] = {
    {"vllm", PB_SYS_VLLM, true, "vllm", NULL, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON},
    {"orca", PB_SYS_ORCA, false, "orca", "oracle", PB_SIM_ATTN_CONTIGUOUS, PB_SIM_FW_PYTHON},
    {"ft", PB_SYS_FT, false, "ft", "max", PB_SIM_ATTN_CONTIGUOUS, PB_SIM_FW_CPP},
};

void pb_system_types_describe(FILE *f) {
    for (size_t i = 0; i < PB_ARRAY_LEN(TYPES); i++) {
        const sys_type *t = &TYPES[i];
        fprintf(f, "  %-5s %s KV manager, policy %s", t->name, t->paged ? "paged" : "contiguous", t->policy);
        if (t->reservation) fprintf(f, ", reservation %s", t->reservation);
        fprintf(f, ", sim attention_kernel %s, framework %s\n", t->attn == PB_SIM_ATTN_PAGED ? "paged" : "contiguous",
                t->fw == PB_SIM_FW_CPP ? "cpp" : "python");
    }
    fprintf(f, "  (a vllm system with engine: v1 takes sim attention_kernel flash, framework v1)\n");
}

/* Is key one of "a|b|c"? */
static bool in_list(const char *list, const char *key) {
    size_t lk = strlen(key);
    for (const char *p = list; *p;) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (l == lk && !memcmp(p, key, l)) return true;
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

static const sys_type *type_by_id(pb_system_type t) {
    for (size_t i = 0; i < PB_ARRAY_LEN(TYPES); i++)
        if (TYPES[i].type == t) return &TYPES[i];
    return &TYPES[0];
}

/* ---- a point's plan: every setting resolved and checked, nothing allocated ---- */
typedef struct {
    pb_config *tmp;             /* owns the synthesized nodes below                      */
    const sys_type *type;
    pb_model model;
    pb_hw hw;
    int32_t tp;
    uint64_t seed;
    int32_t block_size, max_tokens, max_seqs, profile_tokens;
    pb_vllm_knobs knobs;        /* the vLLM version's knobs (vllm_version.h)             */
    pb_vllm_version version;    /* its `engine:`                                         */
    double util, swap_gib, watermark, max_clock_s;
    pb_preempt_mode pmode;
    pb_resv_rule rule;
    pb_kv_cache_dtype kv_cache_dtype;   /* vLLM: KV-cache format (model.kv_dtype_bytes follows) */
    float kv_scale;
    bool cuda_graphs;
    bool real;
    const char *executor;
    double fixed_latency_s;
    int64_t n_gpu_blocks, n_cpu_blocks, slots;
    int64_t n_tier_blocks;      /* the prefix cache's CPU tier (block_manager.h); 0: none */
    const char *policy;
    pb_node *policy_opts;       /* the policy's options (a map, maybe empty)             */
    pb_workload_cfg wc;
    double length_scale;
    bool clamp;
    bool fast_forward;          /* the engine's fast path (engine.h)                      */
    pb_sim_cost cost;
    pb_sim_params sp;
} plan;

#define PB_SYSTEM_MAX_REQUESTS 10000000.0   /* requests one point may generate */

/* ---- plan_point's steps: each fills its part of the plan from the point's resolved
 * tree (root) and its system's map (sys), checks it, and records an error at
 * file:line:col in ce (kp names the system, "systems.<i>"). ---- */

/* The model, the hardware, tensor parallelism (gpus) and the seed; gpus divides the heads. */
static pb_status plan_model(plan *P, const pb_node *root, pb_cfg_err *ce) {
    if (pb_model_from_node(pb_node_get(root, "model"), &P->model, ce) ||
        pb_hw_from_node(pb_node_get(root, "hardware"), &P->hw, ce))
        return PB_ERR_INVALID;
    P->tp = (int32_t)pb_schema_int(pb_experiment_schema, root, "gpus");
    P->seed = (uint64_t)pb_schema_int(pb_experiment_schema, root, "seed");
    const pb_node *gn = pb_node_get(root, "gpus") ? pb_node_get(root, "gpus") : root;
    if (P->model.n_heads % P->tp || P->model.n_kv_heads % P->tp)
        return pb_cfg_fail(ce, gn, false,
                           "gpus: tensor parallelism %d does not divide %s's %d attention heads (%d KV heads)", P->tp,
                           P->model.name, P->model.n_heads, P->model.n_kv_heads);
    return PB_OK;
}

/* The shipped policies that declare `key` an option, ", "-separated in buf; how many. */
static int option_owners(const char *key, char *buf, size_t n) {
    int count = 0;
    buf[0] = 0;
    for (const pb_policy_entry *d = pb_policy_registry; d->name; d++)
        if (pb_policy_option_find(d->keys, key))
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", count++ ? ", " : "", d->name);
    return count;
}

/* The policy (`policy:`, else the type's) and its ONE options node: each key of sys
   must be one this type or its policy reads (the policy's declaration, policy.h
   pb_policy_keys, says which are its options and which of its type's keys it never
   reads); its options are copied into P->policy_opts and checked as its constructor
   will check them.  Every bad key is recorded, not only the first. */
static pb_status plan_policy(plan *P, const pb_node *sys, const char *kp, pb_cfg_err *ce) {
    P->policy = pb_schema_str_or(SYS, sys, "policy", P->type->policy);
    const pb_policy_entry *pe = pb_policy_find(P->policy);
    if (!pe)
        return pb_cfg_fail(ce, pb_node_get(sys, "policy"), false, "%s.policy: unknown policy '%s' (known: %s)", kp,
                           P->policy, pb_policy_names());
    P->policy_opts = pb_config_root(P->tmp);
    pb_status st = PB_OK;
    for (int i = 0; i < sys->n_kids; i++) {
        const pb_node *k = sys->kids[i];
        const pb_key *d = pb_schema_find(SYS, k->key);
        if (d && pb_key_in_scope(SYS, d, P->type->name)) {
            if (!pe->keys->ignores || !in_list(pe->keys->ignores, k->key)) continue;
            st = pb_cfg_fail(ce, k, true, "%s.%s: policy %s has a fixed step and does not read '%s'", kp,
                             k->key, P->policy, k->key);
            continue;
        }
        if (pb_policy_option_find(pe->keys, k->key)) {
            pb_node_put(P->tmp, P->policy_opts, k->key, pb_config_clone_node(P->tmp, k));
            continue;
        }
        char owners[256];   /* another policy's option? say whose */
        int n_owners = option_owners(k->key, owners, sizeof owners);
        st = pb_cfg_fail(ce, k, true, "%s.%s: a %s system with policy %s does not read '%s'%s%s%s", kp, k->key,
                         P->type->name, P->policy, k->key,
                         !n_owners ? "" : n_owners == 1 ? " (an option of policy " : " (an option of policies ", owners,
                         n_owners ? ")" : "");
    }
    if (!st && pb_policy_opts_check(P->policy, pe->keys, P->policy_opts, ce)) st = PB_ERR_INVALID;
    return st;
}

/* The engine's knobs (system_vllm_knobs) and the step limits they set; max_clock_s;
   fast_forward. */
static void plan_engine(plan *P, const pb_node *root, const pb_node *sys) {
    P->version = system_vllm_knobs(sys, P->model.max_len, &P->hw, &P->knobs);
    P->max_tokens = P->knobs.max_num_batched_tokens;
    P->max_seqs = P->knobs.max_num_seqs;
    P->util = P->knobs.gpu_mem_util;
    P->profile_tokens = pb_vllm_knobs_profile_tokens(&P->knobs);
    P->max_clock_s = pb_schema_num(SYS, sys, "max_clock_s");
    P->fast_forward = pb_schema_bool(pb_experiment_schema, root, "fast_forward");
}

/* vLLM's KV-cache format and CUDA graphs: kv_cache_dtype (fp8: one byte per element,
   so the model's kv_dtype_bytes -- and with it the KV sizing, the cost model's KV
   traffic and the swap blocks -- follows), kv_scale (fp8 only) and cuda_graphs (the
   knob, vllm_version.h: under v0.x v0.2.6's decode graphs, here; under v1 V1's graph
   modes, plan_sim); the weight format (model.weights: the weight bytes in the KV
   rules and the GEMMs). */
static pb_status plan_kv_format(plan *P, const pb_node *sys, const char *kp, pb_cfg_err *ce) {
    pb_weight_format wf = PB_WEIGHTS_FP16;
    pb_weight_format_parse(pb_schema_str(SYS, sys, "weights"), &wf);   /* validated: an enum */
    P->model.weights = (int32_t)wf;
    P->kv_cache_dtype = PB_KV_CACHE_AUTO;
    pb_kv_cache_dtype_parse(pb_schema_str(SYS, sys, "kv_cache_dtype"), &P->kv_cache_dtype);   /* validated: an enum */
    P->kv_scale = (float)pb_schema_num(SYS, sys, "kv_scale");
    P->cuda_graphs = P->version != PB_VLLM_V1 && P->knobs.cuda_graphs;   /* v0.2.6 decode graphs; V1: plan_sim */
    if (P->kv_cache_dtype == PB_KV_CACHE_AUTO && pb_node_has(sys, "kv_scale"))
        return pb_cfg_fail(ce, pb_node_get(sys, "kv_scale"), true,
                           "%s.kv_scale: applies only to an fp8 kv_cache_dtype (kv_cache_dtype is auto)", kp);
    if (!pb_kv_scale_ok(P->kv_scale))
        return pb_cfg_fail(ce, pb_node_get(sys, "kv_scale"), true, "%s.kv_scale: expected a finite number > 0", kp);
    if (P->kv_cache_dtype != PB_KV_CACHE_AUTO) P->model.kv_dtype_bytes = 1;
    return PB_OK;
}

/* The KV manager's parameters: block size, swap space, watermark, preemption mode and
   reservation rule.  FasterTransformer reserves only `max`; a block fits the model. */
static pb_status plan_kv_manager(plan *P, const pb_node *sys, const char *kp, pb_cfg_err *ce) {
    P->block_size = (int32_t)pb_schema_int(SYS, sys, "block_size");
    P->swap_gib = pb_schema_num(SYS, sys, "swap_space_gib");
    P->watermark = P->knobs.watermark;
    P->pmode = P->knobs.preemption;
    if (P->version == PB_VLLM_V1 && P->pmode != PB_PREEMPT_RECOMPUTE)   /* vllm_version.h: V1's only mode */
        return pb_cfg_fail(ce, pb_node_get(sys, "preemption"), false,
                           "%s.preemption: vLLM V1 (engine: v1) preempts by recompute only, not '%s'", kp,
                           pb_preempt_mode_str(P->pmode));
    P->rule = PB_RESV_MAX;
    if (P->type->reservation) {
        const char *resv = pb_schema_str_or(SYS, sys, "reservation", P->type->reservation);
        PB_ASSERT(pb_resv_rule_parse(resv, &P->rule));
        if (P->type->type == PB_SYS_FT && P->rule != PB_RESV_MAX)
            return pb_cfg_fail(ce, pb_node_get(sys, "reservation"), false,
                               "%s.reservation: FasterTransformer reserves the maximum length (only `max`)", kp);
    }
    if (P->block_size > P->model.max_len)
        return pb_cfg_fail(ce, pb_node_get(sys, "block_size"), false,
                           "%s.block_size: %d is larger than %s's longest sequence (%d tokens)", kp, P->block_size,
                           P->model.name, P->model.max_len);
    return plan_kv_format(P, sys, kp, ce);
}

/* The executor: its type, and the keys only the real executors read (an error under sim). */
static pb_status plan_executor(plan *P, const pb_node *root, pb_cfg_err *ce) {
    P->executor = pb_experiment_executor_type(root);
    P->real = strcmp(P->executor, "sim") != 0;
    const pb_node *exn = executor_map(root);
    for (int i = 0; exn && i < exn->n_kids; i++) {
        const pb_key *d = pb_schema_find(pb_executor_schema, exn->kids[i]->key);
        if (d && !pb_key_in_scope(pb_executor_schema, d, P->executor)) {
            char scope[128];
            pb_key_scope_names(pb_executor_schema, d, scope, sizeof scope);
            return pb_cfg_fail(ce, exn->kids[i], true,
                               "executor.%s: only the real executors (%s) read it (executor: %s)", d->name, scope,
                               P->executor);
        }
    }
    P->fixed_latency_s = pb_schema_num(pb_executor_schema, exn, "fixed_latency_s");
    return PB_OK;
}

/* The prefix cache's CPU tier: kv_cpu_tier_gib of blocks beside the swap space, for a
   system that caches blocks by content: its policy does (its constructor says; made here
   and dropped) or the prefix_caching knob is on (V1's default). */
static pb_status plan_cpu_tier(plan *P, const pb_node *sys, double bytes_per_token, const char *kp, pb_cfg_err *ce) {
    double gib = pb_schema_num(SYS, sys, "kv_cpu_tier_gib");
    P->n_tier_blocks = 0;
    if (!(gib > 0)) return PB_OK;
    const pb_node *at = pb_node_get(sys, "kv_cpu_tier_gib");
    pb_policy *pol = NULL;
    pb_status st = pb_policy_create(P->policy, P->policy_opts->n_kids ? P->policy_opts : NULL, &pol, ce);
    if (st) return st;
    bool caching = pol->iface->prefix_caching || P->knobs.prefix_caching;
    pb_policy_destroy(pol);
    if (!caching || !P->type->paged)
        return pb_cfg_fail(ce, at, false,
                           "%s.kv_cpu_tier_gib: the CPU tier holds prefix-cached blocks: it needs a paged system "
                           "that caches by content (policy: prefix-cache, or prefix_caching: true), not %s", kp, P->policy);
    double blocks = floor(gib * GIB / (bytes_per_token * P->block_size));
    if (blocks < 1 || blocks + (double)PB_MIN(P->n_cpu_blocks, P->n_gpu_blocks) > INT32_MAX - 1)
        return pb_cfg_fail(ce, at, false, "%s.kv_cpu_tier_gib: %g GiB is %.0f blocks of %d tokens (want 1 to %d)", kp,
                           gib, blocks, P->block_size, INT32_MAX - 1 - (int32_t)PB_MIN(P->n_cpu_blocks, P->n_gpu_blocks));
    P->n_tier_blocks = (int64_t)blocks;
    return PB_OK;
}

/* The KV space given in token slots: the system's kv_slots, else the executor's; <= 0: none. */
static int64_t kv_slots_given(const pb_node *root, const pb_node *sys) {
    int64_t kv_slots = pb_schema_int(SYS, sys, "kv_slots");
    return kv_slots > 0 ? kv_slots : pb_schema_int(pb_executor_schema, executor_map(root), "kv_slots");
}

/* KV space: the paper harness's rule; contiguous managers count slots.  Overrides:
   the system's kv_slots, else the executor's; real executors cap it at kv_mib.  Sets
   n_gpu_blocks, slots and n_cpu_blocks (the swap pool; paged managers only).  Fails
   when the hardware has no memory left for the KV cache and no kv_slots is given. */
static pb_status plan_kv_space(plan *P, const pb_node *root, const pb_node *sys, const char *kp, pb_cfg_err *ce) {
    const pb_node *exn = executor_map(root);
    bool paged = P->type->paged;
    int32_t unit = paged ? P->block_size : 1;
    int64_t kv_slots = kv_slots_given(root, sys);
    pb_kv_capacity cap;
    memset(&cap, 0, sizeof cap);
    pb_status st;
    if (P->knobs.kv_rule == PB_KV_RULE_PROFILE)
        st = pb_kv_capacity_profile(&P->model, &P->hw, P->tp, unit, P->profile_tokens,
                                    PB_MIN(P->max_seqs, P->profile_tokens), P->util, &cap);
    else if (P->knobs.kv_rule == PB_KV_RULE_V1)
        st = pb_kv_capacity_v1(&P->model, &P->hw, P->tp, unit, P->profile_tokens,
                               PB_MIN(P->max_seqs, P->profile_tokens), P->util, P->knobs.cuda_graphs, &cap);
    else
        st = pb_kv_capacity_compute(&P->model, &P->hw, P->tp, unit, P->profile_tokens, P->util, &cap);
    if (st && kv_slots <= 0)
        return pb_cfg_fail(ce, pb_node_get(root, "hardware"), true,
                           "hardware: %s x%d has no memory left for %s's KV cache (weights %.1f GiB per GPU)",
                           P->hw.name, P->tp, P->model.name, pb_param_bytes(&P->model) / P->tp / GIB);
    int64_t n_gpu_blocks = kv_slots > 0 ? kv_slots / unit : cap.num_blocks;
    double bytes_per_token = pb_kv_bytes_per_token(&P->model, P->tp);
    double kv_mib = P->real ? kv_mib_of(exn, P->executor) : 0;
    if (kv_mib > 0) {
        int64_t max_blocks = (int64_t)floor(kv_mib * 1024.0 * 1024.0 / bytes_per_token) / unit;
        if (n_gpu_blocks > max_blocks) n_gpu_blocks = max_blocks;
    }
    int64_t n_cpu_blocks = (int64_t)floor(P->swap_gib * GIB / (bytes_per_token * P->block_size));
    /* a real executor allocates its swap pool: as large as the KV space unless stated */
    int64_t swap_slots = pb_schema_int_or(pb_executor_schema, exn, "swap_slots", -1);   /* -1: the rule */
    if (P->real) n_cpu_blocks = swap_slots >= 0 ? PB_MIN(n_cpu_blocks, swap_slots / P->block_size)
                                                : PB_MIN(n_cpu_blocks, n_gpu_blocks);
    P->n_gpu_blocks = n_gpu_blocks;
    P->n_cpu_blocks = paged ? n_cpu_blocks : 0;
    P->slots = n_gpu_blocks * unit;
    return plan_cpu_tier(P, sys, bytes_per_token, kp, ce);
}

/* This machine's physical memory in bytes (64 GiB when the system does not say). */
static double phys_mem_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 64.0 * GIB;
}

/* The node to blame for a KV-size problem: the system's kv_slots, the executor's
   kv_slots or kv_mib, else the system's block_size, else the hardware. */
static const pb_node *kv_blame(const pb_node *root, const pb_node *sys) {
    const pb_node *n = pb_node_get(sys, "kv_slots");
    if (!n || pb_schema_int(SYS, sys, "kv_slots") <= 0) n = NULL;
    const pb_node *x = executor_map(root);
    if (!n && x) n = pb_node_get(x, "kv_slots") ? pb_node_get(x, "kv_slots") : pb_node_get(x, "kv_mib");
    if (!n) n = pb_node_get(sys, "block_size");
    if (!n) n = pb_node_get(root, "hardware");
    return n ? n : root;
}

/* The KV space holds a block (or slot), one max-length request, fits the managers'
   ranges, and needs at most half of this machine's memory: the managers' per-block
   bookkeeping (~64 B a block or slot), plus, for real executors, the KV and swap
   buffers themselves. */
static pb_status check_kv_space(const plan *P, const char *id, const pb_node *root, const pb_node *sys,
                                const char *kp, pb_cfg_err *ce) {
    bool paged = P->type->paged;
    int32_t unit = paged ? P->block_size : 1;
    int64_t kv_slots = kv_slots_given(root, sys);
    if (P->n_gpu_blocks < 1)
        return pb_cfg_fail(ce, kv_blame(root, sys), false, "%s: the KV space of %s (%lld token slots) holds no %s of %d tokens",
                           kp, id, (long long)(kv_slots > 0 ? kv_slots : P->slots), paged ? "block" : "slot", unit);
    if (P->slots < P->model.max_len)
        return pb_cfg_fail(ce, kv_blame(root, sys), false,
                           "%s: the KV space of %s (%lld token slots) cannot hold one max-length request of %s "
                           "(%d tokens)", kp, id, (long long)P->slots, P->model.name, P->model.max_len);
    if (P->n_gpu_blocks > INT32_MAX || (!paged && P->slots > (1 << 30)))
        return pb_cfg_fail(ce, kv_blame(root, sys), false, "%s: the KV space of %s (%lld blocks) is out of range", kp,
                           id, (long long)P->n_gpu_blocks);
    double host = 64.0 * (double)(paged ? P->n_gpu_blocks + P->n_cpu_blocks : P->slots);
    if (P->real)
        host += pb_kv_bytes_per_token(&P->model, P->tp) * (double)P->tp *
                ((double)P->slots + (double)P->n_cpu_blocks * P->block_size);
    if (host > 0.5 * phys_mem_bytes())
        return pb_cfg_fail(ce, kv_blame(root, sys), false,
                           "%s: the KV space of %s needs %.1f GiB of host memory, more than half of this machine's "
                           "%.1f GiB", kp, id, host / GIB, phys_mem_bytes() / GIB);
    return PB_OK;
}

/* The workload: generated requests are capped (a trace file is read by the caller);
   length_scale and clamp_to_max_len fit the trace to the model. */
static pb_status plan_workload(plan *P, const pb_node *root, pb_cfg_err *ce) {
    const pb_node *wn = pb_node_get(root, "workload");
    if (pb_workload_from_node(wn, &P->wc, ce)) return PB_ERR_INVALID;
    if (!P->wc.trace[0] && P->wc.arrivals.kind != PB_ARRIVALS_REPLAY) {
        const pb_arrival_cfg *a = &P->wc.arrivals;
        const pb_node *rn = pb_node_get(wn, "rate") ? pb_node_get(wn, "rate") : wn;
        if (a->kind != PB_ARRIVALS_BURST && a->ramp == PB_RAMP_NONE && !(a->rate > 0))
            return pb_cfg_fail(ce, rn, false, "workload.rate: %s arrivals need a rate > 0 (got %g)",
                               pb_arrival_kind_name(a->kind), a->rate);
        if (a->num <= 0 && !(a->duration_s > 0))
            return pb_cfg_fail(ce, pb_node_get(wn, "duration_s") ? pb_node_get(wn, "duration_s") : wn, false,
                               "workload.duration_s: must be > 0 (or set num_requests)");
        double expect = a->kind == PB_ARRIVALS_BURST ? (double)a->num : pb_arrival_expected_count(a);
        if (expect > PB_SYSTEM_MAX_REQUESTS)
            return pb_cfg_fail(ce, a->num > 0 ? pb_node_get(wn, "num_requests") : rn, false,
                               "workload.%s: %.3g requests (rate x duration_s) is above the cap of %.0f per point",
                               a->num > 0 ? "num_requests" : "rate", expect, PB_SYSTEM_MAX_REQUESTS);
    }
    P->length_scale = pb_schema_num(pb_experiment_schema, root, "length_scale");
    P->clamp = pb_schema_bool(pb_experiment_schema, root, "clamp_to_max_len");
    /* settings under which no request could ever run are errors here, not a run of
       rejections: a shared prefix as long as the context, more sequences per request
       than a step may hold */
    double prefix = floor(P->wc.prefix_len * (P->length_scale > 0 ? P->length_scale : 1.0));
    if (!P->clamp && prefix >= P->model.max_len)
        return pb_cfg_fail(ce, pb_node_get(wn, "prefix_len") ? pb_node_get(wn, "prefix_len") : wn, false,
                           "workload.prefix_len: %d tokens of shared prefix leave no room in %s's context of %d "
                           "tokens: every prompt would be longer and dropped", P->wc.prefix_len, P->model.name,
                           P->model.max_len);
    if (P->version == PB_VLLM_V1 && P->wc.beam_width > 1)
        return pb_cfg_fail(ce, pb_node_get(wn, "beam_width") ? pb_node_get(wn, "beam_width") : wn, false,
                           "workload.beam_width: vLLM V1 (engine: v1) has no beam search in its engine: v0.33.0 runs "
                           "it in the frontend as one-token requests per beam per step "
                           "(entrypoints/generate/beam_search/offline.py), which is not modelled");
    int32_t seqs = P->wc.beam_width > 1 ? P->wc.beam_width : P->wc.n;
    if (seqs > P->max_seqs) {
        const char *k = P->wc.beam_width > 1 ? "beam_width" : "n";
        return pb_cfg_fail(ce, pb_node_get(wn, k) ? pb_node_get(wn, k) : wn, false,
                           "workload.%s: %d sequences per request, above the system's max_num_seqs (%d): every "
                           "request would be rejected", k, seqs, P->max_seqs);
    }
    return PB_OK;
}

/* The sim executor's settings: the hardware's cost model with the experiment's
   cost_model: on top, and the type's sim defaults with the system's sim: on top.  A
   real executor reads no sim: (an error when given). */
static pb_status plan_sim(plan *P, const pb_node *root, const pb_node *sys, const char *kp, pb_cfg_err *ce) {
    const pb_node *gn = pb_node_get(sys, "cuda_graphs");
    if (P->cuda_graphs && P->real && (strcmp(P->executor, "cuda") || P->tp > 1))
        return pb_cfg_fail(ce, gn, true, "%s.cuda_graphs: %s", kp,
                           strcmp(P->executor, "cuda") ? "the cpu executor has no CUDA graphs (sim or cuda only)"
                                                       : "the cuda executor captures graphs at gpus: 1 only");
    const pb_node *wn = pb_node_get(sys, "weights");
    if (P->model.weights != PB_WEIGHTS_FP16 && P->real)
        return pb_cfg_fail(ce, wn, true, "%s.weights: %s weights are modelled by the sim executor only (executor: %s)",
                           kp, pb_weight_format_name((pb_weight_format)P->model.weights), P->executor);
    if (P->real) {
        if (!pb_node_has(sys, "sim")) return PB_OK;
        return pb_cfg_fail(ce, pb_node_get(sys, "sim"), true, "%s.sim: only the sim executor reads it (executor: %s)",
                           kp, P->executor);
    }
    pb_node *hwc = pb_config_clone_node(P->tmp, pb_node_get(root, "hardware"));
    const pb_node *over = pb_node_get(root, "cost_model");
    if (over) {
        pb_node *cm = (pb_node *)pb_node_get(hwc, "cost_model");
        if (cm && cm->kind == PB_NODE_MAP) pb_node_overlay(P->tmp, cm, over);
    }
    if (pb_sim_cost_from_node(hwc, &P->cost, ce)) return PB_ERR_INVALID;
    if (P->cuda_graphs && !P->cost.has_graph_costs)
        return pb_cfg_fail(ce, gn, true,
                           "%s.cuda_graphs: hardware %s has no cost_model.cuda_graph_launch_us / cuda_graph_node_gap_us",
                           kp, P->hw.name);
    if (P->model.weights != PB_WEIGHTS_FP16 && !(P->cost.wq_ratio[P->model.weights] > 0))
        return pb_cfg_fail(ce, wn, true, "%s.weights: hardware %s has no cost_model.wq_%s_compute_ratio", kp, P->hw.name,
                           P->model.weights == PB_WEIGHTS_INT4_AWQ    ? "int4_awq"
                           : P->model.weights == PB_WEIGHTS_INT4_GPTQ ? "int4_gptq"
                                                                      : pb_weight_format_name((pb_weight_format)P->model.weights));
    P->sp = pb_sim_params_default();
    P->sp.attn = P->type->attn;
    P->sp.framework = P->type->fw;
    if (P->type->paged) {   /* the engine version's host model (vllm_version.h) */
        if (P->version == PB_VLLM_V1) {   /* V1's host code and its FlashAttention-2 kernels */
            P->sp.framework = PB_SIM_FW_V1;
            P->sp.attn = PB_SIM_ATTN_FLASH;
        }
        P->sp.async_sched = P->knobs.async_scheduling;
        /* V1's capture sizes reach min(2 max_num_seqs, 512) tokens (executor_sim.h) */
        P->sp.graph_max_tokens = P->version == PB_VLLM_V1 && P->knobs.cuda_graphs ? PB_MIN(2 * P->max_seqs, 512) : 0;
    }
    P->sp.cuda_graphs = P->cuda_graphs;
    if (P->type->paged && P->knobs.custom_allreduce && P->tp > 1) {   /* vLLM's own all-reduce kernels */
        int i = pb_sim_ar_fit(P->tp);
        const pb_node *at = pb_node_get(sys, "custom_allreduce");   /* else the engine that defaults it */
        bool given = at != NULL;
        if (!at) at = pb_node_get(sys, "engine");
        if (!P->cost.has_custom_ar[i])
            return pb_cfg_fail(ce, at ? at : sys, true,
                               "%s.custom_allreduce%s: hardware %s has no cost_model.custom_allreduce_tp%d_us / "
                               "custom_allreduce_tp%d_GBps (vLLM's own all-reduce kernels at tp %d; custom_allreduce: "
                               "false prices NCCL's)",
                               kp, given ? "" : " (the engine's default)", P->hw.name, 2 << i, 2 << i, P->tp);
        P->sp.custom_allreduce = true;
    }
    if (P->type->paged) {   /* the flash kernel's FlashAttention version (auto: vLLM's fa_utils rule) */
        bool fa3 = P->cost.flash3_pre_flops_eff > 0;
        int fv = P->knobs.flash_attn_version;
        if (fv == 3 && !fa3)
            return pb_cfg_fail(ce, pb_node_get(sys, "flash_attn_version"), true,
                               "%s.flash_attn_version: hardware %s has no cost_model.flash3_prefill_flops_efficiency "
                               "(FlashAttention-3 runs on Hopper; 2 or auto prices FlashAttention-2)",
                               kp, P->hw.name);
        P->sp.flash_version = fv == PB_FLASH_AUTO ? (fa3 ? 3 : 2) : fv;
        /* V1's compiled model; v0.2's RMSNorm(x, residual) op for its Llama-family models
           (executor_sim.h "Fused element-wise work") */
        P->sp.fused_add_norm = P->version == PB_VLLM_V1 ||
                               (P->version == PB_VLLM_V02 && P->model.arch == PB_ARCH_LLAMA);
    }
    if (P->type->paged && P->knobs.fuse_allreduce_rms && P->tp > 1) {   /* FlashInfer's all-reduce + norm */
        int i = P->tp == 2 ? 0 : P->tp == 4 ? 1 : P->tp == 8 ? 2 : -1;   /* the sizes it supports */
        double bytes = i >= 0 ? P->cost.ar_norm_fusion_bytes[i] : 0;
        const pb_node *at = pb_node_get(sys, "fuse_allreduce_rms");
        if (at && !(bytes > 0))   /* asked for explicitly where vLLM would not run it */
            return pb_cfg_fail(ce, at, true,
                               "%s.fuse_allreduce_rms: hardware %s has no cost_model.allreduce_norm_fusion_tp%d_MB "
                               "(the fusion runs at tp 2, 4 or 8 on SM 9.0 / 10.x GPUs)",
                               kp, P->hw.name, P->tp);
        if (at && P->model.arch != PB_ARCH_LLAMA)
            return pb_cfg_fail(ce, at, true, "%s.fuse_allreduce_rms: model %s has no RMSNorm to fuse (Llama family only)",
                               kp, P->model.name);
        if (bytes > 0 && P->model.arch == PB_ARCH_LLAMA)
            P->sp.ar_norm_max_tokens = (int32_t)(bytes / ((double)P->model.hidden * P->model.dtype_bytes));
    }
    return pb_sim_params_from_node(pb_node_get(sys, "sim"), &P->sp, ce);
}

/* The plan of grid point `si`'s system (sys: its map in the resolved tree root): the
   steps above in order, so the first error reported for a bad config is always the
   same one (at file:line:col in ce).  PB_OK or PB_ERR_INVALID; plan_free() it either way. */
static pb_status plan_point(const pb_experiment *e, int si, const pb_node *root, const pb_node *sys, plan *P,
                            pb_cfg_err *ce) {
    const pb_system_spec *spec = &e->systems[si];
    char kp[64];
    snprintf(kp, sizeof kp, "systems.%d", si);
    memset(P, 0, sizeof *P);
    P->tmp = pb_config_new("(system)");
    P->type = type_by_id(spec->type);
    pb_status st = plan_model(P, root, ce);
    if (!st) st = plan_policy(P, sys, kp, ce);
    if (!st) {
        plan_engine(P, root, sys);
        st = plan_kv_manager(P, sys, kp, ce);
    }
    if (!st) st = plan_executor(P, root, ce);
    if (!st) st = plan_kv_space(P, root, sys, kp, ce);
    if (!st) st = check_kv_space(P, spec->id, root, sys, kp, ce);
    if (!st) st = plan_workload(P, root, ce);
    if (!st) st = plan_sim(P, root, sys, kp, ce);
    return st;
}

static void plan_free(plan *P) { pb_config_destroy(P->tmp); P->tmp = NULL; }

/* Read every file a point would read -- trace, dataset, replay timestamps, step
   profile -- once per distinct set of files (`seen` remembers the last one). */
static pb_status check_files(const plan *P, const pb_node *root, const pb_node *sys, char *seen, size_t seen_n,
                             pb_cfg_err *ce) {
    char key[4 * PB_WL_PATH + 8];
    snprintf(key, sizeof key, "%s|%s|%s|%s|%s|%d|%d", P->wc.trace, P->wc.dataset, P->wc.file, P->wc.replay_file,
             P->real ? "" : P->sp.profile, (int)P->wc.arrivals.kind, P->wc.shots);
    if (!strcmp(key, seen)) return PB_OK;
    char werr[1024] = "";
    const pb_node *wn = pb_node_get(root, "workload");
    const char *k;
    if (pb_workload_check_files(&P->wc, &k, werr, sizeof werr)) {
        const pb_node *at = pb_node_get(wn, k) ? pb_node_get(wn, k) : pb_node_get(wn, "dataset") ? pb_node_get(wn, "dataset") : wn;
        return pb_cfg_fail(ce, at, false, "workload.%s: %s", k, werr);
    }
    if (!P->real && P->sp.profile[0]) {
        pb_sim_profile *prof = NULL;
        pb_status st = pb_sim_profile_load(P->sp.profile, &prof, werr, sizeof werr);
        pb_sim_profile_destroy(prof);
        if (st) return pb_cfg_fail(ce, pb_node_get(sys, "sim.profile"), false, "sim.profile: %s", werr);
    }
    snprintf(seen, seen_n, "%s", key);
    return PB_OK;
}

/* Append the lines of src that err does not hold yet (points repeat their errors). */
static void merge_errors(pb_cfg_err *err, const pb_cfg_err *src) {
    const char *p = src->msg;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)PB_MIN(l, sizeof line - 1), p);
        bool seen = false;
        for (const char *q = err->msg; (q = strstr(q, line)) != NULL; q++)
            if ((q == err->msg || q[-1] == '\n') && (q[strlen(line)] == 0 || q[strlen(line)] == '\n')) { seen = true; break; }
        if (!seen) pb_cfg_err_add_line(err, line);
        p += l + (nl ? 1 : 0);
    }
}

pb_status pb_system_check(const pb_experiment *e, pb_cfg_err *err) {
    pb_status all = PB_OK;
    char seen[4 * PB_WL_PATH + 8] = "";
    for (int s = 0; s < e->n_systems && err->count <= PB_CFG_MAX_ERRORS; s++) {
        int np = pb_experiment_n_points(e, s);
        for (int p = 0; p < np && err->count <= PB_CFG_MAX_ERRORS; p++) {
            pb_config *c = NULL;
            pb_cfg_err pe;
            pb_cfg_err_clear(&pe);
            pb_status st = pb_experiment_resolve(e, s, p, &c, &pe);
            if (!st) st = pb_experiment_validate_tree(pb_config_root(c), &pe);
            if (!st) {
                const pb_node *root = pb_config_root(c);
                char sp[32];
                snprintf(sp, sizeof sp, "systems.%d", s);
                plan P;
                st = plan_point(e, s, root, pb_node_get(root, sp), &P, &pe);
                if (!st) st = check_files(&P, root, pb_node_get(root, sp), seen, sizeof seen, &pe);
                plan_free(&P);
            }
            pb_config_destroy(c);
            if (st) {
                all = PB_ERR_INVALID;
                merge_errors(err, &pe);
            }
        }
    }
    return all;
}

static pb_status fail(char *err, size_t n, pb_status st, const char *fmt, const char *a, const char *b) {
    snprintf(err, n, fmt, a, b);
    return st ? st : PB_ERR_INVALID;
}

/* What one point owns while it runs; point_free() releases whatever was made. */
typedef struct {
    plan P;
    pb_trace trace;
    pb_kv_manager *kv;
    pb_policy *policy;
    pb_executor *ex;
    pb_engine *eng;
    pb_metrics *m;
    pb_client *client;          /* closed loop / concurrency limit: it sends the trace  */
    int64_t dropped;            /* requests dropped before the run (prompt > context)  */
} point_run;

static void point_free(point_run *R) {
    pb_engine_destroy(R->eng);
    pb_client_destroy(R->client);
    pb_metrics_destroy(R->m);
    pb_executor_destroy(R->ex);
    pb_policy_destroy(R->policy);
    pb_kv_destroy(R->kv);
    pb_trace_free(&R->trace);
    plan_free(&R->P);
}

/* The point's trace, fitted to the model's context (and checked). */
static pb_status make_trace(point_run *R, char *err, size_t err_n) {
    char werr[1024] = "";
    pb_status st = pb_workload_generate(&R->P.wc, R->P.seed, &R->trace, werr, sizeof werr);
    if (st) return fail(err, err_n, st, "workload: %s%s", werr, "");
    pb_trace_fit(&R->trace, R->P.length_scale, R->P.clamp, R->P.model.max_len);
    int64_t n = R->trace.n;
    R->dropped = pb_trace_drop_long_prompts(&R->trace, R->P.model.max_len);   /* the same for every system */
    if (R->trace.n == 0) {
        snprintf(err, err_n, "workload: every request of the trace (%lld) has a prompt longer than %s's context "
                 "(%d tokens): nothing to run", (long long)n, R->P.model.name, R->P.model.max_len);
        return PB_ERR_INVALID;
    }
    if ((st = pb_trace_check(&R->trace, werr, sizeof werr)))
        return fail(err, err_n, st, "workload: the fitted trace is invalid: %s%s", werr, "");
    return PB_OK;
}

/* The KV manager: paged (vLLM) or contiguous slots (Orca, FasterTransformer); made
   after the policy, since a caching policy needs a paged one. */
static pb_status make_kv(point_run *R, const pb_point_ctx *pt, char *err, size_t err_n) {
    const plan *P = &R->P;
    const pb_system_spec *spec = &pt->exp->systems[pt->sys];
    pb_status st;
    if (R->policy->iface->prefix_caching && !P->type->paged) {   /* the knob is read by paged types only */
        pb_cfg_err ce;
        pb_cfg_err_clear(&ce);
        pb_cfg_fail(&ce, pb_node_get(pt->system, "policy"), false,
                    "systems.%s.policy: %s caches KV blocks by content: it needs a paged KV manager (type: vllm)",
                    spec->id, P->policy);
        return fail(err, err_n, PB_ERR_INVALID, "%s%s", ce.msg, "");
    }
    if (P->type->paged) {
        pb_paged_params pp;
        pb_paged_params_default(&pp);
        pp.block_size = P->block_size;
        pp.n_gpu_blocks = (int32_t)P->n_gpu_blocks;
        pp.n_cpu_blocks = (int32_t)PB_MIN(P->n_cpu_blocks, (int64_t)INT32_MAX);
        pp.watermark = P->watermark;
        pp.prefix_caching = R->policy->iface->prefix_caching || P->knobs.prefix_caching;
        pp.n_tier_blocks = (int32_t)P->n_tier_blocks;
        st = pb_paged_kv_create(&pp, &R->kv);
    } else {
        pb_kv_contiguous_params cp;
        cp.num_slots = P->slots;
        cp.max_len = P->model.max_len;
        cp.rule = P->rule;
        st = pb_kv_contiguous_create(&cp, &R->kv);
    }
    if (st) return fail(err, err_n, st, "systems.%s: cannot create the KV manager (%s)", spec->id, pb_status_str(st));
    return PB_OK;
}

/* The executor: the cost model, or a real model (cpu, cuda). */
static pb_status make_executor(point_run *R, pb_cfg_err *ce) {
    const plan *P = &R->P;
    if (!P->real) return (R->ex = pb_executor_sim_create(&P->model, &P->hw, &P->cost, P->tp, &P->sp, ce)) ? PB_OK
                                                                                                        : PB_ERR_INVALID;
    bool paged = P->type->paged;
    pb_real_exec_params rp;
    pb_real_exec_params_default(&rp);
    rp.block_size = paged ? P->block_size : 0;
    rp.num_gpu_blocks = paged ? (int32_t)P->n_gpu_blocks : 0;
    rp.num_slots = paged ? 0 : P->slots;
    rp.num_cpu_blocks = (int32_t)PB_MIN(P->n_cpu_blocks + P->n_tier_blocks, (int64_t)INT32_MAX);   /* the manager's */
    rp.fixed_latency_s = P->fixed_latency_s;
    rp.weight_seed = P->seed;
    rp.sample_seed = P->seed;
    rp.max_tokens_hint = P->max_tokens;
    rp.tp = P->tp;
    rp.kv_cache_dtype = P->kv_cache_dtype;
    rp.kv_scale = P->kv_scale;
    rp.cuda_graphs = P->cuda_graphs;
    pb_status st = !strcmp(P->executor, "cpu") ? pb_executor_cpu_create(&P->model, &rp, &R->ex)
                                               : pb_executor_cuda_create(&P->model, &rp, &R->ex);
    if (st) snprintf(ce->msg, sizeof ce->msg, "executor %s: %s", P->executor, pb_status_str(st));
    return st;
}

/* The engine's parameters from the plan. */
static void engine_params(const plan *P, pb_engine_params *ep) {
    pb_engine_params_default(ep);
    ep->max_num_batched_tokens = P->max_tokens;
    ep->max_num_seqs = P->max_seqs;
    ep->max_model_len = P->model.max_len;
    ep->preemption = P->pmode;
    ep->step_mode = P->knobs.step_mode;
    ep->max_paddings = P->knobs.max_paddings;
    ep->seed = P->seed;
    ep->kv_bytes_per_token = pb_kv_bytes_per_token(&P->model, P->tp) * P->tp;
    ep->store_tokens = P->real;
    if (P->real) ep->vocab_size = P->model.vocab;   /* token ids must be inside the real model's vocabulary */
    ep->max_clock_s = P->max_clock_s;
    ep->fast_forward = P->fast_forward;
    ep->beam_scores = pb_beam_table_by_name(P->wc.beam_scores);   /* NULL: synthetic */
}

/* Run the engine over the trace; then the point's metrics, checks and side files
 * (point_out.h). */
static pb_status run_engine(point_run *R, const pb_point_ctx *pt, pb_point_metrics *out, char *err, size_t err_n) {
    const pb_system_spec *spec = &pt->exp->systems[pt->sys];
    pb_engine_params ep;
    engine_params(&R->P, &ep);
    pb_measure w = pb_measure_from_root(pt->root);
    R->m = pb_metrics_create(pt->timeline_path != NULL || pb_measure_needs_steps(&w));
    pb_trace none = {NULL, 0};
    const pb_trace *t = &R->trace;   /* the engine's arrivals, or the client's (client.h) */
    if (pb_client_active(&R->P.wc.client)) {
        if (!(R->client = pb_client_create(&R->trace, &R->P.wc.client, R->P.seed))) {
            snprintf(err, err_n, "workload: the client's settings are invalid");
            return PB_ERR_INVALID;
        }
        ep.source = pb_client_source(R->client);
        t = &none;
    }
    pb_status st = pb_engine_create(&ep, R->kv, R->policy, R->ex, &R->eng);
    if (!st) st = pb_engine_run(R->eng, t, R->m);
    if (!st && R->client) st = pb_client_check(R->client);
    if (st) {
        snprintf(err, err_n, "engine run failed: %s", pb_status_str(st));
        return st;
    }
    pb_policy_finalize(R->policy, R->m);
    if (R->policy->iface->prefix_caching || (R->P.type->paged && R->P.knobs.prefix_caching)) {
        pb_paged_cache_stats cs;
        pb_paged_cache_stats_get(R->kv, &cs);
        pb_metrics_set_prefix_cache(R->m, cs.hit_tokens, cs.query_tokens);
        if (R->P.n_tier_blocks > 0) {   /* hits per tier: the tokens found on the GPU and in the CPU tier */
            double q = (double)cs.query_tokens;
            pb_pm_set(out, "prefix_hit_pct_gpu", q > 0 ? 100.0 * (double)(cs.hit_tokens - cs.tier_hit_tokens) / q : NAN);
            pb_pm_set(out, "prefix_hit_pct_cpu", q > 0 ? 100.0 * (double)cs.tier_hit_tokens / q : NAN);
            pb_pm_set(out, "kv_tier_spills", (double)cs.tier_spills);
            pb_pm_set(out, "kv_tier_reloads", (double)cs.tier_reloads);
            pb_pm_set(out, "kv_tier_blocks", (double)R->P.n_tier_blocks);
        }
    }
    char title[256];
    snprintf(title, sizeof title, "%s (%s)", spec->label, pt->exp->name);
    if (R->dropped) pb_pm_set(out, "n_dropped", (double)R->dropped);
    st = pb_point_out_fill(pt, R->m, title, out, err, err_n);
    pb_pm_set(out, "kv_slots", (double)R->P.slots);
    pb_pm_set(out, "kv_blocks", (double)R->P.n_gpu_blocks);
    return st;
}

/* The point's policy, KV manager and executor, in R (its plan made). */
static pb_status build_parts(point_run *R, const pb_point_ctx *pt, char *err, size_t err_n) {
    pb_cfg_err ce;
    pb_cfg_err_clear(&ce);
    pb_status st = PB_OK;
    if ((st = pb_policy_create(R->P.policy, R->P.policy_opts->n_kids ? R->P.policy_opts : NULL, &R->policy, &ce)))
        return fail(err, err_n, st, "%s%s", ce.msg, "");   /* the policy: one options node, whatever named it */
    if ((st = make_kv(R, pt, err, err_n))) return st;
    if ((st = make_executor(R, &ce))) return fail(err, err_n, st, "%s%s", ce.msg, "");
    return PB_OK;
}

/* The point once, every step scaled by time_scale; totals (when not NULL) gets the sim's
   seconds per cost-model term (zeros under a real executor) and cost its cost model. */
static pb_status run_once(const pb_point_ctx *pt, double time_scale, pb_point_metrics *out, pb_sim_totals *totals,
                          pb_sim_cost *cost, char *err, size_t err_n) {
    pb_cfg_err ce;
    pb_cfg_err_clear(&ce);
    point_run R = {0};
    pb_status st = plan_point(pt->exp, pt->sys, pt->root, pt->system, &R.P, &ce);
    if (st) st = fail(err, err_n, st, "%s%s", ce.msg, "");
    R.P.sp.time_scale = time_scale;
    if (!st) st = make_trace(&R, err, err_n);
    if (!st) st = build_parts(&R, pt, err, err_n);
    if (!st) st = run_engine(&R, pt, out, err, err_n);
    if (!st && totals) {
        const pb_sim_totals *t = pb_executor_sim_totals(R.ex);
        if (t) *totals = *t;
        else memset(totals, 0, sizeof *totals);
        *cost = R.P.cost;
    }
    point_free(&R);
    return st;
}

pb_status pb_system_run_point(const pb_point_ctx *pt, pb_point_metrics *out, char *err, size_t err_n, void *user) {
    (void)user;
    pb_sim_totals tot;
    pb_sim_cost c;
    pb_status st = run_once(pt, 1, out, &tot, &c, err, err_n);
    pb_unc_method how = pb_unc_method_of(pt->exp, pt->root);
    if (st || how == PB_UNC_OFF || tot.steps == 0) return st;
    /* the error bars (uncertainty.h): the step-time factor interval of this run's terms */
    double lo, hi;
    pb_sim_step_factor(&c, &tot, PB_UNC_INTERVAL, &lo, &hi);
    pb_unc_set_factors(out, lo, hi);
    if (how != PB_UNC_REPLICAS) return PB_OK;
    pb_point_ctx quiet = *pt;   /* replicas write no side files */
    quiet.requests_path = quiet.timeline_path = NULL;
    pb_point_metrics *rep = pb_xcalloc(2, sizeof *rep);
    st = run_once(&quiet, lo, &rep[0], NULL, NULL, err, err_n);
    if (!st) st = run_once(&quiet, hi, &rep[1], NULL, NULL, err, err_n);
    if (!st) pb_unc_from_replicas(out, &rep[0], &rep[1]);
    free(rep);
    return st;
}

pb_status pb_system_build(const pb_point_ctx *pt, pb_system_parts *out, char *err, size_t err_n) {
    memset(out, 0, sizeof *out);
    pb_cfg_err ce;
    pb_cfg_err_clear(&ce);
    point_run R = {0};
    pb_status st = plan_point(pt->exp, pt->sys, pt->root, pt->system, &R.P, &ce);
    if (st) st = fail(err, err_n, st, "%s%s", ce.msg, "");
    if (!st) st = build_parts(&R, pt, err, err_n);
    if (st) {
        point_free(&R);
        return st;
    }
    engine_params(&R.P, &out->ep);
    out->kv = R.kv;
    out->policy = R.policy;
    out->ex = R.ex;
    out->model = R.P.model;
    out->real = R.P.real;
    snprintf(out->executor, sizeof out->executor, "%s", R.P.executor);
    out->n_gpu_blocks = R.P.n_gpu_blocks;
    R.kv = NULL;
    R.policy = NULL;
    R.ex = NULL;
    point_free(&R);
    return PB_OK;
}

pb_status pb_system_workload(const pb_point_ctx *pt, pb_trace *trace, pb_system_workload_info *info, char *err,
                             size_t err_n) {
    memset(info, 0, sizeof *info);
    pb_cfg_err ce;
    pb_cfg_err_clear(&ce);
    point_run R = {0};
    pb_status st = plan_point(pt->exp, pt->sys, pt->root, pt->system, &R.P, &ce);
    if (st) st = fail(err, err_n, st, "%s%s", ce.msg, "");
    if (!st) st = make_trace(&R, err, err_n);
    if (!st) {
        *trace = R.trace;
        R.trace = (pb_trace){NULL, 0};
        info->client = R.P.wc.client;
        info->dropped = R.dropped;
        info->max_model_len = R.P.model.max_len;
        info->seed = R.P.seed;
        snprintf(info->model, sizeof info->model, "%s", R.P.model.name);
    }
    point_free(&R);
    return st;
}

int pb_system_pick(const pb_experiment *e, const char *id) {
    if (id) {
        for (int i = 0; i < e->n_systems; i++)
            if (!strcmp(e->systems[i].id, id)) return i;
        return -1;
    }
    for (int i = 0; i < e->n_systems; i++)
        if (e->systems[i].type == PB_SYS_VLLM) return i;
    return 0;
}

void pb_system_parts_free(pb_system_parts *p) {
    pb_executor_destroy(p->ex);
    pb_policy_destroy(p->policy);
    pb_kv_destroy(p->kv);
    memset(p, 0, sizeof *p);
}
