#!/usr/bin/env bash
# cli_trace_sharegpt.sh -- a ShareGPT-format JSON sample (tests/data/sharegpt_sample.json,
# written for this test) becomes a trace through the real tokenizer (GPT-2 BPE,
# tools/tokenize/pb_tokenize.py) and replays through `pagedbench run`.  The BPE files
# are tests/data/gpt2_subset (the merges the sample uses, tools/tokenize/subset_vocab.py)
# unless PAGEDBENCH_TOKENIZER_DIR names others; when the full GPT-2 files are beside the
# checkout (../shared/data/tokenizers/gpt2) the subset must give the same trace.  Skips
# (77; a failure with PAGEDBENCH_NO_SKIP=1) without python3 or its `tokenizers` package.
#   bash tests/cli_trace_sharegpt.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_trace_sharegpt.sh path/to/pagedbench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/skip.sh"
command -v python3 >/dev/null || pb_skip "python3 not installed"
python3 -c 'import tokenizers' 2>/dev/null || pb_skip "python package tokenizers not installed (pip install tokenizers)"
FULL=$ROOT/../shared/data/tokenizers/gpt2
export PAGEDBENCH_TOKENIZER_DIR=${PAGEDBENCH_TOKENIZER_DIR:-$ROOT/tests/data/gpt2_subset}
VOCAB=$PAGEDBENCH_TOKENIZER_DIR
[ -r "$VOCAB/encoder.json" ] && [ -r "$VOCAB/vocab.bpe" ] || { echo "FAIL: GPT-2 BPE files not found in $VOCAB" >&2; exit 1; }
T=$(mktemp -d /tmp/pb_cli_sharegpt.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }
SAMPLE=$ROOT/tests/data/sharegpt_sample.json

if "$PB" trace --from="$SAMPLE" --format=sharegpt-json --rate=4 --seed=3 -o "$T/trace.csv" 2>"$T/err"; then
    ok "sharegpt-json converts"
else bad "convert: $(cat "$T/err")"; fi
# six conversations, one with a single turn (skipped, as vLLM's sample_requests)
[ "$(tail -n +2 "$T/trace.csv" | wc -l)" = 5 ] && ok "five requests (the one-turn conversation skipped)" ||
    bad "rows: $(tail -n +2 "$T/trace.csv" | wc -l)"
# "Hello world" is GPT-2 tokens [15496, 995]; OPT prepends </s>: 3
[ "$(sed -n 2p "$T/trace.csv" | cut -d, -f2)" = 3 ] && ok "prompt 'Hello world' = 2 BPE tokens + </s>" ||
    bad "first prompt length $(sed -n 2p "$T/trace.csv")"
"$PB" trace --from "$SAMPLE" --format sharegpt-json --rate 4 --seed 3 --no-bos 2>/dev/null | sed -n 2p | cut -d, -f2 |
    grep -qx 2 && ok "--no-bos counts the BPE tokens only" || bad "--no-bos"
"$PB" trace --from "$SAMPLE" --format sharegpt-json --rate 4 --seed 3 2>/dev/null | cmp -s - "$T/trace.csv" &&
    ok "same options, same bytes" || bad "not deterministic"
"$PB" trace --check "$T/trace.csv" >"$T/check.out" 2>/dev/null && grep -q ": ok, 5 requests" "$T/check.out" &&
    ok "trace --check: verdict on stdout" || bad "check: $(cat "$T/check.out")"
if [ -r "$FULL/encoder.json" ] && [ "$VOCAB" != "$FULL" ]; then
    PAGEDBENCH_TOKENIZER_DIR=$FULL "$PB" trace --from "$SAMPLE" --format sharegpt-json --rate 4 --seed 3 2>/dev/null |
        cmp -s - "$T/trace.csv" && ok "the BPE subset gives the full GPT-2 files' trace" || bad "subset and full BPE differ"
fi
printf '[{"id": "x", "conversations": "not a list"}]' >"$T/bad.json"
"$PB" trace --from "$T/bad.json" --format sharegpt-json --rate 1 >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "no \`conversations\` list" "$T/e" && ok "malformed ShareGPT: exit 2 with the reason" ||
    bad "malformed: rc $rc $(cat "$T/e")"

cat >"$T/replay.yaml" <<Y
name: sharegpt_replay
figure: sharegpt_replay
model: opt-13b
hardware: a100-40gb
workload: {trace: $T/trace.csv}
systems:
  - {name: vllm, label: vLLM, type: vllm}
Y
if "$PB" run "$T/replay.yaml" --results="$T/r" --requests --no-report >"$T/run.out" 2>"$T/run.err"; then
    grep -q "^Check complete: PASS (5 of 5 requests finished" "$T/run.out" && ok "the trace replays: 5 of 5 finished" ||
        bad "replay: $(grep Check "$T/run.out")"
    # the per-request file carries the trace's lengths
    paste -d, <(tail -n +2 "$T/trace.csv" | cut -d, -f2,3) <(cat "$T/r/sharegpt_replay.requests.csv" |
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c["prompt_len"] "," $c["output_len"] }') | awk -F, '$1 != $3 || $2 != $4 { bad = 1 } END { exit bad }' &&
        ok "replayed lengths match the trace" || bad "lengths differ"
else bad "run: $(tail -n 3 "$T/run.err")"; fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
