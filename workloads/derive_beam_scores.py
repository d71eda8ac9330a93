#!/usr/bin/env python3
"""derive_beam_scores.py -- measured next-token distributions for the beam-search score
model: a real causal language model run on this CPU, its top-k log-probabilities
recorded at the states its own beam search visits, written as workloads/beam_tables.c
(the table `wmt14-kn3`: workload.beam_scores).

The model: an interpolated Kneser-Ney n-gram language model (order 3, discount 0.75,
the modified-backoff form of Chen & Goodman 1998, section 3) over GPT-2 byte-level BPE
tokens (OPT's vocabulary and merges: ../shared/data/tokenizers/gpt2), trained on the
English side of WMT14 newstest en-de (../shared/data/wmt/newstest2014_en_de_detok.tsv,
FasterTransformer@df4a753; sentences with an even id), each sentence ended by </s>.
Its distribution is exact over the whole vocabulary: the top k of a context are found
among the words seen after it, after its last word, and the k most likely unigrams.

The states: beam search (width --width, 2 * width candidates a beam, the vLLM rule of
engine/beam.h, </s> not allowed to end a beam: the paper's runs force the output length)
from the first --prompt tokens of each held-out sentence (odd ids), --steps steps; at each
step every live beam's top --top log-probabilities are one row.  --rows rows are kept
(evenly spaced over the rows in visiting order), sorted by their top-1 log-probability.

Usage: python3 workloads/derive_beam_scores.py > workloads/beam_tables.c
       python3 workloads/derive_beam_scores.py --stats     (the table's statistics only)
Deterministic: the same files give the same table.  Needs the `tokenizers` package.
"""
import argparse
import collections
import csv
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data"))
EOS = "</s>"


def fail(msg):
    print("derive_beam_scores: " + msg, file=sys.stderr)
    sys.exit(2)


