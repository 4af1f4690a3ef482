#!/usr/bin/python3
"""test_pg_pool.py - the postgres backend's connection pool in /metrics and
the log: its size, its connections' states, calls waiting for a
connection, and a PostgreSQL server that refuses connections because its
max_connections is reached.

A private PostgreSQL (tests/integration/pg_harness.py) restarted with
max_connections=5 and superuser_reserved_connections=0; three psql
sessions hold three of its slots, so two are free. tabled --backend
postgres --backend-option pool-size=4 --admin-port 0 starts on it (its
first connection takes one slot). Then 16 threads make 20 requests each
(inserts and point reads) at once. Checked:
- every request succeeds although the pool cannot grow to its size;
- /metrics (every series labelled role="primary"; the secondary
  endpoint's replicas are role="replica", test_pg_replica.py):
  tabled_postgres_pool_size 4; connections made (idle, busy,
  held) at most 2 while the slots are taken;
  tabled_postgres_pool_waits_total > 0 (calls queued for a connection);
  tabled_postgres_connect_failures_total{cause="no_slot"} > 0;
  tabled_postgres_pool_waiting 0 once the load is over;
  tabled_postgres_reachable 1;
- the log says the server has no free connection slot and names
  max_connections and pool-size, in at most a few lines (rate-limited);
- once the psql sessions end, the same load makes the pool grow to 4
  connections.
Each check fails on a tabled without these metrics. Skipped (TAP) when
tabled has no postgres backend or the PostgreSQL server binaries are
missing. TABLED and TOP_BUILDDIR as under make check."""
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import pg_harness  # noqa: E402
import tabled_harness as h  # noqa: E402

TOP = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
SLOTS = "has no free connection slot"


def conns(m):
    """Pool connections made (idle, busy or held; not those being made)."""
    return sum(v for k, v in m.items()
               if k.startswith('tabled_postgres_pool_connections{role="primary"')
               and "connecting" not in k)


def load(srv, tag, threads=16, each=20):
    """threads threads, each inserting and reading back each entities on
    its own keep-alive connection; returns the failures (list of text)."""
    http = h.Http(srv)
    fails = []

    def run(t):
        try:
            c = http.connect(timeout=60)
            for i in range(each):
                pk, rk = "%s-%d" % (tag, t), "r%d" % i
                r = c.request("POST", "/pool", body={"PartitionKey": pk, "RowKey": rk, "n": i},
                              headers={"Prefer": "return-no-content"})
                if r.status != 204:
                    fails.append("insert %s/%s: %d %s" % (pk, rk, r.status, r.body[:200]))
                r = c.request("GET", http.entity_path("pool", pk, rk))
                if r.status != 200:
                    fails.append("get %s/%s: %d %s" % (pk, rk, r.status, r.body[:200]))
        except Exception as e:  # noqa: BLE001 - reported as a failure
            fails.append("thread %d: %r" % (t, e))

    ts = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(300)
    return fails


def main():
    tap = h.Tap()
    tabled = h.tabled_path()
    why = pg_harness.skip_reason(TOP)
    if not why:
        hp = subprocess.run([tabled, "--backend", "postgres", "--help"], capture_output=True)
        if b"pool-size" not in hp.stdout + hp.stderr:
            why = "this tabled was built without the postgres backend (libpq)"
    if why:
        print("1..0 # SKIP %s" % why)
        return
    h.watchdog(600, tap=tap)
    pg = pg_harness.PgServer()
    pg.create()
    sleepers, srv = [], None
    try:
        ci = pg.new_db("pool")
        pg.restart_with(max_connections=5, superuser_reserved_connections=0,
                        client_connection_check_interval=500)
        sleepers = pg.hold_connections(3)
        def n():
            """psql sessions sleeping (-1 while no slot is free to ask)."""
            try:
                return int(pg.psql("SELECT count(*) FROM pg_stat_activity "
                                   "WHERE query LIKE 'SELECT pg_sleep%'").strip() or 0)
            except pg_harness.PgError:
                return -1
        tap.ok(h.wait_for(lambda: n() >= 3, 60), "three psql sessions hold three of five slots")
        srv = h.Server(args=["--admin-port", "0", "--backend-option", "conninfo=" + ci,
                             "--backend-option", "pool-size=4"], backend="postgres",
                       ready_timeout=120)
        srv.start()
        port = h.admin_port(srv)
        r = h.Http(srv).create_table("pool")
        tap.eq(r.status, 201, "create the table")
        fails = load(srv, "a")
        tap.ok(not fails, "16 concurrent clients: every request succeeds with two slots",
               "\n".join(fails[:5]))
        m = h.metric_series(port, "tabled_postgres_")
        tap.eq(m.get('tabled_postgres_pool_size{role="primary"}'), 4.0, "tabled_postgres_pool_size is pool-size")
        tap.ok(0 < conns(m) <= 2, "at most two connections while three of five slots are "
               "taken", repr(m))
        tap.ok(m.get('tabled_postgres_pool_waits_total{role="primary"}', 0) > 0,
               "tabled_postgres_pool_waits_total counts calls that queued", repr(m))
        tap.ok(m.get('tabled_postgres_connect_failures_total{role="primary",cause="no_slot"}', 0) > 0,
               "tabled_postgres_connect_failures_total{cause=\"no_slot\"} counts the refusals",
               repr(m))
        tap.eq(m.get('tabled_postgres_pool_waiting{role="primary"}'), 0.0, "nothing waits once the load is over")
        tap.eq(m.get('tabled_postgres_reachable{role="primary"}'), 1.0, "tabled_postgres_reachable 1")
        text = srv.stderr_text()
        lines = [ln for ln in text.splitlines() if SLOTS in ln]
        tap.ok(lines and "max_connections" in lines[0] and "pool-size" in lines[0],
               "the log says there is no free connection slot, naming max_connections and "
               "pool-size", text[-1500:])
        tap.ok(len(lines) <= 5, "and says it in a few lines, not once per attempt (%d)"
               % len(lines), text[-1500:])
        for s in sleepers:
            s.kill()
            s.wait(10)
        tap.ok(h.wait_for(lambda: n() == 0, 60), "the psql sessions ended")

        def grown():
            if load(srv, "b%d" % time.monotonic_ns(), threads=16, each=3):
                return False
            return conns(h.metric_series(port, "tabled_postgres_")) == 4
        tap.ok(h.wait_for(grown, 60), "with free slots the pool grows to pool-size (4)",
               repr(h.metric_series(port, "tabled_postgres_")))
        srv.stop_and_check(tap)
        srv = None
    finally:
        for s in sleepers:
            if s.poll() is None:
                s.kill()
                s.wait(10)
        if srv is not None:
            srv.kill()
        pg.cleanup()
    tap.done()


if __name__ == "__main__":
    main()
