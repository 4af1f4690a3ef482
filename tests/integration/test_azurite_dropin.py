#!/usr/bin/python3
"""Integration test: the installed azurite link as a drop-in where the peer
emulator's container is started by Testcontainers, each module's own wait
strategy reproduced (doc/azurite.md lists them with their sources), then an
SDK life cycle (azure-data-tables) on the table port:

  go, log lines    testcontainers-go's azurite module (v0.32-v0.35): waits
                   for "Blob/Queue/Table service is successfully listening"
                   in the output; each port must accept once its line shows
  go, ports        modules/azure/azurite: ForListeningPort on every enabled
                   port (the local address column of /proc/net/tcp*, then
                   a TCP dial)
  java             AzuriteContainer: the default wait, every exposed port
                   (10000, 10001, 10002) found in /proc/net/tcp* and dialled;
                   also with --cert/--key (HTTPS on all three ports)
  python           AzuriteContainer: AZURITE_ACCOUNTS set, the image's
                   default command, one TCP connect to the Blob port, then
                   straight to work on the table port

The Blob and Queue ports must answer every request with 501
APINotImplemented in the services' XML error shape, also through the blob
and queue SDKs (which must not retry it), and log a line naming the method
and path (never the query). azurite-table --cert --key serves HTTPS on the
port asked for, names it in its banner, and opens no other listener.

The files come from "make install DESTDIR=tmp". Every server binds to
127.0.0.1 only: 0.0.0.0 in a command line becomes 127.0.0.1 and the fixed
ports 10000-10002 become free ports, given with --blobPort, --queuePort and
--tablePort, so nothing is exposed and parallel runs do not collide.
Prints TAP."""
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402
from test_azurite_table import Azurite  # noqa: E402  (one process of a link)

try:
    from azure.core.exceptions import HttpResponseError
    from azure.data.tables import TableServiceClient
    IMPORT_ERROR = None
except ImportError as e:
    IMPORT_ERROR = e
try:
    from azure.storage.blob import BlobServiceClient
    from azure.storage.queue import QueueServiceClient
except ImportError:
    BlobServiceClient = QueueServiceClient = None

KW = dict(retry_total=0, connection_timeout=10, read_timeout=20)
WAIT = 60  # generous bound on any start-up wait (the machine is shared)
DEFAULT_PORTS = {"10000": "blob", "10001": "queue", "10002": "table"}
SECRET = "sig=c2VjcmV0LXNpZ25hdHVyZQ%3D%3D"


make = h.run_make


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def loopback(args, ports):
    """The container's command line with 0.0.0.0 -> 127.0.0.1 and each
    service's port given as a free one (ports: service -> port)."""
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("--blobPort", "--queuePort", "--tablePort"):
            skip = True  # replaced below
            continue
        out.append(a.replace("0.0.0.0", "127.0.0.1"))
    for svc, port in ports.items():
        out += ["--%sPort" % svc, str(port)]
    return out


