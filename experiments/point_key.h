/* point_key.h -- a sweep point's identity: everything its result depends on, hashed.
 *
 * A point file is results/points/<experiment>/<system>-<key>.pt, and a finished point
 * is reused exactly when its key matches.  The key is a 64-bit FNV-1a hash of the text
 *
 *   pagedbench-point-key 2
 *   source <PB_SOURCE_HASH>          the code (tools/source_rev.cmake: content hash of every
 *                                    source compiled into this binary; same tree, same hash,
 *                                    on any host, git checkout or not)
 *   config <canonical resolved config>
 *   system <canonical resolved system map>
 *   file <role> <size> <fnv64>       the content of every input file the point reads
 *
 * and nothing else: not the binary's path or mtime, not the results folder, not the
 * host -- so point files move between hosts, and a shard of a sweep computes exactly the
 * files the full sweep would.
 *
 * Resolved config: the experiment tree (spec files included, --set and quick.set
 * applied) with each sweep axis' `set` path assigned the point's value (formatted by
 * pb_fmt_num), "system.X" assigning option X of the point's system.  Left out, because
 * they cannot change a result: the top-level keys name figure panel title description
 * columns knee quick tags sweep systems (the sweep's value lists only pick points; the
 * point's own values are in the assignments), and the system's label tags sweep.  So
 * `--set sweep.0.values=[2]` gives the rate-2 point the same key as the full grid.
 * Canonical text: map keys sorted, every key and scalar length-prefixed (quoting and
 * key order in the YAML do not matter; no two different trees print alike).
 *
 * Input files (role: path as the point resolves it): workload.trace, workload.file (the
 * exact-lengths dataset; absent = built-in distribution, keyed as "none"),
 * workload.replay_file (arrivals: replay) and system.sim.profile.  They count by content
 * only: those four keys are left out of the config text, so the same bytes at another
 * path (another host's data folder, `file: auto` or an explicit path) give the same key,
 * and an edited file a new one.  Hashes are cached per (path, size, mtime) for the life
 * of the process.
 *
 * The resolved trees are built without touching the experiment (a private copy), so
 * keys can be computed for every point up front, in any order. */
#ifndef PB_POINT_KEY_H
#define PB_POINT_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The key of point `point` of system `sys`. */
uint64_t pb_point_key(const pb_experiment *e, int sys, int point);

/* The key's text (above), malloc'd; the caller frees it.  For tests and debugging. */
char *pb_point_key_text(const pb_experiment *e, int sys, int point);

/* The resolved workload map of a point (a private copy; NULL when the experiment has
 * none); free with pb_point_tree_free. */
pb_node *pb_point_resolved_workload(const pb_experiment *e, int sys, int point);
void pb_point_tree_free(pb_node *n);

/* 64-bit FNV-1a, the hash of keys, input files and the checksums of point files:
 * h = pb_fnv64(PB_FNV64_INIT, p, n), continued by passing h back in. */
#define PB_FNV64_INIT 1469598103934665603ULL
uint64_t pb_fnv64(uint64_t h, const void *p, size_t n);
/* Size and FNV-1a of a file's content (an input of pb.h's rules).  PB_OK, or the
 * reader's status with "path: why" in err. */
pb_status pb_fnv64_file(const char *path, int64_t *size, uint64_t *hash, char *err, size_t errlen);

/* The code identity keyed into every point (16 hex digits) and, for people, the git
 * description of the tree it was built from ("no-git" outside a checkout). */
const char *pb_source_hash(void);
const char *pb_source_describe(void);

#ifdef __cplusplus
}
#endif
#endif /* PB_POINT_KEY_H */
