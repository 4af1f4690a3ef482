#!/usr/bin/python3
"""test_memory_back.py - memory goes back to the system after Delete Table
(issue 18.5; core/heap.h).

Starts tabled, measures its resident memory (VmRSS), loads --entities
entities of ~1 KiB into --tables tables in $batch changesets of 100
(tests/bench/bench_insert, 8 connections), deletes the tables, leaves the
server idle and reads VmRSS every 100 ms for at most --wait seconds: it must
come back to within 25% of what it was before the load (plus --slack MiB:
the request buffers a load leaves behind), which a server that keeps the
freed heap (glibc frees no pages from the middle of the heap by itself)
does not do. It is a memory assertion: the time it took is reported, not
checked.

A sanitizer build's allocator is ASan's, not glibc's (heap_give_back
purges it instead of calling malloc_trim): the servers here get a small
quarantine (it would hold 256 MiB of freed memory), and the bound grows by
an eighth of what the load added, ASan's shadow of the freed memory, which
stays poisoned and resident.

  test_memory_back.py [--entities N] [--tables T] [--backend NAME ...]
                      [--wait SECONDS] [--slack MIB] [--bench]

--backend may be given several times (default memory); with --bench the
figures are reported for each and only the memory backend's are checked
(`make bench-memory`: a million entities on memory and leveldb; LevelDB
keeps its write buffers and block cache, which are bounded, not the data).
TABLED and TOP_BUILDDIR as under make check; BENCH_INSERT names the load
generator (default tests/bench/bench_insert of the build tree).
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tabled_harness as h  # noqa: E402

TOP = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
BENCH_INSERT = os.environ.get("BENCH_INSERT") or os.path.join(TOP, "tests", "bench",
                                                              "bench_insert")


def status_kib(pid):
    """VmRSS, RssAnon and RssFile of pid in KiB."""
    got = {}
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            key = ln.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                got[key] = int(ln.split()[1])
    return got


def is_sanitized(pid):
    """1 when the server runs with AddressSanitizer."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            return "libasan" in f.read()
    except OSError:
        return False


def asan_small():
    """A small quarantine for a sanitizer build (the options are ignored
    by a normal build)."""
    opts = os.environ.get("ASAN_OPTIONS", "abort_on_error=0:detect_leaks=1")
    os.environ["ASAN_OPTIONS"] = (opts + ":quarantine_size_mb=4"
                                  ":thread_local_quarantine_size_kb=64")


def load(srv, table, entities):
    """Inserts entities into table in batches of 100; None or an error."""
    p = subprocess.run([BENCH_INSERT, "-p", str(srv.port), "-t", table, "-c", "8", "-b", "100",
                        "-n", str(max(1, entities // 100)), "-s", "1000", "-w",
                        "-k", table],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=1200)
    return None if p.returncode == 0 else p.stdout.decode("utf-8", "replace")[-800:]


def measure(tap, backend, a):
    """One server: before, peak, after; returns a dict or None."""
    args = ["--auth", "off", "--log-level", "info"]
    with h.Server(args=args, backend=backend, ready_timeout=30) as srv:
        http = h.Http(srv)
        pid = srv.proc.pid
        http.request("GET", "/Tables")           # the first request's buffers
        time.sleep(0.5)
        before = status_kib(pid)
        per = a.entities // a.tables
        t0 = time.monotonic()
        for i in range(a.tables):
            name = "mem%d" % i
            r = http.request("POST", "/Tables", body={"TableName": name})
            if not tap.ok(r.status == 201, "[%s] create table %s" % (backend, name), repr(r)):
                return None
            err = load(srv, name, per)
            if not tap.ok(err is None, "[%s] load %d entities into %s" % (backend, per, name),
                          err):
                return None
        load_s = time.monotonic() - t0
        peak = status_kib(pid)
        t0 = time.monotonic()
        for i in range(a.tables):
            r = http.request("DELETE", "/Tables('mem%d')" % i)
            tap.ok(r.status == 204, "[%s] delete table mem%d" % (backend, i), repr(r))
        bound = before["VmRSS"] * 1.25 + a.slack * 1024
        sanitized = is_sanitized(pid)
        if sanitized:
            # ASan keeps freed memory poisoned: its shadow, an eighth of
            # the heap at its peak, stays resident
            bound += (peak["VmRSS"] - before["VmRSS"]) / 8
        back_s = None
        now = status_kib(pid)
        while time.monotonic() - t0 < a.wait:
            now = status_kib(pid)
            if now["VmRSS"] <= bound and back_s is None:
                back_s = time.monotonic() - t0
                if not a.bench:
                    break
            time.sleep(0.1)
        log = srv.stderr_text()
        given = re.findall(r"gave \d+ MiB of freed memory back[^\n]*", log)
        return {"before": before, "peak": peak, "after": now, "bound": bound,
                "back_s": back_s, "load_s": load_s, "given": given,
                "sanitized": sanitized}


def fmt(d):
    return "VmRSS %d KiB (anon %d, file %d)" % (d["VmRSS"], d.get("RssAnon", 0),
                                                 d.get("RssFile", 0))


def main():
    asan_small()
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=100000)
    ap.add_argument("--tables", type=int, default=2)
    ap.add_argument("--backend", action="append")
    ap.add_argument("--wait", type=float, default=10.0, help="seconds")
    ap.add_argument("--slack", type=int, default=8, help="MiB")
    ap.add_argument("--bench", action="store_true")
    a = ap.parse_args()
    backends = a.backend or ["memory"]
    tap = h.Tap()
    if not os.access(BENCH_INSERT, os.X_OK):
        tap.ok(False, "the load generator is built: %s" % BENCH_INSERT)
        tap.done()
    for backend in backends:
        m = measure(tap, backend, a)
        if not m:
            continue
        tap.diag("[%s] %d entities in %d tables, loaded in %.1f s" %
                 (backend, a.entities, a.tables, m["load_s"]))
        tap.diag("[%s] before the load: %s" % (backend, fmt(m["before"])))
        tap.diag("[%s] after the load:  %s" % (backend, fmt(m["peak"])))
        tap.diag("[%s] %.1f s after Delete Table: %s" % (
            backend, a.wait if a.bench or m["back_s"] is None else m["back_s"], fmt(m["after"])))
        for g in m["given"]:
            tap.diag("[%s] server log: %s" % (backend, g))
        back = ("%.1f s" % m["back_s"]) if m["back_s"] is not None else "not within %.0f s" % a.wait
        tap.diag("[%s] back within 25%% + %d MiB of the start%s (%d KiB): %s" %
                 (backend, a.slack, " + ASan's shadow" if m["sanitized"] else "",
                  m["bound"], back))
        if a.bench and backend != "memory":
            continue
        tap.ok(m["peak"]["VmRSS"] - m["before"]["VmRSS"] > a.entities // 2,
               "[%s] the load shows in VmRSS (%d KiB more: at least half a KiB per entity)"
               % (backend, m["peak"]["VmRSS"] - m["before"]["VmRSS"]))
        tap.ok(m["back_s"] is not None,
               "[%s] VmRSS came back to within 25%% + %d MiB of %d KiB within %.0f s%s "
               "(now %d KiB)" % (backend, a.slack, m["before"]["VmRSS"], a.wait,
                                 " (+ ASan's shadow of the load)" if m["sanitized"] else "",
                                 m["after"]["VmRSS"]))
    tap.done()


if __name__ == "__main__":
    main()
