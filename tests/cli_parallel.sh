#!/usr/bin/env bash
# cli_parallel.sh -- the README's GNU parallel recipe, run locally: shards of a sweep
# started by `parallel` (sshlogin ":" is this machine, so no ssh is needed; the recipe
# names real hosts instead) into one shared results folder, then `pagedbench merge`;
# the merged fig14 CSV, JSON and report must equal a single-host run byte for byte, and
# a second pass of the same command must reuse every point (resume).
# Exit 77 when GNU parallel is not installed (apt-get install parallel).
#   bash tests/cli_parallel.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_parallel.sh path/to/pagedbench}
PB=$(cd "$(dirname "$PB")" && pwd)/$(basename "$PB")
. "$(dirname "$0")/skip.sh"
command -v parallel >/dev/null || pb_skip "GNU parallel not installed (apt-get install parallel)"
parallel --version 2>/dev/null | grep -q "GNU parallel" || pb_skip "'parallel' is not GNU parallel"
T=$(mktemp -d /tmp/pb_cli_parallel.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }
SET=(--quick --set workload.duration_s=60)
N=4

"$PB" run --figure fig14 "${SET[@]}" --jobs 2 --quiet --results "$T/single" >"$T/single.out" 2>"$T/single.err" ||
    bad "single-host run failed: $(tail -n 3 "$T/single.err")"

# the recipe, with ":" (this machine) for the ssh hosts
shards() {
    parallel --will-cite --sshlogin 2/: --workdir "$PWD" --halt now,fail=1 \
        "$PB" run --figure fig14 "${SET[@]}" --shard {}/$N --results "$T/shared" --quiet --no-report ::: $(seq $N)
}
shards >/dev/null 2>"$T/par.err" && ok "parallel ran $N shards" || bad "parallel failed: $(tail -n 3 "$T/par.err")"
[ "$(grep -c "shard [1-$N]/$N done" "$T/par.err")" = "$N" ] && ok "every shard reported done" || bad "shard reports: $(grep -c done "$T/par.err")"
if "$PB" merge --figure fig14 "${SET[@]}" "$T/shared" >"$T/merged.out" 2>"$T/merged.err"; then
    same=1
    for f in fig14.csv fig14.json fig14_report.md; do
        cmp -s "$T/single/$f" "$T/shared/$f" || { same=0; bad "$f differs"; }
    done
    cmp -s "$T/single.out" "$T/merged.out" || { same=0; bad "printed report differs"; }
    [ "$same" = 1 ] && ok "parallel shards + merge == single host (csv, json, report)"
else
    bad "merge failed: $(tail -n 3 "$T/merged.err")"
fi
shards >/dev/null 2>"$T/par2.err"
[ "$(grep -c ': 0 points computed,' "$T/par2.err")" = "$N" ] && ok "rerun: every shard reuses its points" ||
    bad "rerun recomputed: $(grep computed "$T/par2.err" | head -n 2)"

echo "cli_parallel: $pass passed, $fail failed" >&2
[ "$fail" = 0 ]
