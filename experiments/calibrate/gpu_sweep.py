#!/usr/bin/env python3
"""gpu_sweep.py -- read the GPU calibration sweeps that `./run_all.sh gpu` measures.

    python3 experiments/calibrate/gpu_sweep.py [DIR ...]     (default: results/gpu)

`pagedbench kernels --grid calib-attn,calib-gemm --calib-dir D` (tools/gpu/run_gpu.sh,
step 4) writes, per device folder results/gpu/<device>/:

  calib_attention.csv  device,driver,cuda,commit,timer,kernel,algo,block_size,batch,
                       context,num_heads,head_size,dtype,median_us,bytes,gbps
                       paged decode attention at block 1..256 and the contiguous kernel
                       (block_size 0), batch 8..256 x context 32..2048, OPT-13B heads
  calib_gemm.csv       device,driver,cuda,commit,timer,dtype,m,n,k,median_us,tflops,gbps
                       cuBLAS at the layer shapes of OPT-13B, Llama-2-7B, Llama-3-8B and
                       Llama-2/3-70B at TP 4 / 8, M = 1..16, 24..512 step 8, 768..4096

Rows timed on a GPU have timer "cupti", "events" or "cupti+events" (CUPTI failed
part-way through the run); "cpu" rows come from the C
references (the code path on a machine without a GPU: shapes, not calibration data)
and are counted but left out.  Lines starting with '#' are comments.

The report answers the cost model's two open questions with measurements, without
fitting anything:
  - paged attention's extra cost per (sequence, head, block) lookup at each block size:
    (paged - contiguous) / (batch * heads * ceil(context / block)), median over the
    grid -- the sim charges one constant per lookup (attn_paged_block_ns, from block 16
    of paper Fig. 18a), i.e. a cost that grows as 1/block below 16;
  - how cuBLAS time bends with M: per shape, time at M relative to M = 64 for
    M = 64..256, and the M where time first exceeds 1.5x the M = 1 time.
A malformed file is an error "path:line:col: message" (exit 2).  Standard library only.
"""
import glob
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

ATTN_COLS = ["device", "driver", "cuda", "commit", "timer", "kernel", "algo", "block_size", "batch",
             "context", "num_heads", "head_size", "dtype", "median_us", "bytes", "gbps"]
GEMM_COLS = ["device", "driver", "cuda", "commit", "timer", "dtype", "m", "n", "k", "median_us", "tflops",
             "gbps"]
TORCH_ATTN_COLS = ["device", "driver", "torch", "cuda", "commit", "timer", "phase", "batch", "context", "num_heads",
                   "num_kv_heads", "head_size", "dtype", "backend", "median_us", "bytes", "gbps", "hbm_pct"]
LAUNCH_COLS = ["device", "driver", "torch", "cuda", "commit", "timer", "what", "batch", "layers", "kernels",
               "host_us", "gpu_us", "host_us_per_kernel", "gpu_us_per_kernel", "host_us_per_layer", "host_cpu"]
INTS = {"layers", "kernels", "block_size", "batch", "context", "num_heads", "num_kv_heads", "head_size", "m", "n", "k"}
FLOATS = {"median_us", "bytes", "gbps", "tflops", "hbm_pct", "host_us", "host_us_per_layer"}
GPU_TIMERS = ("cupti", "events", "cupti+events")
M_RANGES = [(1, 16), (17, 128), (129, 512), (513, 4096)]    # token-count buckets of the GEMM reports


class SweepError(ValueError):
    pass


def split_line(line):
    """CSV fields of one line and the 1-based column where each starts ("" quotes, no
    embedded newlines: what pagedbench writes)."""
    vals, starts, i, n = [], [], 0, len(line.rstrip("\r\n"))
    while True:
        starts.append(i + 1)
        if i < n and line[i] == '"':
            j, v = i + 1, []
            while j < n and not (line[j] == '"' and line[j + 1:j + 2] != '"'):
                v.append(line[j])
                j += 2 if line[j] == '"' else 1
            vals.append("".join(v))
            i = j + 1
        else:
            j = line.find(",", i, n)
            j = n if j < 0 else j
            vals.append(line[i:j])
            i = j
        if i >= n or line[i] != ",":
            return vals, starts
        i += 1


