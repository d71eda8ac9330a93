/* test_graph_pool.c -- the CUDA-graph bookkeeping the cuda executor relies on,
 * checked without a GPU (executors/graph_pool.h): vLLM v0.2.6's batch sizes (1, 2, 4,
 * 8, ..., 256) and the padded size of every batch 1..257, which steps replay a
 * graph, the pool's capture / replay / invalidation counts with a stand-in destroy
 * callback, and a decode step's metadata padded to its bucket (pad rows: token 0,
 * position 0, slot -1, context 1, zero block-table row; tables re-strided).
 *   cmake --build build && (cd build && ctest -R test_graph_pool --output-on-failure) */
#include <stdlib.h>
#include <string.h>

#include "graph_pool.h"
#include "pbtest.h"

PB_TEST(buckets_are_vllm_batch_sizes_to_capture) {
    /* [1, 2, 4] + [8 * i for i in range(1, 33)] */
    int32_t want[PB_GRAPH_N_BUCKETS];
    want[0] = 1; want[1] = 2; want[2] = 4;
    for (int i = 1; i <= 32; i++) want[2 + i] = 8 * i;
    for (int i = 0; i < PB_GRAPH_N_BUCKETS; i++) {
        PB_CHECK_EQ_INT(pb_graph_bucket_size(i), want[i]);
        PB_CHECK_EQ_INT(pb_graph_bucket_index(want[i]), i);
    }
    PB_CHECK_EQ_INT(pb_graph_bucket_size(PB_GRAPH_N_BUCKETS), 0);
    PB_CHECK_EQ_INT(pb_graph_bucket_index(3), -1);
    PB_CHECK_EQ_INT(pb_graph_bucket_index(264), -1);
    /* every batch goes to the smallest bucket that holds it (_get_graph_batch_size) */
    for (int32_t n = 1; n <= PB_GRAPH_MAX_BATCH; n++) {
        int32_t b = pb_graph_bucket(n), best = 0;
        for (int i = 0; i < PB_GRAPH_N_BUCKETS && !best; i++) if (want[i] >= n) best = want[i];
        PB_CHECK_EQ_INT(b, best);
    }
    PB_CHECK_EQ_INT(pb_graph_bucket(3), 4);
    PB_CHECK_EQ_INT(pb_graph_bucket(5), 8);
    PB_CHECK_EQ_INT(pb_graph_bucket(249), 256);
    PB_CHECK_EQ_INT(pb_graph_bucket(257), 0);
    PB_CHECK_EQ_INT(pb_graph_bucket(0), 0);
    PB_CHECK(pb_graph_step_eligible(0, 256, 8192));
    PB_CHECK(!pb_graph_step_eligible(0, 257, 100));     /* too many sequences */
    PB_CHECK(!pb_graph_step_eligible(5, 3, 100));       /* a prefill step */
    PB_CHECK(!pb_graph_step_eligible(0, 3, 8193));      /* a context beyond the capture */
    PB_CHECK(!pb_graph_step_eligible(0, 0, 1));
}

static int g_destroyed;
static void fake_destroy(void *ctx, void *exec) {
    (void)ctx;
    g_destroyed++;
    free(exec);
}

PB_TEST(pool_captures_replays_and_invalidates) {
    pb_graph_pool p;
    g_destroyed = 0;
    pb_graph_pool_init(&p, fake_destroy, NULL);
    PB_CHECK(pb_graph_pool_get(&p, 8, 1) == NULL);           /* nothing captured */
    pb_graph_pool_put(&p, 8, 1, malloc(1));
    pb_graph_pool_put(&p, 1, 1, malloc(1));
    PB_CHECK(pb_graph_pool_get(&p, 8, 1) != NULL);
    PB_CHECK(pb_graph_pool_get(&p, 1, 1) != NULL);
    PB_CHECK(pb_graph_pool_get(&p, 16, 1) == NULL);
    PB_CHECK(pb_graph_pool_get(&p, 7, 1) == NULL);           /* not a bucket */
    PB_CHECK_EQ_INT(p.replays, 2);
    PB_CHECK_EQ_INT(pb_graph_pool_count(&p), 2);
    pb_graph_pool_put(&p, 8, 1, malloc(1));                  /* recapture replaces */
    PB_CHECK_EQ_INT(g_destroyed, 1);
    /* a buffer was reallocated: generation 2 drops every graph */
    PB_CHECK(pb_graph_pool_get(&p, 1, 2) == NULL);
    PB_CHECK_EQ_INT(g_destroyed, 3);
    PB_CHECK_EQ_INT(p.invalidations, 1);
    PB_CHECK_EQ_INT(pb_graph_pool_count(&p), 0);
    pb_graph_pool_put(&p, 256, 2, malloc(1));
    PB_CHECK_EQ_INT(p.captures, 4);
    PB_CHECK(pb_graph_pool_check(&p) == PB_OK);
    pb_graph_pool_clear(&p);
    PB_CHECK_EQ_INT(g_destroyed, 4);
    p.replays = -1;
    PB_CHECK(pb_graph_pool_check(&p) == PB_ERR_INVALID);
}

