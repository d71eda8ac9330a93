/* served_point.h -- the one point of an experiment YAML that `serve` serves and `loadgen`
 * measures: the YAML loaded with the command's --set overrides (and an executor override,
 * written where the YAML names its executor), every point checked before anything runs
 * (system.h pb_system_check: keys, KV space, workload files), the system picked
 * (pb_system_pick: --system, else the first of type vllm, else the first) and the first
 * point of its sweep resolved (sweeps take their first value; --set picks another). */
#ifndef PB_SERVED_POINT_H
#define PB_SERVED_POINT_H

#include "config.h"
#include "experiment.h"
#include "pb.h"
#include "point.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    pb_experiment *e;
    int sys;
    pb_config *cfg;                  /* the resolved point                             */
    double vals[PB_EXP_MAX_AXES];    /* its sweep values                                */
    char sys_path[32];               /* "systems.<sys>"                                 */
    pb_point_ctx pt;                 /* exp, sys, point 0, axis_values, root, system    */
} pb_served_point;

/* Open path for command cmd ("serve").  PB_OK; else the errors printed on stderr
 * (file:line:col, or "pagedbench CMD: ..."), *sp closed, and PB_ERR_INVALID: a usage or
 * config error, a file not found or unreadable among them (exit 2, as `run`). */
pb_status pb_served_point_open(pb_served_point *sp, const char *cmd, const char *path, const char **sets,
                               int n_sets, const char *executor, const char *system);
void pb_served_point_close(pb_served_point *sp);   /* idempotent */

#ifdef __cplusplus
}
#endif
#endif /* PB_SERVED_POINT_H */
