/* online.c -- the engine serving requests as they come (see online.h).
 *
 * Under the mutex: the inbox of submissions, the aborts asked for, the stats and the
 * stop flags.  The loop thread alone touches the engine: it takes the inbox and the
 * aborts between steps, steps while anything is queued, running or swapped, collects
 * the step's events through the engine's on_progress hook, sleeps until the wall
 * clock reaches the engine's, then delivers them. */
#include "online.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REQ_BLOCK 1024   /* requests are kept in blocks: the engine holds pointers to them */

typedef struct sub {
    pb_request r;
    void *tag;
    double wall_s;        /* submitted at */
    struct sub *next;
} sub;

typedef struct {
    pb_online_what what;
    int64_t id;
    int32_t n_seqs, n_new, prompt_len, n_generated;
    int64_t tok_off;
    double arrival_s, first_token_s;
} event;

struct pb_online {
    pb_online_params p;
    pb_engine *e;
    pb_kv_manager *kv;
    pthread_t th;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    sub *in_head, *in_tail;
    int32_t n_inbox;
    int64_t *aborts;
    int32_t n_aborts, cap_aborts;
    bool stopping, drain, stopped;
    int64_t n_ids;        /* submissions accepted: ids 0 .. n_ids - 1 */
    pb_online_stats stats;
    pb_status loop_st;
    /* the loop thread's */
    pb_request **blocks;  /* the engine's requests, REQ_BLOCK each */
    int64_t n_blocks;
    void **tag_of;        /* by id; NULL once terminal */
    int64_t cap_tags, n_added;
    event *ev;
    int32_t n_ev, cap_ev;
    int32_t *tok;
    int64_t n_tok, cap_tok;
    double wall0;
};

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sleep until the wall clock reaches the engine's, or a stop without drain. */
static void pace(pb_online *o) {
    double target = o->wall0 + pb_engine_now(o->e) / o->p.speedup;
    struct timespec ts = {.tv_sec = (time_t)target, .tv_nsec = (long)((target - floor(target)) * 1e9)};
    pthread_mutex_lock(&o->mu);
    while (!(o->stopping && !o->drain) && wall_now() < target)
        if (pthread_cond_timedwait(&o->cv, &o->mu, &ts) == ETIMEDOUT) break;
    pthread_mutex_unlock(&o->mu);
}

/* ---- events (the loop thread) ---- */

static event *ev_push(pb_online *o, pb_online_what what, const pb_group *g, int32_t n_seqs, int32_t n_new) {
    if (o->n_ev == o->cap_ev) {
        o->cap_ev = o->cap_ev ? 2 * o->cap_ev : 64;
        o->ev = pb_xrealloc(o->ev, (size_t)o->cap_ev * sizeof *o->ev);
    }
    int64_t need = o->n_tok + (int64_t)n_seqs * n_new;
    if (need > o->cap_tok) {
        o->cap_tok = PB_MAX(need, 2 * o->cap_tok);
        o->tok = pb_xrealloc(o->tok, (size_t)o->cap_tok * sizeof *o->tok);
    }
    event *v = &o->ev[o->n_ev++];
    *v = (event){.what = what, .id = g->id, .n_seqs = n_seqs, .n_new = n_new, .prompt_len = g->prompt_len,
                 .n_generated = g->n_generated, .tok_off = o->n_tok, .arrival_s = g->arrival_s,
                 .first_token_s = g->n_generated > 0 ? g->first_token_s : -1};
    o->n_tok = need;
    return v;
}

