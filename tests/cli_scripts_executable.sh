#!/usr/bin/env bash
# cli_scripts_executable.sh -- every tracked file that starts with a shebang (#!) is
# executable in git (mode 100755) and in the checkout, so `tools/slurm/sweep.sh --help`
# runs as the README writes it.  Skips (77) outside a git checkout.
#   bash tests/cli_scripts_executable.sh        (from the repository root)
set -u
. "$(dirname "$0")/skip.sh"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || pb_skip "not a git checkout"
bad=0 n=0
while IFS= read -r -d '' entry; do
    mode=${entry%% *}
    path=${entry#*$'\t'}
    [ -f "$path" ] && head -c 2 "$path" | cmp -s - <(printf '#!') || continue
    n=$((n + 1))
    if [ "$mode" != 100755 ]; then echo "[FAIL] $path: mode $mode in git (git update-index --chmod=+x)" >&2; bad=$((bad + 1))
    elif [ ! -x "$path" ]; then echo "[FAIL] $path: not executable in the checkout" >&2; bad=$((bad + 1)); fi
done < <(git ls-files -s -z)
echo "$n scripts with a shebang, $bad not executable"
[ "$bad" = 0 ] && [ "$n" -gt 0 ]
