/* kv_contiguous.c -- contiguous per-sequence KV reservations over a buddy allocator
 * (see kv_contiguous.h). */
#include "kv_contiguous.h"

#include <stdlib.h>
#include <string.h>

#include "buddy.h"

/* Per-group state (g->kv): the group's regions, all of the same reservation. */
typedef struct cgroup cgroup;
struct cgroup {
    pb_group *g;
    int32_t resv;            /* reservation per region (slots)                      */
    int32_t need;            /* slots a sequence will write                         */
    int32_t target;          /* regions the group keeps: max(max_seqs, n_seqs)      */
    int32_t n_held;          /* regions assigned to sequences                       */
    int64_t *spare;          /* offsets of unassigned regions                       */
    int32_t n_spare, cap_spare;
    /* forked sequences still waiting for a region (a beam step forks before it
       frees): pending[i] will receive a copy of the region at pending_src[i] */
    pb_seq **pending;
    int64_t *pending_src;
    int32_t n_pending, cap_pending;
    cgroup *prev, *next;     /* all live groups (for check)                         */
};

typedef struct {
    pb_kv_contiguous_params p;
    pb_buddy *buddy;
    cgroup *groups;
    int64_t n_groups;
    /* aggregates over all regions (assigned and spare) */
    int64_t sum_resv, sum_need, sum_tokens, n_regions;
    int64_t copied_slots, n_forks, n_extra;
    pb_slot_copy *qcopy;     /* fork copies queued for the executor (take_slot_copies) */
    int32_t n_qcopy, cap_qcopy, n_given;
} contig;

static const pb_kv_manager_i contig_iface;

const char *pb_resv_rule_str(pb_resv_rule r) {
    switch (r) {
    case PB_RESV_ORACLE: return "oracle";
    case PB_RESV_POW2: return "pow2";
    case PB_RESV_MAX: return "max";
    }
    return "?";
}

bool pb_resv_rule_parse(const char *s, pb_resv_rule *out) {
    if (!s) return false;
    for (int r = PB_RESV_ORACLE; r <= PB_RESV_MAX; r++) {
        if (strcmp(s, pb_resv_rule_str((pb_resv_rule)r)) == 0) {
            *out = (pb_resv_rule)r;
            return true;
        }
    }
    return false;
}

int32_t pb_kv_contiguous_need(int32_t prompt_len, int32_t output_len) {
    int32_t need = prompt_len + output_len - 1;
    return need < prompt_len ? prompt_len : need;
}

int32_t pb_kv_contiguous_reservation(pb_resv_rule rule, int32_t prompt_len, int32_t output_len,
                                     int32_t max_len) {
    int32_t need = pb_kv_contiguous_need(prompt_len, output_len);
    int64_t r = need;
    switch (rule) {
    case PB_RESV_ORACLE:
        r = need;
        break;
    case PB_RESV_POW2: {
        int64_t out = 1;
        while (out < output_len) out *= 2;
        r = (int64_t)prompt_len + out;
        if (r > max_len) r = max_len;
        break;
    }
    case PB_RESV_MAX:
        r = max_len;
        break;
    }
    if (r < need) r = need;
    return (int32_t)r;
}

int64_t pb_kv_contiguous_capacity(int64_t num_slots, int32_t resv, int32_t max_seqs) {
    if (resv < 1 || max_seqs < 1) return 0;
    return pb_buddy_capacity_for(num_slots, resv) / max_seqs;
}

bool pb_kv_is_contiguous(const pb_kv_manager *m) { return m && m->iface == &contig_iface; }

/* ---- helpers ---- */

static int32_t group_resv(const contig *c, const pb_group *g) {
    int32_t r = pb_kv_contiguous_reservation(c->p.rule, g->prompt_len, g->output_len, c->p.max_len);
    return r < g->len ? g->len : r;      /* (re-admission with generated tokens) */
}

static int32_t group_regions(const pb_group *g) {
    int32_t k = g->max_seqs > g->n_seqs ? g->max_seqs : g->n_seqs;
    return k < 1 ? 1 : k;
}

static void region_add(contig *c, const cgroup *cg) {
    c->sum_resv += cg->resv;
    c->sum_need += cg->need;
    c->n_regions++;
}

