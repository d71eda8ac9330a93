/* test_config.c -- the YAML config loader: every error kind with its file:line:col,
 * --set overrides, includes of spec files, getters; declared keys (their getters,
 * scopes and the rules of a declaration).
 *   build/cpu/test_config */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "pbtest.h"
#include "spec.h"

static const pb_key SYS[] = {
    {.name = "name", .type = PB_T_STR, .required = true, .doc = "label"},
    {.name = "type", .type = PB_T_ENUM, .required = true, .choices = "vllm|orca|ft", .doc = "system type"},
    {.name = "block_size", .type = PB_T_INT, .lo = 1, .hi = 256, .doc = "tokens per block"},
    {0},
};
static const pb_key ENGINE[] = {
    {.name = "block_size", .type = PB_T_INT, .lo = 1, .hi = 256, .doc = "tokens per block"},
    {.name = "watermark", .type = PB_T_NUM, .lo = 0, .hi = 1, .doc = "free share kept"},
    {.name = "swap", .type = PB_T_BOOL},
    {0},
};
static const pb_key TOP[] = {
    {.name = "name", .type = PB_T_STR, .required = true, .doc = "experiment name"},
    {.name = "seed", .type = PB_T_INT, .lo = 0, .hi = 1e18},
    {.name = "engine", .type = PB_T_MAP, .sub = ENGINE},
    {.name = "rates", .type = PB_T_NUM_LIST, .lo = 0, .hi = 1000},
    {.name = "systems", .type = PB_T_LIST, .sub = SYS},
    {.name = "model", .type = PB_T_MAP},
    {0},
};

/* load + validate; returns status, error text in *err */
static pb_status check(const char *text, pb_cfg_err *err) {
    pb_config *c;
    pb_cfg_err_clear(err);
    pb_status s = pb_config_load_string("t.yaml", text, &c, err);
    if (s) return s;
    s = pb_config_validate(pb_config_root(c), TOP, "", err);
    pb_config_destroy(c);
    return s;
}

PB_TEST(valid_config_loads) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nseed: 3\nengine:\n  block_size: 16\n  watermark: 0.01\nrates: [1, 2.5]\n"
                   "systems:\n  - {name: v, type: vllm}\n", &e) == PB_OK);
    PB_CHECK_EQ_INT(e.count, 0);
}

PB_TEST(unknown_key_did_you_mean) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nengine:\n  blok_size: 16\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:3:3: engine.blok_size: unknown key 'blok_size' (did you mean 'block_size'?)");
}

PB_TEST(unknown_key_far_from_all) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nzzzzzzzzzz: 1\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:2:1: zzzzzzzzzz: unknown key 'zzzzzzzzzz'");
    PB_CHECK(strstr(e.msg, "did you mean") == NULL);
}

PB_TEST(wrong_type_int) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nengine:\n  block_size: sixteen\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:3:15: engine.block_size: expected an integer, got 'sixteen'");
}

PB_TEST(wrong_type_quoted_number) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nseed: \"16\"\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:2:7: seed: expected an integer");
}

PB_TEST(wrong_type_map_for_scalar) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nseed:\n  a: 1\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:3:3: seed: expected an integer, got a map");
}

PB_TEST(wrong_type_bool) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nengine: {swap: yes}\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:2:16: engine.swap: expected true or false, got 'yes'");
}

PB_TEST(out_of_range) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nengine:\n  block_size: 1024\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:3:15: engine.block_size: 1024 out of range [1, 256]");
}

PB_TEST(bad_enum_in_list_item) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nsystems:\n  - name: a\n    type: vllm\n  - name: b\n    type: orka\n", &e) ==
             PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:6:11: systems.1.type: 'orka' is not one of vllm|orca|ft");
}

PB_TEST(missing_required_key) {
    pb_cfg_err e;
    PB_CHECK(check("seed: 1\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:1:1: name: missing required key 'name'");
}

PB_TEST(missing_required_in_list_item) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nsystems:\n  - name: a\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:3:5: systems.0.type: missing required key 'type'");
}

PB_TEST(duplicate_key) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nseed: 1\nseed: 2\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:3:1: duplicate key 'seed' (first defined at line 2)");
}

PB_TEST(duplicate_key_nested) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nengine:\n  block_size: 16\n  watermark: 0.1\n  block_size: 8\n", &e) ==
             PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:5:3: duplicate key 'block_size' (first defined at line 3)");
}

