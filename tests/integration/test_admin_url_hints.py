#!/usr/bin/python3
"""Integration test: the admin clients say what to do with a wrong --admin.

`tabled advise` and `tabled export --admin URL` talk to the admin listener
(--admin-port). Two mistakes a person makes:

  nothing listens at the URL (the server is stopped, or runs without
  --admin-port): the message says nothing answers there and names
  --admin-port and --admin, exit non-zero;
  the URL is the table port (the Table service answers, with its
  x-ms-request-id header and storage error body): the message says it is
  the table port, not the admin listener, exit non-zero.

The right URL still works (the admin listener's own answers are not taken
for the table port's). Prints TAP."""
import os
import re
import socket
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402


admin_port = h.admin_port


def closed_port():
    """A loopback port nothing listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(args):
    """(exit status, stderr text) of tabled ARGS."""
    p = subprocess.run([h.tabled_path()] + args, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stderr


def main():
    tap = h.Tap()
    tmp = tempfile.mkdtemp(prefix="tabled-admin-hints-")
    out = os.path.join(tmp, "x.jsonl")
    srv = h.Server(["--admin-port", "0"], backend="memory").start()
    try:
        table_url = "http://127.0.0.1:%d" % srv.port
        admin_url = "http://127.0.0.1:%d" % admin_port(srv)
        dead_url = "http://127.0.0.1:%d" % closed_port()

        rc, err = run(["advise", "--admin", dead_url])
        tap.ok(rc == 2 and "nothing answers at " + dead_url in err and
               "--admin-port" in err and "--admin http://127.0.0.1:" in err,
               "advise: nothing answers says to start with --admin-port", err)
        rc, err = run(["export", "--admin", dead_url, "-o", out])
        tap.ok(rc != 0 and "nothing answers at " + dead_url in err and "--admin-port" in err,
               "export --admin: nothing answers says to start with --admin-port", err)

        rc, err = run(["advise", "--admin", table_url])
        tap.ok(rc == 2 and table_url + " is the table port, not the admin listener" in err and
               "--admin-port" in err, "advise: the table port is named as such", err)
        rc, err = run(["export", "--admin", table_url, "-o", out])
        tap.ok(rc != 0 and table_url + " is the table port, not the admin listener" in err,
               "export --admin: the table port is named as such", err)

        rc, err = run(["advise", "--admin", admin_url])
        tap.ok(rc == 0 and "table port" not in err, "advise: the admin URL still works", err)
        rc, err = run(["export", "--admin", admin_url, "-o", out])
        tap.ok(rc == 0 and "table port" not in err, "export --admin: the admin URL still works",
               err)
    finally:
        srv.stop_and_check(tap)
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)
    tap.done()


main()
