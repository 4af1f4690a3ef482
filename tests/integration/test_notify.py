#!/usr/bin/python3
"""test_notify.py - tabled tells systemd when it is ready and when it stops (the Debian unit is Type=notify, so a build that
lost this would hang the service's start until systemd's timeout).

A unix datagram socket stands in for systemd's: tabled starts with
NOTIFY_SOCKET naming it. Checked: a datagram with READY=1 (and a STATUS=
line) arrives once tabled answers requests; after SIGTERM a datagram with
STOPPING=1 arrives and tabled exits with status 0. The same with an
abstract socket ("@name", as systemd may pass), and with a NOTIFY_SOCKET
naming no socket (tabled starts and serves all the same); and the binary
does not link libsystemd (server/notify.c speaks the protocol itself).
Skipped (TAP) when the build's config.h says it was configured with
--disable-sd-notify. TABLED and TOP_BUILDDIR as under make check."""
import subprocess
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
            return "#define WITH_SD_NOTIFY 1" in f.read()
    except OSError:
        return False


def main():
    if not built_with_systemd():
        print("1..0 # SKIP configured with --disable-sd-notify (configure without it "
              "to test sd_notify)")
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
    tap.run(abstract_socket, tap)
    tap.run(no_listener, tap)
    ldd = subprocess.run(["ldd", h.tabled_path()], capture_output=True, timeout=30)
    tap.ok(ldd.returncode == 0 and b"libsystemd" not in ldd.stdout,
           "tabled does not link libsystemd", ldd.stdout.decode())
    tap.done()


def with_notify_socket(value, fn):
    """fn() with NOTIFY_SOCKET=value, the old value restored after."""
    old = os.environ.get("NOTIFY_SOCKET")
    os.environ["NOTIFY_SOCKET"] = value
    try:
        return fn()
    finally:
        if old is None:
            os.environ.pop("NOTIFY_SOCKET", None)
        else:
            os.environ["NOTIFY_SOCKET"] = old


def abstract_socket(tap):
    """NOTIFY_SOCKET=@name: an abstract socket, no file."""
    name = "tabled-notify-%d" % os.getpid()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(30)
    try:
        srv = with_notify_socket("@" + name, lambda: h.Server().start())
        msg = sock.recv(4096).decode()
        tap.ok("READY=1" in msg.split("\n"), "READY=1 through an abstract socket", msg)
        srv.proc.terminate()
        msg = sock.recv(4096).decode()
        tap.ok("STOPPING=1" in msg.split("\n"), "STOPPING=1 through it", msg)
        tap.eq(srv.proc.wait(30), 0, "exit status 0")
    finally:
        sock.close()


def no_listener(tap):
    """A NOTIFY_SOCKET nobody listens on does not stop tabled."""
    d = tempfile.mkdtemp(prefix="tabled-notify-")
    try:
        srv = with_notify_socket(os.path.join(d, "nobody"), lambda: h.Server().start())
        tap.eq(h.Http(srv).get("/Tables").status, 200,
               "with no socket at NOTIFY_SOCKET tabled serves all the same")
        srv.proc.terminate()
        tap.eq(srv.proc.wait(30), 0, "and stops with status 0")
    finally:
        os.rmdir(d)


if __name__ == "__main__":
    main()
