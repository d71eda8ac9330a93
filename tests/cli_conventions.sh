#!/usr/bin/env bash
# cli_conventions.sh -- every command takes `--opt=value` as `--opt value`, answers
# --version and --help on stdout with exit 0, and a bad option is a usage error (2)
# on stderr with nothing on stdout.
#   bash tests/cli_conventions.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_conventions.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_conv.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

"$PB" --version | grep -Eq '^pagedbench [0-9a-f]+' && ok "pagedbench --version" || bad "pagedbench --version"
for c in run trace table1 list kernels profile bench plot; do
    "$PB" $c --version >"$T/v" 2>/dev/null && grep -q '^pagedbench ' "$T/v" && ok "$c --version" || bad "$c --version"
    "$PB" $c --help >"$T/h" 2>"$T/he"; rc=$?
    [ $rc = 0 ] && grep -q 'usage: pagedbench' "$T/h" && ok "$c --help on stdout" || bad "$c --help (rc $rc)"
done
for c in run trace plot table1; do
    "$PB" $c --no-such-option >"$T/o" 2>"$T/e"; rc=$?
    [ $rc = 2 ] && [ ! -s "$T/o" ] && [ -s "$T/e" ] && ok "$c: bad option -> 2, stderr only" ||
        bad "$c bad option (rc $rc, stdout $(wc -c <"$T/o") bytes)"
done
"$PB" table1 --block-size=32 >"$T/a" 2>/dev/null && "$PB" table1 --block-size 32 >"$T/b" 2>/dev/null &&
    cmp -s "$T/a" "$T/b" && ok "table1 --block-size=32 == --block-size 32" || bad "table1 --opt=value"
"$PB" trace --dataset=alpaca --rate=2 --num=20 --seed=4 >"$T/a" 2>/dev/null &&
    "$PB" trace --dataset alpaca --rate 2 --num 20 --seed 4 >"$T/b" 2>/dev/null && cmp -s "$T/a" "$T/b" &&
    ok "trace --opt=value == --opt value" || bad "trace --opt=value"
"$PB" trace --check="$T/a" >"$T/c" 2>/dev/null && grep -q ": ok, 20 requests" "$T/c" && ok "trace --check: verdict on stdout" ||
    bad "trace --check stdout: $(cat "$T/c")"
"$PB" run --figure=fig13 --check >"$T/r" 2>/dev/null && grep -q fig13_sharegpt "$T/r" && ok "run --figure=fig13" ||
    bad "run --figure=fig13"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
