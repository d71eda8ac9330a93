# Prompts longer than the model's context are dropped for every system alike (and counted);
# `trace --check --model` says so before a run.
PB=$1
"$PB" trace --check trace.csv --model opt-13b 2>&1 | grep "requests have a prompt" || { echo "FAIL: trace --model"; exit 1; }
"$PB" run t.yaml --results R --quiet --no-report 2>err.txt || { echo "FAIL: run: $(cat err.txt)"; exit 1; }
cat R/h.csv
[ "$(cut -d, -f2-6 R/h.csv | sed 1d | sort -u)" = "54,6,54,0,1" ] || { echo "FAIL: not the same admitted set"; exit 1; }
echo "every system ran the same 54 requests"
