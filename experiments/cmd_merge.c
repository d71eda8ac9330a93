/* cmd_merge.c -- `pagedbench merge`: assemble a sharded sweep's results.
 *
 *   pagedbench run  --figure fig12 --shard I/8 --results /shared/r     (8 tasks, any hosts)
 *   pagedbench merge --figure fig12 /shared/r                          (one folder, shared)
 *   pagedbench merge X.yaml r1 r2 r3 --results out                     (folders per host)
 *
 * Every point file under DIR/points/ of each folder is brought into the output folder
 * (--results, default the first DIR) when it is not there yet -- a point file's name is
 * its content key (point_key.h), so files never clash -- and then the output folder is
 * assembled exactly as `pagedbench run ... --report-only` does it: knee refinement
 * replayed from the finished points, then the CSV, JSON sidecar and paper-vs-ours
 * report, byte for byte what a single-host run writes.  The experiments are loaded and
 * checked first: a wrong figure, file or key copies nothing.  The experiments and the options
 * that pick points (--quick, --set) must be the run's.  A point no shard finished is
 * named (file and label) and the merge exits 1, writing no CSV.
 * Exit: 0 ok, 1 a point missing or a copy failed, 2 usage or config error. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "pb.h"

enum { O_RESULTS = 256, O_FIGURE, O_SET, O_QUICK, O_NO_REPORT, O_ALL, O_QUIET, O_ALLOW_REJECTED };
static const pb_cli_opt MERGE_OPTS[] = {
    {"results", O_RESULTS, "OUT", "where the merged results go (default: the first DIR); the point files of\n"
                                  "the other folders are copied into OUT/points/"},
    {"figure", O_FIGURE, "FIG", "the figure the shards ran (repeatable)"},
    {"all", O_ALL, NULL, "every figure (as `run --all`)"},
    {"quick", O_QUICK, NULL, "as the shards were run"},
    {"set", O_SET, "K=V", "as the shards were run (repeatable)"},
    {"allow-rejected", O_ALLOW_REJECTED, NULL, "as `run --allow-rejected`"},
    {"no-report", O_NO_REPORT, NULL, "do not print the paper-vs-ours table"},
    {"quiet", O_QUIET, NULL, "no progress lines"},
    {NULL, 0, NULL, NULL}};
static const pb_cli MERGE_CLI = {
    "merge", "[EXPERIMENT.yaml ... | --figure FIG ...] [options] DIR ...",
    "Assembles a sharded sweep: DIR is a results folder a shard wrote (`pagedbench run ...\n"
    "--shard I/N --results DIR`); several folders (one per host) or one shared folder.\n"
    "Writes OUT/<figure or experiment>.csv, .json and _report.md, byte-identical to a\n"
    "single-host `pagedbench run`.  The experiments and --quick / --set must be the shards'.",
    MERGE_OPTS, NULL, "a point is missing or a copy failed", NULL};

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* Copy src (a regular file: pb.h's input rules) to dst, through a unique temporary
   renamed over it.  PB_OK, or PB_ERR_IO / PB_ERR_INVALID with why in err. */
static pb_status copy_file(const char *src, const char *dst, char *err, size_t errlen) {
    char *text;
    size_t len;
    pb_status st = pb_input_read(src, false, &text, &len, err, errlen);
    if (st) return st;
    st = pb_write_file_atomic(dst, text, len);
    if (st) snprintf(err, errlen, "cannot write %s: %s", dst, strerror(errno));
    free(text);
    return st;
}

/* Bring every DIR/points/<exp>/<name>.pt missing from out/points/<exp>/ into it.
 * Returns the number of failures; *copied counts the files copied. */
