#!/usr/bin/python3
"""test_pg_startup.py - a front end started while its PostgreSQL is down
waits for it instead of exiting.

A private PostgreSQL (tests/integration/pg_harness.py) gets a database and
is stopped; tabled --backend postgres --admin-port 0 is started on that
database. Checked while the database is down: tabled keeps running (no
exit), its log names the server and says it refuses connections, and the
same failure repeated is not logged once per attempt (at most 3 such lines
in the first seconds), the admin listener is open and /healthz answers
503 naming the reason, and a second front end waiting the same way stops
at once on SIGTERM (status 0). Then PostgreSQL is started again: tabled prints its
ready line within a generous bound, /healthz answers 200 and a lifecycle
through the Python SDK (azure-data-tables: create a table, insert an entity,
read it back) works. Then the same server with max_connections=5 and every
slot taken by psql sessions: a new tabled says there is no free connection
slot (naming max_connections and pool-size), waits, and serves once the
sessions end. Skipped (TAP) when tabled has no postgres backend or
the PostgreSQL server binaries are missing. First, a malformed conninfo
still exits at once (a configuration error is not waited on).

TABLED and TOP_BUILDDIR as under make check."""
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import pg_harness  # noqa: E402
import tabled_harness as h  # noqa: E402

TOP = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
REFUSED = "refuses connections; is it running?"
SLOTS = "has no free connection slot"


def start_waiting(srv):
    """Starts srv on a thread (its start blocks until tabled is ready, which
    waits for the database); returns the thread and a dict that gets "ok"
    once ready, or "err" with the reason it did not start."""
    started = {}

    def run():
        try:
            srv.start()
            started["ok"] = True
        except h.ServerError as e:
            started["err"] = str(e)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, started


def admin_port(srv):
    for line in list(srv.stdout_lines):
        m = re.search(r"Admin endpoint:\s+http://[^ ]+:(\d+)/metrics", line)
        if m:
            return int(m.group(1))
    return None


def waiting_port(srv):
    """The admin port named by the line a waiting tabled prints."""
    for line in list(srv.stdout_lines):
        m = re.search(r"Waiting for the postgres database; http://[^ ]+:(\d+)/healthz", line)
        if m:
            return int(m.group(1))
    return None


def get_healthz(host, port):
    """(status, body) of GET /healthz, or (repr of the error, "")."""
    if not port:
        return None, ""
    try:
        with urllib.request.urlopen("http://%s:%d/healthz" % (host, port), timeout=20) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except Exception as e:          # noqa: BLE001
        return repr(e), ""


def test_stop_while_waiting(tap, ci):
    """SIGTERM while a front end waits for its database (admin listener
    open, event loop turning): it stops at once with status 0."""
    srv = h.Server(args=["--admin-port", "0", "--backend-option", "conninfo=" + ci],
                   backend="postgres", ready_timeout=300)
    t, started = start_waiting(srv)
    try:
        port = h.wait_for(lambda: waiting_port(srv), 30)
        tap.ok(port, "a second waiting front end prints its health URL",
               srv.stderr_text()[-2000:])
        t0 = time.monotonic()
        rc, text = srv.stop(timeout=10)
        tap.ok(rc == 0 and "stopped while waiting" in text,
               "SIGTERM while waiting: exits with status 0 (%.1f s)" % (time.monotonic() - t0),
               "status %r: %s" % (rc, text[-2000:]))
    finally:
        srv.kill()