PB_TEST(malformed_yaml) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nrates: [1, 2\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:3:1: malformed YAML: did not find expected ',' or ']'");
}

PB_TEST(malformed_indentation) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nseed: 1\n  oops: 2\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:3:7: malformed YAML: mapping values are not allowed");
}

PB_TEST(empty_document) {
    pb_cfg_err e;
    PB_CHECK(check("", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml: empty document");
}

PB_TEST(top_level_not_a_map) {
    pb_cfg_err e;
    PB_CHECK(check("- 1\n- 2\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:1:1: the top level must be a map");
}

PB_TEST(merge_key_rejected) {
    pb_cfg_err e;
    PB_CHECK(check("name: x\nbase: &b {block_size: 1}\nengine:\n  <<: *b\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:4:3: merge keys ('<<') are not supported");
}

PB_TEST(all_errors_reported) {
    pb_cfg_err e;
    PB_CHECK(check("seed: abc\nengine: {blok_size: 1, watermark: 2}\n", &e) == PB_ERR_INVALID);
    PB_CHECK_EQ_INT(e.count, 4);   /* seed type, unknown blok_size, watermark range, missing name */
}

PB_TEST(file_errors_name_the_file) {
    pb_config *c;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_config_load("experiments/testdata/duplicate_key.yaml", &c, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "experiments/testdata/duplicate_key.yaml:4:3: duplicate key 'block_size'");
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_config_load("experiments/testdata/no_such_file.yaml", &c, &e) == PB_ERR_IO);
    PB_CHECK_STR_CONTAINS(e.msg, "no_such_file.yaml: cannot open");
}

PB_TEST(set_overrides) {
    pb_config *c;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("t.yaml", "name: x\nengine: {block_size: 16}\nsystems:\n  - {name: a, type: vllm}\n",
                                     &c, &e) == PB_OK);
    PB_CHECK(pb_config_set(c, "engine.block_size=32", &e) == PB_OK);
    PB_CHECK(pb_config_set(c, "engine.watermark=0.02", &e) == PB_OK);      /* new key in a map */
    PB_CHECK(pb_config_set(c, "rates=[1, 2, 4]", &e) == PB_OK);            /* new list */
    PB_CHECK(pb_config_set(c, "systems.0.block_size=8", &e) == PB_OK);     /* list index */
    PB_CHECK(pb_config_set(c, "model.hidden=64", &e) == PB_OK);            /* new intermediate map */
    PB_CHECK(pb_config_validate(pb_config_root(c), TOP, "", &e) == PB_OK);
    const pb_node *r = pb_config_root(c);
    PB_CHECK_EQ_INT(pb_node_int(r, "engine.block_size", 0), 32);
    PB_CHECK_NEAR(pb_node_num(r, "engine.watermark", 0), 0.02, 1e-12);
    PB_CHECK_EQ_INT(pb_node_int(r, "systems.0.block_size", 0), 8);
    PB_CHECK_EQ_INT(pb_node_int(r, "model.hidden", 0), 64);
    double *rates;
    PB_CHECK_EQ_INT(pb_node_num_list(r, "rates", &rates), 3);
    PB_CHECK_NEAR(rates[2], 4, 0);
    free(rates);
    /* an override that breaks the schema is reported at --set */
    PB_CHECK(pb_config_set(c, "engine.block_size=big", &e) == PB_OK);
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_config_validate(pb_config_root(c), TOP, "", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "--set:1:19: engine.block_size: expected an integer, got 'big'");
    /* malformed assignments */
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_config_set(c, "engine.block_size", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "--set:1:1: 'engine.block_size': expected KEY.PATH=VALUE");
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_config_set(c, "systems.5.name=z", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "systems.5.name: '5' is not an index of this list");
    pb_config_destroy(c);
}

PB_TEST(include_spec_by_name) {
    pb_config *c;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("t.yaml", "name: x\nmodel: opt-13b\n", &c, &e) == PB_OK);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/models", pb_spec_dir());
    PB_CHECK(pb_config_include(c, "model", dir, &e) == PB_OK);
    pb_model m;
    PB_CHECK(pb_model_from_node(pb_node_get(pb_config_root(c), "model"), &m, &e) == PB_OK);
    PB_CHECK_EQ_INT(m.n_layers, 40);
    PB_CHECK_EQ_INT(m.hidden, 5120);
    PB_CHECK(pb_config_set(c, "model.n_layers=2", &e) == PB_OK);   /* override an included key */
    PB_CHECK_EQ_INT(pb_node_int(pb_config_root(c), "model.n_layers", 0), 2);
    pb_config_destroy(c);
    /* unknown spec name */
    PB_REQUIRE(pb_config_load_string("t.yaml", "name: x\nmodel: opt-14b\n", &c, &e) == PB_OK);
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_config_include(c, "model", dir, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "t.yaml:2:8: model: no spec 'opt-14b'");
    PB_CHECK_STR_CONTAINS(e.msg, "opt-13b");
    pb_config_destroy(c);
}

PB_TEST(hardware_numbers_need_sources) {
    pb_config *c;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("hw.yaml",
        "name: X\nmemory_bytes: 1e9\nhbm_bandwidth_GBps: 100\nfp16_tflops: 10\npcie_h2d_GBps: 1\n"
        "pcie_d2h_GBps: 1\npcie_copy_latency_us: 1\nnvlink_GBps: 0\n"
        "sources: {memory_bytes: a, hbm_bandwidth_GBps: b, fp16_tflops: c, pcie_h2d_GBps: d,"
        " pcie_d2h_GBps: e, pcie_copy_latency_us: f}\n", &c, &e) == PB_OK);
    pb_hw h;
    PB_CHECK(pb_hw_from_node(pb_config_root(c), &h, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "hw.yaml:8:1: hardware.nvlink_GBps: no source given");
    pb_config_destroy(c);
}

PB_TEST(every_shipped_spec_loads) {
    const char *models[] = {"opt-13b", "opt-66b", "opt-175b", "llama-13b", "tiny-opt", "tiny-llama"};
    const char *hws[] = {"a100-40gb", "a100-80gb", "h100-sxm", "h200"};
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        pb_model m;
        PB_CHECK(pb_model_load(pb_spec_dir(), models[i], &m, &e) == PB_OK);
        PB_CHECK_EQ_INT(m.n_heads * m.head_size, m.hidden);
    }
    for (size_t i = 0; i < sizeof hws / sizeof *hws; i++) {
        pb_hw h;
        PB_CHECK(pb_hw_load(pb_spec_dir(), hws[i], &h, &e) == PB_OK);
        PB_CHECK(h.hbm_bw > 1e12 && h.fp16_flops > 1e14);
    }
    if (e.count) fprintf(stderr, "%s\n", e.msg);
}

