#!/usr/bin/python3
"""Integration test: several tabled processes (front ends) on one
PostgreSQL behave as one service (issue 16, store/tables.h, store/store.h).

A private PostgreSQL is started for the test (initdb in a temporary
directory, a unix socket there and a free port, no TCP listener; as root
the server runs as "nobody"), and three tabled processes A, B, C on it:
  catalogue   a table created on A is usable on B at once, listed by B's
              Query Tables; deleted on B it is gone on A; re-created, it
              holds none of the old entities; an ACL set on A is B's;
              tables created concurrently through all three get distinct
              ids (each sees only its own entities);
  etags       concurrent conditional updates of one entity through the
              three front ends: exactly one winner per ETag, no lost
              update (the counter equals the number of 204s);
  upserts     unconditional Insert Or Replace racing on one entity: every
              ETag distinct, each client's ETags strictly increasing;
  batch       batches rewriting a partition through A, read through B:
              every read sees one batch, never a mix;
  paging      a query started on A is continued on B with its tokens;
  kill        kill -9 of C under write load: every acknowledged write is
              there, every batch is all or nothing;
  purge       a fourth front end deletes a table of 8000 entities and is
              killed at once: A and B find its purge record and finish
              the purge (checked in the database with psql);
  outage      PostgreSQL stopped under load: clients get 503 ServerBusy or
              500 OperationTimedOut, never a hang; /healthz says 503
              "unavailable"; restarted, /healthz is 200 again, writes work
              and nothing acknowledged is lost.
The PostgreSQL harness here is this file's own (minimal: start, stop,
restart). Skipped (TAP "1..0 # SKIP") only when tabled has no postgres
backend or the PostgreSQL server binaries are not installed.
Prints TAP; exit status 1 on failure."""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402


# ---- a private PostgreSQL ---------------------------------------------------

def pg_bindir():
    """The directory of initdb, postgres and pg_ctl, or None."""
    dirs = []
    try:
        dirs.append(subprocess.run(["pg_config", "--bindir"], capture_output=True,
                                   text=True).stdout.strip())
    except OSError:
        pass
    dirs += sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                   key=lambda d: [int(x) for x in re.findall(r"\d+", d)], reverse=True)
    for d in dirs:
        if d and all(os.access(os.path.join(d, b), os.X_OK)
                     for b in ("initdb", "postgres", "pg_ctl")):
            return d
    return None


def has_postgres_backend():
    """True when tabled was built with the postgres backend."""
    r = subprocess.run([h.tabled_path(), "--help"], capture_output=True, text=True)
    return "postgres" in r.stdout + r.stderr


