#!/usr/bin/python3
"""Integration test: the partition advisor (advisor/advisor.h) end to end.

Synthetic workloads driven through the Python SDK (azure-data-tables) each
produce one pattern of the service's scalability guidance, and GET /advisor
must report it naming the right table and partition:

  healthy    (default thresholds) hash-spread PartitionKeys, batched
             inserts, point reads, partition queries, 1,000 distinct
             partitions touched by single inserts: no findings, advisor
             memory fixed and under its cap, `tabled advise` exits 0.
  patterns   (lowered thresholds, --advisor NAME=VALUE) one table per
             pattern: hot partition, append-only, prepend, table scans, low
             query efficiency, oversized partition, a stream of single
             writes; the findings are in /metrics; `tabled advise` prints
             them and exits 1 for --fail-on warning, 0 for critical;
             DELETE /advisor forgets.
  throttled  --throttle with a tiny partition rate: the 503s give a
             critical finding; `tabled advise --fail-on critical` exits 1.
  cli        `tabled advise` exits 2 on a bad flag or an unreachable admin
             listener; a bad --advisor threshold stops the server (exit 2).
  dashboard  GET /dashboard is one HTML page that loads nothing from
             elsewhere (the browser test is test_dashboard.py).
"""
import http.client
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
    from azure.data.tables import TableServiceClient
    IMPORT_ERROR = None
except ImportError as e:  # reported as a failing check below
    IMPORT_ERROR = e

CLIENT_KW = dict(retry_total=0, connection_timeout=10, read_timeout=20)


admin_port = h.admin_port


def admin(srv, method, path):
    """(status, headers dict, body text) of one admin request."""
    c = http.client.HTTPConnection(srv.host, admin_port(srv), timeout=10)
    c.request(method, path)
    r = c.getresponse()
    body = r.read().decode("utf-8", "replace")
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def advisor(srv):
    st, _, body = admin(srv, "GET", "/advisor")
    if st != 200:
        raise AssertionError("GET /advisor answered %d: %s" % (st, body[:300]))
    return json.loads(body)


