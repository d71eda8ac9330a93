/* kbench_gpu.c -- GPU path of `pagedbench kernels` (see kbench.h): correctness
 * checks against the C references, then CUPTI-timed grids with L2 rotation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_case.h"
#include "cache_ops.h"
#include "gpu_probe.h"
#include "gpu_timer.h"
#include "kbench.h"
#include "kcheck.h"

int pb_kbench_gpu_available(char *why, size_t why_len) { return pb_gpu_probe(why, why_len); }

#ifndef PB_HAVE_CUDA

void pb_kbench_device_name(char *buf, size_t n) { snprintf(buf, n, "cpu-reference"); }
void pb_kbench_print_context(FILE *f) { fprintf(f, "context: built without CUDA\n"); }
void pb_kbench_get_info(pb_kbench_info *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->driver, sizeof out->driver, "unknown");
    snprintf(out->cuda, sizeof out->cuda, "-");
    snprintf(out->timer, sizeof out->timer, "-");
}
pb_status pb_kbench_run_gpu(const pb_kbench_opts *o, pb_kb_set *out, FILE *log, int *valid) {
    (void)o; (void)out; (void)log;
    *valid = 0;
    return PB_ERR_UNSUPPORTED;
}

#else /* PB_HAVE_CUDA */

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "devfill.h"
#include "layers.h"
#include "rng.h"

static char g_timer[16] = "-", g_timer_why[256];   /* the last run's timer (pb_kbench_get_info) */

/* the kernel driver's version from /proc/driver/nvidia/version ("NVRM version: NVIDIA
   UNIX x86_64 Kernel Module  580.159.04  ..."): the first dotted number after "Module" */
static void driver_version(char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        char *p = strstr(line, "Module");
        for (char *save = NULL, *tok = p ? strtok_r(p, " \t\n", &save) : NULL; tok;
             tok = strtok_r(NULL, " \t\n", &save))
            if (tok[0] >= '0' && tok[0] <= '9' && strchr(tok, '.')) {
                snprintf(buf, n, "%s", tok);
                break;
            }
    }
    fclose(f);
}

void pb_kbench_get_info(pb_kbench_info *out) {
    int drv = 0, rt = 0;
    memset(out, 0, sizeof *out);
    driver_version(out->driver, sizeof out->driver);
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    snprintf(out->cuda, sizeof out->cuda, "%d.%d/%d.%d", drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    snprintf(out->timer, sizeof out->timer, "%s", g_timer);
    snprintf(out->timer_why, sizeof out->timer_why, "%s", g_timer_why);
}


void pb_kbench_device_name(char *buf, size_t n) {
    struct cudaDeviceProp prop;
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess)
        snprintf(buf, n, "%s", prop.name);
    else
        snprintf(buf, n, "unknown-gpu");
}

void pb_kbench_print_context(FILE *f) {
    int dev = 0, drv = 0, rt = 0, sms = 0, clk = 0, l2 = 0;
    cudaGetDevice(&dev);
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
    fprintf(f, "context: driver %d.%d | runtime %d.%d | %d SMs | SM clock %.0f MHz | L2 %.0f MiB | "
               "batch swap API %s\n", drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10, sms,
            clk / 1e3, l2 / 1048576.0, pb_swap_has_batch_api() ? "cudaMemcpyBatchAsync" : "no");
}

