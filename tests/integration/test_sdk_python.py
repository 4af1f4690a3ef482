#!/usr/bin/python3
"""Integration test: the real Python Azure Tables SDK (Debian python3-azure,
azure-data-tables 12.4.2) against tabled, using the connection string the
server printed.  Covers the table and entity life cycle, the error codes the
SDK maps to exceptions, and a round trip of every Edm type.  Queries with
$filter or page sizes are left to a later test.  Prints TAP."""
import datetime
import json
import math
import os
import sys
import uuid

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core import MatchConditions
    from azure.core.exceptions import (HttpResponseError, ResourceExistsError,
                                       ResourceNotFoundError)
    from azure.data.tables import (EdmType, EntityProperty, TableClient,
                                   TableServiceClient, UpdateMode)
    IMPORT_ERROR = None
except ImportError as e:  # reported as a failing check below
    IMPORT_ERROR = e

UTC = datetime.timezone.utc
# No retries and bounded socket waits: a misbehaving server must fail a
# check quickly instead of making the SDK back off for minutes.
CLIENT_KW = dict(retry_total=0, connection_timeout=10, read_timeout=20)


def code_of(err):
    """The service error code carried by an SDK exception, as a string.
    Some SDK 12.4.2 paths (create_entity) re-raise azure-core's exception,
    which only reads x-ms-error-code (absent on JSON errors, doc/protocol.md, JSON errors);
    then the code is read from the response body the SDK received."""
    c = getattr(err, "error_code", None)
    c = getattr(c, "value", c)
    if c is None and getattr(err, "response", None) is not None:
        try:
            c = json.loads(err.response.text())["odata.error"]["code"]
        except (ValueError, KeyError, TypeError):
            pass
    return c


def expect_error(tap, what, fn, exc_type, status, code):
    """Runs fn, which must raise exc_type with that HTTP status and code."""
    try:
        fn()
    except exc_type as e:
        tap.eq((e.status_code, code_of(e)), (status, code), what)
        return e
    except Exception as e:  # noqa: BLE001 - wrong exception type
        tap.ok(False, what, "raised %s: %s" % (type(e).__name__, str(e)[:800]))
        return e
    tap.ok(False, what, "no exception raised")
    return None


