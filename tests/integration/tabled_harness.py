#!/usr/bin/python3
"""tabled_harness - shared helpers for the integration tests (stdlib only).

  Server  starts $TABLED on port 0, waits for its "ready at" line, exposes
          host/port/endpoint/connection string, stops it with SIGTERM and
          checks that it exited 0 without sanitizer reports.
  Tap     TAP reporter: numbered ok / not ok lines, plan at the end, exit
          status 1 on any failure; a crashing check is one "not ok" and the
          run goes on.
  Http    a small HTTP/1.1 client over raw sockets that signs requests with
          SharedKey (doc/protocol.md, SharedKey) and parses responses exactly as sent
          (header order and duplicates kept, chunked bodies decoded).
  raw_*   send arbitrary bytes (malformed requests) and read what comes back.

Every network wait has a timeout, so a hung server fails a check instead of
hanging the run.  Run as a program (python3 tabled_harness.py -- CMD ...) it
starts a server, runs CMD with TABLED_CONN / TABLED_ENDPOINT / TABLED_PORT in
the environment, and relays CMD's TAP output renumbered into its own.
"""
import base64
import datetime
import hashlib
import hmac
import json
import os
import queue
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request

DEV_ACCOUNT = "devstoreaccount1"
DEV_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
           "K1SZFPTOtr/KBHBeksoGMGw==")
READY_RE = re.compile(r"ready at http://([^ :]+):(\d+)")
DEFAULT_VERSION = "2019-02-02"
IO_TIMEOUT = 10.0

JSON_CT = "application/json;odata=%s;streaming=true;charset=utf-8"
ACCEPT = {
    "nometadata": "application/json;odata=nometadata",
    "minimalmetadata": "application/json;odata=minimalmetadata",
    "fullmetadata": "application/json;odata=fullmetadata",
}
GUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                     r"[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
RFC1123_RE = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d "
                        r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                        r"\d{4} \d\d:\d\d:\d\d GMT$")
# Emission form of Edm.DateTime / Timestamp (doc/protocol.md, Edm value forms): no trailing zeros
# in the fraction, no dot when the fraction is zero.
EMITTED_DT_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,6}[1-9])?Z$")
SANITIZER_RE = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer"
                          r"|runtime error:|\bSUMMARY: ")


# --------------------------------------------------------------------------
# TAP


class Tap:
    """Numbered TAP output; done() prints the plan and exits 1 on failure."""

    def __init__(self, out=None):
        self.n = 0
        self.failed = 0
        self.out = out or sys.stdout
        self._lock = threading.Lock()

    def _emit(self, line):
        self.out.write(line + "\n")
        self.out.flush()

    def diag(self, text):
        """Writes text as TAP comment lines."""
        for line in str(text).splitlines() or [""]:
            self._emit("# " + line)

    def ok(self, cond, name, diag=None):
        """One check: cond true -> ok. diag (when failing) is printed below."""
        with self._lock:
            self.n += 1
            # one line; '#' would start a TAP directive, so escape it
            name = re.sub(r"(?<!\\)#", r"\\#", " ".join(str(name).split()))
            if cond:
                self._emit("ok %d - %s" % (self.n, name))
            else:
                self.failed += 1
                self._emit("not ok %d - %s" % (self.n, name))
                if diag is not None:
                    self.diag(diag)
        return bool(cond)

    def eq(self, got, want, name):
        """Checks got == want and shows both when they differ."""
        return self.ok(got == want, name,
                       "got:  %s\nwant: %s" % (_short(got), _short(want)))

    def isin(self, got, allowed, name):
        """Checks got is one of allowed."""
        return self.ok(got in allowed, name,
                       "got:  %s\nwant one of: %s" % (_short(got), _short(allowed)))

    def run(self, fn, *args, **kwargs):
        """Runs one test function; an exception becomes one 'not ok' line."""
        try:
            fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - report and continue
            self.ok(False, "%s raised an exception" % fn.__name__, traceback.format_exc())

    def done(self):
        """Prints the plan and exits (status 1 when anything failed)."""
        self._emit("1..%d" % self.n)
        if self.failed:
            self.diag("%d of %d checks failed" % (self.failed, self.n))
        sys.exit(1 if self.failed or self.n == 0 else 0)


def _short(v, limit=600):
    s = repr(v)
    return s if len(s) <= limit else s[:limit] + "...(%d chars)" % len(s)


