#!/usr/bin/python3
"""bench_postgres.py - tabled on PostgreSQL through one and two front ends,
beside the leveldb backend, in the same run (make bench-postgres).

Configurations (every one with --auth off --access-log off):

  leveldb       one ./tabled --backend leveldb --durability none
  postgres-1    one ./tabled --backend postgres on the private PostgreSQL
  postgres-2    two ./tabled processes (different ports) on that same
                database; the client splits its connections between them

The PostgreSQL server is a private one (tests/integration/pg_harness.py:
initdb in a temporary directory, unix socket, fsync=off), so neither
backend waits for the disk (--fsync on: a second server with fsync=on and
synchronous_commit=on, reported under its own label). Workloads, each
for --seconds per round:

  get      wrk, --conns keep-alive connections in all, replaying the GET of
           one ~1 KiB entity
  insert   single-entity inserts (tests/bench/bench_insert), --conns
           connections in all
  upsert   single Insert Or Replace (bench_insert -m upsert -r 4: keys
           repeat every 4 requests, so 3 of 4 replace an entity)
  merge    single Insert Or Merge (-m merge -r 4)
  delete   single Delete Entity with If-Match: * (bench_insert -m delete)
           of entities a $batch fill made before the meter starts
  page     wrk replaying a Query Entities of one partition that returns
           1,000 entities (~1 KiB each) per request
  batch    $batch changesets of 100 inserts (bench_insert -b 100)
  bupsert  $batch changesets of 100 Insert Or Replace (bench_insert -b 100
           -m upsert -r 4: each connection's keys repeat every 4 requests,
           so 3 of 4 changesets rewrite entities that exist)
  bmerge   the same with Insert Or Merge (-m merge -r 4)

For each it prints the median of --rounds rounds (min-max), the CPU per
operation (an entity for the changeset workloads, a request otherwise) of
the tabled processes and of the PostgreSQL server in microseconds (median
over the rounds), and over the median round: the CPU the tabled
processes, the PostgreSQL server processes
(postmaster and its children, /proc/PID/stat utime+stime, exited children
through the postmaster's cutime+cstime) and the load generators used, in
cores (CPU seconds per second), and the voluntary context switches of the
PostgreSQL processes per request (/proc/PID/status): a connection's
server process answers one round trip from tabled and then sleeps until
the next one arrives (tabled keeps one call in flight per connection), so
this counts the round trips per request, plus any other waits (locks,
WAL), i.e. it bounds them from above. Then, with --memory N (default 200000; 0 skips it), the
resident-memory check of tests/integration/test_pg_memory.py at that size.

  bench_postgres.py [--seconds S] [--conns C] [--rounds R] [--pool-size N]
                    [--configs leveldb,postgres-1,postgres-2] [--memory N]
                    [--workloads get,insert,upsert,merge,delete,page,batch,
                                 bupsert,bmerge]
                    [--base BINARY] [--fsync off,on]

--base BINARY runs every workload against that binary too (a baseline
build, e.g. of main), alternating the two binaries within each round, and
prints both and the ratio of PostgreSQL CPU per operation (this build's
over the baseline's: below 1 is fewer database cycles).

TABLED names the binary (default ./tabled of the build tree), BENCH_INSERT
the load generator (default tests/bench/bench_insert there).
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import bench_get as bg  # noqa: E402
import pg_harness  # noqa: E402

TOP = bg.TOP
BENCH_INSERT = os.environ.get("BENCH_INSERT") or os.path.join(TOP, "tests", "bench",
                                                              "bench_insert")
HZ = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid, children=False):
    """CPU seconds of pid (utime+stime; with children, cutime+cstime too)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except OSError:
        return 0.0
    fields = st[st.rindex(")") + 2:].split()
    t = int(fields[11]) + int(fields[12])
    if children:
        t += int(fields[13]) + int(fields[14])
    return t / HZ


def proc_wakeups(pid):
    """Voluntary context switches of pid (it slept waiting for something)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for ln in f:
                if ln.startswith("voluntary_ctxt_switches:"):
                    return int(ln.split()[1])
    except OSError:
        pass
    return 0


class Meter:
    """CPU of the front ends, the database and the load generators, and
    the database processes' waits, between start() and stop()."""

    def __init__(self, fronts, pg):
        self.fronts, self.pg = fronts, pg

    def sample(self):
        pg_pids = self.pg.backend_pids() if self.pg else []
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {"t": time.monotonic(),
                "tabled": sum(proc_cpu(f.p.pid) for f in self.fronts),
                "pg": sum(proc_cpu(p, children=(i == 0)) for i, p in enumerate(pg_pids)),
                "pg_wakeups": {p: proc_wakeups(p) for p in pg_pids},
                "client": ch.ru_utime + ch.ru_stime}

    def start(self):
        self.a = self.sample()

    def stop(self):
        b = self.sample()
        wall = b["t"] - self.a["t"]
        return {"tabled": (b["tabled"] - self.a["tabled"]) / wall,
                "pg": (b["pg"] - self.a["pg"]) / wall,
                "client": (b["client"] - self.a["client"]) / wall,
                # processes present at both samples only: a connection's
                # process that ended (or began) in between took its count
                # with it
                "pg_wakeups": sum(n - self.a["pg_wakeups"][p]
                                  for p, n in b["pg_wakeups"].items()
                                  if p in self.a["pg_wakeups"])}


