/* vllm_version.c -- the defaults table of the modelled vLLM versions (see the header). */
#include "vllm_version.h"

#include <ctype.h>
#include <string.h>

#include "block_manager.h"   /* PB_PAGED_WATERMARK */

/* 0 in max_num_batched_tokens / max_num_seqs / kv_profile_tokens = the derived rule
   (header). */
static const struct {
    const char *name;
    pb_vllm_knobs k;
} VERSIONS[] = {
    [PB_VLLM_V01] = {"v0.1", {PB_STEP_MIXED, -1, 2560, 256, 0.95, PB_KV_RULE_HARNESS, PB_KV_PROFILE_TOKENS, false,
                              PB_PREEMPT_AUTO, PB_PAGED_WATERMARK, false, false, false, false, 2}},
    [PB_VLLM_V02] = {"v0.2", {PB_STEP_ALTERNATE, 256, 0, 256, 0.90, PB_KV_RULE_PROFILE, 0, false, PB_PREEMPT_AUTO,
                              PB_PAGED_WATERMARK, false, false, false, false, 2}},
    [PB_VLLM_V1] = {"v1", {PB_STEP_CHUNKED, -1, 0, 0, 0.92, PB_KV_RULE_V1, 0, true, PB_PREEMPT_RECOMPUTE, 0.0, true,
                           true, true, true, PB_FLASH_AUTO}},
};

/* Does hw's name contain "a100" (any case)? */
static bool is_a100(const pb_hw *hw) {
    for (const char *p = hw->name; *p; p++)
        if (tolower((unsigned char)p[0]) == 'a' && p[1] == '1' && p[2] == '0' && p[3] == '0') return true;
    return false;
}

const char *pb_vllm_version_str(pb_vllm_version v) {
    return (unsigned)v < PB_ARRAY_LEN(VERSIONS) ? VERSIONS[v].name : "?";
}

bool pb_vllm_version_parse(const char *s, pb_vllm_version *out) {
    for (size_t i = 0; s && i < PB_ARRAY_LEN(VERSIONS); i++)
        if (!strcmp(s, VERSIONS[i].name)) {
            *out = (pb_vllm_version)i;
            return true;
        }
    return false;
}

void pb_vllm_knobs_default(pb_vllm_version v, int32_t max_model_len, const pb_hw *hw, pb_vllm_knobs *out) {
    PB_ASSERT((unsigned)v < PB_ARRAY_LEN(VERSIONS));
    *out = VERSIONS[v].k;
    if (v == PB_VLLM_V1) {   /* engine/arg_utils.py get_batch_defaults, OPENAI_API_SERVER */
        const double gib = 1024.0 * 1024.0 * 1024.0;
        double mem = hw ? hw->mem_bytes : 0;
        bool big = mem >= 160 * gib, large = !big && mem >= 70 * gib && !is_a100(hw);
        out->max_num_batched_tokens = big ? 16384 : large ? 8192 : 2048;
        out->max_num_seqs = big || large ? 1024 : 256;
    }
    if (out->max_num_batched_tokens == 0) out->max_num_batched_tokens = PB_MAX(max_model_len, 2048);
}

int32_t pb_vllm_knobs_profile_tokens(const pb_vllm_knobs *k) {
    return k->kv_profile_tokens > 0 ? k->kv_profile_tokens : k->max_num_batched_tokens;
}
