#!/usr/bin/python3
"""Integration test: the message of OutOfRangeInput names its parameter and
value, as the service's error-code table gives it ("The '{0}' parameter of
value '{1}' is out of range.") and tests written against the live service
match it:

  keys       a forbidden character (/ \\ # ? U+0000-001F U+007F-009F) in a
             body's PartitionKey or RowKey: "The 'PartitionKey' parameter of
             value 'a/b' is out of range." with the value as sent, in JSON
             (insert, update and merge bodies) and in Atom's OData XML error
             (character references where XML needs them), exact to the
             byte; inside a $batch changeset with the failing operation's
             index ("0:", "1:"), JSON and Atom parts; nothing written.
  bounds     a key of 1,024 characters with one forbidden character is
             named whole; one of 1,025 characters is KeyValueTooLarge
             (length first), so the message stays a few KiB.
  datetime   a DateTime before 1601 names its property, the instant as
             .NET's invariant text in UTC ('12/31/1600 23:59:59'); one .NET
             cannot hold (year 0) keeps the generic text.
  sdk        azure-data-tables (python3-azure) surfaces the message from
             create_entity and from submit_transaction.

Prints TAP; exit status 1 on failure."""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core.exceptions import HttpResponseError
    from azure.data.tables import TableServiceClient, TableTransactionError
    IMPORT_ERROR = None
except ImportError as e:  # reported as a failing check below
    IMPORT_ERROR = e

NS_M = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
NS_D = "http://schemas.microsoft.com/ado/2007/08/dataservices"
NS_A = "http://www.w3.org/2005/Atom"
ATOM_ACCEPT = "application/atom+xml,application/xml"
GENERIC = "One of the request inputs is out of range."
MSG_RE = re.compile(r"^(.*)\nRequestId:[^\n]*\nTime:[^\n]*$", re.S)

# Every forbidden character (doc/protocol.md, Key values) with a name for the report.
FORBIDDEN = [("/", "/"), ("\\", "backslash"), ("#", "#"), ("?", "?"), ("\t", "TAB"),
             ("\n", "LF"), ("\r", "CR"), ("\x00", "NUL"), ("\x01", "U+0001"),
             ("\x1f", "U+001F"), ("\x7f", "U+007F"), ("\x80", "U+0080"), ("\x85", "U+0085"),
             ("\x9f", "U+009F")]
# The ones an XML 1.0 document can carry (Atom bodies).
XML_OK = [(c, n) for c, n in FORBIDDEN if c in "/\\#?\t\x7f\x80\x85\x9f"]


def named(param, value):
    return "The '%s' parameter of value '%s' is out of range." % (param, value)


def message_of(r):
    """(code, message text before RequestId) of a JSON error answer."""
    try:
        e = json.loads(r.body.decode("utf-8"))["odata.error"]
    except (ValueError, KeyError):
        return None, None
    m = MSG_RE.match(e["message"]["value"])
    return e["code"], m.group(1) if m else None


def xml_message_of(body):
    """(code, message text before RequestId) of an OData XML error body."""
    try:
        root = ET.fromstring(body)
        m = MSG_RE.match(root.find("{%s}message" % NS_M).text)
        return root.find("{%s}code" % NS_M).text, m.group(1) if m else None
    except Exception:  # noqa: BLE001
        return None, None


def check(tap, got, want, what, detail=""):
    tap.ok(got == want, what, "got %r\nwant %r %s" % (got, want, detail))


def entry(props):
    """An Atom request entry; props is a list of (name, type, text)."""
    out = "".join("<d:%s%s>%s</d:%s>" % (n, ' m:type="%s"' % t if t else "", x, n)
                  for n, t, x in props)
    return ('<?xml version="1.0" encoding="utf-8" standalone="yes"?><entry xmlns:d="%s" '
            'xmlns:m="%s" xmlns="%s"><title /><updated>2024-01-01T00:00:00Z</updated><author>'
            '<name /></author><id /><content type="application/xml"><m:properties>%s'
            '</m:properties></content></entry>' % (NS_D, NS_M, NS_A, out))