static void region_release(contig *c, const cgroup *cg, int64_t off) {
    pb_buddy_free(c->buddy, off);
    c->sum_resv -= cg->resv;
    c->sum_need -= cg->need;
    c->n_regions--;
}

static void spare_push(cgroup *cg, int64_t off) {
    if (cg->n_spare == cg->cap_spare) {
        cg->cap_spare = cg->cap_spare ? 2 * cg->cap_spare : 4;
        cg->spare = pb_xrealloc(cg->spare, (size_t)cg->cap_spare * sizeof *cg->spare);
    }
    cg->spare[cg->n_spare++] = off;
}

static void group_unlink_free(contig *c, cgroup *cg) {
    for (int32_t i = 0; i < cg->n_spare; i++) region_release(c, cg, cg->spare[i]);
    if (cg->prev) cg->prev->next = cg->next;
    else c->groups = cg->next;
    if (cg->next) cg->next->prev = cg->prev;
    c->n_groups--;
    cg->g->kv = NULL;
    free(cg->spare);
    free(cg->pending);
    free(cg->pending_src);
    free(cg);
}

/* Queue a copy of n slots of KV from region src to region dst for the executor. */
static void copy_queue(contig *c, int64_t src, int64_t dst, int32_t n) {
    if (n <= 0) return;
    if (c->n_given) { c->n_qcopy = 0; c->n_given = 0; }   /* taken last time: start over */
    if (c->n_qcopy == c->cap_qcopy) {
        c->cap_qcopy = c->cap_qcopy ? 2 * c->cap_qcopy : 16;
        c->qcopy = pb_xrealloc(c->qcopy, (size_t)c->cap_qcopy * sizeof *c->qcopy);
    }
    c->qcopy[c->n_qcopy].src = src;
    c->qcopy[c->n_qcopy].dst = dst;
    c->qcopy[c->n_qcopy].n = n;
    c->n_qcopy++;
    c->copied_slots += n;
}

/* Give region off (holding a copy source's KV or nothing) to pending child i. */
static void pending_assign(contig *c, cgroup *cg, int32_t i, int64_t off) {
    pb_seq *s = cg->pending[i];
    if (cg->pending_src[i] != off) copy_queue(c, cg->pending_src[i], off, s->kv_len); /* else: taken over */
    s->kv_aux = off;
    c->sum_tokens += s->kv_len;
    cg->n_held++;
    cg->n_pending--;
    cg->pending[i] = cg->pending[cg->n_pending];
    cg->pending_src[i] = cg->pending_src[cg->n_pending];
}

/* A pending child must have a region before it runs: take one from the allocator. */
static pb_status pending_resolve(contig *c, cgroup *cg, const pb_seq *s) {
    for (int32_t i = 0; i < cg->n_pending; i++) {
        if (cg->pending[i] != s) continue;
        int64_t off = pb_buddy_alloc(c->buddy, cg->resv);
        if (off < 0) return PB_ERR_NO_SPACE;
        region_add(c, cg);
        c->n_extra++;
        pending_assign(c, cg, i, off);
        return PB_OK;
    }
    return PB_ERR_INVALID;
}

/* ---- vtable ---- */

static pb_alloc_status c_can_allocate(pb_kv_manager *m, const pb_group *g) {
    contig *c = m->impl;
    int32_t resv = group_resv(c, g);
    int32_t k = group_regions(g);
    if (resv > c->p.num_slots || pb_buddy_capacity_for(c->p.num_slots, resv) < k)
        return PB_ALLOC_NEVER;
    return pb_buddy_count_fit(c->buddy, resv) >= k ? PB_ALLOC_OK : PB_ALLOC_LATER;
}

