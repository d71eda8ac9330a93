/* runner.h -- run the points of one or more experiments, in parallel, resumably.
 *
 * A point is one system of one experiment at one combination of sweep values
 * (experiment.h).  The runner
 *   - resolves the point's config (the experiment tree with each axis' `set` path
 *     assigned, "system.X" meaning option X of the point's system),
 *   - keys it by its content (point_key.h: the resolved config and system map, the
 *     content of every input file, the source hash of this build) -- never by host,
 *     path or binary, so point files move between hosts,
 *   - skips it when results/points/<experiment>/<system>-<key>.pt exists, carries that
 *     key and its checksum holds (and so do the side files asked for), unless fresh is
 *     set -- so a stopped sweep resumes where it stopped; a file that fails its checksum
 *     (edited, cut short, damaged) is computed again and said so on stderr (runner.c
 *     documents the format),
 *   - otherwise runs it in a forked worker process (at most `jobs` at once), which
 *     calls the point function and writes the point file atomically (a temporary
 *     unique to host, process and call, pb.h, then renamed: safe for concurrent
 *     writers on a shared filesystem; temporaries of this host's dead processes are
 *     removed); a failed point writes <...>.err instead and the run ends with status 1,
 *   - with a shard plan (shard.h), runs only the points the plan gives its shard
 *     (several hosts then fill one points folder, or several, for `pagedbench merge`),
 *   - shows progress on stderr: a line with the ETA, redrawn in place, once the run has
 *     taken PB_RUNNER_PROGRESS_DELAY_S (only when stderr is a terminal, not quiet), and
 *     one line per finished point (not quiet); with summary, each point's
 *     benchmark_serving block on stdout.
 * Points are independent and deterministic, so the merged results are byte-identical
 * for every jobs value.
 *
 * pb_runner_collect() then reads every point file of the experiments back into a
 * table (experiment order, system order, point order: each series contiguous), and
 * pb_results_write_csv() writes it with the figure's columns.
 *
 * Knee detection (pb_knee_find): the sustainable rate of a series is where its metric
 * first crosses a threshold, linearly interpolated between the last point at or below
 * it and the next point; "not reached" (a lower bound: the largest rate) and "already
 * above at the first point" (an upper bound) are reported as such. */
#ifndef PB_RUNNER_H
#define PB_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "experiment.h"
#include "pb.h"
#include "point.h"   /* pb_point_metrics, pb_point_ctx, pb_point_fn */
#include "shard.h"   /* pb_shard_plan */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int jobs;                  /* worker processes (>= 1)                             */
    const char *results_dir;   /* "results": points go to <dir>/points/<exp>/           */
    bool fresh;                /* recompute even if a point file exists               */
    bool summary;              /* print each point's summary block on stdout          */
    bool quiet;                /* no per-point lines on stdout                         */
    bool quick;                /* passed to the point function                         */
    int progress;              /* -1 auto (isatty(stderr), not quiet), 0 off, 1 on      */
    pb_point_fn fn;
    void *user;
    const pb_shard_plan *plan; /* NULL: every point; else only those plan gives `shard`  */
    int shard;                 /* 0-based (shard.h)                                     */
    bool requests;             /* points also write <base>.req.csv (per request); a
                                  point without one is recomputed                     */
    bool timeline;             /* points also write <base>.steps.csv (per step)        */
} pb_runner_opts;

#define PB_RUNNER_PROGRESS_DELAY_S 3.0   /* the progress line shows after this long */

typedef struct {
    int total, reused, computed, failed;
    double wall_s;
} pb_runner_stats;

/* Run every point of exps[n_exps] (with o->plan, those of shard o->shard only).  Returns PB_OK when all points have a result
 * (reused or computed), PB_ERR_IO / PB_ERR_INVALID otherwise (stats say how many
 * failed; finished points are kept). */
pb_status pb_runner_run(pb_experiment *const *exps, int n_exps, const pb_runner_opts *o,
                        pb_runner_stats *stats);

/* "<experiment> <system> <axis>=<value> ...": a point in messages. */
void pb_point_label(const pb_experiment *e, int sys, const double *vals, char *buf, size_t n);

