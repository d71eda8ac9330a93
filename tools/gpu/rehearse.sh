#!/usr/bin/env bash
# rehearse.sh [DIR] -- rehearse `./run_all.sh gpu` on a machine like the borrowed GPU
# machines, without a GPU: no package registry and none of make, pkg-config, libyaml,
# jansson or libcsv.  In DIR (default /tmp/pb-gpu-rehearsal, outside the checkout):
#   - a minimal Debian (debootstrap --variant=minbase) with gcc, g++, cmake, ninja,
#     python3 and xz only, apt-get renamed away, made once and kept;
#   - this machine's CUDA toolkit (/usr/local/cuda) mounted read-only at the same path;
#   - a copy of the tree as the device tool sends it (tracked and untracked files that
#     git does not ignore; no .git, no build/) plus .gpu/debs and .gpu/rev
#     (tools/gpu/fetch_debs.sh, run first here).
# Then, chrooted, with a bare environment:
#   1. ./run_all.sh gpu                      the no-GPU path (ensure_deps without apt, the
#                                            .debs unpacked into .gpu/root, ninja)
#   2. the .debs unpacked by tools/gpu/unpack_deb.py (no dpkg-deb), then
#      tools/gpu/run_gpu.sh --build-only     the GPU run's CUDA build (target gpu_run,
#                                            warnings not errors, sm_80 and sm_90 here)
#   3. build/gpu/pagedbench kernels --probe  the CUDA module loads (its libraries found
#                                            with no loader configuration): the reason
#                                            given is the missing driver
# and prints what each said.  Exit 0 when both passed.  Needs root (chroot, mount),
# debootstrap and a Debian mirror; about 2 minutes of debootstrap once, then the
# builds (tens of minutes on 2 shared cores).  A manual check, not part of CI.
set -uo pipefail
cd "$(dirname "$0")/../.."
SRC=$(pwd)
DIR=${1:-/tmp/pb-gpu-rehearsal}
R=$DIR/root
CUDA=$(readlink -f /usr/local/cuda)
[ "$(id -u)" = 0 ] || { echo "rehearse.sh: needs root (chroot, mount)" >&2; exit 1; }
[ -x "$CUDA/bin/nvcc" ] || { echo "rehearse.sh: no CUDA toolkit at /usr/local/cuda" >&2; exit 1; }
ls .gpu/debs/*.deb >/dev/null 2>&1 && [ -f .gpu/rev ] ||
    { echo "rehearse.sh: no .gpu/debs: run tools/gpu/fetch_debs.sh first" >&2; exit 1; }
mkdir -p "$DIR"
if [ ! -f "$R/.pb-rehearsal" ]; then
    command -v debootstrap >/dev/null || { echo "rehearse.sh: apt-get install debootstrap" >&2; exit 1; }
    echo "==> debootstrap into $R"
    debootstrap --variant=minbase --include=gcc,g++,cmake,ninja-build,python3,xz-utils bookworm "$R" \
        http://deb.debian.org/debian >"$DIR/debootstrap.log" 2>&1 || { tail "$DIR/debootstrap.log"; exit 1; }
    mv "$R/usr/bin/apt-get" "$R/usr/bin/apt-get.disabled"
    touch "$R/.pb-rehearsal"
fi
mkdir -p "$R$CUDA" "$R/proc"
cleanup() { umount "$R/proc" 2>/dev/null; umount "$R$CUDA" 2>/dev/null; }
trap cleanup EXIT
mountpoint -q "$R$CUDA" || { mount --bind "$CUDA" "$R$CUDA" && mount -o remount,bind,ro "$R$CUDA"; } || exit 1
mountpoint -q "$R/proc" || mount -t proc proc "$R/proc" || exit 1
ln -sfn "$CUDA" "$R/usr/local/cuda"
absent=$(chroot "$R" sh -c 'for c in make pkg-config apt-get git; do command -v $c; done
    ls /usr/include/yaml.h /usr/include/jansson.h /usr/include/csv.h 2>/dev/null')
[ -z "$absent" ] || { echo "rehearse.sh: the root has what a GPU machine lacks: $absent" >&2; exit 1; }
echo "==> the root has: $(chroot "$R" sh -c 'gcc --version | head -n 1; cmake --version | head -n 1; echo ninja $(ninja --version); python3 --version' | tr '\n' ';')"
echo "==> copying the tree as the device tool sends it to $R/work/pb"
rm -rf "$R/work/pb" && mkdir -p "$R/work/pb/.gpu"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$R/work/pb"
cp -a .gpu/debs .gpu/rev "$R/work/pb/.gpu/"
run() { chroot "$R" env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 bash -c "cd /work/pb && $1"; }
rc1=0 rc2=0
echo "==> 1. ./run_all.sh gpu (no GPU here: the no-GPU path) -> $DIR/run_all_gpu.log"
run "./run_all.sh gpu" >"$DIR/run_all_gpu.log" 2>&1 || rc1=$?
tail -n 3 "$DIR/run_all_gpu.log"
cp "$R/work/pb/results/gpu/cpu-reference/SUMMARY.md" "$DIR/SUMMARY-no-gpu.md" 2>/dev/null
echo "==> 2. the .debs unpacked without dpkg-deb, then the GPU run's build (--build-only) -> $DIR/build_only.log"
run "rm -rf .gpu/root build/gpu && PB_UNPACK=python bash tools/gpu/run_gpu.sh --build-only" >"$DIR/build_only.log" 2>&1 || rc2=$?
tail -n 3 "$DIR/build_only.log"
# the built binary loads its CUDA module there (the toolkit's libraries through its rpath):
# without a GPU the probe must blame the missing driver, not a library
probe=$(run "build/gpu/pagedbench kernels --probe" 2>&1)
echo "==> 3. build/gpu/pagedbench kernels --probe: $probe"
grep -q 'no CUDA driver on this machine' <<<"$probe" || rc2=1
cp "$R/work/pb/results/gpu/build-only/SUMMARY.md" "$DIR/SUMMARY-build-only.md" 2>/dev/null
echo "rehearse.sh: run_all.sh gpu exit $rc1, run_gpu.sh --build-only exit $rc2 (logs and summaries in $DIR)"
[ $rc1 = 0 ] && [ $rc2 = 0 ]
