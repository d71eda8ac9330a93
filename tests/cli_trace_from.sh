#!/usr/bin/env bash
# cli_trace_from.sh -- `pagedbench trace --from FILE --format F` for the formats that
# carry token counts (vllm-json, azure-csv, csv): timestamps kept (shifted to 0, or
# rescaled by --rate), Poisson arrivals when the file has none, lengths as in the
# file, --filter and --num; errors are exit 2 with file and reason; --opt=value works.
# (The text format, sharegpt-json, is tests/cli_trace_sharegpt.sh.)
#   bash tests/cli_trace_from.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_trace_from.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_from.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }
body() { tail -n +2 "$1"; }

# vLLM benchmark_serving --save-result: lengths, no timestamps -> Poisson at --rate
printf '{"date": "x", "input_lens": [12, 40, 7, 300], "output_lens": [5, 80, 1, 20], "ttfts": [0.1, 0.2, 0.1, 0.3]}\n' >"$T/v.json"
if "$PB" trace --from="$T/v.json" --format=vllm-json --rate=2 --seed=7 >"$T/v.csv" 2>"$T/e"; then
    [ "$(body "$T/v.csv" | cut -d, -f2,3 | tr '\n' ' ')" = "12,5 40,80 7,1 300,20 " ] && ok "vllm-json lengths kept in order" ||
        bad "vllm-json lengths: $(body "$T/v.csv" | cut -d, -f2,3 | tr '\n' ' ')"
    body "$T/v.csv" | awk -F, 'NR > 1 && $1 < prev { bad = 1 } { prev = $1 } END { exit bad }' &&
        ok "Poisson arrivals non-decreasing" || bad "arrival order"
    "$PB" trace --from "$T/v.json" --format vllm-json --rate 2 --seed 7 2>/dev/null | cmp -s - "$T/v.csv" &&
        ok "same seed, same bytes" || bad "not deterministic"
else bad "vllm-json: $(cat "$T/e")"; fi
"$PB" trace --from "$T/v.json" --format vllm-json >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "no timestamps: give --rate" "$T/e" && ok "no timestamps and no rate: exit 2" || bad "rc $rc: $(cat "$T/e")"

# array form with timestamps: kept, shifted to 0
printf '[{"prompt_len": 10, "output_len": 3, "arrival_s": 5.5}, {"input_len": 20, "output_len": 4, "arrival_s": 6.25}]' >"$T/a.json"
"$PB" trace --from "$T/a.json" --format vllm-json 2>/dev/null | body /dev/stdin | cut -d, -f1-3 | tr '\n' ' ' |
    grep -qx "0.000000,10,3 0.750000,20,4 " && ok "timestamps kept (shifted to 0)" || bad "array form"
printf '{"input_lens": [1, 2], "output_lens": [1]}' >"$T/bad.json"
"$PB" trace --from "$T/bad.json" --format vllm-json --rate 1 >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "bad.json: expected \"input_lens\" and \"output_lens\" arrays of one length" "$T/e" &&
    ok "mismatched arrays: exit 2" || bad "rc $rc: $(cat "$T/e")"
printf '{"input_lens": [1, 2' >"$T/trunc.json"
"$PB" trace --from "$T/trunc.json" --format vllm-json --rate 1 >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "trunc.json:1:" "$T/e" && ok "broken JSON: file:line:col" || bad "rc $rc: $(cat "$T/e")"

# Azure trace: timestamps and lengths; --rate rescales; --num keeps the first N
cat >"$T/az.csv" <<'C'
TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.0000000,374,44
2023-11-16 18:15:48.0000000,396,109
2023-11-16 18:15:50.0000000,879,0
2023-11-16 18:15:52.0000000,91,12
C
"$PB" trace --from "$T/az.csv" --format azure-csv 2>"$T/e" | body /dev/stdin | cut -d, -f1-3 | tr '\n' ' ' |
    grep -qx "0.000000,374,44 2.000000,396,109 6.000000,91,12 " && grep -q "1 records dropped" "$T/e" &&
    ok "azure-csv: timestamps and lengths kept, a 0-token output dropped" || bad "azure: $(cat "$T/e")"
"$PB" trace --from "$T/az.csv" --format azure-csv --rate 1 --num 2 2>/dev/null | body /dev/stdin | cut -d, -f1 |
    tr '\n' ' ' | grep -qx "0.000000 1.000000 " && ok "--rate rescales the timestamps, --num cuts" || bad "azure rate"

# plain CSV with a header naming the columns
printf 'id,input_len,output_len,arrival_s\na,100,10,0.5\nb,2000,100,0.7\nc,50,5,1.0\n' >"$T/p.csv"
"$PB" trace --from "$T/p.csv" --format csv --filter paper 2>"$T/e" | body /dev/stdin | cut -d, -f1-3 | tr '\n' ' ' |
    grep -qx "0.000000,100,10 0.500000,50,5 " && ok "csv: columns by name, --filter paper drops 2000+100" ||
    bad "csv: $(cat "$T/e")"
printf 'prompt,output_len\n1,2\n' >"$T/q.csv"
"$PB" trace --from "$T/q.csv" --format csv --rate 1 >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "q.csv:1: needs a prompt_len" "$T/e" && ok "csv without a length column: exit 2" || bad "rc $rc"
"$PB" trace --from "$T/p.csv" --format nosuch >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "unknown format 'nosuch'" "$T/e" && ok "unknown format: exit 2" || bad "rc $rc"
"$PB" trace --from "$T/p.csv" >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "needs --format" "$T/e" && ok "--from without --format: exit 2" || bad "rc $rc"
"$PB" trace --from "$T/missing.csv" --format csv >/dev/null 2>"$T/e"; rc=$?
[ $rc = 1 ] && grep -q "missing.csv" "$T/e" && ok "unreadable file: exit 1" || bad "rc $rc: $(cat "$T/e")"
"$PB" trace --version | grep -q "^pagedbench " && ok "--version" || bad "--version"
# column mapping: a log with its own column names, as the YAML's input_column / output_column
printf 'ts,ctx,gen,extra\n0.5,100,20,x\n1.5,50,10,y\n' >"$T/m.csv"
"$PB" trace --from "$T/m.csv" --format csv --input-column ctx --output-column gen --arrival-column ts >"$T/m.out" 2>/dev/null &&
    [ "$(sed -n 2p "$T/m.out" | cut -d, -f1-3)" = "0.000000,100,20" ] && [ "$(sed -n 3p "$T/m.out" | cut -d, -f1-3)" = "1.000000,50,10" ] &&
    ok "--input/--output/--arrival-column map a csv's columns" || bad "column mapping: $(cat "$T/m.out")"
printf '[{"ctx": 7, "gen": 3, "ts": 2.0}, {"ctx": 9, "gen": 4, "ts": 2.5}]' >"$T/m.json"
"$PB" trace --from "$T/m.json" --format vllm-json --input-column ctx --output-column gen --arrival-column ts >"$T/mj.out" 2>/dev/null &&
    [ "$(sed -n 3p "$T/mj.out" | cut -d, -f1-3)" = "0.500000,9,4" ] && ok "column mapping of a vllm-json array" ||
    bad "json column mapping: $(cat "$T/mj.out")"
"$PB" trace --from "$T/m.csv" --format csv --input-column nosuch --output-column gen >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "no column 'nosuch' (--input-column)" "$T/e" && ok "a mapped column that is not there: 2" ||
    bad "missing mapped column (rc $rc): $(cat "$T/e")"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
