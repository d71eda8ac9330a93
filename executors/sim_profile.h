/* sim_profile.h -- a step-latency profile measured on a real GPU, interpolated.
 *
 * `pagedbench profile` (the cuda executor) writes it; the sim executor reads it and
 * uses it instead of its analytic forward-pass model (framework overheads and memory
 * operations stay analytic).
 *
 * Format (CSV, '#' lines are comments; the header row is required):
 *
 *   # pagedbench step profile v1, model=opt-13b hardware=h100-sxm tp=1 block_size=16
 *   phase,batch,tokens,context,latency_us
 *   decode,1,1,128,8123.4
 *   decode,1,1,512,8301.0
 *   decode,8,8,128,8350.2
 *   decode,8,8,512,9012.7
 *   prefill,1,128,0,9876.5
 *   prefill,4,2048,0,61234.0
 *
 *   phase    decode | prefill
 *   batch    decode: sequences in the step; prefill: prompts in the step
 *   tokens   tokens computed (decode: == batch; prefill: total new prompt tokens)
 *   context  decode: mean context length per sequence (KV tokens read);
 *            prefill: mean cached prefix tokens per prompt (0 without prefix caching)
 *   latency  forward pass, microseconds (median of repetitions, CUDA events)
 *
 * Decode rows must form a full grid over their distinct (batch, context) values;
 * decode latency is bilinear in (batch, mean context), linearly extrapolated past the
 * grid's upper edges and held at the first row below its lower ones.  Prefill latency is
 * piecewise linear in total tokens (rows with equal tokens are averaged), linearly
 * extrapolated above the largest and held at the smallest below it (a 3-token prefill
 * costs no less than the smallest one measured).  A mixed step (prefill tokens P plus
 * D decode sequences of mean context c) costs
 *   prefill(P + D) + decode(D, c) - decode(D, c_min)
 * i.e. the GEMMs of all tokens plus the decode-attention increment.  At least one
 * decode row and two prefill rows (distinct token counts) are required. */
#ifndef PB_SIM_PROFILE_H
#define PB_SIM_PROFILE_H

#include <stdint.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pb_sim_profile pb_sim_profile;

/* Load and validate.  On error returns PB_ERR_IO / PB_ERR_INVALID and writes
 * "path:line: message" into err. */
pb_status pb_sim_profile_load(const char *path, pb_sim_profile **out, char *err, size_t errlen);
pb_status pb_sim_profile_parse(const char *name, const char *text, pb_sim_profile **out, char *err,
                               size_t errlen);
void pb_sim_profile_destroy(pb_sim_profile *p);

/* Forward-pass seconds of a step with P prefill tokens and D decode sequences of mean
 * context ctx (either part may be zero; both zero gives 0). */
double pb_sim_profile_latency(const pb_sim_profile *p, double prefill_tokens, double n_decode,
                              double mean_ctx);

pb_status pb_sim_profile_check(const pb_sim_profile *p);

#ifdef __cplusplus
}
#endif
#endif /* PB_SIM_PROFILE_H */
