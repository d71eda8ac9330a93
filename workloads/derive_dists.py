#!/usr/bin/env python3
"""derive_dists.py -- build workloads/dist_tables.c from the real length traces.

Usage (from the repository root; python3 standard library only):
    python3 workloads/derive_dists.py [--data ../shared/data] [--out workloads/dist_tables.c]

A fresh checkout has no ../shared/data, so pagedbench ships DERIVED length distributions
(never the data files).  For each dataset this writes, as C tables:

  * the exact marginal histogram of the input lengths and of the output lengths
    (distinct value -> count);
  * the joint 2-D histogram of (input, output) over bins: one bin per length below 16,
    then log-spaced bins (each about 1.25x wider than the one before);
  * the row count and, as a check, the exact means of the source.

The generator in dataset.c picks a 2-D cell with probability proportional to its count
(times the fraction that passes the length filter) and then draws the input and the
output from their exact marginals restricted to the cell's bins.  Without a filter this
reproduces both marginals exactly; with the filters of the paper and of vLLM's benchmark
the means stay within 0.1% of the real ones for ShareGPT, Alpaca and WMT, and within 1% for
the Azure traces (the table is printed into the header of the output, and
tests/test_workloads.c checks it against the real files when ../shared/data is present).
The output is deterministic: running the script twice gives the same file.
"""
import argparse
import bisect
import collections
import csv
import hashlib
import math
import os
import sys

LIN = 16        # one bin per length below LIN
RATIO = 1.25    # then each bin edge is floor(previous * RATIO) (at least +1)

# name, path under data/, input column, output column, description
DATASETS = [
    ("sharegpt", "sharegpt/vllm_sosp23_sharegpt_opt_lengths.csv", "input_len", "output_len",
     "ShareGPT, OPT tokens, the vLLM SOSP'23 artifact's lengths (84,226 pairs)"),
    ("alpaca", "alpaca/alpaca_opt_lengths.csv", "input_len", "output_len",
     "Alpaca 52K, OPT tokens (instruction + ' ' + input, +1 BOS; output +1 BOS)"),
    ("wmt_1shot", "wmt/newstest2014_en_de_token_lengths.csv", "input_len_1shot_llama",
     "de_llama_tokens", "WMT14 en-de newstest2014, LLaMA tokens, input after the 80-token 1-shot prefix"),
    ("wmt_5shot", "wmt/newstest2014_en_de_token_lengths.csv", "input_len_5shot_llama",
     "de_llama_tokens", "WMT14 en-de newstest2014, LLaMA tokens, input after the 336-token (341 raw) 5-shot prefix"),
    ("azure_conv", "azure_llm_trace/AzureLLMInferenceTrace_conv.csv", "ContextTokens",
     "GeneratedTokens", "Azure LLM inference trace 2023-11, conversation (Splitwise), lengths only"),
    ("azure_code", "azure_llm_trace/AzureLLMInferenceTrace_code.csv", "ContextTokens",
     "GeneratedTokens", "Azure LLM inference trace 2023-11, code (Splitwise), lengths only"),
]

FILTERS = {
    "paper": lambda i, o: i + o < 2048,
    "fig11": lambda i, o: i + o <= 2048,
    "vllm": lambda i, o: i >= 4 and o >= 4 and i <= 1024 and i + o <= 2048,
    "none": lambda i, o: True,
}


def load(path, ci, co):
    with open(path, newline="") as f:
        rows = [(int(r[ci]), int(r[co])) for r in csv.DictReader(f)]
    return rows


def edges(maxv):
    e = list(range(0, LIN + 1))
    v = LIN
    while v <= maxv:
        nv = max(v + 1, int(math.floor(v * RATIO)))
        e.append(nv)
        v = nv
    return e  # bins [e[k], e[k+1]); e[-1] > maxv


def build(rows):
    ei = edges(max(r[0] for r in rows))
    eo = edges(max(r[1] for r in rows))
    bi = lambda v: bisect.bisect_right(ei, v) - 1
    bo = lambda v: bisect.bisect_right(eo, v) - 1
    cells = collections.Counter((bi(i), bo(o)) for i, o in rows)
    mi = collections.Counter(i for i, o in rows)
    mo = collections.Counter(o for i, o in rows)
    return ei, eo, sorted(cells.items()), sorted(mi.items()), sorted(mo.items())


