/* bench_sim.c -- `pagedbench bench sim [--csv] [--quick]`: how fast the simulator runs.
 *
 * End to end: a one-hour ShareGPT trace (Poisson, 4 req/s -- about twice the rate at
 * which vLLM on OPT-13B / A100-40GB saturates, so the queue grows and batches stay
 * full) replayed by the real engine (vLLM policy, paged KV manager with block 16 and
 * the paper's 12 GiB-class KV budget) on the sim executor.  We time the replay alone
 * (trace generation excluded) in CPU seconds of this process, take the median of 3
 * repetitions, and report simulated requests per CPU-second (sim_requests_per_s),
 * simulated tokens (prompt + output) per CPU-second, and engine steps per CPU-second,
 * of which the share the engine's fast path replayed (sim_fast_forwarded_pct,
 * engine/fastfwd.h);
 * also the simulated system's own throughput (requests per simulated second), a
 * sanity check of the cost model (saturated vLLM, OPT-13B, ShareGPT).
 * Beam search against n = 1: a one-hour Alpaca trace at 1 req/s (fig14's vLLM
 * operating range) with beam width 6 and with one sample per request, replayed five
 * times each, in turn; CPU microseconds per request of each (medians) and their
 * ratio (beam6_cost_ratio).
 * Peak RSS: the process's maximum resident set (getrusage) at the end, which
 * includes the traces and one engine at a time.
 * --quick: 10-minute traces, one repetition.  --no-fast-forward: every step run one
 * by one (engine.h params.fast_forward false), to measure what the fast path buys.
 * Executor alone: the sim's execute() on a 256-sequence decode batch with 2K-token
 * contexts, ns per call and per sequence (median of 5 runs of 20,000 calls).
 * Beam selection alone: pb_beam_synth_select at width 6 (an ordinary step's), and
 * pb_beam_synth_advance at width 6 (a replayed step's), ns per call. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "beam.h"
#include "bench.h"
#include "cli.h"
#include "block_manager.h"
#include "engine.h"
#include "executor_sim.h"
#include "spec.h"
#include "workload.h"

typedef struct { const char *metric; double value; const char *unit; } row;

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct { pb_model m; pb_hw hw; pb_sim_cost c; } specs;

enum { BEAM_PAIR_REPS = 5 };   /* replays of each side of the beam pair (beam_pair; --quick: 1) */

/* One replay (ff: the engine's fast path on); returns CPU seconds, or < 0 on error. */
static double replay(const specs *sp, const pb_trace *t, bool ff, int64_t *steps, int64_t *tokens, int64_t *finished,
                     double *served, int64_t *ff_steps) {
    int64_t unused_i;
    double unused_d;
    if (!steps) steps = &unused_i;
    if (!tokens) tokens = &unused_i;
    if (!finished) finished = &unused_i;
    if (!served) served = &unused_d;
    if (!ff_steps) ff_steps = &unused_i;
    pb_kv_capacity cap;
    if (pb_kv_capacity_compute(&sp->m, &sp->hw, 1, 16, 2560, 0.95, &cap)) return -1;
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.block_size = 16;
    pp.n_gpu_blocks = (int32_t)cap.num_blocks;
    pp.n_cpu_blocks = (int32_t)cap.num_blocks;
    pb_kv_manager *kv = NULL;
    pb_policy *pol = NULL;
    pb_engine *e = NULL;
    pb_metrics *met = pb_metrics_create(false);
    pb_sim_params sprm = pb_sim_params_default();
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_executor *ex = pb_executor_sim_create(&sp->m, &sp->hw, &sp->c, 1, &sprm, &err);
    double dt = -1;
    if (!ex || pb_paged_kv_create(&pp, &kv) || pb_policy_create("vllm", NULL, &pol, NULL)) goto out;
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.kv_bytes_per_token = pb_kv_bytes_per_token(&sp->m, 1);
    ep.fast_forward = ff;
    if (pb_engine_create(&ep, kv, pol, ex, &e)) goto out;
    double t0 = cpu_now();
    pb_status st = pb_engine_run(e, t, met);
    double t1 = cpu_now();
    if (st) {
        fprintf(stderr, "bench sim: engine run failed: %s\n", pb_status_str(st));
        goto out;
    }
    pb_run_summary sum;
    pb_metrics_summary(met, &sum);
    *steps = sum.n_steps;
    *tokens = sum.prompt_tokens + sum.output_tokens;
    *finished = sum.n_finished;
    *served = sum.req_throughput;
    *ff_steps = pb_engine_fast_forwarded(e);
    dt = t1 - t0;
out:
    pb_engine_destroy(e);
    pb_executor_destroy(ex);
    if (pol) pb_policy_destroy(pol);
    if (kv) pb_kv_destroy(kv);
    pb_metrics_destroy(met);
    if (!ex && err.count) fprintf(stderr, "bench sim: %s\n", err.msg);
    return dt;
}

