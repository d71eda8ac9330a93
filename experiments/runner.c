/* runner.c -- parallel, resumable sweeps; point files; results table; knee detection. */
#include "runner.h"

#include "cli.h"   /* pb_cli_progress */

#include "point_key.h"
#include "shard.h"
#include "uncertainty.h"   /* pb_unc_fill_rate: a rate sweep's error bars */

#include <csv.h>   /* libcsv: csv_write */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define PB_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PB_LSAN 1
#endif
#endif
#ifdef PB_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* ---- hashing and paths ---- */

/* The point's key: its content (point_key.h). */
uint64_t pb_point_hash(const pb_experiment *e, int sys, int point) { return pb_point_key(e, sys, point); }

/* The point's file path without extension (buf); returns its key. */
static uint64_t point_base(const pb_experiment *e, int sys, int point, const char *results_dir, char *buf, size_t n) {
    uint64_t key = pb_point_hash(e, sys, point);
    snprintf(buf, n, "%s/points/%s/%s-%016llx", results_dir, e->name, e->systems[sys].id, (unsigned long long)key);
    return key;
}

void pb_point_path(const pb_experiment *e, int sys, int point, const char *results_dir, char *buf, size_t n) {
    point_base(e, sys, point, results_dir, buf, n);
}

static int mkdir_p(const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0777) && errno != EEXIST) return -1;
            *p = '/';
        }
    if (mkdir(tmp, 0777) && errno != EEXIST) return -1;
    return 0;
}

/* ---- side files (per request, per step) ---- */
enum { SIDE_REQ, SIDE_STEPS, N_SIDES };
static const char *const SIDE_NAME[N_SIDES] = {"req", "steps"};

static void side_path(const char *base, int k, char *buf, size_t n) { snprintf(buf, n, "%s.%s.csv", base, SIDE_NAME[k]); }

/* ---- point files ----
 * Format 3, text, one item per line:
 *   pagedbench-point 3
 *   key <16 hex>                  the point's key (point_key.h), as its file name says
 *   source <hash> / revision <git describe> / experiment <name> / system <id> / point <index>
 *   axis <name> <value>           one per sweep axis (the name may hold spaces)
 *   metric <name> <value>         %.17g; nan = undefined (an empty CSV cell)
 *   side <req|steps> <bytes> <fnv64>   a side file written with the point: its checksum
 *   summary <bytes>               then that many bytes: the benchmark_serving block
 *   checksum <fnv64>              FNV-1a (point_key.h) of every byte before this line
 * A file is reused only when it parses, carries the wanted key and its checksum holds:
 * an edited, truncated or damaged file is recomputed (and said so on stderr), never
 * read into a CSV.  A side file is reused only when its checksum is the one recorded. */
#define POINT_FORMAT "pagedbench-point 3"

typedef struct {
    bool has;
    int64_t size;
    uint64_t hash;
} side_sum;

typedef struct {
    double vals[PB_EXP_MAX_AXES];   /* the axis values recorded                      */
    side_sum side[N_SIDES];
} point_file;

static pb_status write_point(const char *base, const pb_experiment *e, int sys, int point, const double *vals,
                             const pb_point_metrics *m, const side_sum *side, uint64_t hash) {
    pb_sbuf b = {0};
    pb_sbuf_printf(&b, POINT_FORMAT "\nkey %016llx\nsource %s\nrevision %s\nexperiment %s\nsystem %s\npoint %d\n",
                   (unsigned long long)hash, pb_source_hash(), pb_source_describe(), e->name, e->systems[sys].id, point);
    for (int a = 0; a < e->n_axes; a++) pb_sbuf_printf(&b, "axis %s %.17g\n", e->axes[a].axis, vals[a]);
    for (int i = 0; i < m->n; i++) pb_sbuf_printf(&b, "metric %s %.17g\n", m->name[i], m->value[i]);
    for (int k = 0; k < N_SIDES; k++)
        if (side[k].has)
            pb_sbuf_printf(&b, "side %s %lld %016llx\n", SIDE_NAME[k], (long long)side[k].size,
                           (unsigned long long)side[k].hash);
    pb_sbuf_printf(&b, "summary %zu\n%s", strlen(m->summary), m->summary);
    pb_sbuf_printf(&b, "checksum %016llx\n", (unsigned long long)pb_fnv64(PB_FNV64_INIT, b.s, b.len));
    char path[4200];
    snprintf(path, sizeof path, "%s.pt", base);
    pb_status st = pb_write_file_atomic(path, b.s, b.len);
    free(b.s);
    return st;
}

/* A number as write_point prints it (%.17g, nan, inf). */
static bool parse_value(const char *s, double *v) {
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end;
}

/* Parse the point file of base; it must carry key want_key (its name says so: a file
 * copied under another point's name is refused).  Returns 0 with m (metrics and
 * summary) and pf filled, 1 when there is no file, 2 when it is of an older format, -1
 * when it is there but cannot be used (why: what is wrong with it). */
