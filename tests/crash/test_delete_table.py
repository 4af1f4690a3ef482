#!/usr/bin/python3
"""test_delete_table.py - Delete Table of a big table (issue 13, point 3),
on memory, leveldb and flatfile:

  liveness   a table of 200,000 entities (DELETE_TEST_ENTITIES) is deleted
             while a prober GETs an entity of another table in a loop: no
             GET waits more than 1 s (a liveness bound, not a benchmark),
             every GET answers 200, the delete answers 204
  re-create  the table re-created at once under the same name is empty,
             and an entity with the keys of an old one inserts as new
  purge      the admin listener's tabled_purge_tables gauge comes back to 0
             (the entities are removed in the background), the account's
             tabled_entities gauge counts only the live entities
  kill -9    (leveldb, flatfile) a table of 50,000 entities is deleted while
             tests/crash/libfaultfs.so lets no purge chunk reach the disk
             (the delete's own small write passes; /healthz answers 503
             meanwhile); kill -9; the stopped store still holds the purge
             record and entities (read by tests/crash/storescan); after a
             restart the purge resumes and completes, and the store holds
             no purge record and no entity of any table that has no row

TABLED names the binary, TOP_BUILDDIR the build tree (shim, storescan).
"""
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import bigtable  # noqa: E402
import tabled_harness as h  # noqa: E402
import tload  # noqa: E402

