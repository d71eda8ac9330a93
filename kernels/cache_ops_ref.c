/* cache_ops_ref.c -- C11 references for cache_ops.h: reshape_and_cache,
 * gather_cached_kv, copy_blocks, swap run merging and host swap. */
#include <stdlib.h>
#include <string.h>

#include "cache_ops.h"

pb_kv_dtype pb_kv_cache_shape_elem(const pb_kv_cache_shape *c) {
    return pb_kv_cache_elem(c->dtype, c->kv_cache_dtype);
}

size_t pb_kv_block_bytes(const pb_kv_cache_shape *c) {
    return (size_t)c->num_kv_heads * (size_t)c->head_size * (size_t)c->block_size *
           pb_kv_dtype_size(pb_kv_cache_shape_elem(c));
}

pb_status pb_kv_cache_shape_check(const pb_kv_cache_shape *c) {
    const char *why = NULL;
    if (!c) return PB_ERR_INVALID;
    if (!pb_kv_dtype_name(c->dtype) || pb_kv_dtype_is_fp8(c->dtype)) why = "unknown activation dtype";
    else if (!pb_kv_cache_dtype_name(c->kv_cache_dtype)) why = "unknown kv_cache_dtype";
    else if (c->kv_cache_dtype != PB_KV_CACHE_AUTO && !pb_kv_scale_ok(c->kv_scale))
        why = "an fp8 cache needs a finite kv_scale > 0";
    else if (c->num_blocks <= 0 || c->num_kv_heads <= 0 || c->block_size <= 0)
        why = "num_blocks, num_kv_heads and block_size must be > 0";
    else if (c->head_size <= 0 || c->head_size % pb_kv_x(c->dtype) ||
             c->head_size % pb_kv_x(pb_kv_cache_shape_elem(c)))
        why = "head_size must be a positive multiple of x = 16 / sizeof(elem)";
    if (why) { pb_log_error("kv cache: %s", why); return PB_ERR_INVALID; }
    return PB_OK;
}

/* element offsets of (slot, head, dim) in the K / V cache */
static size_t k_off(const pb_kv_cache_shape *c, int64_t slot, int64_t h, int64_t d) {
    int64_t x = pb_kv_x(pb_kv_cache_shape_elem(c)), bs = c->block_size, blk = slot / bs, off = slot % bs;
    return (size_t)((((blk * c->num_kv_heads + h) * (c->head_size / x) + d / x) * bs + off) * x + d % x);
}
static size_t v_off(const pb_kv_cache_shape *c, int64_t slot, int64_t h, int64_t d) {
    int64_t bs = c->block_size, blk = slot / bs, off = slot % bs;
    return (size_t)(((blk * c->num_kv_heads + h) * c->head_size + d) * bs + off);
}

static pb_status check_slots(const pb_kv_cache_shape *c, const int64_t *slots, int32_t n) {
    pb_status st = pb_kv_cache_shape_check(c);
    if (st != PB_OK) return st;
    if (n < 0) return PB_ERR_INVALID;
    int64_t cap = (int64_t)c->num_blocks * c->block_size;
    for (int32_t i = 0; i < n; i++)
        if (slots[i] >= cap) {
            pb_log_error("kv cache: slot_mapping[%d] = %lld >= %lld slots", i, (long long)slots[i],
                         (long long)cap);
            return PB_ERR_INVALID;
        }
    return PB_OK;
}

pb_status pb_reshape_and_cache_ref(const pb_kv_cache_shape *c, void *k_cache, void *v_cache,
                                   const void *key, const void *value, int32_t key_stride,
                                   int32_t value_stride, const int64_t *slot_mapping,
                                   int32_t num_tokens) {
    pb_status st = check_slots(c, slot_mapping, num_tokens);
    if (st != PB_OK) return st;
    const int64_t HD = (int64_t)c->num_kv_heads * c->head_size;
    const int64_t ks = key_stride ? key_stride : HD, vs = value_stride ? value_stride : HD;
    if (ks < HD || vs < HD) { pb_log_error("kv cache: key/value stride < Hkv*D"); return PB_ERR_INVALID; }
    const size_t es = pb_kv_dtype_size(c->dtype);
    const pb_kv_dtype ce = pb_kv_cache_shape_elem(c);
    for (int32_t i = 0; i < num_tokens; i++) {
        int64_t slot = slot_mapping[i];
        if (slot < 0) continue;
        for (int64_t h = 0; h < c->num_kv_heads; h++)
            for (int64_t d = 0; d < c->head_size; d++) {
                int64_t e = h * c->head_size + d;
                size_t ki = (size_t)(i * ks + e), vi = (size_t)(i * vs + e);
                if (ce != c->dtype) {   /* fp8: quantize x / kv_scale */
                    pb_kv_store(k_cache, ce, k_off(c, slot, h, d), pb_kv_load(key, c->dtype, ki) / c->kv_scale);
                    pb_kv_store(v_cache, ce, v_off(c, slot, h, d), pb_kv_load(value, c->dtype, vi) / c->kv_scale);
                    continue;
                }
                memcpy((char *)k_cache + k_off(c, slot, h, d) * es, (const char *)key + ki * es, es);
                memcpy((char *)v_cache + v_off(c, slot, h, d) * es, (const char *)value + vi * es, es);
            }
    }
    return PB_OK;
}

