/* fig18a.c -- Fig. 18(a) from the cost model, and from our kernels on a GPU (fig18a.h). */
#include "fig18a.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "executor_sim.h"
#include "kbench.h"     /* pb_kbench_gpu_available, pb_kbench_run_gpu (fig18a grid) */
#include "spec.h"

#define F18_MODEL "opt-13b"
#define F18_HW "a100-40gb"
#define F18_BLOCK 16

static const int F18_BATCH[] = {8, 32};
static const int F18_CTX[] = {64, 128, 256};
enum { NB = 2, NC = 3, NK = 2 };   /* kernels: 0 vllm (paged), 1 ft (contiguous) */
static const char *const KNAME[NK] = {"vllm", "ft"};

typedef pb_sbuf sbuf;

/* One decode-attention call of the sim: decode_attn_s of a decode-only batch / layers. */
static double sim_attn_us(const pb_sim *s, int layers, int n_seqs, int ctx, int block_size) {
    pb_batch_seq *q = pb_xcalloc((size_t)n_seqs, sizeof *q);
    for (int i = 0; i < n_seqs; i++) {
        q[i].seq_id = q[i].group_id = i;
        q[i].n_new = 1;
        q[i].n_cached = ctx - 1;
        q[i].context_len = ctx;
        q[i].sample = true;
        q[i].n_blocks = (ctx + block_size - 1) / block_size;
    }
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = n_seqs;
    b.seqs = q;
    b.n_decode = n_seqs;
    b.block_size = block_size;
    b.n_top = 1;
    pb_sim_breakdown br;
    pb_sim_step_breakdown(s, &b, &br);
    free(q);
    return br.decode_attn_s / layers * 1e6;
}

typedef struct {
    pb_model m;
    pb_hw hw;
    pb_sim *sim[NK];
} f18_sims;

static pb_status sims_create(const char *spec_dir, f18_sims *f, char *err, size_t err_n) {
    memset(f, 0, sizeof *f);
    pb_cfg_err ce;
    pb_cfg_err_clear(&ce);
    pb_sim_cost c;
    pb_status st = pb_model_load(spec_dir, F18_MODEL, &f->m, &ce);
    if (!st) st = pb_hw_load(spec_dir, F18_HW, &f->hw, &ce);
    if (!st) st = pb_sim_cost_load(spec_dir, F18_HW, &c, &ce);
    for (int k = 0; k < NK && !st; k++) {
        pb_sim_params p = pb_sim_params_default();
        p.attn = k == 0 ? PB_SIM_ATTN_PAGED : PB_SIM_ATTN_CONTIGUOUS;
        st = pb_sim_create(&f->m, &f->hw, &c, 1, &p, &f->sim[k], &ce);
    }
    if (st) snprintf(err, err_n, "%s", ce.msg);
    return st;
}
static void sims_destroy(f18_sims *f) {
    for (int k = 0; k < NK; k++) pb_sim_destroy(f->sim[k]);
}

pb_status pb_fig18a_cost_model_us(const char *spec_dir, bool paged, int n_seqs, int ctx, double *us) {
    f18_sims f;
    char err[4096];
    pb_status st = sims_create(spec_dir, &f, err, sizeof err);
    if (st) {
        pb_log_error("fig18a: %s", err);
        sims_destroy(&f);
        return st;
    }
    *us = sim_attn_us(f.sim[paged ? 0 : 1], f.m.n_layers, n_seqs, ctx, F18_BLOCK);
    sims_destroy(&f);
    return PB_OK;
}

static int bi(int b) { for (int i = 0; i < NB; i++) if (F18_BATCH[i] == b) return i; return -1; }
static int ci(int c) { for (int i = 0; i < NC; i++) if (F18_CTX[i] == c) return i; return -1; }