static int read_point(const char *base, uint64_t want_key, const pb_experiment *e, pb_point_metrics *m,
                      point_file *pf, char *why, size_t whyn) {
    char path[4200];
    snprintf(path, sizeof path, "%s.pt", base);
    memset(m, 0, sizeof *m);
    memset(pf, 0, sizeof *pf);
    if (access(path, F_OK) != 0 && errno == ENOENT) return 1;
    char *text;
    size_t len;
    if (pb_input_read(path, false, &text, &len, why, whyn)) return -1;
    int rc = -1;
    /* the checksum line ends the file and covers every byte before it */
    char *last = len >= 2 && text[len - 1] == '\n' ? text + len - 2 : NULL;
    while (last && last > text && last[-1] != '\n') last--;
    unsigned long long sum;
    if (strncmp(text, POINT_FORMAT "\n", strlen(POINT_FORMAT) + 1) && !strncmp(text, "pagedbench-point ", 17)) {
        snprintf(why, whyn, "%s: an older format", path);
        rc = 2;
        goto done;
    }
    if (!last || strncmp(last, "checksum ", 9) || strlen(last) != 9 + 16 + 1 ||
        sscanf(last + 9, "%16llx", &sum) != 1) {
        snprintf(why, whyn, "%s: no checksum line at its end (written by an older pagedbench, or cut short)", path);
        goto done;
    }
    if (pb_fnv64(PB_FNV64_INIT, text, (size_t)(last - text)) != sum) {
        snprintf(why, whyn, "%s: checksum mismatch (the file was edited or damaged)", path);
        goto done;
    }
    *last = 0;
    bool have_key = false, in_summary = false;
    int lineno = 0;
    for (char *line = text, *next; line < last && !in_summary; line = next) {
        char *nl = strchr(line, '\n');
        if (!nl) break;
        *nl = 0;
        next = nl + 1;
        lineno++;
        char *sp = strrchr(line, ' ');
        double v;
        bool ok = true;
        if (lineno == 1) ok = !strcmp(line, POINT_FORMAT);
        else if (!strncmp(line, "key ", 4)) ok = have_key = strtoull(line + 4, NULL, 16) == want_key;
        else if (!strncmp(line, "axis ", 5) && sp > line + 4) {
            *sp = 0;
            ok = parse_value(sp + 1, &v);
            for (int a = 0; ok && a < e->n_axes; a++)
                if (!strcmp(e->axes[a].axis, line + 5)) pf->vals[a] = v;
        } else if (!strncmp(line, "metric ", 7) && sp > line + 6) {
            *sp = 0;
            ok = parse_value(sp + 1, &v) && m->n < PB_MAX_METRICS && strlen(line + 7) < sizeof m->name[0];
            for (int i = 0; ok && i < m->n; i++) ok = strcmp(m->name[i], line + 7) != 0;   /* once each */
            if (ok) pb_pm_set(m, line + 7, v);
        } else if (!strncmp(line, "side ", 5)) {
            char what[16];
            long long size;
            unsigned long long h;
            int k = -1;
            ok = sscanf(line + 5, "%15s %lld %16llx", what, &size, &h) == 3;
            for (int j = 0; ok && j < N_SIDES; j++)
                if (!strcmp(what, SIDE_NAME[j])) k = j;
            if ((ok = ok && k >= 0)) pf->side[k] = (side_sum){true, size, h};
        } else if (!strncmp(line, "summary ", 8)) {
            size_t want = (size_t)strtoull(line + 8, NULL, 10);
            ok = (size_t)(last - next) == want && want < sizeof m->summary;
            if (ok) memcpy(m->summary, next, want + 1);
            in_summary = true;
        } else
            ok = !strncmp(line, "source ", 7) || !strncmp(line, "revision ", 9) || !strncmp(line, "experiment ", 11) ||
                 !strncmp(line, "system ", 7) || !strncmp(line, "point ", 6);
        if (!ok) {
            snprintf(why, whyn, "%s:%d: %s", path, lineno,
                     lineno == 1 ? "not a point file of this format (" POINT_FORMAT ")"
                     : !strncmp(line, "key ", 4) ? "the key is not its name's (copied under another point's name?)"
                                                 : "malformed line");
            goto done;
        }
    }
    if (!have_key || !in_summary) {
        snprintf(why, whyn, "%s: %s", path, have_key ? "no summary" : "no key line");
        goto done;
    }
    rc = 0;
done:
    free(text);
    return rc;
}

/* ---- shards ---- */
/* Does this run own point (x, sys, p)?  Without a plan, every point. */
static bool runner_owns(const pb_runner_opts *o, int x, int sys, int p) {
    return !o->plan || pb_shard_plan_owner(o->plan, x, sys, p) == o->shard;
}

void pb_point_label(const pb_experiment *e, int sys, const double *vals, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "%s %s", e->name, e->systems[sys].id);
    for (int a = 0; a < e->n_axes && k < n; a++) {
        char num[64];
        pb_fmt_num(num, sizeof num, vals[a]);
        k += (size_t)snprintf(buf + k, n - k, " %s=%s", e->axes[a].axis, num);
    }
}

/* ---- side files ---- */
/* Point ctx paths for the side files the runner was asked for. */
static void side_paths(const char *base, const pb_runner_opts *o, pb_point_ctx *ctx, char *req, char *steps,
                       size_t n) {
    side_path(base, SIDE_REQ, req, n);
    side_path(base, SIDE_STEPS, steps, n);
    ctx->requests_path = o->requests ? req : NULL;
    ctx->timeline_path = o->timeline ? steps : NULL;
}

