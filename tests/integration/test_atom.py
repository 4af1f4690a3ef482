#!/usr/bin/python3
"""Integration test: AtomPub XML for service versions before 2015-12-11
(issue 20), raw requests shaped after the REST reference's Atom examples
(Create Table, Query Tables, Insert Entity, Get/Query Entities, Update,
Merge, Delete, upserts, $batch) against a real ./tabled: format selection
by version, Accept, Content-Type and $format; byte-level checks of what
legacy clients read (namespaces, id, link, category, m:etag, m:type,
m:null, continuation headers); exact round trips of the eight Edm types
with their edge values; the OData XML error; malformed and hostile XML.
Prints TAP; exit status 1 on failure."""
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

NS_A = "http://www.w3.org/2005/Atom"
NS_D = "http://schemas.microsoft.com/ado/2007/08/dataservices"
NS_M = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
SCHEME = "http://schemas.microsoft.com/ado/2007/08/dataservices/scheme"
ATOM_CT = "application/atom+xml;charset=utf-8"
ATOM_ACCEPT = "application/atom+xml,application/xml"
DECL = '<?xml version="1.0" encoding="utf-8" standalone="yes"?>'
OLD = "2013-08-15"       # JSON and Atom
OLDEST = "2012-02-12"    # Atom only
ERR_HEAD = ('<?xml version="1.0" encoding="utf-8" standalone="yes"?>\n<error xmlns="'
            + NS_M + '">\n  <code>')


def entry(props):
    """An Atom request entry in the Insert Entity example's shape; props is
    a list of (name, type or None, text or None for m:null)."""
    out = []
    for name, typ, text in props:
        attr = ' m:type="%s"' % typ if typ else ""
        if text is None:
            out.append('<d:%s m:null="true" />' % name)
        else:
            out.append("<d:%s%s>%s</d:%s>" % (name, attr, text, name))
    return (DECL + '\n<entry xmlns:d="%s" xmlns:m="%s" xmlns="%s">\n  <title />\n'
            '  <updated>2008-09-18T23:46:19.3857256Z</updated>\n  <author>\n    <name />\n'
            '  </author>\n  <id />\n  <content type="application/xml">\n    <m:properties>\n'
            '      %s\n    </m:properties>\n  </content>\n</entry>' % (NS_D, NS_M, NS_A,
                                                                      "\n      ".join(out)))


def table_entry(name):
    return entry([("TableName", None, name)])


def xml_escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def parse(body):
    return ET.fromstring(body)


def props_of(e):
    """{name: (m:type or None, text, m:null)} of an atom:entry element."""
    out = {}
    p = e.find("{%s}content/{%s}properties" % (NS_A, NS_M))
    for c in list(p) if p is not None else []:
        name = c.tag.split("}", 1)[1]
        out[name] = (c.get("{%s}type" % NS_M), c.text or "", c.get("{%s}null" % NS_M))
    return out


def xml_error(r):
    """(code, first message line) of an OData XML error body."""
    try:
        root = parse(r.body)
        msg = root.find("{%s}message" % NS_M).text
        return root.find("{%s}code" % NS_M).text, msg.split("\n", 1)[0]
    except Exception:  # noqa: BLE001
        return None, None


def check_xml_error(tap, r, status, code, what):
    got = xml_error(r)
    tap.ok(r.status == status and got[0] == code and r.body.startswith(ERR_HEAD.encode()) and
           r.h("Content-Type") == "application/xml;charset=utf-8" and
           b'</code>\n  <message xml:lang="en-US">' in r.body and
           r.body.endswith(b"</message>\n</error>") and r.h("x-ms-error-code") == code,
           "%s -> %d %s (OData XML error)" % (what, status, code),
           "got %s %r %r" % (r.status, r.h("Content-Type"), r.body[:400]))


def atom_post(http, path, body, **kw):
    return http.request("POST", path, body=body, content_type="application/atom+xml", **kw)


