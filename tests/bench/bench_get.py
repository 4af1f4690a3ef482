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
               [--shapes old,outside,outside-plain,outside-onekey]
               [--entities N] [--outside-backend leveldb|flatfile]
               [--sas account|table] [--base OLD_BINARY]
               [--only-sas]

--atom adds tabled-atom: the same signed GET with x-ms-version 2013-08-15
and Accept: application/atom+xml (an AtomPub entry instead of JSON), and
prints its throughput relative to tabled-auth's JSON.

Shapes. The default (shape "old") is the one above: one entity, the same
URL every request, the memory backend, an account SAS, the few headers
above, nometadata. --shapes old,outside runs a second shape in the same
invocation, round by round with the first, the one an outside harness
measured ("100,000 x 1 KiB entities, SAS-signed wrk, point GET"):

  outside   --entities (default 100000) entities of ~1 KiB loaded once
            (tests/bench/bench_insert -b 100 -w, 10 connections, into the
            default backend leveldb, or --outside-backend, in a fresh data
            directory, served by each server started after that); every request a random one
            of them (a wrk Lua script builds each URL: a different path
            every time, the SAS query on each); the SAS kind of --sas
            (account, or table: a service SAS for table bench, sp=r);
            the headers an Azure SDK sends (Accept: ...minimalmetadata,
            x-ms-version, x-ms-date, x-ms-client-request-id, User-Agent,
            DataServiceVersion, MaxDataServiceVersion, Accept-Encoding,
            Connection: keep-alive). nginx answers the same script's
            requests with 204.

Two variants of it, to tell its parts apart: outside-plain sends the old
shape's headers (nometadata) instead of the SDK's, outside-onekey asks for
the same entity every time.

--base OLD_BINARY adds tabled-sas-base (that binary, same shapes), run
alternately with the new one in every round, and prints the two ratios.
--only-sas runs just the signed servers (tabled-sas, its base, nginx).

TABLED names the binary (default ./tabled of the build tree);
BENCH_INSERT the loader (default tests/bench/bench_insert of the build
tree).
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
BENCH_INSERT = os.environ.get("BENCH_INSERT") or os.path.join(TOP, "tests", "bench", "bench_insert")
LOAD_CONNS = 10  # bench_insert connections of the outside shape's load: partitions bc0000..
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


def table_sas(table="bench"):
    """A table (service) SAS query string (doc/protocol.md, Table SAS) for reading table,
    valid until 2099, as an SDK's generate_table_sas writes it."""
    se = "2099-01-01T00:00:00Z"
    sts = "\n".join(["r", "", se, "/table/%s/%s" % (ACCOUNT, table), "", "", "", VERSION,
                     "", "", "", ""])
    sig = base64.b64encode(hmac.new(base64.b64decode(KEY), sts.encode(),
                                    hashlib.sha256).digest()).decode()
    return urllib.parse.urlencode([("se", se), ("sp", "r"), ("sv", VERSION), ("tn", table),
                                   ("sig", sig)])


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


def tabled_proc(auth, backend, tmp, name=None, binary=None, data=None):
    port = free_port()
    argv = [binary or TABLED, "--port", str(port), "--backend", backend, "--durability", "none",
            "--access-log", "off", "--log-level", "warn",
            "--data", data or os.path.join(tmp, "data")]
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


