#!/usr/bin/env bash
# run_gpu.sh -- `./run_all.sh gpu`: build, check, time and profile the GPU half in one
# command, and write its results.  Budget: under 9 minutes on one H100/H200/A100.
#
# With a GPU (nvcc, /dev/nvidia*, and `pagedbench kernels --probe` sees a device):
#   1. configure build/gpu (CUDA for this GPU's architecture only, warnings not errors:
#      the host compiler nvcc reaches there is not one CI tests) with ninja where make is
#      absent, and build only what the run needs (target gpu_run: pagedbench, the CUDA
#      module, the gpu tests); the build's libraries may come from .gpu/debs (deps.sh)
#   2. ctest -L gpu: every kernel against its C reference, the cuBLAS layers, the whole
#      cuda executor against the cpu executor (a skipped test counts as a failure here)
#   3. pagedbench kernels: the Fig. 18a grid; decode attention at 1K..64K tokens of
#      context (64K tokens per call) with % of HBM; paged vs contiguous at block 16 and
#      block 1..256; reshape_and_cache, copy_blocks; swap per block vs batched vs the
#      pinned-memcpy bandwidth; goal verdicts -> kernels.csv, bench/baselines/<dev>.json
#   4. calibration sweeps (kbench.h calib-attn, calib-gemm): paged attention at block
#      1..256 beside the contiguous kernel, batch 8..256 x context 32..2048 (CUPTI), and
#      cuBLAS at OPT-13B's four GEMM shapes, M = 1..512 (CUDA events: CUPTI's span misread
#      some cuBLAS algorithms on an H200) -> calib_attention.csv, calib_gemm.csv
#      (device, driver, CUDA and commit on every row; experiments/calibrate/gpu_sweep.py)
#   5. pagedbench run --figure fig18a: the paper's Fig. 18a points beside ours
#   6. pagedbench profile: OPT-13B shapes, random weights -> profile_opt13b.csv
#   7. pagedbench bench costmodel: the real engine (cuda executor, ShareGPT lengths,
#      RATE req/s Poisson arrivals for DURATION s) and the cost model's prediction of
#      the same run from the hardware spec and from the measured profile -> costmodel_*.csv
# Without a GPU it runs what can run -- the C references (ctest -L kernels), the CUDA
# kernels through the CPU emulator (kernels/emu), ptxas's register / spill / shared-memory
# report against the launchers' assumptions (tools/gpu/ptxas_check.sh, needs nvcc), the
# same grids and sweeps on the C references,
# the profile and the engine-vs-cost-model comparison on the cpu executor (tiny OPT) --
# and prints `SKIP: no GPU (<reason>)` for the rest.
# Everything lands in results/gpu/<device>/ (SUMMARY.md, *.csv, *.log); <device> is the
# GPU's name ("cpu-reference" without one).  steps.tsv and SUMMARY.md are rewritten after
# every step, and on SIGTERM / SIGINT (the step that was cut is named), so a run killed at
# a time limit still says how far it got.  Exit 0, or 1 when any correctness check
# failed (a missed performance goal is reported, not a failure), 2 usage.
#
#   tools/gpu/run_gpu.sh [--bin PATH] [--out DIR] [--tiny] [--cpu] [--jobs N] [--bundle DIR]
#                        [--build-only]
#     --bin PATH  use this pagedbench instead of building (its folder must hold its ctest files)
#     --baselines DIR  where the GPU kernel baseline goes (default bench/baselines)
#     --bundle DIR  after every step also DIR/SUMMARY.md and DIR/gpu-results.tar.gz (the
#                 results folder, the baseline, the build logs): what a GPU machine hands back
#     --build-only  configure and build what the GPU run builds (step 1), whether or not a
#                 GPU is present, and stop (a rehearsal of the build: tools/gpu/README.md)
#     --cpu       take the no-GPU path even when a GPU is present (tests)
#     --out DIR   results folder (default results/gpu/<device>)
#     --tiny      smallest settings, no tests and no emulator (the ctest of this script)
#   env: RATE (default 1 req/s), DURATION (60 s) of the real-engine run on a GPU;
#        BUDGET (540 s, counted from the start): on a GPU every step gets at most what is left of
#        it (and its own cap), a step with under 20 s left is skipped, and the real-engine
#        run is shortened to fit
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BIN="" OUT="" BASELINES=bench/baselines TINY=0 FORCE_CPU=0 JOBS=$(nproc 2>/dev/null || echo 2)
BUNDLE="" BUILD_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) BIN=$2; shift ;;
        --out) OUT=$2; shift ;;
        --baselines) BASELINES=$2; shift ;;
        --bundle) BUNDLE=$2; shift ;;
        --build-only) BUILD_ONLY=1 ;;
        --tiny) TINY=1 ;;
        --cpu) FORCE_CPU=1 ;;
        --jobs) JOBS=$2; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "run_gpu.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
