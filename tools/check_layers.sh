#!/usr/bin/env bash
# check_layers.sh [SRCDIR] -- fail when a source file includes a header of a higher layer.
#
# The layers, lowest first (README.md "Architecture"); a file may include its own layer
# and any layer below it, never one above:
#   0 engine/base        status and errors, RNG, the YAML tree and schema, trace records
#   1 engine             sequences, block manager, scheduler blocks, policies, loop,
#                        metrics, the executor interface, model/hardware specs
#   2 baselines          Orca and FasterTransformer on the engine's interfaces
#   3 kernels            CUDA kernels and their C references
#   4 engine/executors   the cost model; the CPU and CUDA real model over kernels/
#   5 workloads          datasets, arrivals, trace files
#   6 experiments        wiring, system table, runner, reports, commands, policy registry
#   7 bench, tests       benchmarks and tests (test_*.c anywhere count as layer 7)
# Headers are included by bare name ("pb.h"); a name resolves to the one file of that
# name in the tree (two headers with one name are an error: the -I order would decide).
# Prints every upward arrow as `file:line: includes "h" (layer a -> layer b)`; exit 1 if any.
set -u
SRC=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$SRC" || exit 2
LAYERS=(engine/base engine baselines kernels engine/executors workloads experiments "bench tests")

layer_of() {   # path -> layer number (by directory; test_*.c files are tests)
    local f=$1 d i
    case "$(basename "$f")" in test_*.c) echo 7; return ;; esac
    d=$(dirname "$f")
    case "$d" in tests/*) d=tests ;; esac
    for i in "${!LAYERS[@]}"; do
        for l in ${LAYERS[$i]}; do [ "$d" = "$l" ] && { echo "$i"; return; }; done
    done
    echo -1
}

declare -A where layer
files=$(for l in ${LAYERS[*]}; do ls "$l"/*.[ch] "$l"/*.cu "$l"/*.cuh 2>/dev/null; done; \
        find tests -mindepth 2 -name '*.[ch]' 2>/dev/null)
bad=0
for f in $files; do
    n=$(basename "$f")
    case "$n" in *.h|*.cuh)
        if [ -n "${where[$n]:-}" ]; then echo "$f: header name also used by ${where[$n]}"; bad=1; fi
        where[$n]=$f ;;
    esac
    layer[$f]=$(layer_of "$f")
done
for f in $files; do
    lf=${layer[$f]}
    [ "$lf" -lt 0 ] && { echo "$f: not in any layer"; bad=1; continue; }
    while IFS=: read -r ln inc; do
        h=$(sed 's/.*#include "\([^"]*\)".*/\1/' <<<"$inc")
        t=${where[$(basename "$h")]:-}
        [ -z "$t" ] && continue                       # generated or system header
        lt=${layer[$t]}
        if [ "$lt" -gt "$lf" ]; then
            echo "$f:$ln: includes \"$h\" ($t: layer $lt ${LAYERS[$lt]} above layer $lf ${LAYERS[$lf]})"
            bad=1
        fi
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include "' "$f")
done
[ $bad -eq 0 ] && echo "check_layers: $(wc -w <<<"$files") files, no upward include"
exit $bad