# The outside shape's requests: a random loaded entity each time, the SAS
# on every URL, an SDK's headers (a fresh client request id each time).
OUTSIDE_LUA = """
local sas = "%(sas)s"
local sdk = %(sdk)s
local hdrs = {["Accept"] = "application/json;odata=minimalmetadata",
  ["x-ms-version"] = "%(version)s", ["x-ms-date"] = "%(date)s",
  ["DataServiceVersion"] = "3.0", ["MaxDataServiceVersion"] = "3.0;NetFx",
  ["User-Agent"] = "azsdk-python-data-tables/12.4.0 Python/3.11.2 (Linux-6.1.0-x86_64-with-glibc2.36)",
  ["Accept-Encoding"] = "gzip, deflate", ["Connection"] = "keep-alive"}
if not sdk then
  hdrs = {["x-ms-version"] = "%(version)s", ["Accept"] = "application/json;odata=nometadata",
          ["DataServiceVersion"] = "3.0", ["MaxDataServiceVersion"] = "3.0"}
end
local one = %(one)s
math.randomseed(os.time())
request = function()
  if sdk then
    hdrs["x-ms-client-request-id"] = string.format("%%08x-%%04x-4%%03x-a%%03x-%%012x",
      math.random(0, 0x7fffffff), math.random(0, 0xffff), math.random(0, 0xfff),
      math.random(0, 0xfff), math.random(0, 0x7fffffff))
  end
  local path
  if one then
    path = "/%(account)s/bench(PartitionKey='bc0000',RowKey='r0000000001-00')?" .. sas
  else
    path = string.format(
      "/%(account)s/bench(PartitionKey='bc%%04d',RowKey='r%%010d-%%02d')?",
      math.random(0, %(conns)d - 1), math.random(1, %(per)d), math.random(0, 99)) .. sas
  end
  return wrk.format("GET", path, hdrs)
end
"""


