#!/usr/bin/python3
"""Integration test: Table ACL, service properties, service stats and CORS
(doc/protocol.md, Operations; Service properties, ACL and CORS; Response header
sets; Stored access policies).  Raw HTTP through the harness's signing client for
exact bodies and headers, and the Python SDK (azure-data-tables 12.4.2) for
set/get_table_access_policy, get/set_service_properties and a SAS made by
generate_table_sas that names a stored policy.  Prints TAP."""
import datetime
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
    from azure.core.exceptions import (ClientAuthenticationError, HttpResponseError,
                                       ResourceNotFoundError)
    from azure.data.tables import (TableAccessPolicy, TableAnalyticsLogging, TableClient,
                                   TableCorsRule, TableMetrics, TableRetentionPolicy,
                                   TableSasPermissions, TableServiceClient,
                                   generate_table_sas)
    IMPORT_ERROR = None
except ImportError as e:  # reported as a failing check below
    IMPORT_ERROR = e

UTC = datetime.timezone.utc
CLIENT_KW = dict(retry_total=0, connection_timeout=10, read_timeout=20)
XML_DECL = '<?xml version="1.0" encoding="utf-8"?>'
PROPS = "/?restype=service&comp=properties"
DEFAULT_PROPS = (
    XML_DECL + "<StorageServiceProperties><Logging><Version>1.0</Version><Read>false</Read>"
    "<Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled>"
    "</RetentionPolicy></Logging><HourMetrics><Version>1.0</Version><Enabled>false</Enabled>"
    "<RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics><MinuteMetrics>"
    "<Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled>"
    "</RetentionPolicy></MinuteMetrics><Cors /></StorageServiceProperties>")
LOGGING = ("<Logging><Version>1.0</Version><Delete>true</Delete><Read>true</Read>"
           "<Write>false</Write><RetentionPolicy><Enabled>true</Enabled><Days>7</Days>"
           "</RetentionPolicy></Logging>")
LOGGING_OUT = ("<Logging><Version>1.0</Version><Read>true</Read><Write>false</Write>"
               "<Delete>true</Delete><RetentionPolicy><Enabled>true</Enabled><Days>7</Days>"
               "</RetentionPolicy></Logging>")
XML_ERROR_RE = re.compile(
    r'^<\?xml version="1\.0" encoding="utf-8"\?><m:error xmlns:m="http://schemas\.microsoft\.'
    r'com/ado/2007/08/dataservices/metadata"><m:code>([^<]*)</m:code><m:message xml:lang="en-US">'
    r'[^<]*\nRequestId:[^\n<]*\nTime:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z</m:message></m:error>$')


def props_doc(*parts):
    return XML_DECL + "<StorageServiceProperties>" + "".join(parts) + "</StorageServiceProperties>"


def cors_rule(origins="http://a.example", methods="GET,PUT", allowed="", exposed="", age="60"):
    return ("<CorsRule><AllowedOrigins>%s</AllowedOrigins><AllowedMethods>%s</AllowedMethods>"
            "<MaxAgeInSeconds>%s</MaxAgeInSeconds><ExposedHeaders>%s</ExposedHeaders>"
            "<AllowedHeaders>%s</AllowedHeaders></CorsRule>"
            % (origins, methods, age, exposed, allowed))


def metrics(name, enabled="false", include=None, retention="<Enabled>false</Enabled>",
            version="<Version>1.0</Version>"):
    inc = "" if include is None else "<IncludeAPIs>%s</IncludeAPIs>" % include
    return ("<%s>%s<Enabled>%s</Enabled>%s<RetentionPolicy>%s</RetentionPolicy></%s>"
            % (name, version, enabled, inc, retention, name))


def acl_doc(*ids):
    if not ids:
        return XML_DECL + "<SignedIdentifiers />"
    return XML_DECL + "<SignedIdentifiers>" + "".join(ids) + "</SignedIdentifiers>"


def signed_id(ident, start=None, expiry=None, perm=None, policy=True):
    inner = ""
    if start is not None:
        inner += "<Start>%s</Start>" % start
    if expiry is not None:
        inner += "<Expiry>%s</Expiry>" % expiry
    if perm is not None:
        inner += "<Permission>%s</Permission>" % perm
    ap = "<AccessPolicy>%s</AccessPolicy>" % inner if policy else ""
    return "<SignedIdentifier><Id>%s</Id>%s</SignedIdentifier>" % (ident, ap)


class T:
    """Checks over one server."""

    def __init__(self, tap, srv):
        self.tap = tap
        self.srv = srv
        self.http = h.Http(srv)

    # -- requests -------------------------------------------------------------
    def x(self, method, path, body=None, headers=None, **kw):
        """An XML operation as the SDKs send it."""
        hd = {"Accept": "application/xml"}
        hd.update(headers or {})
        return self.http.request(method, path, headers=hd, body=body,
                                 content_type="application/xml" if body is not None else None,
                                 **kw)

    def set_props(self, doc):
        return self.x("PUT", PROPS, body=doc)

    def get_props(self):
        return self.x("GET", PROPS)

    def preflight(self, path="/Tables", **hdrs):
        return self.http.request("OPTIONS", path, headers=hdrs, sign_it=False)

    # -- checks ---------------------------------------------------------------
    def xml_error(self, r, status, code, what):
        """Status, x-ms-error-code, storage XML body and header set (doc/protocol.md, Storage XML errors; XML error)."""
        p = []
        if r.status != status:
            p.append("status %s" % r.status)
        if r.h("x-ms-error-code") != code:
            p.append("x-ms-error-code %r" % r.h("x-ms-error-code"))
        if r.h("Content-Type") != "application/xml":
            p.append("Content-Type %r" % r.h("Content-Type"))
        m = XML_ERROR_RE.match(r.body.decode("utf-8", "replace"))
        if not m or m.group(1) != code:
            p.append("body %r" % r.body[:400])
        for name in ("Cache-Control", "X-Content-Type-Options"):
            if r.has(name):
                p.append("unexpected " + name)
        for name in ("x-ms-request-id", "x-ms-version", "Date", "Content-Length"):
            if not r.has(name):
                p.append("missing " + name)
        self.tap.ok(not p, what, "; ".join(p))

    def xml_ok(self, r, body, what):
        """200 with exactly body, application/xml, the headers of doc/protocol.md, XML success."""
        p = []
        if r.status != 200:
            p.append("status %s" % r.status)
        if r.h("Content-Type") != "application/xml":
            p.append("Content-Type %r" % r.h("Content-Type"))
        got = r.body.decode("utf-8", "replace").lstrip("\ufeff")
        if got != body:
            p.append("body\n got: %s\nwant: %s" % (got, body))
        for name in ("Cache-Control", "X-Content-Type-Options"):
            if r.has(name):
                p.append("unexpected " + name)
        for name in ("x-ms-request-id", "x-ms-version", "Date"):
            if not r.has(name):
                p.append("missing " + name)
        self.tap.ok(not p, what, "; ".join(p))

    def empty_ok(self, r, status, what):
        """doc/protocol.md, XML empty success: status, Content-Length 0, no Content-Type/Cache-Control."""
        p = []
        if r.status != status:
            p.append("status %s body %r" % (r.status, r.body[:300]))
        if r.h("Content-Length") != "0" or r.body:
            p.append("Content-Length %r" % r.h("Content-Length"))
        for name in ("Content-Type", "Cache-Control", "X-Content-Type-Options"):
            if r.has(name):
                p.append("unexpected " + name)
        self.tap.ok(not p, what, "; ".join(p))


