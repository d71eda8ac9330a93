/* test_fastfwd.c -- the engine's fast path (engine/fastfwd.c, pb_engine_params
 * fast_forward) changes nothing: for many seeded random configurations of the sim
 * executor, the paged KV manager and the policies that claim the fast path (the vLLM
 * ones; spf and priority in a test of their own; a last test checks that these are
 * all the claims), pb_engine_run with fast_forward on gives exactly what
 * it gives with fast_forward off, and what the step-level API (which never fast-
 * forwards) gives: the same status, summary, goodput, request rows, step rows, final
 * clock and step count, and the same per-request and per-step CSV bytes.  Numbers are
 * compared bit for bit, field by field (memcmp of each field: the structs' padding is
 * not part of a result), and the first difference is printed with its config, row and
 * field.
 *
 * The configurations (ff_random_cfg): ShareGPT and Alpaca traces (Poisson arrivals by
 * duration or by count) from light load (the queue often empty: windows end on
 * arrivals) to heavy overload; small KV spaces (a few hundred to a few thousand token
 * slots: windows end on memory, groups get preempted) and some roomier ones; block
 * sizes 1, 8, 16, 32; preemption auto, recompute and swap (with and without CPU
 * blocks); policies vllm-v0.1, vllm-v0.2 (max_paddings 256 and -1) and vllm (mixed or
 * alternate steps); some sequence budgets (max_num_seqs) that bind; some traces where
 * a share of the requests sample n = 2..4 or beam-search with width 2..4 amid n = 1
 * requests; max_steps and max_clock_s limits that stop a run mid-window; a few runs
 * with check_every_step.
 *
 * The comparison is not vacuous: heavy ShareGPT configurations run over a thousand
 * steps, most steps of the runs follow a pure-decode step (no prefill, preemption or
 * swap; single-sequence groups; every running group in the batch), and the fast loop
 * replays many of them (pb_engine_fast_forwarded: > 0 on every heavy ShareGPT run and
 * on the stop sweeps' base runs, over a quarter of all steps; 0 with fast_forward off
 * and through the step-level API).  The replay's preemption paths are covered too:
 * counted once with a temporary counter, these runs replay about a million steps that
 * preempt (recompute and swap victims; some leaving no group running) and hand about
 * a quarter million of them to the policy to complete (mixed steps whose heads are no
 * longer held after the preemption); dropping the victim's block phase or answering
 * steady_preempted always true makes the test fail (tried).  Beam search is replayed
 * by its own loop (the manager's block trees): beam_fast_forward_equals_step_by_step
 * runs configurations where every request beam-searches (width 2..8); dropping the
 * re-check of the heads when dying beams free blocks, giving a parent's first child
 * the sibling share, or counting the reservation wrong makes it fail (tried); so do
 * not asking the policy again after groups finish inside the replay, or freeing the
 * wrong one (tried).  Its mixed steps (arrivals admitted inside a beam replay,
 * fastfwd.c "Mixed steps"; a third of these configurations with a token budget the
 * beams' decodes make bind) are counted and must occur; leaving the replayed
 * decodes out of the admission budget, the decode contexts out of the batch, the
 * prefills out of the step's row, the prefills' computed KV out of the groups, or
 * not marking the replayed groups decoded makes it fail (tried), and so does
 * joining a group one step late. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beam_tables.h"
#include "block_manager.h"
#include "client.h"
#include "kv_contiguous.h"
#include "engine.h"
#include "executor_sim.h"
#include "pbtest.h"
#include "rng.h"
#include "spec.h"
#include "workload.h"

typedef struct { pb_model m; pb_hw hw; pb_sim_cost c; } specs;

static bool specs_load(specs *s) {
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    const char *dir = pb_spec_dir();
    if (pb_model_load(dir, "opt-13b", &s->m, &e) || pb_hw_load(dir, "a100-40gb", &s->hw, &e) ||
        pb_sim_cost_load(dir, "a100-40gb", &s->c, &e)) {
        fprintf(stderr, "  specs: %s\n", e.msg);
        return false;
    }
    return true;
}

/* ---- one configuration ---- */

typedef struct {
    uint64_t seed;               /* the trace's and the engine's                        */
    const char *dataset;         /* sharegpt | alpaca                                   */
    bool heavy;                  /* overload (the control's configurations)             */
    double rate;                 /* Poisson arrivals, req/s                             */
    double duration_s;           /* > 0: arrivals in [0, duration_s); else num requests */
    int64_t num;
    double multi_frac;           /* share of requests that sample n = 2..4 or beam-search */
    bool beam;                   /* ... with width 2..4                                 */
    int32_t width_max;           /* ... or 2..width_max when > 0                        */
    int32_t block_size, gpu_blocks, cpu_blocks;
    const char *policy;
    pb_step_mode step_mode;
    int32_t max_paddings;
    int32_t max_num_seqs;
    int32_t max_num_batched_tokens;   /* 0 = the engine's default                      */
    pb_preempt_mode preemption;
    int64_t max_steps;           /* 0 = none                                            */
    double max_clock_s;          /* 0 = none                                            */
    bool check_every_step;
    pb_client_cfg client;        /* closed loop / concurrency limit: the client sends   */
    int32_t turns_max;           /* closed loop: conversations of 1..turns_max rows     */
    const pb_beam_table *scores; /* beam scores: a measured table, or NULL: synthetic   */
} ff_cfg;

