#!/usr/bin/python3
"""Integration test: tabled import checks its whole input before writing,
and the tools' JSON readers bound nesting as the server's do.

  deep      one line nested 300,000 levels deep (alone, as a table's "acl",
            as an entity) for `tabled import` (from a file and from standard
            input), an Azurite database nested as deep for `import
            --from-azurite`, and an advisor document as deep served to
            `tabled advise` by a small HTTP server in this test: each exits
            with its error status and a message naming the nesting, never a
            signal.
  invalid   files without the header, of an unknown format version, with a
            bad line midway (not JSON, a bad entity), random base64 as a
            table's ACL or as service properties, ticks out of the
            Edm.DateTime range (and an Azurite database with one bad entity
            after good ones): exit 1, a message naming the line and what is
            wrong, and nothing imported: the store's export is unchanged, a
            store that did not exist is not created, and standard input
            leaves no spool file in $TMPDIR.
  valid     the same good file imports from a file and from standard input
            (spooled) alike.
  advisor   PartitionKeys and a $filter of 2-, 3- and 4-byte characters
            longer than the advisor keeps: GET /advisor is strict UTF-8 JSON
            and `tabled advise` reads it (exit 0 or 1, not 2) and prints the
            partitions cut at a character boundary.
Prints TAP."""
import base64
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

DEEP = 300000
ACCT = "devstoreaccount1"
TICKS = 638400000000000000


