#!/usr/bin/python3
"""test_ldb_idle_compaction.py - the LevelDB backend compacts the whole
store once writes stop after a large load (option idle-compaction,
doc/storage.md), and not with idle-compaction=off.

A tabled on LevelDB with a 256 KiB write buffer and 64 KiB table files
(so that a few MiB of writes fill more than one level) gets about 4 MiB
of entities in $batch-free single inserts over one keep-alive connection,
then one more write buffer's worth so that a fresh level-0 file sits above
the compacted ones. Checked, with idle-compaction on (the default): the
log says the compaction started and ended after the writes stopped, every
entity reads back with its data, a write and a table deletion after it
work; with idle-compaction=off: no such line within 8 s of the writes
stopping (the backend waits 3 s), and every entity reads back. Fails
before the option existed (no such line, and idle-compaction=off is
refused as an unknown option). TABLED and TOP_BUILDDIR as under make
check."""
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import tabled_harness as h  # noqa: E402

STARTED = "compacting the store now that writes stopped"
ENDED = "compacted the store after writes stopped"
N = 4400                     # ~1 KiB each: 4 MiB, then a write buffer more


def load(conn, n):
    bad = 0
    for i in range(n):
        r = conn.request("POST", "/idle", body={"PartitionKey": "p%02d" % (i % 7),
                                                "RowKey": "r%06d" % i,
                                                "Data": ("v%06d-" % i) * 120},
                         headers={"Prefer": "return-no-content"})
        bad += r.status != 204
    return bad


def check_all(http, tap, n, what):
    wrong = 0
    for i in range(0, n, 37):
        r = http.get_entity("idle", "p%02d" % (i % 7), "r%06d" % i)
        if r.status != 200 or json.loads(r.body)["Data"] != ("v%06d-" % i) * 120:
            wrong += 1
    tap.eq(wrong, 0, "%s: every sampled entity reads back with its data" % what)


def wait_log(srv, text, seconds):
    return h.wait_for(lambda: text in srv.stderr_text(), seconds)


def run(tap, idle):
    d = tempfile.mkdtemp(prefix="tabled-idlecompact-")
    args = ["--backend", "leveldb", "--data", os.path.join(d, "data"), "--log-level", "info",
            "--backend-option", "write-buffer-size=256K",
            "--backend-option", "max-file-size=64K"]
    if not idle:
        args += ["--backend-option", "idle-compaction=off"]
    what = "idle-compaction=%s" % ("on" if idle else "off")
    with h.Server(args=args) as srv:
        http = h.Http(srv)
        tap.eq(http.create_table("idle").status, 201, "%s: table created" % what)
        with http.connect() as conn:
            tap.eq(load(conn, N), 0, "%s: %d inserts answered 204" % (what, N))
        stop = time.monotonic()
        if idle:
            tap.ok(wait_log(srv, STARTED, 60), "%s: the compaction starts after the writes "
                   "stop" % what, srv.stderr_text()[-2000:])
            tap.ok(wait_log(srv, ENDED, 300), "%s: and ends" % what, srv.stderr_text()[-2000:])
            tap.ok(time.monotonic() - stop >= 2.5, "%s: not before the writes had stopped for "
                   "3 s" % what)
        else:
            time.sleep(8)
            tap.ok(STARTED not in srv.stderr_text(), "%s: no compaction 8 s after the writes "
                   "stopped" % what, srv.stderr_text()[-2000:])
        check_all(http, tap, N, what)
        r = http.insert("idle", {"PartitionKey": "after", "RowKey": "1", "Data": "x"},
                        headers={"Prefer": "return-no-content"})
        tap.eq(r.status, 204, "%s: a write afterwards" % what)
        tap.eq(http.delete_table("idle").status, 204, "%s: the table deleted afterwards" % what)
        tap.eq(http.get_entity("idle", "after", "1").status, 404,
               "%s: and gone" % what)
        srv.stop_and_check(tap)


def main():
    tap = h.Tap()
    h.watchdog(900, tap=tap)
    run(tap, True)
    run(tap, False)
    tap.done()


if __name__ == "__main__":
    main()
