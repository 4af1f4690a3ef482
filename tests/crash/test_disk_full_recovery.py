#!/usr/bin/python3
"""test_disk_full_recovery.py - writes come back after a full disk, on a
small disk, without a restart (issue 13, point 4); /healthz says so.

tabled runs with tests/crash/libfaultfs.so preloaded: writes under the data
directory fail with ENOSPC when told to, and statvfs() reports the free
space the test sets (a small disk). On leveldb, in --durability batch and
sync:

  full        an insert into the full disk answers 500; /healthz answers
              503 "read-only: ..." and tabled_store_writable is 0; reads
              keep working; while statvfs shows nothing free, the store is
              not reopened (reads still work seconds later)
  small disk  the disk gets 8 MiB free, far less than the old reopen
              threshold (write-buffer-size + max-file-size + 4 MiB, 100 MiB
              by default): without any client write, /healthz comes back
              to 200 (the server probes the store on a backoff), inserts
              work, the log says when writes failed and when they came back
  restart     every acknowledged write is there, the failed one is not

and on flatfile (batch), which takes every write afresh: after a failed
write the server's probe finds it taking writes, /healthz is 200 again.

A failed fdatasync on flatfile (test_sync_failure; batch with the sync
worker, batch with syncs on the loop, sync; EIO, and ENOSPC as a file
system that allocates at writeback reports a full disk):

  failing     an insert, a replace of an existing entity and a delete each
              answer the service's error; no read shows any of them (the
              replaced entity keeps its old value, the deleted one is
              there); /healthz answers 503 "read-only: ..."; while fsyncs
              keep failing, a few seconds of probes change nothing
  recovered   once fsyncs work again, without any client write and without
              a restart, /healthz comes back to 200 and writes work; the log
              says what was dropped and when writes came back
  restart     every acknowledged write is there with its value, no refused
              write is (the log is consistent: it opens without a cut tail)

TABLED names the binary, TOP_BUILDDIR the build tree (for the shim).
"""
import json
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import bigtable  # noqa: E402
import tabled_harness as h  # noqa: E402
import tload  # noqa: E402
from test_delete_table import admin_port, arm, healthz, shim_path  # noqa: E402

ACCT = tload.ACCOUNT
JSON_CT = [("Content-Type", "application/json"), ("Prefer", "return-no-content")]
SMALL_FREE = 8 << 20


def start(backend, mode, data, env=None, extra=()):
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        srv = h.Server(["--data", data, "--durability", mode, "--auth", "off",
                        "--admin-port", "0"] + list(extra), backend=backend,
                       ready_timeout=30).start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    srv.admin = admin_port(srv)
    return srv


def insert(c, rk):
    st, _, b = c.request("POST", "/%s/recover" % ACCT,
                         '{"PartitionKey":"p","RowKey":"%s","V":1}' % rk, JSON_CT)
    return st


def get(c, rk):
    return c.request("GET", "/%s/recover(PartitionKey='p',RowKey='%s')" % (ACCT, rk))[0]


def wait_health(srv, status, timeout):
    """Polls /healthz until it answers status; returns (status, body)."""
    end = time.monotonic() + timeout
    hs = healthz(srv)
    while hs[0] != status and time.monotonic() < end:
        time.sleep(0.05)
        hs = healthz(srv)
    return hs


def test_recovery(tap, backend, mode, shim, tmp):
    label = "%s/%s" % (backend, mode)
    data = os.path.join(tmp, "data-%s-%s" % (backend, mode))
    ctl = os.path.join(tmp, "ctl-%s-%s" % (backend, mode))
    env = {"LD_PRELOAD": shim, "FAULTFS_CTL": ctl,
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "detect_leaks=1") +
           ":verify_asan_link_order=0"}
    srv = start(backend, mode, data, env)
    c = tload.Client(srv.host, srv.port)
    tload.create_table(c, "recover")
    tap.ok(all(insert(c, "before%d" % i) == 204 for i in range(5)),
           "%s: five inserts before the disk fills" % label)
    tap.eq(healthz(srv), (200, b"ok\n"), "%s: /healthz answers 200 ok" % label)

    arm(ctl, data, 0, 0, 0)
    tap.eq(insert(c, "full1"), 500, "%s: an insert into the full disk answers 500" % label)
    tap.eq(get(c, "before0"), 200, "%s: reads work while the disk is full" % label)
    if backend == "leveldb":
        # (flatfile takes every write afresh: its probe cannot tell a full
        # disk, so its 503 lasts until the next probe, a second at most)
        hs = wait_health(srv, 503, 5)
        tap.ok(hs[0] == 503 and hs[1].startswith(b"read-only"),
               "%s: /healthz answers 503 read-only" % label, hs)
        tap.eq(bigtable.metric(srv.host, srv.admin, "tabled_store_writable"), 0,
               "%s: tabled_store_writable is 0" % label)
        time.sleep(2.5)     # a few probes: none may close the database
        tap.ok(healthz(srv)[0] == 503 and get(c, "before1") == 200,
               "%s: with nothing free the store is not reopened: still 503, reads still work"
               % label)

    arm(ctl, data, -1, 0, SMALL_FREE)
    hs = wait_health(srv, 200, 20)
    tap.eq(hs, (200, b"ok\n"), "%s: with %d MiB free, without any client write, /healthz is "
           "back to 200" % (label, SMALL_FREE >> 20))
    tap.eq(bigtable.metric(srv.host, srv.admin, "tabled_store_writable"), 1,
           "%s: tabled_store_writable is 1" % label)
    tap.eq(insert(c, "after1"), 204, "%s: inserts work again" % label)
    tap.eq((get(c, "after1"), get(c, "full1")), (200, 404),
           "%s: the new entity is there, the failed one is not" % label)
    c.close()
    err = srv.stderr_text()
    tap.ok(re.search(r"refuses writes", err) and re.search(r"takes writes again", err),
           "%s: the log says when writes failed and when they came back" % label, err[-2000:])
    srv.stop_and_check(tap)

    srv = start(backend, mode, data)
    c = tload.Client(srv.host, srv.port)
    got = [get(c, rk) for rk in ["before%d" % i for i in range(5)] + ["after1", "full1"]]
    tap.eq(got, [200] * 6 + [404], "%s: after a restart the acknowledged writes are there, "
           "the failed one is not" % label)
    c.close()
    srv.stop_and_check(tap)


