/* trace_fit.h -- fit a generated or read trace to a system: scale its lengths, cut them
 * to the model's context.  Applied by the system table after generation and by the
 * shard planner (which estimates a point's cost from the fitted trace). */
#ifndef PB_TRACE_FIT_H
#define PB_TRACE_FIT_H

#include <stdbool.h>
#include <stdint.h>

#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scale every request's prompt and output lengths by length_scale (rounded up, >= 1;
 * 1 = unchanged; a shared prefix is scaled and rounded down), then with clamp cut
 * prompts to max_len - 1 and outputs to max_len - prompt.  A request whose prompt no
 * longer holds its whole shared prefix stops sharing it (prefix_id -1), so every
 * prefix id keeps one length. */
void pb_trace_fit(pb_trace *t, double length_scale, bool clamp, int32_t max_len);

/* Remove the requests whose prompt is longer than max_len (the model's context: no
 * system can admit them, engine.h), keeping the others in order with ids 0..n-1, so
 * that every system of an experiment serves the same admitted set.  Returns how many
 * were removed. */
int64_t pb_trace_drop_long_prompts(pb_trace *t, int32_t max_len);

#ifdef __cplusplus
}
#endif
#endif /* PB_TRACE_FIT_H */