# --------------------------------------------------------------------------
# Service properties (doc/protocol.md, Get Service Properties; Set Service Properties; Service properties document)


def test_props(t):
    tap = t.tap
    t.xml_ok(t.get_props(), DEFAULT_PROPS, "282 Get Service Properties on a fresh account: "
             "the default document")
    r = t.x("HEAD", PROPS)
    tap.eq((r.status, r.body), (200, b""), "HEAD Get Service Properties: 200, no body")

    r = t.set_props(props_doc(LOGGING))
    t.empty_ok(r, 202, "283 Set Service Properties -> 202, no body, Content-Length 0")
    want = DEFAULT_PROPS.replace(DEFAULT_PROPS[DEFAULT_PROPS.index("<Logging>"):
                                              DEFAULT_PROPS.index("</Logging>") + 10], LOGGING_OUT)
    t.xml_ok(t.get_props(), want, "Logging is stored and returned in the service's element order")

    rules = cors_rule("http://a.example, http://b.example", "GET, PUT",
                      "x-ms-meta*,x-ms-client-request-id", "x-ms-*", "120")
    r = t.set_props(props_doc("<Cors>" + rules + cors_rule("*", "DELETE", age="5") + "</Cors>"))
    tap.eq(r.status, 202, "Set with only <Cors> -> 202")
    body = t.get_props().body.decode()
    tap.ok(LOGGING_OUT in body, "284 Set with only <Cors> leaves Logging unchanged", body)
    cors_out = ("<Cors><CorsRule><AllowedMethods>GET,PUT</AllowedMethods><AllowedOrigins>"
                "http://a.example,http://b.example</AllowedOrigins><AllowedHeaders>x-ms-meta*,"
                "x-ms-client-request-id</AllowedHeaders><ExposedHeaders>x-ms-*</ExposedHeaders>"
                "<MaxAgeInSeconds>120</MaxAgeInSeconds></CorsRule><CorsRule><AllowedMethods>DELETE"
                "</AllowedMethods><AllowedOrigins>*</AllowedOrigins><AllowedHeaders />"
                "<ExposedHeaders /><MaxAgeInSeconds>5</MaxAgeInSeconds></CorsRule></Cors>")
    tap.ok(body.endswith(cors_out + "</StorageServiceProperties>"),
           "289 Get after Set returns the CORS rules in stored order, elements in the service's order",
           body)

    r = t.set_props(props_doc(metrics("HourMetrics", "true", "true",
                                      "<Enabled>true</Enabled><Days>365</Days>"),
                              metrics("MinuteMetrics", "true", "false",
                                      "<Enabled>true</Enabled><Days>1</Days>")))
    tap.eq(r.status, 202, "metrics with IncludeAPIs and retention 365 / 1 days -> 202")
    body = t.get_props().body.decode()
    tap.ok("<HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true"
           "</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>365</Days>"
           "</RetentionPolicy></HourMetrics><MinuteMetrics><Version>1.0</Version><Enabled>true"
           "</Enabled><IncludeAPIs>false</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled>"
           "<Days>1</Days></RetentionPolicy></MinuteMetrics>" in body and LOGGING_OUT in body
           and cors_out in body, "metrics replaced, Logging and Cors kept", body)

    # validation (doc/protocol.md, Service properties: validation)
    r = t.set_props(XML_DECL + "<StorageServiceProperties />")
    t.xml_error(r, 400, "InvalidXmlDocument", "285 <StorageServiceProperties /> -> 400 "
                "InvalidXmlDocument")
    tap.eq(r.reason, "XML specified is not syntactically valid.",
           "285 ... with the message as the reason phrase")
    for days in ("0", "366", "-1", "x", ""):
        r = t.set_props(props_doc(LOGGING.replace("<Days>7</Days>", "<Days>%s</Days>" % days)))
        t.xml_error(r, 400, "InvalidXmlNodeValue",
                    "286 Logging retention Days %r -> 400 InvalidXmlNodeValue" % days)
    r = t.set_props(props_doc(metrics("HourMetrics", "false", None,
                                      "<Enabled>true</Enabled><Days>366</Days>")))
    t.xml_error(r, 400, "InvalidXmlNodeValue", "286 metrics retention Days 366 -> 400 "
                "InvalidXmlNodeValue")
    r = t.set_props(props_doc(LOGGING.replace("<Days>7</Days>", "")))
    t.xml_error(r, 400, "InvalidXmlNodeValue", "retention enabled without Days -> 400 "
                "InvalidXmlNodeValue")
    r = t.set_props(props_doc("<Cors>" + cors_rule() * 6 + "</Cors>"))
    t.xml_error(r, 400, "InvalidXmlDocument", "287 six CORS rules -> 400 InvalidXmlDocument")
    r = t.set_props(props_doc("<Cors>" + cors_rule() * 5 + "</Cors>"))
    tap.eq(r.status, 202, "five CORS rules -> 202")
    for methods in ("GET,TRACE", "get", "", "CONNECT"):
        r = t.set_props(props_doc("<Cors>" + cors_rule(methods=methods) + "</Cors>"))
        t.xml_error(r, 400, "InvalidXmlNodeValue",
                    "288 CORS AllowedMethods %r -> 400 InvalidXmlNodeValue" % methods)
    bad_values = [
        ("Logging Read 'True'", props_doc(LOGGING.replace("<Read>true", "<Read>True"))),
        ("Logging Version 2.0", props_doc(LOGGING.replace("1.0", "2.0"))),
        ("CORS MaxAgeInSeconds -1", props_doc("<Cors>" + cors_rule(age="-1") + "</Cors>")),
        ("CORS MaxAgeInSeconds abc", props_doc("<Cors>" + cors_rule(age="abc") + "</Cors>")),
        ("CORS 65 origins", props_doc("<Cors>" + cors_rule(
            origins=",".join("http://o%d" % i for i in range(65))) + "</Cors>")),
        ("CORS origin of 257 characters",
         props_doc("<Cors>" + cors_rule(origins="http://" + "o" * 250) + "</Cors>")),
        ("CORS empty AllowedOrigins", props_doc("<Cors>" + cors_rule(origins="") + "</Cors>")),
        ("CORS three prefixed allowed headers",
         props_doc("<Cors>" + cors_rule(allowed="a*,b*,c*") + "</Cors>")),
        ("CORS rules over 2 KiB", props_doc("<Cors>" + "".join(cors_rule(
            origins=",".join("http://origin-%03d.example" % (i * 20 + k) for k in range(20)))
            for i in range(5)) + "</Cors>")),
    ]
    for what, doc in bad_values:
        r = t.set_props(doc)
        t.xml_error(r, 400, "InvalidXmlNodeValue", "%s -> 400 InvalidXmlNodeValue" % what)
    bad_docs = [
        ("malformed XML", XML_DECL + "<StorageServiceProperties><Logging>"),
        ("wrong root element", XML_DECL + "<ServiceProperties>" + LOGGING + "</ServiceProperties>"),
        ("DOCTYPE", '<!DOCTYPE StorageServiceProperties [<!ENTITY x "y">]>'
         "<StorageServiceProperties>" + LOGGING + "</StorageServiceProperties>"),
        ("empty body", ""),
        ("Logging without Version", props_doc(LOGGING.replace("<Version>1.0</Version>", ""))),
        ("Logging without Delete", props_doc(LOGGING.replace("<Delete>true</Delete>", ""))),
        ("metrics enabled without IncludeAPIs",
         props_doc(metrics("HourMetrics", "true", None))),
        ("two Logging elements", props_doc(LOGGING, LOGGING)),
        ("CorsRule without AllowedOrigins", props_doc(
            "<Cors><CorsRule><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>1"
            "</MaxAgeInSeconds></CorsRule></Cors>")),
        ("text beside elements", props_doc("junk", LOGGING)),
    ]
    for what, doc in bad_docs:
        r = t.set_props(doc)
        t.xml_error(r, 400, "InvalidXmlDocument", "%s -> 400 InvalidXmlDocument" % what)
    body = t.get_props().body.decode()
    tap.ok(LOGGING_OUT in body and body.count("<CorsRule>") == 5,
           "failed Sets change nothing", body)

    # tolerant reader: BOM, declaration variants, whitespace, comments, entities
    pretty = ("\ufeff<?xml version='1.0' encoding='UTF-8'?>\n<!-- c -->\n"
              "<StorageServiceProperties xmlns:x=\"urn:x\">\n  <Cors>\n    <CorsRule>\n"
              "      <AllowedOrigins> http://a.example </AllowedOrigins>\n"
              "      <AllowedMethods>GET</AllowedMethods>\n"
              "      <MaxAgeInSeconds>&#49;0</MaxAgeInSeconds>\n"
              "      <AllowedHeaders><![CDATA[x-ms-meta*]]></AllowedHeaders>\n"
              "    </CorsRule>\n  </Cors>\n</StorageServiceProperties>\n")
    r = t.set_props(pretty)
    tap.eq(r.status, 202, "pretty-printed document with BOM, comment, CDATA and a character "
           "reference -> 202")
    body = t.get_props().body.decode()
    tap.ok("<Cors><CorsRule><AllowedMethods>GET</AllowedMethods><AllowedOrigins>http://a.example"
           "</AllowedOrigins><AllowedHeaders>x-ms-meta*</AllowedHeaders><ExposedHeaders />"
           "<MaxAgeInSeconds>10</MaxAgeInSeconds></CorsRule></Cors>" in body,
           "its values are read exactly", body)
    r = t.set_props(props_doc("<Cors/>"))
    body = t.get_props().body.decode()
    tap.ok(r.status == 202 and "<Cors />" in body and LOGGING_OUT in body,
           "<Cors/> removes every CORS rule", body)
    r = t.x("POST", PROPS, body=props_doc(LOGGING))
    tap.isin(r.status, (400, 405), "POST service properties is refused")
    r = t.x("PUT", "/devstoreaccount1-secondary/" + PROPS[1:], body=props_doc(LOGGING),
            absolute=True)
    tap.eq((r.status, r.h("x-ms-error-code")), (403, "InsufficientAccountPermissions"),
           "Set Service Properties on the secondary -> 403")
    r = t.x("GET", "/devstoreaccount1-secondary/" + PROPS[1:], absolute=True)
    tap.ok(r.status == 200 and LOGGING_OUT.encode() in r.body,
           "Get Service Properties on the secondary -> 200", repr(r))


