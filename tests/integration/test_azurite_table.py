#!/usr/bin/python3
"""Integration test: tabled started as azurite-table (a link named like the
peer emulator's table command) with realistic Azurite command lines, each
followed by an SDK life cycle (Python azure-data-tables):

  testcontainers   azurite-table --tableHost 0.0.0.0 --tablePort 10002
                   (testcontainers' Azurite module with the table service)
  image default    the emulator container image's default command,
                   azurite -l /data --blobHost 0.0.0.0 --queueHost 0.0.0.0
                   --tableHost 0.0.0.0 (data kept across a restart)
  ci               --skipApiVersionCheck --inMemoryPersistence
  accounts         AZURITE_ACCOUNTS with two accounts (devstoreaccount1 gone)

Every server binds to 127.0.0.1 only: 0.0.0.0 in a command line is replaced
by 127.0.0.1 and 10002 by a free port, so nothing is exposed beyond loopback
and parallel runs do not collide. The readiness lines are those Azurite
prints; the test waits for them as test frameworks do. Prints TAP."""
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
    from azure.data.tables import TableServiceClient, UpdateMode
    IMPORT_ERROR = None
except ImportError as e:
    IMPORT_ERROR = e

KW = dict(retry_total=0, connection_timeout=10, read_timeout=20)
READY = "Azurite Table service successfully started on "
LISTENING = "Azurite Table service is successfully listening at http://"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def loopback(args, port):
    """The command line with 0.0.0.0 -> 127.0.0.1 and 10002 -> port."""
    out = []
    for a in args:
        a = a.replace("0.0.0.0", "127.0.0.1")
        out.append(str(port) if a == "10002" else a)
    return out


class Azurite:
    """One azurite-table process (the link to $TABLED)."""

    def __init__(self, link, args, env=None, cwd=None):
        self.lines = []
        self.q = queue.Queue()
        e = dict(os.environ)
        e.update(env or {})
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([link] + args, stdout=subprocess.PIPE, stderr=self.err,
                                     stdin=subprocess.DEVNULL, env=e, cwd=cwd)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            self.q.put(line)
        self.q.put(None)

    def wait_ready(self, timeout=15):
        """The host:port of the readiness line, or None."""
        end = time.monotonic() + timeout
        found = None
        while time.monotonic() < end:
            try:
                line = self.q.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                return None
            if line.startswith(READY):
                found = line[len(READY):]
            if line.startswith(LISTENING):
                return found
        return None

    def next_line(self, deadline):
        """The next stdout line before deadline (time.monotonic()), or None
        when the process ended or the deadline passed."""
        while time.monotonic() < deadline:
            try:
                return self.q.get(timeout=0.5)
            except queue.Empty:
                continue
        return None

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                return None
        return self.proc.returncode


def conn_str(port, account=h.DEV_ACCOUNT, key=h.DEV_KEY):
    return ("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;"
            "TableEndpoint=http://127.0.0.1:%d/%s;" % (account, key, port, account))


def lifecycle(tap, what, port, account=h.DEV_ACCOUNT, key=h.DEV_KEY, table="azlife"):
    """Create, insert, query, update, delete against the server."""
    svc = TableServiceClient.from_connection_string(conn_str(port, account, key), **KW)
    t = svc.create_table(table)
    t.create_entity({"PartitionKey": "p", "RowKey": "1", "N": 1})
    t.upsert_entity({"PartitionKey": "p", "RowKey": "2", "N": 2})
    t.update_entity({"PartitionKey": "p", "RowKey": "1", "N": 10}, mode=UpdateMode.MERGE)
    got = sorted((e["RowKey"], e["N"]) for e in t.query_entities("PartitionKey eq 'p'"))
    tap.eq(got, [("1", 10), ("2", 2)], "%s: SDK life cycle (create, upsert, merge, query)"
           % what)
    t.delete_entity("p", "2")
    tap.eq([e["RowKey"] for e in t.list_entities()], ["1"], "%s: delete entity" % what)
    return svc


def start(tap, link, what, args, env=None, cwd=None):
    port = free_port()
    az = Azurite(link, loopback(args, port), env, cwd)
    where = az.wait_ready()
    tap.eq(where, "127.0.0.1:%d" % port, "%s: Azurite's readiness lines, with the port" % what)
    if where is None:
        tap.diag("stdout: %s\nstderr: %s" % (az.lines, az.stderr()[-2000:]))
    return az, port


