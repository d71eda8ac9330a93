#!/usr/bin/env bash
# cli_conventions.sh -- every command parses with the one option layer (experiments/cli.h;
# serve and loadgen too, in a build with HTTP):
#   - --help (and `pagedbench help CMD`) prints the usage on stdout, exit 0, in one format
#     (usage, options, the exit statuses 0 1 2, and 77 where the command skips), naming
#     every option of the command's table (read from its source);
#   - --version on stdout, exit 0;
#   - an unknown option, a missing value and a stray flag value are one two-line error on
#     stderr -- `pagedbench CMD: message` and `Try 'pagedbench CMD --help'.` -- exit 2,
#     nothing on stdout (not the whole help);
#   - `--opt=value` is `--opt value`.
#   bash tests/cli_conventions.sh build/cpu/pagedbench      (from the repository root)
set -u
PB=${1:?usage: cli_conventions.sh path/to/pagedbench}
T=$(mktemp -d /tmp/pb_cli_conv.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

"$PB" --version | grep -Eq '^pagedbench [0-9a-f]{12}(-dirty)?$|^pagedbench no-git$' && ok "pagedbench --version" ||
    bad "pagedbench --version: $("$PB" --version)"
"$PB" help >"$T/h" && grep -q '^usage: pagedbench <command>' "$T/h" && ok "pagedbench help" || bad "pagedbench help"
"$PB" nosuch >"$T/o" 2>"$T/e"; rc=$?
[ $rc = 2 ] && [ ! -s "$T/o" ] && grep -q "^Try 'pagedbench help'" "$T/e" && ok "unknown command -> 2" || bad "unknown command (rc $rc)"

# command -> its source (the option table) and whether it may exit 77
CMDS="run:cmd_run merge:cmd_merge compare:cmd_compare plot:cmd_plot trace:cmd_trace table1:cmd_table1
      list:cmd_list validate:cmd_validate kernels:cmd_kernels profile:cmd_profile bench:../bench/cmd_bench
      bench_scheduler:../bench/bench_scheduler bench_sim:../bench/bench_sim bench_costmodel:../bench/bench_costmodel"
SKIPS="kernels profile bench bench_costmodel"
# serve and loadgen: in a build with HTTP (PB_NET=ON; net_absent.c's commands take no options)
"$PB" serve --help 2>&1 | grep -q "no HTTP support" || CMDS="$CMDS serve:../serve/cmd_serve loadgen:../serve/cmd_loadgen"
for entry in $CMDS; do
    c=${entry%%:*}; src=experiments/${entry#*:}.c
    cmd=${c/_/ }   # bench_scheduler -> "bench scheduler"
    # shellcheck disable=SC2086
    "$PB" $cmd --help >"$T/h" 2>"$T/he"; rc=$?
    if [ $rc = 0 ] && grep -q "^usage: pagedbench $cmd " "$T/h" && grep -q '^options:' "$T/h" &&
       grep -q '^exit status: 0 ok, 1 .*, 2 usage or config error' "$T/h" && [ ! -s "$T/he" ]; then
        ok "$cmd --help: usage, options, exit statuses on stdout"
    else bad "$cmd --help (rc $rc)"; fi
    case " $SKIPS " in
    *" $c "*) grep -q '77 skipped' "$T/h" && ok "$cmd --help documents exit 77" || bad "$cmd --help lacks 77" ;;
    esac
    miss=""
    opts=$(grep -oE '\{"[a-z0-9-]+", (O_[A-Z0-9_]+|'"'"'.'"'"'), ' "$src" | sed 's/{"\([a-z0-9-]*\)".*/\1/')
    if [ ! -f "$src" ]; then bad "$cmd: no source $src"
    elif [ -z "$opts" ] && [ "$c" != bench ]; then bad "$cmd: no option table found in $src"   # bench: subcommands only
    else
        for o in $opts; do grep -q -- "--$o\b" "$T/h" || miss="$miss --$o"; done
        [ -z "$miss" ] && ok "$cmd --help names every option of its table" || bad "$cmd --help lacks$miss"
    fi
    # shellcheck disable=SC2086
    "$PB" help $cmd >"$T/h2" 2>/dev/null && cmp -s "$T/h" "$T/h2" && ok "pagedbench help $cmd" || bad "pagedbench help $cmd"
    # shellcheck disable=SC2086
    "$PB" $cmd --version >"$T/v" 2>/dev/null && grep -q '^pagedbench ' "$T/v" && ok "$cmd --version" || bad "$cmd --version"
    # shellcheck disable=SC2086
    "$PB" $cmd --no-such-option >"$T/o" 2>"$T/e"; rc=$?
    if [ $rc = 2 ] && [ ! -s "$T/o" ] && [ "$(wc -l <"$T/e")" = 2 ] &&
       grep -q "^pagedbench $cmd: unknown option '--no-such-option'$" "$T/e" &&
       grep -q "^Try 'pagedbench $cmd --help'.$" "$T/e"; then
        ok "$cmd: unknown option -> the two-line error, 2"
    else bad "$cmd unknown option (rc $rc, stdout $(wc -c <"$T/o") bytes): $(head -c 300 "$T/e")"; fi
done
# a missing value and a flag given a value
"$PB" run --jobs >"$T/o" 2>"$T/e"; rc=$?
[ $rc = 2 ] && [ ! -s "$T/o" ] && grep -q "^pagedbench run: --jobs: needs a value$" "$T/e" && ok "missing value" ||
    bad "missing value (rc $rc): $(cat "$T/e")"
"$PB" run --quick=1 x.yaml >"$T/o" 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "^pagedbench run: --quick takes no value$" "$T/e" && ok "flag with a value" ||
    bad "flag with a value (rc $rc): $(cat "$T/e")"
"$PB" run --jobs 0 x.yaml >"$T/o" 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "^pagedbench run: --jobs: expected an integer in \[1, 1024\], got '0'$" "$T/e" &&
    ok "bad value names the option, range and value" || bad "bad value (rc $rc): $(cat "$T/e")"

"$PB" table1 --block-size=32 >"$T/a" 2>/dev/null && "$PB" table1 --block-size 32 >"$T/b" 2>/dev/null &&
    cmp -s "$T/a" "$T/b" && ok "table1 --block-size=32 == --block-size 32" || bad "table1 --opt=value"
"$PB" trace --dataset=alpaca --rate=2 --num=20 --seed=4 >"$T/a" 2>/dev/null &&
    "$PB" trace --dataset alpaca --rate 2 --num 20 --seed 4 >"$T/b" 2>/dev/null && cmp -s "$T/a" "$T/b" &&
    ok "trace --opt=value == --opt value" || bad "trace --opt=value"
"$PB" trace --check="$T/a" >"$T/c" 2>/dev/null && grep -q ": ok, 20 requests" "$T/c" && ok "trace --check: verdict on stdout" ||
    bad "trace --check stdout: $(cat "$T/c")"
"$PB" run --figure=fig13 --check >"$T/r" 2>/dev/null && grep -q fig13_sharegpt "$T/r" && ok "run --figure=fig13" ||
    bad "run --figure=fig13"
"$PB" kernels --cpu --grid=nosuch >"$T/o" 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "^pagedbench kernels: --grid: unknown grid 'nosuch'" "$T/e" && ok "kernels --grid error" ||
    bad "kernels --grid error (rc $rc): $(cat "$T/e")"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
