/* policy.h -- the scheduler-policy interface: which groups run each step.
 *
 * Every step the engine (engine.c) first moves arrived requests into the WAITING
 * queue, then calls the policy's schedule().  The policy builds the step's batch
 * ONLY through the pb_sched_* actions below, which apply the KV-manager operations,
 * move groups between queues, record metrics, and add batch entries; a policy is
 * typically 30-100 lines.  The groups it reads are handed out writable (pb_group *)
 * so that it can keep g->policy_data; every other field is the engine's and a policy
 * must treat it as read-only.  Nothing enforces this: a policy that writes group
 * fields or the KV manager directly can corrupt engine state, which the engine's
 * invariant checker (pb_engine_check, run by the tests) may or may not catch.
 *
 * Queues the engine keeps (all O(1) or O(log n) per operation):
 *   waiting  a priority queue ordered by (wait_key, arrival_s, id); wait_key comes
 *            from the policy's waiting_key() (NULL: arrival time, i.e. FCFS; a
 *            recompute-preempted group keeps its key and so returns to the front
 *            under FCFS, as vLLM's waiting.insert(0, g));
 *   running  a list sorted by (arrival_s, id): head = earliest = highest FCFS
 *            priority, tail = latest arrival = the first to preempt (paper §4.5);
 *   swapped  a list sorted by (arrival_s, id).
 * Walk the lists with g->next / g->prev from pb_sched_*_head / _tail.  A group that
 * an action removes from a list must not be used as a cursor afterwards.
 *
 * Most policies are short compositions of the BUILDING BLOCKS below (decode the
 * running groups with a victim rule, continue partial prefills, swap in, admit from
 * the waiting queue's head under an admission rule).  The shipped ones:
 *   vllm-v0.1 (policy_vllm_v01.c)  paper §4.5 / docs/DESIGN.md §3.1: running first,
 *         preempt the latest-arrived groups all-or-nothing, swapped before waiting,
 *         no admission while anything is swapped, watermark, token and sequence
 *         budgets; prompts and decodes share a step.
 *   vllm-v0.2 (policy_vllm_v02.c)  the same rules in v0.2.x's alternating steps
 *         (prompt-only or decode-only), prompt steps padded under max_paddings.
 *   vllm  (policy_vllm.c)  v0.1 or v0.2 as the system's engine says
 *         (params->step_mode).
 *   sarathi (policy_sarathi.c)  Sarathi-Serve: decodes first, then chunks of
 *         partial prefills and new prompts under a per-step token budget.
 *   prefix-cache (policy_prefix_cache.c)  vllm with automatic prefix caching.
 *   spf   (policy_spf.c)   vllm with the waiting queue ordered by prompt length.
 *   priority (policy_priority.c) vllm ordered by an aged priority (SJF with aging:
 *         options priority_by, aging_rate).
 *   orca  iteration-level FCFS admission while pb_sched_can_admit() == OK (the
 *         contiguous manager's reservation), decode all running, no preemption.
 *   ft    request-level: admit up to B waiting groups only when nothing runs; the
 *         batch decodes until its last group finishes.
 *
 * Prefill phase: an admitted group is in its prefill phase (g->prefill) until the
 * step that computes the last of its prefill tokens; a chunking policy spreads a
 * single-sequence prefill over several steps (pb_sched_admit / pb_sched_prefill
 * with max_tokens below the prompt), and only the completing step samples (the
 * group's first token).  KV is allocated for the whole prompt at admission.
 *
 * Adding a policy: one file with a pb_policy_create_fn (and, when it takes options,
 * its pb_policy_keys, below), plus one X(...) line in experiments/policy_registry.c
 * (README "A scheduling policy").  The YAML names it (system.policy: <name>). */
#ifndef PB_POLICY_H
#define PB_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "kv_manager.h"
#include "pb.h"
#include "sequence.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pb_engine_params pb_engine_params;   /* engine.h */

