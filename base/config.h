/* config.h -- YAML configuration trees with positions, schema validation, --set.
 *
 * A config is loaded with libyaml's document API into our own tree of pb_node
 * (maps, sequences, scalars), each node remembering file:line:col (1-based), so
 * every later error can say where it came from.  The loader rejects what libyaml
 * lets through: duplicate keys (hashed: O(n) for any map size), merge keys ('<<'),
 * empty documents and a second document in one file.  Hostile input is bounded:
 * nesting deeper than PB_CFG_MAX_DEPTH is refused while libyaml's event parser streams
 * (before any tree is built), and a tree that would hold more than PB_CFG_MAX_NODES
 * nodes once aliases are expanded (a "billion laughs" file) is refused as it is built.
 *
 * Then, in this order:
 *   pb_config_include()  replaces `key: name` by the tree of <dir>/<name>.yaml
 *                        (the model and hardware spec files), keeping that file's
 *                        positions for its nodes;
 *   pb_config_set()      applies a `--set a.b.c=value` override (value is parsed as
 *                        YAML, so `--set sweep.rates=[1,2]` works; list elements are
 *                        addressed by index: `systems.0.block_size=32`);
 *   pb_config_validate() checks the tree against a schema table (pb_key[], each key
 *                        declared once: below): unknown keys (with "did you mean"),
 *                        wrong types, ranges, enum values, missing required keys.
 *                        All errors are collected (up to 20), each
 *                        `file:line:col: path: message`.
 * Reading values afterwards goes through pb_schema_* (a declared key: its value, else
 * its declared default), which assume the tree was validated.
 *
 * Errors are reported through pb_cfg_err (caller-owned), never printed here. */
#ifndef PB_CONFIG_H
#define PB_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_NODE_SCALAR, PB_NODE_MAP, PB_NODE_SEQ } pb_node_kind;

typedef struct pb_node pb_node;
struct pb_node {
    pb_node_kind kind;
    const char *file;       /* file the node came from ("--set" for overrides)   */
    int line, col;          /* 1-based position of the value                      */
    const char *key;        /* key under the parent map, NULL otherwise           */
    int key_line, key_col;  /* 1-based position of the key                        */
    const char *value;      /* scalar text (NULL for maps and sequences)          */
    bool quoted;            /* scalar was written in quotes                       */
    pb_node **kids;         /* map entries (each with ->key) or sequence items    */
    int n_kids, cap_kids;
    pb_node *parent;
};

typedef struct pb_config pb_config;     /* opaque: owns the tree and its strings */

#define PB_CFG_MAX_DEPTH 64          /* nesting levels of maps and lists            */
#define PB_CFG_MAX_NODES (1 << 20)   /* nodes of one file, aliases expanded          */

#define PB_CFG_MAX_ERRORS 20
typedef struct {
    int count;              /* number of errors recorded                         */
    char msg[4096];         /* errors, one per line, "file:line:col: message"    */
} pb_cfg_err;

