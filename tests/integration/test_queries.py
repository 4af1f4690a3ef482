#!/usr/bin/python3
"""Integration test: Query Entities and Query Tables (doc/protocol.md,
Queries; Query Tables; Query Entities) with the Python SDK (azure-data-tables
12.4.2: query_entities / list_entities with parameters, select,
results_per_page and by_page) and raw HTTP (exact pages, headers and
continuation tokens).

Three servers: the main one holds a table with entities of every Edm type,
absent properties and one property name carrying a different type in each
entity, the `orders` table of doc/protocol.md, Filter examples and a 2,500-entity paging table; a
second one runs with --scan-budget 100 (partial and empty pages); a third
one holds only tables for Query Tables. Expected filter results come from a
small reference evaluator of doc/protocol.md, Filter evaluation below (typed comparison, numeric
widening, missing property and type mismatch false), and the order from
UTF-16 ordinal key order. Prints TAP."""
import base64
import datetime
import math
import os
import re
import sys
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core.exceptions import HttpResponseError
    from azure.data.tables import TableClient, TableServiceClient
    IMPORT_ERROR = None
except ImportError as e:  # reported as a failing check below
    IMPORT_ERROR = e

UTC = datetime.timezone.utc
LEVELS = ("nometadata", "minimalmetadata", "fullmetadata")
CLIENT_KW = dict(retry_total=0, connection_timeout=10, read_timeout=30)
BUDGET = 100

# --------------------------------------------------------------------------
# Typed values and the reference evaluator (doc/protocol.md, Filter evaluation)