#define GTRY(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) {                      \
    pb_log_error("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));          \
    st = PB_ERR_CUDA; goto done; } } while (0)
#define STRY(call) do { st = (call); if (st != PB_OK) goto done; } while (0)

/* ---- correctness: one decode shape against the C reference ---- */

int pb_kbench_gpu_check_decode(uint64_t seed, int32_t num_seqs, const int32_t *ctx,
                               int32_t num_heads, int32_t num_kv_heads, int32_t head_size,
                               int32_t block_size, pb_kv_dtype dtype, pb_attn_algo algo,
                               int layout) {
    return pb_kbench_gpu_check_decode_kv(seed, num_seqs, ctx, num_heads, num_kv_heads, head_size, block_size, dtype,
                                         PB_KV_CACHE_AUTO, 1.0f, algo, layout);
}

int pb_kbench_gpu_check_decode_kv(uint64_t seed, int32_t num_seqs, const int32_t *ctx,
                                  int32_t num_heads, int32_t num_kv_heads, int32_t head_size,
                                  int32_t block_size, pb_kv_dtype dtype, pb_kv_cache_dtype kv_cache_dtype,
                                  float kv_scale, pb_attn_algo algo, int layout) {
    pb_attn_case c;
    const int paged = layout == 1;
    const int flags = PB_ATTN_CASE_POISON | (layout >= 2 ? PB_ATTN_CASE_ODD_OFFSETS : 0) |
                      (layout == 3 ? PB_ATTN_CASE_ODD_SLOTS : 0);
    if (pb_attn_case_make_kv(&c, seed, num_seqs, ctx, num_heads, num_kv_heads, head_size, block_size,
                             dtype, kv_cache_dtype, kv_scale, flags, 0) != PB_OK)
        return 1;
    pb_status st = PB_OK;
    const size_t es = pb_kv_dtype_size(dtype);
    const size_t cache_b = (paged ? c.cache_elems : c.contig_elems) * pb_kv_dtype_size(pb_attn_cache_elem(&c.p));
    const size_t bt_b = sizeof(int32_t) * (size_t)num_seqs * (size_t)c.p.max_blocks_per_seq;
    const pb_attn_params *p = paged ? &c.p : &c.pc;
    const size_t ws_b = pb_paged_attention_workspace_bytes(p);
    void *dq = NULL, *dk = NULL, *dv = NULL, *dout = NULL, *dws = NULL;
    int32_t *dbt = NULL, *dctx = NULL;
    int64_t *doff = NULL;
    void *ref = pb_xmalloc(es * c.out_elems), *got = pb_xmalloc(es * c.out_elems);
    float *rf = pb_xmalloc(sizeof(float) * c.out_elems), *gf = pb_xmalloc(sizeof(float) * c.out_elems);
    int fails = 0;
    GTRY(cudaMalloc(&dq, es * c.q_elems));
    GTRY(cudaMalloc(&dk, cache_b));
    GTRY(cudaMalloc(&dv, cache_b));
    GTRY(cudaMalloc(&dout, es * c.out_elems));
    GTRY(cudaMalloc(&dws, ws_b));
    GTRY(cudaMalloc((void **)&dbt, bt_b));
    GTRY(cudaMalloc((void **)&dctx, sizeof(int32_t) * (size_t)num_seqs));
    GTRY(cudaMalloc((void **)&doff, sizeof(int64_t) * (size_t)num_seqs));
    GTRY(cudaMemcpy(dq, c.q, es * c.q_elems, cudaMemcpyHostToDevice));
    GTRY(cudaMemcpy(dk, paged ? c.k_cache : c.kc_contig, cache_b, cudaMemcpyHostToDevice));
    GTRY(cudaMemcpy(dv, paged ? c.v_cache : c.vc_contig, cache_b, cudaMemcpyHostToDevice));
    GTRY(cudaMemcpy(dbt, c.block_tables, bt_b, cudaMemcpyHostToDevice));
    GTRY(cudaMemcpy(dctx, c.context_lens, sizeof(int32_t) * (size_t)num_seqs, cudaMemcpyHostToDevice));
    GTRY(cudaMemcpy(doff, c.kv_offsets, sizeof(int64_t) * (size_t)num_seqs, cudaMemcpyHostToDevice));
    GTRY(cudaMemset(dout, 0xff, es * c.out_elems));           /* NaN-ish garbage */
    if (paged)
        STRY(pb_paged_attention_cuda(p, algo, dout, dq, dk, dv, dbt, dctx, dws, ws_b, NULL));
    else
        STRY(pb_contig_attention_cuda(p, algo, dout, dq, dk, dv, doff, dctx, dws, ws_b, NULL));
    GTRY(cudaDeviceSynchronize());
    GTRY(cudaMemcpy(got, dout, es * c.out_elems, cudaMemcpyDeviceToHost));
    if (paged) STRY(pb_paged_attention_ref(p, ref, c.q, c.k_cache, c.v_cache, c.block_tables, c.context_lens));
    else STRY(pb_contig_attention_ref(p, ref, c.q, c.kc_contig, c.vc_contig, c.kv_offsets, c.context_lens));
    pb_kv_to_f32(rf, ref, dtype, c.out_elems);
    pb_kv_to_f32(gf, got, dtype, c.out_elems);
    {
        pb_kcheck_tol tol = {1e-4, 1e-3, 1e-8, 5};
        if (dtype == PB_KV_F16) { tol.atol = 2e-3; tol.rtol = 1e-2; tol.nmse_max = 1e-5; }
        if (dtype == PB_KV_BF16) { tol.atol = 1.6e-2; tol.rtol = 2e-2; tol.nmse_max = 1e-3; }
        char what[128];
        snprintf(what, sizeof what, "%s S%d H%d/%d D%d bs%d %s %s algo%d", paged ? "paged" : layout ? "contig-odd" : "contig",
                 num_seqs, num_heads, num_kv_heads, head_size, block_size, pb_kv_dtype_name(dtype),
                 pb_kv_cache_dtype_name(kv_cache_dtype), (int)algo);
        fails += pb_kcheck(what, rf, gf, c.out_elems, &tol, NULL);
    }
done:
    if (st != PB_OK) fails++;
    cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(dout); cudaFree(dws);
    cudaFree(dbt); cudaFree(dctx); cudaFree(doff);
    free(ref); free(got); free(rf); free(gf);
    pb_attn_case_free(&c);
    return fails;
}

/* ---- timing ---- */

typedef struct {
    const pb_kbench_opts *o;
    pb_gpu_timer *tm;
    cudaStream_t st;
    FILE *log;
    pb_kb_set *out;
    double l2;
    double d2d_bw, h2d_bw, d2h_bw;   /* measured in this run (bytes/s), 0 until then */
    int sms;
    pb_status first_err;             /* the first failed point's status (PB_OK: none) */
    int n_failed;
} gctx;

/* After a failed point: log it, keep its status, and say whether the device can go on
   (the error was not sticky: the context still synchronizes). */
static int point_failed(gctx *g, const char *name, pb_status st) {
    const cudaError_t last = cudaGetLastError();          /* clears a non-sticky error */
    const cudaError_t sync = cudaDeviceSynchronize();
    fprintf(g->log, "FAILED %s: %s (%s)\n", name, pb_status_str(st),
            cudaGetErrorString(sync != cudaSuccess ? sync : last));
    fflush(g->log);
    if (g->first_err == PB_OK) g->first_err = st;
    g->n_failed++;
    return sync == cudaSuccess;
}

typedef pb_status (*run_fn)(void *arg, int rot);

static pb_status time_runs(gctx *g, const char *name, run_fn fn, void *arg, int n_rot, double *med_us) {
    pb_status st = PB_OK;
    int rot = 0;
    for (int i = 0; i < g->o->warmup && st == PB_OK; i++) st = fn(arg, rot++ % n_rot);
    if (st == PB_OK && cudaStreamSynchronize(g->st) != cudaSuccess) st = PB_ERR_CUDA;
    double *t = pb_xmalloc(sizeof(double) * (size_t)g->o->reps);
    for (int i = 0; i < g->o->reps && st == PB_OK; i++) {
        int nrec = 0;
        const int cupti = !strcmp(pb_gpu_timer_mode(g->tm), "cupti");
        if ((st = pb_gpu_timer_start(g->tm, name)) != PB_OK) break;
        st = fn(arg, rot++ % n_rot);
        pb_status st2 = pb_gpu_timer_stop(g->tm, &t[i], &nrec);
        if (st == PB_OK && st2 != PB_OK && cupti && strcmp(pb_gpu_timer_mode(g->tm), "cupti")) {
            i--;                                   /* CUPTI failed in this run: again on events */
            continue;
        }
        if (st == PB_OK) st = st2;
    }
    if (st == PB_OK) *med_us = pb_kbench_median(t, g->o->reps);
    free(t);
    return st;
}

static void emit(gctx *g, const char *name, pb_kb_kind kind, double value, double bytes,
                 double peak_bw, double meas_bw) {
    pb_kb_result r;
    memset(&r, 0, sizeof r);
    pb_kbench_tag_name(g->o, name, r.name, sizeof r.name);
    r.kind = kind;
    r.value = value;
    r.bytes = bytes;
    r.gbps = bytes > 0 && value > 0 ? bytes / (value * 1e-6) / 1e9 : 0;
    r.pct_peak = bytes > 0 && peak_bw > 0 ? 100.0 * bytes / (value * 1e-6) / peak_bw : -1;
    r.pct_measured = bytes > 0 && meas_bw > 0 ? 100.0 * bytes / (value * 1e-6) / meas_bw : -1;
    pb_kb_set_add(g->out, &r);
    pb_kbench_print(g->log, &r);
    fflush(g->log);
}

static int n_sets_for(double set_bytes, double l2) {
    int n = (int)ceil(3.0 * l2 / (set_bytes > 1 ? set_bytes : 1));
    return n < 2 ? 2 : n > 64 ? 64 : n;
}

/* ---- decode benchmark: rotating input sets in one pool per layout ---- */
typedef struct {
    pb_attn_params p, pc;
    int n_sets, paged;
    void *q, *out, *k, *v, *kc, *vc, *ws;
    size_t ws_bytes, q_set;
    int32_t *bt, *ctx;
    int64_t *off;
    size_t bt_set;
    cudaStream_t st;
} dec_bench;

static pb_status dec_run(void *arg, int rot) {
    dec_bench *b = arg;
    const size_t es = pb_kv_dtype_size(b->p.dtype);
    char *q = (char *)b->q + (size_t)rot * b->q_set * es;
    if (b->paged)
        return pb_paged_attention_cuda(&b->p, PB_ATTN_AUTO, b->out, q, b->k, b->v,
                                       b->bt + (size_t)rot * b->bt_set, b->ctx, b->ws, b->ws_bytes, b->st);
    return pb_contig_attention_cuda(&b->pc, PB_ATTN_AUTO, b->out, q, b->kc, b->vc,
                                    b->off + (size_t)rot * (size_t)b->p.num_seqs, b->ctx, b->ws,
                                    b->ws_bytes, b->st);
}

static void dec_free(dec_bench *b) {
    cudaFree(b->q); cudaFree(b->out); cudaFree(b->k); cudaFree(b->v); cudaFree(b->kc);
    cudaFree(b->vc); cudaFree(b->ws); cudaFree(b->bt); cudaFree(b->ctx); cudaFree(b->off);
}

/* paged (block bs) vs contiguous at S x ctx, H = Hkv = 40, D = 128, fp16 (OPT-13B) */
static pb_status bench_decode(gctx *g, const char *grid, int32_t S, int32_t ctx, int32_t bs,
                              int with_contig, double *paged_us, double *contig_us) {
    const int32_t H = 40, D = 128;
    const pb_kv_dtype dt = PB_KV_F16, ce = pb_kv_cache_elem(dt, g->o->kv_cache_dtype);
    const size_t es = 2, ces = pb_kv_dtype_size(ce);   /* q/out, cached elements */
    if (ce != dt) with_contig = 0;    /* fp8 caches: paged only on the GPU (attention.h) */
    *contig_us = 0;
    dec_bench b;
    memset(&b, 0, sizeof b);
    pb_status st = PB_OK;
    b.st = g->st;
    const int32_t bps = PB_CDIV(ctx, bs);                           /* blocks per seq */
    const double kv_set = 2.0 * S * (double)bps * bs * H * D * ces;
    b.n_sets = n_sets_for(kv_set, g->l2);
    pb_attn_params p;
    memset(&p, 0, sizeof p);
    p.num_seqs = S; p.num_heads = H; p.num_kv_heads = H; p.head_size = D; p.block_size = bs;
    p.max_blocks_per_seq = bps; p.num_blocks = b.n_sets * S * bps;
    p.num_slots = (int64_t)b.n_sets * S * ((ctx + 7) / 8 * 8);
    p.max_context_len = ctx; p.scale = (float)(1.0 / sqrt((double)D)); p.dtype = dt;
    p.kv_cache_dtype = g->o->kv_cache_dtype;
    p.kv_scale = 1.0f;
    b.p = b.pc = p;
    b.q_set = (size_t)S * H * D;
    b.bt_set = (size_t)S * bps;
    b.ws_bytes = pb_paged_attention_workspace_bytes(&p);
    const size_t pool = (size_t)p.num_blocks * (size_t)bs * H * D;   /* elements per K or V */
    const size_t cpool = (size_t)p.num_slots * H * D;
    int32_t *hbt = pb_xmalloc(sizeof(int32_t) * b.bt_set * (size_t)b.n_sets);
    int32_t *hctx = pb_xmalloc(sizeof(int32_t) * (size_t)S);
    int64_t *hoff = pb_xmalloc(sizeof(int64_t) * (size_t)S * (size_t)b.n_sets);
    int32_t *perm = pb_xmalloc(sizeof(int32_t) * b.bt_set);
    pb_rng rng;
    pb_rng_seed(&rng, 18, (uint64_t)bs);
    for (int set = 0; set < b.n_sets; set++) {           /* random block order in each set */
        for (size_t i = 0; i < b.bt_set; i++) perm[i] = (int32_t)((size_t)set * b.bt_set + i);
        for (size_t i = b.bt_set - 1; i > 0; i--) {
            size_t j = (size_t)pb_rng_below(&rng, i + 1);
            int32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
        }
        memcpy(hbt + (size_t)set * b.bt_set, perm, sizeof(int32_t) * b.bt_set);
        for (int32_t s = 0; s < S; s++)
            hoff[(size_t)set * S + s] = ((int64_t)set * S + s) * ((ctx + 7) / 8 * 8);
    }
    for (int32_t s = 0; s < S; s++) hctx[s] = ctx;
    GTRY(cudaMalloc(&b.q, es * b.q_set * (size_t)b.n_sets));
    GTRY(cudaMalloc(&b.out, es * b.q_set));
    GTRY(cudaMalloc(&b.k, ces * pool));
    GTRY(cudaMalloc(&b.v, ces * pool));
    if (with_contig) {
        GTRY(cudaMalloc(&b.kc, ces * cpool));
        GTRY(cudaMalloc(&b.vc, ces * cpool));
    }
    GTRY(cudaMalloc(&b.ws, b.ws_bytes ? b.ws_bytes : 16));
    GTRY(cudaMalloc((void **)&b.bt, sizeof(int32_t) * b.bt_set * (size_t)b.n_sets));
    GTRY(cudaMalloc((void **)&b.ctx, sizeof(int32_t) * (size_t)S));
    GTRY(cudaMalloc((void **)&b.off, sizeof(int64_t) * (size_t)S * (size_t)b.n_sets));
    GTRY(cudaMemcpy(b.bt, hbt, sizeof(int32_t) * b.bt_set * (size_t)b.n_sets, cudaMemcpyHostToDevice));
    GTRY(cudaMemcpy(b.ctx, hctx, sizeof(int32_t) * (size_t)S, cudaMemcpyHostToDevice));
    GTRY(cudaMemcpy(b.off, hoff, sizeof(int64_t) * (size_t)S * (size_t)b.n_sets, cudaMemcpyHostToDevice));
    STRY(pb_fill_uniform_cuda(b.q, b.q_set * (size_t)b.n_sets, dt, 1, -1.f, 1.f, g->st));
    STRY(pb_fill_uniform_cuda(b.k, pool, ce, 2, -1.f, 1.f, g->st));
    STRY(pb_fill_uniform_cuda(b.v, pool, ce, 3, -1.f, 1.f, g->st));
    if (with_contig) {
        STRY(pb_fill_uniform_cuda(b.kc, cpool, ce, 4, -1.f, 1.f, g->st));
        STRY(pb_fill_uniform_cuda(b.vc, cpool, ce, 5, -1.f, 1.f, g->st));
    }
    GTRY(cudaStreamSynchronize(g->st));
    {
        char name[96];
        const double bytes = 2.0 * S * (double)ctx * H * D * ces + 2.0 * (double)b.q_set * es +
                             4.0 * (double)b.bt_set;
        b.paged = 1;
        snprintf(name, sizeof name, "%s/paged/b%d-ctx%d-bs%d", grid, S, ctx, bs);
        STRY(time_runs(g, name, dec_run, &b, b.n_sets, paged_us));
        emit(g, name, PB_KB_US, *paged_us, bytes, g->o->hbm_bw, g->d2d_bw);
        if (with_contig) {
            b.paged = 0;
            snprintf(name, sizeof name, "%s/contig/b%d-ctx%d", grid, S, ctx);
            STRY(time_runs(g, name, dec_run, &b, b.n_sets, contig_us));
            emit(g, name, PB_KB_US, *contig_us, bytes - 4.0 * (double)b.bt_set, g->o->hbm_bw, g->d2d_bw);
        }
    }
done:
    dec_free(&b);
    free(hbt); free(hctx); free(hoff); free(perm);
    return st;
}

/* ---- plain copies (measured bandwidth references) ---- */
typedef struct { void *dst, *src; size_t bytes; cudaStream_t st; } cp_bench;
static pb_status cp_run(void *arg, int rot) {
    cp_bench *c = arg;
    (void)rot;
    return cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDefault, c->st) == cudaSuccess ? PB_OK : PB_ERR_CUDA;
}

