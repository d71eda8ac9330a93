/* cmd_validate.c -- `pagedbench validate`: the sim against public GPU step measurements.
 *
 * Predicts every row of experiments/validation/measurements.csv (validate.h) with the
 * cost model the hardware YAMLs hold today and prints, per measurement,
 *   source,model,gpu,tp,what,measured_ms,predicted_ms,err_pct
 * then the median and max |err| per source, per GPU and over all predicted rows.  With --csv
 * stdout is a plain CSV (a header and the predicted rows, nothing else) and the notes,
 * skipped rows and summary go to stderr.  Exit 0 whatever the errors (tests/test_validate.c holds
 * the bounds); 2 on bad input, before anything is printed. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "spec.h"
#include "validate.h"

enum { O_CSV = 256, O_TABLE, O_SPEC_DIR, O_HW_DIR, O_ATTENTION };
static const pb_cli_opt OPTS[] = {
    {"csv", O_CSV, NULL, "stdout: a plain CSV, source,model,gpu,tp,what,measured_ms,predicted_ms,err_pct\n"
                         "(the notes, skipped rows and the summary go to stderr)"},
    {"table", O_TABLE, "FILE", "measurements (default <spec-dir>/validation/measurements.csv)"},
    {"spec-dir", O_SPEC_DIR, "DIR", "models/ and validation/ (default $PAGEDBENCH_SPECS or experiments/)"},
    {"hardware-dir", O_HW_DIR, "DIR", "hardware YAMLs, base keys and cost_model: (default <spec-dir>/hardware)"},
    {"attention", O_ATTENTION, "K", "the vllm rows' attention kernel: paged (default, vLLM 2023) or flash\n"
                                    "(FlashAttention-2, as V1 and Sarathi-Serve's engine run it)"},
    {NULL, 0, NULL, NULL}};
static const pb_cli CLI = {
    "validate", "[--csv] [--table FILE] [--spec-dir DIR] [--hardware-dir DIR] [--attention paged|flash]",
    "Predicts public step-level GPU measurements (Sarathi-Serve Yi-34B TP2, Splitwise\n"
    "Llama-2-70B / BLOOM-176B on A100 and H100, FasterTransformer OPT-13B batches) with\n"
    "the sim and prints measured vs predicted, one row per measurement, then the median\n"
    "and max |err| per source, per GPU and overall.  None of these measurements sets a\n"
    "cost-model parameter.",
    OPTS, NULL, NULL, NULL};

static const char *const NOTES[] = {
    "what is modelled (the sim's public API, one pb_sim_step per engine step):",
    "  engine vllm: paged attention, block 16, Python host costs; ft: contiguous attention, C++ host costs",
    "  decode: a step of B decodes, averaged over the KV lengths ctx=LO..HI the measured steps had",
    "  prefill: one prompt; chunk=C: ceil(P/C) steps over the cached prefix, summed",
    "  hybrid: one step of a P-token prefill beside B decodes",
    "  ft_batch: FasterTransformer batch = its context pass (B prompts padded to the longest input;",
    "    one per beam when B = 1) + (out - 1) decode steps of B x beams sequences of growing KV",
    "    (beam-search bookkeeping beyond sampling is not modelled)",
    "  Splitwise's engine is not recorded: modelled as vllm [assumption]; BLOOM-176B uses the opt",
    "    architecture (ALiBi, embedding LayerNorm, GELU not modelled)",
};

/* One line per distinct value of a row's text field at `off` (source, gpu), in table order:
   that group's predicted rows, median and max |err|. */
static void summarize_by(FILE *note, const pb_val_table *t, const double *pred, size_t off, const char *label) {
    double *p = pb_xmalloc((size_t)t->n * sizeof *p);
    for (int i = 0; i < t->n; i++) {
        const char *key = (const char *)&t->rows[i] + off;
        bool first = true;
        for (int j = 0; j < i && first; j++)
            if (!strcmp((const char *)&t->rows[j] + off, key)) first = false;
        if (!first) continue;
        for (int j = 0; j < t->n; j++) p[j] = strcmp((const char *)&t->rows[j] + off, key) ? NAN : pred[j];
        double med, mx;
        int n = pb_val_summary(t, p, &med, &mx);
        if (n > 0) fprintf(note, "%-6s %-14s %3d rows: median |err| %5.1f%%, max |err| %5.1f%%\n", label, key, n, med, mx);
    }
    free(p);
}

