/* point_key.c -- a sweep point's identity: resolved config, input file contents, code. */
#include "point_key.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "workload.h"   /* pb_workload_from_node, pb_workload_resolve_file */

#if defined(__has_include)
#if __has_include("pb_source_rev.h")
#include "pb_source_rev.h"   /* generated at build time by tools/source_rev.cmake */
#endif
#endif
#ifndef PB_SOURCE_HASH
#define PB_SOURCE_HASH "unknown"   /* built without the CMake step (kernels/emu) */
#define PB_SOURCE_DESCRIBE "unknown"
#endif

const char *pb_source_hash(void) { return PB_SOURCE_HASH; }
const char *pb_source_describe(void) { return PB_SOURCE_DESCRIBE; }

uint64_t pb_fnv64(uint64_t h, const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) { h ^= s[i]; h *= 1099511628211ULL; }
    return h;
}

pb_status pb_fnv64_file(const char *path, int64_t *size, uint64_t *hash, char *err, size_t errlen) {
    pb_status st;
    FILE *fp = pb_input_open(path, &st, err, errlen);
    if (!fp) return st;
    uint64_t h = PB_FNV64_INIT;
    int64_t n = 0;
    char *buf = pb_xmalloc(1 << 16);
    size_t k;
    while ((k = fread(buf, 1, 1 << 16, fp)) > 0) {
        h = pb_fnv64(h, buf, k);
        n += (int64_t)k;
    }
    bool bad = ferror(fp) != 0;
    fclose(fp);
    free(buf);
    if (bad) {
        snprintf(err, errlen, "%s: read error", path);
        return PB_ERR_IO;
    }
    *size = n;
    *hash = h;
    return PB_OK;
}

/* ---- private resolved copies of config trees ---- */
static pb_node *new_node(pb_node_kind kind, const char *key, pb_node *parent) {
    pb_node *c = pb_xcalloc(1, sizeof *c);
    c->kind = kind;
    c->file = "(point)";
    c->key = key ? pb_xstrdup(key) : NULL;
    c->parent = parent;
    return c;
}

static void add_kid(pb_node *m, pb_node *k) {
    if (m->n_kids == m->cap_kids) {
        m->cap_kids = m->cap_kids ? 2 * m->cap_kids : 8;
        m->kids = pb_xrealloc(m->kids, (size_t)m->cap_kids * sizeof *m->kids);
    }
    m->kids[m->n_kids++] = k;
}

static pb_node *copy_tree(const pb_node *n, pb_node *parent) {
    pb_node *c = new_node(n->kind, n->key, parent);
    c->file = n->file;
    c->line = n->line;
    c->col = n->col;
    c->key_line = n->key_line;
    c->key_col = n->key_col;
    c->quoted = n->quoted;
    c->value = n->value ? pb_xstrdup(n->value) : NULL;
    for (int i = 0; i < n->n_kids; i++) add_kid(c, copy_tree(n->kids[i], c));
    return c;
}

void pb_point_tree_free(pb_node *n) {
    if (!n) return;
    for (int i = 0; i < n->n_kids; i++) pb_point_tree_free(n->kids[i]);
    free(n->kids);
    free((char *)n->key);
    free((char *)n->value);
    free(n);
}

static void make_kind(pb_node *n, pb_node_kind kind) {
    for (int i = 0; i < n->n_kids; i++) pb_point_tree_free(n->kids[i]);
    n->n_kids = 0;
    free((char *)n->value);
    n->value = NULL;
    n->kind = kind;
}

/* Assign scalar text `value` at dotted `path` under n, as pb_config_set does: missing
 * maps are created, a sequence item is addressed by its index. */
static void assign(pb_node *n, const char *path, const char *value) {
    const char *dot = strchr(path, '.');
    size_t len = dot ? (size_t)(dot - path) : strlen(path);
    char comp[256];
    snprintf(comp, sizeof comp, "%.*s", (int)PB_MIN(len, sizeof comp - 1), path);
    pb_node *kid = NULL;
    if (n->kind == PB_NODE_SEQ) {
        char *end;
        long i = strtol(comp, &end, 10);
        if (*end || i < 0 || i >= n->n_kids) return;   /* pb_config_set rejects it too */
        kid = n->kids[i];
    } else {
        if (n->kind != PB_NODE_MAP) make_kind(n, PB_NODE_MAP);
        for (int i = 0; i < n->n_kids; i++)
            if (!strcmp(n->kids[i]->key, comp)) kid = n->kids[i];
        if (!kid) {
            kid = new_node(dot ? PB_NODE_MAP : PB_NODE_SCALAR, comp, n);
            add_kid(n, kid);
        }
    }
    if (dot) {
        if (kid->kind == PB_NODE_SCALAR) make_kind(kid, PB_NODE_MAP);
        assign(kid, dot + 1, value);
    } else {
        make_kind(kid, PB_NODE_SCALAR);
        kid->value = pb_xstrdup(value);
    }
}