PB_TEST(edit_distance) {
    PB_CHECK_EQ_INT(pb_edit_distance("block_size", "blok_size"), 1);
    PB_CHECK_EQ_INT(pb_edit_distance("", "abc"), 3);
    PB_CHECK_EQ_INT(pb_edit_distance("same", "same"), 0);
}

/* ---- hostile input: bounded work, a clear error at the right place ---- */
static pb_status load_only(const char *text, pb_cfg_err *err) {
    pb_config *c = NULL;
    pb_cfg_err_clear(err);
    pb_status s = pb_config_load_string("h.yaml", text, &c, err);
    pb_config_destroy(c);
    return s;
}

PB_TEST(alias_bomb_is_refused) {
    /* nine levels of ten aliases each: 10^9 nodes once expanded */
    pb_sbuf b = {0};
    pb_sbuf_printf(&b, "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i <= 9; i++)
        pb_sbuf_printf(&b, "l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i - 1,
                       i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    pb_cfg_err e;
    PB_CHECK(load_only(b.s, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "nodes after expanding aliases");
    PB_CHECK_STR_CONTAINS(e.msg, "h.yaml:");
    free(b.s);
}

PB_TEST(deep_nesting_is_refused_while_parsing) {
    size_t n = 100000;
    char *t = malloc(2 * n + 16);
    memcpy(t, "a: ", 3);
    memset(t + 3, '[', n);
    memset(t + 3 + n, ']', n);
    t[3 + 2 * n] = '\n';
    t[4 + 2 * n] = 0;
    pb_cfg_err e;
    PB_CHECK(load_only(t, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "h.yaml:1:67: nesting deeper than 64 levels");
    free(t);
}

PB_TEST(many_keys_load_and_a_late_duplicate_is_found) {
    pb_sbuf b = {0};
    int n = 200000;
    for (int i = 0; i < n; i++) pb_sbuf_printf(&b, "k%d: %d\n", i, i);
    pb_cfg_err e;
    pb_config *c = NULL;
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_config_load_string("h.yaml", b.s, &c, &e) == PB_OK);
    PB_CHECK(c && pb_config_root(c)->n_kids == n && pb_node_int(pb_config_root(c), "k199999", 0) == 199999);
    pb_config_destroy(c);
    pb_sbuf_printf(&b, "k7: again\n");
    PB_CHECK(load_only(b.s, &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "h.yaml:200001:1: duplicate key 'k7' (first defined at line 8)");
    free(b.s);
}

PB_TEST(a_second_document_is_an_error) {
    pb_cfg_err e;
    PB_CHECK(load_only("a: 1\n---\nb: 2\n", &e) == PB_ERR_INVALID);
    PB_CHECK_STR_CONTAINS(e.msg, "h.yaml:2:1: a second YAML document");
    PB_CHECK(load_only("a: 1\n---\nb: [\n", &e) == PB_ERR_INVALID);   /* malformed, not ignored */
    PB_CHECK_STR_CONTAINS(e.msg, "h.yaml:");
}

PB_TEST(clone_and_overlay) {
    pb_cfg_err e;
    pb_config *c = NULL;
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_config_load_string("o.yaml", "hw: {cm: {a: 1, b: {x: 1, y: 2}}}\nover: {b: {y: 5}, c: 3}\n", &c, &e) == PB_OK);
    pb_config *k = pb_config_clone(c);
    pb_node *cm = (pb_node *)pb_node_get(pb_config_root(k), "hw.cm");
    pb_node_overlay(k, cm, pb_node_get(pb_config_root(k), "over"));
    const pb_node *r = pb_config_root(k);
    PB_CHECK(pb_node_int(r, "hw.cm.a", 0) == 1 && pb_node_int(r, "hw.cm.b.x", 0) == 1);
    PB_CHECK(pb_node_int(r, "hw.cm.b.y", 0) == 5 && pb_node_int(r, "hw.cm.c", 0) == 3);
    PB_CHECK_EQ_INT(pb_node_get(r, "hw.cm.b.y")->line, 2);                 /* positions kept */
    PB_CHECK(pb_node_int(pb_config_root(c), "hw.cm.b.y", 0) == 2);          /* source untouched */
    pb_config_destroy(k);
    pb_config_destroy(c);
}

/* ---- declared keys ---- */
static const pb_key DECL_SUB[] = {
    {.name = "depth", .type = PB_T_INT, .lo = 0, .hi = 9, .dflt = "3", .doc = "levels"},
    {0},
};
static const pb_key DECL[] = {
    {.name = "type", .type = PB_T_ENUM, .required = true, .choices = "a|b|c", .doc = "which variant"},
    {.name = "size", .type = PB_T_INT, .lo = 1, .hi = 64, .dflt = "16", .scope = 1u | 4u, .doc = "tokens"},
    {.name = "share", .type = PB_T_NUM, .lo = 0, .hi = 1, .dflt = "0.25", .doc = "a fraction"},
    {.name = "on", .type = PB_T_BOOL, .dflt = "true", .doc = "switch"},
    {.name = "mode", .type = PB_T_ENUM, .choices = "x|y", .dflt = "y", .scope = 2u, .doc = "a mode"},
    {.name = "heads", .type = PB_T_INT, .lo = 1, .hi = 99, .dflt_rule = "the width", .doc = "heads"},
    {.name = "inner", .type = PB_T_MAP, .sub = DECL_SUB, .doc = "nested"},
    {.name = "items", .type = PB_T_LIST, .sub = DECL_SUB, .doc = "a list of maps"},
    {0},
};

PB_TEST(declared_keys_read_their_value_or_their_default) {
    pb_config *c;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_config_load_string("d.yaml", "type: b\nshare: 0.5\nmode: x\ninner: {}\nitems: [{depth: 7}]\n", &c, &e) ==
               PB_OK);
    const pb_node *r = pb_config_root(c);
    PB_CHECK(pb_config_validate(r, DECL, "", &e) == PB_OK);
    PB_CHECK(pb_schema_int(DECL, r, "size") == 16);             /* absent: the declaration's */
    PB_CHECK(pb_schema_num(DECL, r, "share") == 0.5);           /* given */
    PB_CHECK(pb_schema_bool(DECL, r, "on"));
    PB_CHECK(!strcmp(pb_schema_str(DECL, r, "mode"), "x"));
    PB_CHECK(!strcmp(pb_schema_str(DECL, r, "type"), "b"));       /* required: present */
    PB_CHECK(pb_schema_int_or(DECL, r, "heads", 12) == 12);     /* a rule: the caller's value */
    PB_CHECK(pb_schema_int(DECL, r, "inner.depth") == 3);       /* dotted, into a sub-schema */
    PB_CHECK(pb_schema_int(DECL, r, "items.0.depth") == 7);     /* a list index */
    PB_CHECK(pb_schema_int(DECL, NULL, "size") == 16);          /* no map at all */
    PB_CHECK(pb_schema_find(DECL, "items.0.depth") == &DECL_SUB[0]);
    PB_CHECK(pb_schema_find(DECL, "inner.width") == NULL && pb_schema_find(DECL, "nope") == NULL);
    /* scope: bit i = the i-th choice of `type` */
    PB_CHECK(pb_key_in_scope(DECL, &DECL[1], "a") && !pb_key_in_scope(DECL, &DECL[1], "b") &&
             pb_key_in_scope(DECL, &DECL[1], "c"));
    PB_CHECK(pb_key_in_scope(DECL, &DECL[2], "b"));             /* scope 0: every type */
    char buf[256];
    pb_key_scope_names(DECL, &DECL[1], buf, sizeof buf);
    PB_CHECK(!strcmp(buf, "a, c"));
    pb_key_describe(DECL, &DECL[1], buf, sizeof buf);
    PB_CHECK(!strcmp(buf, "an integer in [1, 64]; default 16; read by type a, c"));
    pb_key_describe(DECL, &DECL[5], buf, sizeof buf);
    PB_CHECK(!strcmp(buf, "an integer in [1, 99]; default: the width"));
    PB_CHECK(pb_schema_check(DECL, "", &e) == PB_OK);
    pb_config_destroy(c);
}

PB_TEST(a_declaration_that_breaks_a_rule_is_refused) {
    static const pb_key BAD[] = {
        {.name = "type", .type = PB_T_ENUM, .choices = "a|b", .dflt = "a", .doc = "variant"},
        {.name = "k1", .type = PB_T_INT, .lo = 1, .hi = 8, .dflt = "16", .doc = "out of its range"},
        {.name = "k2", .type = PB_T_INT, .lo = 1, .hi = 8, .doc = "optional, none given"},
        {.name = "k3", .type = PB_T_INT, .lo = 1, .hi = 8, .dflt = "2", .doc = "size (default 2)"},
        {.name = "k4", .type = PB_T_INT, .required = true, .dflt = "2", .doc = "required and given one"},
        {.name = "k5", .type = PB_T_INT, .dflt = "2", .dflt_rule = "the width", .doc = "both"},
        {.name = "k6", .type = PB_T_ENUM, .choices = "x|y", .dflt = "z", .doc = "not a choice"},
        {.name = "k7", .type = PB_T_INT, .dflt = "1", .scope = 4u, .doc = "a third type of two"},
        {.name = "k1", .type = PB_T_INT, .dflt = "1", .doc = "again"},
        {.name = "k8", .type = PB_T_MAP, .dflt = "x", .doc = "a map with a value"},
        {.name = "k9", .type = PB_T_INT, .dflt = "1"},
        {0},
    };
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_CHECK(pb_schema_check(BAD, "bad", &e) == PB_ERR_INVALID);
    static const char *const WANT[] = {
        "'k1' default: 16 out of range",  "'k2': optional and no default", "'k3': the doc restates a default",
        "'k4': required, yet",          "'k5': both dflt and dflt_rule", "'k6' default: 'z' is not one of",
        "'k7': scope names a type",     "'k1' declared twice",           "'k8': a map or list takes no dflt",
        "'k9': no doc line",
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(WANT); i++) PB_CHECK_STR_CONTAINS(e.msg, WANT[i]);
    PB_CHECK(e.count == (int)PB_ARRAY_LEN(WANT));
}

PB_TEST_MAIN()
