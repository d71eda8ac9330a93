#!/usr/bin/env bash
# ptxas_check.sh [OUT.log] -- what the compiler says about the kernels' resources, checked
# against what the launchers assume; needs nvcc, not a GPU.  For sm_80 and sm_90:
#   - no kernel spills registers (a stack frame alone is reported: sincosf's slow path
#     for large arguments keeps a small local array, e.g. in rope);
#   - decode_kernel (128 threads) uses <= 128 registers: 4 CTAs per SM fit in the
#     64K-register file, as pb_paged_attention_choose() assumes (4 slots per SM);
#   - decode_kernel's static shared memory is what kernels/attn_smem.h says (the
#     launcher adds it to the dynamic bytes to decide the opt-in above 48 KiB);
#   - every other kernel fits its __launch_bounds__ (ptxas fails otherwise) and its
#     static shared memory stays <= 48 KiB (no opt-in is made for static smem).
# Prints one line per rule and exits 1 if one is broken, 77 without nvcc.
set -uo pipefail
cd "$(dirname "$0")/../.."
NVCC=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
[ -n "$NVCC" ] || { echo "SKIP: no CUDA compiler: nvcc is not on PATH nor in /usr/local/cuda/bin"; exit 77; }
LOG=${1:-$(mktemp)}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
: >"$LOG"
for f in attention cache_ops slot_copy layers devfill; do
    for sm in 80 90; do
        "$NVCC" -std=c++17 -O3 -DPB_HAVE_CUDA=1 -arch=sm_$sm -Xptxas -v -Ikernels -Ibase -c "kernels/$f.cu" -o "$T/$f.$sm.o" \
            >>"$LOG" 2>&1 || { echo "ptxas: kernels/$f.cu does not compile for sm_$sm (see $LOG)"; exit 1; }
    done
done
# one record per entry function: name, arch, registers, smem, spill bytes, stack bytes
awk '
    /Compiling entry function/ { if (name != "") emit(); match($0, /function .* for/); name = substr($0, RSTART + 10, RLENGTH - 15)
        match($0, /sm_[0-9]+/); arch = substr($0, RSTART, RLENGTH); regs = smem = spill = stack = 0 }
    /bytes stack frame/ { stack = $1; spill = $5 + $9 }
    /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) { if ($i == "registers,") regs = $(i - 1); if ($i == "smem" || $i == "smem,") smem = $(i - 2) } }
    function emit() { printf "%s %s %d %d %d %d\n", name, arch, regs, smem, spill, stack }
    END { if (name != "") emit() }' "$LOG" >"$T/k.txt"
n=$(wc -l <"$T/k.txt")
bad=0
rule() { if [ "$2" = 0 ]; then echo "ptxas ok: $1"; else echo "ptxas BROKEN: $1"; bad=1; fi; }
[ "$n" -gt 0 ] || { echo "ptxas: no entry functions parsed from $LOG"; exit 1; }
rule "$n kernels compiled for sm_80 and sm_90" 0
s=$(awk '$5 > 0' "$T/k.txt" | wc -l)
rule "no register spills ($s kernels spill)" "$s"
awk '$5 > 0 { print "   " $0 }' "$T/k.txt" | head -n 5
sf=$(awk '$6 > 0 { n++ } END { print n + 0 }' "$T/k.txt")
echo "ptxas note: $sf kernel builds keep a stack frame: $(awk '$6 > 0 { print $1 " (" $2 ", " $6 " B)" }' "$T/k.txt" | head -n 2 | tr '\n' ' ')"
d=$(grep -c 'decode_kernel' "$T/k.txt")
mx=$(awk '/decode_kernel/ && $3 > m { m = $3 } END { print m + 0 }' "$T/k.txt")
r=$(awk '/decode_kernel/ && $3 > 128' "$T/k.txt" | wc -l)
rule "decode_kernel: $d instantiations, at most $mx registers (<= 128: 4 CTAs of 128 threads per SM)" "$r"
# the launcher's opt-in test (attn_smem.h) counts this static size: it must be the real one
sb=$(awk '/decode_kernel/ { if (match($1, /decode_kernelI(f|6__half|13__nv_bfloat16)Li[0-9]+E/)) {
        h = substr($1, RSTART, RLENGTH); sub(/.*Li/, "", h); sub(/E$/, "", h)
        if ($4 != 4 * (8 + 4 * h)) n++ } else n++ } END { print n + 0 }' "$T/k.txt")
rule "decode_kernel static shared memory = PB_ATTN_DECODE_STATIC_SMEM(head) = 4 x (8 + 4 x head) bytes ($sb differ)" "$sb"
ms=$(awk '$4 > m { m = $4 } END { print m + 0 }' "$T/k.txt")
o=$(awk '$4 > 49152' "$T/k.txt" | wc -l)
rule "static shared memory at most $ms bytes (<= 48 KiB)" "$o"
exit $bad
