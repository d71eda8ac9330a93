/* test_metrics_oracle.c -- every metric against a value worked out by hand, never
 * against a second copy of the code under test:
 *   - pb_percentile and the summary's percentiles (selection over runs) on literal
 *     sets: p50 of {1,2,3,4} is 2.5, p90 3.7, p99 3.97 (numpy's linear method);
 *   - a four-step run of three requests on the fixed-latency executor, whose every
 *     step time is worked out below: TTFT, TPOT, ITL, e2e, normalized latency (per
 *     sequence: a request with n = 2 counts twice), throughputs, goodput, batch
 *     averages and step counts, each a literal;
 *   - the per-request CSV's derived columns (ttft_ms, tpot_ms, e2el_ms,
 *     normalized_latency_s_per_token) equal to the same literals.
 * The values in comments are the hand derivation; the tests compare with the literal
 * results (tolerance 1e-12 s or relative 1e-12). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_manager.h"
#include "engine.h"
#include "executor_fixed.h"
#include "pbtest.h"

#define TOL 1e-12

/* ---- pb_percentile: literal sets ---- */

PB_TEST(percentile_literals) {
    double a[] = {4, 1, 3, 2};   /* unsorted on purpose: pb_percentile sorts */
    PB_CHECK_NEAR(pb_percentile(a, 4, 50), 2.5, TOL);
    PB_CHECK_NEAR(pb_percentile(a, 4, 90), 3.7, TOL);    /* rank 2.7: 3 + 0.7 * (4 - 3) */
    PB_CHECK_NEAR(pb_percentile(a, 4, 99), 3.97, TOL);   /* rank 2.97 */
    PB_CHECK_NEAR(pb_percentile(a, 4, 25), 1.75, TOL);   /* rank 0.75: 1 + 0.75 */
    PB_CHECK_NEAR(pb_percentile(a, 4, 0), 1, TOL);
    PB_CHECK_NEAR(pb_percentile(a, 4, 100), 4, TOL);
    double b[] = {10, 20, 40};
    PB_CHECK_NEAR(pb_percentile(b, 3, 50), 20, TOL);
    PB_CHECK_NEAR(pb_percentile(b, 3, 90), 36, TOL);     /* rank 1.8: 20 + 0.8 * 20 */
    PB_CHECK_NEAR(pb_percentile(b, 3, 10), 12, TOL);     /* rank 0.2: 10 + 0.2 * 10 */
    double c[] = {7};
    PB_CHECK_NEAR(pb_percentile(c, 1, 50), 7, TOL);
    PB_CHECK_NEAR(pb_percentile(c, 1, 99), 7, TOL);
    PB_CHECK(pb_percentile(c, 0, 50) == 0);              /* n == 0 -> 0 */
    double d[] = {5, 5, 1, 9, 5};                          /* ties */
    PB_CHECK_NEAR(pb_percentile(d, 5, 50), 5, TOL);
    PB_CHECK_NEAR(pb_percentile(d, 5, 90), 7.4, TOL);    /* rank 3.6: 5 + 0.6 * 4 */
    PB_CHECK_NEAR(pb_percentile(d, 5, 10), 2.6, TOL);    /* rank 0.4: 1 + 0.4 * 4 */
}

/* ---- the summary's percentiles, through the recording API ---- */

static pb_trace trace_of(pb_request *r, int n) {
    for (int i = 0; i < n; i++) r[i].id = i;
    return (pb_trace){r, n};
}

/* Four single-sequence requests that arrive at 0 and get their first token at 1, 2,
 * 3, 4 ms and finish 10 tokens later at 100 ms (e2e 0.1 s); TTFT {1,2,3,4} ms, TPOT
 * (0.1 - t1) / 9: {11, 10.888.., 10.777.., 10.666..} ms; gaps recorded as runs. */
