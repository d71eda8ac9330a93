/* kv_manager.h -- the KV-manager interface: who gets which KV-cache slots.
 *
 * A manager admits groups, gives decoding sequences a slot per step, forks and frees
 * sequences and swaps groups to the CPU; the engine sees an opaque vtable object.
 * Implementations: paged (block tables, reference counts, copy-on-write:
 * block_manager.h, paper §4, docs/DESIGN.md §4) and contiguous (a region per
 * sequence reserved by a rule over a buddy allocator: baselines/kv_contiguous.h).
 *
 * Units: slots are token slots of the GPU KV space (a paged block is block_size
 * slots).  pb_block_pair maps hold physical block numbers of the GPU pool (copies)
 * or of both pools (swap_out: GPU -> CPU, swap_in: CPU -> GPU); a contiguous manager
 * that copies or swaps may use slot offsets and says so in its header.
 *
 * Groups and sequences (sequence.h): a manager reads g->prompt_len, output_len, n,
 * beam_width, max_seqs, prefix_id, prefix_len, max_len, state, seqs[0..n_seqs) and
 * s->len; it maintains s->kv_len and s->n_cached and may keep private state in
 * s->kv, s->kv_aux and g->kv.  A group's sequences are all in one place.
 *
 * Call protocol (the engine guarantees it):
 *   can_allocate(g) == OK  ->  allocate(g)       g WAITING, every seq has no KV
 *   can_append(g)          ->  append(s) for each seq of g (RUNNING), once per step
 *   fork(parent, child)    child has no KV; parent RUNNING (after the step)
 *   free(s)                s has KV (GPU or CPU); afterwards it has none
 *   can_swap_out(g)        ->  swap_out(g)       g RUNNING
 *   can_swap_in(g) == OK   ->  swap_in(g)        g SWAPPED
 * A manager that cannot swap leaves swap_out / swap_in / can_swap_* NULL; the
 * helpers below then answer false / NEVER / PB_ERR_UNSUPPORTED and the scheduler
 * falls back to recompute. */
#ifndef PB_KV_MANAGER_H
#define PB_KV_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "executor.h"
#include "pb.h"
#include "sequence.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Admission answer (vLLM v0.2.3+ AllocStatus) */
typedef enum {
    PB_ALLOC_OK = 0,   /* fits now (keeping the watermark free)                     */
    PB_ALLOC_LATER,    /* does not fit now; may fit when others finish             */
    PB_ALLOC_NEVER     /* can never fit, even in an empty cache: reject the request */
} pb_alloc_status;

const char *pb_alloc_status_str(pb_alloc_status s);

/* A growable list of block pairs (copy-on-write copies, swap maps).  The engine
 * owns the vectors and clears them every step; managers push. */
typedef struct {
    pb_block_pair *v;
    int32_t n, cap;
} pb_pair_vec;

static inline void pb_pair_vec_push(pb_pair_vec *pv, int32_t src, int32_t dst) {
    if (pv->n == pv->cap) {
        pv->cap = pv->cap ? 2 * pv->cap : 64;
        pv->v = (pb_block_pair *)pb_xrealloc(pv->v, (size_t)pv->cap * sizeof *pv->v);
    }
    pv->v[pv->n].src = src;
    pv->v[pv->n].dst = dst;
    pv->n++;
}
static inline void pb_pair_vec_clear(pb_pair_vec *pv) { pv->n = 0; }
void pb_pair_vec_free(pb_pair_vec *pv);

/* Memory breakdown of the GPU KV space, every slot in exactly one class (docs/DESIGN.md §7):
 *   token_slots + reserved_slots + internal_frag_slots + free_slots == total_slots */
typedef struct {
    int64_t total_slots;         /* KV capacity in token slots                         */
    int64_t token_slots;         /* hold a token's KV now                              */
    int64_t reserved_slots;      /* allocated, empty, will be written by its request   */
    int64_t internal_frag_slots; /* allocated, will never be written                   */
    int64_t free_slots;          /* not allocated: external fragmentation and others  */
    /* sharing (paged; contiguous managers set logical == physical) */
    int64_t logical_blocks;      /* blocks GPU-resident sequences would need without
                                    sharing (sum of block-table lengths)              */
    int64_t physical_blocks;     /* GPU blocks in use                                  */
    /* pools */
    int64_t gpu_blocks_total, gpu_blocks_free;   /* contiguous: slots                  */
    int64_t gpu_blocks_cached;   /* of the free: holding cached KV (prefix caching)   */
    int64_t cpu_blocks_total, cpu_blocks_used;   /* swap space                         */
} pb_kv_usage;

