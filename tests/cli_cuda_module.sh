#!/usr/bin/env bash
# cli_cuda_module.sh -- in a CUDA build the binary links no CUDA library and loads the
# CUDA module (libpbcuda_exec.so beside it) only on first use; a missing module is a
# clear SKIP, not a crash; the module does not link CUPTI (the GPU timer opens it at run
# time and falls back to CUDA events); a simulation never loads it (the dynamic loader's log).
# Skipped (77; a failure with PAGEDBENCH_NO_SKIP=1) in a build without CUDA (no module there).
#   bash tests/cli_cuda_module.sh build/cuda/pagedbench
set -u
PB=${1:?usage: cli_cuda_module.sh path/to/pagedbench}
MOD=$(dirname "$PB")/libpbcuda_exec.so
. "$(dirname "$0")/skip.sh"
[ -f "$MOD" ] || pb_skip "no CUDA module beside $PB (a build without CUDA: no nvcc?)"
command -v ldd >/dev/null || pb_skip "no ldd"
fail=0 pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1" >&2; fail=$((fail+1)); fi; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

libs=$(ldd "$PB")
check "the binary links no CUDA library" "! echo \"\$libs\" | grep -Eq 'libcudart|libcublas|libcupti|libnccl'"
check "the module links the CUDA runtime" "ldd \"$MOD\" | grep -q libcudart"
# CUPTI is opened by the timer at run time: an unloadable libcupti must not stop the module
check "the module does not link CUPTI" "! ldd \"$MOD\" | grep -q libcupti"
# the toolkit's library folder (where the build found cudart) is in its rpath, so a loader
# that is not told about that folder still finds cudart (tools/gpu/rehearse.sh, step 3)
cudart=$(sed -n 's/^CUDA_cudart_LIBRARY:FILEPATH=//p' "$(dirname "$PB")/CMakeCache.txt" 2>/dev/null)
if [ -n "$cudart" ] && command -v readelf >/dev/null; then
    check "the module's rpath names $(dirname "$cudart")" \
        "readelf -d \"$MOD\" | grep -E 'R(UN)?PATH' | grep -qF \"$(dirname "$cudart")\""
fi
# a simulation never loads the module: the dynamic loader's own log (LD_DEBUG=libs) of a
# whole run names every library it loads, dlopen'ed ones included
LD_DEBUG=libs LD_DEBUG_OUTPUT="$tmp/ld" "$PB" bench sim --csv >/dev/null 2>&1
check "the loader log of a simulation exists" "ls \"$tmp\"/ld.* >/dev/null 2>&1"
check "a simulation does not load the CUDA module" "! cat \"$tmp\"/ld.* | grep -q libpbcuda_exec"
rm -f "$tmp"/ld.*
# module absent: the cuda executor is unavailable, with the loader's reason
out=$(PAGEDBENCH_CUDA_MODULE="$tmp/none.so" "$PB" profile --out "$tmp/p.csv" 2>&1); rc=$?
check "missing module: profile exits 77" "[ $rc = 77 ]"
check "missing module: the reason names it" "echo \"\$out\" | grep -q 'no CUDA module $tmp/none.so'"
# module present: 0 with a GPU, 77 without one -- never a crash or a load failure
out=$(LD_DEBUG=libs LD_DEBUG_OUTPUT="$tmp/ld" "$PB" profile --model tiny-opt --kv-gib 0.01 --out "$tmp/p.csv" \
    --batches 1 --contexts 16 --prefill 16 --prompt-len 16 --reps 1 --warmup 0 2>&1); rc=$?
check "module present: profile exits 0 or 77 (got $rc)" "[ $rc = 0 ] || [ $rc = 77 ]"
check "module present: it loaded" "! echo \"\$out\" | grep -Eq 'cannot load the CUDA module|stale module'"
check "module present: the loader log names it (the log would show a load)" "cat \"$tmp\"/ld.* | grep -q libpbcuda_exec"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
