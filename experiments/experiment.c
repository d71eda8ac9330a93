/* experiment.c -- the experiment YAML schema, loading and the sweep's point space. */
#include "experiment.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_manager.h"  /* PB_PAGED_BLOCK_SIZE, PB_PAGED_WATERMARK: the declared defaults */
#include "executor_sim.h"   /* pb_sim_cost_from_node, pb_sim_params_from_node */
#include "measure.h"        /* pb_measure_schema */
#include "kv_dtype.h"       /* PB_KV_CACHE_DTYPE_CHOICES */
#include "wquant.h"         /* PB_WEIGHTS_CHOICES */
#include "point_out.h"      /* pb_point_metric_known: columns, knee.metric */
#include "uncertainty.h"    /* PB_UNC_CHOICES */
#include "policy.h"         /* pb_policy_registry: the policies' options */
#include "spec.h"
#include "vllm_version.h"   /* PB_VLLM_VERSION_CHOICES */
#include "workload.h"        /* pb_workload_from_node */

/* ---- schema: every key of an experiment YAML, declared once (config.h pb_key) ---- */
static const pb_key AXIS_SCHEMA[] = {
    {.name = "axis", .type = PB_T_STR, .required = true,
     .doc = "CSV column name of the axis (request_rate, block_size, width)"},
    {.name = "set", .type = PB_T_STR, .required = true,
     .doc = "config path assigned each value (workload.rate, system.block_size)"},
    {.name = "values", .type = PB_T_NUM_LIST, .required = true, .doc = "the values, in plotting order"},
    {0},
};

static const pb_key SLO_SCHEMA[] = {
    {.name = "ttft_ms", .type = PB_T_NUM, .lo = 0, .hi = 1e12, .dflt = "0",
     .doc = "bound on time to first token, ms (docs/outputs.md; 0 = none)"},
    {.name = "tpot_ms", .type = PB_T_NUM, .lo = 0, .hi = 1e12, .dflt = "0",
     .doc = "bound on time per output token, ms (0 = none)"},
    {.name = "e2el_ms", .type = PB_T_NUM, .lo = 0, .hi = 1e12, .dflt = "0",
     .doc = "bound on end-to-end latency (arrival to last token), ms (0 = none)"},
    {0},
};

static const pb_key KNEE_SCHEMA[] = {
    {.name = "metric", .type = PB_T_STR, .dflt = "normalized_latency",
     .doc = "metric whose threshold crossing is the knee"},
    {.name = "threshold", .type = PB_T_NUM, .lo = 1e-9, .hi = 1e9, .dflt = "0.2",
     .doc = "knee threshold, in the metric's unit (s/token)"},
    {.name = "axis", .type = PB_T_STR, .dflt = "request_rate", .doc = "the axis the knee is found along"},
    {.name = "refine", .type = PB_T_INT, .lo = 0, .hi = 8, .dflt = "0",
     .doc = "rounds of extra points around each series' crossing (--quick: at most 1)"},
    {0},
};

static const pb_key QUICK_SCHEMA[] = {
    {.name = "set", .type = PB_T_LIST, .elem = PB_T_STR,
     .doc = "overrides applied by --quick (\"workload.duration_s=300\")"},
    {.name = "thin", .type = PB_T_INT, .lo = 1, .hi = 100, .dflt = "1",
     .doc = "--quick keeps every k-th value of each axis (and the last)"},
    {0},
};

const pb_key pb_executor_schema[] = {
    {.name = "type", .type = PB_T_ENUM, .required = true, .choices = "sim|cpu|cuda",
     .doc = "sim (cost model), cpu (tiny real model), cuda (real model)"},
    {.name = "fixed_latency_s", .type = PB_T_NUM, .lo = 0, .hi = 1e3, .dflt = "0", .scope = PB_SCOPE_REAL,
     .doc = "report this step latency instead of measuring it (a deterministic clock; 0 = measure)"},
    {.name = "kv_slots", .type = PB_T_INT, .lo = 0, .hi = 1e12, .dflt = "0",
     .doc = "KV space of every system, token slots (0 = the specs' rule; a system's kv_slots wins)"},
    {.name = "kv_mib", .type = PB_T_NUM, .lo = 0, .hi = 1 << 20, .scope = PB_SCOPE_REAL,
     .dflt_rule = "cpu " PB_XSTR(PB_SYSTEM_CPU_KV_MIB) ", cuda 0",
     .doc = "cap of the KV cache, MiB per GPU (0 = none; the A100 budget of a tiny model is GiBs of host buffers)"},
    {.name = "swap_slots", .type = PB_T_INT, .lo = 0, .hi = 1e12, .scope = PB_SCOPE_REAL,
     .dflt_rule = "as large as the KV space, at most swap_space_gib", .doc = "swap pool, token slots"},
    {0},
};

#define FROM_ENGINE "the engine version's (engine/vllm_version.h)"

