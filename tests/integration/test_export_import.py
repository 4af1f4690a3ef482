#!/usr/bin/python3
"""Integration test: tabled export / tabled import.

  sdk        entities of every Edm type, a stored access policy and service
             properties written through the Python SDK into a LevelDB store;
             the server is stopped; export; import into a flat file store
             (twice: idempotent); export again is byte-identical; a server on
             the copy answers the same values, types, ETags, policy and
             properties.
  bulk       100,000 generated entities of every Edm type imported into each
             durable backend (LevelDB, flat file) in batches; the exports
             equal the input entity for entity (type, value, Timestamp) and
             each other byte for byte.
  azurite    the peer emulator (npm azurite, installed into the build tree
             on first use) run on a free loopback port with a temporary
             location; entities of every type and a policy written with the
             SDK; stopped; its __azurite_db_table__.json imported; tabled
             answers the same values, types and ETags.

The memory backend has nothing to export once its process is gone, so it
is not in the round trip (see README, "Backup and restore"). Prints TAP."""
import base64
import datetime
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core import MatchConditions
    from azure.core.exceptions import HttpResponseError
    from azure.data.tables import (EdmType, EntityProperty, TableAccessPolicy,
                                   TableServiceClient)
    from azure.data.tables import TableCorsRule
    IMPORT_ERROR = None
except ImportError as e:
    IMPORT_ERROR = e

UTC = datetime.timezone.utc
KW = dict(retry_total=0, connection_timeout=10, read_timeout=30)
N_BULK = int(os.environ.get("TABLED_EXPORT_N", "100000"))