class SdkTests:
    def __init__(self, tap, srv, conn):
        self.tap = tap
        self.srv = srv
        self.conn = conn
        self.svc = TableServiceClient.from_connection_string(conn, **CLIENT_KW)

    def table(self, name):
        return TableClient.from_connection_string(self.conn, name, **CLIENT_KW)

    def table_names(self):
        return [t.name for t in self.svc.list_tables()]

    # -- tables ----------------------------------------------------------------
    def test_tables(self):
        tap = self.tap
        tap.eq(self.table_names(), [], "list_tables on a fresh server is empty")
        tc = self.svc.create_table("SdkTable1")
        tap.eq(tc.table_name, "SdkTable1", "create_table returns a client for the table")
        tap.ok("SdkTable1" in self.table_names(), "list_tables shows the new table, casing kept",
               self.table_names())
        expect_error(tap, "create_table of an existing table -> 409 TableAlreadyExists",
                     lambda: self.svc.create_table("SdkTable1"), ResourceExistsError, 409,
                     "TableAlreadyExists")
        expect_error(tap, "create_table differing only in case -> 409 TableAlreadyExists",
                     lambda: self.svc.create_table("sdktable1"), ResourceExistsError, 409,
                     "TableAlreadyExists")
        t = self.svc.create_table_if_not_exists("SdkTable1")
        tap.eq(t.table_name, "SdkTable1", "create_table_if_not_exists on an existing table")
        t2 = self.svc.create_table_if_not_exists("SdkTableTwo")
        tap.eq(t2.table_name, "SdkTableTwo", "create_table_if_not_exists creates a new table")
        names = self.table_names()
        tap.eq(names, sorted(names, key=str.lower), "list_tables is sorted by name")
        tap.ok("SdkTableTwo" in names and "SdkTable1" in names,
               "both tables listed with their original casing", names)
        tap.eq(names.count("SdkTable1") + names.count("sdktable1"), 1,
               "a case-variant duplicate was not created")
        self.svc.delete_table("SdkTableTwo")
        tap.ok("SdkTableTwo" not in self.table_names(), "delete_table removes the table")
        # the SDK turns a 404 on delete into success; anything else raises.
        # The hook sees the answer the SDK swallowed: it must be 404.
        try:
            seen = []
            self.svc.delete_table("SdkTableTwo", raw_response_hook=lambda r: seen.append(
                r.http_response.status_code))
            tap.eq(seen[-1:], [404], "delete_table of a missing table answers 404 (SDK ignores it)")
        except HttpResponseError as e:
            tap.ok(False, "delete_table of a missing table answers 404 (SDK ignores it)",
                   "%s %s" % (e.status_code, code_of(e)))
        # table client delete + re-create: the new table is empty
        tc.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 1})
        tc.delete_table()
        tap.ok("SdkTable1" not in self.table_names(), "TableClient.delete_table removes it")
        tc2 = self.svc.create_table("SdkTable1")
        tap.eq(list(tc2.list_entities()), [], "a re-created table has no entities")
        tc2.delete_table()

    def test_missing_table(self):
        tap = self.tap
        tc = self.table("NoSuchTable")
        ent = {"PartitionKey": "p", "RowKey": "r", "V": 1}
        expect_error(tap, "create_entity in a missing table -> 404 TableNotFound",
                     lambda: tc.create_entity(ent), ResourceNotFoundError, 404, "TableNotFound")
        expect_error(tap, "get_entity in a missing table -> 404 TableNotFound",
                     lambda: tc.get_entity("p", "r"), ResourceNotFoundError, 404, "TableNotFound")
        expect_error(tap, "list_entities of a missing table -> 404 TableNotFound",
                     lambda: list(tc.list_entities()), ResourceNotFoundError, 404,
                     "TableNotFound")
        expect_error(tap, "upsert_entity (merge) in a missing table -> 404 TableNotFound",
                     lambda: tc.upsert_entity(ent), ResourceNotFoundError, 404, "TableNotFound")
        expect_error(tap, "upsert_entity (replace) in a missing table -> 404 TableNotFound",
                     lambda: tc.upsert_entity(ent, mode=UpdateMode.REPLACE),
                     ResourceNotFoundError, 404, "TableNotFound")
        expect_error(tap, "update_entity in a missing table -> 404 TableNotFound",
                     lambda: tc.update_entity(ent), ResourceNotFoundError, 404, "TableNotFound")

    # -- entities ----------------------------------------------------------------
    def test_entity_lifecycle(self):
        tap = self.tap
        tc = self.svc.create_table("SdkEntities")
        ent = {"PartitionKey": "p1", "RowKey": "r1", "Name": "alpha", "Qty": 3, "Keep": True}
        meta = tc.create_entity(ent)
        etag1 = meta.get("etag")
        tap.ok(isinstance(etag1, str) and etag1.startswith("W/\"datetime'"),
               "create_entity returns an etag of the service's form", meta)
        expect_error(tap, "duplicate create_entity -> 409 EntityAlreadyExists",
                     lambda: tc.create_entity(ent), ResourceExistsError, 409,
                     "EntityAlreadyExists")
        got = tc.get_entity("p1", "r1")
        tap.eq(dict(got), ent, "get_entity returns the stored properties")
        tap.eq(got.metadata.get("etag"), etag1, "get_entity etag equals the create etag")
        ts = got.metadata.get("timestamp")
        tap.ok(isinstance(ts, datetime.datetime) and ts.tzinfo is not None,
               "get_entity metadata has a timezone-aware timestamp", repr(ts))
        if isinstance(ts, datetime.datetime):
            now = datetime.datetime.now(UTC)
            tap.ok(abs((now - ts).total_seconds()) < 600, "timestamp is close to now",
                   "%s vs %s" % (ts, now))
        expect_error(tap, "get_entity of a missing entity -> 404 ResourceNotFound",
                     lambda: tc.get_entity("p1", "nope"), ResourceNotFoundError, 404,
                     "ResourceNotFound")

        # REPLACE with the current etag: properties not sent disappear
        tc.update_entity({"PartitionKey": "p1", "RowKey": "r1", "Name": "beta"},
                         mode=UpdateMode.REPLACE, etag=etag1,
                         match_condition=MatchConditions.IfNotModified)
        got = tc.get_entity("p1", "r1")
        tap.eq(dict(got), {"PartitionKey": "p1", "RowKey": "r1", "Name": "beta"},
               "update_entity REPLACE with etag replaces the property set")
        etag2 = got.metadata.get("etag")
        tap.ok(etag2 != etag1, "the etag changes after an update", etag2)
        expect_error(tap, "update_entity with a stale etag -> 412 UpdateConditionNotSatisfied",
                     lambda: tc.update_entity({"PartitionKey": "p1", "RowKey": "r1", "X": 1},
                                              mode=UpdateMode.REPLACE, etag=etag1,
                                              match_condition=MatchConditions.IfNotModified),
                     HttpResponseError, 412, "UpdateConditionNotSatisfied")
        # MERGE with the current etag keeps other properties
        tc.update_entity({"PartitionKey": "p1", "RowKey": "r1", "Qty": 7}, mode=UpdateMode.MERGE,
                         etag=etag2, match_condition=MatchConditions.IfNotModified)
        got = tc.get_entity("p1", "r1")
        tap.eq(dict(got), {"PartitionKey": "p1", "RowKey": "r1", "Name": "beta", "Qty": 7},
               "update_entity MERGE with etag merges")
        etag3 = got.metadata.get("etag")
        expect_error(tap, "MERGE with a stale etag -> 412 UpdateConditionNotSatisfied",
                     lambda: tc.update_entity({"PartitionKey": "p1", "RowKey": "r1", "Qty": 8},
                                              mode=UpdateMode.MERGE, etag=etag2,
                                              match_condition=MatchConditions.IfNotModified),
                     HttpResponseError, 412, "UpdateConditionNotSatisfied")
        # unconditional update (If-Match: *)
        tc.update_entity({"PartitionKey": "p1", "RowKey": "r1", "Name": "gamma"})
        tap.eq(tc.get_entity("p1", "r1")["Name"], "gamma",
               "unconditional update_entity (default MERGE) applies")
        expect_error(tap, "update_entity of a missing entity -> 404 ResourceNotFound",
                     lambda: tc.update_entity({"PartitionKey": "p1", "RowKey": "ghost", "A": 1}),
                     ResourceNotFoundError, 404, "ResourceNotFound")
        expect_error(tap, "update_entity REPLACE of a missing entity -> 404 ResourceNotFound",
                     lambda: tc.update_entity({"PartitionKey": "p1", "RowKey": "ghost", "A": 1},
                                              mode=UpdateMode.REPLACE),
                     ResourceNotFoundError, 404, "ResourceNotFound")

        # upserts
        tc.upsert_entity({"PartitionKey": "p2", "RowKey": "m", "A": 1, "B": "b"},
                         mode=UpdateMode.MERGE)
        tap.eq(dict(tc.get_entity("p2", "m")), {"PartitionKey": "p2", "RowKey": "m", "A": 1,
                                                  "B": "b"}, "upsert MERGE inserts a new entity")
        tc.upsert_entity({"PartitionKey": "p2", "RowKey": "m", "A": 2}, mode=UpdateMode.MERGE)
        tap.eq(dict(tc.get_entity("p2", "m")), {"PartitionKey": "p2", "RowKey": "m", "A": 2,
                                                  "B": "b"}, "upsert MERGE merges into existing")
        tc.upsert_entity({"PartitionKey": "p2", "RowKey": "m", "C": 3.5}, mode=UpdateMode.REPLACE)
        tap.eq(dict(tc.get_entity("p2", "m")), {"PartitionKey": "p2", "RowKey": "m", "C": 3.5},
               "upsert REPLACE replaces an existing entity")
        tc.upsert_entity({"PartitionKey": "p2", "RowKey": "n", "D": "d"}, mode=UpdateMode.REPLACE)
        tap.eq(dict(tc.get_entity("p2", "n")), {"PartitionKey": "p2", "RowKey": "n", "D": "d"},
               "upsert REPLACE inserts a new entity")

        # deletes
        expect_error(tap, "delete_entity with a stale etag -> 412 UpdateConditionNotSatisfied",
                     lambda: tc.delete_entity("p1", "r1", etag=etag3,
                                              match_condition=MatchConditions.IfNotModified),
                     HttpResponseError, 412, "UpdateConditionNotSatisfied")
        cur = tc.get_entity("p1", "r1")
        tc.delete_entity(cur, match_condition=MatchConditions.IfNotModified)
        expect_error(tap, "get after delete_entity(etag) -> 404 ResourceNotFound",
                     lambda: tc.get_entity("p1", "r1"), ResourceNotFoundError, 404,
                     "ResourceNotFound")
        tc.delete_entity("p2", "n")
        expect_error(tap, "get after unconditional delete_entity -> 404 ResourceNotFound",
                     lambda: tc.get_entity("p2", "n"), ResourceNotFoundError, 404,
                     "ResourceNotFound")
        try:
            seen = []
            tc.delete_entity("p2", "n", raw_response_hook=lambda r: seen.append(
                r.http_response.status_code))
            tap.eq(seen[-1:], [404], "delete_entity of a missing entity answers 404 (SDK ignores it)")
        except HttpResponseError as e:
            tap.ok(False, "delete_entity of a missing entity answers 404 (SDK ignores it)",
                   "%s %s" % (e.status_code, code_of(e)))
        tap.eq([(e["PartitionKey"], e["RowKey"]) for e in tc.list_entities()], [("p2", "m")],
               "list_entities after the deletes")
        tc.delete_table()

    def test_keys_and_listing(self):
        tap = self.tap
        tc = self.svc.create_table("SdkListing")
        keys = [("b", "2"), ("a", "z"), ("B", "1"), ("a", "a"), ("b", "10"), ("a", "A"),
                ("O'Neil \"A\"", "r 1-\u00fc"), ("x\u00e9", "\u65e5\u672c"), ("a", "b c")]
        for i, (pk, rk) in enumerate(keys):
            tc.create_entity({"PartitionKey": pk, "RowKey": rk, "N": i})
        listed = [(e["PartitionKey"], e["RowKey"]) for e in tc.list_entities()]
        want = sorted(keys, key=lambda k: (k[0].encode("utf-16-be"), k[1].encode("utf-16-be")))
        tap.eq(listed, want, "list_entities returns (PartitionKey, RowKey) in ordinal order")
        for i, (pk, rk) in enumerate(keys):
            if pk.startswith("O'") or pk.startswith("x"):
                e = tc.get_entity(pk, rk)
                tap.eq((e["PartitionKey"], e["RowKey"], e["N"]), (pk, rk, i),
                       "get_entity with special key characters %r/%r" % (pk, rk))
        for i in range(40):
            tc.upsert_entity({"PartitionKey": "many", "RowKey": "%03d" % i, "I": i})
        rows = [e["I"] for e in tc.list_entities() if e["PartitionKey"] == "many"]
        tap.eq(rows, list(range(40)), "list_entities returns all 40 upserted rows in order")
        tc.delete_table()

    # -- Edm types --------------------------------------------------------------
    def test_edm_round_trip(self):
        tap = self.tap
        tc = self.svc.create_table("SdkTypes")
        dt_us = datetime.datetime(2024, 6, 1, 8, 30, 15, 123456, tzinfo=UTC)
        dt_zero = datetime.datetime(2001, 2, 3, 4, 5, 6, tzinfo=UTC)
        dt_offset = datetime.datetime(2024, 6, 1, 10, 30, 0, 500000,
                                      tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
        dt_old = datetime.datetime(1601, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
        dt_max = datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
        guid = uuid.UUID("4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11")
        big_u = "\u00fc" * 32768          # 32,768 UTF-16 units, 64 KiB of UTF-8
        big_e = "\u20ac" * 32768          # 96 KiB of UTF-8
        big_astral = "\U0001F600" * 16384  # surrogate pairs: 32,768 UTF-16 units
        ent = {
            "PartitionKey": "types", "RowKey": "all",
            "I64": EntityProperty(9007199254740993, EdmType.INT64),
            "I64Min": EntityProperty(-2 ** 63, EdmType.INT64),
            "I64Max": EntityProperty(2 ** 63 - 1, EdmType.INT64),
            "I64Small": EntityProperty(5, EdmType.INT64),
            "I32": 42, "I32Min": -2 ** 31, "I32Max": 2 ** 31 - 1, "I32Zero": 0,
            "DtMicro": dt_us, "DtZero": dt_zero, "DtOffset": dt_offset, "DtOld": dt_old,
            "DtMax": dt_max,
            "Guid": guid,
            "Bin": b"\x00\x01\x02\xff\xfe", "BinEmpty": b"", "BinBig": bytes(range(256)) * 256,
            "DNaN": float("nan"), "DInf": float("inf"), "DNegInf": float("-inf"),
            "DNegZero": -0.0, "DHalf": 12.5, "DIntegral": 5.0, "DBig": 1.5e300,
            "DTiny": 1.2345678901234567e-7, "DPi": math.pi,
            "BTrue": True, "BFalse": False,
            "SAscii": "hello", "SEmpty": "", "SUnicode": "gr\u00fc\u00df \u65e5\u672c \U0001F600 \"q\" \\ /",
            "SCtrl": "tab\tnl\ncr\r", "SBigU": big_u, "SBigE": big_e, "SBigAstral": big_astral,
        }
        tc.create_entity(ent)
        got = tc.get_entity("types", "all")
        listed = [e for e in tc.list_entities() if e["RowKey"] == "all"]
        tap.eq(len(listed), 1, "list_entities finds the typed entity")
        for label, e in (("get_entity", got), ("list_entities", listed[0] if listed else {})):
            self.check_types(label, e, ent, dt_offset)
        # a second write of what we read back keeps every value
        tc.upsert_entity(got, mode=UpdateMode.REPLACE)
        again = tc.get_entity("types", "all")
        self.check_types("re-upserted entity", again, ent, dt_offset)
        tc.delete_table()

    def check_types(self, label, e, ent, dt_offset):
        tap = self.tap
        t = "%s: " % label

        def prop(name):
            return e.get(name) if hasattr(e, "get") else None

        for name in ("I64", "I64Min", "I64Max", "I64Small"):
            v = prop(name)
            tap.ok(isinstance(v, tuple) and v[0] == ent[name].value and v[1] == EdmType.INT64
                   and type(v[0]) is int, t + "Int64 %s round-trips as EntityProperty INT64" % name,
                   repr(v))
        for name in ("I32", "I32Min", "I32Max", "I32Zero"):
            v = prop(name)
            tap.ok(type(v) is int and v == ent[name], t + "Int32 %s round-trips as int" % name,
                   repr(v))
        for name in ("DtMicro", "DtZero", "DtOld", "DtMax"):
            v = prop(name)
            tap.ok(isinstance(v, datetime.datetime) and v == ent[name] and v.tzinfo is not None,
                   t + "DateTime %s round-trips (microseconds, UTC)" % name, repr(v))
        v = prop("DtOffset")
        tap.ok(isinstance(v, datetime.datetime) and v == dt_offset
               and v.utcoffset() == datetime.timedelta(0),
               t + "DateTime with +02:00 offset comes back as the same instant in UTC", repr(v))
        v = prop("Guid")
        tap.ok(isinstance(v, uuid.UUID) and v == ent["Guid"], t + "Guid round-trips as UUID",
               repr(v))
        for name in ("Bin", "BinEmpty", "BinBig"):
            v = prop(name)
            tap.ok(isinstance(v, bytes) and v == ent[name],
                   t + "Binary %s round-trips as bytes" % name, h._short(v, 120))
        v = prop("DNaN")
        tap.ok(isinstance(v, float) and math.isnan(v), t + "Double NaN round-trips", repr(v))
        v = prop("DInf")
        tap.ok(isinstance(v, float) and v == float("inf"), t + "Double +inf round-trips", repr(v))
        v = prop("DNegInf")
        tap.ok(isinstance(v, float) and v == float("-inf"), t + "Double -inf round-trips", repr(v))
        v = prop("DNegZero")
        tap.ok(isinstance(v, float) and v == 0.0 and math.copysign(1.0, v) < 0,
               t + "Double -0.0 keeps its sign", repr(v))
        for name in ("DHalf", "DIntegral", "DBig", "DTiny", "DPi"):
            v = prop(name)
            tap.ok(type(v) is float and v == ent[name],
                   t + "Double %s round-trips exactly as float" % name, repr(v))
        for name in ("BTrue", "BFalse"):
            v = prop(name)
            tap.ok(type(v) is bool and v == ent[name], t + "Boolean %s round-trips" % name,
                   repr(v))
        for name in ("SAscii", "SEmpty", "SUnicode", "SCtrl", "SBigU", "SBigE", "SBigAstral"):
            v = prop(name)
            tap.ok(type(v) is str and v == ent[name], t + "String %s round-trips" % name,
                   h._short(v, 120))
        want_names = set(ent) - {"PartitionKey", "RowKey"}
        have_names = set(e.keys()) - {"PartitionKey", "RowKey"} if hasattr(e, "keys") else set()
        tap.eq(sorted(have_names), sorted(want_names), t + "no property lost or added")


def check_connection_string(tap, srv):
    conn = srv.conn_str_printed
    tap.ok(conn is not None, "the server printed a connection string", srv.stdout_lines)
    if conn is None:
        return srv.conn_str()
    parts = dict(p.split("=", 1) for p in conn.strip(";").split(";") if "=" in p)
    tap.eq(parts.get("AccountName"), h.DEV_ACCOUNT, "connection string AccountName")
    tap.eq(parts.get("AccountKey"), h.DEV_KEY, "connection string AccountKey is the dev key")
    tap.eq(parts.get("TableEndpoint"), srv.base,
           "connection string TableEndpoint is the path-style endpoint on the real port")
    tap.eq(srv.endpoint, srv.base, "the printed table endpoint")
    return conn


def main():
    tap = h.Tap()
    if IMPORT_ERROR is not None:
        tap.ok(False, "import the Azure Tables SDK (Debian python3-azure)", str(IMPORT_ERROR))
        tap.done()
    try:
        srv = h.Server().start()
    except h.ServerError as e:
        tap.ok(False, "server starts", str(e))
        tap.done()
    tap.ok(True, "server starts on port %d" % srv.port)
    h.watchdog(100, srv, tap)
    conn = check_connection_string(tap, srv)
    try:
        t = SdkTests(tap, srv, conn)
    except Exception as e:  # noqa: BLE001
        tap.ok(False, "create TableServiceClient from the connection string", repr(e))
        srv.stop_and_check(tap)
        tap.done()
    for fn in (t.test_tables, t.test_missing_table, t.test_entity_lifecycle,
               t.test_keys_and_listing, t.test_edm_round_trip):
        tap.run(fn)
    srv.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
