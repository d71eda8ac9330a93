#!/usr/bin/env bash
# cli_csv_roundtrip.sh -- every results CSV reads back with a strict RFC 4180 parser
# (Python's csv module, strict=True), every row as wide as its header (issue 33):
#   1. the committed CSVs under results/ (a line starting with '#' is a comment, as
#      csv_reader.h reads it: the runner quotes a cell that starts with '#');
#   2. an experiment whose labels, tags, a tag's name and an axis' name hold commas,
#      quotes, CR, LF, leading blanks, a leading '#' and 400 characters: its CSV and its
#      requests CSV read back, every cell equal to what the YAML says, nothing cut.
#   bash tests/cli_csv_roundtrip.sh build/cpu/pagedbench
set -u
. "$(dirname "$0")/skip.sh"
PB=$(realpath "${1:?usage: cli_csv_roundtrip.sh path/to/pagedbench}")
SRC=$(cd "$(dirname "$0")/.." && pwd)
command -v python3 >/dev/null || pb_skip "no python3"
T=$(mktemp -d /tmp/pb_cli_csv.XXXXXX)
trap 'rm -rf "$T"' EXIT
LONG=$(python3 -c "print('L' * 400)")
cat >"$T/q.yaml" <<Y
name: q
figure: q
model: opt-13b
hardware: a100-40gb
workload: {dataset: sharegpt, rate: 2, num_requests: 8}
tags: {"dataset, source": "share,gpt", quote: 'say "hi"', crlf: "a\r\nb", blank: "  padded  ", hash: "#1"}
sweep:
  - {axis: "rate, req/s", set: workload.rate, values: [1, 2]}
systems:
  - {name: a, label: '"x,y', type: vllm}
  - {name: b, label: "$LONG", type: orca, reservation: max, tags: {note: "line1\nline2"}}
Y
"$PB" run "$T/q.yaml" --results "$T/r" --quiet --no-report --requests 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
cd "$SRC" && python3 - "$T" "$LONG" <<'P'
import csv, glob, io, subprocess, sys
T, LONG = sys.argv[1], sys.argv[2]
fail = 0
def read(path):
    lines = open(path, newline="").read().split("\n")
    return list(csv.reader(io.StringIO("\n".join(l for l in lines if not l.startswith("#"))), strict=True))
def widths(path):
    global fail
    try:
        rows = read(path)
    except csv.Error as e:
        print("[FAIL] %s: %s" % (path, e), file=sys.stderr); fail += 1; return None
    bad = [i + 2 for i, r in enumerate(rows[1:]) if len(r) != len(rows[0])]
    if bad:
        print("[FAIL] %s: rows %s are not %d cells wide" % (path, bad[:5], len(rows[0])), file=sys.stderr); fail += 1
    return rows
files = subprocess.run(["git", "ls-files", "results/*.csv", "results/**/*.csv"], capture_output=True, text=True).stdout.split()
if not files:
    files = glob.glob("results/**/*.csv", recursive=True)
for f in files:
    widths(f)
print("[ok] %d committed results CSVs read back strictly" % len(files), file=sys.stderr)
rows = widths(T + "/r/q.csv") or []
if len(rows) != 5:   # a header and 2 systems x 2 rates
    print("[FAIL] q.csv: %d rows, want a header and 4" % len(rows), file=sys.stderr); fail += 1
if rows:
    h = rows[0]
    want = {"dataset, source": "share,gpt", "quote": 'say "hi"', "crlf": "a\r\nb", "blank": "  padded  ", "hash": "#1",
            "label": None, "note": None}
    for r in rows[1:]:
        cell = dict(zip(h, r))
        want["label"] = '"x,y' if cell["system"] == "a" else LONG
        want["note"] = "" if cell["system"] == "a" else "line1\nline2"
        for k, v in want.items():
            if cell.get(k) != v:
                print("[FAIL] q.csv %s %s: %r, want %r" % (cell["system"], k, cell.get(k), v), file=sys.stderr); fail += 1
        if cell.get("rate, req/s") not in ("1", "2"):
            print("[FAIL] q.csv: axis 'rate, req/s' = %r" % cell.get("rate, req/s"), file=sys.stderr); fail += 1
    print("[ok] q.csv: %d rows, labels and tags read back whole" % (len(rows) - 1), file=sys.stderr)
rows = widths(T + "/r/q.requests.csv") or []
if len(rows) < 2:
    print("[FAIL] q.requests.csv: no request rows", file=sys.stderr); fail += 1
elif "rate, req/s" not in rows[0]:
    print("[FAIL] q.requests.csv: no axis column 'rate, req/s'", file=sys.stderr); fail += 1
else:
    print("[ok] q.requests.csv: %d rows as wide as the header" % (len(rows) - 1), file=sys.stderr)
sys.exit(1 if fail else 0)
P
