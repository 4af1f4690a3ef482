#!/usr/bin/python3
"""bench_durable.py - the [durability] benchmarks (make bench-durable).

  inserts  durable single-entity inserts (--durability batch) from --conns
           keep-alive connections (a comma-separated list: each count in
           turn; default 16,64) for --seconds, ~1 KiB entities (random
           characters, then words), per durable backend; with the server's
           CPU time per insert (user + system, every thread)
           (tests/bench/bench_insert does the HTTP)
  restart  loads --entities ~1 KiB entities ($batch of 100), then times
           restarts from process start to the "ready" line (the store open,
           its index rebuilt, tables loaded), after SIGTERM and after
           kill -9, per durable backend
  rss      loads --entities ~1 KiB entities into the memory backend and
           reads VmRSS
  fsync    the disk's own price: 500 appends of --value bytes to a file
           under --dir, each followed by fdatasync (what one group commit
           costs at least), mean and fastest latency; then the same as
           overwrites of a file written (zeros) and made durable before,
           which keep its size: the price with zeros written ahead (the
           flat file's preallocate)
  bound    durable inserts against the disk's own bound, --rounds times:
           each round measures the fsync price above, then per backend and
           connection count C inserts with --durability none (mean latency
           L = C / throughput) and with --durability batch; C closed-loop
           clients cannot get more durable inserts than C / (L + fsync),
           the bound. Prints each run, then per binary, backend and C the
           medians of durable/s, the bound, durable/s as a fraction of it
           and the server's CPU per durable insert, and the fraction of
           the tighter bound with the overwrite's fdatasync price. With --base OLD_TABLED
           each round runs the old binary, then the new one (alternating,
           so that the machine's load falls on both alike); --base-args and
           --new-args add server arguments to the one or the other (the
           same binary with and without an option). Also the mean
           time of the group commit's syncs during each durable run (the
           server's /metrics) and the median latency in units of it: on a
           busy machine both move with the load, their ratio much less
           (about 1 when a reply waits for one sync, 1.5-2 when it waits
           for the rest of one and a whole next one)

--durability (default batch) runs the inserts in another mode: `none`
gives the ceiling any group commit can reach on the machine.

  bench_durable.py [--entities N] [--seconds S] [--conns C[,C]...] [--value BYTES]
                   [--backends leveldb,flatfile] [--dir DIR] [--durability MODE]
                   [--rounds N] [--base OLD_TABLED] [--base-args ARGS] [--new-args ARGS]
                   [inserts|restart|rss|fsync|bound]...

TABLED and BENCH_INSERT name the binaries (default: ./tabled and
./tests/bench/bench_insert of the build tree). Data goes under --dir
(default: a temporary directory on the same disk as /tmp), removed after.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

TOP = os.environ.get("TOP_BUILDDIR") or os.getcwd()
TABLED = os.environ.get("TABLED") or os.path.join(TOP, "tabled")
BENCH = os.environ.get("BENCH_INSERT") or os.path.join(TOP, "tests", "bench", "bench_insert")


class Server:
    def __init__(self, backend, data, durability="batch", extra=(), binary=None):
        self.cmd = [binary or TABLED, "--port", "0", "--auth", "off", "--access-log", "off",
                    "--log-level", "warn", "--backend", backend, "--data", data,
                    "--durability", durability] + list(extra)

    def start(self):
        t0 = time.monotonic()
        self.p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for raw in iter(self.p.stdout.readline, b""):
            m = re.search(rb"ready at http://[^:]+:(\d+)", raw)
            if m:
                self.secs = time.monotonic() - t0
                self.port = int(m.group(1))
                if "--admin-port" not in self.cmd:
                    return self
            m = re.search(rb"Admin endpoint:\s+http://[^ ]+:(\d+)/metrics", raw)
            if m:
                self.admin = int(m.group(1))
                return self
        raise RuntimeError("tabled did not start: %s" % " ".join(self.cmd))

    def cpu_secs(self, loop_only=False):
        """User + system CPU time of the process so far (all threads), or
        of its event-loop thread alone (the main thread: its tid is the
        pid)."""
        path = "/proc/%d/task/%d/stat" % (self.p.pid, self.p.pid) if loop_only else \
            "/proc/%d/stat" % self.p.pid
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def syncs(self):
        """The group commit's syncs so far from /metrics: (count, seconds)."""
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.admin, timeout=60) as r:
            text = r.read().decode()
        got = {k: float(v) for k, v in re.findall(
            r"^tabled_backend_sync_duration_seconds_(sum|count) (\S+)$", text, re.M)}
        return got.get("count", 0.0), got.get("sum", 0.0)

    def rss_mib(self):
        with open("/proc/%d/status" % self.p.pid) as f:
            for ln in f:
                if ln.startswith("VmRSS:"):
                    return int(ln.split()[1]) / 1024.0
        return -1

    def request(self, method, path, body=None):
        req = urllib.request.Request("http://127.0.0.1:%d/devstoreaccount1%s" % (self.port, path),
                                     data=body.encode() if body else None, method=method,
                                     headers={"Content-Type": "application/json",
                                              "Accept": "application/json;odata=nometadata",
                                              "x-ms-version": "2019-02-02"})
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def stop(self, sig=signal.SIGTERM):
        self.p.send_signal(sig)
        self.p.wait(600)
        self.p.stdout.close()


