/* test_client.c -- the client that sends a trace through the engine's door
 * (workloads/client.h), on the fixed-latency executor, every time checked exactly:
 *   - closed loop: a conversation's first turn is sent at its row's arrival_s, every
 *     later turn exactly think_time_s after the previous turn's finish (or rejection),
 *     whatever its row's arrival_s; rows without a conversation are sent on time;
 *   - a concurrency limit: never more than C requests outstanding (from the engine's
 *     own request rows), each request held back is sent at a finish time, in row order;
 *   - exponential think times: drawn per row from the seed (the same for every run),
 *     with the right mean;
 *   - pb_trace_append_history: the prompts and history lengths worked out by hand;
 *   - the YAML keys (conversation, max_concurrency) and their cross-key errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "engine_rig.h"
#include "pbtest.h"
#include "workload.h"

typedef struct {
    pb_test_sys s;
    pb_client *cl;
} run;

/* The engine (vllm, fixed executor: 1 ms a step + 0.1 ms a decode + 0.01 ms a prompt
   token) serving t through a client with cfg; checks every step. */
static pb_status run_client(run *R, const pb_trace *t, const pb_client_cfg *cfg, int32_t max_model_len) {
    memset(R, 0, sizeof *R);
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.n_gpu_blocks = 512;
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    PB_ASSERT((R->cl = pb_client_create(t, cfg, 7)) != NULL);
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.check_every_step = true;
    ep.max_model_len = max_model_len;
    ep.source = pb_client_source(R->cl);
    PB_ASSERT(pb_test_sys_init(&R->s, &pp, "vllm", &xp, &ep, false) == PB_OK);
    pb_trace none = {NULL, 0};
    pb_status st = pb_engine_run(R->s.e, &none, R->s.m);
    return st == PB_OK ? pb_client_check(R->cl) : st;
}

static void run_free(run *R) {
    pb_test_sys_free(&R->s);
    pb_client_destroy(R->cl);
}

static pb_request row(double t, int32_t prompt, int32_t out, int32_t conv, int32_t turn) {
    pb_request r = pb_request_make(t, prompt, out);
    r.conversation_id = conv;
    r.turn = turn;
    return r;
}

/* The engine's row of trace row r (via the client's send order); NULL if not sent. */
static const pb_req_metrics *sent_row(const run *R, int64_t r) {
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(R->s.m, &n);
    for (int64_t k = 0; k < n; k++)
        if (pb_client_row_of(R->cl, k) == r) return &rm[k];
    return NULL;
}

PB_TEST(closed_loop_turn_is_sent_think_time_after_the_answer) {
    /* two conversations of three turns (rows out of turn order, the later turns' times
       early and late) and a row of no conversation */
    pb_request rows[7] = {row(0.0, 40, 10, 5, 0), row(0.001, 30, 8, 9, 0), row(0.002, 50, 6, 5, 2),
                          row(0.003, 20, 4, -1, 0), row(0.5, 60, 12, 5, 1), row(9.0, 25, 5, 9, 1),
                          row(9.5, 35, 7, 9, 2)};
    pb_trace t = {rows, 7};
    for (int i = 0; i < 7; i++) rows[i].id = i;
    pb_client_cfg cfg = {.closed_loop = true, .think_time_s = 0.25, .think = PB_THINK_FIXED};
    run R;
    PB_REQUIRE(run_client(&R, &t, &cfg, 2048) == PB_OK);
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(R.s.m, &n);
    PB_REQUIRE(n == 7);
    for (int64_t k = 0; k < n; k++) PB_CHECK(rm[k].finished);
    /* first turns and the loose row: on time */
    PB_CHECK(sent_row(&R, 0)->arrival_s == 0.0 && sent_row(&R, 1)->arrival_s == 0.001 &&
             sent_row(&R, 3)->arrival_s == 0.003);
    /* conversation 5: turn 1 (row 4) after turn 0 (row 0), turn 2 (row 2) after turn 1 */
    PB_CHECK(sent_row(&R, 4)->arrival_s == sent_row(&R, 0)->finish_s + 0.25);
    PB_CHECK(sent_row(&R, 2)->arrival_s == sent_row(&R, 4)->finish_s + 0.25);
    /* conversation 9: rows 1 -> 5 -> 6, earlier than their rows' 9.0 and 9.5 */
    PB_CHECK(sent_row(&R, 5)->arrival_s == sent_row(&R, 1)->finish_s + 0.25);
    PB_CHECK(sent_row(&R, 6)->arrival_s == sent_row(&R, 5)->finish_s + 0.25);
    PB_CHECK(sent_row(&R, 6)->arrival_s < 9.0);
    /* the clock jumped over the think times: nothing ran then */
    PB_CHECK(sent_row(&R, 2)->finish_s > sent_row(&R, 2)->arrival_s);
    PB_CHECK_EQ_INT(pb_client_outstanding(R.cl), 0);
    run_free(&R);
}

