#!/usr/bin/python3
"""bench_scale.py - how cost grows with the data (make bench-scale).

For each backend (--backends, default memory,leveldb,flatfile; postgres
when asked, on a private PostgreSQL of tests/integration/pg_harness.py,
labelled with its fsync setting), one tabled (--auth off, --access-log
off, the backend's default durability) is loaded step by step to each
size of --sizes (default 100000,1000000,10000000 entities of about 1 KiB:
Data of --value bytes of words and numbers) through $batch changesets of
100 inserts (tests/bench/bench_insert -b 100, --conns connections, each
loading its own partition, so every step adds --conns partitions). At each
size it measures:

  load     entities/s of that step's load (wall clock); then the server
           is let settle until idle (LevelDB compacts after a load, on its
           own threads), and the wait is printed
Server CPU is the tabled process's threads' time (schedstat); on
postgres the database's CPU per request (the postmaster and its children,
exited ones included, /proc/PID/stat) is given beside it ("DB CPU"), since
there the database does most of the work. Measures:

  get      point GETs of 5,000 random existing entities (wrk, --conns
           connections, --seconds): req/s, server CPU per request, p99,
           and minor page faults per request (the first touch of each
           page of LevelDB's memory-mapped table files costs one: right
           after a load, the entities' pages are not mapped in yet)
  get warm the same GETs of the same entities again right after (their
           pages now mapped): req/s, server CPU per request, p99
  insert   single-entity inserts (bench_insert, --conns connections,
           --seconds): req/s, server CPU per request, p99
  page     a 1,000-entity page at a random place of a random partition
           ($filter=PartitionKey eq P and RowKey ge R, $top=1000), --pages
           times: server CPU and wall clock per page
  scan     a filtered scan of one partition of the first step (the same
           partition at every size: $filter on Data matching nothing,
           following continuations), --scans times: server CPU and wall
           clock per scan; the partition holds the first size / --conns
           entities, so compare it only between runs of the same first size
  restart  kill -9 of the loaded server, then a new one on the same data:
           seconds from its start to the first answered GET of an entity
           (not for memory, which keeps nothing)
  rss      VmRSS of the restarted server before any request (idle), and
           of the loaded server right after the get and insert runs (load)
  disk     bytes of the data directory (postgres: the database's size)
           per entity

Then the table and, for each measure, the growth factor from each size
to the next (10x the data by default).

  bench_scale.py --dir SCRATCH [--sizes 100000,1000000,10000000]
                 [--backends memory,leveldb,flatfile,postgres] [--seconds 5]
                 [--conns 16] [--pages 20] [--scans 5] [--value 1000]
                 [--pg-fsync] [--base OLD_TABLED] [--keep] [--json FILE]

--base: at each size, after the load, an older tabled binary is started
on the same data (kill -9 of the loading one: its restart is measured)
and measured, then this build the same way, and this build loads the next
step; each durable backend gets a second table labelled "base".

SCRATCH holds the data (removed at the end unless --keep); 10,000,000
entities need about 12 GB per durable backend, and the memory backend
about as much RAM. TABLED names the binary (default ./tabled of the build
tree), BENCH_INSERT the load generator (default tests/bench/bench_insert).
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_get as bg  # noqa: E402
TOP = os.environ.get("TOP_BUILDDIR") or os.path.abspath(os.path.join(HERE, "..", ".."))
TABLED = os.environ.get("TABLED") or os.path.join(TOP, "tabled")
BENCH_INSERT = os.environ.get("BENCH_INSERT") or os.path.join(TOP, "tests", "bench",
                                                              "bench_insert")
ACCT = "devstoreaccount1"
TABLE = "scale"


def cpu_s(pid):
    """CPU time of pid's threads alive now, seconds (schedstat: ns, finer
    than /proc/PID/stat's clock ticks)."""
    total = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9


def db_cpu_s(srv):
    """CPU seconds the PostgreSQL server of srv has used (the postmaster,
    its live children, and through the postmaster's cutime+cstime its
    exited ones); None for the other backends."""
    if not srv.db:
        return None
    total, master = 0, srv.db.postmaster_pid()
    for pid in srv.db.backend_pids():
        try:
            with open("/proc/%d/stat" % pid) as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        total += int(fields[11]) + int(fields[12])
        if pid == master:
            total += int(fields[13]) + int(fields[14])
    return total / os.sysconf("SC_CLK_TCK")


def db_us(srv, d0, n):
    """Database CPU microseconds per request since d0 (db_cpu_s), or None."""
    return None if d0 is None else (db_cpu_s(srv) - d0) * 1e6 / max(n, 1)


