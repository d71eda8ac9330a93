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
 * Every figure, file, key and point is resolved and checked first (resolve()); nothing
 * runs and nothing is written when any of them is wrong.
 * Exit: 0 ok, 1 a point failed or is not complete (requests rejected or unfinished,
 * unless --allow-rejected), 2 usage or config error (file:line:col). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "experiment.h"
#include "fig18a.h"     /* pb_fig18a_write (cost model + GPU kernels) */
#include "fig_sim.h"    /* pb_fig1_write, pb_fig19a_write (cost model) */
#include "pb.h"
#include "report.h"
#include "results_json.h"   /* pb_results_write_json */
#include "runner.h"
#include "shard.h"
#include "spec.h"
#include "system.h"
#include "vllm_layout.h"

/* every figure `--all` runs, in order (fig1, fig11, fig18a, fig19a come from other modules) */
static const char *const ALL_FIGURES[] = {"fig1", "fig2", "fig11", "fig12", "fig13", "fig14", "fig15",
                                          "fig16", "fig17", "fig18a", "fig18b", "fig19a", "fig19b", "v02", "study", "tier", "v1",
                                          "ablation_kv", "ablation_graphs", "ablation_weights", "launch"};

enum { O_FIGURE = 256, O_SET, O_RESULTS, O_ALL, O_QUICK, O_FRESH, O_SUMMARY, O_QUIET, O_CHECK, O_NO_REPORT,
       O_REPORT_ONLY, O_REQUESTS, O_TIMELINE, O_LIST_POINTS, O_SHARD, O_ALLOW_REJECTED };
static const pb_cli_opt RUN_OPTS[] = {
    {"figure", O_FIGURE, "FIG", "every experiments/*.yaml with `figure: FIG` (fig2 fig12 ... fig19b, study, tier, v1;\n"
                                "fig18 = 18a+18b, fig19 = 19a+19b; fig1 fig11 fig18a fig19a are computed directly)"},
    {"all", O_ALL, NULL, "every figure: fig1 fig2 fig11 fig12 ... fig19b v02 study tier v1, the ablations, launch"},
    {"jobs", 'j', "N", "worker processes (default 1); results are identical for every N"},
    {"quick", O_QUICK, NULL, "each YAML's quick: settings (shorter traces, fewer points; stated in the YAML)"},
    {"set", O_SET, "K=V", "override a config value in every experiment (repeatable)"},
    {"results", O_RESULTS, "DIR", "where results go (default " PB_OUT_DIR ", a folder git ignores)"},
    {"fresh", O_FRESH, NULL, "recompute points even when DIR/points/ has them"},
    {"summary", O_SUMMARY, NULL, "print vLLM benchmark_serving's block for every point (stdout)"},
    {"quiet", O_QUIET, NULL, "no per-point lines and no progress line (stderr)"},
    {"check", O_CHECK, NULL, "validate the YAMLs and count the points; run nothing"},
    {"no-report", O_NO_REPORT, NULL, "do not print the paper-vs-ours table"},
    {"report-only", O_REPORT_ONLY, NULL, "run nothing: rebuild the CSV and the table from the finished points"},
    {"allow-rejected", O_ALLOW_REJECTED, NULL, "accept points where requests were rejected or unfinished (complete 0\n"
                                               "in the CSV, undefined metrics empty); without it such a point makes\n"
                                               "the run exit 1"},
    {"list-points", O_LIST_POINTS, NULL, "run nothing: print every grid point (id, estimated cost, shard, label);\n"
                                         "with --shard I/N only shard I's"},
    {"shard", O_SHARD, "I/N", "run shard I of N (1-based): a deterministic, cost-balanced share of the\n"
                              "points (an experiment that refines its knee is split by series); writes\n"
                              "point files only -- `pagedbench merge` makes the CSV, JSON and report"},
    {"requests", O_REQUESTS, NULL, "also write DIR/<name>.requests.csv (a row per request per point) and put\n"
                                   "the per-request lists (input_lens, output_lens, ttfts, slo_met) in the\n"
                                   "vLLM-layout JSONs"},
    {"timeline", O_TIMELINE, NULL, "also write DIR/<name>.timeline.csv: one row per engine step per point"},
    {NULL, 0, NULL, NULL}};

