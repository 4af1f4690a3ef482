#!/usr/bin/python3
"""Integration test of authentication and authorization (doc/protocol.md,
Authentication): the Python SDK (Debian azure-data-tables 12.4.2) with a named key,
the printed connection string, a second account and its secondary key;
account SAS and table SAS (key ranges, permissions, batches, stored
policies beyond test_acl_props.py); expired / not yet valid / wrong IP /
wrong protocol tokens; hand-signed SharedKey and SharedKeyLite requests with
each signed component changed by one byte; the SDK entity life cycle over
HTTPS with a self-signed certificate made at test time.

Every signature is computed here from the string-to-sign definitions of
doc/protocol.md (checked first against its signing examples), independently of the
server code.  Prints TAP."""
import base64
import datetime
import hashlib
import hmac
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse
import warnings

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
    from azure.core.exceptions import HttpResponseError, ServiceRequestError
    from azure.data.tables import (AccountSasPermissions, ResourceTypes, TableAccessPolicy,
                                   TableClient, TableSasPermissions, TableServiceClient,
                                   UpdateMode, generate_account_sas,
                                   generate_table_sas)
    IMPORT_ERROR = None
except ImportError as e:  # reported as a failing check below
    IMPORT_ERROR = e

UTC = datetime.timezone.utc
CLIENT_KW = dict(retry_total=0, connection_timeout=10, read_timeout=20)
DEV = h.DEV_ACCOUNT
DEV_KEY = h.DEV_KEY
SV = "2019-02-02"                 # the version the SDK signs SAS tokens with
ACCT2 = "acct2"
# A second account with two keys (base64 of 64 fixed bytes each).
ACCT2_KEY1 = base64.b64encode(hashlib.sha512(b"tabled acct2 key1").digest()).decode()
ACCT2_KEY2 = base64.b64encode(hashlib.sha512(b"tabled acct2 key2").digest()).decode()
NOMETA = "application/json;odata=nometadata"
PROPS = "?restype=service&comp=properties"


# --------------------------------------------------------------------------
# Signing, written from doc/protocol.md, SharedKey; SharedKeyLite; Account SAS; Table SAS


def hmac_b64(key_b64, text):
    mac = hmac.new(base64.b64decode(key_b64), text.encode("utf-8"), hashlib.sha256)
    return base64.b64encode(mac.digest()).decode("ascii")


def canonical_resource(account, target):
    """doc/protocol.md, SharedKey: "/" ACCOUNT + the encoded path as in the request line +
    "?comp=" value when the query has comp (no other parameter)."""
    path, _, query = target.partition("?")
    res = "/" + account + path
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        if name == "comp":
            res += "?comp=" + urllib.parse.unquote(value)
            break
    return res


def sk_sts(verb, md5, ctype, date, resource):
    """SharedKey string-to-sign (doc/protocol.md, SharedKey)."""
    return "%s\n%s\n%s\n%s\n%s" % (verb, md5, ctype, date, resource)


def lite_sts(date, resource):
    """SharedKeyLite string-to-sign (doc/protocol.md, SharedKeyLite)."""
    return "%s\n%s" % (date, resource)


def account_sas_sts(account, f):
    """doc/protocol.md, Account SAS (every field followed by LF; ses from 2020-12-06)."""
    names = ["sp", "ss", "srt", "st", "se", "sip", "spr", "sv"]
    if f.get("sv", "") >= "2020-12-06":
        names.append("ses")
    return account + "\n" + "".join((f.get(n) or "") + "\n" for n in names)


def table_sas_sts(account, table, f):
    """doc/protocol.md, Table SAS for sv >= 2015-04-05 (no LF after erk)."""
    parts = [f.get("sp"), f.get("st"), f.get("se"), "/table/%s/%s" % (account, table.lower()),
             f.get("si"), f.get("sip"), f.get("spr"), f.get("sv"), f.get("spk"), f.get("srk"),
             f.get("epk"), f.get("erk")]
    return "\n".join(p or "" for p in parts)


def sas_query(fields, sig):
    """The query string of a SAS: fields (None = absent) plus sig, encoded
    as the SDKs do (quote everything but unreserved characters)."""
    items = [(k, v) for k, v in fields.items() if v is not None] + [("sig", sig)]
    return "&".join("%s=%s" % (k, urllib.parse.quote(v, safe="")) for k, v in items)


def account_sas(sp, srt="sco", ss="t", se=None, st=None, sip=None, spr=None, sv=SV,
                account=DEV, key=DEV_KEY, sign=None, sig_fn=None):
    """An account SAS query string. sign: fields that differ in the signed
    string from what is sent (one-byte-change tests); sig_fn alters the
    finished signature."""
    f = dict(sv=sv, ss=ss, srt=srt, sp=sp, st=st, se=se or iso(hours=1), sip=sip, spr=spr)
    signed = dict(f, **(sign or {}))
    sig = hmac_b64(key, account_sas_sts(signed.pop("account", account), signed))
    if sig_fn:
        sig = sig_fn(sig)
    return sas_query(f, sig)


def table_sas(table, sp="raud", se=None, st=None, si=None, sip=None, spr=None, spk=None,
              srk=None, epk=None, erk=None, sv=SV, tn=None, account=DEV, key=DEV_KEY,
              sign=None, sig_fn=None, no_se=False):
    """A table SAS query string (see account_sas for sign / sig_fn)."""
    f = dict(sv=sv, tn=tn or table, sp=sp, st=st, se=None if no_se else (se or iso(hours=1)),
             si=si, sip=sip, spr=spr, spk=spk, srk=srk, epk=epk, erk=erk)
    signed = dict(f, **(sign or {}))
    sig = hmac_b64(key, table_sas_sts(signed.pop("account", account),
                                      signed.pop("tn"), signed))
    if sig_fn:
        sig = sig_fn(sig)
    return sas_query(f, sig)


def iso(hours=0, minutes=0, days=0):
    t = datetime.datetime.now(UTC) + datetime.timedelta(hours=hours, minutes=minutes, days=days)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def flip(s, i=0):
    """s with one byte changed at position i (a letter or digit stays one)."""
    c = s[i]
    alt = {"A": "B", "Z": "Y", "a": "b", "z": "y", "0": "1", "9": "8", "+": "/", "/": "+",
           "=": "A"}.get(c)
    if alt is None:
        alt = chr(ord(c) + 1) if c.isalnum() else "A"
    return s[:i] + alt + s[i + 1:]


def check_spec_vectors(tap):
    """The signers above reproduce the signing examples of doc/protocol.md, so
    every other check relies on the documented definition, not on the server's."""
    d = "Mon, 03 Jun 2024 10:00:00 GMT"
    base = "/" + DEV
    vectors = [
        ("1", sk_sts("GET", "", "", d, canonical_resource(DEV, base + "/Tables")),
         "RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU="),
        ("2", sk_sts("POST", "", "application/json", d,
                     canonical_resource(DEV, base + "/orders")),
         "vt/zfJC+Lx2PXZmY5izhSEbZmld5YtUapeUJvIIFMh8="),
        ("3", sk_sts("GET", "", "", d, canonical_resource(DEV, base + "/orders?comp=acl")),
         "5iHHiSq0KkMfzdnv1xDjNBtHlUb3uzOBHydmCPARS9E="),
        ("4", sk_sts("GET", "", "", d, canonical_resource(
            DEV, base + "/?restype=service&comp=properties")),
         "5IlTzaEzgI/Maj7hz5DCnatE7nu6Jtaz8YqiZ/TBilA="),
        ("5", sk_sts("GET", "", "", d, canonical_resource(
            DEV, base + "/orders(PartitionKey='p1',RowKey='r1')")),
         "3PiobECKcvGC4xMwUeq00nG4P+eVvY6DED4RY06JKGA="),
        ("6 (SharedKeyLite)", lite_sts(d, canonical_resource(DEV, base + "/Tables")),
         "VEDP5inHnQM+H3vm3WOQbXkoXPfrQQxQhZTnu21NQGA="),
        ("7 (host-style)", sk_sts("GET", "", "", d, canonical_resource(DEV, "/Tables")),
         "pw2syiP4AiFUxlzgLqcyKOHjM5CkunuRcZuqYLF6UgY="),
    ]
    for n, sts, want in vectors:
        tap.eq(hmac_b64(DEV_KEY, sts), want, "test signer reproduces SharedKey signing example %s" % n)
    f = dict(sp="rwdlau", ss="t", srt="sco", se="2024-06-30T00:00:00Z", spr="https,http")
    tap.eq(hmac_b64(DEV_KEY, account_sas_sts(DEV, dict(f, sv="2019-02-02"))),
           "zZkvQxHWbHGHXRDThQQDBpm6i3XCS9TBIZeuAfd38ms=",
           "test signer reproduces the account SAS example sv 2019-02-02")
    tap.eq(hmac_b64(DEV_KEY, account_sas_sts(DEV, dict(f, sv="2021-06-08"))),
           "6n6i+WzMXaKZxl18bKSE+IQl0oGHxdJVkXOemoGAurA=",
           "test signer reproduces the account SAS example sv 2021-06-08 (ses line)")
    tap.eq(hmac_b64(DEV_KEY, table_sas_sts(DEV, "orders", dict(
        sp="raud", st="2024-06-01T00:00:00Z", se="2024-06-30T00:00:00Z", spr="https,http",
        sv="2019-02-02"))), "Y9/tQllFNTtwkBUUZIpTyJWCQZIS2N+EKyRUZ0YKSlE=",
        "test signer reproduces table SAS example 1")
    tap.eq(hmac_b64(DEV_KEY, table_sas_sts(DEV, "orders", dict(
        sp="r", se="2024-06-30T00:00:00Z", spk="p1", epk="p1", sv="2019-02-02"))),
        "Y8uZu1iFNOIUlhGuWgPRZEwtH/0NLB/gRR/ln+kNzpw=",
        "test signer reproduces table SAS example 2 (key range)")


# --------------------------------------------------------------------------
# Raw requests


class Raw:
    """Requests written byte by byte to one server (HTTP, or HTTPS with
    tls_ctx); every request goes on a fresh connection."""

    def __init__(self, host, port, tls_ctx=None):
        self.host = host
        self.port = port
        self.tls_ctx = tls_ctx

    def send(self, method, target, headers=(), body=None):
        hdrs = list(headers)
        if not any(k.lower() == "host" for k, _ in hdrs):
            hdrs.insert(0, ("Host", "%s:%d" % (self.host, self.port)))
        if isinstance(body, str):
            body = body.encode("utf-8")
        if body is not None and not any(k.lower() == "content-length" for k, _ in hdrs):
            hdrs.append(("Content-Length", str(len(body))))
        data = ("%s %s HTTP/1.1\r\n" % (method, target) +
                "".join("%s: %s\r\n" % kv for kv in hdrs) + "\r\n").encode("utf-8")
        data += body or b""
        sock = socket.create_connection((self.host, self.port), timeout=h.IO_TIMEOUT)
        try:
            if self.tls_ctx is not None:
                sock = self.tls_ctx.wrap_socket(sock, server_hostname=self.host)
            sock.sendall(data)
            return h.read_response(h._Reader(sock, h.IO_TIMEOUT), method)
        finally:
            sock.close()

    def base_headers(self, accept=NOMETA, date=None, version=SV):
        hd = [("Accept", accept), ("DataServiceVersion", "3.0;NetFx"),
              ("MaxDataServiceVersion", "3.0;NetFx")]
        if version:
            hd.append(("x-ms-version", version))
        if date is not False:
            hd.insert(0, ("x-ms-date", date or h.rfc1123()))
        return hd

    def signed(self, method, path, body=None, headers=None, scheme="SharedKey", account=DEV,
               key=DEV_KEY, alter=None, accept=NOMETA, date=None, url_account=None):
        """A SharedKey / SharedKeyLite request to /URL_ACCOUNT + path.
        alter maps a signed component (verb, md5, ctype, date, account,
        resource, header_account, sig) to a function of its value: the
        request is signed with the changed value but sends the original."""
        target = "/" + (url_account or account) + path
        hd = self.base_headers(accept, date)
        if body is not None:
            hd.append(("Content-Type", "application/json"))
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
        for k, v in headers or []:
            hd = [(a, b) for a, b in hd if a.lower() != k.lower()]
            if v is not None:
                hd.append((k, v))
        hd, _ = sign_headers(method, target, hd, scheme, account, key, alter)
        return self.send(method, target, hd, body)

    def sas(self, method, path, query, body=None, headers=None, account=DEV, accept=NOMETA,
            version=SV):
        """A request authorized by a SAS query string (no Authorization)."""
        sep = "&" if "?" in path else "?"
        hd = self.base_headers(accept, date=False, version=version)
        extra = list(headers or [])
        if body is not None:
            if not any(k.lower() == "content-type" for k, _ in extra):
                hd.append(("Content-Type", "application/json"))
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
        hd += extra
        return self.send(method, "/%s%s%s%s" % (account, path, sep, query), hd, body)


def sign_headers(method, target, hd, scheme="SharedKey", account=DEV, key=DEV_KEY, alter=None):
    """hd plus the Authorization header computed from them (doc/protocol.md, SharedKey; SharedKeyLite)."""
    alter = alter or {}

    def get(name):
        return next((v for k, v in hd if k.lower() == name.lower()), "")

    comp = {
        "verb": method,
        "md5": get("Content-MD5"),
        "ctype": get("Content-Type"),
        "date": get("x-ms-date") or get("Date"),
        "account": account,
        "target": target,
    }
    for k, fn in alter.items():
        if k in comp:
            comp[k] = fn(comp[k])
    resource = canonical_resource(comp["account"], comp["target"])
    if "resource" in alter:
        resource = alter["resource"](resource)
    if scheme == "SharedKeyLite":
        sts = lite_sts(comp["date"], resource)
    else:
        sts = sk_sts(comp["verb"], comp["md5"], comp["ctype"], comp["date"], resource)
    sig = hmac_b64(key, sts)
    if "sig" in alter:
        sig = alter["sig"](sig)
    name = alter["header_account"](account) if "header_account" in alter else account
    return list(hd) + [("Authorization", "%s %s:%s" % (scheme, name, sig))], sts


# --------------------------------------------------------------------------
# Checks


def error_code(r):
    """(code in the body, x-ms-error-code header) of an error response."""
    return r.error_code(), r.h("x-ms-error-code")


def check_error(tap, r, status, code, what, message_re=None):
    """status, the code in the body and (when sent, and always with an XML
    body) the same code in x-ms-error-code (doc/protocol.md, Error bodies)."""
    p = []
    if r.status != status:
        p.append("status %s (want %s)" % (r.status, status))
    body_code, hdr = error_code(r)
    codes = code if isinstance(code, (tuple, set, list)) else (code,)
    if body_code not in codes:
        p.append("body code %r (want %s)" % (body_code, " or ".join(codes)))
    if hdr is not None and hdr != body_code:
        p.append("x-ms-error-code %r differs from the body's %r" % (hdr, body_code))
    if "xml" in r.h("Content-Type", "") and hdr is None:
        p.append("XML error without x-ms-error-code")
    if message_re is not None:
        text = r.body.decode("utf-8", "replace")
        if not re.search(message_re, text):
            p.append("body does not match %r" % message_re)
    tap.ok(not p, what, "; ".join(p) + "\n" + repr(r.body[:700]))


