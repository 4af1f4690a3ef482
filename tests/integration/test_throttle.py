#!/usr/bin/python3
"""Integration test: throttling, fault injection, the admin listener and
its metrics (doc/protocol.md, Throttling errors; Throttling).

Servers run with tiny rates so a handful of requests empties a bucket; every
check counts requests, never durations, except that an injected delay must
last at least as long as asked.  Allowed successes are computed from the
elapsed time (burst + rate * elapsed), so a slow machine cannot fail them.

  throttle     --throttle, partition 0.5/s burst 5: a burst into one
               partition gets exactly the expected 503s with the service's
               body, other partitions are served, batches cost one token per
               entity (and fail whole with a top-level 503), a query pays for
               the entities it returns, no Retry-After; the 503 insert wrote
               nothing; metrics agree with what the client saw.
  account      account bucket 0.5/s burst 4 with Retry-After: 3 (extension).
  faults       rules set through the admin listener: the Python SDK's retry
               policy recovers from injected 503s and 500s and the write
               lands once; a timed-out write is either not applied (default)
               or applied (timeout_applies); resets send nothing; latency
               delays the answer without blocking other connections; a
               partition rule finds an insert's PartitionKey in its body.
  config       a [fault NAME] section of a config file.
Every /metrics text is checked by a strict Prometheus text-format parser.
"""
import http.client
import json
import math
import os
import re
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core.exceptions import HttpResponseError, ResourceExistsError
    from azure.data.tables import TableServiceClient, UpdateMode
    IMPORT_ERROR = None
except ImportError as e:  # reported as a failing check below
    IMPORT_ERROR = e

MINIMAL_CT = h.JSON_CT % "minimalmetadata"
NOMETA_CT = h.JSON_CT % "nometadata"
MSG_PARTITION = "The server is busy."
MSG_ACCOUNT = "Operations per second is over the account limit."
MSG_BUSY = "The server is currently unable to receive requests. Please retry your request."
MSG_TIMEOUT = "The operation could not be completed within the permitted time."


# --------------------------------------------------------------------------
# A strict parser of the Prometheus text exposition format (0.0.4)

NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def _parse_value(text):
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    if not re.match(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$", text):
        raise ValueError("bad sample value %r" % text)
    return float(text)


def _parse_labels(s, i, line):
    """Parses {a="b",...} starting at s[i] == '{'; returns (dict, next i)."""
    labels = {}
    i += 1
    while True:
        if i < len(s) and s[i] == "}":
            return labels, i + 1
        m = re.match(r"[a-zA-Z_][a-zA-Z0-9_]*", s[i:])
        if not m:
            raise ValueError("bad label name in %r" % line)
        name = m.group(0)
        i += len(name)
        if s[i:i + 2] != '="':
            raise ValueError("expected =\" after label %s in %r" % (name, line))
        i += 2
        val = []
        while True:
            if i >= len(s):
                raise ValueError("unterminated label value in %r" % line)
            c = s[i]
            if c == "\\":
                nxt = s[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise ValueError("bad escape in label value of %r" % line)
                val.append("\n" if nxt == "n" else nxt)
                i += 2
                continue
            if c == '"':
                i += 1
                break
            if c == "\n":
                raise ValueError("newline in label value")
            val.append(c)
            i += 1
        if name in labels:
            raise ValueError("duplicate label %s in %r" % (name, line))
        labels[name] = "".join(val)
        if i < len(s) and s[i] == ",":
            i += 1
            continue
        if i < len(s) and s[i] == "}":
            return labels, i + 1
        raise ValueError("expected , or } in %r" % line)


def parse_prometheus(text):
    """Returns {family: {"type", "help", "samples": [(name, labels, value)]}};
    raises ValueError on anything the format does not allow."""
    if not text.endswith("\n"):
        raise ValueError("exposition does not end with a newline")
    fams = {}
    order = []          # families in order of their first sample
    seen_series = set()
    current = None

    def family_of(name):
        if name in fams and fams[name]["type"] not in ("histogram", "summary"):
            return name
        for suf in ("_bucket", "_sum", "_count"):
            if name.endswith(suf):
                base = name[:-len(suf)]
                if base in fams and fams[base]["type"] == "histogram":
                    return base
        if name in fams:
            return name
        return None

    for line in text.split("\n")[:-1]:
        if line == "":
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME_RE.match(name):
                    raise ValueError("bad metric name in %r" % line)
                f = fams.setdefault(name, {"type": None, "help": None, "samples": []})
                if parts[1] == "TYPE":
                    if len(parts) != 4 or parts[3] not in TYPES:
                        raise ValueError("bad TYPE line %r" % line)
                    if f["type"] is not None:
                        raise ValueError("second TYPE for %s" % name)
                    if f["samples"]:
                        raise ValueError("TYPE after samples of %s" % name)
                    f["type"] = parts[3]
                else:
                    if f["help"] is not None:
                        raise ValueError("second HELP for %s" % name)
                    doc = parts[3] if len(parts) == 4 else ""
                    if "\\" in re.sub(r"\\[\\n]", "", doc):
                        raise ValueError("bad escape in HELP %r" % line)
                    f["help"] = doc
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)", line)
        if not m:
            raise ValueError("bad sample line %r" % line)
        name = m.group(1)
        i = len(name)
        labels = {}
        if i < len(line) and line[i] == "{":
            labels, i = _parse_labels(line, i, line)
        rest = line[i:]
        if not rest.startswith(" "):
            raise ValueError("expected a space before the value in %r" % line)
        fields = rest[1:].split(" ")
        if len(fields) not in (1, 2):
            raise ValueError("bad value/timestamp in %r" % line)
        value = _parse_value(fields[0])
        if len(fields) == 2 and not re.match(r"^-?\d+$", fields[1]):
            raise ValueError("bad timestamp in %r" % line)
        fam = family_of(name)
        if fam is None:
            fam = name
            fams[name] = {"type": "untyped", "help": None, "samples": []}
        f = fams[fam]
        if f["type"] is None:
            f["type"] = "untyped"
        if current != fam:
            if fam in order:
                raise ValueError("samples of %s are not contiguous" % fam)
            order.append(fam)
            current = fam
        key = (name, tuple(sorted(labels.items())))
        if key in seen_series:
            raise ValueError("duplicate series %r" % (key,))
        seen_series.add(key)
        if f["type"] == "histogram":
            if name == fam:
                raise ValueError("histogram %s has a bare sample" % fam)
            if name.endswith("_bucket") and "le" not in labels:
                raise ValueError("bucket without le in %r" % line)
        if f["type"] == "counter" and not value >= 0:
            raise ValueError("negative counter in %r" % line)
        f["samples"].append((name, labels, value))
    for fam, f in fams.items():
        if f["type"] == "histogram":
            _check_histogram(fam, f["samples"])
    return fams


def _check_histogram(fam, samples):
    groups = {}
    for name, labels, value in samples:
        rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        g = groups.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if name == fam + "_bucket":
            g["buckets"].append((_parse_value(labels["le"]), value))
        elif name == fam + "_sum":
            g["sum"] = value
        elif name == fam + "_count":
            g["count"] = value
    for rest, g in groups.items():
        b = g["buckets"]
        if not b or b[-1][0] != math.inf:
            raise ValueError("%s%r: no +Inf bucket last" % (fam, rest))
        for (le1, v1), (le2, v2) in zip(b, b[1:]):
            if not le1 < le2:
                raise ValueError("%s%r: bucket bounds not increasing" % (fam, rest))
            if v2 < v1:
                raise ValueError("%s%r: buckets not cumulative" % (fam, rest))
        if g["count"] is None or g["sum"] is None:
            raise ValueError("%s%r: _sum or _count missing" % (fam, rest))
        if g["count"] != b[-1][1]:
            raise ValueError("%s%r: _count differs from the +Inf bucket" % (fam, rest))


def sample(fams, name, **labels):
    """Value of the series name{labels} (0.0 when absent)."""
    for fam in fams.values():
        for n, l, v in fam["samples"]:
            if n == name and l == labels:
                return v
    return 0.0


def check_parser_rejects(tap):
    """The test parser is strict: it refuses what the format forbids."""
    bad = [
        "x 1",                                              # no final newline
        "# TYPE x counter\n# TYPE x counter\nx 1\n",        # two TYPEs
        "x 1\n# TYPE x counter\n",                          # TYPE after samples (untyped x)
        "# TYPE x counter\nx{a=\"1\"} 1\nx{a=\"1\"} 2\n",  # duplicate series
        "# TYPE x counter\nx{a=\"\\q\"} 1\n",               # bad escape
        "# TYPE x counter\nx -1\n",                         # negative counter
        "# TYPE x gauge\nx 1\n# TYPE y gauge\ny 1\nx{b=\"c\"} 2\n",   # not contiguous
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",   # no +Inf
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",  # count != +Inf
        "# TYPE x gauge\nx 1 2 3\n",
        "# TYPE x gauge\nx{a=\"1\" } 1\n",
        "# TYPE x gauge\n1x 1\n",
        "# TYPE x gauge\nx abc\n",
    ]
    rejected = 0
    for text in bad:
        try:
            parse_prometheus(text)
        except ValueError:
            rejected += 1
    tap.eq(rejected, len(bad), "the strict exposition parser rejects every malformed sample")
    good = ("# HELP h a \\\\ b\n# TYPE h histogram\nh_bucket{a=\"x\\\"y\",le=\"0.5\"} 1\n"
            "h_bucket{a=\"x\\\"y\",le=\"+Inf\"} 2\nh_sum{a=\"x\\\"y\"} 1.5\n"
            "h_count{a=\"x\\\"y\"} 2\n")
    fams = parse_prometheus(good)
    tap.eq(sample(fams, "h_count", a='x"y'), 2.0, "and reads a valid histogram")


# --------------------------------------------------------------------------
# helpers


def admin_port(srv, timeout=3.0):
    """The admin port from the 'Admin endpoint:' banner line."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for line in list(srv.stdout_lines):
            m = re.search(r"Admin endpoint:\s+http://[^:]+:(\d+)/metrics", line)
            if m:
                return int(m.group(1))
        time.sleep(0.05)
    raise h.ServerError("no Admin endpoint line: %r" % srv.stdout_lines)


class Admin:
    def __init__(self, srv):
        self.host = srv.host
        self.port = admin_port(srv)

    def call(self, method, path, body=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=10)
        data = None
        headers = {}
        if body is not None:
            data = json.dumps(body).encode() if not isinstance(body, (bytes, str)) else body
            headers["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        out = (r.status, dict(r.getheaders()), r.read())
        c.close()
        return out

    def metrics(self, tap, what):
        status, headers, body = self.call("GET", "/metrics")
        tap.eq(status, 200, "%s: GET /metrics" % what)
        try:
            fams = parse_prometheus(body.decode("utf-8"))
            tap.ok(True, "%s: /metrics parses as Prometheus text format" % what)
        except ValueError as e:
            tap.ok(False, "%s: /metrics parses as Prometheus text format" % what,
                   "%s\n%s" % (e, body.decode("utf-8", "replace")[:3000]))
            fams = {}
        return fams

    def put_rule(self, name, rule):
        return self.call("PUT", "/faults/" + name, rule)


def check_busy_body(tap, r, message, what, ct=MINIMAL_CT):
    """A 503 ServerBusy with the service's exact JSON body."""
    tap.eq(r.status, 503, "%s: status 503" % what)
    tap.eq(r.h("Content-Type"), ct, "%s: Content-Type of the negotiated level" % what)
    rid = r.h("x-ms-request-id")
    body = r.body.decode("utf-8", "replace")
    m = re.match(r'^\{"odata\.error":\{"code":"ServerBusy","message":\{"lang":"en-US",'
                 r'"value":"(.*)\\nRequestId:([0-9a-f-]{36})\\nTime:'
                 r'(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z)"\}\}\}$', body)
    tap.ok(m is not None, "%s: exact ServerBusy JSON body" % what, body)
    if m:
        tap.eq(m.group(1), message, "%s: message" % what)
        tap.eq(m.group(2), rid, "%s: RequestId is x-ms-request-id" % what)
    tap.ok(not r.has("Retry-After"), "%s: no Retry-After" % what)
    tap.ok(not r.has("x-ms-error-code"), "%s: no x-ms-error-code on a JSON error" % what)


def batch_body(table, pk, rks, base):
    """A changeset of inserts (boundary text, body)."""
    b, cs = "batch_0001", "changeset_0001"
    parts = []
    for rk in rks:
        ent = json.dumps({"PartitionKey": pk, "RowKey": rk, "v": 1})
        parts.append("--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: "
                     "binary\r\n\r\nPOST %s/%s HTTP/1.1\r\nContent-Type: application/json\r\n"
                     "Accept: application/json;odata=minimalmetadata\r\nPrefer: "
                     "return-no-content\r\nDataServiceVersion: 3.0;\r\n\r\n%s\r\n"
                     % (cs, base, table, ent))
    body = ("--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n" % (b, cs)
            + "".join(parts) + "--%s--\r\n--%s--\r\n" % (cs, b))
    return "multipart/mixed; boundary=%s" % b, body


def send_batch(http, table, pk, rks, srv):
    ct, body = batch_body(table, pk, rks, srv.base)
    return http.request("POST", "/$batch", body=body, content_type=ct)


def count_partition(http, table, pk):
    """Entities of partition pk, read with an unrestricted query (which only
    the account bucket checks up front)."""
    r = http.get("/%s()?$select=PartitionKey" % table)
    if r.status != 200:
        return None
    return sum(1 for e in r.json()["value"] if e["PartitionKey"] == pk)


# --------------------------------------------------------------------------
# throttling


def test_partition_throttle(tap):
    rate, burst = 0.5, 5
    srv = h.Server(args=["--throttle", "--throttle-partition-rate", str(rate),
                         "--throttle-partition-burst", str(burst),
                         "--throttle-account-rate", "1000", "--throttle-account-burst", "1000",
                         "--admin-port", "0"]).start()
    try:
        adm = Admin(srv)
        http = h.Http(srv)
        tap.eq(http.create_table("hot").status, 201, "create table hot")
        tap.ok(any(l.startswith("Throttling:") for l in srv.stdout_lines),
               "the banner says throttling is on", srv.stdout_lines)
        seen_503 = 0

        # 1. a burst of 12 inserts into one partition over one connection
        statuses = []
        t0 = time.monotonic()
        with http.connect() as conn:
            for i in range(12):
                r = conn.request("POST", "/hot", body={"PartitionKey": "hot", "RowKey": "r%02d" % i},
                                 headers={"Prefer": "return-no-content"})
                statuses.append(r.status)
                if r.status == 503 and statuses.count(503) == 1:
                    check_busy_body(tap, r, MSG_PARTITION, "partition burst")
        elapsed = time.monotonic() - t0
        ok = statuses.count(204)
        allowed = burst + int(elapsed * rate)
        tap.ok(burst <= ok <= allowed, "the burst admits %d inserts (burst %d, at most %d after "
               "%.2f s)" % (ok, burst, allowed, elapsed), statuses)
        tap.eq(statuses[:burst], [204] * burst, "the first %d inserts succeed" % burst)
        tap.ok(statuses.count(503) == 12 - ok, "every other insert gets 503", statuses)
        seen_503 += statuses.count(503)

        # 2. other partitions are served meanwhile
        other = [http.insert("hot", {"PartitionKey": "cold%d" % i, "RowKey": "r"},
                             headers={"Prefer": "return-no-content"}).status for i in range(4)]
        tap.eq(other, [204] * 4, "other partitions of the same table are served")
        r = http.request("POST", "/hot", body={"RowKey": "x", "PartitionKey": "hot"})
        tap.eq(r.status, 503, "an insert naming its PartitionKey after RowKey is charged too")
        seen_503 += r.status == 503
        r = http.get_entity("hot", "hot", "r00")
        tap.eq(r.status, 503, "a point read of the throttled partition is refused too")
        seen_503 += r.status == 503
        n = count_partition(http, "hot", "hot")
        tap.eq(n, ok, "refused inserts wrote nothing (%d entities in the partition)" % ok)

        # 3. batches cost one token per entity
        tap.eq(http.create_table("bat").status, 201, "create table bat")
        r1 = send_batch(http, "bat", "b", ["1", "2", "3"], srv)
        tap.eq(r1.status, 202, "a batch of 3 into a full bucket of 5 is accepted")
        r2 = send_batch(http, "bat", "b", ["4", "5", "6"], srv)
        tap.eq(r2.status, 503, "a second batch of 3 (2 tokens left) gets a top-level 503, not 202")
        if r2.status == 503:
            check_busy_body(tap, r2, MSG_PARTITION, "throttled batch")
            seen_503 += 1
        r3 = send_batch(http, "bat", "b", ["7", "8"], srv)
        tap.eq(r3.status, 202, "a batch of 2 still fits")
        tap.eq(count_partition(http, "bat", "b"), 5,
               "the refused batch applied nothing (5 entities)")
        r4 = send_batch(http, "bat", "big", ["%d" % i for i in range(7)], srv)
        tap.eq(r4.status, 202, "a batch of 7 is accepted by a full bucket of 5 (cost above burst)")
        r5 = http.insert("bat", {"PartitionKey": "big", "RowKey": "after"})
        tap.eq(r5.status, 503, "and leaves that partition in deficit")
        seen_503 += r5.status == 503

        # 4. a query pays for the entities it returns
        tap.eq(http.create_table("qtab").status, 201, "create table qtab")
        for i in range(4):
            http.insert("qtab", {"PartitionKey": "q", "RowKey": "r%d" % i},
                        headers={"Prefer": "return-no-content"})
        flt = "?$filter=PartitionKey%20eq%20'q'"
        rq = http.get("/qtab()" + flt)
        tap.eq(rq.status, 200, "a query of the partition with one token left runs")
        tap.eq(len(rq.json().get("value", [])) if rq.status == 200 else -1, 4,
               "and returns its 4 entities")
        rq2 = http.get("/qtab()" + flt)
        tap.eq(rq2.status, 503, "the next query is refused: the page of 4 was charged")
        seen_503 += rq2.status == 503

        # 5. the admin listener and the table endpoint stay apart
        r = http.get("/metrics", absolute=True)
        tap.ok(r.status >= 400 and b"tabled_requests_total" not in r.body,
               "GET /metrics on the table port is not the metrics (%d)" % r.status)
        st, _, body = adm.call("GET", "/devstoreaccount1/Tables")
        tap.eq(st, 404, "the admin port does not serve table requests")
        st, hd, body = adm.call("GET", "/healthz")
        tap.eq((st, body), (200, b"ok\n"), "GET /healthz")

        # 6. metrics agree with what the client saw
        fams = adm.metrics(tap, "throttle server")
        tap.eq(sample(fams, "tabled_throttled_total", account="devstoreaccount1",
                      scope="partition"), float(seen_503),
               "tabled_throttled_total{scope=partition} counts the %d refusals" % seen_503)
        tap.eq(sample(fams, "tabled_throttled_total", account="devstoreaccount1",
                      scope="account"), 0.0, "no account refusals")
        tap.eq(sample(fams, "tabled_requests_total", operation="InsertEntity", status="503"),
               float(statuses.count(503) + 1 + (r5.status == 503)),
               "InsertEntity 503s by operation and status")
        tap.eq(sample(fams, "tabled_requests_total", operation="EntityGroupTransaction",
                      status="202"), 3.0, "three batches answered 202")
        tap.eq(sample(fams, "tabled_entities", account="devstoreaccount1"),
               float(ok + 4 + 5 + 7 + 4), "tabled_entities counts what was written")
        tap.ok(sample(fams, "tabled_throttle_partition_buckets") >= 3,
               "partition buckets are held for the emptied partitions")
        tap.ok(sample(fams, "tabled_request_duration_seconds_count", operation="InsertEntity") >= 12,
               "latency histogram of the inserts")
        tap.ok(sample(fams, "tabled_backend_apply_duration_seconds_count") >= ok,
               "backend apply latency histogram")
        tap.ok(sample(fams, "tabled_open_connections") >= 0 and
               sample(fams, "tabled_connections_total") >= 10, "connection metrics")
    finally:
        srv.stop_and_check(tap)


def test_account_throttle(tap):
    srv = h.Server(args=["--throttle", "--throttle-account-rate", "0.5",
                         "--throttle-account-burst", "4", "--throttle-retry-after", "3"]).start()
    try:
        http = h.Http(srv, accept=h.ACCEPT["nometadata"])
        statuses = []
        t0 = time.monotonic()
        for i in range(8):
            statuses.append(http.get_entity("nosuch", "p%d" % i, "r").status)
        elapsed = time.monotonic() - t0
        n404 = statuses.count(404)
        tap.ok(4 <= n404 <= 4 + int(elapsed * 0.5),
               "the account bucket admits its burst of 4 across partitions", statuses)
        r = http.get_entity("nosuch", "another", "r")
        tap.eq(r.status, 503, "then every partition is refused")
        if r.status == 503:
            body = r.body.decode()
            tap.ok('"code":"ServerBusy"' in body and
                   ('"value":"%s\\nRequestId:' % MSG_ACCOUNT) in body,
                   "with the account message", body)
            tap.eq(r.h("Content-Type"), NOMETA_CT, "in the negotiated nometadata format")
            tap.eq(r.h("Retry-After"), "3", "Retry-After when enabled (extension)")
    finally:
        srv.stop_and_check(tap)


def test_sdk_retries_throttling(tap):
    """The Python SDK backs off and retries throttled writes; each lands once."""
    if IMPORT_ERROR is not None:
        tap.ok(False, "import the Azure Tables SDK", str(IMPORT_ERROR))
        return
    srv = h.Server(args=["--throttle", "--throttle-partition-rate", "20",
                         "--throttle-partition-burst", "2"]).start()
    try:
        svc = TableServiceClient.from_connection_string(
            srv.conn_str(), retry_total=8, retry_status=8, retry_backoff_factor=0.1,
            retry_backoff_max=1, connection_timeout=10, read_timeout=20)
        t = svc.create_table("sdkthrottle")
        hits = []

        def hook(resp):
            hits.append(resp.http_response.status_code)
        for i in range(10):
            t.upsert_entity({"PartitionKey": "p", "RowKey": "r%d" % i, "n": i},
                            mode=UpdateMode.REPLACE, raw_response_hook=hook)
        rows = list(t.query_entities("PartitionKey eq 'p'"))
        tap.eq(sorted(e["RowKey"] for e in rows), sorted("r%d" % i for i in range(10)),
               "10 throttled upserts all landed, once each")
        # The partition admits 2 at once and 20 a second: ten back-to-back
        # upserts must meet 503 at least once, and the SDK must have retried
        # each of those until it got 204 (one 204 per entity, no other status).
        tap.ok(hits.count(503) >= 1, "the SDK met 503 ServerBusy and retried", hits)
        tap.ok(hits.count(204) == 10, "each upsert succeeded exactly once", hits)
        tap.ok(set(hits) <= {204, 503}, "no status other than 204 and 503", hits)
    except Exception as e:  # noqa: BLE001
        tap.ok(False, "SDK writes against a throttled partition", repr(e))
    finally:
        srv.stop_and_check(tap)


# --------------------------------------------------------------------------
# fault injection


def raw_insert(srv, table, entity, accept="minimalmetadata", timeout=10):
    """One signed insert on a fresh socket: (response or None, reset?)."""
    http = h.Http(srv, accept=h.ACCEPT[accept])
    data = http.build("POST", "/" + table, body=entity)
    s = socket.create_connection((srv.host, srv.port), timeout=timeout)
    try:
        s.sendall(data)
        got = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                return None, True
            if not chunk:
                break
            got += chunk
            resp = h.first_response(got)
            if resp is not None and len(resp.body) >= int(resp.h("Content-Length", "0")):
                return resp, False
        return h.first_response(got), False
    finally:
        s.close()


def test_faults(tap):
    srv = h.Server(args=["--admin-port", "0", "--fault-seed", "7"]).start()
    try:
        adm = Admin(srv)
        http = h.Http(srv)
        st, _, body = adm.call("GET", "/faults")
        tap.eq((st, json.loads(body)), (200, {"rules": []}), "no fault rules at start")
        for t in ("retry", "tmo", "tmoapply", "rst", "slow", "other", "bfault", "part"):
            http.create_table(t)
        counts = {"server_busy": 0, "timeout": 0, "reset": 0, "latency": 0}

        # ServerBusy, SDK retry
        st, _, body = adm.put_rule("busy2", {"table": "retry", "ops": "writes", "busy": 1,
                                             "count": 2})
        tap.eq(st, 201, "PUT /faults/busy2")
        r, _ = raw_insert(srv, "retry", {"PartitionKey": "raw", "RowKey": "1"})
        tap.ok(r is not None and r.status == 503, "an injected 503 on a raw insert")
        if r is not None and r.status == 503:
            check_busy_body(tap, r, MSG_BUSY, "injected ServerBusy")
        counts["server_busy"] += 1
        tap.eq(http.get_entity("retry", "raw", "1").status, 404,
               "the refused insert wrote nothing (reads are not covered by the rule)")
        if IMPORT_ERROR is None:
            svc = TableServiceClient.from_connection_string(
                srv.conn_str(), retry_total=5, retry_backoff_factor=0.05, retry_backoff_max=1,
                connection_timeout=10, read_timeout=20)
            tc = svc.get_table_client("retry")
            try:
                # the rule's second fault hits the first attempt: only a
                # retry can succeed
                tc.create_entity({"PartitionKey": "sdk", "RowKey": "1", "v": 1})
                tap.ok(True, "the SDK's retry policy got create_entity past an injected 503")
            except HttpResponseError as e:
                tap.ok(False, "the SDK's retry policy got create_entity past an injected 503",
                       repr(e))
            counts["server_busy"] += 1
            rows = list(tc.query_entities("PartitionKey eq 'sdk'"))
            tap.eq(len(rows), 1, "and the entity landed once")
        st, _, body = adm.call("GET", "/faults/busy2")
        rule = json.loads(body) if st == 200 else {}
        tap.eq((rule.get("injected"), rule.get("matched")), (2, 2 if IMPORT_ERROR is None else 1),
               "the rule counted its faults (and stopped at count=2)")
        r, _ = raw_insert(srv, "retry", {"PartitionKey": "raw", "RowKey": "2"})
        tap.eq(r.status if r else None, 201, "an exhausted rule injects nothing")

        # OperationTimedOut, not applied (default): negotiated format, nothing written
        adm.put_rule("tmo", {"table": "tmo", "timeout": 1, "count": 1, "timeout_delay_ms": 300})
        t0 = time.monotonic()
        r, _ = raw_insert(srv, "tmo", {"PartitionKey": "p", "RowKey": "1"}, accept="nometadata")
        waited = time.monotonic() - t0
        counts["timeout"] += 1
        tap.eq(r.status if r else None, 500, "an injected timeout answers 500")
        if r is not None:
            tap.eq(r.h("Content-Type"), NOMETA_CT, "in the negotiated (nometadata) format")
            body = r.body.decode()
            tap.ok(body.startswith('{"odata.error":{"code":"OperationTimedOut","message":'
                                   '{"lang":"en-US","value":"%s\\nRequestId:' % MSG_TIMEOUT),
                   "OperationTimedOut JSON body", body)
        tap.ok(waited >= 0.3, "after the configured 300 ms delay (%.3f s)" % waited)
        tap.eq(http.get_entity("tmo", "p", "1").status, 404,
               "a timed-out write is not applied by default")
        if IMPORT_ERROR is None:
            adm.put_rule("tmo", {"table": "tmo", "timeout": 1, "count": 1})
            tc = svc.get_table_client("tmo")
            try:
                tc.create_entity({"PartitionKey": "sdk", "RowKey": "1"})
                tap.ok(True, "the SDK retried past an injected 500")
            except HttpResponseError as e:
                tap.ok(False, "the SDK retried past an injected 500", repr(e))
            counts["timeout"] += 1
            tap.eq(len(list(tc.query_entities("PartitionKey eq 'sdk'"))), 1, "landed once")

        # OperationTimedOut after applying (timeout_applies)
        adm.put_rule("tmoapply", {"table": "tmoapply", "timeout": 1, "count": 1,
                                  "timeout_applies": True})
        r, _ = raw_insert(srv, "tmoapply", {"PartitionKey": "p", "RowKey": "1"})
        counts["timeout"] += 1
        tap.eq(r.status if r else None, 500, "timeout_applies: the insert answers 500")
        tap.eq(http.get_entity("tmoapply", "p", "1").status, 200,
               "but it was applied, fully")
        if IMPORT_ERROR is None:
            adm.put_rule("tmoapply", {"table": "tmoapply", "timeout": 1, "count": 1,
                                      "timeout_applies": True})
            tc = svc.get_table_client("tmoapply")
            try:
                tc.create_entity({"PartitionKey": "sdk", "RowKey": "1"})
                tap.ok(False, "an SDK insert retried after an applied timeout meets its own write")
            except ResourceExistsError:
                tap.ok(True, "an SDK insert retried after an applied timeout meets its own "
                       "write (409): it landed once")
            except Exception as e:  # noqa: BLE001
                tap.ok(False, "SDK insert after an applied timeout", repr(e))
            counts["timeout"] += 1
            adm.put_rule("tmoapply", {"table": "tmoapply", "timeout": 1, "count": 1,
                                      "timeout_applies": True})
            try:
                tc.upsert_entity({"PartitionKey": "sdk", "RowKey": "2", "n": 1})
                tap.ok(True, "an idempotent upsert retries through an applied timeout")
            except Exception as e:  # noqa: BLE001
                tap.ok(False, "an idempotent upsert retries through an applied timeout", repr(e))
            counts["timeout"] += 1
            tap.eq(sorted(e["RowKey"] for e in tc.query_entities("PartitionKey eq 'sdk'")),
                   ["1", "2"], "each entity exists once")

        # connection reset
        adm.put_rule("rst", {"table": "rst", "reset": 1, "count": 1})
        r, reset = raw_insert(srv, "rst", {"PartitionKey": "p", "RowKey": "1"})
        counts["reset"] += 1
        tap.ok(reset or r is None, "an injected reset closes the connection without an answer",
               repr(r))
        tap.eq(http.get_entity("rst", "p", "1").status, 404, "the reset insert wrote nothing")
        r, reset = raw_insert(srv, "rst", {"PartitionKey": "p", "RowKey": "2"})
        tap.eq(r.status if r else None, 201, "the next request is served")

        # latency: the answer waits, the loop does not
        adm.put_rule("slow", {"table": "slow", "ops": "reads", "latency_ms": 800})
        result = {}

        def slow_get():
            t = time.monotonic()
            result["status"] = http.get_entity("slow", "p", "1").status
            result["slow_done"] = time.monotonic()
            result["slow_took"] = result["slow_done"] - t
        th = threading.Thread(target=slow_get)
        th.start()
        time.sleep(0.1)
        fast = http.get_entity("other", "p", "1")
        fast_done = time.monotonic()
        th.join(10)
        counts["latency"] += 1
        tap.eq((result.get("status"), fast.status), (404, 404), "both reads answered")
        # (the bound allows 10 ms for the two processes' clocks: what is
        # checked is that the answer was held back, not the timer's grain)
        tap.ok(result.get("slow_took", 0) >= 0.79,
               "the delayed read took about 800 ms or more (%.3f s)" % result.get("slow_took", 0))
        tap.ok(fast_done < result.get("slow_done", 0),
               "a read of another table, sent later, was answered first (no blocking)")
        # pipelined requests behind a delayed one keep their order
        adm.put_rule("slow", {"table": "slow", "ops": "reads", "latency_ms": 300, "count": 0})
        with http.connect() as conn:
            conn.send(http.build("GET", http.entity_path("slow", "p", "1")) +
                      http.build("GET", http.entity_path("other", "p", "1")) +
                      http.build("GET", "/Tables('other')"))
            got = [conn.read().status for _ in range(3)]
        counts["latency"] += 1
        tap.eq(got, [404, 404, 200], "pipelined answers behind a delayed one come in order")
        adm.call("DELETE", "/faults/slow")

        # batches only
        adm.put_rule("bonly", {"ops": "batches", "busy": 1, "count": 1})
        r = http.insert("bfault", {"PartitionKey": "b", "RowKey": "single"})
        tap.eq(r.status, 201, "a batch-only rule leaves single inserts alone")
        rb = send_batch(http, "bfault", "b", ["1", "2"], srv)
        counts["server_busy"] += 1
        tap.eq(rb.status, 503, "an injected fault fails a batch at the top level")
        tap.eq(count_partition(http, "bfault", "b"), 1, "and the batch applied nothing")
        rb = send_batch(http, "bfault", "b", ["1", "2"], srv)
        tap.eq(rb.status, 202, "the next batch is served")

        # a partition rule finds an insert's PartitionKey in its body
        adm.put_rule("part", {"table": "part", "partition": "p1", "busy": 1})
        r1 = http.insert("part", {"RowKey": "a", "o": {"PartitionKey": "p2", "l": [1, "}"]},
                                  "PartitionKey": "p1"})
        r2 = http.insert("part", {"PartitionKey": "p2", "RowKey": "a"})
        counts["server_busy"] += 1
        tap.eq((r1.status, r2.status), (503, 201),
               "a partition rule hits inserts into that partition only")
        st, _, _ = adm.call("DELETE", "/faults")
        tap.eq(st, 200, "DELETE /faults")
        tap.eq(http.insert("part", {"PartitionKey": "p1", "RowKey": "b"}).status, 201,
               "no rules: served again")

        fams = adm.metrics(tap, "fault server")
        for kind, n in sorted(counts.items()):
            if IMPORT_ERROR is not None and kind in ("server_busy", "timeout"):
                continue
            tap.eq(sample(fams, "tabled_faults_injected_total", account="devstoreaccount1",
                          kind=kind), float(n), "tabled_faults_injected_total{kind=%s} = %d"
                   % (kind, n))
        tap.eq(sample(fams, "tabled_fault_rules"), 0.0, "no rules left")
        tap.eq(sample(fams, "tabled_requests_total", operation="InsertEntity", status="0"), 1.0,
               "the reset insert is counted with status 0")
    finally:
        srv.stop_and_check(tap)


def test_config_rules(tap):
    fd, path = tempfile.mkstemp(prefix="tabled-throttle-", suffix=".conf")
    with os.fdopen(fd, "w") as f:
        f.write("[fault cfgbusy]\ntable = cfg\nops = writes\nbusy = 1\ncount = 1\n")
    try:
        srv = h.Server(args=["--config", path]).start()
    finally:
        os.unlink(path)
    try:
        http = h.Http(srv)
        tap.eq(http.create_table("cfg").status, 201,
               "a table rule does not cover Create Table (its table is in the body)")
        r1 = http.insert("cfg", {"PartitionKey": "p", "RowKey": "1"})
        r2 = http.insert("cfg", {"PartitionKey": "p", "RowKey": "1"})
        tap.eq((r1.status, r2.status), (503, 201), "a [fault] section of the config file")
    finally:
        srv.stop_and_check(tap)
    r = h.Server(args=["--fault", "bad:busy=2"])
    try:
        r.start()
        tap.ok(False, "a bad --fault rule stops the server at start")
        r.stop()
    except h.ServerError as e:
        tap.ok("busy" in str(e), "a bad --fault rule stops the server at start", str(e))


def main():
    tap = h.Tap()
    h.watchdog(150, None, tap)
    tap.run(check_parser_rejects, tap)
    for fn in (test_partition_throttle, test_account_throttle, test_sdk_retries_throttling,
               test_faults, test_config_rules):
        tap.run(fn, tap)
    tap.done()


if __name__ == "__main__":
    main()
