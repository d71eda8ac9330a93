/* config.c -- libyaml document -> pb_node tree; includes; --set; schema checks. */
#define _POSIX_C_SOURCE 200809L
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct pb_config {
    pb_node *root;
    char *path;
    void **owned;           /* every allocation of the tree, freed on destroy */
    size_t n_owned, cap_owned;
};

/* ---- ownership ---- */
static void *own(pb_config *c, void *p) {
    if (c->n_owned == c->cap_owned) {
        c->cap_owned = c->cap_owned ? 2 * c->cap_owned : 64;
        c->owned = pb_xrealloc(c->owned, c->cap_owned * sizeof *c->owned);
    }
    c->owned[c->n_owned++] = p;
    return p;
}
static char *own_str(pb_config *c, const char *s) { return own(c, pb_xstrdup(s)); }

static pb_node *node_new(pb_config *c, pb_node_kind kind, const char *file, int line, int col) {
    pb_node *n = own(c, pb_xcalloc(1, sizeof *n));
    n->kind = kind;
    n->file = file;
    n->line = line;
    n->col = col;
    return n;
}

static void node_add(pb_config *c, pb_node *parent, pb_node *kid) {
    if (parent->n_kids == parent->cap_kids) {
        int cap = parent->cap_kids ? 2 * parent->cap_kids : 8;
        pb_node **k = own(c, pb_xcalloc((size_t)cap, sizeof *k));
        if (parent->n_kids) memcpy(k, parent->kids, (size_t)parent->n_kids * sizeof *k);
        parent->kids = k;
        parent->cap_kids = cap;
    }
    parent->kids[parent->n_kids++] = kid;
    kid->parent = parent;
}

void pb_config_destroy(pb_config *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n_owned; i++) free(c->owned[i]);
    free(c->owned);
    free(c->path);
    free(c);
}
pb_node *pb_config_root(const pb_config *c) { return c->root; }
const char *pb_config_path(const pb_config *c) { return c->path; }

pb_config *pb_config_new(const char *name) {
    pb_config *c = pb_xcalloc(1, sizeof *c);
    c->path = pb_xstrdup(name);
    c->root = node_new(c, PB_NODE_MAP, own_str(c, name), 0, 0);
    return c;
}

pb_node *pb_config_scalar(pb_config *c, const char *value, const char *file, int line, int col) {
    pb_node *n = node_new(c, PB_NODE_SCALAR, file, line, col);
    n->value = own_str(c, value);
    return n;
}

static pb_node *clone_if(pb_config *c, const pb_node *n, bool (*keep)(const pb_node *)) {
    pb_node *k = node_new(c, n->kind, n->file, n->line, n->col);
    k->key = n->key ? own_str(c, n->key) : NULL;
    k->key_line = n->key_line;
    k->key_col = n->key_col;
    k->value = n->value ? own_str(c, n->value) : NULL;
    k->quoted = n->quoted;
    for (int i = 0; i < n->n_kids; i++)
        if (!keep || keep(n->kids[i])) node_add(c, k, clone_if(c, n->kids[i], keep));
    return k;
}

pb_node *pb_config_clone_node(pb_config *c, const pb_node *n) { return clone_if(c, n, NULL); }

pb_config *pb_config_clone_if(const pb_config *src, bool (*keep)(const pb_node *n)) {
    pb_config *c = pb_xcalloc(1, sizeof *c);
    c->path = pb_xstrdup(src->path);
    /* node file names point into src's strings: the clone must not outlive src */
    c->root = clone_if(c, src->root, keep);
    return c;
}

pb_config *pb_config_clone(const pb_config *src) { return pb_config_clone_if(src, NULL); }

void pb_node_put(pb_config *c, pb_node *map, const char *key, pb_node *v) {
    v->key = own_str(c, key);
    for (int i = 0; i < map->n_kids; i++)
        if (!strcmp(map->kids[i]->key, key)) {
            if (!v->key_line) { v->key_line = map->kids[i]->key_line; v->key_col = map->kids[i]->key_col; }
            map->kids[i] = v;
            v->parent = map;
            return;
        }
    node_add(c, map, v);
}

void pb_node_overlay(pb_config *c, pb_node *dst, const pb_node *src) {
    for (int i = 0; i < src->n_kids; i++) {
        const pb_node *s = src->kids[i];
        pb_node *d = NULL;
        for (int j = 0; j < dst->n_kids; j++)
            if (!strcmp(dst->kids[j]->key, s->key)) d = dst->kids[j];
        if (d && d->kind == PB_NODE_MAP && s->kind == PB_NODE_MAP) pb_node_overlay(c, d, s);
        else pb_node_put(c, dst, s->key, pb_config_clone_node(c, s));
    }
}

/* ---- errors ---- */
void pb_cfg_err_clear(pb_cfg_err *e) { e->count = 0; e->msg[0] = 0; }

