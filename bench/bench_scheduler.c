/* bench_scheduler.c -- `pagedbench bench scheduler [--csv]`: CPU cost of the engine
 * step and of the block operations.
 *
 * Step cost: the whole engine step (vLLM policy scheduling, block appends and
 * copy-on-write, batch assembly, the memory breakdown, post-processing, frees of
 * finished requests, admissions of new ones) with a zero-work executor, at 32, 128
 * and 256 running sequences whose contexts are ~2K tokens (prompts 1900-2000 tokens,
 * outputs 48-200, so requests finish and new ones are admitted continuously).  Each
 * step is timed alone; we report the median (step_us_N), mean and p99 over the
 * timed steps after a warm-up.
 * Block operations on the paged manager (block size 16): allocate a 2000-token prompt
 * (125 blocks), append one token, fork a 2K-token sequence, free a 2K-token sequence
 * -- operations per second, median over 5 repetitions. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "block_manager.h"
#include "engine.h"
#include "executor_fixed.h"
#include "rng.h"

typedef struct { const char *metric; double value; const char *unit; } row;

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* returns median/mean/p99 µs per step with n_seqs running */
static int bench_steps(int32_t n_seqs, int timed, double *med, double *mean, double *p99,
                       double *avg_batch) {
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.n_gpu_blocks = n_seqs * 140 + 64;
    pp.n_cpu_blocks = pp.n_gpu_blocks;
    pb_kv_manager *kv = NULL;
    pb_policy *pol = NULL;
    pb_executor *ex = NULL;
    pb_engine *e = NULL;
    if (pb_paged_kv_create(&pp, &kv) != PB_OK || pb_policy_create("vllm", NULL, &pol, NULL) != PB_OK)
        return 1;
    pb_fixed_exec_params xp;
    memset(&xp, 0, sizeof xp);
    xp.step_s = 1e-3;
    pb_executor_fixed_create(&xp, &ex);
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.max_num_seqs = n_seqs;
    ep.max_num_batched_tokens = 1 << 30;
    ep.max_model_len = 1 << 20;
    int warm = 200;
    int64_t n_req = (int64_t)(warm + timed) * n_seqs / 48 + 4 * n_seqs;
    pb_request *r = pb_xcalloc((size_t)n_req, sizeof *r);
    pb_rng rng;
    pb_rng_seed(&rng, 42, 1);
    for (int64_t i = 0; i < n_req; i++) {
        r[i].id = i;
        r[i].prompt_len = 1900 + (int32_t)pb_rng_below(&rng, 101);
        r[i].output_len = 48 + (int32_t)pb_rng_below(&rng, 153);
        r[i].n = 1;
        r[i].beam_width = 1;
        r[i].prefix_id = -1;
        r[i].conversation_id = -1;
    }
    pb_trace t = {r, n_req};
    pb_metrics *m = pb_metrics_create(false);
    if (pb_engine_create(&ep, kv, pol, ex, &e) != PB_OK || pb_engine_begin(e, &t, m) != PB_OK) return 1;
    double *us = pb_xmalloc((size_t)timed * sizeof(double));
    bool done = false;
    int rc = 0;
    double batch = 0;
    for (int i = 0; i < warm + timed && !done; i++) {
        double t0 = pb_now_s();
        if (pb_engine_step(e, &done) != PB_OK) { rc = 1; break; }
        double dt = (pb_now_s() - t0) * 1e6;
        if (i >= warm) {
            us[i - warm] = dt;
            batch += pb_engine_last_batch(e)->n_seqs;
        }
    }
    *avg_batch = batch / timed;
    if (done) rc = 1;   /* trace too short: should not happen */
    double s = 0;
    for (int i = 0; i < timed; i++) s += us[i];
    *mean = s / timed;
    *med = median(us, timed);
    *p99 = us[(int)(0.99 * (timed - 1))];
    pb_engine_end(e);
    pb_engine_destroy(e);
    pb_metrics_destroy(m);
    pb_kv_destroy(kv);
    pb_policy_destroy(pol);
    pb_executor_destroy(ex);
    free(r);
    free(us);
    return rc;
}