PB_TEST(rejected_turn_releases_the_next_one) {
    /* turn 1's prompt is over the context (max_model_len 100): rejected at the clock of
       the step that looks at it; turn 2 follows it */
    pb_request rows[3] = {row(0.0, 40, 10, 0, 0), row(5.0, 150, 8, 0, 1), row(6.0, 30, 4, 0, 2)};
    pb_trace t = {rows, 3};
    for (int i = 0; i < 3; i++) rows[i].id = i;
    pb_client_cfg cfg = {.closed_loop = true, .think_time_s = 1.0};
    run R;
    PB_REQUIRE(run_client(&R, &t, &cfg, 100) == PB_OK);
    const pb_req_metrics *r0 = sent_row(&R, 0), *r1 = sent_row(&R, 1), *r2 = sent_row(&R, 2);
    PB_REQUIRE(r0 && r1 && r2);
    PB_CHECK(r0->finished && r1->rejected && r2->finished);
    PB_CHECK(r1->arrival_s == r0->finish_s + 1.0);
    PB_CHECK(r2->arrival_s == r1->arrival_s + 1.0);   /* rejected when it arrived: the clock had jumped to it */
    run_free(&R);
}

PB_TEST(concurrency_limit_holds_requests_until_a_finish) {
    enum { N = 12, C = 3 };
    pb_request rows[N];
    for (int i = 0; i < N; i++) {
        rows[i] = row(0.001 * i, 20 + 7 * i, 5 + (i * 5) % 11, -1, 0);
        rows[i].id = i;
    }
    pb_trace t = {rows, N};
    pb_client_cfg cfg = {.max_concurrency = C};
    run R;
    PB_REQUIRE(run_client(&R, &t, &cfg, 2048) == PB_OK);
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(R.s.m, &n);
    PB_REQUIRE(n == N);
    PB_CHECK_EQ_INT(pb_client_peak_outstanding(R.cl), C);
    for (int64_t k = 0; k < n; k++) {
        PB_CHECK(rm[k].finished);
        PB_CHECK_EQ_INT(pb_client_row_of(R.cl, k), k);   /* rows in order */
        int out = 0;   /* outstanding when k was sent: sent before it, finished after */
        for (int64_t j = 0; j < k; j++) out += rm[j].finish_s > rm[k].arrival_s;
        PB_CHECK(out < C);
        if (k < C) {
            PB_CHECK(rm[k].arrival_s == rows[k].arrival_s);
        } else {   /* held: sent at an earlier request's finish */
            bool at_finish = false;
            for (int64_t j = 0; j < k; j++) at_finish |= rm[j].finish_s == rm[k].arrival_s;
            PB_CHECK(at_finish && rm[k].arrival_s > rows[k].arrival_s);
        }
    }
    run_free(&R);
}

PB_TEST(closed_loop_under_a_limit) {
    /* one slot: the conversation's turn 1 waits for the loose row sent meanwhile */
    pb_request rows[3] = {row(0.0, 40, 10, 0, 0), row(0.0105, 30, 30, -1, 0), row(1.0, 30, 4, 0, 1)};
    pb_trace t = {rows, 3};
    for (int i = 0; i < 3; i++) rows[i].id = i;
    pb_client_cfg cfg = {.closed_loop = true, .think_time_s = 0.0, .max_concurrency = 1};
    run R;
    PB_REQUIRE(run_client(&R, &t, &cfg, 2048) == PB_OK);
    const pb_req_metrics *r0 = sent_row(&R, 0), *r1 = sent_row(&R, 1), *r2 = sent_row(&R, 2);
    PB_REQUIRE(r0 && r1 && r2);
    PB_CHECK(r1->arrival_s == r0->finish_s);   /* the loose row was ready first (0.0105 < turn 1) */
    PB_CHECK(r0->finish_s > 0.0105);
    PB_CHECK(r2->arrival_s == r1->finish_s);
    run_free(&R);
}

PB_TEST(exponential_think_times_are_drawn_per_row) {
    enum { N = 4000 };
    pb_request *rows = calloc(N, sizeof *rows);
    for (int i = 0; i < N; i++) {
        rows[i] = row(0, 8, 1, i / 2, i % 2);   /* pairs: turn 1 waits for turn 0 */
        rows[i].id = i;
    }
    pb_trace t = {rows, N};
    pb_client_cfg cfg = {.closed_loop = true, .think_time_s = 2.0, .think = PB_THINK_EXPONENTIAL};
    double sum = 0, first = 0;
    for (int rep = 0; rep < 2; rep++) {
        run R;
        PB_REQUIRE(run_client(&R, &t, &cfg, 2048) == PB_OK);
        double s = 0;
        for (int i = 1; i < N; i += 2) s += sent_row(&R, i)->arrival_s - sent_row(&R, i - 1)->finish_s;
        if (rep == 0) first = s;
        else PB_CHECK(s == first);   /* the same draws */
        sum = s;
        run_free(&R);
    }
    double mean = sum / (N / 2);   /* sd of the mean: 2 / sqrt(2000) = 0.045 */
    PB_CHECK(fabs(mean - 2.0) < 0.2);
    free(rows);
}

