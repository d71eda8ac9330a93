/* fig_sim.c -- Fig. 1 and Fig. 19(a) from the cost model (see fig_sim.h). */
#include "fig_sim.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "executor_sim.h"
#include "spec.h"

/* ---- the paper's points, digitized from its figures ---- */
/* Fig. 1 top, existing systems: memory (GB) at which the batch reaches k = 0..8 */
static const double P1_EXIST_MEM[] = {26, 28, 30, 31, 33, 34, 36, 37, 39};
/* Fig. 1 top, vLLM: (batch, memory GB) */
static const double P1_VLLM_B[] = {0, 5.83, 8.87, 11.71, 14.78, 17.63, 21.24, 23.80, 26.63, 29.85, 32.72, 35.81, 38.36};
static const double P1_VLLM_M[] = {26, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39};
/* Fig. 1 bottom: throughput (token/s) at batch 0, 4, ..., 40 */
static const double P1_TPUT[] = {0, 146.9, 267.3, 378.9, 482.6, 577.1, 659.5, 740.8, 811.0, 881.8, 921.9};
static const double P1_MAX_EXIST = 8, P1_MAX_VLLM = 38.35;
/* Fig. 19(a): block sizes 1..256 */
static const int P19_BS[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
static const double P19_RECOMP[] = {36.3, 37.5, 36.9, 38.8, 38.6, 39.0, 38.3, 38.4, 39.1};
static const double P19_IN[] = {82.0, 53.6, 35.1, 26.1, 21.6, 19.3, 18.2, 17.6, 17.3};
static const double P19_OUT[] = {55.5, 35.6, 25.9, 21.1, 18.5, 17.3, 16.7, 16.3, 16.1};
static const double P19_INOUT[] = {137.4, 89.3, 61.0, 47.1, 40.2, 36.6, 34.9, 33.9, 33.4};

/* Fig. 1 workload (fig_sim.h) */
enum { F1_PROMPT = 161, F1_OUTPUT = 338, F1_CTX = F1_PROMPT + F1_OUTPUT / 2, F1_BLOCK = 16 };

/* ---- a growing text buffer ---- */
typedef pb_sbuf sbuf;
static void sb_num(sbuf *b, double v) {   /* empty for NaN (no paper point) */
    if (isnan(v)) pb_sbuf_printf(b, ",");
    else pb_sbuf_printf(b, ",%.4g", v);
}

static pb_status write_out(const char *path, sbuf *b) {
    /* create the parent folder when missing (one level, e.g. results/) */
    const char *slash = strrchr(path, '/');
    if (slash && slash != path) {
        char dir[4096];
        size_t n = (size_t)(slash - path);
        if (n < sizeof dir) {
            memcpy(dir, path, n);
            dir[n] = '\0';
            if (mkdir(dir, 0777) != 0 && errno != EEXIST) return PB_ERR_IO;
        }
    }
    return pb_write_file_atomic(path, b->s ? b->s : "", b->len);
}

static double interp(const double *x, const double *y, int n, double q) {
    if (q < x[0] || q > x[n - 1]) return NAN;
    for (int i = 0; i + 1 < n; i++)
        if (q <= x[i + 1]) return y[i] + (q - x[i]) / (x[i + 1] - x[i]) * (y[i + 1] - y[i]);
    return y[n - 1];
}

typedef struct { pb_model m; pb_hw hw; pb_sim_cost c; } specs;

static pb_status load_specs(const char *spec_dir, specs *s) {
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    if (!spec_dir) spec_dir = pb_spec_dir();
    if (pb_model_load(spec_dir, "opt-13b", &s->m, &err) || pb_hw_load(spec_dir, "a100-40gb", &s->hw, &err) ||
        pb_sim_cost_load(spec_dir, "a100-40gb", &s->c, &err)) {
        pb_log_error("%s", err.msg);
        return PB_ERR_INVALID;
    }
    return PB_OK;
}

static pb_status make_sim(const specs *sp, pb_sim_attn attn, pb_sim_framework fw, pb_sim **out) {
    pb_sim_params p = pb_sim_params_default();
    p.attn = attn;
    p.framework = fw;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_status st = pb_sim_create(&sp->m, &sp->hw, &sp->c, 1, &p, out, &err);
    if (st) pb_log_error("%s", err.msg);
    return st;
}

/* tokens/s of b requests decoding together at the Fig. 1 workload */
static double fig1_tput(const pb_sim *s, int b) {
    double step = pb_sim_decode_time(s, b, F1_CTX, F1_BLOCK);
    double prefill = pb_sim_prefill_time(s, F1_PROMPT);
    return b / (step + (double)b / F1_OUTPUT * prefill);
}

pb_status pb_fig1_write(const char *spec_dir, const char *csv_path, FILE *report) {
    specs sp;
    pb_status st = load_specs(spec_dir, &sp);
    if (st) return st;
    pb_sim *vllm = NULL, *ft = NULL;
    if ((st = make_sim(&sp, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON, &vllm)) ||
        (st = make_sim(&sp, PB_SIM_ATTN_CONTIGUOUS, PB_SIM_FW_CPP, &ft))) {
        pb_sim_destroy(vllm);
        return st;
    }
    pb_kv_capacity cap;
    st = pb_kv_capacity_compute(&sp.m, &sp.hw, 1, F1_BLOCK, PB_KV_PROFILE_TOKENS, 0.95, &cap);
    if (st) {
        pb_log_error("fig1: KV capacity: %s", pb_status_str(st));
        goto out;
    }
    double kvtok = pb_kv_bytes_per_token(&sp.m, 1), params = pb_param_bytes(&sp.m);
    double exist_req = (double)sp.m.max_len * kvtok;
    double vllm_blocks = (F1_CTX + F1_BLOCK - 1) / F1_BLOCK;
    double vllm_req = vllm_blocks * F1_BLOCK * kvtok;
    int max_exist = (int)(cap.num_slots / sp.m.max_len);
    int max_vllm = (int)(cap.num_blocks / vllm_blocks);

    sbuf b = {0};
    pb_sbuf_printf(&b, "panel,series,batch,ours,paper\n");
    for (int k = 0; params + k * exist_req <= sp.hw.mem_bytes; k++) {
        pb_sbuf_printf(&b, "memory_gb,existing,%d,%.4g", k, (params + k * exist_req) / 1e9);
        sb_num(&b, k < (int)PB_ARRAY_LEN(P1_EXIST_MEM) ? P1_EXIST_MEM[k] : NAN);
        pb_sbuf_printf(&b, "\n");
    }
    for (int k = 0; params + k * vllm_req <= sp.hw.mem_bytes; k += 2) {
        pb_sbuf_printf(&b, "memory_gb,vllm,%d,%.4g", k, (params + k * vllm_req) / 1e9);
        sb_num(&b, interp(P1_VLLM_B, P1_VLLM_M, (int)PB_ARRAY_LEN(P1_VLLM_B), k));
        pb_sbuf_printf(&b, "\n");
    }
    const pb_sim *sims[2] = {vllm, ft};
    const char *names[2] = {"vllm", "ft"};
    for (int i = 0; i < 2; i++)
        for (int k = 1; k <= 48; k++) {
            pb_sbuf_printf(&b, "throughput_tok_s,%s,%d,%.4g", names[i], k, fig1_tput(sims[i], k));
            sb_num(&b, i == 0 && k % 4 == 0 && k / 4 < (int)PB_ARRAY_LEN(P1_TPUT) ? P1_TPUT[k / 4] : NAN);
            pb_sbuf_printf(&b, "\n");
        }
    pb_sbuf_printf(&b, "max_batch,existing,0,%d,%.4g\n", max_exist, P1_MAX_EXIST);
    pb_sbuf_printf(&b, "max_batch,vllm,0,%d,%.4g\n", max_vllm, P1_MAX_VLLM);
    st = write_out(csv_path, &b);
    if (st) pb_log_error("%s: cannot write: %s", csv_path, strerror(errno));

    if (report && !st) {
        fprintf(report, "Fig. 1 (OPT-13B, A100-40GB; workload %d in / %d out, mean context %d)\n", F1_PROMPT,
                F1_OUTPUT, F1_CTX);
        fprintf(report, "  KV budget %.2f GB = %lld slots; max batch: existing %d (paper %.0f), vLLM %d (paper %.2f)\n",
                cap.kv_bytes_per_gpu / 1e9, (long long)cap.num_slots, max_exist, P1_MAX_EXIST, max_vllm, P1_MAX_VLLM);
        fprintf(report, "  memory per request: existing %.3f GB (paper ~1.6), vLLM %.3f GB (paper ~0.34)\n",
                exist_req / 1e9, vllm_req / 1e9);
        fprintf(report, "  %5s %12s %12s %7s %10s\n", "batch", "vllm tok/s", "paper tok/s", "ratio", "ft tok/s");
        for (int k = 4; k <= 40; k += 4) {
            double o = fig1_tput(vllm, k);
            fprintf(report, "  %5d %12.1f %12.1f %7.3f %10.1f\n", k, o, P1_TPUT[k / 4], o / P1_TPUT[k / 4],
                    fig1_tput(ft, k));
        }
        double o8 = fig1_tput(vllm, max_exist), om = fig1_tput(vllm, max_vllm);
        fprintf(report, "  throughput at the max batches: %.1f -> %.1f tok/s (%.2fx; paper 267 -> ~900, ~3.4x)\n", o8,
                om, om / o8);
    }
    free(b.s);
out:
    pb_sim_destroy(vllm);
    pb_sim_destroy(ft);
    return st;
}

pb_status pb_fig19a_write(const char *spec_dir, const char *csv_path, FILE *report) {
    specs sp;
    pb_status st = load_specs(spec_dir, &sp);
    if (st) return st;
    pb_sim *s = NULL;
    if ((st = make_sim(&sp, PB_SIM_ATTN_PAGED, PB_SIM_FW_PYTHON, &s))) return st;
    const int N = PB_FIG19A_TOKENS;
    double rec = pb_sim_prefill_time(s, N) * 1e3;
    sbuf b = {0};
    pb_sbuf_printf(&b, "block_size,operation,time_ms,paper\n");
    if (report)
        fprintf(report, "Fig. 19(a) (OPT-13B, A100-40GB, %d tokens): ms, ours / paper\n"
                        "  %5s %16s %16s %16s %16s %8s\n", N, "block", "recompute", "swap in", "swap out",
                "swap in+out", "rec/swap");
    enum { NB = (int)PB_ARRAY_LEN(P19_BS) };
    double in[NB], out[NB];
    for (int i = 0; i < NB; i++) {
        int bs = P19_BS[i];
        int64_t nb = (N + bs - 1) / bs;
        in[i] = pb_sim_swap_time(s, nb, bs, true) * 1e3;
        out[i] = pb_sim_swap_time(s, nb, bs, false) * 1e3;
        if (report)
            fprintf(report, "  %5d %7.1f / %6.1f %7.1f / %6.1f %7.1f / %6.1f %7.1f / %6.1f %4.2f/%4.2f\n", bs, rec,
                    P19_RECOMP[i], in[i], P19_IN[i], out[i], P19_OUT[i], in[i] + out[i], P19_INOUT[i],
                    rec / (in[i] + out[i]), P19_RECOMP[i] / P19_INOUT[i]);
    }
    /* one series after another (plots select rows by operation) */
    for (int i = 0; i < NB; i++) pb_sbuf_printf(&b, "%d,recompute,%.4g,%.4g\n", P19_BS[i], rec, P19_RECOMP[i]);
    for (int i = 0; i < NB; i++) pb_sbuf_printf(&b, "%d,swap_in,%.4g,%.4g\n", P19_BS[i], in[i], P19_IN[i]);
    for (int i = 0; i < NB; i++) pb_sbuf_printf(&b, "%d,swap_out,%.4g,%.4g\n", P19_BS[i], out[i], P19_OUT[i]);
    for (int i = 0; i < NB; i++)
        pb_sbuf_printf(&b, "%d,swap_in_out,%.4g,%.4g\n", P19_BS[i], in[i] + out[i], P19_INOUT[i]);
    st = write_out(csv_path, &b);
    if (st) pb_log_error("%s: cannot write: %s", csv_path, strerror(errno));
    free(b.s);
    pb_sim_destroy(s);
    return st;
}