const pb_key pb_system_entry_schema[] = {
    {.name = "name", .type = PB_T_STR, .required = true,
     .doc = "id of the series (CSV `system` column): vllm, orca_oracle, ft"},
    {.name = "label", .type = PB_T_STR, .dflt_rule = "the name", .doc = "legend label, e.g. \"Orca (Oracle)\""},
    {.name = "type", .type = PB_T_ENUM, .required = true, .choices = PB_SYSTEM_TYPES,
     .doc = "paged vLLM, Orca over a buddy allocator, FasterTransformer"},
    {.name = "tags", .type = PB_T_MAP, .doc = "constant CSV columns of this series (mode: swap)"},
    {.name = "sweep", .type = PB_T_MAP, .doc = "axis -> values overriding the experiment's for this system"},
    /* options (read by system.c); each policy's own options are added by pb_system_entry_keys */
    {.name = "block_size", .type = PB_T_INT, .lo = 1, .hi = 4096, .dflt = PB_XSTR(PB_PAGED_BLOCK_SIZE),
     .scope = PB_SCOPE_VLLM, .doc = "tokens per KV block"},
    {.name = "preemption", .type = PB_T_ENUM, .choices = "auto|swap|recompute", .dflt_rule = FROM_ENGINE,
     .scope = PB_SCOPE_VLLM, .doc = "auto = recompute single-sequence groups, swap multi-sequence ones"},
    {.name = "reservation", .type = PB_T_ENUM, .choices = "oracle|pow2|max",
     .dflt_rule = "the type's (pagedbench list: system types)", .scope = PB_SCOPE_ORCA | PB_SCOPE_FT,
     .doc = "output slots reserved per request (ft: max only)"},
    {.name = "watermark", .type = PB_T_NUM, .lo = 0, .hi = 0.5, .dflt_rule = FROM_ENGINE,
     .scope = PB_SCOPE_VLLM, .doc = "free-block fraction kept at admission"},
    {.name = "engine", .type = PB_T_ENUM, .choices = PB_VLLM_VERSION_CHOICES, .dflt = "v0.1", .scope = PB_SCOPE_VLLM,
     .doc = "vLLM version whose knobs apply (v0.1: the paper's, v1: the V1 engine; table: engine/vllm_version.h)"},
    {.name = "step_mode", .type = PB_T_ENUM, .choices = "mixed|alternate|chunked", .dflt_rule = FROM_ENGINE,
     .scope = PB_SCOPE_VLLM,
     .doc = "mixed prompt+decode steps, prompt-only and decode-only steps, or V1's chunked token-budget steps"},
    {.name = "prefix_caching", .type = PB_T_BOOL, .dflt_rule = FROM_ENGINE, .scope = PB_SCOPE_VLLM,
     .doc = "automatic prefix caching: computed full blocks cached by content, LRU eviction"},
    {.name = "async_scheduling", .type = PB_T_BOOL, .dflt_rule = FROM_ENGINE, .scope = PB_SCOPE_VLLM,
     .doc = "sim: host work of a step overlaps the GPU work of the one before (step = max(host, GPU) + sync)"},
    {.name = "cuda_graphs", .type = PB_T_BOOL, .dflt_rule = FROM_ENGINE, .scope = PB_SCOPE_VLLM,
     .doc = "decode batches run as CUDA graphs: v0.x as v0.2.6 (decode steps of <= 256 sequences padded to "
            "1, 2, 4, 8, 16, ..., 256; sim and cuda executor, executors/graph_pool.h), v1 FULL / PIECEWISE "
            "(sim: launch cost; v1 KV rule: the graph memory)"},
    {.name = "custom_allreduce", .type = PB_T_BOOL, .dflt_rule = FROM_ENGINE, .scope = PB_SCOPE_VLLM,
     .doc = "sim: tensor-parallel all-reduces through vLLM's own kernels (custom all-reduce, symmetric memory, "
            "FlashInfer; hardware custom_allreduce_tpN_*) instead of NCCL (allreduce_tpN_*)"},
    {.name = "fuse_allreduce_rms", .type = PB_T_BOOL, .dflt_rule = FROM_ENGINE, .scope = PB_SCOPE_VLLM,
     .doc = "sim: tp 2/4/8 steps up to the hardware's allreduce_norm_fusion_tpN_MB run the layers' residual "
            "adds and RMSNorms inside their all-reduce kernels (V1's FlashInfer fusion; Llama-family models)"},
    {.name = "flash_attn_version", .type = PB_T_ENUM, .choices = PB_FLASH_VERSION_CHOICES, .dflt_rule = FROM_ENGINE,
     .scope = PB_SCOPE_VLLM,
     .doc = "sim: FlashAttention version of the flash kernel (V1's): 3 prices prefills at hardware "
            "flash3_prefill_flops_efficiency (FA3, Hopper), auto = 3 where the GPU has it, else 2"},
    {.name = "max_paddings", .type = PB_T_INT, .lo = -1, .hi = 1 << 24, .dflt_rule = FROM_ENGINE,
     .scope = PB_SCOPE_VLLM, .doc = "alternate steps: padding cap of a padded prompt batch (-1 = unpadded)"},
    {.name = "max_num_batched_tokens", .type = PB_T_INT, .lo = 1, .hi = 1 << 24, .dflt_rule = FROM_ENGINE,
     .doc = "tokens per step cap"},
    {.name = "max_num_seqs", .type = PB_T_INT, .lo = 1, .hi = 1 << 20, .dflt_rule = FROM_ENGINE,
     .doc = "sequences per step cap"},
    {.name = "kv_profile_tokens", .type = PB_T_INT, .lo = 1, .hi = 1 << 24, .dflt_rule = FROM_ENGINE,
     .doc = "tokens of the KV rule's activation pass (engine/spec.h)"},
    {.name = "gpu_mem_util", .type = PB_T_NUM, .lo = 0.05, .hi = 1.0, .dflt_rule = FROM_ENGINE,
     .doc = "fraction of GPU memory usable"},
    {.name = "swap_space_gib", .type = PB_T_NUM, .lo = 0, .hi = 4096, .dflt = "20", .scope = PB_SCOPE_VLLM,
     .doc = "CPU swap space per GPU, GiB"},
    {.name = "kv_cpu_tier_gib", .type = PB_T_NUM, .lo = 0, .hi = 1 << 20, .dflt = "0", .scope = PB_SCOPE_VLLM,
     .doc = "CPU tier of the prefix cache per GPU, GiB: cached blocks evicted from the GPU spill there and "
            "a later hit reloads them over PCIe (needs prefix caching: policy prefix-cache or engine v1; 0 = off)"},
    {.name = "kv_cache_dtype", .type = PB_T_ENUM, .choices = PB_KV_CACHE_DTYPE_CHOICES, .dflt = "auto",
     .scope = PB_SCOPE_VLLM,
     .doc = "KV-cache elements: auto (the model's dtype) or fp8 (1 byte: twice the KV slots, half the KV traffic; "
            "kernels/kv_dtype.h)"},
    {.name = "kv_scale", .type = PB_T_NUM, .lo = 1e-30, .hi = 1e30, .dflt = "1.0", .scope = PB_SCOPE_VLLM,
     .doc = "fp8 KV cache per-tensor scale, stored = fp8(x / kv_scale) (an fp8 kv_cache_dtype only)"},
    {.name = "weights", .type = PB_T_ENUM, .choices = PB_WEIGHTS_CHOICES, .dflt = "fp16",
     .doc = "linear layers' weight format: fp16 (the model's dtype), int8 / fp8 (1 byte, per-channel scale), "
            "int4-awq / int4-gptq (4 bits, groups of 128): smaller weights, more KV slots, the GEMMs' bytes and "
            "dequantization (sim only; kernels/wquant.h)"},
    {.name = "sim", .type = PB_T_MAP,
     .doc = "cost model: {attention_kernel: paged|contiguous, framework: python|cpp, profile: csv}"},
    {.name = "policy", .type = PB_T_STR, .dflt_rule = "the type's (pagedbench list: system types)",
     .doc = "scheduler policy by name; its options are keys of this map (list --keys: options of the policies)"},
    {.name = "kv_slots", .type = PB_T_INT, .lo = 0, .hi = 1e12, .dflt = "0",
     .doc = "override the KV space, token slots (0 = from the specs)"},
    {.name = "max_clock_s", .type = PB_T_NUM, .lo = 0, .hi = 1e9, .dflt = "0",
     .doc = "stop a run at this simulated time (0 = never)"},
    {0},
};

