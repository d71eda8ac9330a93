/* runner.c -- parallel, resumable sweeps; point files; results table; knee detection. */
#include "runner.h"

#include "point_key.h"
#include "shard.h"

#include <dirent.h>
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

/* Temporaries (<file>.tmp.<pid>) left by a killed run: removed when their writer
   is gone (a live pid is another run writing now). */
static void remove_stale_tmp(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *t = strstr(de->d_name, ".tmp.");
        if (!t) continue;
        char *end;
        long pid = strtol(t + 5, &end, 10);
        if (*end || pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue;
        char path[4600];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (unlink(path) == 0) pb_log_debug("removed %s, left by an interrupted run", path);
    }
    closedir(d);
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

/* Write a point's file atomically on a shared filesystem: a temporary unique to this
 * host, process and call (<path>.tmp.<host>.<pid>.<n>), closed (NFS flushes on close),
 * then renamed over path -- readers see the old file or the whole new one, and
 * concurrent writers of the same point (two shards, a resubmitted task) never share a
 * temporary.  No fsync (10 ms a point on ext4): a file a crash cut short fails
 * read_point's length check and is computed again.  Returns PB_OK or PB_ERR_IO with
 * errno kept. */
static pb_status point_write_atomic(const char *path, const void *data, size_t n) {
    static unsigned counter;
    char host[256] = "host";
    if (gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "host");
    host[strcspn(host, "./ ")] = 0;
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s.tmp.%s.%ld.%u", path, host, (long)getpid(), counter++);
    FILE *f = fopen(tmp, "wb");
    if (!f) return PB_ERR_IO;
    int ok = fwrite(data, 1, n, f) == n;
    ok = fflush(f) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        errno = e;
        return PB_ERR_IO;
    }
    return PB_OK;
}

/* ---- point files ---- */
typedef pb_sbuf sbuf;


static pb_status write_point(const char *base, const pb_experiment *e, int sys, int point,
                             const double *vals, const pb_point_metrics *m, uint64_t hash) {
    sbuf b = {0};
    pb_sbuf_printf(&b, "pagedbench-point 2\nkey %016llx\nsource %s\nrevision %s\nexperiment %s\nsystem %s\npoint %d\n",
                   (unsigned long long)hash, pb_source_hash(), pb_source_describe(), e->name, e->systems[sys].id, point);
    for (int a = 0; a < e->n_axes; a++) pb_sbuf_printf(&b, "axis %s %.17g\n", e->axes[a].axis, vals[a]);
    for (int i = 0; i < m->n; i++) pb_sbuf_printf(&b, "metric %s %.17g\n", m->name[i], m->value[i]);
    pb_sbuf_printf(&b, "summary %zu\n%s", strlen(m->summary), m->summary);   /* last: a torn file lacks it */
    char path[4200];
    snprintf(path, sizeof path, "%s.pt", base);
    pb_status st = point_write_atomic(path, b.s, b.len);
    free(b.s);
    return st;
}

/* Parse a point file; it must carry key want_key (its name says so; a file copied under
 * another point's name is refused) and end with its whole summary block (the byte count
 * on the `summary N` line: a file cut short by a crash is refused, and recomputed).
 * Returns 0 on success. */