static bool skipped_top_key(const char *k) {
    static const char *const NON_SEMANTIC[] = {"name", "figure", "panel", "title", "description", "columns",
                                               "knee", "quick", "tags", "sweep", "systems"};
    for (size_t j = 0; j < PB_ARRAY_LEN(NON_SEMANTIC); j++)
        if (!strcmp(k, NON_SEMANTIC[j])) return true;
    return false;
}

static bool skipped_system_key(const char *k) {
    return !strcmp(k, "label") || !strcmp(k, "tags") || !strcmp(k, "sweep");
}

/* The point's resolved trees: the top level (semantic keys only) and its system's map. */
static void resolve(const pb_experiment *e, int sys, int point, pb_node **root_out, pb_node **sys_out) {
    const pb_node *root = pb_config_root(e->cfg);
    pb_node *r = new_node(PB_NODE_MAP, NULL, NULL);
    for (int i = 0; i < root->n_kids; i++)
        if (!skipped_top_key(root->kids[i]->key)) add_kid(r, copy_tree(root->kids[i], r));
    const pb_node *sn = e->systems[sys].node;
    pb_node *s = new_node(PB_NODE_MAP, NULL, NULL);
    for (int i = 0; i < sn->n_kids; i++)
        if (!skipped_system_key(sn->kids[i]->key)) add_kid(s, copy_tree(sn->kids[i], s));
    double vals[PB_EXP_MAX_AXES];
    pb_experiment_point_values(e, sys, point, vals);
    for (int a = 0; a < e->n_axes; a++) {
        char num[64];
        pb_fmt_num(num, sizeof num, vals[a]);
        const char *set = e->axes[a].set;
        char own[32], first[64];
        int lo = snprintf(own, sizeof own, "systems.%d.", sys);
        snprintf(first, sizeof first, "%.*s", (int)strcspn(set, "."), set);
        if (!strncmp(set, "system.", 7)) assign(s, set + 7, num);
        else if (!strncmp(set, own, (size_t)lo)) assign(s, set + lo, num);   /* this system's option */
        else if (!skipped_top_key(first)) assign(r, set, num);                 /* else: no effect here */
    }
    *root_out = r;
    *sys_out = s;
}

pb_node *pb_point_resolved_workload(const pb_experiment *e, int sys, int point) {
    pb_node *r, *s;
    resolve(e, sys, point, &r, &s);
    pb_node *w = NULL;
    for (int i = 0; i < r->n_kids; i++)
        if (!strcmp(r->kids[i]->key, "workload")) {
            w = r->kids[i];
            r->kids[i] = r->kids[--r->n_kids];
            w->parent = NULL;
        }
    pb_point_tree_free(r);
    pb_point_tree_free(s);
    return w;
}

/* ---- canonical text ---- */
static int key_cmp(const void *a, const void *b) {
    return strcmp((*(const pb_node *const *)a)->key, (*(const pb_node *const *)b)->key);
}

static void canon(pb_sbuf *b, const pb_node *n) {
    switch (n->kind) {
    case PB_NODE_SCALAR: pb_sbuf_printf(b, "s%zu:%s", strlen(n->value), n->value); break;
    case PB_NODE_SEQ:
        pb_sbuf_printf(b, "[");
        for (int i = 0; i < n->n_kids; i++) canon(b, n->kids[i]);
        pb_sbuf_printf(b, "]");
        break;
    case PB_NODE_MAP: {
        const pb_node **k = pb_xcalloc((size_t)n->n_kids + 1, sizeof *k);
        memcpy(k, n->kids, (size_t)n->n_kids * sizeof *k);
        qsort(k, (size_t)n->n_kids, sizeof *k, key_cmp);
        pb_sbuf_printf(b, "{");
        for (int i = 0; i < n->n_kids; i++) {
            pb_sbuf_printf(b, "k%zu:%s", strlen(k[i]->key), k[i]->key);
            canon(b, k[i]);
        }
        pb_sbuf_printf(b, "}");
        free(k);
        break;
    }
    }
}

/* ---- input files ---- */
typedef struct {
    char path[PB_WL_PATH];
    long long size, mtime_s, mtime_ns;
    uint64_t hash;
} file_hash;
static file_hash *g_files;
static int g_n_files;

