#!/usr/bin/python3
"""Integration test: the JavaScript Azure Tables SDK (@azure/data-tables,
tests/js/package.json) against tabled.

Finds the SDK in tests/js/node_modules of the source tree, or installs it
with npm into tests/js-deps/node_modules of the build tree (the copied
package.json and lock file are removed afterwards, so only the ignored
node_modules directory stays).  Then starts tabled, runs node on
tests/js/test_sdk_js.mjs with the printed connection string in TABLED_CONN,
and relays its TAP lines renumbered into this program's own.  A missing
node or npm is a failure, not a skip.

find_or_install() and run_node() (run a .mjs, relay its TAP renumbered,
kill it after a time limit) are shared by the other JS SDK tests."""
import os
import re
import shutil
import subprocess
import sys
import threading

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_JS = os.path.normpath(os.path.join(HERE, "..", "js"))
NPM_TIMEOUT = 300
NODE_TIMEOUT = 120
STAMP = ".tabled-package.json"   # copy of the package.json an install used


def build_dir():
    top = os.environ.get("TOP_BUILDDIR") or os.path.join(HERE, "..", "..")
    return os.path.normpath(os.path.join(top, "tests", "js-deps"))


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def find_or_install(tap):
    """Returns the node_modules directory holding @azure/data-tables, or
    None after reporting why not."""
    pkg = read(os.path.join(SRC_JS, "package.json"))
    if pkg is None:
        tap.ok(False, "tests/js/package.json exists", SRC_JS)
        return None
    src_mods = os.path.join(SRC_JS, "node_modules")
    if os.path.isdir(os.path.join(src_mods, "@azure", "data-tables")):
        tap.ok(True, "use the JS SDK in tests/js/node_modules")
        return src_mods
    dest = build_dir()
    mods = os.path.join(dest, "node_modules")
    if os.path.isdir(os.path.join(mods, "@azure", "data-tables")) and \
            read(os.path.join(mods, STAMP)) == pkg:
        tap.ok(True, "use the JS SDK installed in %s" % mods)
        return mods
    npm = shutil.which("npm")
    if not npm:
        tap.ok(False, "npm is installed (needed to install @azure/data-tables)",
               "npm not found in PATH=%s; install Debian's npm package" % os.environ.get("PATH"))
        return None
    os.makedirs(dest, exist_ok=True)
    shutil.copyfile(os.path.join(SRC_JS, "package.json"), os.path.join(dest, "package.json"))
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
    good = rc == 0 and os.path.isdir(os.path.join(mods, "@azure", "data-tables"))
    tap.ok(good, "npm install @azure/data-tables into %s" % dest, out[-3000:])
    if not good:
        return None
    with open(os.path.join(mods, STAMP), "wb") as f:
        f.write(pkg)
    return mods


def run_node(tap, node, script, env, timeout, min_checks, what="the JS test"):
    """Runs node on script with env, relays its TAP lines renumbered into
    tap (names prefixed "js: ", other lines as comments), kills it after
    timeout seconds, then checks that it exited 0 and reported at least
    min_checks checks (the second check is named after what).  Returns the
    exit status."""
    child = subprocess.Popen([node, script], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    killer = threading.Timer(timeout, child.kill)
    killer.daemon = True
    killer.start()
    reported = 0
    for raw in iter(child.stdout.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        m = re.match(r"^(not ok|ok)\b(?:\s+\d+)?\s*(?:-\s*)?(.*)$", line)
        if m:
            reported += 1
            tap.ok(m.group(1) == "ok", "js: " + m.group(2))
        elif not re.match(r"^1\.\.\d+", line):
            tap.diag(line)
    rc = child.wait()
    killer.cancel()
    tap.ok(rc == 0, "node %s exited with status 0" % os.path.basename(script),
           "status %s (a negative status is a signal; -9 is the %d s limit)" % (rc, timeout))
    tap.ok(reported >= min_checks, "%s reported its checks (%d)" % (what, reported))
    return rc


def main():
    tap = h.Tap()
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        tap.ok(False, "node is installed (needed for the JS SDK test)",
               "neither node nor nodejs found in PATH=%s; install Debian's nodejs package"
               % os.environ.get("PATH"))
        tap.done()
    p = subprocess.run([node, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=30)
    version = p.stdout.decode().strip()
    m = re.match(r"^v(\d+)\.", version)
    tap.ok(m is not None and int(m.group(1)) >= 18, "node %s is 18 or newer" % version)
    mods = find_or_install(tap)
    if mods is None:
        tap.done()
    try:
        srv = h.Server().start()
    except h.ServerError as e:
        tap.ok(False, "server starts", str(e))
        tap.done()
    tap.ok(True, "server starts on port %d" % srv.port)
    tap.ok(srv.conn_str_printed is not None, "the server printed a connection string",
           srv.stdout_lines)
    h.watchdog(NODE_TIMEOUT + 30, srv, tap)
    env = dict(os.environ, TABLED_CONN=srv.conn_str_printed or srv.conn_str(),
               TABLED_JS_DEPS=mods, NODE_NO_WARNINGS="1")
    run_node(tap, node, os.path.join(SRC_JS, "test_sdk_js.mjs"), env, NODE_TIMEOUT, 30)
    srv.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
