#!/usr/bin/env bash
# cli_gpu_verb.sh -- `./run_all.sh gpu`'s no-GPU path (tools/gpu/run_gpu.sh --tiny) and
# its summary writer, on the C references and the cpu executor:
#   1. without a GPU it exits 0, prints `SKIP: no GPU (<reason>)` for the GPU kernel
#      timings, the OPT-13B profile and the cuda engine run, with the reason in plain
#      words (never the CUDA runtime's "driver version is insufficient");
#   2. it writes kernels.csv, fig18a.csv, the tiny profile, costmodel_*.csv and a
#      SUMMARY.md with every section filled from that data;
#   3. a correctness failure (a pagedbench whose `Check correct` says FAIL) makes it
#      exit 1 and the summary say FAILED; summary.sh rejects a malformed steps.tsv;
#   4. the GPU path's own logic (no build, ctest -L gpu, baseline, calibration sweeps,
#      fig18a gpu rows, summary in GPU form) with a pagedbench that claims a device and
#      answers from the C references: the only check of that path a GPU-less machine can
#      make; the summary and the --bundle tarball are rewritten after every step, and a
#      run killed (SIGTERM) in a step names that step in its summary.
# On a machine with a GPU the no-GPU path is forced with --cpu.
#   bash tests/cli_gpu_verb.sh build/cpu/pagedbench
set -u
PB=${1:?usage: cli_gpu_verb.sh path/to/pagedbench}
PB=$(cd "$(dirname "$PB")" && pwd)/$(basename "$PB")
T=$(mktemp -d /tmp/pb_cli_gpu.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }

force=()
probe=$("$PB" kernels --probe 2>/dev/null) && force=(--cpu)
bash tools/gpu/run_gpu.sh --tiny --bin "$PB" --out "$T/a" "${force[@]}" >"$T/a.out" 2>"$T/a.err"; rc=$?
[ $rc = 0 ] && ok "no-GPU path exits 0" || bad "no-GPU path exit $rc: $(tail -n 5 "$T/a.err")"
for what in "kernel benchmarks" "profile OPT-13B" "real engine vs cost model (OPT-13B, cuda)"; do
    grep -q "^SKIP: no GPU (.*): $what -- " "$T/a.out" && ok "SKIP line for $what" || bad "no SKIP line for $what"
