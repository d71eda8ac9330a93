/* online.h -- the engine serving requests as they come, against the wall clock.
 *
 * A pb_online owns a thread that runs the engine's step loop (pb_engine_step:
 * schedule, execute, postprocess) over an empty trace; other threads submit requests
 * (pb_online_submit), which enter through the engine's one door,
 * pb_engine_add_request, between steps.  The engine stores tokens (every sequence's
 * ids: the executor's, or the synthetic ones of the sim, trace.h).
 *
 * Time.  The engine's clock is in engine seconds; the wall clock maps to it as
 * engine = (wall - start) x speedup.  After each step the thread sleeps until the
 * wall clock reaches the engine's clock: a sim step's latency is slept (divided by
 * speedup); a real executor's latency is the time the step took, so it hardly
 * sleeps.  A submission's arrival is the engine time of the wall clock when it was
 * submitted, at most the engine's clock while the engine is busy (a step that takes
 * longer to compute than to sleep makes the engine lag the wall clock: stats lag_s);
 * with nothing queued, running or swapped the clock jumps forward to it.
 *
 * Events.  Every accepted submission gets events on the loop thread, in order, the
 * last of them terminal: TOKENS after each step that gave its sequences a token
 * (parallel samples: one per sequence), delivered once the step's time has been slept;
 * DONE after its last token (beam search: no TOKENS; DONE carries the final beams'
 * outputs); REJECTED when it can never be served; ABORTED after pb_online_abort, or at
 * pb_online_stop without drain.  After its terminal event a submission's tag is never
 * used again.
 *
 * Threads: submit, abort, stats and stop may be called from any thread; the engine,
 * its KV manager, policy and executor are the loop thread's between
 * pb_online_start and pb_online_stop (BORROWED: the caller destroys them after
 * pb_online_destroy). */
#ifndef PB_ONLINE_H
#define PB_ONLINE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "kv_manager.h"
#include "metrics.h"
#include "pb.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_ONLINE_TOKENS = 0, PB_ONLINE_DONE, PB_ONLINE_REJECTED, PB_ONLINE_ABORTED } pb_online_what;

typedef struct {
    void *tag;                  /* the submitter's                                     */
    int64_t id;                 /* the submission's (pb_online_submit)                 */
    pb_online_what what;
    int32_t n_seqs, n_new;      /* tokens[s * n_new + k]: sequence s's k-th new token;
                                   DONE of a beam search: the beams' whole outputs     */
    const int32_t *tokens;      /* valid during the call                               */
    int32_t prompt_len, n_generated;   /* per sequence, so far                         */
    double arrival_s, first_token_s, now_s;   /* engine clock; first_token_s -1: none  */
} pb_online_event;

typedef struct {
    double speedup;             /* engine seconds per wall second (> 0; 1: real time)   */
    int32_t max_waiting;        /* refuse submissions while this many requests wait
                                   (submitted, not yet running; 0: no limit)            */
    void (*on_event)(void *user, const pb_online_event *ev);
    void *user;
} pb_online_params;

typedef struct {
    pb_engine_load load;        /* the queues after the last step                       */
    double kv_usage;            /* GPU KV blocks in use / total, after the last step     */
    int64_t n_submitted, n_finished, n_rejected, n_aborted, n_refused;
    int64_t prompt_tokens;      /* of the requests submitted                            */
    int64_t generation_tokens;  /* tokens generated (every sequence's)                  */
    int64_t n_steps;
    double engine_s;            /* the engine's clock                                   */
    double lag_s;               /* engine seconds the clock was behind the wall at the
                                   last step (0: on time)                               */
} pb_online_stats;

typedef struct pb_online pb_online;

/* The loop over engine e (created with params whose max_clock_s and max_steps are 0,
 * store_tokens true and on_progress NULL: pb_online takes on_progress) recording
 * into m, begun here and ended at pb_online_stop.  PB_ERR_INVALID: bad params, or
 * the engine refused to begin. */
pb_status pb_online_start(pb_engine *e, pb_kv_manager *kv, pb_metrics *m, const pb_online_params *p,
                          pb_online **out);

/* Submit request r (prompt_len, output_len, n, beam_width, prefix fields; arrival_s
 * and id ignored) with tag.  PB_OK and *id; PB_ERR_NO_SPACE when max_waiting
 * requests wait; PB_ERR_INVALID for a bad request (as the engine checks its rows) or
 * after pb_online_stop began. */
pb_status pb_online_submit(pb_online *o, const pb_request *r, void *tag, int64_t *id);

/* Submission id leaves (its client went away): before the next step it is out of
 * the engine with its KV freed (pb_engine_abort_request) and gets ABORTED, unless
 * its terminal event came first.  Unknown ids are ignored. */
void pb_online_abort(pb_online *o, int64_t id);

void pb_online_stats_get(pb_online *o, pb_online_stats *out);

/* Refuse new submissions; with drain, wait until every accepted one is terminal,
 * else abort what is left (ABORTED); then stop the thread, end the engine's run
 * (pb_engine_end) and return its status, or the loop's first error (logged).  Also
 * the check of the engine and the KV manager after the run (every block returned:
 * the manager's check with no request left).  Idempotent. */
pb_status pb_online_stop(pb_online *o, bool drain);

/* Stops without drain if needed; frees o. */
void pb_online_destroy(pb_online *o);

#ifdef __cplusplus
}
#endif
#endif /* PB_ONLINE_H */