static int read_point(const char *base, uint64_t want_key, const pb_experiment *e, double *vals,
                      pb_point_metrics *m) {
    char path[4200];
    snprintf(path, sizeof path, "%s.pt", base);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[4096];
    int ok = 0, have_key = 0;
    bool in_summary = false;
    memset(m, 0, sizeof *m);
    size_t slen = 0, want_len = 0, got_len = 0;
    while (fgets(line, sizeof line, f)) {
        if (in_summary) {
            size_t l = strlen(line);
            got_len += l;
            if (slen + l < sizeof m->summary) { memcpy(m->summary + slen, line, l + 1); slen += l; }
            continue;
        }
        line[strcspn(line, "\n")] = 0;
        if (!strcmp(line, "pagedbench-point 2")) ok = 1;
        else if (!strncmp(line, "key ", 4)) have_key = strtoull(line + 4, NULL, 16) == want_key;
        else if (!strncmp(line, "axis ", 5)) {
            char name[64];
            double v;
            if (sscanf(line + 5, "%63s %lf", name, &v) == 2)
                for (int a = 0; a < e->n_axes; a++)
                    if (!strcmp(e->axes[a].axis, name)) vals[a] = v;
        } else if (!strncmp(line, "metric ", 7)) {
            char name[64], num[64];
            if (sscanf(line + 7, "%63s %63s", name, num) == 2 && m->n < PB_MAX_METRICS) pb_pm_set(m, name, strtod(num, NULL));
        } else if (!strncmp(line, "summary ", 8)) {
            in_summary = true;
            want_len = (size_t)strtoull(line + 8, NULL, 10);
        }
    }
    fclose(f);
    return ok && have_key && in_summary && got_len == want_len ? 0 : -1;
}

/* ---- shards ---- */
/* Does this run own point (x, sys, p)?  Without a plan, every point. */
static bool runner_owns(const pb_runner_opts *o, int x, int sys, int p) {
    return !o->plan || pb_shard_plan_owner(o->plan, x, sys, p) == o->shard;
}

/* ---- progress ---- */
static void fmt_dur(char *buf, size_t n, double s) {
    if (s < 0 || !isfinite(s)) { snprintf(buf, n, "?"); return; }
    if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

static void progress_bar(int done, int total, int running, double t0, const char *what) {
    double el = pb_now_s() - t0;
    double eta = done > 0 ? el / done * (total - done) : -1;
    char e1[32], e2[32];
    fmt_dur(e1, sizeof e1, el);
    fmt_dur(e2, sizeof e2, eta);
    int w = 30, fill = total ? done * w / total : w;
    char bar[64];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    fprintf(stderr, "\r[%s] %d/%d points, %d running, %s elapsed, ETA %s  %-40.40s", bar, done, total, running, e1,
            e2, what);
    fflush(stderr);
}

static void point_label(const pb_experiment *e, int sys, const double *vals, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "%s %s", e->name, e->systems[sys].id);
    for (int a = 0; a < e->n_axes && k < n; a++) {
        char num[64];
        pb_fmt_num(num, sizeof num, vals[a]);
        k += (size_t)snprintf(buf + k, n - k, " %s=%s", e->axes[a].axis, num);
    }
}

/* ---- side files (per request, per step) ---- */
static void side_path(const char *base, const char *what, char *buf, size_t n) {
    snprintf(buf, n, "%s.%s.csv", base, what);
}

/* Point ctx paths for the side files the runner was asked for. */
static void side_paths(const char *base, const pb_runner_opts *o, pb_point_ctx *ctx, char *req, char *steps,
                       size_t n) {
    side_path(base, "req", req, n);
    side_path(base, "steps", steps, n);
    ctx->requests_path = o->requests ? req : NULL;
    ctx->timeline_path = o->timeline ? steps : NULL;
}

