#!/usr/bin/env python3
"""torch_peer.py -- a peer for the GPU run's calibration sweeps: the same shapes timed through
PyTorch on the same device, so that a slow point of ours can be told from a slow point of
the hardware.

    python3 experiments/calibrate/torch_peer.py --out DIR [--gemm-grid CSV] [--reps N] [--commit REV]

Writes, in DIR:
  torch_gemm.csv       device,driver,torch,cuda,commit,timer,dtype,m,n,k,median_us,tflops,gbps
                       torch.nn.functional.linear (cuBLAS/cuBLASLt through PyTorch, its own
                       workspace) at the (M, K, N) grid of the GPU rows of --gemm-grid (default
                       DIR/calib_gemm.csv, which `pagedbench kernels --grid calib-gemm` wrote
                       before: tools/gpu/run_gpu.sh runs this script after that step)
  torch_gemm_seq.csv   device,driver,torch,cuda,commit,timer,dtype,m,n,k,sets,median_us,tflops,gbps
                       the same grid timed as a forward pass runs it: `sets` weight sets of one
                       shape (over 3x the L2 together) back to back between two events, no flush
                       buffer written, time / sets -- no launch gap and no dirty L2 in it (the
                       H100 run's README: the single-call timing above adds both at small M)
  torch_attention.csv  device,driver,torch,cuda,commit,timer,phase,batch,context,num_heads,
                       num_kv_heads,head_size,dtype,backend,median_us,bytes,gbps,hbm_pct
                       torch.nn.functional.scaled_dot_product_attention on a contiguous fp16
                       cache, the FlashAttention-2 backend where PyTorch has it:
                       decode (one query token per sequence): OPT-13B heads (40 x 128) at the
                       kernel run's "long" grid (64 x 1K .. 1 x 64K tokens) and Fig. 18a's, and
                       the Llama heads (32/32, 32/8 and 8/1 query/KV heads of 128: Llama-2-7B,
                       Llama-3-8B, a 70B at TP 8) at batch 1..256 x context 256..8192;
                       prefill (causal, one sequence of `context` tokens): the same Llama heads
                       at 512..8192 tokens -- bytes are K and V read once (decode) or Q, K, V
                       and O once (prefill), against the HBM bandwidth given by --hbm-gbps

  torch_launch.csv     device,driver,torch,cuda,commit,timer,what,batch,layers,kernels,host_us,
                       gpu_us,host_us_per_kernel,gpu_us_per_kernel
                       the eager issue cost: a Llama-2-70B TP 8 decoder layer at batch 1 in
                       plain torch ops, 80 layers one after another; the host's wall time to
                       issue them and the GPU's time, per kernel (kernels counted by the
                       profiler) -- the quantity of the cost model's framework launch_us

Timing: CUDA events around each call, a 256 MiB buffer written between calls so that the
weights and the cache come from HBM (the kernel benchmark's cold-L2 rule), median of --reps
(default 20) after 3 warm-ups.  Needs torch with CUDA; exits 77 without a GPU.  A diagnostic
beside our own measurements, never a parameter of the cost model.
"""
import argparse
import csv
import os
import statistics
import time
import subprocess
import sys

LONG = [(64, 1024), (16, 4096), (8, 8192), (4, 16384), (2, 32768), (1, 65536)]
FIG18A = [(8, 64), (8, 128), (8, 256), (32, 64), (32, 128), (32, 256)]
HEADS, HEAD_SIZE = 40, 128
LLAMA_HEADS = [(32, 32), (32, 8), (8, 1)]          # (query, KV) heads of 128 per GPU
LLAMA_DECODE = [(b, c) for b in (1, 4, 16, 64, 256) for c in (256, 1024, 4096, 8192)]
LLAMA_PREFILL = [512, 1024, 2048, 4096, 8192]