/* Whether side file k of base is there with the checksum pf recorded (why says
   otherwise, "" when the point simply has none). */
static bool side_ok(const char *base, const point_file *pf, int k, char *why, size_t whyn) {
    why[0] = 0;
    if (!pf->side[k].has) return false;
    char p[4300], e[512];
    side_path(base, k, p, sizeof p);
    int64_t size;
    uint64_t h;
    if (pb_fnv64_file(p, &size, &h, e, sizeof e)) {
        if (access(p, F_OK) == 0) snprintf(why, whyn, "%s", e);
        return false;
    }
    if (size == pf->side[k].size && h == pf->side[k].hash) return true;
    snprintf(why, whyn, "%s: checksum mismatch with its point file (the file was edited or damaged)", p);
    return false;
}

/* ---- the worker ---- */
static int run_point_child(pb_experiment *e, int sys, int point, const char *base, const pb_runner_opts *o) {
    double vals[PB_EXP_MAX_AXES];
    pb_experiment_point_values(e, sys, point, vals);
    uint64_t hash = pb_point_hash(e, sys, point);
    char err[2048] = "";
    pb_cfg_err cerr;
    pb_cfg_err_clear(&cerr);
    pb_status st = PB_OK;
    for (int a = 0; a < e->n_axes && !st; a++) {
        char asg[512];
        pb_experiment_axis_assignment(e, sys, a, vals[a], asg, sizeof asg);   /* as pb_experiment_resolve */
        st = pb_config_set(e->cfg, asg, &cerr);
        if (st) snprintf(err, sizeof err, "%s", cerr.msg);
    }
    pb_point_metrics *m = pb_xcalloc(1, sizeof *m);
    side_sum side[N_SIDES] = {{0}};
    if (!st) {
        const pb_node *root = pb_config_root(e->cfg);
        char sp[64];
        snprintf(sp, sizeof sp, "systems.%d", sys);
        pb_point_ctx ctx = {e, sys, point, vals, root, pb_node_get(root, sp), o->quick, NULL, NULL};
        char req[4300], steps[4300];
        side_paths(base, o, &ctx, req, steps, sizeof req);
        st = o->fn(&ctx, m, err, sizeof err, o->user);
        const char *paths[N_SIDES] = {ctx.requests_path, ctx.timeline_path};
        for (int k = 0; k < N_SIDES && !st; k++)   /* the side files' checksums go into the point file */
            if (paths[k]) {
                side[k].has = true;
                st = pb_fnv64_file(paths[k], &side[k].size, &side[k].hash, err, sizeof err);
            }
    }
    if (!st && (st = write_point(base, e, sys, point, vals, m, side, hash)))
        snprintf(err, sizeof err, "cannot write %s.pt: %s", base, strerror(errno));
    if (st) {
        char path[4200];
        snprintf(path, sizeof path, "%s.err", base);
        char msg[2400];
        int l = snprintf(msg, sizeof msg, "%s: %s\n", pb_status_str(st), *err ? err : "(no message)");
        if (pb_write_file_atomic(path, msg, (size_t)PB_MIN(l, (int)sizeof msg - 1)))   /* say it here, then */
            fprintf(stderr, "error: %s (and cannot write %s: %s)\n", msg, path, strerror(errno));
    }
    free(m);
    return st ? 1 : 0;
}

typedef struct {
    int exp, sys, point;
    pid_t pid;
    double t0;
    uint64_t key;
} job;

/* One line per finished point on stderr (progress): its label, the metrics the experiment
 * reports (its `columns:` and knee metric that are metrics; else normalized latency and the
 * p99 TTFT / TPOT) and its time; with summary, its benchmark_serving block on stdout. */
static void print_point_line(const pb_experiment *e, int sys, const char *base, uint64_t key, double secs,
                             bool summary, bool quiet) {
    pb_point_metrics *m = pb_xcalloc(1, sizeof *m);
    point_file pf;
    char why[4400];
    if (read_point(base, key, e, m, &pf, why, sizeof why) == 0) {
        char lab[512];
        pb_point_label(e, sys, pf.vals, lab, sizeof lab);
        if (summary && *m->summary) {
            printf("---- %s\n%s", lab, m->summary);
            fflush(stdout);
        }
        if (!quiet) {
            const char *show[PB_EXP_MAX_COLUMNS + 4];
            int ns = 0;
            for (int i = 0; i < e->n_columns; i++)
                if (!isnan(pb_pm_get(m, e->columns[i], NAN))) show[ns++] = e->columns[i];
            bool knee = false;
            for (int i = 0; i < ns; i++) knee |= !strcmp(show[i], e->knee_metric);
            if (!knee && !isnan(pb_pm_get(m, e->knee_metric, NAN))) show[ns++] = e->knee_metric;
            if (ns <= 1) {
                static const char *const DFLT[] = {"ttft_p99_ms", "tpot_p99_ms"};
                for (size_t i = 0; i < PB_ARRAY_LEN(DFLT); i++) show[ns++] = DFLT[i];
            }
            fprintf(stderr, "%-60s", lab);
            for (int i = 0; i < ns; i++) {
                double v = pb_pm_get(m, show[i], NAN);
                if (!isnan(v)) fprintf(stderr, " %s=%.4g", show[i], v);
            }
            fprintf(stderr, "  (%.1fs)\n", secs);
        }
    }
    free(m);
}

