#!/usr/bin/python3
"""Integration test: raw HTTP against tabled with exact status, header and
body checks (doc/protocol.md: routing, headers, tables, entities, writes, errors; minus $filter, $top,
pagination, $batch, authentication, ACL and CORS, which other tests cover).

Every request is signed with SharedKey by the harness.  Bodies are compared
member by member in order, with numbers kept as their exact text.  Each bad
input is followed by a normal request that must still be answered.
Prints TAP; exit status 1 when a check fails."""
import json
import os
import re
import select
import socket
import sys
import time
import urllib.parse

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402
from tabled_harness import Num as N  # noqa: E402

ACCOUNT = h.DEV_ACCOUNT
LEVELS = ("nometadata", "minimalmetadata", "fullmetadata")
MIB = 1024 * 1024
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$")
MSG_RE = re.compile(r"^(.*)\nRequestId:([^\n]*)\nTime:([^\n]*)$", re.S)

# First line of the message for codes whose text doc/protocol.md (Write outcomes,
# Error codes, Entity limits) and codec/errors.c give in full (a tuple lists the accepted variants).
MESSAGES = {
    "TableNotFound": "The table specified does not exist.",
    "ResourceNotFound": "The specified resource does not exist.",
    "EntityAlreadyExists": "The specified entity already exists.",
    "TableAlreadyExists": "The table specified already exists.",
    "UpdateConditionNotSatisfied":
        "The update condition specified in the request was not satisfied.",
    "InvalidResourceName": "The specifed resource name contains invalid characters.",
    "PropertyNameInvalid": "The property name is invalid.",
    "PropertyNameTooLong": "The property name exceeds the maximum allowed length (255).",
    "EntityTooLarge": "The entity is larger than the maximum allowed size (1MB).",
    "DuplicatePropertiesSpecified": "A property is specified more than once.",
    "XMethodIncorrectCount": "More than one X-HTTP-Method is specified.",
    "XMethodIncorrectValue": "The specified X-HTTP-Method is invalid.",
    "XMethodNotUsingPost":
        "The request uses X-HTTP-Method with an HTTP verb other than POST.",
    "AtomFormatNotSupported": "Atom format is not supported.",
    "JsonVerboseFormatNotSupported": "Verbose JSON format is not supported.",
    "JsonFormatNotSupported": "JSON format is not supported.",
    "MissingRequiredHeader":
        "An HTTP header that's mandatory for this request is not specified.",
    "NotImplemented":
        "The requested operation is not implemented on the specified resource.",
    "InvalidQueryParameterValue":
        "Value for one of the query parameters specified in the request URI is invalid.",
    "InvalidHeaderValue":
        "The value for one of the HTTP headers is not in the correct format.",
    "InvalidUri": "The requested URI does not represent any resource on the server.",
    "TooManyProperties":
        "The entity contains more properties than allowed. Each entity can include up to "
        "252 properties to store data. Each entity also has 3 system properties.",
    "PropertyValueTooLarge":
        "The property value exceeds the maximum allowed size (64KB). If the property value "
        "is a string, it is UTF-16 encoded and the maximum number of characters should be "
        "32K or less.",
    "PropertiesNeedValue": (
        "Values have not been specified for all properties in the entity.",
        "The values are not specified for all properties in the entity."),
    "InsufficientAccountPermissions": (
        "The account being accessed does not have sufficient permissions to execute this "
        "operation.", "Write operations are not allowed."),
    "InvalidXmlDocument": "XML specified is not syntactically valid.",
}
KEY_TOO_LARGE = ("The '%s' property exceeds the maximum allowed key size (2KB). It is a "
                 "UTF-16 encoded string and the maximum number of characters should be 1K "
                 "or less.")


# --------------------------------------------------------------------------
# exact JSON


class Obj(list):
    """A JSON object as its ordered list of (name, value) pairs."""


def jparse(body):
    """Parses a body keeping member order, duplicates and number text."""
    if isinstance(body, bytes):
        body = body.decode("utf-8")
    return json.loads(body, object_pairs_hook=Obj, parse_float=N, parse_int=N,
                      parse_constant=N)


def jdump(v):
    """Serialises a jparse() value back to compact JSON (numbers verbatim)."""
    if isinstance(v, Obj):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + jdump(x)
                              for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ",".join(jdump(x) for x in v) + "]"
    if isinstance(v, N):
        return str(v)
    return json.dumps(v, ensure_ascii=False)