def watchdog(seconds, server=None, tap=None):
    """Aborts the whole test program after seconds (prints a failing TAP
    line and the plan first), so a hung server can never hang CI."""
    def fire():
        n = (tap.n + 1) if tap is not None else 1
        sys.stdout.write("not ok %d - watchdog: test program exceeded %d s\n" % (n, seconds))
        sys.stdout.write("1..%d\n" % n)
        sys.stdout.flush()
        if server is not None:
            sys.stdout.write("# server stderr (tail):\n# " + "\n# ".join(
                server.stderr_text()[-3000:].splitlines()) + "\n")
            sys.stdout.flush()
        if server is not None and server.proc is not None:
            try:
                server.proc.kill()
            except OSError:
                pass
        os._exit(2)
    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()
    return t


# --------------------------------------------------------------------------
# Server


def tabled_path():
    """$TABLED, or ./tabled relative to the build tree as a fallback."""
    exe = os.environ.get("TABLED")
    if not exe:
        top = os.environ.get("TOP_BUILDDIR") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..")
        exe = os.path.join(top, "tabled")
    return os.path.abspath(exe)


class ServerError(Exception):
    pass


def backend_prepare_args():
    """Runs the command in TABLED_BACKEND_PREPARE (sh -c) and returns
    the tabled arguments it prints (shell words). For a backend whose data
    lives in a database server: the command creates an empty database for
    this one server start (so every start sees an empty store, as with a
    durable backend's fresh ./data) and prints e.g. "--backend postgres
    --backend-option conninfo=..."."""
    p = subprocess.run(os.environ["TABLED_BACKEND_PREPARE"], shell=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if p.returncode != 0:
        raise ServerError("TABLED_BACKEND_PREPARE failed (status %d): %s"
                          % (p.returncode, p.stderr.decode("utf-8", "replace")))
    return shlex.split(p.stdout.decode("utf-8", "replace"))


class Server:
    """One tabled process on an ephemeral port."""

    def __init__(self, args=(), backend=None, ready_timeout=10.0):
        self.args = list(args)
        self.backend = backend
        self.ready_timeout = ready_timeout
        self.proc = None
        self.host = None
        self.port = None
        self.endpoint = None
        self.conn_str_printed = None
        self.stdout_lines = []
        self._q = queue.Queue()
        self._tmp = tempfile.mkdtemp(prefix="tabled-test-")
        self._stderr_path = os.path.join(self._tmp, "stderr.log")
        self._stderr = None

    # -- life cycle ---------------------------------------------------------
    def start(self):
        exe = tabled_path()
        if not os.access(exe, os.X_OK):
            raise ServerError("tabled binary not found or not executable: %s" % exe)
        cmd = [exe, "--port", "0", "--log-level", "warn", "--access-log", "off"]
        # backend None: "--backend memory", or the arguments in the
        # environment variable TABLED_BACKEND_ARGS (e.g. "--backend
        # flatfile"), so that a whole test file can run on another backend;
        # data of durable backends goes to ./data in the temporary cwd.
        if self.backend:
            cmd += ["--backend", self.backend]
        elif os.environ.get("TABLED_BACKEND_ARGS"):
            cmd += shlex.split(os.environ["TABLED_BACKEND_ARGS"])
        elif os.environ.get("TABLED_BACKEND_PREPARE"):
            cmd += backend_prepare_args()
        else:
            cmd += ["--backend", "memory"]
        cmd += self.args
        self.cmd = cmd
        self._stderr = open(self._stderr_path, "wb")
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "abort_on_error=0:detect_leaks=1")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._stderr, cwd=self._tmp, env=env)
        threading.Thread(target=self._pump, daemon=True).start()
        deadline = time.monotonic() + self.ready_timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise ServerError("no 'ready at' line within %.0f s; stderr:\n%s"
                                  % (self.ready_timeout, self.stderr_text()))
            try:
                line = self._q.get(timeout=min(left, 0.5))
            except queue.Empty:
                if self.proc.poll() is not None:
                    raise ServerError("tabled exited with status %s before ready; stderr:\n%s"
                                      % (self.proc.returncode, self.stderr_text()))
                continue
            if line is None:
                raise ServerError("tabled closed stdout before ready (status %s); stderr:\n%s"
                                  % (self.proc.wait(5), self.stderr_text()))
            m = READY_RE.search(line)
            if m:
                self.host, self.port = m.group(1), int(m.group(2))
                break
        # The endpoint and connection string follow the ready line.
        end = time.monotonic() + 2.0
        while (self.endpoint is None or self.conn_str_printed is None) and time.monotonic() < end:
            try:
                line = self._q.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                break
            self._parse_info(line)
        if self.endpoint is None:
            self.endpoint = "http://%s:%d/%s" % (self.host, self.port, DEV_ACCOUNT)
        return self

    def _pump(self):
        """Reads stdout for the whole life of the process (so it never
        blocks on a full pipe) and queues the lines."""
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self.stdout_lines.append(line)
            self._q.put(line)
        self._q.put(None)

    def _parse_info(self, line):
        m = re.search(r"((?:[A-Za-z]+=[^;\s]*;)+(?:[A-Za-z]+=[^;\s]*)?)", line)
        if m and "AccountName=" in m.group(1):
            self.conn_str_printed = m.group(1)
            return
        m = re.search(r"(https?://\S+)", line)
        if m and self.endpoint is None:
            self.endpoint = m.group(1).rstrip("/")

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr_text(self):
        """Everything the server wrote to stderr so far."""
        try:
            if self._stderr:
                self._stderr.flush()
            with open(self._stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, timeout=10.0):
        """SIGTERM, wait; returns (exit status or None when it had to be
        killed, stderr text)."""
        if self.proc is None:
            return None, ""
        rc = self.proc.poll()
        if rc is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                rc = None
        if self._stderr:
            self._stderr.close()
            self._stderr = None
        text = self.stderr_text()
        shutil.rmtree(self._tmp, ignore_errors=True)
        return rc, text

    def stop_and_check(self, tap):
        """Stops the server and reports a clean shutdown as TAP checks."""
        crashed_before = self.proc is not None and self.proc.poll() is not None
        rc, err = self.stop()
        tap.ok(not crashed_before, "server was still running at the end of the test",
               "exit status %s\n%s" % (self.proc.returncode if self.proc else None, err[-4000:]))
        tap.eq(rc, 0, "server exits with status 0 on SIGTERM")
        bad = SANITIZER_RE.search(err)
        tap.ok(bad is None, "no sanitizer report on server stderr", err[-6000:])

    # -- addresses ------------------------------------------------------------
    @property
    def base(self):
        """Path-style BASE (doc/protocol.md, Metadata URLs) as the server should print it."""
        return "http://%s:%d/%s" % (self.host, self.port, DEV_ACCOUNT)

    def conn_str(self):
        """The explicit equivalent of UseDevelopmentStorage=true, on our port."""
        return ("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;"
                "TableEndpoint=http://%s:%d/%s;" % (DEV_ACCOUNT, DEV_KEY, self.host,
                                                   self.port, DEV_ACCOUNT))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill()


