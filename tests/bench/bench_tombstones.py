#!/usr/bin/python3
"""Query cost after many deletes at the start of a table (doc/performance.md,
Soak). Usage: bench_tombstones.py TABLED_BINARY BACKEND N.
Table t: N rows inserted in partition 'a' and deleted again, one row in
partition 'b'. Table u: the same one row only. Times Q queries
"PartitionKey eq 'b'" on each, and point GETs, and the server CPU."""
import http.client, json, os, re, subprocess, sys, tempfile, time, shutil

TABLED = sys.argv[1]
BACKEND = sys.argv[2]
N = int(sys.argv[3])
Q = 200
data = tempfile.mkdtemp(prefix="tomb-")
log = open(os.path.join(data, "log"), "wb")
p = subprocess.Popen([TABLED, "--port", "0", "--auth", "off", "--access-log", "off", "--log-level", "warn",
                      "--backend", BACKEND, "--data", os.path.join(data, "d")], stdout=log, stderr=subprocess.STDOUT)
for _ in range(100):
    m = re.search(rb"ready at http://[^:]+:(\d+)", open(os.path.join(data, "log"), "rb").read())
    if m: break
    time.sleep(0.1)
c = http.client.HTTPConnection("127.0.0.1", int(m.group(1)))
H = {"Accept": "application/json;odata=nometadata", "x-ms-version": "2019-02-02", "Content-Type": "application/json"}
def req(method, path, body=None, hdrs=None):
    h = dict(H); h.update(hdrs or {})
    c.request(method, "/devstoreaccount1" + path, body=body, headers=h)
    r = c.getresponse(); d = r.read(); return r.status, d
def batch(table, ops):
    s = "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n"
    for m, path, body in ops:
        s += "--c\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        s += "%s http://x/devstoreaccount1/%s HTTP/1.1\r\nAccept: application/json;odata=nometadata\r\n" % (m, path)
        s += ("If-Match: *\r\n\r\n" if body is None else "Content-Type: application/json\r\n\r\n%s\r\n" % body)
    s += "--c--\r\n--b--\r\n"
    st, d = req("POST", "/$batch", s, {"Content-Type": "multipart/mixed; boundary=b"})
    assert st == 202 and b" 20" in d, (st, d[:300])
def cpu():
    f = open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
for t in ("ttt", "uuu"):
    st, d = req("POST", "/Tables", json.dumps({"TableName": t})); assert st == 201, (st, d)
for i in range(0, N, 100):
    batch("ttt", [("POST", "ttt", json.dumps({"PartitionKey": "a", "RowKey": "r%08d" % j, "V": "x" * 200})) for j in range(i, i + 100)])
for i in range(0, N, 100):
    batch("ttt", [("DELETE", "ttt(PartitionKey='a',RowKey='r%08d')" % j, None) for j in range(i, i + 100)])
for t in ("ttt", "uuu"):
    assert req("POST", "/" + t, json.dumps({"PartitionKey": "b", "RowKey": "one"}))[0] == 201
for t in ("ttt", "uuu"):
    for what, path in (("query PartitionKey eq 'b'", "/%s()?$filter=PartitionKey%%20eq%%20'b'" % t),
                       ("point GET", "/%s(PartitionKey='b',RowKey='one')" % t)):
        c0, t0 = cpu(), time.monotonic()
        for _ in range(Q):
            st, d = req("GET", path)
            assert st == 200 and b"one" in d, (st, d[:200])
        print("%-8s N=%d table %s (%s deleted rows before): %-26s %.3f ms per request, server CPU %.3f ms"
              % (BACKEND, N, t, N if t == "ttt" else 0, what, (time.monotonic() - t0) * 1000 / Q, (cpu() - c0) * 1000 / Q))
p.terminate(); p.wait()
shutil.rmtree(data)
