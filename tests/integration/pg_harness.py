#!/usr/bin/python3
"""pg_harness - a private PostgreSQL server for the tests (stdlib only).

  PgServer  initdb in a temporary directory, a unix socket there and a
            free port, no TCP listener, fsync=off; no system service
            touched. PostgreSQL refuses to run as root, so as root the
            server runs as "nobody" (runuser) in a directory that user
            owns. stop() is "pg_ctl -m immediate" (a crash: nothing blocked
            on a row lock can commit meanwhile), start() brings it back on
            the same data directory and port, new_db() creates an empty
            database and returns its conninfo. cleanup() stops it and
            removes the directory; it runs at exit and on SIGINT, SIGTERM
            and SIGHUP too.
  skip_reason()  why no server can be started (binaries missing), or None.

Run as a program:

  pg_harness.py run CMD [ARG...]
      starts a server, runs CMD with PGHOST, PGPORT, PGUSER, PGDATABASE
      (libpq reads them), TABLED_PG_CONNINFO and PG_HARNESS_STATE in its
      environment (in a process group of its own, killed whole when the
      harness is signalled), removes the server and exits with CMD's
      status; prints
      "1..0 # SKIP ..." (TAP) and exits 0 when the binaries are missing.
  pg_harness.py stop | start
      stops / starts the server of PG_HARNESS_STATE (for fault tests).
  pg_harness.py newdb [--conninfo | --option | --tabled-args] [SECTION]
      creates an empty database on that server and prints its conninfo:
      bare, as "conninfo=..." (a backend option line, test_backend -s),
      or as "--backend postgres --backend-option conninfo=..." (tabled's
      arguments; the default). SECTION only goes into the name.
"""
import atexit
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid

PG_TOOLS = ("initdb", "postgres", "pg_ctl", "psql")