/* experiments/paper/fig18a.csv: kernel,batch,context_len,latency_us */
static pb_status read_paper(const char *spec_dir, double paper[NK][NB][NC]) {
    for (int k = 0; k < NK; k++)
        for (int b = 0; b < NB; b++)
            for (int c = 0; c < NC; c++) paper[k][b][c] = NAN;
    char path[4096];
    snprintf(path, sizeof path, "%s/paper/fig18a.csv", spec_dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        pb_log_error("%s: cannot open the paper's points", path);
        return PB_ERR_IO;
    }
    char line[256], kern[32];
    int ln = 0, n = 0;
    pb_status st = PB_OK;
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (ln == 1) continue;   /* header */
        int b, c;
        double v;
        if (line[0] == '\n' || line[0] == '#') continue;
        int k = -1;
        if (sscanf(line, "%31[^,],%d,%d,%lf", kern, &b, &c, &v) == 4)
            for (int i = 0; i < NK; i++)
                if (!strcmp(kern, KNAME[i])) k = i;
        if (k < 0 || bi(b) < 0 || ci(c) < 0 || !(v > 0)) {
            pb_log_error("%s:%d:1: expected kernel(vllm|ft),batch(8|32),context_len(64|128|256),latency_us", path, ln);
            st = PB_ERR_INVALID;
            break;
        }
        paper[k][bi(b)][ci(c)] = v;
        n++;
    }
    fclose(f);
    if (!st && n != NK * NB * NC) {
        pb_log_error("%s: %d points, expected %d", path, n, NK * NB * NC);
        st = PB_ERR_INVALID;
    }
    return st;
}

/* GPU: the kernel benchmark's fig18a grid.  Fills us[k][b][c]; returns 1 if measured. */
static int gpu_measure(double us[NK][NB][NC], char *device, size_t dn, char *status, size_t sn) {
    char why[256] = "";
    if (!pb_kbench_gpu_available(why, sizeof why)) {
        snprintf(status, sn, "SKIP: no GPU (%s)", why);
        return 0;
    }
    pb_kbench_opts o;
    memset(&o, 0, sizeof o);
    o.grids = PB_KB_GRID_FIG18A;
    o.reps = 20;
    o.warmup = 3;
    pb_kb_set set;
    pb_kb_set_init(&set);
    int valid = 0;
    pb_status st = pb_kbench_run_gpu(&o, &set, stderr, &valid);
    pb_kbench_device_name(device, dn);
    int got = 0;
    for (int k = 0; k < NK && !st; k++)
        for (int b = 0; b < NB; b++)
            for (int c = 0; c < NC; c++) {
                char name[96];
                if (k == 0) snprintf(name, sizeof name, "fig18a/paged/b%d-ctx%d-bs%d", F18_BATCH[b], F18_CTX[c], F18_BLOCK);
                else snprintf(name, sizeof name, "fig18a/contig/b%d-ctx%d", F18_BATCH[b], F18_CTX[c]);
                const pb_kb_result *r = pb_kb_set_find(&set, name);
                us[k][b][c] = r ? r->value : NAN;
                got += r != NULL;
            }
    pb_kb_set_free(&set);
    if (st || got != NK * NB * NC) {
        snprintf(status, sn, "FAILED on %s (%s; %d of %d results)", device, st ? pb_status_str(st) : "ok", got,
                 NK * NB * NC);
        return 0;
    }
    snprintf(status, sn, "measured on %s (%s)", device, valid ? "valid" : "INVALID: CUPTI dropped records");
    return 1;
}

static void emit_rows(sbuf *csv, const char *source, const char *device, double us[NK][NB][NC],
                      double paper[NK][NB][NC]) {
    for (int b = 0; b < NB; b++)
        for (int k = 0; k < NK; k++)
            for (int c = 0; c < NC; c++) {
                double v = us[k][b][c], p = paper[k][b][c];
                pb_sbuf_printf(csv, "%s,\"%s\",%s,%d,%d,%.4f,%.2f,%.2f,", source, device, KNAME[k], F18_BATCH[b],
                          F18_CTX[c], v, p, 100 * (v / p - 1));
                if (k == 0) pb_sbuf_printf(csv, "%.2f", 100 * (v / us[1][b][c] - 1));
                pb_sbuf_printf(csv, "\n");
            }
}

