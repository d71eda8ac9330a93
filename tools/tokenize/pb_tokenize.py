#!/usr/bin/env python3
"""pb_tokenize.py -- token lengths of a text dataset, for `pagedbench trace --from`.

Reads a dataset of texts, tokenizes prompt and completion with GPT-2's byte-level BPE
(the `tokenizers` PyPI package; OPT uses GPT-2's vocabulary and merges), and writes CSV
to stdout:

    id,prompt_len,output_len[,arrival_s]

Formats:
  sharegpt-json  ShareGPT: a JSON array of {"id", "conversations": [{"from", "value"}, ...]};
                 as vLLM's benchmarks (sample_requests): conversations with at least two
                 turns; the first turn is the prompt, the second the completion.
  text-jsonl     one JSON object a line with "prompt" and "completion" (or "output"),
                 optional "arrival_s" / "timestamp" (seconds).

Lengths count OPT's beginning-of-sequence token (</s>, prepended by OPT's tokenizer to
every text, which vLLM's benchmarks counted in both lengths) unless --no-bos.

Tokenizer files: --vocab-dir DIR holding encoder.json and vocab.bpe (OpenAI's GPT-2
release); default $PAGEDBENCH_TOKENIZER_DIR, else ../shared/data/tokenizers/gpt2
beside the checkout.  Exit status: 0 ok, 2 bad input or missing files, 3 the
`tokenizers` package is not installed (pip install tokenizers).
"""
import argparse
import csv
import json
import os
import sys


def fail(msg, code=2):
    print("pb_tokenize: " + msg, file=sys.stderr)
    sys.exit(code)


def default_vocab_dir():
    env = os.environ.get("PAGEDBENCH_TOKENIZER_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "..", "shared", "data", "tokenizers", "gpt2"))


def load_tokenizer(vocab_dir):
    try:
        from tokenizers import ByteLevelBPETokenizer
    except ImportError:
        fail("the Python package `tokenizers` is not installed (pip install tokenizers)", 3)
    enc = os.path.join(vocab_dir, "encoder.json")
    merges = os.path.join(vocab_dir, "vocab.bpe")
    for p in (enc, merges):
        if not os.path.isfile(p):
            fail("%s: missing (GPT-2 BPE files; --vocab-dir or PAGEDBENCH_TOKENIZER_DIR)" % p)
    return ByteLevelBPETokenizer(enc, merges)


def sharegpt_pairs(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: %s" % (path, e))
    if not isinstance(data, list):
        fail("%s: expected a JSON array of conversations" % path)
    for i, d in enumerate(data):
        conv = d.get("conversations") if isinstance(d, dict) else None
        if not isinstance(conv, list):
            fail("%s: item %d: no `conversations` list" % (path, i))
        if len(conv) < 2:
            continue
        try:
            yield str(d.get("id", i)), conv[0]["value"], conv[1]["value"], None
        except (KeyError, TypeError):
            fail("%s: item %d: a turn without `value`" % (path, i))


def jsonl_pairs(path):
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        fail("%s: %s" % (path, e))
    with f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                out = d["completion"] if "completion" in d else d["output"]
                yield str(d.get("id", line_no - 1)), d["prompt"], out, d.get("arrival_s", d.get("timestamp"))
            except (ValueError, KeyError, TypeError) as e:
                fail("%s:%d: %s" % (path, line_no, e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--format", required=True, choices=["sharegpt-json", "text-jsonl"])
    ap.add_argument("--vocab-dir", default=default_vocab_dir())
    ap.add_argument("--no-bos", action="store_true", help="do not count OPT's </s> token")
    a = ap.parse_args()
    tok = load_tokenizer(a.vocab_dir)
    bos = 0 if a.no_bos else 1
    pairs = list(sharegpt_pairs(a.file) if a.format == "sharegpt-json" else jsonl_pairs(a.file))
    has_ts = any(p[3] is not None for p in pairs)
    if has_ts and any(p[3] is None for p in pairs):
        fail("%s: some records have a timestamp and some do not" % a.file)
    texts = [t for p in pairs for t in (p[1], p[2])]
    encs = tok.encode_batch(texts) if texts else []
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["id", "prompt_len", "output_len"] + (["arrival_s"] if has_ts else []))
    for i, p in enumerate(pairs):
        row = [p[0].replace(",", ";"), len(encs[2 * i].ids) + bos, len(encs[2 * i + 1].ids) + bos]
        if has_ts:
            row.append(repr(float(p[3])))
        w.writerow(row)


if __name__ == "__main__":
    main()
