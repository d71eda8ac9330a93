/* trace.h -- requests and traces: what the engine replays.
 *
 * A trace is a plain array of requests sorted by arrival time, written and read as
 * CSV (header: arrival_s,prompt_len,output_len,n,beam_width,prefix_id,prefix_len,
 * conversation_id,turn).  Every system of an experiment replays the identical trace.
 *
 * Lengths are in tokens.  prompt_len INCLUDES a shared prefix of prefix_len tokens
 * when prefix_id >= 0.  output_len is forced: generation stops after exactly
 * output_len tokens (end-of-sequence ignored, as in the paper). */
#ifndef PB_TRACE_H
#define PB_TRACE_H

#include <stdint.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t id;              /* index in the trace (0..n-1)                          */
    double arrival_s;        /* seconds from trace start                             */
    int32_t prompt_len;      /* >= 1, includes the shared prefix                     */
    int32_t output_len;      /* >= 1                                                 */
    int32_t n;               /* parallel samples (>= 1)                              */
    int32_t beam_width;      /* 1 = no beam search                                   */
    int32_t prefix_id;       /* shared prefix id, -1 = none                          */
    int32_t prefix_len;      /* tokens of the shared prefix (0 when none)            */
    int32_t conversation_id; /* chatbot conversation, -1 = none                      */
    int32_t turn;            /* round within the conversation (0-based)              */
} pb_request;

typedef struct {
    pb_request *reqs;        /* sorted by arrival_s                                  */
    int64_t n;
} pb_trace;

void pb_trace_free(pb_trace *t);     /* frees reqs; t itself is caller-owned */

#ifdef __cplusplus
}
#endif
#endif /* PB_TRACE_H */
