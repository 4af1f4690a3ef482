#!/usr/bin/python3
"""Integration test: tabled import --admin URL FILE seeds a running server.

A source server (memory) gets, through the Python SDK, two tables (one
with a stored access policy), 1,500 entities of about 1 KiB of several
types in several partitions (so the file goes in several pieces) and
CORS service properties; `tabled export --admin` writes its file. Then,
for each target backend (memory, LevelDB, flat file, the test plug-in
whose calls complete later, and PostgreSQL when it can be run), a target
server started with an admin token:
  - without the token the import is refused (exit 1, naming
    --admin-token) and writes nothing; with it, exit 0 and the summary
    names the tables and entities;
  - through the SDK on the target: the tables, every entity with its
    Timestamp and ETag, the access policy and the CORS rules are the
    source's; the account's entity gauge on /metrics counts them;
  - a reader doing point GETs throughout the import got every answer.
Then, on a memory target: an invalid file (a valid table line, then a
broken line) is refused before anything is sent (the table does not
appear); a raw POST /import whose third line is broken answers 400 naming
line 3 and writes nothing of it; a body without the header line is 400;
GET /import is 405; an account the server does not serve is stored and
named in a warning; the table port given as --admin is recognised;
importing the file twice gives the same data. Prints TAP."""
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pg_harness  # noqa: E402
import tabled_harness as h  # noqa: E402

try:
    from azure.data.tables import (EdmType, EntityProperty, TableAccessPolicy,
                                   TableCorsRule, TableServiceClient, UpdateMode)
    IMPORT_ERROR = None
except ImportError as e:
    IMPORT_ERROR = e

KW = dict(retry_total=0, connection_timeout=10, read_timeout=60)
TOKEN = "import-token-0123456789"
NENT = 1500
TOP = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")


def tabled(*args, env=None):
    """Runs the tabled tool; (status, stderr text)."""
    p = subprocess.run([h.tabled_path()] + list(args), capture_output=True, timeout=600,
                       env=env)
    return p.returncode, p.stderr.decode("utf-8", "replace")


admin_port = h.admin_port


def svc_for(srv):
    return TableServiceClient.from_connection_string(srv.conn_str(), **KW)


def admin_request(srv, method, path, body=None, token=TOKEN):
    c = http.client.HTTPConnection("127.0.0.1", admin_port(srv), timeout=60)
    headers = {"Authorization": "Bearer " + token} if token else {}
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read().decode("utf-8", "replace")
    c.close()
    return r.status, data


def entity_gauge(srv, account="devstoreaccount1"):
    _, text = admin_request(srv, "GET", "/metrics")
    m = re.search(r'^tabled_entities\{account="%s"\} (\d+)' % account, text, re.M)
    return int(m.group(1)) if m else None


def gauge_settles(srv, want, seconds=60):
    """The entity gauge once it equals want (the Probe table's entity is
    purged in the background after its delete), or its last value."""
    end = time.monotonic() + seconds
    while True:
        got = entity_gauge(srv)
        if got == want or time.monotonic() >= end:
            return got
        time.sleep(0.2)