def check_ok(tap, r, status, what):
    tap.ok(r.status == status, what, "status %s body %r" % (r.status, r.body[:500]))


def sdk_code(e):
    """The service error code of an SDK exception; from the body when
    azure-core only looked at x-ms-error-code (absent on JSON errors)."""
    c = getattr(e, "error_code", None)
    c = getattr(c, "value", c)
    if c is None and getattr(e, "response", None) is not None:
        try:
            c = json.loads(e.response.text())["odata.error"]["code"]
        except (ValueError, KeyError, TypeError):
            m = re.search(r"<(?:m:)?[cC]ode>([^<]*)</", e.response.text() or "")
            c = m.group(1) if m else None
    return c


def sdk_error(tap, what, fn, status, code):
    """fn must raise an HttpResponseError with that status and code (a
    tuple of codes: any of them)."""
    try:
        fn()
    except HttpResponseError as e:
        codes = code if isinstance(code, tuple) else (code,)
        statuses = status if isinstance(status, tuple) else (status,)
        got = (e.status_code, sdk_code(e))
        tap.ok(got[0] in statuses and got[1] in codes, what,
               "got %r, want (%s, %s)\n%s" % (got, status, " or ".join(codes), str(e)[:600]))
        return e
    except Exception as e:  # noqa: BLE001
        tap.ok(False, what, "raised %s: %s" % (type(e).__name__, str(e)[:600]))
        return e
    tap.ok(False, what, "no error raised (want %s %s)" % (status, code))
    return None


def sdk_ok(tap, what, fn, check=None):
    """fn must succeed (and check(result), when given, be true)."""
    try:
        res = fn()
    except Exception as e:  # noqa: BLE001
        tap.ok(False, what, "raised %s: %s" % (type(e).__name__, str(e)[:800]))
        return None
    if check is not None:
        tap.ok(check(res), what, "result: %r" % (res,))
    else:
        tap.ok(True, what)
    return res


def keys_of(entities):
    return sorted((e["PartitionKey"], e["RowKey"]) for e in entities)


class Ctx:
    """One server and the clients around it."""

    def __init__(self, tap, srv):
        self.tap = tap
        self.srv = srv
        self.raw = Raw(srv.host, srv.port)
        self.endpoint = "http://%s:%d/%s" % (srv.host, srv.port, DEV)
        self.cred = AzureNamedKeyCredential(DEV, DEV_KEY) if IMPORT_ERROR is None else None
        self.owner = (TableServiceClient(self.endpoint, credential=self.cred, **CLIENT_KW)
                      if IMPORT_ERROR is None else None)

    def table(self, name, sas=None, endpoint=None):
        cred = AzureSasCredential(sas) if sas is not None else self.cred
        return TableClient(endpoint or self.endpoint, name, credential=cred, **CLIENT_KW)

    def service(self, sas=None, endpoint=None):
        cred = AzureSasCredential(sas) if sas is not None else self.cred
        return TableServiceClient(endpoint or self.endpoint, credential=cred, **CLIENT_KW)

    def snapshot(self, table):
        """{(pk, rk): (etag, properties)} read with the account key."""
        out = {}
        for e in self.table(table).list_entities():
            out[(e["PartitionKey"], e["RowKey"])] = (e.metadata["etag"], dict(e))
        return out

    def alive(self, what):
        r = self.raw.signed("GET", "/Tables")
        self.tap.ok(r.status == 200, "server still serves after %s" % what,
                    "status %s" % r.status)


# --------------------------------------------------------------------------
# SDK credentials: named key, connection string, a second account


def test_sdk_credentials(c):
    tap = c.tap
    srv = c.srv
    tap.eq(srv.conn_str_printed, srv.conn_str(),
           "the printed connection string is the development account's, on the server's port")
    svc = TableServiceClient.from_connection_string(srv.conn_str_printed, **CLIENT_KW)
    sdk_ok(tap, "connection string: create_table", lambda: svc.create_table("authconn"))
    tc = TableClient.from_connection_string(srv.conn_str_printed, "authconn", **CLIENT_KW)
    sdk_ok(tap, "connection string: create_entity",
           lambda: tc.create_entity({"PartitionKey": "p", "RowKey": "1", "v": 1}))
    sdk_ok(tap, "AzureNamedKeyCredential: get_entity",
           lambda: c.table("authconn").get_entity("p", "1"), lambda e: e["v"] == 1)
    sdk_ok(tap, "AzureNamedKeyCredential: list_tables",
           lambda: [t.name for t in c.owner.list_tables()], lambda n: "authconn" in n)

    ep2 = "http://%s:%d/%s" % (srv.host, srv.port, ACCT2)
    k1 = TableServiceClient(ep2, credential=AzureNamedKeyCredential(ACCT2, ACCT2_KEY1),
                            **CLIENT_KW)
    sdk_ok(tap, "second account, primary key: create_table", lambda: k1.create_table("acct2tbl"))
    sdk_ok(tap, "second account, primary key: create_entity",
           lambda: k1.get_table_client("acct2tbl").create_entity(
               {"PartitionKey": "a", "RowKey": "b", "who": "acct2"}))
    k2 = TableServiceClient(ep2, credential=AzureNamedKeyCredential(ACCT2, ACCT2_KEY2),
                            **CLIENT_KW)
    sdk_ok(tap, "255 second account, secondary key: get_entity",
           lambda: k2.get_table_client("acct2tbl").get_entity("a", "b"),
           lambda e: e["who"] == "acct2")
    sdk_ok(tap, "second account, secondary key: list_tables sees only its own tables",
           lambda: sorted(t.name for t in k2.list_tables()), lambda n: n == ["acct2tbl"])
    conn2 = ("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;TableEndpoint=%s;"
             % (ACCT2, ACCT2_KEY2, ep2))
    sdk_ok(tap, "second account, connection string with the secondary key: delete_entity",
           lambda: TableClient.from_connection_string(conn2, "acct2tbl", **CLIENT_KW)
           .delete_entity("a", "b"))
    sdk_ok(tap, "the second account's tables are not in the first account",
           lambda: [t.name for t in c.owner.list_tables()], lambda n: "acct2tbl" not in n)

    bad = TableServiceClient(ep2, credential=AzureNamedKeyCredential(ACCT2, DEV_KEY),
                             **CLIENT_KW)
    sdk_error(tap, "second account with another account's key -> 403 AuthenticationFailed",
              lambda: list(bad.list_tables()), 403, "AuthenticationFailed")
    cross = TableServiceClient(c.endpoint, credential=AzureNamedKeyCredential(ACCT2, ACCT2_KEY1),
                               **CLIENT_KW)
    sdk_error(tap, "credential of acct2 on devstoreaccount1's URL -> 403 AuthenticationFailed",
              lambda: list(cross.list_tables()), 403, "AuthenticationFailed")
    unknown = TableServiceClient(c.endpoint,
                                 credential=AzureNamedKeyCredential("nosuchacct", DEV_KEY),
                                 **CLIENT_KW)
    sdk_error(tap, "unknown account in the credential -> 403 AuthenticationFailed",
              lambda: list(unknown.list_tables()), 403, "AuthenticationFailed")
    # An account missing from the URL: no key can sign for it, so (doc/protocol.md, SharedKey) the
    # 403 AuthenticationFailed (with --auth off: 404, test_unknown_account_noauth).
    ep_unknown = "http://%s:%d/nosuchacct" % (srv.host, srv.port)
    nowhere = TableServiceClient(ep_unknown,
                                 credential=AzureNamedKeyCredential("nosuchacct", DEV_KEY),
                                 **CLIENT_KW)
    sdk_error(tap, "unknown account in the URL -> 403 AuthenticationFailed",
              lambda: nowhere.create_table("x1"), 403, "AuthenticationFailed")
    r = h.Http(srv).request("GET", "/nosuchacct/Tables", absolute=True)
    tap.eq((r.status, r.error_code()), (403, "AuthenticationFailed"),
           "unknown account in a path-style URL signed with the dev key -> 403 AuthenticationFailed")
    c.owner.delete_table("authconn")


# --------------------------------------------------------------------------
# Account SAS (doc/protocol.md, Account SAS)


def test_account_sas(c):
    tap = c.tap
    c.owner.create_table("acctsas")
    c.table("acctsas").create_entity({"PartitionKey": "p", "RowKey": "1", "v": 1})
    exp = datetime.datetime.now(UTC) + datetime.timedelta(hours=1)

    def gen(srt, sp):
        return generate_account_sas(c.cred, ResourceTypes.from_string(srt),
                                    AccountSasPermissions.from_string(sp), exp)

    full = gen("sco", "rwdlacu")
    # the SDK's token and this test's signer agree (both follow doc/protocol.md, Account SAS)
    q = dict(urllib.parse.parse_qsl(full))
    mine = dict(urllib.parse.parse_qsl(account_sas(q["sp"], q["srt"], q["ss"], q["se"],
                                                   sv=q["sv"])))
    tap.eq(mine.get("sig"), q.get("sig"), "generate_account_sas signs the account SAS string-to-sign")

    svc = c.service(full)
    sdk_ok(tap, "account SAS sco/rwdlacu: create_table", lambda: svc.create_table("acctsas2"))
    sdk_ok(tap, "account SAS: list_tables", lambda: [t.name for t in svc.list_tables()],
           lambda n: "acctsas" in n and "acctsas2" in n)
    tc = c.table("acctsas2", full)
    sdk_ok(tap, "account SAS: create_entity",
           lambda: tc.create_entity({"PartitionKey": "p", "RowKey": "1", "v": 1}))
    sdk_ok(tap, "account SAS: get_entity", lambda: tc.get_entity("p", "1"),
           lambda e: e["v"] == 1)
    sdk_ok(tap, "account SAS: update_entity (merge)",
           lambda: tc.update_entity({"PartitionKey": "p", "RowKey": "1", "w": 2}))
    sdk_ok(tap, "account SAS: upsert_entity (replace)",
           lambda: tc.upsert_entity({"PartitionKey": "p", "RowKey": "2", "v": 3},
                                    mode=UpdateMode.REPLACE))
    sdk_ok(tap, "account SAS: upsert_entity (merge)",
           lambda: tc.upsert_entity({"PartitionKey": "p", "RowKey": "2", "x": 4}))
    sdk_ok(tap, "account SAS: query_entities",
           lambda: list(tc.query_entities("v ge 1")), lambda es: keys_of(es) ==
           [("p", "1"), ("p", "2")])
    sdk_ok(tap, "account SAS: submit_transaction",
           lambda: tc.submit_transaction([("create", {"PartitionKey": "p", "RowKey": "3"}),
                                          ("delete", {"PartitionKey": "p", "RowKey": "2"})]))
    sdk_ok(tap, "account SAS: delete_entity", lambda: tc.delete_entity("p", "1"))
    sdk_ok(tap, "account SAS: get_service_properties", lambda: svc.get_service_properties(),
           lambda p: "cors" in p)
    sdk_ok(tap, "account SAS: delete_table", lambda: svc.delete_table("acctsas2"))

    # 262: ss without t
    for ss, ok in (("b", False), ("bqf", False), ("bt", True)):
        sas = account_sas("rwdlacu", ss=ss)
        if ok:
            sdk_ok(tap, "account SAS ss=%s: list_tables works" % ss,
                   lambda: list(c.service(sas).list_tables()))
        else:
            sdk_error(tap, "262 account SAS ss=%s -> 403 AuthorizationServiceMismatch" % ss,
                      lambda: list(c.service(sas).list_tables()), 403,
                      "AuthorizationServiceMismatch")
    r = c.raw.sas("GET", "/Tables", account_sas("rwdlacu", ss="b"))
    check_error(tap, r, 403, "AuthorizationServiceMismatch", "262 raw: ss=b on Query Tables "
                "-> 403 AuthorizationServiceMismatch")

    # 263: srt=o cannot create tables
    sdk_error(tap, "263 account SAS srt=o cannot create tables -> 403 "
              "AuthorizationResourceTypeMismatch",
              lambda: c.service(gen("o", "rwdlacu")).create_table("nope1"), 403,
              "AuthorizationResourceTypeMismatch")
    sdk_error(tap, "account SAS srt=o cannot list tables -> AuthorizationResourceTypeMismatch",
              lambda: list(c.service(gen("o", "rwdlacu")).list_tables()), 403,
              "AuthorizationResourceTypeMismatch")
    sdk_error(tap, "account SAS srt=c cannot read entities -> AuthorizationResourceTypeMismatch",
              lambda: c.table("acctsas", gen("c", "rwdlacu")).get_entity("p", "1"), 403,
              "AuthorizationResourceTypeMismatch")
    sdk_error(tap, "account SAS srt=co cannot get service properties -> "
              "AuthorizationResourceTypeMismatch",
              lambda: c.service(gen("co", "rwdlacu")).get_service_properties(), 403,
              "AuthorizationResourceTypeMismatch")
    sdk_ok(tap, "account SAS srt=s sp=r: get_service_properties",
           lambda: c.service(gen("s", "r")).get_service_properties())
    sdk_error(tap, "account SAS srt=s sp=r cannot set service properties -> "
              "AuthorizationPermissionMismatch",
              lambda: c.service(gen("s", "r")).set_service_properties(cors=[]), 403,
              "AuthorizationPermissionMismatch")
    sdk_ok(tap, "account SAS srt=s sp=w: set_service_properties",
           lambda: c.service(gen("s", "w")).set_service_properties(cors=[]))

    # 264: sp=r cannot insert
    ro = c.table("acctsas", gen("sco", "r"))
    sdk_error(tap, "264 account SAS sp=r cannot insert -> 403 AuthorizationPermissionMismatch",
              lambda: ro.create_entity({"PartitionKey": "p", "RowKey": "new"}), 403,
              "AuthorizationPermissionMismatch")
    sdk_ok(tap, "account SAS sp=r: get_entity", lambda: ro.get_entity("p", "1"))
    sdk_ok(tap, "account SAS sp=r: query", lambda: list(ro.list_entities()),
           lambda es: keys_of(es) == [("p", "1")])
    sdk_error(tap, "account SAS sp=r cannot delete -> AuthorizationPermissionMismatch",
              lambda: ro.delete_entity("p", "1"), 403, "AuthorizationPermissionMismatch")

    # 265: srt=c sp=l lists tables
    lister = c.service(gen("c", "l"))
    sdk_ok(tap, "265 account SAS srt=c sp=l: list_tables",
           lambda: [t.name for t in lister.list_tables()], lambda n: "acctsas" in n)
    sdk_ok(tap, "account SAS srt=c sp=l: query_tables with a filter",
           lambda: [t.name for t in lister.query_tables("TableName eq 'acctsas'")],
           lambda n: n == ["acctsas"])
    sdk_error(tap, "account SAS srt=c sp=l cannot create a table -> "
              "AuthorizationPermissionMismatch", lambda: lister.create_table("nope2"), 403,
              "AuthorizationPermissionMismatch")
    sdk_error(tap, "account SAS srt=co sp=l cannot query entities -> "
              "AuthorizationPermissionMismatch",
              lambda: list(c.table("acctsas", gen("co", "l")).list_entities()), 403,
              "AuthorizationPermissionMismatch")
    for sp in ("c", "w"):
        sdk_ok(tap, "account SAS srt=c sp=%s: create_table" % sp,
               lambda: c.service(gen("c", sp)).create_table("made" + sp))
    sdk_error(tap, "account SAS srt=c sp=c cannot delete a table -> "
              "AuthorizationPermissionMismatch",
              lambda: c.service(gen("c", "c")).delete_table("madec"), 403,
              "AuthorizationPermissionMismatch")
    sdk_ok(tap, "account SAS srt=c sp=d: delete_table",
           lambda: c.service(gen("c", "d")).delete_table("madec"))
    c.owner.delete_table("madew")

    # upserts need a and u (doc/protocol.md, Account SAS [REC])
    for sp in ("a", "u"):
        t = c.table("acctsas", gen("o", sp))
        sdk_error(tap, "account SAS sp=%s: upsert (replace) -> AuthorizationPermissionMismatch"
                  % sp, lambda: t.upsert_entity({"PartitionKey": "p", "RowKey": "u" + sp},
                                                mode=UpdateMode.REPLACE),
                  403, "AuthorizationPermissionMismatch")
    t = c.table("acctsas", gen("o", "au"))
    sdk_ok(tap, "account SAS sp=au: upsert (merge)",
           lambda: t.upsert_entity({"PartitionKey": "p", "RowKey": "ua"}))
    sdk_error(tap, "account SAS sp=a: update -> AuthorizationPermissionMismatch",
              lambda: c.table("acctsas", gen("o", "a")).update_entity(
                  {"PartitionKey": "p", "RowKey": "1", "v": 9}), 403,
              "AuthorizationPermissionMismatch")
    sdk_ok(tap, "account SAS sp=u: update", lambda: c.table("acctsas", gen("o", "u"))
           .update_entity({"PartitionKey": "p", "RowKey": "1", "u": 1}))
    sdk_ok(tap, "account SAS sp=a: insert", lambda: c.table("acctsas", gen("o", "a"))
           .create_entity({"PartitionKey": "p", "RowKey": "ins"}))
    sdk_error(tap, "account SAS: Get Table ACL is not allowed via SAS -> 403",
              lambda: c.table("acctsas", full).get_table_access_policy(), 403,
              ("AuthorizationPermissionMismatch", "AuthorizationFailure",
               "AuthorizationResourceTypeMismatch"))
    sdk_error(tap, "account SAS: Set Table ACL is not allowed via SAS -> 403",
              lambda: c.table("acctsas", full).set_table_access_policy({}), 403,
              ("AuthorizationPermissionMismatch", "AuthorizationFailure",
               "AuthorizationResourceTypeMismatch"))
    before = c.snapshot("acctsas")
    sdk_error(tap, "account SAS sp=a: batch with an update -> AuthorizationPermissionMismatch",
              lambda: c.table("acctsas", gen("o", "a")).submit_transaction([
                  ("create", {"PartitionKey": "p", "RowKey": "b1"}),
                  ("update", {"PartitionKey": "p", "RowKey": "1", "z": 1})]),
              403, "AuthorizationPermissionMismatch")
    tap.eq(c.snapshot("acctsas"), before, "refused batch under an account SAS wrote nothing")

    # one byte of each signed field differs from the sent value: the sent
    # value (which alone would be allowed) must not authorize the request
    table_q = "/Tables"
    cases = [
        ("sp", dict(sp="l", srt="c"), dict(sp="r")),
        ("ss", dict(sp="l", srt="c", ss="t"), dict(ss="b")),
        ("srt", dict(sp="l", srt="c"), dict(srt="s")),
        ("st", dict(sp="l", srt="c", st="2018-01-01T00:00:00Z"), dict(st="2098-01-01T00:00:00Z")),
        ("se", dict(sp="l", srt="c", se="2090-01-01T00:00:00Z"), dict(se="2010-01-01T00:00:00Z")),
        ("sip", dict(sp="l", srt="c", sip="127.0.0.1"), dict(sip="127.0.0.2")),
        ("spr", dict(sp="l", srt="c", spr="https,http"), dict(spr="https,htt")),
        ("sv", dict(sp="l", srt="c", sv="2019-02-02"), dict(sv="2019-02-03")),
        ("account", dict(sp="l", srt="c"), dict(account="devstoreaccount2")),
    ]
    for name, sent, signed in cases:
        r = c.raw.sas("GET", table_q, account_sas(**sent))
        check_ok(tap, r, 200, "account SAS control for %s: correctly signed -> 200" % name)
        r = c.raw.sas("GET", table_q, account_sas(sign=signed, **sent))
        check_error(tap, r, 403, "AuthenticationFailed", "account SAS with %s signed as %r "
                    "but sent as %r -> 403 AuthenticationFailed" %
                    (name, list(signed.values())[0], sent.get(name, DEV)))
    r = c.raw.sas("GET", table_q, account_sas("l", "c", sig_fn=flip))
    check_error(tap, r, 403, "AuthenticationFailed", "account SAS with one byte of sig changed "
                "-> 403 AuthenticationFailed")
    r = c.raw.sas("GET", table_q, account_sas("l", "c", key=ACCT2_KEY1))
    check_error(tap, r, 403, "AuthenticationFailed", "account SAS signed with another "
                "account's key -> 403 AuthenticationFailed")
    r = c.raw.sas("GET", table_q, account_sas("l", "c") + "&timeout=30&foo=bar")
    check_ok(tap, r, 200, "parameters outside the SAS do not enter its signature")
    r = c.raw.sas("GET", table_q, account_sas("l", "c") + "&api-version=2019-02-02",
                  version=None)
    check_ok(tap, r, 200, "api-version (without x-ms-version) is not part of the SAS signature")
    sas_versions(tap, c, table_q)
    acct2_q = account_sas("l", "c", account=ACCT2, key=ACCT2_KEY2)
    r = c.raw.sas("GET", table_q, acct2_q, account=ACCT2)
    tap.ok(r.status == 200 and [t["TableName"] for t in r.json()["value"]] == ["acct2tbl"],
           "account SAS of the second account signed with its secondary key lists its tables",
           repr(r))
    c.alive("refused account SAS requests")


