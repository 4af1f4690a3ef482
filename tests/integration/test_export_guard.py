#!/usr/bin/python3
"""Integration test: GET /export of a running server on the memory and
flat file backends, read slowly, with writes meanwhile; one export at a
time; no export for web pages of other origins.

For each backend a server with an admin listener and $TMPDIR set to a
private directory; a table "Snap" of N entities of 1 KiB (V = their
number). An export is started and its reader pauses after the first
64 KiB (the server then stops making the body: its output is full).
While it waits:

  tmpdir      the server has a deleted file open in the private $TMPDIR
              (the snapshot's temporary file; /proc/PID/fd);
  one         a second GET /export is 503 with Retry-After and a message
              saying another export runs;
  writes      entities spread over the table are updated (V = -1),
              others deleted, new ones inserted, and a $batch updates the
              first and the last entity together; all acknowledged;
  point GET   a point GET is answered (its time is reported; the bound
              asserted is a generous liveness bound, not a speed).

The reader then takes the rest slowly. The file holds the table exactly
as it was when the export started (every entity with its own V, the
deleted ones included, none of the new ones). A later export is 200 and
shows the writes.

Cross-site: requests with Sec-Fetch-Site cross-site or same-site, or an
Origin other than the listener's own (another host, another port, "null"),
are 403 with a message and start no export (no "export started" log line,
the body is no export); Sec-Fetch-Site same-origin or none, or an Origin
equal to http://HOST of the request, are answered as usual. A PUT /faults
with a foreign Origin changes nothing. Prints TAP."""
import http.client
import json
import os
import re
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.data.tables import TableServiceClient, UpdateMode
    IMPORT_ERROR = None
except ImportError as e:
    IMPORT_ERROR = e

KW = dict(retry_total=0, connection_timeout=10, read_timeout=60)
N = 10000


admin_port = h.admin_port


def table(srv):
    return TableServiceClient.from_connection_string(srv.conn_str(), **KW) \
        .get_table_client("Snap")


def load(srv):
    svc = TableServiceClient.from_connection_string(srv.conn_str(), **KW)
    t = svc.create_table("Snap")
    pad = "f" * 1000
    for i in range(0, N, 100):
        t.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": "r%06d" % j,
                                          "V": j, "F": pad}) for j in range(i, i + 100)])
    return t


def admin_get(port, path, headers=None, host=None):
    """(status, headers dict lower-case, body bytes) of one admin request."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.putrequest("GET", path, skip_host=True)
    c.putheader("Host", host or "127.0.0.1:%d" % port)
    for k, v in (headers or {}).items():
        c.putheader(k, v)
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def tmp_files(pid, tmpdir):
    """The deleted files under tmpdir that process pid has open."""
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if t.startswith(tmpdir + "/") and t.endswith("(deleted)"):
            out.append(t)
    return out


def started(srv):
    return srv.stderr_text().count("admin: export started")


def snap_entities(lines):
    """{RowKey: V} of table Snap in the export's lines."""
    got = {}
    for line in lines:
        o = json.loads(line)
        if o.get("table") == "Snap" and "entity" in o:
            got[o["entity"]["RowKey"]] = o["entity"]["V"]
    return got


