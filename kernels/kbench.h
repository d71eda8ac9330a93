/* kbench.h -- the kernel benchmark grids behind `pagedbench kernels`.
 *
 * GPU (PB_HAVE_CUDA and a device): every kernel class a grid uses is first checked
 * against its C reference on a small shape ("All results match. Starting
 * benchmarks."), then each config is timed with CUPTI (gpu_timer.h) after warm-up,
 * rotating over input sets that together exceed 3x the L2 (cold-cache numbers),
 * median of opts->reps >= 20 runs.  Bandwidth = bytes the call must move / median;
 * % of the hardware YAML's HBM (attention, cache ops) or PCIe (swap) bandwidth, and
 * % of a bandwidth measured in the same run (D2D memcpy; pinned memcpy).
 *   fig18a     batch 8, 32 x context 64, 128, 256; OPT-13B heads (40 x 128), fp16,
 *              block 16: paged vs contiguous (+ ratio)
 *   long       64K tokens of KV per call: 64 x 1K, 16 x 4K, 8 x 8K, 4 x 16K, 2 x 32K,
 *              1 x 64K: paged vs contiguous (+ ratio), % of HBM
 *   blocksize  block 1..256 at 32 x 1K: paged latency and paged/contiguous ratio
 *   cache      reshape_and_cache (256, 2048 tokens), copy_blocks (40 layers x 64,
 *              256 pairs), D2D memcpy reference
 *   swap       OPT-13B, 256 tokens x 80 tensors, block 1..256, out (D2H) and in
 *              (H2D): per-block cudaMemcpyAsync, batched on scattered blocks,
 *              batched on contiguous runs; pinned memcpy reference
 * Calibration sweeps for the cost model (only when asked for by name; not in the
 * baseline, pb_kbench_write_calib_csv writes them with device, driver and commit):
 *   calib-attn paged decode at block 1..256 and the contiguous kernel, batch 8..256 x
 *              context 32..2048 (powers of two), OPT-13B heads (40 x 128), fp16;
 *              one random KV pool filled once and rotated (cold L2), V1/V2 by AUTO
 *   calib-gemm cuBLAS fp16 GEMM at the layer shapes (K x N) of OPT-13B (5120 x 15360 QKV,
 *              5120 x 5120 out, 5120 x 20480 FC1, 20480 x 5120 FC2), Llama-2-7B,
 *              Llama-3-8B and Llama-2/3-70B at TP 4 and 8 (kbench_gpu.c calib_gemm_kn),
 *              M = 1..16, 24..512 in steps of 8, then 768 .. 4096 (x1.5 / x4/3), weights
 *              rotated (cold L2)
 * A point that fails is logged ("FAILED <name>: ...") and the run goes on with the
 * next one while the device still answers; the run then returns the first error.
 * --kv-cache-dtype fp8_e4m3 | fp8_e5m2 (opts.kv_cache_dtype): the decode grids and the
 * cache grid run over fp8 caches (kv_scale 1; fp16 q/out and K/V in), checked first
 * against the C reference; their bytes count one byte per cached element, and
 * their names carry the format after the grid ("long-fp8_e4m3/paged/...").  The
 * swap grid moves bytes either way (an fp8 block of b tokens is an fp16 block of
 * b/2): it is the same in both modes; so are the calibration sweeps (fp16 caches).
 * CPU (no device, or --cpu): the C references on small shapes (fp32, 4 heads x 64;
 * calib-gemm: the four shapes / 40, M up to 65) through the same names prefixed
 * "cpu/", timed with the thread CPU clock, paged and
 * contiguous interleaved run by run, best of opts->reps runs (a shared machine only
 * ever adds time); the paged/contiguous ratios are the machine-independent part
 * of the check. */
#ifndef PB_KBENCH_H
#define PB_KBENCH_H

#include <stdio.h>

#include "attention.h"
#include "kbaseline.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    PB_KB_GRID_FIG18A = 1, PB_KB_GRID_LONG = 2, PB_KB_GRID_BLOCKSIZE = 4,
    PB_KB_GRID_CACHE = 8, PB_KB_GRID_SWAP = 16, PB_KB_GRID_ALL = 31,   /* the default */
    PB_KB_GRID_CALIB_ATTN = 32, PB_KB_GRID_CALIB_GEMM = 64
};

/* Result names of the calibration sweeps (after the "cpu/" prefix on the CPU):
 * attention: kernel ("paged", "contig"), heads, head size, dtype, block size (0 for
 * contig), batch, context, algorithm (1 V1, 2 V2); GEMM: dtype, M, N, K. */
#define PB_KB_CALIB_ATTN_NAME "calib-attn/%s/h%d-d%d-%s/bs%d/b%d-ctx%d/v%d"          /* printf */
#define PB_KB_CALIB_ATTN_SCAN "calib-attn/%15[a-z]/h%d-d%d-%15[a-z0-9]/bs%d/b%d-ctx%d/v%d"  /* sscanf */
#define PB_KB_CALIB_GEMM_NAME "calib-gemm/%s/m%d-n%d-k%d"
#define PB_KB_CALIB_GEMM_SCAN "calib-gemm/%15[a-z0-9]/m%d-n%d-k%d"

