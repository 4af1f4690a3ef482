#!/usr/bin/python3
"""Integration test: a refused write changes no Timestamp (issue: a refused
conditional write moved the server's clock). Raw requests on each local
backend (memory, LevelDB, flat file):

  refused    PUT, MERGE and DELETE with If-Match naming a weak ETag of
             2126 get 412 (404 for an absent entity), single and inside a
             $batch changeset (first and second operation, the failing one
             index-prefixed); nothing is written, the entity keeps its ETag,
             and every later write, in this table and another, gets a
             Timestamp of now, not one after 2126.
  imported   an entity imported with a Timestamp of 2126 (tabled import)
             keeps it; importing does not move the clock (a write of
             another entity gets now); replacing that entity under its own
             ETag gives it a Timestamp above 2126 (an entity's ETags only
             increase), and from then on this process's Timestamps stay
             above it (commit Timestamps never go back in one process).

"Now" is checked against the wall clock read around each write with an
hour of slack: the bug gave year 2126, so no timing is measured.
Prints TAP; exit status 1 on failure."""
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

UTC = datetime.timezone.utc
FUTURE_TEXT = "2126-01-01T00:00:00.0000000Z"
FUTURE = "W/\"datetime'2126-01-01T00%3A00%3A00.0000000Z'\""
# .NET ticks (100 ns since 0001-01-01) of 2126-01-01T00:00:00Z
FUTURE_TICKS = (datetime.datetime(2126, 1, 1) - datetime.datetime(1, 1, 1)) // \
    datetime.timedelta(microseconds=1) * 10
SLACK = datetime.timedelta(hours=1)
PRECOND = "The update condition specified in the request was not satisfied."
NOT_FOUND = "The specified resource does not exist."
ETAG_RE = re.compile(r"^W/\"datetime'(\d{4})-(\d\d)-(\d\d)T(\d\d)%3A(\d\d)%3A(\d\d)(?:\.(\d+))?Z'\"$")


