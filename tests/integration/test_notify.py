#!/usr/bin/python3
"""test_notify.py - a tabled built with libsystemd tells systemd when it is
ready and when it stops (the Debian unit is Type=notify, so a build that
lost this would hang the service's start until systemd's timeout).

A unix datagram socket stands in for systemd's: tabled starts with
NOTIFY_SOCKET naming it. Checked: a datagram with READY=1 (and a STATUS=
line) arrives once tabled answers requests; after SIGTERM a datagram with
STOPPING=1 arrives and tabled exits with status 0. Skipped (TAP) when the
build's config.h says it was configured without libsystemd. TABLED and
TOP_BUILDDIR as under make check."""
import os
import socket
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import tabled_harness as h  # noqa: E402

TOP = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")


def built_with_systemd():
    try:
        with open(os.path.join(TOP, "config.h")) as f:
            return "#define HAVE_LIBSYSTEMD 1" in f.read()
    except OSError:
        return False


def main():
    if not built_with_systemd():
        print("1..0 # SKIP configured without libsystemd (install libsystemd-dev and rerun "
              "configure to test sd_notify)")
        return
    tap = h.Tap()
    h.watchdog(120, tap=tap)
    d = tempfile.mkdtemp(prefix="tabled-notify-")
    path = os.path.join(d, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(30)
    old = os.environ.get("NOTIFY_SOCKET")
    os.environ["NOTIFY_SOCKET"] = path
    try:
        srv = h.Server()
        srv.start()
        msg = sock.recv(4096).decode()
        tap.ok("READY=1" in msg.split("\n") and "STATUS=" in msg,
               "READY=1 with a STATUS line once tabled serves", msg)
        r = h.Http(srv).get("/Tables")
        tap.eq(r.status, 200, "and it answers requests")
        srv.proc.terminate()
        msg = sock.recv(4096).decode()
        tap.ok("STOPPING=1" in msg.split("\n"), "STOPPING=1 after SIGTERM", msg)
        tap.eq(srv.proc.wait(30), 0, "exit status 0")
    finally:
        if old is None:
            os.environ.pop("NOTIFY_SOCKET", None)
        else:
            os.environ["NOTIFY_SOCKET"] = old
        sock.close()
        os.unlink(path)
        os.rmdir(d)
    tap.done()


if __name__ == "__main__":
    main()
