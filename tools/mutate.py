#!/usr/bin/env python3
"""mutate.py -- the mutation score: plausible one-line bugs, each built and tested.

    python3 tools/mutate.py                  every mutant of tests/mutation/mutants.txt
    python3 tools/mutate.py M03 M07          only these
    python3 tools/mutate.py --check          only check that every snippet is still found

Each mutant (tests/mutation/mutants.txt) names a file, an exact source snippet that must
occur in it exactly once, its replacement, and the tests that should catch it.  The tool
copies the source tree (git's files, committed or not) to a work folder outside the
checkout (--work, default /tmp/pb_mutate.<user>; kept between runs, so rebuilds are
incremental), builds the cpu configuration there, runs the named tests once unmutated
(they must pass), then for each mutant: applies it, rebuilds pagedbench and the named
test targets, runs those tests (PAGEDBENCH_NO_SKIP=1), restores the file.  A mutant is
CAUGHT when a test fails, SURVIVED when they all pass; a snippet that is missing or not
unique, or a mutant that does not build, is an ERROR (the list needs re-anchoring).
Prints a table and exits 0 only when every mutant is caught (1 otherwise, 2 on usage
or setup errors).  The checkout itself is never modified.
"""
import argparse
import getpass
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join(ROOT, "tests", "mutation", "mutants.txt")


def parse(path):
    """[(id, file, tests, why, from, to)] from the list; exits 2 on a malformed entry."""
    out, cur = [], None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            m = re.match(r"^\[(\w+)\]\s+(\S+)\s*$", line)
            if m:
                cur = {"id": m.group(1), "file": m.group(2), "line": n}
                out.append(cur)
                continue
            m = re.match(r"^(tests|why|from|to): (.*)$", line)
            if not m or cur is None:
                sys.exit("%s:%d: expected '[ID] file' or 'tests: / why: / from: / to: '" % (path, n))
            val = m.group(2)
            if m.group(1) in ("from", "to"):
                val = val.replace("\\n", "\n")
            cur[m.group(1)] = val
    ids = set()
    for c in out:
        for k in ("tests", "why", "from", "to"):
            if k not in c:
                sys.exit("%s:%d: mutant %s has no '%s:'" % (path, c["line"], c["id"], k))
        if c["id"] in ids:
            sys.exit("%s:%d: mutant id %s twice" % (path, c["line"], c["id"]))
        if c["from"] == c["to"]:
            sys.exit("%s:%d: mutant %s changes nothing" % (path, c["line"], c["id"]))
        ids.add(c["id"])
        c["tests"] = c["tests"].split()
    return out


def snippet_problem(src_root, c):
    path = os.path.join(src_root, c["file"])
    if not os.path.isfile(path):
        return "no file %s" % c["file"]
    with open(path, encoding="utf-8") as f:
        n = f.read().count(c["from"])
    if n != 1:
        return "snippet found %d times in %s (must be once): %r" % (n, c["file"], c["from"][:70])
    return None


def sync_tree(dst):
    """Copy git's files of the checkout to dst, touching only files whose bytes changed."""
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           check=True, capture_output=True).stdout.decode().split("\0")
    keep = set()
    for rel in filter(None, files):
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src) or os.path.islink(src):
            continue
        keep.add(rel)
        d = os.path.join(dst, rel)
        with open(src, "rb") as f:
            data = f.read()
        if os.path.isfile(d):
            with open(d, "rb") as f:
                if f.read() == data:
                    continue
        os.makedirs(os.path.dirname(d), exist_ok=True)
        with open(d, "wb") as f:
            f.write(data)
        shutil.copymode(src, d)
    for dp, _, fs in os.walk(dst):
        for fn in fs:
            rel = os.path.relpath(os.path.join(dp, fn), dst)
            if rel not in keep:
                os.remove(os.path.join(dp, fn))


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def targets_of(tests):
    return sorted({t for t in tests if t.startswith("test_")} | {"pagedbench"})


def build(bdir, targets, jobs):
    args = ["cmake", "--build", bdir, "-j", str(jobs)]
    for t in targets:
        args += ["--target", t]
    return run(args)


