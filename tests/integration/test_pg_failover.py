#!/usr/bin/python3
"""test_pg_failover.py - a PostgreSQL primary failover loses nothing
acknowledged (the postgres backend, two front ends on one database).

Two private PostgreSQL servers (tests/integration/pg_harness.py): a primary
with synchronous_standby_names naming the standby and synchronous_commit=on,
and a standby made by pg_basebackup -R streaming from it on its own port;
the test waits until pg_stat_replication says the standby is streaming and
sync_state is 'sync'. Two tabled front ends are given both servers in
libpq's multi-host form (host=A,B port=P,Q target_session_attrs=read-write).
Writers on both front ends (threads doing single inserts with unique keys
and $batch inserts of 20 entities through the Python SDK azure-data-tables,
no retries) record every acknowledged (2xx) write. After a few seconds the
primary is killed (SIGKILL of the postmaster and its children) and the
standby promoted (pg_ctl promote -w); the writers go on until a write has
succeeded again on each front end after the promotion, then stop.

Checked: every acknowledged single insert and every entity of every
acknowledged batch is there, read back through a front end (a query of the
whole table); no batch is partly there (all or none of its entities, the
unacknowledged ones included); both front ends serve writes again within a
generous bound after the promotion (the time is reported, not asserted
tight); every failed write was answered only in a retryable way: 503
ServerBusy, 500 OperationTimedOut (outcome unknown), or a connection error.
Then the same with asynchronous replication (synchronous_standby_names
empty): the number of acknowledged writes lost, if any, is reported (TAP
diag), and only "no batch partly there" is checked.

Skipped (TAP) when tabled has no postgres backend or the PostgreSQL server
binaries are missing. TABLED and TOP_BUILDDIR as under make check.
In both runs the standby's WAL receiver is stopped (SIGSTOP) for the last
second before the crash and let go after it, so the standby is behind when
the primary dies (as over a slow link or disk): with synchronous
replication the writes of that second wait and are not acknowledged; with
asynchronous replication they are acknowledged and lost.

Environment: FAILOVER_SECONDS (default 3) seconds of writes before the
stall; FAILOVER_STALL (default 1) seconds of the stall, 0 for none;
FAILOVER_ASSERT_ASYNC=1 asserts "nothing acknowledged lost" in the
asynchronous run too (it fails there: the check can fail)."""
import os
import re
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import pg_harness  # noqa: E402
import tabled_harness as h  # noqa: E402

TOP = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
BATCH = 20
WRITE_SECONDS = float(os.environ.get("FAILOVER_SECONDS", "3"))
STALL_SECONDS = float(os.environ.get("FAILOVER_STALL", "1"))
ASSERT_ASYNC = os.environ.get("FAILOVER_ASSERT_ASYNC") == "1"
RECOVERY_BOUND = 30.0       # seconds after the promotion (generous)


def classify(exc):
    """How a failed write was answered: ("retryable", text) for 503
    ServerBusy, 500 OperationTimedOut and connection errors, else
    ("other", text)."""
    from azure.core.exceptions import (HttpResponseError, ServiceRequestError,
                                       ServiceResponseError)
    if isinstance(exc, (ServiceRequestError, ServiceResponseError)):
        return "retryable", "connection: %s" % type(exc).__name__
    status = getattr(exc, "status_code", None)
    if status is None:
        resp = getattr(exc, "response", None)
        status = getattr(resp, "status_code", None)
    code = getattr(exc, "error_code", None)
    code = getattr(code, "value", code)
    if code is None:                    # a $batch's error: the SDK leaves it in the text
        m = re.search(r'"code"\s*:\s*"(\w+)"', str(exc))
        code = m.group(1) if m else None
    text = "%s %s" % (status, code)
    if isinstance(exc, HttpResponseError) and (status, code) in (
            (503, "ServerBusy"), (500, "OperationTimedOut")):
        return "retryable", text
    return "other", "%s: %s" % (text, str(exc)[:300])


class Run:
    """The writers' shared record (guarded by a lock)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked_singles = set()      # RowKeys
        self.acked_batches = []         # (PartitionKey, [RowKeys])
        self.all_batches = []           # every batch sent
        self.failures = {}              # answer -> count
        self.others = []                # answers not allowed
        self.last_ok = {}               # front end -> monotonic time of its last 2xx
        self.promoted_at = None
        self.first = {}                 # front end -> its first 2xx after the promotion
        self.stop = threading.Event()

    def ok(self, fe):
        with self.lock:
            self.last_ok[fe] = time.monotonic()

    def failed(self, exc):
        kind, text = classify(exc)
        with self.lock:
            self.failures[text] = self.failures.get(text, 0) + 1
            if kind != "retryable":
                self.others.append(text)

    def note_ok(self, fe):
        """Records fe's 2xx; the first after the promotion is kept."""
        now = time.monotonic()
        with self.lock:
            self.last_ok[fe] = now
            if self.promoted_at is not None and fe not in self.first:
                self.first[fe] = now


