#!/usr/bin/python3
"""Integration test of the diagnostic log of refused requests (doc/tabled.1
DIAGNOSTICS, doc/troubleshooting.md): for each reason a request is refused
(unknown account, no account in the path, no credentials, malformed
Authorization header, account mismatch, SharedKey signature mismatch,
clock skew, SAS expired / not yet valid / signature / permission /
resource type / service / source IP / protocol / table scope / key range,
bearer token over HTTP) the wire answer is the service's and exactly one
info line names the reason, the request id of the answer, the method, the
path (never the query, so never sig=) and the client address. Then: a
flood of 1,000 bad requests writes a bounded number of lines, and the
"suppressed" lines account for every other one; at debug level the line
with the server's string to sign appears and no key or signature does;
azurite-table --debug FILE gets these lines; a TLS client on the plain
port gives one "TLS on the plain HTTP port" line. Prints TAP."""
import base64
import datetime
import hashlib
import hmac
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

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core.credentials import AzureNamedKeyCredential
    from azure.core.exceptions import HttpResponseError
    from azure.data.tables import TableServiceClient
    IMPORT_ERROR = None
except ImportError as e:  # reported as a failing check below
    IMPORT_ERROR = e

DEV = h.DEV_ACCOUNT
SV = "2019-02-02"
WRONG_KEY = base64.b64encode(hashlib.sha512(b"not the key").digest()).decode()
UTC = datetime.timezone.utc
LINE = re.compile(r"^\S+ info: request refused \(([^)]*)\): (.*)$", re.M)


def hmac_b64(key_b64, text):
    mac = hmac.new(base64.b64decode(key_b64), text.encode("utf-8"), hashlib.sha256)
    return base64.b64encode(mac.digest()).decode("ascii")


def iso(delta_s):
    t = datetime.datetime.now(UTC) + datetime.timedelta(seconds=delta_s)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def account_sas(key=h.DEV_KEY, sp="rwdlacu", ss="t", srt="sco", st=None, se=None, sip=None,
                spr=None):
    """An account SAS query (the account SAS string to sign, sv before
    2020-12-06: no ses line)."""
    se = se or iso(3600)
    sts = "\n".join([DEV, sp, ss, srt, st or "", se, sip or "", spr or "", SV, ""])
    q = {"sv": SV, "ss": ss, "srt": srt, "sp": sp, "se": se}
    if st:
        q["st"] = st
    if sip:
        q["sip"] = sip
    if spr:
        q["spr"] = spr
    q["sig"] = hmac_b64(key, sts)
    return urllib.parse.urlencode(q), q["sig"]


def table_sas(table, sp="raud", se=None, spk=None, epk=None, key=h.DEV_KEY):
    """A table SAS query (sv 2015-04-05 and later string to sign)."""
    se = se or iso(3600)
    sts = "\n".join([sp, "", se, "/table/%s/%s" % (DEV, table.lower()), "", "", "", SV,
                     spk or "", "", epk or "", ""])
    q = {"sv": SV, "tn": table, "sp": sp, "se": se}
    if spk:
        q["spk"] = spk
    if epk:
        q["epk"] = epk
    q["sig"] = hmac_b64(key, sts)
    return urllib.parse.urlencode(q), q["sig"]


def wait_for(fn, seconds=15.0):
    """Polls fn() until it is true or the time is up; returns its last value."""
    end = time.monotonic() + seconds
    v = fn()
    while not v and time.monotonic() < end:
        time.sleep(0.1)
        v = fn()
    return v


def refused(text, reason):
    return [m.group(2) for m in LINE.finditer(text) if m.group(1) == reason]


def check_case(tap, srv, name, send, status, code, reason, contains=()):
    """Sends one bad request; checks the answer and the one log line."""
    before = len(refused(srv.stderr_text(), reason))
    r = send()
    tap.eq((r.status, r.error_code()), (status, code), "%s: the service's answer" % name)
    rid = r.h("x-ms-request-id") or "?"
    lines = wait_for(lambda: [x for x in refused(srv.stderr_text(), reason) if rid in x])
    tap.ok(len(lines) == 1, "%s: one log line '(%s)' with the answer's request id"
           % (name, reason), srv.stderr_text()[-3000:])
    line = lines[0] if lines else ""
    tap.eq(len(refused(srv.stderr_text(), reason)) - before, 1,
           "%s: no other line of that reason" % name)
    want = ["from 127.0.0.1", "answered %d %s" % (status, code)] + list(contains)
    missing = [w for w in want if w not in line]
    tap.ok(not missing, "%s: the line says %s" % (name, ", ".join(want)), line)
    tap.ok("sig=" not in line and "?" not in line.split("; request ")[-1],
           "%s: no query string in the line" % name, line)
    return line