static pb_status c_allocate(pb_kv_manager *m, pb_group *g, pb_pair_vec *copies) {
    contig *c = m->impl;
    PB_ASSERT(g->kv == NULL);
    int32_t resv = group_resv(c, g);
    int32_t k = group_regions(g);
    if (resv > c->p.num_slots || pb_buddy_count_fit(c->buddy, resv) < k) return PB_ERR_NO_SPACE;
    cgroup *cg = pb_xcalloc(1, sizeof *cg);
    cg->g = g;
    cg->resv = resv;
    cg->need = pb_kv_contiguous_need(g->prompt_len, g->output_len);
    if (cg->need > resv) cg->need = resv;
    cg->target = k;
    cg->next = c->groups;
    if (c->groups) c->groups->prev = cg;
    c->groups = cg;
    c->n_groups++;
    g->kv = cg;
    for (int32_t i = 0; i < k; i++) {
        int64_t off = pb_buddy_alloc(c->buddy, resv);
        PB_ASSERT(off >= 0);                          /* count_fit said k fit */
        region_add(c, cg);
        if (i < g->n_seqs) {
            pb_seq *s = g->seqs[i];
            PB_ASSERT(s->kv == NULL);
            s->kv = cg;
            s->kv_aux = off;
            s->kv_len = s->len;
            s->n_cached = 0;                          /* no prefix sharing */
            c->sum_tokens += s->kv_len;
            cg->n_held++;
        } else {
            spare_push(cg, off);
        }
    }
    return PB_OK;
}

static bool c_can_append(pb_kv_manager *m, const pb_group *g) {
    const cgroup *cg = g->kv;
    if (!cg) return false;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        const pb_seq *s = g->seqs[i];
        if (s->kv != cg || s->kv_len + 1 > cg->resv) return false;
    }
    return cg->n_pending == 0 ||
           pb_buddy_count_fit(((const contig *)m->impl)->buddy, cg->resv) >= cg->n_pending;
}

static pb_status c_append(pb_kv_manager *m, pb_seq *s, pb_pair_vec *copies) {
    contig *c = m->impl;
    cgroup *cg = s->kv;
    PB_ASSERT(cg != NULL);
    if (s->kv_len + 1 > cg->resv) return PB_ERR_NO_SPACE;
    if (s->kv_aux < 0) {
        pb_status st = pending_resolve(c, cg, s);
        if (st != PB_OK) return st;
    }
    s->kv_len++;
    c->sum_tokens++;
    return PB_OK;
}

static pb_status c_fork(pb_kv_manager *m, const pb_seq *parent, pb_seq *child) {
    contig *c = m->impl;
    cgroup *cg = parent->kv;
    PB_ASSERT(cg != NULL && child->kv == NULL);
    PB_ASSERT(parent->kv_aux >= 0);
    child->kv = cg;
    child->kv_len = parent->kv_len;
    child->n_cached = 0;
    c->n_forks++;
    if (cg->n_spare > 0) {                  /* a region reserved at admission */
        child->kv_aux = cg->spare[--cg->n_spare];
        cg->n_held++;
        c->sum_tokens += child->kv_len;
        copy_queue(c, parent->kv_aux, child->kv_aux, child->kv_len);   /* the parent's KV */
        return PB_OK;
    }
    /* No spare: a beam step forking before it frees.  The child waits for the next
       region a sequence of the group frees (its parent's, without a copy, when
       the parent is the one freed). */
    if (cg->n_pending == cg->cap_pending) {
        cg->cap_pending = cg->cap_pending ? 2 * cg->cap_pending : 4;
        cg->pending = pb_xrealloc(cg->pending, (size_t)cg->cap_pending * sizeof *cg->pending);
        cg->pending_src = pb_xrealloc(cg->pending_src,
                                      (size_t)cg->cap_pending * sizeof *cg->pending_src);
    }
    child->kv_aux = -1;
    cg->pending[cg->n_pending] = child;
    cg->pending_src[cg->n_pending] = parent->kv_aux;
    cg->n_pending++;
    return PB_OK;
}

