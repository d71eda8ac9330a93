/* test_engine.c -- the engine loop end to end on the fixed-latency executor: exact
 * timings of a single request, parallel sampling with copy-on-write, beam search
 * (executor scores and synthetic scores) with forks and frees checked every step,
 * shared prefixes, random stress under memory pressure in every preemption mode and
 * step structure with pb_engine_check() after every step, determinism; the fused
 * synthetic beam path equal to synth + select; pb_metrics_check() on every run and
 * on broken metrics; the summary's ITL from the gap runs equal, bit for bit, to that of the
 * expanded gaps; arrivals fed by the caller through pb_engine_add_request equal to the
 * trace replay, and a closed-loop client. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "beam.h"
#include "engine_rig.h"
#include "pbtest.h"
#include "rng.h"

typedef pb_test_sys sys;   /* engine_rig.h */

static void sys_init(sys *s, int32_t bs, int32_t gpu, int32_t cpu, const pb_engine_params *ep,
                     const pb_fixed_exec_params *xp, const char *policy) {
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.block_size = bs;
    pp.n_gpu_blocks = gpu;
    pp.n_cpu_blocks = cpu;
    PB_ASSERT(pb_test_sys_init(s, &pp, policy, xp, ep, true) == PB_OK);
}

static void sys_free(sys *s) {
    PB_CHECK(pb_metrics_check(s->m) == PB_OK);   /* every run's metrics are consistent */
    pb_test_sys_free(s);
}

static pb_request req(double t, int32_t p, int32_t o, int32_t n, int32_t beam) {
    pb_request r = pb_request_make(t, p, o);
    r.n = n;
    r.beam_width = beam;
    return r;
}

static void trace_fix_ids(pb_trace *t) {
    for (int64_t i = 0; i < t->n; i++) t->reqs[i].id = i;
}

PB_TEST(single_request_exact_timing) {
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.check_every_step = true;
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);   /* 1 ms/step, 0.1 ms/decode, 0.01 ms/prompt token */
    sys s;
    sys_init(&s, 16, 64, 0, &ep, &xp, "vllm");
    pb_request r[1] = {req(0.5, 10, 5, 1, 1)};
    pb_trace t = {r, 1};
    trace_fix_ids(&t);
    PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
    PB_REQUIRE(n == 1 && rm[0].finished);
    double prefill = 1e-3 + 10 * 1e-5, decode = 1e-3 + 1e-4;
    PB_CHECK_NEAR(rm[0].first_token_s, 0.5 + prefill, 1e-12);
    PB_CHECK_NEAR(rm[0].finish_s, 0.5 + prefill + 4 * decode, 1e-12);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK_EQ_INT(su.n_steps, 5);
    PB_CHECK_NEAR(su.norm_latency_mean, (prefill + 4 * decode) / 5, 1e-12);
    PB_CHECK_NEAR(su.avg_batched_requests, 1.0, 1e-12);
    PB_CHECK_EQ_INT(su.output_tokens, 5);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(s.kv)), 0);
    sys_free(&s);
}

PB_TEST(parallel_sampling_forks_and_copies) {
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.check_every_step = true;
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    sys s;
    sys_init(&s, 16, 256, 256, &ep, &xp, "vllm");
    pb_request r[2] = {req(0, 40, 30, 4, 1), req(0.001, 17, 20, 2, 1)};
    pb_trace t = {r, 2};
    trace_fix_ids(&t);
    PB_REQUIRE(pb_engine_begin(s.e, &t, s.m) == PB_OK);
    bool done = false;
    int64_t copies = 0;
    int32_t max_seqs = 0;
    int64_t steps = 0;
    while (!done) {
        PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
        if (pb_engine_steps(s.e) == steps) continue;   /* idle jump: no new batch */
        steps = pb_engine_steps(s.e);
        const pb_batch *b = pb_engine_last_batch(s.e);
        copies += b->n_copies;
        if (b->n_seqs > max_seqs) max_seqs = b->n_seqs;
    }
    PB_REQUIRE(pb_engine_end(s.e) == PB_OK);
    int64_t nr;
    PB_CHECK(pb_metrics_requests(s.m, &nr)[0].finished);
    /* 40-token prompt (last block 8/16 filled) shared by 4 samples: 3 CoWs;
       17-token prompt (1 token in its last block) shared by 2: 1 CoW */
    PB_CHECK_EQ_INT(copies, 3 + 1);
    PB_CHECK_EQ_INT(max_seqs, 6);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK_EQ_INT(su.n_finished, 2);
    PB_CHECK_EQ_INT(su.output_tokens, 4 * 30 + 2 * 20);
    PB_CHECK(su.mem_saving > 0.05 && su.mem_saving < 0.8);
    sys_free(&s);
}

static void run_beam(bool exec_tokens, uint64_t seed, pb_run_summary *out, int64_t *frees_seen) {
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.check_every_step = true;
    ep.seed = seed;
    ep.store_tokens = exec_tokens;
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    xp.tokens = exec_tokens;
    sys s;
    sys_init(&s, 4, 512, 512, &ep, &xp, "vllm");
    pb_request r[2] = {req(0, 13, 40, 1, 4), req(0, 9, 25, 1, 6)};
    pb_trace t = {r, 2};
    trace_fix_ids(&t);
    PB_REQUIRE(pb_engine_begin(s.e, &t, s.m) == PB_OK);
    bool done = false;
    int64_t allocs0 = pb_paged_gpu(s.kv)->n_frees;
    while (!done) {
        PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
        const pb_group *g = pb_engine_group(s.e, 0);   /* NULL before arrival, after recycling */
        if (g && g->state == PB_GROUP_RUNNING) PB_CHECK_EQ_INT(g->n_seqs, 4);
        g = pb_engine_group(s.e, 1);
        if (g && g->state == PB_GROUP_RUNNING) PB_CHECK_EQ_INT(g->n_seqs, 6);
    }
    *frees_seen = pb_paged_gpu(s.kv)->n_frees - allocs0;
    PB_REQUIRE(pb_engine_end(s.e) == PB_OK);
    pb_metrics_summary(s.m, out);
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(s.kv)), 0);
    sys_free(&s);
}