done
if [ ${#force[@]} = 0 ]; then   # the reason is the probe's own, in plain words
    want=$(sed -n 's/^SKIP: no GPU (\(.*\))$/\1/p' <<<"$probe")
    [ -n "$want" ] && grep -qF "SKIP: no GPU ($want)" "$T/a.out" && ok "reason = the probe's: $want" ||
        bad "reason differs from the probe's ($probe)"
fi
if grep -qi "insufficient\|cudaGetDeviceCount\|cudaError" "$T/a.out" "$T/a/SUMMARY.md" 2>/dev/null; then
    bad "a raw CUDA error string leaked"
else
    ok "no raw CUDA error strings"
fi
for f in kernels.csv fig18a.csv profile_tiny_cpu.csv costmodel_steps.csv costmodel_requests.csv \
         costmodel_summary.csv calib_attention.csv calib_gemm.csv steps.tsv SUMMARY.md; do
    [ -s "$T/a/$f" ] || bad "$f missing"
done
head -n 1 "$T/a/kernels.csv" | grep -q '^device,name,kind,value' && grep -q '^"cpu-reference",cpu/fig18a/ratio/' "$T/a/kernels.csv" &&
    ok "kernels.csv holds the C references' grid" || bad "kernels.csv content"
head -n 1 "$T/a/costmodel_summary.csv" | grep -q '^metric,real,spec,profile,spec_err_pct,profile_err_pct$' &&
    awk -F, '$1 == "step_abs_err_pct_p50_all" && $3 != "" && $4 != "" { f = 1 } $1 == "finished" && $2 > 0 { g = 1 }
             END { exit !(f && g) }' "$T/a/costmodel_summary.csv" &&
    ok "costmodel_summary.csv has spec and profile errors" || bad "costmodel_summary.csv content"
# requests: the real run and both predictions for every request
awk -F, 'NR > 1 && ($5 == "" || $7 == "" || $9 == "") { bad = 1 } END { exit bad || NR < 2 }' "$T/a/costmodel_requests.csv" &&
    ok "per-request TTFT for real, spec and profile" || bad "costmodel_requests.csv content"
S=$T/a/SUMMARY.md
n=0
for pat in '^## Steps' '^| kernel grids on the C references | PASS |' '^| fig18a/b8-ctx256 | [0-9.]* | [0-9.]* | [0-9.]* |' \
           '^| cost_model | vllm | 32 | 256 |' '^| step_abs_err_pct_p50_all |' '^Goal: cost model step time' \
           '^## Not verified here' '^Correctness: no failure\.' 'SKIP: no GPU'; do
    grep -q -- "$pat" "$S" && n=$((n + 1)) || bad "SUMMARY.md lacks $pat"
done
[ $n = 9 ] && ok "SUMMARY.md sections filled from the C-reference data"

# a correctness failure: the kernel check of this fake pagedbench says FAIL
cat >"$T/fakepb" <<EOF
#!/usr/bin/env bash
if [ "\$1" = kernels ] && [ "\${2:-}" != --probe ] && [[ "\$*" != *calib-dir* ]]; then echo "Kernel checks FAILED (1): not benchmarking."; echo "Check correct: FAIL (a kernel did not match its C reference)"; exit 1; fi
exec "$PB" "\$@"
EOF
chmod +x "$T/fakepb"
bash tools/gpu/run_gpu.sh --tiny --bin "$T/fakepb" --out "$T/b" "${force[@]}" >"$T/b.out" 2>"$T/b.err"; rc=$?
[ $rc = 1 ] && grep -q '^gpu: FAILED' "$T/b.out" && grep -q '^Correctness: 1 step(s) FAILED' "$T/b/SUMMARY.md" &&
    grep -q '| FAIL |' "$T/b/SUMMARY.md" && ok "a failed kernel check: exit 1 and FAILED in the summary" ||
    bad "failed kernel check: rc $rc, $(tail -n 2 "$T/b.out")"

# summary.sh alone: a malformed steps.tsv is an error, missing data files are named
mkdir -p "$T/c"
printf 'build\tPASS\t3\n' >"$T/c/steps.tsv"
bash tools/gpu/summary.sh "$T/c" dev gpu 1 >/dev/null 2>&1 && bad "malformed steps.tsv accepted" || ok "malformed steps.tsv rejected"
printf 'build\tPASS\t3\tok\n' >"$T/c/steps.tsv"
out=$(bash tools/gpu/summary.sh "$T/c" "Some GPU" gpu 1); rc=$?
[ $rc = 0 ] && grep -q 'kernels.csv not produced' <<<"$out" && grep -q 'costmodel_summary.csv not produced' <<<"$out" &&
    ! grep -q 'Not verified here' <<<"$out" && ok "summary.sh with missing data names what is absent" || bad "summary.sh on an empty run"

# summary.sh on GPU-shaped data (names without cpu/, % of HBM, swap modes): the tables a
# real run fills, checked here because no GPU runs this test
mkdir -p "$T/d"
printf 'build\tPASS\t60\tcuda preset built\nkernel benchmarks\tPASS\t90\t9 goals met, 1 missed\n' >"$T/d/steps.tsv"
cat >"$T/d/kernels.csv" <<'EOF2'
device,name,kind,value,bytes,gbps,pct_peak,pct_measured
"NVIDIA H100 80GB HBM3",long/paged/b1-ctx65536-bs16,us,900,2.68e+09,2977,88.9,97.1
"NVIDIA H100 80GB HBM3",long/contig/b1-ctx65536,us,880,2.68e+09,3045,90.9,99.3
"NVIDIA H100 80GB HBM3",long/ratio/b1-ctx65536,ratio,1.0227,0,0,-1,-1
"NVIDIA H100 80GB HBM3",blocksize/ratio/bs16,ratio,1.031,0,0,-1,-1
"NVIDIA H100 80GB HBM3",cache/copy_blocks/l40-p256,us,500,1.3e+09,2600,77.6,85
"NVIDIA H100 80GB HBM3",swap/memcpy-d2h,us,4000,2.1e+08,52.4,95.3,-1
"NVIDIA H100 80GB HBM3",swap/perblock/out/bs16,us,9000,2.1e+08,23.3,42,44.4
"NVIDIA H100 80GB HBM3",swap/batched-scattered/out/bs16,us,4300,2.1e+08,48.8,88.7,93.1
"NVIDIA H100 80GB HBM3",swap/batched-runs/out/bs16,us,4100,2.1e+08,51.2,93,97.6
"NVIDIA H100 80GB HBM3",swap/perblock/in/bs16,us,9100,2.1e+08,23,42,43.5
"NVIDIA H100 80GB HBM3",swap/batched-scattered/in/bs16,us,4400,2.1e+08,47.7,86.7,91
"NVIDIA H100 80GB HBM3",swap/batched-runs/in/bs16,us,4200,2.1e+08,50,91,95.2
EOF2
printf 'goal G1a long/paged/b1-ctx65536-bs16 >= 80%% HBM (88.9%%)      MET\n' >"$T/d/kernels.log"
out=$(bash tools/gpu/summary.sh "$T/d" "NVIDIA H100 80GB HBM3" gpu 150); rc=$?
[ $rc = 0 ] && grep -qF '| long/b1-ctx65536 | 900.00 | 880.00 | 1.023 | 2977.0 | 88.9 |' <<<"$out" &&
    grep -qF '| 16 | 44% / 44% | 93% / 91% | 98% / 95% |' <<<"$out" && grep -qF 'bs16 1.031;' <<<"$out" &&
    grep -qF '| copy_blocks/l40-p256 | 500.00 | 2600.0 | 77.6 | 85.0 |' <<<"$out" &&
    grep -qF 'Goals (PERF-ANCHORS §7): 1 met, 0 missed.' <<<"$out" && ! grep -q 'Not verified here' <<<"$out" &&
    ok "summary.sh renders GPU-shaped kernel data" || { bad "summary.sh on GPU-shaped data"; echo "$out" | sed -n '/## Kernels/,/## Fig/p' >&2; }

# the GPU path's shell logic, driven by a pagedbench that says it has a GPU ("Fake GPU")
# and answers with the C references, a tiny cpu profile and a tiny cpu engine run; its
# folder holds a ctest file with one `gpu` test (passing, then skipped)
mkdir -p "$T/g"
cat >"$T/g/pagedbench" <<EOF
#!/usr/bin/env bash
REAL="$PB"
val() { local k=\$1; shift; while [ \$# -gt 1 ]; do [ "\$1" = "\$k" ] && { echo "\$2"; return; }; shift; done; }
case "\$1 \${2:-}" in
"kernels --probe") printf 'gpu: Fake GPU 80GB\nhw: h100-sxm\n'; exit 0 ;;
"bench costmodel") exec "\$REAL" bench costmodel --executor cpu --model tiny-opt --hardware a100-40gb \
        --profile "\$(val --profile "\$@")" --rate 4 --duration 1 --length-scale 0.25 --out "\$(val --out "\$@")" ;;
esac
case "\$1" in
kernels) cd=\$(val --calib-dir "\$@")
    if [ -n "\$cd" ]; then g=\$(val --grid "\$@"); tm=cupti; [ "\${PAGEDBENCH_CUPTI:-}" = off ] && tm=events
        "\$REAL" kernels --cpu --reps 1 --warmup 0 --grid "\$g" --calib-dir "\$cd" >/dev/null 2>&1 || exit 1
        [ "\$g" = calib-gemm ] && f="\$cd/calib_gemm.csv" || f="\$cd/calib_attention.csv"
        sed -i "s/^\"cpu-reference\",unknown,-,\\([^,]*\\),cpu,/\"Fake GPU 80GB\",580.0,13.0\\/13.0,\\1,\$tm,/" "\$f"
        printf 'Timer: cupti\nCheck complete: PASS (fake)\n'; exit 0; fi
    c=\$(val --csv "\$@"); "\$REAL" kernels --cpu --reps 1 --grid fig18a,swap --csv "\$c.cpu" >/dev/null || exit 1
    echo "All results match. Starting benchmarks."; echo "goal G1d fig18a/ratio/b8-ctx128 <= 1.10 (1.050)  MET"
    sed 's#,cpu/#,#' "\$c.cpu" >"\$c"; rm -f "\$c.cpu"; echo '{}' >"\$(val --update "\$@")"; printf 'Check complete: PASS (2 results)\\nCheck correct: PASS (fake)\\nCheck timer: PASS (fake)\\n' ;;
run) "\$REAL" "\$@" || exit; f=\$(val --results "\$@")/fig18a.csv
    sed -n 's/^cost_model,"[^"]*",/gpu,"Fake GPU 80GB",/p' "\$f" >>"\$f" ;;