static void err_vadd(pb_cfg_err *e, const char *file, int line, int col, const char *fmt, va_list ap) {
    if (e->count >= PB_CFG_MAX_ERRORS) { e->count++; return; }
    size_t used = strlen(e->msg);
    if (used + 2 >= sizeof e->msg) { e->count++; return; }
    char *p = e->msg + used;
    size_t room = sizeof e->msg - used;
    int k;
    if (line > 0) k = snprintf(p, room, "%s%s:%d:%d: ", e->count ? "\n" : "", file, line, col);
    else          k = snprintf(p, room, "%s%s: ", e->count ? "\n" : "", file);
    if (k > 0 && (size_t)k < room) vsnprintf(p + k, room - (size_t)k, fmt, ap);
    e->count++;
}
void pb_cfg_err_add_line(pb_cfg_err *e, const char *line) {
    if (e->count >= PB_CFG_MAX_ERRORS) { e->count++; return; }
    size_t used = strlen(e->msg);
    snprintf(e->msg + used, sizeof e->msg - used, "%s%s", e->count ? "\n" : "", line);
    e->count++;
}

static pb_status err_at(pb_cfg_err *e, const char *file, int line, int col, const char *fmt, ...) {
    va_list ap; va_start(ap, fmt); err_vadd(e, file, line, col, fmt, ap); va_end(ap);
    return PB_ERR_INVALID;
}
pb_status pb_cfg_fail(pb_cfg_err *e, const pb_node *n, bool at_key, const char *fmt, ...) {
    va_list ap; va_start(ap, fmt);
    if (at_key && n->key) err_vadd(e, n->file, n->key_line, n->key_col, fmt, ap);
    else                  err_vadd(e, n->file, n->line, n->col, fmt, ap);
    va_end(ap);
    return PB_ERR_INVALID;
}

/* ---- loading ---- */
/* Bounds on hostile input (config.h): nesting depth, enforced while parsing (an event
   pre-scan, before libyaml builds its document), and the number of nodes the tree may
   hold after aliases are expanded (a "billion laughs" file is a few lines). */
typedef struct {
    pb_config *c;
    yaml_document_t *doc;
    const char *file;
    pb_cfg_err *err;
    int64_t budget;          /* nodes still allowed in the tree */
} conv_ctx;

static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211ULL; }
    return h;
}

static pb_status convert(conv_ctx *x, yaml_node_t *y, pb_node **out, int depth) {
    pb_config *c = x->c;
    const char *file = x->file;
    pb_cfg_err *err = x->err;
    int line = (int)y->start_mark.line + 1, col = (int)y->start_mark.column + 1;
    if (depth > PB_CFG_MAX_DEPTH) return err_at(err, file, line, col, "nesting deeper than %d levels", PB_CFG_MAX_DEPTH);
    if (--x->budget < 0)
        return err_at(err, file, line, col, "more than %d nodes after expanding aliases (an alias bomb?)",
                      PB_CFG_MAX_NODES);
    switch (y->type) {
    case YAML_SCALAR_NODE: {
        pb_node *n = node_new(c, PB_NODE_SCALAR, file, line, col);
        n->value = own_str(c, (const char *)y->data.scalar.value);
        n->quoted = y->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                    y->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        *out = n;
        return PB_OK;
    }
    case YAML_SEQUENCE_NODE: {
        pb_node *n = node_new(c, PB_NODE_SEQ, file, line, col);
        for (yaml_node_item_t *it = y->data.sequence.items.start; it < y->data.sequence.items.top; it++) {
            pb_node *kid;
            pb_status s = convert(x, yaml_document_get_node(x->doc, *it), &kid, depth + 1);
            if (s) return s;
            node_add(c, n, kid);
        }
        *out = n;
        return PB_OK;
    }
    case YAML_MAPPING_NODE: {
        pb_node *n = node_new(c, PB_NODE_MAP, file, line, col);
        pb_status st = PB_OK;
        /* duplicate keys: an open-addressing table of kid indices (hashed, O(n)) */
        size_t np = (size_t)(y->data.mapping.pairs.top - y->data.mapping.pairs.start);
        size_t tcap = 16;
        while (tcap < 2 * np) tcap *= 2;
        int *table = pb_xmalloc(tcap * sizeof *table);
        for (size_t i = 0; i < tcap; i++) table[i] = -1;
        for (yaml_node_pair_t *p = y->data.mapping.pairs.start; p < y->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
            int kl = (int)k->start_mark.line + 1, kc = (int)k->start_mark.column + 1;
            if (k->type != YAML_SCALAR_NODE) {
                st = err_at(err, file, kl, kc, "a key must be a plain name");
                continue;
            }
            const char *key = (const char *)k->data.scalar.value;
            if (strcmp(key, "<<") == 0) {
                st = err_at(err, file, kl, kc, "merge keys ('<<') are not supported; write the keys out");
                continue;
            }
            size_t slot = (size_t)str_hash(key) & (tcap - 1);
            const pb_node *dup = NULL;
            while (table[slot] >= 0) {
                if (strcmp(n->kids[table[slot]]->key, key) == 0) { dup = n->kids[table[slot]]; break; }
                slot = (slot + 1) & (tcap - 1);
            }
            if (dup) {
                st = err_at(err, file, kl, kc, "duplicate key '%s' (first defined at line %d)", key,
                            dup->key_line);
                if (err->count > PB_CFG_MAX_ERRORS) break;
                continue;
            }
            pb_node *kid;
            pb_status s = convert(x, yaml_document_get_node(x->doc, p->value), &kid, depth + 1);
            if (s) {
                st = s;
                if (x->budget < 0 || err->count > PB_CFG_MAX_ERRORS) break;
                continue;
            }
            kid->key = own_str(c, key);
            kid->key_line = kl;
            kid->key_col = kc;
            table[slot] = n->n_kids;
            node_add(c, n, kid);
        }
        free(table);
        *out = n;
        return st;
    }
    default:
        return err_at(err, file, line, col, "empty YAML node");
    }
}