def bench_insert(port, *args):
    out = subprocess.run([BENCH, "-p", str(port)] + [str(a) for a in args],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    text = out.stdout.decode().strip()
    if out.returncode:
        raise RuntimeError("bench_insert failed: %s" % text)
    return text


def do_inserts(a, base):
    for conns in [int(c) for c in a.conns.split(",")]:
        print("## durable inserts: --durability %s, %d connections, %d s, %d-byte Data of "
              "random characters (incompressible) or of words and numbers (compresses like "
              "JSON)" % (a.durability, conns, a.seconds, a.value))
        for be in a.backends.split(","):
            for kind, flags in (("random", []), ("words", ["-w"])):
                data = os.path.join(base, "ins-" + be)
                s = Server(be, data, a.durability).start()
                s.request("POST", "/Tables", json.dumps({"TableName": "bench"}))
                cpu0, loop0 = s.cpu_secs(), s.cpu_secs(True)
                text = bench_insert(s.port, "-c", conns, "-d", a.seconds, "-s", a.value, *flags)
                cpu, loop = s.cpu_secs() - cpu0, s.cpu_secs(True) - loop0
                s.stop()
                m = re.search(r"requests (\d+)", text)
                n = int(m.group(1)) if m else 0
                print("%-9s %-7s %s; server CPU %.1f us per insert (event loop %.1f)"
                      % (be, kind, text, cpu * 1e6 / max(n, 1), loop * 1e6 / max(n, 1)))
                shutil.rmtree(data, ignore_errors=True)
                sys.stdout.flush()


def load(s, n, value):
    """n entities in $batch requests of 100 from 8 connections."""
    s.request("POST", "/Tables", json.dumps({"TableName": "bench"}))
    t0 = time.monotonic()
    text = bench_insert(s.port, "-c", 8, "-n", (n + 99) // 100, "-b", 100, "-s", value)
    return time.monotonic() - t0, text


def do_restart(a, base):
    print("## restart with %d entities of ~%d bytes (time from exec to the ready line)"
          % (a.entities, a.value + 60))
    for be in a.backends.split(","):
        data = os.path.join(base, "rst-" + be)
        s = Server(be, data).start()
        secs, text = load(s, a.entities, a.value)
        print("%-9s loaded in %.1f s (%s)" % (be, secs, text))
        s.stop(signal.SIGKILL)           # the first restart recovers from a kill
        size = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(data) for f in fs)
        times = []
        # how the previous process ended, and how this one is ended
        plan = [("kill -9 after the load", signal.SIGTERM), ("SIGTERM", signal.SIGTERM),
                ("SIGTERM", signal.SIGKILL), ("kill -9", signal.SIGTERM)]
        for how, end in plan:
            s = Server(be, data).start()
            times.append((how, s.secs, s.rss_mib()))
            st, body = s.request("GET", "/bench()?$top=1")
            if st != 200 or b"PartitionKey" not in body:
                raise RuntimeError("after restart the table does not answer: %d %r" % (st, body[:200]))
            s.stop(end)
        print("%-9s data %.0f MiB; restarts: %s" % (be, size / 1048576.0, ", ".join(
            "%.2f s after %s (RSS %.0f MiB)" % (t, how, r) for how, t, r in times)))
        shutil.rmtree(data, ignore_errors=True)
        sys.stdout.flush()


def do_rss(a, base):
    print("## memory backend: RSS after loading %d entities of ~%d bytes" % (a.entities, a.value + 60))
    s = Server("memory", os.path.join(base, "unused")).start()
    before = s.rss_mib()
    secs, text = load(s, a.entities, a.value)
    after = s.rss_mib()
    st, body = s.request("GET", "/bench()?$top=1")
    s.stop()
    print("memory    loaded in %.1f s (%s); VmRSS %.0f MiB before, %.0f MiB (%.2f GiB) after"
          % (secs, text, before, after, after / 1024.0))


def fsync_probe(a, base, overwrite=False):
    """write + fdatasync of an appended file, 500 times: the latencies (s).
    overwrite: the file is first written with zeros and made durable, and
    the writes then overwrite it from its start (the file keeps its size
    and blocks: what a log with zeros written ahead pays, the flat file's
    preallocate)."""
    path = os.path.join(base, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | (0 if overwrite else os.O_APPEND), 0o644)
    block, times = b"x" * a.value, []
    try:
        if overwrite:
            os.write(fd, bytes(len(block) * 500 + 4096))
            os.fdatasync(fd)
            os.lseek(fd, 0, os.SEEK_SET)
        for _ in range(500):
            os.write(fd, block)
            t0 = time.monotonic()
            os.fdatasync(fd)
            times.append(time.monotonic() - t0)
    finally:
        os.close(fd)
        os.unlink(path)
    return times


def do_fsync(a, base):
    """write + fdatasync of an appended file, 500 times."""
    times = fsync_probe(a, base)
    print("## fdatasync after an append of %d bytes, 500 times: mean %.0f us, fastest %.0f us"
          % (a.value, sum(times) / len(times) * 1e6, min(times) * 1e6))
    times = fsync_probe(a, base, overwrite=True)
    print("## fdatasync after an overwrite of %d bytes in a file written before, 500 times: "
          "mean %.0f us, fastest %.0f us"
          % (a.value, sum(times) / len(times) * 1e6, min(times) * 1e6))


def run_inserts(binary, be, durability, conns, a, base, args=()):
    """One run of single inserts: (inserts/s, server CPU us per insert, mean
    duration of the group commit's syncs during the run in s (0: none),
    median latency in s, text)."""
    data = os.path.join(base, "bound-" + be)
    s = Server(be, data, durability, extra=["--admin-port", "0"] + list(args),
               binary=binary).start()
    try:
        s.request("POST", "/Tables", json.dumps({"TableName": "bench"}))
        cpu0, (n0, t0) = s.cpu_secs(), s.syncs()
        text = bench_insert(s.port, "-c", conns, "-d", a.seconds, "-s", a.value)
        cpu, (n1, t1) = s.cpu_secs() - cpu0, s.syncs()
    finally:
        s.stop()
        shutil.rmtree(data, ignore_errors=True)
    m = re.search(r"requests (\d+) in ([\d.]+) s", text)
    n, secs = (int(m.group(1)), float(m.group(2))) if m else (0, 1.0)
    p50 = re.search(r"p50 ([\d.]+) ms", text)
    return (n / secs, cpu * 1e6 / max(n, 1), (t1 - t0) / (n1 - n0) if n1 > n0 else 0.0,
            float(p50.group(1)) / 1e3 if p50 else 0.0, text)


def median(xs):
    xs = sorted(xs)
    k = len(xs)
    return (xs[k // 2] + xs[(k - 1) // 2]) / 2.0 if k else 0.0


def do_bound(a, base):
    """Durable inserts as a fraction of C / (latency without durability +
    one fdatasync), per binary, backend and connection count."""
    binaries = ([("old", a.base, a.base_args.split())] if a.base else []) + \
        [("new", TABLED, a.new_args.split())]
    conns = [int(c) for c in a.conns.split(",")]
    res = {}
    print("## durable inserts against the bound C / (L_none + fdatasync): %d rounds of %d s "
          "runs, %d-byte Data" % (a.rounds, a.seconds, a.value))
    for rnd in range(a.rounds):
        for tag, binary, args in binaries:
            t = fsync_probe(a, base)
            fs = sum(t) / len(t)
            t = fsync_probe(a, base, overwrite=True)
            fso = sum(t) / len(t)
            print("round %d %s: fdatasync mean %.0f us after an append, %.0f us after an "
                  "overwrite, load average %s" % (rnd + 1, tag, fs * 1e6, fso * 1e6,
                                                  open("/proc/loadavg").read().split()[0]))
            for be in a.backends.split(","):
                for c in conns:
                    none, ncpu, _, _, _ = run_inserts(binary, be, "none", c, a, base, args)
                    dur, dcpu, sync, p50, text = run_inserts(binary, be, "batch", c, a, base,
                                                             args)
                    bound = c / (c / max(none, 1e-9) + fs)
                    bound_ow = c / (c / max(none, 1e-9) + fso)
                    r = res.setdefault((tag, be, c), {"dur": [], "bound": [], "frac": [],
                                                      "cpu": [], "none": [], "fs": [],
                                                      "sync": [], "p50s": [], "fso": [],
                                                      "frac_ow": []})
                    for k, v in (("dur", dur), ("bound", bound), ("frac", dur / bound),
                                 ("fso", fso), ("frac_ow", dur / bound_ow),
                                 ("cpu", dcpu), ("none", none), ("fs", fs), ("sync", sync),
                                 ("p50s", p50 / sync if sync else 0.0)):
                        r[k].append(v)
                    print("  %s %-8s %3d conns: none %.0f/s (L %.0f us, CPU %.1f us), durable "
                          "%.0f/s (CPU %.1f us), bound %.0f/s, fraction %.2f; syncs in the run "
                          "%.0f us mean, p50 latency %.2f syncs; %s"
                          % (tag, be, c, none, c / max(none, 1e-9) * 1e6, ncpu, dur, dcpu,
                             bound, dur / bound, sync * 1e6, p50 / sync if sync else 0.0, text))
                    sys.stdout.flush()
    print("## medians over %d rounds" % a.rounds)
    print("binary backend   conns  fdatasync_us  none/s  bound/s  durable/s  fraction  "
          "cpu_us/durable_insert  sync_us_in_run  p50_latency_in_syncs  overwrite_fdatasync_us"
          "  fraction_of_overwrite_bound")
    for (tag, be, c), r in sorted(res.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        print("%-6s %-8s %5d  %12.0f  %6.0f  %7.0f  %9.0f  %8.2f  %21.1f  %14.0f  %20.2f  "
              "%22.0f  %27.2f"
              % (tag, be, c, median(r["fs"]) * 1e6, median(r["none"]), median(r["bound"]),
                 median(r["dur"]), median(r["frac"]), median(r["cpu"]),
                 median(r["sync"]) * 1e6, median(r["p50s"]), median(r["fso"]) * 1e6,
                 median(r["frac_ow"])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=1000000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--conns", default="16,64")
    ap.add_argument("--value", type=int, default=960)
    ap.add_argument("--backends", default="leveldb,flatfile")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--durability", default="batch", choices=["batch", "sync", "none"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base", default=None, help="an older tabled to alternate with (bound)")
    ap.add_argument("--base-args", default="", help="server arguments for --base (bound)")
    ap.add_argument("--new-args", default="", help="server arguments for TABLED (bound)")
    ap.add_argument("what", nargs="*", default=["inserts", "restart", "rss"])
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="tabled-bench-", dir=a.dir)
    print("# tabled %s, bench_insert %s, %d CPUs, load average %s" % (
        TABLED, BENCH, os.cpu_count(), open("/proc/loadavg").read().split()[0]))
    try:
        for w in a.what:
            {"inserts": do_inserts, "restart": do_restart, "rss": do_rss,
             "fsync": do_fsync, "bound": do_bound}[w](a, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
