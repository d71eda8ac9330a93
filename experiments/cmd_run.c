/* cmd_run.c -- `pagedbench run`: run experiment YAMLs or whole figures.
 *
 *   pagedbench run experiments/fig12_opt13b_sharegpt.yaml --set workload.duration_s=600
 *   pagedbench run --figure fig12 --jobs 2 [--quick]
 *   pagedbench run --all --jobs 2
 * A figure = every experiments/<name>.yaml whose `figure:` is that id (fig18 = fig18a +
 * fig18b, fig19 = fig19a +
 * fig19b).  For each figure: run all points (runner.h: parallel, resumable), refine
 * around each series' knee, merge into results/<figure>.csv (+ .json sidecar), and
 * print the paper-vs-ours table (report.h, also results/<figure>_report.md).
 * Exit: 0 ok, 1 a point failed, 2 usage or config error (file:line:col). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "config.h"
#include "experiment.h"
#include "fig18a.h"     /* pb_fig18a_write (cost model + GPU kernels) */
#include "fig_sim.h"    /* pb_fig1_write, pb_fig19a_write (cost model) */
#include "pb.h"
#include "report.h"
#include "runner.h"
#include "spec.h"
#include "system.h"

/* every figure `--all` runs, in order (fig1, fig11, fig18a, fig19a come from other modules) */
static const char *const ALL_FIGURES[] = {"fig1", "fig2", "fig11", "fig12", "fig13", "fig14", "fig15",
                                          "fig16", "fig17", "fig18a", "fig18b", "fig19a", "fig19b"};

static void usage(FILE *f) {
    fprintf(f,
            "usage: pagedbench run [EXPERIMENT.yaml ...] [--figure FIG ...] [--all] [options]\n"
            "  --figure FIG   every experiments/*.yaml with `figure: FIG` (fig2 fig12 ... fig19b;\n"
            "                 fig18 = 18a+18b, fig19 = 19a+19b; fig1 fig11 fig18a fig19a are computed directly)\n"
            "  --all          every figure: %s",
            ALL_FIGURES[0]);
    for (size_t i = 1; i < PB_ARRAY_LEN(ALL_FIGURES); i++) fprintf(f, " %s", ALL_FIGURES[i]);
    fprintf(f,
            "\n  --jobs N       worker processes (default 1); results are identical for every N\n"
            "  --quick        each YAML's quick: settings (shorter traces, fewer points; stated in the YAML)\n"
            "  --set K=V      override a config value in every experiment (repeatable)\n"
            "  --fresh        recompute points even when results/points/ has them\n"
            "  --results DIR  where results go (default results)\n"
            "  --summary      print vLLM benchmark_serving's block for every point\n"
            "  --quiet        no per-point lines\n"
            "  --check        validate the YAMLs and count the points; run nothing\n"
            "  --no-report    do not print the paper-vs-ours table\n"
            "  --report-only  run nothing: rebuild the CSV and the table from the finished points\n"
            "Outputs: <DIR>/<figure>.csv (+ .json, _report.md), <DIR>/points/<experiment>/*.pt\n"
            "Exit status: 0 ok, 1 a point failed, 2 usage or config error.\n");
}

