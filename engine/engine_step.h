/* engine_step.h -- ENGINE-INTERNAL: the engine's parts and the pieces of its step
 * that the fast path (fastfwd.c) runs as they are, so that a replayed step is the
 * ordinary step's batch, row, execution and token bookkeeping, not a copy of them.
 * Only engine.c writes the engine's state; these functions are its door. */
#ifndef PB_ENGINE_STEP_H
#define PB_ENGINE_STEP_H

#include "batch.h"
#include "engine.h"
#include "scheduler.h"

typedef struct {
    const pb_engine_params *p;
    pb_kv_manager *kv;
    pb_policy *policy;
    pb_executor *ex;
    pb_metrics *metrics;          /* the run's                                         */
    pb_sched *sched;
    pb_batch_builder *batch;
} pb_engine_parts;

const pb_engine_parts *pb_engine_parts_of(const pb_engine *e);
/* The start of a step: false when the run is over (every request known done, or a
   step or clock limit passed); else true, last step's done groups recycled, the
   arrivals due added, and the step begun at the clock: the scheduler's step counts
   zeroed, an empty batch. */
bool pb_engine_step_start(pb_engine *e);
/* The batch built so far runs: completed for the executor, the step's row in sm
   (whose memory breakdown, sm->mem, the caller has read: the manager's usage, or a
   replay's), the executor, the clock, the entries' KV computed, the row recorded
   and the step counted.  *has_tokens (may be NULL): the executor returned
   candidates. */
pb_status pb_engine_execute(pb_engine *e, pb_step_metrics *sm, bool *has_tokens);
/* A step that ran nothing but moved the state (preemptions, rejections): counted. */
void pb_engine_step_moved(pb_engine *e);
/* g's next token(s) after the step that ran it (postprocess). */
pb_status pb_engine_group_token(pb_engine *e, pb_group *g, bool has_tokens);
/* The step begun, partly built, completed by the policy's schedule and run as an
   ordinary step; *ran: a batch was executed. */
pb_status pb_engine_complete_step(pb_engine *e, bool *ran);

#endif /* PB_ENGINE_STEP_H */
