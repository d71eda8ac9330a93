#!/usr/bin/env bash
# cli_loadgen.sh -- `pagedbench loadgen` (libcurl, streamed) against `pagedbench serve
# --executor sim --speedup 10` reproduces `pagedbench run` on the same trace (60 ShareGPT
# requests at 4 req/s, vLLM on OPT-13B / A100-40GB, tests/serve/serve_cmp.yaml), within a
# tolerance per metric stated here: mean TPOT and mean e2e latency within 5%; mean TTFT
# within 150 ms of engine time (15 ms of wall time at x10: a new TCP connection, the HTTP
# path and the client's send lateness per request; measured +68 ms here), every request
# answered with its output length; loadgen's own outputs (the per-request CSV with run's
# columns, target and achieved rates); bad arguments exit 2.
#   bash tests/cli_loadgen.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_loadgen.sh path/to/pagedbench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/skip.sh"
. "$ROOT/tests/serve/lib.sh"
command -v python3 >/dev/null || pb_skip "python3 not installed"
T=$(mktemp -d /tmp/pb_cli_loadgen.XXXXXX)
trap 'kill $SERVE_PID 2>/dev/null; rm -rf "$T"' EXIT
SERVE_PID=
"$PB" loadgen --url http://127.0.0.1:1 >/dev/null 2>&1; [ $? -eq 2 ] && ok "no --trace: exit 2" || bad "no --trace"
"$PB" loadgen --url x --trace /nonexistent.csv >/dev/null 2>&1; rc=$?; [ $rc -ne 0 ] && ok "missing trace: exit $rc" || bad "missing trace"
"$PB" trace --dataset sharegpt --rate 4 --num 60 --seed 1 >"$T/trace.csv" 2>/dev/null || bad "trace"
"$PB" run tests/serve/serve_cmp.yaml --set "workload.trace=$T/trace.csv" --requests --results "$T/res" --quiet --no-report \
    >/dev/null 2>"$T/run.err" && ok "run" || bad "run: $(cat "$T/run.err")"
serve_start "$T/log" tests/serve/serve_cmp.yaml --set "workload.trace=$T/trace.csv" --speedup 10
"$PB" loadgen --url "http://127.0.0.1:$SERVE_PORT" --trace "$T/trace.csv" --time-scale 10 --requests "$T/lg.csv" \
    >"$T/lg.out" 2>"$T/lg.err" && ok "loadgen: $(grep -E 'Achieved' "$T/lg.out")" || bad "loadgen: $(cat "$T/lg.err")"
serve_stop INT
[ "$SERVE_RC" -eq 0 ] && ok "serve: exit 0" || bad "serve: rc $SERVE_RC"
grep -q "Target request rate" "$T/lg.out" && ok "target and achieved rates printed" || bad "rates"
if python3 - "$T/res/serve_cmp.requests.csv" "$T/lg.csv" >"$T/cmp" 2>&1 <<'PY'
import csv, statistics, sys
a = list(csv.DictReader(open(sys.argv[1])))
b = list(csv.DictReader(open(sys.argv[2])))
ok = len(a) == len(b) == 60 and all(r["finish_s"] for r in b)
# run's per-request CSV names e2e latency e2el_ms; loadgen's (the engine's writer) e2e_s
for k, ka, kb, sb, tol in (("tpot_ms", "tpot_ms", "tpot_ms", 1, 0.05), ("e2el_ms", "e2el_ms", "e2e_s", 1e3, 0.05),
                           ("ttft_ms", "ttft_ms", "ttft_ms", 1, None)):
    ma = statistics.mean(float(r[ka]) for r in a)
    mb = statistics.mean(float(r[kb]) * sb for r in b)
    good = abs(mb - ma) <= 150 if tol is None else abs(mb / ma - 1) <= tol
    print("%s: run %.4g, loadgen->serve %.4g (%+.1f%%) %s" % (k, ma, mb, 100 * (mb / ma - 1), "ok" if good else "OUT"))
    ok = ok and good
sys.exit(0 if ok else 1)
PY
then ok "loadgen->serve matches run: $(tr '\n' ';' <"$T/cmp")"; else bad "mismatch: $(cat "$T/cmp")"; fi
echo "cli_loadgen: $pass passed, $fail failed" >&2
[ $fail -eq 0 ]
