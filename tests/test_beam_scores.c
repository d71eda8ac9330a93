/* test_beam_scores.c -- the measured beam score model (beam.h pb_beam_table,
 * workloads/beam_tables.h) and where its memory saving lands.
 *
 * table_candidates_are_rows and table_advance_is_select_then_plan pin the model's
 * contract (a row per sequence, drawn in index order; the replay's step is
 * postprocessing's selection exactly).  saving_between_the_lineage_bounds runs
 * OPT-13B / A100-40GB beam search (width 4, every request; Alpaca lengths, ample KV
 * space, the paged manager, vLLM's policy, the cost model) under three tables:
 *   peaked  one row (0, -100, -100, ...): every beam keeps its own top-1, so after
 *           the first token no lineage dies -- beams never reconverge (the lower bound)
 *   flat    one row (0, -1, -2, ...): the best beam's candidates win every tie, so
 *           every step all beams are its children -- one lineage (the upper bound)
 *   wmt14-kn3  the measured table
 * and wants the measured saving strictly between the two bounds, and printed where.
 *   build/cpu/test_beam_scores */
#include <stdio.h>
#include <string.h>

#include "beam_tables.h"
#include "block_manager.h"
#include "engine.h"
#include "executor_sim.h"
#include "pbtest.h"
#include "spec.h"
#include "workload.h"

PB_TEST(builtin_table_is_valid) {
    const pb_beam_table *t = pb_beam_table_by_name("wmt14-kn3");
    PB_REQUIRE(t != NULL);
    PB_CHECK(pb_beam_table_by_name("synthetic") == NULL);
    PB_CHECK(t->n_rows >= 1000 && t->n_top == 12);
    PB_CHECK(pb_beam_table_ok(t, 6));
    PB_CHECK(!pb_beam_table_ok(t, 7));   /* 14 candidates a beam: more than a row holds */
    float bad[2][4] = {{0, -1, -2, -3}, {-1, -0.5f, -2, -3}};
    pb_beam_table tb = {2, 4, &bad[0][0]};
    PB_CHECK(!pb_beam_table_ok(&tb, 2));   /* row 1 not descending */
}

PB_TEST(table_candidates_are_rows) {
    static const float rows[3][4] = {{-0.1f, -1, -2, -3}, {-0.5f, -0.6f, -4, -9}, {-2, -2, -2, -3}};
    pb_beam_table t = {3, 4, &rows[0][0]};
    pb_rng r, ref;
    pb_rng_seed(&r, 9, 0);
    ref = r;
    int seen[3] = {0};
    for (int n = 0; n < 300; n++) {
        pb_candidates c;
        pb_beam_table_candidates(&r, &t, 3, 0, &c);
        uint64_t row = pb_rng_below(&ref, 3);   /* one draw a row when no tokens are asked */
        PB_REQUIRE(c.n == 3);
        for (int j = 0; j < 3; j++) PB_CHECK(c.logprob[j] == rows[row][j] && c.token[j] == 0);
        seen[row]++;
    }
    PB_CHECK(seen[0] > 60 && seen[1] > 60 && seen[2] > 60);
    pb_candidates c;
    pb_beam_table_candidates(&r, &t, 4, 50272, &c);
    for (int j = 0; j < 4; j++) PB_CHECK(c.token[j] >= 0 && c.token[j] < 50272);
}

PB_TEST(table_advance_is_select_then_plan) {
    const pb_beam_table *t = pb_beam_table_by_name("wmt14-kn3");
    PB_REQUIRE(t != NULL);
    pb_rng r, ref;
    pb_rng_seed(&r, 32, 3);
    ref = r;
    for (int32_t nb = 1; nb <= 6; nb++) {
        double c[6], rc[6];
        int32_t order[6], rorder[6], parent[6];
        for (int32_t m = 0; m < nb; m++) {   /* by rank: beam order[m] has score c[m] */
            order[m] = rorder[m] = (m + 3) % nb;
            c[m] = rc[m] = -0.7 * m;
        }
        for (int step = 0; step < 200; step++) {
            pb_beam_table_advance(&r, t, c, order, nb, parent);
            double cum[6];
            pb_candidates cand[6];
            pb_beam_choice ch[6];
            pb_beam_plan pl;
            for (int32_t m = 0; m < nb; m++) cum[rorder[m]] = rc[m];
            for (int32_t i = 0; i < nb; i++) pb_beam_table_candidates(&ref, t, 2 * nb, 0, &cand[i]);
            int32_t nc = pb_beam_select(cum, cand, nb, nb, ch);
            PB_REQUIRE(nc == nb);
            pb_beam_plan_make(ch, nc, nb, &pl);
            for (int32_t m = 0; m < nb; m++) {
                rorder[m] = pl.next[m];
                rc[m] = ch[m].score;
                PB_CHECK(order[m] == rorder[m] && c[m] == rc[m]);
            }
            for (int32_t e = 0; e < nb; e++) PB_CHECK(parent[e] == ch[pl.at[e]].parent);
            if (pb_cur_failed_) return;
        }
    }
}