typedef struct {
    unsigned grids;          /* PB_KB_GRID_* mask                                 */
    int reps;                /* timed runs per config (median)                    */
    int warmup;              /* untimed runs first                                */
    double hbm_bw;           /* bytes/s for % of peak (0: not reported)           */
    double pcie_h2d_bw, pcie_d2h_bw;  /* bytes/s (0: not reported)                */
    double l2_bytes;         /* for L2 rotation (0: ask the device)               */
    pb_kv_cache_dtype kv_cache_dtype;   /* auto, or fp8 caches (kv_scale 1)         */
} pb_kbench_opts;

/* A result's name with the KV-cache format after its grid component when it is not
 * auto: "long/paged/b1-.." -> "long-fp8_e4m3/paged/b1-..", "cpu/cache/.." ->
 * "cpu/cache-fp8_e4m3/..".  Swap and the calibration sweeps (fp16 caches always) stay
 * untagged. */
void pb_kbench_tag_name(const pb_kbench_opts *o, const char *name, char *out, size_t n);

/* grid name ("fig18a", "long", "blocksize", "cache", "swap") -> mask bit, 0 unknown */
unsigned pb_kbench_grid_bit(const char *name);

/* 1 if a CUDA device is usable; else 0 with the reason in plain words in why
 * (gpu_probe.h: "no CUDA driver on this machine: ...", "this build has no CUDA: ..."). */
int pb_kbench_gpu_available(char *why, size_t why_len);

/* Run the grids; results are appended to out, one aligned line each to log.
 * *valid = 0 when CUPTI dropped records or a correctness check failed. */
pb_status pb_kbench_run_gpu(const pb_kbench_opts *o, pb_kb_set *out, FILE *log, int *valid);
pb_status pb_kbench_run_cpu(const pb_kbench_opts *o, pb_kb_set *out, FILE *log, int *valid);

/* Device name / context line for stderr and baseline files ("cpu-reference" on CPU). */
void pb_kbench_device_name(char *buf, size_t n);

/* What a results file names besides the device. */
typedef struct {
    char driver[64];      /* kernel driver version (/proc/driver/nvidia/version), or "unknown" */
    char cuda[32];        /* CUDA driver API / runtime versions, "13.0/13.0"; "-" without CUDA */
    char timer[16];       /* timing of the last pb_kbench_run_gpu: "cupti", "events",
                             "cupti+events" (CUPTI failed part-way), or "-"                   */
    char timer_why[256];  /* why events rather than CUPTI ("" otherwise)                        */
} pb_kbench_info;
void pb_kbench_get_info(pb_kbench_info *out);
/* GPU context for stderr: driver and runtime versions, SMs, SM clock, L2. */
void pb_kbench_print_context(FILE *f);

/* Goal verdicts (PERF-ANCHORS §7) from GPU results, printed to log:
 * G1a paged decode >= 80% of HBM at every long-grid point (64K tokens per call); G1d paged/contiguous
 * <= 1.05 at context >= 1K (block 16; block 8: 1.10) and <= 1.10 at 128..1K; G3/G4 reshape_and_cache and
 * copy_blocks >= 70% of measured D2D; G5b batched swap >= 80% of measured pinned
 * bandwidth at block >= 8.  Returns the number of goals missed (report only). */
int pb_kbench_goals(const pb_kb_set *r, FILE *log);

/* Write all results as CSV (name,kind,value,bytes,gbps,pct_peak,pct_measured). */
pb_status pb_kbench_write_csv(const char *path, const pb_kb_set *r);

/* The calibration sweeps' results (names PB_KB_CALIB_*_NAME, with or without "cpu/"),
 * as the CSVs experiments/calibrate/gpu_sweep.py reads:
 *   <dir>/calib_attention.csv  device,driver,cuda,commit,timer,kernel,algo,block_size,
 *                              batch,context,num_heads,head_size,dtype,median_us,bytes,gbps
 *   <dir>/calib_gemm.csv       device,driver,cuda,commit,timer,dtype,m,n,k,median_us,
 *                              tflops,gbps
 * A file is written only when the set holds rows for it; *n_rows = rows written.
 * Other names are ignored.  A sweep with no row writes nothing (no empty file). */
pb_status pb_kbench_write_calib_csv(const char *dir, const pb_kb_set *r, const pb_kbench_info *info,
                                    const char *commit, int *n_rows);

#ifdef PB_HAVE_CUDA
/* GPU decode kernel vs its C reference on one seeded shape (pb_attn_case with NaN
 * poisoning).  layout: 1 paged; 0 contiguous; 2 contiguous with kv_offsets not
 * multiples of 8; 3 also num_slots not a multiple of 8.  Returns failures (0 ok). */
int pb_kbench_gpu_check_decode(uint64_t seed, int32_t num_seqs, const int32_t *ctx,
                               int32_t num_heads, int32_t num_kv_heads, int32_t head_size,
                               int32_t block_size, pb_kv_dtype dtype, pb_attn_algo algo,
                               int layout);
/* The same over caches of format kv_cache_dtype (fp8: kv_scale) with dtype q/out. */
int pb_kbench_gpu_check_decode_kv(uint64_t seed, int32_t num_seqs, const int32_t *ctx,
                                  int32_t num_heads, int32_t num_kv_heads, int32_t head_size,
                                  int32_t block_size, pb_kv_dtype dtype, pb_kv_cache_dtype kv_cache_dtype,
                                  float kv_scale, pb_attn_algo algo, int layout);
#endif

/* helpers shared by the two runners */
double pb_kbench_median(double *v, int n);   /* sorts v */
void pb_kbench_print(FILE *log, const pb_kb_result *r);

#ifdef __cplusplus
}
#endif
#endif /* PB_KBENCH_H */
