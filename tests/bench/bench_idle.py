#!/usr/bin/python3
"""bench_idle - tabled's resident memory at idle, per feature (stdlib only).

Starts tabled in a fresh temporary directory for each configuration, waits
for its "ready at" line and then until its VmRSS has stopped moving, and
reads /proc/PID/status (VmRSS, RssAnon, RssFile) and /proc/PID/smaps (the
resident pages of each mapping). Nothing is sent to the server: this is
the footprint of a process that has started and waits for its first
request. (The signed configuration is the one exception: one request.) Each configuration is started --reps times, binaries alternated
within each round, and the median is printed (doc/performance.md, Idle
footprint).

Usage:
  bench_idle.py [--tabled [LABEL=]PATH]... [--configs NAME,...] [--reps N]
                [--breakdown] [--markdown]

  --tabled     the binary to measure (default $TABLED, else ./tabled); give it more than
               once to compare builds in the same run (old=/tmp/old/tabled)
  --configs    which configurations (default: all of them):
                 defaults  no option at all but --port 0 (LevelDB in ./data)
                 memory    --backend memory
                 flatfile  --backend flatfile
                 postgres  --backend postgres on a private PostgreSQL
                           (tests/integration/pg_harness.py; skipped without
                           the server binaries or without libpq in tabled)
                 tls       the defaults plus an HTTPS listener
                           (--tls-port on a free port, a self-signed
                           certificate; --tls-port 0 would be no listener)
                 admin     the defaults plus the admin listener
                           (--admin-port 0: metrics, advisor, dashboard)
                 throttle  the defaults plus --throttle
                 signed    the defaults after one SharedKey-signed request
                           (GET /Tables, sent right after the ready line:
                           libcrypto is loaded by the first signature)
  --breakdown  also the resident KiB of each mapping family (the binary,
               the C library, the C++ runtime with LevelDB, OpenSSL, libpq
               and what it pulls in, libsystemd and what it pulls in, the
               heap and anonymous mappings), median per configuration
  --markdown   tables in Markdown

make bench-idle runs it with BENCH_IDLE_ARGS.
"""
import argparse
import os
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.dont_write_bytecode = True   # keep the source tree clean

READY_RE = re.compile(rb"ready at https?://([^ :]+):(\d+)")
CONFIGS = ("defaults", "memory", "flatfile", "postgres", "tls", "admin", "throttle", "signed")

# Mapping families: a shared object's file name prefix -> its family.
FAMILIES = [
    ("tabled", ("tabled", "azurite")),
    ("glibc (libc, ld.so, libm)", ("libc.so", "libc-", "ld-linux", "libm.so", "libm-",
                                   "libdl", "libpthread", "libresolv")),
    ("LevelDB (libleveldb, libstdc++, libgcc_s, snappy)", ("libleveldb", "libstdc++",
                                                           "libgcc_s", "libsnappy")),
    ("OpenSSL (libcrypto, libssl)", ("libcrypto", "libssl")),
    ("libpq and its libraries", ("libpq", "libgssapi", "libkrb5", "libk5crypto", "libcom_err",
                                 "libkrb5support", "libldap", "liblber", "libsasl2",
                                 "libgnutls", "libkeyutils", "libp11-kit", "libidn2",
                                 "libunistring", "libtasn1", "libnettle", "libhogweed",
                                 "libgmp", "libffi")),
    ("libsystemd and its libraries", ("libsystemd", "libcap", "libgcrypt", "libgpg-error",
                                      "liblzma", "libzstd", "liblz4")),
    ("libevent, yajl, expat", ("libevent", "libyajl", "libexpat")),
]
FAMILY_ORDER = [f for f, _ in FAMILIES] + ["other files", "[heap]", "anonymous",
                                           "[stack] and others"]