# --------------------------------------------------------------------------
# Stats (doc/protocol.md, Get Service Stats)


def test_stats(t):
    tap = t.tap
    r = t.x("GET", "/?restype=service&comp=stats")
    t.xml_error(r, 400, "InvalidQueryParameterValue",
                "294 Get Service Stats on the primary -> 400 InvalidQueryParameterValue")
    r = t.x("GET", "/devstoreaccount1-secondary/?restype=service&comp=stats", absolute=True)
    m = re.match(r'^<\?xml version="1\.0" encoding="utf-8"\?><StorageServiceStats><GeoReplication>'
                 r"<Status>live</Status><LastSyncTime>([^<]*)</LastSyncTime></GeoReplication>"
                 r"</StorageServiceStats>$", r.body.decode("utf-8", "replace").lstrip("\ufeff"))
    tap.ok(r.status == 200 and r.h("Content-Type") == "application/xml" and m and
           h.RFC1123_RE.match(m.group(1)) and not r.has("Cache-Control"),
           "294 Get Service Stats on the secondary -> 200, live, RFC 1123 LastSyncTime", repr(r))


# --------------------------------------------------------------------------
# Table ACL (doc/protocol.md, Get Table ACL; Set Table ACL; Stored access policies)


def test_acl(t):
    tap = t.tap
    http = t.http
    tap.eq(http.create_table("acltab").status, 201, "create table acltab")
    t.xml_ok(t.x("GET", "/acltab?comp=acl"), acl_doc(), "Get Table ACL of a new table: "
             "<SignedIdentifiers />")
    doc = acl_doc(signed_id("readers", "2024-06-01T00:00:00Z", "2024-07-01T00:00:00.5Z", "r"),
                  signed_id("writers", "2024-06-01T10:20:30.1234567+02:00",
                            "2030-01-01T00:00:00.000Z", "raud"))
    t.empty_ok(t.x("PUT", "/acltab?comp=acl", body=doc), 204,
               "290 Set Table ACL with 2 policies -> 204, Content-Length 0")
    want = acl_doc(signed_id("readers", "2024-06-01T00:00:00.0000000Z",
                             "2024-07-01T00:00:00.5000000Z", "r"),
                   signed_id("writers", "2024-06-01T08:20:30.1234567Z",
                             "2030-01-01T00:00:00.0000000Z", "raud"))
    t.xml_ok(t.x("GET", "/AclTab?comp=acl"), want,
             "290 Get returns both in order, times in UTC with 7 fractional digits "
             "(table name any case)")
    r = t.x("HEAD", "/acltab?comp=acl")
    tap.eq((r.status, r.body), (200, b""), "HEAD Get Table ACL: 200, no body")

    partial = acl_doc(signed_id("only-id", policy=False), signed_id("empty-policy"),
                      signed_id("exp", expiry="2031-02-03T04:05:06Z"),
                      signed_id("perm", perm="au"), signed_id("a&lt;b"))
    tap.eq(t.x("PUT", "/acltab?comp=acl", body=partial).status, 204,
           "policies with absent fields -> 204")
    want = acl_doc(signed_id("only-id", policy=False),
                   "<SignedIdentifier><Id>empty-policy</Id><AccessPolicy /></SignedIdentifier>",
                   signed_id("exp", expiry="2031-02-03T04:05:06.0000000Z"),
                   signed_id("perm", perm="au"),
                   "<SignedIdentifier><Id>a&lt;b</Id><AccessPolicy /></SignedIdentifier>")
    t.xml_ok(t.x("GET", "/acltab?comp=acl"), want, "absent elements stay absent on Get; "
             "Ids are escaped")

    six = acl_doc(*[signed_id("id%d" % i, perm="r") for i in range(6)])
    t.xml_error(t.x("PUT", "/acltab?comp=acl", body=six), 400, "InvalidXmlDocument",
                "291 Set Table ACL with 6 policies -> 400 InvalidXmlDocument")
    bad = [
        ("permission outside raud", acl_doc(signed_id("x", perm="rw")), "InvalidXmlDocument"),
        ("repeated permission letter", acl_doc(signed_id("x", perm="rr")), "InvalidXmlDocument"),
        ("Id of 65 characters", acl_doc(signed_id("i" * 65)), "InvalidXmlDocument"),
        ("empty Id", acl_doc(signed_id("")), "InvalidXmlDocument"),
        ("missing Id", acl_doc("<SignedIdentifier><AccessPolicy /></SignedIdentifier>"),
         "InvalidXmlDocument"),
        ("duplicate Id", acl_doc(signed_id("d"), signed_id("d")), "InvalidXmlDocument"),
        ("bad Start", acl_doc(signed_id("x", start="yesterday")), "InvalidXmlNodeValue"),
        ("bad Expiry", acl_doc(signed_id("x", expiry="2024-13-01T00:00:00Z")),
         "InvalidXmlNodeValue"),
        ("malformed XML", XML_DECL + "<SignedIdentifiers><SignedIdentifier>",
         "InvalidXmlDocument"),
        ("wrong root", XML_DECL + "<Identifiers />", "InvalidXmlDocument"),
        ("DOCTYPE", "<!DOCTYPE SignedIdentifiers><SignedIdentifiers />", "InvalidXmlDocument"),
        ("garbage", "not xml at all", "InvalidXmlDocument"),
    ]
    for what, body, code in bad:
        t.xml_error(t.x("PUT", "/acltab?comp=acl", body=body), 400, code,
                    "Set Table ACL with %s -> 400 %s" % (what, code))
    tap.eq(t.x("PUT", "/acltab?comp=acl", body=acl_doc(signed_id("i" * 64))).status, 204,
           "Id of 64 characters -> 204")

    # body size limit at the boundary (doc/protocol.md, Set Table ACL)
    base = acl_doc(signed_id("pad", perm="r"))
    exact = base.replace("</SignedIdentifiers>", " " * (10000 - len(base)) + "</SignedIdentifiers>")
    tap.eq(len(exact), 10000, "(a 10,000-byte ACL document)")
    tap.eq(t.x("PUT", "/acltab?comp=acl", body=exact).status, 204,
           "Set Table ACL with a 10,000-byte body -> 204")
    over = exact.replace("</SignedIdentifiers>", " </SignedIdentifiers>")
    t.xml_error(t.x("PUT", "/acltab?comp=acl", body=over), 413, "RequestBodyTooLarge",
                "Set Table ACL with a 10,001-byte body -> 413 RequestBodyTooLarge")

    tap.eq(t.x("PUT", "/acltab?comp=acl", body="").status, 204, "292 empty body -> 204")
    t.xml_ok(t.x("GET", "/acltab?comp=acl"), acl_doc(), "292 empty body clears the policies")
    t.x("PUT", "/acltab?comp=acl", body=acl_doc(signed_id("p", perm="r")))
    tap.eq(t.x("PUT", "/acltab?comp=acl", body=acl_doc()).status, 204,
           "<SignedIdentifiers /> -> 204")
    t.xml_ok(t.x("GET", "/acltab?comp=acl"), acl_doc(), "<SignedIdentifiers /> clears the policies")

    t.xml_error(t.x("GET", "/nosuchtable?comp=acl"), 404, "ResourceNotFound",
                "293 Get Table ACL on a missing table -> 404 ResourceNotFound, XML")
    t.xml_error(t.x("PUT", "/nosuchtable?comp=acl", body=acl_doc()), 404, "ResourceNotFound",
                "Set Table ACL on a missing table -> 404 ResourceNotFound, XML")
    r = t.x("PUT", "/devstoreaccount1-secondary/acltab?comp=acl", body=acl_doc(), absolute=True)
    tap.eq((r.status, r.h("x-ms-error-code")), (403, "InsufficientAccountPermissions"),
           "Set Table ACL on the secondary -> 403")

    # the ACL lives and dies with the table
    t.x("PUT", "/acltab?comp=acl", body=acl_doc(signed_id("keep", perm="r")))
    r = http.insert("acltab", {"PartitionKey": "p", "RowKey": "r"})
    tap.eq(r.status, 201, "entities still work in a table with an ACL")
    tap.ok(b"<Id>keep</Id>" in t.x("GET", "/acltab?comp=acl").body,
           "the ACL survives other writes to the table")
    tap.eq(http.delete_table("acltab").status, 204, "delete the table")
    t.xml_error(t.x("GET", "/acltab?comp=acl"), 404, "ResourceNotFound",
                "Get Table ACL of the deleted table -> 404")
    http.create_table("acltab")
    t.xml_ok(t.x("GET", "/acltab?comp=acl"), acl_doc(),
             "a re-created table of the same name has no policies")
    r = http.get("/Tables('acltab')")
    tap.eq(r.status, 200, "the table row with an ACL still reads as a table")
    http.delete_table("acltab")


