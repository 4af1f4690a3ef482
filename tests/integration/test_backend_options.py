#!/usr/bin/env python3
"""Backend options as rows: every built-in backend refuses an unknown or
out-of-range --backend-option with its name and exit status 2 (on the
command line and from a config file), `tabled --backend NAME --help` lists
the rows, `tabled --help` lists the subcommands, and doc/tabled.1's BACKEND
OPTIONS section says the same as the rows. Prints TAP."""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from tabled_harness import tabled_path  # noqa: E402

TABLED = tabled_path()
MAN = os.path.join(TOP, "doc", "tabled.1")

n = 0
failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    if not cond:
        failed += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, what))
    sys.stdout.flush()


def run(*args):
    return subprocess.run([TABLED] + list(args), capture_output=True, text=True, timeout=60)


def backend_help(name):
    """(name, arg, text) rows of `tabled --backend NAME --help`."""
    r = run("--backend", name, "--help")
    ok(r.returncode == 0, "tabled --backend %s --help exits 0" % name)
    lines = r.stdout.splitlines()[1:]
    rows = []
    for i in range(0, len(lines) - 1, 2):
        opt, arg = lines[i].strip().split("=", 1)
        rows.append((opt, arg, lines[i + 1].strip()))
    return rows


def man_rows(name):
    """The same rows from doc/tabled.1's BACKEND OPTIONS, subsection name."""
    text = open(MAN, encoding="utf-8").read()
    sec = text.split(".SH BACKEND OPTIONS", 1)[1].split("\n.SH ", 1)[0]
    parts = re.split(r"^\.SS (\S+)\n", sec, flags=re.M)
    body = dict(zip(parts[1::2], parts[2::2])).get(name, "")
    rows = []
    lines = body.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'^\.BI "(.*)=" "?([^"]*)"?$', line)
        if m:
            un = lambda s: s.replace("\\-", "-").replace("\\\\", "\\")
            rows.append((un(m.group(1)), un(m.group(2)), un(lines[i + 1])))
    return rows


backends = ["leveldb", "flatfile"]
have_pg = run("--backend", "postgres", "--help").returncode == 0
if have_pg:
    backends.append("postgres")

# One known option and a value out of its range, per backend.
out_of_range = {"leveldb": "bloom-bits=65", "flatfile": "compact-garbage-pct=0",
                "postgres": "pool-size=0"}

with tempfile.TemporaryDirectory() as tmp:
    for b in backends + ["memory"]:
        data = os.path.join(tmp, b)
        r = run("--backend", b, "--data", data, "--port", "0",
                "--backend-option", "no-such-option=1")
        ok(r.returncode == 2 and "unknown option 'no-such-option' for backend %s" % b
           in r.stderr, "%s: unknown option refused with its name, exit 2 (%r)"
           % (b, r.stderr.strip()[:200]))
        if b in out_of_range:
            r = run("--backend", b, "--data", data, "--port", "0",
                    "--backend-option", out_of_range[b])
            name = out_of_range[b].split("=")[0]
            ok(r.returncode == 2 and "option '%s' for backend %s is out of range" % (name, b)
               in r.stderr, "%s: %s refused as out of range, exit 2 (%r)"
               % (b, out_of_range[b], r.stderr.strip()[:200]))
            conf = os.path.join(tmp, b + ".conf")
            with open(conf, "w") as f:
                f.write("backend = %s\ndata = %s\nport = 0\nbackend-option = %s\n"
                        % (b, data, out_of_range[b]))
            r = run("--config", conf)
            ok(r.returncode == 2 and "'%s'" % name in r.stderr,
               "%s: out-of-range option from a config file refused, exit 2" % b)
            conf2 = os.path.join(tmp, b + "2.conf")
            with open(conf2, "w") as f:
                f.write("backend = %s\ndata = %s\nport = 0\nbackend-option = bogus=1\n"
                        % (b, data))
            r = run("--config", conf2)
            ok(r.returncode == 2 and "unknown option 'bogus'" in r.stderr,
               "%s: unknown option from a config file refused, exit 2" % b)

for b in backends:
    rows = backend_help(b)
    ok(len(rows) > 0 and all("default" in t for _, _, t in rows),
       "%s: --help lists options with their defaults" % b)
    mrows = man_rows(b)
    ok(rows == mrows, "%s: doc/tabled.1 BACKEND OPTIONS matches the rows (help %r, man %r)"
       % (b, [r[0] for r in rows], [r[0] for r in mrows]))

r = run("--backend", "memory", "--help")
ok(r.returncode == 0 and "takes no" in r.stdout, "memory: --help says it takes no options")

r = run("--help")
ok(r.returncode == 0 and all(re.search(r"^  %s " % s, r.stdout, re.M)
                             for s in ("export", "import", "advise")),
   "tabled --help lists the subcommands export, import, advise")
man = open(MAN, encoding="utf-8").read()
ok(".RB ( export \", \" import \", \" advise" in man,
   "tabled(1) --help entry names the subcommands")

print("1..%d" % n)
sys.exit(1 if failed else 0)
