#!/usr/bin/python3
"""Integration test: who may use the admin listener, and which accounts are
served (issue 13, points 5 and 6).

  hosts        --admin-port 0: loopback Hosts (127.0.0.1, localhost,
               [::1], with and without a port) are answered; evil.example
               and DNS-rebinding-like names (127.0.0.1.nip.io,
               localhost.evil.example, ...) get 403 and change nothing; a
               loopback PUT needs no token while none is configured.
  token        --admin-token T --admin-allowed-host tabled.test: GET
               /metrics and /healthz need no token on loopback; PUT and
               DELETE without it or with a wrong one get 401 with
               WWW-Authenticate: Bearer and change nothing, with it they
               work; the extra name is answered, others are not.
  refusal      --admin-host 0.0.0.0 without a token: tabled exits non-zero
               with a message naming --admin-token and never says ready.
  accounts     --account prod:KEY: a request signed with devstoreaccount1's
               well-known key is 403 AuthenticationFailed, prod's works, the
               banner lists prod and no key; --dev-account on or listing
               devstoreaccount1 serves it again; alone it is served with
               its connection string.
"""
import os
import re
import subprocess
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

TOKEN = "adm1n-T0ken_for.tests~0123456789"
PROD = "prodacct"
PROD_KEY = "cHJvZC1rZXktcHJvZC1rZXktcHJvZC1rZXktcHJvZC1rZXktMTIzNDU2Nzg5MA=="


def admin_port(srv, timeout=3.0):
    """The admin port from the 'Admin endpoint:' banner line."""
    import time
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for line in list(srv.stdout_lines):
            m = re.search(r"Admin endpoint:\s+http://[^ ]+:(\d+)/metrics", line)
            if m:
                return int(m.group(1))
        time.sleep(0.05)
    raise h.ServerError("no Admin endpoint line: %r" % srv.stdout_lines)


def admin(srv, method, path, host, auth=None, body=None):
    """One request to the admin listener with exactly this Host header."""
    port = admin_port(srv)
    target = types.SimpleNamespace(host=srv.host, port=port)
    head = "%s %s HTTP/1.1\r\n" % (method, path)
    if host is not None:
        head += "Host: %s\r\n" % (host.replace("PORT", str(port)))
    if auth is not None:
        head += "Authorization: %s\r\n" % auth
    data = (body or "").encode()
    if body is not None:
        head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
    head += "Connection: close\r\n\r\n"
    got, _ = h.raw_exchange(target, head.encode() + data, timeout=10)
    r = h.first_response(got)
    if r is None:
        raise h.ServerError("no answer from the admin listener: %r" % got[:300])
    return r


def rule_count(srv):
    r = admin(srv, "GET", "/faults", "127.0.0.1:PORT")
    return len(r.json()["rules"]) if r.status == 200 else -1


def test_hosts(tap):
    srv = h.Server(args=["--admin-port", "0"]).start()
    try:
        for host in ["127.0.0.1:PORT", "127.0.0.1", "localhost:PORT", "localhost",
                     "[::1]:PORT", "127.0.0.2:PORT"]:
            r = admin(srv, "GET", "/healthz", host)
            tap.eq(r.status, 200, "Host %s: GET /healthz is answered" % host)
        for host in ["evil.example", "evil.example:PORT", "127.0.0.1.nip.io:PORT",
                     "localhost.evil.example", "7f000001.c0a80001.rbndr.us:PORT",
                     "attacker.localhost:PORT", "0.0.0.0:PORT", "127.0.0.1:PORT:1"]:
            r = admin(srv, "GET", "/metrics", host)
            tap.eq(r.status, 403, "Host %s: GET /metrics is 403" % host)
        r = admin(srv, "PUT", "/faults/rebound", "evil.example:PORT",
                  body='{"busy":1}')
        tap.eq(r.status, 403, "a rebinding PUT /faults/NAME is 403")
        tap.eq(rule_count(srv), 0, "and adds no rule")
        r = admin(srv, "DELETE", "/faults", "evil.example")
        tap.eq(r.status, 403, "a rebinding DELETE /faults is 403")
        r = admin(srv, "PUT", "/faults/local", "127.0.0.1:PORT", body='{"busy":0.5}')
        tap.eq(r.status, 201, "no token configured: a loopback PUT is done")
        tap.eq(rule_count(srv), 1, "the rule is there")
    finally:
        srv.stop_and_check(tap)


