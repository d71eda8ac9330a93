/* buddy.c -- binary buddy allocator over token slots (see buddy.h). */
#include "buddy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PB_BUDDY_MAX_ORDER 30

enum { ST_INTERIOR = 0, ST_FREE = 1, ST_USED = 2 };

struct pb_buddy {
    int64_t n;                     /* num_slots                                    */
    uint8_t *state;                /* [n] ST_* for chunk heads, ST_INTERIOR else   */
    int8_t *order;                 /* [n] order of the chunk at a head             */
    int32_t *next, *prev;          /* [n] free-list links (free heads only)        */
    int32_t *req;                  /* [n] requested size (used heads only)         */
    int32_t head[PB_BUDDY_MAX_ORDER + 1];   /* free-list heads, -1 = empty         */
    int64_t count[PB_BUDDY_MAX_ORDER + 1];  /* free chunks per order               */
    int64_t free_slots, requested, n_allocs;
};

static int order_for(int64_t size) {
    int k = 0;
    while (((int64_t)1 << k) < size) k++;
    return k;
}

int64_t pb_buddy_chunk_for(int64_t size) {
    PB_ASSERT(size >= 1 && size <= ((int64_t)1 << PB_BUDDY_MAX_ORDER));
    return (int64_t)1 << order_for(size);
}

static void list_push(pb_buddy *b, int32_t off, int k) {
    b->state[off] = ST_FREE;
    b->order[off] = (int8_t)k;
    b->prev[off] = -1;
    b->next[off] = b->head[k];
    if (b->head[k] >= 0) b->prev[b->head[k]] = off;
    b->head[k] = off;
    b->count[k]++;
}

static void list_remove(pb_buddy *b, int32_t off) {
    int k = b->order[off];
    if (b->prev[off] >= 0) b->next[b->prev[off]] = b->next[off];
    else b->head[k] = b->next[off];
    if (b->next[off] >= 0) b->prev[b->next[off]] = b->prev[off];
    b->next[off] = b->prev[off] = -1;
    b->state[off] = ST_INTERIOR;
    b->count[k]--;
}

pb_buddy *pb_buddy_create(int64_t num_slots) {
    if (num_slots < 1 || num_slots > ((int64_t)1 << PB_BUDDY_MAX_ORDER)) return NULL;
    pb_buddy *b = pb_xcalloc(1, sizeof *b);
    size_t n = (size_t)num_slots;
    b->n = num_slots;
    b->state = pb_xcalloc(n, 1);
    b->order = pb_xcalloc(n, 1);
    b->next = pb_xmalloc(n * sizeof(int32_t));
    b->prev = pb_xmalloc(n * sizeof(int32_t));
    b->req = pb_xcalloc(n, sizeof(int32_t));
    for (int k = 0; k <= PB_BUDDY_MAX_ORDER; k++) b->head[k] = -1;
    for (size_t i = 0; i < n; i++) b->next[i] = b->prev[i] = -1;
    /* Binary decomposition, largest part first: each arena starts at a multiple of
       its own size. */
    int64_t off = 0;
    for (int k = PB_BUDDY_MAX_ORDER; k >= 0; k--) {
        if (num_slots & ((int64_t)1 << k)) {
            list_push(b, (int32_t)off, k);
            off += (int64_t)1 << k;
        }
    }
    PB_ASSERT(off == num_slots);
    b->free_slots = num_slots;
    return b;
}

void pb_buddy_destroy(pb_buddy *b) {
    if (!b) return;
    free(b->state);
    free(b->order);
    free(b->next);
    free(b->prev);
    free(b->req);
    free(b);
}

int64_t pb_buddy_num_slots(const pb_buddy *b) { return b->n; }

int64_t pb_buddy_free_slots(const pb_buddy *b) { return b->free_slots; }

static int smallest_fit(const pb_buddy *b, int k) {
    for (int j = k; j <= PB_BUDDY_MAX_ORDER; j++)
        if (b->count[j] > 0) return j;
    return -1;
}

bool pb_buddy_can_alloc(const pb_buddy *b, int64_t size) {
    if (size < 1 || size > b->n) return false;
    return smallest_fit(b, order_for(size)) >= 0;
}

int64_t pb_buddy_alloc(pb_buddy *b, int64_t size) {
    if (size < 1 || size > b->n) return -1;
    int k = order_for(size);
    int j = smallest_fit(b, k);
    if (j < 0) return -1;
    int32_t off = b->head[j];
    list_remove(b, off);
    while (j > k) {                       /* split: keep the low half, free the high */
        j--;
        list_push(b, off + (int32_t)((int64_t)1 << j), j);
    }
    b->state[off] = ST_USED;
    b->order[off] = (int8_t)k;
    b->req[off] = (int32_t)size;
    b->free_slots -= (int64_t)1 << k;
    b->requested += size;
    b->n_allocs++;
    return off;
}

void pb_buddy_free(pb_buddy *b, int64_t offset) {
    PB_ASSERT(offset >= 0 && offset < b->n && b->state[offset] == ST_USED);
    int32_t off = (int32_t)offset;
    int k = b->order[off];
    b->free_slots += (int64_t)1 << k;
    b->requested -= b->req[off];
    b->n_allocs--;
    b->req[off] = 0;
    b->state[off] = ST_INTERIOR;
    for (;;) {                            /* coalesce while the buddy is a free chunk */
        int64_t sz = (int64_t)1 << k;
        int64_t bud = (int64_t)off ^ sz;
        if (k >= PB_BUDDY_MAX_ORDER || bud + sz > b->n) break;
        if (b->state[bud] != ST_FREE || b->order[bud] != k) break;
        list_remove(b, (int32_t)bud);
        if (bud < off) off = (int32_t)bud;
        k++;
    }
    list_push(b, off, k);
}

