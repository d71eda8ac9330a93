/* attn_smem.h -- the shared memory of a decode attention CTA (attention.cu) and the
 * decision to opt into more than a device's default per block.
 *
 * A CTA's shared memory is its kernel's static __shared__ arrays plus the launch's
 * dynamic bytes.  Up to the default per block (cudaDevAttrMaxSharedMemoryPerBlock,
 * 48 KiB) a launch needs nothing; above it the kernel's
 * cudaFuncAttributeMaxDynamicSharedMemorySize must first be raised to the dynamic
 * bytes, which works while static + dynamic stays within the opt-in limit
 * (cudaDevAttrMaxSharedMemoryPerBlockOptin: 163 KiB on sm_80, 227 KiB on sm_90);
 * beyond it the launch cannot run.  Judging by the dynamic bytes alone misses the
 * static part: decode at block 1 (V1, head 128) crosses 48 KiB at context 5,873 with
 * 2,080 static bytes, while its dynamic bytes alone reach 48 KiB only past 6,128.
 * The launchers take the static bytes from cudaFuncGetAttributes (sharedSizeBytes).
 *
 * C11 and C++17 clean (included by .cu files). */
#ifndef PB_ATTN_SMEM_H
#define PB_ATTN_SMEM_H

#include <stddef.h>
#include <stdint.h>

typedef enum { PB_SMEM_TOO_LARGE = -1, PB_SMEM_DEFAULT = 0, PB_SMEM_OPT_IN = 1 } pb_smem_plan;

static inline pb_smem_plan pb_smem_plan_for(size_t static_bytes, size_t dynamic_bytes,
                                            size_t default_limit, size_t optin_limit) {
    const size_t total = static_bytes + dynamic_bytes;
    if (total <= default_limit) return PB_SMEM_DEFAULT;
    return total <= optin_limit ? PB_SMEM_OPT_IN : PB_SMEM_TOO_LARGE;
}

/* Static bytes of decode_kernel<.., HEAD, ..>: red[2 * 4 warps] and out_red[4 warps][HEAD]
 * floats (tools/gpu/ptxas_check.sh checks it against what ptxas reports). */
#define PB_ATTN_DECODE_STATIC_SMEM(head) ((size_t)4 * (2 * 4 + 4 * (size_t)(head)))

/* Ints of block ids a paged CTA over part_tokens tokens prefetches (bs_shift = log2 of
 * the block size; -1: contiguous, none), and its dynamic bytes: fp32 logits + ids. */
static inline int32_t pb_attn_decode_blk_ints(int32_t part_tokens, int32_t bs_shift) {
    return bs_shift >= 0 ? (part_tokens >> bs_shift) + 2 : 0;
}
static inline size_t pb_attn_decode_dynamic_smem(int32_t part_tokens, int32_t blk_ints) {
    return ((size_t)part_tokens + (size_t)blk_ints) * 4;
}

#endif /* PB_ATTN_SMEM_H */
