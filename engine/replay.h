/* replay.h -- the fast path's two optional sub-interfaces: what a KV manager
 * (pb_kv_replay_i, kv_manager.h .replay) and a policy (pb_policy_steady_i, policy.h
 * .steady) offer so that the engine can replay the steps that repeat a pure decode
 * step (fastfwd.h) instead of running them one by one.  Either pointer NULL: no fast
 * path with that manager or policy.  A replay must leave everything observable --
 * steps, clock, block counts, metrics -- exactly as the ordinary steps would. */
#ifndef PB_REPLAY_H
#define PB_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "kv_manager.h"
#include "policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the KV manager's replayed steps ----
 *
 * Decode replay.  begin(seqs, n): each following step appends one slot to every one
 * of seqs[0..n), the only sequences of n RUNNING groups in the scheduler's order (the
 * array is the engine's and changes only by pop), and every step comes before each
 * group's last token (prompt_len + output_len - 1 - kv_len >= 1 at every append).
 * PB_ERR_UNSUPPORTED (nothing changed, no replay) when a step could copy on write.
 * step: the current step's appends, from where the last call stopped, each as
 * can_append(g_i) then append(seqs[i]) would make it (the same blocks in the same
 * order, no copies), until one cannot: returns its index (nothing done for it and
 * the ones after), or n when the step is complete.  pop: the last sequence, not yet
 * appended in the current step, leaves the replay up to date (a plain sequence
 * again).  end (between steps): every sequence brought up to date.
 *
 * Beam replay (optional: beam_begin NULL = none).  beam_begin(groups, n): the RUNNING
 * groups in the scheduler's order, each past its prefill, on the GPU, with one
 * sequence or beam_width beams of one kv_len (len - 1), no shared prefix, every step
 * before each group's last token.  PB_ERR_UNSUPPORTED: nothing changed, no replay.
 * beam_step: one step's appends, as can_append(g) then append() of each sequence of
 * each group in order would make them: returns the copies on write they make, or -1
 * when a group cannot append (nothing done).  beam_select(i, parent) (after a step's
 * appends): group i's beams are now beams parent[0..nb) of the ones it had (beam e
 * continues parent[e]; a beam chosen twice shares all its blocks, one not chosen is
 * freed); returns the blocks freed.  beam_free(i) (after the selections): group i's
 * KV freed as free() of each of its sequences would (it finished), the group out of
 * the replay (later groups move down one).  beam_join(g) (optional; between steps):
 * g, not in the replay and as beam_begin takes its groups, joins as the last group;
 * PB_ERR_UNSUPPORTED: nothing changed.  beam_end (between steps): every sequence up
 * to date, with the same sharing (block numbers may differ from the ordinary
 * steps': nothing but counts is observable).
 *
 * Between a begin and its end the engine reads no kv_len of the replay's sequences,
 * reads the memory breakdown through usage() below (the manager's own usage() may
 * lag), and calls besides these only the pure queries can_allocate and can_swap_in,
 * free and swap_out of popped groups, and -- on groups outside a beam replay, after
 * a step's appends -- allocate, fork, refork and free (an arrival admitted inside
 * the replay: its prefill and first token).  check() is called only outside. */
typedef struct pb_kv_replay_i {
    pb_status (*begin)(pb_kv_manager *m, pb_seq *const *seqs, int32_t n);
    int32_t (*step)(pb_kv_manager *m);
    void (*pop)(pb_kv_manager *m);
    void (*end)(pb_kv_manager *m);
    pb_status (*beam_begin)(pb_kv_manager *m, pb_group *const *groups, int32_t n);
    int32_t (*beam_step)(pb_kv_manager *m);
    int32_t (*beam_select)(pb_kv_manager *m, int32_t i, const int32_t *parent);
    void (*beam_free)(pb_kv_manager *m, int32_t i);
    pb_status (*beam_join)(pb_kv_manager *m, pb_group *g);
    void (*beam_end)(pb_kv_manager *m);
    /* The memory breakdown inside a replay, exact at any time (kv_manager.h usage). */
    void (*usage)(pb_kv_manager *m, pb_kv_usage *out);
} pb_kv_replay_i;

/* ---- the policy's steady-state answers ----
 *
 * steady: a pure query at the end of a step after which every running group has one
 * sequence (or its beams) past its prefill.  True means: the next step -- if every
 * running group can append -- decodes exactly the running groups, in running order,
 * and admits, swaps in and rejects nobody; and so do the steps after it while free
 * blocks only shrink, the running set stays and arrivals queue behind the waiting
 * head.  In such a step a group that cannot append makes the latest running groups be
 * preempted, as pb_sched_decode_running with pb_victim_latest does.
 * steady_preempted: a pure query in the middle of such a step that had to preempt,
 * after its decodes and preemptions.  True: the step schedules nothing more.  False:
 * the policy's schedule, called now, completes the step as the policy's step would.
 * decodes_first (optional, NULL = false): a pure query when arrivals changed the
 * waiting head, nothing is swapped and every running group can append.  True: the
 * policy's step decodes every running group first, and its schedule -- called with
 * them decoded (pb_sched_in_batch true, their decodes in pb_sched_batch_tokens) but
 * not in the batch's entries -- completes the step as its step would (admitting or
 * rejecting from the waiting head). */
typedef struct pb_policy_steady_i {
    bool (*steady)(pb_policy *p, pb_sched *s);
    bool (*steady_preempted)(pb_policy *p, pb_sched *s);
    bool (*decodes_first)(pb_policy *p, pb_sched *s);
} pb_policy_steady_i;

/* The vLLM steps' answers (sched_step.c): steady when the swapped head -- or, with
   nothing swapped, the waiting head -- is held (LATER, or over the sequence budget)
   or absent; after a preemption, mixed steps (v0.1) schedule nothing more when a
   group was swapped out or the heads are held, alternating ones (v0.2) never do;
   only mixed steps decode first.  _v01, _v02: fixed step structure; _engine: the one
   params->step_mode names. */
extern const pb_policy_steady_i pb_vllm_steady_v01, pb_vllm_steady_v02, pb_vllm_steady_engine;

#ifdef __cplusplus
}
#endif
#endif /* PB_REPLAY_H */
