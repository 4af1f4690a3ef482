#!/usr/bin/python3
"""soak.py - a long mixed workload against tabled, watching for leaks and
errors (make soak; not part of make check). Standard library only.

  soak.py [--minutes M] [--backends memory,leveldb,flatfile] [--rate N | --max]
          [--workers W] [--window K] [--data DIR] [--out DIR] [--keep]
          [--auth on|off]
  soak.py --report OUT [--every MIN] [--backends ...]   (judge saved results again;
          --every prints a Markdown table per backend, one row per MIN minutes)

Each backend gets its own tabled process (data under DIR/BACKEND;
--durability batch on the durable ones) and its own load process (so that
three backends do not share one Python interpreter lock), all at once.

The load, per backend: --workers threads, each with one keep-alive
HTTP/1.1 connection (http.client) and a PartitionKey of its own in table
"soak", so that it knows the exact state of its partition and the exact
status every request must get. A worker keeps a sliding window of about
--window live rows (deletes of the oldest rows keep pace with inserts), so
the live data set stays bounded and RSS growth means a leak, not data. The
mix: inserts (201 or 204 with Prefer: return-no-content), Insert Or Replace,
Insert Or Merge, Update and Merge with If-Match from an ETag just read
(204), point GETs (200, ETag checked), deletes (204), partition queries with
$filter and $top, paged by NextPartitionKey/NextRowKey (row count checked
against the worker's own record), table scans with a property $filter
(paged), $batch changesets of 1 to 100 operations (202, every sub-response
checked), the expected failures (409 insert of a live row, 404 read, update
or delete of a deleted row, 412 update with a stale ETag, each with its
error code), and one worker per backend creates a table now and then, fills
it with a $batch, queries it, deletes it and checks that it is gone.
Requests are signed with SharedKey for devstoreaccount1 (well-known key)
unless --auth off. A rate limit (--rate requests/s per backend, default
300) is shared by the backend's workers; --max drops it.

Every response is checked: an unexpected status (a 5xx among them), a
wrong body, or a connection error counts as an error and is logged with
the request, status and body in OUT/BACKEND-errors.log.

Every 10 s, per backend, a line is printed and appended to OUT/BACKEND.csv:
elapsed seconds, requests in the interval by kind, errors, latency
p50/p99/max (ms, whole request incl. the client), the server's VmRSS and
VmHWM (/proc/PID/status), open descriptors (entries of /proc/PID/fd), its
CPU seconds in the interval, and the data directory's size in bytes.

Verdict, per backend (the tolerances are these constants):
  - errors: any error fails.
  - the server must still be running at the end and exit 0 on SIGTERM.
  - warm-up: the first WARMUP_FRACTION of the run (at least WARMUP_MIN_S
    seconds when the run is long enough to leave MIN_THIRD samples per
    third) is ignored, and on leveldb everything before the first memtable
    flush (its LOG's first "Level-0 table ... OK": until then the memtable
    grows to write-buffer-size by design); the samples after it are cut
    into thirds. A run too short for either is not judged for growth, and
    says so (errors are still judged).
  - descriptors: the largest count of the last third must not exceed the
    largest of the first third by more than FD_SLACK.
  - memory: the median VmRSS of the last third must be at most the first
    third's median x RSS_RATIO + RSS_SLACK_MIB MiB, and so must the median
    RssAnon (heap growth shows there whatever the file-backed pages, such
    as LevelDB's mmap'ed tables, do). The least-squares slopes over the
    samples after the warm-up are printed (MiB/hour), not judged.
  - disk: reported for every backend. Judged only for flatfile, whose log
    is bounded by design (compaction when it is at least compact-min-bytes,
    64 MiB by default, and half garbage): the data directory must stay
    below FLATFILE_DISK_BOUND_MIB. LevelDB's size depends on when its
    compactions run and is only reported.
Exit status 0 and a last line "PASS", or 1 and "FAIL: reasons".

TABLED names the binary (default ./tabled of the build tree or
$TOP_BUILDDIR). Scratch data goes under --data (default a new directory
under $TMPDIR), removed at the end unless --keep; the CSV files, error logs
and server logs go to --out (default DATA/results, kept).
"""
import argparse
import base64
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

TOP = os.environ.get("TOP_BUILDDIR") or os.getcwd()
TABLED = os.environ.get("TABLED") or os.path.join(TOP, "tabled")
ACCOUNT = "devstoreaccount1"
KEY = base64.b64decode("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
                       "K1SZFPTOtr/KBHBeksoGMGw==")
VERSION = "2019-02-02"
NOMETA = "application/json;odata=nometadata"
ACCEPTS = [NOMETA, "application/json;odata=minimalmetadata",
           "application/json;odata=fullmetadata"]
TABLE = "soak"
SAMPLE_S = 10.0

# verdict tolerances (documented above and in doc/performance.md)
WARMUP_FRACTION = 0.10
WARMUP_MIN_S = 120
MIN_THIRD = 3
FD_SLACK = 2
RSS_RATIO = 1.10
RSS_SLACK_MIB = 4.0
FLATFILE_DISK_BOUND_MIB = 96.0

KINDS = ["insert", "upsert", "upmerge", "update", "merge", "get", "delete", "query", "scan",
         "batch", "expect_fail", "table"]


