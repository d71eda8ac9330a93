#!/usr/bin/env bash
# cli_results_current.sh -- RESULTS.md quotes what the code computes:
#   1. every table between RESULTS.md's GENERATED markers is exactly the committed
#      results/<fig>_report.md (`./run_all.sh results-md` on a copy changes nothing);
#   2. the committed results of the figures computed without a serving run -- Table 1,
#      Figs. 1, 18(a) (its cost-model rows) and 19(a), the validation table -- are, byte
#      for byte, what this binary computes now.
# (The serving figures' full runs take minutes; their --quick CSVs are pinned by
# tests/cli_goldens.sh.)  A model change on purpose regenerates results/ with
# ./run_all.sh all and this passes again.
#   bash tests/cli_results_current.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_results_current.sh path/to/pagedbench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/pb_cli_results.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

mkdir -p "$T/copy/results"
cp "$ROOT/run_all.sh" "$ROOT/RESULTS.md" "$T/copy/"
cp "$ROOT"/results/*_report.md "$T/copy/results/"
if bash "$T/copy/run_all.sh" results-md >"$T/md.log" 2>&1 && cmp -s "$ROOT/RESULTS.md" "$T/copy/RESULTS.md"; then
    ok "RESULTS.md's generated tables are results/*_report.md"
else
    bad "RESULTS.md's generated tables differ from results/*_report.md: $(diff "$ROOT/RESULTS.md" "$T/copy/RESULTS.md" | head -n 6)"
fi

cd "$ROOT"
"$PB" table1 --csv "$T/table1.csv" >/dev/null 2>&1 && cmp -s "$T/table1.csv" results/table1.csv &&
    ok "results/table1.csv is current" || bad "results/table1.csv: $(diff results/table1.csv "$T/table1.csv" | head -n 4)"
"$PB" validate --csv >"$T/validate.csv" 2>/dev/null &&
    cmp -s <(grep -v '^# pagedbench validate:' "$T/validate.csv") <(grep -v '^# pagedbench validate:' results/validate.csv) &&
    ok "results/validate.csv is current" || bad "results/validate.csv differs from pagedbench validate --csv"
"$PB" run --figure fig1 --figure fig19a --figure fig18a --results "$T/r" --quiet >/dev/null 2>"$T/err" ||
    bad "run --figure fig1 fig19a fig18a failed: $(tail -n 3 "$T/err")"
for f in fig1.csv fig1_report.md fig19a.csv fig19a_report.md; do
    cmp -s "$T/r/$f" "results/$f" && ok "results/$f is current" || bad "results/$f: $(diff "results/$f" "$T/r/$f" | head -n 4)"
done
# fig18a: the cost-model rows (a GPU, when present, adds its measured rows)
cmp -s <(grep -v '^gpu,' "$T/r/fig18a.csv") <(grep -v '^gpu,' results/fig18a.csv) &&
    ok "results/fig18a.csv's cost-model rows are current" || bad "results/fig18a.csv's cost-model rows differ"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
