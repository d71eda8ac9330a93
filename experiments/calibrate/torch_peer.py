#!/usr/bin/env python3
"""torch_peer.py -- a peer for the GPU run's calibration sweeps: the same shapes timed through
PyTorch on the same device, so that a slow point of ours can be told from a slow point of
the hardware.

    python3 experiments/calibrate/torch_peer.py --out DIR [--reps N] [--commit REV]

Writes, in DIR:
  torch_gemm.csv       device,driver,torch,cuda,commit,timer,dtype,m,n,k,median_us,tflops,gbps
                       torch.nn.functional.linear (cuBLAS/cuBLASLt through PyTorch, its own
                       workspace) at OPT-13B's four GEMM shapes (K x N = 5120x15360,
                       5120x5120, 5120x20480, 20480x5120), M = 1..16, 24..512 step 8 -- the
                       grid of `pagedbench kernels --grid calib-gemm` (calib_gemm.csv)
  torch_attention.csv  device,driver,torch,cuda,commit,timer,batch,context,num_heads,
                       head_size,dtype,median_us,bytes,gbps,hbm_pct
                       decode attention (one query token per sequence) through
                       torch.nn.functional.scaled_dot_product_attention on a contiguous
                       fp16 cache, OPT-13B heads (40 x 128), at the kernel run's "long" grid
                       (64 x 1K .. 1 x 64K tokens) and Fig. 18a's -- the bytes moved over the
                       time, against the HBM bandwidth given by --hbm-gbps

Timing: CUDA events around each call, a 256 MiB buffer written between calls so that the
weights and the cache come from HBM (the kernel benchmark's cold-L2 rule), median of --reps
(default 20) after 3 warm-ups.  Needs torch with CUDA; exits 77 without a GPU.  A diagnostic
beside our own measurements, never a parameter of the cost model.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys

SHAPES = [(5120, 15360), (5120, 5120), (5120, 20480), (20480, 5120)]   # (K, N): kbench_gpu.c
LONG = [(64, 1024), (16, 4096), (8, 8192), (4, 16384), (2, 32768), (1, 65536)]
FIG18A = [(8, 64), (8, 128), (8, 256), (32, 64), (32, 128), (32, 256)]
HEADS, HEAD_SIZE = 40, 128


def m_grid():
    m, out = 1, []
    while m <= 512:
        out.append(m)
        m = m + 1 if m < 16 else m + 8 - (m % 8)
    return out


def driver():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--commit", default=os.environ.get("PB_GIT_REV", "unknown"))
    ap.add_argument("--hbm-gbps", type=float, default=4800.0, help="HBM bandwidth for hbm_pct (H200: 4800)")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_peer.py: SKIP: no torch", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("torch_peer.py: SKIP: torch sees no GPU", file=sys.stderr)
        return 77
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(0)
    meta = [name, driver(), torch.__version__, torch.version.cuda or "", a.commit, "events"]
    flush = torch.empty(64 << 20, dtype=torch.float32, device=dev)

    def time_us(fn):
        for _ in range(3):
            fn()
        ts = []
        for _ in range(a.reps):
            flush.fill_(1.0)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e) * 1e3)
        return statistics.median(ts)

    os.makedirs(a.out, exist_ok=True)
    g = torch.Generator(device=dev).manual_seed(11)
    with open(os.path.join(a.out, "torch_gemm.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["device", "driver", "torch", "cuda", "commit", "timer", "dtype", "m", "n", "k",
                    "median_us", "tflops", "gbps"])
        for k, n in SHAPES:
            wt = (torch.rand(n, k, generator=g, device=dev, dtype=torch.float16) - 0.5) * 0.1
            x = torch.rand(512, k, generator=g, device=dev, dtype=torch.float16) * 2 - 1
            for m in m_grid():
                xm = x[:m]
                us = time_us(lambda: torch.nn.functional.linear(xm, wt))
                flops, byts = 2.0 * m * n * k, 2.0 * (m * k + n * k + m * n)
                w.writerow(meta + ["fp16", m, n, k, f"{us:.4f}", f"{flops / us / 1e6:.4f}", f"{byts / us / 1e3:.4f}"])
            del wt, x
    with open(os.path.join(a.out, "torch_attention.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["device", "driver", "torch", "cuda", "commit", "timer", "batch", "context", "num_heads",
                    "head_size", "dtype", "median_us", "bytes", "gbps", "hbm_pct"])
        for b, ctx in FIG18A + LONG:
            q = torch.randn(b, HEADS, 1, HEAD_SIZE, generator=g, device=dev, dtype=torch.float16)
            kc = torch.randn(b, HEADS, ctx, HEAD_SIZE, generator=g, device=dev, dtype=torch.float16)
            vc = torch.randn(b, HEADS, ctx, HEAD_SIZE, generator=g, device=dev, dtype=torch.float16)
            us = time_us(lambda: torch.nn.functional.scaled_dot_product_attention(q, kc, vc))
            byts = 2.0 * 2 * b * HEADS * ctx * HEAD_SIZE          # K and V read once, fp16
            gbps = byts / us / 1e3
            w.writerow(meta + [b, ctx, HEADS, HEAD_SIZE, "fp16", f"{us:.4f}", int(byts), f"{gbps:.1f}",
                               f"{100.0 * gbps / a.hbm_gbps:.1f}"])
            del q, kc, vc
    print(f"torch_peer.py: wrote {a.out}/torch_gemm.csv, {a.out}/torch_attention.csv ({name}, torch {torch.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
