/* policy_registry.c -- scheduler policies by name (YAML `policy: <name>`).
 * Adding a policy = one file with a pb_policy_create_fn + one X(...) line below
 * (README "A scheduling policy"; tests/walkthrough/ builds one exactly so). */
#include <stdio.h>
#include <string.h>

#include "baselines.h"   /* pb_policy_orca_create, pb_policy_ft_create */
#include "policy.h"

/* X(name, constructor, one-line summary for `pagedbench list`) */
#define PB_POLICY_LIST(X)                                                                                    \
    X("vllm", pb_policy_vllm_create, "vLLM of the system's engine (v0.1 | v0.2): FCFS, preempt latest")      \
    X("vllm-v0.1", pb_policy_vllm_v01_create, "vLLM v0.1 (paper §4.5): mixed steps, preempt latest, swapped first") \
    X("vllm-v0.2", pb_policy_vllm_v02_create, "vLLM v0.2: prompt-only / decode-only steps, padded prompt batches") \
    X("sarathi", pb_policy_sarathi_create, "Sarathi-Serve: decodes first, chunked prefills under a token budget") \
    X("spf", pb_policy_spf_create, "vLLM scheduling with shortest-prompt-first admission")                   \
    X("priority", pb_policy_priority_create,                                                                 \
      "vLLM scheduling, smallest aged priority first (SJF with aging; no starvation)")                       \
    X("orca", pb_policy_orca_create, "Orca: iteration-level FCFS, contiguous buddy reservations, no preemption") \
    X("ft", pb_policy_ft_create, "FasterTransformer: request-level batches of up to B earliest requests")    \
    X("prefix-cache", pb_policy_prefix_cache_create,                                                         \
      "vLLM scheduling with automatic prefix caching (computed blocks reused by content, LRU eviction)")     \
    /* end of the list */

/* each constructor's prototype, so that a new policy needs no header line */
#define PB_POLICY_DECLARE(name, fn, summary) pb_status fn(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
PB_POLICY_LIST(PB_POLICY_DECLARE)

#define PB_POLICY_ENTRY(name, fn, summary) {name, fn, summary},
const pb_policy_entry pb_policy_registry[] = {
    PB_POLICY_LIST(PB_POLICY_ENTRY)
    {NULL, NULL, NULL},
};

const pb_policy_entry *pb_policy_find(const char *name) {
    if (!name) return NULL;
    for (const pb_policy_entry *e = pb_policy_registry; e->name; e++)
        if (!strcmp(e->name, name)) return e;
    return NULL;
}

const char *pb_policy_names(void) {
    static char buf[512];
    if (!buf[0]) {
        size_t off = 0;
        for (const pb_policy_entry *e = pb_policy_registry; e->name; e++)
            off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s", off ? "|" : "", e->name);
    }
    return buf;
}

pb_status pb_policy_create(const char *name, const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    *out = NULL;
    const pb_policy_entry *e = pb_policy_find(name);
    if (!e) {
        pb_log_error("unknown policy '%s' (known: %s)", name ? name : "(null)", pb_policy_names());
        if (err && opts) pb_cfg_fail(err, opts, false, "unknown policy '%s' (known: %s)",
                                     name ? name : "(null)", pb_policy_names());
        return PB_ERR_INVALID;
    }
    return e->create(opts, out, err);
}