/* A sweep in progress: the points to do, the workers running, the counts. */
typedef struct {
    pb_experiment *const *exps;
    const pb_runner_opts *o;
    job *todo;                 /* points still to compute, in start order */
    int n_todo, cap, next;     /* next: the first not started             */
    job *run;                  /* [jobs]: the workers (pid 0: a free slot)  */
    int jobs, running, done;
    int n_old;                 /* point files of an older format (recomputed)  */
    pb_cli_progress bar;
    double t0;
    pb_runner_stats s;
} sweep;

/* Add (x, sy, p) to the to-do list unless its point file (and the side files asked
 * for) is already there, whole (its checksums hold); a file that fails its checksum is
 * said so on stderr, an older format counted; a stale .err file is removed. */
static void todo_add(sweep *w, int x, int sy, int p) {
    const pb_runner_opts *o = w->o;
    pb_experiment *e = w->exps[x];
    w->s.total++;
    char base[4200];
    uint64_t key = point_base(e, sy, p, o->results_dir, base, sizeof base);
    bool have = false;
    if (!o->fresh) {
        pb_point_metrics *m = pb_xcalloc(1, sizeof *m);
        point_file pf;
        char why[4400];
        int r = read_point(base, key, e, m, &pf, why, sizeof why);
        have = r == 0;
        if (r == 2) w->n_old++;
        else if (r < 0) fprintf(stderr, "warning: %s: computing the point again\n", why);
        bool want[N_SIDES] = {o->requests, o->timeline};
        for (int k = 0; k < N_SIDES && have; k++)
            if (want[k] && !side_ok(base, &pf, k, why, sizeof why)) {
                have = false;
                if (*why) fprintf(stderr, "warning: %s: computing the point again\n", why);
            }
        free(m);
    }
    if (have) { w->s.reused++; return; }
    char errp[4300];
    snprintf(errp, sizeof errp, "%s.err", base);
    unlink(errp);
    if (w->n_todo == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 64;
        w->todo = pb_xrealloc(w->todo, (size_t)w->cap * sizeof *w->todo);
    }
    w->todo[w->n_todo++] = (job){x, sy, p, 0, 0, key};
}

/* List the points this run owns and still has to compute (making their folders). */
static pb_status list_todo(sweep *w, int n_exps) {
    const pb_runner_opts *o = w->o;
    for (int x = 0; x < n_exps; x++) {
        pb_experiment *e = w->exps[x];
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/points/%s", o->results_dir, e->name);
        if (mkdir_p(dir)) {
            pb_log_error("%s: cannot create directory: %s", dir, strerror(errno));
            return PB_ERR_IO;
        }
        pb_tmp_sweep(dir);
        if (x == 0) pb_tmp_sweep(o->results_dir);
        for (int sy = 0; sy < e->n_systems; sy++) {
            int np = pb_experiment_n_points(e, sy);
            for (int p = 0; p < np; p++)
                if (runner_owns(o, x, sy, p)) todo_add(w, x, sy, p);
        }
    }
    if (w->n_old)
        fprintf(stderr, "note: %d point file(s) in %s/points were written in an older format: computing them again\n",
                w->n_old, o->results_dir);
    if (w->s.reused && w->s.reused < w->s.total)
        pb_log_debug("%d of %d points already done in %s/points (same config, inputs and source)", w->s.reused,
                     w->s.total, o->results_dir);
    return PB_OK;
}

/* Fork a worker for the next point to do (a fork failure counts it failed). */
static void start_next(sweep *w) {
    job j = w->todo[w->next++];
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        pb_log_error("fork: %s", strerror(errno));
        w->s.failed++;
        return;
    }
    pb_experiment *e = w->exps[j.exp];
    char base[4200];
    point_base(e, j.sys, j.point, w->o->results_dir, base, sizeof base);
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        int rc = run_point_child(e, j.sys, j.point, base, w->o);
        fflush(stdout);
        fflush(stderr);
#ifdef PB_LSAN
        if (__lsan_do_recoverable_leak_check()) rc = 1;   /* _exit skips LeakSanitizer's check: a worker's leak fails it */
#endif
        _exit(rc);
    }
    j.pid = pid;
    j.t0 = pb_now_s();
    for (int k = 0; k < w->jobs; k++)
        if (!w->run[k].pid) { w->run[k] = j; break; }
    w->running++;
}

/* A worker that failed: say why (its .err file, or the signal that killed it). */
static void report_failure(const pb_experiment *e, const job *j, const char *base, int status) {
    char errp[4300], msg[1024] = "";
    snprintf(errp, sizeof errp, "%s.err", base);
    FILE *f = fopen(errp, "r");
    if (f) {
        size_t l = fread(msg, 1, sizeof msg - 1, f);
        msg[l] = 0;
        fclose(f);
    }
    double vals[PB_EXP_MAX_AXES];
    pb_experiment_point_values(e, j->sys, j->point, vals);
    char lab[512];
    pb_point_label(e, j->sys, vals, lab, sizeof lab);
    if (WIFSIGNALED(status))
        pb_log_error("%s: worker killed by signal %d", lab, WTERMSIG(status));
    else
        pb_log_error("%s: failed: %s", lab, *msg ? msg : "worker exited with an error and no .err file "
                                                     "(its message, if any, is above)\n");
}

