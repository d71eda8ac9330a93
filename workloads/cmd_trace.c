/* cmd_trace.c -- `pagedbench trace`: write a request trace (CSV) for a dataset and an
 * arrival process; check a trace file; write the data of the paper's Fig. 11.
 *
 *   pagedbench trace --dataset sharegpt --rate 2 --duration 3600 --seed 0 > trace.csv
 *   pagedbench trace --check trace.csv
 *   pagedbench trace --fig11 results/fig11.csv
 * Exit status: 0 ok, 1 runtime failure (unreadable file), 2 usage, config or data error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "dataset.h"
#include "pb.h"
#include "trace_io.h"
#include "workload.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: pagedbench trace --dataset NAME [--rate R] [--duration S] [--num N] [--seed N] [options]\n"
        "       pagedbench trace --config EXP.yaml [options]   (its `workload:` section; options override)\n"
        "       pagedbench trace --check TRACE.csv              (validate a trace file, print a summary)\n"
        "       pagedbench trace --fig11 OUT.csv                (Fig. 11: length densities of ShareGPT, Alpaca)\n"
        "\n"
        "Writes the trace as CSV to stdout (or -o FILE), header\n"
        "  " PB_TRACE_CSV_HEADER "\n"
        "and a one-line summary to stderr.\n"
        "\n"
        "  --dataset NAME     " PB_DATASET_NAMES "\n"
        "  --rate R           requests per second (poisson, exponential; replay: rescale to R)\n"
        "  --duration S       seconds of arrivals (default 3600 unless --num is given)\n"
        "  --num N            number of requests (with --duration: whichever comes first)\n"
        "  --seed N           seed (default 0); same options + seed = byte-identical output\n"
        "  --arrivals KIND    " PB_ARRIVAL_NAMES " (default poisson, 10 ms quanta)\n"
        "  --quantum S        poisson time quantum in seconds (default 0.01)\n"
        "  --filter F         " PB_FILTER_NAMES " (default paper for sharegpt/alpaca, else none)\n"
        "  --file PATH|auto   exact lengths CSV (auto: ../shared/data when present);\n"
        "                     default: the built-in distribution derived from it\n"
        "  --replay-file PATH timestamps for --arrivals replay (Azure LLM trace CSV; default auto)\n"
        "  --n K              parallel samples per request\n"
        "  --beam K           beam search with width K (n = K)\n"
        "  --prefix P         translation: 1shot | 5shot; other datasets: a shared prefix of P tokens\n"
        "  -o, --output FILE  write the CSV to FILE atomically instead of stdout\n");
}

static int bad_opt(const char *opt, const char *what, const char *val) {
    fprintf(stderr, "pagedbench trace: %s: %s, got '%s'\n", opt, what, val ? val : "(nothing)");
    return PB_EXIT_USAGE;
}

static int parse_int_opt(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out) {
    if (!v || !pb_parse_int(v, out) || *out < lo || *out > hi) {
        char what[96];
        snprintf(what, sizeof what, "expected an integer in [%lld, %lld]", (long long)lo, (long long)hi);
        return bad_opt(opt, what, v);
    }
    return 0;
}
static int parse_num_opt(const char *opt, const char *v, double lo, double *out) {
    if (!v || !pb_parse_num(v, out) || *out < lo) {
        char what[64];
        snprintf(what, sizeof what, "expected a number >= %g", lo);
        return bad_opt(opt, what, v);
    }
    return 0;
}
static int copy_opt(const char *opt, const char *v, char *dst, size_t n) {
    if (!v) return bad_opt(opt, "needs a value", v);
    if (strlen(v) >= n) return bad_opt(opt, "too long", v);
    snprintf(dst, n, "%s", v);
    return 0;
}

/* ---- Fig. 11 ---- */
#define FIG11_WIDTH 4
#define FIG11_BINS 512      /* 0 .. 2048 tokens */

