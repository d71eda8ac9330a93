/* cli.h -- the command line every pagedbench command shares (getopt_long underneath).
 *
 * A command declares its options once, in a table of pb_cli_opt, and gets from that
 * table its parsing (`--opt VALUE`, `--opt=VALUE`, `-x VALUE` for the options with a
 * short letter), its help text (one format for every command: usage lines, what it
 * does, the options, further notes, the exit statuses) and its errors, one format:
 *
 *   pagedbench CMD: MESSAGE
 *   Try 'pagedbench CMD --help'.
 *
 * on stderr, exit status 2, nothing on stdout.  `-h`, `--help` (help on stdout, exit 0)
 * and `--version` (the build's revision, exit 0) are every command's, not in its table.
 *
 *   static const pb_cli_opt OPTS[] = {
 *       {"jobs", 'j', "N", "worker processes (default 1)"},
 *       {"quick", O_QUICK, NULL, "short traces"},
 *       {NULL, 0, NULL, NULL}};
 *   static const pb_cli CLI = {"run", "[EXPERIMENT.yaml ...] [options]", "Runs ...", OPTS, NULL,
 *                              "a point failed", NULL};
 *   pb_cli_parser p;
 *   pb_cli_begin(&p, &CLI, argc, argv);
 *   for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;)
 *       switch (c) {
 *       case 'j': pb_cli_int(&p, 1, 1024, &jobs); break;
 *       ...
 *       }
 *   if (p.rc >= 0) return p.rc;          (help or version printed: 0; usage error: 2)
 *   operands: argv[p.optind .. argc)     (getopt_long moved them to the end, in order)
 *
 * Exit statuses (PB_EXIT_*): 0 ok, 1 runtime failure (pb_cli.exit1 says what it means
 * for the command), 2 usage or config error, 77 skipped (pb_cli.exit77 says when; NULL
 * for a command that never skips). */
#ifndef PB_CLI_H
#define PB_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PB_CLI_END (-1)
#define PB_CLI_MAX_OPTS 48

typedef struct {
    const char *name;   /* long name without "--"; NULL ends a table                     */
    int key;            /* pb_cli_next's value: a short letter ('j': also -j) or >= 256     */
    const char *arg;    /* the value's name in the help ("N", "FILE"); NULL: a flag         */
    const char *help;   /* one or more lines, '\n' separated                                */
} pb_cli_opt;

typedef struct {
    const char *cmd;       /* "run", or "bench scheduler"                                */
    const char *usage;     /* after "usage: pagedbench CMD "; '\n' starts another usage line */
    const char *about;     /* what the command does (paragraphs, '\n' separated)          */
    const pb_cli_opt *opts;
    const char *notes;     /* after the options (outputs, examples); NULL for none       */
    const char *exit1;     /* what status 1 means here; NULL: "runtime failure"            */
    const char *exit77;    /* when the command exits 77; NULL: never                      */
} pb_cli;

typedef struct {
    const pb_cli *cli;
    int argc;
    char **argv;
    const char *arg;       /* the current option's value (NULL for a flag)                */
    const char *opt;       /* the current option as written ("--jobs"), for messages      */
    int optind;            /* after PB_CLI_END: the first operand                         */
    int rc;                /* -1: go on; else the command's exit status (0 help/version, 2 error) */
    struct option longs[PB_CLI_MAX_OPTS + 3];
    char shorts[3 * PB_CLI_MAX_OPTS + 4];
} pb_cli_parser;

/* Start parsing argv[1..argc) (argv[0] is the command's name). */
void pb_cli_begin(pb_cli_parser *p, const pb_cli *c, int argc, char **argv);
/* The next option's key, or PB_CLI_END: no more options, or --help / --version answered,
 * or a usage error reported (p->rc says which). */
int pb_cli_next(pb_cli_parser *p);

/* The help text (to stdout for --help). */
void pb_cli_help(const pb_cli *c, FILE *f);
/* Report a usage error in the one format (printf-style message); returns PB_EXIT_USAGE. */
int pb_cli_fail(const pb_cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for the option being parsed: "--jobs: MESSAGE", and p->rc = 2. */
void pb_cli_bad(pb_cli_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The current option's value as an integer in [lo, hi] / a number in [lo, hi]: true and
 * *out set, or false with the error reported (pb_cli_bad). */
bool pb_cli_int(pb_cli_parser *p, int64_t lo, int64_t hi, int64_t *out);
bool pb_cli_num(pb_cli_parser *p, double lo, double hi, double *out);

/* Make the folders above a file the command is about to write (mkdir -p of its dirname).
 * 0, or -1 with "pagedbench CMD: cannot create DIR: reason" on stderr. */
int pb_cli_make_parent(const pb_cli *c, const char *path);

/* Progress on stderr for runs longer than a few seconds: a line redrawn in place with
 * done/total, elapsed time and ETA, shown only when stderr is a terminal, not quiet,
 * and once `delay_s` has passed since pb_cli_progress_start. */
typedef struct {
    bool on;               /* stderr is a terminal and not quiet                           */
    bool shown;            /* a line is on the screen (pb_cli_progress_clear erases it)    */
    double t0, delay_s;
} pb_cli_progress;

void pb_cli_progress_start(pb_cli_progress *pr, bool quiet, double delay_s);
void pb_cli_progress_show(pb_cli_progress *pr, int64_t done, int64_t total, const char *unit, const char *what);
void pb_cli_progress_clear(pb_cli_progress *pr);

#ifdef __cplusplus
}
#endif
#endif /* PB_CLI_H */