# --------------------------------------------------------------------------
# one request


def rfc1123():
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())


class Soaker:
    """The state shared by one backend's workers: the rate limit, the
    counters of the current interval, the error log."""

    def __init__(self, host, port, rate, sign, errlog):
        self.host, self.port, self.sign = host, port, sign
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.next_slot = time.monotonic()
        self.lock = threading.Lock()
        self.counts = dict.fromkeys(KINDS, 0)
        self.lat = []
        self.errors = 0
        self.errors_total = 0
        self.errlog = errlog
        self.stop = threading.Event()

    def take_slot(self):
        """Waits for the next request slot of the backend's rate limit."""
        if not self.interval:
            return
        with self.lock:
            now = time.monotonic()
            slot = max(self.next_slot, now - 1.0)      # at most a second of catch-up
            self.next_slot = slot + self.interval
        if slot > now:
            time.sleep(slot - now)

    def record(self, kind, secs):
        with self.lock:
            self.counts[kind] += 1
            self.lat.append(secs)

    def error(self, text):
        with self.lock:
            self.errors += 1
            self.errors_total += 1
            if self.errors_total <= 1000:
                self.errlog.write("%s %s\n" % (time.strftime("%H:%M:%S"), text))
                self.errlog.flush()

    def take_interval(self):
        """The counters of the interval now ended; starts the next."""
        with self.lock:
            c, lat, e = self.counts, self.lat, self.errors
            self.counts, self.lat, self.errors = dict.fromkeys(KINDS, 0), [], 0
        return c, lat, e


class Failed(Exception):
    """A request got an answer it should not have (already logged)."""


class Conn:
    """One worker's keep-alive connection, signing and timing requests."""

    def __init__(self, soaker, name):
        self.s, self.name = soaker, name
        self.c = None

    def _connect(self):
        self.c = http.client.HTTPConnection(self.s.host, self.s.port, timeout=60)

    def request(self, kind, method, path, body=None, headers=(), want=(200,), code=None,
                accept=NOMETA):
        """Sends one request, counts it under kind and checks that the status is
        in want (and, when code is given, the error code in the body).
        Returns (status, headers dict lower-case, body bytes); raises Failed."""
        self.s.take_slot()
        target = "/%s%s" % (ACCOUNT, path)
        hdrs = {"x-ms-version": VERSION, "x-ms-date": rfc1123(), "Accept": accept,
                "DataServiceVersion": "3.0;NetFx", "MaxDataServiceVersion": "3.0;NetFx"}
        if isinstance(body, str):
            body = body.encode("utf-8")
        ctype = ""
        if body is not None:
            ctype = "application/json"
            hdrs["Content-Type"] = ctype
        for k, v in headers:
            hdrs[k] = v
            if k.lower() == "content-type":
                ctype = v
        if self.s.sign:
            res = "/" + ACCOUNT + target.split("?", 1)[0]
            sts = "\n".join([method, "", ctype, hdrs["x-ms-date"], res])
            mac = hmac.new(KEY, sts.encode("utf-8"), hashlib.sha256).digest()
            hdrs["Authorization"] = "SharedKey %s:%s" % (ACCOUNT, base64.b64encode(mac).decode())
        t0 = time.monotonic()
        try:
            if self.c is None:
                self._connect()
            self.c.request(method, target, body=body, headers=hdrs)
            r = self.c.getresponse()
            data = r.read()
            rh = {k.lower(): v for k, v in r.getheaders()}
            status = r.status
        except (OSError, http.client.HTTPException) as e:
            self.s.record(kind, time.monotonic() - t0)
            self.s.error("%s %s %s %s: connection error %r" % (self.name, kind, method, target, e))
            if self.c is not None:
                self.c.close()
            self.c = None
            raise Failed()
        self.s.record(kind, time.monotonic() - t0)
        if rh.get("connection", "").lower() == "close":
            self.c.close()
            self.c = None
        if status not in want:
            self.s.error("%s %s %s %s: status %d, expected %s; body %r"
                         % (self.name, kind, method, target, status, want, data[:400]))
            raise Failed()
        if code is not None:
            try:
                got = json.loads(data)["odata.error"]["code"]
            except (ValueError, KeyError, TypeError):
                got = None
            if got != code:
                self.s.error("%s %s %s %s: status %d with error code %r, expected %r; body %r"
                             % (self.name, kind, method, target, status, got, code, data[:400]))
                raise Failed()
        return status, rh, data

    def close(self):
        if self.c is not None:
            self.c.close()


# --------------------------------------------------------------------------
# the workload


