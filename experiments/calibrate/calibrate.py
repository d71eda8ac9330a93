#!/usr/bin/env python3
"""calibrate.py -- fit the sim's cost-model parameters on real GPU operator timings.

    python3 experiments/calibrate/calibrate.py [--profiles DIR] [--write | --check] [HARDWARE ...]

Reads the per-operator GPU timings of ../shared/data/gpu-profiles/ (Vidur's profiled
tables: A100/H100 linear layers by token count and TP, A100 attention, NCCL all-reduce,
host overheads of a vLLM-derived engine; see that folder's README) and fits, per GPU:

  GEMM         t = sqrt(compute^2 + memory^2) + gemm_fixed_us over the library's
               fastest tile shape and split-K factor: tile-and-wave compute at
               gemm_flops_efficiency, bytes / min(HBM * gemm_bw_efficiency, active
               CTAs * gemm_sm_bw_GBps) (the sim's own formula, executors/executor_sim.h),
               on every (M = tokens, N, K, TP) shape of compute/<gpu>/*/mlp.csv;
               residuals also per token-count bucket
  element-wise t = elementwise_fixed_us + bytes / (HBM * elementwise_bw_efficiency),
               on the norm / activation / rotary columns
  prefill attn t = prefill_attn_fixed_us + causal FLOPs / (peak * prefill_attn_flops_efficiency),
               on the full-prompt rows (kv_cache_size 0) of a100/attention.csv
  all-reduce   t = allreduce_tpN_us + bytes / allreduce_tpN_GBps, per TP degree,
               on network/<gpu>_dgx/all_reduce.csv (one node, NVSwitch)
  host         framework.python: step_us + seq_us * batch (TP 1) and worker_us +
               worker_seq_us * batch (extra at TP > 1: Ray RPC + barrier), on the
               mean host time per step of a100@0633efa/cpu_overheads.csv (wall time /
               steps - the model-execution mean)

Every fit minimises the squared log error (relative error) with Nelder-Mead, and
reports its residual: median and 90th-percentile |relative error| over every row.
Data of other models is used by shape (M, N, K, TP), never by model name.  Nothing
here reads a paper serving figure.  Decode-attention kernel terms (paper Fig. 18a),
swap terms (Fig. 19a), GEMM tile shapes, L2 bandwidth and the C++ framework terms are
not fitted here; their sources stay in the YAML.

It first says what the GPU calibration sweeps of `./run_all.sh gpu` measured
(results/gpu/*/calib_*.csv, read by gpu_sweep.py beside this file), or that they are absent.

--write rewrites the fitted keys (value and source) in experiments/hardware/<hw>.yaml;
--check recomputes and exits 1 if a committed value is off by more than 1% (the
committed YAML is reproducible from the data); neither: print the report.  Without the
profiles folder it says SKIP and exits 77.  Standard library only.
"""
import argparse
import csv
import glob
import math
import os
import re
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gpu_sweep  # noqa: E402  (the GPU calibration sweeps' reader, beside this file)
HW_DIR = os.path.join(ROOT, "experiments", "hardware")

# Hardware base numbers the fits need (datasheets; the same as the YAMLs' base keys).
TILES = [(256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64)]


def read_base(hw):
    """hbm_bandwidth_GBps, fp16_tflops, n_sms, l2_bandwidth_GBps from the YAML."""
    out = {}
    with open(os.path.join(HW_DIR, hw + ".yaml")) as f:
        for line in f:
            m = re.match(r"^\s*(hbm_bandwidth_GBps|fp16_tflops|n_sms|l2_bandwidth_GBps):\s*([0-9.eE+-]+)", line)
            if m and m.group(1) not in out:
                out[m.group(1)] = float(m.group(2))
    return out


