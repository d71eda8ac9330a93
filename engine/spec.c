/* spec.c -- model / hardware spec files and the KV-capacity formula (Table 1). */
#include "spec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "wquant.h"   /* pb_wq_matrix_bytes: quantized linear weights */

/* ---- schemas ---- */
const pb_key pb_model_schema[] = {
    {.name = "name", .type = PB_T_STR, .required = true, .doc = "display name, e.g. OPT-13B"},
    {.name = "arch", .type = PB_T_ENUM, .required = true, .choices = "opt|llama", .doc = "decoder architecture"},
    {.name = "n_layers", .type = PB_T_INT, .required = true, .lo = 1, .hi = 1024, .doc = "decoder layers"},
    {.name = "hidden", .type = PB_T_INT, .required = true, .lo = 1, .hi = 1 << 20, .doc = "model width"},
    {.name = "n_heads", .type = PB_T_INT, .required = true, .lo = 1, .hi = 4096, .doc = "query heads"},
    {.name = "n_kv_heads", .type = PB_T_INT, .lo = 1, .hi = 4096, .dflt_rule = "n_heads", .doc = "KV heads"},
    {.name = "head_size", .type = PB_T_INT, .lo = 1, .hi = 1024, .dflt_rule = "hidden / n_heads", .doc = "head size"},
    {.name = "ffn", .type = PB_T_INT, .required = true, .lo = 1, .hi = 1 << 22, .doc = "FFN inner size"},
    {.name = "vocab", .type = PB_T_INT, .required = true, .lo = 1, .hi = 1 << 24, .doc = "vocabulary size"},
    {.name = "max_len", .type = PB_T_INT, .required = true, .lo = 1, .hi = 1 << 24, .doc = "maximum sequence length"},
    {.name = "n_params", .type = PB_T_NUM, .required = true, .lo = 1, .hi = 1e15, .doc = "parameter count"},
    {.name = "dtype", .type = PB_T_ENUM, .choices = "fp16|bf16|fp32", .dflt = "fp16", .doc = "weight and KV dtype"},
    {.name = "n_experts", .type = PB_T_INT, .lo = 1, .hi = 1 << 16, .dflt = "1",
     .doc = "FFN experts a layer (HF num_local_experts); the cost model prices dense FFNs only, so a "
            "mixture of experts (above 1) is refused"},
    {.name = "sources", .type = PB_T_MAP, .doc = "key -> where the number comes from"},
    {0},
};

/* Numbers a hardware spec may set; each needs an entry under sources:. */
static const char *const HW_NUMBERS[] = {
    "memory_bytes", "hbm_bandwidth_GBps", "fp16_tflops", "pcie_h2d_GBps", "pcie_d2h_GBps",
    "pcie_copy_latency_us", "nvlink_GBps", "l2_MB", "n_sms",
};

const pb_key pb_hardware_schema[] = {
    {.name = "name", .type = PB_T_STR, .required = true, .doc = "display name, e.g. A100-40GB"},
    {.name = "memory_bytes", .type = PB_T_NUM, .required = true, .lo = 1e6, .hi = 1e15,
     .doc = "device memory as the runtime reports it"},
    {.name = "hbm_bandwidth_GBps", .type = PB_T_NUM, .required = true, .lo = 1, .hi = 1e6,
     .doc = "datasheet HBM bandwidth, GB/s"},
    {.name = "fp16_tflops", .type = PB_T_NUM, .required = true, .lo = 1, .hi = 1e6,
     .doc = "dense fp16 tensor-core peak, TFLOP/s"},
    {.name = "pcie_h2d_GBps", .type = PB_T_NUM, .required = true, .lo = 0.1, .hi = 1e4,
     .doc = "pinned host->device bandwidth, GB/s"},
    {.name = "pcie_d2h_GBps", .type = PB_T_NUM, .required = true, .lo = 0.1, .hi = 1e4,
     .doc = "pinned device->host bandwidth, GB/s"},
    {.name = "pcie_copy_latency_us", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1000,
     .doc = "per cudaMemcpyAsync call, us"},
    {.name = "nvlink_GBps", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e5,
     .doc = "NVLink per-direction bandwidth per GPU, GB/s"},
    {.name = "l2_MB", .type = PB_T_NUM, .lo = 0, .hi = 1e4, .dflt_rule = "none (the kernel benchmarks ask the device)",
     .doc = "L2 cache, MB"},
    {.name = "n_sms", .type = PB_T_INT, .lo = 1, .hi = 10000, .dflt_rule = "none (the sim executor needs it)",
     .doc = "streaming multiprocessors"},
    {.name = "sources", .type = PB_T_MAP, .required = true, .doc = "key -> datasheet / measurement for every number"},
    {.name = "cost_model", .type = PB_T_MAP, .doc = "cost-model parameters (see executors/executor_sim.h)"},
    {0},
};

