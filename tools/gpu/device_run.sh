#!/usr/bin/env bash
# device_run.sh OUT -- the one command a borrowed GPU machine runs (tools/gpu/README.md):
# `./run_all.sh gpu` with its results handed back in OUT, in at most 4 files:
#   OUT/machine.txt         what the machine has (GPU, driver, toolkit, tools, OS)
#   OUT/run.log             the run's output
#   OUT/SUMMARY.md          results/gpu/<device>/SUMMARY.md, rewritten after every step
#   OUT/gpu-results.tar.gz  results/gpu/<device>/, bench/baselines/<device>.json and the
#                           build logs, rewritten after every step (tar -xzf it in the
#                           checkout to put the results where they belong)
# The run stops itself before the device tool's limit: LIMIT (default 575 s) for the
# whole command, BUDGET (540 s) for the run's steps (tools/gpu/run_gpu.sh); a run cut
# by LIMIT still leaves its summary, naming the step that was cut.  The build's
# libraries come from .gpu/debs (carried; tools/gpu/fetch_debs.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?usage: device_run.sh OUT}
mkdir -p "$OUT" || exit 2
{
    date -u
    uname -srm
    echo "cores: $(nproc)"
    head -n 2 /etc/os-release 2>/dev/null
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm --format=csv 2>&1
    cat /proc/driver/nvidia/version 2>/dev/null | head -n 1
    { command -v nvcc || ls /usr/local/cuda/bin/nvcc; } 2>/dev/null && /usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -n 2
    cmake --version 2>/dev/null | head -n 1
    echo "ninja $(ninja --version 2>/dev/null)"
    python3 --version 2>&1
    for c in gcc make pkg-config git dpkg-deb apt-get timeout tar; do printf '%s: %s\n' "$c" "$(command -v $c || echo absent)"; done
    python3 -m pip list 2>/dev/null | grep -i -E '^(torch|triton|flash|vllm|xformers|flashinfer|nvidia-cu)' | tr -s ' ' | paste -sd ';' -
    ls .gpu/debs 2>&1
    echo "revision: $(cat .gpu/rev 2>/dev/null || echo '(no .gpu/rev)')"
} >"$OUT/machine.txt" 2>&1
timeout -s TERM -k 10 "${LIMIT:-575}" ./run_all.sh gpu --bundle "$OUT" 2>&1 | tee "$OUT/run.log"
rc=${PIPESTATUS[0]}
echo "device_run.sh: ./run_all.sh gpu exit $rc after $SECONDS s" | tee -a "$OUT/run.log"
exit $rc
