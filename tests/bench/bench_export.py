#!/usr/bin/python3
"""bench_export: time of tabled import and tabled export of N entities (default
1,000,000, ~300 bytes each with all eight Edm types) on each durable backend,
and the size of the export file. Not part of make check: make bench-export
[BENCH_EXPORT_ARGS="-n 1000000 -b leveldb"]."""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid


def gen(path, n):
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"tabled-export":1,"version":"bench"}\n')
        f.write('{"account":"devstoreaccount1","table":"Bench","acl":""}\n')
        for i in range(n):
            e = {"PartitionKey": "p%04d" % (i % 1000), "RowKey": "r%09d" % i,
                 "S": "some text %d" % i, "I": i,
                 "L@odata.type": "Edm.Int64", "L": str(2**40 + i),
                 "D": i / 3.0 + 0.5, "B": i % 2 == 0,
                 "G@odata.type": "Edm.Guid", "G": str(uuid.UUID(int=i)),
                 "T@odata.type": "Edm.DateTime", "T": "2025-03-04T05:06:07.1234567Z",
                 "Bin@odata.type": "Edm.Binary",
                 "Bin": base64.b64encode(i.to_bytes(8, "big")).decode()}
            f.write(json.dumps({"account": "devstoreaccount1", "table": "Bench",
                                "ticks": 638400000000000000 + i, "entity": e},
                               separators=(",", ":")) + "\n")


def timed(argv):
    t = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("-b", action="append", help="backend (repeatable; default both)")
    ap.add_argument("-t", default=os.path.join(os.environ.get("TOP_BUILDDIR", "."), "tabled"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tabled-bench-export-")
    try:
        src = os.path.join(tmp, "in.jsonl")
        gen(src, a.n)
        print("input: %d entities, %.1f MB" % (a.n, os.path.getsize(src) / 1e6))
        for b in a.b or ["leveldb", "flatfile"]:
            d, out = os.path.join(tmp, b), os.path.join(tmp, b + ".jsonl")
            ti = timed([a.t, "import", "--backend", b, "--data", d, src])
            te = timed([a.t, "export", "--backend", b, "--data", d, "-o", out])
            size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
            print("%-8s import %6.2f s (%7.0f entities/s)  export %6.2f s (%7.0f entities/s)  "
                  "export file %.1f MB  store %.1f MB" % (b, ti, a.n / ti, te, a.n / te,
                                                        os.path.getsize(out) / 1e6, size / 1e6))
            sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