def read(path, cols):
    """Rows (dicts with typed values) of one sweep CSV; SweepError on a malformed file."""
    rows, header = [], None
    with open(path, newline="") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            rec, starts = split_line(line)
            if header is None:
                if rec != cols:
                    raise SweepError("%s:%d:1: header %s, expected %s" % (path, lineno, ",".join(rec), ",".join(cols)))
                header = rec
                continue
            if len(rec) != len(cols):
                raise SweepError("%s:%d:1: %d fields, expected %d" % (path, lineno, len(rec), len(cols)))
            r = dict(zip(cols, rec))
            for i, k in enumerate(cols):
                pos = starts[i]
                try:
                    if k in INTS:
                        r[k] = int(r[k])
                    elif k in FLOATS:
                        r[k] = float(r[k])
                        if not math.isfinite(r[k]) or r[k] < 0:
                            raise ValueError
                except ValueError:
                    raise SweepError("%s:%d:%d: %s: expected a %s, got '%s'" % (
                        path, lineno, pos, k, "integer" if k in INTS else "number >= 0", rec[i]))
                if k in ("device", "driver", "commit", "timer") and not r[k] and \
                        (k != "driver" or r.get("timer") in GPU_TIMERS):    # a CPU rehearsal has no driver
                    raise SweepError("%s:%d:%d: %s is empty" % (path, lineno, pos, k))
            t = "median_us" if "median_us" in cols else "host_us"
            if r[t] <= 0 and r["timer"] in GPU_TIMERS:
                raise SweepError("%s:%d:%d: %s must be > 0" % (path, lineno, starts[cols.index(t)], t))
            rows.append(r)
    if header is None:
        raise SweepError("%s:1:1: no header (expected %s)" % (path, ",".join(cols)))
    return rows


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def attention_report(rows):
    """Lines: the paged kernel's extra ns per (sequence, head, block) lookup by block size."""
    contig = {(r["batch"], r["context"]): r for r in rows if r["kernel"] == "contig"}
    by_bs = {}
    for r in rows:
        if r["kernel"] != "paged":
            continue
        c = contig.get((r["batch"], r["context"]))
        if not c:
            continue
        lookups = r["batch"] * r["num_heads"] * math.ceil(r["context"] / r["block_size"])
        by_bs.setdefault(r["block_size"], []).append(
            ((r["median_us"] - c["median_us"]) * 1e3 / lookups, r["median_us"] / c["median_us"]))
    out = ["  paged vs contiguous decode attention, by block size (median over %d batch x context points):"
           % len(contig),
           "  %6s %14s %16s %9s" % ("block", "ns per lookup", "paged/contig", "points")]
    for bs in sorted(by_bs):
        v = by_bs[bs]
        out.append("  %6d %14.2f %16.3f %9d" % (bs, median([x for x, _ in v]), median([y for _, y in v]), len(v)))
    if not by_bs:
        out.append("  (no paged row has a contiguous row of the same batch and context)")
    return out


def gemm_report(rows):
    """Lines: per (K, N) shape, time vs M relative to M = 64, and where it leaves the M = 1 floor."""
    shapes = {}
    for r in rows:
        shapes.setdefault((r["k"], r["n"]), {})[r["m"]] = r["median_us"]
    out = ["  cuBLAS GEMM time by M (us; K x N):",
           "  %-14s %8s %8s %8s %8s %8s %8s %10s" % ("K x N", "M=1", "64", "128", "192", "256", "512", "1.5x M=1")]
    for (k, n), t in sorted(shapes.items()):
        cells = ["%8.1f" % t[m] if m in t else "%8s" % "-" for m in (1, 64, 128, 192, 256, 512)]
        knee = next((m for m in sorted(t) if 1 in t and t[m] > 1.5 * t[1]), None)
        out.append("  %-14s %s %10s" % ("%d x %d" % (k, n), " ".join(cells), knee if knee else "-"))
        if 64 in t:
            rel = ", ".join("M=%d %.2fx" % (m, t[m] / t[64]) for m in (96, 128, 160, 192, 224, 256) if m in t)
            if rel:
                out.append("  %-14s relative to M=64: %s" % ("", rel))
    return out