def one(srv, method, path, body=None, headers=()):
    """One request on a connection of its own (a failed write's answer
    closes its connection); returns (status, body). Status "closed": the
    connection closed without an answer (what a sync on the event loop
    that fails does to the answers it held)."""
    c = tload.Client(srv.host, srv.port)
    try:
        st, _, b = c.request(method, path, body, headers)
    except tload.ConnectionLost:
        st, b = "closed", b""
    finally:
        c.close()
    return st, b


def entity(srv, rk):
    """(status, value of V) of entity p/rk."""
    st, b = one(srv, "GET", "/%s/recover(PartitionKey='p',RowKey='%s')" % (ACCT, rk))
    return st, (json.loads(b).get("V") if st == 200 else None)


def put(srv, rk, v):
    body = '{"PartitionKey":"p","RowKey":"%s","V":%d}' % (rk, v)
    return one(srv, "PUT", "/%s/recover(PartitionKey='p',RowKey='%s')" % (ACCT, rk), body,
               [("Content-Type", "application/json")])[0]


def delete(srv, rk):
    return one(srv, "DELETE", "/%s/recover(PartitionKey='p',RowKey='%s')" % (ACCT, rk), None,
               [("If-Match", "*")])[0]


def post(srv, rk, v):
    body = '{"PartitionKey":"p","RowKey":"%s","V":%d}' % (rk, v)
    return one(srv, "POST", "/%s/recover" % ACCT, body, JSON_CT)[0]


def test_sync_failure(tap, mode, kind, shim, tmp):
    """flatfile: a failed fdatasync drops the writes it covered, and the
    store takes writes again once fsyncs work, without a restart."""
    label = "flatfile/%s/%s" % (mode, kind)
    tag = label.replace("/", "-")
    data = os.path.join(tmp, "data-" + tag)
    ctl = os.path.join(tmp, "ctl-" + tag)
    env = {"LD_PRELOAD": shim, "FAULTFS_CTL": ctl,
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "detect_leaks=1") +
           ":verify_asan_link_order=0"}
    durability = "sync" if mode == "sync" else "batch"
    extra = ["--backend-option", "sync-thread=off"] if mode == "batch-loop" else []
    srv = start("flatfile", durability, data, env, extra)
    c = tload.Client(srv.host, srv.port)
    tload.create_table(c, "recover")
    c.close()
    tap.ok(all(post(srv, "before%d" % i, 1) == 204 for i in range(5)),
           "%s: five inserts before fsyncs fail" % label)

    arm(ctl, data, -1, 1 if kind == "EIO" else 2)
    # the first write's sync fails; with syncs on the event loop the server
    # drops the answers that sync held and closes their connections
    failed = "closed" if mode == "batch-loop" else 500
    got = (post(srv, "bad1", 1), put(srv, "before0", 2), delete(srv, "before1"))
    tap.eq(got, (failed, 500, 500), "%s: an insert, a replace and a delete fail while "
           "fdatasync fails" % label)
    tap.eq([entity(srv, rk) for rk in ("bad1", "before0", "before1")],
           [(404, None), (200, 1), (200, 1)],
           "%s: no read shows them: the insert is absent, the replaced entity keeps its value, "
           "the deleted one is there" % label)
    hs = healthz(srv)
    tap.ok(hs[0] == 503 and hs[1].startswith(b"read-only"), "%s: /healthz answers 503 "
           "read-only" % label, hs)
    time.sleep(2.5)         # a few probes, each failing to recover
    tap.eq((post(srv, "bad2", 1), healthz(srv)[0], entity(srv, "bad2")[0]), (500, 503, 404),
           "%s: while fsyncs fail, probes change nothing: writes answer 500, /healthz 503"
           % label)

    arm(ctl, data, -1, 0)
    hs = wait_health(srv, 200, 20)
    tap.eq(hs, (200, b"ok\n"), "%s: once fsyncs work, without any client write or restart, "
           "/healthz is back to 200" % label)
    tap.eq((post(srv, "after1", 1), put(srv, "before2", 3), delete(srv, "before3")),
           (204, 204, 204), "%s: inserts, replaces and deletes work again" % label)
    tap.eq([entity(srv, rk) for rk in ("after1", "before2", "before3", "bad1", "bad2")],
           [(200, 1), (200, 3), (404, None), (404, None), (404, None)],
           "%s: the new writes show, the refused ones do not" % label)
    err = srv.stderr_text()
    tap.ok(re.search(r"are dropped", err) and re.search(r"writes are taken again", err) and
           re.search(r"takes writes again", err),
           "%s: the log says what was dropped and when writes came back" % label, err[-3000:])
    srv.stop_and_check(tap)

    srv = start("flatfile", durability, data)
    want = {"before0": (200, 1), "before1": (200, 1), "before2": (200, 3),
            "before3": (404, None), "before4": (200, 1), "after1": (200, 1),
            "bad1": (404, None), "bad2": (404, None)}
    tap.eq({rk: entity(srv, rk) for rk in want}, want, "%s: after a restart every "
           "acknowledged write is there, no refused one is" % label)
    err = srv.stderr_text()
    tap.ok("torn" not in err, "%s: the log opens whole (no tail to cut)" % label, err[-2000:])
    srv.stop_and_check(tap)


