#!/usr/bin/python3
"""Integration test: SIGHUP reloads the configuration without dropping a
connection (doc/tabled.conf.5, RELOADING).

tabled starts with --config FILE (an account with key A, a second account,
a log file, a TLS certificate) and HTTPS. Then, each time after rewriting
what it reads and sending SIGHUP, waiting for the log line that says the
reload was done or refused:

  rotation     key1 = B, key2 = A: both keys work, on new connections and
               on a keep-alive connection opened before the reload.
  revocation   key1 = B alone and the second account removed: A gets 403
               AuthenticationFailed (also on the old keep-alive
               connection), B works, the removed account's key gets 403;
               an account added and a changed scan-budget are named as
               needing a restart.
  refusal      a syntax error, then a key that is not base64: one "reload
               refused" line each, the process lives, B still works and A
               is still refused.
  tls          the certificate files replaced by another self-signed one:
               new HTTPS connections see the new certificate (its SHA-256
               fingerprint), one opened before still answers; a garbage
               certificate is refused and the last good one stays.
  log file     the log file renamed (as logrotate does): after SIGHUP new
               lines go to a new file at the configured path.
The process must be alive after every SIGHUP and exit 0 on SIGTERM.
"""
import hashlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

ACCT = "rotacct"
OTHER = "otheracct"
NEWACCT = "newacct"
KEY_A = "a2V5LUEta2V5LUEta2V5LUEta2V5LUEta2V5LUEta2V5LUEtMDEyMzQ1Njc4OQ=="
KEY_B = "a2V5LUIta2V5LUIta2V5LUIta2V5LUIta2V5LUIta2V5LUItMDEyMzQ1Njc4OQ=="
KEY_O = "a2V5LU8ta2V5LU8ta2V5LU8ta2V5LU8ta2V5LU8ta2V5LU8tMDEyMzQ1Njc4OQ=="
WAIT = 60.0   # generous: the machine is shared


def fingerprint_pem(path):
    with open(path) as f:
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(f.read())).hexdigest()