/* ---- loading ---- */
const char *pb_spec_dir(void) {
    const char *e = getenv("PAGEDBENCH_SPECS");
    if (e && *e) return e;
#ifdef PB_SOURCE_DIR
    return PB_SOURCE_DIR "/experiments";
#else
    return "experiments";
#endif
}

pb_status pb_model_from_node(const pb_node *n, pb_model *m, pb_cfg_err *err) {
    if (pb_config_validate(n, pb_model_schema, "model", err)) return PB_ERR_INVALID;
    memset(m, 0, sizeof *m);
    const pb_key *S = pb_model_schema;
    snprintf(m->name, sizeof m->name, "%s", pb_schema_str(S, n, "name"));
    m->arch = strcmp(pb_schema_str(S, n, "arch"), "llama") == 0 ? PB_ARCH_LLAMA : PB_ARCH_OPT;
    m->n_layers = (int32_t)pb_schema_int(S, n, "n_layers");
    m->hidden = (int32_t)pb_schema_int(S, n, "hidden");
    m->n_heads = (int32_t)pb_schema_int(S, n, "n_heads");
    m->n_kv_heads = (int32_t)pb_schema_int_or(S, n, "n_kv_heads", m->n_heads);
    m->head_size = (int32_t)pb_schema_int_or(S, n, "head_size", m->hidden / m->n_heads);
    m->ffn = (int32_t)pb_schema_int(S, n, "ffn");
    m->vocab = (int32_t)pb_schema_int(S, n, "vocab");
    m->max_len = (int32_t)pb_schema_int(S, n, "max_len");
    m->n_params = pb_schema_num(S, n, "n_params");
    m->dtype_bytes = strcmp(pb_schema_str(S, n, "dtype"), "fp32") == 0 ? 4 : 2;
    int64_t experts = pb_schema_int(S, n, "n_experts");
    if (experts > 1)
        return pb_cfg_fail(err, pb_node_get(n, "n_experts"), false,
                           "model.n_experts: %lld experts a layer: a mixture-of-experts model cannot be priced "
                           "(the cost model knows dense FFN layers only: no router, no per-expert GEMMs of the "
                           "tokens routed to them, no expert parallelism); refused rather than approximated",
                           (long long)experts);
    if (m->n_heads % m->n_kv_heads)
        return pb_cfg_fail(err, pb_node_get(n, "n_kv_heads"), false,
                           "model.n_kv_heads: %d does not divide n_heads %d", m->n_kv_heads, m->n_heads);
    return PB_OK;
}

pb_status pb_hw_from_node(const pb_node *n, pb_hw *h, pb_cfg_err *err) {
    if (pb_config_validate(n, pb_hardware_schema, "hardware", err)) return PB_ERR_INVALID;
    pb_status st = PB_OK;
    const pb_node *src = pb_node_get(n, "sources");
    for (size_t i = 0; i < PB_ARRAY_LEN(HW_NUMBERS); i++) {
        const pb_node *v = pb_node_get(n, HW_NUMBERS[i]);
        if (!v) continue;
        const pb_node *s = src ? pb_node_get(src, HW_NUMBERS[i]) : NULL;
        if (!s || s->kind != PB_NODE_SCALAR || !*s->value)
            st = pb_cfg_fail(err, v, true, "hardware.%s: no source given (add sources.%s: \"...\")",
                             HW_NUMBERS[i], HW_NUMBERS[i]);
    }
    if (st) return st;
    memset(h, 0, sizeof *h);
    const pb_key *S = pb_hardware_schema;
    snprintf(h->name, sizeof h->name, "%s", pb_schema_str(S, n, "name"));
    h->mem_bytes = pb_schema_num(S, n, "memory_bytes");
    h->hbm_bw = pb_schema_num(S, n, "hbm_bandwidth_GBps") * 1e9;
    h->fp16_flops = pb_schema_num(S, n, "fp16_tflops") * 1e12;
    h->pcie_h2d_bw = pb_schema_num(S, n, "pcie_h2d_GBps") * 1e9;
    h->pcie_d2h_bw = pb_schema_num(S, n, "pcie_d2h_GBps") * 1e9;
    h->pcie_copy_latency_s = pb_schema_num(S, n, "pcie_copy_latency_us") * 1e-6;
    h->nvlink_bw = pb_schema_num(S, n, "nvlink_GBps") * 1e9;
    h->l2_bytes = pb_schema_num_or(S, n, "l2_MB", 0) * 1e6;
    h->n_sms = (int32_t)pb_schema_int_or(S, n, "n_sms", 0);
    return PB_OK;
}

static pb_status load_spec(const char *spec_dir, const char *sub, const char *name, pb_config **out,
                           pb_cfg_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s.yaml", spec_dir, sub, name);
    return pb_config_load(path, out, err);
}

