#!/usr/bin/python3
"""test_pg_batch_trips.py - a $batch of 100 operations on the postgres
backend is one transaction in a few round trips (issue 16), whatever the
operations: inserts, Insert Or Replace, Insert Or Merge, and Update, Merge
and Delete under If-Match "*" (which on a shared store read each entity
first, so that the new Timestamp exceeds the version replaced: the reads
of a changeset go to the database together, as one statement).

How round trips are counted: the private PostgreSQL (pg_harness.py) logs
every statement it executes (log_statement=all) with its virtual
transaction id (log_line_prefix %v). tabled sends each call as one
pipeline that ends in a sync, and the sync ends the pipeline's implicit
transaction, so every round trip from tabled is one virtual transaction
id in the log; the test counts the distinct ids of the statements
executed while one $batch ran. The store's once-a-second probe (a get of
the table-id counter row) is left out of the count. Each batch must take
at most MAX_TRIPS (today: the table's catalogue row, the reads, the
writes); before the reads were combined a changeset of 100 upserts took
102.

Also checked through the answers: every operation succeeded, ETags of a
rewritten entity increase, merges keep the properties they do not name,
deletes delete; a changeset of inserts whose last operation is invalid
(its earlier inserts are read, in one statement, to see whether one of
them fails first) answers that one in at most MAX_TRIPS round trips too;
a changeset whose operation 20 fails on its read (Merge
"*" of an absent entity, 404) and whose operation 37 fails without one
(a stale ETag, 412) answers 20, and the reverse answers 20 too; neither
writes anything.

A point GET of a table the front end has read before is one round trip
(the table's row and the entity under the id the front end saw last, read
by one statement); after the table is deleted and created again (a new
id), the guess is refuted by the row: the old entity is not answered, the
new one is, and a GET of a deleted table answers TableNotFound.

A single Insert Or Replace, Insert Or Merge, Merge or Delete under
If-Match "*" reads the entity it replaces together with the table's row
(one statement, as the point GET does) and then writes: two round trips
(three before); after the table is re-created the old table's entities
are neither merged into nor deleted.

Skipped (TAP "1..0 # SKIP") when tabled has no postgres backend or the
PostgreSQL server binaries are missing."""
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, HERE)
import pg_harness  # noqa: E402
import tabled_harness as h  # noqa: E402

TOP = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
MAX_TRIPS = 3
N = 100
# The store probe's key ends with "tableid" (store/keys.h KEY_TAG_COUNTER).
PROBE_HEX = "7461626c65696427"
LOG_PREFIX = "vxid=%v "


def batch_body(base, table, ops, boundary="batch_tr", cs="changeset_tr"):
    """A $batch of one changeset: ops are (method, pk, rk, entity or None,
    If-Match or None)."""
    parts = []
    for i, (method, pk, rk, ent, if_match) in enumerate(ops):
        body = json.dumps(ent) if ent is not None else ""
        im = "If-Match: %s\r\n" % if_match if if_match else ""
        path = ("/%s" % table if method == "POST"
                else "/%s(PartitionKey='%s',RowKey='%s')" % (table, pk, rk))
        parts.append("--%s\r\nContent-Type: application/http\r\n"
                     "Content-Transfer-Encoding: binary\r\n\r\n"
                     "%s %s%s HTTP/1.1\r\nContent-ID: %d\r\n%s"
                     "Content-Type: application/json\r\n"
                     "Accept: application/json;odata=minimalmetadata\r\n"
                     "Content-Length: %d\r\n\r\n%s\r\n"
                     % (cs, method, base, path, i + 1, im, len(body.encode()), body))
    inner = "".join(parts) + "--%s--\r\n" % cs
    return ("--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n%s--%s--\r\n"
            % (boundary, cs, inner, boundary)).encode(), "multipart/mixed; boundary=" + boundary


