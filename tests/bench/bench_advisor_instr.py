#!/usr/bin/python3
"""bench_advisor_instr.py - instructions per point GET with the admin
listener (metrics + partition advisor) off and on, counted by valgrind's
callgrind, so the figure does not depend on machine load (not part of
make check; `make bench-advisor` runs it after the wrk rounds).

For each configuration tabled runs under callgrind twice, answering LOW and
then HIGH point GETs of one entity on one keep-alive connection; the
difference of the two instruction totals divided by HIGH - LOW is the cost
of one GET (start-up and shut-down cancel out).

  bench_advisor_instr.py TABLED [LOW] [HIGH]      (default 2000 12000)
"""
import http.client
import os
import re
import subprocess
import sys
import tempfile
import time


def run(tabled, extra, n):
    tmp = tempfile.mkdtemp(prefix="tabled-instr-")
    out = os.path.join(tmp, "cg.out")
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                          tabled, "--port", "0", "--auth", "off", "--access-log", "off",
                          "--backend", "memory", "--durability", "none", "--log-level", "warn"]
                         + extra, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port = None
    end = time.monotonic() + 60
    while port is None and time.monotonic() < end:
        line = p.stdout.readline()
        m = re.search(r"ready at http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
    if port is None:
        p.kill()
        sys.exit("tabled did not start under valgrind")
    hdr = {"x-ms-version": "2019-02-02", "Accept": "application/json;odata=nometadata",
           "Content-Type": "application/json"}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("POST", "/devstoreaccount1/Tables", body=b'{"TableName":"bench"}', headers=hdr)
    c.getresponse().read()
    path = "/devstoreaccount1/bench(PartitionKey='p',RowKey='r')"
    c.request("PUT", path, body=b'{"PartitionKey":"p","RowKey":"r","Name":"some value","Qty":3}',
              headers=hdr)
    c.getresponse().read()
    for _ in range(n):
        c.request("GET", path, headers=hdr)
        r = c.getresponse()
        r.read()
        assert r.status == 200
    c.close()
    p.terminate()
    p.wait(120)
    total = 0
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
    return total


def main():
    tabled = sys.argv[1]
    low = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    high = int(sys.argv[3]) if len(sys.argv) > 3 else 12000
    res = {}
    for name, extra in (("off", []), ("advisor", ["--admin-port", "0"])):
        a = run(tabled, extra, low)
        b = run(tabled, extra, high)
        res[name] = (b - a) / (high - low)
        print("  %-8s %8.0f instructions per point GET" % (name, res[name]))
    print("  advisor on / off: %.1f%% instructions" % (100 * res["advisor"] / res["off"]))


if __name__ == "__main__":
    main()