/* The progress line, labelled with the first running point. */
static void show_progress(sweep *w) {
    char lab[512] = "";
    for (int q = 0; q < w->jobs; q++)
        if (w->run[q].pid) {
            double vals[PB_EXP_MAX_AXES];
            pb_experiment_point_values(w->exps[w->run[q].exp], w->run[q].sys, w->run[q].point, vals);
            pb_point_label(w->exps[w->run[q].exp], w->run[q].sys, vals, lab, sizeof lab);
            break;
        }
    pb_cli_progress_show(&w->bar, w->done, w->n_todo, "points", lab);
}

/* Worker pid exited with status: count it, print its line or its failure. */
static void finish(sweep *w, pid_t pid, int status) {
    for (int k = 0; k < w->jobs; k++) {
        if (w->run[k].pid != pid) continue;
        job j = w->run[k];
        w->run[k].pid = 0;
        w->running--;
        w->done++;
        pb_experiment *e = w->exps[j.exp];
        char base[4200];
        point_base(e, j.sys, j.point, w->o->results_dir, base, sizeof base);
        pb_cli_progress_clear(&w->bar);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            w->s.computed++;
            if (!w->o->quiet || w->o->summary)
                print_point_line(e, j.sys, base, j.key, pb_now_s() - j.t0, w->o->summary, w->o->quiet);
        } else {
            w->s.failed++;
            report_failure(e, &j, base, status);
        }
        show_progress(w);
    }
}

pb_status pb_runner_run(pb_experiment *const *exps, int n_exps, const pb_runner_opts *o, pb_runner_stats *stats) {
    sweep w = {.exps = exps, .o = o, .t0 = pb_now_s()};
    pb_cli_progress_start(&w.bar, o->quiet || o->progress == 0, PB_RUNNER_PROGRESS_DELAY_S);
    if (o->progress > 0) w.bar.on = true;
    w.jobs = o->jobs < 1 ? 1 : o->jobs;
    if (list_todo(&w, n_exps)) {
        free(w.todo);
        return PB_ERR_IO;
    }
    w.run = pb_xcalloc((size_t)w.jobs, sizeof *w.run);
    while (w.next < w.n_todo || w.running) {
        while (w.running < w.jobs && w.next < w.n_todo) start_next(&w);
        if (!w.running) break;
        int status = 0;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            pb_log_error("waitpid: %s", strerror(errno));
            break;
        }
        finish(&w, pid, status);
    }
    pb_cli_progress_clear(&w.bar);
    free(w.run);
    free(w.todo);
    w.s.wall_s = pb_now_s() - w.t0;
    if (stats) *stats = w.s;
    return w.s.failed ? PB_ERR_INVALID : PB_OK;
}

static int row_cmp(const void *pa, const void *pb) {
    const pb_result_row *a = pa, *b = pb;
    if (a->exp != b->exp) return a->exp < b->exp ? -1 : 1;
    if (a->sys != b->sys) return a->sys < b->sys ? -1 : 1;
    for (int i = 0; i < PB_EXP_MAX_AXES; i++)
        if (a->axis[i] != b->axis[i]) return a->axis[i] < b->axis[i] ? -1 : 1;
    return (a->point > b->point) - (a->point < b->point);
}

/* ---- collect ---- */
/* One line per missing or unusable point (the first 20), naming the point and its
   file (why: what is wrong with it; "" when there is no file). */
static void report_missing(const pb_experiment *e, int sys, int point, const char *base, const char *why, int nth) {
    if (nth >= 20) return;
    double vals[PB_EXP_MAX_AXES];
    pb_experiment_point_values(e, sys, point, vals);
    char lab[512];
    pb_point_label(e, sys, vals, lab, sizeof lab);
    if (*why) pb_log_error("%s (%s)", why, lab);
    else pb_log_error("%s.pt: missing or unreadable point file (%s)", base, lab);
}

pb_status pb_runner_collect(pb_experiment *const *exps, int n_exps, const char *results_dir, pb_results *out) {
    memset(out, 0, sizeof *out);
    out->exps = exps;
    out->n_exps = n_exps;
    int cap = 0, missing = 0;
    for (int x = 0; x < n_exps; x++) {
        const pb_experiment *e = exps[x];
        for (int sy = 0; sy < e->n_systems; sy++) {
            int np = pb_experiment_n_points(e, sy);
            for (int p = 0; p < np; p++) {
                if (out->n == cap) {
                    cap = cap ? 2 * cap : 64;
                    out->rows = pb_xrealloc(out->rows, (size_t)cap * sizeof *out->rows);
                }
                pb_result_row *r = &out->rows[out->n];
                memset(r, 0, sizeof *r);
                r->exp = x;
                r->sys = sy;
                r->point = p;
                pb_experiment_point_values(e, sy, p, r->axis);
                char base[4200];
                uint64_t key = point_base(e, sy, p, results_dir, base, sizeof base);
                point_file pf;
                char why[4400];
                int rc = read_point(base, key, e, &r->m, &pf, why, sizeof why);
                if (rc) {
                    report_missing(e, sy, p, base, rc == 1 ? "" : why, missing++);
                    continue;
                }
                r->m.summary[0] = 0;
                out->n++;
            }
        }
    }
    if (missing) {
        pb_log_error("%d point file(s) missing or unusable in %s/points: run them first (or merge the shards' folders); "
                     "a point file counts only for this source (%s, %s), config and input files",
                     missing, results_dir, pb_source_hash(), pb_source_describe());
        pb_results_free(out);
        return PB_ERR_IO;
    }
    if (out->n > 1) qsort(out->rows, (size_t)out->n, sizeof *out->rows, row_cmp);
    pb_unc_fill_rate(out);   /* rate sweeps' error bars come from their series */
    return PB_OK;
}

