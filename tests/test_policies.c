/* test_policies.c -- chunked prefill and the policies built from the step's building
 * blocks (policy.h), step by step on the fixed-latency executor: a partial prefill
 * never samples and the first token comes with the completing chunk; decodes and
 * prefill chunks share a step within Sarathi's token budget; Sarathi admits prompts
 * longer than max_num_batched_tokens; `vllm` follows the engine's version while
 * vllm-v0.1 / vllm-v0.2 are fixed; a policy's own victim rule decides whom
 * to preempt; Sarathi under memory pressure in every preemption mode with the
 * invariants checked every step; the sarathi options; every policy's declared
 * options (pb_policy_keys): the registry's check, out-of-range values and another
 * policy's options rejected at file:line:col, defaults read from the declaration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_manager.h"
#include "engine.h"
#include "executor_fixed.h"
#include "pbtest.h"
#include "rng.h"

typedef struct {
    pb_kv_manager *kv;
    pb_policy *pol;
    pb_executor *ex;
    pb_engine *e;
    pb_metrics *m;
} sys;

/* policy by name with options as YAML text (NULL = none), or the given policy */
static void sys_init(sys *s, int32_t bs, int32_t gpu, int32_t cpu, const pb_engine_params *ep, const char *policy,
                     const char *options, pb_policy *given) {
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.block_size = bs;
    pp.n_gpu_blocks = gpu;
    pp.n_cpu_blocks = cpu;
    pp.watermark = 0;
    PB_ASSERT(pb_paged_kv_create(&pp, &s->kv) == PB_OK);
    pb_config *opts = NULL;
    if (options) PB_ASSERT(pb_config_load_string("options", options, &opts, NULL) == PB_OK);
    s->pol = given;
    if (!given) PB_ASSERT(pb_policy_create(policy, opts ? pb_config_root(opts) : NULL, &s->pol, NULL) == PB_OK);
    pb_config_destroy(opts);
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    PB_ASSERT(pb_executor_fixed_create(&xp, &s->ex) == PB_OK);
    PB_ASSERT(pb_engine_create(ep, s->kv, s->pol, s->ex, &s->e) == PB_OK);
    s->m = pb_metrics_create(true);
}

static void sys_free(sys *s) {
    pb_engine_destroy(s->e);
    pb_kv_destroy(s->kv);
    pb_policy_destroy(s->pol);
    pb_executor_destroy(s->ex);
    pb_metrics_destroy(s->m);
}

static pb_engine_params params(pb_preempt_mode pm) {
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.check_every_step = true;
    ep.preemption = pm;
    return ep;
}

static pb_request req(int64_t id, double t, int32_t p, int32_t o) {
    pb_request r = pb_request_make(t, p, o);
    r.id = id;
    return r;
}

/* the last batch's entry of group gid, or NULL */
static const pb_batch_seq *entry_of(const pb_engine *e, int32_t gid) {
    const pb_batch *b = pb_engine_last_batch(e);
    for (int32_t i = 0; i < b->n_seqs; i++)
        if (b->seqs[i].group_id == gid) return &b->seqs[i];
    return NULL;
}