def negotiation(tap, server):
    """Which format each version, Accept, Content-Type and $format get."""
    http = h.Http(server, version=OLD, accept=ATOM_ACCEPT)
    r = http.get("/Tables")
    tap.ok(r.status == 200 and r.h("Content-Type") == ATOM_CT and
           r.h("DataServiceVersion") == "1.0;" and r.body.startswith(DECL.encode() + b"<feed"),
           "2013-08-15, Accept atom: Atom feed, DataServiceVersion 1.0;", repr(r))
    r = http.get("/Tables", headers={"Accept": None})
    tap.ok(r.status == 200 and r.h("Content-Type") == ATOM_CT, "no Accept: Atom (the default)",
           repr(r))
    r = http.get("/Tables", headers={"Accept": "*/*"})
    tap.ok(r.status == 200 and r.h("Content-Type") == ATOM_CT, "Accept */*: Atom", repr(r))
    r = http.get("/Tables", headers={"Accept": "application/json;odata=nometadata"})
    tap.ok(r.status == 200 and r.h("Content-Type", "").startswith(
        "application/json;odata=nometadata"), "2013-08-15, Accept JSON: JSON", repr(r))
    r = http.get("/Tables?$format=atom", headers={"Accept": "application/json"})
    tap.ok(r.status == 200 and r.h("Content-Type") == ATOM_CT, "$format=atom overrides Accept",
           repr(r))
    r = http.get("/Tables?$format=json", headers={"Accept": ATOM_ACCEPT})
    tap.ok(r.status == 200 and r.h("Content-Type", "").startswith("application/json"),
           "$format=json overrides an Atom Accept", repr(r))
    old = h.Http(server, version=OLDEST, accept=ATOM_ACCEPT)
    r = old.get("/Tables", headers={"Accept": None})
    tap.ok(r.status == 200 and r.h("Content-Type") == ATOM_CT, "2012-02-12, no Accept: Atom",
           repr(r))
    r = old.get("/Tables", headers={"Accept": "application/json"})
    check_xml_error(tap, r, 415, "JsonFormatNotSupported", "2012-02-12, Accept JSON")
    r = old.get("/Tables", headers={"Accept": "*/*"})
    tap.ok(r.status == 200 and r.h("Content-Type") == ATOM_CT, "2012-02-12, Accept */*: Atom",
           repr(r))
    r = h.Http(server, version="2015-07-08", accept=ATOM_ACCEPT).get("/Tables")
    tap.ok(r.status == 200 and r.h("Content-Type") == ATOM_CT, "2015-07-08 still serves Atom",
           repr(r))
    new = h.Http(server, version="2015-12-11", accept=ATOM_ACCEPT)
    r = new.get("/Tables")
    tap.ok(r.status == 415 and r.body.startswith(
        b'<?xml version="1.0" encoding="utf-8"?><error xmlns="' + NS_M.encode() +
        b'"><code>AtomFormatNotSupported</code>'), "2015-12-11, Accept atom -> 415", repr(r))
    r = atom_post(new, "/Tables", table_entry("atomnew"),
                  headers={"Accept": "application/json;odata=nometadata"})
    tap.eq((r.status, r.error_code()), (415, "AtomFormatNotSupported"),
           "2015-12-11, Atom body -> 415 AtomFormatNotSupported")
    r = h.Http(server, version="2019-02-02", accept=ATOM_ACCEPT).get("/Tables")
    tap.eq((r.status, r.error_code()), (415, "AtomFormatNotSupported"),
           "2019-02-02, Accept atom -> 415 (JSON path unchanged)")