static void c_free(pb_kv_manager *m, pb_seq *s) {
    contig *c = m->impl;
    cgroup *cg = s->kv;
    if (!cg) {
        s->kv_len = 0;
        return;
    }
    int64_t off = s->kv_aux;
    if (off < 0) {                          /* a pending child freed before it got one */
        for (int32_t i = 0; i < cg->n_pending; i++) {
            if (cg->pending[i] != s) continue;
            cg->n_pending--;
            cg->pending[i] = cg->pending[cg->n_pending];
            cg->pending_src[i] = cg->pending_src[cg->n_pending];
            break;
        }
    } else {
        c->sum_tokens -= s->kv_len;
        cg->n_held--;
    }
    s->kv = NULL;
    s->kv_aux = -1;
    s->kv_len = 0;
    s->n_cached = 0;
    if (off >= 0) {
        int32_t pick = -1;                  /* prefer the child of the freed region */
        for (int32_t i = 0; i < cg->n_pending && pick < 0; i++)
            if (cg->pending_src[i] == off) pick = i;
        if (pick < 0 && cg->n_pending > 0) pick = 0;
        if (pick >= 0) pending_assign(c, cg, pick, off);
        else if (cg->n_held + cg->n_spare >= cg->target) region_release(c, cg, off);
        else spare_push(cg, off);
    }
    if (cg->n_held == 0 && cg->n_pending == 0) group_unlink_free(c, cg);
}

static int32_t c_take_slot_copies(pb_kv_manager *m, const pb_slot_copy **out) {
    contig *c = m->impl;
    if (c->n_given) { c->n_qcopy = 0; c->n_given = 0; }
    *out = c->qcopy;
    c->n_given = c->n_qcopy;
    return c->n_qcopy;
}

static void c_batch_info(pb_kv_manager *m, const pb_seq *s, pb_batch_seq *out) {
    (void)m;
    PB_ASSERT(s->kv != NULL && s->kv_aux >= 0);   /* append gave a pending child its region */
    out->block_table = NULL;
    out->n_blocks = 0;
    out->kv_offset = s->kv_aux;
}

static void c_usage(pb_kv_manager *m, pb_kv_usage *u) {
    const contig *c = m->impl;
    int64_t buddy_free = pb_buddy_free_slots(c->buddy);
    memset(u, 0, sizeof *u);
    u->total_slots = c->p.num_slots;
    u->token_slots = c->sum_tokens;
    u->reserved_slots = c->sum_need - c->sum_tokens;
    u->internal_frag_slots = c->sum_resv - c->sum_need;
    u->free_slots = c->p.num_slots - c->sum_resv;          /* unallocated + round-up */
    u->logical_blocks = u->physical_blocks = c->p.num_slots - buddy_free;
    u->gpu_blocks_total = c->p.num_slots;
    u->gpu_blocks_free = buddy_free;
    u->cpu_blocks_total = u->cpu_blocks_used = 0;
}

static pb_status c_check(pb_kv_manager *m) {
    const contig *c = m->impl;
    char err[256];
    if (pb_buddy_check(c->buddy, err, sizeof err) != PB_OK) {
        pb_log_error("kv_contiguous: %s", err);
        return PB_ERR_INVALID;
    }
    int64_t resv = 0, need = 0, tokens = 0, regions = 0, groups = 0;
    for (const cgroup *cg = c->groups; cg; cg = cg->next) {
        const pb_group *g = cg->g;
        groups++;
        if (g->kv != cg || cg->n_held < 1 || cg->need > cg->resv || cg->n_pending < 0) {
            pb_log_error("kv_contiguous: group %d: bad state (held %d)", g->id, cg->n_held);
            return PB_ERR_INVALID;
        }
        int32_t held = 0, pend = 0;
        for (int32_t i = 0; i < g->n_seqs; i++) {
            const pb_seq *s = g->seqs[i];
            if (s->kv == NULL) continue;
            if (s->kv != cg) {
                pb_log_error("kv_contiguous: seq %d points to another group's state", s->id);
                return PB_ERR_INVALID;
            }
            if (s->kv_aux < 0) {                 /* forked, waiting for a region */
                int32_t j = 0;
                while (j < cg->n_pending && cg->pending[j] != s) j++;
                if (j == cg->n_pending) {
                    pb_log_error("kv_contiguous: seq %d has no region and is not pending", s->id);
                    return PB_ERR_INVALID;
                }
                pend++;
                continue;
            }
            if (s->kv_len < 0 || s->kv_len > cg->need ||
                pb_buddy_chunk_size(c->buddy, s->kv_aux) != pb_buddy_chunk_for(cg->resv) ||
                pb_buddy_requested(c->buddy, s->kv_aux) != cg->resv) {
                pb_log_error("kv_contiguous: seq %d: kv_len %d, need %d, region %lld", s->id,
                             s->kv_len, cg->need, (long long)s->kv_aux);
                return PB_ERR_INVALID;
            }
            tokens += s->kv_len;
            held++;
        }
        if (held != cg->n_held || pend != cg->n_pending) {
            pb_log_error("kv_contiguous: group %d holds %d regions, %d found", g->id, cg->n_held,
                         held);
            return PB_ERR_INVALID;
        }
        for (int32_t i = 0; i < cg->n_spare; i++) {
            if (pb_buddy_requested(c->buddy, cg->spare[i]) != cg->resv) {
                pb_log_error("kv_contiguous: group %d: bad spare region", g->id);
                return PB_ERR_INVALID;
            }
        }
        int64_t nr = cg->n_held + cg->n_spare;
        regions += nr;
        resv += nr * cg->resv;
        need += nr * cg->need;
    }
    pb_buddy_stats bs;
    pb_buddy_stats_get(c->buddy, &bs);
    if (groups != c->n_groups || regions != c->n_regions || regions != bs.n_allocs ||
        resv != c->sum_resv || resv != bs.requested_slots || need != c->sum_need ||
        tokens != c->sum_tokens) {
        pb_log_error("kv_contiguous: counters: groups %lld/%lld regions %lld/%lld/%lld "
                     "resv %lld/%lld need %lld/%lld tokens %lld/%lld",
                     (long long)groups, (long long)c->n_groups, (long long)regions,
                     (long long)c->n_regions, (long long)bs.n_allocs, (long long)resv,
                     (long long)c->sum_resv, (long long)need, (long long)c->sum_need,
                     (long long)tokens, (long long)c->sum_tokens);
        return PB_ERR_INVALID;
    }
    return PB_OK;
}