def sas_versions(tap, c, table_q):
    """Which version runs a SAS request ("Versioning for Azure Storage":
    api-version executes, sv authorizes and executes without api-version;
    "Previous Azure Storage service versions": x-ms-version is ignored)."""
    def ok(r, version, what):
        tap.ok(r.status == 200 and r.h("x-ms-version") == version and
               r.json()["value"] is not None, what,
               "status %s x-ms-version %r body %r" % (r.status, r.h("x-ms-version"), r.body[:300]))

    q = account_sas("l", "c")
    r = c.raw.sas("GET", table_q, q + "&api-version=2019-02-02")
    ok(r, "2019-02-02", "280 SAS with x-ms-version and api-version, equal (legacy SDKs): 200, "
       "not MultipleVersionsSpecified")
    r = c.raw.sas("GET", table_q, q + "&api-version=2021-06-08")
    ok(r, "2021-06-08", "SAS with x-ms-version 2019-02-02 and api-version 2021-06-08: "
       "api-version runs the request")
    r = c.raw.sas("GET", table_q, q + "&api-version=2012-02-12", version="2021-06-08")
    check_error(tap, r, 415, "JsonFormatNotSupported", "SAS, api-version 2012-02-12 under an "
                "x-ms-version 2021-06-08: api-version runs it (no JSON before 2013-08-15)")
    r = c.raw.sas("GET", table_q, q, version="2012-02-12")
    ok(r, SV, "SAS without api-version: x-ms-version 2012-02-12 is ignored, sv runs it")
    r = c.raw.sas("GET", table_q, q, version="garbage")
    ok(r, SV, "SAS: even a malformed x-ms-version is ignored")
    r = c.raw.sas("GET", table_q, q, version=None)
    ok(r, SV, "a SAS request needs no x-ms-version (sv applies)")
    r = c.raw.sas("GET", table_q, q, headers=[("x-ms-version", "2020-12-06")])
    ok(r, SV, "SAS with two different x-ms-version headers: both ignored")
    r = c.raw.sas("GET", table_q, account_sas("l", "c", sv="2021-06-08"), version="2019-02-02")
    ok(r, "2021-06-08", "SAS sv 2021-06-08 with x-ms-version 2019-02-02: sv runs it")
    r = c.raw.sas("GET", table_q, account_sas("l", "c", sv="2027-01-01"), version=None)
    ok(r, "2027-01-01", "SAS sv newer than any known version: accepted, echoed as sent")
    r = c.raw.sas("GET", table_q, account_sas("l", "c", sv="2009-04-13"))
    check_error(tap, r, 403, "AuthenticationFailed", "SAS sv older than any version: 403")
    r = c.raw.sas("GET", table_q, q + "&api-version=2019-13-01")
    check_error(tap, r, 400, "InvalidHeaderValue", "SAS with a malformed api-version: 400")
    r = c.raw.signed("GET", table_q + "?api-version=2019-02-02")
    check_error(tap, r, 400, "MultipleVersionsSpecified", "SharedKey request with x-ms-version "
                "and api-version -> 400 MultipleVersionsSpecified (only SAS may send both)")


# --------------------------------------------------------------------------
# Table SAS (doc/protocol.md, Table SAS): permissions, key ranges, batches


PKS = ["p0", "p1", "p2", "p3"]
RKS = ["r0", "r1", "r2", "r3"]
RANGE = dict(spk="p1", srk="r1", epk="p2", erk="r2")


def in_range(pk, rk, spk=None, srk=None, epk=None, erk=None):
    """The key-range predicate of doc/protocol.md, Table SAS (ordinal comparison)."""
    lo = spk is None or pk > spk or (pk == spk and (srk is None or rk >= srk))
    hi = epk is None or pk < epk or (pk == epk and (erk is None or rk <= erk))
    return lo and hi


