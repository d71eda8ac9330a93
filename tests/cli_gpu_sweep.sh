#!/usr/bin/env bash
# cli_gpu_sweep.sh -- the reader of the GPU calibration sweeps (experiments/calibrate/
# gpu_sweep.py, called by calibrate.py) on SYNTHETIC fixtures written here into a temp
# folder (never data: the device is "SYNTHETIC-FIXTURE" and every number follows a formula):
#   1. absent sweeps are said to be absent (calibrate.py too);
#   2. the per-lookup cost of the paged kernel by block size and the GEMM bend are
#      recovered from data built with known values (3 ns per lookup below block 16, 2 ns
#      from 16; GEMM time in steps of 64 rows);
#   3. a malformed file is an error naming file:line:col (exit 2), as is a wrong header;
#   4. the CSVs `pagedbench kernels --cpu --grid calib-attn,calib-gemm --calib-dir` writes
#      read back, and are recognised as C references (not calibration data);
#   5. PyTorch's attention (torch_peer.py's torch_attention.csv) beside the committed
#      FlashAttention terms: a fixture at twice the model's time reads 0.500;
#   6. calibrate.py's profiled GEMMs beside a device's torch_gemm.csv: twice the profiled
#      time (tests/data/gpu-profiles) reads 0.50 in every token-count bucket;
#   7. the eager issue cost of torch_peer.py's torch_launch.csv: per layer and per kernel
#      recovered from known values, beside the spec's framework.python.launch_us.
#   bash tests/cli_gpu_sweep.sh build/cpu/pagedbench
set -u
. "$(dirname "$0")/skip.sh"
PB=${1:?usage: cli_gpu_sweep.sh path/to/pagedbench}
command -v python3 >/dev/null || pb_skip "no python3"
T=$(mktemp -d /tmp/pb_gpu_sweep.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }
R="python3 experiments/calibrate/gpu_sweep.py"

out=$($R "$T/none" 2>&1); rc=$?
[ $rc = 0 ] && grep -q 'GPU calibration sweep: absent' <<<"$out" && ok "absent sweeps: said so" || bad "absent: rc $rc: $out"
out=$(python3 experiments/calibrate/calibrate.py --gpu-results "$T/none" --profiles "$T/none" 2>&1); rc=$?
[ $rc = 77 ] && grep -q '^GPU calibration sweep: absent' <<<"$out" && ok "calibrate.py says the sweep is absent" ||
    bad "calibrate.py: rc $rc: $out"

# ---- synthetic fixture (a formula, not a measurement) ----
mkdir -p "$T/gpu/SYNTHETIC-FIXTURE"
python3 - "$T/gpu/SYNTHETIC-FIXTURE" <<'EOF'
import math, sys
d = sys.argv[1]
pre = '"SYNTHETIC-FIXTURE",0.0.0,0.0/0.0,fixture,cupti'
with open(d + "/calib_attention.csv", "w") as f:
    f.write("# SYNTHETIC TEST FIXTURE (tests/cli_gpu_sweep.sh): numbers from a formula, not a measurement\n")
    f.write("device,driver,cuda,commit,timer,kernel,algo,block_size,batch,context,num_heads,head_size,dtype,median_us,bytes,gbps\n")
    for b in (8, 64, 256):
        for ctx in (32, 512, 2048):
            c = 10 + 0.001 * b * ctx
            f.write("%s,contig,v1,0,%d,%d,40,128,fp16,%.6f,1,1\n" % (pre, b, ctx, c))
            bs = 1
            while bs <= 256:
                ns = 3.0 if bs < 16 else 2.0
                p = c + ns * 1e-3 * b * 40 * math.ceil(ctx / bs)
                f.write("%s,paged,v1,%d,%d,%d,40,128,fp16,%.6f,1,1\n" % (pre, bs, b, ctx, p))
                bs *= 2
