#!/usr/bin/env bash
# cli_bench.sh -- the benchmarks run and print their CSV figures (no speed assertions).
#   bash tests/cli_bench.sh build/release/pagedbench
set -u
PB=${1:?usage: cli_bench.sh path/to/pagedbench}
fail=0 pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1" >&2; fail=$((fail+1)); fi; }
out=$("$PB" bench sim --quick --csv 2>/dev/null); rc=$?
check "bench sim exits 0" "[ $rc = 0 ]"
for m in sim_requests_per_s beam6_select_ns_per_call beam6_advance_ns_per_call beam6_cost_ratio; do
    check "bench sim prints $m" "echo \"\$out\" | grep -Eq '^$m,[0-9][0-9.e+]*,'"
done
out=$("$PB" bench scheduler --csv 2>/dev/null); rc=$?
check "bench scheduler exits 0" "[ $rc = 0 ]"
for m in step_us_p50_32 step_us_mean_32 step_us_p99_32 step_us_p50_128 step_us_p50_256; do
    check "bench scheduler prints $m" "echo \"\$out\" | grep -Eq '^$m,[0-9.e+]+,us'"
done
"$PB" bench nosuch >/dev/null 2>&1; rc=$?
check "unknown benchmark exits 2" "[ $rc = 2 ]"
for b in scheduler sim costmodel; do
    "$PB" bench $b --help >/dev/null 2>&1; rc=$?
    check "bench $b --help exits 0" "[ $rc = 0 ]"
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
