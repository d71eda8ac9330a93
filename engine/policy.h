/* policy.h -- the scheduler-policy interface: which groups run each step.
 *
 * Each step the engine enqueues the arrivals, then calls the policy's schedule(),
 * which builds the step's batch only through the pb_sched_* actions below (they
 * apply the KV manager's operations, move groups between queues, record metrics and
 * add batch entries).  Groups are handed out writable so that a policy can keep
 * g->policy_data; every other field is the engine's, read-only to a policy.
 *
 * Queues:
 *   waiting  ordered by (wait_key, arrival_s, id); wait_key is the policy's
 *            waiting_key() (NULL: arrival_s, FCFS), kept by a group that a
 *            recompute preemption returns to the queue;
 *   running  sorted by (arrival_s, id): the head arrived first, the tail last;
 *   swapped  sorted by (arrival_s, id).
 * Walk the lists with g->next / g->prev from the _head / _tail accessors; a group an
 * action removes from a list is no cursor afterwards.
 *
 * Prefill phase: an admitted group is in its prefill (g->prefill) until the step that
 * computes its last prompt token, which samples its first token.  KV is allocated for
 * the whole prompt at admission; a chunking policy spreads a single-sequence prefill
 * over several steps (max_tokens below the prompt).
 *
 * A policy is one file with a pb_policy_create_fn (and, with options, its
 * pb_policy_keys) plus one X(...) line in experiments/policy_registry.c; a system's
 * YAML names it (policy: <name>).  The shipped ones compose the building blocks
 * below: vllm, vllm-v0.1, vllm-v0.2 (policy_vllm*.c), sarathi, prefix-cache, spf,
 * priority (engine/), orca, ft (baselines/). */
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
    PB_PREEMPT_AUTO = 0,   /* recompute a single-sequence group, swap a multi-sequence one */
    PB_PREEMPT_RECOMPUTE,  /* free the KV; prefill prompt + generated again later          */
    PB_PREEMPT_SWAP        /* move the KV to the CPU swap space                            */
} pb_preempt_mode;

/* Step structure of the vLLM versions (docs/DESIGN.md §3.1 / §3.2 / §3.3). */
typedef enum {
    PB_STEP_MIXED = 0,     /* v0.1.x: a step mixes prompts and decodes                     */
    PB_STEP_ALTERNATE,     /* v0.2.x: a step admits prompts only, or else decodes          */
    PB_STEP_CHUNKED        /* V1: decodes, then prefill chunks, in one token budget        */
} pb_step_mode;

const char *pb_preempt_mode_str(pb_preempt_mode m);   /* "auto" "recompute" "swap" */
bool pb_preempt_mode_parse(const char *s, pb_preempt_mode *out);
const char *pb_step_mode_str(pb_step_mode m);          /* "mixed" "alternate" "chunked" */
bool pb_step_mode_parse(const char *s, pb_step_mode *out);   /* also "v0.1", "v0.2", "v1" */

/* What a policy sees of the engine in a step (opaque). */
typedef struct pb_sched pb_sched;

typedef struct pb_policy pb_policy;
typedef struct {
    const char *name;
    /* g's key in the waiting queue, smaller first; called when g enters it.  NULL:
       arrival_s (FCFS). */
    double (*waiting_key)(pb_policy *p, const pb_group *g);
    /* Build this step through the pb_sched_* actions.  Scheduling nothing is allowed:
       the clock then moves to the next arrival (none left: the run fails, stalled). */
    pb_status (*schedule)(pb_policy *p, pb_sched *s);
    /* Optional: g finished or was rejected. */
    void (*on_group_done)(pb_policy *p, pb_sched *s, pb_group *g);
    void (*destroy)(pb_policy *p);
    /* The paged manager caches computed blocks by content (automatic prefix caching,
       block_manager.h) for this policy's systems. */
    bool prefix_caching;
    /* Optional: steady-state answers for the engine's fast path (replay.h); NULL:
       none (every step runs as scheduled). */
    const struct pb_policy_steady_i *steady;
} pb_policy_i;

struct pb_policy {
    const pb_policy_i *iface;
    void *impl;
};

static inline void pb_policy_destroy(pb_policy *p) { if (p) p->iface->destroy(p); }

/* ---- options: the keys of its system's YAML map a policy reads ----
 * Declared once, next to the constructor: the experiment schema checks and documents
 * them (`pagedbench list --keys`), the system hands the policy exactly these keys
 * (another policy's option, or an ignored key, is a config error), and the
 * constructor checks and reads them with the functions below. */
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
/* Check map opts (NULL: none given) against k: each key one of k's options, with a
   value of its type and range.  Errors at file:line:col in err (may be NULL). */
pb_status pb_policy_opts_check(const char *policy, const pb_policy_keys *k, const pb_node *opts,
                               pb_cfg_err *err);
/* Option `name` (declared in k) of opts, checked by pb_policy_opts_check, else its
   default.  ENUM options are read with pb_policy_opt_str. */
