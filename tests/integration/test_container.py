#!/usr/bin/python3
"""Integration test: the container image (Dockerfile, .dockerignore), as far
as it can be checked without pulling a base image or running a container
engine (the image build itself is NOT run here):

  contract   two stages, FROM debian:12 then debian:12-slim; a non-root
             USER; VOLUME /data; WORKDIR /data; EXPOSE 10000 10001 10002;
             no ENTRYPOINT and Azurite's image's default CMD (so
             "docker run IMAGE azurite-table ..." runs that command)
  install    the build stage's configure prefix and install target, run
             into a temporary DESTDIR from this build tree: every path the
             runtime stage COPYs from it exists, with tabled, azurite-table
             and azurite in bin/
  libraries  the runtime stage's apt-get list is exactly the packages
             (dpkg -S) of the shared libraries the installed binary needs
             (its NEEDED entries, and the OpenSSL libraries it opens with
             dlopen when first needed: their sonames in config.h), libc6
             aside (in the base image)
  command    the image's CMD run against the installed binary in a temporary
             /data (0.0.0.0 -> 127.0.0.1, free ports): Azurite's readiness
             lines, an SDK call, data under /data; and the table-only
             command line with the working directory as its store
  context    .dockerignore leaves every source file in the build context
Prints TAP."""
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402
from test_azurite_table import Azurite, conn_str, free_port, KW  # noqa: E402

TABLE_LISTENING = "Azurite Table service is successfully listening at http://"

try:
    from azure.data.tables import TableServiceClient
    IMPORT_ERROR = None
except ImportError as e:
    IMPORT_ERROR = e

SRC = os.path.abspath(os.environ.get("TOP_SRCDIR", "."))
BUILD = os.path.abspath(os.environ.get("TOP_BUILDDIR", "."))
# The peer image's contract (github.com/Azure/Azurite, Dockerfile).
PEER_CMD = ["azurite", "-l", "/data", "--blobHost", "0.0.0.0", "--queueHost", "0.0.0.0",
            "--tableHost", "0.0.0.0"]
BASE_PACKAGES = {"libc6"}      # in debian:12-slim already


def parse(path):
    """The Dockerfile as stages: [{"from": ..., "name": ..., "ins": [(KW, args)]}]."""
    text = open(path).read()
    text = re.sub(r"\\\n", " ", text)          # continuation lines
    stages = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        kw, _, args = line.partition(" ")
        kw = kw.upper()
        if kw == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", args.strip(), re.I)
            stages.append({"from": m.group(1), "name": m.group(2), "ins": []})
        elif stages:
            stages[-1]["ins"].append((kw, args.strip()))
    return stages


def last(stage, kw):
    got = [a for k, a in stage["ins"] if k == kw]
    return got[-1] if got else None


def test_contract(tap, stages):
    tap.eq(len(stages), 2, "contract: two stages (build, runtime)")
    tap.ok(re.match(r"debian:12(\.\d+)?$", stages[0]["from"]) is not None,
           "contract: the build stage is FROM debian:12", stages[0]["from"])
    run = stages[-1]
    tap.eq(run["from"], "debian:12-slim", "contract: the runtime stage is FROM debian:12-slim")
    user = last(run, "USER")
    tap.ok(user and user.split(":")[0] not in ("root", "0"), "contract: USER is not root",
           user)
    tap.ok(any(k == "RUN" and "useradd" in a and (user or "?") in a for k, a in run["ins"]),
           "contract: the USER is created in the runtime stage")
    tap.eq(json.loads(last(run, "VOLUME") or "null"), ["/data"], "contract: VOLUME /data")
    tap.eq(last(run, "WORKDIR"), "/data", "contract: WORKDIR /data (the store of a command "
           "without -l lands in the volume)")
    ports = sorted(int(p) for k, a in run["ins"] if k == "EXPOSE" for p in a.split())
    tap.eq(ports, [10000, 10001, 10002], "contract: EXPOSE 10000 10001 10002")
    tap.eq(last(run, "ENTRYPOINT"), None, "contract: no ENTRYPOINT (a command replaces CMD)")
    tap.eq(json.loads(last(run, "CMD") or "null"), PEER_CMD,
           "contract: CMD is the peer image's default command")
    tap.ok(any(k == "RUN" and "chown" in a and "/data" in a for k, a in run["ins"]),
           "contract: /data belongs to the USER")


