/* cmd_table1.c -- `pagedbench table1`: the paper's Table 1 from the spec files.
 *
 * For each of the paper's three server configurations, computes the parameter
 * size and the KV-cache capacity the way the paper's harness did (engine/spec.h,
 * pb_kv_capacity_compute) and prints them beside the paper's values.
 * Units, as the paper's numbers imply: parameters in GB (1e9 bytes; 13e9 params *
 * 2 B = 26 GB), KV memory in GiB (12 GiB / 800 KiB per token = 15.7K slots). */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "spec.h"
#include "table1.h"

static void help(FILE *f) {
    fprintf(f,
            "usage: pagedbench table1 [--csv FILE] [--max-batched-tokens N] [--gpu-mem-util F]\n"
            "                         [--block-size N]\n\n"
            "Prints the paper's Table 1 (model sizes, KV memory, KV slots) computed from\n"
            "experiments/models and experiments/hardware, beside the paper's numbers.\n"
            "  --csv FILE               also write model,gpus,gpu,param_gb,kv_gb,kv_slots,... (atomically)\n"
            "  --max-batched-tokens N   tokens of the activation estimate (integer > 0; default 2048)\n"
            "  --gpu-mem-util F         share of device memory usable (0 < F <= 1; default 0.95)\n"
            "  --block-size N           KV block size in tokens (1..4096; default 16)\n"
            "  --version                print the revision and exit\n"
            "  -h, --help               this text\n"
            "Options take `--opt value` or `--opt=value`.  Exit: 0 ok, 1 the CSV cannot be\n"
            "written, 2 bad usage or spec files.\n");
}

static int bad_value(const char *opt, const char *v, const char *want) {
    fprintf(stderr, "pagedbench table1: %s '%s': %s (see --help)\n", opt, v, want);
    return PB_EXIT_USAGE;
}

int pb_cmd_table1(int argc, char **argv) {
    enum { O_CSV = 256, O_MBT, O_UTIL, O_BS, O_VERSION };
    static const struct option LONG[] = {
        {"csv", required_argument, NULL, O_CSV},          {"max-batched-tokens", required_argument, NULL, O_MBT},
        {"gpu-mem-util", required_argument, NULL, O_UTIL}, {"block-size", required_argument, NULL, O_BS},
        {"version", no_argument, NULL, O_VERSION},         {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *csv = NULL;
    pb_table1_opts o = pb_table1_default_opts();
    int ch;
    optind = 0;   /* a fresh scan (GNU: also re-reads the environment) */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":h", LONG, NULL)) != -1) {
        int64_t iv;
        double dv;
        switch (ch) {
        case 'h': help(stdout); return PB_EXIT_OK;
        case O_VERSION: printf("pagedbench %s\n", pb_git_rev()); return PB_EXIT_OK;
        case O_CSV: csv = optarg; break;
        case O_MBT:
            if (!pb_parse_int(optarg, &iv) || iv <= 0 || iv > INT32_MAX)
                return bad_value("--max-batched-tokens", optarg, "needs an integer > 0");
            o.max_batched_tokens = (int32_t)iv;
            break;
        case O_UTIL:
            if (!pb_parse_num(optarg, &dv) || !(dv > 0 && dv <= 1))
                return bad_value("--gpu-mem-util", optarg, "needs a number in (0, 1]");
            o.gpu_mem_util = dv;
            break;
        case O_BS:
            if (!pb_parse_int(optarg, &iv) || iv <= 0 || iv > 4096)
                return bad_value("--block-size", optarg, "needs an integer in 1..4096");
            o.block_size = (int32_t)iv;
            break;
        case ':':
            fprintf(stderr, "pagedbench table1: %s needs a value (see --help)\n", argv[optind - 1]);
            return PB_EXIT_USAGE;
        default:
            fprintf(stderr, "pagedbench table1: unknown option '%s' (see --help)\n", argv[optind - 1]);
            return PB_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "pagedbench table1: unexpected argument '%s' (see --help)\n", argv[optind]);
        return PB_EXIT_USAGE;
    }
    pb_table1_row rows[PB_TABLE1_ROWS];
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    if (pb_table1_compute(pb_spec_dir(), &o, rows, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return PB_EXIT_USAGE;
    }
    pb_table1_print(stdout, rows, &o);
    if (csv) {
        char *text = pb_table1_csv(rows);
        pb_status s = pb_write_file_atomic(csv, text, strlen(text));
        free(text);
        if (s) { fprintf(stderr, "pagedbench table1: cannot write %s\n", csv); return PB_EXIT_RUNTIME; }
        fprintf(stderr, "wrote %s\n", csv);
    }
    return PB_EXIT_OK;
}
