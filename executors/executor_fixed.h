/* executor_fixed.h -- a trivial executor for tests and benchmarks: no model, a step
 * takes a fixed, linear time:
 *     latency = step_s + prefill_token_s * prefill tokens + decode_seq_s * decodes
 *             + context_token_s * sum of decode context lengths
 *             + swap_block_s * (swap-in + swap-out pairs) + copy_block_s * copies.
 * With tokens = true it also returns candidates (has_tokens), a deterministic
 * function of (seed, group id, context length, candidate rank) -- enough to drive the
 * engine's real-token path (beam selection from executor scores) in tests; the
 * candidates are sorted by log-probability as executor.h requires. */
#ifndef PB_EXECUTOR_FIXED_H
#define PB_EXECUTOR_FIXED_H

#include <stdbool.h>
#include <stdint.h>

#include "executor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double step_s, prefill_token_s, decode_seq_s, context_token_s, swap_block_s, copy_block_s;
    bool tokens;
    uint64_t seed;
    int32_t vocab;            /* token ids in [0, vocab) (32000)                    */
} pb_fixed_exec_params;

/* 1 ms per step + 0.1 ms per decode + 0.01 ms per prefill token, no tokens. */
void pb_fixed_exec_params_default(pb_fixed_exec_params *p);
pb_status pb_executor_fixed_create(const pb_fixed_exec_params *p, pb_executor **out);

#ifdef __cplusplus
}
#endif
#endif /* PB_EXECUTOR_FIXED_H */
