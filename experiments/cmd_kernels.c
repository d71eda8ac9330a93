/* cmd_kernels.c -- `pagedbench kernels`: kernel checks, benchmark grids and the
 * latency-regression gate (kbench.h, kbaseline.h).
 *
 *   pagedbench kernels [--grid fig18a|long|blocksize|cache|swap]... [--check FILE]
 *                      [--update FILE] [--csv FILE] [--cpu] [--hw NAME] [--hbm-gbps X]
 *                      [--reps N] [--warmup N] [--tolerance X] [--ratio-tolerance X]
 *                      [--kv-cache-dtype auto|fp8_e4m3|fp8_e5m2]
 *   pagedbench kernels --grid calib-attn,calib-gemm --calib-dir DIR   (cost-model sweeps)
 *   pagedbench kernels --probe     (GPU name and hardware spec, or SKIP: no GPU (why))
 *
 * With a CUDA device the GPU kernels run (after matching their C references);
 * without one (or with --cpu) the C references run through the same grids and the
 * same check, against bench/baselines/cpu-reference.json.  The last lines of stdout are
 * named checks (docs/outputs.md): `Check complete|correct|timer|no_regression: PASS|FAIL|n/a
 * (why)`.  A run that stops or skips failed points still writes what it measured
 * (--csv, --calib-dir; a baseline only from a complete run).
 * Exit: 0 ok, 1 regression or runtime failure, 2 usage / bad baseline file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "kbench.h"
#include "kv_dtype.h"   /* pb_kv_cache_dtype_parse */
#include "point_key.h"   /* pb_source_describe */
#include "spec.h"

enum { O_GRID = 256, O_CHECK, O_UPDATE, O_CSV, O_CPU, O_PROBE, O_HW, O_HBM, O_REPS, O_WARMUP, O_TOL, O_RTOL,
       O_CALIB_DIR, O_KV_DTYPE };
static const pb_cli_opt OPTS[] = {
    {"grid", O_GRID, "G", "fig18a, long, blocksize, cache, swap (repeatable or comma list; default:\n"
                          "these five); calib-attn, calib-gemm: the cost model's calibration sweeps\n"
                          "(paged attention at block 1..256 beside the contiguous kernel; cuBLAS\n"
                          "GEMMs of OPT-13B at M = 1..512), only when named, never in a baseline"},
    {"calib-dir", O_CALIB_DIR, "DIR", "write the calibration sweeps' rows to DIR/calib_attention.csv and\n"
                                      "DIR/calib_gemm.csv (with device, driver, CUDA and commit columns)"},
    {"kv-cache-dtype", O_KV_DTYPE, "D", "auto (default), fp8_e4m3 or fp8_e5m2: the decode and cache grids\n"
                                        "over fp8 caches (names get the format after the grid:\n"
                                        "long-fp8_e4m3/...; the calibration sweeps stay fp16)"},
    {"check", O_CHECK, "FILE", "compare with a baseline: 'Check no_regression' fails (exit 1) when a\n"
                               "latency grew by more than its tolerance or a paged/contiguous ratio grew\n"
                               "by more than its ratio tolerance"},
    {"update", O_UPDATE, "FILE", "write the measured results as a baseline"},
    {"csv", O_CSV, "FILE", "write every result (µs, GB/s, % of peak) as CSV, also the results of a\n"
                           "run that failed part-way"},
    {"cpu", O_CPU, NULL, "run the C references even when a GPU is present"},
    {"probe", O_PROBE, NULL, "print the GPU's name and hardware spec (exit 0), or\n"
                             "'SKIP: no GPU (<reason>)' (exit 77); run nothing"},
    {"hw", O_HW, "NAME", "hardware spec (experiments/hardware/NAME.yaml) for % of peak;\n"
                         "default: guessed from the device name"},
    {"hbm-gbps", O_HBM, "X", "HBM bandwidth in GB/s for % of peak (overrides --hw)"},
    {"reps", O_REPS, "N", "timed runs per config, median on GPU (>= 20), best on CPU\n"
                          "(default 20 GPU, 15 CPU)"},
    {"warmup", O_WARMUP, "N", "untimed runs before the timed ones (default 3)"},
    {"tolerance", O_TOL, "X", "latency growth (a fraction) that the baseline written by --update\n"
                              "allows (default 0.10 on GPU, 1.0 on CPU)"},
    {"ratio-tolerance", O_RTOL, "X", "paged/contiguous ratio growth (a fraction) that the baseline written\n"
                                     "by --update allows (default 0.05 on GPU, 0.25 on CPU)"},
    {NULL, 0, NULL, NULL}};