def test_table_sas(c):
    tap = c.tap
    c.owner.create_table("ranged")
    c.owner.create_table("other")
    owner_t = c.table("ranged")
    for pk in PKS:
        for rk in RKS:
            owner_t.create_entity({"PartitionKey": pk, "RowKey": rk, "v": "orig-%s-%s" % (pk, rk)})
    c.table("other").create_entity({"PartitionKey": "p1", "RowKey": "r1", "v": "other"})
    exp = datetime.datetime.now(UTC) + datetime.timedelta(hours=1)
    all_keys = [(pk, rk) for pk in PKS for rk in RKS]
    want = sorted(k for k in all_keys if in_range(*k, **RANGE))

    def gen(sp, table="ranged", **kw):
        return generate_table_sas(c.cred, table, permission=TableSasPermissions(_str=sp),
                                  expiry=exp, **kw)

    rng = {"start_pk": "p1", "start_rk": "r1", "end_pk": "p2", "end_rk": "r2"}
    sas = gen("raud", **rng)
    q = dict(urllib.parse.parse_qsl(sas))
    mine = dict(urllib.parse.parse_qsl(table_sas("ranged", q["sp"], q["se"], **RANGE)))
    tap.eq(mine.get("sig"), q.get("sig"), "generate_table_sas signs the table SAS string-to-sign")
    t = c.table("ranged", sas)

    # reads never see outside the range (272)
    sdk_ok(tap, "272 key-range SAS: list_entities returns exactly the range",
           lambda: keys_of(t.list_entities()), lambda k: k == want)
    sdk_ok(tap, "key-range SAS: a filter over every partition returns only the range",
           lambda: keys_of(t.query_entities("PartitionKey ge 'p0'")), lambda k: k == want)
    sdk_ok(tap, "key-range SAS: a filter for partition p0 (outside) returns nothing",
           lambda: keys_of(t.query_entities("PartitionKey eq 'p0'")), lambda k: k == [])
    sdk_ok(tap, "key-range SAS: a filter for p1 or p3 returns only p1's part of the range",
           lambda: keys_of(t.query_entities("PartitionKey eq 'p3' or PartitionKey eq 'p1'")),
           lambda k: k == [x for x in want if x[0] == "p1"])
    sdk_ok(tap, "key-range SAS: a filter on a property returns only in-range matches",
           lambda: keys_of(t.query_entities("v ne 'x'")), lambda k: k == want)

    def paged():
        got, pages = [], 0
        for page in t.list_entities(results_per_page=2).by_page():
            got += list(page)
            pages += 1
        return pages, keys_of(got)
    sdk_ok(tap, "key-range SAS: paging by 2 stays within the range",
           paged, lambda r: r[1] == want and r[0] >= 3)
    sdk_ok(tap, "key-range SAS: $select keeps the range",
           lambda: keys_of(t.list_entities(select=["PartitionKey", "RowKey"])),
           lambda k: k == want)
    sdk_ok(tap, "key-range SAS: $top 1 returns the first entity of the range",
           lambda: keys_of(next(t.list_entities(results_per_page=1).by_page())),
           lambda k: k == want[:1])
    for pk, rk in [("p1", "r1"), ("p2", "r2"), ("p1", "r3"), ("p2", "r0")]:
        sdk_ok(tap, "key-range SAS: get_entity(%s, %s) inside the range" % (pk, rk),
               lambda: t.get_entity(pk, rk), lambda e: e["v"] == "orig-%s-%s" % (pk, rk))
    outside = [("p0", "r3"), ("p1", "r0"), ("p2", "r3"), ("p3", "r0")]
    for pk, rk in outside + [("p9", "nothere")]:
        sdk_error(tap, "key-range SAS: get_entity(%s, %s) outside -> 403 AuthorizationFailure"
                  % (pk, rk), lambda: t.get_entity(pk, rk), 403, "AuthorizationFailure")

    # writes outside the range are refused and change nothing (273)
    before = c.snapshot("ranged")
    sdk_error(tap, "273 key-range SAS: insert outside (p0, new) -> 403 AuthorizationFailure",
              lambda: t.create_entity({"PartitionKey": "p0", "RowKey": "new"}), 403,
              "AuthorizationFailure")
    sdk_error(tap, "key-range SAS: insert outside (p1, r0x) -> 403 AuthorizationFailure",
              lambda: t.create_entity({"PartitionKey": "p1", "RowKey": "r0x"}), 403,
              "AuthorizationFailure")
    for pk, rk in outside:
        ent = {"PartitionKey": pk, "RowKey": rk, "v": "hacked"}
        sdk_error(tap, "key-range SAS: update (replace) (%s, %s) outside -> 403" % (pk, rk),
                  lambda: t.update_entity(ent, mode=UpdateMode.REPLACE), 403,
                  "AuthorizationFailure")
        sdk_error(tap, "key-range SAS: update (merge) (%s, %s) outside -> 403" % (pk, rk),
                  lambda: t.update_entity(ent), 403, "AuthorizationFailure")
        sdk_error(tap, "key-range SAS: upsert (replace) (%s, %s) outside -> 403" % (pk, rk),
                  lambda: t.upsert_entity(ent, mode=UpdateMode.REPLACE), 403,
                  "AuthorizationFailure")
        sdk_error(tap, "key-range SAS: upsert (merge) (%s, %s) outside -> 403" % (pk, rk),
                  lambda: t.upsert_entity(ent), 403, "AuthorizationFailure")
        sdk_error(tap, "key-range SAS: delete (%s, %s) outside -> 403" % (pk, rk),
                  lambda: t.delete_entity(pk, rk), 403, "AuthorizationFailure")
    sdk_error(tap, "key-range SAS: upsert of a new key outside -> 403",
              lambda: t.upsert_entity({"PartitionKey": "p3", "RowKey": "fresh"}), 403,
              "AuthorizationFailure")
    tap.eq(c.snapshot("ranged"), before, "refused out-of-range writes changed nothing "
           "(every entity and ETag as before, nothing added)")

    # inside the range everything is allowed
    sdk_ok(tap, "key-range SAS: insert inside (p1, r5)",
           lambda: t.create_entity({"PartitionKey": "p1", "RowKey": "r5", "v": "new"}))
    sdk_ok(tap, "key-range SAS: update (replace) inside",
           lambda: t.update_entity({"PartitionKey": "p1", "RowKey": "r5", "v": "rep"},
                                   mode=UpdateMode.REPLACE))
    sdk_ok(tap, "key-range SAS: update (merge) inside",
           lambda: t.update_entity({"PartitionKey": "p1", "RowKey": "r5", "w": 1}))
    sdk_ok(tap, "key-range SAS: upsert (replace) inside",
           lambda: t.upsert_entity({"PartitionKey": "p2", "RowKey": "r1x", "v": 1},
                                   mode=UpdateMode.REPLACE))
    sdk_ok(tap, "key-range SAS: upsert (merge) inside",
           lambda: t.upsert_entity({"PartitionKey": "p2", "RowKey": "r1x", "w": 2}))
    sdk_ok(tap, "key-range SAS: delete inside", lambda: t.delete_entity("p2", "r1x"))
    sdk_ok(tap, "key-range SAS writes landed where expected",
           lambda: c.table("ranged").get_entity("p1", "r5"),
           lambda e: e["v"] == "rep" and e["w"] == 1)
    c.table("ranged").delete_entity("p1", "r5")

    # batches: every sub-operation's permission and key (281)
    before = c.snapshot("ranged")
    ra = c.table("ranged", gen("ra"))
    sdk_error(tap, "281 table SAS sp=ra: batch with an update -> 403 "
              "AuthorizationPermissionMismatch",
              lambda: ra.submit_transaction([
                  ("create", {"PartitionKey": "p1", "RowKey": "b1"}),
                  ("update", {"PartitionKey": "p1", "RowKey": "r1", "z": 1})]),
              403, "AuthorizationPermissionMismatch")
    sdk_error(tap, "table SAS sp=ra: batch with a delete -> AuthorizationPermissionMismatch",
              lambda: ra.submit_transaction([
                  ("create", {"PartitionKey": "p1", "RowKey": "b1"}),
                  ("delete", {"PartitionKey": "p1", "RowKey": "r1"})]),
              403, "AuthorizationPermissionMismatch")
    sdk_error(tap, "key-range SAS: batch in an outside partition -> AuthorizationFailure",
              lambda: t.submit_transaction([
                  ("create", {"PartitionKey": "p3", "RowKey": "b1"})]),
              403, "AuthorizationFailure")
    sdk_error(tap, "key-range SAS: batch with one out-of-range row -> AuthorizationFailure",
              lambda: t.submit_transaction([
                  ("create", {"PartitionKey": "p2", "RowKey": "r0a"}),
                  ("upsert", {"PartitionKey": "p2", "RowKey": "r9", "v": "x"})]),
              403, "AuthorizationFailure")
    sdk_error(tap, "key-range SAS: batch deleting an out-of-range row -> AuthorizationFailure",
              lambda: t.submit_transaction([
                  ("update", {"PartitionKey": "p1", "RowKey": "r1", "q": 1}),
                  ("delete", {"PartitionKey": "p1", "RowKey": "r0"})]),
              403, "AuthorizationFailure")
    tap.eq(c.snapshot("ranged"), before, "refused batches wrote nothing")
    sdk_ok(tap, "table SAS sp=rau: batch create + update + upsert",
           lambda: c.table("ranged", gen("rau")).submit_transaction([
               ("create", {"PartitionKey": "p1", "RowKey": "rb1"}),
               ("update", {"PartitionKey": "p1", "RowKey": "r1", "z": 1}),
               ("upsert", {"PartitionKey": "p1", "RowKey": "rb2"})]))
    sdk_ok(tap, "key-range SAS: batch inside the range",
           lambda: t.submit_transaction([("delete", {"PartitionKey": "p1", "RowKey": "rb1"}),
                                         ("delete", {"PartitionKey": "p1", "RowKey": "rb2"})]))
    sdk_ok(tap, "batches left the table as before (but for the update of (p1, r1))",
           lambda: keys_of(c.table("ranged").list_entities()), lambda k: k == sorted(all_keys))

    # a query inside a raw batch also stays within the range
    test_batch_query(c, table_sas("ranged", "r", **RANGE), want)

    # 268, 269: permissions
    ro = c.table("ranged", gen("r"))
    sdk_ok(tap, "268 table SAS sp=r: query", lambda: keys_of(ro.list_entities()),
           lambda k: k == sorted(all_keys))
    sdk_error(tap, "268 table SAS sp=r: insert -> 403 AuthorizationPermissionMismatch",
              lambda: ro.create_entity({"PartitionKey": "p0", "RowKey": "x"}), 403,
              "AuthorizationPermissionMismatch")
    a = c.table("ranged", gen("a"))
    sdk_ok(tap, "table SAS sp=a: insert",
           lambda: a.create_entity({"PartitionKey": "p0", "RowKey": "a1"}))
    sdk_error(tap, "269 table SAS sp=a: InsertOrReplace -> AuthorizationPermissionMismatch",
              lambda: a.upsert_entity({"PartitionKey": "p0", "RowKey": "a2"},
                                      mode=UpdateMode.REPLACE), 403,
              "AuthorizationPermissionMismatch")
    sdk_error(tap, "table SAS sp=a: InsertOrMerge -> AuthorizationPermissionMismatch",
              lambda: a.upsert_entity({"PartitionKey": "p0", "RowKey": "a2"}), 403,
              "AuthorizationPermissionMismatch")
    sdk_error(tap, "table SAS sp=a: read -> AuthorizationPermissionMismatch",
              lambda: a.get_entity("p0", "a1"), 403, "AuthorizationPermissionMismatch")
    sdk_error(tap, "table SAS sp=a: query -> AuthorizationPermissionMismatch",
              lambda: list(a.list_entities()), 403, "AuthorizationPermissionMismatch")
    au = c.table("ranged", gen("au"))
    sdk_ok(tap, "269 table SAS sp=au: InsertOrReplace",
           lambda: au.upsert_entity({"PartitionKey": "p0", "RowKey": "a2"},
                                    mode=UpdateMode.REPLACE))
    sdk_ok(tap, "table SAS sp=au: InsertOrMerge",
           lambda: au.upsert_entity({"PartitionKey": "p0", "RowKey": "a2", "m": 1}))
    u = c.table("ranged", gen("u"))
    sdk_ok(tap, "table SAS sp=u: update", lambda: u.update_entity(
        {"PartitionKey": "p0", "RowKey": "a1", "m": 2}))
    sdk_error(tap, "table SAS sp=u: insert -> AuthorizationPermissionMismatch",
              lambda: u.create_entity({"PartitionKey": "p0", "RowKey": "a3"}), 403,
              "AuthorizationPermissionMismatch")
    sdk_error(tap, "table SAS sp=u: delete -> AuthorizationPermissionMismatch",
              lambda: u.delete_entity("p0", "a1"), 403, "AuthorizationPermissionMismatch")
    d = c.table("ranged", gen("d"))
    sdk_ok(tap, "table SAS sp=d: delete", lambda: d.delete_entity("p0", "a1"))
    d.delete_entity("p0", "a2")

    # 270: no table, ACL or service operations
    tsvc = c.service(gen("raud"))
    sdk_error(tap, "270 table SAS cannot list tables -> 403 AuthorizationFailure",
              lambda: list(tsvc.list_tables()), 403, "AuthorizationFailure")
    sdk_error(tap, "270 table SAS cannot create a table -> 403 AuthorizationFailure",
              lambda: tsvc.create_table("viasas"), 403, "AuthorizationFailure")
    sdk_error(tap, "270 table SAS cannot delete its table -> 403 AuthorizationFailure",
              lambda: tsvc.delete_table("ranged"), 403, "AuthorizationFailure")
    sdk_error(tap, "table SAS cannot read its table's ACL -> 403 AuthorizationFailure",
              lambda: c.table("ranged", gen("raud")).get_table_access_policy(), 403,
              "AuthorizationFailure")
    sdk_error(tap, "table SAS cannot get service properties -> 403 AuthorizationFailure",
              lambda: tsvc.get_service_properties(), 403, "AuthorizationFailure")
    sdk_ok(tap, "the table survived", lambda: [x.name for x in c.owner.list_tables()],
           lambda n: "ranged" in n and "viasas" not in n)

    # 271: a SAS for one table used on another
    oth = c.table("other", gen("raud"))
    before_other = c.snapshot("other")
    sdk_error(tap, "271 SAS for 'ranged' used on 'other': read -> 403 AuthorizationFailure",
              lambda: oth.get_entity("p1", "r1"), 403, "AuthorizationFailure")
    sdk_error(tap, "SAS for 'ranged' used on 'other': query -> 403",
              lambda: list(oth.list_entities()), 403, "AuthorizationFailure")
    sdk_error(tap, "SAS for 'ranged' used on 'other': insert -> 403",
              lambda: oth.create_entity({"PartitionKey": "p1", "RowKey": "x"}), 403,
              "AuthorizationFailure")
    sdk_error(tap, "SAS for 'ranged' used on 'other': batch -> 403",
              lambda: oth.submit_transaction([("upsert", {"PartitionKey": "p1", "RowKey": "r1",
                                                          "v": "hacked"})]),
              403, "AuthorizationFailure")
    tap.eq(c.snapshot("other"), before_other, "table 'other' unchanged")
    r = c.raw.sas("GET", "/other()", table_sas("ranged", "r"))
    check_error(tap, r, 403, "AuthorizationFailure", "raw: tn=ranged on /other() -> 403 "
                "AuthorizationFailure")

    # 267: tn in any case, canonical resource lower-cased
    sdk_ok(tap, "267 generate_table_sas('RANGED') works on table 'ranged'",
           lambda: c.table("ranged", gen("r", table="RANGED")).get_entity("p0", "r0"))
    r = c.raw.sas("GET", "/ranged(PartitionKey='p0',RowKey='r0')", table_sas("Ranged", "r"))
    check_ok(tap, r, 200, "267 raw: tn=Ranged signed with /table/devstoreaccount1/ranged")

    def upper_resource(account, table, f):
        return table_sas_sts(account, table, f).replace("/ranged\n", "/Ranged\n")
    fields = dict(sv=SV, tn="Ranged", sp="r", se=iso(hours=1))
    bad = sas_query(fields, hmac_b64(DEV_KEY, upper_resource(DEV, "Ranged", fields)))
    r = c.raw.sas("GET", "/ranged(PartitionKey='p0',RowKey='r0')", bad)
    check_error(tap, r, 403, "AuthenticationFailed", "267 raw: canonical resource with "
                "'/Ranged' (not lower-cased) -> 403 AuthenticationFailed")

    # one byte of each signed field: the sent value alone would allow the request
    path = "/ranged(PartitionKey='p1',RowKey='r1')"
    cases = [
        ("tn", dict(sp="r"), dict(tn="rangee")),
        ("sp", dict(sp="r"), dict(sp="a")),
        ("st", dict(sp="r", st="2018-01-01T00:00:00Z"), dict(st="2098-01-01T00:00:00Z")),
        ("se", dict(sp="r", se="2090-01-01T00:00:00Z"), dict(se="2010-01-01T00:00:00Z")),
        ("sip", dict(sp="r", sip="127.0.0.1"), dict(sip="127.0.0.2")),
        ("spr", dict(sp="r", spr="https,http"), dict(spr="https")),
        ("sv", dict(sp="r", sv="2019-02-02"), dict(sv="2019-02-03")),
        ("spk", dict(sp="r", spk="p1"), dict(spk="p2")),
        ("srk", dict(sp="r", spk="p1", srk="r1"), dict(srk="r2")),
        ("epk", dict(sp="r", epk="p1"), dict(epk="p0")),
        ("erk", dict(sp="r", epk="p1", erk="r1"), dict(erk="r0")),
        ("account", dict(sp="r"), dict(account="devstoreaccount2")),
    ]
    for name, sent, signed in cases:
        r = c.raw.sas("GET", path, table_sas("ranged", **sent))
        check_ok(tap, r, 200, "table SAS control for %s: correctly signed -> 200" % name)
        r = c.raw.sas("GET", path, table_sas("ranged", sign=signed, **sent))
        check_error(tap, r, 403, "AuthenticationFailed", "table SAS with %s signed as %r but "
                    "sent as %r -> 403 AuthenticationFailed"
                    % (name, list(signed.values())[0], sent.get(name, "ranged")))
    r = c.raw.sas("GET", path, table_sas("ranged", "r", sig_fn=lambda s: flip(s, 10)))
    check_error(tap, r, 403, "AuthenticationFailed", "table SAS with one byte of sig changed -> "
                "403 AuthenticationFailed")
    r = c.raw.sas("GET", path, table_sas("ranged", "r", sig_fn=lambda s: s[:-1]))
    check_error(tap, r, 403, "AuthenticationFailed", "table SAS with a truncated sig -> 403 "
                "AuthenticationFailed")
    r = c.raw.sas("GET", path, table_sas("ranged", "r") + "&$select=v&timeout=5")
    check_ok(tap, r, 200, "query options beside a table SAS do not enter its signature")
    c.alive("refused table SAS requests")


def utf16_key(s):
    """Ordinal UTF-16 code-unit order (doc/protocol.md, String order)."""
    return s.encode("utf-16-be")