/* The results folder and its parents (mkdir -p), made only once the configs are valid. */
static int make_results_dir(const char *dir) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0777) && errno != EEXIST) break;
            *p = '/';
        }
    if (mkdir(tmp, 0777) && errno != EEXIST) {
        fprintf(stderr, "run: cannot create %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- finding a figure's experiments ---- */
typedef struct {
    char path[1024];
    char panel[64];
    char name[128];
} exp_file;

static int exp_file_cmp(const void *a, const void *b) {
    const exp_file *x = a, *y = b;
    int c = strcmp(x->panel, y->panel);
    return c ? c : strcmp(x->name, y->name);
}

/* Paths of the YAMLs in dir whose figure is fig (sorted by panel, name).  Returns the count. */
static int find_figure(const char *dir, const char *fig, exp_file **out) {
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".yaml")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        pb_config *c;
        pb_cfg_err err;
        pb_cfg_err_clear(&err);
        if (pb_config_load(path, &c, &err)) continue;   /* reported when run directly */
        const pb_node *r = pb_config_root(c);
        if (!strcmp(pb_node_str(r, "figure", ""), fig)) {
            if (n == cap) { cap = cap ? 2 * cap : 16; *out = pb_xrealloc(*out, (size_t)cap * sizeof **out); }
            snprintf((*out)[n].path, sizeof (*out)[n].path, "%s", path);
            snprintf((*out)[n].panel, sizeof (*out)[n].panel, "%s", pb_node_str(r, "panel", ""));
            snprintf((*out)[n].name, sizeof (*out)[n].name, "%s", pb_node_str(r, "name", ""));
            n++;
        }
        pb_config_destroy(c);
    }
    closedir(d);
    if (n > 1) qsort(*out, (size_t)n, sizeof **out, exp_file_cmp);
    return n;
}

/* ---- JSON sidecar ---- */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static pb_status write_sidecar(const char *path, const char *figure, pb_experiment *const *exps, int n, bool quick) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return PB_ERR_IO;
    fprintf(f, "{\n  \"figure\": ");
    json_str(f, figure);
    fprintf(f, ",\n  \"git_revision\": ");
    json_str(f, pb_git_rev());
    fprintf(f, ",\n  \"quick\": %s,\n  \"experiments\": [\n", quick ? "true" : "false");
    for (int i = 0; i < n; i++) {
        const pb_experiment *e = exps[i];
        char desc[512];
        pb_system_describe_executor(e, desc, sizeof desc);
        char *dump = NULL;
        size_t dl = 0, dc = 0;
        pb_node_dump(pb_config_root(e->cfg), &dump, &dl, &dc);
        fprintf(f, "    {\"name\": ");
        json_str(f, e->name);
        fprintf(f, ", \"file\": ");
        const char *base = strrchr(e->path, '/');
        json_str(f, base ? base + 1 : e->path);
        fprintf(f, ", \"seed\": %llu, \"executor\": ", (unsigned long long)e->seed);
        json_str(f, e->executor);
        fprintf(f, ", \"device\": ");
        json_str(f, desc);
        fprintf(f, ", \"knee_threshold\": %g,\n     \"config\": ", e->knee_threshold);
        json_str(f, dump ? dump : "");
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
        free(dump);
    }
    fprintf(f, "  ]\n}\n");
    fclose(f);
    pb_status st = pb_write_file_atomic(path, text, len);
    free(text);
    return st;
}

/* ---- running a set of experiments as one figure ---- */
typedef struct {
    int jobs;
    bool quick, fresh, summary, quiet, check, report, report_only;
    const char *results;
    const char **sets;
    int n_sets;
} run_opts;