static const pb_cli RUN_CLI = {
    "run", "[EXPERIMENT.yaml ...] [--figure FIG ...] [--all] [options]",
    "Runs every point (system x sweep values) of the experiments, in parallel and resumably,\n"
    "then writes the results and prints the paper-vs-ours table of a figure.",
    RUN_OPTS,
    "Outputs (docs/outputs.md describes every file and column), <name> = the experiment's `name`\n"
    "for a YAML given by path, the figure id for --figure:\n"
    "  DIR/<name>.csv            one row per system and sweep point\n"
    "  DIR/<name>.json           config, revision, machine, every point's metrics\n"
    "  DIR/<name>_report.md      the paper-vs-ours table (figures)\n"
    "  DIR/vllm/<name>/*.json    each point in vLLM bench serve's --save-result layout\n"
    "  DIR/points/<experiment>/  one file per point (reused by later runs)\n"
    "The committed reference results (results/) are written only by `./run_all.sh all`.\n"
    "Every file, figure, key and point is checked before anything runs or is written.\n"
    "Results go to stdout, progress and diagnostics to stderr; a progress line with an ETA\n"
    "shows on a terminal once a run takes more than a few seconds (not with --quiet).",
    "a point failed or is not complete", NULL};

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

/* ---- running a set of experiments as one figure ---- */
typedef struct {
    int jobs;
    bool quick, fresh, summary, quiet, check, report, report_only, requests, timeline, allow_rejected;
    const char *results;
    const char **sets;
    int n_sets;
    bool list_points;
    int shard, n_shards;      /* --shard I/N: shard = I - 1; n_shards 0 = no sharding */
} run_opts;

/* Can this build run the experiment's points?  A cuda executor needs a CUDA build
   (refused here, at the executor's line, rather than by every point). */
