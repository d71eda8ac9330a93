/* table1.h -- Table 1 of the paper: model sizes and KV capacity per server config.
 *
 * The three configurations (paper §1): OPT-13B on 1x A100-40GB, OPT-66B on 4x
 * A100-40GB, OPT-175B on 8x A100-80GB.  Our numbers come from pb_kv_capacity_compute
 * (usable memory - parameters - activations - 1 GiB workspace, per GPU); the paper's
 * are carried beside them for comparison, never used in the computation. */
#ifndef PB_TABLE1_H
#define PB_TABLE1_H

#include <stdio.h>

#include "config.h"
#include "spec.h"

#define PB_TABLE1_ROWS 3

typedef struct {
    int32_t max_batched_tokens;   /* activation estimate (default 2048)          */
    double gpu_mem_util;          /* 0.95, as the paper's harness                */
    int32_t block_size;           /* 16                                          */
} pb_table1_opts;

typedef struct {
    pb_model model;
    pb_hw hw;
    int32_t gpus;
    pb_kv_capacity cap;
    double param_gb;              /* ours: params * dtype bytes / 1e9            */
    double kv_gib;                /* ours: KV memory over all GPUs, GiB          */
    double paper_param_gb, paper_kv_gb, paper_slots;
} pb_table1_row;

pb_table1_opts pb_table1_default_opts(void);
/* Compute the three rows from spec_dir/{models,hardware}.  PB_OK or PB_ERR_INVALID. */
pb_status pb_table1_compute(const char *spec_dir, const pb_table1_opts *o, pb_table1_row rows[PB_TABLE1_ROWS],
                            pb_cfg_err *err);
void pb_table1_print(FILE *f, const pb_table1_row rows[PB_TABLE1_ROWS], const pb_table1_opts *o);
/* CSV text (malloc'd): model,gpus,gpu,param_gb,kv_gb,kv_slots,kv_blocks,paper_param_gb,
 * paper_kv_gb,paper_kv_slots */
char *pb_table1_csv(const pb_table1_row rows[PB_TABLE1_ROWS]);

#endif /* PB_TABLE1_H */