# --------------------------------------------------------------------------
# CORS (doc/protocol.md, Preflight requests; CORS)


def cors_view(r):
    """(status, Vary, Allow-Origin, Expose-Headers, Allow-Credentials) of r."""
    return (r.status, r.h("Vary"), r.h("Access-Control-Allow-Origin"),
            r.h("Access-Control-Expose-Headers"), r.h("Access-Control-Allow-Credentials"))


def test_cors_vary_rows(t):
    """The Vary table of the service's CORS documentation ("Understanding how
    the Vary header is set"), row by row, on GET and HEAD."""
    tap = t.tap
    star = ("<Cors>" + cors_rule("http://a.example", "PUT", "", "x-ms-request-id", "5")
            + cors_rule("*", "GET,HEAD", "", "x-ms-request-id,Date", "6") + "</Cors>")
    exact = ("<Cors>" + cors_rule("http://a.example", "GET,HEAD", "", "x-ms-request-id", "5")
             + "</Cors>")
    rows = [
        # (rules, Origin, want Vary, Allow-Origin, Expose, Credentials, what)
        ("<Cors/>", None, (None, None, None, None), "row 1: no Origin, no rules"),
        (exact, None, ("Origin", None, None, None), "row 2: no Origin, rules, none for *"),
        (star, None, (None, "*", "x-ms-request-id,Date", None),
         "row 3: no Origin, a * rule matches"),
        ("<Cors/>", "http://a.example", (None, None, None, None), "row 4: Origin, no rules"),
        (exact, "http://a.example", ("Origin", "http://a.example", "x-ms-request-id", "true"),
         "row 5: Origin matches a rule exactly"),
        (exact, "http://z.example", ("Origin", None, None, None),
         "row 6: Origin, rules, no match"),
        (star, "http://z.example", (None, "*", "x-ms-request-id,Date", None),
         "row 7: Origin matches a * rule"),
    ]
    for rules, origin, want, what in rows:
        tap.eq(t.set_props(props_doc(rules)).status, 202, "(rules for %s)" % what)
        hdrs = {"Origin": origin} if origin else {}
        for method in ("GET", "HEAD"):
            r = t.http.request(method, "/Tables", headers=hdrs)
            tap.eq(cors_view(r), (200,) + want, "Vary table %s (%s)" % (what, method))
    # other methods never carry Vary
    tap.eq(t.set_props(props_doc(exact)).status, 202, "(exact rule only)")
    r = t.http.request("POST", "/Tables", body={"TableName": "corsv"},
                       headers={"Origin": "http://z.example"})
    tap.eq(cors_view(r), (201, None, None, None, None), "POST, no rule matches: no Vary")
    t.http.delete_table("corsv")


