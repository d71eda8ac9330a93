/* cmd_profile.c -- `pagedbench profile`: measure real step latencies over a grid of
 * batch compositions and write the step profile the sim executor can use instead of
 * its analytic forward-pass model (format: executors/sim_profile.h).
 *
 *   pagedbench profile --model opt-13b --hardware h100-sxm --out results/profile_opt13b_h100.csv
 *   pagedbench profile --executor cpu --model tiny-opt --out /tmp/p.csv   (CI: cpu executor)
 *
 * Decode rows: every (batch, context) of the grid, one decode token per sequence, all
 * sequences at that context; prefill rows: total prompt tokens T split into prompts
 * of at most --prompt-len tokens.  Each point: --warmup unmeasured steps, then the
 * median of --reps steps (the executor's latency: CUDA events around the forward
 * pass and sampling on a GPU, wall clock on the cpu).  The KV cache is sized by
 * --kv-gib (the paper's 12 GiB for OPT-13B); a grid point that needs more KV than
 * that reuses physical blocks across sequences (the bytes read stay the same; the
 * pool is far larger than L2).
 *
 * A point that fails is named on stderr and in a '# FAILED' comment line of the CSV, and
 * the grid goes on; the CSV then holds every point that was measured (the sim's
 * loader rejects a decode grid with holes) and the exit is 1.
 * Without a CUDA device (cuda executor) it prints `SKIP: no GPU (<reason>)`
 * and exits 77.  Exit codes otherwise: 0 ok, 1 runtime failure, 2 usage. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_manager.h"   /* PB_PAGED_BLOCK_SIZE */
#include "cli.h"
#include "commands.h"
#include "executor_real.h"
#include "kbench.h"   /* pb_kbench_device_name (through the CUDA module in a CUDA build) */
#include "pb.h"
#include "rng.h"
#include "spec.h"

#define MAX_GRID 32

typedef struct {
    const char *model, *hardware, *out, *executor;
    int32_t tp, block_size, prompt_len, reps, warmup, max_ctx;
    double kv_gib;
    bool contiguous;
    int32_t batches[MAX_GRID], n_batches;
    int32_t contexts[MAX_GRID], n_contexts;
    int32_t prefill[MAX_GRID], n_prefill;
    uint64_t seed;
} prof_args;

enum { O_MODEL = 256, O_HARDWARE, O_EXECUTOR, O_OUT, O_TP, O_BLOCK, O_CONTIG, O_KV_GIB, O_BATCHES, O_CONTEXTS,
       O_PREFILL, O_PROMPT_LEN, O_REPS, O_WARMUP, O_SEED };
static const pb_cli_opt OPTS[] = {
    {"model", O_MODEL, "NAME", "model spec (experiments/models/NAME.yaml; default opt-13b)"},
    {"hardware", O_HARDWARE, "NAME", "hardware spec named in the profile header (default none)"},
    {"executor", O_EXECUTOR, "cuda|cpu", "cuda: the GPU; cpu: the tiny-model cpu executor (default cuda)"},
    {"out", O_OUT, "PATH", "output CSV (written atomically; required)"},
    {"tp", O_TP, "N", "tensor-parallel GPUs (default 1)"},
    {"block-size", O_BLOCK, "N", "KV block size (default " PB_XSTR(PB_PAGED_BLOCK_SIZE) ")"},
    {"contiguous", O_CONTIG, NULL, "profile the contiguous (FasterTransformer) KV kernel"},
    {"kv-gib", O_KV_GIB, "X", "KV cache budget per GPU, GiB (default 12)"},
    {"batches", O_BATCHES, "LIST", "decode batch sizes (default 1,2,4,8,16,32,64,128,256)"},
    {"contexts", O_CONTEXTS, "LIST", "decode context lengths (default 16,64,128,256,512,1024,2048)"},
    {"prefill", O_PREFILL, "LIST", "prefill total tokens (default 16,64,128,256,512,1024,2048,2560)"},
    {"prompt-len", O_PROMPT_LEN, "N", "longest prompt in a prefill step (default 512)"},
    {"reps", O_REPS, "N", "measured steps per point, median (default 5)"},
    {"warmup", O_WARMUP, "N", "unmeasured steps per point (default 2)"},
    {"seed", O_SEED, "N", "tokens and weights seed (default 0)"},
    {NULL, 0, NULL, NULL}};