typedef struct pb_kv_manager pb_kv_manager;
typedef struct {
    const char *name;    /* "paged", "contiguous", ... */
    /* Admission of WAITING group g: its sequences need g->len tokens each (prompt, or
       prompt + generated after recompute).  Counts shared blocks once.  NEVER when
       even an empty cache (minus the watermark) cannot hold it. */
    pb_alloc_status (*can_allocate)(pb_kv_manager *m, const pb_group *g);
    /* Give every sequence of g KV for its len tokens; sets s->kv_len = s->len and
       s->n_cached.  Pushes copy-on-write pairs (e.g. a shared prefix's last partial
       block) onto copies.  PB_ERR_NO_SPACE if it does not fit (nothing changed). */
    pb_status (*allocate)(pb_kv_manager *m, pb_group *g, pb_pair_vec *copies);
    /* Can every sequence of RUNNING group g get one more slot this step? */
    bool (*can_append)(pb_kv_manager *m, const pb_group *g);
    /* One more slot for s (kv_len++): allocate a block when the last is full, copy on
       write when the last block is shared (push (src, dst)).  PB_ERR_NO_SPACE if
       out of space (s unchanged). */
    pb_status (*append)(pb_kv_manager *m, pb_seq *s, pb_pair_vec *copies);
    /* child shares all of parent's KV (reference counts; contiguous managers copy or
       reserve).  child->kv_len = parent->kv_len.  May return PB_ERR_NO_SPACE for
       managers that cannot share. */
    pb_status (*fork)(pb_kv_manager *m, const pb_seq *parent, pb_seq *child);
    /* (optional) s, with KV in parent's place, drops it and shares all of parent's:
       the pools end as after free(s) then fork(parent, s), the same blocks released
       in the same order, what the two share untouched.  NULL: the engine forks and
       frees instead (forks first, as vLLM does). */
    pb_status (*refork)(pb_kv_manager *m, const pb_seq *parent, pb_seq *s);
    /* Release s's KV wherever it is (GPU or CPU).  kv_len = 0. */
    void (*free)(pb_kv_manager *m, pb_seq *s);
    /* Swap (NULL = unsupported).  swap_out moves all of g's KV to the CPU, each shared
       block once, pushing (gpu, cpu) pairs; swap_in the reverse, pushing (cpu, gpu).
       The CPU pool never holds more blocks than the GPU pool has (paper §4.5). */
    bool (*can_swap_out)(pb_kv_manager *m, const pb_group *g);
    pb_status (*swap_out)(pb_kv_manager *m, pb_group *g, pb_pair_vec *map);
    /* OK: fits now with one spare block per sequence for its next append, above the
       watermark.  LATER: not now.  NEVER: not even into an empty GPU. */
    pb_alloc_status (*can_swap_in)(pb_kv_manager *m, const pb_group *g);
    pb_status (*swap_in)(pb_kv_manager *m, pb_group *g, pb_pair_vec *map);
    /* out->block_table / n_blocks (paged) or out->kv_offset (contiguous) of
       GPU-resident s, valid until the next call that changes s.  A pure query, made
       only for executors that read KV layouts (PB_EXEC_KV_LAYOUT). */
    void (*batch_info)(pb_kv_manager *m, const pb_seq *s, pb_batch_seq *out);
    /* (optional) Range copies queued since the last call (a contiguous manager's
       forks), in the order they must run; the engine passes them to the executor
       in the next batch.  *out stays valid until the next call.  Returns the count. */
    int32_t (*take_slot_copies)(pb_kv_manager *m, const pb_slot_copy **out);
    /* (optional) Tokens of each sequence of WAITING g whose KV allocate(g) would find
       computed (prefix caching: whole cached blocks, at most g->len - 1).  A pure
       query; NULL: 0.  A prefill costs the step's token budget g->len minus these. */
    int32_t (*cached_tokens)(pb_kv_manager *m, const pb_group *g);
    /* (optional) s's first n tokens hold computed KV: called after every executed step
       for each sequence of the batch, n its context_len (a caching manager publishes
       the blocks that became full).  NULL: nothing to do. */
    void (*computed)(pb_kv_manager *m, pb_seq *s, int32_t n);
    /* (optional) Block moves queued since the last call by a manager with a CPU tier
       (block_manager.h): appends (gpu, cpu) spills to swap_out and (cpu, gpu) reloads
       to swap_in; the engine calls it once per step, after the scheduler, and runs
       them with the step.  NULL: none. */
    void (*take_tier_moves)(pb_kv_manager *m, pb_pair_vec *swap_out, pb_pair_vec *swap_in);
    /* Memory breakdown now (O(live sequences) at most). */
    void (*usage)(pb_kv_manager *m, pb_kv_usage *out);
    /* Full invariant check (may be O(everything)); PB_OK or PB_ERR_INVALID with the
       reason logged through pb_log_error. */
    pb_status (*check)(pb_kv_manager *m);
    void (*destroy)(pb_kv_manager *m);
    /* (optional) Replayed steps for the engine's fast path (replay.h); NULL: none. */
    const struct pb_kv_replay_i *replay;
} pb_kv_manager_i;