def test_cors(t):
    tap = t.tap
    r = t.set_props(props_doc("<Cors/>"))
    tap.eq(r.status, 202, "(no CORS rules)")
    r = t.preflight(**{"Access-Control-Request-Method": "GET"})
    t.xml_error(r, 400, "InvalidHeaderValue", "295 preflight without Origin -> 400 "
                "InvalidHeaderValue")
    tap.ok("A required CORS header is not present." in r.body.decode(), "295 ... with the "
           "service's message", r.body)
    r = t.preflight(Origin="http://a.example")
    t.xml_error(r, 400, "InvalidHeaderValue", "preflight without Access-Control-Request-Method "
                "-> 400 InvalidHeaderValue")
    r = t.preflight(**{"Origin": "http://a.example", "Access-Control-Request-Method": "GET"})
    t.xml_error(r, 403, "CorsPreflightFailure", "296 preflight with no CORS rules -> 403 "
                "CorsPreflightFailure")
    r = t.http.get("/Tables", headers={"Origin": "http://a.example"})
    tap.ok(r.status == 200 and not any(k.lower().startswith("access-control") or
                                       k.lower() == "vary" for k, _ in r.headers),
           "no rules: an actual request gets no CORS headers", r.headers)

    rules = ("<Cors>"
             + cors_rule("http://a.example,http://b.example", "GET,PUT,POST",
                         "x-ms-meta*,x-ms-version,Content-Type", "x-ms-request-id,x-ms-meta*",
                         "100")
             + cors_rule("http://a.example", "GET,DELETE,MERGE", "*", "", "200")
             + cors_rule("*", "GET,HEAD", "", "", "300")
             + "</Cors>")
    tap.eq(t.set_props(props_doc(rules)).status, 202, "(three CORS rules)")

    acrm = "Access-Control-Request-Method"
    acrh = "Access-Control-Request-Headers"
    r = t.preflight("/nosuchtable(PartitionKey='a',RowKey='b')",
                    **{"Origin": "http://a.example", acrm: "PUT", acrh: "x-ms-version, content-type"})
    want = [("Access-Control-Allow-Origin", "http://a.example"),
            ("Access-Control-Allow-Methods", "PUT"),
            ("Access-Control-Allow-Headers", "x-ms-version, content-type"),
            ("Access-Control-Max-Age", "100"),
            ("Access-Control-Allow-Credentials", "true")]
    got = [(k, v) for k, v in r.headers if k.lower().startswith("access-control")]
    tap.ok(r.status == 200 and got == want and r.body == b"" and r.h("Content-Length") == "0"
           and r.has("x-ms-request-id") and r.has("x-ms-version") and r.has("Date")
           and not r.has("Content-Type") and not r.has("Cache-Control"),
           "297/303 unsigned preflight matching a rule (resource need not exist) -> 200 with "
           "Allow-Origin/Methods/Headers/Max-Age/Credentials ", repr(r))
    r = t.preflight(**{"Origin": "http://a.example", acrm: "GET"})
    tap.ok(r.status == 200 and not r.has("Access-Control-Allow-Headers"),
           "no requested headers -> no Access-Control-Allow-Headers", repr(r))
    r = t.preflight(**{"Origin": "http://b.example", acrm: "PUT", acrh: "x-custom"})
    t.xml_error(r, 403, "CorsPreflightFailure",
                "298 preflight with a disallowed request header -> 403 CorsPreflightFailure")
    r = t.preflight(**{"Origin": "http://b.example", acrm: "PUT", acrh: "x-ms-meta-foo"})
    tap.eq((r.status, r.h("Access-Control-Max-Age")), (200, "100"),
           "299 allowed header x-ms-meta* matches x-ms-meta-foo")
    r = t.preflight(**{"Origin": "http://a.example", acrm: "GET", acrh: "x-anything"})
    tap.eq((r.status, r.h("Access-Control-Max-Age")), (200, "200"),
           "300 a disallowed header skips rule 1; rule 2 (headers *) matches")
    r = t.preflight(**{"Origin": "http://a.example", acrm: "GET"})
    tap.eq(r.h("Access-Control-Max-Age"), "100", "300 the first matching rule wins")
    r = t.preflight(**{"Origin": "HTTP://A.EXAMPLE", acrm: "DELETE"})
    tap.eq((r.status, r.h("Access-Control-Max-Age"), r.h("Access-Control-Allow-Origin")),
           (200, "200", "HTTP://A.EXAMPLE"), "origins match case-insensitively; the request "
           "origin is echoed")
    r = t.preflight(**{"Origin": "http://other.example", acrm: "HEAD"})
    tap.eq((r.status, r.h("Access-Control-Max-Age")), (200, "300"), "the * rule matches any "
           "origin")
    r = t.preflight(**{"Origin": "http://other.example", acrm: "PUT"})
    t.xml_error(r, 403, "CorsPreflightFailure", "no rule allows the method for that origin -> 403")
    r = t.preflight(**{"Origin": "http://a.example", acrm: "get"})
    tap.eq(r.status, 403, "methods are compared exactly")

    # actual requests
    r = t.http.get("/Tables", headers={"Origin": "http://b.example"})
    tap.ok(r.status == 200 and r.h("Access-Control-Allow-Origin") == "http://b.example" and
           r.h("Vary") == "Origin" and r.h("Access-Control-Allow-Credentials") == "true" and
           r.h("Access-Control-Expose-Headers") == "x-ms-request-id,x-ms-meta*",
           "301 actual GET with a matching Origin: Allow-Origin, Expose-Headers, Credentials, "
           "Vary: Origin", r.headers)
    r = t.http.get("/Tables", headers={"Origin": "http://z.example"})
    tap.ok(r.status == 200 and r.h("Access-Control-Allow-Origin") == "*" and
           not r.has("Access-Control-Allow-Credentials") and not r.has("Vary"),
           "actual GET matching the * rule: Allow-Origin *, no Credentials, no Vary "
           "(Vary table row 7)", r.headers)
    r = t.http.request("PUT", "/Tables('nosuch')", body={},
                       headers={"Origin": "http://a.example"})
    tap.ok(r.h("Access-Control-Allow-Origin") == "http://a.example" and not r.has("Vary"),
           "a PUT matching a rule exactly: origin echoed, no Vary (not GET/HEAD)", r.headers)
    r = t.http.request("DELETE", "/Tables('nosuch')", headers={"Origin": "http://z.example"})
    tap.ok(r.status == 404 and not any(k.lower().startswith("access-control")
                                       for k, _ in r.headers),
           "302 actual DELETE with a non-matching Origin: normal answer, no CORS headers",
           r.headers)
    r = t.http.request("DELETE", "/Tables('nosuch')", headers={"Origin": "http://a.example"})
    tap.ok(r.status == 404 and r.h("Access-Control-Allow-Origin") == "http://a.example",
           "error responses get the CORS headers too", r.headers)
    r = t.http.get("/Tables")
    tap.ok(r.status == 200 and not r.has("Vary") and
           r.h("Access-Control-Allow-Origin") == "*" and
           not r.has("Access-Control-Allow-Credentials"),
           "GET without Origin, a * rule allows GET: Allow-Origin *, no Vary (row 3)", r.headers)
    r = t.http.request("POST", "/Tables", body={"TableName": "corst"},
                       headers={"Origin": "http://q.example"})
    tap.ok(r.status == 201 and not any(k.lower().startswith("access-control") or
                                       k.lower() == "vary" for k, _ in r.headers),
           "302 POST with a non-matching Origin succeeds without CORS headers", r.headers)
    t.http.delete_table("corst")
    r = t.http.request("OPTIONS", "/Tables", sign_it=False,
                       headers={"Origin": "http://a.example", acrm: "PUT",
                                "Authorization": "SharedKey devstoreaccount1:garbage"})
    tap.eq(r.status, 200, "303 preflight ignores a bad Authorization header")
    test_cors_vary_rows(t)
    tap.eq(t.set_props(props_doc("<Cors/>")).status, 202, "(CORS rules removed)")
    r = t.preflight(**{"Origin": "http://a.example", acrm: "GET"})
    tap.eq(r.status, 403, "removing the rules takes effect at once")


