#!/usr/bin/python3
"""Integration test: what "make install" installs, and what it promises.

  - make install DESTDIR=tmp: exactly the expected files (binary, the
    azurite-table and azurite links, the postgres module (a build with
    libpq), which the installed tabled loads, the man pages, the example configuration,
    the systemd unit, the plug-in headers, tabled-backend.pc, the README); the unit names the
    installed binary and configuration; make uninstall removes them all.
  - the example plug-in (backends/examples/counting.c with the memory
    backend it wraps), copied away from the tree and built with
    cc -shared $(pkg-config --cflags tabled-backend) against the installed
    headers only, is loaded by the installed tabled and serves a request.
  - man -l renders tabled(1) and tabled.conf(5) without warnings.
  - every flag of tabled --help, azurite-table --help and azurite --help
    appears in tabled(1), so they cannot drift apart.
Prints TAP."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

TOP_SRCDIR = os.path.abspath(os.environ.get("TOP_SRCDIR", "."))


make = h.run_make


def files_under(root):
    out = set()
    for d, _, fs in os.walk(root):
        for f in fs:
            out.add(os.path.relpath(os.path.join(d, f), root))
    return out


def render(page):
    """(status, text, stderr) of man -l with groff warnings on."""
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    p = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, env=env,
                       timeout=60)
    text = re.sub(r".\x08", "", p.stdout.decode("utf-8", "replace"))
    return p.returncode, text, p.stderr.decode("utf-8", "replace")


def help_flags(argv):
    out = subprocess.run(argv + ["--help"], capture_output=True, timeout=10).stdout.decode()
    return sorted(set(re.findall(r"(?<![\w-])(--[a-zA-Z][\w-]*|-[a-zA-Z])\b", out)))


def plugin_check(tap, dest, dirs, tmp):
    pcdir = dest + dirs["pkgconfigdir"]
    env = dict(os.environ, PKG_CONFIG_PATH=pcdir, PKG_CONFIG_SYSROOT_DIR=dest)
    p = subprocess.run(["pkg-config", "--cflags", "tabled-backend"], capture_output=True,
                       env=env, timeout=30)
    cflags = p.stdout.decode().split()
    tap.eq(cflags, ["-I" + dest + dirs["tabledincludedir"]],
           "pkg-config --cflags tabled-backend names the installed header directory")
    src = os.path.join(tmp, "plugin")
    os.makedirs(src)
    for f in ("backends/examples/counting.c", "backends/memory.c"):
        shutil.copy(os.path.join(TOP_SRCDIR, f), src)
    so = os.path.join(src, "libcounting.so")
    cc = os.environ.get("CC", "cc")
    p = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror"] + cflags +
                       ["counting.c", "memory.c", "-o", so], cwd=src, capture_output=True,
                       timeout=120)
    tap.ok(p.returncode == 0, "example plug-in builds against the installed headers only",
           p.stderr.decode()[-2000:])
    if p.returncode:
        return
    report = os.path.join(tmp, "counts.txt")
    os.environ["TABLED"] = dest + dirs["bindir"] + "/tabled"
    s = h.Server(args=["--backend", so, "--backend-option", "counting-report=" + report],
                 backend=None)
    os.environ.pop("TABLED_BACKEND_ARGS", None)
    s.start()
    try:
        r = h.Http(s).create_table("plugged")
        tap.eq(r.status, 201, "the installed tabled serves through the plug-in")
    finally:
        rc, _ = s.stop()
    tap.eq(rc, 0, "clean stop")
    counts = open(report).read() if os.path.exists(report) else ""
    tap.ok(re.search(r"^apply [1-9]", counts, re.M) is not None,
           "the plug-in's counters saw the write", counts)


def main():
    tap = h.Tap()
    h.watchdog(600, tap=tap)
    tmp = tempfile.mkdtemp(prefix="tabled-install-")
    dest = os.path.join(tmp, "dest")
    try:
        p = make("print-install-dirs")
        dirs = dict(l.split("=", 1) for l in p.stdout.decode().splitlines() if "=" in l)
        tap.ok(p.returncode == 0 and "bindir" in dirs, "install directories known",
               p.stderr.decode())
        p = make("install", "DESTDIR=" + dest)
        tap.eq(p.returncode, 0, "make install DESTDIR=... succeeds")
        if p.returncode:
            tap.diag(p.stderr.decode()[-3000:])
        want = {dirs["bindir"] + "/tabled", dirs["bindir"] + "/azurite-table",
                dirs["bindir"] + "/azurite", dirs["bindir"] + "/tabled-backend-check",
                dirs["man1dir"] + "/tabled.1", dirs["man1dir"] + "/tabled-backend-check.1", dirs["man5dir"] + "/tabled.conf.5",
                dirs["man1dir"] + "/azurite-table.1", dirs["man1dir"] + "/azurite.1",
                dirs["tabledconfdir"] + "/tabled.conf",
                dirs["tabledincludedir"] + "/backends/backend.h",
                dirs["tabledincludedir"] + "/backends/checks.h",
                dirs["tabledincludedir"] + "/backends/bkey.h",
                dirs["tabledincludedir"] + "/backends/skiplist.h",
                dirs["pkgconfigdir"] + "/tabled-backend.pc",
                dirs["docdir"] + "/README.md"}
        if dirs.get("systemdsystemunitdir"):
            want.add(dirs["systemdsystemunitdir"] + "/tabled.service")
        # the postgres backend's module, in a build with libpq
        have_pg = os.path.exists(os.path.join(os.environ.get("TOP_BUILDDIR", "."), "backends",
                                              ".libs", "postgres.so"))
        if have_pg:
            want.add(dirs["pkglibdir"] + "/postgres.so")
        want = {w.lstrip("/") for w in want}
        got = files_under(dest)
        tap.eq(sorted(got), sorted(want), "exactly the expected files are installed")
        tap.ok(all(w.startswith(dirs["prefix"].lstrip("/")) for w in got),
               "everything lands under the prefix")
        if have_pg:
            p = subprocess.run([dest + dirs["bindir"] + "/tabled", "--backend", "postgres",
                                "--help"], capture_output=True, timeout=60)
            tap.ok(p.returncode == 0 and b"conninfo" in p.stdout,
                   "the installed tabled loads the installed postgres module",
                   p.stderr.decode()[-2000:])
        link = os.path.join(dest, dirs["bindir"].lstrip("/"), "azurite-table")
        tap.eq(os.readlink(link) if os.path.islink(link) else None, "tabled",
               "azurite-table is a relative link to tabled")
        link_all = os.path.join(dest, dirs["bindir"].lstrip("/"), "azurite")
        tap.eq(os.readlink(link_all) if os.path.islink(link_all) else None, "tabled",
               "azurite is a relative link to tabled")
        unit = os.path.join(dest, dirs.get("systemdsystemunitdir", "").lstrip("/"),
                            "tabled.service")
        text = open(unit).read() if os.path.exists(unit) else ""
        tap.ok("ExecStart=%s/tabled --config %s/tabled.conf" % (dirs["bindir"],
                                                                dirs["tabledconfdir"]) in text,
               "unit runs the installed binary with the installed configuration")
        tap.ok(re.search(r"^Type=(notify|simple)$", text, re.M) and
               "StateDirectory=tabled" in text and "NoNewPrivileges=yes" in text and
               "ProtectSystem=strict" in text and "PrivateTmp=yes" in text,
               "unit: type, state directory, sandboxing")
        if shutil.which("systemd-analyze"):
            p = subprocess.run(["systemd-analyze", "verify", "--man=no", unit],
                               capture_output=True, timeout=60)
            errs = [l for l in p.stderr.decode().splitlines()
                    if "tabled.service" in l and "Command" not in l
                    and "not executable" not in l and "No such file" not in l]
            tap.ok(not errs, "systemd-analyze verify finds nothing wrong in the unit",
                   "\n".join(errs))
        tap.run(plugin_check, tap, dest, dirs, tmp)

        pages = [os.path.join(dest, dirs["man1dir"].lstrip("/"), "tabled.1"),
                 os.path.join(dest, dirs["man5dir"].lstrip("/"), "tabled.conf.5")]
        texts = {}
        for page in pages:
            rc, text, err = render(page)
            texts[os.path.basename(page)] = text
            tap.ok(rc == 0 and not err.strip() and len(text) > 1000,
                   "man -l %s renders without warnings" % os.path.basename(page), err)
        man1 = texts.get("tabled.1", "")
        for argv, what in (([h.tabled_path()], "tabled"),
                           ([link], "azurite-table"), ([link_all], "azurite")):
            flags = help_flags(argv)
            missing = [f for f in flags if not re.search(r"(?<![\w-])" + re.escape(f) +
                                                            r"(?![\w-])", man1)]
            tap.ok(len(flags) > 10 and not missing,
                   "every flag of %s --help is in tabled(1) (%d flags)" % (what, len(flags)),
                   "missing: %s" % missing)
        p = make("uninstall", "DESTDIR=" + dest)
        tap.eq(p.returncode, 0, "make uninstall succeeds")
        tap.eq(sorted(files_under(dest)), [], "make uninstall removes every file")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
