#!/usr/bin/env bash
# cli_compare.sh -- `pagedbench compare A B` on the result files a run writes:
#   - a results CSV against itself, against its JSON sidecar and against one point's
#     vLLM-layout JSON: every shared metric equal, exit 0;
#   - a copy with one value 10% off: printed (A, B, diff, diff%), exit 1 beyond
#     --tolerance 5, exit 0 within --tolerance 20;
#   - a file in vLLM's own layout (a JSON object per line, vLLM's names) against our CSV:
#     paired by label and request rate, its names read as ours;
#   - an unreadable file is a usage error (2).
#   bash tests/cli_compare.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_compare.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_cmp.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

cat >"$T/c.yaml" <<'Y'
name: cmp_t
figure: cmp_t
model: opt-13b
hardware: a100-40gb
workload: {dataset: alpaca, arrivals: poisson, rate: 1, duration_s: 30}
sweep:
  - {axis: request_rate, set: workload.rate, values: [2, 6]}
systems:
  - {name: vllm, label: vLLM, type: vllm}
  - {name: orca_max, label: Orca (Max), type: orca, reservation: max}
Y
"$PB" run "$T/c.yaml" --results "$T/r" --quiet --no-report >/dev/null 2>"$T/err" || { bad "run: $(tail -3 "$T/err")"; exit 1; }
C=$T/r/cmp_t.csv
"$PB" compare "$C" "$C" >"$T/o"; rc=$?
[ $rc = 0 ] && grep -q "4 points paired, 0 only in one file; [0-9]* metric values compared, 0 differ" "$T/o" &&
    ok "a CSV against itself" || bad "self (rc $rc): $(tail -2 "$T/o")"
"$PB" compare "$C" "$T/r/cmp_t.json" --tolerance 0 >"$T/o"; rc=$?
[ $rc = 0 ] && grep -q "4 points paired.* 0 differ" "$T/o" && ok "the CSV against its JSON sidecar" ||
    bad "csv vs json (rc $rc): $(tail -2 "$T/o")"
V=$T/r/vllm/cmp_t/cmp_t-vllm-request_rate6.json
"$PB" compare "$C" "$V" --tolerance 0 >"$T/o"; rc=$?
[ $rc = 0 ] && grep -q "1 points paired, 0 only in one file; [1-9][0-9]* metric values compared, 0 differ" "$T/o" &&
    ok "the CSV against one point's vLLM-layout JSON" || bad "csv vs vllm json (rc $rc): $(cat "$T/o")"

# one value 10% off
col=$(head -1 "$C" | tr , '\n' | grep -n '^ttft_p99_ms$' | cut -d: -f1)
awk -F, -v OFS=, -v c="$col" 'NR == 3 { $c = $c * 1.1 } { print }' "$C" >"$T/b.csv"
"$PB" compare "$C" "$T/b.csv" --tolerance 5 >"$T/o"; rc=$?
[ $rc = 1 ] && grep -q "ttft_p99_ms .* +10.00%" "$T/o" && grep -q "1 differ" "$T/o" && grep -q "1 beyond the tolerance" "$T/o" &&
    ok "a 10% difference: printed, exit 1 beyond 5%" || bad "10% off (rc $rc): $(cat "$T/o")"
"$PB" compare "$C" "$T/b.csv" --tolerance 20 >/dev/null; rc=$?
[ $rc = 0 ] && ok "within --tolerance 20: exit 0" || bad "tolerance 20 (rc $rc)"
"$PB" compare "$C" "$T/b.csv" --metrics ttft_mean_ms >"$T/o"; rc=$?
[ $rc = 0 ] && grep -q " 0 differ" "$T/o" && ok "--metrics limits the comparison" || bad "--metrics (rc $rc)"

# vLLM's own file: its names, one object per line (--append-result)
m=$(awk -F, -v c="$(head -1 "$C" | tr , '\n' | grep -n '^ttft_mean_ms$' | cut -d: -f1)" \
        -v s="$(head -1 "$C" | tr , '\n' | grep -n '^system$' | cut -d: -f1)" \
        -v r="$(head -1 "$C" | tr , '\n' | grep -n '^request_rate$' | cut -d: -f1)" \
        '$s == "vllm" && $r == 2 { print $c }' "$C")
printf '{"label": "vllm", "request_rate": 2, "mean_ttft_ms": %s, "completed": 1}\n' "$m" >"$T/v.jsonl"
printf '{"label": "vllm", "request_rate": 99, "mean_ttft_ms": 1}\n' >>"$T/v.jsonl"
"$PB" compare "$C" "$T/v.jsonl" >"$T/o"; rc=$?
grep -q "^only in B: .*request_rate=99" "$T/o" && grep -q "completed\|n_finished" "$T/o" &&
    grep -q "1 points paired" "$T/o" && ok "vLLM's own layout: paired by label and rate, names read as ours" ||
    bad "vllm jsonl (rc $rc): $(cat "$T/o")"
"$PB" compare "$C" "$T/nosuch.json" >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "^pagedbench compare: " "$T/e" && ok "unreadable file: 2" || bad "unreadable (rc $rc)"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