class Postgres:
    """initdb, start, stop (immediate: a crash), start again, remove."""

    def __init__(self, bindir):
        self.bindir = bindir
        self.tmp = tempfile.mkdtemp(prefix="tabled-fe-pg-")
        self.as_user = []
        if os.getuid() == 0:
            self.as_user = ["runuser", "-u", "nobody", "--"]
            os.chmod(self.tmp, 0o755)
            shutil.chown(self.tmp, "nobody")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.data = os.path.join(self.tmp, "data")

    def run(self, *args):
        cmd = self.as_user + [os.path.join(self.bindir, args[0])] + list(args[1:])
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def init(self):
        r = self.run("initdb", "-D", self.data, "-A", "trust", "-U", "tabled", "--no-sync")
        if r.returncode != 0:
            raise h.ServerError("initdb failed: %s %s" % (r.stdout, r.stderr))
        self.start()

    def start(self):
        r = self.run("pg_ctl", "-D", self.data, "-l", os.path.join(self.tmp, "server.log"),
                     "-w", "-t", "60", "-o", "-k %s -p %d -c listen_addresses= -c fsync=off"
                     % (self.tmp, self.port), "start")
        if r.returncode != 0:
            raise h.ServerError("PostgreSQL did not start: %s %s" % (r.stdout, self.log()))

    def stop(self):
        self.run("pg_ctl", "-D", self.data, "-w", "-t", "60", "-m", "immediate", "stop")

    def log(self):
        try:
            with open(os.path.join(self.tmp, "server.log")) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def sql(self, query):
        """One query through psql; its rows as lists of text fields."""
        r = subprocess.run([os.path.join(self.bindir, "psql"), "-h", self.tmp, "-p",
                            str(self.port), "-U", "tabled", "-d", "postgres", "-AtF", "|",
                            "-c", query], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise h.ServerError("psql: %s" % r.stderr)
        return [line.split("|") for line in r.stdout.splitlines() if line]

    def conninfo(self):
        return "host=%s port=%d user=tabled dbname=postgres" % (self.tmp, self.port)

    def remove(self):
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


# ---- front ends and requests ------------------------------------------------

def frontend(pg):
    return h.Server(backend="postgres", args=["--backend-option", "conninfo=" + pg.conninfo(),
                                              "--admin-port", "0"],
                    ready_timeout=60).start()


def admin_port(srv, timeout=5.0):
    """The admin port from the 'Admin endpoint:' banner line."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for line in list(srv.stdout_lines):
            m = re.search(r"Admin endpoint:\s+http://[^ ]+:(\d+)/metrics", line)
            if m:
                return int(m.group(1))
        time.sleep(0.05)
    raise h.ServerError("no Admin endpoint line: %r" % srv.stdout_lines)


def healthz(srv):
    """(status, body) of GET /healthz on srv's admin listener."""
    target = types.SimpleNamespace(host=srv.host, port=admin_port(srv))
    req = ("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n"
           % target.port).encode()
    got, _ = h.raw_exchange(target, req, timeout=10)
    r = h.first_response(got)
    return (r.status, r.body) if r else (None, got)


def wait_healthz(srv, status, seconds):
    """Polls /healthz until it answers status; returns the last answer."""
    end = time.monotonic() + seconds
    last = None
    while time.monotonic() < end:
        last = healthz(srv)
        if last[0] == status:
            return last
        time.sleep(0.2)
    return last


def etag_of(r):
    return r.h("ETag")


def ent_path(table, pk, rk):
    return "/%s(PartitionKey='%s',RowKey='%s')" % (table, h.quote_key(pk), h.quote_key(rk))


def query_all(http, table, flt=None, top=None):
    """Every entity of a query, following continuation tokens."""
    out, params = [], {}
    while True:
        q = []
        if flt:
            q.append("$filter=" + h.pct_encode(flt))
        if top:
            q.append("$top=%d" % top)
        q += ["%s=%s" % (k, h.pct_encode(v)) for k, v in params.items()]
        r = http.get("/%s()%s" % (table, "?" + "&".join(q) if q else ""))
        if r.status != 200:
            raise h.ServerError("query answered %s %r" % (r.status, r.body[:300]))
        out += r.json()["value"]
        npk, nrk = r.h("x-ms-continuation-NextPartitionKey"), r.h("x-ms-continuation-NextRowKey")
        if not npk:
            return out
        params = {"NextPartitionKey": npk}
        if nrk:
            params["NextRowKey"] = nrk


def batch_body(base, table, ops, boundary="batch_fe", cs="changeset_fe"):
    """A $batch of one changeset to the front end at base (its path-style
    URL): ops are (method, pk, rk, entity)."""
    parts = []
    for i, (method, pk, rk, ent) in enumerate(ops):
        body = json.dumps(ent) if ent is not None else ""
        parts.append("--%s\r\nContent-Type: application/http\r\n"
                     "Content-Transfer-Encoding: binary\r\n\r\n"
                     "%s %s%s HTTP/1.1\r\nContent-ID: %d\r\n"
                     "Content-Type: application/json\r\nAccept: application/json;odata=minimalmetadata\r\n"
                     "Content-Length: %d\r\n\r\n%s\r\n"
                     % (cs, method, base, ent_path(table, pk, rk), i + 1,
                        len(body.encode()), body))
    inner = "".join(parts) + "--%s--\r\n" % cs
    return ("--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n%s--%s--\r\n"
            % (boundary, cs, inner, boundary)).encode(), "multipart/mixed; boundary=" + boundary


def batch(http, table, ops):
    body, ctype = batch_body(http.server.base, table, ops)
    return http.request("POST", "/$batch", body=body, content_type=ctype)


def batch_ok(r):
    """True when a $batch answer reports every operation succeeded."""
    if r.status != 202:
        return False
    codes = re.findall(rb"HTTP/1\.1 (\d{3})", r.body)
    return bool(codes) and all(c.startswith(b"2") for c in codes)


def batch_failure(r):
    """(status, error code) of a failed $batch: the changeset's failing
    part's when the envelope is 202, else the envelope's."""
    if r.status != 202:
        return r.status, r.error_code() if r.status >= 400 else None
    m = re.search(rb"HTTP/1\.1 ([45]\d\d)", r.body)
    c = re.search(rb'"code":"([A-Za-z]+)"', r.body)
    return (int(m.group(1)) if m else 202), (c.group(1).decode() if c else None)


# ---- the tests --------------------------------------------------------------

def test_catalogue(tap, a, b, c):
    """Tables and ACLs made on one front end are every front end's."""
    ha, hb, hc = h.Http(a), h.Http(b), h.Http(c)
    tap.eq(ha.create_table("shared1").status, 201, "catalogue: create on A")
    r = hb.insert("shared1", {"PartitionKey": "p", "RowKey": "r1", "v": 1})
    tap.eq(r.status, 201, "catalogue: B inserts into A's new table at once")
    names = [t["TableName"] for t in hb.get("/Tables").json()["value"]]
    tap.ok("shared1" in names, "catalogue: B's Query Tables lists it", names)
    tap.eq(hc.create_table("shared1").status, 409, "catalogue: C cannot create it again")
    tap.eq(hb.delete_table("shared1").status, 204, "catalogue: delete on B")
    r = ha.get_entity("shared1", "p", "r1")
    tap.eq((r.status, r.error_code()), (404, "TableNotFound"), "catalogue: gone on A at once")
    r = ha.insert("shared1", {"PartitionKey": "p", "RowKey": "r2"})
    tap.eq(r.error_code(), "TableNotFound", "catalogue: A cannot insert into it")
    tap.eq(hc.delete_table("shared1").status, 404, "catalogue: C cannot delete it again")
    tap.eq(ha.create_table("shared1").status, 201, "catalogue: re-created on A")
    r = hc.get("/shared1()")
    tap.eq((r.status, r.json().get("value")), (200, []),
           "catalogue: the re-created table holds none of the old entities (on C)")
    acl = ("<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers><SignedIdentifier>"
           "<Id>pol1</Id><AccessPolicy><Start>2020-01-01T00:00:00Z</Start>"
           "<Expiry>2099-01-01T00:00:00Z</Expiry><Permission>r</Permission></AccessPolicy>"
           "</SignedIdentifier></SignedIdentifiers>")
    r = ha.request("PUT", "/shared1?comp=acl", body=acl, content_type="application/xml")
    tap.eq(r.status, 204, "catalogue: ACL set on A")
    r = hb.get("/shared1?comp=acl")
    tap.ok(r.status == 200 and b"pol1" in r.body, "catalogue: B answers the ACL set on A",
           r.body[:300])

    # service properties (CORS) set on A reach B within a second or so
    props = ('<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors><CorsRule>'
             '<AllowedOrigins>http://fe.example</AllowedOrigins><AllowedMethods>GET'
             '</AllowedMethods><MaxAgeInSeconds>60</MaxAgeInSeconds><ExposedHeaders>'
             '</ExposedHeaders><AllowedHeaders></AllowedHeaders></CorsRule></Cors>'
             '</StorageServiceProperties>')
    hb.get("/?restype=service&comp=properties")   # B caches the old ones
    r = ha.request("PUT", "/?restype=service&comp=properties", body=props,
                   content_type="application/xml")
    tap.eq(r.status, 202, "catalogue: service properties set on A")
    seen, end = None, time.monotonic() + 5
    while time.monotonic() < end:
        seen = hb.get("/?restype=service&comp=properties")
        if b"fe.example" in seen.body:
            break
        time.sleep(0.2)
    tap.ok(seen is not None and b"fe.example" in seen.body,
           "catalogue: B answers A's service properties within seconds", seen)

    # concurrent creates through all three: distinct ids
    names = ["conc%02d" % i for i in range(24)]
    res = {}

    def create(http, name):
        res[name] = http.create_table(name).status
    threads = [threading.Thread(target=create, args=((ha, hb, hc)[i % 3], n))
               for i, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tap.ok(all(v == 201 for v in res.values()),
           "catalogue: 24 tables created concurrently through three front ends", res)
    for i, n in enumerate(names):
        (hb, hc, ha)[i % 3].insert(n, {"PartitionKey": "p", "RowKey": n})
    mixed = []
    for i, n in enumerate(names):
        got = [e["RowKey"] for e in query_all((hc, ha, hb)[i % 3], n)]
        if got != [n]:
            mixed.append((n, got))
    tap.ok(not mixed, "catalogue: each concurrently created table has its own id "
           "(sees only its own entity)", mixed)


def test_conditional(tap, fes, seconds=12.0, per_thread=None):
    """Concurrent If-Match updates of one entity: one winner per ETag."""
    https = [h.Http(s) for s in fes]
    https[0].create_table("cond")
    r = https[0].insert("cond", {"PartitionKey": "p", "RowKey": "c", "n": 0})
    if r.status != 201:
        tap.ok(False, "conditional: seed entity", r)
        return
    lock = threading.Lock()
    wins, tries, bad, etags = [], [0], [], set()
    end = time.monotonic() + seconds

    def worker(http):
        while time.monotonic() < end:
            g = http.get_entity("cond", "p", "c")
            if g.status != 200:
                bad.append(("get", g.status, g.body[:200]))
                return
            n = g.json()["n"]
            u = http.request("PUT", ent_path("cond", "p", "c"),
                             headers={"If-Match": etag_of(g)},
                             body={"PartitionKey": "p", "RowKey": "c", "n": n + 1})
            with lock:
                tries[0] += 1
                if u.status == 204:
                    wins.append((etag_of(g), n + 1))
                    etags.add(etag_of(u))
                elif u.status != 412:
                    bad.append(("put", u.status, u.body[:200]))
    threads = [threading.Thread(target=worker, args=(https[i % len(https)],))
               for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    g = https[1].get_entity("cond", "p", "c")
    final = g.json()["n"] if g.status == 200 else None
    tap.diag("conditional: %d tries, %d won" % (tries[0], len(wins)))
    tap.ok(not bad, "conditional: only 204 and 412 answers", bad[:5])
    tap.ok(tries[0] >= 1000, "conditional: over a thousand tries (%d)" % tries[0])
    by_etag = {}
    for e, _ in wins:
        by_etag[e] = by_etag.get(e, 0) + 1
    tap.ok(all(v == 1 for v in by_etag.values()), "conditional: exactly one winner per ETag",
           [e for e, v in by_etag.items() if v > 1][:5])
    tap.eq(final, len(wins), "conditional: no lost update (counter == number of 204s)")
    tap.eq(len(etags), len(wins), "conditional: every winning write has its own ETag")


def etag_time(etag):
    """The ETag's Timestamp as a sortable string: the service drops trailing
    zeros of the fraction (.1234Z, .12341Z), so it is padded to 7 digits."""
    m = re.search(r"datetime'([^'.Z]+)(?:\.(\d+))?Z'", etag or "")
    if not m:
        return None
    return m.group(1) + "." + (m.group(2) or "").ljust(7, "0")


def test_upserts(tap, fes, per_client=150):
    """Blind Insert Or Replace racing on one entity: ETags unique and
    increasing."""
    https = [h.Http(s) for s in fes]
    https[0].create_table("blind")
    lock = threading.Lock()
    seqs, bad = [], []

    def worker(http, k):
        mine = []
        for i in range(per_client):
            for _ in range(20):
                u = http.request("PUT", ent_path("blind", "p", "x"),
                                 body={"PartitionKey": "p", "RowKey": "x", "w": k, "i": i})
                if u.status != 503:
                    break
            if u.status != 204:
                bad.append((u.status, u.body[:200]))
                return
            mine.append(etag_of(u))
        with lock:
            seqs.append(mine)
    threads = [threading.Thread(target=worker, args=(https[k % len(https)], k))
               for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tap.ok(not bad, "upserts: every Insert Or Replace answered 204", bad[:5])
    flat = [e for s in seqs for e in s]
    tap.eq(len(set(flat)), len(flat), "upserts: %d racing upserts, every ETag distinct"
           % len(flat))
    inc = all(etag_time(s[i]) < etag_time(s[i + 1]) for s in seqs for i in range(len(s) - 1))
    tap.ok(inc, "upserts: each client's ETags strictly increasing")
    g = https[2].get_entity("blind", "p", "x")
    tap.ok(g.status == 200 and etag_of(g) == max(flat, key=etag_time),
           "upserts: the entity holds the latest write", (g.status, etag_of(g)))


def test_batch_visibility(tap, a, b, seconds=6.0):
    """Batches through A, reads through B: all or nothing."""
    ha, hb = h.Http(a), h.Http(b)
    ha.create_table("batches")
    rows = ["r%02d" % i for i in range(40)]
    stop = threading.Event()
    written, bad = [0], []

    def writer():
        v = 0
        while not stop.is_set():
            v += 1
            r = batch(ha, "batches", [("PUT", "p", rk, {"PartitionKey": "p", "RowKey": rk,
                                                         "v": v}) for rk in rows])
            if batch_ok(r):
                written[0] += 1
            else:
                bad.append(("batch", r.status, r.body[:300]))
                return
    t = threading.Thread(target=writer)
    t.start()
    reads, mixed = 0, []
    end = time.monotonic() + seconds
    while time.monotonic() < end and t.is_alive():
        got = query_all(hb, "batches", "PartitionKey eq 'p'")
        vs = {e["v"] for e in got}
        reads += 1
        if got and (len(got) != len(rows) or len(vs) != 1):
            mixed.append((len(got), sorted(vs)[:5]))
    stop.set()
    t.join()
    tap.diag("batch: %d batches written, %d reads" % (written[0], reads))
    tap.ok(not bad, "batch: every batch through A succeeded", bad[:3])
    tap.ok(written[0] > 3 and reads > 3, "batch: batches and reads overlapped")
    tap.ok(not mixed, "batch: B never saw part of a batch", mixed[:5])


def test_paging(tap, a, b):
    """A query started on A is finished on B."""
    ha, hb = h.Http(a), h.Http(b)
    ha.create_table("pages")
    want = []
    for pk in ("a", "b", "c"):
        r = batch(ha, "pages", [("PUT", pk, "r%02d" % i, {"PartitionKey": pk,
                                                         "RowKey": "r%02d" % i})
                                for i in range(10)])
        want += [(pk, "r%02d" % i) for i in range(10)]
    got, params, pages = [], "", 0
    while True:
        http = ha if pages % 2 == 0 else hb
        r = http.get("/pages()?$top=7" + params)
        pages += 1
        got += [(e["PartitionKey"], e["RowKey"]) for e in r.json()["value"]]
        npk, nrk = r.h("x-ms-continuation-NextPartitionKey"), r.h("x-ms-continuation-NextRowKey")
        if not npk or pages > 20:
            break
        params = "&NextPartitionKey=" + h.pct_encode(npk)
        if nrk:
            params += "&NextRowKey=" + h.pct_encode(nrk)
    tap.eq(got, want, "paging: pages alternating between A and B give every entity once, "
           "in order (%d pages)" % pages)


def load_writers(fes, table, stop, acked, errors, prefix, batches=True, timeout=30):
    """Threads writing unique rows (single inserts and 10-row batches) to
    fes until stop; acked gets ("one", pk, rk) and ("batch", pk, n) for
    every 2xx answer; errors gets (status, code, seconds) otherwise."""
    def worker(k):
        http = h.Http(fes[k % len(fes)])
        i = 0
        while not stop.is_set():
            i += 1
            t0 = time.monotonic()
            try:
                if batches and i % 3 == 0:
                    pk = "%s%d-b%d" % (prefix, k, i)
                    r = batch(http, table, [("PUT", pk, "r%d" % j, {"PartitionKey": pk,
                                                                    "RowKey": "r%d" % j})
                                            for j in range(10)])
                    if batch_ok(r):
                        acked.append(("batch", pk, 10))
                        continue
                    errors.append(batch_failure(r) + (time.monotonic() - t0,))
                    time.sleep(0.05)
                    continue
                else:
                    pk = "%s%d" % (prefix, k)
                    r = http.request("POST", "/" + table,
                                     body={"PartitionKey": pk, "RowKey": "r%d" % i},
                                     timeout=timeout)
                    if r.status == 201:
                        acked.append(("one", pk, "r%d" % i))
                        continue
                errors.append((r.status, r.error_code() if r.status >= 400 else None,
                               time.monotonic() - t0))
            except (OSError, h.ProtocolError) as e:
                errors.append(("io", str(e), time.monotonic() - t0))
            time.sleep(0.05)
    return [threading.Thread(target=worker, args=(k,)) for k in range(4)]


def check_acked(tap, http, table, acked, label):
    """Every acknowledged write is there; every batch whole or absent."""
    rows = query_all(http, table)
    have = {(e["PartitionKey"], e["RowKey"]) for e in rows}
    missing = [a for a in acked if a[0] == "one" and (a[1], a[2]) not in have]
    missing += [a for a in acked if a[0] == "batch" and
                sum(1 for j in range(10) if (a[1], "r%d" % j) in have) != 10]
    tap.ok(not missing, "%s: all %d acknowledged writes are present" % (label, len(acked)),
           missing[:5])
    per_batch = {}
    for pk, rk in have:
        if "-b" in pk:
            per_batch[pk] = per_batch.get(pk, 0) + 1
    partial = {k: v for k, v in per_batch.items() if v != 10}
    tap.ok(not partial, "%s: no partial batch (%d batches present)" % (label, len(per_batch)),
           partial)


def test_kill(tap, a, c):
    """kill -9 of a front end under write load."""
    h.Http(a).create_table("killed")
    stop = threading.Event()
    acked, errors = [], []
    threads = load_writers([c], "killed", stop, acked, errors, "k")
    for t in threads:
        t.start()
    time.sleep(2.0)
    c.proc.kill()
    c.proc.wait(5)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join()
    tap.ok(len(acked) > 10 and any(x[0] == "batch" for x in acked),
           "kill: writes and batches were acknowledged before the kill (%d)" % len(acked))
    check_acked(tap, h.Http(a), "killed", acked, "kill")


def metric(srv, name):
    """The value of metric name on srv's admin listener (0 when absent)."""
    target = types.SimpleNamespace(host=srv.host, port=admin_port(srv))
    req = ("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n"
           % target.port).encode()
    got, _ = h.raw_exchange(target, req, timeout=10)
    m = re.search(rb"^" + re.escape(name.encode()) + rb" (\d+)", got, re.M)
    return int(m.group(1)) if m else 0


def test_purge_adopted(tap, pg, a, b):
    """A front end killed during the purge of a deleted table: the others
    finish it."""
    d = frontend(pg)
    hd = h.Http(d)
    hd.create_table("doomed")
    n = 0
    for i in range(80):
        r = batch(hd, "doomed", [("PUT", "p%03d" % i, "r%03d" % j, {"PartitionKey": "p%03d" % i,
                                                                    "RowKey": "r%03d" % j})
                                 for j in range(100)])
        n += 100 if batch_ok(r) else 0
    before = metric(a, "tabled_purged_entities_total") + metric(b, "tabled_purged_entities_total")
    r = hd.delete_table("doomed")
    d.proc.kill()
    d.proc.wait(5)
    d.stop()
    tap.eq((n, r.status), (8000, 204), "purge: 8000 entities written and the table deleted "
           "on D, then D killed")
    # kp is a key's first 2,600 bytes (all of these short keys)
    rec = pg.sql("SELECT encode(kp, 'hex') FROM tabled_kv WHERE kp >= '\\x64'::bytea "
                 "AND kp < '\\x65'::bytea")
    tap.ok(rec, "purge: D died before finishing (its purge record is there)", rec)
    if not rec:
        return
    ids = [x[0][2:18] for x in rec]
    left = None
    end = time.monotonic() + 30
    while time.monotonic() < end:
        recs = pg.sql("SELECT count(*) FROM tabled_kv WHERE kp >= '\\x64'::bytea "
                      "AND kp < '\\x65'::bytea")[0][0]
        ents = sum(int(pg.sql("SELECT count(*) FROM tabled_kv WHERE substring(kp from 1 for 9) "
                              "= '\\x65%s'::bytea" % i)[0][0]) for i in ids)
        left = (int(recs), ents)
        if left == (0, 0):
            break
        time.sleep(0.5)
    tap.eq(left, (0, 0), "purge: A and B finished D's purge (no record, no entity left)")
    after = metric(a, "tabled_purged_entities_total") + metric(b, "tabled_purged_entities_total")
    tap.ok(after > before, "purge: the survivors removed entities (%d)" % (after - before))


def test_outage(tap, pg, a, b):
    """PostgreSQL stopped and restarted under load."""
    ha = h.Http(a)
    ha.create_table("outage")
    tap.eq(healthz(a)[0], 200, "outage: /healthz is 200 while the database answers")
    stop = threading.Event()
    acked, errors = [], []
    threads = load_writers([a, b], "outage", stop, acked, errors, "o", timeout=40)
    for t in threads:
        t.start()
    time.sleep(1.5)
    before = len(acked)
    pg.stop()
    down = wait_healthz(a, 503, 15)
    tap.ok(down and down[0] == 503 and b"unavailable" in down[1],
           "outage: /healthz answers 503 unavailable while the database is down", down)
    time.sleep(2.0)
    errs_down = list(errors)
    r = ha.get_entity("outage", "o0", "r1", timeout=40)
    tap.isin((r.status, r.error_code()), [(503, "ServerBusy"), (500, "OperationTimedOut")],
             "outage: a read while the database is down answers 503 ServerBusy (or 500 "
             "OperationTimedOut)")
    pg.start()
    up = wait_healthz(a, 200, 20)
    tap.eq(up and up[0], 200, "outage: /healthz is 200 again after the restart")
    upb = wait_healthz(b, 200, 20)
    tap.eq(upb and upb[0], 200, "outage: B's /healthz is 200 again too")
    n0 = len(acked)
    time.sleep(2.5)
    stop.set()
    for t in threads:
        t.join()
    tap.diag("outage: %d acked before, %d errors while down: %r"
             % (before, len(errs_down), sorted({(e[0], e[1]) for e in errs_down})))
    allowed = {(503, "ServerBusy"), (500, "OperationTimedOut")}
    odd = [e for e in errors if (e[0], e[1]) not in allowed]
    tap.ok(not odd, "outage: failed writes answer 503 ServerBusy or 500 OperationTimedOut",
           odd[:5])
    tap.ok(errs_down, "outage: writes failed while the database was down")
    slow = [e for e in errors if e[2] > 35]
    tap.ok(not slow, "outage: no request hung (every answer within 35 s)", slow[:5])
    tap.ok(len(acked) > n0, "outage: writes are acknowledged again after the restart "
           "(%d more)" % (len(acked) - n0))
    check_acked(tap, h.Http(b), "outage", acked, "outage")


def main():
    tap = h.Tap()
    if not has_postgres_backend():
        print("1..0 # SKIP tabled was configured without libpq (no postgres backend)")
        return 0
    bindir = pg_bindir()
    if not bindir:
        print("1..0 # SKIP PostgreSQL server binaries (initdb, postgres, pg_ctl) not installed")
        return 0
    pg = Postgres(bindir)
    fes = []
    h.watchdog(170, None, tap)
    try:
        pg.init()
        fes = [frontend(pg) for _ in range(3)]
        a, b, c = fes
        tap.run(test_catalogue, tap, a, b, c)
        tap.run(test_conditional, tap, fes)
        tap.run(test_upserts, tap, fes)
        tap.run(test_batch_visibility, tap, a, b)
        tap.run(test_paging, tap, a, b)
        tap.run(test_kill, tap, a, c)
        tap.run(test_purge_adopted, tap, pg, a, b)
        tap.run(test_outage, tap, pg, a, b)
        for s in (a, b):
            s.stop_and_check(tap)
    except h.ServerError as e:
        tap.ok(False, "setup", str(e) + "\n" + pg.log())
    finally:
        for s in fes:
            s.kill()
        pg.remove()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
