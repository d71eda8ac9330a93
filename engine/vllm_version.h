/* vllm_version.h -- the vLLM version a vllm system models, and that version's
 * documented defaults (docs/DESIGN.md §3.4 knobs table, §9 the KV space).
 *
 * One table (vllm_version.c) holds every default; a system's YAML names the version
 * (`engine: v0.1 | v0.2 | v1`, default v0.1, the paper's) and may override any knob:
 *
 *   knob                    v0.1 (paper, mid-2023)       v0.2 (v0.2.2 - v0.2.7)
 *   step_mode               mixed                         alternate (prompt-only steps)
 *   max_paddings            -1 (no padded prompt batch)   256
 *   max_num_batched_tokens  2560                          max(max_model_len, 2048)
 *   max_num_seqs            256                           256
 *   gpu_mem_util            0.95 (the paper's runs)       0.90 (arg_utils.py default)
 *   KV sizing rule          harness (spec.h, activations  profile pass (spec.h
 *                           of kv_profile_tokens tokens)  pb_kv_capacity_profile)
 *   kv_profile_tokens       PB_KV_PROFILE_TOKENS (2560)   = max_num_batched_tokens
 *   prefix_caching          false                         false
 *   preemption              auto                          auto
 *   watermark               PB_PAGED_WATERMARK (0.01)     PB_PAGED_WATERMARK
 *   async_scheduling        false                         false
 *   cuda_graphs             false                         false (v0.2 captured decode
 *                                                         graphs; not modelled)
 *   custom_allreduce        false (NCCL through           false (the same; vLLM's
 *                           torch.distributed)            custom all-reduce came with
 *                                                         vllm-project/vllm#2192, opened
 *                                                         2023-12-19, after v0.2.6)
 *   flash_attn_version      2 (the flash kernel, when a   2 (FlashAttention-3 came in
 *                           system's sim attention_kernel  July 2024)
 *                           is flash: FlashAttention-2)
 *   fuse_allreduce_rms      false                         false (a torch.compile pass of
 *                                                         2025)
 *   (not a knob: the sim's  apart                         one fused_add_rms_norm kernel
 *   fused_add_norm,                                       for Llama-family models
 *   executor_sim.h)                                       (vllm-project/vllm#1667, in the
 *                                                         v0.2.2 wheel's layernorm.py);
 *                                                         OPT's stay apart
 *
 * engine: v1 -- vLLM's V1 engine as released in v0.33.0 (PyPI wheel, git 4ba787ec9;
 * every line below is of that release, paths under vllm/):
 *   step_mode               chunked: one token budget per step, running requests
 *                           first (decodes, then the partial prefill), then new
 *                           prefills chunked into what is left; chunked prefill is
 *                           always on (config/scheduler.py:134 enable_chunked_prefill
 *                           = True; v1/core/sched/scheduler.py:794-1002 running,
 *                           :1050-1570 waiting, admitted only when nothing was
 *                           preempted this step, :1050)
 *   max_num_batched_tokens  2048 on an A100 or a GPU under 70 GiB, 8192 on larger
 *                           ones (H100, H200), 16384 at >= 160 GiB: the OpenAI API
 *                           server's defaults (engine/arg_utils.py:2970-3006,
 *                           get_batch_defaults; the paper's protocol serves through
 *                           the API server)
 *   max_num_seqs            256 (A100, < 70 GiB), 1024 (larger; same lines)
 *   gpu_mem_util            0.92 (config/cache.py:215)
 *   KV sizing rule          v1: total memory x gpu_mem_util - weights - peak
 *                           activations of a max_num_batched_tokens pass - non-torch
 *                           memory - CUDA graph memory (spec.h pb_kv_capacity_v1;
 *                           v1/worker/gpu_worker.py:640-760, utils/mem_utils.py:230-321,
 *                           v1/worker/utils.py:724 request_memory)
 *   kv_profile_tokens       = max_num_batched_tokens
 *   max_paddings            -1 (flattened batches)
 *   prefix_caching          true (config/cache.py:257 enable_prefix_caching = True)
 *   preemption              recompute, the only mode (v1/core/sched/scheduler.py:1799
 *                           _preempt_request frees the blocks, resets
 *                           num_computed_tokens and prepends the request to waiting)
 *   watermark               0 (config/scheduler.py:196 watermark = 0.0)
 *   async_scheduling        true (config/scheduler.py:211 None -> config/vllm.py:1685-1719
 *                           enables it unless an incompatible option is set)
 *   cuda_graphs             true (CUDA graphs of decode batches; the cost model's
 *                           term, executors/executor_sim.h)
 *   custom_allreduce        true (distributed/device_communicators/cuda_communicator.py
 *                           all_reduce: FlashInfer's one-shot, the custom all-reduce,
 *                           torch symmetric memory, then NCCL, by size and TP degree;
 *                           config/parallel.py:241 disable_custom_all_reduce = False,
 *                           envs.py VLLM_ALLREDUCE_USE_SYMM_MEM / _USE_FLASHINFER = 1;
 *                           the sim prices the fastest of them,
 *                           custom_allreduce_tpN_* of the cost model)
 *   flash_attn_version      auto: 3 on a GPU whose cost model has FlashAttention-3's
 *                           term (flash3_prefill_flops_efficiency: the Hopper specs),
 *                           else 2 (v1/attention/backends/fa_utils.py:98-107 "Hopper
 *                           (SM90): prefer FA3", else FA2 on CUDA; :111-116 the
 *                           attention config's flash_attn_version overrides;
 *                           platforms/cuda.py:174-183 FLASH_ATTN first off Blackwell)
 *   fuse_allreduce_rms      true: at TP 2 / 4 / 8 on a GPU whose cost model gives the
 *                           fusion's size (allreduce_norm_fusion_tpN_MB: the SM 9.0
 *                           specs), Llama-family models, steps of at most that size /
 *                           (hidden x dtype) tokens (config/vllm.py:179-203 and :302, O2,
 *                           the default level, :435; :2668-2694 the compile range) --
 *                           elsewhere off, as vLLM turns it off (executors/executor_sim.h
 *                           "Fused element-wise work"; V1's fused add + norm kernels are
 *                           always on: the sim's fused_add_norm)
 *
 * max_paddings (alternate steps only; ignored by mixed ones): a prompt step is a
 * padded [prompts, longest prompt] batch; admission stops when prompts x longest >
 * max_num_batched_tokens or the padding (prompts x longest - sum) > max_paddings.
 * -1 = no padding (the flattened batches of v0.1 and of v0.2.0-v0.2.1, whose prompt
 * budget is the plain sum of prompt lengths).
 * v0.1's 0.95 is what the paper's harness used for every figure (spec.h); vLLM's own
 * default was already 0.90 at v0.1.0 (docs/DESIGN.md §3.4). */
