#!/usr/bin/python3
"""test_access_log.py - the access log line of each answer.

A server with the access log on (its default; without --log-file it goes to standard output):
a table request's line carries the request id its answer sent
(x-ms-request-id), a refused request's too, and an admin listener
request's line has "-" for it (the admin listener sends none). Prints
TAP."""
import http.client
import os
import re
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402


admin_port = h.admin_port


def line_for(srv, needle, seconds=10):
    """The first access line containing needle (the log is flushed within
    a moment of the answer)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for line in list(srv.stdout_lines):
            if needle in line:
                return line
        time.sleep(0.1)
    return None


def main():
    tap = h.Tap()
    h.watchdog(120, tap=tap)
    srv = h.Server(backend="memory", args=["--access-log", "on", "--admin-port", "0"]).start()
    try:
        r = h.Http(srv).request("GET", "/Tables")
        rid = r.h("x-ms-request-id")
        line = line_for(srv, " /devstoreaccount1/Tables 200 ")
        tap.ok(rid and line and line.rstrip().endswith(rid),
               "a table request's access line ends with its x-ms-request-id",
               "id %r, line %r, lines %r" % (rid, line, srv.stdout_lines[-4:]))
        c = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
        c.request("GET", "/devstoreaccount1/Tables")    # unsigned: refused
        resp = c.getresponse()
        resp.read()
        rid2 = resp.getheader("x-ms-request-id")
        line2 = line_for(srv, " 401 ")
        tap.ok(resp.status == 401 and rid2 and line2 and line2.rstrip().endswith(rid2),
               "a refused request's line carries its request id too",
               "%r %r %r" % (resp.status, rid2, line2))
        c.close()
        c = http.client.HTTPConnection("127.0.0.1", admin_port(srv), timeout=10)
        c.request("GET", "/healthz")
        c.getresponse().read()
        line3 = line_for(srv, " /healthz ")
        tap.ok(line3 and line3.rstrip().endswith(" -"),
               "an admin request's line has '-' for the request id", repr(line3))
    finally:
        srv.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