static pb_status bench_d2d(gctx *g) {
    cp_bench c = {NULL, NULL, (size_t)1 << 30, g->st};
    pb_status st = PB_OK;
    double us = 0;
    GTRY(cudaMalloc(&c.dst, c.bytes));
    GTRY(cudaMalloc(&c.src, c.bytes));
    GTRY(cudaMemset(c.src, 1, c.bytes));
    STRY(time_runs(g, "memcpy-d2d", cp_run, &c, 1, &us));
    g->d2d_bw = 2.0 * (double)c.bytes / (us * 1e-6);             /* read + write */
    emit(g, "cache/memcpy-d2d/1GiB", PB_KB_US, us, 2.0 * (double)c.bytes, g->o->hbm_bw, -1);
done:
    cudaFree(c.dst); cudaFree(c.src);
    return st;
}

/* ---- reshape_and_cache / copy_blocks ---- */
typedef struct {
    pb_kv_cache_shape cs;
    void *k, *v, *key, *val;
    int64_t *slots;
    int32_t T, n_sets;                /* reshape: tokens per call, rotating sets */
    void *kl[PB_CACHE_MAX_LAYERS], *vl[PB_CACHE_MAX_LAYERS];
    pb_block_pair *pairs;
    int32_t L, P;
    cudaStream_t st;
} cache_bench;