int64_t pb_policy_opt_int(const pb_policy_keys *k, const pb_node *opts, const char *name);
double pb_policy_opt_num(const pb_policy_keys *k, const pb_node *opts, const char *name);
const char *pb_policy_opt_str(const pb_policy_keys *k, const pb_node *opts, const char *name);
/* A declaration's invariants: names unique and given, types readable, ranges ordered,
   choices exactly for ENUM, a doc line, every default a valid value.  PB_OK, or
   PB_ERR_INVALID with the problems in err. */
pb_status pb_policy_keys_check(const char *policy, const pb_policy_keys *k, pb_cfg_err *err);

/* ---- registry (experiments/policy_registry.c) ---- */
/* Create a policy from its own YAML map opts (NULL: defaults); errors in err. */
typedef pb_status (*pb_policy_create_fn)(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
typedef struct {
    const char *name;
    pb_policy_create_fn create;
    const pb_policy_keys *keys;   /* its options and ignored type keys */
    const char *summary;          /* one line for `pagedbench list`     */
} pb_policy_entry;
extern const pb_policy_entry pb_policy_registry[];   /* terminated by {NULL, ...} */
const pb_policy_entry *pb_policy_find(const char *name);   /* NULL if unknown */
const char *pb_policy_names(void);   /* "vllm|spf|...", static storage */
/* Find + create; an unknown name is PB_ERR_INVALID ("unknown policy 'x' (known: ...)"). */
pb_status pb_policy_create(const char *name, const pb_node *opts, pb_policy **out,
                           pb_cfg_err *err);
/* The registry's invariants: names unique; every entry's keys checked; its ignored
   keys are keys of a system's map and its options are not; an option several
   policies take is declared alike by all of them.  PB_OK or PB_ERR_INVALID. */
pb_status pb_policy_registry_check(pb_cfg_err *err);

/* The shipped policies' constructors (a new policy's is declared by its registry
   line). */
pb_status pb_policy_vllm_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
pb_status pb_policy_vllm_v01_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
pb_status pb_policy_vllm_v02_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
pb_status pb_policy_sarathi_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
pb_status pb_policy_spf_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);
pb_status pb_policy_priority_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err);

/* A policy without options or state: "policy <name> takes no options" when opts has
   keys; else *out = {iface, NULL}.  Its destroy: pb_policy_plain_destroy. */
pb_status pb_policy_plain_create(const pb_policy_i *iface, const pb_node *opts, pb_policy **out,
                                 pb_cfg_err *err);
void pb_policy_plain_destroy(pb_policy *p);

/* ---- what a policy may read ---- */
double pb_sched_now(const pb_sched *s);                 /* the clock, seconds        */
int64_t pb_sched_step(const pb_sched *s);               /* step index, from 0        */
pb_kv_manager *pb_sched_kv(pb_sched *s);
const pb_engine_params *pb_sched_params(const pb_sched *s);
pb_group *pb_sched_running_head(pb_sched *s);
pb_group *pb_sched_running_tail(pb_sched *s);
int32_t pb_sched_n_running(const pb_sched *s);
/* The running groups' sequence budget: sum of max(n_seqs, max_seqs), against
   params->max_num_seqs. */
int32_t pb_sched_running_seqs(const pb_sched *s);
pb_group *pb_sched_swapped_head(pb_sched *s);
pb_group *pb_sched_swapped_tail(pb_sched *s);
int32_t pb_sched_n_swapped(const pb_sched *s);
pb_group *pb_sched_waiting_peek(pb_sched *s);          /* the head, or NULL         */
int32_t pb_sched_n_waiting(const pb_sched *s);
/* This step so far */
int64_t pb_sched_batch_tokens(const pb_sched *s);      /* prefill tokens + decodes  */
int32_t pb_sched_batch_prefill_tokens(const pb_sched *s);
int32_t pb_sched_batch_groups(const pb_sched *s);
int32_t pb_sched_n_preempted(const pb_sched *s);       /* groups preempted          */
int32_t pb_sched_n_swapped_out(const pb_sched *s);     /* of them, by swapping      */
bool pb_sched_preempted_this_step(const pb_sched *s, const pb_group *g);

/* ---- actions ---- */
/* Admission of WAITING g: NEVER when the engine can never run it (prompt over
   max_model_len or max_num_batched_tokens, beam width over PB_MAX_TOP / 2, more
   sequences than max_num_seqs) or the manager says NEVER; else the manager's
   OK / LATER. */
pb_alloc_status pb_sched_can_admit(pb_sched *s, const pb_group *g);
/* Admit WAITING g: its KV (all len tokens), into running, and its prefill from its
   cached tokens on, at most max_tokens this step (>= 1; INT32_MAX: all; a
   multi-sequence group is never split).  PB_ERR_NO_SPACE: the manager refused, g
   stays waiting. */
pb_status pb_sched_admit(pb_sched *s, pb_group *g, int32_t max_tokens);
/* The next chunk, at most max_tokens >= 1, of RUNNING g's prefill (g not yet in this
   step's batch). */
