#!/usr/bin/python3
"""bench_get.py - point-GET throughput of tabled beside Azurite (make bench).

One ~1 KiB entity is inserted into table `bench`, then wrk (one thread,
--conns keep-alive connections, --seconds per run) replays one GET of it:

  tabled-noauth  ./tabled --auth off            (memory backend)
  tabled-auth    ./tabled, SharedKey verified   (memory backend)
  tabled-sas     ./tabled, the GET signed with an account SAS on the URL
  nginx          nginx with one worker answering `return 204;` to the
                 same request (SAS URL) over the same keep-alive
                 connections: the floor of an HTTP server on this machine
                 (Debian package nginx-light; --no-nginx skips it)
  azurite        azurite-table --inMemoryPersistence, SharedKey verified
                 (npm package `azurite`, installed into tests/bench-deps of
                 the build tree on first use; --no-azurite skips it)

The signed GET carries a fixed x-ms-date, so every replay is verified again
by the server (HMAC-SHA256 over the same string) and stays inside the
15-minute clock-skew window for the whole run. Runs alternate between the
servers round by round so machine noise hits them alike; the median
requests/s of --rounds rounds is printed with min, max, wrk's p50/p99
latency of the median round and the server's resident memory after it.

Each run also reads the server's CPU time (utime + stime in /proc/PID/stat,
children included) before and after wrk: req/s per server core is req/s
divided by the CPU seconds the server used per second of the run. That
figure hardly depends on how busy the shared machine is, and it is the one
compared between tabled-sas and nginx (the median of the per-round ratios).

  bench_get.py [--seconds S] [--conns C] [--rounds R] [--value BYTES]
               [--no-azurite] [--no-nginx] [--backend NAME] [--atom]

--atom adds tabled-atom: the same signed GET with x-ms-version 2013-08-15
and Accept: application/atom+xml (an AtomPub entry instead of JSON), and
prints its throughput relative to tabled-auth's JSON.

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
import urllib.parse
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


def signed_headers(method, path, content_type="", atom=False):
    """SharedKey headers (doc/protocol.md, SharedKey) for METHOD /ACCOUNT+path; atom: ask
    for AtomPub XML at a version that serves it."""
    date = rfc1123()
    resource = "/%s/%s%s" % (ACCOUNT, ACCOUNT, path)
    sts = "\n".join([method, "", content_type, date, resource])
    sig = base64.b64encode(hmac.new(base64.b64decode(KEY), sts.encode(),
                                    hashlib.sha256).digest()).decode()
    return {"x-ms-date": date, "x-ms-version": "2013-08-15" if atom else VERSION,
            "Accept": "application/atom+xml" if atom else "application/json;odata=nometadata",
            "DataServiceVersion": "3.0", "MaxDataServiceVersion": "3.0",
            "Authorization": "SharedKey %s:%s" % (ACCOUNT, sig)}


def account_sas():
    """An account SAS query string (doc/protocol.md, Account SAS) for table reads and writes,
    valid until 2099: static, so wrk replays it and the server verifies its
    signature on every request."""
    f = [("sv", VERSION), ("ss", "t"), ("srt", "sco"), ("sp", "rwdlacu"),
         ("se", "2099-01-01T00:00:00Z")]
    d = dict(f)
    sts = "\n".join([ACCOUNT, d["sp"], d["ss"], d["srt"], "", d["se"], "", "", d["sv"], ""])
    sig = base64.b64encode(hmac.new(base64.b64decode(KEY), sts.encode(),
                                    hashlib.sha256).digest()).decode()
    return urllib.parse.urlencode(f + [("sig", sig)])


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


def cpu_seconds(pid):
    """User + system CPU seconds of pid and its children so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    try:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], stdout=subprocess.PIPE,
                             text=True).stdout
        pids += [int(x) for x in out.split()]
    except OSError:
        pass
    total = 0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total / ticks


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


def tabled_proc(auth, backend, tmp, name=None):
    port = free_port()
    argv = [TABLED, "--port", str(port), "--backend", backend, "--durability", "none",
            "--access-log", "off", "--log-level", "warn", "--data", os.path.join(tmp, "data")]
    if not auth:
        argv += ["--auth", "off"]
    return Proc(name or ("tabled-auth" if auth else "tabled-noauth"), argv, port)


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


NGINX_CONF = """daemon off;
master_process off;
worker_processes 1;
error_log stderr warn;
pid %(tmp)s/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_timeout 75s;
    keepalive_requests 100000000;
    client_body_temp_path %(tmp)s/body;
    proxy_temp_path %(tmp)s/proxy;
    fastcgi_temp_path %(tmp)s/fastcgi;
    uwsgi_temp_path %(tmp)s/uwsgi;
    scgi_temp_path %(tmp)s/scgi;
    server {
        listen 127.0.0.1:%(port)d;
        location / { return 204; }
    }
}
"""


def nginx_proc(exe, tmp):
    """nginx in one process (master_process off: the worker is the server)
    answering 204 to everything, with its files under tmp/nginx."""
    port = free_port()
    d = os.path.join(tmp, "nginx")
    os.makedirs(d, exist_ok=True)
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF % {"tmp": d, "port": port})
    return Proc("nginx", [exe, "-p", d, "-c", conf], port)