/* How a preempted group gives up its KV (paper §4.5). */
typedef enum {
    PB_PREEMPT_AUTO = 0,   /* vLLM default: recompute a single-sequence group, swap a
                              multi-sequence one (max_seqs > 1)                      */
    PB_PREEMPT_RECOMPUTE,  /* free the KV; re-prefill prompt + generated later       */
    PB_PREEMPT_SWAP        /* move the KV to the CPU swap space                      */
} pb_preempt_mode;

/* vLLM step structure (docs/DESIGN.md §3.1 / §3.2). */
typedef enum {
    PB_STEP_MIXED = 0,     /* v0.1.x: one batch mixes prompts and decodes; running
                              first, then swapped, then waiting                      */
    PB_STEP_ALTERNATE      /* v0.2.x: a step admits prompts only (if any admitted),
                              otherwise it is a decode step of the running groups;
                              params->max_paddings >= 0 pads the prompt step (v0.2.2+,
                              engine.h)                                              */
} pb_step_mode;

const char *pb_preempt_mode_str(pb_preempt_mode m);   /* "auto" "recompute" "swap" */
bool pb_preempt_mode_parse(const char *s, pb_preempt_mode *out);
const char *pb_step_mode_str(pb_step_mode m);          /* "mixed" "alternate" */
bool pb_step_mode_parse(const char *s, pb_step_mode *out);   /* also "v0.1", "v0.2" */

/* One step's scheduling context (opaque; lives in the engine). */
typedef struct pb_sched pb_sched;

typedef struct pb_policy pb_policy;
typedef struct {
    const char *name;
    /* Priority key of g in the waiting heap, smaller first (ties: arrival, id).
       Called when g enters the waiting queue.  NULL = FCFS (g->arrival_s). */
    double (*waiting_key)(pb_policy *p, const pb_group *g);
    /* Build this step through pb_sched_* actions.  Scheduling nothing is allowed;
       the engine then advances the clock to the next arrival (and fails the run
       with PB_ERR_INVALID if nothing can ever happen again: a stalled policy). */
    pb_status (*schedule)(pb_policy *p, pb_sched *s);
    /* Optional: g finished or was rejected (policy-private bookkeeping). */
    void (*on_group_done)(pb_policy *p, pb_sched *s, pb_group *g);
    void (*destroy)(pb_policy *p);
    /* The paged KV manager keeps computed full blocks cached by content (automatic
       prefix caching, block_manager.h) for this policy's systems. */
    bool prefix_caching;
    /* Optional: steady-state answers for the engine's fast path (replay.h); NULL:
       none (the engine then runs every step). */
    const struct pb_policy_steady_i *steady;
} pb_policy_i;

struct pb_policy {
    const pb_policy_i *iface;
    void *impl;
};

static inline void pb_policy_destroy(pb_policy *p) { if (p) p->iface->destroy(p); }

/* ---- options: what a policy reads of its system's YAML map ----
 * A policy declares, next to its constructor, the keys of the system's map it takes
 * (its options: name, type, range or choices, default, one-line doc) and the keys of
 * its system type it never reads (its step is fixed).  That declaration is the one
 * place they are described: its registry line names it, and from it the experiment
 * schema checks and documents the keys (experiments/experiment.c, `pagedbench list
 * --keys`), experiments/system.c hands the policy exactly its options (another
 * policy's option, or an ignored key, is a config error), and the constructor checks
 * and reads them with pb_policy_opts_check / pb_policy_opt_* below. */
typedef struct {
    const char *name;       /* NULL terminates a table                                */
    pb_type type;           /* PB_T_INT, PB_T_NUM or PB_T_ENUM (config.h)             */
    double lo, hi;          /* INT, NUM: the range, inclusive (lo < hi)               */
    const char *choices;    /* ENUM: "a|b|c"                                          */
    const char *dflt;       /* the default, as YAML text ("512", "prompt")            */
    const char *doc;        /* one line, for `pagedbench list --keys`                 */
} pb_policy_option;