static void set_input(yaml_parser_t *parser, FILE *f, const char *text) {
    if (f) yaml_parser_set_input_file(parser, f);
    else   yaml_parser_set_input_string(parser, (const unsigned char *)text, strlen(text));
}

static pb_status yaml_problem(yaml_parser_t *parser, const char *file, pb_cfg_err *err) {
    yaml_mark_t m = parser->problem_mark;
    return err_at(err, file, (int)m.line + 1, (int)m.column + 1, "malformed YAML: %s%s%s",
                  parser->problem ? parser->problem : "syntax error", parser->context ? " " : "",
                  parser->context ? parser->context : "");
}

/* The event pre-scan: nesting depth and a single document, checked as the parser
   streams (so 100k nested brackets stop at level PB_CFG_MAX_DEPTH, in microseconds). */
static pb_status prescan(const char *file, FILE *f, const char *text, pb_cfg_err *err) {
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    set_input(&parser, f, text);
    int depth = 0, docs = 0;
    pb_status st = PB_OK;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) { st = yaml_problem(&parser, file, err); break; }
        yaml_event_type_t t = ev.type;
        int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT) break;
        if (t == YAML_DOCUMENT_START_EVENT && ++docs > 1) {
            st = err_at(err, file, line, col, "a second YAML document ('---'): one document per file");
            break;
        }
        if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
            if (++depth > PB_CFG_MAX_DEPTH) {
                st = err_at(err, file, line, col, "nesting deeper than %d levels", PB_CFG_MAX_DEPTH);
                break;
            }
        } else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) {
            depth--;
        }
    }
    yaml_parser_delete(&parser);
    return st;
}