PB_TEST(beam_search_real_selection_forks_and_frees) {
    pb_run_summary a, b, c;
    int64_t fa, fb, fc;
    run_beam(false, 1, &a, &fa);   /* synthetic scores */
    run_beam(true, 1, &b, &fb);    /* executor scores  */
    run_beam(false, 1, &c, &fc);
    PB_CHECK_EQ_INT(a.n_finished, 2);
    PB_CHECK_EQ_INT(b.n_finished, 2);
    PB_CHECK_EQ_INT(a.output_tokens, 4 * 40 + 6 * 25);
    /* beams died and their blocks were freed before the end */
    PB_CHECK(fa > 0 && fb > 0);
    /* sharing: beams share the prompt and common ancestors */
    PB_CHECK(a.mem_saving > 0.1 && a.mem_saving < 0.95);
    PB_CHECK(b.mem_saving > 0.1 && b.mem_saving < 0.95);
    PB_CHECK(memcmp(&a, &c, sizeof a) == 0);   /* deterministic */
}

PB_TEST(shared_prefix_cached_for_later_requests) {
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.check_every_step = true;
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    sys s;
    sys_init(&s, 16, 256, 0, &ep, &xp, "vllm");
    pb_request r[3] = {req(0, 120, 10, 1, 1), req(1, 110, 10, 1, 1), req(2, 130, 10, 1, 1)};
    for (int i = 0; i < 3; i++) { r[i].prefix_id = 0; r[i].prefix_len = 100; }
    pb_trace t = {r, 3};
    trace_fix_ids(&t);
    PB_REQUIRE(pb_engine_begin(s.e, &t, s.m) == PB_OK);
    bool done = false;
    int64_t prefill_tokens = 0;
    int64_t steps = 0;
    while (!done) {
        PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
        if (pb_engine_steps(s.e) == steps) continue;
        steps = pb_engine_steps(s.e);
        const pb_batch *b = pb_engine_last_batch(s.e);
        for (int32_t i = 0; i < b->n_seqs; i++)
            if (b->seqs[i].is_prefill) {
                prefill_tokens += b->seqs[i].n_new;
                if (b->seqs[i].group_id > 0) PB_CHECK_EQ_INT(b->seqs[i].n_cached, 96);
            }
    }
    PB_CHECK_EQ_INT(pb_paged_prefix_blocks(s.kv, 0), 7);
    PB_REQUIRE(pb_engine_end(s.e) == PB_OK);
    PB_CHECK_EQ_INT(prefill_tokens, 120 + (110 - 96) + (130 - 96));
    PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(s.kv)), 7);   /* only the pinned prefix */
    sys_free(&s);
}

static void random_trace(pb_rng *rng, pb_request *r, int n, double rate, bool multi, int32_t maxp,
                         int32_t maxo, int32_t maxn) {
    double t = 0;
    for (int i = 0; i < n; i++) {
        t += pb_rng_exp(rng, rate);
        int32_t kind = multi ? (int32_t)pb_rng_below(rng, 4) : 0;
        r[i] = req(t, 1 + (int32_t)pb_rng_below(rng, (uint64_t)maxp), 1 + (int32_t)pb_rng_below(rng, (uint64_t)maxo),
                   kind == 1 ? 2 + (int32_t)pb_rng_below(rng, (uint64_t)maxn - 1) : 1,
                   kind == 2 ? 2 + (int32_t)pb_rng_below(rng, (uint64_t)maxn - 1) : 1);
        if (kind == 3) { r[i].prefix_id = (int32_t)pb_rng_below(rng, 2); r[i].prefix_len = 20 + 13 * r[i].prefix_id; r[i].prompt_len += r[i].prefix_len; }
        r[i].id = i;
    }
}

PB_TEST(stress_every_mode_with_checks) {
    const pb_preempt_mode modes[3] = {PB_PREEMPT_AUTO, PB_PREEMPT_RECOMPUTE, PB_PREEMPT_SWAP};
    const char *pols[3] = {"vllm", "spf", "sarathi"};
    for (int pm = 0; pm < 3; pm++)
        for (int sm = 0; sm < 2; sm++)
            for (int pi = 0; pi < 3; pi++) {
                pb_engine_params ep;
                pb_engine_params_default(&ep);
                ep.check_every_step = true;
                ep.preemption = modes[pm];
                ep.step_mode = sm ? PB_STEP_ALTERNATE : PB_STEP_MIXED;
                ep.max_num_seqs = 24;
                ep.max_num_batched_tokens = 600;
                ep.seed = 3;
                pb_fixed_exec_params xp;
                pb_fixed_exec_params_default(&xp);
                sys s;
                sys_init(&s, 8, 90, 60, &ep, &xp, pols[pi]);
                enum { N = 120 };
                pb_request r[N];
                pb_rng rng;
                pb_rng_seed(&rng, 99, (uint64_t)(pm * 4 + sm * 2 + pi));
                random_trace(&rng, r, N, 40.0, true, 100, 80, 3);
                r[7].prompt_len = 2000;   /* never fits (90 blocks * 8) */
                r[7].prefix_id = -1;
                r[7].prefix_len = 0;
                pb_trace t = {r, N};
                pb_status st = pb_engine_run(s.e, &t, s.m);
                PB_CHECK(st == PB_OK);
                pb_run_summary su;
                pb_metrics_summary(s.m, &su);
                PB_CHECK_EQ_INT(su.n_rejected, 1);
                PB_CHECK_EQ_INT(su.n_finished, N - 1);
                PB_CHECK(su.n_preempt_recompute + su.n_preempt_swap > 0);
                if (modes[pm] == PB_PREEMPT_RECOMPUTE) PB_CHECK_EQ_INT(su.n_preempt_swap, 0);
                int32_t pinned = pb_paged_prefix_blocks(s.kv, 0) + pb_paged_prefix_blocks(s.kv, 1);
                PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_gpu(s.kv)), pinned);
                PB_CHECK_EQ_INT(pb_block_alloc_used(pb_paged_cpu(s.kv)), 0);
                PB_CHECK(su.mem_token_frac > 0 && su.mem_token_frac <= 1);
                PB_CHECK_NEAR(su.mem_token_frac + su.mem_reserved_frac + su.mem_internal_frac + su.mem_free_frac, 1.0, 1e-9);
                sys_free(&s);
            }
}

