#!/usr/bin/env bash
# cli_layers.sh -- the include graph has no upward arrow (tools/check_layers.sh), and the
# check itself fails on a planted one (copies of the tree where engine/ includes a header
# of experiments/ or executors/, kernels/ one of executors/ or engine/, base/ one of engine/).
#   bash tests/cli_layers.sh [pagedbench]   (the binary is not used)
set -u
cd "$(dirname "$0")/.." || exit 2
T=$(mktemp -d /tmp/pb_layers.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

tools/check_layers.sh . >"$T/out" 2>&1 && ok "the tree: $(tail -1 "$T/out")" || { cat "$T/out" >&2; bad "the tree has upward includes"; }

plant() {   # plant FILE HEADER: copy the tree, add `#include "HEADER"` to FILE, expect a failure naming it
    rm -rf "$T/tree"; mkdir -p "$T/tree"
    tar cf - base kernels engine baselines executors workloads experiments bench tests tools | tar xf - -C "$T/tree"
    sed -i "0,/^#include \"/s//#include \"$2\"\n&/" "$T/tree/$1"
    if tools/check_layers.sh "$T/tree" >"$T/p" 2>&1; then bad "planted $1 -> $2 not caught"
    elif grep -q "^$1:[0-9]*: includes \"$2\"" "$T/p"; then ok "planted $1 -> $2 caught: $(grep "^$1" "$T/p")"
    else cat "$T/p" >&2; bad "planted $1 -> $2: failed without naming it"; fi
}
plant engine/scheduler.c runner.h
plant kernels/attention.h model.h
plant kernels/cache_ops.h executor.h
plant engine/engine.c executor_sim.h
plant base/rng.c sequence.h

echo "cli_layers: $pass passed, $fail failed" >&2
[ $fail -eq 0 ]
