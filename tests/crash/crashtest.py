#!/usr/bin/python3
"""crashtest.py - kill -9 tabled at random moments under a write load, on
every durable backend, and check that nothing acknowledged is lost.

  crashtest.py [--cycles N] [--backends leveldb,flatfile] [--modes batch,sync]
               [--workers N] [--load MIN,MAX] [--seed N] [--verify-all]

For each backend and durability mode: one data directory; N cycles of
  start tabled (same data) -> create this cycle's table -> N workers write
  (single inserts, $batch changesets of 5 inserts, If-Match replaces of a
  counter entity, deletes) recording every acknowledged write and its ETag
  -> after a random 0.2-1.2 s, SIGKILL -> restart -> check (tests/crash/
  tload.py verify()): every acknowledged write is there with its ETag,
  acknowledged deletes stay deleted, no $batch is partly applied, nothing
  unwritten appeared.
Each cycle checks its own table and the counters, plus one random older
table; --verify-all (and the last cycle) check every table. The backends
run with settings that make their background work happen often: flatfile
compacts from 1 MiB of log and 15% garbage, copying 4K, 32K or 1M per write
(drawn at each start), so kills land inside compactions and around their
end; LevelDB switches its 256 KiB memtable (and log) often.

TAP on stdout: one line per cycle, figures as comments at the end.
TABLED names the binary (as under make check). Exit status 1 on failure.
"""
import argparse
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import tabled_harness as h  # noqa: E402
import tload  # noqa: E402

BACKEND_OPTS = {
    "flatfile": ["--backend-option", "compact-min-bytes=1M",
                 "--backend-option", "compact-garbage-pct=15",
                 "--backend-option", "checkpoint-bytes=128K"],
    "leveldb": ["--backend-option", "write-buffer-size=256K"],
}
# Each flatfile start draws how much a compaction copies per write: small
# steps keep a compaction running for many cycles (kills land inside it),
# big ones finish it quickly (kills land around the switch to the new log).
# The same step paces the index checkpoint's walk (checkpoint-bytes=128K:
# one every few cycles, so restarts load one and replay the log after it).
FLATFILE_STEPS = ["4K", "32K", "1M"]


def start(backend, mode, data, rng=None):
    args = ["--data", data, "--durability", mode, "--auth", "off", "--log-level", "info"]
    args += BACKEND_OPTS.get(backend, [])
    if backend == "flatfile" and rng is not None:
        args += ["--backend-option", "compact-step-bytes=" + rng.choice(FLATFILE_STEPS)]
    t0 = time.monotonic()
    srv = h.Server(args, backend=backend, ready_timeout=60).start()
    return srv, time.monotonic() - t0


def run(tap, backend, mode, cycles, nworkers, load, rng, verify_all):
    data = tempfile.mkdtemp(prefix="tabled-crash-%s-%s-" % (backend, mode))
    stats = {"inflight_applied": 0, "inflight_lost": 0, "lost": 0, "partial": 0,
             "restart_max": 0.0, "compactions": 0, "kills_in_compaction": 0}
    workers = [tload.Worker(i, random.Random(rng.random())) for i in range(nworkers)]
    label = "%s/%s" % (backend, mode)
    srv, _ = start(backend, mode, data, rng)
    c = tload.Client(srv.host, srv.port)
    tload.create_table(c, "counters")
    tables = []
    ok_all = True
    for cycle in range(cycles):
        problems = []
        table = "cyc%04d" % cycle
        try:
            tload.create_table(c, table)
            tables.append(table)
            c.close()
            for w in workers:
                w.start(srv.host, srv.port, table)
            time.sleep(rng.uniform(*load))
            srv.proc.kill()                      # SIGKILL, mid-write
            srv.proc.wait(10)
            for w in workers:
                w.stop.set()
            for w in workers:
                w.join(20)
                problems += w.errors
                w.errors = []
            err = srv.stop()[1]
            stats["compactions"] += err.count("compaction done")
            stats["kills_in_compaction"] += err.count("compaction started") > \
                err.count("compaction done")
            srv, secs = start(backend, mode, data, rng)
            stats["restart_max"] = max(stats["restart_max"], secs)
            c = tload.Client(srv.host, srv.port)
            check = [table]
            if verify_all or cycle == cycles - 1:
                check = list(tables)
            elif len(tables) > 1:
                check.append(rng.choice(tables[:-1]))
            problems += tload.verify(workers, c, check, stats)
            stats["partial"] += sum("partly" in p for p in problems)
        except Exception as e:  # noqa: BLE001 - one failing cycle, then stop
            problems.append("cycle raised %r; server stderr:\n%s" % (e, srv.stderr_text()[-3000:]))
        acked = sum(sum(w.acked.values()) for w in workers)
        tap.ok(not problems, "%s: kill -9 cycle %d: all %d acknowledged writes so far intact"
               % (label, cycle + 1, acked), "\n".join(problems[:20]))
        if problems:
            ok_all = False
            break
    c.close()
    srv.stop_and_check(tap)
    totals = {}
    for w in workers:
        for k, v in w.acked.items():
            totals[k] = totals.get(k, 0) + v
    tap.diag("%s: %d cycles, acknowledged: %d inserts, %d $batch (x%d), %d replaces, %d deletes; "
             "in flight at the kill: %d applied whole, %d not applied; lost %d, partial batches %d; "
             "compactions finished %d, kills during a compaction %d; slowest restart %.2f s"
             % (label, cycle + 1, totals.get("insert", 0), totals.get("batch", 0), tload.BATCH_SIZE,
                totals.get("replace", 0), totals.get("delete", 0), stats["inflight_applied"],
                stats["inflight_lost"], stats["lost"], stats["partial"], stats["compactions"],
                stats["kills_in_compaction"], stats["restart_max"]))
    if ok_all:
        shutil.rmtree(data, ignore_errors=True)
    else:
        tap.diag("data kept in %s" % data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--backends", default="leveldb,flatfile")
    ap.add_argument("--modes", default="batch,sync")
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--load", default="0.2,1.2")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--verify-all", action="store_true")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    tap = h.Tap()
    tap.diag("seed %d (rerun with --seed %d)" % (seed, seed))
    load = tuple(float(x) for x in a.load.split(","))
    for backend in a.backends.split(","):
        for mode in a.modes.split(","):
            run(tap, backend, mode, a.cycles, a.workers, load, rng, a.verify_all)
    tap.done()


if __name__ == "__main__":
    main()