static void ff_describe(const ff_cfg *c, char *buf, size_t n) {
    snprintf(buf, n,
             "seed %llu %s%s rate %.3g %s %.3g%s multi %.2f (%s) block %d gpu %d cpu %d "
             "policy %s step %s paddings %d max_seqs %d max_tokens %d preempt %s max_steps %lld max_clock %.3g%s",
             (unsigned long long)c->seed, c->dataset, c->heavy ? " heavy" : "", c->rate,
             c->duration_s > 0 ? "duration" : "num", c->duration_s > 0 ? c->duration_s : (double)c->num,
             c->duration_s > 0 ? " s" : "", c->multi_frac, c->beam ? "beam" : "n", c->block_size,
             c->gpu_blocks, c->cpu_blocks, c->policy, pb_step_mode_str(c->step_mode), c->max_paddings,
             c->max_num_seqs, c->max_num_batched_tokens, pb_preempt_mode_str(c->preemption), (long long)c->max_steps,
             c->max_clock_s,
             c->check_every_step ? " check_every_step" : "");
    size_t len = strlen(buf);
    if (pb_client_active(&c->client) && len < n)
        snprintf(buf + len, n - len, " client: closed %d (turns <= %d) think %g %s, max concurrency %d",
                 c->client.closed_loop, c->turns_max, c->client.think_time_s, pb_think_kind_name(c->client.think),
                 c->client.max_concurrency);
}

static double uniform(pb_rng *r, double lo, double hi) { return lo + (hi - lo) * pb_rng_uniform(r); }
static int32_t pick(pb_rng *r, const int32_t *v, int n) { return v[pb_rng_below(r, (uint64_t)n)]; }

/* Configuration i of the random sweep (seeded by i). */
static ff_cfg ff_random_cfg(uint64_t i) {
    pb_rng r;
    pb_rng_seed(&r, 0xff00 + i, 0);
    ff_cfg c;
    memset(&c, 0, sizeof c);
    c.seed = i;
    bool sharegpt = pb_rng_uniform(&r) < 0.6;
    c.dataset = sharegpt ? "sharegpt" : "alpaca";
    /* load: ShareGPT requests take ~340 decode steps, Alpaca ones ~60 */
    double u = pb_rng_uniform(&r), scale = sharegpt ? 1.0 : 4.0;
    c.heavy = u >= 0.6;
    c.rate = scale * (u < 0.3 ? uniform(&r, 0.03, 0.3) : u < 0.6 ? uniform(&r, 0.3, 2) : uniform(&r, 2, 8));
    int64_t n_req = c.heavy ? 60 + (int64_t)pb_rng_below(&r, 60) : 15 + (int64_t)pb_rng_below(&r, 30);
    if (pb_rng_uniform(&r) < 0.5) c.duration_s = (double)n_req / c.rate;
    else c.num = n_req;
    if (pb_rng_uniform(&r) < 0.4) {
        c.multi_frac = uniform(&r, 0.1, 0.4);
        c.beam = pb_rng_uniform(&r) < 0.5;
    }
    /* KV space: mostly small, so that windows end on memory and groups get preempted */
    static const int32_t BS[] = {1, 8, 16, 32};
    c.block_size = pick(&r, BS, 4);
    double tokens = pb_rng_uniform(&r) < 0.75 ? 640 * pow(10.0, pb_rng_uniform(&r)) : uniform(&r, 8000, 16000);
    c.gpu_blocks = (int32_t)(tokens / c.block_size);
    u = pb_rng_uniform(&r);
    c.preemption = u < 0.4 ? PB_PREEMPT_AUTO : u < 0.7 ? PB_PREEMPT_RECOMPUTE : PB_PREEMPT_SWAP;
    if (c.preemption == PB_PREEMPT_SWAP || pb_rng_uniform(&r) < 0.5)
        c.cpu_blocks = (int32_t)(c.gpu_blocks * uniform(&r, 0.25, 1.0));
    /* policy and step structure */
    u = pb_rng_uniform(&r);
    static const int32_t PADDINGS[] = {256, -1};
    c.policy = u < 0.35 ? "vllm-v0.1" : u < 0.65 ? "vllm-v0.2" : "vllm";
    /* vllm-v0.1 steps are mixed and vllm-v0.2 ones alternate whatever step_mode says */
    if (!strcmp(c.policy, "vllm-v0.2")) c.step_mode = PB_STEP_ALTERNATE;
    else if (!strcmp(c.policy, "vllm")) c.step_mode = pb_rng_uniform(&r) < 0.6 ? PB_STEP_ALTERNATE : PB_STEP_MIXED;
    c.max_paddings = c.step_mode == PB_STEP_ALTERNATE ? pick(&r, PADDINGS, 2) : -1;
    static const int32_t SEQS[] = {4, 16, 64};
    c.max_num_seqs = pb_rng_uniform(&r) < 0.25 ? pick(&r, SEQS, 3) : 256;
    /* limits that stop the run mid-window */
    u = pb_rng_uniform(&r);
    if (u < 0.12) c.max_steps = 50 + (int64_t)pb_rng_below(&r, 3000);
    else if (u < 0.24) c.max_clock_s = uniform(&r, 2, 60);
    c.check_every_step = pb_rng_uniform(&r) < 0.1;
    return c;
}