I32, I64, DBL = "Edm.Int32", "Edm.Int64", "Edm.Double"
BOOL, DT, GUID, BIN, STR = "Edm.Boolean", "Edm.DateTime", "Edm.Guid", "Edm.Binary", "Edm.String"
NUMERIC = {I32, I64, DBL}
# (literal type, property type) pairs compared numerically (doc/protocol.md, Filter evaluation table)
WIDEN = {(I32, I32), (I32, I64), (I32, DBL), (I64, I64), (I64, DBL), (DBL, DBL)}
OPS = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
}
FLIP = {"eq": "eq", "ne": "ne", "gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}


def i32(v):
    return (I32, v)


def i64(v):
    return (I64, v)


def dbl(v):
    return (DBL, v)


def boo(v):
    return (BOOL, v)


def dt(text):
    return (DT, h.dt_ticks(text), text)


def guid(text):
    return (GUID, text)


def binv(b):
    return (BIN, b)


def st(s):
    return (STR, s)


def u16(s):
    """Sort key of a string in the service's order (UTF-16 code units)."""
    return s.encode("utf-16-be")


def sortkey(pv):
    """Comparable form of a value of a non-numeric type."""
    t, v = pv[0], pv[1]
    if t == STR:
        return u16(v)
    if t == GUID:
        return v.lower()
    if t == BOOL:
        return int(v)
    return v  # DateTime ticks, Binary bytes


def ocmp(pv, op, lit):
    """doc/protocol.md, Filter evaluation: property value pv (None = absent) op literal lit."""
    if pv is None:
        return False
    pt, lt = pv[0], lit[0]
    if pt in NUMERIC and lt in NUMERIC:
        if (lt, pt) not in WIDEN:
            return False
        a, b = pv[1], lit[1]
        if (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
            return op == "ne"
        return OPS[op](a, b)
    if pt != lt:
        return False
    return OPS[op](sortkey(pv), sortkey(lit))


def wire(pv):
    """(JSON value, @odata.type or None) of a typed value in a request body."""
    t, v = pv[0], pv[1]
    if t == I32 or t == BOOL or t == STR:
        return v, None
    if t == I64:
        return str(v), I64
    if t == DBL:
        if math.isnan(v):
            return "NaN", DBL
        if math.isinf(v):
            return ("Infinity" if v > 0 else "-Infinity"), DBL
        return v, DBL
    if t == DT:
        return pv[2], DT
    if t == GUID:
        return v, GUID
    if t == BIN:
        return base64.b64encode(v).decode("ascii"), BIN
    raise ValueError(t)


def tok(key):
    """The continuation token naming key (doc/protocol.md, Continuation: 1!<n>!<base64, = -> ->)."""
    b = base64.b64encode(key.encode("utf-8")).decode("ascii").replace("=", "-")
    return "1!%d!%s" % (len(b), b)


def q(s):
    """Percent-encodes a query parameter value completely."""
    return urllib.parse.quote(s, safe="")


G1 = "4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11"
G2 = "00000000-0000-0000-0000-000000000001"
G3 = "ffffffff-ffff-ffff-ffff-ffffffffffff"
G4 = "A0B1C2D3-E4F5-4A6B-8C7D-9E0F1A2B3C4D"   # sent upper-case

# The "every type" table: I Int32, L Int64, D Double, B Boolean, T DateTime,
# G Guid, X Binary, S String, M a different type in every entity that has it.
QALL = [
    ("a", "1", dict(I=i32(3), L=i64(10), D=dbl(12.5), B=boo(True), T=dt("2024-06-01T08:30:00Z"),
                    G=guid(G1), X=binv(b"\x00\x01\xff"), S=st("Ann"), M=i32(5))),
    ("a", "2", dict(I=i32(7), L=i64(20), D=dbl(3.0), B=boo(False),
                    T=dt("2024-06-01T08:30:00.1234567Z"), G=guid(G2), X=binv(b"\x0a\x0b"),
                    S=st("bob"), M=st("5"))),
    ("a", "3", dict(I=i32(-5), L=i64(-2 ** 63), D=dbl(-1.5), B=boo(True),
                    T=dt("1900-01-01T00:00:00Z"), G=guid(G3), X=binv(b""), S=st(""),
                    M=dbl(5.0))),
    ("a", "4", {}),
    ("b", "1", dict(I=i32(2 ** 31 - 1), L=i64(9007199254740993), D=dbl(1e300), B=boo(False),
                    T=dt("9999-12-31T23:59:59.9999999Z"), G=guid(G4), X=binv(b"\xff"),
                    S=st("O'Neil"), M=i64(5))),
    ("b", "2", dict(I=i32(0), D=dbl(float("nan")), S=st("\u00fc"), M=boo(True))),
    ("b", "3", dict(D=dbl(float("inf")), S=st("\ue000"), L=i64(0))),
    ("b", "4", dict(D=dbl(float("-inf")), S=st("\U0001F600"), I=i32(-2 ** 31))),
    ("b", "5", dict(D=dbl(-0.0), S=st("Zed"), M=guid(G1), T=dt("2024-06-01T00:00:00Z"))),
    ("c'q", "1", dict(S=st("ann"), I=i32(3))),
    ("c'q", "2", dict(S=st("Ann "), X=binv(b"\x0a\x0b\x00"))),
    ("Z", "1", dict(I=i32(1))),
    ("\u00e9", "1", dict(S=st("\u00e9"))),
    ("\U0001F600", "1", dict(S=st("x"))),
    ("\ue000", "1", dict(S=st("y"))),
    ("\ue000", "10", dict(S=st("z"))),
    ("\ue000", "9", dict(S=st("w"))),
]


def qall_sorted():
    """QALL in the service's key order, each entity as a dict of typed
    values including PartitionKey and RowKey."""
    out = []
    for pk, rk, props in QALL:
        e = dict(props)
        e["PartitionKey"] = st(pk)
        e["RowKey"] = st(rk)
        out.append(e)
    out.sort(key=lambda e: (u16(e["PartitionKey"][1]), u16(e["RowKey"][1])))
    return out


def keys_of(ents):
    return [(e["PartitionKey"][1], e["RowKey"][1]) for e in ents]


# Literals per property: (literal text, typed value).
LITERALS = {
    "I": [("3", i32(3)), ("-5", i32(-5)), ("2147483647", i32(2 ** 31 - 1)),
          ("-2147483648", i32(-2 ** 31)), ("3L", i64(3)), ("3.0", dbl(3.0)),
          ("2147483648", i64(2 ** 31))],                    # beyond Int32: an Int64 literal
    "L": [("10", i32(10)), ("10L", i64(10)), ("10l", i64(10)), ("10.0", dbl(10.0)),
          ("-9223372036854775808L", i64(-2 ** 63)), ("9007199254740992L", i64(2 ** 53)),
          ("0", i32(0))],
    "D": [("12", i32(12)), ("12.5", dbl(12.5)), ("3.0", dbl(3.0)), ("3", i32(3)), ("3L", i64(3)),
          ("1E+300", dbl(1e300)), ("0.0", dbl(0.0)), ("-1.5", dbl(-1.5)), ("3D", dbl(3.0)),
          ("1.25e1", dbl(12.5))],
    "B": [("true", boo(True)), ("false", boo(False))],
    "T": [("datetime'2024-06-01T08:30:00Z'", dt("2024-06-01T08:30:00Z")),
          ("datetime'2024-06-01T08:30:00.1234567Z'", dt("2024-06-01T08:30:00.1234567Z")),
          ("datetime'2024-06-01T08:30:00.123Z'", dt("2024-06-01T08:30:00.123Z")),
          ("DateTime'1900-01-01T00:00:00Z'", dt("1900-01-01T00:00:00Z"))],
    "G": [("guid'%s'" % G1, guid(G1)), ("guid'%s'" % G4.lower(), guid(G4)),
          ("guid'%s'" % G1.upper(), guid(G1))],
    "X": [("X'0a0b'", binv(b"\x0a\x0b")), ("binary'0A0B'", binv(b"\x0a\x0b")),
          ("X'00'", binv(b"\x00")), ("X'ff'", binv(b"\xff"))],
    "S": [("'Ann'", st("Ann")), ("'ann'", st("ann")), ("'B'", st("B")), ("''", st("")),
          ("'O''Neil'", st("O'Neil")), ("'\u00fc'", st("\u00fc")), ("'\ue000'", st("\ue000")),
          ("'\U0001F600'", st("\U0001F600")), ("'Zed'", st("Zed"))],
    "M": [("5", i32(5)), ("5L", i64(5)), ("5.0", dbl(5.0)), ("'5'", st("5")),
          ("true", boo(True)), ("guid'%s'" % G1, guid(G1))],
    "PartitionKey": [("'b'", st("b")), ("'c''q'", st("c'q")), ("'\U0001F600'", st("\U0001F600")),
                     ("'\u00e9'", st("\u00e9"))],
    "RowKey": [("'2'", st("2")), ("'10'", st("10"))],
}


def P(name, op, lit):
    """Predicate: entity's name op lit."""
    return lambda e: ocmp(e.get(name), op, lit)


def comparison_cases():
    """(filter, predicate) for every property x literal x operator, plus
    the literal-on-the-left form."""
    cases = []
    for name, lits in LITERALS.items():
        for text, lit in lits:
            for op in OPS:
                cases.append(("%s %s %s" % (name, op, text), P(name, op, lit)))
            cases.append(("%s gt %s" % (text, name), P(name, FLIP["gt"], lit)))
            cases.append(("%s le %s" % (text, name), P(name, FLIP["le"], lit)))
    return cases


def NOT(f):
    return lambda e: not f(e)


def AND(*fs):
    return lambda e: all(f(e) for f in fs)


def OR(*fs):
    return lambda e: any(f(e) for f in fs)


BTRUE = P("B", "eq", boo(True))
MTRUE = P("M", "eq", boo(True))

LOGIC_CASES = [
    ("B", BTRUE),
    ("not B", NOT(BTRUE)),
    ("not not B", BTRUE),
    ("M", MTRUE),                                  # bare term: only a Boolean M is true
    ("not M", NOT(MTRUE)),
    ("B and not B", lambda e: False),
    ("B or not B", lambda e: True),
    ("I gt 0 and B eq true", AND(P("I", "gt", i32(0)), BTRUE)),
    ("I gt 0 or S eq 'bob'", OR(P("I", "gt", i32(0)), P("S", "eq", st("bob")))),
    ("not B and I gt 0", AND(NOT(BTRUE), P("I", "gt", i32(0)))),
    ("not (B and I gt 0)", NOT(AND(BTRUE, P("I", "gt", i32(0))))),
    ("I eq 3 or I eq 7 and B eq true",
     OR(P("I", "eq", i32(3)), AND(P("I", "eq", i32(7)), BTRUE))),
    ("(I eq 3 or I eq 7) and B eq true",
     AND(OR(P("I", "eq", i32(3)), P("I", "eq", i32(7))), BTRUE)),
    ("B eq true and I eq 7 or I eq 3",
     OR(AND(BTRUE, P("I", "eq", i32(7))), P("I", "eq", i32(3)))),
    ("not (I eq 3 or I eq 7)", NOT(OR(P("I", "eq", i32(3)), P("I", "eq", i32(7))))),
    ("not (I eq 3)", NOT(P("I", "eq", i32(3)))),
    ("I ne 3", P("I", "ne", i32(3))),
    ("Missing eq 1", lambda e: False),
    ("Missing ne 1", lambda e: False),
    ("not (Missing eq 1)", lambda e: True),
    ("Missing", lambda e: False),
    ("not Missing", lambda e: True),
    ("((((S eq 'Ann'))))", P("S", "eq", st("Ann"))),
    ("S eq 'Ann' or S eq 'ann' or S eq 'Ann '",
     OR(P("S", "eq", st("Ann")), P("S", "eq", st("ann")), P("S", "eq", st("Ann ")))),
    ("(PartitionKey eq 'a' or PartitionKey eq 'b') and D gt 0",
     AND(OR(P("PartitionKey", "eq", st("a")), P("PartitionKey", "eq", st("b"))),
         P("D", "gt", i32(0)))),
    ("PartitionKey eq 'a' and not (RowKey eq '2')",
     AND(P("PartitionKey", "eq", st("a")), NOT(P("RowKey", "eq", st("2"))))),
    ("PartitionKey eq 'a' and RowKey ge '2' and RowKey lt '4'",
     AND(P("PartitionKey", "eq", st("a")), P("RowKey", "ge", st("2")),
         P("RowKey", "lt", st("4")))),
    ("PartitionKey ge 'b' and PartitionKey lt 'c'",
     AND(P("PartitionKey", "ge", st("b")), P("PartitionKey", "lt", st("c")))),
    ("PartitionKey gt 'z'", P("PartitionKey", "gt", st("z"))),
    ("PartitionKey gt '\u00e9' and PartitionKey lt '\ue000'",
     AND(P("PartitionKey", "gt", st("\u00e9")), P("PartitionKey", "lt", st("\ue000")))),
    ("PartitionKey eq '\ue000' and RowKey gt '1'",
     AND(P("PartitionKey", "eq", st("\ue000")), P("RowKey", "gt", st("1")))),
    ("RowKey eq '1'", P("RowKey", "eq", st("1"))),
    ("RowKey lt '2' or PartitionKey eq 'b'",
     OR(P("RowKey", "lt", st("2")), P("PartitionKey", "eq", st("b")))),
    ("(PartitionKey eq 'a' and RowKey eq '3') or (PartitionKey eq 'b' and RowKey eq '5')"
     " or (PartitionKey eq 'zz' and RowKey eq '1')",
     OR(AND(P("PartitionKey", "eq", st("a")), P("RowKey", "eq", st("3"))),
        AND(P("PartitionKey", "eq", st("b")), P("RowKey", "eq", st("5"))))),
    ("PartitionKey eq 'a' and PartitionKey eq 'b'", lambda e: False),
    ("PartitionKey ne 'a' and PartitionKey ne 'b'",
     AND(P("PartitionKey", "ne", st("a")), P("PartitionKey", "ne", st("b")))),
    ("D ge -1.5 and D le 12.5", AND(P("D", "ge", dbl(-1.5)), P("D", "le", dbl(12.5)))),
    ("I  gt   0\tand\tB", AND(P("I", "gt", i32(0)), BTRUE)),   # runs of blanks, tabs
    ("  S eq 'bob'  ", P("S", "eq", st("bob"))),
    ("S eq 'Ann' and (X eq X'0001FF' or G eq guid'%s')" % G2,
     AND(P("S", "eq", st("Ann")), OR(P("X", "eq", binv(b"\x00\x01\xff")),
                                     P("G", "eq", guid(G2))))),
    ("T ge datetime'2024-06-01T00:00:00Z' and T lt datetime'2024-06-01T08:30:00.0000001Z'",
     AND(P("T", "ge", dt("2024-06-01T00:00:00Z")),
         P("T", "lt", dt("2024-06-01T08:30:00.0000001Z")))),
    # the literals true and false as constants (issue 14 point 5)
    ("true", lambda e: True),
    ("false", lambda e: False),
    ("not false", lambda e: True),
    ("True and B", BTRUE),
    ("FALSE or B", BTRUE),
    ("(true and RowKey eq '1') or (false or PartitionKey eq 'b')",
     OR(P("RowKey", "eq", st("1")), P("PartitionKey", "eq", st("b")))),
    ("true and PartitionKey eq 'a' and not (false or RowKey eq '2')",
     AND(P("PartitionKey", "eq", st("a")), NOT(P("RowKey", "eq", st("2"))))),
]


# --------------------------------------------------------------------------
# Helpers


def accept_hook(level):
    """raw_request_hook that asks for a metadata level (the SDK always sends
    minimalmetadata; SharedKey does not sign Accept)."""
    def hook(request):
        request.http_request.headers["Accept"] = "application/json;odata=" + level
    return hook


def sdk_keys(ents):
    return [(e.get("PartitionKey"), e.get("RowKey")) for e in ents]


def value_of(r):
    """The value array of a JSON feed response (None when not JSON)."""
    try:
        return r.json()["value"]
    except (ValueError, KeyError, TypeError):
        return None


def raw_keys(r):
    v = value_of(r)
    return None if v is None else [(e.get("PartitionKey"), e.get("RowKey")) for e in v]


def insert_typed(tap, http, table, pk, rk, props):
    body = {"PartitionKey": pk, "RowKey": rk}
    for name, pv in props.items():
        v, t = wire(pv)
        if t:
            body[name + "@odata.type"] = t
        body[name] = v
    r = http.insert(table, body, headers={"Prefer": "return-no-content"})
    if r.status != 204:
        tap.ok(False, "insert %r/%r" % (pk, rk), r)
    return r.status == 204


def simulate(cands, pred, limit=1000, budget=0, start=0):
    """The server's page algorithm (doc/protocol.md, Continuation) over candidate rows cands
    (the planned ranges, in key order) from index start: returns (indices of
    the page's entities, index of the token's entity or None)."""
    items, examined = [], 0
    for i in range(start, len(cands)):
        if budget and examined >= budget:
            return items, i
        examined += 1
        if not pred(cands[i]):
            continue
        if len(items) == limit:
            return items, i
        items.append(i)
    return items, None


def expected_pages(cands, pred, limit=1000, budget=0):
    """Every page of a query followed to the end: [(indices, next index)]."""
    pages, start = [], 0
    while True:
        items, nxt = simulate(cands, pred, limit, budget, start)
        pages.append((items, nxt))
        if nxt is None or len(pages) > 10000:
            return pages
        start = nxt


class Tests:
    def __init__(self, tap, srv):
        self.tap = tap
        self.srv = srv
        self.http = h.Http(srv)
        self.conn = srv.conn_str()
        self.svc = TableServiceClient.from_connection_string(self.conn, **CLIENT_KW)

    def table(self, name, level="minimalmetadata"):
        return TableClient.from_connection_string(self.conn, name,
                                                  raw_request_hook=accept_hook(level),
                                                  **CLIENT_KW)

    def raw(self, table, params, level="minimalmetadata", http=None):
        """GET /table() with params [(name, already-encoded value)]."""
        http = http or h.Http(self.srv, accept=h.ACCEPT[level])
        qs = "&".join("%s=%s" % (k, v) for k, v in params)
        return http.get("/%s()%s" % (table, "?" + qs if qs else ""))

    # -- the every-type table ---------------------------------------------------
    def load_qall(self):
        tap = self.tap
        r = self.http.create_table("qall")
        tap.eq(r.status, 201, "create table qall")
        ok = all(insert_typed(tap, self.http, "qall", pk, rk, props) for pk, rk, props in QALL)
        tap.ok(ok, "insert %d entities of every Edm type, absent and mixed-type properties"
               % len(QALL))
        self.qall = qall_sorted()
        r = self.raw("qall", [])
        tap.eq(raw_keys(r), keys_of(self.qall),
               "unfiltered query returns every entity in UTF-16 (PartitionKey, RowKey) order")
        self.qall_ts = [(e["PartitionKey"], e["RowKey"], e["Timestamp"]) for e in value_of(r)]
        self.clients = {lv: self.table("qall", lv) for lv in LEVELS}

    def check_filter(self, text, pred, what=None):
        """One filter through the SDK at all three metadata levels."""
        want = keys_of([e for e in self.qall if pred(e)])
        got = {}
        for lv in LEVELS:
            try:
                got[lv] = sdk_keys(self.clients[lv].query_entities(text))
            except HttpResponseError as e:
                got[lv] = "HTTP %s %s" % (e.status_code, str(e).splitlines()[0][:200])
        bad = {lv: g for lv, g in got.items() if g != want}
        self.tap.ok(not bad, "SDK %s: %r -> %d entities, in order, at all 3 levels"
                    % (what or "filter", text, len(want)),
                    "want: %r\n%s" % (want, "\n".join("%s: %r" % kv for kv in bad.items())))

    def test_comparisons(self):
        for text, pred in comparison_cases():
            self.check_filter(text, pred, "comparison")

    def test_logic(self):
        for text, pred in LOGIC_CASES:
            self.check_filter(text, pred, "logic")

    def test_timestamp(self):
        tap = self.tap
        ts = self.qall_ts
        order = sorted(range(len(ts)), key=lambda i: h.dt_ticks(ts[i][2]))
        mid = ts[order[len(order) // 2]]
        mid_ticks = h.dt_ticks(mid[2])
        want_gt = [(pk, rk) for pk, rk, t in ts if h.dt_ticks(t) > mid_ticks]
        want_le = [(pk, rk) for pk, rk, t in ts if h.dt_ticks(t) <= mid_ticks]
        c = self.clients["minimalmetadata"]
        tap.eq(sdk_keys(c.query_entities("Timestamp gt datetime'%s'" % mid[2])), want_gt,
               "Timestamp gt the middle entity's Timestamp")
        tap.eq(sdk_keys(c.query_entities("Timestamp le datetime'%s'" % mid[2])), want_le,
               "Timestamp le the middle entity's Timestamp")
        tap.eq(len(list(c.query_entities("Timestamp ge datetime'2000-01-01T00:00:00Z'"))),
               len(ts), "Timestamp ge datetime'2000-01-01T00:00:00Z' returns all")
        tap.eq(list(c.query_entities("Timestamp lt datetime'2000-01-01T00:00:00Z'")), [],
               "Timestamp lt datetime'2000-01-01T00:00:00Z' returns none")
        # the SDK's datetime parameter (6-digit fraction, Z)
        when = datetime.datetime(2000, 1, 1, tzinfo=UTC)
        tap.eq(len(list(c.query_entities("Timestamp gt @t", parameters={"t": when}))), len(ts),
               "Timestamp gt @t with a datetime parameter")

    def test_parameters(self):
        """SDK parameter substitution produces each literal form."""
        tap = self.tap
        c = self.clients["minimalmetadata"]
        cases = [
            ("PartitionKey eq @pk and RowKey eq @rk", {"pk": "c'q", "rk": "1"}, [("c'q", "1")]),
            ("S eq @s", {"s": "O'Neil"}, [("b", "1")]),
            ("L gt @v", {"v": 2 ** 40}, [("b", "1")]),              # rendered 1099511627776L
            ("I ge @v", {"v": 2147483647}, [("b", "1")]),
            ("D eq @v", {"v": 12.5}, [("a", "1")]),
            ("D gt @v", {"v": 1e299}, [("b", "1"), ("b", "3")]),     # rendered 1e+299
            ("B eq @v", {"v": False}, [("a", "2"), ("b", "1")]),
            ("T eq @v", {"v": datetime.datetime(2024, 6, 1, 8, 30, tzinfo=UTC)}, [("a", "1")]),
            ("G eq @v", {"v": uuid.UUID(G4)}, [("b", "1")]),
            ("X eq @v", {"v": b"\x0a\x0b"}, [("a", "2")]),
            ("M eq @v", {"v": "5"}, [("a", "2")]),
        ]
        for text, params, want in cases:
            got = sdk_keys(c.query_entities(text, parameters=params))
            tap.eq(got, want, "SDK query_entities(%r, parameters=%r)" % (text, params))

    def test_select_top_sdk(self):
        tap = self.tap
        for lv in LEVELS:
            c = self.clients[lv]
            got = list(c.query_entities("PartitionKey eq 'a'", select=["S", "I"]))
            want = [{"S": e.get("S", (None, None))[1], "I": e.get("I", (None, None))[1]}
                    for e in self.qall if e["PartitionKey"][1] == "a"]
            tap.eq([dict(e) for e in got], want,
                   "%s: SDK select=[S, I] returns only S and I (null when absent)" % lv)
            got = list(c.query_entities("PartitionKey eq 'a'",
                                        select=["PartitionKey", "RowKey", "B"]))
            tap.eq([dict(e) for e in got],
                   [{"PartitionKey": "a", "RowKey": r, "B": b}
                    for r, b in (("1", True), ("2", False), ("3", True), ("4", None))],
                   "%s: SDK select with the keys returns them" % lv)
            # $top through results_per_page: every match exactly once, in order
            for n in (1, 2, 5):
                pager = c.query_entities("I ge -5", results_per_page=n).by_page()
                pages = [sdk_keys(p) for p in pager]
                want = keys_of([e for e in self.qall if ocmp(e.get("I"), "ge", i32(-5))])
                flat = [k for p in pages for k in p]
                tap.ok(flat == want and all(len(p) <= n for p in pages)
                       and all(len(p) == n for p in pages[:-1]),
                       "%s: results_per_page=%d pages of %d over %d matches, in order"
                       % (lv, n, n, len(want)), "pages: %r\nwant: %r" % (pages, want))
            pager = c.list_entities(results_per_page=4, select="RowKey").by_page()
            pages = [[e.get("RowKey") for e in p] for p in pager]
            tap.eq([len(p) for p in pages], [4, 4, 4, 4, 1],
                   "%s: list_entities(results_per_page=4, select) page sizes" % lv)
            tap.eq([r for p in pages for r in p], [e["RowKey"][1] for e in self.qall],
                   "%s: list_entities with select=RowKey in key order" % lv)

    # -- doc/protocol.md, Filter examples ---------------------------------------------------------------
    def test_spec_orders(self):
        tap = self.tap
        http = self.http
        tap.eq(http.create_table("orders").status, 201, "create table orders")
        rows = [
            {"PartitionKey": "a", "RowKey": "1", "Qty": 3, "Total": 12.5,
             "Total@odata.type": DBL, "Sku": "10", "Sku@odata.type": I64, "Active": True,
             "Name": "Ann"},
            {"PartitionKey": "a", "RowKey": "2", "Qty": 7, "Total": 3.0,
             "Total@odata.type": DBL, "Sku": "20", "Sku@odata.type": I64, "Active": False,
             "Name": "bob"},
            {"PartitionKey": "b", "RowKey": "1", "Total": 99.0, "Total@odata.type": DBL,
             "Active": True, "Name": "O'Neil"},
        ]
        for e in rows:
            http.insert("orders", e, headers={"Prefer": "return-no-content"})
        table = [
            ("PartitionKey eq 'a'", ["a/1", "a/2"]),
            ("PartitionKey eq 'a' and RowKey eq '2'", ["a/2"]),
            ("Qty gt 3", ["a/2"]),
            ("Qty ne 3", ["a/2"]),
            ("not (Qty eq 3)", ["a/2", "b/1"]),
            ("Total ge 12", ["a/1", "b/1"]),
            ("Sku eq 10", ["a/1"]),
            ("Qty eq 3.0", []),
            ("Active", ["a/1", "b/1"]),
            ("not Active", ["a/2"]),
            ("Name eq 'O''Neil'", ["b/1"]),
            ("Name gt 'B'", ["a/2", "b/1"]),
            ("Name eq 'ann'", []),
            ("Timestamp ge datetime'2000-01-01T00:00:00Z'", ["a/1", "a/2", "b/1"]),
            ("Qty eq 'x'", []),
            ("(PartitionKey eq 'a' or PartitionKey eq 'b') and Active eq true", ["a/1", "b/1"]),
            ("3 lt Qty", ["a/2"]),
            ("Sku eq 10L", ["a/1"]),
            ("Qty eq 3L", []),
        ]
        for text, want in table:
            for lv in LEVELS:
                r = self.raw("orders", [("$filter", q(text))], level=lv)
                got = raw_keys(r)
                got = None if got is None else ["%s/%s" % k for k in got]
                tap.eq((r.status, got), (200, want), "filter example %s: %r" % (lv, text))
        for text, status, code in (("Qty eq Total", 501, "NotImplemented"),
                                   ("Qty eq", 400, "InvalidInput")):
            r = self.raw("orders", [("$filter", q(text))])
            tap.eq((r.status, r.error_code()), (status, code), "filter example: %r -> %d %s"
                   % (text, status, code))
        # point query vs filter query (doc/protocol.md, Point query vs filter query)
        r = self.http.get_entity("orders", "a", "9")
        tap.eq((r.status, r.error_code()), (404, "ResourceNotFound"),
               "point query of a missing entity -> 404 ResourceNotFound")
        r = self.raw("orders", [("$filter", q("PartitionKey eq 'a' and RowKey eq '9'"))])
        tap.eq((r.status, value_of(r)), (200, []), "filter for a missing entity -> 200, empty")
        r = self.raw("nosuchtable", [("$filter", q("PartitionKey eq 'a'"))])
        tap.eq((r.status, r.error_code()), (404, "TableNotFound"),
               "query of a missing table -> 404 TableNotFound")
        r = self.raw("orders", [("$filter", "Qty+gt+3")])
        tap.eq((r.status, raw_keys(r)), (200, [("a", "2")]), "'+' in $filter is a space")
        r = self.raw("orders", [("$filter", "")])
        tap.eq((r.status, len(value_of(r) or [])), (200, 3), "empty $filter= means no filter")

    def test_select_raw(self):
        tap = self.tap
        base = self.srv.base
        for lv in LEVELS:
            r = self.raw("orders", [("$select", "PartitionKey,Name")], level=lv)
            j = r.json()
            shapes = [[k for k in e if not k.startswith("odata.")] for e in j["value"]]
            tap.eq(shapes, [["PartitionKey", "Name"]] * 3,
                   "%s: $select=PartitionKey,Name returns only those properties" % lv)
            tap.eq([e.get("Name") for e in j["value"]], ["Ann", "bob", "O'Neil"],
                   "%s: $select values" % lv)
            has_etag = [("odata.etag" in e) for e in j["value"]]
            tap.eq(has_etag, [lv != "nometadata"] * 3,
                   "%s: odata.etag %s with $select" % (lv, "kept" if lv != "nometadata"
                                                        else "absent"))
            if lv != "nometadata":
                tap.eq(j.get("odata.metadata"),
                       base + "/$metadata#orders&$select=PartitionKey,Name",
                       "%s: feed odata.metadata carries the select list" % lv)
            else:
                tap.ok("odata.metadata" not in j, "nometadata: no odata.metadata")
            if lv == "fullmetadata":
                tap.ok(all("odata.id" in e and "odata.editLink" in e and "odata.type" in e
                           for e in j["value"]),
                       "fullmetadata: odata.id/editLink/type kept with $select", j)
            r = self.raw("orders", [("$select", "Qty")], level=lv)
            vals = [{k: v for k, v in e.items() if not k.startswith("odata.")}
                    for e in value_of(r)]
            tap.eq(vals, [{"Qty": 3}, {"Qty": 7}, {"Qty": None}],
                   "%s: $select=Qty: no keys or Timestamp; absent -> null" % lv)
        r = self.raw("orders", [("$select", q("Name , Qty,Name")),
                                ("$filter", q("PartitionKey eq 'a'"))])
        vals = [{k: v for k, v in e.items() if not k.startswith("odata.")} for e in value_of(r)]
        tap.eq(vals, [{"Qty": 3, "Name": "Ann"}, {"Qty": 7, "Name": "bob"}],
               "$select with blanks and a duplicate: each once, stored order")
        r = self.raw("orders", [("$select", "*"), ("$top", "1")])
        e = value_of(r)[0]
        tap.ok({"PartitionKey", "RowKey", "Timestamp", "Qty", "Total", "Sku", "Active",
                "Name"} <= set(e), "$select=* returns every property", e)
        r = self.raw("orders", [("$select", q("Na-me"))])
        tap.eq((r.status, r.error_code()), (400, "InvalidInput"),
               "$select with an invalid name -> 400 InvalidInput")
        # Empty $select= and $filter= are absent options (issue 14 point 3):
        # Azure Storage Explorer sends "?$select=&$filter=..." (Azurite#1573).
        full = self.raw("orders", [])
        for params, want, what in (
                ([("$select", ""), ("$filter", q("PartitionKey eq 'a'"))],
                 [e for e in full.json()["value"] if e["PartitionKey"] == "a"],
                 "$select=&$filter=PartitionKey eq 'a'"),
                ([("$select", ""), ("$filter", "")], full.json()["value"],
                 "$select=&$filter="),
                ([("$select", "")], full.json()["value"], "$select="),
                ([("$filter", "")], full.json()["value"], "$filter=")):
            r = self.raw("orders", params)
            tap.eq((r.status, r.h("Content-Type")), (200, h.JSON_CT % "minimalmetadata"),
                   "%s -> 200 JSON" % what)
            j = r.json()
            tap.eq(j.get("value"), want, "%s: every property of the matching entities" % what)
            tap.eq(j.get("odata.metadata"), base + "/$metadata#orders",
                   "%s: odata.metadata without a $select" % what)
        r = self.http.get("/orders(PartitionKey='a',RowKey='1')?$select=")
        tap.ok(r.status == 200 and r.json().get("odata.metadata")
               == base + "/$metadata#orders/@Element" and "Qty" in r.json(),
               "Get Entity with $select= -> 200, the whole entity", r.body[:300])
        r = self.http.get("/Tables?$select=&$filter=")
        tap.ok(r.status == 200 and "orders" in [e.get("TableName") for e in value_of(r) or []],
               "Query Tables with $select=&$filter= -> 200, every table", r.body[:300])
        # $top= with no value stays 400: the service's answer is unknown.
        r = self.raw("orders", [("$select", ""), ("$top", "")])
        tap.eq((r.status, r.error_code()), (400, "InvalidInput"), "$top= -> 400 InvalidInput")
        # SDK select over orders at every level
        for lv in LEVELS:
            got = [dict(e) for e in self.table("orders", lv).list_entities(select="Name,Qty")]
            tap.eq(got, [{"Name": "Ann", "Qty": 3}, {"Name": "bob", "Qty": 7},
                         {"Name": "O'Neil", "Qty": None}],
                   "%s: SDK list_entities(select='Name,Qty')" % lv)

    def test_top_zero(self):
        """$top=0 (Azure Storage Explorer sends it): 200 with no entities
        and no continuation, in every format; the other values of $top
        (doc/protocol-notes.md, "$top")."""
        tap = self.tap
        cont_hdrs = ("x-ms-continuation-NextPartitionKey", "x-ms-continuation-NextRowKey")
        for lv in LEVELS:
            r = self.raw("orders", [("$top", "0")], level=lv)
            tap.eq((r.status, r.h("Content-Type"), value_of(r)),
                   (200, h.JSON_CT % lv, []), "%s: $top=0 -> 200, no entities" % lv)
            tap.ok(not any(r.has(x) for x in cont_hdrs),
                   "%s: $top=0 -> no continuation headers" % lv, r.headers)
            if lv != "nometadata":
                tap.eq(r.json().get("odata.metadata"), self.srv.base + "/$metadata#orders",
                       "%s: $top=0 -> the feed's odata.metadata" % lv)
        atom = h.Http(self.srv, version="2013-08-15", accept="application/atom+xml")
        r = atom.get("/orders()?$top=0")
        tap.ok(r.status == 200 and r.h("Content-Type", "").startswith("application/atom+xml")
               and b"<feed" in r.body and b"<entry" not in r.body
               and not any(r.has(x) for x in cont_hdrs),
               "Atom: $top=0 -> 200, a feed without entries or continuation",
               "status %s %r %r" % (r.status, r.headers, r.body[:400]))
        # Azure Storage Explorer's own query (Azure/Azurite#1428)
        r = self.raw("orders", [("$select", ""), ("$filter", q("PartitionKey eq 'a'")),
                                ("$top", "0")])
        tap.eq((r.status, value_of(r), any(r.has(x) for x in cont_hdrs)), (200, [], False),
               "?$select=&$filter=PartitionKey eq 'a'&$top=0 -> 200, empty, no continuation")
        # with a continuation token: still empty, and nothing to follow, so a
        # client looping on continuation headers stops after one page
        r = self.raw("orders", [("$top", "0"), ("NextPartitionKey", q(tok("a"))),
                                ("NextRowKey", q(tok("2")))])
        tap.eq((r.status, value_of(r), any(r.has(x) for x in cont_hdrs)), (200, [], False),
               "$top=0 with NextPartitionKey/NextRowKey -> 200, empty, no continuation")
        r = self.raw("orders", [("$top", "00")])
        tap.eq((r.status, value_of(r)), (200, []), "$top=00 -> 200, no entities")
        r = self.raw("orders", [("$top", "0"), ("$filter", q("Qty eq"))])
        tap.eq((r.status, r.error_code()), (400, "InvalidInput"),
               "$top=0 with a bad $filter -> 400 InvalidInput (the options are still checked)")
        r = self.http.get("/nosuchtable()?$top=0")
        tap.eq((r.status, r.error_code()), (404, "TableNotFound"),
               "$top=0 on a missing table -> 404 TableNotFound")
        for top in ("+1", " 1", "1 ", "0x1", "1e2", "-0", "1000000000000000000000"):
            r = self.raw("orders", [("$top", q(top))])
            tap.eq((r.status, r.error_code()), (400, "InvalidInput"),
                   "$top=%r -> 400 InvalidInput" % top)
        # Query Tables
        r = self.http.get("/Tables?$top=0")
        tap.eq((r.status, value_of(r), r.has("x-ms-continuation-NextTableName")),
               (200, [], False), "Query Tables $top=0 -> 200, no tables, no NextTableName")
        r = self.http.get("/Tables?$top=0&NextTableName=%s" % q(tok("orders")))
        tap.eq((r.status, value_of(r), r.has("x-ms-continuation-NextTableName")),
               (200, [], False), "Query Tables $top=0 with NextTableName -> 200, empty")
        r = atom.get("/Tables?$top=0")
        tap.ok(r.status == 200 and b"<feed" in r.body and b"<entry" not in r.body
               and not r.has("x-ms-continuation-NextTableName"),
               "Atom Query Tables $top=0 -> 200, a feed without entries",
               "status %s %r" % (r.status, r.body[:400]))
        r = self.http.get("/Tables?$top=1")
        tap.ok(r.status == 200 and len(value_of(r) or []) == 1
               and r.has("x-ms-continuation-NextTableName"),
               "Query Tables $top=1 -> one table and NextTableName", r.body[:300])

    def test_errors(self):
        tap = self.tap
        cases = [
            ("I eq 1 eq 2", 400, "InvalidInput"),
            ("I eq D", 501, "NotImplemented"),
            ("1 eq 1", 501, "NotImplemented"),
            ("true eq true", 501, "NotImplemented"),
            ("I eq null", 400, "InvalidInput"),
            ("S eq 'abc", 400, "InvalidInput"),
            ("I EQ 3", 400, "InvalidInput"),
            ("I eq 3 AND B", 400, "InvalidInput"),
            ("startswith(S,'A')", 501, "NotImplemented"),
            ("I eq", 400, "InvalidInput"),
            ("(I eq 3", 400, "InvalidInput"),
            ("I eq 3)", 400, "InvalidInput"),
            ("G eq guid'xyz'", 400, "InvalidInput"),
            ("T eq datetime'2024-13-01T00:00:00Z'", 400, "InvalidInput"),
            ("X eq X'0a0'", 400, "InvalidInput"),
            ("I eq 3 and", 400, "InvalidInput"),
        ]
        for text, status, code in cases:
            r = self.raw("qall", [("$filter", q(text))])
            tap.eq((r.status, r.error_code()), (status, code), "$filter=%r -> %d %s"
                   % (text, status, code))
        # A filter that is not Boolean: 400 InvalidInput with the service's
        # message as a whole filter (Azure/Azurite#1185), the generic one
        # under and / or / not (issue 14 point 5; it was 501).
        whole = "The $filter expression must evaluate to a single boolean value."
        for text, msg in (("(1)", whole), ("1", whole), ("'x'", whole), ("PartitionKey", whole),
                          ("(RowKey)", whole), ("Timestamp", whole),
                          ("datetime'2024-06-01T00:00:00Z'", whole),
                          ("1 and B", "One of the request inputs is not valid."),
                          ("not 'x'", "One of the request inputs is not valid."),
                          ("B or PartitionKey", "One of the request inputs is not valid.")):
            r = self.raw("qall", [("$filter", q(text))])
            code, got = r.error()
            got = got.split("\n")[0] if got else got
            tap.eq((r.status, code, got), (400, "InvalidInput", msg),
                   "$filter=%r -> 400 InvalidInput, message" % text)
            tap.ok(r.h("Content-Type") == h.JSON_CT % "minimalmetadata"
                   and r.h("x-ms-error-code") in (None, "InvalidInput")
                   and r.has("x-ms-request-id"),
                   "$filter=%r: JSON error headers" % text,
                   "Content-Type %r" % r.h("Content-Type"))
        # $filter=false and $filter=true as raw requests: an empty feed and
        # the whole table, 200 with the normal headers.
        for text, want in (("false", []), ("true", keys_of(self.qall)),
                           ("(true and RowKey eq '1') or (false or PartitionKey eq 'b')",
                            keys_of([e for e in self.qall
                                     if OR(P("RowKey", "eq", st("1")),
                                           P("PartitionKey", "eq", st("b")))(e)]))):
            r = self.raw("qall", [("$filter", q(text))])
            tap.eq((r.status, raw_keys(r), r.h("Content-Type")),
                   (200, want, h.JSON_CT % "minimalmetadata"),
                   "raw $filter=%r -> 200, the right entities" % text)
            tap.ok(r.json().get("odata.metadata") == self.srv.base + "/$metadata#qall",
                   "raw $filter=%r: odata.metadata of the feed" % text, r.body[:300])
        # arithmetic: 501 NotImplemented [REC], 400 InvalidInput acceptable (doc/protocol.md, Filter grammar)
        r = self.raw("qall", [("$filter", q("I add 1 eq 2"))])
        tap.isin((r.status, r.error_code()), [(501, "NotImplemented"), (400, "InvalidInput")],
                 "$filter with arithmetic (add) -> 501 NotImplemented or 400 InvalidInput")
        r = self.raw("qall", [("$filter", q("S eq 'abc"))])
        _, msg = r.error()
        tap.ok(msg is not None and msg.startswith("Syntax error at position ")
               and "S eq 'abc" in msg, "syntax error message names the position and filter",
               msg)
        for top, status in (("1000", 200), ("1", 200), ("1001", 400), ("0", 200), ("-1", 400),
                            ("abc", 400), ("", 400), ("1.5", 400)):
            r = self.raw("qall", [("$top", top)])
            tap.eq(r.status, status, "$top=%s -> %d" % (top, status))
            if status == 400:
                tap.eq(r.error_code(), "InvalidInput", "$top=%s -> InvalidInput" % top)
        r = self.raw("qall", [("$orderby", "I")])
        tap.eq((r.status, r.error_code()), (501, "NotImplemented"), "$orderby -> 501")
        for params, what in (
                ([("NextPartitionKey", q(tok("a"))), ("NextRowKey", "")], "empty NextRowKey"),
                ([("NextPartitionKey", "")], "empty NextPartitionKey"),
                ([("NextPartitionKey", q("1!5!YQ--"))], "token length mismatch"),
                ([("NextPartitionKey", q("1!4!@@@@"))], "token with bad base64"),
                ([("NextPartitionKey", q("1!x!YQ--"))], "token with a bad length"),
                ([("NextPartitionKey", q(tok("a"))), ("NextRowKey", q("1!4!YQ"))],
                 "NextRowKey token too short"),
                ([("NextRowKey", q(tok("1")))], "NextRowKey without NextPartitionKey")):
            r = self.raw("qall", params)
            tap.eq((r.status, r.error_code()), (400, "InvalidInput"), "%s -> 400 InvalidInput"
                   % what)

    # -- paging over 2,500 entities ------------------------------------------------
    def load_paged(self, name="paged"):
        """5 partitions x 500 rows: Idx (0..2499), Mod = Idx % 250."""
        tap = self.tap
        tc = self.svc.create_table(name)
        ents = []
        for p in range(5):
            for r in range(500):
                i = p * 500 + r
                ents.append({"PartitionKey": "P%d" % p, "RowKey": "r%04d" % r, "Idx": i,
                             "Mod": i % 250})
        for k in range(0, len(ents), 100):
            tc.submit_transaction([("create", e) for e in ents[k:k + 100]])
        got = [e["Idx"] for e in tc.list_entities(select="Idx")]
        tap.eq(got, list(range(2500)), "%s: 2,500 entities loaded by 25 batches" % name)
        return ents

    def follow_raw(self, table, params, http=None, limit=100):
        """Follows a raw query to the end: [(status, keys, npk, nrk)]."""
        pages, cont = [], []
        while len(pages) < limit:
            r = self.raw(table, params + cont, http=http)
            npk = r.h("x-ms-continuation-NextPartitionKey")
            nrk = r.h("x-ms-continuation-NextRowKey")
            pages.append((r.status, raw_keys(r), npk, nrk))
            if r.status != 200 or not npk:
                break
            cont = [("NextPartitionKey", q(npk))] + ([("NextRowKey", q(nrk))] if nrk else [])
        return pages

    def check_raw_paging(self, table, ents, params, pred, limit, budget, what, cands=None):
        """Raw pages, tokens and headers equal the simulated ones."""
        cands = ents if cands is None else cands
        want = expected_pages(cands, pred, limit, budget)
        got = self.follow_raw(table, params)
        key = lambda i: (cands[i]["PartitionKey"], cands[i]["RowKey"])  # noqa: E731
        want_pages = [(200, [key(i) for i in items],
                       tok(cands[n]["PartitionKey"]) if n is not None else None,
                       tok(cands[n]["RowKey"]) if n is not None else None)
                      for items, n in want]
        self.tap.eq(got, want_pages, "raw %s: %d pages, exact entities and tokens"
                    % (what, len(want_pages)))
        flat = [k for p in got for k in (p[1] or [])]
        self.tap.eq(flat, [key(i) for i in range(len(cands)) if pred(cands[i])],
                    "raw %s: every match exactly once, in order" % what)
        return got

    def test_paging(self):
        tap = self.tap
        ents = self.load_paged()
        allp = lambda e: True  # noqa: E731
        pages = self.check_raw_paging("paged", ents, [], allp, 1000, 0, "no filter")
        tap.eq([len(p[1]) for p in pages], [1000, 1000, 500], "raw no filter: 1000, 1000, 500")
        tap.ok(all(re.match(r"^1!\d+![A-Za-z0-9+/]+-*$", p[2]) for p in pages[:-1]),
               "tokens have the 1!<n>!<base64 with - for => form", pages)
        self.check_raw_paging("paged", ents, [("$top", "300")], allp, 300, 0, "$top=300")
        self.check_raw_paging("paged", ents, [("$top", "1000")], allp, 1000, 0, "$top=1000")
        mod = lambda e: e["Mod"] < 50  # noqa: E731
        self.check_raw_paging("paged", ents, [("$filter", q("Mod lt 50")), ("$top", "120")],
                              mod, 120, 0, "Mod lt 50 with $top=120")
        self.check_raw_paging("paged", ents, [("$filter", q("Mod lt 50"))], mod, 1000, 0,
                              "Mod lt 50 (500 matches, one page)")
        self.check_raw_paging("paged", ents, [("$filter", q("Idx ge 0 and not (Mod eq 0)")),
                                              ("$select", "PartitionKey,RowKey,Idx")],
                              lambda e: e["Mod"] != 0, 1000, 0, "2,490 matches")
        part = [e for e in ents if e["PartitionKey"] in ("P1", "P3")]
        self.check_raw_paging("paged", ents,
                              [("$filter", q("PartitionKey eq 'P3' or PartitionKey eq 'P1'")),
                               ("$top", "333")],
                              allp, 333, 0, "two partitions, $top=333", cands=part)
        # the 1001st entity of a 1001-entity result: 1000 + 1 (doc/protocol.md, Continuation)
        r = self.raw("paged", [("$filter", q("Idx le 1000"))])
        tap.eq((len(value_of(r)), r.h("x-ms-continuation-NextPartitionKey"),
                r.h("x-ms-continuation-NextRowKey")),
               (1000, tok("P2"), tok("r0000")), "1,001 matches: 1000 + continuation headers")
        # resume forms
        r = self.raw("paged", [("NextPartitionKey", q(tok("P3")))])
        tap.eq((raw_keys(r)[0], len(value_of(r)), r.h("x-ms-continuation-NextPartitionKey")),
               (("P3", "r0000"), 1000, None),
               "NextPartitionKey alone resumes at the partition start; last page, no token")
        r = self.raw("paged", [("NextPartitionKey", tok("P3")), ("NextRowKey", tok("r0100")),
                               ("$top", "2")])
        tap.eq(raw_keys(r), [("P3", "r0100"), ("P3", "r0101")],
               "unencoded token (with '!') resumes exactly at its key")
        r = self.raw("paged", [("NextPartitionKey", q(tok("P3"))),
                               ("NextRowKey", q(tok("r0100"))), ("$top", "2")])
        tap.eq(raw_keys(r), [("P3", "r0100"), ("P3", "r0101")],
               "percent-encoded token (1%21...) resumes exactly at its key")
        r = self.raw("paged", [("NextPartitionKey", "P3"), ("NextRowKey", "r0100"),
                               ("$top", "2")])
        tap.eq(raw_keys(r), [("P3", "r0100"), ("P3", "r0101")],
               "a raw key (not 1!...) as token is taken literally")
        r = self.raw("paged", [("NextPartitionKey", q(tok("P3"))),
                               ("NextRowKey", q(tok("r0100x"))), ("$top", "2")])
        tap.eq(raw_keys(r), [("P3", "r0101"), ("P3", "r0102")],
               "a token between two keys resumes at the next key")
        r = self.raw("paged", [("NextPartitionKey", q(tok("P9"))), ("NextRowKey", q(tok("x")))])
        tap.eq((r.status, value_of(r), r.has("x-ms-continuation-NextPartitionKey")),
               (200, [], False), "a token past the end: empty last page")
        r = self.raw("paged", [("$filter", q("PartitionKey eq 'P1'")),
                               ("NextPartitionKey", q(tok("P3"))), ("NextRowKey", q(tok("r0")))])
        tap.eq((r.status, value_of(r)), (200, []),
               "a token after the filter's partition: empty, no token")
        tap.ok(not r.has("x-ms-continuation-NextPartitionKey"), "... and no continuation")
        self.test_paging_sdk(ents)

    def test_paging_sdk(self, ents):
        tap = self.tap
        allkeys = [(e["PartitionKey"], e["RowKey"]) for e in ents]
        for lv in LEVELS:
            tc = self.table("paged", lv)
            pages = [sdk_keys(p) for p in tc.list_entities().by_page()]
            tap.eq([len(p) for p in pages], [1000, 1000, 500],
                   "%s: SDK list_entities().by_page(): 1000, 1000, 500" % lv)
            tap.eq([k for p in pages for k in p], allkeys,
                   "%s: SDK by_page returns each of 2,500 exactly once, in order" % lv)
            tap.eq(sdk_keys(tc.list_entities()), allkeys,
                   "%s: SDK list_entities() iterates all 2,500 in order" % lv)
            pages = [sdk_keys(p) for p in tc.list_entities(results_per_page=300).by_page()]
            tap.eq([len(p) for p in pages], [300] * 8 + [100],
                   "%s: results_per_page=300: 8 x 300 + 100" % lv)
            tap.eq([k for p in pages for k in p], allkeys,
                   "%s: results_per_page=300 pages cover all in order" % lv)
            want = [(e["PartitionKey"], e["RowKey"]) for e in ents if e["Mod"] < 50]
            pages = [sdk_keys(p) for p in
                     tc.query_entities("Mod lt @m", parameters={"m": 50},
                                       results_per_page=120).by_page()]
            tap.eq([len(p) for p in pages], [120, 120, 120, 120, 20],
                   "%s: query_entities(Mod lt 50, results_per_page=120) page sizes" % lv)
            tap.eq([k for p in pages for k in p], want,
                   "%s: ... each of the 500 matches once, in order" % lv)
        tc = self.table("paged")
        # resume a by_page iteration from a continuation token
        pager = tc.list_entities(results_per_page=700).by_page()
        first = sdk_keys(next(pager))
        token = pager.continuation_token
        tap.eq(token, {"PartitionKey": tok("P1"), "RowKey": tok("r0200")},
               "SDK continuation_token after 700 holds the service's tokens for P1/r0200")
        rest = [sdk_keys(p) for p in
                tc.list_entities(results_per_page=700).by_page(continuation_token=token)]
        tap.eq(first + [k for p in rest for k in p], allkeys,
               "SDK by_page(continuation_token=...) continues exactly there")
        tap.eq([len(p) for p in rest], [700, 700, 400], "... with pages 700, 700, 400")
        pager = tc.query_entities("PartitionKey ge @a and PartitionKey lt @b",
                                  parameters={"a": "P1", "b": "P3"},
                                  results_per_page=999).by_page()
        pages = [sdk_keys(p) for p in pager]
        tap.eq([len(p) for p in pages], [999, 1],
               "SDK PartitionKey range, results_per_page=999: 999 + 1")
        tap.eq([k for p in pages for k in p], allkeys[500:1500],
               "... the 1,000 entities of P1 and P2 in order")

    # -- scan budget ----------------------------------------------------------------
    def test_budget(self):
        tap = self.tap
        ents = self.load_paged("budget")
        allp = lambda e: True  # noqa: E731
        pages = self.check_raw_paging("budget", ents, [], allp, 1000, BUDGET,
                                      "budget %d, no filter" % BUDGET)
        tap.eq([len(p[1]) for p in pages], [BUDGET] * 25,
               "budget %d, no filter: 25 pages of %d" % (BUDGET, BUDGET))
        m0 = lambda e: e["Mod"] == 0  # noqa: E731
        pages = self.check_raw_paging("budget", ents, [("$filter", q("Mod eq 0"))], m0, 1000,
                                      BUDGET, "budget %d, Mod eq 0" % BUDGET)
        sizes = [len(p[1]) for p in pages]
        tap.ok(sizes.count(0) >= 10 and all(p[2] for p in pages[:-1] if not p[1]),
               "budget: pages that matched nothing (but did not finish) are empty and carry "
               "a token", sizes)
        self.check_raw_paging("budget", ents, [("$filter", q("Mod eq 0")), ("$top", "1")], m0,
                              1, BUDGET, "budget %d, Mod eq 0, $top=1" % BUDGET)
        self.check_raw_paging("budget", ents, [("$top", "30")], allp, 30, BUDGET,
                              "budget %d, $top=30" % BUDGET)
        self.check_raw_paging("budget", ents, [("$top", str(BUDGET))], allp, BUDGET, BUDGET,
                              "budget %d, $top=%d" % (BUDGET, BUDGET))
        m = lambda e: e["Mod"] in (0, 99, 100, 199)  # noqa: E731
        self.check_raw_paging("budget", ents,
                              [("$filter", q("Mod eq 0 or Mod eq 99 or Mod eq 100 or Mod eq 199"))],
                              m, 1000, BUDGET, "budget %d, matches at page edges" % BUDGET)
        part = [e for e in ents if e["PartitionKey"] == "P2"]
        self.check_raw_paging("budget", ents,
                              [("$filter", q("PartitionKey eq 'P2' and Mod eq 0"))], m0, 1000,
                              BUDGET, "budget %d, one partition" % BUDGET, cands=part)
        two = [e for e in ents if e["PartitionKey"] in ("P0", "P4")]
        self.check_raw_paging("budget", ents,
                              [("$filter", q("(PartitionKey eq 'P4' or PartitionKey eq 'P0')"
                                             " and Mod eq 1"))],
                              lambda e: e["Mod"] == 1, 1000, BUDGET,
                              "budget %d, two partitions" % BUDGET, cands=two)
        pts = [e for e in ents if (e["PartitionKey"], e["RowKey"]) in
               (("P0", "r0007"), ("P3", "r0400"))]
        self.check_raw_paging("budget", ents,
                              [("$filter", q("(PartitionKey eq 'P0' and RowKey eq 'r0007') or "
                                             "(PartitionKey eq 'P3' and RowKey eq 'r0400')"))],
                              allp, 1000, BUDGET, "budget %d, two points" % BUDGET, cands=pts)
        # the SDK follows empty pages to the end
        for lv in LEVELS:
            tc = self.table("budget", lv)
            pages = [sdk_keys(p) for p in tc.query_entities("Mod eq 0").by_page()]
            want = expected_pages(ents, m0, 1000, BUDGET)
            tap.eq([len(p) for p in pages], [len(items) for items, _ in want],
                   "%s: SDK by_page under budget %d: page sizes incl. empty pages" % (lv, BUDGET))
            tap.eq([k for p in pages for k in p],
                   [(e["PartitionKey"], e["RowKey"]) for e in ents if m0(e)],
                   "%s: SDK under budget returns the 10 matches once, in order" % lv)
            got = sdk_keys(tc.list_entities(results_per_page=70))
            tap.eq(got, [(e["PartitionKey"], e["RowKey"]) for e in ents],
                   "%s: SDK list_entities(results_per_page=70) under budget: all 2,500" % lv)

    # -- Query Tables ---------------------------------------------------------------
    def test_tables(self):
        tap = self.tap
        http = self.http
        names = ["orders", "alpha", "Beta", "gamma", "ord1", "ORD2", "ore", "orb"]
        for n in names:
            tap.eq(http.create_table(n).status, 201, "create table %s" % n)
        ordered = sorted(names, key=str.lower)

        def tnames(r):
            v = value_of(r)
            return None if v is None else [e.get("TableName") for e in v]

        for lv in LEVELS:
            hl = h.Http(self.srv, accept=h.ACCEPT[lv])
            r = hl.get("/Tables")
            tap.eq((r.status, tnames(r)), (200, ordered), "%s: Query Tables sorted by name" % lv)
            r = hl.get("/Tables?$filter=%s" % q("TableName eq 'orders'"))
            tap.eq(tnames(r), ["orders"], "%s: TableName eq 'orders'" % lv)
        for text, want in (
                ("TableName ge 'ord' and TableName lt 'ore'", ["ord1", "orders"]),
                ("TableName ge 'orb' and TableName lt 'ore'", ["orb", "ord1", "orders"]),
                ("TableName eq 'Beta'", ["Beta"]),
                ("TableName eq 'beta'", []),
                ("TableName eq 'ORD2'", ["ORD2"]),
                ("TableName gt 'a'", ["alpha", "gamma", "ord1", "orders", "ore", "orb"]),
                ("TableName lt 'a'", ["Beta", "ORD2"]),
                ("TableName ne 'orders' and TableName ge 'o'",
                 ["ord1", "ore", "orb"]),
                ("TableName eq 'alpha' or TableName eq 'gamma'", ["alpha", "gamma"]),
                ("not (TableName eq 'alpha')", [n for n in ordered if n != "alpha"]),
                ("Foo eq 'x'", []),
                ("TableName eq 'alpha' and Foo eq 'x'", []),
                # the literals true and false (issue 14 point 5)
                ("true", ordered),
                ("false", []),
                ("false or TableName eq 'alpha'", ["alpha"]),
                ("true and not false and TableName eq 'gamma'", ["gamma"])):
            r = http.get("/Tables?$filter=%s" % q(text))
            got = tnames(r)
            want = [n for n in ordered if n in want]
            tap.eq((r.status, got), (200, want), "Query Tables $filter=%r" % text)
        for text, msg in (("TableName", "The $filter expression must evaluate to a single "
                                        "boolean value."),
                          ("(1)", "The $filter expression must evaluate to a single boolean "
                                  "value."),
                          ("true and 'x'", "One of the request inputs is not valid.")):
            r = http.get("/Tables?$filter=%s" % q(text))
            code, got = r.error()
            tap.eq((r.status, code, got.split("\n")[0] if got else got),
                   (400, "InvalidInput", msg), "Query Tables $filter=%r -> 400 InvalidInput" % text)
        # case-sensitive: ORD2 does not match; 4 matches in 2 pages of 2
        flt = q("TableName ge 'o' and TableName lt 'p'")
        r = http.get("/Tables?$filter=%s&$top=2" % flt)
        tap.eq((tnames(r), r.h("x-ms-continuation-NextTableName")),
               (["orb", "ord1"], tok("orders")),
               "$top=2 over 4 matches: 2 entries + NextTableName naming the next match")
        r = http.get("/Tables?$filter=%s&$top=2&NextTableName=%s" % (flt, q(tok("orders"))))
        tap.eq((tnames(r), r.has("x-ms-continuation-NextTableName")),
               (["orders", "ore"], False), "follow-up page: the last 2, no continuation")
        # Query Tables (doc/protocol.md, $top): $top=2 over 3 tables, then the rest
        flt = q("TableName ge 'ord' and TableName lt 'orf'")
        r = http.get("/Tables?$filter=%s&$top=2" % flt)
        tap.eq((tnames(r), r.h("x-ms-continuation-NextTableName")),
               (["ord1", "orders"], tok("ore")), "$top=2 over 3 tables: 2 + NextTableName")
        r = http.get("/Tables?$filter=%s&$top=2&NextTableName=%s"
                     % (flt, q(r.h("x-ms-continuation-NextTableName") or "")))
        tap.eq((tnames(r), r.has("x-ms-continuation-NextTableName")), (["ore"], False),
               "follow-up with NextTableName: the remaining table, no continuation")
        # every page of an unfiltered listing
        seen, cont, tokens = [], None, []
        for _ in range(10):
            r = http.get("/Tables?$top=3" + ("&NextTableName=" + q(cont) if cont else ""))
            seen += tnames(r) or []
            cont = r.h("x-ms-continuation-NextTableName")
            if not cont:
                break
            tokens.append(cont)
        tap.eq(seen, ordered, "Query Tables $top=3 followed to the end lists each table once")
        tap.eq(tokens, [tok(ordered[3].lower()), tok(ordered[6].lower())],
               "NextTableName tokens name the next table, lower-cased")
        for bad in ("", q("1!9!xx"), q("1!4!@@@@")):
            r = http.get("/Tables?NextTableName=%s" % bad)
            tap.eq((r.status, r.error_code()), (400, "InvalidInput"),
                   "NextTableName=%r -> 400 InvalidInput" % bad)
        for top in ("1001", "x", "-1", "", "1.5"):
            r = http.get("/Tables?$top=%s" % top)
            tap.eq((r.status, r.error_code()), (400, "InvalidInput"),
                   "Query Tables $top=%s -> 400 InvalidInput" % top)
        # the SDK
        svc = self.svc
        tap.eq([t.name for t in svc.list_tables()], ordered, "SDK list_tables")
        pages = [[t.name for t in p] for p in svc.list_tables(results_per_page=3).by_page()]
        tap.eq(pages, [ordered[0:3], ordered[3:6], ordered[6:]],
               "SDK list_tables(results_per_page=3).by_page()")
        got = [t.name for t in svc.query_tables("TableName ge @a and TableName lt @b",
                                                parameters={"a": "ord", "b": "ore"})]
        tap.eq(got, ["ord1", "orders"], "SDK query_tables with parameters (prefix idiom)")
        pages = [[t.name for t in p] for p in
                 svc.query_tables("TableName ge 'o'", results_per_page=2).by_page()]
        tap.eq(pages, [["orb", "ord1"], ["orders", "ore"]],
               "SDK query_tables(results_per_page=2).by_page() (case-sensitive filter)")
        pager = svc.list_tables(results_per_page=5).by_page()
        first = [t.name for t in next(pager)]
        token = pager.continuation_token
        rest = [t.name for p in svc.list_tables(results_per_page=5).by_page(
            continuation_token=token) for t in p]
        tap.eq((first, token, rest), (ordered[:5], tok(ordered[5].lower()), ordered[5:]),
               "SDK list_tables by_page(continuation_token=...) resumes exactly")


def run_server(tap, args, fns, limit=240):
    try:
        srv = h.Server(args=args).start()
    except h.ServerError as e:
        tap.ok(False, "server %s starts" % " ".join(args), str(e))
        return
    tap.ok(True, "server %s starts on port %d" % (" ".join(args), srv.port))
    dog = h.watchdog(limit, srv, tap)
    t = Tests(tap, srv)
    for fn in fns:
        tap.run(getattr(t, fn))
    dog.cancel()
    srv.stop_and_check(tap)


def main():
    tap = h.Tap()
    if IMPORT_ERROR is not None:
        tap.ok(False, "import the Azure Tables SDK (Debian python3-azure)", str(IMPORT_ERROR))
        tap.done()
    run_server(tap, [], ["load_qall", "test_comparisons", "test_logic", "test_timestamp",
                         "test_parameters", "test_select_top_sdk", "test_errors",
                         "test_spec_orders", "test_select_raw", "test_top_zero",
                         "test_paging"])
    run_server(tap, ["--scan-budget", str(BUDGET)], ["test_budget"])
    run_server(tap, [], ["test_tables"])
    tap.done()


if __name__ == "__main__":
    main()