class Env:
    """The files tabled reads and writes, and the running server."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.conf = os.path.join(tmp, "tabled.conf")
        self.log = os.path.join(tmp, "tabled.log")
        self.cert = os.path.join(tmp, "server-cert.pem")
        self.key = os.path.join(tmp, "server-key.pem")
        self.srv = None
        self.tls_port = None
        self.logs = [self.log]   # every file lines may be in

    def write_conf(self, body):
        text = ("log-file = %s\nlog-level = info\ntls-cert = %s\ntls-key = %s\n"
                % (self.log, self.cert, self.key)) + body
        tmp = self.conf + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.conf)

    def log_text(self):
        out = ""
        for p in self.logs:
            try:
                with open(p, encoding="utf-8", errors="replace") as f:
                    out += f.read()
            except FileNotFoundError:
                pass
        return out

    def count(self, marker):
        return self.log_text().count(marker)

    def hup(self, marker):
        """SIGHUP, then waits until one more line holding marker is logged
        (or the process died, or WAIT passed). Returns True when seen."""
        before = self.count(marker)
        self.srv.proc.send_signal(signal.SIGHUP)
        end = time.monotonic() + WAIT
        while time.monotonic() < end:
            if self.count(marker) > before:
                return True
            if not self.srv.alive():
                return False
            time.sleep(0.05)
        return False

    def tls_connect(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        raw = socket.create_connection(("127.0.0.1", self.tls_port), timeout=h.IO_TIMEOUT)
        return ctx.wrap_socket(raw, server_hostname="127.0.0.1")


RELOADED = "reload: configuration reloaded"
REFUSED = "reload refused"


def status_on(sock_reader, http, sock):
    """One signed GET /Tables on an open socket; the status."""
    sock.sendall(http.build("GET", "/Tables"))
    return h.read_response(sock_reader, "GET").status


def main():
    tap = h.Tap()
    try:
        subprocess.run(["openssl", "version"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        tap.ok(False, "openssl CLI available", str(e))
        tap.done()
    tmp = tempfile.mkdtemp(prefix="tabled-reload-")
    env = Env(tmp)
    try:
        run(tap, env)
    finally:
        if env.srv:
            env.srv.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


def start(tap, env):
    """tabled with HTTPS on a free port (a few tries if it is taken)."""
    last = None
    for _ in range(5):
        env.tls_port = h.free_port()
        srv = h.Server(args=["--config", env.conf, "--tls-port", str(env.tls_port),
                             "--log-level", "info"])
        try:
            srv.start()
            return srv
        except h.ServerError as e:
            last = e
    tap.ok(False, "tabled starts with --config and HTTPS", str(last))
    return None


def run(tap, env):
    cert_a, key_a = h.make_cert(env.tmp, "a")
    cert_b, key_b = h.make_cert(env.tmp, "b")
    shutil.copy(cert_a, env.cert)
    shutil.copy(key_a, env.key)
    env.write_conf("[account %s]\nkey1 = %s\n[account %s]\nkey1 = %s\n"
                   % (ACCT, KEY_A, OTHER, KEY_O))
    env.srv = start(tap, env)
    if not env.srv:
        return
    srv = env.srv
    ha = h.Http(srv, account=ACCT, key=KEY_A)
    hb = h.Http(srv, account=ACCT, key=KEY_B)
    ho = h.Http(srv, account=OTHER, key=KEY_O)
    tap.eq(ha.get("/Tables").status, 200, "key A works before any reload")
    tap.eq(hb.get("/Tables").status, 403, "key B is refused before any reload")
    tap.ok(os.path.exists(env.log), "the configured log file is made at start-up")

    keep = socket.create_connection((srv.host, srv.port), timeout=h.IO_TIMEOUT)
    keep_r = h._Reader(keep, h.IO_TIMEOUT)
    tap.eq(status_on(keep_r, ha, keep), 200, "keep-alive connection: key A works")

    # rotation: key1 = B, key2 = A
    env.write_conf("[account %s]\nkey1 = %s\nkey2 = %s\n[account %s]\nkey1 = %s\n"
                   % (ACCT, KEY_B, KEY_A, OTHER, KEY_O))
    tap.ok(env.hup(RELOADED), "SIGHUP: the reload is logged in the configured log file",
           env.log_text()[-2000:])
    tap.ok(srv.alive(), "tabled is alive after SIGHUP")
    tap.eq(hb.get("/Tables").status, 200, "rotation: key B (new key1) works")
    tap.eq(ha.get("/Tables").status, 200, "rotation: key A (now key2) works")
    tap.eq(status_on(keep_r, hb, keep), 200, "rotation: key B on the old keep-alive connection")
    tap.eq(status_on(keep_r, ha, keep), 200, "rotation: key A on the old keep-alive connection")

    # revocation: A removed, the other account removed, one added, a
    # setting that needs a restart changed
    env.write_conf("scan-budget = 7\n[account %s]\nkey1 = %s\n[account %s]\nkey1 = %s\n"
                   % (ACCT, KEY_B, NEWACCT, KEY_O))
    tap.ok(env.hup(RELOADED), "SIGHUP after removing key A: reload logged")
    tap.ok(srv.alive(), "tabled is alive after the second SIGHUP")
    r = ha.get("/Tables")
    tap.eq((r.status, r.error_code()), (403, "AuthenticationFailed"),
           "revocation: key A gets 403 AuthenticationFailed")
    tap.eq(hb.get("/Tables").status, 200, "revocation: key B works")
    tap.eq(status_on(keep_r, ha, keep), 403, "revocation: key A refused on the old connection")
    tap.eq(status_on(keep_r, hb, keep), 200, "revocation: key B works on the old connection")
    tap.eq(ho.get("/Tables").status, 403, "an account removed from the file is refused at once")
    text = env.log_text()
    tap.ok("scan-budget changed; it needs a restart" in text,
           "a changed setting that cannot change live is logged as needing a restart")
    tap.ok("account %s was added; it is served after a restart" % NEWACCT in text,
           "an added account is logged as needing a restart")

    # refusal: syntax error, then a key that is not base64
    # line 7 of the file: 4 lines of write_conf, the section, key1, this one
    env.write_conf("[account %s]\nkey1 = %s\nthis line is not a setting\n" % (ACCT, KEY_A))
    tap.ok(env.hup(REFUSED), "a syntax error: reload refused and logged")
    line = [x for x in env.log_text().splitlines() if REFUSED in x][-1:]
    tap.ok(line and "tabled.conf:7" in line[0] and "stays in force" in line[0],
           "the refusal names the file and line and says the old configuration stays", line)
    tap.ok(srv.alive(), "tabled is alive after a refused reload")
    tap.eq(hb.get("/Tables").status, 200, "after the refusal key B still works")
    tap.eq(ha.get("/Tables").status, 403, "after the refusal key A is still refused")
    env.write_conf("[account %s]\nkey1 = %s\nkey2 = not*base64!\n" % (ACCT, KEY_A))
    tap.ok(env.hup(REFUSED), "a bad base64 key: reload refused and logged")
    tap.ok("key2 is not valid base64" in env.log_text(), "the refusal says which key is bad")
    tap.eq(hb.get("/Tables").status, 200, "after the second refusal key B still works")
    tap.eq(status_on(keep_r, ha, keep), 403, "and key A is still refused on the old connection")
    keep.close()

    # TLS: replace the certificate files
    env.write_conf("[account %s]\nkey1 = %s\n" % (ACCT, KEY_B))
    fp_a, fp_b = fingerprint_pem(cert_a), fingerprint_pem(cert_b)
    old = env.tls_connect()
    old_r = h._Reader(old, h.IO_TIMEOUT)
    tap.eq(hashlib.sha256(old.getpeercert(binary_form=True)).hexdigest(), fp_a,
           "HTTPS serves certificate A before the reload")
    tap.eq(status_on(old_r, hb, old), 200, "HTTPS request on the connection opened before")
    shutil.copy(cert_b, env.cert)
    shutil.copy(key_b, env.key)
    tap.ok(env.hup(RELOADED), "SIGHUP after replacing the certificate: reload logged")
    new = env.tls_connect()
    tap.eq(hashlib.sha256(new.getpeercert(binary_form=True)).hexdigest(), fp_b,
           "a new HTTPS connection sees the new certificate")
    tap.eq(status_on(h._Reader(new, h.IO_TIMEOUT), hb, new), 200,
           "HTTPS request on the new connection")
    new.close()
    tap.eq(status_on(old_r, hb, old), 200, "the HTTPS connection opened before still answers")
    old.close()
    with open(env.cert, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    tap.ok(env.hup(REFUSED), "a garbage certificate: reload refused")
    again = env.tls_connect()
    tap.eq(hashlib.sha256(again.getpeercert(binary_form=True)).hexdigest(), fp_b,
           "after the refusal new connections still get the last good certificate")
    again.close()
    shutil.copy(cert_b, env.cert)

    # log file: renamed as logrotate does, then SIGHUP
    rotated = env.log + ".1"
    os.rename(env.log, rotated)
    env.logs = [rotated, env.log]
    tap.ok(env.hup(RELOADED), "SIGHUP after renaming the log file: reload logged")
    try:
        with open(env.log, encoding="utf-8", errors="replace") as f:
            fresh = f.read()
    except FileNotFoundError:
        fresh = ""
    with open(rotated, encoding="utf-8", errors="replace") as f:
        old_text = f.read()
    tap.ok(RELOADED in fresh, "new lines go to a new file at the configured path", fresh)
    tap.ok(old_text.rstrip().endswith("reading the configuration again"),
           "the renamed file ends with the lines written before the switch",
           old_text[-500:])
    tap.eq(hb.get("/Tables").status, 200, "key B works after the log file switch")
    srv.stop_and_check(tap)


if __name__ == "__main__":
    main()