/* The engine's on_progress: g got its next token(s), or was rejected. */
static void on_progress(void *user, const pb_group *g) {
    pb_online *o = user;
    if (g->state == PB_GROUP_REJECTED) {
        ev_push(o, PB_ONLINE_REJECTED, g, 0, 0);
        return;
    }
    bool last = g->n_generated >= g->output_len;
    if (g->beam_width > 1) {   /* beams are reordered every step: only the final outputs */
        if (!last) return;
        event *v = ev_push(o, PB_ONLINE_DONE, g, g->n_seqs, g->n_generated);
        for (int32_t s = 0; s < g->n_seqs; s++)
            memcpy(&o->tok[v->tok_off + (int64_t)s * g->n_generated], g->seqs[s]->tokens + g->prompt_len,
                   (size_t)g->n_generated * sizeof(int32_t));
        return;
    }
    event *v = ev_push(o, PB_ONLINE_TOKENS, g, g->n_seqs, 1);
    for (int32_t s = 0; s < g->n_seqs; s++) o->tok[v->tok_off + s] = g->seqs[s]->tokens[g->len - 1];
    if (last) ev_push(o, PB_ONLINE_DONE, g, 0, 0);
}

/* Deliver the collected events at engine time now; terminal ones retire their ids. */
static void deliver(pb_online *o, double now) {
    int64_t fin = 0, rej = 0, ab = 0, gen = 0;
    for (int32_t i = 0; i < o->n_ev; i++) {
        const event *v = &o->ev[i];
        void *tag = o->tag_of[v->id];
        if (!tag) continue;   /* aborted earlier */
        pb_online_event out = {.tag = tag, .id = v->id, .what = v->what, .n_seqs = v->n_seqs, .n_new = v->n_new,
                               .tokens = o->tok + v->tok_off, .prompt_len = v->prompt_len,
                               .n_generated = v->n_generated, .arrival_s = v->arrival_s,
                               .first_token_s = v->first_token_s, .now_s = now};
        if (v->what == PB_ONLINE_TOKENS || (v->what == PB_ONLINE_DONE && v->n_new > 0))
            gen += (int64_t)v->n_seqs * v->n_new;
        if (v->what != PB_ONLINE_TOKENS) {
            o->tag_of[v->id] = NULL;
            fin += v->what == PB_ONLINE_DONE;
            rej += v->what == PB_ONLINE_REJECTED;
            ab += v->what == PB_ONLINE_ABORTED;
        }
        if (o->p.on_event) o->p.on_event(o->p.user, &out);
    }
    o->n_ev = 0;
    o->n_tok = 0;
    pthread_mutex_lock(&o->mu);
    o->stats.n_finished += fin;
    o->stats.n_rejected += rej;
    o->stats.n_aborted += ab;
    o->stats.generation_tokens += gen;
    pthread_mutex_unlock(&o->mu);
}

/* ---- arrivals and aborts (the loop thread, between steps) ---- */

static bool engine_idle(const pb_online *o) {
    pb_engine_load l;
    pb_engine_load_get(o->e, &l);
    return l.n_waiting + l.n_running + l.n_swapped == 0;
}

static pb_request *keep(pb_online *o, const pb_request *r) {
    int64_t b = o->n_added / REQ_BLOCK, k = o->n_added % REQ_BLOCK;
    if (b == o->n_blocks) {
        o->blocks = pb_xrealloc(o->blocks, (size_t)(o->n_blocks + 1) * sizeof *o->blocks);
        o->blocks[o->n_blocks++] = pb_xcalloc(REQ_BLOCK, sizeof(pb_request));
    }
    pb_request *q = &o->blocks[b][k];
    *q = *r;
    return q;
}

static pb_status admit(pb_online *o, sub *s) {
    double t = (s->wall_s - o->wall0) * o->p.speedup, now = pb_engine_now(o->e);
    s->r.arrival_s = t <= now || engine_idle(o) ? PB_MAX(t, 0.0) : now;
    pb_request *q = keep(o, &s->r);
    pb_status st = pb_engine_add_request(o->e, q);
    if (st != PB_OK) return st;
    if (o->n_added == o->cap_tags) {
        o->cap_tags = o->cap_tags ? 2 * o->cap_tags : 1024;
        o->tag_of = pb_xrealloc(o->tag_of, (size_t)o->cap_tags * sizeof *o->tag_of);
    }
    o->tag_of[o->n_added++] = s->tag;
    return PB_OK;
}

