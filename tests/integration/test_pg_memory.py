#!/usr/bin/python3
"""test_pg_memory.py - a front end's resident memory does not grow with the
data on the postgres backend (all data lives in the database).

Loads --entities entities (default 200,000) of ~1 KiB through one tabled
on the postgres backend (a private PostgreSQL, tests/integration/
pg_harness.py) in $batch changesets of 100 inserts (tests/bench/
bench_insert, 8 connections), and checks that the server's resident memory
(VmRSS) grew by less than --bound MiB (default 8; 4 times that in a
sanitizer build, whose quarantine holds freed memory for a while) between
the end of a warm-up load of 10% of the entities and the end, while the
store grew by hundreds of MiB. The same load of a tenth of the entities on
the memory backend, which keeps everything in the process, is measured first: its
growth per entity (about 1 KiB) shows that the measurement sees data kept
in memory, and postgres must grow at least 20 times less per entity.
Skipped (TAP) when tabled has no postgres backend or the PostgreSQL server
binaries are missing.

  test_pg_memory.py [--entities N] [--bound MIB]

TABLED and TOP_BUILDDIR as under make check; BENCH_INSERT names the load
generator (default tests/bench/bench_insert of the build tree).
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pg_harness  # noqa: E402
import tabled_harness as h  # noqa: E402

TOP = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
BENCH_INSERT = os.environ.get("BENCH_INSERT") or os.path.join(TOP, "tests", "bench",
                                                              "bench_insert")


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return 0


def is_sanitized(pid):
    """1 when the server runs with AddressSanitizer (its quarantine keeps
    freed memory for a while, up to a bound: more noise in VmRSS)."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            return "libasan" in f.read()
    except OSError:
        return False


def load(srv, entities, tag):
    """Inserts entities in batches of 100 through srv; None or an error."""
    p = subprocess.run([BENCH_INSERT, "-p", str(srv.port), "-c", "8", "-b", "100",
                        "-n", str(max(1, entities // 100)), "-s", "1000", "-w", "-k", tag],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    return None if p.returncode == 0 else p.stdout.decode("utf-8", "replace")[-800:]


def small_quarantine():
    """In a sanitizer build ASan keeps up to 256 MiB of freed memory in its
    quarantine, which would show as growth: the servers here get a small
    one (the option is ignored by a normal build)."""
    opts = os.environ.get("ASAN_OPTIONS", "abort_on_error=0:detect_leaks=1")
    os.environ["ASAN_OPTIONS"] = opts + ":quarantine_size_mb=4:thread_local_quarantine_size_kb=64"


def measure(tap, label, args, entities):
    """Warm-up load, then the rest; returns (KiB grown, entities) or None."""
    with h.Server(args=["--auth", "off"] + args, backend=label) as srv:
        http = h.Http(srv)
        r = http.request("POST", "/Tables", body={"TableName": "bench"})
        if not tap.ok(r.status == 201, "[%s] create table" % label, repr(r)):
            return None
        warm = entities // 10
        err = load(srv, warm, "warm")
        if not tap.ok(err is None, "[%s] warm-up load of %d entities" % (label, warm), err):
            return None
        sanitized = is_sanitized(srv.proc.pid)
        before = rss_kib(srv.proc.pid)
        err = load(srv, entities - warm, "main")
        after = rss_kib(srv.proc.pid)
        tap.ok(err is None, "[%s] load of %d more entities" % (label, entities - warm), err)
        n = (entities - warm) // 100 * 100
        tap.diag("[%s] VmRSS %d KiB -> %d KiB over %d entities: %.0f bytes per entity"
                 % (label, before, after, n, (after - before) * 1024.0 / n))
        return after - before, n, sanitized


def main():
    small_quarantine()
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=200000)
    ap.add_argument("--bound", type=int, default=8, help="MiB")
    a = ap.parse_args()
    tap = h.Tap()
    reason = pg_harness.skip_reason(TOP)
    if reason:
        print("1..0 # SKIP " + reason)
        return
    if not os.access(BENCH_INSERT, os.X_OK):
        tap.ok(False, "the load generator is built: %s" % BENCH_INSERT)
        tap.done()
    mem = measure(tap, "memory", [], a.entities // 10)
    pg = pg_harness.PgServer().create()
    try:
        ci = pg.new_db("memory")
        got = measure(tap, "postgres", ["--backend-option", "conninfo=" + ci], a.entities)
        size = pg.psql("SELECT pg_database_size(current_database())",
                       ci.split("dbname=")[1]).strip()
        tap.diag("[postgres] the database holds %s MiB" % (int(size) // (1 << 20)))
    finally:
        pg.cleanup()
    if mem and got:
        per_mem = mem[0] * 1024.0 / mem[1]
        per_pg = got[0] * 1024.0 / got[1]
        tap.ok(per_mem > 500, "[memory] the measurement sees data kept in the process "
               "(%.0f bytes per entity)" % per_mem)
        bound = a.bound * (4 if got[2] else 1)
        tap.ok(got[0] < bound * 1024,
               "[postgres] the front end's VmRSS grew by %d KiB (< %d MiB%s) over %d entities"
               % (got[0], bound, ", sanitizer build" if got[2] else "", got[1]))
        tap.ok(per_pg * 20 < per_mem,
               "[postgres] it grows at least 20 times less per entity than the memory backend "
               "(%.1f vs %.0f bytes)" % (per_pg, per_mem))
    tap.done()


if __name__ == "__main__":
    main()
