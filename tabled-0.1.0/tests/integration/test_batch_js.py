#!/usr/bin/python3
"""Integration test: entity group transactions through the JavaScript Azure
Tables SDK (@azure/data-tables submitTransaction, tests/js/package.json).

Uses the SDK in tests/js/node_modules of the source tree, or the one in
tests/js-deps/node_modules of the build tree, installing it there with npm
when missing or stale (test_sdk_js.find_or_install).  Then starts tabled,
runs node on tests/js/test_batch_js.mjs with the printed connection string
in TABLED_CONN, and relays its TAP lines renumbered into this program's own
(test_sdk_js.run_node).  A missing node or npm is a failure, not a skip."""
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402
import test_sdk_js  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_JS = os.path.normpath(os.path.join(HERE, "..", "js"))
NODE_TIMEOUT = 180


def main():
    tap = h.Tap()
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        tap.ok(False, "node is installed (needed for the JS SDK batch test)",
               "neither node nor nodejs found in PATH=%s" % os.environ.get("PATH"))
        tap.done()
    p = subprocess.run([node, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=30)
    version = p.stdout.decode().strip()
    m = re.match(r"^v(\d+)\.", version)
    tap.ok(m is not None and int(m.group(1)) >= 18, "node %s is 18 or newer" % version)
    mods = test_sdk_js.find_or_install(tap)
    if mods is None:
        tap.done()
    try:
        srv = h.Server().start()
    except h.ServerError as e:
        tap.ok(False, "server starts", str(e))
        tap.done()
    tap.ok(True, "server starts on port %d" % srv.port)
    h.watchdog(NODE_TIMEOUT + 30, srv, tap)
    env = dict(os.environ, TABLED_CONN=srv.conn_str_printed or srv.conn_str(),
               TABLED_JS_DEPS=mods, NODE_NO_WARNINGS="1")
    test_sdk_js.run_node(tap, node, os.path.join(SRC_JS, "test_batch_js.mjs"), env, NODE_TIMEOUT, 20,
                         "the JS batch test")
    srv.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
