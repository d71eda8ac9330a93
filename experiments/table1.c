/* table1.c -- Table 1 computed from the spec files. */
#include "table1.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *model, *hw;
    int32_t gpus;
    double paper_param_gb, paper_kv_gb, paper_slots;
} CONFIGS[PB_TABLE1_ROWS] = {
    {"opt-13b", "a100-40gb", 1, 26, 12, 15.7e3},
    {"opt-66b", "a100-40gb", 4, 132, 21, 9.7e3},
    {"opt-175b", "a100-80gb", 8, 346, 264, 60.1e3},
};

pb_table1_opts pb_table1_default_opts(void) {
    pb_table1_opts o = {PB_KV_PROFILE_TOKENS, 0.95, 16};
    return o;
}

pb_status pb_table1_compute(const char *spec_dir, const pb_table1_opts *o, pb_table1_row rows[PB_TABLE1_ROWS],
                            pb_cfg_err *err) {
    for (int i = 0; i < PB_TABLE1_ROWS; i++) {
        pb_table1_row *r = &rows[i];
        memset(r, 0, sizeof *r);
        if (pb_model_load(spec_dir, CONFIGS[i].model, &r->model, err)) return PB_ERR_INVALID;
        if (pb_hw_load(spec_dir, CONFIGS[i].hw, &r->hw, err)) return PB_ERR_INVALID;
        r->gpus = CONFIGS[i].gpus;
        pb_status s = pb_kv_capacity_compute(&r->model, &r->hw, r->gpus, o->block_size, o->max_batched_tokens,
                                             o->gpu_mem_util, &r->cap);
        if (s) {
            pb_cfg_fail(err, &(pb_node){.file = "table1"}, false, "%s on %dx %s: no memory left for KV (%s)",
                        r->model.name, r->gpus, r->hw.name, pb_status_str(s));
            return PB_ERR_INVALID;
        }
        r->param_gb = pb_param_bytes(&r->model) / 1e9;
        r->kv_gib = r->cap.kv_bytes_total / (1024.0 * 1024.0 * 1024.0);
        r->paper_param_gb = CONFIGS[i].paper_param_gb;
        r->paper_kv_gb = CONFIGS[i].paper_kv_gb;
        r->paper_slots = CONFIGS[i].paper_slots;
    }
    return PB_OK;
}

void pb_table1_print(FILE *f, const pb_table1_row rows[PB_TABLE1_ROWS], const pb_table1_opts *o) {
    fprintf(f, "Table 1: model sizes and server configurations (ours | paper)\n");
    fprintf(f, "KV = %.2f x memory - params/GPU - activations(%d tokens) - 1 GiB workspace; block %d\n\n",
            o->gpu_mem_util, o->max_batched_tokens, o->block_size);
    fprintf(f, "%-10s %-14s %18s %18s %22s\n", "model", "GPUs", "params GB", "KV cache GiB", "max KV slots");
    for (int i = 0; i < PB_TABLE1_ROWS; i++) {
        const pb_table1_row *r = &rows[i];
        char gpus[32];
        snprintf(gpus, sizeof gpus, "%dx %s", r->gpus, r->hw.name);
        fprintf(f, "%-10s %-14s %8.0f | %-7.0f %8.1f | %-7.0f %9.1fK | %.1fK\n", r->model.name, gpus,
                r->param_gb, r->paper_param_gb, r->kv_gib, r->paper_kv_gb, (double)r->cap.num_slots / 1e3,
                r->paper_slots / 1e3);
    }
    fprintf(f, "\n(paper: 9.7K slots for OPT-66B does not follow from its own 21 GB: 21 GiB / 2.25 MiB "
               "= 9.6K; see RESULTS.md)\n");
}

char *pb_table1_csv(const pb_table1_row rows[PB_TABLE1_ROWS]) {
    size_t cap = 2048;
    char *s = pb_xmalloc(cap);
    int n = snprintf(s, cap, "model,gpus,gpu,param_gb,kv_gb,kv_slots,kv_blocks,kv_bytes_per_token,"
                             "paper_param_gb,paper_kv_gb,paper_kv_slots\n");
    for (int i = 0; i < PB_TABLE1_ROWS; i++) {
        const pb_table1_row *r = &rows[i];
        n += snprintf(s + n, cap - (size_t)n, "%s,%d,%s,%.2f,%.2f,%lld,%lld,%.0f,%.0f,%.0f,%.0f\n", r->model.name,
                      r->gpus, r->hw.name, r->param_gb, r->kv_gib, (long long)r->cap.num_slots,
                      (long long)r->cap.num_blocks, pb_kv_bytes_per_token(&r->model, 1), r->paper_param_gb,
                      r->paper_kv_gb, r->paper_slots);
    }
    return s;
}
