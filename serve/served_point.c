/* served_point.c -- the point `serve` serves and `loadgen` measures (served_point.h). */
#include "served_point.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "system.h"

pb_status pb_served_point_open(pb_served_point *sp, const char *cmd, const char *path, const char **sets,
                               int n_sets, const char *executor, const char *system) {
    memset(sp, 0, sizeof *sp);
    pb_cfg_err ce;
    pb_cfg_err_clear(&ce);
    pb_status st = pb_experiment_load(path, sets, n_sets, false, &sp->e, &ce);
    if (st == PB_OK && executor) {   /* where the YAML names it: executor, or executor.type */
        const pb_node *x = pb_node_get(pb_config_root(sp->e->cfg), "executor");
        char exset[64];
        snprintf(exset, sizeof exset, "%s=%s", x && x->kind == PB_NODE_MAP ? "executor.type" : "executor", executor);
        const char **all = pb_xcalloc((size_t)n_sets + 1, sizeof *all);
        memcpy(all, sets, (size_t)n_sets * sizeof *all);
        all[n_sets] = exset;
        pb_experiment_destroy(sp->e);
        sp->e = NULL;
        pb_cfg_err_clear(&ce);
        st = pb_experiment_load(path, all, n_sets + 1, false, &sp->e, &ce);
        free(all);
    }
    if (st == PB_OK) st = pb_system_check(sp->e, &ce);
    if (st == PB_OK && (sp->sys = pb_system_pick(sp->e, system)) < 0) {
        fprintf(stderr, "pagedbench %s: %s has no system '%s'\n", cmd, path, system);
        pb_served_point_close(sp);
        return PB_ERR_INVALID;
    }
    if (st == PB_OK) st = pb_experiment_resolve(sp->e, sp->sys, 0, &sp->cfg, &ce);
    if (st != PB_OK) {
        if (ce.msg[0]) fprintf(stderr, "%s\n", ce.msg);
        pb_served_point_close(sp);
        return PB_ERR_INVALID;
    }
    snprintf(sp->sys_path, sizeof sp->sys_path, "systems.%d", sp->sys);
    pb_experiment_point_values(sp->e, sp->sys, 0, sp->vals);
    const pb_node *root = pb_config_root(sp->cfg);
    sp->pt = (pb_point_ctx){.exp = sp->e, .sys = sp->sys, .point = 0, .axis_values = sp->vals, .root = root,
                            .system = pb_node_get(root, sp->sys_path)};
    return PB_OK;
}

void pb_served_point_close(pb_served_point *sp) {
    pb_config_destroy(sp->cfg);
    pb_experiment_destroy(sp->e);
    memset(sp, 0, sizeof *sp);
}