def tabled(*args, check=True, timeout=600):
    """Runs tabled export/import; returns the CompletedProcess."""
    p = subprocess.run([h.tabled_path()] + list(args), capture_output=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("tabled %s: status %d\n%s" % (" ".join(args), p.returncode,
                                                         p.stderr.decode()[-2000:]))
    return p


def every_type(i=0):
    """An entity with every Edm type (and edge values)."""
    return {
        "PartitionKey": "p%d" % (i % 7), "RowKey": "r%07d" % i,
        "S": "caf\u00e9 \U0001F600 \"q\" \\ %d\n" % i,
        "I": -2147483648 + i,
        "L": EntityProperty(2**62 + i, EdmType.INT64),
        "D": 1.5 + i,
        "D2": EntityProperty(float(i), EdmType.DOUBLE),
        "B": i % 2 == 0,
        "G": uuid.UUID(int=i * 7919 + 1),
        "T": datetime.datetime(2024, 1, 2, 3, 4, 5, i % 1000000, tzinfo=UTC),
        "Bin": bytes([i % 256, 0, 255]),
    }


def etag_ticks(tag):
    """The instant inside W/"datetime'...'" as ticks."""
    inner = tag.split("'")[1].replace("%3A", ":")
    return h.dt_ticks(inner)


def sdk_view(e):
    """Values and types of an SDK entity, comparable across servers."""
    out = {}
    for k, v in e.items():
        if isinstance(v, EntityProperty):
            out[k] = (str(v.edm_type), v.value)
        elif isinstance(v, uuid.UUID):
            out[k] = ("guid", str(v))
        else:
            out[k] = (type(v).__name__, v)
    return out


class Server:
    """tabled on a given store; the harness's Server does the work."""

    def __init__(self, *args):
        self.s = h.Server(args=list(args), backend=None)

    def __enter__(self):
        os.environ.pop("TABLED_BACKEND_ARGS", None)
        self.s.start()
        return self.s

    def __exit__(self, *exc):
        self.s.stop()


def svc_for(port, account=h.DEV_ACCOUNT, key=h.DEV_KEY):
    return TableServiceClient.from_connection_string(
        "DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;"
        "TableEndpoint=http://127.0.0.1:%d/%s;" % (account, key, port, account), **KW)


def test_sdk(tap, tmp):
    d1, d2 = os.path.join(tmp, "sdk-leveldb"), os.path.join(tmp, "sdk-flat")
    pol = {"pol1": TableAccessPolicy(permission="ra",
                                     start=datetime.datetime(2024, 1, 1, tzinfo=UTC),
                                     expiry=datetime.datetime(2030, 1, 1, tzinfo=UTC))}
    with Server("--backend", "leveldb", "--data", d1) as s:
        svc = svc_for(s.port)
        t = svc.create_table("Orders")
        for i in range(5):
            t.create_entity(every_type(i))
        t.set_table_access_policy(pol)
        svc.create_table("EmptyOne")
        svc.set_service_properties(cors=[TableCorsRule(["http://a.example"], ["GET"])])
        before = {e["RowKey"]: (sdk_view(e), e.metadata["etag"]) for e in t.list_entities()}
        props_before = svc.get_service_properties()
    e1, e2 = os.path.join(tmp, "sdk1.jsonl"), os.path.join(tmp, "sdk2.jsonl")
    tabled("export", "--backend", "leveldb", "--data", d1, "-o", e1)
    lines = open(e1, encoding="utf-8").read().splitlines()
    tap.eq(json.loads(lines[0]).get("tabled-export"), 1, "sdk: header line")
    tap.eq(sum(1 for l in lines if '"entity":' in l), 5, "sdk: one line per entity")
    tap.ok(any('"service-properties"' in l for l in lines), "sdk: service properties line")
    for _ in range(2):
        p = tabled("import", "--backend", "flatfile", "--data", d2, e1)
    tap.ok(b"5 entities" in p.stderr, "sdk: import reports its count", p.stderr.decode())
    d3 = os.path.join(tmp, "sdk-stdin")
    p = subprocess.run([h.tabled_path(), "import", "--backend", "flatfile", "--data", d3, "-"],
                       stdin=open(e1, "rb"), capture_output=True, timeout=60)
    tap.ok(p.returncode == 0 and b"2 tables, 5 entities" in p.stderr,
           "sdk: import - reads standard input", p.stderr.decode()[-300:])
    tabled("export", "--backend", "flatfile", "--data", d2, "-o", e2)
    tap.ok(open(e1, "rb").read() == open(e2, "rb").read(),
           "sdk: export of the copy (imported twice) is byte-identical")
    with Server("--backend", "flatfile", "--data", d2) as s:
        svc = svc_for(s.port)
        t = svc.get_table_client("Orders")
        after = {e["RowKey"]: (sdk_view(e), e.metadata["etag"]) for e in t.list_entities()}
        tap.eq(after, before, "sdk: values, types and ETags equal on the copy")
        got = t.get_access_policy() if hasattr(t, "get_access_policy") else \
            t.get_table_access_policy()
        tap.eq(sorted(got), ["pol1"], "sdk: stored access policy kept")
        tap.eq(got["pol1"].permission, "ra", "sdk: policy permission kept")
        props = svc.get_service_properties()
        tap.eq([r.allowed_origins for r in props["cors"]],
               [r.allowed_origins for r in props_before["cors"]], "sdk: service properties")
        tap.eq(sorted(x.name for x in svc.list_tables()), ["EmptyOne", "Orders"],
               "sdk: tables, casing kept")
    one = os.path.join(tmp, "one.jsonl")
    tabled("export", "--backend", "flatfile", "--data", d2, "--table", "orders", "-o", one)
    ls = open(one, encoding="utf-8").read().splitlines()
    tap.ok(len(ls) == 7 and all("EmptyOne" not in l for l in ls),
           "sdk: --table exports one table (case-insensitive)", "\n".join(ls[:3]))
    p = tabled("export", "--backend", "flatfile", "--data", d2, "--table", "nosuch",
               check=False)
    tap.ok(p.returncode == 1 and b"no table nosuch" in p.stderr, "sdk: unknown --table refused")
    bad = os.path.join(tmp, "bad.jsonl")
    for text, what in (('{"account":"devstoreaccount1","table":"a-b","acl":""}\n',
                        "line 2: invalid table name"),
                       ('{"account":"devstoreaccount1","table":"Tab1","ticks":%d,"entity":'
                        '{"PartitionKey":"p"}}\n' % 638400000000000000,
                        "line 2: entity refused ("),
                       ('not json\n', "line 2: not a JSON object")):
        open(bad, "w").write('{"tabled-export":1,"version":"test"}\n' + text)
        p = tabled("import", "--backend", "flatfile", "--data", d2, bad, check=False)
        tap.ok(p.returncode == 1 and what.encode() in p.stderr,
               "sdk: bad import line refused: %s" % what, p.stderr.decode()[-300:])
    with Server("--backend", "leveldb", "--data", d1):
        p = tabled("export", "--backend", "leveldb", "--data", d1, check=False)
        tap.ok(p.returncode == 1 and b"is the server running" in p.stderr,
               "sdk: a store in use is refused with a hint", p.stderr.decode()[-300:])


def typed(ent):
    """{name: (Edm type, normalized value)} of an OData JSON entity."""
    out = {}
    for k, v in ent.items():
        if k.startswith("odata.") or "@" in k or k == "Timestamp":
            continue
        t = ent.get(k + "@odata.type")
        if t is None:
            t = {str: "Edm.String", bool: "Edm.Boolean", int: "Edm.Int32",
                 float: "Edm.Double"}[type(v)]
        if t == "Edm.Double":
            v = float(v)
        elif t == "Edm.Int64":
            v = int(v)
        elif t == "Edm.DateTime":
            v = v.rstrip("Z").rstrip("0").rstrip(".")
        elif t == "Edm.Guid":
            v = v.lower()
        out[k] = (t, v)
    return out


def gen_bulk(path, n):
    """n entities of every type in the export format; returns their map."""
    want = {}
    base = 638400000000000000
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"tabled-export":1,"version":"test"}\n')
        f.write('{"account":"devstoreaccount1","table":"Bulk","acl":""}\n')
        for i in range(n):
            e = {"PartitionKey": "p%03d" % (i % 500), "RowKey": "r%08d" % i,
                 "S": "s\u00e9%d" % i, "I": i - 50000,
                 "L@odata.type": "Edm.Int64", "L": str(-(2**63) + i),
                 "D@odata.type": "Edm.Double", "D": float(i) / 8,
                 "B": i % 3 == 0,
                 "G@odata.type": "Edm.Guid", "G": str(uuid.UUID(int=i)),
                 "T@odata.type": "Edm.DateTime",
                 "T": "2025-03-04T05:06:07.%07dZ" % (i % 10000000),
                 "Bin@odata.type": "Edm.Binary",
                 "Bin": base64.b64encode(i.to_bytes(4, "big")).decode()}
            ticks = base + i * 10000
            f.write(json.dumps({"account": "devstoreaccount1", "table": "Bulk", "ticks": ticks,
                                "entity": e}, separators=(",", ":")) + "\n")
            want[(e["PartitionKey"], e["RowKey"])] = (ticks, typed(e))
    return want