PB_TEST(partial_prefill_never_samples_first_token_when_the_prompt_completes) {
    pb_engine_params ep = params(PB_PREEMPT_AUTO);
    sys s;
    sys_init(&s, 16, 64, 0, &ep, "sarathi", "token_budget: 16", NULL);
    pb_request r[1] = {req(0, 0, 50, 3)};
    pb_trace t = {r, 1};
    PB_REQUIRE(pb_engine_begin(s.e, &t, s.m) == PB_OK);
    static const int32_t chunks[] = {16, 16, 16, 2};   /* 50 prompt tokens, 16 a step */
    int32_t computed = 0;
    for (size_t k = 0; k < PB_ARRAY_LEN(chunks); k++) {
        bool done = false;
        PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK && !done);
        const pb_batch_seq *q = entry_of(s.e, 0);
        const pb_group *g = pb_engine_group(s.e, 0);
        PB_REQUIRE(q != NULL);
        bool last = k + 1 == PB_ARRAY_LEN(chunks);
        PB_CHECK(q->is_prefill);
        PB_CHECK_EQ_INT(q->n_cached, computed);
        PB_CHECK_EQ_INT(q->n_new, chunks[k]);
        PB_CHECK_EQ_INT(q->context_len, computed + chunks[k]);
        PB_CHECK_EQ_INT(q->sample, last);                  /* only the completing chunk samples */
        PB_CHECK_EQ_INT(g->n_generated, last ? 1 : 0);
        PB_CHECK_EQ_INT(g->prefill, !last);
        if (last) PB_CHECK(g->first_token_s == pb_engine_now(s.e));   /* set by the completing step */
        else PB_CHECK(g->first_token_s < 0);
        computed += chunks[k];
    }
    double ttft = pb_engine_group(s.e, 0)->first_token_s;
    bool done = false;
    while (!done) PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
    PB_CHECK_EQ_INT(pb_engine_steps(s.e), 4 + 2);       /* four chunks, then two decodes */
    PB_REQUIRE(pb_engine_end(s.e) == PB_OK);
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
    PB_CHECK(rm[0].finished && rm[0].first_token_s == ttft);
    sys_free(&s);
}

PB_TEST(decodes_and_prefill_chunks_share_a_step_within_the_budget) {
    enum { B = 16 };
    pb_engine_params ep = params(PB_PREEMPT_AUTO);
    sys s;
    sys_init(&s, 16, 256, 0, &ep, "sarathi", "token_budget: 16", NULL);
    pb_request r[4] = {req(0, 0, 8, 40), req(1, 0.0001, 5, 40), req(2, 0.01, 70, 5), req(3, 0.011, 33, 5)};
    pb_trace t = {r, 4};
    PB_REQUIRE(pb_engine_begin(s.e, &t, s.m) == PB_OK);
    bool done = false;
    int64_t steps = 0, mixed = 0;
    while (!done) {
        PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
        if (pb_engine_steps(s.e) == steps) continue;
        steps = pb_engine_steps(s.e);
        const pb_batch *b = pb_engine_last_batch(s.e);
        PB_CHECK(b->n_prefill_tokens + b->n_decode <= PB_MAX(b->n_decode, B));
        bool partial = false;
        for (int32_t i = 0; i < b->n_seqs; i++) partial |= !b->seqs[i].sample;
        mixed += partial && b->n_decode > 0;
    }
    PB_CHECK(mixed > 0);   /* a chunk of a long prompt rode along with decodes */
    PB_REQUIRE(pb_engine_end(s.e) == PB_OK);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK_EQ_INT(su.n_finished, 4);
    sys_free(&s);
}

PB_TEST(sarathi_admits_prompts_longer_than_max_num_batched_tokens) {
    pb_request r[2] = {req(0, 0, 100, 4), req(1, 0.001, 20, 4)};
    pb_trace t = {r, 2};
    static const char *pols[2] = {"vllm", "sarathi"};
    for (int k = 0; k < 2; k++) {
        pb_engine_params ep = params(PB_PREEMPT_AUTO);
        ep.max_num_batched_tokens = 64;
        sys s;
        sys_init(&s, 16, 64, 0, &ep, pols[k], NULL, NULL);
        PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
        pb_run_summary su;
        pb_metrics_summary(s.m, &su);
        PB_CHECK_EQ_INT(su.n_rejected, k == 0 ? 1 : 0);   /* vLLM: over the budget, never */
        PB_CHECK_EQ_INT(su.n_finished, k == 0 ? 1 : 2);
        sys_free(&s);
    }
}