static int check_runnable(const pb_experiment *e, const run_opts *o) {
#ifndef PB_HAVE_CUDA
    if (!strcmp(e->executor, "cuda") && !o->report_only && !o->list_points) {
        const pb_node *x = pb_node_get(pb_config_root(e->cfg), "executor");
        if (x && x->kind == PB_NODE_MAP) x = pb_node_get(x, "type");
        pb_cfg_err err;
        pb_cfg_err_clear(&err);
        pb_cfg_fail(&err, x ? x : pb_config_root(e->cfg), false,
                    "executor: cuda: this build has no CUDA (configure with `cmake --preset cuda` and nvcc); "
                    "its points cannot run here (`merge` and --report-only still read their files)");
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
#else
    (void)e;
    (void)o;
#endif
    return 0;
}

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
    if (!bad)
        for (int i = 0; i < n; i++) bad |= check_runnable(exps[i], o) != 0;
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

/* ---- sharding ---- */
static long long plan_total(const pb_shard_plan *p) {
    long long t = 0;
    for (int k = 0; k < pb_shard_plan_n_shards(p); k++) t += pb_shard_plan_load(p, k);
    return t;
}

/* --list-points: one tab-separated line per grid point (id = the point file's path under
 * points/, estimated cost, owning shard "I/N" or "-", unit "series" or "point", label);
 * with --shard I/N only shard I's.  The totals and every shard's load go to stderr. */
static int list_points(pb_experiment **exps, int n, const run_opts *o) {
    int ns = o->n_shards ? o->n_shards : 1;
    pb_shard_plan *plan = pb_shard_plan_make(exps, n, ns);
    PB_ASSERT(pb_shard_plan_check(plan) == PB_OK);
    int listed = 0;
    for (int x = 0; x < n; x++) {
        const pb_experiment *e = exps[x];
        bool series = pb_shard_by_series(e);
        for (int s = 0; s < e->n_systems; s++)
            for (int p = 0; p < pb_experiment_n_points(e, s); p++) {
                int owner = pb_shard_plan_owner(plan, x, s, p);
                if (o->n_shards && owner != o->shard) continue;
                char shard[32] = "-";
                if (o->n_shards) snprintf(shard, sizeof shard, "%d/%d", owner + 1, o->n_shards);
                printf("%s/%s-%016llx\t%lld\t%s\t%s\t%s %s", e->name, e->systems[s].id,
                       (unsigned long long)pb_point_hash(e, s, p), (long long)pb_shard_plan_point_cost(plan, x, s, p),
                       shard, series ? "series" : "point", e->name, e->systems[s].id);
                double vals[PB_EXP_MAX_AXES];
                pb_experiment_point_values(e, s, p, vals);
                for (int a = 0; a < e->n_axes; a++) {
                    char num[64];
                    pb_fmt_num(num, sizeof num, vals[a]);
                    printf(" %s=%s", e->axes[a].axis, num);
                }
                printf("\n");
                listed++;
            }
    }
    fprintf(stderr, "==> %d grid points listed, estimated cost %lld (tokens)", listed,
            o->n_shards ? (long long)pb_shard_plan_load(plan, o->shard) : plan_total(plan));
    if (o->n_shards) {
        fprintf(stderr, "; shard loads:");
        for (int k = 0; k < ns; k++) fprintf(stderr, " %lld", (long long)pb_shard_plan_load(plan, k));
    }
    fprintf(stderr, "\n");
    pb_shard_plan_destroy(plan);
    return PB_EXIT_OK;
}

/* <results>/<out>.requests.csv and .timeline.csv when asked for. */
static pb_status write_side_csvs(const pb_results *res, const char *out, const run_opts *o) {
    char path[1200];
    pb_status st = PB_OK;
    if (o->requests) {
        snprintf(path, sizeof path, "%s/%s.requests.csv", o->results, out);
        st = pb_results_write_side(res, o->results, "req", path);
        if (!st) fprintf(stderr, "==> wrote %s\n", path);
    }
    if (!st && o->timeline) {
        snprintf(path, sizeof path, "%s/%s.timeline.csv", o->results, out);
        st = pb_results_write_side(res, o->results, "steps", path);
        if (!st) fprintf(stderr, "==> wrote %s\n", path);
    }
    return st;
}

/* Points that are not complete (requests rejected or left unfinished): their
 * undefined metrics are empty cells and `complete` is 0 in the CSV just written, and
 * the run exits 1 -- unless --allow-rejected or the experiment's `allow_rejected:`
 * accepts them. */
static int check_complete(const pb_results *res, const char *figure, const run_opts *o) {
    int bad = 0;
    for (int i = 0; i < res->n; i++) {
        const pb_result_row *row = &res->rows[i];
        const pb_experiment *e = res->exps[row->exp];
        if (pb_pm_get(&row->m, "complete", 1) != 0 || o->allow_rejected || e->allow_rejected) continue;
        if (bad++ < 5) {
            char lab[512];
            pb_point_label(e, row->sys, row->axis, lab, sizeof lab);
            pb_log_error("%s: not complete: %.0f of %.0f requests finished, %.0f rejected, %.0f unfinished", lab,
                         pb_pm_get(&row->m, "n_finished", NAN), pb_pm_get(&row->m, "n_requests", NAN),
                         pb_pm_get(&row->m, "n_rejected", NAN), pb_pm_get(&row->m, "n_unfinished", NAN));
        }
    }
    if (!bad) return PB_EXIT_OK;
    pb_log_error("%s: %d point(s) not complete (complete = 0 and their undefined metrics empty in the CSV); "
                 "--allow-rejected or `allow_rejected: true` accepts them", figure, bad);
    return PB_EXIT_RUNTIME;
}

/* The banner's second part: every distinct executor, model and hardware of the run, one
 * line each (a figure's panels may differ: fig12 has OPT-13B/66B/175B on 1, 4 and 8 GPUs). */
static void banner_devices(pb_experiment *const *exps, int n) {
    char (*seen)[512] = pb_xcalloc((size_t)n, sizeof *seen);
    int ns = 0;
    for (int i = 0; i < n; i++) {
        char desc[512];
        pb_system_describe_executor(exps[i], desc, sizeof desc);
        int k = 0;
        while (k < ns && strcmp(seen[k], desc)) k++;
        if (k < ns) continue;
        snprintf(seen[ns++], sizeof *seen, "%s", desc);
        fprintf(stderr, "    %s\n", desc);
    }
    free(seen);
}

/* <results>/vllm/<out>/ (pb_vllm_point_file's names): every point in vLLM bench serve's
 * --save-result layout (vllm_layout.h), with the per-request lists when the run kept them
 * (--requests). */
static pb_status write_vllm_jsons(const pb_results *res, const char *out, const run_opts *o, char *path, size_t pn) {
    snprintf(path, pn, "%s/vllm/%s", o->results, out);
    if (make_results_dir(path)) return PB_ERR_IO;
    for (int i = 0; i < res->n; i++) {
        const pb_result_row *row = &res->rows[i];
        const pb_experiment *e = res->exps[row->exp];
        char dir[1300];
        snprintf(dir, sizeof dir, "%s/vllm/%s", o->results, out);
        pb_vllm_point_file(e, row->sys, row->axis, dir, path, pn);
        char req[1400], err[1024];
        pb_point_path(e, row->sys, row->point, o->results, req, sizeof req);
        size_t l = strlen(req);
        snprintf(req + l, sizeof req - l, ".req.csv");
        if (pb_vllm_write_point(e, row->sys, row->point, row->axis, &row->m, o->requests ? req : NULL, NULL, path, err,
                                sizeof err)) {
            pb_log_error("%s", err);
            return PB_ERR_IO;
        }
    }
    snprintf(path, pn, "%s/vllm/%s/", o->results, out);
    return PB_OK;
}

/* Run exps as one group and write <results>/<out>.csv; figure picks the report. */
static int run_group(const char *out, const char *figure, pb_experiment **exps, int n, const run_opts *o) {
    int total = 0;
    for (int i = 0; i < n; i++)
        for (int s = 0; s < exps[i]->n_systems; s++) total += pb_experiment_n_points(exps[i], s);
    fprintf(stderr, "==> %s: %d experiment(s), %d grid points%s; pagedbench %s\n", figure, n, total,
            o->quick ? ", --quick" : "", pb_git_rev());
    banner_devices(exps, n);
    if (o->list_points) return list_points(exps, n, o);
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
    pb_runner_opts ro = {o->jobs, o->results, o->fresh, o->summary || (total <= 8 && !o->quiet), o->quiet, o->quick, -1,
                         pb_system_run_point, NULL, NULL, 0, false, false};
    pb_shard_plan *plan = NULL;
    if (o->n_shards) {
        plan = pb_shard_plan_make(exps, n, o->n_shards);
        PB_ASSERT(pb_shard_plan_check(plan) == PB_OK);
        ro.plan = plan;
        ro.shard = o->shard;
    }
    ro.requests = o->requests;
    ro.timeline = o->timeline;
    pb_runner_stats st, acc = {0};
    double t0 = pb_now_s();
    int failed = 0;
    int before = 0;   /* points of the earlier rounds, which a later round finds again */
    for (int round = 0;; round++) {
        if (o->report_only) memset(&st, 0, sizeof st);
        else if (pb_runner_run(exps, n, &ro, &st)) failed = 1;
        acc.reused += st.reused - PB_MIN(before, st.reused);   /* a refinement point found done counts too */
        before = st.total;
        acc.computed += st.computed;
        acc.failed += st.failed;
        ro.fresh = false;   /* a refinement round must not recompute the earlier rounds */
        if (failed) break;
        int added = pb_runner_refine_shard(exps, n, o->results, round, plan, o->shard);
        if (!added) break;
        fprintf(stderr, "==> %s: knee refinement round %d: %d more points\n", figure, round + 1, added);
    }
    if (!o->report_only)
        fprintf(stderr, "==> %s: %d points computed, %d reused, %d failed, %.1f s wall\n", figure, acc.computed,
                acc.reused, acc.failed, pb_now_s() - t0);
    if (plan) {   /* a shard writes point files only; the merge makes the figure's outputs */
        fprintf(stderr, "==> %s: shard %d/%d done (estimated cost %lld of %lld); `pagedbench merge` assembles the results\n",
                figure, o->shard + 1, o->n_shards, (long long)pb_shard_plan_load(plan, o->shard),
                (long long)plan_total(plan));
        pb_shard_plan_destroy(plan);
        return failed ? PB_EXIT_RUNTIME : PB_EXIT_OK;
    }
    if (failed) return PB_EXIT_RUNTIME;

    pb_results res;
    if (pb_runner_collect(exps, n, o->results, &res)) return PB_EXIT_RUNTIME;
    if (o->report_only) fprintf(stderr, "==> %s: %d finished points read from %s/points\n", figure, res.n, o->results);
    char csv[1200], json[1200], md[1200], paper[1200], vdir[1400];
    snprintf(csv, sizeof csv, "%s/%s.csv", o->results, out);
    snprintf(json, sizeof json, "%s/%s.json", o->results, out);
    snprintf(md, sizeof md, "%s/%s_report.md", o->results, out);
    snprintf(paper, sizeof paper, "%s/paper/%s.csv", pb_spec_dir(), figure);
    int rc = PB_EXIT_OK;
    const char *bad_file =
        pb_results_write_csv(&res, csv)                                              ? csv
        : pb_results_write_json(json, figure, exps, n, o->quick, &res) ? json
        : write_side_csvs(&res, out, o)                                              ? "the per-request / timeline CSV"
        : write_vllm_jsons(&res, out, o, vdir, sizeof vdir)                          ? "a vLLM-layout JSON"
                                                                                     : NULL;
    if (bad_file) {
        pb_log_error("%s: cannot write: %s", bad_file, strerror(errno));
        rc = PB_EXIT_RUNTIME;
    } else {
        fprintf(stderr, "==> %s: wrote %s (%d rows), %s and %s (vLLM's layout, a JSON per point)\n", figure, csv,
                res.n, json, vdir);
        if (o->report) pb_report_figure(figure, csv, paper, exps[0]->knee_threshold, stdout, md);
    }
    if (!rc) rc = check_complete(&res, figure, o);
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
    fprintf(stderr, "==> %s: computed directly (%s); pagedbench %s\n", fig,
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

/* ---- resolve, then run ----
 * Every file, figure and key named on the command line is loaded and checked (every
 * point: pb_system_check) before anything runs or is written: one error anywhere and
 * the run exits 2 with nothing done. */
typedef struct {
    const char *out, *figure;   /* <results>/<out>.csv; the report's figure id     */
    bool direct;                /* fig1 fig11 fig18a fig19a: computed directly     */
    pb_experiment **exps;
    int n;
} group;

typedef struct {
    group *g;
    int n, cap;
    exp_file **files;           /* find_figure's lists, freed with the plan        */
    int n_files;
} run_plan;

static group *plan_add(run_plan *p) {
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->g = pb_xrealloc(p->g, (size_t)p->cap * sizeof *p->g);
    }
    memset(&p->g[p->n], 0, sizeof p->g[0]);
    return &p->g[p->n++];
}

static void plan_free(run_plan *p) {
    for (int i = 0; i < p->n; i++) {
        for (int k = 0; k < p->g[i].n; k++) pb_experiment_destroy(p->g[i].exps[k]);
        free(p->g[i].exps);
    }
    for (int i = 0; i < p->n_files; i++) free(p->files[i]);
    free(p->files);
    free(p->g);
    memset(p, 0, sizeof *p);
}

/* Add figure fig's groups to the plan (fig18 / fig19: both halves).  0, or -1 after
   saying why on stderr. */
static int resolve_figure(run_plan *p, const char *fig, const run_opts *o) {
    if (!strcmp(fig, "fig1") || !strcmp(fig, "fig11") || !strcmp(fig, "fig18a") || !strcmp(fig, "fig19a")) {
        group *g = plan_add(p);
        g->out = g->figure = fig;
        g->direct = true;
        return 0;
    }
    if (!strcmp(fig, "fig19")) return resolve_figure(p, "fig19a", o) | resolve_figure(p, "fig19b", o);
    if (!strcmp(fig, "fig18")) return resolve_figure(p, "fig18a", o) | resolve_figure(p, "fig18b", o);
    exp_file *files;
    int n = find_figure(pb_spec_dir(), fig, &files);
    if (n == 0) {
        free(files);
        fprintf(stderr, "run: no experiment YAML in %s has `figure: %s` (try `pagedbench list`)\n", pb_spec_dir(), fig);
        return -1;
    }
    p->files = pb_xrealloc(p->files, (size_t)(p->n_files + 1) * sizeof *p->files);
    p->files[p->n_files++] = files;
    const char **paths = pb_xcalloc((size_t)n, sizeof *paths);
    for (int i = 0; i < n; i++) paths[i] = files[i].path;
    pb_experiment **exps;
    int rc = load_all(paths, n, o, &exps);
    free(paths);
    if (rc) return -1;
    group *g = plan_add(p);
    g->out = g->figure = fig;
    g->exps = exps;
    g->n = n;
    return 0;
}

/* The plan of a command line: explicit files (each its own group, results/<name>.csv,
   so a single panel never overwrites its figure's merged CSV), then the figures in
   order.  0, or -1 when anything is wrong (said on stderr). */
static int resolve(run_plan *p, const char **files, int nf, const char **figs, int ng, bool all, const run_opts *o) {
    int bad = 0;
    if (nf) {
        pb_experiment **exps;
        if (load_all(files, nf, o, &exps)) bad = -1;
        else {
            for (int i = 0; i < nf; i++) {
                group *g = plan_add(p);
                g->out = exps[i]->name;
                g->figure = exps[i]->figure;
                g->exps = pb_xcalloc(1, sizeof *g->exps);
                g->exps[0] = exps[i];
                g->n = 1;
            }
            free(exps);
        }
    }
    for (int i = 0; i < ng; i++) bad |= resolve_figure(p, figs[i], o);
    for (size_t i = 0; all && i < PB_ARRAY_LEN(ALL_FIGURES); i++) bad |= resolve_figure(p, ALL_FIGURES[i], o);
    return bad;
}

/* Run one resolved group. */
static int run_planned(const group *g, const run_opts *o) {
    if (g->direct) {
        if (o->n_shards || o->list_points) {   /* no sweep points: the merge computes it */
            fprintf(stderr, "==> %s: computed directly, no sweep points (the merge makes it)\n", g->figure);
            return PB_EXIT_OK;
        }
        return run_direct(g->figure, o);
    }
    if (!o->check && !o->list_points && make_results_dir(o->results)) return PB_EXIT_RUNTIME;
    return run_group(g->out, g->figure, g->exps, g->n, o);
}

int pb_cmd_run(int argc, char **argv) { return pb_cmd_run_hook(argc, argv, NULL, NULL); }

int pb_cmd_run_hook(int argc, char **argv, int (*after_resolve)(void *user), void *user) {
    run_opts o = {.jobs = 1, .report = true, .results = PB_OUT_DIR};
    const char **files = pb_xcalloc((size_t)argc + 1, sizeof *files), **figs = pb_xcalloc((size_t)argc + 1, sizeof *figs);
    o.sets = pb_xcalloc((size_t)argc + 1, sizeof *o.sets);
    int nf = 0, ng = 0, all = 0, rc = PB_EXIT_OK;
    pb_cli_parser p;
    pb_cli_begin(&p, &RUN_CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        int64_t j;
        switch (c) {
        case 'j': if (pb_cli_int(&p, 1, 1024, &j)) o.jobs = (int)j; break;
        case O_FIGURE: figs[ng++] = p.arg; break;
        case O_SET: o.sets[o.n_sets++] = p.arg; break;
        case O_RESULTS: o.results = p.arg; break;
        case O_ALL: all = 1; break;
        case O_QUICK: o.quick = true; break;
        case O_FRESH: o.fresh = true; break;
        case O_SUMMARY: o.summary = true; break;
        case O_QUIET: o.quiet = true; break;
        case O_CHECK: o.check = true; break;
        case O_NO_REPORT: o.report = false; break;
        case O_REPORT_ONLY: o.report_only = true; break;
        case O_REQUESTS: o.requests = true; break;
        case O_TIMELINE: o.timeline = true; break;
        case O_LIST_POINTS: o.list_points = true; break;
        case O_ALLOW_REJECTED: o.allow_rejected = true; break;
        case O_SHARD:
            if (!pb_shard_parse(p.arg, &o.shard, &o.n_shards)) pb_cli_bad(&p, "needs I/N with 1 <= I <= N (e.g. --shard 2/8)");
            break;
        }
    }
    rc = p.rc;
    /* getopt_long moved the operands (YAML paths) to the end, in their order */
    for (int i = p.optind; rc < 0 && i < argc; i++) files[nf++] = argv[i];
    if (rc < 0 && !nf && !ng && !all) rc = pb_cli_fail(&RUN_CLI, "name an experiment YAML, --figure FIG or --all");
    if (rc < 0 && o.n_shards && (o.report_only || o.check))
        rc = pb_cli_fail(&RUN_CLI, "--shard runs points; it does not go with --report-only or --check (use `pagedbench merge`)");
    if (rc < 0 && o.fresh && o.report_only)
        rc = pb_cli_fail(&RUN_CLI, "--fresh recomputes points and --report-only computes none: give one of them");
    if (rc < 0 && !*o.results) rc = pb_cli_fail(&RUN_CLI, "--results needs a folder (got an empty name)");
    if (rc >= 0) { free(files); free(figs); free(o.sets); return rc; }
    rc = PB_EXIT_OK;
    run_plan plan = {0};
    if (resolve(&plan, files, nf, figs, ng, all, &o)) rc = PB_EXIT_USAGE;   /* nothing written */
    int hook = rc == PB_EXIT_OK && after_resolve ? after_resolve(user) : PB_EXIT_OK;
    for (int i = 0; rc != PB_EXIT_USAGE && i < plan.n; i++) {   /* a failed point does not stop the next group */
        int r = run_planned(&plan.g[i], &o);
        rc = PB_MAX(rc, r);
    }
    plan_free(&plan);
    free(files);
    free(figs);
    free(o.sets);
    return PB_MAX(rc, hook);
}
