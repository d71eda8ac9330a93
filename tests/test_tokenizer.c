/* test_tokenizer.c -- serve/tokenizer.c's GPT-2 BPE against the ids HF tokenizers
 * 0.23.3 (ByteLevel BPE, add_prefix_space false) gives for the same files: the
 * subset in tests/data/gpt2_subset on the lines of tests/data/sharegpt_sample.json
 * (non-ASCII letters, digits, punctuation, newlines included), and the full GPT-2
 * files beside the checkout (../shared/data/tokenizers/gpt2) when present, with
 * contractions and runs of white space; decoding gives the text back; ids past the
 * vocabulary decode as " <id>". */
#include <stdlib.h>
#include <string.h>

#include "pbtest.h"
#include "tokenizer.h"

typedef struct {
    const char *text;
    int32_t n;
    int32_t ids[32];
} case_t;

static void check_cases(const pb_tok *t, const case_t *cs, int n_cases) {
    for (int c = 0; c < n_cases; c++) {
        int32_t *ids = NULL, n = 0, cap = 0;
        pb_tok_encode(t, cs[c].text, strlen(cs[c].text), &ids, &n, &cap);
        bool same = n == cs[c].n && !memcmp(ids, cs[c].ids, (size_t)n * sizeof *ids);
        if (!same) {
            fprintf(stderr, "  %s: %d ids:", cs[c].text, n);
            for (int32_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
            fprintf(stderr, "\n");
        }
        PB_CHECK(same);
        pb_sbuf b = {0};
        pb_tok_decode(t, ids, n, &b);
        PB_CHECK(b.s && !strcmp(b.s, cs[c].text));
        free(b.s);
        free(ids);
    }
}

PB_TEST(subset_matches_hf_tokenizers) {
    char err[512];
    pb_tok *t = pb_tok_load(PB_SOURCE_DIR "/tests/data/gpt2_subset", err, sizeof err);
    PB_REQUIRE(t);
    static const case_t cs[] = {
        {"Hello world", 2, {15496, 995}},
        {"Hello! How can I help you today?", 9, {15496, 0, 1374, 460, 314, 1037, 345, 1909, 30}},
        {"Blocks of keys and values,\nscattered yet found by the table;\nno byte left to waste.", 22,
         {45356, 286, 8251, 290, 3815, 11, 198, 1416, 10228, 1865, 1043, 416, 262, 3084, 26, 198, 3919, 18022, 1364,
          284, 7030, 13}},
        {"101, 103, 107", 5, {8784, 11, 15349, 11, 16226}},
        {"Translate to German: \"The cat sleeps on the warm windowsill.\"", 15,
         {8291, 17660, 284, 2679, 25, 366, 464, 3797, 44263, 319, 262, 5814, 9168, 359, 526}},
        {"Die Katze schl\xc3\xa4" "ft auf der warmen Fensterbank.", 16,
         {32423, 8595, 2736, 5513, 75, 11033, 701, 257, 3046, 4587, 1175, 3653, 19426, 1706, 17796, 13}},
        {"List three prime numbers greater than 100, separated by commas.", 13,
         {8053, 1115, 6994, 3146, 3744, 621, 1802, 11, 11266, 416, 725, 292, 13}},
    };
    check_cases(t, cs, (int)(sizeof cs / sizeof cs[0]));
    pb_sbuf b = {0};
    int32_t past[2] = {15496, 60000};
    pb_tok_decode(t, past, 2, &b);
    PB_CHECK(b.s && !strcmp(b.s, "Hello <60000>"));
    free(b.s);
    pb_tok_free(t);
    PB_CHECK(pb_tok_load("/nonexistent", err, sizeof err) == NULL && strstr(err, "encoder.json"));
}

PB_TEST(full_gpt2_files) {
    char err[512];
    pb_tok *t = pb_tok_load(PB_SOURCE_DIR "/../shared/data/tokenizers/gpt2", err, sizeof err);
    if (!t) {
        fprintf(stderr, "  (no full GPT-2 files beside the checkout: %s)\n", err);
        return;
    }
    static const case_t cs[] = {
        {"Hello world", 2, {15496, 995}},
        {"It's a test, isn't it?  Numbers 12345 and\n\nnew lines.", 19,
         {1026, 338, 257, 1332, 11, 2125, 470, 340, 30, 220, 27797, 17031, 2231, 290, 198, 198, 3605, 3951, 13}},
        {"San Francisco is a", 4, {15017, 6033, 318, 257}},
    };
    check_cases(t, cs, (int)(sizeof cs / sizeof cs[0]));
    PB_CHECK(pb_tok_vocab(t) == 50257);
    pb_tok_free(t);
}

PB_TEST_MAIN()