def family_of(path):
    """The family of a mapping's pathname (as smaps prints it)."""
    if path == "[heap]":
        return "[heap]"
    if not path:
        return "anonymous"
    if path.startswith("["):
        return "[stack] and others"
    base = os.path.basename(path)
    for fam, prefixes in FAMILIES:
        if any(base.startswith(p) for p in prefixes):
            return fam
    return "other files"


def status_kib(pid):
    """VmRSS, RssAnon and RssFile of pid in KiB."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            k, _, v = ln.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0])
    return out


def smaps_families(pid):
    """Resident KiB per mapping family (and the anonymous part of each:
    the copy-on-write pages of a library's data and relocations)."""
    fams = {}
    cur = None
    with open("/proc/%d/smaps" % pid) as f:
        for ln in f:
            first = ln.split(None, 1)[0]
            if "-" in first and not first.endswith(":"):
                parts = ln.split(None, 5)
                cur = family_of(parts[5].strip() if len(parts) > 5 else "")
                fams.setdefault(cur, [0, 0])
            elif first == "Rss:":
                fams[cur][0] += int(ln.split()[1])
            elif first == "Anonymous:":
                fams[cur][1] += int(ln.split()[1])
    return fams


def self_signed(tmp):
    """A throwaway certificate and key for the tls configuration."""
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return cert, key


class Pg:
    """The private PostgreSQL of the postgres configuration, made on first
    use (None and a reason when it cannot run here)."""

    def __init__(self):
        self.server = None
        self.why = None

    def conninfo(self):
        if self.server is None and self.why is None:
            try:
                import pg_harness
                self.why = pg_harness.skip_reason()
                if self.why is None:
                    self.server = pg_harness.PgServer().create()
            except Exception as e:  # noqa: BLE001 - the reason is printed
                self.why = str(e).splitlines()[0]
        return self.server.new_db("idle") if self.server else None

    def cleanup(self):
        if self.server:
            self.server.cleanup()


def args_for(config, tmp, pg):
    """tabled's arguments for a configuration, or None when it cannot run."""
    base = ["--port", "0"]
    if config in ("defaults", "signed"):
        return base
    if config in ("memory", "flatfile"):
        return base + ["--backend", config]
    if config == "postgres":
        ci = pg.conninfo()
        return None if ci is None else base + ["--backend", "postgres",
                                               "--backend-option", "conninfo=" + ci]
    if config == "tls":
        cert, key = self_signed(tmp)
        # a free port: --tls-port 0 means no HTTPS listener at all
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        return base + ["--tls-port", str(port), "--tls-cert", cert, "--tls-key", key]
    if config == "admin":
        return base + ["--admin-port", "0"]
    if config == "throttle":
        return base + ["--throttle"]
    raise SystemExit("unknown configuration %r (known: %s)" % (config, ", ".join(CONFIGS)))


def signed_get(host, port):
    """One SharedKey-signed GET /Tables (devstoreaccount1); raises
    RuntimeError unless it is answered 200."""
    import tabled_harness as h

    class At:
        pass
    at = At()
    at.host, at.port = host, port
    r = h.Http(at).get("/Tables")
    if r.status != 200:
        raise RuntimeError("signed GET /Tables answered %d" % r.status)


def measure(binary, args, tmp, settle, timeout=60.0, signed=False):
    """Starts binary with args in tmp, waits for ready (then sends one
    signed request when signed) and for a steady VmRSS; returns (status
    dict, families) or raises RuntimeError."""
    p = subprocess.Popen([binary] + args, cwd=tmp, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out = b""
        end = time.monotonic() + timeout
        while not READY_RE.search(out):
            left = end - time.monotonic()
            if left <= 0 or p.poll() is not None:
                raise RuntimeError("no ready line: %s" % out.decode("utf-8", "replace")[-400:])
            r, _, _ = select.select([p.stdout], [], [], min(left, 1.0))
            if r:
                chunk = os.read(p.stdout.fileno(), 65536)
                if not chunk and p.poll() is not None:
                    continue
                out += chunk
        if signed:
            m = READY_RE.search(out)
            signed_get(m.group(1).decode(), int(m.group(2)))
        # steady: the same VmRSS three times 0.25 s apart, after settle s
        time.sleep(settle)
        last, same = None, 0
        end = time.monotonic() + 10.0
        while same < 3 and time.monotonic() < end:
            v = status_kib(p.pid)["VmRSS"]
            same = same + 1 if v == last else 1
            last = v
            time.sleep(0.25)
        return status_kib(p.pid), smaps_families(p.pid)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def mib(kib):
    return "%.2f" % (kib / 1024.0)


def table(header, rows, markdown):
    """Prints rows (lists of strings) under header, aligned or Markdown."""
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        for r in [header] + rows:
            print("  ".join(str(x).ljust(w[i]) if i == 0 else str(x).rjust(w[i])
                            for i, x in enumerate(r)))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tabled", action="append", default=[])
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--breakdown", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    bins = []
    for t in a.tabled or [os.environ.get("TABLED", "./tabled")]:
        label, sep, path = t.partition("=")
        if not sep:
            label, path = (t if len(a.tabled) > 1 else "tabled"), t
        bins.append((label, os.path.abspath(path)))
    configs = [c for c in a.configs.split(",") if c]
    pg = Pg()
    res = {}            # (label, config) -> list of (status, families)
    skipped = {}        # (label, config) -> why
    try:
        for rep in range(a.reps):
            for c in configs:
                for label, path in bins:
                    if (label, c) in skipped:
                        continue
                    tmp = tempfile.mkdtemp(prefix="tabled-idle-")
                    try:
                        args = args_for(c, tmp, pg)
                        if args is None:
                            skipped[(label, c)] = pg.why
                            continue
                        m = measure(path, args, tmp, a.settle, signed=c == "signed")
                        res.setdefault((label, c), []).append(m)
                    except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
                        skipped[(label, c)] = (str(e).strip().splitlines() or ["?"])[-1][-120:]
                    finally:
                        shutil.rmtree(tmp, ignore_errors=True)
            print("round %d of %d done" % (rep + 1, a.reps), file=sys.stderr)
    finally:
        pg.cleanup()

    def med(samples, f):
        return statistics.median(f(s) for s in samples)

    print("Idle resident memory, MiB: median of %d starts (min-max), binaries alternated"
          % a.reps)
    print()
    rows = []
    for c in configs:
        for label, _ in bins:
            key = (label, c)
            if key in skipped or key not in res:
                rows.append([c, label, "-", "-", "-", "-",
                             "not run: " + skipped.get(key, "?")])
                continue
            s = res[key]
            vm = [x[0]["VmRSS"] for x in s]
            rows.append([c, label, mib(med(s, lambda x: x[0]["VmRSS"])),
                         "%s-%s" % (mib(min(vm)), mib(max(vm))),
                         mib(med(s, lambda x: x[0]["RssAnon"])),
                         mib(med(s, lambda x: x[0]["RssFile"])), ""])
    table(["config", "binary", "VmRSS", "range", "RssAnon", "RssFile", "note"], rows,
          a.markdown)
    if not a.breakdown:
        return 0
    for c in configs:
        keys = [(label, c) for label, _ in bins if (label, c) in res]
        if not keys:
            continue
        print("Resident KiB per mapping family, %s (median; anonymous part in brackets)" % c)
        print()
        rows = []
        for fam in FAMILY_ORDER:
            row = [fam]
            for k in keys:
                rss = med(res[k], lambda x: x[1].get(fam, [0, 0])[0])
                anon = med(res[k], lambda x: x[1].get(fam, [0, 0])[1])
                row.append("%d (%d)" % (rss, anon) if rss else "-")
            if any(x != "-" for x in row[1:]):
                rows.append(row)
        rows.append(["total"] + ["%d" % med(res[k], lambda x: sum(v[0] for v in x[1].values()))
                                 for k in keys])
        table(["family"] + [k[0] for k in keys], rows, a.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