/* The trace of c: the workload's, then a share of the requests made parallel-sampling
 * (n = 2..4) or beam-search (width 2..4) ones. */
static bool ff_trace(const ff_cfg *c, pb_trace *t) {
    pb_workload_cfg wc;
    pb_workload_defaults(&wc);
    snprintf(wc.dataset, sizeof wc.dataset, "%s", c->dataset);
    wc.arrivals.rate = c->rate;
    wc.arrivals.duration_s = c->duration_s;
    wc.arrivals.num = c->num;
    char err[512];
    if (pb_workload_generate(&wc, c->seed, t, err, sizeof err)) {
        fprintf(stderr, "  trace: %s\n", err);
        return false;
    }
    pb_rng r;
    pb_rng_seed(&r, c->seed, 7);
    for (int64_t i = 0; i < t->n; i++) {
        if (pb_rng_uniform(&r) >= c->multi_frac) continue;
        int16_t k = (int16_t)(2 + pb_rng_below(&r, c->width_max > 0 ? (uint64_t)c->width_max - 1 : 3));
        t->reqs[i].n = k;
        if (c->beam) t->reqs[i].beam_width = k;
    }
    for (int64_t i = 0, conv = 0; c->turns_max > 0 && i < t->n; conv++) {   /* rows in conversations */
        int32_t turns = 1 + (int32_t)pb_rng_below(&r, (uint64_t)c->turns_max);
        for (int32_t k = 0; k < turns && i < t->n; k++, i++) {
            t->reqs[i].conversation_id = (int32_t)conv;
            t->reqs[i].turn = k;
        }
    }
    return true;
}

/* ---- one run ---- */

typedef enum {
    FF_OFF,        /* pb_engine_run, fast_forward = false: the reference          */
    FF_ON,         /* pb_engine_run, fast_forward = true                          */
    FF_STEPWISE    /* begin / step / end with fast_forward = true (never fast)    */
} ff_mode;

typedef struct {
    pb_status st;
    pb_run_summary sum;
    int64_t good_met;
    double good_frac, good_rate;
    int64_t n_reqs, n_steps;
    pb_req_metrics *reqs;        /* copies of the metrics' rows                 */
    pb_step_metrics *steps;
    int64_t engine_steps;
    double engine_now;
    int64_t fast_steps;          /* of the steps, replayed by the fast loop     */
    int64_t fast_mixed;          /* of those, mixed steps (admitted mid-replay) */
    int64_t kv_used;             /* GPU blocks still used after the run         */
    int64_t held;                /* a client's requests sent at another time than
                                    their rows' arrival_s                         */
    char *req_csv, *step_csv;
    size_t req_len, step_len;
} ff_out;

static void ff_out_free(ff_out *o) {
    free(o->reqs);
    free(o->steps);
    free(o->req_csv);
    free(o->step_csv);
}

static void *dup_bytes(const void *p, size_t n) {
    void *q = malloc(n ? n : 1);
    if (n) memcpy(q, p, n);
    return q;
}