/* request metrics of a run (caller frees) */
static pb_req_metrics *run_rows(const char *policy, pb_step_mode sm, int32_t max_paddings, const pb_trace *t,
                                int64_t *steps) {
    pb_engine_params ep = params(PB_PREEMPT_AUTO);
    ep.step_mode = sm;
    ep.max_paddings = max_paddings;
    sys s;
    sys_init(&s, 8, 120, 60, &ep, policy, NULL, NULL);
    PB_ASSERT(pb_engine_run(s.e, t, s.m) == PB_OK);
    *steps = pb_engine_steps(s.e);
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
    pb_req_metrics *out = malloc((size_t)n * sizeof *out);
    memcpy(out, rm, (size_t)n * sizeof *out);
    sys_free(&s);
    return out;
}

PB_TEST(vllm_follows_the_engine_vllm_v01_and_v02_are_fixed) {
    enum { N = 60 };
    pb_request r[N];
    pb_rng rng;
    pb_rng_seed(&rng, 4, 4);
    double at = 0;
    for (int i = 0; i < N; i++) {
        at += pb_rng_exp(&rng, 30.0);
        r[i] = req(i, at, 1 + (int32_t)pb_rng_below(&rng, 90), 1 + (int32_t)pb_rng_below(&rng, 60));
    }
    pb_trace t = {r, N};
    int64_t s_mixed, s_alt, s_v01, s_v02, s_alt256, s_v02dflt;
    pb_req_metrics *mixed = run_rows("vllm", PB_STEP_MIXED, 64, &t, &s_mixed);
    pb_req_metrics *alt = run_rows("vllm", PB_STEP_ALTERNATE, 64, &t, &s_alt);
    pb_req_metrics *v01 = run_rows("vllm-v0.1", PB_STEP_ALTERNATE, 64, &t, &s_v01);   /* ignores step_mode */
    pb_req_metrics *v02 = run_rows("vllm-v0.2", PB_STEP_MIXED, 64, &t, &s_v02);
    PB_CHECK(s_mixed != s_alt);   /* the two versions schedule differently ... */
    PB_CHECK_EQ_INT(s_v01, s_mixed);
    PB_CHECK_EQ_INT(s_v02, s_alt);
    PB_CHECK(memcmp(v01, mixed, N * sizeof *mixed) == 0);   /* ... and each named one is one of them */
    PB_CHECK(memcmp(v02, alt, N * sizeof *alt) == 0);
    /* vllm-v0.2 pads under v0.2's cap (256) when the system sets none (-1) */
    pb_req_metrics *alt256 = run_rows("vllm", PB_STEP_ALTERNATE, 256, &t, &s_alt256);
    pb_req_metrics *v02dflt = run_rows("vllm-v0.2", PB_STEP_MIXED, -1, &t, &s_v02dflt);
    PB_CHECK_EQ_INT(s_v02dflt, s_alt256);
    PB_CHECK(memcmp(v02dflt, alt256, N * sizeof *alt256) == 0);
    free(mixed);
    free(alt);
    free(v01);
    free(v02);
    free(alt256);
    free(v02dflt);
}

/* A policy of its own: the vLLM v0.1 step, but a group that cannot get its decode
   slots preempts itself instead of the latest arrival. */
static pb_group *victim_self(pb_sched *s, pb_group *needy, void *user) {
    (void)s;
    (void)user;
    return needy;
}

static pb_status selfish_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    pb_admit_rule r = {.token_budget = pb_sched_params(s)->max_num_batched_tokens};
    pb_status st = pb_sched_decode_running(s, victim_self, NULL);
    if (st == PB_OK && pb_sched_n_swapped_out(s) == 0) st = pb_sched_swap_in_fcfs(s);
    if (st == PB_OK && pb_sched_n_swapped(s) == 0) st = pb_sched_admit_waiting(s, &r, NULL);
    return st;
}

static const pb_policy_i SELFISH = {.name = "selfish", .schedule = selfish_schedule,
                                    .destroy = pb_policy_plain_destroy};

