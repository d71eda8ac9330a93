/* policy_registry.c -- scheduler policies by name (YAML `policy: <name>`).
 * Adding a policy = one file with a pb_policy_create_fn + one X(...) line below
 * (README "A scheduling policy"; tests/walkthrough/ builds one exactly so).  A policy
 * that takes options declares them in its file (a pb_policy_keys, policy.h) and
 * names it on its line; nothing else lists them. */
#include <stdio.h>
#include <string.h>

#include "baselines.h"    /* pb_policy_orca_create, pb_policy_ft_create */
#include "experiment.h"   /* pb_system_entry_schema: the keys of a system's map */
#include "policy.h"

/* X(name, constructor, its pb_policy_keys (pb_policy_no_keys: no options, reads all
     of its type's keys), one-line summary for `pagedbench list`) */
#define PB_POLICY_LIST(X)                                                                                    \
    X("vllm", pb_policy_vllm_create, pb_policy_no_keys,                                                       \
      "vLLM of the system's engine (v0.1 | v0.2): FCFS, preempt latest")                                     \
    X("vllm-v0.1", pb_policy_vllm_v01_create, pb_policy_vllm_v01_keys,                                        \
      "vLLM v0.1 (paper §4.5): mixed steps, preempt latest, swapped first")                                  \
    X("vllm-v0.2", pb_policy_vllm_v02_create, pb_policy_vllm_v02_keys,                                        \
      "vLLM v0.2: prompt-only / decode-only steps, padded prompt batches")                                   \
    X("sarathi", pb_policy_sarathi_create, pb_policy_sarathi_keys,                                            \
      "Sarathi-Serve: decodes first, chunked prefills under a token budget")                                 \
    X("spf", pb_policy_spf_create, pb_policy_no_keys, "vLLM scheduling with shortest-prompt-first admission") \
    X("priority", pb_policy_priority_create, pb_policy_priority_keys,                                         \
      "vLLM scheduling, smallest aged priority first (SJF with aging; no starvation)")                       \
    X("orca", pb_policy_orca_create, pb_policy_orca_keys,                                                     \
      "Orca: iteration-level FCFS, contiguous buddy reservations, no preemption")                            \
    X("ft", pb_policy_ft_create, pb_policy_ft_keys,                                                           \
      "FasterTransformer: request-level batches of up to B earliest requests")                               \
    X("hf", pb_policy_hf_create, pb_policy_hf_keys,                                                           \
      "HF Transformers (2023): static batches, padded prompts, finish together, no sharing")                 \
    X("tgi", pb_policy_tgi_create, pb_policy_tgi_keys,                                                        \
      "TGI (2023): continuous batching over prompt + max_new_tokens reservations, no paging")                \
    X("prefix-cache", pb_policy_prefix_cache_create, pb_policy_no_keys,                                       \
      "vLLM scheduling with automatic prefix caching (computed blocks reused by content, LRU eviction)")     \
    /* end of the list */

/* each constructor's prototype and keys, so that a new policy needs no header line */
#define PB_POLICY_DECLARE(name, fn, keys, summary)                                                           \
    pb_status fn(const pb_node *opts, pb_policy **out, pb_cfg_err *err);                                     \
    extern const pb_policy_keys keys;
PB_POLICY_LIST(PB_POLICY_DECLARE)

#define PB_POLICY_ENTRY(name, fn, keys, summary) {name, fn, &keys, summary},
const pb_policy_entry pb_policy_registry[] = {
    PB_POLICY_LIST(PB_POLICY_ENTRY)
    {NULL, NULL, NULL, NULL},
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

static bool system_key(const char *name, size_t len) {
    for (const pb_key *k = pb_system_entry_schema; k->name; k++)
        if (strlen(k->name) == len && !memcmp(k->name, name, len)) return true;
    return false;
}

pb_status pb_policy_registry_check(pb_cfg_err *err) {
    pb_status st = PB_OK;
    for (const pb_policy_entry *e = pb_policy_registry; e->name; e++) {
        const pb_node at = {.kind = PB_NODE_SCALAR, .file = e->name};   /* where problems are reported */
        for (const pb_policy_entry *d = pb_policy_registry; d < e; d++)
            if (!strcmp(d->name, e->name)) st = pb_cfg_fail(err, &at, false, "registered twice");
        if (pb_policy_keys_check(e->name, e->keys, err)) st = PB_ERR_INVALID;
        /* ignored keys are keys of a system's map; options are not (experiment.c) */
        for (const char *p = e->keys->ignores; p && *p;) {
            size_t l = strcspn(p, "|");
            if (!system_key(p, l)) st = pb_cfg_fail(err, &at, false, "ignores '%.*s': not a key of a system", (int)l, p);
            p += l + (p[l] == '|');
        }
        for (const pb_policy_option *o = e->keys->options; o && o->name; o++)
            if (system_key(o->name, strlen(o->name)))
                st = pb_cfg_fail(err, &at, false, "option '%s' is already a key of a system (experiment.c)",
                                 o->name);
        /* an option another policy also takes: declared alike (one schema entry) */
        for (const pb_policy_option *o = e->keys->options; o && o->name; o++)
            for (const pb_policy_entry *d = pb_policy_registry; d < e; d++) {
                const pb_policy_option *p = pb_policy_option_find(d->keys, o->name);
                if (p && (p->type != o->type || p->lo != o->lo || p->hi != o->hi || strcmp(p->dflt, o->dflt) ||
                          strcmp(p->choices ? p->choices : "", o->choices ? o->choices : "")))
                    st = pb_cfg_fail(err, &at, false,
                                     "option '%s' differs from policy %s's (type, range, choices or default)",
                                     o->name, d->name);
            }
    }
    return st;
}
