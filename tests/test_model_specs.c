/* test_model_specs.c -- the model specs of experiments/models/: every file loads, the
 * models the GPU profiles cover (and the Llama 3 / 3.1 family) carry their published
 * config.json shapes, each parameter count is the one its shapes give, and grouped-query
 * attention reaches the KV capacity the way Table 1 counts it.
 *   build/cpu/test_model_specs */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pbtest.h"
#include "spec.h"

PB_TEST(every_spec_file_loads) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/models", pb_spec_dir());
    DIR *d = opendir(dir);
    PB_REQUIRE(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml")) continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
        pb_model m;
        pb_cfg_err err;
        pb_cfg_err_clear(&err);
        pb_status st = pb_model_load(pb_spec_dir(), name, &m, &err);
        if (st) fprintf(stderr, "  %s: %s\n", name, err.msg);
        PB_CHECK(st == PB_OK);
        n++;
    }
    closedir(d);
    PB_CHECK(n >= 18);
}

/* The published config.json values (the spec's sources name the file). */
static const struct {
    const char *name;
    int layers, hidden, heads, kv, head, ffn, vocab, max_len;
    pb_arch arch;
    int untied;     /* the LM head is its own matrix (tie_word_embeddings false) */
} WANT[] = {
    {"llama-2-7b", 32, 4096, 32, 32, 128, 11008, 32000, 4096, PB_ARCH_LLAMA, 1},
    {"llama-2-70b", 80, 8192, 64, 8, 128, 28672, 32000, 4096, PB_ARCH_LLAMA, 1},
    {"codellama-34b", 48, 8192, 64, 8, 128, 22016, 32000, 16384, PB_ARCH_LLAMA, 1},
    {"internlm-20b", 60, 5120, 40, 40, 128, 13824, 103168, 4096, PB_ARCH_LLAMA, 1},
    {"qwen-72b", 80, 8192, 64, 64, 128, 24576, 152064, 32768, PB_ARCH_LLAMA, 1},
    {"phi-2", 32, 2560, 32, 32, 80, 10240, 51200, 2048, PB_ARCH_OPT, 1},
    {"llama-3-8b", 32, 4096, 32, 8, 128, 14336, 128256, 8192, PB_ARCH_LLAMA, 1},
    {"llama-3-70b", 80, 8192, 64, 8, 128, 28672, 128256, 8192, PB_ARCH_LLAMA, 1},
    {"llama-3.1-8b", 32, 4096, 32, 8, 128, 14336, 128256, 131072, PB_ARCH_LLAMA, 1},
    {"llama-3.1-70b", 80, 8192, 64, 8, 128, 28672, 128256, 131072, PB_ARCH_LLAMA, 1},
};

PB_TEST(profiled_models_have_their_config_shapes) {
    for (size_t i = 0; i < sizeof WANT / sizeof WANT[0]; i++) {
        pb_model m;
        pb_cfg_err e;
        pb_cfg_err_clear(&e);
        PB_REQUIRE(pb_model_load(pb_spec_dir(), WANT[i].name, &m, &e) == PB_OK);
        PB_CHECK_EQ_INT(m.n_layers, WANT[i].layers);
        PB_CHECK_EQ_INT(m.hidden, WANT[i].hidden);
        PB_CHECK_EQ_INT(m.n_heads, WANT[i].heads);
        PB_CHECK_EQ_INT(m.n_kv_heads, WANT[i].kv);
        PB_CHECK_EQ_INT(m.head_size, WANT[i].head);
        PB_CHECK_EQ_INT(m.n_heads * m.head_size, m.hidden);
        PB_CHECK_EQ_INT(m.ffn, WANT[i].ffn);
        PB_CHECK_EQ_INT(m.vocab, WANT[i].vocab);
        PB_CHECK_EQ_INT(m.max_len, WANT[i].max_len);
        PB_CHECK_EQ_INT(m.arch, WANT[i].arch);
        PB_CHECK_EQ_INT(m.dtype_bytes, 2);
        /* the parameter count is the one the shapes give (within 0.5%): attention
           q, o (h x h) and k, v (h x kv dims), the MLP's 3 (gated) or 2 matrices, the
           embedding and an untied LM head */
        double h = m.hidden, kvd = (double)m.n_kv_heads * m.head_size;
        double layer = 2 * h * h + 2 * h * kvd + (m.arch == PB_ARCH_LLAMA ? 3 : 2) * h * m.ffn;
        double count = m.n_layers * layer + (1.0 + WANT[i].untied) * m.vocab * h;
        if (fabs(count / m.n_params - 1) >= 0.005) fprintf(stderr, "  %s: %.4g vs %.4g\n", WANT[i].name, count, m.n_params);
        PB_CHECK(fabs(count / m.n_params - 1) < 0.005);
    }
}