pb_status pb_model_load(const char *spec_dir, const char *name, pb_model *out, pb_cfg_err *err) {
    pb_config *c;
    pb_status s = load_spec(spec_dir, "models", name, &c, err);
    if (s) return s;
    s = pb_model_from_node(pb_config_root(c), out, err);
    pb_config_destroy(c);
    return s;
}

pb_status pb_hw_load(const char *spec_dir, const char *name, pb_hw *out, pb_cfg_err *err) {
    pb_config *c;
    pb_status s = load_spec(spec_dir, "hardware", name, &c, err);
    if (s) return s;
    s = pb_hw_from_node(pb_config_root(c), out, err);
    pb_config_destroy(c);
    return s;
}

/* ---- formulas ---- */
double pb_kv_elem_bytes(const pb_model *m) { return m->kv_dtype_bytes > 0 ? m->kv_dtype_bytes : m->dtype_bytes; }

double pb_kv_bytes_per_token(const pb_model *m, int32_t tp) {
    return 2.0 * m->n_layers * ((double)m->n_kv_heads / tp) * m->head_size * pb_kv_elem_bytes(m);
}

/* The linear weights of one layer per GPU in format f: K x N of QKV, output, FC1 (or
   gate+up), FC2 (or down). */
static double linear_layer_bytes(const pb_model *m, int32_t tp, pb_weight_format f) {
    double h = m->hidden, d = m->head_size, hq = (double)m->n_heads / tp, hkv = (double)m->n_kv_heads / tp;
    double F = (double)m->ffn / tp, dt = m->dtype_bytes;
    bool llama = m->arch == PB_ARCH_LLAMA;
    return pb_wq_matrix_bytes(f, h, (hq + 2 * hkv) * d, dt) + pb_wq_matrix_bytes(f, hq * d, h, dt) +
           pb_wq_matrix_bytes(f, h, (llama ? 2 : 1) * F, dt) + pb_wq_matrix_bytes(f, F, h, dt);
}

double pb_linear_weight_bytes(const pb_model *m, int32_t tp) {
    return m->n_layers * linear_layer_bytes(m, tp, (pb_weight_format)m->weights);
}

/* what the weight format saves against the model's dtype, per GPU */
static double weight_saving(const pb_model *m, int32_t tp) {
    if (m->weights == PB_WEIGHTS_FP16) return 0;
    return m->n_layers * linear_layer_bytes(m, tp, PB_WEIGHTS_FP16) - pb_linear_weight_bytes(m, tp);
}

double pb_param_bytes(const pb_model *m) { return m->n_params * m->dtype_bytes - weight_saving(m, 1); }

/* The KV space left on each GPU (out->kv_bytes_per_gpu) cut into blocks: both rules end here. */
static pb_status kv_blocks(const pb_model *m, int32_t tp, int32_t block_size, pb_kv_capacity *out) {
    if (out->kv_bytes_per_gpu <= 0) return PB_ERR_NO_SPACE;
    double block_bytes = pb_kv_bytes_per_token(m, tp) * block_size;
    out->num_blocks = (int64_t)floor(out->kv_bytes_per_gpu / block_bytes);
    out->num_slots = out->num_blocks * block_size;
    out->kv_bytes_total = out->kv_bytes_per_gpu * tp;
    return PB_OK;
}

pb_status pb_kv_capacity_compute(const pb_model *m, const pb_hw *hw, int32_t tp, int32_t block_size,
                                 int32_t max_batched_tokens, double gpu_mem_util, pb_kv_capacity *out) {
    if (tp < 1 || block_size < 1 || max_batched_tokens < 1 || gpu_mem_util <= 0 || gpu_mem_util > 1 ||
        m->n_kv_heads % tp)
        return PB_ERR_INVALID;
    memset(out, 0, sizeof *out);
    double T = max_batched_tokens, h = m->hidden;
    double qkv = 3.0 * T * h / tp, ffn = T * m->ffn / tp, residual = T * h;
    double act = 2.0 * (fmax(qkv, ffn) + residual);
    double logits = 2.0 * T * m->vocab;
    out->usable_bytes = floor(gpu_mem_util * hw->mem_bytes);
    out->param_bytes_per_gpu = pb_param_bytes(m) / tp;
    out->act_bytes = fmax(act, logits) * m->dtype_bytes;
    out->workspace_bytes = 1024.0 * 1024.0 * 1024.0;
    out->kv_bytes_per_gpu = out->usable_bytes - out->param_bytes_per_gpu - out->act_bytes - out->workspace_bytes;
    return kv_blocks(m, tp, block_size, out);
}

