#!/usr/bin/env python3
"""calibrate.py -- fit the sim's cost-model parameters on real GPU operator timings.

    python3 experiments/calibrate/calibrate.py [--profiles DIR] [--write | --check] [HARDWARE ...]

Reads the per-operator GPU timings of ../shared/data/gpu-profiles/ (Vidur's profiled
tables: A100/H100 linear layers by token count and TP, A100 attention, NCCL all-reduce,
host overheads of a vLLM-derived engine; see that folder's README) and fits, per GPU:

  GEMM         t = max(tile-and-wave compute at gemm_flops_efficiency,
                       bytes / (HBM * gemm_bw_efficiency)) + gemm_fixed_us
               (the sim's own formula, executors/executor_sim.h), on every
               (M = tokens, N, K, TP) shape of compute/<gpu>/*/mlp.csv
  element-wise t = elementwise_fixed_us + bytes / (HBM * elementwise_bw_efficiency),
               on the norm / activation / rotary columns
  prefill attn t = prefill_attn_fixed_us + causal FLOPs / (peak * prefill_attn_flops_efficiency),
               on the full-prompt rows (kv_cache_size 0) of a100/attention.csv
  all-reduce   t = allreduce_tpN_us + bytes / allreduce_tpN_GBps, per TP degree,
               on network/<gpu>_dgx/all_reduce.csv (one node, NVSwitch)
  host         framework.python: step_us + seq_us * batch (TP 1) and worker_us +
               worker_seq_us * batch (extra at TP > 1: Ray RPC + barrier), on the
               medians of a100@0633efa/cpu_overheads.csv (schedule + prepare_inputs_e2e
               + sampler_e2e + process_model_outputs; RAY_COMM_TIME + barrier)

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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
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
def nelder_mead(f, x0, steps, iters=300):
    n = len(x0)
    pts = [list(x0)] + [[x0[j] + (steps[j] if j == i else 0) for j in range(n)] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
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
    return pts[0]


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
                    gemms.append((M, K, N, m))
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


def gemm_pred(M, K, N, eff, bweff, fixed, base):
    peak, sms, l2, hbm = base["fp16_tflops"] * 1e12, base["n_sms"], base["l2_bandwidth_GBps"] * 1e9, \
        base["hbm_bandwidth_GBps"] * 1e9
    best = float("inf")
    for tm, tn in TILES:
        feed = l2 / sms * 2 * tm * tn / ((tm + tn) * 2)
        rate = min(feed, peak * eff / sms)
        waves = math.ceil(math.ceil(M / tm) * math.ceil(N / tn) / sms)
        best = min(best, waves * 2.0 * tm * tn * K / rate)
    by = (K * N + M * K + M * N) * 2 / (hbm * bweff)
    return max(best, by) + fixed


def fit_gemm(gemms, base):
    sub = gemms[::4]
    f = lambda x: sq_log_err([(gemm_pred(M, K, N, x[0], x[1], abs(x[2]) * 1e-6, base), m) for M, K, N, m in sub]) \
        if 0.05 < x[0] <= 1 and 0.05 < x[1] <= 1 else 1e9
    x = nelder_mead(f, [0.74, 0.76, 6.0], [0.05, 0.05, 2.0], iters=150)
    eff, bweff, fixed = x[0], x[1], abs(x[2])
    res = residual([(gemm_pred(M, K, N, eff, bweff, fixed * 1e-6, base), m) for M, K, N, m in gemms])
    return eff, bweff, fixed, res


def fit_elem(elems, base):
    hbm = base["hbm_bandwidth_GBps"] * 1e9
    f = lambda x: sq_log_err([(abs(x[1]) * 1e-6 + by / (hbm * x[0]), m) for by, m in elems]) if 0.05 < x[0] <= 1 else 1e9
    x = nelder_mead(f, [0.6, 3.0], [0.1, 1.0])
    res = residual([(abs(x[1]) * 1e-6 + by / (hbm * x[0]), m) for by, m in elems])
    return x[0], abs(x[1]), res


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
    res = residual([(abs(x[1]) * 1e-6 + fl / (peak * x[0]), m) for fl, m in pts])
    return x[0], abs(x[1]), res, len(pts)


# ---- all-reduce (network/<gpu>_dgx/all_reduce.csv) ------------------------------------
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
        out[tp] = (abs(x[0]), abs(x[1]), residual([(abs(x[0]) * 1e-6 + S / (abs(x[1]) * 1e9), m) for S, m in pts]),
                   len(pts))
    return path, out


# ---- host overheads (cpu_overheads.csv of the Jan-2024 engine) ------------------------
def fit_host(prof):
    path = os.path.join(prof, "vidur", "a100@0633efa", "cpu_overheads.csv")
    tp1, tpn = [], []
    for r in rows(path):
        g = lambda k: float(r[k])
        host = g("SCHEDULE_MEDIAN") + g("PREPARE_INPUTS_E2E_MEDIAN") + g("SAMPLER_E2E_MEDIAN") + \
            g("PROCESS_MODEL_OUTPUTS_MEDIAN")
        extra = g("RAY_COMM_TIME_MEDIAN") + g("POST_PREPARE_INPUTS_BARRIER_MEDIAN")
        bs, tp = int(r["batch_size"]), int(r["tensor_parallel_degree"])
        (tp1 if tp == 1 else tpn).append((bs, host * 1e-3, extra * 1e-3))
    # TP 1: host = a + b * bs
    f = lambda x: sq_log_err([(abs(x[0]) * 1e-6 + abs(x[1]) * 1e-6 * bs, h) for bs, h, _ in tp1])
    a = nelder_mead(f, [1500.0, 80.0], [300.0, 20.0])
    step_us, seq_us = abs(a[0]), abs(a[1])
    res1 = residual([(step_us * 1e-6 + seq_us * 1e-6 * bs, h) for bs, h, _ in tp1])
    # TP > 1: (host - TP1 fit) + RPC + barrier = w + v * bs
    pts = [(bs, max(1e-5, h - (step_us + seq_us * bs) * 1e-6 + e)) for bs, h, e in tpn]
    f = lambda x: sq_log_err([(abs(x[0]) * 1e-6 + abs(x[1]) * 1e-6 * bs, y) for bs, y in pts])
    w = nelder_mead(f, [2000.0, 80.0], [500.0, 20.0])
    worker_us, worker_seq_us = abs(w[0]), abs(w[1])
    resn = residual([(worker_us * 1e-6 + worker_seq_us * 1e-6 * bs, y) for bs, y in pts])
    return path, (step_us, seq_us, res1, len(tp1)), (worker_us, worker_seq_us, resn, len(pts))


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
    eff, bweff, fixed, res = fit_gemm(gemms, src_base)
    n_g = "%d GEMM rows of %d files (QKV, out, FC1/gate-up, FC2/down at TP 1-8, 1-4096 tokens)" % (len(gemms), len(files))
    src = "calibrate.py fit of the sim's GEMM formula on %s, %s; residual %s%s" % (rel, n_g, res, t["note"])
    out += [("cost_model.gemm_flops_efficiency", round(eff, 4), src),
            ("cost_model.gemm_bw_efficiency", round(bweff, 4), src),
            ("cost_model.gemm_fixed_us", round(fixed, 3), src)]
    ee, ef, eres = fit_elem(elems, src_base)
    esrc = ("calibrate.py fit on %s: %d rows of RMSNorm x2, SiLU-and-mul, rotary (the gated models; bytes read + "
            "written / time; the 'add' column is left out: one residual add of two, timed in-place, see the profiles README); "
            "residual %s%s" % (rel, len(elems), eres, t["note"]))
    out += [("cost_model.elementwise_bw_efficiency", round(ee, 4), esrc),
            ("cost_model.elementwise_fixed_us", round(ef, 3), esrc)]
    pe, pf, pres, n_p = fit_prefill_attn(prof, read_base("a100-80gb"))   # an A100 table: efficiency vs the A100 peak
    psrc = ("calibrate.py fit on data/gpu-profiles/vidur/a100/attention.csv: %d full-prompt rows (kv_cache_size 0, "
            "64-4096 tokens, 32 q heads x 128 per GPU; FlashAttention-2 paged kernel, not 2023 xformers); residual %s%s"
            % (n_p, pres, "" if t["gpu"] == "a100" else " [A100 kernel data applied to Hopper: no H100 attention table survives; unverified]"))
    out += [("cost_model.prefill_attn_flops_efficiency", round(pe, 4), psrc),
            ("cost_model.prefill_attn_fixed_us", round(pf, 3), psrc)]
    path, ar = fit_allreduce(prof, t["net"])
    for tp, (lat, bw, r, n) in sorted(ar.items()):
        asrc = ("calibrate.py fit on data/gpu-profiles/vidur/network/%s/all_reduce.csv: %d rows at num_workers = "
                "devices_per_node = %d (one node; 2 KiB-64 MiB fp16); residual %s" % (t["net"], n, tp, r))
        out += [("cost_model.allreduce_tp%d_us" % tp, round(lat, 2), asrc),
                ("cost_model.allreduce_tp%d_GBps" % tp, round(bw, 1), asrc)]
    top = max(ar)
    for tp in (2, 4, 8):    # a node with fewer GPUs: the largest measured degree stands in
        if tp not in ar:
            lat, bw, r, n = ar[top]
            asrc = ("no %d-GPU all-reduce on this %d-GPU node: the tp-%d fit stands in (calibrate.py, %s); residual "
                    "unknown" % (tp, top, top, t["net"]))
            out += [("cost_model.allreduce_tp%d_us" % tp, round(lat, 2), asrc),
                    ("cost_model.allreduce_tp%d_GBps" % tp, round(bw, 1), asrc)]
    path, (su, qu, r1, n1), (wu, wq, rn, nn) = fit_host(prof)
    hsrc = ("calibrate.py fit on data/gpu-profiles/vidur/a100@0633efa/cpu_overheads.csv (Jan-2024 vLLM-derived engine, "
            "the closest in time to vLLM v0.2): medians of schedule + prepare_inputs_e2e + sampler_e2e + "
            "process_model_outputs vs batch size, %d TP-1 rows; residual %s [host CPU of the profiled node; "
            "vLLM 0.1/0.2's own host code unmeasured]" % (n1, r1))
    wsrc = ("calibrate.py fit on data/gpu-profiles/vidur/a100@0633efa/cpu_overheads.csv: extra host time at TP > 1 "
            "(RAY_COMM_TIME + POST_PREPARE_INPUTS_BARRIER + host above the TP-1 fit) vs batch size, %d rows at TP 2-4; "
            "residual %s" % (nn, rn))
    out += [("cost_model.framework.python.step_us", round(su, 1), hsrc),
            ("cost_model.framework.python.seq_us", round(qu, 2), hsrc),
            ("cost_model.framework.python.worker_us", round(wu, 1), wsrc),
            ("cost_model.framework.python.worker_seq_us", round(wq, 2), wsrc)]
    return out


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


def get_value(lines, path):
    for i, ind, p in key_paths(lines):
        if p == path:
            return lines[i].split(":", 1)[1].split("#")[0].strip()
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profiles", default=os.path.join(os.path.dirname(ROOT), "shared", "data", "gpu-profiles"))
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="rewrite the fitted keys in the hardware YAMLs")
    g.add_argument("--check", action="store_true", help="exit 1 if a committed value is off by more than 1%%")
    ap.add_argument("--gemm-sample", metavar="CSV",
                    help="also write every 180th profiled A100 GEMM (M,K,N,TP,measured_us) for the C test")
    ap.add_argument("--gpu-results", metavar="DIR", default=os.path.join(ROOT, "results", "gpu"),
                    help="where the GPU calibration sweeps are (default results/gpu)")
    ap.add_argument("hardware", nargs="*", default=sorted(TARGETS))
    a = ap.parse_args()
    sys.path.insert(0, HERE)
    import gpu_sweep
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
            f.write("# every 180th GEMM row of data/gpu-profiles/vidur/compute/a100/*/*/mlp.csv (median kernel time),\n"
                    "# written by experiments/calibrate/calibrate.py --gemm-sample; tests/test_calibration.c checks the\n"
                    "# C cost model's GEMM time against it (the same residual as the fit's)\n")
            f.write("M,K,N,measured_us\n")
            for M, K, N, m in gemms[::180]:
                f.write("%d,%d,%d,%.3f\n" % (M, K, N, m * 1e6))
        os.replace(a.gemm_sample + ".tmp", a.gemm_sample)
    bad = 0
    for hw in a.hardware:
        if hw not in TARGETS:
            print("calibrate.py: unknown hardware '%s' (known: %s)" % (hw, ", ".join(sorted(TARGETS))), file=sys.stderr)
            return 2
        fits = fit_all(a.profiles, hw)
        path = os.path.join(HW_DIR, hw + ".yaml")
        with open(path) as f:
            lines = f.readlines()
        print("== %s" % hw)
        for key, val, src in fits:
            old = get_value(lines, key)
            flag = ""
            if a.check:
                try:
                    ok = old is not None and abs(float(old) - val) <= 0.01 * abs(val) + 1e-9
                except ValueError:
                    ok = False
                if not ok:
                    bad += 1
                    flag = "   <-- committed %s" % old
            print("  %-45s %12g   %s%s" % (key, val, src.split("; residual ")[-1][:60], flag))
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
    if a.check and bad:
        print("calibrate.py: %d committed values differ from the fit: run with --write" % bad, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