PB_TEST(summary_percentiles_literals) {
    pb_request r[4];
    for (int i = 0; i < 4; i++) r[i] = pb_request_make(0, 8, 10);
    pb_trace t = trace_of(r, 4);
    pb_metrics *m = pb_metrics_create(false);
    pb_metrics_begin(m, &t, 2048);
    for (int i = 0; i < 4; i++) {
        pb_req_metrics *q = pb_metrics_req(m, i);
        q->first_token_s = (i + 1) * 1e-3;
        q->finish_s = 0.1;
        q->finished = true;
    }
    /* inter-token gaps (s): runs 1 ms x 3, 4 ms x 1, then 2 ms x 4 (in recording order) */
    pb_metrics_tokens(m, 0.010, 0.011, 3);
    pb_metrics_token(m, 0.020, 0.024);
    pb_metrics_tokens(m, 0.030, 0.032, 4);
    pb_metrics_end(m, 0.1);
    pb_run_summary s;
    pb_metrics_summary(m, &s);
    PB_CHECK_NEAR(s.ttft_mean_ms, 2.5, 1e-9);
    PB_CHECK_NEAR(s.ttft_p50_ms, 2.5, 1e-9);
    PB_CHECK_NEAR(s.ttft_p90_ms, 3.7, 1e-9);
    PB_CHECK_NEAR(s.ttft_p99_ms, 3.97, 1e-9);
    /* TPOT = (100 - ttft) / 9 ms: 99/9 = 11, 98/9, 97/9, 96/9; p50 = 97.5/9, p90 =
       (96 + ... ) sorted 96/9 97/9 98/9 99/9 at rank 2.7 = 98.7/9 */
    PB_CHECK_NEAR(s.tpot_mean_ms, 97.5 / 9, 1e-9);
    PB_CHECK_NEAR(s.tpot_p50_ms, 97.5 / 9, 1e-9);
    PB_CHECK_NEAR(s.tpot_p90_ms, 98.7 / 9, 1e-9);
    PB_CHECK_NEAR(s.tpot_p99_ms, 98.97 / 9, 1e-9);
    /* ITL {1,1,1,4,2,2,2,2} ms: sorted 1 1 1 2 2 2 2 4; mean 15/8; p50 rank 3.5 = 2;
       p90 rank 6.3 = 2 + 0.3 * 2 = 2.6; p99 rank 6.93 = 2 + 0.93 * 2 = 3.86 */
    PB_CHECK_NEAR(s.itl_mean_ms, 15.0 / 8, 1e-9);
    PB_CHECK_NEAR(s.itl_p50_ms, 2, 1e-9);
    PB_CHECK_NEAR(s.itl_p90_ms, 2.6, 1e-9);
    PB_CHECK_NEAR(s.itl_p99_ms, 3.86, 1e-9);
    /* e2e 0.1 each; normalized 0.1 / 10 = 0.01 s/token */
    PB_CHECK_NEAR(s.e2e_latency_mean, 0.1, TOL);
    PB_CHECK_NEAR(s.e2e_p99, 0.1, TOL);
    PB_CHECK_NEAR(s.norm_latency_mean, 0.01, TOL);
    PB_CHECK_NEAR(s.norm_latency_p50, 0.01, TOL);
    /* 4 finished in 0.1 s: 40 req/s; 40 output tokens: 400 tok/s; + 32 prompt: 720 */
    PB_CHECK_EQ_INT(s.n_finished, 4);
    PB_CHECK_NEAR(s.duration_s, 0.1, TOL);
    PB_CHECK_NEAR(s.req_throughput, 40, 1e-9);
    PB_CHECK_NEAR(s.output_tok_throughput, 400, 1e-9);
    PB_CHECK_NEAR(s.total_tok_throughput, 720, 1e-9);
    PB_CHECK(pb_metrics_check(m) == PB_OK);
    pb_metrics_destroy(m);
}

/* Normalized latency counts a request once per sequence (n = 3 here): the values are
 * {0.5 x3, 0.1, 0.2} s/token, not {0.5, 0.1, 0.2}. */
