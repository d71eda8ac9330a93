#!/usr/bin/env bash
# cli_engine_v1.sh -- a system's `engine: v1` (engine/vllm_version.h) through
# `pagedbench run` on the sim executor: automatic prefix caching is on by default
# (the chatbot's turns hit the cache: prefix_hit_pct > 0) and `prefix_caching: false`
# turns it off; `cuda_graphs: false` leaves the graphs' memory estimate to the KV space
# (V1's rule, spec.h pb_kv_capacity_v1, pinned by hand in tests/test_vllm_v1.c);
# asynchronous scheduling lowers TPOT; nothing is swapped; `preemption: swap` or `auto`
# and a beam workload are config errors at file:line:col, exit 2, nothing written;
# `validate --attention flash` reprices the vllm rows with V1's kernel, not the FT rows;
# V1's prefix cache takes the CPU tier (kv_cpu_tier_gib) without a caching policy, and
# refuses it with prefix_caching: false; at tp 8 its custom all-reduce lowers TPOT against
# NCCL's, and a GPU without custom_allreduce_tpN terms is a config error (exit 2) until
# custom_allreduce: false; the all-reduce + RMSNorm fusion lowers TPOT at tp 8 on an H100 and
# is a config error where asked for on an A100 or for an OPT model; FlashAttention-3
# (flash_attn_version: auto on an H100) lowers the TTFT of lone long prompts against 2, and 3
# on an A100 is a config error.
#   bash tests/cli_engine_v1.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_engine_v1.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_v1.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

cat >"$T/e.yaml" <<'Y'
name: cli_v1
figure: cli_v1
model: opt-13b
hardware: a100-40gb
workload:
  dataset: chatbot
  arrivals: poisson
  rate: 0.5
  duration_s: 120
columns: [system, kv_blocks, prefix_hit_pct, tpot_mean_ms, preempt_swap]
systems:
  - {name: v1, type: vllm, engine: v1}
  - {name: v1_noapc, type: vllm, engine: v1, prefix_caching: false}
  - {name: v1_nographs, type: vllm, engine: v1, cuda_graphs: false}
  - {name: v1_sync, type: vllm, engine: v1, async_scheduling: false}
Y
if "$PB" run "$T/e.yaml" --results "$T/r" >"$T/out" 2>"$T/err"; then
    col() { grep "^$1," "$T/r/cli_v1.csv" | cut -d, -f"$2"; }
    awk -v h="$(col v1 3)" 'BEGIN { exit !(h > 0) }' && [ -n "$(col v1_noapc 2)" ] && [ -z "$(col v1_noapc 3)" ] &&
        ok "prefix caching on by default (hit $(col v1 3)%), off with prefix_caching: false" ||
        bad "prefix caching: v1 hit '$(col v1 3)', v1_noapc '$(col v1_noapc 3)'"
    [ "$(col v1 2)" -gt 0 ] && [ "$(col v1_nographs 2)" -gt "$(col v1 2)" ] &&
        ok "CUDA graph memory taken from the KV space: $(col v1 2) blocks, $(col v1_nographs 2) without graphs" ||
        bad "kv_blocks v1 $(col v1 2), without graphs $(col v1_nographs 2)"
    awk -v a="$(col v1 4)" -v s="$(col v1_sync 4)" 'BEGIN { exit !(a < s) }' &&
        ok "asynchronous scheduling lowers TPOT ($(col v1 4) ms vs $(col v1_sync 4) ms)" ||
        bad "async TPOT $(col v1 4) vs sync $(col v1_sync 4)"
    [ "$(col v1 5)" = 0 ] && ok "no swaps" || bad "v1 swapped: $(col v1 5)"
else
    bad "run failed: $(tail -n 5 "$T/err")"
fi

