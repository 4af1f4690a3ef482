#!/usr/bin/python3
"""bench_restart.py - restart to the first answer on a kept store.

  bench_restart.py [--backend flatfile|leveldb] [--pause S] [--rounds N]
                   [--path PATH] DATA NAME=BINARY [NAME=BINARY ...]

Starts each binary in turn on the data directory DATA (the order reversed
every other round), polls GET PATH until it answers 200, and reports the
wall time from the start to that answer and the process's CPU time at
that moment (utime + stime of all its threads, bench_get's reading), then kills
the server with SIGKILL, as a crash would end it. Before each start it
waits --pause seconds with no server running: on a virtual machine that
hands freed memory back to its hypervisor (free page reporting) a few
seconds after it is freed, a pause of 20 s makes every start get its
memory anew, while --pause 0 measures starts that find the previous
server's memory still at hand. Prints each start and the medians.

PATH defaults to an entity that bench_scale.py's first step loads
(table scale, partition s0c0000); the store is typically one that
`bench_scale.py --keep` left. The servers run with --auth off and the
access log off.
"""
import argparse
import http.client
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_get import cpu_seconds, free_port  # noqa: E402

DEFAULT_PATH = "/devstoreaccount1/scale(PartitionKey='s0c0000',RowKey='r0000000001-00')"


def first_answer(port, path, proc, limit=600):
    """Polls GET path until 200; raises when the server exits or answers
    anything else."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if proc.poll() is not None:
            raise RuntimeError("the server exited with status %d" % proc.returncode)
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=limit)
            c.request("GET", path, headers={"Accept": "application/json;odata=nometadata",
                                            "x-ms-version": "2019-02-02"})
            status = c.getresponse().status
            c.close()
        except OSError:
            time.sleep(0.005)
            continue
        if status != 200:
            raise RuntimeError("GET %s answered %d: is it a loaded entity?" % (path, status))
        return
    raise RuntimeError("no answer in %d s" % limit)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="flatfile", choices=["flatfile", "leveldb"])
    ap.add_argument("--pause", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--path", default=DEFAULT_PATH)
    ap.add_argument("data")
    ap.add_argument("bins", nargs="+", metavar="NAME=BINARY")
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.bins]
    if any(len(b) != 2 for b in bins):
        ap.error("binaries are given as NAME=PATH")
    wall = {n: [] for n, _ in bins}
    cpu = {n: [] for n, _ in bins}
    for r in range(a.rounds):
        for name, exe in (bins if r % 2 == 0 else bins[::-1]):
            time.sleep(a.pause)
            port = free_port()
            t0 = time.monotonic()
            proc = subprocess.Popen([exe, "--backend", a.backend, "--data", a.data,
                                     "--port", str(port), "--auth", "off", "--access-log", "off",
                                     "--log-level", "warn"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                first_answer(port, a.path, proc)
                w = time.monotonic() - t0
                c = cpu_seconds(proc.pid)
            finally:
                proc.kill()
                proc.wait()
            wall[name].append(w)
            cpu[name].append(c)
            print("round %d %s: %.3f s to the first answer (CPU %.2f s)" % (r, name, w, c),
                  flush=True)
    for name, _ in bins:
        print("%s: median %.3f s (%s), CPU median %.2f s"
              % (name, statistics.median(wall[name]),
                 ", ".join("%.2f" % x for x in wall[name]), statistics.median(cpu[name])))


if __name__ == "__main__":
    main()
