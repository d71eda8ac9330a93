/* spec.h -- model and hardware specifications, and the KV capacity they imply.
 *
 * Specs are YAML files, experiments/models/<name>.yaml and
 * experiments/hardware/<name>.yaml, included by name from an experiment config
 * (`model: opt-13b`, `hardware: a100-40gb`).  Every numeric hardware figure has a
 * `sources:` entry (datasheet, microbenchmark or the paper) -- the loader rejects a
 * hardware spec with an unsourced number.
 *
 * The one place where KV sizes are computed (paper §3, Table 1):
 *   kv_bytes_per_token = 2 (K and V) * n_layers * n_kv_heads * head_size * kv_dtype_bytes
 * (kv_dtype_bytes: the model's dtype_bytes, or 1 when a system keeps its KV cache in
 * fp8 -- `kv_cache_dtype`, kernels/kv_dtype.h)
 *   kv_bytes_per_block = kv_bytes_per_token * block_size
 * Tensor parallelism of degree tp stores n_kv_heads / tp heads per GPU. */
#ifndef PB_SPEC_H
#define PB_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "pb.h"
#include "config.h"   /* pb_node, pb_key, pb_cfg_err */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_ARCH_OPT = 0, PB_ARCH_LLAMA = 1 } pb_arch;

typedef struct {
    char name[64];          /* "OPT-13B"                                          */
    pb_arch arch;           /* OPT: learned positions, LayerNorm, ReLU, biases;
                               LLaMA: RoPE, RMSNorm, SiLU-gated FFN, no biases     */
    int32_t n_layers;
    int32_t hidden;         /* model width                                        */
    int32_t n_heads;        /* query heads                                        */
    int32_t n_kv_heads;     /* KV heads (== n_heads without GQA)                  */
    int32_t head_size;      /* hidden / n_heads                                   */
    int32_t ffn;            /* FFN inner size                                     */
    int32_t vocab;
    int32_t max_len;        /* maximum sequence length (2048 for OPT)             */
    double n_params;        /* parameter count (as published / counted)           */
    int32_t dtype_bytes;    /* 2 for fp16 / bf16                                  */
    int32_t kv_dtype_bytes; /* bytes of a KV-cache element: 1 for an fp8 cache (a
                               system's kv_cache_dtype); 0 = dtype_bytes          */
    int32_t weights;        /* format of the linear layers' weights, a
                               pb_weight_format (kernels/wquant.h; a system's
                               `weights`); 0 = fp16, the model's dtype            */
} pb_model;

/* Bytes of one KV-cache element: kv_dtype_bytes, else dtype_bytes. */
double pb_kv_elem_bytes(const pb_model *m);

typedef struct {
    char name[64];              /* "A100-40GB"                                    */
    double mem_bytes;           /* device memory as the runtime reports it        */
    double hbm_bw;              /* datasheet HBM bandwidth, bytes/s               */
    double fp16_flops;          /* dense fp16 tensor-core peak, FLOP/s            */
    double pcie_h2d_bw;         /* pinned host->device, bytes/s (measured)        */
    double pcie_d2h_bw;         /* pinned device->host, bytes/s (measured)        */
    double pcie_copy_latency_s; /* per cudaMemcpyAsync call overhead, seconds     */
    double nvlink_bw;           /* per-direction NVLink bandwidth per GPU, B/s    */
    double l2_bytes;            /* L2 cache size                                  */
    int32_t n_sms;
} pb_hw;

/* Schema tables of the spec files (for pb_config_validate). */
extern const pb_key pb_model_schema[];
extern const pb_key pb_hardware_schema[];

/* Fill a spec from a validated map node.  A hardware map must have a source for
 * every number it sets (errors name the key).  A model map with n_experts > 1 (a
 * mixture of experts) is refused: the cost model prices dense FFN layers only.  Returns PB_OK or PB_ERR_INVALID. */
pb_status pb_model_from_node(const pb_node *n, pb_model *out, pb_cfg_err *err);
pb_status pb_hw_from_node(const pb_node *n, pb_hw *out, pb_cfg_err *err);
/* Load a spec by name from spec_dir/{models,hardware}/<name>.yaml. */
pb_status pb_model_load(const char *spec_dir, const char *name, pb_model *out, pb_cfg_err *err);
pb_status pb_hw_load(const char *spec_dir, const char *name, pb_hw *out, pb_cfg_err *err);

/* Where the spec YAMLs live: $PAGEDBENCH_SPECS, else <source dir>/experiments. */
const char *pb_spec_dir(void);

double pb_kv_bytes_per_token(const pb_model *m, int32_t tp);   /* per GPU */
/* Whole model: n_params * dtype_bytes, less what the linear layers' weight format
 * saves (m->weights; pb_linear_weight_bytes) */
