/* commands.h -- the subcommands of the pagedbench CLI.
 *
 * Each is `int pb_cmd_<name>(int argc, char **argv)` with argv[0] = the command name,
 * returns an exit code (PB_EXIT_OK / PB_EXIT_RUNTIME / PB_EXIT_USAGE / PB_EXIT_SKIP),
 * parses its options with the shared layer of cli.h (one help and error format), and
 * lives with the module it belongs to:
 *   run      experiments/cmd_run.c      run an experiment YAML (sweeps, results CSV)
 *   merge    experiments/cmd_merge.c    assemble the shards of a sweep (run --shard I/N)
 *   compare  experiments/cmd_compare.c  metric-by-metric differences of two result files
 *   trace    experiments/cmd_trace.c      write a request trace as CSV
 *   table1   experiments/cmd_table1.c   the paper's Table 1 from the spec files
 *   list     experiments/cmd_list.c     experiments, models, hardware, policies
 *   kernels  experiments/cmd_kernels.c      kernel checks, benchmarks, regression baselines
 *   profile  experiments/cmd_profile.c       measure step latencies on a GPU for the sim
 *   bench    bench/cmd_bench.c          micro-benchmarks (scheduler, sim, ...)
 *   validate experiments/cmd_validate.c the sim against public GPU step measurements
 *   plot     experiments/cmd_plot.c     a figure of any results CSV (gnuplot, plots/style.gp)
 *   serve    serve/cmd_serve.c          an OpenAI-compatible server over the engine, online
 *   loadgen  serve/cmd_loadgen.c        replay a trace against an OpenAI-compatible server */
#ifndef PB_COMMANDS_H
#define PB_COMMANDS_H

int pb_cmd_run(int argc, char **argv);
/* `run`, calling after_resolve(user) once every experiment is loaded and checked and
 * before anything runs (merge gathers the shards' point files there); its exit code
 * joins the run's (the worse wins).  Not called when the command line is wrong. */
int pb_cmd_run_hook(int argc, char **argv, int (*after_resolve)(void *user), void *user);
int pb_cmd_merge(int argc, char **argv);
int pb_cmd_trace(int argc, char **argv);
int pb_cmd_table1(int argc, char **argv);
int pb_cmd_list(int argc, char **argv);
int pb_cmd_kernels(int argc, char **argv);
int pb_cmd_profile(int argc, char **argv);
int pb_cmd_bench(int argc, char **argv);
int pb_cmd_validate(int argc, char **argv);
int pb_cmd_plot(int argc, char **argv);
int pb_cmd_serve(int argc, char **argv);
int pb_cmd_loadgen(int argc, char **argv);
int pb_cmd_compare(int argc, char **argv);

/* The hardware spec (experiments/hardware/<name>.yaml) of a CUDA device name, e.g.
 * "NVIDIA H100 80GB HBM3" -> "h100-sxm", "NVIDIA A100 80GB PCIe" -> "a100-80gb-pcie";
 * NULL when no spec describes that board (H100 PCIe / NVL, H200 NVL, GH200, A100 40GB
 * PCIe, anything else).  `pagedbench kernels` uses it unless --hw names one. */
const char *pb_kernels_hw_for_device(const char *device);

/* Where a run's results go unless --results says otherwise: a folder of the current
 * directory that .gitignore lists (a run inside a checkout never changes `git status`);
 * plots go to PB_OUT_DIR/plots.  The committed reference results (results/, plots/out/)
 * are written only by `./run_all.sh all`. */
#define PB_OUT_DIR "out"

#endif /* PB_COMMANDS_H */