PB_TEST(normalized_latency_per_sequence_literals) {
    pb_request r[3] = {pb_request_make(0, 4, 2), pb_request_make(0, 4, 10), pb_request_make(0, 4, 5)};
    r[0].n = 3;
    pb_trace t = trace_of(r, 3);
    pb_metrics *m = pb_metrics_create(false);
    pb_metrics_begin(m, &t, 2048);
    const double fin[3] = {1.0, 1.0, 1.0};   /* e2e 1 s: 1/2, 1/10, 1/5 s/token */
    for (int i = 0; i < 3; i++) {
        pb_req_metrics *q = pb_metrics_req(m, i);
        q->first_token_s = 0.5;
        q->finish_s = fin[i];
        q->finished = true;
    }
    pb_metrics_end(m, 1.0);
    pb_run_summary s;
    pb_metrics_summary(m, &s);
    /* sorted 0.1 0.2 0.5 0.5 0.5: mean 1.8 / 5 = 0.36; p50 0.5; p10 rank 0.4 */
    PB_CHECK_NEAR(s.norm_latency_mean, 0.36, TOL);
    PB_CHECK_NEAR(s.norm_latency_p50, 0.5, TOL);
    PB_CHECK_NEAR(s.norm_latency_p90, 0.5, TOL);
    /* output tokens count every sequence: 2 x 3 + 10 + 5 = 21 in 1 s */
    PB_CHECK_EQ_INT(s.output_tokens, 21);
    PB_CHECK_NEAR(s.output_tok_throughput, 21, TOL);
    /* TPOT (1 - 0.5) / (output - 1): 500, 55.55.., 125 ms; mean 680.55../3 */
    PB_CHECK_NEAR(s.tpot_p50_ms, 125, 1e-9);
    PB_CHECK_NEAR(s.tpot_mean_ms, (500 + 500.0 / 9 + 125) / 3, 1e-9);
    /* goodput at the bounds (TTFT 500 ms and TPOT 500 ms exactly, binary-exact): met */
    int64_t met;
    double frac, rate;
    pb_metrics_goodput(m, 500, 500, s.duration_s, &met, &frac, &rate);
    PB_CHECK_EQ_INT(met, 3);
    PB_CHECK_NEAR(frac, 1, TOL);
    PB_CHECK_NEAR(rate, 3, TOL);
    pb_metrics_goodput(m, 499.5, 0, s.duration_s, &met, &frac, &rate);   /* TTFT over: none */
    PB_CHECK_EQ_INT(met, 0);
    pb_metrics_goodput(m, 0, 499.5, s.duration_s, &met, &frac, &rate);   /* R0's TPOT over */
    PB_CHECK_EQ_INT(met, 2);
    PB_CHECK_NEAR(frac, 2.0 / 3, TOL);
    pb_metrics_destroy(m);
}

/* ---- a run on the fixed-latency executor, worked out step by step ----
 * Executor: 10 ms per step + 1 ms per prefill token + 2 ms per decoding sequence.
 * Trace (vLLM v0.1 mixed steps, budget 2560, KV plenty):
 *   R0 arrives 0,     prompt 10, output 3
 *   R1 arrives 0,     prompt 20, output 1
 *   R2 arrives 0.050, prompt  5, output 2, n = 2 (parallel sampling)
 * step 1 @ 0:     admit R0, R1 (30 prefill tokens)    10 + 30     = 40 ms -> 0.040
 *                 R0 token 1, R1 token 1 = done (finish 0.040)
 * step 2 @ 0.040: decode R0 (R2 not yet arrived)      10 + 2      = 12 ms -> 0.052
 * step 3 @ 0.052: decode R0, admit R2 (5 tokens)      10 + 5 + 2  = 17 ms -> 0.069
 *                 R0 token 3 = done (0.069); R2 token 1 (both sequences)
 * step 4 @ 0.069: decode R2's two sequences           10 + 2 x 2  = 14 ms -> 0.083
 *                 R2 done (0.083)
 * Per request:       TTFT ms   TPOT ms                 e2e s   normalized s/token
 *   R0               40        (69 - 40) / 2 = 14.5    0.069   0.069 / 3 = 0.023
 *   R1               40        -                       0.040   0.040
 *   R2               19        (83 - 69) / 1 = 14      0.033   0.033 / 2 = 0.0165 (x2)
 * ITL (per request): R0 12, 17; R2 14 ms. */

typedef struct {
    pb_kv_manager *kv;
    pb_policy *pol;
    pb_executor *ex;
    pb_engine *e;
    pb_metrics *m;
} sys;

