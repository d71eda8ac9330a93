/* slot_copy_ref.c -- C reference of the contiguous-cache range copy (slot_copy.h). */
#include "slot_copy.h"

#include <string.h>

#include "kv_dtype.h"

pb_status pb_copy_slots_check(const pb_kv_cache_shape *c, const pb_slot_copy *copies, int32_t n_copies) {
    if (c->num_blocks != 1) return PB_ERR_INVALID;
    for (int32_t i = 0; i < n_copies; i++) {
        const pb_slot_copy *cp = &copies[i];
        if (cp->n < 0 || cp->src < 0 || cp->dst < 0 || cp->src + cp->n > c->block_size ||
            cp->dst + cp->n > c->block_size)
            return PB_ERR_INVALID;
        /* overlapping source and destination: cudaMemcpy2DAsync's result is undefined */
        if (cp->n > 0 && cp->src < cp->dst + cp->n && cp->dst < cp->src + cp->n) {
            pb_log_error("copy_slots: copy %d moves slots [%lld, %lld) onto overlapping [%lld, %lld)", i,
                         (long long)cp->src, (long long)(cp->src + cp->n), (long long)cp->dst,
                         (long long)(cp->dst + cp->n));
            return PB_ERR_INVALID;
        }
    }
    return PB_OK;
}

pb_status pb_copy_slots_ref(const pb_kv_cache_shape *c, void *const *k_caches, void *const *v_caches,
                            int32_t num_layers, const pb_slot_copy *copies, int32_t n_copies) {
    if (pb_copy_slots_check(c, copies, n_copies) != PB_OK) return PB_ERR_INVALID;
    const int64_t S = c->block_size;
    const size_t el = pb_kv_dtype_size(pb_kv_cache_shape_elem(c));   /* the cache's elements */
    const int64_t x = (int64_t)(16 / el), D = c->head_size, H = c->num_kv_heads;
    for (int32_t l = 0; l < num_layers; l++) {
        char *k = k_caches[l], *v = v_caches[l];
        for (int32_t i = 0; i < n_copies; i++) {
            const pb_slot_copy *cp = &copies[i];
            for (int64_t row = 0; row < H * (D / x); row++) {          /* K rows of S*x */
                char *base = k + (size_t)(row * S * x) * el;
                memcpy(base + (size_t)(cp->dst * x) * el, base + (size_t)(cp->src * x) * el,
                       (size_t)(cp->n * x) * el);
            }
            for (int64_t row = 0; row < H * D; row++) {                /* V rows of S */
                char *base = v + (size_t)(row * S) * el;
                memcpy(base + (size_t)cp->dst * el, base + (size_t)cp->src * el, (size_t)cp->n * el);
            }
        }
    }
    return PB_OK;
}
