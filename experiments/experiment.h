/* experiment.h -- one experiment YAML: what to run, on which systems, over which sweep.
 *
 * An experiment is one panel of a figure (experiments/fig12_opt13b_sharegpt.yaml is
 * panel (a) of Fig. 12).  It names a model and hardware spec (by file name, or inline),
 * the GPU count, the executor, a workload (the WORKLOADS module's schema), the systems
 * to compare, and the sweep axes.  The runner (runner.h) runs every
 *     point = one system x one combination of the sweep axes' values
 * as an independent simulation, so points can run in any order and in parallel.
 *
 * Every key an experiment YAML may hold is declared once, in experiment.c (the
 * experiment's, a system's and `executor:`'s tables) or in the module that reads its
 * section (workloads/workload.h, engine/spec.h, executors/executor_sim.h, each
 * policy's options): name, type, range or choices, default, doc line (config.h
 * pb_key).  `pagedbench list --keys` prints them.  The shape:
 *   name, figure, panel, title, description    ids and labels
 *   seed, model, hardware, gpus, executor      what runs: spec names (experiments/
 *                                              models/<name>.yaml, hardware/<name>.yaml)
 *                                              or inline maps; executor sim | cpu | cuda,
 *                                              or a map {type, ...} (pb_executor_schema)
 *   length_scale, clamp_to_max_len             fit a trace to a small model (system.h)
 *   workload    the trace to generate (schema in workloads/)
 *   sweep       list of axes {axis, set, values}: `set` is a config path assigned the
 *               value at each point, e.g. {axis: request_rate, set: workload.rate, ...};
 *               a set path "system.X" assigns option X of the point's system; a set
 *               path must be a numeric key (system., workload., executor., cost_model.,
 *               gpus, seed, length_scale) and each value is checked like that key
 *   cost_model  sim: overrides of the hardware spec's cost_model keys, for this
 *               experiment (sweepable: set: cost_model.attn_paged_block_ns)
 *   systems     list of {name, label, type: vllm|orca|ft, tags, sweep, options...}:
 *               `sweep: {request_rate: [...]}` overrides an axis' values for one system;
 *               a key scoped to other types (pb_key.scope) is an error (system.c)
 *   tags        extra CSV columns with constant values (dataset: sharegpt)
 *   columns     the leading CSV columns of the figure, in order
 *   knee        {metric, threshold, refine}: the sustainable-rate threshold (s/token)
 *               and how many rounds of points to add around each series' crossing
 *   quick       {set: ["a.b=v", ...], thin: k}: what --quick changes (stated, not hidden);
 *               checked on every run, --quick or not, each item at its own line
 *   allow_rejected  true: a point where requests were rejected or left unfinished
 *               (complete 0) does not make the run exit 1 (`run --allow-rejected` too)
 * Checked at load, each at its own line: names (pb_name_ok), `columns` (each a column
 * the CSV has: panel system label experiment figure, an axis, a tag, a metric of
 * point_out.h), `knee.metric` (a metric), `knee.axis` (an axis when given, the only one
 * when refine > 0), and the grid's size (at most PB_EXP_MAX_POINTS points, blamed at
 * the longest `values:`).
 *
 * The experiment owns its pb_config; every pointer below lives as long as it does. */
#ifndef PB_EXPERIMENT_H
#define PB_EXPERIMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"   /* pb_config, pb_node, pb_key, pb_cfg_err */
#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PB_EXP_MAX_AXES 4
#define PB_EXP_MAX_SYSTEMS 16
#define PB_EXP_MAX_TAGS 8
#define PB_EXP_MAX_COLUMNS 16
#define PB_EXP_MAX_POINTS 100000   /* grid points of one experiment, all systems (sweep values) */
#define PB_NAME_MAX 128            /* bytes of a name used in file names (pb_name_ok)        */

typedef enum { PB_SYS_VLLM = 0, PB_SYS_ORCA = 1, PB_SYS_FT = 2 } pb_system_type;
#define PB_SYSTEM_TYPES "vllm|orca|ft"      /* `type:` choices, in pb_system_type order */

/* Scopes (config.h pb_key.scope): the system types that read a system's key, the
   executor types (sim|cpu|cuda) that read a key of `executor:`. */
#define PB_SCOPE_VLLM (1u << PB_SYS_VLLM)
#define PB_SCOPE_ORCA (1u << PB_SYS_ORCA)
#define PB_SCOPE_FT (1u << PB_SYS_FT)
#define PB_SCOPE_REAL 6u                    /* cpu and cuda, the real executors */

#define PB_SYSTEM_CPU_KV_MIB 64             /* the cpu executor's KV cap, MiB (kv_mib) */

typedef struct {                    /* a constant CSV column */
    const char *name, *value;
} pb_tag;

typedef struct {
    const char *axis;               /* CSV column name: request_rate, block_size, width  */
    const char *set;                /* config path assigned at each point                */
    int n;                          /* number of values                                   */
    double *values;                 /* ascending order is not required                    */
} pb_axis;

