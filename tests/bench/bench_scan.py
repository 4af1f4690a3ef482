#!/usr/bin/python3
"""bench_scan.py - filtered table scans and 1000-entity pages (make bench-scan).

A table of --entities (default 100,000) ~1 KiB entities is loaded through
$batch (partitions of 100): Num (Int32, row number mod 100), Name (String),
Score (Double), Big (Int64), When (DateTime), Flag (Boolean), Id (Guid),
Bin (Binary) and Data (a String that brings the entity to about 1 KiB).
Then, round by round:

  scan   `$filter=Num lt 10` over the whole table, following continuations
         (10% match: 10 pages of 1,000 entities, each examining ~10,000),
         --scans times: wall-clock time of each whole scan (the median over
         all rounds is printed) and the server's CPU time (utime+stime from
         /proc/PID/stat) per scan
  pages  --pages unfiltered 1000-entity pages (walking the table through
         its continuations) in each JSON metadata level; pages per second
         of server CPU ("per core") and of wall clock

With --base BINARY the same rounds run against that binary too, the two
servers alternating round by round (both loaded, both up, only one asked
at a time). For leveldb both servers open copies of one loaded store, so
their answers must be byte for byte the same: every body of the first
round is compared, and a difference is an error. Medians of --rounds.

  bench_scan.py [--base BINARY] [--backends memory,leveldb] [--rounds 7]
                [--pages 300] [--scans 5] [--entities 100000] [--dir DIR]
                [--backend-option NAME=VALUE ...] [--wrapper COMMAND]
                [--entity full|small]

--wrapper runs the servers under a command: with callgrind
(`--wrapper "valgrind --tool=callgrind --collect-atstart=no
--toggle-collect=op_query_entities --callgrind-out-file=/tmp/cg.%p"`,
--entities 20000 --rounds 1 --scans 1 --pages 10) the instructions of the
query operation are counted, which the machine's noise does not blur.

TABLED names the binary (default ./tabled of the build tree).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "crash"))
import tload  # noqa: E402

TOP = os.environ.get("TOP_BUILDDIR") or os.getcwd()
TABLED = os.environ.get("TABLED") or os.path.join(TOP, "tabled")
ACCT = tload.ACCOUNT
TABLE = "scan"
LEVELS = ["nometadata", "minimalmetadata", "fullmetadata"]
TICK = os.sysconf("SC_CLK_TCK")
WRAPPER = []  # --wrapper: a command the servers run under


def start(exe, backend, data, options=()):
    """Starts exe on a free port; returns (process, port)."""
    cmd = WRAPPER + [exe, "--port", "0", "--auth", "off", "--access-log", "off", "--log-level", "warn",
           "--backend", backend, "--durability", "none"]
    if backend != "memory":
        cmd += ["--data", data]
        for o in options:
            cmd += ["--backend-option", o]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    for raw in iter(p.stdout.readline, b""):
        m = re.search(rb"ready at http://[^:]+:(\d+)", raw)
        if m:
            return p, int(m.group(1))
    raise RuntimeError("tabled did not start: %s" % " ".join(cmd))


def cpu_s(pid):
    """utime + stime of pid in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


ENTITY = "full"  # --entity


def entity_json(i):
    """Row i: every Edm type, about 1 KiB stored (--entity small: Num,
    Name, Score, When and Flag, about 150 bytes)."""
    if ENTITY == "small":
        return ('{"PartitionKey":"p%06d","RowKey":"r%07d","Num":%d,"Name":"name %d",'
                '"Score":%d.25,"When":"2024-06-%02dT10:00:%02d.1234567Z",'
                '"When@odata.type":"Edm.DateTime","Flag":%s}'
                % (i // 100, i, i % 100, i, i % 1000, 1 + i % 28, i % 60,
                   "true" if i % 3 else "false"))
    pad = "d%07d-" % i * 110
    return ('{"PartitionKey":"p%06d","RowKey":"r%07d","Num":%d,"Name":"name \\"%d\\"",'
            '"Score":%d.25,"Big":"%d","Big@odata.type":"Edm.Int64",'
            '"When":"2024-06-%02dT10:00:%02d.1234567Z","When@odata.type":"Edm.DateTime",'
            '"Flag":%s,"Id":"%08x-1234-5678-9abc-def012345678","Id@odata.type":"Edm.Guid",'
            '"Bin":"AAECAwQFBgc=","Bin@odata.type":"Edm.Binary","Data":"%s"}'
            % (i // 100, i, i % 100, i, i % 1000, i * 1000003, 1 + i % 28, i % 60,
               "true" if i % 3 else "false", i, pad))