with open(d + "/calib_gemm.csv", "w") as f:
    f.write("# SYNTHETIC TEST FIXTURE (tests/cli_gpu_sweep.sh): numbers from a formula, not a measurement\n")
    f.write("device,driver,cuda,commit,timer,dtype,m,n,k,median_us,tflops,gbps\n")
    ms = list(range(1, 17)) + list(range(24, 513, 8))
    for m in ms:
        t = 30.0 * math.ceil(m / 64)
        f.write("%s,fp16,%d,5120,5120,%.3f,1,1\n" % (pre, m, t))
EOF
out=$($R "$T/gpu" 2>&1); rc=$?
[ $rc = 0 ] && grep -q 'SYNTHETIC-FIXTURE, driver 0.0.0, CUDA 0.0/0.0, commit fixture: 90 attention rows (timer cupti) + 78 GEMM rows (timer cupti)' <<<"$out" &&
    ok "fixture read: device, driver, CUDA, commit, row counts" || bad "fixture header line: rc $rc: $out"
grep -qE '^ +1 +3\.00 ' <<<"$out" && grep -qE '^ +8 +3\.00 ' <<<"$out" && grep -qE '^ +16 +2\.00 ' <<<"$out" &&
    grep -qE '^ +256 +2\.00 ' <<<"$out" && ok "ns per lookup recovered by block size (3 below 16, 2 from 16)" ||
    bad "ns per lookup: $out"
grep -qE '^ +5120 x 5120 +30\.0 +30\.0 +60\.0 +90\.0 +120\.0 +240\.0 +72$' <<<"$out" &&
    grep -q 'relative to M=64: M=96 2.00x, M=128 2.00x, M=160 3.00x' <<<"$out" && ok "GEMM bend: steps of 64 rows, knee at M=72" ||
    bad "GEMM bend: $out"
out=$(python3 experiments/calibrate/calibrate.py --gpu-results "$T/gpu" --profiles "$T/none" 2>&1); rc=$?
[ $rc = 77 ] && grep -q '90 attention rows (timer cupti)' <<<"$out" && ok "calibrate.py prints the sweep" || bad "calibrate.py with a sweep: rc $rc"

# ---- PyTorch's attention beside the committed FlashAttention terms (torch_peer.py's layout) ----
# the device name maps to h100-sxm.yaml; every time is twice the committed model's (the report
# must read 0.500), and a row of another backend is left out
mkdir -p "$T/flash/FIXTURE-H100"
python3 - "$T/flash/FIXTURE-H100" <<'EOF2'
import sys
sys.path.insert(0, "experiments/calibrate")
import calibrate as cal, model_residuals as mr
d, hw = sys.argv[1], "h100-sxm"
c = lambda k: mr.committed(hw, k)
base = cal.read_base(hw)
hbm, peak = base["hbm_bandwidth_GBps"] * 1e3, base["fp16_tflops"] * 1e6
pre = "NVIDIA H100 80GB HBM3,0.0.0,0.0,0.0,fixture,events"
with open(d + "/torch_attention.csv", "w") as f:
    f.write("device,driver,torch,cuda,commit,timer,phase,batch,context,num_heads,num_kv_heads,head_size,dtype,backend,"
            "median_us,bytes,gbps,hbm_pct\n")
    for b, n, h, kv in ((1, 1024, 32, 8), (16, 4096, 32, 32), (64, 512, 8, 1)):
        t = c("flash_decode_fixed_us") + c("flash_decode_seq_head_ns") * 1e-3 * b * h + \
            b * n * 2 * kv * 128 * 2 / (hbm * c("flash_decode_bw_efficiency"))
        f.write("%s,decode,%d,%d,%d,%d,128,fp16,flash,%.6f,1,1,1\n" % (pre, b, n, h, kv, 2 * t))
    f.write("%s,decode,1,1024,32,8,128,fp16,default,1.0,1,1,1\n" % pre)
    for n in (512, 4096):
        t = c("flash_prefill_fixed_us") + 2.0 * 32 * 128 * n * (n + 1) / (peak * c("flash_prefill_flops_efficiency")) + \
            n * 80 * 128 * 2 / (hbm * c("flash_prefill_bw_efficiency"))
        f.write("%s,prefill,1,%d,32,8,128,fp16,flash,%.6f,1,1,1\n" % (pre, n, 2 * t))
