#!/usr/bin/env bash
# cli_table1_list.sh -- `pagedbench table1` and `pagedbench list` (the shared option layer, cli.h):
#   1. --help lists every long option of the parser's table (read from the source);
#   2. `--opt=value` == `--opt value`; a bad value, a missing value, an unknown option or a
#      stray argument is a usage error (2) on stderr with nothing on stdout;
#   3. table1 --csv writes the table; list --keys prints the schema keys.
# usage: bash tests/cli_table1_list.sh path/to/pagedbench   (run from the repo root)
set -u
PB=${1:?usage: cli_table1_list.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_t1l.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

# 1. --help names every option of the getopt_long table
for c in table1 list; do
    src=experiments/cmd_$c.c
    opts=$(grep -oE '\{"[a-z0-9-]+", (O_[A-Z0-9_]+|'"'"'.'"'"'), ' "$src" | sed 's/{"\([a-z0-9-]*\)".*/\1/')
    [ -n "$opts" ] || { bad "$c: no option table found in $src"; continue; }
    "$PB" $c --help >"$T/h" 2>/dev/null || bad "$c --help exited non-zero"
    miss=""
    for o in $opts; do grep -q -- "--$o\b" "$T/h" || miss="$miss --$o"; done
    [ -z "$miss" ] && ok "$c --help lists $(echo $opts | wc -w) options" || bad "$c --help lacks$miss"
done

# 2. --opt=value, and usage errors
"$PB" table1 --block-size=32 --gpu-mem-util=0.9 --max-batched-tokens=4096 >"$T/a" 2>/dev/null &&
    "$PB" table1 --block-size 32 --gpu-mem-util 0.9 --max-batched-tokens 4096 >"$T/b" 2>/dev/null &&
    cmp -s "$T/a" "$T/b" && ok "table1 --opt=value == --opt value" || bad "table1 --opt=value"
cmp -s "$T/a" <("$PB" table1 2>/dev/null) && bad "table1 options change nothing" || ok "table1 options take effect"
usage_err() {   # name, command...
    local name=$1; shift
    "$@" >"$T/o" 2>"$T/e"; local rc=$?
    [ $rc = 2 ] && [ ! -s "$T/o" ] && [ -s "$T/e" ] && ok "$name -> 2, stderr only" ||
        bad "$name (rc $rc, stdout $(wc -c <"$T/o") bytes)"
}
usage_err "table1 --block-size 2.5" "$PB" table1 --block-size 2.5
usage_err "table1 --block-size=0" "$PB" table1 --block-size=0
usage_err "table1 --block-size 4097" "$PB" table1 --block-size 4097
usage_err "table1 --gpu-mem-util 1.5" "$PB" table1 --gpu-mem-util 1.5
usage_err "table1 --max-batched-tokens -1" "$PB" table1 --max-batched-tokens -1
usage_err "table1 --csv (no value)" "$PB" table1 --csv
usage_err "table1 stray argument" "$PB" table1 extra
usage_err "table1 -x" "$PB" table1 -x
usage_err "list --bogus" "$PB" list --bogus
usage_err "list --keys=1" "$PB" list --keys=1
usage_err "list stray argument" "$PB" list extra
grep -q "block-size: .*'2.5'" <("$PB" table1 --block-size 2.5 2>&1) && ok "table1 names the option and value" ||
    bad "table1 bad value message"

# 3. what they print
"$PB" table1 --csv="$T/t1.csv" >/dev/null 2>&1 && head -n 1 "$T/t1.csv" | grep -q '^model,gpus,gpu,param_gb,kv_gb,kv_slots' &&
    [ "$(grep -c . "$T/t1.csv")" -ge 4 ] && ok "table1 --csv=FILE writes the table" || bad "table1 --csv"
"$PB" list --keys >"$T/k" 2>/dev/null && grep -q '^  seed ' "$T/k" && grep -q '^  systems\[\]\.' "$T/k" &&
    ok "list --keys prints the schema" || bad "list --keys"
"$PB" list >"$T/l" 2>/dev/null && grep -q '^figures' "$T/l" && grep -q '^experiments' "$T/l" && ok "list" || bad "list"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
