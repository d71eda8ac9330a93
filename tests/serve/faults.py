#!/usr/bin/env python3
"""faults.py PORT -- the server's answers and faults, with the standard library only.

Checks: /health, /v1/models, completions (text, token ids, n, beam search), chat,
streaming (chunks, finish_reason, include_usage, [DONE]), the error statuses (400 bad
JSON / field / length, 404 model and path, 413 body), clients that vanish mid-stream
and while waiting (their KV freed: the running count and cache usage fall to 0), a
slow reader beside fast requests, a burst of N concurrent connections (all answered
or refused with a status, none left open), /metrics names and counts."""
import asyncio, http.client, json, socket, sys, time

PORT = int(sys.argv[1])
BURST = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
MODEL = sys.argv[3] if len(sys.argv) > 3 else "opt-13b"
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what, file=sys.stderr)


def req(method, path, body=None, raw=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    c.request(method, path, body=data, headers=headers or {"Content-Type": "application/json"})
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, out


def metrics():
    st, out = req("GET", "/metrics")
    vals = {}
    for line in out.decode().splitlines():
        if line.startswith("#") or not line:
            continue
        name, v = line.rsplit(" ", 1)
        vals[name.split("{")[0] if "bucket" not in name else name] = float(v)
    return vals


def wait_idle(what, limit=10.0):
    t0 = time.time()
    while time.time() - t0 < limit:
        m = metrics()
        if m["vllm:num_requests_running"] == 0 and m["vllm:num_requests_waiting"] == 0 and m["vllm:gpu_cache_usage_perc"] == 0:
            return time.time() - t0
        time.sleep(0.01)
    check(False, what + ": still running / holding KV after %.0f s" % limit)
    return limit


# ---- answers ----
st, _ = req("GET", "/health")
check(st == 200, "/health 200")
st, out = req("GET", "/v1/models")
check(st == 200 and json.loads(out)["data"][0]["id"] == MODEL, "/v1/models names the model")

st, out = req("POST", "/v1/completions", {"model": MODEL, "prompt": [5, 6, 7, 8], "max_tokens": 7, "return_token_ids": True})
j = json.loads(out)
check(st == 200 and j["object"] == "text_completion", "completion 200")
check(j["usage"] == {"prompt_tokens": 4, "completion_tokens": 7, "total_tokens": 11}, "usage of token ids exact: %s" % j["usage"])
check(len(j["choices"][0]["token_ids"]) == 7 and j["choices"][0]["finish_reason"] == "length", "7 ids, finish length")

st, out = req("POST", "/v1/completions", {"model": MODEL, "prompt": "Hello world", "max_tokens": 3, "n": 3, "ignore_eos": True, "min_tokens": 3})
j = json.loads(out)
check(st == 200 and len(j["choices"]) == 3 and j["usage"]["completion_tokens"] == 9, "n=3: three choices, 9 tokens")
st, out = req("POST", "/v1/completions", {"model": MODEL, "prompt": "Hello world", "max_tokens": 4, "n": 2, "best_of": 4, "use_beam_search": True})
j = json.loads(out)
check(st == 200 and len(j["choices"]) == 2 and j["usage"]["completion_tokens"] == 8, "beam 4, n 2: two choices")
st, out = req("POST", "/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5})
j = json.loads(out)
check(st == 200 and j["object"] == "chat.completion" and j["choices"][0]["message"]["role"] == "assistant" and j["usage"]["completion_tokens"] == 5, "chat 200")

# streaming: chunks, one finish_reason, a usage chunk, [DONE]
c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
c.request("POST", "/v1/completions", body=json.dumps({"model": MODEL, "prompt": "a", "max_tokens": 6, "stream": True, "stream_options": {"include_usage": True}}))
r = c.getresponse()
check(r.status == 200 and r.getheader("Content-Type") == "text/event-stream", "stream 200 text/event-stream")
events = [e for e in r.read().decode().split("\n\n") if e]
c.close()
check(events[-1] == "data: [DONE]", "stream ends with [DONE]")
chunks = [json.loads(e[6:]) for e in events[:-1]]
tok = [ch for ch in chunks if ch["choices"]]
check(len(tok) == 6 and tok[-1]["choices"][0]["finish_reason"] == "length" and all(t["choices"][0]["finish_reason"] is None for t in tok[:-1]), "6 token chunks, the last with finish length")
check(chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 6, "usage chunk")

# ---- errors ----
for body, code, what in [
        (b"{bad", 400, "malformed JSON"), (b"[1,2]", 400, "not an object"),
        (json.dumps({"model": MODEL, "prompt": "x", "max_tokens": 0}).encode(), 400, "max_tokens 0"),
        (json.dumps({"model": MODEL, "prompt": "x", "max_tokens": 100000}).encode(), 400, "over max_model_len"),
        (json.dumps({"model": MODEL, "prompt": "x", "stop": ["\n"]}).encode(), 400, "stop strings"),
        (json.dumps({"model": MODEL, "prompt": "x", "n": 1, "best_of": 3}).encode(), 400, "best_of without beam"),
        (json.dumps({"model": MODEL, "prompt": {"a": 1}}).encode(), 400, "prompt an object"),
        (json.dumps({"model": "nope", "prompt": "x"}).encode(), 404, "unknown model"),
        (b"{" + b"\"p\":\"" + b"x" * (2 << 20) + b"\"}", 413, "2 MiB body")]:
    st, out = req("POST", "/v1/completions", raw=body)
    e = json.loads(out).get("error", {})
    check(st == code and e.get("code") == code and e.get("message"), "%s: %d (got %d %s)" % (what, code, st, out[:120]))
st, out = req("GET", "/v1/nothing")
check(st == 404 and json.loads(out)["error"]["code"] == 404, "unknown path 404")

# ---- clients that vanish ----
def raw_request(body):
    s = socket.create_connection(("127.0.0.1", PORT))
    b = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(b) + b)
    return s

s = raw_request({"model": MODEL, "prompt": "x", "max_tokens": 1500, "stream": True})
got = s.recv(4096)
check(b"200" in got.split(b"\r\n")[0], "vanishing streamer got its 200")
s.close()
check(wait_idle("client gone mid-stream") < 5, "mid-stream vanish freed at once")
s = raw_request({"model": MODEL, "prompt": "x", "max_tokens": 1500})
time.sleep(0.2)
s.close()
check(wait_idle("client gone while waiting (not streamed)") < 5, "vanish while waiting freed at once")

# a slow reader of a long stream does not hold back a short request beside it
s = raw_request({"model": MODEL, "prompt": "x", "max_tokens": 300, "stream": True})
s.recv(100)
t0 = time.time()
st, _ = req("POST", "/v1/completions", {"model": MODEL, "prompt": "y", "max_tokens": 2})
check(st == 200 and time.time() - t0 < 5, "a short request beside a slow reader: %.2f s" % (time.time() - t0))
while True:
    b = s.recv(64)
    if not b or b.endswith(b"data: [DONE]\n\n\r\n") or b"0\r\n\r\n" in b:
        break
    time.sleep(0.001)
s.close()
wait_idle("slow reader")

# ---- a burst of concurrent connections ----
async def one(i, results):
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT), 60)
        b = json.dumps({"model": MODEL, "prompt": [1, 2, 3, i % 50 + 1], "max_tokens": 4}).encode()
        w.write(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(b) + b)
        await w.drain()
        data = await asyncio.wait_for(r.read(), 120)
        w.close()
        results.append(int(data.split(b" ", 2)[1]) if data else -1)
    except Exception as ex:
        results.append(str(type(ex).__name__))

async def burst(n):
    results = []
    await asyncio.gather(*(one(i, results) for i in range(n)))
    return results

t0 = time.time()
res = asyncio.run(burst(BURST))
dt = time.time() - t0
ok = sum(1 for x in res if x == 200)
other = {}
for x in res:
    if x != 200:
        other[x] = other.get(x, 0) + 1
print("burst: %d connections, %d answered 200, others %s, %.2f s" % (BURST, ok, other, dt))
check(len(res) == BURST and ok + sum(v for k, v in other.items() if k in (429, 503)) == BURST, "burst: every connection answered (200/429/503)")
wait_idle("after the burst")
m = metrics()
for name in ["vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:gpu_cache_usage_perc", "vllm:num_preemptions_total",
             "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:time_to_first_token_seconds_count",
             "vllm:time_per_output_token_seconds_count", "vllm:e2e_request_latency_seconds_count"]:
    check(name in m, "metric " + name)
check(m["vllm:e2e_request_latency_seconds_count"] >= ok + 6, "e2e histogram counts the finished requests")
print("faults.py: %d failure(s)" % len(fails))
sys.exit(1 if fails else 0)