static const pb_cli CLI = {
    "profile", "--out PATH [options]",
    "Measures step latencies of the real engine's executor over a grid of batch compositions\n"
    "and writes a step profile CSV for the sim executor (executors/sim_profile.h:\n"
    "phase,batch,tokens,context,latency_us).  Contexts and prompt lengths above the model's\n"
    "max_len are clipped.",
    OPTS, NULL, NULL, "the cuda executor without a CUDA device: `SKIP: no GPU (<reason>)`"};

static int parse_list_(const char *s, int32_t *out, int32_t *n) {
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 1 || v > (1 << 24) || *n >= MAX_GRID) return -1;
        out[(*n)++] = (int32_t)v;
        p = end;
        if (*p == ',') p++;
        else if (*p) return -1;
    }
    return *n > 0 ? 0 : -1;
}

/* The options into *a; the exit status when they end the command (help, error), else -1. */
static int parse_args_(int argc, char **argv, prof_args *a) {
    memset(a, 0, sizeof *a);
    a->model = "opt-13b";
    a->executor = "cuda";
    a->tp = 1;
    a->block_size = PB_PAGED_BLOCK_SIZE;
    a->prompt_len = 512;
    a->reps = 5;
    a->warmup = 2;
    a->kv_gib = 12.0;
    parse_list_("1,2,4,8,16,32,64,128,256", a->batches, &a->n_batches);
    parse_list_("16,64,128,256,512,1024,2048", a->contexts, &a->n_contexts);
    parse_list_("16,64,128,256,512,1024,2048,2560", a->prefill, &a->n_prefill);
    pb_cli_parser p;
    pb_cli_begin(&p, &CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        int64_t i;
        switch (c) {
        case O_CONTIG: a->contiguous = true; break;
        case O_MODEL: a->model = p.arg; break;
        case O_HARDWARE: a->hardware = p.arg; break;
        case O_EXECUTOR:
            if (strcmp(p.arg, "cuda") && strcmp(p.arg, "cpu")) pb_cli_bad(&p, "expected cuda or cpu, got '%s'", p.arg);
            a->executor = p.arg;
            break;
        case O_OUT: a->out = p.arg; break;
        case O_TP: if (pb_cli_int(&p, 1, 64, &i)) a->tp = (int32_t)i; break;
        case O_BLOCK: if (pb_cli_int(&p, 1, 256, &i)) a->block_size = (int32_t)i; break;
        case O_PROMPT_LEN: if (pb_cli_int(&p, 1, 1 << 20, &i)) a->prompt_len = (int32_t)i; break;
        case O_REPS: if (pb_cli_int(&p, 1, 1000, &i)) a->reps = (int32_t)i; break;
        case O_WARMUP: if (pb_cli_int(&p, 0, 1000, &i)) a->warmup = (int32_t)i; break;
        case O_SEED: if (pb_cli_int(&p, 0, INT32_MAX, &i)) a->seed = (uint64_t)i; break;
        case O_KV_GIB:
            if (pb_cli_num(&p, 0, 1e4, &a->kv_gib) && !(a->kv_gib > 0)) pb_cli_bad(&p, "expected a number > 0");
            break;
        case O_BATCHES:
        case O_CONTEXTS:
        case O_PREFILL: {
            int32_t *dst = c == O_BATCHES ? a->batches : c == O_CONTEXTS ? a->contexts : a->prefill;
            int32_t *n = c == O_BATCHES ? &a->n_batches : c == O_CONTEXTS ? &a->n_contexts : &a->n_prefill;
            if (parse_list_(p.arg, dst, n)) pb_cli_bad(&p, "expected a comma list of integers >= 1, got '%s'", p.arg);
            break;
        }
        }
    }
    if (p.rc < 0 && p.optind < argc) p.rc = pb_cli_fail(&CLI, "unexpected argument '%s'", argv[p.optind]);
    if (p.rc < 0 && !a->out) p.rc = pb_cli_fail(&CLI, "--out PATH is required");
    return p.rc;
}

