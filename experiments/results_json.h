/* results_json.h -- <name>.json, the JSON beside a results CSV (docs/outputs.md): the
 * format tag, figure, git revision, source hash, --quick, the machine that ran it
 * (hostname, OS, kernel, CPU, cores, CUDA build), every experiment (name, file, seed,
 * executor, device, knee threshold, its resolved config) and every point (experiment,
 * system, label, seed, axes, metrics; an undefined metric null).  Written by `run` and
 * `merge` for a figure, by `loadgen` for its one measured point. */
#ifndef PB_RESULTS_JSON_H
#define PB_RESULTS_JSON_H

#include <stdbool.h>

#include "experiment.h"
#include "pb.h"
#include "runner.h"   /* pb_results */

#ifdef __cplusplus
extern "C" {
#endif

/* Write the JSON of res (the points of exps[0..n)) to path, atomically.  PB_OK or PB_ERR_IO. */
pb_status pb_results_write_json(const char *path, const char *figure, pb_experiment *const *exps, int n, bool quick,
                                const pb_results *res);

#ifdef __cplusplus
}
#endif
#endif /* PB_RESULTS_JSON_H */