def model_means(ei, eo, cells, mi, mo, f):
    """Means of the model distribution under filter f (what dataset.c samples)."""
    bi = lambda v: bisect.bisect_right(ei, v) - 1
    bo = lambda v: bisect.bisect_right(eo, v) - 1
    ci, co = collections.defaultdict(list), collections.defaultdict(list)
    for v, c in mi:
        ci[bi(v)].append((v, c))
    for v, c in mo:
        co[bo(v)].append((v, c))
    W = SI = SO = 0.0
    for (a, b), c in cells:
        ti = sum(x[1] for x in ci[a])
        to = sum(x[1] for x in co[b])
        for vi, ni in ci[a]:
            for vo, no in co[b]:
                if f(vi, vo):
                    w = c * ni / ti * no / to
                    W += w
                    SI += w * vi
                    SO += w * vo
    return SI / W, SO / W


def c_ints(vals, per=16):
    out = []
    for k in range(0, len(vals), per):
        out.append("    " + ",".join(str(v) for v in vals[k:k + per]) + ",")
    return "\n".join(out)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data"))
    ap.add_argument("--out", default=os.path.join(here, "dist_tables.c"))
    args = ap.parse_args()

    head = [
        "/* dist_tables.c -- GENERATED by workloads/derive_dists.py; do not edit.",
        " *",
        " * Derived length distributions of the real workload traces (no data files are",
        " * committed).  Per dataset: the exact marginal histograms of input and output",
        " * lengths (value, count), and the joint 2-D histogram over bins (one bin per length",
        " * below %d, then log-spaced with ratio %.2f).  Sources (../shared/data, see its README):" % (LIN, RATIO),
    ]
    body = []
    entries = []
    checks = []
    for name, rel, ci, co, desc in DATASETS:
        path = os.path.join(args.data, rel)
        raw = open(path, "rb").read()
        sha = hashlib.sha256(raw).hexdigest()
        rows = load(path, ci, co)
        ei, eo, cells, mi, mo = build(rows)
        head.append(" *   %-10s %s" % (name, desc))
        head.append(" *              %s columns %s,%s, %d rows, sha256 %s" % (rel, ci, co, len(rows), sha[:16]))
        ex_in = sum(r[0] for r in rows) / len(rows)
        ex_out = sum(r[1] for r in rows) / len(rows)
        for fn, f in FILTERS.items():
            kept = [r for r in rows if f(*r)]
            if not kept:
                continue
            a, b = model_means(ei, eo, cells, mi, mo, f)
            ea = sum(r[0] for r in kept) / len(kept)
            eb = sum(r[1] for r in kept) / len(kept)
            checks.append(" *   %-10s filter %-5s: exact %9.3f / %8.3f (%6d rows)  model %9.3f / %8.3f  (%+.3f%% / %+.3f%%)"
                          % (name, fn, ea, eb, len(kept), a, b, 100 * (a / ea - 1), 100 * (b / eb - 1)))
        cell_flat = []
        for (a, b), c in cells:
            cell_flat += [a, b, c]
        body.append("/* %s */" % name)
        body.append("static const int32_t %s_in_edges[] = {\n%s\n};" % (name, c_ints(ei)))
        body.append("static const int32_t %s_out_edges[] = {\n%s\n};" % (name, c_ints(eo)))
        body.append("static const int32_t %s_in_marg[] = { /* value, count */\n%s\n};" % (name, c_ints([x for vc in mi for x in vc])))
        body.append("static const int32_t %s_out_marg[] = { /* value, count */\n%s\n};" % (name, c_ints([x for vc in mo for x in vc])))
        body.append("static const int32_t %s_cells[] = { /* in_bin, out_bin, count */\n%s\n};" % (name, c_ints(cell_flat, 18)))
        entries.append(
            "    {\"%s\", \"%s\", %d, %.6f, %.6f,\n"
            "     %s_in_edges, %d, %s_out_edges, %d,\n"
            "     %s_in_marg, %d, %s_out_marg, %d, %s_cells, %d},"
            % (name, rel, len(rows), ex_in, ex_out, name, len(ei), name, len(eo),
               name, len(mi), name, len(mo), name, len(cells)))
    head.append(" *")
    head.append(" * Means of the source (exact) and of this model (what dataset.c samples), per filter:")
    head += checks
    head.append(" * Regenerate: python3 workloads/derive_dists.py  (python3 stdlib only). */")
    out = "\n".join(head) + "\n#include \"dist_tables.h\"\n\n" + "\n".join(body) + "\n\n"
    out += "const pb_dist_table pb_dist_tables[] = {\n" + "\n".join(entries) + "\n};\n"
    out += "const int pb_n_dist_tables = (int)(sizeof pb_dist_tables / sizeof pb_dist_tables[0]);\n"
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(out)
    os.replace(tmp, args.out)
    print("\n".join(checks))
    print("wrote %s (%d bytes)" % (args.out, len(out)))


if __name__ == "__main__":
    sys.exit(main())
