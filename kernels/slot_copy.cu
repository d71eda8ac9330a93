/* slot_copy.cu -- contiguous-cache range copies on the device (slot_copy.h):
 * a K or V tensor is (rows x S*x) or (rows x S) elements, so one copy of n slots is a
 * strided 2-D copy of width n*x (K) or n (V) elements over all rows. */
#include <cuda_runtime.h>

#include "kv_dtype.h"
#include "slot_copy.h"

extern "C" pb_status pb_copy_slots_cuda(const pb_kv_cache_shape *c, void *const *k_caches,
                                        void *const *v_caches, int32_t num_layers,
                                        const pb_slot_copy *copies, int32_t n_copies,
                                        struct CUstream_st *stream) {
    if (pb_copy_slots_check(c, copies, n_copies) != PB_OK) return PB_ERR_INVALID;
    const int64_t S = c->block_size;
    const size_t el = pb_kv_dtype_size(pb_kv_cache_shape_elem(c));   /* the cache's elements */
    const int64_t x = (int64_t)(16 / el), D = c->head_size, H = c->num_kv_heads;
    for (int32_t l = 0; l < num_layers; l++) {
        char *k = (char *)k_caches[l], *v = (char *)v_caches[l];
        for (int32_t i = 0; i < n_copies; i++) {
            const pb_slot_copy *cp = &copies[i];
            if (cp->n == 0) continue;
            size_t kp = (size_t)(S * x) * el, vp = (size_t)S * el;
            cudaError_t e = cudaMemcpy2DAsync(k + (size_t)(cp->dst * x) * el, kp, k + (size_t)(cp->src * x) * el, kp,
                                              (size_t)(cp->n * x) * el, (size_t)(H * (D / x)),
                                              cudaMemcpyDeviceToDevice, stream);
            if (e == cudaSuccess)
                e = cudaMemcpy2DAsync(v + (size_t)cp->dst * el, vp, v + (size_t)cp->src * el, vp,
                                      (size_t)cp->n * el, (size_t)(H * D), cudaMemcpyDeviceToDevice, stream);
            if (e != cudaSuccess) return PB_ERR_CUDA;
        }
    }
    return PB_OK;
}