def cases(tap, srv):
    http = h.Http(srv)
    wrong = h.Http(srv, key=WRONG_KEY)
    foo = h.Http(srv, account="foo")
    http.create_table("logt1")
    http.create_table("logt2")

    check_case(tap, srv, "unknown account", lambda: foo.get("/Tables"), 403,
               "AuthenticationFailed", "account not configured",
               ["account 'foo'", "configured: 'devstoreaccount1'", "GET /foo/Tables"])
    check_case(tap, srv, "no account in the path",
               lambda: http.get("/Tables", absolute=True, sign_account=DEV), 403,
               "AuthenticationFailed", "no account in the path",
               ["first segment 'Tables'", "/ACCOUNT/", "configured: 'devstoreaccount1'"])
    # before 2020-12-06 no credentials are a 403; from it on, a 401 challenge
    check_case(tap, srv, "no credentials", lambda: http.get("/Tables", sign_it=False), 403,
               "AuthenticationFailed", "no credentials", ["no Authorization header"])
    check_case(tap, srv, "no credentials (challenge)",
               lambda: http.get("/Tables", sign_it=False, headers={"x-ms-version": "2020-12-06"}),
               401, "InvalidAuthenticationInfo", "no credentials", ["no Authorization header"])
    check_case(tap, srv, "malformed header",
               lambda: http.get("/Tables", sign_it=False,
                                headers={"Authorization": "Basic dXNlcjpwdw=="}),
               400, "InvalidAuthenticationInfo", "malformed Authorization header",
               ["scheme 'Basic'"])
    check_case(tap, srv, "account mismatch",
               lambda: http.get("/Tables", sign_account="otheraccount"), 403,
               "AuthenticationFailed", "account mismatch",
               ["signs for account 'otheraccount'"])
    line = check_case(tap, srv, "signature mismatch", lambda: wrong.get("/Tables"), 403,
                      "AuthenticationFailed", "signature mismatch",
                      ["SharedKey signature does not match", "GET /devstoreaccount1/Tables"])
    tap.ok(WRONG_KEY not in line and h.DEV_KEY not in line, "signature mismatch: no key")
    old = h.rfc1123(time.time() - 3600)
    check_case(tap, srv, "clock skew", lambda: http.get("/Tables", date=old), 403,
               "AuthenticationFailed", "clock skew", ["s behind the server's clock"])
    skew = refused(srv.stderr_text(), "clock skew")
    m = re.search(r"is (\d+) s behind", skew[-1]) if skew else None
    tap.ok(m and 3500 <= int(m.group(1)) <= 3700, "clock skew: says by how much (about 3600 s)")

    def sas_get(q, path="/Tables"):
        return http.get(path + "?" + q, sign_it=False)

    def sas_check(name, q, status, code, reason, contains=(), path="/Tables"):
        qs, sig = q
        line = check_case(tap, srv, name, lambda: sas_get(qs, path), status, code, reason,
                          contains)
        tap.ok(sig not in line, "%s: the signature is not in the line" % name)

    sas_check("SAS expired", account_sas(se=iso(-3600)), 403, "AuthenticationFailed",
              "SAS expired", ["the SAS expired (se) at", "the server's time is"])
    sas_check("SAS not yet valid", account_sas(st=iso(3600)), 403, "AuthenticationFailed",
              "SAS not yet valid", ["the SAS starts (st) at"])
    sas_check("SAS signature", account_sas(key=WRONG_KEY), 403, "AuthenticationFailed",
              "SAS signature mismatch", ["account SAS signature does not match"])
    sas_check("SAS permission", account_sas(sp="r"), 403, "AuthorizationPermissionMismatch",
              "SAS permission missing", ["QueryTables needs sp with 'l'", "grants sp 'r'"])
    sas_check("SAS resource type", account_sas(srt="o"), 403,
              "AuthorizationResourceTypeMismatch", "SAS resource type missing",
              ["QueryTables needs srt to hold one of 'c'", "grants srt 'o'"])
    sas_check("SAS service", account_sas(ss="b"), 403, "AuthorizationServiceMismatch",
              "SAS service mismatch", ["ss does not include t"])
    sas_check("SAS source IP", account_sas(sip="10.1.2.3"), 403,
              "AuthorizationSourceIPMismatch", "SAS source IP mismatch",
              ["client address 127.0.0.1 is outside the SAS's sip '10.1.2.3'"])
    sas_check("SAS protocol", account_sas(spr="https"), 403, "AuthorizationProtocolMismatch",
              "SAS protocol mismatch", ["spr=https"])
    sas_check("table SAS on another table", table_sas("logt1"), 403, "AuthorizationFailure",
              "outside the table SAS's scope",
              ["the table SAS is for table 'logt1', the request addresses table 'logt2'"],
              path="/logt2()")
    # The key range is checked once the body is read (ops_entities.c).
    qs, sig = table_sas("logt1", spk="a", epk="b")
    line = check_case(tap, srv, "table SAS key range",
                      lambda: http.request("POST", "/logt1?" + qs, sign_it=False,
                                           body={"PartitionKey": "z", "RowKey": "1"}),
                      403, "AuthorizationFailure", "outside the table SAS's scope",
                      ["InsertEntity addresses an entity outside the table SAS's key range"])
    tap.ok(sig not in line, "table SAS key range: the signature is not in the line")
    check_case(tap, srv, "bearer over HTTP",
               lambda: http.get("/Tables", sign_it=False,
                                headers={"Authorization": "Bearer a.b.c"}),
               403, "AuthenticationFailed", "bearer token refused", ["over plain HTTP"])

    if IMPORT_ERROR:
        tap.ok(False, "azure-data-tables importable", str(IMPORT_ERROR))
        return
    # The SDK with a wrong key: the line a user of the SDK sees.
    before = len(refused(srv.stderr_text(), "signature mismatch"))
    svc = TableServiceClient(endpoint=srv.base, credential=AzureNamedKeyCredential(DEV, WRONG_KEY),
                             retry_total=0, connection_timeout=10, read_timeout=20)
    try:
        list(svc.list_tables())
        code = None
    except HttpResponseError as e:
        code = e.error_code
    tap.eq(code, "AuthenticationFailed", "SDK with a wrong key: AuthenticationFailed")
    tap.ok(wait_for(lambda: len(refused(srv.stderr_text(), "signature mismatch")) == before + 1),
           "SDK with a wrong key: one signature mismatch line")