/* Parse YAML from a file or a string into a tree owned by c.  Root may be any kind. */
static pb_status parse_into(pb_config *c, const char *file, FILE *f, const char *text,
                            pb_node **out, pb_cfg_err *err) {
    pb_status s = prescan(file, f, text, err);
    if (s) return s;
    if (f && fseek(f, 0, SEEK_SET) != 0) return err_at(err, file, 0, 0, "cannot rewind: %s", strerror(errno));
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    set_input(&parser, f, text);
    if (!yaml_parser_load(&parser, &doc)) {
        yaml_problem(&parser, file, err);
        yaml_parser_delete(&parser);
        return PB_ERR_INVALID;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) s = err_at(err, file, 0, 0, "empty document");
    else {
        conv_ctx x = {c, &doc, file, err, PB_CFG_MAX_NODES};
        s = convert(&x, root, out, 0);
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return s;
}

static pb_status load_common(const char *name, FILE *f, const char *text, pb_config **out, pb_cfg_err *err) {
    pb_config *c = pb_xcalloc(1, sizeof *c);
    c->path = pb_xstrdup(name);
    const char *file = own_str(c, name);
    pb_node *root = NULL;
    pb_status s = parse_into(c, file, f, text, &root, err);
    if (s == PB_OK && root->kind != PB_NODE_MAP)
        s = err_at(err, file, root->line, root->col, "the top level must be a map of keys");
    if (s) { pb_config_destroy(c); *out = NULL; return s; }
    c->root = root;
    *out = c;
    return PB_OK;
}

pb_status pb_config_load(const char *path, pb_config **out, pb_cfg_err *err) {
    char why[1200];
    pb_status st;
    FILE *f = pb_input_open(path, &st, why, sizeof why);   /* a regular file, bounded (pb.h) */
    *out = NULL;
    if (!f) {
        const char *w = strncmp(why, path, strlen(path)) ? why : why + strlen(path) + 2;   /* "path: why" */
        err_at(err, path, 0, 0, "cannot %s: %s", st == PB_ERR_IO ? "open" : "read", w);
        return st;
    }
    pb_status s = load_common(path, f, NULL, out, err);
    fclose(f);
    return s;
}

pb_status pb_config_load_string(const char *name, const char *text, pb_config **out, pb_cfg_err *err) {
    return load_common(name, NULL, text, out, err);
}

/* ---- lookups ---- */
static pb_node *map_find(const pb_node *n, const char *key, size_t klen) {
    if (!n || n->kind != PB_NODE_MAP) return NULL;
    for (int i = 0; i < n->n_kids; i++)
        if (strlen(n->kids[i]->key) == klen && memcmp(n->kids[i]->key, key, klen) == 0) return n->kids[i];
    return NULL;
}

const pb_node *pb_node_get(const pb_node *n, const char *path) {
    const char *p = path;
    while (n && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (n->kind == PB_NODE_SEQ) {
            char buf[32];
            if (len == 0 || len >= sizeof buf) return NULL;
            memcpy(buf, p, len); buf[len] = 0;
            int64_t idx;
            if (!pb_parse_int(buf, &idx) || idx < 0 || idx >= n->n_kids) return NULL;
            n = n->kids[idx];
        } else {
            n = map_find(n, p, len);
        }
        p += len + (dot ? 1 : 0);
        if (!dot) break;
    }
    return n;
}

bool pb_parse_int(const char *s, int64_t *out) {
    if (!s || !*s) return false;
    char *end; errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}
bool pb_parse_num(const char *s, double *out) {
    if (!s || !*s) return false;
    char *end; errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

bool pb_node_has(const pb_node *n, const char *path) { return pb_node_get(n, path) != NULL; }
double pb_node_num(const pb_node *n, const char *path, double dflt) {
    const pb_node *v = pb_node_get(n, path);
    double x;
    return v && v->kind == PB_NODE_SCALAR && pb_parse_num(v->value, &x) ? x : dflt;
}
int64_t pb_node_int(const pb_node *n, const char *path, int64_t dflt) {
    const pb_node *v = pb_node_get(n, path);
    int64_t x;
    return v && v->kind == PB_NODE_SCALAR && pb_parse_int(v->value, &x) ? x : dflt;
}
bool pb_node_bool(const pb_node *n, const char *path, bool dflt) {
    const pb_node *v = pb_node_get(n, path);
    if (!v || v->kind != PB_NODE_SCALAR) return dflt;
    if (strcmp(v->value, "true") == 0) return true;
    if (strcmp(v->value, "false") == 0) return false;
    return dflt;
}
const char *pb_node_str(const pb_node *n, const char *path, const char *dflt) {
    const pb_node *v = pb_node_get(n, path);
    return v && v->kind == PB_NODE_SCALAR ? v->value : dflt;
}
int pb_node_num_list(const pb_node *n, const char *path, double **out) {
    const pb_node *v = pb_node_get(n, path);
    *out = NULL;
    if (!v) return 0;
    if (v->kind == PB_NODE_SCALAR) {
        *out = pb_xmalloc(sizeof(double));
        if (!pb_parse_num(v->value, *out)) { free(*out); *out = NULL; return 0; }
        return 1;
    }
    if (v->kind != PB_NODE_SEQ) return 0;
    *out = pb_xmalloc((size_t)(v->n_kids ? v->n_kids : 1) * sizeof(double));
    int k = 0;
    for (int i = 0; i < v->n_kids; i++)
        if (v->kids[i]->kind == PB_NODE_SCALAR && pb_parse_num(v->kids[i]->value, &(*out)[k])) k++;
    return k;
}

/* ---- include ---- */
pb_status pb_config_include(pb_config *c, const char *key, const char *dir, pb_cfg_err *err) {
    pb_node *n = map_find(c->root, key, strlen(key));
    if (!n || n->kind != PB_NODE_SCALAR) return PB_OK;
    const char *name = n->value;
    if (!*name || strchr(name, '/') || strstr(name, ".."))
        return pb_cfg_fail(err, n, false, "%s: '%s' is not a spec name", key, name);
    size_t len = strlen(dir) + strlen(name) + 8;
    char *path = own(c, pb_xmalloc(len));
    snprintf(path, len, "%s/%s.yaml", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        char avail[512] = "";
        DIR *d = opendir(dir);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                size_t l = strlen(e->d_name);
                if (l > 5 && strcmp(e->d_name + l - 5, ".yaml") == 0 && strlen(avail) + l < sizeof avail - 4) {
                    if (*avail) strcat(avail, ", ");
                    strncat(avail, e->d_name, l - 5);
                }
            }
            closedir(d);
        }
        return pb_cfg_fail(err, n, false, "%s: no spec '%s' in %s (have: %s)", key, name, dir,
                           *avail ? avail : "none");
    }
    pb_node *sub = NULL;
    pb_status s = parse_into(c, path, f, NULL, &sub, err);
    fclose(f);
    if (s) return s;
    if (sub->kind != PB_NODE_MAP) return pb_cfg_fail(err, sub, false, "a spec file must be a map");
    /* splice: the included map takes the place of the scalar, keeping the key */
    sub->key = n->key;
    sub->key_line = n->key_line;
    sub->key_col = n->key_col;
    sub->parent = n->parent;
    for (int i = 0; i < c->root->n_kids; i++)
        if (c->root->kids[i] == n) c->root->kids[i] = sub;
    return PB_OK;
}

