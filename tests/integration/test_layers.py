#!/usr/bin/python3
"""Layering check: the folders are layers, and nothing reaches up.

1. #include "..." lines of every source and header, by folder:
     core/      core/ only (and the top-level config.h): the floor
     backends/  core/, backends/
     store/     core/, backends/backend.h, backends/checks.h, backends/bkey.h
                (installed interface headers), backends/registry.h (the built-in
                memory backend for snapshots), store/
     auth/      core/, auth/
     guard/     core/, guard/ (throttling and fault rules: a peer of auth/)
     advisor/   core/, advisor/ (the partition advisor)
     codec/     core/, store/, auth/, backends/backend.h, codec/ (the wire
                formats: no request context)
     filter/    core/, store/, codec/, filter/ (the $filter engine)
     protocol/  core/, auth/, guard/, advisor/, store/ but its internals
                (kv.h, store_int.h, purge.h, reclaim.h, snap.h, host.h:
                the pipeline writes only through store.h and catalog.h;
                no call of theirs either), codec/, filter/,
                protocol/ (the pipeline, and protocol/ops/)
     tools/     core/, backends/, store/, codec/, tools/ (files and the
                admin listener's HTTP: never the request pipeline)
     server/    anything but protocol/ and tools/; server/main.c, the
                composition root that builds the service, anything
   The application's configuration (server/config.h) is read at the top:
   the layers below, and the tools, get settings structs of their own.
   (config.h, written by configure, may be included anywhere.) A folder
   that does not exist yet (store/) is simply empty.
2. Calls: the object files of each folder, as built (nm: symbols defined
   and symbols used), give a graph of which folder calls which. A cycle
   between folders fails, printed with one symbol per step; so does a call
   a folder's include rule above forbids (server/main.o excepted; a call
   into backends/ counts as using backends/backend.h).
3. No folder holds more than a quarter of the lines of the layers.
Each offending line is printed. Object files whose source is gone (a stale
build after a file moved) are skipped. Prints TAP.
"""
import os
import re
import subprocess
import sys

SRC = os.environ.get("TOP_SRCDIR", ".")
BUILD = os.environ.get("TOP_BUILDDIR", ".")
MODULES = ["core", "guard", "advisor", "backends", "store", "auth", "codec", "filter", "protocol",
           "tools", "server"]
COMPOSITION_ROOT = "server/main"
# store/'s own headers: the kv layer over the backends and the catalogue's
# parts. The request pipeline writes only through store.h and catalog.h.
STORE_INTERNAL = ("store/kv.h", "store/store_int.h", "store/purge.h", "store/reclaim.h",
                  "store/snap.h", "store/host.h")
STORE_INTERNAL_CALLS = ("store_kv", "store_apply", "tables_load", "tables_read",
                        "tables_read_with", "tables_claim_id", "tables_add", "tables_remove",
                        "tables_set_acl", "tables_next_id", "tables_find")

n = 0
failed = 0


def check(ok, what, details=()):
    global n, failed
    n += 1
    for d in details:
        print("#   " + d)
    print(("ok" if ok else "not ok") + " %d - %s" % (n, what))
    if not ok:
        failed += 1


def allowed(frm_module, frm_path, target):
    """Whether a file of frm_module (frm_path, without extension) may use
    target: a path such as "core/buf.h" (an include) or a module name
    followed by "/" (a call into that module)."""
    top = target.split("/", 1)[0] if "/" in target else ""
    if target == "config.h":
        return True
    if frm_path == COMPOSITION_ROOT:
        return True
    rules = {
        "core": lambda: top == "core",
        "backends": lambda: top in ("core", "backends"),
        "store": lambda: top in ("core", "store") or target in ("backends/backend.h",
                                                                "backends/checks.h",
                                                                "backends/bkey.h",
                                                                "backends/registry.h"),
        "auth": lambda: top in ("core", "auth"),
        "guard": lambda: top in ("core", "guard"),
        "advisor": lambda: top in ("core", "advisor"),
        "codec": lambda: top in ("core", "store", "auth", "codec")
        or target.startswith("backends/backend.h"),
        "filter": lambda: top in ("core", "store", "codec", "filter"),
        "protocol": lambda: top in ("core", "auth", "guard", "advisor", "store", "codec", "filter",
                                    "protocol")
        and target not in STORE_INTERNAL,
        "tools": lambda: top in ("core", "backends", "store", "codec", "tools"),
        "server": lambda: top not in ("protocol", "tools"),
    }
    return rules[frm_module]()