def main():
    tap = h.Tap()
    h.watchdog(240, tap=tap)
    if IMPORT_ERROR:
        tap.ok(False, "azure-data-tables importable", str(IMPORT_ERROR))
        tap.done()
    tmp = tempfile.mkdtemp(prefix="tabled-azurite-")
    link = os.path.join(tmp, "azurite-table")
    os.symlink(h.tabled_path(), link)
    try:
        # testcontainers' table-only command line
        az, port = start(tap, link, "testcontainers",
                         ["--tableHost", "0.0.0.0", "--tablePort", "10002"], cwd=tmp)
        tap.run(lifecycle, tap, "testcontainers", port)
        tap.eq(az.stop(), 0, "testcontainers: exit 0 on SIGTERM")
        tap.ok(os.path.isdir(os.path.join(tmp, "__tabled_table__")),
               "testcontainers: data in the current directory, as Azurite's")

        # the container image's default command, data in -l across a restart
        loc = os.path.join(tmp, "data")
        image = ["-l", loc, "--blobHost", "0.0.0.0", "--queueHost", "0.0.0.0",
                 "--tableHost", "0.0.0.0", "--tablePort", "10002"]
        az, port = start(tap, link, "image default", image)
        tap.run(lifecycle, tap, "image default", port, table="imagetable")
        tap.eq(az.stop(), 0, "image default: exit 0")
        tap.ok("ignoring --blobHost, --queueHost" in az.stderr(),
               "image default: the other services' flags are noted", az.stderr()[-500:])
        az, port = start(tap, link, "image default restart", image)
        svc = TableServiceClient.from_connection_string(conn_str(port), **KW)
        tap.eq([e["RowKey"] for e in svc.get_table_client("imagetable").list_entities()],
               ["1"], "image default: data kept in -l across a restart")
        az.stop()

        # a CI configuration
        dbg = os.path.join(tmp, "debug.log")
        az, port = start(tap, link, "ci", ["--skipApiVersionCheck", "--inMemoryPersistence",
                                           "--tableHost", "127.0.0.1", "--tablePort", "10002",
                                           "--silent", "--debug", dbg])
        tap.run(lifecycle, tap, "ci", port)
        tap.eq(az.stop(), 0, "ci: exit 0")
        tap.ok(not any(" /devstoreaccount1/" in l for l in az.lines),
               "ci: --silent means no access log", "\n".join(az.lines[-5:]))
        tap.ok(os.path.exists(dbg) and os.path.getsize(dbg) > 0, "ci: --debug file written")
        tap.ok(not os.path.exists(os.path.join(tmp, "__tabled_table__", "azlife")),
               "ci: --inMemoryPersistence")

        # AZURITE_ACCOUNTS with two accounts
        k1, k2 = "a2V5b25la2V5b25la2V5b25l", "a2V5dHdva2V5dHdva2V5dHdv"
        env = {"AZURITE_ACCOUNTS": "account1:%s;account2:%s:%s" % (k1, k2, k1)}
        az, port = start(tap, link, "accounts", ["--inMemoryPersistence", "--tablePort",
                                                 "10002"], env=env)
        tap.run(lifecycle, tap, "account1", port, "account1", k1)
        tap.run(lifecycle, tap, "account2", port, "account2", k2)
        tap.run(lifecycle, tap, "account2 secondary key", port, "account2", k1, "second")
        try:
            TableServiceClient.from_connection_string(conn_str(port), **KW).create_table("x")
            tap.ok(False, "accounts: devstoreaccount1 is refused")
        except HttpResponseError as e:
            tap.eq(e.status_code, 403, "accounts: devstoreaccount1 is refused")
        az.stop()

        # what it cannot honour: a clear message, status 2
        p = subprocess.run([link, "--tablePort", "1", "--port", "5"], capture_output=True,
                           timeout=10)
        tap.eq(p.returncode, 2, "unknown flag: exit status 2")
        tap.ok(b"azurite-table: unknown option '--port'" in p.stderr, "message names it",
               p.stderr.decode())
        p = subprocess.run([link, "--oauth", "basic"], capture_output=True, timeout=10)
        tap.ok(p.returncode == 2 and b"HTTPS" in p.stderr, "--oauth without --cert refused",
               p.stderr.decode())
        p = subprocess.run([link, "--help"], capture_output=True, timeout=10)
        tap.ok(p.returncode == 0 and b"--tableHost" in p.stdout, "--help shows Azurite's flags")
    except ResourceNotFoundError as e:
        tap.ok(False, "unexpected ResourceNotFoundError", str(e)[:500])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