/* ---- --set ---- */
pb_status pb_config_set(pb_config *c, const char *assignment, pb_cfg_err *err) {
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return err_at(err, "--set", 1, 1, "'%s': expected KEY.PATH=VALUE", assignment);
    const char *file = own_str(c, "--set");
    size_t plen = (size_t)(eq - assignment);
    char *path = own(c, pb_xmalloc(plen + 1));
    memcpy(path, assignment, plen);
    path[plen] = 0;
    const char *full = own_str(c, path);   /* path is cut up below; messages use full */
    pb_node *value = NULL;
    pb_cfg_err sub;
    pb_cfg_err_clear(&sub);
    pb_status s = parse_into(c, file, NULL, *(eq + 1) ? eq + 1 : "''", &value, &sub);
    if (s) return err_at(err, "--set", 1, (int)plen + 2, "%s: value '%s' is not valid YAML", path, eq + 1);
    value->line = 1;
    value->col = (int)plen + 2;

    pb_node *n = c->root;
    char *p = path;
    for (;;) {
        char *dot = strchr(p, '.');
        if (dot) *dot = 0;
        if (!*p) return err_at(err, "--set", 1, 1, "'%s': empty key in path", assignment);
        int col = (int)(p - path) + 1;
        pb_node *next = NULL;
        int idx_in_parent = -1;
        if (n->kind == PB_NODE_SEQ) {
            int64_t idx;
            if (!pb_parse_int(p, &idx) || idx < 0 || idx >= n->n_kids)
                return err_at(err, "--set", 1, col, "%s: '%s' is not an index of this list (0..%d)",
                              full, p, n->n_kids - 1);
            next = n->kids[idx];
            idx_in_parent = (int)idx;
        } else if (n->kind == PB_NODE_MAP) {
            for (int i = 0; i < n->n_kids; i++)
                if (strcmp(n->kids[i]->key, p) == 0) { next = n->kids[i]; idx_in_parent = i; }
        } else {
            return err_at(err, "--set", 1, col, "%s: cannot descend into a scalar", full);
        }
        if (!dot) {                                      /* last component: replace or add */
            value->key = n->kind == PB_NODE_MAP ? own_str(c, p) : (next ? next->key : NULL);
            value->key_line = 1;
            value->key_col = col;
            if (next) { n->kids[idx_in_parent] = value; value->parent = n; }
            else      node_add(c, n, value);
            return PB_OK;
        }
        if (!next) {                                     /* create an intermediate map */
            next = node_new(c, PB_NODE_MAP, file, 1, col);
            next->key = own_str(c, p);
            next->key_line = 1;
            next->key_col = col;
            node_add(c, n, next);
        }
        n = next;
        p = dot + 1;
    }
}

/* ---- validation ---- */
int pb_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = PB_MIN(d[i - 1][j] + 1, d[i][j - 1] + 1);
            d[i][j] = PB_MIN(v, d[i - 1][j - 1] + cost);
        }
    return d[la][lb];
}

static const char *type_name(pb_type t) {
    switch (t) {
    case PB_T_INT: return "an integer";
    case PB_T_NUM: return "a number";
    case PB_T_BOOL: return "true or false";
    case PB_T_STR: return "a string";
    case PB_T_ENUM: return "one of the listed names";
    case PB_T_MAP: return "a map of keys";
    case PB_T_LIST: return "a list";
    case PB_T_NUM_LIST: return "a number or a list of numbers";
    }
    return "?";
}

static void join_path(char *buf, size_t n, const char *path, const char *key) {
    if (*path) snprintf(buf, n, "%s.%s", path, key);
    else       snprintf(buf, n, "%s", key);
}

