/* test_walkthrough_policy.c -- README's "A scheduling policy" walk-through, followed
 * literally.  CMake (tests/walkthrough/CMakeLists.txt) takes the policy file and the
 * registry line out of README.md, writes the file, adds the line to a copy of
 * experiments/policy_registry.c and links both with this test; so the README's text is what
 * is built.  Checks: the registry knows `lifo`, it admits newest first through the
 * engine, and an experiment YAML with `policy: lifo` runs a point in the simulator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "block_manager.h"
#include "engine.h"
#include "executor_fixed.h"
#include "experiment.h"
#include "pbtest.h"
#include "system.h"

PB_TEST(registry_knows_the_walkthrough_policy) {
    const pb_policy_entry *e = pb_policy_find("lifo");
    PB_REQUIRE(e != NULL);
    PB_CHECK_STR_CONTAINS(pb_policy_names(), "lifo");
    PB_CHECK(pb_policy_find("priority") != NULL);   /* the shipped ones are still there */
}

PB_TEST(lifo_admits_newest_first) {
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.n_gpu_blocks = 100;
    pp.watermark = 0;
    pb_kv_manager *kv = NULL;
    PB_REQUIRE(pb_paged_kv_create(&pp, &kv) == PB_OK);
    pb_policy *pol = NULL;
    PB_REQUIRE(pb_policy_create("lifo", NULL, &pol, NULL) == PB_OK);
    pb_executor *ex = NULL;
    PB_REQUIRE(pb_executor_fixed_create(NULL, &ex) == PB_OK);
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.check_every_step = true;
    ep.max_num_seqs = 1;   /* one request at a time: the others queue */
    pb_engine *e = NULL;
    PB_REQUIRE(pb_engine_create(&ep, kv, pol, ex, &e) == PB_OK);
    pb_metrics *m = pb_metrics_create(true);
    pb_request r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = pb_request_make(0.0001 * i, 10, 5);
        r[i].id = i;
    }
    pb_trace t = {r, 4};
    PB_REQUIRE(pb_engine_run(e, &t, m) == PB_OK);
    int64_t n;
    const pb_req_metrics *rm = pb_metrics_requests(m, &n);
    PB_REQUIRE(n == 4);
    /* r0 runs alone first; then the newest waiting: 3, 2, 1 */
    PB_CHECK(rm[0].first_token_s < rm[3].first_token_s);
    PB_CHECK(rm[3].first_token_s < rm[2].first_token_s);
    PB_CHECK(rm[2].first_token_s < rm[1].first_token_s);
    pb_metrics_destroy(m);
    pb_engine_destroy(e);
    pb_kv_destroy(kv);
    pb_policy_destroy(pol);
    pb_executor_destroy(ex);
}

PB_TEST(yaml_policy_lifo_runs_in_the_sim) {
    char dir[] = "/tmp/pb_walkthrough_XXXXXX";
    PB_REQUIRE(mkdtemp(dir) != NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/lifo.yaml", dir);
    const char *yaml = "name: walkthrough\nfigure: walkthrough\nmodel: opt-13b\nhardware: a100-40gb\n"
                       "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 30}\n"
                       "systems:\n  - {name: s, type: vllm, policy: lifo, kv_slots: 4096}\n";
    FILE *f = fopen(path, "w");
    PB_REQUIRE(f != NULL);
    fputs(yaml, f);
    fclose(f);
    pb_experiment *x = NULL;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_status st = pb_experiment_load(path, NULL, 0, false, &x, &err);
    if (!st) st = pb_system_check(x, &err);
    if (st) fprintf(stderr, "%s\n", err.msg);
    PB_REQUIRE(st == PB_OK);
    double vals[PB_EXP_MAX_AXES] = {0};
    pb_experiment_point_values(x, 0, 0, vals);
    pb_config *c = NULL;
    PB_REQUIRE(pb_experiment_resolve(x, 0, 0, &c, &err) == PB_OK);
    const pb_node *root = pb_config_root(c);
    pb_point_ctx ctx = {x, 0, 0, vals, root, pb_node_get(root, "systems.0"), false, NULL, NULL};
    pb_point_metrics *m = pb_xcalloc(1, sizeof *m);
    char perr[2048] = "";
    st = pb_system_run_point(&ctx, m, perr, sizeof perr, NULL);
    if (st) fprintf(stderr, "run failed: %s\n", perr);
    PB_CHECK(st == PB_OK);
    PB_CHECK(m->n > 0);
    free(m);
    pb_config_destroy(c);
    pb_experiment_destroy(x);
    unlink(path);
    rmdir(dir);
}

PB_TEST_MAIN()