def xml_text(s):
    """s as XML character data: references for what cannot be written raw."""
    out = []
    for ch in s:
        if ch in "&<>":
            out.append({"&": "&amp;", "<": "&lt;", ">": "&gt;"}[ch])
        elif ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f:
            out.append("&#x%X;" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def changeset(http, base, ops, atom=False):
    """A $batch of one changeset; ops are (method, url path, body text).
    Returns the outer response and the text of the answer."""
    parts = []
    ctype = "application/atom+xml;type=entry" if atom else "application/json"
    accept = ATOM_ACCEPT if atom else "application/json;odata=minimalmetadata"
    for i, (method, path, body) in enumerate(ops):
        data = body.encode("utf-8")
        parts.append(b"--cs\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: "
                     b"binary\r\n\r\n" + ("%s %s%s HTTP/1.1\r\nContent-ID: %d\r\nAccept: %s\r\n"
                                          "Content-Type: %s\r\nContent-Length: %d\r\n\r\n"
                                          % (method, base, path, i + 1, accept, ctype,
                                             len(data))).encode() + data + b"\r\n")
    body = (b"--b\r\nContent-Type: multipart/mixed; boundary=cs\r\n\r\n" + b"".join(parts) +
            b"--cs--\r\n--b--\r\n")
    r = http.request("POST", "/$batch", body=body, content_type="multipart/mixed; boundary=b")
    return r


def part_error(r, atom=False):
    """(status, code, message) of the only part of a failed changeset."""
    if r.status != 202:
        return ("outer", r.status)
    m = re.search(rb"HTTP/1\.1 (\d{3})[^\r]*\r\n.*?\r\n\r\n(.*?)\r\n--changesetresponse",
                  r.body, re.S)
    if not m:
        return ("no part", r.body[:300])
    code, msg = xml_message_of(m.group(2)) if atom else message_of(
        type("R", (), {"body": m.group(2)})())
    return int(m.group(1)), code, msg


def js(v):
    return json.dumps(v, ensure_ascii=False)


def keys_json(tap, srv):
    http = h.Http(srv)
    tap.eq(http.create_table("RangeJson").status, 201, "create RangeJson")
    for ch, why in FORBIDDEN:
        pk = "a" + ch + "b"
        r = http.request("POST", "/RangeJson", body=js({"PartitionKey": pk, "RowKey": "r"}))
        check(tap, (r.status,) + message_of(r), (400, "OutOfRangeInput", named("PartitionKey", pk)),
              "JSON insert, PartitionKey with %s: the message names it and its value" % why)
        r = http.request("POST", "/RangeJson", body=js({"PartitionKey": "p", "RowKey": ch}))
        check(tap, (r.status,) + message_of(r), (400, "OutOfRangeInput", named("RowKey", ch)),
              "JSON insert, RowKey %s: the message names it and its value" % why)
    # JSON escapes of the value come back as the same characters
    pk = "q\"u'o\u00fc\U0001F600/"
    r = http.request("POST", "/RangeJson", body=js({"PartitionKey": pk, "RowKey": "r"}))
    check(tap, message_of(r), ("OutOfRangeInput", named("PartitionKey", pk)),
          "a value with quotes, U+00FC and U+1F600 is given back exactly")
    # update and merge bodies (the URL names the entity; body keys are checked)
    for method, hdrs in (("PUT", None), ("MERGE", None), ("PUT", {"If-Match": "*"})):
        r = http.request(method, "/RangeJson(PartitionKey='a',RowKey='r')",
                         body=js({"PartitionKey": "a/b", "V": 1}), headers=hdrs)
        check(tap, (r.status,) + message_of(r), (400, "OutOfRangeInput",
                                                 named("PartitionKey", "a/b")),
              "%s%s with a body PartitionKey a/b" % (method, " If-Match: *" if hdrs else ""))
        r = http.request(method, "/RangeJson(PartitionKey='a',RowKey='r')",
                         body=js({"RowKey": "r#", "V": 1}), headers=hdrs)
        check(tap, message_of(r), ("OutOfRangeInput", named("RowKey", "r#")),
              "%s with a body RowKey r#" % method)
    # both keys bad: the PartitionKey is named
    r = http.request("POST", "/RangeJson", body=js({"PartitionKey": "a?", "RowKey": "b?"}))
    check(tap, message_of(r), ("OutOfRangeInput", named("PartitionKey", "a?")),
          "both keys bad: the PartitionKey is named")
    r = http.request("GET", "/RangeJson()")
    tap.ok(r.status == 200 and r.json()["value"] == [], "nothing was written", repr(r))


def bounds(tap, srv):
    http = h.Http(srv)
    tap.eq(http.create_table("RangeLong").status, 201, "create RangeLong")
    pk = "k" * 1023 + "/"
    r = http.request("POST", "/RangeLong", body=js({"PartitionKey": pk, "RowKey": "r"}))
    check(tap, message_of(r), ("OutOfRangeInput", named("PartitionKey", pk)),
          "a 1,024-character PartitionKey with / is named whole")
    rk = "\x01" * 1024
    r = http.request("POST", "/RangeLong", body=js({"PartitionKey": "p", "RowKey": rk}))
    check(tap, message_of(r), ("OutOfRangeInput", named("RowKey", rk)),
          "a RowKey of 1,024 U+0001 is named whole (escaped in JSON)")
    tap.ok(len(r.body) < 8192, "that answer stays under 8 KiB (%d bytes)" % len(r.body))
    r = http.request("POST", "/RangeLong", body=js({"PartitionKey": "k" * 1024 + "/",
                                                    "RowKey": "r"}))
    tap.eq(r.error_code(), "KeyValueTooLarge",
           "a 1,025-character PartitionKey with /: KeyValueTooLarge (length first)")
    r = http.request("POST", "/RangeLong", body=js({"PartitionKey": "p",
                                                    "RowKey": "/" * 100000}))
    tap.ok(r.error_code() == "KeyValueTooLarge" and len(r.body) < 4096,
           "a RowKey of 100,000 '/': KeyValueTooLarge, a short answer", repr(r)[:300])


def datetimes(tap, srv):
    http = h.Http(srv)
    tap.eq(http.create_table("RangeDate").status, 201, "create RangeDate")
    for text, shown in (("1600-12-31T23:59:59.9999999Z", "12/31/1600 23:59:59"),
                        ("0001-01-01T00:00:00Z", "01/01/0001 00:00:00"),
                        ("1601-01-01T00:30:00+01:00", "12/31/1600 23:30:00"),
                        ("1000-06-15T08:09:10.5", "06/15/1000 08:09:10")):
        body = js({"PartitionKey": "p", "RowKey": "r", "When@odata.type": "Edm.DateTime",
                   "When": text})
        r = http.request("POST", "/RangeDate", body=body)
        check(tap, (r.status,) + message_of(r), (400, "OutOfRangeInput", named("When", shown)),
              "DateTime %s: the message names the property and the instant" % text)
    r = http.request("POST", "/RangeDate", body=js({
        "PartitionKey": "p", "RowKey": "r", "When@odata.type": "Edm.DateTime",
        "When": "0000-01-01T00:00:00Z"}))
    check(tap, message_of(r), ("OutOfRangeInput", GENERIC),
          "DateTime of year 0 (no .NET DateTime): the generic message")
    r = http.request("POST", "/RangeDate", body=js({
        "PartitionKey": "p", "RowKey": "r", "When@odata.type": "Edm.DateTime",
        "When": "1601-01-01T00:00:00Z"}))
    tap.eq(r.status, 201, "DateTime 1601-01-01T00:00:00Z is stored")


def keys_atom(tap, srv):
    http = h.Http(srv, version="2013-08-15", accept=ATOM_ACCEPT)
    r = http.request("POST", "/Tables", body=entry([("TableName", None, "RangeAtom")]),
                     content_type="application/atom+xml")
    tap.eq(r.status, 201, "create RangeAtom (Atom)")
    for ch, why in XML_OK:
        pk = "a" + ch + "b"
        r = http.request("POST", "/RangeAtom", content_type="application/atom+xml",
                         body=entry([("PartitionKey", None, xml_text(pk)), ("RowKey", None, "r")]))
        got = (r.status, r.h("Content-Type")) + xml_message_of(r.body)
        check(tap, got, (400, "application/xml;charset=utf-8", "OutOfRangeInput",
                         named("PartitionKey", pk)),
              "Atom insert, PartitionKey with %s: OData XML error naming it" % why, r.body[:600])
        r = http.request("POST", "/RangeAtom", content_type="application/atom+xml",
                         body=entry([("PartitionKey", None, "p"), ("RowKey", None, xml_text(ch))]))
        check(tap, xml_message_of(r.body), ("OutOfRangeInput", named("RowKey", ch)),
              "Atom insert, RowKey %s: OData XML error naming it" % why, r.body[:600])
    # the raw bytes: < and & are escaped; TAB and U+007F (XML characters) are not
    r = http.request("POST", "/RangeAtom", content_type="application/atom+xml",
                     body=entry([("PartitionKey", None, "&lt;a&amp;&#x9;\x7f/"),
                                 ("RowKey", None, "r")]))
    tap.ok(b"<message xml:lang=\"en-US\">The 'PartitionKey' parameter of value "
           b"'&lt;a&amp;\t\x7f/' is out of range.\n" in r.body,
           "Atom: < and & in the value are escaped in the XML", r.body[:600])
    r = http.request("POST", "/RangeAtom", content_type="application/atom+xml",
                     body=entry([("PartitionKey", None, "p"), ("RowKey", None, "r"),
                                 ("D", "Edm.DateTime", "1600-12-31T23:59:59Z")]))
    check(tap, xml_message_of(r.body), ("OutOfRangeInput", named("D", "12/31/1600 23:59:59")),
          "Atom: DateTime before 1601 names the property")


def batches(tap, srv):
    http = h.Http(srv)
    tap.eq(http.create_table("RangeBatch").status, 201, "create RangeBatch")
    base = "http://%s:%d/%s" % (srv.host, srv.port, h.DEV_ACCOUNT)
    for ch, why in FORBIDDEN:
        r = changeset(http, base, [("POST", "/RangeBatch", js({"PartitionKey": "p" + ch,
                                                              "RowKey": "r"}))])
        check(tap, part_error(r), (400, "OutOfRangeInput", "0:" + named("PartitionKey", "p" + ch)),
              "$batch op 0, PartitionKey with %s: \"0:\" and the name" % why)
        r = changeset(http, base, [
            ("POST", "/RangeBatch", js({"PartitionKey": "p", "RowKey": "ok"})),
            ("POST", "/RangeBatch", js({"PartitionKey": "p", "RowKey": "r" + ch}))])
        check(tap, part_error(r), (400, "OutOfRangeInput", "1:" + named("RowKey", "r" + ch)),
              "$batch op 1, RowKey with %s: \"1:\" and the name" % why)
    r = changeset(http, base, [
        ("POST", "/RangeBatch", js({"PartitionKey": "p", "RowKey": "ok"})),
        ("MERGE", "/RangeBatch(PartitionKey='p',RowKey='m')", js({"RowKey": "m#", "V": 1}))])
    check(tap, part_error(r), (400, "OutOfRangeInput", "1:" + named("RowKey", "m#")),
          "$batch op 1, a MERGE whose body RowKey has #")
    r = changeset(http, base, [
        ("POST", "/RangeBatch", js({"PartitionKey": "p", "RowKey": "ok"})),
        ("POST", "/RangeBatch", js({"PartitionKey": "p", "RowKey": "d",
                                    "D@odata.type": "Edm.DateTime",
                                    "D": "1600-01-01T00:00:00Z"}))])
    check(tap, part_error(r), (400, "OutOfRangeInput", "1:" + named("D", "01/01/1600 00:00:00")),
          "$batch op 1, a DateTime before 1601")
    r = http.request("GET", "/RangeBatch()")
    tap.ok(r.status == 200 and r.json()["value"] == [], "no changeset wrote anything", repr(r))
    # Atom parts
    old = h.Http(srv, version="2013-08-15", accept=ATOM_ACCEPT)
    for ch, why in XML_OK:
        r = changeset(old, base, [
            ("POST", "/RangeBatch", entry([("PartitionKey", None, "p"), ("RowKey", None, "ok")])),
            ("POST", "/RangeBatch", entry([("PartitionKey", None, "p"),
                                           ("RowKey", None, xml_text("r" + ch))]))], atom=True)
        check(tap, part_error(r, atom=True),
              (400, "OutOfRangeInput", "1:" + named("RowKey", "r" + ch)),
              "Atom $batch op 1, RowKey with %s: \"1:\" and the name" % why, r.body[:800])


def sdk(tap, srv):
    if IMPORT_ERROR is not None:
        tap.ok(False, "import the Azure Tables SDK (Debian python3-azure)", str(IMPORT_ERROR))
        return
    kw = dict(retry_total=0, connection_timeout=10, read_timeout=30)
    svc = TableServiceClient.from_connection_string(srv.conn_str(), **kw)
    t = svc.create_table("RangeSdk")
    try:
        t.create_entity({"PartitionKey": "a/b", "RowKey": "r"})
        tap.ok(False, "SDK create_entity with PartitionKey a/b fails")
    except HttpResponseError as e:
        # (this SDK version re-raises the raw error: the body is in its text)
        tap.ok(e.status_code == 400 and "OutOfRangeInput" in str(e) and
               named("PartitionKey", "a/b") in str(e),
               "SDK create_entity: HttpResponseError OutOfRangeInput with the message",
               "%s %r" % (e.status_code, str(e)[:500]))
    try:
        t.submit_transaction([("create", {"PartitionKey": "p", "RowKey": "ok"}),
                              ("create", {"PartitionKey": "p", "RowKey": "r?"})])
        tap.ok(False, "SDK submit_transaction with RowKey r? fails")
    except TableTransactionError as e:
        tap.ok(getattr(e, "error_code", None) == "OutOfRangeInput" and
               ("1:" + named("RowKey", "r?")) in str(e),
               "SDK submit_transaction: TableTransactionError with \"1:\" and the message",
               "%s %r" % (getattr(e, "error_code", None), str(e)[:500]))
    tap.eq(list(t.list_entities()), [], "SDK: nothing was written")


def main():
    tap = h.Tap()
    try:
        srv = h.Server().start()
    except h.ServerError as e:
        tap.ok(False, "server starts", str(e))
        tap.done()
    h.watchdog(int(os.environ.get("TEST_WATCHDOG", "180")), srv, tap)
    for fn in (keys_json, bounds, datetimes, keys_atom, batches, sdk):
        tap.run(fn, tap, srv)
    srv.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