ACCT = tload.ACCOUNT
N = int(os.environ.get("DELETE_TEST_ENTITIES", "200000"))
KILL_N = max(N // 4, 5000)  # the kill -9 case needs many chunks, not the full size
JSON_CT = [("Content-Type", "application/json")]
GET_BOUND = 1.0     # seconds a concurrent GET may wait at most


def shim_path():
    top = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
    p = os.path.abspath(os.path.join(top, "tests", "crash", ".libs", "libfaultfs.so"))
    return p if os.path.exists(p) else None


def arm(ctl, data, budget, fail_sync, free=-1):
    tmp = ctl + ".tmp"
    with open(tmp, "w") as f:
        f.write("%s %d %d %d\n" % (os.path.realpath(data), budget, fail_sync, free))
    os.rename(tmp, ctl)


def admin_port(srv, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for line in list(srv.stdout_lines):
            m = re.search(r"Admin endpoint:\s+http://[^:]+:(\d+)/metrics", line)
            if m:
                return int(m.group(1))
        time.sleep(0.05)
    raise h.ServerError("no Admin endpoint line: %r" % srv.stdout_lines)


def start(backend, data, env=None):
    args = ["--auth", "off", "--admin-port", "0", "--durability", "batch"]
    if backend != "memory":
        args += ["--data", data]
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        srv = h.Server(args, backend=backend, ready_timeout=60).start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    srv.admin = admin_port(srv)
    return srv


def entities_gauge(srv):
    c = tload.Client(srv.host, srv.admin, timeout=10)
    try:
        _, _, b = c.request("GET", "/metrics")
    finally:
        c.close()
    m = re.search(r'(?m)^tabled_entities\{account="%s"\} (\S+)$' % ACCT, b.decode())
    return float(m.group(1)) if m else None


def healthz(srv):
    c = tload.Client(srv.host, srv.admin, timeout=10)
    try:
        st, _, b = c.request("GET", "/healthz")
    finally:
        c.close()
    return st, b


def query_all(c, table):
    st, _, b = c.request("GET", "/%s/%s()" % (ACCT, table))
    return st, (json.loads(b)["value"] if st == 200 else b)


def test_liveness(tap, backend, srv):
    """Delete a big table with a concurrent GET; re-create; purge."""
    label = backend
    c = tload.Client(srv.host, srv.port, timeout=120)
    tload.create_table(c, "other")
    st, _, b = c.request("POST", "/%s/other" % ACCT, '{"PartitionKey":"a","RowKey":"b"}',
                         JSON_CT + [("Prefer", "return-no-content")])
    tload.create_table(c, "big")
    t0 = time.monotonic()
    bigtable.load(srv.host, srv.port, "big", N)
    tap.diag("%s: %d entities loaded in %.1f s" % (label, N, time.monotonic() - t0))
    tap.eq(entities_gauge(srv), N + 1, "%s: %d entities stored" % (label, N + 1))

    pr = bigtable.Prober(srv.host, srv.port,
                         "/%s/other(PartitionKey='a',RowKey='b')" % ACCT).start()
    time.sleep(0.1)
    t0 = time.monotonic()
    st, _, b = c.request("DELETE", "/%s/Tables('big')" % ACCT)
    dt = time.monotonic() - t0
    tap.eq(st, 204, "%s: Delete Table of %d entities answers 204" % (label, N))
    tap.diag("%s: the delete took %.1f ms" % (label, dt * 1000))

    # re-created at once: empty, and old keys insert as new
    st, _, b = c.request("POST", "/%s/Tables" % ACCT, json.dumps({"TableName": "big"}),
                         JSON_CT + [("Prefer", "return-no-content")])
    tap.eq(st, 204, "%s: the table is re-created at once" % label)
    st, rows = query_all(c, "big")
    tap.ok(st == 200 and rows == [], "%s: the re-created table is empty" % label, rows)
    st, _, b = c.request("GET", "/%s/big(PartitionKey='p000000',RowKey='r0000000')" % ACCT)
    tap.eq(st, 404, "%s: an old entity is not found in it" % label)
    st, _, b = c.request("POST", "/%s/big" % ACCT,
                         '{"PartitionKey":"p000000","RowKey":"r0000000","New":true}',
                         JSON_CT + [("Prefer", "return-no-content")])
    tap.eq(st, 204, "%s: an entity with an old entity's keys inserts as new" % label)

    v, secs = bigtable.wait_metric(srv.host, srv.admin, "tabled_purge_tables",
                                   lambda x: x == 0, 120)
    tap.ok(secs is not None, "%s: the purge completes (tabled_purge_tables back to 0)" % label,
           "gauge %r" % v)
    purge_s = time.monotonic() - t0
    time.sleep(0.1)
    pr.stop()
    tap.diag("%s: purge done %.2f s after the delete; %d concurrent GETs, the longest %.1f ms"
             % (label, purge_s, pr.count, pr.worst * 1000))
    tap.ok(pr.bad is None and pr.count > 0, "%s: every concurrent GET answered 200" % label,
           pr.bad)
    tap.ok(pr.worst <= GET_BOUND, "%s: no concurrent GET waited more than %.0f s (longest "
           "%.3f s)" % (label, GET_BOUND, pr.worst))
    tap.ok(dt <= GET_BOUND, "%s: nor did the delete itself (%.3f s)" % (label, dt))
    removed = bigtable.metric(srv.host, srv.admin, "tabled_purged_entities_total")
    tap.eq(removed, N, "%s: the purge removed the %d entities" % (label, N))
    tap.eq(entities_gauge(srv), 2, "%s: the entity gauge counts the 2 live entities" % label)
    st, rows = query_all(c, "big")
    tap.ok(st == 200 and len(rows) == 1 and rows[0].get("New") is True,
           "%s: the re-created table holds only its new entity" % label, rows)
    c.close()


def table_ids(scan):
    return {name: i for (acct, name), i in scan["tables"].items() if acct == ACCT}


def test_kill(tap, backend, shim, scan_exe, tmp):
    """kill -9 while the purge cannot progress; restart; it completes."""
    label = "%s/kill" % backend
    data = os.path.join(tmp, "kill-%s" % backend)
    ctl = os.path.join(tmp, "ctl-%s" % backend)
    env = {"LD_PRELOAD": shim, "FAULTFS_CTL": ctl,
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "detect_leaks=1") +
           ":verify_asan_link_order=0"}
    srv = start(backend, data, env)
    c = tload.Client(srv.host, srv.port, timeout=120)
    tload.create_table(c, "other")
    c.request("POST", "/%s/other" % ACCT, '{"PartitionKey":"a","RowKey":"b"}', JSON_CT)
    tload.create_table(c, "doomed")
    bigtable.load(srv.host, srv.port, "doomed", KILL_N)

    # the delete's own write (~100 bytes) fits; a purge chunk (~30 KB) not;
    # statvfs shows the disk full, so LevelDB keeps its database open
    arm(ctl, data, 4096, 0, 0)
    st, _, b = c.request("DELETE", "/%s/Tables('doomed')" % ACCT)
    tap.eq(st, 204, "%s: Delete Table answers 204 (its write is durable)" % label)
    end = time.monotonic() + 15
    hs = None
    while time.monotonic() < end:
        hs = healthz(srv)
        if hs[0] == 503:
            break
        time.sleep(0.05)
    tap.ok(hs and hs[0] == 503 and b"read-only" in hs[1],
           "%s: the purge cannot write: /healthz answers 503 read-only" % label, hs)
    tap.eq(bigtable.metric(srv.host, srv.admin, "tabled_purge_tables"), 1,
           "%s: one purge pending" % label)
    st, _, b = c.request("GET", "/%s/other(PartitionKey='a',RowKey='b')" % ACCT)
    tap.eq(st, 200, "%s: reads still work" % label)
    c.close()
    os.kill(srv.proc.pid, signal.SIGKILL)
    srv.proc.wait(10)
    srv.stop()
    os.unlink(ctl)

    scan = bigtable.storescan(scan_exe, backend, data)
    live = set(table_ids(scan).values())
    dead = {i: n for i, n in scan["entities"].items() if i not in live}
    tap.ok(len(scan["purges"]) == 1 and sum(dead.values()) > KILL_N // 2,
           "%s: after kill -9 the store holds the purge record and the entities "
           "(the purge was interrupted)" % label, "purges %r, orphaned %r" % (scan["purges"], dead))

    srv = start(backend, data)
    v, secs = bigtable.wait_metric(srv.host, srv.admin, "tabled_purge_tables",
                                   lambda x: x == 0, 120)
    tap.ok(secs is not None, "%s: after the restart the purge resumes and completes" % label,
           "gauge %r" % v)
    tap.ok(0 < bigtable.metric(srv.host, srv.admin, "tabled_purged_entities_total") <= KILL_N,
           "%s: ... removing what was left of the %d entities" % (label, KILL_N))
    c = tload.Client(srv.host, srv.port, timeout=60)
    tload.create_table(c, "doomed")
    st, rows = query_all(c, "doomed")
    tap.ok(st == 200 and rows == [], "%s: a re-created table of the name is empty" % label, rows)
    st, _, b = c.request("GET", "/%s/other(PartitionKey='a',RowKey='b')" % ACCT)
    tap.eq(st, 200, "%s: the other table's entity is there" % label)
    c.close()
    srv.stop_and_check(tap)

    scan = bigtable.storescan(scan_exe, backend, data)
    ids = table_ids(scan)
    tap.eq(scan["purges"], {}, "%s: no purge record is left" % label)
    tap.eq(scan["entities"], {ids.get("other"): 1},
           "%s: the only entity in the store is the other table's" % label)


def main():
    tap = h.Tap()
    watchdog = h.watchdog(900, tap=tap)
    shim = shim_path()
    scan_exe = bigtable.storescan_path()
    tmp = tempfile.mkdtemp(prefix="tabled-delete-")
    try:
        for backend in ("memory", "leveldb", "flatfile"):
            srv = start(backend, os.path.join(tmp, "live-%s" % backend))
            tap.run(test_liveness, tap, backend, srv)
            srv.stop_and_check(tap)
        for backend in ("leveldb", "flatfile"):
            if not shim or not scan_exe:
                tap.ok(False, "%s/kill: tests/crash/libfaultfs.so and tests/crash/storescan are "
                       "built (make check builds them)" % backend)
                continue
            tap.run(test_kill, tap, backend, shim, scan_exe, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        watchdog.cancel()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