PB_TEST(a_victim_rule_decides_whom_to_preempt) {
    for (int k = 0; k < 2; k++) {   /* 0: vllm-v0.1 (latest arrival), 1: self */
        pb_engine_params ep = params(PB_PREEMPT_RECOMPUTE);
        pb_policy *own = NULL;
        if (k == 1) PB_REQUIRE(pb_policy_plain_create(&SELFISH, NULL, &own, NULL) == PB_OK);
        sys s;
        sys_init(&s, 4, 12, 0, &ep, "vllm-v0.1", NULL, own);
        pb_request r[3] = {req(0, 0, 8, 30), req(1, 0.0001, 8, 30), req(2, 0.0002, 8, 30)};
        pb_trace t = {r, 3};
        PB_REQUIRE(pb_engine_begin(s.e, &t, s.m) == PB_OK);
        bool done = false;
        int32_t first = -1;
        while (!done && first < 0) {
            PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
            for (int32_t i = 0; i < 3; i++)
                if (pb_metrics_requests(s.m, NULL)[i].n_recompute > 0) first = i;
        }
        /* all three need a block in the same step: FCFS order asks g0 first */
        PB_CHECK_EQ_INT(first, k == 0 ? 2 : 0);
        while (!done) PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
        PB_REQUIRE(pb_engine_end(s.e) == PB_OK);
        pb_run_summary su;
        pb_metrics_summary(s.m, &su);
        PB_CHECK_EQ_INT(su.n_finished, 3);
        sys_free(&s);
    }
}

PB_TEST(sarathi_under_memory_pressure_in_every_preemption_mode) {
    const pb_preempt_mode modes[3] = {PB_PREEMPT_AUTO, PB_PREEMPT_RECOMPUTE, PB_PREEMPT_SWAP};
    static const char *budgets[2] = {"token_budget: 9", "token_budget: 100"};
    for (int pm = 0; pm < 3; pm++)
        for (int bi = 0; bi < 2; bi++) {
            pb_engine_params ep = params(modes[pm]);
            ep.max_num_seqs = 24;
            ep.seed = 5;
            sys s;
            sys_init(&s, 8, 60, 40, &ep, "sarathi", budgets[bi], NULL);
            enum { N = 80 };
            pb_request r[N];
            pb_rng rng;
            pb_rng_seed(&rng, 17, (uint64_t)(pm * 2 + bi));
            double at = 0;
            for (int i = 0; i < N; i++) {
                at += pb_rng_exp(&rng, 50.0);
                r[i] = req(i, at, 1 + (int32_t)pb_rng_below(&rng, 120), 1 + (int32_t)pb_rng_below(&rng, 60));
                int32_t kind = (int32_t)pb_rng_below(&rng, 4);
                if (kind == 1) r[i].n = 2 + (int32_t)pb_rng_below(&rng, 2);
                if (kind == 2) r[i].n = r[i].beam_width = 2 + (int32_t)pb_rng_below(&rng, 2);
                if (kind == 3) {   /* a shared prefix (the paged manager's prefix pool) */
                    r[i].prefix_id = (int32_t)pb_rng_below(&rng, 2);
                    r[i].prefix_len = 20 + 13 * r[i].prefix_id;
                    r[i].prompt_len += r[i].prefix_len;
                }
            }
            pb_trace t = {r, N};
            PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);   /* pb_engine_check every step */
            pb_run_summary su;
            pb_metrics_summary(s.m, &su);
            PB_CHECK_EQ_INT(su.n_finished, N);
            PB_CHECK(su.n_preempt_recompute + su.n_preempt_swap > 0);
            if (modes[pm] == PB_PREEMPT_RECOMPUTE) PB_CHECK_EQ_INT(su.n_preempt_swap, 0);
            PB_CHECK(pb_metrics_check(s.m) == PB_OK);
            sys_free(&s);
        }
}