# --------------------------------------------------------------------------
# Python SDK: access policies, SAS with si (items 278, 279), properties


def sdk_code(e):
    """The service error code of an SDK exception; from the JSON body when
    azure-core only looked at x-ms-error-code (absent on JSON errors)."""
    c = getattr(e, "error_code", None)
    c = getattr(c, "value", c)
    if c is None and getattr(e, "response", None) is not None:
        try:
            c = json.loads(e.response.text())["odata.error"]["code"]
        except (ValueError, KeyError, TypeError):
            pass
    return c


def test_sdk(t):
    tap = t.tap
    if IMPORT_ERROR is not None:
        tap.ok(False, "import azure.data.tables", str(IMPORT_ERROR))
        return
    conn = t.srv.conn_str()
    svc = TableServiceClient.from_connection_string(conn, **CLIENT_KW)
    tc = svc.create_table("sdkacl")
    tc.create_entity({"PartitionKey": "p", "RowKey": "1", "v": 1})

    now = datetime.datetime.now(UTC).replace(microsecond=0)
    start = now - datetime.timedelta(minutes=5)
    expiry = now + datetime.timedelta(hours=1)
    tc.set_table_access_policy({
        "readonly": TableAccessPolicy(permission="r", start=start, expiry=expiry),
        "adder": TableAccessPolicy(permission="ra", expiry=expiry),
    })
    pol = tc.get_table_access_policy()
    ro = pol.get("readonly")
    tap.ok(set(pol) == {"readonly", "adder"} and ro is not None and ro.permission == "r" and
           ro.start == start and ro.expiry == expiry and pol["adder"].start is None,
           "SDK set_table_access_policy / get_table_access_policy round trip", repr(pol) +
           " " + repr(vars(ro) if ro else None))

    cred = AzureNamedKeyCredential(h.DEV_ACCOUNT, h.DEV_KEY)
    sas = generate_table_sas(cred, "sdkacl", policy_id="readonly")
    tap.ok("si=readonly" in sas and "sp=" not in sas and "se=" not in sas,
           "generate_table_sas with policy_id leaves sp/se to the policy", sas)
    endpoint = "http://%s:%d/%s" % (t.srv.host, t.srv.port, h.DEV_ACCOUNT)
    sas_tc = TableClient(endpoint, "sdkacl", credential=AzureSasCredential(sas), **CLIENT_KW)
    try:
        rows = list(sas_tc.list_entities())
        tap.eq([e["RowKey"] for e in rows], ["1"],
               "278 SAS with si: reads allowed by the stored policy's sp=r")
    except Exception as e:  # noqa: BLE001
        tap.ok(False, "278 SAS with si: reads allowed by the stored policy's sp=r", repr(e))
    try:
        sas_tc.create_entity({"PartitionKey": "p", "RowKey": "2"})
        tap.ok(False, "278 SAS with si (sp=r from the policy) cannot insert", "no error")
    except HttpResponseError as e:
        tap.eq((e.status_code, sdk_code(e)), (403, "AuthorizationPermissionMismatch"),
               "278 SAS with si (sp=r from the policy) cannot insert")
    sas2 = generate_table_sas(cred, "sdkacl", policy_id="adder")
    add_tc = TableClient(endpoint, "sdkacl", credential=AzureSasCredential(sas2), **CLIENT_KW)
    try:
        add_tc.create_entity({"PartitionKey": "p", "RowKey": "3"})
        tap.ok(True, "SAS with si naming an 'ra' policy can insert")
    except Exception as e:  # noqa: BLE001
        tap.ok(False, "SAS with si naming an 'ra' policy can insert", repr(e))
    sas3 = generate_table_sas(cred, "sdkacl", policy_id="readonly",
                              permission=TableSasPermissions(read=True))
    dup_tc = TableClient(endpoint, "sdkacl", credential=AzureSasCredential(sas3), **CLIENT_KW)
    try:
        list(dup_tc.list_entities())
        tap.ok(False, "sp both in the SAS and in its policy -> 403", "no error")
    except HttpResponseError as e:
        tap.eq(e.status_code, 403, "sp both in the SAS and in its policy -> 403")

    # 279: deleting the policy invalidates the SAS
    tc.set_table_access_policy({"adder": TableAccessPolicy(permission="ra", expiry=expiry)})
    tap.eq(set(tc.get_table_access_policy()), {"adder"}, "policy 'readonly' deleted")
    try:
        list(sas_tc.list_entities())
        tap.ok(False, "279 deleting the stored policy invalidates the SAS", "no error")
    except HttpResponseError as e:
        tap.eq((e.status_code, sdk_code(e)), (403, "AuthenticationFailed"),
               "279 deleting the stored policy invalidates the SAS")
    tc.set_table_access_policy({})
    tap.eq(tc.get_table_access_policy(), {}, "SDK set_table_access_policy({}) clears")
    try:
        tc.set_table_access_policy({"p%d" % i: TableAccessPolicy(permission="r", expiry=expiry)
                                    for i in range(6)})
        tap.ok(False, "SDK: six policies are refused", "no error")
    except (ValueError, HttpResponseError) as e:
        tap.ok(True, "SDK: six policies are refused (%s)" % type(e).__name__)
    missing = TableClient.from_connection_string(conn, "nosuchsdk", **CLIENT_KW)
    try:
        missing.get_table_access_policy()
        tap.ok(False, "SDK get_table_access_policy of a missing table -> 404", "no error")
    except HttpResponseError as e:
        tap.eq(e.status_code, 404, "SDK get_table_access_policy of a missing table -> 404")
    # a policy dies with its table
    tc.set_table_access_policy({"readonly": TableAccessPolicy(permission="r", expiry=expiry)})
    svc.delete_table("sdkacl")
    svc.create_table("sdkacl")
    try:
        list(sas_tc.list_entities())
        tap.ok(False, "a SAS naming a policy of a deleted table fails on the new table",
               "no error")
    except HttpResponseError as e:
        tap.eq(e.status_code, 403, "a SAS naming a policy of a deleted table fails on the "
               "new table")
    svc.delete_table("sdkacl")

    # service properties
    svc.set_service_properties(
        analytics_logging=TableAnalyticsLogging(read=True, write=True, delete=False,
                                                retention_policy=TableRetentionPolicy(
                                                    enabled=True, days=5)),
        hour_metrics=TableMetrics(enabled=True, include_apis=True,
                                  retention_policy=TableRetentionPolicy(enabled=True, days=3)),
        minute_metrics=TableMetrics(enabled=False),
        cors=[TableCorsRule(["http://x.example", "http://y.example"], ["GET", "PUT"],
                            allowed_headers=["x-ms-meta*"], exposed_headers=["x-ms-*"],
                            max_age_in_seconds=30),
              TableCorsRule(["*"], ["DELETE"])])
    p = svc.get_service_properties()
    lg, hm, mm, cors = (p["analytics_logging"], p["hour_metrics"], p["minute_metrics"],
                        p["cors"])
    tap.ok(lg.read and lg.write and not lg.delete and lg.retention_policy.enabled and
           lg.retention_policy.days == 5, "SDK: logging round trip", repr(vars(lg)))
    tap.ok(hm.enabled and hm.include_apis and hm.retention_policy.days == 3 and
           not mm.enabled, "SDK: metrics round trip", repr((vars(hm), vars(mm))))
    tap.ok(len(cors) == 2 and cors[0].allowed_origins == ["http://x.example", "http://y.example"]
           and cors[0].allowed_methods == ["GET", "PUT"] and
           cors[0].allowed_headers == ["x-ms-meta*"] and cors[0].exposed_headers == ["x-ms-*"]
           and cors[0].max_age_in_seconds == 30 and cors[1].allowed_origins == ["*"] and
           cors[1].allowed_headers == [], "SDK: CORS rules round trip",
           repr([vars(c) for c in cors]))
    svc.set_service_properties(cors=[])
    p = svc.get_service_properties()
    tap.ok(p["cors"] == [] and p["analytics_logging"].read, "SDK: cors=[] clears the rules, "
           "logging kept", repr(p))
    try:
        svc.set_service_properties(
            analytics_logging=TableAnalyticsLogging(
                retention_policy=TableRetentionPolicy(enabled=True, days=400)))
        tap.ok(False, "SDK: retention of 400 days is refused", "no error")
    except HttpResponseError as e:
        tap.eq((e.status_code, sdk_code(e)), (400, "InvalidXmlNodeValue"),
               "SDK: retention of 400 days is refused")
    # get_service_stats is not exercised through the SDK: with a path-style
    # endpoint, azure-data-tables 12.4.2 signs the primary path and then
    # moves the request to "HOST/ACCOUNT-secondary/ACCOUNT/", which no
    # server can verify; test_stats covers the operation over raw HTTP.
    svc.set_service_properties(
        analytics_logging=TableAnalyticsLogging(),
        hour_metrics=TableMetrics(), minute_metrics=TableMetrics(), cors=[])


