#!/usr/bin/python3
"""Integration test: an early answer over HTTPS reaches a client that is
still uploading (the lingering close, doc/architecture.md "Connections:
limits and closing").

A client that sends a large body the way the SDKs do (Content-Length, no
Expect: 100-continue) writes the whole body before it reads anything. When
tabled answers early (413 for a body over --max-body-bytes, 400 or 431 for
a bad head, 500 OperationTimedOut at the whole-request deadline) and then
closes with the body still arriving, the kernel resets the connection and
the client gets ECONNRESET instead of the answer. Over plain HTTP the
server half-closes and discards input for a bounded time; over TLS it must
do the same: keep reading and discarding, then close_notify and close.

  early answers  for each early answer, 5 times in a row: a TLS client
                 writes a body of 8 MiB (sendall, blocking) and then reads
                 the response; it must get the status line and the error
                 body, not a reset. (The deadline case sends 4 MiB, the
                 largest body not refused at once, after its 500.)
  node           the same with Node's https client (5 uploads of 8 MiB).
  bound          a client that goes on sending after its 413 is
                 disconnected (the linger ends after 2 s or 64 MiB), as
                 fast as it can or slowly (only the time bound ends it
                 then), and the server answers another client meanwhile.
Prints TAP; exit status 1 when a check fails."""
import json
import os
import select
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

MIB = 1024 * 1024
BODY = 8 * MIB           # well over the 4 MiB body limit
ROUNDS = 5               # a race must show up in one of them
IO_TIMEOUT = 30.0
HERE = os.path.dirname(os.path.abspath(__file__))
NODE_SCRIPT = os.path.normpath(os.path.join(HERE, "..", "js", "test_tls_linger.mjs"))


def start_tls_server(tap, cert, key, extra=()):
    """tabled with HTTPS on a free port; a few tries in case another
    process takes the port first. Returns (server, tls port) or (None,
    None)."""
    last = None
    for _ in range(5):
        port = h.free_port()
        srv = h.Server(args=["--tls-port", str(port), "--tls-cert", cert,
                             "--tls-key", key] + list(extra))
        try:
            srv.start()
            return srv, port
        except h.ServerError as e:
            last = e
    tap.ok(False, "tabled starts with HTTPS", str(last))
    return None, None


def tls_connect(port, cert, tls12=False):
    """A TLS connection to 127.0.0.1:port trusting cert. tls12: TLS 1.2 at
    most (no session tickets after the handshake, so the socket becomes
    readable only when the answer arrives)."""
    ctx = ssl.create_default_context(cafile=cert)
    if tls12:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    raw = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT)
    return ctx.wrap_socket(raw, server_hostname="127.0.0.1")


def head(port, extra_lines, length=None, chunked=False):
    """A request head for POST /Tables (unsigned: every answer tested here
    comes before authentication)."""
    lines = ["POST /%s/Tables HTTP/1.1" % h.DEV_ACCOUNT, "Host: 127.0.0.1:%d" % port,
             "Content-Type: application/json", "x-ms-version: 2019-02-02",
             "Accept: application/json;odata=nometadata"]
    if length is not None:
        lines.append("Content-Length: %d" % length)
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    lines += extra_lines
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunked_body(total, piece=64 * 1024):
    out = []
    left = total
    while left > 0:
        n = min(piece, left)
        out.append(b"%x\r\n" % n + b"x" * n + b"\r\n")
        left -= n
    out.append(b"0\r\n\r\n")
    return b"".join(out)


def upload_then_read(port, cert, data, wait_for_answer=None):
    """Sends data over a fresh TLS connection with a blocking sendall (as
    an SDK writes its request), then reads one response. wait_for_answer:
    bytes sent first, then the rest only once the answer has arrived (the
    socket is readable). Returns (Response, None) or (None, error text)."""
    try:
        s = tls_connect(port, cert, tls12=wait_for_answer is not None)
    except OSError as e:
        return None, "connect: %r" % e
    try:
        if wait_for_answer is not None:
            s.sendall(wait_for_answer)
            r, _, _ = select.select([s], [], [], 60)
            if not r:
                return None, "no answer within 60 s"
        s.sendall(data)
        return h.read_response(h._Reader(s, IO_TIMEOUT), "POST"), None
    except (OSError, h.ProtocolError) as e:
        return None, "%s: %s" % (type(e).__name__, e)
    finally:
        s.close()


def check_rounds(tap, what, status, code, run_once):
    """Runs run_once() ROUNDS times; every round must give status with
    the Table error code, its body complete (8 MiB uploads unless the
    name says otherwise)."""
    results = []
    for _ in range(ROUNDS):
        resp, err = run_once()
        if err is not None:
            results.append(err)
            continue
        try:
            got_code = json.loads(resp.body.decode("utf-8"))["odata.error"]["code"]
        except (ValueError, KeyError, TypeError):
            got_code = "unparsable body %r" % resp.body[:200]
        results.append((resp.status, got_code))
    good = sum(1 for r in results if r == (status, code))
    tap.ok(good == ROUNDS, "%s: %d of %d uploads over TLS got %d %s"
           % (what, good, ROUNDS, status, code), results)