PB_TEST(append_history_resends_the_conversation) {
    pb_request rows[5] = {row(0, 10, 5, 3, 1), row(1, 20, 7, 3, 0), row(2, 4, 2, -1, 0), row(3, 6, 3, 3, 2),
                          row(4, 9, 9, 8, 0)};
    pb_trace t = {rows, 5};
    PB_CHECK_EQ_INT(pb_trace_append_history(&t), 2);
    /* conversation 3 in turn order: rows 1 (20 + 7), 0 (27 + 10, out 5), 3 (42 + 6) */
    PB_CHECK_EQ_INT(rows[1].prompt_len, 20);
    PB_CHECK_EQ_INT(rows[1].prefix_len, 0);
    PB_CHECK_EQ_INT(rows[0].prompt_len, 37);
    PB_CHECK_EQ_INT(rows[0].prefix_len, 27);
    PB_CHECK_EQ_INT(rows[3].prompt_len, 48);
    PB_CHECK_EQ_INT(rows[3].prefix_len, 42);
    PB_CHECK(pb_request_in_transcript(&rows[0]) && pb_request_in_transcript(&rows[3]));
    PB_CHECK_EQ_INT(rows[2].prompt_len, 4);
    PB_CHECK_EQ_INT(rows[4].prompt_len, 9);
}

PB_TEST(bad_settings_are_refused) {
    pb_request rows[1] = {row(0, 10, 5, -1, 0)};
    pb_trace t = {rows, 1};
    pb_client_cfg bad[] = {{.think_time_s = -1}, {.think_time_s = NAN}, {.max_concurrency = -2},
                           {.think = (pb_think_kind)7}};
    for (size_t i = 0; i < PB_ARRAY_LEN(bad); i++) PB_CHECK(pb_client_create(&t, &bad[i], 0) == NULL);
    PB_CHECK(!pb_client_active(&(pb_client_cfg){.think_time_s = 3}));
    PB_CHECK(pb_client_active(&(pb_client_cfg){.max_concurrency = 1}));
}

static pb_status wl(const char *yaml, pb_workload_cfg *c, pb_cfg_err *e) {
    pb_config *cf = NULL;
    pb_cfg_err_clear(e);
    if (pb_config_load_string("t.yaml", yaml, &cf, e)) return PB_ERR_INVALID;
    pb_status st = pb_workload_from_node(pb_node_get(pb_config_root(cf), "workload"), c, e);
    pb_config_destroy(cf);
    return st;
}

PB_TEST(yaml_keys_conversation_and_max_concurrency) {
    pb_workload_cfg c;
    pb_cfg_err e;
    PB_REQUIRE(wl("workload:\n  dataset: chatbot\n  rate: 1\n  conversation: {think_time_s: 4, think: exponential}\n"
                  "  max_concurrency: 16\n", &c, &e) == PB_OK);
    PB_CHECK(c.client.closed_loop && c.client.think_time_s == 4 && c.client.think == PB_THINK_EXPONENTIAL);
    PB_CHECK(c.client.max_concurrency == 16 && !c.history_append);
    PB_REQUIRE(wl("workload: {trace: x.csv, conversation: {history: append}, max_concurrency: 2}\n", &c, &e) == PB_OK);
    PB_CHECK(c.client.closed_loop && c.client.think_time_s == 0 && c.history_append);
    PB_REQUIRE(wl("workload: {dataset: sharegpt, rate: 1}\n", &c, &e) == PB_OK);
    PB_CHECK(!pb_client_active(&c.client));
    /* errors at the key */
    PB_CHECK(wl("workload:\n  dataset: sharegpt\n  rate: 1\n  conversation: {think_time_s: 1}\n", &c, &e) != PB_OK);
    PB_CHECK(strstr(e.msg, "t.yaml:4:") && strstr(e.msg, "conversation_id"));
    PB_CHECK(wl("workload:\n  dataset: chatbot\n  rate: 1\n  conversation: {history: append}\n", &c, &e) != PB_OK);
    PB_CHECK(strstr(e.msg, "t.yaml:4:") && strstr(e.msg, "twice"));
    PB_CHECK(wl("workload: {dataset: chatbot, rate: 1, max_concurrency: -1}\n", &c, &e) != PB_OK);
    PB_CHECK(strstr(e.msg, "max_concurrency"));
    PB_CHECK(wl("workload: {dataset: chatbot, rate: 1, conversation: {think: sometimes}}\n", &c, &e) != PB_OK);
    PB_CHECK(strstr(e.msg, "fixed|exponential"));
}

PB_TEST_MAIN()
