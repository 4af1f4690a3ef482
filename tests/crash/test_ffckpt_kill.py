#!/usr/bin/python3
"""test_ffckpt_kill.py - a kill -9 after a flat-file index checkpoint and
more writes loses nothing.

tabled runs the flat-file backend in batch durability with small
checkpoint and step sizes (checkpoint-bytes=64K, compact-step-bytes=4096),
takes inserts, replaces, merges and deletes until its log says an index
checkpoint was written, then more of them (the tail the checkpoint does
not cover, with writes to keys the checkpoint holds), and is killed with
SIGKILL. The restart must load the checkpoint (its log line says so),
replay the tail, and answer every acknowledged write: each entity as last
written, every deleted one 404. Done twice, the second time with writes
during a checkpoint walk at the moment of the kill.

Then a walk that the writes leave unfinished: 1,200 inserts with RowKeys
of 900 characters (checkpoint-bytes=1M, so the walk begins near the end,
and 4 KiB steps of about four keys each, so it needs far more steps than
writes are left) and no write after them: the walk must still end (the
loop steps it) and a kill -9 then a restart load a checkpoint of every
key, replaying only the writes made during the walk.

Then a tail that no growth rule checkpoints: 2,400 such inserts with
checkpoint-bytes=8M leave about 2.4 MB of log and no checkpoint; once
writes have stopped for a few seconds the backend writes one, and a kill
-9 then a restart load every key from it and replay no record.
"""
import json
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import tabled_harness as h  # noqa: E402

TABLE = "ckpt"


def server(data):
    return h.Server(["--data", data, "--durability", "batch", "--auth", "off",
                     "--log-level", "info",
                     "--backend-option", "checkpoint-bytes=64K",
                     "--backend-option", "compact-step-bytes=4096",
                     "--backend-option", "compact-min-bytes=1G"], backend="flatfile")