/* The point's key and file path (without extension). */
uint64_t pb_point_hash(const pb_experiment *e, int sys, int point);
void     pb_point_path(const pb_experiment *e, int sys, int point, const char *results_dir,
                       char *buf, size_t n);

/* Knee refinement, round `round` (0-based): for every experiment whose single axis is
 * its knee axis and with round < knee_refine, and every system, look at the finished
 * points of the series (x ascending) and add points to it:
 *   crossing found between x0 and x1 (x1/x0 > 1.04): x0 + (x1-x0)/3 and x0 + 2(x1-x0)/3;
 *   above the threshold at the first point: x0/2 and x0/4;
 *   never above: 1.3 and 1.6 times the largest x;
 * each rounded to 3 significant digits, skipping values already present.  The new
 * points depend only on finished results, so the final point set is the same for any
 * jobs value and on resume.  Returns the number of points added. */
int pb_runner_refine(pb_experiment *const *exps, int n_exps, const char *results_dir, int round);
/* The same for the series a shard owns (plan NULL: every series). */
int pb_runner_refine_shard(pb_experiment *const *exps, int n_exps, const char *results_dir, int round,
                           const pb_shard_plan *plan, int shard);

/* ---- collected results ---- */
typedef struct {
    int exp, sys, point;
    double axis[PB_EXP_MAX_AXES];
    pb_point_metrics m;
} pb_result_row;

typedef struct {
    pb_experiment *const *exps;
    int n_exps;
    pb_result_row *rows;
    int n;
} pb_results;

/* Read the point files of exps (all must exist: run first).  Rows come in
 * experiment, system, axis-value order (each series contiguous, x ascending).  Returns PB_OK or PB_ERR_IO (missing/corrupt). */
pb_status pb_runner_collect(pb_experiment *const *exps, int n_exps, const char *results_dir,
                            pb_results *out);
void pb_results_free(pb_results *r);

/* Value of column `col` for row r as text ("" when the row has no such column):
 * panel, system, label, experiment, figure, tags (system's, then experiment's),
 * axis names, metric names. */
void pb_results_cell(const pb_results *r, const pb_result_row *row, const char *col, char *buf, size_t n);
/* Numeric value of a column (axis or metric); NAN when absent. */
double pb_results_num(const pb_results *r, const pb_result_row *row, const char *col);

/* Write the table as CSV atomically: the first experiment's `columns`, then every
 * other column any row has (experiment, system, label, axes, tags, metrics), in first-seen
 * order.  RFC 4180 through libcsv: a cell is quoted when it holds a comma, a quote, a
 * line break, leading or trailing blanks or starts with '#', written as it is otherwise;
 * no cell is cut; an undefined metric (NaN) is an empty cell. */
pb_status pb_results_write_csv(const pb_results *r, const char *path);

/* Concatenate the points' per-request (what = "req") or per-step ("steps") files
 * in row order into one CSV at path (atomically): columns experiment, system, every
 * axis of the experiments (union, first-seen order; an axis named like a column of the
 * point file is written "axis.<name>"), then the point file's columns.
 * Streams line by line; each side file's checksum must be the one its point file
 * recorded.  PB_ERR_IO when a side file is missing (run with the matching runner option
 * first) or changed, or path cannot be written. */
pb_status pb_results_write_side(const pb_results *r, const char *results_dir, const char *what, const char *path);

/* ---- knee ---- */
typedef enum {
    PB_KNEE_FOUND = 0,         /* rate = interpolated crossing                          */
    PB_KNEE_NOT_REACHED,       /* never crosses: rate = largest x (a lower bound)        */
    PB_KNEE_ABOVE_AT_START,    /* first point already above: rate = first x (upper bound) */
    PB_KNEE_NO_DATA
} pb_knee_kind;

typedef struct {
    pb_knee_kind kind;
    double rate;
} pb_knee;

/* x[n] ascending (ties allowed), y[n] the metric.  Can't fail. */
pb_knee pb_knee_find(const double *x, const double *y, int n, double threshold);
/* "1.82", ">2.00", "<0.10", "-" */
void pb_knee_fmt(pb_knee k, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* PB_RUNNER_H */