void pb_cfg_err_clear(pb_cfg_err *e);
/* Append one ready-made error line (counted like the others). */
void pb_cfg_err_add_line(pb_cfg_err *e, const char *line);
/* Record an error at node n (or at its key when at_key).  Returns PB_ERR_INVALID. */
pb_status pb_cfg_fail(pb_cfg_err *e, const pb_node *n, bool at_key, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Load a YAML file (or a string, for tests; `name` is used in messages).
 * On error *out is NULL and err holds file:line:col: message. */
pb_status pb_config_load(const char *path, pb_config **out, pb_cfg_err *err);
pb_status pb_config_load_string(const char *name, const char *text, pb_config **out,
                                pb_cfg_err *err);
void      pb_config_destroy(pb_config *c);           /* NULL is a no-op */
pb_node  *pb_config_root(const pb_config *c);         /* always a map */
const char *pb_config_path(const pb_config *c);

/* A config with an empty root map (name: used in messages); never fails. */
pb_config *pb_config_new(const char *name);
/* Deep copy of node n (and its subtree), owned by c; positions and keys are kept,
 * parent is NULL.  A whole experiment is cloned with pb_config_clone. */
pb_node   *pb_config_clone_node(pb_config *c, const pb_node *n);
pb_config *pb_config_clone(const pb_config *src);   /* must not outlive src */
/* The same without the subtrees whose root node keep() refuses (keep NULL: all). */
pb_config *pb_config_clone_if(const pb_config *src, bool (*keep)(const pb_node *n));
/* Overlay map src onto map dst (both owned by / cloned into c): a key of src whose
 * value is a map and whose dst value is a map is overlaid recursively; any other key
 * replaces (or adds) dst's value with a copy of src's.  dst must be a map. */
void pb_node_overlay(pb_config *c, pb_node *dst, const pb_node *src);
/* Replace (or add) key `key` of map `map` by node v (owned by c); v->key is set. */
void pb_node_put(pb_config *c, pb_node *map, const char *key, pb_node *v);
/* A new scalar node owned by c, at the given position. */
pb_node *pb_config_scalar(pb_config *c, const char *value, const char *file, int line, int col);

/* If root[key] is a scalar NAME, replace it by the root map of dir/NAME.yaml.
 * A map value is left alone (an inline spec).  Absent key: PB_OK, nothing done.
 * An unknown NAME is an error at the scalar, listing the files that exist. */
pb_status pb_config_include(pb_config *c, const char *key, const char *dir, pb_cfg_err *err);

/* Apply one override "a.b.c=value".  Missing intermediate maps are created.
 * Errors (no '=', bad path, YAML error in value) are reported at "--set:1:col". */
pb_status pb_config_set(pb_config *c, const char *assignment, pb_cfg_err *err);

/* ---- schema ---- */
typedef enum {
    PB_T_INT = 1,    /* integer scalar, range [lo, hi] when lo < hi               */
    PB_T_NUM,        /* real scalar, range [lo, hi] when lo < hi                  */
    PB_T_BOOL,       /* true / false only                                         */
    PB_T_STR,        /* any scalar                                                */
    PB_T_ENUM,       /* one of choices "a|b|c"                                    */
    PB_T_MAP,        /* map validated against sub (NULL sub: any map)             */
    PB_T_LIST,       /* sequence; items are maps checked against sub when sub is
                        set, else scalars of type elem (elem may be PB_T_NUM etc.) */
    PB_T_NUM_LIST    /* a number, or a sequence of numbers (sweep axes)           */
} pb_type;

/* One key of a schema, declared once: where it is read, in `pagedbench list --keys`,
 * in every error about it and in the test of defaults (tests/test_schema_coverage.c),
 * this line is the one description.  Written with designated initializers, e.g.
 *   {.name = "block_size", .type = PB_T_INT, .lo = 1, .hi = 4096, .dflt = "16",
 *    .scope = PB_SCOPE_VLLM, .doc = "tokens per KV block"},
 * A {0} entry ends a table.  Rules (pb_schema_check):
 *   - a required key has no default;
 *   - an optional scalar key has exactly one of dflt (its value, as YAML text) and
 *     dflt_rule (where the default comes from, in words, when no single value is it:
 *     "the engine version's (engine/vllm_version.h)"); maps and lists have neither
 *     (absent = empty);
 *   - the doc line does not restate the default (the word "default" is refused):
 *     it is printed from dflt / dflt_rule;
 *   - scope: in a map with a `type` key of PB_T_ENUM, bit i set = the key is read
 *     only when `type` is its i-th choice (0 = whatever the type). */
typedef struct pb_key pb_key;
struct pb_key {
    const char *name;       /* NULL ends a schema table                           */
    pb_type type;
    bool required;
    double lo, hi;          /* numeric range (inclusive) when lo < hi             */
    const char *choices;    /* PB_T_ENUM: "a|b|c"                                 */
    const pb_key *sub;      /* PB_T_MAP / PB_T_LIST of maps                       */
    pb_type elem;           /* PB_T_LIST of scalars                               */
    const char *dflt;       /* the default as YAML text ("16", "auto", "false")   */
    const char *dflt_rule;  /* or the default in words, where it is derived       */
    unsigned scope;         /* the `type` choices that read it (bit i); 0 = all    */
    const char *doc;        /* one line                                           */
};

/* Validate map n against schema; path is the key path of n ("" at the root).
 * Returns PB_OK, or PB_ERR_INVALID with every error recorded in err. */
pb_status pb_config_validate(const pb_node *n, const pb_key *schema, const char *path,
                             pb_cfg_err *err);
/* Validate one value v against one key k (its type, range, choices, sub-schema);
 * path names it in messages ("systems.0.token_budget").  Same errors as above. */
pb_status pb_config_validate_value(const pb_node *v, const pb_key *k, const char *path,
                                   pb_cfg_err *err);

/* ---- reading declared keys ----
 * path is dotted, relative to map n, and names a key of schema (a numeric component
 * after a list key indexes it: "systems.0.block_size").  The value in n when present
 * (n may be NULL), else the key's declared default; a required key must be present
 * (n was validated).  Reading a key that is not declared, with a getter of another
 * type, or an optional one without a dflt, is a bug (aborts). */
const pb_key *pb_schema_find(const pb_key *schema, const char *path);   /* NULL if none */
int64_t     pb_schema_int(const pb_key *schema, const pb_node *n, const char *path);
double      pb_schema_num(const pb_key *schema, const pb_node *n, const char *path);
bool        pb_schema_bool(const pb_key *schema, const pb_node *n, const char *path);
const char *pb_schema_str(const pb_key *schema, const pb_node *n, const char *path);   /* STR, ENUM */
/* A key declared with a dflt_rule: its value, else `derived` (what the rule gives). */
int64_t     pb_schema_int_or(const pb_key *schema, const pb_node *n, const char *path, int64_t derived);
double      pb_schema_num_or(const pb_key *schema, const pb_node *n, const char *path, double derived);
const char *pb_schema_str_or(const pb_key *schema, const pb_node *n, const char *path, const char *derived);
bool        pb_schema_bool_or(const pb_key *schema, const pb_node *n, const char *path, bool derived);

/* Is key k of schema read when the map's `type` is `type` (k->scope)? */
bool pb_key_in_scope(const pb_key *schema, const pb_key *k, const char *type);
/* The `type` choices that read k, ", "-separated ("cpu, cuda"); "" when all do. */
void pb_key_scope_names(const pb_key *schema, const pb_key *k, char *buf, size_t n);
/* k's type and range or choices, its default and its scope, in words, e.g.
 * "an integer in [1, 4096]; default 16; type vllm only". */
void pb_key_describe(const pb_key *schema, const pb_key *k, char *buf, size_t n);
/* The rules of the pb_key comment, for every key of schema and its sub-schemas
 * (path names it in messages).  PB_OK, or PB_ERR_INVALID with each problem in err. */
pb_status pb_schema_check(const pb_key *schema, const char *path, pb_cfg_err *err);

/* ---- raw getters (dotted paths relative to a map node; "a.0.b" indexes sequences):
 * for trees no schema declares (a spec file read for a listing); a declared key is
 * read with pb_schema_* above ---- */
const pb_node *pb_node_get(const pb_node *n, const char *path);   /* NULL if absent */
bool        pb_node_has(const pb_node *n, const char *path);
double      pb_node_num(const pb_node *n, const char *path, double dflt);
int64_t     pb_node_int(const pb_node *n, const char *path, int64_t dflt);
bool        pb_node_bool(const pb_node *n, const char *path, bool dflt);
const char *pb_node_str(const pb_node *n, const char *path, const char *dflt);
/* A PB_T_NUM_LIST value as an array (a single number gives one element).
 * Returns the count; *out is malloc'd (caller frees). 0 when absent. */
int         pb_node_num_list(const pb_node *n, const char *path, double **out);

/* Parse helpers shared with other text readers (traces, --set) */
bool pb_parse_int(const char *s, int64_t *out);
bool pb_parse_num(const char *s, double *out);

/* Levenshtein distance, for "did you mean" suggestions */
int pb_edit_distance(const char *a, const char *b);

#ifdef __cplusplus
}
#endif
#endif /* PB_CONFIG_H */
