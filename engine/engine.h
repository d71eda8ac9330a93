/* engine.h -- the engine loop: requests through a policy, a KV manager and an
 * executor on a simulated clock (docs/DESIGN.md §2).
 *
 * One step (pb_engine_step):
 *   1. arrivals: the trace's requests (and an arrival source's, params.source)
 *      whose arrival_s <= clock enter the waiting queue (pb_engine_add_request);
 *      with nothing queued, running or swapped the clock jumps to the next arrival
 *      instead (the step ends there);
 *   2. schedule: the policy builds the batch through the pb_sched_* actions
 *      (policy.h: admit, decode, preempt, swap);
 *   3. execute: the executor performs the step's copy-on-write copies and swaps and
 *      runs the batch; the clock advances by its latency;
 *   4. postprocess: every sampled sequence gets its next token (the executor's
 *      candidates when it returns tokens, else synthetic ones: beam.h); a prefill
 *      chunk that does not complete its prompt samples nothing; a parallel-sampling
 *      group forks n - 1 sequences after its prompt step; a beam group runs a
 *      beam-search selection (forks and frees follow it, paper Fig. 9); a group with
 *      output_len tokens finishes and frees its KV; the step's metrics row.
 * The engine BORROWS the KV manager, the policy and the executor: the caller creates
 * them and destroys them after pb_engine_destroy.  Same params, seed and requests:
 * the same metrics, bit for bit.
 *
 * pb_engine_run = begin, steps until done, end; with params.fast_forward the steps
 * that repeat a pure decode step are replayed by the fast path (fastfwd.h) when the
 * policy, the manager and the executor offer it: the same steps, clock, counts and
 * metrics, bit for bit (tests/test_fastfwd.c).  The step-level API (begin / step /
 * end) never replays. */
#ifndef PB_ENGINE_H
#define PB_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "beam.h"
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

/* An arrival source besides the trace (optional): a client whose requests depend on
 * the run -- a conversation's next turn a think time after its answer, a request held
 * by a concurrency limit until another finishes.  At the start of every step the
 * engine adds, through pb_engine_add_request, the trace's rows and the source's
 * requests due by the clock, in arrival order (a trace row first on a tie): while
 * next_s() <= the clock, the request take() returns (its arrival_s = next_s(); a row
 * pb_engine_begin would accept in a trace; it stays valid until pb_engine_end).  With nothing queued, running or swapped the clock
 * jumps to the earlier of the trace's next row and next_s(); the run is not over while
 * next_s() is finite.  done() is called when a request (g->id, the engine's id)
 * finishes (t: its finish time) or is rejected (t: the clock of the step that
 * rejected it), in the step that ends it, the fast path's replayed steps included:
 * what it makes due then is added at the next step's start. */
typedef struct {
    double (*next_s)(void *user);              /* INFINITY: nothing pending now     */
    const pb_request *(*take)(void *user);     /* the request next_s() announced    */
    void (*done)(void *user, const pb_group *g, double t);
    void *user;
} pb_arrival_source;

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
    const pb_beam_table *beam_scores; /* beam search's next-token scores when the
                                       executor gives none: this measured table
                                       (beam.h; it must outlive the engine), or
                                       NULL: the synthetic model (the default)     */
    bool check_every_step;          /* run kv / engine *_check() after every step,
                                       pb_metrics_check() at the end                 */
    double max_clock_s;             /* stop when the clock passes this (0 = never);
                                       unfinished requests are counted as such      */
    int64_t max_steps;              /* stop after this many steps (0 = never)        */
    bool fast_forward;              /* pb_engine_run may replay steps by the fast path
                                       (fastfwd.h; true); false: every step is an
                                       ordinary one (the reference)                 */
    /* Optional: called when a group finishes, before its sequences are freed (e.g.
       to write real executors' output tokens: g->seqs[i]->tokens[prompt_len ..
       len); a group finishing in a replayed step may have its KV freed already).
       NULL = none. */
    void (*on_finish)(void *user, const pb_group *g);
    void *on_finish_user;
    /* Optional: what an online caller streams.  Called (a) in every ordinary step
       (not for the fast path's replayed ones) after group g got its next token(s):
       g->state RUNNING, g->n_generated counts them, its sequences are all there even
       for the last token (g->n_generated == g->output_len; it finishes right after),
       with stored tokens g->seqs[i]->tokens[g->len - 1] is sequence i's newest;
       (b) when g is rejected (g->state REJECTED, it can never be served; its
       sequences are freed already).  NULL = none. */
    void (*on_progress)(void *user, const pb_group *g);
    void *on_progress_user;
    const pb_arrival_source *source;   /* NULL: the trace's rows are every arrival   */
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