def load(port, n):
    """Inserts rows 0..n-1, one $batch changeset of 100 per partition."""
    c = tload.Client("127.0.0.1", port, timeout=120)
    st, _, b = c.request("POST", "/%s/Tables" % ACCT, '{"TableName":"%s"}' % TABLE,
                         [("Content-Type", "application/json")])
    if st not in (201, 204):
        raise RuntimeError("create table: %d %r" % (st, b[:200]))
    host = "127.0.0.1:%d" % port
    for first in range(0, n, 100):
        bb, cb = "b_%d" % first, "c_%d" % first
        head = ("--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary"
                "\r\n\r\nPOST http://%s/%s/%s HTTP/1.1\r\nContent-Type: application/json\r\n"
                "Prefer: return-no-content\r\n\r\n" % (cb, host, ACCT, TABLE))
        parts = ["--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n" % (bb, cb)]
        cnt = min(100, n - first)
        for i in range(first, first + cnt):
            parts.append(head)
            parts.append(entity_json(i) + "\r\n")
        parts.append("--%s--\r\n--%s--\r\n" % (cb, bb))
        st, _, rb = c.request("POST", "/%s/$batch" % ACCT, "".join(parts),
                              [("Content-Type", "multipart/mixed; boundary=%s" % bb)])
        if st != 202 or rb.count(b"HTTP/1.1 204") != cnt:
            raise RuntimeError("batch at %d: %d %r" % (first, st, rb[:300]))
    c.close()


def get_page(c, query, token, level):
    """One page; returns (body, next token or None)."""
    q = query
    if token:
        q += "&NextPartitionKey=%s&NextRowKey=%s" % token
    st, h, b = c.request("GET", "/%s/%s()?%s" % (ACCT, TABLE, q.lstrip("&")),
                         headers=[("Accept", "application/json;odata=" + level)])
    if st != 200:
        raise RuntimeError("query %s: %d %r" % (q, st, b[:200]))
    npk = h.get("x-ms-continuation-nextpartitionkey")
    return b, ((npk, h.get("x-ms-continuation-nextrowkey", "")) if npk else None)


