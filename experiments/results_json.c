/* results_json.c -- the results JSON beside a results CSV (results_json.h). */
#include "results_json.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "point_key.h"   /* pb_source_hash */
#include "system.h"      /* pb_system_describe_executor */

/* A scalar as JSON: quoted -> string; else integer, real, true/false, null or string. */
static json_t *scalar_json(const pb_node *n) {
    const char *v = n->value ? n->value : "";
    if (!n->quoted) {
        char *end;
        errno = 0;
        long long i = strtoll(v, &end, 10);
        if (*v && !*end && !errno) return json_integer(i);
        double d = strtod(v, &end);
        if (*v && !*end && isfinite(d)) return json_real(d);
        if (!strcmp(v, "true")) return json_true();
        if (!strcmp(v, "false")) return json_false();
        if (!strcmp(v, "null") || !strcmp(v, "~") || !*v) return json_null();
    }
    return json_string(v);
}

/* The resolved config tree as a JSON object / array / scalar. */
static json_t *node_json(const pb_node *n) {
    if (!n) return json_null();
    if (n->kind == PB_NODE_SCALAR) return scalar_json(n);
    json_t *j = n->kind == PB_NODE_MAP ? json_object() : json_array();
    for (int i = 0; i < n->n_kids; i++) {
        if (n->kind == PB_NODE_MAP) json_object_set_new(j, n->kids[i]->key, node_json(n->kids[i]));
        else json_array_append_new(j, node_json(n->kids[i]));
    }
    return j;
}

static json_t *machine_json(void) {
    json_t *m = json_object();
    struct utsname u;
    if (uname(&u) == 0) {
        json_object_set_new(m, "hostname", json_string(u.nodename));
        json_object_set_new(m, "os", json_string(u.sysname));
        json_object_set_new(m, "kernel", json_string(u.release));
        json_object_set_new(m, "arch", json_string(u.machine));
    }
    json_object_set_new(m, "cpus", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            char *v = strchr(line, ':') + 1;
            while (*v == ' ') v++;
            v[strcspn(v, "\n")] = 0;
            json_object_set_new(m, "cpu", json_string(v));
            break;
        }
    if (f) fclose(f);
#ifdef PB_HAVE_CUDA
    json_object_set_new(m, "cuda_build", json_true());
#else
    json_object_set_new(m, "cuda_build", json_false());
#endif
    return m;
}

/* The sweep axis that sets `seed`, or -1 (the experiment's seed holds for every point). */
static int seed_axis(const pb_experiment *e) {
    for (int k = 0; k < e->n_axes; k++)
        if (!strcmp(e->axes[k].set, "seed")) return k;
    return -1;
}

/* Every point of the results table: experiment, system, seed, axes, metrics (NaN -> null). */
static json_t *points_json(const pb_results *r) {
    json_t *a = json_array();
    for (int i = 0; i < r->n; i++) {
        const pb_result_row *row = &r->rows[i];
        const pb_experiment *e = r->exps[row->exp];
        json_t *p = json_object(), *ax = json_object(), *m = json_object();
        json_object_set_new(p, "experiment", json_string(e->name));
        json_object_set_new(p, "system", json_string(e->systems[row->sys].id));
        json_object_set_new(p, "label", json_string(e->systems[row->sys].label));
        int sk = seed_axis(e);   /* the point's own seed: the axis value when seed is swept */
        json_object_set_new(p, "seed", json_integer(sk < 0 ? (json_int_t)e->seed : (json_int_t)row->axis[sk]));
        for (int k = 0; k < e->n_axes; k++) json_object_set_new(ax, e->axes[k].axis, json_real(row->axis[k]));
        for (int k = 0; k < row->m.n; k++)
            json_object_set_new(m, row->m.name[k], isfinite(row->m.value[k]) ? json_real(row->m.value[k]) : json_null());
        json_object_set_new(p, "axes", ax);
        json_object_set_new(p, "metrics", m);
        json_array_append_new(a, p);
    }
    return a;
}

pb_status pb_results_write_json(const char *path, const char *figure, pb_experiment *const *exps, int n, bool quick,
                               const pb_results *res) {
    json_t *root = json_object(), *ex = json_array();
    json_object_set_new(root, "format", json_string("pagedbench-results 2"));
    json_object_set_new(root, "figure", json_string(figure));
    json_object_set_new(root, "git_revision", json_string(pb_git_rev()));
    json_object_set_new(root, "source_hash", json_string(pb_source_hash()));
    json_object_set_new(root, "quick", json_boolean(quick));
    json_object_set_new(root, "machine", machine_json());
    for (int i = 0; i < n; i++) {
        const pb_experiment *e = exps[i];
        char desc[512];
        pb_system_describe_executor(e, desc, sizeof desc);
        const char *base = strrchr(e->path, '/');
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(e->name));
        json_object_set_new(x, "file", json_string(base ? base + 1 : e->path));
        int sk = seed_axis(e);   /* swept: null here, the axis named, each point's own in points[] */
        json_object_set_new(x, "seed", sk < 0 ? json_integer((json_int_t)e->seed) : json_null());
        json_object_set_new(x, "seed_swept_by", sk < 0 ? json_null() : json_string(e->axes[sk].axis));
        json_object_set_new(x, "executor", json_string(e->executor));
        json_object_set_new(x, "device", json_string(desc));
        json_object_set_new(x, "knee_threshold", json_real(e->knee_threshold));
        json_object_set_new(x, "config", node_json(pb_config_root(e->cfg)));
        json_array_append_new(ex, x);
    }
    json_object_set_new(root, "experiments", ex);
    json_object_set_new(root, "points", points_json(res));
    char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (!text) return PB_ERR_IO;
    size_t len = strlen(text);
    char *doc = pb_xmalloc(len + 1);   /* the document and a final newline */
    memcpy(doc, text, len);
    doc[len] = '\n';
    free(text);
    pb_status st = pb_write_file_atomic(path, doc, len + 1);
    free(doc);
    return st;
}
