/* cmd_bench.c -- `pagedbench bench <name> [--csv]`: dispatch to a micro-benchmark. */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "commands.h"
#include "pb.h"

static const struct { const char *name; int (*fn)(int, char **); const char *what; } BENCHES[] = {
    {"scheduler", pb_bench_scheduler, "us per scheduler step at 32/128/256 running seqs; block ops/s"},
    {"sim",       pb_bench_sim,       "simulated requests per CPU-second (1 h ShareGPT, OPT-13B)"},
    {"costmodel", pb_bench_costmodel, "a real engine run vs the cost model's prediction of it (step, TTFT, TPOT errors)"},
};

int pb_cmd_bench(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        FILE *f = argc < 2 ? stderr : stdout;
        fprintf(f, "usage: pagedbench bench <name> [options]   (pagedbench bench <name> --help)\n\nbenchmarks:\n");
        for (size_t i = 0; i < PB_ARRAY_LEN(BENCHES); i++)
            fprintf(f, "  %-10s %s\n", BENCHES[i].name, BENCHES[i].what);
        return argc < 2 ? PB_EXIT_USAGE : PB_EXIT_OK;
    }
    for (size_t i = 0; i < PB_ARRAY_LEN(BENCHES); i++)
        if (!strcmp(argv[1], BENCHES[i].name)) return BENCHES[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "pagedbench bench: unknown benchmark '%s'\n", argv[1]);
    return PB_EXIT_USAGE;
}