def table_op(srv, method, name):
    """Create (POST) or delete (DELETE) table name, or read it (GET)."""
    if method == "POST":
        return one(srv, "POST", "/%s/Tables" % ACCT, json.dumps({"TableName": name}),
                   JSON_CT)[0]
    return one(srv, method, "/%s/Tables('%s')" % (ACCT, name))[0]


def test_sync_failure_tables(tap, shim, tmp):
    """flatfile batch: a Delete Table or Create Table whose sync fails is
    dropped with the server's own view of the tables: the deleted table
    keeps its entities (no background purge removes them), the created one
    does not exist and can be created again."""
    label = "flatfile/batch/tables"
    data = os.path.join(tmp, "data-tables")
    ctl = os.path.join(tmp, "ctl-tables")
    env = {"LD_PRELOAD": shim, "FAULTFS_CTL": ctl,
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "detect_leaks=1") +
           ":verify_asan_link_order=0"}
    srv = start("flatfile", "batch", data, env)
    c = tload.Client(srv.host, srv.port)
    tload.create_table(c, "keep")
    c.close()
    keys = ["k%d" % i for i in range(3)]
    for rk in keys:
        one(srv, "POST", "/%s/keep" % ACCT, '{"PartitionKey":"p","RowKey":"%s"}' % rk, JSON_CT)

    def cycle(method, name):
        arm(ctl, data, -1, 1)
        st = table_op(srv, method, name)
        arm(ctl, data, -1, 0)
        return st, wait_health(srv, 200, 20)[0]

    tap.eq(cycle("DELETE", "keep"), (500, 200), "%s: a Delete Table whose sync fails answers "
           "500; the store recovers" % label)
    time.sleep(1.5)         # time for a background purge, were one queued
    got = [one(srv, "GET", "/%s/keep(PartitionKey='p',RowKey='%s')" % (ACCT, rk))[0]
           for rk in keys]
    tap.eq((table_op(srv, "GET", "keep"), got), (200, [200] * 3),
           "%s: the table is there with all its entities" % label)
    tap.eq(cycle("POST", "gone"), (500, 200), "%s: a Create Table whose sync fails answers "
           "500; the store recovers" % label)
    tap.eq(table_op(srv, "GET", "gone"), 404, "%s: the table does not exist" % label)
    tap.eq(table_op(srv, "POST", "gone"), 204, "%s: it can be created" % label)
    srv.stop_and_check(tap)

    srv = start("flatfile", "batch", data)
    got = [one(srv, "GET", "/%s/keep(PartitionKey='p',RowKey='%s')" % (ACCT, rk))[0]
           for rk in keys]
    tap.eq((table_op(srv, "GET", "keep"), got, table_op(srv, "GET", "gone")),
           (200, [200] * 3, 200), "%s: after a restart both tables are there, with the "
           "entities" % label)
    srv.stop_and_check(tap)


def main():
    tap = h.Tap()
    watchdog = h.watchdog(600, tap=tap)
    shim = shim_path()
    tmp = tempfile.mkdtemp(prefix="tabled-diskfull-")
    try:
        if not shim:
            tap.ok(False, "tests/crash/libfaultfs.so is built (make check builds it)")
        else:
            for backend, mode in (("leveldb", "batch"), ("leveldb", "sync"),
                                  ("flatfile", "batch")):
                tap.run(test_recovery, tap, backend, mode, shim, tmp)
            for mode, kind in (("batch", "EIO"), ("batch-loop", "EIO"), ("sync", "EIO"),
                               ("batch", "ENOSPC")):
                tap.run(test_sync_failure, tap, mode, kind, shim, tmp)
            tap.run(test_sync_failure_tables, tap, shim, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        watchdog.cancel()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
