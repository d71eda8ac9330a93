#!/usr/bin/env bash
# cli_fast_forward.sh -- the engine's fast path changes no result.  Every figure is
# regenerated with `--set fast_forward=false` (every engine step run one by one, the
# reference) and each results CSV must be byte for byte the committed one; `bench
# sim --no-fast-forward` replays nothing fast and serves the same requests.  The
# committed CSVs were made with ../shared/data's exact length files: without them
# (another dataset source) and under sanitizers (about ten times slower) the test
# instead runs one quick figure -- fig14, beam search, where the fast path does most
# -- both ways and compares them.
#   bash tests/cli_fast_forward.sh build/release/pagedbench
set -u
PB=${1:?usage: cli_fast_forward.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_ff.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

sanitized=0
grep -qs fsanitize "$(dirname "$PB")/CMakeCache.txt" && sanitized=1
if [ "$sanitized" = 0 ] && [ -d ../shared/data ]; then
    t0=$SECONDS
    if "$PB" run --all --jobs 2 --set fast_forward=false --results "$T/off" --quiet --no-report >"$T/out" 2>&1; then
        ok "run --all --set fast_forward=false ($((SECONDS - t0)) s)"
    else
        bad "run --all --set fast_forward=false failed: $(tail -n 4 "$T/out")"
    fi
    n=0
    for f in "$T"/off/*.csv; do
        [ -f "$f" ] || continue
        b=$(basename "$f")
        [ -f "results/$b" ] || continue
        n=$((n + 1))
        cmp -s "$f" "results/$b" && ok "$b byte-identical" || bad "$b differs: $(cmp "$f" "results/$b" | head -n 1)"
    done
    [ "$n" -ge 14 ] && ok "$n committed CSVs compared" || bad "only $n committed CSVs regenerated"
else
    why="sanitizer build"; [ "$sanitized" = 0 ] && why="no ../shared/data"
    for ff in true false; do
        "$PB" run --figure fig14 --quick --jobs 2 --set fast_forward=$ff --results "$T/$ff" --quiet --no-report \
            >"$T/out" 2>&1 || bad "run --figure fig14 --quick --set fast_forward=$ff failed: $(tail -n 4 "$T/out")"
    done
    cmp -s "$T/true/fig14.csv" "$T/false/fig14.csv" && ok "fig14 --quick: fast_forward on and off byte-identical ($why)" \
        || bad "fig14 --quick differs with fast_forward off ($why)"
fi

on=$("$PB" bench sim --quick --csv 2>/dev/null) && off=$("$PB" bench sim --quick --csv --no-fast-forward 2>/dev/null) ||
    bad "bench sim --quick failed"
get() { echo "$1" | awk -F, -v m="$2" '$1 == m { print $2 }'; }
[ "$(get "$off" sim_fast_forwarded_pct)" = 0 ] && ok "bench sim --no-fast-forward replays nothing fast" ||
    bad "bench sim --no-fast-forward: sim_fast_forwarded_pct $(get "$off" sim_fast_forwarded_pct)"
for m in sim_finished_requests simulated_req_throughput; do
    [ -n "$(get "$on" $m)" ] && [ "$(get "$on" $m)" = "$(get "$off" $m)" ] && ok "bench sim $m the same both ways" ||
        bad "bench sim $m: $(get "$on" $m) with the fast path, $(get "$off" $m) without"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
