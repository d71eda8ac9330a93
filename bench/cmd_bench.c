/* cmd_bench.c -- `pagedbench bench <name> [options]`: dispatch to a micro-benchmark
 * (each parses its own options with cli.h: `pagedbench bench <name> --help`). */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "pb.h"

static const struct { const char *name; int (*fn)(int, char **); const char *what; } BENCHES[] = {
    {"scheduler", pb_bench_scheduler, "µs per engine step (p50, mean, p99) at 32/128/256 running seqs; block ops/s"},
    {"sim",       pb_bench_sim,       "simulated requests per CPU-second (1 h ShareGPT, OPT-13B)"},
    {"costmodel", pb_bench_costmodel, "a real engine run vs the cost model's prediction of it (step, TTFT, TPOT errors)"},
};

static const pb_cli_opt NO_OPTS[] = {{NULL, 0, NULL, NULL}};
static const pb_cli BENCH_CLI = {
    "bench", "<name> [options]   (pagedbench bench <name> --help)",
    "Micro-benchmarks; each prints aligned lines, or `metric,value,unit` rows with --csv.\n"
    "benchmarks:\n"
    "  scheduler  µs per engine step (p50, mean, p99) at 32/128/256 running seqs; block ops/s\n"
    "  sim        simulated requests per CPU-second (1 h ShareGPT, OPT-13B)\n"
    "  costmodel  a real engine run vs the cost model's prediction of it (step, TTFT, TPOT errors)",
    NO_OPTS, NULL, NULL, "costmodel without a GPU"};

int pb_cmd_bench(int argc, char **argv) {
    if (argc >= 2 && argv[1][0] != '-') {
        for (size_t i = 0; i < PB_ARRAY_LEN(BENCHES); i++)
            if (!strcmp(argv[1], BENCHES[i].name)) return BENCHES[i].fn(argc - 1, argv + 1);
        return pb_cli_fail(&BENCH_CLI, "unknown benchmark '%s' (scheduler, sim, costmodel)", argv[1]);
    }
    pb_cli_parser p;
    pb_cli_begin(&p, &BENCH_CLI, argc, argv);
    while (pb_cli_next(&p) != PB_CLI_END) {}
    if (p.rc >= 0) return p.rc;
    return pb_cli_fail(&BENCH_CLI, "name a benchmark (scheduler, sim, costmodel)");
}
