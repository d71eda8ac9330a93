/* test_online.c -- the engine serving arrivals against the wall clock (online.h) on
 * the fixed-latency executor: every submission's events (one token per sequence per
 * TOKENS, exactly output_len of them, one terminal event, beams' outputs at DONE), the
 * token ids equal to an offline replay's of the same requests (the synthetic tokens
 * follow the request id and the seed), the wall clock paced by the step latencies and
 * the speedup, aborts that free the KV at once (waiting, running, and after the
 * terminal event), the waiting limit, stop with and without drain, every KV block
 * returned at the end. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_rig.h"
#include "online.h"
#include "pbtest.h"

#define NREQ 24
#define MAXTOK 64

typedef struct {
    pthread_mutex_t mu;
    int32_t n_tokens[NREQ][4];
    int32_t tokens[NREQ][4][MAXTOK];
    int terminal[NREQ];            /* pb_online_what + 1 of the terminal event, 0: none */
    int n_terminal_events[NREQ];
    int after_terminal;            /* events after a terminal one (must stay 0) */
    double first_now[NREQ];
} seen;

static void on_event(void *user, const pb_online_event *ev) {
    seen *s = user;
    int64_t i = (int64_t)(intptr_t)ev->tag - 1;
    PB_ASSERT(i >= 0 && i < NREQ);
    pthread_mutex_lock(&s->mu);
    if (s->terminal[i]) s->after_terminal++;
    for (int32_t q = 0; q < ev->n_seqs && q < 4; q++)
        for (int32_t k = 0; k < ev->n_new && s->n_tokens[i][q] < MAXTOK; k++)
            s->tokens[i][q][s->n_tokens[i][q]++] = ev->tokens[q * ev->n_new + k];
    if (ev->what == PB_ONLINE_TOKENS && s->first_now[i] == 0) s->first_now[i] = ev->now_s;
    if (ev->what != PB_ONLINE_TOKENS) {
        s->terminal[i] = (int)ev->what + 1;
        s->n_terminal_events[i]++;
    }
    pthread_mutex_unlock(&s->mu);
}

/* The engine under test: vllm over 16-token blocks (gpu_blocks on the GPU, 64 on the
   CPU), the fixed executor at step_s a step, tokens stored, seed 7 (engine_rig.h). */
static pb_engine_params online_ep(void) {
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.store_tokens = true;
    ep.seed = 7;
    return ep;
}

static void sys_init_ep(pb_test_sys *s, int32_t gpu_blocks, double step_s, const pb_engine_params *ep) {
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.block_size = 16;
    pp.n_gpu_blocks = gpu_blocks;
    pp.n_cpu_blocks = 64;
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    xp.step_s = step_s;
    PB_ASSERT(pb_test_sys_init(s, &pp, "vllm", &xp, ep, false) == PB_OK);
}

static void sys_init(pb_test_sys *s, int32_t gpu_blocks, double step_s) {
    pb_engine_params ep = online_ep();
    sys_init_ep(s, gpu_blocks, step_s, &ep);
}

static pb_request req(int32_t p, int32_t o, int32_t n, int32_t beam) {
    pb_request r = pb_request_make(0, p, o);
    r.n = (int16_t)n;
    r.beam_width = (int16_t)beam;
    return r;
}

/* Offline: the same requests, ids 0.., through an ordinary replay; outputs by on_finish. */
typedef struct {
    int32_t n[NREQ][4];
    int32_t tok[NREQ][4][MAXTOK];
} offline_out;