def build_install(stages):
    """(prefix, sysconfdir, target) of the build stage's RUN lines."""
    runs = " ".join(a for k, a in stages[0]["ins"] if k == "RUN")
    prefix = re.search(r"--prefix=(\S+)", runs)
    sysconf = re.search(r"--sysconfdir=(\S+)", runs)
    target = re.search(r"make (install\S*) DESTDIR=(\S+)", runs)
    return (prefix.group(1) if prefix else "/usr/local",
            sysconf.group(1) if sysconf else None,
            target.group(1) if target else None, target.group(2) if target else None)


def test_install(tap, stages, dest):
    prefix, sysconf, target, destdir = build_install(stages)
    tap.ok(target is not None, "install: the build stage runs make install* DESTDIR=...")
    if not target:
        return None
    cmd = ["make", "-C", BUILD, target, "DESTDIR=" + dest, "prefix=" + prefix]
    if sysconf:
        cmd.append("sysconfdir=" + sysconf)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    tap.ok(p.returncode == 0, "install: %s" % " ".join(cmd[3:]), p.stdout.decode()[-1500:])
    copies = [a.split() for k, a in stages[-1]["ins"] if k == "COPY"]
    for c in copies:
        tap.eq(c[0], "--from=" + (stages[0]["name"] or "0"), "install: COPY %s comes from the "
               "build stage" % c[1])
        src = c[1]
        tap.ok(src.startswith(destdir.rstrip("/") + "/"), "install: %s is under %s"
               % (src, destdir))
        local = os.path.join(dest, src[len(destdir.rstrip("/")) + 1:])
        tap.ok(os.path.exists(local), "install: %s exists after the install" % src)
    bindir = os.path.join(dest, prefix.lstrip("/"), "bin")
    for name in ("tabled", "azurite-table", "azurite"):
        tap.ok(os.access(os.path.join(bindir, name), os.X_OK),
               "install: bin/%s installed (on the image's PATH)" % name)
    tap.ok(any(c[1].rstrip("/") == "/out" + prefix + "/bin" or
               c[1].rstrip("/") == destdir.rstrip("/") + prefix + "/bin" for c in copies),
           "install: the runtime stage copies the whole bin/ (the links too)")
    return bindir


