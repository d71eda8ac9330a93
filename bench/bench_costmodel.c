/* bench_costmodel.c -- `pagedbench bench costmodel`: a short run of the real engine
 * (cuda or cpu executor) and the cost model's prediction of the same run, with the
 * errors.
 *
 *   pagedbench bench costmodel --executor cuda --model opt-13b --hardware h100-sxm \
 *       --profile results/gpu/H100/profile.csv --rate 1 --duration 60 --out DIR
 *
 * The run: vLLM (paged KV, block 16, FCFS, recompute/swap preemption) replays a
 * ShareGPT-length trace (built-in distribution, paper filter) with Poisson arrivals
 * at --rate for --duration seconds on the real executor; the engine clock advances by
 * each step's measured latency (CUDA events on the GPU, wall clock on the cpu), so
 * TTFT and TPOT are those of a server whose steps took the measured times.
 *
 * Two predictions:
 *   per step   every batch the real run executed also goes through the sim executor
 *              (pb_sim_step) -- same composition, same contexts -- for
 *              "spec" (the hardware YAML's analytic cost model) and, with --profile,
 *              "profile" (the step table `pagedbench profile` measured).  Error =
 *              predicted / measured - 1 per step; we report p50 |error| (the issue's
 *              "within 10% p50" goal), p90 |error| and the median signed error (bias),
 *              over all steps and by phase.
 *   per run    the engine replays the same trace on each sim executor; TTFT and TPOT
 *              per request (mean, p50) against the real run's.
 * Host-side framework overheads are set to zero in both sims (our engine is C; the
 * measured latency covers the GPU work of the step, host kernel issue included), and
 * the sims use the C++ framework's per-kernel launch cost.
 *
 * Writes DIR/costmodel_steps.csv (one row per real step), DIR/costmodel_requests.csv
 * (one row per request: real, spec, profile TTFT/TPOT) and DIR/costmodel_summary.csv
 * (metric,real,spec,profile,spec_err_pct,profile_err_pct), and prints the summary.
 * Exit: 0 ok, 1 runtime failure, 2 usage, 77 (with `SKIP: no GPU (<reason>)`) when the
 * cuda executor has no GPU. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "block_manager.h"
#include "engine.h"
#include "executor_real.h"
#include "executor_sim.h"
#include "spec.h"
#include "trace_fit.h"  /* pb_trace_fit */
#include "workload.h"

enum { N_SIM = 2 };     /* 0: spec, 1: profile */
static const char *SIM_NAME[N_SIM] = {"spec", "profile"};

typedef struct {
    const char *executor, *model, *hardware, *profile, *out;
    double rate, duration_s, length_scale, kv_mib;
    int32_t block_size, max_requests;
    uint64_t seed;
} cm_args;

enum { O_EXECUTOR = 256, O_MODEL, O_HARDWARE, O_PROFILE, O_RATE, O_DURATION, O_MAX_REQ, O_LSCALE, O_KV_MIB,
       O_BLOCK, O_SEED, O_OUT };
static const pb_cli_opt OPTS[] = {
    {"executor", O_EXECUTOR, "cuda|cpu", "real executor (default cuda)"},
    {"model", O_MODEL, "NAME", "model spec (default opt-13b)"},
    {"hardware", O_HARDWARE, "NAME", "hardware spec of the cost model (default h100-sxm)"},
    {"profile", O_PROFILE, "CSV", "also predict from this measured step profile"},
    {"rate", O_RATE, "R", "Poisson arrivals, requests/s (default 1)"},
    {"duration", O_DURATION, "S", "seconds of arrivals (default 60)"},
    {"max-requests", O_MAX_REQ, "N", "at most N requests (0 = no cap; default 0)"},
    {"length-scale", O_LSCALE, "X", "scale ShareGPT lengths (tiny models; default 1)"},
    {"kv-mib", O_KV_MIB, "X", "KV cache MiB (default: cuda 12288, cpu 64)"},
    {"block-size", O_BLOCK, "N", "KV block size (default 16)"},
    {"seed", O_SEED, "N", "trace, weights and sampling seed (default 0)"},
    {"out", O_OUT, "DIR", "write costmodel_{steps,requests,summary}.csv here"},
    {NULL, 0, NULL, NULL}};
