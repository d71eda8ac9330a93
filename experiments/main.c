/* main.c -- the pagedbench command line: dispatch to a subcommand.
 *
 *   build/pagedbench <command> [options]     (pagedbench <command> --help for each)
 * Exit status: 0 ok, 1 runtime failure, 2 usage or config error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "pb.h"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} command;

static const command COMMANDS[] = {
    {"run",     pb_cmd_run,     "run an experiment YAML (all systems x sweep points)"},
    {"merge",   pb_cmd_merge,   "assemble a sharded sweep (run --shard I/N) into its CSV and report"},
    {"trace",   pb_cmd_trace,   "write a request trace (CSV) for a dataset and arrival process"},
    {"table1",  pb_cmd_table1,  "print the paper's Table 1 (model sizes, KV capacity)"},
    {"list",    pb_cmd_list,    "list experiments, models, hardware, policies"},
    {"kernels", pb_cmd_kernels, "check and benchmark the attention/cache kernels"},
    {"profile", pb_cmd_profile, "measure step latencies on a GPU into a cost-model profile"},
    {"bench",   pb_cmd_bench,   "micro-benchmarks: scheduler, block manager, simulator"},
    {"validate", pb_cmd_validate, "predict public GPU step measurements with the sim; measured vs predicted"},
    {"serve",   pb_cmd_serve,   "an OpenAI-compatible HTTP server over one system, the engine online"},
    {"loadgen", pb_cmd_loadgen, "replay a trace against an OpenAI-compatible server (libcurl), run's outputs"},
    {"plot",    pb_cmd_plot,    "plot any results CSV (x vs y per system) in the paper's style"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: pagedbench <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < PB_ARRAY_LEN(COMMANDS); i++)
        fprintf(f, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(f, "\n`pagedbench <command> --help` describes each; `pagedbench --version` the build.  Exit status: 0 ok, "
               "1 runtime failure, 2 usage or config error.\n");
#ifndef PB_HAVE_CUDA
    fprintf(f, "This build has no CUDA: the cuda executor and the GPU kernels are unavailable.\n");
#endif
}

int pb_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return PB_EXIT_USAGE; }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("pagedbench %s\n", pb_git_rev());
        return PB_EXIT_OK;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return PB_EXIT_OK;
    }
    for (size_t i = 0; i < PB_ARRAY_LEN(COMMANDS); i++) {
        if (strcmp(argv[1], COMMANDS[i].name)) continue;
        for (int k = 2; k < argc; k++)
            if (!strcmp(argv[k], "--version")) {
                printf("pagedbench %s\n", pb_git_rev());
                return PB_EXIT_OK;
            }
        /* `--opt=value` for every command: run, trace, plot, table1 and list parse with
           getopt_long; for the others it is split into `--opt value` here */
        if (!strcmp(argv[1], "run") || !strcmp(argv[1], "trace") || !strcmp(argv[1], "plot") ||
            !strcmp(argv[1], "table1") || !strcmp(argv[1], "list"))
            return COMMANDS[i].fn(argc - 1, argv + 1);
        char **av = pb_xcalloc((size_t)(2 * argc + 1), sizeof *av);
        int n = 0;
        for (int k = 1; k < argc; k++) {
            char *eq = !strncmp(argv[k], "--", 2) ? strchr(argv[k], '=') : NULL;
            if (eq) {
                *eq = 0;
                av[n++] = argv[k];
                av[n++] = eq + 1;
            } else
                av[n++] = argv[k];
        }
        int rc = COMMANDS[i].fn(n, av);
        free(av);
        return rc;
    }
    fprintf(stderr, "pagedbench: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return PB_EXIT_USAGE;
}
