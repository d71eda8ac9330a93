/* waitq.c -- the waiting queue (see waitq.h).
 *
 * The order (wait_key, arrival_s, id) is strict and total (ids are unique).  A group
 * removed from inside the deque leaves a tombstone (g NULL, keys kept): the ends are
 * trimmed at once, and the ring is repacked when tombstones outnumber live entries
 * (amortized O(1)). */
#include "waitq.h"

#include <stdlib.h>

static inline bool wait_before(const pb_wait_entry *a, const pb_wait_entry *b) {
    if (a->key != b->key) return a->key < b->key;
    if (a->arrival_s != b->arrival_s) return a->arrival_s < b->arrival_s;
    return a->id < b->id;
}

/* ---- heap ---- */

static void heap_set(pb_waitq *q, int32_t i, pb_wait_entry e) {
    q->heap[i] = e;
    e.g->heap_idx = i;
}

static void heap_up(pb_waitq *q, int32_t i) {
    pb_wait_entry e = q->heap[i];
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (!wait_before(&e, &q->heap[p])) break;
        heap_set(q, i, q->heap[p]);
        i = p;
    }
    heap_set(q, i, e);
}

static void heap_down(pb_waitq *q, int32_t i) {
    pb_wait_entry e = q->heap[i];
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= q->n_heap) break;
        if (c + 1 < q->n_heap && wait_before(&q->heap[c + 1], &q->heap[c])) c++;
        if (!wait_before(&q->heap[c], &e)) break;
        heap_set(q, i, q->heap[c]);
        i = c;
    }
    heap_set(q, i, e);
}

static void heap_push(pb_waitq *q, pb_wait_entry e) {
    if (q->n_heap == q->cap_heap) {
        q->cap_heap = q->cap_heap ? 2 * q->cap_heap : 256;
        q->heap = pb_xrealloc(q->heap, (size_t)q->cap_heap * sizeof *q->heap);
    }
    heap_set(q, q->n_heap++, e);
    heap_up(q, q->n_heap - 1);
}

static void heap_remove(pb_waitq *q, int32_t i) {
    pb_wait_entry last = q->heap[--q->n_heap];
    if (i < q->n_heap) {
        heap_set(q, i, last);
        heap_up(q, i);
        heap_down(q, last.g->heap_idx);
    }
}

/* ---- deque ---- */

/* ring slot of deque position k (0 = front) */
static inline int32_t dq_slot(const pb_waitq *q, int32_t k) { return (q->dq_head + k) & (q->cap_dq - 1); }

static void dq_set(pb_waitq *q, int32_t i, pb_wait_entry e) {
    q->dq[i] = e;
    e.g->heap_idx = -2 - i;
}

/* The live entries, in order, into a new ring of cap slots (a power of two). */
static void dq_repack(pb_waitq *q, int32_t cap) {
    pb_wait_entry *old = q->dq;
    int32_t head = q->dq_head, len = q->dq_len, mask = q->cap_dq - 1;
    q->dq = pb_xmalloc((size_t)cap * sizeof *q->dq);
    q->cap_dq = cap;
    q->dq_head = q->dq_len = 0;
    for (int32_t k = 0; k < len; k++) {
        pb_wait_entry e = old[(head + k) & mask];
        if (e.g) dq_set(q, q->dq_len++, e);
    }
    free(old);
}

static void dq_push(pb_waitq *q, pb_wait_entry e, bool front) {
    if (q->dq_len == q->cap_dq) dq_repack(q, q->cap_dq ? 2 * q->cap_dq : 256);
    if (front) q->dq_head = dq_slot(q, q->cap_dq - 1);   /* one slot before the front */
    q->dq_len++;
    q->dq_live++;
    dq_set(q, front ? q->dq_head : dq_slot(q, q->dq_len - 1), e);
}

static void dq_remove(pb_waitq *q, int32_t i) {
    q->dq[i].g = NULL;
    q->dq_live--;
    while (q->dq_len > 0 && !q->dq[q->dq_head].g) {
        q->dq_head = dq_slot(q, 1);
        q->dq_len--;
    }
    while (q->dq_len > 0 && !q->dq[dq_slot(q, q->dq_len - 1)].g) q->dq_len--;
    if (q->dq_len - q->dq_live > q->dq_live) dq_repack(q, q->cap_dq);
}