def run(args, stdin=None, env=None):
    """Runs tabled with args; (exit status, stderr text)."""
    p = subprocess.run([h.tabled_path()] + args, capture_output=True, timeout=300,
                       stdin=stdin if stdin is not None else subprocess.DEVNULL,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stderr.decode("utf-8", "replace") + p.stdout.decode("utf-8",
                                                                                 "replace")


def deep_array(n=DEEP):
    return "[" * n + "]" * n


def entity_line(table, pk, rk, ticks=TICKS, extra=None):
    e = {"PartitionKey": pk, "RowKey": rk, "V": 1}
    e.update(extra or {})
    return json.dumps({"account": ACCT, "table": table, "ticks": ticks, "entity": e},
                      separators=(",", ":"))


HEADER = '{"tabled-export":1,"version":"test"}'
GOOD = [HEADER, '{"account":"%s","table":"Good","acl":""}' % ACCT,
        entity_line("Good", "p", "r1"), entity_line("Good", "p", "r2")]


def write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def export(data):
    rc, err = run(["export", "--backend", "flatfile", "--data", data, "-o", data + ".out"])
    if rc != 0:
        return "export failed: " + err
    with open(data + ".out", encoding="utf-8") as f:
        return [l for l in f.read().splitlines() if not l.startswith('{"tabled-export"')]


def test_deep(tap, tmp):
    d = os.path.join(tmp, "deep-store")
    cases = [("a line that is one deep array", [HEADER, deep_array()]),
             ("a table's acl nested deep",
              [HEADER, '{"account":"%s","table":"Deep","acl":%s}' % (ACCT, deep_array())]),
             ("an entity nested deep",
              [HEADER, '{"account":"%s","table":"Deep","ticks":%d,"entity":%s}'
               % (ACCT, TICKS, deep_array())])]
    for what, lines in cases:
        path = os.path.join(tmp, "deep.jsonl")
        write(path, lines)
        rc, err = run(["import", "--backend", "flatfile", "--data", d, path])
        tap.ok(rc == 1 and "line 2" in err and ("deeper than" in err or "InvalidInput" in err),
               "deep: import refuses %s (exit 1, no crash)" % what, "rc %d: %s" % (rc, err[-400:]))
        with open(path, "rb") as f:
            rc, err = run(["import", "--backend", "flatfile", "--data", d, "-"], stdin=f)
        tap.ok(rc == 1 and "line 2" in err, "deep: import - refuses %s" % what,
               "rc %d: %s" % (rc, err[-400:]))
    tap.ok(not os.path.exists(d), "deep: no store was created")
    az = os.path.join(tmp, "deep-azurite.json")
    with open(az, "w") as f:
        f.write('{"collections":%s}' % deep_array())
    rc, err = run(["import", "--from-azurite", "--backend", "flatfile", "--data", d, az])
    tap.ok(rc == 1 and "deeper than 64 levels" in err,
           "deep: import --from-azurite refuses a database nested 300,000 deep",
           "rc %d: %s" % (rc, err[-400:]))
    body = ('{"findings":[],"tables":%s}' % deep_array()).encode()
    rc, err = advise_one_shot(body)
    tap.ok(rc == 2 and "deeper than 64 levels" in err,
           "deep: tabled advise refuses an advisor document nested 300,000 deep (exit 2)",
           "rc %d: %s" % (rc, err[-400:]))
    rc, err = advise_one_shot(b'{"findings":[],"tables":[]}')
    tap.eq(rc, 0, "deep: tabled advise reads a shallow document from the same server")


def advise_one_shot(body):
    """`tabled advise` against a listener in this test that answers one
    GET /advisor with body; (exit status, stderr)."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)

    def serve():
        c, _ = ls.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(4096)
            if not chunk:
                break
            data += chunk
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        c.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    rc, err = run(["advise", "--admin", "http://127.0.0.1:%d" % ls.getsockname()[1]])
    t.join(30)
    ls.close()
    return rc, err


def test_invalid(tap, tmp):
    d = os.path.join(tmp, "store")
    good = os.path.join(tmp, "good.jsonl")
    write(good, GOOD)
    rc, err = run(["import", "--backend", "flatfile", "--data", d, good])
    tap.ok(rc == 0 and "1 tables, 2 entities" in err, "valid: a good file imports", err[-300:])
    before = export(d)
    tap.eq(len(before), 3, "valid: its table and entities export")
    spool = os.path.join(tmp, "spool")
    os.makedirs(spool)
    d2 = os.path.join(tmp, "store-stdin")
    with open(good, "rb") as f:
        rc, err = run(["import", "--backend", "flatfile", "--data", d2, "-"], stdin=f,
                      env={"TMPDIR": spool})
    tap.ok(rc == 0 and export(d2) == before, "valid: the same file from standard input",
           err[-300:])
    rand_b64 = base64.b64encode(os.urandom(48)).decode()
    bad_ticks = [0, -1, 504911231999999999, 3155378976000000000, 9999999999999999999,
                 99999999999999999999]
    cases = [
        ("no header", GOOD[1:] + [entity_line("Good", "p", "new")], 1, "not the header"),
        ("unknown format version", ['{"tabled-export":2,"version":"9.0"}'] + GOOD[1:], 1,
         "format version 2"),
        ("header not a number", ['{"tabled-export":"1"}'] + GOOD[1:], 1, "format version"),
        ("a bad line midway", GOOD + [entity_line("Good", "p", "new1"), "not json",
                                      entity_line("Good", "p", "new2")], 6, "not a JSON object"),
        ("an entity without RowKey midway",
         GOOD + [entity_line("Good", "p", "new1"),
                 json.dumps({"account": ACCT, "table": "Good", "ticks": TICKS,
                             "entity": {"PartitionKey": "p"}}, separators=(",", ":"))], 6,
         "entity refused"),
        ("a bad Edm value midway",
         GOOD + [entity_line("Good", "p", "new1", extra={"G@odata.type": "Edm.Guid",
                                                         "G": "nope"})], 5, "entity refused"),
        ("a second header", GOOD + [HEADER], 5, "second header"),
        ("random base64 as a table ACL",
         GOOD + ['{"account":"%s","table":"Other","acl":"%s"}' % (ACCT, rand_b64)], 5,
         '"acl" does not hold'),
        ("an ACL that is not base64",
         GOOD + ['{"account":"%s","table":"Good","acl":"#!"}' % ACCT], 5, "not base64"),
        ("random base64 as service properties",
         GOOD + ['{"account":"%s","service-properties":"%s"}' % (ACCT, rand_b64)], 5,
         "service-properties"),
        ("an invalid table name",
         GOOD + ['{"account":"%s","table":"a-b","acl":""}' % ACCT], 5, "invalid table name"),
    ] + [("ticks %d" % t, GOOD + [entity_line("Good", "p", "t", ticks=t)], 5, '"ticks" must be')
         for t in bad_ticks]
    for what, lines, lineno, msg in cases:
        path = os.path.join(tmp, "bad.jsonl")
        write(path, lines)
        rc, err = run(["import", "--backend", "flatfile", "--data", d, path])
        tap.ok(rc == 1 and ("line %d" % lineno) in err and msg in err and
               "nothing was imported" in err,
               "invalid: %s: exit 1, line %d named, what is wrong" % (what, lineno),
               "rc %d: %s" % (rc, err[-500:]))
        tap.eq(export(d), before, "invalid: %s: nothing imported" % what)
        with open(path, "rb") as f:
            rc, err = run(["import", "--backend", "flatfile", "--data", d, "-"], stdin=f,
                          env={"TMPDIR": spool})
        tap.ok(rc == 1 and ("line %d" % lineno) in err,
               "invalid: %s: from standard input too" % what, err[-300:])
    tap.eq(os.listdir(spool), [], "invalid: standard input spooled to $TMPDIR leaves nothing")
    fresh = os.path.join(tmp, "never")
    rc, err = run(["import", "--backend", "leveldb", "--data", fresh, path])
    tap.ok(rc == 1 and not os.path.exists(fresh),
           "invalid: the store is not even created for an invalid file", err[-300:])
    empty = os.path.join(tmp, "empty.jsonl")
    open(empty, "w").close()
    rc, err = run(["import", "--backend", "flatfile", "--data", d, empty])
    tap.ok(rc == 1 and "empty" in err, "invalid: an empty file is refused", err[-300:])
    # Azurite: a bad entity after good tables and entities imports nothing.
    az = os.path.join(tmp, "azurite.json")
    good_docs = [{"properties": {"PartitionKey": "a", "RowKey": str(i)}} for i in range(5)]
    with open(az, "w") as f:
        json.dump({"collections": [
            {"name": "$TABLES_COLLECTION$",
             "data": [{"account": ACCT, "table": "FromAz", "tableAcl": []}]},
            {"name": ACCT + "$FromAz",
             "data": good_docs + [{"properties": {"PartitionKey": "a"}}]}]}, f)
    rc, err = run(["import", "--from-azurite", "--backend", "flatfile", "--data", d, az])
    tap.ok(rc == 1 and "entity 6 of" in err and "nothing was imported" in err,
           "invalid: --from-azurite names the bad entity", "rc %d: %s" % (rc, err[-400:]))
    tap.eq(export(d), before, "invalid: --from-azurite imported nothing")
    with open(az, "w") as f:
        json.dump({"collections": [
            {"name": "$TABLES_COLLECTION$",
             "data": [{"account": ACCT, "table": "FromAz",
                       "tableAcl": [{"id": "p1", "accessPolicy": {"permission": "rx"}}]}]},
            {"name": ACCT + "$FromAz", "data": good_docs}]}, f)
    rc, err = run(["import", "--from-azurite", "--backend", "flatfile", "--data", d, az])
    tap.ok(rc == 1 and "table document 1" in err and export(d) == before,
           "invalid: --from-azurite refuses a policy the service would refuse, imports nothing",
           "rc %d: %s" % (rc, err[-400:]))


admin_port = h.admin_port


def test_advisor(tap):
    srv = h.Server(args=["--admin-port", "0", "--advisor", "hot-min-entities=1",
                         "--advisor", "scan-min=1", "--advisor", "append-min-creates=1",
                         "--advisor", "append-min-keys=2"]).start()
    try:
        c = h.Http(srv)
        r = c.request("POST", "/Tables", headers={"Content-Type": "application/json",
                                                  "Accept": "application/json"},
                      body=b'{"TableName":"wide"}')
        tap.eq(r.status, 201, "advisor: table created")
        chars = ["\u00e9", "\u20ac", "\U0001F600"]
        keys = []
        for ci, ch in enumerate(chars):
            for pre in range(1, 5):
                pk = chr(ord("a") + ci) + "x" * (pre - 1) + ch * 60
                keys.append(pk)
                body = json.dumps({"PartitionKey": pk, "RowKey": "r"}).encode()
                r = c.request("POST", "/wide", headers={"Content-Type": "application/json",
                                                        "Accept": "application/json"}, body=body)
                if r.status != 201:
                    tap.ok(False, "advisor: insert", r)
        for _ in range(250):     # the last key is hot: a finding naming it
            r = c.request("GET", "/wide(PartitionKey='%s',RowKey='r')" % __import__(
                "urllib.parse").parse.quote(keys[-1]), headers={"Accept": "application/json"})
        for ch in chars:
            for pre in range(1, 5):
                f = "V eq '" + "x" * pre + ch * 60 + "'"
                q = "/wide()?$filter=" + __import__("urllib.parse").parse.quote(f)
                r = c.request("GET", q, headers={"Accept": "application/json"})
                if r.status != 200:
                    tap.ok(False, "advisor: scan query", r)
        con = http.client.HTTPConnection(srv.host, admin_port(srv), timeout=30)
        con.request("GET", "/advisor")
        raw = con.getresponse().read()
        con.close()
        try:
            doc = json.loads(raw.decode("utf-8", "strict"))
            why = None
        except ValueError as e:
            doc, why = None, str(e)
        tap.ok(doc is not None, "advisor: GET /advisor is strict UTF-8 JSON", why)
        pks = [p["pk"] for t in (doc or {}).get("tables", []) for p in t["partitions"]]
        tap.ok(pks and all(any(k.startswith(p) for k in keys) and len(p.encode()) <= 48
                           and len(p.encode()) > 44 for p in pks),
               "advisor: the partitions are their keys cut at a character boundary", pks[:3])
        url = "http://%s:%d" % (srv.host, admin_port(srv))
        rc, out = run(["advise", "--admin", url, "--fail-on", "never"])
        tap.ok(rc == 0 and "table-scan" in out and "devstoreaccount1/wide" in out,
               "advisor: tabled advise reads it strictly", "rc %d: %s" % (rc, out[-600:]))
        shown = re.findall(r"partition '([^']*)'", out)
        tap.ok(shown and all(any(k.startswith(p[:-3]) for k in keys) and p.endswith("...")
                             for p in shown),
               "advisor: tabled advise prints the partitions cut at a character boundary",
               out[:1500])
    finally:
        srv.stop()


def main():
    tap = h.Tap()
    h.watchdog(900, tap=tap)
    tmp = tempfile.mkdtemp(prefix="tabled-import-check-")
    try:
        tap.run(test_deep, tap, tmp)
        tap.run(test_invalid, tap, tmp)
        tap.run(test_advisor, tap)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
