#!/usr/bin/env bash
# cli_serve_openai.sh -- the official `openai` Python package (completions and chat,
# streamed and not, its error classes) against `pagedbench serve` on loopback, with the
# sim executor (OPT-13B at speedup 100) and the cpu executor (tiny-OPT computing every
# step).  The package goes into a venv outside the checkout,
# ${XDG_CACHE_HOME:-$HOME/.cache}/pagedbench/venv-openai, made on first use and reused;
# skips (77; a failure with PAGEDBENCH_NO_SKIP=1) only when pip cannot install it.
#   bash tests/cli_serve_openai.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_serve_openai.sh path/to/pagedbench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/skip.sh"
. "$ROOT/tests/serve/lib.sh"
command -v python3 >/dev/null || pb_skip "python3 not installed"
V=${XDG_CACHE_HOME:-$HOME/.cache}/pagedbench/venv-openai
if ! "$V/bin/python" -c 'import openai' 2>/dev/null; then
    t0=$(date +%s)
    { python3 -m venv "$V" && "$V/bin/pip" install -q openai; } >&2 || pb_skip "pip cannot install openai into $V"
    echo "installed openai into $V in $(( $(date +%s) - t0 )) s" >&2
fi
T=$(mktemp -d /tmp/pb_cli_openai.XXXXXX)
trap 'kill $SERVE_PID 2>/dev/null; rm -rf "$T"' EXIT
SERVE_PID=
for ex in sim cpu; do
    if [ $ex = sim ]; then serve_start "$T/log" experiments/fig12_opt13b_sharegpt.yaml --speedup 100 --api-key k1; model=opt-13b; mt=8
    else serve_start "$T/log" experiments/smoke_cpu_tiny.yaml --executor cpu --system vllm --api-key k1; model=tiny-opt; mt=4; fi
    if "$V/bin/python" "$ROOT/tests/serve/openai_client.py" "http://127.0.0.1:$SERVE_PORT/v1" k1 $model $mt >"$T/out" 2>&1; then
        ok "$ex: $(tail -1 "$T/out")"
    else bad "$ex: $(cat "$T/out")"; fi
    serve_stop INT
    [ "$SERVE_RC" -eq 0 ] && grep -q "KV check ok" "$T/log" && ok "$ex: SIGINT exit 0, KV all back" || bad "$ex: rc $SERVE_RC $(tail -2 "$T/log")"
done
echo "cli_serve_openai: $pass passed, $fail failed" >&2
[ $fail -eq 0 ]