PB_TEST(determinism_same_seed_same_metrics) {
    pb_run_summary out[2];
    pb_req_metrics *rows[2];
    for (int k = 0; k < 2; k++) {
        pb_engine_params ep;
        pb_engine_params_default(&ep);
        ep.seed = 11;
        pb_fixed_exec_params xp;
        pb_fixed_exec_params_default(&xp);
        sys s;
        sys_init(&s, 16, 120, 120, &ep, &xp, "vllm");
        enum { N = 300 };
        pb_request *r = malloc(N * sizeof *r);
        pb_rng rng;
        pb_rng_seed(&rng, 5, 5);
        random_trace(&rng, r, N, 30.0, true, 200, 150, 4);
        pb_trace t = {r, N};
        PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
        pb_metrics_summary(s.m, &out[k]);
        int64_t n;
        const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
        rows[k] = malloc((size_t)n * sizeof *rows[k]);
        memcpy(rows[k], rm, (size_t)n * sizeof *rm);
        sys_free(&s);
        free(r);
    }
    PB_CHECK(memcmp(&out[0], &out[1], sizeof out[0]) == 0);
    PB_CHECK(memcmp(rows[0], rows[1], 300 * sizeof *rows[0]) == 0);
    PB_CHECK(out[0].n_finished == 300);
    free(rows[0]);
    free(rows[1]);
}

/* The request and step rows of m as CSV text (the caller frees *text). */
static void rows_text(const pb_metrics *m, char **text, size_t *len) {
    FILE *f = open_memstream(text, len);
    pb_metrics_write_requests(m, f, "");
    pb_metrics_write_steps(m, f, "");
    fclose(f);
}

/* The one door for arrivals, pb_engine_add_request: a caller that feeds a trace's
 * requests itself to a run begun on an empty trace -- each once the clock has passed
 * its arrival, and when the run has nothing left (done) the next one, the clock
 * jumping to it -- gets the trace replay's run, bit for bit (every request and step
 * row, the clock, the steps), with pb_engine_check after every step. */
PB_TEST(caller_fed_requests_equal_the_trace_replay) {
    enum { N = 150 };
    pb_request r[N];
    pb_rng rng;
    pb_rng_seed(&rng, 21, 2);
    random_trace(&rng, r, N, 20.0, true, 100, 80, 3);
    char *text[2];
    size_t len[2];
    double now[2];
    int64_t steps[2];
    for (int k = 0; k < 2; k++) {
        pb_engine_params ep;
        pb_engine_params_default(&ep);
        ep.check_every_step = true;
        ep.max_num_seqs = 24;
        ep.seed = 4;
        pb_fixed_exec_params xp;
        pb_fixed_exec_params_default(&xp);
        sys s;
        sys_init(&s, 8, 120, 60, &ep, &xp, "vllm");
        pb_trace t = {r, N}, none = {NULL, 0};
        if (k == 0) {
            PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
        } else {
            PB_REQUIRE(pb_engine_begin(s.e, &none, s.m) == PB_OK);
            int i = 0;
            for (bool done = false;;) {
                while (i < N && r[i].arrival_s <= pb_engine_now(s.e)) PB_REQUIRE(pb_engine_add_request(s.e, &r[i++]) == PB_OK);
                PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
                if (!done) continue;
                if (i == N) break;
                PB_REQUIRE(pb_engine_add_request(s.e, &r[i++]) == PB_OK);   /* idle: the clock jumps */
            }
            PB_REQUIRE(pb_engine_end(s.e) == PB_OK);
        }
        now[k] = pb_engine_now(s.e);
        steps[k] = pb_engine_steps(s.e);
        rows_text(s.m, &text[k], &len[k]);
        sys_free(&s);
    }
    PB_CHECK(len[0] > 1000 && len[0] == len[1] && !memcmp(text[0], text[1], len[0]));
    PB_CHECK(now[0] == now[1] && steps[0] == steps[1]);
    free(text[0]);
    free(text[1]);
}

/* A closed-loop client: a conversation of turns, each added when the previous
 * answer is done, arriving at that clock (on_finish tells when); a request arriving
 * after the clock while others run is refused, and one arriving with nothing
 * running moves the clock to it. */
typedef struct {
    int64_t finished;   /* the turns on_finish saw */
} turns_seen;

static void on_turn_done(void *user, const pb_group *g) {
    (void)g;
    ((turns_seen *)user)->finished++;
}

