#!/usr/bin/python3
"""Integration test: a backend whose every call completes later.

tabled runs on the test plug-in backends/examples/libdeferred.so, which
completes each get, cursor step and apply from a host timer
(deferred-ms) and performs it only then (inner store: LevelDB, whose
cursors are snapshots). This proves what the store layer promises
(store/kv.h, protocol/service.h):
  - a request that waits on storage does not stop the others: a point GET
    sent while a long query is being read answers before that query;
  - a query page is one consistent view: batches that rewrite a whole
    partition while it is being read never show half in one page;
  - conditional writes cannot both win: two Update Entity with the same
    If-Match that raced each other's read give one 204 and one 412, and
    concurrent Merges of different properties lose none (a merge whose
    entity changed under it is prepared again);
  - the server stops cleanly while requests wait.
Prints TAP; exit status 1 on failure."""
import os
import sys
import threading
import time

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

try:
    from azure.core import MatchConditions
    from azure.core.exceptions import HttpResponseError
    from azure.data.tables import TableServiceClient, UpdateMode
    IMPORT_ERROR = None
except ImportError as e:  # reported as a failing check below
    IMPORT_ERROR = e


def plugin_path():
    top = os.environ.get("TOP_BUILDDIR") or os.path.join(os.path.dirname(__file__), "..", "..")
    return os.path.abspath(os.path.join(top, "backends", "examples", ".libs", "libdeferred.so"))


def server(ms):
    # start-up reads the catalogue and purge records through the slow store
    return h.Server(backend=plugin_path(), args=["--backend-option", "deferred-ms=%d" % ms],
                    ready_timeout=60).start()


def service(srv):
    return TableServiceClient.from_connection_string(srv.conn_str())


def test_concurrency(tap, srv):
    """A point GET answers while a long query waits on its cursor steps."""
    svc = service(srv)
    t = svc.create_table("slow")
    for i in range(60):
        t.create_entity({"PartitionKey": "p", "RowKey": "r%03d" % i, "v": i})
    t.create_entity({"PartitionKey": "q", "RowKey": "one", "v": 1})
    order = []
    done = threading.Event()

    def long_query():
        rows = list(service(srv).get_table_client("slow").query_entities("PartitionKey eq 'p'"))
        order.append(("query", len(rows)))
        done.set()

    th = threading.Thread(target=long_query)
    th.start()
    time.sleep(0.3)   # the query is reading its 60 steps of 50 ms
    e = service(srv).get_table_client("slow").get_entity("q", "one")
    order.append(("get", e["v"]))
    th.join(60)
    tap.ok(order and order[0] == ("get", 1) and ("query", 60) in order,
           "a point GET sent during a 3 s query answers first (the loop was not blocked)",
           repr(order))


def test_consistent_pages(tap, srv):
    """Whole-partition batches never show half in a query page."""
    svc = service(srv)
    t = svc.create_table("pages")
    n = 100
    t.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": "r%03d" % i, "gen": 0})
                          for i in range(n)])
    stop = threading.Event()
    errors = []
    rounds = [0]

    def writer():
        tc = service(srv).get_table_client("pages")
        g = 1
        while not stop.is_set() and g <= 40:
            try:
                tc.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": "r%03d" % i,
                                                   "gen": g}) for i in range(n)])
                rounds[0] = g
            except Exception as ex:  # noqa: BLE001 (reported)
                errors.append(repr(ex))
                return
            g += 1

    th = threading.Thread(target=writer)
    th.start()
    pages = mixed = 0
    tc = service(srv).get_table_client("pages")
    while th.is_alive() and pages < 200:
        rows = list(tc.query_entities("PartitionKey eq 'p'"))
        gens = set(r["gen"] for r in rows)
        pages += 1
        if len(rows) != n or len(gens) != 1:
            mixed += 1
            if mixed == 1:
                tap.diag("page with %d rows, generations %s" % (len(rows), sorted(gens)))
    stop.set()
    th.join(120)
    tap.ok(not errors, "the batches all committed", "; ".join(errors[:3]))
    tap.ok(pages >= 3 and rounds[0] >= 3,
           "pages were read while batches committed (%d pages, %d batches)" % (pages, rounds[0]))
    tap.eq(mixed, 0, "no page shows part of a batch")


