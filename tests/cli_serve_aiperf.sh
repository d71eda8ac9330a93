#!/usr/bin/env bash
# cli_serve_aiperf.sh -- a third-party load generator, NVIDIA's aiperf (PyPI), against
# `pagedbench serve` on loopback: 40 streamed completions at concurrency 8 and 20 streamed
# chats, with the sim executor (OPT-13B at speedup 100) and the cpu executor (tiny-OPT);
# every request must succeed with the output length asked for (the server's usage), and
# aiperf must have read the server's /metrics (vLLM's names).  aiperf goes into a venv
# outside the checkout, ${XDG_CACHE_HOME:-$HOME/.cache}/pagedbench/venv-aiperf (1.2 GB,
# no torch; about 3 min to make here, reused after), and tokenizes with GPT-2's files
# (../shared/data/tokenizers/gpt2, else tests/data/gpt2_subset) laid out as a Hugging
# Face tokenizer folder.  Skips (77; a failure with PAGEDBENCH_NO_SKIP=1) only when pip
# cannot install it.  Label python: nothing of the C is exercised here that cli_serve.sh
# does not run under the sanitizers.
#   bash tests/cli_serve_aiperf.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_serve_aiperf.sh path/to/pagedbench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/skip.sh"
. "$ROOT/tests/serve/lib.sh"
command -v python3 >/dev/null || pb_skip "python3 not installed"
V=${XDG_CACHE_HOME:-$HOME/.cache}/pagedbench/venv-aiperf
if ! [ -x "$V/bin/aiperf" ]; then
    t0=$(date +%s)
    { python3 -m venv "$V" && "$V/bin/pip" install -q aiperf; } >&2 || pb_skip "pip cannot install aiperf into $V"
    echo "installed aiperf into $V in $(( $(date +%s) - t0 )) s" >&2
fi
T=$(mktemp -d /tmp/pb_cli_aiperf.XXXXXX)
trap 'kill $SERVE_PID 2>/dev/null; rm -rf "$T"' EXIT
SERVE_PID=
G=$ROOT/../shared/data/tokenizers/gpt2
[ -r "$G/encoder.json" ] || G=$ROOT/tests/data/gpt2_subset
mkdir -p "$T/tok"
ln -s "$(cd "$G" && pwd)/encoder.json" "$T/tok/vocab.json"
ln -s "$(cd "$G" && pwd)/vocab.bpe" "$T/tok/merges.txt"
echo '{"tokenizer_class": "GPT2Tokenizer", "model_max_length": 2048}' >"$T/tok/tokenizer_config.json"
echo '{"model_type": "gpt2"}' >"$T/tok/config.json"

run_aiperf() {   # run_aiperf NAME MODEL ENDPOINT COUNT CONC OSL
    local out=$T/$1
    # aiperf's dataset files and its cache go under $T (the trap removes them), not /tmp or ~/.cache
    (cd "$T" && TMPDIR=$T AIPERF_DATASET_MMAP_BASE_PATH=$T AIPERF_DATASET_MMAP_CACHE_DIR=$T/mmap-cache \
        timeout 300 "$V/bin/aiperf" profile --model "$2" --url "http://127.0.0.1:$SERVE_PORT" \
        --endpoint-type "$3" --streaming --tokenizer "$T/tok" --request-count "$4" --concurrency "$5" \
        --synthetic-input-tokens-mean 48 --output-tokens-mean "$6" --extra-inputs ignore_eos:true \
        --use-server-token-count --artifact-dir "$out" --ui-type none >"$out.log" 2>&1) || { bad "$1: aiperf failed: $(tail -20 "$out.log")"; return; }
    local msg
    if msg=$(python3 - "$out/profile_export_aiperf.json" "$out/server_metrics_export.csv" "$4" "$6" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
n, osl = int(sys.argv[3]), float(sys.argv[4])
m = open(sys.argv[2]).read()
ok = (j["request_count"]["avg"] == n and not j["error_summary"] and j["is_complete"] and
      j["usage_completion_tokens"]["min"] == osl and j["usage_completion_tokens"]["max"] == osl and
      "vllm:num_requests_running" in m and "vllm:time_to_first_token_seconds" in m)
print("%d requests, TTFT avg %.1f ms, latency avg %.1f ms (wall, client side)" %
      (j["request_count"]["avg"], j["time_to_first_token"]["avg"], j["request_latency"]["avg"]))
sys.exit(0 if ok else 1)
PY
    ); then ok "$1: $msg"
    else bad "$1: $msg $(tail -5 "$out.log")"; fi
}
t0=$(date +%s)
serve_start "$T/log" experiments/fig12_opt13b_sharegpt.yaml --speedup 100
run_aiperf sim_completions opt-13b completions 40 8 16
run_aiperf sim_chat opt-13b chat 20 4 8
serve_stop INT
[ "$SERVE_RC" -eq 0 ] && ok "sim: exit 0" || bad "sim: rc $SERVE_RC"
serve_start "$T/log" experiments/smoke_cpu_tiny.yaml --executor cpu --system vllm
run_aiperf cpu_completions tiny-opt completions 20 4 8
serve_stop INT
[ "$SERVE_RC" -eq 0 ] && ok "cpu: exit 0" || bad "cpu: rc $SERVE_RC"
echo "cli_serve_aiperf: $pass passed, $fail failed in $(( $(date +%s) - t0 )) s" >&2
[ $fail -eq 0 ]
