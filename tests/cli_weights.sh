#!/usr/bin/env bash
# cli_weights.sh -- a system's weights key through `pagedbench run` (sim): no key =
# fp16; int8 and fp8 free the same bytes (the same KV blocks), int4-awq and int4-gptq
# more; the two int4 kernels differ only in their measured compute rate (AWQ's is the
# lower, so its latency is the higher); bad values, a real executor and a hardware
# spec without the format's compute ratio are config errors at file:line:col, exit 2,
# nothing written.  The physics behind each value: tests/test_weights.c.
#   bash tests/cli_weights.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_weights.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_wq.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

cat >"$T/e.yaml" <<'Y'
name: cli_wq
figure: cli_wq
model: llama-13b
hardware: a100-40gb
workload:
  dataset: sharegpt
  arrivals: poisson
  rate: 3
  num_requests: 150
columns: [system, kv_blocks, steps, tpot_mean_ms, normalized_latency]
systems:
  - {name: none, type: vllm}
  - {name: fp16, type: vllm, weights: fp16}
  - {name: int8, type: vllm, weights: int8}
  - {name: fp8, type: vllm, weights: fp8}
  - {name: awq, type: vllm, weights: int4-awq}
  - {name: gptq, type: vllm, weights: int4-gptq}
Y
while IFS='|' read -r expr key what; do
    sed "$expr" "$T/e.yaml" >"$T/bad.yaml"
    out=$("$PB" run "$T/bad.yaml" --results "$T/rb" 2>&1); rc=$?
    if [ "$rc" = 2 ] && grep -qE "bad.yaml:[0-9]+:[0-9]+: .*$key" <<<"$out" && [ ! -e "$T/rb/cli_wq.csv" ]; then
        ok "$what: exit 2 at file:line:col"
    else bad "$what (rc $rc): $(head -c 300 <<<"$out")"; fi
done <<'B'
s/weights: int8}/weights: int3}/|weights|unknown weights
s/^hardware: a100-40gb$/hardware: h100-sxm/|weights.*wq_int8_compute_ratio|a hardware spec without the ratio
s/^model: llama-13b$/model: tiny-opt\nexecutor: cpu/|weights|quantized weights on the cpu executor
B

if "$PB" run "$T/e.yaml" --results "$T/r" >"$T/out" 2>"$T/err"; then
    row() { grep "^$1," "$T/r/cli_wq.csv" | cut -d, -f2-5; }
    col() { row "$1" | cut -d, -f"$2"; }
    [ -n "$(row none)" ] && [ "$(row none)" = "$(row fp16)" ] && ok "no key = weights fp16" ||
        bad "no key differs from fp16: '$(row none)' vs '$(row fp16)'"
    f=$(col fp16 1); i8=$(col int8 1); f8=$(col fp8 1); a=$(col awq 1); g=$(col gptq 1)
    [ "$f" -lt "$i8" ] && [ "$i8" = "$f8" ] && [ "$i8" -lt "$a" ] && [ "$a" = "$g" ] &&
        ok "KV blocks grow as the weights shrink ($f < int8 $i8 = fp8 $f8 < int4 $a = $g)" ||
        bad "KV blocks fp16 $f int8 $i8 fp8 $f8 awq $a gptq $g"
    [ "$(row int8)" = "$(row fp8)" ] && ok "int8 and fp8 cost the same (same bytes, same measured rate)" ||
        bad "int8 '$(row int8)' vs fp8 '$(row fp8)'"
    la=$(col awq 4); lg=$(col gptq 4); lf=$(col fp16 4)
    awk -v a="$la" -v g="$lg" 'BEGIN { exit !(a > g) }' && ok "AWQ's slower kernel: latency $la > GPTQ (Marlin) $lg" ||
        bad "awq latency $la vs gptq $lg"
    awk -v g="$lg" -v f="$lf" 'BEGIN { exit !(g < f) }' && ok "int4 past the fp16 knee: latency $lg < fp16 $lf" ||
        bad "gptq latency $lg vs fp16 $lf"
else
    bad "run failed: $(tail -n 5 "$T/err")"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
