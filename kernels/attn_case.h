/* attn_case.h -- seeded decode-attention inputs in both KV layouts, for the kernel
 * tests (CPU references and GPU kernels) and the CPU path of `pagedbench kernels`.
 *
 * The logical K/V of every sequence is drawn first (uniform in (-1, 1), rounded to
 * the dtype) and kept dense as fp32 [S][max_ctx][Hkv][D] (want_dense); it is then
 * scattered into a paged cache (blocks of each sequence drawn from a random
 * permutation of all block ids, so blocks are not contiguous and not ordered) and
 * into a contiguous (FT) cache (sequences at 8-aligned slot offsets unless
 * PB_ATTN_CASE_ODD_OFFSETS).  With PB_ATTN_CASE_POISON, every cache element no token owns is NaN, so a kernel that reads past a
 * context or forgets to mask the last partial block produces NaN.
 * Block-table padding entries are -1.
 * With an fp8 kv_cache_dtype (pb_attn_case_make_kv) the caches hold fp8(v /
 * kv_scale) of the same draws and the dense copies their dequantized values, so a
 * case made with the same seed and an fp16 cache holds the same logical K/V. */
#ifndef PB_ATTN_CASE_H
#define PB_ATTN_CASE_H

#include <stdint.h>

#include "attention.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    pb_attn_params p;          /* paged shape (num_blocks, block tables)            */
    pb_attn_params pc;         /* contiguous shape (num_slots)                      */
    int32_t *context_lens;     /* [S]                                               */
    int32_t *block_tables;     /* [S, p.max_blocks_per_seq]                         */
    int64_t *kv_offsets;       /* [S], multiples of 8 unless ODD_OFFSETS            */
    void *q;                   /* [S, H*D]            (dtype)                       */
    void *k_cache, *v_cache;   /* paged               (the cache's element type)    */
    void *kc_contig, *vc_contig;  /* contiguous       (the cache's element type)    */
    float *dense_k, *dense_v;  /* [S][max_ctx][Hkv][D] stored values (NULL unless want_dense) */
    size_t q_elems, out_elems, cache_elems, contig_elems;
} pb_attn_case;

enum {
    PB_ATTN_CASE_POISON = 1,       /* unowned cache elements are NaN                 */
    PB_ATTN_CASE_ODD_OFFSETS = 2,  /* contiguous kv_offsets not multiples of 8       */
    PB_ATTN_CASE_ODD_SLOTS = 4     /* contiguous num_slots not a multiple of 8       */
};

/* ctx_lens[num_seqs]; block_size >= 1; flags PB_ATTN_CASE_* (1 = poison only);
 * returns PB_OK or PB_ERR_INVALID. */
pb_status pb_attn_case_make(pb_attn_case *c, uint64_t seed, int32_t num_seqs,
                            const int32_t *ctx_lens, int32_t num_heads, int32_t num_kv_heads,
                            int32_t head_size, int32_t block_size, pb_kv_dtype dtype,
                            int flags, int want_dense);
/* The same with the caches in format kv_cache_dtype (auto: as above) and kv_scale. */
pb_status pb_attn_case_make_kv(pb_attn_case *c, uint64_t seed, int32_t num_seqs,
                               const int32_t *ctx_lens, int32_t num_heads, int32_t num_kv_heads,
                               int32_t head_size, int32_t block_size, pb_kv_dtype dtype,
                               pb_kv_cache_dtype kv_cache_dtype, float kv_scale, int flags,
                               int want_dense);
void pb_attn_case_free(pb_attn_case *c);

#ifdef __cplusplus
}
#endif
#endif /* PB_ATTN_CASE_H */
