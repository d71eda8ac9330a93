# skip.sh -- sourced by the tests/cli_*.sh scripts: how a script skips itself.
#   pb_skip REASON         something this test needs is missing here (a package, a file):
#                          exit 77 (ctest: skipped); with PAGEDBENCH_NO_SKIP=1 (CI, .ci/run)
#                          exit 1 instead, so CI runs everything it can
#   pb_skip_no_gpu REASON  the one skip CI allows: no usable GPU on this machine
pb_skip() {
    if [ -n "${PAGEDBENCH_NO_SKIP:-}" ] && [ "${PAGEDBENCH_NO_SKIP}" != 0 ]; then
        echo "FAIL: would skip, and PAGEDBENCH_NO_SKIP is set: $*" >&2
        exit 1
    fi
    echo "SKIP: $*" >&2
    exit 77
}
pb_skip_no_gpu() { echo "SKIP: no GPU ($*)" >&2; exit 77; }