static void off_finish(void *user, const pb_group *g) {
    offline_out *o = user;
    for (int32_t q = 0; q < g->n_seqs && q < 4; q++) {
        o->n[g->id][q] = g->n_generated;
        memcpy(o->tok[g->id][q], g->seqs[q]->tokens + g->prompt_len, (size_t)g->n_generated * sizeof(int32_t));
    }
}

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void wait_terminal(seen *s, int n) {
    for (int spins = 0; spins < 20000; spins++) {
        pthread_mutex_lock(&s->mu);
        int k = 0;
        for (int i = 0; i < n; i++) k += s->terminal[i] != 0;
        pthread_mutex_unlock(&s->mu);
        if (k == n) return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

PB_TEST(events_and_tokens_equal_offline) {
    pb_request rs[NREQ];
    for (int i = 0; i < NREQ; i++) {
        int mode = i % 4;   /* plain, parallel 3, beam 2, plain long */
        rs[i] = mode == 1 ? req(5 + i, 6, 3, 1) : mode == 2 ? req(7 + i, 5, 2, 2) : req(9 + i, mode == 3 ? 20 : 4, 1, 1);
    }
    /* offline: every arrival at 0 */
    offline_out *off = calloc(1, sizeof *off);
    {
        pb_test_sys s;
        pb_engine_params ep = online_ep();
        ep.on_finish = off_finish;
        ep.on_finish_user = off;
        sys_init_ep(&s, 256, 1e-3, &ep);
        pb_trace t = {rs, NREQ};
        for (int i = 0; i < NREQ; i++) rs[i].id = i;
        PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
        pb_test_sys_free(&s);
    }
    pb_test_sys s;
    sys_init(&s, 256, 1e-3);
    seen *sn = calloc(1, sizeof *sn);
    pthread_mutex_init(&sn->mu, NULL);
    pb_online_params op = {.speedup = 10, .on_event = on_event, .user = sn};
    pb_online *o;
    PB_REQUIRE(pb_online_start(s.e, s.kv, s.m, &op, &o) == PB_OK);
    for (int i = 0; i < NREQ; i++) {
        int64_t id;
        PB_REQUIRE(pb_online_submit(o, &rs[i], (void *)(intptr_t)(i + 1), &id) == PB_OK);
        PB_CHECK(id == i);
    }
    PB_CHECK(pb_online_stop(o, true) == PB_OK);   /* drain: every request done, KV all back */
    for (int i = 0; i < NREQ; i++) {
        PB_CHECK(sn->terminal[i] == PB_ONLINE_DONE + 1 && sn->n_terminal_events[i] == 1);
        int nq = rs[i].beam_width > 1 ? rs[i].beam_width : rs[i].n;
        for (int q = 0; q < nq; q++) {
            PB_CHECK(sn->n_tokens[i][q] == rs[i].output_len);
            PB_CHECK(memcmp(sn->tokens[i][q], off->tok[i][q], (size_t)rs[i].output_len * sizeof(int32_t)) == 0);
        }
    }
    PB_CHECK(sn->after_terminal == 0);
    pb_online_stats st;
    pb_online_stats_get(o, &st);
    PB_CHECK(st.n_submitted == NREQ && st.n_finished == NREQ && st.n_aborted == 0);
    int64_t gen = 0;
    for (int i = 0; i < NREQ; i++) gen += (int64_t)rs[i].output_len * (rs[i].beam_width > 1 ? rs[i].beam_width : rs[i].n);
    PB_CHECK(st.generation_tokens == gen);
    pb_online_destroy(o);
    pb_test_sys_free(&s);
    pthread_mutex_destroy(&sn->mu);
    free(sn);
    free(off);
}

/* 40 decode steps of 10 ms engine time at speedup 4: about 0.1 s of wall time, never
   less (each step's latency is slept); the arrival after an idle pause jumps the clock. */
PB_TEST(paced_by_the_wall_clock) {
    pb_test_sys s;
    sys_init(&s, 64, 10e-3);
    seen *sn = calloc(1, sizeof *sn);
    pthread_mutex_init(&sn->mu, NULL);
    pb_online_params op = {.speedup = 4, .on_event = on_event, .user = sn};
    pb_online *o;
    PB_REQUIRE(pb_online_start(s.e, s.kv, s.m, &op, &o) == PB_OK);
    pb_request r = req(8, 40, 1, 1);
    int64_t id;
    double t0 = wall();
    PB_REQUIRE(pb_online_submit(o, &r, (void *)(intptr_t)1, &id) == PB_OK);
    wait_terminal(sn, 1);
    double dt = wall() - t0;
    pb_online_stats st;
    pb_online_stats_get(o, &st);
    double engine = st.engine_s;   /* the request's run in engine time */
    PB_CHECK(engine >= 40 * 10e-3);
    PB_CHECK(dt >= engine / 4 - 2e-3);   /* slept, scaled by the speedup */
    PB_CHECK(dt < engine / 4 + 0.5);
    /* idle 50 ms wall = 0.2 s engine: the next arrival's clock is at least there */
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    pb_request r2 = req(8, 2, 1, 1);
    PB_REQUIRE(pb_online_submit(o, &r2, (void *)(intptr_t)2, &id) == PB_OK);
    wait_terminal(sn, 2);
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
    PB_REQUIRE(n == 2);
    PB_CHECK(rm[1].arrival_s >= engine + 0.15);
    PB_CHECK(rm[1].finish_s > rm[1].arrival_s && rm[0].finished && rm[1].finished);
    PB_CHECK(pb_online_stop(o, true) == PB_OK);
    pb_online_destroy(o);
    pb_test_sys_free(&s);
    pthread_mutex_destroy(&sn->mu);
    free(sn);
}

/* Aborts: a running request (after its first token) and a waiting one (the KV holds
   one request at a time) free their blocks before the next step; an abort after the
   terminal event changes nothing; stop without drain aborts the rest. */
PB_TEST(aborts_free_kv_at_once) {
    pb_test_sys s;
    sys_init(&s, 8, 5e-3);   /* 8 blocks of 16: one 100-token request at a time */
    seen *sn = calloc(1, sizeof *sn);
    pthread_mutex_init(&sn->mu, NULL);
    pb_online_params op = {.speedup = 1, .on_event = on_event, .user = sn};
    pb_online *o;
    PB_REQUIRE(pb_online_start(s.e, s.kv, s.m, &op, &o) == PB_OK);
    pb_request big = req(100, 20, 1, 1);
    int64_t id0, id1, id2;
    PB_REQUIRE(pb_online_submit(o, &big, (void *)(intptr_t)1, &id0) == PB_OK);
    PB_REQUIRE(pb_online_submit(o, &big, (void *)(intptr_t)2, &id1) == PB_OK);
    for (int spins = 0; spins < 5000 && sn->n_tokens[0][0] == 0; spins++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    pb_online_stats st;
    pb_online_stats_get(o, &st);
    PB_CHECK(st.load.n_running == 1 && st.load.n_waiting == 1 && st.kv_usage > 0.5);
    pb_online_abort(o, id1);   /* waiting */
    pb_online_abort(o, id0);   /* running */
    wait_terminal(sn, 2);
    PB_CHECK(sn->terminal[0] == PB_ONLINE_ABORTED + 1 && sn->terminal[1] == PB_ONLINE_ABORTED + 1);
    PB_CHECK(sn->n_tokens[0][0] < 20 && sn->n_tokens[1][0] == 0);
    pb_kv_usage u;
    pb_online_stats_get(o, &st);
    PB_CHECK(st.n_aborted == 2 && st.load.n_running == 0 && st.load.n_waiting == 0 && st.kv_usage == 0);
    /* one finishes; aborting it afterwards changes nothing */
    pb_request small = req(10, 3, 1, 1);
    PB_REQUIRE(pb_online_submit(o, &small, (void *)(intptr_t)3, &id2) == PB_OK);
    wait_terminal(sn, 3);
    pb_online_abort(o, id2);
    pb_online_abort(o, 12345);   /* unknown: ignored */
    PB_REQUIRE(pb_online_submit(o, &big, (void *)(intptr_t)4, &id2) == PB_OK);
    PB_CHECK(pb_online_stop(o, false) == PB_OK);   /* aborts request 3, every block back */
    PB_CHECK(sn->terminal[2] == PB_ONLINE_DONE + 1 && sn->n_terminal_events[2] == 1);
    PB_CHECK(sn->terminal[3] == PB_ONLINE_ABORTED + 1);
    PB_CHECK(sn->after_terminal == 0);
    pb_kv_usage_get(s.kv, &u);
    PB_CHECK(u.physical_blocks == 0 && u.gpu_blocks_free == u.gpu_blocks_total);
    /* the metrics count the aborted requests apart from the rejected ones */
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK_EQ_INT(su.n_aborted, 3);
    PB_CHECK_EQ_INT(su.n_rejected, 0);
    PB_CHECK_EQ_INT(su.n_finished, 1);
    PB_CHECK(pb_metrics_check(s.m) == PB_OK);
    PB_CHECK(pb_online_submit(o, &small, (void *)(intptr_t)5, &id2) == PB_ERR_INVALID);   /* stopped */
    pb_online_destroy(o);
    pb_test_sys_free(&s);
    pthread_mutex_destroy(&sn->mu);
    free(sn);
}

/* The waiting limit: while a long step sleeps, submissions queue; the third is refused. */
PB_TEST(waiting_limit_refuses) {
    pb_test_sys s;
    sys_init(&s, 64, 2.0);   /* 2 s steps at speedup 1: the loop sleeps */
    seen *sn = calloc(1, sizeof *sn);
    pthread_mutex_init(&sn->mu, NULL);
    pb_online_params op = {.speedup = 1, .max_waiting = 2, .on_event = on_event, .user = sn};
    pb_online *o;
    PB_REQUIRE(pb_online_start(s.e, s.kv, s.m, &op, &o) == PB_OK);
    pb_request r = req(10, 3, 1, 1);
    int64_t id;
    PB_REQUIRE(pb_online_submit(o, &r, (void *)(intptr_t)1, &id) == PB_OK);
    pb_online_stats st = {0};
    for (int spins = 0; spins < 5000 && st.n_steps == 0; spins++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        pb_online_stats_get(o, &st);
    }
    PB_REQUIRE(st.n_steps >= 1);
    PB_CHECK(pb_online_submit(o, &r, (void *)(intptr_t)2, &id) == PB_OK);
    PB_CHECK(pb_online_submit(o, &r, (void *)(intptr_t)3, &id) == PB_OK);
    PB_CHECK(pb_online_submit(o, &r, (void *)(intptr_t)4, &id) == PB_ERR_NO_SPACE);
    pb_request bad = req(0, 3, 1, 1);
    PB_CHECK(pb_online_submit(o, &bad, (void *)(intptr_t)4, &id) == PB_ERR_INVALID);
    double t0 = wall();
    PB_CHECK(pb_online_stop(o, false) == PB_OK);   /* wakes the sleeping loop at once */
    PB_CHECK(wall() - t0 < 1.0);
    pb_online_stats_get(o, &st);
    PB_CHECK(st.n_refused == 1 && st.n_aborted == 3);
    pb_online_destroy(o);
    pb_test_sys_free(&s);
    pthread_mutex_destroy(&sn->mu);
    free(sn);
}

PB_TEST_MAIN()
