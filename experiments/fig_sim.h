/* fig_sim.h -- the figures the cost model draws by itself: Fig. 1 and Fig. 19(a).
 *
 * Fig. 1 (right): OPT-13B on an A100-40GB.  Top: memory used vs batch size for
 * "existing systems" (every request reserves max_len = 2048 KV slots) and vLLM (a
 * request holds its live tokens rounded up to 16-token blocks).  Bottom: decode
 * throughput vs batch size of vLLM (paged kernel, Python engine), and of the
 * FasterTransformer-style engine (contiguous kernel, C++), from the sim.
 *   Workload (the paper does not state it): requests of ShareGPT's mean lengths,
 *   161 prompt and 338 output tokens (paper Fig. 11), decoding together, so the mean
 *   live context over a request's life is 161 + 338/2 = 330 tokens; one 161-token
 *   prefill per 338 output tokens is amortized into the throughput.
 *   Memory = parameters + KV (activations are not drawn, as in the paper).
 * Fig. 19(a): time to swap in, swap out (vLLM's one cudaMemcpyAsync per block per
 *   layer per K/V) and recompute (a prefill) the KV cache of N = 256 tokens of
 *   OPT-13B on an A100-40GB, vs block size 1..256.  The paper does not state N; 256
 *   is the size the hardware YAML's swap calibration assumed (see its sources).
 *
 * Each writer loads the specs from spec_dir (pb_spec_dir() by default), computes, and
 * writes its CSV atomically; `report` (may be NULL) gets a paper-vs-ours table.
 *
 *   results/fig1.csv    panel,series,batch,ours,paper
 *       panel memory_gb: ours = GB used at that batch (paper: digitized, interpolated)
 *       panel throughput_tok_s: series vllm | ft; ours = output tokens/s
 *       panel max_batch: batch = 0, ours = largest batch that fits the KV budget
 *       (paper: where its curves stop)
 *   results/fig19a.csv  block_size,operation,time_ms,paper
 *       operation recompute | swap_in | swap_out | swap_in_out
 * `paper` is empty where the paper has no point. */
#ifndef PB_FIG_SIM_H
#define PB_FIG_SIM_H

#include <stdio.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PB_FIG19A_TOKENS 256        /* tokens swapped / recomputed in Fig. 19(a) */

pb_status pb_fig1_write(const char *spec_dir, const char *csv_path, FILE *report);
pb_status pb_fig19a_write(const char *spec_dir, const char *csv_path, FILE *report);

#ifdef __cplusplus
}
#endif
#endif /* PB_FIG_SIM_H */
