#!/usr/bin/python3
"""Integration test: connection and output limits (issue 13 points 2, 7
and 8, issue 14 point 2).

  backpressure   200 clients pipeline 3 queries of ~4 MiB pages each and
                 read nothing: the server's resident memory stays bounded
                 (VmHWM from /proc), a normal GET is answered meanwhile
                 within a liveness bound, and a stalled client that starts
                 reading gets its three replies in full.
  eviction       at --max-connections, a newcomer is served and the
                 connection idle longest is closed (not a busier one).
  header timeout a connection that sends nothing is closed after
                 --header-timeout-ms, not after the idle timeout.
  request timeout a body trickled a byte at a time is cut at
                 --request-timeout-ms with 500 OperationTimedOut.
  upgrade        a request with Connection: Upgrade and a body is answered
                 and the connection stays HTTP/1.1.
  413            bodies over 4 MiB (Content-Length and chunked) get 413
                 RequestBodyTooLarge, the Content-Length one before any
                 body byte is sent.
  EMFILE         accept failures are logged at most once per 10 s.
Prints TAP; exit status 1 when a check fails."""
import json
import os
import re
import resource
import select
import socket
import sys
import threading
import time

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

MIB = 1024 * 1024
BODY_LIMIT_MSG = "The request body is too large and exceeds the maximum permissible limit."
# Sanitizer builds keep freed memory in a quarantine (256 MiB by default),
# which would count as resident memory; keep it small for this test.
os.environ["ASAN_OPTIONS"] = (os.environ.get("ASAN_OPTIONS", "abort_on_error=0:detect_leaks=1")
                              + ":quarantine_size_mb=16")


def proc_status(pid, field):
    """A kB field of /proc/PID/status (VmRSS, VmHWM) in bytes."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def read_until_closed(sock, timeout):
    """Reads until EOF/reset or timeout; returns (data, closed, seconds)."""
    start = time.monotonic()
    data = b""
    while True:
        left = timeout - (time.monotonic() - start)
        if left <= 0:
            return data, False, time.monotonic() - start
        r, _, _ = select.select([sock], [], [], left)
        if not r:
            continue
        try:
            chunk = sock.recv(65536)
        except OSError:
            return data, True, time.monotonic() - start
        if not chunk:
            return data, True, time.monotonic() - start
        data += chunk


def is_closed(sock, wait=0.0):
    """True when the peer has closed sock (EOF or reset) within wait s."""
    r, _, _ = select.select([sock], [], [], wait)
    if not r:
        return False
    try:
        return sock.recv(65536, socket.MSG_PEEK) == b""
    except OSError:
        return True


def socket_fds(pid):
    """How many sockets process pid has open."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:"):
                n += 1
        except OSError:
            pass
    return n


