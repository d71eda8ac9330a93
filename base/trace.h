/* trace.h -- requests and traces: what the engine replays.
 *
 * A trace is a plain array of requests sorted by arrival time, written and read as
 * CSV (header: arrival_s,prompt_len,output_len,n,beam_width,prefix_id,prefix_len,
 * conversation_id,turn).  Every system of an experiment replays the identical trace.
 *
 * Lengths are in tokens.  prompt_len INCLUDES a shared prefix of prefix_len tokens
 * when prefix_id >= 0.  output_len is forced: generation stops after exactly
 * output_len tokens (end-of-sequence ignored, as in the paper).
 *
 * Decoding modes: n > 1 = parallel sampling (n sequences share the prompt);
 * beam_width > 1 = beam search keeping beam_width beams, with n = beam_width (the
 * artifact's SamplingParams(n=K, use_beam_search=True)); one of the two modes per
 * request.  Chatbot requests carry conversation_id / turn (the KV cache is NOT kept
 * between turns: a turn's prompt already contains its history).  A chatbot row
 * (conversation_id >= 0, prefix_id == -1) uses prefix_len for the HISTORY it re-sends
 * (the previous turns' prompts and replies) when that history was sent whole, and 0
 * when it was truncated to fit; the engine's shared-prefix machinery ignores it (it
 * keys on prefix_id >= 0 only).
 *
 * Token identity (pb_token_key): token i of a request is a 64-bit key, so that two
 * requests that send the same text have equal keys there:
 *   i < prefix_len of a request with prefix_id >= 0: the shared prefix stream
 *       prefix_id (same id => same prefix tokens);
 *   a chatbot row in its transcript (pb_request_in_transcript): prompt AND output are
 *       the first prompt_len + output_len tokens of its conversation's transcript
 *       stream, so turn k+1 re-sends turn k's prompt and reply;
 *   otherwise the request's own stream (its id).
 *
 * Reading and writing CSV: trace_io.h.  Generating: workload.h. */
#ifndef PB_TRACE_H
#define PB_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {               /* 40 bytes: a 3.6M-request trace is 144 MB   */
    int32_t id;              /* index in the trace (0..n-1; n <= INT32_MAX)          */
    int32_t prompt_len;      /* >= 1, includes the shared prefix                     */
    double arrival_s;        /* seconds from trace start                             */
    int32_t output_len;      /* >= 1                                                 */
    int32_t prefix_id;       /* shared prefix id, -1 = none                          */
    int32_t prefix_len;      /* tokens of the shared prefix (0 when none)            */
    int32_t conversation_id; /* chatbot conversation, -1 = none                      */
    int32_t turn;            /* round within the conversation (0-based)              */
    int16_t n;               /* parallel samples (>= 1, <= PB_TRACE_MAX_SEQS)        */
    int16_t beam_width;      /* 1 = no beam search (<= PB_TRACE_MAX_SEQS)            */
} pb_request;

typedef struct {
    pb_request *reqs;        /* sorted by arrival_s                                  */
    int64_t n;
} pb_trace;

void pb_trace_free(pb_trace *t);     /* frees reqs; t itself is caller-owned */

/* Append one request (id is set to its index); grows reqs geometrically.  `cap` is
 * the caller's capacity counter (start at 0 with an empty trace). */
void pb_trace_push(pb_trace *t, int64_t *cap, const pb_request *r);

/* A request with the defaults of every mode: n = beam_width = 1, no prefix, no
 * conversation. */
pb_request pb_request_make(double arrival_s, int32_t prompt_len, int32_t output_len);

/* Is r a chatbot row whose tokens (prompt and output) are a prefix of its
 * conversation's transcript?  conversation_id >= 0, prefix_id == -1, and either
 * turn 0 (nothing before it: a first prompt cut to fit keeps only its last tokens, but
 * no later turn of such a conversation is in the transcript either, so numbering it
 * from the transcript's start shares nothing wrongly) or a whole history
 * (prefix_len > 0). */
bool pb_request_in_transcript(const pb_request *r);
/* Key of token i (>= 0) of request r (its row id and stream, see above) under the
 * engine seed.  Equal keys <=> the same token at the same position of the same stream
 * (up to 64-bit hash collisions).  Real executors use key % vocab as the token id. */
uint64_t pb_token_key(const pb_request *r, int32_t i, uint64_t seed);

/* Bounds of one request: lengths (prompt_len + output_len stays far below 2^31, so
 * no sum of two lengths overflows), and the sequences of one group (n, beam_width). */
#define PB_TRACE_MAX_LEN (1 << 24)
#define PB_TRACE_MAX_SEQS 4096

/* Invariants: ids 0..n-1, arrivals finite, >= 0 and non-decreasing, lengths in
 * [1, PB_TRACE_MAX_LEN], n and beam_width in [1, PB_TRACE_MAX_SEQS], beam requests have n == beam_width, prefix_id >= -1,
 * 0 <= prefix_len < prompt_len (0 when prefix_id == -1, unless the row is a chatbot
 * turn: conversation_id >= 0, whose prefix_len is its whole history), conversation_id >= -1,
 * turn >= 0, and one prefix_len per prefix_id (requests sharing an id share one
 * prefix).  Returns PB_OK or PB_ERR_INVALID with "request i: what" in err. */
pb_status pb_trace_check(const pb_trace *t, char *err, size_t errlen);
/* The first request whose prefix_len differs from an earlier request's with the same
 * prefix_id (*first: that earlier one), or -1. */
int64_t pb_trace_prefix_conflict(const pb_trace *t, int64_t *first);

typedef struct {
    int64_t n;
    double duration_s;          /* last arrival - first arrival                      */
    double rate;                /* n / duration_s (0 when n < 2)                     */
    double mean_prompt, mean_output;
    int32_t max_prompt, max_output;
} pb_trace_stats;
pb_trace_stats pb_trace_summary(const pb_trace *t);

#ifdef __cplusplus
}
#endif
#endif /* PB_TRACE_H */
