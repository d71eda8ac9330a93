/* cmd_table1.c -- `pagedbench table1`: the paper's Table 1 from the spec files.
 *
 * For each of the paper's three server configurations, computes the parameter
 * size and the KV-cache capacity the way the paper's harness did (engine/spec.h,
 * pb_kv_capacity_compute) and prints them beside the paper's values.
 * Units, as the paper's numbers imply: parameters in GB (1e9 bytes; 13e9 params *
 * 2 B = 26 GB), KV memory in GiB (12 GiB / 800 KiB per token = 15.7K slots). */
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
            "  --max-batched-tokens N   tokens of the activation estimate (default 2048)\n"
            "  --gpu-mem-util F         share of device memory usable (default 0.95)\n"
            "  --block-size N           KV block size in tokens (default 16)\n");
}

int pb_cmd_table1(int argc, char **argv) {
    const char *csv = NULL;
    pb_table1_opts o = pb_table1_default_opts();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { help(stdout); return PB_EXIT_OK; }
        int64_t iv;
        double dv;
        if (!strcmp(a, "--csv") && v) { csv = v; i++; }
        else if (!strcmp(a, "--max-batched-tokens") && v && pb_parse_int(v, &iv) && iv > 0) {
            o.max_batched_tokens = (int32_t)iv; i++;
        } else if (!strcmp(a, "--gpu-mem-util") && v && pb_parse_num(v, &dv) && dv > 0 && dv <= 1) {
            o.gpu_mem_util = dv; i++;
        } else if (!strcmp(a, "--block-size") && v && pb_parse_int(v, &iv) && iv > 0 && iv <= 4096) {
            o.block_size = (int32_t)iv; i++;
        } else {
            fprintf(stderr, "pagedbench table1: bad argument '%s'%s\n", a, v ? "" : " (missing value?)");
            help(stderr);
            return PB_EXIT_USAGE;
        }
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