def single_writer(run, fe, client, tag):
    """Single inserts with unique keys until stopped."""
    n = 0
    while not run.stop.is_set():
        n += 1
        rk = "%s-%07d" % (tag, n)
        try:
            client.create_entity({"PartitionKey": "single", "RowKey": rk, "N": n})
        except Exception as e:          # noqa: BLE001
            run.failed(e)
            time.sleep(0.02)
            continue
        with run.lock:
            run.acked_singles.add(rk)
        run.note_ok(fe)


def batch_writer(run, fe, client, tag):
    """$batch inserts of BATCH entities (one partition per batch) until
    stopped."""
    n = 0
    while not run.stop.is_set():
        n += 1
        pk = "b-%s-%07d" % (tag, n)
        rks = ["%03d" % i for i in range(BATCH)]
        with run.lock:
            run.all_batches.append((pk, rks))
        try:
            client.submit_transaction([("create", {"PartitionKey": pk, "RowKey": rk, "I": i})
                                       for i, rk in enumerate(rks)])
        except Exception as e:          # noqa: BLE001
            run.failed(e)
            time.sleep(0.02)
            continue
        with run.lock:
            run.acked_batches.append((pk, rks))
        run.note_ok(fe)


def walreceiver_pid(pg):
    """The process id of a standby's WAL receiver, or None."""
    for pid in pg.backend_pids():
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if b"walreceiver" in f.read():
                    return pid
        except OSError:
            pass
    return None


def read_all(srv, table):
    """Every (PartitionKey, RowKey) of the table, read through srv (tried
    again for up to 60 s while the front end still answers 503)."""
    from azure.data.tables import TableClient
    last = None
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            tc = TableClient.from_connection_string(srv.conn_str(), table, retry_total=0,
                                                    connection_timeout=10, read_timeout=60)
            return {(e["PartitionKey"], e["RowKey"])
                    for e in tc.list_entities(select=["PartitionKey", "RowKey"])}
        except Exception as e:          # noqa: BLE001
            last = e
            time.sleep(0.5)
    raise RuntimeError("the table cannot be read back: %r" % (last,))