def load_outside(tmp, entities, value, backend="leveldb"):
    """Loads the outside shape's entities once into a fresh data directory
    of backend (a server with --auth off, bench_insert $batch changesets of
    100); returns the directory."""
    if entities % (100 * LOAD_CONNS):
        sys.exit("bench_get.py: --entities must be a multiple of %d" % (100 * LOAD_CONNS))
    if not os.access(BENCH_INSERT, os.X_OK):
        sys.exit("bench_get.py: %s not built (make tests/bench/bench_insert)" % BENCH_INSERT)
    data = os.path.join(tmp, "outside-data")
    srv = tabled_proc(False, backend, tmp, "loader", data=data).start()
    try:
        if call(srv.port, "POST", "/Tables", {"TableName": "bench"}) != 201:
            raise RuntimeError("loader: Create Table failed")
        t0 = time.monotonic()
        out = subprocess.run([BENCH_INSERT, "-p", str(srv.port), "-t", "bench", "-k", "b", "-w",
                              "-s", str(value), "-b", "100", "-c", str(LOAD_CONNS), "-N",
                              str(entities // 100 // LOAD_CONNS)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if out.returncode != 0:
            raise RuntimeError("bench_insert failed:\n" + out.stdout)
        print("outside shape: %d entities loaded into %s in %.1f s"
              % (entities, backend, time.monotonic() - t0))
    finally:
        srv.stop()
    # LevelDB writes the load's log into tables when it next opens the
    # store, and compacts on its own threads: let that finish here, not
    # under the first measured server.
    srv = tabled_proc(False, backend, tmp, "settle", data=data).start()
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 600:
            c0 = cpu_seconds(srv.p.pid)
            time.sleep(1)
            if cpu_seconds(srv.p.pid) - c0 < 0.05:
                break
        print("outside shape: store settled in %.1f s" % (time.monotonic() - t0))
    finally:
        srv.stop()
    return data


def wrk_script(port, seconds, conns, script):
    """One wrk run of a Lua script's requests; returns (req/s, p50, p99, non-2xx)."""
    argv = ["wrk", "-t1", "-c%d" % conns, "-d%ds" % seconds, "--latency", "-s", script,
            "http://127.0.0.1:%d" % port]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout
    return wrk_parse(out)


def wrk_parse(out):
    m = re.search(r"Requests/sec:\s*([\d.]+)", out)
    if not m:
        raise RuntimeError("wrk output not understood:\n" + out)
    lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    bad = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    return float(m.group(1)), lat.get("50", "?"), lat.get("99", "?"), int(bad.group(1)) if bad else 0


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
    return wrk_parse(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--value", type=int, default=1000, help="bytes of the Data property")
    ap.add_argument("--backend", default="memory", help="backend of the old shape")
    ap.add_argument("--no-azurite", action="store_true")
    ap.add_argument("--no-nginx", action="store_true")
    ap.add_argument("--atom", action="store_true", help="also the GET in AtomPub XML")
    ap.add_argument("--shapes", default="old", help="old, outside or old,outside")
    ap.add_argument("--entities", type=int, default=100000, help="entities of the outside shape")
    ap.add_argument("--outside-backend", default="leveldb", choices=("leveldb", "flatfile"),
                    help="durable backend of the outside shapes")
    ap.add_argument("--sas", default="account", choices=("account", "table"),
                    help="SAS kind of the outside shape")
    ap.add_argument("--base", help="an older tabled binary run alternately with TABLED")
    ap.add_argument("--only-sas", action="store_true",
                    help="only the SAS-signed servers and nginx")
    a = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("bench_get.py: wrk not found (apt-get install wrk)")
    shapes = a.shapes.split(",")
    if not set(shapes) <= {"old", "outside", "outside-plain", "outside-onekey"}:
        sys.exit("bench_get.py: --shapes takes old, outside, outside-plain, outside-onekey")
    tmp = tempfile.mkdtemp(prefix="tabled-bench-")
    ngx = None
    if a.no_nginx:
        print("nginx: skipped (--no-nginx)")
    else:
        ngx = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",)
                                             if os.access(p, os.X_OK)), None)
        if not ngx:
            print("nginx: not found, skipped (apt-get install nginx-light)")
    exe = None
    if "old" in shapes and not a.no_azurite and not a.only_sas:
        exe, why = azurite_bin()
        if not exe:
            print("azurite: unavailable, %s" % why)
    elif "old" in shapes and a.no_azurite:
        print("azurite: skipped (--no-azurite)")
    # (shape, name, factory); names carry the shape when there are two
    configs = []
    data = None
    for shape in shapes:
        sfx = "" if len(shapes) == 1 else "/" + shape
        if shape == "old":
            be, dd = a.backend, None
            if not a.only_sas:
                configs += [(shape, "tabled-noauth" + sfx, lambda be=be: tabled_proc(False, be, tmp)),
                            (shape, "tabled-auth" + sfx, lambda be=be: tabled_proc(True, be, tmp))]
        else:
            data = data or load_outside(tmp, a.entities, a.value, a.outside_backend)
            be, dd = a.outside_backend, data
        configs.append((shape, "tabled-sas" + sfx,
                        lambda be=be, dd=dd, n="tabled-sas" + sfx:
                        tabled_proc(True, be, tmp, n, data=dd)))
        if a.base:
            configs.append((shape, "tabled-sas-base" + sfx,
                            lambda be=be, dd=dd, n="tabled-sas-base" + sfx:
                            tabled_proc(True, be, tmp, n, binary=a.base, data=dd)))
        if ngx:
            configs.append((shape, "nginx" + sfx, lambda: nginx_proc(ngx, tmp)))
        if shape == "old" and a.atom:
            configs.append((shape, "tabled-atom", lambda: tabled_proc(True, a.backend, tmp,
                                                                      "tabled-atom")))
        if shape == "old" and exe:
            configs.append((shape, "azurite", lambda: azurite_proc(exe, tmp)))
    entity = {"PartitionKey": "p", "RowKey": "r", "Data": "x" * a.value, "Qty": 3}
    sas = account_sas()
    osas = account_sas() if a.sas == "account" else table_sas()
    scripts = {}
    for shape in shapes:
        if shape.startswith("outside"):
            scripts[shape] = os.path.join(tmp, shape + ".lua")
            with open(scripts[shape], "w") as f:
                f.write(OUTSIDE_LUA % {
                    "sas": osas, "version": VERSION, "date": rfc1123(), "account": ACCOUNT,
                    "conns": LOAD_CONNS, "per": a.entities // 100 // LOAD_CONNS,
                    "sdk": "false" if shape == "outside-plain" else "true",
                    "one": "true" if shape == "outside-onekey" else "false"})
    probe = "/bench(PartitionKey='bc0000',RowKey='r%010d-00')" % 1
    results = {}
    ratios = {}  # (shape, server) -> [server / nginx req/s per core, per round]
    try:
        for _ in range(a.rounds):
            for shape, name, make in configs:
                srv = make()
                srv.name = name
                srv.start()
                try:
                    plain = name.split("/")[0]
                    if plain != "nginx" and shape == "old":
                        st = (call(srv.port, "POST", "/Tables", {"TableName": "bench"}),
                              call(srv.port, "PUT", ENTITY_PATH, entity),
                              call(srv.port, "GET", ENTITY_PATH))
                        if st[2] != 200:
                            raise RuntimeError("%s: setup answered %s" % (name, st))
                    elif plain != "nginx" and call(srv.port, "GET", probe) != 200:
                        raise RuntimeError("%s: a loaded entity is missing" % name)
                    cpu0, t0 = cpu_seconds(srv.p.pid), time.monotonic()
                    if shape in scripts:
                        rps, p50, p99, bad = wrk_script(srv.port, a.seconds, a.conns,
                                                        scripts[shape])
                    else:
                        rps, p50, p99, bad = wrk(srv.port, a.seconds, a.conns,
                                                 plain == "tabled-atom",
                                                 sas if plain in ("tabled-sas", "tabled-sas-base",
                                                                  "nginx") else None)
                    cores = (cpu_seconds(srv.p.pid) - cpu0) / (time.monotonic() - t0)
                    if bad:
                        raise RuntimeError("%s: %d non-2xx answers under load" % (name, bad))
                    results.setdefault(name, []).append(
                        (rps, p50, p99, rss_kib(srv.p.pid), rps / max(cores, 1e-3)))
                finally:
                    srv.stop()
            for shape in shapes:
                sfx = "" if len(shapes) == 1 else "/" + shape
                for t in ("tabled-sas", "tabled-sas-base"):
                    if t + sfx in results and "nginx" + sfx in results:
                        ratios.setdefault((shape, t), []).append(
                            results[t + sfx][-1][4] / results["nginx" + sfx][-1][4])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("point GET, %d-byte Data, wrk -t1 -c%d -d%ds, %d rounds (median [min-max])"
          % (a.value, a.conns, a.seconds, a.rounds))
    for shape in shapes:
        if shape == "old":
            print("  old: one entity, one URL, %s backend, account SAS, nometadata" % a.backend)
        else:
            print("  %s: %d entities, %s, %s, %s SAS, %s" % (
                shape, a.entities,
                "the same one every request" if shape == "outside-onekey"
                else "a random one per request", a.outside_backend, a.sas,
                "the old shape's headers, nometadata" if shape == "outside-plain"
                else "SDK headers, minimalmetadata"))
    print("%-22s %10s %22s %9s %9s %10s %12s" % ("server", "req/s", "range", "p50", "p99",
                                                 "RSS MiB", "req/s/core"))
    for name, runs in results.items():
        runs.sort()
        med = runs[len(runs) // 2]
        print("%-22s %10.0f %22s %9s %9s %10.1f %12.0f" % (
            name, statistics.median(r[0] for r in runs),
            "[%.0f-%.0f]" % (runs[0][0], runs[-1][0]), med[1], med[2], med[3] / 1024.0,
            statistics.median(r[4] for r in runs)))
    for (shape, t), rs in ratios.items():
        print("%s shape, %s per server core: %.1f%% of nginx's `return 204` "
              "(median of %d rounds, range %.1f-%.1f%%)" % (
                  shape, t, 100 * statistics.median(rs), len(rs), 100 * min(rs), 100 * max(rs)))
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
