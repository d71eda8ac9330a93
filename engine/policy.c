/* policy.c -- what the shipped policies share besides the building blocks: the
 * construction of a policy without options, and the options a policy declares
 * (pb_policy_keys: checked, read, and checked themselves) (policy.h). */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const pb_policy_keys pb_policy_no_keys = {NULL, NULL};

pb_status pb_policy_plain_create(const pb_policy_i *iface, const pb_node *opts, pb_policy **out,
                                 pb_cfg_err *err) {
    *out = NULL;
    if (pb_policy_opts_check(iface->name, &pb_policy_no_keys, opts, err)) return PB_ERR_INVALID;
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = iface;
    *out = p;
    return PB_OK;
}

void pb_policy_plain_destroy(pb_policy *p) {
    if (!p) return;
    free(p->impl);
    free(p);
}

/* ---- options ---- */
const pb_policy_option *pb_policy_option_find(const pb_policy_keys *k, const char *name) {
    for (const pb_policy_option *o = k->options; o && o->name; o++)
        if (!strcmp(o->name, name)) return o;
    return NULL;
}

pb_key pb_policy_option_key(const pb_policy_option *o) {
    return (pb_key){.name = o->name, .type = o->type, .lo = o->lo, .hi = o->hi, .choices = o->choices, .dflt = o->dflt,
                    .doc = o->doc};
}

pb_status pb_policy_opts_check(const char *policy, const pb_policy_keys *k, const pb_node *opts, pb_cfg_err *err) {
    pb_cfg_err sink;   /* err may be NULL */
    if (!err) { pb_cfg_err_clear(&sink); err = &sink; }
    if (!opts) return PB_OK;
    if (opts->kind != PB_NODE_MAP) return pb_cfg_fail(err, opts, false, "policy %s: its options must be a map", policy);
    pb_status st = PB_OK;
    for (int i = 0; i < opts->n_kids; i++) {
        const pb_node *v = opts->kids[i];
        const pb_policy_option *o = pb_policy_option_find(k, v->key);
        if (o) {
            pb_key key = pb_policy_option_key(o);
            if (pb_config_validate_value(v, &key, v->key, err)) st = PB_ERR_INVALID;
            continue;
        }
        if (!k->options || !k->options[0].name) {
            st = pb_cfg_fail(err, v, true, "policy %s takes no options (unknown key '%s')", policy, v->key);
            continue;
        }
        char known[256] = "";
        for (const pb_policy_option *p = k->options; p->name; p++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", known[0] ? ", " : "", p->name);
        st = pb_cfg_fail(err, v, true, "policy %s: unknown option '%s' (its options: %s)", policy, v->key, known);
    }
    return st;
}

/* The option's text in opts, else its default (an option k does not declare is a bug). */
static const char *opt_text(const pb_policy_keys *k, const pb_node *opts, const char *name, pb_type type) {
    const pb_policy_option *o = pb_policy_option_find(k, name);
    PB_ASSERT(o && o->type == type);
    const pb_node *v = opts ? pb_node_get(opts, name) : NULL;
    return v && v->kind == PB_NODE_SCALAR ? v->value : o->dflt;
}

int64_t pb_policy_opt_int(const pb_policy_keys *k, const pb_node *opts, const char *name) {
    int64_t v = 0;
    PB_ASSERT(pb_parse_int(opt_text(k, opts, name, PB_T_INT), &v));
    return v;
}

double pb_policy_opt_num(const pb_policy_keys *k, const pb_node *opts, const char *name) {
    double v = 0;
    PB_ASSERT(pb_parse_num(opt_text(k, opts, name, PB_T_NUM), &v));
    return v;
}

const char *pb_policy_opt_str(const pb_policy_keys *k, const pb_node *opts, const char *name) {
    return opt_text(k, opts, name, PB_T_ENUM);
}

pb_status pb_policy_keys_check(const char *policy, const pb_policy_keys *k, pb_cfg_err *err) {
    pb_status st = PB_OK;
    pb_node at = {.kind = PB_NODE_SCALAR, .file = policy};   /* where a problem is reported */
    for (const pb_policy_option *o = k->options; o && o->name; o++) {
        for (const pb_policy_option *p = k->options; p < o; p++)
            if (!strcmp(p->name, o->name)) st = pb_cfg_fail(err, &at, false, "option '%s' declared twice", o->name);
        bool numeric = o->type == PB_T_INT || o->type == PB_T_NUM;
        if (!numeric && o->type != PB_T_ENUM)
            st = pb_cfg_fail(err, &at, false, "option '%s': type must be INT, NUM or ENUM", o->name);
        if (numeric && !(o->lo < o->hi)) st = pb_cfg_fail(err, &at, false, "option '%s': no range (lo < hi)", o->name);
        if ((o->type == PB_T_ENUM) != (o->choices != NULL))
            st = pb_cfg_fail(err, &at, false, "option '%s': choices are for ENUM options only", o->name);
        if (!o->doc || !o->doc[0]) st = pb_cfg_fail(err, &at, false, "option '%s': no doc line", o->name);
        if (!o->dflt) {
            st = pb_cfg_fail(err, &at, false, "option '%s': no default", o->name);
            continue;
        }
        pb_key key = pb_policy_option_key(o);
        pb_node v = at;
        v.value = o->dflt;
        char path[128];
        snprintf(path, sizeof path, "option '%s' default", o->name);
        if (pb_config_validate_value(&v, &key, path, err)) st = PB_ERR_INVALID;
    }
    return st;
}
