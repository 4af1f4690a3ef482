#!/usr/bin/python3
"""test_protocol_backends.py - the protocol test suite on every backend.

Runs the integration tests that make check runs on the memory backend
(raw HTTP conformance, $batch, queries, the Python SDK, ACLs and service
properties) again with each durable backend and with the example plug-in,
and with the test plug-in whose every call completes later from a timer
(deferred, backends/examples/deferred.c), by setting TABLED_BACKEND_ARGS
for the harness (tests/integration/tabled_harness.py), and on the postgres
backend against a private PostgreSQL (tests/integration/pg_harness.py)
where every server start gets a fresh, empty database
(TABLED_BACKEND_PREPARE runs "pg_harness.py newdb"). Their TAP is
relayed, each line named with the backend and the test file. The plug-in appends its call counts at close; a test
that the counts are there proves the requests really went through it.

  test_protocol_backends.py [BACKEND...]
      (default: leveldb flatfile plugin deferred postgres; postgres is
      skipped with a note when tabled was built without libpq or the
      PostgreSQL server binaries are missing)

TABLED and TOP_BUILDDIR as under make check (tests/run.sh)."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INTEG = HERE
sys.path.insert(0, INTEG)
import tabled_harness as h  # noqa: E402
import pg_harness  # noqa: E402

SCRIPTS = ["test_http.py", "test_batch.py", "test_queries.py", "test_sdk_python.py",
           "test_acl_props.py"]


def plugin_path(name="counting"):
    top = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
    return os.path.abspath(os.path.join(top, "backends", "examples", ".libs",
                                        "lib%s.so" % name))


def relay(tap, label, cmd, env, timeout=600):
    """Runs one TAP program and relays its checks; returns its status."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        tap.ok(False, "%s: finished within %d s" % (label, timeout))
        return -1
    n = 0
    last_fail = None
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        m = re.match(r"^(not ok|ok)\b(?:\s+\d+)?\s*(?:-\s*)?(.*)$", line)
        if m:
            n += 1
            tap.ok(m.group(1) == "ok", "%s: %s" % (label, m.group(2)))
            last_fail = None if m.group(1) == "ok" else tap.n
        elif line.startswith("#") and last_fail is not None:
            tap.diag(line[1:].strip())
    tap.ok(p.returncode == 0 and n > 0, "%s: exited 0 after %d checks" % (label, n),
           "status %s" % p.returncode)
    return p.returncode


PG = None          # the private PostgreSQL of the postgres runs


def postgres_proof(tap):
    """Checks that the postgres runs really stored their data there:
    databases were created per server start and hold entities."""
    dbs = [d for d in PG.psql("SELECT datname FROM pg_database").split()
           if d.startswith("t_")]
    rows = 0
    for d in dbs:
        try:
            rows += int(PG.psql("SELECT count(*) FROM tabled_kv", d).strip() or 0)
        except (pg_harness.PgError, ValueError):
            pass        # a server start that failed before its schema
    tap.ok(len(dbs) >= len(SCRIPTS) and rows > 100,
           "[postgres] the servers used their own databases (%d databases, %d rows left)"
           % (len(dbs), rows))
    PG.cleanup()


def postgres_env(tap):
    """Starts the private PostgreSQL for the postgres runs; returns the
    environment that gives every tabled start a fresh database, or None
    (with a note) when the backend or the server binaries are missing."""
    top = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
    reason = pg_harness.skip_reason(top)
    if reason:
        tap.diag("[postgres] %s: not run" % reason)
        return None
    global PG
    pg = PG = pg_harness.PgServer().create()
    state = os.path.join(pg.dir, "harness.json")
    with open(state, "w") as f:
        json.dump(pg.state(), f)
    prepare = "%s newdb --tabled-args" % shlex.quote(os.path.join(INTEG, "pg_harness.py"))
    return dict(os.environ, PG_HARNESS_STATE=state, TABLED_BACKEND_PREPARE=prepare)


def main():
    tap = h.Tap()
    names = sys.argv[1:] or ["leveldb", "flatfile", "plugin", "deferred", "postgres"]
    tmp = tempfile.mkdtemp(prefix="tabled-protocol-")
    report = os.path.join(tmp, "counts.txt")
    for name in names:
        base_env = os.environ
        if name == "postgres":
            base_env = postgres_env(tap)
            if base_env is None:
                continue
            args = None
        elif name == "plugin":
            so = plugin_path()
            if not os.path.exists(so):
                tap.ok(False, "the example plug-in is built: %s" % so)
                continue
            args = "--backend %s --backend-option counting-report=%s" % (so, report)
        elif name == "deferred":
            so = plugin_path("deferred")
            if not os.path.exists(so):
                tap.ok(False, "the deferred test plug-in is built: %s" % so)
                continue
            args = "--backend %s --backend-option deferred-ms=0" % so
        else:
            args = "--backend %s" % name
        for script in SCRIPTS:
            path = os.path.join(INTEG, script)
            if not os.path.exists(path):
                tap.diag("%s not found, skipped" % script)
                continue
            env = dict(base_env)
            if args:
                env["TABLED_BACKEND_ARGS"] = args
            relay(tap, "[%s] %s" % (name, script), [path], env)
            if name == "plugin" and script == "test_http.py":
                counts = {}
                try:
                    with open(report) as f:
                        for ln in f:
                            k, _, v = ln.partition(" ")
                            counts[k] = counts.get(k, 0) + int(v)
                except (OSError, ValueError):
                    pass
                tap.ok(counts.get("apply", 0) > 100 and counts.get("iter_next", 0) > 100,
                       "[plugin] the requests went through the plug-in (%d applies, %d gets, "
                       "%d iter_next)" % (counts.get("apply", 0), counts.get("get", 0),
                                          counts.get("iter_next", 0)), repr(counts))
    if PG:
        postgres_proof(tap)
    shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
