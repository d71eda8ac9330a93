/* executor_cuda.c -- the `cuda` executor (see executor_real.h).  Being written. */
#include "executor_real.h"

#include <stdio.h>

bool pb_cuda_available(char *reason, size_t reason_len) {
    if (reason && reason_len) snprintf(reason, reason_len, "built without CUDA");
    return false;
}

pb_status pb_executor_cuda_create(const pb_model *m, const pb_real_exec_params *p,
                                  pb_executor **out) {
    *out = NULL;
    pb_log_error("executor cuda: this build has no CUDA");
    return PB_ERR_UNSUPPORTED;
}
