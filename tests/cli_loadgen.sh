#!/usr/bin/env bash
# cli_loadgen.sh -- `pagedbench loadgen` (libcurl, streamed) against `pagedbench serve
# --executor sim --speedup 10` reproduces `pagedbench run` of the same workload, within a
# tolerance per metric stated here: mean TPOT and mean E2EL within 5%; mean TTFT within
# 150 ms of engine time (15 ms of wall time at x10: a new TCP connection, the HTTP path and
# the client's send lateness per request; measured +5 to +68 ms here); every request answered.
#   - a trace CSV (60 ShareGPT requests at 4 req/s, tests/serve/serve_cmp.yaml's system):
#     the per-request CSVs of both, side by side;
#   - the workload of a YAML (tests/serve/loadgen_wl.yaml: generated chatbot conversations in
#     a closed loop under max_concurrency 6, a 2 s warm-up): loadgen writes the point's
#     results CSV, JSON and vLLM-layout JSON, and `pagedbench compare` of the two vLLM JSONs
#     passes with --tolerance 5 on TPOT and E2EL; never more than 6 requests outstanding; the
#     warm-up said in the output;
#   - bad input: exit 2 with the reason, nothing written, no request sent.
#   bash tests/cli_loadgen.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_loadgen.sh path/to/pagedbench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/skip.sh"
. "$ROOT/tests/serve/lib.sh"
command -v python3 >/dev/null || pb_skip "python3 not installed"
"$PB" loadgen --help 2>&1 | grep -q "no HTTP support" && pb_skip "built without libcurl (PB_NET=OFF)"
T=$(mktemp -d /tmp/pb_cli_loadgen.XXXXXX)
trap 'kill $SERVE_PID 2>/dev/null; rm -rf "$T"' EXIT
SERVE_PID=

# bad input: exit 2, a reason on stderr, nothing written (the server is not even up)
U=http://127.0.0.1:1
usage() {   # usage WHAT PATTERN ARGS...: exit 2, PATTERN on stderr, $T/none not made
    local what=$1 pat=$2; shift 2
    "$PB" loadgen "$@" >"$T/o" 2>"$T/e"; local rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pat" "$T/e" && [ ! -e "$T/none" ] && [ ! -s "$T/o" ]; then ok "$what: exit 2"
    else bad "$what: rc $rc: $(head -c 300 "$T/e")"; fi
}
usage "no --url" "url is needed" --trace x.csv
usage "no workload" "EXPERIMENT.yaml or --trace" --url $U
usage "--warmup-s -1" "warmup-s" --url $U --trace x.csv --warmup-s -1
usage "--time-scale 0" "time-scale" --url $U --trace x.csv --time-scale 0
usage "unknown option" "unrecognized\|unknown" --url $U --trace x.csv --bogus
usage "--set without a YAML" "need an EXPERIMENT.yaml" --url $U --trace x.csv --set seed=2
usage "missing trace" "nonexistent.csv" --url $U --trace /nonexistent.csv --requests "$T/none"
usage "bad YAML value" "workload.rate: -1 out of range" --url $U tests/serve/loadgen_wl.yaml --set workload.rate=-1 \
    --results "$T/none"
usage "unknown system" "no system 'orca'" --url $U tests/serve/loadgen_wl.yaml --system orca --results "$T/none"

"$PB" trace --dataset sharegpt --rate 4 --num 60 --seed 1 >"$T/trace.csv" 2>/dev/null || bad "trace"
"$PB" run tests/serve/serve_cmp.yaml --set "workload.trace=$T/trace.csv" --requests --results "$T/res" --quiet --no-report \
    >/dev/null 2>"$T/run.err" && ok "run (trace)" || bad "run: $(cat "$T/run.err")"
"$PB" run tests/serve/loadgen_wl.yaml --requests --results "$T/res" --quiet --no-report >/dev/null 2>"$T/run.err" &&
    ok "run (YAML workload)" || bad "run: $(cat "$T/run.err")"
serve_start "$T/log" tests/serve/serve_cmp.yaml --set "workload.trace=$T/trace.csv" --speedup 10
"$PB" loadgen --url "http://127.0.0.1:$SERVE_PORT" --trace "$T/trace.csv" --time-scale 10 --requests "$T/lg.csv" \
    >"$T/lg.out" 2>"$T/lg.err" && ok "loadgen --trace: $(grep -E 'Achieved' "$T/lg.out")" || bad "loadgen: $(cat "$T/lg.err")"