static int gather(const char *dir, const char *out, int *copied) {
    char pd[4096];
    snprintf(pd, sizeof pd, "%s/points", dir);
    DIR *d = opendir(pd);
    if (!d) {
        fprintf(stderr, "merge: warning: %s: no points folder (%s)\n", dir, strerror(errno));
        return 0;   /* a missing point is reported by name below */
    }
    int bad = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char sub[4400], osub[4400];
        snprintf(sub, sizeof sub, "%s/%s", pd, de->d_name);
        if (!is_dir(sub)) continue;
        snprintf(osub, sizeof osub, "%s/points", out);
        mkdir(out, 0777);
        mkdir(osub, 0777);
        snprintf(osub, sizeof osub, "%s/points/%s", out, de->d_name);
        if (mkdir(osub, 0777) && errno != EEXIST) {
            fprintf(stderr, "merge: cannot create %s: %s\n", osub, strerror(errno));
            bad++;
            continue;
        }
        DIR *e = opendir(sub);
        if (!e) continue;
        struct dirent *fe;
        while ((fe = readdir(e))) {
            if (!ends_with(fe->d_name, ".pt")) continue;   /* a temporary ends in .tmp.<host>.<pid>.<n> */
            char src[4800], dst[4800];
            snprintf(src, sizeof src, "%s/%s", sub, fe->d_name);
            snprintf(dst, sizeof dst, "%s/%s", osub, fe->d_name);
            if (access(dst, F_OK) == 0) continue;   /* same name = same key: already there */
            char why[4400];
            if (copy_file(src, dst, why, sizeof why)) {
                fprintf(stderr, "merge: cannot copy %s to %s: %s\n", src, dst, why);
                bad++;
            } else
                (*copied)++;
        }
        closedir(e);
    }
    closedir(d);
    return bad;
}

/* The folders' point files into out, once `run` has resolved the experiments. */
typedef struct {
    const char **dirs;
    int n;
    const char *out;
} gather_job;

static int gather_all(void *user) {
    const gather_job *g = user;
    int copied = 0, bad = 0;
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->dirs[i], g->out)) bad += gather(g->dirs[i], g->out, &copied);
    if (g->n > 1 || strcmp(g->dirs[0], g->out))
        fprintf(stderr, "==> merge: %d point file(s) copied into %s/points from %d folder(s)%s\n", copied, g->out,
                g->n, bad ? " (some failed)" : "");
    return bad ? PB_EXIT_RUNTIME : PB_EXIT_OK;
}

int pb_cmd_merge(int argc, char **argv) {
    /* split: folders to merge, the rest goes to `run --report-only` */
    const char **dirs = pb_xcalloc((size_t)argc + 1, sizeof *dirs);
    char **rargv = pb_xcalloc((size_t)2 * argc + 8, sizeof *rargv);
    int nd = 0, nr = 0;
    const char *out = NULL;
    rargv[nr++] = (char *)"run";
    pb_cli_parser p;
    pb_cli_begin(&p, &MERGE_CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        switch (c) {
        case O_RESULTS: out = p.arg; break;
        case O_FIGURE: rargv[nr++] = (char *)"--figure"; rargv[nr++] = (char *)p.arg; break;
        case O_SET: rargv[nr++] = (char *)"--set"; rargv[nr++] = (char *)p.arg; break;
        case O_QUICK: rargv[nr++] = (char *)"--quick"; break;
        case O_NO_REPORT: rargv[nr++] = (char *)"--no-report"; break;
        case O_ALL: rargv[nr++] = (char *)"--all"; break;
        case O_QUIET: rargv[nr++] = (char *)"--quiet"; break;
        case O_ALLOW_REJECTED: rargv[nr++] = (char *)"--allow-rejected"; break;
        }
    }
    int rc = p.rc >= 0 ? p.rc : PB_EXIT_OK;
    for (int i = p.optind; p.rc < 0 && rc == PB_EXIT_OK && i < argc; i++) {
        const char *a = argv[i];
        if (ends_with(a, ".yaml") || ends_with(a, ".yml")) rargv[nr++] = argv[i];
        else if (is_dir(a)) dirs[nd++] = a;
        else rc = pb_cli_fail(&MERGE_CLI, "%s: neither an experiment YAML nor a results folder", a);
    }
    if (p.rc < 0 && rc == PB_EXIT_OK && (nd == 0 || nr == 1))
        rc = pb_cli_fail(&MERGE_CLI, "name the experiments (YAML files or --figure) and at least one results folder");
    if (p.rc < 0 && rc == PB_EXIT_OK) {   /* p.rc >= 0: --help / --version done, or a usage error */
        gather_job g = {dirs, nd, out ? out : dirs[0]};
        rargv[nr++] = (char *)"--report-only";
        rargv[nr++] = (char *)"--results";
        rargv[nr++] = (char *)g.out;
        rc = pb_cmd_run_hook(nr, rargv, gather_all, &g);   /* gathers only once every experiment checks out */
    }
    free(dirs);
    free(rargv);
    return rc;
}