pb_status pb_gather_cached_kv_ref(const pb_kv_cache_shape *c, void *key, void *value,
                                  const void *k_cache, const void *v_cache,
                                  const int64_t *slot_mapping, int32_t num_tokens) {
    pb_status st = check_slots(c, slot_mapping, num_tokens);
    if (st != PB_OK) return st;
    const int64_t HD = (int64_t)c->num_kv_heads * c->head_size;
    const size_t es = pb_kv_dtype_size(c->dtype);
    const pb_kv_dtype ce = pb_kv_cache_shape_elem(c);
    for (int32_t i = 0; i < num_tokens; i++) {
        int64_t slot = slot_mapping[i];
        char *kd = (char *)key + (size_t)(i * HD) * es, *vd = (char *)value + (size_t)(i * HD) * es;
        if (slot < 0) { memset(kd, 0, (size_t)HD * es); memset(vd, 0, (size_t)HD * es); continue; }
        for (int64_t h = 0; h < c->num_kv_heads; h++)
            for (int64_t d = 0; d < c->head_size; d++) {
                int64_t e = h * c->head_size + d;
                if (ce != c->dtype) {   /* fp8: dequantize fp8 * kv_scale */
                    pb_kv_store(kd, c->dtype, (size_t)e, pb_kv_load(k_cache, ce, k_off(c, slot, h, d)) * c->kv_scale);
                    pb_kv_store(vd, c->dtype, (size_t)e, pb_kv_load(v_cache, ce, v_off(c, slot, h, d)) * c->kv_scale);
                    continue;
                }
                memcpy(kd + e * es, (const char *)k_cache + k_off(c, slot, h, d) * es, es);
                memcpy(vd + e * es, (const char *)v_cache + v_off(c, slot, h, d) * es, es);
            }
    }
    return PB_OK;
}

pb_status pb_copy_blocks_ref(void *const *k_caches, void *const *v_caches, int32_t num_layers,
                             const pb_block_pair *pairs, int32_t num_pairs, size_t block_bytes) {
    if (num_layers < 0 || num_pairs < 0) return PB_ERR_INVALID;
    for (int32_t l = 0; l < num_layers; l++)
        for (int32_t i = 0; i < num_pairs; i++) {
            if (pairs[i].src < 0 || pairs[i].dst < 0) {
                pb_log_error("copy_blocks: pair %d (%d -> %d) has a negative block", i, pairs[i].src, pairs[i].dst);
                return PB_ERR_INVALID;
            }
            size_t so = (size_t)pairs[i].src * block_bytes, dof = (size_t)pairs[i].dst * block_bytes;
            memmove((char *)k_caches[l] + dof, (const char *)k_caches[l] + so, block_bytes);
            memmove((char *)v_caches[l] + dof, (const char *)v_caches[l] + so, block_bytes);
        }
    return PB_OK;
}

static int cmp_pair_src(const void *a, const void *b) {
    const pb_block_pair *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    return x->dst < y->dst ? -1 : x->dst > y->dst;
}

int32_t pb_swap_merge_runs(const pb_block_pair *pairs, int32_t num_pairs, size_t block_bytes,
                           pb_copy_run *runs) {
    if (num_pairs <= 0) return 0;
    pb_block_pair *s = pb_xmalloc(sizeof(*s) * (size_t)num_pairs);
    memcpy(s, pairs, sizeof(*s) * (size_t)num_pairs);
    qsort(s, (size_t)num_pairs, sizeof(*s), cmp_pair_src);
    int32_t n = 0;
    for (int32_t i = 0; i < num_pairs; i++) {
        int64_t so = (int64_t)s[i].src * (int64_t)block_bytes, dof = (int64_t)s[i].dst * (int64_t)block_bytes;
        if (n > 0 && runs[n - 1].src_off + runs[n - 1].bytes == so &&
            runs[n - 1].dst_off + runs[n - 1].bytes == dof) {
            runs[n - 1].bytes += (int64_t)block_bytes;
        } else {
            runs[n].src_off = so;
            runs[n].dst_off = dof;
            runs[n].bytes = (int64_t)block_bytes;
            n++;
        }
    }
    free(s);
    return n;
}

pb_status pb_swap_blocks_ref(void *const *dst_tensors, const void *const *src_tensors,
                             int32_t num_tensors, const pb_block_pair *pairs,
                             int32_t num_pairs, size_t block_bytes) {
    if (num_tensors < 0 || num_pairs < 0) return PB_ERR_INVALID;
    for (int32_t i = 0; i < num_pairs; i++)
        if (pairs[i].src < 0 || pairs[i].dst < 0) {
            pb_log_error("swap_blocks: pair %d (%d -> %d) has a negative block", i, pairs[i].src, pairs[i].dst);
            return PB_ERR_INVALID;
        }
    pb_copy_run *runs = pb_xmalloc(sizeof(*runs) * (size_t)(num_pairs > 0 ? num_pairs : 1));
    int32_t nr = pb_swap_merge_runs(pairs, num_pairs, block_bytes, runs);
    for (int32_t t = 0; t < num_tensors; t++)
        for (int32_t r = 0; r < nr; r++)
            memcpy((char *)dst_tensors[t] + runs[r].dst_off, (const char *)src_tensors[t] + runs[r].src_off,
                   (size_t)runs[r].bytes);
    free(runs);
    return PB_OK;
}