int64_t pb_buddy_count_fit(const pb_buddy *b, int64_t size) {
    if (size < 1 || size > b->n) return 0;
    int k = order_for(size);
    int64_t c = 0;
    for (int j = k; j <= PB_BUDDY_MAX_ORDER; j++) c += b->count[j] << (j - k);
    return c;
}

int64_t pb_buddy_capacity_for(int64_t num_slots, int64_t size) {
    if (size < 1 || num_slots < 1) return 0;
    /* sum over the arenas 2^j >= chunk of 2^j / chunk == floor(num_slots / chunk) */
    return num_slots >> order_for(size);
}

int64_t pb_buddy_chunk_size(const pb_buddy *b, int64_t offset) {
    PB_ASSERT(offset >= 0 && offset < b->n && b->state[offset] == ST_USED);
    return (int64_t)1 << b->order[offset];
}

int64_t pb_buddy_requested(const pb_buddy *b, int64_t offset) {
    PB_ASSERT(offset >= 0 && offset < b->n && b->state[offset] == ST_USED);
    return b->req[offset];
}

void pb_buddy_stats_get(const pb_buddy *b, pb_buddy_stats *s) {
    memset(s, 0, sizeof *s);
    s->num_slots = b->n;
    s->free_slots = b->free_slots;
    s->chunk_slots = b->n - b->free_slots;
    s->requested_slots = b->requested;
    s->rounding_slots = s->chunk_slots - b->requested;
    for (int j = 0; j <= PB_BUDDY_MAX_ORDER; j++) {
        s->n_free_chunks += b->count[j];
        if (b->count[j] > 0) s->largest_free = (int64_t)1 << j;
    }
    s->n_allocs = b->n_allocs;
}

static pb_status fail(char *err, size_t len, const char *fmt, ...) {
    if (err && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
    }
    return PB_ERR_INVALID;
}

pb_status pb_buddy_check(const pb_buddy *b, char *err, size_t err_len) {
    int64_t free_slots = 0, requested = 0, n_allocs = 0;
    int64_t count[PB_BUDDY_MAX_ORDER + 1] = {0};
    int64_t pos = 0;
    while (pos < b->n) {                 /* the chunks tile [0, n) */
        int st = b->state[pos], k = b->order[pos];
        if (st != ST_FREE && st != ST_USED)
            return fail(err, err_len, "buddy: slot %lld is not a chunk head", (long long)pos);
        if (k < 0 || k > PB_BUDDY_MAX_ORDER)
            return fail(err, err_len, "buddy: bad order %d at %lld", k, (long long)pos);
        int64_t sz = (int64_t)1 << k;
        if (pos % sz != 0 || pos + sz > b->n)
            return fail(err, err_len, "buddy: chunk %lld of %lld slots misaligned or out of range",
                        (long long)pos, (long long)sz);
        for (int64_t i = pos + 1; i < pos + sz; i++)
            if (b->state[i] != ST_INTERIOR)
                return fail(err, err_len, "buddy: slot %lld inside chunk %lld is a head",
                            (long long)i, (long long)pos);
        if (st == ST_FREE) {
            free_slots += sz;
            count[k]++;
            int64_t bud = pos ^ sz;
            if (k < PB_BUDDY_MAX_ORDER && bud + sz <= b->n && b->state[bud] == ST_FREE &&
                b->order[bud] == k)
                return fail(err, err_len, "buddy: free buddies %lld and %lld not coalesced",
                            (long long)pos, (long long)bud);
        } else {
            if (b->req[pos] < 1 || b->req[pos] > sz || (k > 0 && b->req[pos] <= sz / 2))
                return fail(err, err_len, "buddy: chunk %lld of %lld slots has request %d",
                            (long long)pos, (long long)sz, b->req[pos]);
            requested += b->req[pos];
            n_allocs++;
        }
        pos += sz;
    }
    for (int k = 0; k <= PB_BUDDY_MAX_ORDER; k++) {
        int64_t c = 0;
        int32_t prev = -1;
        for (int32_t o = b->head[k]; o >= 0; o = b->next[o]) {
            if (b->state[o] != ST_FREE || b->order[o] != k || b->prev[o] != prev)
                return fail(err, err_len, "buddy: free list %d corrupt at %d", k, o);
            prev = o;
            if (++c > count[k]) break;
        }
        if (c != count[k] || c != b->count[k])
            return fail(err, err_len, "buddy: order %d: %lld listed, %lld counted, %lld free chunks",
                        k, (long long)c, (long long)b->count[k], (long long)count[k]);
    }
    if (free_slots != b->free_slots || requested != b->requested || n_allocs != b->n_allocs)
        return fail(err, err_len, "buddy: counters free %lld/%lld requested %lld/%lld allocs %lld/%lld",
                    (long long)free_slots, (long long)b->free_slots, (long long)requested,
                    (long long)b->requested, (long long)n_allocs, (long long)b->n_allocs);
    return PB_OK;
}