struct pb_kv_manager {
    const pb_kv_manager_i *iface;
    void *impl;
    int32_t block_size;  /* tokens per block (paged); 0 for contiguous managers        */
    int32_t swap_unit_tokens; /* token slots moved per pair of a swap map (paged:
                                 block_size; contiguous: 1); swap bytes = pairs *
                                 swap_unit_tokens * kv bytes per token             */
};

/* Thin wrappers (NULL-safe for the optional swap ops). */
static inline pb_alloc_status pb_kv_can_allocate(pb_kv_manager *m, const pb_group *g) {
    return m->iface->can_allocate(m, g);
}
static inline pb_status pb_kv_allocate(pb_kv_manager *m, pb_group *g, pb_pair_vec *c) {
    return m->iface->allocate(m, g, c);
}
static inline bool pb_kv_can_append(pb_kv_manager *m, const pb_group *g) {
    return m->iface->can_append(m, g);
}
static inline pb_status pb_kv_append(pb_kv_manager *m, pb_seq *s, pb_pair_vec *c) {
    return m->iface->append(m, s, c);
}
static inline pb_status pb_kv_fork(pb_kv_manager *m, const pb_seq *p, pb_seq *c) {
    return m->iface->fork(m, p, c);
}
static inline void pb_kv_free(pb_kv_manager *m, pb_seq *s) { m->iface->free(m, s); }
static inline pb_status pb_kv_refork(pb_kv_manager *m, const pb_seq *p, pb_seq *s) {
    return m->iface->refork ? m->iface->refork(m, p, s) : PB_ERR_UNSUPPORTED;
}
static inline bool pb_kv_can_swap_out(pb_kv_manager *m, const pb_group *g) {
    return m->iface->can_swap_out ? m->iface->can_swap_out(m, g) : false;
}
static inline pb_status pb_kv_swap_out(pb_kv_manager *m, pb_group *g, pb_pair_vec *map) {
    return m->iface->swap_out ? m->iface->swap_out(m, g, map) : PB_ERR_UNSUPPORTED;
}
static inline pb_alloc_status pb_kv_can_swap_in(pb_kv_manager *m, const pb_group *g) {
    return m->iface->can_swap_in ? m->iface->can_swap_in(m, g) : PB_ALLOC_NEVER;
}
static inline pb_status pb_kv_swap_in(pb_kv_manager *m, pb_group *g, pb_pair_vec *map) {
    return m->iface->swap_in ? m->iface->swap_in(m, g, map) : PB_ERR_UNSUPPORTED;
}
static inline void pb_kv_batch_info(pb_kv_manager *m, const pb_seq *s, pb_batch_seq *o) {
    m->iface->batch_info(m, s, o);
}
static inline int32_t pb_kv_take_slot_copies(pb_kv_manager *m, const pb_slot_copy **out) {
    *out = NULL;
    return m->iface->take_slot_copies ? m->iface->take_slot_copies(m, out) : 0;
}
static inline int32_t pb_kv_cached_tokens(pb_kv_manager *m, const pb_group *g) {
    return m->iface->cached_tokens ? m->iface->cached_tokens(m, g) : 0;
}
static inline void pb_kv_computed(pb_kv_manager *m, pb_seq *s, int32_t n) {
    if (m->iface->computed) m->iface->computed(m, s, n);
}
static inline void pb_kv_take_tier_moves(pb_kv_manager *m, pb_pair_vec *out, pb_pair_vec *in) {
    if (m->iface->take_tier_moves) m->iface->take_tier_moves(m, out, in);
}
static inline void pb_kv_usage_get(pb_kv_manager *m, pb_kv_usage *u) { m->iface->usage(m, u); }
static inline pb_status pb_kv_check(pb_kv_manager *m) { return m->iface->check(m); }
static inline void pb_kv_destroy(pb_kv_manager *m) { if (m) m->iface->destroy(m); }

#ifdef __cplusplus
}
#endif
#endif /* PB_KV_MANAGER_H */