static const pb_cli CLI = {
    "bench costmodel", "[options]",
    "Runs the real engine (cuda, or the tiny model on the cpu executor) on a ShareGPT trace and\n"
    "prints the cost model's prediction of every step beside the measurement (step, TTFT, TPOT\n"
    "errors).",
    OPTS, NULL, NULL, "no GPU for --executor cuda: `SKIP: no GPU (<reason>)`"};

/* The options into *a; PB_CLI's exit status when they end the command (help, error), else -1. */
static int parse(int argc, char **argv, cm_args *a) {
    memset(a, 0, sizeof *a);
    a->executor = "cuda";
    a->model = "opt-13b";
    a->hardware = "h100-sxm";
    a->rate = 1.0;
    a->duration_s = 60;
    a->length_scale = 1.0;
    a->block_size = 16;
    pb_cli_parser p;
    pb_cli_begin(&p, &CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        int64_t i;
        switch (c) {
        case O_EXECUTOR:
            if (strcmp(p.arg, "cuda") && strcmp(p.arg, "cpu")) pb_cli_bad(&p, "expected cuda or cpu, got '%s'", p.arg);
            a->executor = p.arg;
            break;
        case O_MODEL: a->model = p.arg; break;
        case O_HARDWARE: a->hardware = p.arg; break;
        case O_PROFILE: a->profile = p.arg; break;
        case O_OUT: a->out = p.arg; break;
        case O_RATE: pb_cli_num(&p, 1e-6, 1e6, &a->rate); break;
        case O_DURATION: pb_cli_num(&p, 1e-3, 1e6, &a->duration_s); break;
        case O_LSCALE: pb_cli_num(&p, 1e-6, 1, &a->length_scale); break;
        case O_KV_MIB: pb_cli_num(&p, 1e-3, 1 << 24, &a->kv_mib); break;
        case O_BLOCK: if (pb_cli_int(&p, 1, 256, &i)) a->block_size = (int32_t)i; break;
        case O_MAX_REQ: if (pb_cli_int(&p, 0, 10000000, &i)) a->max_requests = (int32_t)i; break;
        case O_SEED: if (pb_cli_int(&p, 0, (int64_t)9e15, &i)) a->seed = (uint64_t)i; break;
        }
    }
    if (p.rc < 0 && p.optind < argc) p.rc = pb_cli_fail(&CLI, "unexpected argument '%s'", argv[p.optind]);
    if (!a->kv_mib) a->kv_mib = strcmp(a->executor, "cpu") ? 12288 : 64;
    return p.rc;
}

/* ---- the recording executor: the real one, plus the sims on the same batch ---- */
typedef struct {
    int32_t n_seqs, n_prefill, n_decode;
    int64_t prefill_tokens;
    double mean_ctx;                 /* decode sequences' mean context              */
    double measured_s, pred_s[N_SIM];
} step_row;

typedef struct {
    pb_executor *real;
    pb_sim *sim[N_SIM];
    step_row *rows;
    int64_t n, cap;
} rec_exec;