# cfg_error YAML OUTDIR REGEX WHAT: `run YAML` exits 2 with a line matching REGEX and writes no CSV
cfg_error() {
    local out rc
    out=$("$PB" run "$1" --results "$2" 2>&1); rc=$?
    if [ "$rc" = 2 ] && grep -qE "$3" <<<"$out" && ! ls "$2"/*.csv >/dev/null 2>&1; then ok "$4"
    else bad "$4 (rc $rc): $(head -c 300 <<<"$out")"; fi
}

for m in swap auto; do
    sed "s/{name: v1, type: vllm, engine: v1}/{name: v1, type: vllm, engine: v1, preemption: $m}/" "$T/e.yaml" >"$T/p.yaml"
    cfg_error "$T/p.yaml" "$T/rp$m" "p.yaml:12:[0-9]+: systems.0.preemption: vLLM V1 .* recompute only" \
        "preemption: $m under engine: v1 is a config error"
done

sed 's/  dataset: chatbot/  dataset: alpaca\n  beam_width: 4/' "$T/e.yaml" >"$T/b.yaml"
cfg_error "$T/b.yaml" "$T/rb" "b.yaml:[0-9]+:[0-9]+: workload.beam_width: vLLM V1 .* no beam search" \
    "beam search under engine: v1 is a config error"
# the CPU tier under V1: its prefix cache is the knob's, not a policy's
cat >"$T/t.yaml" <<'Y'
name: cli_v1_tier
figure: cli_v1_tier
model: opt-13b
hardware: a100-40gb
workload: {dataset: chatbot, arrivals: poisson, rate: 1.5, duration_s: 60}
columns: [system, prefix_hit_pct_cpu, kv_tier_reloads]
systems:
  - {name: v1_tier, type: vllm, engine: v1, kv_cpu_tier_gib: 8}
Y
if "$PB" run "$T/t.yaml" --results "$T/rt" --quiet --no-report 2>"$T/err" &&
    awk -F, '$1 == "v1_tier" && $2 > 0 && $3 > 0 { ok = 1 } END { exit !ok }' "$T/rt/cli_v1_tier.csv"; then
    ok "engine: v1 with a CPU tier: $(grep '^v1_tier,' "$T/rt/cli_v1_tier.csv" | cut -d, -f2,3) (% of tokens from the CPU, reloads)"
else bad "engine: v1 with a CPU tier: $(tail -n 3 "$T/err") $(cat "$T/rt/cli_v1_tier.csv" 2>/dev/null | head -c 300)"; fi
sed 's/engine: v1, kv_cpu_tier_gib: 8}/engine: v1, prefix_caching: false, kv_cpu_tier_gib: 8}/' "$T/t.yaml" >"$T/tn.yaml"
cfg_error "$T/tn.yaml" "$T/rtn" "tn.yaml:8:[0-9]+: systems.0.kv_cpu_tier_gib: .*caches by content" \
    "engine: v1, prefix_caching: false with a CPU tier is a config error"

# tensor parallelism: V1's all-reduces through vLLM's own kernels (custom_allreduce, the
# hardware's custom_allreduce_tpN terms) lower TPOT against NCCL's; a GPU without those
# terms is a config error at the engine key (its default), fixed by custom_allreduce: false
cat >"$T/tp.yaml" <<'EOF'
name: cli_v1_tp
figure: cli_v1_tp
model: llama-2-70b
hardware: h100-sxm
gpus: 8
workload: {dataset: sharegpt, arrivals: poisson, rate: 2, num_requests: 60}
systems:
  - {name: v1, type: vllm, engine: v1}
  - {name: v1_nccl, type: vllm, engine: v1, custom_allreduce: false}
EOF
if "$PB" run "$T/tp.yaml" --results "$T/rtp" >/dev/null 2>"$T/err" &&
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "tpot_p50_ms") c = i }
             $2 == "v1" { a = $c } $2 == "v1_nccl" { b = $c } END { exit !(c && a > 0 && a < b) }' "$T/rtp/cli_v1_tp.csv"; then
    ok "engine: v1 at tp 8: custom all-reduce TPOT below NCCL's"
else bad "v1 at tp 8: $(tail -n 3 "$T/err") $(head -c 400 "$T/rtp/cli_v1_tp.csv" 2>/dev/null)"; fi
sed 's/hardware: h100-sxm/hardware: a100-80gb/; /v1_nccl/d' "$T/tp.yaml" >"$T/tpa.yaml"
cfg_error "$T/tpa.yaml" "$T/rtpa" \
    "tpa.yaml:8:[0-9]+: systems.0.custom_allreduce \(the engine's default\): hardware A100-80GB has no cost_model.custom_allreduce_tp8_us" \
    "engine: v1 at tp 8 on a GPU without custom all-reduce terms: config error"
sed 's/engine: v1}/engine: v1, custom_allreduce: false}/' "$T/tpa.yaml" >"$T/tpb.yaml"
"$PB" run "$T/tpb.yaml" --results "$T/rtpb" >/dev/null 2>"$T/err" && [ -s "$T/rtpb/cli_v1_tp.csv" ] &&
    ok "... and runs with custom_allreduce: false (NCCL's terms)" || bad "custom_allreduce: false on a100-80gb: $(tail -n 3 "$T/err")"

# the all-reduce + RMSNorm fusion (fuse_allreduce_rms, on under V1 where the GPU gives its size):
# at tp 8 on h100-sxm it lowers TPOT against fuse_allreduce_rms: false; asked for on a GPU
# without the size it is a config error at the key
sed 's/{name: v1_nccl, type: vllm, engine: v1, custom_allreduce: false}/{name: v1_nofuse, type: vllm, engine: v1, fuse_allreduce_rms: false}/' \
    "$T/tp.yaml" >"$T/fu.yaml"
if "$PB" run "$T/fu.yaml" --results "$T/rfu" >/dev/null 2>"$T/err" &&
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "tpot_p50_ms") c = i }
             $2 == "v1" { a = $c } $2 == "v1_nofuse" { b = $c } END { exit !(c && a > 0 && a < b) }' "$T/rfu/cli_v1_tp.csv"; then
    ok "engine: v1 at tp 8 on h100-sxm: the all-reduce + RMSNorm fusion lowers TPOT"
else bad "v1 fuse_allreduce_rms: $(tail -n 3 "$T/err") $(head -c 400 "$T/rfu/cli_v1_tp.csv" 2>/dev/null)"; fi
sed 's/hardware: h100-sxm/hardware: a100-80gb/; /v1_nccl/d; s/engine: v1}/engine: v1, custom_allreduce: false, fuse_allreduce_rms: true}/' \
    "$T/tp.yaml" >"$T/fua.yaml"
cfg_error "$T/fua.yaml" "$T/rfua" \
    "fua.yaml:8:[0-9]+: systems.0.fuse_allreduce_rms: hardware A100-80GB has no cost_model.allreduce_norm_fusion_tp8_MB" \
    "fuse_allreduce_rms: true on a GPU without the fusion's size: config error"
sed 's/model: llama-2-70b/model: opt-66b/; s/gpus: 8/gpus: 2/; /v1_nccl/d; s/engine: v1}/engine: v1, fuse_allreduce_rms: true}/' \
    "$T/tp.yaml" >"$T/fuo.yaml"
cfg_error "$T/fuo.yaml" "$T/rfuo" \
    "fuo.yaml:8:[0-9]+: systems.0.fuse_allreduce_rms: model OPT-66B has no RMSNorm to fuse" \
    "fuse_allreduce_rms: true for an OPT model: config error"

# FlashAttention-3: V1's auto picks it on a GPU with FA3's term (h100-sxm), which lowers the
# TTFT of prompts that prefill alone (4,000 tokens each, 2 s apart) against
# flash_attn_version: 2 (prefill compute only); 3 on a GPU without the term is a config
# error at the key, and auto there runs FA2
{ echo "arrival_s,prompt_len,output_len"; for i in 0 1 2 3 4 5; do echo "$((2 * i)),4000,4"; done; } >"$T/fa.csv"
cat >"$T/fa.yaml" <<EOF2
name: cli_v1_fa
figure: cli_v1_fa
model: llama-3-8b
hardware: h100-sxm
workload: {trace: $T/fa.csv}
systems:
  - {name: v1, type: vllm, engine: v1}
  - {name: v1_fa2, type: vllm, engine: v1, flash_attn_version: 2}
  - {name: v1_fa3, type: vllm, engine: v1, flash_attn_version: 3}
EOF2
ttft() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ttft_mean_ms") c = i } NR > 1 { print $2, $c }' "$1"; }
if "$PB" run "$T/fa.yaml" --results "$T/rfa" >/dev/null 2>"$T/err" &&
    ttft "$T/rfa/cli_v1_fa.csv" | awk '{ t[$1] = $2 } END { exit !(t["v1"] > 0 && t["v1"] == t["v1_fa3"] && t["v1"] < t["v1_fa2"]) }'; then
    ok "engine: v1 on h100-sxm: auto = FlashAttention-3, prefill-alone TTFT below FlashAttention-2's"
else bad "v1 flash_attn_version: $(tail -n 3 "$T/err") $(ttft "$T/rfa/cli_v1_fa.csv" 2>/dev/null | tr '\n' ' ')"; fi
sed 's/hardware: h100-sxm/hardware: a100-80gb/' "$T/fa.yaml" >"$T/faa.yaml"
cfg_error "$T/faa.yaml" "$T/rfaa" \
    "faa.yaml:9:[0-9]+: systems.2.flash_attn_version: hardware A100-80GB has no cost_model.flash3_prefill_flops_efficiency" \
    "flash_attn_version: 3 on a GPU without FlashAttention-3's term: config error"
sed '/v1_fa3/d' "$T/faa.yaml" >"$T/fab.yaml"
if "$PB" run "$T/fab.yaml" --results "$T/rfab" >/dev/null 2>"$T/err" &&
    ttft "$T/rfab/cli_v1_fa.csv" | awk '{ t[$1] = $2 } END { exit !(t["v1"] > 0 && t["v1"] == t["v1_fa2"]) }'; then
    ok "... and on a100-80gb auto is FlashAttention-2"
else bad "v1 auto on a100-80gb: $(tail -n 3 "$T/err")"; fi

# validate --attention flash: the vllm rows priced with V1's kernel, the FT rows unchanged
"$PB" validate --csv >"$T/vp.csv" 2>/dev/null && "$PB" validate --csv --attention flash >"$T/vf.csv" 2>/dev/null
ft_same=$(cmp -s <(grep '^ft-' "$T/vp.csv") <(grep '^ft-' "$T/vf.csv") && echo y)
vllm_diff=$(cmp -s <(grep '^sarathi' "$T/vp.csv") <(grep '^sarathi' "$T/vf.csv") || echo y)
if [ "$ft_same" = y ] && [ "$vllm_diff" = y ] && [ "$(grep -c '^ft-' "$T/vf.csv")" -gt 0 ]; then
    ok "validate --attention flash reprices the vllm rows only"
else bad "validate --attention flash: ft same '$ft_same', vllm rows differ '$vllm_diff'"; fi
out=$("$PB" validate --attention xformers 2>&1); rc=$?
[ "$rc" = 2 ] && ok "validate --attention xformers: usage error" || bad "validate --attention xformers: rc $rc"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
