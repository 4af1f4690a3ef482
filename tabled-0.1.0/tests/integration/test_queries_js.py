#!/usr/bin/python3
"""Integration test: Query Entities / Query Tables paging with the
JavaScript SDK (@azure/data-tables byPage), by tests/js/test_queries_js.mjs.

Finds or installs the SDK exactly as test_sdk_js.py does (its
find_or_install is reused), starts one normal server and one with
--scan-budget, runs node with both connection strings and relays the TAP
lines renumbered into this program's own (test_sdk_js.run_node)."""
import os
import shutil
import sys

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402
import test_sdk_js  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.normpath(os.path.join(HERE, "..", "js", "test_queries_js.mjs"))
NODE_TIMEOUT = 180
BUDGET = 100


def main():
    tap = h.Tap()
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        tap.ok(False, "node is installed (needed for the JS SDK test)",
               "neither node nor nodejs found in PATH=%s" % os.environ.get("PATH"))
        tap.done()
    mods = os.environ.get("TABLED_JS_DEPS") or test_sdk_js.find_or_install(tap)
    if mods is None:
        tap.done()
    servers = []
    for args in ([], ["--scan-budget", str(BUDGET)]):
        try:
            srv = h.Server(args=args).start()
        except h.ServerError as e:
            tap.ok(False, "server %s starts" % " ".join(args), str(e))
            for s in servers:
                s.kill()
            tap.done()
        tap.ok(True, "server %s starts on port %d" % (" ".join(args), srv.port))
        servers.append(srv)
    h.watchdog(NODE_TIMEOUT + 30, servers[0], tap)
    env = dict(os.environ, TABLED_CONN=servers[0].conn_str(),
               TABLED_CONN_BUDGET=servers[1].conn_str(), TABLED_BUDGET=str(BUDGET),
               TABLED_JS_DEPS=mods, NODE_NO_WARNINGS="1")
    test_sdk_js.run_node(tap, node, SCRIPT, env, NODE_TIMEOUT, 20)
    for s in servers:
        s.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