def ctest(bdir, tests, jobs):
    env = dict(os.environ, PAGEDBENCH_NO_SKIP="1")
    regex = "^(%s)$" % "|".join(re.escape(t) for t in tests)
    r = run(["ctest", "--test-dir", bdir, "-R", regex, "-j", str(jobs), "--timeout", "600"], env=env)
    failed = re.findall(r"^\s*\d+ - (\S+) \(", r.stdout, re.M)
    ran = re.search(r"tests passed, (\d+) tests failed out of (\d+)", r.stdout)
    total = int(ran.group(2)) if ran else 0
    return r.returncode, failed, total, r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ids", nargs="*", help="only these mutants")
    ap.add_argument("--list", default=LIST)
    ap.add_argument("--work", default="/tmp/pb_mutate.%s" % getpass.getuser())
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="only check that every snippet is found once")
    a = ap.parse_args()
    muts = parse(a.list)
    if a.ids:
        unknown = set(a.ids) - {c["id"] for c in muts}
        if unknown:
            sys.exit("mutate.py: unknown mutant(s) %s" % " ".join(sorted(unknown)))
        muts = [c for c in muts if c["id"] in a.ids]
    bad = [(c, p) for c in muts for p in [snippet_problem(ROOT, c)] if p]
    for c, p in bad:
        print("ERROR %s (%s:%d): %s" % (c["id"], os.path.relpath(a.list, ROOT), c["line"], p), file=sys.stderr)
    if a.check:
        print("mutate.py: %d mutants, %d snippets not found once" % (len(muts), len(bad)))
        return 1 if bad else 0
    if bad:
        print("mutate.py: re-anchor the snippets above first (mutate.py --check)", file=sys.stderr)
        return 1
    src, bdir = os.path.join(a.work, "src"), os.path.join(a.work, "build")
    os.makedirs(src, exist_ok=True)
    t0 = time.time()
    sync_tree(src)
    if not os.path.isfile(os.path.join(bdir, "CMakeCache.txt")):
        r = run(["cmake", "-S", src, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release", "-DPB_CUDA=OFF"])
        if r.returncode:
            print(r.stdout[-3000:], file=sys.stderr)
            return 2
    all_tests = sorted({t for c in muts for t in c["tests"]})
    r = build(bdir, targets_of(all_tests), a.jobs)
    if r.returncode:
        print(r.stdout[-3000:], file=sys.stderr)
        print("mutate.py: the unmutated tree does not build", file=sys.stderr)
        return 2
    rc, failed, total, out = ctest(bdir, all_tests, a.jobs)
    if rc or total != len(all_tests):
        print(out[-3000:], file=sys.stderr)
        print("mutate.py: the tests fail (or are missing) without any mutant: %s" % " ".join(failed), file=sys.stderr)
        return 2
    print("mutate.py: baseline built and %d tests pass (%.0f s); %d mutants" % (total, time.time() - t0, len(muts)))
    rows = []
    for c in muts:
        t1 = time.time()
        path = os.path.join(src, c["file"])
        with open(path, encoding="utf-8") as f:
            orig = f.read()
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(orig.replace(c["from"], c["to"], 1))
            r = build(bdir, targets_of(c["tests"]), a.jobs)
            if r.returncode:
                verdict, by = "ERROR", "does not build: " + (re.findall(r"error: .*", r.stdout) or ["?"])[0][:60]
            else:
                rc, failed, total, out = ctest(bdir, c["tests"], a.jobs)
                if total != len(c["tests"]):
                    verdict, by = "ERROR", "ran %d of the tests %s" % (total, " ".join(c["tests"]))
                elif rc:
                    verdict, by = "caught", " ".join(failed)
                else:
                    verdict, by = "SURVIVED", ""
        finally:
            with open(path, "w", encoding="utf-8") as f:
                f.write(orig)
        rows.append((c, verdict, by, time.time() - t1))
        print("  %-4s %-8s %-28s %5.0f s  %s" % (c["id"], verdict, c["file"], time.time() - t1, by), flush=True)
    build(bdir, targets_of(all_tests), a.jobs)   # leave the work tree built unmutated
    n_caught = sum(1 for _, v, _, _ in rows if v == "caught")
    print()
    print("| mutant | file | what | result | caught by |")
    print("|---|---|---|---|---|")
    for c, v, by, _ in rows:
        print("| %s | %s | %s | %s | %s |" % (c["id"], c["file"], c["why"], v, by))
    print()
    print("mutate.py: %d of %d mutants caught, %d survived, %d errors (%.0f s)"
          % (n_caught, len(rows), sum(v == "SURVIVED" for _, v, _, _ in rows),
             sum(v == "ERROR" for _, v, _, _ in rows), time.time() - t0))
    return 0 if n_caught == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
