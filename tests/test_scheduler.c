/* test_scheduler.c -- the vLLM scheduling rules (paper §4.5, docs/DESIGN.md §3) observed
 * step by step: preemption of the latest arrival first, all-or-nothing groups, the
 * swap bound, no admission while anything is swapped, recompute re-prefills prompt +
 * generated tokens in one step, never-fitting prompts rejected, token and sequence
 * budgets, the v0.2 alternating step structure and its padded prompt batches
 * (max_paddings, n_padded_tokens), a second policy (spf), the priority policy's order
 * and aging (no starvation), the policy registry. */
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
    pb_engine_params ep;
} sys;

static void sys_init(sys *s, int32_t bs, int32_t gpu, int32_t cpu, const pb_engine_params *ep,
                     const char *policy) {
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.block_size = bs;
    pp.n_gpu_blocks = gpu;
    pp.n_cpu_blocks = cpu;
    pp.watermark = 0;
    PB_ASSERT(pb_paged_kv_create(&pp, &s->kv) == PB_OK);
    PB_ASSERT(pb_policy_create(policy, NULL, &s->pol, NULL) == PB_OK);
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    PB_ASSERT(pb_executor_fixed_create(&xp, &s->ex) == PB_OK);
    s->ep = *ep;
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

static pb_request req(int64_t id, double t, int32_t p, int32_t o, int32_t n, int32_t beam) {
    pb_request r = pb_request_make(t, p, o);
    r.id = id;
    r.n = n;
    r.beam_width = beam;
    return r;
}

static pb_engine_params params(pb_preempt_mode pm, pb_step_mode sm) {
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.check_every_step = true;
    ep.preemption = pm;
    ep.step_mode = sm;
    return ep;
}

PB_TEST(preempts_latest_arrival_first) {
    pb_engine_params ep = params(PB_PREEMPT_RECOMPUTE, PB_STEP_MIXED);
    sys s;
    sys_init(&s, 4, 12, 0, &ep, "vllm");
    pb_request r[3] = {req(0, 0, 8, 30, 1, 1), req(1, 0.0001, 8, 30, 1, 1), req(2, 0.0002, 8, 30, 1, 1)};
    pb_trace t = {r, 3};
    PB_REQUIRE(pb_engine_begin(s.e, &t, s.m) == PB_OK);
    bool done = false, seen = false;
    while (!done) {
        PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
        const pb_req_metrics *r = pb_metrics_requests(s.m, NULL);
        if (!seen && r[0].n_recompute + r[1].n_recompute + r[2].n_recompute > 0) {
            seen = true;
            PB_CHECK_EQ_INT(r[2].n_recompute, 1);   /* the latest arrival goes first */
            PB_CHECK_EQ_INT(r[0].n_recompute, 0);
            PB_CHECK_EQ_INT(r[1].n_recompute, 0);
        }
    }
    PB_CHECK(seen);
    PB_REQUIRE(pb_engine_end(s.e) == PB_OK);
    PB_CHECK_EQ_INT(pb_metrics_requests(s.m, NULL)[0].n_recompute, 0);   /* earliest never preempted */
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK_EQ_INT(su.n_finished, 3);
    sys_free(&s);
}

/* run a trace step by step with per-step rule checks */
typedef struct {
    int64_t prefill_resumed, swapped_steps, admissions_while_swapped, groups_split, budget_violations,
        mixed_alternate_steps, cpu_over_gpu, prefill_wrong;
    /* padded prompt batches (alternate steps with max_paddings >= 0) */
    int64_t padded_steps, padded_size_wrong, padding_over_cap, padded_over_budget, max_padding_seen;
} rules;

static void run_checked(sys *s, pb_trace *t, rules *ru) {
    memset(ru, 0, sizeof *ru);
    PB_REQUIRE(pb_engine_begin(s->e, t, s->m) == PB_OK);
    bool done = false;
    int64_t steps = 0;
    int32_t *gen_before = calloc((size_t)t->n, sizeof(int32_t));
    while (!done) {
        for (int64_t i = 0; i < t->n; i++) {   /* no group: not arrived (0) or done */
            const pb_group *g = pb_engine_group(s->e, i);
            gen_before[i] = g ? g->n_generated : 0;
        }
        PB_REQUIRE(pb_engine_step(s->e, &done) == PB_OK);
        if (pb_engine_steps(s->e) == steps) continue;
        steps = pb_engine_steps(s->e);
        const pb_batch *b = pb_engine_last_batch(s->e);
        int64_t nst;
        const pb_step_metrics *st = pb_metrics_steps(s->m, &nst);
        if (nst == 0) continue;
        const pb_step_metrics *sm = &st[nst - 1];
        int32_t npre = 0, ndec = 0, pre_groups = 0, longest = 0, last_gid = -1;
        int64_t len_sum = 0;
        for (int32_t i = 0; i < b->n_seqs; i++) {
            const pb_batch_seq *q = &b->seqs[i];
            if (!q->is_prefill) { ndec++; continue; }
            npre++;
            longest = PB_MAX(longest, q->context_len);
            len_sum += q->context_len;
            if (q->group_id != last_gid) pre_groups++;   /* a group's seqs are adjacent */
            last_gid = q->group_id;
            int32_t gid = q->group_id;
            const pb_group *g = pb_engine_group(s->e, gid);
            /* prefill = prompt + every token generated so far, in one step */
            if (q->context_len != g->prompt_len + gen_before[gid] || q->n_new != q->context_len - q->n_cached)
                ru->prefill_wrong++;
            if (gen_before[gid] > 0) ru->prefill_resumed++;
        }
        if (npre && ndec) ru->mixed_alternate_steps++;
        bool padded = s->ep.step_mode == PB_STEP_ALTERNATE && s->ep.max_paddings >= 0 && npre > 0;
        int64_t padded_size = (int64_t)npre * longest;
        if (npre > 0) ru->max_padding_seen = PB_MAX(ru->max_padding_seen, padded_size - len_sum);
        if (b->n_padded_tokens != (padded ? padded_size : 0)) ru->padded_size_wrong++;
        if (padded) {
            ru->padded_steps++;
            if (pre_groups > 1 && padded_size - len_sum > s->ep.max_paddings) ru->padding_over_cap++;
            if (pre_groups > 1 && padded_size > s->ep.max_num_batched_tokens) ru->padded_over_budget++;
        }
        if (sm->n_swapped > 0) {
            ru->swapped_steps++;
            if (npre > 0) ru->admissions_while_swapped++;
        }
        if (b->n_seqs > s->ep.max_num_seqs) ru->budget_violations++;
        if (b->n_prefill_tokens + b->n_decode > s->ep.max_num_batched_tokens && npre > 1) ru->budget_violations++;
        if (sm->mem.cpu_blocks_used > sm->mem.gpu_blocks_total) ru->cpu_over_gpu++;
        /* all-or-nothing: every sequence of a group is where the group is */
        for (int64_t i = 0; i < t->n; i++) {
            const pb_group *g = pb_engine_group(s->e, i);
            for (int32_t k = 0; g && k < g->n_seqs; k++) {
                bool on_cpu = false;
                int32_t n;
                const int32_t *tb = pb_paged_table(s->kv, g->seqs[k], &n, &on_cpu);
                bool ok = g->state == PB_GROUP_RUNNING ? (tb && !on_cpu)
                        : g->state == PB_GROUP_SWAPPED ? (tb && on_cpu) : tb == NULL;
                if (!ok) ru->groups_split++;
            }
        }
    }
    free(gen_before);
    PB_REQUIRE(pb_engine_end(s->e) == PB_OK);
}

static void make_trace(pb_request *r, int n, uint64_t seed, bool multi) {
    pb_rng rng;
    pb_rng_seed(&rng, seed, 9);
    double t = 0;
    for (int i = 0; i < n; i++) {
        t += pb_rng_exp(&rng, 200.0);
        int32_t k = multi ? (int32_t)pb_rng_below(&rng, 3) : 0;
        r[i] = req(i, t, 4 + (int32_t)pb_rng_below(&rng, 60), 2 + (int32_t)pb_rng_below(&rng, 60),
                   k == 1 ? 3 : 1, k == 2 ? 2 : 1);
    }
}

PB_TEST(swap_rules_all_or_nothing_no_admission_while_swapped) {
    pb_engine_params ep = params(PB_PREEMPT_SWAP, PB_STEP_MIXED);
    ep.max_num_seqs = 32;
    sys s;
    sys_init(&s, 4, 64, 1000, &ep, "vllm");
    PB_CHECK_EQ_INT(pb_paged_cpu(s.kv)->n_blocks, 64);   /* swap bound: <= GPU blocks */
    enum { N = 80 };
    pb_request r[N];
    make_trace(r, N, 1, true);
    pb_trace t = {r, N};
    rules ru;
    run_checked(&s, &t, &ru);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK(su.n_preempt_swap > 0);
    PB_CHECK(ru.swapped_steps > 0);
    PB_CHECK_EQ_INT(ru.admissions_while_swapped, 0);
    PB_CHECK_EQ_INT(ru.groups_split, 0);
    PB_CHECK_EQ_INT(ru.cpu_over_gpu, 0);
    PB_CHECK_EQ_INT(ru.prefill_wrong, 0);
    PB_CHECK_EQ_INT(ru.budget_violations, 0);
    PB_CHECK_EQ_INT(su.n_finished + su.n_rejected, N);
    PB_CHECK(su.swap_blocks > 0);
    sys_free(&s);
}

PB_TEST(recompute_resumes_with_prompt_plus_generated) {
    pb_engine_params ep = params(PB_PREEMPT_RECOMPUTE, PB_STEP_MIXED);
    sys s;
    sys_init(&s, 4, 48, 0, &ep, "vllm");
    enum { N = 60 };
    pb_request r[N];
    make_trace(r, N, 2, false);
    pb_trace t = {r, N};
    rules ru;
    run_checked(&s, &t, &ru);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK(su.n_preempt_recompute > 0);
    PB_CHECK_EQ_INT(su.n_preempt_swap, 0);
    PB_CHECK(ru.prefill_resumed > 0);     /* re-prefills that include generated tokens */
    PB_CHECK_EQ_INT(ru.prefill_wrong, 0);
    PB_CHECK_EQ_INT(ru.groups_split, 0);
    PB_CHECK_EQ_INT(su.n_finished, N);
    sys_free(&s);
}

PB_TEST(auto_mode_recompute_single_swap_multi) {
    pb_engine_params ep = params(PB_PREEMPT_AUTO, PB_STEP_MIXED);
    sys s;
    sys_init(&s, 4, 64, 64, &ep, "vllm");
    enum { N = 80 };
    pb_request r[N];
    make_trace(r, N, 3, true);
    pb_trace t = {r, N};
    rules ru;
    run_checked(&s, &t, &ru);
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
    int64_t single_swapped = 0, multi_recomputed = 0, pre = 0;
    for (int i = 0; i < N; i++) {
        bool multi = r[i].n > 1 || r[i].beam_width > 1;
        if (!multi && rm[i].n_swap) single_swapped++;
        if (multi && rm[i].n_recompute) multi_recomputed++;   /* only when the CPU is full */
        pre += rm[i].n_swap + rm[i].n_recompute;
    }
    PB_CHECK(pre > 0);
    PB_CHECK_EQ_INT(single_swapped, 0);
    PB_CHECK_EQ_INT(ru.admissions_while_swapped, 0);
    PB_CHECK_EQ_INT(ru.groups_split, 0);
    (void)multi_recomputed;
    sys_free(&s);
}

PB_TEST(never_fitting_prompts_rejected_not_retried) {
    pb_engine_params ep = params(PB_PREEMPT_AUTO, PB_STEP_MIXED);
    ep.max_model_len = 500;
    sys s;
    sys_init(&s, 4, 50, 0, &ep, "vllm");   /* 200 slots */
    pb_request r[4] = {req(0, 0, 10, 5, 1, 1), req(1, 0.001, 300, 5, 1, 1) /* > 200 slots */,
                       req(2, 0.002, 600, 5, 1, 1) /* > max_model_len */, req(3, 0.003, 10, 5, 1, 1)};
    pb_trace t = {r, 4};
    PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
    PB_CHECK(rm[0].finished && rm[3].finished);
    PB_CHECK(rm[1].rejected && rm[2].rejected);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK_EQ_INT(su.n_rejected, 2);
    PB_CHECK(su.n_steps < 20);   /* not retried forever */
    sys_free(&s);
}

PB_TEST(budgets_max_num_seqs_and_batched_tokens) {
    pb_engine_params ep = params(PB_PREEMPT_AUTO, PB_STEP_MIXED);
    ep.max_num_seqs = 5;
    ep.max_num_batched_tokens = 100;
    sys s;
    sys_init(&s, 16, 1000, 100, &ep, "vllm");
    enum { N = 40 };
    pb_request r[N];
    for (int i = 0; i < N; i++) r[i] = req(i, 0, 30, 10, 1, 1);
    pb_trace t = {r, N};
    rules ru;
    run_checked(&s, &t, &ru);
    PB_CHECK_EQ_INT(ru.budget_violations, 0);
    int64_t nst;
    const pb_step_metrics *st = pb_metrics_steps(s.m, &nst);
    int32_t max_seqs = 0;
    int64_t max_tok = 0;
    for (int64_t i = 0; i < nst; i++) {
        max_seqs = PB_MAX(max_seqs, st[i].n_seqs);
        max_tok = PB_MAX(max_tok, st[i].prefill_tokens + st[i].decode_tokens);
    }
    PB_CHECK_EQ_INT(max_seqs, 5);
    PB_CHECK(max_tok <= 100);
    sys_free(&s);
}

PB_TEST(alternate_steps_never_mix_prompts_and_decodes) {
    pb_engine_params ep = params(PB_PREEMPT_AUTO, PB_STEP_ALTERNATE);
    sys s;
    sys_init(&s, 4, 64, 64, &ep, "vllm");
    enum { N = 60 };
    pb_request r[N];
    make_trace(r, N, 4, true);
    pb_trace t = {r, N};
    rules ru;
    run_checked(&s, &t, &ru);
    PB_CHECK_EQ_INT(ru.mixed_alternate_steps, 0);
    PB_CHECK_EQ_INT(ru.prefill_wrong, 0);
    PB_CHECK_EQ_INT(ru.groups_split, 0);
    /* the mixed structure does mix them on the same trace */
    pb_engine_params ep2 = params(PB_PREEMPT_AUTO, PB_STEP_MIXED);
    sys s2;
    sys_init(&s2, 4, 64, 64, &ep2, "vllm");
    rules ru2;
    run_checked(&s2, &t, &ru2);
    PB_CHECK(ru2.mixed_alternate_steps > 0);
    sys_free(&s);
    sys_free(&s2);
}

/* bursts of short (8-16) and long (200-260 token) prompts: the padding of a
   [prompts, longest] batch is large unless capped */
static void make_mixed_lengths(pb_request *r, int n, uint64_t seed) {
    pb_rng rng;
    pb_rng_seed(&rng, seed, 11);
    for (int i = 0; i < n; i++) {
        bool lng = pb_rng_below(&rng, 2) == 0;
        int32_t p = lng ? 200 + (int32_t)pb_rng_below(&rng, 61) : 8 + (int32_t)pb_rng_below(&rng, 9);
        r[i] = req(i, 0.5 * (i / 20) + 0.0001 * i, p, 4 + (int32_t)pb_rng_below(&rng, 20), 1, 1);
    }
}

PB_TEST(padded_prompt_steps_hold_max_paddings_and_carry_their_size) {
    enum { N = 100 };
    pb_request r[N];
    make_mixed_lengths(r, N, 5);
    pb_trace t = {r, N};
    /* v0.2.2+: padded prompt-only steps under a padding cap of 64 */
    pb_engine_params ep = params(PB_PREEMPT_AUTO, PB_STEP_ALTERNATE);
    ep.max_num_batched_tokens = 2048;
    ep.max_paddings = 64;
    sys s;
    sys_init(&s, 16, 4000, 0, &ep, "vllm");
    rules ru;
    run_checked(&s, &t, &ru);
    PB_CHECK(ru.padded_steps > 0);
    PB_CHECK_EQ_INT(ru.mixed_alternate_steps, 0);
    PB_CHECK_EQ_INT(ru.padded_size_wrong, 0);
    PB_CHECK_EQ_INT(ru.padding_over_cap, 0);
    PB_CHECK_EQ_INT(ru.padded_over_budget, 0);
    PB_CHECK_EQ_INT(ru.prefill_wrong, 0);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK_EQ_INT(su.n_finished, N);
    /* unpadded alternate steps (v0.2.0-0.2.1) on the same trace: the cap would bind,
       and no batch claims a padded size */
    pb_engine_params ep2 = ep;
    ep2.max_paddings = -1;
    sys s2;
    sys_init(&s2, 16, 4000, 0, &ep2, "vllm");
    rules ru2;
    run_checked(&s2, &t, &ru2);
    PB_CHECK(ru2.max_padding_seen > 64);
    PB_CHECK_EQ_INT(ru2.padded_steps, 0);
    PB_CHECK_EQ_INT(ru2.padded_size_wrong, 0);
    /* mixed steps (v0.1): never padded, whatever max_paddings says */
    pb_engine_params ep3 = ep;
    ep3.step_mode = PB_STEP_MIXED;
    sys s3;
    sys_init(&s3, 16, 4000, 0, &ep3, "vllm");
    rules ru3;
    run_checked(&s3, &t, &ru3);
    PB_CHECK_EQ_INT(ru3.padded_steps, 0);
    PB_CHECK_EQ_INT(ru3.padded_size_wrong, 0);
    PB_CHECK(ru3.mixed_alternate_steps > 0);
    /* a tighter budget binds the padded size: 4 prompts of ~250 exceed 1000 */
    pb_engine_params ep4 = ep;
    ep4.max_num_batched_tokens = 1000;
    ep4.max_paddings = 100000;
    sys s4;
    sys_init(&s4, 16, 4000, 0, &ep4, "vllm");
    rules ru4;
    run_checked(&s4, &t, &ru4);
    PB_CHECK(ru4.padded_steps > 0);
    PB_CHECK_EQ_INT(ru4.padded_over_budget, 0);
    PB_CHECK_EQ_INT(ru4.padded_size_wrong, 0);
    sys_free(&s);
    sys_free(&s2);
    sys_free(&s3);
    sys_free(&s4);
}

PB_TEST(v02_rejects_prompts_over_the_limit_and_counts_future_seqs) {
    /* prompt_limit = min(max_model_len 2048, max_num_batched_tokens 300) */
    pb_engine_params ep = params(PB_PREEMPT_AUTO, PB_STEP_ALTERNATE);
    ep.max_num_batched_tokens = 300;
    ep.max_paddings = 256;
    ep.max_num_seqs = 4;
    sys s;
    sys_init(&s, 16, 400, 400, &ep, "vllm");
    pb_request r[4] = {req(0, 0, 20, 10, 3, 1), req(1, 0.0001, 301, 10, 1, 1), req(2, 0.0002, 20, 10, 3, 1),
                       req(3, 0.0003, 300, 10, 1, 1)};
    pb_trace t = {r, 4};
    PB_REQUIRE(pb_engine_begin(s.e, &t, s.m) == PB_OK);
    bool done = false, both_n3_running = false;
    while (!done) {
        PB_REQUIRE(pb_engine_step(s.e, &done) == PB_OK);
        /* n = 3 each: the sequence budget 4 never holds both groups at once, even
           while each still has a single prompt sequence */
        const pb_group *g0 = pb_engine_group(s.e, 0), *g2 = pb_engine_group(s.e, 2);
        if (g0 && g0->state == PB_GROUP_RUNNING && g2 && g2->state == PB_GROUP_RUNNING)
            both_n3_running = true;
    }
    PB_REQUIRE(pb_engine_end(s.e) == PB_OK);
    PB_CHECK(!both_n3_running);
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
    PB_CHECK(rm[1].rejected);    /* 301 > 300 */
    PB_CHECK(!rm[3].rejected);   /* 300 fits */
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK_EQ_INT(su.n_rejected, 1);
    PB_CHECK_EQ_INT(su.n_finished, 3);
    sys_free(&s);
}

PB_TEST(spf_policy_admits_shortest_prompt_first) {
    const int32_t prompts[4] = {50, 10, 40, 20};
    double first[2][4];
    const char *pols[2] = {"vllm", "spf"};
    for (int p = 0; p < 2; p++) {
        pb_engine_params ep = params(PB_PREEMPT_AUTO, PB_STEP_MIXED);
        ep.max_num_seqs = 1;   /* one request at a time */
        sys s;
        sys_init(&s, 16, 100, 0, &ep, pols[p]);
        pb_request r[5];
        r[0] = req(0, 0, 5, 5, 1, 1);   /* runs first; the others queue meanwhile */
        for (int i = 0; i < 4; i++) r[i + 1] = req(i + 1, 0.0001 * (i + 1), prompts[i], 5, 1, 1);
        pb_trace t = {r, 5};
        PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
        int64_t n;
        const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
        for (int i = 0; i < 4; i++) first[p][i] = rm[i + 1].first_token_s;
        sys_free(&s);
    }
    /* FCFS: arrival order; SPF: 10, 20, 40, 50 */
    PB_CHECK(first[0][0] < first[0][1] && first[0][1] < first[0][2] && first[0][2] < first[0][3]);
    PB_CHECK(first[1][1] < first[1][3] && first[1][3] < first[1][2] && first[1][2] < first[1][0]);
}

/* The scheduler with policy `priority` and its options given as YAML text. */
static void sys_init_prio(sys *s, const pb_engine_params *ep, const char *opts_yaml) {
    pb_config *c = NULL;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_ASSERT(pb_config_load_string("prio.yaml", opts_yaml, &c, &e) == PB_OK);
    sys_init(s, 16, 1000, 0, ep, "vllm");
    pb_engine_destroy(s->e);
    pb_policy_destroy(s->pol);
    PB_ASSERT(pb_policy_create("priority", pb_config_root(c), &s->pol, &e) == PB_OK);
    PB_ASSERT(pb_engine_create(ep, s->kv, s->pol, s->ex, &s->e) == PB_OK);
    pb_config_destroy(c);
}

PB_TEST(priority_policy_orders_by_aged_priority) {
    /* four requests queue behind r0 (max_num_seqs 1), 1 ms apart:
       A prompt 50 out 5, B 10/5, C 40/5, D 20/100 */
    const int32_t prompts[4] = {50, 10, 40, 20}, outs[4] = {5, 5, 5, 100};
    const char *opts[3] = {"aging_rate: 0\n",                           /* prompt: B D C A */
                           "aging_rate: 0\npriority_by: total\n",        /* 15 45 55 120: B C A D */
                           "aging_rate: 1000000\n"};                     /* 1000/ms: FCFS A B C D */
    const int want[3][4] = {{1, 3, 2, 0}, {1, 2, 0, 3}, {0, 1, 2, 3}};
    for (int c = 0; c < 3; c++) {
        pb_engine_params ep = params(PB_PREEMPT_AUTO, PB_STEP_MIXED);
        ep.max_num_seqs = 1;
        sys s;
        sys_init_prio(&s, &ep, opts[c]);
        pb_request r[5];
        r[0] = req(0, 0, 5, 5, 1, 1);
        for (int i = 0; i < 4; i++) r[i + 1] = req(i + 1, 0.001 * (i + 1), prompts[i], outs[i], 1, 1);
        pb_trace t = {r, 5};
        PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
        int64_t n;
        const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
        for (int k = 0; k + 1 < 4; k++)
            PB_CHECK(rm[want[c][k] + 1].first_token_s < rm[want[c][k + 1] + 1].first_token_s);
        sys_free(&s);
    }
    /* bad options are config errors at their line */
    pb_config *cfg = NULL;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("p.yaml", "priority_by: longest\n", &cfg, &e) == PB_OK);
    pb_policy *p = NULL;
    PB_CHECK(pb_policy_create("priority", pb_config_root(cfg), &p, &e) == PB_ERR_INVALID && p == NULL);
    PB_CHECK_STR_CONTAINS(e.msg, "p.yaml:1:");
    pb_config_destroy(cfg);
    PB_REQUIRE(pb_config_load_string("q.yaml", "aging_rate: -1\n", &cfg, &e) == PB_OK);
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_policy_create("priority", pb_config_root(cfg), &p, &e) == PB_ERR_INVALID && p == NULL);
    PB_CHECK_STR_CONTAINS(e.msg, "aging_rate");
    pb_config_destroy(cfg);
}