# --------------------------------------------------------------------------
# Signing (doc/protocol.md, SharedKey)


def rfc1123(t=None):
    """RFC 1123 date in English regardless of locale."""
    t = time.gmtime(time.time() if t is None else t)
    days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
              "Nov", "Dec"]
    return "%s, %02d %s %04d %02d:%02d:%02d GMT" % (days[t.tm_wday], t.tm_mday,
                                                    months[t.tm_mon - 1], t.tm_year,
                                                    t.tm_hour, t.tm_min, t.tm_sec)


def canonical_resource(account, target):
    """/ACCOUNT + encoded path as in the request line (+ ?comp=x only)."""
    path, _, query = target.partition("?")
    res = "/" + account + path
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if name == "comp":
            res += "?comp=" + value
            break
    return res


def string_to_sign(verb, content_md5, content_type, date, account, target):
    return "\n".join([verb, content_md5 or "", content_type or "", date or "",
                      canonical_resource(account, target)])


def sign(key_b64, sts):
    # surrogateescape lets a test sign a path holding raw non-UTF-8 bytes
    mac = hmac.new(base64.b64decode(key_b64), sts.encode("utf-8", "surrogateescape"),
                   hashlib.sha256)
    return base64.b64encode(mac.digest()).decode("ascii")


# --------------------------------------------------------------------------
# Responses


class Num(str):
    """A JSON number kept as its exact text (see parse_json_exact)."""


def parse_json_exact(body):
    """JSON with objects as lists of (name, value) pairs (order and
    duplicates kept) and numbers as Num strings holding the exact text."""
    if isinstance(body, bytes):
        body = body.decode("utf-8")
    return json.loads(body, object_pairs_hook=list, parse_float=Num, parse_int=Num,
                      parse_constant=Num)


