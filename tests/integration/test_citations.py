#!/usr/bin/python3
"""The repository stands alone: code, tests and docs cite only its own doc/.

1. No tracked file (outside ext/) cites the outside wire specification or
   design notes the project was started from: the upper-case word for the
   specification followed by anything, its section sign with a number, the
   upper-case word for the design notes, or a path into the directory
   that held them. The project's own wording is doc/protocol.md (wire
   behaviour) and doc/architecture.md (design).
2. Every pointer of the form "doc/NAME.md, Section" names a file of doc/
   and, when that file has a heading that the pointer's text starts with,
   is checked against it: a pointer whose text starts with no heading of
   the file fails.
The file list is `git ls-files` when the source is a git checkout, else
every file under the source tree (a release tarball). Prints TAP.
"""
import os
import re
import subprocess
import sys

SRC = os.environ.get("TOP_SRCDIR", ".")

# Built from pieces so that this file does not match itself.
OUTSIDE = "SP" + "EC"
NOTES = "DES" + "IGN"
PATTERNS = [
    (re.compile(r"\b" + OUTSIDE + r"\b"), "names the outside specification"),
    (re.compile("\u00a7" + r"\s*\d"), "cites a numbered outside section"),
    (re.compile(r"\b" + NOTES + r"\b"), "names the outside design notes"),
    (re.compile(r"\.\./shared\b|\bshared/(" + NOTES + "|" + OUTSIDE + r")\b"),
     "links outside the repository"),
]
# Checkers of this vocabulary quote it in their patterns.
EXEMPT = {"tests/integration/test_citations.py", "tests/integration/test_readme.py"}
SKIP_DIRS = ("ext/", ".git/", "autom4te.cache/", "build-aux/")

n = 0
failed = 0


def check(ok, what, details=()):
    global n, failed
    n += 1
    print(("ok %d - %s" if ok else "not ok %d - %s") % (n, what))
    if not ok:
        failed += 1
        for d in list(details)[:60]:
            print("#   " + d)
        if len(details) > 60:
            print("#   ... and %d more" % (len(details) - 60))


def tracked_files():
    try:
        out = subprocess.run(["git", "-C", SRC, "ls-files", "-z"], capture_output=True,
                             timeout=60, check=True).stdout
        files = [f for f in out.decode("utf-8", "replace").split("\0") if f]
        if files:
            return files
    except (OSError, subprocess.SubprocessError):
        pass
    files = []
    for root, dirs, names in os.walk(SRC):
        rel_root = os.path.relpath(root, SRC)
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = [d for d in dirs if not (rel_root + d + "/").startswith(SKIP_DIRS)]
        files += [rel_root + name for name in names]
    return files


def text_of(rel):
    try:
        with open(os.path.join(SRC, rel), "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None   # binary (images, archives)
    return data.decode("utf-8", "replace")


files = [f for f in tracked_files() if not f.startswith(SKIP_DIRS)]
check(len(files) > 100, "the file list holds the source tree (%d files)" % len(files))

texts = {}
for rel in files:
    t = text_of(rel)
    if t is not None:
        texts[rel] = t

# --- 1. no outside citations ----------------------------------------------
hits = []
for rel, text in sorted(texts.items()):
    if rel in EXEMPT:
        continue
    for i, line in enumerate(text.split("\n"), 1):
        for pat, what in PATTERNS:
            if pat.search(line):
                hits.append("%s:%d: %s: %s" % (rel, i, what, line.strip()[:110]))
check(not hits, "no tracked file cites the outside specification or design notes", hits)

# --- 2. pointers into doc/ name a section ---------------------------------
headings = {}
for rel, text in texts.items():
    if rel.startswith("doc/") and rel.endswith(".md"):
        headings[rel] = [m.group(1).strip() for m in re.finditer(r"^#{1,6} +(.+?) *$", text, re.M)]
check("doc/protocol.md" in headings and len(headings["doc/protocol.md"]) > 50,
      "doc/protocol.md exists with its sections")

# A pointer may wrap over comment lines: join them first.
LEADER = re.compile(r"\n[ \t]*(?:\*(?!/)|#|//|--)?[ \t]*")
POINTER = re.compile(r"\bdoc/([a-z][a-z0-9_-]*\.md),\s+(.{0,120})")
bad = []
count = 0
for rel, text in sorted(texts.items()):
    if rel in EXEMPT or "doc/" not in text:
        continue
    flat = LEADER.sub(" ", text)
    for m in POINTER.finditer(flat):
        doc = "doc/" + m.group(1)
        rest = m.group(2)
        if doc not in headings:
            bad.append("%s: points into %s, which does not exist" % (rel, doc))
            continue
        if not rest[:1].isupper() and not rest[:1] in "$@":
            continue   # "doc/x.md, and ..." is prose, not a section name
        count += 1
        if not any(rest.startswith(h) for h in headings[doc]):
            bad.append("%s: %s, %s... names no heading" % (rel, doc, rest[:50]))
check(count > 100, "pointers into doc/ found (%d)" % count)
check(not bad, "every pointer into doc/ names one of the file's headings", bad)

print("1..%d" % n)
sys.exit(1 if failed else 0)
