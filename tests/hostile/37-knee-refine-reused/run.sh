# A second run reuses every point, the knee refinement's too, and counts them all.
PB=$1
"$PB" run t.yaml --results R --quiet --no-report 2>first.err || { echo "FAIL: first run"; cat first.err; exit 1; }
rows=$(( $(wc -l <R/h.csv) - 1 ))
"$PB" run t.yaml --results R --quiet --no-report 2>second.err || { echo "FAIL: second run"; exit 1; }
cat first.err second.err
[ "$rows" -gt 3 ] || { echo "FAIL: no refinement points ($rows rows)"; exit 1; }
grep -q "0 points computed, $rows reused" second.err || { echo "FAIL: not every point counted reused"; exit 1; }
echo "all $rows points (grid and refinement) counted reused"