static const pb_cli CLI = {
    "kernels", "[--grid G]... [--check FILE] [--update FILE] [--csv FILE] [--cpu] [options]\n--probe",
    "Checks the GPU kernels against their C references and times them over benchmark grids\n"
    "(CUPTI); without a GPU (or with --cpu) the C references run through the same grids and\n"
    "the same checks, against bench/baselines/cpu-reference.json.",
    OPTS,
    "Checks (stdout, at the end; docs/outputs.md):\n"
    "  Check complete        every grid ran to the end\n"
    "  Check correct         every GPU kernel matched its C reference (n/a on the C references)\n"
    "  Check timer           CUPTI dropped no timing record, or CUDA events timed the run\n"
    "                        (CUPTI unavailable; n/a on the C references)\n"
    "  Check no_regression   no result regressed against the --check baseline (n/a without)\n"
    "A failed timer check alone leaves the exit status at 0.",
    "a run failure (a kernel mismatch included) or a regression", "--probe without a usable GPU"};

static int contains_ci(const char *s, const char *w) {
    for (size_t n = strlen(w); *s; s++)
        if (!strncasecmp(s, w, n)) return 1;
    return 0;
}

const char *pb_kernels_hw_for_device(const char *dev) {
    const int pcie = contains_ci(dev, "pcie"), nvl = strstr(dev, "NVL") != NULL;
    if (strstr(dev, "GH200") || strstr(dev, "GH100")) return NULL;   /* Grace Hopper: C2C host link */
    if (strstr(dev, "H200")) return pcie || nvl ? NULL : "h200";
    if (strstr(dev, "H100")) return pcie || nvl ? NULL : "h100-sxm";
    if (strstr(dev, "A100") && strstr(dev, "80GB")) return pcie ? "a100-80gb-pcie" : "a100-80gb";
    if (strstr(dev, "A100") && strstr(dev, "40GB")) return pcie ? NULL : "a100-40gb";
    return NULL;
}