/* ---- the queue ---- */

void pb_waitq_free(pb_waitq *q) {
    free(q->heap);
    free(q->dq);
    q->heap = q->dq = NULL;
    q->n = q->n_heap = q->cap_heap = q->dq_head = q->dq_len = q->dq_live = q->cap_dq = 0;
}

void pb_waitq_push(pb_waitq *q, pb_group *g) {
    pb_wait_entry e = {.key = g->wait_key, .arrival_s = g->arrival_s, .id = g->id, .g = g};
    if (q->n++ == 0) q->n_heap = q->dq_head = q->dq_len = q->dq_live = 0;
    if (q->dq_len == 0 || !wait_before(&e, &q->dq[dq_slot(q, q->dq_len - 1)])) dq_push(q, e, false);
    else if (wait_before(&e, &q->dq[q->dq_head])) dq_push(q, e, true);
    else heap_push(q, e);
}

void pb_waitq_remove(pb_waitq *q, pb_group *g) {
    int32_t i = g->heap_idx;
    PB_ASSERT(q->n > 0 && i != -1);
    if (i >= 0) {
        PB_ASSERT(i < q->n_heap && q->heap[i].g == g);
        heap_remove(q, i);
    } else {
        PB_ASSERT(-2 - i < q->cap_dq && q->dq[-2 - i].g == g);
        dq_remove(q, -2 - i);
    }
    g->heap_idx = -1;
    q->n--;
}

pb_group *pb_waitq_peek(const pb_waitq *q) {
    if (q->n == 0) return NULL;
    if (q->dq_len == 0) return q->heap[0].g;
    const pb_wait_entry *f = &q->dq[q->dq_head];
    return q->n_heap > 0 && wait_before(&q->heap[0], f) ? q->heap[0].g : f->g;
}

/* ---- invariants ---- */

/* the entry of waiting group e->g at slot idx (heap_idx encoding) */
static bool entry_ok(const pb_wait_entry *e, int32_t idx) {
    const pb_group *g = e->g;
    return g->heap_idx == idx && g->state == PB_GROUP_WAITING && e->key == g->wait_key &&
           e->arrival_s == g->arrival_s && e->id == g->id;
}

pb_status pb_waitq_check(const pb_waitq *q) {
    if (q->n == 0) return PB_OK;   /* empty, whatever the fields hold */
    int32_t live = 0;
    for (int32_t k = 0; k < q->dq_len && k < q->cap_dq; k++) live += q->dq[dq_slot(q, k)].g != NULL;
    if (q->n_heap < 0 || q->n_heap > q->cap_heap || q->dq_len > q->cap_dq || (q->cap_dq & (q->cap_dq - 1)) ||
        live != q->dq_live || q->n_heap + live != q->n || q->dq_len - live > live) {
        pb_log_error("waitq: %d waiting = heap %d + deque %d live (%d counted) of %d slots, ring of %d", q->n,
                     q->n_heap, q->dq_live, live, q->dq_len, q->cap_dq);
        return PB_ERR_INVALID;
    }
    for (int32_t i = 0; i < q->n_heap; i++)
        if (!entry_ok(&q->heap[i], i) || (i > 0 && wait_before(&q->heap[i], &q->heap[(i - 1) / 2]))) {
            pb_log_error("waitq: heap broken at %d", i);
            return PB_ERR_INVALID;
        }
    for (int32_t k = 0; k < q->dq_len; k++) {   /* sorted, tombstones inside only */
        int32_t i = dq_slot(q, k);
        const pb_wait_entry *e = &q->dq[i];
        if ((e->g ? !entry_ok(e, -2 - i) : k == 0 || k == q->dq_len - 1) ||
            (k > 0 && !wait_before(&q->dq[dq_slot(q, k - 1)], e))) {
            pb_log_error("waitq: deque broken at %d of %d", k, q->dq_len);
            return PB_ERR_INVALID;
        }
    }
    return PB_OK;
}