# ---- fitting -------------------------------------------------------------------------
def nelder_mead(f, x0, steps, iters=300, tol=None):
    """Minimise f from x0 (simplex edges `steps`): `iters` iterations, or fewer once the simplex's
    values agree to a relative `tol`; returns the best vertex."""
    n = len(x0)
    pts = [list(x0)] + [[x0[j] + (steps[j] if j == i else 0) for j in range(n)] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        if tol is not None and vals[-1] - vals[0] <= tol * abs(vals[0]):
            break
        c = [sum(p[j] for p in pts[:-1]) / n for j in range(n)]
        xr = [c[j] + (c[j] - pts[-1][j]) for j in range(n)]
        fr = f(xr)
        if fr < vals[0]:
            xe = [c[j] + 2 * (c[j] - pts[-1][j]) for j in range(n)]
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = [c[j] + 0.5 * (pts[-1][j] - c[j]) for j in range(n)]
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                for i in range(1, n + 1):
                    pts[i] = [pts[0][j] + 0.5 * (pts[i][j] - pts[0][j]) for j in range(n)]
                    vals[i] = f(pts[i])
    return pts[min(range(n + 1), key=lambda i: vals[i])]


def sq_log_err(pred_meas):
    s = 0.0
    for p, m in pred_meas:
        s += math.log(p / m) ** 2
    return s / max(1, len(pred_meas))


def residual(pred_meas):
    e = sorted(abs(p / m - 1) for p, m in pred_meas)
    if not e:
        return "no rows"
    return "median |err| %.1f%%, p90 %.1f%%" % (100 * e[len(e) // 2], 100 * e[(9 * len(e)) // 10])


def interval(pred_meas):
    """'[p10, p90]' of measured / predicted: the 80% interval a prediction's error bar takes (executor_sim.h)."""
    r = sorted(m / p for p, m in pred_meas)
    return "[%.3f, %.3f]" % (r[len(r) // 10], r[(9 * len(r)) // 10])


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def med(r, op):
    v = r.get("time_stats.%s.median" % op)
    return float(v) * 1e-3 if v not in (None, "") else None


# ---- GEMMs and element-wise kernels (mlp.csv) -----------------------------------------
def mlp_rows(prof, gpu):
    files = sorted(glob.glob(os.path.join(prof, "vidur", "compute", gpu, "*", "*", "mlp.csv")))
    gemms, elems = [], []
    for path in files:
        for r in rows(path):
            d, nh, nkv = int(r["n_embd"]), int(r["n_head"]), int(r["n_kv_head"])
            f, t, M = int(r["n_expanded_embd"]), int(r["num_tensor_parallel_workers"]), int(r["num_tokens"])
            gated, hd = r["use_gated_mlp"] == "True", d // nh
            shapes = {"attn_pre_proj": (d, (nh + 2 * nkv) * hd // t), "attn_post_proj": (nh * hd // t, d),
                      "mlp_up_proj": (d, (2 if gated else 1) * f // t), "mlp_down_proj": (f // t, d)}
            for op, (K, N) in shapes.items():
                m = med(r, op)
                if m and m > 0:
                    gemms.append((M, K, N, m, op))
            if not gated:
                continue      # phi-2: stock LayerNorm/GELU, parallel block; the gated models' kernels only
            eb = {"input_layernorm": 2 * M * d * 2, "post_attention_layernorm": 2 * M * d * 2,
                  "mlp_act": 3 * M * (f // t) * 2,
                  "attn_rope": 2 * M * (nh + nkv) * hd // t * 2}
            for op, by in eb.items():
                m = med(r, op)
                if m and m > 0:
                    elems.append((by, m))
    return files, gemms, elems


# The sim's GEMM model (executors/executor_sim.h, gemm_model): for every output tile shape
# (TILES) and split-K factor (SPLITK; a slice keeps >= SPLITK_MIN_K of K; splits only while
# the tiles do not fill the SMs) a configuration has
#   compute = waves * 2 tm tn ceil(K/k) / min(L2 feed, peak * eff / SMs)
#   memory  = (K N + M K + M N) dtype + (k > 1: M N fp32 partials written and read back)
#             / min(HBM * bweff, weight streams * per-SM bandwidth), one weight stream per
#             tile column and K slice (ceil(N / tn) * k, at most one per SM)
#   time    = sqrt(compute^2 + memory^2) + fixed * (1, or 2 with a split-K reduction)
# The library's pick is the fastest configuration at M rounded up to the tile-height unit
# (the gcd of the tile heights; the sim tabulates it per unit), timed at the exact M.
FIT_EVERY = 16       # the GEMM fit runs on every 16th row of each operator; residuals are over all rows
SPLITK = [1, 2, 4, 8, 16]
SPLITK_MIN_K = 128
M_UNIT = 64          # gcd of TILES' heights


def gemm_configs(Mr, K, N, base):
    """(L2 feed FLOP/s per SM, FLOPs of the CTAs of the critical SM, weight streams, split) per configuration at Mr:
    the weights stream through ceil(N / tn) * k CTAs (one per tile column and K slice; more tile rows re-read
    the same tiles from L2), each at most at the per-SM bandwidth."""
    sms, l2 = base["n_sms"], base["l2_bandwidth_GBps"] * 1e9
    out = []
    for tm, tn in TILES:
        feed = l2 / sms * 2 * tm * tn / ((tm + tn) * 2)
        cols = math.ceil(N / tn)
        tiles = math.ceil(Mr / tm) * cols
        for k in SPLITK:
            if k > 1 and (tiles >= sms or K / k < SPLITK_MIN_K):
                continue
            out.append((feed, math.ceil(tiles * k / sms) * 2.0 * tm * tn * math.ceil(K / k), min(cols * k, sms), k))
    return out


def gemm_cfg_time(cfg, M, K, N, x, base):
    eff, bweff, smbw, fixed = x
    feed, work, act, k = cfg
    cm = base["fp16_tflops"] * 1e12 * eff / base["n_sms"]
    c = work / min(feed, cm)
    bw = min(base["hbm_bandwidth_GBps"] * 1e9 * bweff, act * smbw * 1e9)
    by = (K * N + M * K + M * N) * 2 + (M * N * 4 * 2 * k if k > 1 else 0)
    return math.sqrt(c * c + (by / bw) ** 2) + fixed * 1e-6 * (2 if k > 1 else 1)


def gemm_pick(cfgs, M, K, N, x, base):
    Mr = math.ceil(M / M_UNIT) * M_UNIT
    best = min(cfgs, key=lambda cf: gemm_cfg_time(cf, Mr, K, N, x, base))
    return gemm_cfg_time(best, M, K, N, x, base)


def gemm_pred(M, K, N, x, base):
    """x = (gemm_flops_efficiency, gemm_bw_efficiency, gemm_sm_bw_GBps, gemm_fixed_us); seconds."""
    return gemm_pick(gemm_configs(math.ceil(M / M_UNIT) * M_UNIT, K, N, base), M, K, N, x, base)


M_BUCKETS = [(1, 64), (65, 192), (193, 512), (513, 4096), (4097, 32768)]


def bucket_residuals(rows, buckets=None):
    """'M 1-64: 1.01 [0.95-1.07], ...': median pred/measured and its p10-p90 per token-count bucket."""
    out = []
    for lo, hi in buckets or M_BUCKETS:
        v = sorted(p / m for M, p, m in rows if lo <= M <= hi)
        if v:
            out.append("M %d-%d %.2f [%.2f-%.2f]" % (lo, hi, v[len(v) // 2], v[len(v) // 10], v[(9 * len(v)) // 10]))
    return ", ".join(out)


def by_operator(gemms, every, keep=lambda g: True):
    """Every `every`-th row (of those `keep` passes) of each operator's rows in profile order: a
    sample of all four GEMM kinds (a stride over the interleaved rows would pick one kind)."""
    ops = sorted({g[4] for g in gemms})
    return [g for op in ops for g in [g for g in gemms if g[4] == op and keep(g)][::every]]


def fit_gemm(gemms, base):
    pre = [(gemm_configs(math.ceil(M / M_UNIT) * M_UNIT, K, N, base), M, K, N, m, op) for M, K, N, m, op in gemms]
    sub = by_operator(pre, FIT_EVERY)
    ok = lambda x: 0.05 < x[0] <= 1 and 0.05 < x[1] <= 1 and x[2] > 1 and x[3] >= 0
    f = lambda x: sq_log_err([(gemm_pick(cf, M, K, N, x, base), m) for cf, M, K, N, m, _ in sub]) if ok(x) else 1e9
    x = nelder_mead(f, [0.72, 0.85, 30.0, 3.0], [0.05, 0.05, 10.0, 1.0], iters=1500, tol=1e-7)
    rows = [(M, gemm_pick(cf, M, K, N, x, base), m) for cf, M, K, N, m, _ in pre]
    res = residual([(p, m) for _, p, m in rows])
    return x, res, bucket_residuals(rows), interval([(p, m) for _, p, m in rows])


def fit_elem(elems, base):
    hbm = base["hbm_bandwidth_GBps"] * 1e9
    f = lambda x: sq_log_err([(abs(x[1]) * 1e-6 + by / (hbm * x[0]), m) for by, m in elems]) if 0.05 < x[0] <= 1 else 1e9
    x = nelder_mead(f, [0.6, 3.0], [0.1, 1.0])
    pm = [(abs(x[1]) * 1e-6 + by / (hbm * x[0]), m) for by, m in elems]
    return x[0], abs(x[1]), residual(pm), interval(pm)


# ---- prefill attention (attention.csv, full prompts) ----------------------------------
def fit_prefill_attn(prof, base):
    path = os.path.join(prof, "vidur", "a100", "attention.csv")
    pts = []
    for r in rows(path):
        if r["is_prefill"] != "True" or int(r["kv_cache_size"]) != 0:
            continue
        P = int(r["prefill_chunk_size"])
        tp = int(r["num_tensor_parallel_workers"])
        hq, d = int(r["n_q_head"]) // tp, int(r["n_embd"]) // int(r["n_q_head"])
        fl = 4.0 * hq * d * P * (P + 1) / 2      # the sim's causal count (executor_sim.c sum_batch)
        m = med(r, "attn_prefill")
        if m and m > 0:
            pts.append((fl, m))
    peak = base["fp16_tflops"] * 1e12
    f = lambda x: sq_log_err([(abs(x[1]) * 1e-6 + fl / (peak * x[0]), m) for fl, m in pts]) if 0.01 < x[0] <= 1 else 1e9
    x = nelder_mead(f, [0.3, 10.0], [0.05, 5.0])
    pm = [(abs(x[1]) * 1e-6 + fl / (peak * x[0]), m) for fl, m in pts]
    return x[0], abs(x[1]), residual(pm), len(pts), interval(pm)


# ---- all-reduce (network/<gpu>_dgx/all_reduce.csv) ------------------------------------
def nbytes(S):
    """A message size as the profiles' tables name it: 2 KiB, 64 MiB, 1 GiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if S >= scale:
            return "%g %s" % (S / scale, unit)
    return "%d B" % S


def fit_allreduce(prof, net):
    path = os.path.join(prof, "vidur", "network", net, "all_reduce.csv")
    out = {}
    allr = rows(path)
    for tp in (2, 4, 8):
        pts = [(float(r["size"]), float(r["time_stats.all_reduce.median"]) * 1e-3) for r in allr
               if int(r["num_workers"]) == tp and int(r["devices_per_node"]) == tp]
        if not pts:
            continue
        f = lambda x: sq_log_err([(abs(x[0]) * 1e-6 + S / ((abs(x[1]) + 1e-3) * 1e9), m) for S, m in pts])
        x = nelder_mead(f, [30.0, 150.0], [10.0, 50.0])
        x[1] = abs(x[1]) + 1e-3
        out[tp] = (abs(x[0]), abs(x[1]), [(abs(x[0]) * 1e-6 + S / (abs(x[1]) * 1e9), m) for S, m in pts],
                   len(pts), min(S for S, _ in pts), max(S for S, _ in pts))
    return path, out


# ---- host overheads (cpu_overheads.csv of the Jan-2024 engine) ------------------------
# Host time per step = wall time of the timed run / steps - the model-execution mean: every
# host op (schedule, prepare inputs, sampler, process outputs, the barrier, and the part of
# the step no timer covers) averaged over the run's steps -- a MEAN, as a server's capacity
# is set by its mean step time (the process-outputs column is 2-3x skewed: mean / median).
# Per request (arrival, finish) is not separable here: every row admits its batch at once,
# so requests per step grow with the batch as sequences do.
def host_rows(prof):
    path = os.path.join(prof, "vidur", "a100@0633efa", "cpu_overheads.csv")
    out = []
    for r in rows(path):
        g = lambda k: float(r[k])
        wall = g("total_time") / g("num_steps")
        out.append((int(r["batch_size"]), int(r["tensor_parallel_degree"]), wall - g("MODEL_EXECUTION_E2E_MEAN") * 1e-3,
                    r["model_name"]))
    return path, out


def fit_line(pts, x0):
    f = lambda x: sq_log_err([(abs(x[0]) * 1e-6 + abs(x[1]) * 1e-6 * bs, y) for bs, y in pts])
    a = nelder_mead(f, x0, [x0[0] / 5, x0[1] / 5])
    a = [abs(a[0]), abs(a[1])]
    return a, residual([(a[0] * 1e-6 + a[1] * 1e-6 * bs, y) for bs, y in pts])


def fit_host(prof):
    path, hr = host_rows(prof)
    tp1 = [(bs, h) for bs, tp, h, _ in hr if tp == 1]
    (step_us, seq_us), res1 = fit_line(tp1, [2000.0, 150.0])
    iv1 = interval([(step_us * 1e-6 + seq_us * 1e-6 * bs, h) for bs, h in tp1])
    spread = []   # the same fit per model: how far the per-sequence cost moves between models
    for name in sorted(set(n for _, tp, _, n in hr if tp == 1)):
        (_, q), _ = fit_line([(bs, h) for bs, tp, h, n in hr if tp == 1 and n == name], [2000.0, 150.0])
        spread.append(q)
    # TP > 1: the extra host time over the TP-1 line (Ray RPC to the workers, barrier)
    pts = [(bs, max(1e-5, h - (step_us + seq_us * bs) * 1e-6)) for bs, tp, h, _ in hr if tp > 1]
    (worker_us, worker_seq_us), resn = fit_line(pts, [2000.0, 100.0])
    return path, (step_us, seq_us, res1, len(tp1), min(spread), max(spread), iv1), (worker_us, worker_seq_us, resn, len(pts))


# ---- paged attention's block-size law (executors/executor_sim.h) ----------------------
# Warp requests the paper's kernel issues per (sequence, KV head, block of b tokens)
# beyond FasterTransformer's: two block-table loads (K and V loops) and the narrower loads
# of the block's K and V bytes (K: 32 lanes x max(16 / max(32/b, 1), dtype) bytes a warp,
# V: 32 x dtype x min(16/dtype, b); FT: 512).  attn_paged_block_ns is the cost of the 10
# requests of a block of 16 (Fig. 18a); a GPU block-size sweep, when one was measured,
# refits it.
SWEEP_HW = {"A100-SXM4-40GB": "a100-40gb", "A100-SXM4-80GB": "a100-80gb", "A100 80GB PCIe": "a100-80gb-pcie",
            "H100 80GB HBM3": "h100-sxm", "NVIDIA A100-SXM4-40GB": "a100-40gb", "NVIDIA A100-SXM4-80GB": "a100-80gb",
            "NVIDIA A100 80GB PCIe": "a100-80gb-pcie", "NVIDIA H100 80GB HBM3": "h100-sxm", "NVIDIA H200": "h200"}


def paged_requests_per_block(b, d=128, dt=2):
    group = max(32.0 / b, 1.0)
    wk = 32 * max(16.0 / group, dt)
    wv = 32 * dt * min(16.0 / dt, b)
    by = b * d * dt
    return 2 + by / wk + by / wv - 2 * by / 512


def attn_block_sweep(gpu_dir):
    """{hardware: (attn_paged_block_ns, source)} from every results/gpu/<device>/calib_attention.csv timed on a
    GPU (the `./run_all.sh gpu` sweep of kernels/attention.cu, paged at blocks 1-256 beside the contiguous
    kernel; read by gpu_sweep.py); the law's per-request cost is the median over the points of (paged -
    contiguous - the empty slots of whole blocks, streamed at the contiguous kernel's rate) / requests, and the
    source gives pred/measured by block size.  {} when no sweep was timed on a GPU."""
    out = {}
    for path in sorted(glob.glob(os.path.join(gpu_dir, "*", "calib_attention.csv"))):
        try:
            rs = [r for r in gpu_sweep.read(path, gpu_sweep.ATTN_COLS) if r["timer"] in gpu_sweep.GPU_TIMERS]
        except gpu_sweep.SweepError as e:
            raise SystemExit("calibrate.py: %s" % e)
        contig = {(r["batch"], r["context"], r["num_heads"], r["head_size"]): r["median_us"] for r in rs
                  if r["kernel"] == "contig"}
        pts = []   # (block, requests, measured extra us, extra not from requests us)
        for r in rs:
            c = contig.get((r["batch"], r["context"], r["num_heads"], r["head_size"]))
            if r["kernel"] != "paged" or c is None:
                continue
            b, n, ctx, h, d = (r[k] for k in ("block_size", "batch", "context", "num_heads", "head_size"))
            nb = math.ceil(ctx / b)
            pts.append((b, n * h * nb * paged_requests_per_block(b, d), r["median_us"] - c, (b * nb - ctx) * c / ctx))
        if not pts:
            continue
        hw = SWEEP_HW.get(rs[0]["device"])
        per_req = sorted((x - pad) / req for _, req, x, pad in pts)[len(pts) // 2]
        by_b = {}
        for b, req, x, pad in pts:
            by_b.setdefault(b, []).append((per_req * req + pad) / x if x > 0 else float("nan"))
        res = ", ".join("%d: %.2f" % (b, sorted(v)[len(v) // 2]) for b, v in sorted(by_b.items()))
        src = ("calibrate.py fit of the block-size law on %s (%s, %d paged points at blocks %s beside the contiguous "
               "kernel; OUR kernel kernels/attention.cu, not the paper's): %.4f ns per warp request x 10 requests "
               "per block of 16; pred/measured extra by block: %s" % (os.path.relpath(path, ROOT), rs[0]["device"],
                                                                        len(pts), "/".join(str(b) for b in sorted(by_b)),
                                                                        per_req * 1e3, res))
        if per_req <= 0:
            # the law's premise (each lookup costs the paged kernel something) fails at the
            # median point: such a sweep cannot set a per-request cost, it is reported only
            print("  block sweep %s: %.4f ns per request (%s): the paged kernel is not slower than the contiguous one "
                  "at the median point, so the law's per-request cost is not measurable here; %s keeps the Fig. 18a "
                  "value" % (path, per_req * 1e3, res, hw or "no hardware spec"))
            continue
        print("  block sweep %s: %.4f ns per request (%s) -> %s" % (path, per_req * 1e3, res, hw or "no hardware spec"))
        if hw:
            out[hw] = (round(per_req * 1e3 * 10, 3), src)
    return out


# ---- the profiles' GEMMs beside the same shapes timed on a lent GPU ---------------------
PROFILE_CHIP = {"h100-sxm": "h100", "a100-40gb": "a100", "a100-80gb": "a100", "a100-80gb-pcie": "a100"}


def profile_vs_device(prof, gpu_results):
    """Lines: for every device folder with torch_gemm.csv (PyTorch's linear, torch_peer.py) whose
    hardware spec is fitted on a profiled chip, the profiled time over the device's time at the
    (M, K, N) both hold, by token-count bucket -- how the fit's source compares with the GPU that
    was lent (a diagnostic: the two timing protocols differ, see results/gpu/*/README.md)."""
    out = []
    for path in sorted(glob.glob(os.path.join(gpu_results, "*", "torch_gemm.csv"))):
        dev_rows = rows(path)
        if not dev_rows:
            continue
        hw = SWEEP_HW.get(dev_rows[0]["device"])
        chip = PROFILE_CHIP.get(hw)
        if not chip:
            continue
        meas = {(int(r["m"]), int(r["k"]), int(r["n"])): float(r["median_us"]) * 1e-6 for r in dev_rows}
        _, gemms, _ = mlp_rows(prof, chip)
        pairs = [(M, m, meas[(M, K, N)]) for M, K, N, m, _ in gemms if (M, K, N) in meas]
        name = os.path.relpath(os.path.dirname(path), ROOT)
        if not pairs:
            out.append("profiled %s GEMMs vs %s/torch_gemm.csv: no (M, K, N) in common" % (chip, name))
            continue
        out.append("profiled %s GEMMs (data/gpu-profiles/vidur/compute/%s) / %s/torch_gemm.csv, %d rows in common: %s"
                   % (chip, chip, name, len(pairs), bucket_residuals(pairs, buckets=gpu_sweep.M_RANGES)))
    return out


# ---- what each hardware YAML gets ------------------------------------------------------
# gpu: profiles of this chip; net: NCCL table; own: True where the data is this GPU's,
# else the fitted efficiencies transfer from the same chip family (said in the source).
TARGETS = {
    "a100-80gb": {"gpu": "a100", "net": "a100_dgx", "note": ""},
    "a100-40gb": {"gpu": "a100", "net": "a100_dgx",
                  "note": " [same GA100 chip and cuBLAS/NCCL as the 80GB rows: the efficiencies transfer; efficiencies are fractions of the datasheet, so they apply to the 40GB part's 1,555 GB/s HBM2; unverified on a 40GB device]"},
    "a100-80gb-pcie": {"gpu": "a100", "net": "a100_pairwise_nvlink",
                       "note": " [the A100 rows as fractions of the datasheet: the profiles do not say PCIe or SXM (see their README); the 300 W board limit is not modelled]"},
    "h100-sxm": {"gpu": "h100", "net": "h100_dgx", "note": ""},
    "h200": {"gpu": "h100", "net": "h100_dgx",
             "note": " [H200 = the H100's GH100 chip with HBM3e: efficiencies of the H100 rows transfer, applied to the H200 datasheet bandwidth; unverified on an H200]"},
}


_MEMO = {}


def fit_all(prof, hw):
    """The fitted (key, value, source) rows of one hardware YAML (fits shared by chip)."""
    t = TARGETS[hw]
    key = (t["gpu"], t["net"])
    if key not in _MEMO:
        _MEMO[key] = _fit_all(prof, dict(t, note="{NOTE}"))
    return [(k, v, src.replace("{NOTE}", t["note"])) for k, v, src in _MEMO[key]]


def _fit_all(prof, t):
    src_base = read_base({"a100": "a100-80gb", "h100": "h100-sxm"}[t["gpu"]])
    out = []   # (path, value, source)
    files, gemms, elems = mlp_rows(prof, t["gpu"])
    rel = "data/gpu-profiles/vidur/compute/%s/*/*/mlp.csv" % t["gpu"]
    (eff, bweff, smbw, fixed), res, buckets, giv = fit_gemm(gemms, src_base)
    tps = sorted({int(r["num_tensor_parallel_workers"]) for path in files for r in rows(path)})
    n_g = ("%d GEMM rows of %d files (QKV, out, FC1/gate-up, FC2/down at TP %d-%d, %d-%d tokens), fitted on every %dth "
           "row of each operator" % (len(gemms), len(files), tps[0], tps[-1], min(g[0] for g in gemms),
                                     max(g[0] for g in gemms), FIT_EVERY))
    src = ("calibrate.py fit of the sim's GEMM formula (tiles, split-K, per-SM bandwidth, sqrt(compute^2 + memory^2)) "
           "on %s, %s; residual %s; pred/measured by token count, median [p10-p90]: %s%s" % (rel, n_g, res, buckets,
                                                                                           t["note"]))
    out += [("cost_model.gemm_flops_efficiency", round(eff, 4), src),
            ("cost_model.gemm_bw_efficiency", round(bweff, 4), src),
            ("cost_model.gemm_sm_bw_GBps", round(smbw, 2), src),
            ("cost_model.gemm_fixed_us", round(fixed, 3), src),
            ("cost_model.residuals.gemm", giv, "10th and 90th percentile of measured / predicted over the GEMM fit's rows "
             "(the gemm_* sources)")]
    ee, ef, eres, eiv = fit_elem(elems, src_base)
    esrc = ("calibrate.py fit on %s: %d rows of RMSNorm x2, SiLU-and-mul, rotary (the gated models; bytes read + "
            "written / time; the 'add' column is left out: one residual add of two, timed in-place, see the profiles README); "
            "residual %s%s" % (rel, len(elems), eres, t["note"]))
    out += [("cost_model.elementwise_bw_efficiency", round(ee, 4), esrc),
            ("cost_model.elementwise_fixed_us", round(ef, 3), esrc),
            ("cost_model.residuals.elementwise", eiv, "10th and 90th percentile of measured / predicted over the "
             "element-wise fit's rows (the elementwise_* sources)")]
    pe, pf, pres, n_p, piv = fit_prefill_attn(prof, read_base("a100-80gb"))   # an A100 table: efficiency vs the A100 peak
    psrc = ("calibrate.py fit on data/gpu-profiles/vidur/a100/attention.csv: %d full-prompt rows (kv_cache_size 0, "
            "64-4096 tokens, 32 q heads x 128 per GPU; FlashAttention-2 paged kernel, not 2023 xformers); residual %s%s"
            % (n_p, pres, "" if t["gpu"] == "a100" else " [A100 kernel data applied to Hopper: no H100 attention table survives; unverified]"))
    out += [("cost_model.prefill_attn_flops_efficiency", round(pe, 4), psrc),
            ("cost_model.prefill_attn_fixed_us", round(pf, 3), psrc),
            ("cost_model.residuals.prefill_attn", piv, "10th and 90th percentile of measured / predicted over the "
             "prefill-attention fit's rows (the prefill_attn_* sources)")]
    path, ar = fit_allreduce(prof, t["net"])
    for tp, (lat, bw, r, n, lo, hi) in sorted(ar.items()):
        asrc = ("calibrate.py fit on data/gpu-profiles/vidur/network/%s/all_reduce.csv: %d rows at num_workers = "
                "devices_per_node = %d (one node; %s-%s); residual %s" % (t["net"], n, tp, nbytes(lo), nbytes(hi),
                                                                          residual(r)))
        out += [("cost_model.allreduce_tp%d_us" % tp, round(lat, 2), asrc),
                ("cost_model.allreduce_tp%d_GBps" % tp, round(bw, 1), asrc)]
    out.append(("cost_model.residuals.allreduce", interval([pm for tp in ar for pm in ar[tp][2]]),
                "10th and 90th percentile of measured / predicted over the all-reduce fits' rows, every TP degree "
                "(the allreduce_* sources)"))
    top = max(ar)
    for tp in (2, 4, 8):    # a node with fewer GPUs: the largest measured degree stands in
        if tp not in ar:
            lat, bw = ar[top][:2]
            asrc = ("no %d-GPU all-reduce on this %d-GPU node: the tp-%d fit stands in (calibrate.py, %s); residual "
                    "unknown" % (tp, top, top, t["net"]))
            out += [("cost_model.allreduce_tp%d_us" % tp, round(lat, 2), asrc),
                    ("cost_model.allreduce_tp%d_GBps" % tp, round(bw, 1), asrc)]
    path, (su, qu, r1, n1, qlo, qhi, hiv), (wu, wq, rn, nn) = fit_host(prof)
    hsrc = ("calibrate.py fit on data/gpu-profiles/vidur/a100@0633efa/cpu_overheads.csv (Jan-2024 vLLM-derived engine, "
            "the closest in time to vLLM v0.2): host time per step = total_time / num_steps - MODEL_EXECUTION_E2E_MEAN "
            "(every host op and the untimed rest, as MEANS over the run's steps: capacity follows the mean step; the "
            "medians used before gave 1490 us + 103 us per sequence) vs batch size, %d TP-1 rows (Llama-2-7B, "
            "CodeLlama-34B pooled; fitted per model the per-sequence cost is %.0f-%.0f us); residual %s. Per-request "
            "costs are not separable in these rows (each admits its whole batch at once) [host CPU of the profiled "
            "node; vLLM 0.1/0.2's own host code unmeasured]" % (n1, qlo, qhi, r1))
    wsrc = ("calibrate.py fit on data/gpu-profiles/vidur/a100@0633efa/cpu_overheads.csv: host time per step (total_time "
            "/ num_steps - MODEL_EXECUTION_E2E_MEAN, means) above the TP-1 fit (Ray RPC to the workers, barrier) vs "
            "batch size, %d rows at TP 2-4; residual %s" % (nn, rn))
    out += [("cost_model.framework.python.step_us", round(su, 1), hsrc),
            ("cost_model.framework.python.seq_us", round(qu, 2), hsrc),
            ("cost_model.framework.python.worker_us", round(wu, 1), wsrc),
            ("cost_model.residuals.host", hiv, "10th and 90th percentile of measured / predicted over the TP-1 host "
             "fit's rows (framework.python step_us, seq_us); the TP > 1 worker terms' wider residual is not in it"),
            ("cost_model.framework.python.worker_seq_us", round(wq, 2), wsrc)]
    return out


# ---- hardware without profiles: keys borrowed from a calibrated part ------------------
# A borrowed key's source reads '<lender>.yaml, borrowed (<why>): <the lender's source>' and
# its value is the lender's; both follow the lender when it is refitted.
BORROWERS = {"a10g": "a100-40gb"}


def borrow(hw, lender, write):
    """Compare (and with write, set) hw's borrowed keys with lender's; returns how many differ."""
    paths = [os.path.join(HW_DIR, h + ".yaml") for h in (hw, lender)]
    lines, lend = [open(p).readlines() for p in paths]
    tag, bad = '"%s.yaml, borrowed (' % lender, 0
    print("== %s (keys borrowed from %s)" % (hw, lender))
    for _, _, sp in key_paths(lines):
        parts = sp.split(".")
        src = get_value(lines, sp, comment=False)
        if len(parts) < 2 or parts[-2] != "sources" or not src.startswith(tag):
            continue
        key = ".".join(parts[:-2] + parts[-1:])
        head = src[:src.index("): ") + 3]
        lval, lsrc = get_value(lend, key), get_value(lend, sp, comment=False)
        if lval is None or lsrc is None:
            raise SystemExit("calibrate.py: %s borrows %s, which %s.yaml lacks" % (hw, key, lender))
        if get_value(lines, key) == lval and src == head + lsrc[1:]:
            continue
        bad += 1
        print("  %-45s %12s   %s" % (key, lval, "<-- written" if write else "<-- committed %s, or its source, differs"
                                    % get_value(lines, key)))
        if write:
            set_key(lines, key, lval)
            set_key(lines, sp, head + lsrc[1:])
    if write and bad:
        with open(paths[0] + ".tmp", "w") as f:
            f.writelines(lines)
        os.replace(paths[0] + ".tmp", paths[0])
    return 0 if write else bad


# ---- YAML rewriting (line based: keeps comments, order and every other key) ------------
def key_paths(lines):
    """(index, indent, dotted path) of every 'key:' line."""
    stack, out = [], []
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)([A-Za-z0-9_]+):", line)
        if not m or line.lstrip().startswith("#"):
            continue
        ind = len(m.group(1))
        while stack and stack[-1][0] >= ind:
            stack.pop()
        stack.append((ind, m.group(2)))
        out.append((i, ind, ".".join(k for _, k in stack)))
    return out


def set_key(lines, path, text):
    """Set path to 'key: text' (replace, or insert as the last scalar before the parent's sources:)."""
    kp = key_paths(lines)
    for i, ind, p in kp:
        if p == path:
            lines[i] = " " * ind + path.rsplit(".", 1)[1] + ": " + text + "\n"
            return
    parent = path.rsplit(".", 1)[0]
    pk = [(i, ind) for i, ind, p in kp if p == parent]
    if not pk:
        raise SystemExit("calibrate.py: no map %s in the YAML" % parent)
    pi, pind = pk[0]
    kids = [(i, ind) for i, ind, p in kp if p.startswith(parent + ".") and p.count(".") == parent.count(".") + 1]
    ind = kids[0][1] if kids else pind + 2
    at = [i for i, _, p in kp if p == parent + ".sources"]
    pos = at[0] if at else (max(i for i, _ in kids) + 1 if kids else pi + 1)
    if not at and kids:   # after the last line of the last child's block
        last = max(i for i, _ in kids)
        pos = last + 1
        while pos < len(lines) and (len(lines[pos]) - len(lines[pos].lstrip()) > ind) and lines[pos].strip():
            pos += 1
    lines.insert(pos, " " * ind + path.rsplit(".", 1)[1] + ": " + text + "\n")


def remove_key(lines, path):
    for i, ind, p in key_paths(lines):
        if p == path:
            del lines[i]
            return


def q(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def get_value(lines, path, comment=True):
    """The scalar text of key `path`; comment=False keeps a '#' (a quoted source's text)."""
    for i, ind, p in key_paths(lines):
        if p == path:
            v = lines[i].split(":", 1)[1]
            return (v.split("#")[0] if comment else v).strip()
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profiles", default=os.path.join(os.path.dirname(ROOT), "shared", "data", "gpu-profiles"))
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="rewrite the fitted keys in the hardware YAMLs")
    g.add_argument("--check", action="store_true", help="exit 1 if a committed value is off by more than 1%%")
    ap.add_argument("--gemm-sample", metavar="CSV",
                    help="also write a sample of the profiled A100 GEMMs (M,K,N,measured_us) for the C test")
    ap.add_argument("--gpu-results", metavar="DIR", default=os.path.join(ROOT, "results", "gpu"),
                    help="where the GPU calibration sweeps are (default results/gpu; <DIR>/<device>/calib_attention.csv "
                    "refits the paged block-size law)")
    ap.add_argument("hardware", nargs="*", default=sorted(TARGETS))
    a = ap.parse_args()
    try:
        print(gpu_sweep.report(a.gpu_results))
    except (gpu_sweep.SweepError, OSError) as e:
        print("calibrate.py: %s" % e, file=sys.stderr)
        return 2
    if not os.path.isdir(os.path.join(a.profiles, "vidur")):
        print("SKIP: no GPU profiles at %s (they sit in ../shared/data/gpu-profiles beside a checkout)" % a.profiles)
        return 77
    if a.gemm_sample:
        files, gemms, _ = mlp_rows(a.profiles, "a100")
        with open(a.gemm_sample + ".tmp", "w") as f:
            f.write("# of each operator's GEMM rows (QKV, out, FC1/gate-up, FC2/down) of\n"
                    "# data/gpu-profiles/vidur/compute/a100/*/*/mlp.csv (median kernel time): every 45th, and every\n"
                    "# 30th of those with at most 256 tokens (the transition region), written by\n"
                    "# experiments/calibrate/calibrate.py --gemm-sample; tests/test_calibration.c checks the C cost\n"
                    "# model's GEMM time against it (the same residual as the fit's, overall and per token-count bucket)\n")
            f.write("M,K,N,measured_us\n")
            sample = by_operator(gemms, 45) + by_operator(gemms, 30, lambda g: g[0] <= 256)
            for M, K, N, m, _ in dict.fromkeys(sample):   # once each, in order
                f.write("%d,%d,%d,%.3f\n" % (M, K, N, m * 1e6))
        os.replace(a.gemm_sample + ".tmp", a.gemm_sample)
    for line in profile_vs_device(a.profiles, a.gpu_results):
        print(line)
    sweeps = attn_block_sweep(a.gpu_results)
    if not sweeps:
        print("GPU block-size sweep: none usable under %s (results/gpu/<device>/calib_attention.csv, written by "
              "`./run_all.sh gpu`; each one found is reported above): attn_paged_block_ns stays the Fig. 18a value"
              % os.path.relpath(a.gpu_results, ROOT))
    bad = 0
    for hw in a.hardware:
        if hw not in TARGETS:
            print("calibrate.py: unknown hardware '%s' (known: %s)" % (hw, ", ".join(sorted(TARGETS))), file=sys.stderr)
            return 2
        fits = fit_all(a.profiles, hw)
        if hw in sweeps:
            fits = fits + [("cost_model.attn_paged_block_ns",) + sweeps[hw]]
        path = os.path.join(HW_DIR, hw + ".yaml")
        with open(path) as f:
            lines = f.readlines()
        print("== %s" % hw)
        for key, val, src in fits:
            old = get_value(lines, key)
            flag = ""
            if a.check:
                try:
                    ov = [float(v) for v in old.strip("[]").split(",")] if old and old.startswith("[") else [float(old)]
                    nv = [float(v) for v in val.strip("[]").split(",")] if isinstance(val, str) else [val]
                    ok = len(ov) == len(nv) and all(abs(a - b) <= 0.01 * abs(b) + 1e-9 for a, b in zip(ov, nv))
                except (ValueError, AttributeError, TypeError):   # TypeError: the key is missing
                    ok = False
                if not ok:
                    bad += 1
                    flag = "   <-- committed %s" % old
                parts = key.split(".")   # the source and residual written beside it are the fit's too
                if get_value(lines, ".".join(parts[:-1] + ["sources", parts[-1]]), comment=False) != q(src):
                    bad += 1
                    flag += "   <-- its committed source text differs from the fit's"
            note = textwrap.wrap(src.split("; residual ")[-1], width=100, break_long_words=False,
                                 break_on_hyphens=False) or [""]
            print("  %-45s %12s   %s%s" % (key, ("%g" % val) if not isinstance(val, str) else val, note[0], flag))
            for more in note[1:]:   # the rest of the note, cut between words
                print("  %-45s %12s   %s" % ("", "", more))
            if a.write:
                set_key(lines, key, repr(val) if isinstance(val, float) else str(val))
                parts = key.split(".")
                set_key(lines, ".".join(parts[:-1] + ["sources", parts[-1]]), q(src))
        if a.write:
            for old in ("allreduce_hop_us", "nvlink_efficiency"):   # replaced by the per-TP all-reduce fit
                remove_key(lines, "cost_model." + old)
                remove_key(lines, "cost_model.sources." + old)
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.writelines(lines)
            os.replace(tmp, path)
    for hw, lender in sorted(BORROWERS.items()):
        if lender in a.hardware:
            bad += borrow(hw, lender, a.write)
    if a.check and bad:
        print("calibrate.py: %d committed values differ from the fit: run with --write" % bad, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
