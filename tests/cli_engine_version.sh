#!/usr/bin/env bash
# cli_engine_version.sh -- a system's `engine: v0.1 | v0.2` (engine/vllm_version.h)
# through `pagedbench run` on the sim executor: the KV blocks of each rule (v0.1: the
# harness's, 4062 on OPT-13B/A100-80GB at 0.95; v0.2: the profiling pass, 3765 at its
# default 0.90 and 4089 at 0.95, the numbers of RESULTS.md's v02 table); v0.2's
# prompt-only steps lower TTFT and raise TPOT against v0.1; no `engine:` key is v0.1; an
# explicit key equal to the v0.2 default changes nothing, another one does; an unknown
# version is a config error at file:line:col, exit 2, nothing written.
#   bash tests/cli_engine_version.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_engine_version.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_engine.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

cat >"$T/e.yaml" <<'Y'
name: cli_engine
figure: cli_engine
model: opt-13b
hardware: a100-80gb
workload:
  dataset: sharegpt
  arrivals: poisson
  rate: 2.5
  duration_s: 120
columns: [system, kv_blocks, steps, ttft_mean_ms, tpot_mean_ms]
systems:
  - {name: none, type: vllm, max_num_seqs: 1024}
  - {name: v01, type: vllm, engine: v0.1, max_num_seqs: 1024}
  - {name: v02, type: vllm, engine: v0.2, max_num_seqs: 1024}
  - {name: v02_util90, type: vllm, engine: v0.2, max_num_seqs: 1024, gpu_mem_util: 0.90}
  - {name: v02_mixed, type: vllm, engine: v0.2, max_num_seqs: 1024, step_mode: mixed}
  - {name: v02_util95, type: vllm, engine: v0.2, max_num_seqs: 1024, gpu_mem_util: 0.95}
Y
sed 's/engine: v0.2, max_num_seqs: 1024}$/engine: v0.3, max_num_seqs: 1024}/' "$T/e.yaml" >"$T/bad.yaml"

out=$("$PB" run "$T/bad.yaml" --results "$T/rb" 2>&1); rc=$?
if [ "$rc" = 2 ] && grep -qE "bad.yaml:14:[0-9]+: systems.2.engine: .*v0.3" <<<"$out" && [ ! -e "$T/rb/cli_engine.csv" ]; then
    ok "unknown engine version: exit 2 at file:line:col, nothing written"
else bad "unknown engine version (rc $rc): $(head -c 400 <<<"$out")"; fi

if "$PB" run "$T/e.yaml" --results "$T/r" >"$T/out" 2>"$T/err"; then
    row() { grep "^$1," "$T/r/cli_engine.csv" | cut -d, -f2-5; }
    [ -n "$(row none)" ] && [ "$(row none)" = "$(row v01)" ] && ok "no engine key = v0.1" ||
        bad "no engine key differs from v0.1: '$(row none)' vs '$(row v01)'"
    kv() { row "$1" | cut -d, -f1; }
    [ "$(kv v01)" = 4062 ] && [ "$(kv v02)" = 3765 ] && [ "$(kv v02_util95)" = 4089 ] &&
        ok "KV blocks: v0.1 rule 4062, v0.2 profiling 3765 at 0.90 and 4089 at 0.95" ||
        bad "KV blocks v01 $(kv v01) (4062), v02 $(kv v02) (3765), v02 at 0.95 $(kv v02_util95) (4089)"
    # columns after system: kv_blocks, steps, ttft_mean_ms, tpot_mean_ms
    awk -F, -v a="$(row v02)" -v b="$(row v01)" 'BEGIN { split(a, x, ","); split(b, y, ",");
        exit !(x[2] > y[2] && x[3] < y[3] && x[4] > y[4]) }' &&
        ok "v0.2's prompt-only steps: more steps, lower TTFT, higher TPOT ($(row v02) vs $(row v01))" ||
        bad "v0.2 vs v0.1: $(row v02) vs $(row v01)"
    [ "$(row v02_util90)" = "$(row v02)" ] && ok "v0.2 default gpu_mem_util is 0.90" ||
        bad "explicit 0.90 changes v0.2: $(row v02_util90) vs $(row v02)"
    [ "$(row v02_mixed | cut -d, -f1)" = "$(row v02 | cut -d, -f1)" ] &&
        [ "$(row v02_mixed | cut -d, -f2)" != "$(row v02 | cut -d, -f2)" ] &&
        ok "step_mode override changes the steps, not the KV space" ||
        bad "step_mode override: $(row v02_mixed) vs $(row v02)"
else
    bad "run failed: $(tail -n 5 "$T/err")"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
