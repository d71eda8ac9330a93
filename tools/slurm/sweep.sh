#!/usr/bin/env bash
# sweep.sh -- run a pagedbench sweep on a Slurm cluster: one job array (one shard per
# task) and a merge job that starts when every task has succeeded.
#
#   tools/slurm/sweep.sh [options] EXPERIMENT.yaml|FIGURE N [-- run options]
#
#   tools/slurm/sweep.sh experiments/fig12_opt13b_sharegpt.yaml 8
#   tools/slurm/sweep.sh fig14 16 --results /shared/pb/results -- --set workload.duration_s=600
#   tools/slurm/sweep.sh --gpu --sbatch "--partition=gpu --time=4:00:00" my_cuda_sweep.yaml 4
#
# Task I of the array runs `pagedbench run TARGET --shard I/N --results DIR` (a fixed,
# cost-balanced 1/N of the points; point files only), the merge job runs
# `pagedbench merge TARGET DIR` (CSV, JSON, report: byte-identical to a single-host run)
# and, for a figure with a plots/<figure>.gp and gnuplot installed, the plot.
# DIR must be a folder every node sees (a shared filesystem); so must the binary and
# this checkout.  Resubmitting the same sweep reuses every finished point.
#
# Options:
#   --results DIR    results folder, shared by all nodes (default: out, which git ignores)
#   --bin PATH       the pagedbench binary (default: build/release/pagedbench, else build/cpu/..)
#   --jobs J         worker processes per task (default 1; also its --cpus-per-task)
#   --quick          pass --quick to every task and to the merge
#   --gpu            one GPU per task (--gres=gpu:1), for cuda-executor sweeps
#   --gpus K         K GPUs per task (--gres=gpu:K), for `gpus: K` (tensor parallel) sweeps
#   --sbatch ARGS    more sbatch options for both jobs (partition, account, time limit)
#   --name NAME      job name (default pagedbench)
#   --wait           wait for the merge job; exit with its status
# Prints the two job ids ("array <id>", "merge <id>").  Slurm logs: DIR/slurm/.
set -euo pipefail

die() { echo "sweep.sh: $*" >&2; exit 2; }
RESULTS=out BIN= JOBS=1 QUICK=() GRES=() EXTRA=() NAME=pagedbench WAIT=0
while [ $# -gt 0 ]; do
    case "$1" in
        --results) RESULTS=$2; shift ;;
        --bin) BIN=$2; shift ;;
        --jobs) JOBS=$2; shift ;;
        --quick) QUICK=(--quick) ;;
        --gpu) GRES=(--gres=gpu:1) ;;
        --gpus) [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "--gpus needs a positive integer"; GRES=(--gres=gpu:"$2"); shift ;;
        --sbatch) read -r -a more <<<"$2"; EXTRA+=("${more[@]}"); shift ;;
        --name) NAME=$2; shift ;;
        --wait) WAIT=1 ;;
        -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) break ;;
        -*) die "unknown option $1 (try --help)" ;;
        *) break ;;
    esac
    shift
done
[ $# -ge 2 ] || die "usage: sweep.sh [options] EXPERIMENT.yaml|FIGURE N [-- run options]"
TARGET=$1 N=$2
shift 2
[ "${1:-}" = -- ] && shift
RUNARGS=("$@")
[[ "$N" =~ ^[1-9][0-9]*$ ]] || die "N must be a positive integer, not '$N'"
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer"
command -v sbatch >/dev/null || die "sbatch not found (is this a Slurm login node?)"

if [ -z "$BIN" ]; then
    for b in build/release/pagedbench build/cpu/pagedbench build/cuda/pagedbench; do
        [ -x "$b" ] && { BIN=$b; break; }
    done
fi
[ -n "$BIN" ] && [ -x "$BIN" ] || die "no pagedbench binary (build it, or give --bin PATH)"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
case "$TARGET" in
    *.yaml|*.yml) [ -f "$TARGET" ] || die "$TARGET: no such file"
                  TARGET=$(cd "$(dirname "$TARGET")" && pwd)/$(basename "$TARGET"); SEL=("$TARGET"); FIG= ;;
    fig*) SEL=(--figure "$TARGET"); FIG=$TARGET ;;
    *) die "TARGET is an experiment YAML or a figure id (fig12), not '$TARGET'" ;;
esac
mkdir -p "$RESULTS/slurm"
RESULTS=$(cd "$RESULTS" && pwd)

# Check the sweep before queueing anything: a config error fails here, not in N tasks.
"$BIN" run "${SEL[@]}" "${QUICK[@]}" "${RUNARGS[@]}" --check >/dev/null

q() { printf '%q ' "$@"; }
SHARD_CMD="$(q "$BIN" run "${SEL[@]}" "${QUICK[@]}" "${RUNARGS[@]}") --shard \$SLURM_ARRAY_TASK_ID/$N $(q --jobs "$JOBS" --results "$RESULTS" --quiet --no-report)"
MERGE_CMD="$(q "$BIN" merge "${SEL[@]}" "${QUICK[@]}" "${RUNARGS[@]}" "$RESULTS")"
if [ -n "$FIG" ] && [ -f "plots/$FIG.gp" ]; then   # the plot, as run_all.sh draws it
    MERGE_CMD+=" && if command -v gnuplot >/dev/null; then mkdir -p $(q "$RESULTS/plots") && gnuplot -e $(q "data='$RESULTS/$FIG.csv'; out='$RESULTS/plots/$FIG'") $(q "plots/$FIG.gp"); fi"
fi

ARRAY_ID=$(sbatch --parsable --job-name="$NAME" --array=1-"$N" --cpus-per-task="$JOBS" "${GRES[@]}" \
    --chdir="$(pwd)" --output="$RESULTS/slurm/%x-%A_%a.out" "${EXTRA[@]}" --wrap="$SHARD_CMD")
ARRAY_ID=${ARRAY_ID%%;*}
MERGE_ARGS=(--parsable --job-name="$NAME-merge" --dependency=afterok:"$ARRAY_ID" --kill-on-invalid-dep=yes
            --chdir="$(pwd)" --output="$RESULTS/slurm/%x-%j.out" "${EXTRA[@]}")
[ "$WAIT" = 1 ] && MERGE_ARGS+=(--wait)
echo "array $ARRAY_ID ($N tasks: $TARGET)"
rc=0
MERGE_ID=$(sbatch "${MERGE_ARGS[@]}" --wrap="$MERGE_CMD") || rc=$?
echo "merge ${MERGE_ID%%;*}"
exit "$rc"