def test_conditional_race(tap, srv):
    """Two updates with one ETag: one wins; merges of different properties
    all land."""
    svc = service(srv)
    t = svc.create_table("race")
    wins = lost = other = 0
    for k in range(10):
        ent = t.create_entity({"PartitionKey": "p", "RowKey": "e%d" % k, "v": 0})
        etag = ent["etag"]
        barrier = threading.Barrier(2)
        results = []

        def upd(val):
            tc = service(srv).get_table_client("race")
            barrier.wait()
            try:
                tc.update_entity({"PartitionKey": "p", "RowKey": "e%d" % k, "v": val},
                                 mode=UpdateMode.REPLACE, etag=etag,
                                 match_condition=MatchConditions.IfNotModified)
                results.append(204)
            except HttpResponseError as ex:
                results.append(ex.status_code)

        ths = [threading.Thread(target=upd, args=(v,)) for v in (1, 2)]
        for x in ths:
            x.start()
        for x in ths:
            x.join(60)
        if sorted(results) == [204, 412]:
            wins += 1
        elif results.count(204) == 2:
            lost += 1
        else:
            other += 1
            tap.diag("round %d: %r" % (k, results))
    tap.eq((wins, lost, other), (10, 0, 0),
           "10 races of two Update Entity with the same If-Match: one 204 and one 412 each")

    t.create_entity({"PartitionKey": "m", "RowKey": "m", "base": 1})
    barrier = threading.Barrier(6)
    errs = []

    def merge(i):
        tc = service(srv).get_table_client("race")
        barrier.wait()
        try:
            tc.update_entity({"PartitionKey": "m", "RowKey": "m", "p%d" % i: i},
                             mode=UpdateMode.MERGE)
        except HttpResponseError as ex:
            errs.append(ex.status_code)

    ths = [threading.Thread(target=merge, args=(i,)) for i in range(6)]
    for x in ths:
        x.start()
    for x in ths:
        x.join(60)
    e = t.get_entity("m", "m")
    have = sorted(k for k in e.keys() if k.startswith("p") and k != "PartitionKey")
    tap.ok(not errs and have == ["p%d" % i for i in range(6)],
           "6 concurrent Merges of different properties: none is lost", "%r %r" % (have, errs))


def main():
    tap = h.Tap()
    if IMPORT_ERROR:
        tap.ok(False, "azure-data-tables importable", str(IMPORT_ERROR))
        tap.done()
    if not os.path.exists(plugin_path()):
        tap.ok(False, "the deferred test backend is built: %s" % plugin_path())
        tap.done()
    srv = server(50)
    try:
        tap.run(test_concurrency, tap, srv)
        tap.run(test_conditional_race, tap, srv)
    finally:
        srv.stop_and_check(tap)
    srv = server(1)
    try:
        tap.run(test_consistent_pages, tap, srv)
    finally:
        srv.stop_and_check(tap)
    # stopping while requests wait: the server exits cleanly
    srv = server(1000)
    try:
        svc = service(srv)
        results = []

        def slow():
            try:
                svc.create_table("never")
                results.append("answered")
            except Exception as ex:  # noqa: BLE001 (the connection is closed)
                results.append(type(ex).__name__)

        th = threading.Thread(target=slow)
        th.start()
        time.sleep(0.5)
    finally:
        srv.stop_and_check(tap)
    th.join(30)
    tap.ok(len(results) == 1, "a request waiting at shutdown ends (%r)" % results)
    tap.done()


if __name__ == "__main__":
    main()
