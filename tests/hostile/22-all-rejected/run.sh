# Every request rejected: the CSV's latencies are empty (undefined), complete is 0, the run
# exits 1 -- and 0 with --allow-rejected (or `allow_rejected: true`).
PB=$1
"$PB" run t.yaml --results R --quiet --no-report 2>err.txt; rc=$?
head -2 R/h.csv
cat err.txt
[ $rc = 1 ] || { echo "FAIL: exit $rc, want 1"; exit 1; }
[ "$(sed -n 2p R/h.csv | cut -d, -f1-5)" = "vllm,0,20,," ] || { echo "FAIL: row $(sed -n 2p R/h.csv)"; exit 1; }
grep -q "Check complete: FAIL (0 of 20 requests finished, 20 rejected" R/points/h/*.pt || { echo "FAIL: no complete FAIL"; exit 1; }
"$PB" run t.yaml --results R --quiet --no-report --allow-rejected 2>/dev/null || { echo "FAIL: --allow-rejected"; exit 1; }
echo 'allow_rejected: true' >>t.yaml
"$PB" run t.yaml --results R --quiet --no-report 2>/dev/null || { echo "FAIL: allow_rejected: true"; exit 1; }
echo "undefined metrics empty, complete 0, exit 1 unless allowed"
