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

  table-SAS GET: --table-sas: the SAS GET signed by a table SAS (tn=bench,
          sp=r) instead.
  SDK GET: --sdk: the SAS GET with the headers an Azure SDK sends
          (minimalmetadata, User-Agent, a fresh x-ms-client-request-id...).
  SharedKey GET: --sharedkey: the GET with authentication on, each one
          signed with SharedKey (an HMAC-SHA256 computed by the server for
          every request, where a repeated SAS is found in its cache).

  insert: --inserts N: N single ~1 KiB inserts (POST, each its own
          RowKey) on one connection; the count minus that of a run with
          none, over N.
  page:   --pages N: 1,000 ~1 KiB entities inserted, then N GETs of the
          whole table (one page of 1,000); the count minus that of a run
          with no page GET, over N.
  scan:   --scans N: the same 1,000 entities, then N filtered queries
          (Data ne 'y', which every entity passes, so each returns the
          page of 1,000 after testing the filter on each).

  instr_ab.py [--gets N] [--int] [--no-batch] [--no-get] [--table-sas] [--sdk] [--sharedkey]
              [--inserts N]
              [--pages N] [--scans N] [--backend NAME] BASE_BINARY NEW_BINARY

--int adds an Int32 property to the entity (as tests/bench/bench_get.py's
has); --no-batch skips the $batch workload, --no-get the two GET ones;
--backend runs the server on another backend (flatfile: durable, its data
in a fresh directory; the $batch workload always uses memory).

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
import uuid

TOP = os.environ.get("TOP_BUILDDIR") or os.getcwd()
BENCH_BATCH = os.path.join(TOP, "tests", "bench", "bench_batch")


def callgrind_total(path):
    """The total instruction count of one callgrind output file."""
    with open(path) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError("no totals in %s" % path)


# The headers an Azure SDK sends with a GET (tests/bench/bench_get.py's
# outside shape), but for the request id, which http() adds fresh.
SDK_HEADERS = ("Accept: application/json;odata=minimalmetadata\r\nx-ms-version: 2019-02-02\r\n"
               "x-ms-date: Sun, 29 Nov 2026 06:00:00 GMT\r\nDataServiceVersion: 3.0\r\n"
               "MaxDataServiceVersion: 3.0;NetFx\r\nUser-Agent: azsdk-python-data-tables/12.4.0 "
               "Python/3.11.2 (Linux-6.1.0-x86_64-with-glibc2.36)\r\n"
               "Accept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n")


def sharedkey_request(method, path, body=b""):
    """The bytes of a request signed with SharedKey for devstoreaccount1
    (doc/protocol.md, SharedKey), dated now (the server refuses a date 15
    minutes off)."""
    key = base64.b64decode("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
                           "K1SZFPTOtr/KBHBeksoGMGw==")
    import email.utils
    date = email.utils.formatdate(usegmt=True)
    ctype = "application/json" if body else ""
    sts = "%s\n\n%s\n%s\n/devstoreaccount1/devstoreaccount1%s" % (method, ctype, date,
                                                                  path.split("?")[0])
    sig = base64.b64encode(hmac.new(key, sts.encode(), hashlib.sha256).digest()).decode()
    head = ("%s /devstoreaccount1%s HTTP/1.1\r\nHost: x\r\nx-ms-version: 2019-02-02\r\n"
            "x-ms-date: %s\r\nAuthorization: SharedKey devstoreaccount1:%s\r\n"
            "Accept: application/json;odata=nometadata\r\n%s"
            "Content-Length: %d\r\n\r\n" % (method, path, date, sig,
                                           "Content-Type: %s\r\n" % ctype if ctype else "",
                                           len(body)))
    return head.encode() + body


