/* client.h -- the load generator's side of a run: which request is sent when, as a
 * client that waits for answers does it (vLLM bench serve --max-concurrency, AIPerf's
 * multi-turn sessions with a delay between turns, LoadGen's server scenario with a
 * bound on queries in flight).  The client is an arrival source of the engine
 * (engine.h pb_arrival_source): the engine adds what it sends through its door,
 * pb_engine_add_request, and tells it when each request finishes.
 *
 *   - closed loop (closed_loop): a trace row with conversation_id >= 0 that has an
 *     earlier turn of its conversation in the trace (the previous one by turn, then by
 *     row) is sent think time after that turn's answer finished (or it was rejected);
 *     its arrival_s in the trace is not read.  Every other row is sent at its
 *     arrival_s.  A conversation whose turn was dropped from the trace (a prompt over
 *     the context) goes on from the turn before it.
 *   - think time: fixed = think_time_s; exponential = mean think_time_s, drawn for
 *     every row up front in row order from the seed's stream 4, so every system of an
 *     experiment waits the same time before the same turn.
 *   - concurrency (max_concurrency C > 0): at most C requests outstanding (sent, not
 *     finished or rejected); a request ready while C are outstanding is sent when one
 *     finishes, at that time: its arrival_s, TTFT and E2EL start there (vLLM bench
 *     serve takes its semaphore before a request's timer starts).  Ready requests are
 *     sent in order of readiness, ties in row order.
 * The engine's run holds no trace rows of its own (an empty trace): the client's
 * requests get the engine's ids in the order sent (the per-request CSV's request_id),
 * copies of their rows with arrival_s the time sent, valid until pb_client_destroy.
 * The same trace, settings and seed give the same requests to every run; what is sent
 * when depends on the run (that is the point of a closed loop).
 *
 * pb_trace_append_history: the later turns' prompts re-send the conversation so far
 * (a workload whose rows hold each turn's new tokens only, e.g. a log of queries):
 * within a conversation, in turn order, turn k's prompt = turn k-1's prompt + its
 * output + turn k's own tokens, and its prefix_len the history (trace.h: a chatbot
 * row in its transcript, so a prefix cache can reuse the previous turns' blocks). */
#ifndef PB_CLIENT_H
#define PB_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PB_THINK_NAMES "fixed|exponential"
typedef enum { PB_THINK_FIXED = 0, PB_THINK_EXPONENTIAL } pb_think_kind;
pb_status pb_think_kind_by_name(const char *s, pb_think_kind *out);   /* PB_ERR_INVALID if unknown */
const char *pb_think_kind_name(pb_think_kind k);

typedef struct {
    bool closed_loop;           /* later turns wait for the previous answer            */
    double think_time_s;        /* >= 0                                                */
    pb_think_kind think;
    int32_t max_concurrency;    /* 0 = no limit                                        */
} pb_client_cfg;

/* Does cfg change when requests are sent (closed loop or a concurrency limit)? */
bool pb_client_active(const pb_client_cfg *cfg);

typedef struct pb_client pb_client;

/* A client over trace t (sorted by arrival; must outlive the client).  NULL on a bad
 * setting (logged). */
pb_client *pb_client_create(const pb_trace *t, const pb_client_cfg *cfg, uint64_t seed);
void pb_client_destroy(pb_client *c);
/* The engine's arrival source for one run (reset: nothing sent yet). */
const pb_arrival_source *pb_client_source(pb_client *c);
/* Requests sent so far; outstanding now; the most outstanding at once. */
int64_t pb_client_sent(const pb_client *c);
int32_t pb_client_outstanding(const pb_client *c);
int32_t pb_client_peak_outstanding(const pb_client *c);
const pb_trace *pb_client_trace(const pb_client *c);   /* the trace it sends */
/* Which trace row the engine's request id is (id < pb_client_sent). */
int64_t pb_client_row_of(const pb_client *c, int64_t id);
/* Invariants: outstanding within the limit, every row sent at most once, the turns
 * of a conversation sent in turn order, each after its predecessor's answer. */
pb_status pb_client_check(const pb_client *c);

/* Conversations of t (rows with conversation_id >= 0): how many, and how many of their
 * rows follow an earlier turn (a closed loop holds those). */
void pb_trace_conversations(const pb_trace *t, int64_t *n_conv, int64_t *n_later);
/* Rows of a conversation re-send its history (above).  Returns the rows changed. */
int64_t pb_trace_append_history(pb_trace *t);

#ifdef __cplusplus
}
#endif
#endif /* PB_CLIENT_H */
