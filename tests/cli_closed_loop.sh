#!/usr/bin/env bash
# cli_closed_loop.sh -- closed-loop conversations and a client concurrency limit from the
# command line (workloads/client.h):
#   - `trace --from csv` keeps a log's conversations (--conversation-column) and with
#     --history append makes each later turn re-send the conversation so far;
#   - `run` of a YAML with `trace:` + `conversation: {think_time_s: 2}` +
#     `max_concurrency: 2` sends each later turn exactly 2 s after the previous turn's
#     finish (its row's arrival_s ignored), never has more than 2 requests outstanding,
#     and the same YAML without the client replays the rows' times; the vLLM-layout
#     JSON says max_concurrency 2 (vLLM's field);
#   - a `measure: {warmup_s: 1}` window under the client averages the requests sent
#     from 1 s on (measured_requests, their mean TTFT);
#   - `trace --config` names the client settings; a conversation on a dataset without
#     conversation ids is an error at its line (exit 2, nothing written).
#   bash tests/cli_closed_loop.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_closed_loop.sh path/to/pagedbench}
PB=$(cd "$(dirname "$PB")" && pwd)/$(basename "$PB")
T=$(mktemp -d /tmp/pb_cli_closed.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

# a log of 3 conversations (session ids) and 2 loose rows, each row's own tokens only:
# the README's example (tests/data/conversation_log.csv)
cp "$(dirname "$0")/data/conversation_log.csv" "$T/log.csv"
if "$PB" trace --from "$T/log.csv" --format csv --conversation-column session --history append \
        -o "$T/conv.csv" 2>"$T/e"; then
    # appended prompts: 100, 100+50+30 = 180, 180+20+20 = 220; 110, 210, 245; 130, 215
    got=$(tail -n +2 "$T/conv.csv" | cut -d, -f2,7,8,9 | tr '\n' ' ')
    want="100,0,1,0 110,0,2,0 120,0,-1,0 180,150,1,1 130,0,3,0 210,170,2,1 220,200,1,2 140,0,-1,0 215,160,3,1 245,235,2,2 "
    [ "$got" = "$want" ] && ok "trace --history append: prompt, history, conversation, turn" || bad "conv.csv: $got"
    grep -q "3 conversations, 5 of their turns after a first one" "$T/e" && ok "trace summary counts conversations" ||
        bad "summary: $(cat "$T/e")"
else bad "trace --from: $(cat "$T/e")"; fi
"$PB" trace --from "$T/log.csv" --format csv --history append >/dev/null 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "has no conversations" "$T/e" && ok "--history append without conversations: exit 2" ||
    bad "rc $rc: $(cat "$T/e")"

yaml() {   # $1: file, $2: extra workload keys, $3: an extra top-level line
    cat >"$1" <<EOF
name: closed
figure: closed
model: opt-13b
hardware: a100-40gb
workload: {trace: $T/conv.csv$2}
systems:
  - {name: vllm, label: vLLM, type: vllm}
EOF
    if [ -n "${3:-}" ]; then echo "$3" >>"$1"; fi
}
yaml "$T/closed.yaml" ", conversation: {think_time_s: 2}, max_concurrency: 2"
yaml "$T/open.yaml" ""
yaml "$T/window.yaml" ", conversation: {think_time_s: 2}, max_concurrency: 2" "measure: {warmup_s: 1}"

# one line per request: prompt_len arrival_s finish_s (the prompts are unique)
rows() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                  { print $c["prompt_len"], $c["arrival_s"], $c["finish_s"] }' "$1"; }
if (cd "$T" && "$PB" run closed.yaml --results r --requests --quiet >/dev/null 2>"$T/e"); then
    rows "$T/r/closed.requests.csv" >"$T/rows"
    [ "$(wc -l <"$T/rows")" = 10 ] && ok "every row sent and recorded" || bad "$(wc -l <"$T/rows") requests"
    # each later turn: exactly 2 s after its previous turn's finish
    awk 'BEGIN { split("180:100 220:180 210:110 245:210 215:130", pr, " ") }
         { arr[$1] = $2; fin[$1] = $3 }
         END { for (k in pr) { split(pr[k], p, ":"); d = arr[p[1]] - fin[p[2]] - 2
                              if (d > 1e-9 || d < -1e-9) { print "turn " p[1] ": sent " arr[p[1]] ", previous finished " fin[p[2]]; bad = 1 } }
               exit bad }' "$T/rows" >"$T/why" && ok "later turns sent 2 s after the previous answer" || bad "$(cat "$T/why")"
    # at every send, at most 2 requests outstanding (sent, not finished)
    awk '{ a[NR] = $2; f[NR] = $3 }
         END { for (k = 1; k <= NR; k++) { n = 0; for (j = 1; j <= NR; j++) n += a[j] <= a[k] && f[j] > a[k]
                                            if (n > 2) { print n " outstanding at " a[k]; bad = 1 } }
               exit bad }' "$T/rows" >"$T/why" && ok "at most 2 outstanding" || bad "$(cat "$T/why")"
    # a first turn or loose row is never sent before its row's time
    awk '$1 == 100 && $2 < 0 || $1 == 110 && $2 < 0.1 - 1e-9 || $1 == 120 && $2 < 0.2 - 1e-9 || $1 == 130 && $2 < 0.4 - 1e-9 ||
         $1 == 140 && $2 < 7 - 1e-9 { bad = 1 } END { exit bad }' "$T/rows" && ok "open rows not sent early" || bad "open rows early"
    grep -q '"max_concurrency": 2' "$T"/r/vllm/closed/*.json && ok "vLLM-layout JSON: max_concurrency 2" ||
        bad "vllm JSON: $(grep -o '"max_concurrency": [^,]*' "$T"/r/vllm/closed/*.json)"
else bad "run closed.yaml: $(cat "$T/e")"; fi
if (cd "$T" && "$PB" run open.yaml --results o --requests --quiet >/dev/null 2>"$T/e"); then
    rows "$T/o/closed.requests.csv" | awk '$1 == 245 { f = 1; g = $2 > 8.999 && $2 < 9.001 } END { exit !(f && g) }' &&
        ok "without the client the rows' times are replayed" || bad "open replay: $(rows "$T/o/closed.requests.csv" | tr '\n' ' ')"
else bad "run open.yaml: $(cat "$T/e")"; fi

# a warm-up window (measure.h) under the client: the requests sent from 1 s on are averaged
if (cd "$T" && "$PB" run window.yaml --results w --requests --quiet >/dev/null 2>"$T/e"); then
    awk -F, 'FNR == NR && FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
             FNR == NR { if ($c["arrival_s"] >= 1) { n++; s += $c["ttft_ms"] }; next }
             FNR == 1 { for (i = 1; i <= NF; i++) d[$i] = i; next }
             { m = $d["measured_requests"]; t = $d["ttft_mean_ms"] }
             END { if (m != n || n == 0 || (t - s / n) * (t - s / n) > 1e-12 * t * t) { print m, n, t, s / n; exit 1 } }' \
        "$T/w/closed.requests.csv" "$T/w/closed.csv" >"$T/why" &&
        ok "measure.warmup_s under a client: the requests sent from 1 s on, their mean TTFT" || bad "window: $(cat "$T/why")"
else bad "run window.yaml: $(cat "$T/e")"; fi

"$PB" trace --config "$T/closed.yaml" >/dev/null 2>"$T/e" &&
    grep -q "closed loop (think 2 s fixed, history as given), max concurrency 2" "$T/e" &&
    ok "trace --config names the client" || bad "trace --config: $(cat "$T/e")"

cat >"$T/bad.yaml" <<'EOF'
name: badc
figure: badc
model: opt-13b
hardware: a100-40gb
workload:
  dataset: sharegpt
  rate: 1
  num_requests: 10
  conversation: {think_time_s: 1}
systems:
  - {name: vllm, label: vLLM, type: vllm}
EOF
(cd "$T" && "$PB" run bad.yaml --results b --quiet >/dev/null 2>"$T/e"); rc=$?
[ $rc = 2 ] && grep -q "bad.yaml:9:.*workload.conversation: needs rows with a conversation_id" "$T/e" && [ ! -e "$T/b" ] &&
    ok "conversation without conversation ids: exit 2 at its line, nothing written" || bad "rc $rc: $(cat "$T/e")"

echo "cli_closed_loop: $pass passed, $fail failed" >&2
[ $fail = 0 ]