def fill_source(svc):
    """Tables, entities, policy and CORS on the source server."""
    a = svc.create_table("Seeded")
    b = svc.create_table("Other")
    a.set_table_access_policy({"reader": TableAccessPolicy(
        permission="r", start="2026-01-01T00:00:00Z", expiry="2030-01-01T00:00:00Z")})
    svc.set_service_properties(cors=[TableCorsRule(["https://example.org"], ["GET", "PUT"])])
    pad = "x" * 1000
    for p in range(5):
        ops = []
        for i in range(NENT // 5):
            ops.append(("upsert", {"PartitionKey": "p%d" % p, "RowKey": "r%05d" % i,
                                   "Pad": pad, "N": i, "Big": EntityProperty(2 ** 40 + i, EdmType.INT64), "F": i / 4.0,
                                   "Flag": i % 2 == 0, "Bin": bytes([i % 256, 0, 255])},
                        {"mode": UpdateMode.REPLACE}))
            if len(ops) == 100:
                a.submit_transaction(ops)
                ops = []
        if ops:
            a.submit_transaction(ops)
    b.create_entity({"PartitionKey": "only", "RowKey": "one", "Text": "héllo"})


def snapshot(svc):
    """Everything the SDK shows of the account: tables, their entities
    (with Timestamp and ETag), policies and CORS rules."""
    out = {}
    for t in sorted(x.name for x in svc.list_tables()):
        tc = svc.get_table_client(t)
        ents = []
        for e in tc.list_entities():
            d = dict(e)
            d["_etag"] = e.metadata.get("etag")
            d["_ts"] = str(e.metadata.get("timestamp"))
            ents.append(d)
        ents.sort(key=lambda d: (d["PartitionKey"], d["RowKey"]))
        pol = tc.get_table_access_policy()
        out[t] = {"entities": ents,
                  "acl": {k: (v.permission, str(v.start), str(v.expiry))
                          for k, v in pol.items()}}
    cors = svc.get_service_properties()["cors"]
    out["_cors"] = [(r.allowed_origins, r.allowed_methods) for r in cors]
    return out


def target(backend, tmp, pg=None):
    """A target server of that backend, with an admin listener and token."""
    args = ["--admin-port", "0", "--admin-token", TOKEN]
    if backend == "memory":
        return h.Server(backend="memory", args=args, ready_timeout=60)
    if backend == "deferred":
        so = os.path.abspath(os.path.join(TOP, "backends", "examples", ".libs",
                                          "libdeferred.so"))
        return h.Server(backend=so, args=args + ["--backend-option", "deferred-ms=1"],
                        ready_timeout=60)
    if backend == "postgres":
        return h.Server(backend="postgres",
                        args=args + ["--backend-option", "conninfo=" + pg.new_db("imp")],
                        ready_timeout=60)
    return h.Server(backend=backend, args=args, ready_timeout=60)


def check_backend(tap, backend, path, expect, pg=None):
    srv = target(backend, None, pg)
    srv.start()
    try:
        url = "http://127.0.0.1:%d" % admin_port(srv)
        env = dict(os.environ)
        env.pop("TABLED_ADMIN_TOKEN", None)
        rc, err = tabled("import", "--admin", url, path, env=env)
        tap.ok(rc == 1 and "--admin-token" in err,
               "%s: without the token the import is refused and says how to give it"
               % backend, err)
        tap.eq(len(list(svc_for(srv).list_tables())), 0,
               "%s: and nothing was written" % backend)
        # a reader of point GETs on the target while the import runs
        stop = threading.Event()
        reads = {"ok": 0, "bad": []}

        def reader():
            c = svc_for(srv).create_table_if_not_exists("Probe")
            c.upsert_entity({"PartitionKey": "p", "RowKey": "r"})
            while not stop.is_set():
                try:
                    c.get_entity("p", "r")
                    reads["ok"] += 1
                except Exception as e:  # noqa: BLE001
                    reads["bad"].append(repr(e))
        th = threading.Thread(target=reader, daemon=True)
        th.start()
        env["TABLED_ADMIN_TOKEN"] = TOKEN
        rc, err = tabled("import", "--admin", url, path, env=env)
        stop.set()
        th.join(60)
        tap.ok(rc == 0 and "2 tables, %d entities" % (NENT + 1) in err,
               "%s: with the token (from $TABLED_ADMIN_TOKEN) it imports and says what"
               % backend, err)
        tap.ok(reads["ok"] > 0 and not reads["bad"],
               "%s: point GETs during the import were all answered (%d)"
               % (backend, reads["ok"]), "; ".join(reads["bad"][:3]))
        svc = svc_for(srv)
        svc.delete_table("Probe")
        got = snapshot(svc)
        tap.ok(got == expect, "%s: tables, entities (Timestamps, ETags), policy and CORS "
               "rules are the source's" % backend,
               "tables %r vs %r" % (sorted(got), sorted(expect)))
        tap.eq(gauge_settles(srv, NENT + 1), NENT + 1,
               "%s: the entity gauge counts them" % backend)
        rc, err = tabled("import", "--admin", url, "--admin-token", TOKEN, path)
        tap.ok(rc == 0 and snapshot(svc_for(srv)) == expect and
               entity_gauge(srv) == NENT + 1,
               "%s: importing again changes nothing (idempotent)" % backend, err)
    finally:
        srv.stop()


def check_refusals(tap, tmp, path):
    srv = target("memory", tmp)
    srv.start()
    try:
        url = "http://127.0.0.1:%d" % admin_port(srv)
        bad = os.path.join(tmp, "bad.jsonl")
        header = open(path).readline()
        with open(bad, "w") as f:
            f.write(header)
            f.write('{"account":"devstoreaccount1","table":"Early","acl":""}\n')
            f.write('{"account":"devstoreaccount1","table":"Early","ticks":1,"entity":[}\n')
        rc, err = tabled("import", "--admin", url, "--admin-token", TOKEN, bad)
        tap.ok(rc == 1 and "line 3" in err and "nothing was imported" in err,
               "an invalid file is refused naming its line", err)
        tap.eq([t.name for t in svc_for(srv).list_tables()], [],
               "and nothing of it was sent (its valid table line before the bad one too)")
        body = open(bad).read()
        st, data = admin_request(srv, "POST", "/import", body)
        j = json.loads(data) if data.startswith("{") else {}
        tap.ok(st == 400 and j.get("line") == 3 and "error" in j,
               "a raw POST /import with a bad third line: 400 naming line 3", data)
        tap.eq([t.name for t in svc_for(srv).list_tables()], [],
               "and the server wrote nothing of that piece")
        st, data = admin_request(srv, "POST", "/import",
                                 '{"account":"devstoreaccount1","table":"NoHead","acl":""}\n')
        tap.ok(st == 400 and "header" in data, "a body without the header line: 400", data)
        st, _ = admin_request(srv, "GET", "/import")
        tap.eq(st, 405, "GET /import: 405")
        st, _ = admin_request(srv, "POST", "/import", header, token=None)
        tap.eq(st, 401, "POST /import without the token: 401")
        other = os.path.join(tmp, "other.jsonl")
        with open(other, "w") as f:
            f.write(header)
            f.write('{"account":"someoneelse","table":"Theirs","acl":""}\n')
            f.write('{"account":"someoneelse","table":"Theirs","ticks":638000000000000000,'
                    '"entity":{"PartitionKey":"a","RowKey":"b"}}\n')
        rc, err = tabled("import", "--admin", url, "--admin-token", TOKEN, other)
        tap.ok(rc == 0 and "does not serve account someoneelse" in err,
               "an account the server does not serve is stored, with a warning naming it",
               err)
        rc, err = tabled("import", "--admin", "http://%s:%d" % (srv.host, srv.port),
                         "--admin-token", TOKEN, path)
        tap.ok(rc == 1 and "is the table port" in err,
               "the table port given as --admin is recognised", err)
        rc, err = tabled("import", "--admin", url, "--from-azurite", path)
        tap.ok(rc == 2 and "--from-azurite" in err,
               "--from-azurite with --admin is refused, saying what to do instead", err)
        rc, err = tabled("import", "--admin", url, "--backend", "leveldb", path)
        tap.ok(rc == 2 and "no store options" in err,
               "--admin with store options is refused", err)
    finally:
        srv.stop()


def main():
    tap = h.Tap()
    if IMPORT_ERROR is not None:
        tap.ok(False, "azure-data-tables is importable", str(IMPORT_ERROR))
        tap.done()
        return
    h.watchdog(900, tap=tap)
    tmp = tempfile.mkdtemp(prefix="tabled-import-admin-")
    src = h.Server(backend="memory", args=["--admin-port", "0"]).start()
    try:
        fill_source(svc_for(src))
        expect = snapshot(svc_for(src))
        path = os.path.join(tmp, "seed.jsonl")
        rc, err = tabled("export", "--admin", "http://127.0.0.1:%d" % admin_port(src),
                         "-o", path)
        tap.ok(rc == 0, "the source exports", err)
        tap.ok(os.path.getsize(path) > 3 * 512 * 1024,
               "the file is large enough to go in several pieces (%d bytes)"
               % os.path.getsize(path))
    finally:
        src.stop()
    for backend in ("memory", "leveldb", "flatfile", "deferred"):
        check_backend(tap, backend, path, expect)
    reason = pg_harness.skip_reason(TOP)
    if reason:
        tap.ok(True, "# SKIP postgres: " + reason)
    else:
        pg = pg_harness.PgServer().create()
        try:
            check_backend(tap, "postgres", path, expect, pg)
        finally:
            pg.cleanup()
    check_refusals(tap, tmp, path)
    tap.done()


if __name__ == "__main__":
    main()