#ifndef PB_VLLM_VERSION_H
#define PB_VLLM_VERSION_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"
#include "spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_VLLM_V01 = 0, PB_VLLM_V02, PB_VLLM_V1 } pb_vllm_version;

typedef struct {
    pb_step_mode step_mode;
    int32_t max_paddings;             /* -1 = prompt batches are not padded        */
    int32_t max_num_batched_tokens;
    int32_t max_num_seqs;
    double gpu_mem_util;
    pb_kv_rule kv_rule;
    int32_t kv_profile_tokens;        /* tokens of the KV rule's activation pass;
                                         0 = max_num_batched_tokens (after overrides:
                                         pb_vllm_knobs_profile_tokens)              */
    bool prefix_caching;              /* automatic prefix caching (block_manager.h)  */
    pb_preempt_mode preemption;
    double watermark;                 /* free-block share kept at admission          */
    bool async_scheduling;            /* host work of step N+1 overlaps step N's GPU */
    bool cuda_graphs;                 /* decode batches run as CUDA graphs           */
    bool custom_allreduce;            /* TP all-reduces through vLLM's own kernels   */
    bool fuse_allreduce_rms;          /* all-reduce + RMSNorm fusion where it runs   */
    int32_t flash_attn_version;       /* the flash kernel's FlashAttention version:
                                         2, 3, or PB_FLASH_AUTO (3 where the GPU's
                                         cost model has FA3's term, else 2)         */
} pb_vllm_knobs;
#define PB_FLASH_AUTO 0
#define PB_FLASH_VERSION_CHOICES "auto|2|3"                  /* for a PB_T_ENUM key  */

const char *pb_vllm_version_str(pb_vllm_version v);          /* "v0.1" "v0.2" "v1"   */
bool pb_vllm_version_parse(const char *s, pb_vllm_version *out);
#define PB_VLLM_VERSION_CHOICES "v0.1|v0.2|v1"               /* for a PB_T_ENUM key  */

/* The version's defaults for a model of max_model_len tokens on GPU hw (NULL: one
 * whose kind is unknown, vLLM's fallback tier -- get_batch_defaults when the device
 * cannot be queried); resolves "max(max_model_len, 2048)" and v1's GPU tiers
 * (memory_bytes >= 160 GiB; >= 70 GiB and no "a100" in hw->name; else the small
 * tier); kv_profile_tokens stays 0 where it follows the budget. */
void pb_vllm_knobs_default(pb_vllm_version v, int32_t max_model_len, const pb_hw *hw, pb_vllm_knobs *out);
/* Tokens of the KV rule's pass: kv_profile_tokens, or max_num_batched_tokens when 0. */
int32_t pb_vllm_knobs_profile_tokens(const pb_vllm_knobs *k);

#ifdef __cplusplus
}
#endif
#endif /* PB_VLLM_VERSION_H */
