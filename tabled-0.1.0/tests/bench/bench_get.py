#!/usr/bin/python3
"""bench_get.py - point-GET throughput of tabled beside Azurite (make bench).

One ~1 KiB entity is inserted into table `bench`, then wrk (one thread,
--conns keep-alive connections, --seconds per run) replays one GET of it:

  tabled-noauth  ./tabled --auth off            (memory backend)
  tabled-auth    ./tabled, SharedKey verified   (memory backend)
  azurite        azurite-table --inMemoryPersistence, SharedKey verified
                 (npm package `azurite`, installed into tests/bench-deps of
                 the build tree on first use; --no-azurite skips it)

The signed GET carries a fixed x-ms-date, so every replay is verified again
by the server (HMAC-SHA256 over the same string) and stays inside the
15-minute clock-skew window for the whole run. Runs alternate between the
servers round by round so machine noise hits them alike; the median
requests/s of --rounds rounds is printed with min, max, wrk's p50/p99
latency of the median round and the server's resident memory after it.

  bench_get.py [--seconds S] [--conns C] [--rounds R] [--value BYTES]
               [--no-azurite] [--backend NAME]

TABLED names the binary (default ./tabled of the build tree).
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

TOP = os.environ.get("TOP_BUILDDIR") or os.getcwd()
TABLED = os.environ.get("TABLED") or os.path.join(TOP, "tabled")
DEPS = os.path.join(TOP, "tests", "bench-deps")
ACCOUNT = "devstoreaccount1"
KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
       "K1SZFPTOtr/KBHBeksoGMGw==")
VERSION = "2019-02-02"
ENTITY_PATH = "/bench(PartitionKey='p',RowKey='r')"


def rfc1123():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S GMT")


def signed_headers(method, path, content_type=""):
    """SharedKey headers (SPEC 10.2) for METHOD /ACCOUNT+path."""
    date = rfc1123()
    resource = "/%s/%s%s" % (ACCOUNT, ACCOUNT, path)
    sts = "\n".join([method, "", content_type, date, resource])
    sig = base64.b64encode(hmac.new(base64.b64decode(KEY), sts.encode(),
                                    hashlib.sha256).digest()).decode()
    return {"x-ms-date": date, "x-ms-version": VERSION,
            "Accept": "application/json;odata=nometadata",
            "DataServiceVersion": "3.0", "MaxDataServiceVersion": "3.0",
            "Authorization": "SharedKey %s:%s" % (ACCOUNT, sig)}


def call(port, method, path, body=None):
    """One signed request; returns the status code."""
    data = json.dumps(body).encode() if body is not None else None
    ct = "application/json" if data is not None else ""
    hdrs = signed_headers(method, path, ct)
    if ct:
        hdrs["Content-Type"] = ct
    req = urllib.request.Request("http://127.0.0.1:%d/%s%s" % (port, ACCOUNT, path),
                                 data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    """Resident memory of pid and its children (Azurite runs under node)."""
    total = 0
    pids = [pid]
    try:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], stdout=subprocess.PIPE,
                             text=True).stdout
        pids += [int(x) for x in out.split()]
    except OSError:
        pass
    for p in pids:
        try:
            with open("/proc/%d/status" % p) as f:
                for ln in f:
                    if ln.startswith("VmRSS:"):
                        total += int(ln.split()[1])
        except OSError:
            pass
    return total


class Proc:
    """A server process started from argv; ready when its port answers."""

    def __init__(self, name, argv, port, cwd=None):
        self.name, self.argv, self.port, self.cwd = name, argv, port, cwd

    def start(self):
        self.log = tempfile.TemporaryFile()
        self.p = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, cwd=self.cwd,
                                  start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.p.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.log.seek(0)
        raise RuntimeError("%s did not start: %s\n%s" % (self.name, " ".join(self.argv),
                                                        self.log.read().decode()[-2000:]))

    def stop(self):
        try:
            os.killpg(self.p.pid, signal.SIGTERM)
            self.p.wait(20)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait(5)


def tabled_proc(auth, backend, tmp):
    port = free_port()
    argv = [TABLED, "--port", str(port), "--backend", backend, "--durability", "none",
            "--access-log", "off", "--log-level", "warn", "--data", os.path.join(tmp, "data")]
    if not auth:
        argv += ["--auth", "off"]
    return Proc("tabled-auth" if auth else "tabled-noauth", argv, port)


def azurite_bin():
    """Path of azurite-table, installing the npm package on first use;
    (None, reason) when it cannot be had."""
    exe = os.path.join(DEPS, "node_modules", ".bin", "azurite-table")
    if os.access(exe, os.X_OK):
        return exe, None
    npm = shutil.which("npm")
    if not npm:
        return None, "npm not found"
    os.makedirs(DEPS, exist_ok=True)
    p = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error",
                        "--prefix", DEPS, "azurite@3"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if p.returncode != 0 or not os.access(exe, os.X_OK):
        return None, "npm install azurite failed: %s" % p.stdout.decode()[-500:]
    return exe, None


def azurite_proc(exe, tmp):
    port = free_port()
    loc = os.path.join(tmp, "azurite")
    os.makedirs(loc, exist_ok=True)
    argv = [exe, "--tableHost", "127.0.0.1", "--tablePort", str(port), "--inMemoryPersistence",
            "--silent", "--skipApiVersionCheck"]
    return Proc("azurite", argv, port, cwd=loc)


def wrk(port, seconds, conns):
    """One wrk run of the signed point GET; returns (req/s, p50, p99, non-2xx)."""
    hdrs = signed_headers("GET", ENTITY_PATH)
    argv = ["wrk", "-t1", "-c%d" % conns, "-d%ds" % seconds, "--latency"]
    for k, v in hdrs.items():
        argv += ["-H", "%s: %s" % (k, v)]
    argv.append("http://127.0.0.1:%d/%s%s" % (port, ACCOUNT, ENTITY_PATH))
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout
    m = re.search(r"Requests/sec:\s*([\d.]+)", out)
    if not m:
        raise RuntimeError("wrk output not understood:\n" + out)
    lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    bad = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    return float(m.group(1)), lat.get("50", "?"), lat.get("99", "?"), int(bad.group(1)) if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--value", type=int, default=1000, help="bytes of the Data property")
    ap.add_argument("--backend", default="memory")
    ap.add_argument("--no-azurite", action="store_true")
    a = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("bench_get.py: wrk not found (apt-get install wrk)")
    tmp = tempfile.mkdtemp(prefix="tabled-bench-")
    configs = [lambda: tabled_proc(False, a.backend, tmp), lambda: tabled_proc(True, a.backend, tmp)]
    if a.no_azurite:
        print("azurite: skipped (--no-azurite)")
    else:
        exe, why = azurite_bin()
        if exe:
            configs.append(lambda: azurite_proc(exe, tmp))
        else:
            print("azurite: unavailable, %s" % why)
    entity = {"PartitionKey": "p", "RowKey": "r", "Data": "x" * a.value, "Qty": 3}
    results = {}
    try:
        for _ in range(a.rounds):
            for make in configs:
                srv = make().start()
                try:
                    st = (call(srv.port, "POST", "/Tables", {"TableName": "bench"}),
                          call(srv.port, "PUT", ENTITY_PATH, entity),
                          call(srv.port, "GET", ENTITY_PATH))
                    if st[2] != 200:
                        raise RuntimeError("%s: setup answered %s" % (srv.name, st))
                    rps, p50, p99, bad = wrk(srv.port, a.seconds, a.conns)
                    if bad:
                        raise RuntimeError("%s: %d non-2xx answers under load" % (srv.name, bad))
                    results.setdefault(srv.name, []).append((rps, p50, p99, rss_kib(srv.p.pid)))
                finally:
                    srv.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("point GET of a %d-byte entity, wrk -t1 -c%d -d%ds, %d rounds (median [min-max])"
          % (a.value, a.conns, a.seconds, a.rounds))
    print("%-14s %10s %22s %9s %9s %10s" % ("server", "req/s", "range", "p50", "p99", "RSS MiB"))
    for name, runs in results.items():
        runs.sort()
        med = runs[len(runs) // 2]
        print("%-14s %10.0f %22s %9s %9s %10.1f" % (
            name, statistics.median(r[0] for r in runs),
            "[%.0f-%.0f]" % (runs[0][0], runs[-1][0]), med[1], med[2], med[3] / 1024.0))
    if "tabled-auth" in results and "tabled-noauth" in results:
        on = statistics.median(r[0] for r in results["tabled-auth"])
        off = statistics.median(r[0] for r in results["tabled-noauth"])
        print("SharedKey verification costs %.1f%% of point-GET throughput" % (100 * (1 - on / off)))
    if "azurite" in results and "tabled-auth" in results:
        az = statistics.median(r[0] for r in results["azurite"])
        on = statistics.median(r[0] for r in results["tabled-auth"])
        print("tabled (auth on) serves %.1fx Azurite's point GETs" % (on / az))


if __name__ == "__main__":
    main()
