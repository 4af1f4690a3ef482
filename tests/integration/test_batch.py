#!/usr/bin/python3
"""Integration test: entity group transactions ($batch,
doc/protocol.md, Batch) with raw HTTP and the Python SDK (submit_transaction).

Raw requests are built here byte by byte (CRLF or LF, quoted boundaries,
Content-ID in either place, relative, path-style and host-style URLs) and
signed by the harness; answers are parsed strictly: exact delimiters, the
three CRLFs after an empty sub-response, the closing lines, header order.
After every failing batch the table's full contents (a fullmetadata query
of the whole table, raw bytes, ETags and Timestamps included) must be
byte-for-byte what they were before.  Prints TAP; exit status 1 on failure."""
import json
import os
import re
import sys
import threading
import time

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core import MatchConditions
    from azure.core.exceptions import HttpResponseError
    from azure.data.tables import (TableClient, TableServiceClient,
                                   TableTransactionError, UpdateMode)
    IMPORT_ERROR = None
except ImportError as e:  # reported as a failing check below
    IMPORT_ERROR = e

ACCOUNT = h.DEV_ACCOUNT
MIB = 1024 * 1024
GUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
MSG_RE = re.compile(r"^(\d+):(.*)\nRequestId:([^\n]*)\nTime:([^\n]*)$", re.S)
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$")
CT_MIN = h.JSON_CT % "minimalmetadata"
CT_NO = h.JSON_CT % "nometadata"
CT_FULL = h.JSON_CT % "fullmetadata"
TOO_MANY = "The batch request operation exceeds the maximum 100 changes per change set."
DIFF_PK = "All commands in a batch must operate on same entity group."
DUP_ROW = ("The batch request contains multiple changes with same row key. An entity can "
           "appear only once in a batch request.")
MESSAGES = {
    "EntityAlreadyExists": "The specified entity already exists.",
    "ResourceNotFound": "The specified resource does not exist.",
    "TableNotFound": "The table specified does not exist.",
    "UpdateConditionNotSatisfied":
        "The update condition specified in the request was not satisfied.",
    "CommandsInBatchActOnDifferentPartitions": DIFF_PK,
    "InvalidDuplicateRow": DUP_ROW,
}
REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request",
           403: "Forbidden", 404: "Not Found", 409: "Conflict", 412: "Precondition Failed",
           413: "Request Entity Too Large", 415: "Unsupported Media Type"}
CLIENT_KW = dict(retry_total=0, connection_timeout=10, read_timeout=30)


# --------------------------------------------------------------------------
# building requests


def op(method, url, body=None, headers=None, cid=None, mime_cid=None):
    """One embedded request. url is written as given; body a dict (JSON),
    str or None; headers a list of (name, value) for the sub-request; cid
    adds Content-ID as a sub-request header, mime_cid as a MIME header."""
    return dict(method=method, url=url, body=body, headers=list(headers or []), cid=cid,
                mime_cid=mime_cid)


def body_text(b):
    if b is None:
        return None
    if isinstance(b, (dict, list)):
        return json.dumps(b, ensure_ascii=False, separators=(",", ":"))
    return b


def part_text(o, eol="\r\n", lower=False, extra_blank=False):
    """The MIME part holding one embedded request (no delimiter line)."""
    ct, cte = ("content-type", "content-transfer-encoding") if lower else \
        ("Content-Type", "Content-Transfer-Encoding")
    s = "%s: application/http%s%s: binary%s" % (ct, eol, cte, eol)
    if o["mime_cid"] is not None:
        s += "Content-ID: %s%s" % (o["mime_cid"], eol)
    s += eol
    s += "%s %s HTTP/1.1%s" % (o["method"], o["url"], eol)
    hdrs = list(o["headers"])
    if o["cid"] is not None:
        hdrs.append(("Content-ID", str(o["cid"])))
    body = body_text(o["body"])
    if body is not None and not any(k.lower() == "content-type" for k, _ in hdrs):
        hdrs.append(("Content-Type", "application/json"))
    for k, v in hdrs:
        s += "%s: %s%s" % (k, v, eol)
    s += eol
    if body is not None:
        if extra_blank:
            s += eol
        s += body + eol
    return s


def changeset_body(ops, bb="batch_b1", cb="changeset_c1", eol="\r\n", lower=False,
                   extra_blank=False, close_outer="--", preamble="", epilogue=""):
    """A batch body holding one changeset with ops."""
    ct = "content-type" if lower else "Content-Type"
    s = preamble
    s += "--%s%s%s: multipart/mixed; boundary=%s%s%s" % (bb, eol, ct, cb, eol, eol)
    for o in ops:
        s += "--%s%s" % (cb, eol)
        s += part_text(o, eol, lower, extra_blank)
    s += "--%s--%s" % (cb, eol)
    s += "--%s%s%s" % (bb, close_outer, eol)
    return s + epilogue


def query_body(o, bb="batch_q1", eol="\r\n"):
    """A batch body holding one GET directly under the batch boundary."""
    return "--%s%s%s--%s--%s" % (bb, eol, part_text(o, eol), bb, eol)


# --------------------------------------------------------------------------
# parsing answers strictly