class Server:
    """One binary under test, loaded and running."""

    def __init__(self, name, exe, backend, data, options=()):
        self.name, self.exe = name, exe
        self.proc, self.port = start(exe, backend, data, options)
        self.c = None
        self.token = None  # where the page walk goes on
        self.scan_ms, self.scan_cpu_ms = [], []
        self.pps = {lv: [] for lv in LEVELS}
        self.pps_wall = {lv: [] for lv in LEVELS}
        self.rows = None

    def connect(self):
        """A fresh connection: the server closes idle ones, and the other
        server's turn (or its load under a slow wrapper) can take long."""
        if self.c:
            self.c.close()
        self.c = tload.Client("127.0.0.1", self.port, timeout=600)

    def scan(self, repeat):
        """The whole `Num lt 10` scan, repeat times (server CPU time is
        counted in clock ticks, so one scan is too short to weigh alone);
        returns the last scan's bodies."""
        query = "$filter=" + urllib.parse.quote("Num lt 10")
        self.connect()
        cpu0 = cpu_s(self.proc.pid)
        for _ in range(repeat):
            bodies, token = [], None
            t0 = time.monotonic()
            while True:
                b, token = get_page(self.c, query, token, "nometadata")
                bodies.append(b)
                if not token:
                    break
            self.scan_ms.append((time.monotonic() - t0) * 1000)
        self.scan_cpu_ms.append((cpu_s(self.proc.pid) - cpu0) * 1000 / repeat)
        return bodies

    def pages(self, level, n):
        """n unfiltered pages in level; returns their bodies."""
        bodies = []
        self.connect()
        cpu0, t0 = cpu_s(self.proc.pid), time.monotonic()
        for _ in range(n):
            b, self.token = get_page(self.c, "", self.token, level)
            bodies.append(b)
        wall, cpu = time.monotonic() - t0, cpu_s(self.proc.pid) - cpu0
        self.pps[level].append(n / cpu if cpu > 0 else float("inf"))
        self.pps_wall[level].append(n / wall)
        return bodies

    def stop(self):
        """SIGTERM (a wrapper such as callgrind writes its counts on the
        way out), SIGKILL if that takes over a minute."""
        if self.c:
            self.c.close()
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def one_backend(backend, args):
    tmp = tempfile.mkdtemp(prefix="bench-scan-", dir=args.dir)
    bins = [("new", TABLED)] + ([("base", args.base)] if args.base else [])
    servers = []
    try:
        if backend == "memory":
            for name, exe in bins:
                s = Server(name, exe, backend, None)
                servers.append(s)
                t0 = time.monotonic()
                load(s.port, args.entities)
                print("%s %s: loaded %d entities in %.1f s" % (backend, name, args.entities,
                                                              time.monotonic() - t0), flush=True)
        else:
            # One store, loaded once, copied: both servers hold the same bytes.
            first = os.path.join(tmp, "load")
            s = Server("load", bins[0][1], backend, first, args.backend_option)
            t0 = time.monotonic()
            load(s.port, args.entities)
            s.stop()
            print("%s: loaded %d entities in %.1f s" % (backend, args.entities,
                                                       time.monotonic() - t0), flush=True)
            for name, exe in bins:
                d = os.path.join(tmp, name)
                shutil.copytree(first, d)
                servers.append(Server(name, exe, backend, d, args.backend_option))
        compare = backend != "memory" and len(servers) == 2
        for r in range(args.rounds):
            order = servers if r % 2 == 0 else servers[::-1]
            out = {}
            for s in order:
                out[s.name] = [s.scan(args.scans)]
                for lv in LEVELS:
                    out[s.name].append(s.pages(lv, args.pages))
            if compare and r == 0:
                # the URLs in the metadata name each server's own port
                a, b = ([[x.replace(b"127.0.0.1:%d" % s.port, b"HOST") for x in part]
                         for part in out[s.name]] for s in servers)
                if a != b:
                    raise RuntimeError("%s: new and base answered differently" % backend)
                print("%s: round 1 bodies of new and base are identical (%d pages)"
                      % (backend, sum(len(x) for x in a)), flush=True)
            if r == 0:
                rows = sum(x.count(b'"PartitionKey"') for x in out[servers[0].name][0])
                print("%s: scan returned %d entities in %d pages" %
                      (backend, rows, len(out[servers[0].name][0])), flush=True)
        for s in servers:
            print("%-8s %-5s scan Num lt 10: median %6.1f ms wall (min %.1f, max %.1f), "
                  "%6.1f ms server CPU" %
                  (backend, s.name, statistics.median(s.scan_ms), min(s.scan_ms), max(s.scan_ms),
                   statistics.median(s.scan_cpu_ms)), flush=True)
            for lv in LEVELS:
                print("%-8s %-5s pages %-15s median %7.0f pages/s per server core "
                      "(min %.0f, max %.0f), %6.0f pages/s wall" %
                      (backend, s.name, lv, statistics.median(s.pps[lv]), min(s.pps[lv]),
                       max(s.pps[lv]), statistics.median(s.pps_wall[lv])), flush=True)
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default=None, help="a second tabled binary, run alternately")
    ap.add_argument("--backends", default="memory,leveldb")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--scans", type=int, default=5, help="scans per round")
    ap.add_argument("--entities", type=int, default=100000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--wrapper", default="",
                    help="run the servers under this command, e.g. \"valgrind --tool=callgrind "
                         "--collect-atstart=no --toggle-collect=op_query_entities\"")
    ap.add_argument("--backend-option", action="append", default=[],
                    help="NAME=VALUE for the disk backends' servers under test, repeatable "
                         "(e.g. cache-size=256M)")
    ap.add_argument("--entity", choices=["full", "small"], default="full",
                    help="full: every Edm type, ~1 KiB; small: five properties, ~150 bytes")
    args = ap.parse_args()
    WRAPPER[:] = args.wrapper.split()
    global ENTITY
    ENTITY = args.entity
    for b in args.backends.split(","):
        one_backend(b, args)


if __name__ == "__main__":
    main()
