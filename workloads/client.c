/* client.c -- closed-loop conversations and a concurrency limit (see client.h).
 *
 * Rows are either open (sent at their arrival_s, walked in trace order by a cursor)
 * or follow-ups (sent think time after their predecessor's answer: a min-heap of
 * (ready time, row) filled by done()).  With a limit, a min-heap of the times the
 * free slots became free: a request is sent at max(its ready time, the earliest free
 * slot), which is a time the engine has passed or is at. */
#include "client.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

typedef struct {
    double t;
    int64_t row;
} ready_item;

struct pb_client {
    const pb_trace *t;
    pb_client_cfg cfg;
    pb_arrival_source src;
    int64_t *pred, *succ;   /* [n]: the conversation's previous / next row, -1 none  */
    double *think;          /* [n]: the wait before a follow-up row                   */
    int64_t *open;          /* rows sent at their arrival_s, in trace order           */
    int64_t n_open, next_open;
    ready_item *ready;      /* follow-ups whose predecessor is answered: a min-heap   */
    int64_t n_ready;
    double *slots;          /* free slots' times: a min-heap (limit only)             */
    int32_t n_slots;
    pb_request *sent;       /* [n]: what the engine got, by its id                     */
    int64_t *row_of;        /* [n]: the trace row of engine id                        */
    double *answered;       /* [n] by row: when its answer came (NAN: not yet)        */
    int64_t n_sent;
    int32_t outstanding, peak;
};

static const char *const THINK[] = {"fixed", "exponential"};

pb_status pb_think_kind_by_name(const char *s, pb_think_kind *out) {
    for (int i = 0; i < 2; i++)
        if (!strcmp(s, THINK[i])) {
            *out = (pb_think_kind)i;
            return PB_OK;
        }
    return PB_ERR_INVALID;
}

const char *pb_think_kind_name(pb_think_kind k) { return k >= 0 && k <= PB_THINK_EXPONENTIAL ? THINK[k] : "?"; }

bool pb_client_active(const pb_client_cfg *cfg) { return cfg->closed_loop || cfg->max_concurrency > 0; }

/* ---- heaps ---- */

static bool ready_less(const ready_item *a, const ready_item *b) {
    return a->t < b->t || (a->t == b->t && a->row < b->row);
}