/* Table 1's columns for a GQA model, worked by hand: Llama-3-8B on one H100-SXM (80 GB,
 * 85,520,809,984 bytes) at gpu_mem_util 0.9, block 16, the harness rule's 2560 tokens:
 *   KV a token   2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B (128 KiB; OPT-13B's 800 KiB)
 *   usable       floor(0.9 x 85,520,809,984)                        = 76,968,728,985
 *   params       8.030e9 x 2 B                                      = 16,060,000,000
 *   activations  max(2 x (max(3 T h, T ffn) + T h), 2 T vocab) x 2 B, T = 2560:
 *                2 x 2560 x 128,256 x 2                             =  1,313,341,440
 *   workspace    1 GiB                                              =  1,073,741,824
 *   KV           76,968,728,985 - the three                        = 58,521,645,721
 *   blocks       floor(58,521,645,721 / (131,072 x 16))             = 27,905 -> 446,480 slots
 * The same model with 32 KV heads (multi-head) stores 4x the bytes a token: a quarter of
 * the slots, to a block. */
PB_TEST(gqa_kv_slots_table1_style) {
    pb_model m;
    pb_hw hw;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    PB_REQUIRE(pb_model_load(pb_spec_dir(), "llama-3-8b", &m, &e) == PB_OK);
    PB_REQUIRE(pb_hw_load(pb_spec_dir(), "h100-sxm", &hw, &e) == PB_OK);
    PB_CHECK_NEAR(pb_kv_bytes_per_token(&m, 1), 131072, 0);
    pb_kv_capacity c;
    PB_REQUIRE(pb_kv_capacity_compute(&m, &hw, 1, 16, PB_KV_PROFILE_TOKENS, 0.9, &c) == PB_OK);
    PB_CHECK_NEAR(c.usable_bytes, 76968728985.0, 0.5);
    PB_CHECK_NEAR(c.act_bytes, 1313341440.0, 0.5);
    PB_CHECK_NEAR(c.kv_bytes_per_gpu, 58521645721.0, 1.0);
    PB_CHECK_EQ_INT(c.num_blocks, 27905);
    PB_CHECK_EQ_INT(c.num_slots, 446480);
    pb_model mha = m;
    mha.n_kv_heads = mha.n_heads;
    pb_kv_capacity c4;
    PB_REQUIRE(pb_kv_capacity_compute(&mha, &hw, 1, 16, PB_KV_PROFILE_TOKENS, 0.9, &c4) == PB_OK);
    PB_CHECK_NEAR(pb_kv_bytes_per_token(&mha, 1), 4 * 131072.0, 0);
    PB_CHECK(c4.num_blocks == c.num_blocks / 4 || c4.num_blocks == c.num_blocks / 4 + 1);
    /* tensor parallelism splits the 8 KV heads: tp 8 keeps one a GPU, tp 16 cannot */
    PB_CHECK_NEAR(pb_kv_bytes_per_token(&m, 8), 131072 / 8.0, 0);
    PB_CHECK(pb_kv_capacity_compute(&m, &hw, 16, 16, PB_KV_PROFILE_TOKENS, 0.9, &c) == PB_ERR_INVALID);
}

PB_TEST_MAIN()
