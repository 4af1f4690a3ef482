#!/usr/bin/python3
"""Integration test: azurite-table -l DIR where Azurite (npm azurite, run
here) left its table database __azurite_db_table__.json and tabled has no
store yet.

  notice     start-up prints the exact "tabled import --from-azurite"
             command; the tables are not served; running that command and
             starting again serves Azurite's entities
  flag       --import-azurite-db imports at start-up, before listening, and
             only once (a later start with the flag leaves the store alone)
  existing   a DIR that already holds a tabled store gets no notice
Prints TAP."""
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import queue
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402
from test_azurite_table import Azurite, conn_str, free_port, KW  # noqa: E402
from test_export_import import azurite_bin  # noqa: E402

try:
    from azure.data.tables import TableServiceClient
    IMPORT_ERROR = None
except ImportError as e:
    IMPORT_ERROR = e

DB = "__azurite_db_table__.json"


def azurite_database(tap, tmp):
    """A DIR written by the real Azurite: table AzTable with 3 entities.
    Returns the path of its database file, or None."""
    exe, why = azurite_bin()
    if not exe:
        tap.ok(False, "azurite from npm", why)
        return None
    exe = os.path.abspath(exe)
    loc = os.path.join(tmp, "azurite-src")
    os.makedirs(loc)
    port = free_port()
    proc = subprocess.Popen([exe, "--tableHost", "127.0.0.1", "--tablePort", str(port),
                             "-l", loc, "--skipApiVersionCheck", "--disableTelemetry"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, cwd=loc)
    q = queue.Queue()
    threading.Thread(target=lambda: [q.put(x) for x in proc.stdout], daemon=True).start()
    end = time.monotonic() + 60
    ready = False
    while time.monotonic() < end and not ready and proc.poll() is None:
        try:
            ready = b"successfully started" in q.get(timeout=1)
        except queue.Empty:
            pass
    tap.ok(ready, "azurite: started")
    if not ready:
        proc.kill()
        return None
    try:
        svc = TableServiceClient.from_connection_string(conn_str(port), **KW)
        t = svc.create_table("AzTable")
        for i in range(3):
            t.create_entity({"PartitionKey": "p", "RowKey": "r%d" % i, "N": i})
    finally:
        proc.send_signal(signal.SIGINT)      # Azurite saves its database on SIGINT
        proc.wait(30)
    db = os.path.join(loc, DB)
    tap.ok(os.path.exists(db), "azurite: database file written")
    return db if os.path.exists(db) else None


def workspace(tmp, name, db):
    """A fresh -l DIR holding a copy of Azurite's database."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    shutil.copy(db, os.path.join(d, DB))
    return d


def rows(port, table="AzTable"):
    svc = TableServiceClient.from_connection_string(conn_str(port), **KW)
    if table not in [t.name for t in svc.list_tables()]:
        return None
    return sorted((e["RowKey"], e["N"]) for e in svc.get_table_client(table).list_entities())


def start(tap, link, what, args):
    port = free_port()
    az = Azurite(link, args + ["--tableHost", "127.0.0.1", "--tablePort", str(port)])
    where = az.wait_ready()
    tap.eq(where, "127.0.0.1:%d" % port, "%s: started" % what)
    if where is None:
        tap.diag("stdout: %s\nstderr: %s" % (az.lines, az.stderr()[-2000:]))
    return az, port


EXPECTED = [("r0", 0), ("r1", 1), ("r2", 2)]


def test_notice(tap, link, tmp, db):
    d = workspace(tmp, "notice", db)
    az, port = start(tap, link, "notice", ["-l", d])
    before = rows(port)
    az.stop()
    err = az.stderr()
    store = os.path.join(d, "__tabled_table__")
    cmd = "tabled import --from-azurite %s --backend leveldb --data %s" % (
        os.path.join(d, DB), store)
    tap.ok(cmd in err, "notice: the exact import command is printed", err[-1500:])
    tap.ok("--import-azurite-db" in err, "notice: the start-up flag is named")
    tap.eq(before, None, "notice: Azurite's tables are not served before the import")
    # Run the printed command (tabled = the binary under test), then start.
    line = [l for l in err.splitlines() if l.strip().startswith("tabled import")]
    argv = shlex.split(line[0]) if line else []
    if not tap.eq(argv[:2], ["tabled", "import"], "notice: the command line parses"):
        return
    p = subprocess.run([h.tabled_path()] + argv[1:], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    tap.ok(p.returncode == 0, "notice: the printed command imports", p.stderr.decode()[-800:])
    az, port = start(tap, link, "notice restart", ["-l", d])
    tap.eq(rows(port), EXPECTED, "notice: Azurite's entities served after the import")
    az.stop()
    tap.ok("Azurite table database" not in az.stderr(), "notice: none once a store exists")


def test_flag(tap, link, tmp, db):
    d = workspace(tmp, "flag", db)
    az, port = start(tap, link, "flag", ["-l", d, "--import-azurite-db"])
    tap.eq(rows(port), EXPECTED, "flag: Azurite's entities served from the first start")
    svc = TableServiceClient.from_connection_string(conn_str(port), **KW)
    svc.get_table_client("AzTable").delete_entity("p", "r0")
    az.stop()
    tap.ok("importing" in az.stderr(), "flag: the import is reported", az.stderr()[-800:])
    az, port = start(tap, link, "flag again", ["--import-azurite-db", "-l", d])
    tap.eq(rows(port), EXPECTED[1:], "flag: a second start imports nothing again")
    az.stop()
    tap.ok("importing" not in az.stderr(), "flag: no import with a store present")


def test_existing(tap, link, tmp, db):
    d = workspace(tmp, "existing", db)
    os.makedirs(os.path.join(d, "__tabled_table__"))
    az, port = start(tap, link, "existing", ["-l", d])
    az.stop()
    tap.ok("tabled import" not in az.stderr(), "existing: a DIR with a tabled store: no notice",
           az.stderr()[-800:])
    d2 = os.path.join(tmp, "plain")
    os.makedirs(d2)
    az, port = start(tap, link, "plain", ["-l", d2])
    az.stop()
    tap.ok("tabled import" not in az.stderr(), "plain: a DIR without Azurite's file: no notice")


def main():
    tap = h.Tap()
    h.watchdog(600, tap=tap)
    if IMPORT_ERROR:
        tap.ok(False, "azure-data-tables importable", str(IMPORT_ERROR))
        tap.done()
    tmp = tempfile.mkdtemp(prefix="tabled-azdb-")
    link = os.path.join(tmp, "azurite-table")
    os.symlink(h.tabled_path(), link)
    try:
        db = azurite_database(tap, tmp)
        if db:
            tap.run(test_notice, tap, link, tmp, db)
            tap.run(test_flag, tap, link, tmp, db)
            tap.run(test_existing, tap, link, tmp, db)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