static pb_status rc_run(void *arg, int rot) {   /* set rot: its own inputs and slots */
    cache_bench *c = arg;
    const size_t off = (size_t)rot * 2048 * (size_t)c->cs.num_kv_heads * (size_t)c->cs.head_size * 2;
    return pb_reshape_and_cache_cuda(&c->cs, c->k, c->v, (char *)c->key + off, (char *)c->val + off, 0, 0,
                                     c->slots + (size_t)rot * 2048, c->T, c->st);
}
static pb_status cb_run(void *arg, int rot) {
    cache_bench *c = arg;
    (void)rot;
    return pb_copy_blocks_cuda(c->kl, c->vl, c->L, c->pairs, c->P, pb_kv_block_bytes(&c->cs), c->st);
}

static pb_status bench_cache(gctx *g) {
    pb_status st = PB_OK;
    cache_bench c;
    memset(&c, 0, sizeof c);
    c.st = g->st;
    pb_kv_cache_shape cs = {4096, 40, 128, 16, PB_KV_F16, g->o->kv_cache_dtype, 1.0f};  /* 64K slots, 671 MB per fp16 K or V */
    c.cs = cs;
    const size_t bb = pb_kv_block_bytes(&cs), hd = 40 * 128;
    const double ces = (double)pb_kv_dtype_size(pb_kv_cache_shape_elem(&cs));
    void *pool = NULL;
    GTRY(cudaMalloc(&c.k, bb * (size_t)cs.num_blocks));
    GTRY(cudaMalloc(&c.v, bb * (size_t)cs.num_blocks));
    /* inputs + written blocks of one 2048-token call = 4 * 2048 * hd * 2 B = 84 MB;
       rotate sets so that 3x the L2 is touched between reuses */
    c.n_sets = n_sets_for(4.0 * 2048 * (double)hd * 2, g->l2);
    GTRY(cudaMalloc(&c.key, 2 * hd * 2048 * (size_t)c.n_sets));
    GTRY(cudaMalloc(&c.val, 2 * hd * 2048 * (size_t)c.n_sets));
    GTRY(cudaMalloc((void **)&c.slots, sizeof(int64_t) * 2048 * (size_t)c.n_sets));
    STRY(pb_fill_uniform_cuda(c.key, hd * 2048 * (size_t)c.n_sets, PB_KV_F16, 9, -1.f, 1.f, g->st));
    STRY(pb_fill_uniform_cuda(c.val, hd * 2048 * (size_t)c.n_sets, PB_KV_F16, 10, -1.f, 1.f, g->st));
    static const int32_t toks[] = {256, 2048};
    int64_t *hs = pb_xmalloc(sizeof(int64_t) * 2048 * (size_t)c.n_sets);
    for (size_t i = 0; i < 2; i++) {
        c.T = toks[i];
        /* prefill-like: distinct scattered blocks per set, consecutive offsets inside */
        for (int set = 0; set < c.n_sets; set++)
            for (int32_t t = 0; t < 2048; t++)
                hs[(size_t)set * 2048 + (size_t)t] =
                    (int64_t)(((t / 16) * 97 + set * 131) % cs.num_blocks) * 16 + t % 16;
        if (cudaMemcpy(c.slots, hs, sizeof(int64_t) * 2048 * (size_t)c.n_sets, cudaMemcpyHostToDevice) != cudaSuccess) {
            free(hs);
            st = PB_ERR_CUDA;
            goto done;
        }
        char name[96];
        double us = 0;
        snprintf(name, sizeof name, "cache/reshape_and_cache/t%d", c.T);
        st = time_runs(g, name, rc_run, &c, c.n_sets, &us);
        if (st != PB_OK) { free(hs); goto done; }
        emit(g, name, PB_KB_US, us, 2.0 * (double)hd * (2 + ces) * c.T, g->o->hbm_bw, g->d2d_bw);
    }
    free(hs);
    /* copy_blocks: 40 layers, each its own K and V tensor of 1024 blocks */
    c.L = 40;
    {
        const size_t per = bb * 1024;
        GTRY(cudaMalloc(&pool, per * 2 * (size_t)c.L));
        for (int l = 0; l < c.L; l++) {
            c.kl[l] = (char *)pool + per * (size_t)(2 * l);
            c.vl[l] = (char *)pool + per * (size_t)(2 * l + 1);
        }
        GTRY(cudaMalloc((void **)&c.pairs, sizeof(pb_block_pair) * 256));
        static const int32_t np[] = {64, 256};
        for (size_t i = 0; i < 2; i++) {
            pb_block_pair hp[256];
            c.P = np[i];
            for (int32_t j = 0; j < c.P; j++) { hp[j].src = j * 3; hp[j].dst = 1023 - j; }
            GTRY(cudaMemcpy(c.pairs, hp, sizeof(pb_block_pair) * (size_t)c.P, cudaMemcpyHostToDevice));
            char name[96];
            double us = 0;
            snprintf(name, sizeof name, "cache/copy_blocks/l40-p%d", c.P);
            STRY(time_runs(g, name, cb_run, &c, 1, &us));
            emit(g, name, PB_KB_US, us, 2.0 * 2 * c.L * c.P * (double)bb, g->o->hbm_bw, g->d2d_bw);
        }
    }
done:
    cudaFree(c.k); cudaFree(c.v); cudaFree(c.key); cudaFree(c.val); cudaFree(c.slots);
    cudaFree(pool); cudaFree(c.pairs);
    return st;
}

