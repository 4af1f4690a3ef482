#!/usr/bin/python3
"""Integration test: deeply nested and NUL-holding JSON at every JSON entry
point (issue 13, points 1 and 8).

1 MB of nested brackets, both [[[...]]] and {"a":{"a":...}} and both alone
and inside an otherwise valid body, goes to Create Table, Insert, Update
(PUT), Merge (MERGE and PATCH), a $batch changeset part, and the admin
listener's PUT /faults/NAME and PUT /faults; each must be answered with the
operation's 400 for malformed JSON (InvalidInput; the admin's JSON error)
and the server must go on answering. The XML bodies of Set Table ACL and Set
Service Properties get 1 MB of nested elements the same way. A TableName
holding "\\u0000" is InvalidResourceName and creates no table.
Prints TAP; exit status 1 when a check fails."""
import http.client
import json
import os
import re
import sys
import time

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

MB = 1 << 20
TABLE = "deepjson"
KEYS = "(PartitionKey='p',RowKey='r')"


def nested(kind, size=MB):
    """size bytes (about) of well-formed nesting: every level closed."""
    if kind == "array":
        n = size // 2
        return b"[" * n + b"]" * n
    n = size // 6
    return b'{"a":' * n + b"1" + b"}" * n


def in_entity(deep):
    """A valid entity whose ignored odata.* member holds deep."""
    return b'{"PartitionKey":"p","RowKey":"r","odata.x":' + deep + b"}"


def in_table_body(deep):
    """A valid Create Table body whose other member holds deep."""
    return b'{"TableName":"deepok","Other":' + deep + b"}"


def admin_port(srv, timeout=3.0):
    """The admin port from the 'Admin endpoint:' banner line."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for line in list(srv.stdout_lines):
            m = re.search(r"Admin endpoint:\s+http://[^:]+:(\d+)/metrics", line)
            if m:
                return int(m.group(1))
        time.sleep(0.05)
    raise h.ServerError("no Admin endpoint line: %r" % srv.stdout_lines)


def admin_call(srv, port, method, path, body=None):
    """(status, body bytes) of one admin request."""
    c = http.client.HTTPConnection(srv.host, port, timeout=30)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def batch_body(method, url, body):
    """A $batch body with one changeset part method url carrying body."""
    head = ("--batch_b1\r\nContent-Type: multipart/mixed; boundary=changeset_c1\r\n\r\n"
            "--changeset_c1\r\nContent-Type: application/http\r\n"
            "Content-Transfer-Encoding: binary\r\n\r\n"
            "%s %s HTTP/1.1\r\nContent-Type: application/json\r\nAccept: "
            "application/json;odata=minimalmetadata\r\n\r\n" % (method, url)).encode()
    return head + body + b"\r\n--changeset_c1--\r\n--batch_b1--\r\n"


class Check:
    def __init__(self, tap, srv, http, aport):
        self.tap, self.srv, self.http, self.aport = tap, srv, http, aport

    def alive(self, what):
        """The server still answers on both listeners after what."""
        ok = self.srv.alive()
        r = None
        if ok:
            try:
                r = self.http.get("/Tables('%s')" % TABLE)
                st, _ = admin_call(self.srv, self.aport, "GET", "/healthz")
                ok = r.status == 200 and st == 200
            except OSError as e:
                ok, r = False, e
        self.tap.ok(ok, "server alive after %s" % what,
                    "%r\n%s" % (r, self.srv.stderr_text()[-3000:]))
        return ok

    def table_error(self, method, path, body, code, what):
        """A Table service request answered 400 code."""
        r = self.http.request(method, path, body=body, timeout=60)
        self.tap.ok(r.status == 400 and r.error_code() == code,
                    "%s -> 400 %s" % (what, code), "%s %r" % (r.status, r.body[:300]))
        return self.alive(what)


def deep_table_ops(c):
    """Create Table, Insert, Update, Merge and a batch part, each with 1 MB
    of nesting alone and inside a valid body."""
    ent = c.http.entity_path(TABLE, "p", "r")
    for kind in ("array", "object"):
        deep = nested(kind)
        shape = "1 MB of %s" % ("[[...]]" if kind == "array" else '{"a":{"a":...}}')
        for body, where in ((deep, "alone"), (None, "in a valid body")):
            table_body = body if body is not None else in_table_body(deep)
            ent_body = body if body is not None else in_entity(deep)
            if not c.table_error("POST", "/Tables", table_body, "InvalidInput",
                                 "Create Table with %s %s" % (shape, where)):
                return
            for method, path, name in (("POST", "/" + TABLE, "Insert Entity"),
                                       ("PUT", ent, "Update Entity (PUT)"),
                                       ("MERGE", ent, "Merge Entity (MERGE)"),
                                       ("PATCH", ent, "Merge Entity (PATCH)")):
                if not c.table_error(method, path, ent_body, "InvalidInput",
                                     "%s with %s %s" % (name, shape, where)):
                    return
            # the same in a $batch changeset part (Insert and Merge)
            for method, url in (("POST", "%s/%s" % (c.srv.base, TABLE)),
                                ("MERGE", "%s/%s%s" % (c.srv.base, TABLE, KEYS))):
                r = c.http.request("POST", "/$batch", body=batch_body(method, url, ent_body),
                                   content_type="multipart/mixed; boundary=batch_b1",
                                   timeout=60)
                text = r.body.decode("utf-8", "replace")
                c.tap.ok(r.status == 202 and "HTTP/1.1 400 " in text
                         and '"code":"InvalidInput"' in text,
                         "$batch %s part with %s %s -> 202, part 400 InvalidInput"
                         % (method, shape, where), "%s %r" % (r.status, r.body[:600]))
                if not c.alive("$batch %s part with %s %s" % (method, shape, where)):
                    return
    r = c.http.get_entity(TABLE, "p", "r")
    c.tap.eq(r.status, 404, "no entity was written by any deep body")
    r = c.http.get("/Tables('deepok')")
    c.tap.eq(r.status, 404, "no table was created by any deep body")


def deep_admin(c):
    """The admin listener's JSON bodies: PUT /faults/NAME and PUT /faults."""
    for kind in ("array", "object"):
        deep = nested(kind)
        for path in ("/faults/deep", "/faults"):
            st, body = admin_call(c.srv, c.aport, "PUT", path, deep)
            c.tap.ok(st == 400 and b"nested deeper than" in body,
                     "admin PUT %s with 1 MB of %s nesting -> 400" % (path, kind),
                     "%s %r" % (st, body[:300]))
            if not c.alive("admin PUT %s with 1 MB of %s nesting" % (path, kind)):
                return
    rule = b'{"name":"deep","busy":0.5,"x":' + nested("array", 8192) + b"}"
    st, body = admin_call(c.srv, c.aport, "PUT", "/faults/deep", rule)
    c.tap.ok(st == 400, "admin PUT /faults/NAME with nesting inside a rule -> 400",
             "%s %r" % (st, body[:300]))
    st, body = admin_call(c.srv, c.aport, "GET", "/faults")
    c.tap.ok(st == 200 and json.loads(body) in ([], {"rules": []}),
             "no fault rule was made by a deep body", "%s %r" % (st, body[:300]))


