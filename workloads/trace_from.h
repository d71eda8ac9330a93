/* trace_from.h -- a trace from a real dataset or log file (`pagedbench trace --from`).
 *
 * Formats (lengths in tokens; timestamps kept when the file has them):
 *   sharegpt-json  ShareGPT conversations (text): the first turn is the prompt, the
 *                  second the completion, as vLLM's benchmarks; conversations with
 *                  fewer than two turns are skipped.  The text is tokenized by
 *                  tools/tokenize/pb_tokenize.py (GPT-2 byte-level BPE, the `tokenizers`
 *                  PyPI package, OPT's </s> counted): python3 runs it.  No timestamps.
 *   vllm-json      vLLM benchmark_serving's saved result (--save-result): an object with
 *                  "input_lens" and "output_lens" arrays; or a JSON array of objects
 *                  with "prompt_len" (or "input_len") and "output_len", optional
 *                  "arrival_s" (or "timestamp", seconds).  Read with jansson.
 *   azure-csv      the Azure LLM inference trace: TIMESTAMP ("2023-11-16 18:15:46.68"),
 *                  ContextTokens, GeneratedTokens.
 *   csv            a header naming prompt_len (or input_len, ContextTokens), output_len
 *                  (or GeneratedTokens), and optionally arrival_s (or timestamp), seconds.
 * Column mapping (csv, and vllm-json's array of objects): input_column, output_column and
 * arrival_column name the prompt length, output length and arrival (seconds) columns or
 * keys instead of the defaults above, as the YAML's workload.input_column / output_column
 * do for a dataset file; a named column must exist.
 * Conversations (csv): a conversation_id column (or conversation_column), an integer per
 * row (-1 = none), and optionally turn (or turn_column; without one, a conversation's
 * rows are its turns in row order) are kept: a closed-loop run (workload.conversation,
 * client.h) sends a conversation's next turn after the previous one's answer.  Our own
 * trace CSVs read back with their conversations.
 * Then: records with a length < 1 or failing the filter are dropped; num > 0 keeps the
 * first num; arrivals: the file's timestamps shifted to start at 0 (with rate > 0
 * scaled so the mean rate is `rate`, arrivals.h replay), or, when the file has none,
 * Poisson arrivals at `rate` (required) in 10 ms quanta from seed (stream 1, as
 * workload.h).  Every request: n = beam_width = 1, no prefix; no conversation but the csv's.
 * Same file + options -> byte-identical trace. */
#ifndef PB_TRACE_FROM_H
#define PB_TRACE_FROM_H

#include <stdbool.h>
#include <stdint.h>

#include "dataset.h"
#include "trace.h"

#define PB_FROM_FORMATS "sharegpt-json|vllm-json|azure-csv|csv"

typedef struct {
    const char *format;       /* one of PB_FROM_FORMATS                                   */
    double rate;              /* req/s: Poisson rate without timestamps; rescale with      */
    int64_t num;              /* 0 = all                                                  */
    uint64_t seed;
    pb_length_filter filter;  /* pb_filter_by_name("none") keeps every record >= 1         */
    const char *tokenizer;    /* the tokenizer program (default: python3 <source>/tools/tokenize/pb_tokenize.py) */
    bool bos;                 /* count OPT's </s> (sharegpt-json; default true)           */
    const char *input_column, *output_column, *arrival_column;   /* NULL: the defaults     */
    const char *conversation_column, *turn_column;                /* csv; NULL: the defaults */
} pb_trace_from_opts;

/* Read path in o->format into *out (start from {0}).  Errors: PB_ERR_IO (unreadable,
 * or the tokenizer cannot run: exit 3 of pb_tokenize.py = `tokenizers` missing),
 * PB_ERR_INVALID (malformed: "path:line: message" / "path: message"); *out empty.
 * *dropped: records removed by the length checks and the filter. */
pb_status pb_trace_from_file(const char *path, const pb_trace_from_opts *o, pb_trace *out, int64_t *dropped,
                             char *err, size_t errlen);

#endif /* PB_TRACE_FROM_H */