def model_report(rows):
    """Lines: the committed cost model's GEMM time (the hardware spec the device maps to,
    calibrate.py SWEEP_HW) over the measured one -- a validation of the spec on this device,
    nothing refitted."""
    import calibrate as cal                 # late: calibrate.py imports this module
    import model_residuals as mr
    hw = cal.SWEEP_HW.get(rows[0]["device"])
    if not hw:
        return ["  the cost model: no hardware spec for '%s' (calibrate.py SWEEP_HW)" % rows[0]["device"]]
    base = cal.read_base(hw)
    q = [(r["m"], mr.gemm_time(r["m"], r["k"], r["n"], hw, base) * 1e6 / r["median_us"]) for r in rows]

    def stats(v):
        v = sorted(v)
        return "median %.3f, p10 %.3f, p90 %.3f (%d rows)" % (median(v), v[len(v) // 10], v[9 * len(v) // 10], len(v))
    out = ["  the committed cost model (experiments/hardware/%s.yaml) / measured, timer %s: %s"
           % (hw, rows[0]["timer"], stats([x for _, x in q]))]
    for lo, hi in M_RANGES:
        v = [x for m, x in q if lo <= m <= hi]
        if v:
            out.append("  %-14s M %d-%d: %s" % ("", lo, hi, stats(v)))
    return out


def flash_report(rows):
    """Lines: the committed FlashAttention terms of the device's hardware spec (executor_sim.c
    flash_attention: decode fixed + per (sequence, head) + KV bytes / (HBM x eff); prefill fixed +
    causal FLOPs / (peak x eff) + bytes / (HBM x eff)) over PyTorch's scaled_dot_product_attention
    on the same device (torch_peer.py, flash backend rows) -- a validation, nothing refitted."""
    import calibrate as cal
    import flash_attn as fa
    import model_residuals as mr
    hw = cal.SWEEP_HW.get(rows[0]["device"])
    if not hw:
        return ["  FlashAttention terms: no hardware spec for '%s' (calibrate.py SWEEP_HW)" % rows[0]["device"]]
    base = cal.read_base(hw)
    c = [mr.committed(hw, k) for k in fa.KEYS]
    if any(v is None for v in c):
        return ["  FlashAttention terms: experiments/hardware/%s.yaml has none" % hw]
    hbm, peak = base["hbm_bandwidth_GBps"] * 1e9, base["fp16_tflops"] * 1e12
    dec, pre = [], []
    for r in rows:
        if r["backend"] != "flash" or r["dtype"] != "fp16":
            continue
        b, n, h, kv, d = r["batch"], r["context"], r["num_heads"], r["num_kv_heads"], r["head_size"]
        if r["phase"] == "decode":
            t = fa.decode_time(c[0], c[1], c[2], b, h, b * n * 2 * kv * d * 2, hbm)
            dec.append(((h, kv), t * 1e6 / r["median_us"]))
        elif r["phase"] == "prefill":
            t = fa.prefill_time(c[3], c[4], c[5], 4.0 * h * d * b * n * (n + 1) / 2, b * n * (2 * h + 2 * kv) * d * 2,
                                peak, hbm)
            pre.append((n, (h, kv), t * 1e6 / r["median_us"]))

    def stats(v):
        v = sorted(v)
        return "median %.3f, p10 %.3f, p90 %.3f (%d rows)" % (median(v), v[len(v) // 10], v[9 * len(v) // 10], len(v))
    out = ["  the committed FlashAttention terms (experiments/hardware/%s.yaml) / PyTorch SDPA (flash) measured:" % hw]
    if dec:
        out.append("  %-14s decode: %s" % ("", stats([x for _, x in dec])))
        for hk in sorted({hk for hk, _ in dec}, reverse=True):
            out.append("  %-14s decode, %d/%d heads: %s" % ("", hk[0], hk[1], stats([x for k, x in dec if k == hk])))
    if pre:
        out.append("  %-14s prefill (causal, one sequence): %s" % ("", stats([x for _, _, x in pre])))
        for n in sorted({n for n, _, _ in pre}):
            out.append("  %-14s prefill %5d tokens: %s" % ("", n, ", ".join("%d/%d heads %.2f" % (hk[0], hk[1], x)
                                                                       for m, hk, x in pre if m == n)))
    return out


def launch_report(rows):
    """Lines: the eager issue cost torch_peer.py measured (torch_launch.csv: 80 Llama-2-70B TP 8
    layers at batch 1, host wall time to issue them, per profiled kernel and per layer) beside the
    device's hardware spec's framework.python.launch_us -- a report, nothing refitted here."""
    import calibrate as cal
    hw = cal.SWEEP_HW.get(rows[0]["device"])
    spec = None
    if hw:
        with open(os.path.join(cal.HW_DIR, hw + ".yaml")) as f:
            v = cal.get_value(f.read().split("\n"), "cost_model.framework.python.launch_us")
        spec = float(v) if v is not None else None
    out = ["  eager issue cost (torch_peer.py torch_launch.csv; torch %s, host CPU %s):"
           % (rows[0]["torch"], rows[0]["host_cpu"] or "unrecorded")]
    for r in rows:
        per_k = ("%.2f us per kernel (%d kernels)" % (r["host_us"] / r["kernels"], r["kernels"])
                 if r["kernels"] else "kernels not counted")
        gpu = (", GPU %.1f us per kernel" % (float(r["gpu_us"]) / r["kernels"])
               if r["gpu_us"] and r["kernels"] else "")
        out.append("  %-14s %s: host %.0f us for %d layers = %.1f us per layer, %s%s"
                   % ("", r["what"], r["host_us"], r["layers"], r["host_us_per_layer"], per_k, gpu))
    out.append("  %-14s the spec's framework.python.launch_us (experiments/hardware/%s.yaml): %s"
               % ("", hw or "?", "%g us per kernel" % spec if spec is not None else "absent"))
    return out


def find(dirs):
    """(device folder, attention CSV or None, GEMM CSV or None) under each DIR (or DIR itself): the folders
    holding a calibration sweep or a PyTorch peer's torch_attention.csv or torch_launch.csv."""
    found = []
    for d in dirs:
        pats = [os.path.join(d, "*", "calib_*.csv"), os.path.join(d, "calib_*.csv"),
                os.path.join(d, "*", "torch_attention.csv"), os.path.join(d, "torch_attention.csv"),
                os.path.join(d, "*", "torch_launch.csv"), os.path.join(d, "torch_launch.csv")]
        for sub in sorted(set(p for pat in pats for p in glob.glob(pat))):
            folder = os.path.dirname(sub)
            if folder not in [f for f, _, _ in found]:
                a, g = os.path.join(folder, "calib_attention.csv"), os.path.join(folder, "calib_gemm.csv")
                found.append((folder, a if os.path.isfile(a) else None, g if os.path.isfile(g) else None))
    return found


def peer_lines(path, cols, report_fn, older):
    """Lines of one torch_peer.py file beside the sweep: report_fn over its GPU-timed rows, a
    line saying so when its header is an older layout (`older` completes it), none when absent."""
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        head = f.readline().strip()
    if head != ",".join(cols):
        return ["  %s: an older layout (%s" % (os.path.relpath(path, ROOT), older)]
    rows = [r for r in read(path, cols) if r["timer"] in GPU_TIMERS]
    return report_fn(rows) if rows else []


def report(dirs):
    """The text calibrate.py prints; SweepError on a malformed file."""
    dirs = [dirs] if isinstance(dirs, str) else dirs
    absent = ("GPU calibration sweep: absent (no calib_attention.csv / calib_gemm.csv timed on a GPU under %s; "
              "`./run_all.sh gpu` on a GPU writes them)" % ", ".join(os.path.relpath(d, ROOT) for d in dirs))
    out, n_gpu = [], 0
    for folder, a, g in find(dirs):
        name = os.path.relpath(folder, ROOT)
        ar = read(a, ATTN_COLS) if a else []
        gr = read(g, GEMM_COLS) if g else []
        gpu_a = [r for r in ar if r["timer"] in GPU_TIMERS]
        gpu_g = [r for r in gr if r["timer"] in GPU_TIMERS]
        ta = os.path.join(folder, "torch_attention.csv")
        if (a or g) and not gpu_a and not gpu_g:
            out.append("GPU calibration sweep %s: %d rows, none timed on a GPU (C references: not calibration "
                       "data)" % (name, len(ar) + len(gr)))
            continue
        if gpu_a or gpu_g:
            n_gpu += 1
            r0 = (gpu_a or gpu_g)[0]
            timers = lambda rs: "/".join(sorted({r["timer"] for r in rs})) or "-"   # each file's own timer
            out.append("GPU calibration sweep %s: %s, driver %s, CUDA %s, commit %s: %d attention rows (timer %s) + "
                       "%d GEMM rows (timer %s)" % (name, r0["device"], r0["driver"], r0["cuda"], r0["commit"],
                                                    len(gpu_a), timers(gpu_a), len(gpu_g), timers(gpu_g)))
        else:
            out.append("PyTorch peer %s (no calibration sweep beside it):" % name)
        if gpu_a:
            out += attention_report(gpu_a)
        if gpu_g:
            out += gemm_report(gpu_g)
            out += model_report(gpu_g)
        out += peer_lines(ta, TORCH_ATTN_COLS, flash_report, "no phase / KV-head columns), not compared")
        out += peer_lines(os.path.join(folder, "torch_launch.csv"), LAUNCH_COLS, launch_report,
                          "no per-layer / host CPU columns), not reported")
    if not n_gpu:
        out.append(absent)
    return "\n".join(out)


def main(argv):
    dirs = argv[1:] or [os.path.join(ROOT, "results", "gpu")]
    try:
        print(report(dirs))
    except (SweepError, OSError) as e:
        print("gpu_sweep.py: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
