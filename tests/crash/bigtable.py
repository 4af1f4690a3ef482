#!/usr/bin/python3
"""bigtable - helpers of the Delete Table tests and benchmark (stdlib only).

  load()        fills a table with n entities through $batch changesets of
                100 inserts (one partition each), over a few connections
  Prober        a thread that GETs one entity in a loop and keeps the
                longest wait it saw (a liveness bound, not a benchmark)
  metric()      one value of the admin listener's /metrics
  storescan()   every key of a stopped store, read by tests/crash/storescan
                through the backend itself (tables, entities per table id,
                purge records)
"""
import os
import re
import subprocess
import threading
import time

import tload

ACCT = tload.ACCOUNT
BATCH = 100


def batch_body(host, table, pk, first, n, seq):
    """A $batch body inserting rows first..first+n-1 of partition pk."""
    bb, cb = "b_%d" % seq, "c_%d" % seq
    head = ("--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
            "POST http://%s/%s/%s HTTP/1.1\r\nContent-Type: application/json\r\n"
            "Accept: application/json;odata=nometadata\r\nPrefer: return-no-content\r\n\r\n"
            % (cb, host, ACCT, table))
    parts = ["--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n" % (bb, cb)]
    for i in range(first, first + n):
        parts.append(head)
        parts.append('{"PartitionKey":"%s","RowKey":"r%07d","Seq":%d,"Data":"%s"}\r\n'
                     % (pk, i, i, "x" * 60))
    parts.append("--%s--\r\n--%s--\r\n" % (cb, bb))
    return "".join(parts), "multipart/mixed; boundary=%s" % bb


def load(host, port, table, n, conns=3, prefix="p"):
    """Inserts n entities into table (partitions of BATCH rows named
    prefix + number). Raises on any failed batch."""
    nb = (n + BATCH - 1) // BATCH
    errors = []
    lock = threading.Lock()
    nxt = [0]

    def worker():
        c = tload.Client(host, port, timeout=60)
        try:
            while not errors:
                with lock:
                    b = nxt[0]
                    nxt[0] += 1
                if b >= nb:
                    return
                first = b * BATCH
                cnt = min(BATCH, n - first)
                body, ct = batch_body("%s:%d" % (host, port), table, "%s%06d" % (prefix, b),
                                      first, cnt, b)
                st, _, rb = c.request("POST", "/%s/$batch" % ACCT, body, [("Content-Type", ct)])
                if st != 202 or rb.count(b"HTTP/1.1 204") != cnt:
                    errors.append("batch %d: %d %r" % (b, st, rb[:300]))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
        finally:
            c.close()

    ts = [threading.Thread(target=worker, daemon=True) for _ in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise RuntimeError("loading %s failed: %s" % (table, errors[0]))


class Prober:
    """GETs one entity over its own connection until stopped; keeps the
    longest time one request took and any unexpected answer."""

    def __init__(self, host, port, path):
        self.c = tload.Client(host, port, timeout=30)
        self.path = path
        self.worst = 0.0
        self.count = 0
        self.bad = None
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def start(self):
        self.t.start()
        return self

    def run(self):
        while not self.stop_ev.is_set():
            t0 = time.monotonic()
            try:
                st, _, b = self.c.request("GET", self.path)
            except Exception as e:  # noqa: BLE001
                self.bad = repr(e)
                return
            dt = time.monotonic() - t0
            self.worst = max(self.worst, dt)
            self.count += 1
            if st != 200 and self.bad is None:
                self.bad = "%d %r" % (st, b[:200])
            time.sleep(0.002)

    def stop(self):
        self.stop_ev.set()
        self.t.join(60)
        self.c.close()


def metric(host, port, name):
    """The value of metric name (no labels) on the admin listener, or None."""
    c = tload.Client(host, port, timeout=10)
    try:
        st, _, b = c.request("GET", "/metrics")
    finally:
        c.close()
    m = re.search(r"(?m)^%s (\S+)$" % re.escape(name), b.decode("utf-8", "replace"))
    return float(m.group(1)) if m else None


def wait_metric(host, port, name, pred, timeout):
    """Polls metric name until pred(value); returns (value, seconds) or
    (last value, None) on timeout."""
    t0 = time.monotonic()
    v = None
    while time.monotonic() - t0 < timeout:
        v = metric(host, port, name)
        if v is not None and pred(v):
            return v, time.monotonic() - t0
        time.sleep(0.02)
    return v, None


def storescan(exe, backend, data):
    """Reads a stopped store: {"tables": {(account, name): id},
    "entities": {id: count}, "purges": {id: resume key length}}."""
    out = subprocess.run([exe, backend, data], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=120)
    if out.returncode != 0:
        raise RuntimeError("storescan failed: %s" % out.stderr.decode("utf-8", "replace"))
    res = {"tables": {}, "entities": {}, "purges": {}}
    for ln in out.stdout.decode("utf-8", "replace").splitlines():
        f = ln.split()
        if f[0] == "table":
            res["tables"][(f[1], f[2])] = int(f[3])
        elif f[0] == "entities":
            res["entities"][int(f[1])] = int(f[2])
        elif f[0] == "purge":
            res["purges"][int(f[1])] = int(f[2])
    return res


def storescan_path():
    top = os.environ.get("TOP_BUILDDIR") or os.path.join(os.path.dirname(__file__), "..", "..")
    p = os.path.abspath(os.path.join(top, "tests", "crash", "storescan"))
    return p if os.access(p, os.X_OK) else None
