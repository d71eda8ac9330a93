#!/usr/bin/env bash
# check_layers.sh [SRCDIR] -- fail when a source file includes a header of a higher layer.
#
# A layer is a top-level folder; a file may include headers of its own folder and of
# any folder below it, never one above (README.md "Architecture").  Lowest first:
#   0 base          status and errors, RNG, the YAML tree and schema, trace records, copy maps
#   1 kernels       CUDA kernels and their C11 references, kernel benchmarks
#   2 engine        sequences, KV managers, scheduler blocks, policies, loop, metrics,
#                   the executor interface, model/hardware specs
#   3 baselines     Orca and FasterTransformer on the engine's interfaces
#   4 executors     the cost model (sim); the CPU and CUDA real model over kernels/
#   5 workloads     datasets, arrivals, trace files
#   6 experiments   wiring, system table, runner, reports, commands, policy registry
#   7 serve         the OpenAI-compatible server and the load generator (serve, loadgen)
#   8 bench tests   benchmarks and tests (every file under tests/, whatever its subfolder)
# No exceptions: a file's layer is its top-level folder, nothing else.  Headers are
# included by bare name ("pb.h"); a name resolves to the one file of that name in the
# tree (two headers with one name are an error: the -I order would decide).
# Prints every upward arrow as `file:line: includes "h" (layer a -> layer b)`; exit 1 if any.
set -u
SRC=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$SRC" || exit 2
LAYERS=(base kernels engine baselines executors workloads experiments serve "bench tests")

layer_of() {   # path -> layer number (by its top-level folder)
    local top=${1%%/*} i l
    for i in "${!LAYERS[@]}"; do
        for l in ${LAYERS[$i]}; do [ "$top" = "$l" ] && { echo "$i"; return; }; done
    done
    echo -1
}

declare -A where layer
files=$(for l in ${LAYERS[*]}; do find "$l" \( -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \) 2>/dev/null; done | sort)
[ -n "$files" ] || { echo "check_layers: no sources under $SRC" >&2; exit 2; }
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
