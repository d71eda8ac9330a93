/* scheduler.h -- ENGINE-INTERNAL: the queues and the actions of policy.h on them.
 *
 * A pb_sched is what a policy sees (policy.h): the running list and the swapped list,
 * both sorted by (arrival_s, id) with sorted insertion from the tail (O(1) for the
 * latest arrival), the waiting queue (waitq.h), this step's preemption and swap
 * counts, and through its actions the KV manager, the batch (batch.h), the metrics
 * rows and the run's groups (groups.h).  scheduler.c holds the queues and the
 * actions, sched_step.c the building blocks of a step and the vLLM step; only they
 * write a pb_sched.  The engine sets it up, starts each step (pb_sched_begin_step),
 * enqueues arrivals, finishes groups, and reads it. */
#ifndef PB_SCHEDULER_H
#define PB_SCHEDULER_H

#include "batch.h"
#include "engine.h"
#include "groups.h"
#include "metrics.h"
#include "policy.h"
#include "sequence.h"
#include "waitq.h"

struct pb_sched {
    const pb_engine_params *p;
    pb_kv_manager *kv;
    pb_policy *policy;
    pb_batch_builder *batch;
    pb_groups *groups;
    pb_metrics *metrics;          /* the run's (pb_sched_begin_run)                     */
    double now;                   /* the clock and index of the step being scheduled    */
    int64_t step;
    pb_group *run_head, *run_tail;
    int32_t n_running, running_seqs;
    pb_group *swp_head, *swp_tail;
    int32_t n_swapped;
    pb_waitq waiting;
    int32_t n_preempted, n_swapped_out_now, n_swap_in_groups;   /* this step          */
    int64_t n_done;               /* groups finished or rejected this run               */
};

void pb_sched_init(pb_sched *s, const pb_engine_params *p, pb_kv_manager *kv, pb_policy *policy,
                   pb_batch_builder *batch, pb_groups *groups);
void pb_sched_free(pb_sched *s);
/* Empty queues for a run recording into m. */
void pb_sched_begin_run(pb_sched *s, pb_metrics *m);
/* A step scheduled at clock now with index step: its counts zeroed. */
static inline void pb_sched_begin_step(pb_sched *s, double now, int64_t step) {
    s->now = now;
    s->step = step;
    s->n_preempted = s->n_swapped_out_now = s->n_swap_in_groups = 0;
}
/* A new arrival (PENDING), or a recompute-preempted group, into the waiting queue
   under the policy's waiting_key. */
void pb_sched_enqueue_waiting(pb_sched *s, pb_group *g);
/* pb_sched_can_admit; chunked: the prompt may exceed max_num_batched_tokens (a
   chunked prefill splits it). */
pb_alloc_status pb_sched_admit_status(pb_sched *s, const pb_group *g, bool chunked);
static inline bool pb_sched_in_batch(const pb_group *g) { return g->in_batch; }
/* RUNNING g, whose sequences' slots for this step were appended already (a
   replayed step, fastfwd.h), into the batch as pb_sched_decode puts it. */
void pb_sched_decoded(pb_sched *s, pb_group *g);
/* RUNNING g produced its last token at clock now: out of the running list, its KV
   and sequences freed (after params->on_finish), FINISHED, recorded, done. */
void pb_sched_finish(pb_sched *s, pb_group *g, double now);
/* g, waiting, running or swapped and not in the step's batch, leaves (its client
   went away): out of its queue, its KV and sequences freed, REJECTED, done. */
void pb_sched_abort(pb_sched *s, pb_group *g);
/* RUNNING g out of the running list (the run ends with it unfinished). */
void pb_sched_running_remove(pb_sched *s, pb_group *g);
/* Invariants: the waiting queue's, the lists sorted and linked with their counts,
   the running sequence budget's sum. */
pb_status pb_sched_check(const pb_sched *s);

#endif /* PB_SCHEDULER_H */