double pb_param_bytes(const pb_model *m);
/* Bytes of the linear layers' weights on each GPU (QKV, output, FFN of every layer;
 * K x N per GEMM as executor_sim.h lists them), in m->weights' format
 * (pb_wq_matrix_bytes: int8/fp8 per-channel scales, int4 per-group scales and
 * zeros); the embeddings, the LM head, norms and biases are not among them. */
double pb_linear_weight_bytes(const pb_model *m, int32_t tp);

/* KV capacity the way the paper's harness (CacheFlow memory_analyzer) computed it:
 *   usable  = gpu_mem_util * mem_bytes                        (per GPU)
 *   kv      = usable - params/tp - peak activations(max_batched_tokens) - 1 GiB workspace
 *   blocks  = floor(kv / kv_bytes_per_block)                  (per GPU == whole system)
 * Peak activations (fp16): max(2*(max(3*T*h/tp, T*ffn/tp) + T*h), 2*T*vocab) elements,
 * with T = max_batched_tokens (FlashAttention: no attention maps). */
/* Tokens of the activation estimate in the KV budget: the paper's harness passed its
 * max_num_batched_tokens, vLLM v0.1.0's default 2560 (docs/DESIGN.md §3.4).  No serving
 * figure sets it: OPT-13B on an A100-40GB gets 975 blocks of 16 = 15.6K slots, Table 1
 * says 15.7K, -0.8%.  One value serves every figure. */
#define PB_KV_PROFILE_TOKENS 2560

typedef struct {
    double usable_bytes, param_bytes_per_gpu, act_bytes, workspace_bytes;
    double layer_act_bytes;     /* profile rule: peak live activations of one layer */
    double sampler_bytes;       /* profile rule: live bytes at the sampler's peak   */
    double peak_bytes;          /* profile rule: torch's max allocated (weights +
                                   max(layer, sampler)); harness rule: 0            */
    double non_torch_bytes;     /* v1 rule: memory outside torch's allocator        */
    double cudagraph_bytes;     /* v1 rule: the CUDA graph estimate                 */
    double kv_bytes_per_gpu;    /* memory left for the KV cache on each GPU       */
    double kv_bytes_total;      /* summed over the tp GPUs                        */
    int64_t num_blocks;         /* physical KV blocks (same on every GPU)         */
    int64_t num_slots;          /* num_blocks * block_size token slots            */
} pb_kv_capacity;

pb_status pb_kv_capacity_compute(const pb_model *m, const pb_hw *hw, int32_t tp, int32_t block_size,
                                 int32_t max_batched_tokens, double gpu_mem_util,
                                 pb_kv_capacity *out);

/* Which rule sizes the KV space (a vLLM version's default, engine/vllm_version.h). */
typedef enum {
    PB_KV_RULE_HARNESS = 0,   /* pb_kv_capacity_compute: the paper's harness (v0.1 runs) */
    PB_KV_RULE_PROFILE,       /* pb_kv_capacity_profile: v0.2's profiling pass           */
    PB_KV_RULE_V1             /* pb_kv_capacity_v1: V1's profiling pass                  */
} pb_kv_rule;

/* Weight bytes resident on each GPU, counted from the shapes (what vLLM loads, not
 * the spec's n_params):
 *   OPT   : embed_tokens Vp*h/tp (shared with the LM head) + embed_positions
 *           (max_len+2)*h + per layer [qkv 3h*h/tp + 3h/tp, out h*h/tp + h,
 *           fc1 h*F/tp + F/tp, fc2 F*h/tp + h, two LayerNorms 4h] + final LayerNorm 2h
 *   LLaMA : embed_tokens Vp*h/tp + lm_head Vp*h/tp + per layer [qkv h*(hq+2hkv)*d/tp,
 *           o hq*d*h/tp, gate_up 2h*F/tp, down F*h/tp, two RMSNorms 2h] + norm h
 * times dtype_bytes; Vp = vocab rounded up to a multiple of 64 (VocabParallelEmbedding
 * pads it), row-parallel biases and norms are replicated on every GPU.  With
 * quantized weights the linear layers' part is pb_linear_weight_bytes instead. */
double pb_weight_bytes_per_gpu(const pb_model *m, int32_t tp);

