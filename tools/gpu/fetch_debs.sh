#!/usr/bin/env bash
# fetch_debs.sh -- where apt works, put what a GPU machine without a package registry needs
# to build pagedbench into .gpu/ (ignored by git; it travels with the checkout):
#   .gpu/debs/*.deb   the Debian packages of libyaml, jansson and libcsv (and their -dev; the GPU
#                     build is configured -DPB_NET=OFF: no serve or loadgen there),
#                     downloaded with `apt-get download` (no root needed, nothing installed)
#   .gpu/rev          `git describe --always --dirty` of this checkout (the GPU machine's
#                     copy has no .git: the build and the calibration CSVs name this)
# tools/gpu/deps.sh unpacks them there (./run_all.sh gpu does it).  Run it again after a
# commit, so that .gpu/rev names the code that runs.  The packages are this machine's
# distribution's (amd64; the GPU machines are x86-64).
set -euo pipefail
cd "$(dirname "$0")/../.."
PKGS="libyaml-0-2 libyaml-dev libjansson4 libjansson-dev libcsv3 libcsv-dev"
command -v apt-get >/dev/null || { echo "fetch_debs.sh: needs apt-get (run it on a Debian/Ubuntu machine)" >&2; exit 1; }
arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
[ "$arch" = amd64 ] || { echo "fetch_debs.sh: this machine is $arch; the GPU machines need amd64 packages" >&2; exit 1; }
mkdir -p .gpu/debs
rm -f .gpu/debs/*.deb
# shellcheck disable=SC2086
if ! (cd .gpu/debs && apt-get download -q $PKGS >/dev/null); then
    echo "fetch_debs.sh: apt-get download failed (try: apt-get update)" >&2
    exit 1
fi
git describe --always --dirty --abbrev=12 >.gpu/rev 2>/dev/null || echo unknown >.gpu/rev
echo "fetch_debs.sh: $(ls .gpu/debs | wc -l) packages ($(du -sh .gpu/debs | cut -f1)) in .gpu/debs; revision $(cat .gpu/rev)"