void pb_results_free(pb_results *r) {
    free(r->rows);
    memset(r, 0, sizeof *r);
}

/* ---- cells ---- */
static const char *tag_of(const pb_tag *t, int n, const char *col) {
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].name, col)) return t[i].value;
    return NULL;
}

/* A cell's text: a name, label or tag as it is (never cut), or a number formatted into
   num; "" when the row has no such column or the value is undefined (NaN). */
static const char *cell_text(const pb_results *r, const pb_result_row *row, const char *col, char *num, size_t n) {
    const pb_experiment *e = r->exps[row->exp];
    const pb_system_spec *s = &e->systems[row->sys];
    const char *t;
    if (!strcmp(col, "panel")) return e->panel;
    if (!strcmp(col, "system")) return s->id;
    if (!strcmp(col, "label")) return s->label;
    if (!strcmp(col, "experiment")) return e->name;
    if (!strcmp(col, "figure")) return e->figure;
    if ((t = tag_of(s->tags, s->n_tags, col)) || (t = tag_of(e->tags, e->n_tags, col))) return t;
    double v = pb_results_num(r, row, col);
    num[0] = 0;
    if (!isnan(v)) pb_fmt_num(num, n, v);
    return num;
}

void pb_results_cell(const pb_results *r, const pb_result_row *row, const char *col, char *buf, size_t n) {
    char num[64];
    snprintf(buf, n, "%s", cell_text(r, row, col, num, sizeof num));
}

double pb_results_num(const pb_results *r, const pb_result_row *row, const char *col) {
    const pb_experiment *e = r->exps[row->exp];
    for (int a = 0; a < e->n_axes; a++)
        if (!strcmp(e->axes[a].axis, col)) return row->axis[a];
    return pb_pm_get(&row->m, col, NAN);
}

/* ---- CSV ---- */
/* Append one cell (a comma before all but the first of a line), RFC 4180 through
 * libcsv's csv_write: quoted (quotes doubled) when it holds a comma, a quote, a line
 * break, leading or trailing blanks (which readers trim) or starts with '#' (a comment
 * to gnuplot and to csv_reader.h), as it is otherwise -- so a cell of plain text or a
 * number is written exactly as before, and no cell is ever cut. */
static void csv_cell(pb_sbuf *b, const char *s, bool first) {
    if (!first) pb_sbuf_printf(b, ",");
    size_t n = strlen(s);
    bool quote = n && (strpbrk(s, ",\"\r\n") || s[0] == '#' || s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' ||
                       s[n - 1] == '\t');
    if (!quote) {
        pb_sbuf_printf(b, "%s", s);
        return;
    }
    size_t need = csv_write(NULL, 0, s, n);
    char *q = pb_xmalloc(need + 1);
    csv_write(q, need, s, n);
    q[need] = 0;
    pb_sbuf_printf(b, "%s", q);
    free(q);
}

typedef struct { const char **v; int n, cap; } col_list;
static void add_col(col_list *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->v[i], name)) return;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->v = pb_xrealloc(c->v, (size_t)c->cap * sizeof *c->v);
    }
    c->v[c->n++] = name;
}

pb_status pb_results_write_csv(const pb_results *r, const char *path) {
    col_list cols = {0};
    if (r->n_exps > 0)
        for (int i = 0; i < r->exps[0]->n_columns; i++) add_col(&cols, r->exps[0]->columns[i]);
    add_col(&cols, "experiment");
    add_col(&cols, "system");
    add_col(&cols, "label");
    for (int x = 0; x < r->n_exps; x++) {
        const pb_experiment *e = r->exps[x];
        for (int a = 0; a < e->n_axes; a++) add_col(&cols, e->axes[a].axis);
        for (int t = 0; t < e->n_tags; t++) add_col(&cols, e->tags[t].name);
        for (int s = 0; s < e->n_systems; s++)
            for (int t = 0; t < e->systems[s].n_tags; t++) add_col(&cols, e->systems[s].tags[t].name);
    }
    for (int i = 0; i < r->n; i++)
        for (int k = 0; k < r->rows[i].m.n; k++) add_col(&cols, r->rows[i].m.name[k]);

    pb_sbuf b = {0};
    for (int c = 0; c < cols.n; c++) csv_cell(&b, cols.v[c], c == 0);
    pb_sbuf_printf(&b, "\n");
    for (int i = 0; i < r->n; i++) {
        for (int c = 0; c < cols.n; c++) {
            char num[64];
            csv_cell(&b, cell_text(r, &r->rows[i], cols.v[c], num, sizeof num), c == 0);
        }
        pb_sbuf_printf(&b, "\n");
    }
    free(cols.v);
    pb_status st = pb_write_file_atomic(path, b.s ? b.s : "", b.len);
    free(b.s);
    return st;
}

