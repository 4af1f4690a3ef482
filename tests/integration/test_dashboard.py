#!/usr/bin/python3
"""Integration test: the advisor dashboard (GET /dashboard) in a real
headless Chromium, driven over the DevTools protocol.

A server with the admin listener runs a hot-partition workload (the Python
SDK reading one partition over and over, in a thread, while the page is
open) next to a few other patterns. The page must load with no console
errors, no exceptions and no failed network requests, show the
hot-partition finding naming the table and partition, fill its heat map,
and a screenshot is saved as tests/logs/dashboard.png (a test artifact,
not committed). The layout is read from the DOM: an idle server says "No
traffic yet"; then one compact row per table (heat map with its colour
scale, query-shape bar, finding pills), Why/Fix folded in <details>, long
time-based keys shortened in the middle with the full key as title, and
the "~N other partitions" row with N from the JSON. `--demo PNG` makes
doc/advisor-dashboard.png and the report in doc/advisor.md.

Chromium is Debian's `chromium` package, with python3-websocket for the
DevTools connection: when either is missing and the test runs as root it
installs them with apt-get; otherwise (or when that fails) it reports a
skip with the reason.
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

PACKAGES = ["chromium", "python3-websocket"]
LOGDIR = os.path.join(os.environ.get("TOP_BUILDDIR") or
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."),
                      "tests", "logs")


def have_tools():
    try:
        import websocket  # noqa: F401
    except ImportError:
        return False
    return shutil.which("chromium") is not None


def install_tools():
    """apt-get install the packages (root only); returns an error text or None."""
    if have_tools():
        return None
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "chromium / python3-websocket are not installed and this is not root"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "-qq"] + PACKAGES
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0:
        subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=300", "update", "-qq"],
                       capture_output=True, env=env, timeout=600)
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0 or not have_tools():
        return "apt-get install %s failed: %s" % (" ".join(PACKAGES), p.stderr[-500:])
    return None


class Chromium:
    """A headless Chromium with a DevTools connection to one page."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="tabled-chromium-")
        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-extensions", "--hide-scrollbars",
             "--user-data-dir=" + self.tmp, "--remote-debugging-port=0",
             "--window-size=1400,1500", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = os.path.join(self.tmp, "DevToolsActivePort")
        end = time.monotonic() + 30
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if time.monotonic() > end or self.proc.poll() is not None:
                raise RuntimeError("chromium did not start (DevToolsActivePort missing)")
            time.sleep(0.1)
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port,
                                                   timeout=10))
        page = [t for t in targets if t.get("type") == "page"][0]
        import websocket
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=10,
                                              suppress_origin=True)
        self.next_id = 0
        self.events = []
        for m in ("Runtime.enable", "Log.enable", "Page.enable", "Network.enable"):
            self.call(m)

    def call(self, method, **params):
        """Sends one command and returns its result (events are kept)."""
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        return r.get("result", {}).get("value")

    def problems(self):
        """Console errors/warnings, exceptions, failed loads and error log entries."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append("console.%s: %s" % (p["type"], [a.get("value") for a in p.get("args", [])]))
            elif m == "Runtime.exceptionThrown":
                out.append("exception: %s" % p.get("exceptionDetails", {}).get("text"))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append("log: %s %s" % (p["entry"].get("text"), p["entry"].get("url", "")))
            elif m == "Network.loadingFailed":
                out.append("load failed: %s" % p.get("errorText"))
            elif m == "Network.responseReceived" and p.get("response", {}).get("status", 200) >= 400:
                out.append("HTTP %s %s" % (p["response"]["status"], p["response"]["url"]))
        return out

    def requested_hosts(self, host):
        """URLs of requests that went anywhere but host (the admin listener)."""
        urls = [e["params"]["request"]["url"] for e in self.events
                if e["method"] == "Network.requestWillBeSent"]
        return [u for u in urls if not u.startswith("http://%s/" % host) and
                not u.startswith("data:")]

    def close(self):
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001
            pass
        self.proc.kill()
        self.proc.wait(10)
        shutil.rmtree(self.tmp, ignore_errors=True)


def admin_port(srv):
    for line in srv.stdout_lines:
        m = re.search(r"Admin endpoint:\s+http://[^:]+:(\d+)/metrics", line)
        if m:
            return int(m.group(1))
    raise h.ServerError("no Admin endpoint line")


def spread(i):
    return "%08x" % ((i * 2654435761) & 0xffffffff)


def order_key(i):
    """A long, time-based PartitionKey, increasing with i: the keys differ
    only near their end, where a shortened display must keep them apart."""
    return "2026-11-28T10:%02d:%02d.%03dZ" % (i // 60, i % 60, (i * 7) % 1000)


def workload(srv, stop, errors, orders=150):
    """Other patterns once, then reads of one partition until stop is set."""
    from azure.data.tables import TableServiceClient
    try:
        svc = TableServiceClient.from_connection_string(srv.conn_str(), retry_total=0)
        c = svc.create_table("Customers")
        for p in range(8):
            c.submit_transaction([("create", {"PartitionKey": spread(p), "RowKey": "%03d" % r,
                                              "Email": "u%d@example.com" % r})
                                  for r in range(40)])
        for i in range(6):
            list(c.query_entities("Email eq 'u%d@example.com'" % i))
        for i in range(200):
            c.get_entity(spread(i % 8), "%03d" % (i % 40))
        o = svc.create_table("Orders")
        for i in range(orders):
            o.create_entity({"PartitionKey": order_key(i), "RowKey": "order"})
        t = svc.create_table("Telemetry")
        t.create_entity({"PartitionKey": "sensor-42", "RowKey": "0", "V": 0})
        for i in range(60):
            t.create_entity({"PartitionKey": spread(1000 + i), "RowKey": "0", "V": i})
        n = 0
        while not stop.is_set():
            t.get_entity("sensor-42", "0")
            if n % 3 == 0:
                t.get_entity(spread(1000 + n % 60), "0")
            if n % 20 == 0:
                t.upsert_entity({"PartitionKey": "sensor-42", "RowKey": "0", "V": n})
            n += 1
    except Exception as e:  # noqa: BLE001
        errors.append(repr(e))


def advisor_json(host):
    return json.load(urllib.request.urlopen("http://%s/advisor" % host, timeout=10))


def wait_refresh(browser):
    """Waits until the page has rendered a /advisor read made after now."""
    for _ in range(2):
        before = browser.eval("document.getElementById('status').textContent")
        end = time.monotonic() + 30
        while time.monotonic() < end and \
                browser.eval("document.getElementById('status').textContent") == before:
            time.sleep(0.2)


# The layout, read from the DOM: one compact row per table with its heat
# map (and colour scale), query-shape bar and finding pills; Why/Fix folded;
# long keys shortened in the middle with the full key as title; the row of
# the partitions not listed counting them.
LAYOUT_JS = r"""(function () {
  var out = {rows: [], findings: [], keys: [], others: {}};
  document.querySelectorAll('.card.table').forEach(function (r) {
    out.rows.push({table: r.getAttribute('data-table'),
      heat: r.querySelectorAll('.trow .heat .cell').length,
      scale: !!r.querySelector('.trow .scale .ramp') &&
             /entities\/s/.test((r.querySelector('.trow .scale') || {}).textContent || ''),
      shape: r.querySelectorAll('.trow .shape [data-shape]').length,
      shapetext: (r.querySelector('.trow .shapebox') || {}).textContent || '',
      pills: Array.prototype.map.call(r.querySelectorAll('.trow .pills .pill'),
               function (p) { return p.className + ':' + p.textContent; })});
    var o = r.querySelector('tr.others td');
    if (o) out.others[r.getAttribute('data-table')] = o.textContent;
  });
  document.querySelectorAll('.finding').forEach(function (f) {
    var d = f.querySelector('details');
    out.findings.push({kind: f.getAttribute('data-kind'), folded: !!d && !d.open,
      why: !!d && /Why:/.test(d.textContent) && /Fix:/.test(d.textContent),
      summary: !!d && !!d.querySelector('summary')});
  });
  document.querySelectorAll('.key').forEach(function (k) {
    out.keys.push([k.textContent, k.getAttribute('title')]);
  });
  return JSON.stringify(out);
})()"""


def check_layout(tap, browser, srv, host, stop, th):
    """The DOM checks of the page's layout, on the final (stopped) traffic."""
    stop.set()
    th.join(60)
    wait_refresh(browser)
    doc = advisor_json(host)
    got = json.loads(browser.eval(LAYOUT_JS))
    tables = sorted(t["table"] for t in doc["tables"])
    tap.eq(sorted(r["table"] for r in got["rows"]), tables, "one row per table")
    reads = dict((t["table"], t["requests"]["get"] + sum(q["count"] for q in
                                                          t["queries"].values()))
                 for t in doc["tables"])
    tap.ok(all(r["heat"] > 0 and r["scale"] and r["pills"] and
               (r["shape"] > 0 if reads[r["table"]] else "No queries" in r["shapetext"])
               for r in got["rows"]) and len(got["rows"]) == 3 and
           [r["shape"] for r in got["rows"] if r["table"] == "Customers"] == [2],
           "each row has a heat map with its colour scale in entities/s, a query-shape "
           "bar (or says there were no reads) and finding pills", got["rows"])
    tele = [r for r in got["rows"] if r["table"] == "Telemetry"]
    tap.ok(tele and any(p.startswith("pill warning") and p.endswith(":hot-partition") or
                        p.startswith("pill critical") and p.endswith(":hot-partition")
                        for p in tele[0]["pills"]),
           "Telemetry's row has a hot-partition pill coloured by its severity", tele)
    tap.ok(len(got["findings"]) == len(doc["findings"]) > 0 and
           all(f["folded"] and f["why"] and f["summary"] for f in got["findings"]),
           "every finding has Why and Fix folded in <details>", got["findings"])
    full = [order_key(i) for i in range(150)]
    short = [k for k in got["keys"] if k[1] in full and k[0] != k[1]]
    tap.ok(short and all(len(k[0]) < len(k[1]) and "\u2026" in k[0] and
                         k[1].startswith(k[0].split("\u2026")[0]) and
                         k[1].endswith(k[0].split("\u2026")[1]) and
                         len(k[0].split("\u2026")[1]) >= 6 for k in short),
           "long keys are shortened in the middle, keeping their distinct ends, with the "
           "full key as title", got["keys"][:20])
    t = [x for x in doc["tables"] if x["table"] == "Telemetry"][0]
    shown = min(8, len(t["partitions"]))
    n = int(round(t["partitions_estimate"])) - shown
    tap.eq(got["others"].get("Telemetry"), "~%d other partitions" % n,
           "the other-partitions row counts the partitions it stands for")
    tap.ok(abs(n - (61 - shown)) <= 2,
           "that count is about the %d partitions Telemetry has beyond the %d listed"
           % (61 - shown, shown), n)