/* ---- swap ---- */
typedef struct {
    void *dst[80], *src[80];
    pb_block_pair *pairs;
    int32_t n;
    size_t bb;
    pb_swap_mode mode;
    cudaStream_t st;
} swap_bench;

static pb_status sw_run(void *arg, int rot) {
    swap_bench *s = arg;
    (void)rot;
    return pb_swap_blocks_cuda(s->dst, (const void *const *)s->src, 80, s->pairs, s->n, s->bb, s->mode, s->st);
}

static pb_status bench_swap(gctx *g) {
    pb_status st = PB_OK;
    enum { NT = 80, TOKENS = 256 };
    const size_t tok_bytes = 40 * 128 * 2;                   /* one token of one tensor */
    const size_t gpu_total = (size_t)NT * 2 * TOKENS * tok_bytes, host_total = (size_t)NT * TOKENS * tok_bytes;
    void *dpool = NULL, *hpool = NULL;
    swap_bench s;
    memset(&s, 0, sizeof s);
    s.st = g->st;
    pb_rng rng;
    pb_rng_seed(&rng, 19, 0);
    GTRY(cudaMalloc(&dpool, gpu_total));
    GTRY(cudaHostAlloc(&hpool, host_total, cudaHostAllocDefault));
    GTRY(cudaMemset(dpool, 0, gpu_total));
    memset(hpool, 0, host_total);
    {   /* measured pinned bandwidth, both directions */
        cp_bench c = {hpool, dpool, host_total, g->st};
        double us = 0;
        STRY(time_runs(g, "memcpy-d2h", cp_run, &c, 1, &us));
        g->d2h_bw = (double)host_total / (us * 1e-6);
        emit(g, "swap/memcpy-d2h", PB_KB_US, us, (double)host_total, g->o->pcie_d2h_bw, -1);
        c.dst = dpool; c.src = hpool;
        STRY(time_runs(g, "memcpy-h2d", cp_run, &c, 1, &us));
        g->h2d_bw = (double)host_total / (us * 1e-6);
        emit(g, "swap/memcpy-h2d", PB_KB_US, us, (double)host_total, g->o->pcie_h2d_bw, -1);
    }
    s.pairs = pb_xmalloc(sizeof(pb_block_pair) * TOKENS);
    for (int32_t bs = 1; bs <= 256; bs *= 2) {
        const int32_t nb = TOKENS / bs;
        s.n = nb;
        s.bb = (size_t)bs * tok_bytes;
        void *dt[NT], *ht[NT];
        for (int t = 0; t < NT; t++) {
            dt[t] = (char *)dpool + (size_t)t * 2 * TOKENS * tok_bytes;   /* 2*nb blocks */
            ht[t] = (char *)hpool + (size_t)t * TOKENS * tok_bytes;       /* nb blocks   */
        }
        /* layouts: scattered GPU blocks (random distinct of 2*nb) or one contiguous run */
        int32_t *perm = pb_xmalloc(sizeof(int32_t) * (size_t)(2 * nb));
        for (int32_t i = 0; i < 2 * nb; i++) perm[i] = i;
        for (int32_t i = 2 * nb - 1; i > 0; i--) {
            int32_t j = (int32_t)pb_rng_below(&rng, (uint64_t)i + 1), t = perm[i];
            perm[i] = perm[j]; perm[j] = t;
        }
        static const char *modes[] = {"perblock", "batched-scattered", "batched-runs"};
        for (int dir = 0; dir < 2; dir++) {                 /* 0: out (D2H), 1: in (H2D) */
            for (int m = 0; m < 3; m++) {
                for (int32_t i = 0; i < nb; i++) {
                    int32_t gb = m == 2 ? i : perm[i];
                    s.pairs[i].src = dir == 0 ? gb : i;
                    s.pairs[i].dst = dir == 0 ? i : gb;
                }
                for (int t = 0; t < NT; t++) {
                    s.src[t] = dir == 0 ? dt[t] : ht[t];
                    s.dst[t] = dir == 0 ? ht[t] : dt[t];
                }
                s.mode = m == 0 ? PB_SWAP_PER_BLOCK : PB_SWAP_BATCHED;
                char name[96];
                double us = 0;
                snprintf(name, sizeof name, "swap/%s/%s/bs%d", modes[m], dir == 0 ? "out" : "in", bs);
                st = time_runs(g, name, sw_run, &s, 1, &us);
                if (st != PB_OK) {
                    if (!point_failed(g, name, st)) { free(perm); goto done; }
                    st = PB_OK;
                    continue;
                }
                emit(g, name, PB_KB_US, us, (double)host_total, dir == 0 ? g->o->pcie_d2h_bw : g->o->pcie_h2d_bw,
                     dir == 0 ? g->d2h_bw : g->h2d_bw);
            }
        }
        free(perm);
    }
done:
    free(s.pairs);
    cudaFree(dpool);
    cudaFreeHost(hpool);
    return st;
}