static int load_all(const char *const *paths, int n, const run_opts *o, pb_experiment ***out) {
    pb_experiment **exps = pb_xcalloc((size_t)n + 1, sizeof *exps);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        pb_cfg_err err;
        pb_cfg_err_clear(&err);
        if (pb_experiment_load(paths[i], o->sets, o->n_sets, o->quick, &exps[i], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            if (err.count > PB_CFG_MAX_ERRORS) fprintf(stderr, "(%d more errors)\n", err.count - PB_CFG_MAX_ERRORS);
            bad = 1;
        }
    }
    /* every point of every experiment, checked before anything runs or is written */
    for (int i = 0; i < n && !bad; i++) {
        pb_cfg_err err;
        pb_cfg_err_clear(&err);
        if (pb_system_check(exps[i], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            bad = 1;
        }
    }
    for (int i = 0; i < n && !bad; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(exps[i]->name, exps[j]->name)) {
                fprintf(stderr, "%s: name '%s' is also used by %s\n", exps[i]->path, exps[i]->name, exps[j]->path);
                bad = 1;
            }
    if (bad) {
        for (int i = 0; i < n; i++) pb_experiment_destroy(exps[i]);
        free(exps);
        return -1;
    }
    *out = exps;
    return 0;
}

/* Run exps as one group and write <results>/<out>.csv; figure picks the report. */
static int run_group(const char *out, const char *figure, pb_experiment **exps, int n, const run_opts *o) {
    int total = 0;
    for (int i = 0; i < n; i++)
        for (int s = 0; s < exps[i]->n_systems; s++) total += pb_experiment_n_points(exps[i], s);
    char desc[512];
    pb_system_describe_executor(exps[0], desc, sizeof desc);
    fprintf(stderr, "==> %s: %d experiment(s), %d grid points, %s%s; git %s\n", figure, n, total, desc,
            o->quick ? ", --quick" : "", pb_git_rev());
    if (o->check) {
        for (int i = 0; i < n; i++) {
            printf("%-28s %-10s panel %-10s %d systems:", exps[i]->name, exps[i]->figure, exps[i]->panel,
                   exps[i]->n_systems);
            for (int s = 0; s < exps[i]->n_systems; s++)
                printf(" %s(%d)", exps[i]->systems[s].id, pb_experiment_n_points(exps[i], s));
            printf("\n");
        }
        return PB_EXIT_OK;
    }
    /* a small run (one YAML, a few points) prints vLLM benchmark_serving's block per point */
    pb_runner_opts ro = {o->jobs, o->results, o->fresh, o->summary || total <= 8, o->quiet, o->quick, -1,
                         pb_system_run_point, NULL};
    pb_runner_stats st, acc = {0};
    double t0 = pb_now_s();
    int failed = 0;
    for (int round = 0;; round++) {
        if (o->report_only) memset(&st, 0, sizeof st);
        else if (pb_runner_run(exps, n, &ro, &st)) failed = 1;
        if (round == 0) acc.reused = st.reused;   /* later rounds re-find this run's points */
        acc.computed += st.computed;
        acc.failed += st.failed;
        ro.fresh = false;   /* a refinement round must not recompute the earlier rounds */
        if (failed) break;
        int added = pb_runner_refine(exps, n, o->results, round);
        if (!added) break;
        fprintf(stderr, "==> %s: knee refinement round %d: %d more points\n", figure, round + 1, added);
    }
    fprintf(stderr, "==> %s: %d points computed, %d reused, %d failed, %.1f s wall\n", figure, acc.computed,
            acc.reused, acc.failed, pb_now_s() - t0);
    if (failed) return PB_EXIT_RUNTIME;

    pb_results res;
    if (pb_runner_collect(exps, n, o->results, &res)) return PB_EXIT_RUNTIME;
    char csv[1200], json[1200], md[1200], paper[1200];
    snprintf(csv, sizeof csv, "%s/%s.csv", o->results, out);
    snprintf(json, sizeof json, "%s/%s.json", o->results, out);
    snprintf(md, sizeof md, "%s/%s_report.md", o->results, out);
    snprintf(paper, sizeof paper, "%s/paper/%s.csv", pb_spec_dir(), figure);
    int rc = PB_EXIT_OK;
    const char *bad_file = pb_results_write_csv(&res, csv) ? csv : write_sidecar(json, figure, exps, n, o->quick) ? json : NULL;
    if (bad_file) {
        pb_log_error("%s: cannot write: %s", bad_file, strerror(errno));
        rc = PB_EXIT_RUNTIME;
    } else {
        fprintf(stderr, "==> %s: wrote %s (%d rows) and %s\n", figure, csv, res.n, json);
        if (o->report) pb_report_figure(figure, csv, paper, exps[0]->knee_threshold, stdout, md);
    }
    pb_results_free(&res);
    return rc;
}

/* Figures other modules compute directly (no sweep): fig1 / fig19a from the cost
 * model (fig_sim.h), fig18a from the cost model and, on a GPU, our kernels
 * (fig18a.h), fig11 from the workloads (`pagedbench trace --fig11`). */
static int run_direct(const char *fig, const run_opts *o) {
    char csv[1200], md[1200], paper[1200];
    snprintf(csv, sizeof csv, "%s/%s.csv", o->results, fig);
    snprintf(md, sizeof md, "%s/%s_report.md", o->results, fig);
    snprintf(paper, sizeof paper, "%s/paper/%s.csv", pb_spec_dir(), fig);
    if (o->check) { printf("%-28s %-10s computed directly (no sweep)\n", fig, fig); return PB_EXIT_OK; }
    if (make_results_dir(o->results)) return PB_EXIT_RUNTIME;
    fprintf(stderr, "==> %s: computed directly (%s); git %s\n", fig,
            !strcmp(fig, "fig11")    ? "dataset length histograms"
            : !strcmp(fig, "fig18a") ? "cost model, A100-40GB; our kernels when a GPU is present"
                                     : "cost model, A100-40GB",
            pb_git_rev());
    double t0 = pb_now_s();
    pb_status st;
    char *text = NULL;
    size_t len = 0;
    FILE *rep = open_memstream(&text, &len);
    if (!rep) return PB_EXIT_RUNTIME;
    if (!strcmp(fig, "fig11")) {
        char *av[] = {(char *)"trace", (char *)"--fig11", csv, NULL};
        st = pb_cmd_trace(3, av) == 0 ? PB_OK : PB_ERR_IO;
        fclose(rep);
        rep = NULL;
        if (!st && o->report) st = pb_report_figure(fig, csv, paper, 0, stdout, md);
    } else {
        char gpu[512] = "";
        if (!strcmp(fig, "fig18a")) {
            st = pb_fig18a_write(pb_spec_dir(), csv, true, rep, gpu, sizeof gpu);
            if (!st) fprintf(stderr, "==> fig18a: GPU measurement %s\n", gpu);
        } else {
            st = !strcmp(fig, "fig1") ? pb_fig1_write(pb_spec_dir(), csv, rep) : pb_fig19a_write(pb_spec_dir(), csv, rep);
        }
        fclose(rep);
        rep = NULL;
        if (!st && text) {
            if (o->report) { fwrite(text, 1, len, stdout); fflush(stdout); }
            pb_write_file_atomic(md, text, len);
        }
    }
    free(text);
    fprintf(stderr, "==> %s: %s %s (%.1f s)\n", fig, st ? "FAILED to write" : "wrote", csv, pb_now_s() - t0);
    return st ? PB_EXIT_RUNTIME : PB_EXIT_OK;
}

static int run_figure(const char *fig, const run_opts *o) {
    if (!strcmp(fig, "fig1") || !strcmp(fig, "fig11") || !strcmp(fig, "fig18a") || !strcmp(fig, "fig19a"))
        return run_direct(fig, o);
    if (!strcmp(fig, "fig19")) {
        int a = run_figure("fig19a", o), b = run_figure("fig19b", o);
        return PB_MAX(a, b);
    }
    if (!strcmp(fig, "fig18")) {
        int a = run_figure("fig18a", o), b = run_figure("fig18b", o);
        return PB_MAX(a, b);
    }
    exp_file *files;
    int n = find_figure(pb_spec_dir(), fig, &files);
    if (n == 0) {
        free(files);
        fprintf(stderr, "run: no experiment YAML in %s has `figure: %s` (try `pagedbench list`)\n", pb_spec_dir(), fig);
        return PB_EXIT_USAGE;
    }
    const char **paths = pb_xcalloc((size_t)n, sizeof *paths);
    for (int i = 0; i < n; i++) paths[i] = files[i].path;
    pb_experiment **exps;
    int rc;
    if (load_all(paths, n, o, &exps)) rc = PB_EXIT_USAGE;
    else {
        rc = !o->check && make_results_dir(o->results) ? PB_EXIT_RUNTIME : run_group(fig, fig, exps, n, o);
        for (int i = 0; i < n; i++) pb_experiment_destroy(exps[i]);
        free(exps);
    }
    free(paths);
    free(files);
    return rc;
}

int pb_cmd_run(int argc, char **argv) {
    if (pb_wants_help(argc, argv)) { usage(stdout); return PB_EXIT_OK; }
    run_opts o = {1, false, false, false, false, false, true, false, "results", NULL, 0};
    const char **files = pb_xcalloc((size_t)argc + 1, sizeof *files), **figs = pb_xcalloc((size_t)argc + 1, sizeof *figs);
    o.sets = pb_xcalloc((size_t)argc + 1, sizeof *o.sets);
    int nf = 0, ng = 0, all = 0, rc = PB_EXIT_OK;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--jobs") || !strcmp(a, "-j")) {
            int64_t j;
            if (!val || !pb_parse_int(val, &j) || j < 1 || j > 1024) { fprintf(stderr, "run: --jobs needs an integer in 1..1024\n"); rc = PB_EXIT_USAGE; break; }
            o.jobs = (int)j;
            i++;
        } else if (!strncmp(a, "--jobs=", 7)) {
            int64_t j;
            if (!pb_parse_int(a + 7, &j) || j < 1 || j > 1024) { fprintf(stderr, "run: --jobs needs an integer in 1..1024\n"); rc = PB_EXIT_USAGE; break; }
            o.jobs = (int)j;
        } else if (!strcmp(a, "--figure")) {
            if (!val) { fprintf(stderr, "run: --figure needs a figure id\n"); rc = PB_EXIT_USAGE; break; }
            figs[ng++] = val;
            i++;
        } else if (!strcmp(a, "--set")) {
            if (!val) { fprintf(stderr, "run: --set needs KEY=VALUE\n"); rc = PB_EXIT_USAGE; break; }
            o.sets[o.n_sets++] = val;
            i++;
        } else if (!strcmp(a, "--results")) {
            if (!val) { fprintf(stderr, "run: --results needs a directory\n"); rc = PB_EXIT_USAGE; break; }
            o.results = val;
            i++;
        } else if (!strcmp(a, "--all")) all = 1;
        else if (!strcmp(a, "--quick")) o.quick = true;
        else if (!strcmp(a, "--fresh")) o.fresh = true;
        else if (!strcmp(a, "--summary")) o.summary = true;
        else if (!strcmp(a, "--quiet")) o.quiet = true;
        else if (!strcmp(a, "--check")) o.check = true;
        else if (!strcmp(a, "--no-report")) o.report = false;
        else if (!strcmp(a, "--report-only")) o.report_only = true;
        else if (a[0] == '-') { fprintf(stderr, "run: unknown option '%s'\n", a); usage(stderr); rc = PB_EXIT_USAGE; break; }
        else files[nf++] = a;
    }
    if (rc == PB_EXIT_OK && !nf && !ng && !all) { usage(stderr); rc = PB_EXIT_USAGE; }
    if (rc != PB_EXIT_OK) { ng = 0; all = 0; nf = 0; }
    if (rc == PB_EXIT_OK && nf) {
        /* explicit files: each on its own, results/<experiment name>.csv (so a single
           panel never overwrites its figure's merged CSV) */
        pb_experiment **exps;
        if (load_all(files, nf, &o, &exps)) rc = PB_EXIT_USAGE;
        else if (!o.check && make_results_dir(o.results)) {
            rc = PB_EXIT_RUNTIME;
            for (int i = 0; i < nf; i++) pb_experiment_destroy(exps[i]);
            free(exps);
        } else {
            for (int i = 0; i < nf; i++) {
                int r = run_group(exps[i]->name, exps[i]->figure, &exps[i], 1, &o);
                rc = PB_MAX(rc, r);
            }
            for (int i = 0; i < nf; i++) pb_experiment_destroy(exps[i]);
            free(exps);
        }
    }
    /* figures run one after another; a config error in one does not stop the others */
    for (int i = 0; i < ng; i++) {
        int r = run_figure(figs[i], &o);
        rc = PB_MAX(rc, r);
    }
    for (size_t i = 0; all && i < PB_ARRAY_LEN(ALL_FIGURES); i++) {
        int r = run_figure(ALL_FIGURES[i], &o);
        rc = PB_MAX(rc, r);
    }
    free(files);
    free(figs);
    free(o.sets);
    return rc;
}
