/* block_alloc.c -- the block pool (see block_alloc.h). */
#include "block_alloc.h"

#include <stdlib.h>
#include <string.h>

pb_block_alloc *pb_block_alloc_create(int32_t n_blocks, int32_t block_size) {
    if (n_blocks < 0 || block_size < 1) return NULL;
    pb_block_alloc *a = pb_xcalloc(1, sizeof *a);
    a->n_blocks = n_blocks;
    a->block_size = block_size;
    a->free_stack = pb_xmalloc((size_t)n_blocks * sizeof(int32_t) + 1);
    a->meta = pb_xcalloc((size_t)n_blocks + 1, sizeof *a->meta);
    /* LIFO stack: block 0 is handed out first (pushed last) */
    for (int32_t i = 0; i < n_blocks; i++) a->free_stack[i] = n_blocks - 1 - i;
    a->n_free = n_blocks;
    return a;
}

void pb_block_alloc_destroy(pb_block_alloc *a) {
    if (!a) return;
    free(a->free_stack);
    free(a->meta);
    free(a);
}

pb_status pb_block_alloc_check(const pb_block_alloc *a) {
    if (a->n_free < 0 || a->n_free > a->n_blocks || a->n_reserved < 0 || a->n_reserved > a->n_free) {
        pb_log_error("block_alloc: %d free of %d blocks, %d of them reserved", a->n_free, a->n_blocks, a->n_reserved);
        return PB_ERR_INVALID;
    }
    uint8_t *seen = pb_xcalloc((size_t)a->n_blocks + 1, 1);
    pb_status st = PB_OK;
    for (int32_t i = 0; i < a->n_free && st == PB_OK; i++) {
        int32_t b = a->free_stack[i];
        if (b < 0 || b >= a->n_blocks) {
            pb_log_error("block_alloc: free stack holds invalid block %d", b);
            st = PB_ERR_INVALID;
        } else if (seen[b]) {
            pb_log_error("block_alloc: block %d twice on the free stack", b);
            st = PB_ERR_INVALID;
        } else if (a->meta[b].ref != 0 || a->meta[b].fill != 0) {
            pb_log_error("block_alloc: free block %d has ref %d fill %d", b, a->meta[b].ref, a->meta[b].fill);
            st = PB_ERR_INVALID;
        } else {
            seen[b] = 1;
        }
    }
    int64_t slots = 0;
    int32_t used = 0, cached = 0;
    for (int32_t b = 0; b < a->n_blocks && st == PB_OK; b++) {
        if (seen[b]) continue;
        if (a->meta[b].ref == 0 && a->meta[b].fill == 0) {   /* kept by its owner */
            cached++;
            continue;
        }
        used++;
        if (a->meta[b].ref < 1) {
            pb_log_error("block_alloc: block %d neither free nor referenced (ref %d)", b, a->meta[b].ref);
            st = PB_ERR_INVALID;
        } else if (a->meta[b].fill < 0 || a->meta[b].fill > a->block_size) {
            pb_log_error("block_alloc: block %d fill %d out of [0, %d]", b, a->meta[b].fill, a->block_size);
            st = PB_ERR_INVALID;
        }
        slots += a->meta[b].fill;
    }
    if (st == PB_OK && cached != a->n_cached) {
        pb_log_error("block_alloc: %d blocks at ref 0 off the free stack, n_cached %d", cached, a->n_cached);
        st = PB_ERR_INVALID;
    }
    if (st == PB_OK && used + a->n_free + a->n_cached != a->n_blocks) {
        pb_log_error("block_alloc: free %d + used %d + cached %d != total %d", a->n_free, used, a->n_cached,
                     a->n_blocks);
        st = PB_ERR_INVALID;
    }
    if (st == PB_OK && slots != a->token_slots) {
        pb_log_error("block_alloc: token_slots %lld != sum of fills %lld",
                     (long long)a->token_slots, (long long)slots);
        st = PB_ERR_INVALID;
    }
    free(seen);
    return st;
}