static pb_status rec_execute(pb_executor *ex, const pb_batch *b, pb_step_result *res, pb_candidates *cand) {
    rec_exec *r = ex->impl;
    pb_status st = pb_executor_execute(r->real, b, res, cand);
    if (st != PB_OK) return st;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->rows = pb_xrealloc(r->rows, sizeof *r->rows * (size_t)r->cap);
    }
    step_row *w = &r->rows[r->n++];
    memset(w, 0, sizeof *w);
    w->n_seqs = b->n_seqs;
    w->prefill_tokens = b->n_prefill_tokens;
    w->n_decode = b->n_decode;
    double ctx = 0;
    for (int32_t i = 0; i < b->n_seqs; i++) {
        if (b->seqs[i].is_prefill) w->n_prefill++;
        else ctx += b->seqs[i].context_len;
    }
    w->mean_ctx = b->n_decode ? ctx / b->n_decode : 0;
    w->measured_s = res->latency_s;
    for (int k = 0; k < N_SIM; k++) {
        w->pred_s[k] = NAN;
        if (r->sim[k]) {
            pb_step_result sr;
            pb_sim_step(r->sim[k], b, &sr);
            w->pred_s[k] = sr.latency_s;
        }
    }
    return PB_OK;
}
static void rec_destroy(pb_executor *ex) { (void)ex; }
/* wraps a real executor: needs what any executor may need */
static const pb_executor_i REC_IFACE = {"record", rec_execute, rec_destroy, PB_EXEC_KV_LAYOUT | PB_EXEC_TOKENS};

/* ---- one engine run ---- */
typedef struct {
    const cm_args *a;
    pb_model m;
    pb_hw hw;
    pb_sim_cost cost;
    int32_t n_gpu_blocks, n_cpu_blocks;
} cm_ctx;

/* run the trace on ex; per-request metrics copied into *reqs (malloc'd) */
static pb_status run_engine(const cm_ctx *c, pb_executor *ex, bool real, const pb_trace *t,
                            pb_req_metrics **reqs, int64_t *n_reqs, pb_run_summary *sum) {
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.block_size = c->a->block_size;
    pp.n_gpu_blocks = c->n_gpu_blocks;
    pp.n_cpu_blocks = c->n_cpu_blocks;
    pb_kv_manager *kv = NULL;
    pb_policy *pol = NULL;
    pb_engine *e = NULL;
    pb_metrics *met = pb_metrics_create(false);
    pb_status st = pb_paged_kv_create(&pp, &kv);
    if (!st) st = pb_policy_create("vllm", NULL, &pol, NULL);
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.max_model_len = c->m.max_len;
    ep.seed = c->a->seed;
    ep.kv_bytes_per_token = pb_kv_bytes_per_token(&c->m, 1);
    ep.store_tokens = real;
    ep.vocab_size = c->m.vocab;
    if (!st) st = pb_engine_create(&ep, kv, pol, ex, &e);
    if (!st) st = pb_engine_run(e, t, met);
    if (!st) st = pb_metrics_check(met);
    if (!st) {
        int64_t n = 0;
        const pb_req_metrics *r = pb_metrics_requests(met, &n);
        *reqs = pb_xmalloc(sizeof **reqs * (size_t)(n ? n : 1));
        memcpy(*reqs, r, sizeof **reqs * (size_t)n);
        *n_reqs = n;
        pb_metrics_summary(met, sum);
    }
    pb_engine_destroy(e);
    if (pol) pb_policy_destroy(pol);
    if (kv) pb_kv_destroy(kv);
    pb_metrics_destroy(met);
    return st;
}

static double ttft(const pb_req_metrics *r) { return r->finished ? r->first_token_s - r->arrival_s : NAN; }
static double tpot(const pb_req_metrics *r) {
    return r->finished && r->output_len > 1 ? (r->finish_s - r->first_token_s) / (r->output_len - 1) : NAN;
}

/* percentile / mean over the finite values of v[0..n) */
static double stat(const double *v, int64_t n, double p, bool mean) {
    double *w = pb_xmalloc(sizeof *w * (size_t)(n ? n : 1)), s = 0;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(v[i])) { w[k++] = v[i]; s += v[i]; }
    double out = k == 0 ? NAN : mean ? s / (double)k : pb_percentile(w, k, p);
    free(w);
    return out;
}

typedef struct { char metric[48]; double real, pred[N_SIM]; bool is_err; } sum_row;

static void add_row(sum_row *rows, int *n, const char *metric, double real, const double *pred, bool is_err) {
    sum_row *r = &rows[(*n)++];
    snprintf(r->metric, sizeof r->metric, "%s", metric);
    r->real = real;
    for (int k = 0; k < N_SIM; k++) r->pred[k] = pred[k];
    r->is_err = is_err;
}