const pb_key pb_experiment_schema[] = {
    {.name = "name", .type = PB_T_STR, .required = true, .doc = "unique experiment id (results/points/<name>/)"},
    {.name = "figure", .type = PB_T_STR, .required = true, .doc = "figure id, e.g. fig12 (results/<figure>.csv)"},
    {.name = "panel", .type = PB_T_STR, .dflt = "", .doc = "CSV `panel` value, e.g. a"},
    {.name = "title", .type = PB_T_STR, .dflt_rule = "the name", .doc = "panel title for the plot"},
    {.name = "description", .type = PB_T_STR, .dflt = "",
     .doc = "what this reproduces; choices where the paper is silent"},
    {.name = "seed", .type = PB_T_INT, .lo = 0, .hi = 9.007199254740992e15, .dflt = "0",
     .doc = "seed of all randomness"},
    {.name = "model", .type = PB_T_MAP, .required = true,
     .doc = "model spec name (experiments/models/) or an inline spec"},
    {.name = "hardware", .type = PB_T_MAP, .required = true,
     .doc = "hardware spec name (experiments/hardware/) or inline"},
    {.name = "gpus", .type = PB_T_INT, .lo = 1, .hi = 1024, .dflt = "1", .doc = "tensor-parallel degree"},
    {.name = "executor", .type = PB_T_ENUM, .choices = "sim|cpu|cuda", .dflt = "sim",
     .doc = "sim (cost model), cpu (tiny real model), cuda; or a map {type, ...} (`executor.` keys)"},
    {.name = "fast_forward", .type = PB_T_BOOL, .dflt = "true",
     .doc = "replay steady decode steps in bulk (engine fast path); false runs the step-by-step reference"},
    {.name = "workload", .type = PB_T_MAP, .required = true, .doc = "the trace (schema: workloads/)"},
    {.name = "sweep", .type = PB_T_LIST, .sub = AXIS_SCHEMA, .doc = "sweep axes {axis, set, values}"},
    {.name = "systems", .type = PB_T_LIST, .required = true, .sub = pb_system_entry_schema, .doc = "systems compared"},
    {.name = "tags", .type = PB_T_MAP, .doc = "constant CSV columns (dataset: alpaca)"},
    {.name = "columns", .type = PB_T_LIST, .elem = PB_T_STR, .doc = "leading CSV columns of the figure"},
    {.name = "knee", .type = PB_T_MAP, .sub = KNEE_SCHEMA, .doc = "knee detection settings"},
    {.name = "slo", .type = PB_T_MAP, .sub = SLO_SCHEMA, .doc = "latency SLO for goodput and the slo_met check"},
    {.name = "uncertainty", .type = PB_T_ENUM, .choices = PB_UNC_CHOICES, .dflt = "auto",
     .doc = "error bars (experiments/uncertainty.h): auto (rate for a rate sweep, else replicas), rate, replicas, off"},
    {.name = "measure", .type = PB_T_MAP, .sub = pb_measure_schema,
     .doc = "measurement window: the requests and steps averaged, and the step formulas (experiments/measure.h)"},
    {.name = "percentiles", .type = PB_T_LIST, .lo = 0, .hi = 100, .elem = PB_T_NUM,
     .doc = "latency percentiles each point reports, at most 8 (absent: 50, 90, 99; vLLM's --metric-percentiles)"},
    {.name = "quick", .type = PB_T_MAP, .sub = QUICK_SCHEMA, .doc = "what --quick changes"},
    {.name = "cost_model", .type = PB_T_MAP,
     .doc = "sim: overrides of the hardware's cost_model: keys for this experiment (executors/executor_sim.h)"},
    {.name = "length_scale", .type = PB_T_NUM, .lo = 1e-6, .hi = 1, .dflt = "1",
     .doc = "multiply every prompt and output length (rounded up): fits a trace to a tiny model"},
    {.name = "clamp_to_max_len", .type = PB_T_BOOL, .dflt = "false",
     .doc = "cut prompts to max_len - 1 and outputs to what is left of max_len (false: longer prompts are dropped "
            "from the trace for every system, n_dropped)"},
    {.name = "allow_rejected", .type = PB_T_BOOL, .dflt = "false",
     .doc = "accept points where requests were rejected or left unfinished (complete 0): the run exits 0, not 1"},
    {0},
};

const pb_key *pb_system_entry_keys(pb_key out[PB_SYSTEM_MAX_KEYS]) {
    int n = 0;
    for (const pb_key *k = pb_system_entry_schema; k->name; k++) out[n++] = *k;
    for (const pb_policy_entry *e = pb_policy_registry; e->name; e++)
        for (const pb_policy_option *o = e->keys->options; o && o->name; o++) {
            bool seen = false;   /* taken by an earlier policy too (declared alike: pb_policy_registry_check) */
            for (int i = 0; i < n && !seen; i++) seen = !strcmp(out[i].name, o->name);
            if (seen) continue;
            PB_ASSERT(n < PB_SYSTEM_MAX_KEYS - 1);
            out[n++] = pb_policy_option_key(o);
        }
    out[n] = (pb_key){0};
    return out;
}

/* ---- helpers ---- */
const char *pb_experiment_executor_type(const pb_node *root) {
    const pb_node *x = pb_node_get(root, "executor");
    if (x && x->kind == PB_NODE_MAP) return pb_schema_str(pb_executor_schema, x, "type");
    return pb_schema_str(pb_experiment_schema, root, "executor");
}