def diff(got, want, path="$"):
    """First difference between two jparse() values (types are strict: the
    number 5 differs from the string "5"), or None."""
    if type(got) is not type(want):
        return "%s: got %s %s, want %s %s" % (path, type(got).__name__, h._short(got, 200),
                                             type(want).__name__, h._short(want, 200))
    if isinstance(want, Obj):
        gn, wn = [k for k, _ in got], [k for k, _ in want]
        if gn != wn:
            return "%s: members\n  got:  %s\n  want: %s" % (path, gn, wn)
        for (k, gv), (_, wv) in zip(got, want):
            d = diff(gv, wv, path + "." + k)
            if d:
                return d
        return None
    if isinstance(want, list):
        if len(got) != len(want):
            return "%s: %d elements, want %d" % (path, len(got), len(want))
        for i, (gv, wv) in enumerate(zip(got, want)):
            d = diff(gv, wv, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if got != want:
        return "%s: got %s, want %s" % (path, h._short(got, 300), h._short(want, 300))
    return None


def member(obj, name, default=None):
    for k, v in obj if isinstance(obj, Obj) else ():
        if k == name:
            return v
    return default


def body_of(members):
    """JSON text of an object from (name, raw JSON text) pairs, in order."""
    return "{" + ",".join("%s:%s" % (json.dumps(k, ensure_ascii=False), raw)
                          for k, raw in members) + "}"


def js(v):
    """JSON text of a Python value (non-ASCII kept raw)."""
    return json.dumps(v, ensure_ascii=False)


# --------------------------------------------------------------------------
# client that remembers every response (for the checks that apply to all)


class RecordingHttp(h.Http):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.seen = []

    def request(self, method, path, headers=None, body=None, timeout=h.IO_TIMEOUT, **kw):
        resp = super().request(method, path, headers=headers, body=body, timeout=timeout, **kw)
        sent_version = self.version
        for k, v in h._norm_headers(headers):
            if k.lower() == "x-ms-version":
                sent_version = v
        self.seen.append((method, path, sent_version, resp))
        return resp


# --------------------------------------------------------------------------


class HttpTests:
    def __init__(self, tap, srv):
        self.tap = tap
        self.srv = srv
        self.http = RecordingHttp(srv)
        self.base = srv.base
        self.n = 0

    # -- small helpers -----------------------------------------------------------
    def ok(self, cond, name, diag=None):
        return self.tap.ok(cond, name, diag)

    def eq(self, got, want, name):
        return self.tap.eq(got, want, name)

    def req(self, method, path, **kw):
        return self.http.request(method, path, **kw)

    def name(self, prefix):
        """A fresh table name."""
        self.n += 1
        return "%s%d" % (prefix, self.n)

    def table(self, prefix="t"):
        """Creates a fresh table; raises when that fails (the group stops)."""
        name = self.name(prefix)
        r = self.http.create_table(name)
        if r.status != 201:
            raise AssertionError("create table %s: %s %s" % (name, r.status, r.body[:300]))
        return name

    def ep(self, table, pk, rk):
        return self.http.entity_path(table, pk, rk)

    def insert(self, table, entity, **kw):
        """Inserts (dict or raw JSON text); raises unless 201."""
        body = entity if isinstance(entity, (str, bytes)) else js(entity)
        r = self.req("POST", "/" + table, body=body, **kw)
        if r.status not in (201, 204):
            raise AssertionError("insert into %s: %s %s" % (table, r.status, r.body[:500]))
        return r

    def get(self, table, pk, rk, level="minimalmetadata", **kw):
        return self.req("GET", self.ep(table, pk, rk),
                        headers={"Accept": h.ACCEPT[level]}, **kw)

    def jbody(self, resp):
        try:
            return jparse(resp.body)
        except ValueError:
            return None

    def alive(self, what):
        """After a bad input: the server must still answer a normal request."""
        try:
            r = self.req("GET", "/Tables", timeout=5)
            return self.ok(r.status == 200, "server still answers after %s" % what,
                           "status %s" % r.status)
        except Exception as e:  # noqa: BLE001
            return self.ok(False, "server still answers after %s" % what,
                           "%s; server alive: %s; stderr: %s" % (
                               e, self.srv.alive(), self.srv.stderr_text()[-2000:]))

    def check_error(self, resp, status, code, what, level="minimalmetadata", message=None,
                    prefer=None):
        """Status and code (one check), then the JSON error shape and header
        set (doc/protocol.md, JSON errors; JSON error) (one check), then the
        message text when MESSAGES gives it (one check). code may be a tuple of accepted codes."""
        got_code = resp.error_code()
        codes = code if isinstance(code, tuple) else (code,)
        if not self.ok(resp.status == status and got_code in codes,
                       "%s -> %s %s" % (what, status, "/".join(codes)),
                       "got %s %s\nbody: %s" % (resp.status, got_code,
                                                h._short(resp.body, 800))) \
                and resp.status != status:
            return      # a success or another status: the body checks would only repeat it
        problems = self.error_shape(resp, level, prefer)
        self.ok(not problems, "%s: JSON error body and headers" % what, "\n".join(problems))
        want = message if message is not None else MESSAGES.get(got_code)
        if want is not None and got_code in codes:
            first = self.error_message(resp)
            wants = want if isinstance(want, tuple) else (want,)
            self.ok(first in wants, "%s: message text" % what,
                    "got:  %r\nwant: %r" % (first, wants))

    def error_message(self, resp):
        try:
            value = member(member(member(self.jbody(resp), "odata.error"), "message"), "value")
            return MSG_RE.match(value).group(1)
        except (AttributeError, TypeError):
            return None

    def error_shape(self, resp, level, prefer=None):
        """Problems with a JSON error response (empty list when right)."""
        p = []
        ct = resp.h("Content-Type")
        if ct != h.JSON_CT % level:
            p.append("Content-Type %r, want %r" % (ct, h.JSON_CT % level))
        try:
            j = jparse(resp.body)
        except (ValueError, UnicodeDecodeError) as e:
            return p + ["body is not JSON (%s): %r" % (e, resp.body[:300])]
        names = [k for k, _ in j] if isinstance(j, Obj) else None
        err = member(j, "odata.error")
        if names != ["odata.error"] or not isinstance(err, Obj):
            return p + ["top level must be exactly {\"odata.error\":{...}}, got %s" % names]
        if [k for k, _ in err] != ["code", "message"]:
            p.append("odata.error members %s, want [code, message]" % [k for k, _ in err])
        if not isinstance(member(err, "code"), str):
            p.append("code is not a string")
        msg = member(err, "message")
        if not isinstance(msg, Obj) or [k for k, _ in msg] != ["lang", "value"]:
            p.append("message must be {\"lang\":…,\"value\":…}, got %r" % (msg,))
        else:
            if member(msg, "lang") != "en-US":
                p.append("lang %r" % member(msg, "lang"))
            value = member(msg, "value")
            m = MSG_RE.match(value) if isinstance(value, str) else None
            if not m:
                p.append("message value lacks \\nRequestId:…\\nTime:… : %r" % (value,))
            else:
                if m.group(2) != resp.h("x-ms-request-id"):
                    p.append("RequestId %r != x-ms-request-id %r" % (m.group(2),
                                                                      resp.h("x-ms-request-id")))
                if not TIME_RE.match(m.group(3)):
                    p.append("Time %r is not YYYY-MM-DDThh:mm:ss.fffffffZ" % m.group(3))
                if not m.group(1):
                    p.append("empty message text")
        p += self.header_problems(resp, json_body=True)
        for name in ("x-ms-error-code", "ETag", "Location", "DataServiceId"):
            if resp.has(name):
                p.append("unexpected %s: %s" % (name, resp.h(name)))
        if prefer is None and resp.has("Preference-Applied"):
            p.append("unexpected Preference-Applied")
        if prefer is not None and resp.h("Preference-Applied") != prefer:
            p.append("Preference-Applied %r, want %r" % (resp.h("Preference-Applied"), prefer))
        return p

    def header_problems(self, resp, json_body):
        """Headers every OData response carries (doc/protocol.md, Common response headers; Response header sets)."""
        p = []
        if resp.h("Cache-Control") != "no-cache":
            p.append("Cache-Control %r, want no-cache" % resp.h("Cache-Control"))
        if resp.h("X-Content-Type-Options") != "nosniff":
            p.append("X-Content-Type-Options %r" % resp.h("X-Content-Type-Options"))
        for name in ("x-ms-request-id", "x-ms-version", "Date"):
            if len(resp.hs(name)) != 1:
                p.append("%d %s headers" % (len(resp.hs(name)), name))
        if resp.has("DataServiceVersion"):
            p.append("top-level response carries DataServiceVersion")
        te, cl = resp.h("Transfer-Encoding"), resp.h("Content-Length")
        if te is not None and cl is not None:
            p.append("both Transfer-Encoding and Content-Length")
        if json_body:
            if te is None and cl is None:
                p.append("body framed by connection close")
        else:
            if cl != "0" or te is not None:
                p.append("no-body response: Content-Length %r Transfer-Encoding %r, want 0" %
                         (cl, te))
            if resp.has("Content-Type"):
                p.append("no-body response carries Content-Type %r" % resp.h("Content-Type"))
            if resp.body:
                p.append("no-body response has a body: %r" % resp.body[:100])
        return p

    def check_json_ok(self, resp, what, status=200, level="minimalmetadata", etag=False,
                      location=None, prefer=None):
        """Status and the header set of doc/protocol.md, JSON success; Created (one check each)."""
        self.ok(resp.status == status, "%s -> %d" % (what, status),
                "got %s %s" % (resp.status, h._short(resp.body, 600)))
        p = self.header_problems(resp, json_body=True)
        if resp.h("Content-Type") != h.JSON_CT % level:
            p.append("Content-Type %r, want %r" % (resp.h("Content-Type"), h.JSON_CT % level))
        if etag and not resp.has("ETag"):
            p.append("missing ETag")
        if not etag and resp.has("ETag"):
            p.append("unexpected ETag %s" % resp.h("ETag"))
        if location is not None and resp.h("Location") != location:
            p.append("Location %r, want %r" % (resp.h("Location"), location))
        if location is None and resp.has("Location"):
            p.append("unexpected Location")
        if resp.has("DataServiceId"):
            p.append("unexpected DataServiceId")
        if resp.h("Preference-Applied") != prefer:
            p.append("Preference-Applied %r, want %r" % (resp.h("Preference-Applied"), prefer))
        if resp.has("x-ms-error-code"):
            p.append("unexpected x-ms-error-code")
        self.ok(not p, "%s: header set" % what, "\n".join(p) + "\nheaders: %r" % resp.headers)

    def check_no_content(self, resp, what, etag, location=None, prefer=None, status=204):
        """Status and the header set of doc/protocol.md, Insert without content; No content."""
        self.ok(resp.status == status, "%s -> %d" % (what, status),
                "got %s %s" % (resp.status, h._short(resp.body, 600)))
        p = self.header_problems(resp, json_body=False)
        if etag and not resp.has("ETag"):
            p.append("missing ETag")
        if not etag and resp.has("ETag"):
            p.append("unexpected ETag %s" % resp.h("ETag"))
        if location is not None:
            if resp.h("Location") != location:
                p.append("Location %r, want %r" % (resp.h("Location"), location))
            if resp.h("DataServiceId") != location:
                p.append("DataServiceId %r, want %r" % (resp.h("DataServiceId"), location))
        else:
            for name in ("Location", "DataServiceId"):
                if resp.has(name):
                    p.append("unexpected %s" % name)
        if resp.h("Preference-Applied") != prefer:
            p.append("Preference-Applied %r, want %r" % (resp.h("Preference-Applied"), prefer))
        self.ok(not p, "%s: header set" % what, "\n".join(p) + "\nheaders: %r" % resp.headers)

    def exact(self, resp, want, what):
        """The body parses to exactly want (member order and types)."""
        try:
            got = jparse(resp.body)
        except (ValueError, UnicodeDecodeError) as e:
            return self.ok(False, what, "not JSON (%s): %r" % (e, resp.body[:500]))
        d = diff(got, want)
        return self.ok(d is None, what, d)

    # -- expected bodies ---------------------------------------------------------
    def table_entry(self, name, level, single):
        out = Obj()
        if single and level != "nometadata":
            out.append(("odata.metadata", self.base + "/$metadata#Tables/@Element"))
        if level == "fullmetadata":
            out += [("odata.type", ACCOUNT + ".Tables"),
                    ("odata.id", "%s/Tables('%s')" % (self.base, name)),
                    ("odata.editLink", "Tables('%s')" % name)]
        out.append(("TableName", name))
        return out

    def tables_feed(self, names, level):
        out = Obj()
        if level != "nometadata":
            out.append(("odata.metadata", self.base + "/$metadata#Tables"))
        out.append(("value", [self.table_entry(n, level, False) for n in names]))
        return out

    def entity_entry(self, table, pk, rk, ts, props, level, single=True, select=None):
        """props: list of (name, annotation or None, emitted value)."""
        keys = "%s(PartitionKey='%s',RowKey='%s')" % (table, h.quote_key(pk), h.quote_key(rk))
        out = Obj()
        if level != "nometadata":
            if single:
                md = "%s/$metadata#%s/@Element" % (self.base, table)
                if select:
                    md += "&$select=" + select
                out.append(("odata.metadata", md))
            if level == "fullmetadata":
                out += [("odata.type", "%s.%s" % (ACCOUNT, table)),
                        ("odata.id", "%s/%s" % (self.base, keys)),
                        ("odata.etag", h.etag_for(ts)),
                        ("odata.editLink", keys)]
            else:
                out.append(("odata.etag", h.etag_for(ts)))
        if pk is not None:
            out += [("PartitionKey", pk), ("RowKey", rk)]
        if ts is not None and not select:
            if level == "fullmetadata":
                out.append(("Timestamp@odata.type", "Edm.DateTime"))
            out.append(("Timestamp", ts))
        for name, annot, value in props:
            if annot and level != "nometadata":
                out.append((name + "@odata.type", annot))
            out.append((name, value))
        return out

    def entity_feed(self, table, entries, level):
        out = Obj()
        if level != "nometadata":
            out.append(("odata.metadata", "%s/$metadata#%s" % (self.base, table)))
        out.append(("value", entries))
        return out

    def timestamp_of(self, resp):
        """Timestamp of a single-entity response body (checked for form)."""
        ts = member(self.jbody(resp), "Timestamp")
        if not isinstance(ts, str) or not h.EMITTED_DT_RE.match(ts):
            raise AssertionError("bad Timestamp %r in %r" % (ts, resp.body[:300]))
        return ts


def add_group(fn):
    """Decorator collecting test groups in definition order."""
    GROUPS.append(fn)
    return fn


GROUPS = []


# --------------------------------------------------------------------------
# Tables


@add_group
def tables_listing(t):
    """Query Tables bodies at every level on an account we control (runs
    first, while the account is empty)."""
    for level in LEVELS:
        r = t.req("GET", "/Tables", headers={"Accept": h.ACCEPT[level]})
        t.check_json_ok(r, "Query Tables on an empty account (%s)" % level, level=level)
        t.exact(r, t.tables_feed([], level), "empty account body (%s)" % level)
    for name in ("alpha", "Beta", "gamma3"):
        r = t.http.create_table(name)
        t.eq(r.status, 201, "create table %s" % name)
    for level in LEVELS:
        for path in ("/Tables", "/Tables()"):
            r = t.req("GET", path, headers={"Accept": h.ACCEPT[level]})
            t.check_json_ok(r, "GET %s (%s)" % (path, level), level=level)
            t.exact(r, t.tables_feed(["alpha", "Beta", "gamma3"], level),
                    "GET %s body, sorted by name, casing kept (%s)" % (path, level))
        r = t.req("GET", "/Tables('Beta')", headers={"Accept": h.ACCEPT[level]})
        t.check_json_ok(r, "GET /Tables('Beta') (%s)" % level, level=level)
        t.exact(r, t.table_entry("Beta", level, True), "single table entry body (%s)" % level)
    r = t.req("GET", "/Tables('BETA')")
    t.ok(r.status == 200 and member(t.jbody(r), "TableName") == "Beta",
         "GET /Tables('BETA') finds Beta case-insensitively, returns stored casing",
         "%s %r" % (r.status, r.body[:200]))
    r = t.req("GET", "/Tables('nosuchtable')")
    t.check_error(r, 404, "ResourceNotFound", "GET /Tables('nosuchtable')")
    for name in ("alpha", "BETA", "gamma3"):
        r = t.http.delete_table(name)
        t.check_no_content(r, "Delete Table %s" % name, etag=False)
    r = t.req("GET", "/Tables", headers={"Accept": h.ACCEPT["nometadata"]})
    t.exact(r, t.tables_feed([], "nometadata"), "account is empty again after deletes")


@add_group
def tables_create(t):
    for level in LEVELS:
        name = t.name("Create%s" % level[:4])
        r = t.http.create_table(name, headers={"Accept": h.ACCEPT[level]})
        t.check_json_ok(r, "Create Table (%s)" % level, status=201, level=level,
                        location="%s/Tables('%s')" % (t.base, name))
        t.exact(r, t.table_entry(name, level, True), "Create Table body (%s)" % level)
    name = t.name("NoContent")
    loc = "%s/Tables('%s')" % (t.base, name)
    r = t.http.create_table(name, headers={"Prefer": "return-no-content"})
    t.check_no_content(r, "Create Table with Prefer: return-no-content", etag=False,
                       location=loc, prefer="return-no-content")
    name = t.name("WithContent")
    r = t.http.create_table(name, headers={"Prefer": "return-content"})
    t.check_json_ok(r, "Create Table with Prefer: return-content", status=201,
                    location="%s/Tables('%s')" % (t.base, name), prefer="return-content")
    t.exact(r, t.table_entry(name, "minimalmetadata", True),
            "Create Table with return-content body")
    r = t.http.create_table(name, headers={"Prefer": "return-no-content"})
    t.check_error(r, 409, "TableAlreadyExists",
                  "Create existing table with Prefer: return-no-content",
                  prefer="return-no-content")
    r = t.http.create_table(name)
    t.check_error(r, 409, "TableAlreadyExists", "Create an existing table")
    r = t.http.create_table(name.upper())
    t.check_error(r, 409, "TableAlreadyExists", "Create the same name in upper case")
    r = t.http.create_table(name.lower(), headers={"Accept": h.ACCEPT["nometadata"]})
    t.check_error(r, 409, "TableAlreadyExists", "Create the same name in lower case (nometadata)",
                  level="nometadata")
    long63 = "a" + "b1" * 31
    r = t.http.create_table(long63)
    t.eq(r.status, 201, "Create Table with a 63-character name -> 201")
    t.http.delete_table(long63)
    for bad, code, why in (
            ("ab", "OutOfRangeInput", "a 2-character name"),
            ("a" + "b" * 63, "OutOfRangeInput", "a 64-character name"),
            ("1abc", "InvalidResourceName", "a name starting with a digit"),
            ("a_bc", "InvalidResourceName", "a name with _"),
            ("a-bc", "InvalidResourceName", "a name with -"),
            ("ab\u00e9c", "InvalidResourceName", "a name with a non-ASCII letter"),
            ("$Metrics1", "InvalidResourceName", "a $-prefixed system name"),
            ("tables", "InvalidInput", "the reserved name tables"),
            ("Tables", "InvalidInput", "the reserved name Tables")):
        r = t.http.create_table(bad)
        msg = ("The specified resource name length is not within the permissible limits."
               if code == "OutOfRangeInput" else None)
        t.check_error(r, 400, code, "Create Table with %s" % why, message=msg)
    for body, why in (('{}', "no TableName"), ('{"TableName":""}', "an empty TableName"),
                      ('{"Name":"abcdef"}', "only another member")):
        r = t.req("POST", "/Tables", body=body)
        t.ok(r.status == 400 and r.error_code() in ("InvalidInput", "TableNameEmpty",
                                                    "OutOfRangeInput"),
             "Create Table body with %s -> 400" % why, "%s %s" % (r.status, r.body[:300]))
    r = t.req("POST", "/Tables", body='{"TableName":"extraMembers1","Other":1,"odata.type":"x"}')
    t.eq(r.status, 201, "Create Table ignores other members in the body")
    t.http.delete_table("extraMembers1")


@add_group
def tables_delete(t):
    name = t.table("Del")
    t.insert(name, {"PartitionKey": "p", "RowKey": "r", "V": 1})
    r = t.http.delete_table(name.upper())
    t.check_no_content(r, "Delete Table by the upper-case name", etag=False)
    r = t.http.delete_table(name)
    t.check_error(r, 404, "ResourceNotFound", "Delete a missing table")
    for bad in ("ab", "tables", "1abc"):
        r = t.http.delete_table(bad)
        t.check_error(r, 404, "ResourceNotFound", "Delete Table with invalid name %r" % bad)
    r = t.get(name, "p", "r")
    t.check_error(r, 404, "TableNotFound", "Get Entity on a deleted table")
    r = t.req("GET", "/%s()" % name)
    t.check_error(r, 404, "TableNotFound", "Query Entities on a deleted table")
    r = t.req("POST", "/" + name, body={"PartitionKey": "p", "RowKey": "x"})
    t.check_error(r, 404, "TableNotFound", "Insert into a deleted table")
    for method in ("PUT", "MERGE", "PATCH"):
        r = t.req(method, t.ep(name, "p", "r"), body={"V": 2})
        t.check_error(r, 404, "TableNotFound", "%s (upsert) on a deleted table" % method)
        r = t.req(method, t.ep(name, "p", "r"), body={"V": 2}, headers={"If-Match": "*"})
        t.check_error(r, 404, "TableNotFound", "%s If-Match:* on a deleted table" % method)
    r = t.req("DELETE", t.ep(name, "p", "r"), headers={"If-Match": "*"})
    t.check_error(r, 404, "TableNotFound", "Delete Entity on a deleted table")
    r = t.http.create_table(name)
    t.eq(r.status, 201, "re-create the deleted table")
    r = t.req("GET", "/" + name, headers={"Accept": h.ACCEPT["nometadata"]})
    t.exact(r, Obj([("value", [])]), "re-created table is empty")
    t.http.delete_table(name)


# --------------------------------------------------------------------------
# Routing and URLs


@add_group
def routing(t):
    name = t.table("Route")
    t.insert(name, {"PartitionKey": "p", "RowKey": "r", "V": 1})
    for path in ("/" + name, "/%s()" % name):
        r = t.req("GET", path, headers={"Accept": h.ACCEPT["nometadata"]})
        t.ok(r.status == 200 and len(member(t.jbody(r), "value", [])) == 1,
             "GET %s queries the entities" % path, "%s %r" % (r.status, r.body[:300]))
    r = t.req("POST", "/%s()" % name, body={"PartitionKey": "p", "RowKey": "r2"})
    t.eq(r.status, 201, "POST /%s() inserts" % name)
    for path in ("/TABLES", "/tables()", "/tAbLeS"):
        r = t.req("GET", path)
        t.ok(r.status == 200 and member(t.jbody(r), "value") is not None,
             "GET %s routes to Query Tables (case-insensitive)" % path,
             "%s %r" % (r.status, r.body[:200]))
    r = t.req("GET", "/" + name.upper() + "()")
    t.ok(r.status == 200 and len(member(t.jbody(r), "value", [])) == 2,
         "table names in entity paths are case-insensitive", "%s %r" % (r.status, r.body[:200]))
    r = t.req("GET", "/%s?foo=bar&x-unknown=1" % name)
    t.eq(r.status, 200, "unknown non-$ query parameters are ignored")
    r = t.req("GET", "/%s?comp=list" % name)
    # JSON or storage XML body: doc/protocol.md, Choosing the error format does not say which for comp=
    t.eq((r.status, r.error_code()), (400, "InvalidQueryParameterValue"),
         "unknown comp on a table -> 400 InvalidQueryParameterValue")
    for opt in ("$orderby=RowKey", "$skip=1", "$expand=x", "$inlinecount=allpages", "$count=true"):
        r = t.req("GET", "/%s?%s" % (name, opt))
        t.check_error(r, 501, "NotImplemented", "unsupported OData option %s" % opt.split("=")[0])
    # host-style: Host ACCOUNT.table.localhost, path without the account
    hs = RecordingHttp(t.srv, host_style=True,
                       host_header="%s.table.localhost:%d" % (ACCOUNT, t.srv.port))
    r = hs.request("GET", "/Tables")
    hbase = "http://%s.table.localhost:%d" % (ACCOUNT, t.srv.port)
    names = [member(e, "TableName") for e in member(t.jbody(r), "value", [])] \
        if r.status == 200 else []
    t.ok(r.status == 200 and name in names, "host-style GET /Tables lists the account's tables",
         "%s %r" % (r.status, r.body[:300]))
    t.eq(member(t.jbody(r), "odata.metadata"), hbase + "/$metadata#Tables",
         "host-style odata.metadata is built from the Host header")
    r = hs.request("GET", "/%s(PartitionKey='p',RowKey='r')" % name,
                   headers={"Accept": h.ACCEPT["fullmetadata"]})
    t.eq((r.status, member(t.jbody(r), "odata.id")),
         (200, "%s/%s(PartitionKey='p',RowKey='r')" % (hbase, name)),
         "host-style Get Entity: odata.id has no account segment")
    r = hs.request("POST", "/" + name, body={"PartitionKey": "p", "RowKey": "hs"})
    t.eq((r.status, r.h("Location")), (201, "%s/%s(PartitionKey='p',RowKey='hs')" % (hbase, name)),
         "host-style insert: Location has no account segment")
    t.http.seen += hs.seen
    # secondary endpoint: reads work, writes are refused
    sec = "/%s-secondary" % ACCOUNT
    r = t.req("GET", sec + "/Tables", absolute=True)
    names = [member(e, "TableName") for e in member(t.jbody(r), "value", [])] \
        if r.status == 200 else []
    t.ok(r.status == 200 and name in names, "GET on the -secondary account reads the account",
         "%s %r" % (r.status, r.body[:300]))
    r = t.req("GET", "%s/%s(PartitionKey='p',RowKey='r')" % (sec, name), absolute=True)
    t.eq(r.status, 200, "Get Entity through -secondary")
    r = t.req("POST", sec + "/" + name, body={"PartitionKey": "p", "RowKey": "sec"},
              absolute=True)
    t.check_error(r, 403, "InsufficientAccountPermissions", "insert through -secondary")
    r = t.req("POST", sec + "/Tables", body={"TableName": "SecondaryT"}, absolute=True)
    t.check_error(r, 403, "InsufficientAccountPermissions", "create table through -secondary")
    r = t.get(name, "p", "sec")
    t.check_error(r, 404, "ResourceNotFound", "the refused secondary insert stored nothing")
    # account root
    r = t.req("GET", "/")
    t.ok(r.status == 400 and r.error_code() == "InvalidUri",
         "GET on the account root without comp -> 400 InvalidUri",
         "%s %r" % (r.status, r.body[:300]))
    r = t.req("GET", "/?restype=service&comp=bogus")
    t.ok(r.status == 400 and r.error_code() == "InvalidQueryParameterValue",
         "unknown comp on the account root -> 400 InvalidQueryParameterValue",
         "%s %r" % (r.status, r.body[:300]))
    t.http.delete_table(name)


@add_group
def key_predicates(t):
    name = t.table("Keys")
    keys = [("k1", "r1"), ("O'Neil", "it's"), ("\u00fc\u65e5\u672c", "\U0001F600"), ("", ""),
            ("a b", "c+d"), ("x%y", "~!$&()*+,;=:@"), ("O'Neil \"A\"", "r 1-\u00fc"),
            ("\U0001F600", "a\u00a0b")]
    for i, (pk, rk) in enumerate(keys):
        t.insert(name, {"PartitionKey": pk, "RowKey": rk, "I": i})

    def found(path, i, what):
        r = t.req("GET", path, headers={"Accept": h.ACCEPT["nometadata"]})
        t.ok(r.status == 200 and member(t.jbody(r), "I") == N(str(i)), what,
             "GET %s -> %s %r" % (path, r.status, r.body[:300]))

    found("/%s(PartitionKey='k1',RowKey='r1')" % name, 0, "plain key predicate")
    found("/%s(PartitionKey='k1',%%20RowKey='r1')" % name, 0, "space after the comma")
    found("/%s(%%20PartitionKey%%20=%%20'k1'%%20,%%20RowKey%%20=%%20'r1'%%20)" % name, 0,
          "spaces around = and , and inside the parentheses")
    found("/%s(PartitionKey='k1',%%09RowKey='r1')" % name, 0, "tab after the comma")
    found("/%s(RowKey='r1',PartitionKey='k1')" % name, 0, "RowKey before PartitionKey")
    found("/%s(PartitionKey='O''Neil',RowKey='it''s')" % name, 1, "'' decodes to '")
    found("/%s(PartitionKey=%%27O%%27%%27Neil%%27,RowKey=%%27it%%27%%27s%%27)" % name, 1,
          "quotes sent as %27")
    found("/%s(PartitionKey='%s',RowKey='%s')" % (name, h.pct_encode("\u00fc\u65e5\u672c"),
                                                  h.pct_encode("\U0001F600")), 2,
          "non-ASCII keys as UTF-8 percent-encoding")
    found("/%s(PartitionKey='',RowKey='')" % name, 3, "empty PartitionKey and RowKey")
    found("/%s(PartitionKey='a%%20b',RowKey='c+d')" % name, 4, "%20 in a key and a raw +")
    found("/%s(PartitionKey='x%%25y',RowKey='~!$&()*+,;=:@')" % name, 5,
          "%25 in a key and raw sub-delims")
    found("/%s(PartitionKey='O''Neil%%20%%22A%%22',RowKey='r%%201-%%C3%%BC')" % name, 6,
          "the key-encoding example key")
    r = t.req("GET", "/%s(PartitionKey='k1',RowKey='r1')" % name.lower(),
              headers={"Accept": h.ACCEPT["fullmetadata"]})
    t.eq(member(t.jbody(r), "odata.type"), "%s.%s" % (ACCOUNT, name),
         "odata.type uses the stored table name, not the URL's casing")
    # emitted URLs (Location, DataServiceId, odata.id, odata.editLink)
    pk, rk = "O'Neil \"A\"", "r 1-\u00fc"
    keypart = "(PartitionKey='O''Neil%20%22A%22',RowKey='r%201-%C3%BC')"
    r = t.get(name, pk, rk, level="fullmetadata")
    j = t.jbody(r)
    t.eq(member(j, "odata.id"), t.base + "/" + name + keypart,
         "odata.id encodes keys as the service does")
    t.eq(member(j, "odata.editLink"), name + keypart, "odata.editLink encodes keys the same way")
    t.req("DELETE", t.ep(name, pk, rk), headers={"If-Match": "*"})
    r = t.insert(name, {"PartitionKey": pk, "RowKey": rk})
    t.eq(r.h("Location"), t.base + "/" + name + keypart, "Location encodes keys as the service does")
    t.req("DELETE", t.ep(name, pk, rk), headers={"If-Match": "*"})
    r = t.insert(name, {"PartitionKey": pk, "RowKey": rk}, headers={"Prefer": "return-no-content"})
    t.eq((r.h("Location"), r.h("DataServiceId")), (t.base + "/" + name + keypart,) * 2,
         "Location and DataServiceId on 204 encode keys as the service does")
    for pk, rk, want in (("x%y", "~!$&()*+,;=:@", "(PartitionKey='x%25y',RowKey='~!$&()*+,;=:@')"),
                         ("", "", "(PartitionKey='',RowKey='')"),
                         ("\U0001F600", "a\u00a0b",
                          "(PartitionKey='%F0%9F%98%80',RowKey='a%C2%A0b')")):
        r = t.get(name, pk, rk, level="fullmetadata")
        t.eq(member(t.jbody(r), "odata.id"), t.base + "/" + name + want,
             "odata.id for keys %r/%r" % (pk, rk))
    t.req("DELETE", t.ep(name, "\U0001F600", "a\u00a0b"), headers={"If-Match": "*"})
    r = t.insert(name, {"PartitionKey": "\U0001F600", "RowKey": "a\u00a0b"})
    t.eq(r.h("Location"), t.base + "/" + name + "(PartitionKey='%F0%9F%98%80',RowKey='a%C2%A0b')",
         "Location percent-encodes astral and no-break-space characters")
    # operations on the special keys through PUT / MERGE / DELETE
    pk, rk = "O'Neil", "it's"
    r = t.req("MERGE", t.ep(name, pk, rk), body={"M": 1}, headers={"If-Match": "*"})
    t.eq(r.status, 204, "MERGE on a key with quotes")
    r = t.req("PUT", "/%s(PartitionKey='',RowKey='')" % name, body={"P": 2},
              headers={"If-Match": "*"})
    t.eq(r.status, 204, "PUT on empty keys")
    r = t.req("DELETE", "/%s(PartitionKey='',RowKey='')" % name, headers={"If-Match": "*"})
    t.eq(r.status, 204, "DELETE on empty keys")
    r = t.req("GET", "/%s(PartitionKey='',RowKey='')" % name)
    t.check_error(r, 404, "ResourceNotFound", "GET empty keys after delete")
    t.http.delete_table(name)


# --------------------------------------------------------------------------
# Headers and content negotiation


@add_group
def negotiation(t):
    name = t.table("Neg")
    r = t.insert(name, {"PartitionKey": "p", "RowKey": "r", "V": 1})
    ts = t.timestamp_of(r)
    path = t.ep(name, "p", "r")
    for level in LEVELS:
        r = t.req("GET", path, headers={"Accept": h.ACCEPT[level]})
        t.check_json_ok(r, "Get Entity with Accept %s" % level, level=level, etag=True)
        t.exact(r, t.entity_entry(name, "p", "r", ts, [("V", None, N("1"))], level),
                "Get Entity body (%s)" % level)
    r = t.req("GET", path, headers={"Accept": "application/json"})
    t.eq(r.h("Content-Type"), h.JSON_CT % "minimalmetadata",
         "bare Accept: application/json -> minimalmetadata")
    t.exact(r, t.entity_entry(name, "p", "r", ts, [("V", None, N("1"))], "minimalmetadata"),
            "bare application/json body is minimalmetadata")
    for fmt, level in (("application/json;odata=nometadata", "nometadata"),
                       ("application/json;odata=fullmetadata", "fullmetadata"),
                       ("application/json;odata=minimalmetadata", "minimalmetadata")):
        r = t.req("GET", "%s?$format=%s" % (path, urllib.parse.quote(fmt, safe="")),
                  headers={"Accept": h.ACCEPT["minimalmetadata" if level != "minimalmetadata"
                                              else "fullmetadata"]})
        t.eq((r.status, r.h("Content-Type")), (200, h.JSON_CT % level),
             "$format=%s overrides Accept" % fmt)
    r = t.req("GET", "/%s()" % name,
              headers={"Accept": "application/json; odata=NoMetadata"})
    t.eq(r.h("Content-Type"), h.JSON_CT % "nometadata",
         "Accept parameters are case-insensitive with spaces around ;")
    r = t.req("GET", "/%s()" % name, headers={"Accept": "application/atom+xml"})
    check_odata_xml_error(t, r, 415, "AtomFormatNotSupported",
                          "Accept: application/atom+xml on Query Entities")
    r = t.req("GET", path, headers={"Accept": "application/atom+xml,application/xml"})
    t.eq((r.status, r.error_code()), (415, "AtomFormatNotSupported"),
         "Accept atom on Get Entity -> 415 AtomFormatNotSupported")
    r = t.req("GET", "/%s()" % name, headers={"Accept": "application/json;odata=verbose"})
    t.check_error(r, 415, "JsonVerboseFormatNotSupported", "Accept odata=verbose")
    r = t.req("GET", "/Tables", headers={"Accept": None})
    t.eq((r.status, r.error_code()), (415, "AtomFormatNotSupported"),
         "Query Tables without Accept -> 415 AtomFormatNotSupported")
    r = t.req("POST", "/" + name, body={"PartitionKey": "p", "RowKey": "atom"},
              content_type="application/atom+xml")
    t.eq((r.status, r.error_code()), (415, "AtomFormatNotSupported"),
         "Insert with Content-Type application/atom+xml -> 415 AtomFormatNotSupported")
    r = t.req("MERGE", path, body={"W": 2}, headers={"If-Match": "*", "Accept": None})
    t.eq(r.status, 204, "MERGE without Accept (no response body) succeeds")
    # request Content-Type variants
    for i, ct in enumerate(("application/json", "application/json;odata=nometadata",
                            "application/json;odata=minimalmetadata;charset=utf-8",
                            "application/json;charset=utf-8", "application/json;type=entry",
                            "application/json; odata=fullmetadata; charset=UTF-8")):
        r = t.req("POST", "/" + name, body={"PartitionKey": "ct", "RowKey": str(i)},
                  content_type=ct)
        t.eq(r.status, 201, "request Content-Type %r accepted" % ct)
    r = t.req("POST", "/" + name, body={"PartitionKey": "ct", "RowKey": "none"},
              headers={"Content-Type": None})
    t.eq(r.status, 201, "a body without Content-Type is read as JSON")
    # OData version headers
    for hdrs, why in (({"MaxDataServiceVersion": "3.0;NetFx", "DataServiceVersion": "3.0"},
                       "MaxDataServiceVersion 3.0;NetFx + DataServiceVersion 3.0"),
                      ({"MaxDataServiceVersion": None, "DataServiceVersion": None},
                       "no OData version headers"),
                      ({"MaxDataServiceVersion": "3.0;", "DataServiceVersion": "1.0;NetFx"},
                       "Max 3.0; takes precedence over DataServiceVersion 1.0"),
                      ({"MaxDataServiceVersion": None, "DataServiceVersion": "3.0"},
                       "DataServiceVersion 3.0 alone")):
        r = t.req("GET", path, headers=hdrs)
        t.eq(r.status, 200, "accepted: %s" % why)
    r = t.req("GET", path, headers={"MaxDataServiceVersion": None, "DataServiceVersion": "2.0"})
    t.check_error(r, 415, "JsonFormatNotSupported", "JSON with DataServiceVersion 2.0 and no Max")
    r = t.req("GET", path, headers={"x-ms-client-request-id": "my-id 1;x=\"q\""})
    t.eq(r.hs("x-ms-client-request-id"), ["my-id 1;x=\"q\""],
         "x-ms-client-request-id is echoed verbatim")
    cid = "abc-123_XYZ ;,=/" + "x" * 900
    r = t.req("GET", "/Tables", headers={"x-ms-client-request-id": cid})
    t.eq(r.hs("x-ms-client-request-id"), [cid], "a 916-character client request id is echoed")
    r = t.req("GET", "/Tables('nosuch')", headers={"x-ms-client-request-id": "err-1"})
    t.eq((r.status, r.hs("x-ms-client-request-id")), (404, ["err-1"]),
         "x-ms-client-request-id is echoed on errors")
    r = t.req("GET", "/Tables")
    t.ok(not r.has("x-ms-client-request-id"), "no x-ms-client-request-id when none was sent")
    # an XML operation: no Cache-Control, no nosniff
    r = t.req("GET", "/?restype=service&comp=properties", headers={"Accept": "application/xml"})
    p = []
    if r.status != 200:
        p.append("status %s" % r.status)
    if not (r.h("Content-Type") or "").startswith("application/xml"):
        p.append("Content-Type %r" % r.h("Content-Type"))
    for name_ in ("Cache-Control", "X-Content-Type-Options"):
        if r.has(name_):
            p.append("unexpected " + name_)
    for name_ in ("x-ms-request-id", "x-ms-version", "Date"):
        if not r.has(name_):
            p.append("missing " + name_)
    if b"<StorageServiceProperties" not in r.body:
        p.append("body %r" % r.body[:200])
    t.ok(not p, "Get Service Properties: 200 XML without Cache-Control/nosniff",
         "\n".join(p) + "\n%r" % r.headers)
    t.http.delete_table(name)


def check_odata_xml_error(t, r, status, code, what):
    """doc/protocol.md, OData XML errors: OData XML error in the default namespace."""
    t.eq((r.status, r.error_code()), (status, code), "%s -> %d %s" % (what, status, code))
    text = r.body.decode("utf-8", "replace")
    m = re.match(r'^(?:\ufeff)?<\?xml version="1\.0" encoding="utf-8"\?>'
                 r'<error xmlns="http://schemas\.microsoft\.com/ado/2007/08/dataservices/metadata">'
                 r'<code>([^<]*)</code><message xml:lang="en-US">([^<]*)\nRequestId:([^\n<]*)'
                 r'\nTime:([^<]*)</message></error>$', text)
    p = []
    if not m:
        p.append("body is not the OData XML error: %r" % text[:500])
    else:
        if m.group(1) != code:
            p.append("code %r" % m.group(1))
        if m.group(3) != r.h("x-ms-request-id"):
            p.append("RequestId %r != header %r" % (m.group(3), r.h("x-ms-request-id")))
        if not TIME_RE.match(m.group(4)):
            p.append("Time %r" % m.group(4))
    if not (r.h("Content-Type") or "").startswith("application/xml"):
        p.append("Content-Type %r" % r.h("Content-Type"))
    t.ok(not p, "%s: OData XML error body" % what, "\n".join(p))


# --------------------------------------------------------------------------
# Entity reads and Edm types, exact at every metadata level


def S(text):
    """Raw JSON text for a string value given as Python text."""
    return js(text)


# (property name, request members as (name, raw JSON), emitted annotation,
#  emitted value).  Only canonical, [DOC]/[OBS] input forms here.
EDM_PROPS = [
    ("Str", [("Str", '"h\u00e9llo ' + r'\u00fc \ud83d\ude00 \"q\" \\ \/ \t\n' + '"')], None,
     "h\u00e9llo \u00fc \U0001F600 \"q\" \\ / \t\n"),
    ("StrEmpty", [("StrEmpty", '""')], None, ""),
    ("StrCtl", [("StrCtl", r'"\u0001\u001f\u007f x"')], None, "\x01\x1f\x7f x"),
    ("StrNul", [("StrNul", r'"a\u0000b"')], None, "a\x00b"),
    ("I32", [("I32", "42")], None, N("42")),
    ("I32Zero", [("I32Zero", "0")], None, N("0")),
    ("I32Min", [("I32Min", "-2147483648")], None, N("-2147483648")),
    ("I32Max", [("I32Max", "2147483647")], None, N("2147483647")),
    ("I32Ann", [("I32Ann@odata.type", '"Edm.Int32"'), ("I32Ann", "-7")], None, N("-7")),
    ("I64", [("I64@odata.type", '"Edm.Int64"'), ("I64", '"9007199254740993"')], "Edm.Int64",
     "9007199254740993"),
    ("I64Min", [("I64Min@odata.type", '"Edm.Int64"'), ("I64Min", '"-9223372036854775808"')],
     "Edm.Int64", "-9223372036854775808"),
    ("I64Max", [("I64Max@odata.type", '"Edm.Int64"'), ("I64Max", '"9223372036854775807"')],
     "Edm.Int64", "9223372036854775807"),
    ("I64Zero", [("I64Zero@odata.type", '"Edm.Int64"'), ("I64Zero", '"0"')], "Edm.Int64", "0"),
    ("D", [("D", "12.5")], None, N("12.5")),
    ("DNeg", [("DNeg", "-2.25")], None, N("-2.25")),
    ("DIntegral", [("DIntegral", "5.0")], None, N("5.0")),
    ("DAnnInt", [("DAnnInt@odata.type", '"Edm.Double"'), ("DAnnInt", "7")], None, N("7.0")),
    ("DExp", [("DExp", "3e2")], None, N("300.0")),
    ("DNegZero", [("DNegZero", "-0.0")], None, N("-0.0")),
    ("DZero", [("DZero", "0.0")], None, N("0.0")),
    ("DBig", [("DBig", "1.5e300")], None, N("1.5E+300")),
    ("DSmall", [("DSmall", "1.25e-10")], None, N("1.25E-10")),
    ("DMax", [("DMax", "1.7976931348623157e308")], None, N("1.7976931348623157E+308")),
    ("DDenorm", [("DDenorm", "5e-324")], None, N("5E-324")),
    ("DPi", [("DPi", "3.141592653589793")], None, N("3.141592653589793")),
    ("DTenth", [("DTenth", "0.1")], None, N("0.1")),
    ("DMilli", [("DMilli", "0.001")], None, N("0.001")),
    ("D15", [("D15", "123456789012345.0")], None, N("123456789012345.0")),
    ("D1e15", [("D1e15", "1e15")], None, N("1E+15")),
    ("DStrNum", [("DStrNum@odata.type", '"Edm.Double"'), ("DStrNum", '"1.23456789012346e+24"')],
     None, N("1.23456789012346E+24")),
    ("DNaN", [("DNaN@odata.type", '"Edm.Double"'), ("DNaN", '"NaN"')], "Edm.Double", "NaN"),
    ("DInf", [("DInf@odata.type", '"Edm.Double"'), ("DInf", '"Infinity"')], "Edm.Double",
     "Infinity"),
    ("DNegInf", [("DNegInf@odata.type", '"Edm.Double"'), ("DNegInf", '"-Infinity"')],
     "Edm.Double", "-Infinity"),
    ("BTrue", [("BTrue", "true")], None, True),
    ("BFalse", [("BFalse", "false")], None, False),
    ("Dt", [("Dt@odata.type", '"Edm.DateTime"'), ("Dt", '"2024-06-01T08:30:00Z"')],
     "Edm.DateTime", "2024-06-01T08:30:00Z"),
    ("Dt7", [("Dt7@odata.type", '"Edm.DateTime"'), ("Dt7", '"2024-06-03T10:00:00.1234567Z"')],
     "Edm.DateTime", "2024-06-03T10:00:00.1234567Z"),
    ("DtTrim", [("DtTrim@odata.type", '"Edm.DateTime"'),
                ("DtTrim", '"2020-09-17T00:00:00.9999900Z"')],
     "Edm.DateTime", "2020-09-17T00:00:00.99999Z"),
    ("DtZeroFrac", [("DtZeroFrac@odata.type", '"Edm.DateTime"'),
                    ("DtZeroFrac", '"2021-01-01T00:00:00.0000000Z"')],
     "Edm.DateTime", "2021-01-01T00:00:00Z"),
    ("DtHalf", [("DtHalf@odata.type", '"Edm.DateTime"'), ("DtHalf", '"2024-01-01T00:00:00.5Z"')],
     "Edm.DateTime", "2024-01-01T00:00:00.5Z"),
    ("DtMin", [("DtMin@odata.type", '"Edm.DateTime"'), ("DtMin", '"1601-01-01T00:00:00Z"')],
     "Edm.DateTime", "1601-01-01T00:00:00Z"),
    ("DtMax", [("DtMax@odata.type", '"Edm.DateTime"'),
               ("DtMax", '"9999-12-31T23:59:59.9999999Z"')],
     "Edm.DateTime", "9999-12-31T23:59:59.9999999Z"),
    ("DtAfter", [("DtAfter", '"2000-02-29T12:00:00.0000001Z"'),
                 ("DtAfter@odata.type", '"Edm.DateTime"')],
     "Edm.DateTime", "2000-02-29T12:00:00.0000001Z"),
    ("G", [("G@odata.type", '"Edm.Guid"'), ("G", '"4E2E8B0C-5BB7-4C3C-9F43-3A6F1D0B2C11"')],
     "Edm.Guid", "4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11"),
    ("GAfter", [("GAfter", '"00000000-0000-0000-0000-000000000000"'),
                ("GAfter@odata.type", '"Edm.Guid"')],
     "Edm.Guid", "00000000-0000-0000-0000-000000000000"),
    ("Bin", [("Bin@odata.type", '"Edm.Binary"'), ("Bin", '"AAEC/w=="')], "Edm.Binary",
     "AAEC/w=="),
    ("BinEmpty", [("BinEmpty@odata.type", '"Edm.Binary"'), ("BinEmpty", '""')], "Edm.Binary",
     ""),
    ("BinAfter", [("BinAfter", '"+/+/AA=="'), ("BinAfter@odata.type", '"Edm.Binary"')],
     "Edm.Binary", "+/+/AA=="),
    ("StrAnn", [("StrAnn@odata.type", '"Edm.String"'), ("StrAnn", '"12"')], None, "12"),
]

BIG_PROPS = [
    ("U2", "\u00fc" * 32768),            # 32,768 UTF-16 units, 64 KiB of UTF-8
    ("U3", "\u20ac" * 32768),            # 96 KiB of UTF-8
    ("U4", "\U0001F600" * 16384),        # surrogate pairs: 32,768 UTF-16 units
    ("Mixed", "a\u00e9\u65e5\U0001F600" * 6553 + "abc"),   # 5 units each: 32,768
]


def edm_body(pk, rk, props):
    members = [("PartitionKey", js(pk)), ("RowKey", js(rk))]
    for _, req, _, _ in props:
        members += req
    return body_of(members)


def expected_props(props):
    return [(name, annot, value) for name, _, annot, value in props]


@add_group
def edm_exact(t):
    """Every Edm type, every metadata level, exact member order."""
    name = t.table("Edm")
    body = edm_body("pk", "rk", EDM_PROPS)
    want = expected_props(EDM_PROPS)
    r = t.req("POST", "/" + name, body=body.encode("utf-8"))
    t.check_json_ok(r, "insert the all-types entity", status=201, etag=True,
                    location="%s/%s(PartitionKey='pk',RowKey='rk')" % (t.base, name))
    if r.status != 201:
        return
    ts = t.timestamp_of(r)
    t.eq(r.h("ETag"), h.etag_for(ts), "insert ETag header is derived from the body Timestamp")
    t.exact(r, t.entity_entry(name, "pk", "rk", ts, want, "minimalmetadata"),
            "insert 201 body: every type, minimalmetadata, exact")
    got_min = None
    for level in LEVELS:
        r = t.get(name, "pk", "rk", level=level)
        t.check_json_ok(r, "Get Entity all types (%s)" % level, level=level, etag=True)
        t.eq(r.h("ETag"), h.etag_for(ts), "Get Entity ETag (%s)" % level)
        t.exact(r, t.entity_entry(name, "pk", "rk", ts, want, level),
                "Get Entity: every type exact (%s)" % level)
        j = t.jbody(r)
        if level == "minimalmetadata":
            got_min = j
        # one line per property, so a single wrong type is easy to see
        for pname, annot, value in want:
            ga = member(j, pname + "@odata.type")
            gv = member(j, pname, KeyError)
            wa = annot if level != "nometadata" else None
            d = diff(gv, value) if gv is not KeyError else "missing"
            t.ok(d is None and ga == wa, "%s: %s -> %s%s" % (
                level, pname, (wa + " ") if wa else "", h._short(value, 60)),
                "value: %s\nannotation: %r (want %r)" % (d, ga, wa))
    for level in LEVELS:
        r = t.req("GET", "/" + name + "()", headers={"Accept": h.ACCEPT[level]})
        t.check_json_ok(r, "Query Entities all types (%s)" % level, level=level)
        t.exact(r, t.entity_feed(name, [t.entity_entry(name, "pk", "rk", ts, want, level,
                                                       single=False)], level),
                "Query Entities feed: every type exact (%s)" % level)
    # write back what minimal and full metadata returned: nothing may change
    for level in ("minimalmetadata", "fullmetadata"):
        r = t.get(name, "pk", "rk", level=level)
        r = t.req("PUT", t.ep(name, "pk", "rk"), body=r.body, headers={"If-Match": "*"})
        t.eq(r.status, 204, "PUT back the %s body" % level)
        r = t.get(name, "pk", "rk", level="minimalmetadata")
        ts2 = t.timestamp_of(r)
        t.exact(r, t.entity_entry(name, "pk", "rk", ts2, want, "minimalmetadata"),
                "every type survives a write-back of its %s form" % level)
    t.ok(got_min is not None, "minimalmetadata body was read")
    t.http.delete_table(name)


@add_group
def edm_big(t):
    """64 KiB strings of multi-byte characters and 64 KiB binary at every level."""
    import base64
    name = t.table("Big")
    blob = base64.b64encode(bytes(range(256)) * 256).decode()
    props = [(n, [(n, js(v))], None, v) for n, v in BIG_PROPS]
    props.append(("Bin", [("Bin@odata.type", '"Edm.Binary"'), ("Bin", js(blob))], "Edm.Binary",
                  blob))
    # one copy raw UTF-8, one with every non-ASCII character escaped
    t.insert(name, edm_body("p", "raw", props).encode("utf-8"))
    esc = "{" + ",".join(
        [json.dumps("PartitionKey") + ':"p"', json.dumps("RowKey") + ':"esc"'] +
        ["%s:%s" % (json.dumps(n), json.dumps(v)) for n, v in BIG_PROPS] +
        ['"Bin@odata.type":"Edm.Binary"', '"Bin":' + json.dumps(blob)]) + "}"
    t.insert(name, esc)
    want = expected_props(props)
    for rk in ("raw", "esc"):
        for level in LEVELS:
            r = t.get(name, "p", rk, level=level)
            ts = t.timestamp_of(r)
            t.exact(r, t.entity_entry(name, "p", rk, ts, want, level),
                    "64 KiB strings and binary round-trip (%s body, %s)" % (rk, level))
    t.http.delete_table(name)


@add_group
def edm_inputs(t):
    """Accepted input forms that are not the canonical output form."""
    name = t.table("Inp")
    cases = [
        ("DtNoZ", [("DtNoZ@odata.type", '"Edm.DateTime"'), ("DtNoZ", '"2012-01-02T23:00:00"')],
         "Edm.DateTime", "2012-01-02T23:00:00Z", "DateTime without Z is UTC"),
        ("DtOff", [("DtOff@odata.type", '"Edm.DateTime"'),
                   ("DtOff", '"2024-06-01T10:30:00.25+02:00"')],
         "Edm.DateTime", "2024-06-01T08:30:00.25Z", "DateTime with +02:00 is converted to UTC"),
        ("DtNegOff", [("DtNegOff@odata.type", '"Edm.DateTime"'),
                      ("DtNegOff", '"2024-12-31T23:30:00-01:00"')],
         "Edm.DateTime", "2025-01-01T00:30:00Z", "DateTime with -01:00 crosses midnight"),
        ("I32Str", [("I32Str@odata.type", '"Edm.Int32"'), ("I32Str", '"123"')], None, N("123"),
         "Int32 given as an annotated string"),
        ("BStr", [("BStr@odata.type", '"Edm.Boolean"'), ("BStr", '"true"')], None, True,
         "Boolean given as an annotated string"),
        ("I64Num", [("I64Num@odata.type", '"Edm.Int64"'), ("I64Num", "123")], "Edm.Int64", "123",
         "Int64 given as an annotated JSON number"),
        ("I64Lead", [("I64Lead@odata.type", '"Edm.Int64"'), ("I64Lead", '"-0042"')],
         "Edm.Int64", "-42", "Int64 with leading zeros is emitted canonically"),
        ("GBrace", [("GBrace@odata.type", '"Edm.Guid"'),
                    ("GBrace", '"{4E2E8B0C-5BB7-4C3C-9F43-3A6F1D0B2C11}"')],
         "Edm.Guid", "4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11", "Guid in braces"),
        ("DStrInt", [("DStrInt@odata.type", '"Edm.Double"'), ("DStrInt", '"12"')], None,
         N("12.0"), "Double given as the string 12"),
        ("DtFrac9", [("DtFrac9@odata.type", '"Edm.DateTime"'),
                     ("DtFrac9", '"2024-01-01T00:00:00.123456789Z"')],
         "Edm.DateTime", ("2024-01-01T00:00:00.1234567Z", "2024-01-01T00:00:00.1234568Z"),
         "DateTime with 9 fractional digits is cut to 100 ns"),
    ]
    for i, (pname, req, annot, value, why) in enumerate(cases):
        body = body_of([("PartitionKey", '"p"'), ("RowKey", js(str(i)))] + req)
        r = t.req("POST", "/" + name, body=body)
        if r.status != 201:
            t.ok(False, why, "insert -> %s %s" % (r.status, r.body[:300]))
            continue
        j = t.jbody(t.get(name, "p", str(i)))
        gv, ga = member(j, pname, KeyError), member(j, pname + "@odata.type")
        values = value if isinstance(value, tuple) else (value,)
        t.ok(any(diff(gv, v) is None for v in values) and ga == annot, why,
             "got %r (annotation %r), want %r (%r)" % (gv, ga, values, annot))
    # ignored members, nulls, Timestamp, unannotated number forms
    body = body_of([
        ("odata.metadata", '"http://x/$metadata#foo/@Element"'), ("odata.type", '"x.y"'),
        ("odata.id", '"http://x/y"'), ("odata.editLink", '"y"'),
        ("odata.etag", '"W/\\"datetime\'2000-01-01T00%3A00%3A00Z\'\\""'),
        ("PartitionKey@odata.type", '"Edm.String"'), ("PartitionKey", '"p"'),
        ("RowKey@odata.type", '"Edm.String"'), ("RowKey", '"ign"'),
        ("Timestamp@odata.type", '"Edm.DateTime"'), ("Timestamp", '"2000-01-01T00:00:00Z"'),
        ("Gone", "null"), ("Three", "3.0"), ("Exp", "3e2"), ("Neg", "-0"),
        ("Orphan@odata.type", '"Edm.Int64"'), ("Kept", '"x"')])
    r = t.req("POST", "/" + name, body=body)
    t.eq(r.status, 201, "odata.* members, system annotations, Timestamp and null are accepted")
    if r.status == 201:
        ts = t.timestamp_of(r)
        t.ok(ts != "2000-01-01T00:00:00Z", "a client-supplied Timestamp is ignored", ts)
        t.exact(t.get(name, "p", "ign", level="nometadata"),
                t.entity_entry(name, "p", "ign", ts, [
                    ("Three", None, N("3.0")), ("Exp", None, N("300.0")),
                    ("Neg", None, N("0")), ("Kept", None, "x")], "nometadata"),
                "null is not stored, 3.0/3e2 are Doubles, -0 is Int32 0, orphan annotation "
                "ignored")
    r = t.req("POST", "/" + name, body='\ufeff{"PartitionKey":"p","RowKey":"bom"}'.encode())
    t.eq(r.status, 201, "a UTF-8 BOM before the JSON body is accepted")
    r = t.req("POST", "/" + name, body=' \r\n\t{ "PartitionKey" : "p" , "RowKey" : "ws" } \n')
    t.eq(r.status, 201, "insignificant whitespace in the body is accepted")
    t.http.delete_table(name)


@add_group
def entity_reads(t):
    name = t.table("Reads")
    r = t.req("GET", "/" + name, headers={"Accept": h.ACCEPT["minimalmetadata"]})
    t.check_json_ok(r, "Query Entities on an empty table")
    t.exact(r, t.entity_feed(name, [], "minimalmetadata"), "empty table feed body")
    r = t.req("GET", "/" + name, headers={"Accept": h.ACCEPT["nometadata"]})
    t.exact(r, Obj([("value", [])]), "empty table feed body (nometadata)")
    keys = [("b", "1"), ("a", "b"), ("B", "z"), ("a", "a"), ("a", "B"), ("\u00e9", "x"),
            ("a", "\U0001F600"), ("a", "\uffff"), ("", "x"), ("a", "")]
    for i, (pk, rk) in enumerate(keys):
        t.insert(name, {"PartitionKey": pk, "RowKey": rk, "I": i})
    r = t.req("GET", "/" + name, headers={"Accept": h.ACCEPT["nometadata"]})
    order = [(member(e, "PartitionKey"), member(e, "RowKey"))
             for e in member(t.jbody(r), "value", [])]
    want = sorted(keys, key=lambda k: (k[0].encode("utf-16-be"), k[1].encode("utf-16-be")))
    t.eq(order, want, "Query Entities orders by PartitionKey then RowKey, ordinal UTF-16")
    t.ok(member(t.jbody(r), "odata.nextLink") is None and not r.has("x-ms-continuation-NextPartitionKey"),
         "feed has no odata.nextLink and no continuation for 10 entities")
    # custom properties in insertion order
    body = body_of([("PartitionKey", '"o"'), ("RowKey", '"o"'), ("zeta", "1"), ("Alpha", "2"),
                    ("mid", '"m"'), ("_u", "true"), ("\u00e9t\u00e9", "3")])
    t.insert(name, body)
    r = t.get(name, "o", "o", level="nometadata")
    t.eq([k for k, _ in t.jbody(r)][3:], ["zeta", "Alpha", "mid", "_u", "\u00e9t\u00e9"],
         "custom properties come back in insertion order")
    # $select
    t.insert(name, {"PartitionKey": "s", "RowKey": "s", "Qty": 3, "Name": "n", "Total": 1.5})
    r = t.req("GET", t.ep(name, "s", "s") + "?$select=Qty")
    ts = member(t.jbody(r), "Timestamp")
    want_sel = Obj([("odata.metadata", "%s/$metadata#%s/@Element&$select=Qty" % (t.base, name)),
                    ("odata.etag", r.h("ETag")), ("Qty", N("3"))])
    t.exact(r, want_sel, "Get Entity $select=Qty: only Qty plus odata.etag, metadata echoes it")
    t.ok(ts is None, "no Timestamp when not selected")
    r = t.req("GET", t.ep(name, "s", "s") + "?$select=Total,Missing,RowKey",
              headers={"Accept": h.ACCEPT["nometadata"]})
    j = t.jbody(r)
    names = [k for k, _ in j] if isinstance(j, Obj) else []
    t.ok(sorted(names) == ["Missing", "RowKey", "Total"] and member(j, "Missing", 0) is None
         and member(j, "Total") == N("1.5") and member(j, "RowKey") == "s"
         and names.index("RowKey") < names.index("Total"),
         "$select: listed properties only, stored order, a missing one as null",
         h._short(r.body, 300))
    r = t.req("GET", "/" + name + "?$select=Qty", headers={"Accept": h.ACCEPT["nometadata"]})
    vals = member(t.jbody(r), "value", [])
    t.ok(len(vals) == len(keys) + 2 and all([k for k, _ in e] == ["Qty"] for e in vals),
         "Query Entities $select=Qty returns only Qty for every entity",
         h._short(r.body, 500))
    r = t.req("GET", "/" + name + "?$select=Qty")
    t.eq(member(t.jbody(r), "odata.metadata"), "%s/$metadata#%s&$select=Qty" % (t.base, name),
         "Query Entities $select odata.metadata")
    # misses
    r = t.get(name, "nope", "nope")
    t.check_error(r, 404, "ResourceNotFound", "Get Entity of a missing entity")
    r = t.get(name, "nope", "nope", level="nometadata")
    t.check_error(r, 404, "ResourceNotFound", "Get Entity of a missing entity (nometadata)",
                  level="nometadata")
    r = t.get("NoSuchTable", "p", "r", level="fullmetadata")
    t.check_error(r, 404, "TableNotFound", "Get Entity in a missing table (fullmetadata)",
                  level="fullmetadata")
    r = t.req("GET", "/NoSuchTable()")
    t.check_error(r, 404, "TableNotFound", "Query Entities on a missing table")
    t.http.delete_table(name)


# --------------------------------------------------------------------------
# Writes, If-Match, Prefer, X-HTTP-Method, Timestamp


@add_group
def writes(t):
    name = t.table("Writes")
    ent = {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"}
    loc = "%s/%s(PartitionKey='p',RowKey='r')" % (t.base, name)
    r = t.req("POST", "/" + name, body=ent)
    t.check_json_ok(r, "Insert Entity", status=201, etag=True, location=loc)
    ts = t.timestamp_of(r)
    t.eq(r.h("ETag"), h.etag_for(ts), "insert: ETag header = W/\"datetime'<Timestamp with %3A>'\"")
    t.eq(member(t.jbody(r), "odata.etag"), r.h("ETag"), "insert: odata.etag equals ETag header")
    etag1 = r.h("ETag")
    r = t.req("POST", "/" + name, body=ent)
    t.check_error(r, 409, "EntityAlreadyExists", "Insert of an existing entity")
    r = t.req("POST", "/" + name, body=ent, headers={"If-Match": "*"})
    t.check_error(r, 409, "EntityAlreadyExists", "Insert ignores If-Match")
    r = t.req("POST", "/NoSuchTable", body=ent)
    t.check_error(r, 404, "TableNotFound", "Insert into a missing table")
    r = t.req("GET", t.ep(name, "p", "r"))
    t.eq((r.h("ETag"), member(t.jbody(r), "odata.etag")), (etag1, etag1),
         "Get Entity ETag header and odata.etag equal the insert ETag")
    # Update (PUT with If-Match)
    r = t.req("PUT", t.ep(name, "p", "r"), body={"C": 3}, headers={"If-Match": "*"})
    t.check_no_content(r, "Update Entity (PUT, If-Match: *)", etag=True)
    etag2 = r.h("ETag")
    r = t.get(name, "p", "r", level="nometadata")
    ts2 = member(t.jbody(r), "Timestamp")
    t.exact(r, t.entity_entry(name, "p", "r", ts2, [("C", None, N("3"))], "nometadata"),
            "PUT replaces: A and B are gone, C is set")
    t.eq(etag2, h.etag_for(ts2), "the 204 ETag matches the new Timestamp")
    r = t.req("PUT", t.ep(name, "p", "r"), body={"D": 4}, headers={"If-Match": etag2})
    t.check_no_content(r, "Update with the current ETag", etag=True)
    etag3 = r.h("ETag")
    t.ok(etag3 != etag2, "a new ETag after the update", etag3)
    r = t.req("PUT", t.ep(name, "p", "r"), body={"E": 5}, headers={"If-Match": etag2})
    t.check_error(r, 412, "UpdateConditionNotSatisfied", "Update with a stale ETag")
    r = t.req("PUT", t.ep(name, "p", "ghost"), body={"E": 5}, headers={"If-Match": "*"})
    t.check_error(r, 404, "ResourceNotFound", "Update of a missing entity with If-Match: *")
    r = t.req("PUT", t.ep(name, "p", "ghost"), body={"E": 5}, headers={"If-Match": etag3})
    t.check_error(r, 404, "ResourceNotFound", "Update of a missing entity with an ETag")
    # Insert Or Replace
    r = t.req("PUT", t.ep(name, "p", "new"), body={"F": 6})
    t.check_no_content(r, "PUT without If-Match on a missing entity (insert)", etag=True)
    t.eq(member(t.jbody(t.get(name, "p", "new")), "F"), N("6"), "Insert Or Replace inserted it")
    r = t.req("PUT", t.ep(name, "p", "new"), body={"G": 7})
    t.check_no_content(r, "PUT without If-Match on an existing entity (replace)", etag=True)
    j = t.jbody(t.get(name, "p", "new"))
    t.ok(member(j, "G") == N("7") and member(j, "F", KeyError) is KeyError,
         "Insert Or Replace replaced the property set", h._short(j, 300))
    # Merge
    t.insert(name, {"PartitionKey": "m", "RowKey": "m", "Keep": "k", "Num": 1, "Nul": "v"})
    r = t.req("MERGE", t.ep(name, "m", "m"), body={"Num": 2, "Add": True},
              headers={"If-Match": "*"})
    t.check_no_content(r, "Merge Entity (MERGE, If-Match: *)", etag=True)
    r = t.get(name, "m", "m", level="nometadata")
    tsm = member(t.jbody(r), "Timestamp")
    t.exact(r, t.entity_entry(name, "m", "m", tsm, [
        ("Keep", None, "k"), ("Num", None, N("2")), ("Nul", None, "v"), ("Add", None, True)],
        "nometadata"), "MERGE keeps unlisted properties, overwrites Num in place, appends Add")
    r = t.req("PATCH", t.ep(name, "m", "m"),
              body='{"Num@odata.type":"Edm.Int64","Num":"9","Nul":null}',
              headers={"If-Match": "*"})
    t.check_no_content(r, "PATCH (merge) with If-Match: *", etag=True)
    r = t.get(name, "m", "m")
    j = t.jbody(r)
    t.ok(member(j, "Num@odata.type") == "Edm.Int64" and member(j, "Num") == "9",
         "merge changes a property's type (Int32 -> Int64)", h._short(j, 400))
    t.eq(member(j, "Nul"), "v", "merge ignores a null property (value unchanged)")
    r = t.req("MERGE", t.ep(name, "m", "m"), body={"X": 1}, headers={"If-Match": etag1})
    t.check_error(r, 412, "UpdateConditionNotSatisfied", "Merge with a stale ETag")
    r = t.req("PATCH", t.ep(name, "m", "ghost"), body={"X": 1}, headers={"If-Match": "*"})
    t.check_error(r, 404, "ResourceNotFound", "PATCH of a missing entity with If-Match: *")
    r = t.req("MERGE", t.ep(name, "m", "new"), body={"H": 8})
    t.check_no_content(r, "MERGE without If-Match on a missing entity (insert)", etag=True)
    r = t.req("PATCH", t.ep(name, "m", "new"), body={"I": 9})
    t.check_no_content(r, "PATCH without If-Match on an existing entity (merge)", etag=True)
    j = t.jbody(t.get(name, "m", "new", level="nometadata"))
    t.ok(member(j, "H") == N("8") and member(j, "I") == N("9"),
         "Insert Or Merge merged into the existing entity", h._short(j, 300))
    r = t.req("MERGE", t.ep(name, "m", "new"), body="{}", headers={"If-Match": "*"})
    t.check_no_content(r, "MERGE with {} is valid", etag=True)
    # PATCH and MERGE agree exactly
    for verb in ("MERGE", "PATCH"):
        t.insert(name, {"PartitionKey": "pm", "RowKey": verb, "A": 1, "B": 2})
        t.req(verb, t.ep(name, "pm", verb), body={"B": 3, "C": 4}, headers={"If-Match": "*"})
    a = t.jbody(t.get(name, "pm", "MERGE", level="nometadata"))
    b = t.jbody(t.get(name, "pm", "PATCH", level="nometadata"))
    t.eq([(k, v) for k, v in a if k not in ("RowKey", "Timestamp")],
         [(k, v) for k, v in b if k not in ("RowKey", "Timestamp")],
         "PATCH behaves exactly like MERGE")
    # Prefer is ignored by update, merge and delete
    for verb, hdrs in (("PUT", {"If-Match": "*"}), ("MERGE", {"If-Match": "*"}),
                       ("PUT", {}), ("PATCH", {})):
        for pref in ("return-content", "return-no-content"):
            hd = dict(hdrs, Prefer=pref)
            r = t.req(verb, t.ep(name, "m", "m"), body={"P": 1}, headers=hd)
            t.check_no_content(r, "%s%s with Prefer: %s is a plain 204" % (
                verb, " If-Match" if hdrs else "", pref), etag=True)
    # Delete
    r = t.req("DELETE", t.ep(name, "m", "new"), headers={"If-Match": etag1})
    t.check_error(r, 412, "UpdateConditionNotSatisfied", "Delete with a stale ETag")
    r = t.req("DELETE", t.ep(name, "m", "new"))
    t.check_error(r, 400, "MissingRequiredHeader", "Delete without If-Match")
    cur = t.get(name, "m", "new").h("ETag")
    r = t.req("DELETE", t.ep(name, "m", "new"), headers={"If-Match": cur,
                                                         "Prefer": "return-content"})
    t.check_no_content(r, "Delete with the current ETag", etag=False)
    r = t.req("DELETE", t.ep(name, "p", "new"), headers={"If-Match": "*"})
    t.check_no_content(r, "Delete with If-Match: *", etag=False)
    r = t.get(name, "p", "new")
    t.check_error(r, 404, "ResourceNotFound", "Get after Delete")
    r = t.req("DELETE", t.ep(name, "p", "new"), headers={"If-Match": "*"})
    t.check_error(r, 404, "ResourceNotFound", "Delete of a missing entity")
    # keys in the body vs the URL: the URL wins
    r = t.req("PUT", t.ep(name, "url", "url"),
              body={"PartitionKey": "body", "RowKey": "body", "V": 1})
    t.eq(r.status, 204, "PUT with different keys in the body")
    t.eq((t.get(name, "url", "url").status, t.get(name, "body", "body").status), (200, 404),
         "the URL keys identify the entity; the body keys are ignored")
    r = t.req("MERGE", t.ep(name, "url", "url"), body={"PartitionKey": "url", "RowKey": "url",
                                                        "W": 2}, headers={"If-Match": "*"})
    t.eq(r.status, 204, "MERGE with the same keys in the body")
    t.http.delete_table(name)


@add_group
def prefer(t):
    name = t.table("Prefer")
    ent = {"PartitionKey": "p", "RowKey": "1"}
    loc = "%s/%s(PartitionKey='p',RowKey='1')" % (t.base, name)
    r = t.req("POST", "/" + name, body=ent, headers={"Prefer": "return-no-content"})
    t.check_no_content(r, "Insert with Prefer: return-no-content", etag=True, location=loc,
                       prefer="return-no-content")
    g = t.get(name, "p", "1")
    t.eq(r.h("ETag"), g.h("ETag"), "the 204 ETag is the stored entity's ETag")
    ent2 = {"PartitionKey": "p", "RowKey": "2", "V": 1.5}
    r = t.req("POST", "/" + name, body=ent2, headers={"Prefer": "return-content"})
    t.check_json_ok(r, "Insert with Prefer: return-content", status=201, etag=True,
                    location=loc.replace("'1'", "'2'"), prefer="return-content")
    ts = t.timestamp_of(r)
    t.exact(r, t.entity_entry(name, "p", "2", ts, [("V", None, N("1.5"))], "minimalmetadata"),
            "return-content body is the stored entity")
    r = t.req("POST", "/" + name, body={"PartitionKey": "p", "RowKey": "3"},
              headers={"Prefer": "Return-No-Content"})
    t.eq((r.status, r.h("Preference-Applied")), (204, "return-no-content"),
         "the Prefer token is matched case-insensitively")
    r = t.req("POST", "/" + name, body={"PartitionKey": "p", "RowKey": "4"},
              headers={"Prefer": "odata.continue-on-error"})
    t.eq((r.status, r.h("Preference-Applied")), (201, None),
         "an unknown Prefer token is ignored (201, no Preference-Applied)")
    r = t.req("POST", "/" + name, body=ent, headers={"Prefer": "return-no-content"})
    t.check_error(r, 409, "EntityAlreadyExists", "failed insert with Prefer: return-no-content",
                  prefer="return-no-content")
    for level in LEVELS:
        rk = "lvl" + level
        r = t.req("POST", "/" + name, body={"PartitionKey": "p", "RowKey": rk, "I": 1},
                  headers={"Accept": h.ACCEPT[level], "Prefer": "return-content"})
        t.check_json_ok(r, "Insert 201 (%s)" % level, status=201, etag=True, level=level,
                        location=loc.replace("'1'", "'%s'" % rk), prefer="return-content")
        ts = t.timestamp_of(r)
        t.exact(r, t.entity_entry(name, "p", rk, ts, [("I", None, N("1"))], level),
                "Insert 201 body (%s)" % level)
    t.http.delete_table(name)


@add_group
def if_match(t):
    name = t.table("IfMatch")
    t.insert(name, {"PartitionKey": "p", "RowKey": "r", "V": 1})
    path = t.ep(name, "p", "r")
    etag = t.get(name, "p", "r").h("ETag")
    ts = etag[len("W/\"datetime'"):-2]
    # Values that are no (weak) ETag at all: 400 InvalidInput. A strong
    # ETag counts among them: the service wants W/ (Azure/Azurite#1229 and
    # its tests, written against the service; doc/protocol.md, If-Match).
    for bad, why in (("\"datetime'%s'\"" % ts, "no W/ prefix"),
                     ("\"x\"", "a strong ETag"),
                     ("W/datetime'%s'" % ts, "no quotes"),
                     ("W/\"x", "no closing quote"),
                     ("garbage", "garbage"),
                     ("%s, %s" % (etag, etag), "two ETags")):
        for verb in ("PUT", "MERGE"):
            r = t.req(verb, path, body={"V": 2}, headers={"If-Match": bad})
            t.check_error(r, 400, "InvalidInput", "%s with If-Match of %s" % (verb, why),
                          message="One of the request inputs is not valid.")
        r = t.req("DELETE", path, headers={"If-Match": bad})
        t.check_error(r, 400, "InvalidInput", "DELETE with If-Match of %s" % why,
                      message="One of the request inputs is not valid.")
    # Any well-formed weak ETag that is not the current one: 412 (issue 14
    # point 4; it was 400 for the forms this server never issues).
    for stale, why in (("W/\"wrong\"", "W/\"wrong\""),
                       ("w/\"wrong\"", "a lower-case w/ prefix"),
                       ("W/\"\"", "an empty weak ETag"),
                       ("W/\"datetime'not-a-time'\"", "an unparsable datetime"),
                       ("W/\"%s\"" % ts, "no datetime'' wrapper"),
                       ("W/\"datetime'2020-01-01T00%3A00%3A00Z'\"", "an old datetime")):
        for verb in ("PUT", "MERGE", "PATCH"):
            r = t.req(verb, path, body={"V": 2}, headers={"If-Match": stale})
            t.check_error(r, 412, "UpdateConditionNotSatisfied",
                          "%s with If-Match of %s" % (verb, why))
        r = t.req("DELETE", path, headers={"If-Match": stale})
        t.check_error(r, 412, "UpdateConditionNotSatisfied", "DELETE with If-Match of %s" % why)
    missing = t.ep(name, "p", "nosuch")
    r = t.req("MERGE", missing, body={"V": 2}, headers={"If-Match": "W/\"wrong\""})
    t.check_error(r, 404, "ResourceNotFound", "MERGE of a missing entity with W/\"wrong\"")
    r = t.req("DELETE", missing, headers={"If-Match": "w/\"wrong\""})
    t.check_error(r, 404, "ResourceNotFound", "DELETE of a missing entity with w/\"wrong\"")
    r = t.req("PUT", path, body={"V": 2}, headers={"If-Match": ""})
    t.check_error(r, 412, "UpdateConditionNotSatisfied", "PUT with an empty If-Match")
    r = t.req("PUT", path, body={"V": 2}, headers={"If-None-Match": "*"})
    t.check_error(r, 400, "InvalidInput", "PUT with If-None-Match")
    r = t.req("MERGE", path, body={"V": 2}, headers={"If-Match": "*", "If-None-Match": etag})
    t.check_error(r, 400, "InvalidInput", "MERGE with both If-Match and If-None-Match")
    r = t.req("DELETE", path, headers={"If-None-Match": "*"})
    t.check_error(r, 400, "InvalidInput", "DELETE with If-None-Match")
    r = t.req("GET", path, headers={"If-None-Match": etag})
    t.eq(r.status, 200, "If-None-Match on GET is ignored")
    t.eq(t.get(name, "p", "r").h("ETag"), etag, "none of the rejected writes changed the entity")
    r = t.req("PUT", path, body={"V": 3}, headers={"If-Match": etag.replace("%3A", ":")})
    t.check_no_content(r, "If-Match with ':' instead of '%3A' still matches", etag=True)
    t.http.delete_table(name)


@add_group
def x_http_method(t):
    name = t.table("Tunnel")
    t.insert(name, {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": 2})
    path = t.ep(name, "p", "r")
    r = t.req("POST", path, body={"C": 3}, headers={"X-HTTP-Method": "MERGE", "If-Match": "*"})
    t.check_no_content(r, "POST + X-HTTP-Method: MERGE", etag=True)
    j = t.jbody(t.get(name, "p", "r", level="nometadata"))
    t.eq([k for k, _ in j][3:], ["A", "B", "C"], "the tunnelled MERGE merged")
    r = t.req("POST", path, body={"D": 4}, headers={"X-HTTP-Method": "PUT", "If-Match": "*"})
    t.check_no_content(r, "POST + X-HTTP-Method: PUT", etag=True)
    j = t.jbody(t.get(name, "p", "r", level="nometadata"))
    t.eq([k for k, _ in j][3:], ["D"], "the tunnelled PUT replaced")
    r = t.req("POST", path, headers={"X-HTTP-Method": "DELETE", "If-Match": "*"})
    t.check_no_content(r, "POST + X-HTTP-Method: DELETE", etag=False)
    t.check_error(t.get(name, "p", "r"), 404, "ResourceNotFound", "the tunnelled DELETE deleted")
    r = t.req("GET", "/" + name, headers={"X-HTTP-Method": "MERGE"})
    t.check_error(r, 400, "XMethodNotUsingPost", "X-HTTP-Method on a GET")
    r = t.req("PUT", path, body={"A": 1}, headers={"X-HTTP-Method": "PUT"})
    t.check_error(r, 400, "XMethodNotUsingPost", "X-HTTP-Method on a PUT")
    r = t.req("POST", path, body={"A": 1}, headers={"X-HTTP-Method": "FOO"})
    t.check_error(r, 400, "XMethodIncorrectValue", "X-HTTP-Method: FOO")
    r = t.req("POST", path, body={"A": 1}, headers=[("X-HTTP-Method", "MERGE"),
                                                    ("X-HTTP-Method", "PUT")])
    t.check_error(r, 400, "XMethodIncorrectCount", "two X-HTTP-Method headers")
    t.check_error(t.get(name, "p", "r"), 404, "ResourceNotFound",
                  "the rejected tunnelled requests wrote nothing")
    t.http.delete_table(name)


@add_group
def timestamps(t):
    name = t.table("Times")
    t.insert(name, {"PartitionKey": "p", "RowKey": "r"})
    t.insert(name, {"PartitionKey": "p", "RowKey": "s"})
    seen = []
    with t.http.connect() as c:
        for i in range(30):
            verb = ("PUT", "MERGE", "PATCH")[i % 3]
            rk = "r" if i % 4 else "s"
            hdrs = {"If-Match": "*"} if i % 2 else {}
            r = c.request(verb, t.ep(name, "p", rk), body={"I": i}, headers=hdrs)
            seen.append((rk, r.status, r.h("ETag")))
    t.ok(all(s == 204 for _, s, _ in seen), "30 back-to-back writes on one connection -> 204",
         repr([s for _, s, _ in seen]))

    def ticks(etag):
        m = re.match(r"^W/\"datetime'(.*)'\"$", etag or "")
        return h.dt_ticks(m.group(1).replace("%3A", ":")) if m else None

    per = {}
    for rk, _, etag in seen:
        per.setdefault(rk, []).append(ticks(etag))
    for rk, tl in per.items():
        t.ok(None not in tl and all(a < b for a, b in zip(tl, tl[1:])),
             "Timestamps of entity %s strictly increase across %d writes" % (rk, len(tl)),
             repr(tl))
    allt = [ticks(e) for _, _, e in seen]
    t.eq(len(set(allt)), len(allt), "every write got a distinct ETag")
    r = t.get(name, "p", "r")
    t.eq(r.h("ETag"), [e for rk, _, e in seen if rk == "r"][-1],
         "Get Entity returns the ETag of the last write")
    now = time.time()
    secs = ticks(r.h("ETag")) / 1e7 - 62135596800
    t.ok(abs(secs - now) < 600, "Timestamp is the current UTC time",
         "server %.1f, client %.1f" % (secs, now))
    t.http.delete_table(name)


@add_group
def concurrency(t):
    """Two updates with the same ETag arriving together: one 204, one 412."""
    name = t.table("Race")
    t.insert(name, {"PartitionKey": "p", "RowKey": "r", "V": 0})
    etag = t.get(name, "p", "r").h("ETag")
    conns = [t.http.connect() for _ in range(4)]
    try:
        for i, c in enumerate(conns):
            c.send(t.http.build("PUT", t.ep(name, "p", "r"), {"If-Match": etag}, {"V": i + 1}))
        statuses = sorted(c.read("PUT").status for c in conns)
    finally:
        for c in conns:
            c.close()
    t.eq(statuses, [204, 412, 412, 412], "4 concurrent updates with one ETag: exactly one wins")
    t.http.delete_table(name)


# --------------------------------------------------------------------------
# Entity limits (accepted boundaries; the rejections are bad inputs)


@add_group
def limits(t):
    name = t.table("Limits")
    props = {"P%03d" % i: i for i in range(252)}
    r = t.req("POST", "/" + name, body=dict(props, PartitionKey="p", RowKey="252"))
    t.eq(r.status, 201, "252 custom properties are accepted")
    j = t.jbody(t.get(name, "p", "252", level="nometadata"))
    t.eq(len(j or []) - 3, 252, "all 252 properties are stored")
    r = t.req("MERGE", t.ep(name, "p", "252"), body={"P000": 5, "P251": 6},
              headers={"If-Match": "*"})
    t.eq(r.status, 204, "merging existing names into a full entity is fine")
    r = t.req("MERGE", t.ep(name, "p", "252"), body={"New1": 1}, headers={"If-Match": "*"})
    t.check_error(r, 400, "TooManyProperties", "merge that would make 253 properties")
    r = t.req("PATCH", t.ep(name, "p", "252"), body={"New%d" % i: i for i in range(10)})
    t.check_error(r, 400, "TooManyProperties", "upsert-merge of 10 new names into 252")
    t.eq(len(t.jbody(t.get(name, "p", "252", level="nometadata")) or []) - 3, 252,
         "the refused merges changed nothing")
    long_name = "N" * 255
    r = t.req("POST", "/" + name, body={"PartitionKey": "p", "RowKey": "n255", long_name: 1})
    t.eq(r.status, 201, "a 255-character property name is accepted")
    t.eq(member(t.jbody(t.get(name, "p", "n255")), long_name), N("1"),
         "the 255-character name round-trips")
    for rk, value, why in (("s32768", "a" * 32768, "32,768 ASCII characters"),
                           ("u32768", "\u00fc" * 32768, "32,768 two-byte characters"),
                           ("e16384", "\U0001F600" * 16384, "16,384 surrogate pairs")):
        r = t.req("POST", "/" + name, body={"PartitionKey": "p", "RowKey": rk, "S": value})
        t.eq(r.status, 201, "a string of %s (32,768 UTF-16 units) is accepted" % why)
    import base64
    b64 = base64.b64encode(b"\xab" * 65536).decode()
    r = t.req("POST", "/" + name, body=body_of([("PartitionKey", '"p"'), ("RowKey", '"b65536"'),
                                                ("B@odata.type", '"Edm.Binary"'),
                                                ("B", js(b64))]))
    t.eq(r.status, 201, "a binary value of 65,536 bytes is accepted")
    r = t.req("POST", "/" + name, body={"PartitionKey": "k" * 1024, "RowKey": "r" * 1024})
    t.eq(r.status, 201, "1,024-character PartitionKey and RowKey are accepted")
    r = t.get(name, "k" * 1024, "r" * 1024)
    t.eq(r.status, 200, "1,024-character keys are addressable in the URL")
    r = t.req("PUT", t.ep(name, "\u00fc" * 1024, "x"), body={"V": 1})
    t.eq(r.status, 204, "a 1,024-character non-ASCII key through the URL is accepted")
    # entity size per doc/protocol.md, Entity size: 4 + 2*(len PK + len RK) + sum(8 + 2*len name + value)
    big = [("s%02d" % i, js("a" * 32768)) for i in range(15)]    # 15 * 65,554
    base_size = 4 + 2 * (1 + 1) + 15 * (8 + 2 * 3 + 4 + 2 * 32768)  # PK, RK 1 char each
    room = 1048576 - base_size - (8 + 2 * 1 + 4)                  # binary property "b"
    for rk, n, status in (("a", room, 201), ("o", room + 1, 400)):
        body = body_of([("PartitionKey", '"p"'), ("RowKey", js(rk))] + big +
                       [("b@odata.type", '"Edm.Binary"'),
                        ("b", js(base64.b64encode(b"z" * n).decode()))])
        r = t.req("POST", "/" + name, body=body)
        if status == 201:
            t.eq(r.status, 201, "an entity of exactly 1,048,576 bytes by the size estimate is accepted")
        else:
            t.check_error(r, 400, "EntityTooLarge",
                          "an entity of 1,048,577 bytes by the size estimate")
    t.http.delete_table(name)


@add_group
def max_keys(t):
    """The longest keys the service accepts (1,024 UTF-16 units each) in
    their longest UTF-8 forms, on whatever backend runs: three-byte
    characters (3,072 bytes each, an entity key of 6,154 bytes in the
    store, more than a PostgreSQL index entry holds) and surrogate pairs;
    entities of such partitions sharing most of their keys, read through
    the URL, updated with If-Match, listed in the service's order (UTF-16
    code units) by a $filter and page by page through continuation
    tokens, and deleted."""
    name = t.table("MaxKeys")
    pk1 = "\u20ac" * 1024                        # 3 bytes each in UTF-8
    pk2 = "\U0001F600" * 512                     # 512 surrogate pairs: 1,024 units
    rks = ["\uff21" * 1024,                      # U+FF21 sorts after surrogates in UTF-16
           "\uff21" * 1023 + "a",
           "\uff21" * 1022 + "\U0001F600",
           "\uff21" * 1023 + "\u00e9",
           "\u00e9" * 1024,
           "a"]
    ents = [(pk, rk) for pk in (pk1, pk2) for rk in rks]
    statuses = [t.req("POST", "/" + name, body={"PartitionKey": pk, "RowKey": rk,
                                                "N": i}).status
                for i, (pk, rk) in enumerate(ents)]
    t.eq(statuses, [201] * len(ents), "12 entities with 1,024-character keys of 2-, 3- and "
         "4-byte characters are inserted")
    got = []
    for i, (pk, rk) in enumerate(ents):
        r = t.get(name, pk, rk, level="nometadata")
        b = json.loads(r.body) if r.status == 200 else {}
        got.append((b.get("PartitionKey") == pk, b.get("RowKey") == rk, b.get("N")))
    t.eq(got, [(True, True, i) for i in range(len(ents))],
         "each is read back through its URL with its own keys and value")
    order = sorted(ents, key=lambda e: (e[0].encode("utf-16-be"), e[1].encode("utf-16-be")))

    def quote(v):
        return urllib.parse.quote(v, safe="")       # base64's '+' must not become a space

    def pages(query, top):
        keys, cont = [], ""
        for _ in range(100):
            r = t.req("GET", "/%s()?%s$top=%d%s" % (name, query, top, cont),
                      headers={"Accept": h.ACCEPT["nometadata"]})
            if r.status != 200:
                return keys + [("status", r.status)]
            keys += [(e["PartitionKey"], e["RowKey"]) for e in json.loads(r.body)["value"]]
            npk = r.h("x-ms-continuation-NextPartitionKey")
            nrk = r.h("x-ms-continuation-NextRowKey")
            if not npk:
                return keys
            cont = "&NextPartitionKey=%s" % quote(npk) + ("&NextRowKey=%s" % quote(nrk)
                                                          if nrk else "")
        return keys

    t.ok(pages("", 1) == order, "the whole table, one entity a page: the service's order "
         "(UTF-16 code units), every continuation token resumed")
    t.ok(pages("$filter=%s&" % h.pct_encode("PartitionKey eq '%s'" % pk1), 4) ==
         [e for e in order if e[0] == pk1], "one partition by $filter, 4 a page: in order")
    t.ok(pages("$filter=%s&" % h.pct_encode("PartitionKey eq '%s' and RowKey gt '%s'" %
                                            (pk2, rks[1])), 2) ==
         [e for e in order if e[0] == pk2 and e[1].encode("utf-16-be") >
          rks[1].encode("utf-16-be")], "a RowKey range inside a partition: in order")
    r = t.get(name, pk2, rks[2])
    etag = r.h("ETag")
    r = t.req("PUT", t.ep(name, pk2, rks[2]), headers={"If-Match": etag}, body={"N": 99})
    t.eq(r.status, 204, "If-Match update of an entity with 1,024-character keys")
    r = t.req("PUT", t.ep(name, pk2, rks[2]), headers={"If-Match": etag}, body={"N": 98})
    t.eq(r.status, 412, "the same ETag again: 412")
    statuses = [t.req("DELETE", t.ep(name, pk, rk), headers={"If-Match": "*"}).status
                for pk, rk in ents]
    t.eq(statuses, [204] * len(ents), "each is deleted")
    t.eq(pages("", 1000), [], "none is left")
    t.http.delete_table(name)


# --------------------------------------------------------------------------
# Errors: XML operations


@add_group
def xml_errors(t):
    r = t.req("PUT", "/?restype=service&comp=properties", body=b"<StorageServiceProperties><",
              content_type="application/xml", headers={"Accept": "application/xml"})
    t.eq((r.status, r.h("x-ms-error-code")), (400, "InvalidXmlDocument"),
         "malformed service properties XML -> 400 with x-ms-error-code InvalidXmlDocument")
    text = r.body.decode("utf-8", "replace")
    m = re.match(r'^(?:\ufeff)?<\?xml version="1\.0" encoding="utf-8"\?>'
                 r'<m:error xmlns:m="http://schemas\.microsoft\.com/ado/2007/08/dataservices/'
                 r'metadata"><m:code>([^<]*)</m:code><m:message xml:lang="en-US">([^<]*)'
                 r'\nRequestId:([^\n<]*)\nTime:([^<]*)</m:message>(?:<[^<>]+>[^<]*</[^<>]+>)*'
                 r'</m:error>$', text)
    p = []
    if not m:
        p.append("not the storage XML <m:error> body: %r" % text[:600])
    else:
        if m.group(1) != "InvalidXmlDocument":
            p.append("code %r" % m.group(1))
        if m.group(3) != r.h("x-ms-request-id"):
            p.append("RequestId %r != %r" % (m.group(3), r.h("x-ms-request-id")))
        if not TIME_RE.match(m.group(4)):
            p.append("Time %r" % m.group(4))
    if not (r.h("Content-Type") or "").startswith("application/xml"):
        p.append("Content-Type %r" % r.h("Content-Type"))
    for name in ("Cache-Control", "X-Content-Type-Options"):
        if r.has(name):
            p.append("unexpected " + name)
    t.ok(not p, "XML operation error: <m:error> body and the XML error header set", "\n".join(p))
    t.alive("malformed service properties XML")


# --------------------------------------------------------------------------
# Bad input: every kind is followed by a normal request that must succeed.


def bad_body(t, table, body, status, code, what, method="POST", path=None, headers=None,
             message=None):
    """Sends one bad entity body; checks the error, then liveness."""
    try:
        r = t.req(method, path or "/" + table, body=body, headers=headers)
        t.check_error(r, status, code, what, message=message)
    except Exception as e:  # noqa: BLE001
        t.ok(False, "%s -> %s %s" % (what, status, code), repr(e))
    t.alive(what)


def bad_get(t, path, status, code, what, absolute=False, headers=None, message=None):
    """A bad URL (or header) on a GET; checks the error, then liveness."""
    try:
        r = t.req("GET", path, absolute=absolute, headers=headers)
        t.check_error(r, status, code, what, message=message)
    except Exception as e:  # noqa: BLE001
        t.ok(False, "%s -> %s %s" % (what, status, code), repr(e))
    t.alive(what)


def bad_raw(t, data, what, statuses, codes=None, closed=None, timeout=5.0, chunks=None):
    """Raw bytes on a fresh connection: the first response must have one of
    statuses (None in statuses allows no response at all) and, when codes is
    given, one of those error codes; closed=True requires the server to
    close the connection afterwards."""
    try:
        got, was_closed = h.raw_exchange(t.srv, data, timeout=timeout,
                                         wait_close=bool(closed), chunks=chunks)
        resp = h.first_response(got)
        status = resp.status if resp else None
        code = resp.error_code() if resp else None
        t.ok(status in statuses and (codes is None or code in codes),
             "%s -> %s%s" % (what, "/".join(str(s) for s in statuses),
                             " " + "/".join(str(c) for c in codes) if codes else ""),
             "got %s %s: %r" % (status, code, got[:400]))
        if closed:
            t.ok(was_closed, "%s: the server closes the connection" % what)
    except Exception as e:  # noqa: BLE001
        t.ok(False, "%s -> %s" % (what, statuses), repr(e))
    t.alive(what)


@add_group
def bad_json_bodies(t):
    name = t.table("BadJson")
    k = '"PartitionKey":"p","RowKey":"r"'
    for body, why in (
            ('{"PartitionKey":"p",', "truncated JSON"),
            ('[1,2]', "a JSON array at the top level"),
            ('"text"', "a JSON string at the top level"),
            ('42', "a number at the top level"),
            ('null', "null at the top level"),
            ('', "an empty body"),
            ('{%s}x' % k, "trailing garbage after the object"),
            ('{%s}{}' % k, "two JSON documents"),
            ("{'PartitionKey':'p','RowKey':'r'}", "single-quoted JSON"),
            ('{%s,}' % k, "a trailing comma"),
            ('{%s,"D":NaN}' % k, "a bare NaN literal"),
            ('{%s,"D":Infinity}' % k, "a bare Infinity literal"),
            ('{%s,"D":01}' % k, "a number with a leading zero"),
            ('{%s,"S":"\\x41"}' % k, "an invalid escape \\x"),
            ('{%s,"S":"\\ud800"}' % k, "a lone high surrogate escape"),
            ('{%s,"S":"\\udc00x"}' % k, "a lone low surrogate escape"),
            ('{%s,"S":"a\tb"}' % k, "a raw TAB inside a string"),
            ('{%s,"D":1e999999}' % k, "a number overflowing a double"),
            ('{%s,"N":%s}' % (k, "9" * 10000), "a 10,000-digit integer"),
            ('{%s,"A":%s}' % (k, "[" * 100000 + "]" * 100000), "100,000 nested arrays"),
            ('{%s,"O":%s}' % (k, '{"a":' * 50000 + "1" + "}" * 50000), "50,000 nested objects"),
            ('{%s,"O":{"x":1}}' % k, "an object property value"),
            ('{%s,"A":[1,2]}' % k, "an array property value"),
            ('{%s,"N":3000000000}' % k, "an unannotated integer beyond Int32"),
            ('{%s,"N":-2147483649}' % k, "an unannotated integer below Int32")):
        bad_body(t, name, body, 400, "InvalidInput", "insert with %s" % why)
    for body, why in ((b'{"PartitionKey":"p","RowKey":"r","S":"\xff\xfe"}',
                       "invalid UTF-8 in a string"),
                      (b'{"PartitionKey":"p","RowKey":"r","S":"\xc0\xaf"}',
                       "an overlong UTF-8 sequence"),
                      (b'{"PartitionKey":"p","RowKey":"r","S":"\xed\xa0\x80"}',
                       "a UTF-8-encoded surrogate"),
                      (b'{"PartitionKey":"p","RowKey":"r","S":"a\x00b"}',
                       "a raw NUL byte inside a string"),
                      (b'{"PartitionKey":"p","RowKey":"r"}\x00', "a NUL byte after the object"),
                      (b'{"PartitionKey":"p","Row\xffKey":"r"}', "invalid UTF-8 in a name")):
        bad_body(t, name, body, 400, "InvalidInput", "insert with %s" % why)
    for verb in ("PUT", "MERGE"):
        bad_body(t, name, '["x"]', 400, "InvalidInput", "%s with an array body" % verb,
                 method=verb, path=t.ep(name, "p", "r"), headers={"If-Match": "*"})
        bad_body(t, name, '{"A":', 400, "InvalidInput", "%s with truncated JSON" % verb,
                 method=verb, path=t.ep(name, "p", "r"))
    r = t.req("GET", "/" + name, headers={"Accept": h.ACCEPT["nometadata"]})
    t.exact(r, Obj([("value", [])]), "none of the bad bodies stored anything")
    t.http.delete_table(name)


@add_group
def bad_entity_values(t):
    name = t.table("BadVals")
    k = '"PartitionKey":"p","RowKey":"r"'

    def ann(prop, typ, raw):
        return '{%s,"%s@odata.type":%s,"%s":%s}' % (k, prop, js(typ), prop, raw)

    for body, code, why in (
            (ann("D", "Edm.Double", "1.8e308"), "InvalidInput", "a Double overflowing (1.8e308)"),
            ('{%s,"D":1.8e308}' % k, "InvalidInput", "an unannotated 1.8e308"),
            (ann("D", "Edm.Double", '"abc"'), "InvalidInput", "a Double string that is no number"),
            (ann("T", "Edm.DateTime", '""'), "InvalidInput", "an empty DateTime"),
            (ann("T", "Edm.DateTime", '"2024-13-01T00:00:00Z"'), "InvalidInput",
             "DateTime month 13"),
            (ann("T", "Edm.DateTime", '"2023-02-29T00:00:00Z"'), "InvalidInput",
             "DateTime February 29 in a common year"),
            (ann("T", "Edm.DateTime", '"2024-06-01 08:30:00Z"'), "InvalidInput",
             "a DateTime with a space instead of T"),
            (ann("T", "Edm.DateTime", '"yesterday"'), "InvalidInput", "a DateTime of words"),
            (ann("T", "Edm.DateTime", "20240601"), "InvalidInput", "a DateTime given as a number"),
            (ann("G", "Edm.Guid", '"4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c1"'), "InvalidInput",
             "a Guid one digit short"),
            (ann("G", "Edm.Guid", '"4e2e8b0c5bb74c3c9f433a6f1d0b2c11"'), "InvalidInput",
             "a Guid without dashes"),
            (ann("G", "Edm.Guid", '"zzzzzzzz-5bb7-4c3c-9f43-3a6f1d0b2c11"'), "InvalidInput",
             "a Guid with non-hex digits"),
            (ann("G", "Edm.Guid", "5"), "InvalidInput", "a Guid given as a number"),
            (ann("B", "Edm.Binary", '"AAE"'), "InvalidInput", "base64 without padding"),
            (ann("B", "Edm.Binary", '"A@==" '), "InvalidInput", "base64 with @"),
            (ann("B", "Edm.Binary", '"AA=A"'), "InvalidInput", "base64 with inner ="),
            (ann("B", "Edm.Binary", "[1,2]"), "InvalidInput", "Binary given as an array"),
            (ann("I", "Edm.Int64", '"abc"'), "InvalidInput", "a non-numeric Int64"),
            (ann("I", "Edm.Int64", '"9223372036854775808"'), "InvalidInput",
             "Int64 max + 1"),
            (ann("I", "Edm.Int64", '"-9223372036854775809"'), "InvalidInput", "Int64 min - 1"),
            (ann("I", "Edm.Int64", '"1.5"'), "InvalidInput", "a fractional Int64"),
            (ann("I", "Edm.Int64", '""'), "InvalidInput", "an empty Int64"),
            (ann("I", "Edm.Int32", "1.5"), "InvalidInput", "a fractional Int32"),
            (ann("I", "Edm.Int32", "2147483648"), "InvalidInput", "Int32 max + 1"),
            (ann("I", "Edm.Int32", '"x"'), "InvalidInput", "an Int32 string that is no number"),
            (ann("X", "Edm.Boolean", '"yes"'), "InvalidInput", "a Boolean string 'yes'"),
            (ann("X", "Edm.Decimal", '"1.5"'), "InvalidInput", "the unknown type Edm.Decimal"),
            (ann("X", "Edm.Single", "1.5"), "InvalidInput", "the unknown type Edm.Single"),
            (ann("X", "Edm.Foo", '"x"'), "InvalidInput", "the unknown type Edm.Foo"),
            ('{%s,"X@odata.type":5,"X":"x"}' % k, "InvalidInput",
             "an annotation that is no string")):
        bad_body(t, name, body, 400, code, "insert with %s" % why)
    r = t.req("POST", "/" + name, body=ann("T", "Edm.DateTime", '"1600-12-31T23:59:59Z"'))
    t.ok(r.status == 400 and r.error_code() in ("OutOfRangeInput", "InvalidInput"),
         "insert with DateTime 1600-12-31T23:59:59Z -> 400", "%s %r" % (r.status, r.body[:300]))
    t.alive("a DateTime before 1601")
    r = t.req("POST", "/" + name, body=ann("T", "Edm.DateTime", '"10000-01-01T00:00:00Z"'))
    t.ok(r.status == 400 and r.error_code() in ("OutOfRangeInput", "InvalidInput"),
         "insert with DateTime year 10000 -> 400", "%s %r" % (r.status, r.body[:300]))
    t.alive("a DateTime after 9999")
    r = t.req("GET", "/" + name, headers={"Accept": h.ACCEPT["nometadata"]})
    t.exact(r, Obj([("value", [])]), "none of the bad values stored anything")
    t.http.delete_table(name)


@add_group
def bad_names_keys_limits(t):
    name = t.table("BadNames")
    k = '"PartitionKey":"p","RowKey":"r"'
    for prop, why in (("1abc", "starting with a digit"), ("a-b", "containing -"),
                      ("a b", "containing a space"), ("a.b", "containing ."),
                      ("a@b", "containing @"), ("", "empty"), ("a\u0001", "with a control char"),
                      ("$x", "starting with $"), ("a/b", "containing /")):
        bad_body(t, name, '{%s,%s:1}' % (k, js(prop)), 400, "PropertyNameInvalid",
                 "property name %s" % why)
    bad_body(t, name, '{%s,%s:1}' % (k, js("N" * 256)), 400, "PropertyNameTooLong",
             "a 256-character property name")
    bad_body(t, name, '{%s,"A":1,"B":2,"A":3}' % k, 400, "DuplicatePropertiesSpecified",
             "the same property twice")
    bad_body(t, name, '{%s,"A@odata.type":"Edm.Int64","A":"1","A":"2"}' % k, 400,
             "DuplicatePropertiesSpecified", "an annotated property twice")
    bad_body(t, name, '{"PartitionKey":"p","RowKey":"r","RowKey":"s"}', 400,
             ("DuplicatePropertiesSpecified", "InvalidInput"), "RowKey twice")
    bad_body(t, name, js(dict({"P%03d" % i: i for i in range(253)}, PartitionKey="p",
                              RowKey="r")), 400, "TooManyProperties", "253 custom properties")
    for value, why in (("a" * 32769, "32,769 ASCII characters"),
                       ("\u00fc" * 32769, "32,769 two-byte characters"),
                       ("\U0001F600" * 16384 + "a", "16,384 surrogate pairs plus one")):
        bad_body(t, name, js({"PartitionKey": "p", "RowKey": "r", "S": value}), 400,
                 "PropertyValueTooLarge", "a string of %s" % why)
    import base64
    bad_body(t, name, '{%s,"B@odata.type":"Edm.Binary","B":%s}' % (
        k, js(base64.b64encode(b"x" * 65537).decode())), 400, "PropertyValueTooLarge",
        "a binary value of 65,537 bytes")
    bad_body(t, name, js(dict({"s%02d" % i: "a" * 32768 for i in range(17)}, PartitionKey="p",
                              RowKey="r")), 400, "EntityTooLarge",
             "an entity of 17 x 64 KiB strings")
    bad_body(t, name, js({"PartitionKey": "k" * 1025, "RowKey": "r"}), 400, "KeyValueTooLarge",
             "a 1,025-character PartitionKey", message=KEY_TOO_LARGE % "PartitionKey")
    bad_body(t, name, js({"PartitionKey": "p", "RowKey": "\u00fc" * 1025}), 400,
             "KeyValueTooLarge", "a 1,025-character RowKey", message=KEY_TOO_LARGE % "RowKey")
    bad_body(t, name, js({"V": 1}), 400, "KeyValueTooLarge",
             "a 1,025-character key in the URL of a PUT", method="PUT",
             path=t.ep(name, "k" * 1025, "r"))
    # Forbidden key characters in a body: 400 OutOfRangeInput (doc/protocol.md, Key values
    # corrected, issue 14 point 1), in an insert and in an upsert body; the
    # message names the key and its value (test_range_messages.py has more).
    out_of_range = "The '%s' parameter of value '%s' is out of range."
    query_syntax = "Bad Request - Error in query syntax."
    for ch, why in (("/", "/"), ("\\", "\\"), ("#", "#"), ("?", "?"), ("\t", "TAB"),
                    ("\n", "LF"), ("\x00", "NUL"), ("\x1f", "U+001F"), ("\x7f", "DEL"),
                    ("\x80", "U+0080"), ("\x85", "U+0085"), ("\x9f", "U+009F")):
        bad_body(t, name, js({"PartitionKey": "a" + ch + "b", "RowKey": "r"}), 400,
                 "OutOfRangeInput", "a PartitionKey containing %s" % why,
                 message=out_of_range % ("PartitionKey", "a" + ch + "b"))
        bad_body(t, name, js({"PartitionKey": "p", "RowKey": ch}), 400, "OutOfRangeInput",
                 "a RowKey that is %s" % why, message=out_of_range % ("RowKey", ch))
    for method, hdrs in (("PUT", None), ("MERGE", None), ("PUT", {"If-Match": "*"})):
        bad_body(t, name, js({"PartitionKey": "a/b", "RowKey": "r", "V": 1}), 400,
                 "OutOfRangeInput", "%s%s with a body PartitionKey containing /" % (
                     method, " If-Match: *" if hdrs else ""),
                 method=method, path=t.ep(name, "a", "r"), headers=hdrs,
                 message=out_of_range % ("PartitionKey", "a/b"))
        bad_body(t, name, js({"RowKey": "r#", "V": 1}), 400, "OutOfRangeInput",
                 "%s with a body RowKey containing #" % method, method=method,
                 path=t.ep(name, "a", "r"), headers=hdrs, message=out_of_range % ("RowKey", "r#"))
    # The same characters in URL keys: the service cannot parse the URL
    # and says so (azure-storage-net#386; doc/protocol.md, Key values), for every verb, and
    # before the body is looked at.
    for ch in ("%2F", "%5C", "%23", "%3F", "%09", "%7F", "%C2%85"):
        bad_body(t, name, js({"V": 1}), 400, "InvalidInput",
                 "a URL key containing %s on PUT" % ch, method="PUT",
                 path="/%s(PartitionKey='a%sb',RowKey='r')" % (name, ch), message=query_syntax)
    keyed = "/%s(PartitionKey='p',RowKey='a%%2Fb')" % name
    for method, body, hdrs in (("GET", None, None), ("MERGE", js({"V": 1}), None),
                               ("DELETE", None, {"If-Match": "*"}),
                               ("PUT", js({"PartitionKey": "p", "RowKey": "a/b"}), None)):
        bad_body(t, name, body, 400, "InvalidInput",
                 "a URL RowKey containing %%2F on %s" % method, method=method, path=keyed,
                 headers=hdrs, message=query_syntax)
    bad_body(t, name, None, 400, "InvalidInput", "a raw / inside a URL key on GET",
             method="GET", path="/%s(PartitionKey='a/b',RowKey='r')" % name,
             message=query_syntax)
    bad_body(t, name, js({"PartitionKey": "a/b", "RowKey": "r"}), 400, "InvalidInput",
             "a raw / inside a URL key and the body on PUT", method="PUT",
             path="/%s(PartitionKey='a/b',RowKey='r')" % name, message=query_syntax)
    bad_body(t, "nosuchtable", None, 400, "InvalidInput",
             "a URL key containing %2F in a missing table", method="GET",
             path="/nosuchtable(PartitionKey='a%2Fb',RowKey='r')", message=query_syntax)
    for body, codes, why in (
            ('{"PartitionKey":5,"RowKey":"r"}',
             ("PrimaryKeyPropertyIsInvalidType", "InvalidInput", "PropertiesNeedValue"),
             "a numeric PartitionKey"),
            ('{"PartitionKey":"p","RowKey":true}',
             ("PrimaryKeyPropertyIsInvalidType", "InvalidInput", "PropertiesNeedValue"),
             "a boolean RowKey"),
            ('{"PartitionKey":{"a":1},"RowKey":"r"}',
             ("PrimaryKeyPropertyIsInvalidType", "InvalidInput", "PropertiesNeedValue"),
             "an object PartitionKey"),
            ('{"PartitionKey":"p","RowKey@odata.type":"Edm.Int32","RowKey":5}',
             ("PrimaryKeyPropertyIsInvalidType", "InvalidInput", "PropertiesNeedValue"),
             "an annotated numeric RowKey"),
            ('{"PartitionKey":null,"RowKey":"r"}', ("PropertiesNeedValue",),
             "a null PartitionKey"),
            ('{"PartitionKey":"p"}', ("PropertiesNeedValue",), "no RowKey"),
            ('{"RowKey":"r"}', ("PropertiesNeedValue",), "no PartitionKey"),
            ('{}', ("PropertiesNeedValue",), "an empty object")):
        bad_body(t, name, body, 400, codes, "insert with %s" % why)
    r = t.req("GET", "/" + name, headers={"Accept": h.ACCEPT["nometadata"]})
    t.exact(r, Obj([("value", [])]), "none of the bad entities was stored")
    # Create Table bodies
    for body, codes, why in (('{"TableName":', ("InvalidInput",), "truncated JSON"),
                             ('["abc"]', ("InvalidInput",), "an array"),
                             ('{"TableName":5}', ("InvalidInput", "TableNameEmpty",
                                                  "InvalidResourceName"), "a numeric name"),
                             ('{"TableName":null}', ("InvalidInput", "TableNameEmpty"),
                              "a null name"),
                             (b'{"TableName":"ab\xffcd"}', ("InvalidInput",
                                                           "InvalidResourceName"),
                              "invalid UTF-8 in the name")):
        r = t.req("POST", "/Tables", body=body)
        t.ok(r.status == 400 and r.error_code() in codes,
             "Create Table with %s -> 400 %s" % (why, "/".join(codes)),
             "%s %r" % (r.status, r.body[:300]))
        t.alive("Create Table with %s" % why)
    t.http.delete_table(name)


@add_group
def bad_urls(t):
    name = t.table("BadUrl")
    t.insert(name, {"PartitionKey": "a", "RowKey": "b"})
    for pred, why in (
            ("(PartitionKey='a')", "only a PartitionKey"),
            ("(RowKey='b')", "only a RowKey"),
            ("(PartitionKey='a',PartitionKey='b')", "PartitionKey twice"),
            ("(PartitionKey='a',RowKey='b',RowKey='c')", "RowKey twice"),
            ("(PartitionKey='a,RowKey='b')", "an unterminated quote"),
            ("(PartitionKey='a',RowKey='b'", "no closing parenthesis"),
            ("(PartitionKey=a,RowKey=b)", "unquoted keys"),
            ("(partitionkey='a',rowkey='b')", "lower-case key names"),
            ("(PartitionKey='a',RowKey='b')x", "text after the closing parenthesis"),
            ("(PartitionKey='a'%20RowKey='b')", "no comma"),
            ("(PartitionKey='a'b',RowKey='b')", "a lone quote inside a key"),
            ("('a','b')", "positional keys"),
            ("(PartitionKey=%22a%22,RowKey=%22b%22)", "double-quoted keys"),
            ("(Foo='a',RowKey='b')", "an unknown key name"),
            ("(PartitionKey='a',,RowKey='b')", "two commas"),
            ("(PartitionKey='a';RowKey='b')", "a semicolon separator"),
            ("(PartitionKey=='a',RowKey='b')", "a doubled ="),
            ("(PartitionKey='a',RowKey='b',)", "a trailing comma"),
            ("()()", "two pairs of parentheses"),
            ("(PartitionKey='a%2Fb',RowKey='b')", "an encoded / in a key"),
            ("(PartitionKey='a%23b',RowKey='b')", "an encoded # in a key"),
            ("(PartitionKey='a%3Fb',RowKey='b')", "an encoded ? in a key"),
            ("(PartitionKey='a%5Cb',RowKey='b')", "an encoded \\ in a key"),
            ("(PartitionKey='a%01b',RowKey='b')", "an encoded control character in a key")):
        bad_get(t, "/" + name + pred, 400, "InvalidInput", "key predicate with %s" % why,
                message="Bad Request - Error in query syntax.")
    for path, codes, why in (
            ("/%s(PartitionKey='%%zz',RowKey='b')" % name, ("InvalidUri",), "%zz in the path"),
            ("/%s(PartitionKey='%%4',RowKey='b')" % name, ("InvalidUri",), "a truncated %4"),
            ("/%s%%" % name, ("InvalidUri",), "a trailing %"),
            ("/%s(PartitionKey='%%C3%%28',RowKey='b')" % name, ("InvalidUri",),
             "invalid percent-encoded UTF-8"),
            ("/%s(PartitionKey='%%ED%%A0%%80',RowKey='b')" % name, ("InvalidUri",),
             "a percent-encoded surrogate"),
            ("/%s(PartitionKey='%%C0%%AF',RowKey='b')" % name, ("InvalidUri",),
             "a percent-encoded overlong /"),
            ("/%s(PartitionKey='%%F4%%90%%80%%80',RowKey='b')" % name, ("InvalidUri",),
             "a code point above U+10FFFF"),
            ("/%s(PartitionKey='\udcff',RowKey='b')" % name, ("InvalidUri", None),
             "a raw 0xFF byte in the path"),
            ("/%s(PartitionKey='%%00',RowKey='b')" % name, ("InvalidUri", "InvalidInput"),
             "%00 in a key"),
            ("/a/b/c", ("InvalidUri",), "three path segments"),
            ("/Tables('x')/y", ("InvalidUri",), "a segment after a table entry"),
            ("/%s(PartitionKey='a',RowKey='b')/c" % name, ("InvalidUri",),
             "a segment after an entity"),
            ("/Tables('%s'" % name, ("InvalidUri", "InvalidInput"),
             "an unterminated Tables("),
            ("/Tables(%s)" % name, ("InvalidUri", "InvalidInput"), "an unquoted Tables(name)"),
            ("/%s?$select=%%FF" % name, ("InvalidInput",), "invalid UTF-8 in $select"),
            ("/%s?$select=%%zz" % name, ("InvalidInput",), "%zz in a query value")):
        try:
            r = t.req("GET", path)
            t.ok(r.status == 400 and r.error_code() in codes,
                 "GET with %s -> 400 %s" % (why, "/".join(str(c) for c in codes)),
                 "%s %r" % (r.status, r.body[:300]))
        except Exception as e:  # noqa: BLE001
            t.ok(False, "GET with %s -> 400" % why, repr(e))
        t.alive("a path with %s" % why)
    for method, path, why in (("PUT", "/Tables", "PUT on /Tables"),
                              ("DELETE", "/Tables", "DELETE on /Tables"),
                              ("PUT", "/Tables('%s')" % name, "PUT on a table entry"),
                              ("POST", "/%s(PartitionKey='a',RowKey='b')" % name,
                               "POST on an entity"),
                              ("DELETE", "/" + name, "DELETE on an entity set"),
                              ("POST", "/?restype=service&comp=properties",
                               "POST on service properties"),
                              ("COPY", "/%s(PartitionKey='a',RowKey='b')" % name,
                               "COPY on an entity"),
                              ("PROPFIND", "/Tables", "PROPFIND on /Tables")):
        try:
            r = t.req(method, path, body="{}" if method in ("PUT", "POST") else None)
            t.ok(r.status in (405, 501) and r.error_code() in (
                "UnsupportedHttpVerb", "MethodNotAllowed", "NotImplemented"),
                "%s -> 405/501" % why, "%s %r" % (r.status, r.body[:300]))
        except Exception as e:  # noqa: BLE001
            t.ok(False, "%s -> 405/501" % why, repr(e))
        t.alive(why)
    t.eq(t.get(name, "a", "b").status, 200, "the entity survived the bad URLs")
    t.http.delete_table(name)


@add_group
def bad_headers(t):
    name = t.table("BadHdr")
    for hdrs, code, why in (
            ({"x-ms-version": "garbage"}, "InvalidHeaderValue", "x-ms-version garbage"),
            ({"x-ms-version": "2009-04-13"}, "InvalidHeaderValue", "an x-ms-version before 2009-04-14"),
            ({"x-ms-version": "2019-02-31"}, "InvalidHeaderValue", "x-ms-version 2019-02-31"),
            ({"x-ms-client-request-id": "c" * 1025}, "InvalidHeaderValue",
             "a 1,025-character client request id")):
        bad_get(t, "/" + name, 400, code, why, headers=hdrs)
    bad_get(t, "/" + name, 400, "InvalidHeaderValue", "two x-ms-version headers",
            headers=[("x-ms-version", "2019-02-02"), ("x-ms-version", "2019-02-02")])
    r = t.req("GET", "/" + name, headers={"Accept": "text/plain"})
    t.ok(r.status == 415 and r.error_code() in ("MediaTypeNotSupported", "AtomFormatNotSupported"),
         "Accept: text/plain -> 415", "%s %r" % (r.status, r.body[:300]))
    t.alive("Accept: text/plain")
    # garbage Authorization headers: any 4xx, and the server keeps serving
    good = t.http.build("GET", "/Tables").decode("latin-1")
    sig = re.search(r"Authorization: SharedKey [^:]+:(\S+)", good).group(1)
    for auth in ("", "SharedKey", "SharedKey ", "SharedKey :", "SharedKey %s:" % ACCOUNT,
                 "SharedKey %s" % ACCOUNT, "SharedKey :%s" % sig,
                 "SharedKey %s:!!!notbase64!!!" % ACCOUNT, "SharedKey %s:%s" % (ACCOUNT, "A" * 9000),
                 "SharedKey %s:%s:%s" % (ACCOUNT, sig, sig), "SharedKey nosuchaccount:%s" % sig,
                 "SharedKey %s:%s" % ("a" * 5000, sig), "SharedKeyLite %s:%s" % (ACCOUNT, sig),
                 "Bearer", "Bearer x.y.z", "Bearer " + "e" * 8000, "Basic Zm9vOmJhcg==",
                 "Digest username=x", "sharedkey %s:%s" % (ACCOUNT, sig[::-1]),
                 "SharedKey\t%s:%s" % (ACCOUNT, sig[:-4] + "AAA="), "\u00e9\u00e8\u00ea",
                 "SharedKey %s:%s" % (ACCOUNT, "====")):
        try:
            r = t.req("GET", "/Tables", headers={"Authorization": auth}, sign_it=False)
            t.ok(400 <= r.status < 500, "garbage Authorization %r -> 4xx" % auth[:40],
                 "%s %r" % (r.status, r.body[:200]))
        except Exception as e:  # noqa: BLE001
            t.ok(False, "garbage Authorization %r -> 4xx" % auth[:40], repr(e))
        t.alive("Authorization %r" % auth[:40])
    r = t.req("GET", "/Tables", headers=[("Authorization", "SharedKey x:y"),
                                         ("Authorization", "SharedKey z:w")], sign_it=False)
    t.ok(400 <= r.status < 500, "two garbage Authorization headers -> 4xx", str(r.status))
    t.alive("two Authorization headers")
    r = t.req("GET", "/Tables", sign_it=False)
    t.ok(400 <= r.status < 500, "no Authorization header at all -> 4xx", str(r.status))
    t.alive("no Authorization header")
    t.http.delete_table(name)


@add_group
def bad_http(t):
    """Malformed HTTP and framing, on raw sockets."""
    req = t.http.build("GET", "/Tables")
    head, _, _ = req.partition(b"\r\n\r\n")

    def with_header(line):
        return head + b"\r\n" + line + b"\r\n\r\n"

    bad_raw(t, b"GARBAGE\r\n\r\n", "a request line of garbage", (400,))
    bad_raw(t, b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 64,
            "a TLS ClientHello on the plain port", (400, None))
    bad_raw(t, req.replace(b"HTTP/1.1", b"HTTP/9.9", 1), "HTTP/9.9", (400, 505))
    bad_raw(t, b"GET /devstoreaccount1/Tables\r\n\r\n", "a request line without version",
            (400,))
    bad_raw(t, req.replace(b"GET /", b"GET  /", 1).replace(b" HTTP/1.1", b"  HTTP/1.1", 1),
            "double spaces in the request line (RFC 9112 3: may be accepted)", (200, 400))
    bad_raw(t, with_header(b"NoColonHere"), "a header line without a colon", (400,))
    bad_raw(t, with_header(b"Bad Name: x"), "a header name with a space", (400,))
    bad_raw(t, with_header(b"X-Test : v"), "whitespace between header name and colon "
            "(RFC 9112 5.1: MUST 400)", (400,))
    bad_raw(t, with_header(b"X-Nul: a\x00b"), "a NUL byte in a header value", (400,))
    bad_raw(t, with_header(b"X-Ctl: a\x01\x7fb"), "control bytes in a header value", (200, 400))
    bad_raw(t, with_header(b"X-Utf: \xff\xfe\xc3"), "invalid UTF-8 in a header value",
            (200, 400))
    bad_raw(t, req.replace(b"/Tables", b"/Ta\x00bles", 1), "a NUL byte in the path", (400,))
    bad_raw(t, req.replace(b"/Tables", b"/Ta bles", 1), "a raw space in the path", (400,))
    bad_raw(t, t.http.build("GET", ACCOUNT + "/Tables", absolute=True),
            "a path without a leading /", (400,))
    bad_raw(t, t.http.build("GET", "*", absolute=True), "GET *", (400,))
    bad_raw(t, t.http.build("FOO", "/Tables"), "an unknown method", (400, 405, 501))
    bad_raw(t, req.replace(b"GET", b"G\xffT", 1), "a method with a 0xFF byte",
            (400, 403, 405, 501))
    post = t.http.build("POST", "/Tables", body={"TableName": "rawtable1"})
    phead, _, pbody = post.partition(b"\r\n\r\n")

    def set_cl(value):
        return re.sub(rb"Content-Length: \d+", b"Content-Length: " + value, phead)

    bad_raw(t, set_cl(b"abc") + b"\r\n\r\n" + pbody, "Content-Length: abc", (400,))
    bad_raw(t, set_cl(b"-1") + b"\r\n\r\n" + pbody, "Content-Length: -1", (400,))
    bad_raw(t, set_cl(b"1 2") + b"\r\n\r\n" + pbody, "Content-Length: 1 2", (400,))
    bad_raw(t, phead + b"\r\nContent-Length: 3\r\n\r\n" + pbody, "two different Content-Length",
            (400,))
    bad_raw(t, phead + b"\r\nTransfer-Encoding: chunked\r\n\r\n" + pbody,
            "Content-Length together with Transfer-Encoding: chunked", (400,))
    chunked = re.sub(rb"Content-Length: \d+", b"Transfer-Encoding: chunked", phead)
    bad_raw(t, chunked + b"\r\n\r\nzz\r\n" + pbody + b"\r\n0\r\n\r\n", "a chunk size of zz",
            (400,))
    bad_raw(t, chunked + b"\r\n\r\n%x\r\n" % (len(pbody) + 5) + pbody + b"\r\n0\r\n\r\n",
            "a chunk shorter than its size", (400, None), timeout=3)
    bad_raw(t, re.sub(rb"Content-Length: \d+", b"Transfer-Encoding: gzip", phead) + b"\r\n\r\n"
            + pbody, "Transfer-Encoding: gzip", (400, 501))
    r = t.req("GET", "/Tables('rawtable1')")
    t.eq(r.status, 404, "none of the malformed POSTs created the table")
    # sizes
    bad_raw(t, with_header(b"X-Big: " + b"x" * (100 * 1024)), "a 100 KiB header block", (431,),
            closed=True)
    bad_raw(t, head + b"\r\n" + b"".join(b"X-H%d: %d\r\n" % (i, i) for i in range(20000)) +
            b"\r\n", "20,000 header lines", (400, 431), closed=True)
    bad_raw(t, head + b"\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(2000)) + b"\r\n",
            "2,000 small headers", (200, 400, 431))
    bad_raw(t, head + b"\r\n" + b"X-Same: v\r\n" * 3000 + b"\r\n", "3,000 copies of one header",
            (200, 400, 431))
    bad_raw(t, t.http.build("GET", "/" + "a" * (100 * 1024)), "a 100 KiB URL",
            (400, 414, 431))
    huge = set_cl(b"99999999999") + b"\r\n\r\n"
    bad_raw(t, huge, "Content-Length: 99999999999 (answered before any body byte)", (413,),
            codes=("RequestBodyTooLarge",), timeout=5)
    name = t.table("Sizes")
    pad = b'{"PartitionKey":"p","RowKey":"4m"}'
    exact4 = pad + b" " * (4 * MIB - len(pad))
    r = t.req("POST", "/" + name, body=exact4, timeout=20)
    t.eq(r.status, 201, "a body of exactly 4 MiB is accepted")
    over = pad.replace(b"4m", b"4n") + b" " * (4 * MIB + 1 - len(pad))
    r = t.req("POST", "/" + name, body=over, timeout=20)
    t.check_error(r, 413, "RequestBodyTooLarge", "a body of 4 MiB + 1 byte", message=(
        "The request body is too large and exceeds the maximum permissible limit."))
    t.alive("a 4 MiB + 1 body")
    r = t.req("POST", "/" + name, body=b"x" * (6 * MIB), timeout=20)
    t.check_error(r, 413, "RequestBodyTooLarge", "a 6 MiB body")
    t.alive("a 6 MiB body")
    ins = t.http.build("POST", "/" + name, body=pad.replace(b"4m", b"ch"))
    ihead, _, _ = ins.partition(b"\r\n\r\n")
    ichunk = re.sub(rb"Content-Length: \d+", b"Transfer-Encoding: chunked", ihead) + b"\r\n\r\n"
    block = b" " * 65536
    body = b"%x\r\n" % len(pad) + pad.replace(b"4m", b"ck") + b"\r\n" + \
        (b"%x\r\n" % len(block) + block + b"\r\n") * 70 + b"0\r\n\r\n"
    bad_raw(t, ichunk + body, "a chunked body of 4.4 MiB", (413,),
            codes=("RequestBodyTooLarge",), timeout=10)
    t.eq(t.get(name, "p", "ck").status, 404, "the oversized chunked insert stored nothing")
    # interrupted requests
    for data, why in ((req[:20], "a request cut inside the request line"),
                      (head, "a request cut inside the headers"),
                      (post[:-5], "a body cut short")):
        try:
            with socket.create_connection((t.srv.host, t.srv.port), timeout=5) as s:
                s.sendall(data)
                time.sleep(0.1)
        except OSError as e:
            t.ok(False, "send %s" % why, repr(e))
        t.alive(why)
    try:
        with socket.create_connection((t.srv.host, t.srv.port), timeout=5) as s:
            s.sendall(req)
            s.shutdown(socket.SHUT_WR)
            got = b""
            while True:
                d = s.recv(65536)
                if not d:
                    break
                got += d
        t.eq(getattr(h.first_response(got), "status", None), 200,
             "a request followed by a half-close still gets its answer")
    except OSError as e:
        t.ok(False, "a request followed by a half-close still gets its answer", repr(e))
    t.alive("a half-closed connection")
    t.http.delete_table(name)


@add_group
def http_layer(t):
    """Keep-alive, pipelining, chunked bodies, Expect: 100-continue."""
    name = t.table("Conn")
    with t.http.connect() as c:
        statuses = [c.request("POST", "/" + name, body={"PartitionKey": "k", "RowKey": str(i)}
                              ).status for i in range(20)]
    t.eq(statuses, [201] * 20, "20 requests on one keep-alive connection")
    reqs = b"".join(t.http.build("GET", t.ep(name, "k", str(i % 20))) for i in range(50))
    try:
        with t.http.connect() as c:
            c.send(reqs)
            got = [c.read() for _ in range(50)]
        rows = [member(t.jbody(r), "RowKey") for r in got]
        t.eq(rows, [str(i % 20) for i in range(50)], "50 pipelined requests answered in order")
    except Exception as e:  # noqa: BLE001
        t.ok(False, "50 pipelined requests answered in order", repr(e))
    ins = t.http.build("POST", "/" + name, body={"PartitionKey": "c", "RowKey": "chunked",
                                                 "V": 1})
    head, _, body = ins.partition(b"\r\n\r\n")
    head = re.sub(rb"Content-Length: \d+", b"Transfer-Encoding: chunked", head)
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7])
                      for i in range(0, len(body), 7)) + b"0\r\n\r\n"
    got, _ = h.raw_exchange(t.srv, head + b"\r\n\r\n" + chunks, wait_close=False)
    t.eq(getattr(h.first_response(got), "status", None), 201, "a chunked request body works")
    ins = t.http.build("POST", "/" + name, body={"PartitionKey": "c", "RowKey": "expect"},
                       headers={"Expect": "100-continue"})
    head, _, body = ins.partition(b"\r\n\r\n")
    try:
        # doc/protocol.md, HTTP framing: answer 100 Continue or just read the body; never stall
        with socket.create_connection((t.srv.host, t.srv.port), timeout=5) as s:
            s.sendall(head + b"\r\n\r\n")
            got = b""
            if select.select([s], [], [], 1.0)[0]:
                got = s.recv(65536)
            interim = got
            s.sendall(body)
            while True:
                resps = h.parse_responses(got)
                if (resps and resps[-1].status != 100) or len(got) > 1 << 20:
                    break
                d = s.recv(65536)
                if not d:
                    break
                got += d
        final = h.first_response(got)   # read_response skips 1xx
        t.ok(interim == b"" or interim.startswith(b"HTTP/1.1 100 "),
             "Expect: 100-continue: nothing or a 100 Continue before the body", repr(interim[:80]))
        t.eq(getattr(final, "status", None), 201, "Expect: 100-continue: the body is stored")
    except Exception as e:  # noqa: BLE001
        t.ok(False, "Expect: 100-continue", repr(e))
    t.alive("Expect: 100-continue")
    got, closed = h.raw_exchange(t.srv, t.http.build("GET", "/Tables",
                                                     headers={"Connection": "close"}),
                                 wait_close=True)
    t.ok(closed and getattr(h.first_response(got), "status", None) == 200,
         "Connection: close is answered and then closed")
    req10 = t.http.build("GET", "/Tables").replace(b"HTTP/1.1", b"HTTP/1.0", 1)
    got, closed = h.raw_exchange(t.srv, req10, wait_close=True)
    st = getattr(h.first_response(got), "status", None)
    t.ok(st == 505 or (st == 200 and closed), "HTTP/1.0: answered and closed, or 505",
         "%s closed=%s" % (st, closed))
    bodyget = t.http.build("GET", "/Tables", body=b"ignored body")
    got, _ = h.raw_exchange(t.srv, bodyget, wait_close=False)
    t.eq(getattr(h.first_response(got), "status", None), 200, "a GET with a body is answered")
    t.http.delete_table(name)


# ---- main (groups above run in definition order) ---------------------------


def all_responses(t):
    """The headers of doc/protocol.md, Common response headers on every response
    this run received."""
    seen = t.http.seen
    bad_id, bad_ver, bad_date, ids = [], [], [], {}
    for method, path, version, r in seen:
        rid = r.h("x-ms-request-id")
        if rid is None or not h.GUID_RE.match(rid):
            bad_id.append("%s %s -> %s: %r" % (method, path[:80], r.status, rid))
        else:
            ids.setdefault(rid, []).append(path[:80])
        if re.match(r"^\d{4}-\d\d-\d\d$", version or "") and version == h.DEFAULT_VERSION \
                and r.h("x-ms-version") != version:
            bad_ver.append("%s %s -> %s: %r" % (method, path[:80], r.status, r.h("x-ms-version")))
        if not h.RFC1123_RE.match(r.h("Date") or ""):
            bad_date.append("%s %s -> %s: %r" % (method, path[:80], r.status, r.h("Date")))
    dup = {k: v for k, v in ids.items() if len(v) > 1}
    t.ok(seen and not bad_id, "all %d responses carry a GUID x-ms-request-id" % len(seen),
         "\n".join(bad_id[:20]))
    t.ok(not dup, "x-ms-request-id values are unique", repr(list(dup.items())[:5]))
    t.ok(seen and not bad_ver, "all responses echo x-ms-version %s" % h.DEFAULT_VERSION,
         "\n".join(bad_ver[:20]))
    t.ok(seen and not bad_date, "all responses carry an RFC 1123 Date", "\n".join(bad_date[:20]))


def main():
    tap = h.Tap()
    only = os.environ.get("TEST_GROUPS", "").split(",") if os.environ.get("TEST_GROUPS") else None
    try:
        srv = h.Server().start()
    except h.ServerError as e:
        tap.ok(False, "server starts", str(e))
        tap.done()
    tap.ok(True, "server starts on port %d" % srv.port)
    h.watchdog(int(os.environ.get("TEST_WATCHDOG", "110")), srv, tap)
    t = HttpTests(tap, srv)
    started = time.monotonic()
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
    tap.run(all_responses, t)
    tap.diag("all groups took %.1f s" % (time.monotonic() - started))
    srv.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