def package_of(path):
    """The Debian package owning a library path (merged /usr aware), or None."""
    cands = []
    for c in (path, os.path.realpath(path)):   # the link itself first
        cands.append(c)
        if c.startswith("/usr/lib/"):
            cands.append(c[4:])
        elif c.startswith("/lib/"):
            cands.append("/usr" + c)
    for c in cands:
        p = subprocess.run(["dpkg", "-S", c], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        if p.returncode == 0:
            return p.stdout.decode().split(":")[0].strip()
    return None


def test_libraries(tap, stages, exe):
    if not shutil.which("dpkg") or not shutil.which("objdump"):
        tap.ok(False, "libraries: dpkg and objdump (binutils) found")
        return
    # tabled, and the postgres backend's module it loads for --backend
    # postgres (libpq is the module's, not tabled's)
    objs = [exe] + [m for m in [os.path.join(BUILD, "backends", ".libs", "postgres.so")]
                    if os.path.exists(m)]
    needed, paths = [], {}
    for o in objs:
        needed += [n for n in re.findall(r"NEEDED\s+(\S+)", subprocess.run(
            ["objdump", "-p", o], stdout=subprocess.PIPE).stdout.decode()) if n not in needed]
        paths.update(re.findall(r"^\s*(\S+) => (\S+)", subprocess.run(
            ["ldd", o], stdout=subprocess.PIPE).stdout.decode(), re.M))
    # OpenSSL and libevent_openssl: opened with dlopen (core/sslload.c), by
    # the sonames configure wrote into config.h; where ld.so finds them
    with open(os.path.join(BUILD, "config.h")) as f:
        dl = re.findall(r'#define SSLLOAD_\w+_SONAME "([^"]+)"', f.read())
    cache = subprocess.run(["/sbin/ldconfig", "-p"], stdout=subprocess.PIPE).stdout.decode()
    for lib in dl:
        if lib not in needed:
            needed.append(lib)
        m = re.search(r"^\s*%s \(([^)]*)\) => (\S+)" % re.escape(lib), cache, re.M)
        if m and lib not in paths:
            paths[lib] = m.group(2)
    tap.ok(len(dl) == 3, "libraries: config.h names the three libraries opened with dlopen", dl)
    # A sanitizer build (configure --enable-sanitizers) also needs the
    # sanitizer runtimes; the image's build does not use them.
    san = [lib for lib in needed if re.match(r"lib(a|ub|l|t)san\.", lib)]
    if san:
        tap.diag("sanitizer runtimes left out of the comparison: %s" % ", ".join(san))
    needed = [lib for lib in needed if lib not in san]
    build_pkgs = apt_list(stages[0])
    want = set()
    for lib in needed:
        path = paths.get(lib, "")
        pkg = package_of(path)
        tap.ok(pkg is not None, "libraries: %s belongs to a package" % lib)
        # An optional library configure found here (libsystemd) whose
        # development package the image's build stage does not install is
        # not linked there.
        if pkg in BASE_PACKAGES:
            continue
        dev = package_of(os.path.join(os.path.dirname(path), lib.split(".so")[0] + ".so"))
        if dev and dev.endswith("-dev") and dev not in build_pkgs:
            tap.diag("%s left out: the image's build stage does not install %s" % (lib, dev))
            continue
        if pkg:
            want.add(pkg)
    declared = apt_list(stages[-1])
    want -= BASE_PACKAGES
    if san:
        # such a build also links libraries the release build drops
        tap.ok(declared <= want, "libraries: every runtime package is one the binary needs "
               "(sanitizer build)", "extra: %s" % sorted(declared - want))
    else:
        tap.eq(sorted(declared), sorted(want),
               "libraries: the runtime packages are those the binary needs")


def apt_list(stage):
    """The packages a stage's RUN lines name to apt-get install."""
    runs = " ".join(a for k, a in stage["ins"] if k == "RUN")
    m = re.search(r"apt-get install ((?:-\S+\s+)*)(.*?)(?:&&|$)", runs)
    return set(m.group(2).split()) if m else set()


def table_listening(az, timeout=15):
    """host:port of the "Azurite Table service is successfully listening"
    line (printed by both names: azurite prints no "successfully started
    on" line), or None when the process ended or the line did not come."""
    end = time.monotonic() + timeout
    while (line := az.next_line(end)) is not None:
        if line.startswith(TABLE_LISTENING):
            return line[len(TABLE_LISTENING):]
    return None


def test_command(tap, stages, bindir, tmp):
    """The image's default command against the installed binary."""
    cmd = json.loads(last(stages[-1], "CMD"))
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    ports = [free_port(), free_port(), free_port()]
    args = [a.replace("0.0.0.0", "127.0.0.1").replace("/data", data) for a in cmd[1:]]
    # ports of their own (10000-10002 may be taken on a shared machine)
    args += ["--blobPort", str(ports[0]), "--queuePort", str(ports[1]),
             "--tablePort", str(ports[2])]
    exe = os.path.join(bindir, cmd[0])
    if not os.access(exe, os.X_OK):
        tap.ok(False, "command: %s installed" % cmd[0])
        return
    az = Azurite(exe, args, cwd=data)
    where = table_listening(az)
    tap.eq(where, "127.0.0.1:%d" % ports[2], "command: %s: readiness lines"
           % shlex.join([cmd[0]] + args))
    if where is None:
        tap.diag("stdout: %s\nstderr: %s" % (az.lines, az.stderr()[-2000:]))
        az.stop()
        return
    svc = TableServiceClient.from_connection_string(conn_str(ports[2]), **KW)
    svc.create_table("imagecmd").create_entity({"PartitionKey": "p", "RowKey": "r"})
    tap.eq([t.name for t in svc.list_tables()], ["imagecmd"], "command: SDK create and list")
    tap.eq(az.stop(), 0, "command: exit 0 on SIGTERM (docker stop)")
    tap.ok(os.path.isdir(os.path.join(data, "__tabled_table__")), "command: the store is in /data")
    # docker run IMAGE azurite-table --tableHost 0.0.0.0: WORKDIR is the store
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    port = free_port()
    az = Azurite(os.path.join(bindir, "azurite-table"),
                 ["--tableHost", "127.0.0.1", "--tablePort", str(port)], cwd=work)
    tap.eq(az.wait_ready(), "127.0.0.1:%d" % port, "command: azurite-table --tableHost: ready")
    az.stop()
    tap.ok(os.path.isdir(os.path.join(work, "__tabled_table__")),
           "command: azurite-table without -l stores in the working directory")


def ignored(rel, patterns):
    """Whether .dockerignore's patterns (last match wins) exclude rel."""
    out = False
    for p in patterns:
        neg = p.startswith("!")
        p = p[1:] if neg else p
        pats = [p] + ([p[3:]] if p.startswith("**/") else [])
        parts = rel.split("/")
        hit = any(fnmatch.fnmatchcase("/".join(parts[:i]), q)
                  for q in pats for i in range(1, len(parts) + 1))
        if hit:
            out = not neg
    return out


def test_context(tap):
    pats = [l.strip() for l in open(os.path.join(SRC, ".dockerignore"))
            if l.strip() and not l.startswith("#")]
    src_ext = (".c", ".h", ".inc", ".am", ".ac", ".py", ".sh", ".md", ".1", ".5", ".html",
               ".in", ".mjs")
    lost = []
    for root, dirs, files in os.walk(SRC):
        dirs[:] = [d for d in dirs if d not in (".git", "node_modules", "azurite-deps",
                                                 "bench-deps", "autom4te.cache")]
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), SRC)
            if rel.endswith(src_ext) and rel != "config.h" and not rel.endswith(
                    ("Makefile.in", "config.h.in")) and ignored(rel, pats):
                lost.append(rel)
    tap.eq(lost, [], "context: .dockerignore keeps every source file")
    for f in ("Makefile", "config.status", "tabled", "tests/unit/test_http"):
        tap.ok(ignored(f, pats), "context: %s (a local build) stays out" % f)


def main():
    tap = h.Tap()
    h.watchdog(900, tap=tap)
    if IMPORT_ERROR:
        tap.ok(False, "azure-data-tables importable", str(IMPORT_ERROR))
        tap.done()
    engines = [e for e in ("docker", "podman", "buildah") if shutil.which(e)]
    tap.diag("container engines here: %s; the image build itself is not run by this test "
             "(it needs the debian:12 base images)" % (", ".join(engines) or "none"))
    stages = parse(os.path.join(SRC, "Dockerfile"))
    tap.run(test_contract, tap, stages)
    tap.run(test_context, tap)
    tmp = tempfile.mkdtemp(prefix="tabled-container-")
    try:
        bindir = None
        try:
            bindir = test_install(tap, stages, os.path.join(tmp, "out"))
        except Exception as e:  # noqa: BLE001
            tap.ok(False, "install raised %r" % e)
        if bindir:
            tap.run(test_libraries, tap, stages, os.path.join(bindir, "tabled"))
            tap.run(test_command, tap, stages, bindir, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