def test_early_answers(tap, port, cert):
    big = b"x" * BODY
    check_rounds(tap, "Content-Length over the limit (answered before the body)", 413,
                 "RequestBodyTooLarge",
                 lambda: upload_then_read(port, cert, head(port, [], BODY) + big))
    chunks = chunked_body(BODY)
    check_rounds(tap, "chunked body growing over the limit", 413, "RequestBodyTooLarge",
                 lambda: upload_then_read(port, cert, head(port, [], chunked=True) + chunks))
    check_rounds(tap, "bad header name", 400, "InvalidInput",
                 lambda: upload_then_read(port, cert, head(port, ["Bad Name: 1"], BODY) + big))
    check_rounds(tap, "head over --max-header-bytes", 431, "RequestHeaderFieldsTooLarge",
                 lambda: upload_then_read(port, cert,
                                          head(port, ["x-ms-pad: " + "p" * (80 * 1024)], BODY)
                                          + big))


def test_request_timeout(tap, cert):
    """The whole-request deadline passes with the body unsent: 500
    OperationTimedOut, then the client sends the body (4 MiB, the largest
    accepted) and reads the answer."""
    srv, port = start_tls_server(tap, cert, cert.replace("cert.pem", "key.pem"),
                                 ["--request-timeout-ms", "500"])
    if srv is None:
        return
    try:
        check_rounds(tap, "whole-request deadline (4 MiB body)", 500, "OperationTimedOut",
                     lambda: upload_then_read(port, cert, b"x" * (4 * MIB - 1),
                                              wait_for_answer=head(port, [], 4 * MIB) + b"x"))
    finally:
        srv.stop_and_check(tap)


def signed_get_tables(srv, port):
    http = h.Http(srv, host_header="127.0.0.1:%d" % port)
    return http.build("GET", "/Tables")


def endless_sender(tap, srv, port, cert, piece, pause, what):
    """After its 413 a client sends pieces of piece bytes, pause seconds
    apart, for up to 120 s: it must be disconnected, and another client is
    answered meanwhile. Returns the sender's state."""
    s = tls_connect(port, cert)
    s.sendall(head(port, [], BODY))
    first = h.read_response(h._Reader(s, IO_TIMEOUT), "POST")
    tap.eq(first.status, 413, "%s: 413 before the body" % what)
    state = {"sent": 0, "err": None, "secs": None}

    def sender():
        chunk = b"y" * piece
        start = time.monotonic()
        try:
            while time.monotonic() - start < 120:
                s.sendall(chunk)
                state["sent"] += len(chunk)
                if pause:
                    time.sleep(pause)
        except OSError as e:
            state["err"] = "%s: %s" % (type(e).__name__, e)
        state["secs"] = time.monotonic() - start

    t = threading.Thread(target=sender, daemon=True)
    t.start()
    # Another client over TLS while the first one is being drained.
    other = tls_connect(port, cert)
    try:
        other.sendall(signed_get_tables(srv, port))
        r = h.read_response(h._Reader(other, IO_TIMEOUT), "GET")
        alive = t.is_alive()
        tap.eq(r.status, 200, "%s: another client is answered meanwhile" % what)
        tap.diag("(the sender was %s being drained then)" % ("still" if alive else "no longer"))
    finally:
        other.close()
    t.join(130)
    tap.ok(not t.is_alive() and state["err"] is not None,
           "%s: disconnected (2 s or 64 MiB of discarded input)" % what, state)
    tap.diag("%s cut after %.2f s and %d bytes sent: %s"
             % (what, state["secs"] or -1, state["sent"], state["err"]))
    s.close()
    return state


def test_bound(tap, srv, port, cert):
    """The lingering close is bounded in bytes and in time."""
    # As fast as it can: on loopback the 64 MiB usually come first.
    endless_sender(tap, srv, port, cert, 64 * 1024, 0, "fast endless sender")
    # 16 KiB every 20 ms (at most 800 KB/s, 64 MiB would take 80 s): only
    # the time bound can end it before the sender gives up at 120 s.
    st = endless_sender(tap, srv, port, cert, 16 * 1024, 0.02, "slow endless sender")
    tap.ok(st["err"] is not None and st["sent"] < 64 * MIB,
           "slow endless sender: cut by the time bound, below 64 MiB", st)


def test_node(tap, port, cert):
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        tap.ok(False, "node is installed (needed for the https client check)",
               "neither node nor nodejs found in PATH=%s" % os.environ.get("PATH"))
        return
    import test_sdk_js
    env = dict(os.environ, TABLED_TLS_PORT=str(port), TABLED_TLS_CA=cert,
               TABLED_ROUNDS=str(ROUNDS), NODE_NO_WARNINGS="1")
    test_sdk_js.run_node(tap, node, NODE_SCRIPT, env, 120, 2, "the node https check")


def main():
    tap = h.Tap()
    try:
        subprocess.run(["openssl", "version"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        tap.ok(False, "openssl CLI available (makes the test certificate)", str(e))
        tap.done()
    tmp = tempfile.mkdtemp(prefix="tabled-tls-linger-")
    try:
        cert, key = h.make_cert(tmp)
        srv, port = start_tls_server(tap, cert, key)
        if srv is None:
            tap.done()
        h.watchdog(500, srv, tap)
        tap.run(test_early_answers, tap, port, cert)
        tap.run(test_node, tap, port, cert)
        tap.run(test_bound, tap, srv, port, cert)
        srv.stop_and_check(tap)
        tap.run(test_request_timeout, tap, cert)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