static void run_hand_trace(sys *s, pb_request *r, pb_trace *t) {
    r[0] = pb_request_make(0, 10, 3);
    r[1] = pb_request_make(0, 20, 1);
    r[2] = pb_request_make(0.050, 5, 2);
    r[2].n = 2;
    *t = trace_of(r, 3);
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.n_gpu_blocks = 64;
    PB_ASSERT(pb_paged_kv_create(&pp, &s->kv) == PB_OK);
    PB_ASSERT(pb_policy_create("vllm", NULL, &s->pol, NULL) == PB_OK);
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    xp.step_s = 0.010;
    xp.prefill_token_s = 0.001;
    xp.decode_seq_s = 0.002;
    PB_ASSERT(pb_executor_fixed_create(&xp, &s->ex) == PB_OK);
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.check_every_step = true;
    PB_ASSERT(pb_engine_create(&ep, s->kv, s->pol, s->ex, &s->e) == PB_OK);
    s->m = pb_metrics_create(true);
    PB_ASSERT(pb_engine_run(s->e, t, s->m) == PB_OK);
}

static void sys_free(sys *s) {
    pb_engine_destroy(s->e);
    pb_kv_destroy(s->kv);
    pb_policy_destroy(s->pol);
    pb_executor_destroy(s->ex);
    pb_metrics_destroy(s->m);
}

PB_TEST(hand_trace_per_request_and_steps) {
    sys s;
    pb_request r[3];
    pb_trace t;
    run_hand_trace(&s, r, &t);
    int64_t n;
    const pb_req_metrics *q = pb_metrics_requests(s.m, &n);
    PB_REQUIRE(n == 3 && q[0].finished && q[1].finished && q[2].finished);
    PB_CHECK_NEAR(q[0].first_token_s, 0.040, TOL);
    PB_CHECK_NEAR(q[0].finish_s, 0.069, TOL);
    PB_CHECK_NEAR(q[1].first_token_s, 0.040, TOL);
    PB_CHECK_NEAR(q[1].finish_s, 0.040, TOL);
    PB_CHECK_NEAR(q[2].first_token_s, 0.069, TOL);
    PB_CHECK_NEAR(q[2].finish_s, 0.083, TOL);
    static const double ttft[3] = {40, 40, 19}, e2e[3] = {0.069, 0.040, 0.033}, nl[3] = {0.023, 0.040, 0.0165};
    static const double tpot[3] = {14.5, NAN, 14};
    for (int i = 0; i < 3; i++) {
        pb_req_latency l = pb_req_latency_of(&q[i]);
        PB_CHECK_NEAR(l.ttft_ms, ttft[i], 1e-9);
        PB_CHECK_NEAR(l.e2e_s, e2e[i], TOL);
        PB_CHECK_NEAR(l.norm_latency_s_per_token, nl[i], TOL);
        if (isnan(tpot[i])) PB_CHECK(isnan(l.tpot_ms));
        else PB_CHECK_NEAR(l.tpot_ms, tpot[i], 1e-9);
    }
    int64_t ns;
    const pb_step_metrics *st = pb_metrics_steps(s.m, &ns);
    PB_REQUIRE(ns == 4);
    static const double t0[4] = {0, 0.040, 0.052, 0.069}, lat[4] = {0.040, 0.012, 0.017, 0.014};
    static const int groups[4] = {2, 1, 2, 1}, seqs[4] = {2, 1, 2, 2}, prefill[4] = {30, 0, 5, 0};
    for (int i = 0; i < 4; i++) {
        PB_CHECK_NEAR(st[i].t_s, t0[i], TOL);
        PB_CHECK_NEAR(st[i].latency_s, lat[i], TOL);
        PB_CHECK_EQ_INT(st[i].n_groups, groups[i]);
        PB_CHECK_EQ_INT(st[i].n_seqs, seqs[i]);
        PB_CHECK_EQ_INT(st[i].prefill_tokens, prefill[i]);
    }
    PB_CHECK(pb_metrics_check(s.m) == PB_OK);
    sys_free(&s);
}

