#!/usr/bin/env bash
# cli_plot.sh -- `pagedbench plot` draws an experiment that is not in the paper: a
# policy the paper never had (spf, shortest-prompt-first) beside vLLM and Orca, three
# series; PNG and PDF are written, the new policy gets a style of its own (21..28)
# and its label in the legend, the paper's systems keep theirs; axis labels carry
# units; bad columns are usage errors.  Skips (77) without gnuplot.
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
  - {axis: request_rate, set: workload.rate, values: [2, 8, 16]}
systems:
  - {name: orca_oracle, label: Orca (Oracle), type: orca, reservation: oracle}
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
grep -q "strcol('system') eq 'vllm_spf'.* ls 2[1-8] title 'vLLM + shortest-prompt-first'" "$T/fig.gp" &&
    ok "the new policy has its own style and legend entry" || bad "spf series missing from the program"
grep -q "strcol('system') eq 'vllm'.* ls 5 title 'vLLM'" "$T/fig.gp" && ok "vLLM keeps the paper's style" ||
    bad "vLLM style"
grep -q "set xlabel 'Request rate (req/s)'" "$T/fig.gp" && grep -q "set ylabel 'Normalized latency (s/token)'" "$T/fig.gp" &&
    ok "axis labels carry units" || bad "axis labels"
"$PB" plot "$T/r/spf_demo.csv" --y=ttft_p99_ms --out="$T/ttft" --script="$T/ttft.gp" >/dev/null 2>&1 &&
    grep -q "set ylabel 'TTFT p99 (ms)'" "$T/ttft.gp" && [ -s "$T/ttft.png" ] && ok "any metric as y, unit from its name" ||
    bad "ttft plot"
"$PB" plot "$T/r/spf_demo.csv" --y=nosuch >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "no column 'nosuch'" "$T/e" && ok "unknown column: exit 2" || bad "unknown column rc $rc"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
