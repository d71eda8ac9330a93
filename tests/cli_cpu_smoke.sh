#!/usr/bin/env bash
# cli_cpu_smoke.sh -- the real engine end to end: experiments/smoke_cpu_tiny.yaml runs
# tiny-OPT on the cpu executor (executor: {type: cpu, fixed_latency_s, kv_slots}) for the
# five systems; every request must finish (none rejected or unfinished), the runs must be
# byte-identical across --jobs, and a bad `executor:` map is a config error (exit 2,
# file:line:col with did-you-mean).
#   bash tests/cli_cpu_smoke.sh build/release/pagedbench
set -u
PB=${1:?usage: cli_cpu_smoke.sh path/to/pagedbench}
YAML=experiments/smoke_cpu_tiny.yaml
T=$(mktemp -d /tmp/pb_cli_cpu.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

if "$PB" run "$YAML" --jobs 2 --results "$T/a" >"$T/a.out" 2>"$T/a.err"; then
    ok "smoke run (jobs 2)"
else
    bad "smoke run failed: $(tail -n 8 "$T/a.err")"
fi
CSV=$T/a/smoke_cpu_tiny.csv
if [ -f "$CSV" ]; then
    # every system: n_requests == n_finished > 0, nothing rejected or unfinished
    res=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { rows++; if (!($c["n_requests"] > 0 && $c["n_finished"] == $c["n_requests"] &&
                        $c["n_rejected"] == 0 && $c["n_unfinished"] == 0)) badr = badr " " $c["system"] }
        END { printf "%d|%s", rows, badr }' "$CSV")
    [ "${res%%|*}" = 5 ] && ok "five systems in the CSV" || bad "rows: ${res%%|*} (want 5)"
    [ -z "${res#*|}" ] && ok "every request finished on every system" || bad "unfinished requests:${res#*|}"
    [ "$(grep -c '^Check complete: PASS' "$T/a.out")" = 5 ] && ok "five 'complete' checks pass" || bad "complete checks"
    grep -q '"device": "cpu: real tiny-OPT' "$T/a/smoke_cpu_tiny.json" && ok "sidecar names the cpu executor" ||
        bad "sidecar executor"
    # the KV cap was applied (768 slots), not the A100 budget
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["kv_slots"] != 768 { exit 1 }' "$CSV" &&
        ok "kv_slots 768 on every system" || bad "kv_slots not applied"
    # the burst makes vLLM preempt (recompute through the real executor), and paging
    # gives it the lowest latency of the five on the same KV space
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { lat[$c["system"]] = $c["normalized_latency"]; if ($c["system"] == "vllm") pr = $c["preempt_recompute"] }
        END { for (s in lat) if (lat[s] < lat["vllm"]) exit 1; exit !(pr > 0) }' "$CSV" &&
        ok "vLLM preempted and has the lowest latency" || bad "vLLM preemption / latency order"
else
    bad "no CSV"
fi

# determinism: a fresh second run gives the same bytes
if "$PB" run "$YAML" --jobs 2 --fresh --quiet --no-report --results "$T/b" >/dev/null 2>"$T/b.err" &&
   cmp -s "$CSV" "$T/b/smoke_cpu_tiny.csv"; then
    ok "two runs are byte-identical"
else
    bad "second run differs or failed: $(tail -n 3 "$T/b.err"; diff "$CSV" "$T/b/smoke_cpu_tiny.csv" | head -4)"
fi

# a typo in the executor map is a config error with its position, nothing written
sed 's/  fixed_latency_s:/  fixed_latency:/' "$YAML" >"$T/typo.yaml"
out=$("$PB" run "$T/typo.yaml" --results "$T/c" 2>&1); rc=$?
if [ "$rc" = 2 ] && grep -qF "typo.yaml:" <<<"$out" && grep -qF "executor.fixed_latency: unknown key" <<<"$out" &&
   grep -qF "did you mean 'fixed_latency_s'" <<<"$out" && [ ! -e "$T/c/smoke_cpu_tiny.csv" ]; then
    ok "executor map typo: exit 2 with file:line:col"
else
    bad "executor map typo (rc $rc): $(head -c 300 <<<"$out")"
fi
out=$("$PB" run "$YAML" --set executor.type=gpu --results "$T/c" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "executor.type" <<<"$out" && ok "bad executor type: exit 2" ||
    bad "bad executor type (rc $rc): $(head -c 300 <<<"$out")"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
