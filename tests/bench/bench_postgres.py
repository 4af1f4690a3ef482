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
backend waits for the disk. Workloads, each for --seconds per round:

  get      wrk, --conns keep-alive connections in all, replaying the GET of
           one ~1 KiB entity
  insert   single-entity inserts (tests/bench/bench_insert), --conns
           connections in all
  batch    $batch changesets of 100 inserts (bench_insert -b 100)
  bupsert  $batch changesets of 100 Insert Or Replace (bench_insert -b 100
           -m upsert -r 4: each connection's keys repeat every 4 requests,
           so 3 of 4 changesets rewrite entities that exist)
  bmerge   the same with Insert Or Merge (-m merge -r 4)

For each it prints the median of --rounds rounds (min-max), and over the
median round: the CPU the tabled processes, the PostgreSQL server processes
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
                    [--workloads get,insert,batch,bupsert,bmerge]

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
                "pg_wakeups": sum(proc_wakeups(p) for p in pg_pids),
                "client": ch.ru_utime + ch.ru_stime}

    def start(self):
        self.a = self.sample()

    def stop(self):
        b = self.sample()
        wall = b["t"] - self.a["t"]
        return {"tabled": (b["tabled"] - self.a["tabled"]) / wall,
                "pg": (b["pg"] - self.a["pg"]) / wall,
                "client": (b["client"] - self.a["client"]) / wall,
                "pg_wakeups": b["pg_wakeups"] - self.a["pg_wakeups"]}


def prepare(port):
    """Table "bench" and the entity the GETs read."""
    if bg.call(port, "POST", "/Tables", {"TableName": "bench"}) not in (201, 204):
        raise RuntimeError("create table failed")
    ent = {"PartitionKey": "p", "RowKey": "r", "Data": "x" * 1000}
    if bg.call(port, "PUT", bg.ENTITY_PATH, ent) not in (200, 204):
        raise RuntimeError("insert of the GET entity failed")


def start_fronts(cfg, n, tmp, pg, pool):
    """n tabled processes for a configuration on a fresh store, the table
    created through the first before the others start (a front end reads
    the table catalogue at start; one created later through another front
    end is not seen yet: the multi-front-end catalogue is separate work)."""
    fronts = []
    if cfg == "leveldb":
        p = bg.tabled_proc(False, "leveldb", tempfile.mkdtemp(dir=tmp), "leveldb")
        fronts.append(p.start())
        prepare(p.port)
        return fronts
    ci = pg.new_db("bench")
    for i in range(n):
        port = bg.free_port()
        argv = [bg.TABLED, "--port", str(port), "--backend", "postgres",
                "--backend-option", "conninfo=" + ci, "--access-log", "off",
                "--log-level", "warn", "--auth", "off", "--data",
                tempfile.mkdtemp(dir=tmp)]
        if pool:
            argv += ["--backend-option", "pool-size=%d" % pool]
        fronts.append(bg.Proc("%s#%d" % (cfg, i + 1), argv, port).start())
        if i == 0:
            prepare(port)
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