def du_bytes(path):
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(d, f)).st_size
            except OSError:
                pass
    return total


class Server:
    """One tabled on backend/data; start() returns when it is ready."""

    def __init__(self, backend, data, options):
        self.backend, self.data, self.options = backend, data, options
        self.proc, self.port, self.binary = None, None, TABLED
        self.db = None  # the PgServer of --backends postgres

    def start(self):
        cmd = [self.binary, "--port", "0", "--auth", "off", "--access-log", "off", "--log-level",
               "warn", "--backend", self.backend]
        if self.backend != "memory":
            cmd += ["--data", self.data]
        for o in self.options:
            cmd += ["--backend-option", o]
        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        for raw in iter(self.proc.stdout.readline, b""):
            m = re.search(rb"ready at http://[^:]+:(\d+)", raw)
            if m:
                self.port = int(m.group(1))
                break
        else:
            raise RuntimeError("tabled did not start: %s" % " ".join(cmd))
        return t0

    def url(self, path):
        return "http://127.0.0.1:%d/%s%s" % (self.port, ACCT, path)

    def request(self, method, path, body=None, timeout=600):
        req = urllib.request.Request(self.url(path), method=method,
                                     data=body.encode() if body else None,
                                     headers={"Accept": "application/json;odata=nometadata",
                                              "Content-Type": "application/json",
                                              "x-ms-version": "2019-02-02"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(600)
            except subprocess.TimeoutExpired:
                self.kill9()


class Keys:
    """The entities loaded so far: (partition prefix, requests per
    connection) per step; bench_insert names them PREFIXcNNNN /
    rSEQ(10 digits)-PART(2 digits), SEQ from 1 per connection."""

    def __init__(self, conns):
        self.conns = conns
        self.steps = []         # (prefix, batches sent, entities)

    def add(self, prefix, batches):
        self.steps.append((prefix, batches, batches * 100))

    def sample(self, rnd):
        """A random entity surely loaded: rows up to half of a connection's
        fair share (a closed-loop connection may have sent fewer)."""
        total = sum(s[2] for s in self.steps)
        x = rnd.randrange(total)
        for prefix, batches, ents in self.steps:
            if x < ents:
                break
            x -= ents
        per = max(1, batches // self.conns // 2)
        return ("%sc%04d" % (prefix, rnd.randrange(self.conns)),
                "r%010d-%02d" % (1 + rnd.randrange(per), rnd.randrange(100)))


def bench_insert(port, args, prefix, extra):
    out = subprocess.run([BENCH_INSERT, "-p", str(port), "-t", TABLE, "-k", prefix, "-w",
                          "-s", str(args.value)] + extra,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    m = re.search(r"requests (\d+) in ([\d.]+) s: ([\d.]+) requests/s, ([\d.]+) entities/s; "
                  r"latency p50 ([\d.]+) ms, p99 ([\d.]+) ms", out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError("bench_insert failed:\n" + out.stdout)
    return {"requests": int(m.group(1)), "seconds": float(m.group(2)),
            "rps": float(m.group(3)), "eps": float(m.group(4)), "p99_ms": float(m.group(6))}


WRK_LUA = """
local paths = {%s}
local n = #paths
request = function()
  return wrk.format("GET", paths[math.random(n)], {["Accept"] = "application/json;odata=nometadata",
                    ["x-ms-version"] = "2019-02-02"})
end
"""


def get_paths(keys, rnd, n=5000):
    """n request paths of random loaded entities (wrk cycles through them)."""
    paths = []
    for _ in range(n):
        pk, rk = keys.sample(rnd)
        paths.append('"/%s/%s(PartitionKey=\'%s\',RowKey=\'%s\')"' % (ACCT, TABLE, pk, rk))
    return paths


def minflt(pid):
    """Minor page faults of pid so far (/proc/PID/stat field 10): a LevelDB
    table page a thread touches for the first time in this process."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def wrk_get(srv, paths, args, tmp):
    """wrk GETs of paths for --seconds: req/s, server CPU and minor page
    faults per request, p99."""
    script = os.path.join(tmp, "get.lua")
    with open(script, "w") as f:
        f.write(WRK_LUA % ",".join(paths))
    c0, f0, d0 = cpu_s(srv.proc.pid), minflt(srv.proc.pid), db_cpu_s(srv)
    out = subprocess.run(["wrk", "-t1", "-c%d" % args.conns, "-d%ds" % args.seconds,
                          "--latency", "-s", script, "http://127.0.0.1:%d" % srv.port],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    cpu, faults = cpu_s(srv.proc.pid) - c0, minflt(srv.proc.pid) - f0
    m = re.search(r"(\d+) requests in", out)
    rps = re.search(r"Requests/sec:\s*([\d.]+)", out)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\b", out, re.M)
    bad = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    if not (m and rps and p99):
        raise RuntimeError("wrk output not understood:\n" + out)
    if bad and int(bad.group(1)):
        raise RuntimeError("point GETs of loaded entities failed (%s non-2xx):\n%s"
                           % (bad.group(1), out))
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)]
    n = int(m.group(1))
    return {"rps": float(rps.group(1)), "cpu_us": cpu * 1e6 / max(n, 1),
            "p99_ms": float(p99.group(1)) * scale, "faults": faults / max(n, 1),
            "db_cpu_us": db_us(srv, d0, n)}


def query(srv, flt, top=None, token=None):
    q = "$filter=" + urllib.parse.quote(flt)
    if top:
        q += "&$top=%d" % top
    if token:
        q += "&NextPartitionKey=%s&NextRowKey=%s" % token
    st, h, body = srv.request("GET", "/%s()?%s" % (TABLE, q))
    if st != 200:
        raise RuntimeError("query %s: %d %r" % (flt, st, body[:300]))
    hk = {k.lower(): v for k, v in h.items()}
    nxt = hk.get("x-ms-continuation-nextpartitionkey")
    if not nxt:
        return json.loads(body)["value"], None
    tok = (urllib.parse.quote(nxt), urllib.parse.quote(hk.get("x-ms-continuation-nextrowkey", "")))
    return json.loads(body)["value"], tok


def pages(srv, keys, args, rnd):
    c0, t0, got = cpu_s(srv.proc.pid), time.monotonic(), 0
    for _ in range(args.pages):
        pk, rk = keys.sample(rnd)
        v, _ = query(srv, "PartitionKey eq '%s' and RowKey ge '%s'" % (pk, rk), top=1000)
        got += len(v)
    cpu, wall = cpu_s(srv.proc.pid) - c0, time.monotonic() - t0
    return {"cpu_ms": cpu * 1e3 / args.pages, "wall_ms": wall * 1e3 / args.pages,
            "entities": got / args.pages}


def scan(srv, keys, args):
    """--scans scans of one partition of the first step; per scan."""
    prefix = keys.steps[0][0]
    flt = "PartitionKey eq '%sc0001' and Data eq 'no such text'" % prefix
    c0, t0 = cpu_s(srv.proc.pid), time.monotonic()
    for _ in range(args.scans):
        token = None
        while True:
            _, token = query(srv, flt, token=token)
            if not token:
                break
    return {"cpu_ms": (cpu_s(srv.proc.pid) - c0) * 1e3 / args.scans,
            "wall_ms": (time.monotonic() - t0) * 1e3 / args.scans}


def settle(srv, limit=1800, quiet=5):
    """Waits until the server is idle: under 5% of a core in each of quiet
    seconds in a row (LevelDB's compactions after a load run on its own
    threads and would be counted against the requests measured next; the
    LevelDB backend starts its own whole-store compaction 3 s after writes
    stop); the seconds waited."""
    t0, calm = time.monotonic(), 0
    while time.monotonic() - t0 < limit and calm < quiet:
        c0 = cpu_s(srv.proc.pid)
        time.sleep(1)
        calm = calm + 1 if cpu_s(srv.proc.pid) - c0 < 0.05 else 0
    return time.monotonic() - t0


def restart(srv, keys, rnd, binary=None):
    """kill -9, start again (binary: another tabled on the same data);
    seconds to the first answered GET."""
    srv.kill9()
    if binary:
        srv.binary = binary
    pk, rk = keys.sample(rnd)
    t0 = srv.start()
    path = "/%s(PartitionKey='%s',RowKey='%s')" % (TABLE, pk, rk)
    while True:
        st, _, _ = srv.request("GET", path, timeout=600)
        if st == 200:
            return time.monotonic() - t0
        if time.monotonic() - t0 > 3600:
            raise RuntimeError("no answer within an hour of the restart")
        time.sleep(0.01)


def measure(srv, keys, args, tmp, rnd, row, binary):
    """Every measure at the current size into row. binary None: in load
    order (GETs, inserts, pages, scan, then the restart); a path (--base):
    the restart into that binary first, so each build's figures are its
    own, from its own start on the same data."""
    if binary:
        row["restart_s"] = restart(srv, keys, rnd, binary)
        row["rss_idle_kib"] = bg.rss_kib(srv.proc.pid)
    paths = get_paths(keys, rnd)
    row["get"] = wrk_get(srv, paths, args, tmp)
    row["get_warm"] = wrk_get(srv, paths, args, tmp)
    c0, d0 = cpu_s(srv.proc.pid), db_cpu_s(srv)
    prefix = "i%d%s" % (len(keys.steps), "b" if binary and binary == args.base else "")
    ins = bench_insert(srv.port, args, prefix, ["-c", str(args.conns), "-d", str(args.seconds)])
    ins["cpu_us"] = (cpu_s(srv.proc.pid) - c0) * 1e6 / max(ins["requests"], 1)
    ins["db_cpu_us"] = db_us(srv, d0, ins["requests"])
    row["insert"] = ins
    row["rss_load_kib"] = bg.rss_kib(srv.proc.pid)
    settle(srv)
    row["page"] = pages(srv, keys, args, rnd)
    row["scan"] = scan(srv, keys, args)
    if not binary and srv.backend != "memory":
        row["restart_s"] = restart(srv, keys, rnd)
        row["rss_idle_kib"] = bg.rss_kib(srv.proc.pid)


def one_backend(backend, args, rnd):
    tmp = tempfile.mkdtemp(prefix="scale-%s-" % backend, dir=args.dir)
    data = os.path.join(tmp, "data")
    opts, label, pg, ci = [], backend, None, None
    if backend == "postgres":
        sys.path.insert(0, os.path.join(HERE, "..", "integration"))
        import pg_harness
        # as root the harness runs PostgreSQL as nobody, in a directory
        # of its own inside this one, which mkdtemp made private
        os.chmod(tmp, 0o755)
        tempfile.tempdir = tmp
        pg = pg_harness.PgServer(settings={"fsync": "on" if args.pg_fsync else "off",
                                           "shared_buffers": "1GB"})
        pg.create()
        tempfile.tempdir = None
        ci = pg.new_db("scale")
        opts = ["conninfo=" + ci]
        label = "postgres (fsync %s)" % ("on" if args.pg_fsync else "off")
    srv = Server(backend, data, opts)
    srv.db = pg
    rows = []
    try:
        srv.start()
        st, _, b = srv.request("POST", "/Tables", '{"TableName":"%s"}' % TABLE)
        if st != 201:
            raise RuntimeError("create table: %d %r" % (st, b[:200]))
        keys, loaded = Keys(args.conns), 0
        for step, size in enumerate(args.sizes):
            # (the inserts measured at the size before count: a step
            # smaller than they made it loads nothing)
            batches = max(0, (size - loaded) // 100)
            prefix = "s%d" % step
            t0 = time.monotonic()
            if batches:
                bench_insert(srv.port, args, prefix,
                             ["-c", str(args.conns), "-b", "100", "-n", str(batches)])
            load_s = time.monotonic() - t0
            keys.add(prefix, batches)
            loaded += batches * 100
            row = {"backend": label, "entities": loaded,
                   "load_eps": batches * 100 / load_s if batches else None,
                   "load_s": load_s, "settle_s": settle(srv)}
            builds = [("", None)]
            if args.base and backend != "memory":
                # the old build first, then this one, which loads the next step
                builds = [(" base", args.base), ("", TABLED)]
            for tag, binary in builds:
                r = row if not tag else dict(row, backend=label + tag)
                measure(srv, keys, args, tmp, rnd, r, binary)
                loaded += r["insert"]["requests"]
                if tag:
                    r["disk_bytes"] = du_bytes(data) if not pg else None
                    rows.append(r)
                    print_row(r)
            if pg:
                row["disk_bytes"] = int(pg.psql("SELECT pg_database_size(current_database())",
                                                dbname=ci.split("dbname=")[1].split()[0])
                                        .strip())
            elif backend != "memory":
                row["disk_bytes"] = du_bytes(data)
            rows.append(row)
            print_row(row)
    finally:
        srv.stop()
        if pg:
            pg.cleanup()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return rows


MEASURES = [  # (name, unit, getter)
    ("load", "entities/s", lambda r: r["load_eps"]),
    ("GET", "req/s", lambda r: r["get"]["rps"]),
    ("GET CPU", "us/req", lambda r: r["get"]["cpu_us"]),
    ("GET DB CPU", "us/req", lambda r: r["get"].get("db_cpu_us")),
    ("GET p99", "ms", lambda r: r["get"]["p99_ms"]),
    ("GET faults", "/req", lambda r: r["get"]["faults"]),
    ("GET warm", "req/s", lambda r: r["get_warm"]["rps"]),
    ("GET warm CPU", "us/req", lambda r: r["get_warm"]["cpu_us"]),
    ("GET warm DB CPU", "us/req", lambda r: r["get_warm"].get("db_cpu_us")),
    ("GET warm p99", "ms", lambda r: r["get_warm"]["p99_ms"]),
    ("insert", "req/s", lambda r: r["insert"]["rps"]),
    ("insert CPU", "us/req", lambda r: r["insert"]["cpu_us"]),
    ("insert DB CPU", "us/req", lambda r: r["insert"].get("db_cpu_us")),
    ("insert p99", "ms", lambda r: r["insert"]["p99_ms"]),
    ("page CPU", "ms", lambda r: r["page"]["cpu_ms"]),
    ("page wall", "ms", lambda r: r["page"]["wall_ms"]),
    ("scan CPU", "ms", lambda r: r["scan"]["cpu_ms"]),
    ("restart", "s", lambda r: r.get("restart_s")),
    ("RSS idle", "MiB", lambda r: r["rss_idle_kib"] / 1024 if "rss_idle_kib" in r else None),
    ("RSS load", "MiB", lambda r: r["rss_load_kib"] / 1024),
    ("disk", "bytes/entity", lambda r: r["disk_bytes"] / r["entities"]
     if r.get("disk_bytes") else None),
]


def fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return "{:,.0f}".format(v)
    if v >= 10:
        return "%.1f" % v
    return "%.2f" % v if v >= 1 or v == 0 else "%.3f" % v


def print_row(r):
    print("# %s at %s entities (load %.0f s, then idle after %.0f s): %s" % (
        r["backend"], "{:,}".format(r["entities"]), r["load_s"], r["settle_s"],
        "; ".join("%s %s %s" % (n, fmt(g(r)), u) for n, u, g in MEASURES
                  if g(r) is not None or not n.endswith("DB CPU"))), flush=True)


def print_table(rows):
    by = {}
    for r in rows:
        by.setdefault(r["backend"], []).append(r)
    for backend, rs in by.items():
        sizes = ["{:,}".format(r["entities"]) for r in rs]
        head = ["measure", "unit"] + sizes + ["growth %d->%d" % (i + 1, i + 2)
                                              for i in range(len(rs) - 1)]
        print("\n%s\n| %s |\n|%s" % (backend, " | ".join(head), "---|" * len(head)))
        for n, u, g in MEASURES:
            vals = [g(r) for r in rs]
            if n.endswith("DB CPU") and all(v is None for v in vals):
                continue  # a backend without a database server of its own
            grow = ["%.2fx" % (b / a) if a and b is not None else "-"
                    for a, b in zip(vals, vals[1:])]
            print("| %s | %s | %s |" % (n, u, " | ".join([fmt(v) for v in vals] + grow)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="scratch directory for the data")
    ap.add_argument("--sizes", default="100000,1000000,10000000")
    ap.add_argument("--backends", default="memory,leveldb,flatfile")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--scans", type=int, default=5)
    ap.add_argument("--value", type=int, default=1000)
    ap.add_argument("--pg-fsync", action="store_true", help="PostgreSQL with fsync on")
    ap.add_argument("--base", help="an older tabled measured on the same data at each size, "
                    "alternating with this one (not for memory)")
    ap.add_argument("--keep", action="store_true", help="keep the data in --dir")
    ap.add_argument("--json", help="write every row to this file")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    args.sizes = sorted(int(s) for s in args.sizes.split(","))
    if args.sizes[0] < 100 * args.conns * 4:
        ap.error("the smallest size must be at least %d (400 per connection)"
                 % (100 * args.conns * 4))
    os.makedirs(args.dir, exist_ok=True)
    os.chmod(args.dir, 0o755)
    for tool in (TABLED, BENCH_INSERT):
        if not os.access(tool, os.X_OK):
            sys.exit("bench_scale.py: %s not built (make %s)" % (tool, os.path.basename(tool)))
    if not shutil.which("wrk"):
        sys.exit("bench_scale.py: wrk not found (apt-get install wrk)")
    rnd = random.Random(args.seed)
    rows, t0 = [], time.monotonic()
    cpu = open("/proc/cpuinfo").read()
    model = re.search(r"model name\s*:\s*(.*)", cpu)
    print("# %s, %d cores, %s; sizes %s; %d connections, %d s per run"
          % (model.group(1) if model else "?", os.cpu_count(), time.strftime("%Y-%m-%d"),
             args.sizes, args.conns, args.seconds), flush=True)
    for b in args.backends.split(","):
        rows += one_backend(b, args, rnd)
    print_table(rows)
    print("\nwhole run: %.0f s" % (time.monotonic() - t0))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
