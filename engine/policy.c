/* policy.c -- what the shipped policies share besides the building blocks: the
 * construction of a policy without options (policy.h). */
#include "policy.h"

#include <stdlib.h>

pb_status pb_policy_plain_create(const pb_policy_i *iface, const pb_node *opts, pb_policy **out,
                                 pb_cfg_err *err) {
    *out = NULL;
    if (opts && opts->kind == PB_NODE_MAP && opts->n_kids > 0) {
        if (err) pb_cfg_fail(err, opts->kids[0], true, "policy %s takes no options (unknown key '%s')",
                             iface->name, opts->kids[0]->key);
        return PB_ERR_INVALID;
    }
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