static bool choice_ok(const char *choices, const char *v) {
    size_t lv = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (l == lv && memcmp(p, v, l) == 0) return true;
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

static pb_status check_scalar(const pb_node *v, const pb_key *k, pb_type t, const char *kp, pb_cfg_err *err) {
    if (v->kind != PB_NODE_SCALAR)
        return pb_cfg_fail(err, v, false, "%s: expected %s, got a %s", kp, type_name(t),
                           v->kind == PB_NODE_MAP ? "map" : "list");
    double x;
    int64_t i;
    switch (t) {
    case PB_T_INT:
        if (v->quoted || !pb_parse_int(v->value, &i))
            return pb_cfg_fail(err, v, false, "%s: expected an integer, got '%s'", kp, v->value);
        x = (double)i;
        break;
    case PB_T_NUM:
        if (v->quoted || !pb_parse_num(v->value, &x))
            return pb_cfg_fail(err, v, false, "%s: expected a number, got '%s'", kp, v->value);
        break;
    case PB_T_BOOL:
        if (strcmp(v->value, "true") && strcmp(v->value, "false"))
            return pb_cfg_fail(err, v, false, "%s: expected true or false, got '%s'", kp, v->value);
        return PB_OK;
    case PB_T_ENUM:
        if (!choice_ok(k->choices, v->value))
            return pb_cfg_fail(err, v, false, "%s: '%s' is not one of %s", kp, v->value, k->choices);
        return PB_OK;
    default:
        return PB_OK;
    }
    if (k->lo < k->hi && (x < k->lo || x > k->hi))
        return pb_cfg_fail(err, v, false, "%s: %s out of range [%.10g, %.10g]", kp, v->value, k->lo, k->hi);
    return PB_OK;
}

pb_status pb_config_validate_value(const pb_node *v, const pb_key *k, const char *kp, pb_cfg_err *err) {
    switch (k->type) {
    case PB_T_MAP:
        if (v->kind != PB_NODE_MAP)
            return pb_cfg_fail(err, v, false, "%s: expected a map of keys", kp);
        return k->sub ? pb_config_validate(v, k->sub, kp, err) : PB_OK;
    case PB_T_LIST: {
        if (v->kind != PB_NODE_SEQ) return pb_cfg_fail(err, v, false, "%s: expected a list", kp);
        pb_status st = PB_OK;
        for (int i = 0; i < v->n_kids; i++) {
            char ip[256];
            snprintf(ip, sizeof ip, "%s.%d", kp, i);
            pb_status s;
            if (k->sub) {
                if (v->kids[i]->kind != PB_NODE_MAP)
                    s = pb_cfg_fail(err, v->kids[i], false, "%s: expected a map of keys", ip);
                else
                    s = pb_config_validate(v->kids[i], k->sub, ip, err);
            } else {
                s = check_scalar(v->kids[i], k, k->elem ? k->elem : PB_T_STR, ip, err);
            }
            if (s) st = s;
        }
        return st;
    }
    case PB_T_NUM_LIST: {
        if (v->kind == PB_NODE_SCALAR) return check_scalar(v, k, PB_T_NUM, kp, err);
        if (v->kind != PB_NODE_SEQ) return pb_cfg_fail(err, v, false, "%s: expected %s", kp, type_name(k->type));
        if (v->n_kids == 0) return pb_cfg_fail(err, v, false, "%s: the list is empty", kp);
        pb_status st = PB_OK;
        for (int i = 0; i < v->n_kids; i++) {
            char ip[256];
            snprintf(ip, sizeof ip, "%s.%d", kp, i);
            if (check_scalar(v->kids[i], k, PB_T_NUM, ip, err)) st = PB_ERR_INVALID;
        }
        return st;
    }
    default:
        return check_scalar(v, k, k->type, kp, err);
    }
}

pb_status pb_config_validate(const pb_node *n, const pb_key *schema, const char *path, pb_cfg_err *err) {
    pb_status st = PB_OK;
    for (int i = 0; i < n->n_kids; i++) {
        const pb_node *v = n->kids[i];
        char kp[256];
        join_path(kp, sizeof kp, path, v->key);
        const pb_key *k = NULL;
        for (const pb_key *s = schema; s->name; s++)
            if (strcmp(s->name, v->key) == 0) k = s;
        if (!k) {
            const char *best = NULL;
            int bd = 1 << 20;
            for (const pb_key *s = schema; s->name; s++) {
                int d = pb_edit_distance(v->key, s->name);
                if (d < bd) { bd = d; best = s->name; }
            }
            int limit = PB_MAX(2, (int)strlen(v->key) / 3);
            if (best && bd <= limit)
                pb_cfg_fail(err, v, true, "%s: unknown key '%s' (did you mean '%s'?)", kp, v->key, best);
            else
                pb_cfg_fail(err, v, true, "%s: unknown key '%s'", kp, v->key);
            st = PB_ERR_INVALID;
            continue;
        }
        if (pb_config_validate_value(v, k, kp, err)) st = PB_ERR_INVALID;
    }
    for (const pb_key *s = schema; s->name; s++) {
        if (!s->required || map_find(n, s->name, strlen(s->name))) continue;
        char kp[256];
        join_path(kp, sizeof kp, path, s->name);
        pb_cfg_fail(err, n, false, "%s: missing required key '%s'%s%s", kp, s->name,
                    s->doc ? " -- " : "", s->doc ? s->doc : "");
        st = PB_ERR_INVALID;
    }
    return st;
}

/* ---- declared keys ---- */
const pb_key *pb_schema_find(const pb_key *schema, const char *path) {
    const pb_key *k = NULL;
    for (const char *p = path; schema && *p;) {
        size_t len = strcspn(p, ".");
        bool index = k && k->type == PB_T_LIST && len > 0 && strspn(p, "0123456789") >= len;
        if (!index) {
            const pb_key *hit = NULL;
            for (const pb_key *s = schema; s->name && !hit; s++)
                if (strlen(s->name) == len && !memcmp(s->name, p, len)) hit = s;
            if (!hit) return NULL;
            k = hit;
            schema = k->sub;
        }
        p += len + (p[len] == '.');
        if (!p[0]) return k;
    }
    return NULL;
}

/* The declaration of path (a bug when absent or of another type) and the scalar
   text that applies: the value in n (a required key: always there, the tree was
   validated), else dflt (derived: NULL, the caller applies the rule). */
static const char *decl_text(const pb_key *schema, const pb_node *n, const char *path, bool derived,
                             bool (*type_ok)(pb_type)) {
    const pb_key *k = pb_schema_find(schema, path);
    PB_ASSERT(k && type_ok(k->type));
    PB_ASSERT(derived ? k->dflt_rule != NULL : k->dflt != NULL || k->required);
    const pb_node *v = n ? pb_node_get(n, path) : NULL;
    if (v && v->kind == PB_NODE_SCALAR) return v->value;
    PB_ASSERT(!k->required);   /* validated: present */
    return derived ? NULL : k->dflt;
}
static bool is_int(pb_type t) { return t == PB_T_INT || t == PB_T_ENUM; }    /* ENUM: "1|5" */
static bool is_num(pb_type t) { return t == PB_T_NUM || t == PB_T_INT || t == PB_T_ENUM; }
static bool is_bool(pb_type t) { return t == PB_T_BOOL; }
static bool is_str(pb_type t) { return t == PB_T_STR || t == PB_T_ENUM; }

static int64_t text_int(const char *s) {
    int64_t v = 0;
    PB_ASSERT(pb_parse_int(s, &v));
    return v;
}
static double text_num(const char *s) {
    double v = 0;
    PB_ASSERT(pb_parse_num(s, &v));
    return v;
}

int64_t pb_schema_int(const pb_key *schema, const pb_node *n, const char *path) {
    return text_int(decl_text(schema, n, path, false, is_int));
}
double pb_schema_num(const pb_key *schema, const pb_node *n, const char *path) {
    return text_num(decl_text(schema, n, path, false, is_num));
}
bool pb_schema_bool(const pb_key *schema, const pb_node *n, const char *path) {
    return !strcmp(decl_text(schema, n, path, false, is_bool), "true");
}
const char *pb_schema_str(const pb_key *schema, const pb_node *n, const char *path) {
    return decl_text(schema, n, path, false, is_str);
}
int64_t pb_schema_int_or(const pb_key *schema, const pb_node *n, const char *path, int64_t derived) {
    const char *t = decl_text(schema, n, path, true, is_int);
    return t ? text_int(t) : derived;
}
double pb_schema_num_or(const pb_key *schema, const pb_node *n, const char *path, double derived) {
    const char *t = decl_text(schema, n, path, true, is_num);
    return t ? text_num(t) : derived;
}
const char *pb_schema_str_or(const pb_key *schema, const pb_node *n, const char *path, const char *derived) {
    const char *t = decl_text(schema, n, path, true, is_str);
    return t ? t : derived;
}
bool pb_schema_bool_or(const pb_key *schema, const pb_node *n, const char *path, bool derived) {
    const char *t = decl_text(schema, n, path, true, is_bool);
    return t ? !strcmp(t, "true") : derived;
}

/* The i-th choice of "a|b|c" into buf; false past the last. */
static bool choice_at(const char *choices, int i, char *buf, size_t n) {
    const char *p = choices;
    for (int j = 0; j < i; j++) {
        p = strchr(p, '|');
        if (!p) return false;
        p++;
    }
    snprintf(buf, n, "%.*s", (int)strcspn(p, "|"), p);
    return true;
}

static const pb_key *type_key(const pb_key *schema) {
    const pb_key *t = pb_schema_find(schema, "type");
    return t && t->type == PB_T_ENUM ? t : NULL;
}

bool pb_key_in_scope(const pb_key *schema, const pb_key *k, const char *type) {
    if (!k->scope) return true;
    const pb_key *t = type_key(schema);
    char c[64];
    for (int i = 0; t && i < 32 && choice_at(t->choices, i, c, sizeof c); i++)
        if (!strcmp(c, type)) return (k->scope >> i) & 1u;
    return false;
}

void pb_key_scope_names(const pb_key *schema, const pb_key *k, char *buf, size_t n) {
    const pb_key *t = k->scope ? type_key(schema) : NULL;
    char c[64];
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; t && i < 32 && choice_at(t->choices, i, c, sizeof c); i++)
        if ((k->scope >> i) & 1u && used < n)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", c);
}