typedef struct {
    const pb_policy_option *options;   /* {NULL}-terminated; NULL: none                */
    const char *ignores;               /* keys of its system type it never reads,
                                          "a|b" (an error when given); NULL: none       */
} pb_policy_keys;

extern const pb_policy_keys pb_policy_no_keys;   /* no options, reads all of its type's */

/* The option `name` of k, or NULL. */
const pb_policy_option *pb_policy_option_find(const pb_policy_keys *k, const char *name);
/* Option o as a schema key (config.h): type, range, choices, default, doc. */
pb_key pb_policy_option_key(const pb_policy_option *o);
/* Check map opts (NULL: no options given) against k: each key is one of k's options
   ("policy <policy>: unknown option 'x' (its options: ...)") with a value of its type
   and range (pb_config_validate_value).  Errors at file:line:col in err (may be NULL). */
pb_status pb_policy_opts_check(const char *policy, const pb_policy_keys *k, const pb_node *opts,
                               pb_cfg_err *err);
/* The value of option `name` (declared in k) in opts, checked by pb_policy_opts_check,
   else its default.  ENUM options are read with pb_policy_opt_str. */
int64_t pb_policy_opt_int(const pb_policy_keys *k, const pb_node *opts, const char *name);
double pb_policy_opt_num(const pb_policy_keys *k, const pb_node *opts, const char *name);
const char *pb_policy_opt_str(const pb_policy_keys *k, const pb_node *opts, const char *name);
/* Invariants of a declaration: names unique and given, types readable, ranges
   ordered, choices given exactly for ENUM, a doc line, every default a valid value.
   PB_OK, or PB_ERR_INVALID with the problems in err ("<policy>: option ..."). */
pb_status pb_policy_keys_check(const char *policy, const pb_policy_keys *k, pb_cfg_err *err);

/* ---- registry (experiments/policy_registry.c) ---- */
/* Create a policy.  opts: the policy's own YAML map (NULL = defaults); errors are
   recorded in err (file:line:col when opts is given). */
typedef pb_status (*pb_policy_create_fn)(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
typedef struct {
    const char *name;
    pb_policy_create_fn create;
    const pb_policy_keys *keys;   /* its options and ignored type keys */
    const char *summary;          /* one line for `pagedbench list` */
} pb_policy_entry;
extern const pb_policy_entry pb_policy_registry[];   /* terminated by {NULL, ...} */
const pb_policy_entry *pb_policy_find(const char *name);   /* NULL if unknown */
/* "vllm|spf|..." for a PB_T_ENUM schema key (static storage). */
const char *pb_policy_names(void);
/* Find + create.  Unknown name: PB_ERR_INVALID with "unknown policy 'x' (known: ...)". */
pb_status pb_policy_create(const char *name, const pb_node *opts, pb_policy **out,
                           pb_cfg_err *err);
/* The registry's invariants: names unique; every entry's keys (pb_policy_keys_check);
   its ignored keys are keys of a system's map and its options are not; an option
   several policies take is declared alike by all of them (type, range, choices,
   default: the experiment schema holds it once).  PB_OK or PB_ERR_INVALID. */
pb_status pb_policy_registry_check(pb_cfg_err *err);

/* The shipped policies' constructors (a new policy's is declared by its registry
   line, as is every policy's pb_policy_keys). */
pb_status pb_policy_vllm_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
pb_status pb_policy_vllm_v01_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
pb_status pb_policy_vllm_v02_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
pb_status pb_policy_sarathi_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
pb_status pb_policy_spf_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
pb_status pb_policy_priority_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);

/* A policy without options or state (policy.c): fails with "policy <name> takes
   no options" (file:line:col in err) when opts has keys; else *out = {iface, NULL}. */
pb_status pb_policy_plain_create(const pb_policy_i *iface, const pb_node *opts, pb_policy **out,
                                 pb_cfg_err *err);
void pb_policy_plain_destroy(pb_policy *p);   /* frees p->impl and p (NULL: nothing) */