def entity(rng, pk, rk, seq):
    """An entity with a property of each type and 20 to 1500 characters of text."""
    return {"PartitionKey": pk, "RowKey": rk, "Seq": seq,
            "Big": str(seq * 1000003), "Big@odata.type": "Edm.Int64",
            "Ratio": seq / 7.0, "Flag": seq % 2 == 0,
            "When": "2026-11-28T12:%02d:%02d.%07dZ" % (seq % 60, (seq // 60) % 60, seq % 9999999),
            "When@odata.type": "Edm.DateTime",
            "Id": str(uuid.UUID(int=rng.getrandbits(128))), "Id@odata.type": "Edm.Guid",
            "Blob": base64.b64encode(rng.randbytes(rng.randint(1, 64))).decode(),
            "Blob@odata.type": "Edm.Binary",
            "Text": "t%d-" % seq + "x" * rng.randint(20, 1500)}


def ekey(table, pk, rk):
    return "/%s(PartitionKey='%s',RowKey='%s')" % (table, pk, rk)


def parse_batch(data):
    """The statuses of a $batch answer's sub-responses, in order."""
    return [int(m) for m in re.findall(rb"\r\nHTTP/1\.1 (\d{3}) ", data)]


def batch_body(host, table, ops):
    """A $batch body with one changeset; ops are (method, path, body or None, headers)."""
    bb, cb = "batch_%s" % uuid.uuid4(), "changeset_%s" % uuid.uuid4()
    out = ["--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n" % (bb, cb)]
    for method, path, body, hdrs in ops:
        out.append("--%s\r\nContent-Type: application/http\r\n"
                   "Content-Transfer-Encoding: binary\r\n\r\n" % cb)
        out.append("%s http://%s/%s%s HTTP/1.1\r\n" % (method, host, ACCOUNT, path))
        out.append("Accept: %s\r\n" % NOMETA)
        for k, v in hdrs:
            out.append("%s: %s\r\n" % (k, v))
        if body is not None:
            out.append("Content-Type: application/json\r\n\r\n%s\r\n"
                       % json.dumps(body, separators=(",", ":")))
        else:
            out.append("\r\n")
    out.append("--%s--\r\n--%s--\r\n" % (cb, bb))
    return "".join(out), "multipart/mixed; boundary=%s" % bb


class Worker:
    """One connection and one partition of table soak. live maps each row the
    worker believes present to its ETag (None when unknown: written in a
    $batch); gone holds some recently deleted keys, for the expected 404s."""

    def __init__(self, soaker, wid, window, churn, seed):
        self.s, self.wid, self.window, self.churn = soaker, wid, window, churn
        self.pk = "w%02d" % wid
        self.rng = random.Random(seed)
        self.conn = Conn(soaker, "worker %d" % wid)
        self.live = {}
        self.order = []           # live keys, oldest first
        self.gone = []
        self.next_rk = 0
        self.seq = 0
        self.hostport = "%s:%d" % (soaker.host, soaker.port)
        self.tables = 0

    # -- bookkeeping --------------------------------------------------------
    def new_rk(self):
        self.next_rk += 1
        return "r%09d" % self.next_rk

    def add(self, rk, etag):
        if rk not in self.live:
            self.order.append(rk)
        self.live[rk] = etag

    def remove(self, rk):
        del self.live[rk]
        self.order.remove(rk)
        self.gone.append(rk)
        if len(self.gone) > 50:
            self.gone.pop(0)

    def pick_live(self):
        return self.rng.choice(self.order)

    # -- operations ---------------------------------------------------------
    def op_insert(self):
        rk = self.new_rk()
        self.seq += 1
        quiet = self.rng.random() < 0.5
        st, h, _ = self.conn.request("insert", "POST", "/" + TABLE,
                                     json.dumps(entity(self.rng, self.pk, rk, self.seq)),
                                     [("Prefer", "return-no-content")] if quiet else [],
                                     want=(204,) if quiet else (201,))
        self.add(rk, h.get("etag"))

    def op_upsert(self, merge):
        # an existing row or a new one
        rk = self.pick_live() if self.order and self.rng.random() < 0.7 else self.new_rk()
        self.seq += 1
        st, h, _ = self.conn.request("upmerge" if merge else "upsert",
                                     "MERGE" if merge else "PUT", ekey(TABLE, self.pk, rk),
                                     json.dumps(entity(self.rng, self.pk, rk, self.seq)),
                                     want=(204,))
        self.add(rk, h.get("etag"))

    def read(self, rk, kind="get"):
        """GETs a live row; checks its keys and that its ETag is the one recorded."""
        st, h, data = self.conn.request(kind, "GET", ekey(TABLE, self.pk, rk),
                                        accept=self.rng.choice(ACCEPTS), want=(200,))
        try:
            e = json.loads(data)
            ok = e["PartitionKey"] == self.pk and e["RowKey"] == rk
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            self.s.error("%s: GET %s/%s returned %r" % (self.conn.name, self.pk, rk, data[:300]))
            raise Failed()
        etag = h.get("etag")
        if self.live[rk] is not None and etag != self.live[rk]:
            self.s.error("%s: GET %s/%s ETag %s, the last write answered %s"
                         % (self.conn.name, self.pk, rk, etag, self.live[rk]))
            raise Failed()
        self.live[rk] = etag
        return etag

    def op_update(self, merge):
        rk = self.pick_live()
        etag = self.read(rk)
        self.seq += 1
        body = {"Seq": self.seq, "Text": "u%d" % self.seq} if merge else \
            entity(self.rng, self.pk, rk, self.seq)
        st, h, _ = self.conn.request("merge" if merge else "update", "MERGE" if merge else "PUT",
                                     ekey(TABLE, self.pk, rk), json.dumps(body),
                                     [("If-Match", etag)], want=(204,))
        self.live[rk] = h.get("etag")
        if self.rng.random() < 0.2:
            # the ETag read before is stale now
            self.conn.request("expect_fail", "PUT", ekey(TABLE, self.pk, rk), json.dumps(body),
                              [("If-Match", etag)], want=(412,),
                              code="UpdateConditionNotSatisfied")

    def op_get(self):
        self.read(self.pick_live())

    def op_delete(self):
        rk = self.order[0]
        etag = self.live[rk]
        self.conn.request("delete", "DELETE", ekey(TABLE, self.pk, rk), None,
                          [("If-Match", etag if etag and self.rng.random() < 0.5 else "*")],
                          want=(204,))
        self.remove(rk)

    def op_expect_fail(self):
        r = self.rng.random()
        if r < 0.3 and self.order:
            rk = self.pick_live()
            self.conn.request("expect_fail", "POST", "/" + TABLE,
                              json.dumps(entity(self.rng, self.pk, rk, self.seq)),
                              want=(409,), code="EntityAlreadyExists")
        elif self.gone:
            rk = self.rng.choice(self.gone)
            if r < 0.55:
                self.conn.request("expect_fail", "GET", ekey(TABLE, self.pk, rk), want=(404,),
                                  code="ResourceNotFound")
            elif r < 0.8:
                self.conn.request("expect_fail", "DELETE", ekey(TABLE, self.pk, rk), None,
                                  [("If-Match", "*")], want=(404,), code="ResourceNotFound")
            else:
                self.conn.request("expect_fail", "MERGE", ekey(TABLE, self.pk, rk),
                                  json.dumps({"Seq": 0}), [("If-Match", "*")], want=(404,),
                                  code="ResourceNotFound")

    def query_pages(self, kind, table, flt, top, accept=NOMETA):
        """Follows the continuation of a filtered query; returns the entities."""
        out, nxt, pages = [], None, 0
        while True:
            q = "/%s()?$filter=%s&$top=%d" % (table, quote(flt), top)
            if nxt:
                q += "&NextPartitionKey=%s" % quote(nxt[0])
                if nxt[1]:
                    q += "&NextRowKey=%s" % quote(nxt[1])
            st, h, data = self.conn.request(kind, "GET", q, accept=accept, want=(200,))
            try:
                page = json.loads(data)["value"]
            except (ValueError, KeyError, TypeError):
                self.s.error("%s: query %s answered %r" % (self.conn.name, q, data[:300]))
                raise Failed()
            if len(page) > top:
                self.s.error("%s: query %s gave %d entities for $top=%d"
                             % (self.conn.name, q, len(page), top))
                raise Failed()
            out += page
            pages += 1
            npk = h.get("x-ms-continuation-nextpartitionkey")
            if not npk or pages > 10000:
                return out
            nxt = (npk, h.get("x-ms-continuation-nextrowkey", ""))

    def op_query(self):
        """A range of the worker's partition; the rows must be exactly its own record."""
        lo = self.rng.choice(self.order) if self.order else "r"
        flt = "PartitionKey eq '%s' and RowKey ge '%s'" % (self.pk, lo)
        if self.rng.random() < 0.5:
            flt += " and Seq ge 0"
        got = self.query_pages("query", TABLE, flt, self.rng.randint(5, 60),
                               self.rng.choice(ACCEPTS))
        want = sorted(rk for rk in self.live if rk >= lo)
        rks = [e.get("RowKey") for e in got]
        if rks != want:
            self.s.error("%s: partition query %s gave %d rows (%s..%s), expected %d (%s..%s)"
                         % (self.conn.name, flt, len(rks), rks[:1], rks[-1:], len(want),
                            want[:1], want[-1:]))
            raise Failed()

    def op_scan(self):
        """A property filter across all partitions (other workers write meanwhile:
        only the shape is checked)."""
        got = self.query_pages("scan", TABLE, "Seq ge %d" % self.rng.randint(0, max(self.seq, 1)),
                               self.rng.randint(200, 1000))
        if any("PartitionKey" not in e for e in got):
            self.s.error("%s: table scan returned an entity without keys" % self.conn.name)
            raise Failed()

    def op_batch(self):
        """A changeset of 1-100 operations on distinct rows of the partition:
        inserts of new rows while under the window, deletes of the oldest while
        over it, replaces and merges of others."""
        n = self.rng.randint(1, 100) if self.rng.random() < 0.3 else self.rng.randint(1, 10)
        ops, effects, used = [], [], set()
        for _ in range(n):
            self.seq += 1
            r = self.rng.random()
            if len(self.live) - sum(1 for e in effects if e[0] == "del") > self.window and \
                    r < 0.5:
                cand = [k for k in self.order if k not in used]
                if not cand:
                    break
                rk = cand[0]
                ops.append(("DELETE", ekey(TABLE, self.pk, rk), None, [("If-Match", "*")]))
                effects.append(("del", rk, 204))
            elif r < 0.75 or not self.order:
                rk = self.new_rk()
                ops.append(("POST", "/" + TABLE, entity(self.rng, self.pk, rk, self.seq), []))
                effects.append(("add", rk, 201))
            else:
                cand = [k for k in self.order[-200:] if k not in used]
                if not cand:
                    break
                rk = self.rng.choice(cand)
                merge = r < 0.87
                ops.append(("MERGE" if merge else "PUT", ekey(TABLE, self.pk, rk),
                            entity(self.rng, self.pk, rk, self.seq), [("If-Match", "*")]
                            if self.rng.random() < 0.5 else []))
                effects.append(("add", rk, 204))
            used.add(rk)
        if not ops:
            return
        body, ct = batch_body(self.hostport, TABLE, ops)
        st, h, data = self.conn.request("batch", "POST", "/$batch", body,
                                        [("Content-Type", ct)], want=(202,))
        codes = parse_batch(data)
        want = [e[2] for e in effects]
        if codes != want:
            self.s.error("%s: $batch of %d answered %s, expected %s; body %r"
                         % (self.conn.name, len(ops), codes[:10], want[:10], data[:600]))
            raise Failed()
        for kind, rk, _ in effects:
            if kind == "del":
                self.remove(rk)
            else:
                self.add(rk, None)

    def op_table(self):
        """Creates a table, fills it, queries it, deletes it, checks it is gone."""
        self.tables += 1
        name = "churn%dx%d" % (self.wid, self.tables)
        self.conn.request("table", "POST", "/Tables", json.dumps({"TableName": name}),
                          want=(201,))
        n = self.rng.randint(10, 100)
        ops = [("POST", "/" + name, entity(self.rng, "p", "k%03d" % i, i), []) for i in range(n)]
        body, ct = batch_body(self.hostport, name, ops)
        st, h, data = self.conn.request("batch", "POST", "/$batch", body,
                                        [("Content-Type", ct)], want=(202,))
        if parse_batch(data) != [201] * n:
            self.s.error("%s: $batch filling %s answered %r" % (self.conn.name, name, data[:600]))
            raise Failed()
        got = self.query_pages("query", name, "PartitionKey eq 'p'", 30)
        if len(got) != n:
            self.s.error("%s: new table %s holds %d rows, %d were inserted"
                         % (self.conn.name, name, len(got), n))
            raise Failed()
        self.conn.request("table", "DELETE", "/Tables('%s')" % name, want=(204,))
        self.conn.request("expect_fail", "GET", "/%s()" % name, want=(404,),
                          code="TableNotFound")

    # -- the loop -----------------------------------------------------------
    def step(self):
        if self.churn and self.rng.random() < 0.01:
            return self.op_table()
        if len(self.live) > self.window + 20:
            return self.op_delete()
        r = self.rng.random()
        if not self.order or r < 0.14:
            return self.op_insert()
        if r < 0.22:
            return self.op_upsert(False)
        if r < 0.30:
            return self.op_upsert(True)
        if r < 0.38:
            return self.op_update(False)
        if r < 0.46:
            return self.op_update(True)
        if r < 0.62:
            return self.op_get()
        if r < 0.78:
            return self.op_delete() if len(self.live) > self.window // 2 else self.op_insert()
        if r < 0.85:
            return self.op_query()
        if r < 0.855:
            return self.op_scan()
        if r < 0.95:
            return self.op_batch()
        return self.op_expect_fail()

    def resync(self):
        """After a failure: rebuilds the record of the partition from the server."""
        try:
            got = self.query_pages("query", TABLE, "PartitionKey eq '%s'" % self.pk, 1000)
        except Failed:
            return False
        self.live = {e["RowKey"]: None for e in got}
        self.order = sorted(self.live)
        self.gone = []
        return True

    def run(self):
        while not self.s.stop.is_set():
            try:
                self.step()
            except Failed:
                while not self.s.stop.is_set() and not self.resync():
                    time.sleep(1.0)
            except Exception as e:  # noqa: BLE001 - a bug here is reported, not hung on
                self.s.error("%s: %r" % (self.conn.name, e))
                time.sleep(1.0)
        self.conn.close()


def quote(s):
    from urllib.parse import quote as q
    return q(s, safe="")


# --------------------------------------------------------------------------
# one backend (a child process)


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            k, _, v = ln.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads"):
                out[k] = int(v.split()[0])
    return out


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def dir_bytes(path):
    total = 0
    for dp, _, fs in os.walk(path):
        for f in fs:
            try:
                total += os.path.getsize(os.path.join(dp, f))
            except OSError:
                pass
    return total


def start_server(backend, data, out, auth):
    os.makedirs(data, exist_ok=True)
    log = os.path.join(out, "%s-server.log" % backend)
    cmd = [TABLED, "--port", "0", "--auth", auth, "--access-log", "off", "--log-level", "warn",
           "--backend", backend, "--data", data]
    if backend != "memory":
        cmd += ["--durability", "batch"]
    f = open(log, "wb")
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                         cwd=data)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(log, "rb") as r:
            m = re.search(rb"ready at http://([^:\s]+):(\d+)", r.read())
        if m:
            return p, f, m.group(1).decode(), int(m.group(2)), cmd
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    raise RuntimeError("tabled did not start (%s); see %s" % (" ".join(cmd), log))


COLUMNS = ["time", "elapsed_s", "requests"] + KINDS + [
    "errors", "p50_ms", "p99_ms", "max_ms", "rss_kib", "hwm_kib", "rss_anon_kib", "rss_file_kib",
    "fds", "threads", "cpu_s", "disk_bytes", "loadavg"]


def pct(sorted_vals, q):
    if not sorted_vals:
        return 0.0
    return sorted_vals[min(len(sorted_vals) - 1, int(q * len(sorted_vals)))]


def leveldb_flushed(data):
    """Whether LevelDB's LOG in data records a finished memtable flush."""
    try:
        with open(os.path.join(data, "LOG"), "rb") as f:
            return re.search(rb"Level-0 table #\d+: \d+ bytes OK", f.read()) is not None
    except OSError:
        return False


def run_backend(a, backend):
    """The child: one server, its load and its samples; writes OUT/BACKEND.json."""
    data = os.path.join(a.data, backend)
    p, logf, host, port, cmd = start_server(backend, data, a.out, a.auth)
    errlog = open(os.path.join(a.out, "%s-errors.log" % backend), "w")
    s = Soaker(host, port, 0 if a.max else a.rate, a.auth == "on", errlog)
    setup = Conn(s, "setup")
    setup.request("table", "POST", "/Tables", json.dumps({"TableName": TABLE}), want=(201,))
    setup.close()
    seed = a.seed * 1000 + sum(map(ord, backend))
    workers = [Worker(s, i, a.window, i == 0, seed + i) for i in range(a.workers)]
    threads = [threading.Thread(target=w.run, daemon=True) for w in workers]
    csvf = open(os.path.join(a.out, "%s.csv" % backend), "w")
    csvf.write(",".join(COLUMNS) + "\n")
    rows, died = [], None
    steady = None if backend == "leveldb" else 0
    t0 = time.monotonic()
    cpu0 = proc_cpu(p.pid)
    for t in threads:
        t.start()
    end = t0 + a.minutes * 60
    k = 0
    while True:
        k += 1
        nxt = t0 + k * SAMPLE_S
        if nxt > end + 0.5:
            break
        time.sleep(max(0.0, nxt - time.monotonic()))
        counts, lat, errs = s.take_interval()
        if p.poll() is not None:
            died = p.returncode
            s.error("the server exited with status %s" % died)
            errs += 1
            break
        st = proc_status(p.pid)
        cpu = proc_cpu(p.pid)
        lat.sort()
        row = {"time": time.strftime("%H:%M:%S"), "elapsed_s": round(time.monotonic() - t0),
               "requests": len(lat), "errors": errs,
               "p50_ms": round(pct(lat, 0.50) * 1000, 2), "p99_ms": round(pct(lat, 0.99) * 1000, 2),
               "max_ms": round(lat[-1] * 1000, 2) if lat else 0.0,
               "rss_kib": st.get("VmRSS", 0), "hwm_kib": st.get("VmHWM", 0),
               "rss_anon_kib": st.get("RssAnon", 0), "rss_file_kib": st.get("RssFile", 0),
               "loadavg": open("/proc/loadavg").read().split()[0],
               "fds": len(os.listdir("/proc/%d/fd" % p.pid)), "threads": st.get("Threads", 0),
               "cpu_s": round(cpu - cpu0, 2), "disk_bytes": dir_bytes(data) if backend != "memory"
               else 0}
        cpu0 = cpu
        if steady is None and leveldb_flushed(data):
            steady = row["elapsed_s"]
        row.update(counts)
        rows.append(row)
        csvf.write(",".join(str(row[c]) for c in COLUMNS) + "\n")
        csvf.flush()
        print("%-8s %5ds req %5d [ins %d ups %d upm %d upd %d mrg %d get %d del %d qry %d scn %d "
              "bat %d neg %d tbl %d] err %d | p50 %.1f p99 %.1f max %.0f ms | RSS %.1f MiB HWM %.1f "
              "fds %d thr %d cpu %.1fs disk %.1f MiB"
              % (backend, row["elapsed_s"], row["requests"], *[counts[c] for c in KINDS], errs,
                 row["p50_ms"], row["p99_ms"], row["max_ms"], row["rss_kib"] / 1024.0,
                 row["hwm_kib"] / 1024.0, row["fds"], row["threads"], row["cpu_s"],
                 row["disk_bytes"] / 1048576.0), flush=True)
    s.stop.set()
    for t in threads:
        t.join(90)
    _, _, errs = s.take_interval()
    exit_status = died
    if died is None:
        p.send_signal(signal.SIGTERM)
        try:
            exit_status = p.wait(120)
        except subprocess.TimeoutExpired:
            p.kill()
            exit_status = "hung on SIGTERM"
    logf.close()
    errlog.close()
    csvf.close()
    summary = {"backend": backend, "cmd": cmd, "rows": rows, "exit": exit_status,
               "errors": s.errors_total, "minutes": a.minutes, "steady_from_s": steady}
    with open(os.path.join(a.out, "%s.json" % backend), "w") as f:
        json.dump(summary, f)
    if not a.keep:
        shutil.rmtree(data, ignore_errors=True)
    return summary


# --------------------------------------------------------------------------
# the verdict


def slope_per_hour(xs, ys):
    if len(xs) < 2:
        return 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den * 3600 if den else 0.0


def judge(sm):
    """Returns (failure reasons, notes on what could not be judged, dict of
    figures) for one backend."""
    rows, be = sm["rows"], sm["backend"]
    fails, notes, fig = [], [], {}
    if sm["errors"]:
        fails.append("%s: %d errors (see %s-errors.log)" % (be, sm["errors"], be))
    if sm["exit"] != 0:
        fails.append("%s: the server ended with %s, not 0 after SIGTERM" % (be, sm["exit"]))
    total = sm["minutes"] * 60
    warm = max(WARMUP_FRACTION * total, WARMUP_MIN_S)
    if (total - warm) / SAMPLE_S < 3 * MIN_THIRD:
        warm = WARMUP_FRACTION * total
    if "steady_from_s" in sm and sm["steady_from_s"] is None:
        # LevelDB's memtable grows to write-buffer-size (64 MiB by default)
        # before its first flush: that growth is by design, not a leak.
        notes.append("%s: memory growth not judged: LevelDB never flushed its memtable (the "
                     "first flush ends the warm-up; at 300 requests/s it comes after about "
                     "5 minutes)" % be)
    elif sm.get("steady_from_s"):
        warm = max(warm, sm["steady_from_s"])
    after = [r for r in rows if r["elapsed_s"] > warm]
    fig["warmup_s"] = warm
    fig["requests"] = sum(r["requests"] for r in rows)
    fig["disk_max"] = max((r["disk_bytes"] for r in rows), default=0)
    fig["disk_last"] = rows[-1]["disk_bytes"] if rows else 0
    if notes:
        return fails, notes, fig
    if len(after) < 3 * MIN_THIRD:
        notes.append("%s: growth not judged: only %d samples after the warm-up (run at least "
                     "2 minutes)" % (be, len(after)))
        return fails, notes, fig
    n3 = len(after) // 3
    first, last = after[:n3], after[-n3:]
    f_fd, l_fd = max(r["fds"] for r in first), max(r["fds"] for r in last)
    fig.update(fd_first=f_fd, fd_last=l_fd)
    if l_fd > f_fd + FD_SLACK:
        fails.append("%s: open descriptors grew: at most %d in the first third, %d in the last "
                     "(slack %d)" % (be, f_fd, l_fd, FD_SLACK))
    # VmRSS, and its anonymous part alone: file-backed pages (LevelDB's
    # mmap'ed table files) come and go with the backend's compactions,
    # while heap growth shows in RssAnon whatever the files do.
    for key, col in (("rss", "rss_kib"), ("anon", "rss_anon_kib")):
        f_m = statistics.median(r[col] for r in first) / 1024.0
        l_m = statistics.median(r[col] for r in last) / 1024.0
        fig.update({key + "_first": f_m, key + "_last": l_m,
                    key + "_limit": f_m * RSS_RATIO + RSS_SLACK_MIB,
                    key + "_slope": slope_per_hour([r["elapsed_s"] for r in after],
                                                   [r[col] / 1024.0 for r in after])})
        if l_m > fig[key + "_limit"]:
            fails.append("%s: %s grew: median %.1f MiB in the first third, %.1f MiB in the last "
                         "(limit %.1f = x%.2f + %.0f MiB)"
                         % (be, "VmRSS" if key == "rss" else "RssAnon", f_m, l_m,
                            fig[key + "_limit"], RSS_RATIO, RSS_SLACK_MIB))
    if be == "flatfile" and fig["disk_max"] > FLATFILE_DISK_BOUND_MIB * 1048576:
        fails.append("%s: the data directory reached %.1f MiB, above the %.0f MiB its compaction "
                     "should keep it under" % (be, fig["disk_max"] / 1048576.0,
                                               FLATFILE_DISK_BOUND_MIB))
    return fails, notes, fig


def report(summaries):
    """Prints the summary table; returns the failure reasons and the notes."""
    fails, notes = [], []
    print("\n%-9s %9s %6s %-24s %-24s %-9s %8s %10s %9s %s" % (
        "backend", "requests", "errors", "VmRSS first/last (limit)", "RssAnon first/last (limit)",
        "fds f/l", "HWM", "p99 median", "disk max", "exit"))
    for sm in summaries:
        f, n, fig = judge(sm)
        fails += f
        notes += n
        rows = sm["rows"]
        p99 = statistics.median(r["p99_ms"] for r in rows) if rows else 0
        hwm = max((r["hwm_kib"] for r in rows), default=0) / 1024.0
        mem = ["%.1f/%.1f (%.1f) MiB" % (fig[k + "_first"], fig[k + "_last"], fig[k + "_limit"])
               if k + "_first" in fig else "-" for k in ("rss", "anon")]
        print("%-9s %9d %6d %-24s %-24s %-9s %7.1fM %8.1fms %8.1fM %s" % (
            sm["backend"], fig["requests"], sm["errors"], mem[0], mem[1],
            "%d/%d" % (fig["fd_first"], fig["fd_last"]) if "fd_first" in fig else "-",
            hwm, p99, fig["disk_max"] / 1048576.0, sm["exit"]))
        if "rss_slope" in fig:
            print("%-9s slope after the warm-up (%.0f s): VmRSS %+.1f MiB/h, RssAnon %+.1f MiB/h"
                  % ("", fig["warmup_s"], fig["rss_slope"], fig["anon_slope"]))
    return fails, notes


def main():
    ap = argparse.ArgumentParser(description="a long mixed workload watching tabled for leaks")
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--backends", default="memory,leveldb,flatfile")
    ap.add_argument("--rate", type=float, default=300, help="requests/s per backend")
    ap.add_argument("--max", action="store_true", help="no rate limit")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--window", type=int, default=300, help="live rows per worker")
    ap.add_argument("--data", default=None, help="scratch directory (default: new, in $TMPDIR)")
    ap.add_argument("--out", default=None, help="results directory (default DATA/results)")
    ap.add_argument("--keep", action="store_true", help="keep the data directories")
    ap.add_argument("--auth", default="on", choices=["on", "off"],
                    help="on: SharedKey-signed requests (default)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report", default=None, metavar="OUT",
                    help="judge the results of an earlier run in OUT again, run nothing")
    ap.add_argument("--every", type=float, default=0, metavar="MIN",
                    help="with --report: also print a Markdown table per backend, one row "
                         "per MIN minutes")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        run_backend(a, a.child)
        return 0
    if a.report:
        backends = [b for b in a.backends.split(",") if b]
        if a.every:
            for b in backends:
                markdown(a.report, b, a.every)
        return verdict(a.report, backends, [])
    made = a.data is None
    a.data = a.data or tempfile.mkdtemp(prefix="tabled-soak-")
    a.out = os.path.abspath(a.out or os.path.join(a.data, "results"))
    a.data = os.path.abspath(a.data)
    os.makedirs(a.out, exist_ok=True)
    backends = [b for b in a.backends.split(",") if b]
    print("# soak: tabled %s, %s, %.1f min, %s, %d workers x %d live rows, auth %s, %d CPUs, "
          "load average %s; results in %s" % (
              TABLED, ",".join(backends), a.minutes,
              "no rate limit" if a.max else "%g requests/s per backend" % a.rate, a.workers,
              a.window, a.auth, os.cpu_count(), open("/proc/loadavg").read().split()[0], a.out),
          flush=True)
    args = [sys.executable, os.path.abspath(__file__), "--minutes", str(a.minutes),
            "--rate", str(a.rate), "--workers", str(a.workers), "--window", str(a.window),
            "--data", a.data, "--out", a.out, "--auth", a.auth, "--seed", str(a.seed)]
    args += ["--max"] if a.max else []
    args += ["--keep"] if a.keep else []
    children = [(b, subprocess.Popen(args + ["--child", b])) for b in backends]
    fails = []
    for b, c in children:
        if c.wait():
            fails.append("%s: the load process failed (status %s)" % (b, c.returncode))
    if made and not a.keep:
        for b in backends:
            shutil.rmtree(os.path.join(a.data, b), ignore_errors=True)
    return verdict(a.out, backends, fails)


def markdown(out, backend, every_min):
    """Prints OUT/BACKEND.csv as a Markdown table, one row per every_min
    minutes: requests and errors summed over the window, the median of its
    10-s p50 and p99 latencies and its largest, the server's VmRSS, RssAnon,
    VmHWM, descriptors and data directory size at the window's last sample,
    the server's CPU time per request over the window, the load average."""
    import csv
    with open(os.path.join(out, "%s.csv" % backend)) as f:
        rows = list(csv.DictReader(f))
    print("\n%s\n" % backend)
    print("| min | time | requests | errors | p50 ms | p99 ms | max ms | RSS MiB | anon MiB "
          "| HWM MiB | fds | disk MiB | CPU ms/req | load |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    win = []
    for r in rows:
        win.append(r)
        el = int(r["elapsed_s"])
        if el % int(every_min * 60) >= SAMPLE_S and r is not rows[-1]:
            continue
        med = lambda k: statistics.median(float(x[k]) for x in win)  # noqa: E731
        nreq = sum(int(x["requests"]) for x in win)
        print("| %s | %s | %d | %d | %.1f | %.1f | %.0f | %.1f | %.1f | %.1f | %s | %.1f | %.2f "
              "| %s |" % (
                  "%g" % round(el / 60.0, 1), r["time"], nreq,
                  sum(int(x["errors"]) for x in win), med("p50_ms"), med("p99_ms"),
                  max(float(x["max_ms"]) for x in win), int(r["rss_kib"]) / 1024.0,
                  int(r["rss_anon_kib"]) / 1024.0, int(r["hwm_kib"]) / 1024.0, r["fds"],
                  int(r["disk_bytes"]) / 1048576.0,
                  sum(float(x["cpu_s"]) for x in win) * 1000.0 / max(nreq, 1), r["loadavg"]))
        win = []


def verdict(out, backends, fails):
    """Reads OUT/BACKEND.json of each backend, prints the table and PASS or FAIL."""
    summaries = []
    for b in backends:
        try:
            with open(os.path.join(out, "%s.json" % b)) as f:
                summaries.append(json.load(f))
        except (OSError, ValueError):
            fails.append("%s: no results in %s" % (b, out))
    f, notes = report(summaries)
    fails += f
    print("# CSV per backend: %s/BACKEND.csv; errors: BACKEND-errors.log; server output: "
          "BACKEND-server.log" % out)
    for n in notes:
        print("# " + n)
    if fails:
        print("FAIL: " + "; ".join(fails))
        return 1
    print("PASS" + (" (%d growth verdict(s) not given, see above)" % len(notes) if notes else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
