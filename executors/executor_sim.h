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
 *     only, as vLLM's sampler pruned hidden states), M tokens x N outputs x K inputs,
 *     run the way cuBLAS/CUTLASS run them: the M x N output is cut into tiles of one
 *     shape (gemm_tiles: m x n), and K into k slices (split-K, gemm_splitk), one
 *     thread block (CTA) per tile and slice, the CTAs run in waves over the n_sms SMs.
 *     A configuration (m x n, k) takes
 *       compute = ceil(ceil(M/m) * ceil(N/n) * k / n_sms) * 2 m n ceil(K/k) / tile_rate
 *       tile_rate = min(peak/n_sms * gemm_flops_efficiency,            (SM math)
 *                       l2_bandwidth/n_sms * 2mn / ((m+n) dtype))    (operand feed)
 *       memory  = ((K N + M K + M N) dtype + (k > 1: 8 M N k, fp32 partials written
 *                 and read back)) / min(HBM * gemm_bw_efficiency,
 *                                       min(ceil(N/n) k, n_sms) * gemm_sm_bw)
 *                 (the weights stream through one CTA per tile column and K slice,
 *                 each at most gemm_sm_bw: a GEMM of few tile columns cannot fill HBM)
 *       time    = sqrt(compute^2 + memory^2) + gemm_fixed (x2 with k > 1: the
 *                 reduction is a second kernel)
 *     -- compute and memory overlap imperfectly, so the corner of the roofline is
 *     rounded (the profiles fit a power-mean exponent of 1.74; 2 fits as well and is
 *     what the sim uses).  The library's pick is the fastest configuration at M
 *     rounded up to the tile-height unit (gcd of the tile heights), timed at M;
 *     split-K is offered only while the tiles leave SMs idle and a slice keeps
 *     PB_SIM_SPLITK_MIN_K of K.  A tile reads (m+n)K operands for 2mnK FLOPs, so small
 *     tiles are L2-bound; co-resident CTAs share an SM's math, so a wave holds one
 *     CTA per SM.  Large GEMMs reduce to FLOPs / (peak * gemm_flops_efficiency); the
 *     few-row GEMMs of decode are memory-bound, the transition (64-256 rows) pays for
 *     padded tiles and partial waves.  Per (GEMM, ceil(M / gcd of tile heights)) the
 *     pick is tabulated at create time, so a step costs a lookup and a square root
 *     per GEMM.
 *   - prefill attention (causal, over cached prefix + new tokens): prefill_attn_fixed
 *     + FLOPs at prefill_attn_flops_efficiency of peak;
 *   - decode attention: one kernel call per layer,
 *       attn_fixed + attn_per_seq_head * seqs * heads
 *       + live KV bytes / (HBM * attn_stream_efficiency)
 *     i.e. the FasterTransformer-style contiguous kernel; the paged kernel adds its
 *     block-size law, from the structure of the paper's kernel (CacheFlow / vLLM 2023
 *     attention_kernels.cu: one CTA of 4 warps per (sequence, head), each warp takes
 *     one block per iteration and loads its physical number from the block table;
 *     q.K gives each token a thread group of max(32/b, 1) lanes loading vectors of
 *     max(16/group, dtype) bytes, logits.V gives each lane min(16/dtype, b) elements):
 *       + (b * blocks - live tokens) KV bytes / (HBM * attn_stream_efficiency)
 *                          (whole blocks are read, empty slots too)
 *       + per_request * KV heads * sum over (sequence, block) of
 *           2 table loads + b*head*dtype / warp_bytes_K(b) + b*head*dtype / warp_bytes_V(b)
 *           - 2 * b*head*dtype / 512       (FasterTransformer: 16 B a lane, 512 a warp)
 *     warp_bytes_K = 32 * max(16/group, dtype): 64 B at blocks 1-4, 128 at 8, 256 at
 *     16, 512 from 32 (fp16); warp_bytes_V = 32 * dtype * min(16/dtype, b): 64, 128,
 *     256 B at blocks 1, 2, 4, 512 from 8.  per_request = attn_paged_block_ns / 10, the
 *     requests of a block of 16 (PB_SIM_PAGED_CALIB_BLOCK, where Fig. 18a measured
 *     it).  Per token that is 9, 6, 4.5, 1.75, 0.63 requests at blocks 1, 2, 4, 8, 16,
 *     2/b from 32 on.  Limits: one measured block size (16) anchors it; requests of
 *     any width are taken to cost alike, and a table load like a data load; a
 *     sequence of fewer than 4 blocks leaves warps of its CTA idle, which is free in
 *     this model (the kernel is taken to be bandwidth-bound, not occupancy-bound);
 *     the project's own kernel (kernels/attention.cu) loads 16-byte vectors at every
 *     block size and would follow another law -- a GPU block-size sweep
 *     (calibrate.py) measures that one;
 *   - the flash kernel (attention_kernel: flash; FlashAttention-2's paged
 *     flash_attn_with_kvcache, the kernel family of vLLM V1's FLASH_ATTN and FlashInfer
 *     backends) replaces both attention terms, one call each for the step's prefills
 *     and its decodes, per layer:
 *       prefill: flash_prefill_fixed + causal FLOPs / (peak * flash_prefill_flops_eff)
 *                + (Q, K, V, O and cached-KV bytes) / (HBM * flash_prefill_bw_eff)
 *       decode:  flash_decode_fixed + flash_decode_seq_head * seqs * heads
 *                + live KV bytes / (HBM * flash_decode_bw_eff)
 *     fitted by experiments/calibrate/flash_attn.py on the A100 attention profile
 *     (whole and chunked prefills); block size does not enter (the profile's pages
 *     were 16 tokens).  As FlashAttention-3 (flash_version 3: vLLM V1 on Hopper) the
 *     prefill's FLOPs run at flash3_prefill_flops_efficiency (the FA3 paper's kernel
 *     benchmark on an H100, flash_attn.py --paper), its fixed and bytes terms and the
 *     decode stay FA2's;
 *   - norms, residuals, activations, KV-cache writes, embedding, sampling: bytes at
 *     elementwise_bw_efficiency of HBM + elementwise_fixed per kernel; a GPU gap per
 *     kernel;
 *   - tensor parallelism: two all-reduces per layer of T*hidden*2 bytes, each
 *     allreduce_tpN_us + bytes / allreduce_tpN_GBps (measured NCCL, by message size),
 *     or with custom_allreduce (vLLM V1's default: its own one-shot / symmetric-memory
 *     kernels, the fastest per size) custom_allreduce_tpN_us + bytes /
 *     custom_allreduce_tpN_GBps (published per-call timings on H100,
 *     experiments/calibrate/custom_allreduce.py); the vocab-parallel logits gather
 *     stays at the NCCL terms (an all-gather).  N: the measured tp at or above.
 * Swap = per block, per layer, per K and V: one cudaMemcpyAsync of
 *   block_size * kv_heads/tp * head_size * kv bytes, costing a per-copy latency +
 *   bytes / bandwidth, per direction (vLLM's swap_blocks loop).
 * KV bytes per element (kv_elem_bytes): the model's dtype, or 1 with an fp8 KV cache
 *   (a system's kv_cache_dtype, spec.h kv_dtype_bytes): decode attention reads, the
 *   KV write's stores, cached-prefix reads, copy-on-write and swap move half as
 *   many bytes; the KV slots double (spec.h).  Not modelled: fp8 -> fp32
 *   conversion work in the attention kernel (the decode kernel stays at the
 *   attn_stream_efficiency of its fp16 calibration; vLLM's A100 path converts in
 *   software, H100 in hardware), and kv_scale (numerics only).
 * Kernel launches (launch_terms): eager, every kernel costs the host launch_us
 *   (framework) and the GPU kernel_gap_us between dependent kernels.  With CUDA
 *   graphs (a system's cuda_graphs: true; graph_pool.h) a decode step of 1..256
 *   sequences runs padded to its captured batch size (GEMMs, element-wise work and
 *   attention at the padded size; padding rows attend one token), its forward pass
 *   (embedding, layers, final norm) is one graph launch: host
 *   cuda_graph_launch_us, GPU cuda_graph_node_gap_us between its kernels; the LM
 *   head and the sampler stay eager.  Framework host time is unchanged (vLLM still
 *   prepares inputs in Python) and so is the KV space (v0.2.6 sizes the cache
 *   before capturing).  Error bars: the gaps count in the element-wise term and the
 *   graph launch in the host term (pb_sim_totals), whose residuals they take; the two
 *   cuda_graph_* keys are published figures with no residual of their own.
 * Quantized weights (a system's `weights`, kernels/wquant.h; spec.h
 *   pb_linear_weight_bytes): the layer GEMMs (QKV, output, FFN) read their weights
 *   in the format's bytes (int8 / fp8 about half of fp16, int4 with its group-128
 *   scales and zeros 0.26x), and their compute side carries the dequantization
 *   work at wq_<format>_compute_ratio, the quantized kernel's compute-bound
 *   throughput relative to the fp16 GEMM's (published kernel measurements, cited in
 *   the YAML):
 *     compute = 2 M K N / (peak * gemm_flops_efficiency * wq_<format>_compute_ratio)
 *     memory  = (weight bytes + (M K + M N) dtype) / (HBM * gemm_bw_efficiency)
 *     time    = sqrt(compute^2 + memory^2) + gemm_fixed
 *   the fp16 GEMM's rounded roofline with Marlin's own terms (its README's ideal():
 *   bytes / bandwidth and FLOPs / peak, all SMs streaming the weights); such kernels
 *   tile small M by 16 rows, so cuBLAS's tiles, waves and split-K above are not
 *   applied to them.  Residual: the GEMM term's for the composition (the fp16 fit);
 *   the compute ratios' own is unknown.  The LM head stays fp16; the KV space grows
 *   by the weight bytes saved (spec.h).
 * Copy-on-write = one fused copy kernel: read + write of every copied block.
 * Recompute is a prefill of prompt + generated tokens, which the engine sends.
 *
 * Calibration, micro level only (sources and residuals in the YAML):
 * experiments/calibrate/calibrate.py fits GEMM (its residual per token-count bucket in
 * the YAML's source), element-wise, prefill-attention,
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

typedef enum { PB_SIM_ATTN_PAGED = 0, PB_SIM_ATTN_CONTIGUOUS = 1, PB_SIM_ATTN_FLASH = 2 } pb_sim_attn;
typedef enum { PB_SIM_FW_PYTHON = 0, PB_SIM_FW_CPP = 1, PB_SIM_FW_V1 = 2 } pb_sim_framework;

/* Host-side overheads of one serving framework (seconds). */
typedef struct {
    double step_s;          /* per step: scheduling, input preparation, output handling */
    double seq_s;           /* per sequence in the batch, per step                      */
    double launch_s;        /* host time to issue one kernel                            */
    double worker_s;        /* per step when tp > 1 (worker RPC, barrier)               */
    double worker_seq_s;    /* per sequence per step when tp > 1 (inputs sent to workers) */
} pb_sim_fw_cost;

#define PB_SIM_MAX_TILES 16
#define PB_SIM_MAX_SPLITS 8
#define PB_SIM_SPLITK_MIN_K 128  /* a split-K slice keeps at least this much of K */
#define PB_SIM_PAGED_CALIB_BLOCK 16  /* attn_paged_block_ns was measured at block 16, head 128, fp16 */
#define PB_SIM_AR_TPS 3          /* all-reduce fits at tp = 2, 4, 8 (larger tp: the tp-8 fit) */
/* The all-reduce fit a tp uses (0, 1, 2: tp 2, 4, 8): the nearest measured tp at or above,
   tp 8's above 8.  Its tp is 2 << index. */
static inline int pb_sim_ar_fit(int32_t tp) { return tp <= 2 ? 0 : tp <= 4 ? 1 : 2; }

/* The cost model's terms, as its calibration residuals are known per term. */
typedef enum {
    PB_SIM_T_GEMM = 0,        /* GEMMs and the LM head                               */
    PB_SIM_T_ELEM,            /* element-wise kernels, sampling, kernel gaps          */
    PB_SIM_T_PREFILL_ATTN,    /* prefill attention                                   */
    PB_SIM_T_DECODE_ATTN,     /* decode attention (paged or contiguous)              */
    PB_SIM_T_ALLREDUCE,       /* tensor-parallel all-reduces                          */
    PB_SIM_T_HOST,            /* framework host work (and host issue beyond the GPU)  */
    PB_SIM_T_SWAP,            /* swap and copy-on-write                               */
    PB_SIM_N_TERMS
} pb_sim_term;
#define PB_SIM_TERM_NAMES {"gemm", "elementwise", "prefill_attn", "decode_attn", "allreduce", "host", "swap"}

/* The hardware YAML's cost_model: map, in SI units. */
typedef struct {
    double gemm_flops_eff;       /* achievable / peak fp16 tensor FLOP/s (large GEMMs)  */
    double l2_bw;                /* L2 -> SM operand bandwidth, whole GPU, bytes/s      */
    int n_tiles;                 /* GEMM output tile shapes the library chooses from    */
    int32_t tile_m[PB_SIM_MAX_TILES], tile_n[PB_SIM_MAX_TILES];
    double gemm_bw_eff;          /* memory-bound GEMM: achieved / datasheet HBM bw      */
    double gemm_sm_bw;           /* bytes/s one SM's CTAs stream (a few CTAs: less HBM)  */
    int n_splits;                /* split-K factors the library chooses from            */
    int32_t splitk[PB_SIM_MAX_SPLITS];
    double elem_bw_eff;          /* element-wise kernels: achieved / datasheet HBM bw   */
    double prefill_attn_flops_eff; /* prefill attention kernel FLOP/s / peak            */
    double attn_fixed_s;         /* decode attention: per kernel call                   */
    double attn_seq_head_s;      /* decode attention: per (sequence, query head)        */
    double attn_stream_eff;      /* decode attention: live-KV read rate / datasheet HBM */
    double attn_paged_block_s;   /* paged kernel: per (sequence, KV head, block)        */
    double flash_dec_fixed_s, flash_dec_seq_head_s, flash_dec_bw_eff;   /* flash kernel (below) */
    double flash_pre_fixed_s, flash_pre_flops_eff, flash_pre_bw_eff;
    double flash3_pre_flops_eff; /* FlashAttention-3's prefill FLOP/s / peak; 0 = not given
                                    (a GPU that does not run FA3)                       */
    double kernel_gap_s;         /* GPU idle between dependent kernels                  */
    double gemm_fixed_s;         /* per GEMM kernel, on top of max(compute, bytes)      */
    double elem_fixed_s;         /* per element-wise kernel, on top of its bytes        */
    double prefill_attn_fixed_s; /* per prefill attention kernel call                   */
    double ar_lat_s[PB_SIM_AR_TPS];  /* one all-reduce at tp = 2, 4, 8: latency        */
    double ar_bw[PB_SIM_AR_TPS];     /* ... and algorithm bandwidth, bytes/s            */
    bool has_custom_ar[PB_SIM_AR_TPS];     /* custom_allreduce_tpN_* given (vLLM's own     */
    double custom_ar_lat_s[PB_SIM_AR_TPS]; /* all-reduce kernels, a system's               */
    double custom_ar_bw[PB_SIM_AR_TPS];    /* custom_allreduce: true at that tp needs them) */
    double ar_norm_fusion_bytes[PB_SIM_AR_TPS]; /* all-reduce + RMSNorm fusion at tp = 2, 4, 8
                                           exactly: its largest all-reduce, bytes; 0 = none
                                           (V1 fuses only where given: SM 9.0 / 10.x)   */
    double swap_h2d_bw, swap_d2h_bw;       /* bytes/s of one block copy, per direction */
    double swap_h2d_copy_s, swap_d2h_copy_s; /* per cudaMemcpyAsync, per direction      */
    pb_sim_fw_cost fw[3];        /* [PB_SIM_FW_PYTHON], [PB_SIM_FW_CPP], [PB_SIM_FW_V1]:
                                    v1's step_s and seq_s are PB_SIM_V1_* below (vLLM's
                                    own code timed on a CPU, not per GPU), its launch_s
                                    the python framework's, worker terms 0             */
    /* cost_model.residuals: per term, the 10th and 90th percentile of measured /
       predicted over the term's calibration data (1, 1 where none is known) */
    double resid_lo[PB_SIM_N_TERMS], resid_hi[PB_SIM_N_TERMS];
    bool has_graph_costs;        /* both cuda_graph_* keys given (cuda_graphs needs them) */
    double graph_launch_s;       /* host time of one cudaGraphLaunch                    */
    double graph_node_gap_s;     /* GPU idle between the kernels of a replayed graph    */
    double wq_ratio[5];          /* per weight format (wquant.h): the quantized GEMM
                                    kernel's compute-bound throughput / fp16's; 0 = not
                                    given (that format is then refused); [0] (fp16) is
                                    not read                                           */
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
    double time_scale;           /* every step's latency times this (1; error-bar replicas) */
    bool async_sched;            /* asynchronous scheduling (below)                     */
    int32_t graph_max_tokens;    /* V1 CUDA graphs up to this many tokens (below); 0 none */
    bool cuda_graphs;            /* v0.x: decode steps replay CUDA graphs as v0.2.6 (a
                                    system's cuda_graphs; needs has_graph_costs)       */
    bool custom_allreduce;       /* tp > 1: the layers' all-reduces at the custom_allreduce
                                    terms (needs has_custom_ar at the tp), not NCCL's  */
    int flash_version;           /* the flash kernel's FlashAttention version: 2, or 3
                                    (prefill at flash3_pre_flops_eff, which it needs)  */
    bool fused_add_norm;         /* each residual add + norm is one kernel (below)      */
    int32_t ar_norm_max_tokens;  /* tp > 1: steps of at most this many tokens run the
                                    layers' adds and norms inside their all-reduce
                                    kernels (below); 0 = never                          */
} pb_sim_params;

/* Fused element-wise work (vLLM V1's compiled model, v0.33.0; v0.2's fused add + RMSNorm):
 * fused_add_norm: a residual add and the norm after it are one kernel -- RMSNorm with a
 *   residual is one fused_add_rms_norm op (model_executor/layers/layernorm.py:79-99,
 *   native and CUDA forms), and Inductor fuses OPT's add + LayerNorm the same way --
 *   so a layer has 2 such kernels, not 2 norms + 2 adds, each reading x and the
 *   residual and writing both (8 h bytes a token a layer instead of 10 h);
 * ar_norm_max_tokens: the all-reduce + RMSNorm fusion (PassConfig fuse_allreduce_rms,
 *   on at -O2 with TP > 1 on SM 9.0 / 10.x and FlashInfer installed, config/vllm.py:
 *   179-203, 302; compilation/passes/fusion/allreduce_rms_fusion.py): in the compile
 *   range of steps up to max_size / (hidden x dtype bytes) tokens (config/vllm.py:
 *   2668-2694; :1128-1132) FlashInfer's fused kernel does each all-reduce, the residual
 *   add and the norm, so those steps drop the layer's add / norm kernels and bytes; the
 *   all-reduce keeps its own terms (custom_allreduce_tpN_* includes a fused kernel's
 *   timing at TP 2; at TP 4 / 8 the norm's work inside it is taken as free).
 * Who fuses (experiments/system.c sets it; a system's sim.fused_add_norm overrides):
 * engine v1, every model; v0.2 (v0.2.2-v0.2.7), the Llama family -- vllm-project/vllm#1667
 * made RMSNorm(x, residual) one fused_add_rms_norm kernel before v0.2.2 shipped (the
 * v0.2.2 and v0.2.7 wheels' model_executor/layers/layernorm.py forward(); the decoder
 * layers of llama.py, yi.py, qwen.py, internlm.py, mistral.py and baichuan.py pass the
 * residual), while OPT's add and LayerNorm stay apart (opt.py); v0.1, no model.
 * `validate`'s vllm rows keep them apart, as Sarathi-Serve's engine does (its RMSNorm
 * takes no residual: sarathi/model_executor/layers/layernorm.py). */

/* vLLM V1's engine-core host time per step and per scheduled request: Scheduler.schedule()
 * + update_from_output() of vLLM v0.33.0 timed with no model on this repository's CPU
 * (experiments/calibrate/v1_host.py, the fit and its residual there and in
 * docs/DESIGN.md §5).  Replaced by the framework.v1 entry of the hardware's cost model
 * where one is measured on that machine.  Not in it: the worker's input preparation,
 * which v0.33.0's default Model Runner V2 runs as Triton kernels on the GPU
 * (config/vllm.py:731-766, v1/worker/gpu/input_batch.py:279-757: a few launches a step,
 * no loop over requests), and the API server's process (overlapped; within 3% of the
 * offline engine when V1 split it off, vllm-project/vllm#11636). */
extern const double PB_SIM_V1_STEP_S, PB_SIM_V1_SEQ_S;

/* Asynchronous scheduling (vLLM V1, async_scheduling): the host work of a step
 * (framework time) runs while the GPU runs the step before, so a step costs
 *     max(framework, max(GPU, kernel issue)) + sync
 * instead of the sum; sync is one device-to-host copy of the sampled token ids
 * (hardware pcie_copy_latency_us).
 * V1 CUDA graphs (graph_max_tokens > 0; FULL_AND_PIECEWISE, v0.33.0
 * config/compilation.py:618-636, sizes up to min(2 max_num_seqs, 512),
 * config/vllm.py:2398-2410): a pure decode step of at most graph_max_tokens tokens
 * is one FULL graph (host: one cuda_graph_launch_us; GPU: cuda_graph_node_gap_us
 * between its kernels); a step with prefill tokens and at most graph_max_tokens tokens
 * is PIECEWISE: its attention kernels are issued eagerly (launch_us each, kernel_gap_us
 * after each) and the layers + 1 pieces between them are one graph launch each
 * (cuda_graph_launch_us; node gaps inside); larger steps run eagerly.  Batches are not
 * padded to the capture sizes (not modelled).  The same constants as v0.2.6's decode
 * graphs ("Kernel launches" above): both are modes of launch_terms in executor_sim.c,
 * switched by the one cuda_graphs key (its engine's default), and both need the
 * hardware's cuda_graph_* costs (pb_sim_create refuses a spec without them). */

pb_sim_params pb_sim_params_default(void);     /* vLLM: paged, python, analytic */
/* Overlay a system's `sim:` map (attention_kernel, framework, fused_add_norm: each when
 * given; profile) onto *out, whose attention kernel, framework and fusion the caller set
 * (the system type's and the engine's).  NULL node: *out unchanged.  Validates against pb_sim_system_schema. */
pb_status pb_sim_params_from_node(const pb_node *n, pb_sim_params *out, pb_cfg_err *err);

/* ---- the model as plain functions (tests, figures, the executor) ---- */
typedef struct pb_sim pb_sim;

/* tp must divide n_heads and n_kv_heads.  A profile that cannot be read is an error
 * (PB_ERR_IO / PB_ERR_INVALID with the message in err), so is cuda_graphs on a
 * hardware spec without the cuda_graph_* costs. */
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
    int32_t graph_batch;         /* CUDA graphs: the padded batch replayed; 0 = eager  */
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

/* ---- error bars ---- */
/* The seconds a run spent in each term (unscaled by time_scale), summed over its steps. */
typedef struct {
    double t[PB_SIM_N_TERMS];
    int64_t steps;
} pb_sim_totals;

/* The interval (lo, hi) of the run's step-time factor truth / prediction at the central
 * `interval` (0.8: the 10th and 90th percentiles): each term's factor is lognormal with
 * its cost_model.residuals p10..p90 as the central 80%, drawn once for the whole run
 * (a systematic error) and independently of the others, and the run's factor is their
 * mean weighted by the terms' shares of the run's time.  Computed from a fixed number of
 * draws of a fixed seed: the same inputs give the same interval.  A run without time
 * gives (1, 1). */
void pb_sim_step_factor(const pb_sim_cost *c, const pb_sim_totals *t, double interval, double *lo, double *hi);

/* Invariants of a sim (positive rates, sane shapes).  PB_OK or PB_ERR_INVALID. */
pb_status pb_sim_check(const pb_sim *s);

/* ---- the executor ---- */
/* The executor owns a copy of everything it needs.  Returns NULL on error (message
 * in err).  Destroy with pb_executor_destroy(). */
pb_executor *pb_executor_sim_create(const pb_model *m, const pb_hw *hw, const pb_sim_cost *c,
                                    int32_t tp, const pb_sim_params *p, pb_cfg_err *err);
const pb_sim *pb_executor_sim_model(const pb_executor *ex);   /* NULL if not a sim */
/* The seconds per term of every step the executor ran (NULL if not a sim). */
const pb_sim_totals *pb_executor_sim_totals(const pb_executor *ex);

#ifdef __cplusplus
}
#endif
#endif /* PB_EXECUTOR_SIM_H */