pb_status pb_sched_prefill(pb_sched *s, pb_group *g, int32_t max_tokens);
/* Drop WAITING or SWAPPED g as never fitting: its KV freed, counted rejected. */
void pb_sched_reject(pb_sched *s, pb_group *g);
/* Can RUNNING g decode this step (one more slot per sequence)? */
bool pb_sched_can_decode(pb_sched *s, const pb_group *g);
/* RUNNING g's decode: a slot per sequence (copy-on-write pairs collected).
   PB_ERR_NO_SPACE when a slot cannot be had. */
pb_status pb_sched_decode(pb_sched *s, pb_group *g);
/* Preempt RUNNING g (not in this step's batch) all-or-nothing.  AUTO: recompute for
   max_seqs == 1, else swap; SWAP falls back to recompute when the manager cannot
   swap, the CPU space is full or g is in its prefill.  Returns the mode used. */
pb_preempt_mode pb_sched_preempt(pb_sched *s, pb_group *g, pb_preempt_mode mode);
/* Swap-in check of SWAPPED g (the manager's: one spare block per sequence). */
pb_alloc_status pb_sched_can_swap_in(pb_sched *s, const pb_group *g);
/* Swap SWAPPED g back in, into running, and its decode this step. */
pb_status pb_sched_swap_in(pb_sched *s, pb_group *g);

/* ---- building blocks of a step (sched_step.c) ---- */

/* Victim rule: the RUNNING group to preempt so that RUNNING `needy` (not in this
   step's batch) gets its decode slots: needy itself, or a group not in the batch. */
typedef pb_group *(*pb_victim_fn)(pb_sched *s, pb_group *needy, void *user);
/* vLLM's (paper §4.5): the running list's tail; needy when the tail is in the batch. */
pb_group *pb_victim_latest(pb_sched *s, pb_group *needy, void *user);

/* Decode every RUNNING group past its prefill and not in the batch, in running order;
   while one cannot decode, preempt victim(s, g, user) (params->preemption) and skip
   the preempted.  victim NULL: never preempt (a group that cannot decode is
   PB_ERR_INVALID). */
pb_status pb_sched_decode_running(pb_sched *s, pb_victim_fn victim, void *user);
/* The next chunks of the RUNNING groups in their prefill, in running order, while
   pb_sched_batch_tokens() < token_budget, each at most the budget left. */
pb_status pb_sched_continue_prefills(pb_sched *s, int64_t token_budget);
/* Swap SWAPPED groups in, FCFS (each decodes this step), while can_swap_in is OK and
   max_num_seqs allows; NEVER: rejected; stops at a group preempted this step. */
pb_status pb_sched_swap_in_fcfs(pb_sched *s);

/* This step's prompts run as one padded [rows, longest] batch with no padding or
   token cap, as HF Transformers' generate() pads whatever batch it is given (the
   executor prices rows x the longest row; a prompt-only step: no decodes in it). */
void pb_sched_pad_prompts(pb_sched *s);

/* How pb_sched_admit_waiting fits prefills into the step. */
typedef struct {
    int64_t token_budget;   /* tokens of the step, decodes included; a prefill costs
                               its uncached tokens, g->len - pb_kv_cached_tokens()   */
    int32_t chunk;          /* 0: whole prefills -- a head over the budget waits, or
                               runs alone in a step with no tokens yet (vLLM);
                               > 0: chunked -- a single-sequence prefill takes
                               min(chunk, budget left) tokens this step, and prompts
                               over max_num_batched_tokens are admissible            */
    bool padded;            /* a padded prompt batch (v0.2.2+): rows x longest <=
                               token_budget and padding <= max_paddings instead of
                               the token sum (chunk 0)                               */
    int32_t max_paddings;   /* padded: the padding cap                              */
    int32_t max_groups;     /* running groups at most; 0: no limit                  */
} pb_admit_rule;
/* Admit from the waiting queue's head while the manager says OK (NEVER: rejected) and
   the rule's budgets and max_num_seqs allow; stops at the first head that does not
   fit or was preempted this step.  Chunked, a first chunk covers a shared prefix
   (prefix_id) whole, alone when it is over the budget.  *n_admitted (may be NULL):
   groups admitted. */
pb_status pb_sched_admit_waiting(pb_sched *s, const pb_admit_rule *r, int32_t *n_admitted);

/* The vLLM step (paper §4.5, docs/DESIGN.md §3) in the waiting order the policy's
   waiting_key gives: v0.1 mixed steps (decode, swap in, admit), v0.2 alternating ones
   (prompt-only steps, padded when max_paddings >= 0), V1's chunked ones (decode,
   continue the partial prefill, admit chunks, all in max_num_batched_tokens; admit
   only when nothing was preempted this step; never swap), or the one
   params->step_mode names. */
pb_status pb_sched_vllm_v01_step(pb_sched *s);
pb_status pb_sched_vllm_v02_step(pb_sched *s, int32_t max_paddings);
pb_status pb_sched_vllm_v1_step(pb_sched *s);
pb_status pb_sched_vllm_step(pb_sched *s);

#ifdef __cplusplus
}
#endif
#endif /* PB_POLICY_H */
