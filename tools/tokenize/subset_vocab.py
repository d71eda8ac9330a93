#!/usr/bin/env python3
"""subset_vocab.py -- the part of GPT-2's BPE files that a set of texts uses.

    python3 tools/tokenize/subset_vocab.py --vocab-dir ../shared/data/tokenizers/gpt2 \
        --out tests/data/gpt2_subset tests/data/sharegpt_sample.json

Reads every string "value" of the JSON files given (ShareGPT conversations), runs GPT-2's
byte-level BPE on them with the full merge list and keeps: the 256 byte symbols, every
merge that BPE applied (in the full list's order, so the ranks keep their order) and the
tokens those merges made, with their GPT-2 ids.  BPE on these texts with the subset
applies the same merges in the same order (a merge it applied is the lowest-ranked pair
present in the full list, hence in the subset too), so the token counts are identical;
the script checks that with the `tokenizers` package before writing.  Output:
<out>/encoder.json and <out>/vocab.bpe, the format of OpenAI's GPT-2 release.
"""
import argparse
import json
import os
import sys


def texts_of(path):
    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "value" and isinstance(v, str):
                    yield v
                else:
                    yield from walk(v)
        elif isinstance(x, list):
            for v in x:
                yield from walk(v)
    with open(path, encoding="utf-8") as f:
        return list(walk(json.load(f)))


def bpe_merges_used(word, ranks):
    """GPT-2's bpe() on one pre-tokenized word; returns the merges it applied."""
    sym = list(word)
    used = []
    while len(sym) > 1:
        best = None
        for i in range(len(sym) - 1):
            r = ranks.get((sym[i], sym[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, sym[i], sym[i + 1])
        if best is None:
            break
        _, a, b = best
        used.append((a, b))
        out, i = [], 0
        while i < len(sym):
            if i + 1 < len(sym) and sym[i] == a and sym[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(sym[i])
                i += 1
        sym = out
    return used


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    from tokenizers import ByteLevelBPETokenizer
    from tokenizers.pre_tokenizers import ByteLevel
    with open(os.path.join(a.vocab_dir, "encoder.json"), encoding="utf-8") as f:
        enc = json.load(f)
    with open(os.path.join(a.vocab_dir, "vocab.bpe"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    header, merges = lines[0], [tuple(l.split(" ")) for l in lines[1:] if l]
    ranks = {m: i for i, m in enumerate(merges)}
    texts = [t for p in a.files for t in texts_of(p)]
    pre = ByteLevel(add_prefix_space=False)
    used = set()
    for t in texts:
        for word, _ in pre.pre_tokenize_str(t):
            used.update(bpe_merges_used(word, ranks))
    keep = [m for m in merges if m in used]
    byte_syms = [s for s, i in sorted(enc.items(), key=lambda kv: kv[1]) if i < 256]
    vocab = {s: enc[s] for s in byte_syms}
    for x, y in keep:
        vocab[x + y] = enc[x + y]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "encoder.json"), "w", encoding="utf-8") as f:
        json.dump(dict(sorted(vocab.items(), key=lambda kv: kv[1])), f, ensure_ascii=False, indent=0)
        f.write("\n")
    with open(os.path.join(a.out, "vocab.bpe"), "w", encoding="utf-8") as f:
        f.write(header + "\n" + "".join("%s %s\n" % m for m in keep))
    full = ByteLevelBPETokenizer(os.path.join(a.vocab_dir, "encoder.json"), os.path.join(a.vocab_dir, "vocab.bpe"))
    sub = ByteLevelBPETokenizer(os.path.join(a.out, "encoder.json"), os.path.join(a.out, "vocab.bpe"))
    for t in texts:
        if full.encode(t).ids != sub.encode(t).ids:
            print("subset_vocab.py: the subset tokenizes %r differently" % t[:60], file=sys.stderr)
            return 1
    print("subset_vocab.py: %d texts, %d merges of %d, %d tokens; identical token ids"
          % (len(texts), len(keep), len(merges), len(vocab)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
