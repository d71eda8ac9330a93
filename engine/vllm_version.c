/* vllm_version.c -- the defaults table of the modelled vLLM versions (see the header). */
#include "vllm_version.h"

#include <string.h>

/* 0 in max_num_batched_tokens / kv_profile_tokens = the derived rule (header). */
static const struct {
    const char *name;
    pb_vllm_knobs k;
} VERSIONS[] = {
    [PB_VLLM_V01] = {"v0.1", {PB_STEP_MIXED, -1, 2560, 256, 0.95, PB_KV_RULE_HARNESS, PB_KV_PROFILE_TOKENS}},
    [PB_VLLM_V02] = {"v0.2", {PB_STEP_ALTERNATE, 256, 0, 256, 0.90, PB_KV_RULE_PROFILE, 0}},
};

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

void pb_vllm_knobs_default(pb_vllm_version v, int32_t max_model_len, pb_vllm_knobs *out) {
    PB_ASSERT((unsigned)v < PB_ARRAY_LEN(VERSIONS));
    *out = VERSIONS[v].k;
    if (out->max_num_batched_tokens == 0) out->max_num_batched_tokens = PB_MAX(max_model_len, 2048);
}

int32_t pb_vllm_knobs_profile_tokens(const pb_vllm_knobs *k) {
    return k->kv_profile_tokens > 0 ? k->kv_profile_tokens : k->max_num_batched_tokens;
}