/* A long prompt (500 tokens) arrives at 0.5 ms into a steady stream of short ones
   (10 tokens, every 5 ms, each needing ~11 ms of a one-sequence server, so the queue
   only grows).  Without aging the long one waits for the whole stream; with aging
   1000/s it ranks ahead of every short arriving after 0.5 ms + 490 / 1000 s. */
PB_TEST(priority_aging_prevents_starvation) {
    enum { NS = 300 };
    double long_first[2], last_short_first[2];
    int64_t shorts_after[2];   /* shorts arriving after 0.5 s that got their first token before the long one */
    const char *opts[2] = {"aging_rate: 0\n", "aging_rate: 1000\n"};
    for (int c = 0; c < 2; c++) {
        pb_engine_params ep = params(PB_PREEMPT_AUTO, PB_STEP_MIXED);
        ep.max_num_seqs = 1;
        ep.check_every_step = false;
        sys s;
        sys_init_prio(&s, &ep, opts[c]);
        pb_request r[NS + 1];
        r[0] = req(0, 0, 10, 10, 1, 1);              /* short 0 at 0, then the long one */
        r[1] = req(1, 0.0005, 500, 10, 1, 1);
        for (int i = 1; i < NS; i++) r[i + 1] = req(i + 1, 0.005 * i, 10, 10, 1, 1);
        pb_trace t = {r, NS + 1};
        PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
        int64_t n;
        const pb_req_metrics *rm = pb_metrics_requests(s.m, &n);
        PB_REQUIRE(n == NS + 1);
        long_first[c] = rm[1].first_token_s;
        last_short_first[c] = 0;
        shorts_after[c] = 0;
        for (int64_t i = 0; i < n; i++) {
            if (i == 1) continue;
            if (rm[i].first_token_s > last_short_first[c]) last_short_first[c] = rm[i].first_token_s;
            if (r[i].arrival_s > 0.5 && rm[i].first_token_s < long_first[c]) shorts_after[c]++;
        }
        sys_free(&s);
    }
    /* no aging: starved until the stream has been served */
    PB_CHECK(long_first[0] > last_short_first[0]);
    /* aging: served in the stream, ahead of everything that arrived after 0.5 s */
    PB_CHECK(long_first[1] < last_short_first[1]);
    PB_CHECK_EQ_INT(shorts_after[1], 0);
    PB_CHECK(long_first[1] < 0.5 * long_first[0]);
}