"$PB" loadgen --url "http://127.0.0.1:$SERVE_PORT" tests/serve/loadgen_wl.yaml --time-scale 10 --requests "$T/wl.csv" \
    --results "$T/lgr" >"$T/wl.out" 2>"$T/wl.err" && ok "loadgen YAML: $(grep -E 'Achieved' "$T/wl.out")" ||
    bad "loadgen YAML: $(cat "$T/wl.err")"
serve_stop INT
[ "$SERVE_RC" -eq 0 ] && ok "serve: exit 0" || bad "serve: rc $SERVE_RC"
grep -q "Target request rate" "$T/lg.out" && ok "target and achieved rates printed" || bad "rates"
grep -q "^Warm-up: *requests arriving before 2 s left out" "$T/wl.out" && ok "warm-up said: $(grep '^Warm-up' "$T/wl.out")" ||
    bad "warm-up line: $(cat "$T/wl.out")"
for f in loadgen_wl.csv loadgen_wl.json vllm/loadgen_wl/loadgen_wl-vllm.json; do
    [ -s "$T/lgr/$f" ] && ok "loadgen wrote $f" || bad "no $f"
done
V=vllm/loadgen_wl/loadgen_wl-vllm.json
"$PB" compare "$T/res/$V" "$T/lgr/$V" --metrics mean_tpot_ms,mean_e2el_ms,completed --tolerance 5 >"$T/cmp.out" 2>&1 &&
    ok "compare run vs loadgen->serve (vLLM JSONs): TPOT, E2EL within 5%, same completed" ||
    bad "compare: $(cat "$T/cmp.out")"
"$PB" compare "$T/res/loadgen_wl.csv" "$T/lgr/loadgen_wl.csv" --metrics tpot_mean_ms,e2el_mean_ms --tolerance 5 \
    >"$T/cmp.out" 2>&1 && ok "compare of the results CSVs" || bad "compare CSVs: $(cat "$T/cmp.out")"
if python3 - "$T" >"$T/cmp" 2>&1 <<'PY'
import csv, json, statistics, sys
T = sys.argv[1]
ok = True
def rows(p): return list(csv.DictReader(open(p)))
for name, a, b, n in (("trace", T + "/res/serve_cmp.requests.csv", T + "/lg.csv", 60),
                      ("YAML", T + "/res/loadgen_wl.requests.csv", T + "/wl.csv", 48)):
    a, b = rows(a), rows(b)
    good = len(a) == len(b) == n and all(r["finish_s"] for r in b) and [c for c in a[0] if c not in ("experiment", "system")] == list(b[0])
    print("%s: %d and %d rows, the same columns: %s" % (name, len(a), len(b), good)); ok &= good
    for k, tol in (("tpot_ms", 0.05), ("e2el_ms", 0.05), ("ttft_ms", None)):
        ma = statistics.mean(float(r[k]) for r in a if r[k])
        mb = statistics.mean(float(r[k]) for r in b if r[k])
        good = abs(mb - ma) <= 150 if tol is None else abs(mb / ma - 1) <= tol
        print("%s %s: run %.4g, loadgen->serve %.4g (%+.1f%%) %s" % (name, k, ma, mb, 100 * (mb / ma - 1), "ok" if good else "OUT"))
        ok &= good
# never more than max_concurrency (6) outstanding: sweep the [arrival, finish] intervals
ev = sorted([(float(r["arrival_s"]), 1) for r in rows(T + "/wl.csv")] + [(float(r["finish_s"]), -1) for r in rows(T + "/wl.csv")],
            key=lambda e: (e[0], e[1]))
cur = peak = 0
for _, d in ev: cur += d; peak = max(peak, cur)
print("peak outstanding %d (limit 6)" % peak); ok &= 1 <= peak <= 6
j = json.load(open(T + "/lgr/vllm/loadgen_wl/loadgen_wl-vllm.json"))
good = j.get("backend") == "pagedbench-loadgen" and len(j.get("date", "")) == 15 and j.get("max_concurrency") == 6 and \
       len(j.get("ttfts", [])) == 48
print("vLLM JSON: backend %s, date %s, max_concurrency %s, %d ttfts" % (j.get("backend"), j.get("date"), j.get("max_concurrency"), len(j.get("ttfts", []))))
ok &= good
sys.exit(0 if ok else 1)
PY
then ok "loadgen->serve matches run: $(tr '\n' ';' <"$T/cmp")"; else bad "mismatch: $(cat "$T/cmp")"; fi
echo "cli_loadgen: $pass passed, $fail failed" >&2
[ $fail -eq 0 ]