PB_TEST(closed_loop_next_turn_after_the_answer) {
    enum { TURNS = 6 };
    turns_seen seen = {0};
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.check_every_step = true;
    ep.on_finish = on_turn_done;
    ep.on_finish_user = &seen;
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    sys s;
    sys_init(&s, 16, 64, 0, &ep, &xp, "vllm");
    pb_request turn[TURNS + 2];
    pb_trace none = {NULL, 0};
    PB_REQUIRE(pb_engine_begin(s.e, &none, s.m) == PB_OK);
    int added = 0;
    turn[0] = req(0, 20, 8, 1, 1);
    PB_REQUIRE(pb_engine_add_request(s.e, &turn[added++]) == PB_OK);
    turn[TURNS] = req(5.0, 10, 4, 1, 1);
    PB_CHECK(pb_engine_add_request(s.e, &turn[TURNS]) == PB_ERR_INVALID);   /* later, not idle */
    for (bool done = false;;) {
        PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
        if (seen.finished == added && added < TURNS) {   /* the answer is in: the next turn, now */
            turn[added] = req(pb_engine_now(s.e), 20 + 10 * added, 8, 1, 1);
            PB_REQUIRE(pb_engine_add_request(s.e, &turn[added++]) == PB_OK);
        }
        if (done) break;
    }
    turn[TURNS + 1] = req(pb_engine_now(s.e) + 2.0, 10, 4, 1, 1);   /* nothing runs: the clock jumps */
    PB_REQUIRE(pb_engine_add_request(s.e, &turn[TURNS + 1]) == PB_OK);
    PB_CHECK(pb_engine_now(s.e) == turn[TURNS + 1].arrival_s);
    for (bool done = false; !done;) PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
    PB_REQUIRE(pb_engine_end(s.e) == PB_OK);
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
    PB_REQUIRE(n == TURNS + 1);
    for (int i = 0; i < TURNS + 1; i++) PB_CHECK(rm[i].finished && rm[i].id == i);
    for (int i = 1; i < TURNS; i++) PB_CHECK(rm[i].arrival_s == rm[i - 1].finish_s);
    PB_CHECK(rm[TURNS].arrival_s == turn[TURNS + 1].arrival_s);
    PB_CHECK_EQ_INT(seen.finished, TURNS + 1);
    sys_free(&s);
}

PB_TEST(summary_block_prints) {
    pb_run_summary su;
    memset(&su, 0, sizeof su);
    su.n_finished = 3;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pb_metrics_print_summary(f, &su, "vllm");
    fclose(f);
    PB_CHECK_STR_CONTAINS(buf, "Serving Benchmark Result");
    PB_CHECK_STR_CONTAINS(buf, "Successful requests:");
    PB_CHECK_STR_CONTAINS(buf, "Mean normalized latency (s/token):");
    free(buf);
}

/* ---- outputs do not depend on scheduling ---- */

typedef struct {
    uint64_t hash[64];
    int32_t n_done;
} out_log;

static void log_finish(void *user, const pb_group *g) {
    out_log *o = user;
    uint64_t h = 1469598103934665603ULL;
    /* order-independent over the group's sequences: sum of per-sequence hashes */
    uint64_t sum = 0;
    for (int32_t i = 0; i < g->n_seqs; i++) {
        const pb_seq *q = g->seqs[i];
        uint64_t x = h;
        for (int32_t k = 0; k < q->len; k++) x = (x ^ (uint64_t)(uint32_t)q->tokens[k]) * 1099511628211ULL;
        sum += x;
    }
    o->hash[g->id] = sum;
    o->n_done++;
}

static void run_tokens(int32_t bs, int32_t gpu, pb_preempt_mode pm, pb_step_mode sm, out_log *o,
                       int64_t *preempts) {
    memset(o, 0, sizeof *o);
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.check_every_step = true;
    ep.store_tokens = true;
    ep.preemption = pm;
    ep.step_mode = sm;
    ep.on_finish = log_finish;
    ep.on_finish_user = o;
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    xp.tokens = true;
    xp.seed = 77;
    sys s;
    sys_init(&s, bs, gpu, gpu, &ep, &xp, "vllm");
    pb_request r[40];
    pb_rng rng;
    pb_rng_seed(&rng, 8, 8);
    random_trace(&rng, r, 40, 1000.0, true, 60, 50, 3);
    pb_trace t = {r, 40};
    PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    *preempts = su.n_preempt_recompute + su.n_preempt_swap;
    sys_free(&s);
}

PB_TEST(output_tokens_independent_of_scheduling) {
    out_log ref, o;
    int64_t pre;
    run_tokens(16, 4096, PB_PREEMPT_AUTO, PB_STEP_MIXED, &ref, &pre);
    PB_REQUIRE(ref.n_done == 40);
    PB_CHECK_EQ_INT(pre, 0);
    const struct { int32_t bs, gpu; pb_preempt_mode pm; pb_step_mode sm; } cfg[] = {
        {4, 120, PB_PREEMPT_RECOMPUTE, PB_STEP_MIXED}, {4, 120, PB_PREEMPT_SWAP, PB_STEP_MIXED},
        {8, 60, PB_PREEMPT_AUTO, PB_STEP_ALTERNATE}, {16, 30, PB_PREEMPT_AUTO, PB_STEP_MIXED}};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        run_tokens(cfg[c].bs, cfg[c].gpu, cfg[c].pm, cfg[c].sm, &o, &pre);
        PB_CHECK_EQ_INT(o.n_done, 40);
        if (pre == 0) fprintf(stderr, "  config %zu did not preempt\n", c);
        PB_CHECK(pre > 0);   /* the configuration did preempt */
        for (int i = 0; i < 40; i++) PB_CHECK(o.hash[i] == ref.hash[i]);
    }
}

/* ---- the fused synthetic beam path ---- */

/* Every call: k choices (n_top >= k), sorted best first, scores below the parent's
 * cum with logprob their difference (rounded to float), tokens in range, and a beam
 * chosen c times contributes exactly its ranks 0..c-1 with non-increasing
 * log-probabilities (what any top-k of sorted lists gives). */