PB_TEST(policy_registry_lookup) {
    PB_CHECK(pb_policy_find("vllm") != NULL);
    PB_CHECK(pb_policy_find("spf") != NULL);
    PB_CHECK(pb_policy_find("nope") == NULL);
    PB_CHECK_STR_CONTAINS(pb_policy_names(), "vllm");
    pb_policy *p = NULL;
    PB_CHECK(pb_policy_create("nope", NULL, &p, NULL) == PB_ERR_INVALID && p == NULL);
    pb_preempt_mode pm;
    pb_step_mode sm;
    PB_CHECK(pb_preempt_mode_parse("swap", &pm) && pm == PB_PREEMPT_SWAP);
    PB_CHECK(!pb_preempt_mode_parse("bogus", &pm));
    PB_CHECK(pb_step_mode_parse("v0.2", &sm) && sm == PB_STEP_ALTERNATE);
}

static pb_status lazy_schedule(pb_policy *p, pb_sched *s) {
    (void)p;
    (void)s;
    return PB_OK;
}
static void lazy_destroy(pb_policy *p) { (void)p; }

PB_TEST(stalled_policy_is_an_error_not_a_hang) {
    static const pb_policy_i LAZY = {.name = "lazy", .schedule = lazy_schedule, .destroy = lazy_destroy};
    pb_policy lazy = {&LAZY, NULL};
    pb_engine_params ep = params(PB_PREEMPT_AUTO, PB_STEP_MIXED);
    sys s;
    sys_init(&s, 16, 100, 0, &ep, "vllm");
    pb_request r[2] = {req(0, 0, 20, 5, 1, 1), req(1, 3.0, 20, 5, 1, 1)};
    pb_trace t = {r, 2};
    pb_engine *e;
    PB_REQUIRE(pb_engine_create(&ep, s.kv, &lazy, s.ex, &e) == PB_OK);
    PB_CHECK(pb_engine_run(e, &t, s.m) == PB_ERR_INVALID);
    PB_CHECK(pb_engine_now(e) == 0 || pb_engine_now(e) >= 3.0);   /* idled to the arrival */
    pb_engine_destroy(e);
    sys_free(&s);
}

PB_TEST(prompt_over_token_budget_rejected) {
    pb_engine_params ep = params(PB_PREEMPT_AUTO, PB_STEP_MIXED);
    ep.max_num_batched_tokens = 16;
    sys s;
    sys_init(&s, 16, 100, 0, &ep, "vllm");
    pb_request r[2] = {req(0, 0, 20, 5, 1, 1), req(1, 0, 16, 5, 1, 1)};
    pb_trace t = {r, 2};
    PB_REQUIRE(pb_engine_run(s.e, &t, s.m) == PB_OK);
    pb_run_summary su;
    pb_metrics_summary(s.m, &su);
    PB_CHECK_EQ_INT(su.n_rejected, 1);
    PB_CHECK_EQ_INT(su.n_finished, 1);
    sys_free(&s);
}

PB_TEST_MAIN()
