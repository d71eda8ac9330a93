/* executor_sim.h -- the `sim` executor: a first-principles cost model of one
 * serving step on A100 / H100 / H200 class GPUs (docs/DESIGN.md §5).
 *
 * A step's latency is
 *
 *   framework(step, per sequence, per extra TP worker) host work that does not overlap
 *   + max(GPU time, host kernel-issue time)             the forward pass
 *   + swap + copy-on-write                              memory operations, before it
 *
 * GPU time is a sum over the model's operators, per layer and per GPU (work / tp):
 *   - GEMMs (QKV, output, FFN; LM head for the last token of each SAMPLED sequence
 *     only, as vLLM's sampler pruned hidden states), M tokens x N outputs x K inputs:
 *       max(compute, bytes / (HBM * gemm_bw_efficiency)) + gemm_fixed
 *     where compute is TILE AND WAVE QUANTIZED, as cuBLAS/CUTLASS run a GEMM: the
 *     M x N output is cut into tiles of one shape (gemm_tiles: m x n), one thread
 *     block per tile, the tiles run in waves over the n_sms SMs, so
 *       compute = min over tile shapes of
 *                 ceil(ceil(M/m) * ceil(N/n) / n_sms) * 2 m n K / tile_rate(m, n)
 *       tile_rate = min(peak/n_sms * gemm_flops_efficiency,            (SM math)
 *                       l2_bandwidth/n_sms * 2mn / ((m+n) dtype))    (operand feed)
 *     (the best shape per GEMM, as a heuristic library picks; a tile reads (m+n)K
 *     operands for 2mnK FLOPs, so small tiles are L2-bound).  Co-resident thread
 *     blocks share an SM's math, so the wave count uses one tile per SM.  Large
 *     GEMMs reduce to FLOPs / (peak * gemm_flops_efficiency) as before; the
 *     small-M GEMMs of prefill / recompute pay for partial waves and padded tiles.
 *     Per (GEMM, ceil(M / gcd of tile heights)) the compute time is tabulated at
 *     create time, so a step costs a lookup per GEMM.
 *   - prefill attention (causal, over cached prefix + new tokens): prefill_attn_fixed
 *     + FLOPs at prefill_attn_flops_efficiency of peak;
 *   - decode attention: one kernel call per layer,
 *       attn_fixed + attn_per_seq_head * seqs * heads
 *       + live KV bytes / (HBM * attn_stream_efficiency)
 *       (+ paged: attn_paged_block * (sequence, KV head, block) lookups)
 *     i.e. the FasterTransformer-style contiguous kernel, or the paged kernel whose
 *     extra cost grows with the number of blocks (small blocks = more lookups);
 *   - norms, residuals, activations, KV-cache writes, embedding, sampling: bytes at
 *     elementwise_bw_efficiency of HBM + elementwise_fixed per kernel; a GPU gap per
 *     kernel;
 *   - tensor parallelism: two all-reduces per layer of T*hidden*2 bytes, each
 *     allreduce_tpN_us + bytes / allreduce_tpN_GBps (measured NCCL, by message size).
 * Swap = per block, per layer, per K and V: one cudaMemcpyAsync of
 *   block_size * kv_heads/tp * head_size * dtype bytes, costing a per-copy latency +
 *   bytes / bandwidth, per direction (vLLM's swap_blocks loop).
 * Copy-on-write = one fused copy kernel: read + write of every copied block.
 * Recompute is a prefill of prompt + generated tokens, which the engine sends.
 *
 * Calibration, micro level only (sources and residuals in the YAML):
 * experiments/calibrate/calibrate.py fits GEMM, element-wise, prefill-attention,
 * all-reduce and host (framework.python) terms on real per-operator GPU timings
 * (../shared/data/gpu-profiles); the paper's Fig. 18a sets the decode-attention
 * kernel terms and Fig. 19a the swap terms; GEMM tile shapes, SM count and L2
 * bandwidth come from NVIDIA's documents.  No serving figure sets a parameter:
 * knees, batch sizes, block-size trends are predictions, checked by `pagedbench
 * validate` against public step-level measurements.
 *
 * Host framework per step: step + seq * n_seqs, plus worker + worker_seq * n_seqs
 * when tp > 1 (vLLM's Ray workers get the step's inputs every step).
 *
 * Parameters.  Hardware numbers come from experiments/hardware/<gpu>.yaml: the base
 * keys (pb_hw) and its `cost_model:` map (pb_sim_cost, schema
 * pb_sim_cost_schema), every number with a `sources:` entry.  Host framework
 * overheads are part of that map too (framework.python / framework.cpp), because
 * they were measured on that machine.  A system picks its attention kernel and
 * framework with pb_sim_params (schema pb_sim_system_schema), e.g. in a system YAML:
 *     sim: {attention_kernel: contiguous, framework: cpp}
 *
 * Measured profiles.  With params.profile set, the forward pass comes from a step
 * latency table measured on a real GPU (executors/sim_profile.h) instead of the
 * operator sum; framework overheads and memory operations stay analytic.
 *
 * Cost: execute() is O(n_seqs) with no allocation; it never fails on a valid batch.
 * The sim produces no tokens (has_tokens == false). */
