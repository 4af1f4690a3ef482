#!/usr/bin/python3
"""test_import_pg.py - tabled import (and the offline export) on the
postgres backend, whose calls complete later on the tool's event loop.

A private PostgreSQL (tests/integration/pg_harness.py) and one tabled front
end on it that keeps running throughout (the store is shared): the front
end creates a table and creates and deletes another, so the table id
counter is ahead of every table row; then `tabled import --backend postgres
--backend-option conninfo=...` loads 3,000 entities of every Edm type (the
generator of test_export_import.py) into a new table, in batches of 500,
twice (idempotent). Checked: the import's count; the running front end
serves an imported entity; imported tables took ids above every id the
front end had used (claimed from the counter, so a deleted table's id is
never reused), and a table the front end creates afterwards gets yet
another; `tabled export --backend postgres` writes every entity with its
type, value and Timestamp. Skipped (TAP) when tabled has no postgres
backend or the PostgreSQL server binaries are missing.

TABLED and TOP_BUILDDIR as under make check."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import pg_harness  # noqa: E402
import tabled_harness as h  # noqa: E402
from test_export_import import gen_bulk, read_export  # noqa: E402

TOP = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
N = 3000


def tabled(*args):
    """Runs tabled export/import; returns the CompletedProcess."""
    return subprocess.run([h.tabled_path()] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=300)


def table_ids(pg, db):
    """{lower(table name): id} from the table rows ('t' account 0x00 name
    -> u8 1, be64 id, ...), and the id counter's next id ('n' "tableid")."""
    rows = pg.psql("SELECT encode(kp, 'hex'), encode(substring(v from 2 for 8), 'hex') "
                   "FROM tabled_kv WHERE kp >= '\\x74'::bytea AND kp < '\\x75'::bytea", db)
    ids = {}
    for ln in rows.split():
        k, v = ln.split("|")
        ids[bytes.fromhex(k).split(b"\0", 1)[1].decode()] = int(v, 16)
    nxt = pg.psql("SELECT encode(substring(v from 2 for 8), 'hex') FROM tabled_kv "
                  "WHERE kp = '\\x6e7461626c656964'::bytea", db).strip()
    return ids, int(nxt, 16) if nxt else None


def main():
    tap = h.Tap()
    if not os.path.exists(os.path.join(TOP, "tests", "unit", "test_backend_pg")):
        print("1..0 # SKIP tabled was configured without libpq (no postgres backend)")
        return
    reason = pg_harness.skip_reason()
    if reason:
        print("1..0 # SKIP " + reason)
        return
    h.watchdog(600, tap=tap)
    tmp = tempfile.mkdtemp(prefix="tabled-import-pg-")
    pg = pg_harness.PgServer().create()
    try:
        ci = pg.new_db("import")
        db = ci.split("dbname=")[1]
        store = ["--backend", "postgres", "--backend-option", "conninfo=" + ci]
        src = os.path.join(tmp, "bulk.jsonl")
        want = gen_bulk(src, N)
        with h.Server(args=["--auth", "off", "--backend-option", "conninfo=" + ci],
                      backend="postgres") as srv:
            http = h.Http(srv)
            ok = [http.request("POST", "/Tables", body={"TableName": n}).status
                  for n in ("Before", "Gone")]
            ok.append(http.request("DELETE", "/Tables('Gone')").status)
            tap.eq(ok, [201, 201, 204], "the front end creates two tables and deletes one")
            before, counter = table_ids(pg, db)
            for run in (1, 2):
                p = tabled("import", "--batch", "500", src, *store)
                tap.ok(p.returncode == 0 and ("%d entities" % N).encode() in p.stderr,
                       "import into postgres, run %d: status 0, %d entities" % (run, N),
                       p.stderr.decode("utf-8", "replace")[-600:])
            r = http.request("GET", "/Bulk(PartitionKey='p007',RowKey='r00000007')")
            tap.ok(r.status == 200 and r.json().get("I") == 7 - 50000,
                   "the running front end serves an imported entity", repr(r))
            after, _ = table_ids(pg, db)
            tap.ok(counter is not None and after.get("bulk", 0) >= counter and
                   after.get("before") == before.get("before"),
                   "the imported table's id (%s) comes from the counter (%s), above the "
                   "deleted table's" % (after.get("bulk"), counter))
            r = http.request("POST", "/Tables", body={"TableName": "After"})
            r2 = http.request("GET", "/After()")
            final, _ = table_ids(pg, db)
            tap.ok(r.status == 201 and r2.status == 200 and r2.json()["value"] == [] and
                   len(set(final.values())) == len(final),
                   "a table created afterwards gets an id of its own (empty)", repr(final))
        out = os.path.join(tmp, "out.jsonl")
        p = tabled("export", "-o", out, *store)
        tap.ok(p.returncode == 0, "export from postgres",
               p.stderr.decode("utf-8", "replace")[-600:])
        got = read_export(out) if p.returncode == 0 else {}
        tap.eq(len(got), N, "every entity exported")
        bad = [k for k in want if got.get(k) != want[k]][:3]
        tap.ok(not bad, "types, values and Timestamps equal the input", repr(bad))
        p = tabled("import", src, "--backend", "postgres", "--backend-option",
                   "conninfo=host=/nonexistent port=1")
        tap.ok(p.returncode == 1 and b"cannot open the postgres store" in p.stderr,
               "an unreachable database: status 1, saying so",
               p.stderr.decode("utf-8", "replace")[-300:])
    finally:
        pg.cleanup()
        subprocess.run(["rm", "-rf", tmp])
    tap.done()


if __name__ == "__main__":
    main()
