# quick.set is checked on every run, --quick or not, and blamed at its own line.
PB=$1
for q in "" --quick; do
    out=$("$PB" run t.yaml --check $q --results R 2>&1); rc=$?
    echo "$out"
    [ $rc = 2 ] && grep -q "^t.yaml:7:37: bogus: unknown key" <<<"$out" && [ ! -e R ] || { echo "FAIL: run ${q:-without --quick}: exit $rc"; exit 1; }
done
echo "blamed at quick.set.1 with and without --quick"