static void report_table(FILE *r, const char *title, double us[NK][NB][NC], double paper[NK][NB][NC]) {
    fprintf(r, "\n%s\n\n| kernel (µs) | ctx | paper | ours | ours/paper |\n|---|---|---|---|---|\n", title);
    double lo = 1e9, hi = -1e9;
    for (int b = 0; b < NB; b++)
        for (int k = 0; k < NK; k++)
            for (int c = 0; c < NC; c++) {
                double ratio = us[k][b][c] / paper[k][b][c];
                lo = fmin(lo, ratio);
                hi = fmax(hi, ratio);
                fprintf(r, "| %s bs %d | %d | %.2f | %.2f | %.2f |\n", k == 0 ? "vLLM" : "FT", F18_BATCH[b], F18_CTX[c],
                        paper[k][b][c], us[k][b][c], ratio);
            }
    fprintf(r, "\n| paged overhead | ctx 64 | ctx 128 | ctx 256 |\n|---|---|---|---|\n");
    for (int b = 0; b < NB; b++) {
        fprintf(r, "| bs %d ours (paper) |", F18_BATCH[b]);
        for (int c = 0; c < NC; c++)
            fprintf(r, " %+.1f%% (%+.1f%%) |", 100 * (us[0][b][c] / us[1][b][c] - 1),
                    100 * (paper[0][b][c] / paper[1][b][c] - 1));
        fprintf(r, "\n");
    }
    fprintf(r, "\nours/paper spans %.2f-%.2f over the 12 points.\n", lo, hi);
}

pb_status pb_fig18a_write(const char *spec_dir, const char *csv_path, bool with_gpu, FILE *report,
                          char *gpu_status, size_t gpu_status_n) {
    double paper[NK][NB][NC], sim[NK][NB][NC], gpu[NK][NB][NC];
    char err[4096] = "", device[128] = "", status[512] = "not requested";
    pb_status st = read_paper(spec_dir, paper);
    if (st) return st;
    f18_sims f;
    if ((st = sims_create(spec_dir, &f, err, sizeof err))) {
        pb_log_error("fig18a: %s", err);
        sims_destroy(&f);
        return st;
    }
    for (int k = 0; k < NK; k++)
        for (int b = 0; b < NB; b++)
            for (int c = 0; c < NC; c++)
                sim[k][b][c] = sim_attn_us(f.sim[k], f.m.n_layers, F18_BATCH[b], F18_CTX[c], F18_BLOCK);
    char simdev[256];
    snprintf(simdev, sizeof simdev, "%s (cost model)", f.hw.name);
    sims_destroy(&f);
    int have_gpu = with_gpu ? gpu_measure(gpu, device, sizeof device, status, sizeof status) : 0;
    if (gpu_status) snprintf(gpu_status, gpu_status_n, "%s", status);

    sbuf csv = {0};
    pb_sbuf_printf(&csv, "source,device,kernel,batch,context_len,latency_us,paper_us,vs_paper_pct,overhead_pct\n");
    emit_rows(&csv, "cost_model", simdev, sim, paper);
    if (have_gpu) emit_rows(&csv, "gpu", device, gpu, paper);
    st = pb_write_file_atomic(csv_path, csv.s, csv.len);
    free(csv.s);
    if (st) {
        pb_log_error("%s: cannot write", csv_path);
        return st;
    }
    if (report) {
        fprintf(report, "### fig18a: paper vs ours (attention kernel, OPT-13B heads 40 x 128, block 16)\n");
        report_table(report, "Cost model (A100-40GB), source=cost_model. CALIBRATION CHECK, not a prediction: "
                             "the sim's decode-attention terms were fit to these 12 points.", sim, paper);
        if (have_gpu) {
            char t[256];
            snprintf(t, sizeof t, "Our kernels on %s, source=gpu (the paper's GPU was an A100).", device);
            report_table(report, t, gpu, paper);
        } else {
            fprintf(report, "\nGPU measurement (`pagedbench kernels --grid fig18a`): %s.\n", status);
        }
        fprintf(report, "\nPaper text: paged attention is 20-26%% slower than FasterTransformer's kernel "
                        "(digitized bs 8 points show up to +44%%).\n");
    }
    return PB_OK;
}