def tables(tap, server):
    """Create Table, Get Table, Query Tables with continuation, Delete."""
    http = h.Http(server, version=OLD, accept=ATOM_ACCEPT)
    base = "http://%s:%d/%s" % (server.host, server.port, h.DEV_ACCOUNT)
    r = atom_post(http, "/Tables", table_entry("AtomTab1"))
    ok = r.status == 201 and r.h("Content-Type") == ATOM_CT
    root = parse(r.body) if ok else None
    tap.ok(ok and root.tag == "{%s}entry" % NS_A and
           r.body.startswith((DECL + '<entry xml:base="%s/" xmlns:d="%s" xmlns:m="%s" '
                              'xmlns="%s"><id>%s/Tables(\'AtomTab1\')</id>' %
                              (base, NS_D, NS_M, NS_A, base)).encode()) and
           b'<title type="text"></title><updated>' in r.body and
           b"<author><name /></author><link rel=\"edit\" title=\"Tables\" "
           b"href=\"Tables('AtomTab1')\" /><category term=\"devstoreaccount1.Tables\" scheme=\""
           + SCHEME.encode() + b"\" /><content type=\"application/xml\"><m:properties>"
           b"<d:TableName>AtomTab1</d:TableName></m:properties></content></entry>" in r.body and
           r.h("Location") == "%s/Tables('AtomTab1')" % base,
           "Create Table (Atom body) -> 201 Atom entry as the reference's example", repr(r))
    r = atom_post(http, "/Tables", table_entry("AtomTab1"))
    check_xml_error(tap, r, 409, "TableAlreadyExists", "Create Table twice")
    r = atom_post(http, "/Tables", table_entry("AtomTab2"),
                  headers={"Prefer": "return-no-content"})
    tap.eq(r.status, 204, "Create Table with Prefer: return-no-content -> 204")
    for name in ("AtomTab3", "AtomTab4"):
        atom_post(http, "/Tables", table_entry(name))
    r = http.get("/Tables('AtomTab1')")
    tap.ok(r.status == 200 and b"<d:TableName>AtomTab1</d:TableName>" in r.body and
           r.body.startswith((DECL + "<entry").encode()), "Get Table -> Atom entry", repr(r))
    names, token, pages = [], None, 0
    while pages < 10:
        q = "/Tables?$top=2" + ("&NextTableName=" + token if token else "")
        r = http.get(q)
        root = parse(r.body)
        tap.ok(r.status == 200 and root.tag == "{%s}feed" % NS_A and
               root.find("{%s}title" % NS_A).text == "Tables" and
               root.find("{%s}id" % NS_A).text == base + "/Tables" and
               root.find("{%s}link" % NS_A).get("href") == "Tables",
               "Query Tables page %d: feed with title, id, self link" % pages, repr(r))
        for e in root.findall("{%s}entry" % NS_A):
            names.append(props_of(e)["TableName"][1])
        pages += 1
        token = r.h("x-ms-continuation-NextTableName")
        if not token:
            break
    tap.eq(names, ["AtomTab1", "AtomTab2", "AtomTab3", "AtomTab4"],
           "Query Tables with $top=2 and NextTableName: every table once, in order")
    r = http.request("DELETE", "/Tables('AtomTab4')")
    tap.ok(r.status == 204 and not r.body, "Delete Table -> 204", repr(r))
    r = http.request("DELETE", "/Tables('AtomTab4')")
    check_xml_error(tap, r, 404, "ResourceNotFound", "Delete Table twice")
    r = atom_post(http, "/Tables", table_entry("a"))
    check_xml_error(tap, r, 400, "OutOfRangeInput", "Create Table with a 1-character name")


# Edge values: (name, m:type, text sent, text expected back).
EDGE = [
    ("I32min", "Edm.Int32", "-2147483648", "-2147483648"),
    ("I32max", "Edm.Int32", "2147483647", "2147483647"),
    ("I64min", "Edm.Int64", "-9223372036854775808", "-9223372036854775808"),
    ("I64max", "Edm.Int64", "9223372036854775807", "9223372036854775807"),
    ("DNaN", "Edm.Double", "NaN", "NaN"),
    ("DInf", "Edm.Double", "INF", "INF"),
    ("DNInf", "Edm.Double", "-INF", "-INF"),
    ("DFrac", "Edm.Double", "200.23", "200.23"),
    ("DBig", "Edm.Double", "1.7976931348623157E+308", "1.7976931348623157E+308"),
    ("DTiny", "Edm.Double", "4.94065645841247E-324", "5E-324"),
    ("DWhole", "Edm.Double", "5", "5"),
    ("DTmin", "Edm.DateTime", "1601-01-01T00:00:00Z", "1601-01-01T00:00:00Z"),
    ("DTmax", "Edm.DateTime", "9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.9999999Z"),
    ("DT7", "Edm.DateTime", "2008-07-10T00:00:00.1234567Z", "2008-07-10T00:00:00.1234567Z"),
    ("BinEmpty", "Edm.Binary", "", ""),
    ("Bin", "Edm.Binary", "AAEC/w==", "AAEC/w=="),
    ("BoolT", "Edm.Boolean", "true", "true"),
    ("BoolF", "Edm.Boolean", "0", "false"),
    ("G", "Edm.Guid", "C9DA6455-213D-42C9-9A79-3E9149A57833",
     "c9da6455-213d-42c9-9a79-3e9149a57833"),
    ("SEsc", None, "&lt;a href=&quot;x&quot;&gt;&amp;'", "<a href=\"x\">&'"),
    ("SSpace", None, "  two  spaces\t\n", "  two  spaces\t\n"),
    ("SCR", None, "a&#xD;b", "a\rb"),
    ("SUni", "Edm.String", "\u00e9\u20ac\U0001F600", "\u00e9\u20ac\U0001F600"),
    ("SEmpty", None, "", ""),
]


