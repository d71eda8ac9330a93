# lib.sh -- sourced by the serve tests: start and stop `pagedbench serve` on loopback.
#   serve_start LOG ARGS...   starts it on a free port (--port 0), waits for /health (up to
#                             2 min: a sanitizer build checks the YAML's every point first);
#                             sets SERVE_PID and SERVE_PORT (exit 1 if it never answers)
#   serve_stop [SIG]          SIGINT (default) and waits; sets SERVE_RC
#   ok MSG / bad MSG          count a check passed / failed (pass, fail)
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }
serve_start() {
    local log=$1; shift
    "$PB" serve "$@" --port 0 2>"$log" &
    SERVE_PID=$!
    SERVE_PORT=
    for _ in $(seq 1200); do
        SERVE_PORT=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\);.*|\1|p' "$log" | head -1)
        if [ -n "$SERVE_PORT" ] && curl -s -o /dev/null "http://127.0.0.1:$SERVE_PORT/health"; then return 0; fi
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "FAIL: the server did not come up: $(cat "$log")" >&2
    kill "$SERVE_PID" 2>/dev/null
    exit 1
}
serve_stop() {
    kill -"${1:-INT}" "$SERVE_PID" 2>/dev/null
    wait "$SERVE_PID"
    SERVE_RC=$?
}
