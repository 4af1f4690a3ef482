#!/usr/bin/python3
"""bench_scale_get.py - bench_scale's point GETs on a kept store.

  bench_scale_get.py load [--backend leveldb|flatfile] DIR SIZES
      loads DIR/data as bench_scale.py does (steps of SIZES, e.g.
      100000,1000000,10000000, each followed by the wait until the server
      is idle, which includes LevelDB's compaction after a load) and writes
      DIR/keys.json, the loaded steps that GETs draw their entities from

  bench_scale_get.py get [--backend leveldb|flatfile] --store DIR[,DIR...]
                     --bin NAME=PATH[:OPT=V;OPT=V]...
                     [--rounds 3] [--runs 3] [--seconds 5] [--paths 5000]
      for each round and store (the stores alternate, so that sizes are
      compared under the same conditions), starts each binary in turn (the
      order reversed every other round) on the store's data, with the
      --backend-option settings given after the colon, and runs --runs wrk
      GET runs of --seconds over the same --paths random entities: the
      first run is cold (the pages of the memory-mapped table files are
      not mapped in the new process yet), the next ones warm. Per run:
      req/s, server CPU per request, p99, minor and major page faults,
      VmRSS; then the median of each (store, binary, run) over the rounds.

Shares bench_scale.py's loader (TABLED: the loading binary, BENCH_INSERT)
and wrk. The data stays in DIR; remove it when done.
"""
import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_scale as bs  # noqa: E402


def faults(pid):
    """(minor, major) page faults of pid so far."""
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return int(v[7]), int(v[9])


def load(d, sizes, backend, conns=16):
    class A:
        value = 1000
    srv = bs.Server(backend, os.path.join(d, "data"), [])
    srv.start()
    try:
        st, _, b = srv.request("POST", "/Tables", '{"TableName":"%s"}' % bs.TABLE)
        if st != 201:
            raise RuntimeError("create table: %d %r" % (st, b[:200]))
        keys, loaded = bs.Keys(conns), 0
        for step, size in enumerate(sizes):
            batches = (size - loaded) // 100
            t0 = time.monotonic()
            bs.bench_insert(srv.port, A, "s%d" % step,
                            ["-c", str(conns), "-b", "100", "-n", str(batches)])
            keys.add("s%d" % step, batches)
            loaded += batches * 100
            print("%d entities: load %.0f s, idle after %.0f s"
                  % (loaded, time.monotonic() - t0, bs.settle(srv)), flush=True)
        with open(os.path.join(d, "keys.json"), "w") as f:
            json.dump(keys.steps, f)
    finally:
        srv.stop()


def get(a):
    bins = []
    for b in a.bin:
        name, rest = b.split("=", 1)
        path, _, opts = rest.partition(":")
        bins.append((name, path, [o for o in opts.split(";") if o]))
    tmp, res, stores = tempfile.mkdtemp(), {}, []
    for store in a.store.split(","):
        with open(os.path.join(store, "keys.json")) as f:
            keys = bs.Keys(a.conns)
            keys.steps = [tuple(s) for s in json.load(f)]
        stores.append((store, bs.get_paths(keys, random.Random(a.seed), a.paths)))
    for rnd in range(a.rounds):
        for store, paths in stores:
            for name, path, opts in (bins if rnd % 2 == 0 else bins[::-1]):
                srv = bs.Server(a.backend, os.path.join(store, "data"), opts)
                srv.binary = path
                srv.start()
                try:
                    for run in range(a.runs):
                        f0 = faults(srv.proc.pid)
                        g = bs.wrk_get(srv, paths, a, tmp)
                        f1 = faults(srv.proc.pid)
                        g["majflt"] = f1[1] - f0[1]
                        g["rss_mib"] = bs.bg.rss_kib(srv.proc.pid) / 1024
                        res.setdefault((store, name, run), []).append(g)
                        print("%s %s round %d run %d: %.0f req/s, CPU %.2f us/req, p99 %.2f ms, "
                              "%.3f minor faults/req, %d major, RSS %.0f MiB"
                              % (store, name, rnd, run, g["rps"], g["cpu_us"], g["p99_ms"],
                                 g["faults"], g["majflt"], g["rss_mib"]), flush=True)
                finally:
                    srv.stop()
    print("\nmedians over %d rounds" % a.rounds)
    for (store, name, run), gs in sorted(res.items()):
        med = {k: statistics.median(g[k] for g in gs) for k in ("rps", "cpu_us", "p99_ms",
                                                                  "faults")}
        print("%s %s run %d: %.0f req/s, CPU %.2f us/req (%s), p99 %.2f ms, %.3f faults/req"
              % (store, name, run, med["rps"], med["cpu_us"],
                 " ".join("%.1f" % g["cpu_us"] for g in gs), med["p99_ms"], med["faults"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("load")
    lp.add_argument("--backend", default="leveldb", choices=["leveldb", "flatfile"])
    lp.add_argument("dir")
    lp.add_argument("sizes")
    gp = sub.add_parser("get")
    gp.add_argument("--backend", default="leveldb", choices=["leveldb", "flatfile"])
    gp.add_argument("--store", required=True)
    gp.add_argument("--bin", action="append", required=True)
    gp.add_argument("--rounds", type=int, default=3)
    gp.add_argument("--runs", type=int, default=3)
    gp.add_argument("--seconds", type=int, default=5)
    gp.add_argument("--paths", type=int, default=5000)
    gp.add_argument("--conns", type=int, default=16)
    gp.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.cmd == "load":
        os.makedirs(a.dir, exist_ok=True)
        load(a.dir, sorted(int(s) for s in a.sizes.split(",")), a.backend)
    else:
        get(a)


if __name__ == "__main__":
    main()