PB_TEST(policy_names_and_sarathi_options) {
    static const char *names[] = {"vllm", "vllm-v0.1", "vllm-v0.2", "sarathi", "spf", "priority"};
    for (size_t i = 0; i < PB_ARRAY_LEN(names); i++) {
        PB_CHECK(pb_policy_find(names[i]) != NULL);
        pb_policy *p = NULL;
        PB_CHECK(pb_policy_create(names[i], NULL, &p, NULL) == PB_OK && !strcmp(p->iface->name, names[i]));
        pb_policy_destroy(p);
    }
    static const char *bad[] = {"token_budget: 0", "token_budget: 99999999", "token_budget: x", "chunk: 4"};
    for (size_t i = 0; i < PB_ARRAY_LEN(bad); i++) {
        pb_config *c = NULL;
        pb_cfg_err err;
        memset(&err, 0, sizeof err);
        PB_REQUIRE(pb_config_load_string("opts.yaml", bad[i], &c, &err) == PB_OK);
        pb_policy *p = NULL;
        PB_CHECK(pb_policy_create("sarathi", pb_config_root(c), &p, &err) == PB_ERR_INVALID && !p);
        PB_CHECK_STR_CONTAINS(err.msg, "opts.yaml:1:");
        pb_config_destroy(c);
    }
    pb_config *c = NULL;
    PB_REQUIRE(pb_config_load_string("opts.yaml", "token_budget: 3", &c, NULL) == PB_OK);
    pb_policy *p = NULL;
    PB_CHECK(pb_policy_create("vllm-v0.2", pb_config_root(c), &p, NULL) == PB_ERR_INVALID);   /* takes none */
    PB_CHECK(pb_policy_create("sarathi", pb_config_root(c), &p, NULL) == PB_OK);
    pb_policy_destroy(p);
    pb_config_destroy(c);
}

