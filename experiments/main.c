/* main.c -- the pagedbench command line: dispatch to a subcommand.
 *
 *   pagedbench <command> [options]      (pagedbench <command> --help, or pagedbench help <command>)
 * Every command parses its options with the shared layer of cli.h: one help format, one
 * error format, the same exit statuses (0 ok, 1 runtime failure, 2 usage or config
 * error, 77 skipped where a command says so). */
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
    {"run",      pb_cmd_run,      "run an experiment YAML or a figure (all systems x sweep points)"},
    {"merge",    pb_cmd_merge,    "assemble a sharded sweep (run --shard I/N) into its CSV and report"},
    {"compare",  pb_cmd_compare,  "metric-by-metric differences of two result files (ours or vLLM's JSON)"},
    {"plot",     pb_cmd_plot,     "plot results CSVs (x vs y per system) in the paper's style"},
    {"trace",    pb_cmd_trace,    "write a request trace (CSV) for a dataset and arrival process"},
    {"table1",   pb_cmd_table1,   "print the paper's Table 1 (model sizes, KV capacity)"},
    {"list",     pb_cmd_list,     "list figures, experiments, models, hardware, policies"},
    {"validate", pb_cmd_validate, "predict public GPU step measurements with the sim; measured vs predicted"},
    {"kernels",  pb_cmd_kernels,  "check and benchmark the attention/cache kernels"},
    {"profile",  pb_cmd_profile,  "measure step latencies on a GPU into a cost-model profile"},
    {"bench",    pb_cmd_bench,    "micro-benchmarks: scheduler, simulator, cost model"},
    {"serve",    pb_cmd_serve,    "an OpenAI-compatible HTTP server over one system, the engine online"},
    {"loadgen",  pb_cmd_loadgen,  "replay a trace against an OpenAI-compatible server (libcurl), run's outputs"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: pagedbench <command> [options]\n"
               "       pagedbench help <command>      (= pagedbench <command> --help)\n"
               "       pagedbench --version\n\ncommands:\n");
    for (size_t i = 0; i < PB_ARRAY_LEN(COMMANDS); i++) fprintf(f, "  %-9s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(f, "\nResults go to stdout, progress and diagnostics to stderr.\n"
               "exit status: 0 ok, 1 runtime failure, 2 usage or config error, 77 skipped (a command\n"
               "that needs a GPU or a package the machine lacks; each command's --help says).\n");
#ifndef PB_HAVE_CUDA
    fprintf(f, "This build has no CUDA: the cuda executor and the GPU kernels are unavailable.\n");
#endif
}

static const command *find(const char *name) {
    for (size_t i = 0; i < PB_ARRAY_LEN(COMMANDS); i++)
        if (!strcmp(name, COMMANDS[i].name)) return &COMMANDS[i];
    return NULL;
}

static int unknown(const char *name) {
    fprintf(stderr, "pagedbench: unknown command '%s'\nTry 'pagedbench help'.\n", name);
    return PB_EXIT_USAGE;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "pagedbench: name a command\nTry 'pagedbench help'.\n");
        return PB_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("pagedbench %s\n", pb_git_rev());
        return PB_EXIT_OK;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        if (argc > 2 && strcmp(argv[1], "help") == 0) {   /* pagedbench help CMD [SUB] */
            const command *c = find(argv[2]);
            if (!c) return unknown(argv[2]);
            char *av[4] = {argv[2], argc > 3 ? argv[3] : (char *)"--help", argc > 3 ? (char *)"--help" : NULL, NULL};
            return c->fn(argc > 3 ? 3 : 2, av);
        }
        usage(stdout);
        return PB_EXIT_OK;
    }
    const command *c = find(argv[1]);
    return c ? c->fn(argc - 1, argv + 1) : unknown(argv[1]);
}