def bench_get(fronts, a):
    """Point GETs through every front end at once; requests/s, requests."""
    res = run_parallel([lambda f=f, c=c: bg.wrk(f.port, a.seconds, c)
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
        argv = [BENCH_INSERT, "-p", str(f.port), "-c", str(c), "-d", str(a.seconds),
                "-s", "1000", "-k", "%s%d-" % (tag, i)] + list(extra)
        if batch:
            argv += ["-b", str(batch)]
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        m = re.search(r"requests (\d+) in ([\d.]+) s: ([\d.]+) requests/s, ([\d.]+) entities/s",
                      p.stdout)
        if p.returncode != 0 or not m:
            raise RuntimeError("bench_insert failed: %s" % p.stdout[-1500:])
        return float(m.group(4)), int(m.group(1))
    res = run_parallel([lambda f=f, c=c, i=i: one(f, c, i)
                        for i, (f, c) in enumerate(zip(fronts, split(a.conns, len(fronts))))])
    return sum(r[0] for r in res), sum(r[1] for r in res)


# bench_insert arguments of the changeset workloads beyond inserts.
WORKLOAD_ARGS = {"bupsert": ("-m", "upsert", "-r", "4"), "bmerge": ("-m", "merge", "-r", "4")}
WORKLOADS = ("get", "insert", "batch", "bupsert", "bmerge")


def one_round(cfg, a, pg, tmp, rnd):
    """The workloads on a fresh store; {workload: (rate, meter)}."""
    n = 2 if cfg == "postgres-2" else 1
    fronts = start_fronts(cfg, n, tmp, pg if cfg != "leveldb" else None, a.pool_size)
    out = {}
    try:
        for wl in a.workloads:
            m = Meter(fronts, pg if cfg != "leveldb" else None)
            m.start()
            if wl == "get":
                rate, reqs = bench_get(fronts, a)
            else:
                rate, reqs = bench_insert(fronts, a, 0 if wl == "insert" else 100,
                                          "r%d%s" % (rnd, wl), WORKLOAD_ARGS.get(wl, ()))
            u = m.stop()
            u["per_req"] = u.pop("pg_wakeups") / reqs if reqs else 0
            out[wl] = (rate, u)
    finally:
        for f in fronts:
            f.stop()
    return out


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
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    a = ap.parse_args()
    a.workloads = a.workloads.split(",")
    if any(wl not in WORKLOADS for wl in a.workloads):
        sys.exit("bench_postgres.py: workloads are " + ",".join(WORKLOADS))
    for tool in ("wrk",):
        if not shutil.which(tool):
            sys.exit("bench_postgres.py: %s not found" % tool)
    if not os.access(BENCH_INSERT, os.X_OK):
        sys.exit("bench_postgres.py: %s not built (make tests/bench/bench_insert)" % BENCH_INSERT)
    reason = pg_harness.skip_reason()
    if reason:
        sys.exit("bench_postgres.py: " + reason)
    configs = a.configs.split(",")
    tmp = tempfile.mkdtemp(prefix="tabled-benchpg-")
    pg = pg_harness.PgServer().create()
    results = {c: [] for c in configs}
    try:
        for r in range(a.rounds):
            for c in configs:      # alternate, so machine noise hits all alike
                results[c].append(one_round(c, a, pg, tmp, r))
                print("# round %d %s: %s" % (r + 1, c, ", ".join(
                    "%s %.0f" % (wl, v[0]) for wl, v in results[c][-1].items())), flush=True)
    finally:
        pg.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)

    print()
    print("tabled on PostgreSQL vs leveldb: %d connections in all, %d s per run, %d rounds, "
          "median [min-max]; CPU in cores over the median round (2 cores here)"
          % (a.conns, a.seconds, a.rounds))
    print("%-10s %-7s %-22s %7s %7s %7s %12s" % ("config", "load", "rate", "tabled", "pg",
                                                "client", "pg waits/req"))
    units = {wl: "entities/s" for wl in WORKLOADS}
    units["get"] = "req/s"
    for c in configs:
        for wl in a.workloads:
            rows = sorted(results[c], key=lambda x: x[wl][0])
            vals = [x[wl][0] for x in rows]
            med = rows[len(rows) // 2][wl]
            u = med[1]
            print("%-10s %-7s %-22s %7.2f %7.2f %7.2f %12s" % (
                c, wl, "%.0f [%.0f-%.0f] %s" % (statistics.median(vals), vals[0], vals[-1],
                                                units[wl]),
                u["tabled"], u["pg"], u["client"],
                "%.2f" % u["per_req"] if c != "leveldb" else "-"))
    print(json.dumps({c: [{wl: v[0] for wl, v in r.items()} for r in results[c]]
                      for c in configs}))
    sys.stdout.flush()
    if a.memory:
        mem = os.path.join(HERE, "..", "integration", "test_pg_memory.py")
        rc = subprocess.call([mem, "--entities", str(a.memory)])
        sys.exit(rc)


if __name__ == "__main__":
    main()