/* Whether the side files the runner was asked for exist beside a point file. */
static bool side_files_present(const char *base, const pb_runner_opts *o) {
    char p[4300];
    struct stat st;
    side_path(base, "req", p, sizeof p);
    if (o->requests && stat(p, &st) != 0) return false;
    side_path(base, "steps", p, sizeof p);
    if (o->timeline && stat(p, &st) != 0) return false;
    return true;
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
    if (!st) {
        const pb_node *root = pb_config_root(e->cfg);
        char sp[64];
        snprintf(sp, sizeof sp, "systems.%d", sys);
        pb_point_ctx ctx = {e, sys, point, vals, root, pb_node_get(root, sp), o->quick, NULL, NULL};
        char req[4300], steps[4300];
        side_paths(base, o, &ctx, req, steps, sizeof req);
        st = o->fn(&ctx, m, err, sizeof err, o->user);
    }
    if (!st && (st = write_point(base, e, sys, point, vals, m, hash)))
        snprintf(err, sizeof err, "cannot write %s.pt: %s", base, strerror(errno));
    if (st) {
        char path[4200];
        snprintf(path, sizeof path, "%s.err", base);
        char msg[2400];
        int l = snprintf(msg, sizeof msg, "%s: %s\n", pb_status_str(st), *err ? err : "(no message)");
        if (point_write_atomic(path, msg, (size_t)PB_MIN(l, (int)sizeof msg - 1)))   /* say it here, then */
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

static void print_point_line(const pb_experiment *e, int sys, const char *base, uint64_t key, double secs,
                             bool summary) {
    double vals[PB_EXP_MAX_AXES] = {0};
    pb_point_metrics *m = pb_xcalloc(1, sizeof *m);
    if (read_point(base, key, e, vals, m) == 0) {
        char lab[512];
        point_label(e, sys, vals, lab, sizeof lab);
        if (summary && *m->summary) printf("---- %s\n%s", lab, m->summary);
        printf("%-60s", lab);
        const char *show[] = {"normalized_latency", "batched_requests", "token_states_pct", "saving_pct", "time_ms"};
        for (size_t i = 0; i < PB_ARRAY_LEN(show); i++) {
            double v = pb_pm_get(m, show[i], NAN);
            if (!isnan(v)) printf(" %s=%.4g", show[i], v);
        }
        printf("  (%.1fs)\n", secs);
        fflush(stdout);
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
    bool bar;
    double t0;
    pb_runner_stats s;
} sweep;

/* Add (x, sy, p) to the to-do list unless its point file (and the side files asked
 * for) is already there; a stale .err file is removed. */
static void todo_add(sweep *w, int x, int sy, int p) {
    const pb_runner_opts *o = w->o;
    pb_experiment *e = w->exps[x];
    w->s.total++;
    char base[4200];
    uint64_t key = point_base(e, sy, p, o->results_dir, base, sizeof base);
    double vals[PB_EXP_MAX_AXES];
    pb_point_metrics *m = pb_xcalloc(1, sizeof *m);
    int have = !o->fresh && read_point(base, key, e, vals, m) == 0 && side_files_present(base, o);
    free(m);
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
        remove_stale_tmp(dir);
        if (x == 0) remove_stale_tmp(o->results_dir);
        for (int sy = 0; sy < e->n_systems; sy++) {
            int np = pb_experiment_n_points(e, sy);
            for (int p = 0; p < np; p++)
                if (runner_owns(o, x, sy, p)) todo_add(w, x, sy, p);
        }
    }
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
    point_label(e, j->sys, vals, lab, sizeof lab);
    if (WIFSIGNALED(status))
        pb_log_error("%s: worker killed by signal %d", lab, WTERMSIG(status));
    else
        pb_log_error("%s: failed: %s", lab, *msg ? msg : "worker exited with an error and no .err file "
                                                     "(its message, if any, is above)\n");
}

/* The progress bar, labelled with the first running point. */
static void show_progress(const sweep *w) {
    char lab[512] = "";
    for (int q = 0; q < w->jobs; q++)
        if (w->run[q].pid) {
            double vals[PB_EXP_MAX_AXES];
            pb_experiment_point_values(w->exps[w->run[q].exp], w->run[q].sys, w->run[q].point, vals);
            point_label(w->exps[w->run[q].exp], w->run[q].sys, vals, lab, sizeof lab);
            break;
        }
    progress_bar(w->done, w->n_todo, w->running, w->t0, lab);
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
        if (w->bar) fprintf(stderr, "\r%*s\r", 150, "");
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            w->s.computed++;
            if (!w->o->quiet) print_point_line(e, j.sys, base, j.key, pb_now_s() - j.t0, w->o->summary);
        } else {
            w->s.failed++;
            report_failure(e, &j, base, status);
        }
        if (w->bar) show_progress(w);
    }
}

