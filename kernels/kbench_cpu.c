/* kbench_cpu.c -- CPU path of `pagedbench kernels`: the C references through the
 * same grids and regression check (see kbench.h), plus shared helpers. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn_case.h"
#include "cache_ops.h"
#include "kbench.h"
#include "layers.h"

unsigned pb_kbench_grid_bit(const char *name) {
    if (!strcmp(name, "fig18a")) return PB_KB_GRID_FIG18A;
    if (!strcmp(name, "long")) return PB_KB_GRID_LONG;
    if (!strcmp(name, "blocksize")) return PB_KB_GRID_BLOCKSIZE;
    if (!strcmp(name, "cache")) return PB_KB_GRID_CACHE;
    if (!strcmp(name, "swap")) return PB_KB_GRID_SWAP;
    if (!strcmp(name, "calib-attn")) return PB_KB_GRID_CALIB_ATTN;
    if (!strcmp(name, "calib-gemm")) return PB_KB_GRID_CALIB_GEMM;
    return 0;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double pb_kbench_median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void pb_kbench_print(FILE *log, const pb_kb_result *r) {
    if (r->kind == PB_KB_RATIO) {
        fprintf(log, "%-44s | ratio %8.3f\n", r->name, r->value);
        return;
    }
    fprintf(log, "%-44s | %10.2f us", r->name, r->value);
    if (r->gbps > 0) fprintf(log, " | %8.1f GB/s", r->gbps);
    if (r->pct_peak >= 0) fprintf(log, " | %5.1f%% peak", r->pct_peak);
    if (r->pct_measured >= 0) fprintf(log, " | %5.1f%% measured", r->pct_measured);
    fputc('\n', log);
}

static pb_kb_result mk(const char *name, pb_kb_kind kind, double value, double bytes) {
    pb_kb_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", name);
    r.kind = kind;
    r.value = value;
    r.bytes = bytes;
    r.gbps = bytes > 0 && value > 0 ? bytes / (value * 1e-6) / 1e9 : 0;
    r.pct_peak = r.pct_measured = -1;
    return r;
}

/* Thread CPU time, not wall time: on a loaded shared machine the wall clock of a
 * 10 ms run is mostly other processes' time slices; CPU time is not. */
