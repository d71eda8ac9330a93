/* kv_manager.c -- small shared helpers of the KV-manager interface. */
#include "kv_manager.h"

#include <stdlib.h>

const char *pb_alloc_status_str(pb_alloc_status s) {
    switch (s) {
    case PB_ALLOC_OK: return "ok";
    case PB_ALLOC_LATER: return "later";
    case PB_ALLOC_NEVER: return "never";
    }
    return "?";
}

void pb_pair_vec_free(pb_pair_vec *pv) {
    free(pv->v);
    pv->v = NULL;
    pv->n = pv->cap = 0;
}