PB_TEST(beam_synth_select_is_a_top_k) {
    pb_rng pick;
    pb_rng_seed(&pick, 42, 1);
    const int32_t vocabs[] = {1, 3, 50272, 32000, 2147483647, 0};   /* 0: no token draws, tokens 0 */
    int64_t checked = 0;
    for (int trial = 0; trial < 20000; trial++) {
        int32_t nb = 1 + (int32_t)pb_rng_below(&pick, PB_MAX_TOP / 2);
        int32_t k = 1 + (int32_t)pb_rng_below(&pick, PB_MAX_TOP / 2);
        int32_t n_top = trial % 5 == 0 ? k + (int32_t)pb_rng_below(&pick, (uint64_t)(PB_MAX_TOP - k + 1)) : 2 * k;
        int32_t vocab = vocabs[trial % 6];
        double cum[PB_MAX_TOP / 2];
        for (int32_t i = 0; i < nb; i++) {
            cum[i] = trial % 7 == 0 ? -3.0 : -pb_rng_uniform(&pick) * (double)(1 + trial % 40);
            if (i > 0 && pb_rng_below(&pick, 4) == 0) cum[i] = cum[i - 1];
        }
        pb_rng r;
        pb_rng_seed(&r, (uint64_t)trial, 9);
        pb_beam_choice b[PB_MAX_TOP];
        int32_t nf = pb_beam_synth_select(&r, cum, NULL, nb, n_top, vocab, k, b);
        PB_REQUIRE(nf == k);
        int32_t hint[PB_MAX_TOP / 2];   /* any hint: the same choices */
        for (int32_t i = 0; i < nb; i++) {
            int32_t j = (int32_t)pb_rng_below(&pick, (uint64_t)i + 1);
            hint[i] = hint[j];
            hint[j] = i;
        }
        pb_rng r2;
        pb_rng_seed(&r2, (uint64_t)trial, 9);
        pb_beam_choice b2[PB_MAX_TOP];
        PB_REQUIRE(pb_beam_synth_select(&r2, cum, hint, nb, n_top, vocab, k, b2) == k);
        PB_REQUIRE(!memcmp(b, b2, (size_t)k * sizeof *b));
        int32_t next_rank[PB_MAX_TOP / 2] = {0};
        float last_lp[PB_MAX_TOP / 2];
        for (int32_t c = 0; c < nf; c++) {
            PB_REQUIRE(b[c].parent >= 0 && b[c].parent < nb);
            PB_REQUIRE(vocab > 0 ? b[c].token >= 0 && b[c].token < vocab : b[c].token == 0);
            PB_REQUIRE(b[c].logprob <= 0);
            PB_REQUIRE(b[c].score <= cum[b[c].parent] && b[c].logprob == (float)(b[c].score - cum[b[c].parent]));
            if (c > 0) PB_REQUIRE(b[c - 1].score >= b[c].score);
            int32_t p = b[c].parent;
            PB_REQUIRE(b[c].rank == next_rank[p]);
            if (next_rank[p] > 0) PB_REQUIRE(b[c].logprob <= last_lp[p]);
            next_rank[p]++;
            last_lp[p] = b[c].logprob;
            checked++;
        }
    }
    PB_CHECK(checked > 50000);
}

/* The replay's step (pb_beam_synth_advance) is select-then-plan exactly: the same
 * draws (the generators end equal), parents, scores and order, for every width,
 * over chains of steps (ranks right as the replay keeps them) and from scrambled
 * ranks and tied scores (the sort's slow path).  advance keeps the scores by rank
 * (c[m] is beam order[m]'s), select-then-plan by beam (ref_cum[e]). */
PB_TEST(beam_synth_advance_equals_select_then_plan) {
    pb_rng pick;
    pb_rng_seed(&pick, 5, 2);
    int64_t steps = 0, moved = 0;
    for (int trial = 0; trial < 3000; trial++) {
        int32_t nb = 1 + trial % (PB_MAX_TOP / 2);
        double c[PB_MAX_TOP / 2], ref_cum[PB_MAX_TOP / 2];
        int32_t order[PB_MAX_TOP / 2], ref_order[PB_MAX_TOP / 2];
        for (int32_t i = 0; i < nb; i++) {
            ref_cum[i] = trial % 5 == 0 ? -2.0 : -pb_rng_uniform(&pick) * (double)(1 + trial % 9);
            if (i > 0 && pb_rng_below(&pick, 3) == 0) ref_cum[i] = ref_cum[i - 1];   /* ties */
            int32_t j = (int32_t)pb_rng_below(&pick, (uint64_t)i + 1);   /* scrambled ranks */
            order[i] = order[j];
            order[j] = i;
        }
        for (int32_t m = 0; m < nb; m++) c[m] = ref_cum[order[m]];
        memcpy(ref_order, order, sizeof order);
        pb_rng r, ref_r;
        pb_rng_seed(&r, (uint64_t)trial, 4);
        ref_r = r;
        for (int step = 0; step < 40; step++, steps++) {
            pb_beam_choice ch[PB_MAX_TOP / 2];
            PB_REQUIRE(pb_beam_synth_select(&ref_r, ref_cum, ref_order, nb, 2 * nb, 0, nb, ch) == nb);
            pb_beam_plan pl;
            pb_beam_plan_make(ch, nb, nb, &pl);
            int32_t ref_parent[PB_MAX_TOP / 2], parent[PB_MAX_TOP / 2];
            for (int32_t e = 0; e < nb; e++) {
                ref_parent[e] = ch[pl.at[e]].parent;
                ref_cum[e] = ch[pl.at[e]].score;
                moved += ref_parent[e] != e;
            }
            memcpy(ref_order, pl.next, (size_t)nb * sizeof *ref_order);
            pb_beam_synth_advance(&r, c, order, nb, parent);
            PB_REQUIRE(!memcmp(&r, &ref_r, sizeof r));
            PB_REQUIRE(!memcmp(parent, ref_parent, (size_t)nb * sizeof *parent));
            PB_REQUIRE(!memcmp(order, ref_order, (size_t)nb * sizeof *order));
            for (int32_t m = 0; m < nb; m++) PB_REQUIRE(c[m] == ref_cum[order[m]] && c[m] == ch[m].score);
        }
    }
    PB_CHECK(steps == 120000 && moved > 100000);   /* beams did branch and die */
}

