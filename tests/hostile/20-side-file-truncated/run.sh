# A side file cut by half is computed again; the requests CSV keeps every row.
PB=$1
run() { "$PB" run t.yaml --results R --quiet --no-report --requests; }
run 2>/dev/null || { echo "FAIL: the first run"; exit 1; }
cp R/h.requests.csv fresh.csv
side=$(ls R/points/h/vllm-*.req.csv | head -1)
head -c $(( $(wc -c <"$side") / 2 )) "$side" >half && mv half "$side"
out=$(run 2>&1)
if grep -q "$side: checksum mismatch with its point file" <<<"$out" && grep -q "1 points computed, 3 reused" <<<"$out" &&
   cmp -s R/h.requests.csv fresh.csv; then echo "side file recomputed, requests CSV whole ($(wc -l <fresh.csv) lines)"
else echo "FAIL: $out"; exit 1; fi