profile) [ -n "\${FAKE_SLOW_PROFILE:-}" ] && sleep "\$FAKE_SLOW_PROFILE"
    exec "\$REAL" profile --executor cpu --model tiny-opt --hardware a100-40gb --kv-gib 0.01 --batches 1,4 \
        --contexts 16,128 --prefill 16,64 --reps 1 --warmup 0 --out "\$(val --out "\$@")" ;;
*) exec "\$REAL" "\$@" ;;
esac
EOF
chmod +x "$T/g/pagedbench"
printf 'add_test(fake_gpu_test "/bin/true")\nset_tests_properties(fake_gpu_test PROPERTIES LABELS "gpu")\n' >"$T/g/CTestTestfile.cmake"
bash tools/gpu/run_gpu.sh --bin "$T/g/pagedbench" --out "$T/e" --baselines "$T/bl" --bundle "$T/bundle" >"$T/e.out" 2>"$T/e.err"; rc=$?
if [ $rc = 0 ] && ! grep -q '^SKIP' "$T/e.out" && [ -f "$T/bl/Fake-GPU-80GB.json" ] &&
   [ "$(awk -F'\t' '$2 == "PASS"' "$T/e/steps.tsv" | wc -l)" = 7 ] && grep -q '^| ctest -L gpu | PASS |' "$T/e/SUMMARY.md" &&
   grep -q '^| calibration sweeps | PASS | [0-9]* | 20 attention rows (block 1..256 + contiguous; Timer: cupti), 16 GEMM rows (CUDA events) |' "$T/e/SUMMARY.md" &&
   grep -q '^| 16 | [0-9.]* | [0-9.]* | [0-9.]* | 2 |' "$T/e/SUMMARY.md" && grep -q '^| 128 x 384 | [0-9.]* | - | [0-9.]* |' "$T/e/SUMMARY.md" &&
   grep -q '^| real engine vs cost model (OPT-13B, cuda) | PASS |' "$T/e/SUMMARY.md" &&
   grep -q '^| gpu | vllm | 8 | 64 |' "$T/e/SUMMARY.md" && grep -q '^| fig18a/b8-ctx128 |' "$T/e/SUMMARY.md" &&
   ! grep -q 'Not verified here' "$T/e/SUMMARY.md"; then
    ok "GPU path (fake device): seven steps PASS, baseline written, summary in GPU form"
