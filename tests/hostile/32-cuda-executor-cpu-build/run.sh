# In a build without CUDA, `executor: {type: cuda}` is refused at validation, at its line.
PB=$1
"$PB" --help 2>&1 | grep -q "This build has no CUDA" || { echo "a CUDA build: nothing to refuse (skipped)"; exit 0; }
out=$("$PB" run t.yaml --results R 2>&1); rc=$?
echo "$out"
[ $rc = 2 ] && grep -q "^t.yaml:5:18: executor: cuda: this build has no CUDA" <<<"$out" && [ ! -e R ] ||
    { echo "FAIL: exit $rc"; exit 1; }
echo "refused before any point"
