#!/usr/bin/env python3
"""param_table.py -- the cost-model parameters of hardware YAMLs as a markdown table.

    python3 experiments/calibrate/param_table.py [HARDWARE ...]   (default: a100-40gb a100-80gb)

One row per number under cost_model: (framework maps included): key, value per GPU, and
the source of the first GPU's value (its data and residual).  RESULTS.md's generated
`params` section is this output (./run_all.sh results-md).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate  # noqa: E402  (key_paths, HW_DIR: the same YAML reading)


def params(hw):
    with open(os.path.join(calibrate.HW_DIR, hw + ".yaml")) as f:
        lines = f.readlines()
    vals, srcs = {}, {}
    for i, _, p in calibrate.key_paths(lines):
        if not p.startswith("cost_model."):
            continue
        v = lines[i].split(":", 1)[1].split(" #")[0].strip()
        parts = p.split(".")
        if "sources" in parts:
            j = parts.index("sources")
            srcs[".".join(parts[:j] + parts[j + 1:])] = v.strip('"')
        elif v:
            vals[p] = v
    return vals, srcs


def main():
    hws = sys.argv[1:] or ["a100-40gb", "a100-80gb"]
    tabs = [params(h) for h in hws]
    print("| parameter | " + " | ".join(hws) + " | source (data, residual) of the %s value |" % hws[0])
    print("|---|" + "---|" * len(hws) + "---|")
    keys = list(tabs[0][0])   # the first spec's keys in its order, then the others' own keys
    for t in tabs[1:]:
        keys += [k for k in t[0] if k not in keys]
    for k in keys:
        name = k[len("cost_model."):]
        src = next((t[1][k] for t in tabs if k in t[1]), "(no source)").replace("|", "/")
        print("| `%s` | %s | %s |" % (name, " | ".join(t[0].get(k, "-").replace("|", "/") for t in tabs), src))
    return 0


if __name__ == "__main__":
    sys.exit(main())