double pb_weight_bytes_per_gpu(const pb_model *m, int32_t tp) {
    double h = m->hidden, F = m->ffn, d = m->head_size, hq = m->n_heads, hkv = m->n_kv_heads;
    double Vp = ceil(m->vocab / 64.0) * 64.0;
    double n;
    if (m->arch == PB_ARCH_LLAMA) {
        double layer = h * (hq + 2 * hkv) * d / tp + hq * d * h / tp + 3.0 * h * F / tp + 2 * h;
        n = 2.0 * Vp * h / tp + m->n_layers * layer + h;
    } else {
        double layer = (3 * h * h + 3 * h) / tp + h * h / tp + h + (h * F + F) / tp + F * h / tp + h + 4 * h;
        n = Vp * h / tp + (m->max_len + 2.0) * h + m->n_layers * layer + 2 * h;
    }
    return n * m->dtype_bytes - weight_saving(m, tp);
}

/* Peak live bytes of one layer's forward pass over T tokens (pb_kv_capacity_profile). */
static double layer_act_bytes(const pb_model *m, int32_t tp, double T) {
    double h = m->hidden, F = m->ffn, d = m->head_size;
    double attn = 2 * T * h + T * (m->n_heads + 2.0 * m->n_kv_heads) * d / tp + T * m->n_heads * d / tp + T * h;
    double mlp = m->arch == PB_ARCH_LLAMA ? 2 * T * h + 3 * T * F / tp
                                          : fmax(T * h + 2 * T * F / tp, 2 * T * h + T * F / tp);
    return fmax(attn, mlp) * m->dtype_bytes;
}

pb_status pb_kv_capacity_profile(const pb_model *m, const pb_hw *hw, int32_t tp, int32_t block_size,
                                 int32_t profile_tokens, int32_t profile_seqs, double gpu_mem_util,
                                 pb_kv_capacity *out) {
    if (tp < 1 || block_size < 1 || profile_tokens < 1 || profile_seqs < 1 || profile_seqs > profile_tokens ||
        gpu_mem_util <= 0 || gpu_mem_util > 1 || m->n_kv_heads % tp)
        return PB_ERR_INVALID;
    memset(out, 0, sizeof *out);
    double S = profile_seqs, h = m->hidden, dt = m->dtype_bytes;
    double Tp = S * ((profile_tokens + profile_seqs - 1) / profile_seqs);   /* padded [S, max_len] */
    out->layer_act_bytes = layer_act_bytes(m, tp, Tp);
    out->sampler_bytes = (Tp * h + S * h) * dt + S * (double)m->vocab * (5 * dt + 2 * 8 + 3);
    out->param_bytes_per_gpu = pb_weight_bytes_per_gpu(m, tp);
    out->act_bytes = fmax(out->layer_act_bytes, out->sampler_bytes);
    out->peak_bytes = out->param_bytes_per_gpu + out->act_bytes;
    out->usable_bytes = gpu_mem_util * hw->mem_bytes;
    out->kv_bytes_per_gpu = out->usable_bytes - out->peak_bytes;
    return kv_blocks(m, tp, block_size, out);
}

pb_status pb_kv_capacity_v1(const pb_model *m, const pb_hw *hw, int32_t tp, int32_t block_size, int32_t profile_tokens,
                            int32_t profile_seqs, double gpu_mem_util, bool cuda_graphs, pb_kv_capacity *out) {
    if (tp < 1 || block_size < 1 || profile_tokens < 1 || profile_seqs < 1 || profile_seqs > profile_tokens ||
        gpu_mem_util <= 0 || gpu_mem_util > 1 || m->n_kv_heads % tp)
        return PB_ERR_INVALID;
    memset(out, 0, sizeof *out);
    const double gib = 1024.0 * 1024.0 * 1024.0;
    double S = profile_seqs, T = profile_tokens, h = m->hidden, dt = m->dtype_bytes;
    out->layer_act_bytes = layer_act_bytes(m, tp, T);
    out->sampler_bytes = (T * h + S * h) * dt + S * (double)m->vocab * (dt + 3 * 4 + 8);
    out->param_bytes_per_gpu = pb_weight_bytes_per_gpu(m, tp);
    out->act_bytes = fmax(out->layer_act_bytes, out->sampler_bytes);
    out->peak_bytes = out->param_bytes_per_gpu + out->act_bytes;
    out->non_torch_bytes = (tp > 1 ? PB_V1_NON_TORCH_TP_GIB : PB_V1_NON_TORCH_GIB) * gib;
    out->cudagraph_bytes = cuda_graphs ? PB_V1_CUDAGRAPH_GIB * gib : 0;
    out->usable_bytes = ceil(gpu_mem_util * hw->mem_bytes);
    out->kv_bytes_per_gpu = out->usable_bytes - out->peak_bytes - out->non_torch_bytes - out->cudagraph_bytes;
    return kv_blocks(m, tp, block_size, out);
}