#ifndef PB_EXECUTOR_SIM_H
#define PB_EXECUTOR_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "executor.h"
#include "pb.h"
#include "spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_SIM_ATTN_PAGED = 0, PB_SIM_ATTN_CONTIGUOUS = 1 } pb_sim_attn;
typedef enum { PB_SIM_FW_PYTHON = 0, PB_SIM_FW_CPP = 1 } pb_sim_framework;

/* Host-side overheads of one serving framework (seconds). */
typedef struct {
    double step_s;          /* per step: scheduling, input preparation, output handling */
    double seq_s;           /* per sequence in the batch, per step                      */
    double launch_s;        /* host time to issue one kernel                            */
    double worker_s;        /* per step when tp > 1 (worker RPC, barrier)               */
    double worker_seq_s;    /* per sequence per step when tp > 1 (inputs sent to workers) */
} pb_sim_fw_cost;

#define PB_SIM_MAX_TILES 16
#define PB_SIM_AR_TPS 3          /* all-reduce fits at tp = 2, 4, 8 (larger tp: the tp-8 fit) */

/* The hardware YAML's cost_model: map, in SI units. */
typedef struct {
    double gemm_flops_eff;       /* achievable / peak fp16 tensor FLOP/s (large GEMMs)  */
    double l2_bw;                /* L2 -> SM operand bandwidth, whole GPU, bytes/s      */
    int n_tiles;                 /* GEMM output tile shapes the library chooses from    */
    int32_t tile_m[PB_SIM_MAX_TILES], tile_n[PB_SIM_MAX_TILES];
    double gemm_bw_eff;          /* memory-bound GEMM: achieved / datasheet HBM bw      */
    double elem_bw_eff;          /* element-wise kernels: achieved / datasheet HBM bw   */
    double prefill_attn_flops_eff; /* prefill attention kernel FLOP/s / peak            */
    double attn_fixed_s;         /* decode attention: per kernel call                   */
    double attn_seq_head_s;      /* decode attention: per (sequence, query head)        */
    double attn_stream_eff;      /* decode attention: live-KV read rate / datasheet HBM */
    double attn_paged_block_s;   /* paged kernel: per (sequence, KV head, block)        */
    double kernel_gap_s;         /* GPU idle between dependent kernels                  */
    double gemm_fixed_s;         /* per GEMM kernel, on top of max(compute, bytes)      */
    double elem_fixed_s;         /* per element-wise kernel, on top of its bytes        */
    double prefill_attn_fixed_s; /* per prefill attention kernel call                   */
    double ar_lat_s[PB_SIM_AR_TPS];  /* one all-reduce at tp = 2, 4, 8: latency        */
    double ar_bw[PB_SIM_AR_TPS];     /* ... and algorithm bandwidth, bytes/s            */
    double swap_h2d_bw, swap_d2h_bw;       /* bytes/s of one block copy, per direction */
    double swap_h2d_copy_s, swap_d2h_copy_s; /* per cudaMemcpyAsync, per direction      */
    pb_sim_fw_cost fw[2];        /* [PB_SIM_FW_PYTHON], [PB_SIM_FW_CPP]                 */
} pb_sim_cost;

