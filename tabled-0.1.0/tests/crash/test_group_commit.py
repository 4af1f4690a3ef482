#!/usr/bin/python3
"""test_group_commit.py - proves from the system calls that tabled sends no
success reply while a write it answers for is not yet durable.

A kill -9 cannot show a missing fsync (the page cache survives the process),
so this test watches the server with strace instead: every write(2) to a
backend's log file (flatfile.log, LevelDB's NNNNNN.log) must be followed by
an fdatasync/fsync of that log before the server's main thread writes any
"HTTP/1.1 2xx" to a socket. It runs 16 connections of inserts and $batch
requests against each durable backend in --durability batch and sync, and
reports how many log writes shared one sync (group commit at work: in batch
mode the replies of one event-loop turn wait for one fdatasync).

Skipped (TAP SKIP) when strace is not installed. TABLED names the binary.
"""
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import tabled_harness as h  # noqa: E402
import tload  # noqa: E402

LINE_RE = re.compile(r"^(\d+)\s+(\w+)\((\d+)<([^>]*)>(.*)$")


def load(host, port, seconds, nconn=16):
    """nconn connections of inserts (and every fifth request a $batch)."""
    stop = threading.Event()
    counts = [0] * nconn
    errors = []

    def one(i):
        try:
            c = tload.Client(host, port)
            n = 0
            while not stop.is_set():
                n += 1
                if n % 5 == 0:
                    rks = ["b%d-%d-%d" % (i, n, j) for j in range(tload.BATCH_SIZE)]
                    body, ct = tload.batch_body("gctable", "p%d" % i, rks, n, "%s:%d" % (host, port))
                    st, _, b = c.request("POST", "/%s/$batch" % tload.ACCOUNT, body,
                                         [("Content-Type", ct)])
                    ok = st == 202
                else:
                    st, _, b = c.request("POST", "/%s/gctable" % tload.ACCOUNT,
                                         tload.entity_body("p%d" % i, "r%d" % n, n, 200),
                                         [("Content-Type", "application/json"),
                                          ("Prefer", "return-no-content")])
                    ok = st == 204
                if not ok:
                    errors.append("%d %s" % (st, b[:200]))
                    return
                counts[i] += 1
            c.close()
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    ts = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(nconn)]
    for t in ts:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in ts:
        t.join(20)
    return sum(counts), errors


def stop_traced(srv):
    """SIGTERM to tabled itself (strace, the process the harness started,
    would only detach from it), then the harness's stop."""
    try:
        with open("/proc/%d/task/%d/children" % (srv.proc.pid, srv.proc.pid)) as f:
            for pid in f.read().split():
                os.kill(int(pid), signal.SIGTERM)
    except OSError:
        pass
    try:
        srv.proc.wait(20)
    except Exception:  # noqa: BLE001 - the harness's stop kills it then
        pass
    srv.stop()


def analyse(trace, data):
    """Replays the main thread's system calls. Returns (violations, log
    writes, log syncs, success replies)."""
    main_pid = None
    dirty = False
    writes = syncs = replies = 0
    violations = []
    with open(trace, errors="replace") as f:
        for ln in f:
            m = LINE_RE.match(ln)
            if not m:
                continue
            pid, call, _fd, path, rest = m.groups()
            if main_pid is None:
                main_pid = pid
            if pid != main_pid:
                continue
            is_log = path.startswith(data) and path.endswith(".log")
            if call in ("write", "pwrite64", "writev") and is_log:
                dirty = True
                writes += 1
            elif call in ("fdatasync", "fsync") and is_log:
                dirty = False
                syncs += 1
            elif call in ("write", "writev", "sendmsg", "sendto") and \
                    (path.startswith("TCP:") or path.startswith("socket:")) and \
                    re.search(r'"HTTP/1\.1 2\d\d', rest):
                replies += 1
                if dirty and len(violations) < 5:
                    violations.append(ln.strip()[:200])
    return violations, writes, syncs, replies


def main():
    tap = h.Tap()
    strace = shutil.which("strace")
    if not strace:
        tap.ok(True, "# SKIP strace is not installed")
        tap.done()
    exe = h.tabled_path()
    tmp = tempfile.mkdtemp(prefix="tabled-gc-")
    for backend in ("flatfile", "leveldb"):
        for mode in ("batch", "sync"):
            data = os.path.join(tmp, "%s-%s" % (backend, mode))
            trace = os.path.join(tmp, "trace-%s-%s" % (backend, mode))
            wrapper = os.path.join(tmp, "tabled-under-strace")
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\nexec %s -f -y -qq -s 24 -o %s -e trace=write,pwrite64,"
                        "writev,fdatasync,fsync,sendmsg,sendto %s \"$@\"\n" % (strace, trace, exe))
            os.chmod(wrapper, stat.S_IRWXU)
            os.environ["TABLED"] = wrapper
            label = "%s/%s" % (backend, mode)
            srv = None
            try:
                srv = h.Server(["--data", data, "--durability", mode, "--auth", "off"],
                               backend=backend, ready_timeout=30).start()
                c = tload.Client(srv.host, srv.port)
                tload.create_table(c, "gctable")
                c.close()
                n, errors = load(srv.host, srv.port, 1.5)
                tap.ok(not errors and n > 0, "%s: %d writes answered under strace" % (label, n),
                       "\n".join(errors[:5]))
            except Exception as e:  # noqa: BLE001
                tap.ok(False, "%s: server under strace" % label, repr(e))
            finally:
                if srv:
                    stop_traced(srv)
            v, writes, syncs, replies = analyse(trace, data)
            tap.ok(replies > 0 and writes > 0 and not v,
                   "%s: no 2xx reply while a log write was not yet fdatasynced "
                   "(%d replies, %d log writes, %d syncs)" % (label, replies, writes, syncs),
                   "\n".join(v))
            if mode == "sync":
                tap.ok(syncs >= replies, "%s: a sync for every acknowledged write" % label,
                       "%d replies, %d syncs" % (replies, syncs))
            else:
                tap.ok(0 < syncs < writes, "%s: group commit: %.1f log writes per sync"
                       % (label, writes / max(syncs, 1)), "%d writes, %d syncs" % (writes, syncs))
    shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
