#!/usr/bin/python3
"""bench_delete.py - Delete Table of a big table (make bench-delete).

For each size: load N entities ($batch of 100), start a prober GETting an
entity of another table, DELETE the big table, and report
  client   the Delete Table request's latency
  purge    from the request until the admin listener's tabled_purge_tables
           gauge is back at 0 (the entities are gone from the store); with a
           tabled that has no such gauge (one that deletes inside the
           request) it is the request's latency
  get max  the longest the prober's GETs waited meanwhile

  bench_delete.py [--sizes 100000,200000,400000] [--backend leveldb]
                  [--durability batch] [--dir DIR]

TABLED names the binary (default ./tabled of the build tree).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "crash"))
import bigtable  # noqa: E402
import tload  # noqa: E402

TOP = os.environ.get("TOP_BUILDDIR") or os.getcwd()
TABLED = os.environ.get("TABLED") or os.path.join(TOP, "tabled")


def start(backend, data, durability):
    cmd = [TABLED, "--port", "0", "--admin-port", "0", "--auth", "off", "--access-log", "off",
           "--log-level", "warn", "--backend", backend, "--durability", durability]
    if backend != "memory":
        cmd += ["--data", data]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    port = admin = None
    for raw in iter(p.stdout.readline, b""):
        m = re.search(rb"ready at http://[^:]+:(\d+)", raw)
        if m:
            port = int(m.group(1))
        m = re.search(rb"Admin endpoint:\s+http://[^:]+:(\d+)", raw)
        if m:
            admin = int(m.group(1))
            break
    if not port or not admin:
        raise RuntimeError("tabled did not start: %s" % " ".join(cmd))
    return p, port, admin


def one(size, args):
    data = tempfile.mkdtemp(prefix="bench-delete-", dir=args.dir)
    p, port, admin = start(args.backend, os.path.join(data, "d"), args.durability)
    try:
        c = tload.Client("127.0.0.1", port, timeout=600)
        tload.create_table(c, "big")
        tload.create_table(c, "other")
        st, _, _ = c.request("POST", "/%s/other" % bigtable.ACCT,
                             '{"PartitionKey":"a","RowKey":"b"}',
                             [("Content-Type", "application/json")])
        t0 = time.monotonic()
        bigtable.load("127.0.0.1", port, "big", size)
        load_s = time.monotonic() - t0
        gauge = bigtable.metric("127.0.0.1", admin, "tabled_purge_tables")
        pr = bigtable.Prober("127.0.0.1", port,
                             "/%s/other(PartitionKey='a',RowKey='b')" % bigtable.ACCT).start()
        time.sleep(0.2)
        t0 = time.monotonic()
        st, _, b = c.request("DELETE", "/%s/Tables('big')" % bigtable.ACCT)
        client = time.monotonic() - t0
        if st != 204:
            raise RuntimeError("delete answered %d %r" % (st, b[:200]))
        purge = client
        if gauge is not None:
            _, secs = bigtable.wait_metric("127.0.0.1", admin, "tabled_purge_tables",
                                           lambda v: v == 0, 600)
            purge = time.monotonic() - t0 if secs is not None else float("nan")
        time.sleep(0.1)
        pr.stop()
        c.close()
        print("%-8s %8d entities: load %5.1f s, delete: client %8.1f ms, purge %7.2f s, "
              "concurrent GET max %7.1f ms (%d GETs)"
              % (args.backend, size, load_s, client * 1000, purge, pr.worst * 1000, pr.count),
              flush=True)
    finally:
        p.kill()
        p.wait()
        shutil.rmtree(data, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,200000,400000")
    ap.add_argument("--backend", default="leveldb")
    ap.add_argument("--durability", default="batch")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    for s in args.sizes.split(","):
        one(int(s), args)


if __name__ == "__main__":
    main()