def http(sock, method, path, body=b"", sdk=False, sharedkey=False):
    """One request on a keep-alive connection; returns the status. sdk: with
    SDK_HEADERS and a fresh x-ms-client-request-id instead of the short set;
    sharedkey: signed with SharedKey."""
    if sharedkey:
        head, body = sharedkey_request(method, path, body), b""
    elif sdk:
        head = ("%s /devstoreaccount1%s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s"
                "x-ms-client-request-id: %s\r\n\r\n"
                % (method, path, SDK_HEADERS, uuid.uuid4())).encode()
    else:
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


def table_sas():
    """"?" and a table SAS (doc/protocol.md, Table SAS) for reading table bench, valid
    until 2099."""
    key = base64.b64decode("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
                           "K1SZFPTOtr/KBHBeksoGMGw==")
    se = "2099-01-01T00:00:00Z"
    sts = "\n".join(["r", "", se, "/table/devstoreaccount1/bench", "", "", "", "2019-02-02",
                     "", "", "", ""])
    sig = base64.b64encode(hmac.new(key, sts.encode(), hashlib.sha256).digest()).decode()
    return "?" + urllib.parse.urlencode([("se", se), ("sp", "r"), ("sv", "2019-02-02"),
                                         ("tn", "bench"), ("sig", sig)])


def start(binary, tmp, out, sas=False, backend="memory"):
    """The server under callgrind (writing out) and a connection to it."""
    args = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, binary,
            "--port", "0", "--backend", backend, "--auth", "on" if sas else "off",
            "--log-level", "warn", "--access-log", "off"]
    if backend != "memory":
        data = tempfile.mkdtemp(prefix="data-", dir=tmp)
        args += ["--data", data]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp,
                         text=True)
    port = None
    for line in p.stdout:
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    s = socket.create_connection(("127.0.0.1", port))
    assert http(s, "POST", "/Tables", b'{"TableName":"bench"}') == 201
    return p, s


def stop(p, s, out):
    """Closes the connection, stops the server; its instruction count."""
    s.close()
    p.send_signal(signal.SIGTERM)
    p.wait()
    return callgrind_total(out)


def entity(row, with_int):
    """The ~1 KiB entity body of RowKey row."""
    ent = {"PartitionKey": "p", "RowKey": row, "Data": "x" * 1000}
    if with_int:
        ent["Qty"] = 3
    return json.dumps(ent).encode()


def inserts(binary, n, tmp, with_int=False, backend="memory"):
    """Instructions of a server run that takes n single inserts."""
    out = os.path.join(tmp, "insert-%d.out" % n)
    p, s = start(binary, tmp, out, backend=backend)
    for i in range(n):
        assert http(s, "POST", "/bench", entity("r%06d" % i, with_int)) in (201, 204)
    return stop(p, s, out)


def pages(binary, n, tmp, with_int=False, backend="memory", query=""):
    """Instructions of a server run that holds 1,000 entities and answers
    n GETs of the whole table (query: a $filter to add)."""
    out = os.path.join(tmp, "page-%d.out" % n)
    p, s = start(binary, tmp, out, backend=backend)
    for i in range(1000):
        assert http(s, "POST", "/bench", entity("r%06d" % i, with_int)) in (201, 204)
    for _ in range(n):
        assert http(s, "GET", "/bench()" + query) == 200
    return stop(p, s, out)