def test_range_edges(c):
    """Range shapes, continuation tokens, UTF-16 order, body keys."""
    tap = c.tap
    owner_t = c.table("ranged")
    all_keys = keys_of(owner_t.list_entities())
    exp = datetime.datetime.now(UTC) + datetime.timedelta(hours=1)
    for shape in (dict(spk="p1", epk="p1"), dict(spk="p2"), dict(epk="p1"),
                  dict(spk="p1", srk="r2"), dict(epk="p2", erk="r0")):
        kw = {{"spk": "start_pk", "srk": "start_rk", "epk": "end_pk", "erk": "end_rk"}[k]: v
              for k, v in shape.items()}
        t = c.table("ranged", generate_table_sas(c.cred, "ranged", expiry=exp,
                                                 permission=TableSasPermissions(read=True),
                                                 **kw))
        want = [k for k in all_keys if in_range(*k, **shape)]
        label = "&".join("%s=%s" % kv for kv in shape.items())
        sdk_ok(tap, "%s SAS with %s: query returns exactly the range" %
               ("272" if label == "spk=p1&epk=p1" else "key-range", label),
               lambda: keys_of(t.list_entities()), lambda k, w=want: k == w)

    # hand-made continuation tokens cannot leave the range
    q = table_sas("ranged", "r", **RANGE)
    want = [k for k in all_keys if in_range(*k, **RANGE)]
    for npk, nrk, expect in (("p3", "r0", []), ("p0", "r0", want),
                             ("p2", "r0", [k for k in want if k >= ("p2", "r0")])):
        r = c.raw.sas("GET", "/ranged()", q + "&NextPartitionKey=%s&NextRowKey=%s" % (npk, nrk))
        got = keys_of(r.json()["value"]) if r.status == 200 else r
        tap.eq(got, expect, "key-range SAS with NextPartitionKey=%s&NextRowKey=%s returns only "
               "the range from there" % (npk, nrk))

    # body keys differing from the URL keys never reach outside the range
    before = c.snapshot("ranged")
    r = c.raw.sas("PUT", "/ranged(PartitionKey='p1',RowKey='r1')", table_sas("ranged", "rau",
                  **RANGE), body={"PartitionKey": "p0", "RowKey": "r1", "v": "hacked"})
    after = c.snapshot("ranged")
    tap.ok(r.status in (204, 400) and after[("p0", "r1")] == before[("p0", "r1")] and
           ("p0", "r1") in after and len(after) == len(before),
           "upsert to an in-range URL with out-of-range body keys leaves the outside entity "
           "alone (URL keys, or 400)", "status %s" % r.status)

    # UTF-16 order of the range (doc/protocol.md, String order; Table SAS)
    c.owner.create_table("unirange")
    u = c.table("unirange")
    pks = ["a", "\ue000", "\ue000x", "\U00010000", "\U00010000x", "\uffff", "\ud7ff"]
    for pk in pks:
        u.create_entity({"PartitionKey": pk, "RowKey": "r"})
    for spk, epk in (("\ue000", None), (None, "\ue000"), ("\U00010000", "\uffff"),
                     ("\ud7ff", "\U00010000x")):
        kw = {}
        if spk is not None:
            kw["start_pk"] = spk
        if epk is not None:
            kw["end_pk"] = epk
        t = c.table("unirange", generate_table_sas(c.cred, "unirange", expiry=exp,
                                                   permission=TableSasPermissions(_str="ra"),
                                                   **kw))
        want = sorted(pk for pk in pks if (spk is None or utf16_key(pk) >= utf16_key(spk)) and
                      (epk is None or utf16_key(pk) <= utf16_key(epk)))
        label = "spk=%r epk=%r" % (spk, epk)
        sdk_ok(tap, "UTF-16 order: %s query returns %r" % (label, want),
               lambda: sorted(e["PartitionKey"] for e in t.list_entities()),
               lambda k, w=want: k == w)
        outside = [pk for pk in pks if pk not in want]
        if outside:
            pk = outside[0]
            sdk_error(tap, "UTF-16 order: %s insert into %r (outside) -> 403" % (label, pk),
                      lambda: t.create_entity({"PartitionKey": pk, "RowKey": "new"}), 403,
                      "AuthorizationFailure")
        pk = want[0]
        sdk_ok(tap, "UTF-16 order: %s insert into %r (inside)" % (label, pk),
               lambda: t.create_entity({"PartitionKey": pk, "RowKey": "new"}))
        u.delete_entity(pk, "new")
    c.owner.delete_table("unirange")


def test_batch_query(c, sas, want):
    """A $batch holding one GET under a key-range table SAS (doc/protocol.md, Query in a batch)."""
    tap = c.tap
    base = "http://%s:%d/%s" % (c.srv.host, c.srv.port, DEV)

    def batch(url):
        body = ("--batch_q1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: "
                "binary\r\n\r\nGET %s HTTP/1.1\r\nAccept: %s\r\n\r\n--batch_q1--\r\n"
                % (url, NOMETA))
        return c.raw.sas("POST", "/$batch", sas, body=body,
                         headers=[("Content-Type", "multipart/mixed; boundary=batch_q1")])

    r = batch(base + "/ranged()")
    m = re.search(rb"HTTP/1\.1 (\d{3})[^\r\n]*\r\n.*?\r\n\r\n(\{.*\})", r.body, re.S)
    got = None
    if m and m.group(1) == b"200":
        got = keys_of(json.loads(m.group(2))["value"])
    tap.ok(r.status == 202 and got == want, "key-range SAS: a query in a $batch returns only "
           "the range", repr(r.body[:800]))
    r = batch(base + "/ranged(PartitionKey='p0',RowKey='r0')")
    m = re.search(rb"HTTP/1\.1 (\d{3})[^\r\n]*\r\n.*?\r\n\r\n(\{.*\})", r.body, re.S)
    ok = bool(m) and m.group(1) == b"403" and \
        json.loads(m.group(2))["odata.error"]["code"] == "AuthorizationFailure" and \
        b"orig-p0-r0" not in r.body
    tap.ok(r.status == 202 and ok, "key-range SAS: a point query outside the range in a $batch "
           "-> 403 AuthorizationFailure part, no data", repr(r.body[:800]))


# --------------------------------------------------------------------------
# Stored access policies: what test_acl_props.py does not cover


def test_policy_sas(c):
    tap = c.tap
    c.owner.create_table("polt")
    tc = c.table("polt")
    tc.create_entity({"PartitionKey": "p", "RowKey": "1"})
    now = datetime.datetime.now(UTC).replace(microsecond=0)
    hour = datetime.timedelta(hours=1)
    tc.set_table_access_policy({
        "expired": TableAccessPolicy(permission="r", start=now - 2 * hour, expiry=now - hour),
        "future": TableAccessPolicy(permission="r", start=now + hour, expiry=now + 2 * hour),
        "permonly": TableAccessPolicy(permission="r"),
        "expiryonly": TableAccessPolicy(expiry=now + hour),
        "change": TableAccessPolicy(permission="r", expiry=now + hour),
    })

    def via(policy_id, **kw):
        return c.table("polt", generate_table_sas(c.cred, "polt", policy_id=policy_id, **kw))

    sdk_error(tap, "SAS naming a policy whose expiry is past -> 403 AuthenticationFailed",
              lambda: via("expired").get_entity("p", "1"), 403, "AuthenticationFailed")
    sdk_error(tap, "SAS naming a policy whose start is in the future -> 403 "
              "AuthenticationFailed",
              lambda: via("future").get_entity("p", "1"), 403, "AuthenticationFailed")
    sdk_error(tap, "policy without expiry and SAS without se -> 403 AuthenticationFailed",
              lambda: via("permonly").get_entity("p", "1"), 403, "AuthenticationFailed")
    sdk_ok(tap, "policy with sp only + se in the SAS: read works",
           lambda: via("permonly", expiry=now + hour).get_entity("p", "1"))
    sdk_error(tap, "policy with sp only + se in the SAS, past se -> AuthenticationFailed",
              lambda: via("permonly", expiry=now - hour).get_entity("p", "1"), 403,
              "AuthenticationFailed")
    sdk_ok(tap, "policy with se only + sp=r in the SAS: read works",
           lambda: via("expiryonly", permission=TableSasPermissions(read=True))
           .get_entity("p", "1"))
    sdk_error(tap, "policy with se only + sp=r in the SAS: insert -> "
              "AuthorizationPermissionMismatch",
              lambda: via("expiryonly", permission=TableSasPermissions(read=True))
              .create_entity({"PartitionKey": "p", "RowKey": "2"}), 403,
              "AuthorizationPermissionMismatch")
    sdk_error(tap, "se both in the SAS and in its policy -> 403 AuthenticationFailed",
              lambda: via("change", expiry=now + hour).get_entity("p", "1"), 403,
              "AuthenticationFailed")
    sdk_error(tap, "unknown si -> 403 AuthenticationFailed",
              lambda: via("nosuchpolicy", permission=TableSasPermissions(read=True),
                          expiry=now + hour).get_entity("p", "1"), 403, "AuthenticationFailed")
    changing = via("change")
    sdk_error(tap, "policy 'change' (sp=r): insert refused",
              lambda: changing.create_entity({"PartitionKey": "p", "RowKey": "3"}), 403,
              "AuthorizationPermissionMismatch")
    acl = tc.get_table_access_policy()
    acl["change"] = TableAccessPolicy(permission="ra", expiry=now + hour)
    tc.set_table_access_policy(acl)
    sdk_ok(tap, "widening the policy to ra takes effect for the same SAS",
           lambda: changing.create_entity({"PartitionKey": "p", "RowKey": "3"}))
    acl["change"] = TableAccessPolicy(permission="r", expiry=now - hour)
    tc.set_table_access_policy(acl)
    sdk_error(tap, "moving the policy's expiry into the past revokes the SAS",
              lambda: changing.get_entity("p", "1"), 403, "AuthenticationFailed")
    ranged = c.table("polt", generate_table_sas(c.cred, "polt", policy_id="expiryonly",
                                                permission=TableSasPermissions(_str="ra"),
                                                start_pk="q", end_pk="q"))
    sdk_ok(tap, "si with a key range: the query returns only the range",
           lambda: keys_of(ranged.list_entities()), lambda k: k == [])
    sdk_error(tap, "si with a key range: insert outside -> AuthorizationFailure",
              lambda: ranged.create_entity({"PartitionKey": "p", "RowKey": "9"}), 403,
              "AuthorizationFailure")
    sdk_ok(tap, "si with a key range: insert inside",
           lambda: ranged.create_entity({"PartitionKey": "q", "RowKey": "9"}))
    # raw: si changed by one byte is a different SAS
    r = c.raw.sas("GET", "/polt()", table_sas("polt", sp="r", no_se=True, si="expiryonly",
                                              sign=dict(si="expiryonlz")))
    check_error(tap, r, 403, "AuthenticationFailed", "si signed as 'expiryonlz' but sent as "
                "'expiryonly' -> 403 AuthenticationFailed")
    r = c.raw.sas("GET", "/polt()", table_sas("polt", sp="r", no_se=True, si="expiryonly"))
    check_ok(tap, r, 200, "raw: si=expiryonly with sp=r and no se -> 200")
    c.owner.delete_table("polt")


# --------------------------------------------------------------------------
# SAS validity: time window, IP, protocol


def test_sas_validity(c):
    tap = c.tap
    c.owner.create_table("valid")
    c.table("valid").create_entity({"PartitionKey": "p", "RowKey": "1"})
    now = datetime.datetime.now(UTC)
    hour = datetime.timedelta(hours=1)

    def tsas(**kw):
        kw.setdefault("permission", TableSasPermissions(read=True))
        kw.setdefault("expiry", now + hour)
        return c.table("valid", generate_table_sas(c.cred, "valid", **kw))

    def asas(**kw):
        return c.table("valid", generate_account_sas(
            c.cred, ResourceTypes.from_string("o"), AccountSasPermissions(read=True),
            kw.pop("expiry", now + hour), **kw))

    sdk_error(tap, "274 expired table SAS -> 403 AuthenticationFailed",
              lambda: tsas(expiry=now - datetime.timedelta(seconds=5)).get_entity("p", "1"),
              403, "AuthenticationFailed")
    sdk_error(tap, "274 expired account SAS -> 403 AuthenticationFailed",
              lambda: asas(expiry=now - hour).get_entity("p", "1"), 403, "AuthenticationFailed")
    sdk_error(tap, "275 table SAS with st in the future -> 403 AuthenticationFailed",
              lambda: tsas(start=now + hour, expiry=now + 2 * hour).get_entity("p", "1"),
              403, "AuthenticationFailed")
    sdk_error(tap, "275 account SAS with st in the future -> 403 AuthenticationFailed",
              lambda: asas(start=now + hour, expiry=now + 2 * hour).get_entity("p", "1"),
              403, "AuthenticationFailed")
    sdk_ok(tap, "table SAS with st in the past: read works",
           lambda: tsas(start=now - hour).get_entity("p", "1"))
    # the time-frame message rides in the XML error of a service operation
    q = account_sas("r", srt="s", se="2020-01-01T00:00:00Z", st="2019-12-01T00:00:00Z")
    r = c.raw.sas("GET", "/" + PROPS, q, accept="application/xml")
    check_error(tap, r, 403, "AuthenticationFailed", "274 expired account SAS on Get Service "
                "Properties: 403 AuthenticationFailed, XML detail with the time frame",
                r"Signature not valid in the specified time frame: Start \[[^\]]+\] - Expiry "
                r"\[[^\]]+\] - Current \[[^\]]+\]")
    for se in ((now + 2 * datetime.timedelta(days=1)).strftime("%Y-%m-%d"),
               (now + hour).strftime("%Y-%m-%dT%H:%MZ"),
               (now + hour).strftime("%Y-%m-%dT%H:%M:%S.1234567Z")):
        r = c.raw.sas("GET", "/valid()", table_sas("valid", "r", se=se))
        check_ok(tap, r, 200, "SAS time format se=%s accepted" % se)

    # 277: source IP. generate_table_sas 12.4.2 passes ip_address_or_range
    # under a name generate_table ignores (the token has no sip), so the
    # table SAS here comes from this test's signer, used through the SDK.
    def tsas_ip(ip_address_or_range):
        return c.table("valid", table_sas("valid", "r", sip=ip_address_or_range))

    for sip, ok in (("127.0.0.1", True), ("127.0.0.0-127.0.0.255", True),
                    ("10.0.0.0-127.255.255.255", True), ("10.1.2.3", False),
                    ("127.0.0.2-127.0.0.9", False), ("128.0.0.0-255.255.255.255", False)):
        for kind, mk in (("table", tsas_ip), ("account", asas)):
            fn = (lambda mk=mk, sip=sip: mk(ip_address_or_range=sip).get_entity("p", "1"))
            if ok:
                sdk_ok(tap, "%s SAS sip=%s from 127.0.0.1 works" % (kind, sip), fn)
            else:
                sdk_error(tap, "277 %s SAS sip=%s from 127.0.0.1 -> 403 "
                          "AuthorizationSourceIPMismatch" % (kind, sip), fn, 403,
                          "AuthorizationSourceIPMismatch")
    r = c.raw.sas("GET", "/valid()", table_sas("valid", "r", sip="10.1.2.3"))
    check_error(tap, r, 403, "AuthorizationSourceIPMismatch", "raw: sip mismatch names the "
                "source IP in the message",
                r"using this source IP 127\.0\.0\.1")

    # 276: protocol
    sdk_error(tap, "276 table SAS spr=https over HTTP -> 403 AuthorizationProtocolMismatch",
              lambda: tsas(protocol="https").get_entity("p", "1"), 403,
              "AuthorizationProtocolMismatch")
    sdk_error(tap, "276 account SAS spr=https over HTTP -> 403 AuthorizationProtocolMismatch",
              lambda: asas(protocol="https").get_entity("p", "1"), 403,
              "AuthorizationProtocolMismatch")
    sdk_ok(tap, "table SAS spr=https,http over HTTP works",
           lambda: tsas(protocol="https,http").get_entity("p", "1"))
    c.alive("refused SAS validity checks")