/* ---- per-request and per-step CSVs: the points' side files, concatenated ---- */
#include "metrics.h"     /* PB_METRICS_STEP_COLUMNS */
#include "point_out.h"   /* PB_POINT_REQUEST_COLUMNS */

/* Is name one of the comma-separated columns? */
static bool in_columns(const char *cols, const char *name) {
    size_t l = strlen(name);
    for (const char *p = cols; p && *p;) {
        const char *c = strchr(p, ',');
        size_t k = c ? (size_t)(c - p) : strlen(p);
        if (k == l && !strncmp(p, name, l)) return true;
        p = c ? c + 1 : NULL;
    }
    return !strcmp(name, "experiment") || !strcmp(name, "system");
}

/* Stream one point's side file (k) into f after its row prefix, the header only for
 * the first point; its checksum must be the one its point file recorded.  PB_OK or
 * PB_ERR_IO (said on stderr). */
static pb_status copy_side(FILE *f, const char *base, const pb_experiment *e, uint64_t key, int k, const char *prefix,
                           const char *header, bool first) {
    char side[4300], why[4400];
    side_path(base, k, side, sizeof side);
    pb_point_metrics *m = pb_xcalloc(1, sizeof *m);
    point_file pf;
    int rc = read_point(base, key, e, m, &pf, why, sizeof why);
    free(m);
    pb_status st;
    FILE *in = rc == 0 && pf.side[k].has ? pb_input_open(side, &st, why, sizeof why) : NULL;
    if (!in) {
        if (rc != 0 || !pf.side[k].has) pb_log_error("%s: missing (run with --%s)", side, k == SIDE_REQ ? "requests" : "timeline");
        else pb_log_error("%s", why);
        return PB_ERR_IO;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t l;
    bool head = true;
    uint64_t h = PB_FNV64_INIT;
    int64_t size = 0;
    while ((l = getline(&line, &cap, in)) >= 0) {
        h = pb_fnv64(h, line, (size_t)l);
        size += l;
        if (head) {   /* the point file's header: ours once, with the prefix columns */
            head = false;
            if (!first) continue;
            fputs(header, f);
        } else
            fputs(prefix, f);
        fwrite(line, 1, (size_t)l, f);
    }
    free(line);
    bool bad = ferror(in) != 0;
    fclose(in);
    if (bad || size != pf.side[k].size || h != pf.side[k].hash) {
        pb_log_error("%s: %s", side, bad ? "read error" : "checksum mismatch with its point file (changed since the point "
                                                          "was computed: run again to recompute it)");
        return PB_ERR_IO;
    }
    return PB_OK;
}

pb_status pb_results_write_side(const pb_results *r, const char *results_dir, const char *what, const char *path) {
    int k = !strcmp(what, "req") ? SIDE_REQ : SIDE_STEPS;
    col_list axes = {0};
    for (int x = 0; x < r->n_exps; x++)
        for (int a = 0; a < r->exps[x]->n_axes; a++) add_col(&axes, r->exps[x]->axes[a].axis);
    pb_sbuf header = {0};
    const char *own = k == SIDE_REQ ? PB_POINT_REQUEST_COLUMNS : PB_METRICS_STEP_COLUMNS;
    pb_sbuf_printf(&header, "experiment,system,");
    for (int j = 0; j < axes.n; j++) {
        char name[512];
        snprintf(name, sizeof name, "%s%s", in_columns(own, axes.v[j]) ? "axis." : "", axes.v[j]);
        csv_cell(&header, name, true);
        pb_sbuf_printf(&header, ",");
    }
    char tmp[4400];
    pb_tmp_path(path, tmp, sizeof tmp);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        pb_log_error("%s: cannot write: %s", tmp, strerror(errno));
        free(axes.v);
        free(header.s);
        return PB_ERR_IO;
    }
    pb_status st = PB_OK;
    for (int i = 0; i < r->n && !st; i++) {
        const pb_result_row *row = &r->rows[i];
        const pb_experiment *e = r->exps[row->exp];
        char base[4200];
        uint64_t key = point_base(e, row->sys, row->point, results_dir, base, sizeof base);
        pb_sbuf prefix = {0};
        pb_sbuf_printf(&prefix, "%s,%s,", e->name, e->systems[row->sys].id);   /* names: [A-Za-z0-9._-] */
        for (int j = 0; j < axes.n; j++) {
            char num[64] = "";
            for (int a = 0; a < e->n_axes; a++)
                if (!strcmp(e->axes[a].axis, axes.v[j])) pb_fmt_num(num, sizeof num, row->axis[a]);
            pb_sbuf_printf(&prefix, "%s,", num);
        }
        st = copy_side(f, base, e, key, k, prefix.s, header.s, i == 0);
        free(prefix.s);
    }
    free(axes.v);
    free(header.s);
    if (ferror(f)) st = PB_ERR_IO;
    if (fclose(f) != 0) st = PB_ERR_IO;
    if (!st && rename(tmp, path) != 0) {
        pb_log_error("%s: cannot write: %s", path, strerror(errno));
        st = PB_ERR_IO;
    }
    if (st) unlink(tmp);
    return st;
}

