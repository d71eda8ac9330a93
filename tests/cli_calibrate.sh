#!/usr/bin/env bash
# cli_calibrate.sh -- the committed cost-model parameters are reproducible from the
# real GPU operator timings: experiments/calibrate/calibrate.py --check refits every
# hardware YAML's fitted keys on ../shared/data/gpu-profiles and fails if a committed
# value is off by more than 1% (so a hand edit, or a fit that changed, fails CI); and
# custom_allreduce.py --check refits the custom_allreduce_tpN terms on the published
# per-call timings it holds, and flash_attn.py --check FlashAttention-3's prefill rate on
# the FA3 paper's kernel benchmark it holds and the FlashAttention-2 terms on the attention
# profile.
# Where the full profiles are absent (a bare clone, CI) the fits run on
# tests/data/gpu-profiles, the cells calibrate.py and flash_attn.py read (profiles_subset.py); where they
# are present they run there, and the committed subset must be those cells.
# Skips (77; a failure with PAGEDBENCH_NO_SKIP=1) without python3.
#   bash tests/cli_calibrate.sh build/release/pagedbench
set -u
. "$(dirname "$0")/skip.sh"
command -v python3 >/dev/null || pb_skip "no python3"
FULL=${PAGEDBENCH_SHARED_DATA:-$(dirname "$0")/../../shared/data}/gpu-profiles
if [ -d "$FULL/vidur" ]; then
    python3 experiments/calibrate/profiles_subset.py --check --profiles "$FULL"
else
    python3 experiments/calibrate/calibrate.py --check --profiles tests/data/gpu-profiles
fi || exit 1
# the custom all-reduce terms (h100-sxm, h200) from their published per-call timings
python3 experiments/calibrate/custom_allreduce.py --check || exit 1
# FlashAttention-3's prefill compute rate (h100-sxm, h200) from the FA3 paper's bars, and
# the FlashAttention-2 terms of every A100 and Hopper spec from the attention profile (the
# full one, or the committed subset's cells of it)
if [ -d "$FULL/vidur" ]; then
    python3 experiments/calibrate/flash_attn.py --check --profiles "$FULL"
else
    python3 experiments/calibrate/flash_attn.py --check --profiles tests/data/gpu-profiles
fi || exit 1
# a10g has no profiles: its borrowed keys must be a100-40gb's values and sources; a drifted
# copy (a value, a source) is counted, and --write's borrow() puts the lender's back
T=$(mktemp -d) && trap 'rm -rf "$T"' EXIT
cp experiments/hardware/a10g.yaml experiments/hardware/a100-40gb.yaml "$T/"
python3 - "$T" <<'EOF2' || exit 1
import re, shutil, sys
sys.path.insert(0, "experiments/calibrate")
import calibrate as cal
cal.HW_DIR = sys.argv[1]
path = cal.HW_DIR + "/a10g.yaml"
assert cal.borrow("a10g", "a100-40gb", False) == 0, "the committed a10g's borrowed keys differ from a100-40gb's"
good = open(path).read()
bad = re.sub(r"(?m)^  gemm_fixed_us: .*$", "  gemm_fixed_us: 9.999", good)
bad = re.sub(r'(elementwise_fixed_us: "a100-40gb.yaml, borrowed \([^)]*\): )', r"\1X", bad)
assert bad.count("9.999") == 1 and '): Xcalibrate.py' in bad, "the fixture edits found nothing to edit"
open(path, "w").write(bad)
n = cal.borrow("a10g", "a100-40gb", False)
assert n == 2, "a drifted value and a drifted source: %d reported, not 2" % n
cal.borrow("a10g", "a100-40gb", True)
assert open(path).read() == good, "--write did not restore the lender's value and source"
EOF2
echo "ok: a10g's borrowed keys follow a100-40gb's"
# custom_allreduce.py --check compares each committed source (its residual) with the fit's too
mkdir "$T/car" && cp experiments/hardware/h100-sxm.yaml experiments/hardware/h200.yaml "$T/car/"
python3 - "$T/car" <<'EOF2' || exit 1
import contextlib, io, re, sys
sys.path.insert(0, "experiments/calibrate")
import custom_allreduce as car
car.HW_DIR = sys.argv[1]
quiet = lambda: contextlib.redirect_stdout(io.StringIO())
with quiet(), contextlib.redirect_stderr(io.StringIO()):
    assert car.main(["x", "--check"]) == 0, "the committed custom all-reduce terms differ from the fit"
path = car.HW_DIR + "/h100-sxm.yaml"
text = open(path).read()
bad = re.sub(r'(custom_allreduce_tp4_us: "[^"]*residual median \|err\| )[0-9.]+%', r"\g<1>1.0%", text)
assert bad != text, "the fixture edit found nothing to edit"
open(path, "w").write(bad)
err = io.StringIO()
with quiet(), contextlib.redirect_stderr(err):
    assert car.main(["x", "--check"]) == 1, "a hand-edited residual in a source passed --check"
assert "sources.custom_allreduce_tp4_us" in err.getvalue(), err.getvalue()
EOF2
echo "ok: custom_allreduce.py --check compares the committed sources"