void pb_fmt_num(char *buf, size_t n, double v) {
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

static void buf_add(char **buf, size_t *len, size_t *cap, const char *s, size_t l) {
    if (*len + l + 1 > *cap) {
        *cap = (*len + l + 1) * 2 + 256;
        *buf = pb_xrealloc(*buf, *cap);
    }
    memcpy(*buf + *len, s, l);
    *len += l;
    (*buf)[*len] = 0;
}

void pb_node_dump(const pb_node *n, char **buf, size_t *len, size_t *cap) {
    if (!n) { buf_add(buf, len, cap, "~", 1); return; }
    switch (n->kind) {
    case PB_NODE_SCALAR:
        buf_add(buf, len, cap, "'", 1);
        buf_add(buf, len, cap, n->value, strlen(n->value));
        buf_add(buf, len, cap, "'", 1);
        break;
    case PB_NODE_MAP:
        buf_add(buf, len, cap, "{", 1);
        for (int i = 0; i < n->n_kids; i++) {
            if (i) buf_add(buf, len, cap, ",", 1);
            buf_add(buf, len, cap, n->kids[i]->key, strlen(n->kids[i]->key));
            buf_add(buf, len, cap, ":", 1);
            pb_node_dump(n->kids[i], buf, len, cap);
        }
        buf_add(buf, len, cap, "}", 1);
        break;
    case PB_NODE_SEQ:
        buf_add(buf, len, cap, "[", 1);
        for (int i = 0; i < n->n_kids; i++) {
            if (i) buf_add(buf, len, cap, ",", 1);
            pb_node_dump(n->kids[i], buf, len, cap);
        }
        buf_add(buf, len, cap, "]", 1);
        break;
    }
}

static int read_tags(const pb_node *m, pb_tag *tags, int max, pb_cfg_err *err) {
    int k = 0;
    if (!m) return 0;
    for (int i = 0; i < m->n_kids; i++) {
        const pb_node *v = m->kids[i];
        if (v->kind != PB_NODE_SCALAR) {
            pb_cfg_fail(err, v, false, "tags.%s: expected a scalar value", v->key);
            return -1;
        }
        if (k == max) {
            pb_cfg_fail(err, v, true, "tags: at most %d tags", max);
            return -1;
        }
        tags[k].name = v->key;
        tags[k].value = v->value;
        k++;
    }
    return k;
}

/* Schema + the sections other modules own (model, hardware, workload, cost model,
 * each system's sim map), so that a bad value is a config error (exit 2) before any
 * point runs.  Used on the loaded tree and on every resolved point. */
pb_status pb_experiment_validate_tree(const pb_node *root, pb_cfg_err *err) {
    {
        /* the schema with each system's keys and the policies' options
           (pb_system_entry_keys); `executor:` is a scalar (sim|cpu|cuda) or a map
           {type, ...}: a map is validated against pb_executor_schema and the rest
           against the schema with that entry relaxed to "any map" */
        pb_key sys_keys[PB_SYSTEM_MAX_KEYS], keys[64];
        pb_system_entry_keys(sys_keys);
        const pb_node *exn = pb_node_get(root, "executor");
        bool exmap = exn && exn->kind == PB_NODE_MAP;
        int nk = 0;
        for (const pb_key *k = pb_experiment_schema; k->name; k++, nk++) {
            PB_ASSERT(nk < (int)PB_ARRAY_LEN(keys) - 1);
            keys[nk] = *k;
            if (!strcmp(k->name, "systems")) keys[nk].sub = sys_keys;
            if (exmap && !strcmp(k->name, "executor")) { keys[nk].type = PB_T_MAP; keys[nk].choices = NULL; }
        }
        keys[nk] = (pb_key){0};
        pb_status s1 = pb_config_validate(root, keys, "", err);
        pb_status s2 = exmap ? pb_config_validate(exn, pb_executor_schema, "executor", err) : PB_OK;
        if (s1 || s2) return PB_ERR_INVALID;
    }
    /* the sections other modules own: validate them now, so that a bad value is a
       config error (exit 2) before any point runs */
    {
        pb_model m;
        pb_hw h;
        pb_workload_cfg w;
        pb_status s1 = pb_model_from_node(pb_node_get(root, "model"), &m, err);
        pb_status s2 = pb_hw_from_node(pb_node_get(root, "hardware"), &h, err);
        pb_status s3 = pb_workload_from_node(pb_node_get(root, "workload"), &w, err);
        pb_status s4 = PB_OK;
        if (!strcmp(pb_experiment_executor_type(root), "sim")) {
            pb_sim_cost cost;
            s4 = pb_sim_cost_from_node(pb_node_get(root, "hardware"), &cost, err);
        }
        const pb_node *sy = pb_node_get(root, "systems");
        for (int i = 0; sy && i < sy->n_kids; i++) {
            const pb_node *simn = pb_node_get(sy->kids[i], "sim");
            pb_sim_params sp = pb_sim_params_default();
            if (simn && pb_sim_params_from_node(simn, &sp, err)) s4 = PB_ERR_INVALID;
        }
        const pb_node *cm = pb_node_get(root, "cost_model");
        if (cm && strcmp(pb_experiment_executor_type(root), "sim"))
            s4 = pb_cfg_fail(err, cm, true, "cost_model: only the sim executor has a cost model (executor: %s)",
                             pb_experiment_executor_type(root));
        if (s1 || s2 || s3 || s4) return PB_ERR_INVALID;
    }
    return PB_OK;
}

/* Names used in file names (results/points/<experiment>/<system>-...): at most
   PB_NAME_MAX bytes, so that every file made of them (a temporary's name adds ~60)
   stays under the 255 bytes of a file name. */
bool pb_name_ok(const char *s) {
    if (!s || strlen(s) > PB_NAME_MAX) return false;
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9'))) return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '.' ||
              *s == '_' || *s == '-'))
            return false;
    return true;
}

/* One --set.  `model=NAME` / `hardware=NAME` replace the spec as the YAML's
 * `model: NAME` does (the spec file is included again); `model.name` and
 * `hardware.name` would relabel a spec without changing it, so they are refused. */
static pb_status apply_set(pb_config *c, const char *asg, pb_cfg_err *err) {
    static const char *const SPECS[] = {"model", "hardware"};
    for (size_t i = 0; i < PB_ARRAY_LEN(SPECS); i++) {
        size_t l = strlen(SPECS[i]);
        if (!strncmp(asg, SPECS[i], l) && !strncmp(asg + l, ".name=", 6)) {
            pb_cfg_fail(err, &(pb_node){.file = "--set", .line = 1, .col = 1}, false,
                        "%s.name: the name of a spec is a label of its file; choose another spec with "
                        "--set %s=<name> (experiments/%s%s/)", SPECS[i], SPECS[i], SPECS[i],
                        i == 0 ? "s" : "");
            return PB_ERR_INVALID;
        }
    }
    pb_status st = pb_config_set(c, asg, err);
    if (st) return st;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/models", pb_spec_dir());
    if ((st = pb_config_include(c, "model", dir, err))) return st;
    snprintf(dir, sizeof dir, "%s/hardware", pb_spec_dir());
    return pb_config_include(c, "hardware", dir, err);
}