int pb_cmd_validate(int argc, char **argv) {
    bool csv = false;
    const char *table = NULL, *spec_dir = NULL, *hw_dir = NULL;
    pb_sim_attn attn = PB_SIM_ATTN_PAGED;
    pb_cli_parser p;
    pb_cli_begin(&p, &CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        switch (c) {
        case O_CSV: csv = true; break;
        case O_TABLE: table = p.arg; break;
        case O_SPEC_DIR: spec_dir = p.arg; break;
        case O_HW_DIR: hw_dir = p.arg; break;
        case O_ATTENTION:
            if (strcmp(p.arg, "paged") && strcmp(p.arg, "flash"))
                return pb_cli_fail(&CLI, "--attention: '%s' (want paged or flash)", p.arg);
            attn = !strcmp(p.arg, "flash") ? PB_SIM_ATTN_FLASH : PB_SIM_ATTN_PAGED;
            break;
        }
    }
    if (p.rc >= 0) return p.rc;
    if (p.optind < argc) return pb_cli_fail(&CLI, "unexpected argument '%s'", argv[p.optind]);
    if (!spec_dir) spec_dir = pb_spec_dir();
    char table_buf[2048], hw_buf[2048];
    if (!table) {
        snprintf(table_buf, sizeof table_buf, "%s/validation/measurements.csv", spec_dir);
        table = table_buf;
    }
    if (!hw_dir) {
        snprintf(hw_buf, sizeof hw_buf, "%s/hardware", spec_dir);
        hw_dir = hw_buf;
    }

    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_val_table *t;
    if (pb_val_load(table, &t, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return PB_EXIT_USAGE;
    }
    double *pred = pb_xmalloc((size_t)(t->n > 0 ? t->n : 1) * sizeof *pred);
    if (pb_val_predict_kernel(t, spec_dir, hw_dir, attn, pred, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        free(pred);
        pb_val_free(t);
        return PB_EXIT_USAGE;
    }

    FILE *note = csv ? stderr : stdout;   /* with --csv, stdout is the CSV alone */
    fprintf(note, "pagedbench validate: %s (hardware from %s)%s\n", table, hw_dir,
            attn == PB_SIM_ATTN_FLASH ? "; vllm rows with the flash attention kernel" : "");
    for (size_t i = 0; i < PB_ARRAY_LEN(NOTES); i++) fprintf(note, "%s\n", NOTES[i]);
    if (csv) printf("source,model,gpu,tp,what,measured_ms,predicted_ms,err_pct\n");
    else
        printf("\n%-14s %-12s %-15s %2s  %-40s %11s %12s %8s\n", "source", "model", "gpu", "tp", "what", "measured_ms",
               "predicted_ms", "err_pct");
    for (int i = 0; i < t->n; i++) {
        const pb_val_row *r = &t->rows[i];
        char what[192];
        pb_val_what(r, what, sizeof what);
        if (isnan(pred[i])) {
            fprintf(note, "skipped: %s,%s,%s,%d,%s,%.2f: %s\n", r->source, r->model, r->gpu, r->tp, what,
                    r->measured_ms, r->skip);
            continue;
        }
        double e = pb_val_err_pct(pred[i], r->measured_ms);
        if (csv)
            printf("%s,%s,%s,%d,%s,%.2f,%.2f,%+.1f\n", r->source, r->model, r->gpu, r->tp, what, r->measured_ms, pred[i], e);
        else
            printf("%-14s %-12s %-15s %2d  %-40s %11.2f %12.2f %+7.1f%%\n", r->source, r->model, r->gpu, r->tp, what,
                   r->measured_ms, pred[i], e);
    }

    /* per source, per GPU, then overall */
    fprintf(note, "\n");
    summarize_by(note, t, pred, offsetof(pb_val_row, source), "source");
    summarize_by(note, t, pred, offsetof(pb_val_row, gpu), "gpu");
    double med, mx;
    int n = pb_val_summary(t, pred, &med, &mx);
    fprintf(note, "summary: %d rows predicted, %d skipped: median |err| %.1f%%, max |err| %.1f%%\n", n, t->n - n, med, mx);
    free(pred);
    pb_val_free(t);
    return PB_EXIT_OK;
}