void pb_key_describe(const pb_key *schema, const pb_key *k, char *buf, size_t n) {
    pb_sbuf b = {0};
    switch (k->type) {
    case PB_T_INT: case PB_T_NUM:
        pb_sbuf_printf(&b, "%s", k->type == PB_T_INT ? "an integer" : "a number");
        if (k->lo < k->hi) pb_sbuf_printf(&b, " in [%.10g, %.10g]", k->lo, k->hi);
        break;
    case PB_T_ENUM: pb_sbuf_printf(&b, "%s", k->choices); break;
    case PB_T_NUM_LIST: pb_sbuf_printf(&b, "a number or a list of numbers"); break;
    default: pb_sbuf_printf(&b, "%s", type_name(k->type)); break;
    }
    if (k->required) pb_sbuf_printf(&b, "; required");
    if (k->dflt) pb_sbuf_printf(&b, "; default %s", *k->dflt ? k->dflt : "''");
    if (k->dflt_rule) pb_sbuf_printf(&b, "; default: %s", k->dflt_rule);
    char scope[256];
    pb_key_scope_names(schema, k, scope, sizeof scope);
    if (*scope) pb_sbuf_printf(&b, "; read by type %s", scope);
    snprintf(buf, n, "%s", b.s ? b.s : "");
    free(b.s);
}

