# Two runs with side files on one results folder, started 0.3 s apart: both succeed and
# write what one run alone writes.
PB=$1
"$PB" run t.yaml --results alone --quiet --no-report --requests --timeline 2>/dev/null || { echo "FAIL: alone"; exit 1; }
"$PB" run t.yaml --results C --quiet --no-report --requests --timeline 2>a.err & a=$!
sleep 0.3
"$PB" run t.yaml --results C --quiet --no-report --requests --timeline 2>b.err & b=$!
wait $a; ra=$?
wait $b; rb=$?
[ $ra = 0 ] && [ $rb = 0 ] || { echo "FAIL: exit $ra and $rb: $(cat a.err b.err)"; exit 1; }
for f in h.csv h.requests.csv h.timeline.csv; do cmp -s alone/$f C/$f || { echo "FAIL: C/$f differs"; exit 1; }; done
ls C C/points/h | grep -q '\.tmp\.' && { echo "FAIL: temporaries left: $(ls C/points/h | grep tmp)"; exit 1; }
echo "both runs exit 0, outputs identical to one run"