/* The fused path draws differently but must choose with the law of synth + select:
 * over many seeded calls, how often each beam gets 0..k children and the mean best
 * and k-th scores agree (a bias, e.g. a wrong gap distribution or a wrong pick among
 * the beams, shows up far beyond these bounds). */
PB_TEST(beam_synth_select_has_the_law_of_synth_then_select) {
    enum { NB = 4, K = 4, TRIALS = 40000 };
    /* spread beams; tied beams; one beam far ahead (2k candidates each, as the engine) */
    const struct { double cum[NB]; int32_t nb, n_top; } cases[] = {
        {{0.0, -0.5, -1.0, -3.0}, 4, 2 * K},
        {{-1.0, -1.0, -1.2, 0}, 3, 2 * K},
        {{0.0, -6.0, -6.5, -6.6}, 4, K},
    };
    for (size_t ci = 0; ci < PB_ARRAY_LEN(cases); ci++) {
        const double *cum = cases[ci].cum;
        int32_t nb = cases[ci].nb, n_top = cases[ci].n_top;
        double hist[2][NB][K + 1] = {{{0}}}, best[2] = {0, 0}, last[2] = {0, 0};
        pb_rng r;
        pb_rng_seed(&r, 7 + ci, 3);
        for (int way = 0; way < 2; way++)
            for (int t = 0; t < TRIALS; t++) {
                pb_beam_choice ch[K];
                int32_t n;
                if (way == 0) {
                    pb_candidates cand[NB];
                    for (int i = 0; i < nb; i++) pb_beam_synth_candidates(&r, n_top, 50272, &cand[i]);
                    n = pb_beam_select(cum, cand, nb, K, ch);
                } else {
                    n = pb_beam_synth_select(&r, cum, NULL, nb, n_top, 50272, K, ch);
                }
                PB_REQUIRE(n == K);
                int kids[NB] = {0};
                for (int c = 0; c < n; c++) kids[ch[c].parent]++;
                for (int i = 0; i < nb; i++) hist[way][i][kids[i]] += 1.0 / TRIALS;
                best[way] += ch[0].score / TRIALS;
                last[way] += ch[K - 1].score / TRIALS;
            }
        for (int i = 0; i < nb; i++)
            for (int c = 0; c <= K; c++) {
                double p = 0.5 * (hist[0][i][c] + hist[1][i][c]);
                double sigma = sqrt(2 * p * (1 - p) / TRIALS) + 1e-4;
                PB_CHECK(fabs(hist[0][i][c] - hist[1][i][c]) < 5 * sigma);
            }
        PB_CHECK(fabs(best[0] - best[1]) < 0.02);
        PB_CHECK(fabs(last[0] - last[1]) < 0.02);
    }
}

/* ---- metrics invariants ---- */

PB_TEST(metrics_check_catches_broken_rows) {
    pb_metrics *m = pb_metrics_create(true);
    pb_trace tr = {0};
    int64_t cap = 0;
    for (int64_t i = 0; i < 3; i++) {
        pb_request q = pb_request_make((double)i, 10, 8);
        pb_trace_push(&tr, &cap, &q);
    }
    pb_metrics_begin(m, &tr, 15);   /* output capped to 15 - 10 */
    pb_run_summary sum;
    pb_metrics_summary(m, &sum);    /* no row made yet: every request unfinished */
    PB_CHECK_EQ_INT(sum.n_unfinished, 3);
    PB_CHECK(pb_metrics_check(m) == PB_OK);
    pb_req_metrics *r1 = pb_metrics_req(m, 1);   /* makes rows 0 and 1, shaped */
    PB_CHECK(r1->arrival_s == 1.0 && r1->prompt_len == 10 && r1->output_len == 5 && r1->n_seqs == 1);
    PB_CHECK(r1->first_token_s == -1 && r1->finish_s == -1 && !r1->finished);
    pb_req_metrics *r0 = pb_metrics_req(m, 0);
    r0->first_token_s = 0.5;
    r0->finish_s = 1.0;
    r0->finished = true;
    pb_step_metrics st;
    memset(&st, 0, sizeof st);
    st.t_s = 0;
    st.latency_s = 0.5;
    st.n_groups = 1;
    st.n_seqs = 1;
    st.n_prefill_seqs = 1;
    st.prefill_tokens = 10;
    st.mem.total_slots = 100;
    st.mem.token_slots = 10;
    st.mem.reserved_slots = 4;
    st.mem.internal_frag_slots = 2;
    st.mem.free_slots = 84;
    pb_metrics_add_step(m, &st);
    st.t_s = 0.5;
    st.n_prefill_seqs = 0;
    st.prefill_tokens = 0;
    st.decode_tokens = 1;
    pb_metrics_add_step(m, &st);
    pb_metrics_end(m, 1.0);
    PB_CHECK(pb_metrics_check(m) == PB_OK);
    /* time order broken: first token after the finish */
    r0->first_token_s = 1.5;
    PB_CHECK(pb_metrics_check(m) == PB_ERR_INVALID);
    r0->first_token_s = -0.5;   /* before the arrival */
    PB_CHECK(pb_metrics_check(m) == PB_ERR_INVALID);
    r0->first_token_s = 0.5;
    r0->rejected = true;        /* both finished and rejected */
    PB_CHECK(pb_metrics_check(m) == PB_ERR_INVALID);
    r0->rejected = false;
    pb_metrics_req(m, 1)->finish_s = 3.0;   /* a finish time without finishing */
    PB_CHECK(pb_metrics_check(m) == PB_ERR_INVALID);
    pb_metrics_req(m, 1)->finish_s = -1;
    pb_metrics_req(m, 2)->output_len = 0;   /* token count */
    PB_CHECK(pb_metrics_check(m) == PB_ERR_INVALID);
    pb_metrics_req(m, 2)->output_len = 5;
    PB_CHECK(pb_metrics_check(m) == PB_OK);
    pb_metrics_destroy(m);
    pb_trace_free(&tr);
    pb_trace empty = {0};

    /* a step whose memory classes do not sum to the total */
    m = pb_metrics_create(true);
    pb_metrics_begin(m, &empty, 0);
    st.mem.free_slots = 83;
    pb_metrics_add_step(m, &st);
    PB_CHECK(pb_metrics_check(m) == PB_ERR_INVALID);
    pb_metrics_destroy(m);
    /* batch counts: prefill seqs + decode tokens must equal the batch */
    m = pb_metrics_create(true);
    pb_metrics_begin(m, &empty, 0);
    st.mem.free_slots = 84;
    st.n_seqs = 2;
    pb_metrics_add_step(m, &st);
    PB_CHECK(pb_metrics_check(m) == PB_ERR_INVALID);
    pb_metrics_destroy(m);
    /* steps out of clock order */
    m = pb_metrics_create(true);
    pb_metrics_begin(m, &empty, 0);
    st.n_seqs = 1;
    st.t_s = 1.0;
    pb_metrics_add_step(m, &st);
    PB_CHECK(pb_metrics_check(m) == PB_OK);
    st.t_s = 1.2;   /* the previous step ends at 1.5 */
    pb_metrics_add_step(m, &st);
    PB_CHECK(pb_metrics_check(m) == PB_ERR_INVALID);
    pb_metrics_destroy(m);
}