class Response:
    def __init__(self, status, reason, version, headers, body, raw_head=b""):
        self.status = status
        self.reason = reason
        self.version = version
        self.headers = headers          # list of (name, value) as received
        self.body = body
        self.raw_head = raw_head
        self.closed = None              # set by the client when known

    def h(self, name, default=None):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    def hs(self, name):
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def has(self, name):
        return bool(self.hs(name))

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def pairs(self):
        return parse_json_exact(self.body)

    def error(self):
        """(code, message value) of a JSON error body, or (None, None)."""
        try:
            j = self.json()
            e = j["odata.error"]
            return e.get("code"), e.get("message", {}).get("value")
        except Exception:  # noqa: BLE001
            return None, None

    def error_code(self):
        code, _ = self.error()
        if code is None:
            m = re.search(rb"<(?:m:)?[cC]ode>([^<]*)</", self.body or b"")
            if m:
                return m.group(1).decode("utf-8", "replace")
        return code

    def __repr__(self):
        return "<Response %s %s %s body=%r>" % (self.status, self.reason, self.headers,
                                              self.body[:300])


class ProtocolError(Exception):
    pass


class _Reader:
    """Buffered reads from a socket with a deadline."""

    def __init__(self, sock, timeout):
        self.sock = sock
        self.buf = b""
        self.timeout = timeout
        self.eof = False

    def _fill(self):
        self.sock.settimeout(self.timeout)
        data = self.sock.recv(65536)
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def until(self, marker, limit=1 << 20):
        while marker not in self.buf:
            if len(self.buf) > limit:
                raise ProtocolError("response head larger than %d bytes" % limit)
            if not self._fill():
                raise ProtocolError("connection closed before %r (got %r)" % (marker, self.buf[:200]))
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exactly(self, n):
        while len(self.buf) < n:
            if not self._fill():
                raise ProtocolError("connection closed after %d of %d body bytes"
                                    % (len(self.buf), n))
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def rest(self):
        while self._fill():
            pass
        out, self.buf = self.buf, b""
        return out


def read_response(reader, method="GET"):
    """Reads one response (skipping 1xx interim responses)."""
    while True:
        head = reader.until(b"\r\n\r\n")
        lines = head[:-4].split(b"\r\n")
        m = re.match(rb"^(HTTP/\d\.\d) (\d{3})(?: (.*))?$", lines[0])
        if not m:
            raise ProtocolError("bad status line %r" % lines[0][:200])
        version = m.group(1).decode()
        status = int(m.group(2))
        reason = (m.group(3) or b"").decode("latin-1")
        headers = []
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                raise ProtocolError("bad header line %r" % line[:200])
            headers.append((name.decode("latin-1"), value.strip().decode("latin-1")))
        if 100 <= status < 200:
            continue
        resp = Response(status, reason, version, headers, b"", head)
        te = resp.h("Transfer-Encoding", "").lower()
        if method == "HEAD" or status in (204, 304):
            body = b""
        elif "chunked" in te:
            body = b""
            while True:
                size_line = reader.until(b"\r\n")
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    reader.until(b"\r\n")   # no trailers expected
                    break
                body += reader.exactly(size)
                if reader.exactly(2) != b"\r\n":
                    raise ProtocolError("chunk not followed by CRLF")
        elif resp.has("Content-Length"):
            body = reader.exactly(int(resp.h("Content-Length")))
        else:
            body = reader.rest()
        resp.body = body
        return resp


# --------------------------------------------------------------------------
# Client


def _norm_headers(headers):
    if headers is None:
        return []
    if isinstance(headers, dict):
        return list(headers.items())
    return list(headers)


