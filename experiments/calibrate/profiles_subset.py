#!/usr/bin/env python3
"""profiles_subset.py -- the cells of the GPU profiles that calibrate.py and flash_attn.py read, as files.

    python3 experiments/calibrate/profiles_subset.py --write     rewrite tests/data/gpu-profiles
    python3 experiments/calibrate/profiles_subset.py --check     exit 1 if it is not current

Runs calibrate.py's fits for every hardware target, and flash_attn.py's row loader, on
../shared/data/gpu-profiles (or --profiles DIR) with their CSV reader instrumented: every
cell a fit reads is recorded.
The subset keeps every file calibrate.py opened, in the same layout, every row in order,
the columns it read (in their original order), and in each row only the cells read there
(the others empty).  calibrate.py therefore reads the same values from the subset and
makes the same fits (tests/cli_calibrate.sh runs `calibrate.py --check` and
`flash_attn.py --check` with `--profiles tests/data/gpu-profiles` where the full profiles
are absent, as in CI).  --check also
prints calibrate's report and fails like `calibrate.py --check` when a committed
hardware value no longer follows from the data, so one pass of the fits does both.
The profiles are Vidur's (MIT, tests/data/gpu-profiles/LICENSE-vidur-MIT.txt).
"""
import argparse
import csv
import io
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import calibrate  # noqa: E402
import flash_attn  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "data", "gpu-profiles")


class Row(dict):
    """A csv.DictReader row that remembers which keys were read."""
    def __init__(self, d):
        super().__init__(d)
        self.read = set()

    def __getitem__(self, k):
        self.read.add(k)
        return dict.__getitem__(self, k)

    def get(self, k, default=None):
        self.read.add(k)
        return dict.get(self, k, default)


def instrumented_fits(prof):
    opened = {}   # path -> (header, rows)
    def rows(path):
        if path not in opened:
            with open(path, newline="") as f:
                rd = csv.DictReader(f)
                opened[path] = (rd.fieldnames, [Row(r) for r in rd])
        return opened[path][1]
    calibrate.rows = rows
    for hw in sorted(calibrate.TARGETS):
        calibrate.fit_all(prof, hw)
    flash_attn.rows = rows   # and the FlashAttention-2 fit's rows (flash_attn.py reads through calibrate's reader)
    flash_attn.load(prof)
    return opened


def subset_files(prof, opened):
    """{relative path: text} of the subset."""
    out = {}
    for path, (header, rs) in sorted(opened.items()):
        cols = [c for c in header if any(c in r.read for r in rs)]
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(cols)
        for r in rs:
            w.writerow([dict.__getitem__(r, c) if c in r.read else "" for c in cols])
        out[os.path.relpath(path, prof)] = buf.getvalue()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profiles", default=os.path.join(os.path.dirname(ROOT), "shared", "data", "gpu-profiles"))
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.profiles, "vidur")):
        print("profiles_subset.py: no GPU profiles at %s" % a.profiles, file=sys.stderr)
        return 2
    opened = instrumented_fits(a.profiles)
    files = subset_files(a.profiles, opened)
    if a.write:
        for rel, text in files.items():
            p = os.path.join(OUT, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", newline="") as f:
                f.write(text)
        print("profiles_subset.py: wrote %d files, %d bytes under tests/data/gpu-profiles"
              % (len(files), sum(len(t) for t in files.values())))
        return 0
    bad = 0
    have = set()
    for dp, _, fs in os.walk(OUT):
        have.update(os.path.relpath(os.path.join(dp, f), OUT) for f in fs if f.endswith(".csv"))
    for rel in sorted(set(files) | have):
        p = os.path.join(OUT, rel)
        if rel not in files:
            print("profiles_subset.py: %s is committed but calibrate.py no longer reads it" % rel, file=sys.stderr)
            bad += 1
        elif not os.path.isfile(p) or open(p, newline="").read() != files[rel]:
            print("profiles_subset.py: tests/data/gpu-profiles/%s is not the cells calibrate.py reads: run --write"
                  % rel, file=sys.stderr)
            bad += 1
    # and the fits against the committed YAMLs (calibrate.py --check, the same memoized fits)
    sys.argv = ["calibrate.py", "--check", "--profiles", a.profiles]
    rc = calibrate.main()
    if bad:
        return 1
    print("profiles_subset.py: tests/data/gpu-profiles holds the %d files' cells calibrate.py reads" % len(files))
    return rc


if __name__ == "__main__":
    sys.exit(main())
