#!/usr/bin/python3
"""Integration test: OpenSSL is loaded when a feature first needs it
(core/sslload.c; doc/performance.md, Idle footprint).

  idle        tabled with the defaults (LevelDB) maps neither libcrypto nor
              libssl nor libevent_openssl (/proc/PID/maps) before any
              request, nor after a request refused without a signature
              check; a SharedKey-signed request succeeds and maps libcrypto
              (only: libssl and libevent_openssl stay out).
  tls         with --tls-port the three are mapped at start, and an HTTPS
              request is answered.
  missing     the library really missing: tabled started in a private
              mount namespace (unshare -rm) where an empty file is
              bind-mounted over the libcrypto (or libssl) the first run
              mapped. A signed request is answered 500 InternalError, the
              error log says once which library, dlerror's text and what
              to install, the server keeps serving and stops cleanly;
              --tls-port and --admin-token refuse to start with the same
              message. Skipped when unprivileged user namespaces are not
              available.
Prints TAP; exit status 1 when a check fails."""
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

LIBS = ("libcrypto.so", "libssl.so", "libevent_openssl")


def mapped(pid):
    """{library prefix: path} of the LIBS mapped in process pid."""
    found = {}
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            for lib in LIBS:
                if base.startswith(lib):
                    found[lib] = path
    return found


def skip(tap, what, why):
    with tap._lock:
        tap.n += 1
        tap._emit("ok %d - %s # SKIP %s" % (tap.n, what, why))


def test_idle(tap, seen):
    srv = h.Server(backend="leveldb").start()
    try:
        pid = srv.proc.pid
        tap.eq(sorted(mapped(pid)), [], "defaults: no OpenSSL library mapped before any request")
        c = h.Http(srv)
        r = c.get("/Tables", sign_it=False)
        tap.eq(r.status, 403, "an unsigned request is refused")
        tap.eq(sorted(mapped(pid)), [], "a refusal without a signature check loads nothing")
        r = c.get("/Tables")
        tap.eq(r.status, 200, "a SharedKey-signed request succeeds")
        r = c.create_table("lazyssl")
        tap.eq(r.status, 201, "a signed insert of a table succeeds")
        m = mapped(pid)
        tap.ok("libcrypto.so" in m, "libcrypto is mapped after the first signed request", m)
        tap.ok("libssl.so" not in m and "libevent_openssl" not in m,
               "libssl and libevent_openssl are not (signatures need libcrypto only)", m)
        seen.update(m)
    finally:
        srv.stop_and_check(tap)


def test_tls(tap, tmp, seen):
    cert, key = h.make_cert(tmp)
    srv = None
    for _ in range(5):
        port = h.free_port()
        try:
            srv = h.Server(args=["--tls-port", str(port), "--tls-cert", cert,
                                 "--tls-key", key]).start()
            break
        except h.ServerError as e:
            srv, err = None, e
    if not srv:
        tap.ok(False, "tabled starts with HTTPS", str(err))
        return
    try:
        m = mapped(srv.proc.pid)
        tap.eq(sorted(m), sorted(LIBS), "--tls-port: the three libraries are mapped at start")
        seen.update(m)
        ctx = ssl.create_default_context(cafile=cert)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
                t.sendall(b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Connection: close\r\n\r\n")
                head = t.recv(64)
        tap.ok(re.match(rb"HTTP/1.1 40[13] ", head), "an HTTPS request is answered", head)
    finally:
        srv.stop_and_check(tap)


def hidden_wrapper(tmp, lib_path):
    """A script that runs tabled (its arguments) in a mount namespace of its
    own where lib_path is an empty file."""
    empty = os.path.join(tmp, "empty.so")
    open(empty, "w").close()
    wrapper = os.path.join(tmp, "tabled-without-%s" % os.path.basename(lib_path))
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec unshare -rm sh -c 'mount --bind \"$0\" \"$1\" && shift && "
                "exec \"$@\"' %s %s %s \"$@\"\n" % (empty, lib_path, h.tabled_path()))
    os.chmod(wrapper, 0o755)
    return wrapper


def start_failure(wrapper, args):
    """(exit status or None when it kept running, output) of a start that
    must fail."""
    tmp = tempfile.mkdtemp(prefix="tabled-lazyssl-")
    try:
        p = subprocess.run([wrapper, "--port", "0", "--backend", "memory", "--log-level",
                            "warn"] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           cwd=tmp, timeout=30)
        return p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        return None, (e.stdout or b"").decode("utf-8", "replace")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_missing(tap, tmp, seen):
    probe = subprocess.run(["unshare", "-rm", "true"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    if probe.returncode != 0 or "libcrypto.so" not in seen:
        skip(tap, "a missing libcrypto", "no unprivileged user namespaces (unshare -rm)"
             if probe.returncode else "libcrypto's path not seen")
        return
    crypto = seen["libcrypto.so"]
    soname = os.path.basename(crypto)
    wrapper = hidden_wrapper(tmp, crypto)
    old = os.environ.get("TABLED")
    os.environ["TABLED"] = wrapper
    try:
        srv = h.Server(backend="leveldb").start()
    finally:
        if old is None:
            del os.environ["TABLED"]
        else:
            os.environ["TABLED"] = old
    try:
        c = h.Http(srv)
        for i in range(2):
            r = c.get("/Tables")
            tap.ok((r.status, r.error_code()) == (500, "InternalError"),
                   "libcrypto missing: a signed request is answered 500 InternalError (%d)"
                   % (i + 1), repr(r))
        r = c.get("/Tables", sign_it=False)
        tap.eq(r.status, 403, "and the server goes on answering")
        err = srv.stderr_text()
        lines = [ln for ln in err.splitlines() if "cannot load" in ln]
        tap.eq(len(lines), 1, "one line in the error log")
        line = lines[0] if lines else ""
        tap.ok(soname in line and "file too short" in line and "install the package" in line
               and "libssl3" in line,
               "it names the library, dlerror's text and what to install", err[-2000:])
    finally:
        srv.stop_and_check(tap)

    rc, out = start_failure(wrapper, ["--admin-port", "0", "--admin-token", "a-token-of-20-chars"])
    tap.ok(rc not in (None, 0) and "ready at" not in out and "cannot load %s" % soname in out,
           "libcrypto missing: --admin-token refuses to start with the message (exit %s)" % rc,
           out[-1500:])
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    if "libssl.so" in seen:
        wrapper = hidden_wrapper(tmp, seen["libssl.so"])
        name = os.path.basename(seen["libssl.so"])
        rc, out = start_failure(wrapper, ["--tls-port", str(h.free_port()), "--tls-cert", cert,
                                          "--tls-key", key])
        tap.ok(rc not in (None, 0) and "ready at" not in out and "cannot load %s" % name in out
               and "TLS" in out and not h.SANITIZER_RE.search(out),
               "libssl missing: --tls-port refuses to start with the message (exit %s)" % rc,
               out[-1500:])


def main():
    tap = h.Tap()
    seen = {}
    tmp = tempfile.mkdtemp(prefix="tabled-lazyssl-")
    try:
        tap.run(test_idle, tap, seen)
        tap.run(test_tls, tap, tmp, seen)
        tap.run(test_missing, tap, tmp, seen)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