/* ---- correctness gate before timing ---- */
static int check_classes(const pb_kbench_opts *o, FILE *log) {
    int fails = 0;
    if (o->kv_cache_dtype != PB_KV_CACHE_AUTO) {   /* the fp8 kernels the grids will time */
        int32_t c8[3] = {1, 97, 700};
        for (int32_t bs = 1; bs <= 256; bs *= 2)
            fails += pb_kbench_gpu_check_decode_kv(5 + (uint64_t)bs, 3, c8, 40, 40, 128, bs, PB_KV_F16, o->kv_cache_dtype,
                                                   0.5f, bs % 2 ? PB_ATTN_V1 : PB_ATTN_V2, 1);
        fails += pb_kbench_gpu_check_decode_kv(6, 3, c8, 40, 40, 128, 16, PB_KV_F16, o->kv_cache_dtype, 2.0f, PB_ATTN_V2, 1);
    }
    int32_t ctx_s[3] = {1, 97, 300}, ctx_l[3] = {1, 700, 1100};
    for (int32_t bs = 1; bs <= 256; bs *= 2) {
        fails += pb_kbench_gpu_check_decode(1 + (uint64_t)bs, 3, ctx_s, 40, 40, 128, bs, PB_KV_F16, PB_ATTN_V1, 1);
        fails += pb_kbench_gpu_check_decode(2 + (uint64_t)bs, 3, ctx_l, 40, 40, 128, bs, PB_KV_F16, PB_ATTN_V2, 1);
    }
    fails += pb_kbench_gpu_check_decode(3, 3, ctx_s, 40, 40, 128, 16, PB_KV_F16, PB_ATTN_V1, 0);
    fails += pb_kbench_gpu_check_decode(4, 3, ctx_l, 40, 40, 128, 16, PB_KV_F16, PB_ATTN_V2, 0);
    fprintf(log, fails ? "Kernel checks FAILED (%d): not benchmarking.\n"
                       : "All results match. Starting benchmarks.\n", fails);
    return fails;
}

/* ---- calibration: paged (block 1..256) and contiguous decode, OPT-13B heads ---- */
typedef struct {
    void *k, *v;                     /* one pool each, filled once, every config's prefix */
    size_t pool_tokens;
} calib_pool;

static pb_status calib_attn_point(gctx *g, calib_pool *pool, int32_t S, int32_t ctx, int32_t bs) {
    const int32_t H = 40, D = 128;
    const pb_kv_dtype dt = PB_KV_F16;
    const size_t es = 2;
    const int paged = bs > 0;
    const int32_t bps = paged ? PB_CDIV(ctx, bs) : 0, ctx8 = (ctx + 7) / 8 * 8;
    const size_t seq_tokens = paged ? (size_t)bps * (size_t)bs : (size_t)ctx8;
    const double kv_set = 2.0 * S * (double)seq_tokens * H * D * es;
    int n_sets = n_sets_for(kv_set, g->l2);
    while (n_sets > 1 && (size_t)n_sets * S * seq_tokens > pool->pool_tokens) n_sets--;
    dec_bench b;
    memset(&b, 0, sizeof b);
    pb_status st = PB_OK;
    b.st = g->st;
    b.n_sets = n_sets;
    b.paged = paged;
    pb_attn_params p;
    memset(&p, 0, sizeof p);
    p.num_seqs = S; p.num_heads = H; p.num_kv_heads = H; p.head_size = D; p.block_size = paged ? bs : 16;
    p.max_blocks_per_seq = paged ? bps : 1;
    p.num_blocks = paged ? n_sets * S * bps : 1;
    p.num_slots = (int64_t)n_sets * S * ctx8;
    p.max_context_len = ctx; p.scale = (float)(1.0 / sqrt((double)D)); p.dtype = dt;
    b.p = b.pc = p;
    b.q_set = (size_t)S * H * D;
    b.bt_set = paged ? (size_t)S * bps : 0;
    b.ws_bytes = pb_paged_attention_workspace_bytes(&p);
    b.k = b.kc = pool->k;            /* (the contiguous layout reads the same pool) */
    b.v = b.vc = pool->v;
    const size_t nbt = paged ? b.bt_set * (size_t)n_sets : 1;
    int32_t *hbt = pb_xcalloc(nbt, sizeof(int32_t)), *hctx = pb_xmalloc(sizeof(int32_t) * (size_t)S);
    int64_t *hoff = pb_xmalloc(sizeof(int64_t) * (size_t)S * (size_t)n_sets);
    pb_rng rng;
    pb_rng_seed(&rng, 39, (uint64_t)bs);
    for (int set = 0; set < n_sets && paged; set++) {   /* random block order in each set */
        int32_t *perm = hbt + (size_t)set * b.bt_set;
        for (size_t i = 0; i < b.bt_set; i++) perm[i] = (int32_t)((size_t)set * b.bt_set + i);
        for (size_t i = b.bt_set - 1; i > 0; i--) {
            size_t j = (size_t)pb_rng_below(&rng, i + 1);
            int32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
        }
    }
    for (int set = 0; set < n_sets; set++)
        for (int32_t s2 = 0; s2 < S; s2++) hoff[(size_t)set * S + s2] = ((int64_t)set * S + s2) * ctx8;
    for (int32_t s2 = 0; s2 < S; s2++) hctx[s2] = ctx;
    GTRY(cudaMalloc(&b.q, es * b.q_set * (size_t)n_sets));
    GTRY(cudaMalloc(&b.out, es * b.q_set));
    GTRY(cudaMalloc(&b.ws, b.ws_bytes ? b.ws_bytes : 16));
    GTRY(cudaMalloc((void **)&b.bt, sizeof(int32_t) * nbt));
    GTRY(cudaMalloc((void **)&b.ctx, sizeof(int32_t) * (size_t)S));
    GTRY(cudaMalloc((void **)&b.off, sizeof(int64_t) * (size_t)S * (size_t)n_sets));
    GTRY(cudaMemcpy(b.bt, hbt, sizeof(int32_t) * nbt, cudaMemcpyHostToDevice));
    GTRY(cudaMemcpy(b.ctx, hctx, sizeof(int32_t) * (size_t)S, cudaMemcpyHostToDevice));
    GTRY(cudaMemcpy(b.off, hoff, sizeof(int64_t) * (size_t)S * (size_t)n_sets, cudaMemcpyHostToDevice));
    STRY(pb_fill_uniform_cuda(b.q, b.q_set * (size_t)n_sets, dt, 1, -1.f, 1.f, g->st));
    GTRY(cudaStreamSynchronize(g->st));
    {
        char name[128];
        double us = 0;
        const int algo = pb_paged_attention_choose(paged ? &b.p : &b.pc, g->sms) == PB_ATTN_V2 ? 2 : 1;
        const double bytes = 2.0 * S * (double)ctx * H * D * es + 2.0 * (double)b.q_set * es + 4.0 * (double)b.bt_set;
        snprintf(name, sizeof name, PB_KB_CALIB_ATTN_NAME, paged ? "paged" : "contig", H, D, "fp16", bs, S, ctx, algo);
        STRY(time_runs(g, name, dec_run, &b, n_sets, &us));
        emit(g, name, PB_KB_US, us, bytes, g->o->hbm_bw, g->d2d_bw);
    }
done:
    b.k = b.v = b.kc = b.vc = NULL;  /* the pool is the caller's */
    dec_free(&b);
    free(hbt); free(hctx); free(hoff);
    return st;
}