RATE=${RATE:-1}
DURATION=${DURATION:-60}
BUDGET=${BUDGET:-540}
T0=$SECONDS
log() { printf '==> %s\n' "$*" >&2; }
. tools/gpu/deps.sh
pb_gpu_deps "$ROOT" || exit 1
if ! command -v make >/dev/null && command -v ninja >/dev/null && [ -z "${CMAKE_GENERATOR:-}" ]; then
    export CMAKE_GENERATOR=Ninja
fi
if [ -n "$BUNDLE" ]; then mkdir -p "$BUNDLE" && BUNDLE=$(cd "$BUNDLE" && pwd) || exit 2; fi

# ---- steps and the summary, written as the run goes -----------------------------------
STEPS=""                                  # step<TAB>status<TAB>seconds<TAB>detail lines
FAILED=0 MODE="" DEVICE="" HW=- OUT_READY=0 BL="" BUILD_DIR=build/gpu CURRENT="" CHILD=""
capped() {   # capped CAP cmd...: run under timeout: CAP s or what is left of BUDGET
    local cap=$1 left=$((BUDGET - (SECONDS - T0))) rc; shift
    [ $cap -lt $left ] && left=$cap
    [ $left -lt 20 ] && { echo "run_gpu.sh: no time left of BUDGET $BUDGET s" >&2; return 124; }
    # in the background, so that a TERM to this script runs its trap at once (a foreground
    # command would delay it until the command ends); timeout leads its own process group
    timeout --kill-after=10 "$left" "$@" &
    CHILD=$!
    wait "$CHILD"; rc=$?
    CHILD=""
    return $rc
}
n_match() { local n; n=$(grep -c -- "$1" "$2" 2>/dev/null); echo "${n:-0}"; }   # lines of $2 matching $1
n_rows() { [ -f "$1" ] && echo $(($(wc -l <"$1") - 1)) || echo 0; }            # CSV rows below the header
left_s() { echo $((BUDGET - (SECONDS - T0))); }
why_rc() { [ "$1" = 124 ] || [ "$1" = 137 ] && echo "timed out (BUDGET $BUDGET s)" || echo "exit $1"; }
write_summary() {   # steps.tsv + SUMMARY.md in OUT (and the bundle), from what exists now
    [ $OUT_READY = 1 ] || return 0
    printf '%s' "$STEPS" >"$OUT/steps.tsv"
    if bash tools/gpu/summary.sh "$OUT" "$DEVICE" "$MODE" "$((SECONDS - T0))" "$BL" >"$OUT/SUMMARY.md.tmp"; then
        mv "$OUT/SUMMARY.md.tmp" "$OUT/SUMMARY.md"
    else
        echo "run_gpu.sh: cannot write $OUT/SUMMARY.md" >&2; FAILED=1
    fi
    [ -n "$BUNDLE" ] || return 0
    cp "$OUT/SUMMARY.md" "$BUNDLE/SUMMARY.md" 2>/dev/null
    local f files=()
    for f in "$OUT" "$BL" "$BUILD_DIR/configure.log" "$BUILD_DIR/build.log"; do
        [ -n "$f" ] && [ -e "$f" ] && files+=("${f#"$ROOT"/}")
    done
    tar -czf "$BUNDLE/gpu-results.tar.gz.tmp" -C "$ROOT" "${files[@]}" 2>/dev/null &&
        mv "$BUNDLE/gpu-results.tar.gz.tmp" "$BUNDLE/gpu-results.tar.gz"
}
record() {   # record STEP STATUS T_START DETAIL
    STEPS+="$1"$'\t'"$2"$'\t'"$((SECONDS - $3))"$'\t'"${4//$'\t'/ }"$'\n'
    case "$2" in FAIL) FAILED=1; log "$1: FAIL ($4)" ;; SKIP) [ -n "$REASON" ] && echo "SKIP: no GPU ($REASON): $1 -- $4" || log "$1: SKIP ($4)" ;;
                 *) log "$1: $2 ($4)" ;; esac
    CURRENT=""
    write_summary
}
begin() { CURRENT=$1; T_STEP=$SECONDS; }   # begin STEP: named if the run is killed during it
exec 3>&1 4>&2   # the script's own stdout / stderr (a trap runs inside a step's redirections)
on_signal() {
    trap - TERM INT
    exec 1>&3 2>&4
    [ -n "$CHILD" ] && { kill -TERM -- "-$CHILD" 2>/dev/null || kill -TERM "$CHILD" 2>/dev/null; }
    [ -n "$CURRENT" ] && record "$CURRENT" FAIL "$T_STEP" "killed by SIG$1 after $((SECONDS - T_STEP)) s (the run's limit?)"
    record "run" FAIL "$T0" "killed by SIG$1 at $((SECONDS - T0)) s: the steps after this one did not run"
    echo "gpu: KILLED (SIG$1; see $OUT/SUMMARY.md)"
    exit 143
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT

# ---- is there a GPU? ----------------------------------------------------------------
REASON=""
NVCC=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
if [ $FORCE_CPU = 1 ]; then
    REASON="the no-GPU path was asked for with --cpu"
elif [ -n "$BIN" ]; then
    :
elif [ -z "$NVCC" ]; then
    REASON="no CUDA compiler: nvcc is not on PATH nor in /usr/local/cuda/bin"
elif [ $BUILD_ONLY = 0 ] && ! ls /dev/nvidia0 /dev/nvidiactl >/dev/null 2>&1; then
    REASON="no CUDA driver on this machine: no /dev/nvidia* device files"
fi
[ $BUILD_ONLY = 1 ] && [ -n "$REASON" ] && { echo "run_gpu.sh: --build-only: $REASON" >&2; exit 1; }
slug() { printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '-' | sed 's/--*/-/g; s/-$//'; }
open_out() {   # open_out DEVICE: the results folder, from now on summarised after every step
    DEVICE=$1
    SLUG=$(slug "$DEVICE")
    OUT=${OUT:-results/gpu/$SLUG}
    mkdir -p "$OUT" || exit 2
    OUT=$(cd "$OUT" && pwd)
    OUT_READY=1
}
GPU=0
probe_bin() {   # probe_bin: GPU=1 + DEVICE + HW when $BIN sees a device, else REASON
    local probe prc
    probe=$("$BIN" kernels --probe 2>/dev/null); prc=$?
    if [ $prc = 0 ]; then
        GPU=1
        PROBED=$(sed -n 's/^gpu: //p' <<<"$probe")
        HW=$(sed -n 's/^hw: //p' <<<"$probe")
    else
        REASON=$(sed -n 's/^SKIP: no GPU (\(.*\))$/\1/p' <<<"$probe")
        [ -n "$REASON" ] || REASON="pagedbench kernels --probe failed (exit $prc)"
    fi
}
if [ -n "$BIN" ] && [ -z "$REASON" ]; then
    [ -x "$BIN" ] || { echo "run_gpu.sh: --bin $BIN is not an executable" >&2; exit 2; }
    BUILD_DETAIL="given binary $BIN (not built here)"
    probe_bin
    [ $GPU = 1 ] && { MODE=gpu; open_out "$PROBED"; record build PASS "$T0" "$BUILD_DETAIL"; }
elif [ -z "$REASON" ]; then
    # the GPU's name and architecture before the build, so that a failed build is summarised
    # in the right folder; the build targets this architecture only (the tree's CI builds 80;90)
    name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. ')
    [[ "$cap" =~ ^[0-9]+$ ]] || cap="80;90"
    MODE=gpu
    if [ $BUILD_ONLY = 1 ]; then MODE="build only"; name=${name:-build-only}; fi
    open_out "${name:-gpu}"
    export PATH="$(dirname "$NVCC"):$PATH"
    # the toolkit's libraries for the programs built here (also in their rpath)
    for d in "$(dirname "$NVCC")"/../lib64 "$(dirname "$NVCC")"/../lib; do
        [ -e "$d/libcudart.so" ] && { export LD_LIBRARY_PATH="$(cd "$d" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; break; }
    done
    mkdir -p "$BUILD_DIR"
    begin build
    log "configuring $BUILD_DIR (CUDA $cap, ${CMAKE_GENERATOR:-default generator}${PB_DEPS_ROOT:+, libraries of .gpu/debs}) and building target gpu_run"
    if cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DPB_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$cap" \
             -DPB_WERROR=OFF -DPB_NET=OFF >"$BUILD_DIR/configure.log" 2>&1 &&
       capped 400 cmake --build "$BUILD_DIR" -j "$JOBS" --target gpu_run >"$BUILD_DIR/build.log" 2>&1; then
        BIN=$ROOT/$BUILD_DIR/pagedbench
        BUILD_DETAIL="build/gpu: sm_$cap, $(grep -c 'warning' "$BUILD_DIR/build.log") warning lines, target gpu_run$([ -n "$PB_DEPS_ROOT" ] && echo ", libraries of .gpu/debs")"
        if ! grep -q '^PB_HAVE_CUDA_BUILD:INTERNAL=ON' "$BUILD_DIR/CMakeCache.txt"; then
            record build FAIL "$T_STEP" "configured without CUDA (see $BUILD_DIR/configure.log)"
            exit 1
        fi
    else
        tail -n 30 "$BUILD_DIR/configure.log" "$BUILD_DIR/build.log" >&2 2>/dev/null
        record build FAIL "$T_STEP" "does not configure or build: $(grep -m1 -E 'error|Error' "$BUILD_DIR/build.log" "$BUILD_DIR/configure.log" 2>/dev/null | cut -c1-200)"
        echo "run_gpu.sh: the CUDA build failed (logs: $BUILD_DIR/configure.log, $BUILD_DIR/build.log)" >&2
        exit 1
    fi
    if [ $BUILD_ONLY = 1 ]; then
        record build PASS "$T_STEP" "$BUILD_DETAIL; --build-only"
        echo "gpu: build only: built $BIN"
        exit 0
    fi
    probe_bin
    if [ $GPU = 1 ]; then record build PASS "$T_STEP" "$BUILD_DETAIL"
    else
        record build FAIL "$T_STEP" "built, but the binary sees no GPU: $REASON"
        echo "gpu: FAILED (nvidia-smi sees a GPU, pagedbench does not: $REASON)"
        exit 1
    fi
fi
if [ $GPU = 0 ] && [ -z "$BIN" ]; then   # the C references: the cpu preset is enough
    if [ ! -x build/cpu/pagedbench ] || [ ! -f build/cpu/CMakeCache.txt ]; then
        log "configuring the cpu preset (build/cpu)"
        cmake --preset cpu >/dev/null || exit 1
    fi
    log "building build/cpu"
    cmake --build build/cpu -j "$JOBS" >/dev/null || exit 1
    BIN=$ROOT/build/cpu/pagedbench
fi
if [ $GPU = 0 ]; then
    BUDGET=1000000          # the time budget is the GPU run's; without one every step runs
    MODE="no GPU: $REASON"
    HW=-
    open_out cpu-reference
    echo "SKIP: no GPU ($REASON)"
    log "no GPU: running the C references, the kernel emulator and the cpu executor -> $OUT"
else
    log "GPU: $DEVICE (hardware spec: $HW) -> $OUT"
fi
BUILD_DIR=$(cd "$(dirname "$BIN")" && pwd)
BL=""; [ $GPU = 1 ] && BL="$BASELINES/$SLUG.json"
# a GPU without a hardware spec (e.g. H100 PCIe): no % of peak, and the cost model
# compares with the H100 SXM spec (named in the summary)
HWARG=(); [ "$HW" = - ] || HWARG=(--hw "$HW")
if [ "$HW" = - ]; then HW=h100-sxm; [ $GPU = 1 ] && log "no hardware spec for $DEVICE: the cost model uses h100-sxm"; fi

# ---- 2. tests -------------------------------------------------------------------------
begin "ctest -L gpu"; t=$SECONDS
if [ $TINY = 1 ]; then
    record tests SKIP-TINY "$t" "--tiny: tests not run (this script is itself a ctest)"
elif [ $GPU = 1 ]; then
    capped 180 ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure --no-tests=error -j 1 >"$OUT/ctest_gpu.log" 2>&1; rc=$?
    nskip=$(grep -c '\*\*\*Skipped\|Not Run' "$OUT/ctest_gpu.log" || true)
    summary=$(grep -E 'tests passed|tests failed' "$OUT/ctest_gpu.log" | tail -n 1)
    if [ $rc = 0 ] && [ "$nskip" = 0 ]; then record "ctest -L gpu" PASS "$t" "$summary"
    else record "ctest -L gpu" FAIL "$t" "$(why_rc $rc): $summary; $nskip skipped (see ctest_gpu.log)"; fi
else
    record "ctest -L gpu" SKIP "$t" "the GPU tests (kernels vs C references on the device, cuBLAS layers, cuda executor vs cpu executor)"
    begin "ctest -L kernels"; t=$SECONDS
    (cd "$BUILD_DIR" && ctest -L kernels -LE gpu --output-on-failure --no-tests=error -j "$JOBS") >"$OUT/ctest_kernels.log" 2>&1; rc=$?
    summary=$(grep -E 'tests passed|tests failed' "$OUT/ctest_kernels.log" | tail -n 1)
    [ $rc = 0 ] && record "ctest -L kernels (C references)" PASS "$t" "$summary" ||
        record "ctest -L kernels (C references)" FAIL "$t" "$summary (see ctest_kernels.log)"
    begin "kernel emulator"; t=$SECONDS
    { bash kernels/emu/run.sh --quick && bash kernels/emu/run.sh --long; } >"$OUT/emulator.log" 2>&1; rc=$?
    if [ $rc = 0 ]; then record "kernel emulator (attention.cu, cache_ops.cu on the CPU)" PASS "$t" "quick set + 8K..64K decode: $(grep -c '^EMU .* OK' "$OUT/emulator.log") suites OK"
    elif [ $rc = 77 ]; then record "kernel emulator" SKIP-TOOLS "$t" "$(head -n 1 "$OUT/emulator.log")"
    else record "kernel emulator" FAIL "$t" "see emulator.log"; fi
    begin "ptxas resources"; t=$SECONDS
    bash tools/gpu/ptxas_check.sh "$OUT/ptxas.log" >"$OUT/ptxas.txt" 2>&1; rc=$?
    if [ $rc = 0 ]; then record "ptxas resources (sm_80, sm_90)" PASS "$t" "$(grep -c '^ptxas ok' "$OUT/ptxas.txt") rules: $(sed -n 's/^ptxas ok: decode_kernel: //p' "$OUT/ptxas.txt")"
    elif [ $rc = 77 ]; then record "ptxas resources" SKIP-TOOLS "$t" "$(head -n 1 "$OUT/ptxas.txt")"
    else record "ptxas resources (sm_80, sm_90)" FAIL "$t" "$(grep -m1 -E 'BROKEN|does not compile' "$OUT/ptxas.txt")"; fi
fi

# ---- 3. kernel benchmarks ---------------------------------------------------------------
begin "kernel benchmarks"; t=$SECONDS
rm -f "$OUT/kernels.csv"
if [ $GPU = 1 ]; then
    mkdir -p "$BASELINES"
    capped 200 "$BIN" kernels "${HWARG[@]}" --csv "$OUT/kernels.csv" --update "$BASELINES/$SLUG.json" >"$OUT/kernels.log" 2>&1; rc=$?
    if [ $rc = 0 ] && grep -q '^All results match' "$OUT/kernels.log" &&
       grep -q '^Check correct: PASS' "$OUT/kernels.log" && grep -q '^Check timer: PASS' "$OUT/kernels.log"; then
        record "kernel benchmarks" PASS "$t" "$(grep -c ' MET$' "$OUT/kernels.log") goals met, $(grep -c ' MISSED$' "$OUT/kernels.log") missed; $(grep -m1 '^Timer:' "$OUT/kernels.log"); baseline $BASELINES/$SLUG.json"
    else
        record "kernel benchmarks" FAIL "$t" "$(why_rc $rc); $(n_match '^FAILED ' "$OUT/kernels.log") failed points, $(n_rows "$OUT/kernels.csv") results kept; $(grep -m1 -E 'FAILED|: FAIL|failed' "$OUT/kernels.log")"
    fi
else
    record "kernel benchmarks" SKIP "$t" "GPU kernel timings (Fig. 18a grid, decode 1K..64K with % of HBM, paged vs contiguous, copy_blocks, swap vs pinned PCIe)"
    begin "kernel grids on the C references"; t=$SECONDS
    reps=5; grids=()
    [ $TINY = 1 ] && { reps=1; grids=(--grid fig18a,swap); }
    "$BIN" kernels --cpu --reps $reps "${grids[@]}" --csv "$OUT/kernels.csv" >"$OUT/kernels.log" 2>&1; rc=$?
    [ $rc = 0 ] && grep -q '^Check complete: PASS' "$OUT/kernels.log" &&
        record "kernel grids on the C references" PASS "$t" "$(grep -c '^cpu/' "$OUT/kernels.log") results, reps $reps" ||
        record "kernel grids on the C references" FAIL "$t" "exit $rc (see kernels.log)"
fi

# ---- 4. calibration sweeps ---------------------------------------------------------------
begin "calibration sweeps"; t=$SECONDS
rm -f "$OUT/calib_attention.csv" "$OUT/calib_gemm.csv"
if [ $GPU = 1 ]; then
    # our attention kernels are one launch each: CUPTI's kernel span; cuBLAS is timed with
    # CUDA events, as PyTorch times it: on an H200 (results/gpu/NVIDIA-H200/README.md) the
    # CUPTI span of some cuBLAS algorithms read 4-6x the events and PyTorch's time
    capped 100 "$BIN" kernels "${HWARG[@]}" --grid calib-attn --calib-dir "$OUT" >"$OUT/calib.log" 2>&1; rc=$?
    if [ $rc = 0 ]; then
        PAGEDBENCH_CUPTI=off capped 180 "$BIN" kernels "${HWARG[@]}" --grid calib-gemm --calib-dir "$OUT" \
            >"$OUT/calib_gemm.log" 2>&1; rc=$?
        [ $rc = 0 ] && ! grep -q '^Check complete: PASS' "$OUT/calib_gemm.log" && rc=1
    fi
    na=$(n_rows "$OUT/calib_attention.csv") ng=$(n_rows "$OUT/calib_gemm.csv")
    if [ $rc = 0 ] && grep -q '^Check complete: PASS' "$OUT/calib.log"; then
        record "calibration sweeps" PASS "$t" "$na attention rows (block 1..256 + contiguous; $(grep -m1 '^Timer:' "$OUT/calib.log")), $ng GEMM rows (CUDA events)"
    else
        record "calibration sweeps" FAIL "$t" "$(why_rc $rc); $na attention + $ng GEMM rows kept; $(n_match '^FAILED ' "$OUT/calib.log") + $(n_match '^FAILED ' "$OUT/calib_gemm.log") failed points (see calib.log, calib_gemm.log)"
    fi
else
    record "calibration sweeps" SKIP "$t" "paged attention at block 1..256 vs contiguous (batch 8..256 x context 32..2048) and cuBLAS GEMMs of OPT-13B, Llama-2-7B, Llama-3-8B, Llama-2/3-70B TP 4/8 at M = 1..4096"
    begin "calibration sweeps on the C references"; t=$SECONDS
    "$BIN" kernels --cpu --reps 3 --warmup 1 --grid calib-attn,calib-gemm --calib-dir "$OUT" >"$OUT/calib.log" 2>&1; rc=$?
    [ $rc = 0 ] && grep -q '^Check complete: PASS' "$OUT/calib.log" && [ -s "$OUT/calib_attention.csv" ] && [ -s "$OUT/calib_gemm.csv" ] &&
        record "calibration sweeps on the C references" PASS "$t" "$(grep -c '^cpu/calib' "$OUT/calib.log") rows (shapes only, not calibration data)" ||
        record "calibration sweeps on the C references" FAIL "$t" "exit $rc (see calib.log)"
fi

# ---- 5. Fig. 18a ------------------------------------------------------------------------
begin fig18a; t=$SECONDS
capped 120 "$BIN" run --figure fig18a --results "$OUT" --no-report >"$OUT/fig18a.log" 2>&1; rc=$?
if [ $rc != 0 ]; then record "fig18a" FAIL "$t" "$(why_rc $rc) (see fig18a.log)"
elif [ $GPU = 1 ] && ! grep -q '^gpu,' "$OUT/fig18a.csv"; then record "fig18a" FAIL "$t" "no measured rows in fig18a.csv"
elif [ $GPU = 1 ]; then record "fig18a" PASS "$t" "cost model and measured rows in fig18a.csv"
else record "fig18a" PASS "$t" "cost-model rows; the report says: $(grep -o 'SKIP: no GPU' "$OUT/fig18a_report.md" | head -n 1)"; fi

# ---- 6. profile -----------------------------------------------------------------------
PROFILE_OK=0
if [ $GPU = 1 ]; then
    begin "profile OPT-13B"; t=$SECONDS
    PROFILE=$OUT/profile_opt13b.csv
    rm -f "$PROFILE"
    capped 180 "$BIN" profile --model opt-13b --hardware "$HW" --out "$PROFILE" >"$OUT/profile.log" 2>&1; rc=$?
    if [ $rc = 0 ] && grep -q '^decode,' "$PROFILE" 2>/dev/null; then
        PROFILE_OK=1
        record "profile OPT-13B" PASS "$t" "$(grep -c '^decode,' "$PROFILE") decode + $(grep -c '^prefill,' "$PROFILE") prefill points"
    else
        record "profile OPT-13B" FAIL "$t" "$(why_rc $rc); $(n_match '^decode,\|^prefill,' "$PROFILE") points kept (see profile.log)"
    fi
else
    begin "profile OPT-13B"; t=$SECONDS
    record "profile OPT-13B" SKIP "$t" "OPT-13B step latencies on the cuda executor (random weights)"
    begin "profile tiny-OPT"; t=$SECONDS
    PROFILE=$OUT/profile_tiny_cpu.csv
    g=(--batches 1,4,16 --contexts 16,128,384 --prefill 16,64,256,512 --reps 3 --warmup 1)
    [ $TINY = 1 ] && g=(--batches 1,4 --contexts 16,128 --prefill 16,64 --reps 1 --warmup 0)
    "$BIN" profile --executor cpu --model tiny-opt --hardware a100-40gb --kv-gib 0.01 "${g[@]}" --out "$PROFILE" \
        >"$OUT/profile.log" 2>&1; rc=$?
    if [ $rc = 0 ] && grep -q '^decode,' "$PROFILE" 2>/dev/null; then
        PROFILE_OK=1
        record "profile tiny-OPT (cpu executor)" PASS "$t" "$(grep -c '^decode,' "$PROFILE") decode + $(grep -c '^prefill,' "$PROFILE") prefill points"
    else
        record "profile tiny-OPT (cpu executor)" FAIL "$t" "exit $rc (see profile.log)"
    fi
fi

# ---- 7. real engine vs cost model -----------------------------------------------------
pf=(); [ $PROFILE_OK = 1 ] && pf=(--profile "$PROFILE")
rm -f "$OUT"/costmodel_*.csv
if [ $GPU = 1 ]; then
    begin "real engine vs cost model"; t=$SECONDS
    d=$DURATION left=$(left_s)                 # shortened to what is left (the predictions follow it)
    [ $((d + 60)) -gt "$left" ] && d=$((left - 60))
    [ $d -lt 10 ] && d=10
    capped 300 "$BIN" bench costmodel --executor cuda --model opt-13b --hardware "$HW" "${pf[@]}" --rate "$RATE" \
        --duration "$d" --out "$OUT" >"$OUT/costmodel.log" 2>&1; rc=$?
    name="real engine vs cost model (OPT-13B, cuda)"
    [ "$d" = "$DURATION" ] || name="$name, ${d} s of arrivals (BUDGET)"
else
    begin "real engine vs cost model"; t=$SECONDS
    record "real engine vs cost model (OPT-13B, cuda)" SKIP "$t" "$DURATION s of ShareGPT arrivals at $RATE req/s on the cuda executor, and its prediction"
    begin "real engine vs cost model (tiny-OPT)"; t=$SECONDS
    d=3; [ $TINY = 1 ] && d=1
    "$BIN" bench costmodel --executor cpu --model tiny-opt --hardware a100-40gb "${pf[@]}" --rate 4 --duration $d \
        --length-scale 0.25 --out "$OUT" >"$OUT/costmodel.log" 2>&1; rc=$?
    name="real engine vs cost model (tiny-OPT, cpu executor)"
fi
if [ $rc = 0 ] && grep -q '^Check complete: PASS' "$OUT/costmodel.log"; then
    err=$(awk -F, '$1 == "step_abs_err_pct_p50_all" { printf "p50 |step error| spec %.1f%%, profile %s", $3, $4 == "" ? "-" : sprintf("%.1f%%", $4) }' "$OUT/costmodel_summary.csv")
    record "$name" PASS "$t" "$(($(grep -c . "$OUT/costmodel_requests.csv") - 1)) requests; $err"
else
    record "$name" FAIL "$t" "$(why_rc $rc) (see costmodel.log)"
fi

# ---- 8. a PyTorch peer: the eager issue cost, then the same shapes (a diagnostic) ---------
if [ $GPU = 1 ]; then
    begin "PyTorch peer"; t=$SECONDS
    hbm=$(sed -n 's/^hbm_bandwidth_GBps: *\([0-9.]*\).*/\1/p' "experiments/hardware/$HW.yaml" 2>/dev/null)
    rev=${PB_GIT_REV:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
    capped 150 python3 experiments/calibrate/torch_peer.py --out "$OUT" --commit "$rev" ${hbm:+--hbm-gbps "$hbm"} \
        >"$OUT/torch_peer.log" 2>&1; rc=$?
    if [ $rc = 0 ]; then
        record "PyTorch peer" PASS "$t" "$(($(grep -c . "$OUT/torch_launch.csv") - 1)) launch + $(($(grep -c . "$OUT/torch_gemm.csv") - 1)) GEMM + $(($(grep -c . "$OUT/torch_attention.csv") - 1)) attention rows (torch_peer.py; launch: the eager issue cost)"
    elif [ $rc = 77 ]; then
        record "PyTorch peer" SKIP "$t" "$(tail -n 1 "$OUT/torch_peer.log")"
    else
        record "PyTorch peer" FAIL "$t" "$(why_rc $rc) (see torch_peer.log)"
    fi
fi

# ---- the end ------------------------------------------------------------------------------
trap - TERM INT
write_summary
log "gpu: done in $((SECONDS - T0)) s; summary $OUT/SUMMARY.md"
if [ $GPU = 1 ] && [ $((SECONDS - T0)) -gt 540 ]; then log "WARNING: over the 9-minute budget"; fi
[ $FAILED = 0 ] && echo "gpu: all checks passed" || echo "gpu: FAILED (see $OUT/SUMMARY.md)"
exit $FAILED