class Http:
    """Signed requests against one server (path-style by default).

    request(method, path, ...) takes path relative to the account
    ("/Tables", "/t(PartitionKey='a',RowKey='b')", "/t?comp=acl"); pass
    absolute=True to send the target exactly as given."""

    def __init__(self, server, account=DEV_ACCOUNT, key=DEV_KEY, version=DEFAULT_VERSION,
                 host_header=None, host_style=False, accept=ACCEPT["minimalmetadata"]):
        self.server = server
        self.account = account
        self.key = key
        self.version = version
        self.host_style = host_style
        self.host_header = host_header or ("%s:%d" % (server.host, server.port))
        self.accept = accept

    def target(self, path, absolute=False):
        if absolute or self.host_style:
            return path
        return "/" + self.account + path

    def build(self, method, path, headers=None, body=None, sign_it=True, absolute=False,
              content_type=None, date=None, sign_account=None, verb_for_signing=None):
        """Returns the request bytes."""
        target = self.target(path, absolute)
        if isinstance(body, (dict, list)):
            body = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        elif isinstance(body, str):
            body = body.encode("utf-8")
        hdrs = [("Host", self.host_header),
                ("x-ms-date", date or rfc1123()),
                ("x-ms-version", self.version),
                ("Accept", self.accept),
                ("DataServiceVersion", "3.0;NetFx"),
                ("MaxDataServiceVersion", "3.0;NetFx")]
        if body is not None:
            hdrs.append(("Content-Type", content_type or "application/json"))
            hdrs.append(("Content-Length", str(len(body))))
        # caller headers replace defaults of the same name; value None removes
        extra = _norm_headers(headers)
        names = {k.lower() for k, _ in extra}
        hdrs = [(k, v) for k, v in hdrs if k.lower() not in names]
        hdrs += [(k, v) for k, v in extra if v is not None]
        if sign_it:
            get = lambda n: next((v for k, v in hdrs if k.lower() == n.lower()), "")  # noqa: E731
            date_v = get("x-ms-date") or get("Date")
            sts = string_to_sign(verb_for_signing or method, get("Content-MD5"),
                                 get("Content-Type"), date_v, sign_account or self.account,
                                 target)
            hdrs.append(("Authorization", "SharedKey %s:%s" % (sign_account or self.account,
                                                              sign(self.key, sts))))
        head = "%s %s HTTP/1.1\r\n" % (method, target)
        head += "".join("%s: %s\r\n" % (k, v) for k, v in hdrs) + "\r\n"
        return head.encode("utf-8", "surrogateescape") + (body or b"")

    def request(self, method, path, headers=None, body=None, timeout=IO_TIMEOUT, **kw):
        """One request on a fresh connection; returns a Response."""
        data = self.build(method, path, headers, body, **kw)
        with socket.create_connection((self.server.host, self.server.port), timeout=timeout) as s:
            _sendall_bg(s, data)
            return read_response(_Reader(s, timeout), method)

    def connect(self, timeout=IO_TIMEOUT):
        return Conn(self, timeout)

    # conveniences ------------------------------------------------------------
    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def create_table(self, name, **kw):
        return self.request("POST", "/Tables", body={"TableName": name}, **kw)

    def delete_table(self, name, **kw):
        return self.request("DELETE", "/Tables('%s')" % name, **kw)

    def insert(self, table, entity, **kw):
        return self.request("POST", "/" + table, body=entity, **kw)

    def entity_path(self, table, pk, rk):
        return "/%s(PartitionKey='%s',RowKey='%s')" % (table, quote_key(pk), quote_key(rk))

    def get_entity(self, table, pk, rk, **kw):
        return self.request("GET", self.entity_path(table, pk, rk), **kw)


class Conn:
    """A keep-alive connection for several requests in a row."""

    def __init__(self, http, timeout):
        self.http = http
        self.sock = socket.create_connection((http.server.host, http.server.port), timeout=timeout)
        self.reader = _Reader(self.sock, timeout)

    def request(self, method, path, headers=None, body=None, **kw):
        self.sock.sendall(self.http.build(method, path, headers, body, **kw))
        return read_response(self.reader, method)

    def send(self, data):
        self.sock.sendall(data)

    def read(self, method="GET"):
        return read_response(self.reader, method)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def quote_key(value):
    """Builds the quoted-key text of a key predicate as current SDKs do:
    doubled single quotes, then percent-encoding of everything that is not
    an RFC 3986 pchar (doc/protocol.md, Key encoding in URLs)."""
    return pct_encode(value.replace("'", "''"))


_PCHAR = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@")


def pct_encode(value):
    """Percent-encodes every byte that is not a pchar (doc/protocol.md, Key encoding in URLs encoder)."""
    return "".join(chr(b) if b in _PCHAR else "%%%02X" % b for b in value.encode("utf-8"))


def _sendall_bg(sock, data):
    """Sends data; big payloads go from a thread so the server can answer
    early (e.g. 400 for an oversized body) without deadlocking us."""
    if len(data) < (1 << 20):
        try:
            sock.sendall(data)
        except OSError:
            pass
        return None

    def run():
        try:
            sock.sendall(data)
        except OSError:
            pass
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