def gets(binary, n, tmp, sas=False, with_int=False, tsas=False, sdk=False, sk=False):
    """Instructions of a server run that answers n GETs (sas: with
    authentication on, each GET signed by an account SAS; tsas: by a table
    SAS; sdk: with an SDK's headers; sk: sas and every request signed with
    SharedKey instead)."""
    out = os.path.join(tmp, "get-%d%s%s%s%s.out" % (n, "-sas" if sas else "", "-t" if tsas else "",
                                                    "-sdk" if sdk else "", "-sk" if sk else ""))
    q = account_sas() if sas and not sk else ""
    gq = table_sas() if tsas else q
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
    assert http(s, "POST", "/Tables" + q, b'{"TableName":"bench"}', sharedkey=sk) == 201
    ent = {"PartitionKey": "p", "RowKey": "r", "Data": "x" * 1000}
    if with_int:
        ent["Qty"] = 3
    ent = json.dumps(ent).encode()
    assert http(s, "POST", "/bench" + q, ent, sharedkey=sk) in (201, 204)
    for _ in range(n):
        assert http(s, "GET", "/bench(PartitionKey='p',RowKey='r')" + gq, sdk=sdk,
                    sharedkey=sk) == 200
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
    ap.add_argument("--no-get", action="store_true", help="skip the two GET workloads")
    ap.add_argument("--inserts", type=int, default=0, help="single inserts (0: skip)")
    ap.add_argument("--pages", type=int, default=0, help="GETs of a 1,000-entity page (0: skip)")
    ap.add_argument("--scans", type=int, default=0,
                    help="filtered queries over 1,000 entities (0: skip)")
    ap.add_argument("--backend", default="memory", help="memory or flatfile (not $batch)")
    ap.add_argument("--table-sas", action="store_true",
                    help="also the point GET signed by a table SAS")
    ap.add_argument("--sdk", action="store_true",
                    help="also the account-SAS point GET with an SDK's headers")
    ap.add_argument("--sharedkey", action="store_true",
                    help="also the point GET signed with SharedKey")
    ap.add_argument("base")
    ap.add_argument("new")
    a = ap.parse_args()
    flt = "?" + urllib.parse.urlencode({"$filter": "Data ne 'y'"})
    res = {}
    for label, binary in (("base", os.path.abspath(a.base)), ("new", os.path.abspath(a.new))):
        r = {}
        with tempfile.TemporaryDirectory(prefix="instr-ab-") as tmp:
            if not a.no_get:
                r["point GET"] = (gets(binary, a.gets, tmp, False, a.int) -
                                  gets(binary, 0, tmp, False, a.int)) / a.gets
                r["SAS point GET"] = (gets(binary, a.gets, tmp, True, a.int) -
                                      gets(binary, 0, tmp, True, a.int)) / a.gets
            if a.table_sas:
                r["table-SAS point GET"] = (gets(binary, a.gets, tmp, True, a.int, True) -
                                            gets(binary, 0, tmp, True, a.int, True)) / a.gets
            if a.sdk:
                r["SDK-headers SAS point GET"] = (
                    gets(binary, a.gets, tmp, True, a.int, False, True) -
                    gets(binary, 0, tmp, True, a.int, False, True)) / a.gets
            if a.sharedkey:
                r["SharedKey point GET"] = (
                    gets(binary, a.gets, tmp, True, a.int, False, False, True) -
                    gets(binary, 0, tmp, True, a.int, False, False, True)) / a.gets
            if not a.no_batch:
                r["$batch of 100 inserts"] = (batches(binary, 20000, tmp) -
                                              batches(binary, 100, tmp)) / 199
            if a.inserts:
                r["insert"] = (inserts(binary, a.inserts, tmp, a.int, a.backend) -
                               inserts(binary, 0, tmp, a.int, a.backend)) / a.inserts
            if a.pages:
                r["page of 1,000"] = (pages(binary, a.pages, tmp, a.int, a.backend) -
                                      pages(binary, 0, tmp, a.int, a.backend)) / a.pages
            if a.scans:
                r["filtered scan of 1,000"] = (pages(binary, a.scans, tmp, a.int, a.backend, flt) -
                                               pages(binary, 0, tmp, a.int, a.backend, flt)) / a.scans
        res[label] = r
        print("%-4s %s: %s" % (label, binary,
                               ", ".join("%.0f per %s" % (v, k) for k, v in r.items())))
        sys.stdout.flush()
    print("new/base: " + ", ".join("%s %.4f" % (k, res["new"][k] / res["base"][k])
                                   for k in res["new"]))


if __name__ == "__main__":
    main()
