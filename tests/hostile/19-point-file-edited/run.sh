# A point file edited, damaged or extended is computed again (and said so), never read
# into the CSV: each edit of the issue, one at a time, on a finished run.
PB=$1
run() { "$PB" run t.yaml --results R --quiet --no-report; }
run 2>/dev/null || { echo "FAIL: the first run"; exit 1; }
cp R/h.csv fresh.csv
pt=$(ls R/points/h/vllm-*.pt | head -1)
cp "$pt" pt.orig
bad=0
edit() {   # edit WHAT SED-SCRIPT
    cp pt.orig "$pt"
    sed -i "$2" "$pt"
    cmp -s pt.orig "$pt" && { echo "FAIL: $1: the edit changed nothing"; bad=1; return; }
    out=$(run 2>&1)
    if ! grep -q "$pt: checksum mismatch (the file was edited or damaged): computing the point again" <<<"$out" ||
       ! grep -q "1 points computed, 3 reused" <<<"$out" || ! cmp -s R/h.csv fresh.csv; then
        echo "FAIL: $1: $out"; bad=1
    else echo "ok: $1"; fi
}
edit "a metric's value changed" 's/^metric normalized_latency 0\.0/metric normalized_latency 0.9/'
edit "a metric's value made 'abc'" 's/^metric n_finished .*/metric n_finished abc/'
edit "a metric line deleted" '/^metric ttft_mean_ms /d'
edit "a metric line added" '/^point /a metric saving_pct 99'
cp pt.orig "$pt"; head -c 300 pt.orig >"$pt"
out=$(run 2>&1)
grep -q "$pt: no checksum line at its end" <<<"$out" && cmp -s R/h.csv fresh.csv && echo "ok: a file cut short" ||
    { echo "FAIL: cut short: $out"; bad=1; }
[ $bad = 0 ] && echo "all edits recomputed"
exit $bad