static void c_destroy(pb_kv_manager *m) {
    if (!m) return;
    contig *c = m->impl;
    while (c->groups) {               /* a run that stopped early: drop what is left */
        cgroup *cg = c->groups;
        c->groups = cg->next;           /* (its pb_group may be gone: not touched) */
        free(cg->spare);
        free(cg->pending);
        free(cg->pending_src);
        free(cg);
    }
    pb_buddy_destroy(c->buddy);
    free(c->qcopy);
    free(c);
    free(m);
}

static const pb_kv_manager_i contig_iface = {
    .name = "contiguous",
    .can_allocate = c_can_allocate,
    .allocate = c_allocate,
    .can_append = c_can_append,
    .append = c_append,
    .fork = c_fork,
    .take_slot_copies = c_take_slot_copies,
    .free = c_free,
    .can_swap_out = NULL,
    .swap_out = NULL,
    .can_swap_in = NULL,
    .swap_in = NULL,
    .batch_info = c_batch_info,
    .usage = c_usage,
    .check = c_check,
    .destroy = c_destroy,
};

pb_status pb_kv_contiguous_create(const pb_kv_contiguous_params *p, pb_kv_manager **out) {
    *out = NULL;
    if (!p || p->max_len < 1 || p->rule < PB_RESV_ORACLE || p->rule > PB_RESV_MAX)
        return PB_ERR_INVALID;
    pb_buddy *b = pb_buddy_create(p->num_slots);
    if (!b) return PB_ERR_INVALID;
    contig *c = pb_xcalloc(1, sizeof *c);
    c->p = *p;
    c->buddy = b;
    pb_kv_manager *m = pb_xcalloc(1, sizeof *m);
    m->iface = &contig_iface;
    m->impl = c;
    m->block_size = 0;
    m->swap_unit_tokens = 1;
    *out = m;
    return PB_OK;
}

void pb_kv_contiguous_stats_get(const pb_kv_manager *m, pb_kv_contiguous_stats *out) {
    PB_ASSERT(pb_kv_is_contiguous(m));
    const contig *c = m->impl;
    memset(out, 0, sizeof *out);
    out->num_slots = c->p.num_slots;
    out->rule = c->p.rule;
    out->max_len = c->p.max_len;
    out->n_groups = c->n_groups;
    out->n_regions = c->n_regions;
    out->copied_slots = c->copied_slots;
    out->n_forks = c->n_forks;
    out->n_extra_regions = c->n_extra;
}

