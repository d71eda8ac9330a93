#!/usr/bin/env bash
# cli_fuzz.sh -- the fuzzers of tests/fuzz/ in CI: the YAML loader, the trace reader,
# and a short engine run from a fuzzed trace.
#   bash tests/cli_fuzz.sh build/cpu/pagedbench        (uses build/cpu/fuzz/)
# With clang (libFuzzer binaries fuzz_*): each harness fuzzes for $PB_FUZZ_SECONDS
# (default 15) from the committed seed corpus tests/fuzz/corpus/<harness>/, with a fixed
# seed; new inputs go to a temporary folder, never into the repository.  Without clang,
# and in the ASan build of the tree (CMakeLists.txt builds no fuzz_* there: they would
# fuzz the same code a second time), replay_* replays every corpus input once -- under
# ASan + UBSan in that build.  CI runs both builds: 3 x 15 s of fuzzing in all.  A
# finding fails the test and is printed as hex: add it to tests/fuzz/corpus/<harness>/
# as a regression input.
set -u
. "$(dirname "$0")/skip.sh"
BIN=${1:?usage: cli_fuzz.sh path/to/pagedbench}
FZ=$(dirname "$BIN")/fuzz
SRC=$(cd "$(dirname "$0")/.." && pwd)
SECS=${PB_FUZZ_SECONDS:-15}
T=$(mktemp -d /tmp/pb_cli_fuzz.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0 ran=0
for h in yaml trace engine; do
    corpus=$SRC/tests/fuzz/corpus/$h
    if [ -x "$FZ/fuzz_$h" ]; then
        mkdir -p "$T/$h"
        if "$FZ/fuzz_$h" "$T/$h" "$corpus" -max_total_time="$SECS" -seed=1 -timeout=10 -rss_limit_mb=2048 \
               -artifact_prefix="$T/$h-" >"$T/$h.log" 2>&1; then
            echo "[ok] fuzz_$h: $(grep -E '^#[0-9]+.*DONE' "$T/$h.log" | tail -1)" >&2
        else
            fail=1
            echo "[FAIL] fuzz_$h found a problem:" >&2
            grep -E "ERROR|SUMMARY|==[0-9]+==|runtime error" "$T/$h.log" | head -20 >&2
            for a in "$T/$h"-*; do [ -e "$a" ] && { echo "input $a (hex):" >&2; od -An -tx1 "$a" | head -20 >&2; }; done
        fi
        ran=1
    elif [ -x "$FZ/replay_$h" ]; then
        if out=$("$FZ/replay_$h" "$corpus" 2>&1); then echo "[ok] replay_$h (no clang): $out" >&2
        else fail=1; echo "[FAIL] replay_$h: $out" >&2; fi
        ran=1
    fi
done
[ $ran = 1 ] || pb_skip "no fuzz harness built in $FZ"
[ $fail = 0 ]
