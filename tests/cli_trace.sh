#!/usr/bin/env bash
# cli_trace.sh -- end-to-end checks of `pagedbench trace`.
# usage: bash tests/cli_trace.sh path/to/pagedbench     (run from the repository root)
# Prints one line per check and "N passed, N failed"; exit 1 on any failure.
set -u
BIN=${1:-build/pagedbench}
[ -x "$BIN" ] || { echo "cli_trace: no binary $BIN"; echo "0 passed, 1 failed"; exit 1; }
TMP=$(mktemp -d /tmp/pb_cli_trace.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
pass=0; fail=0
ok()  { echo "[ok] $1"; pass=$((pass + 1)); }
bad() { echo "[FAIL] $1"; fail=$((fail + 1)); }
HEADER="arrival_s,prompt_len,output_len,n,beam_width,prefix_id,prefix_len,conversation_id,turn"

# expect_rc NAME RC PATTERN -- cmd...: exit status RC and stderr matching PATTERN (grep -E)
expect_rc() {
    local name=$1 rc=$2 pat=$3; shift 4
    "$@" > "$TMP/out" 2> "$TMP/err"; local got=$?
    if [ "$got" -eq "$rc" ] && { [ -z "$pat" ] || grep -Eq -- "$pat" "$TMP/err"; }; then ok "$name"
    else bad "$name (exit $got, want $rc; stderr: $(head -c 300 "$TMP/err"))"; fi
}

# within FILE EXPECT_IN EXPECT_OUT TOL NMIN NMAX -- mean prompt/output of a trace CSV
within() {
    awk -F, -v ei="$2" -v eo="$3" -v tol="$4" -v nmin="$5" -v nmax="$6" '
        NR == 1 { next } { n++; si += $2; so += $3 }
        END { mi = si / n; mo = so / n; d1 = mi / ei - 1; d2 = mo / eo - 1
              printf "  %d requests, mean prompt %.2f (want %.2f), mean output %.2f (want %.2f)\n", n, mi, ei, mo, eo
              exit !(n >= nmin && n <= nmax && d1 < tol && -d1 < tol && d2 < tol && -d2 < tol) }' "$1"
}

expect_rc "help" 0 "" -- "$BIN" trace --help
grep -q -- "--dataset" "$TMP/out" && ok "help lists --dataset" || bad "help lists --dataset"

# the issue's done-when: ~7,200 requests, means within 2%
"$BIN" trace --dataset sharegpt --rate 2 --duration 3600 --seed 0 > "$TMP/s0.csv" 2> "$TMP/err"
[ "$(head -1 "$TMP/s0.csv")" = "$HEADER" ] && ok "header" || bad "header: $(head -1 "$TMP/s0.csv")"
within "$TMP/s0.csv" 161.18 338.00 0.02 6900 7500 && ok "sharegpt rate 2 x 3600 s: count and means" || bad "sharegpt means"
"$BIN" trace --dataset sharegpt --rate 2 --duration 3600 --seed 0 > "$TMP/s0b.csv" 2>/dev/null
cmp -s "$TMP/s0.csv" "$TMP/s0b.csv" && ok "same seed: byte-identical" || bad "same seed differs"
if "$BIN" trace --dataset sharegpt --rate 2 --duration 3600 --seed 1 > "$TMP/s1.csv" 2>/dev/null &&
    [ "$(wc -l < "$TMP/s1.csv")" -gt 1000 ]; then
    cmp -s "$TMP/s0.csv" "$TMP/s1.csv" && bad "seed 1 equals seed 0" || ok "another seed: another trace"
else
    bad "seed 1: trace failed or short"
fi
"$BIN" trace --dataset alpaca --rate 2 --duration 3600 --seed 0 > "$TMP/a0.csv" 2>/dev/null
within "$TMP/a0.csv" 19.31 58.45 0.02 6900 7500 && ok "alpaca rate 2 x 3600 s: count and means" || bad "alpaca means"
# (a violating row sets bad; END's exit would override an exit in a main rule)
awk -F, 'NR > 1 && $2 + $3 >= 2048 { bad = 1 } END { exit bad || NR < 1000 }' "$TMP/s0.csv" &&
    ok "paper filter holds" || bad "paper filter"
"$BIN" trace --dataset sharegpt --filter vllm --rate 5 --duration 600 --seed 3 > "$TMP/v.csv" 2>/dev/null &&
    awk -F, 'NR > 1 && ($2 < 4 || $3 < 4 || $2 > 1024 || $2 + $3 > 2048) { bad = 1 } END { exit bad || NR < 1000 }' \
        "$TMP/v.csv" && ok "vllm filter holds" || bad "vllm filter"

# modes and datasets
"$BIN" trace --dataset sharegpt --rate 1 --num 100 --beam 4 --seed 2 > "$TMP/b.csv" 2>/dev/null
[ "$(awk -F, 'NR > 1 && $4 == 4 && $5 == 4' "$TMP/b.csv" | wc -l)" -eq 100 ] && ok "--num 100 --beam 4" || bad "--beam"
"$BIN" trace --dataset translation --prefix 5shot --rate 10 --duration 60 > "$TMP/t.csv" 2>/dev/null
awk -F, 'NR > 1 && !($6 == 0 && $7 == 336 && $2 > 336) { bad = 1 } END { exit bad || NR < 100 }' "$TMP/t.csv" \
    && ok "translation 5-shot prefix" || bad "translation prefix"
"$BIN" trace --dataset chatbot --rate 1 --duration 2000 --seed 4 -o "$TMP/c.csv" 2>/dev/null
awk -F, 'NR > 1 && ($2 > 1024 || $3 > 1016 || $8 < 0) { bad = 1 } END { exit bad || NR < 1000 }' "$TMP/c.csv" \
    && ok "chatbot caps, written with -o" || bad "chatbot"
"$BIN" trace --dataset alpaca --arrivals exponential --rate 4 --num 1000 --n 2 > "$TMP/e.csv" 2>/dev/null
[ "$(wc -l < "$TMP/e.csv")" -eq 1001 ] && ok "exponential arrivals, --num" || bad "exponential"

# --config: the workload section of an experiment YAML
cat > "$TMP/exp.yaml" <<'YAML'
workload:
  dataset: alpaca
  rate: 2
  duration_s: 3600
YAML
"$BIN" trace --config "$TMP/exp.yaml" > "$TMP/y.csv" 2>/dev/null
cmp -s "$TMP/y.csv" "$TMP/a0.csv" && ok "--config gives the same trace as the options" || bad "--config"
printf 'workload:\n  dataset: alpaca\n  rat: 2\n' > "$TMP/bad.yaml"
expect_rc "--config unknown key" 2 "bad.yaml:3:3: .*rat" -- "$BIN" trace --config "$TMP/bad.yaml"

# bad options
expect_rc "unknown dataset" 2 "unknown dataset 'nope'" -- "$BIN" trace --dataset nope --rate 1
expect_rc "non-numeric rate" 2 "--rate: expected a number" -- "$BIN" trace --dataset sharegpt --rate abc
expect_rc "missing rate" 2 "rate > 0" -- "$BIN" trace --dataset sharegpt --duration 10
expect_rc "unknown option" 2 "unknown option" -- "$BIN" trace --dataset sharegpt --rate 1 --colour red
expect_rc "missing dataset" 2 "--dataset is required" -- "$BIN" trace --rate 1
expect_rc "n and beam" 2 "exclusive" -- "$BIN" trace --dataset sharegpt --rate 1 --n 2 --beam 2

# --check: malformed traces -> file:line: message, exit 2
printf '%s\n0.000000,5,6,1,1,-1,0,-1,0\n' "$HEADER" > "$TMP/good.csv"
expect_rc "check good trace" 0 "1 requests" -- "$BIN" trace --check "$TMP/good.csv"
expect_rc "check generated trace" 0 "requests" -- "$BIN" trace --check "$TMP/s0.csv"
printf 'arrival_s,prompt_len\n0,5\n' > "$TMP/m1.csv"
expect_rc "missing column" 2 "m1.csv:1:1: missing column 'output_len'" -- "$BIN" trace --check "$TMP/m1.csv"
printf 'arrival_s,prompt_len,output_len\n0,5,6\n1,-5,6\n' > "$TMP/m2.csv"
expect_rc "negative length" 2 "m2.csv:3:3: prompt_len: negative" -- "$BIN" trace --check "$TMP/m2.csv"
printf 'arrival_s,prompt_len,output_len\n0,5,six\n' > "$TMP/m3.csv"
expect_rc "non-numeric length" 2 "m3.csv:2:5: output_len: not an integer" -- "$BIN" trace --check "$TMP/m3.csv"
printf 'arrival_s,prompt_len,output_len\n5,5,6\n4,5,6\n' > "$TMP/m4.csv"
expect_rc "arrivals out of order" 2 "m4.csv:3:1: arrivals out of order" -- "$BIN" trace --check "$TMP/m4.csv"
: > "$TMP/m5.csv"
expect_rc "empty file" 2 "m5.csv:1:1: empty file" -- "$BIN" trace --check "$TMP/m5.csv"
expect_rc "unreadable file" 1 "nonexistent" -- "$BIN" trace --check "$TMP/nonexistent.csv"

# Fig. 11 data
expect_rc "fig11" 0 "fig11: wrote" -- "$BIN" trace --fig11 "$TMP/fig11.csv"
[ "$(wc -l < "$TMP/fig11.csv")" -eq 1025 ] && ok "fig11 rows" || bad "fig11 rows: $(wc -l < "$TMP/fig11.csv")"
awk -F, 'NR > 1 { s[$1 "," $2] += $5 * ($4 - $3) } END { for (k in s) if (s[k] < 0.99 || s[k] > 1.0001) exit 1 }' \
    "$TMP/fig11.csv" && ok "fig11 densities integrate to 1" || bad "fig11 densities"
grep -q '^sharegpt,input,0,8,.*,161\.[123]' "$TMP/fig11.csv" && ok "fig11 sharegpt mean" || bad "fig11 sharegpt mean"

# n and beam_width are stored in 16 bits: a larger value is an error at its file:line:col,
# never a wrapped-around value
printf 'arrival_s,prompt_len,output_len,n\n0.1,10,10,65537\n' >"$TMP/bign.csv"
"$BIN" trace --check="$TMP/bign.csv" >/dev/null 2>"$TMP/err"; rc=$?
[ $rc = 2 ] && grep -q 'bign.csv:2:11: n: 65537 is too large (at most 4096)' "$TMP/err" &&
    ok "n over 4096 in a trace file: file:line:col error" || bad "n over 4096 (exit $rc: $(cat "$TMP/err"))"

# gamma arrivals and rate ramps: `trace` options == the YAML's workload keys (--config),
# byte for byte; the laws themselves are tests/test_arrivals.c's
cat >"$TMP/g.yaml" <<'Y'
workload: {dataset: alpaca, arrivals: gamma, burstiness: 0.25, rate: 3, num_requests: 400}
Y
"$BIN" trace --config "$TMP/g.yaml" --seed 5 >"$TMP/g1.csv" 2>/dev/null &&
    "$BIN" trace --dataset alpaca --arrivals gamma --burstiness 0.25 --rate 3 --num 400 --seed 5 >"$TMP/g2.csv" 2>/dev/null &&
    cmp -s "$TMP/g1.csv" "$TMP/g2.csv" && [ "$(wc -l <"$TMP/g1.csv")" = 401 ] &&
    ok "gamma: --burstiness == workload.burstiness" || bad "gamma trace: YAML and options differ"
cat >"$TMP/r.yaml" <<'Y'
workload:
  dataset: sharegpt
  arrivals: poisson
  duration_s: 300
  ramp: {shape: linear, start_rate: 1, end_rate: 5}
Y
"$BIN" trace --config "$TMP/r.yaml" >"$TMP/r1.csv" 2>/dev/null &&
    "$BIN" trace --dataset sharegpt --duration 300 --ramp linear --ramp-start 1 --ramp-end 5 >"$TMP/r2.csv" 2>/dev/null &&
    cmp -s "$TMP/r1.csv" "$TMP/r2.csv" && ok "ramp: --ramp == workload.ramp" || bad "ramp trace: YAML and options differ"
# Lambda(150) = 300 of Lambda(300) = 900: the second half holds twice the first's arrivals
# (Poisson counts, 5 sd: 300 +- 87, 600 +- 123)
awk -F, 'NR > 1 { if ($1 < 150) a++; else b++ } END { exit !(a > 213 && a < 387 && b > 477 && b < 723) }' "$TMP/r1.csv" &&
    ok "ramp: 1 to 5 req/s over 300 s" || bad "ramp counts: $(awk -F, 'NR>1{if($1<150)a++;else b++}END{print a, b}' "$TMP/r1.csv")"
"$BIN" trace --dataset alpaca --arrivals poisson --burstiness 0.5 --rate 1 --num 5 >/dev/null 2>"$TMP/err"; rc=$?
[ $rc = 2 ] && grep -q "burstiness goes with --arrivals gamma" "$TMP/err" && ok "--burstiness without gamma: 2" ||
    bad "burstiness without gamma (rc $rc)"
"$BIN" trace --dataset alpaca --ramp linear --ramp-start 1 --ramp-end 2 --rate 3 --num 5 >/dev/null 2>"$TMP/err"; rc=$?
[ $rc = 2 ] && grep -q "leave --rate out" "$TMP/err" && ok "--ramp with --rate: 2" || bad "ramp with rate (rc $rc)"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
