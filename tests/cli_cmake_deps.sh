#!/usr/bin/env bash
# cli_cmake_deps.sh -- CMakeLists.txt finds libyaml, jansson, libcsv, libmicrohttpd and libcurl without
# pkg-config, in a prefix outside the system paths: the way a GPU machine without a
# package registry builds from the .debs unpacked into .gpu/root (tools/gpu/deps.sh).
#   1. a prefix of links to this machine's headers and libraries, with pkg-config off
#      and CMake's system paths off: the cache names the prefix's files;
#   2. the same with an empty prefix: configuring fails and names the package and the way
#      to bring it (tools/gpu/deps.sh).
# Configure only (seconds); skips (77) when the -dev packages are not installed here.
#   bash tests/cli_cmake_deps.sh build/cpu/pagedbench
set -u
. "$(dirname "$0")/skip.sh"
command -v cmake >/dev/null || pb_skip "no cmake"
arch=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
T=$(mktemp -d /tmp/pb_cmake_deps.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "[ok] $1" >&2; }
bad() { fail=$((fail + 1)); echo "[FAIL] $1" >&2; }
mkdir -p "$T/root/usr/include" "$T/root/usr/lib/$arch" "$T/empty/usr/include"
for h in yaml.h jansson.h jansson_config.h csv.h microhttpd.h; do
    [ -e "/usr/include/$h" ] || pb_skip "/usr/include/$h absent (libyaml-dev, libjansson-dev, libcsv-dev, libmicrohttpd-dev)"
    ln -s "/usr/include/$h" "$T/root/usr/include/$h"
done
curl_h=$(ls -d /usr/include/curl /usr/include/"$arch"/curl 2>/dev/null | head -n 1)
[ -n "$curl_h" ] || pb_skip "curl/curl.h absent (libcurl4-openssl-dev)"
ln -s "$curl_h" "$T/root/usr/include/curl"
for l in yaml jansson csv microhttpd curl; do
    f=$(ls /usr/lib/"$arch"/lib$l.so 2>/dev/null | head -n 1)
    [ -n "$f" ] || pb_skip "no lib$l.so in /usr/lib/$arch"
    ln -s "$(readlink -f "$f")" "$T/root/usr/lib/$arch/lib$l.so"
done
# (the build tool and the compiler named, since the system paths are off for every find)
mk=$(command -v make || command -v ninja); cc=$(command -v cc)
gen=(); [ "$(basename "$mk")" = ninja ] && gen=(-G Ninja)
nosys=("${gen[@]}" -DCMAKE_MAKE_PROGRAM="$mk" -DCMAKE_C_COMPILER="$cc" -DPB_CUDA=OFF -DPB_USE_PKG_CONFIG=OFF
       -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF -DCMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH=OFF)
cmake -S . -B "$T/b" "${nosys[@]}" -DCMAKE_PREFIX_PATH="$T/root/usr" >"$T/a.log" 2>&1; rc=$?
n=0
for v in yaml jansson csv microhttpd curl; do
    grep -q "^PB_${v}_LIBRARY:FILEPATH=$T/root/usr/lib/$arch/lib$v.so$" "$T/b/CMakeCache.txt" 2>/dev/null &&
        grep -q "^PB_${v}_INCLUDE_DIR:PATH=$T/root/usr/include$" "$T/b/CMakeCache.txt" && n=$((n + 1))
done
[ $rc = 0 ] && [ $n = 5 ] && ok "no pkg-config, no system paths: the five libraries found in CMAKE_PREFIX_PATH" ||
    bad "prefix root: configure rc $rc, $n of 5 found: $(grep -E 'PB_(yaml|jansson|csv|microhttpd|curl)_' "$T/b/CMakeCache.txt" 2>/dev/null | tr '\n' ' ') $(tail -n 5 "$T/a.log")"
cmake -S . -B "$T/c" "${nosys[@]}" -DCMAKE_PREFIX_PATH="$T/empty/usr" >"$T/c.log" 2>&1; rc=$?
msg=$(tr -s ' \n' '  ' <"$T/c.log")       # (CMake wraps its messages)
[ $rc != 0 ] && grep -q 'yaml not found (yaml.h, libyaml): install the Debian package libyaml-dev' <<<"$msg" &&
    grep -q 'tools/gpu/deps.sh' <<<"$msg" && ok "an empty prefix: configure fails naming libyaml-dev and deps.sh" ||
    bad "empty prefix: rc $rc: $(grep -A2 'CMake Error' "$T/c.log" | head -n 5)"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
