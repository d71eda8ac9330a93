/* policy_vllm_v02.c -- vLLM v0.2.x's scheduler (docs/DESIGN.md §3.2), whatever the
 * engine's step_mode: steps alternate instead of mixing.  While nothing is swapped a
 * step first tries to admit waiting groups FCFS; if any was admitted the step is
 * prompt-only, padded to [prompts, longest prompt] as in v0.2.2-v0.2.7: admission
 * stops when prompts x longest > max_num_batched_tokens or the padding >
 * max_paddings -- the system's max_paddings when it is >= 0 (`engine: v0.2` sets
 * 256), else v0.2's 256 (engine/vllm_version.h); the unpadded prompt steps of
 * v0.2.0-0.2.1 are `policy: vllm` with `step_mode: alternate, max_paddings: -1`.
 * Otherwise it decodes the running groups (preempting the latest arrivals) and
 * swaps groups in if nothing was preempted.  Options: none. */
#include "engine.h"   /* pb_engine_params */
#include "replay.h"
#include "vllm_version.h"

static pb_status v02_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    const pb_engine_params *ep = pb_sched_params(s);
    pb_vllm_knobs v02;
    pb_vllm_knobs_default(PB_VLLM_V02, ep->max_model_len, NULL, &v02);
    return pb_sched_vllm_v02_step(s, ep->max_paddings >= 0 ? ep->max_paddings : v02.max_paddings);
}

static const pb_policy_i V02_IFACE = {
    .name = "vllm-v0.2",
    .waiting_key = NULL,   /* FCFS */
    .schedule = v02_schedule,
    .destroy = pb_policy_plain_destroy,
    .steady = &pb_vllm_steady_v02,
};

/* its steps alternate whatever the engine's step_mode; max_paddings applies */
const pb_policy_keys pb_policy_vllm_v02_keys = {NULL, "step_mode"};

pb_status pb_policy_vllm_v02_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    return pb_policy_plain_create(&V02_IFACE, opts, out, err);
}