/* ---- what a policy may read ---- */
double pb_sched_now(const pb_sched *s);                 /* simulated clock, seconds  */
int64_t pb_sched_step(const pb_sched *s);               /* step index (0-based)      */
pb_kv_manager *pb_sched_kv(pb_sched *s);
const pb_engine_params *pb_sched_params(const pb_sched *s);

pb_group *pb_sched_running_head(pb_sched *s);          /* earliest arrival          */
pb_group *pb_sched_running_tail(pb_sched *s);          /* latest arrival            */
int32_t pb_sched_n_running(const pb_sched *s);         /* groups                    */
/* Sequence budget of running groups: sum of max(n_seqs, max_seqs) (vLLM v0.2
   get_max_num_running_seqs), compared with params->max_num_seqs. */
int32_t pb_sched_running_seqs(const pb_sched *s);
pb_group *pb_sched_swapped_head(pb_sched *s);
pb_group *pb_sched_swapped_tail(pb_sched *s);
int32_t pb_sched_n_swapped(const pb_sched *s);
pb_group *pb_sched_waiting_peek(pb_sched *s);          /* highest priority, or NULL */
int32_t pb_sched_n_waiting(const pb_sched *s);

/* This step so far */
int64_t pb_sched_batch_tokens(const pb_sched *s);      /* prefill tokens + decodes  */
int32_t pb_sched_batch_prefill_tokens(const pb_sched *s);
int32_t pb_sched_batch_groups(const pb_sched *s);
int32_t pb_sched_n_preempted(const pb_sched *s);       /* groups preempted this step*/
int32_t pb_sched_n_swapped_out(const pb_sched *s);     /* of which by swapping      */
bool pb_sched_preempted_this_step(const pb_sched *s, const pb_group *g);

/* ---- actions ---- */
/* Admission check of WAITING g: NEVER when the engine can never run it (prompt
   longer than max_model_len or max_num_batched_tokens, beam width over
   PB_MAX_TOP/2, more sequences than max_num_seqs) or the KV manager says NEVER;
   else the manager's OK / LATER. */
pb_alloc_status pb_sched_can_admit(pb_sched *s, const pb_group *g);
/* Admit WAITING g (any position in the heap): allocate its KV (all len tokens), move
   it to running and schedule its prefill (prompt, or prompt + generated after
   recompute) from its cached tokens on, at most max_tokens of them this step
   (>= 1; INT32_MAX = the whole prefill; a multi-sequence group -- recompute of
   parallel samples or beams -- is never split: max_tokens >= g->len).
   PB_ERR_NO_SPACE if the manager refuses (g stays waiting). */
pb_status pb_sched_admit(pb_sched *s, pb_group *g, int32_t max_tokens);
/* Schedule the next chunk, at most max_tokens >= 1 tokens, of RUNNING g in its
   prefill phase and not yet in this step's batch. */
pb_status pb_sched_prefill(pb_sched *s, pb_group *g, int32_t max_tokens);
/* Drop g (WAITING or SWAPPED) as never-fitting: frees any KV, counts it rejected. */
void pb_sched_reject(pb_sched *s, pb_group *g);
/* Can RUNNING g decode this step (one more slot for each of its sequences)? */
bool pb_sched_can_decode(pb_sched *s, const pb_group *g);
/* Schedule RUNNING g's decode: append a slot per sequence (CoW pairs collected).
   PB_ERR_NO_SPACE if a slot cannot be had (call pb_sched_can_decode first). */
pb_status pb_sched_decode(pb_sched *s, pb_group *g);
/* Preempt RUNNING g (not already in this step's batch) all-or-nothing.  AUTO picks
   recompute for max_seqs == 1, else swap; SWAP falls back to RECOMPUTE when the
   manager cannot swap or the CPU space is full, and for a group in its prefill
   phase (no token yet: it restarts its prefill).  Returns the mode used. */