def find_bindir():
    """The directory holding initdb, postgres, pg_ctl and psql, or None:
    pg_config's first, then the newest /usr/lib/postgresql/*/bin."""
    dirs = []
    try:
        out = subprocess.run(["pg_config", "--bindir"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=10).stdout
        dirs.append(out.decode().strip())
    except (OSError, subprocess.SubprocessError):
        pass

    def version(d):
        m = re.search(r"/postgresql/(\d+)", d)
        return int(m.group(1)) if m else 0
    dirs += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    for d in dirs:
        if d and all(os.access(os.path.join(d, t), os.X_OK) for t in PG_TOOLS):
            return d
    return None


def skip_reason(top=None):
    """Why no private server can run here (a TAP skip message), or None.
    With top (the build tree), also when tabled was built without libpq
    (no postgres backend: its test_backend_pg program is not built)."""
    if top is not None and not os.path.exists(
            os.path.join(top, "tests", "unit", "test_backend_pg")):
        return "tabled was configured without libpq (no postgres backend)"
    if find_bindir() is None:
        return ("PostgreSQL server binaries (initdb, postgres, pg_ctl, psql; "
                "Debian postgresql-15) not installed")
    return None


def free_port():
    """A TCP port number nobody listens on now (the server only uses it to
    name its unix socket, so a later clash is harmless)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class PgError(Exception):
    pass


_live = []          # servers to clean up at exit or on a signal
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Signalled(SystemExit):
    """Raised in the main thread by SIGINT / SIGTERM / SIGHUP: the code
    unwinds (finally blocks, atexit) and exits with status 128 + signal."""

    def __init__(self, signum):
        SystemExit.__init__(self, 128 + signum)
        self.signum = signum


def _cleanup_all():
    """Stops and removes every server this process started."""
    while _live:
        _live[-1].cleanup()


def _on_signal(signum, frame):
    raise Signalled(signum)


_handlers_set = False


def _install_handlers():
    """atexit cleanup, and SIGINT / SIGTERM / SIGHUP turned into an
    exception (so cleanup runs once, from the main flow, never re-entered
    from a handler); once per process."""
    global _handlers_set
    if _handlers_set:
        return
    _handlers_set = True
    atexit.register(_cleanup_all)
    for sig in _SIGNALS:
        try:
            if signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
                signal.signal(sig, _on_signal)
        except ValueError:          # not the main thread
            pass


class PgServer:
    """One private PostgreSQL cluster (see the module comment)."""

    def __init__(self, bindir=None, dir=None, port=None, as_nobody=None, settings=None):
        self.bindir = bindir or find_bindir()
        self.settings = dict(settings or {})
        if not self.bindir:
            raise PgError(skip_reason())
        self.dir = dir
        self.port = port
        self.as_nobody = (os.getuid() == 0) if as_nobody is None else as_nobody
        self.owned = False          # created (and removed) by this object

    # -- state shared with the "stop", "start" and "newdb" commands --------
    def state(self):
        return {"bindir": self.bindir, "dir": self.dir, "port": self.port,
                "as_nobody": self.as_nobody}

    @classmethod
    def from_state(cls, path):
        with open(path) as f:
            s = json.load(f)
        return cls(s["bindir"], s["dir"], s["port"], s["as_nobody"])

    def _as(self, cmd):
        """cmd run as the server's owner (nobody when we are root)."""
        return (["runuser", "-u", "nobody", "--"] + cmd) if self.as_nobody else cmd

    def _tool(self, name):
        return os.path.join(self.bindir, name)

    @property
    def data(self):
        return os.path.join(self.dir, "data")

    @property
    def log(self):
        return os.path.join(self.dir, "server.log")

    # -- life cycle ----------------------------------------------------------
    def create(self):
        """initdb in a new temporary directory and a first start."""
        self.dir = tempfile.mkdtemp(prefix="tabled-pg-")
        self.owned = True
        _install_handlers()
        _live.append(self)
        if self.as_nobody:
            os.chown(self.dir, _nobody_uid(), -1)
        self.port = free_port()
        p = subprocess.run(self._as([self._tool("initdb"), "-D", self.data, "-A", "trust",
                                     "-U", "tabled", "--no-sync"]),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        if p.returncode != 0:
            raise PgError("initdb failed:\n" + p.stdout.decode("utf-8", "replace"))
        self.start()
        return self

    def start(self):
        """Starts the server on its data directory and port; waits until it
        accepts connections."""
        p = subprocess.run(self._as([self._tool("pg_ctl"), "-D", self.data, "-l", self.log,
                                     "-w", "-t", "60", "-o",
                                     "-k %s -p %d -c listen_addresses= -c fsync=off "
                                     "-c max_connections=200" % (self.dir, self.port)
                                     + "".join(" -c %s=%s" % (k, _quote_opt(v))
                                               for k, v in self.settings.items()),
                                     "start"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=90)
        if p.returncode != 0:
            raise PgError("the PostgreSQL server did not start: %s\n%s"
                          % (p.stderr.decode("utf-8", "replace"), self.log_tail()))

    def stop(self):
        """Stops the server at once (-m immediate: like a crash)."""
        p = subprocess.run(self._as([self._tool("pg_ctl"), "-D", self.data, "-w", "-t", "60",
                                     "-m", "immediate", "stop"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=90)
        if p.returncode != 0:
            raise PgError("pg_ctl stop failed: %s" % p.stderr.decode("utf-8", "replace"))

    def restart(self):
        self.stop()
        self.start()

    def restart_with(self, **settings):
        """Restarts the server with these settings added to its own (a
        later -c wins: max_connections=5 replaces the default)."""
        self.settings.update(settings)
        self.restart()

    def hold_connections(self, n, dbname="postgres"):
        """n psql sessions that each hold a connection slot (pg_sleep(600));
        the caller kills them (Popen.kill). With max_connections too small
        some of them are refused and exit."""
        return [subprocess.Popen([self._tool("psql"), "-X", "-q", "-d", self.conninfo(dbname),
                                  "-c", "SELECT pg_sleep(600)"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for _ in range(n)]

    def cleanup(self):
        """Stops the server (if running; SIGKILL when pg_ctl could not)
        and removes its directory. Signals wait until it is done."""
        if not self.owned or not self.dir:
            return
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            master = self.postmaster_pid()
            if master:
                try:
                    subprocess.run(self._as([self._tool("pg_ctl"), "-D", self.data, "-w", "-t",
                                             "30", "-m", "immediate", "stop"]),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   timeout=40)
                except (OSError, subprocess.SubprocessError):
                    pass
                try:
                    os.kill(master, signal.SIGKILL)     # still there: pg_ctl failed
                except OSError:
                    pass
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
            if self in _live:
                _live.remove(self)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    # -- replication (failover tests) -----------------------------------------
    def make_standby(self, name="standby1", settings=None):
        """A streaming standby of this server: pg_basebackup -R (a
        standby.signal and primary_conninfo naming this server's socket,
        application_name NAME, replication slot NAME) into a new temporary
        directory, started on a free port of its own. Returns the started
        PgServer (owned: removed at cleanup)."""
        sb = PgServer(self.bindir, as_nobody=self.as_nobody, settings=settings)
        sb.dir = tempfile.mkdtemp(prefix="tabled-pg-standby-")
        sb.owned = True
        _live.append(sb)
        if sb.as_nobody:
            os.chown(sb.dir, _nobody_uid(), -1)
        sb.port = free_port()
        src = "host=%s port=%d user=tabled application_name=%s" % (self.dir, self.port, name)
        p = subprocess.run(self._as([self._tool("pg_basebackup"), "-D", sb.data, "-R",
                                     "-X", "stream", "-C", "-S", name, "--no-sync",
                                     "-c", "fast", "-d", src]),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        if p.returncode != 0:
            raise PgError("pg_basebackup failed:\n" + p.stdout.decode("utf-8", "replace"))
        # the copy carries the primary's files: no stale pid file, own log
        try:
            os.unlink(os.path.join(sb.data, "postmaster.pid"))
        except OSError:
            pass
        sb.start()
        return sb

    def replication_state(self):
        """[(application_name, state, sync_state)] of pg_stat_replication."""
        out = self.psql("SELECT application_name, state, sync_state FROM pg_stat_replication")
        return [tuple(ln.split("|")) for ln in out.splitlines() if ln]

    def promote(self):
        """pg_ctl promote -w: this standby becomes a primary (waits until it
        accepts writes)."""
        p = subprocess.run(self._as([self._tool("pg_ctl"), "-D", self.data, "-w", "-t", "60",
                                     "promote"]),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=90)
        if p.returncode != 0:
            raise PgError("pg_ctl promote failed: %s" % p.stdout.decode("utf-8", "replace"))

    def crash(self):
        """kill -9 of the postmaster (a machine or process crash as a
        failover manager sees it), then of its children left behind (they
        exit on their own once they notice, but nothing may linger)."""
        pids = self.backend_pids()
        for pid in pids:                # the postmaster first
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return pids

    def postmaster_pid(self):
        """The running server's process id (from postmaster.pid), or None."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def log_tail(self, n=20):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    # -- clients ---------------------------------------------------------------
    def conninfo(self, dbname="postgres"):
        return "host=%s port=%d user=tabled dbname=%s" % (self.dir, self.port, dbname)

    def env(self):
        """libpq's environment variables naming this server."""
        return {"PGHOST": self.dir, "PGPORT": str(self.port), "PGUSER": "tabled",
                "PGDATABASE": "postgres"}

    def psql(self, sql, dbname="postgres"):
        """Runs SQL; returns its unaligned output (PgError on failure)."""
        p = subprocess.run([self._tool("psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                            "-d", self.conninfo(dbname), "-c", sql],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        if p.returncode != 0:
            raise PgError("psql %r failed: %s" % (sql, p.stderr.decode("utf-8", "replace")))
        return p.stdout.decode("utf-8", "replace")

    def new_db(self, hint=""):
        """Creates an empty database; returns its conninfo."""
        name = "t_%s_%s" % (re.sub(r"[^a-z0-9]", "_", hint.lower())[:30], uuid.uuid4().hex[:12])
        self.psql("CREATE DATABASE %s" % name)
        return self.conninfo(name)

    def backend_pids(self):
        """Process ids of the server's processes (postmaster and children)."""
        master = self.postmaster_pid()
        if not master:
            return []
        pids = [master]
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open("/proc/%s/stat" % d) as f:
                        st = f.read()
                    if int(st[st.rindex(")") + 2:].split()[1]) == master:
                        pids.append(int(d))
                except (OSError, ValueError):
                    pass
        return pids


def _quote_opt(v):
    """A setting's value as one word of the postgres command line pg_ctl -o
    passes through the shell ('' for an empty value)."""
    v = str(v)
    return "'%s'" % v.replace("'", "") if (not v or re.search(r"[^A-Za-z0-9_.,-]", v)) else v


def _nobody_uid():
    import pwd
    return pwd.getpwnam("nobody").pw_uid


def _state_server():
    path = os.environ.get("PG_HARNESS_STATE")
    if not path:
        sys.exit("pg_harness: PG_HARNESS_STATE is not set (run under 'pg_harness.py run')")
    return PgServer.from_state(path)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd = argv[1]
    if cmd == "run":
        if len(argv) < 3:
            sys.exit("usage: pg_harness.py run CMD [ARG...]")
        reason = skip_reason()
        if reason:
            print("1..0 # SKIP %s" % reason)
            return 0
        try:
            pg = PgServer().create()
        except PgError as e:
            print("not ok 1 - a private PostgreSQL server starts")
            for ln in str(e).splitlines():
                print("# " + ln)
            return 1
        state = os.path.join(pg.dir, "harness.json")
        with open(state, "w") as f:
            json.dump(pg.state(), f)
        env = dict(os.environ, TABLED_PG_CONNINFO=pg.conninfo(), PG_HARNESS_STATE=state,
                   **pg.env())
        sys.stdout.flush()
        child = None
        try:
            # its own process group, so that all of it can be ended
            child = subprocess.Popen(argv[2:], env=env, process_group=0)
            child.wait()
        finally:
            if child and child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
            if child and child.returncode != 0:
                for ln in pg.log_tail().splitlines():
                    print("# server: " + ln)
            pg.cleanup()
        return child.returncode if child.returncode >= 0 else 128 - child.returncode
    if cmd in ("stop", "start"):
        pg = _state_server()
        try:
            pg.stop() if cmd == "stop" else pg.start()
        except PgError as e:
            sys.exit(str(e))
        return 0
    if cmd == "newdb":
        form = "--tabled-args"
        rest = argv[2:]
        if rest and rest[0].startswith("--"):
            form = rest.pop(0)
        ci = _state_server().new_db(rest[0] if rest else "")
        if form == "--conninfo":
            print(ci)
        elif form == "--option":
            print("conninfo=" + ci)
        else:
            print("--backend postgres --backend-option 'conninfo=%s'" % ci)
        return 0
    sys.exit("pg_harness.py: unknown command %r" % cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
