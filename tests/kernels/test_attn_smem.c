/* test_attn_smem.c -- the decode kernel's shared-memory opt-in (attn_smem.h), from the
 * sizes the launcher uses (V1: the context padded to 16 tokens, block ids of a paged
 * CTA) and the kernel's static bytes (ptxas_check.sh checks PB_ATTN_DECODE_STATIC_SMEM
 * against ptxas): the opt-in starts where static + dynamic passes 48 KiB, which a
 * decision on the dynamic bytes alone gets wrong at block 1 for contexts 5,873-6,128
 * and at block 2 for 7,841-8,176 (the launch would fail there); every V1 launch fits
 * the A100's and the H100's opt-in limits, and V2's partitions never need one.
 *   build/cpu/test_attn_smem */
#include "attention.h"
#include "attn_smem.h"
#include "pbtest.h"

enum { DEFAULT_LIMIT = 48 * 1024, OPTIN_A100 = 163 * 1024, OPTIN_H100 = 227 * 1024 };

static int log2i(int v) { int s = 0; while ((1 << s) < v) s++; return s; }

/* dynamic bytes of a V1 launch at this context and block size (0: contiguous) */
static size_t v1_dynamic(int32_t ctx, int32_t bs) {
    const int32_t part = (ctx + 15) / 16 * 16;
    return pb_attn_decode_dynamic_smem(part, pb_attn_decode_blk_ints(part, bs ? log2i(bs) : -1));
}

PB_TEST(plan_boundaries) {
    PB_CHECK(pb_smem_plan_for(100, 49052, DEFAULT_LIMIT, OPTIN_H100) == PB_SMEM_DEFAULT);
    PB_CHECK(pb_smem_plan_for(100, 49053, DEFAULT_LIMIT, OPTIN_H100) == PB_SMEM_OPT_IN);
    PB_CHECK(pb_smem_plan_for(2080, OPTIN_H100 - 2080, DEFAULT_LIMIT, OPTIN_H100) == PB_SMEM_OPT_IN);
    PB_CHECK(pb_smem_plan_for(2080, OPTIN_H100 - 2079, DEFAULT_LIMIT, OPTIN_H100) == PB_SMEM_TOO_LARGE);
    PB_CHECK(pb_smem_plan_for(60000, 0, DEFAULT_LIMIT, OPTIN_H100) == PB_SMEM_OPT_IN);
}

PB_TEST(static_bytes_of_the_decode_kernel) {
    PB_CHECK_EQ_INT(PB_ATTN_DECODE_STATIC_SMEM(128), 2080);
    PB_CHECK_EQ_INT(PB_ATTN_DECODE_STATIC_SMEM(64), 1056);
}

/* the first context that needs the opt-in, and the range the dynamic-only rule missed */
static void opt_in_range(int32_t bs, int32_t head, int32_t *first, int32_t *missed_lo, int32_t *missed_hi) {
    *first = *missed_lo = *missed_hi = 0;
    for (int32_t ctx = 1; ctx <= PB_ATTN_V1_MAX_CONTEXT; ctx++) {
        const size_t dyn = v1_dynamic(ctx, bs);
        const pb_smem_plan p = pb_smem_plan_for(PB_ATTN_DECODE_STATIC_SMEM(head), dyn, DEFAULT_LIMIT, OPTIN_A100);
        PB_CHECK(p != PB_SMEM_TOO_LARGE);
        if (p == PB_SMEM_OPT_IN && !*first) *first = ctx;
        if (*first) PB_CHECK(p == PB_SMEM_OPT_IN);      /* monotone in the context */
        if (p == PB_SMEM_OPT_IN && dyn <= DEFAULT_LIMIT) {
            if (!*missed_lo) *missed_lo = ctx;
            *missed_hi = ctx;
        }
    }
}

PB_TEST(v1_opt_in_counts_the_static_bytes) {
    int32_t first, lo, hi;
    opt_in_range(1, 128, &first, &lo, &hi);
    PB_CHECK_EQ_INT(first, 5873);
    PB_CHECK_EQ_INT(lo, 5873);
    PB_CHECK_EQ_INT(hi, 6128);
    opt_in_range(2, 128, &first, &lo, &hi);
    PB_CHECK_EQ_INT(first, 7841);
    PB_CHECK_EQ_INT(lo, 7841);
    PB_CHECK_EQ_INT(hi, 8176);
    /* one below and at the edges, by hand: 5,872 -> 5,872 logits + 5,874 ids = 46,984 B */
    PB_CHECK_EQ_INT(v1_dynamic(5872, 1), 46984);
    PB_CHECK(pb_smem_plan_for(2080, v1_dynamic(5872, 1), DEFAULT_LIMIT, OPTIN_H100) == PB_SMEM_DEFAULT);
    PB_CHECK(pb_smem_plan_for(2080, v1_dynamic(6128, 1), DEFAULT_LIMIT, OPTIN_H100) == PB_SMEM_OPT_IN);
    PB_CHECK(v1_dynamic(6128, 1) <= DEFAULT_LIMIT && v1_dynamic(6129, 1) > DEFAULT_LIMIT);
    /* block 4 and up, and the contiguous kernel, never cross 48 KiB within V1's 8K */
    for (int32_t bs = 4; bs <= 256; bs *= 2) {
        opt_in_range(bs, 128, &first, &lo, &hi);
        PB_CHECK_EQ_INT(first, 0);
    }
    opt_in_range(0, 128, &first, &lo, &hi);
    PB_CHECK_EQ_INT(first, 0);
}

PB_TEST(v2_partitions_need_no_opt_in) {
    for (int32_t bs = 1; bs <= 256; bs *= 2) {
        const size_t dyn = pb_attn_decode_dynamic_smem(PB_ATTN_PARTITION,
                                                       pb_attn_decode_blk_ints(PB_ATTN_PARTITION, log2i(bs)));
        PB_CHECK(pb_smem_plan_for(PB_ATTN_DECODE_STATIC_SMEM(128), dyn, DEFAULT_LIMIT, OPTIN_A100) == PB_SMEM_DEFAULT);
    }
}

PB_TEST_MAIN()