def connects(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return True
    except OSError:
        return False


def proc_net_tcp():
    text = ""
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(f) as fh:
                text += fh.read()
        except OSError:
            pass
    return text


def go_internal_check(port):
    """testcontainers-go: cat /proc/net/tcp* | awk '{print $2}' | grep -i :%04x"""
    local = [l.split()[1] for l in proc_net_tcp().splitlines()[1:] if len(l.split()) > 1]
    return any((":%04x" % port) in a.lower() for a in local)


def java_internal_check(port):
    """testcontainers-java: grep -i ':0*%x' /proc/net/tcp*"""
    return re.search(r":0*%x" % port, proc_net_tcp(), re.I) is not None


def listening_ports(pid):
    """The TCP ports process pid listens on (its sockets in LISTEN state)."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink(os.path.join(fd_dir, fd)))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    ports = set()
    for l in proc_net_tcp().splitlines():
        f = l.split()
        if len(f) > 9 and f[3] == "0A" and f[9] in inodes:
            ports.add(int(f[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def wait_until(tap, what, cond, az):
    """Polls cond (as a module's wait loop does) within WAIT seconds."""
    end = time.monotonic() + WAIT
    while time.monotonic() < end:
        if az.proc.poll() is not None:
            break
        if cond():
            return True
        time.sleep(0.1)
    tap.ok(False, what, "stdout: %s\nstderr: %s" % (az.lines[-10:], az.stderr()[-2000:]))
    return False


def lifecycle(tap, what, port, https=False, cafile=None, table="dropin"):
    """Create a table, insert, query, delete through azure-data-tables."""
    scheme = "https" if https else "http"
    cs = ("DefaultEndpointsProtocol=%s;AccountName=%s;AccountKey=%s;TableEndpoint=%s://"
          "127.0.0.1:%d/%s;" % (scheme, h.DEV_ACCOUNT, h.DEV_KEY, scheme, port, h.DEV_ACCOUNT))
    kw = dict(KW)
    if cafile:
        kw["connection_verify"] = cafile
    svc = TableServiceClient.from_connection_string(cs, **kw)
    t = svc.create_table(table)
    t.create_entity({"PartitionKey": "p", "RowKey": "1", "N": 1})
    t.create_entity({"PartitionKey": "p", "RowKey": "2", "N": 2})
    got = sorted((e["RowKey"], e["N"]) for e in t.query_entities("PartitionKey eq 'p'"))
    tap.eq(got, [("1", 1), ("2", 2)], "%s: SDK life cycle: create table, insert, query" % what)
    t.delete_entity("p", "2")
    svc.delete_table(table)
    tap.eq([x.name for x in svc.list_tables()], [], "%s: SDK life cycle: delete" % what)


def raw_request(port, method, target, headers=(), tls_ctx=None):
    """(status, {header: value}, body) of one request on a new connection."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if tls_ctx:
        s = tls_ctx.wrap_socket(s, server_hostname="127.0.0.1")
    req = "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (method, target, port)
    for k, v in headers:
        req += "%s: %s\r\n" % (k, v)
    req += "Connection: close\r\n\r\n"
    s.sendall(req.encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return status, hdrs, body


def check_absent(tap, az, svc, port, tls_ctx=None):
    """The Blob or Queue port: 501 APINotImplemented, XML error, log line."""
    name = svc.capitalize()
    path = "/devstoreaccount1/dropin%s" % svc
    st, hd, body = raw_request(port, "GET", path + "?restype=container&" + SECRET,
                               [("x-ms-version", "2021-08-06"),
                                ("x-ms-client-request-id", "cid-%s" % svc)], tls_ctx)
    tap.eq(st, 501, "%s port: 501 Not Implemented" % name)
    tap.eq(hd.get("x-ms-error-code"), "APINotImplemented", "%s port: x-ms-error-code" % name)
    tap.eq(hd.get("content-type"), "application/xml", "%s port: Content-Type" % name)
    rid = hd.get("x-ms-request-id", "")
    tap.ok(h.GUID_RE.match(rid) is not None, "%s port: x-ms-request-id is a UUID" % name, rid)
    tap.eq(hd.get("x-ms-client-request-id"), "cid-%s" % svc,
           "%s port: x-ms-client-request-id echoed" % name)
    tap.ok(h.RFC1123_RE.match(hd.get("date", "")) is not None, "%s port: Date" % name)
    tap.ok(body.startswith(b'<?xml version="1.0" encoding="utf-8"?><Error>'),
           "%s port: the services' XML error shape" % name, body[:200])
    try:
        root = ET.fromstring(body)
        code, msg = root.findtext("Code"), root.findtext("Message") or ""
    except ET.ParseError as e:
        root, code, msg = None, None, str(e)
    tap.ok(root is not None and root.tag == "Error" and code == "APINotImplemented",
           "%s port: <Error><Code>APINotImplemented</Code>" % name, body[:300])
    tap.ok(("provides the Table service only" in msg and
            "the %s service is not available" % name in msg and
            ("\nRequestId:%s\nTime:" % rid) in msg),
           "%s port: the message says why, with RequestId and Time" % name, msg)
    st, hd, body = raw_request(port, "HEAD", path, (), tls_ctx)
    tap.ok(st == 501 and hd.get("x-ms-error-code") == "APINotImplemented" and body == b"",
           "%s port: HEAD gets the status and error code, no body" % name, (st, hd, body))
    st, hd, body = raw_request(port, "GET", "/" + "x" * 70000, (), tls_ctx)
    tap.ok(st == 431 and hd.get("x-ms-error-code") == "RequestHeaderFieldsTooLarge" and
           b"<Code>RequestHeaderFieldsTooLarge</Code>" in body,
           "%s port: an oversized request head is refused in the same shape" % name,
           (st, hd, body[:200]))


def check_absent_log(tap, az, svc):
    name = svc.capitalize()
    err = az.stderr()
    path = "/devstoreaccount1/dropin%s" % svc
    line = [l for l in err.splitlines() if ("GET %s:" % path) in l]
    tap.ok(len(line) == 1 and "501 APINotImplemented" in line[0] and
           ("the %s service is not provided" % name) in line[0],
           "%s port: a log line names the method and path" % name, err[-1500:])
    tap.ok(SECRET.split("=")[1] not in err, "%s port: the query (a SAS) is not logged" % name)


def check_sdks(tap, az, ports):
    """The blob and queue SDKs get the error at once (501 is not retried)."""
    if BlobServiceClient is None:
        tap.ok(False, "azure-storage-blob and azure-storage-queue importable (pip install "
               "azure-storage-blob azure-storage-queue)")
        return
    cs = ("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;"
          "BlobEndpoint=http://127.0.0.1:%d/%s;QueueEndpoint=http://127.0.0.1:%d/%s;"
          % (h.DEV_ACCOUNT, h.DEV_KEY, ports["blob"], h.DEV_ACCOUNT, ports["queue"],
             h.DEV_ACCOUNT))
    # default retry settings: a retried status would show as more log lines
    for what, call, path in (
            ("blob", lambda: BlobServiceClient.from_connection_string(
                cs, connection_timeout=10, read_timeout=20).create_container("sdkcont"),
             "PUT /devstoreaccount1/sdkcont:"),
            ("queue", lambda: QueueServiceClient.from_connection_string(
                cs, connection_timeout=10, read_timeout=20).create_queue("sdkqueue"),
             "PUT /devstoreaccount1/sdkqueue:")):
        try:
            call()
            tap.ok(False, "%s SDK: create fails" % what)
        except HttpResponseError as e:
            tap.ok(e.status_code == 501 and e.error_code == "APINotImplemented" and
                   "provides the Table service only" in str(e),
                   "%s SDK: HttpResponseError 501 APINotImplemented with the message" % what,
                   str(e)[:500])
        n = sum(1 for l in az.stderr().splitlines() if path in l)
        tap.eq(n, 1, "%s SDK: asked once (501 is not retried)" % what)


def wait_log_lines(tap, az, services, ports, what):
    """testcontainers-go (log strategy): every '<Svc> service is successfully
    listening' line; when each shows, its port accepts."""
    want = {s: "%s service is successfully listening" % s.capitalize() for s in services}
    seen = []
    accepted = {}
    end = time.monotonic() + WAIT
    while len(seen) < len(want):
        line = az.next_line(end)
        if line is None:
            break
        for s, text in want.items():
            if text in line and s not in seen:
                seen.append(s)
                accepted[s] = connects(ports[s])
    tap.eq(seen, list(services), "%s: the readiness lines, in Azurite's order" % what)
    if len(seen) < len(want):
        tap.diag("stdout: %s\nstderr: %s" % (az.lines[-10:], az.stderr()[-2000:]))
    tap.ok(all(accepted.values()) and len(accepted) == len(services),
           "%s: each port accepts once its line is printed" % what, accepted)


def make_cert(tmp):
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    p = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                        "subjectAltName=IP:127.0.0.1"], capture_output=True, timeout=60)
    return (cert, key) if p.returncode == 0 else (None, None)