def entities(tap, server):
    """Insert, Get, Query ($filter, $select, $top, continuation), Update,
    Merge, upserts and Delete in Atom, and the round trips of EDGE."""
    http = h.Http(server, version=OLD, accept=ATOM_ACCEPT)
    base = "http://%s:%d/%s" % (server.host, server.port, h.DEV_ACCOUNT)
    atom_post(http, "/Tables", table_entry("AtomEnt"))
    props = [("PartitionKey", None, "p1"), ("RowKey", None, "r1")]
    props += [(n, t, s) for n, t, s, _ in EDGE] + [("Gone", "Edm.Int32", None)]
    r = atom_post(http, "/AtomEnt", entry(props))
    etag = r.h("ETag", "")
    tap.ok(r.status == 201 and r.h("Content-Type") == ATOM_CT and
           r.h("Location") == "%s/AtomEnt(PartitionKey='p1',RowKey='r1')" % base and
           etag.startswith('W/"datetime\'') and
           ('m:etag="%s"' % etag.replace('"', "&quot;")).encode() in r.body,
           "Insert Entity (Atom) -> 201 entry, m:etag attribute = ETag header", repr(r))
    root = parse(r.body)
    p = props_of(root)
    tap.ok(root.find("{%s}id" % NS_A).text == "%s/AtomEnt(PartitionKey='p1',RowKey='r1')" % base
           and root.find("{%s}link" % NS_A).get("href") == "AtomEnt(PartitionKey='p1',RowKey='r1')"
           and root.find("{%s}link" % NS_A).get("title") == "AtomEnt"
           and root.find("{%s}category" % NS_A).get("term") == "devstoreaccount1.AtomEnt"
           and root.find("{%s}category" % NS_A).get("scheme") == SCHEME
           and root.find("{%s}content" % NS_A).get("type") == "application/xml",
           "entry id, link rel=edit, category term, content type", r.body[:900])
    tap.ok(list(p)[:3] == ["PartitionKey", "RowKey", "Timestamp"] and
           p["Timestamp"][0] == "Edm.DateTime" and "Gone" not in p,
           "keys and Timestamp first; an m:null property is not stored", list(p))
    r = http.get_entity("AtomEnt", "p1", "r1")
    got = props_of(parse(r.body))
    tap.ok(r.status == 200 and r.h("ETag") == etag, "Get Entity -> 200 Atom, same ETag", repr(r))
    for name, typ, _, want in EDGE:
        wt = None if typ == "Edm.String" else typ
        tap.eq(got.get(name), (wt, want, None), "round trip %s %s" % (typ or "Edm.String", name))
    # byte-level: m:type spelling, self-closing empty values, escaping
    tap.ok(b'<d:BinEmpty m:type="Edm.Binary" />' in r.body and b"<d:SEmpty />" in r.body and
           b"<d:SEsc>&lt;a href=&quot;x&quot;&gt;&amp;'</d:SEsc>" in r.body and
           b"<d:SCR>a&#xD;b</d:SCR>" in r.body and
           b'<d:I64min m:type="Edm.Int64">-9223372036854775808</d:I64min>' in r.body,
           "empty values self-closing; & < > \" escaped; CR as &#xD;", r.body[:1500])

    # characters XML 1.0 cannot carry, stored through JSON, read in Atom
    js = h.Http(server, version=OLD)
    r = js.insert("AtomEnt", {"PartitionKey": "p1", "RowKey": "ctl",
                              "C": "a\x01b\x1fc\ufffed"})
    tap.eq(r.status, 201, "JSON insert of U+0001, U+001F, U+FFFE")
    r = http.get_entity("AtomEnt", "p1", "ctl")
    tap.ok(b"<d:C>a&#x1;b&#x1F;c&#xFFFE;d</d:C>" in r.body,
           "characters XML 1.0 cannot carry are written as character references", r.body)

    # query: $filter, $select (absent -> m:null), $top + continuation
    for i in range(5):
        atom_post(http, "/AtomEnt", entry([("PartitionKey", None, "q"),
                                           ("RowKey", None, "r%d" % i),
                                           ("N", "Edm.Int64", str(i))]))
    r = http.get("/AtomEnt()?$filter=PartitionKey%20eq%20'q'%20and%20N%20ge%202L"
                 "&$select=N,Missing")
    root = parse(r.body)
    es = root.findall("{%s}entry" % NS_A)
    tap.ok(r.status == 200 and root.find("{%s}title" % NS_A).text == "AtomEnt" and
           root.find("{%s}id" % NS_A).text == base + "/AtomEnt" and len(es) == 3 and
           props_of(es[0]) == {"N": ("Edm.Int64", "2", None), "Missing": (None, "", "true")} and
           es[0].get("{%s}etag" % NS_M, "").startswith("W/\"datetime'") and
           r.h("DataServiceVersion") == "2.0;",
           "Query Entities $filter + $select: feed, projected entries, m:null for absent",
           r.body[:1500])
    seen, q, pages = [], "/AtomEnt()?$filter=PartitionKey%20eq%20'q'&$top=2", 0
    while q and pages < 10:
        r = http.get(q)
        seen += [props_of(e)["RowKey"][1] for e in parse(r.body).findall("{%s}entry" % NS_A)]
        npk, nrk = (r.h("x-ms-continuation-NextPartitionKey"),
                    r.h("x-ms-continuation-NextRowKey"))
        q = ("/AtomEnt()?$filter=PartitionKey%%20eq%%20'q'&$top=2&NextPartitionKey=%s"
             "&NextRowKey=%s" % (npk, nrk)) if npk else None
        pages += 1
    tap.eq((seen, pages), (["r0", "r1", "r2", "r3", "r4"], 3),
           "Query Entities $top=2 with NextPartitionKey/NextRowKey: 3 pages")

    # Update (PUT + If-Match), Merge, upserts, Delete
    path = http.entity_path("AtomEnt", "q", "r0")
    r = http.request("PUT", path, body=entry([("A", None, "x")]),
                     content_type="application/atom+xml", headers={"If-Match": "*"})
    tap.ok(r.status == 204 and r.has("ETag") and not r.body, "Update Entity (Atom) -> 204",
           repr(r))
    r = http.request("MERGE", path, body=entry([("B", "Edm.Boolean", "true")]),
                     content_type="application/atom+xml", headers={"If-Match": r.h("ETag")})
    tap.eq(r.status, 204, "Merge Entity (Atom) with the ETag -> 204")
    got = props_of(parse(http.request("GET", path).body))
    tap.ok("N" not in got and got.get("A") == (None, "x", None) and
           got.get("B") == ("Edm.Boolean", "true", None), "after Update + Merge: A and B only",
           got)
    r = http.request("MERGE", path, body=entry([("C", None, "y")]),
                     content_type="application/atom+xml",
                     headers={"If-Match": 'W/"datetime\'2001-01-01T00%3A00%3A00Z\'"'})
    check_xml_error(tap, r, 412, "UpdateConditionNotSatisfied", "Merge with a stale ETag")
    up = http.entity_path("AtomEnt", "q", "new")
    r = http.request("PUT", up, body=entry([("A", None, "1")]),
                     content_type="application/atom+xml")
    tap.eq(r.status, 204, "Insert Or Replace (PUT without If-Match) -> 204")
    r = http.request("MERGE", up, body=entry([("B", None, "2")]),
                     content_type="application/atom+xml")
    tap.eq(r.status, 204, "Insert Or Merge (MERGE without If-Match) -> 204")
    got = props_of(parse(http.request("GET", up).body))
    tap.ok(got.get("A") == (None, "1", None) and got.get("B") == (None, "2", None),
           "upserts stored A and B", got)
    r = http.request("DELETE", up, headers={"If-Match": "*"})
    tap.eq(r.status, 204, "Delete Entity -> 204")
    r = http.request("GET", up)
    check_xml_error(tap, r, 404, "ResourceNotFound", "Get Entity after Delete")
    r = atom_post(http, "/AtomEnt", entry([("PartitionKey", None, "p1"), ("RowKey", None, "r1")]))
    check_xml_error(tap, r, 409, "EntityAlreadyExists", "Insert Entity twice")
    r = atom_post(http, "/AtomEnt", entry([("PartitionKey", None, "p1"), ("RowKey", None, "x"),
                                           ("I", "Edm.Int32", "2147483648")]))
    check_xml_error(tap, r, 400, "InvalidInput", "Int32 out of range")
    r = atom_post(http, "/AtomEnt", entry([("PartitionKey", None, "p1"), ("RowKey", None, "x"),
                                           ("D", "Edm.DateTime", "1600-12-31T23:59:59Z")]))
    check_xml_error(tap, r, 400, "OutOfRangeInput", "DateTime before 1601")
    r = atom_post(http, "/AtomEnt", entry([("RowKey", None, "x")]))
    check_xml_error(tap, r, 400, "PropertiesNeedValue", "Insert without PartitionKey")