static int write_fig11(const char *path) {
    static const char *const SETS[] = {"sharegpt", "alpaca"};
    size_t cap = 1 << 16, used = 0;
    char *buf = pb_xmalloc(cap);
    used += (size_t)snprintf(buf, cap, "dataset,series,bin_lo,bin_hi,density,mean,source\n");
    pb_length_filter f;
    pb_filter_by_name("fig11", &f);
    for (size_t s = 0; s < PB_ARRAY_LEN(SETS); s++) {
        pb_workload_cfg c;
        pb_workload_defaults(&c);
        snprintf(c.dataset, sizeof c.dataset, "%s", SETS[s]);
        snprintf(c.file, sizeof c.file, "auto");
        char p[PB_WL_PATH], err[512];
        const char *file = pb_workload_resolve_file(&c, p, sizeof p);
        pb_dataset *d = NULL;
        pb_status st = file ? pb_dataset_load_csv(file, "input_len", "output_len", &d, err, sizeof err)
                            : pb_dataset_builtin(SETS[s], &d);
        if (st) {
            fprintf(stderr, "pagedbench trace: %s\n", file ? err : "no built-in table");
            free(buf);
            return st == PB_ERR_IO ? PB_EXIT_RUNTIME : PB_EXIT_USAGE;
        }
        double mi, mo, kept, hin[FIG11_BINS], hout[FIG11_BINS];
        pb_dataset_means(d, &f, &mi, &mo, &kept);
        pb_dataset_hist(d, &f, FIG11_WIDTH, FIG11_BINS, hin, hout);
        const char *src = file ? "exact" : "built-in";
        fprintf(stderr, "fig11: %-8s input mean %.2f, output mean %.2f (%s, filter input+output <= 2048, %.0f rows)\n",
                SETS[s], mi, mo, src, kept);
        for (int series = 0; series < 2; series++) {
            const double *h = series ? hout : hin;
            for (int k = 0; k < FIG11_BINS; k++) {
                if (cap - used < 256) { cap *= 2; buf = pb_xrealloc(buf, cap); }
                used += (size_t)snprintf(buf + used, cap - used, "%s,%s,%d,%d,%.8g,%.4f,%s\n", SETS[s],
                                         series ? "output" : "input", k * FIG11_WIDTH, (k + 1) * FIG11_WIDTH,
                                         h[k] / FIG11_WIDTH, series ? mo : mi, src);
            }
        }
        pb_dataset_destroy(d);
    }
    pb_status st = pb_write_file_atomic(path, buf, used);
    free(buf);
    if (st) {
        fprintf(stderr, "pagedbench trace: %s: cannot write\n", path);
        return PB_EXIT_RUNTIME;
    }
    fprintf(stderr, "fig11: wrote %s\n", path);
    return PB_EXIT_OK;
}

static void print_summary(const char *what, const pb_trace *t) {
    pb_trace_stats s = pb_trace_summary(t);
    fprintf(stderr, "trace: %s: %lld requests, arrivals over %.2f s (%.3f req/s), mean prompt %.2f, "
            "mean output %.2f, max prompt %d, max output %d\n", what, (long long)s.n, s.duration_s, s.rate,
            s.mean_prompt, s.mean_output, s.max_prompt, s.max_output);
}

