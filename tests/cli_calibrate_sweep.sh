#!/usr/bin/env bash
# cli_calibrate_sweep.sh -- calibrate.py refits the paged kernel's block-size law on a GPU
# block-size sweep when one exists (results/gpu/<device>/calib_attention.csv): a sweep
# made from the law itself at a known cost per warp request gives that cost back (x 10
# requests per block of 16 = attn_paged_block_ns), pred/measured 1.00 at every block
# size; a sweep with a wrong header is an error; no sweep leaves the Fig. 18a value.
# Needs python3 only (no GPU profiles).
#   bash tests/cli_calibrate_sweep.sh build/release/pagedbench
set -u
. "$(dirname "$0")/skip.sh"
command -v python3 >/dev/null || pb_skip "no python3"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 - "$T" <<'EOF'
import math, os, sys
sys.path.insert(0, "experiments/calibrate")
import calibrate as C
d = os.path.join(sys.argv[1], "gpu")
os.makedirs(os.path.join(d, "NVIDIA_A100-SXM4-40GB"))
per_req_us, heads, head = 0.3e-3, 40, 128
with open(os.path.join(d, "NVIDIA_A100-SXM4-40GB", "calib_attention.csv"), "w") as f:
    f.write(",".join(C.gpu_sweep.ATTN_COLS) + "\n")
    for n in (8, 32):
        for ctx in (100, 700):
            contig = 10 + 0.02 * n * ctx
            f.write("NVIDIA A100-SXM4-40GB,550,12.4,abc,cupti,contig,v1,0,%d,%d,%d,%d,fp16,%.6f,0,0\n" % (n, ctx, heads, head, contig))
            for b in (1, 2, 4, 8, 16, 32, 64, 128, 256):
                nb = math.ceil(ctx / b)
                t = contig + per_req_us * n * heads * nb * C.paged_requests_per_block(b, head) + (b * nb - ctx) * contig / ctx
                f.write("NVIDIA A100-SXM4-40GB,550,12.4,abc,cupti,paged,v1,%d,%d,%d,%d,%d,fp16,%.6f,0,0\n" % (b, n, ctx, heads, head, t))
fit = C.attn_block_sweep(d)
ok = "a100-40gb" in fit and abs(fit["a100-40gb"][0] - 3.0) < 1e-3 and "256: 1.00" in fit["a100-40gb"][1] and "1: 1.00" in fit["a100-40gb"][1]
print("[%s] a sweep made from the law at 0.3 ns per request gives attn_paged_block_ns 3.0: %s" % ("ok" if ok else "FAIL", fit))
empty = os.path.join(sys.argv[1], "none")
os.makedirs(empty)
ok2 = C.attn_block_sweep(empty) == {}
print("[%s] no sweep: nothing refitted" % ("ok" if ok2 else "FAIL"))
bad = os.path.join(sys.argv[1], "bad", "x")
os.makedirs(bad)
open(os.path.join(bad, "calib_attention.csv"), "w").write("device,median_us\nx,1\n")
try:
    C.attn_block_sweep(os.path.dirname(bad))
    ok3 = False
except SystemExit as e:
    ok3 = "header" in str(e) and "calib_attention.csv:" in str(e)
print("[%s] a sweep with another header is an error" % ("ok" if ok3 else "FAIL"))
sys.exit(0 if ok and ok2 and ok3 else 1)
EOF
