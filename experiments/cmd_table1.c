/* cmd_table1.c -- `pagedbench table1`: the paper's Table 1 from the spec files.
 *
 * For each of the paper's three server configurations, computes the parameter
 * size and the KV-cache capacity the way the paper's harness did (engine/spec.h,
 * pb_kv_capacity_compute) and prints them beside the paper's values.
 * Units, as the paper's numbers imply: parameters in GB (1e9 bytes; 13e9 params *
 * 2 B = 26 GB), KV memory in GiB (12 GiB / 800 KiB per token = 15.7K slots). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "spec.h"
#include "table1.h"

enum { O_CSV = 256, O_MBT, O_UTIL, O_BS };
static const pb_cli_opt OPTS[] = {
    {"csv", O_CSV, "FILE", "also write model,gpus,gpu,param_gb,kv_gb,kv_slots,... (atomically)"},
    {"max-batched-tokens", O_MBT, "N", "tokens of the activation estimate (integer > 0; default 2048)"},
    {"gpu-mem-util", O_UTIL, "F", "share of device memory usable (0 < F <= 1; default 0.95)"},
    {"block-size", O_BS, "N", "KV block size in tokens (1..4096; default 16)"},
    {NULL, 0, NULL, NULL}};
static const pb_cli CLI = {
    "table1", "[--csv FILE] [--max-batched-tokens N] [--gpu-mem-util F] [--block-size N]",
    "Prints the paper's Table 1 (model sizes, KV memory, KV slots) computed from\n"
    "experiments/models and experiments/hardware, beside the paper's numbers.",
    OPTS, NULL, "the CSV cannot be written", NULL};

int pb_cmd_table1(int argc, char **argv) {
    const char *csv = NULL;
    pb_table1_opts o = pb_table1_default_opts();
    pb_cli_parser p;
    pb_cli_begin(&p, &CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        int64_t iv;
        double dv;
        switch (c) {
        case O_CSV: csv = p.arg; break;
        case O_MBT: if (pb_cli_int(&p, 1, INT32_MAX, &iv)) o.max_batched_tokens = (int32_t)iv; break;
        case O_UTIL:
            if (!pb_cli_num(&p, 0, 1, &dv)) break;
            if (!(dv > 0)) pb_cli_bad(&p, "expected a number in (0, 1], got '%s'", p.arg);
            else o.gpu_mem_util = dv;
            break;
        case O_BS: if (pb_cli_int(&p, 1, 4096, &iv)) o.block_size = (int32_t)iv; break;
        }
    }
    if (p.rc >= 0) return p.rc;
    if (p.optind < argc) return pb_cli_fail(&CLI, "unexpected argument '%s'", argv[p.optind]);
    pb_table1_row rows[PB_TABLE1_ROWS];
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    if (pb_table1_compute(pb_spec_dir(), &o, rows, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return PB_EXIT_USAGE;
    }
    pb_table1_print(stdout, rows, &o);
    if (csv) {
        if (pb_cli_make_parent(&CLI, csv)) return PB_EXIT_RUNTIME;
        char *text = pb_table1_csv(rows);
        pb_status s = pb_write_file_atomic(csv, text, strlen(text));
        free(text);
        if (s) { fprintf(stderr, "pagedbench table1: cannot write %s\n", csv); return PB_EXIT_RUNTIME; }
        fprintf(stderr, "wrote %s\n", csv);
    }
    return PB_EXIT_OK;
}