class Trips:
    """Round trips seen in the server log between mark() and count()."""

    def __init__(self, pg):
        self.path = pg.log
        self.off = 0

    def mark(self):
        self.off = os.path.getsize(self.path)

    def count(self):
        """(round trips, statements) since mark(), the probe left out."""
        with open(self.path, "rb") as f:
            f.seek(self.off)
            text = f.read().decode("utf-8", "replace")
        txs = {}
        for ln in text.splitlines():
            m = re.match(r"vxid=(\S+) .*?(LOG|DETAIL):\s+(.*)", ln)
            if not m or m.group(1) in ("", "-"):
                continue
            t = txs.setdefault(m.group(1), {"stmts": [], "params": []})
            if m.group(2) == "LOG" and re.match(r"(execute|statement)", m.group(3)):
                t["stmts"].append(m.group(3))
            elif m.group(2) == "DETAIL":
                t["params"].append(m.group(3))
        trips = stmts = 0
        for t in txs.values():
            if not t["stmts"]:
                continue
            # the probe is a get, sent as a multi-get of one key
            probe = (len(t["stmts"]) == 1 and "WHERE kp = ANY ($1)" in t["stmts"][0] and
                     any(PROBE_HEX in p for p in t["params"]))
            if probe:
                continue
            trips += 1
            stmts += len(t["stmts"])
        return trips, stmts


def parts_of(r):
    """Status codes of a changeset answer's parts."""
    return [int(c) for c in re.findall(rb"HTTP/1\.1 (\d{3})", r.body)]


def run_batch(tap, http, trips, name, ops, want):
    """Sends one changeset, checks every part answers want, and its round
    trips; returns the answer."""
    body, ctype = batch_body(http.server.base, "trips", ops)
    trips.mark()
    r = http.request("POST", "/$batch", body=body, content_type=ctype)
    n, stmts = trips.count()
    codes = parts_of(r)
    tap.ok(r.status == 202 and len(codes) == len(ops) and all(c == want for c in codes),
           "%s: %d operations answered %d" % (name, len(ops), want),
           "%s %r" % (r.status, r.body[:400]))
    tap.ok(n <= MAX_TRIPS, "%s: %d round trips (at most %d), %d statements"
           % (name, n, MAX_TRIPS, stmts))
    return r


def etag_of(http, rk):
    """(Timestamp ticks, entity) of an entity of partition p, or (None,
    None) when absent."""
    r = http.request("GET", "/trips(PartitionKey='p',RowKey='%s')" % rk)
    if r.status != 200:
        return None, None
    e = r.json()
    return h.dt_ticks(e["Timestamp"]), e


def configure_log(pg):
    """Every statement logged with its virtual transaction id; waits until
    new connections see the setting (the server reloads asynchronously)."""
    pg.psql("ALTER SYSTEM SET log_statement = 'all'")
    pg.psql("ALTER SYSTEM SET log_line_prefix = '%s'" % LOG_PREFIX)
    pg.psql("ALTER SYSTEM SET log_parameter_max_length = 64")
    pg.psql("SELECT pg_reload_conf()")
    for _ in range(100):
        if pg.psql("SHOW log_line_prefix").strip() == LOG_PREFIX.strip():
            return True
        time.sleep(0.1)
    return False


def main():
    reason = pg_harness.skip_reason(TOP)
    if reason:
        print("1..0 # SKIP " + reason)
        return
    tap = h.Tap()
    pg = pg_harness.PgServer().create()
    try:
        tap.ok(configure_log(pg), "the server logs every statement with its transaction")
        ci = pg.new_db("trips")
        with h.Server(args=["--backend-option", "conninfo=" + ci], backend="postgres") as srv:
            check(tap, srv, Trips(pg))
    finally:
        pg.cleanup()
    tap.done()


