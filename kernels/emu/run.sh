#!/usr/bin/env bash
# run.sh [--quick] -- run the CUDA kernels of kernels/*.cu on the CPU through a thread-level
# emulator (cuda_emu.h) and compare them with the C references.  For machines without a GPU:
# it checks the kernels' index math, masking (NaN-poisoned caches and shared memory),
# reductions and V1/V2 paths, not performance or real-hardware behaviour (memory model,
# alignment faults, occupancy).  Needs python3, g++ (C++20) and the CUDA headers.
#   bash kernels/emu/run.sh --quick     (about 80 s on 2 busy cores; full: about 160 s)
#   bash kernels/emu/run.sh --long      (decode at 8K..64K tokens: V2 partitions, V1's largest smem)
set -eu -o pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
K=$(dirname "$HERE"); BASE=$(dirname "$K")/base
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
CUDA_LIB=${CUDA_HOME:-/usr/local/cuda}/lib64
for tool in python3 g++ gcc; do command -v $tool >/dev/null || { echo "SKIP: $tool missing"; exit 77; }; done
[ -f "$CUDA_INC/cuda_fp16.h" ] || { echo "SKIP: CUDA headers missing"; exit 77; }
B=$(mktemp -d); trap 'rm -rf "$B"' EXIT
python3 "$HERE/extract.py" "$K/attention.cu" "$B/att_emu.cpp"
python3 "$HERE/extract.py" "$K/cache_ops.cu" "$B/co_emu.cpp"
cp "$HERE/cuda_emu.h" "$B/"
CF="-std=c11 -O1 -D_POSIX_C_SOURCE=200809L -DPB_GIT_REV=\"emu\" -DPB_SOURCE_DIR=\"$K/..\" -I$K -I$BASE -I$K/../tests"
for f in "$K/attention_ref.c" "$K/cache_ops_ref.c" "$K/kv_dtype.c" "$K/attn_case.c" "$K/kcheck.c" "$BASE/pb.c" "$BASE/rng.c"; do
  gcc $CF -c "$f" -o "$B/$(basename "$f" .c).o"
done
XF="-std=c++20 -O1 -w -DPB_HAVE_CUDA=1 -I$B -I$K -I$BASE -I$CUDA_INC"
LF="-L$CUDA_LIB -lcudart -lpthread -lm -Wl,-rpath,$CUDA_LIB"
g++ $XF "$HERE/emu_attention.cpp" "$B"/attention_ref.o "$B"/kv_dtype.o "$B"/attn_case.o "$B"/kcheck.o "$B"/pb.o "$B"/rng.o -o "$B/emu_attention" $LF
g++ $XF "$HERE/emu_cache_ops.cpp" "$B"/cache_ops_ref.o "$B"/kv_dtype.o "$B"/pb.o -o "$B/emu_cache_ops" $LF
g++ $XF "$HERE/emu_fp8.cpp" "$B"/kv_dtype.o -o "$B/emu_fp8" $LF
rc=0
"$B/emu_attention" "${1:-}" | grep -v ' ok$' || rc=1
[ "${1:-}" = --long ] || { "$B/emu_cache_ops" | grep -v ' ok$' || rc=1; }
[ "${1:-}" = --long ] || { "$B/emu_fp8" | grep -v ' ok$' || rc=1; }
exit $rc