/* The two lineage bounds of a beam-search trace's saving, sum(L - P) / sum(L) over
   every request's decode steps (block size b): L = w * ceil((p + t) / b) logical blocks
   after t tokens, P the physical ones -- one lineage: the beams share their first
   p + t - 1 tokens' full blocks and each holds the rest; never reconverging: they
   share the prompt's full blocks only. */
static void lineage_bounds(const pb_trace *tr, int32_t b, double *never, double *one) {
    double L = 0, Pn = 0, P1 = 0;
    for (int64_t i = 0; i < tr->n; i++) {
        int64_t p = tr->reqs[i].prompt_len, w = tr->reqs[i].beam_width;
        for (int64_t t = 1; t <= tr->reqs[i].output_len; t++) {
            int64_t blocks = (p + t + b - 1) / b, shared = (p + t - 1) / b;
            L += (double)(w * blocks);
            P1 += (double)(shared + w * (blocks - shared));
            Pn += (double)(p / b + w * (blocks - p / b));
        }
    }
    *never = 1 - Pn / L;
    *one = 1 - P1 / L;
}

/* Alpaca beam search (width w, every request; 60 requests at 2 req/s) and its
   lineage bounds. */
static void beam_trace(int32_t w, pb_trace *tr) {
    pb_workload_cfg wc;
    pb_workload_defaults(&wc);
    snprintf(wc.dataset, sizeof wc.dataset, "alpaca");
    wc.arrivals.rate = 2;
    wc.arrivals.duration_s = 0;
    wc.arrivals.num = 60;
    wc.beam_width = w;
    char msg[256];
    PB_ASSERT(pb_workload_generate(&wc, 1, tr, msg, sizeof msg) == PB_OK);
}

/* The memory saving of a run of tr under table t (NULL: the synthetic model). */
static double beam_saving(const pb_trace *tr, const pb_beam_table *t) {
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    const char *dir = pb_spec_dir();
    pb_model m;
    pb_hw hw;
    pb_sim_cost c;
    PB_ASSERT(!pb_model_load(dir, "opt-13b", &m, &err) && !pb_hw_load(dir, "a100-40gb", &hw, &err) &&
              !pb_sim_cost_load(dir, "a100-40gb", &c, &err));
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.n_gpu_blocks = 8192;
    pb_kv_manager *kv = NULL;
    pb_policy *pol = NULL;
    pb_engine *e = NULL;
    pb_executor *ex = pb_executor_sim_create(&m, &hw, &c, 1, NULL, &err);
    PB_ASSERT(ex && pb_paged_kv_create(&pp, &kv) == PB_OK && pb_policy_create("vllm", NULL, &pol, NULL) == PB_OK);
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.beam_scores = t;
    PB_ASSERT(pb_engine_create(&ep, kv, pol, ex, &e) == PB_OK);
    pb_metrics *mt = pb_metrics_create(false);
    PB_ASSERT(pb_engine_run(e, tr, mt) == PB_OK);
    pb_run_summary s;
    pb_metrics_summary(mt, &s);
    pb_metrics_destroy(mt);
    pb_engine_destroy(e);
    pb_executor_destroy(ex);
    pb_policy_destroy(pol);
    pb_kv_destroy(kv);
    return s.mem_saving;
}

PB_TEST(saving_between_the_lineage_bounds) {
    const pb_beam_table *kn3 = pb_beam_table_by_name("wmt14-kn3");
    PB_REQUIRE(kn3 != NULL);
    for (int32_t w = 2; w <= 6; w += 2) {
        pb_trace tr = {0};
        beam_trace(w, &tr);
        double lo, hi;
        lineage_bounds(&tr, PB_PAGED_BLOCK_SIZE, &lo, &hi);
        double meas = beam_saving(&tr, kn3), syn = beam_saving(&tr, NULL);
        fprintf(stderr, "  width %d saving: never reconverging %.4f, wmt14-kn3 %.4f (%.1f%% of one lineage's), "
                "synthetic %.4f (%.1f%%), one lineage %.4f\n", w, lo, meas, 100 * meas / hi, syn, 100 * syn / hi, hi);
        PB_CHECK(lo > 0 && lo < hi);
        PB_CHECK(meas > lo && meas < hi);
        PB_CHECK(syn > lo && syn < hi);
        pb_trace_free(&tr);
    }
}

PB_TEST_MAIN()