# --------------------------------------------------------------------------
# Persistence across a restart (only with a durable backend)


def test_restart(tap):
    data = tempfile.mkdtemp(prefix="tabled-props-")
    try:
        for backend in ("flatfile", "leveldb"):
            try:
                srv = h.Server(["--data", data, "--durability", "sync"], backend=backend).start()
            except h.ServerError:
                continue
            t = T(tap, srv)
            t.http.create_table("keepacl")
            t.x("PUT", "/keepacl?comp=acl", body=acl_doc(signed_id("k", perm="r")))
            t.set_props(props_doc("<Cors>" + cors_rule() + "</Cors>"))
            srv.stop()
            srv = h.Server(["--data", data, "--durability", "sync"], backend=backend).start()
            t = T(tap, srv)
            tap.ok(b"<Id>k</Id>" in t.x("GET", "/keepacl?comp=acl").body,
                   "%s: the table ACL survives a restart" % backend)
            tap.ok(b"<AllowedOrigins>http://a.example</AllowedOrigins>" in t.get_props().body,
                   "%s: service properties survive a restart" % backend)
            srv.stop_and_check(tap)
            return
        tap.diag("no durable backend built: restart checks skipped")
    finally:
        shutil.rmtree(data, ignore_errors=True)


def main():
    tap = h.Tap()
    try:
        srv = h.Server().start()
    except h.ServerError as e:
        tap.ok(False, "server starts", str(e))
        tap.done()
    h.watchdog(240, srv, tap)
    t = T(tap, srv)
    tap.run(test_props, t)
    tap.run(test_stats, t)
    tap.run(test_acl, t)
    tap.run(test_cors, t)
    tap.run(test_sdk, t)
    srv.stop_and_check(tap)
    tap.run(test_restart, tap)
    tap.done()


if __name__ == "__main__":
    main()
