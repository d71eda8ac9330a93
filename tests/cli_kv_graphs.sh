#!/usr/bin/env bash
# cli_kv_graphs.sh -- a system's kv_cache_dtype, kv_scale and cuda_graphs through
# `pagedbench run` (sim): fp8 doubles the KV blocks (e4m3 and e5m2 alike: the same
# bytes), no key = auto = cuda_graphs false, graphs lower TPOT; bad values and keys a
# system cannot read are config errors at file:line:col, exit 2, nothing written.
# The physics behind each key: tests/test_kv_format.c.
#   bash tests/cli_kv_graphs.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_kv_graphs.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_kvg.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

cat >"$T/e.yaml" <<'Y'
name: cli_kvg
figure: cli_kvg
model: opt-13b
hardware: a100-40gb
workload:
  dataset: sharegpt
  arrivals: poisson
  rate: 1.5
  num_requests: 150
columns: [system, kv_blocks, steps, tpot_mean_ms, normalized_latency]
systems:
  - {name: none, type: vllm}
  - {name: auto, type: vllm, kv_cache_dtype: auto, cuda_graphs: false}
  - {name: e4m3, type: vllm, kv_cache_dtype: fp8_e4m3, kv_scale: 0.5}
  - {name: e5m2, type: vllm, kv_cache_dtype: fp8_e5m2}
  - {name: graphs, type: vllm, engine: v0.2, cuda_graphs: true}
  - {name: eager, type: vllm, engine: v0.2}
Y
# each bad config: the sed that makes it, the key named in the error
while IFS='|' read -r expr key what; do
    sed "$expr" "$T/e.yaml" >"$T/bad.yaml"
    out=$("$PB" run "$T/bad.yaml" --results "$T/rb" 2>&1); rc=$?
    if [ "$rc" = 2 ] && grep -qE "bad.yaml:[0-9]+:[0-9]+: .*$key" <<<"$out" && [ ! -e "$T/rb/cli_kvg.csv" ]; then
        ok "$what: exit 2 at file:line:col"
    else bad "$what (rc $rc): $(head -c 300 <<<"$out")"; fi
done <<'B'
s/kv_cache_dtype: auto, cuda_graphs: false/kv_cache_dtype: auto, kv_scale: 2/|kv_scale|kv_scale with kv_cache_dtype auto
s/fp8_e5m2}/fp16}/|kv_cache_dtype|unknown kv_cache_dtype
s/kv_scale: 0.5}/kv_scale: -1}/|kv_scale|negative kv_scale
s/{name: eager, type: vllm, engine: v0.2}/{name: eager, type: orca, cuda_graphs: true}/|cuda_graphs|cuda_graphs on an Orca system
s/^model: opt-13b$/model: tiny-opt\nexecutor: cpu/|cuda_graphs|cuda_graphs on the cpu executor
B

if "$PB" run "$T/e.yaml" --results "$T/r" >"$T/out" 2>"$T/err"; then
    row() { grep "^$1," "$T/r/cli_kvg.csv" | cut -d, -f2-5; }
    col() { row "$1" | cut -d, -f"$2"; }
    [ -n "$(row none)" ] && [ "$(row none)" = "$(row auto)" ] && ok "no keys = kv_cache_dtype auto, cuda_graphs false" ||
        bad "no keys differ from auto: '$(row none)' vs '$(row auto)'"
    a=$(col auto 1); e=$(col e4m3 1)
    { [ "$e" = $((2 * a)) ] || [ "$e" = $((2 * a + 1)) ]; } && ok "fp8 doubles the KV blocks ($a -> $e)" ||
        bad "fp8 KV blocks $e vs auto $a"
    [ "$(row e4m3)" = "$(row e5m2)" ] && ok "e4m3 and e5m2 cost the same (kv_scale: numerics only)" ||
        bad "e4m3 '$(row e4m3)' vs e5m2 '$(row e5m2)'"
    g=$(col graphs 3); x=$(col eager 3)
    awk -v g="$g" -v x="$x" 'BEGIN { exit !(g < x) }' && ok "CUDA graphs lower TPOT ($x -> $g ms)" ||
        bad "graphs TPOT $g vs eager $x"
    [ "$(col graphs 1)" = "$(col eager 1)" ] && ok "graphs leave the KV space alone" || bad "graphs changed the KV blocks"
else
    bad "run failed: $(tail -n 5 "$T/err")"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