EOF2
out=$($R "$T/flash" 2>&1); rc=$?
[ $rc = 0 ] && grep -q 'FlashAttention terms (experiments/hardware/h100-sxm.yaml)' <<<"$out" &&
    grep -q 'decode: median 0.500, p10 0.500, p90 0.500 (3 rows)' <<<"$out" &&
    grep -q 'prefill (causal, one sequence): median 0.500, p10 0.500, p90 0.500 (2 rows)' <<<"$out" &&
    grep -q 'prefill  4096 tokens: 32/8 heads 0.50' <<<"$out" &&
    ok "PyTorch attention vs the committed FlashAttention terms: model / measured recovered, other backends left out" ||
    bad "flash report: rc $rc: $out"
printf 'device,driver,torch,cuda,commit,timer,batch,context\n' >"$T/flash/FIXTURE-H100/torch_attention.csv"
out=$($R "$T/flash" 2>&1); rc=$?
[ $rc = 0 ] && grep -q 'an older layout' <<<"$out" && ok "an older torch_attention.csv layout: said, not compared" ||
    bad "older layout: rc $rc: $out"

# ---- the eager issue cost (torch_peer.py's torch_launch.csv) beside the spec's launch_us ----
# 80 layers: 24000 us of host time over 1120 kernels = 21.43 us per kernel, 300 us per layer;
# a CPU rehearsal row (timer perf_counter, no driver) is left out; the spec's value is read
mkdir -p "$T/launch/FIXTURE-H100"
{ echo "device,driver,torch,cuda,commit,timer,what,batch,layers,kernels,host_us,gpu_us,host_us_per_kernel,gpu_us_per_kernel,host_us_per_layer,host_cpu"
  echo "NVIDIA H100 80GB HBM3,0.0.0,0.0,0.0,fixture,events,llama-2-70b-tp8-layer-vllm02,1,80,1120,24000.0,28000.0,21.429,25.000,300.00,FIXTURE CPU"
  echo "cpu,,0.0,,fixture,perf_counter,llama-2-70b-tp8-layer-eager,1,80,0,5.0,,,,0.06,FIXTURE CPU"
} >"$T/launch/FIXTURE-H100/torch_launch.csv"
want=$(python3 -c "import sys; sys.path.insert(0, 'experiments/calibrate'); import calibrate as c
print(c.get_value(open('experiments/hardware/h100-sxm.yaml').read().split(chr(10)), 'cost_model.framework.python.launch_us'))")
out=$($R "$T/launch" 2>&1); rc=$?
[ $rc = 0 ] && grep -q 'eager issue cost (torch_peer.py torch_launch.csv; torch 0.0, host CPU FIXTURE CPU):' <<<"$out" &&
    grep -q 'llama-2-70b-tp8-layer-vllm02: host 24000 us for 80 layers = 300.0 us per layer, 21.43 us per kernel (1120 kernels), GPU 25.0 us per kernel' <<<"$out" &&
    ! grep -q 'layer-eager' <<<"$out" &&
    grep -q "launch_us (experiments/hardware/h100-sxm.yaml): $want us per kernel" <<<"$out" &&
    ok "eager issue cost: per layer and per kernel recovered, the CPU rehearsal row left out, the spec's launch_us beside it" ||
    bad "launch report: rc $rc: $out"
printf 'device,driver,torch,cuda,commit,timer,what,batch,layers,kernels,host_us,gpu_us,host_us_per_kernel,gpu_us_per_kernel\n' \
    >"$T/launch/FIXTURE-H100/torch_launch.csv"
out=$($R "$T/launch" 2>&1); rc=$?
[ $rc = 0 ] && grep -q 'torch_launch.csv: an older layout' <<<"$out" && ok "an older torch_launch.csv layout: said, not reported" ||
    bad "older launch layout: rc $rc: $out"

# ---- the profiles' GEMMs beside a device's PyTorch GEMMs (calibrate.py profile_vs_device) ----
# every device time is twice the profiled one (tests/data/gpu-profiles): the ratio must read 0.50
mkdir -p "$T/prof/FIXTURE-H100"
python3 - "$T/prof/FIXTURE-H100" <<'EOF2'
import sys
sys.path.insert(0, "experiments/calibrate")
import calibrate as cal
_, gemms, _ = cal.mlp_rows("tests/data/gpu-profiles", "h100")
seen = {}
for M, K, N, m, _ in gemms:
    seen.setdefault((M, K, N), m)
with open(sys.argv[1] + "/torch_gemm.csv", "w") as f:
    f.write("device,driver,torch,cuda,commit,timer,dtype,m,n,k,median_us,tflops,gbps\n")
    for i, ((M, K, N), m) in enumerate(sorted(seen.items())):
        if i % 7 == 0:
            f.write("NVIDIA H100 80GB HBM3,0.0.0,0.0,0.0,fixture,events,fp16,%d,%d,%d,%.6f,1,1\n" % (M, N, K, 2e6 * m))
EOF2
out=$(python3 experiments/calibrate/calibrate.py --profiles tests/data/gpu-profiles --gpu-results "$T/prof" h100-sxm 2>&1); rc=$?
grep -qE '^profiled h100 GEMMs .*FIXTURE-H100/torch_gemm.csv, [0-9]+ rows in common: M 1-16 0.50 \[0.50-0.50\], M 17-128 0.50 \[0.50-0.50\], M 129-512 0.50 \[0.50-0.50\], M 513-4096 0.50 \[0.50-0.50\]$' <<<"$out" &&
    ok "calibrate.py: the profiled GEMMs over a device's PyTorch GEMMs, by token-count bucket" ||
    bad "profile vs device: rc $rc: $(grep -m2 'profiled' <<<"$out")"

# ---- malformed ----
sed -i '5s/,fp16,[0-9.]*,1,1$/,fp16,abc,1,1/' "$T/gpu/SYNTHETIC-FIXTURE/calib_attention.csv"
line5=$(sed -n 5p "$T/gpu/SYNTHETIC-FIXTURE/calib_attention.csv")
col=$(($(awk -v l="$line5" 'BEGIN { print index(l, ",abc,") }')))
out=$($R "$T/gpu" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "calib_attention.csv:5:$((col + 1)): median_us: expected a number >= 0, got 'abc'" <<<"$out" &&
    ok "a bad number: file:line:col, exit 2" || bad "bad number: rc $rc: $out"
sed -i '2s/^device,driver/device,drv/' "$T/gpu/SYNTHETIC-FIXTURE/calib_attention.csv"
out=$($R "$T/gpu" 2>&1); rc=$?
[ $rc = 2 ] && grep -q 'calib_attention.csv:2:1: header device,drv,' <<<"$out" && ok "a wrong header: exit 2" || bad "header: rc $rc: $out"

# ---- what pagedbench writes, on the C references ----
mkdir -p "$T/cpu/cpu-reference"
"$PB" kernels --cpu --reps 1 --warmup 0 --grid calib-attn,calib-gemm --calib-dir "$T/cpu/cpu-reference" >"$T/k.log" 2>&1; rc=$?
out=$($R "$T/cpu" 2>&1); rc2=$?
[ $rc = 0 ] && [ $rc2 = 0 ] && grep -q '36 rows, none timed on a GPU' <<<"$out" && grep -q 'GPU calibration sweep: absent' <<<"$out" &&
    ok "pagedbench's calibration CSVs read back (C references, not calibration data)" ||
    bad "pagedbench CSVs: kernels rc $rc, reader rc $rc2: $out $(tail -n 3 "$T/k.log")"
"$PB" kernels --cpu --grid calib-attn --update "$T/x.json" >/dev/null 2>&1; rc=$?
[ $rc = 2 ] && ok "calibration sweeps refuse --update (never baselined)" || bad "--update with calib-attn: rc $rc"

echo "$pass passed, $fail failed"
[ $fail = 0 ]