/* An axis' set path: a numeric key of the schema it lands in (a.b: key b of map a). */
static bool numeric_key(const pb_key *schema, const char *name) {
    size_t l = strcspn(name, ".");
    for (const pb_key *k = schema; k->name; k++) {
        if (strlen(k->name) != l || strncmp(k->name, name, l)) continue;
        if (name[l]) return k->type == PB_T_MAP && k->sub && numeric_key(k->sub, name + l + 1);
        return k->type == PB_T_INT || k->type == PB_T_NUM ||
               (k->type == PB_T_ENUM && k->choices[0] >= '0' && k->choices[0] <= '9');   /* shots: 1|5 */
    }
    return false;
}
static bool set_path_ok(const char *set) {
    if (!strcmp(set, "gpus") || !strcmp(set, "seed") || !strcmp(set, "length_scale")) return true;
    pb_key sys_keys[PB_SYSTEM_MAX_KEYS];
    if (!strncmp(set, "system.", 7)) return numeric_key(pb_system_entry_keys(sys_keys), set + 7);
    if (!strncmp(set, "workload.", 9)) return numeric_key(pb_workload_schema, set + 9);
    if (!strncmp(set, "executor.", 9)) return numeric_key(pb_executor_schema, set + 9);
    if (!strncmp(set, "cost_model.", 11)) return set[11] != 0 && !strchr(set + 11, ' ');
    return false;
}

/* ---- load ---- */
/* Apply quick.set to c, each item at its own line: an item that does not apply is an
 * error there, and what it assigns reports any later error there too (not at "--set").
 * The items' nodes belong to another config, which an assignment into c cannot replace. */
static pb_status apply_quick_sets(pb_config *c, const pb_node *qs, pb_cfg_err *err) {
    pb_status all = PB_OK;
    for (int i = 0; qs && qs->kind == PB_NODE_SEQ && i < qs->n_kids; i++) {
        const pb_node *it = qs->kids[i];
        if (it->kind != PB_NODE_SCALAR) continue;   /* the schema says so */
        pb_cfg_err sub;
        pb_cfg_err_clear(&sub);
        if (apply_set(c, it->value, &sub)) {
            const char *m = sub.msg;
            if (!strncmp(m, "--set:", 6) && strstr(m, ": ")) m = strstr(m, ": ") + 2;   /* "--set:1:c: why" */
            all = pb_cfg_fail(err, it, false, "quick.set.%d: '%s': %s", i, it->value, m);
            continue;
        }
        char path[512];
        snprintf(path, sizeof path, "%.*s", (int)strcspn(it->value, "="), it->value);
        for (pb_node *n = (pb_node *)pb_node_get(pb_config_root(c), path); n && n->file && !strcmp(n->file, "--set");
             n = n->parent) {
            n->file = it->file;
            n->line = n->key_line = it->line;
            n->col = n->key_col = it->col;
        }
    }
    return all;
}

/* The file's tree: models and hardware included, then --quick's overrides (first, so
 * that an explicit --set wins), then the --set assignments; validated.  Without
 * --quick, quick.set is still applied to a copy and checked, so that a bad item is an
 * error on every run, at its own line. */
static pb_status load_tree(const char *path, const char *const *sets, int n_sets, bool quick, pb_config **out,
                           pb_cfg_err *err) {
    *out = NULL;
    pb_config *c = NULL;
    pb_status st = pb_config_load(path, &c, err);
    if (st) return st;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/models", pb_spec_dir());
    st = pb_config_include(c, "model", dir, err);
    snprintf(dir, sizeof dir, "%s/hardware", pb_spec_dir());
    if (!st) st = pb_config_include(c, "hardware", dir, err);
    pb_config *orig = st ? NULL : pb_config_clone(c);   /* quick.set's items, as written */
    const pb_node *qs = orig ? pb_node_get(pb_config_root(orig), "quick.set") : NULL;
    if (!st && quick) st = apply_quick_sets(c, qs, err);
    for (int i = 0; i < n_sets && !st; i++) st = apply_set(c, sets[i], err);
    if (!st) st = pb_experiment_validate_tree(pb_config_root(c), err);
    if (!st && !quick && qs) {
        pb_config *q = pb_config_clone(c);
        st = apply_quick_sets(q, qs, err);
        if (!st) st = pb_experiment_validate_tree(pb_config_root(q), err);
        pb_config_destroy(q);
    }
    pb_config_destroy(orig);
    if (st) {
        pb_config_destroy(c);
        return st;
    }
    *out = c;
    return PB_OK;
}

/* A name used in file names (name, figure, systems.N.name): false (and an error) if bad. */
static bool name_ok(const pb_node *parent, const char *key, const char *what, const char *v, pb_cfg_err *err) {
    if (pb_name_ok(v)) return true;
    if (strlen(v) > PB_NAME_MAX)
        pb_cfg_fail(err, pb_node_get(parent, key), false, "%s: '%.32s...' (%zu characters) is used in file names: at "
                    "most %d characters", what, v, strlen(v), PB_NAME_MAX);
    else
        pb_cfg_fail(err, pb_node_get(parent, key), false,
                    "%s: '%s' is used in file names: it must match [A-Za-z0-9][A-Za-z0-9._-]*", what, v);
    return false;
}