# --------------------------------------------------------------------------
# Raw sockets


def raw_exchange(server, data, timeout=5.0, wait_close=True, chunks=None):
    """Sends data (bytes, or a list of byte chunks sent with short pauses) and
    reads until the server closes or timeout. Returns (bytes, closed)."""
    with socket.create_connection((server.host, server.port), timeout=timeout) as s:
        parts = chunks if chunks is not None else [data]
        sender = None
        if sum(len(p) for p in parts) >= (1 << 20):
            def run():
                try:
                    for p in parts:
                        s.sendall(p)
                except OSError:
                    pass
            sender = threading.Thread(target=run, daemon=True)
            sender.start()
        else:
            try:
                for i, p in enumerate(parts):
                    s.sendall(p)
                    if i + 1 < len(parts):
                        time.sleep(0.05)
            except OSError:
                pass
        got = b""
        closed = False
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            r, _, _ = select.select([s], [], [], left)
            if not r:
                break
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                closed = True
                break
            except OSError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            got += chunk
            if not wait_close and b"\r\n\r\n" in got:
                # one full response is enough when not waiting for close
                try:
                    read_response(_Reader(_BufSock(got), 0.01))
                    break
                except ProtocolError:
                    continue
                except Exception:  # noqa: BLE001
                    continue
        if sender:
            sender.join(1)
        return got, closed


class _BufSock:
    """Socket stand-in that replays bytes (to parse a captured response)."""

    def __init__(self, data):
        self.data = data

    def settimeout(self, t):
        pass

    def recv(self, n):
        out, self.data = self.data[:n], self.data[n:]
        return out


def parse_responses(data):
    """Parses every complete response in data; returns a list."""
    out = []
    r = _Reader(_BufSock(data), 0.01)
    while r.buf or not r.eof:
        try:
            out.append(read_response(r))
        except (ProtocolError, ValueError):
            break
        if not r.buf and r.eof:
            break
    return out


def first_response(data):
    rs = parse_responses(data)
    return rs[0] if rs else None


# --------------------------------------------------------------------------
# Edm helpers


def dt_ticks(text):
    """Ticks (100 ns) since 0001-01-01 for an ISO 8601 UTC text with an
    optional 1-7 digit fraction and Z."""
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,7}))?Z$", text)
    if not m:
        raise ValueError("not an emitted DateTime: %r" % text)
    d = datetime.datetime(*[int(x) for x in m.groups()[:6]])
    secs = (d - datetime.datetime(1, 1, 1)).total_seconds()
    frac = (m.group(7) or "").ljust(7, "0")
    return int(secs) * 10_000_000 + int(frac)


def etag_for(timestamp):
    """The ETag the service derives from a Timestamp (doc/protocol.md, Timestamp and ETag)."""
    return "W/\"datetime'%s'\"" % timestamp.replace(":", "%3A")


def dotnet_r(x):
    """Formats a finite double like .NET "R" plus the ODataLib ".0" rule
    (doc/protocol.md, Edm value forms): shortest round-trip digits, scientific notation with
    'E+XX' when the exponent is >= 15 or < -5, '.0' on integral values."""
    if x == 0:
        return "-0.0" if str(x).startswith("-") else "0.0"
    r = repr(x)
    sign = "-" if r.startswith("-") else ""
    r = r.lstrip("-")
    mant, _, exp = r.partition("e")
    exp = int(exp) if exp else 0
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    # decimal exponent of the first significant digit
    if ip.strip("0"):
        e10 = len(ip.lstrip("0")) - 1 + exp
    else:
        e10 = -(len(fp) - len(fp.lstrip("0")) + 1) + exp
    digits = digits.rstrip("0") or "0"
    if e10 >= 15 or e10 < -5:
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return "%s%sE%s%02d" % (sign, m, "-" if e10 < 0 else "+", abs(e10))
    if e10 >= 0:
        if len(digits) <= e10 + 1:
            s = digits + "0" * (e10 + 1 - len(digits)) + ".0"
        else:
            s = digits[:e10 + 1] + "." + digits[e10 + 1:]
    else:
        s = "0." + "0" * (-e10 - 1) + digits
    return sign + s


# --------------------------------------------------------------------------
# Relay mode: start a server, run a command, renumber its TAP output.


