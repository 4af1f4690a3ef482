#!/usr/bin/python3
"""Integration test: service versions (doc/protocol.md, Service versions, issue 14 point 10), raw
requests against two servers: the default one accepts any well-formed
x-ms-version from 2009-04-14 on (a newer one acts as the newest known, one
between known versions as the nearest older known one, and the answer
echoes it as sent); one started with --strict-versions refuses versions it
does not know, as the cloud does.  Prints TAP; exit status 1 on failure."""
import os
import re
import sys

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

BAD_HEADER = "The value for one of the HTTP headers is not in the correct format."
NEWEST = "2026-06-06"


def with_version(v):
    return {"x-ms-version": v}


def check_error(tap, r, status, code, message, what):
    """Status, code, message (before RequestId) and the echoed headers."""
    got_code, msg = r.error()
    first = msg.split("\n", 1)[0] if msg else None
    tap.ok((r.status, got_code, first) == (status, code, message) and
           r.h("Content-Type", "").startswith("application/json") and
           r.has("x-ms-request-id"), "%s -> %d %s" % (what, status, code),
           "got %s %s %r (%s)" % (r.status, got_code, first, r.h("Content-Type")))


def check_tables(tap, r, echo, what):
    """A 200 Query Tables answer in JSON echoing x-ms-version echo."""
    ok = r.status == 200 and r.h("x-ms-version") == echo
    try:
        ok = ok and isinstance(r.json()["value"], list)
    except ValueError:
        ok = False
    tap.ok(ok and r.h("Content-Type", "").startswith("application/json;odata=minimalmetadata"),
           "%s -> 200, x-ms-version: %s" % (what, echo),
           "got %s x-ms-version %r %r" % (r.status, r.h("x-ms-version"), r.body[:300]))


def dup_batch(http, table, version):
    """A changeset inserting one entity twice under x-ms-version version;
    returns the error code of its only part (or the outer status)."""
    part = ("--cs\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n"
            "\r\nPOST %s/%s HTTP/1.1\r\nContent-Type: application/json\r\n"
            "Accept: application/json;odata=minimalmetadata\r\n\r\n"
            '{"PartitionKey":"p","RowKey":"r"}\r\n' % ("/" + h.DEV_ACCOUNT, table))
    body = ("--b\r\nContent-Type: multipart/mixed; boundary=cs\r\n\r\n" + part + part +
            "--cs--\r\n--b--\r\n")
    r = http.request("POST", "/$batch", body=body, content_type="multipart/mixed; boundary=b",
                     headers=with_version(version))
    if r.status != 202:
        return "outer %d" % r.status
    m = re.search(rb'"code":"([A-Za-z]+)"', r.body)
    return (m.group(1).decode() if m else "no code", r.h("x-ms-version"))


def lenient(tap, srv):
    http = h.Http(srv)
    r = http.get("/Tables", headers=with_version("2027-01-01"))
    check_tables(tap, r, "2027-01-01", "x-ms-version newer than any known")
    r = http.get("/Tables", headers=with_version("9999-12-31"))
    check_tables(tap, r, "9999-12-31", "x-ms-version 9999-12-31")
    r = http.get("/Tables", headers=with_version("2020-01-01"))
    check_tables(tap, r, "2020-01-01", "x-ms-version between two known ones")
    r = http.get("/Tables", headers=with_version(NEWEST))
    check_tables(tap, r, NEWEST, "the newest known x-ms-version")
    r = http.get("/Tables?api-version=2027-01-01", headers={"x-ms-version": None})
    check_tables(tap, r, "2027-01-01", "api-version newer than any known (no x-ms-version)")
    # behaviour of a version between known ones: the nearest older known one
    r = http.get("/Tables", headers=with_version("2013-08-14"))
    # (a version without JSON answers errors in the OData XML of Atom)
    tap.ok(r.status == 415 and b"<code>JsonFormatNotSupported</code>" in r.body and
           r.h("Content-Type", "").startswith("application/xml"),
           "x-ms-version 2013-08-14 acts as 2012-02-12: no JSON -> 415 JsonFormatNotSupported",
           "got %s %r %r" % (r.status, r.h("Content-Type"), r.body[:300]))
    tap.eq(r.h("x-ms-version"), "2013-08-14", "an error answer echoes the version as sent")
    r = http.get("/Tables", headers=with_version("2013-08-16"))
    check_tables(tap, r, "2013-08-16", "x-ms-version 2013-08-16 acts as 2013-08-15: JSON")
    tap.eq(http.create_table("VerDup").status, 201, "(table)")
    tap.eq(dup_batch(http, "VerDup", "2016-05-30"), ("InvalidInput", "2016-05-30"),
           "batch with a duplicate row, x-ms-version 2016-05-30 acts as 2015-12-11: "
           "InvalidInput")
    tap.eq(dup_batch(http, "VerDup", "2016-06-01"), ("InvalidDuplicateRow", "2016-06-01"),
           "the same at 2016-06-01 (acts as 2016-05-31): InvalidDuplicateRow")
    tap.eq(dup_batch(http, "VerDup", "2027-01-01"), ("InvalidDuplicateRow", "2027-01-01"),
           "the same at 2027-01-01 (acts as the newest)")
    # refused as before: older than the oldest, or not a version
    for v, why in (("2009-04-13", "older than 2009-04-14"), ("1999-12-31", "from 1999"),
                   ("2019-02-30", "no calendar day"), ("2027-13-01", "month 13"),
                   ("2027-1-01", "one-digit month"), ("2027-01-01x", "trailing text"),
                   ("garbage", "not a date")):
        r = http.get("/Tables", headers=with_version(v))
        check_error(tap, r, 400, "InvalidHeaderValue", BAD_HEADER, "x-ms-version %s (%s)"
                    % (v, why))
        tap.eq(r.h("x-ms-version"), NEWEST, "refused %s: the answer carries the newest "
               "version" % v)
    r = http.get("/Tables?api-version=2009-01-01", headers={"x-ms-version": None})
    check_error(tap, r, 400, "InvalidHeaderValue", BAD_HEADER, "api-version 2009-01-01")


def strict(tap, srv):
    http = h.Http(srv)
    for v, why in (("2027-01-01", "newer than any known"), ("2020-01-01", "between known ones"),
                   ("2009-04-13", "older than the oldest"), ("2019-02-30", "not a day")):
        r = http.get("/Tables", headers=with_version(v))
        check_error(tap, r, 400, "InvalidHeaderValue", BAD_HEADER,
                    "--strict-versions: x-ms-version %s (%s)" % (v, why))
    r = http.get("/Tables", headers=with_version("2019-02-02"))
    check_tables(tap, r, "2019-02-02", "--strict-versions: a known version")
    r = http.get("/Tables?api-version=2027-01-01", headers={"x-ms-version": None})
    check_error(tap, r, 400, "InvalidHeaderValue", BAD_HEADER,
                "--strict-versions: api-version 2027-01-01")


def main():
    tap = h.Tap()
    servers = []
    try:
        for args in ([], ["--strict-versions"]):
            servers.append(h.Server(args).start())
    except h.ServerError as e:
        tap.ok(False, "servers start", str(e))
        tap.done()
    h.watchdog(int(os.environ.get("TEST_WATCHDOG", "120")), servers[0], tap)
    tap.run(lenient, tap, servers[0])
    tap.run(strict, tap, servers[1])
    for s in servers:
        s.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