/* KV capacity the way vLLM v0.2 computes it (Worker.profile_num_available_blocks,
 * docs/DESIGN.md §9): one forward pass WITHOUT KV cache over S = profile_seqs dummy
 * prompts whose lengths sum to T = profile_tokens (T/S each, the first T%S one
 * longer), sampler at top_p = 0.99, top_k = vocab-1; then
 *   blocks = floor((mem_bytes * gpu_mem_util - peak) / kv_bytes_per_block)
 * with peak = torch.cuda.max_memory_allocated() of that pass, modelled as
 *   peak = weights (pb_weight_bytes_per_gpu) + max(layer, sampler) activations.
 * Terms (elements; x dtype_bytes unless said; tokens Tp = S * ceil(T/S), the padded
 * [S, max_len] prompt batch of v0.2.2+; h hidden, F ffn, hq/hkv heads, d head size):
 *   layer, attention half (opt.py / llama.py OPTDecoderLayer / LlamaDecoderLayer
 *     forward, PagedAttention.forward prompt path):
 *       residual Tp*h + normed input Tp*h (kept alive by the caller's local)
 *       + qkv Tp*(hq+2hkv)*d/tp (q, k, v are views of it) + xFormers output
 *       Tp*hq*d/tp + out_proj output Tp*h                         [live at out_proj]
 *   layer, MLP half:
 *       OPT   : fc1 and the (not in-place) nn.ReLU output live together:
 *               max(Tp*h + 2*Tp*F/tp, 2*Tp*h + Tp*F/tp)
 *       LLaMA : residual + normed input + gate_up 2*Tp*F/tp + SiluAndMul Tp*F/tp
 *   sampler (sampler.py _get_logits, _apply_top_p_top_k, softmax / log_softmax):
 *       final hidden states Tp*h + pruned rows S*h, plus per logit element (S*V):
 *       logits, logits_sort, probs_sort, probs_sum, re-gathered logits (5 in the
 *       model dtype), logits_idx and its inverse permutation (2 x int64), top-p,
 *       top-k and combined masks (3 x bool): 5*dtype_bytes + 19 bytes -- all locals
 *       of _apply_top_p_top_k, alive until it returns.  Afterwards fp32 probs and
 *       logprobs plus the logits (2*4 + dtype_bytes) are smaller, so not the peak.
 *   Not counted: the CUDA context, NCCL and cuBLAS workspaces (outside torch's
 *   allocator until v0.2.5 switched to mem_get_info, which counts them), the
 *   caching allocator's reserved-but-free memory, the sort's own scratch (about
 *   one more key + index copy while logits.sort runs), allocator rounding (512 B),
 *   the vocabulary padding of the logits, tiny index / metadata tensors.
 * These terms are recalled from vLLM's v0.2.x sources (the files named above), not
 * measured here; PB_ERR_NO_SPACE when the peak leaves no memory for the cache. */
pb_status pb_kv_capacity_profile(const pb_model *m, const pb_hw *hw, int32_t tp, int32_t block_size,
                                 int32_t profile_tokens, int32_t profile_seqs, double gpu_mem_util,
                                 pb_kv_capacity *out);

/* KV capacity the way vLLM's V1 engine computes it (v0.33.0:
 * v1/worker/gpu_worker.py:640-760 determine_available_memory, utils/mem_utils.py:230-321
 * memory_profiling, v1/worker/utils.py:724 request_memory):
 *   kv = ceil(total memory x gpu_mem_util) - non-KV memory - CUDA graph estimate
 *   non-KV = weights + torch's peak over a forward pass of profile_tokens tokens
 *            (profile_run: max_num_batched_tokens flattened -- no padding -- over
 *            profile_seqs requests, then the sampler over profile_seqs rows)
 *            + non-torch memory (CUDA context, NCCL, cuBLAS workspaces)
 *   peak activations: pb_kv_capacity_profile's layer terms with Tp = T, and the
 *   sampler as V1 runs it: final hidden T*h + pruned rows S*h (model dtype), plus per
 *   logit element (S*V) the logits in the model dtype, their fp32 copy, fp32 probs,
 *   fp32 sorted logits and the int64 sort index (dtype + 20 bytes) [recalled from
 *   v1/sample/sampler.py and v1/sample/ops/topk_topp_sampler.py, not measured here].
 * The two constants below are vLLM's own logged measurements (residual: their
 * spread over models and versions, unknown beyond the logs named):
 *   PB_V1_NON_TORCH_GIB     1.79 GiB at tp 1, PB_V1_NON_TORCH_TP_GIB 3.58 GiB per
 *                           GPU at tp > 1 (vllm-project/vllm PR #10511, 2024-12-14,
 *                           Meta-Llama-3-8B on an H100 80GB: "non_torch_memory
 *                           1.79GiB", at -tp 2 "3.58GiB": NCCL buffers)
 *   PB_V1_CUDAGRAPH_GIB     0.36 GiB, subtracted when cuda_graphs (on by default
 *                           since v0.21.0, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS:
 *                           gpustack/runner PR #251, vLLM 0.27.1 log "Estimated CUDA
 *                           graph memory: 0.36 GiB total") [a capture set smaller than
 *                           the default's; secondary]
 * PB_ERR_NO_SPACE when nothing is left for the cache. */
#define PB_V1_NON_TORCH_GIB 1.79
#define PB_V1_NON_TORCH_TP_GIB 3.58
#define PB_V1_CUDAGRAPH_GIB 0.36
pb_status pb_kv_capacity_v1(const pb_model *m, const pb_hw *hw, int32_t tp, int32_t block_size, int32_t profile_tokens,
                            int32_t profile_seqs, double gpu_mem_util, bool cuda_graphs, pb_kv_capacity *out);

#ifdef __cplusplus
}
#endif
#endif /* PB_SPEC_H */