def gemm_grid(path):
    """(K, N) shapes in their order and the sorted M values of the GPU rows of a calib_gemm.csv
    (`pagedbench kernels --grid calib-gemm`, kbench_gpu.c calib_gemm_kn: the one declaration
    of the grid); ([], []) when the file or its GPU rows are absent."""
    shapes, ms = [], set()
    try:
        with open(path, newline="") as f:
            for r in csv.DictReader(row for row in f if not row.startswith("#")):
                if r.get("timer") in (None, "", "cpu"):
                    continue
                kn = (int(r["k"]), int(r["n"]))
                if kn not in shapes:
                    shapes.append(kn)
                ms.add(int(r["m"]))
    except (OSError, KeyError, ValueError) as e:
        print(f"torch_peer.py: no GEMM grid from {path}: {e}", file=sys.stderr)
        return [], []
    return shapes, sorted(ms)


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
    ap.add_argument("--gemm-grid", metavar="CSV", help="the calib_gemm.csv whose (M, K, N) grid the GEMMs repeat "
                    "(default OUT/calib_gemm.csv)")
    a = ap.parse_args()
    shapes, ms = gemm_grid(a.gemm_grid or os.path.join(a.out, "calib_gemm.csv"))
    if not shapes:
        print("torch_peer.py: no calib_gemm.csv GPU rows: torch_gemm.csv and torch_gemm_seq.csv keep their headers only",
              file=sys.stderr)
    max_m = max(ms) if ms else 0
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
        for k, n in shapes:
            wt = (torch.rand(n, k, generator=g, device=dev, dtype=torch.float16) - 0.5) * 0.1
            x = torch.rand(max_m, k, generator=g, device=dev, dtype=torch.float16) * 2 - 1
            for m in ms:
                xm = x[:m]
                us = time_us(lambda: torch.nn.functional.linear(xm, wt))
                flops, byts = 2.0 * m * n * k, 2.0 * (m * k + n * k + m * n)
                w.writerow(meta + ["fp16", m, n, k, f"{us:.4f}", f"{flops / us / 1e6:.4f}", f"{byts / us / 1e3:.4f}"])
            del wt, x
    # the same grid timed as a model runs it: R different weight sets of one shape (together over
    # 3x the L2, so each is cold and clean when its turn comes) one after another between two
    # events, no flush buffer written, the host queueing ahead -- the GEMM's time in a forward pass
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (50 << 20)
    with open(os.path.join(a.out, "torch_gemm_seq.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["device", "driver", "torch", "cuda", "commit", "timer", "dtype", "m", "n", "k",
                    "sets", "median_us", "tflops", "gbps"])
        for k, n in shapes:
            sets = max(2, min(16, -(-3 * l2 // (2 * k * n))))
            wts = [(torch.rand(n, k, generator=g, device=dev, dtype=torch.float16) - 0.5) * 0.1 for _ in range(sets)]
            x = torch.rand(max_m, k, generator=g, device=dev, dtype=torch.float16) * 2 - 1
            for m in ms:
                xm = x[:m]
                run = lambda: [torch.nn.functional.linear(xm, wt) for wt in wts]
                run()
                torch.cuda.synchronize()
                ts = []
                for _ in range(max(3, a.reps // 4)):
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record()
                    run()
                    e.record()
                    e.synchronize()
                    ts.append(s.elapsed_time(e) * 1e3 / sets)
                us = statistics.median(ts)
                flops, byts = 2.0 * m * n * k, 2.0 * (m * k + n * k + m * n)
                w.writerow(meta + ["fp16", m, n, k, sets, f"{us:.4f}", f"{flops / us / 1e6:.4f}",
                                   f"{byts / us / 1e3:.4f}"])
            del wts, x
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        flash = lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    except ImportError:
        flash = None

    def sdpa(q, kc, vc, causal):
        """(median us, backend): the flash backend where it takes these inputs, else PyTorch's pick."""
        gqa = {"enable_gqa": True} if kc.shape[1] != q.shape[1] else {}
        f = lambda: torch.nn.functional.scaled_dot_product_attention(q, kc, vc, is_causal=causal, **gqa)
        if flash is not None:
            try:
                with flash():
                    return time_us(f), "flash"
            except RuntimeError:
                pass
        return time_us(f), "default"

    with open(os.path.join(a.out, "torch_attention.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["device", "driver", "torch", "cuda", "commit", "timer", "phase", "batch", "context", "num_heads",
                    "num_kv_heads", "head_size", "dtype", "backend", "median_us", "bytes", "gbps", "hbm_pct"])
        pts = [("decode", b, ctx, HEADS, HEADS) for b, ctx in FIG18A + LONG]
        pts += [("decode", b, ctx, h, kv) for h, kv in LLAMA_HEADS for b, ctx in LLAMA_DECODE]
        pts += [("prefill", 1, n, h, kv) for h, kv in LLAMA_HEADS for n in LLAMA_PREFILL]
        for phase, b, ctx, h, kv in pts:
            nq = 1 if phase == "decode" else ctx
            q = torch.randn(b, h, nq, HEAD_SIZE, generator=g, device=dev, dtype=torch.float16)
            kc = torch.randn(b, kv, ctx, HEAD_SIZE, generator=g, device=dev, dtype=torch.float16)
            vc = torch.randn(b, kv, ctx, HEAD_SIZE, generator=g, device=dev, dtype=torch.float16)
            try:
                us, backend = sdpa(q, kc, vc, phase == "prefill")
            except RuntimeError as e:                     # e.g. no GQA in this PyTorch
                print(f"torch_peer.py: {phase} b{b} ctx{ctx} {h}/{kv} heads: {e}".splitlines()[0], file=sys.stderr)
                continue
            byts = 2.0 * b * HEAD_SIZE * (2 * kv * ctx + (2 * h * nq if phase == "prefill" else 0))
            gbps = byts / us / 1e3
            w.writerow(meta + [phase, b, ctx, h, kv, HEAD_SIZE, "fp16", backend, f"{us:.4f}", int(byts),
                               f"{gbps:.1f}", f"{100.0 * gbps / a.hbm_gbps:.1f}"])
            del q, kc, vc
    # the host's issue cost in eager mode (the cost model's framework launch_us): a decoder layer
    # of Llama-2-70B at TP 8 and batch 1 written in eager torch ops, repeated for 80 layers; the
    # host's wall time per kernel against the GPU's time for the same 80 layers
    with open(os.path.join(a.out, "torch_launch.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["device", "driver", "torch", "cuda", "commit", "timer", "what", "batch", "layers",
                    "kernels", "host_us", "gpu_us", "host_us_per_kernel", "gpu_us_per_kernel"])
        def launch_rows():
            hid, nq, nkv, ff, ctx = 8192, 8, 1, 28672 // 8, 512
            wqkv = torch.randn((nq + 2 * nkv) * 128, hid, generator=g, device=dev, dtype=torch.float16) * 0.01
            wo = torch.randn(hid, nq * 128, generator=g, device=dev, dtype=torch.float16) * 0.01
            wgu = torch.randn(2 * ff, hid, generator=g, device=dev, dtype=torch.float16) * 0.01
            wd = torch.randn(hid, ff, generator=g, device=dev, dtype=torch.float16) * 0.01
            kc = torch.randn(1, nkv, ctx, 128, generator=g, device=dev, dtype=torch.float16)
            vc = torch.randn(1, nkv, ctx, 128, generator=g, device=dev, dtype=torch.float16)
            cos = torch.randn(1, 64, device=dev, dtype=torch.float16)

            def rms(x):
                return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype)

            def layer(x):
                h = rms(x)
                qkv = torch.nn.functional.linear(h, wqkv)
                q, k, v = qkv.split([nq * 128, nkv * 128, nkv * 128], dim=-1)
                q1, q2 = q.view(1, nq, 128).chunk(2, dim=-1)
                q = torch.cat([q1 * cos - q2 * cos, q2 * cos + q1 * cos], dim=-1)
                o = torch.nn.functional.scaled_dot_product_attention(q.view(1, nq, 1, 128), kc, vc, enable_gqa=True)
                x = x + torch.nn.functional.linear(o.reshape(1, nq * 128), wo)
                gu = torch.nn.functional.linear(rms(x), wgu)
                gate, up = gu.chunk(2, dim=-1)
                return x + torch.nn.functional.linear(torch.nn.functional.silu(gate) * up, wd)

            x0 = torch.randn(1, hid, generator=g, device=dev, dtype=torch.float16)
            try:
                from torch.profiler import ProfilerActivity, profile
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    layer(x0)
                    torch.cuda.synchronize()
                kernels = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
            except Exception as e:                            # no CUPTI: count stays unknown
                print(f"torch_peer.py: kernel count: {e}".splitlines()[0], file=sys.stderr)
                kernels = 0
            for _ in range(3):
                y = x0
                for _ in range(80):
                    y = layer(y)
            torch.cuda.synchronize()
            hs, gs = [], []
            for _ in range(max(3, a.reps // 4)):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                s.record()
                y = x0
                for _ in range(80):
                    y = layer(y)
                e.record()
                hs.append((time.perf_counter() - t0) * 1e6)   # the host's issue time (the queue is not full)
                e.synchronize()
                gs.append(s.elapsed_time(e) * 1e3)            # the GPU's time, host stalls included
            h_us, g_us, n = statistics.median(hs), statistics.median(gs), 80 * kernels
            w.writerow(meta + ["llama-2-70b-tp8-layer-eager", 1, 80, n, f"{h_us:.1f}", f"{g_us:.1f}",
                               f"{h_us / n:.3f}" if n else "", f"{g_us / n:.3f}" if n else ""])
        try:
            launch_rows()
        except (RuntimeError, TypeError, ValueError) as e:   # an older PyTorch: the other files stand
            print(f"torch_peer.py: torch_launch.csv left empty: {e}".splitlines()[0], file=sys.stderr)
    print(f"torch_peer.py: wrote {a.out}/torch_gemm.csv, torch_gemm_seq.csv, torch_attention.csv, torch_launch.csv ({name}, torch {torch.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
