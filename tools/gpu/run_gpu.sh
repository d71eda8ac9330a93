#!/usr/bin/env bash
# run_gpu.sh -- `./run_all.sh gpu`: build, check, time and profile the GPU half in one
# command, and write its results.  Budget: under 9 minutes on one H100/H200/A100.
#
# With a GPU (nvcc, /dev/nvidia*, and `pagedbench kernels --probe` sees a device):
#   1. configure the cuda preset (build/cuda) and build it
#   2. ctest -L gpu: every kernel against its C reference, the cuBLAS layers, the whole
#      cuda executor against the cpu executor (a skipped test counts as a failure here)
#   3. pagedbench kernels: the Fig. 18a grid; decode attention at 1K..64K tokens of
#      context (64K tokens per call) with % of HBM; paged vs contiguous at block 16 and
#      block 1..256; reshape_and_cache, copy_blocks; swap per block vs batched vs the
#      pinned-memcpy bandwidth; goal verdicts -> kernels.csv, bench/baselines/<dev>.json
#   4. pagedbench run --figure fig18a: the paper's Fig. 18a points beside ours
#   5. pagedbench profile: OPT-13B shapes, random weights -> profile_opt13b.csv
#   6. pagedbench bench costmodel: the real engine (cuda executor, ShareGPT lengths,
#      RATE req/s Poisson arrivals for DURATION s) and the cost model's prediction of
#      the same run from the hardware spec and from the measured profile -> costmodel_*.csv
# Without a GPU it runs what can run -- the C references (ctest -L kernels), the CUDA
# kernels through the CPU emulator (kernels/emu), ptxas's register / spill / shared-memory
# report against the launchers' assumptions (tools/gpu/ptxas_check.sh, needs nvcc), the
# same grids on the C references,
# the profile and the engine-vs-cost-model comparison on the cpu executor (tiny OPT) --
# and prints `SKIP: no GPU (<reason>)` for the rest.
# Everything lands in results/gpu/<device>/ (SUMMARY.md, *.csv, *.log); <device> is the
# GPU's name ("cpu-reference" without one).  Exit 0, or 1 when any correctness check
# failed (a missed performance goal is reported, not a failure), 2 usage.
#
#   tools/gpu/run_gpu.sh [--bin PATH] [--out DIR] [--tiny] [--cpu] [--jobs N]
#     --bin PATH  use this pagedbench instead of building (its folder must hold its ctest files)
#     --baselines DIR  where the GPU kernel baseline goes (default bench/baselines)
#     --cpu       take the no-GPU path even when a GPU is present (tests)
#     --out DIR   results folder (default results/gpu/<device>)
#     --tiny      smallest settings, no tests and no emulator (the ctest of this script)
#   env: RATE (default 1 req/s), DURATION (60 s) of the real-engine run on a GPU;
#        BUDGET (540 s): on a GPU every step after the build gets at most what is left of
#        it (and its own cap), so that the summary is written even when a step hangs
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BIN="" OUT="" BASELINES=bench/baselines TINY=0 FORCE_CPU=0 JOBS=$(nproc 2>/dev/null || echo 2)
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) BIN=$2; shift ;;
        --out) OUT=$2; shift ;;
        --baselines) BASELINES=$2; shift ;;
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
STEPS=""                                  # step<TAB>status<TAB>seconds<TAB>detail lines
capped() {   # capped CAP cmd...: run under timeout: CAP s or what is left of BUDGET (>= 30 s)
    local cap=$1 left=$((BUDGET - (SECONDS - T0))); shift
    [ $left -lt 30 ] && left=30
    [ $cap -lt $left ] && left=$cap
    timeout --kill-after=10 "$left" "$@"
}
why_rc() { [ "$1" = 124 ] || [ "$1" = 137 ] && echo "timed out (BUDGET $BUDGET s)" || echo "exit $1"; }
FAILED=0
record() {   # record STEP STATUS T_START DETAIL
    STEPS+="$1"$'\t'"$2"$'\t'"$((SECONDS - $3))"$'\t'"$4"$'\n'
    case "$2" in FAIL) FAILED=1; log "$1: FAIL ($4)" ;; SKIP) echo "SKIP: no GPU ($REASON): $1 -- $4" ;;
                 *) log "$1: $2 ($4)" ;; esac
}