/* block-operation throughput (ops/s) on the paged manager */
static void bench_ops(double *alloc_s, double *append_s, double *fork_s, double *free_s) {
    enum { REPS = 5, NG = 256 };
    double a[REPS], ap[REPS], fk[REPS], fr[REPS];
    for (int rep = 0; rep < REPS; rep++) {
        pb_paged_params pp;
        pb_paged_params_default(&pp);
        pp.n_gpu_blocks = NG * 2 * 130 + 64;
        pb_kv_manager *kv;
        pb_paged_kv_create(&pp, &kv);
        pb_seq_pool *pool = pb_seq_pool_create(false);
        static pb_request rq[NG];
        static pb_group g[NG];
        pb_pair_vec cp = {0};
        for (int i = 0; i < NG; i++) {
            memset(&rq[i], 0, sizeof rq[i]);
            rq[i].id = i;
            rq[i].prompt_len = 2000;
            rq[i].output_len = 48;
            rq[i].n = 1;
            rq[i].beam_width = 1;
            rq[i].prefix_id = -1;
            pb_group_init(&g[i], i, &rq[i], 1 << 20, 1);
            g[i].state = PB_GROUP_WAITING;
            pb_seq_new(pool, &g[i]);
        }
        double t0 = pb_now_s();
        for (int i = 0; i < NG; i++) pb_kv_allocate(kv, &g[i], &cp);
        a[rep] = NG / (pb_now_s() - t0);
        int n_app = 0;
        t0 = pb_now_s();
        for (int k = 0; k < 48; k++)
            for (int i = 0; i < NG; i++, n_app++) {
                g[i].seqs[0]->len++;
                pb_kv_append(kv, g[i].seqs[0], &cp);
            }
        ap[rep] = n_app / (pb_now_s() - t0);
        pb_seq *child[NG];
        t0 = pb_now_s();
        for (int i = 0; i < NG; i++) {
            child[i] = pb_seq_clone(pool, g[i].seqs[0]);
            pb_kv_fork(kv, g[i].seqs[0], child[i]);
        }
        fk[rep] = NG / (pb_now_s() - t0);
        t0 = pb_now_s();
        for (int i = 0; i < NG; i++) {
            pb_kv_free(kv, g[i].seqs[1]);
            pb_kv_free(kv, g[i].seqs[0]);
        }
        fr[rep] = 2 * NG / (pb_now_s() - t0);
        for (int i = 0; i < NG; i++) {
            while (g[i].n_seqs) pb_seq_delete(pool, g[i].seqs[g[i].n_seqs - 1]);
            pb_group_release(&g[i]);
        }
        pb_pair_vec_free(&cp);
        pb_seq_pool_destroy(pool);
        pb_kv_destroy(kv);
    }
    *alloc_s = median(a, REPS);
    *append_s = median(ap, REPS);
    *fork_s = median(fk, REPS);
    *free_s = median(fr, REPS);
}

enum { O_CSV = 256 };
static const pb_cli_opt OPTS[] = {{"csv", O_CSV, NULL, "rows as metric,value,unit"}, {NULL, 0, NULL, NULL}};
static const pb_cli CLI = {
    "bench scheduler", "[--csv]",
    "CPU cost of the engine step (a zero-work executor; 2K-token contexts, block 16) at 32, 128\n"
    "and 256 running sequences, over 3000 timed steps after 200 of warm-up: the median (p50), mean\n"
    "and 99th percentile in µs -- the mean can exceed the p99: it carries the rare slow steps\n"
    "(allocations, admissions) above the 99th percentile -- and the average batch; then block\n"
    "operations per second (median of 5 repetitions).",
    OPTS, NULL, NULL, NULL};

int pb_bench_scheduler(int argc, char **argv) {
    bool csv = false;
    pb_cli_parser p;
    pb_cli_begin(&p, &CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;)
        if (c == O_CSV) csv = true;
    if (p.rc >= 0) return p.rc;
    if (p.optind < argc) return pb_cli_fail(&CLI, "unexpected argument '%s'", argv[p.optind]);
    row rows[32];
    int nr = 0;
    static char names[3][4][32];
    const int32_t sizes[3] = {32, 128, 256};
    for (int k = 0; k < 3; k++) {
        double med, mean, p99, avg;
        if (bench_steps(sizes[k], 3000, &med, &mean, &p99, &avg) != 0) {
            fprintf(stderr, "bench scheduler: engine run failed at %d sequences\n", sizes[k]);
            return PB_EXIT_RUNTIME;
        }
        snprintf(names[k][0], sizeof names[k][0], "step_us_p50_%d", sizes[k]);
        snprintf(names[k][1], sizeof names[k][1], "step_us_mean_%d", sizes[k]);
        snprintf(names[k][2], sizeof names[k][2], "step_us_p99_%d", sizes[k]);
        rows[nr++] = (row){names[k][0], med, "us"};
        rows[nr++] = (row){names[k][1], mean, "us"};
        rows[nr++] = (row){names[k][2], p99, "us"};
        snprintf(names[k][3], sizeof names[k][3], "batch_seqs_%d", sizes[k]);
        rows[nr++] = (row){names[k][3], avg, "seqs"};
    }
    double al, ap, fk, fr;
    bench_ops(&al, &ap, &fk, &fr);
    rows[nr++] = (row){"allocate_2k_prompt_per_s", al, "ops/s"};
    rows[nr++] = (row){"append_per_s", ap, "ops/s"};
    rows[nr++] = (row){"fork_2k_seq_per_s", fk, "ops/s"};
    rows[nr++] = (row){"free_2k_seq_per_s", fr, "ops/s"};
    if (csv) {
        printf("metric,value,unit\n");
        for (int i = 0; i < nr; i++) printf("%s,%.6g,%s\n", rows[i].metric, rows[i].value, rows[i].unit);
    } else {
        printf("engine step (schedule + appends + frees + batch + metrics), 2K-token contexts, block 16;\n"
               "step_us_{p50,mean,p99}_N: median, mean and 99th percentile of 3000 timed steps at N sequences\n");
        for (int i = 0; i < nr; i++) printf("  %-28s %14.3f %s\n", rows[i].metric, rows[i].value, rows[i].unit);
    }
    return PB_EXIT_OK;
}