def _relay_main(argv):
    if "--" not in argv:
        sys.stderr.write("usage: tabled_harness.py [--timeout S] -- CMD [ARGS...]\n")
        return 2
    i = argv.index("--")
    opts, cmd = argv[:i], argv[i + 1:]
    limit = 120
    if "--timeout" in opts:
        limit = int(opts[opts.index("--timeout") + 1])
    tap = Tap()
    try:
        srv = Server().start()
    except ServerError as e:
        tap.ok(False, "server starts", str(e))
        tap.done()
    tap.ok(True, "server starts (port %d)" % srv.port)
    watchdog(limit + 30, srv, tap)
    env = dict(os.environ, TABLED_CONN=srv.conn_str_printed or srv.conn_str(),
               TABLED_CONN_EXPLICIT=srv.conn_str(), TABLED_ENDPOINT=srv.endpoint,
               TABLED_HOST=srv.host, TABLED_PORT=str(srv.port))
    tap.ok(srv.conn_str_printed is not None, "server printed a connection string",
           "stdout: %r" % srv.stdout_lines)
    child_ok = 0
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    except OSError as e:
        tap.ok(False, "run %s" % " ".join(cmd), str(e))
        srv.stop_and_check(tap)
        tap.done()
    killer = threading.Timer(limit, p.kill)
    killer.daemon = True
    killer.start()
    for raw in iter(p.stdout.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        m = re.match(r"^(not ok|ok)\b(?:\s+\d+)?\s*(?:-\s*)?(.*)$", line)
        if m:
            child_ok += 1
            tap.ok(m.group(1) == "ok", m.group(2))
        elif re.match(r"^1\.\.\d+", line):
            continue
        else:
            tap.diag(line)
    rc = p.wait()
    killer.cancel()
    tap.ok(rc == 0, "%s exited with status 0" % os.path.basename(cmd[-1]),
           "status %s (a negative status is a signal; -9 is the %d s time limit)" % (rc, limit))
    tap.ok(child_ok > 0, "the test program reported at least one check")
    srv.stop_and_check(tap)
    tap.done()


if __name__ == "__main__":
    sys.exit(_relay_main(sys.argv[1:]))


def clean_env(**extra):
    """The environment without the calling make's job server and flags
    (a test that runs make itself must not join make check's jobs), plus
    extra."""
    env = dict(os.environ)
    for v in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "CFLAGS", "LDFLAGS"):
        env.pop(v, None)
    env.update(extra)
    return env


def run_make(*args, cwd=None, env=None, timeout=600):
    """make -s -C DIR ARGS (DIR: the build tree, $TOP_BUILDDIR) in
    clean_env(); the CompletedProcess, output captured."""
    top = os.path.abspath(os.environ.get("TOP_BUILDDIR", "."))
    return subprocess.run([os.environ.get("MAKE", "make"), "-s", "-C", cwd or top] + list(args),
                          capture_output=True, env=env or clean_env(), timeout=timeout)


def free_port():
    """A loopback port nothing listens on right now (the caller's server
    binds it next)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_cert(tmp, name=""):
    """A self-signed P-256 certificate for 127.0.0.1 and localhost, made
    with the openssl CLI into tmp (files NAME-cert.pem and NAME-key.pem, or
    cert.pem and key.pem); returns (cert, key) paths or raises."""
    pre = name + "-" if name else ""
    cert, key = os.path.join(tmp, pre + "cert.pem"), os.path.join(tmp, pre + "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)
    return cert, key


def wait_for(cond, seconds, step=0.2):
    """Polls cond() until it is true or seconds passed; returns its last
    value."""
    end = time.monotonic() + seconds
    while True:
        v = cond()
        if v or time.monotonic() >= end:
            return v
        time.sleep(step)


def metric_series(port, prefix):
    """The admin listener's /metrics series whose names start with prefix,
    as {series with its labels: value}."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    return {m.group(1): float(m.group(2)) for m in
            re.finditer(r"^(%s\S*) (\S+)$" % re.escape(prefix), text, re.M)}


def admin_port(srv):
    """The admin listener's port from srv's "Admin endpoint:" line."""
    for line in list(srv.stdout_lines):
        m = re.search(r"Admin endpoint:\s+http://[^ ]+:(\d+)/metrics", line)
        if m:
            return int(m.group(1))
    raise ServerError("no Admin endpoint line: %r" % srv.stdout_lines)