# --------------------------------------------------------------------------
# SAS versions and forms, precedence, the secondary endpoint


def test_sas_forms(c):
    tap = c.tap
    c.owner.create_table("forms")
    c.table("forms").create_entity({"PartitionKey": "p", "RowKey": "1"})
    ent = "/forms(PartitionKey='p',RowKey='1')"
    se = iso(hours=1)

    # account SAS from 2020-12-06 signs an ses line (doc/protocol.md, Account SAS)
    for sv in ("2015-04-05", "2021-06-08"):
        r = c.raw.sas("GET", ent, account_sas("r", "o", sv=sv))
        check_ok(tap, r, 200, "account SAS sv=%s signed with its version's string-to-sign -> 200" % sv)
    f = dict(sv="2021-06-08", ss="t", srt="o", sp="r", se=se)
    old_form = hmac_b64(DEV_KEY, account_sas_sts(DEV, dict(f, sv="2019-02-02"))
                        .replace("2019-02-02", "2021-06-08"))
    r = c.raw.sas("GET", ent, sas_query(f, old_form))
    check_error(tap, r, 403, "AuthenticationFailed", "account SAS sv=2021-06-08 signed without "
                "the ses line -> 403 AuthenticationFailed")

    # table SAS string-to-sign eras (doc/protocol.md, Table SAS)
    def old_table_sas(sv, canonical, sp="r"):
        parts = [sp, "", se, canonical, "", sv, "", "", "", ""]
        return sas_query(dict(sv=sv, tn="forms", sp=sp, se=se),
                         hmac_b64(DEV_KEY, "\n".join(parts)))
    for sv, canonical in (("2013-08-15", "/%s/forms" % DEV),
                          ("2015-02-21", "/table/%s/forms" % DEV)):
        r = c.raw.sas("GET", ent, old_table_sas(sv, canonical))
        check_ok(tap, r, 200, "table SAS sv=%s with canonical %s, no sip/spr lines -> 200"
                 % (sv, canonical))
    r = c.raw.sas("GET", ent, old_table_sas("2013-08-15", "/table/%s/forms" % DEV))
    check_error(tap, r, 403, "AuthenticationFailed", "table SAS sv=2013-08-15 with the "
                "'/table/' canonical form -> 403 AuthenticationFailed")
    r = c.raw.sas("GET", ent, old_table_sas("2015-02-21", "/%s/forms" % DEV))
    check_error(tap, r, 403, "AuthenticationFailed", "table SAS sv=2015-02-21 without the "
                "'/table/' canonical form -> 403 AuthenticationFailed")

    # malformed SAS
    q = table_sas("forms", "r")
    r = c.raw.sas("GET", ent, q + "&sp=r")
    check_error(tap, r, 403, "AuthenticationFailed", "a SAS with sp twice -> 403 "
                "AuthenticationFailed")
    r = c.raw.sas("GET", ent, table_sas("forms", "r", srk="a"))
    check_error(tap, r, 403, "AuthenticationFailed", "table SAS with srk but no spk -> 403 "
                "AuthenticationFailed")
    r = c.raw.sas("GET", ent, table_sas("forms", "r", se="tomorrow"))
    check_error(tap, r, 403, "AuthenticationFailed", "table SAS with an unparsable se -> 403 "
                "AuthenticationFailed")
    r = c.raw.sas("GET", ent, table_sas("forms", "r", sv="2099-01-01"))
    tap.ok(r.status == 200 and r.h("x-ms-version") == "2099-01-01", "table SAS with an sv "
           "newer than any known version: accepted, echoed (without --strict-versions)",
           "%s %r" % (r.status, r.body[:300]))
    r = c.raw.sas("GET", ent, table_sas("forms", "r", sv="2019-02-30"))
    check_error(tap, r, 403, "AuthenticationFailed", "table SAS with an sv that is no date "
                "-> 403 AuthenticationFailed")
    r = c.raw.sas("GET", ent, table_sas("forms", "r", spr="ftp"))
    check_error(tap, r, 403, "AuthenticationFailed", "SAS spr=ftp -> 403 AuthenticationFailed")

    # doc/protocol.md, Choosing the scheme: the Authorization header goes first
    hd, _ = sign_headers("GET", "/%s%s?%s" % (DEV, ent, q), c.raw.base_headers())
    r = c.raw.send("GET", "/%s%s?%s" % (DEV, ent, q), hd)
    check_ok(tap, r, 200, "valid SharedKey beside a valid SAS -> 200")
    r = c.raw.send("GET", "/%s%s?%s" % (DEV, ent, table_sas("forms", "r", sig_fn=flip)), hd)
    check_ok(tap, r, 200, "valid SharedKey beside a SAS with a bad sig -> 200 (header first)")
    hd, _ = sign_headers("GET", "/%s%s?%s" % (DEV, ent, q), c.raw.base_headers(),
                         alter={"sig": flip})
    r = c.raw.send("GET", "/%s%s?%s" % (DEV, ent, q), hd)
    check_error(tap, r, 403, "AuthenticationFailed", "bad SharedKey beside a valid SAS -> 403 "
                "AuthenticationFailed (the SAS is not a fallback)")

    # the read-only secondary endpoint (doc/protocol.md, Endpoint styles; SharedKey; Account key rights)
    sec = "/%s-secondary" % DEV
    hd, _ = sign_headers("GET", sec + "/forms()", c.raw.base_headers())
    r = c.raw.send("GET", sec + "/forms()", hd)
    check_ok(tap, r, 200, "SharedKey read on ACCOUNT-secondary, canonical resource "
             "/ACCOUNT/ACCOUNT-secondary/... -> 200")
    hd, _ = sign_headers("POST", sec + "/forms", c.raw.base_headers() +
                         [("Content-Type", "application/json")])
    r = c.raw.send("POST", sec + "/forms", hd, json.dumps({"PartitionKey": "p", "RowKey": "s"}))
    check_error(tap, r, 403, "InsufficientAccountPermissions", "SharedKey write on "
                "ACCOUNT-secondary -> 403 InsufficientAccountPermissions")
    hd, _ = sign_headers("GET", sec + "/forms()", c.raw.base_headers(), alter={"sig": flip})
    r = c.raw.send("GET", sec + "/forms()", hd)
    check_error(tap, r, 403, "AuthenticationFailed", "bad SharedKey on ACCOUNT-secondary -> 403 "
                "AuthenticationFailed")
    r = c.raw.sas("GET", "/forms()", table_sas("forms", "r"), account=DEV + "-secondary")
    check_ok(tap, r, 200, "table SAS read on ACCOUNT-secondary -> 200")
    r = c.raw.sas("POST", "/forms", table_sas("forms", "ra"), account=DEV + "-secondary",
                  body={"PartitionKey": "p", "RowKey": "s"})
    check_error(tap, r, 403, "InsufficientAccountPermissions", "table SAS sp=ra write on "
                "ACCOUNT-secondary -> 403 InsufficientAccountPermissions")
    sdk_ok(tap, "nothing was written through the secondary",
           lambda: keys_of(c.table("forms").list_entities()), lambda k: k == [("p", "1")])
    c.owner.delete_table("forms")
    c.alive("refused SAS forms")


# --------------------------------------------------------------------------
# Hand-signed SharedKey and SharedKeyLite


