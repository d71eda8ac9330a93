/* point.h -- what one sweep point is to the code that computes it: its context (the
 * experiment, the system, the sweep values, the resolved config) and its named metrics.
 * The runner (runner.h) calls a pb_point_fn with a pb_point_ctx; the system table
 * (system.h) is the point function of every experiment; point_out.h fills the metrics. */
#ifndef PB_POINT_H
#define PB_POINT_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "experiment.h"
#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- named metrics of one point ---- */
#define PB_MAX_METRICS 128
typedef struct {
    int n;
    char name[PB_MAX_METRICS][40];
    double value[PB_MAX_METRICS];
    char summary[8192];        /* optional text (benchmark_serving block), one point */
} pb_point_metrics;

void   pb_pm_set(pb_point_metrics *m, const char *name, double v);   /* add or replace */
double pb_pm_get(const pb_point_metrics *m, const char *name, double dflt);

/* ---- the point function ---- */
typedef struct {
    const pb_experiment *exp;
    int sys;                   /* index in exp->systems                              */
    int point;                 /* index in the system's point space                  */
    const double *axis_values; /* exp->n_axes values                                 */
    const pb_node *root;       /* resolved config (axis values assigned)             */
    const pb_node *system;     /* the system's map, resolved                         */
    bool quick;
    const char *requests_path; /* write the per-request rows here (NULL: not asked)   */
    const char *timeline_path; /* write the per-step rows here (NULL: not asked)      */
} pb_point_ctx;

/* Compute one point.  Runs in a worker process; returns PB_OK and fills out, or an
 * error with a message in err (written to the point's .err file). */
typedef pb_status (*pb_point_fn)(const pb_point_ctx *pt, pb_point_metrics *out, char *err, size_t err_n,
                                 void *user);

#ifdef __cplusplus
}
#endif
#endif /* PB_POINT_H */