static void fmt_num(pb_sbuf *b, double v) {
    if (isfinite(v)) pb_sbuf_printf(b, ",%.6g", v);
    else pb_sbuf_printf(b, ",");
}

int pb_bench_costmodel(int argc, char **argv) {
    cm_args a;
    int prc = parse(argc, argv, &a);
    if (prc >= 0) return prc;
    bool cuda = !strcmp(a.executor, "cuda");
    char why[512];
    if (cuda && !pb_cuda_available(why, sizeof why)) {
        printf("SKIP: no GPU (%s)\n", why);
        return PB_EXIT_SKIP;
    }
    cm_ctx c;
    memset(&c, 0, sizeof c);
    c.a = &a;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    if (pb_model_load(pb_spec_dir(), a.model, &c.m, &err) || pb_hw_load(pb_spec_dir(), a.hardware, &c.hw, &err) ||
        pb_sim_cost_load(pb_spec_dir(), a.hardware, &c.cost, &err)) {
        fprintf(stderr, "bench costmodel: %s\n", err.msg);
        return PB_EXIT_USAGE;
    }
    /* our engine is C: no Python/C++ framework step overheads, kernel issue stays */
    for (int f = 0; f < 2; f++) {
        c.cost.fw[f].step_s = c.cost.fw[f].seq_s = c.cost.fw[f].worker_s = 0;
        c.cost.fw[f].launch_s = c.cost.fw[PB_SIM_FW_CPP].launch_s;
    }
    /* KV: the hardware rule, capped at --kv-mib (the real executor allocates it) */
    pb_kv_capacity cap;
    if (pb_kv_capacity_compute(&c.m, &c.hw, 1, a.block_size, PB_KV_PROFILE_TOKENS, 0.95, &cap)) {
        fprintf(stderr, "bench costmodel: %s does not fit %s\n", c.m.name, c.hw.name);
        return PB_EXIT_USAGE;
    }
    double per_token = cuda ? pb_kv_bytes_per_token(&c.m, 1) : 2.0 * c.m.n_layers * c.m.n_kv_heads * c.m.head_size * 4.0;
    int64_t nb = (int64_t)floor(a.kv_mib * 1048576.0 / per_token) / a.block_size;
    if (nb > cap.num_blocks) nb = cap.num_blocks;
    if (nb * a.block_size < c.m.max_len) {
        fprintf(stderr, "bench costmodel: --kv-mib %g holds %lld tokens, fewer than max_len %d\n", a.kv_mib,
                (long long)(nb * a.block_size), c.m.max_len);
        return PB_EXIT_USAGE;
    }
    c.n_gpu_blocks = (int32_t)PB_MIN(nb, (int64_t)INT32_MAX);
    c.n_cpu_blocks = c.n_gpu_blocks / 4;

    /* the trace */
    pb_workload_cfg wc;
    pb_workload_defaults(&wc);
    snprintf(wc.dataset, sizeof wc.dataset, "sharegpt");
    wc.arrivals.rate = a.rate;
    wc.arrivals.duration_s = a.duration_s;
    wc.arrivals.num = a.max_requests;
    pb_trace trace = {0};
    char werr[1024] = "";
    if (pb_workload_generate(&wc, a.seed, &trace, werr, sizeof werr)) {
        fprintf(stderr, "bench costmodel: workload: %s\n", werr);
        return PB_EXIT_USAGE;
    }
    pb_trace_fit(&trace, a.length_scale, true, c.m.max_len);

    /* sims */
    int rc = PB_EXIT_OK;
    pb_sim *sim[N_SIM] = {NULL, NULL};
    pb_sim_params sp[N_SIM];
    for (int k = 0; k < N_SIM; k++) {
        sp[k] = pb_sim_params_default();
        sp[k].framework = PB_SIM_FW_CPP;
    }
    snprintf(sp[1].profile, sizeof sp[1].profile, "%s", a.profile ? a.profile : "");
    for (int k = 0; k < N_SIM && rc == PB_EXIT_OK; k++) {
        if (k == 1 && !a.profile) break;
        if (pb_sim_create(&c.m, &c.hw, &c.cost, 1, &sp[k], &sim[k], &err)) {
            fprintf(stderr, "bench costmodel: %s sim: %s\n", SIM_NAME[k], err.msg);
            rc = PB_EXIT_USAGE;
        }
    }

    /* the real run */
    pb_real_exec_params rp;
    pb_real_exec_params_default(&rp);
    rp.block_size = a.block_size;
    rp.num_gpu_blocks = c.n_gpu_blocks;
    rp.num_cpu_blocks = c.n_cpu_blocks;
    rp.weight_seed = a.seed;
    rp.sample_seed = a.seed;
    rp.max_tokens_hint = 2560;
    pb_executor *real = NULL;
    rec_exec rec;
    memset(&rec, 0, sizeof rec);
    pb_req_metrics *req[1 + N_SIM] = {NULL, NULL, NULL};
    int64_t nreq[1 + N_SIM] = {0, 0, 0};
    pb_run_summary sum[1 + N_SIM];
    memset(sum, 0, sizeof sum);
    if (rc == PB_EXIT_OK) {
        pb_status st = cuda ? pb_executor_cuda_create(&c.m, &rp, &real) : pb_executor_cpu_create(&c.m, &rp, &real);
        if (st) {
            fprintf(stderr, "bench costmodel: cannot create the %s executor for %s: %s\n", a.executor, c.m.name,
                    pb_status_str(st));
            rc = PB_EXIT_RUNTIME;
        }
    }
    if (rc == PB_EXIT_OK) {
        fprintf(stderr, "costmodel: %s on the %s executor, %lld requests (ShareGPT lengths x %g, Poisson %g req/s, "
                        "%g s), KV %d blocks of %d; predicting with %s%s%s\n",
                c.m.name, a.executor, (long long)trace.n, a.length_scale, a.rate, a.duration_s, c.n_gpu_blocks,
                a.block_size, c.hw.name, a.profile ? " and " : "", a.profile ? a.profile : "");
        rec.real = real;
        for (int k = 0; k < N_SIM; k++) rec.sim[k] = sim[k];
        pb_executor wrap = {&REC_IFACE, &rec};
        pb_status st = run_engine(&c, &wrap, true, &trace, &req[0], &nreq[0], &sum[0]);
        if (st) {
            fprintf(stderr, "bench costmodel: real run failed: %s\n", pb_status_str(st));
            rc = PB_EXIT_RUNTIME;
        }
    }
    /* the sims' runs of the same trace */
    for (int k = 0; k < N_SIM && rc == PB_EXIT_OK; k++) {
        if (!sim[k]) continue;
        pb_executor *ex = pb_executor_sim_create(&c.m, &c.hw, &c.cost, 1, &sp[k], &err);
        pb_status st = ex ? run_engine(&c, ex, false, &trace, &req[1 + k], &nreq[1 + k], &sum[1 + k]) : PB_ERR_INVALID;
        pb_executor_destroy(ex);
        if (st || nreq[1 + k] != nreq[0]) {
            fprintf(stderr, "bench costmodel: %s sim run failed: %s\n", SIM_NAME[k], st ? pb_status_str(st) : "request count");
            rc = PB_EXIT_RUNTIME;
        }
    }

    if (rc == PB_EXIT_OK) {
        /* per-step errors, all / decode-only / prefill-containing steps */
        const int64_t ns = rec.n;
        double *e = pb_xmalloc(sizeof *e * (size_t)(ns ? ns : 1)), *m = pb_xmalloc(sizeof *m * (size_t)(ns ? ns : 1));
        sum_row rows[32];
        int nr = 0;
        double pred[N_SIM];
        static const char *PH[3] = {"all", "decode", "prefill"};
        for (int ph = 0; ph < 3; ph++) {
            int64_t cnt = 0;
            for (int64_t i = 0; i < ns; i++) {
                const step_row *s = &rec.rows[i];
                bool in = ph == 0 || (ph == 1 && s->n_prefill == 0) || (ph == 2 && s->n_prefill > 0);
                m[i] = in ? s->measured_s * 1e6 : NAN;
                cnt += in;
            }
            char name[48];
            snprintf(name, sizeof name, "steps_%s", PH[ph]);
            for (int k = 0; k < N_SIM; k++) pred[k] = NAN;
            add_row(rows, &nr, name, (double)cnt, pred, false);
            for (int k = 0; k < N_SIM; k++) {
                for (int64_t i = 0; i < ns; i++) {
                    e[i] = isfinite(m[i]) ? rec.rows[i].pred_s[k] * 1e6 : NAN;
                }
                pred[k] = stat(e, ns, 50, false);
            }
            snprintf(name, sizeof name, "step_us_p50_%s", PH[ph]);
            add_row(rows, &nr, name, stat(m, ns, 50, false), pred, false);
            static const char *EN[3] = {"step_abs_err_pct_p50_", "step_abs_err_pct_p90_", "step_err_pct_median_"};
            for (int q = 0; q < 3; q++) {
                for (int k = 0; k < N_SIM; k++) {
                    for (int64_t i = 0; i < ns; i++) {
                        double r = isfinite(m[i]) && m[i] > 0 ? rec.rows[i].pred_s[k] * 1e6 / m[i] - 1 : NAN;
                        e[i] = q < 2 ? 100 * fabs(r) : 100 * r;
                    }
                    pred[k] = sim[k] ? stat(e, ns, q == 1 ? 90 : 50, false) : NAN;
                }
                snprintf(name, sizeof name, "%s%s", EN[q], PH[ph]);
                add_row(rows, &nr, name, NAN, pred, true);
            }
        }
        free(e);
        free(m);
        /* per-request TTFT / TPOT */
        const int64_t nq = nreq[0];
        double *v[1 + N_SIM][2];
        for (int k = 0; k <= N_SIM; k++)
            for (int j = 0; j < 2; j++) {
                v[k][j] = pb_xmalloc(sizeof(double) * (size_t)(nq ? nq : 1));
                for (int64_t i = 0; i < nq; i++)
                    v[k][j][i] = req[k] ? (j ? tpot(&req[k][i]) : ttft(&req[k][i])) * 1e3 : NAN;
            }
        static const char *RN[4] = {"ttft_ms_mean", "ttft_ms_p50", "tpot_ms_mean", "tpot_ms_p50"};
        for (int q = 0; q < 4; q++) {
            for (int k = 0; k < N_SIM; k++) pred[k] = stat(v[1 + k][q / 2], nq, 50, q % 2 == 0);
            add_row(rows, &nr, RN[q], stat(v[0][q / 2], nq, 50, q % 2 == 0), pred, false);
        }
        for (int k = 0; k < N_SIM; k++) pred[k] = sim[k] ? sum[1 + k].duration_s : NAN;
        add_row(rows, &nr, "duration_s", sum[0].duration_s, pred, false);
        for (int k = 0; k < N_SIM; k++) pred[k] = sim[k] ? (double)sum[1 + k].n_finished : NAN;
        add_row(rows, &nr, "finished", (double)sum[0].n_finished, pred, false);

        /* files */
        pb_sbuf sb = {0}, qb = {0}, yb = {0};
        pb_sbuf_printf(&sb, "# costmodel steps: %s on the %s executor vs the cost model (%s%s%s), git %s\n",
                       c.m.name, a.executor, c.hw.name, a.profile ? ", profile " : "", a.profile ? a.profile : "",
                       pb_git_rev());
        pb_sbuf_printf(&sb, "step,n_seqs,n_prefill,prefill_tokens,n_decode,mean_ctx,measured_us,spec_us,profile_us\n");
        for (int64_t i = 0; i < rec.n; i++) {
            const step_row *s = &rec.rows[i];
            pb_sbuf_printf(&sb, "%lld,%d,%d,%lld,%d,%.1f,%.1f", (long long)i, s->n_seqs, s->n_prefill,
                           (long long)s->prefill_tokens, s->n_decode, s->mean_ctx, s->measured_s * 1e6);
            for (int k = 0; k < N_SIM; k++)
                if (isfinite(s->pred_s[k])) pb_sbuf_printf(&sb, ",%.1f", s->pred_s[k] * 1e6);
                else pb_sbuf_printf(&sb, ",");
            pb_sbuf_printf(&sb, "\n");
        }
        pb_sbuf_printf(&qb, "id,arrival_s,prompt_len,output_len,ttft_ms,tpot_ms,spec_ttft_ms,spec_tpot_ms,"
                            "profile_ttft_ms,profile_tpot_ms\n");
        for (int64_t i = 0; i < nq; i++) {
            pb_sbuf_printf(&qb, "%lld,%.3f,%d,%d", (long long)req[0][i].id, req[0][i].arrival_s, req[0][i].prompt_len,
                           req[0][i].output_len);
            for (int k = 0; k <= N_SIM; k++) { fmt_num(&qb, v[k][0][i]); fmt_num(&qb, v[k][1][i]); }
            pb_sbuf_printf(&qb, "\n");
        }
        pb_sbuf_printf(&yb, "metric,real,spec,profile,spec_err_pct,profile_err_pct\n");
        printf("%-28s %12s %12s %12s %10s %10s\n", "metric", "real", "spec", "profile", "spec err%", "prof err%");
        for (int i = 0; i < nr; i++) {
            const sum_row *r = &rows[i];
            double ep[N_SIM];
            for (int k = 0; k < N_SIM; k++)
                ep[k] = r->is_err || !(r->real != 0) ? NAN : 100 * (r->pred[k] / r->real - 1);
            pb_sbuf_printf(&yb, "%s", r->metric);
            fmt_num(&yb, r->real);
            for (int k = 0; k < N_SIM; k++) fmt_num(&yb, r->pred[k]);
            for (int k = 0; k < N_SIM; k++) fmt_num(&yb, ep[k]);
            pb_sbuf_printf(&yb, "\n");
            printf("%-28s %12.4g %12.4g %12.4g %10.1f %10.1f\n", r->metric, r->real, r->pred[0], r->pred[1], ep[0], ep[1]);
        }
        if (a.out) {
            char path[1200];
            const char *names[3] = {"costmodel_steps.csv", "costmodel_requests.csv", "costmodel_summary.csv"};
            pb_sbuf *bufs[3] = {&sb, &qb, &yb};
            for (int f = 0; f < 3 && rc == PB_EXIT_OK; f++) {
                snprintf(path, sizeof path, "%s/%s", a.out, names[f]);
                if (pb_write_file_atomic(path, bufs[f]->s, bufs[f]->len)) {
                    fprintf(stderr, "bench costmodel: cannot write %s\n", path);
                    rc = PB_EXIT_RUNTIME;
                }
            }
            if (rc == PB_EXIT_OK) fprintf(stderr, "costmodel: wrote %s/costmodel_{steps,requests,summary}.csv\n", a.out);
        }
        bool valid = sum[0].n_finished == sum[0].n_requests && sum[0].n_requests > 0;
        printf("Check complete: %s (%lld of %lld requests finished in the real run)\n", valid ? "PASS" : "FAIL",
               (long long)sum[0].n_finished, (long long)sum[0].n_requests);
        if (!valid) rc = PB_EXIT_RUNTIME;
        free(sb.s); free(qb.s); free(yb.s);
        for (int k = 0; k <= N_SIM; k++) { free(v[k][0]); free(v[k][1]); }
    }
    for (int k = 0; k <= N_SIM; k++) free(req[k]);
    free(rec.rows);
    pb_executor_destroy(real);
    for (int k = 0; k < N_SIM; k++) pb_sim_destroy(sim[k]);
    pb_trace_free(&trace);
    return rc;
}
