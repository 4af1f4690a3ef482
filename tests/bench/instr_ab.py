#!/usr/bin/python3
"""instr_ab.py - instructions per point GET and per $batch, A/B, under
callgrind (make bench-instr BASE=/path/to/old/tabled).

Wall-clock figures on the shared VM drift by 20% between runs, which hides
a 3% change; callgrind's instruction count of the whole server does not
drift. For each binary:
  GET:    the server (memory backend, --auth off) under
          valgrind --tool=callgrind; one ~1 KiB entity inserted; N
          keep-alive GETs of it on one connection; the count of a run
          with N GETs minus the count of a run with none, over N.
  SAS GET: the same with authentication on and every GET signed by one
          account SAS on its URL (the server verifies it each time).
  $batch: tests/bench/bench_batch with the server under callgrind, one
          connection, batches of 100 ~1 KiB inserts (-m 20000: 200
          batches); the count minus that of a one-batch run, over 199.

  instr_ab.py [--gets N] [--int] [--no-batch] BASE_BINARY NEW_BINARY

--int adds an Int32 property to the entity (as tests/bench/bench_get.py's
has); --no-batch skips the $batch workload.

Prints both counts and NEW/BASE for each workload. Needs valgrind.
TOP_BUILDDIR names the build tree (bench_batch)."""
import argparse
import base64
import hashlib
import hmac
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.parse

TOP = os.environ.get("TOP_BUILDDIR") or os.getcwd()
BENCH_BATCH = os.path.join(TOP, "tests", "bench", "bench_batch")


def callgrind_total(path):
    """The total instruction count of one callgrind output file."""
    with open(path) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError("no totals in %s" % path)


def http(sock, method, path, body=b""):
    """One request on a keep-alive connection; returns the status."""
    head = ("%s /devstoreaccount1%s HTTP/1.1\r\nHost: x\r\nx-ms-version: 2019-02-02\r\n"
            "Accept: application/json;odata=nometadata\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (method, path, len(body))).encode()
    sock.sendall(head + body)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    m = re.search(rb"\r\nContent-Length: *(\d+)", head, re.I)
    need = int(m.group(1)) if m else 0
    while len(rest) < need:
        rest += sock.recv(65536)
    return int(head.split(b" ")[1])


def account_sas():
    """"?" and an account SAS (doc/protocol.md, Account SAS) of devstoreaccount1 for tables,
    valid until 2099."""
    key = base64.b64decode("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
                           "K1SZFPTOtr/KBHBeksoGMGw==")
    f = [("sv", "2019-02-02"), ("ss", "t"), ("srt", "sco"), ("sp", "rwdlacu"),
         ("se", "2099-01-01T00:00:00Z")]
    d = dict(f)
    sts = "\n".join(["devstoreaccount1", d["sp"], d["ss"], d["srt"], "", d["se"], "", "",
                     d["sv"], ""])
    sig = base64.b64encode(hmac.new(key, sts.encode(), hashlib.sha256).digest()).decode()
    return "?" + urllib.parse.urlencode(f + [("sig", sig)])


def gets(binary, n, tmp, sas=False, with_int=False):
    """Instructions of a server run that answers n GETs (sas: with
    authentication on, each GET signed by an account SAS)."""
    out = os.path.join(tmp, "get-%d%s.out" % (n, "-sas" if sas else ""))
    q = account_sas() if sas else ""
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, binary,
                          "--port", "0", "--backend", "memory", "--auth", "on" if sas else "off",
                          "--log-level", "warn", "--access-log", "off"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp, text=True)
    port = None
    for line in p.stdout:
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    s = socket.create_connection(("127.0.0.1", port))
    assert http(s, "POST", "/Tables" + q, b'{"TableName":"bench"}') == 201
    ent = {"PartitionKey": "p", "RowKey": "r", "Data": "x" * 1000}
    if with_int:
        ent["Qty"] = 3
    ent = json.dumps(ent).encode()
    assert http(s, "POST", "/bench" + q, ent) in (201, 204)
    for _ in range(n):
        assert http(s, "GET", "/bench(PartitionKey='p',RowKey='r')" + q) == 200
    s.close()
    p.send_signal(signal.SIGTERM)
    p.wait()
    return callgrind_total(out)


def batches(binary, entities, tmp):
    """Instructions of a server run that takes entities/100 batches."""
    out = os.path.join(tmp, "batch-%d.out" % entities)
    wrap = os.path.join(tmp, "wrap.sh")
    with open(wrap, "w") as f:
        f.write("#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file=%s %s \"$@\" "
                "2>/dev/null\n" % (out, binary))
    os.chmod(wrap, 0o755)
    subprocess.run([BENCH_BATCH, "-t", wrap, "-c", "1", "-w", "0", "-d", "600", "-m",
                    str(entities), "-r", "1"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return callgrind_total(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gets", type=int, default=2000)
    ap.add_argument("--int", action="store_true", help="an Int32 property in the entity")
    ap.add_argument("--no-batch", action="store_true", help="skip the $batch workload")
    ap.add_argument("base")
    ap.add_argument("new")
    a = ap.parse_args()
    res = {}
    for label, binary in (("base", os.path.abspath(a.base)), ("new", os.path.abspath(a.new))):
        with tempfile.TemporaryDirectory(prefix="instr-ab-") as tmp:
            g = (gets(binary, a.gets, tmp, False, a.int) - gets(binary, 0, tmp, False, a.int)) / a.gets
            sg = (gets(binary, a.gets, tmp, True, a.int) - gets(binary, 0, tmp, True, a.int)) / a.gets
            b = 1.0 if a.no_batch else (batches(binary, 20000, tmp) - batches(binary, 100, tmp)) / 199
        res[label] = (g, sg, b)
        print("%-4s %s: %.0f instructions per point GET, %.0f per account-SAS point GET%s"
              % (label, binary, g, sg,
                 "" if a.no_batch else ", %.0f per $batch of 100 inserts" % b))
        sys.stdout.flush()
    print("new/base: point GET %.4f, SAS point GET %.4f%s"
          % (res["new"][0] / res["base"][0], res["new"][1] / res["base"][1],
             "" if a.no_batch else ", $batch %.4f" % (res["new"][2] / res["base"][2])))


if __name__ == "__main__":
    main()