def scenario_go_logs(tap, exe, tmp):
    # modules/azurite (2024): entrypoint azurite, --blobHost/--queueHost/
    # --tableHost 0.0.0.0, wait.ForLog for each service
    ports = dict(zip(("blob", "queue", "table"), free_ports(3)))
    args = loopback(["--blobHost", "0.0.0.0", "--queueHost", "0.0.0.0", "--tableHost",
                     "0.0.0.0", "--inMemoryPersistence"], ports)
    az = Azurite(exe, args, cwd=tmp)
    try:
        wait_log_lines(tap, az, ("blob", "queue", "table"), ports, "go, log lines")
        tap.ok(any(l == "Azurite Blob service is starting at http://127.0.0.1:%d" % ports["blob"]
                   for l in az.lines), "go, log lines: the 'starting at' lines too")
        tap.run(lifecycle, tap, "go, log lines", ports["table"])
        tap.run(check_absent, tap, az, "blob", ports["blob"])
        tap.run(check_absent, tap, az, "queue", ports["queue"])
        tap.run(check_sdks, tap, az, ports)
    finally:
        rc = az.stop()
    tap.eq(rc, 0, "go, log lines: exit 0 on SIGTERM")
    check_absent_log(tap, az, "blob")
    check_absent_log(tap, az, "queue")
    tap.ok("runtime error" not in az.stderr() and "Sanitizer" not in az.stderr(),
           "go, log lines: no sanitizer report")