def test_sharedkey_raw(c):
    tap = c.tap
    raw = c.raw
    r = raw.signed("POST", "/Tables", body={"TableName": "rawsk"})
    check_ok(tap, r, 201, "SharedKey hand-signed Create Table -> 201")
    r = raw.signed("POST", "/rawsk", body={"PartitionKey": "p", "RowKey": "1", "v": "one"})
    check_ok(tap, r, 201, "SharedKey hand-signed Insert Entity -> 201")
    ent = "/rawsk(PartitionKey='p',RowKey='1')"
    r = raw.signed("GET", ent)
    check_ok(tap, r, 200, "SharedKey hand-signed Get Entity -> 200")
    r = raw.signed("GET", "/rawsk?comp=acl", accept="application/xml")
    check_ok(tap, r, 200, "SharedKey hand-signed Get Table ACL (?comp=acl signed) -> 200")
    r = raw.signed("GET", "/" + PROPS, accept="application/xml")
    check_ok(tap, r, 200, "SharedKey hand-signed Get Service Properties -> 200")
    for scheme in ("sharedkey", "SHAREDKEY"):
        r = raw.signed("GET", "/Tables", scheme=scheme)
        check_ok(tap, r, 200, "scheme name %s (case-insensitive) -> 200" % scheme)

    # SharedKeyLite (doc/protocol.md, SharedKeyLite)
    r = raw.signed("GET", "/Tables", scheme="SharedKeyLite")
    check_ok(tap, r, 200, "251 SharedKeyLite Query Tables -> 200")
    r = raw.signed("POST", "/rawsk", scheme="SharedKeyLite",
                   body={"PartitionKey": "p", "RowKey": "lite"})
    check_ok(tap, r, 201, "SharedKeyLite Insert Entity -> 201")
    r = raw.signed("GET", "/rawsk?comp=acl", scheme="SharedKeyLite", accept="application/xml")
    check_ok(tap, r, 200, "SharedKeyLite Get Table ACL (?comp=acl signed) -> 200")
    r = raw.signed("PUT", "/rawsk(PartitionKey='p',RowKey='lite')", scheme="SharedKeyLite",
                   body={"v": 2}, headers=[("Content-Type", "application/json;odata=nometadata"),
                                           ("If-Match", "*")])
    check_ok(tap, r, 204, "SharedKeyLite: verb and Content-Type are not signed")
    r = raw.signed("GET", "/Tables", scheme="SharedKeyLite",
                   alter={"date": lambda d: flip(d, 5)})
    check_error(tap, r, 403, "AuthenticationFailed", "SharedKeyLite with the date signed one "
                "byte off -> 403 AuthenticationFailed")
    r = raw.signed("GET", "/Tables", scheme="SharedKeyLite",
                   alter={"resource": lambda s: s.replace("/Tables", "/Tablea")})
    check_error(tap, r, 403, "AuthenticationFailed", "SharedKeyLite with the path signed one "
                "byte off -> 403 AuthenticationFailed")
    r = raw.signed("GET", "/Tables", scheme="SharedKeyLite", alter={"sig": flip})
    check_error(tap, r, 403, "AuthenticationFailed", "SharedKeyLite with one byte of the "
                "signature changed -> 403 AuthenticationFailed")
    r = raw.signed("GET", "/rawsk?comp=acl", scheme="SharedKeyLite", accept="application/xml",
                   alter={"resource": lambda s: s.replace("?comp=acl", "?comp=acm")})
    check_error(tap, r, 403, "AuthenticationFailed", "SharedKeyLite with comp signed one byte "
                "off -> 403 AuthenticationFailed")
    date = h.rfc1123()
    lite_sig = hmac_b64(DEV_KEY, lite_sts(date, "/%s/%s/Tables" % (DEV, DEV)))
    r = raw.send("GET", "/%s/Tables" % DEV, raw.base_headers(date=date) +
                 [("Authorization", "SharedKey %s:%s" % (DEV, lite_sig))])
    check_error(tap, r, 403, "AuthenticationFailed", "a SharedKeyLite signature under the "
                "SharedKey scheme -> 403 AuthenticationFailed")

    # each signed component one byte off (doc/protocol.md, SharedKey)
    body = json.dumps({"PartitionKey": "p", "RowKey": "md5", "v": 1})
    md5 = base64.b64encode(hashlib.md5(body.encode()).digest()).decode()
    r = raw.signed("POST", "/rawsk", body=body, headers=[("Content-MD5", md5)])
    check_ok(tap, r, 201, "SharedKey with Content-MD5 signed -> 201")
    variants = [
        ("verb", "GET", "/Tables", None, [], {"verb": lambda v: "H" + v[1:]}),
        ("verb (POST signed as PUST)", "POST", "/rawsk",
         {"PartitionKey": "p", "RowKey": "v1"}, [], {"verb": lambda v: "PUST"}),
        ("Content-MD5", "POST", "/rawsk", json.dumps({"PartitionKey": "p", "RowKey": "m1"}),
         [("Content-MD5", base64.b64encode(hashlib.md5(json.dumps(
             {"PartitionKey": "p", "RowKey": "m1"}).encode()).digest()).decode())],
         {"md5": lambda v: flip(v, 3)}),
        ("Content-MD5 (signed empty, sent)", "POST", "/rawsk",
         json.dumps({"PartitionKey": "p", "RowKey": "m2"}),
         [("Content-MD5", base64.b64encode(hashlib.md5(json.dumps(
             {"PartitionKey": "p", "RowKey": "m2"}).encode()).digest()).decode())],
         {"md5": lambda v: ""}),
        ("Content-Type", "POST", "/rawsk", {"PartitionKey": "p", "RowKey": "c1"}, [],
         {"ctype": lambda v: v[:-1] + "N"}),
        ("Content-Type (normalised form signed)", "POST", "/rawsk",
         {"PartitionKey": "p", "RowKey": "c2"},
         [("Content-Type", "application/json;odata=nometadata")],
         {"ctype": lambda v: "application/json"}),
        ("x-ms-date", "GET", "/Tables", None, [], {"date": lambda d: flip(d, 18)}),
        ("account", "GET", "/Tables", None, [], {"account": lambda a: a[:-1] + "2"}),
        ("path", "GET", "/Tables", None, [], {"target": lambda t: t.replace("Tables", "Tablez")}),
        ("path (table name case)", "GET", "/rawsk()", None, [],
         {"target": lambda t: t.replace("rawsk", "rawsK")}),
        ("path (key)", "GET", ent, None, [], {"target": lambda t: t.replace("'1'", "'2'")}),
        ("?comp=acl value", "GET", "/rawsk?comp=acl", None, [],
         {"resource": lambda s: s.replace("?comp=acl", "?comp=acm")}),
        ("?comp=acl left out", "GET", "/rawsk?comp=acl", None, [],
         {"resource": lambda s: s.replace("?comp=acl", "")}),
        ("?comp=properties value", "GET", "/" + PROPS, None, [],
         {"resource": lambda s: s.replace("properties", "propertiez")}),
        ("signature", "GET", "/Tables", None, [], {"sig": lambda s: flip(s, 0)}),
        ("signature (last base64 digit)", "GET", "/Tables", None, [],
         {"sig": lambda s: flip(s, 42)}),
        ("account in the header", "GET", "/Tables", None, [],
         {"header_account": lambda a: a[:-1] + "2"}),
    ]
    for what, method, path, b, hdrs, alter in variants:
        accept = "application/xml" if "comp=" in path else NOMETA
        r = raw.signed(method, path, body=b, headers=hdrs, accept=accept)
        check_ok(tap, r, 201 if method == "POST" else 200,
                 "SharedKey control for %s: correctly signed -> %s" %
                 (what, 201 if method == "POST" else 200))
        if method == "POST":   # the control created the entity; remove it
            rk = json.loads(b if isinstance(b, str) else json.dumps(b))["RowKey"]
            raw.signed("DELETE", "/rawsk(PartitionKey='p',RowKey='%s')" % rk,
                       headers=[("If-Match", "*")])
        r = raw.signed(method, path, body=b, headers=hdrs, accept=accept, alter=alter)
        check_error(tap, r, 403, "AuthenticationFailed", "256 SharedKey with %s one byte off "
                    "-> 403 AuthenticationFailed" % what)
    r = raw.signed("GET", "/rawsk()")
    names = sorted(e["RowKey"] for e in r.json()["value"]) if r.status == 200 else None
    tap.eq(names, ["1", "lite", "md5"], "no refused write created an entity")

    # the error detail quotes the string the server signed (doc/protocol.md, SharedKey [OBS])
    hd, sts = sign_headers("GET", "/%s/%s" % (DEV, PROPS), raw.base_headers("application/xml"),
                           alter={"sig": flip})
    r = raw.send("GET", "/%s/%s" % (DEV, PROPS), hd)
    check_error(tap, r, 403, "AuthenticationFailed", "bad SharedKey on an XML operation: "
                "detail quotes the SharedKey string to sign",
                re.escape("Server used following string to sign: '%s'" % sts
                          .replace("&", "&amp;")))

    # dates (doc/protocol.md, Request dates)
    for minutes, ok in ((-16, False), (16, False), (-14, True), (14, True)):
        d = h.rfc1123(time.time() + minutes * 60)
        r = raw.signed("GET", "/Tables", date=d)
        if ok:
            check_ok(tap, r, 200, "x-ms-date %+d minutes -> 200" % minutes)
        else:
            check_error(tap, r, 403, "AuthenticationFailed", "257 x-ms-date %+d minutes -> 403 "
                        "AuthenticationFailed" % minutes)
    old = h.rfc1123(time.time() - 20 * 60)
    r = raw.signed("GET", "/Tables", headers=[("x-ms-date", None), ("Date", h.rfc1123())])
    check_ok(tap, r, 200, "Date header alone (no x-ms-date) is signed and accepted")
    r = raw.signed("GET", "/Tables", headers=[("Date", old)])
    check_ok(tap, r, 200, "254 x-ms-date is signed and checked, an old Date beside it is "
             "ignored")
    now = h.rfc1123()
    other = h.rfc1123(time.time() - 60)
    hd = raw.base_headers(date=now) + [("Date", other)]
    hd2, sts = sign_headers("GET", "/%s/Tables" % DEV, hd)
    r = raw.send("GET", "/%s/Tables" % DEV, hd2)
    check_ok(tap, r, 200, "both Date and x-ms-date: signed with x-ms-date -> 200")
    sig = hmac_b64(DEV_KEY, sk_sts("GET", "", "", other, "/%s/%s/Tables" % (DEV, DEV)))
    r = raw.send("GET", "/%s/Tables" % DEV, hd + [("Authorization", "SharedKey %s:%s" %
                                                   (DEV, sig))])
    check_error(tap, r, 403, "AuthenticationFailed", "254 both headers, signed with the Date "
                "value instead of x-ms-date -> 403 AuthenticationFailed")
    r = raw.signed("GET", "/Tables", headers=[("Date", now)], date=old)
    check_error(tap, r, 403, "AuthenticationFailed", "old x-ms-date with a fresh Date -> 403 "
                "(x-ms-date is the one checked)")
    r = raw.signed("GET", "/Tables", date=False)
    check_error(tap, r, 403, "AuthenticationFailed", "258 no date header -> 403 "
                "AuthenticationFailed")
    t = time.gmtime()
    if t.tm_mday < 10:
        d = h.rfc1123().replace(", 0", ", ", 1)
        r = raw.signed("GET", "/Tables", date=d)
        check_error(tap, r, 403, "AuthenticationFailed", "259 single-digit day -> 403")
    else:
        tap.diag("259 (single-digit day) needs a current date on days 1-9; the unit tests "
                 "cover it")
    r = raw.signed("GET", "/Tables", date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    check_error(tap, r, 403, "AuthenticationFailed", "ISO 8601 date instead of RFC 1123 -> 403")

    # 253: parameters other than comp do not enter the string to sign
    for path, signed_as in (("/Tables?$top=1", "/Tables"),
                            ("/rawsk()?$filter=RowKey%20eq%20'1'&$select=v", "/rawsk()"),
                            ("/rawsk?comp=acl&timeout=30", "/rawsk?comp=acl"),
                            ("/rawsk?timeout=30&comp=acl", "/rawsk?comp=acl")):
        accept = "application/xml" if "comp=" in path else NOMETA
        r = raw.signed("GET", path, accept=accept,
                       alter={"target": lambda t, s=signed_as: "/" + DEV + s})
        check_ok(tap, r, 200, "253 %s signed as %s -> 200" % (path, signed_as))
    r = raw.signed("GET", "/rawsk?comp=acl&timeout=30", accept="application/xml",
                   alter={"resource": lambda s: s + "\ntimeout:30"})
    check_error(tap, r, 403, "AuthenticationFailed", "a Blob-style canonicalized query "
                "(\\ntimeout:30) is not the Table string to sign -> 403")

    # host-style (252) and the second account's secondary key over raw HTTP
    hd, _ = sign_headers("GET", "/Tables", raw.base_headers())
    r = raw.send("GET", "/Tables", [("Host", "%s.table.localhost:%d" % (DEV, c.srv.port))] + hd)
    check_ok(tap, r, 200, "252 host-style request signed with /ACCOUNT/Tables -> 200")
    r = raw.signed("GET", "/Tables", account=ACCT2, key=ACCT2_KEY2)
    check_ok(tap, r, 200, "255 hand-signed with the second account's secondary key -> 200")
    r = raw.signed("GET", "/Tables", account=ACCT2, key=ACCT2_KEY1, scheme="SharedKeyLite")
    check_ok(tap, r, 200, "SharedKeyLite with the second account's primary key -> 200")
    r = raw.signed("GET", "/Tables", account=ACCT2, key=DEV_KEY)
    check_error(tap, r, 403, "AuthenticationFailed", "second account signed with the dev key "
                "-> 403")

    # no credentials (260)
    r = raw.send("GET", "/%s/Tables" % DEV, raw.base_headers(version="2019-02-02"))
    check_error(tap, r, 403, "AuthenticationFailed", "260 no credentials, x-ms-version "
                "2019-02-02 -> 403 AuthenticationFailed")
    r = raw.send("GET", "/%s/Tables" % DEV, raw.base_headers(version="2020-12-06"))
    check_error(tap, r, 401, "InvalidAuthenticationInfo", "260 no credentials, x-ms-version "
                "2020-12-06 -> 401 InvalidAuthenticationInfo")
    tap.ok((r.h("WWW-Authenticate") or "").startswith(
        "Bearer authorization_uri=https://login.microsoftonline.com/"),
        "... with a Bearer WWW-Authenticate challenge", repr(r.headers))
    r = raw.send("GET", "/%s/Tables" % DEV, raw.base_headers() +
                 [("Authorization", "SharedKey %s" % DEV)])
    check_error(tap, r, 400, "InvalidAuthenticationInfo", "Authorization without ':SIGNATURE' "
                "-> 400 InvalidAuthenticationInfo")
    r = raw.send("GET", "/%s/Tables" % DEV, raw.base_headers() +
                 [("Authorization", "SharedKeyX %s:%s" % (DEV, "A" * 43 + "="))])
    check_error(tap, r, 400, "InvalidAuthenticationInfo", "unknown Authorization scheme -> 400 "
                "InvalidAuthenticationInfo")
    c.alive("refused SharedKey requests")
    raw.signed("DELETE", "/Tables('rawsk')")


# --------------------------------------------------------------------------
# HTTPS with a self-signed certificate


def start_tls_server(tap, cert, key):
    """tabled with HTTPS on a free port (--tls-port 0 means "off", see
    --help); a few tries in case another process takes the port first."""
    last = None
    for _ in range(5):
        port = h.free_port()
        srv = h.Server(args=["--tls-port", str(port), "--tls-cert", cert, "--tls-key", key])
        try:
            srv.start()
            return srv, port
        except h.ServerError as e:
            last = e
    tap.ok(False, "tabled starts with HTTPS", str(last))
    return None, None


def tabled_start_failure(args, timeout=10):
    """Runs tabled with args that must make it fail at start: (exit status
    or None when it kept running, output)."""
    tmp = tempfile.mkdtemp(prefix="tabled-auth-")
    try:
        p = subprocess.Popen([h.tabled_path(), "--port", "0", "--backend", "memory",
                              "--log-level", "warn"] + args, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, cwd=tmp)
        try:
            out, _ = p.communicate(timeout=timeout)
            return p.returncode, out.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            return None, out.decode("utf-8", "replace")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_https(tap):
    try:
        subprocess.run(["openssl", "version"], check=True, stdout=subprocess.DEVNULL,
                       timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        tap.ok(False, "openssl CLI available for the HTTPS checks", str(e))
        return
    tmp = tempfile.mkdtemp(prefix="tabled-auth-tls-")
    try:
        _test_https(tap, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _test_https(tap, tmp):
    cert, key = h.make_cert(tmp, "a")
    cert_b, key_b = h.make_cert(tmp, "b")
    garbage = os.path.join(tmp, "garbage.pem")
    with open(garbage, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")

    # start-up failures: non-zero exit with a message naming the problem
    for what, args, want, words in [
        ("missing certificate file", ["--tls-cert", os.path.join(tmp, "nope.pem"),
                                      "--tls-key", key], "nope.pem", r"certificate"),
        ("garbage certificate file", ["--tls-cert", garbage, "--tls-key", key], "garbage.pem",
         r"certificate"),
        ("garbage key file", ["--tls-cert", cert, "--tls-key", garbage], "garbage.pem", r"key"),
        ("key of another certificate", ["--tls-cert", cert, "--tls-key", key_b], "b-key.pem",
         r"match"),
        ("certificate file given as key", ["--tls-cert", cert, "--tls-key", cert], "a-cert.pem",
         r"key"),
    ]:
        rc, out = tabled_start_failure(["--tls-port", str(h.free_port())] + args)
        tap.ok(rc not in (None, 0) and "ready at" not in out and want in out and
               re.search(words, out, re.I) and not h.SANITIZER_RE.search(out),
               "tabled refuses to start with a %s (exit %s, message names the file and the "
               "problem)" % (what, rc), out[-1500:])
    rc, out = tabled_start_failure(["--tls-port", str(h.free_port()), "--tls-cert", cert])
    tap.ok(rc not in (None, 0) and "ready at" not in out,
           "tabled refuses --tls-port with --tls-cert but no --tls-key (exit %s)" % rc,
           out[-1500:])

    off = h.Server(args=["--tls-port", "0", "--tls-cert", cert, "--tls-key", key])
    try:
        off.start()
        tap.ok(not any("HTTPS endpoint" in line for line in off.stdout_lines),
               "--tls-port 0 means HTTPS off, as --help says: no HTTPS endpoint line",
               off.stdout_lines)
        off.stop()
    except h.ServerError as e:
        tap.ok(False, "--tls-port 0 means HTTPS off, as --help says", str(e))

    srv, port = start_tls_server(tap, cert, key)
    if srv is None:
        return
    try:
        banner = "\n".join(srv.stdout_lines)
        m = re.search(r"^HTTPS endpoint:\s+https://127\.0\.0\.1:(\d+)/%s$" % DEV, banner, re.M)
        tap.ok(m is not None and int(m.group(1)) == port,
               "the banner prints 'HTTPS endpoint: https://127.0.0.1:%d/%s'" % (port, DEV),
               banner)
        _https_sdk(tap, srv, port, cert, cert_b)
        _https_tls_versions(tap, port, cert)
    finally:
        srv.stop_and_check(tap)


def _https_sdk(tap, srv, port, cert, cert_b):
    ep = "https://127.0.0.1:%d/%s" % (port, DEV)
    conn = ("DefaultEndpointsProtocol=https;AccountName=%s;AccountKey=%s;TableEndpoint=%s;"
            % (DEV, DEV_KEY, ep))
    kw = dict(CLIENT_KW, connection_verify=cert)
    svc = TableServiceClient.from_connection_string(conn, **kw)
    sdk_ok(tap, "HTTPS SDK: create_table", lambda: svc.create_table("tlstbl"))
    tc = svc.get_table_client("tlstbl")
    e0 = {"PartitionKey": "p", "RowKey": "1", "v": 1, "s": "x"}
    sdk_ok(tap, "HTTPS SDK: create_entity", lambda: tc.create_entity(e0))
    sdk_ok(tap, "HTTPS SDK: get_entity", lambda: tc.get_entity("p", "1"),
           lambda e: e["v"] == 1 and e["s"] == "x")
    sdk_ok(tap, "HTTPS SDK: update_entity (replace)",
           lambda: tc.update_entity({"PartitionKey": "p", "RowKey": "1", "v": 2},
                                    mode=UpdateMode.REPLACE))
    sdk_ok(tap, "HTTPS SDK: update_entity (merge)",
           lambda: tc.update_entity({"PartitionKey": "p", "RowKey": "1", "m": 3}))
    sdk_ok(tap, "HTTPS SDK: replace then merge are visible", lambda: tc.get_entity("p", "1"),
           lambda e: e["v"] == 2 and e["m"] == 3 and "s" not in e)
    sdk_ok(tap, "HTTPS SDK: upsert_entity (replace)",
           lambda: tc.upsert_entity({"PartitionKey": "p", "RowKey": "2", "v": 5},
                                    mode=UpdateMode.REPLACE))
    sdk_ok(tap, "HTTPS SDK: upsert_entity (merge)",
           lambda: tc.upsert_entity({"PartitionKey": "p", "RowKey": "2", "w": 6}))
    sdk_ok(tap, "HTTPS SDK: query_entities", lambda: list(tc.query_entities("v ge 2")),
           lambda es: keys_of(es) == [("p", "1"), ("p", "2")] and
           [e.get("w") for e in sorted(es, key=lambda e: e["RowKey"])] == [None, 6])
    sdk_ok(tap, "HTTPS SDK: submit_transaction",
           lambda: tc.submit_transaction([("create", {"PartitionKey": "p", "RowKey": "3"}),
                                          ("delete", {"PartitionKey": "p", "RowKey": "2"})]))
    sdk_ok(tap, "HTTPS SDK: delete_entity", lambda: tc.delete_entity("p", "1"))
    sdk_ok(tap, "HTTPS SDK: list_entities after the deletes", lambda: keys_of(tc.list_entities()),
           lambda k: k == [("p", "3")])

    # SAS over HTTPS: spr=https works here (276's counterpart)
    now = datetime.datetime.now(UTC)
    cred = AzureNamedKeyCredential(DEV, DEV_KEY)
    tsas = generate_table_sas(cred, "tlstbl", permission=TableSasPermissions(_str="raud"),
                              expiry=now + datetime.timedelta(hours=1), protocol="https")
    st = TableClient(ep, "tlstbl", credential=AzureSasCredential(tsas), **kw)
    sdk_ok(tap, "HTTPS: table SAS spr=https: insert and read",
           lambda: (st.create_entity({"PartitionKey": "p", "RowKey": "sas"}),
                    st.get_entity("p", "sas"))[1], lambda e: e["RowKey"] == "sas")
    asas = generate_account_sas(cred, ResourceTypes.from_string("sco"),
                                AccountSasPermissions.from_string("rwdlacu"),
                                now + datetime.timedelta(hours=1), protocol="https")
    sa = TableServiceClient(ep, credential=AzureSasCredential(asas), **kw)
    sdk_ok(tap, "HTTPS: account SAS spr=https: list_tables",
           lambda: [t.name for t in sa.list_tables()], lambda n: n == ["tlstbl"])
    plain = TableClient("http://%s:%d/%s" % (srv.host, srv.port, DEV), "tlstbl",
                        credential=AzureSasCredential(tsas), **CLIENT_KW)
    sdk_error(tap, "the same spr=https SAS over the server's HTTP port -> 403 "
              "AuthorizationProtocolMismatch", lambda: plain.get_entity("p", "sas"), 403,
              "AuthorizationProtocolMismatch")
    # a raw SharedKey request over TLS, and a one-byte-off one
    ctx = ssl.create_default_context(cafile=cert)
    raw = Raw("127.0.0.1", port, ctx)
    r = raw.signed("GET", "/tlstbl(PartitionKey='p',RowKey='3')")
    check_ok(tap, r, 200, "HTTPS: hand-signed SharedKey Get Entity -> 200")
    r = raw.signed("GET", "/tlstbl(PartitionKey='p',RowKey='3')", alter={"sig": flip})
    check_error(tap, r, 403, "AuthenticationFailed", "HTTPS: one byte of the signature changed "
                "-> 403 AuthenticationFailed")
    # big bodies both ways through the TLS layer
    big = {"PartitionKey": "big", "RowKey": "1"}
    for i in range(14):
        big["s%02d" % i] = "".join(chr(0x41 + (i + j) % 26) for j in range(30000))
    big["bin"] = bytes(range(256)) * 200
    sdk_ok(tap, "HTTPS SDK: upsert of a ~470 KB entity",
           lambda: tc.upsert_entity(big, mode=UpdateMode.REPLACE))
    sdk_ok(tap, "HTTPS SDK: the big entity reads back intact", lambda: tc.get_entity("big", "1"),
           lambda e: all(e[k] == v for k, v in big.items() if k.startswith("s")) and
           bytes(e["bin"].value if hasattr(e["bin"], "value") else e["bin"]) == big["bin"])
    for b in range(5):
        tc.submit_transaction([("create", {"PartitionKey": "many", "RowKey": "%04d" % (b * 100 + i),
                                           "pad": "x" * 500}) for i in range(100)])
    sdk_ok(tap, "HTTPS SDK: 500 entities in pages of 1000 (~300 KB response)",
           lambda: sum(1 for _ in tc.query_entities("PartitionKey eq 'many'",
                                                   results_per_page=1000)),
           lambda n: n == 500)
    # a client that speaks plain HTTP, or stops mid-handshake, to the TLS port
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: x\r\n\r\n")
        data, closed = b"", False
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    closed = True
                    break
                data += chunk
        except ConnectionResetError:
            closed = True
        except OSError:
            pass
        tap.ok(closed and b"devstoreaccount1" not in data and b"200 OK" not in data,
               "plain HTTP on the HTTPS port: connection closed, no data served",
               repr(data[:200]))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40)
    sdk_ok(tap, "HTTPS SDK still works after broken TLS clients",
           lambda: [t.name for t in svc.list_tables()], lambda n: n == ["tlstbl"])
    sdk_ok(tap, "HTTPS SDK: delete_table", lambda: svc.delete_table("tlstbl"))
    sdk_ok(tap, "HTTPS SDK: the table is gone", lambda: [t.name for t in svc.list_tables()],
           lambda n: n == [])

    # the certificate really is the one checked
    other = TableServiceClient.from_connection_string(conn, **dict(CLIENT_KW,
                                                                   connection_verify=cert_b))
    try:
        list(other.list_tables())
        tap.ok(False, "HTTPS SDK trusting another certificate fails verification",
               "no error")
    except ServiceRequestError as e:
        tap.ok("CERTIFICATE_VERIFY_FAILED" in str(e) or "certificate verify failed" in str(e),
               "HTTPS SDK trusting another certificate fails verification", str(e)[:500])
    except Exception as e:  # noqa: BLE001
        tap.ok(False, "HTTPS SDK trusting another certificate fails verification",
               "%s: %s" % (type(e).__name__, str(e)[:500]))
    r = Raw(srv.host, srv.port).signed("GET", "/Tables")
    check_ok(tap, r, 200, "the HTTP port keeps working beside HTTPS")


def _https_tls_versions(tap, port, cert):
    """TLS 1.2 and 1.3 are accepted; anything older is refused."""
    for name, ver in (("TLS 1.2", ssl.TLSVersion.TLSv1_2), ("TLS 1.3", ssl.TLSVersion.TLSv1_3)):
        ctx = ssl.create_default_context(cafile=cert)
        ctx.minimum_version = ctx.maximum_version = ver
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                with ctx.wrap_socket(s, server_hostname="127.0.0.1") as ss:
                    tap.eq(ss.version(), name.replace(" ", "v"), "%s handshake succeeds" % name)
        except (ssl.SSLError, OSError) as e:
            tap.ok(False, "%s handshake succeeds" % name, str(e))
    for name, attr in (("TLS 1.1", "TLSv1_1"), ("TLS 1.0", "TLSv1")):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(cert)
        try:
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                ver = getattr(ssl.TLSVersion, attr)
                ctx.minimum_version = ver
                ctx.maximum_version = ver
        except (ValueError, ssl.SSLError, AttributeError) as e:
            tap.diag("skip: this Python/OpenSSL cannot configure a %s client (%s)" % (name, e))
            continue
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                with ctx.wrap_socket(s, server_hostname="127.0.0.1") as ss:
                    tap.ok(False, "%s is refused by the server" % name,
                           "handshake succeeded with %s" % ss.version())
        except ssl.SSLError as e:
            text = str(e)
            if "NO_PROTOCOLS_AVAILABLE" in text or "no protocols available" in text:
                tap.diag("skip: the local OpenSSL refuses to offer %s (%s); the server's "
                         "minimum version cannot be probed from here" % (name, text))
                continue
            # an alert is sent by the peer: the server refused the version
            tap.ok(re.search(r"ALERT_PROTOCOL_VERSION|alert protocol version", text) is not None,
                   "%s is refused by the server (protocol_version alert)" % name, text)
        except OSError as e:
            tap.ok(True, "%s is refused by the server (connection dropped: %s)" % (name, e))


# --------------------------------------------------------------------------
# Bearer tokens (--oauth basic): doc/protocol-notes.md


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def make_jwt(nbf, exp, aud="https://storage.azure.com",
             iss="https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/"):
    """An unsigned-looking JWT whose claims pass the basic check."""
    head = b64url(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    body = b64url(json.dumps({"aud": aud, "iss": iss, "nbf": int(nbf), "exp": int(exp),
                              "iat": int(nbf), "oid": "x"}).encode())
    return "%s.%s.c2lnbmF0dXJl" % (head, body)


class TokenCred:
    """A token credential handing out one fixed token (an SDK then signs
    nothing and, in the JS and .NET SDKs, sends no date)."""

    def __init__(self, token, exp):
        from azure.core.credentials import AccessToken
        self.tok = AccessToken(token, int(exp))

    def get_token(self, *scopes, **kw):
        return self.tok


def test_bearer(tap):
    try:
        subprocess.run(["openssl", "version"], check=True, stdout=subprocess.DEVNULL,
                       timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        tap.ok(False, "openssl CLI available for the bearer checks", str(e))
        return
    tmp = tempfile.mkdtemp(prefix="tabled-auth-bearer-")
    try:
        _test_bearer(tap, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


ACL_BODY = ('<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier>'
            '<Id>bearerpolicy</Id><AccessPolicy><Start>2026-01-01T00:00:00Z</Start>'
            '<Expiry>2099-01-01T00:00:00Z</Expiry><Permission>r</Permission></AccessPolicy>'
            '</SignedIdentifier></SignedIdentifiers>')


def _test_bearer(tap, tmp):
    cert, key = h.make_cert(tmp, "bearer")
    srv = None
    for _ in range(5):
        port = h.free_port()
        srv = h.Server(args=["--tls-port", str(port), "--tls-cert", cert, "--tls-key", key,
                             "--oauth", "basic"])
        try:
            srv.start()
            break
        except h.ServerError as e:
            srv, last = None, e
    if srv is None:
        tap.ok(False, "tabled starts with HTTPS and --oauth basic", str(last))
        return
    try:
        now = time.time()
        tok = make_jwt(now - 300, now + 3600)
        raw = Raw("127.0.0.1", port, ssl.create_default_context(cafile=cert))

        def bearer(method, path, body=None, date=False, token=tok, extra=(), via=raw,
                   accept=NOMETA):
            hd = via.base_headers(accept=accept, date=date, version="2020-12-06")
            hd.append(("Authorization", "Bearer " + token))
            hd.extend(extra)
            if body is not None and not any(k.lower() == "content-type" for k, _ in extra):
                hd.append(("Content-Type", "application/json"))
            return via.send(method, "/%s%s" % (DEV, path), hd, body)

        # The SDKs send no x-ms-date / Date with a token credential, and the
        # service accepts that (recorded traffic, doc/protocol-notes.md).
        r = bearer("GET", "/Tables")
        check_ok(tap, r, 200, "Bearer Query Tables without x-ms-date or Date -> 200")
        r = bearer("POST", "/Tables", json.dumps({"TableName": "bearertbl"}))
        check_ok(tap, r, 201, "Bearer Create Table without a date -> 201")
        r = bearer("POST", "/bearertbl", json.dumps({"PartitionKey": "p", "RowKey": "1"}))
        check_ok(tap, r, 201, "Bearer Insert Entity without a date -> 201")
        r = bearer("GET", "/bearertbl()")
        tap.ok(r.status == 200 and [e["RowKey"] for e in r.json()["value"]] == ["1"],
               "Bearer Query Entities without a date -> 200 with the entity",
               "status %s body %r" % (r.status, r.body[:300]))
        r = bearer("GET", "/Tables", date="Mon, 01 Jan 2001 00:00:00 GMT")
        check_ok(tap, r, 200, "Bearer with a stale x-ms-date -> 200 (the token's lifetime "
                 "is the time check)")
        old = make_jwt(now - 7200, now - 600)
        r = bearer("GET", "/Tables", token=old)
        tap.ok(r.status == 401 and "invalid_token" in (r.h("WWW-Authenticate") or ""),
               "an expired token without a date -> 401 with the invalid_token challenge",
               "status %s %r" % (r.status, r.h("WWW-Authenticate")))
        plain = Raw(srv.host, srv.port)
        r = bearer("GET", "/Tables", via=plain)
        check_error(tap, r, 403, "AuthenticationFailed",
                    "Bearer without a date over HTTP -> 403 AuthenticationFailed")

        # Get/Set Table ACL take bearer tokens since the service's 2025
        # change (doc/protocol-notes.md, "Table ACL and bearer tokens").
        r = bearer("PUT", "/bearertbl?comp=acl", ACL_BODY,
                   extra=[("Content-Type", "application/xml")], accept="application/xml")
        check_ok(tap, r, 204, "Bearer Set Table ACL without a date -> 204")
        r = bearer("GET", "/bearertbl?comp=acl", accept="application/xml")
        tap.ok(r.status == 200 and b"<Id>bearerpolicy</Id>" in r.body,
               "Bearer Get Table ACL without a date -> 200 with the policy",
               "status %s body %r" % (r.status, r.body[:300]))
        r = bearer("GET", "/bearertbl?comp=acl", date=h.rfc1123(), accept="application/xml")
        tap.ok(r.status == 200 and b"<Id>bearerpolicy</Id>" in r.body,
               "Bearer Get Table ACL with a date -> 200 with the policy",
               "status %s body %r" % (r.status, r.body[:300]))

        # The Python SDK with a token credential (it happens to send a date)
        if IMPORT_ERROR is not None:
            return
        ep = "https://127.0.0.1:%d/%s" % (port, DEV)
        kw = dict(CLIENT_KW, connection_verify=cert)
        cred = TokenCred(tok, now + 3600)
        svc = TableServiceClient(ep, credential=cred, **kw)
        sdk_ok(tap, "SDK token credential: create_table", lambda: svc.create_table("sdkbearer"))
        tc = TableClient(ep, "sdkbearer", credential=cred, **kw)
        sdk_ok(tap, "SDK token credential: create_entity",
               lambda: tc.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 1}))
        sdk_ok(tap, "SDK token credential: query_entities",
               lambda: [e["RowKey"] for e in tc.query_entities("v eq 1")],
               lambda ks: ks == ["r"])
        sdk_ok(tap, "SDK token credential: set_table_access_policy",
               lambda: tc.set_table_access_policy(
                   {"pol": TableAccessPolicy(permission="r",
                                             expiry=datetime.datetime(2099, 1, 1, tzinfo=UTC))}))
        sdk_ok(tap, "SDK token credential: get_table_access_policy",
               lambda: tc.get_table_access_policy(),
               lambda p: list(p) == ["pol"] and p["pol"].permission == "r")
        sdk_ok(tap, "SDK token credential: delete_table", lambda: svc.delete_table("sdkbearer"))
    finally:
        srv.stop_and_check(tap)


def test_unknown_account_noauth(tap):
    """With --auth off nothing is signed: an unknown account in the URL is a
    missing resource (404 ResourceNotFound), and the dev account works."""
    srv = h.Server(args=["--auth", "off"]).start()
    try:
        raw = Raw(srv.host, srv.port)
        r = raw.send("GET", "/nosuchacct/Tables", raw.base_headers())
        check_error(tap, r, 404, "ResourceNotFound",
                    "--auth off: unknown account in the URL -> 404 ResourceNotFound")
        r = raw.send("GET", "/%s/Tables" % DEV, raw.base_headers())
        tap.eq(r.status, 200, "--auth off: an unsigned Query Tables on the dev account -> 200")
    finally:
        srv.stop_and_check(tap)


def main():
    tap = h.Tap()
    if IMPORT_ERROR is not None:
        tap.ok(False, "import azure.data.tables", str(IMPORT_ERROR))
        tap.done()
    check_spec_vectors(tap)
    try:
        # devstoreaccount1 beside a configured account needs --dev-account on
        srv = h.Server(args=["--dev-account", "on",
                             "--account", "%s:%s:%s" % (ACCT2, ACCT2_KEY1, ACCT2_KEY2)]).start()
    except h.ServerError as e:
        tap.ok(False, "server starts", str(e))
        tap.done()
    h.watchdog(150, srv, tap)
    c = Ctx(tap, srv)
    tap.run(test_sdk_credentials, c)
    tap.run(test_account_sas, c)
    tap.run(test_table_sas, c)
    tap.run(test_range_edges, c)
    tap.run(test_policy_sas, c)
    tap.run(test_sas_validity, c)
    tap.run(test_sas_forms, c)
    tap.run(test_sharedkey_raw, c)
    srv.stop_and_check(tap)
    tap.run(test_https, tap)
    tap.run(test_bearer, tap)
    tap.run(test_unknown_account_noauth, tap)
    tap.done()


if __name__ == "__main__":
    main()
