#!/usr/bin/env bash
# build.sh CLANG OUTDIR SRCDIR GITREV -- the libFuzzer harnesses of tests/fuzz/, built by
# clang with -fsanitize=fuzzer,address,undefined over every library source (CPU only).
# CMake runs it (target `fuzzers`) when clang is found; objects are reused while their
# source is older than them and no header changed.
set -eu
CC=$1 OUT=$2 SRC=$3 REV=$4
mkdir -p "$OUT/obj"
FLAGS=(-g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -std=c11
       -D_POSIX_C_SOURCE=200809L "-DPB_SOURCE_DIR=\"$SRC\"" "-DPB_GIT_REV=\"$REV\"" -w)
DIRS="base engine baselines kernels executors workloads experiments serve bench"   # CMakeLists.txt PB_DIRS
for d in $DIRS tests; do FLAGS+=(-I"$SRC/$d"); done
newest_h=$(find "$SRC"/{base,kernels,engine,baselines,executors,workloads,experiments,serve,bench} -name '*.h' -newer "$OUT/obj/.stamp" 2>/dev/null | head -1 || true)
[ -e "$OUT/obj/.stamp" ] || newest_h=all
srcs=()
for d in $DIRS; do
    for f in "$SRC/$d"/*.c; do
        n=$(basename "$f" .c)
        case "$n" in test_*|main|cuda_module|net_absent) continue ;; esac   # cuda_module: the CUDA build's loader; net_absent: a -DPB_NET=OFF build's
        srcs+=("$f")
    done
done
compile() {   # compile SRC -> OBJ when stale
    local f=$1 o=$OUT/obj/$(basename "$(dirname "$1")")_$(basename "$1" .c).o
    if [ -n "$newest_h" ] || [ ! -e "$o" ] || [ "$f" -nt "$o" ]; then "$CC" "${FLAGS[@]}" -c "$f" -o "$o"; fi
}
export -f compile; export CC OUT newest_h
FLAGSQ=$(printf '%q ' "${FLAGS[@]}")
printf '%s\n' "${srcs[@]}" | xargs -P 2 -I{} bash -c "FLAGS=($FLAGSQ); compile {}"
# main.c holds helpers the commands use (pb_wants_help); its main() is renamed away
"$CC" "${FLAGS[@]}" -Dmain=pb_cli_main -c "$SRC/experiments/main.c" -o "$OUT/obj/experiments_main.o"
touch "$OUT/obj/.stamp"
objs=("$OUT/obj/experiments_main.o")   # exactly this build's objects (not a stale one in obj/)
for f in "${srcs[@]}"; do objs+=("$OUT/obj/$(basename "$(dirname "$f")")_$(basename "$f" .c).o"); done
for h in yaml trace engine; do
    "$CC" "${FLAGS[@]}" -fsanitize=fuzzer "$SRC/tests/fuzz/fuzz_$h.c" "${objs[@]}" -lyaml -lcsv -ljansson -lmicrohttpd -lcurl -lm -lpthread \
        -o "$OUT/fuzz_$h"
done