/* a decode step of n sequences of different lengths, block size 4 */
static void decode_meta(pb_fwd_meta *fm, int n, pb_model *m, int32_t *tok, int32_t *bt) {
    memset(m, 0, sizeof *m);
    m->n_layers = 1; m->hidden = 64; m->n_heads = 4; m->n_kv_heads = 4; m->head_size = 16;
    m->ffn = 64; m->vocab = 100; m->max_len = 64; m->dtype_bytes = 2;
    pb_kv_cache_shape sh = {64, 4, 16, 4, PB_KV_F16, PB_KV_CACHE_AUTO, 0.0f};
    pb_batch_seq q[8];
    memset(q, 0, sizeof q);
    for (int i = 0; i < n; i++) {
        int len = 3 + 5 * i;                     /* 3, 8, 13: 1 .. 4 blocks */
        q[i].seq_id = i; q[i].n_new = 1; q[i].n_cached = len - 1; q[i].context_len = len;
        q[i].sample = i != 1;                    /* a non-sampled row in the middle */
        q[i].block_table = bt + 8 * i; q[i].n_blocks = 8; q[i].tokens = tok;
        for (int k = 0; k < 8; k++) bt[8 * i + k] = 8 * i + k;
    }
    pb_batch b;
    memset(&b, 0, sizeof b);
    b.n_seqs = n; b.seqs = q; b.block_size = 4; b.n_top = 1;
    PB_REQUIRE(pb_fwd_meta_build(fm, &b, m, &sh, 7) == PB_OK);
}

PB_TEST(pad_meta_to_bucket) {
    int32_t tok[64], bt[64];
    for (int i = 0; i < 64; i++) tok[i] = i % 100;
    pb_model m;
    pb_fwd_meta src, dst;
    memset(&src, 0, sizeof src);
    memset(&dst, 0, sizeof dst);
    decode_meta(&src, 3, &m, tok, bt);
    PB_REQUIRE(src.max_blocks == 4 && src.n_sample == 2);
    PB_REQUIRE(pb_graph_pad_meta(&src, 4, 16, 4, &dst) == PB_OK);
    PB_CHECK_EQ_INT(dst.T, 4);
    PB_CHECK_EQ_INT(dst.max_blocks, 16);
    PB_CHECK_EQ_INT(dst.attn_max_ctx, 64);
    PB_CHECK_EQ_INT(dst.n_sample, 2);
    int bad = 0;
    for (int r = 0; r < 3; r++) {
        bad += dst.tokens[r] != src.tokens[r] || dst.slots[r] != src.slots[r] || dst.ctx_lens[r] != src.ctx_lens[r];
        for (int k = 0; k < 16; k++)
            bad += dst.block_tables[r * 16 + k] != (k < 4 ? src.block_tables[r * 4 + k] : 0);
    }
    bad += dst.tokens[3] != 0 || dst.positions[3] != 0 || dst.slots[3] != -1 || dst.ctx_lens[3] != 1;
    for (int k = 0; k < 16; k++) bad += dst.block_tables[3 * 16 + k] != 0;
    for (int i = 0; i < 2; i++) bad += dst.sample_rows[i] != src.sample_rows[i] || dst.keys[i] != src.keys[i];
    PB_CHECK_EQ_INT(bad, 0);
    /* the same dst reused for a bigger bucket, and an empty step (capture's dummy) */
    PB_REQUIRE(pb_graph_pad_meta(&src, 8, 16, 4, &dst) == PB_OK);
    PB_CHECK(dst.T == 8 && dst.slots[7] == -1 && dst.ctx_lens[5] == 1 && dst.tokens[1] == src.tokens[1]);
    pb_fwd_meta empty;
    memset(&empty, 0, sizeof empty);
    decode_meta(&empty, 0, &m, tok, bt);
    PB_REQUIRE(pb_graph_pad_meta(&empty, 16, 16, 4, &dst) == PB_OK);
    PB_CHECK(dst.T == 16 && dst.n_sample == 0 && dst.slots[0] == -1);
    /* refused: a bucket too small, not a bucket, a table too narrow */
    PB_CHECK(pb_graph_pad_meta(&src, 2, 16, 4, &dst) == PB_ERR_INVALID);
    PB_CHECK(pb_graph_pad_meta(&src, 3, 16, 4, &dst) == PB_ERR_INVALID);
    PB_CHECK(pb_graph_pad_meta(&src, 4, 2, 4, &dst) == PB_ERR_INVALID);
    pb_fwd_meta_free(&src);
    pb_fwd_meta_free(&dst);
    pb_fwd_meta_free(&empty);
}

PB_TEST_MAIN()
