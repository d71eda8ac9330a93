#!/usr/bin/env bash
# cli_model_specs.sh -- every model spec of experiments/models/ is listed by `pagedbench
# list` and runs a short point (30 ShareGPT requests, vLLM, the sim) on a GPU its rows
# calibrate, at the smallest tensor-parallel degree its weights fit; the point finishes
# every request.  A mixture-of-experts spec is refused: tests/hostile/38.
# usage: bash tests/cli_model_specs.sh path/to/pagedbench   (run from the repo root)
set -u
PB=${1:?usage: cli_model_specs.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_models.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

"$PB" list >"$T/list" 2>/dev/null || bad "pagedbench list exited non-zero"
cat >"$T/p.yaml" <<'Y'
name: mspec
figure: mspec
model: opt-13b
hardware: a100-80gb
workload: {dataset: sharegpt, arrivals: poisson, rate: 4, num_requests: 30}
systems:
  - {name: vllm, type: vllm}
Y
for f in experiments/models/*.yaml; do
    m=$(basename "$f" .yaml)
    grep -q "^  $m " "$T/list" && ok "list names $m" || bad "list does not name $m"
    case $m in tiny-*) continue ;; esac    # the CPU executor's models: cli_cpu_smoke.sh
    hw=a100-80gb
    case $m in llama-2-7b|codellama-34b|internlm-20b|qwen-72b|phi-2|llama-2-70b) hw=h100-sxm ;; esac
    done_=0
    for g in 1 2 4 8; do
        rc=0
        "$PB" run "$T/p.yaml" --set model=$m --set hardware=$hw --set gpus=$g --results "$T/r" \
            --quiet --no-report >"$T/o" 2>&1 || rc=$?
        if [ $rc != 0 ]; then   # too few GPUs for the model is a config error (2); anything else is a failure
            [ $rc = 2 ] && grep -qE 'no memory left|cannot hold one max-length request|does not divide' "$T/o" && continue
            bad "$m on $hw x$g: rc $rc: $(tail -1 "$T/o")"; done_=1; break
        fi
        n=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "n_finished") c = i } NR == 2 { print $c }' "$T/r/mspec.csv")
        [ "$n" = 30 ] && ok "$m runs a point on $hw x$g (30 of 30 finished)" || bad "$m on $hw x$g: n_finished '$n'"
        done_=1
        break
    done
    [ $done_ = 1 ] || bad "$m runs on no $hw count of 1-8: $(tail -1 "$T/o")"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