def scenario_go_ports(tap, exe, tmp):
    # modules/azure/azurite (2025-): entrypoint azurite, --<svc>Host 0.0.0.0
    # --<svc>Port <port> for each enabled service, ForListeningPort on each
    ports = dict(zip(("blob", "queue", "table"), free_ports(3)))
    cmd = []
    for s in ("blob", "queue", "table"):
        cmd += ["--%sHost" % s, "0.0.0.0", "--%sPort" % s, "1000%d" % "bqt".index(s[0])]
    az = Azurite(exe, loopback(cmd + ["--inMemoryPersistence"], ports), cwd=tmp)
    try:
        for s in ("blob", "queue", "table"):
            ok = wait_until(tap, "go, ports: %s port listening" % s,
                            lambda: go_internal_check(ports[s]) and connects(ports[s]), az)
            if ok:
                tap.ok(True, "go, ports: %s port found in /proc/net/tcp and dialled" % s)
        tap.run(lifecycle, tap, "go, ports", ports["table"])
    finally:
        tap.eq(az.stop(), 0, "go, ports: exit 0")


def scenario_java(tap, exe, tmp, cert=None, key=None):
    # AzuriteContainer: "azurite --blobHost 0.0.0.0 --queueHost 0.0.0.0
    # --tableHost 0.0.0.0" [--cert /cert.pem --key /key.pem]; exposed
    # 10000-10002, the default HostPortWaitStrategy on all three
    what = "java" + (", HTTPS" if cert else "")
    ports = dict(zip(("blob", "queue", "table"), free_ports(3)))
    cmd = ["--blobHost", "0.0.0.0", "--queueHost", "0.0.0.0", "--tableHost", "0.0.0.0"]
    if cert:
        cmd += ["--cert", cert, "--key", key]
    az = Azurite(exe, loopback(cmd, ports), cwd=tmp)
    try:
        ok = wait_until(tap, "%s: ports 10000, 10001, 10002 listening" % what,
                        lambda: all(java_internal_check(p) and connects(p)
                                    for p in ports.values()), az)
        if ok:
            tap.ok(True, "%s: every exposed port found in /proc/net/tcp and connected" % what)
        if cert:
            tap.eq(listening_ports(az.proc.pid), sorted(ports.values()),
                   "%s: exactly the three ports listen (no plain HTTP one)" % what)
            ctx = ssl.create_default_context(cafile=cert)
            tap.run(check_absent, tap, az, "blob", ports["blob"], ctx)
            tap.run(lifecycle, tap, what, ports["table"], https=True, cafile=cert)
        else:
            tap.run(lifecycle, tap, what, ports["table"])
    finally:
        tap.eq(az.stop(), 0, "%s: exit 0" % what)
    if cert:
        tap.ok("Azurite Blob service is successfully listening at https://127.0.0.1:%d"
               % ports["blob"] in az.lines, "%s: the Blob line names https" % what, az.lines)
    tap.ok(os.path.isdir(os.path.join(tmp, "__tabled_table__")),
           "%s: data in the current directory, as Azurite's" % what)


def scenario_python(tap, exe, tmp):
    # AzuriteContainer: the image's default command, AZURITE_ACCOUNTS with
    # the development account, one connect to the first exposed port (blob)
    ports = dict(zip(("blob", "queue", "table"), free_ports(3)))
    data = os.path.join(tmp, "pydata")
    cmd = ["-l", data, "--blobHost", "0.0.0.0", "--queueHost", "0.0.0.0", "--tableHost",
           "0.0.0.0"]
    env = {"AZURITE_ACCOUNTS": "%s:%s" % (h.DEV_ACCOUNT, h.DEV_KEY)}
    az = Azurite(exe, loopback(cmd, ports), env=env, cwd=tmp)
    try:
        ok = wait_until(tap, "python: the Blob port accepts", lambda: connects(ports["blob"]),
                        az)
        if ok:
            tap.ok(True, "python: connected to the Blob port")
            # no further wait: the table port must already serve
            tap.run(lifecycle, tap, "python", ports["table"])
    finally:
        tap.eq(az.stop(), 0, "python: exit 0")
    tap.ok(os.path.isdir(os.path.join(data, "__tabled_table__")), "python: data in -l DIR")