/* The top-level scalars: names, knee, --quick's thinning, tags and columns. */
static pb_status read_header(pb_experiment *e, const pb_node *root, bool quick, pb_cfg_err *err) {
    const pb_key *S = pb_experiment_schema;
    e->name = pb_schema_str(S, root, "name");
    if (!name_ok(root, "name", "name", e->name, err)) return PB_ERR_INVALID;
    e->figure = pb_schema_str(S, root, "figure");
    if (!name_ok(root, "figure", "figure", e->figure, err)) return PB_ERR_INVALID;
    e->panel = pb_schema_str(S, root, "panel");
    e->title = pb_schema_str_or(S, root, "title", e->name);
    e->executor = pb_experiment_executor_type(root);
    e->seed = (uint64_t)pb_schema_int(S, root, "seed");
    e->gpus = (int)pb_schema_int(S, root, "gpus");
    e->knee_metric = pb_schema_str(S, root, "knee.metric");
    e->knee_threshold = pb_schema_num(S, root, "knee.threshold");
    e->knee_axis = pb_schema_str(S, root, "knee.axis");
    e->quick_thin = quick ? (int)pb_schema_int(S, root, "quick.thin") : 1;
    e->knee_refine = (int)pb_schema_int(S, root, "knee.refine");
    e->allow_rejected = pb_schema_bool(S, root, "allow_rejected");
    if (quick && e->knee_refine > 1) e->knee_refine = 1;

    const pb_node *qs = pb_node_get(root, "quick.set");
    for (int i = 0; quick && qs && i < qs->n_kids && i < 16; i++) e->quick_sets[e->n_quick_sets++] = qs->kids[i]->value;

    int nt = read_tags(pb_node_get(root, "tags"), e->tags, PB_EXP_MAX_TAGS, err);
    if (nt < 0) return PB_ERR_INVALID;
    e->n_tags = nt;

    const pb_node *pc = pb_node_get(root, "percentiles");
    if (pc && pc->n_kids > 8) return pb_cfg_fail(err, pc->kids[8], false, "percentiles: at most 8");
    if (pc && pc->n_kids == 0) return pb_cfg_fail(err, pc, false, "percentiles: name at least one (e.g. [50, 99])");

    const pb_node *cols = pb_node_get(root, "columns");
    for (int i = 0; cols && i < cols->n_kids; i++) {
        if (i == PB_EXP_MAX_COLUMNS) return pb_cfg_fail(err, cols->kids[i], false, "columns: at most %d", PB_EXP_MAX_COLUMNS);
        e->columns[e->n_columns++] = cols->kids[i]->value;
    }
    return PB_OK;
}

/* sweep: the axes, each named once and assigning a numeric key. */
static pb_status read_axes(pb_experiment *e, const pb_node *root, pb_cfg_err *err) {
    const pb_node *sw = pb_node_get(root, "sweep");
    for (int i = 0; sw && i < sw->n_kids; i++) {
        const pb_node *ax = sw->kids[i];
        if (i == PB_EXP_MAX_AXES) return pb_cfg_fail(err, ax, false, "sweep: at most %d axes", PB_EXP_MAX_AXES);
        pb_axis *a = &e->axes[e->n_axes++];
        a->axis = pb_schema_str(AXIS_SCHEMA, ax, "axis");
        a->set = pb_schema_str(AXIS_SCHEMA, ax, "set");
        a->n = pb_node_num_list(ax, "values", &a->values);
        for (const char *c = a->axis; *c; c++)   /* a CSV column's name, and a line of the point files */
            if ((unsigned char)*c < ' ')
                return pb_cfg_fail(err, pb_node_get(ax, "axis"), false, "sweep.%d.axis: a control character in '%s'",
                                   i, a->axis);
        for (int j = 0; j < i; j++)
            if (!strcmp(e->axes[j].axis, a->axis))
                return pb_cfg_fail(err, pb_node_get(ax, "axis"), false, "sweep.%d.axis: '%s' appears twice", i, a->axis);
        if (!set_path_ok(a->set))
            return pb_cfg_fail(err, pb_node_get(ax, "set"), false,
                               "sweep.%d.set: '%s' must start with system., workload., executor. or cost_model. and "
                               "name a numeric key (or be gpus, seed or length_scale)", i, a->set);
    }
    return PB_OK;
}

/* systems.i.sweep: per-axis values replacing the experiment's for system s. */
static pb_status read_system_sweep(pb_experiment *e, pb_system_spec *s, int i, const pb_node *ov, pb_cfg_err *err) {
    for (int k = 0; ov && k < ov->n_kids; k++) {
        const pb_node *v = ov->kids[k];
        int a = -1;
        for (int j = 0; j < e->n_axes; j++)
            if (!strcmp(e->axes[j].axis, v->key)) a = j;
        if (a < 0) return pb_cfg_fail(err, v, true, "systems.%d.sweep.%s: no such sweep axis", i, v->key);
        double x;
        if (v->kind == PB_NODE_SCALAR ? !pb_parse_num(v->value, &x) : v->kind != PB_NODE_SEQ)
            return pb_cfg_fail(err, v, false, "systems.%d.sweep.%s: expected a number or a list of numbers", i, v->key);
        if (v->kind == PB_NODE_SEQ && v->n_kids == 0)
            return pb_cfg_fail(err, v, false, "systems.%d.sweep.%s: the list is empty", i, v->key);
        for (int j = 0; v->kind == PB_NODE_SEQ && j < v->n_kids; j++)
            if (v->kids[j]->kind != PB_NODE_SCALAR || v->kids[j]->quoted || !pb_parse_num(v->kids[j]->value, &x))
                return pb_cfg_fail(err, v->kids[j], false, "systems.%d.sweep.%s.%d: expected a number, got '%s'", i,
                                   v->key, j, v->kids[j]->kind == PB_NODE_SCALAR ? v->kids[j]->value : "a map or list");
        free(s->values[a]);
        s->n_values[a] = pb_node_num_list(ov, v->key, &s->values[a]);
        if (s->n_values[a] == 0) return pb_cfg_fail(err, v, false, "systems.%d.sweep.%s: no numbers", i, v->key);
    }
    return PB_OK;
}

/* systems.i: id (unique), label, type, tags and sweep overrides. */
static pb_status read_system(pb_experiment *e, int i, const pb_node *sn, pb_cfg_err *err) {
    if (i == PB_EXP_MAX_SYSTEMS) return pb_cfg_fail(err, sn, false, "systems: at most %d", PB_EXP_MAX_SYSTEMS);
    pb_system_spec *s = &e->systems[e->n_systems++];
    s->node = sn;
    s->id = pb_schema_str(pb_system_entry_schema, sn, "name");
    char what[64];
    snprintf(what, sizeof what, "systems.%d.name", i);
    if (!name_ok(sn, "name", what, s->id, err)) return PB_ERR_INVALID;
    s->label = pb_schema_str_or(pb_system_entry_schema, sn, "label", s->id);
    const char *t = pb_schema_str(pb_system_entry_schema, sn, "type");
    s->type = !strcmp(t, "orca") ? PB_SYS_ORCA : !strcmp(t, "ft") ? PB_SYS_FT : PB_SYS_VLLM;
    for (int j = 0; j < i; j++)
        if (!strcmp(e->systems[j].id, s->id))
            return pb_cfg_fail(err, pb_node_get(sn, "name"), false, "systems.%d.name: '%s' appears twice", i, s->id);
    int nt = read_tags(pb_node_get(sn, "tags"), s->tags, PB_EXP_MAX_TAGS, err);
    if (nt < 0) return PB_ERR_INVALID;
    s->n_tags = nt;
    return read_system_sweep(e, s, i, pb_node_get(sn, "sweep"), err);
}

