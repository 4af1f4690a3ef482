#!/usr/bin/python3
"""Integration test: `tabled import` into the memory store is refused.

The memory store lives only as long as the tool, so an import into it would
be lost when the tool exits. `--backend memory`, and a configuration file
naming the memory backend, give exit 2 and a message saying why and what to
do, before the input is read: a file that does not exist is not reported.
The same file still imports into a lasting store (flatfile).
Prints TAP."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402


def run(args):
    """Runs tabled with args; (exit status, stderr + stdout text)."""
    p = subprocess.run([h.tabled_path()] + args, capture_output=True, timeout=300,
                       stdin=subprocess.DEVNULL)
    return p.returncode, (p.stderr + p.stdout).decode("utf-8", "replace")


def main():
    print("1..4")
    tmp = tempfile.mkdtemp(prefix="tabled-import-memory-")
    n = 0
    try:
        missing = os.path.join(tmp, "no-such-export.jsonl")
        rc, out = run(["import", "--backend", "memory", missing])
        n += 1
        ok = rc == 2 and "memory" in out and "lost" in out and "no-such-export" not in out
        print("%s %d - import --backend memory refused before reading: exit %d: %s"
              % ("ok" if ok else "not ok", n, rc, out.strip()[:300]))

        conf = os.path.join(tmp, "tabled.conf")
        with open(conf, "w") as f:
            f.write("backend = memory\n")
        rc, out = run(["import", "--config", conf, missing])
        n += 1
        ok = rc == 2 and "lost" in out
        print("%s %d - a configuration naming memory is refused too: exit %d: %s"
              % ("ok" if ok else "not ok", n, rc, out.strip()[:300]))

        data = os.path.join(tmp, "data")
        rc, out = run(["export", "--backend", "flatfile", "--data", data, "-o",
                       os.path.join(tmp, "x.jsonl")])
        n += 1
        print("%s %d - export of an empty flatfile store: exit %d %s"
              % ("ok" if rc == 0 else "not ok", n, rc, out.strip()[:300]))
        rc, out = run(["import", "--backend", "flatfile", "--data", data,
                       os.path.join(tmp, "x.jsonl")])
        n += 1
        print("%s %d - the same file imports into a lasting store: exit %d %s"
              % ("ok" if rc == 0 else "not ok", n, rc, out.strip()[:300]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