/* ---- inter-token latency: the runs give the numbers of the expanded gaps ---- */

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool same_bits(double a, double b, const char *what) {
    if (memcmp(&a, &b, sizeof a) == 0) return true;
    fprintf(stderr, "  %s: summary %.17g, reference %.17g\n", what, a, b);
    return false;
}

/* m's summary ITL against the plain gaps gap_s[0..n) (seconds, recording order):
 * mean added in order, pb_percentile of the sorted copy (its numpy-linear values are
 * pinned by literals in test_metrics_oracle.c), bit for bit. */
static void check_itl(const pb_metrics *m, const double *gap_s, int64_t n) {
    double *ms = malloc((size_t)(n + 1) * sizeof *ms), sum = 0;
    for (int64_t i = 0; i < n; i++) sum += ms[i] = gap_s[i] * 1e3;
    qsort(ms, (size_t)n, sizeof *ms, cmp_dbl);
    pb_run_summary su;
    pb_metrics_summary(m, &su);
    PB_CHECK(same_bits(su.itl_mean_ms, n ? sum / (double)n : 0, "ITL mean"));
    PB_CHECK(same_bits(su.itl_p50_ms, pb_percentile(ms, n, 50), "ITL p50"));
    PB_CHECK(same_bits(su.itl_p90_ms, pb_percentile(ms, n, 90), "ITL p90"));
    PB_CHECK(same_bits(su.itl_p99_ms, pb_percentile(ms, n, 99), "ITL p99"));
    PB_CHECK(pb_metrics_check(m) == PB_OK);
    free(ms);
}

#define ITL_REQS 8
#define ITL_STEPS 400

typedef struct {
    pb_metrics *m;
    double last[ITL_REQS];
    double gap[ITL_REQS * ITL_STEPS];
    int64_t n;
} itl_rec;

/* Request id produces a token at t: into the metrics and the plain gap list. */
static void itl_token(itl_rec *r, int64_t id, double t) {
    if (r->last[id] >= 0) r->gap[r->n++] = t - r->last[id];
    else pb_metrics_req(r->m, id);   /* the row, made at the first token (as the engine) */
    pb_metrics_token(r->m, r->last[id], t);
    r->last[id] = t;
}

