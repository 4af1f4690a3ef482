#!/usr/bin/python3
"""Integration test: a real legacy client that speaks only AtomPub XML
against tabled (issue 20): npm's azure 0.7.19, whose TableService sends
x-ms-version 2011-08-18, Atom entries and Atom Accept headers, and parses
Atom feeds with xml2js.  tests/js/legacy_atom/test_legacy_atom.cjs drives a
full lifecycle (tables, every entity operation, typed values, a query with
continuation, a batch, errors).

The package is installed with npm into tests/js-deps/legacy-atom of the
build tree (tests/js/legacy_atom/node_modules of the source tree is used
when present); the copied package.json and lock file are removed again.
A missing node or npm is a failure, not a skip.  Prints TAP."""
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402
import test_sdk_js  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", "js", "legacy_atom"))
NPM_TIMEOUT = 300
NODE_TIMEOUT = 120
STAMP = ".tabled-package.json"


def find_or_install(tap):
    """The node_modules directory holding azure 0.7.19, or None after
    reporting why not."""
    pkg = test_sdk_js.read(os.path.join(SRC, "package.json"))
    if pkg is None:
        tap.ok(False, "tests/js/legacy_atom/package.json exists", SRC)
        return None
    src_mods = os.path.join(SRC, "node_modules")
    if os.path.isdir(os.path.join(src_mods, "azure")):
        return src_mods
    dest = os.path.join(test_sdk_js.build_dir(), "legacy-atom")
    mods = os.path.join(dest, "node_modules")
    if os.path.isdir(os.path.join(mods, "azure")) and \
            test_sdk_js.read(os.path.join(mods, STAMP)) == pkg:
        tap.ok(True, "use the legacy client installed in %s" % mods)
        return mods
    npm = shutil.which("npm")
    if not npm:
        tap.ok(False, "npm is installed (needed to install the legacy azure package)")
        return None
    os.makedirs(dest, exist_ok=True)
    shutil.copyfile(os.path.join(SRC, "package.json"), os.path.join(dest, "package.json"))
    try:
        p = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
                           cwd=dest, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=NPM_TIMEOUT)
        out, rc = p.stdout.decode("utf-8", "replace"), p.returncode
    except subprocess.TimeoutExpired:
        out, rc = "npm install did not finish in %d s" % NPM_TIMEOUT, -1
    finally:
        for name in ("package.json", "package-lock.json"):
            try:
                os.remove(os.path.join(dest, name))
            except OSError:
                pass
    good = rc == 0 and os.path.isdir(os.path.join(mods, "azure"))
    tap.ok(good, "npm install azure@0.7.19 into %s" % dest, out[-3000:])
    if not good:
        return None
    with open(os.path.join(mods, STAMP), "wb") as f:
        f.write(pkg)
    return mods


def main():
    tap = h.Tap()
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        tap.ok(False, "node is installed (needed for the legacy Atom client)")
        tap.done()
    mods = find_or_install(tap)
    if mods is None:
        tap.done()
    try:
        srv = h.Server().start()
    except h.ServerError as e:
        tap.ok(False, "server starts", str(e))
        tap.done()
    h.watchdog(NODE_TIMEOUT + 30, srv, tap)
    env = dict(os.environ, TABLED_LEGACY_DEPS=mods,
               TABLED_HOST="http://%s:%d" % (srv.host, srv.port), NODE_NO_WARNINGS="1")
    test_sdk_js.run_node(tap, node, os.path.join(SRC, "test_legacy_atom.cjs"), env,
                         NODE_TIMEOUT, 25, "the legacy Atom client test")
    srv.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
