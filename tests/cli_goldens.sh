#!/usr/bin/env bash
# cli_goldens.sh -- the pinned figures (tools/goldens.sh): the quick CSV of every figure,
# Table 1 and the validation table, recomputed and compared byte for byte with
# tests/golden/.  A change of the model on purpose rewrites them with
# `tools/goldens.sh write PAGEDBENCH` (or ./run_all.sh goldens); the commit shows the diff.
#   bash tests/cli_goldens.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_goldens.sh path/to/pagedbench}
bash "$(dirname "$0")/../tools/goldens.sh" check "$PB"