PB_TEST(hand_trace_summary) {
    sys s;
    pb_request r[3];
    pb_trace t;
    run_hand_trace(&s, r, &t);
    pb_run_summary u;
    pb_metrics_summary(s.m, &u);
    PB_CHECK_EQ_INT(u.n_requests, 3);
    PB_CHECK_EQ_INT(u.n_finished, 3);
    PB_CHECK_EQ_INT(u.n_steps, 4);
    PB_CHECK_EQ_INT(u.n_prefill_steps, 2);
    PB_CHECK_NEAR(u.duration_s, 0.083, TOL);
    PB_CHECK_NEAR(u.busy_s, 0.083, TOL);
    /* TTFT {40, 40, 19}: mean 33; sorted 19 40 40: p50 40, p90 rank 1.8 = 40 */
    PB_CHECK_NEAR(u.ttft_mean_ms, 33, 1e-9);
    PB_CHECK_NEAR(u.ttft_p50_ms, 40, 1e-9);
    PB_CHECK_NEAR(u.ttft_p90_ms, 40, 1e-9);
    /* TPOT {14.5, 14} (R1 has one token): mean and p50 14.25, p90 14.45, p99 14.495 */
    PB_CHECK_NEAR(u.tpot_mean_ms, 14.25, 1e-9);
    PB_CHECK_NEAR(u.tpot_p50_ms, 14.25, 1e-9);
    PB_CHECK_NEAR(u.tpot_p90_ms, 14.45, 1e-9);
    PB_CHECK_NEAR(u.tpot_p99_ms, 14.495, 1e-9);
    /* ITL {12, 17, 14}: mean 43/3; sorted 12 14 17: p50 14, p90 rank 1.8 = 16.4, p99 16.94 */
    PB_CHECK_NEAR(u.itl_mean_ms, 43.0 / 3, 1e-9);
    PB_CHECK_NEAR(u.itl_p50_ms, 14, 1e-9);
    PB_CHECK_NEAR(u.itl_p90_ms, 16.4, 1e-9);
    PB_CHECK_NEAR(u.itl_p99_ms, 16.94, 1e-9);
    /* e2e {0.069, 0.040, 0.033}: mean 0.142/3; sorted: p50 0.040, p90 0.040 + 0.8 x 0.029 */
    PB_CHECK_NEAR(u.e2e_latency_mean, 0.142 / 3, TOL);
    PB_CHECK_NEAR(u.e2e_p50, 0.040, TOL);
    PB_CHECK_NEAR(u.e2e_p90, 0.0632, TOL);
    PB_CHECK_NEAR(u.e2e_p99, 0.06842, TOL);
    /* normalized, per sequence {0.023, 0.040, 0.0165, 0.0165}: mean 0.096 / 4 = 0.024;
       sorted 0.0165 0.0165 0.023 0.040: p50 0.01975, p90 rank 2.7 = 0.0349, p99 0.03949 */
    PB_CHECK_NEAR(u.norm_latency_mean, 0.024, TOL);
    PB_CHECK_NEAR(u.norm_latency_p50, 0.01975, TOL);
    PB_CHECK_NEAR(u.norm_latency_p90, 0.0349, TOL);
    PB_CHECK_NEAR(u.norm_latency_p99, 0.03949, TOL);
    /* throughputs over 0.083 s: 3 requests; output 3 + 1 + 2 x 2 = 8 tokens; prompts 35 */
    PB_CHECK_EQ_INT(u.output_tokens, 8);
    PB_CHECK_EQ_INT(u.prompt_tokens, 35);
    PB_CHECK_NEAR(u.req_throughput, 3 / 0.083, 1e-9);
    PB_CHECK_NEAR(u.output_tok_throughput, 8 / 0.083, 1e-9);
    PB_CHECK_NEAR(u.total_tok_throughput, 43 / 0.083, 1e-9);
    /* batch averages over busy time: groups 2, 1, 2, 1 and sequences 2, 1, 2, 2 weighted
       by 40, 12, 17, 14 ms: 140 / 83 and 154 / 83 */
    PB_CHECK_NEAR(u.avg_batched_requests, 140.0 / 83, 1e-12);
    PB_CHECK_NEAR(u.avg_batched_seqs, 154.0 / 83, 1e-12);
    PB_CHECK_EQ_INT(u.n_preempt_recompute + u.n_preempt_swap, 0);
    /* goodput: SLO TTFT 30 ms, TPOT 14.2 ms -> only R2 (19, 14); */
    int64_t met;
    double frac, rate;
    pb_metrics_goodput(s.m, 30, 14.2, u.duration_s, &met, &frac, &rate);
    PB_CHECK_EQ_INT(met, 1);
    PB_CHECK_NEAR(frac, 1.0 / 3, TOL);
    PB_CHECK_NEAR(rate, 1 / 0.083, 1e-9);
    /* TTFT 50, TPOT 14.4 -> R1 (one token: TTFT only) and R2; R0's 14.5 misses */
    pb_metrics_goodput(s.m, 50, 14.4, u.duration_s, &met, &frac, &rate);
    PB_CHECK_EQ_INT(met, 2);
    /* no bounds: every finished request */
    pb_metrics_goodput(s.m, 0, 0, u.duration_s, &met, &frac, &rate);
    PB_CHECK_EQ_INT(met, 3);
    sys_free(&s);
}