/* "<size> <fnv64>" of a file's content, or "missing" / "unreadable". */
static void hash_file(const char *path, char *out, size_t n) {
    struct stat st;
    if (stat(path, &st)) { snprintf(out, n, "missing"); return; }
    for (int i = 0; i < g_n_files; i++) {
        file_hash *f = &g_files[i];
        if (!strcmp(f->path, path) && f->size == (long long)st.st_size && f->mtime_s == (long long)st.st_mtim.tv_sec &&
            f->mtime_ns == (long long)st.st_mtim.tv_nsec) {
            snprintf(out, n, "%lld %016llx", f->size, (unsigned long long)f->hash);
            return;
        }
    }
    uint64_t h;
    int64_t size;
    char why[64];
    if (pb_fnv64_file(path, &size, &h, why, sizeof why)) { snprintf(out, n, "unreadable"); return; }
    g_files = pb_xrealloc(g_files, (size_t)(g_n_files + 1) * sizeof *g_files);
    file_hash *f = &g_files[g_n_files++];
    snprintf(f->path, sizeof f->path, "%s", path);
    f->size = size;
    f->mtime_s = (long long)st.st_mtim.tv_sec;
    f->mtime_ns = (long long)st.st_mtim.tv_nsec;
    f->hash = h;
    snprintf(out, n, "%lld %016llx", (long long)size, (unsigned long long)h);
}

static void add_file(pb_sbuf *b, const char *role, const char *path) {
    char h[64];
    if (path && *path) hash_file(path, h, sizeof h);
    else snprintf(h, sizeof h, "none");
    pb_sbuf_printf(b, "file %s %s\n", role, h);
}

/* Every file the point reads.  A workload that does not parse is keyed by its text
 * alone (the point fails when run, and its key does not matter). */
static void add_inputs(pb_sbuf *b, const pb_node *root, const pb_node *sys) {
    const pb_node *w = pb_node_get(root, "workload");
    if (w) {
        pb_workload_cfg wc;
        pb_cfg_err err;
        pb_cfg_err_clear(&err);
        if (!pb_workload_from_node(w, &wc, &err)) {
            char buf[PB_WL_PATH];
            add_file(b, "workload.trace", wc.trace);
            add_file(b, "workload.file", pb_workload_resolve_file(&wc, buf, sizeof buf));
            add_file(b, "workload.replay_file", pb_workload_resolve_replay_file(&wc, buf, sizeof buf));
        }
    }
    const pb_node *prof = pb_node_get(sys, "sim.profile");
    if (prof && prof->kind == PB_NODE_SCALAR) add_file(b, "system.sim.profile", prof->value);
}

/* Remove the node at dotted path under n (a map path), if any. */
static void drop(pb_node *n, const char *path) {
    const char *dot = strchr(path, '.');
    size_t len = dot ? (size_t)(dot - path) : strlen(path);
    if (!n || n->kind != PB_NODE_MAP) return;
    for (int i = 0; i < n->n_kids; i++) {
        pb_node *k = n->kids[i];
        if (strlen(k->key) != len || strncmp(k->key, path, len)) continue;
        if (dot) { drop(k, dot + 1); return; }
        pb_point_tree_free(k);
        memmove(&n->kids[i], &n->kids[i + 1], (size_t)(n->n_kids - i - 1) * sizeof *n->kids);
        n->n_kids--;
        return;
    }
}

char *pb_point_key_text(const pb_experiment *e, int sys, int point) {
    pb_node *r, *s;
    resolve(e, sys, point, &r, &s);
    pb_sbuf files = {0}, b = {0};
    add_inputs(&files, r, s);
    /* input files count by content (the lines above), not by where they lie on this host */
    drop(r, "workload.trace");
    drop(r, "workload.file");
    drop(r, "workload.replay_file");
    drop(s, "sim.profile");
    pb_sbuf_printf(&b, "pagedbench-point-key 2\nsource %s\nconfig ", pb_source_hash());
    canon(&b, r);
    pb_sbuf_printf(&b, "\nsystem ");
    canon(&b, s);
    pb_sbuf_printf(&b, "\n%s", files.s ? files.s : "");
    free(files.s);
    pb_point_tree_free(r);
    pb_point_tree_free(s);
    return b.s;
}

uint64_t pb_point_key(const pb_experiment *e, int sys, int point) {
    char *t = pb_point_key_text(e, sys, point);
    uint64_t h = pb_fnv64(PB_FNV64_INIT, t, strlen(t));
    free(t);
    return h;
}
