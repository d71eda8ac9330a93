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
                       gpu_us,host_us_per_kernel,gpu_us_per_kernel,host_us_per_layer,host_cpu
                       the eager issue cost -- the quantity of the cost model's framework
                       launch_us: 80 decoder layers of Llama-2-70B at TP 8 (one GPU's shard,
                       batch 1, 512 cached tokens) issued one after another; the host's wall time
                       to issue them and the GPU's time, per kernel (kernels counted by the
                       profiler) and per layer, in two forms:
                         llama-2-70b-tp8-layer-eager   bare functional torch ops
                         llama-2-70b-tp8-layer-vllm02  vLLM v0.2's module tree and call pattern
                           (LlamaDecoderLayer: fused-add RMSNorms carrying the residual;
                           LlamaAttention: QKV projection, split, rotary, PagedAttention's views,
                           cache write and attention into a preallocated output, O projection;
                           LlamaMLP: gate-up projection, SiluAndMul into a preallocated output,
                           down projection; the two row-parallel all-reduces through
                           torch.distributed on a one-rank group -- its host path, no wire),
                           each of vLLM's fused CUDA ops stood in for by one torch op (vllm._C
                           is not installable here), so the host work per kernel is PyTorch's
                           and the module structure is vLLM's
                       this section runs first (the key input of issue #36's H100 rows) and
                       also runs on a CPU (--device cpu: a rehearsal of the code; host times
                       of CPU ops, no kernel count, no GPU time)

Timing: CUDA events around each call, a 256 MiB buffer written between calls so that the
weights and the cache come from HBM (the kernel benchmark's cold-L2 rule), median of --reps
(default 20) after 3 warm-ups.  Needs torch with CUDA (exits 77 without a GPU), except
--device cpu, which runs the launch section only.  The GEMM and attention files are a
diagnostic beside our own measurements, never a parameter of the cost model;
torch_launch.csv is the micro-level measurement meant for framework.python.launch_us
(gpu_sweep.py's launch report sets it beside the specs' value).
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


# Llama-2-70B at TP 8, one GPU's shard: hidden, query / KV heads of 128, FFN width, layers; 512 cached tokens
L70_TP8 = dict(hidden=8192, q_heads=64 // 8, kv_heads=1, ffn=28672 // 8, layers=80, ctx=512)


def eager_layers(torch, dev, g, style, all_reduce):
    """A function run(x) issuing L70_TP8's layers at batch 1 in eager torch ops, `style` 'plain' (bare
    functional ops) or 'vllm02' (vLLM v0.2's modules and call pattern, see the module docstring;
    all_reduce(x) is the row-parallel reduction's call)."""
    nn, F = torch.nn, torch.nn.functional
    c = L70_TP8
    hid, nq, nkv, ff, ctx, hs = c["hidden"], c["q_heads"], c["kv_heads"], c["ffn"], c["ctx"], 128
    dt = torch.float16 if dev.type == "cuda" else torch.float32

    def w(*shape):
        return torch.randn(*shape, generator=g, device=dev, dtype=dt) * 0.01

    if style == "plain":
        wqkv, wo, wgu, wd = w((nq + 2 * nkv) * hs, hid), w(hid, nq * hs), w(2 * ff, hid), w(hid, ff)
        kc, vc, cos = w(1, nkv, ctx, hs), w(1, nkv, ctx, hs), w(1, hs // 2)

        def rms(x):
            return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype)

        def layer(x):
            h = rms(x)
            qkv = F.linear(h, wqkv)
            q, k, v = qkv.split([nq * hs, nkv * hs, nkv * hs], dim=-1)
            q1, q2 = q.view(1, nq, hs).chunk(2, dim=-1)
            q = torch.cat([q1 * cos - q2 * cos, q2 * cos + q1 * cos], dim=-1)
            o = F.scaled_dot_product_attention(q.view(1, nq, 1, hs), kc, vc, enable_gqa=True)
            x = x + F.linear(o.reshape(1, nq * hs), wo)
            gu = F.linear(rms(x), wgu)
            gate, up = gu.chunk(2, dim=-1)
            return x + F.linear(F.silu(gate) * up, wd)

        def run(x):
            for _ in range(c["layers"]):
                x = layer(x)
            return x
        return run

    class Linear(nn.Module):                 # Column/RowParallelLinear: (output, bias) pairs
        def __init__(self, n, k, reduce):
            super().__init__()
            self.weight, self.reduce = nn.Parameter(w(n, k), requires_grad=False), reduce

        def forward(self, x):
            out = F.linear(x, self.weight)
            if self.reduce:
                all_reduce(out)
            return out, None

    class RMSNorm(nn.Module):                # ops.rms_norm / ops.fused_add_rms_norm: one kernel each
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(w(hid), requires_grad=False)

        def forward(self, x, residual=None):
            if residual is not None:
                residual.add_(x)
                return torch.mul(residual, self.weight.data, out=x), residual
            out = torch.empty_like(x)
            return torch.mul(x, self.weight.data, out=out)

    class Rotary(nn.Module):                 # ops.rotary_embedding: q and k in place, one kernel
        def __init__(self):
            super().__init__()
            self.cos = w(hs)

        def forward(self, positions, q, k):
            q.view(-1, nq, hs).mul_(self.cos)
            return q, k

    class PagedAttention(nn.Module):         # views, ops.reshape_and_cache, ops.paged_attention_v1
        def forward(self, q, k, v, k_cache, v_cache, slot_mapping):
            n = q.shape[0]
            q, k, v = q.view(-1, nq, hs), k.view(-1, nkv, hs), v.view(-1, nkv, hs)
            k_cache.index_copy_(0, slot_mapping.flatten(), k)
            out = torch.empty_like(q)
            torch.mul(q, k_cache[:n], out=out)
            return out.view(n, nq * hs)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv_proj, self.o_proj = Linear((nq + 2 * nkv) * hs, hid, False), Linear(hid, nq * hs, True)
            self.rotary_emb, self.attn = Rotary(), PagedAttention()
            self.k_cache, self.v_cache = w(ctx + 1, nkv, hs), w(ctx + 1, nkv, hs)
            self.slot = torch.full((1, 1), ctx, device=dev, dtype=torch.long)

        def forward(self, positions, x):
            qkv, _ = self.qkv_proj(x)
            q, k, v = qkv.split([nq * hs, nkv * hs, nkv * hs], dim=-1)
            q, k = self.rotary_emb(positions, q, k)
            o = self.attn(q, k, v, self.k_cache, self.v_cache, self.slot)
            out, _ = self.o_proj(o)
            return out

    class SiluAndMul(nn.Module):             # ops.silu_and_mul into a preallocated output: one kernel
        def forward(self, x):
            d = x.shape[-1] // 2
            out = torch.empty(x.shape[:-1] + (d,), dtype=x.dtype, device=x.device)
            return torch.mul(x[..., :d], x[..., d:], out=out)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_up_proj, self.down_proj, self.act_fn = Linear(2 * ff, hid, False), Linear(hid, ff, True), SiluAndMul()

        def forward(self, x):
            gate_up, _ = self.gate_up_proj(x)
            out, _ = self.down_proj(self.act_fn(gate_up))
            return out

    class DecoderLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm, self.post_attention_layernorm = RMSNorm(), RMSNorm()
            self.self_attn, self.mlp = Attention(), MLP()

        def forward(self, positions, x, residual):
            if residual is None:
                residual, x = x, self.input_layernorm(x)
            else:
                x, residual = self.input_layernorm(x, residual)
            x = self.self_attn(positions, x)
            x, residual = self.post_attention_layernorm(x, residual)
            return self.mlp(x), residual

    one = DecoderLayer()                     # 80 layers share one set of weights (the host path is the same)
    positions = torch.zeros(1, device=dev, dtype=torch.long)

    def run(x):
        residual = None
        for _ in range(c["layers"]):
            x, residual = one(positions, x, residual)
        return x
    return run


def launch_rows(torch, dev, g, meta, reps, writer):
    """torch_launch.csv's rows: both forms of eager_layers, host issue time and GPU time."""
    import torch.distributed as dist
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    group = None
    try:
        if not dist.is_initialized():
            dist.init_process_group("nccl" if cuda else "gloo", store=dist.HashStore(), rank=0, world_size=1)
        group = dist.group.WORLD
    except (RuntimeError, ValueError, AttributeError) as e:
        print(f"torch_peer.py: no one-rank process group ({e}); vllm02 rows issue no all-reduce".splitlines()[0],
              file=sys.stderr)
    all_reduce = (lambda x: dist.all_reduce(x, group=group)) if group is not None else (lambda x: x)
    host_cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            host_cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    c = L70_TP8
    for style, what in (("plain", "llama-2-70b-tp8-layer-eager"), ("vllm02", "llama-2-70b-tp8-layer-vllm02")):
        run = eager_layers(torch, dev, g, style, all_reduce)
        x0 = torch.randn(1, c["hidden"], generator=g, device=dev, dtype=torch.float16 if cuda else torch.float32)
        kernels = 0
        if cuda:
            try:
                from torch.profiler import ProfilerActivity, profile
                with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
                    run(x0)
                    sync()
                kernels = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
            except Exception as e:                            # no CUPTI: the count stays unknown
                print(f"torch_peer.py: kernel count: {e}".splitlines()[0], file=sys.stderr)
        with torch.no_grad():
            for _ in range(3):
                run(x0)
            sync()
            hs, gs = [], []
            for _ in range(max(3, reps // 4)):
                sync()
                if cuda:
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record()
                t0 = time.perf_counter()
                run(x0)
                hs.append((time.perf_counter() - t0) * 1e6)   # the host's issue time (the queue is not full)
                if cuda:
                    e.record()
                    e.synchronize()
                    gs.append(s.elapsed_time(e) * 1e3)        # the GPU's time, host stalls included
        h_us, n = statistics.median(hs), kernels        # kernels of all the layers
        g_us = statistics.median(gs) if gs else None
        writer.writerow(meta + [what, 1, c["layers"], n, f"{h_us:.1f}", f"{g_us:.1f}" if g_us else "",
                                f"{h_us / n:.3f}" if n else "", f"{g_us / n:.3f}" if n and g_us else "",
                                f"{h_us / c['layers']:.2f}", host_cpu])
    if group is not None:
        dist.destroy_process_group()


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
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                    help="cpu: the launch section only, on CPU ops (a rehearsal of its code)")
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
    os.makedirs(a.out, exist_ok=True)
    launch_header = ["device", "driver", "torch", "cuda", "commit", "timer", "what", "batch", "layers", "kernels",
                     "host_us", "gpu_us", "host_us_per_kernel", "gpu_us_per_kernel", "host_us_per_layer", "host_cpu"]
    if a.device == "cpu":
        dev = torch.device("cpu")
        with open(os.path.join(a.out, "torch_launch.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(launch_header)
            launch_rows(torch, dev, torch.Generator(device=dev).manual_seed(11),
                        ["cpu", "", torch.__version__, "", a.commit, "perf_counter"], a.reps, w)
        print(f"torch_peer.py: wrote {a.out}/torch_launch.csv (CPU rehearsal, torch {torch.__version__})")
        return 0
    if not torch.cuda.is_available():
        print("torch_peer.py: SKIP: torch sees no GPU", file=sys.stderr)
        return 77
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(0)
    meta = [name, driver(), torch.__version__, torch.version.cuda or "", a.commit, "events"]
    g = torch.Generator(device=dev).manual_seed(11)
    # first: the eager issue cost (torch_launch.csv), the measurement issue #36 waits for
    with open(os.path.join(a.out, "torch_launch.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(launch_header)
        try:
            launch_rows(torch, dev, g, meta, a.reps, w)
        except (RuntimeError, TypeError, ValueError) as e:   # an older PyTorch: the other files stand
            print(f"torch_peer.py: torch_launch.csv left with its header only: {e}".splitlines()[0], file=sys.stderr)
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
    print(f"torch_peer.py: wrote {a.out}/torch_launch.csv, torch_gemm.csv, torch_gemm_seq.csv, torch_attention.csv "
          f"({name}, torch {torch.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