static pb_status bench_calib_attn(gctx *g) {
    static const int32_t batches[] = {8, 16, 32, 64, 128, 256}, ctxs[] = {32, 64, 128, 256, 512, 1024, 2048};
    calib_pool pool = {NULL, NULL, 0};
    pb_status st = PB_OK;
    /* the largest config (256 x 2048 padded to blocks of 256) in 2 sets, or 3x L2 */
    pool.pool_tokens = 2 * (size_t)256 * 2048;
    const size_t min_tokens = (size_t)ceil(3.0 * g->l2 / (2.0 * 40 * 128 * 2)) + (size_t)256 * 256;
    if (pool.pool_tokens < min_tokens) pool.pool_tokens = min_tokens;
    const size_t pool_elems = pool.pool_tokens * 40 * 128;
    GTRY(cudaMalloc(&pool.k, 2 * pool_elems));
    GTRY(cudaMalloc(&pool.v, 2 * pool_elems));
    STRY(pb_fill_uniform_cuda(pool.k, pool_elems, PB_KV_F16, 2, -1.f, 1.f, g->st));
    STRY(pb_fill_uniform_cuda(pool.v, pool_elems, PB_KV_F16, 3, -1.f, 1.f, g->st));
    GTRY(cudaStreamSynchronize(g->st));
    for (size_t c = 0; c < PB_ARRAY_LEN(ctxs); c++)
        for (size_t b = 0; b < PB_ARRAY_LEN(batches); b++)
            for (int32_t bs = 0; bs <= 256; bs = bs ? 2 * bs : 1) {     /* 0: contiguous */
                pb_status s2 = calib_attn_point(g, &pool, batches[b], ctxs[c], bs);
                if (s2 != PB_OK) {
                    char name[96];
                    snprintf(name, sizeof name, "calib-attn bs%d b%d ctx%d", bs, batches[b], ctxs[c]);
                    if (!point_failed(g, name, s2)) { st = s2; goto done; }
                }
            }
done:
    cudaFree(pool.k);
    cudaFree(pool.v);
    return st;
}

/* ---- calibration: cuBLAS GEMMs of the specs' layers (K x N; kbench.h) ---- */
static const int32_t calib_gemm_kn[][2] = {
    {5120, 15360}, {5120, 5120}, {5120, 20480}, {20480, 5120},     /* OPT-13B: QKV, out, FC1, FC2 */
    {4096, 12288}, {4096, 4096}, {4096, 22016}, {11008, 4096},     /* Llama-2-7B: QKV, o, gate_up, down */
    {4096, 6144}, {4096, 28672}, {14336, 4096},                    /* Llama-3-8B: QKV (GQA 8), gate_up, down */
    {8192, 2560}, {2048, 8192}, {8192, 14336}, {7168, 8192},       /* Llama-2/3-70B at TP 4 */
    {8192, 1280}, {1024, 8192}, {8192, 7168}, {3584, 8192},        /* Llama-2/3-70B at TP 8 */
};
enum { CALIB_GEMM_MAX_M = 4096 };

/* M = 1..16, 24..512 step 8, then 768, 1024, 1536, ... 4096 (prefill sizes); 0 after the last */
static int32_t calib_gemm_next_m(int32_t M) {
    if (M < 16) return M + 1;
    if (M < 512) return M + 8 - (M % 8);
    int32_t n = (M & (M - 1)) ? M / 3 * 4 : M / 2 * 3;      /* 512 768 1024 1536 2048 3072 4096 */
    return n <= CALIB_GEMM_MAX_M ? n : 0;
}
typedef struct {
    cublasHandle_t h;
    void *w, *x, *y;
    size_t w_set;
    int32_t M, N, K;
    cudaStream_t st;
} gemm_bench;

static pb_status gemm_run(void *arg, int rot) {
    gemm_bench *b = arg;
    return pb_gemm_cuda(b->h, b->y, 0, b->x, (char *)b->w + (size_t)rot * b->w_set * 2, b->M, b->N, b->K, b->st);
}

static pb_status bench_calib_gemm(gctx *g) {
    gemm_bench b;
    memset(&b, 0, sizeof b);
    b.st = g->st;
    pb_status st = PB_OK;
    if (cublasCreate(&b.h) != CUBLAS_STATUS_SUCCESS) {
        pb_log_error("kernels: cublasCreate failed");
        return PB_ERR_CUDA;
    }
    void *ws = NULL;
    if ((st = pb_cublas_setup(b.h, b.st, &ws)) != PB_OK) {
        cublasDestroy(b.h);
        return st;
    }
    for (size_t s = 0; s < PB_ARRAY_LEN(calib_gemm_kn); s++) {
        b.K = calib_gemm_kn[s][0];
        b.N = calib_gemm_kn[s][1];
        b.w_set = (size_t)b.K * (size_t)b.N;
        const int n_sets = n_sets_for(2.0 * (double)b.w_set, g->l2);
        GTRY(cudaMalloc(&b.w, 2 * b.w_set * (size_t)n_sets));
        GTRY(cudaMalloc(&b.x, (size_t)2 * CALIB_GEMM_MAX_M * (size_t)b.K));
        GTRY(cudaMalloc(&b.y, (size_t)2 * CALIB_GEMM_MAX_M * (size_t)b.N));
        STRY(pb_fill_uniform_cuda(b.w, b.w_set * (size_t)n_sets, PB_KV_F16, 11, -0.05f, 0.05f, g->st));
        STRY(pb_fill_uniform_cuda(b.x, (size_t)CALIB_GEMM_MAX_M * (size_t)b.K, PB_KV_F16, 12, -1.f, 1.f, g->st));
        GTRY(cudaStreamSynchronize(g->st));
        for (int32_t M = 1; M > 0; M = calib_gemm_next_m(M)) {
            char name[96];
            double us = 0;
            b.M = M;
            snprintf(name, sizeof name, PB_KB_CALIB_GEMM_NAME, "fp16", M, b.N, b.K);
            pb_status s2 = time_runs(g, name, gemm_run, &b, n_sets, &us);
            if (s2 != PB_OK) {
                if (!point_failed(g, name, s2)) { st = s2; goto done; }
                continue;
            }
            emit(g, name, PB_KB_US, us, 2.0 * ((double)M * b.K + (double)b.K * b.N + (double)M * b.N),
                 g->o->hbm_bw, g->d2d_bw);
        }
        cudaFree(b.w); cudaFree(b.x); cudaFree(b.y);
        b.w = b.x = b.y = NULL;
    }
done:
    cudaFree(b.w); cudaFree(b.x); cudaFree(b.y);
    cublasDestroy(b.h);
    cudaFree(ws);
    return st;
}

