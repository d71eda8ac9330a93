#!/usr/bin/env bash
# serve_bench.sh [PAGEDBENCH] -- what the HTTP path costs, printed as figures (a benchmark,
# not a test): `pagedbench serve` over the sim of vLLM on OPT-13B / A100-40GB at --speedup
# 1e6 (each step's sleep ~0: the engine's compute and the HTTP path remain), on loopback.
#   1. requests/s sustained: 64 closed-loop clients (Python asyncio, keep-alive), each
#      request 16 prompt ids and 16 tokens not streamed, for 5 s;
#   2. the HTTP path's added latency, from a second server at --speedup 1 (real time: the
#      engine's clock is the wall clock): 20 streamed requests one at a time, 32 tokens
#      each; the client's TTFT and mean gap between chunks minus the engine's TTFT and
#      TPOT for the same requests (/metrics histogram sums);
#   3. the highest request rate `pagedbench loadgen` keeps on schedule (at most 1% of the
#      requests sent more than 10 ms late, the median of 3 runs; every lower rate too):
#      traces of max(400, rate / 2) requests (Alpaca lengths, 16 output tokens, Poisson
#      arrivals in the paper's 10 ms quanta) at rates from 50 to 12,800 req/s, the rates
#      alternated round by round (rate 1, 2, ... then again) so that a noisy minute spreads
#      over every rate; with the achieved send rate (median) against the target.
# Median of 3 runs of each.  Numbers from a shared machine are noisy: RESULTS.md says
# which machine gave them.  `serve_bench.sh PAGEDBENCH loadgen` runs part 3 only.
set -u
PB=${1:-build/release/pagedbench}
ONLY=${2:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
T=$(mktemp -d /tmp/pb_serve_bench.XXXXXX)
"$PB" serve experiments/fig12_opt13b_sharegpt.yaml --system vllm --speedup 1e6 --port 0 --max-connections 8192 2>"$T/log" &
PID=$!
trap 'kill -INT $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do
    PORT=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\);.*|\1|p' "$T/log" | head -1)
    [ -n "$PORT" ] && break; sleep 0.1
done
[ "$ONLY" = loadgen ] || python3 - "$PORT" <<'PY'
import asyncio, http.client, json, statistics, sys, time
port = int(sys.argv[1])
body = json.dumps({"model": "opt-13b", "prompt": list(range(1, 17)), "max_tokens": 16}).encode()
req = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body

async def client(stop, done):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    while time.time() < stop:
        w.write(req)
        await w.drain()
        head = await r.readuntil(b"\r\n\r\n")
        n = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
        await r.readexactly(n)
        done.append(1)
    w.close()

async def rps():
    done = []
    t0 = time.time()
    await asyncio.gather(*(client(t0 + 5, done) for _ in range(64)))
    return len(done) / (time.time() - t0)

r = [asyncio.run(rps()) for _ in range(3)]
print("serve_requests_per_s %.0f   (median of 3: %s)" % (statistics.median(r), ", ".join("%.0f" % x for x in r)))
PY
[ "$ONLY" = loadgen ] || { "$PB" serve experiments/fig12_opt13b_sharegpt.yaml --system vllm --speedup 1 --port 0 2>"$T/log1" &
PID1=$!
for _ in $(seq 100); do
    PORT1=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\);.*|\1|p' "$T/log1" | head -1)
    [ -n "$PORT1" ] && break; sleep 0.1
done
python3 - "$PORT1" <<'PY'
import http.client, json, statistics, sys, time
port = int(sys.argv[1])
def metric(name):
    c = http.client.HTTPConnection("127.0.0.1", port); c.request("GET", "/metrics")
    txt = c.getresponse().read().decode(); c.close()
    return float([l for l in txt.splitlines() if l.startswith(name + "{")][0].rsplit(" ", 1)[1])
ttft, itl = [], []
s0, t0 = metric("vllm:time_to_first_token_seconds_sum"), metric("vllm:time_per_output_token_seconds_sum")
for i in range(20):
    c = http.client.HTTPConnection("127.0.0.1", port)
    start = time.time()
    c.request("POST", "/v1/completions", json.dumps({"model": "opt-13b", "prompt": [1, 2, 3, i + 4], "max_tokens": 32, "stream": True}))
    r = c.getresponse()
    times, buf = [], b""
    while True:
        b = r.read1(65536)
        if not b:
            break
        now = time.time(); buf += b
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            if ev.startswith(b"data: {") and b'"text"' in ev:
                times.append(now)
    c.close()
    ttft.append(times[0] - start)
    itl.append((times[-1] - times[0]) / (len(times) - 1))
e_ttft = (metric("vllm:time_to_first_token_seconds_sum") - s0) / 20
e_tpot = (metric("vllm:time_per_output_token_seconds_sum") - t0) / 20
print("serve_added_ttft_ms %.3f   (client %.3f ms, engine %.3f ms)" % ((statistics.mean(ttft) - e_ttft) * 1e3, statistics.mean(ttft) * 1e3, e_ttft * 1e3))
print("serve_added_us_per_streamed_token %.1f   (client %.3f ms, engine TPOT %.3f ms)" % ((statistics.mean(itl) - e_tpot) * 1e6, statistics.mean(itl) * 1e3, e_tpot * 1e3))
PY
kill -INT $PID1; wait $PID1; }
RATES="50 100 200 400 800 1600 3200 6400 12800"
num() { echo $(($1 / 2 > 400 ? $1 / 2 : 400)); }
for rate in $RATES; do
    "$PB" trace --dataset alpaca --rate "$rate" --num "$(num "$rate")" --seed 1 >"$T/trace$rate.csv" 2>/dev/null
    python3 - "$T/trace$rate.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    r["output_len"] = "16"
w = csv.DictWriter(open(sys.argv[1], "w", newline=""), fieldnames=list(rows[0].keys()))
w.writeheader(); w.writerows(rows)
PY
done
for round in 1 2 3; do
    for rate in $RATES; do
        "$PB" loadgen --url "http://127.0.0.1:$PORT" --trace "$T/trace$rate.csv" --model opt-13b >"$T/lg.out" 2>"$T/lg.err"
        echo "$rate $(sed -n 's/^Requests sent > 10 ms late: *//p' "$T/lg.out") $(sed -n 's/^Achieved send rate (req\/s, trace): *//p' "$T/lg.out") $(sed -n 's/^Mean send lateness (ms, wall): *//p' "$T/lg.out")" >>"$T/runs"
    done
done
best=0
on=1   # every rate so far on schedule
for rate in $RATES; do
    lates=$(awk -v r="$rate" '$1 == r { print $2 }' "$T/runs" | tr '\n' ' ')
    med=$(awk -v r="$rate" '$1 == r { print $2 }' "$T/runs" | sort -n | sed -n 2p)
    ach=$(awk -v r="$rate" '$1 == r { print $3 }' "$T/runs" | sort -n | sed -n 2p)
    mean=$(awk -v r="$rate" '$1 == r { print $4 }' "$T/runs" | sort -n | sed -n 2p)
    n=$(num "$rate")
    echo "loadgen_rate $rate req/s: achieved (median) $ach, sent > 10 ms late: $lates of $n, mean lateness (median) $mean ms"
    if [ "$on" = 1 ] && [ "$med" -le $((n / 100)) ]; then best=$rate; else on=0; fi
done
echo "loadgen_max_on_schedule_req_per_s $best   (the highest rate of the ladder with every rate below it on schedule too)"
exit 0