pb_status pb_runner_run(pb_experiment *const *exps, int n_exps, const pb_runner_opts *o, pb_runner_stats *stats) {
    sweep w = {.exps = exps, .o = o, .t0 = pb_now_s()};
    w.bar = o->progress < 0 ? isatty(2) : o->progress > 0;
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
    if (w.bar && w.n_todo) fprintf(stderr, "\n");
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
/* One line per missing point (the first 20), naming the point and its file. */
static void report_missing(const pb_experiment *e, int sys, int point, const char *base, int nth) {
    if (nth >= 20) return;
    double vals[PB_EXP_MAX_AXES];
    pb_experiment_point_values(e, sys, point, vals);
    char lab[512];
    point_label(e, sys, vals, lab, sizeof lab);
    pb_log_error("%s.pt: missing or unreadable point file (%s)", base, lab);
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
                double vals[PB_EXP_MAX_AXES];
                if (read_point(base, key, e, vals, &r->m)) {
                    report_missing(e, sy, p, base, missing++);
                    continue;
                }
                r->m.summary[0] = 0;
                out->n++;
            }
        }
    }
    if (missing) {
        pb_log_error("%d point file(s) missing in %s/points: run them first (or merge the shards' folders); "
                     "a point file counts only for this source (%s, %s), config and input files",
                     missing, results_dir, pb_source_hash(), pb_source_describe());
        pb_results_free(out);
        return PB_ERR_IO;
    }
    if (out->n > 1) qsort(out->rows, (size_t)out->n, sizeof *out->rows, row_cmp);
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

void pb_results_cell(const pb_results *r, const pb_result_row *row, const char *col, char *buf, size_t n) {
    const pb_experiment *e = r->exps[row->exp];
    const pb_system_spec *s = &e->systems[row->sys];
    const char *t;
    buf[0] = 0;
    if (!strcmp(col, "panel")) { snprintf(buf, n, "%s", e->panel); return; }
    if (!strcmp(col, "system")) { snprintf(buf, n, "%s", s->id); return; }
    if (!strcmp(col, "label")) { snprintf(buf, n, "%s", s->label); return; }
    if (!strcmp(col, "experiment")) { snprintf(buf, n, "%s", e->name); return; }
    if (!strcmp(col, "figure")) { snprintf(buf, n, "%s", e->figure); return; }
    if ((t = tag_of(s->tags, s->n_tags, col)) || (t = tag_of(e->tags, e->n_tags, col))) {
        snprintf(buf, n, "%s", t);
        return;
    }
    double v = pb_results_num(r, row, col);
    if (!isnan(v)) pb_fmt_num(buf, n, v);
}

double pb_results_num(const pb_results *r, const pb_result_row *row, const char *col) {
    const pb_experiment *e = r->exps[row->exp];
    for (int a = 0; a < e->n_axes; a++)
        if (!strcmp(e->axes[a].axis, col)) return row->axis[a];
    return pb_pm_get(&row->m, col, NAN);
}

/* ---- CSV ---- */
#define MAX_COLS 96
static void add_col(const char **cols, int *n, const char *c) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(cols[i], c)) return;
    if (*n < MAX_COLS) cols[(*n)++] = c;
}

