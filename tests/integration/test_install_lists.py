#!/usr/bin/python3
"""Integration test: the Debian package lists what "make install" installs.

make install DESTDIR=tmp with the directories debian/rules uses (prefix
/usr, sysconfdir /etc, the multiarch libdir, /lib/systemd/system), then
every installed file or link must be matched by a line of debian/*.install
(dh_missing refuses the package otherwise), and every line must match an
installed file (dh_install refuses a line matching nothing). The same
comparison is run on a deliberately broken list (one line dropped, one
made-up line added) and must report both, so this test cannot pass by
comparing nothing. Prints TAP."""
import fnmatch
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tabled_harness as h  # noqa: E402

TOP_SRCDIR = os.path.abspath(os.environ.get("TOP_SRCDIR", "."))


make = h.run_make


def multiarch():
    """The Debian multiarch triplet debhelper puts in libdir."""
    for argv in (["dpkg-architecture", "-qDEB_HOST_MULTIARCH"],
                 [os.environ.get("CC", "cc"), "-print-multiarch"]):
        try:
            out = subprocess.run(argv, capture_output=True, timeout=30).stdout.decode().strip()
        except OSError:
            continue
        if out:
            return out
    return "x86_64-linux-gnu"


def installed(root):
    """Every file and symbolic link under root, relative to it."""
    out = set()
    for d, subdirs, fs in os.walk(root):
        for f in fs + [s for s in subdirs if os.path.islink(os.path.join(d, s))]:
            out.add(os.path.relpath(os.path.join(d, f), root))
    return out


def read_lists(debian):
    """{package.install file name: [source patterns]} (dh_install syntax:
    first word is the source; comments and blank lines skipped)."""
    lists = {}
    for f in sorted(glob.glob(os.path.join(debian, "*.install"))):
        pats = []
        for line in open(f):
            line = line.split("#", 1)[0].split()
            if line:
                pats.append(line[0].strip("/"))
        lists[os.path.basename(f)] = pats
    return lists


def matches(pat, path):
    """dh_install semantics: a glob naming the file, or a directory above it."""
    return fnmatch.fnmatchcase(path, pat) or any(
        fnmatch.fnmatchcase(path[:i], pat) for i in range(len(path)) if path[i] == "/")


def compare(files, lists):
    """(installed files no list names, list lines naming no installed file)."""
    pats = [(name, p) for name, ps in lists.items() for p in ps]
    unlisted = sorted(f for f in files if not any(matches(p, f) for _, p in pats))
    dangling = sorted("%s: %s" % (name, p) for name, p in pats
                      if not any(matches(p, f) for f in files))
    return unlisted, dangling


def main():
    tap = h.Tap()
    h.watchdog(600, tap=tap)
    tmp = tempfile.mkdtemp(prefix="tabled-lists-")
    dest = os.path.join(tmp, "dest")
    try:
        p = make("print-install-dirs")
        dirs = dict(l.split("=", 1) for l in p.stdout.decode().splitlines() if "=" in l)
        tap.ok(p.returncode == 0 and "bindir" in dirs, "install directories known",
               p.stderr.decode())
        tap.ok(bool(dirs.get("systemdsystemunitdir")),
               "the build installs the systemd unit, as the package's does",
               "configure was run with --with-systemdsystemunitdir=no; the package "
               "lists the unit, so this comparison needs a build that installs it")
        # The directories of debian/rules (debhelper's dh_auto_configure and
        # its --with-systemdsystemunitdir), given to make as overrides.
        p = make("install", "DESTDIR=" + dest, "prefix=/usr", "sysconfdir=/etc",
                 "localstatedir=/var", "libdir=/usr/lib/" + multiarch(),
                 "systemdsystemunitdir=/lib/systemd/system")
        tap.eq(p.returncode, 0, "make install DESTDIR=... with Debian's directories succeeds")
        if p.returncode:
            tap.diag(p.stderr.decode()[-3000:])
        files = installed(dest)
        lists = read_lists(os.path.join(TOP_SRCDIR, "debian"))
        tap.ok(len(files) >= 5 and sorted(lists) == ["tabled-dev.install", "tabled.install"],
               "files installed (%d) and both package lists read" % len(files),
               "files: %s; lists: %s" % (sorted(files), sorted(lists)))
        unlisted, dangling = compare(files, lists)
        tap.eq(unlisted, [], "every installed file is in a debian/*.install list "
               "(else dh_missing fails make deb: add it to the package's list)")
        tap.eq(dangling, [], "every debian/*.install line names an installed file")

        # The comparison itself: drop one line, add one naming nothing.
        broken = {name: list(ps) for name, ps in lists.items()}
        dropped = broken["tabled-dev.install"].pop(0) if broken["tabled-dev.install"] else ""
        broken["tabled.install"].append("usr/share/tabled/not-installed")
        unlisted, dangling = compare(files, broken)
        tap.ok(any(matches(dropped, f) for f in unlisted),
               "a list missing a line (%s) is reported" % dropped, "got: %s" % unlisted)
        tap.eq(dangling, ["tabled.install: usr/share/tabled/not-installed"],
               "a list line naming no installed file is reported")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tap.done()


if __name__ == "__main__":
    main()
