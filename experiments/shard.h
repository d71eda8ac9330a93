/* shard.h -- split a sweep across hosts: point costs and a deterministic, cost-balanced plan.
 *
 *   pagedbench run X.yaml --shard 2/8      (cmd_run.c) runs what pb_shard_plan_owner()
 *                                          gives shard 1 (0-based) of 8, writes point files only
 *   pagedbench run X.yaml --list-points    every grid point's id, cost and unit
 *
 * Units.  Knee refinement (runner.h) adds points to a series from that series' own
 * results, so an experiment that refines (one axis, the knee axis, knee.refine > 0) is
 * split by series -- one unit per (experiment, system), and the shard owning it also
 * runs its refinement rounds; any other experiment is split point by point.  A
 * refinement point (index >= the grid's) belongs to its series' owner.
 *
 * Cost of a point: estimated work in tokens, sum over the point's trace of
 * prompt_len + output_len * max(n, beam_width), lengths scaled by the experiment's
 * length_scale.  The same for every executor: within one sweep only ratios matter.  The
 * trace is generated from the
 * resolved workload (point_key.h) -- milliseconds, next to a run's seconds or, on a
 * GPU, minutes; a workload that does not generate costs 1.  A unit's cost is the sum of
 * its grid points'.
 *
 * Plan: units sorted by cost (descending; ties in experiment, system, point order),
 * each given to the shard with the least cost so far (ties: the lowest shard) -- the
 * LPT rule, within 4/3 of the best possible largest shard.  The plan depends only on
 * the experiments (their configs and input files), never on the host or on what is
 * already done, so every task of an array computes the same plan and the shards
 * partition the points exactly. */
#ifndef PB_SHARD_H
#define PB_SHARD_H

#include <stdbool.h>
#include <stdint.h>

#include "experiment.h"
#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pb_shard_plan pb_shard_plan;   /* opaque */

/* Does experiment e refine its series (so they are not split)? */
bool pb_shard_by_series(const pb_experiment *e);

/* Estimated cost of point `point` of system `sys` (>= 1). */
int64_t pb_point_cost(const pb_experiment *e, int sys, int point);

/* The plan for n_shards (>= 1) shards over the current (grid) points of exps. */
pb_shard_plan *pb_shard_plan_make(pb_experiment *const *exps, int n_exps, int n_shards);
void pb_shard_plan_destroy(pb_shard_plan *p);   /* NULL is a no-op */

/* The shard (0-based) that runs a point; refinement points follow their series. */
int pb_shard_plan_owner(const pb_shard_plan *p, int exp, int sys, int point);
/* The estimated cost of a grid point, and a shard's total. */
int64_t pb_shard_plan_point_cost(const pb_shard_plan *p, int exp, int sys, int point);
int64_t pb_shard_plan_load(const pb_shard_plan *p, int shard);
int pb_shard_plan_n_shards(const pb_shard_plan *p);

/* Parse "I/N" (1 <= I <= N <= 100000) into the 0-based shard and the count. */
bool pb_shard_parse(const char *s, int *shard, int *n_shards);

/* Invariant checker: every unit owned by one shard in range, loads = sums of costs. */
pb_status pb_shard_plan_check(const pb_shard_plan *p);

#ifdef __cplusplus
}
#endif
#endif /* PB_SHARD_H */