static pb_status read_systems(pb_experiment *e, const pb_node *root, pb_cfg_err *err) {
    const pb_node *sy = pb_node_get(root, "systems");
    if (!sy || sy->n_kids == 0) return pb_cfg_fail(err, sy ? sy : root, false, "systems: at least one system is needed");
    for (int i = 0; i < sy->n_kids; i++)
        if (read_system(e, i, sy->kids[i], err)) return PB_ERR_INVALID;
    return PB_OK;
}

/* The grid's size: at most PB_EXP_MAX_POINTS points (all systems), else an error at
   the longest value list (a system's own, or the experiment's). */
static pb_status check_size(const pb_experiment *e, pb_cfg_err *err) {
    double total = 0;
    int longest = 0;
    const pb_node *blame = NULL;
    for (int s = 0; s < e->n_systems; s++) {
        double np = 1;
        for (int a = 0; a < e->n_axes; a++) {
            const double *v;
            int n = pb_experiment_axis_values(e, s, a, &v);
            np *= n;
            if (n > longest) {
                longest = n;
                char path[256];
                snprintf(path, sizeof path, "sweep.%s", e->axes[a].axis);
                blame = e->systems[s].values[a] ? pb_node_get(e->systems[s].node, path) : NULL;
                snprintf(path, sizeof path, "sweep.%d.values", a);
                if (!blame) blame = pb_node_get(pb_config_root(e->cfg), path);
            }
        }
        total += np;
    }
    if (total <= PB_EXP_MAX_POINTS) return PB_OK;
    return pb_cfg_fail(err, blame ? blame : pb_config_root(e->cfg), false,
                       "sweep: %d values here make %.0f points (%d systems), above the cap of %d points per "
                       "experiment: split the sweep into several experiments", longest, total, e->n_systems,
                       PB_EXP_MAX_POINTS);
}

/* The name of a column every row has, or NULL: panel system label experiment figure,
   an axis, a tag of the experiment or of a system, a metric of a serving point. */
static bool column_known(const pb_experiment *e, const char *c) {
    static const char *const FIXED[] = {"panel", "system", "label", "experiment", "figure"};
    for (size_t i = 0; i < PB_ARRAY_LEN(FIXED); i++)
        if (!strcmp(FIXED[i], c)) return true;
    for (int a = 0; a < e->n_axes; a++)
        if (!strcmp(e->axes[a].axis, c)) return true;
    for (int t = 0; t < e->n_tags; t++)
        if (!strcmp(e->tags[t].name, c)) return true;
    for (int s = 0; s < e->n_systems; s++)
        for (int t = 0; t < e->systems[s].n_tags; t++)
            if (!strcmp(e->systems[s].tags[t].name, c)) return true;
    return pb_point_metric_known(pb_config_root(e->cfg), c);
}

/* `columns` and `knee`: every name one the results have (point_out.h's metrics). */
static pb_status check_names(const pb_experiment *e, pb_cfg_err *err) {
    const pb_node *root = pb_config_root(e->cfg), *cols = pb_node_get(root, "columns");
    pb_status st = PB_OK;
    char names[4096];
    pb_point_metric_names(root, names, sizeof names);
    for (int i = 0; i < e->n_columns; i++)
        if (!column_known(e, e->columns[i]))
            st = pb_cfg_fail(err, cols->kids[i], false,
                             "columns.%d: '%s' is no column of this experiment's CSV (panel system label experiment "
                             "figure, its axes, its tags, or a metric: %s)", i, e->columns[i], names);
    const pb_node *km = pb_node_get(root, "knee.metric"), *ka = pb_node_get(root, "knee.axis");
    if (km && !pb_point_metric_known(root, e->knee_metric))
        st = pb_cfg_fail(err, km, false, "knee.metric: '%s' is not a metric (%s)", e->knee_metric, names);
    bool axis = false;
    for (int a = 0; a < e->n_axes; a++) axis |= !strcmp(e->axes[a].axis, e->knee_axis);
    if (ka && !axis) st = pb_cfg_fail(err, ka, false, "knee.axis: '%s' is not a sweep axis", e->knee_axis);
    else if (e->knee_refine > 0 && (e->n_axes != 1 || !axis))
        st = pb_cfg_fail(err, pb_node_get(root, "knee.refine"), false,
                         "knee.refine: refinement adds points along the knee axis '%s', which must be the "
                         "experiment's only sweep axis (it has %d)", e->knee_axis, e->n_axes);
    return st;
}

pb_status pb_experiment_load(const char *path, const char *const *sets, int n_sets, bool quick,
                             pb_experiment **out, pb_cfg_err *err) {
    *out = NULL;
    pb_config *c;
    pb_status st = load_tree(path, sets, n_sets, quick, &c, err);
    if (st) return st;
    const pb_node *root = pb_config_root(c);
    pb_experiment *e = pb_xcalloc(1, sizeof *e);
    e->cfg = c;
    e->path = pb_config_path(c);
    if (read_header(e, root, quick, err) || read_axes(e, root, err) || read_systems(e, root, err) ||
        check_size(e, err) || check_names(e, err)) {
        pb_experiment_destroy(e);
        return PB_ERR_INVALID;
    }
    if (pb_experiment_check(e)) {
        pb_cfg_fail(err, root, false, "experiment failed its invariant check");
        pb_experiment_destroy(e);
        return PB_ERR_INVALID;
    }
    *out = e;
    return PB_OK;
}

void pb_experiment_destroy(pb_experiment *e) {
    if (!e) return;
    for (int a = 0; a < e->n_axes; a++) free(e->axes[a].values);
    for (int s = 0; s < e->n_systems; s++)
        for (int a = 0; a < PB_EXP_MAX_AXES; a++) free(e->systems[s].values[a]);
    for (int s = 0; s < e->n_systems; s++) free(e->systems[s].extra);
    pb_config_destroy(e->cfg);
    free(e);
}