typedef struct {
    const char *id;                 /* CSV `system` value: vllm, orca_max, ft, ...        */
    const char *label;              /* legend label: "Orca (Max)"                         */
    pb_system_type type;
    const pb_node *node;            /* the system's map (options are read by system.c)   */
    int n_tags;
    pb_tag tags[PB_EXP_MAX_TAGS];
    /* per-axis value overrides (NULL = the experiment's values) */
    int n_values[PB_EXP_MAX_AXES];
    double *values[PB_EXP_MAX_AXES];
    /* knee refinement: extra values of the (single) knee axis, appended after the
       grid's points by pb_runner_refine(); points grid..grid+n_extra-1 */
    int n_extra;
    double *extra;
} pb_system_spec;

typedef struct {
    pb_config *cfg;                 /* owns the tree (spec files included, --set applied) */
    const char *path;               /* the YAML file                                      */
    const char *name, *figure, *panel, *title, *executor;
    uint64_t seed;
    int gpus;
    int n_axes;
    pb_axis axes[PB_EXP_MAX_AXES];
    int n_systems;
    pb_system_spec systems[PB_EXP_MAX_SYSTEMS];
    int n_tags;
    pb_tag tags[PB_EXP_MAX_TAGS];
    int n_columns;
    const char *columns[PB_EXP_MAX_COLUMNS];
    const char *knee_metric;        /* knee: (experiment.c KNEE_SCHEMA)                    */
    double knee_threshold;
    const char *knee_axis;
    int knee_refine;                /* refinement rounds (--quick: at most 1)              */
    int quick_thin;                 /* --quick keeps every k-th axis value (1 = all)       */
    int n_quick_sets;
    const char *quick_sets[16];     /* --quick's config overrides                          */
    bool allow_rejected;            /* `allow_rejected:` points not complete are accepted   */
} pb_experiment;

extern const pb_key pb_experiment_schema[];
extern const pb_key pb_system_entry_schema[];   /* a system's keys, the policies' options aside */
/* The keys of a system's map: pb_system_entry_schema, then the options of every
 * policy (declared by the policy, engine/policy.h pb_policy_keys; an option several
 * policies take, once), {NULL}-terminated in out.  Returns out.  The experiment's
 * validation, sweep paths and `pagedbench list --keys` use this table. */
#define PB_SYSTEM_MAX_KEYS 64
const pb_key *pb_system_entry_keys(pb_key out[PB_SYSTEM_MAX_KEYS]);
extern const pb_key pb_executor_schema[];     /* `executor:` as a map */

/* The executor type of a (validated) experiment tree: root.executor or
 * root.executor.type; "sim" when absent.  Points into the tree. */
const char *pb_experiment_executor_type(const pb_node *root);

/* Load, include the spec files, apply the overrides (sets[n_sets], each "a.b=v";
 * with quick, the file's quick.set first), validate, and parse.  On error *out is NULL
 * and err holds `file:line:col: path: message` lines (the CLI exits 2). */
pb_status pb_experiment_load(const char *path, const char *const *sets, int n_sets, bool quick,
                             pb_experiment **out, pb_cfg_err *err);
void pb_experiment_destroy(pb_experiment *e);        /* NULL is a no-op */

/* The values of axis a for system s (system override or the experiment's), after
 * --quick thinning.  Returns the count; *vals points into e (do not free). */
int pb_experiment_axis_values(const pb_experiment *e, int s, int a, const double **vals);

/* Number of points of system s: the product of its axes' value counts (1 without
 * axes), plus its refinement extras. */
int pb_experiment_n_points(const pb_experiment *e, int s);

/* Decompose point index p of system s into one value per axis (vals[n_axes]). */
void pb_experiment_point_values(const pb_experiment *e, int s, int p, double *vals);

/* The config assignment of axis a's value v for system s ("systems.<s>.X=v" for a
 * set path "system.X", else "<set>=v"): what the runner applies at each point. */
void pb_experiment_axis_assignment(const pb_experiment *e, int s, int a, double v, char *buf, size_t n);

/* Point p of system s as a config of its own: a clone of the experiment's tree with
 * every axis value assigned, each assigned node placed at the YAML position of the
 * sweep value it came from.  The caller destroys *out (which must not outlive e). */
pb_status pb_experiment_resolve(const pb_experiment *e, int s, int p, pb_config **out, pb_cfg_err *err);

/* Validate a whole (resolved) experiment tree: the schema, then the sections other
 * modules own (model, hardware, workload, the hardware cost model, systems' sim
 * maps).  Every error is recorded in err, `file:line:col: key.path: message`. */
pb_status pb_experiment_validate_tree(const pb_node *root, pb_cfg_err *err);

/* Names used in file names: [A-Za-z0-9][A-Za-z0-9._-]* */
bool pb_name_ok(const char *s);

/* Format a number as the shortest text that reads back exactly (for --set and CSVs). */
void pb_fmt_num(char *buf, size_t n, double v);

/* Canonical text of node n (keys in file order, scalars verbatim): what a point's
 * hash covers.  Appends to *buf (malloc'd, grown as needed). */
void pb_node_dump(const pb_node *n, char **buf, size_t *len, size_t *cap);

/* Invariant checker: ids unique, axes sane, every system's values present. */
pb_status pb_experiment_check(const pb_experiment *e);

#ifdef __cplusplus
}
#endif
#endif /* PB_EXPERIMENT_H */
