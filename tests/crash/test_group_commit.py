#!/usr/bin/python3
"""test_group_commit.py - proves from the system calls that tabled sends no
success reply while a write it answers for is not yet durable.

A kill -9 cannot show a missing fsync (the page cache survives the process),
so this test watches the server with strace instead (every thread: the
pipelined group commit fdatasyncs on a worker thread): every write(2) to a
backend's log file (flatfile.log, LevelDB's NNNNNN.log) made while a
connection's request was handled, or before it was read, must be covered
by an fdatasync/fsync of that log that began after the write and returned
before the server writes an "HTTP/1.1 2xx" to that connection. It runs 16
connections of inserts and $batch requests against each durable backend in
--durability batch (with the sync worker, and with sync-thread=off: one
fdatasync per loop turn, on the loop) and sync, and reports how many log
writes shared one sync (group commit at work).

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
RESUMED_RE = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$")


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
    """Replays the system calls of every thread. Returns (violations, log
    writes, log syncs, success replies).

    Log writes made while a connection's request was being handled (after
    a read of its socket) are that connection's; so is every log write
    made before that read (a reply may show what others wrote). An
    fdatasync/fsync of a log, on any thread (the pipelined group commit
    runs it on a worker), makes durable the log writes made before it
    began, once it has returned 0. A 2xx reply on a connection is a
    violation unless its writes are durable then."""
    main_pid = None
    wseq = 0            # log writes so far
    durable = 0         # the log writes made durable so far
    mark = {}           # socket fd -> the log writes its reply needs
    cur = None          # the socket whose input is being handled
    sync_from = {}      # thread -> wseq when its sync began
    writes = syncs = replies = 0
    violations = []

    def sync_over(pid, ok):
        nonlocal durable, syncs
        began = sync_from.pop(pid, None)
        if began is not None and ok:
            durable = max(durable, began)
            syncs += 1

    with open(trace, errors="replace") as f:
        for ln in f:
            r = RESUMED_RE.match(ln)
            if r:
                pid, call, rest = r.groups()
                if call in ("fdatasync", "fsync"):
                    sync_over(pid, re.search(r"= 0\s*$", rest) is not None)
                continue
            m = LINE_RE.match(ln)
            if not m:
                continue
            pid, call, fd, path, rest = m.groups()
            if main_pid is None:
                main_pid = pid
            is_log = path.startswith(data) and path.endswith(".log")
            is_sock = path.startswith("TCP:") or path.startswith("socket:")
            if call in ("write", "pwrite64", "writev") and is_log:
                wseq += 1
                writes += 1
                if cur is not None:
                    mark[cur] = wseq
            elif call in ("fdatasync", "fsync") and is_log:
                sync_from[pid] = wseq
                if "<unfinished" not in rest:
                    sync_over(pid, re.search(r"= 0\s*$", rest) is not None)
            elif call in ("read", "recvfrom") and is_sock and pid == main_pid:
                cur = fd
                mark[fd] = max(mark.get(fd, 0), wseq)
            elif call in ("write", "writev", "sendmsg", "sendto") and is_sock and \
                    pid == main_pid and re.search(r'"HTTP/1\.1 2\d\d', rest):
                replies += 1
                if mark.get(fd, 0) > durable and len(violations) < 5:
                    violations.append("%s (its log writes up to #%d, durable up to #%d)"
                                      % (ln.strip()[:160], mark[fd], durable))
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
        # batch-loop: sync-thread=off, one fdatasync per loop turn on the loop
        for mode in ("batch", "batch-loop", "sync"):
            data = os.path.join(tmp, "%s-%s" % (backend, mode))
            trace = os.path.join(tmp, "trace-%s-%s" % (backend, mode))
            wrapper = os.path.join(tmp, "tabled-under-strace")
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\nexec %s -f -y -qq -s 24 -o %s -e trace=write,pwrite64,"
                        "writev,fdatasync,fsync,sendmsg,sendto,read,recvfrom %s \"$@\"\n" % (strace, trace, exe))
            os.chmod(wrapper, stat.S_IRWXU)
            os.environ["TABLED"] = wrapper
            label = "%s/%s" % (backend, mode)
            srv = None
            try:
                args = ["--data", data, "--durability", mode.split("-")[0], "--auth", "off"]
                if mode == "batch-loop":
                    args += ["--backend-option", "sync-thread=off"]
                srv = h.Server(args,
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
