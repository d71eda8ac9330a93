#!/usr/bin/env bash
# cli_kernel_emu.sh -- run the CUDA kernels' own code on the CPU through the thread-level
# emulator (kernels/emu) against the C references: catches index, masking and reduction
# bugs in kernels/*.cu on machines without a GPU.  Skips (77) without g++/CUDA headers.
#   bash tests/cli_kernel_emu.sh
set -u
. "$(dirname "$0")/skip.sh"
cd "$(dirname "$0")/.."
bash kernels/emu/run.sh --quick
rc=$?
[ $rc = 77 ] && pb_skip "the kernel emulator cannot build here (g++ or the CUDA headers missing)"
[ $rc = 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $rc
