#!/usr/bin/env bash
# cli_calibrate.sh -- the committed cost-model parameters are reproducible from the
# real GPU operator timings: experiments/calibrate/calibrate.py --check refits every
# hardware YAML's fitted keys on ../shared/data/gpu-profiles and fails if a committed
# value is off by more than 1% (so a hand edit, or a fit that changed, fails CI).
# Skips (77) with the reason when the profiles or python3 are absent.
#   bash tests/cli_calibrate.sh build/release/pagedbench
set -u
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
python3 experiments/calibrate/calibrate.py --check
