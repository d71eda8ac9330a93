#!/usr/bin/env bash
# cli_fast_forward.sh -- the engine's fast path changes no result: the figures
# regenerated with `--set fast_forward=false` (every engine step run one by one, the
# reference) are byte for byte the committed ones.
#   1. every figure's quick CSV (`run --all --quick`, built-in length distributions:
#      PAGEDBENCH_SHARED_DATA at an empty folder) against tests/golden/ -- in every
#      build, sanitizers included, and in a bare clone;
#   2. in an optimized build beside the length data (PAGEDBENCH_SHARED_DATA, else
#      ../shared/data), every figure in full (`run --all`) against results/;
#   3. `bench sim --no-fast-forward` replays nothing fast and serves the same requests.
#   bash tests/cli_fast_forward.sh build/release/pagedbench
set -u
PB=${1:?usage: cli_fast_forward.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_ff.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

# compare DIR PINNED WHAT: each CSV of DIR that PINNED holds, byte for byte; at least MIN of them
compare() {
    local n=0 f b
    for f in "$1"/*.csv; do
        [ -f "$f" ] || continue
        b=$(basename "$f")
        [ -f "$2/$b" ] || continue
        n=$((n + 1))
        cmp -s "$f" "$2/$b" && ok "$3 $b byte-identical" || bad "$3 $b differs: $(cmp "$f" "$2/$b" | head -n 1)"
    done
    [ "$n" -ge "$4" ] && ok "$3: $n CSVs compared" || bad "$3: only $n CSVs compared"
}

mkdir -p "$T/nodata"
t0=$SECONDS
if PAGEDBENCH_SHARED_DATA=$T/nodata "$PB" run --all --quick --fresh --jobs 2 --set fast_forward=false \
    --results "$T/quick" --quiet --no-report >"$T/out" 2>&1; then
    ok "run --all --quick --set fast_forward=false ($((SECONDS - t0)) s)"
else
    bad "run --all --quick --set fast_forward=false failed: $(tail -n 4 "$T/out")"
fi
compare "$T/quick" tests/golden "quick" 14

DATA=${PAGEDBENCH_SHARED_DATA:-../shared/data}
if grep -qs fsanitize "$(dirname "$PB")/CMakeCache.txt"; then
    echo "[--] the full figures are left to the optimized build (sanitizers: about ten times slower)" >&2
elif [ ! -d "$DATA" ]; then
    echo "[--] the full figures need the length data the committed results were made with ($DATA)" >&2
else
    t0=$SECONDS
    if "$PB" run --all --jobs 2 --set fast_forward=false --results "$T/full" --quiet --no-report >"$T/out" 2>&1; then
        ok "run --all --set fast_forward=false ($((SECONDS - t0)) s)"
    else
        bad "run --all --set fast_forward=false failed: $(tail -n 4 "$T/out")"
    fi
    compare "$T/full" results "full" 14
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