static void abort_one(pb_online *o, int64_t id) {
    if (id < 0 || id >= o->n_added || !o->tag_of[id]) return;
    const pb_group *g = pb_engine_group(o->e, id);
    if (g && (g->state == PB_GROUP_WAITING || g->state == PB_GROUP_RUNNING || g->state == PB_GROUP_SWAPPED))
        pb_engine_abort_request(o->e, id);
    ev_push(o, PB_ONLINE_ABORTED, &(pb_group){.id = (int32_t)id, .prompt_len = 0}, 0, 0);
}

/* ---- the loop ---- */

static void publish(pb_online *o) {
    pb_kv_usage u;
    pb_kv_usage_get(o->kv, &u);
    double now = pb_engine_now(o->e), wall = (wall_now() - o->wall0) * o->p.speedup;
    pthread_mutex_lock(&o->mu);
    pb_engine_load_get(o->e, &o->stats.load);
    o->stats.kv_usage = u.gpu_blocks_total > 0 ? (double)(u.gpu_blocks_total - u.gpu_blocks_free) / (double)u.gpu_blocks_total : 0;
    o->stats.n_steps = pb_engine_steps(o->e);
    o->stats.engine_s = now;
    o->stats.lag_s = PB_MAX(0.0, wall - now);
    pthread_mutex_unlock(&o->mu);
}