class Part:
    """One application/http sub-response."""

    def __init__(self, raw):
        self.raw = raw
        mime, sep, rest = raw.partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("part without MIME header block: %r" % raw[:200])
        self.mime = mime
        head, sep, self.body = rest.partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("sub-response without header block: %r" % rest[:200])
        lines = head.decode("utf-8").split("\r\n")
        m = re.match(r"^HTTP/1\.1 (\d{3}) (.*)$", lines[0])
        if not m:
            raise ValueError("bad status line %r" % lines[0])
        self.status, self.reason = int(m.group(1)), m.group(2)
        self.status_line = lines[0]
        self.headers = []
        for line in lines[1:]:
            k, sep, v = line.partition(": ")
            if not sep:
                raise ValueError("bad header line %r" % line)
            self.headers.append((k, v))

    def h(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def names(self):
        return [k for k, _ in self.headers]

    def error(self):
        """(code, index, first message line) of a JSON error body."""
        try:
            e = json.loads(self.body.decode("utf-8"))["odata.error"]
            m = MSG_RE.match(e["message"]["value"])
            if not m:
                return e["code"], None, e["message"]["value"]
            return e["code"], int(m.group(1)), m.group(2)
        except Exception:  # noqa: BLE001
            return None, None, None

    def __repr__(self):
        return "<Part %s %s %r>" % (self.status_line, self.headers, self.body[:300])


def split_multipart(data, boundary):
    """The part contents of data, which must be exactly
    '--B' CRLF part CRLF '--B' CRLF ... part CRLF '--B--' CRLF."""
    d = b"--" + boundary.encode()
    pieces = data.split(d)
    if pieces[0] != b"":
        raise ValueError("text before the first delimiter: %r" % pieces[0][:100])
    if pieces[-1] != b"--\r\n":
        raise ValueError("does not end with the close delimiter + CRLF: %r" % pieces[-1][-100:])
    out = []
    for p in pieces[1:-1]:
        if not (p.startswith(b"\r\n") and p.endswith(b"\r\n")):
            raise ValueError("delimiter not on its own line: %r" % p[:100])
        out.append(p[2:-2])
    return out


class Answer:
    """A parsed 202 batch response: kind 'changeset' or 'query', parts."""

    def __init__(self, resp):
        self.resp = resp
        ct = resp.h("Content-Type") or ""
        m = re.match(r"^multipart/mixed; boundary=(batchresponse_(%s))$" % GUID, ct)
        if not m:
            raise ValueError("bad batch Content-Type %r" % ct)
        self.bb = m.group(1)
        outer = split_multipart(resp.body, self.bb)
        if len(outer) != 1:
            raise ValueError("%d parts under the batch boundary" % len(outer))
        first = outer[0]
        m = re.match(rb"^Content-Type: multipart/mixed; boundary=(changesetresponse_[0-9a-f-]{36})"
                     rb"\r\n\r\n", first)
        if m:
            self.kind = "changeset"
            self.cb = m.group(1).decode()
            inner = split_multipart(first[m.end():] + b"\r\n", self.cb)
            self.parts = [Part(p) for p in inner]
        else:
            self.kind = "query"
            self.cb = None
            self.parts = [Part(first)]


def batch(http, body, ct="multipart/mixed; boundary=batch_b1", headers=None):
    """POSTs body to $batch; returns (Response, Answer or None, parse
    error text or None)."""
    r = http.request("POST", "/$batch", body=body.encode("utf-8") if isinstance(body, str)
                     else body, content_type=ct, headers=headers)
    if r.status != 202:
        return r, None, "status %d: %r" % (r.status, r.body[:500])
    try:
        return r, Answer(r), None
    except Exception as e:  # noqa: BLE001
        return r, None, "%s\n%r" % (e, r.body[:3000])


# --------------------------------------------------------------------------
# table contents


def snapshot(http, table):
    """The raw bytes of a fullmetadata query of the whole table (every page),
    with ETags and Timestamps."""
    out = b""
    q = ""
    for _ in range(1000):
        r = http.request("GET", "/%s()%s" % (table, q),
                         headers={"Accept": h.ACCEPT["fullmetadata"]})
        if r.status != 200:
            raise AssertionError("snapshot query of %s: %d %r" % (table, r.status, r.body[:300]))
        out += r.body
        npk = r.h("x-ms-continuation-NextPartitionKey")
        nrk = r.h("x-ms-continuation-NextRowKey")
        if not npk:
            return out
        q = "?NextPartitionKey=%s" % npk + ("&NextRowKey=%s" % nrk if nrk else "")
    raise AssertionError("snapshot: too many pages")


def entities(http, table, filt=None):
    """{(pk, rk): entity dict} from a nometadata query (every page)."""
    res = {}
    q = "?$filter=" + h.pct_encode(filt) if filt else ""
    sep = "&" if q else "?"
    cont = ""
    for _ in range(1000):
        r = http.request("GET", "/%s()%s%s" % (table, q, cont),
                         headers={"Accept": h.ACCEPT["fullmetadata"]})
        if r.status != 200:
            raise AssertionError("query of %s: %d %r" % (table, r.status, r.body[:300]))
        for e in r.json()["value"]:
            res[(e["PartitionKey"], e["RowKey"])] = e
        npk = r.h("x-ms-continuation-NextPartitionKey")
        nrk = r.h("x-ms-continuation-NextRowKey")
        if not npk:
            return res
        cont = "%sNextPartitionKey=%s" % (sep, npk) + ("&NextRowKey=%s" % nrk if nrk else "")
    raise AssertionError("query: too many pages")


def user_props(e):
    """The custom properties of a fullmetadata entity, without annotations."""
    return {k: v for k, v in e.items()
            if "@" not in k and not k.startswith("odata.")
            and k not in ("PartitionKey", "RowKey", "Timestamp")}


# --------------------------------------------------------------------------
# the tests


class BatchTests:
    def __init__(self, tap, srv):
        self.tap = tap
        self.srv = srv
        self.http = h.Http(srv)
        self.prefix = "http://%s:%d/%s" % (srv.host, srv.port, ACCOUNT)

    # -- small helpers ---------------------------------------------------------
    def turl(self, table):
        """Absolute path-style URL of a table, as the SDKs write it."""
        return "%s/%s" % (self.prefix, table)

    def eurl(self, table, pk, rk, prefix=None):
        return "%s/%s(PartitionKey='%s',RowKey='%s')" % (prefix or self.prefix, table,
                                                          h.quote_key(pk), h.quote_key(rk))

    def location(self, table, pk, rk):
        """Location the service sends for an entity (doc/protocol.md, Insert Entity)."""
        return self.eurl(table, pk, rk, self.srv.base)

    def table(self, name):
        r = self.http.create_table(name)
        self.tap.eq(r.status, 201, "create table %s" % name)

    def put(self, table, entity):
        """Inserts entity with a plain request; returns its ETag."""
        r = self.http.insert(table, entity)
        if r.status != 201:
            raise AssertionError("insert %r: %d %r" % (entity, r.status, r.body[:300]))
        return r.h("ETag")

    def get(self, table, pk, rk):
        return self.http.get_entity(table, pk, rk)

    def ins(self, table, pk, rk, props=None, **kw):
        e = {"PartitionKey": pk, "RowKey": rk}
        e.update(props or {})
        return op("POST", self.turl(table), e, **kw)

    def ent(self, method, table, pk, rk, body=None, if_match=None, headers=None, **kw):
        hdrs = list(headers or [])
        if if_match is not None:
            hdrs.append(("If-Match", if_match))
        return op(method, self.eurl(table, pk, rk), body, hdrs, **kw)

    def expect_failure(self, what, ans, err, status, code, index, message=None):
        """ans must be a changeset answer with exactly one part: the failing
        operation's status, code and index-prefixed message."""
        tap = self.tap
        if not tap.ok(ans is not None and ans.kind == "changeset", "%s: 202 changeset answer"
                      % what, err):
            return None
        tap.eq(len(ans.parts), 1, "%s: exactly one part" % what)
        p = ans.parts[0]
        tap.eq(p.status_line, "HTTP/1.1 %d %s" % (status, REASONS[status]),
               "%s: status line" % what)
        code_got, idx, msg = p.error()
        tap.eq((p.status, code_got, idx), (status, code, index),
               "%s: status, code and index prefix" % what)
        want = message if message is not None else MESSAGES.get(code)
        if want is not None:
            tap.eq(msg, want, "%s: message after the index" % what)
        return p

    def unchanged(self, what, table, before):
        self.tap.eq(snapshot(self.http, table), before,
                    "%s: table contents byte-for-byte unchanged" % what)

    # -- 207-216, 225, 237: a successful mixed changeset, byte by byte ---------
    def test_success_exact(self):
        tap, T = self.tap, "BtExact"
        self.table(T)
        et = {}
        for rk in ("u1", "u2", "m1", "m2", "d1", "d2", "iom1", "untouched"):
            et[rk] = self.put(T, {"PartitionKey": "p1", "RowKey": rk, "Qty": 1, "Keep": "k"})
        before_untouched = self.get(T, "p1", "untouched").body
        ops = [
            self.ins(T, "p1", "r1", {"Qty": 1}, headers=[("Prefer", "return-no-content")], cid=1),
            self.ins(T, "p1", "r2", {"Qty": 2}, mime_cid=2),
            self.ins(T, "p1", "r3", {"Qty": 3}, headers=[("Prefer", "return-content")]),
            self.ent("PUT", T, "p1", "u1", {"Qty": 10}, if_match="*"),
            self.ent("PUT", T, "p1", "u2", {"Qty": 11}, if_match=et["u2"]),
            self.ent("MERGE", T, "p1", "m1", {"New": "x"}, if_match=et["m1"]),
            self.ent("PATCH", T, "p1", "m2", {"Qty": 12}, if_match="*"),
            self.ent("DELETE", T, "p1", "d1", if_match="*"),
            self.ent("DELETE", T, "p1", "d2", if_match=et["d2"]),
            self.ent("PUT", T, "p1", "ior1", {"A": "ior"}),
            self.ent("MERGE", T, "p1", "iom1", {"B": "iom"}),
            self.ent("PATCH", T, "p1", "iom2", {"C": "iom2"}, cid="x-7"),
        ]
        r, ans, err = batch(self.http, changeset_body(ops),
                            headers=[("x-ms-client-request-id", "batch-client-id-1")])
        if not tap.ok(ans is not None, "207: mixed batch -> 202 with a parsable answer", err):
            return
        # 208, 14.9: the 202 itself
        tap.eq((r.status, r.reason), (202, "Accepted"), "202 Accepted status line")
        tap.ok(re.match(r"^multipart/mixed; boundary=batchresponse_%s$" % GUID,
                        r.h("Content-Type", "")), "208: Content-Type multipart/mixed; "
               "boundary=batchresponse_<guid>", r.h("Content-Type"))
        for name, want in (("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff"),
                           ("x-ms-version", h.DEFAULT_VERSION),
                           ("x-ms-client-request-id", "batch-client-id-1")):
            tap.eq(r.h(name), want, "202 header %s" % name)
        tap.ok(h.GUID_RE.match(r.h("x-ms-request-id", "")), "202 has x-ms-request-id")
        tap.ok(h.RFC1123_RE.match(r.h("Date", "")), "202 has Date")
        # 209: fresh GUID boundaries
        tap.ok("batch_b1" not in ans.bb and "changeset_c1" not in ans.cb and
               ans.bb[len("batchresponse_"):] != ans.cb[len("changesetresponse_"):],
               "209: response boundaries are new GUIDs", (ans.bb, ans.cb))
        r2, ans2, err2 = batch(self.http, changeset_body([self.ins(T, "p1", "fresh", {})]))
        tap.ok(ans2 is not None and ans2.bb != ans.bb and ans2.cb != ans.cb,
               "209: each answer gets its own boundaries", err2)
        tap.eq(ans.kind, "changeset", "the answer holds one changeset response")
        tap.eq(len(ans.parts), len(ops), "one part per operation")
        if len(ans.parts) != len(ops):
            return
        P = ans.parts
        for i, p in enumerate(P):
            tap.eq(p.mime, b"Content-Type: application/http\r\nContent-Transfer-Encoding: binary",
                   "part %d MIME headers" % i)
        # 211
        tap.ok(r.body.endswith(("\r\n--%s--\r\n--%s--\r\n" % (ans.cb, ans.bb)).encode()),
               "211: ends with --changesetresponse_..--CRLF--batchresponse_..--CRLF",
               r.body[-200:])
        tap.ok(r.body.startswith(("--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n--%s"
                                  "\r\n" % (ans.bb, ans.cb, ans.cb)).encode()),
               "answer starts with the batch delimiter and the changeset header", r.body[:300])
        # 210: three CRLFs after the last header of every empty part
        empty = [p for p in P if not p.body]
        tap.eq(r.body.count(("\r\n\r\n\r\n--%s" % ans.cb).encode()), len(empty),
               "210: every empty sub-response ends with three CRLFs before the delimiter")
        for p in empty:
            last = "%s: %s" % p.headers[-1]
            tap.ok(("%s\r\n\r\n\r\n--%s" % (last, ans.cb)).encode() in r.body,
                   "210: three CRLFs after '%s'" % last)
        # 207 / 216: insert with return-no-content, Content-ID as request header
        loc = self.location(T, "p1", "r1")
        tap.eq(P[0].status_line, "HTTP/1.1 204 No Content", "insert return-no-content: 204")
        tap.eq(P[0].headers, [("Content-ID", "1"), ("X-Content-Type-Options", "nosniff"),
                              ("Cache-Control", "no-cache"),
                              ("Preference-Applied", "return-no-content"),
                              ("DataServiceVersion", "3.0;"), ("Location", loc),
                              ("DataServiceId", loc), ("ETag", P[0].h("ETag"))],
               "207/216: insert 204 part headers in the service's order")
        tap.eq(P[0].body, b"", "insert 204 part has no body")
        # 215 / 217: insert without Prefer, Content-ID as MIME header
        g2 = self.get(T, "p1", "r2")
        tap.eq(P[1].status_line, "HTTP/1.1 201 Created", "215: insert without Prefer: 201")
        tap.eq(P[1].headers, [("Content-ID", "2"), ("X-Content-Type-Options", "nosniff"),
                              ("Cache-Control", "no-cache"), ("DataServiceVersion", "3.0;"),
                              ("Content-Type", CT_MIN),
                              ("Location", self.location(T, "p1", "r2")),
                              ("ETag", g2.h("ETag"))],
               "215/217: insert 201 part headers (MIME Content-ID echoed)")
        tap.eq(P[1].body, g2.body, "215: 201 part body is the entity exactly as Get Entity "
               "returns it")
        tap.eq(P[2].headers, [("X-Content-Type-Options", "nosniff"),
                              ("Cache-Control", "no-cache"),
                              ("Preference-Applied", "return-content"),
                              ("DataServiceVersion", "3.0;"), ("Content-Type", CT_MIN),
                              ("Location", self.location(T, "p1", "r3")),
                              ("ETag", P[2].h("ETag"))],
               "insert with return-content: 201 part with Preference-Applied")
        tap.eq(P[2].status, 201, "insert with return-content: 201")
        # 213 / 214
        for i in (3, 4, 5, 6, 9, 10):
            tap.eq((P[i].status_line, P[i].names(), P[i].h("DataServiceVersion"), P[i].body),
                   ("HTTP/1.1 204 No Content", ["X-Content-Type-Options", "Cache-Control",
                                                "DataServiceVersion", "ETag"], "1.0;", b""),
                   "213: %s part: 204, DataServiceVersion 1.0; and ETag" % ops[i]["method"])
        for i in (7, 8):
            tap.eq((P[i].status_line, P[i].headers, P[i].body),
                   ("HTTP/1.1 204 No Content", [("X-Content-Type-Options", "nosniff"),
                                                ("Cache-Control", "no-cache"),
                                                ("DataServiceVersion", "1.0;")], b""),
                   "214: delete part: 204, DataServiceVersion 1.0; and no ETag")
        tap.eq(P[11].headers[0], ("Content-ID", "x-7"),
               "216: Content-ID echoed first, value as sent")
        tap.eq([i for i, p in enumerate(P) if p.h("Content-ID") is not None], [0, 1, 11],
               "216: Content-ID only on the parts whose request had one")
        # 212: one Timestamp for the whole batch
        etags = {p.h("ETag") for p in P if p.h("ETag")}
        tap.ok(len(etags) == 1, "212: every part carries the same ETag", etags)
        got = entities(self.http, T)
        written = ["r1", "r2", "r3", "u1", "u2", "m1", "m2", "ior1", "iom1", "iom2"]
        stamps = {got[("p1", rk)]["Timestamp"] for rk in written if ("p1", rk) in got}
        tap.ok(len(stamps) == 1, "212: every written entity has the same Timestamp", stamps)
        if len(stamps) == 1 and len(etags) == 1:
            tap.eq(h.etag_for(stamps.pop()), etags.pop(), "212: the ETag is the Timestamp's")
        # 225: all applied, in order, with single-request semantics
        want = {
            "r1": {"Qty": 1}, "r2": {"Qty": 2}, "r3": {"Qty": 3},
            "u1": {"Qty": 10}, "u2": {"Qty": 11},
            "m1": {"Qty": 1, "Keep": "k", "New": "x"}, "m2": {"Qty": 12, "Keep": "k"},
            "ior1": {"A": "ior"}, "iom1": {"Qty": 1, "Keep": "k", "B": "iom"},
            "iom2": {"C": "iom2"}, "untouched": {"Qty": 1, "Keep": "k"}, "fresh": {},
        }
        tap.eq({rk: user_props(e) for (pk, rk), e in got.items()}, want,
               "225: insert/update/merge/delete/upserts all applied (replace drops, merge keeps)")
        # 237: order
        tap.eq([p.h("Location") for p in P[:3]],
               [self.location(T, "p1", rk) for rk in ("r1", "r2", "r3")],
               "237: sub-responses in request order")
        tap.eq(self.get(T, "p1", "untouched").body, before_untouched,
               "an entity the batch did not name is untouched")

    # -- 217-224 and doc/protocol.md, Batch parser tolerance: what real clients send --
    def tolerated(self, what, T, body, ct, rks, cids=None):
        """body (inserting rks into partition 'tol' of T) must succeed."""
        r, ans, err = batch(self.http, body, ct=ct)
        if not self.tap.ok(ans is not None and ans.kind == "changeset", "%s: 202" % what, err):
            return None
        self.tap.eq([p.status for p in ans.parts], [204] * len(rks),
                    "%s: every operation succeeded" % what)
        got = entities(self.http, T, "PartitionKey eq 'tol'")
        self.tap.ok(all(("tol", rk) in got for rk in rks), "%s: entities written" % what,
                    sorted(got))
        if cids is not None:
            self.tap.eq([p.h("Content-ID") for p in ans.parts], cids,
                        "%s: Content-IDs echoed" % what)
        return ans

    def test_tolerance(self):
        tap, T = self.tap, "BtTol"
        self.table(T)
        nc = [("Prefer", "return-no-content")]
        n = [0]

        def ins(url=None, **kw):
            n[0] += 1
            rk = "t%03d" % n[0]
            o = op("POST", url or self.turl(T), {"PartitionKey": "tol", "RowKey": rk, "V": n[0]},
                   nc + kw.pop("headers", []), **kw)
            return o, rk

        def two(**kw):
            a, ra = ins(**kw)
            b, rb = ins(**kw)
            return [a, b], [ra, rb]

        ops, rks = two()
        std = "multipart/mixed; boundary=batch_b1"
        self.tolerated("218: lower-case MIME header names", T,
                       changeset_body(ops, lower=True), std, rks)
        ops, rks = two()
        self.tolerated("219: extra blank line before the JSON body", T,
                       changeset_body(ops, extra_blank=True), std, rks)
        ops, rks = two()
        self.tolerated("JS SDK style: lower case and an extra blank line", T,
                       changeset_body(ops, lower=True, extra_blank=True), std, rks)
        ops, rks = two()
        self.tolerated("220: LF-only line endings", T, changeset_body(ops, eol="\n"), std, rks)
        ops, rks = two()
        self.tolerated("220: LF-only, lower case, extra blank line", T,
                       changeset_body(ops, eol="\n", lower=True, extra_blank=True), std, rks)
        ops, rks = two()
        self.tolerated("221: quoted boundary", T, changeset_body(ops, bb="batch_q9"),
                       'multipart/mixed; boundary="batch_q9"', rks)
        ops, rks = two()
        self.tolerated("221: charset parameter first, no spaces", T,
                       changeset_body(ops, bb="batch_cs"),
                       'multipart/mixed;charset="utf-8";boundary=batch_cs', rks)
        ops, rks = two()
        self.tolerated("221: quoted boundary with charset and no spaces", T,
                       changeset_body(ops, bb="batch_qq"),
                       'multipart/mixed;charset="utf-8";boundary="batch_qq"', rks)
        ops, rks = two()
        self.tolerated("222: closing delimiter without the trailing --", T,
                       changeset_body(ops, close_outer=""), std, rks)
        ops, rks = two()
        self.tolerated("222: closing delimiter without the final CRLF", T,
                       changeset_body(ops)[:-2], std, rks)
        ops, rks = two()
        self.tolerated("222: no trailing -- and no final CRLF", T,
                       changeset_body(ops, close_outer="")[:-2], std, rks)
        ops, rks = two()
        self.tolerated("preamble and epilogue are ignored", T,
                       changeset_body(ops, preamble="This is a preamble.\r\n\r\n",
                                      epilogue="trailing epilogue text\r\n"), std, rks)
        # 223: with and without () after the table name
        a, ra = ins(url=self.turl(T) + "()")
        b, rb = ins(url=self.turl(T))
        self.tolerated("223: insert URL with and without ()", T, changeset_body([a, b]), std,
                       [ra, rb])
        # relative forms: table name only, /account/table
        a, ra = ins(url=T)
        b, rb = ins(url="/%s/%s" % (ACCOUNT, T))
        c, rc = ins(url=T + "()")
        self.tolerated("relative URLs (table, /account/table, table())", T,
                       changeset_body([a, b, c]), std, [ra, rb, rc])
        # 224: host-style absolute URL inside a path-style batch
        hs = "http://%s.table.localhost:%d" % (ACCOUNT, self.srv.port)
        a, ra = ins(url="%s/%s" % (hs, T))
        b, rb = ins(url="%s/%s()" % (hs, T))
        ans = self.tolerated("224: host-style absolute URLs in a path-style batch", T,
                             changeset_body([a, b]), std, [ra, rb])
        if ans:
            tap.eq(ans.parts[0].h("Location"), "%s/%s(PartitionKey='tol',RowKey='%s')"
                   % (hs, T, ra), "224: Location follows the sub-request's host-style URL")
        # https absolute URL naming our host (clients behind TLS proxies)
        a, ra = ins(url="https://%s:%d/%s/%s" % (self.srv.host, self.srv.port, ACCOUNT, T))
        self.tolerated("https:// absolute URL naming the account", T, changeset_body([a]), std,
                       [ra])
        # query string on a sub-request URL
        a, ra = ins(url=self.turl(T) + "?timeout=30")
        self.tolerated("sub-request URL with a query string", T, changeset_body([a]), std, [ra])
        # Host header or none, Content-Length present or absent
        a, ra = ins(headers=[("Host", "%s:%d" % (self.srv.host, self.srv.port))])
        b, rb = ins()
        self.tolerated("sub-requests with and without Host", T, changeset_body([a, b]), std,
                       [ra, rb])
        a, ra = ins()
        a["headers"].append(("Content-Length", str(len(body_text(a["body"]).encode()))))
        b, rb = ins()
        self.tolerated("sub-requests with and without Content-Length", T,
                       changeset_body([a, b]), std, [ra, rb])
        # 216 / 217: Content-ID in either place, or both (MIME header wins)
        a, ra = ins(cid=5)
        b, rb = ins(mime_cid=6)
        c, rc = ins()
        self.tolerated("216/217: Content-ID as request header, MIME header, or none", T,
                       changeset_body([a, b, c]), std, [ra, rb, rc], ["5", "6", None])
        a, ra = ins(cid=7, mime_cid=7)
        self.tolerated("Content-ID in both places is echoed once", T, changeset_body([a]),
                       std, [ra], ["7"])
        # MERGE and PATCH, If-Match forms (8.3)
        e1 = self.put(T, {"PartitionKey": "tol", "RowKey": "mp1", "A": 1})
        ops = [self.ent("MERGE", T, "tol", "mp1", {"B": 2}, if_match=e1),
               self.ent("PATCH", T, "tol", "mp2", {"C": 3})]
        r, ans, err = batch(self.http, changeset_body(ops), ct=std)
        tap.ok(ans is not None and [p.status for p in ans.parts] == [204, 204],
               "MERGE with ETag and PATCH upsert in one changeset", err)
        got = entities(self.http, T, "PartitionKey eq 'tol'")
        tap.eq((user_props(got.get(("tol", "mp1"), {})), user_props(got.get(("tol", "mp2"), {}))),
               ({"A": 1, "B": 2}, {"C": 3}), "MERGE merged, PATCH inserted")
        # A JSON string that contains the delimiter text is data (8.3 step 2)
        tricky = "--changeset_c1\r\nnot a delimiter --batch_b1--"
        o = op("POST", self.turl(T), {"PartitionKey": "tol", "RowKey": "tricky", "S": tricky}, nc)
        r, ans, err = batch(self.http, changeset_body([o]))
        tap.ok(ans is not None and ans.parts[0].status == 204,
               "delimiter text inside a JSON string is data", err)
        got = entities(self.http, T, "PartitionKey eq 'tol' and RowKey eq 'tricky'")
        tap.eq(got.get(("tol", "tricky"), {}).get("S"), tricky, "the string is stored intact")

    # -- 224 (other side), doc/protocol.md, Batch parser tolerance: the URL must name our account --------
    def test_foreign_urls(self):
        tap, T = self.tap, "BtForeign"
        self.table(T)
        self.put(T, {"PartitionKey": "p", "RowKey": "keep"})
        before = snapshot(self.http, T)
        cases = [
            ("path-style URL of another account",
             "http://%s:%d/otheraccount/%s" % (self.srv.host, self.srv.port, T)),
            ("host-style URL of another account",
             "http://otheraccount.table.localhost:%d/%s" % (self.srv.port, T)),
            ("secondary account URL",
             "http://%s:%d/%s-secondary/%s" % (self.srv.host, self.srv.port, ACCOUNT, T)),
        ]
        for what, url in cases:
            ops = [self.ins(T, "p", "ok1"),
                   op("POST", url, {"PartitionKey": "p", "RowKey": "x"})]
            r, ans, err = batch(self.http, changeset_body(ops))
            self.expect_failure(what, ans, err, 400, "InvalidInput", 1)
            self.unchanged(what, T, before)

    # -- 226-232, 235, 236, 238: failures ----------------------------------------
    def test_failures(self):
        tap, T = self.tap, "BtFail"
        self.table(T)
        et = {}
        for rk in ("a", "b", "c"):
            et[rk] = self.put(T, {"PartitionKey": "p", "RowKey": rk, "V": rk})
        before = snapshot(self.http, T)
        nc = [("Prefer", "return-no-content")]

        # 226 / 227 / 228: op 2 of 3 fails
        ops = [self.ins(T, "p", "new1", headers=nc), self.ins(T, "p", "a", cid=1),
               self.ins(T, "p", "new2", headers=nc)]
        r, ans, err = batch(self.http, changeset_body(ops))
        p = self.expect_failure("226/228: insert of an existing entity as op 2 of 3", ans, err,
                                409, "EntityAlreadyExists", 1)
        if p:
            tap.eq(p.headers, [("Content-ID", "1"), ("X-Content-Type-Options", "nosniff"),
                               ("Cache-Control", "no-cache"), ("DataServiceVersion", "3.0;"),
                               ("Content-Type", CT_MIN)],
                   "235/236: failure part headers (Content-ID, no Preference-Applied, JSON "
                   "minimalmetadata)")
            m = MSG_RE.match(json.loads(p.body)["odata.error"]["message"]["value"])
            tap.ok(m and m.group(3) == r.h("x-ms-request-id") and TIME_RE.match(m.group(4)),
                   "error message ends with the batch's RequestId and a Time line", p.body)
            tap.ok(p.body.startswith(b'{"odata.error":{"code":"EntityAlreadyExists","message":'
                                     b'{"lang":"en-US","value":"1:The specified entity already'
                                     b' exists.\\nRequestId:'),
                   "failure body is the JSON error", p.body)
            tap.ok(r.body.endswith(("}}}\r\n--%s--\r\n--%s--\r\n" % (ans.cb, ans.bb)).encode()),
                   "failure part body ends with a single CRLF before the closing delimiter",
                   r.body[-200:])
        self.unchanged("227: failed batch", T, before)

        # 236: Preference-Applied only when the failing op carried Prefer
        ops = [self.ins(T, "p", "b", headers=nc)]
        r, ans, err = batch(self.http, changeset_body(ops))
        p = self.expect_failure("failing insert with Prefer", ans, err, 409,
                                "EntityAlreadyExists", 0)
        if p:
            tap.eq(p.headers, [("X-Content-Type-Options", "nosniff"),
                               ("Cache-Control", "no-cache"),
                               ("Preference-Applied", "return-no-content"),
                               ("DataServiceVersion", "3.0;"), ("Content-Type", CT_MIN)],
                   "236: failure part carries Preference-Applied when the op had Prefer")

        # 235: the error's format follows the part's Accept, else the batch's
        ops = [self.ins(T, "p", "c", headers=[("Accept", h.ACCEPT["nometadata"])])]
        r, ans, err = batch(self.http, changeset_body(ops))
        p = self.expect_failure("failing insert with Accept nometadata", ans, err, 409,
                                "EntityAlreadyExists", 0)
        if p:
            tap.eq(p.h("Content-Type"), CT_NO, "235: error part Content-Type follows its Accept")
        ops = [self.ins(T, "p", "c")]
        r, ans, err = batch(self.http, changeset_body(ops),
                            headers=[("Accept", h.ACCEPT["fullmetadata"])])
        p = self.expect_failure("failing insert without Accept, batch Accept fullmetadata",
                                ans, err, 409, "EntityAlreadyExists", 0)
        if p:
            tap.eq(p.h("Content-Type"), CT_FULL, "235: falls back to the batch's Accept")
        r, ans, err = batch(self.http, changeset_body(ops), headers=[("Accept", None)])
        p = self.expect_failure("failing insert, no Accept anywhere", ans, err, 409,
                                "EntityAlreadyExists", 0)
        if p:
            tap.eq(p.h("Content-Type"), CT_MIN, "235: then minimalmetadata")
        self.unchanged("after the Accept cases", T, before)

        # 238: stale ETags; If-Match on a missing entity
        stale = h.etag_for("2001-01-01T00:00:00.1234567Z")
        for i, (method, body) in enumerate((("PUT", {"V": "x"}), ("MERGE", {"V": "x"}),
                                            ("PATCH", {"V": "x"}), ("DELETE", None))):
            ops = [self.ins(T, "p", "n%d" % i, headers=nc),
                   self.ent("PUT", T, "p", "b", {"V": "B"}, if_match=et["b"]),
                   self.ent(method, T, "p", "a", body, if_match=stale)]
            r, ans, err = batch(self.http, changeset_body(ops))
            self.expect_failure("238: %s with a stale ETag as op 3" % method, ans, err, 412,
                                "UpdateConditionNotSatisfied", 2)
            self.unchanged("238: %s stale ETag" % method, T, before)
            ops = [self.ent(method, T, "p", "missing", body, if_match="*")]
            r, ans, err = batch(self.http, changeset_body(ops))
            self.expect_failure("%s If-Match * of a missing entity" % method, ans, err, 404,
                                "ResourceNotFound", 0)
            ops = [self.ent(method, T, "p", "missing", body, if_match=et["a"])]
            r, ans, err = batch(self.http, changeset_body(ops))
            self.expect_failure("%s If-Match ETag of a missing entity" % method, ans, err, 404,
                                "ResourceNotFound", 0)
        ops = [self.ent("DELETE", T, "p", "missing")]
        r, ans, err = batch(self.http, changeset_body(ops))
        self.expect_failure("DELETE without If-Match of a missing entity (means *)", ans, err,
                            404, "ResourceNotFound", 0)
        self.unchanged("after the ETag cases", T, before)

        # 229: missing table
        ops = [self.ins("NoSuchTable", "p", "x"), self.ins("NoSuchTable", "p", "y")]
        r, ans, err = batch(self.http, changeset_body(ops))
        self.expect_failure("229: batch against a missing table", ans, err, 404,
                            "TableNotFound", 0)
        ops = [self.ins(T, "p", "x1"), self.ins("NoSuchTable", "p", "y")]
        r, ans, err = batch(self.http, changeset_body(ops))
        self.expect_failure("missing table as op 2", ans, err, 404, "TableNotFound", 1)
        self.unchanged("229: missing table", T, before)

        # 230: two partitions (first offending index)
        ops = [self.ins(T, "p", "x1"), self.ent("MERGE", T, "p", "x2", {"A": 1}),
               self.ins(T, "q", "x3"), self.ins(T, "r", "x4")]
        r, ans, err = batch(self.http, changeset_body(ops))
        self.expect_failure("230: two PartitionKeys", ans, err, 400,
                            "CommandsInBatchActOnDifferentPartitions", 2)
        ops = [self.ent("DELETE", T, "p", "a", if_match="*"),
               self.ent("DELETE", T, "q", "a", if_match="*")]
        r, ans, err = batch(self.http, changeset_body(ops))
        self.expect_failure("230: two PartitionKeys in URL keys (deletes)", ans, err, 400,
                            "CommandsInBatchActOnDifferentPartitions", 1)
        self.unchanged("230: two partitions", T, before)

        # 231 / 232: the same entity twice
        for what, o in (("insert", self.ins(T, "p", "new1")),
                        ("merge", self.ent("MERGE", T, "p", "new1", {"A": 1})),
                        ("delete", self.ent("DELETE", T, "p", "new1", if_match="*"))):
            ops = [self.ins(T, "p", "new1"), self.ins(T, "p", "new2"), self.ins(T, "p", "new3"),
                   o]
            r, ans, err = batch(self.http, changeset_body(ops))
            self.expect_failure("231: same RowKey again as op 4 (%s)" % what, ans, err, 400,
                                "InvalidDuplicateRow", 3)
        old = h.Http(self.srv, version="2015-12-11")
        ops = [self.ins(T, "p", "new1"), self.ent("PUT", T, "p", "new1", {"A": 1})]
        r, ans, err = batch(old, changeset_body(ops))
        p = self.expect_failure("232: same entity twice, x-ms-version 2015-12-11", ans, err, 400,
                                "InvalidInput", 1)
        tap.eq(r.h("x-ms-version"), "2015-12-11", "232: the batch answer echoes the version")
        ops = [self.ins(T, "p", "new1"), self.ent("PUT", T, "p", "new1", {"A": 1})]
        r, ans, err = batch(h.Http(self.srv, version="2016-05-31"), changeset_body(ops))
        self.expect_failure("same entity twice, x-ms-version 2016-05-31", ans, err, 400,
                            "InvalidDuplicateRow", 1)
        self.unchanged("231/232: duplicate rows", T, before)

        # all tables named must be the same (doc/protocol.md, Batch limits)
        self.table("BtFail2")
        ops = [self.ins(T, "p", "x1"), self.ins("BtFail2", "p", "x2")]
        r, ans, err = batch(self.http, changeset_body(ops))
        self.expect_failure("two tables in one changeset", ans, err, 400, "InvalidInput", 1)
        self.unchanged("two tables", T, before)
        tap.eq(entities(self.http, "BtFail2"), {}, "two tables: the other table is empty too")

        # the first failing operation in order is the one reported
        ops = [self.ins(T, "p", "x1"), self.ins(T, "p", "b"), self.ins(T, "q", "x3"),
               self.ins(T, "p", "x1")]
        r, ans, err = batch(self.http, changeset_body(ops))
        self.expect_failure("several faults: the first in order is reported", ans, err, 409,
                            "EntityAlreadyExists", 1)
        self.unchanged("several faults", T, before)

    # -- every operation passes the single-operation validation ------------------
    def test_op_validation(self):
        """A bad operation inside a batch fails with the status, code and
        message a single request gets, prefixed with its index."""
        tap, T = self.tap, "BtValid"
        self.table(T)
        self.put(T, {"PartitionKey": "p", "RowKey": "exists", "V": 1})
        before = snapshot(self.http, T)
        big = "x" * (32 * 1024 + 1)
        cases = [
            ("malformed JSON", "POST", None, '{"PartitionKey":"p","RowKey":"j1",', None),
            ("JSON array body", "POST", None, '[1,2]', None),
            ("insert without RowKey", "POST", None, {"PartitionKey": "p"}, None),
            ("RowKey with a slash", "POST", None, {"PartitionKey": "p", "RowKey": "a/b"}, None),
            ("RowKey too long", "POST", None, {"PartitionKey": "p", "RowKey": "r" * 1025},
             None),
            ("string property too large", "POST", None,
             {"PartitionKey": "p", "RowKey": "big", "S": big}, None),
            ("invalid property name", "POST", None,
             {"PartitionKey": "p", "RowKey": "pn", "bad name": 1}, None),
            ("bad Edm.Int64 value", "POST", None,
             {"PartitionKey": "p", "RowKey": "i64", "N": "12x", "N@odata.type": "Edm.Int64"},
             None),
            ("unknown Edm type", "POST", None,
             {"PartitionKey": "p", "RowKey": "ty", "N": "1", "N@odata.type": "Edm.Foo"}, None),
            ("too many properties", "POST", None,
             dict([("PartitionKey", "p"), ("RowKey", "many")] +
                  [("P%d" % i, i) for i in range(253)]), None),
            ("malformed If-Match", "PUT", "exists", {"V": 2}, "not-an-etag"),
            ("If-None-Match on a write", "MERGE", "exists", {"V": 2}, None),
            ("URL key with a forbidden character", "PUT", "a#b", {"V": 2}, "*"),
        ]
        for what, method, rk, body, if_match in cases:
            hdrs = [("If-Match", if_match)] if if_match is not None else []
            if what.startswith("If-None-Match"):
                hdrs = [("If-None-Match", "*")]
            if method == "POST":
                single = self.http.request("POST", "/" + T, body=body_text(body),
                                           headers=hdrs)
                o = op("POST", self.turl(T), body, hdrs)
            else:
                path = "/%s(PartitionKey='p',RowKey='%s')" % (T, h.quote_key(rk))
                single = self.http.request(method, path, body=body_text(body), headers=hdrs)
                o = op(method, self.prefix + path, body, hdrs)
            scode, smsg = single.error()
            smsg = (smsg or "").split("\n")[0]
            tap.ok(single.status >= 400, "%s: the single request fails (%d %s)"
                   % (what, single.status, scode))
            ops = [self.ins(T, "p", "ok1"), self.ins(T, "p", "ok2"), o]
            r, ans, err = batch(self.http, changeset_body(ops))
            self.expect_failure("%s in a batch" % what, ans, err, single.status, scode, 2, smsg)
            self.unchanged(what, T, before)

    # -- issue 14 points 1 and 4: key characters and weak ETags in a batch ---------
    def test_keys_and_etags(self):
        """Forbidden key characters in an operation's body: 400
        OutOfRangeInput; in its URL: 400 InvalidInput "Bad Request - Error
        in query syntax." (the legacy .NET SDK's InsertOrReplace of a RowKey
        with '/', azure-storage-net#386); a weak ETag that is not current:
        412; a strong one: 400. Each index-prefixed, nothing written."""
        tap, T = self.tap, "BtKeyChars"
        self.table(T)
        et = self.put(T, {"PartitionKey": "p", "RowKey": "e", "V": 1})
        before = snapshot(self.http, T)
        # the message names the key and its value (test_range_messages.py)
        out_of_range = "The '%s' parameter of value '%s' is out of range."
        query_syntax = "Bad Request - Error in query syntax."
        for ch, why in (("/", "/"), ("\\", "\\"), ("#", "#"), ("?", "?"), ("\x01", "U+0001"),
                        ("\x7f", "U+007F"), ("\x9f", "U+009F")):
            ops = [self.ins(T, "p", "ok1"), self.ins(T, "p", "a%sb" % ch)]
            r, ans, err = batch(self.http, changeset_body(ops))
            p = self.expect_failure("insert of a RowKey with %s as op 1" % why, ans, err, 400,
                                    "OutOfRangeInput", 1,
                                    out_of_range % ("RowKey", "a%sb" % ch))
            if p and why == "/":
                tap.eq(p.h("Content-Type"), CT_MIN, "OutOfRangeInput part: JSON error body")
            ops = [self.ins(T, "p", "ok1"), op("POST", self.turl(T),
                                               {"PartitionKey": "p%s" % ch, "RowKey": "r"})]
            r, ans, err = batch(self.http, changeset_body(ops))
            self.expect_failure("insert of a PartitionKey with %s as op 1" % why, ans, err, 400,
                                "OutOfRangeInput", 1, out_of_range % ("PartitionKey", "p%s" % ch))
        for method in ("PUT", "MERGE"):
            o = op(method, self.eurl(T, "p", "u1"), {"PartitionKey": "p", "RowKey": "u1#"})
            r, ans, err = batch(self.http, changeset_body([o]))
            self.expect_failure("%s upsert with a body RowKey containing #" % method, ans, err,
                                400, "OutOfRangeInput", 0, out_of_range % ("RowKey", "u1#"))
        # the URL: raw '/' as the legacy .NET SDK writes it, and percent-encoded
        for what, url in (
                ("raw / in the URL RowKey", "%s/%s(PartitionKey='p',RowKey='a/b')"
                 % (self.prefix, T)),
                ("%2F in the URL RowKey", "%s/%s(PartitionKey='p',RowKey='a%%2Fb')"
                 % (self.prefix, T)),
                ("%23 in the URL PartitionKey", "%s/%s(PartitionKey='p%%23',RowKey='r')"
                 % (self.prefix, T))):
            for method, hdrs in (("PUT", []), ("MERGE", []), ("DELETE", [("If-Match", "*")])):
                body = None if method == "DELETE" else {"PartitionKey": "p", "RowKey": "a/b"}
                ops = [self.ins(T, "p", "ok1"), op(method, url, body, hdrs)]
                r, ans, err = batch(self.http, changeset_body(ops))
                self.expect_failure("%s with %s" % (method, what), ans, err, 400,
                                    "InvalidInput", 1, query_syntax)
        self.unchanged("forbidden key characters", T, before)
        # If-Match: weak ETags that are not current -> 412, others -> 400
        for method, body in (("PUT", {"V": 2}), ("MERGE", {"V": 2}), ("PATCH", {"V": 2}),
                             ("DELETE", None)):
            for stale in ('W/"wrong"', 'w/"wrong"', h.etag_for("2001-01-01T00:00:00Z")):
                ops = [self.ins(T, "p", "n1"), self.ent(method, T, "p", "e", body,
                                                        if_match=stale)]
                r, ans, err = batch(self.http, changeset_body(ops))
                self.expect_failure("%s If-Match %s" % (method, stale), ans, err, 412,
                                    "UpdateConditionNotSatisfied", 1)
            for bad in ('"x"', "not-an-etag", "%s, %s" % (et, et)):
                ops = [self.ins(T, "p", "n1"), self.ent(method, T, "p", "e", body,
                                                        if_match=bad)]
                r, ans, err = batch(self.http, changeset_body(ops))
                self.expect_failure("%s If-Match %s" % (method, bad), ans, err, 400,
                                    "InvalidInput", 1, "One of the request inputs is not valid.")
        self.unchanged("If-Match cases", T, before)
        ops = [self.ent("MERGE", T, "p", "e", {"V": 3}, if_match=et)]
        r, ans, err = batch(self.http, changeset_body(ops))
        tap.ok(ans is not None and [p.status for p in ans.parts] == [204],
               "the current ETag still matches in a batch", err)

    # -- 233, 234: limits -----------------------------------------------------------
    def test_limits(self):
        tap, T = self.tap, "BtLimits"
        self.table(T)
        nc = [("Prefer", "return-no-content")]
        ops = [self.ins(T, "p", "r%03d" % i, {"I": i}, headers=nc) for i in range(100)]
        r, ans, err = batch(self.http, changeset_body(ops))
        tap.ok(ans is not None and [p.status for p in ans.parts] == [204] * 100,
               "233: 100 operations succeed", err)
        tap.eq(len(entities(self.http, T)), 100, "233: 100 entities written")
        before = snapshot(self.http, T)
        ops = [self.ins(T, "q", "r%03d" % i, {"I": i}, headers=nc) for i in range(101)]
        r, ans, err = batch(self.http, changeset_body(ops))
        self.expect_failure("233: 101 operations", ans, err, 400, "InvalidInput", 99, TOO_MANY)
        self.unchanged("233: 101 operations", T, before)
        ops = [self.ins(T, "q", "r%03d" % i, {"I": i}, headers=nc) for i in range(150)]
        r, ans, err = batch(self.http, changeset_body(ops))
        self.expect_failure("150 operations", ans, err, 400, "InvalidInput", 99, TOO_MANY)
        # 101 operations where an early one would fail anyway: the count wins
        ops = [self.ins(T, "p", "r000")] + \
            [self.ins(T, "q", "s%03d" % i, headers=nc) for i in range(100)]
        r, ans, err = batch(self.http, changeset_body(ops))
        self.expect_failure("101 operations, op 0 a duplicate insert", ans, err, 400,
                            "InvalidInput", 99, TOO_MANY)
        self.unchanged("101 operations", T, before)

        # 234: 4 MiB exactly is accepted, one byte more is not
        def sized(total, pk):
            ops = [self.ins(T, pk, "b%03d" % i, {"S": "y" * 20000, "U": "z" * 20000},
                            headers=nc) for i in range(100)]
            body = changeset_body(ops)
            pad = total - len(body.encode())
            if pad < 0:
                raise AssertionError("batch too big already: %d" % len(body))
            # pad with JSON whitespace inside the last entity
            last = '{"PartitionKey":"%s","RowKey":"b099"' % pk
            return body.replace(last, "{" + " " * pad + last[1:])

        body = sized(4 * MIB, "big1")
        tap.eq(len(body.encode()), 4 * MIB, "4 MiB batch body built")
        r, ans, err = batch(self.http, body)
        tap.ok(ans is not None and [p.status for p in ans.parts] == [204] * 100,
               "234: a batch body of exactly 4 MiB is accepted", err)
        before = snapshot(self.http, T)
        body = sized(4 * MIB + 1, "big2")
        tap.eq(len(body.encode()), 4 * MIB + 1, "4 MiB + 1 byte batch body built")
        r = self.http.request("POST", "/$batch", body=body.encode(),
                              content_type="multipart/mixed; boundary=batch_b1")
        tap.eq((r.status, r.error_code()), (413, "RequestBodyTooLarge"),
               "234: 4 MiB + 1 byte -> top-level 413 RequestBodyTooLarge")
        tap.eq(r.error()[1].split("\n")[0] if r.error()[1] else None,
               "The request body is too large and exceeds the maximum permissible limit.",
               "234: RequestBodyTooLarge message of the 4 MiB limit")
        tap.eq(r.h("Content-Type"), CT_MIN, "234: JSON error body")
        self.unchanged("234: 4 MiB + 1 byte", T, before)
        # the same body sent with chunked framing (no Content-Length)
        raw = self.http.build("POST", "/$batch", body=body.encode(),
                              content_type="multipart/mixed; boundary=batch_b1",
                              headers=[("Content-Length", None),
                                       ("Transfer-Encoding", "chunked")])
        head, _, payload = raw.partition(b"\r\n\r\n")
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(payload[i:i + 65536]), payload[i:i + 65536])
                          for i in range(0, len(payload), 65536)) + b"0\r\n\r\n"
        got, _ = h.raw_exchange(self.srv, head + b"\r\n\r\n" + chunks, timeout=10,
                                wait_close=False)
        rr = h.first_response(got)
        tap.ok(rr is not None and (rr.status, rr.error_code()) == (413, "RequestBodyTooLarge"),
               "234: 4 MiB + 1 byte chunked -> 413 RequestBodyTooLarge",
               rr if rr is not None else got[:300])
        self.unchanged("234: chunked 4 MiB + 1 byte", T, before)

    # -- failures at index 0, in the middle and at the end of 100 operations -------
    def test_failure_positions(self):
        tap, T = self.tap, "BtPos"
        self.table(T)
        et = {}
        for i in range(100):
            et[i] = self.put(T, {"PartitionKey": "p", "RowKey": "e%03d" % i, "V": i})
        before = snapshot(self.http, T)
        stale = h.etag_for("2001-01-01T00:00:00Z")

        def mixed(i):
            """A good operation on entity i (existing) or a new row."""
            k = i % 6
            rk = "e%03d" % i
            if k == 0:
                return self.ins(T, "p", "n%03d" % i, {"V": -i})
            if k == 1:
                return self.ent("PUT", T, "p", rk, {"W": i}, if_match=et[i])
            if k == 2:
                return self.ent("MERGE", T, "p", rk, {"W": i}, if_match="*")
            if k == 3:
                return self.ent("DELETE", T, "p", rk, if_match=et[i])
            if k == 4:
                return self.ent("PUT", T, "p", rk, {"W": i})
            return self.ent("PATCH", T, "p", rk, {"W": i})

        faults = [
            ("insert of an existing entity", 409, "EntityAlreadyExists",
             lambda i: self.ins(T, "p", "e%03d" % i)),
            ("update with a stale ETag", 412, "UpdateConditionNotSatisfied",
             lambda i: self.ent("PUT", T, "p", "e%03d" % i, {"X": 1}, if_match=stale)),
            ("delete of a missing entity", 404, "ResourceNotFound",
             lambda i: self.ent("DELETE", T, "p", "gone%03d" % i, if_match="*")),
            ("other partition", 400, "CommandsInBatchActOnDifferentPartitions",
             lambda i: self.ins(T, "other", "x")),
            ("duplicate row", 400, "InvalidDuplicateRow", None),
        ]
        for what, status, code, make in faults:
            for idx in (0, 50, 99):
                if code in ("CommandsInBatchActOnDifferentPartitions",
                            "InvalidDuplicateRow") and idx == 0:
                    continue   # op 0 fixes the partition and cannot repeat a row
                ops = [mixed(i) for i in range(100)]
                if make is not None:
                    ops[idx] = make(idx)
                else:
                    # op idx names the row of the operation before it
                    j = idx - 1
                    ops[idx] = self.ent("MERGE", T, "p", "e%03d" % j if j % 6 else
                                        "n%03d" % j, {"Y": 1})
                r, ans, err = batch(self.http, changeset_body(ops))
                self.expect_failure("%s at index %d of 100" % (what, idx), ans, err, status,
                                    code, idx)
                self.unchanged("%s at index %d" % (what, idx), T, before)
        # and the same 100 operations without a fault all apply
        ops = [mixed(i) for i in range(100)]
        r, ans, err = batch(self.http, changeset_body(ops))
        tap.ok(ans is not None and len(ans.parts) == 100 and
               all(p.status in (201, 204) for p in ans.parts),
               "100 mixed operations (insert, update, merge, delete, upserts) succeed", err)
        got = entities(self.http, T)
        want = {}
        for i in range(100):
            k, rk = i % 6, "e%03d" % i
            if k == 0:
                want[rk] = {"V": i}
                want["n%03d" % i] = {"V": -i}
            elif k in (1, 4):
                want[rk] = {"W": i}
            elif k in (2, 5):
                want[rk] = {"V": i, "W": i}
        tap.eq({rk: user_props(e) for (pk, rk), e in got.items()}, want,
               "100 mixed operations: the table holds exactly the expected entities")

    # -- 239 / doc/protocol.md, Query in a batch: a batch holding one query --------------------------------
    def test_query(self):
        tap, T = self.tap, "BtQuery"
        self.table(T)
        for rk in ("r1", "r2", "r3"):
            self.put(T, {"PartitionKey": "p1", "RowKey": rk, "V": rk, "N@odata.type": "Edm.Int64",
                         "N": "7"})
        before = snapshot(self.http, T)
        for level in ("minimalmetadata", "nometadata", "fullmetadata"):
            direct = self.http.request("GET", "/%s(PartitionKey='p1',RowKey='r2')" % T,
                                       headers={"Accept": h.ACCEPT[level]})
            o = self.ent("GET", T, "p1", "r2", headers=[("Accept", h.ACCEPT[level])])
            r, ans, err = batch(self.http, query_body(o),
                                ct="multipart/mixed; boundary=batch_q1")
            if not tap.ok(ans is not None and ans.kind == "query",
                          "239: point query in a batch (%s) -> 202 with one part directly "
                          "under the batch boundary" % level, err):
                continue
            p = ans.parts[0]
            tap.eq(p.mime, b"Content-Type: application/http\r\nContent-Transfer-Encoding: binary",
                   "239: query part MIME headers")
            tap.eq((p.status_line, p.headers),
                   ("HTTP/1.1 200 OK", [("X-Content-Type-Options", "nosniff"),
                                        ("Cache-Control", "no-cache"),
                                        ("DataServiceVersion", "3.0;"),
                                        ("Content-Type", h.JSON_CT % level),
                                        ("ETag", direct.h("ETag"))]),
                   "239: 200 part with the single-query headers (%s)" % level)
            tap.eq(p.body, direct.body, "239: the part's entity JSON is what Get Entity "
                   "returns (%s)" % level)
            tap.ok(r.body == ("--%s\r\n" % ans.bb).encode() + p.raw +
                   ("\r\n--%s--\r\n" % ans.bb).encode(),
                   "239: the answer is exactly one part and the close delimiter", r.body[:400])
        # relative URL, LF-only
        o = op("GET", "%s(PartitionKey='p1',RowKey='r1')" % T)
        r, ans, err = batch(self.http, query_body(o, eol="\n"),
                            ct="multipart/mixed; boundary=batch_q1")
        tap.ok(ans is not None and ans.kind == "query" and ans.parts[0].status == 200 and
               json.loads(ans.parts[0].body)["RowKey"] == "r1",
               "point query with a relative URL and LF line endings", err)
        # missing entity
        o = self.ent("GET", T, "p1", "nope", cid=3)
        r, ans, err = batch(self.http, query_body(o), ct="multipart/mixed; boundary=batch_q1")
        if tap.ok(ans is not None and ans.kind == "query", "query of a missing entity -> 202",
                  err):
            p = ans.parts[0]
            tap.eq((p.status_line,) + p.error()[:3],
                   ("HTTP/1.1 404 Not Found", "ResourceNotFound", 0,
                    MESSAGES["ResourceNotFound"]),
                   "239: missing entity -> 404 part, 0:-prefixed ResourceNotFound")
            tap.eq(p.h("Content-ID"), "3", "query part echoes its Content-ID")
        # missing table
        o = self.ent("GET", "NoSuchTable", "p1", "r1")
        r, ans, err = batch(self.http, query_body(o), ct="multipart/mixed; boundary=batch_q1")
        tap.ok(ans is not None and ans.parts[0].error()[:2] == ("TableNotFound", 0) and
               ans.parts[0].status == 404, "query of a missing table -> 404 part TableNotFound",
               err or ans.parts[0])
        # filter query of the table
        path = "/%s()?$filter=%s" % (T, h.pct_encode("RowKey ge 'r2'"))
        direct = self.http.request("GET", path)
        o = op("GET", self.prefix + path, headers=[("Accept", h.ACCEPT["minimalmetadata"])])
        r, ans, err = batch(self.http, query_body(o), ct="multipart/mixed; boundary=batch_q1")
        if tap.ok(ans is not None and ans.kind == "query", "filter query in a batch -> 202", err):
            p = ans.parts[0]
            tap.eq((p.status, p.h("Content-Type")), (200, CT_MIN), "filter query part: 200 JSON")
            tap.eq(p.body, direct.body, "filter query part body equals the direct query's")
            tap.eq([e["RowKey"] for e in json.loads(p.body).get("value", [])], ["r2", "r3"],
                   "filter query part holds the matching entities")
        # the query batch wrote nothing
        self.unchanged("query batches", T, before)

    # -- 240: malformed envelopes --------------------------------------------------
    def test_malformed(self):
        tap, T = self.tap, "BtBad"
        self.table(T)
        self.put(T, {"PartitionKey": "p", "RowKey": "keep"})
        before = snapshot(self.http, T)
        good = [self.ins(T, "p", "x1"), self.ins(T, "p", "x2")]
        cs = changeset_body(good)
        std = "multipart/mixed; boundary=batch_b1"
        part = part_text(self.ins(T, "p", "x3"))
        get = part_text(self.ent("GET", T, "p", "keep"))
        two_cs = ("--batch_b1\r\nContent-Type: multipart/mixed; boundary=cs1\r\n\r\n"
                  "--cs1\r\n" + part + "--cs1--\r\n"
                  "--batch_b1\r\nContent-Type: multipart/mixed; boundary=cs2\r\n\r\n"
                  "--cs2\r\n" + part_text(self.ins(T, "p", "x4")) + "--cs2--\r\n--batch_b1--\r\n")
        cs_and_query = ("--batch_b1\r\nContent-Type: multipart/mixed; boundary=cs1\r\n\r\n"
                        "--cs1\r\n" + part + "--cs1--\r\n--batch_b1\r\n" + get +
                        "--batch_b1--\r\n")
        get_in_cs = ("--batch_b1\r\nContent-Type: multipart/mixed; boundary=cs1\r\n\r\n"
                     "--cs1\r\n" + part + "--cs1\r\n" + get + "--cs1--\r\n--batch_b1--\r\n")
        empty_cs = ("--batch_b1\r\nContent-Type: multipart/mixed; boundary=cs1\r\n\r\n"
                    "--cs1--\r\n--batch_b1--\r\n")
        write_outside = "--batch_b1\r\n" + part + "--batch_b1--\r\n"
        two_queries = "--batch_b1\r\n" + get + "--batch_b1\r\n" + get + "--batch_b1--\r\n"
        nested = ("--batch_b1\r\nContent-Type: multipart/mixed; boundary=cs1\r\n\r\n"
                  "--cs1\r\nContent-Type: multipart/mixed; boundary=cs2\r\n\r\n--cs2\r\n" + part +
                  "--cs2--\r\n--cs1--\r\n--batch_b1--\r\n")
        not_http = cs.replace("application/http", "text/plain", 1)
        http10 = cs.replace(" HTTP/1.1\r\n", " HTTP/1.0\r\n", 1)
        no_cs_boundary = cs.replace("multipart/mixed; boundary=changeset_c1",
                                    "multipart/mixed", 1)
        cases = [
            ("Content-Type without a boundary", cs, "multipart/mixed"),
            ("Content-Type application/json", cs, "application/json"),
            ("Content-Type multipart/related", cs, "multipart/related; boundary=batch_b1"),
            ("no Content-Type", cs, None),
            ("boundary that the body does not use", cs, "multipart/mixed; boundary=other"),
            ("empty body", "", std),
            ("garbage body", "hello world\r\n", std),
            ("two changesets", two_cs, std),
            ("a changeset and a query", cs_and_query, std),
            ("GET inside a changeset", get_in_cs, std),
            ("empty changeset", empty_cs, std),
            ("a write outside a changeset", write_outside, std),
            ("two queries", two_queries, std),
            ("nested changeset", nested, std),
            ("changeset part that is not application/http", not_http, std),
            ("sub-request line with HTTP/1.0", http10, std),
            ("changeset without its boundary", no_cs_boundary, std),
            ("only the close delimiter", "--batch_b1--\r\n", std),
        ]
        for what, body, ct in cases:
            hdrs = [("Content-Type", None)] if ct is None else None
            r = self.http.request("POST", "/$batch", body=body.encode(), content_type=ct,
                                  headers=hdrs)
            tap.eq((r.status, r.error_code(), r.h("Content-Type")),
                   (400, "InvalidInput", CT_MIN),
                   "240: %s -> top-level 400 InvalidInput" % what)
            self.unchanged("240: %s" % what, T, before)
        r, ans, err = batch(self.http, cs)
        tap.ok(ans is not None and [p.status for p in ans.parts] == [201, 201],
               "after the malformed batches a good one still works", err)

    # -- 241: readers never see part of a batch ---------------------------------------
    def test_concurrent_readers(self):
        tap, T = self.tap, "BtIso"
        self.table(T)
        nc = [("Prefer", "return-no-content")]
        r, ans, err = batch(self.http, changeset_body(
            [self.ins(T, "c", "r%03d" % i, {"Gen": 0}, headers=nc) for i in range(100)]))
        tap.ok(ans is not None and len(ans.parts) == 100, "241: 100 entities to update", err)
        stop = threading.Event()
        bad = []
        reads = [0, 0]
        during = [0]
        writing = threading.Event()

        def reader():
            http = h.Http(self.srv)
            while not stop.is_set():
                w0 = writing.is_set()
                g = entities(http, T, "PartitionKey eq 'c'")
                gens = {e["Gen"] for e in g.values()}
                stamps = {e["Timestamp"] for e in g.values()}
                if len(g) != 100 or len(gens) != 1 or len(stamps) != 1:
                    bad.append(("c", len(g), sorted(gens)[:5], len(stamps)))
                d = entities(http, T, "PartitionKey eq 'd'")
                if len(d) % 100:
                    bad.append(("d", len(d)))
                reads[0] += 1
                reads[1] += len(g) + len(d)
                if w0 and writing.is_set():
                    during[0] += 1

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        writing.set()
        ok_batches = 0
        for k in range(1, 31):
            ops = [self.ent("MERGE", T, "c", "r%03d" % i, {"Gen": k}, if_match="*")
                   for i in range(100)]
            r, ans, err = batch(self.http, changeset_body(ops))
            ok_batches += ans is not None and len(ans.parts) == 100
            ops = [self.ins(T, "d", "k%02d-%03d" % (k, i), {"K": k}, headers=nc)
                   for i in range(100)]
            r, ans, err = batch(self.http, changeset_body(ops))
            ok_batches += ans is not None and len(ans.parts) == 100
            # a failing batch in between must not show either
            ops = [self.ins(T, "d", "z%03d" % i, headers=nc) for i in range(99)] + \
                [self.ins(T, "d", "k01-000")]
            batch(self.http, changeset_body(ops))
        writing.clear()
        # let the reader finish at least one more round after the writes
        n0 = reads[0]
        for _ in range(200):
            if reads[0] > n0 + 1:
                break
            time.sleep(0.05)
        stop.set()
        th.join(30)
        tap.eq(ok_batches, 60, "241: 60 batches of 100 applied while a reader queried")
        tap.ok(not bad, "241: no query saw part of a batch (%d queries, %d during writes)"
               % (reads[0], during[0]), bad[:10])
        g = entities(self.http, T, "PartitionKey eq 'c'")
        tap.eq({e["Gen"] for e in g.values()}, {30}, "241: the last batch's values are visible")
        tap.eq(len(entities(self.http, T, "PartitionKey eq 'd'")), 3000,
               "241: 3000 inserted entities, none from the failing batches")

    # -- the Python SDK (azure-data-tables submit_transaction) ---------------------------
    def sdk_fails(self, what, tc, ops, exc_type, status, code, index=None):
        """submit_transaction(ops) must raise exc_type with status, code
        (and index for a TableTransactionError)."""
        try:
            tc.submit_transaction(ops)
        except exc_type as e:
            c = getattr(e, "error_code", None)
            c = getattr(c, "value", c)
            got = (e.status_code, c)
            want = (status, code)
            if index is not None:
                got += (getattr(e, "index", None),)
                want += (index,)
            self.tap.eq(got, want, what)
            return e
        except Exception as e:  # noqa: BLE001
            self.tap.ok(False, what, "raised %s: %s" % (type(e).__name__, str(e)[:800]))
            return None
        self.tap.ok(False, what, "no exception raised")
        return None

    def test_python_sdk(self):
        tap = self.tap
        if not tap.ok(IMPORT_ERROR is None, "azure-data-tables imports", str(IMPORT_ERROR)):
            return
        T = "BtSdkPy"
        conn = self.srv.conn_str_printed or self.srv.conn_str()
        svc = TableServiceClient.from_connection_string(conn, **CLIENT_KW)
        svc.create_table(T)
        tc = TableClient.from_connection_string(conn, T, **CLIENT_KW)
        meta = {}
        for i in range(60):
            meta[i] = tc.create_entity({"PartitionKey": "p", "RowKey": "e%03d" % i, "V": i})
        before = snapshot(self.http, T)

        # 100 mixed operations
        ops = []
        want = {}
        untouched = set()
        for i in range(100):
            k, rk = i % 10, "e%03d" % i
            if i >= 60:
                rk = "n%03d" % i
                ops.append(("create", {"PartitionKey": "p", "RowKey": rk, "N": i}) if i % 2 else
                           ("upsert", {"PartitionKey": "p", "RowKey": rk, "N": i},
                            {"mode": UpdateMode.MERGE if i % 4 else UpdateMode.REPLACE}))
                want[rk] = {"N": i}
            elif k == 0:
                ops.append(("update", {"PartitionKey": "p", "RowKey": rk, "W": i},
                            {"mode": UpdateMode.MERGE, "etag": meta[i]["etag"],
                             "match_condition": MatchConditions.IfNotModified}))
                want[rk] = {"V": i, "W": i}
            elif k == 1:
                ops.append(("update", {"PartitionKey": "p", "RowKey": rk, "W": i},
                            {"mode": UpdateMode.REPLACE, "etag": meta[i]["etag"],
                             "match_condition": MatchConditions.IfNotModified}))
                want[rk] = {"W": i}
            elif k == 2:
                ops.append(("update", {"PartitionKey": "p", "RowKey": rk, "W": i},
                            {"mode": UpdateMode.REPLACE}))
                want[rk] = {"W": i}
            elif k == 3:
                ops.append(("update", {"PartitionKey": "p", "RowKey": rk, "W": i}))
                want[rk] = {"V": i, "W": i}
            elif k == 4:
                ops.append(("delete", {"PartitionKey": "p", "RowKey": rk},
                            {"etag": meta[i]["etag"],
                             "match_condition": MatchConditions.IfNotModified}))
            elif k == 5:
                ops.append(("delete", {"PartitionKey": "p", "RowKey": rk}))
            elif k == 6:
                ops.append(("upsert", {"PartitionKey": "p", "RowKey": rk, "W": i},
                            {"mode": UpdateMode.REPLACE}))
                want[rk] = {"W": i}
            elif k == 7:
                ops.append(("upsert", {"PartitionKey": "p", "RowKey": rk, "W": i},
                            {"mode": UpdateMode.MERGE}))
                want[rk] = {"V": i, "W": i}
            else:
                want[rk] = {"V": i}          # untouched by the batch
                untouched.add(rk)
                ops.append(("upsert", {"PartitionKey": "p", "RowKey": "u%03d" % i, "U": i}))
                want["u%03d" % i] = {"U": i}

        # failures at index 0, in the middle and at the end leave the table as it was
        for idx in (0, 57, 99):
            bad = list(ops)
            bad[idx] = ("create", {"PartitionKey": "p", "RowKey": "e%03d" % (idx % 60)})
            self.sdk_fails("python: create of an existing entity at index %d of 100" % idx, tc,
                           bad, TableTransactionError, 409, "EntityAlreadyExists", idx)
            self.unchanged("python: failure at index %d" % idx, T, before)
        bad = list(ops)
        bad[50] = ("update", {"PartitionKey": "p", "RowKey": "e050", "X": 1},
                   {"mode": UpdateMode.MERGE, "etag": h.etag_for("2001-01-01T00:00:00Z"),
                    "match_condition": MatchConditions.IfNotModified})
        self.sdk_fails("python: ETag conflict at index 50", tc, bad, TableTransactionError, 412,
                       "UpdateConditionNotSatisfied", 50)
        bad = list(ops)
        bad[98] = ("delete", {"PartitionKey": "p", "RowKey": "nope"})
        self.sdk_fails("python: delete of a missing entity at index 98", tc, bad,
                       TableTransactionError, 404, "ResourceNotFound", 98)
        bad = list(ops)
        bad[40] = ("upsert", {"PartitionKey": "p", "RowKey": "e003", "X": 1})
        self.sdk_fails("python: a RowKey twice (index 3 and 40)", tc, bad,
                       TableTransactionError, 400, "InvalidDuplicateRow", 40)
        bad = ops + [("create", {"PartitionKey": "p", "RowKey": "extra"})]
        self.sdk_fails("python: 101 operations", tc, bad, TableTransactionError, 400,
                       "InvalidInput", 99)
        bad = [("create", {"PartitionKey": "p", "RowKey": "big%03d" % i, "S": "s" * 21000,
                           "T": "t" * 21000}) for i in range(100)]
        self.sdk_fails("python: a batch body above 4 MiB", tc, bad, HttpResponseError, 413,
                       "RequestBodyTooLarge")
        self.unchanged("python: failing transactions", T, before)
        try:
            TableClient.from_connection_string(conn, "BtSdkMissing", **CLIENT_KW) \
                .submit_transaction([("create", {"PartitionKey": "p", "RowKey": "r"})])
            tap.ok(False, "python: transaction on a missing table fails")
        except HttpResponseError as e:
            c = getattr(e, "error_code", None)
            tap.eq((e.status_code, getattr(c, "value", c)), (404, "TableNotFound"),
                   "python: transaction on a missing table -> 404 TableNotFound")
        try:
            tc.submit_transaction([("create", {"PartitionKey": "p", "RowKey": "x1"}),
                                   ("create", {"PartitionKey": "q", "RowKey": "x2"})])
            tap.ok(False, "python: two partitions are refused")
        except ValueError:
            tap.ok(True, "python: the SDK refuses two partitions itself (raw HTTP covers the "
                   "server)")
        except HttpResponseError as e:
            c = getattr(e, "error_code", None)
            tap.eq((e.status_code, getattr(c, "value", c)),
                   (400, "CommandsInBatchActOnDifferentPartitions"),
                   "python: two partitions refused by the server with its error")
        except Exception as e:  # noqa: BLE001
            tap.ok(False, "python: two partitions refused with a known answer", repr(e))
        self.unchanged("python: rejected transactions", T, before)

        # the good 100
        try:
            res = tc.submit_transaction(ops)
        except Exception as e:  # noqa: BLE001
            tap.ok(False, "python: 100 mixed operations succeed", "%s: %s" % (type(e).__name__,
                                                                               str(e)[:1500]))
            return
        tap.eq(len(res), 100, "python: 100 mixed operations succeed, one result each")
        etags = {m.get("etag") for m in res if m.get("etag")}
        tap.ok(len(etags) == 1 and len([m for m in res if m.get("etag")]) == 88,
               "python: every non-delete result carries the batch's one ETag",
               (len(etags), [m for m in res][:5]))
        got = {e["RowKey"]: {k: v for k, v in e.items() if k not in ("PartitionKey", "RowKey")}
               for e in tc.list_entities()}
        tap.eq(got, want, "python: the table holds the expected entities after 100 mixed ops")
        stamps = {e.metadata["timestamp"] for e in tc.list_entities()
                  if e["RowKey"] not in untouched}
        tap.ok(len(stamps) == 1, "python: the written entities share one Timestamp",
               sorted(map(str, stamps))[:5])
        # ETags returned by the transaction work for the next one
        etag = etags.pop() if etags else None
        res = tc.submit_transaction([("update", {"PartitionKey": "p", "RowKey": "n060", "Z": 1},
                                      {"mode": UpdateMode.MERGE, "etag": etag,
                                       "match_condition": MatchConditions.IfNotModified})])
        tap.ok(len(res) == 1 and res[0].get("etag") not in (None, etag),
               "python: the ETag from a transaction result satisfies If-Match", res)
        tc.close()
        svc.close()

    # -- keys as written in URLs; table name casing ----------------------------------
    def test_keys_and_names(self):
        tap, T = self.tap, "BtKeys"
        self.table(T)
        pk, rk1, rk2 = "O'Neil \"A\"", "r 1 \u00fc", "r 2 \u20ac"
        single = self.http.insert(T, {"PartitionKey": pk, "RowKey": "single"})
        ops = [op("POST", self.turl(T), {"PartitionKey": pk, "RowKey": rk1, "V": 1}),
               self.ent("MERGE", T, pk, rk2, {"V": 2})]
        r, ans, err = batch(self.http, changeset_body(ops))
        if tap.ok(ans is not None and [p.status for p in ans.parts] == [201, 204],
                  "keys with quotes, spaces and non-ASCII (body and percent-encoded URL)", err):
            tap.eq(ans.parts[0].h("Location"),
                   single.h("Location").replace(h.quote_key("single"), h.quote_key(rk1)),
                   "Location encodes the keys like a single insert's")
        got = entities(self.http, T)
        tap.eq(sorted(got), sorted([(pk, "single"), (pk, rk1), (pk, rk2)]),
               "the decoded keys are stored")
        before = snapshot(self.http, T)
        # the same row written two ways: %41 is A
        ops = [self.ent("MERGE", T, "p", "A", {"V": 1}),
               op("MERGE", "%s/%s(PartitionKey='p',RowKey='%%41')" % (self.prefix, T), {"V": 2})]
        r, ans, err = batch(self.http, changeset_body(ops))
        self.expect_failure("the same RowKey percent-encoded differently", ans, err, 400,
                            "InvalidDuplicateRow", 1)
        # the same partition written two ways
        ops = [op("POST", self.turl(T), {"PartitionKey": "p q", "RowKey": "a"}),
               op("MERGE", "%s/%s(PartitionKey='p%%20q',RowKey='b')" % (self.prefix, T),
                  {"V": 2})]
        r, ans, err = batch(self.http, changeset_body(ops))
        tap.ok(ans is not None and [p.status for p in ans.parts] == [201, 204],
               "PartitionKey from the body and from a percent-encoded URL are the same group",
               err)
        before = snapshot(self.http, T)
        # RowKeys that differ only in case are different rows
        ops = [self.ins(T, "p", "case"), self.ins(T, "p", "CASE")]
        r, ans, err = batch(self.http, changeset_body(ops))
        tap.ok(ans is not None and [p.status for p in ans.parts] == [201, 201],
               "RowKeys differing in case are two rows", err)
        # table names are case-insensitive: two spellings are one table
        ops = [op("POST", self.turl(T.lower()), {"PartitionKey": "p", "RowKey": "lc"}),
               op("POST", self.turl(T.upper()), {"PartitionKey": "p", "RowKey": "uc"})]
        r, ans, err = batch(self.http, changeset_body(ops))
        tap.ok(ans is not None and [p.status for p in ans.parts] == [201, 201],
               "one table named in two casings is one table", err)
        got = entities(self.http, T, "PartitionKey eq 'p'")
        tap.ok(("p", "lc") in got and ("p", "uc") in got, "both rows are in the table",
               sorted(got))

    # -- SAS: every operation needs its own permission (doc/protocol.md, Batch execution) --
    def test_sas(self):
        tap = self.tap
        if IMPORT_ERROR is not None:
            tap.ok(False, "azure-data-tables imports", str(IMPORT_ERROR))
            return
        import datetime
        from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
        from azure.data.tables import TableSasPermissions, generate_table_sas
        T, U = "BtSas", "BtSasOther"
        self.table(T)
        self.table(U)
        self.put(T, {"PartitionKey": "p", "RowKey": "a"})
        cred = AzureNamedKeyCredential(ACCOUNT, h.DEV_KEY)
        exp = datetime.datetime.utcnow() + datetime.timedelta(hours=1)

        def client(table, **kw):
            sas = generate_table_sas(cred, table, expiry=exp, **kw)
            return TableClient(endpoint=self.srv.base, table_name=table,
                               credential=AzureSasCredential(sas), **CLIENT_KW), sas

        before = snapshot(self.http, T)
        add, _ = client(T, permission=TableSasPermissions(add=True))
        self.sdk_fails("SAS sp=a: insert then delete -> 403 at index 1", add,
                       [("create", {"PartitionKey": "p", "RowKey": "b"}),
                        ("delete", {"PartitionKey": "p", "RowKey": "a"})],
                       TableTransactionError, 403, "AuthorizationPermissionMismatch", 1)
        self.sdk_fails("SAS sp=a: an upsert needs a and u", add,
                       [("upsert", {"PartitionKey": "p", "RowKey": "c"})],
                       TableTransactionError, 403, "AuthorizationPermissionMismatch", 0)
        rng, _ = client(T, permission=TableSasPermissions(add=True), start_pk="p", end_pk="p")
        self.sdk_fails("SAS key range p..p: an insert into partition q is refused", rng,
                       [("create", {"PartitionKey": "q", "RowKey": "a"})],
                       TableTransactionError, 403, "AuthorizationFailure", 0)
        self.unchanged("SAS refusals", T, before)
        other, sas_u = client(U, permission=TableSasPermissions(add=True, update=True,
                                                                  delete=True, read=True))
        body = changeset_body([self.ins(T, "p", "zz")])
        raw = ("POST /%s/$batch?%s HTTP/1.1\r\nHost: %s:%d\r\nx-ms-version: 2019-02-02\r\n"
               "Content-Type: multipart/mixed; boundary=batch_b1\r\nContent-Length: %d\r\n\r\n"
               % (ACCOUNT, sas_u, self.srv.host, self.srv.port, len(body))).encode() + body.encode()
        got, _ = h.raw_exchange(self.srv, raw, wait_close=False)
        rr = h.first_response(got)
        ok = rr is not None and rr.status == 202
        p = Answer(rr).parts[0] if ok else None
        tap.ok(ok and p.status == 403 and p.error()[:2] == ("AuthorizationFailure", 0),
               "SAS for another table (tn) -> 403 AuthorizationFailure for op 0",
               p if p is not None else got[:500])
        self.unchanged("SAS tn mismatch", T, before)
        res = add.submit_transaction([("create", {"PartitionKey": "p", "RowKey": "s%d" % i})
                                      for i in range(5)])
        tap.eq(len(res), 5, "SAS sp=a: a transaction of inserts succeeds")
        # a query batch under a SAS key range reads only inside the range
        self.put(T, {"PartitionKey": "q", "RowKey": "secret", "S": "hidden"})
        _, sas_r = client(T, permission=TableSasPermissions(read=True), start_pk="p",
                          end_pk="p")

        def sas_get(pk, rk):
            path = "/%s/%s(PartitionKey='%s',RowKey='%s')" % (ACCOUNT, T, pk, rk)
            single = ("GET %s?%s HTTP/1.1\r\nHost: %s:%d\r\nx-ms-version: 2019-02-02\r\n"
                      "Accept: application/json;odata=nometadata\r\n\r\n"
                      % (path, sas_r, self.srv.host, self.srv.port)).encode()
            body = query_body(op("GET", self.prefix + path[len(ACCOUNT) + 1:]))
            raw = ("POST /%s/$batch?%s HTTP/1.1\r\nHost: %s:%d\r\nx-ms-version: 2019-02-02\r\n"
                   "Content-Type: multipart/mixed; boundary=batch_q1\r\nContent-Length: %d\r\n"
                   "\r\n%s" % (ACCOUNT, sas_r, self.srv.host, self.srv.port, len(body), body)
                   ).encode()
            return (h.first_response(h.raw_exchange(self.srv, single, wait_close=False)[0]),
                    h.first_response(h.raw_exchange(self.srv, raw, wait_close=False)[0]))

        single, rr = sas_get("p", "a")
        ok = rr is not None and rr.status == 202
        p = Answer(rr).parts[0] if ok else None
        tap.ok(single is not None and single.status == 200 and p is not None and
               p.status == 200, "SAS key range p..p, sp=r: a batch GET inside the range -> 200",
               (single, p if p is not None else rr))
        single, rr = sas_get("q", "secret")
        ok = rr is not None and rr.status == 202
        p = Answer(rr).parts[0] if ok else None
        tap.ok(single is not None and single.status == 403, "SAS key range p..p: a GET of "
               "partition q is refused (%s)" % (single.error_code() if single else None), single)
        tap.ok(p is not None and (p.status, p.error()[:2]) ==
               (single.status, (single.error_code(), 0)) and b"hidden" not in rr.body,
               "SAS key range p..p: a batch GET of partition q is refused like the single GET",
               p if p is not None else rr)
        add.close()
        rng.close()
        other.close()

    # -- formats of 201 bodies, host-style batches, chunked framing ------------------
    def test_formats_and_framing(self):
        tap, T = self.tap, "BtFmt"
        self.table(T)
        # a 201 part's JSON follows the part's Accept, else the batch's
        ops = [self.ins(T, "p", "full", {"N": "5", "N@odata.type": "Edm.Int64"},
                        headers=[("Accept", h.ACCEPT["fullmetadata"])]),
               op("POST", self.turl(T), {"PartitionKey": "p", "RowKey": "outer", "V": 1})]
        r, ans, err = batch(self.http, changeset_body(ops),
                            headers=[("Accept", h.ACCEPT["nometadata"])])
        if tap.ok(ans is not None and [p.status for p in ans.parts] == [201, 201],
                  "two inserts with 201 bodies", err):
            for i, (rk, level) in enumerate((("full", "fullmetadata"), ("outer", "nometadata"))):
                g = self.http.get_entity(T, "p", rk, headers={"Accept": h.ACCEPT[level]})
                tap.eq((ans.parts[i].h("Content-Type"), ans.parts[i].body),
                       (h.JSON_CT % level, g.body),
                       "201 part body in %s, as Get Entity returns it" % level)
        # a host-style batch: relative and host-style sub-request URLs
        hs_host = "%s.table.localhost:%d" % (ACCOUNT, self.srv.port)
        hs = h.Http(self.srv, host_style=True, host_header=hs_host)
        ops = [op("POST", T, {"PartitionKey": "p", "RowKey": "hs1"}),
               op("POST", "http://%s/%s" % (hs_host, T), {"PartitionKey": "p", "RowKey": "hs2"},
                  [("Prefer", "return-no-content")])]
        r = hs.request("POST", "/$batch", body=changeset_body(ops).encode(),
                       content_type="multipart/mixed; boundary=batch_b1")
        try:
            ans, err = Answer(r), None
        except Exception as e:  # noqa: BLE001
            ans, err = None, "%s %r" % (e, r.body[:500])
        if tap.ok(ans is not None and [p.status for p in ans.parts] == [201, 204],
                  "host-style batch with relative and host-style sub-request URLs", err):
            tap.eq([p.h("Location") for p in ans.parts],
                   ["http://%s/%s(PartitionKey='p',RowKey='hs%d')" % (hs_host, T, i)
                    for i in (1, 2)], "host-style batch: Location is host-style")
        # chunked request framing
        body = changeset_body([self.ins(T, "p", "ch%d" % i, headers=[("Prefer",
                                                                   "return-no-content")])
                               for i in range(3)]).encode()
        raw = self.http.build("POST", "/$batch", body=body,
                              content_type="multipart/mixed; boundary=batch_b1",
                              headers=[("Content-Length", None),
                                       ("Transfer-Encoding", "chunked")])
        head, _, payload = raw.partition(b"\r\n\r\n")
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(payload[i:i + 100]), payload[i:i + 100])
                          for i in range(0, len(payload), 100)) + b"0\r\n\r\n"
        got, _ = h.raw_exchange(self.srv, head + b"\r\n\r\n" + chunks, wait_close=False)
        rr = h.first_response(got)
        try:
            ans, err = Answer(rr), None
        except Exception as e:  # noqa: BLE001
            ans, err = None, "%s %r" % (e, got[:500])
        tap.ok(ans is not None and [p.status for p in ans.parts] == [204] * 3,
               "a batch sent with chunked framing", err)


    # -- issue 14 points 6 and 8 -------------------------------------------------
    def test_envelope_accept(self):
        """The envelope's Accept neither chooses nor refuses (point 6); each
        part's own Accept / Content-Type decides that part."""
        tap, T = self.tap, "BtEnvAccept"
        self.table(T)
        legacy = "application/atom+xml,application/xml"
        n = [0]

        def ins(headers=None, props=None):
            n[0] += 1
            return self.ins(T, "p", "r%d" % n[0], props, headers=headers)

        minimal = [("Accept", h.ACCEPT["minimalmetadata"]), ("DataServiceVersion", "3.0;")]
        for outer, what in ((legacy, "Atom Accept (legacy Node SDK)"), (None, "no Accept"),
                            ("text/plain", "Accept: text/plain"),
                            ("application/json;odata=verbose", "verbose JSON Accept")):
            o = ins(minimal)
            r, ans, err = batch(self.http, changeset_body([o]),
                                headers=[("Accept", outer)])
            if tap.ok(ans is not None and [p.status for p in ans.parts] == [201],
                      "envelope with %s, JSON part: 202 and a 201 part" % what, err):
                rk = o["body"]["RowKey"]
                g = self.http.get_entity(T, "p", rk)
                tap.eq((ans.parts[0].h("Content-Type"), ans.parts[0].body),
                       (CT_MIN, g.body), "envelope with %s: the part's body in the part's "
                       "own format (minimalmetadata)" % what)
                tap.eq((r.h("x-ms-version"), r.has("x-ms-request-id"), r.h("Cache-Control")),
                       (h.DEFAULT_VERSION, True, "no-cache"),
                       "envelope with %s: the 202's headers" % what)
        # a part without Accept under an Atom envelope: minimal metadata
        o = ins()
        r, ans, err = batch(self.http, changeset_body([o]), headers=[("Accept", legacy)])
        if tap.ok(ans is not None and [p.status for p in ans.parts] == [201],
                  "Atom envelope, part without Accept: 201", err):
            tap.eq(ans.parts[0].h("Content-Type"), CT_MIN,
                   "Atom envelope, part without Accept: minimalmetadata")
        # the legacy Node SDK's envelope around a mixed changeset
        ops = [ins(minimal), ins(minimal + [("Prefer", "return-no-content")]),
               self.ent("MERGE", T, "p", "r1", {"M": 1}, "*", minimal),
               self.ent("DELETE", T, "p", "r2", None, "*", minimal)]
        r, ans, err = batch(self.http, changeset_body(ops), headers=[
            ("Accept", legacy), ("DataServiceVersion", "3.0;NetFx"),
            ("MaxDataServiceVersion", "3.0;NetFx")])
        tap.ok(ans is not None and [p.status for p in ans.parts] == [201, 204, 204, 204],
               "legacy Node SDK envelope (Atom Accept) around JSON insert/merge/delete: 202", err)
        # a single query under an Atom envelope
        r, ans, err = batch(self.http, query_body(op("GET", self.eurl(T, "p", "r1"),
                                                     headers=minimal)),
                            ct="multipart/mixed; boundary=batch_q1",
                            headers=[("Accept", legacy)])
        tap.ok(ans is not None and ans.kind == "query" and ans.parts[0].status == 200 and
               ans.parts[0].h("Content-Type") == CT_MIN and
               json.loads(ans.parts[0].body)["M"] == 1,
               "query batch under an Atom envelope: 200 part in JSON", err)
        # a part that asks for Atom, or sends it, fails alone
        before = snapshot(self.http, T)
        atom_msg = "Atom format is not supported."
        for what, o in (
                ("a part with Accept: application/atom+xml",
                 ins([("Accept", "application/atom+xml")])),
                ("a part with an Atom body",
                 op("POST", self.turl(T), "<entry xmlns='http://www.w3.org/2005/Atom'/>",
                    [("Content-Type", "application/atom+xml"),
                     ("Accept", h.ACCEPT["minimalmetadata"])]))):
            r, ans, err = batch(self.http, changeset_body([ins(minimal), o]),
                                headers=[("Accept", h.ACCEPT["minimalmetadata"])])
            if tap.ok(ans is not None and len(ans.parts) == 1, "%s: one failure part" % what,
                      err):
                p = ans.parts[0]
                m = re.match(r'^<\?xml version="1\.0" encoding="utf-8"\?><error xmlns="http://'
                             r'schemas\.microsoft\.com/ado/2007/08/dataservices/metadata">'
                             r'<code>([A-Za-z]+)</code><message xml:lang="en-US">(\d+):([^\n]*)'
                             r'\nRequestId:[^\n]+\nTime:[^<]+</message></error>$',
                             p.body.decode("utf-8", "replace"))
                tap.eq((p.status_line, p.h("Content-Type"),
                        m.groups() if m else p.body[:300]),
                       ("HTTP/1.1 415 Unsupported Media Type", "application/xml;charset=utf-8",
                        ("AtomFormatNotSupported", "1", atom_msg)),
                       "%s: 415 AtomFormatNotSupported for that part (XML, index 1)" % what)
            self.unchanged(what, T, before)

    def test_rootless_paths(self):
        """Sub-request paths relative to the service root without the account
        segment (point 8), on a path-style endpoint."""
        tap, T = self.tap, "BtRoot"
        self.table(T)
        ops = [op("POST", "/%s" % T, {"PartitionKey": "p", "RowKey": "a", "V": 1}),
               op("POST", "/%s" % T, {"PartitionKey": "p", "RowKey": "b", "V": 1},
                  [("Prefer", "return-no-content")]),
               op("MERGE", "/%s(PartitionKey='p',RowKey='pre')" % T, {"V": 2},
                  [("If-Match", "*")]),
               op("PUT", "/%s/%s(PartitionKey='p',RowKey='c')" % (ACCOUNT, T), {"V": 3}),
               op("DELETE", "/%s(PartitionKey='p',RowKey='gone')" % T, None,
                  [("If-Match", "*")])]
        self.put(T, {"PartitionKey": "p", "RowKey": "pre", "V": 0, "W": 0})
        self.put(T, {"PartitionKey": "p", "RowKey": "gone"})
        r, ans, err = batch(self.http, changeset_body(ops))
        if tap.ok(ans is not None and [p.status for p in ans.parts] == [201, 204, 204, 204, 204],
                  "path-style batch with /table, /table(keys) and /account/table URLs: all "
                  "succeed", err):
            tap.eq([ans.parts[i].h("Location") for i in (0, 1)],
                   [self.location(T, "p", "a"), self.location(T, "p", "b")],
                   "Location of a rootless insert names the batch's account")
        got = entities(self.http, T)
        tap.eq(sorted((k[1], user_props(e)) for k, e in got.items()),
               [("a", {"V": 1}), ("b", {"V": 1}), ("c", {"V": 3}), ("pre", {"V": 2, "W": 0})],
               "rootless sub-requests wrote the batch account's table")
        # a table named like the account
        A = ACCOUNT
        r = self.http.create_table(A)
        tap.eq(r.status, 201, "create table %s (named like the account)" % A)
        ops = [op("POST", "/%s" % A, {"PartitionKey": "q", "RowKey": "1"}),
               op("PUT", "/%s/%s(PartitionKey='q',RowKey='2')" % (A, A), {"X": 2}),
               op("MERGE", "/%s(PartitionKey='q',RowKey='3')" % A, {"X": 3}),
               op("POST", "/%s/%s" % (A, A), {"PartitionKey": "q", "RowKey": "4"},
                  [("Prefer", "return-no-content")])]
        r, ans, err = batch(self.http, changeset_body(ops))
        tap.ok(ans is not None and [p.status for p in ans.parts] == [201, 204, 204, 204],
               "table named like the account: /%s, /%s/%s and /%s(keys)" % (A, A, A, A), err)
        tap.eq(sorted(k[1] for k in entities(self.http, A)), ["1", "2", "3", "4"],
               "all four landed in table %s" % A)
        self.http.delete_table(A)
        # what still fails: other accounts, absolute URLs without the account
        before = snapshot(self.http, T)
        for what, url in (
                ("absolute URL with host but no account segment",
                 "http://%s:%d/%s" % (self.srv.host, self.srv.port, T)),
                ("/otheraccount/table", "/otheraccount/%s" % T),
                ("/account-secondary/table", "/%s-secondary/%s" % (ACCOUNT, T)),
                ("/ alone", "/")):
            r, ans, err = batch(self.http, changeset_body(
                [op("POST", "/%s" % T, {"PartitionKey": "p", "RowKey": "z1"}),
                 op("POST", url, {"PartitionKey": "p", "RowKey": "z2"})]))
            self.expect_failure(what, ans, err, 400, "InvalidInput", 1)
            self.unchanged(what, T, before)
        # a query batch with a rootless URL
        r, ans, err = batch(self.http, query_body(op("GET", "/%s(PartitionKey='p',RowKey='a')"
                                                     % T)), ct="multipart/mixed; "
                            "boundary=batch_q1")
        tap.ok(ans is not None and ans.parts[0].status == 200 and
               json.loads(ans.parts[0].body)["RowKey"] == "a",
               "query batch with a rootless point-query URL", err)
        # host-style: the same rootless forms
        hs_host = "%s.table.localhost:%d" % (ACCOUNT, self.srv.port)
        hs = h.Http(self.srv, host_style=True, host_header=hs_host)
        ops = [op("POST", "/%s" % T, {"PartitionKey": "p", "RowKey": "hs1"},
                  [("Prefer", "return-no-content")]),
               op("DELETE", "/%s(PartitionKey='p',RowKey='hs0')" % T, None, [("If-Match", "*")])]
        self.put(T, {"PartitionKey": "p", "RowKey": "hs0"})
        r = hs.request("POST", "/$batch", body=changeset_body(ops).encode(),
                       content_type="multipart/mixed; boundary=batch_b1")
        try:
            ans, err = Answer(r), None
        except Exception as e:  # noqa: BLE001
            ans, err = None, "%s %r" % (e, r.body[:500])
        tap.ok(ans is not None and [p.status for p in ans.parts] == [204, 204],
               "host-style batch with rootless URLs", err)