pb_status pb_kbench_run_gpu(const pb_kbench_opts *o, pb_kb_set *out, FILE *log, int *valid) {
    pb_status st = PB_OK;
    gctx g;
    memset(&g, 0, sizeof g);
    g.o = o;
    g.log = log;
    g.out = out;
    *valid = 0;
    snprintf(g_timer, sizeof g_timer, "-");
    g_timer_why[0] = '\0';
    int dev = 0, l2 = 0;
    GTRY(cudaGetDevice(&dev));
    GTRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    GTRY(cudaDeviceGetAttribute(&g.sms, cudaDevAttrMultiProcessorCount, dev));
    g.l2 = o->l2_bytes > 0 ? o->l2_bytes : (double)l2;
    GTRY(cudaStreamCreateWithFlags(&g.st, cudaStreamNonBlocking));
    if (check_classes(o, log)) { st = PB_ERR_INVALID; goto done; }
    STRY(pb_gpu_timer_create("pagedbench", g.st, &g.tm));
    snprintf(g_timer, sizeof g_timer, "%s", pb_gpu_timer_mode(g.tm));
    snprintf(g_timer_why, sizeof g_timer_why, "%s", pb_gpu_timer_why(g.tm));
    fprintf(log, "Timer: %s%s%s%s\n", g_timer, g_timer_why[0] ? " (" : "", g_timer_why, g_timer_why[0] ? ")" : "");
    /* a failed point is logged and skipped while the device still answers (point_failed) */
#define POINT(call, what) do { pb_status s_ = (call); if (s_ != PB_OK && !point_failed(&g, what, s_)) goto done; } while (0)
    if (o->grids & (PB_KB_GRID_CACHE | PB_KB_GRID_FIG18A | PB_KB_GRID_LONG | PB_KB_GRID_BLOCKSIZE |
                    PB_KB_GRID_CALIB_ATTN | PB_KB_GRID_CALIB_GEMM))
        POINT(bench_d2d(&g), "cache/memcpy-d2d/1GiB");
    if (o->grids & PB_KB_GRID_FIG18A) {
        static const int32_t bsz[] = {8, 32}, ctxs[] = {64, 128, 256};
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 3; c++) {
                double pu = 0, cu = 0;
                char name[96];
                snprintf(name, sizeof name, "fig18a/ratio/b%d-ctx%d", bsz[b], ctxs[c]);
                POINT(bench_decode(&g, "fig18a", bsz[b], ctxs[c], 16, 1, &pu, &cu), name);
                if (pu > 0 && cu > 0) emit(&g, name, PB_KB_RATIO, pu / cu, 0, 0, 0);
            }
    }
    if (o->grids & PB_KB_GRID_LONG) {
        /* 64K tokens of KV per call, context 1K..64K per sequence */
        static const int32_t bsz[] = {64, 16, 8, 4, 2, 1}, ctxs[] = {1024, 4096, 8192, 16384, 32768, 65536};
        for (int i = 0; i < 6; i++) {
            double pu = 0, cu = 0;
            char name[96];
            snprintf(name, sizeof name, "long/ratio/b%d-ctx%d", bsz[i], ctxs[i]);
            POINT(bench_decode(&g, "long", bsz[i], ctxs[i], 16, 1, &pu, &cu), name);
            if (pu > 0 && cu > 0) emit(&g, name, PB_KB_RATIO, pu / cu, 0, 0, 0);
        }
    }
    if (o->grids & PB_KB_GRID_BLOCKSIZE) {
        double cu = 0;
        for (int32_t bs = 1; bs <= 256; bs *= 2) {
            double pu = 0, cu2 = 0;
            char name[96];
            snprintf(name, sizeof name, "blocksize/ratio/bs%d", bs);
            POINT(bench_decode(&g, "blocksize", 32, 1024, bs, bs == 1, &pu, &cu2), name);
            if (bs == 1) cu = cu2;
            if (pu > 0 && cu > 0) emit(&g, name, PB_KB_RATIO, pu / cu, 0, 0, 0);
        }
    }
    if (o->grids & PB_KB_GRID_CACHE) POINT(bench_cache(&g), "cache");
    if (o->grids & PB_KB_GRID_SWAP) POINT(bench_swap(&g), "swap");
    if (o->grids & PB_KB_GRID_CALIB_ATTN) POINT(bench_calib_attn(&g), "calib-attn");
    if (o->grids & PB_KB_GRID_CALIB_GEMM) POINT(bench_calib_gemm(&g), "calib-gemm");
#undef POINT
done:
    if (out->n) pb_kbench_goals(out, log);
    if (g.tm && strcmp(g_timer, pb_gpu_timer_mode(g.tm))) {   /* CUPTI failed part-way */
        fprintf(log, "Timer: %s from a point on (%s): the results before it are CUPTI's\n",
                pb_gpu_timer_mode(g.tm), pb_gpu_timer_why(g.tm));
        snprintf(g_timer, sizeof g_timer, "cupti+events");
        snprintf(g_timer_why, sizeof g_timer_why, "%s", pb_gpu_timer_why(g.tm));
    }
    if (g.tm) {
        uint64_t dropped = pb_gpu_timer_dropped(g.tm);
        fprintf(log, "CUPTI dropped records: %llu\n", (unsigned long long)dropped);
        *valid = dropped == 0;
    }
    if (g.n_failed) fprintf(log, "Failed points: %d (the first: %s)\n", g.n_failed, pb_status_str(g.first_err));
    if (st == PB_OK) st = g.first_err;
    pb_gpu_timer_destroy(g.tm);
    if (g.st) cudaStreamDestroy(g.st);
    return st;
}


#endif /* PB_HAVE_CUDA */