static void ff_run(const specs *sp, const ff_cfg *c, const pb_trace *t, ff_mode mode, ff_out *o) {
    memset(o, 0, sizeof *o);
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.block_size = c->block_size;
    pp.n_gpu_blocks = c->gpu_blocks;
    pp.n_cpu_blocks = c->cpu_blocks;
    pb_kv_manager *kv = NULL;
    pb_policy *pol = NULL;
    pb_engine *e = NULL;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_executor *ex = pb_executor_sim_create(&sp->m, &sp->hw, &sp->c, 1, NULL, &err);
    PB_ASSERT(ex && pb_paged_kv_create(&pp, &kv) == PB_OK && pb_policy_create(c->policy, NULL, &pol, NULL) == PB_OK);
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.seed = c->seed;
    ep.preemption = c->preemption;
    ep.step_mode = c->step_mode;
    ep.max_paddings = c->max_paddings;
    ep.max_num_seqs = c->max_num_seqs;
    if (c->max_num_batched_tokens > 0) ep.max_num_batched_tokens = c->max_num_batched_tokens;
    ep.max_steps = c->max_steps;
    ep.max_clock_s = c->max_clock_s;
    ep.check_every_step = c->check_every_step;
    ep.kv_bytes_per_token = pb_kv_bytes_per_token(&sp->m, 1);
    ep.fast_forward = mode != FF_OFF;
    pb_client *cl = NULL;
    pb_trace none = {NULL, 0};
    if (pb_client_active(&c->client)) {   /* the client sends t: the engine's own trace is empty */
        PB_ASSERT((cl = pb_client_create(t, &c->client, c->seed)) != NULL);
        ep.source = pb_client_source(cl);
        t = &none;
    }
    ep.beam_scores = c->scores;
    PB_ASSERT(pb_engine_create(&ep, kv, pol, ex, &e) == PB_OK);
    pb_metrics *m = pb_metrics_create(true);

    if (mode == FF_STEPWISE) {
        o->st = pb_engine_begin(e, t, m);
        for (bool done = false; o->st == PB_OK && !done;) o->st = pb_engine_step(e, &done);
        pb_status end = pb_engine_end(e);
        if (o->st == PB_OK) o->st = end;
    } else {
        o->st = pb_engine_run(e, t, m);
    }
    pb_metrics_summary(m, &o->sum);
    pb_metrics_goodput(m, 200, 50, o->sum.duration_s, &o->good_met, &o->good_frac, &o->good_rate);
    const pb_req_metrics *rows = pb_metrics_requests(m, &o->n_reqs);
    o->reqs = dup_bytes(rows, (size_t)o->n_reqs * sizeof *rows);
    const pb_step_metrics *steps = pb_metrics_steps(m, &o->n_steps);
    o->steps = dup_bytes(steps, (size_t)o->n_steps * sizeof *steps);
    o->engine_steps = pb_engine_steps(e);
    o->engine_now = pb_engine_now(e);
    o->fast_steps = pb_engine_fast_forwarded(e);
    o->fast_mixed = pb_engine_fast_mixed(e);
    o->kv_used = pb_block_alloc_used(pb_paged_gpu(kv));
    FILE *f = open_memstream(&o->req_csv, &o->req_len);
    pb_metrics_write_requests(m, f, "x,");
    fclose(f);
    f = open_memstream(&o->step_csv, &o->step_len);
    pb_metrics_write_steps(m, f, "x,");
    fclose(f);
    if (o->st == PB_OK) PB_CHECK(pb_metrics_check(m) == PB_OK);
    if (cl && o->st == PB_OK) PB_CHECK(pb_client_check(cl) == PB_OK);
    for (int64_t k = 0; cl && k < pb_client_sent(cl); k++)
        o->held += rows[k].arrival_s != pb_client_trace(cl)->reqs[pb_client_row_of(cl, k)].arrival_s;

    pb_client_destroy(cl);
    pb_metrics_destroy(m);
    pb_engine_destroy(e);
    pb_executor_destroy(ex);
    pb_policy_destroy(pol);
    pb_kv_destroy(kv);
}

/* ---- comparing two runs ---- */

