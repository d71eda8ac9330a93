#!/usr/bin/env bash
# cli_shard.sh -- sharded sweeps equal single-host ones, byte for byte.
#   fig12 and fig14 (--quick, 1-minute traces): `run --shard I/3` into three folders
#   (as on three hosts) plus `merge` gives the CSV, JSON sidecar, report file and
#   printed report of a single-host `run`; so do three shards run at once into ONE
#   folder (a shared filesystem; they must not write the CSV), then `merge` there.
#   --list-points: the shards' lists partition the full list; a point's id does not
#   change when the sweep is cut with --set sweep.0.values=[x] (same key, same file).
#   A missing shard: merge exits 1 naming the missing points and writes no CSV.
#   Editing an input file (a trace) changes the points' keys: nothing stale is reused.
#   bash tests/cli_shard.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_shard.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_shard.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }
SET=(--quick --set workload.duration_s=60)

same_outputs() {   # same_outputs NAME DIR_A DIR_B OUT_A OUT_B: the four outputs agree byte for byte
    local f d=1
    for f in "$1.csv" "$1.json" "$1_report.md"; do
        cmp -s "$2/$f" "$3/$f" || { d=0; bad "$1: $f differs ($(cmp "$2/$f" "$3/$f" 2>&1 | head -n 1))"; }
    done
    cmp -s "$4" "$5" || { d=0; bad "$1: the printed report differs"; }
    [ "$d" = 1 ]
}
same_but_folder() {   # the same, except that a report without paper data names its CSV's folder
    local f d=1
    for f in "$1.csv" "$1.json"; do cmp -s "$2/$f" "$3/$f" || { d=0; bad "$1: $f differs"; }; done
    for f in "$2/$1_report.md:$3/$1_report.md" "$4:$5"; do
        cmp -s <(sed "s#$2#DIR#g" "${f%%:*}") <(sed "s#$3#DIR#g" "${f#*:}") || { d=0; bad "$1: ${f%%:*} differs"; }
    done
    [ "$d" = 1 ]
}

