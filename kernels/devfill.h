/* devfill.h -- device-side seeded fill for benchmark inputs (hash of seed and index,
 * uniform in [lo, hi)), so multi-GiB KV pools need no host staging.  CUDA only. */
#ifndef PB_DEVFILL_H
#define PB_DEVFILL_H

#include <stddef.h>
#include <stdint.h>

#include "pb.h"
#include "kv_dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;

#ifdef PB_HAVE_CUDA
/* dst[n] elements of dtype t (device memory). */
pb_status pb_fill_uniform_cuda(void *dst, size_t n, pb_kv_dtype t, uint64_t seed, float lo,
                               float hi, struct CUstream_st *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif /* PB_DEVFILL_H */