def hostile(tap, server):
    """Malformed and hostile XML: 400 InvalidInput, never a crash."""
    http = h.Http(server, version=OLD, accept=ATOM_ACCEPT)
    atom_post(http, "/Tables", table_entry("AtomBad"))
    good = entry([("PartitionKey", None, "p"), ("RowKey", None, "r")])
    cases = [
        ("truncated entry", good[:-20]),
        ("not XML", "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}"),
        ("root not atom:entry", good.replace("<entry ", "<feed ").replace("</entry>", "</feed>")),
        ("DOCTYPE with an entity (billion laughs)",
         '<?xml version="1.0"?><!DOCTYPE e [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
         + good[good.index("<entry"):].replace(">p<", ">&b;<")),
        ("external entity", '<?xml version="1.0"?><!DOCTYPE e [<!ENTITY x SYSTEM '
         '"file:///etc/passwd">]>' + good[good.index("<entry"):].replace(">p<", ">&x;<")),
        ("undeclared entity", good.replace(">p<", ">&nope;<")),
        ("nesting deeper than the bound",
         good.replace("<d:RowKey>r</d:RowKey>", "<d:X>" + "<a>" * 50 + "</a>" * 50 + "</d:X>")),
        ("element inside a property", good.replace(">p<", "><b>p</b><")),
        ("character reference XML 1.0 forbids", good.replace(">p<", ">&#x1;<")),
        ("bad UTF-8", good.replace(">p<", ">\udcff<")),
    ]
    for what, body in cases:
        r = http.request("POST", "/AtomBad", body=body.encode("utf-8", "surrogateescape"),
                         content_type="application/atom+xml")
        check_xml_error(tap, r, 400, "InvalidInput", what)
    r = http.get("/AtomBad()")
    tap.ok(r.status == 200 and b"<entry" not in r.body, "nothing was stored", r.body[:300])