for fig in fig12 fig14; do
    mkdir -p "$T/$fig"
    "$PB" run --figure "$fig" "${SET[@]}" --jobs 2 --quiet --results "$T/$fig/single" >"$T/$fig/single.out" 2>"$T/$fig/single.err" ||
        bad "$fig single-host run failed: $(tail -n 3 "$T/$fig/single.err")"
    rows=$(($(wc -l <"$T/$fig/single/$fig.csv") - 1))
    [ "$rows" -gt 20 ] && ok "$fig single host: $rows rows" || bad "$fig: only $rows rows"

    # three hosts, three folders
    for i in 1 2 3; do
        "$PB" run --figure "$fig" "${SET[@]}" --shard "$i/3" --quiet --results "$T/$fig/s$i" >"$T/$fig/s$i.out" 2>"$T/$fig/s$i.err" ||
            bad "$fig shard $i/3 failed: $(tail -n 3 "$T/$fig/s$i.err")"
        [ ! -e "$T/$fig/s$i/$fig.csv" ] && [ ! -e "$T/$fig/s$i/$fig.json" ] || bad "$fig shard $i wrote the figure's outputs"
    done
    n1=$(ls "$T/$fig/s1/points"/*/*.pt | wc -l); n2=$(ls "$T/$fig/s2/points"/*/*.pt | wc -l); n3=$(ls "$T/$fig/s3/points"/*/*.pt | wc -l)
    [ $((n1 + n2 + n3)) = "$rows" ] && [ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] && [ "$n3" -gt 0 ] &&
        ok "$fig: shards computed $n1 + $n2 + $n3 = $rows points, none twice" || bad "$fig: shard points $n1 + $n2 + $n3 != $rows"
    if "$PB" merge --figure "$fig" "${SET[@]}" "$T/$fig/s1" "$T/$fig/s2" "$T/$fig/s3" --results "$T/$fig/merged" \
        >"$T/$fig/merged.out" 2>"$T/$fig/merged.err"; then
        same_outputs "$fig" "$T/$fig/single" "$T/$fig/merged" "$T/$fig/single.out" "$T/$fig/merged.out" &&
            ok "$fig: 3 shards in 3 folders + merge == single host (csv, json, report)"
    else
        bad "$fig merge failed: $(tail -n 3 "$T/$fig/merged.err")"
    fi

    # three shards at once into one shared folder
    for i in 1 2 3; do
        "$PB" run --figure "$fig" "${SET[@]}" --shard "$i/3" --quiet --results "$T/$fig/shared" >/dev/null 2>"$T/$fig/sh$i.err" &
    done
    wait
    [ ! -e "$T/$fig/shared/$fig.csv" ] && ok "$fig: concurrent shards wrote no CSV" || bad "$fig: a shard wrote the CSV"
    ls "$T/$fig/shared/points"/*/*.tmp.* >/dev/null 2>&1 && bad "$fig: temporaries left behind"
    if "$PB" merge --figure "$fig" "${SET[@]}" "$T/$fig/shared" >"$T/$fig/shared.out" 2>"$T/$fig/shared.err"; then
        same_outputs "$fig" "$T/$fig/single" "$T/$fig/shared" "$T/$fig/single.out" "$T/$fig/shared.out" &&
            ok "$fig: 3 concurrent shards in one folder + merge == single host"
    else
        bad "$fig shared merge failed: $(tail -n 3 "$T/$fig/shared.err")"
    fi
done

# a real executor (the tiny model on the cpu executor, fixed step latency) shards the same way
Y=experiments/smoke_cpu_tiny.yaml
"$PB" run "$Y" --quiet --results "$T/cpu1" >"$T/cpu1.out" 2>/dev/null || bad "cpu executor single run failed"
for i in 1 2; do "$PB" run "$Y" --shard "$i/2" --quiet --results "$T/cpu2" >/dev/null 2>&1 || bad "cpu shard $i failed"; done
"$PB" merge "$Y" "$T/cpu2" >"$T/cpu2.out" 2>/dev/null || bad "cpu executor merge failed"
same_but_folder smoke_cpu_tiny "$T/cpu1" "$T/cpu2" "$T/cpu1.out" "$T/cpu2.out" &&
    ok "cpu executor (real model): 2 shards + merge == single host"

# --list-points: shards partition the grid
"$PB" run --figure fig14 "${SET[@]}" --list-points 2>/dev/null | cut -f1 | sort >"$T/all.ids"
for i in 1 2 3 4; do "$PB" run --figure fig14 "${SET[@]}" --list-points --shard "$i/4" 2>/dev/null | cut -f1; done | sort >"$T/shards.ids"
[ -s "$T/all.ids" ] && cmp -s "$T/all.ids" "$T/shards.ids" && ok "--list-points: 4 shards partition the $(wc -l <"$T/all.ids") grid points" ||
    bad "--list-points: shard lists do not partition the full list"
"$PB" run --figure fig14 "${SET[@]}" --list-points 2>/dev/null | awk -F'\t' '$2 < 1 || NF != 5 { bad = 1 } END { exit bad }' &&
    ok "--list-points: id, cost >= 1, shard, unit, label" || bad "--list-points: malformed lines"

# a point's id is the same when the sweep is cut by --set
Y=experiments/fig14_beam2.yaml
"$PB" run "$Y" "${SET[@]}" --set knee.refine=0 --list-points 2>/dev/null | cut -f1 | sort >"$T/full.ids"
cut_ok=1
for r in 0.5 6 18; do   # values --quick keeps (thin: 2)
    "$PB" run "$Y" "${SET[@]}" --set knee.refine=0 --set "sweep.0.values=[$r]" --list-points 2>/dev/null | cut -f1 >"$T/cut.ids"
    # systems without their own sweep: their rate-$r point is the full grid's
    grep -v orca_max "$T/cut.ids" | grep -qv -x -F -f "$T/full.ids" && cut_ok=0
    [ "$(grep -c -v orca_max "$T/cut.ids")" = 3 ] || cut_ok=0
done
[ "$cut_ok" = 1 ] && ok "--set sweep.0.values=[x] gives the full grid's point ids" || bad "cut sweeps get other point ids"
ncut=0
"$PB" run "$Y" "${SET[@]}" --set knee.refine=0 --set "sweep.0.values=[6]" --quiet --results "$T/cut" >/dev/null 2>&1 &&
    ncut=$(ls "$T/cut/points"/*/*.pt | wc -l)
if [ "$ncut" -eq 0 ]; then
    bad "the cut sweep failed or wrote no points"
elif "$PB" run "$Y" "${SET[@]}" --set knee.refine=0 --quiet --results "$T/cut" >/dev/null 2>"$T/cut.err"; then
    grep -q "[0-9] points computed, $ncut reused" "$T/cut.err" && ok "full grid reuses all $ncut points of the cut sweep" ||
        bad "full grid did not reuse the cut sweep's points: $(grep computed "$T/cut.err")"
else
    bad "full grid run after a cut failed"
fi

# a missing shard
rm -rf "$T/fig14/s3"
mkdir -p "$T/fig14/s3"
if "$PB" merge --figure fig14 "${SET[@]}" "$T/fig14/s1" "$T/fig14/s2" "$T/fig14/s3" --results "$T/partial" >/dev/null 2>"$T/partial.err"; then
    bad "merge with a shard missing succeeded"
else
    [ $? = 1 ] && grep -q "missing or unreadable point file (fig14_" "$T/partial.err" && grep -q "point file(s) missing" "$T/partial.err" &&
        [ ! -e "$T/partial/fig14.csv" ] && ok "merge with a shard missing: exit 1, names the points, no CSV" ||
        bad "merge with a shard missing: $(tail -n 2 "$T/partial.err")"
fi

# editing an input file changes the key (no stale reuse)
printf 'arrival_s,prompt_len,output_len\n0,10,5\n0.5,12,6\n' >"$T/trace.csv"
cat >"$T/tr.yaml" <<EOF
name: tr
figure: figtr
model: opt-13b
hardware: a100-40gb
workload: {trace: $T/trace.csv}
columns: [system, normalized_latency]
systems:
  - {name: vllm, label: vLLM, type: vllm}
EOF
"$PB" run "$T/tr.yaml" --quiet --no-report --results "$T/tr" >/dev/null 2>&1 || bad "trace experiment failed"
id1=$("$PB" run "$T/tr.yaml" --list-points 2>/dev/null | cut -f1)
printf '0.9,40,7\n' >>"$T/trace.csv"
id2=$("$PB" run "$T/tr.yaml" --list-points 2>/dev/null | cut -f1)
"$PB" run "$T/tr.yaml" --quiet --no-report --results "$T/tr" >/dev/null 2>"$T/tr.err"
[ -n "$id1" ] && [ "$id1" != "$id2" ] && grep -q "1 points computed, 0 reused" "$T/tr.err" &&
    ok "an edited trace file gives a new key; the point is recomputed" || bad "edited trace: ids $id1 $id2, $(grep computed "$T/tr.err")"

echo "cli_shard: $pass passed, $fail failed" >&2
[ "$fail" = 0 ]