GROUPS = [
    BatchTests.test_success_exact,
    BatchTests.test_tolerance,
    BatchTests.test_foreign_urls,
    BatchTests.test_failures,
    BatchTests.test_op_validation,
    BatchTests.test_keys_and_etags,
    BatchTests.test_limits,
    BatchTests.test_failure_positions,
    BatchTests.test_query,
    BatchTests.test_malformed,
    BatchTests.test_concurrent_readers,
    BatchTests.test_python_sdk,
    BatchTests.test_keys_and_names,
    BatchTests.test_sas,
    BatchTests.test_formats_and_framing,
    BatchTests.test_envelope_accept,
    BatchTests.test_rootless_paths,
]


def main():
    tap = h.Tap()
    only = os.environ.get("TEST_GROUPS", "").split(",") if os.environ.get("TEST_GROUPS") else None
    try:
        srv = h.Server().start()
    except h.ServerError as e:
        tap.ok(False, "server starts", str(e))
        tap.done()
    tap.ok(True, "server starts on port %d" % srv.port)
    h.watchdog(int(os.environ.get("TEST_WATCHDOG", "240")), srv, tap)
    t = BatchTests(tap, srv)
    for fn in GROUPS:
        if only and fn.__name__ not in only:
            continue
        t0 = time.monotonic()
        tap.diag("group %s" % fn.__name__)
        tap.run(fn, t)
        if not srv.alive():
            tap.ok(False, "server is still running after group %s" % fn.__name__,
                   srv.stderr_text()[-4000:])
            break
        tap.diag("group %s took %.1f s" % (fn.__name__, time.monotonic() - t0))
    srv.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