def flood(tap, srv):
    """1,000 bad requests on one connection: at most the limit's lines, and
    every other request is counted in a "suppressed" line."""
    wrong = h.Http(srv, key=WRONG_KEY)
    n = 1000
    base = None

    def counts():
        text = srv.stderr_text()
        lines = len(refused(text, "signature mismatch"))
        sup = sum(int(x) for x in re.findall(
            r"info: suppressed (\d+) similar lines \(signature mismatch\)", text))
        return lines - base[0], sup - base[1]

    base = (0, 0)
    base = counts()   # the lines of the earlier checks
    t0 = time.monotonic()
    codes = set()
    with wrong.connect() as c:
        for _ in range(n):
            codes.add(c.request("GET", "/Tables").status)
    secs = time.monotonic() - t0
    tap.eq(codes, {403}, "flood: every answer is 403")
    ok = wait_for(lambda: sum(counts()) == n, 20)
    lines, sup = counts()
    tap.ok(ok, "flood: lines written plus lines suppressed = %d (%d + %d)" % (n, lines, sup))
    bound = 5 * (int(secs) + 2)
    tap.ok(0 < lines <= bound, "flood: %d lines for %d requests in %.1f s (bound %d)"
           % (lines, n, secs, bound))
    tap.ok(sup > 0, "flood: a 'suppressed N similar lines' summary")


