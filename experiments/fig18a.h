/* fig18a.h -- Fig. 18(a): decode attention kernel latency, vLLM's paged kernel vs a
 * FasterTransformer-style contiguous kernel, batch 8 and 32 x context 64, 128, 256.
 *
 * The paper does not state the model or the GPU; we use OPT-13B heads (40 x 128,
 * fp16), block size 16, A100-40GB (a plausible guess).  Two sources:
 *   cost_model  the sim's decode-attention term for ONE kernel call (one layer) of a
 *               decode-only batch (pb_sim_step_breakdown().decode_attn_s / n_layers),
 *               paged and contiguous, from experiments/hardware/a100-40gb.yaml.
 *               Those attention terms (attn_fixed_us, attn_per_seq_head_ns,
 *               attn_stream_eff, attn_paged_block_ns) were FIT to these very points,
 *               so this is a calibration check, not a prediction.
 *   gpu         with a usable CUDA device: our kernels (kernels/attention.cu) timed by
 *               the kernel benchmark's fig18a grid (kbench.h: CUPTI, cold L2, median
 *               of 20), on whatever GPU this is (named in the device column).
 * Paper points: experiments/paper/fig18a.csv.
 *
 *   results/fig18a.csv
 *     source,device,kernel,batch,context_len,latency_us,paper_us,vs_paper_pct,overhead_pct
 *     kernel vllm (paged) | ft (contiguous); vs_paper_pct = 100 (ours / paper - 1);
 *     overhead_pct (vllm rows) = 100 (paged / contiguous - 1) of the same source.
 * `report` (may be NULL) gets a paper-vs-ours table; gpu_status (may be NULL) gets
 * "measured on <device>" or "SKIPPED (<reason>)". */
#ifndef PB_FIG18A_H
#define PB_FIG18A_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Compute and write the CSV atomically.  with_gpu: also run the GPU grid when a
 * device is usable.  Errors: PB_ERR_IO / PB_ERR_INVALID (specs or paper file). */
pb_status pb_fig18a_write(const char *spec_dir, const char *csv_path, bool with_gpu, FILE *report,
                          char *gpu_status, size_t gpu_status_n);

/* The cost model's latency (µs) of one decode-attention kernel call: n_seqs
 * sequences of context ctx, OPT-13B on A100-40GB, paged (block 16) or contiguous. */
pb_status pb_fig18a_cost_model_us(const char *spec_dir, bool paged, int n_seqs, int ctx, double *us);

#ifdef __cplusplus
}
#endif
#endif /* PB_FIG18A_H */
