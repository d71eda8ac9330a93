#!/usr/bin/env python3
"""unpack_deb.py DEB DIR -- extract a Debian package's files under DIR, like `dpkg-deb -x`,
for a machine without dpkg (tools/gpu/deps.sh uses it when dpkg-deb is absent).

A .deb is an ar archive of debian-binary, control.tar.* and data.tar.*; the files are in
data.tar.{xz,gz,bz2,} (Debian's packages: xz; zstd, Ubuntu's, is refused with a message:
Python's tarfile cannot read it).  Standard library only; exit 1 with the reason on error.
"""
import io
import os
import sys
import tarfile


def members(path):
    """(name, bytes) of each member of an ar archive."""
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise ValueError("%s: not an ar archive (a .deb starts with !<arch>)" % path)
        while True:
            hdr = f.read(60)
            if len(hdr) < 60:
                return
            name = hdr[:16].decode("ascii").strip().rstrip("/")
            size = int(hdr[48:58].decode("ascii").strip())
            data = f.read(size)
            if size % 2:
                f.read(1)
            yield name, data


def main():
    if len(sys.argv) != 3:
        print("usage: unpack_deb.py DEB DIR", file=sys.stderr)
        return 2
    deb, out = sys.argv[1], sys.argv[2]
    try:
        for name, data in members(deb):
            if not name.startswith("data.tar"):
                continue
            if name.endswith(".zst"):
                raise ValueError("%s: %s is zstd-compressed; use dpkg-deb -x" % (deb, name))
            os.makedirs(out, exist_ok=True)
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as t:
                for m in t.getmembers():       # no absolute paths or .. (a package's own files only)
                    parts = os.path.normpath(m.name).split(os.sep)
                    if os.path.isabs(m.name) or ".." in parts:
                        raise ValueError("%s: unsafe member %s" % (deb, m.name))
                if hasattr(tarfile, "data_filter"):     # Python >= 3.12 (and backports)
                    t.extractall(out, filter="data")
                else:
                    t.extractall(out)
            return 0
        raise ValueError("%s: no data.tar member" % deb)
    except (OSError, ValueError, tarfile.TarError) as e:
        print("unpack_deb.py: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
