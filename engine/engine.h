/* engine.h -- the engine loop: replay a trace through a policy, a KV manager and an
 * executor on a simulated clock (docs/DESIGN.md §2).
 *
 * One step:
 *   1. requests with arrival_s <= clock enter the waiting queue;
 *   2. the policy schedules (admit / decode / preempt / swap through pb_sched_*);
 *   3. the engine fills the batch (block tables or kv offsets from the manager) and
 *      calls the executor, which performs CoW copies and swaps and runs the batch;
 *   4. the clock advances by the executor's latency;
 *   5. post-processing: every sampled sequence gets its next token (from the
 *      executor's candidates when has_tokens, else synthetic -- see beam.h); a
 *      prefill chunk that does not complete its prompt samples nothing;
 *      parallel-sampling groups fork n-1 sequences after their prompt step; beam
 *      groups run a beam-search selection (forks and frees follow it, paper Fig. 9);
 *      a group with output_len tokens finishes and frees its KV;
 *   6. when nothing is scheduled and nothing runs, the clock jumps to the next
 *      arrival.
 * The engine BORROWS the KV manager, the policy and the executor: the caller creates
 * and destroys them (after pb_engine_destroy).  Same params + seed + trace => the
 * same metrics, bit for bit.
 *
 * The step-level API (begin / step / end) exists for tests and benchmarks;
 * pb_engine_run() = begin + step until done + end, where -- with fast_forward --
 * the steps that repeat a pure decode step are replayed without the policy, the
 * batch entries and the per-group post-processing (engine.c, "fast-forward"):
 * the same steps, clock, block counts and metrics, bit for bit (block numbers may
 * differ after a beam-search replay; tests/test_fastfwd.c). */
#ifndef PB_ENGINE_H
#define PB_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "executor.h"
#include "kv_manager.h"
#include "metrics.h"
#include "pb.h"
#include "policy.h"
#include "sequence.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pb_engine_params {
    int32_t max_num_batched_tokens; /* token budget per step (v0.1.0: 2560)          */
    int32_t max_num_seqs;           /* sequence budget of running groups (256)       */
    int32_t max_model_len;          /* prompt + output bound (2048); longer prompts
                                       are rejected, longer outputs capped           */
    pb_preempt_mode preemption;     /* auto (vLLM default)                           */
    pb_step_mode step_mode;         /* mixed (v0.1.x, the paper's version)           */
    int32_t max_paddings;           /* alternate steps: prompt steps are a padded
                                       [prompts, longest] batch, admitted while
                                       prompts x longest <= max_num_batched_tokens
                                       and the padding <= max_paddings (v0.2.2+:
                                       256); -1 = unpadded, prompt lengths summed
                                       (v0.1, v0.2.0-0.2.1).  Ignored when mixed.   */
    uint64_t seed;                  /* synthetic tokens / beam scores                */
    double kv_bytes_per_token;      /* for swap bytes in metrics (0 = unknown)       */
    bool store_tokens;              /* keep token ids (real executors need them)     */
    int32_t vocab_size;             /* synthetic prompt / candidate token ids are in
                                       [0, vocab_size) (32000)                       */
    bool check_every_step;          /* run kv / engine *_check() after every step,
                                       pb_metrics_check() at the end                 */
    double max_clock_s;             /* stop when the clock passes this (0 = never);
                                       unfinished requests are counted as such      */
    int64_t max_steps;              /* stop after this many steps (0 = never)        */
    bool fast_forward;              /* pb_engine_run replays steps that repeat a pure
                                       decode step in a fast loop (true; it applies
                                       when the policy has steady, the manager
                                       replay_* (and beam_* for beam groups), the
                                       executor PB_EXEC_SUMS_ONLY and no token ids
                                       are kept; else a no-op)                      */
    /* Optional: called when a group finishes, before its sequences are freed (e.g.
       to write real executors' output tokens: g->seqs[i]->tokens[prompt_len ..
       len); a beam group finishing in a replay has its KV blocks freed already).
       NULL = none. */
    void (*on_finish)(void *user, const pb_group *g);
    void *on_finish_user;
};

/* vLLM v0.1.x defaults (engine/vllm_version.h table): 2560 / 256 / 2048, auto,
   mixed, max_paddings -1, seed 0. */
void pb_engine_params_default(pb_engine_params *p);

typedef struct pb_engine pb_engine;

pb_status pb_engine_create(const pb_engine_params *p, pb_kv_manager *kv, pb_policy *policy,
                           pb_executor *ex, pb_engine **out);
void pb_engine_destroy(pb_engine *e);

/* Replay trace t (sorted by arrival) and record into m (reset first).  The trace must
 * outlive the call.  Errors: PB_ERR_INVALID (bad trace row, stalled policy), or the
 * executor's / manager's status. */
pb_status pb_engine_run(pb_engine *e, const pb_trace *t, pb_metrics *m);

/* Step-level API */
pb_status pb_engine_begin(pb_engine *e, const pb_trace *t, pb_metrics *m);
pb_status pb_engine_step(pb_engine *e, bool *done);   /* one step (or one idle jump) */
pb_status pb_engine_end(pb_engine *e);                /* frees what is left, closes m;
                                                         with check_every_step, returns
                                                         pb_metrics_check(m)         */

double pb_engine_now(const pb_engine *e);
int64_t pb_engine_steps(const pb_engine *e);
int64_t pb_engine_fast_forwarded(const pb_engine *e);   /* of the steps, replayed fast */
int64_t pb_engine_fast_mixed(const pb_engine *e);       /* of those, mixed steps: the
                                                           policy admitted mid-replay */
/* The group of request id while it lives: from its arrival to the step after it
   finishes or is rejected (groups are recycled); NULL otherwise.  O(live groups). */
const pb_group *pb_engine_group(const pb_engine *e, int64_t id);
const pb_batch *pb_engine_last_batch(const pb_engine *e);          /* last executed */
/* Invariants: queue membership matches group states, sequence counts, the KV
 * manager's own check. */
pb_status pb_engine_check(pb_engine *e);

#ifdef __cplusplus
}
#endif
#endif /* PB_ENGINE_H */