int pb_cmd_kernels(int argc, char **argv) {
    const char *check = NULL, *update = NULL, *hw_name = NULL, *csv = NULL, *calib_dir = NULL;
    int force_cpu = 0, reps = -1, warmup = 3;
    double hbm_gbps = 0, tol = -1, rtol = -1;
    unsigned grids = 0;
    bool probe = false;
    pb_kv_cache_dtype kvc = PB_KV_CACHE_AUTO;
    pb_cli_parser p;
    pb_cli_begin(&p, &CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        int64_t i;
        switch (c) {
        case O_CPU: force_cpu = 1; break;
        case O_PROBE: probe = true; break;
        case O_GRID: {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", p.arg);
            for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                unsigned b = pb_kbench_grid_bit(tok);
                if (!b) {
                    pb_cli_bad(&p, "unknown grid '%s' (fig18a, long, blocksize, cache, swap, calib-attn, calib-gemm)", tok);
                    break;
                }
                grids |= b;
            }
            break;
        }
        case O_CHECK: check = p.arg; break;
        case O_UPDATE: update = p.arg; break;
        case O_CSV: csv = p.arg; break;
        case O_CALIB_DIR: calib_dir = p.arg; break;
        case O_HW: hw_name = p.arg; break;
        case O_KV_DTYPE:
            if (pb_kv_cache_dtype_parse(p.arg, &kvc))
                pb_cli_bad(&p, "--kv-cache-dtype: expected %s, got '%s'", PB_KV_CACHE_DTYPE_CHOICES, p.arg);
            break;
        case O_HBM: pb_cli_num(&p, 1e-9, INFINITY, &hbm_gbps); break;
        case O_REPS: if (pb_cli_int(&p, 0, 100000, &i)) reps = (int)i; break;
        case O_WARMUP: if (pb_cli_int(&p, 0, 100000, &i)) warmup = (int)i; break;
        case O_TOL: pb_cli_num(&p, 0, INFINITY, &tol); break;
        case O_RTOL: pb_cli_num(&p, 0, INFINITY, &rtol); break;
        }
    }
    if (p.rc >= 0) return p.rc;
    if (p.optind < argc) return pb_cli_fail(&CLI, "unexpected argument '%s'", argv[p.optind]);
    if (probe) {   /* is a GPU usable? (tools/gpu/run_gpu.sh asks) */
        char why[512], dev[128];
        if (!pb_kbench_gpu_available(why, sizeof why)) {
            printf("SKIP: no GPU (%s)\n", why);
            return PB_EXIT_SKIP;
        }
        pb_kbench_device_name(dev, sizeof dev);
        const char *hw = pb_kernels_hw_for_device(dev);
        printf("gpu: %s\nhw: %s\n", dev, hw ? hw : "-");
        return PB_EXIT_OK;
    }
    if (!grids) grids = PB_KB_GRID_ALL;
    const unsigned calib = grids & (PB_KB_GRID_CALIB_ATTN | PB_KB_GRID_CALIB_GEMM);
    if (calib && (check || update)) {
        fprintf(stderr, "kernels: the calibration sweeps (calib-attn, calib-gemm) are not baselined: "
                        "run them without --check / --update\n");
        return PB_EXIT_USAGE;
    }
    if (calib_dir && !calib) {
        fprintf(stderr, "kernels: --calib-dir needs --grid calib-attn and/or calib-gemm\n");
        return PB_EXIT_USAGE;
    }

    char why[256] = "";
    int gpu = !force_cpu && pb_kbench_gpu_available(why, sizeof why);
    if (!gpu && !force_cpu) fprintf(stderr, "SKIP: no GPU (%s): running the C references instead\n", why);
    if (reps < 0) reps = gpu ? 20 : 15;
    if (reps < 1 || (gpu && reps < 20)) return pb_cli_fail(&CLI, "--reps must be >= %d %s", gpu ? 20 : 1, gpu ? "on a GPU" : "");
    const char *mode = gpu ? "gpu" : "cpu-reference";

    pb_kb_set base;
    pb_kb_set_init(&base);
    if (check) {
        char err[512];
        pb_status st = pb_kb_load(check, &base, err, sizeof err);
        if (st != PB_OK) { fprintf(stderr, "%s\n", err); return PB_EXIT_USAGE; }
        if (strcmp(base.mode, mode)) {
            fprintf(stderr, "%s:1:1: baseline mode \"%s\" but this run is \"%s\"\n"
                            "---> HINT: use bench/baselines/cpu-reference.json without a GPU (or --cpu)\n",
                    check, base.mode, mode);
            pb_kb_set_free(&base);
            return PB_EXIT_USAGE;
        }
    }

    pb_kbench_opts o;
    memset(&o, 0, sizeof o);
    o.grids = grids;
    o.reps = reps;
    o.warmup = warmup;
    o.kv_cache_dtype = kvc;
    char dev[128];
    if (gpu) pb_kbench_device_name(dev, sizeof dev);
    else snprintf(dev, sizeof dev, "cpu-reference");
    if (gpu) {
        if (!hw_name) hw_name = pb_kernels_hw_for_device(dev);
        if (hw_name) {
            pb_hw hw;
            pb_cfg_err err;
            memset(&err, 0, sizeof err);
            if (pb_hw_load(pb_spec_dir(), hw_name, &hw, &err) == PB_OK) {
                o.hbm_bw = hw.hbm_bw;
                o.pcie_h2d_bw = hw.pcie_h2d_bw;
                o.pcie_d2h_bw = hw.pcie_d2h_bw;
            } else {
                fprintf(stderr, "kernels: hardware spec '%s' not loaded: %s", hw_name, err.msg);
            }
        }
        if (hbm_gbps > 0) o.hbm_bw = hbm_gbps * 1e9;
    }
    if (check && gpu && strcmp(base.device, dev))
        fprintf(stderr, "kernels: warning: baseline device \"%s\", this device \"%s\"\n", base.device, dev);
    if (gpu) pb_kbench_print_context(stderr);
    fprintf(stderr, "device: %s | mode %s | git %s | reps %d (%s) warm-up %d | hw %s | HBM %.0f GB/s\n",
            dev, mode, pb_git_rev(), reps, gpu ? "median, device timer" : "best, thread CPU time", warmup,
            hw_name ? hw_name : "-", o.hbm_bw / 1e9);

    pb_kb_set cur;
    pb_kb_set_init(&cur);
    snprintf(cur.device, sizeof cur.device, "%s", dev);
    snprintf(cur.mode, sizeof cur.mode, "%s", mode);
    cur.tolerance = tol >= 0 ? tol : gpu ? 0.10 : 1.0;
    cur.ratio_tolerance = rtol >= 0 ? rtol : gpu ? 0.05 : 0.25;
    int valid = 0;
    pb_status st = gpu ? pb_kbench_run_gpu(&o, &cur, stdout, &valid) : pb_kbench_run_cpu(&o, &cur, stdout, &valid);
    int rc = PB_EXIT_OK;
    if (st != PB_OK) {
        fprintf(stderr, "kernels: benchmark failed: %s\n", pb_status_str(st));
        rc = PB_EXIT_RUNTIME;
    }
    /* what was measured is written even when the run failed part-way */
    if (csv && cur.n > 0) {
        if (pb_kbench_write_csv(csv, &cur) != PB_OK) {
            fprintf(stderr, "%s: cannot write CSV\n", csv);
            rc = PB_EXIT_RUNTIME;
        } else if (st != PB_OK) {
            fprintf(stderr, "kernels: %s holds the %d results of an incomplete run\n", csv, cur.n);
        }
    }
    pb_kbench_info info;
    pb_kbench_get_info(&info);
    if (!gpu) snprintf(info.timer, sizeof info.timer, "cpu");
    if (calib_dir) {
        /* the build's revision: $PB_GIT_REV when the build was given one (tools/gpu/deps.sh,
           from .gpu/rev), else git describe --dirty at build time (tools/source_rev.cmake) */
        const char *commit = pb_source_describe();
        int rows = 0;
        if (pb_kbench_write_calib_csv(calib_dir, &cur, &info, commit, &rows) != PB_OK) {
            fprintf(stderr, "%s: cannot write the calibration CSVs\n", calib_dir);
            rc = PB_EXIT_RUNTIME;
        } else {
            fprintf(stderr, "kernels: wrote %d calibration rows to %s/calib_*.csv\n", rows, calib_dir);
        }
    }
    if (rc == PB_EXIT_OK && update) {
        if (pb_kb_save(update, &cur) != PB_OK) {
            fprintf(stderr, "%s: cannot write baseline\n", update);
            rc = PB_EXIT_RUNTIME;
        } else {
            fprintf(stderr, "kernels: wrote %d entries to %s\n", cur.n, update);
        }
    }
    /* The regression comparison runs only on a complete run. */
    int n_cmp = 0, n_bad = 0, compared = 0;
    if (st == PB_OK && check) {
        n_bad = pb_kb_compare(&base, &cur, stdout, &n_cmp);
        compared = 1;
        if (n_cmp == 0) fprintf(stderr, "%s: no baseline entry matches this run's results\n", check);
        if (n_cmp == 0 || n_bad) rc = PB_EXIT_RUNTIME;
    }

    /* Named checks (docs/outputs.md), last on stdout. */
    printf("Check complete: %s (%d results", st == PB_OK ? "PASS" : "FAIL", cur.n);
    if (st != PB_OK) printf("; the run stopped: %s", pb_status_str(st));
    printf(")\n");
    if (!gpu)
        printf("Check correct: n/a (the C references ran; no GPU kernel to compare)\n");
    else if (st == PB_OK)
        printf("Check correct: PASS (every GPU kernel matched its C reference)\n");
    else
        printf("Check correct: FAIL (the run stopped before the checks ended or a kernel did not match its "
               "C reference: see 'Kernel checks' above)\n");
    if (!gpu)
        printf("Check timer: n/a (thread CPU time, no CUPTI)\n");
    else if (strstr(info.timer, "events"))
        printf("Check timer: %s (CUDA events: CUPTI unavailable: %s)\n", st == PB_OK ? "PASS" : "FAIL",
               info.timer_why);
    else
        printf("Check timer: %s (CUPTI %s)\n", st == PB_OK && valid ? "PASS" : "FAIL",
               st != PB_OK ? "timing did not finish" : valid ? "dropped no record" : "dropped records: timings unreliable");
    if (!check)
        printf("Check no_regression: n/a (no --check baseline)\n");
    else if (!compared)
        printf("Check no_regression: FAIL (not compared: the run did not complete)\n");
    else if (n_cmp == 0)
        printf("Check no_regression: FAIL (no entry of %s matches this run's results)\n", check);
    else
        printf("Check no_regression: %s (%d of %d regressed against %s; tolerance %.0f%%, ratios %.0f%%)\n",
               n_bad ? "FAIL" : "PASS", n_bad, n_cmp, check, 100 * base.tolerance, 100 * base.ratio_tolerance);
    pb_kb_set_free(&cur);
    pb_kb_set_free(&base);
    return rc;
}