pb_preempt_mode pb_sched_preempt(pb_sched *s, pb_group *g, pb_preempt_mode mode);
/* Swap-in check of SWAPPED g (manager's answer; one spare block per sequence). */
pb_alloc_status pb_sched_can_swap_in(pb_sched *s, const pb_group *g);
/* Swap SWAPPED g back in, move it to running AND schedule its decode this step. */
pb_status pb_sched_swap_in(pb_sched *s, pb_group *g);

/* ---- building blocks of a step (sched_step.c) ---- */

/* Victim rule: the RUNNING group to preempt so that RUNNING `needy` (not yet in this
   step's batch) can get its decode slots: needy itself, or a group not in this
   step's batch. */
typedef pb_group *(*pb_victim_fn)(pb_sched *s, pb_group *needy, void *user);
/* vLLM (paper §4.5): the latest arrival (the running list's tail); needy when the
   tail is already in the batch. */
pb_group *pb_victim_latest(pb_sched *s, pb_group *needy, void *user);

/* Decode every RUNNING group that is neither in its prefill phase nor in the batch,
   in running order (FCFS): while a group cannot get a slot per sequence, preempt
   victim(s, g, user) (params->preemption); a preempted group is skipped.  victim
   NULL = never preempt: a group that cannot decode is an error (PB_ERR_INVALID). */
pb_status pb_sched_decode_running(pb_sched *s, pb_victim_fn victim, void *user);
/* Next chunks of the RUNNING groups in their prefill phase, in running order, while
   pb_sched_batch_tokens() < token_budget: each gets at most the budget left. */
pb_status pb_sched_continue_prefills(pb_sched *s, int64_t token_budget);
/* Swap in SWAPPED groups FCFS (each decodes this step) while can_swap_in == OK and
   max_num_seqs allows; NEVER => rejected; stops at a group preempted this step. */
pb_status pb_sched_swap_in_fcfs(pb_sched *s);

/* How pb_sched_admit_waiting fits prefills into the step. */
typedef struct {
    int64_t token_budget;   /* tokens of the step, decodes included; a prefill costs
                               its uncached tokens, g->len - pb_kv_cached_tokens()   */
    int32_t chunk;          /* 0: whole prefills only -- a head over the budget waits,
                               or runs alone when the step has no tokens yet (vLLM);
                               > 0: chunked prefill -- a single-sequence prefill is
                               admitted with min(chunk, budget left) tokens this
                               step, and prompts longer than max_num_batched_tokens
                               are admissible                                        */
    bool padded;            /* v0.2.2+ padded prompt batch: rows x longest <=
                               token_budget and padding <= max_paddings, instead
                               of the token sum (chunk must be 0)                    */
    int32_t max_paddings;   /* padded: the padding cap                              */
    int32_t max_groups;     /* running groups at most, 0 = no limit (Orca, FT)      */
} pb_admit_rule;
/* Admit from the head of the waiting queue (waiting_key order) while the manager
   says OK (NEVER => rejected), the rule's budgets and max_num_seqs allow; stops at
   the first head that does not fit (no skipping) or was preempted this step.
   Under chunking, a first chunk covers a shared prefix (prefix_id) whole -- the
   prefix pool's KV is computed by its first user's admission step -- running alone
   when the prefix is over the budget.  *n_admitted (may be NULL): groups admitted. */
pb_status pb_sched_admit_waiting(pb_sched *s, const pb_admit_rule *r, int32_t *n_admitted);

/* The vLLM scheduling step (paper §4.5, docs/DESIGN.md §3) on whatever waiting order
   the policy's waiting_key gives: v0.1.x mixed steps (decode, swap in, admit), or
   v0.2.x alternating ones (prompt-only steps, padded when max_paddings >= 0: the
   batch carries n_padded_tokens), or the one params->step_mode names (with
   params->max_paddings). */
pb_status pb_sched_vllm_v01_step(pb_sched *s);
pb_status pb_sched_vllm_v02_step(pb_sched *s, int32_t max_paddings);
pb_status pb_sched_vllm_step(pb_sched *s);
#ifdef __cplusplus
}
#endif
#endif /* PB_POLICY_H */
