/* baselines.h -- the paper's baseline systems' scheduler policies (paper §6.1).
 *
 *   orca  (policy_orca.c)  iteration-level FCFS admission while the contiguous
 *                          reservation fits and the step budgets allow; decodes all
 *                          running groups; never preempts.  Pair it with the
 *                          contiguous KV manager (kv_contiguous.h) with reservation
 *                          oracle, pow2 or max for Orca (Oracle / Pow2 / Max).
 *   ft    (policy_ft.c)    FasterTransformer with a Triton-style dynamic batcher:
 *                          request-level batches of up to B earliest-arrived
 *                          requests, run until the longest finishes; every request
 *                          of a batch completes when the batch completes.  Pair it
 *                          with the contiguous KV manager, reservation max.
 *
 *   hf    (policy_hf.c)    HF Transformers (2023) as vLLM's launch post ran it:
 *                          static batches packed in arrival order, prompts padded
 *                          to the batch's longest, the batch finishes together, no
 *                          sharing between parallel samples.  Pair it with `type: ft`.
 *   tgi   (policy_tgi.c)   Text Generation Inference (2023): continuous batching over
 *                          per-request reservations of prompt + max_new_tokens, TGI's
 *                          router rule for joining, no paging, no preemption.
 *                          Pair it with `type: vllm` and the contiguous attention kernel.
 * Static batches (FT, HF) complete together: static_batch.h.
 *
 * Registry lines (experiments/policy_registry.c):
 *   X("orca", pb_policy_orca_create, pb_policy_orca_keys, "Orca: iteration-level FCFS, ...")
 *   X("ft",   pb_policy_ft_create,   pb_policy_ft_keys,   "FasterTransformer: request-level batches ...")
 *
 * Both take one option from the system's YAML map, PB_BASELINE_MAX_BATCH below:
 * max_batch, groups per batch (FT: B = 7 for OPT-13B on an A100-40GB with
 * max-length reservations when memory decides).
 *
 * FasterTransformer's request completion: the engine records a request's finish
 * when its last token is produced; FT returns a batch's results together, so after
 * pb_engine_run() the caller applies pb_policy_ft_finalize(), which moves every
 * request's finish_s to its batch's completion time (the latest finish in the
 * batch).  pb_policy_finalize() does that for any policy (a no-op unless FT). */
#ifndef PB_BASELINES_H
#define PB_BASELINES_H

#include <stdbool.h>
#include <stdint.h>

#include "metrics.h"
#include "pb.h"
#include "policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The baselines' option (a pb_policy_option, policy.h), declared alike for both. */
#define PB_BASELINE_MAX_BATCH                                                                                \
    {.name = "max_batch", .type = PB_T_INT, .lo = 0, .hi = 1 << 20, .dflt = "0",                            \
     .doc = "groups per batch at most (0 = as many as the KV space holds), bounded by max_num_seqs"}

pb_status pb_policy_orca_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
pb_status pb_policy_ft_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);

bool pb_policy_is_ft(const pb_policy *p);
bool pb_policy_is_hf(const pb_policy *p);
pb_status pb_policy_hf_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
/* Batch index of request id under HF (-1 if it never ran in a batch). */
int64_t pb_policy_hf_batch_of(const pb_policy *p, int64_t id);
/* HF's batches complete together: as pb_policy_ft_finalize. */
void pb_policy_hf_finalize(pb_policy *p, pb_metrics *m);
pb_status pb_policy_tgi_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);

typedef struct {
    int64_t n_batches;
    int64_t max_batch_seen;      /* largest batch formed (groups)                    */
    double mean_batch;           /* mean groups per batch                            */
} pb_ft_stats;
void pb_policy_ft_stats(const pb_policy *p, pb_ft_stats *out);
/* Batch index of request id (-1 if it never ran in a batch). */
int64_t pb_policy_ft_batch_of(const pb_policy *p, int64_t id);

/* Rewrite finish_s of every finished request of m to its batch's completion time.
 * Call once, after pb_engine_run() with this policy. */
void pb_policy_ft_finalize(pb_policy *p, pb_metrics *m);
/* pb_policy_ft_finalize / pb_policy_hf_finalize for FT and HF policies, nothing for
   the others. */
void pb_policy_finalize(pb_policy *p, pb_metrics *m);

#ifdef __cplusplus
}
#endif
#endif /* PB_BASELINES_H */
