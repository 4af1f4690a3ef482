#!/usr/bin/python3
"""test_durability_http.py - durability seen over HTTP, on every durable
backend and in --durability batch and sync:

  disk full   tabled runs with tests/crash/libfaultfs.so preloaded (it makes
              writes under the data directory fail with ENOSPC when told
              to): an insert, a replace and a $batch into a full disk get
              500 InternalError, a write cut short by the disk filling up
              too; nothing of them is visible, earlier data is intact, and
              once there is space again writes work, all of it survives a
              restart, and the server never crashed.
  failed fsync  the same shim makes fdatasync fail: the write is never
              answered with success (batch mode drops the connection that
              waited for the group commit; sync mode answers 500).
  metadata    tables created and deleted, a table ACL and the service
              properties, acknowledged before a kill -9, are all back after
              the restart.

TABLED names the binary, TOP_BUILDDIR the build tree (for the shim).
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
import tabled_harness as h  # noqa: E402
import tload  # noqa: E402

ACCT = tload.ACCOUNT
JSON_CT = [("Content-Type", "application/json")]


def shim_path():
    top = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
    p = os.path.abspath(os.path.join(top, "tests", "crash", ".libs", "libfaultfs.so"))
    return p if os.path.exists(p) else None


def arm(ctl, data, budget, fail_sync):
    tmp = ctl + ".tmp"
    with open(tmp, "w") as f:
        f.write("%s %d %d\n" % (os.path.realpath(data), budget, fail_sync))
    os.rename(tmp, ctl)          # a new inode: the shim sees the change


def disarm(ctl):
    try:
        os.unlink(ctl)
    except OSError:
        pass


def insert(c, table, rk, size=100, pk="p"):
    st, hd, b = c.request("POST", "/%s/%s" % (ACCT, table), tload.entity_body(pk, rk, 1, size),
                          JSON_CT + [("Prefer", "return-no-content")])
    return st, b


def get(c, table, rk, pk="p"):
    st, hd, b = c.request("GET", "/%s/%s(PartitionKey='%s',RowKey='%s')" % (ACCT, table, pk, rk))
    return st, (json.loads(b) if st == 200 else None)


def error_code(body):
    try:
        return json.loads(body)["odata.error"]["code"]
    except Exception:  # noqa: BLE001
        return None


def start(backend, mode, data, env=None, args=()):
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        return h.Server(["--data", data, "--durability", mode, "--auth", "off"] + list(args),
                        backend=backend, ready_timeout=30).start()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_disk_full(tap, backend, mode, shim, tmp):
    label = "%s/%s" % (backend, mode)
    data = os.path.join(tmp, "full-%s-%s" % (backend, mode))
    ctl = os.path.join(tmp, "ctl-%s-%s" % (backend, mode))
    env = {"LD_PRELOAD": shim, "FAULTFS_CTL": ctl,
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "detect_leaks=1") +
           ":verify_asan_link_order=0"}
    srv = start(backend, mode, data, env)
    c = tload.Client(srv.host, srv.port)
    tload.create_table(c, "fulltab")
    ok = all(insert(c, "fulltab", "before%d" % i)[0] == 204 for i in range(5))
    tap.ok(ok, "%s: five inserts before the disk fills" % label)

    arm(ctl, data, 0, 0)
    st, b = insert(c, "fulltab", "full1")
    tap.eq((st, error_code(b)), (500, "InternalError"), "%s: insert into a full disk: 500" % label)
    st, _, b = c.request("PUT", "/%s/fulltab(PartitionKey='p',RowKey='before0')" % ACCT,
                         tload.entity_body("p", "before0", 99, 50), JSON_CT)
    tap.eq(st, 500, "%s: replace into a full disk: 500" % label)
    body, ct = tload.batch_body("fulltab", "p", ["fb%d" % i for i in range(5)], 7,
                                "%s:%d" % (srv.host, srv.port))
    st, _, b = c.request("POST", "/%s/$batch" % ACCT, body, [("Content-Type", ct)])
    inner = re.findall(rb"HTTP/1\.1 (\d{3})", b)
    tap.ok(st == 500 or (st == 202 and inner and inner[0].startswith(b"5")),
           "%s: $batch into a full disk: 500 (or 202 with the failing operation's 5xx)" % label,
           "%d %r" % (st, b[:300]))
    arm(ctl, data, 700, 0)
    st, b = insert(c, "fulltab", "cut1", size=4000)
    tap.eq(st, 500, "%s: an insert cut short by the disk filling up: 500" % label)
    disarm(ctl)

    seen = [get(c, "fulltab", rk)[0] for rk in ("full1", "cut1", "fb0", "fb4")]
    tap.eq(seen, [404] * 4, "%s: none of the failed writes is visible" % label)
    st, e = get(c, "fulltab", "before0")
    tap.ok(st == 200 and e.get("Seq") == 1, "%s: the failed replace left the entity as it was"
           % label, "%s %r" % (st, e))
    st, b = insert(c, "fulltab", "after1")
    tap.eq(st, 204, "%s: with space again, inserts work" % label)

    # a failed fdatasync: never a success reply
    arm(ctl, data, -1, 1)
    try:
        st, b = insert(c, "fulltab", "nosync1")
    except tload.ConnectionLost:
        st = "connection closed"
    disarm(ctl)
    tap.ok(st in (500, "connection closed"),
           "%s: a write whose fsync fails is not answered with success (%s)" % (label, st))
    tap.ok(srv.alive(), "%s: the server is still running" % label)
    c.close()
    srv.stop_and_check(tap)

    srv = start(backend, mode, data)
    c = tload.Client(srv.host, srv.port)
    got = {rk: get(c, "fulltab", rk)[0] for rk in
           ["before%d" % i for i in range(5)] + ["after1", "full1", "cut1", "fb0", "fb1"]}
    want = dict((rk, 200) for rk in ["before%d" % i for i in range(5)] + ["after1"])
    want.update({"full1": 404, "cut1": 404, "fb0": 404, "fb1": 404})
    tap.eq(got, want, "%s: after a restart: acknowledged writes there, failed ones not" % label)
    st, b = insert(c, "fulltab", "later")
    tap.eq(st, 204, "%s: writes work after the restart" % label)
    c.close()
    srv.stop_and_check(tap)


ACL = ('<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier>'
       '<Id>keep-me</Id><AccessPolicy><Start>2030-01-01T00:00:00Z</Start>'
       '<Expiry>2031-01-01T00:00:00Z</Expiry><Permission>raud</Permission></AccessPolicy>'
       '</SignedIdentifier></SignedIdentifiers>')
PROPS = ('<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors><CorsRule>'
         '<AllowedOrigins>http://kept.example</AllowedOrigins><AllowedMethods>GET</AllowedMethods>'
         '<MaxAgeInSeconds>60</MaxAgeInSeconds><ExposedHeaders>*</ExposedHeaders>'
         '<AllowedHeaders>*</AllowedHeaders></CorsRule></Cors></StorageServiceProperties>')


def test_metadata(tap, backend, tmp):
    label = "%s/batch" % backend
    data = os.path.join(tmp, "meta-%s" % backend)
    srv = start(backend, "batch", data)
    c = tload.Client(srv.host, srv.port)
    for t in ("KeepOne", "keeptwo", "DropMe"):
        tload.create_table(c, t)
    st, _, b = c.request("DELETE", "/%s/Tables('DropMe')" % ACCT)
    tap.eq(st, 204, "%s: delete table" % label)
    st, _, b = c.request("PUT", "/%s/KeepOne?comp=acl" % ACCT, ACL,
                         [("Content-Type", "application/xml")])
    acl_ok = st == 204
    tap.ok(acl_ok, "%s: set a table ACL (%d)" % (label, st), b[:300])
    st, _, b = c.request("PUT", "/%s/?restype=service&comp=properties" % ACCT, PROPS,
                         [("Content-Type", "application/xml")])
    props_ok = st == 202
    tap.ok(props_ok, "%s: set service properties (%d)" % (label, st), b[:300])
    insert(c, "keeptwo", "row")
    c.close()
    os.kill(srv.proc.pid, signal.SIGKILL)
    srv.proc.wait(10)
    srv.stop()

    srv = start(backend, "batch", data)
    c = tload.Client(srv.host, srv.port)
    st, _, b = c.request("GET", "/%s/Tables" % ACCT)
    names = sorted(t["TableName"] for t in json.loads(b)["value"]) if st == 200 else b
    tap.eq(names, ["KeepOne", "keeptwo"],
           "%s: after kill -9, the created tables are back with their casing, the dropped one "
           "is gone" % label)
    tap.eq(get(c, "keeptwo", "row")[0], 200, "%s: ... with their rows" % label)
    st, _, b = c.request("GET", "/%s/KeepOne?comp=acl" % ACCT)
    tap.ok(b"<Id>keep-me</Id>" in b and b"raud" in b, "%s: the table ACL survived" % label,
           b[:300])
    st, _, b = c.request("GET", "/%s/?restype=service&comp=properties" % ACCT)
    tap.ok(b"http://kept.example" in b, "%s: the service properties survived" % label, b[:300])
    c.close()
    srv.stop_and_check(tap)


def main():
    tap = h.Tap()
    h.watchdog(600, None, tap)
    tmp = tempfile.mkdtemp(prefix="tabled-dur-http-")
    shim = shim_path()
    for backend in ("leveldb", "flatfile"):
        for mode in ("batch", "sync"):
            if shim:
                tap.run(test_disk_full, tap, backend, mode, shim, tmp)
        tap.run(test_metadata, tap, backend, tmp)
    if not shim:
        tap.ok(False, "tests/crash/.libs/libfaultfs.so is built (make check builds it)")
    shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