def read_export(path):
    got = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            o = json.loads(line)
            if "entity" in o:
                e = o["entity"]
                got[(e["PartitionKey"], e["RowKey"])] = (o["ticks"], typed(e))
    return got


def test_bulk(tap, tmp):
    src = os.path.join(tmp, "bulk.jsonl")
    want = gen_bulk(src, N_BULK)
    outs = []
    for backend in ("leveldb", "flatfile"):
        d = os.path.join(tmp, "bulk-" + backend)
        t0 = time.monotonic()
        p = tabled("import", "--backend", backend, "--data", d, "--durability", "batch", src)
        t1 = time.monotonic()
        out = os.path.join(tmp, "bulk-%s.jsonl" % backend)
        tabled("export", "--backend", backend, "--data", d, "-o", out)
        t2 = time.monotonic()
        tap.diag("%s: import %.2f s, export %.2f s, %d entities" % (backend, t1 - t0, t2 - t1,
                                                                      N_BULK))
        tap.ok(("%d entities" % N_BULK).encode() in p.stderr, "bulk %s: import count" % backend,
               p.stderr.decode()[-300:])
        got = read_export(out)
        tap.eq(len(got), N_BULK, "bulk %s: every entity exported" % backend)
        bad = [k for k in want if got.get(k) != want[k]]
        tap.ok(not bad, "bulk %s: types, values and Timestamps equal the input" % backend,
               bad and "first: %r\nwant %r\ngot  %r" % (bad[0], want[bad[0]], got.get(bad[0])))
        outs.append(out)
    tap.ok(open(outs[0], "rb").read() == open(outs[1], "rb").read(),
           "bulk: LevelDB and flat file exports are byte-identical")