def deep_xml(c):
    """Set Table ACL and Set Service Properties (XML, not JSON) with 1 MB of
    nested elements: refused with a 4xx, the server alive."""
    deep = b"<a>" * (MB // 7) + b"</a>" * (MB // 7)
    for path, what in (("/%s?comp=acl" % TABLE, "Set Table ACL"),
                       ("/?restype=service&comp=properties", "Set Table Service Properties")):
        doc = b'<?xml version="1.0" encoding="utf-8"?>' + deep
        r = c.http.request("PUT", path, body=doc, content_type="application/xml", timeout=60)
        c.tap.ok(400 <= r.status < 500, "%s with 1 MB of nested elements -> 4xx" % what,
                 "%s %r" % (r.status, r.body[:300]))
        if not c.alive("%s with 1 MB of nested elements" % what):
            return


def nul_names(c):
    """A NUL in a TableName is a character outside the name pattern (issue
    13 point 8): never a shorter name."""
    for body, code, what in (
            ('{"TableName":"tab\\u0000le"}', "InvalidResourceName", "tab\\u0000le"),
            ('{"TableName":"abc\\u0000"}', "InvalidResourceName", "abc\\u0000"),
            ('{"TableName":"\\u0000abcd"}', "InvalidResourceName", "\\u0000abcd"),
            ('{"TableName":"a\\u0000"}', "OutOfRangeInput", "a\\u0000 (length first)")):
        c.table_error("POST", "/Tables", body, code, "Create Table %s" % what)
    for name in ("tab", "abc"):
        r = c.http.get("/Tables('%s')" % name)
        c.tap.eq(r.status, 404, "no table %s was created" % name)
    r = c.http.request("POST", "/" + TABLE,
                       body='{"PartitionKey":"p","RowKey":"r","a\\u0000b":1}')
    c.tap.ok(r.status == 400 and r.error_code() == "PropertyNameInvalid",
             "a property name holding \\u0000 -> 400 PropertyNameInvalid",
             "%s %r" % (r.status, r.body[:300]))
    st, body = admin_call(c.srv, c.aport, "PUT", "/faults/foo",
                          b'{"name":"foo\\u0000bar","busy":0.5}')
    c.tap.eq(st, 400, "admin: a rule name holding \\u0000 -> 400")
    st, body = admin_call(c.srv, c.aport, "PUT", "/faults/foo%00bar", b'{"busy":0.5}')
    c.tap.eq(st, 404, "admin: %00 in the rule path names no rule")
    st, body = admin_call(c.srv, c.aport, "GET", "/faults/foo")
    c.tap.eq(st, 404, "admin: no rule foo was made")


def main():
    tap = h.Tap()
    srv = h.Server(args=["--admin-port", "0"])
    h.watchdog(240, srv, tap)
    srv.start()
    try:
        http = h.Http(srv)
        r = http.create_table(TABLE)
        tap.eq(r.status, 201, "create table %s" % TABLE)
        c = Check(tap, srv, http, admin_port(srv))
        for fn in (deep_table_ops, deep_admin, deep_xml, nul_names):
            if srv.alive():
                tap.run(fn, c)
    finally:
        srv.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
