#!/usr/bin/env bash
# cli_slurm.sh -- a sharded sweep through a real Slurm: a one-node cluster on localhost.
#
# Brings up munged (a generated key), slurmctld and slurmd (a generated slurm.conf: one
# node, 127.0.0.1, free ports, every file in a temp dir), then
#   tools/slurm/sweep.sh --quick --wait fig12 4   -- a job array of 4 shards and a merge
#                                                   job that depends on it (afterok)
# and checks the merged fig12.csv, .json and _report.md are byte-identical to a
# single-host `pagedbench run --figure fig12 --quick` (and the plot, when gnuplot is
# installed), that every array task ran its shard and no task wrote the CSV.  The
# daemons are stopped at the end (trap), whatever happens.
# Exit 77 (skipped) with the reason when Slurm cannot run here: not root (slurmd starts
# jobs as their user), slurm-wlm / munge not installed (CI installs them: run_all.sh
# need_pkgs), or the daemons do not come up (the log tail is printed).
#   bash tests/cli_slurm.sh build/cpu/pagedbench        (from the repository root)
set -u
PB=${1:?usage: cli_slurm.sh path/to/pagedbench}
PB=$(cd "$(dirname "$PB")" && pwd)/$(basename "$PB")
. "$(dirname "$0")/skip.sh"
skip() { pb_skip "$@"; }
[ "$(id -u)" = 0 ] || skip "slurmd must run as root to start jobs; run the tests as root (as CI does)"
for c in munged slurmctld slurmd sbatch sinfo; do
    command -v "$c" >/dev/null || skip "$c not installed (apt-get install slurm-wlm munge)"
done

T=$(mktemp -d /tmp/pb_slurm.XXXXXX)
chmod 755 "$T"
stop() {
    local p pid
    if [ -s "$T/slurmctld.pid" ]; then   # jobs first, so no job step outlives the test
        scancel --name=pbtest 2>/dev/null
        scancel --name=pbtest-merge 2>/dev/null
    fi
    for p in slurmd slurmctld munged; do
        [ -s "$T/$p.pid" ] || continue
        pid=$(cat "$T/$p.pid")
        kill "$pid" 2>/dev/null || continue
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
    rm -rf "$T"
}
trap stop EXIT
logs() { local f; for f in "$T"/*.log; do echo "--- $f" >&2; tail -n 8 "$f" >&2; done; }

pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

# ---- munge: a fresh key, our own socket ----
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 2>/dev/null
chmod 600 "$T/munge.key"
munged --key-file="$T/munge.key" --socket="$T/munge.sock" --pid-file="$T/munged.pid" \
    --log-file="$T/munged.log" --seed-file="$T/munged.seed" --force 2>"$T/munged.err" ||
    { cat "$T/munged.err" >&2; skip "munged does not start here"; }

# ---- slurm.conf: one node on loopback, two free ports ----
free_port() {   # a port nothing listens on, from $1 upwards
    local p=$1
    while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
    echo "$p"
}
P1=$(free_port $((20000 + RANDOM % 20000)))
P2=$(free_port $((P1 + 1)))
H=$(hostname -s)
mkdir -p "$T/state" "$T/spool"
: >"$T/plugstack.conf"
cat >"$T/slurm.conf" <<EOF
ClusterName=pbtest
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$P1
SlurmdPort=$P2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge.sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
PlugStackConfig=$T/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName=$H NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=pbtest Nodes=$H Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$T/slurm.conf
slurmctld -f "$SLURM_CONF" 2>>"$T/slurmctld.log" || { logs; skip "slurmctld does not start here"; }
slurmd -f "$SLURM_CONF" 2>>"$T/slurmd.log" || { logs; skip "slurmd does not start here"; }
up=0
for _ in $(seq 120); do   # hang guard, not a timing: the node normally is idle within seconds
    [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && { up=1; break; }
    sleep 0.5
done
[ "$up" = 1 ] || { logs; skip "the Slurm node did not come up (state '$(sinfo -h -o %t 2>&1)')"; }
ok "one-node Slurm up on 127.0.0.1:$P1/$P2 ($(sinfo -h -o '%P %D %t'))"

# ---- the sweep: single host, then array + merge ----
"$PB" run --figure fig12 --quick --jobs 2 --quiet --results "$T/single" >"$T/single.out" 2>"$T/single.err" ||
    bad "single-host run failed: $(tail -n 3 "$T/single.err")"
if bash tools/slurm/sweep.sh --bin "$PB" --results "$T/cluster" --quick --wait --name pbtest fig12 4 >"$T/sweep.out" 2>"$T/sweep.err"; then
    ok "sweep.sh: $(tr '\n' ' ' <"$T/sweep.out")"
else
    bad "sweep.sh or its merge job failed: $(tail -n 3 "$T/sweep.err"; cat "$T/cluster/slurm/"*merge* 2>/dev/null | tail -n 5)"
    logs
fi
ntask=$(grep -l "shard [1-4]/4 done" "$T/cluster/slurm/pbtest-"*_*.out 2>/dev/null | wc -l)
[ "$ntask" = 4 ] && ok "4 array tasks each ran their shard" || bad "$ntask of 4 array tasks ran their shard"
grep -l "wrote .*fig12.csv" "$T/cluster/slurm/pbtest-"*_*.out >/dev/null 2>&1 && bad "an array task wrote the CSV"
grep -q "wrote .*fig12.csv" "$T/cluster/slurm/pbtest-merge-"*.out 2>/dev/null && ok "the merge job wrote fig12.csv" ||
    bad "merge job log: $(tail -n 3 "$T/cluster/slurm/pbtest-merge-"*.out 2>/dev/null)"
same=1
for f in fig12.csv fig12.json fig12_report.md; do
    cmp -s "$T/single/$f" "$T/cluster/$f" || { same=0; bad "$f differs from the single-host run"; }
done
[ "$same" = 1 ] && ok "array + merge == single host, byte for byte (csv, json, report)"
if command -v gnuplot >/dev/null; then
    mkdir -p "$T/single/plots"
    gnuplot -e "data='$T/single/fig12.csv'; out='$T/single/plots/fig12'" plots/fig12.gp 2>/dev/null
    cmp -s "$T/single/plots/fig12.png" "$T/cluster/plots/fig12.png" && ok "the plot (png) is the same" || bad "plots differ"
fi

echo "cli_slurm: $pass passed, $fail failed" >&2
[ "$fail" = 0 ]