def run_backend(tap, backend, tmp):
    tmpdir = os.path.join(tmp, "tmp-" + backend)
    os.mkdir(tmpdir)
    args = ["--admin-port", "0", "--log-level", "info"]
    if backend != "memory":
        args += ["--data", os.path.join(tmp, "data-" + backend)]
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = tmpdir
    try:
        srv = h.Server(args=args, backend=backend).start()
    finally:
        if old is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = old
    try:
        port = admin_port(srv)
        t = load(srv)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", "/export")
        r = c.getresponse()
        tap.eq(r.status, 200, "%s: GET /export is 200" % backend)
        first = r.read(65536)

        files = tmp_files(srv.proc.pid, tmpdir)
        tap.ok(len(files) == 1, "%s: the export's temporary file is under $TMPDIR" % backend,
               "open deleted files there: %r" % files)

        st, hd, body = admin_get(port, "/export")
        tap.eq(st, 503, "%s: a second GET /export while one runs is 503" % backend)
        tap.ok(re.fullmatch(r"[0-9]+", hd.get("retry-after", "")),
               "%s: with Retry-After in seconds" % backend, hd)
        tap.ok(b"another export is running" in body and body.startswith(b'{"error":'),
               "%s: and a JSON message saying why" % backend, body[:300])

        # writes after the export began, all acknowledged
        for i in range(7, N, 211):
            t.upsert_entity({"PartitionKey": "p", "RowKey": "r%06d" % i, "V": -1},
                            mode=UpdateMode.REPLACE)
        deleted = list(range(11, N, 173))
        for i in deleted:
            t.delete_entity("p", "r%06d" % i)
        for i in range(0, N, 1000):
            t.create_entity({"PartitionKey": "p", "RowKey": "r%06d-new" % i, "V": -2})
        t.submit_transaction([
            ("upsert", {"PartitionKey": "p", "RowKey": "r%06d" % 0, "V": -3},
             {"mode": UpdateMode.REPLACE}),
            ("upsert", {"PartitionKey": "p", "RowKey": "r%06d" % (N - 1), "V": -3},
             {"mode": UpdateMode.REPLACE})])
        t0 = time.monotonic()
        e = t.get_entity("p", "r%06d" % (N // 2 + 3))
        dt = time.monotonic() - t0
        tap.diag("%s: a point GET during the export took %.3f s" % (backend, dt))
        tap.ok(e["V"] == N // 2 + 3 and dt < 30,
               "%s: a point GET during the export is answered" % backend, "%.3f s" % dt)

        parts, n = [first], 0
        while True:
            b = r.read(32768)
            if not b:
                break
            parts.append(b)
            n += 1
            if n % 8 == 0:
                time.sleep(0.002)
        c.close()
        lines = b"".join(parts).decode("utf-8").splitlines()
        got = snap_entities(lines)
        want = {"r%06d" % i: i for i in range(N)}
        wrong = [k for k in want if got.get(k) != want[k]]
        extra = [k for k in got if k not in want]
        tap.ok(not wrong and not extra,
               "%s: the slow export is the table as of its start exactly (%d entities)"
               % (backend, len(got)),
               "wrong %s, extra %s" % (wrong[:5], extra[:5]))
        tap.ok(all(got.get("r%06d" % i) == i for i in deleted),
               "%s: entities deleted during the export are in it" % backend)

        st, hd, body = admin_get(port, "/export")
        after = snap_entities(body.decode("utf-8").splitlines())
        tap.ok(st == 200 and after.get("r%06d" % 7) == -1 and "r%06d" % 11 not in after and
               after.get("r000000") == -3 and after.get("r%06d" % (N - 1)) == -3,
               "%s: once it ended, another export is 200 and shows the writes" % backend,
               "status %d" % st)
        tap.eq(tmp_files(srv.proc.pid, tmpdir), [],
               "%s: no temporary file is left open after the exports" % backend)
        if backend == "memory":
            cross_site(tap, srv, port)
    finally:
        srv.stop_and_check(tap)


def cross_site(tap, srv, port):
    n0 = started(srv)
    own = "http://127.0.0.1:%d" % port
    for what, hdrs in (("Sec-Fetch-Site: cross-site", {"Sec-Fetch-Site": "cross-site"}),
                       ("Sec-Fetch-Site: same-site", {"Sec-Fetch-Site": "same-site"}),
                       ("a foreign Origin", {"Origin": "http://evil.example"}),
                       ("the Origin of another port", {"Origin": "http://127.0.0.1:%d"
                                                       % (port + 1)}),
                       ("Origin: null", {"Origin": "null"}),
                       ("an https Origin", {"Origin": "https://127.0.0.1:%d" % port}),
                       ("a same-origin Sec-Fetch-Site with a foreign Origin",
                        {"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"})):
        st, hd, body = admin_get(port, "/export", hdrs)
        tap.ok(st == 403 and b"other origins" in body and b"tabled-export" not in body,
               "GET /export with %s is 403 with a message" % what,
               "%d %r" % (st, body[:200]))
    time.sleep(0.2)
    tap.eq(started(srv), n0, "no export was started by a refused request")
    for what, hdrs, host in (("Sec-Fetch-Site: same-origin", {"Sec-Fetch-Site": "same-origin"},
                              None),
                             ("Sec-Fetch-Site: none", {"Sec-Fetch-Site": "none"}, None),
                             ("its own Origin", {"Origin": own}, None),
                             ("its own Origin in capitals, Host localhost",
                              {"Origin": "HTTP://LOCALHOST:%d" % port}, "localhost:%d" % port),
                             ("neither header", {}, None)):
        st, hd, body = admin_get(port, "/export", hdrs, host)
        tap.ok(st == 200 and body.startswith(b'{"tabled-export":1'),
               "GET /export with %s is 200" % what, "%d %r" % (st, body[:200]))
    st, _, body = admin_get(port, "/dashboard", {"Sec-Fetch-Site": "same-origin"})
    tap.eq(st, 200, "the dashboard page, same-origin, is served")
    st, _, body = admin_get(port, "/advisor", {"Sec-Fetch-Site": "same-origin"})
    tap.eq(st, 200, "the dashboard's own fetch of /advisor is answered")
    # a change from another origin's page
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("PUT", "/faults/x", body='{"busy":1}',
              headers={"Content-Type": "application/json", "Origin": "http://evil.example",
                       "Sec-Fetch-Site": "cross-site"})
    r = c.getresponse()
    r.read()
    c.close()
    tap.eq(r.status, 403, "PUT /faults/x from another origin's page is 403")
    st, _, body = admin_get(port, "/faults")
    tap.ok(st == 200 and json.loads(body)["rules"] == [], "and added no rule", body[:200])


def main():
    tap = h.Tap()
    h.watchdog(400, tap=tap)
    if IMPORT_ERROR:
        tap.ok(False, "azure-data-tables importable", str(IMPORT_ERROR))
        tap.done()
    tmp = tempfile.mkdtemp(prefix="tabled-export-guard-")
    try:
        for backend in ("memory", "flatfile"):
            tap.run(run_backend, tap, backend, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
