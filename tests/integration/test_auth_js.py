#!/usr/bin/python3
"""Integration test: authentication through the JavaScript Azure Tables SDK
(@azure/data-tables), by tests/js/test_auth_js.mjs (doc/protocol.md, Authentication).

Finds or installs the SDK as test_sdk_js.py does (find_or_install), makes a
self-signed P-256 certificate for 127.0.0.1 with the openssl command in a
temporary directory, starts one tabled with an HTTP listener, an HTTPS
listener (--tls-port on a free port picked here, since 0 means "off"),
--oauth basic (bearer tokens by their claims) and a second account
(--account NAME:KEY1:KEY2), then runs node with the HTTP
connection string, the HTTPS endpoint the server printed, the second
account's keys and NODE_EXTRA_CA_CERTS pointing at the certificate (so node
trusts it without turning verification off), relaying its TAP lines
renumbered into this program's own (test_sdk_js.run_node).  A missing node,
npm or openssl is a failure, not a skip."""
import base64
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402
import test_sdk_js  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.normpath(os.path.join(HERE, "..", "js", "test_auth_js.mjs"))
NODE_TIMEOUT = 180
ACCOUNT2 = "jsauthsecond"
HTTPS_RE = re.compile(r"HTTPS endpoint:\s*(https://\S+)")


def free_port():
    """A port nothing listens on right now (the server binds it next)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_cert(tap, tmp):
    """Writes cert.pem and key.pem into tmp; returns their paths or None."""
    openssl = shutil.which("openssl")
    if not openssl:
        tap.ok(False, "openssl is installed (needed to make a test certificate)",
               "openssl not found in PATH=%s" % os.environ.get("PATH"))
        return None
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    cmd = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
           "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
           "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        out, rc = p.stdout.decode("utf-8", "replace"), p.returncode
    except subprocess.TimeoutExpired:
        out, rc = "openssl did not finish in 60 s", -1
    good = rc == 0 and os.path.isfile(cert) and os.path.isfile(key)
    tap.ok(good, "openssl makes a self-signed certificate for 127.0.0.1", out[-2000:])
    return (cert, key) if good else None


def start_server(tap, cert, key, key1, key2):
    """tabled with HTTPS on a free port and the second account; retries
    with another port when the one picked was taken meanwhile."""
    err = None
    for _ in range(3):
        port = free_port()
        args = ["--tls-port", str(port), "--tls-cert", cert, "--tls-key", key,
                "--oauth", "basic",
                "--dev-account", "on", "--account", "%s:%s:%s" % (ACCOUNT2, key1, key2)]
        try:
            srv = h.Server(args=args).start()
        except h.ServerError as e:
            err = str(e)
            continue
        tap.ok(True, "server starts on port %d with HTTPS on port %d" % (srv.port, port))
        return srv, port
    tap.ok(False, "server starts with --tls-port/--tls-cert/--tls-key/--oauth/--account",
           err)
    return None, None


def https_endpoint(srv):
    """The "HTTPS endpoint:" line of the banner (it comes before the
    connection string, which start() waited for; poll briefly anyway)."""
    end = time.monotonic() + 2.0
    while True:
        for line in list(srv.stdout_lines):
            m = HTTPS_RE.search(line)
            if m:
                return m.group(1).rstrip("/")
        if time.monotonic() >= end:
            return None
        time.sleep(0.05)


def tls_handshake(port, cert):
    """Verifies the server's certificate against cert.pem the way node will
    (hostname 127.0.0.1); returns None or the error text."""
    ctx = ssl.create_default_context(cafile=cert)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                s.version()
        return None
    except (OSError, ssl.SSLError) as e:
        return str(e)


def main():
    tap = h.Tap()
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        tap.ok(False, "node is installed (needed for the JS SDK auth test)",
               "neither node nor nodejs found in PATH=%s" % os.environ.get("PATH"))
        tap.done()
    mods = os.environ.get("TABLED_JS_DEPS") or test_sdk_js.find_or_install(tap)
    if mods is None:
        tap.done()
    tmp = tempfile.mkdtemp(prefix="tabled-auth-js-")
    try:
        pair = make_cert(tap, tmp)
        if pair is None:
            tap.done()
        key1 = base64.b64encode(os.urandom(64)).decode("ascii")
        key2 = base64.b64encode(os.urandom(64)).decode("ascii")
        srv, tls_port = start_server(tap, pair[0], pair[1], key1, key2)
        if srv is None:
            tap.done()
        h.watchdog(NODE_TIMEOUT + 30, srv, tap)
        endpoint = https_endpoint(srv)
        tap.eq(endpoint, "https://127.0.0.1:%d/%s" % (tls_port, h.DEV_ACCOUNT),
               "the server printed its HTTPS endpoint")
        problem = tls_handshake(tls_port, pair[0])
        tap.ok(problem is None, "a TLS handshake verifies the certificate for 127.0.0.1", problem)
        env = dict(os.environ, TABLED_CONN=srv.conn_str_printed or srv.conn_str(),
                   TABLED_HTTPS_ENDPOINT=endpoint or "https://127.0.0.1:%d/%s"
                   % (tls_port, h.DEV_ACCOUNT),
                   TABLED_ACCOUNT2=ACCOUNT2, TABLED_ACCOUNT2_KEY1=key1,
                   TABLED_ACCOUNT2_KEY2=key2, TABLED_JS_DEPS=mods, NODE_NO_WARNINGS="1",
                   NODE_EXTRA_CA_CERTS=pair[0])
        test_sdk_js.run_node(tap, node, SCRIPT, env, NODE_TIMEOUT, 40, "the JS auth test")
        srv.stop_and_check(tap)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