def batch(tap, server):
    """$batch whose changeset parts carry Atom entries, and a query batch."""
    http = h.Http(server, version=OLD, accept=ATOM_ACCEPT)
    atom_post(http, "/Tables", table_entry("AtomBatch"))
    base = "http://%s:%d/%s" % (server.host, server.port, h.DEV_ACCOUNT)

    def part(method, url, body=None, extra=""):
        s = ("--changeset_1\r\nContent-Type: application/http\r\n"
             "Content-Transfer-Encoding: binary\r\n\r\n%s %s HTTP/1.1\r\n%s" % (method, url, extra))
        if body is not None:
            s += "Content-Type: application/atom+xml;type=entry\r\nContent-Length: %d\r\n" % len(
                body.encode())
        return s + "\r\n" + (body or "") + "\r\n"

    parts = [part("POST", base + "/AtomBatch",
                  entry([("PartitionKey", None, "b"), ("RowKey", None, "r%d" % i),
                         ("V", "Edm.Int64", str(i))]), "Content-ID: %d\r\n" % (i + 1))
             for i in range(3)]
    parts.append(part("MERGE", base + "/AtomBatch(PartitionKey='b',RowKey='r9')",
                      entry([("W", None, "merged")])))
    body = ("--batch_a\r\nContent-Type: multipart/mixed; boundary=changeset_1\r\n\r\n" +
            "".join(parts) + "--changeset_1--\r\n--batch_a--\r\n")
    r = http.request("POST", "/$batch", body=body,
                     content_type="multipart/mixed; boundary=batch_a")
    text = r.body.decode("utf-8", "replace")
    tap.ok(r.status == 202 and text.count("HTTP/1.1 201 Created") == 3 and
           text.count("HTTP/1.1 204 No Content") == 1 and
           text.count("Content-Type: " + ATOM_CT) == 3 and
           "DataServiceVersion: 1.0;" in text and "DataServiceVersion: 3.0;" not in text and
           text.count('<entry xml:base="') == 3 and
           "<d:V m:type=\"Edm.Int64\">2</d:V>" in text,
           "changeset of 3 Atom inserts + 1 Atom merge -> 202, Atom entries in the parts",
           text[:2000])
    got = props_of(parse(http.get_entity("AtomBatch", "b", "r0").body))
    got.update(props_of(parse(http.get_entity("AtomBatch", "b", "r9").body)))
    tap.ok(got.get("W") == (None, "merged", None) and got.get("V") == ("Edm.Int64", "0", None),
           "the batch's writes are stored", got)
    bad = [part("POST", base + "/AtomBatch",
                entry([("PartitionKey", None, "b"), ("RowKey", None, "n1")])),
           part("POST", base + "/AtomBatch", "<entry>broken")]
    body = ("--batch_a\r\nContent-Type: multipart/mixed; boundary=changeset_1\r\n\r\n" +
            "".join(bad) + "--changeset_1--\r\n--batch_a--\r\n")
    r = http.request("POST", "/$batch", body=body,
                     content_type="multipart/mixed; boundary=batch_a")
    text = r.body.decode("utf-8", "replace")
    tap.ok(r.status == 202 and "HTTP/1.1 400" in text and
           "<code>InvalidInput</code>" in text and "1:One of the request inputs" in text,
           "a malformed Atom part fails the changeset with an OData XML error", text[:1500])
    r = http.get_entity("AtomBatch", "b", "n1")
    tap.eq(r.status, 404, "nothing of the failed changeset was stored")
    q = ("--batch_q\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
         "GET %s/AtomBatch(PartitionKey='b',RowKey='r1') HTTP/1.1\r\nAccept: "
         "application/atom+xml\r\n\r\n\r\n--batch_q--\r\n" % base)
    r = http.request("POST", "/$batch", body=q, content_type="multipart/mixed; boundary=batch_q")
    text = r.body.decode("utf-8", "replace")
    tap.ok(r.status == 202 and "HTTP/1.1 200 OK" in text and "Content-Type: " + ATOM_CT in text
           and "<d:RowKey>r1</d:RowKey>" in text, "query batch with an Atom GET", text[:1500])


def main():
    tap = h.Tap()
    try:
        server = h.Server().start()
    except h.ServerError as e:
        tap.ok(False, "server starts", str(e))
        tap.done()
    h.watchdog(int(os.environ.get("TEST_WATCHDOG", "120")), server, tap)
    for fn in (negotiation, tables, entities, hostile, batch):
        tap.run(fn, tap, server)
    server.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
