/* report.h -- paper-vs-ours tables, printed when a figure finishes.
 *
 * Both sides are read as CSV with the same columns: ours from results/<figure>.csv
 * (runner.h, or the figure's own writer for fig1 / fig11 / fig19a), the paper's from
 * experiments/paper/<figure>.csv (the paper's points, digitized and transcribed as
 * data).  What is compared depends on the figure:
 *   fig12 fig14 fig16 fig17   each series' knee (the request rate where normalized
 *                             latency first crosses the threshold, interpolated;
 *                             runner.h pb_knee_find) for ours and for the paper's
 *                             digitized points, and the ratios vLLM / each baseline
 *                             the paper quotes, beside the paper's quoted ranges;
 *   fig2                      the four KV-usage classes per system, and the gap in
 *                             percentage points (target: within 5);
 *   fig13                     batched requests per bar, ours / paper (target 15%);
 *   fig15                     saving per width, gap in points (target 5);
 *   fig18b fig19b             latency per block size, and the best block sizes;
 *   fig19a                    time per block size and operation; the crossover;
 *   fig1 fig11                whatever columns both sides share.
 * The tables are markdown (readable on a terminal and pasteable into RESULTS.md). */
#ifndef PB_REPORT_H
#define PB_REPORT_H

#include <stdio.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A CSV file as strings (first line = header), read with libcsv (RFC 4180 quoting, as
 * the runner writes it; blank and '#' comment lines skipped); empty cells are "". */
typedef struct {
    int n_cols, n_rows;
    char **cols;        /* n_cols names                      */
    char ***rows;       /* n_rows x n_cols cells             */
} pb_csv_table;

/* Load path.  PB_ERR_IO when unreadable, PB_ERR_INVALID when a row has too many cells. */
pb_status pb_csv_table_load(const char *path, pb_csv_table *out);
void pb_csv_table_free(pb_csv_table *t);
int pb_csv_table_col(const pb_csv_table *t, const char *name);    /* -1 if absent */

/* The sweep axes of the experiments in the <name>.json beside a results <name>.csv
 * (experiments[].config.sweep[].axis, each once), at most max, into names; how many, or
 * -1 when there is no readable sidecar. */
int pb_results_sidecar_axes(const char *csv, char names[][64], int max);

/* Write the paper-vs-ours report of `figure` to out (markdown) and, when md_path is
 * not NULL, atomically to md_path.  ours_csv must exist; paper_csv may be absent (the
 * report then shows ours only).  threshold: the knee threshold (s/token).
 * Returns PB_OK, or PB_ERR_IO when ours cannot be read. */
pb_status pb_report_figure(const char *figure, const char *ours_csv, const char *paper_csv,
                           double threshold, FILE *out, const char *md_path);

#ifdef __cplusplus
}
#endif
#endif /* PB_REPORT_H */
