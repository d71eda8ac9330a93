#!/usr/bin/env bash
# cli_quick_figure.sh -- the CI smoke figure inside ctest: `pagedbench run --figure fig13
# --quick` (each YAML's quick: settings, 5-minute traces) into a temporary results
# folder; the merged CSV must lead with the figure's columns (dataset,system,
# batched_requests), hold every system of both panels in the paper's order (vLLM >
# Orca Oracle > Pow2 > Max; Max about 7 requests, 15.6K slots / 2048), and the
# paper-vs-ours table must be printed.  Also `run --figure fig18a` (cost model, and our
# kernels when a GPU is usable): 12 source=cost_model rows beside the paper's points.
#   bash tests/cli_quick_figure.sh build/release/pagedbench
set -u
PB=${1:?usage: cli_quick_figure.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_quick.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

if "$PB" run --figure fig13 --quick --jobs 2 --quiet --results "$T/r" >"$T/out" 2>"$T/err"; then
    ok "run --figure fig13 --quick"
else
    bad "run --figure fig13 --quick failed: $(tail -n 6 "$T/err")"
fi
CSV=$T/r/fig13.csv
if [ -f "$CSV" ]; then
    [ "$(head -n 1 "$CSV" | cut -d, -f1-3)" = "dataset,system,batched_requests" ] &&
        ok "fig13.csv leads with dataset,system,batched_requests" || bad "header: $(head -n 1 "$CSV" | cut -c1-80)"
    got=$(awk -F, 'NR > 1 { print $1 "/" $2 }' "$CSV" | sort | tr '\n' ' ')
    want=""
    for d in alpaca sharegpt; do for s in orca_max orca_oracle orca_pow2 vllm; do want="$want$d/$s "; done; done
    [ "$got" = "$want" ] && ok "both panels, four systems" || bad "rows: '$got' want '$want'"
    # the paper's Fig. 13 ordering, per dataset: vLLM batches more requests than Orca
    # (Oracle), which batches more than Orca (Pow2), than Orca (Max); Orca (Max) reserves
    # 2048 slots a request: about 7 fit the KV space of OPT-13B on an A100-40GB (15.6K slots)
    for d in alpaca sharegpt; do
        v() { awk -F, -v d="$d" -v s="$1" '$1 == d && $2 == s { print $3 }' "$CSV"; }
        awk -v a="$(v vllm)" -v b="$(v orca_oracle)" -v c="$(v orca_pow2)" -v m="$(v orca_max)" \
            'BEGIN { exit !(a > b && b > c && c > m && m > 6 && m <= 7.6) }' &&
            ok "$d: vllm $(v vllm) > oracle $(v orca_oracle) > pow2 $(v orca_pow2) > max $(v orca_max) (6-7.6)" ||
            bad "$d: batched requests vllm $(v vllm), oracle $(v orca_oracle), pow2 $(v orca_pow2), max $(v orca_max)"
    done
    grep -q '"quick": true' "$T/r/fig13.json" && ok "sidecar says quick" || bad "sidecar quick flag"
    grep -q "paper vs ours" "$T/out" && ok "paper-vs-ours table printed" || bad "no paper-vs-ours table"
else
    bad "no $CSV"
fi

if "$PB" run --figure fig18a --results "$T/r" >"$T/out18" 2>"$T/err18"; then
    A=$T/r/fig18a.csv
    [ "$(head -n 1 "$A")" = "source,device,kernel,batch,context_len,latency_us,paper_us,vs_paper_pct,overhead_pct" ] &&
        ok "fig18a.csv header" || bad "fig18a header: $(head -n 1 "$A")"
    # 12 cost-model points; latencies positive; paged slower than contiguous (overhead > 0)
    res=$(awk -F, '$1 == "cost_model" { n++; if (!($6 > 0 && $7 > 0)) b++; if ($3 == "vllm" && !($9 > 0)) b++ }
                   END { print n + 0, b + 0 }' "$A")
    [ "$res" = "12 0" ] && ok "12 cost_model rows, paged overhead > 0" || bad "fig18a rows (n, bad) = $res"
    grep -q "CALIBRATION CHECK" "$T/out18" && ok "fig18a report says calibration check" || bad "fig18a report label"
    if grep -q "GPU measurement SKIP" "$T/err18"; then
        echo "[skip] fig18a GPU half: no usable CUDA device ($(grep -o 'SKIP.*' "$T/err18"))" >&2
    else
        [ "$(grep -c '^gpu,' "$A")" = 12 ] && ok "12 gpu rows" || bad "GPU measured but $(grep -c '^gpu,' "$A") gpu rows"
    fi
else
    bad "run --figure fig18a failed: $(tail -n 4 "$T/err18")"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