def demo(png):
    """--demo PNG: the README's screenshot and report, with the default
    thresholds (2 s intervals): the same workload for 40 s, then the page
    saved as PNG and `tabled advise` printed."""
    srv = h.Server(args=["--admin-port", "0", "--advisor", "interval=2"]).start()
    stop, errors = threading.Event(), []
    th = threading.Thread(target=workload, args=(srv, stop, errors, 600), daemon=True)
    th.start()
    browser = Chromium()
    try:
        host = "%s:%d" % (srv.host, admin_port(srv))
        browser.call("Page.navigate", url="http://%s/dashboard" % host)
        time.sleep(38)
        # one table's busiest partitions unfolded, to show them too
        browser.eval("document.querySelector('[data-table=\"Telemetry\"] details')"
                     ".open = true")
        time.sleep(2)
        shot = browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(png, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        stop.set()
        th.join(30)
        p = subprocess.run([h.tabled_path(), "advise", "--admin", "http://" + host],
                           capture_output=True, text=True)
        print("$ tabled advise --admin http://%s" % host)
        print(p.stdout + p.stderr + "(exit status %d)" % p.returncode)
        print("problems: %s, workload errors: %s" % (browser.problems(), errors))
    finally:
        stop.set()
        browser.close()
        srv.stop()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--demo":
        demo(sys.argv[2])
        return
    tap = h.Tap()
    err = install_tools()
    if err:
        print("ok 1 # SKIP dashboard browser test: %s" % err)
        print("1..1")
        sys.exit(0)
    h.watchdog(240, tap=tap)
    srv = h.Server(args=["--admin-port", "0", "--advisor", "interval=1",
                         "--advisor", "hot-min-entities=300", "--advisor", "scan-min=3",
                         "--advisor", "append-min-creates=100",
                         "--advisor", "append-min-intervals=1",
                         "--advisor", "efficiency-min-examined=200"]).start()
    stop = threading.Event()
    errors = []
    th = threading.Thread(target=workload, args=(srv, stop, errors), daemon=True)
    browser = None
    try:
        browser = Chromium()
        tap.ok(True, "headless chromium started")
        host = "%s:%d" % (srv.host, admin_port(srv))
        # the page on an idle server, then the same page (no reload) while
        # the workload runs: it must update itself
        browser.call("Page.navigate", url="http://%s/dashboard" % host)
        end = time.monotonic() + 20
        while time.monotonic() < end and not browser.eval(
                "document.body.getAttribute('data-loaded') === '1'"):
            time.sleep(0.2)
        idle = browser.eval("document.body.innerText") or ""
        tap.ok("No traffic yet" in idle and "each table gets a row" in idle,
               "idle server: the page says 'No traffic yet' and what will appear", idle[:1000])
        th.start()
        end = time.monotonic() + 60
        shown = False
        while time.monotonic() < end:
            shown = browser.eval(
                "!!document.querySelector('.finding[data-kind=\"hot-partition\"]') && "
                "document.querySelectorAll('.heat .cell[title^=\"sensor-42\"]').length >= 8")
            if shown:
                break
            time.sleep(0.5)
        tap.ok(shown, "the page shows the hot-partition finding and a heat map of the "
                      "running workload")
        text = browser.eval("document.querySelector('.finding[data-kind=\"hot-partition\"]')"
                            " && document.querySelector('.finding[data-kind=\"hot-partition\"]')"
                            ".textContent") or ""
        tap.ok("devstoreaccount1/Telemetry" in text and "sensor-42" in text and
               "2000 entities/s" in text and "Why:" in text and "Fix:" in text,
               "the finding names Telemetry/sensor-42 with evidence, reason and fix", text)
        body = browser.eval("document.body.innerText") or ""
        for kind in ("append-only", "table-scan"):
            tap.ok(kind in body, "the page also lists the %s finding" % kind)
        tap.ok("Query shapes" in body and "table scan 3% (6)" in body and "point 97% (200)" in body,
               "per-table query shapes shown", body[:3000])
        check_layout(tap, browser, srv, host, stop, th)
        before = browser.eval("document.getElementById('status').textContent")
        time.sleep(2.5)
        after = browser.eval("document.getElementById('status').textContent")
        tap.ok(before != after, "the page updates itself (polls /advisor)", (before, after))
        shot = browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        os.makedirs(LOGDIR, exist_ok=True)
        path = os.path.join(LOGDIR, "dashboard.png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        tap.ok(os.path.getsize(path) > 10000, "screenshot saved as %s" % path)
        tap.eq(browser.problems(), [], "no console errors, exceptions or failed requests")
        tap.eq(browser.requested_hosts(host), [], "nothing requested from elsewhere")
    except Exception as e:  # noqa: BLE001
        tap.ok(False, "browser session", repr(e))
    finally:
        stop.set()
        if th.is_alive():
            th.join(30)
        if browser:
            browser.close()
        tap.eq(errors, [], "the SDK workload ran without errors")
        srv.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    main()