static void *loop(void *arg) {
    pb_online *o = arg;
    pb_status st = PB_OK;
    pthread_mutex_lock(&o->mu);
    for (;;) {
        sub *in = o->in_head;
        o->in_head = o->in_tail = NULL;
        o->n_inbox = 0;
        int32_t na = o->n_aborts;
        int64_t *ab = NULL;
        if (na) {
            ab = pb_xcalloc((size_t)na, sizeof *ab);
            memcpy(ab, o->aborts, (size_t)na * sizeof *ab);
            o->n_aborts = 0;
        }
        bool abort_all = o->stopping && !o->drain;
        pthread_mutex_unlock(&o->mu);

        bool took = in != NULL || na > 0;
        while (in) {
            sub *next = in->next;
            if (st == PB_OK) st = admit(o, in);
            free(in);
            in = next;
        }
        for (int32_t i = 0; i < na; i++) abort_one(o, ab[i]);
        free(ab);
        if (abort_all || st != PB_OK)
            for (int64_t id = 0; id < o->n_added; id++) abort_one(o, id);
        if (o->n_ev) deliver(o, pb_engine_now(o->e));
        if (took) publish(o);

        bool busy = st == PB_OK && !engine_idle(o);
        if (busy) {
            bool done = false;
            st = pb_engine_step(o->e, &done);
            publish(o);
            pace(o);
            deliver(o, pb_engine_now(o->e));
            pthread_mutex_lock(&o->mu);
            if (st != PB_OK && o->loop_st == PB_OK) o->loop_st = st;
            continue;
        }
        pthread_mutex_lock(&o->mu);
        if (st != PB_OK && o->loop_st == PB_OK) o->loop_st = st;
        if (o->in_head || o->n_aborts) continue;
        if (o->stopping) break;
        pthread_cond_wait(&o->cv, &o->mu);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

pb_status pb_online_start(pb_engine *e, pb_kv_manager *kv, pb_metrics *m, const pb_online_params *p,
                          pb_online **out) {
    *out = NULL;
    if (!e || !kv || !m || !p || !(p->speedup > 0) || !isfinite(p->speedup) || p->max_waiting < 0) {
        pb_log_error("online: invalid parameters (speedup must be > 0, max_waiting >= 0)");
        return PB_ERR_INVALID;
    }
    pb_online *o = pb_xcalloc(1, sizeof *o);
    o->p = *p;
    o->e = e;
    o->kv = kv;
    pb_engine_set_progress(e, on_progress, o);
    pb_trace empty = {0};
    pb_status st = pb_engine_begin(e, &empty, m);
    if (st != PB_OK) {
        pb_engine_set_progress(e, NULL, NULL);
        free(o);
        return st;
    }
    pthread_mutex_init(&o->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&o->cv, &ca);
    pthread_condattr_destroy(&ca);
    o->wall0 = wall_now();
    publish(o);
    if (pthread_create(&o->th, NULL, loop, o) != 0) {
        pb_log_error("online: cannot start the loop thread");
        pb_engine_end(e);
        pb_online_destroy(o);
        return PB_ERR_IO;
    }
    o->started = true;
    *out = o;
    return PB_OK;
}

pb_status pb_online_submit(pb_online *o, const pb_request *r, void *tag, int64_t *id) {
    if (r->prompt_len < 1 || r->output_len < 1 || r->n < 1 || r->beam_width < 1 ||
        (r->beam_width > 1 && r->n != r->beam_width) || r->n > PB_TRACE_MAX_SEQS || r->beam_width > PB_TRACE_MAX_SEQS)
        return PB_ERR_INVALID;
    pthread_mutex_lock(&o->mu);
    pb_status st = PB_OK;
    if (o->stopping) {
        st = PB_ERR_INVALID;
    } else if (o->p.max_waiting > 0 && o->n_inbox + o->stats.load.n_waiting >= o->p.max_waiting) {
        st = PB_ERR_NO_SPACE;
        o->stats.n_refused++;
    } else {
        sub *s = pb_xcalloc(1, sizeof *s);
        s->r = *r;
        s->tag = tag;
        s->wall_s = wall_now();
        if (o->in_tail) o->in_tail->next = s;
        else o->in_head = s;
        o->in_tail = s;
        o->n_inbox++;
        *id = o->n_ids++;
        o->stats.n_submitted++;
        o->stats.prompt_tokens += r->prompt_len;
        pthread_cond_signal(&o->cv);
    }
    pthread_mutex_unlock(&o->mu);
    return st;
}

void pb_online_abort(pb_online *o, int64_t id) {
    pthread_mutex_lock(&o->mu);
    if (id >= 0 && id < o->n_ids) {
        if (o->n_aborts == o->cap_aborts) {
            o->cap_aborts = o->cap_aborts ? 2 * o->cap_aborts : 16;
            o->aborts = pb_xrealloc(o->aborts, (size_t)o->cap_aborts * sizeof *o->aborts);
        }
        o->aborts[o->n_aborts++] = id;
        pthread_cond_signal(&o->cv);
    }
    pthread_mutex_unlock(&o->mu);
}

void pb_online_stats_get(pb_online *o, pb_online_stats *out) {
    pthread_mutex_lock(&o->mu);
    *out = o->stats;
    pthread_mutex_unlock(&o->mu);
}

pb_status pb_online_stop(pb_online *o, bool drain) {
    pthread_mutex_lock(&o->mu);
    bool was = o->stopped;
    if (!o->stopping) o->drain = drain;
    o->stopping = true;
    if (!drain) o->drain = false;
    pthread_cond_signal(&o->cv);
    pthread_mutex_unlock(&o->mu);
    if (was) return o->loop_st;
    if (o->started) pthread_join(o->th, NULL);
    o->started = false;
    o->stopped = true;
    pb_status st = o->loop_st;
    if (st == PB_OK) st = pb_engine_check(o->e);
    pb_status st2 = pb_engine_end(o->e);
    if (st == PB_OK) st = st2;
    pb_kv_usage u;
    pb_kv_usage_get(o->kv, &u);
    if (u.physical_blocks != 0 || u.cpu_blocks_used != 0) {
        pb_log_error("online: %lld GPU and %lld CPU KV blocks still held after the run", (long long)u.physical_blocks,
                     (long long)u.cpu_blocks_used);
        if (st == PB_OK) st = PB_ERR_INVALID;
    }
    if (st == PB_OK) st = pb_kv_check(o->kv);
    pb_engine_set_progress(o->e, NULL, NULL);
    o->loop_st = st;
    return st;
}

void pb_online_destroy(pb_online *o) {
    if (!o) return;
    if (o->started) pb_online_stop(o, false);
    while (o->in_head) {
        sub *n = o->in_head->next;
        free(o->in_head);
        o->in_head = n;
    }
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
    for (int64_t b = 0; b < o->n_blocks; b++) free(o->blocks[b]);
    free(o->blocks);
    free(o->tag_of);
    free(o->aborts);
    free(o->ev);
    free(o->tok);
    free(o);
}