static int cmp_double_(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Run one step composition warmup + reps times; median latency in seconds. */
static pb_status measure_(pb_executor *ex, const pb_batch *b, pb_candidates *cand,
                          const prof_args *a, double *median_s) {
    double t[1000];
    for (int i = 0; i < a->warmup + a->reps; i++) {
        pb_step_result res;
        pb_status st = pb_executor_execute(ex, b, &res, cand);
        if (st != PB_OK) return st;
        if (i >= a->warmup) t[i - a->warmup] = res.latency_s - res.swap_s - res.copy_s;
    }
    qsort(t, (size_t)a->reps, sizeof(double), cmp_double_);
    *median_s = a->reps % 2 ? t[a->reps / 2] : 0.5 * (t[a->reps / 2 - 1] + t[a->reps / 2]);
    return PB_OK;
}


int pb_cmd_profile(int argc, char **argv) {
    prof_args a;
    int prc = parse_args_(argc, argv, &a);
    if (prc >= 0) return prc;
    bool use_cuda = !strcmp(a.executor, "cuda");
    char why[256];
    if (use_cuda && !pb_cuda_available(why, sizeof why)) {
        printf("SKIP: no GPU (%s)\n", why);
        return PB_EXIT_SKIP;
    }
    pb_model m;
    pb_cfg_err err;
    memset(&err, 0, sizeof err);
    if (pb_model_load(pb_spec_dir(), a.model, &m, &err) != PB_OK) {
        fprintf(stderr, "profile: model '%s': %s\n", a.model, err.msg);
        return PB_EXIT_USAGE;
    }
    if (a.hardware) {
        pb_hw hw;
        if (pb_hw_load(pb_spec_dir(), a.hardware, &hw, &err) != PB_OK) {
            fprintf(stderr, "profile: hardware '%s': %s\n", a.hardware, err.msg);
            return PB_EXIT_USAGE;
        }
    }
    if (!use_cuda && a.tp != 1) {
        fprintf(stderr, "profile: the cpu executor has no tensor parallelism\n");
        return PB_EXIT_USAGE;
    }
    /* the KV pool: --kv-gib per GPU */
    int32_t bs = a.contiguous ? 0 : a.block_size;
    double per_token = use_cuda ? pb_kv_bytes_per_token(&m, a.tp)
                                : 2.0 * m.n_layers * m.n_kv_heads * m.head_size * 4.0;
    int64_t kv_tokens = (int64_t)(a.kv_gib * 1073741824.0 / per_token);
    int32_t max_len = m.max_len;
    int32_t max_batch = 0, max_pf = 0;
    for (int i = 0; i < a.n_batches; i++) max_batch = PB_MAX(max_batch, a.batches[i]);
    for (int i = 0; i < a.n_prefill; i++) max_pf = PB_MAX(max_pf, a.prefill[i]);
    int32_t plen_cap = PB_MIN(a.prompt_len, max_len);
    int64_t need_pf = (int64_t)max_pf + plen_cap;   /* slots of the largest prefill step */
    if (kv_tokens < need_pf || kv_tokens < 2 * (int64_t)max_len) {
        fprintf(stderr, "profile: --kv-gib %.3g holds %lld tokens of %s, too few for the grid\n",
                a.kv_gib, (long long)kv_tokens, m.name);
        return PB_EXIT_USAGE;
    }
    /* no more than the grid can use: the largest decode point or prefill step */
    int32_t max_ctx_grid = 0;
    for (int i = 0; i < a.n_contexts; i++) max_ctx_grid = PB_MAX(max_ctx_grid, PB_MIN(a.contexts[i], max_len));
    int64_t grid_need = PB_MAX((int64_t)max_batch * (max_ctx_grid + (bs ? bs : 0)), need_pf + (bs ? bs : 0));
    if (kv_tokens > grid_need) kv_tokens = grid_need;
    pb_real_exec_params p;
    pb_real_exec_params_default(&p);
    p.block_size = bs;
    int64_t nblk = bs ? kv_tokens / bs : 0;
    if (nblk > INT32_MAX) nblk = INT32_MAX;
    p.num_gpu_blocks = (int32_t)nblk;
    p.num_slots = kv_tokens;
    p.weight_seed = a.seed;
    p.sample_seed = a.seed;
    p.max_tokens_hint = PB_MAX(max_pf, max_batch);
    p.tp = a.tp;
    pb_executor *ex = NULL;
    pb_status st = use_cuda ? pb_executor_cuda_create(&m, &p, &ex) : pb_executor_cpu_create(&m, &p, &ex);
    if (st != PB_OK) {
        fprintf(stderr, "profile: cannot create the %s executor for %s: %s\n", a.executor, m.name,
                pb_status_str(st));
        return PB_EXIT_RUNTIME;
    }
    char devname[256] = "cpu";
    if (use_cuda) pb_kbench_device_name(devname, sizeof devname);
    fprintf(stderr, "profile: %s on %s (%s executor, tp %d), KV %s bs %d, %lld token slots "
                    "(%.3g GiB/GPU), git %s\n", m.name, devname, a.executor, a.tp,
            bs ? "paged" : "contiguous", bs, (long long)kv_tokens, a.kv_gib, pb_git_rev());
    /* token ids: one long random sequence shared by all (contents do not matter) */
    int32_t max_ctx = 0;
    for (int i = 0; i < a.n_contexts; i++) max_ctx = PB_MAX(max_ctx, PB_MIN(a.contexts[i], max_len));
    int32_t ntok = PB_MAX(max_ctx, plen_cap) + 1;
    int32_t *toks = pb_xmalloc((size_t)ntok * sizeof(int32_t));
    pb_rng r;
    pb_rng_seed(&r, a.seed, 1);
    for (int32_t i = 0; i < ntok; i++) toks[i] = (int32_t)pb_rng_below(&r, (uint64_t)m.vocab);
    int32_t nseq_max = PB_MAX(max_batch, (int32_t)PB_CDIV(max_pf, plen_cap));
    pb_batch_seq *seqs = pb_xcalloc((size_t)nseq_max, sizeof *seqs);
    pb_candidates *cand = pb_xcalloc((size_t)nseq_max, sizeof *cand);
    int32_t max_blocks_seq = bs ? PB_CDIV(PB_MAX(max_ctx, plen_cap), bs) : 0;
    int32_t *bt = bs ? pb_xmalloc((size_t)nseq_max * max_blocks_seq * sizeof(int32_t)) : NULL;
    pb_sbuf out = {0};
    pb_sbuf_printf(&out, "# pagedbench step profile v1, model=%s hardware=%s tp=%d block_size=%d\n",
               a.model, a.hardware ? a.hardware : "unknown", a.tp, bs);
    pb_sbuf_printf(&out, "# device=%s executor=%s kv=%s kv_gib=%.4g reps=%d warmup=%d git=%s\n",
               devname, a.executor, bs ? "paged" : "contiguous", a.kv_gib, a.reps, a.warmup,
               pb_git_rev());
    pb_sbuf_printf(&out, "phase,batch,tokens,context,latency_us\n");
    int rc = PB_EXIT_OK, n_failed = 0, n_rows = 0;
    /* ---- decode grid ---- */
    for (int ci = 0; ci < a.n_contexts; ci++) {
        int32_t ctx = PB_MIN(a.contexts[ci], max_len);
        for (int bi = 0; bi < a.n_batches; bi++) {
            int32_t B = a.batches[bi], nb = bs ? PB_CDIV(ctx, bs) : 0;
            for (int32_t s = 0; s < B; s++) {
                pb_batch_seq *q = &seqs[s];
                memset(q, 0, sizeof *q);
                q->seq_id = s; q->group_id = s; q->n_new = 1; q->n_cached = ctx - 1;
                q->context_len = ctx; q->sample = true; q->tokens = toks;
                if (bs) {
                    int32_t *row = bt + (size_t)s * max_blocks_seq;
                    for (int32_t k = 0; k < nb; k++)
                        row[k] = (int32_t)(((int64_t)s * nb + k) % p.num_gpu_blocks);
                    q->block_table = row;
                    q->n_blocks = nb;
                } else {
                    q->kv_offset = ((int64_t)s * ctx) % (kv_tokens - ctx + 1);
                }
            }
            pb_batch b;
            memset(&b, 0, sizeof b);
            b.n_seqs = B; b.seqs = seqs; b.n_decode = B; b.block_size = bs; b.n_top = 1;
            double med;
            st = measure_(ex, &b, cand, &a, &med);
            if (st != PB_OK) {
                fprintf(stderr, "profile: decode batch %d context %d: %s\n", B, ctx, pb_status_str(st));
                pb_sbuf_printf(&out, "# FAILED decode batch %d context %d: %s\n", B, ctx, pb_status_str(st));
                n_failed++;
                continue;
            }
            n_rows++;
            pb_sbuf_printf(&out, "decode,%d,%d,%d,%.1f\n", B, B, ctx, med * 1e6);
            fprintf(stderr, "decode  batch %4d | context %5d | %10.1f us\n", B, ctx, med * 1e6);
        }
    }
    /* ---- prefill rows ---- */
    for (int pi = 0; pi < a.n_prefill; pi++) {
        int32_t T = a.prefill[pi], n = PB_CDIV(T, plen_cap), left = T;
        int64_t slot = 0;
        for (int32_t s = 0; s < n; s++) {
            int32_t len = PB_MIN(left, plen_cap);
            left -= len;
            pb_batch_seq *q = &seqs[s];
            memset(q, 0, sizeof *q);
            q->seq_id = s; q->group_id = s; q->is_prefill = true; q->n_new = len;
            q->context_len = len; q->sample = true; q->tokens = toks;
            if (bs) {
                int32_t nb = PB_CDIV(len, bs), *row = bt + (size_t)s * max_blocks_seq;
                for (int32_t k = 0; k < nb; k++) row[k] = (int32_t)((slot / bs + k) % p.num_gpu_blocks);
                slot += (int64_t)nb * bs;
                q->block_table = row;
                q->n_blocks = nb;
            } else {
                q->kv_offset = slot;
                slot += len;
            }
        }
        pb_batch b;
        memset(&b, 0, sizeof b);
        b.n_seqs = n; b.seqs = seqs; b.n_prefill_tokens = T; b.block_size = bs; b.n_top = 1;
        double med;
        st = measure_(ex, &b, cand, &a, &med);
        if (st != PB_OK) {
            fprintf(stderr, "profile: prefill %d tokens: %s\n", T, pb_status_str(st));
            pb_sbuf_printf(&out, "# FAILED prefill %d tokens: %s\n", T, pb_status_str(st));
            n_failed++;
            continue;
        }
        n_rows++;
        pb_sbuf_printf(&out, "prefill,%d,%d,0,%.1f\n", n, T, med * 1e6);
        fprintf(stderr, "prefill prompts %3d | tokens %5d | %10.1f us\n", n, T, med * 1e6);
    }
    if (n_failed) {
        pb_sbuf_printf(&out, "# INCOMPLETE: %d of %d points failed (see the FAILED lines)\n", n_failed,
                       n_failed + n_rows);
        fprintf(stderr, "profile: %d of %d points failed\n", n_failed, n_failed + n_rows);
        rc = PB_EXIT_RUNTIME;
    }
    if (n_rows > 0 && pb_write_file_atomic(a.out, out.s, out.len) != PB_OK) {
        fprintf(stderr, "profile: cannot write %s\n", a.out);
        rc = PB_EXIT_RUNTIME;
    } else if (n_rows > 0 && n_failed) {
        fprintf(stderr, "profile: wrote the %d measured points to %s (incomplete)\n", n_rows, a.out);
    }
    if (rc == PB_EXIT_OK) {
        pb_real_exec_stats xs;
        pb_real_exec_get_stats(ex, &xs);
        double step = xs.steps ? (xs.forward_s + xs.swap_s + xs.copy_s) / (double)xs.steps : 0;
        double prep = xs.steps ? xs.prepare_s / (double)xs.steps : 0;
        fprintf(stderr, "profile: host input preparation %.1f us/step = %.2f%% of the mean step "
                        "(%lld steps)\n", prep * 1e6, step > 0 ? 100.0 * prep / step : 0.0,
                (long long)xs.steps);
        fprintf(stderr, "profile: wrote %s\n", a.out);
    }
    free(out.s);
    free(bt);
    free(cand);
    free(seqs);
    free(toks);
    pb_executor_destroy(ex);
    return rc;
}