def etag_time(tag):
    """The datetime of a weak ETag (None when it is not one)."""
    m = ETAG_RE.match(tag or "")
    if not m:
        return None
    y, mo, d, hh, mi, ss = (int(x) for x in m.groups()[:6])
    frac = (m.group(7) or "0").ljust(7, "0")
    return datetime.datetime(y, mo, d, hh, mi, ss, int(frac) // 10, tzinfo=UTC)


def etag_ticks(tag):
    """The .NET ticks of a weak ETag (None when it is not one): exact to
    100 ns, where etag_time keeps microseconds."""
    m = ETAG_RE.match(tag or "")
    t = etag_time(tag)
    if t is None:
        return None
    whole = (t.replace(microsecond=0, tzinfo=None) - datetime.datetime(1, 1, 1)) // \
        datetime.timedelta(seconds=1)
    return whole * 10000000 + int((m.group(7) or "0").ljust(7, "0"))


def now():
    return datetime.datetime.now(UTC)


def first_line(msg):
    return (msg or "").split("\n", 1)[0]


class Checks:
    def __init__(self, tap, http, label):
        self.tap, self.http, self.label = tap, http, label

    def req(self, method, path, body=None, headers=None):
        return self.http.request(method, path, body=body, headers=headers)

    def fails(self, r, status, code, message, what):
        got_code, msg = r.error()
        self.tap.ok((r.status, got_code, first_line(msg)) == (status, code, message),
                    "%s: %s -> %d %s" % (self.label, what, status, code),
                    "got %s %s %r" % (r.status, got_code, first_line(msg)))

    def write_now(self, method, path, body, what, headers=None, status=(201, 204)):
        """A write that must succeed with a Timestamp of now; returns its ETag."""
        t0 = now()
        r = self.req(method, path, body, headers)
        t1 = now()
        ts = etag_time(r.h("ETag"))
        self.tap.ok(r.status in status and ts is not None and t0 - SLACK <= ts <= t1 + SLACK,
                    "%s: %s gets a Timestamp of now" % (self.label, what),
                    "got %s ETag %r (wall clock %s)" % (r.status, r.h("ETag"), t0.isoformat()))
        return r.h("ETag")

    def etag_is(self, path, etag, what):
        r = self.req("GET", path)
        self.tap.ok(r.status == 200 and r.h("ETag") == etag, "%s: %s" % (self.label, what),
                    "got %s ETag %r, want %r" % (r.status, r.h("ETag"), etag))


def changeset(http, ops):
    """A $batch of one changeset; ops are (method, path, body, headers).
    Returns (outer response, [(status, code, first message line)] of the
    parts)."""
    prefix = "http://%s:%d/%s" % (http.server.host, http.server.port, http.account)
    parts = []
    for i, (method, path, body, headers) in enumerate(ops):
        hdrs = "Content-Type: application/json\r\nAccept: application/json;odata=minimalmetadata\r\n"
        hdrs += "Content-ID: %d\r\n" % (i + 1)
        for k, v in (headers or {}).items():
            hdrs += "%s: %s\r\n" % (k, v)
        data = json.dumps(body) if body is not None else ""
        parts.append("--cs\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: "
                     "binary\r\n\r\n%s %s%s HTTP/1.1\r\n%s\r\n%s\r\n"
                     % (method, prefix, path, hdrs, data))
    body = ("--b\r\nContent-Type: multipart/mixed; boundary=cs\r\n\r\n" + "".join(parts) +
            "--cs--\r\n--b--\r\n")
    r = http.request("POST", "/$batch", body=body, content_type="multipart/mixed; boundary=b")
    got = []
    for m in re.finditer(rb"HTTP/1\.1 (\d{3})[^\r]*\r\n(.*?)(?=\r\n--changesetresponse|\Z)",
                         r.body, re.S):
        status = int(m.group(1))
        j = re.search(rb"\{.*\}", m.group(2), re.S)
        code = msg = None
        if j and status >= 400:
            e = json.loads(j.group(0))["odata.error"]
            code, msg = e["code"], first_line(e["message"]["value"])
        got.append((status, code, msg))
    return r, got


def refused(tap, srv, label):
    c = Checks(tap, h.Http(srv), label)
    for t in ("Clock1", "Clock2"):
        r = c.http.create_table(t)
        tap.eq(r.status, 201, "%s: create %s" % (label, t))
    one = "/Clock1(PartitionKey='p',RowKey='r')"
    etag = c.write_now("POST", "/Clock1", {"PartitionKey": "p", "RowKey": "r", "V": 1},
                       "the first insert")
    for method, body in (("PUT", {"V": 2}), ("MERGE", {"W": 2}), ("DELETE", None)):
        r = c.req(method, one, body, {"If-Match": FUTURE})
        c.fails(r, 412, "UpdateConditionNotSatisfied", PRECOND,
                "%s with If-Match of 2126" % method)
        c.etag_is(one, etag, "after the refused %s the entity keeps its ETag" % method)
        c.write_now("POST", "/Clock2", {"PartitionKey": "p", "RowKey": "after-" + method},
                    "an insert into another table after the refused %s" % method)
    for method, body in (("PUT", {"V": 2}), ("MERGE", {"W": 2}), ("DELETE", None)):
        r = c.req(method, "/Clock1(PartitionKey='p',RowKey='absent')", body, {"If-Match": FUTURE})
        c.fails(r, 404, "ResourceNotFound", NOT_FOUND,
                "%s of an absent entity with If-Match of 2126" % method)
    c.write_now("POST", "/Clock1", {"PartitionKey": "p", "RowKey": "after-absent"},
                "an insert after the refused writes of an absent entity")
    etag = c.write_now("PUT", one, {"V": 3}, "an update of the entity (If-Match *)",
                       {"If-Match": "*"})

    # $batch: the refused operation alone answers, index-prefixed; nothing
    # of the changeset is written and the clock stays where it was
    for method, body in (("PUT", {"V": 4}), ("MERGE", {"W": 4}), ("DELETE", None)):
        for first in (True, False):
            ops = [(method, one, body, {"If-Match": FUTURE})]
            if not first:
                ops.insert(0, ("POST", "/Clock1", {"PartitionKey": "p", "RowKey": "b-" + method},
                               None))
            r, parts = changeset(c.http, ops)
            idx = 0 if first else 1
            tap.ok(r.status == 202 and parts == [
                (412, "UpdateConditionNotSatisfied", "%d:%s" % (idx, PRECOND))],
                "%s: $batch %s with If-Match of 2126 as operation %d -> 412, \"%d:\" prefix"
                % (label, method, idx, idx), "got %s %r" % (r.status, parts))
            c.etag_is(one, etag, "after the refused $batch %s (op %d) the entity keeps its ETag"
                      % (method, idx))
            r = c.req("GET", "/Clock1(PartitionKey='p',RowKey='b-%s')" % method)
            tap.eq(r.status, 404, "%s: the refused $batch wrote nothing" % label)
            c.write_now("POST", "/Clock2", {"PartitionKey": "p",
                                            "RowKey": "batch-%s-%d" % (method, idx)},
                        "an insert after the refused $batch %s (op %d)" % (method, idx))
    # a changeset that succeeds afterwards: Timestamps of now too
    t0 = now()
    r, parts = changeset(c.http, [
        ("POST", "/Clock1", {"PartitionKey": "p", "RowKey": "ok1"}, None),
        ("PUT", one, {"V": 5}, {"If-Match": etag})])
    t1 = now()
    ts = [etag_time(x.decode()) for x in re.findall(rb"ETag: (W/[^\r]*)\r\n", r.body)]
    tap.ok(r.status == 202 and [p[0] for p in parts] == [201, 204] and len(ts) == 2 and
           all(x is not None and t0 - SLACK <= x <= t1 + SLACK for x in ts),
           "%s: a $batch that succeeds after the refused ones: Timestamps of now" % label,
           "got %s %r %r" % (r.status, parts, ts))


def imported(tap, tmp):
    """An imported Timestamp of 2126 is kept and moves no clock by itself."""
    src = os.path.join(tmp, "future.jsonl")
    with open(src, "w", encoding="utf-8") as f:
        f.write('{"tabled-export":1,"version":"test"}\n')
        f.write('{"account":"devstoreaccount1","table":"Imported","acl":""}\n')
        f.write(json.dumps({"account": "devstoreaccount1", "table": "Imported",
                            "ticks": FUTURE_TICKS,
                            "entity": {"PartitionKey": "p", "RowKey": "future", "V": 1}},
                           separators=(",", ":")) + "\n")
    data = os.path.join(tmp, "imported-db")
    p = subprocess.run([h.tabled_path(), "import", "--backend", "leveldb", "--data", data, src],
                       capture_output=True, timeout=120)
    tap.eq(p.returncode, 0, "import of an entity with a Timestamp of 2126")
    if p.returncode != 0:
        tap.diag(p.stderr.decode("utf-8", "replace"))
        return
    srv = h.Server(["--data", data], backend="leveldb").start()
    try:
        c = Checks(tap, h.Http(srv), "imported")
        path = "/Imported(PartitionKey='p',RowKey='future')"
        r = c.req("GET", path)
        tap.ok(r.status == 200 and etag_ticks(r.h("ETag")) == FUTURE_TICKS and
               r.json().get("Timestamp") == FUTURE_TEXT.replace(".0000000", ""),
               "imported: the entity keeps its Timestamp of 2126", repr(r))
        c.write_now("POST", "/Imported", {"PartitionKey": "p", "RowKey": "other"},
                    "an insert of another entity after the import")
        r = c.req("PUT", path, {"V": 2}, {"If-Match": FUTURE})
        ts = etag_ticks(r.h("ETag"))
        tap.ok(r.status == 204 and ts is not None and ts > FUTURE_TICKS,
               "imported: replacing it under its ETag of 2126 gives a Timestamp above it",
               "got %s %r" % (r.status, r.h("ETag")))
        r = c.req("POST", "/Imported", {"PartitionKey": "p", "RowKey": "later"})
        later = etag_ticks(r.h("ETag"))
        tap.ok(r.status == 201 and later is not None and ts is not None and later > ts,
               "imported: a later commit of this process stays above that Timestamp",
               "got %s %r" % (r.status, r.h("ETag")))
    finally:
        srv.stop_and_check(tap)


def main():
    tap = h.Tap()
    h.watchdog(int(os.environ.get("TEST_WATCHDOG", "300")), None, tap)
    for backend in ("memory", "leveldb", "flatfile"):
        try:
            srv = h.Server(backend=backend).start()
        except h.ServerError as e:
            tap.ok(False, "%s: server starts" % backend, str(e))
            continue
        tap.run(refused, tap, srv, backend)
        srv.stop_and_check(tap)
    with tempfile.TemporaryDirectory(prefix="tabled-clock-") as tmp:
        tap.run(imported, tap, tmp)
    tap.done()


if __name__ == "__main__":
    main()
