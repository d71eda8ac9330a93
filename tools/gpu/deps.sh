# deps.sh -- sourced by run_all.sh and tools/gpu/run_gpu.sh: the build's Debian libraries
# on a machine without a package registry (a borrowed GPU machine).
#
# tools/gpu/fetch_debs.sh, run where apt works, leaves the packages in .gpu/debs/ and the
# source revision in .gpu/rev; they travel with the checkout.  pb_gpu_deps then unpacks
# every .gpu/debs/*.deb into .gpu/root/ (dpkg-deb -x, else tools/gpu/unpack_deb.py; once,
# again when the .debs change), points the .pc files' prefix at that root, and exports
#   CMAKE_PREFIX_PATH  .gpu/root/usr   (CMakeLists.txt's find_path / find_library)
#   PKG_CONFIG_PATH    its pkgconfig folders (used when pkg-config is installed)
#   LD_LIBRARY_PATH    its library folder (the built programs run with it)
#   PB_GIT_REV         the contents of .gpu/rev (the revision fetch_debs.sh saw; a GPU machine's
#                      copy of the tree may carry a .git of another commit)
#   PB_DEPS_ROOT       .gpu/root (empty when there are no .debs: nothing is exported)
# Nothing is installed into /.  Returns 1 (with the reason on stderr) when a package
# cannot be unpacked.
pb_gpu_deps() {
    local top=${1:-$(pwd)} deb f
    local debs=$top/.gpu/debs root=$top/.gpu/root
    PB_DEPS_ROOT=""
    if [ -s "$top/.gpu/rev" ]; then
        PB_GIT_REV=$(head -n 1 "$top/.gpu/rev"); export PB_GIT_REV
    fi
    ls "$debs"/*.deb >/dev/null 2>&1 || return 0
    local sum; sum=$(cksum "$debs"/*.deb | cksum)
    if [ ! -f "$root/.unpacked" ] || [ "$(cat "$root/.unpacked")" != "$sum" ]; then
        rm -rf "$root" && mkdir -p "$root" || return 1
        for deb in "$debs"/*.deb; do
            if command -v dpkg-deb >/dev/null && [ "${PB_UNPACK:-}" != python ]; then
                dpkg-deb -x "$deb" "$root" || { echo "deps.sh: dpkg-deb -x $deb failed" >&2; return 1; }
            else
                python3 "$top/tools/gpu/unpack_deb.py" "$deb" "$root" || return 1
            fi
        done
        for f in "$root"/usr/lib/*/pkgconfig/*.pc "$root"/usr/share/pkgconfig/*.pc; do
            [ -f "$f" ] && sed -i "s|^prefix=.*|prefix=$root/usr|" "$f"
        done
        echo "$sum" >"$root/.unpacked"
        echo "==> deps.sh: unpacked $(ls "$debs"/*.deb | wc -l) packages of .gpu/debs into .gpu/root" >&2
    fi
    local lib; lib=$(ls -d "$root"/usr/lib/*-linux-gnu 2>/dev/null | head -n 1)
    PB_DEPS_ROOT=$root
    export CMAKE_PREFIX_PATH="$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    export PKG_CONFIG_PATH="${lib:+$lib/pkgconfig:}$root/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    [ -n "$lib" ] && export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    return 0
}