int pb_cmd_trace(int argc, char **argv) {
    if (pb_wants_help(argc, argv)) { usage(stdout); return PB_EXIT_OK; }
    if (argc < 2) { usage(stderr); return PB_EXIT_USAGE; }
    pb_workload_cfg c;
    pb_workload_defaults(&c);
    const char *config = NULL, *check = NULL, *fig11 = NULL, *output = NULL;
    /* pass 1: --config, --check, --fig11 */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config")) config = i + 1 < argc ? argv[++i] : NULL;
        else if (!strcmp(argv[i], "--check")) check = i + 1 < argc ? argv[++i] : NULL;
        else if (!strcmp(argv[i], "--fig11")) fig11 = i + 1 < argc ? argv[++i] : NULL;
        else if (!strncmp(argv[i], "--", 2) || !strcmp(argv[i], "-o")) i++;
        else {
            fprintf(stderr, "pagedbench trace: unexpected argument '%s' (see --help)\n", argv[i]);
            return PB_EXIT_USAGE;
        }
    }
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "--config") && !config) || (!strcmp(argv[i], "--check") && !check) ||
            (!strcmp(argv[i], "--fig11") && !fig11))
            return bad_opt(argv[i], "needs a value", NULL);
    }
    if (fig11) return write_fig11(fig11);
    if (check) {
        pb_trace t = {0};
        char err[1024];
        pb_status st = pb_trace_read_csv(check, &t, err, sizeof err);
        if (st) {
            fprintf(stderr, "%s\n", err);
            return st == PB_ERR_IO ? PB_EXIT_RUNTIME : PB_EXIT_USAGE;
        }
        print_summary(check, &t);
        pb_trace_free(&t);
        return PB_EXIT_OK;
    }
    if (config) {
        pb_config *cf = NULL;
        pb_cfg_err e;
        pb_cfg_err_clear(&e);
        if (pb_config_load(config, &cf, &e) ||
            pb_workload_from_node(pb_node_get(pb_config_root(cf), "workload"), &c, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            pb_config_destroy(cf);
            return PB_EXIT_USAGE;
        }
        pb_config_destroy(cf);
    }
    /* pass 2: the options, over the config */
    uint64_t seed = 0;
    bool dur_set = false, num_set = false;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t x;
        double y;
        int rc = 0;
        i++;
        if (!strcmp(o, "--config") || !strcmp(o, "--check") || !strcmp(o, "--fig11")) continue;
        else if (!strcmp(o, "--dataset")) rc = copy_opt(o, v, c.dataset, sizeof c.dataset);
        else if (!strcmp(o, "--rate")) { if (!(rc = parse_num_opt(o, v, 0, &y))) c.arrivals.rate = y; }
        else if (!strcmp(o, "--duration")) { if (!(rc = parse_num_opt(o, v, 0, &y))) c.arrivals.duration_s = y; dur_set = true; }
        else if (!strcmp(o, "--num")) { if (!(rc = parse_int_opt(o, v, 0, 1000000000, &x))) c.arrivals.num = x; num_set = true; }
        else if (!strcmp(o, "--seed")) {
            if (!v || !pb_parse_int(v, &x) || x < 0) rc = bad_opt(o, "expected an integer >= 0", v);
            else seed = (uint64_t)x;
        }
        else if (!strcmp(o, "--arrivals")) {
            if (!v || pb_arrival_kind_by_name(v, &c.arrivals.kind)) rc = bad_opt(o, "expected " PB_ARRIVAL_NAMES, v);
        }
        else if (!strcmp(o, "--quantum")) { if (!(rc = parse_num_opt(o, v, 1e-6, &y))) c.arrivals.quantum_s = y; }
        else if (!strcmp(o, "--filter")) {
            pb_length_filter f;
            if (!v || pb_filter_by_name(v, &f)) rc = bad_opt(o, "expected " PB_FILTER_NAMES, v);
            else rc = copy_opt(o, v, c.filter, sizeof c.filter);
        }
        else if (!strcmp(o, "--file")) rc = copy_opt(o, v, c.file, sizeof c.file);
        else if (!strcmp(o, "--replay-file")) rc = copy_opt(o, v, c.replay_file, sizeof c.replay_file);
        else if (!strcmp(o, "--n")) { if (!(rc = parse_int_opt(o, v, 1, 4096, &x))) c.n = (int32_t)x; }
        else if (!strcmp(o, "--beam")) { if (!(rc = parse_int_opt(o, v, 1, 4096, &x))) c.beam_width = (int32_t)x; }
        else if (!strcmp(o, "--prefix")) {
            if (v && !strcmp(v, "1shot")) c.shots = 1;
            else if (v && !strcmp(v, "5shot")) c.shots = 5;
            else if (v && !strcmp(v, "none")) c.prefix_len = 0;
            else if (!(rc = parse_int_opt(o, v, 0, 1 << 20, &x))) c.prefix_len = (int32_t)x;
        }
        else if (!strcmp(o, "-o") || !strcmp(o, "--output")) { if (!v) rc = bad_opt(o, "needs a file", v); output = v; }
        else {
            fprintf(stderr, "pagedbench trace: unknown option '%s' (see --help)\n", o);
            rc = PB_EXIT_USAGE;
        }
        if (rc) return rc;
    }
    if (num_set && !dur_set && !config) c.arrivals.duration_s = 0;
    if (!c.dataset[0] && !c.trace[0]) {
        fprintf(stderr, "pagedbench trace: --dataset is required (%s)\n", PB_DATASET_NAMES);
        return PB_EXIT_USAGE;
    }
    if (strcmp(c.dataset, "translation") && c.shots != 1) {
        fprintf(stderr, "pagedbench trace: --prefix 1shot/5shot is only for --dataset translation\n");
        return PB_EXIT_USAGE;
    }
    if (!strcmp(c.dataset, "translation") && c.prefix_len) {
        fprintf(stderr, "pagedbench trace: translation takes --prefix 1shot or 5shot\n");
        return PB_EXIT_USAGE;
    }
    if (c.n > 1 && c.beam_width > 1) {
        fprintf(stderr, "pagedbench trace: --n and --beam are exclusive (beam search sets n = beam width)\n");
        return PB_EXIT_USAGE;
    }
    pb_trace t = {0};
    char err[1024];
    pb_status st = pb_workload_generate(&c, seed, &t, err, sizeof err);
    if (st) {
        fprintf(stderr, "pagedbench trace: %s\n", err);
        return st == PB_ERR_IO ? PB_EXIT_RUNTIME : PB_EXIT_USAGE;
    }
    char desc[2048];
    pb_workload_describe(&c, desc, sizeof desc);
    print_summary(desc, &t);
    if (output) st = pb_trace_write_file(output, &t, err, sizeof err);
    else st = pb_trace_write_csv(stdout, &t);
    pb_trace_free(&t);
    if (st) {
        fprintf(stderr, "pagedbench trace: %s\n", output ? err : "cannot write to stdout");
        return PB_EXIT_RUNTIME;
    }
    return PB_EXIT_OK;
}