# ---- is there a GPU? ----------------------------------------------------------------
REASON=""
NVCC=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
if [ $FORCE_CPU = 1 ]; then
    REASON="the no-GPU path was asked for with --cpu"
elif [ -n "$BIN" ]; then
    :
elif [ -z "$NVCC" ]; then
    REASON="no CUDA compiler: nvcc is not on PATH nor in /usr/local/cuda/bin"
elif ! ls /dev/nvidia0 /dev/nvidiactl >/dev/null 2>&1; then
    REASON="no CUDA driver on this machine: no /dev/nvidia* device files"
fi
GPU=0
probe_bin() {   # probe_bin: GPU=1 + DEVICE + HW when $BIN sees a device, else REASON
    local probe prc
    probe=$("$BIN" kernels --probe 2>/dev/null); prc=$?
    if [ $prc = 0 ]; then
        GPU=1
        DEVICE=$(sed -n 's/^gpu: //p' <<<"$probe")
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
elif [ -z "$REASON" ]; then
    export PATH="$(dirname "$NVCC"):$PATH"
    log "configuring and building the cuda preset (build/cuda)"
    if cmake --preset cuda >"$ROOT/.gpu-configure.log" 2>&1 &&
       cmake --build build/cuda -j "$JOBS" >"$ROOT/.gpu-build.log" 2>&1; then
        BIN=$ROOT/build/cuda/pagedbench
        BUILD_DETAIL="cuda preset built (build/cuda)"
    else
        tail -n 30 "$ROOT/.gpu-configure.log" "$ROOT/.gpu-build.log" >&2
        echo "run_gpu.sh: the cuda preset does not build (logs: .gpu-configure.log, .gpu-build.log)" >&2
        exit 1
    fi
    rm -f "$ROOT/.gpu-configure.log" "$ROOT/.gpu-build.log"
    probe_bin
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
    DEVICE=cpu-reference
    HW=-
fi
SLUG=$(printf '%s' "$DEVICE" | tr -c 'A-Za-z0-9._-' '-' | sed 's/--*/-/g; s/-$//')
OUT=${OUT:-results/gpu/$SLUG}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
BUILD_DIR=$(cd "$(dirname "$BIN")" && pwd)
if [ $GPU = 1 ]; then
    log "GPU: $DEVICE (hardware spec: $HW) -> $OUT"
    record build PASS "$T0" "$BUILD_DETAIL"
else
    echo "SKIP: no GPU ($REASON)"
    log "no GPU: running the C references, the kernel emulator and the cpu executor -> $OUT"
fi
# a GPU without a hardware spec (not A100/H100/H200): no % of peak, and the cost model
# compares with the H100 spec (named in the summary)
HWARG=(); [ "$HW" = - ] || HWARG=(--hw "$HW")
if [ "$HW" = - ]; then HW=h100-sxm; [ $GPU = 1 ] && log "no hardware spec for $DEVICE: the cost model uses h100-sxm"; fi

# ---- 2. tests -------------------------------------------------------------------------
t=$SECONDS
if [ $TINY = 1 ]; then
    record tests SKIP-TINY "$t" "--tiny: tests not run (this script is itself a ctest)"
elif [ $GPU = 1 ]; then
    (cd "$BUILD_DIR" && capped 180 ctest -L gpu --output-on-failure --no-tests=error -j 1) >"$OUT/ctest_gpu.log" 2>&1; rc=$?
    nskip=$(grep -c '\*\*\*Skipped\|Not Run' "$OUT/ctest_gpu.log" || true)
    summary=$(grep -E 'tests passed|tests failed' "$OUT/ctest_gpu.log" | tail -n 1)
    if [ $rc = 0 ] && [ "$nskip" = 0 ]; then record "ctest -L gpu" PASS "$t" "$summary"
    else record "ctest -L gpu" FAIL "$t" "$(why_rc $rc): $summary; $nskip skipped (see ctest_gpu.log)"; fi
else
    record "ctest -L gpu" SKIP "$t" "the GPU tests (kernels vs C references on the device, cuBLAS layers, cuda executor vs cpu executor)"
    (cd "$BUILD_DIR" && ctest -L kernels -LE gpu --output-on-failure --no-tests=error -j "$JOBS") >"$OUT/ctest_kernels.log" 2>&1; rc=$?
    summary=$(grep -E 'tests passed|tests failed' "$OUT/ctest_kernels.log" | tail -n 1)
    [ $rc = 0 ] && record "ctest -L kernels (C references)" PASS "$t" "$summary" ||
        record "ctest -L kernels (C references)" FAIL "$t" "$summary (see ctest_kernels.log)"
    t=$SECONDS
    { bash kernels/emu/run.sh --quick && bash kernels/emu/run.sh --long; } >"$OUT/emulator.log" 2>&1; rc=$?
    if [ $rc = 0 ]; then record "kernel emulator (attention.cu, cache_ops.cu on the CPU)" PASS "$t" "quick set + 8K..64K decode: $(grep -c '^EMU .* OK' "$OUT/emulator.log") suites OK"
    elif [ $rc = 77 ]; then record "kernel emulator" SKIP-TOOLS "$t" "$(head -n 1 "$OUT/emulator.log")"
    else record "kernel emulator" FAIL "$t" "see emulator.log"; fi
    t=$SECONDS
    bash tools/gpu/ptxas_check.sh "$OUT/ptxas.log" >"$OUT/ptxas.txt" 2>&1; rc=$?
    if [ $rc = 0 ]; then record "ptxas resources (sm_80, sm_90)" PASS "$t" "$(grep -c '^ptxas ok' "$OUT/ptxas.txt") rules: $(sed -n 's/^ptxas ok: decode_kernel: //p' "$OUT/ptxas.txt")"
    elif [ $rc = 77 ]; then record "ptxas resources" SKIP-TOOLS "$t" "$(head -n 1 "$OUT/ptxas.txt")"
    else record "ptxas resources (sm_80, sm_90)" FAIL "$t" "$(grep -m1 -E 'BROKEN|does not compile' "$OUT/ptxas.txt")"; fi
fi

# ---- 3. kernel benchmarks ---------------------------------------------------------------
t=$SECONDS
if [ $GPU = 1 ]; then
    mkdir -p "$BASELINES"
    capped 200 "$BIN" kernels "${HWARG[@]}" --csv "$OUT/kernels.csv" --update "$BASELINES/$SLUG.json" >"$OUT/kernels.log" 2>&1; rc=$?
    if [ $rc = 0 ] && grep -q '^All results match' "$OUT/kernels.log" &&
       grep -q '^Check correct: PASS' "$OUT/kernels.log" && grep -q '^Check timer: PASS' "$OUT/kernels.log"; then
        record "kernel benchmarks" PASS "$t" "$(grep -c ' MET$' "$OUT/kernels.log") goals met, $(grep -c ' MISSED$' "$OUT/kernels.log") missed; baseline $BASELINES/$SLUG.json"
    else
        record "kernel benchmarks" FAIL "$t" "$(why_rc $rc); $(grep -m1 -E 'FAILED|: FAIL|failed' "$OUT/kernels.log")"
    fi
else
    record "kernel benchmarks" SKIP "$t" "GPU kernel timings (Fig. 18a grid, decode 1K..64K with % of HBM, paged vs contiguous, copy_blocks, swap vs pinned PCIe)"
    reps=5; grids=()
    [ $TINY = 1 ] && { reps=1; grids=(--grid fig18a,swap); }
    "$BIN" kernels --cpu --reps $reps "${grids[@]}" --csv "$OUT/kernels.csv" >"$OUT/kernels.log" 2>&1; rc=$?
    [ $rc = 0 ] && grep -q '^Check complete: PASS' "$OUT/kernels.log" &&
        record "kernel grids on the C references" PASS "$t" "$(grep -c '^cpu/' "$OUT/kernels.log") results, reps $reps" ||
        record "kernel grids on the C references" FAIL "$t" "exit $rc (see kernels.log)"
fi

# ---- 4. Fig. 18a ------------------------------------------------------------------------
t=$SECONDS
capped 120 "$BIN" run --figure fig18a --results "$OUT" --no-report >"$OUT/fig18a.log" 2>&1; rc=$?
if [ $rc != 0 ]; then record "fig18a" FAIL "$t" "$(why_rc $rc) (see fig18a.log)"
elif [ $GPU = 1 ] && ! grep -q '^gpu,' "$OUT/fig18a.csv"; then record "fig18a" FAIL "$t" "no measured rows in fig18a.csv"
elif [ $GPU = 1 ]; then record "fig18a" PASS "$t" "cost model and measured rows in fig18a.csv"
else record "fig18a" PASS "$t" "cost-model rows; the report says: $(grep -o 'SKIP: no GPU' "$OUT/fig18a_report.md" | head -n 1)"; fi

# ---- 5. profile -----------------------------------------------------------------------
t=$SECONDS
if [ $GPU = 1 ]; then
    PROFILE=$OUT/profile_opt13b.csv
    capped 180 "$BIN" profile --model opt-13b --hardware "$HW" --out "$PROFILE" >"$OUT/profile.log" 2>&1; rc=$?
    [ $rc = 0 ] && grep -q '^decode,' "$PROFILE" 2>/dev/null && record "profile OPT-13B" PASS "$t" "$(grep -c '^decode,' "$PROFILE") decode + $(grep -c '^prefill,' "$PROFILE") prefill points" ||
        record "profile OPT-13B" FAIL "$t" "$(why_rc $rc) (see profile.log)"
else
    record "profile OPT-13B" SKIP "$t" "OPT-13B step latencies on the cuda executor (random weights)"
    PROFILE=$OUT/profile_tiny_cpu.csv
    g=(--batches 1,4,16 --contexts 16,128,384 --prefill 16,64,256,512 --reps 3 --warmup 1)
    [ $TINY = 1 ] && g=(--batches 1,4 --contexts 16,128 --prefill 16,64 --reps 1 --warmup 0)
    "$BIN" profile --executor cpu --model tiny-opt --hardware a100-40gb --kv-gib 0.01 "${g[@]}" --out "$PROFILE" \
        >"$OUT/profile.log" 2>&1; rc=$?
    [ $rc = 0 ] && grep -q '^decode,' "$PROFILE" 2>/dev/null && record "profile tiny-OPT (cpu executor)" PASS "$t" "$(grep -c '^decode,' "$PROFILE") decode + $(grep -c '^prefill,' "$PROFILE") prefill points" ||
        record "profile tiny-OPT (cpu executor)" FAIL "$t" "exit $rc (see profile.log)"
fi

# ---- 6. real engine vs cost model -----------------------------------------------------
t=$SECONDS
pf=(); [ -f "$PROFILE" ] && pf=(--profile "$PROFILE")
if [ $GPU = 1 ]; then
    capped 300 "$BIN" bench costmodel --executor cuda --model opt-13b --hardware "$HW" "${pf[@]}" --rate "$RATE" \
        --duration "$DURATION" --out "$OUT" >"$OUT/costmodel.log" 2>&1; rc=$?
    name="real engine vs cost model (OPT-13B, cuda)"
else
    record "real engine vs cost model (OPT-13B, cuda)" SKIP "$t" "$DURATION s of ShareGPT arrivals at $RATE req/s on the cuda executor, and its prediction"
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

# ---- summary ----------------------------------------------------------------------------
printf '%s' "$STEPS" >"$OUT/steps.tsv"
MODE=gpu; [ $GPU = 1 ] || MODE="no GPU: $REASON"
BL=""; [ $GPU = 1 ] && BL="$BASELINES/$SLUG.json"
if ! bash tools/gpu/summary.sh "$OUT" "$DEVICE" "$MODE" "$((SECONDS - T0))" "$BL" >"$OUT/SUMMARY.md.tmp"; then
    echo "run_gpu.sh: cannot write $OUT/SUMMARY.md" >&2; FAILED=1
else
    mv "$OUT/SUMMARY.md.tmp" "$OUT/SUMMARY.md"
fi
log "gpu: done in $((SECONDS - T0)) s; summary $OUT/SUMMARY.md"
if [ $GPU = 1 ] && [ $((SECONDS - T0)) -gt 540 ]; then log "WARNING: over the 9-minute budget"; fi
[ $FAILED = 0 ] && echo "gpu: all checks passed" || echo "gpu: FAILED (see $OUT/SUMMARY.md)"
exit $FAILED
