/* vllm_version.h -- the vLLM version a vllm system models, and that version's
 * documented defaults (docs/DESIGN.md §3.3 knobs table, §9 the KV space).
 *
 * One table (vllm_version.c) holds every default; a system's YAML names the version
 * (`engine: v0.1 | v0.2`, default v0.1, the paper's) and may override any knob:
 *
 *   knob                    v0.1 (paper, mid-2023)       v0.2 (v0.2.2 - v0.2.7)
 *   step_mode               mixed                         alternate (prompt-only steps)
 *   max_paddings            -1 (no padded prompt batch)   256
 *   max_num_batched_tokens  2560                          max(max_model_len, 2048)
 *   max_num_seqs            256                           256
 *   gpu_mem_util            0.95 (the paper's runs)       0.90 (arg_utils.py default)
 *   KV sizing rule          harness (spec.h, activations  profile pass (spec.h
 *                           of kv_profile_tokens tokens)  pb_kv_capacity_profile)
 *   kv_profile_tokens       PB_KV_PROFILE_TOKENS (2560)   = max_num_batched_tokens
 *
 * max_paddings (alternate steps only; ignored by mixed ones): a prompt step is a
 * padded [prompts, longest prompt] batch; admission stops when prompts x longest >
 * max_num_batched_tokens or the padding (prompts x longest - sum) > max_paddings.
 * -1 = no padding (the flattened batches of v0.1 and of v0.2.0-v0.2.1, whose prompt
 * budget is the plain sum of prompt lengths).
 * v0.1's 0.95 is what the paper's harness used for every figure (spec.h); vLLM's own
 * default was already 0.90 at v0.1.0 (docs/DESIGN.md §3.3). */
#ifndef PB_VLLM_VERSION_H
#define PB_VLLM_VERSION_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"
#include "spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_VLLM_V01 = 0, PB_VLLM_V02 } pb_vllm_version;

typedef struct {
    pb_step_mode step_mode;
    int32_t max_paddings;             /* -1 = prompt batches are not padded        */
    int32_t max_num_batched_tokens;
    int32_t max_num_seqs;
    double gpu_mem_util;
    pb_kv_rule kv_rule;
    int32_t kv_profile_tokens;        /* tokens of the KV rule's activation pass;
                                         0 = max_num_batched_tokens (after overrides:
                                         pb_vllm_knobs_profile_tokens)              */
} pb_vllm_knobs;

const char *pb_vllm_version_str(pb_vllm_version v);          /* "v0.1" "v0.2"        */
bool pb_vllm_version_parse(const char *s, pb_vllm_version *out);
#define PB_VLLM_VERSION_CHOICES "v0.1|v0.2"                  /* for a PB_T_ENUM key  */

/* The version's defaults for a model of max_model_len tokens (resolves the rule
 * "max(max_model_len, 2048)"; kv_profile_tokens stays 0 where it follows the budget). */
void pb_vllm_knobs_default(pb_vllm_version v, int32_t max_model_len, pb_vllm_knobs *out);
/* Tokens of the KV rule's pass: kv_profile_tokens, or max_num_batched_tokens when 0. */
int32_t pb_vllm_knobs_profile_tokens(const pb_vllm_knobs *k);

#ifdef __cplusplus
}
#endif
#endif /* PB_VLLM_VERSION_H */
