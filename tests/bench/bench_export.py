#!/usr/bin/python3
"""bench_export: time of tabled import and tabled export of N entities (default
1,000,000, ~300 bytes each with all eight Edm types) on each durable backend,
and the size of the export file; then a server is started on that store and
`tabled export --admin` from it is timed, with a client doing point GETs
meanwhile (their slowest answer: every backend exports in steps, one piece
of about 256 KiB per loop turn). -b memory loads the same entities into a
running memory server through $batch requests instead (nothing offline).
Not part of make check: make bench-export [BENCH_EXPORT_ARGS="-n 1000000 -b
leveldb"]."""
import argparse
import base64
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid


def entity(i):
    return {"PartitionKey": "p%04d" % (i % 1000), "RowKey": "r%09d" % i,
                 "S": "some text %d" % i, "I": i,
                 "L@odata.type": "Edm.Int64", "L": str(2**40 + i),
                 "D": i / 3.0 + 0.5, "B": i % 2 == 0,
                 "G@odata.type": "Edm.Guid", "G": str(uuid.UUID(int=i)),
                 "T@odata.type": "Edm.DateTime", "T": "2025-03-04T05:06:07.1234567Z",
                 "Bin@odata.type": "Edm.Binary",
                 "Bin": base64.b64encode(i.to_bytes(8, "big")).decode()}


def gen(path, n):
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"tabled-export":1,"version":"bench"}\n')
        f.write('{"account":"devstoreaccount1","table":"Bench","acl":""}\n')
        for i in range(n):
            e = entity(i)
            f.write(json.dumps({"account": "devstoreaccount1", "table": "Bench",
                                "ticks": 638400000000000000 + i, "entity": e},
                               separators=(",", ":")) + "\n")


def timed(argv):
    t = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t


HDRS = {"x-ms-version": "2019-02-02", "Accept": "application/json;odata=nometadata"}


def load_batches(port, n):
    """Creates table Bench and inserts entities 0..n-1 in $batch requests
    of 100 (one partition each), as a memory store cannot be imported."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/devstoreaccount1/Tables", body=json.dumps({"TableName": "Bench"}),
              headers=dict(HDRS, **{"Content-Type": "application/json"}))
    c.getresponse().read()
    byp = {}
    for i in range(n):
        byp.setdefault(i % 1000, []).append(i)
    url = "http://127.0.0.1:%d/devstoreaccount1/Bench" % port
    for ids in byp.values():
        for k in range(0, len(ids), 100):
            parts = []
            for i in ids[k:k + 100]:
                parts.append("--cs\r\nContent-Type: application/http\r\n"
                             "Content-Transfer-Encoding: binary\r\n\r\n"
                             "POST %s HTTP/1.1\r\nContent-Type: application/json\r\n"
                             "Accept: application/json;odata=nometadata\r\n"
                             "Prefer: return-no-content\r\n\r\n%s\r\n"
                             % (url, json.dumps(entity(i))))
            body = ("--b\r\nContent-Type: multipart/mixed; boundary=cs\r\n\r\n" +
                    "".join(parts) + "--cs--\r\n--b--\r\n").encode()
            c.request("POST", "/devstoreaccount1/$batch", body=body,
                      headers=dict(HDRS, **{"Content-Type": "multipart/mixed; boundary=b"}))
            r = c.getresponse()
            text = r.read()
            if r.status != 202 or b" 204 " not in text:
                raise RuntimeError("$batch answered %d: %r" % (r.status, text[:300]))
    c.close()


def live(exe, backend, d, out, n=0):
    """(seconds of export --admin, slowest point GET meanwhile, GETs done).
    n: entities to load first through the API (memory)."""
    args = ["--data", d] if backend != "memory" else []
    p = subprocess.Popen([exe, "--backend", backend] + args + ["--port", "0",
                          "--admin-port", "0", "--auth", "off", "--log-level", "warn",
                          "--access-log", "off"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    port = aport = None
    while port is None or aport is None:
        line = p.stdout.readline().decode()
        if not line:
            raise RuntimeError("the server did not start")
        m = re.search(r"ready at http://[^:]+:(\d+)", line)
        port = int(m.group(1)) if m else port
        m = re.search(r"Admin endpoint:\s+http://[^:]+:(\d+)/", line)
        aport = int(m.group(1)) if m else aport
    threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
    if n:
        load_batches(port, n)
    stop, lat = threading.Event(), []

    def getter():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while not stop.is_set():
            t = time.monotonic()
            c.request("GET", "/devstoreaccount1/Bench(PartitionKey='p0001',RowKey='r%09d')"
                      % 1001, headers={"Accept": "application/json;odata=nometadata",
                                       "x-ms-version": "2019-02-02"})
            c.getresponse().read()
            lat.append(time.monotonic() - t)
            time.sleep(0.005)
    g = threading.Thread(target=getter, daemon=True)
    g.start()
    time.sleep(0.2)
    n0 = len(lat)
    t = timed([exe, "export", "--admin", "http://127.0.0.1:%d" % aport, "-o", out])
    stop.set()
    g.join(60)
    p.terminate()
    p.wait(30)
    during = lat[n0:]
    return t, max(during) if during else float("nan"), len(during)


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
            if b == "memory":
                tl, worst, ngets = live(a.t, b, d, out, a.n)
                print("%-8s export --admin from the running server %6.2f s (%7.0f entities/s), "
                      "file %.1f MB; %d point GETs meanwhile, slowest %.3f s"
                      % (b, tl, a.n / tl, os.path.getsize(out) / 1e6, ngets, worst))
                sys.stdout.flush()
                continue
            ti = timed([a.t, "import", "--backend", b, "--data", d, src])
            te = timed([a.t, "export", "--backend", b, "--data", d, "-o", out])
            size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
            print("%-8s import %6.2f s (%7.0f entities/s)  export %6.2f s (%7.0f entities/s)  "
                  "export file %.1f MB  store %.1f MB" % (b, ti, a.n / ti, te, a.n / te,
                                                        os.path.getsize(out) / 1e6, size / 1e6))
            sys.stdout.flush()
            out2 = os.path.join(tmp, b + "-live.jsonl")
            tl, worst, ngets = live(a.t, b, d, out2)
            same = open(out, "rb").read() == open(out2, "rb").read()
            print("%-8s export --admin from the running server %6.2f s (%7.0f entities/s), "
                  "file %.1f MB%s; %d point GETs meanwhile, slowest %.3f s"
                  % (b, tl, a.n / tl, os.path.getsize(out2) / 1e6,
                     "" if same else " (DIFFERS from the offline export)", ngets, worst))
            os.unlink(out2)
            sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