/* The per-request CSV's derived columns are the literals above. */
PB_TEST(hand_trace_requests_csv) {
    sys s;
    pb_request r[3];
    pb_trace t;
    run_hand_trace(&s, r, &t);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    PB_REQUIRE(f);
    pb_metrics_write_requests(s.m, f, "");
    fclose(f);
    /* request_id,arrival_s,first_token_s,finish_s,prompt_len,output_len,n,beam_width,
       ttft_ms,tpot_ms,e2el_ms,normalized_latency_s_per_token,preemptions,rejected,aborted */
    static const double want[3][8] = {
        {0, 0.040, 0.069, 10, 3, 40, 14.5, 69},
        {0, 0.040, 0.040, 20, 1, 40, NAN, 40},
        {0.050, 0.069, 0.083, 5, 2, 19, 14, 33},
    };
    static const double want_nl[3] = {0.023, 0.040, 0.0165};
    char *line = buf;
    for (int i = 0; i < 3; i++) {
        PB_REQUIRE(line && *line);
        char *end = strchr(line, '\n');
        PB_REQUIRE(end);
        *end = 0;
        char *cell[15];
        int k = 0;
        for (char *c = line; k < 15; k++) {
            cell[k] = c;
            char *comma = strchr(c, ',');
            if (!comma) { k++; break; }
            *comma = 0;
            c = comma + 1;
        }
        PB_REQUIRE(k == 15);
        PB_CHECK_EQ_INT(atoi(cell[0]), i);
        PB_CHECK_NEAR(strtod(cell[1], NULL), want[i][0], TOL);
        PB_CHECK_NEAR(strtod(cell[2], NULL), want[i][1], TOL);
        PB_CHECK_NEAR(strtod(cell[3], NULL), want[i][2], TOL);
        PB_CHECK_EQ_INT(atoi(cell[4]), (int)want[i][3]);
        PB_CHECK_EQ_INT(atoi(cell[5]), (int)want[i][4]);
        PB_CHECK_EQ_INT(atoi(cell[6]), i == 2 ? 2 : 1);
        PB_CHECK_NEAR(strtod(cell[8], NULL), want[i][5], 1e-9);
        if (isnan(want[i][6])) PB_CHECK(cell[9][0] == 0);
        else PB_CHECK_NEAR(strtod(cell[9], NULL), want[i][6], 1e-9);
        PB_CHECK_NEAR(strtod(cell[10], NULL), want[i][7], 1e-9);
        PB_CHECK_NEAR(strtod(cell[11], NULL), want_nl[i], TOL);
        PB_CHECK_EQ_INT(atoi(cell[12]), 0);
        PB_CHECK_EQ_INT(atoi(cell[13]), 0);
        PB_CHECK_EQ_INT(atoi(cell[14]), 0);
        line = end + 1;
    }
    free(buf);
    sys_free(&s);
}

PB_TEST_MAIN()
