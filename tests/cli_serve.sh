#!/usr/bin/env bash
# cli_serve.sh -- `pagedbench serve` end to end on loopback, with curl and Python's
# standard library (tests/serve/faults.py): answers, streaming, errors, clients that
# vanish (their KV freed at once), a slow reader, a burst of 2,000 concurrent
# connections, /metrics; the API key (401), the waiting limit (429), a drain on SIGTERM
# that finishes the request in flight, SIGINT exit 0 with every KV block returned;
# bad command lines and configs exit 2 before listening.  Under a sanitizer build
# LeakSanitizer checks the server's exit.
#   bash tests/cli_serve.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_serve.sh path/to/pagedbench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/skip.sh"
. "$ROOT/tests/serve/lib.sh"
command -v python3 >/dev/null || pb_skip "python3 not installed"
command -v curl >/dev/null || pb_skip "curl not installed"
T=$(mktemp -d /tmp/pb_cli_serve.XXXXXX)
trap 'kill $SERVE_PID 2>/dev/null; rm -rf "$T"' EXIT
SERVE_PID=
CFG=experiments/fig12_opt13b_sharegpt.yaml
ulimit -n 8192 2>/dev/null || true
BURST=2000
[ "$(ulimit -n)" -ge 4200 ] || BURST=$(( ($(ulimit -n) - 200) / 2 ))

# bad command lines and configs: exit 2, nothing listens
"$PB" serve "$CFG" --executor gpu >/dev/null 2>"$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "expected sim, cpu or cuda" "$T/e" && ok "--executor gpu: exit 2" || bad "--executor gpu: rc $rc $(cat "$T/e")"
"$PB" serve "$CFG" --speedup 0 >/dev/null 2>"$T/e"; rc=$?
[ $rc -eq 2 ] && ok "--speedup 0: exit 2" || bad "--speedup 0: rc $rc"
"$PB" serve "$CFG" --set seed=x >/dev/null 2>"$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "seed" "$T/e" && ok "bad --set: exit 2 ($(head -1 "$T/e"))" || bad "bad --set: rc $rc $(cat "$T/e")"
"$PB" serve "$CFG" --system nope >/dev/null 2>"$T/e"; rc=$?
[ $rc -eq 2 ] && ok "unknown system: exit 2" || bad "unknown system: rc $rc"
"$PB" serve --help | grep -q "Tokens\." && ok "--help states the tokenization" || bad "--help"

# the answers and faults
serve_start "$T/log" "$CFG" --speedup 100
if timeout 300 python3 "$ROOT/tests/serve/faults.py" "$SERVE_PORT" "$BURST" opt-13b 2>"$T/py" >"$T/pyout"; then
    ok "faults.py: $(tail -2 "$T/pyout" | head -1)"
else bad "faults.py: $(cat "$T/py" "$T/pyout")"; fi
serve_stop INT
[ "$SERVE_RC" -eq 0 ] && grep -q "KV check ok (every block returned)" "$T/log" && ok "SIGINT: exit 0, every KV block returned" \
    || bad "SIGINT: rc $SERVE_RC $(tail -3 "$T/log")"

# API key, waiting limit, drain on SIGTERM (speedup 0.05: a step sleeps ~0.5 s)
serve_start "$T/log2" "$CFG" --speedup 0.05 --max-waiting 1 --api-key sekret
U=http://127.0.0.1:$SERVE_PORT
c=$(curl -s -o /dev/null -w '%{http_code}' "$U/v1/models"); [ "$c" = 401 ] && ok "no key: 401" || bad "no key: $c"
c=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong' "$U/v1/models"); [ "$c" = 401 ] && ok "wrong key: 401" || bad "wrong key: $c"
c=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sekret' "$U/v1/models"); [ "$c" = 200 ] && ok "key: 200" || bad "key: $c"
B='{"model":"opt-13b","prompt":"x","max_tokens":2}'
curl -s -o "$T/a1" -w '%{http_code}' -H 'Authorization: Bearer sekret' -d "$B" "$U/v1/completions" >"$T/c1" &
p1=$!
for _ in $(seq 100); do curl -s "$U/metrics" | grep -q '^vllm:num_requests_running{.*} 1' && break; sleep 0.05; done
curl -s -o "$T/a2" -w '%{http_code}' -H 'Authorization: Bearer sekret' -d "$B" "$U/v1/completions" >"$T/c2" &
p2=$!
sleep 0.2
c=$(curl -s -o "$T/a3" -w '%{http_code}' -H 'Authorization: Bearer sekret' -d "$B" "$U/v1/completions")
[ "$c" = 429 ] && grep -q '"code":429' "$T/a3" && ok "beyond --max-waiting 1: 429" || bad "waiting limit: $c $(cat "$T/a3")"
serve_stop TERM
wait $p1 $p2
[ "$(cat "$T/c1")" = 200 ] && [ "$(cat "$T/c2")" = 200 ] && ok "SIGTERM drains: both accepted requests answered 200" \
    || bad "drain: $(cat "$T/c1") $(cat "$T/c2")"
[ "$SERVE_RC" -eq 0 ] && grep -q "2 finished" "$T/log2" && ok "SIGTERM: exit 0" || bad "SIGTERM: rc $SERVE_RC $(tail -2 "$T/log2")"

echo "cli_serve: $pass passed, $fail failed" >&2
[ $fail -eq 0 ]
