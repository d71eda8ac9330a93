#!/usr/bin/env bash
# cli_kernels.sh -- the kernel-latency regression gate on the CPU path:
#   1. `pagedbench kernels --cpu --check` passes against a loosened copy of
#      bench/baselines/cpu-reference.json (no dependence on this machine's speed);
#   2. a deliberately tightened baseline (every latency / 1000, every ratio / 10)
#      makes it exit 1 and name the regressions;
#   3. a malformed baseline exits 2 with file:line:col; a GPU baseline in CPU mode
#      exits 2.
# usage: bash tests/cli_kernels.sh path/to/pagedbench   (run from the repo root)
set -u
BIN=${1:?usage: cli_kernels.sh path/to/pagedbench}
BASE=bench/baselines/cpu-reference.json
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$BASE" ] || fail "$BASE missing"

# The PASS path against a loosened copy (every latency x 1000, every ratio x 10): a test
# must not depend on this shared machine's speed (timings are the benchmark's business,
# `pagedbench kernels --cpu --check bench/baselines/cpu-reference.json` run by hand).
awk '{
  if ($0 ~ /"kind": "us"/) { match($0, /"value": [0-9.eE+-]+/); v = substr($0, RSTART + 9, RLENGTH - 9);
    sub(/"value": [0-9.eE+-]+/, sprintf("\"value\": %.6g", v * 1000)); }
  else if ($0 ~ /"kind": "ratio"/) { match($0, /"value": [0-9.eE+-]+/); v = substr($0, RSTART + 9, RLENGTH - 9);
    sub(/"value": [0-9.eE+-]+/, sprintf("\"value\": %.6g", v * 10)); }
  print }' "$BASE" > "$TMP/loose.json"
"$BIN" kernels --cpu --check "$TMP/loose.json" > "$TMP/ok.out" 2> "$TMP/ok.err"
rc=$?
[ $rc -eq 0 ] || { cat "$TMP/ok.out" "$TMP/ok.err"; fail "check against a loosened $BASE exited $rc"; }
grep -q "^Check no_regression: PASS (0 of [1-9][0-9]* regressed" "$TMP/ok.out" || { cat "$TMP/ok.out"; fail "no no_regression PASS"; }
grep -q "^Check complete: PASS" "$TMP/ok.out" || fail "no complete PASS"
grep -q "^Check correct: n/a" "$TMP/ok.out" || fail "no correct n/a on the C references"
grep -q "Result is" "$TMP/ok.out" && fail "the old LoadGen verdict is still printed"
echo "ok: kernels --check $BASE passes"

awk '{
  if ($0 ~ /"kind": "us"/) { match($0, /"value": [0-9.eE+-]+/); v = substr($0, RSTART + 9, RLENGTH - 9);
    sub(/"value": [0-9.eE+-]+/, sprintf("\"value\": %.6g", v / 1000)); }
  else if ($0 ~ /"kind": "ratio"/) { match($0, /"value": [0-9.eE+-]+/); v = substr($0, RSTART + 9, RLENGTH - 9);
    sub(/"value": [0-9.eE+-]+/, sprintf("\"value\": %.6g", v / 10)); }
  print }' "$BASE" > "$TMP/tight.json"
cmp -s "$BASE" "$TMP/tight.json" && fail "tightening did not change the baseline"
"$BIN" kernels --cpu --grid swap,blocksize --reps 3 --check "$TMP/tight.json" > "$TMP/tight.out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$TMP/tight.out"; fail "tightened baseline: exit $rc, expected 1"; }
grep -q "REGRESSION" "$TMP/tight.out" || fail "no REGRESSION line"
grep -q "cpu/blocksize/ratio/bs16 .*REGRESSION" "$TMP/tight.out" || fail "ratio regression not reported"
grep -q "^Check no_regression: FAIL ([1-9][0-9]* of [1-9][0-9]* regressed" "$TMP/tight.out" || fail "no no_regression FAIL"
grep -q "^Check complete: PASS" "$TMP/tight.out" || fail "no complete PASS on the tightened run"
echo "ok: tightened baseline fails with exit 1"

printf '{\n  "mode": "cpu-reference",\n  "tolerance": oops\n}\n' > "$TMP/bad.json"
"$BIN" kernels --cpu --grid swap --check "$TMP/bad.json" > "$TMP/bad.out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "malformed baseline: exit $rc, expected 2"
grep -q "bad.json:3:16:" "$TMP/bad.out" || { cat "$TMP/bad.out"; fail "no file:line:col"; }
sed 's/"mode": "cpu-reference"/"mode": "gpu"/' "$BASE" > "$TMP/gpu.json"
"$BIN" kernels --cpu --grid swap --check "$TMP/gpu.json" > "$TMP/gpu.out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "gpu baseline in cpu mode: exit $rc, expected 2"
echo "ok: bad baselines exit 2"

# --help lists every option the parser takes
"$BIN" kernels --help > "$TMP/help.out" 2>&1 || fail "kernels --help exited non-zero"
opts=$(grep -oE '\{"[a-z0-9-]+", O_[A-Z0-9_]+, ' experiments/cmd_kernels.c | sed 's/{"\([a-z0-9-]*\)".*/\1/')
[ "$(echo $opts | wc -w)" -ge 10 ] || fail "no option table found in experiments/cmd_kernels.c"
for o in $opts; do
    grep -q -- "--$o\b" "$TMP/help.out" || fail "kernels --help does not list --$o"
done
"$BIN" kernels --cpu --grid swap --reps 1 > "$TMP/nocheck.out" 2>/dev/null || fail "kernels without --check failed"
grep -q "^Check no_regression: n/a" "$TMP/nocheck.out" || fail "no no_regression n/a without --check"
echo "ok: --help complete, checks without a baseline"
echo "cli_kernels: all passed"