static double cpu_now_s(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return pb_now_s();
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU timings are best-of-N: on a shared machine other processes only ever add
 * time, so the minimum is the reproducible statistic (the GPU path uses medians). */
static double cpu_best(const double *t, int n) {
    double m = t[0];
    for (int i = 1; i < n; i++) m = t[i] < m ? t[i] : m;
    return m;
}

void pb_kbench_tag_name(const pb_kbench_opts *o, const char *name, char *out, size_t n) {
    const char *tag = pb_kv_cache_dtype_name(o->kv_cache_dtype);
    const char *grid = strncmp(name, "cpu/", 4) ? name : name + 4, *slash = strchr(grid, '/');
    if (o->kv_cache_dtype == PB_KV_CACHE_AUTO || !tag || !slash || !strncmp(grid, "swap/", 5) ||
        !strncmp(grid, "calib-", 6)) {   /* swap moves bytes either way; the sweeps calibrate fp16 */
        snprintf(out, n, "%s", name);
        return;
    }
    snprintf(out, n, "%.*s-%s%s", (int)(slash - name), name, tag, slash);
}

static void emit(const pb_kbench_opts *o, pb_kb_set *out, FILE *log, const pb_kb_result *r) {
    pb_kb_result t = *r;
    pb_kbench_tag_name(o, r->name, t.name, sizeof t.name);
    pb_kb_set_add(out, &t);
    pb_kbench_print(log, &t);
}

/* ---- decode: paged vs contiguous, interleaved ---- */
typedef struct { double paged_us, contig_us, bytes; } cpu_dec_time;

/* best-of-reps times of the paged (block bs) and contiguous references at S x ctx */
static pb_status cpu_time_decode(const pb_kbench_opts *o, int32_t S, int32_t ctx, int32_t bs,
                                 cpu_dec_time *out) {
    const int32_t H = 4, D = 64;
    int32_t *lens = pb_xmalloc(sizeof(int32_t) * (size_t)S);
    for (int32_t s = 0; s < S; s++) lens[s] = ctx;
    pb_attn_case c;
    pb_status st = pb_attn_case_make_kv(&c, 1234, S, lens, H, H, D, bs, PB_KV_F32, o->kv_cache_dtype, 1.0f, 0, 0);
    const double ces = (double)pb_kv_dtype_size(pb_attn_cache_elem(&c.p));   /* bytes of a cached element */
    free(lens);
    if (st != PB_OK) return st;
    float *outp = pb_xmalloc(sizeof(float) * c.out_elems), *outc = pb_xmalloc(sizeof(float) * c.out_elems);
    double *tp = pb_xmalloc(sizeof(double) * (size_t)o->reps), *tc = pb_xmalloc(sizeof(double) * (size_t)o->reps);
    for (int i = -o->warmup; i < o->reps && st == PB_OK; i++) {
        double t0 = cpu_now_s();
        st = pb_paged_attention_ref(&c.p, outp, c.q, c.k_cache, c.v_cache, c.block_tables, c.context_lens);
        double t1 = cpu_now_s();
        if (st == PB_OK)
            st = pb_contig_attention_ref(&c.pc, outc, c.q, c.kc_contig, c.vc_contig, c.kv_offsets, c.context_lens);
        double t2 = cpu_now_s();
        if (i >= 0) { tp[i] = (t1 - t0) * 1e6; tc[i] = (t2 - t1) * 1e6; }
    }
    if (st == PB_OK && memcmp(outp, outc, sizeof(float) * c.out_elems) != 0) {
        pb_log_error("kernels: cpu paged and contiguous references disagree (S %d ctx %d bs %d)", S, ctx, bs);
        st = PB_ERR_INVALID;
    }
    if (st == PB_OK) {
        out->bytes = 2.0 * S * ctx * H * D * ces + 2.0 * c.q_elems * 4;
        out->paged_us = cpu_best(tp, o->reps);
        out->contig_us = cpu_best(tc, o->reps);
    }
    free(outp); free(outc); free(tp); free(tc);
    pb_attn_case_free(&c);
    return st;
}

static pb_status cpu_decode(const pb_kbench_opts *o, pb_kb_set *out, FILE *log, const char *grid,
                            int32_t S, int32_t ctx, int32_t bs, int ratio_only_name_bs) {
    cpu_dec_time t;
    pb_status st = cpu_time_decode(o, S, ctx, bs, &t);
    if (st != PB_OK) return st;
    char name[96];
    pb_kb_result r;
    snprintf(name, sizeof name, "cpu/%s/paged/b%d-ctx%d-bs%d", grid, S, ctx, bs);
    r = mk(name, PB_KB_US, t.paged_us, t.bytes);
    emit(o, out, log, &r);
    if (!ratio_only_name_bs) {
        snprintf(name, sizeof name, "cpu/%s/contig/b%d-ctx%d", grid, S, ctx);
        r = mk(name, PB_KB_US, t.contig_us, t.bytes);
        emit(o, out, log, &r);
        snprintf(name, sizeof name, "cpu/%s/ratio/b%d-ctx%d", grid, S, ctx);
    } else {
        snprintf(name, sizeof name, "cpu/%s/ratio/bs%d", grid, bs);
    }
    r = mk(name, PB_KB_RATIO, t.paged_us / t.contig_us, 0);
    emit(o, out, log, &r);
    return PB_OK;
}

/* ---- calibration sweeps on the references: the names and CSVs of the GPU sweeps ---- */
static pb_status cpu_calib_attn(const pb_kbench_opts *opts, pb_kb_set *out, FILE *log) {
    pb_kbench_opts auto_kv = *opts;   /* the sweeps calibrate the fp16 (here fp32) cache only */
    auto_kv.kv_cache_dtype = PB_KV_CACHE_AUTO;
    const pb_kbench_opts *o = &auto_kv;
    static const int32_t ctxs[] = {32, 256};
    const int32_t S = 2;
    for (size_t c = 0; c < PB_ARRAY_LEN(ctxs); c++)
        for (int32_t bs = 1; bs <= 256; bs *= 2) {
            cpu_dec_time t;
            pb_status st = cpu_time_decode(o, S, ctxs[c], bs, &t);
            if (st != PB_OK) return st;
            char name[96];
            pb_kb_result r;
            snprintf(name, sizeof name, "cpu/" PB_KB_CALIB_ATTN_NAME, "paged", 4, 64, "fp32", bs, S, ctxs[c], 1);
            r = mk(name, PB_KB_US, t.paged_us, t.bytes);
            emit(o, out, log, &r);
            if (bs == 1) {
                snprintf(name, sizeof name, "cpu/" PB_KB_CALIB_ATTN_NAME, "contig", 4, 64, "fp32", 0, S, ctxs[c], 1);
                r = mk(name, PB_KB_US, t.contig_us, t.bytes);
                emit(o, out, log, &r);
            }
        }
    return PB_OK;
}

static pb_status cpu_calib_gemm(const pb_kbench_opts *o, pb_kb_set *out, FILE *log) {
    static const int32_t kn[4][2] = {{128, 384}, {128, 128}, {128, 512}, {512, 128}};   /* OPT-13B / 40 */
    static const int32_t ms[] = {1, 8, 64, 65};
    float *in = pb_xcalloc((size_t)65 * 512, sizeof(float)), *w = pb_xcalloc((size_t)512 * 512, sizeof(float));
    float *o_ = pb_xcalloc((size_t)65 * 512, sizeof(float));
    double *t = pb_xmalloc(sizeof(double) * (size_t)o->reps);
    for (size_t i = 0; i < (size_t)65 * 512; i++) in[i] = (float)(i % 7) - 3.0f;
    for (size_t i = 0; i < (size_t)512 * 512; i++) w[i] = (float)(i % 5) - 2.0f;
    for (int s = 0; s < 4; s++)
        for (size_t m = 0; m < PB_ARRAY_LEN(ms); m++) {
            const int32_t K = kn[s][0], N = kn[s][1], M = ms[m];
            for (int i = -o->warmup; i < o->reps; i++) {
                double t0 = cpu_now_s();
                pb_gemm_ref(o_, in, w, NULL, M, N, K);
                if (i >= 0) t[i] = (cpu_now_s() - t0) * 1e6;
            }
            char name[96];
            snprintf(name, sizeof name, "cpu/" PB_KB_CALIB_GEMM_NAME, "fp32", M, N, K);
            pb_kb_result r = mk(name, PB_KB_US, cpu_best(t, o->reps), 4.0 * ((double)M * K + (double)K * N + (double)M * N));
            emit(o, out, log, &r);
        }
    free(in); free(w); free(o_); free(t);
    return PB_OK;
}

static pb_status cpu_cache(const pb_kbench_opts *o, pb_kb_set *out, FILE *log) {
    /* reshape_and_cache of 256 tokens, 4 kv heads x 64, block 16, fp32 */
    pb_kv_cache_shape cs = {64, 4, 64, 16, PB_KV_F32, o->kv_cache_dtype, 1.0f};
    const int32_t T = 256, hd = 4 * 64;
    const double ces = (double)pb_kv_dtype_size(pb_kv_cache_shape_elem(&cs));
    size_t cache_n = (size_t)cs.num_blocks * pb_kv_block_bytes(&cs);
    char *kc = pb_xcalloc(cache_n, 1), *vc = pb_xcalloc(cache_n, 1);
    float *key = pb_xcalloc((size_t)T * hd, 4), *val = pb_xcalloc((size_t)T * hd, 4);
    int64_t *slots = pb_xmalloc(sizeof(int64_t) * T);
    for (int32_t i = 0; i < T; i++) slots[i] = (int64_t)((i / 16) * 3 % 64) * 16 + i % 16;
    double *t = pb_xmalloc(sizeof(double) * (size_t)o->reps);
    pb_status st = PB_OK;
    for (int i = -o->warmup; i < o->reps && st == PB_OK; i++) {
        double t0 = cpu_now_s();
        st = pb_reshape_and_cache_ref(&cs, kc, vc, key, val, 0, 0, slots, T);
        if (i >= 0) t[i] = (cpu_now_s() - t0) * 1e6;
    }
    if (st == PB_OK) {
        pb_kb_result r = mk("cpu/cache/reshape_and_cache/t256", PB_KB_US, cpu_best(t, o->reps),
                            2.0 * T * hd * (4 + ces));
        emit(o, out, log, &r);
    }
    /* copy_blocks: 8 layers x 16 pairs */
    enum { L = 8, P = 16 };
    void *ks[L], *vs[L];
    size_t bb = pb_kv_block_bytes(&cs);
    for (int l = 0; l < L; l++) { ks[l] = pb_xcalloc(cs.num_blocks, bb); vs[l] = pb_xcalloc(cs.num_blocks, bb); }
    pb_block_pair pairs[P];
    for (int i = 0; i < P; i++) { pairs[i].src = i; pairs[i].dst = 63 - i; }
    for (int i = -o->warmup; i < o->reps && st == PB_OK; i++) {
        double t0 = cpu_now_s();
        st = pb_copy_blocks_ref(ks, vs, L, pairs, P, bb);
        if (i >= 0) t[i] = (cpu_now_s() - t0) * 1e6;
    }
    if (st == PB_OK) {
        pb_kb_result r = mk("cpu/cache/copy_blocks/l8-p16", PB_KB_US, cpu_best(t, o->reps),
                            2.0 * L * P * 2 * (double)bb);
        emit(o, out, log, &r);
    }
    for (int l = 0; l < L; l++) { free(ks[l]); free(vs[l]); }
    free(kc); free(vc); free(key); free(val); free(slots); free(t);
    return st;
}

static pb_status cpu_swap(const pb_kbench_opts *o, pb_kb_set *out, FILE *log) {
    /* host swap of 256 tokens x 8 tensors (4 heads x 64, fp32) at block 1, 16, 256 */
    static const int32_t bss[] = {1, 16, 256};
    pb_status st = PB_OK;
    double *t = pb_xmalloc(sizeof(double) * (size_t)o->reps);
    for (size_t k = 0; k < PB_ARRAY_LEN(bss) && st == PB_OK; k++) {
        const int32_t bs = bss[k], nb = 256 / bs, NT = 8;
        const size_t bb = (size_t)bs * 4 * 64 * 4;
        void *src[8], *dst[8];
        for (int i = 0; i < NT; i++) { src[i] = pb_xcalloc((size_t)nb * 2, bb); dst[i] = pb_xcalloc((size_t)nb, bb); }
        pb_block_pair *pairs = pb_xmalloc(sizeof(pb_block_pair) * (size_t)nb);
        for (int32_t i = 0; i < nb; i++) { pairs[i].src = 2 * i; pairs[i].dst = i; }  /* no runs */
        for (int i = -o->warmup; i < o->reps && st == PB_OK; i++) {
            double t0 = cpu_now_s();
            st = pb_swap_blocks_ref(dst, (const void *const *)src, NT, pairs, nb, bb);
            if (i >= 0) t[i] = (cpu_now_s() - t0) * 1e6;
        }
        if (st == PB_OK) {
            char name[96];
            snprintf(name, sizeof name, "cpu/swap/host/bs%d", bs);
            pb_kb_result r = mk(name, PB_KB_US, cpu_best(t, o->reps), (double)nb * NT * (double)bb);
            emit(o, out, log, &r);
        }
        for (int i = 0; i < NT; i++) { free(src[i]); free(dst[i]); }
        free(pairs);
    }
    free(t);
    return st;
}

pb_status pb_kbench_run_cpu(const pb_kbench_opts *o, pb_kb_set *out, FILE *log, int *valid) {
    pb_status st = PB_OK;
    *valid = 1;
    if (o->grids & PB_KB_GRID_FIG18A) {
        static const int32_t bsz[] = {2, 8}, ctxs[] = {64, 128, 256};
        for (size_t b = 0; b < 2 && st == PB_OK; b++)
            for (size_t c = 0; c < 3 && st == PB_OK; c++)
                st = cpu_decode(o, out, log, "fig18a", bsz[b], ctxs[c], 16, 0);
    }
    if (st == PB_OK && (o->grids & PB_KB_GRID_LONG)) st = cpu_decode(o, out, log, "long", 1, 2048, 16, 0);
    if (o->grids & PB_KB_GRID_BLOCKSIZE)
        for (int32_t bs = 1; bs <= 256 && st == PB_OK; bs *= 2) st = cpu_decode(o, out, log, "blocksize", 2, 256, bs, 1);
    if (st == PB_OK && (o->grids & PB_KB_GRID_CACHE)) st = cpu_cache(o, out, log);
    if (st == PB_OK && (o->grids & PB_KB_GRID_SWAP)) st = cpu_swap(o, out, log);
    if (st == PB_OK && (o->grids & PB_KB_GRID_CALIB_ATTN)) st = cpu_calib_attn(o, out, log);
    if (st == PB_OK && (o->grids & PB_KB_GRID_CALIB_GEMM)) st = cpu_calib_gemm(o, out, log);
    if (st != PB_OK) *valid = 0;
    return st;
}

/* ---- goals and CSV (shared by both paths) ---- */

static int goal(FILE *log, const char *what, int met, int *missed) {
    fprintf(log, "goal %-58s %s\n", what, met ? "MET" : "MISSED");
    *missed += !met;
    return met;
}

int pb_kbench_goals(const pb_kb_set *r, FILE *log) {
    int missed = 0;
    char what[160];
    for (int i = 0; i < r->n; i++) {
        const pb_kb_result *e = &r->e[i];
        int b = 0, ctx = 0, bs = 0, p = 0, t = 0;
        if (sscanf(e->name, "long/paged/b%d-ctx%d-bs%d", &b, &ctx, &bs) == 3 && e->pct_peak >= 0) {
            snprintf(what, sizeof what, "G1a %s >= 80%% HBM (%.1f%%)", e->name, e->pct_peak);
            goal(log, what, e->pct_peak >= 80.0, &missed);
        } else if ((sscanf(e->name, "long/ratio/b%d-ctx%d", &b, &ctx) == 2 ||
                    sscanf(e->name, "fig18a/ratio/b%d-ctx%d", &b, &ctx) == 2) && ctx >= 128) {
            double lim = ctx >= 1024 ? 1.05 : 1.10;
            snprintf(what, sizeof what, "G1d %s <= %.2f (%.3f)", e->name, lim, e->value);
            goal(log, what, e->value <= lim, &missed);
        } else if (sscanf(e->name, "blocksize/ratio/bs%d", &bs) == 1 && (bs == 8 || bs == 16)) {
            double lim = bs == 16 ? 1.05 : 1.10;       /* 32 x 1K: context >= 1K */
            snprintf(what, sizeof what, "G1d %s <= %.2f (%.3f)", e->name, lim, e->value);
            goal(log, what, e->value <= lim, &missed);
        } else if ((sscanf(e->name, "cache/reshape_and_cache/t%d", &t) == 1 && t >= 2048) ||
                   (sscanf(e->name, "cache/copy_blocks/l40-p%d", &p) == 1 && p >= 64)) {
            if (e->pct_measured < 0) continue;
            snprintf(what, sizeof what, "G3/G4 %s >= 70%% of D2D (%.1f%%)", e->name, e->pct_measured);
            goal(log, what, e->pct_measured >= 70.0, &missed);
        } else if (strstr(e->name, "swap/batched-") && sscanf(strrchr(e->name, '/'), "/bs%d", &bs) == 1 &&
                   bs >= 8 && e->pct_measured >= 0) {
            snprintf(what, sizeof what, "G5b %s >= 80%% pinned (%.1f%%)", e->name, e->pct_measured);
            goal(log, what, e->pct_measured >= 80.0, &missed);
        }
    }
    return missed;
}

pb_status pb_kbench_write_csv(const char *path, const pb_kb_set *r) {
    size_t cap = 128 + (size_t)r->n * 200, n = 0;
    char *buf = pb_xmalloc(cap);
    n += (size_t)snprintf(buf + n, cap - n, "device,name,kind,value,bytes,gbps,pct_peak,pct_measured\n");
    for (int i = 0; i < r->n; i++) {
        const pb_kb_result *e = &r->e[i];
        n += (size_t)snprintf(buf + n, cap - n, "\"%s\",%s,%s,%.6g,%.6g,%.6g,%.4g,%.4g\n", r->device, e->name,
                              e->kind == PB_KB_US ? "us" : "ratio", e->value, e->bytes, e->gbps,
                              e->pct_peak, e->pct_measured);
    }
    pb_status st = pb_write_file_atomic(path, buf, n);
    free(buf);
    return st;
}

/* ---- calibration CSVs ---- */

static void calib_prefix(pb_sbuf *b, const pb_kb_set *r, const pb_kbench_info *info, const char *commit) {
    pb_sbuf_printf(b, "\"%s\",%s,%s,%s,%s", r->device, info->driver, info->cuda, commit, info->timer);
}

pb_status pb_kbench_write_calib_csv(const char *dir, const pb_kb_set *r, const pb_kbench_info *info,
                                    const char *commit, int *n_rows) {
    pb_sbuf a = {0}, g = {0};
    int na = 0, ng = 0;
    pb_sbuf_printf(&a, "device,driver,cuda,commit,timer,kernel,algo,block_size,batch,context,num_heads,"
                       "head_size,dtype,median_us,bytes,gbps\n");
    pb_sbuf_printf(&g, "device,driver,cuda,commit,timer,dtype,m,n,k,median_us,tflops,gbps\n");
    for (int i = 0; i < r->n; i++) {
        const pb_kb_result *e = &r->e[i];
        const char *n = strncmp(e->name, "cpu/", 4) ? e->name : e->name + 4;
        char kern[16], dt[16];
        int h, d, bs, b, ctx, v, m, nn, k;
        if (sscanf(n, PB_KB_CALIB_ATTN_SCAN, kern, &h, &d, dt, &bs, &b, &ctx, &v) == 8) {
            calib_prefix(&a, r, info, commit);
            pb_sbuf_printf(&a, ",%s,v%d,%d,%d,%d,%d,%d,%s,%.4f,%.6g,%.4f\n", kern, v, bs, b, ctx, h, d, dt,
                           e->value, e->bytes, e->gbps);
            na++;
        } else if (sscanf(n, PB_KB_CALIB_GEMM_SCAN, dt, &m, &nn, &k) == 4) {
            calib_prefix(&g, r, info, commit);
            double tflops = e->value > 0 ? 2.0 * m * (double)nn * k / (e->value * 1e-6) / 1e12 : 0;
            pb_sbuf_printf(&g, ",%s,%d,%d,%d,%.4f,%.4f,%.4f\n", dt, m, nn, k, e->value, tflops, e->gbps);
            ng++;
        }
    }
    pb_status st = PB_OK;
    char path[4096];
    if (na && st == PB_OK) {
        snprintf(path, sizeof path, "%s/calib_attention.csv", dir);
        st = pb_write_file_atomic(path, a.s, a.len);
    }
    if (ng && st == PB_OK) {
        snprintf(path, sizeof path, "%s/calib_gemm.csv", dir);
        st = pb_write_file_atomic(path, g.s, g.len);
    }
    free(a.s);
    free(g.s);
    if (n_rows) *n_rows = na + ng;
    return st;
}