def sources():
    """(module, path relative to SRC) of every .c and .h file of the layers."""
    for m in MODULES:
        root = os.path.join(SRC, m)
        for dirpath, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield m, os.path.relpath(os.path.join(dirpath, f), SRC)


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def check_includes():
    bad = []
    nfiles = 0
    for m, path in sources():
        nfiles += 1
        stem = os.path.splitext(path)[0]
        with open(os.path.join(SRC, path), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                mt = INCLUDE.match(line)
                if mt and not allowed(m, stem, mt.group(1)):
                    bad.append("%s:%d: %s" % (path, lineno, line.strip()))
    check(not bad, "no upward #include in %d files of %s" % (nfiles, ", ".join(MODULES)),
          ["upward include: " + b for b in bad])


def objects():
    """(module, object path, source stem) of the built objects of each
    layer whose source still exists."""
    for m in MODULES:
        root = os.path.join(BUILD, m)
        for dirpath, _, files in os.walk(root):
            for f in sorted(files):
                if not f.endswith(".o"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), BUILD)
                d, base = os.path.split(rel)
                base = base[:-2]
                # automake names per-target objects "target-source.o": they
                # belong to test and fuzz programs built with their own
                # flags (and may be older than the tree), not to the
                # libraries tabled is linked from, so they are not judged
                if "-" in base:
                    continue
                if os.path.exists(os.path.join(SRC, d, base + ".c")):
                    yield m, rel, os.path.join(d, base)


def symbols(obj):
    """(defined, undefined) global symbol names of one object file."""
    out = subprocess.run(["nm", "-P", os.path.join(BUILD, obj)], capture_output=True,
                         text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRCVWGS" and kind.isupper():
            defined.add(name)
    return defined, undefined


def find_cycle(edges):
    """One cycle of the module graph as a list of modules, or None."""
    state = {}
    stack = []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state:
                c = visit(v)
                if c:
                    return c
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(edges):
        if u not in state:
            c = visit(u)
            if c:
                return c
    return None


def check_calls():
    objs = list(objects())
    if not objs:
        check(True, "call graph # SKIP no object files under %s (not built)" % BUILD)
        return
    where = {}   # symbol -> set of modules defining it
    home = {}    # symbol -> the source stem defining it
    uses = []    # (module, stem, obj, symbol)
    for m, obj, stem in objs:
        d, u = symbols(obj)
        for s in d:
            where.setdefault(s, set()).add(m)
            home[s] = stem
        for s in u:
            uses.append((m, stem, obj, s))
    edges = {}     # module -> set of modules
    evidence = {}  # (from, to) -> "obj calls symbol"
    upward = []
    for m, stem, obj, s in uses:
        for t in sorted(where.get(s, ())):
            if t == m:
                continue
            edges.setdefault(m, set()).add(t)
            evidence.setdefault((m, t), "%s uses %s" % (obj, s))
            # a call into backends/ is to what backend.h declares (calling
            # the other backends/ headers' functions needs their #include,
            # which check 1 judges)
            if not allowed(m, stem, "backends/backend.h" if t == "backends" else t + "/"):
                upward.append("%s uses %s (defined in %s/)" % (obj, s, t))
    # the request pipeline writes only through store.h and catalog.h: no
    # call into the kv layer or the catalogue's parts, nor the store's kv
    internal = []
    for m, stem, obj, s in uses:
        h = home.get(s, "")
        if m == "protocol" and (h + ".h" in STORE_INTERNAL or s in STORE_INTERNAL_CALLS):
            internal.append("%s uses %s (%s)" % (obj, s, h))
    check(not internal, "protocol/ calls nothing of the store's internals (kv, purges, "
          "reclaim, store_apply)", ["internal call: " + u for u in sorted(set(internal))])
    graph = ", ".join("%s -> %s" % (a, " ".join(sorted(b))) for a, b in sorted(edges.items()))
    print("# module calls: " + graph)
    check(not upward, "no call from a layer into one above it (%d objects)" % len(objs),
          ["upward call: " + u for u in sorted(set(upward))])
    cycle = find_cycle(edges)
    details = []
    if cycle:
        details.append("cycle: " + " -> ".join(cycle))
        for a, b in zip(cycle, cycle[1:]):
            details.append("  %s -> %s: %s" % (a, b, evidence[(a, b)]))
    check(not cycle, "no call cycle between modules", details)


def check_sizes():
    """No folder holds more than a quarter of the product's lines (.c and
    .h of the layers; a folder that large hides its design)."""
    lines = {}
    for m, rel in sources():
        with open(os.path.join(SRC, rel), encoding="utf-8", errors="replace") as f:
            lines[m] = lines.get(m, 0) + sum(1 for _ in f)
    total = sum(lines.values())
    big = ["%s/ %d of %d lines" % (m, c, total) for m, c in sorted(lines.items())
           if c * 4 > total]
    print("# lines: " + ", ".join("%s %d" % (m, c) for m, c in sorted(lines.items())))
    check(not big, "no folder holds more than a quarter of the lines", big)


check_includes()
check_calls()
check_sizes()
print("1..%d" % n)
sys.exit(1 if failed else 0)
