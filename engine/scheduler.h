/* scheduler.h -- ENGINE-INTERNAL: the scheduling state shared by engine.c and
 * scheduler.c (queues, the step's batch under construction).  Policies never include
 * this; they use the pb_sched_* functions of policy.h.
 *
 * Queues: waiting = a priority queue on (wait_key, arrival_s, id): a sorted ring
 * buffer (the deque) for groups that come in order, a binary heap for the others,
 * g->heap_idx locating the entry (scheduler.c); entries hold copies of the three keys
 * (comparisons read no group);
 * running / swapped = doubly linked lists sorted by (arrival_s, id) with sorted
 * insertion from the tail (O(1) in the common case of the latest arrival).
 * The batch: parallel arrays bseq (what the executor sees) and bseq_seq (the
 * sequences), plus the groups in the batch (bgroups) and the memory-op pair vectors.
 * scheduler.c holds the queues and the actions of policy.h, sched_step.c the
 * building blocks of a step and the vLLM step. */
#ifndef PB_SCHEDULER_H
#define PB_SCHEDULER_H

#include "beam.h"
#include "engine.h"
#include "metrics.h"
#include "policy.h"
#include "sequence.h"

typedef struct {   /* a waiting group and its order (copies of its keys) */
    double key, arrival_s;   /* g->wait_key, g->arrival_s */
    int32_t id;
    pb_group *g;             /* NULL: a tombstone inside the deque */
} pb_wait_entry;

typedef struct {   /* a beam group's beams during a beam replay (engine.c beam_forward) */
    double cum[PB_MAX_TOP / 2];     /* by rank: beam order[m]'s cum_logprob, best
                                       first (in index order until its first step) */
    int32_t order[PB_MAX_TOP / 2];  /* by rank: the beams (positions in the group)   */
    int32_t k0;                     /* the replayed step it joined at (0: the first)  */
} pb_ff_beams;

struct pb_sched {
    pb_engine_params p;
    pb_kv_manager *kv;
    pb_policy *policy;
    pb_executor *ex;
    pb_metrics *metrics;
    const pb_request *reqs;       /* the trace's rows [n_requests]                 */
    int64_t n_requests;
    int64_t next_arrival;         /* first request not yet in the waiting queue    */
    int64_t n_done;               /* finished + rejected                           */
    /* Groups exist from their request's arrival until the step after they finish or
       are rejected (memory O(live requests)): live = arrived and not yet recycled
       (g->live_idx), dead = done since the last recycling (recycled at the start of
       the next step: policies may still hold them during the step that ends them),
       free = recycled structs for the next arrivals. */
    pb_group **live, **dead, **free_groups;
    int32_t n_live, cap_live, n_dead, cap_dead, n_free_groups, cap_free_groups;
    int64_t n_recycled;
    pb_seq_pool *pool;
    double now;
    int64_t step;
    bool running_run;             /* between begin and end                         */
    /* queues */
    pb_group *run_head, *run_tail;
    int32_t n_running, running_seqs;
    pb_group *swp_head, *swp_tail;
    int32_t n_swapped;
    int32_t n_waiting;            /* heap + live deque entries; 0 = empty          */
    pb_wait_entry *heap;          /* [cap_heap], n_heap used                       */
    int32_t n_heap, cap_heap;
    pb_wait_entry *dq;            /* ring [cap_dq] (a power of two), sorted: slots
                                     dq_head.. (mod cap_dq), dq_len of them, dq_live
                                     not tombstones, both ends live               */
    int32_t dq_head, dq_len, dq_live, cap_dq;
    /* the batch under construction */
    pb_batch_seq *bseq;
    pb_seq **bseq_seq;
    int32_t n_bseq, cap_bseq;
    pb_group **bgroups;
    int32_t n_bgroups, cap_bgroups;
    int64_t b_prefill_tokens;
    int32_t b_decode, b_prefill_seqs, b_n_top;
    int32_t b_prefill_max_len;    /* longest prefill context_len in the batch      */
    int32_t b_bs_shift;           /* log2 of the manager's block size when a power
                                     of two, else -1 (batch decode_blocks)         */
    int64_t b_prefill_len_sum;    /* sum of prefill context_lens                   */
    bool b_padded;                /* a padded prompt-only step (batch n_padded_tokens) */
    int32_t b_max_paddings;       /* its padding cap                               */
    pb_pair_vec copies, swap_in, swap_out;
    int32_t n_preempted, n_swapped_out_now, n_swap_in_groups;
    pb_batch batch;
    pb_candidates *cand;
    int32_t cap_cand;
    int32_t *prompt_tok;          /* scratch for synthetic prompt tokens           */
    int32_t cap_prompt_tok;
    /* fast-forward (engine.c) */
    bool steady;                  /* the next steps repeat a pure decode step      */
    bool replayed;                /* the last step was replayed: the batch has its
                                     sums but no entries (pb_sched_check)          */
    pb_seq **ff_seqs;             /* the running groups' sequences, in order       */
    int32_t cap_ff_seqs;
    int32_t *ff_phase;            /* [block_size]: sequences starting a block at
                                     replayed steps k with k % block_size == index  */
    int32_t cap_ff_phase;
    pb_group **ff_groups;         /* the running groups, in order (beam replays)   */
    pb_ff_beams *ff_beams;        /* each one's beams' scores and order by score   */
    int32_t cap_ff_groups;
    int64_t ff_steps;             /* steps replayed fast this run                  */
    int64_t ff_mixed;             /* of them, mixed steps (arrivals admitted)      */
};

/* scheduler.c */
void pb_sched_free(pb_sched *s);
/* pb_sched_can_admit; chunked: the prompt may exceed max_num_batched_tokens (a
   chunked prefill splits it) */
pb_alloc_status pb_sched_admit_status(pb_sched *s, const pb_group *g, bool chunked);
/* scheduled this step */
static inline bool pb_sched_in_batch(const pb_group *g) { return g->in_batch; }
void pb_sched_begin_step(pb_sched *s);
void pb_sched_enqueue_waiting(pb_sched *s, pb_group *g);   /* PENDING/new -> WAITING */
/* The waiting queue alone: push g (its wait_key, arrival_s, id set; not waiting),
   remove waiting g (any, O(1) from the deque, O(log n) from the heap), check it
   (pb_sched_check calls it).  pb_sched_waiting_peek (policy.h) gives the head. */
void pb_sched_waiting_push(pb_sched *s, pb_group *g);
void pb_sched_waiting_remove(pb_sched *s, pb_group *g);
pb_status pb_sched_waiting_check(const pb_sched *s);
void pb_sched_running_remove(pb_sched *s, pb_group *g);    /* for finishing groups   */
void pb_sched_release_group(pb_sched *s, pb_group *g);     /* free KV + seqs          */
void pb_sched_group_done(pb_sched *s, pb_group *g);        /* finished / rejected: to
                                                              recycle next step      */
pb_status pb_sched_check(pb_sched *s);

#endif /* PB_SCHEDULER_H */