else
    bad "GPU path (fake device): rc $rc; $(cut -f1,2 "$T/e/steps.tsv" 2>/dev/null | tr '\n\t' '; '); $(tail -n 3 "$T/e.err")"
fi
# the bundle: the summary and a tarball of the results folder and the baseline, as a GPU
# machine hands them back
if cmp -s "$T/bundle/SUMMARY.md" "$T/e/SUMMARY.md" && tar -tzf "$T/bundle/gpu-results.tar.gz" >"$T/tar.txt" 2>/dev/null &&
   grep -q 'e/steps.tsv$' "$T/tar.txt" && grep -q 'e/calib_gemm.csv$' "$T/tar.txt" && grep -q 'Fake-GPU-80GB.json$' "$T/tar.txt"; then
    ok "--bundle: SUMMARY.md and a tarball of the results and the baseline"
else
    bad "--bundle: $(ls "$T/bundle" 2>&1) $(head -n 5 "$T/tar.txt" 2>/dev/null)"
fi
# killed in a step (the device's time limit): the summary names the step, the bundle has it
FAKE_SLOW_PROFILE=30 bash tools/gpu/run_gpu.sh --bin "$T/g/pagedbench" --out "$T/k" --baselines "$T/bl" \
    --bundle "$T/kb" >"$T/k.out" 2>"$T/k.err" &
kpid=$!
for _ in $(seq 1 600); do grep -q '^fig18a' "$T/k/steps.tsv" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
kill -TERM $kpid
wait $kpid; rc=$?
if [ $rc = 143 ] && grep -q '^| profile OPT-13B | FAIL | [0-9]* | killed by SIGTERM' "$T/kb/SUMMARY.md" &&
   grep -q '^| run | FAIL |' "$T/kb/SUMMARY.md" && grep -q '^| fig18a | PASS |' "$T/kb/SUMMARY.md" &&
   ! grep -q 'real engine' "$T/k/steps.tsv" && grep -q '^gpu: KILLED' "$T/k.out"; then
    ok "killed in a step: exit 143, the summary names the step and what ran before it"
else
    bad "killed run: rc $rc; $(cut -f1,2,4 "$T/k/steps.tsv" 2>/dev/null | tr '\n\t' '; ')"
fi
printf 'add_test(fake_gpu_test "/bin/sh" "-c" "exit 77")\nset_tests_properties(fake_gpu_test PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77)\n' >"$T/g/CTestTestfile.cmake"
bash tools/gpu/run_gpu.sh --bin "$T/g/pagedbench" --out "$T/f" --baselines "$T/bl" >"$T/f.out" 2>"$T/f.err"; rc=$?
[ $rc = 1 ] && grep -q '^| ctest -L gpu | FAIL |.*1 skipped' "$T/f/SUMMARY.md" && ok "a skipped GPU test on a GPU is a failure" ||
    bad "skipped GPU test: rc $rc, $(grep 'ctest -L gpu' "$T/f/SUMMARY.md" 2>/dev/null)"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
