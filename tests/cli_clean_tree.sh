#!/usr/bin/env bash
# cli_clean_tree.sh -- running never changes `git status`:
#   1. in this checkout: `./run_all.sh fig19`, `./run_all.sh fig12 --quick`,
#      `./run_all.sh study --quick` (on the build under test) and `./run_all.sh list`
#      leave `git status --porcelain` and the tracked files exactly as they were: their
#      outputs go to out/, which .gitignore lists;
#   2. in a scratch git repository carrying only this .gitignore: a user's own YAML run
#      with --requests --timeline, `plot`, `trace -o`, `compare` and `table1 --csv`, each
#      with its default output place, leave it clean;
#   3. the binary names its build's revision, "-dirty" exactly when a compiled source
#      differs from the commit (git status over those files), whatever results changed.
# Skips (77) outside a git checkout or without gnuplot (run_all.sh's figure verbs plot).
#   bash tests/cli_clean_tree.sh build/cpu/pagedbench       (from the repository root)
set -u
. "$(dirname "$0")/skip.sh"
PB=$(cd "$(dirname "${1:?usage: cli_clean_tree.sh path/to/pagedbench}")" && pwd)/$(basename "$1")
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || pb_skip "not a git checkout"
command -v gnuplot >/dev/null || pb_skip "gnuplot not installed"
{ fc-list 2>/dev/null | grep -i dejavu >/dev/null; } || pb_skip "no DejaVu fonts (fonts-dejavu-core)"
ROOT=$(git rev-parse --show-toplevel)
T=$(mktemp -d /tmp/pb_clean.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }
snapshot() { (cd "$ROOT" && git status --porcelain --untracked-files=all && git diff --stat); }

# 1. run_all.sh's figure verbs in this checkout, on the build under test
before=$(snapshot)
BUILD=$(dirname "$PB")
for v in "fig19" "fig12 --quick" "study --quick" "list"; do
    # shellcheck disable=SC2086
    if (cd "$ROOT" && ./run_all.sh $v --build "$BUILD" --jobs 2 >"$T/o" 2>"$T/e"); then
        ok "./run_all.sh $v"
    else bad "./run_all.sh $v: $(tail -n 3 "$T/e")"; fi
done
[ -s "$ROOT/out/fig19b.csv" ] && [ -s "$ROOT/out/plots/fig19.png" ] && [ -s "$ROOT/out/quick/plots/study.png" ] &&
    ok "outputs in out/ and out/quick/" || bad "outputs not in out/: $(ls "$ROOT/out" 2>&1 | head -5)"
after=$(snapshot)
[ "$before" = "$after" ] && ok "git status unchanged by run_all.sh fig19 / fig12 --quick / study --quick / list" ||
    bad "git status changed: $(diff <(echo "$before") <(echo "$after") | head -10)"

# 2. a user's YAML and the other commands, in a repository with only our .gitignore
mkdir -p "$T/repo" && cp "$ROOT/.gitignore" "$T/repo/"
git -C "$T/repo" init -q && git -C "$T/repo" add .gitignore &&
    git -C "$T/repo" -c user.name=t -c user.email=t@t commit -qm init
cat >"$T/repo/mine.yaml" <<'Y'
name: mine
figure: mine
model: opt-13b
hardware: a100-40gb
workload: {dataset: alpaca, arrivals: gamma, burstiness: 0.5, rate: 2, duration_s: 20}
sweep:
  - {axis: request_rate, set: workload.rate, values: [2, 4]}
systems:
  - {name: vllm, label: vLLM, type: vllm}
Y
git -C "$T/repo" add mine.yaml && git -C "$T/repo" -c user.name=t -c user.email=t@t commit -qm yaml
(
    cd "$T/repo" &&
    "$PB" run mine.yaml --requests --timeline --quiet >/dev/null 2>&1 &&
    "$PB" plot out/mine.csv >/dev/null 2>&1 &&
    "$PB" trace --dataset alpaca --rate 2 --num 10 -o out/trace.csv 2>/dev/null &&
    "$PB" compare out/mine.csv out/mine.json >/dev/null &&
    "$PB" table1 --csv out/table1.csv >/dev/null 2>&1
) && ok "a user's YAML, plot, trace -o, compare, table1 --csv" || bad "the user's commands failed"
[ -s "$T/repo/out/mine.csv" ] && [ -s "$T/repo/out/plots/mine-normalized_latency.png" ] &&
    [ -s "$T/repo/out/mine.timeline.csv" ] && ok "their outputs under out/" || bad "outputs: $(ls -R "$T/repo/out" | head)"
[ -z "$(git -C "$T/repo" status --porcelain --untracked-files=all)" ] && ok "git status clean after them" ||
    bad "git status: $(git -C "$T/repo" status --porcelain --untracked-files=all | head -5)"

# 3. the revision: the build's, dirty only for compiled sources
rev=$("$PB" --version | cut -d' ' -f2)
head=$(git -C "$ROOT" rev-parse --short=12 HEAD)
src_dirty=$(git -C "$ROOT" status --porcelain --untracked-files=all -- CMakeLists.txt ':(glob)*/*.c' ':(glob)*/*.h' \
    ':(glob)*/*.cu' ':(exclude,glob)tests/**' ':(exclude,glob)**/test_*.c' | head -c 1)
case "$rev" in
"$head") [ -z "$src_dirty" ] && ok "--version $rev: the commit, sources clean" || bad "--version $rev but sources differ" ;;
"$head-dirty") [ -n "$src_dirty" ] && ok "--version $rev: sources differ from the commit" || bad "--version $rev, sources clean" ;;
*) echo "[skip] --version $rev: built from another commit than the checkout's $head" >&2 ;;
esac
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
