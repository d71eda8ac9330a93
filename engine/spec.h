/* spec.h -- model and hardware specifications, and the KV capacity they imply.
 *
 * Specs are YAML files, experiments/models/<name>.yaml and
 * experiments/hardware/<name>.yaml, included by name from an experiment config
 * (`model: opt-13b`, `hardware: a100-40gb`).  Every numeric hardware figure has a
 * `sources:` entry (datasheet, microbenchmark or the paper) -- the loader rejects a
 * hardware spec with an unsourced number.
 *
 * The one place where KV sizes are computed (paper §3, Table 1):
 *   kv_bytes_per_token = 2 (K and V) * n_layers * n_kv_heads * head_size * dtype_bytes
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
} pb_model;

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
 * every number it sets (errors name the key).  Returns PB_OK or PB_ERR_INVALID. */
pb_status pb_model_from_node(const pb_node *n, pb_model *out, pb_cfg_err *err);
pb_status pb_hw_from_node(const pb_node *n, pb_hw *out, pb_cfg_err *err);
/* Load a spec by name from spec_dir/{models,hardware}/<name>.yaml. */
pb_status pb_model_load(const char *spec_dir, const char *name, pb_model *out, pb_cfg_err *err);
pb_status pb_hw_load(const char *spec_dir, const char *name, pb_hw *out, pb_cfg_err *err);

/* Where the spec YAMLs live: $PAGEDBENCH_SPECS, else <source dir>/experiments. */
const char *pb_spec_dir(void);

double pb_kv_bytes_per_token(const pb_model *m, int32_t tp);   /* per GPU */
double pb_param_bytes(const pb_model *m);                       /* whole model */

/* KV capacity the way the paper's harness (CacheFlow memory_analyzer) computed it:
 *   usable  = gpu_mem_util * mem_bytes                        (per GPU)
 *   kv      = usable - params/tp - peak activations(max_batched_tokens) - 1 GiB workspace
 *   blocks  = floor(kv / kv_bytes_per_block)                  (per GPU == whole system)
 * Peak activations (fp16): max(2*(max(3*T*h/tp, T*ffn/tp) + T*h), 2*T*vocab) elements,
 * with T = max_batched_tokens (FlashAttention: no attention maps). */
/* Tokens of the activation estimate in the KV budget.  The paper's harness passed its
 * max_num_batched_tokens; we use 2048 (OPT's maximum length) because that is the value
 * under which the paper's own numbers agree with each other: Table 1's 15.7K slots for
 * OPT-13B (983 blocks of 16) and Fig. 2's 8.9% "external fragmentation & others" of
 * Orca (Max), which is (15,728 - 7 x 2048) / 15,728.  The harness default 2560 would
 * give 975 blocks (15.6K slots, 8.1%).  One value serves every figure. */
#define PB_KV_PROFILE_TOKENS 2048

typedef struct {
    double usable_bytes, param_bytes_per_gpu, act_bytes, workspace_bytes;
    double kv_bytes_per_gpu;    /* memory left for the KV cache on each GPU       */
    double kv_bytes_total;      /* summed over the tp GPUs                        */
    int64_t num_blocks;         /* physical KV blocks (same on every GPU)         */
    int64_t num_slots;          /* num_blocks * block_size token slots            */
} pb_kv_capacity;

pb_status pb_kv_capacity_compute(const pb_model *m, const pb_hw *hw, int32_t tp, int32_t block_size,
                                 int32_t max_batched_tokens, double gpu_mem_util,
                                 pb_kv_capacity *out);

#ifdef __cplusplus
}
#endif
#endif /* PB_SPEC_H */