PB_TEST(metrics_itl_runs_match_expanded_gaps) {
    pb_trace tr = {0};
    int64_t cap = 0;
    for (int64_t i = 0; i < ITL_REQS; i++) {
        pb_request q = pb_request_make(0, 1, 1000);
        pb_trace_push(&tr, &cap, &q);
    }
    static itl_rec r;
    r.m = pb_metrics_create(false);
    for (int c = 0; c < 5; c++) {
        pb_metrics_begin(r.m, &tr, 2000);
        r.n = 0;
        for (int i = 0; i < ITL_REQS; i++) r.last[i] = -1;
        double t0 = c == 2 || c == 3 ? 1.0 : 0.25;
        for (int64_t i = 0; i < ITL_REQS; i++) itl_token(&r, i, t0);   /* first tokens: no gap */
        if (c == 0) { check_itl(r.m, r.gap, r.n); continue; }            /* n = 0 */
        if (c == 1) {                                                      /* n = 1 */
            itl_token(&r, 5, 0.7);
            PB_REQUIRE(r.n == 1);
            check_itl(r.m, r.gap, r.n);
            continue;
        }
        if (c == 2) {   /* all equal: 1.1 - 1 (not 0.1), added exactly while t < 2 */
            double g = 1.1 - 1.0;
            for (double t = 1.0 + g; t < 2; t += g)
                for (int64_t i = 0; i < ITL_REQS; i++) itl_token(&r, i, t);
            for (int64_t i = 1; i < r.n; i++) PB_REQUIRE(memcmp(&r.gap[i], &r.gap[0], sizeof r.gap[0]) == 0);
            PB_REQUIRE(r.n == 9 * ITL_REQS);
            check_itl(r.m, r.gap, r.n);
            continue;
        }
        if (c == 3) {   /* gaps one ulp apart are two runs: 1.1 - 1 and 1.2 - 1.1 */
            for (int64_t i = 0; i < 4; i++) itl_token(&r, i, 1.1);
            for (int64_t i = 0; i < 4; i++) itl_token(&r, i, 1.2);
            PB_REQUIRE(r.n == 8 && r.gap[3] != r.gap[4] && fabs(r.gap[3] - r.gap[4]) < 1e-15);
            check_itl(r.m, r.gap, r.n);
            continue;
        }
        /* a run broken and restarted with the same value: gaps 0.25 x 3, 0.5, 0.25 */
        itl_token(&r, 0, 0.5);
        itl_token(&r, 1, 0.5);
        itl_token(&r, 0, 0.75);
        itl_token(&r, 2, 0.75);
        itl_token(&r, 1, 0.75);
        PB_REQUIRE(r.n == 5 && r.gap[2] == 0.25 && r.gap[3] == 0.5 && r.gap[4] == 0.25);
        /* random steps: most a grid step (repeated gaps), some not; each request
         * produces with probability 3/4, so idle requests make longer gaps mid-step */
        pb_rng rng;
        pb_rng_seed(&rng, 18, 1);
        double t = 0.75;
        for (int s = 0; s < ITL_STEPS - 3; s++) {
            t += pb_rng_below(&rng, 4) ? (double)(1 + pb_rng_below(&rng, 3)) / 64 : 0.05 * pb_rng_uniform(&rng);
            for (int64_t i = 0; i < ITL_REQS; i++)
                if (pb_rng_below(&rng, 4)) itl_token(&r, i, t);
        }
        int64_t distinct = 0, repeats = 0;
        for (int64_t i = 1; i < r.n; i++) {
            repeats += r.gap[i] == r.gap[i - 1];
            bool seen = false;
            for (int64_t j = 0; j < i && !seen; j++) seen = r.gap[j] == r.gap[i];
            distinct += !seen;
        }
        PB_CHECK(repeats > r.n / 4 && distinct > 100);   /* the sequence exercises both */
        check_itl(r.m, r.gap, r.n);
    }
    /* the checker: a negative gap; more gaps than the requests' outputs allow */
    pb_metrics_begin(r.m, &tr, 2000);
    pb_metrics_req(r.m, 0);
    pb_metrics_token(r.m, -1, 1.0);
    pb_metrics_token(r.m, 1.0, 0.5);
    PB_CHECK(pb_metrics_check(r.m) == PB_ERR_INVALID);
    pb_metrics_begin(r.m, &tr, 4);   /* output capped to 4 - 1: at most 2 gaps per request */
    pb_metrics_req(r.m, 0);
    for (int k = 0; k < 3; k++) pb_metrics_token(r.m, k - 1, k);
    PB_CHECK(pb_metrics_check(r.m) == PB_OK);
    pb_metrics_token(r.m, 2, 3);
    PB_CHECK(pb_metrics_check(r.m) == PB_ERR_INVALID);
    pb_metrics_destroy(r.m);
    pb_trace_free(&tr);
}

/* Runs (value k[j]/64, count c[j]) in this order: request j makes c[j] gaps of k[j]/64
 * (tokens at 0, v, 2v, ...: every gap exactly v), equal neighbours make one run; then
 * the summary against the expanded gaps. */
static void check_itl_runs(const int32_t *k, const int32_t *c, int64_t n_runs) {
    pb_trace tr = {0};
    int64_t cap = 0, n = 0;
    for (int64_t j = 0; j < n_runs; j++) {
        pb_request q = pb_request_make(0, 1, 1000);
        pb_trace_push(&tr, &cap, &q);
        n += c[j];
    }
    pb_metrics *m = pb_metrics_create(false);
    pb_metrics_begin(m, &tr, 2000);
    double *gap = malloc((size_t)(n + 1) * sizeof *gap);
    n = 0;
    for (int64_t j = 0; j < n_runs; j++) {
        double v = k[j] / 64.0, last = 0;
        pb_metrics_req(m, j);
        pb_metrics_token(m, -1, 0);
        for (int32_t i = 1; i <= c[j]; i++) {
            pb_metrics_token(m, last, i * v);
            gap[n++] = i * v - last;
            last = i * v;
        }
    }
    check_itl(m, gap, n);
    free(gap);
    pb_metrics_destroy(m);
    pb_trace_free(&tr);
}

PB_TEST(metrics_itl_selection_matches_sorted_gaps) {
    /* a single run */
    check_itl_runs((int32_t[]){5}, (int32_t[]){37}, 1);
    /* one value in runs at several places, between runs of others */
    int32_t dk[] = {3, 1, 3, 2, 1, 3, 2, 3, 1, 2}, dc[] = {5, 2, 4, 7, 1, 3, 2, 1, 6, 3};
    check_itl_runs(dk, dc, 10);
    /* 102 gaps: p50/p90/p99 read ranks 50/51, 90/91, 99/100 with weights .5/.9/.99, and
     * each lo is the last of its value (1/64 x 51, 2/64 x 40, 3/64 x 9, 4/64 x 2), in
     * runs apart, so lo + 1 is the next value */
    int32_t bk[] = {3, 1, 4, 2, 1, 3, 2, 4, 1}, bc[] = {4, 20, 1, 25, 20, 5, 15, 1, 11};
    check_itl_runs(bk, bc, 9);
    /* random: small (edge ranks, few runs) and 10,000 runs of 1..50 gaps over 12 values */
    pb_rng rng;
    pb_rng_seed(&rng, 18, 2);
    int32_t *rk = malloc(10000 * sizeof *rk), *rc = malloc(10000 * sizeof *rc);
    for (int t = 0; t < 300; t++) {
        int64_t n_runs = 1 + (int64_t)pb_rng_below(&rng, 12);
        for (int64_t j = 0; j < n_runs; j++) {
            rk[j] = 1 + (int32_t)pb_rng_below(&rng, 4);
            rc[j] = 1 + (int32_t)pb_rng_below(&rng, 5);
        }
        check_itl_runs(rk, rc, n_runs);
    }
    for (int64_t j = 0; j < 10000; j++) {
        rk[j] = 1 + (int32_t)pb_rng_below(&rng, 12);
        rc[j] = 1 + (int32_t)pb_rng_below(&rng, 50);
    }
    check_itl_runs(rk, rc, 10000);
    free(rk);
    free(rc);
}

PB_TEST_MAIN()
