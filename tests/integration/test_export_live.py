#!/usr/bin/python3
"""Integration test: tabled export --admin URL from a running server.

For each backend (memory, LevelDB, flat file) a server with an admin
listener; a table "Pairs" whose entities a### and z### (with 3,000 filler
entities of 1 KiB between them in key order, so an export of the table
spans many loop turns) are upserted in one $batch with the same counter,
and a writer thread that keeps doing so, and inserting single entities,
while the export runs through the SDK. Checks:

  snapshot   every a### and z### pair in the file carries the same counter
             (a torn snapshot would show an old a### and a newer z###);
             every entity whose insert was acknowledged before the export
             started is in the file; the writer got answers during it.
  catalogue  tables, the stored access policy and the service properties
             are in the file.
  roundtrip  the file imported (offline) into another backend exports
             (offline) byte for byte the same.
  leveldb    100,000 more entities preloaded (offline import): a reader
             that takes the body slowly, across many loop turns, gets pairs
             that agree, and a point GET during that export is answered
             within 1 s (a liveness bound); with --admin-token the export
             needs the token (401 without, even on loopback; the token from
             $TABLED_ADMIN_TOKEN works); an unknown table is 404, another
             method 405, a malformed parameter 400. Prints TAP."""
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

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.data.tables import (TableAccessPolicy, TableCorsRule,
                                   TableServiceClient, UpdateMode)
    IMPORT_ERROR = None
except ImportError as e:
    IMPORT_ERROR = e

KW = dict(retry_total=0, connection_timeout=10, read_timeout=30)
TOKEN = "export-token-0123456789"
NPAIRS = 20
NFILL = 3000
NBULK = 100000


def tabled(*args, check=True, env=None):
    p = subprocess.run([h.tabled_path()] + list(args), capture_output=True, timeout=600,
                       env=env)
    if check and p.returncode != 0:
        raise RuntimeError("tabled %s: status %d\n%s" % (" ".join(args), p.returncode,
                                                         p.stderr.decode()[-2000:]))
    return p


admin_port = h.admin_port


def svc_for(srv):
    return TableServiceClient.from_connection_string(srv.conn_str(), **KW)


class Writer(threading.Thread):
    """Upserts pairs (a###, z###) with one counter in one $batch and
    inserts single entities, until stopped; records acknowledgements."""

    def __init__(self, srv):
        super().__init__(daemon=True)
        self.t = svc_for(srv).get_table_client("Pairs")
        self.stop_ev = threading.Event()
        self.acked = []          # (RowKey, monotonic time of the answer)
        self.answers = []        # monotonic times of every answer
        self.error = None
        self.c = 0

    def run(self):
        try:
            while not self.stop_ev.is_set():
                self.c += 1
                k = self.c % NPAIRS
                self.t.submit_transaction([
                    ("upsert", {"PartitionKey": "pair", "RowKey": "a%03d" % k, "C": self.c},
                     {"mode": UpdateMode.REPLACE}),
                    ("upsert", {"PartitionKey": "pair", "RowKey": "z%03d" % k, "C": self.c},
                     {"mode": UpdateMode.REPLACE})])
                self.answers.append(time.monotonic())
                rk = "i%08d" % self.c
                self.t.create_entity({"PartitionKey": "ins", "RowKey": rk, "C": self.c})
                self.acked.append((rk, time.monotonic()))
                self.answers.append(time.monotonic())
        except Exception as e:  # reported by the test
            self.error = repr(e)[:500]


def setup(srv):
    """Pairs with fillers, an access policy and service properties."""
    svc = svc_for(srv)
    t = svc.create_table("Pairs")
    ops = []
    for k in range(NPAIRS):
        for side in "az":
            ops.append(("upsert", {"PartitionKey": "pair", "RowKey": "%s%03d" % (side, k),
                                   "C": 0}))
    for i in range(NFILL):
        ops.append(("upsert", {"PartitionKey": "pair", "RowKey": "m%06d" % i, "F": "f" * 1024}))
    for i in range(0, len(ops), 100):
        t.submit_transaction(ops[i:i + 100])
    t.set_table_access_policy({"pol1": TableAccessPolicy(permission="r")})
    svc.set_service_properties(cors=[TableCorsRule(["http://a.example"], ["GET"])])


def pairs_of(lines):
    """{RowKey: C} of the pair entities, and the RowKeys of inserts."""
    pairs, ins = {}, set()
    for line in lines:
        o = json.loads(line)
        e = o.get("entity")
        if not e or o.get("table") != "Pairs":
            continue
        if e["PartitionKey"] == "pair" and e["RowKey"][0] in "az":
            pairs[e["RowKey"]] = e["C"]
        elif e["PartitionKey"] == "ins":
            ins.add(e["RowKey"])
    return pairs, ins


def check_pairs(tap, what, pairs):
    torn = ["%03d: a=%s z=%s" % (k, pairs.get("a%03d" % k), pairs.get("z%03d" % k))
            for k in range(NPAIRS) if pairs.get("a%03d" % k) != pairs.get("z%03d" % k)]
    tap.ok(len(pairs) == 2 * NPAIRS and not torn,
           "%s: every pair in the file agrees (a snapshot)" % what, "; ".join(torn[:5]))


def gen_bulk(path):
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"tabled-export":1,"version":"test"}\n')
        f.write('{"account":"devstoreaccount1","table":"Bulk","acl":""}\n')
        for i in range(NBULK):
            f.write('{"account":"devstoreaccount1","table":"Bulk","ticks":%d,"entity":'
                    '{"PartitionKey":"p%03d","RowKey":"r%08d","V":%d}}\n'
                    % (638400000000000000 + i, i % 100, i, i))


