#!/usr/bin/env bash
# cli_gpu_deps.sh -- tools/gpu/deps.sh, which makes the .debs of tools/gpu/fetch_debs.sh
# usable on a GPU machine without a package registry, on a small .deb built here:
#   1. pb_gpu_deps unpacks .gpu/debs/*.deb into .gpu/root (dpkg-deb), points the .pc
#      prefix at it, exports CMAKE_PREFIX_PATH / PKG_CONFIG_PATH / LD_LIBRARY_PATH, and
#      takes PB_GIT_REV from .gpu/rev in a tree without git;
#   2. tools/gpu/unpack_deb.py (no dpkg) unpacks the same files and links;
#   3. a second call unpacks nothing; a changed .deb is unpacked again; a broken one is an error.
# Skips (77) without dpkg-deb (needed to build the test package).
#   bash tests/cli_gpu_deps.sh build/cpu/pagedbench
set -u
. "$(dirname "$0")/skip.sh"
command -v dpkg-deb >/dev/null || pb_skip "no dpkg-deb"
command -v python3 >/dev/null || pb_skip "no python3"
SRC=$(pwd)
T=$(mktemp -d /tmp/pb_gpu_deps.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }
P=$T/pkg
mkdir -p "$P/DEBIAN" "$P/usr/include" "$P/usr/lib/x86_64-linux-gnu/pkgconfig"
printf 'Package: pb-test\nVersion: 1.0\nArchitecture: amd64\nMaintainer: test <t@t>\nDescription: test\n' >"$P/DEBIAN/control"
echo '#define PB_TEST_H 1' >"$P/usr/include/pbtest_dep.h"
echo 'not a real library' >"$P/usr/lib/x86_64-linux-gnu/libpbtestdep.so.1.0"
ln -s libpbtestdep.so.1.0 "$P/usr/lib/x86_64-linux-gnu/libpbtestdep.so"
printf 'prefix=/usr\nincludedir=${prefix}/include\nName: pbtestdep\nVersion: 1\nDescription: t\nCflags: -I${includedir}\n' \
    >"$P/usr/lib/x86_64-linux-gnu/pkgconfig/pbtestdep.pc"
mkdir -p "$T/top/.gpu/debs" "$T/top/tools"
dpkg-deb -Zxz --build "$P" "$T/top/.gpu/debs/pb-test_1.0_amd64.deb" >/dev/null 2>&1 || { bad "dpkg-deb --build"; exit 1; }
cp -r "$SRC/tools/gpu" "$T/top/tools/"
echo "abc123-dirty" >"$T/top/.gpu/rev"

run_deps() {   # run_deps [env...]: source deps.sh in a clean shell at $T/top, print what it exported
    env -i PATH="$PATH" "$@" bash -c 'cd "$1" && . tools/gpu/deps.sh && pb_gpu_deps "$1" &&
        printf "root=%s\ncmake=%s\npkg=%s\nld=%s\nrev=%s\n" "$PB_DEPS_ROOT" "$CMAKE_PREFIX_PATH" "$PKG_CONFIG_PATH" \
            "$LD_LIBRARY_PATH" "${PB_GIT_REV:-}"' _ "$T/top"
}
R=$T/top/.gpu/root
out=$(run_deps 2>"$T/err1"); rc=$?
lib=$R/usr/lib/x86_64-linux-gnu
if [ $rc = 0 ] && [ -f "$R/usr/include/pbtest_dep.h" ] && [ "$(readlink "$lib/libpbtestdep.so")" = libpbtestdep.so.1.0 ] &&
   grep -qx "prefix=$R/usr" "$lib/pkgconfig/pbtestdep.pc" && grep -qx "root=$R" <<<"$out" && grep -qx "cmake=$R/usr" <<<"$out" &&
   grep -q "^pkg=$lib/pkgconfig:" <<<"$out" && grep -qx "ld=$lib" <<<"$out" && grep -qx "rev=abc123-dirty" <<<"$out"; then
    ok "dpkg-deb: unpacked into .gpu/root, .pc prefix rewritten, paths exported, PB_GIT_REV from .gpu/rev"
else
    bad "dpkg-deb unpack: rc $rc: $out $(cat "$T/err1")"
fi
out=$(run_deps 2>"$T/err2"); rc=$?
[ $rc = 0 ] && ! grep -q unpacked "$T/err2" && ok "a second call unpacks nothing" || bad "second call: $(cat "$T/err2")"
cp -a "$R" "$T/by-dpkg"
rm -rf "$R"
out=$(run_deps PB_UNPACK=python 2>"$T/err3"); rc=$?
if [ $rc = 0 ] && diff -r "$T/by-dpkg" "$R" >"$T/diff" 2>&1; then
    ok "unpack_deb.py (no dpkg): the same files and links as dpkg-deb -x"
else
    bad "python unpack: rc $rc: $(head -n 5 "$T/diff") $(cat "$T/err3")"
fi
echo '#define PB_TEST_H 2' >"$P/usr/include/pbtest_dep.h"
dpkg-deb -Zxz --build "$P" "$T/top/.gpu/debs/pb-test_1.0_amd64.deb" >/dev/null 2>&1
out=$(run_deps 2>"$T/err4"); rc=$?
[ $rc = 0 ] && grep -q 'PB_TEST_H 2' "$R/usr/include/pbtest_dep.h" && ok "a changed .deb is unpacked again" ||
    bad "changed deb: rc $rc $(cat "$T/err4")"
echo 'garbage' >"$T/top/.gpu/debs/broken.deb"
out=$(run_deps PB_UNPACK=python 2>"$T/err5"); rc=$?
[ $rc != 0 ] && grep -q 'broken.deb: not an ar archive' "$T/err5" && ok "a broken .deb: an error naming it" ||
    bad "broken deb: rc $rc $(cat "$T/err5")"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