def scenario_table_cert(tap, exe_table, tmp, cert, key):
    # azurite-table --cert --key --tablePort N: HTTPS on N, named in the
    # banner and the connection string, and no other listener
    port = free_ports(1)[0]
    az = Azurite(exe_table, ["--cert", cert, "--key", key, "--tablePort", str(port),
                             "--inMemoryPersistence"], cwd=tmp)
    try:
        ok = wait_until(tap, "azurite-table --cert: ready",
                        lambda: any("successfully listening" in l for l in az.lines), az)
        if ok:
            banner = "\n".join(az.lines)
            tap.ok("ready at https://127.0.0.1:%d " % port in banner,
                   "azurite-table --cert: the banner names https and the port asked for",
                   banner)
            tap.ok(("DefaultEndpointsProtocol=https;" in banner and
                    "TableEndpoint=https://127.0.0.1:%d/devstoreaccount1;" % port in banner),
                   "azurite-table --cert: the connection string too", banner)
            tap.ok("http://" not in banner, "azurite-table --cert: no plain HTTP endpoint",
                   banner)
            tap.eq(listening_ports(az.proc.pid), [port],
                   "azurite-table --cert: the HTTPS port is the only listener")
            tap.run(lifecycle, tap, "azurite-table --cert", port, https=True, cafile=cert)
    finally:
        tap.eq(az.stop(), 0, "azurite-table --cert: exit 0")


def scenario_refusals(tap, exe, tmp):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    bport = busy.getsockname()[1]
    qport, tport = free_ports(2)
    try:
        p = subprocess.run([exe, "--inMemoryPersistence", "--blobPort", str(bport),
                            "--queuePort", str(qport), "--tablePort", str(tport)],
                           capture_output=True, timeout=60, cwd=tmp)
    finally:
        busy.close()
    err = p.stderr.decode()
    tap.eq(p.returncode, 1, "Blob port in use: exit status 1")
    tap.ok("127.0.0.1:%d" % bport in err and "--blobPort" in err and "Blob port" in err,
           "Blob port in use: the message names the port and what to do", err)
    tap.ok(b"successfully listening" not in p.stdout, "Blob port in use: no readiness line")
    p = subprocess.run([exe, "--port", "5"], capture_output=True, timeout=10)
    tap.ok(p.returncode == 2 and b"azurite: unknown option '--port'" in p.stderr,
           "azurite: an unknown flag is named, exit 2", p.stderr.decode())
    p = subprocess.run([exe, "--help"], capture_output=True, timeout=10)
    tap.ok(p.returncode == 0 and b"Usage: azurite [OPTIONS]" in p.stdout and
           b"--blobPort" in p.stdout, "azurite --help shows the combined flags")


def main():
    tap = h.Tap()
    h.watchdog(900, tap=tap)
    if IMPORT_ERROR:
        tap.ok(False, "azure-data-tables importable", str(IMPORT_ERROR))
        tap.done()
    tmp = tempfile.mkdtemp(prefix="tabled-dropin-")
    try:
        dest = os.path.join(tmp, "dest")
        p = make("print-install-dirs")
        dirs = dict(l.split("=", 1) for l in p.stdout.decode().splitlines() if "=" in l)
        p = make("install", "DESTDIR=" + dest)
        tap.eq(p.returncode, 0, "make install DESTDIR=... succeeds")
        if p.returncode:
            tap.diag(p.stderr.decode()[-3000:])
            tap.done()
        bindir = os.path.join(dest, dirs["bindir"].lstrip("/"))
        exe, exe_table = os.path.join(bindir, "azurite"), os.path.join(bindir, "azurite-table")
        tap.ok(os.path.islink(exe) and os.path.islink(exe_table),
               "azurite and azurite-table are installed links")
        for name, fn in (("go-logs", scenario_go_logs), ("go-ports", scenario_go_ports),
                         ("java", scenario_java), ("python", scenario_python),
                         ("refusals", scenario_refusals)):
            work = os.path.join(tmp, name)
            os.makedirs(work)
            tap.run(fn, tap, exe, work)
        cert, key = make_cert(tmp)
        tap.ok(cert is not None, "a test certificate (openssl)")
        if cert:
            work = os.path.join(tmp, "java-https")
            os.makedirs(work)
            tap.run(scenario_java, tap, exe, work, cert, key)
            tap.run(scenario_table_cert, tap, exe_table, tmp, cert, key)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