def debug_level(tap):
    srv = h.Server(args=["--log-level", "debug"]).start()
    try:
        wrong = h.Http(srv, key=WRONG_KEY)
        date = h.rfc1123()
        r = wrong.get("/Tables", date=date)
        tap.eq(r.error_code(), "AuthenticationFailed", "debug: signature mismatch answered")
        rid = r.h("x-ms-request-id") or "?"
        # path-style: the account, then the path, which starts with it again
        sts = "GET\\n\\n\\n%s\\n/devstoreaccount1/devstoreaccount1/Tables" % date
        want = "request %s: the server's string to sign was \"%s\"" % (rid, sts)
        text = wait_for(lambda: want in srv.stderr_text() and srv.stderr_text())
        tap.ok(text, "debug: the string to sign, newlines escaped", srv.stderr_text()[-2000:])
        plain = "GET\n\n\n%s\n/devstoreaccount1/devstoreaccount1/Tables" % date
        real, sent = h.sign(h.DEV_KEY, plain), h.sign(WRONG_KEY, plain)
        text = srv.stderr_text()
        tap.ok(h.DEV_KEY not in text and WRONG_KEY not in text, "debug: no key in the log")
        tap.ok(real not in text and sent not in text, "debug: no signature in the log")
        qs, sig = account_sas(key=WRONG_KEY)
        r = h.Http(srv).get("/Tables?" + qs, sign_it=False)
        tap.eq(r.error_code(), "AuthenticationFailed", "debug: SAS signature mismatch answered")
        rid = r.h("x-ms-request-id") or "?"
        text = wait_for(lambda: ("request %s: the server's string to sign was \"%s\\nrwdlacu\\nt"
                                 % (rid, DEV)) in srv.stderr_text() and srv.stderr_text())
        tap.ok(text, "debug: the SAS string to sign", srv.stderr_text()[-2000:])
        tap.ok(sig not in srv.stderr_text() and "sig=" not in srv.stderr_text(),
               "debug: no SAS signature in the log")
    finally:
        srv.stop_and_check(tap)


def tls_on_plain(tap, srv):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    err = None
    with socket.create_connection((srv.host, srv.port), timeout=20) as s:
        try:
            ctx.wrap_socket(s).close()
        except (ssl.SSLError, OSError) as e:
            err = e
    tap.ok(isinstance(err, ssl.SSLError) and "WRONG_VERSION_NUMBER" in str(err),
           "TLS client on the plain port fails with 'wrong version number'", repr(err))
    want = "info: TLS on the plain HTTP port; use http:// or --tls-port (client 127.0.0.1)"
    tap.ok(wait_for(lambda: want in srv.stderr_text()), "TLS on the plain port: the info line")
    tap.eq(srv.stderr_text().count("TLS on the plain HTTP port"), 1,
           "TLS on the plain port: exactly one line")
    r = h.Http(srv).get("/Tables")
    tap.eq(r.status, 200, "the port still serves HTTP afterwards")


def azurite_debug(tap):
    tmp = tempfile.mkdtemp(prefix="tabled-authlog-")
    try:
        link = os.path.join(tmp, "azurite-table")
        os.symlink(h.tabled_path(), link)
        log = os.path.join(tmp, "debug.log")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        p = subprocess.Popen([link, "--tableHost", "127.0.0.1", "--tablePort", str(port),
                              "--inMemoryPersistence", "--debug", log],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, cwd=tmp)
        try:
            srv = h.Server()
            srv.host, srv.port = "127.0.0.1", port
            up = wait_for(lambda: _connectable(port))
            tap.ok(up, "azurite-table --debug FILE: listening")
            r = h.Http(srv, key=WRONG_KEY).get("/Tables") if up else None
            tap.eq(r and r.error_code(), "AuthenticationFailed", "azurite-table: refused")

            def read():
                try:
                    with open(log, encoding="utf-8", errors="replace") as f:
                        return f.read()
                except OSError:
                    return ""
            text = wait_for(lambda: "request refused (signature mismatch)" in read() and read())
            tap.ok(text, "azurite-table --debug FILE: the refusal line is in FILE", read()[-2000:])
            tap.ok("the server's string to sign was" in read(),
                   "azurite-table --debug FILE: with the string to sign (debug level)")
            shutil.rmtree(srv._tmp, ignore_errors=True)
        finally:
            p.terminate()
            p.wait(10)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _connectable(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def main():
    tap = h.Tap()
    srv = h.Server(args=["--log-level", "info"]).start()
    h.watchdog(600, srv, tap)
    try:
        tap.run(cases, tap, srv)
        tap.run(tls_on_plain, tap, srv)
        tap.run(flood, tap, srv)
    finally:
        srv.stop_and_check(tap)
    tap.run(debug_level, tap)
    tap.run(azurite_debug, tap)
    tap.done()


if __name__ == "__main__":
    main()
