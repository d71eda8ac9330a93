#!/usr/bin/env bash
# goldens.sh -- the pinned figures: the quick version of every figure's CSV (and Table 1
# and the validation table), committed under tests/golden/ and compared byte for byte.
#
#   tools/goldens.sh check PAGEDBENCH   recompute them into a temporary folder and cmp
#                                       each with tests/golden/ (tests/cli_goldens.sh, CI)
#   tools/goldens.sh write PAGEDBENCH   rewrite tests/golden/ (after a change of the model
#                                       on purpose; `git diff tests/golden` shows what
#                                       moved).  Also: ./run_all.sh goldens
#
# What runs: `pagedbench run --all --quick` (every figure fig1 ... fig19b, v02, study, tier,
# the ablations and launch,
# each YAML's quick: settings), `pagedbench table1 --csv`, `pagedbench validate --csv`.
# Workloads use the built-in length distributions (PAGEDBENCH_SHARED_DATA points at an
# empty folder), so the numbers are the same beside ../shared/data and in a bare clone.
# JSON sidecars and reports are not pinned (they carry the revision and the machine).
set -euo pipefail
MODE=${1:-}
PB=${2:-}
case "$MODE" in check|write) ;; *) echo "usage: tools/goldens.sh check|write path/to/pagedbench" >&2; exit 2 ;; esac
[ -x "$PB" ] || { echo "goldens.sh: no executable pagedbench at '$PB'" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GOLD=$ROOT/tests/golden
T=$(mktemp -d /tmp/pb_goldens.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/nodata" "$T/r"
export PAGEDBENCH_SHARED_DATA=$T/nodata
(cd "$ROOT" && "$PB" run --all --quick --fresh --jobs 2 --results "$T/r" --quiet --no-report) >"$T/log" 2>&1 ||
    { tail -n 20 "$T/log" >&2; echo "goldens.sh: pagedbench run --all --quick failed" >&2; exit 1; }
(cd "$ROOT" && "$PB" table1 --csv "$T/r/table1.csv" >/dev/null 2>>"$T/log" && "$PB" validate --csv --table experiments/validation/measurements.csv --hardware-dir experiments/hardware >"$T/r/validate.csv" 2>>"$T/log") ||
    { echo "goldens.sh: table1 or validate failed" >&2; exit 1; }

if [ "$MODE" = write ]; then
    mkdir -p "$GOLD"
    rm -f "$GOLD"/*.csv
    cp "$T"/r/*.csv "$GOLD"/
    echo "goldens.sh: wrote $(ls "$GOLD"/*.csv | wc -l) files to tests/golden/ (git diff tests/golden shows the change)"
    exit 0
fi

fail=0
got=$(cd "$T/r" && ls *.csv | sort | tr '\n' ' ')
want=$(cd "$GOLD" && ls *.csv | sort | tr '\n' ' ')
[ "$got" = "$want" ] || { echo "FAIL: files differ: computed [$got], pinned [$want]" >&2; fail=1; }
for f in "$GOLD"/*.csv; do
    b=$(basename "$f")
    [ -f "$T/r/$b" ] || continue
    if cmp -s "$f" "$T/r/$b"; then
        echo "[ok] $b"
    else
        echo "[FAIL] $b differs from tests/golden/$b:" >&2
        # (head closes the pipe early: with pipefail and -e that must not end the loop)
        diff "$f" "$T/r/$b" | head -n 8 >&2 || true
        fail=1
    fi
done
if [ $fail = 1 ]; then
    echo "goldens.sh: the pinned figures changed.  If the change is meant, run" >&2
    echo "    tools/goldens.sh write $PB     (or ./run_all.sh goldens)" >&2
    echo "and commit tests/golden/ with the reason." >&2
    exit 1
fi
echo "goldens.sh: $(ls "$GOLD"/*.csv | wc -l) pinned files byte-identical"