def wrk(port, seconds, conns, atom=False, sas=None):
    """One wrk run of the signed point GET (SharedKey headers, or the
    account SAS query sas); returns (req/s, p50, p99, non-2xx)."""
    if sas:
        hdrs = {"x-ms-version": VERSION, "Accept": "application/json;odata=nometadata",
                "DataServiceVersion": "3.0", "MaxDataServiceVersion": "3.0"}
    else:
        hdrs = signed_headers("GET", ENTITY_PATH, atom=atom)
    argv = ["wrk", "-t1", "-c%d" % conns, "-d%ds" % seconds, "--latency"]
    for k, v in hdrs.items():
        argv += ["-H", "%s: %s" % (k, v)]
    argv.append("http://127.0.0.1:%d/%s%s%s" % (port, ACCOUNT, ENTITY_PATH,
                                                "?" + sas if sas else ""))
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
    ap.add_argument("--no-nginx", action="store_true")
    ap.add_argument("--atom", action="store_true", help="also the GET in AtomPub XML")
    a = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("bench_get.py: wrk not found (apt-get install wrk)")
    tmp = tempfile.mkdtemp(prefix="tabled-bench-")
    configs = [lambda: tabled_proc(False, a.backend, tmp), lambda: tabled_proc(True, a.backend, tmp),
               lambda: tabled_proc(True, a.backend, tmp, "tabled-sas")]
    if a.no_nginx:
        print("nginx: skipped (--no-nginx)")
    else:
        ngx = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",)
                                             if os.access(p, os.X_OK)), None)
        if ngx:
            configs.append(lambda: nginx_proc(ngx, tmp))
        else:
            print("nginx: not found, skipped (apt-get install nginx-light)")
    if a.atom:
        configs.append(lambda: tabled_proc(True, a.backend, tmp, "tabled-atom"))
    if a.no_azurite:
        print("azurite: skipped (--no-azurite)")
    else:
        exe, why = azurite_bin()
        if exe:
            configs.append(lambda: azurite_proc(exe, tmp))
        else:
            print("azurite: unavailable, %s" % why)
    entity = {"PartitionKey": "p", "RowKey": "r", "Data": "x" * a.value, "Qty": 3}
    sas = account_sas()
    results = {}
    ratios = []  # tabled-sas / nginx req/s per core, per round
    try:
        for _ in range(a.rounds):
            for make in configs:
                srv = make().start()
                try:
                    if srv.name != "nginx":
                        st = (call(srv.port, "POST", "/Tables", {"TableName": "bench"}),
                              call(srv.port, "PUT", ENTITY_PATH, entity),
                              call(srv.port, "GET", ENTITY_PATH))
                        if st[2] != 200:
                            raise RuntimeError("%s: setup answered %s" % (srv.name, st))
                    cpu0, t0 = cpu_seconds(srv.p.pid), time.monotonic()
                    rps, p50, p99, bad = wrk(srv.port, a.seconds, a.conns,
                                             srv.name == "tabled-atom",
                                             sas if srv.name in ("tabled-sas", "nginx") else None)
                    cores = (cpu_seconds(srv.p.pid) - cpu0) / (time.monotonic() - t0)
                    if bad:
                        raise RuntimeError("%s: %d non-2xx answers under load" % (srv.name, bad))
                    results.setdefault(srv.name, []).append(
                        (rps, p50, p99, rss_kib(srv.p.pid), rps / max(cores, 1e-3)))
                finally:
                    srv.stop()
            if "tabled-sas" in results and "nginx" in results:
                ratios.append(results["tabled-sas"][-1][4] / results["nginx"][-1][4])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("point GET of a %d-byte entity, wrk -t1 -c%d -d%ds, %d rounds (median [min-max])"
          % (a.value, a.conns, a.seconds, a.rounds))
    print("%-14s %10s %22s %9s %9s %10s %12s" % ("server", "req/s", "range", "p50", "p99",
                                                 "RSS MiB", "req/s/core"))
    for name, runs in results.items():
        runs.sort()
        med = runs[len(runs) // 2]
        print("%-14s %10.0f %22s %9s %9s %10.1f %12.0f" % (
            name, statistics.median(r[0] for r in runs),
            "[%.0f-%.0f]" % (runs[0][0], runs[-1][0]), med[1], med[2], med[3] / 1024.0,
            statistics.median(r[4] for r in runs)))
    if ratios:
        print("tabled (account SAS verified) per server core: %.1f%% of nginx's `return 204` "
              "(median of %d rounds, range %.1f-%.1f%%)" % (
                  100 * statistics.median(ratios), len(ratios), 100 * min(ratios),
                  100 * max(ratios)))
    if "tabled-auth" in results and "tabled-noauth" in results:
        on = statistics.median(r[0] for r in results["tabled-auth"])
        off = statistics.median(r[0] for r in results["tabled-noauth"])
        print("SharedKey verification costs %.1f%% of point-GET throughput" % (100 * (1 - on / off)))
    if "tabled-atom" in results and "tabled-auth" in results:
        at = statistics.median(r[0] for r in results["tabled-atom"])
        on = statistics.median(r[0] for r in results["tabled-auth"])
        print("an Atom point GET runs at %.2fx the JSON one's req/s" % (at / on))
    if "azurite" in results and "tabled-auth" in results:
        az = statistics.median(r[0] for r in results["azurite"])
        on = statistics.median(r[0] for r in results["tabled-auth"])
        print("tabled (auth on) serves %.1fx Azurite's point GETs" % (on / az))


if __name__ == "__main__":
    main()