static bool scalar_type(pb_type t) {
    return t == PB_T_INT || t == PB_T_NUM || t == PB_T_BOOL || t == PB_T_STR || t == PB_T_ENUM;
}

pb_status pb_schema_check(const pb_key *schema, const char *path, pb_cfg_err *err) {
    pb_status st = PB_OK;
    pb_node at = {.kind = PB_NODE_SCALAR, .file = *path ? path : "(schema)"};
    for (const pb_key *k = schema; k->name; k++) {
        const char *nm = k->name;
        for (const pb_key *j = schema; j < k; j++)
            if (!strcmp(j->name, nm)) st = pb_cfg_fail(err, &at, false, "key '%s' declared twice", nm);
        if (k->type < PB_T_INT || k->type > PB_T_NUM_LIST)
            st = pb_cfg_fail(err, &at, false, "key '%s': no type", nm);
        if ((k->type == PB_T_ENUM) != (k->choices != NULL))
            st = pb_cfg_fail(err, &at, false, "key '%s': choices are for ENUM keys only, and every ENUM has them", nm);
        if (k->lo > k->hi) st = pb_cfg_fail(err, &at, false, "key '%s': range [%g, %g] is empty", nm, k->lo, k->hi);
        if (!k->doc || !*k->doc) st = pb_cfg_fail(err, &at, false, "key '%s': no doc line", nm);
        else if (strstr(k->doc, "default") || strstr(k->doc, "Default"))
            st = pb_cfg_fail(err, &at, false, "key '%s': the doc restates a default (declare it: dflt, dflt_rule)", nm);
        if (k->dflt && k->dflt_rule) st = pb_cfg_fail(err, &at, false, "key '%s': both dflt and dflt_rule", nm);
        if (k->required && (k->dflt || k->dflt_rule))
            st = pb_cfg_fail(err, &at, false, "key '%s': required, yet it has a default", nm);
        if (!k->required && scalar_type(k->type) && !k->dflt && !k->dflt_rule)
            st = pb_cfg_fail(err, &at, false, "key '%s': optional and no default (dflt or dflt_rule)", nm);
        if (!scalar_type(k->type) && k->dflt)
            st = pb_cfg_fail(err, &at, false, "key '%s': a map or list takes no dflt", nm);
        if (k->dflt && scalar_type(k->type)) {
            pb_node v = at;
            v.value = k->dflt;
            char kp[256];
            snprintf(kp, sizeof kp, "key '%s' default", nm);
            if (pb_config_validate_value(&v, k, kp, err)) st = PB_ERR_INVALID;
        }
        if (k->scope) {
            const pb_key *t = type_key(schema);
            char c[64];
            int n = 0;
            while (t && n < 32 && choice_at(t->choices, n, c, sizeof c)) n++;
            if (!t || (n < 32 && k->scope >> n))
                st = pb_cfg_fail(err, &at, false, "key '%s': scope names a type the map's `type` key lacks", nm);
        }
        if (k->sub) {
            char sp[256];
            join_path(sp, sizeof sp, path, nm);
            if (pb_schema_check(k->sub, sp, err)) st = PB_ERR_INVALID;
        }
    }
    return st;
}
