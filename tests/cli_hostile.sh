#!/usr/bin/env bash
# cli_hostile.sh -- the corpus of hostile inputs, tests/hostile/ (issue 33): each case is a
# folder of input files and an `expect` file:
#   # what the case reproduces
#   cmd: <pagedbench arguments>       (shell words; or a run.sh in the folder, run as
#                                      `bash run.sh PAGEDBENCH` in its place)
#   stdin: <file>                     (optional) fed to the command
#   exit: <code>                      the exit status wanted
#   msg: <fragment>                   (any number) must appear in stdout + stderr
#   absent: <path>                    (any number) must not exist afterwards: nothing written
#   timeout: <seconds>                (optional, default 120) wall time: the case fails past it
#   cpu: <seconds>                    (optional) CPU time the command may use (ulimit -t): a
#                                     bound on work that a loaded machine does not move
# An optional `setup` script makes inputs that cannot be committed (a FIFO, a sparse file,
# a generated sweep).  Every case runs in a copy of its folder under a timeout; a sanitizer
# report (ASan, LeakSanitizer, UBSan: the asan build runs this test too) fails the case.
#   bash tests/cli_hostile.sh build/cpu/pagedbench [CASE ...]
set -u
PB=$(realpath "${1:?usage: cli_hostile.sh path/to/pagedbench [case ...]}")
shift
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/pb_cli_hostile.XXXXXX)
trap 'rm -rf "$T"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
pass=0 fail=0
cases=("$@")
[ ${#cases[@]} = 0 ] && for d in "$SRC"/tests/hostile/*/; do cases+=("$(basename "$d")"); done
for name in "${cases[@]}"; do
    dir=$SRC/tests/hostile/$name
    [ -f "$dir/expect" ] || { echo "[FAIL] $name: no expect file" >&2; fail=$((fail + 1)); continue; }
    w=$T/$name
    cp -r "$dir" "$w"
    why=""
    if ! (cd "$w" && { [ ! -f setup ] || bash setup >setup.log 2>&1; }); then
        why="setup failed: $(tail -3 "$w/setup.log")"
    else
        t0=$(date +%s)
        if [ -f "$w/run.sh" ]; then
            out=$(cd "$w" && timeout 300 bash run.sh "$PB" 2>&1)
            rc=$?
        else
            cmd=$(sed -n 's/^cmd: //p' "$w/expect")
            in=$(sed -n 's/^stdin: //p' "$w/expect")
            limit=$(sed -n 's/^timeout: //p' "$w/expect")
            cpu=$(sed -n 's/^cpu: //p' "$w/expect")
            out=$(cd "$w" && eval "set -- $cmd" && ulimit -t "${cpu:-unlimited}" &&
                  timeout "${limit:-120}" "$PB" "$@" <"${in:-/dev/null}" 2>&1)
            rc=$?
        fi
        secs=$(( $(date +%s) - t0 ))
        want=$(sed -n 's/^exit: //p' "$w/expect")
        [ "$rc" = "$want" ] || why="exit $rc, want $want"
        while IFS= read -r m; do
            grep -qF -- "$m" <<<"$out" || why="${why:+$why; }no '$m'"
        done < <(sed -n 's/^msg: //p' "$w/expect")
        while IFS= read -r a; do
            [ ! -e "$w/$a" ] || why="${why:+$why; }$a was written"
        done < <(sed -n 's/^absent: //p' "$w/expect")
        if grep -qE "Sanitizer|runtime error:" <<<"$out"; then why="${why:+$why; }a sanitizer report"; fi
    fi
    if [ -z "$why" ]; then
        pass=$((pass + 1)); echo "[ok] $name (${secs}s)" >&2
    else
        fail=$((fail + 1)); echo "[FAIL] $name: $why" >&2; echo "$out" | head -20 | sed 's/^/    /' >&2
    fi
done
echo "cli_hostile: $pass passed, $fail failed" >&2
[ "$fail" = 0 ]