/* ---- knee ---- */
typedef struct { double x, y; } xy;
static int xy_cmp(const void *pa, const void *pb) {
    const xy *a = pa, *b = pb;
    return (a->x > b->x) - (a->x < b->x);
}

static double round3(double v) {   /* 3 significant digits, as the decimal text reads */
    char b[64];
    snprintf(b, sizeof b, "%.3g", v);
    return strtod(b, NULL);
}

static void add_extra(pb_experiment *e, int s, double v, int *added) {
    pb_system_spec *sy = &e->systems[s];
    v = round3(v);
    char a[64], b[64];
    pb_fmt_num(a, sizeof a, v);
    int np = pb_experiment_n_points(e, s);
    for (int p = 0; p < np; p++) {
        double x;
        pb_experiment_point_values(e, s, p, &x);
        pb_fmt_num(b, sizeof b, x);
        if (!strcmp(a, b)) return;
    }
    sy->extra = pb_xrealloc(sy->extra, (size_t)(sy->n_extra + 1) * sizeof *sy->extra);
    sy->extra[sy->n_extra++] = strtod(a, NULL);
    (*added)++;
}

int pb_runner_refine(pb_experiment *const *exps, int n_exps, const char *results_dir, int round) {
    return pb_runner_refine_shard(exps, n_exps, results_dir, round, NULL, 0);
}

int pb_runner_refine_shard(pb_experiment *const *exps, int n_exps, const char *results_dir, int round,
                           const pb_shard_plan *plan, int shard) {
    int added = 0;
    for (int x = 0; x < n_exps; x++) {
        pb_experiment *e = exps[x];
        if (e->n_axes != 1 || round >= e->knee_refine || strcmp(e->axes[0].axis, e->knee_axis)) continue;
        for (int s = 0; s < e->n_systems; s++) {
            if (plan && pb_shard_plan_owner(plan, x, s, 0) != shard) continue;   /* another shard's series */
            int np = pb_experiment_n_points(e, s), k = 0;
            xy *pts = pb_xcalloc((size_t)np, sizeof *pts);
            pb_point_metrics *m = pb_xcalloc(1, sizeof *m);
            for (int p = 0; p < np; p++) {
                char base[4200], why[4400];
                point_file pf;
                uint64_t key = point_base(e, s, p, results_dir, base, sizeof base);
                if (read_point(base, key, e, m, &pf, why, sizeof why)) continue;
                double y = pb_pm_get(m, e->knee_metric, NAN);
                if (isnan(y)) continue;
                pb_experiment_point_values(e, s, p, &pts[k].x);
                pts[k++].y = y;
            }
            free(m);
            qsort(pts, (size_t)k, sizeof *pts, xy_cmp);
            double *xs = pb_xcalloc((size_t)k + 1, sizeof *xs), *ys = pb_xcalloc((size_t)k + 1, sizeof *ys);
            for (int i = 0; i < k; i++) { xs[i] = pts[i].x; ys[i] = pts[i].y; }
            pb_knee kn = pb_knee_find(xs, ys, k, e->knee_threshold);
            if (kn.kind == PB_KNEE_FOUND) {
                int i = 1;
                while (i < k && ys[i] <= e->knee_threshold) i++;
                double x0 = xs[i - 1], x1 = xs[i];
                if (x0 > 0 ? x1 / x0 > 1.04 : x1 > x0) {
                    add_extra(e, s, x0 + (x1 - x0) / 3, &added);
                    add_extra(e, s, x0 + 2 * (x1 - x0) / 3, &added);
                }
            } else if (kn.kind == PB_KNEE_ABOVE_AT_START) {
                add_extra(e, s, xs[0] / 2, &added);
                add_extra(e, s, xs[0] / 4, &added);
            } else if (kn.kind == PB_KNEE_NOT_REACHED) {
                add_extra(e, s, xs[k - 1] * 1.3, &added);
                add_extra(e, s, xs[k - 1] * 1.6, &added);
            }
            free(xs);
            free(ys);
            free(pts);
        }
    }
    return added;
}

pb_knee pb_knee_find(const double *x, const double *y, int n, double threshold) {
    pb_knee k = {PB_KNEE_NO_DATA, NAN};
    if (n <= 0) return k;
    if (!(y[0] <= threshold)) return (pb_knee){PB_KNEE_ABOVE_AT_START, x[0]};
    for (int i = 1; i < n; i++) {
        if (y[i] <= threshold) continue;
        double x0 = x[i - 1], x1 = x[i], y0 = y[i - 1], y1 = y[i];
        double r = (isfinite(y1) && y1 > y0) ? x0 + (threshold - y0) * (x1 - x0) / (y1 - y0) : x0;
        return (pb_knee){PB_KNEE_FOUND, r};
    }
    return (pb_knee){PB_KNEE_NOT_REACHED, x[n - 1]};
}

void pb_knee_fmt(pb_knee k, char *buf, size_t n) {
    switch (k.kind) {
    case PB_KNEE_FOUND: snprintf(buf, n, "%.3g", k.rate); break;
    case PB_KNEE_NOT_REACHED: snprintf(buf, n, ">%.3g", k.rate); break;
    case PB_KNEE_ABOVE_AT_START: snprintf(buf, n, "<%.3g", k.rate); break;
    default: snprintf(buf, n, "-"); break;
    }
}