/* Step-level API.  begin: a run of trace t (sorted by arrival; may be empty; must
 * outlive the run) recorded into m.  step: one step, or one jump of the clock to
 * the next arrival; *done when every request known has finished or been rejected
 * (or a max_steps / max_clock_s limit is reached).  end: frees what is left and
 * closes m; with check_every_step it returns pb_metrics_check(m). */
pb_status pb_engine_begin(pb_engine *e, const pb_trace *t, pb_metrics *m);
pb_status pb_engine_step(pb_engine *e, bool *done);
pb_status pb_engine_end(pb_engine *e);

/* Request r arrives: its group enters the waiting queue, and the policy sees it from
 * the next schedule on.  Every arrival takes this door: the trace's rows (ids 0 ..
 * t->n - 1, added by pb_engine_step as the clock passes their arrival_s) and the
 * caller's own requests (an online client, a conversation's next turn), which get
 * the ids after the trace's in the order added and a metrics row at once.
 * r->arrival_s, its arrival time in the metrics, is at most the clock
 * (pb_engine_now), or later when the engine is idle -- nothing queued, running or
 * swapped, no trace row due before it -- and the clock then jumps to it.  r must stay
 * valid until pb_engine_end.  A run whose requests are all done reports done;
 * adding one makes it go on.  PB_ERR_INVALID (logged): not between begin and end, a
 * bad row (as pb_engine_begin checks the trace's), or an arrival after the clock
 * that the engine is not idle for. */
pb_status pb_engine_add_request(pb_engine *e, const pb_request *r);

/* Request id leaves now (its client went away), between steps: out of its queue,
 * its KV freed at once, recorded as rejected (it never finished); the policy is told
 * as for any group done.  PB_ERR_INVALID when id is not a request that is waiting,
 * running or swapped. */
pb_status pb_engine_abort_request(pb_engine *e, int64_t id);

/* params.on_progress and its user, set between runs (an online loop takes them). */
void pb_engine_set_progress(pb_engine *e, void (*fn)(void *user, const pb_group *g), void *user);

/* The queues now, and the preemptions of the run's steps so far (the step API's:
   pb_engine_run's fast path replays none). */
typedef struct {
    int32_t n_waiting, n_running, n_swapped;
    int64_t n_preempted;
} pb_engine_load;
void pb_engine_load_get(const pb_engine *e, pb_engine_load *out);

double pb_engine_now(const pb_engine *e);
int64_t pb_engine_steps(const pb_engine *e);
int64_t pb_engine_fast_forwarded(const pb_engine *e);   /* of the steps, replayed fast */
int64_t pb_engine_fast_mixed(const pb_engine *e);       /* of those, mixed steps: the
                                                           policy admitted mid-replay */
/* The group of request id while it lives: from its arrival to the step after it
   finishes or is rejected (groups are recycled); NULL otherwise.  O(live groups). */
const pb_group *pb_engine_group(const pb_engine *e, int64_t id);
const pb_batch *pb_engine_last_batch(const pb_engine *e);          /* last executed */
/* Invariants (between steps): the queues', the batch's, the live groups' (states
 * matching the queues, KV held exactly by running and swapped groups, none left
 * in a batch) and the KV manager's own check. */
pb_status pb_engine_check(pb_engine *e);

#ifdef __cplusplus
}
#endif
#endif /* PB_ENGINE_H */