pb_status pb_results_write_csv(const pb_results *r, const char *path) {
    const char *cols[MAX_COLS];
    int nc = 0;
    if (r->n_exps > 0)
        for (int i = 0; i < r->exps[0]->n_columns; i++) add_col(cols, &nc, r->exps[0]->columns[i]);
    add_col(cols, &nc, "experiment");
    add_col(cols, &nc, "system");
    add_col(cols, &nc, "label");
    for (int x = 0; x < r->n_exps; x++) {
        const pb_experiment *e = r->exps[x];
        for (int a = 0; a < e->n_axes; a++) add_col(cols, &nc, e->axes[a].axis);
        for (int t = 0; t < e->n_tags; t++) add_col(cols, &nc, e->tags[t].name);
        for (int s = 0; s < e->n_systems; s++)
            for (int t = 0; t < e->systems[s].n_tags; t++) add_col(cols, &nc, e->systems[s].tags[t].name);
    }
    for (int i = 0; i < r->n; i++)
        for (int k = 0; k < r->rows[i].m.n; k++) add_col(cols, &nc, r->rows[i].m.name[k]);

    sbuf b = {0};
    for (int c = 0; c < nc; c++) pb_sbuf_printf(&b, "%s%s", c ? "," : "", cols[c]);
    pb_sbuf_printf(&b, "\n");
    for (int i = 0; i < r->n; i++) {
        for (int c = 0; c < nc; c++) {
            char cell[256];
            pb_results_cell(r, &r->rows[i], cols[c], cell, sizeof cell);
            for (char *p = cell; *p; p++)
                if (*p == ',' || *p == '\n') *p = ';';
            pb_sbuf_printf(&b, "%s%s", c ? "," : "", cell);
        }
        pb_sbuf_printf(&b, "\n");
    }
    pb_status st = pb_write_file_atomic(path, b.s, b.len);
    free(b.s);
    return st;
}

/* ---- per-request and per-step CSVs: the points' side files, concatenated ---- */
#include "metrics.h"   /* PB_METRICS_REQUEST_COLUMNS, PB_METRICS_STEP_COLUMNS */

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
pb_status pb_results_write_side(const pb_results *r, const char *results_dir, const char *what, const char *path) {
    const char *axes[PB_EXP_MAX_AXES * 8];
    int na = 0;
    for (int x = 0; x < r->n_exps; x++)
        for (int a = 0; a < r->exps[x]->n_axes; a++) {
            bool seen = false;
            for (int i = 0; i < na; i++) seen |= !strcmp(axes[i], r->exps[x]->axes[a].axis);
            if (!seen && na < (int)PB_ARRAY_LEN(axes)) axes[na++] = r->exps[x]->axes[a].axis;
        }
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        pb_log_error("%s: cannot write: %s", tmp, strerror(errno));
        return PB_ERR_IO;
    }
    pb_status st = PB_OK;
    char *line = NULL;
    size_t cap = 0;
    for (int i = 0; i < r->n && !st; i++) {
        const pb_result_row *row = &r->rows[i];
        const pb_experiment *e = r->exps[row->exp];
        char base[4200], side[4300];
        pb_point_path(e, row->sys, row->point, results_dir, base, sizeof base);
        side_path(base, what, side, sizeof side);
        FILE *in = fopen(side, "r");
        if (!in) {
            pb_log_error("%s: missing (run with --%s)", side, !strcmp(what, "req") ? "requests" : "timeline");
            st = PB_ERR_IO;
            break;
        }
        char prefix[1024];
        size_t k = (size_t)snprintf(prefix, sizeof prefix, "%s,%s,", e->name, e->systems[row->sys].id);
        for (int j = 0; j < na && k < sizeof prefix; j++) {
            char num[64] = "";
            for (int a = 0; a < e->n_axes; a++)
                if (!strcmp(e->axes[a].axis, axes[j])) pb_fmt_num(num, sizeof num, row->axis[a]);
            k += (size_t)snprintf(prefix + k, sizeof prefix - k, "%s,", num);
        }
        ssize_t l;
        bool head = true;
        while ((l = getline(&line, &cap, in)) >= 0) {
            if (head) {   /* the point file's header: ours once, with the prefix columns */
                head = false;
                if (i > 0) continue;
                fprintf(f, "experiment,system,");
                const char *own = !strcmp(what, "req") ? PB_METRICS_REQUEST_COLUMNS : PB_METRICS_STEP_COLUMNS;
                for (int j = 0; j < na; j++) fprintf(f, "%s%s,", in_columns(own, axes[j]) ? "axis." : "", axes[j]);
            } else
                fputs(prefix, f);
            fwrite(line, 1, (size_t)l, f);
        }
        fclose(in);
    }
    free(line);
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
                char base[4200];
                double v;
                uint64_t key = point_base(e, s, p, results_dir, base, sizeof base);
                if (read_point(base, key, e, &v, m)) continue;
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