def check(tap, srv, trips):
    http = h.Http(srv)
    tap.eq(http.request("POST", "/Tables", body={"TableName": "trips"}).status, 201,
           "create table")
    rks = ["r%03d" % i for i in range(N)]
    run_batch(tap, http, trips, "insert", [("POST", "p", rk, {
        "PartitionKey": "p", "RowKey": rk, "v": 1, "keep": "k"}, None) for rk in rks], 201)
    tag0, e = etag_of(http, "r050")
    stale = e["Timestamp"]
    run_batch(tap, http, trips, "insert or replace",
              [("PUT", "p", rk, {"v": 2, "keep": "k"}, None) for rk in rks], 204)
    tag1, e = etag_of(http, "r050")
    tap.ok(tag1 and tag1 > tag0 and e and e.get("v") == 2, "insert or replace: rewritten",
           "%r %r %r" % (tag0, tag1, e))
    run_batch(tap, http, trips, "insert or merge",
              [("MERGE", "p", rk, {"m": 3}, None) for rk in rks], 204)
    tag2, e = etag_of(http, "r050")
    tap.ok(tag2 and tag2 > tag1 and e and e.get("v") == 2 and e.get("keep") == "k" and
           e.get("m") == 3, "insert or merge: merged into what was there, new ETag",
           "%r %r %r" % (tag1, tag2, e))
    run_batch(tap, http, trips, "update If-Match *",
              [("PUT", "p", rk, {"v": 4}, "*") for rk in rks], 204)
    run_batch(tap, http, trips, "merge If-Match *",
              [("MERGE", "p", rk, {"m": 5}, "*") for rk in rks], 204)
    tag3, e = etag_of(http, "r050")
    tap.ok(tag3 and tag3 > tag2 and e and e.get("v") == 4 and e.get("m") == 5 and
           "keep" not in e, "update and merge under *: as asked", "%r %r" % (tag3, e))
    half = ["n%03d" % i for i in range(N // 2)]
    run_batch(tap, http, trips, "upserts and merges, half of absent entities",
              [("PUT" if i % 2 else "MERGE", "p", rk, {"c": i}, None)
               for i, rk in enumerate(half + rks[:N // 2])], 204)

    # the first failing operation answers, whether it failed on a read or not
    ops = [("MERGE", "p", rk, {"x": 1}, None) for rk in rks]
    ops[20] = ("MERGE", "p", "absent", {"x": 1}, "*")
    ops[37] = ("PUT", "p", rks[37], {"x": 1}, h.etag_for(stale))
    for name, ops_ in (("read failure first", ops),
                       ("blind failure first", ops[:20] + [ops[37]] + ops[21:37] + [ops[20]] +
                        ops[38:])):
        body, ctype = batch_body(http.server.base, "trips", ops_)
        r = http.request("POST", "/$batch", body=body, content_type=ctype)
        want = (404, b"ResourceNotFound") if name.startswith("read") else \
            (412, b"UpdateConditionNotSatisfied")
        tap.ok(r.status == 202 and parts_of(r) == [want[0]] and want[1] in r.body and
               b'"20:' in r.body, "%s: operation 20 answers %d" % (name, want[0]),
               r.body[:600])
        _, e = etag_of(http, rks[0])
        tap.ok(e and "x" not in e, "%s: nothing written" % name, e)

    # a changeset that fails reads its earlier blind writes at once too
    ops = [("POST", "p", "f%03d" % i, {"PartitionKey": "p", "RowKey": "f%03d" % i}, None)
           for i in range(N)]
    ops[N - 1] = ("POST", "p", "bad", {"PartitionKey": "p", "RowKey": "bad", "x": []}, None)
    body, ctype = batch_body(http.server.base, "trips", ops)
    trips.mark()
    r = http.request("POST", "/$batch", body=body, content_type=ctype)
    n, stmts = trips.count()
    tap.ok(r.status == 202 and len(parts_of(r)) == 1 and b'"%d:' % (N - 1) in r.body,
           "inserts, the last one invalid: it answers", r.body[:600])
    tap.ok(n <= MAX_TRIPS, "inserts, the last one invalid: %d round trips (at most %d), "
           "%d statements" % (n, MAX_TRIPS, stmts))

    run_batch(tap, http, trips, "delete If-Match *",
              [("DELETE", "p", rk, None, "*") for rk in rks], 204)
    tap.eq(etag_of(http, "r050")[0], None, "delete If-Match *: deleted")

    # point GETs: the table's row and the entity in one round trip
    tap.eq(http.request("POST", "/trips", body={"PartitionKey": "p", "RowKey": "g",
                                                 "v": 1}).status, 201, "insert g")
    etag_of(http, "g")
    trips.mark()
    tag, e = etag_of(http, "g")
    n, stmts = trips.count()
    tap.ok(e and e.get("v") == 1, "point GET: the entity", e)
    tap.eq(n, 1, "point GET: one round trip (%d statements)" % stmts)
    tap.eq(http.request("DELETE", "/Tables('trips')").status, 204, "delete the table")
    r = http.request("GET", "/trips(PartitionKey='p',RowKey='g')")
    tap.ok(r.status == 404 and b"TableNotFound" in r.body,
           "point GET of the deleted table: TableNotFound", r.status)
    for _ in range(100):                # the name is free once the delete is done
        st = http.request("POST", "/Tables", body={"TableName": "trips"}).status
        if st != 409:
            break
        time.sleep(0.1)
    tap.eq(st, 201, "the table created again (a new id)")
    r = http.request("GET", "/trips(PartitionKey='p',RowKey='g')")
    tap.ok(r.status == 404 and b"ResourceNotFound" in r.body,
           "point GET under the old id's guess: the old entity is not answered", r.status)
    tap.eq(http.request("POST", "/trips", body={"PartitionKey": "p", "RowKey": "g",
                                                 "v": 2}).status, 201, "insert g again")
    _, e = etag_of(http, "g")
    tap.ok(e and e.get("v") == 2, "point GET: the new table's entity", e)
    single_writes(tap, http, trips)


def single_write(tap, http, trips, name, method, rk, body, if_match, want, want_trips=2):
    """One single-entity write; checks its status and that it took two
    round trips: the table's row read with the entity, then the write (one
    when the read refuses it)."""
    trips.mark()
    r = http.request(method, "/trips(PartitionKey='p',RowKey='%s')" % rk, body=body,
                     headers={"If-Match": if_match} if if_match else None)
    n, stmts = trips.count()
    tap.eq(r.status, want, "%s: answers %d" % (name, want))
    tap.eq(n, want_trips, "%s: %d round trips (%d statements)" % (name, want_trips, stmts))


def single_writes(tap, http, trips):
    """Insert Or Replace, Insert Or Merge and Delete under If-Match "*" read
    the entity they replace (its Timestamp must be exceeded) together with
    the table's row, as a point GET does: two round trips, not three; a
    re-created table's new id refutes the guess, so an entity of the old
    table is never merged into or deleted."""
    etag_of(http, "g")                  # the table's id seen
    single_write(tap, http, trips, "Insert Or Replace", "PUT", "g", {"v": 3}, None, 204)
    tap.eq(etag_of(http, "g")[1].get("v"), 3, "Insert Or Replace: replaced")
    single_write(tap, http, trips, "Insert Or Merge", "MERGE", "g", {"w": 4}, None, 204)
    _, e = etag_of(http, "g")
    tap.ok(e and e.get("v") == 3 and e.get("w") == 4, "Insert Or Merge: merged", e)
    single_write(tap, http, trips, "Merge If-Match *", "MERGE", "g", {"x": 5}, "*", 204)
    _, e = etag_of(http, "g")
    tap.ok(e and e.get("w") == 4 and e.get("x") == 5, "Merge If-Match *: merged", e)
    single_write(tap, http, trips, "Delete If-Match *", "DELETE", "g", None, "*", 204)
    tap.eq(etag_of(http, "g")[1], None, "Delete If-Match *: deleted")
    single_write(tap, http, trips, "Delete If-Match * of an absent entity", "DELETE", "g",
                 None, "*", 404, 1)
    # the guess refuted: entities of the table's old incarnation
    for rk in ("o1", "o2", "o3"):
        http.request("POST", "/trips", body={"PartitionKey": "p", "RowKey": rk, "old": 1})
    tap.eq(http.request("DELETE", "/Tables('trips')").status, 204, "delete the table again")
    r = http.request("PUT", "/trips(PartitionKey='p',RowKey='o1')", body={"v": 1})
    tap.ok(r.status == 404 and b"TableNotFound" in r.body,
           "Insert Or Replace into the deleted table: TableNotFound", r.status)
    for _ in range(100):
        st = http.request("POST", "/Tables", body={"TableName": "trips"}).status
        if st != 409:
            break
        time.sleep(0.1)
    tap.eq(st, 201, "the table created a third time")
    r = http.request("MERGE", "/trips(PartitionKey='p',RowKey='o1')", body={"new": 1})
    tap.eq(r.status, 204, "Insert Or Merge under the old id's guess")
    _, e = etag_of(http, "o1")
    tap.ok(e and e.get("new") == 1 and "old" not in e,
           "it created the entity: the old table's is not merged into", e)
    r = http.request("DELETE", "/trips(PartitionKey='p',RowKey='o2')", headers={"If-Match": "*"})
    tap.ok(r.status == 404 and b"ResourceNotFound" in r.body,
           "Delete If-Match * of an entity of the old table: ResourceNotFound", r.status)
    r = http.request("MERGE", "/trips(PartitionKey='p',RowKey='o3')", body={"new": 1},
                     headers={"If-Match": "*"})
    tap.ok(r.status == 404 and b"ResourceNotFound" in r.body,
           "Merge If-Match * of an entity of the old table: ResourceNotFound", r.status)


if __name__ == "__main__":
    main()