def advise(srv, *args):
    """Runs `tabled advise --admin URL ARGS`; returns (status, stdout, stderr)."""
    url = "http://%s:%d" % (srv.host, admin_port(srv))
    p = subprocess.run([h.tabled_path(), "advise", "--admin", url] + list(args),
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def findings(doc, kind, table, partition=None):
    return [f for f in doc["findings"] if f["kind"] == kind and f["table"] == table and
            (partition is None or f["partition"] == partition)]


def spread(i):
    """A hash-spread PartitionKey (the service's advice)."""
    return "%08x" % ((i * 2654435761) & 0xffffffff)


def service(srv):
    return TableServiceClient.from_connection_string(srv.conn_str(), **CLIENT_KW)


# --------------------------------------------------------------------------


def test_healthy(tap):
    srv = h.Server(args=["--admin-port", "0"]).start()
    try:
        svc = service(srv)
        t = svc.create_table("Healthy")
        parts = [spread(i) for i in range(40)]
        for p in parts:  # batched writes: 25 entities per partition
            t.submit_transaction([("create", {"PartitionKey": p, "RowKey": "r%03d" % r,
                                              "Qty": r}) for r in range(25)])
        for i in range(400):  # point reads over all partitions
            t.get_entity(parts[i % 40], "r%03d" % (i % 25))
        for p in parts:  # partition queries
            got = list(t.query_entities("PartitionKey eq @pk", parameters={"pk": p}))
            assert len(got) == 25
        # 1,000 more distinct partitions, one entity each (hash-spread)
        s = svc.create_table("Spread")
        for i in range(1000):
            s.create_entity({"PartitionKey": spread(100000 + i), "RowKey": "x"})
        doc = advisor(srv)
        tap.eq(doc["findings"], [], "healthy workload: no findings with the default thresholds")
        tap.eq(doc["counts"], {"info": 0, "warning": 0, "critical": 0}, "counts all zero")
        names = sorted(x["table"] for x in doc["tables"])
        tap.eq(names, ["Healthy", "Spread"], "both tables summarised")
        th = [x for x in doc["tables"] if x["table"] == "Healthy"][0]
        tap.eq(th["requests"]["get"], 400, "400 point reads counted")
        tap.eq(th["queries"]["partition"]["count"], 40, "40 partition queries counted")
        tap.eq(th["batches"]["count"], 40, "40 batches counted")
        tap.eq(th["batches"]["sizes"]["11-50"], 40, "batch sizes: 25 each")
        ts = [x for x in doc["tables"] if x["table"] == "Spread"][0]
        est = ts["partitions_estimate"]
        tap.ok(900 <= est <= 1100, "1,000 distinct partitions estimated within 10%% (%s)" % est)
        tap.eq(len(ts["partitions"]), 20, "20 busiest partitions listed, the rest summarised")
        tap.ok(ts["other_entities"] > 900, "the long tail summarised as other_entities")
        tap.ok(doc["memory_bytes"] <= doc["memory_cap_bytes"] <= 2 * 1024 * 1024,
               "advisor memory %d within its cap %d (under 2 MiB)"
               % (doc["memory_bytes"], doc["memory_cap_bytes"]))
        before = doc["memory_bytes"]
        for i in range(300):
            s.create_entity({"PartitionKey": spread(200000 + i), "RowKey": "x"})
        tap.eq(advisor(srv)["memory_bytes"], before, "more partitions: no more memory")
        rc, out, err = advise(srv, "--fail-on", "info")
        tap.eq(rc, 0, "tabled advise --fail-on info exits 0 on a healthy workload")
        tap.ok("0 findings" in out and "No findings" in out, "the report says so", out + err)
        st, _, metrics = admin(srv, "GET", "/metrics")
        tap.ok(st == 200 and re.search(
            r'^tabled_advisor_findings\{kind="hot-partition",severity="warning"\} 0$',
            metrics, re.M), "/metrics: tabled_advisor_findings gauges at 0")
    finally:
        srv.stop_and_check(tap)


PATTERN_ARGS = ["--admin-port", "0",
                "--advisor", "hot-min-entities=300",
                "--advisor", "append-min-creates=100",
                "--advisor", "append-min-intervals=1",
                "--advisor", "partition-entities=150",
                "--advisor", "batch-min-writes=50",
                "--advisor", "scan-min=3",
                "--advisor", "efficiency-min-examined=200"]


def test_patterns(tap):
    srv = h.Server(args=PATTERN_ARGS).start()
    try:
        svc = service(srv)
        # hot partition: reads concentrated on one PartitionKey
        t = svc.create_table("Hot")
        t.submit_transaction([("create", {"PartitionKey": "tenant-1", "RowKey": str(r)})
                              for r in range(10)])
        for i in range(40):
            t.create_entity({"PartitionKey": spread(i), "RowKey": "0"})
        for i in range(400):
            t.get_entity("tenant-1", str(i % 10))
            if i % 4 == 0:
                t.get_entity(spread(i % 40), "0")
        # append-only: PartitionKeys made from the time, always increasing
        t = svc.create_table("AppendLog")
        for i in range(120):
            t.create_entity({"PartitionKey": "2024-05-01T10:%04d" % i, "RowKey": "e"})
        # prepend: reverse ticks, always decreasing
        t = svc.create_table("Prepend")
        for i in range(120):
            t.create_entity({"PartitionKey": "%019d" % (9000000000 - i), "RowKey": "e"})
        # table scans: queries without a PartitionKey
        t = svc.create_table("Scans")
        for p in range(4):
            t.submit_transaction([("create", {"PartitionKey": spread(p), "RowKey": str(r),
                                              "Name": "n%d" % r}) for r in range(20)])
        for i in range(4):
            list(t.query_entities("Name eq 'n%d'" % i))
        # low efficiency: a partition query filtering on a property
        t = svc.create_table("Sparse")
        for p in ("a", "b", "c"):
            t.submit_transaction([("create", {"PartitionKey": p, "RowKey": "%03d" % r,
                                              "Value": r}) for r in range(80)])
        for i in range(3):
            got = list(t.query_entities("PartitionKey eq 'b' and Value eq 7"))
            assert len(got) == 1
        # oversized partition: 200 entities in one partition (> 150)
        t = svc.create_table("Big")
        for b in range(2):
            t.submit_transaction([("create", {"PartitionKey": "all", "RowKey": "%d-%d" % (b, r)})
                                  for r in range(100)])
        # a stream of single writes to one partition
        t = svc.create_table("Stream")
        for i in range(70):
            t.upsert_entity({"PartitionKey": "device-7", "RowKey": "reading-%d" % i, "V": i})

        doc = advisor(srv)
        diag = json.dumps(doc["findings"], indent=1)[:6000]

        def expect(kind, table, partition, severity, what):
            got = findings(doc, kind, table, partition)
            tap.ok(len(got) == 1 and got[0]["severity"] == severity, what, diag)
            return got[0] if got else None

        f = expect("hot-partition", "Hot", "tenant-1", "warning",
                   "hot partition: Hot/tenant-1 (warning)")
        if f:
            tap.ok(re.search(r"took \d+% of the table's traffic", f["summary"]) and
                   "2000 entities/s partition target" in f["summary"],
                   "evidence: share of the table and entities/s against the target", f["summary"])
            tap.ok("2,000 entities per second" in f["reason"], "reason: the partition target")
            tap.ok("hash bucket" in f["fix"], "fix: hash bucket prefix")
        expect("append-only", "AppendLog", "2024-05-01T10:0119", "warning",
               "append-only: AppendLog, last partition 2024-05-01T10:0119")
        expect("prepend", "Prepend", "%019d" % (9000000000 - 119), "warning",
               "prepend: Prepend, first partition named")
        f = expect("table-scan", "Scans", None, "warning", "table scans: Scans")
        if f:
            tap.ok("Name eq 'n3'" in f["summary"], "the scan's $filter is quoted", f["summary"])
        f = expect("low-query-efficiency", "Sparse", None, "warning",
                   "low query efficiency: Sparse")
        if f:
            tap.ok("PartitionKey eq 'b' and Value eq 7" in f["summary"] and
                   "240 entities to return 3" in f["summary"],
                   "examined vs returned, and the query", f["summary"])
        expect("oversized-partition", "Big", "all", "warning", "oversized partition: Big/all")
        expect("unbatched-writes", "Stream", "device-7", "info",
               "single writes that could be batches: Stream/device-7 (info)")
        for f in doc["findings"]:
            tap.ok(f["reason"] and f["fix"] and f["summary"],
                   "%s %s: evidence, reason and fix" % (f["kind"], f["table"]))
        tap.eq(findings(doc, "hot-partition", "Hot"), findings(doc, "hot-partition", "Hot",
                                                              "tenant-1"),
               "only tenant-1 is hot in Hot")
        tap.eq(findings(doc, "append-only", "Prepend") + findings(doc, "prepend", "AppendLog"),
               [], "no append/prepend confusion")
        shapes = {x["table"]: x["queries"] for x in doc["tables"]}
        tap.eq(shapes["Scans"]["scan"]["count"], 4, "query shapes: 4 scans on Scans")
        tap.eq(shapes["Sparse"]["partition"]["count"], 3, "query shapes: 3 partition on Sparse")
        tap.eq((shapes["Sparse"]["partition"]["examined"], shapes["Sparse"]["partition"]["returned"]),
               (240, 3), "examined 240, returned 3")

        st, _, metrics = admin(srv, "GET", "/metrics")
        series = dict(re.findall(r'^tabled_advisor_findings\{kind="([a-z-]+)",severity="([a-z]+)"'
                                 r'\} (\d+)$', metrics, re.M) and
                      [((k, sv), int(n)) for k, sv, n in re.findall(
                          r'^tabled_advisor_findings\{kind="([a-z-]+)",severity="([a-z]+)"\} (\d+)$',
                          metrics, re.M)])
        want = {}
        for f in doc["findings"]:
            want[(f["kind"], f["severity"])] = want.get((f["kind"], f["severity"]), 0) + 1
        tap.ok(len(series) == 8 * 3 and all(series[k] == want.get(k, 0) for k in series),
               "/metrics counts the findings by kind and severity", (series, want))
        rc, out, err = advise(srv)
        tap.eq(rc, 1, "tabled advise exits 1 on warnings (default --fail-on warning)")
        tap.ok("WARNING   hot-partition  devstoreaccount1/Hot  partition 'tenant-1'" in out and
               "Why: " in out and "Fix: " in out, "the report names the finding", out[:3000])
        rc, out, err = advise(srv, "--fail-on=critical")
        tap.eq(rc, 0, "--fail-on critical: exit 0 without critical findings")
        rc, out, err = advise(srv, "--fail-on", "never")
        tap.eq(rc, 0, "--fail-on never: exit 0")
        st, _, _ = admin(srv, "DELETE", "/advisor")
        tap.eq(st, 204, "DELETE /advisor answers 204")
        tap.eq(advisor(srv)["findings"], [], "after DELETE /advisor: nothing counted")
    finally:
        srv.stop_and_check(tap)


def test_seed_load(tap):
    """A seed script (sorted keys in batches, once, then reads) with the
    default limits: no append-only finding, `tabled advise` exits 0."""
    srv = h.Server(args=["--admin-port", "0"]).start()
    try:
        svc = service(srv)
        t = svc.create_table("Customers")
        n = 0
        for b in range(20):
            ops = []
            pk = "customer-%06d" % (b * 10)
            for r in range(100):
                if r % 10 == 0:
                    pk = "customer-%06d" % (b * 10 + r // 10)
                ops.append(("create", {"PartitionKey": pk, "RowKey": "%03d" % r}))
                n += 1
            # a batch holds one partition: one call per PartitionKey
            for p in sorted({o[1]["PartitionKey"] for o in ops}):
                t.submit_transaction([o for o in ops if o[1]["PartitionKey"] == p])
        for i in range(300):  # then the tests read it
            q = (i * 7) % 200  # partition q holds rows (q % 10) * 10 + 0..9
            t.get_entity("customer-%06d" % q, "%03d" % ((q % 10) * 10 + i % 10))
        doc = advisor(srv)
        ko = [x for x in doc["tables"] if x["table"] == "Customers"][0]["key_order"]
        tap.eq(ko["creates"], n, "the seed's %d creates are counted" % n)
        tap.ok(ko["new_max"] >= 10, "the seed moved the largest key (%d times)" % ko["new_max"])
        tap.ok(findings(doc, "append-only", "Customers") == [],
               "a sorted seed load, once, is not reported as append-only",
               "key_order: %r" % ko)
        rc, out, err = advise(srv)
        tap.ok(rc == 0, "tabled advise exits 0 after a seed script", out + err)
    finally:
        srv.stop_and_check(tap)


def test_throttled(tap):
    srv = h.Server(args=["--admin-port", "0", "--throttle", "--throttle-partition-rate", "1",
                         "--throttle-partition-burst", "5"]).start()
    try:
        svc = service(srv)
        t = svc.create_table("Busy")
        t.create_entity({"PartitionKey": "one", "RowKey": "r"})
        busy = 0
        for _ in range(30):  # burst 5 + 1/s: most of a quick run is refused
            try:
                t.get_entity("one", "r")
            except HttpResponseError as e:
                if e.status_code == 503:
                    busy += 1
        tap.ok(busy >= 5, "the partition bucket refused requests (%d 503s)" % busy)
        doc = advisor(srv)
        got = findings(doc, "throttled", "Busy", "one")
        tap.ok(len(got) == 1 and got[0]["severity"] == "critical" and
               ("refused %d times" % busy) in got[0]["summary"],
               "throttled: Busy/one critical with the 503 count", doc["findings"])
        rc, out, _ = advise(srv, "--fail-on", "critical")
        tap.eq(rc, 1, "tabled advise --fail-on critical exits 1")
        tap.ok("CRITICAL  throttled  devstoreaccount1/Busy  partition 'one'" in out,
               "the report shows the critical finding", out[:2000])
    finally:
        srv.stop_and_check(tap)


def test_cli(tap):
    p = subprocess.run([h.tabled_path(), "advise", "--fail-on", "sometimes"],
                       capture_output=True, text=True, timeout=30)
    tap.eq(p.returncode, 2, "advise: bad --fail-on exits 2")
    p = subprocess.run([h.tabled_path(), "advise", "--admin", "http://127.0.0.1:1"],
                       capture_output=True, text=True, timeout=30)
    tap.ok(p.returncode == 2 and "nothing answers" in p.stderr and
           "--admin-port" in p.stderr,
           "advise: unreachable admin listener exits 2", p.stderr)
    p = subprocess.run([h.tabled_path(), "advise", "--bogus"], capture_output=True, text=True,
                       timeout=30)
    tap.eq(p.returncode, 2, "advise: unknown flag exits 2")
    p = subprocess.run([h.tabled_path(), "--port", "0", "--backend", "memory",
                        "--advisor", "hot-share=7"], capture_output=True, text=True, timeout=30)
    tap.ok(p.returncode == 2 and "hot-share" in p.stderr,
           "a bad --advisor threshold stops the server with status 2", p.stderr)
    # --admin-token (and $TABLED_ADMIN_TOKEN) travel as a bearer token: a
    # one-shot listener records the request and answers an empty report.
    for args, env in ((["--admin-token", "tok-from-flag-0123"], {}),
                      ([], {"TABLED_ADMIN_TOKEN": "tok-from-env-45678"})):
        want = args[1] if args else env["TABLED_ADMIN_TOKEN"]
        seen = one_shot_advise(args, env)
        tap.ok(seen[0] == 0 and ("authorization: bearer " + want) in seen[1].lower(),
               "advise sends the admin token " + ("from the flag" if args else "from the env"),
               seen)


def one_shot_advise(args, env):
    """Runs `tabled advise` against a listener that answers one request with
    an empty report; returns (exit status, the request it received)."""
    import socket
    import threading
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    got = []

    def serve():
        c, _ = ls.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(4096)
            if not chunk:
                break
            data += chunk
        got.append(data.decode("latin-1"))
        body = b'{"findings":[],"tables":[]}'
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        c.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    url = "http://127.0.0.1:%d" % ls.getsockname()[1]
    p = subprocess.run([h.tabled_path(), "advise", "--admin", url] + args,
                       capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, **env))
    t.join(10)
    ls.close()
    return (p.returncode, got[0] if got else "", p.stderr)


def test_dashboard(tap):
    srv = h.Server(args=["--admin-port", "0"]).start()
    try:
        st, hdrs, body = admin(srv, "GET", "/dashboard")
        tap.eq(st, 200, "GET /dashboard answers 200")
        tap.ok(hdrs.get("content-type", "").startswith("text/html"), "as HTML")
        tap.ok("<script>" in body and "fetch(\"/advisor\"" in body, "the page polls /advisor")
        ext = re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", body) + \
            re.findall(r"@import|url\(\s*['\"]?https?:", body)
        tap.eq(ext, [], "nothing loaded from elsewhere (no external scripts, styles, fonts)")
        st, hdrs, _ = admin(srv, "POST", "/dashboard")
        tap.eq(st, 405, "POST /dashboard: 405")
        st, _, body = admin(srv, "PUT", "/advisor")
        tap.eq(st, 405, "PUT /advisor: 405")
    finally:
        srv.stop_and_check(tap)


def main():
    tap = h.Tap()
    if IMPORT_ERROR is not None:
        tap.ok(False, "import azure.data.tables", repr(IMPORT_ERROR))
        tap.done()
    h.watchdog(300, tap=tap)
    for fn in (test_healthy, test_patterns, test_seed_load, test_throttled, test_cli, test_dashboard):
        tap.run(fn, tap)
    tap.done()


if __name__ == "__main__":
    main()