def test_token(tap):
    srv = h.Server(args=["--admin-port", "0", "--admin-token", TOKEN,
                         "--admin-allowed-host", "tabled.test"]).start()
    try:
        banner = "\n".join(srv.stdout_lines)
        tap.ok(TOKEN not in banner, "the banner does not print the token", banner)
        for path in ["/metrics", "/healthz", "/faults"]:
            r = admin(srv, "GET", path, "127.0.0.1:PORT")
            tap.eq(r.status, 200, "token set: GET %s on loopback needs none" % path)
        r = admin(srv, "PUT", "/faults/x", "127.0.0.1:PORT", body='{"busy":1}')
        tap.eq(r.status, 401, "PUT without the token is 401")
        tap.eq(r.h("WWW-Authenticate"), 'Bearer realm="tabled-admin"',
               "401 carries WWW-Authenticate: Bearer")
        r = admin(srv, "PUT", "/faults/x", "127.0.0.1:PORT", "Bearer " + TOKEN[:-1] + "X",
                  body='{"busy":1}')
        tap.eq(r.status, 401, "PUT with a wrong token is 401")
        tap.ok('error="invalid_token"' in (r.h("WWW-Authenticate") or ""),
               "the challenge says invalid_token", r.headers)
        tap.eq(rule_count(srv), 0, "refused PUTs added nothing")
        r = admin(srv, "PUT", "/faults/x", "127.0.0.1:PORT", "Bearer " + TOKEN,
                  body='{"busy":1}')
        tap.eq(r.status, 201, "PUT with the right token is done")
        r = admin(srv, "DELETE", "/faults/x", "localhost:PORT")
        tap.eq(r.status, 401, "DELETE without the token is 401")
        tap.eq(rule_count(srv), 1, "the rule is still there")
        r = admin(srv, "DELETE", "/faults", "tabled.test:PORT", "Bearer " + TOKEN)
        tap.eq(r.status, 200, "DELETE with the token, Host the configured name")
        tap.eq(rule_count(srv), 0, "the rule is gone")
        r = admin(srv, "GET", "/healthz", "tabled.test")
        tap.eq(r.status, 200, "the configured name without a port")
        r = admin(srv, "GET", "/healthz", "other.test:PORT", "Bearer " + TOKEN)
        tap.eq(r.status, 403, "an unlisted name is 403 even with the token")
    finally:
        srv.stop_and_check(tap)


def test_refusal(tap):
    exe = h.tabled_path()
    cmd = [exe, "--port", "0", "--backend", "memory", "--admin-port", "0",
           "--admin-host", "0.0.0.0"]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    try:
        out, _ = p.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()  # started serving: stop it at once
        out, _ = p.communicate()
    text = out.decode("utf-8", "replace")
    tap.ok(p.returncode not in (None, 0) and "ready at" not in text and
           "--admin-token" in text and "loopback" in text and not h.SANITIZER_RE.search(text),
           "--admin-host 0.0.0.0 without a token: no start, exit %s, a message naming "
           "--admin-token" % p.returncode, text[-1500:])


def signed_status(srv, account, key):
    """Status and error code of Query Tables signed as account/key."""
    r = h.Http(srv, account=account, key=key).get("/Tables")
    return r.status, r.error_code()


def test_accounts(tap):
    prod = "%s:%s" % (PROD, PROD_KEY)
    srv = h.Server(args=["--account", prod]).start()
    try:
        tap.eq(signed_status(srv, h.DEV_ACCOUNT, h.DEV_KEY), (403, "AuthenticationFailed"),
               "--account prod: a request signed as devstoreaccount1 is 403 AuthenticationFailed")
        tap.eq(signed_status(srv, PROD, PROD_KEY)[0], 200, "prod's own request is served")
        banner = "\n".join(srv.stdout_lines)
        tap.ok(re.search(r"^Accounts:\s+%s \(devstoreaccount1 off" % PROD, banner, re.M),
               "the banner lists prod alone and says devstoreaccount1 is off", banner)
        tap.ok(re.search(r"^Table endpoint:\s+http://[^/]+/%s$" % PROD, banner, re.M),
               "the table endpoint is prod's", banner)
        tap.ok(PROD_KEY not in banner and h.DEV_KEY not in banner and
               "AccountKey=" + PROD_KEY[:8] not in banner,
               "the banner prints no key", banner)
        tap.ok(srv.conn_str_printed and "AccountName=%s;" % PROD in srv.conn_str_printed,
               "the connection string names prod (without a key)", banner)
    finally:
        srv.stop_and_check(tap)

    for what, args in [("--dev-account on", ["--dev-account", "on", "--account", prod]),
                       ("devstoreaccount1 listed", ["--account", prod, "--account",
                                                    "%s:%s" % (h.DEV_ACCOUNT, h.DEV_KEY)])]:
        srv = h.Server(args=args).start()
        try:
            tap.eq(signed_status(srv, h.DEV_ACCOUNT, h.DEV_KEY)[0], 200,
                   "%s: devstoreaccount1 is served" % what)
            tap.eq(signed_status(srv, PROD, PROD_KEY)[0], 200, "%s: and prod" % what)
            banner = "\n".join(srv.stdout_lines)
            tap.ok(re.search(r"^Accounts:\s+.*\b%s\b" % PROD, banner, re.M) and
                   re.search(r"^Accounts:\s+.*\bdevstoreaccount1\b", banner, re.M),
                   "%s: the banner lists both accounts" % what, banner)
            tap.ok(PROD_KEY not in banner, "%s: and never prod's key" % what, banner)
        finally:
            srv.stop_and_check(tap)

    srv = h.Server().start()
    try:
        banner = "\n".join(srv.stdout_lines)
        tap.ok(re.search(r"^Accounts:\s+devstoreaccount1 ", banner, re.M),
               "no --account: the banner lists devstoreaccount1", banner)
        tap.eq(srv.conn_str_printed, srv.conn_str(),
               "and prints its connection string with the well-known key")
        tap.eq(signed_status(srv, h.DEV_ACCOUNT, h.DEV_KEY)[0], 200, "which is served")
    finally:
        srv.stop_and_check(tap)


def main():
    tap = h.Tap()
    h.watchdog(120, None, tap)
    tap.run(test_hosts, tap)
    tap.run(test_token, tap)
    tap.run(test_refusal, tap)
    tap.run(test_accounts, tap)
    tap.done()


if __name__ == "__main__":
    main()