PAGE_PATH = "/page()?$filter=PartitionKey%20eq%20'pgc0000'&$top=1000"


def prepare(port, page):
    """Table "bench" and the entity the GETs read; with page, table "page"
    with the 1,000 entities of partition pgc0000 the page workload reads."""
    if bg.call(port, "POST", "/Tables", {"TableName": "bench"}) not in (201, 204):
        raise RuntimeError("create table failed")
    ent = {"PartitionKey": "p", "RowKey": "r", "Data": "x" * 1000}
    if bg.call(port, "PUT", bg.ENTITY_PATH, ent) not in (200, 204):
        raise RuntimeError("insert of the GET entity failed")
    if page:
        if bg.call(port, "POST", "/Tables", {"TableName": "page"}) not in (201, 204):
            raise RuntimeError("create table page failed")
        run_bench_insert(port, ["-c", "1", "-n", "10", "-b", "100", "-t", "page", "-k", "pg"])


def run_bench_insert(port, args):
    """bench_insert against port; (entities/s, requests)."""
    argv = [BENCH_INSERT, "-p", str(port), "-s", "1000"] + list(args)
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    m = re.search(r"requests (\d+) in ([\d.]+) s: ([\d.]+) requests/s, ([\d.]+) entities/s",
                  p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError("bench_insert failed: %s" % p.stdout[-1500:])
    return float(m.group(4)), int(m.group(1))


def start_fronts(cfg, n, tmp, pg, pool, binary=None, page=False):
    """n tabled processes for a configuration on a fresh store, the table
    created through the first before the others start."""
    fronts = []
    if cfg == "leveldb":
        p = bg.tabled_proc(False, "leveldb", tempfile.mkdtemp(dir=tmp), "leveldb")
        if binary:
            p.argv[0] = binary
        fronts.append(p.start())
        prepare(p.port, page)
        return fronts
    ci = pg.new_db("bench")
    for i in range(n):
        port = bg.free_port()
        argv = [binary or bg.TABLED, "--port", str(port), "--backend", "postgres",
                "--backend-option", "conninfo=" + ci, "--access-log", "off",
                "--log-level", "warn", "--auth", "off", "--data",
                tempfile.mkdtemp(dir=tmp)]
        if pool:
            argv += ["--backend-option", "pool-size=%d" % pool]
        fronts.append(bg.Proc("%s#%d" % (cfg, i + 1), argv, port).start())
        if i == 0:
            prepare(port, page)
    return fronts


def split(total, n):
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


def run_parallel(fns):
    """Runs the functions in threads at once; returns their results."""
    out = [None] * len(fns)
    errs = []

    def one(i, fn):
        try:
            out[i] = fn()
        except Exception as e:      # reported by the caller
            errs.append(e)
    ts = [threading.Thread(target=one, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        raise errs[0]
    return out


def wrk_path(port, seconds, conns, path):
    """One wrk run of GET path (--auth off: no signature); (req/s, non-2xx)."""
    argv = ["wrk", "-t1", "-c%d" % conns, "-d%ds" % seconds,
            "-H", "x-ms-version: %s" % bg.VERSION,
            "-H", "Accept: application/json;odata=nometadata",
            "http://127.0.0.1:%d/%s%s" % (port, bg.ACCOUNT, path)]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout
    m = re.search(r"Requests/sec:\s*([\d.]+)", out)
    if not m:
        raise RuntimeError("wrk output not understood:\n" + out)
    bad = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    return float(m.group(1)), 0, 0, int(bad.group(1)) if bad else 0


def bench_get(fronts, a, path=None):
    """GETs (the point GET, or path) through every front end at once;
    requests/s, requests."""
    res = run_parallel([lambda f=f, c=c: (wrk_path(f.port, a.seconds, c, path) if path
                                          else bg.wrk(f.port, a.seconds, c))
                        for f, c in zip(fronts, split(a.conns, len(fronts)))])
    bad = sum(r[3] for r in res)
    if bad:
        raise RuntimeError("%d non-2xx answers to the GET" % bad)
    rps = sum(r[0] for r in res)
    return rps, rps * a.seconds


def bench_insert(fronts, a, batch, tag, extra=()):
    """bench_insert on every front end at once; (entities/s, requests).
    extra: more bench_insert arguments (-m upsert -r 4)."""
    def one(f, c, i):
        argv = ["-c", str(c), "-d", str(a.seconds), "-k", "%s%d-" % (tag, i)] + list(extra)
        if batch:
            argv += ["-b", str(batch)]
        return run_bench_insert(f.port, argv)
    res = run_parallel([lambda f=f, c=c, i=i: one(f, c, i)
                        for i, (f, c) in enumerate(zip(fronts, split(a.conns, len(fronts))))])
    return sum(r[0] for r in res), sum(r[1] for r in res)


# bench_insert arguments of the workloads beyond inserts.
WORKLOAD_ARGS = {"bupsert": ("-m", "upsert", "-r", "4"), "bmerge": ("-m", "merge", "-r", "4"),
                 "upsert": ("-m", "upsert", "-r", "4"), "merge": ("-m", "merge", "-r", "4")}
WORKLOADS = ("get", "insert", "upsert", "merge", "delete", "page", "batch", "bupsert", "bmerge")
BATCHED = ("batch", "bupsert", "bmerge")
DELETE_RATE = 1000      # deletes per second per connection the fill provides for, at most


def bench_delete(fronts, a, tag):
    """Fills every front end's connections' keys with changesets (not
    metered), then deletes them; returns a function running the deletes."""
    per = -(-a.seconds * DELETE_RATE // 100)        # changesets per connection
    conns = split(a.conns, len(fronts))
    run_parallel([lambda f=f, c=c, i=i: run_bench_insert(
        f.port, ["-c", str(c), "-N", str(per), "-b", "100", "-k", "%s%d-" % (tag, i)])
        for i, (f, c) in enumerate(zip(fronts, conns))])

    def go():
        res = run_parallel([lambda f=f, c=c, i=i: run_bench_insert(
            f.port, ["-c", str(c), "-d", str(a.seconds), "-N", str(per * 100),
                     "-m", "delete", "-k", "%s%d-" % (tag, i)])
            for i, (f, c) in enumerate(zip(fronts, conns))])
        return sum(r[0] for r in res), sum(r[1] for r in res)
    return go


def one_round(cfg, a, pg, tmp, rnd, binary=None):
    """The workloads on a fresh store; {workload: (rate, meter)}."""
    n = 2 if cfg == "postgres-2" else 1
    fronts = start_fronts(cfg, n, tmp, pg if cfg != "leveldb" else None, a.pool_size, binary,
                          "page" in a.workloads)
    out = {}
    try:
        for wl in a.workloads:
            tag = "r%d%s" % (rnd, wl)
            go = bench_delete(fronts, a, tag) if wl == "delete" else None
            m = Meter(fronts, pg if cfg != "leveldb" else None)
            m.start()
            if wl == "get":
                rate, reqs = bench_get(fronts, a)
            elif wl == "page":
                rate, reqs = bench_get(fronts, a, PAGE_PATH)
            elif go:
                rate, reqs = go()
            else:
                rate, reqs = bench_insert(fronts, a, 100 if wl in BATCHED else 0, tag,
                                          WORKLOAD_ARGS.get(wl, ()))
            u = m.stop()
            u["per_req"] = u.pop("pg_wakeups") / reqs if reqs else 0
            out[wl] = (rate, u)
    finally:
        for f in fronts:
            f.stop()
    return out


def per_op_us(rate, u, key):
    """CPU microseconds per operation of u[key] (cores) at rate ops/s."""
    return u[key] * 1e6 / rate if rate else 0.0


def report(results, runs, a):
    """The table of every (binary, durability, config) run and, with a
    baseline, the ratios of database CPU per operation."""
    print()
    print("%d connections in all, %d s per run, %d rounds, median [min-max]; CPU per operation "
          "in microseconds (median over the rounds); CPU in cores over the median round"
          % (a.conns, a.seconds, a.rounds))
    print("%-8s %-5s %-10s %-7s %-24s %8s %8s %6s %6s %6s" % (
        "binary", "fsync", "config", "load", "rate", "tabled/op", "pg/op", "tabled", "pg",
        "waits"))
    units = {wl: "req/s" for wl in WORKLOADS}
    for wl in ("insert", "upsert", "merge", "delete") + BATCHED:
        units[wl] = "ent/s"
    med_pg = {}
    for key in runs:
        b, fs, c = key
        for wl in a.workloads:
            rows = sorted(results[key], key=lambda x: x[wl][0])
            vals = [x[wl][0] for x in rows]
            med = rows[len(rows) // 2][wl]
            u = med[1]
            t_op = statistics.median(per_op_us(x[wl][0], x[wl][1], "tabled") for x in rows)
            p_op = statistics.median(per_op_us(x[wl][0], x[wl][1], "pg") for x in rows)
            med_pg[(b, fs, c, wl)] = p_op
            print("%-8s %-5s %-10s %-7s %-24s %8.1f %8s %6.2f %6.2f %6s" % (
                b, fs, c, wl, "%.0f [%.0f-%.0f] %s" % (statistics.median(vals), vals[0],
                                                       vals[-1], units[wl]),
                t_op, "%.1f" % p_op if c != "leveldb" else "-", u["tabled"], u["pg"],
                "%.2f" % u["per_req"] if c != "leveldb" else "-"))
    if a.base:
        print()
        print("PostgreSQL CPU per operation, this build over the baseline (%s)" % a.base)
        print("%-5s %-10s %-7s %10s %10s %7s" % ("fsync", "config", "load", "base us",
                                                 "this us", "ratio"))
        for fs in a.fsync:
            for c in a.configs:
                if c == "leveldb":
                    continue
                for wl in a.workloads:
                    bv, tv = med_pg[("base", fs, c, wl)], med_pg[("this", fs, c, wl)]
                    print("%-5s %-10s %-7s %10.1f %10.1f %7.2f" % (
                        fs, c, wl, bv, tv, tv / bv if bv else 0))
    print(json.dumps({"/".join(k): [{wl: v[0] for wl, v in r.items()} for r in results[k]]
                      for k in runs}))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pool-size", type=int, default=0,
                    help="pool-size of each front end (0: the backend's default)")
    ap.add_argument("--configs", default="leveldb,postgres-1,postgres-2")
    ap.add_argument("--memory", type=int, default=200000,
                    help="entities for the resident-memory check (0: skip)")
    ap.add_argument("--workloads", default="get,page,insert,upsert,merge,delete,batch")
    ap.add_argument("--base", default="",
                    help="a baseline tabled binary run in the same rounds")
    ap.add_argument("--fsync", default="off",
                    help="off, on or off,on: the database without or with fsync=on and "
                         "synchronous_commit=on")
    a = ap.parse_args()
    a.workloads = a.workloads.split(",")
    a.configs = a.configs.split(",")
    a.fsync = a.fsync.split(",")
    if any(wl not in WORKLOADS for wl in a.workloads):
        sys.exit("bench_postgres.py: workloads are " + ",".join(WORKLOADS))
    if any(f not in ("off", "on") for f in a.fsync):
        sys.exit("bench_postgres.py: --fsync takes off, on or off,on")
    if a.base and not os.access(a.base, os.X_OK):
        sys.exit("bench_postgres.py: --base %s is not an executable" % a.base)
    for tool in ("wrk",):
        if not shutil.which(tool):
            sys.exit("bench_postgres.py: %s not found" % tool)
    if not os.access(BENCH_INSERT, os.X_OK):
        sys.exit("bench_postgres.py: %s not built (make tests/bench/bench_insert)" % BENCH_INSERT)
    reason = pg_harness.skip_reason()
    if reason:
        sys.exit("bench_postgres.py: " + reason)
    tmp = tempfile.mkdtemp(prefix="tabled-benchpg-")
    servers = {}
    binaries = [("this", None)] + ([("base", a.base)] if a.base else [])
    runs = [(b, fs, c) for fs in a.fsync for c in a.configs for b, _ in binaries
            if not (c == "leveldb" and fs == "on")]
    results = {k: [] for k in runs}
    try:
        for fs in a.fsync:
            settings = {"fsync": "on", "synchronous_commit": "on"} if fs == "on" else {}
            servers[fs] = pg_harness.PgServer(settings=settings).create()
        for r in range(a.rounds):
            # alternate configurations and binaries, so machine noise hits
            # all alike (the baseline first in odd rounds)
            order = binaries if r % 2 == 0 else binaries[::-1]
            for fs in a.fsync:
                for c in a.configs:
                    for b, path in order:
                        if (b, fs, c) not in results:
                            continue
                        results[(b, fs, c)].append(one_round(c, a, servers[fs], tmp, r, path))
                        print("# round %d %s fsync=%s %s: %s" % (r + 1, b, fs, c, ", ".join(
                            "%s %.0f" % (wl, v[0]) for wl, v in
                            results[(b, fs, c)][-1].items())), flush=True)
    finally:
        for pg in servers.values():
            pg.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    report(results, runs, a)
    if a.memory:
        mem = os.path.join(HERE, "..", "integration", "test_pg_memory.py")
        rc = subprocess.call([mem, "--entities", str(a.memory)])
        sys.exit(rc)


if __name__ == "__main__":
    main()
