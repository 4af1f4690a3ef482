#!/usr/bin/python3
"""tload - the write load of the crash tests, and the record of what was
acknowledged (stdlib only).

  Client   a keep-alive HTTP/1.1 client over a raw socket (the server runs
           with --auth off: the crash tests are about storage, not auth)
  Worker   one thread, one connection, one PartitionKey: inserts, $batch
           changesets of five inserts, replaces of its counter entity with
           If-Match, deletes of its earlier rows. It records every write the
           server acknowledged (with its ETag) and the one write in flight.
  verify() after a restart: every acknowledged write is there with its
           acknowledged ETag, deleted rows are gone, the write that was in
           flight at the kill is there wholly or not at all (a $batch never
           in part), nothing else appeared. In-flight writes are then
           settled to what was found, so the next cycle starts exact.
"""
import json
import random
import re
import socket
import threading
import time

ACCOUNT = "devstoreaccount1"
JSON_NOMETA = "application/json;odata=nometadata"
JSON_MINIMAL = "application/json;odata=minimalmetadata"
BATCH_SIZE = 5


class ConnectionLost(Exception):
    pass


class Client:
    """A keep-alive HTTP/1.1 client for one connection."""

    def __init__(self, host, port, timeout=15.0):
        self.host, self.port = host, port
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _fill(self):
        try:
            data = self.sock.recv(65536)
        except OSError as e:
            raise ConnectionLost(str(e))
        if not data:
            raise ConnectionLost("connection closed")
        self.buf += data

    def request(self, method, path, body=None, headers=()):
        """Sends one request; returns (status, {lower-case header: value}, body)."""
        if isinstance(body, str):
            body = body.encode("utf-8")
        lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s:%d" % (self.host, self.port),
                 "x-ms-version: 2019-02-02"]
        if not any(k.lower() == "accept" for k, _ in headers):
            lines.append("Accept: " + JSON_NOMETA)
        lines += ["%s: %s" % kv for kv in headers]
        lines.append("Content-Length: %d" % (len(body) if body else 0))
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
        try:
            self.sock.sendall(raw)
        except OSError as e:
            raise ConnectionLost(str(e))
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        hl = head.decode("latin-1").split("\r\n")
        status = int(hl[0].split(" ")[1])
        hdrs = {}
        for ln in hl[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0"))
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return status, hdrs, data


def entity_body(pk, rk, seq, size):
    """JSON of an entity with a Seq number and about size bytes of data."""
    return json.dumps({"PartitionKey": pk, "RowKey": rk, "Seq": seq,
                       "Data": ("%d-" % seq) * (size // 8 + 1)})


def batch_body(table, pk, rks, seq, host):
    """A $batch request body: one changeset inserting rks."""
    bb, cb = "batch_%d" % seq, "changeset_%d" % seq
    s = "--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n" % (bb, cb)
    for rk in rks:
        s += "--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" % cb
        s += "POST http://%s/%s/%s HTTP/1.1\r\n" % (host, ACCOUNT, table)
        s += "Content-Type: application/json\r\nAccept: %s\r\n" % JSON_NOMETA
        s += "Prefer: return-no-content\r\n\r\n"
        s += entity_body(pk, rk, seq, 100) + "\r\n"
    s += "--%s--\r\n--%s--\r\n" % (cb, bb)
    return s, "multipart/mixed; boundary=%s" % bb


class Worker:
    """One connection writing into its own partition until stopped or the
    server dies (run_cycle, in a thread of its own per cycle). Its record
    (only its thread writes it while a cycle runs):
      rows[(table, rk)] = etag, or None once a delete was acknowledged
      counter = (seq, etag) of the last acknowledged replace
      inflight = the write sent but not answered, or None"""

    def __init__(self, wid, rng):
        self.wid, self.pk, self.rng = wid, "w%02d" % wid, rng
        self.rows = {}
        self.counter = (0, None)
        self.inflight = None
        self.seq = 0
        self.table = None
        self.host, self.port = None, None
        self.stop = threading.Event()
        self.errors = []
        self.acked = {"insert": 0, "batch": 0, "replace": 0, "delete": 0}

    def start(self, host, port, table):
        """Starts a cycle's thread writing into table."""
        self.host, self.port, self.table = host, port, table
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run_cycle, daemon=True)
        self.thread.start()

    def join(self, timeout):
        self.thread.join(timeout)

    def run_cycle(self):
        try:
            c = Client(self.host, self.port)
        except OSError:
            return
        try:
            while not self.stop.is_set():
                self.one(c)
        except ConnectionLost:
            pass
        except Exception as e:  # noqa: BLE001 - report, do not hang
            self.errors.append("worker %d: %r" % (self.wid, e))
        finally:
            c.close()

    def fail(self, what, status, body):
        if not self.stop.is_set():
            self.errors.append("worker %d: %s answered %d %s" % (self.wid, what, status, body[:200]))
        raise ConnectionLost(what)

    def one(self, c):
        """Sends one write and records its outcome."""
        self.seq += 1
        seq, t, r = self.seq, self.table, self.rng.random()
        mine = [k for k, v in self.rows.items() if k[0] == t and v is not None]
        if r < 0.45 or (r >= 0.85 and not mine):
            rk = "s%07d" % seq
            self.inflight = ("insert", t, rk)
            st, h, b = c.request("POST", "/%s/%s" % (ACCOUNT, t),
                                 entity_body(self.pk, rk, seq, self.rng.randint(20, 2000)),
                                 [("Content-Type", "application/json"),
                                  ("Prefer", "return-no-content")])
            if st != 204:
                self.fail("insert", st, b)
            self.rows[(t, rk)] = h.get("etag")
            self.acked["insert"] += 1
        elif r < 0.60:
            rks = ["b%07d-%d" % (seq, i) for i in range(BATCH_SIZE)]
            self.inflight = ("batch", t, rks)
            body, ct = batch_body(t, self.pk, rks, seq, "%s:%d" % (self.host, self.port))
            st, h, b = c.request("POST", "/%s/$batch" % ACCOUNT, body, [("Content-Type", ct)])
            etags = re.findall(rb"(?i)\r\netag: *([^\r\n]+)", b)
            codes = re.findall(rb"HTTP/1\.1 (\d{3})", b)
            if st != 202 or len(etags) != BATCH_SIZE or any(x != b"204" for x in codes):
                self.fail("$batch", st, b)
            for rk, e in zip(rks, etags):
                self.rows[(t, rk)] = e.decode("latin-1")
            self.acked["batch"] += 1
        elif r < 0.85:
            cseq, etag = self.counter
            self.inflight = ("replace", cseq + 1)
            hdrs = [("Content-Type", "application/json")]
            if etag:
                hdrs.append(("If-Match", etag))
            st, h, b = c.request("PUT", "/%s/counters(PartitionKey='%s',RowKey='ctr')"
                                 % (ACCOUNT, self.pk),
                                 entity_body(self.pk, "ctr", cseq + 1, 1500), hdrs)
            if st != 204:
                self.fail("replace", st, b)
            self.counter = (cseq + 1, h.get("etag"))
            self.acked["replace"] += 1
        else:
            key = self.rng.choice(mine)
            self.inflight = ("delete", t, key[1])
            st, h, b = c.request("DELETE", "/%s/%s(PartitionKey='%s',RowKey='%s')"
                                 % (ACCOUNT, t, self.pk, key[1]), None, [("If-Match", "*")])
            if st != 204:
                self.fail("delete", st, b)
            self.rows[key] = None
            self.acked["delete"] += 1
        self.inflight = None


def scan(c, table):
    """Every entity of a table: {(PartitionKey, RowKey): (etag, Seq)}."""
    out, nxt = {}, None
    while True:
        q = "/%s/%s()" % (ACCOUNT, table)
        if nxt:
            q += "?NextPartitionKey=%s&NextRowKey=%s" % nxt
        st, h, b = c.request("GET", q, None, [("Accept", JSON_MINIMAL)])
        if st != 200:
            raise RuntimeError("query %s answered %d %s" % (table, st, b[:200]))
        for e in json.loads(b)["value"]:
            out[(e["PartitionKey"], e["RowKey"])] = (e.get("odata.etag"), e.get("Seq"))
        npk = h.get("x-ms-continuation-nextpartitionkey")
        if not npk:
            return out
        nxt = (npk, h.get("x-ms-continuation-nextrowkey", ""))


def verify(workers, c, tables, stats):
    """Checks the restarted server against the workers' records for the
    given tables (and the counters). Returns a list of problems; settles
    in-flight writes to what was found."""
    problems = []
    seen = {t: scan(c, t) for t in tables}
    counters = scan(c, "counters")
    for w in workers:
        inf = w.inflight
        # in-flight write: wholly there or not at all; settle it
        if inf and inf[0] in ("insert", "batch", "delete") and inf[1] in seen:
            rks = inf[2] if inf[0] == "batch" else [inf[2]]
            there = [rk for rk in rks if (w.pk, rk) in seen[inf[1]]]
            if inf[0] == "delete":
                applied = not there
                if applied:
                    w.rows[(inf[1], inf[2])] = None
            else:
                if there and len(there) != len(rks):
                    problems.append("worker %d: $batch %s is partly there (%d of %d rows)"
                                    % (w.wid, rks[0], len(there), len(rks)))
                applied = bool(there)
                for rk in there:
                    w.rows[(inf[1], rk)] = seen[inf[1]][(w.pk, rk)][0]
            stats["inflight_applied" if applied else "inflight_lost"] += 1
            w.inflight = None
        elif inf and inf[0] == "replace":
            got = counters.get((w.pk, "ctr"))
            if got and got[1] == inf[1]:
                w.counter = (inf[1], got[0])
                stats["inflight_applied"] += 1
            else:
                stats["inflight_lost"] += 1
            w.inflight = None
        # acknowledged rows
        for (t, rk), etag in w.rows.items():
            if t not in seen:
                continue
            got = seen[t].get((w.pk, rk))
            if etag is None and got is not None:
                problems.append("worker %d: %s/%s was deleted (acknowledged) but is back"
                                % (w.wid, t, rk))
            elif etag is not None and got is None:
                problems.append("worker %d: acknowledged %s/%s is lost" % (w.wid, t, rk))
                stats["lost"] += 1
            elif etag is not None and got[0] != etag:
                problems.append("worker %d: %s/%s has ETag %s, acknowledged %s"
                                % (w.wid, t, rk, got[0], etag))
        # nothing that was never written
        for t in tables:
            for (pk, rk) in seen[t]:
                if pk == w.pk and (t, rk) not in w.rows:
                    problems.append("worker %d: %s/%s appeared without a write" % (w.wid, t, rk))
        cseq, cetag = w.counter
        got = counters.get((w.pk, "ctr"))
        if cseq and (not got or got[1] != cseq or got[0] != cetag):
            problems.append("worker %d: counter holds %r, acknowledged seq %d etag %s"
                            % (w.wid, got, cseq, cetag))
            stats["lost"] += 1
    return problems


def create_table(c, name):
    st, _, b = c.request("POST", "/%s/Tables" % ACCOUNT, json.dumps({"TableName": name}),
                         [("Content-Type", "application/json"), ("Prefer", "return-no-content")])
    if st not in (201, 204, 409):
        raise RuntimeError("create table %s answered %d %s" % (name, st, b[:200]))


def wait_random(rng, lo, hi):
    time.sleep(rng.uniform(lo, hi))