/* ns per execute() of a 256 x 2K decode batch */
static double exec_ns(const specs *sp) {
    static pb_batch_seq seqs[256];
    static int32_t table[128];
    for (int i = 0; i < 256; i++) {
        seqs[i] = (pb_batch_seq){.seq_id = i, .group_id = i, .n_new = 1, .n_cached = 2000 + i,
                                 .context_len = 2001 + i, .sample = true, .block_table = table, .n_blocks = 126};
    }
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = 256;
    b.seqs = seqs;
    b.n_decode = 256;
    b.block_size = 16;
    b.n_top = 1;
    pb_executor *ex = pb_executor_sim_create(&sp->m, &sp->hw, &sp->c, 1, NULL, NULL);
    if (!ex) return -1;
    double runs[5];
    volatile double sink = 0;
    const int N = 20000;
    for (int r = 0; r < 5; r++) {
        double t0 = cpu_now();
        for (int i = 0; i < N; i++) {
            pb_step_result res;
            pb_executor_execute(ex, &b, &res, NULL);
            sink += res.latency_s;
        }
        runs[r] = (cpu_now() - t0) / N * 1e9;
    }
    (void)sink;
    pb_executor_destroy(ex);
    return median(runs, 5);
}

/* ns per call at beam width 6, median of 5 runs of 200,000 calls, of
 * pb_beam_synth_select (advance false: an ordinary step's selection; 6 beams, 12
 * candidates each, the beams' scores spread uniformly over 3 nats -- 1,024 such
 * sets, cycled, so that branches see varied orders) or of pb_beam_synth_advance
 * (advance true: the beam replay's hot path, fastfwd.c beam_select; 64 groups
 * cycled, the first 64 sets at the start -- sorted by the first call -- and then
 * each group's own scores by rank from call to call, as in the replay). */
static double beam_ns(bool advance) {
    enum { W = 6, SETS = 1024, G = 64, N = 200000 };
    static double cum[SETS][W];
    static int32_t order[G][W];
    pb_rng r;
    pb_rng_seed(&r, 1, 0);
    for (int k = 0; k < SETS; k++)
        for (int i = 0; i < W; i++) cum[k][i] = -50.0 - 3.0 * pb_rng_uniform(&r);
    for (int g = 0; g < G; g++)
        for (int i = 0; i < W; i++) order[g][i] = i;
    double runs[5];
    volatile double sink = 0;
    for (int k = 0; k < 5; k++) {
        double t0 = cpu_now();
        for (int i = 0; i < N; i++) {
            if (advance) {
                int32_t parent[W];
                pb_beam_synth_advance(&r, cum[i % G], order[i % G], W, parent);
                sink += parent[W - 1];
            } else {
                pb_beam_choice ch[W];
                pb_beam_synth_select(&r, cum[i % SETS], NULL, W, 2 * W, 0, W, ch);
                sink += ch[W - 1].score;
            }
        }
        runs[k] = (cpu_now() - t0) / N * 1e9;
    }
    (void)sink;
    return median(runs, 5);
}

/* The trace of dataset at rate for duration_s with beam width `beam` (1 = one sample
 * per request); false (said on stderr) on error. */
static bool beam_trace(const char *dataset, double rate, double duration_s, int32_t beam, pb_trace *t) {
    pb_workload_cfg wc;
    pb_workload_defaults(&wc);
    snprintf(wc.dataset, sizeof wc.dataset, "%s", dataset);
    wc.arrivals.rate = rate;
    wc.arrivals.duration_s = duration_s;
    wc.beam_width = beam;
    char werr[512];
    if (pb_workload_generate(&wc, 0, t, werr, sizeof werr)) {
        fprintf(stderr, "bench sim: %s\n", werr);
        return false;
    }
    return true;
}

/* CPU microseconds per request of replays of one trace of dataset at rate for
 * duration_s with one sample per request (us[0]) and with beam width 6 (us[1]):
 * each the median of reps, the two replayed in turn (n = 1, beam 6, n = 1, ...) so
 * that a change in the machine's speed during the run weighs on both alike.  False
 * on error. */
static bool beam_pair(const specs *sp, const char *dataset, double rate, double duration_s, int reps, bool ff,
                      double us[2]) {
    pb_trace t[2] = {{0}, {0}};
    bool ok = beam_trace(dataset, rate, duration_s, 1, &t[0]) && beam_trace(dataset, rate, duration_s, 6, &t[1]);
    double secs[2][BEAM_PAIR_REPS];
    for (int r = 0; ok && r < reps; r++)
        for (int k = 0; ok && k < 2; k++) ok = (secs[k][r] = replay(sp, &t[k], ff, NULL, NULL, NULL, NULL, NULL)) >= 0;
    for (int k = 0; ok && k < 2; k++) us[k] = median(secs[k], reps) / (double)(t[k].n > 0 ? t[k].n : 1) * 1e6;
    pb_trace_free(&t[0]);
    pb_trace_free(&t[1]);
    return ok;
}

static double peak_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;   /* ru_maxrss is in KiB on Linux */
}

