#!/usr/bin/python3
"""The user documentation stays short, navigable, linked and in step.

1. README.md has at most 520 lines and a table of contents whose links all
   name a heading of the file.
2. No in-house vocabulary in what users read (README.md, the man pages,
   conf/tabled.conf, tabled --help): issue numbers, commit hashes, dated
   diary headings, words of the engineering notes.
3. Every relative link of README.md and doc/*.md names a file that exists.
4. Documented defaults match the option table: for each option whose
   --help line states a default (the help is generated from the table in
   server/config_options.c), tabled(1)'s entry for it states the same one,
   and tabled.conf(5)'s entry, where it lists defaults, agrees too.
Prints TAP.
"""
import glob
import os
import re
import subprocess
import sys

SRC = os.environ.get("TOP_SRCDIR", ".")
TABLED = os.environ.get("TABLED", "./tabled")

n = 0
failed = 0


def check(ok, what, details=()):
    global n, failed
    n += 1
    print(("ok %d - %s" if ok else "not ok %d - %s") % (n, what))
    if not ok:
        failed += 1
        for d in details:
            print("#   " + d)


def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped,
    spaces to hyphens."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def strip_code(text):
    """Text outside fenced code blocks (links and headings there are not
    links or headings)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


# --- 1. length and table of contents -------------------------------------
readme = read("README.md")
lines = readme.split("\n")
check(len(lines) <= 520, "README.md has at most 520 lines (has %d)" % len(lines))
prose = strip_code(readme)
headings = {slug(m.group(2)) for m in re.finditer(r"^(#{1,6}) +(.+)$", prose, re.M)}
toc = re.search(r"^## Contents\n(.*?)\n## ", prose, re.S | re.M)
check(toc is not None, "README.md has a '## Contents' section")
if toc:
    anchors = re.findall(r"\]\(#([^)]+)\)", toc.group(1))
    check(len(anchors) >= 8, "the table of contents lists the sections (%d)" % len(anchors))
    bad = [a for a in anchors if a not in headings]
    check(not bad, "every table-of-contents link names a heading", bad)
    sections = [slug(m.group(1)) for m in re.finditer(r"^## +(.+)$", prose, re.M)]
    missing = [s for s in sections if s != "contents" and s not in anchors]
    check(not missing, "every section is in the table of contents", missing)
bad = [a for a in re.findall(r"\]\(#([^)]+)\)", prose) if a not in headings]
check(not bad, "every in-page link of README.md names a heading", bad)

# --- 2. forbidden vocabulary ----------------------------------------------
FORBIDDEN = [
    (r"\bissues? #?\d+", "an issue number"),
    (r"(?<![\w&/])#\d+\b", "an issue reference (#N)"),
    (r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b", "a commit hash"),
    (r"\bwing\b", "'wing'"),
    (r"\bthe floor\b|\bfloor:", "'floor'"),
    (r"composition root", "'composition root'"),
    (r"\bSPEC\b", "'SPEC'"),
    (r"\.\./shared|shared/(DESIGN|SPEC)", "a link outside the repository"),
    (r"^#{1,6} \S.*\b20\d\d-\d\d-\d\d\b(?!.* on)", "a dated diary heading"),
    (r"\b(on|measured|since) 20\d\d-\d\d-\d\d\b", "a dated run diary"),
]


def vocabulary(name, text):
    hits = []
    for i, line in enumerate(text.split("\n"), 1):
        for pat, what in FORBIDDEN:
            if re.search(pat, line, re.I if what != "'SPEC'" else 0):
                hits.append("%s:%d: %s: %s" % (name, i, what, line.strip()[:100]))
    check(not hits, "%s has no in-house vocabulary" % name, hits)


vocabulary("README.md", readme)
for rel in sorted(glob.glob(os.path.join(SRC, "doc", "*.[15]"))):
    # a man page's .TH line carries its date, which is not a diary
    text = re.sub(r"^\.TH .*$", "", open(rel, encoding="utf-8").read(), flags=re.M)
    vocabulary(os.path.relpath(rel, SRC), text)
vocabulary("conf/tabled.conf", read("conf/tabled.conf"))
helptext = subprocess.run([TABLED, "--help"], capture_output=True, text=True, timeout=60).stdout
check("--admin-port" in helptext, "tabled --help runs")
vocabulary("tabled --help", helptext)

# --- 3. relative links resolve --------------------------------------------
for rel in ["README.md"] + sorted(os.path.relpath(p, SRC)
                                  for p in glob.glob(os.path.join(SRC, "doc", "*.md"))):
    text = strip_code(read(rel))
    base = os.path.dirname(os.path.join(SRC, rel))
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if not os.path.exists(os.path.normpath(os.path.join(base, path))):
            bad.append(target)
    check(not bad, "every relative link of %s names a file" % rel, bad)

# --- 4. documented defaults -----------------------------------------------
helpdefs = {}
cur = None
for line in helptext.split("\n"):
    m = re.match(r"  --([a-z-]+)", line)
    if m:
        cur = m.group(1)
        helpdefs[cur] = line
    elif cur and line.startswith("   "):
        helpdefs[cur] += " " + line.strip()
defaults = {}
for name, text in helpdefs.items():
    m = re.search(r"\(default ([^):; ]+)", text)
    if m:
        defaults[name] = m.group(1)
check(len(defaults) >= 30, "--help states defaults (%d found)" % len(defaults))


def roff_plain(s):
    s = re.sub(r"\\f[BIRP]", "", s).replace("\\-", "-").replace("\\ ", " ")
    return re.sub(r"^\.[A-Z]+ ?", "", s, flags=re.M)


def man_entries(text):
    """(names on the tag line, body) of each .TP entry of a man page."""
    out = []
    for chunk in re.split(r"^\.(?:TP|SH .*|SS .*|PP)$", text, flags=re.M):
        body = chunk.strip("\n").split("\n")
        if not body or not body[0].startswith(".B"):
            continue
        out.append((roff_plain(body[0]), roff_plain("\n".join(body[1:])).replace("\n", " ")))
    return out


# defaults --help words in prose rather than a value of the table
for word in ("random", "stderr"):
    for k in [k for k, v in defaults.items() if v == word]:
        del defaults[k]

man1 = read("doc/tabled.1")
bad = []
seen = set()
for tag, body in man_entries(man1):
    names = re.findall(r"--([a-z][a-z-]*)", tag)
    if not names or names[0] not in defaults or names[0] in seen:
        continue
    seen.add(names[0])  # the OPTIONS entry, not a later section's mention
    want = defaults[names[0]]
    text = tag + " " + body
    m = re.search(r"\(default ([^):; ]+)", text)
    if m and m.group(1) == want:
        continue
    if re.search(r"\b%s\W{0,4}\(default[);,]" % re.escape(want), text):
        continue
    bad.append("tabled(1) --%s: %s, --help: %s"
               % (names[0], "default " + m.group(1) if m else "no default stated", want))
check(len(seen) >= 25, "tabled(1) has entries for the options (%d)" % len(seen))
check(not bad, "tabled(1) states the same defaults as --help", bad)

man5 = read("doc/tabled.conf.5")
bad = []
for tag, body in man_entries(man5):
    names = [nm for nm in re.findall(r"(?:^|[ \",])([a-z][a-z-]+)(?= ?=|,|$| \")", tag)
             if nm in defaults]
    groups = re.findall(r"\(([^()]*)\)", body)
    if not names or not groups:
        continue
    vals = [v.strip() for v in re.split(r";|, ", groups[-1] if len(groups[-1].split(";")) == len(names) else groups[0])]
    if len(vals) != len(names):
        continue
    for nm, v in zip(names, vals):
        v = re.split(r"[: ]", v)[0]
        want = defaults[nm]
        if v != want and not (want in ("0", "off") and v in ("0", "off")):
            bad.append("tabled.conf(5) %s: (%s), --help: %s" % (nm, v, want))
check(not bad, "tabled.conf(5) states the same defaults as --help", bad)

# the advisor's thresholds: tabled(1) names each with the default of its row
# (`tabled --advisor help`, advisor/advisor_limits.c), and no other
rows = subprocess.run([TABLED, "--advisor", "help"], capture_output=True, text=True,
                      timeout=60).stdout
row_defaults = dict(re.findall(r"^  ([a-z-]+) .*\(default ([^;]+);", rows, re.M))
m = re.search(r"^\.BI \\-\\-advisor .*?\n(.*?)^\.TP", man1, re.M | re.S)
man_defaults = dict(re.findall(r"([a-z][a-z-]+)\W{1,4}\(([0-9.]+)", roff_plain(m.group(1)))) \
    if m else {}
check(len(row_defaults) >= 10 and man_defaults == row_defaults,
      "tabled(1) --advisor lists every threshold with its row's default (%d rows)"
      % len(row_defaults),
      ["rows: %r" % row_defaults, "man: %r" % man_defaults])

print("1..%d" % n)
sys.exit(1 if failed else 0)