def azurite_bin():
    """azurite-table from npm (cached in the build tree), or (None, why)."""
    top = os.environ.get("TOP_BUILDDIR", ".")
    for exe in (os.environ.get("AZURITE_TABLE"),
                os.path.join(top, "tests", "bench-deps", "node_modules", ".bin", "azurite-table"),
                os.path.join(top, "tests", "azurite-deps", "node_modules", ".bin",
                             "azurite-table")):
        if exe and os.access(exe, os.X_OK):
            return exe, None
    npm = shutil.which("npm")
    if not npm:
        return None, "npm not found"
    deps = os.path.join(top, "tests", "azurite-deps")
    os.makedirs(deps, exist_ok=True)
    p = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error",
                        "--prefix", deps, "azurite@3"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=300)
    exe = os.path.join(deps, "node_modules", ".bin", "azurite-table")
    if p.returncode != 0 or not os.access(exe, os.X_OK):
        return None, "npm install azurite failed: %s" % p.stdout.decode()[-500:]
    return exe, None


def test_azurite(tap, tmp):
    exe, why = azurite_bin()
    if not exe:
        tap.ok(False, "azurite from npm", why)
        return
    loc = os.path.join(tmp, "azurite")
    os.makedirs(loc)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([exe, "--tableHost", "127.0.0.1", "--tablePort", str(port),
                             "-l", loc, "--skipApiVersionCheck", "--disableTelemetry"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, cwd=loc)
    q = queue.Queue()
    threading.Thread(target=lambda: [q.put(l) for l in proc.stdout], daemon=True).start()
    end = time.monotonic() + 60
    ready = False
    while time.monotonic() < end and not ready:
        try:
            ready = b"successfully started" in q.get(timeout=1)
        except queue.Empty:
            ready = proc.poll() is not None and False
    tap.ok(ready, "azurite: started")
    if not ready:
        proc.kill()
        return
    try:
        svc = svc_for(port)
        t = svc.create_table("FromAzurite")
        for i in range(4):
            t.create_entity(every_type(i))
        t.set_table_access_policy({"p1": TableAccessPolicy(
            permission="r", start=datetime.datetime(2024, 1, 1, tzinfo=UTC),
            expiry=datetime.datetime(2031, 1, 1, tzinfo=UTC))})
        svc.create_table("Second").create_entity({"PartitionKey": "a", "RowKey": "b"})
        before = {e["RowKey"]: (sdk_view(e), e.metadata["etag"]) for e in t.list_entities()}
    finally:
        proc.send_signal(signal.SIGINT)      # Azurite saves its database on SIGINT
        proc.wait(30)
    db = os.path.join(loc, "__azurite_db_table__.json")
    tap.ok(os.path.exists(db), "azurite: database file written")
    d = os.path.join(tmp, "from-azurite")
    p = tabled("import", "--from-azurite", "--backend", "leveldb", "--data", d, db)
    tap.ok(b"2 tables, 5 entities" in p.stderr, "azurite: import counts", p.stderr.decode())
    with Server("--backend", "leveldb", "--data", d) as s:
        svc = svc_for(s.port)
        t = svc.get_table_client("FromAzurite")
        after = {e["RowKey"]: (sdk_view(e), etag_ticks(e.metadata["etag"]))
                 for e in t.list_entities()}
        # Azurite writes an ETag's fraction with 7 digits, tabled without
        # trailing zeros: the instant (ticks) is what must survive.
        tap.eq(after, {k: (v, etag_ticks(tag)) for k, (v, tag) in before.items()},
               "azurite: values, types and ETag instants as Azurite served them")
        rk, (_, tag) = sorted(before.items())[0]
        e = t.get_entity("p0", rk)
        e["S"] = "changed"
        try:
            t.update_entity(e, etag=tag, match_condition=MatchConditions.IfNotModified)
            why = None
        except HttpResponseError as ex:
            why = "%s %s" % (ex.status_code, ex.message[:200])
        tap.ok(why is None, "azurite: an ETag Azurite issued still matches (If-Match)", why)
        tap.eq(sorted(t.get_table_access_policy()), ["p1"], "azurite: stored access policy")
        tap.eq(sorted(x.name for x in svc.list_tables()), ["FromAzurite", "Second"],
               "azurite: tables")


def main():
    tap = h.Tap()
    h.watchdog(900, tap=tap)
    if IMPORT_ERROR:
        tap.ok(False, "azure-data-tables importable", str(IMPORT_ERROR))
        tap.done()
    tmp = tempfile.mkdtemp(prefix="tabled-export-")
    try:
        tap.run(test_sdk, tap, tmp)
        tap.run(test_bulk, tap, tmp)
        tap.run(test_azurite, tap, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
