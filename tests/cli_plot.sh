#!/usr/bin/env bash
# cli_plot.sh -- `pagedbench plot` draws an experiment that is not in the paper: a
# policy the paper never had (spf, shortest-prompt-first) beside vLLM and Orca, three
# series; PNG and PDF are written, the new policy gets a style of its own (21..28)
# and its label in the legend, the paper's systems keep theirs; axis labels carry
# units; the figure's title is the experiment's; a value above the axis is an arrow to
# the edge with its value (in the data gnuplot draws), never dropped; two CSVs in one
# figure (the second dashed, one legend entry for it); --y twice makes two rows;
# --relative-to divides by a system's value; ms become s past 10,000; --quick results
# carry a watermark; bad columns are usage errors.  Skips (77) without gnuplot.
#   bash tests/cli_plot.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_plot.sh path/to/pagedbench}
. "$(dirname "$0")/skip.sh"
command -v gnuplot >/dev/null || pb_skip "gnuplot not installed (apt-get install gnuplot-nox)"
T=$(mktemp -d /tmp/pb_cli_plot.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

cat >"$T/spf.yaml" <<'Y'
name: spf_demo
figure: spf_demo
model: opt-13b
hardware: a100-40gb
workload: {dataset: alpaca, arrivals: poisson, rate: 1.0, duration_s: 30}
sweep:
  - {axis: request_rate, set: workload.rate, values: [2, 8, 16, 40]}
title: "SPF demo, Alpaca"
systems:
  - {name: orca_max, label: Orca (Max), type: orca, reservation: max}
  - {name: vllm, label: vLLM, type: vllm}
  - {name: vllm_spf, label: vLLM + shortest-prompt-first, type: vllm, policy: spf}
Y
if ! "$PB" run "$T/spf.yaml" --results="$T/r" --quiet --no-report >"$T/run.out" 2>"$T/run.err"; then
    bad "run: $(tail -n 3 "$T/run.err")"
    echo "$pass passed, $fail failed"; exit 1
fi
if "$PB" plot "$T/r/spf_demo.csv" --out="$T/fig" --script="$T/fig.gp" >"$T/plot.out" 2>"$T/plot.err"; then
    ok "plot exits 0"
else bad "plot failed: $(tail -n 5 "$T/plot.err")"; fi
[ "$(cat "$T/plot.out")" = "$(printf '%s\n%s' "$T/fig.png" "$T/fig.pdf")" ] && ok "prints the files written" ||
    bad "stdout: $(cat "$T/plot.out")"
[ "$(head -c 8 "$T/fig.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] && [ "$(stat -c %s "$T/fig.png")" -gt 10000 ] &&
    ok "PNG written" || bad "no PNG"
[ "$(head -c 5 "$T/fig.pdf")" = "%PDF-" ] && ok "PDF written" || bad "no PDF"
grep -q "NaN with linespoints ls 2[1-8] title 'vLLM + shortest-prompt-first'" "$T/fig.gp" &&
    ok "the new policy has its own style and legend entry" || bad "spf series missing from the program"
grep -q "NaN with linespoints ls 5 title 'vLLM'" "$T/fig.gp" && ok "vLLM keeps the paper's style" || bad "vLLM style"
[ "$(grep -c "title 'Orca (Max)'" "$T/fig.gp")" = 1 ] && ok "one legend: each series once" || bad "legend entries"
grep -q "set xlabel 'Request rate (req/s)'" "$T/fig.gp" && grep -q "set ylabel 'Normalized latency (s/token)'" "$T/fig.gp" &&
    ok "axis labels carry units" || bad "axis labels"
grep -q "set label 90 'SPF demo, Alpaca'" "$T/fig.gp" && ok "the experiment's title on the figure" || bad "title"
# Orca (Max) is past its knee at 16 and 40 req/s: above the 1 s/token axis, drawn as arrows with values
above=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "normalized_latency") c = i } NR > 1 && $c > 1' "$T/r/spf_demo.csv" | wc -l)
labels=$(grep -c '^[0-9.e+-]* 1 "[0-9.e+]*" ' "$T/fig.gp.dat")
[ "$above" -gt 0 ] && [ "$labels" = "$above" ] && grep -q "with vectors head" "$T/fig.gp" &&
    ok "$above values above the axis: arrows on the edge with their value" || bad "off-scale: $above above, $labels labels"
"$PB" plot "$T/r/spf_demo.csv" --y=ttft_p99_ms --yunit ms --out="$T/ttft" --script="$T/ttft.gp" >/dev/null 2>&1 &&
    grep -q "set ylabel 'TTFT p99 (ms)'" "$T/ttft.gp" && [ -s "$T/ttft.png" ] && ok "any metric as y, unit from its name" ||
    bad "ttft plot"
"$PB" plot "$T/r/spf_demo.csv" --y=e2el_p99_ms --y=tpot_p99_ms --logy --out="$T/two" --script="$T/two.gp" >/dev/null 2>&1 &&
    grep -q "set ylabel 'E2EL p99 (s)'" "$T/two.gp" && grep -q "set ylabel 'TPOT p99 (ms)'" "$T/two.gp" &&
    grep -q "set logscale y" "$T/two.gp" && ok "--y twice: two rows; E2EL past 10 s in s; --logy" || bad "two rows"
"$PB" plot "$T/r/spf_demo.csv" --y=ttft_p99_ms --relative-to=vllm --out="$T/rel" --script="$T/rel.gp" >/dev/null 2>&1 &&
    grep -q "set ylabel 'TTFT p99 relative to vLLM'" "$T/rel.gp" && grep -q "title 'vLLM (reference)'" "$T/rel.gp" &&
    awk '/^#/ { if (n && all1) ones++; n = 0; all1 = 1; next } NF >= 2 { n++; if ($2 != 1) all1 = 0 }
         END { if (n && all1) ones++; exit !(ones >= 1) }' "$T/rel.gp.dat" &&
    ok "--relative-to: each series over vLLM's, vLLM at 1" || bad "relative"
cp "$T/r/spf_demo.csv" "$T/other.csv"
"$PB" plot "$T/r/spf_demo.csv" "$T/other.csv" --out="$T/both" --script="$T/both.gp" >/dev/null 2>&1 &&
    grep -q "dt 2 notitle" "$T/both.gp" && grep -q "title 'dashed, hollow: other.csv'" "$T/both.gp" &&
    ok "two CSVs: the second dashed, one legend entry for it" || bad "two CSVs"
sed 's/"quick": false/"quick": true/' "$T/r/spf_demo.json" >"$T/q.json" && cp "$T/r/spf_demo.csv" "$T/q.csv"
"$PB" plot "$T/q.csv" --out="$T/q" --script="$T/q.gp" >/dev/null 2>&1 && grep -q "^quick = 1" "$T/q.gp" &&
    grep -q "eval QUICK_WATERMARK" "$T/q.gp" && ok "--quick results: watermarked" || bad "watermark"
"$PB" plot "$T/r/spf_demo.csv" --y=nosuch >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "no column 'nosuch'" "$T/e" && ok "unknown column: exit 2" || bad "unknown column rc $rc"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