extern const pb_key pb_sim_cost_schema[];      /* hardware.cost_model               */
extern const pb_key pb_sim_system_schema[];    /* a system's `sim:` map             */

/* Parse a validated hardware map's cost_model: (every number needs
 * sources.cost_model.<key> or a `sources:` map inside cost_model).  A hardware spec
 * without cost_model gives PB_ERR_INVALID naming the spec. */
pb_status pb_sim_cost_from_node(const pb_node *hw_root, pb_sim_cost *out, pb_cfg_err *err);
pb_status pb_sim_cost_load(const char *spec_dir, const char *hw_name, pb_sim_cost *out,
                           pb_cfg_err *err);

/* Per-system choices. */
typedef struct {
    pb_sim_attn attn;            /* decode attention kernel                             */
    pb_sim_framework framework;  /* whose host overheads apply                          */
    char profile[1024];          /* measured step profile CSV ("" = analytic)           */
} pb_sim_params;

pb_sim_params pb_sim_params_default(void);     /* vLLM: paged, python, analytic */
/* Overlay a system's `sim:` map (attention_kernel, framework: each when given;
 * profile) onto *out, whose attention kernel and framework the caller set (the
 * system type's).  NULL node: *out unchanged.  Validates against pb_sim_system_schema. */
pb_status pb_sim_params_from_node(const pb_node *n, pb_sim_params *out, pb_cfg_err *err);

/* ---- the model as plain functions (tests, figures, the executor) ---- */
typedef struct pb_sim pb_sim;

/* tp must divide n_heads and n_kv_heads.  A profile that cannot be read is an error
 * (PB_ERR_IO / PB_ERR_INVALID with the message in err). */
pb_status pb_sim_create(const pb_model *m, const pb_hw *hw, const pb_sim_cost *c, int32_t tp,
                        const pb_sim_params *p, pb_sim **out, pb_cfg_err *err);
void pb_sim_destroy(pb_sim *s);

/* Latency of one batch (the executor's execute(), without the vtable). */
void pb_sim_step(const pb_sim *s, const pb_batch *b, pb_step_result *res);

/* Breakdown of a step's forward pass (seconds), for tests and figures. */
typedef struct {
    double gemm_s, lm_head_s, prefill_attn_s, decode_attn_s, elementwise_s, allreduce_s,
        sampling_s, gpu_s, host_issue_s, framework_s, total_s;
    int64_t kernels;
} pb_sim_breakdown;
void pb_sim_step_breakdown(const pb_sim *s, const pb_batch *b, pb_sim_breakdown *out);

/* Convenience (seconds): a decode step of n_seqs sequences of context ctx each with
 * blocks of block_size tokens (ignored by the contiguous kernel), framework included;
 * one prefill step of n_tokens; the swap of n_blocks blocks of block_size tokens in
 * one direction (to_gpu: host -> device). */
double pb_sim_decode_time(const pb_sim *s, int32_t n_seqs, int32_t ctx, int32_t block_size);
double pb_sim_prefill_time(const pb_sim *s, int32_t n_tokens);
double pb_sim_swap_time(const pb_sim *s, int64_t n_blocks, int32_t block_size, bool to_gpu);
/* One GEMM of M x K times K x N on one GPU (seconds): the model above, untabulated. */
double pb_sim_gemm_time(const pb_sim *s, double M, double K, double N);

/* Invariants of a sim (positive rates, sane shapes).  PB_OK or PB_ERR_INVALID. */
pb_status pb_sim_check(const pb_sim *s);

/* ---- the executor ---- */
/* The executor owns a copy of everything it needs.  Returns NULL on error (message
 * in err).  Destroy with pb_executor_destroy(). */
pb_executor *pb_executor_sim_create(const pb_model *m, const pb_hw *hw, const pb_sim_cost *c,
                                    int32_t tp, const pb_sim_params *p, pb_cfg_err *err);
const pb_sim *pb_executor_sim_model(const pb_executor *ex);   /* NULL if not a sim */

#ifdef __cplusplus
}
#endif
#endif /* PB_EXECUTOR_SIM_H */
