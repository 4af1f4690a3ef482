#!/usr/bin/python3
"""Integration test: the kit for storage backend plug-in authors
(doc/plugins.md), as an author outside the tree uses it.

  - make install DESTDIR=tmp; the two example plug-ins
    (examples/plugin-minimal, examples/plugin-sqlite), copied away from
    the tree, are built by their own Makefiles with only the installed
    headers, found through pkg-config (PKG_CONFIG_PATH at the staged
    install);
  - the installed tabled-backend-check passes on each (the SQLite one
    with --durable: reopen, kill -9, disk full, failed fsync);
  - it fails on the minimal example built with BREAK_ORDER (keys out of
    order), on a plug-in the loader refuses and on a usage error, so this
    test cannot pass by checking nothing;
  - the installed tabled serves through each example: create a table,
    insert, get and query entities (the SQLite one again after a restart).
Prints TAP."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

TOP_BUILDDIR = os.path.abspath(os.environ.get("TOP_BUILDDIR", "."))
TOP_SRCDIR = os.path.abspath(os.environ.get("TOP_SRCDIR", "."))


clean_env = h.clean_env
make = h.run_make


def check(tap, argv, what):
    """Runs tabled-backend-check; returns (exit status, output, summary
    (passed, failed) or None)."""
    p = subprocess.run(argv, capture_output=True, timeout=900,
                       env=clean_env(ASAN_OPTIONS="abort_on_error=0:detect_leaks=1"))
    out = p.stdout.decode("utf-8", "replace")
    m = re.search(r"^(\d+) passed, (\d+) failed$", out.strip().splitlines()[-1] if out.strip()
                  else "", re.M)
    summary = (int(m.group(1)), int(m.group(2))) if m else None
    if p.returncode != 0:
        bad = [l for l in out.splitlines() if l.startswith("not ok")][:10]
        tap.diag("%s: exit %d\n%s\n%s" % (what, p.returncode, "\n".join(bad),
                                          p.stderr.decode("utf-8", "replace")[-1500:]))
    return p.returncode, out, summary


def serve(tap, so, label, data, args=()):
    """The installed tabled with --backend so: a table, entities, a query."""
    s = h.Server(args=["--backend", so, "--data", data] + list(args), backend=None)
    s.start()
    try:
        c = h.Http(s)
        r = c.create_table("kit")
        tap.eq(r.status, 201, "[%s] the installed tabled creates a table through it" % label)
        codes = [c.insert("kit", {"PartitionKey": "p", "RowKey": "r%02d" % i, "n": i}).status
                 for i in range(12)]
        tap.eq(codes, [201] * 12, "[%s] 12 entities inserted" % label)
        r = c.get_entity("kit", "p", "r07")
        tap.ok(r.status == 200 and r.json().get("n") == 7, "[%s] get returns an entity" % label,
               r)
        r = c.get("/kit()?$filter=n%20ge%205%20and%20n%20lt%209")
        rows = r.json().get("value", []) if r.status == 200 else []
        tap.eq([e.get("RowKey") for e in rows], ["r05", "r06", "r07", "r08"],
               "[%s] a query returns the matching entities in order" % label)
        r = c.insert("kit", {"PartitionKey": "p", "RowKey": "r03", "n": 3})
        tap.eq(r.status, 409, "[%s] inserting an existing entity is a conflict" % label)
    finally:
        rc, _ = s.stop()
    tap.eq(rc, 0, "[%s] clean stop" % label)


def main():
    tap = h.Tap()
    h.watchdog(1500, tap=tap)
    tmp = tempfile.mkdtemp(prefix="tabled-kit-")
    dest = os.path.join(tmp, "dest")
    try:
        p = make("print-install-dirs")
        dirs = dict(l.split("=", 1) for l in p.stdout.decode().splitlines() if "=" in l)
        p = make("install", "DESTDIR=" + dest)
        tap.eq(p.returncode, 0, "make install DESTDIR=... succeeds")
        if p.returncode:
            tap.diag(p.stderr.decode()[-3000:])
            return tap.done()
        checker = dest + dirs["bindir"] + "/tabled-backend-check"
        tap.ok(os.access(checker, os.X_OK), "tabled-backend-check is installed in bindir")
        env = clean_env(PKG_CONFIG_PATH=dest + dirs["pkgconfigdir"],
                        PKG_CONFIG_SYSROOT_DIR=dest, BACKEND_CHECK=checker)

        built = {}
        for ex, so in (("plugin-minimal", "minimal.so"), ("plugin-sqlite", "sqlite.so")):
            src = os.path.join(tmp, ex)
            shutil.copytree(os.path.join(TOP_SRCDIR, "examples", ex), src)
            for f in os.listdir(src):       # nothing but the example's own files
                if f.endswith(".so"):
                    os.remove(os.path.join(src, f))
            p = make(cwd=src, env=env)
            ok = p.returncode == 0 and os.path.exists(os.path.join(src, so))
            tap.ok(ok, "%s builds out of tree with its Makefile, through pkg-config "
                       "against the installed headers" % ex, p.stderr.decode()[-2000:])
            if ok:
                built[ex] = os.path.join(src, so)

        minimal = built.get("plugin-minimal")
        if minimal:
            rc, out, summary = check(tap, [checker, minimal], "minimal")
            tap.ok(rc == 0 and summary and summary[0] > 150 and summary[1] == 0,
                   "tabled-backend-check passes on the minimal example (%s)" % (summary,))
            tap.ok("[model]" in out and "random operations agree with the model" in out,
                   "... the model suite ran on it")
        sqlite = built.get("plugin-sqlite")
        if sqlite:
            rc, out, summary = check(tap, [checker, "--durable", sqlite], "sqlite")
            tap.ok(rc == 0 and summary and summary[0] > 200 and summary[1] == 0,
                   "tabled-backend-check --durable passes on the SQLite example (%s)"
                   % (summary,))
            tap.ok(re.search(r"^ok \d+ - \[sqlite\] kill \(batch\)", out, re.M) and
                   re.search(r"^ok \d+ - \[sqlite\] disk full \(sync\)", out, re.M),
                   "... including the kill -9 and disk-full checks")

        # the checker must fail on a broken plug-in
        src = os.path.join(tmp, "plugin-minimal")
        p = make("BREAK=1", "minimal.so", "-B", cwd=src, env=env)
        broken = os.path.join(src, "minimal.so")
        tap.eq(p.returncode, 0, "the minimal example builds with BREAK_ORDER")
        if p.returncode == 0:
            rc, out, summary = check(tap, [checker, broken], "broken (expected)")
            tap.ok(rc == 1 and summary and summary[1] > 0 and
                   re.search(r"^not ok \d+ - \[minimal\] order:", out, re.M),
                   "tabled-backend-check fails on keys out of order (%s)" % (summary,))
        bad = os.path.join(TOP_BUILDDIR, "tests/unit/.libs/libbadplugin.so")
        if os.path.exists(bad):
            p = subprocess.run([checker, bad], capture_output=True, timeout=60,
                               env=clean_env())
            err = p.stderr.decode()
            tap.ok(p.returncode == 1 and "would refuse" in err and "doc/plugins.md" in err,
                   "a plug-in the loader refuses fails, and says what to do", err)
        p = subprocess.run([checker, "--no-such-flag"], capture_output=True, timeout=60)
        tap.ok(p.returncode == 2 and "--help" in p.stderr.decode(),
               "a usage error exits 2 and points at --help", p.stderr.decode())
        p = subprocess.run([checker, "--help"], capture_output=True, timeout=60)
        tap.ok(p.returncode == 0 and "--durable" in p.stdout.decode() and
               "--backend-option" in p.stdout.decode(), "--help describes the options")

        # the installed tabled serves through each example
        os.environ["TABLED"] = dest + dirs["bindir"] + "/tabled"
        os.environ.pop("TABLED_BACKEND_ARGS", None)
        os.environ.pop("TABLED_BACKEND_PREPARE", None)
        if minimal:
            make("minimal.so", "-B", cwd=src, env=env)     # the correct build again
            tap.run(serve, tap, minimal, "minimal", os.path.join(tmp, "data-minimal"))
        if sqlite:
            data = os.path.join(tmp, "data-sqlite")
            tap.run(serve, tap, sqlite, "sqlite", data)
            s = h.Server(args=["--backend", sqlite, "--data", data], backend=None)
            s.start()
            try:
                r = h.Http(s).get_entity("kit", "p", "r11")
                tap.ok(r.status == 200 and r.json().get("n") == 11,
                       "[sqlite] the entities are there after a restart", r)
            finally:
                s.stop()
            tap.ok(os.path.exists(os.path.join(data, "tabled.sqlite")),
                   "[sqlite] the data lives in DATA/tabled.sqlite")
            # its option rows (interface version 4): listed, and checked
            # by tabled before the plug-in opens anything
            tabled = os.environ["TABLED"]
            p = subprocess.run([tabled, "--backend", sqlite, "--help"], capture_output=True,
                               timeout=60)
            out = p.stdout.decode()
            tap.ok(p.returncode == 0 and "sqlite-cache-kb=N" in out and "64..16777216" in out,
                   "[sqlite] tabled --backend PLUGIN --help lists its option rows", out)
            for opt, name in (("sqlite-cache-k=100", "sqlite-cache-k"),
                              ("sqlite-cache-kb=5", "sqlite-cache-kb"),
                              ("sqlite-cache-kb=lots", "sqlite-cache-kb")):
                fresh = os.path.join(tmp, "data-refused")
                p = subprocess.run([tabled, "--backend", sqlite, "--data", fresh, "--port", "0",
                                    "--backend-option", opt], capture_output=True, timeout=60)
                err = p.stderr.decode()
                tap.ok(p.returncode == 2 and "'%s'" % name in err and
                       not os.path.exists(os.path.join(fresh, "tabled.sqlite")),
                       "[sqlite] --backend-option %s is refused by tabled, naming the option, "
                       "before the store is opened" % opt, err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