/* ---- point space ---- */
int pb_experiment_axis_values(const pb_experiment *e, int s, int a, const double **vals) {
    const pb_system_spec *sy = &e->systems[s];
    int n = sy->values[a] ? sy->n_values[a] : e->axes[a].n;
    *vals = sy->values[a] ? sy->values[a] : e->axes[a].values;
    return n;
}

/* --quick thinning: keep index i when i % thin == 0 or i is the last */
static int thinned_count(int n, int thin) {
    if (thin <= 1 || n <= 1) return n;
    return (n - 1) / thin + 1 + ((n - 1) % thin != 0);
}
static int thinned_index(int n, int thin, int k) {
    if (thin <= 1) return k;
    int i = k * thin;
    return i < n ? i : n - 1;
}

static int grid_points(const pb_experiment *e, int s) {
    int np = 1;
    for (int a = 0; a < e->n_axes; a++) {
        const double *v;
        np *= thinned_count(pb_experiment_axis_values(e, s, a, &v), e->quick_thin);
    }
    return np;
}

int pb_experiment_n_points(const pb_experiment *e, int s) {
    return grid_points(e, s) + (e->n_axes == 1 ? e->systems[s].n_extra : 0);
}

/* Index of each axis' value for point p (-1: a refinement extra, not in the lists). */
static void point_indices(const pb_experiment *e, int s, int p, int *idx) {
    int g = grid_points(e, s);
    if (p >= g && e->n_axes == 1) {
        idx[0] = -1;
        return;
    }
    /* the last axis varies fastest */
    for (int a = e->n_axes - 1; a >= 0; a--) {
        const double *v;
        int n = pb_experiment_axis_values(e, s, a, &v);
        int tn = thinned_count(n, e->quick_thin);
        idx[a] = thinned_index(n, e->quick_thin, p % tn);
        p /= tn;
    }
}

void pb_experiment_point_values(const pb_experiment *e, int s, int p, double *vals) {
    int idx[PB_EXP_MAX_AXES];
    point_indices(e, s, p, idx);
    for (int a = 0; a < e->n_axes; a++) {
        const double *v;
        pb_experiment_axis_values(e, s, a, &v);
        vals[a] = idx[a] < 0 ? e->systems[s].extra[p - grid_points(e, s)] : v[idx[a]];
    }
}

void pb_experiment_axis_assignment(const pb_experiment *e, int s, int a, double v, char *buf, size_t n) {
    char num[64];
    pb_fmt_num(num, sizeof num, v);
    if (!strncmp(e->axes[a].set, "system.", 7)) snprintf(buf, n, "systems.%d.%s=%s", s, e->axes[a].set + 7, num);
    else snprintf(buf, n, "%s=%s", e->axes[a].set, num);
}

/* The YAML node a point's axis value came from (for error positions). */
static const pb_node *value_node(const pb_experiment *e, int s, int a, int idx) {
    const pb_node *root = pb_config_root(e->cfg);
    char path[256];
    const pb_node *v = NULL;
    if (e->systems[s].values[a]) {
        snprintf(path, sizeof path, "sweep.%s", e->axes[a].axis);
        v = pb_node_get(e->systems[s].node, path);
    }
    if (!v) {
        snprintf(path, sizeof path, "sweep.%d.values", a);
        v = pb_node_get(root, path);
    }
    if (v && v->kind == PB_NODE_SEQ && idx >= 0 && idx < v->n_kids) return v->kids[idx];
    return v;
}

/* The sweep's value lists (`sweep:` and the systems' `sweep:` maps) stay out of a
   point's config: they only pick points, and leaving them out keeps resolving and
   checking every point linear in the number of points. */
static bool not_a_value_list(const pb_node *n) {
    if (!n->key || strcmp(n->key, "sweep") || !n->parent) return true;
    const pb_node *up = n->parent->parent;   /* root (top-level sweep) is the parent; a system's map's grandparent is `systems` */
    return !(n->parent->parent == NULL || (up && up->key && !strcmp(up->key, "systems") && up->parent && !up->parent->parent));
}

pb_status pb_experiment_resolve(const pb_experiment *e, int s, int p, pb_config **out, pb_cfg_err *err) {
    pb_config *c = pb_config_clone_if(e->cfg, not_a_value_list);
    int idx[PB_EXP_MAX_AXES];
    double vals[PB_EXP_MAX_AXES];
    point_indices(e, s, p, idx);
    pb_experiment_point_values(e, s, p, vals);
    pb_status st = PB_OK;
    for (int a = 0; a < e->n_axes && !st; a++) {
        char asg[512];
        pb_experiment_axis_assignment(e, s, a, vals[a], asg, sizeof asg);
        const pb_node *src = value_node(e, s, a, idx[a]);
        pb_cfg_err sub;
        pb_cfg_err_clear(&sub);
        if (pb_config_set(c, asg, &sub)) {
            st = pb_cfg_fail(err, src, false, "sweep axis %s: cannot assign %s (%s)", e->axes[a].axis, asg, sub.msg);
            break;
        }
        /* the assigned value reports errors at the sweep value it came from */
        char path[512];
        snprintf(path, sizeof path, "%.*s", (int)(strchr(asg, '=') - asg), asg);
        pb_node *n = (pb_node *)pb_node_get(pb_config_root(c), path);
        if (n && src) { n->file = src->file; n->line = src->line; n->col = src->col; }
    }
    if (st) { pb_config_destroy(c); *out = NULL; return st; }
    *out = c;
    return PB_OK;
}

pb_status pb_experiment_check(const pb_experiment *e) {
    if (!e || !e->cfg || e->n_systems < 1 || e->n_systems > PB_EXP_MAX_SYSTEMS) return PB_ERR_INVALID;
    if (e->n_axes < 0 || e->n_axes > PB_EXP_MAX_AXES || e->quick_thin < 1) return PB_ERR_INVALID;
    for (int a = 0; a < e->n_axes; a++)
        if (e->axes[a].n < 1 || !e->axes[a].values) return PB_ERR_INVALID;
    for (int s = 0; s < e->n_systems; s++) {
        for (int t = 0; t < s; t++)
            if (!strcmp(e->systems[s].id, e->systems[t].id)) return PB_ERR_INVALID;
        if (pb_experiment_n_points(e, s) < 1) return PB_ERR_INVALID;
    }
    return PB_OK;
}
