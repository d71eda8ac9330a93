#!/usr/bin/env bash
# cli_run.sh -- end-to-end checks of `pagedbench run` and `pagedbench list`:
# config errors (unknown key with did-you-mean, wrong type, duplicate key) name
# file:line:col and exit 2 with nothing written; a tiny real sweep (sim executor) gives
# byte-identical CSVs for --jobs 1 and --jobs 3; a second run resumes (0 computed).
#   bash tests/cli_run.sh build/release/pagedbench
set -u
PB=${1:?usage: cli_run.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_run.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }
expect() {   # expect NAME RC PATTERN -- cmd...
    local name=$1 rc=$2 pat=$3; shift 4
    local out got
    out=$("$@" 2>&1); got=$?
    if [ "$got" = "$rc" ] && grep -qF -- "$pat" <<<"$out"; then ok "$name"
    else bad "$name (rc $got, want $rc; output: $(head -c 400 <<<"$out"))"; fi
}

cat >"$T/tiny.yaml" <<'Y'
name: cli_tiny
figure: cli_tiny
panel: a
model: opt-13b
hardware: a100-40gb
workload:
  dataset: alpaca
  arrivals: poisson
  rate: 1.0
  duration_s: 20
columns: [panel, system, request_rate, normalized_latency]
sweep:
  - {axis: request_rate, set: workload.rate, values: [1, 4, 8]}
systems:
  - {name: orca_oracle, label: Orca (Oracle), type: orca, reservation: oracle}
  - {name: vllm, label: vLLM, type: vllm}
Y
sed 's/^columns:/colums:/' "$T/tiny.yaml" >"$T/unknown.yaml"
sed 's/^panel: a/panel: a\ngpus: two/' "$T/tiny.yaml" >"$T/type.yaml"
sed 's/^  rate: 1.0/  rate: fast/' "$T/tiny.yaml" >"$T/wtype.yaml"
sed 's/^panel: a/panel: a\nseed: 1\nseed: 2/' "$T/tiny.yaml" >"$T/dup.yaml"
# a percentile column exists only when the experiment's `percentiles:` names it
sed 's/^columns: .*/columns: [system, ttft_p95_ms]/' "$T/tiny.yaml" >"$T/p95.yaml"
{ cat "$T/p95.yaml"; echo "percentiles: [95]"; } >"$T/p95ok.yaml"

expect unknown_key 2 "unknown.yaml:11:1: colums: unknown key 'colums' (did you mean 'columns'?)" -- \
    "$PB" run "$T/unknown.yaml" --results "$T/r0"
expect wrong_type 2 "type.yaml:4:7: gpus: expected an integer, got 'two'" -- "$PB" run "$T/type.yaml" --results "$T/r0"
expect workload_type 2 "wtype.yaml:9:9: workload.rate: expected a number" -- "$PB" run "$T/wtype.yaml" --results "$T/r0"
expect duplicate_key 2 "dup.yaml:5:1: duplicate key" -- "$PB" run "$T/dup.yaml" --results "$T/r0"
expect pct_column 2 "p95.yaml:11:19: columns.1: 'ttft_p95_ms' is no column" -- "$PB" run "$T/p95.yaml" --results "$T/r0"
expect pct_column_ok 0 "cli_tiny" -- "$PB" run "$T/p95ok.yaml" --check
expect bad_set 2 "--set:1:" -- "$PB" run "$T/tiny.yaml" --set "nodot" --results "$T/r0"
expect unknown_figure 2 "no experiment YAML" -- "$PB" run --figure fig99 --results "$T/r0"
expect bad_option 2 "unknown option" -- "$PB" run --bogus
if [ -e "$T/r0/cli_tiny.csv" ]; then bad "nothing written on config errors"; else ok "nothing written on config errors"; fi
expect check_figure 0 "fig13_sharegpt" -- "$PB" run --figure fig13 --check
expect list 0 "fig12_opt13b_sharegpt" -- "$PB" list
expect list_keys 0 "knee" -- "$PB" list --keys

# determinism across --jobs, and resume
if "$PB" run "$T/tiny.yaml" --jobs 1 --results "$T/j1" >"$T/j1.out" 2>"$T/j1.err" &&
   "$PB" run "$T/tiny.yaml" --jobs 3 --results "$T/j3" >"$T/j3.out" 2>"$T/j3.err"; then
    if cmp -s "$T/j1/cli_tiny.csv" "$T/j3/cli_tiny.csv" && [ "$(wc -l <"$T/j1/cli_tiny.csv")" = 7 ]; then
        ok "jobs 1 and 3 give byte-identical CSVs"
    else bad "CSVs differ across --jobs"; diff "$T/j1/cli_tiny.csv" "$T/j3/cli_tiny.csv" | head >&2; fi
    grep -q "^### cli_tiny: results (no digitized paper data" "$T/j1.out" && ! grep -q "^| *|$" "$T/j1.out" && ok "report printed" || bad "no report"
    "$PB" run "$T/tiny.yaml" --jobs 2 --results "$T/j1" >"$T/again.out" 2>"$T/again.err"
    if grep -q ": 0 points computed, 6 reused" "$T/again.err" && cmp -s "$T/j1/cli_tiny.csv" "$T/j3/cli_tiny.csv"; then
        ok "resume reuses every point"
    else bad "resume: $(grep '==>' "$T/again.err")"; fi
    rm -f "$T"/j1/points/cli_tiny/vllm-*.pt
    "$PB" run "$T/tiny.yaml" --results "$T/j1" >"$T/again.out" 2>"$T/again.err"
    grep -q ": 3 points computed, 3 reused" "$T/again.err" && ok "resume recomputes only missing points" ||
        bad "partial resume: $(grep '==>' "$T/again.err")"
    grep -q '"git_revision"' "$T/j1/cli_tiny.json" && ok "JSON sidecar" || bad "JSON sidecar"
    # the banner and the sidecar name the revision the binary was built from (--version),
    # not one asked of git at run time: another repository's HEAD (GIT_DIR) changes nothing
    if command -v git >/dev/null; then
        git init -q "$T/other" && git -C "$T/other" -c user.name=t -c user.email=t@t commit -q --allow-empty -m x
        built=$("$PB" --version | cut -d' ' -f2)
        rm -f "$T/j1/cli_tiny.json"   # the sidecar must be this run's
        GIT_DIR="$T/other/.git" "$PB" run "$T/tiny.yaml" --results "$T/j1" >"$T/rev.out" 2>"$T/rev.err" ||
            bad "run under another GIT_DIR failed: $(tail -n 2 "$T/rev.err")"
        banner_rev=$(sed -n 's/^==> .*; pagedbench \(.*\)$/\1/p' "$T/rev.err" | head -n 1)
        json_rev=$(sed -n 's/.*"git_revision": *"\([^"]*\)".*/\1/p' "$T/j1/cli_tiny.json")
        [ "$banner_rev" = "$built" ] && [ "$json_rev" = "$built" ] &&
            ok "banner and sidecar name the build's revision ($built)" ||
            bad "banner '$banner_rev', sidecar '$json_rev', --version '$built'"
        grep -q '"source_hash": "[0-9a-f]\{16\}"' "$T/j1/cli_tiny.json" && ok "sidecar: source hash" || bad "source_hash"
    fi
else
    bad "tiny sweep failed: $(tail -n 5 "$T/j1.err" "$T/j3.err")"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