/* Field f of a and b, bit for bit; on the first difference print it and return false. */
#define SAME(what, row, a, b, f)                                                            \
    do {                                                                                    \
        if (memcmp(&(a).f, &(b).f, sizeof (a).f)) {                                         \
            fprintf(stderr, "  %s: %s", desc, what);                                        \
            if ((row) >= 0) fprintf(stderr, " row %lld", (long long)(row));                 \
            fprintf(stderr, " field %s: %.17g vs %.17g\n", #f, (double)(a).f, (double)(b).f); \
            return false;                                                                   \
        }                                                                                   \
    } while (0)

static bool same_summary(const char *desc, const pb_run_summary *a, const pb_run_summary *b) {
#define S(f) SAME("summary", -1, *a, *b, f)
    S(n_requests); S(n_finished); S(n_rejected); S(n_unfinished); S(n_steps); S(n_prefill_steps);
    S(duration_s); S(busy_s);
    S(norm_latency_mean); S(norm_latency_p50); S(norm_latency_p90); S(norm_latency_p99);
    S(e2e_latency_mean); S(e2e_p50); S(e2e_p90); S(e2e_p99);
    S(ttft_mean_ms); S(ttft_p50_ms); S(ttft_p90_ms); S(ttft_p99_ms);
    S(tpot_mean_ms); S(tpot_p50_ms); S(tpot_p90_ms); S(tpot_p99_ms);
    S(itl_mean_ms); S(itl_p50_ms); S(itl_p90_ms); S(itl_p99_ms);
    S(req_throughput); S(output_tok_throughput); S(total_tok_throughput);
    S(prompt_tokens); S(output_tokens); S(avg_batched_requests); S(avg_batched_seqs);
    S(mem_token_frac); S(mem_reserved_frac); S(mem_internal_frac); S(mem_free_frac); S(mem_saving);
    S(n_preempt_recompute); S(n_preempt_swap); S(swap_blocks); S(swap_bytes);
    S(prefix_caching); S(prefix_hit_tokens); S(prefix_query_tokens); S(prefix_hit_frac);
#undef S
    return true;
}

static bool same_request(const char *desc, int64_t i, const pb_req_metrics *a, const pb_req_metrics *b) {
#define R(f) SAME("request", i, *a, *b, f)
    R(id); R(arrival_s); R(first_token_s); R(finish_s); R(prompt_len); R(output_len); R(n_seqs);
    R(n); R(beam_width); R(n_recompute); R(n_swap); R(swap_blocks); R(swap_bytes); R(finished);
    R(rejected);
#undef R
    return true;
}

static bool same_step(const char *desc, int64_t i, const pb_step_metrics *a, const pb_step_metrics *b) {
#define T(f) SAME("step", i, *a, *b, f)
    T(t_s); T(latency_s); T(swap_s); T(copy_s); T(n_groups); T(n_seqs); T(n_prefill_seqs);
    T(prefill_tokens); T(decode_tokens); T(n_preempted); T(n_swap_in_groups); T(n_copies);
    T(n_swap_in); T(n_swap_out); T(n_running); T(n_waiting); T(n_swapped);
    T(mem.total_slots); T(mem.token_slots); T(mem.reserved_slots); T(mem.internal_frag_slots);
    T(mem.free_slots); T(mem.logical_blocks); T(mem.physical_blocks); T(mem.gpu_blocks_total);
    T(mem.gpu_blocks_free); T(mem.gpu_blocks_cached); T(mem.cpu_blocks_total); T(mem.cpu_blocks_used);
#undef T
    return true;
}

/* The first line where two CSV texts differ, printed; false if they differ. */
static bool same_text(const char *desc, const char *what, const char *a, size_t na, const char *b, size_t nb) {
    if (na == nb && !memcmp(a, b, na)) return true;
    size_t i = 0, line = 1, start = 0;
    for (; i < na && i < nb && a[i] == b[i]; i++)
        if (a[i] == '\n') { line++; start = i + 1; }
    const char *ea = memchr(a + start, '\n', na - start), *eb = memchr(b + start, '\n', nb - start);
    int la = (int)((ea ? (size_t)(ea - a) : na) - start), lb = (int)((eb ? (size_t)(eb - b) : nb) - start);
    fprintf(stderr, "  %s: %s CSV line %zu: '%.*s' vs '%.*s'\n", desc, what, line, la, a + start, lb, b + start);
    return false;
}

/* Step rows first (the first step that differs is where the runs diverged), then
 * request rows, the summary and the rest. */
static bool ff_same(const char *desc, const ff_out *a, const ff_out *b) {
    SAME("run", -1, *a, *b, st);
    for (int64_t i = 0; i < a->n_steps && i < b->n_steps; i++)
        if (!same_step(desc, i, &a->steps[i], &b->steps[i])) return false;
    SAME("steps", -1, *a, *b, n_steps);
    for (int64_t i = 0; i < a->n_reqs && i < b->n_reqs; i++)
        if (!same_request(desc, i, &a->reqs[i], &b->reqs[i])) return false;
    SAME("requests", -1, *a, *b, n_reqs);
    if (!same_summary(desc, &a->sum, &b->sum)) return false;
    SAME("goodput", -1, *a, *b, good_met);
    SAME("goodput", -1, *a, *b, good_frac);
    SAME("goodput", -1, *a, *b, good_rate);
    SAME("engine", -1, *a, *b, engine_steps);
    SAME("engine", -1, *a, *b, engine_now);
    SAME("kv", -1, *a, *b, kv_used);
    return same_text(desc, "request", a->req_csv, a->req_len, b->req_csv, b->req_len) &&
           same_text(desc, "step", a->step_csv, a->step_len, b->step_csv, b->step_len);
}

/* Steps that follow a pure-decode step: the previous step prefilled, preempted and
 * swapped nothing, its groups were single-sequence and all the running ones. */
static int64_t after_pure_decode(const ff_out *o) {
    int64_t k = 0;
    for (int64_t i = 1; i < o->n_steps; i++) {
        const pb_step_metrics *p = &o->steps[i - 1];
        k += p->n_prefill_seqs == 0 && p->n_preempted == 0 && p->n_swap_in == 0 && p->n_swap_out == 0 &&
             p->n_seqs == p->n_groups && p->n_groups == p->n_running && p->n_groups > 0;
    }
    return k;
}

static int64_t mixed_seen;   /* mixed steps the fast runs of ff_check replayed */

/* Run c on t with fast_forward off and on (and, when stepwise, through the step-level
 * API) and compare; the reference run is left in *ref (the caller frees it), the steps
 * the fast run replayed fast in *fast_steps (when not NULL). */
static bool ff_check(const specs *sp, const ff_cfg *c, const pb_trace *t, bool stepwise, ff_out *ref,
                     int64_t *fast_steps) {
    char desc[512];
    ff_describe(c, desc, sizeof desc);
    ff_run(sp, c, t, FF_OFF, ref);
    if (ref->st != PB_OK) fprintf(stderr, "  %s: run failed: %s\n", desc, pb_status_str(ref->st));
    PB_CHECK(ref->st == PB_OK);
    ff_out other;
    ff_run(sp, c, t, FF_ON, &other);
    bool ok = ff_same(desc, ref, &other);
    PB_CHECK_EQ_INT(ref->fast_steps, 0);
    if (fast_steps) *fast_steps = other.fast_steps;
    mixed_seen += other.fast_mixed;
    ff_out_free(&other);
    if (ok && stepwise) {
        ff_run(sp, c, t, FF_STEPWISE, &other);
        ok = ff_same(desc, ref, &other);
        PB_CHECK_EQ_INT(other.fast_steps, 0);
        ff_out_free(&other);
    }
    return ok;
}

/* ---- the tests ---- */

#define FF_CONFIGS 96

PB_TEST(fast_forward_equals_step_by_step) {
    specs sp;
    PB_REQUIRE(specs_load(&sp));
    int64_t steps = 0, pure = 0, fast_total = 0;
    int heavy_sharegpt = 0, failed = 0;
    for (uint64_t i = 0; i < FF_CONFIGS; i++) {
        ff_cfg c = ff_random_cfg(i);
        pb_trace t = {0};
        PB_REQUIRE(ff_trace(&c, &t));
        ff_out ref;
        int64_t fast = 0;
        failed += !ff_check(&sp, &c, &t, i % 4 == 0, &ref, &fast);
        if (!c.max_steps && !c.max_clock_s && c.heavy && !strcmp(c.dataset, "sharegpt")) {
            heavy_sharegpt++;
            PB_CHECK(ref.n_steps > 1000);
            PB_CHECK(fast > 0);
        }
        fast_total += fast;
        steps += ref.n_steps;
        pure += after_pure_decode(&ref);
        ff_out_free(&ref);
        pb_trace_free(&t);
    }
    fprintf(stderr, "  %d configurations (%d heavy ShareGPT ones), %lld steps, %lld after a pure-decode step, "
            "%lld replayed fast\n", FF_CONFIGS, heavy_sharegpt, (long long)steps, (long long)pure,
            (long long)fast_total);
    PB_CHECK_EQ_INT(failed, 0);
    PB_CHECK(heavy_sharegpt >= 10);
    PB_CHECK(pure > steps / 2);        /* most steps are in the fast loop's reach */
    PB_CHECK(fast_total > steps / 4);  /* and many of them replayed by it          */
}

/* Beam search replayed (fastfwd.c "Beam replay"): configurations of the
 * random sweep's kind in which every request beam-searches (width 2..8), so every
 * replay is a beam replay -- the manager's block trees, copies on write, the
 * selections, the heads re-checked when dying beams free blocks.  Every one of them
 * without a step or clock limit replays some steps, and together over a third. */
#define FF_BEAM_CONFIGS 48

PB_TEST(beam_fast_forward_equals_step_by_step) {
    specs sp;
    PB_REQUIRE(specs_load(&sp));
    int64_t steps = 0, fast_total = 0, mixed0 = mixed_seen;
    int failed = 0, unlimited = 0, replayed = 0;
    for (uint64_t i = 0; i < FF_BEAM_CONFIGS; i++) {
        ff_cfg c = ff_random_cfg(1000 + i);
        c.multi_frac = 1;
        c.beam = true;
        c.width_max = 8;
        if (c.max_num_seqs < 8) c.max_num_seqs = 16;   /* width 8 must fit a step */
        if (i % 3 == 1)   /* a token budget that the beams' decodes make bind (and long prompts rejected) */
            c.max_num_batched_tokens = !strcmp(c.dataset, "alpaca") ? 48 + 16 * (int32_t)(i % 4) : 384;
        pb_trace t = {0};
        PB_REQUIRE(ff_trace(&c, &t));
        ff_out ref;
        int64_t fast = 0;
        failed += !ff_check(&sp, &c, &t, i % 4 == 0, &ref, &fast);
        if (!c.max_steps && !c.max_clock_s) {
            unlimited++;
            replayed += fast > 0;
        }
        fast_total += fast;
        steps += ref.n_steps;
        ff_out_free(&ref);
        pb_trace_free(&t);
    }
    int64_t mixed = mixed_seen - mixed0;
    fprintf(stderr, "  %d all-beam configurations, %lld steps, %lld replayed fast (%lld mixed); %d of %d "
            "without limits replayed\n", FF_BEAM_CONFIGS, (long long)steps, (long long)fast_total,
            (long long)mixed, replayed, unlimited);
    PB_CHECK_EQ_INT(failed, 0);
    PB_CHECK_EQ_INT(replayed, unlimited);
    PB_CHECK(fast_total > steps / 3);
    PB_CHECK(mixed > 0);
}

/* Beam search under the measured score table (beam.h pb_beam_table_advance in the
 * replay, pb_beam_table_candidates and pb_beam_select in postprocessing): the same
 * all-beam configurations (width 2..6, the table's limit) bit for bit, replaying. */
#define FF_TABLE_CONFIGS 16

PB_TEST(beam_table_fast_forward_equals_step_by_step) {
    specs sp;
    PB_REQUIRE(specs_load(&sp));
    const pb_beam_table *tab = pb_beam_table_by_name("wmt14-kn3");
    PB_REQUIRE(tab != NULL);
    int64_t steps = 0, fast_total = 0;
    int failed = 0;
    for (uint64_t i = 0; i < FF_TABLE_CONFIGS; i++) {
        ff_cfg c = ff_random_cfg(3000 + i);
        c.multi_frac = 1;
        c.beam = true;
        c.width_max = 6;
        c.scores = tab;
        if (c.max_num_seqs < 6) c.max_num_seqs = 16;
        pb_trace t = {0};
        PB_REQUIRE(ff_trace(&c, &t));
        ff_out ref;
        int64_t fast = 0;
        failed += !ff_check(&sp, &c, &t, i % 4 == 0, &ref, &fast);
        fast_total += fast;
        steps += ref.n_steps;
        ff_out_free(&ref);
        pb_trace_free(&t);
    }
    fprintf(stderr, "  %d all-beam configurations under the measured table, %lld steps, %lld replayed fast\n",
            FF_TABLE_CONFIGS, (long long)steps, (long long)fast_total);
    PB_CHECK_EQ_INT(failed, 0);
    PB_CHECK(fast_total > steps / 3);
}

/* The vLLM step in other waiting orders: configurations of the random sweep's kind
 * run by spf (shortest prompt first) and priority (aged SJF), whose steady answers
 * are the vLLM step's (replay.h): arrivals that become the head end a replay, and
 * recompute victims return under the policy's key. */
#define FF_ORDER_CONFIGS 32

PB_TEST(fast_forward_equals_step_by_step_in_other_waiting_orders) {
    specs sp;
    PB_REQUIRE(specs_load(&sp));
    int64_t steps = 0, fast_total = 0;
    int failed = 0;
    for (uint64_t i = 0; i < FF_ORDER_CONFIGS; i++) {
        ff_cfg c = ff_random_cfg(2000 + i);
        c.policy = i % 2 ? "priority" : "spf";
        pb_trace t = {0};
        PB_REQUIRE(ff_trace(&c, &t));
        ff_out ref;
        int64_t fast = 0;
        failed += !ff_check(&sp, &c, &t, i % 4 == 0, &ref, &fast);
        fast_total += fast;
        steps += ref.n_steps;
        ff_out_free(&ref);
        pb_trace_free(&t);
    }
    fprintf(stderr, "  %d spf / priority configurations, %lld steps, %lld replayed fast\n", FF_ORDER_CONFIGS,
            (long long)steps, (long long)fast_total);
    PB_CHECK_EQ_INT(failed, 0);
    PB_CHECK(fast_total > steps / 4);
}

/* A client that waits for answers (workloads/client.h: closed-loop conversations with
 * think times, a concurrency limit) sends the requests through the engine's door as
 * the run goes: its arrivals depend on the finishes, the replayed steps' included.
 * Configurations of the random sweep's kind (beams and parallel samples among them)
 * under clients of every kind: the fast path changes nothing, replays steps in most
 * of them, and the clients did hold requests back (sent later than their rows'
 * arrival_s). */
#define FF_CLIENT_CONFIGS 48

PB_TEST(closed_loop_fast_forward_equals_step_by_step) {
    specs sp;
    PB_REQUIRE(specs_load(&sp));
    int64_t steps = 0, fast_total = 0, held = 0;
    int failed = 0, replayed = 0;
    static const int32_t LIMIT[] = {0, 1, 3, 8, 32};
    for (uint64_t i = 0; i < FF_CLIENT_CONFIGS; i++) {
        ff_cfg c = ff_random_cfg(3000 + i);
        pb_rng r;
        pb_rng_seed(&r, 0xc1 + i, 0);
        c.client.closed_loop = i % 4 != 3;
        c.turns_max = c.client.closed_loop ? 2 + (int32_t)pb_rng_below(&r, 5) : 0;
        c.client.think = i % 2 ? PB_THINK_EXPONENTIAL : PB_THINK_FIXED;
        c.client.think_time_s = i % 5 == 0 ? 0 : uniform(&r, 0.05, 20);
        c.client.max_concurrency = i % 4 == 3 ? pick(&r, LIMIT + 1, 4) : pick(&r, LIMIT, 5);
        pb_trace t = {0};
        PB_REQUIRE(ff_trace(&c, &t));
        ff_out ref;
        int64_t fast = 0;
        failed += !ff_check(&sp, &c, &t, i % 3 == 0, &ref, &fast);
        held += ref.held;
        replayed += fast > 0;
        fast_total += fast;
        steps += ref.n_steps;
        ff_out_free(&ref);
        pb_trace_free(&t);
    }
    fprintf(stderr, "  %d client configurations, %lld steps, %lld replayed fast (%d runs), %lld requests sent "
            "after their row's arrival\n", FF_CLIENT_CONFIGS, (long long)steps, (long long)fast_total, replayed,
            (long long)held);
    PB_CHECK_EQ_INT(failed, 0);
    PB_CHECK(replayed > FF_CLIENT_CONFIGS / 2);
    PB_CHECK(fast_total > steps / 4);
    PB_CHECK(held > 0);
}

/* What the fast path claims is what the tests above run: the policies with steady
 * answers (replay.h) are the ones they draw, the paged manager (without prefix
 * caching, whose computed() rules the fast path out) is the only one with replay
 * operations, and the sim the only executor that reads a batch's sums alone. */
PB_TEST(fast_path_claims_are_the_tested_ones) {
    static const char *const TESTED[] = {"vllm", "vllm-v0.1", "vllm-v0.2", "spf", "priority"};
    int claimed = 0;
    for (const pb_policy_entry *en = pb_policy_registry; en->name; en++) {
        pb_policy *p = NULL;
        PB_REQUIRE(pb_policy_create(en->name, NULL, &p, NULL) == PB_OK);
        bool tested = false;
        for (size_t k = 0; k < PB_ARRAY_LEN(TESTED); k++) tested |= !strcmp(en->name, TESTED[k]);
        if (p->iface->steady && !p->iface->prefix_caching) {
            claimed++;
            if (!tested) fprintf(stderr, "  policy %s has steady answers but no test here\n", en->name);
            PB_CHECK(tested);
        }
        pb_policy_destroy(p);
    }
    PB_CHECK_EQ_INT(claimed, (int)PB_ARRAY_LEN(TESTED));
    pb_paged_params pp;
    pb_paged_params_default(&pp);
    pp.n_gpu_blocks = 64;
    pb_kv_manager *kv = NULL;
    PB_REQUIRE(pb_paged_kv_create(&pp, &kv) == PB_OK);
    PB_CHECK(kv->iface->replay != NULL && kv->iface->computed == NULL);
    pb_kv_destroy(kv);
    pp.prefix_caching = true;
    PB_REQUIRE(pb_paged_kv_create(&pp, &kv) == PB_OK);
    PB_CHECK(kv->iface->computed != NULL);
    pb_kv_destroy(kv);
    pb_kv_contiguous_params cp = {.num_slots = 4096, .max_len = 2048, .rule = PB_RESV_MAX};
    PB_REQUIRE(pb_kv_contiguous_create(&cp, &kv) == PB_OK);
    PB_CHECK(kv->iface->replay == NULL);
    pb_kv_destroy(kv);
    specs sp;
    PB_REQUIRE(specs_load(&sp));
    pb_executor *ex = pb_executor_sim_create(&sp.m, &sp.hw, &sp.c, 1, NULL, NULL);
    PB_REQUIRE(ex);
    PB_CHECK(ex->iface->caps == PB_EXEC_SUMS_ONLY);
    pb_executor_destroy(ex);
}

/* A run stopped by max_steps or max_clock_s stops at the same step with the fast loop:
 * two base runs, stopped after k steps for k spread over the whole run, and at the
 * clock of a step's start (the run goes on: it stops once the clock PASSES the limit)
 * and just before it. */
PB_TEST(fast_forward_stops_where_step_by_step_stops) {
    specs sp;
    PB_REQUIRE(specs_load(&sp));
    ff_cfg base[2] = {
        {.seed = 101, .dataset = "sharegpt", .rate = 1.0, .num = 12, .block_size = 16, .gpu_blocks = 60,
         .policy = "vllm-v0.1", .step_mode = PB_STEP_MIXED, .max_paddings = -1, .max_num_seqs = 256,
         .preemption = PB_PREEMPT_RECOMPUTE},
        {.seed = 102, .dataset = "alpaca", .rate = 4.0, .num = 30, .multi_frac = 0.25, .beam = true,
         .block_size = 8, .gpu_blocks = 150, .cpu_blocks = 100, .policy = "vllm",
         .step_mode = PB_STEP_ALTERNATE, .max_paddings = 256, .max_num_seqs = 256,
         .preemption = PB_PREEMPT_AUTO},
    };
    enum { K = 24 };
    int failed = 0;
    for (int b = 0; b < 2; b++) {
        pb_trace t = {0};
        PB_REQUIRE(ff_trace(&base[b], &t));
        ff_out full;
        int64_t fast = 0;
        failed += !ff_check(&sp, &base[b], &t, false, &full, &fast);
        PB_CHECK(full.n_steps > 300 && fast > 0);
        for (int j = 0; j < K; j++) {
            ff_cfg c = base[b];
            ff_out ref;
            c.max_steps = 1 + j % 3 + (int64_t)j * full.n_steps / K;
            failed += !ff_check(&sp, &c, &t, false, &ref, NULL);
            ff_out_free(&ref);
            c.max_steps = 0;
            double at = full.steps[(int64_t)j * full.n_steps / K].t_s;
            if (!(at > 0)) continue;   /* 0 = no limit */
            c.max_clock_s = at;
            failed += !ff_check(&sp, &c, &t, false, &ref, NULL);
            ff_out_free(&ref);
            c.max_clock_s = nextafter(at, 0);
            failed += !ff_check(&sp, &c, &t, false, &ref, NULL);
            ff_out_free(&ref);
        }
        ff_out_free(&full);
        pb_trace_free(&t);
    }
    PB_CHECK_EQ_INT(failed, 0);
}

PB_TEST_MAIN()