def wait_log(srv, text, seconds=20.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if text in srv.stderr_text():
            return True
        time.sleep(0.05)
    return False


class Model:
    def __init__(self):
        self.ents = {}      # (pk, rk) -> dict of properties, or None (deleted)
        self.n = 0

    def put(self, http, conn, pk, rk, merge=False):
        self.n += 1
        props = {"V": self.n, "Pad": "x%d-" % self.n * 40}
        if merge:
            props = {"M": self.n}
        path = http.entity_path(TABLE, pk, rk)
        r = conn.request("MERGE" if merge else "PUT", path, body=props)
        if r.status != 204:
            return "%s %s: %d %s" % ("MERGE" if merge else "PUT", path, r.status, r.body[:200])
        if merge:
            base = dict(self.ents.get((pk, rk)) or {})
            base.update(props)
            props = base
        self.ents[(pk, rk)] = props
        return None

    def delete(self, http, conn, pk, rk):
        r = conn.request("DELETE", http.entity_path(TABLE, pk, rk), headers={"If-Match": "*"})
        if r.status != 204:
            return "DELETE: %d %s" % (r.status, r.body[:200])
        self.ents[(pk, rk)] = None
        return None


def churn(http, conn, model, rounds, start):
    """rounds writes: new keys, replaces and merges of earlier ones, deletes."""
    for i in range(rounds):
        k = start + i
        err = model.put(http, conn, "p%d" % (k % 7), "r%06d" % k)
        if err:
            return err
        if k % 3 == 0 and k >= 10:
            j = k - 10
            pk, rk = "p%d" % (j % 7), "r%06d" % j
            if model.ents.get((pk, rk)) is not None:
                err = (model.delete(http, conn, pk, rk) if k % 2
                       else model.put(http, conn, pk, rk, merge=k % 4 == 0))
                if err:
                    return err
    return None


def verify(http, model):
    bad = []
    for (pk, rk), props in sorted(model.ents.items()):
        r = http.get_entity(TABLE, pk, rk)
        if props is None:
            if r.status != 404:
                bad.append("%s/%s deleted but %d" % (pk, rk, r.status))
            continue
        if r.status != 200:
            bad.append("%s/%s: %d" % (pk, rk, r.status))
            continue
        got = json.loads(r.body)
        for name, v in props.items():
            if got.get(name) != v:
                bad.append("%s/%s.%s: %r, want %r" % (pk, rk, name, got.get(name), v))
    return bad


def main():
    tap = h.Tap()
    tmp = tempfile.mkdtemp(prefix="ffckpt-kill-")
    data = os.path.join(tmp, "data")
    model = Model()
    try:
        for cycle in range(2):
            srv = server(data).start()
            http = h.Http(srv)
            if cycle == 0:
                r = http.create_table(TABLE)
                if r.status != 201:
                    tap.ok(False, "create table: %d" % r.status)
            conn = http.connect()
            base = 100000 * (cycle + 1)
            err = None
            # until a checkpoint is written, then a tail after it
            for step in range(200):
                err = err or churn(http, conn, model, 20, base + 20 * step)
                if "index checkpoint written" in srv.stderr_text() and step >= 5:
                    break
            wrote = wait_log(srv, "index checkpoint written", 1.0)
            err = err or churn(http, conn, model, 150 if cycle == 0 else 40, base + 50000)
            conn.close()
            tap.ok(err is None and wrote,
                   "cycle %d: writes, an index checkpoint, more writes after it" % (cycle + 1),
                   err)
            srv.kill()
            tap.ok(os.path.exists(os.path.join(data, "flatfile.ckpt")),
                   "cycle %d: killed with SIGKILL; the checkpoint is on disk" % (cycle + 1))
            srv = server(data).start()
            loaded = wait_log(srv, "keys from the index checkpoint", 10.0)
            tap.ok(loaded, "cycle %d: the restart loads the checkpoint and replays the log "
                   "after it" % (cycle + 1), srv.stderr_text()[-2000:])
            bad = verify(http_of(srv), model)
            tap.ok(not bad, "cycle %d: every acknowledged write is there (%d entities checked)"
                   % (cycle + 1, len(model.ents)), "\n".join(bad[:20]))
            srv.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    idle_walk(tap)
    idle_tail(tap)
    tap.done()


def long_inserts(tap, srv, n, fill, what):
    """Creates TABLE and inserts n entities with RowKeys of 900 characters
    (four digits, then fill), one connection; checks each answered 204."""
    http = h.Http(srv)
    tap.eq(http.create_table(TABLE).status, 201, "%s: table created" % what)
    bad = 0
    with http.connect() as conn:
        for i in range(n):
            r = conn.request("POST", "/" + TABLE,
                             body={"PartitionKey": "p", "RowKey": "%04d" % i + fill * 896,
                                   "V": i}, headers={"Prefer": "return-no-content"})
            bad += r.status != 204
    tap.eq(bad, 0, "%s: %s inserts answered 204, then none" % (what, "{:,}".format(n)))


def kill_restart(srv, args):
    """kill -9, a new server on the same data; returns it and the keys it
    loaded from the checkpoint and the records it replayed after it
    (None, None when its log says no checkpoint was loaded)."""
    srv.kill()
    srv = h.Server(args, backend="flatfile").start()
    wait_log(srv, "keys from the index checkpoint", 10.0)
    m = re.search(r"opened: (\d+) keys from the index checkpoint, (\d+) records after",
                  srv.stderr_text())
    return (srv,) + ((int(m.group(1)), int(m.group(2))) if m else (None, None))


def idle_walk(tap):
    tmp = tempfile.mkdtemp(prefix="ffckpt-idle-")
    data = os.path.join(tmp, "data")
    args = ["--data", data, "--durability", "batch", "--auth", "off", "--log-level", "info",
            "--backend-option", "checkpoint-bytes=1M",
            "--backend-option", "compact-step-bytes=4096",
            "--backend-option", "compact-min-bytes=1G"]
    try:
        srv = h.Server(args, backend="flatfile").start()
        long_inserts(tap, srv, 1200, "k", "idle walk")
        done = wait_log(srv, "index checkpoint written", 20.0)
        tap.ok(done, "idle walk: the walk the writes began ends without more writes",
               srv.stderr_text()[-1500:])
        srv, keys, after = kill_restart(srv, args)
        # the walk began at about 1 MiB of log (some 1,000 inserts); when
        # it ended before the last inserts, they are replayed after it
        tap.ok(keys is not None and keys >= 900 and after < 300,
               "idle walk: after kill -9 the restart loads a checkpoint of the keys its walk "
               "passed and replays only the writes made during or after it",
               srv.stderr_text()[-1500:])
        r = h.Http(srv).get_entity(TABLE, "p", "1199" + "k" * 896)
        tap.eq(r.status, 200, "idle walk: and the last insert reads back")
        srv.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def idle_tail(tap):
    tmp = tempfile.mkdtemp(prefix="ffckpt-tail-")
    data = os.path.join(tmp, "data")
    args = ["--data", data, "--durability", "batch", "--auth", "off", "--log-level", "info",
            "--backend-option", "checkpoint-bytes=8M"]
    try:
        srv = h.Server(args, backend="flatfile").start()
        long_inserts(tap, srv, 2400, "t", "idle tail")
        begun = wait_log(srv, "writes stopped with", 30.0)
        done = begun and wait_log(srv, "index checkpoint written", 30.0)
        tap.ok(begun and done, "idle tail: a checkpoint is written once writes have stopped",
               srv.stderr_text()[-1500:])
        srv, keys, after = kill_restart(srv, args)
        tap.ok(keys is not None and keys >= 2400 and after == 0,
               "idle tail: after kill -9 the restart loads every key from it and replays "
               "no record", srv.stderr_text()[-1500:])
        r = h.Http(srv).get_entity(TABLE, "p", "2399" + "t" * 896)
        tap.eq(r.status, 200, "idle tail: and the last insert reads back")
        srv.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def http_of(srv):
    return h.Http(srv)


if __name__ == "__main__":
    sys.exit(main())
