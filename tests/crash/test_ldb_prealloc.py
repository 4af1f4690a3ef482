#!/usr/bin/python3
"""test_ldb_prealloc.py - LevelDB's log with zeros written ahead: the
live log ends in zeros past LevelDB's records, across log switches, and a
kill -9 then a restart answer every acknowledged insert, with nothing in
LevelDB's own recovery log about a damaged record.

tabled runs the leveldb backend in batch durability with a 256 KiB
memtable (write-buffer-size), so that LevelDB switches to a new log file
every few hundred inserts, and takes 2,000 inserts of ~1 KiB on two
connections. Then:
- the newest log is newer than the one at the start (logs were switched)
  and its last 64 KiB are zeros (written ahead of LevelDB's records);
- after SIGKILL a new server on the same data answers all 2,000 inserts
  as written, and LevelDB's LOG reports no corruption, checksum mismatch
  or dropped bytes while it replayed the logs;
- with --backend-option preallocate=0 the live log ends with LevelDB's
  last record, not with zeros, and the same restart holds.
"""
import os
import re
import shutil
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import tabled_harness as h  # noqa: E402

TABLE = "zeros"
N = 2000


def args(data, extra=()):
    return ["--data", data, "--durability", "batch", "--auth", "off", "--log-level", "info",
            "--backend-option", "write-buffer-size=256K"] + list(extra)


def newest_log(data):
    """(number, path) of the highest-numbered NNNNNN.log, or (-1, None)."""
    best = (-1, None)
    for name in os.listdir(data):
        m = re.fullmatch(r"(\d+)\.log", name)
        if m and int(m.group(1)) > best[0]:
            best = (int(m.group(1)), os.path.join(data, name))
    return best


def tail_zero(path, n=64 << 10):
    """1 when the file's last n bytes are all zero (and it has that many)."""
    size = os.path.getsize(path)
    if size < n:
        return False
    with open(path, "rb") as f:
        f.seek(size - n)
        return f.read(n) == bytes(n)


def load(srv, tap, what):
    """N inserts on two connections; returns the count answered 204."""
    http = h.Http(srv)
    tap.eq(http.create_table(TABLE).status, 201, "%s: table created" % what)
    good = [0, 0]

    def worker(k):
        with http.connect() as conn:
            for i in range(k, N, 2):
                r = conn.request("POST", "/" + TABLE,
                                 body={"PartitionKey": "p", "RowKey": "%05d" % i, "V": i,
                                       "Pad": "z%d-" % i * 150},
                                 headers={"Prefer": "return-no-content"})
                good[k] += r.status == 204
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(good)


def verify(srv):
    """Inserts that read back as written (GET each)."""
    http = h.Http(srv)
    ok = 0
    with http.connect() as conn:
        for i in range(N):
            r = conn.request("GET", http.entity_path(TABLE, "p", "%05d" % i))
            if r.status == 200:
                e = r.json()
                ok += e.get("V") == i and e.get("Pad") == "z%d-" % i * 150
    return ok


def damage_lines(data):
    """Lines of LevelDB's LOG that report a damaged or dropped record."""
    path = os.path.join(data, "LOG")
    if not os.path.exists(path):
        return []
    with open(path, errors="replace") as f:
        return [line.strip() for line in f
                if re.search(r"corruption|checksum mismatch|dropping|ignoring error|bad record",
                             line, re.I)]


def run(tap, what, extra, zeros_wanted):
    tmp = tempfile.mkdtemp(prefix="ldb-prealloc-")
    data = os.path.join(tmp, "data")
    try:
        srv = h.Server(args(data, extra), backend="leveldb").start()
        first, _ = newest_log(data)
        n = load(srv, tap, what)
        tap.eq(n, N, "%s: %d inserts answered 204" % (what, N))
        last, path = newest_log(data)
        tap.ok(last > first, "%s: LevelDB switched logs during the load (%d -> %d)"
               % (what, first, last))
        if zeros_wanted:
            tap.ok(path and tail_zero(path),
                   "%s: the live log ends in 64 KiB of zeros written ahead (size %s)"
                   % (what, os.path.getsize(path) if path else "?"))
        else:
            tap.ok(path and not tail_zero(path, 4096),
                   "%s: the live log ends with LevelDB's last record, no zeros" % what)
        srv.kill()
        srv = h.Server(args(data, extra), backend="leveldb").start()
        tap.eq(verify(srv), N, "%s: after kill -9 every acknowledged insert reads back" % what)
        bad = damage_lines(data)
        tap.ok(not bad, "%s: LevelDB's LOG reports no damaged record in the replay" % what,
               "\n".join(bad[:10]))
        srv.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    tap = h.Tap()
    h.watchdog(300, tap=tap)
    run(tap, "zeros ahead", [], True)
    run(tap, "preallocate=0", ["--backend-option", "preallocate=0"], False)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