def sentences(path, tok):
    try:
        with open(path, encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    except OSError as e:
        fail("%s: %s" % (path, e))
    texts = [r["en"] for r in rows]
    ids = [int(r["id"]) for r in rows]
    enc = tok.encode_batch(texts)
    return [(i, [str(t) for t in e.ids] + [EOS]) for i, e in zip(ids, enc)]


class KneserNey:
    """Interpolated Kneser-Ney, order 3, one discount D for every order."""

    def __init__(self, sents, D=0.75):
        self.D = D
        c3 = collections.Counter()
        for s in sents:
            w = ["<s>", "<s>"] + s
            for i in range(2, len(w)):
                c3[(w[i - 2], w[i - 1], w[i])] += 1
        # the highest order counts; lower orders count distinct left contexts (continuations)
        self.c3 = collections.defaultdict(dict)
        n2 = collections.Counter()
        for (a, b, c), n in c3.items():
            self.c3[(a, b)][c] = n
            n2[(b, c)] += 1
        self.c2 = collections.defaultdict(dict)
        n1 = collections.Counter()
        for (b, c), n in n2.items():
            self.c2[b][c] = n
            n1[c] += 1
        total1 = sum(n1.values())
        self.p1 = {w: n / total1 for w, n in n1.items()}
        self.top1 = sorted(self.p1, key=lambda w: (-self.p1[w], w))
        self.tot3 = {h: sum(d.values()) for h, d in self.c3.items()}
        self.tot2 = {h: sum(d.values()) for h, d in self.c2.items()}

    def _p2(self, b):
        """The bigram level's distribution for history b: (seen words' probabilities,
        weight of the unigram level)."""
        d = self.c2.get(b)
        if not d:
            return {}, 1.0
        t = self.tot2[b]
        lam = self.D * len(d) / t
        return {w: (n - self.D) / t for w, n in d.items()}, lam

    def top(self, a, b, k):
        """The k most likely next tokens after (a, b) and their log-probabilities."""
        s2, lam2 = self._p2(b)
        d3 = self.c3.get((a, b))
        if d3:
            t = self.tot3[(a, b)]
            lam3 = self.D * len(d3) / t
        else:
            d3, t, lam3 = {}, 1, 1.0
        cand = set(d3) | set(s2) | set(self.top1[:k])

        def p(w):
            p2 = s2.get(w, 0.0) + lam2 * self.p1.get(w, 0.0)
            return (max(d3.get(w, 0) - self.D, 0) / t if d3 else 0.0) + lam3 * p2

        scored = sorted(((p(w), w) for w in cand), key=lambda x: (-x[0], x[1]))
        return [(w, math.log(q)) for q, w in scored[:k]]


def beam_rows(lm, prompts, width, steps, ntop):
    """Beam search from each prompt; every live beam's top ntop log-probabilities each step."""
    rows = []
    for pr in prompts:
        beams = [(0.0, ["<s>", "<s>"] + pr)]
        for _ in range(steps):
            cands = []
            for cum, h in beams:
                t = lm.top(h[-2], h[-1], ntop + 1)
                t = [x for x in t if x[0] != EOS][:ntop]   # the output length is forced
                rows.append([lp for _, lp in t])
                cands += [(cum + lp, h, w) for w, lp in t[:2 * width]]
            cands.sort(key=lambda c: -c[0])
            beams = [(c, h + [w]) for c, h, w in cands[:width]]
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(SHARED, "wmt", "newstest2014_en_de_detok.tsv"))
    ap.add_argument("--vocab-dir", default=os.path.join(SHARED, "tokenizers", "gpt2"))
    ap.add_argument("--width", type=int, default=6)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--prompt", type=int, default=4)
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--prompts", type=int, default=200)
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--stats", action="store_true")
    a = ap.parse_args()
    try:
        from tokenizers import ByteLevelBPETokenizer
    except ImportError:
        fail("the Python package `tokenizers` is not installed (pip install tokenizers)")
    tok = ByteLevelBPETokenizer(os.path.join(a.vocab_dir, "encoder.json"), os.path.join(a.vocab_dir, "vocab.bpe"))
    sents = sentences(a.data, tok)
    train = [s for i, s in sents if i % 2 == 0]
    held = [s for i, s in sents if i % 2 == 1 and len(s) > a.prompt + 1]
    lm = KneserNey(train)
    step = max(1, len(held) // a.prompts)
    prompts = [s[: a.prompt] for s in held[::step][: a.prompts]]
    rows = beam_rows(lm, prompts, a.width, a.steps, a.top)
    keep = [rows[(i * len(rows)) // a.rows] for i in range(a.rows)]
    keep.sort(key=lambda r: (-r[0], [-x for x in r]))
    top1 = sorted(math.exp(r[0]) for r in keep)
    gap = sorted(r[0] - r[1] for r in keep)
    med = lambda v: v[len(v) // 2]
    stats = ("%d rows of %d (%d prompts x %d steps x up to %d beams); top-1 probability median %.3f "
             "(p10 %.3f, p90 %.3f); top-1 minus top-2 log-probability median %.3f nats (p10 %.3f, p90 %.3f); "
             "mean top-1 log-probability %.3f" %
             (len(keep), len(rows), len(prompts), a.steps, a.width, med(top1), top1[len(top1) // 10],
              top1[9 * len(top1) // 10], med(gap), gap[len(gap) // 10], gap[9 * len(gap) // 10],
              sum(r[0] for r in keep) / len(keep)))
    if a.stats:
        print(stats)
        return
    src = "wmt/newstest2014_en_de_detok.tsv (English side, even ids), GPT-2 BPE"
    out = sys.stdout
    out.write("/* beam_tables.c -- GENERATED by workloads/derive_beam_scores.py; do not edit.\n *\n")
    out.write(" * wmt14-kn3: an interpolated Kneser-Ney trigram model over GPT-2 BPE tokens, trained on\n")
    out.write(" * ../shared/data/" + src + ";\n")
    out.write(" * the top %d log-probabilities of every live beam at every step of its width-%d beam\n" % (a.top, a.width))
    out.write(" * search from the first %d tokens of %d held-out sentences (odd ids), %d steps.\n *\n" %
              (a.prompt, len(prompts), a.steps))
    out.write(" * " + stats.replace("; ", ";\n * ") + ".\n */\n")
    out.write('#include "beam_tables.h"\n\n#include <string.h>\n\n')
    out.write("static const float WMT14_KN3[%d][%d] = {\n" % (len(keep), a.top))
    for r in keep:
        out.write("    {" + ", ".join("%.4ff" % x for x in r) + "},\n")
    out.write("};\n\n")
    out.write("const pb_beam_table_entry pb_beam_tables[] = {\n")
    out.write('    {"wmt14-kn3", "%s", {%d, %d, &WMT14_KN3[0][0]}},\n};\n' % (src, len(keep), a.top))
    out.write("const int pb_n_beam_tables = (int)(sizeof pb_beam_tables / sizeof pb_beam_tables[0]);\n\n")
    out.write("const pb_beam_table *pb_beam_table_by_name(const char *name) {\n")
    out.write("    for (int i = 0; i < pb_n_beam_tables; i++)\n")
    out.write("        if (!strcmp(pb_beam_tables[i].name, name)) return &pb_beam_tables[i].t;\n")
    out.write("    return NULL;\n}\n")


if __name__ == "__main__":
    main()