def slow_read(port, tap, point_get):
    """GET /export read 64 KiB at a time with pauses; point_get() is timed
    after the first piece. Returns the body's lines."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/export", headers={"Authorization": "Bearer " + TOKEN})
    r = c.getresponse()
    tap.eq(r.status, 200, "leveldb: GET /export with the token is 200")
    tap.eq(r.getheader("Transfer-Encoding"), "chunked", "leveldb: the body is chunked")
    parts = [r.read(65536)]
    t0 = time.monotonic()
    point_get()
    dt = time.monotonic() - t0
    tap.ok(dt < 1.0, "leveldb: a point GET during the export is answered within 1 s",
           "%.3f s" % dt)
    n = 0
    while True:
        b = r.read(65536)
        if not b:
            break
        parts.append(b)
        n += 1
        if n % 16 == 0:
            time.sleep(0.005)
    c.close()
    return b"".join(parts).decode("utf-8").splitlines()


def run_backend(tap, tmp, backend, other):
    data = os.path.join(tmp, "live-" + backend)
    args = ["--admin-port", "0"]
    if backend != "memory":
        args += ["--data", data]
    if backend == "leveldb":
        bulk = os.path.join(tmp, "bulk.jsonl")
        gen_bulk(bulk)
        tabled("import", "--backend", "leveldb", "--data", data, bulk)
        args += ["--admin-token", TOKEN]
    srv = h.Server(args=args, backend=backend).start()
    env = dict(os.environ, TABLED_ADMIN_TOKEN=TOKEN)
    try:
        url = "http://127.0.0.1:%d" % admin_port(srv)
        setup(srv)
        w = Writer(srv)
        w.start()
        time.sleep(0.3)
        out = os.path.join(tmp, "live-%s.jsonl" % backend)
        t_start = time.monotonic()
        p = tabled("export", "--admin", url, "-o", out, env=env)
        t_end = time.monotonic()
        during = sum(1 for t in w.answers if t_start < t < t_end)
        tap.diag("%s: %s; %d writer answers during the export (%.2f s)"
                 % (backend, p.stderr.decode().strip(), during, t_end - t_start))
        if backend == "leveldb":
            lines = slow_read(admin_port(srv), tap,
                              lambda: svc_for(srv).get_table_client("Bulk")
                              .get_entity("p007", "r%08d" % 50007))
            check_pairs(tap, "leveldb slow reader", pairs_of(lines)[0])
            tap.ok(len(lines) > NBULK, "leveldb: the slow reader got every line",
                   "%d lines" % len(lines))
            for method, path, want in (("GET", "/export?table=nosuch", 404),
                                       ("POST", "/export", 405),
                                       ("GET", "/export?table=%zz", 400)):
                c = http.client.HTTPConnection("127.0.0.1", admin_port(srv), timeout=10)
                c.request(method, path, headers={"Authorization": "Bearer " + TOKEN})
                r = c.getresponse()
                body = r.read()
                c.close()
                tap.eq(r.status, want, "leveldb: %s %s is %d" % (method, path, want))
            p = tabled("export", "--admin", url, "--table", "pairs", "-o",
                       os.path.join(tmp, "one.jsonl"), env=env)
            tap.ok(b"1 tables" in p.stderr, "leveldb: --table exports one table",
                   p.stderr.decode())
            p = tabled("export", "--admin", url, check=False,
                       env={k: v for k, v in os.environ.items() if k != "TABLED_ADMIN_TOKEN"})
            tap.ok(p.returncode == 1 and b"401" in p.stderr,
                   "leveldb: export without the token is refused (401)", p.stderr.decode())
        w.stop_ev.set()
        w.join(30)
        tap.ok(w.error is None, "%s: the writer had no error" % backend, w.error)
        tap.ok(during > 0 or backend != "leveldb",
               "%s: writes were answered while the export ran" % backend)
        lines = open(out, encoding="utf-8").read().splitlines()
        pairs, ins = pairs_of(lines)
        check_pairs(tap, backend, pairs)
        before = [rk for rk, t in w.acked if t < t_start]
        missing = [rk for rk in before if rk not in ins]
        tap.ok(before and not missing,
               "%s: every insert acknowledged before the export is in it (%d)"
               % (backend, len(before)), "missing %s" % missing[:5])
        tap.ok(any('"service-properties"' in l for l in lines) and
               any('"table":"Pairs","acl":"' in l and '"acl":""' not in l for l in lines),
               "%s: service properties and the table's ACL are in the file" % backend)
        fills = sum(1 for l in lines if '"RowKey":"m' in l)
        tap.eq(fills, NFILL, "%s: every filler entity exported" % backend)
    finally:
        srv.stop_and_check(tap)
    copy = os.path.join(tmp, "copy-" + backend)
    tabled("import", "--backend", other, "--data", copy, out)
    again = os.path.join(tmp, "again-%s.jsonl" % backend)
    tabled("export", "--backend", other, "--data", copy, "-o", again)
    tap.ok(open(out, "rb").read() == open(again, "rb").read(),
           "%s: imported into %s, the offline export is byte-identical" % (backend, other))


def main():
    tap = h.Tap()
    h.watchdog(300, tap=tap)
    if IMPORT_ERROR:
        tap.ok(False, "azure-data-tables importable", str(IMPORT_ERROR))
        tap.done()
    tmp = tempfile.mkdtemp(prefix="tabled-export-live-")
    try:
        for backend, other in (("memory", "leveldb"), ("leveldb", "flatfile"),
                               ("flatfile", "leveldb")):
            tap.run(run_backend, tap, tmp, backend, other)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