def scenario(tap, label, sync):
    """One failover: primary + standby (synchronous or not), two front ends,
    writers, crash, promote. Returns after its checks."""
    # synchronous_standby_names is set once the standby streams (before,
    # every commit, CREATE DATABASE's too, would wait for it)
    primary_settings = {"synchronous_commit": "on", "wal_level": "replica",
                        "max_wal_senders": "5"}
    pg = pg_harness.PgServer(settings=primary_settings).create()
    standby = None
    servers = []
    run = Run()
    try:
        ci = pg.new_db("failover")
        dbname = ci.split("dbname=")[1]
        standby = pg.make_standby("standby1")
        if sync:
            pg.psql("ALTER SYSTEM SET synchronous_standby_names = 'standby1'")
            pg.psql("SELECT pg_reload_conf()")
        want = ("standby1", "streaming", "sync" if sync else "async")
        state = h.wait_for(lambda: want in pg.replication_state() and pg.replication_state(), 60)
        tap.ok(state and want in state,
               "%s: the standby streams from the primary (sync_state %s)" % (label, want[2]),
               "pg_stat_replication: %r\nstandby log:\n%s" % (state, standby.log_tail()))
        if not (state and want in state):
            return
        multi = ("host=%s,%s port=%d,%d user=tabled dbname=%s target_session_attrs=read-write "
                 "connect_timeout=5" % (pg.dir, standby.dir, pg.port, standby.port, dbname))
        for _ in range(2):
            srv = h.Server(args=["--backend-option", "conninfo=" + multi], backend="postgres",
                           ready_timeout=120)
            servers.append(srv.start())
        from azure.data.tables import TableClient, TableServiceClient
        TableServiceClient.from_connection_string(servers[0].conn_str(),
                                                  retry_total=0).create_table("Fail")
        threads = []
        for i, srv in enumerate(servers):
            for kind, fn in (("s", single_writer), ("b", batch_writer)):
                tc = TableClient.from_connection_string(
                    srv.conn_str(), "Fail", retry_total=0, connection_timeout=5,
                    read_timeout=60)
                t = threading.Thread(target=fn, args=(run, i, tc, "%s%d" % (kind, i)),
                                     daemon=True)
                t.start()
                threads.append(t)
        time.sleep(WRITE_SECONDS)
        receiver = walreceiver_pid(standby) if STALL_SECONDS > 0 else None
        if receiver:
            # the standby falls behind: what a slow link or disk does
            os.kill(receiver, signal.SIGSTOP)
            time.sleep(STALL_SECONDS)
        with run.lock:
            before = (len(run.acked_singles), len(run.acked_batches))
        pg.crash()
        t_crash = time.monotonic()
        if receiver:
            os.kill(receiver, signal.SIGCONT)
        time.sleep(0.5)                 # the writers see the primary gone
        standby.promote()
        with run.lock:
            run.promoted_at = time.monotonic()
        tap.diag("%s: %d single inserts and %d batches acknowledged before the crash "
                 "(the standby's WAL receiver stopped for the last %.1f s); promotion done "
                 "%.1f s after it" % (label, before[0], before[1],
                                      STALL_SECONDS if receiver else 0,
                                      run.promoted_at - t_crash))
        back = h.wait_for(lambda: len(run.first) == len(servers), RECOVERY_BOUND + 30, 0.05)
        time.sleep(0.5)                 # a few writes on the new primary
        run.stop.set()
        for t in threads:
            t.join(120)
        took = [(run.first[i] - run.promoted_at) if i in run.first else None
                for i in range(len(servers))]
        tap.diag("%s: writes succeed again %s s after the promotion (front ends 1, 2)"
                 % (label, ", ".join("never" if x is None else "%.2f" % x for x in took)))
        if sync:
            tap.ok(back and all(x is not None and x <= RECOVERY_BOUND for x in took),
                   "%s: both front ends serve writes again within %d s of the promotion"
                   % (label, RECOVERY_BOUND), "%r\n%s\n%s" % (
                       took, servers[0].stderr_text()[-2000:], servers[1].stderr_text()[-2000:]))
        tap.diag("%s: failed writes by answer: %r" % (label, run.failures))
        tap.ok(not run.others,
               "%s: failed writes were answered only with 503 ServerBusy, 500 "
               "OperationTimedOut or a connection error" % label, run.others[:20])
        try:
            have = read_all(servers[1], "Fail")
        except RuntimeError as e:
            tap.ok(False, "%s: the table is read back through a front end" % label, str(e))
            return
        lost_singles = sorted(rk for rk in run.acked_singles if ("single", rk) not in have)
        lost_batches = [pk for pk, rks in run.acked_batches
                        if any((pk, rk) not in have for rk in rks)]
        partial = [pk for pk, rks in run.all_batches
                   if 0 < sum((pk, rk) in have for rk in rks) < len(rks)]
        acked = len(run.acked_singles) + len(run.acked_batches) * BATCH
        tap.diag("%s: %d single inserts and %d batches (%d entities) acknowledged in all; "
                 "lost: %d single inserts, %d batches"
                 % (label, len(run.acked_singles), len(run.acked_batches), acked,
                    len(lost_singles), len(lost_batches)))
        if sync or ASSERT_ASYNC:
            tap.ok(not lost_singles, "%s: every acknowledged single insert is there (%d)"
                   % (label, len(run.acked_singles)), lost_singles[:20])
            tap.ok(not lost_batches, "%s: every entity of every acknowledged batch is there "
                   "(%d batches)" % (label, len(run.acked_batches)), lost_batches[:20])
        tap.ok(not partial, "%s: no batch is partly there (%d batches sent)"
               % (label, len(run.all_batches)), partial[:20])
        tap.ok(len(run.acked_singles) > 0 and len(run.acked_batches) > 0,
               "%s: writes of both kinds were acknowledged" % label)
        for i, srv in enumerate(servers):
            tap.ok(srv.alive(), "%s: front end %d still runs" % (label, i + 1),
                   srv.stderr_text()[-2000:])
    finally:
        run.stop.set()
        for srv in servers:
            if srv.alive():
                rc, err = srv.stop(timeout=30)
                bad = h.SANITIZER_RE.search(err)
                tap.ok(rc == 0 and bad is None,
                       "%s: front end stops with status 0, no sanitizer report" % label,
                       "status %r\n%s" % (rc, err[-4000:]))
        if standby is not None:
            standby.cleanup()
        pg.cleanup()


def main():
    tap = h.Tap()
    reason = pg_harness.skip_reason(TOP)
    if reason:
        print("1..0 # SKIP " + reason)
        return
    h.watchdog(600, tap=tap)
    tap.run(scenario, tap, "synchronous", True)
    tap.run(scenario, tap, "asynchronous", False)
    tap.done()


if __name__ == "__main__":
    main()