/* an option table with one problem each: pb_policy_keys_check must say so */
PB_TEST(policy_keys_check_finds_bad_declarations) {
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    PB_CHECK(pb_policy_registry_check(&err) == PB_OK && err.count == 0);
    if (err.count) fprintf(stderr, "%s\n", err.msg);
    static const pb_policy_option BAD[][2] = {
        {{.name = "b", .type = PB_T_INT, .lo = 1, .hi = 9, .dflt = "0", .doc = "default out of range"}, {0}},
        {{.name = "b", .type = PB_T_INT, .lo = 1, .hi = 9, .doc = "no default"}, {0}},
        {{.name = "b", .type = PB_T_NUM, .dflt = "1", .doc = "no range"}, {0}},
        {{.name = "b", .type = PB_T_ENUM, .choices = "x|y", .dflt = "z", .doc = "default not a choice"}, {0}},
        {{.name = "b", .type = PB_T_BOOL, .dflt = "true", .doc = "a type an option cannot have"}, {0}},
        {{.name = "b", .type = PB_T_ENUM, .choices = "x|y", .dflt = "x"}, {0}},   /* no doc */
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(BAD); i++) {
        pb_policy_keys k = {BAD[i], NULL};
        pb_cfg_err_clear(&err);
        PB_CHECK(pb_policy_keys_check("bad", &k, &err) == PB_ERR_INVALID);
        PB_CHECK_STR_CONTAINS(err.msg, "bad: option 'b'");
    }
    static const pb_policy_option TWICE[] = {
        {.name = "b", .type = PB_T_INT, .lo = 0, .hi = 1, .dflt = "1", .doc = "d"},
        {.name = "b", .type = PB_T_INT, .lo = 0, .hi = 1, .dflt = "1", .doc = "d"},
        {0},
    };
    pb_policy_keys k = {TWICE, NULL};
    pb_cfg_err_clear(&err);
    PB_CHECK(pb_policy_keys_check("bad", &k, &err) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(err.msg, "declared twice");
    /* a good one, read back: defaults from the table, values from the node */
    static const pb_policy_option GOOD[] = {
        {.name = "n", .type = PB_T_INT, .lo = 1, .hi = 9, .dflt = "3", .doc = "an int"},
        {.name = "x", .type = PB_T_NUM, .lo = 0, .hi = 1, .dflt = "0.5", .doc = "a number"},
        {.name = "e", .type = PB_T_ENUM, .choices = "p|q", .dflt = "q", .doc = "a choice"},
        {0},
    };
    pb_policy_keys g = {GOOD, "step_mode"};
    pb_cfg_err_clear(&err);
    PB_CHECK(pb_policy_keys_check("good", &g, &err) == PB_OK);
    PB_CHECK(pb_policy_opt_int(&g, NULL, "n") == 3 && pb_policy_opt_num(&g, NULL, "x") == 0.5);
    PB_CHECK(!strcmp(pb_policy_opt_str(&g, NULL, "e"), "q"));
    pb_config *c = NULL;
    PB_REQUIRE(pb_config_load_string("g.yaml", "n: 9\nx: 0.25\ne: p\n", &c, &err) == PB_OK);
    const pb_node *o = pb_config_root(c);
    PB_CHECK(pb_policy_opts_check("good", &g, o, &err) == PB_OK);
    PB_CHECK(pb_policy_opt_int(&g, o, "n") == 9 && pb_policy_opt_num(&g, o, "x") == 0.25);
    PB_CHECK(!strcmp(pb_policy_opt_str(&g, o, "e"), "p"));
    pb_config_destroy(c);
}

/* Every registered policy's declared options, whatever they are: a value out of its
   range (or not a choice) is an error at file:line:col naming the key; an option of
   one policy given to another that does not declare it is an error at the key. */
PB_TEST(declared_options_are_checked_at_their_position) {
    int n_range = 0, n_foreign = 0;
    for (const pb_policy_entry *e = pb_policy_registry; e->name; e++) {
        pb_policy *p = NULL;
        PB_CHECK(pb_policy_create(e->name, NULL, &p, NULL) == PB_OK);   /* every default is valid */
        pb_policy_destroy(p);
        for (const pb_policy_option *o = e->keys->options; o && o->name; o++) {
            char yaml[128], want[160];
            if (o->type == PB_T_ENUM) snprintf(yaml, sizeof yaml, "%s: not-a-choice\n", o->name);
            else snprintf(yaml, sizeof yaml, "%s: %.0f\n", o->name, o->hi + 1 + fabs(o->hi));
            snprintf(want, sizeof want, "opts.yaml:1:%d: %s: ", (int)strlen(o->name) + 3, o->name);
            pb_config *c = NULL;
            pb_cfg_err err;
            pb_cfg_err_clear(&err);
            PB_REQUIRE(pb_config_load_string("opts.yaml", yaml, &c, &err) == PB_OK);
            PB_CHECK(pb_policy_create(e->name, pb_config_root(c), &p, &err) == PB_ERR_INVALID && !p);
            PB_CHECK_STR_CONTAINS(err.msg, want);
            n_range++;
            pb_config_destroy(c);
            /* the same option, in range (its default), given to every policy not declaring it */
            snprintf(yaml, sizeof yaml, "%s: %s\n", o->name, o->dflt);
            PB_REQUIRE(pb_config_load_string("opts.yaml", yaml, &c, &err) == PB_OK);
            for (const pb_policy_entry *d = pb_policy_registry; d->name; d++) {
                pb_cfg_err_clear(&err);
                bool takes = pb_policy_option_find(d->keys, o->name) != NULL;
                PB_CHECK(pb_policy_create(d->name, pb_config_root(c), &p, &err) == (takes ? PB_OK : PB_ERR_INVALID));
                pb_policy_destroy(p);
                if (takes) continue;
                snprintf(want, sizeof want, "opts.yaml:1:1: policy %s", d->name);
                PB_CHECK_STR_CONTAINS(err.msg, want);
                snprintf(want, sizeof want, "'%s'", o->name);
                PB_CHECK_STR_CONTAINS(err.msg, want);
                n_foreign++;
            }
            pb_config_destroy(c);
        }
    }
    PB_CHECK(n_range >= 4 && n_foreign >= 4 * 6);   /* sarathi, priority x2, orca, ft; the rest take none */
}

PB_TEST_MAIN()