def main():
    tap = h.Tap()
    reason = pg_harness.skip_reason(TOP)
    if reason:
        print("1..0 # SKIP " + reason)
        return
    h.watchdog(600, tap=tap)
    # a malformed connection string is a configuration error: no waiting
    p = subprocess.run([h.tabled_path(), "--port", "0", "--backend", "postgres",
                        "--backend-option", "conninfo=host=/nonexistent bogus=1"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    tap.ok(p.returncode == 1 and b'invalid connection option "bogus"' in p.stderr,
           "a malformed conninfo exits at once (status 1) saying what is wrong",
           p.stderr.decode("utf-8", "replace"))
    pg = pg_harness.PgServer().create()
    srv = None
    try:
        ci = pg.new_db("startup")
        pg.stop()
        srv = h.Server(args=["--admin-port", "0", "--backend-option", "conninfo=" + ci],
                       backend="postgres", ready_timeout=300)
        t, started = start_waiting(srv)
        saw = h.wait_for(lambda: REFUSED in srv.stderr_text() or "err" in started, 60)
        tap.ok(saw and "err" not in started,
               "with the database down, the log says PostgreSQL refuses connections",
               srv.stderr_text()[-2000:] + started.get("err", ""))
        tap.ok(pg.dir in srv.stderr_text(), "and names the server",
               srv.stderr_text()[-2000:])
        time.sleep(4)       # several attempts (0.25 s doubling)
        tap.ok(srv.alive() and "err" not in started and "ok" not in started,
               "tabled keeps running (and waiting) while the database is down",
               started.get("err"))
        n = srv.stderr_text().count(REFUSED)
        tap.ok(1 <= n <= 3, "the repeated failure is not logged per attempt (%d lines)" % n,
               srv.stderr_text()[-2000:])
        hport = h.wait_for(lambda: waiting_port(srv), 10)
        status, body = get_healthz(srv.host if srv.host else "127.0.0.1", hport)
        tap.ok(hport and status == 503 and REFUSED in body,
               "while waiting, /healthz on the admin port answers 503 with the reason",
               "stdout %r: %r %r" % (srv.stdout_lines, status, body))
        test_stop_while_waiting(tap, ci)
        pg.start()
        t.join(120)
        tap.ok(started.get("ok"), "once PostgreSQL is up, tabled serves",
               started.get("err") or srv.stderr_text()[-2000:])
        if not started.get("ok"):
            return
        port = h.wait_for(lambda: admin_port(srv), 10)
        try:
            with urllib.request.urlopen("http://%s:%d/healthz" % (srv.host, port),
                                        timeout=20) as r:
                status = r.status
        except Exception as e:          # noqa: BLE001
            status = repr(e)
        tap.eq(status, 200, "/healthz answers 200")
        try:
            from azure.data.tables import TableServiceClient
            svc = TableServiceClient.from_connection_string(
                srv.conn_str(), retry_total=0, connection_timeout=10, read_timeout=30)
            tc = svc.create_table("Late")
            tc.create_entity({"PartitionKey": "p", "RowKey": "r", "Value": 7})
            got = tc.get_entity("p", "r")["Value"]
        except Exception as e:          # noqa: BLE001
            got = repr(e)
        tap.eq(got, 7, "SDK: create table, insert, get")
        tap.ok(srv.alive(), "tabled still runs")
        srv.kill()
        srv = None
        test_slots(tap, pg, ci)
    finally:
        if srv is not None:
            srv.kill()
        pg.cleanup()
        tap.done()


def test_slots(tap, pg, ci):
    """PostgreSQL with max_connections=5, every slot taken by psql
    sessions: tabled started then says the server has no free slot (naming
    max_connections and pool-size), keeps waiting, and serves once the
    sessions end."""
    pg.restart_with(max_connections=5, superuser_reserved_connections=0,
                    client_connection_check_interval=500)
    sleepers = pg.hold_connections(6)
    srv = None
    try:
        full = h.wait_for(lambda: sum(p.poll() is not None for p in sleepers) >= 1, 60)
        tap.ok(full, "max_connections=5: the sixth psql session is refused")
        srv = h.Server(args=["--backend-option", "conninfo=" + ci], backend="postgres",
                       ready_timeout=300)
        t, started = start_waiting(srv)
        saw = h.wait_for(lambda: SLOTS in srv.stderr_text() or "err" in started, 60)
        text = srv.stderr_text()
        tap.ok(saw and "err" not in started and "max_connections" in text and
               "pool-size" in text,
               "every slot taken: the log says there is no free connection slot and names "
               "max_connections and pool-size", text[-2000:] + started.get("err", ""))
        tap.ok(srv.alive() and "ok" not in started, "tabled keeps waiting")
        for p in sleepers:
            p.kill()
            p.wait(10)
        t.join(120)
        tap.ok(started.get("ok"), "once the sessions end, tabled serves",
               started.get("err") or srv.stderr_text()[-2000:])
    finally:
        for p in sleepers:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        if srv is not None:
            srv.kill()


if __name__ == "__main__":
    main()