enum { O_CSV = 256, O_QUICK, O_NO_FF };
static const pb_cli_opt OPTS[] = {{"csv", O_CSV, NULL, "rows as metric,value,unit"},
                                  {"quick", O_QUICK, NULL, "a 10-minute trace, one repetition"},
                                  {"no-fast-forward", O_NO_FF, NULL, "every step through the step-by-step path"},
                                  {NULL, 0, NULL, NULL}};
static const pb_cli CLI = {
    "bench sim", "[--csv] [--quick] [--no-fast-forward]",
    "How fast the simulator runs: a one-hour ShareGPT trace at 4 req/s replayed on OPT-13B /\n"
    "A100-40GB under the cost model (CPU seconds, median of 3): simulated requests, tokens and\n"
    "steps per CPU-second; beam search (width 6) against n = 1; the executor and beam selection\n"
    "alone; the peak RSS.",
    OPTS, NULL, NULL, NULL};

int pb_bench_sim(int argc, char **argv) {
    bool csv = false, quick = false, ff = true;
    pb_cli_parser p;
    pb_cli_begin(&p, &CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        if (c == O_CSV) csv = true;
        if (c == O_QUICK) quick = true;
        if (c == O_NO_FF) ff = false;
    }
    if (p.rc >= 0) return p.rc;
    if (p.optind < argc) return pb_cli_fail(&CLI, "unexpected argument '%s'", argv[p.optind]);
    specs sp;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    const char *dir = pb_spec_dir();
    if (pb_model_load(dir, "opt-13b", &sp.m, &err) || pb_hw_load(dir, "a100-40gb", &sp.hw, &err) ||
        pb_sim_cost_load(dir, "a100-40gb", &sp.c, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return PB_EXIT_USAGE;
    }
    pb_workload_cfg wc;
    pb_workload_defaults(&wc);
    snprintf(wc.dataset, sizeof wc.dataset, "sharegpt");
    wc.arrivals.rate = 4.0;
    wc.arrivals.duration_s = quick ? 600 : 3600;
    pb_trace t = {0};
    char werr[512];
    if (pb_workload_generate(&wc, 0, &t, werr, sizeof werr)) {
        fprintf(stderr, "bench sim: %s\n", werr);
        return PB_EXIT_RUNTIME;
    }
    int reps = quick ? 1 : 3;
    double secs[3];
    int64_t steps = 0, tokens = 0, finished = 0, ff_steps = 0;
    double served = 0;
    for (int r = 0; r < reps; r++) {
        secs[r] = replay(&sp, &t, ff, &steps, &tokens, &finished, &served, &ff_steps);
        if (secs[r] < 0) {
            pb_trace_free(&t);
            return PB_EXIT_RUNTIME;
        }
    }
    double s = median(secs, reps);
    double ns = exec_ns(&sp), select_ns = beam_ns(false), advance_ns = beam_ns(true);
    double us[2];
    if (!beam_pair(&sp, "alpaca", 1.0, wc.arrivals.duration_s, quick ? 1 : BEAM_PAIR_REPS, ff, us)) {
        pb_trace_free(&t);
        return PB_EXIT_RUNTIME;
    }
    row rows[] = {
        {"sim_requests_per_s", (double)t.n / s, "req/s"},
        {"sim_tokens_per_s", (double)tokens / s, "tok/s"},
        {"sim_steps_per_s", (double)steps / s, "steps/s"},
        {"sim_fast_forwarded_pct", steps > 0 ? 100.0 * (double)ff_steps / (double)steps : 0, "%"},
        {"sim_replay_cpu_s", s, "s"},
        {"sim_trace_requests", (double)t.n, "req"},
        {"sim_finished_requests", (double)finished, "req"},
        {"simulated_req_throughput", served, "req/sim-s"},
        {"sim_exec_ns_per_step_256", ns, "ns"},
        {"sim_exec_ns_per_seq", ns / 256, "ns"},
        {"beam6_select_ns_per_call", select_ns, "ns"},
        {"beam6_advance_ns_per_call", advance_ns, "ns"},
        {"alpaca_n1_us_per_request", us[0], "us"},
        {"alpaca_beam6_us_per_request", us[1], "us"},
        {"beam6_cost_ratio", us[1] / us[0], "x"},
        {"peak_rss_mib", peak_rss_mib(), "MiB"},
    };
    if (csv) {
        printf("metric,value,unit\n");
        for (size_t i = 0; i < PB_ARRAY_LEN(rows); i++) printf("%s,%.6g,%s\n", rows[i].metric, rows[i].value, rows[i].unit);
    } else {
        printf("sim: %s ShareGPT at 4 req/s, OPT-13B / A100-40GB / vLLM (block 16), CPU time of the replay%s\n",
               quick ? "10-minute" : "one-hour", ff ? "" : ", fast path off");
        for (size_t i = 0; i < PB_ARRAY_LEN(rows); i++)
            printf("  %-28s %14.3f %s\n", rows[i].metric, rows[i].value, rows[i].unit);
    }
    pb_trace_free(&t);
    return PB_EXIT_OK;
}
