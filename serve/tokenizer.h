/* tokenizer.h -- GPT-2's byte-level BPE (OPT's vocabulary), for the server's text.
 *
 * pb_tok_load reads encoder.json (token string -> id) and vocab.bpe (the merges, by
 * rank) from a folder: ../shared/data/tokenizers/gpt2 beside a checkout, or any
 * folder of those two files.  Encoding: GPT-2's pre-tokenization (contractions,
 * letter runs, digit runs, runs of other characters, each with an optional leading
 * space; runs of white space), bytes mapped to GPT-2's printable code points, then
 * the merges lowest rank first -- the ids of OpenAI's encoder and of HF tokenizers'
 * ByteLevel BPE for ASCII text (tests/test_tokenizer.c); bytes >= 0x80 count as
 * letters, so text with non-ASCII punctuation may be split differently.  A piece
 * the files do not hold (a partial vocabulary) is encoded byte by byte, each byte's
 * id or, absent, the id 0.  Decoding: each id's bytes; an id the vocabulary does not
 * hold decodes as " <id>" (e.g. ids a model draws past the tokenizer's 50,257). */
#ifndef PB_TOKENIZER_H
#define PB_TOKENIZER_H

#include <stdint.h>

#include "pb.h"

typedef struct pb_tok pb_tok;

/* The tokenizer of folder dir; NULL (err says why) when a file is missing or bad. */
pb_tok *pb_tok_load(const char *dir, char *err, size_t err_n);
void pb_tok_free(pb_tok *t);
int32_t pb_tok_vocab(const pb_tok *t);   /* ids 0 .. vocab - 1 */

/* The ids of text[0 .. n) appended to *ids (grown with pb_xrealloc; *n_ids, *cap). */
void pb_tok_encode(const pb_tok *t, const char *text, size_t n, int32_t **ids, int32_t *n_ids, int32_t *cap);
/* The text of ids appended to b. */
void pb_tok_decode(const pb_tok *t, const int32_t *ids, int32_t n, pb_sbuf *b);

#endif /* PB_TOKENIZER_H */