def big_table(http, name, count, size):
    """A table of count entities of about size bytes each (strings of
    30,000 characters, under the 64 KiB property limit), inserted by
    $batch-free single inserts on one keep-alive connection."""
    assert http.create_table(name).status == 201
    props = max(1, size // 30000)
    with http.connect(timeout=30) as c:
        for i in range(count):
            e = {"PartitionKey": "p", "RowKey": "r%05d" % i}
            for j in range(props):
                e["S%02d" % j] = chr(ord("a") + (i + j) % 26) * 30000
            r = c.request("POST", "/" + name, body=e, headers={"Prefer": "return-no-content"})
            if r.status != 204:
                raise AssertionError("insert %d: %s %s" % (i, r.status, r.body[:300]))


def test_backpressure(tap):
    srv = h.Server(args=["--max-conn-output-bytes", "1M", "--max-total-output-bytes", "64M",
                         "--idle-timeout-ms", "8000"])
    srv.start()
    try:
        http = h.Http(srv)
        # 150 entities of ~120 KB: a query page stops at 4 MiB (~35 entities).
        big_table(http, "bigpages", 150, 120000)
        r = http.get("/bigpages", timeout=30)
        tap.eq(r.status, 200, "a page of the big table is answered")
        page = len(r.body)
        tap.ok(page > 3 * MIB, "the page is about 4 MiB", page)
        tap.ok(r.h("x-ms-continuation-NextPartitionKey") is not None,
               "the page ends with a continuation", r.headers)
        pid = srv.proc.pid
        base = proc_status(pid, "VmRSS")
        one = http.build("GET", "/bigpages")
        clients = []
        for _ in range(200):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            # A small receive window: the replies stay in the server's
            # buffers instead of ours.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(10)
            s.connect((srv.host, srv.port))
            s.sendall(one * 3)
            clients.append(s)
        # Let the server take in what it will, watching its memory.
        grown = 0
        for _ in range(12):
            time.sleep(0.25)
            grown = max(grown, proc_status(pid, "VmRSS") - base)
        t0 = time.monotonic()
        r = http.get("/Tables", timeout=30)
        took = time.monotonic() - t0
        tap.eq(r.status, 200, "a normal GET is answered while 200 clients do not read")
        tap.ok(took < 3.0, "... within 3 s (liveness)", "%.2f s" % took)
        peak = proc_status(pid, "VmHWM") - base
        grown = max(grown, proc_status(pid, "VmRSS") - base)
        tap.diag("resident growth %.0f MiB (peak %.0f MiB) with 200 stalled clients"
                 % (grown / MIB, peak / MIB))
        # Without backpressure every reply is built: over 1 GiB within
        # seconds. Here: the 64 MiB cap, one ~4 MiB page per connection
        # only until the cap nears, then short pages (with continuations).
        tap.ok(peak < 200 * MIB, "peak resident memory grew by less than 200 MiB", peak)
        # A stalled client that starts reading gets its three replies.
        s = clients.pop(0)
        reader = h._Reader(s, 30)
        statuses = []
        try:
            for _ in range(3):
                statuses.append(h.read_response(reader).status)
        except Exception as e:  # noqa: BLE001
            statuses.append(repr(e))
        tap.eq(statuses, [200, 200, 200], "a stalled client that reads gets all three replies")
        # The others make no progress: closed after the idle timeout (8 s),
        # which the server's open sockets show (the clients read nothing).
        open_then = socket_fds(pid)
        deadline = time.monotonic() + 15
        while socket_fds(pid) > open_then - len(clients) and time.monotonic() < deadline:
            time.sleep(0.25)
        tap.ok(socket_fds(pid) <= open_then - len(clients),
               "clients that never read are closed after the idle timeout",
               "server sockets: %d before, %d now" % (open_then, socket_fds(pid)))
        for s in clients:
            s.close()
        tap.ok(h.Http(srv).get("/Tables").status == 200, "server answers after the clients left")
    finally:
        srv.stop_and_check(tap)


def test_eviction(tap):
    srv = h.Server(args=["--max-connections", "20", "--header-timeout-ms", "60000"])
    srv.start()
    try:
        http = h.Http(srv)
        socks = []
        for _ in range(20):
            socks.append(socket.create_connection((srv.host, srv.port), timeout=5))
            time.sleep(0.01)
        time.sleep(0.2)
        # The first connection is used now: it is no longer the idlest.
        first = h.Conn.__new__(h.Conn)
        first.http, first.sock, first.reader = http, socks[0], h._Reader(socks[0], 5)
        r = first.request("GET", "/Tables")
        tap.eq(r.status, 200, "at the cap, a connection already open is served")
        t0 = time.monotonic()
        r = http.get("/Tables", timeout=5)
        tap.eq(r.status, 200, "a newcomer at the connection cap is served")
        tap.ok(time.monotonic() - t0 < 2.0, "... at once (liveness)")
        tap.ok(is_closed(socks[1], 2.0), "the connection idle longest was closed to make room")
        tap.ok(not is_closed(socks[0], 0.2), "the recently used connection stays open")
        r = first.request("GET", "/Tables")
        tap.eq(r.status, 200, "... and is still served")
        closed = sum(1 for s in socks[2:] if is_closed(s, 0))
        tap.ok(closed <= 1, "no more connections were closed than needed", closed)
        for s in socks:
            s.close()
    finally:
        srv.stop_and_check(tap)


def test_timeouts(tap):
    srv = h.Server(args=["--header-timeout-ms", "500", "--request-timeout-ms", "1500",
                         "--idle-timeout-ms", "60000"])
    srv.start()
    try:
        http = h.Http(srv)
        # A connection that sends nothing at all.
        s = socket.create_connection((srv.host, srv.port), timeout=10)
        data, closed, took = read_until_closed(s, 8)
        s.close()
        tap.ok(closed and took < 5, "a silent connection is closed by the header timeout",
               "closed=%s after %.1f s" % (closed, took))
        tap.eq(data, b"", "... without an answer")
        # A body trickled one byte at a time.
        assert http.create_table("trickle").status == 201
        req = http.build("POST", "/trickle", body={"PartitionKey": "p", "RowKey": "r",
                                                   "Pad": "x" * 200})
        head, _, body = req.partition(b"\r\n\r\n")
        s = socket.create_connection((srv.host, srv.port), timeout=10)
        s.sendall(head + b"\r\n\r\n")
        stop = threading.Event()

        def trickle():
            for b in body[:-1]:
                if stop.wait(0.2):
                    return
                try:
                    s.sendall(bytes([b]))
                except OSError:
                    return
        th = threading.Thread(target=trickle, daemon=True)
        th.start()
        data, closed, took = read_until_closed(s, 10)
        stop.set()
        th.join(2)
        s.close()
        tap.ok(closed and took < 6, "a trickled body is cut by the request timeout",
               "closed=%s after %.1f s" % (closed, took))
        resp = h.first_response(data)
        got = (resp.status, resp.error_code(), resp.h("Connection")) if resp else data
        tap.eq(got, (500, "OperationTimedOut", "close"),
               "... answered 500 OperationTimedOut, Connection: close")
        tap.eq(http.get_entity("trickle", "p", "r").status, 404, "... and nothing was stored")
        # A slow but steady request under the deadline is not cut.
        s = socket.create_connection((srv.host, srv.port), timeout=10)
        req = http.build("POST", "/trickle", body={"PartitionKey": "p", "RowKey": "ok"})
        head, _, body = req.partition(b"\r\n\r\n")
        s.sendall(head + b"\r\n\r\n")
        time.sleep(0.4)
        s.sendall(body)
        resp = h.read_response(h._Reader(s, 5))
        s.close()
        tap.eq(resp.status, 201, "a body that arrives within the deadline is accepted")
    finally:
        srv.stop_and_check(tap)


def test_upgrade(tap):
    srv = h.Server()
    srv.start()
    try:
        http = h.Http(srv)
        assert http.create_table("upgr").status == 201
        hdrs = {"Connection": "Upgrade", "Upgrade": "websocket"}
        with http.connect(timeout=5) as c:
            r = c.request("POST", "/upgr", headers=hdrs,
                          body={"PartitionKey": "p", "RowKey": "u1"})
            tap.eq(r.status, 201, "POST with Connection: Upgrade and a body is answered")
            tap.ok(r.h("Upgrade") is None, "... without agreeing to the upgrade")
            r = c.request("GET", "/upgr(PartitionKey='p',RowKey='u1')")
            tap.eq(r.status, 200, "... and the connection goes on in HTTP/1.1")
            # Body sent after a pause, chunked, next request pipelined.
            raw = http.build("POST", "/upgr", headers=dict(hdrs, **{"Upgrade": "h2c"}),
                             body={"PartitionKey": "p", "RowKey": "u2"})
            head, _, body = raw.partition(b"\r\n\r\n")
            head = re.sub(rb"Content-Length: \d+", b"Transfer-Encoding: chunked", head)
            c.send(head + b"\r\n\r\n")
            time.sleep(0.2)
            c.send(b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n" +
                   http.build("GET", "/upgr(PartitionKey='p',RowKey='u2')"))
            r1 = c.read("POST")
            r2 = c.read("GET")
            tap.eq((r1.status, r2.status), (201, 200),
                   "chunked Upgrade request with a body, then a pipelined GET")
    finally:
        srv.stop_and_check(tap)


def check_413(tap, r, what):
    tap.eq((r.status, r.error_code()), (413, "RequestBodyTooLarge"), what)
    _, msg = r.error()
    tap.eq((msg or "").split("\n")[0], BODY_LIMIT_MSG, what + ": message")


def test_413(tap):
    srv = h.Server()
    srv.start()
    try:
        http = h.Http(srv)
        assert http.create_table("sizes").status == 201
        pad = b'{"PartitionKey":"p","RowKey":"big"}'
        # Content-Length announced over the limit: answered from the head.
        raw = http.build("POST", "/sizes", body=pad)
        head = re.sub(rb"Content-Length: \d+", b"Content-Length: %d" % (4 * MIB + 1),
                      raw.partition(b"\r\n\r\n")[0])
        with socket.create_connection((srv.host, srv.port), timeout=5) as s:
            s.sendall(head + b"\r\n\r\n")
            data, closed, took = read_until_closed(s, 5)
        r = h.first_response(data) or h.Response(0, "no answer", "", [], data)
        check_413(tap, r, "Content-Length 4 MiB + 1: 413 before any body byte")
        tap.ok(closed, "... and the connection is closed")
        # The whole body sent.
        r = http.request("POST", "/sizes", body=pad + b" " * (4 * MIB + 1 - len(pad)),
                         timeout=20)
        check_413(tap, r, "a 4 MiB + 1 byte insert body")
        # Chunked: refused when the total crosses the limit.
        raw = http.build("POST", "/sizes", body=pad)
        head = re.sub(rb"Content-Length: \d+", b"Transfer-Encoding: chunked",
                      raw.partition(b"\r\n\r\n")[0])
        block = b" " * 65536
        body = b"%x\r\n" % len(pad) + pad + b"\r\n" + \
            (b"%x\r\n" % len(block) + block + b"\r\n") * 70 + b"0\r\n\r\n"
        data, closed = h.raw_exchange(srv, head + b"\r\n\r\n" + body, timeout=10)
        r = h.first_response(data) or h.Response(0, "no answer", "", [], data)
        check_413(tap, r, "a chunked body of 4.4 MiB")
        tap.eq(http.get_entity("sizes", "p", "big").status, 404, "nothing was stored")
        exact = pad + b" " * (4 * MIB - len(pad))
        r = http.request("POST", "/sizes", body=exact, timeout=20)
        tap.eq(r.status, 201, "a body of exactly 4 MiB is accepted")
    finally:
        srv.stop_and_check(tap)


def test_emfile(tap):
    srv = h.Server()
    srv.start()
    socks = []
    try:
        # Few descriptors: accept() fails with EMFILE while clients wait.
        used = len(os.listdir("/proc/%d/fd" % srv.proc.pid))
        resource.prlimit(srv.proc.pid, resource.RLIMIT_NOFILE, (used + 5, used + 5))
        for _ in range(30):
            socks.append(socket.create_connection((srv.host, srv.port), timeout=5))
        time.sleep(2.5)
        lines = [ln for ln in srv.stderr_text().splitlines() if "accept failed" in ln]
        tap.ok(1 <= len(lines) <= 2, "EMFILE for 2.5 s logs one warning, not one per 200 ms",
               "\n".join(lines))
    finally:
        for s in socks:
            s.close()
        srv.stop_and_check(tap)


def main():
    tap = h.Tap()
    h.watchdog(240, tap=tap)
    for fn in (test_413, test_upgrade, test_timeouts, test_eviction, test_emfile,
               test_backpressure):
        tap.run(fn, tap)
    tap.done()


if __name__ == "__main__":
    main()