static void ready_push(pb_client *c, double t, int64_t row) {
    int64_t i = c->n_ready++;
    ready_item x = {t, row};
    while (i > 0 && ready_less(&x, &c->ready[(i - 1) / 2])) {
        c->ready[i] = c->ready[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    c->ready[i] = x;
}

static void ready_pop(pb_client *c) {
    ready_item x = c->ready[--c->n_ready];
    int64_t i = 0, n = c->n_ready;
    for (;;) {
        int64_t k = 2 * i + 1;
        if (k >= n) break;
        if (k + 1 < n && ready_less(&c->ready[k + 1], &c->ready[k])) k++;
        if (!ready_less(&c->ready[k], &x)) break;
        c->ready[i] = c->ready[k];
        i = k;
    }
    if (n > 0) c->ready[i] = x;
}

static void slot_push(pb_client *c, double t) {
    int32_t i = c->n_slots++;
    while (i > 0 && t < c->slots[(i - 1) / 2]) {
        c->slots[i] = c->slots[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    c->slots[i] = t;
}

static void slot_pop(pb_client *c) {
    double x = c->slots[--c->n_slots];
    int32_t i = 0, n = c->n_slots;
    for (;;) {
        int32_t k = 2 * i + 1;
        if (k >= n) break;
        if (k + 1 < n && c->slots[k + 1] < c->slots[k]) k++;
        if (!(c->slots[k] < x)) break;
        c->slots[i] = c->slots[k];
        i = k;
    }
    if (n > 0) c->slots[i] = x;
}

/* ---- the arrival source ---- */

/* The next row to send and its ready time: the earlier of the open cursor's and the
   heap's (row order on a tie); -1 when none. */
static int64_t next_row(const pb_client *c, double *t, bool *from_heap) {
    int64_t r = -1;
    *t = INFINITY;
    *from_heap = false;
    if (c->next_open < c->n_open) {
        r = c->open[c->next_open];
        *t = c->t->reqs[r].arrival_s;
    }
    if (c->n_ready > 0 && (r < 0 || ready_less(&c->ready[0], &(ready_item){*t, r}))) {
        r = c->ready[0].row;
        *t = c->ready[0].t;
        *from_heap = true;
    }
    return r;
}

static double src_next(void *user) {
    const pb_client *c = user;
    if (c->cfg.max_concurrency > 0 && c->n_slots == 0) return INFINITY;   /* wait for a finish */
    double t;
    bool heap;
    if (next_row(c, &t, &heap) < 0) return INFINITY;
    return c->cfg.max_concurrency > 0 ? PB_MAX(t, c->slots[0]) : t;
}

static const pb_request *src_take(void *user) {
    pb_client *c = user;
    double at = src_next(c), t;
    bool heap;
    int64_t r = next_row(c, &t, &heap);
    PB_ASSERT(r >= 0 && isfinite(at));
    if (heap) ready_pop(c);
    else c->next_open++;
    if (c->cfg.max_concurrency > 0) slot_pop(c);
    pb_request *q = &c->sent[c->n_sent];
    *q = c->t->reqs[r];
    q->arrival_s = at;
    q->id = (int32_t)c->n_sent;
    c->row_of[c->n_sent++] = r;
    c->outstanding++;
    c->peak = PB_MAX(c->peak, c->outstanding);
    return q;
}

static void src_done(void *user, const pb_group *g, double t) {
    pb_client *c = user;
    PB_ASSERT(g->id >= 0 && g->id < c->n_sent && c->outstanding > 0);
    int64_t r = c->row_of[g->id];
    c->answered[r] = t;
    c->outstanding--;
    if (c->cfg.max_concurrency > 0) slot_push(c, t);
    if (c->cfg.closed_loop && c->succ[r] >= 0) ready_push(c, t + c->think[c->succ[r]], c->succ[r]);
}

/* ---- conversations ---- */

typedef struct {
    int32_t conv, turn;
    int64_t row;
} turn_key;

/* By conversation, then turn, then row. */
static int by_turn(const void *a, const void *b) {
    const turn_key *x = a, *y = b;
    if (x->conv != y->conv) return x->conv < y->conv ? -1 : 1;
    if (x->turn != y->turn) return x->turn < y->turn ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* pred / succ of every row (-1: none): consecutive turns of a conversation. */
static void link_turns(const pb_trace *t, int64_t *pred, int64_t *succ) {
    int64_t n = 0;
    turn_key *ix = pb_xmalloc((size_t)(t->n ? t->n : 1) * sizeof *ix);
    for (int64_t i = 0; i < t->n; i++) {
        pred[i] = succ[i] = -1;
        if (t->reqs[i].conversation_id >= 0) ix[n++] = (turn_key){t->reqs[i].conversation_id, t->reqs[i].turn, i};
    }
    qsort(ix, (size_t)n, sizeof *ix, by_turn);
    for (int64_t k = 1; k < n; k++)
        if (ix[k].conv == ix[k - 1].conv) {
            pred[ix[k].row] = ix[k - 1].row;
            succ[ix[k - 1].row] = ix[k].row;
        }
    free(ix);
}

void pb_trace_conversations(const pb_trace *t, int64_t *n_conv, int64_t *n_later) {
    int64_t *pred = pb_xmalloc((size_t)(t->n ? t->n : 1) * sizeof *pred);
    int64_t *succ = pb_xmalloc((size_t)(t->n ? t->n : 1) * sizeof *succ);
    link_turns(t, pred, succ);
    *n_conv = *n_later = 0;
    for (int64_t i = 0; i < t->n; i++) {
        *n_later += pred[i] >= 0;
        *n_conv += pred[i] < 0 && t->reqs[i].conversation_id >= 0;
    }
    free(pred);
    free(succ);
}

int64_t pb_trace_append_history(pb_trace *t) {
    int64_t *pred = pb_xmalloc((size_t)(t->n ? t->n : 1) * sizeof *pred);
    int64_t *succ = pb_xmalloc((size_t)(t->n ? t->n : 1) * sizeof *succ);
    link_turns(t, pred, succ);
    int64_t changed = 0;
    for (int64_t i = 0; i < t->n; i++) {
        if (pred[i] >= 0) continue;   /* a conversation's first row: walk it */
        int64_t h = 0;
        for (int64_t r = i; r >= 0; r = succ[r]) {
            pb_request *q = &t->reqs[r];
            int64_t p = PB_MIN(h + q->prompt_len, (int64_t)INT32_MAX - 1);
            if (h > 0) {
                q->prompt_len = (int32_t)p;
                if (q->prefix_id < 0) q->prefix_len = (int32_t)PB_MIN(h, p);   /* trace.h: in its transcript */
                changed++;
            }
            h = PB_MIN(p + q->output_len, (int64_t)INT32_MAX - 1);
        }
    }
    free(pred);
    free(succ);
    return changed;
}

/* ---- lifetime ---- */

pb_client *pb_client_create(const pb_trace *t, const pb_client_cfg *cfg, uint64_t seed) {
    if (!t || t->n < 0 || t->n > INT32_MAX || !(cfg->think_time_s >= 0) || !isfinite(cfg->think_time_s) ||
        cfg->max_concurrency < 0 || (cfg->think != PB_THINK_FIXED && cfg->think != PB_THINK_EXPONENTIAL)) {
        pb_log_error("client: bad settings (think_time_s %g >= 0, max_concurrency %d >= 0)", cfg->think_time_s,
                     cfg->max_concurrency);
        return NULL;
    }
    size_t n = (size_t)(t->n ? t->n : 1);
    pb_client *c = pb_xcalloc(1, sizeof *c);
    c->t = t;
    c->cfg = *cfg;
    c->pred = pb_xmalloc(n * sizeof *c->pred);
    c->succ = pb_xmalloc(n * sizeof *c->succ);
    c->think = pb_xmalloc(n * sizeof *c->think);
    c->open = pb_xmalloc(n * sizeof *c->open);
    c->ready = pb_xmalloc(n * sizeof *c->ready);
    c->sent = pb_xmalloc(n * sizeof *c->sent);
    c->row_of = pb_xmalloc(n * sizeof *c->row_of);
    c->answered = pb_xmalloc(n * sizeof *c->answered);
    c->slots = pb_xmalloc((size_t)PB_MAX(cfg->max_concurrency, 1) * sizeof *c->slots);
    if (cfg->closed_loop) {
        link_turns(t, c->pred, c->succ);
    } else {
        for (int64_t i = 0; i < t->n; i++) c->pred[i] = c->succ[i] = -1;
    }
    pb_rng rng;
    pb_rng_seed(&rng, seed, 4);
    for (int64_t i = 0; i < t->n; i++)
        c->think[i] = cfg->think == PB_THINK_EXPONENTIAL && cfg->think_time_s > 0 ? pb_rng_exp(&rng, 1.0 / cfg->think_time_s)
                                                                                 : cfg->think_time_s;
    for (int64_t i = 0; i < t->n; i++)
        if (c->pred[i] < 0) c->open[c->n_open++] = i;
    c->src = (pb_arrival_source){.next_s = src_next, .take = src_take, .done = src_done, .user = c};
    pb_client_source(c);
    return c;
}

void pb_client_destroy(pb_client *c) {
    if (!c) return;
    free(c->pred);
    free(c->succ);
    free(c->think);
    free(c->open);
    free(c->ready);
    free(c->sent);
    free(c->row_of);
    free(c->answered);
    free(c->slots);
    free(c);
}

const pb_arrival_source *pb_client_source(pb_client *c) {
    c->next_open = c->n_ready = c->n_sent = 0;
    c->outstanding = c->peak = 0;
    c->n_slots = 0;
    for (int32_t i = 0; i < c->cfg.max_concurrency; i++) slot_push(c, 0);
    for (int64_t i = 0; i < c->t->n; i++) c->answered[i] = NAN;
    return &c->src;
}

int64_t pb_client_sent(const pb_client *c) { return c->n_sent; }
int32_t pb_client_outstanding(const pb_client *c) { return c->outstanding; }
int32_t pb_client_peak_outstanding(const pb_client *c) { return c->peak; }
const pb_trace *pb_client_trace(const pb_client *c) { return c->t; }
int64_t pb_client_row_of(const pb_client *c, int64_t id) {
    PB_ASSERT(id >= 0 && id < c->n_sent);
    return c->row_of[id];
}

pb_status pb_client_check(const pb_client *c) {
    int32_t C = c->cfg.max_concurrency;
    if (c->outstanding < 0 || (C > 0 && (c->peak > C || c->n_slots != C - c->outstanding))) {
        pb_log_error("client: %d outstanding (peak %d, %d free slots) under a limit of %d", c->outstanding, c->peak,
                     c->n_slots, C);
        return PB_ERR_INVALID;
    }
    int64_t answered = 0;
    char *seen = pb_xcalloc((size_t)(c->t->n ? c->t->n : 1), 1);
    pb_status st = PB_OK;
    for (int64_t k = 0; k < c->n_sent && st == PB_OK; k++) {
        int64_t r = c->row_of[k], p = c->pred[r];
        if (seen[r]++) st = PB_ERR_INVALID;
        /* a follow-up: its predecessor answered, and it was sent at least think time later */
        if (p >= 0 && !(c->answered[p] + c->think[r] <= c->sent[k].arrival_s)) st = PB_ERR_INVALID;
        if (p < 0 && c->sent[k].arrival_s < c->t->reqs[r].arrival_s) st = PB_ERR_INVALID;
        if (st != PB_OK)
            pb_log_error("client: request %lld (row %lld) sent at %g: twice, before its arrival or its turn", (long long)k,
                         (long long)r, c->sent[k].arrival_s);
        answered += !isnan(c->answered[r]);
    }
    free(seen);
    if (st == PB_OK && answered != c->n_sent - c->outstanding) {
        pb_log_error("client: %lld answered of %lld sent with %d outstanding", (long long)answered,
                     (long long)c->n_sent, c->outstanding);
        st = PB_ERR_INVALID;
    }
    return st;
}
