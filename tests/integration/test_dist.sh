#!/bin/sh
# test_dist.sh - every file git tracks is in the distribution (make dist /
# make distcheck), so no header or test input is left out of the tarball.
# It runs `make distdir` into a temporary directory (under a second) and
# compares that tree with `git ls-files`. In a build from a tarball (no git
# checkout at the source directory) it skips. Prints TAP.
: "${TOP_SRCDIR:=.}" "${TOP_BUILDDIR:=.}"
src=$(cd "$TOP_SRCDIR" && pwd -P)
top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null) || top=
if [ -z "$top" ] || [ "$(cd "$top" && pwd -P)" != "$src" ]; then
    echo "ok 1 - # SKIP not a git checkout (a tarball build)"
    echo "1..1"
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tabled-dist.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# make distdir fails when a listed file is missing; MAKEFLAGS from an outer
# make check (its jobserver) does not apply to this make.
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} -s -C "$TOP_BUILDDIR" distdir \
        distdir="$tmp/d" > "$tmp/log" 2>&1; then
    echo "ok 1 - make distdir"
else
    sed 's/^/# /' "$tmp/log"
    echo "not ok 1 - make distdir"
    echo "1..1"
    exit 1
fi

# Tracked files the tarball does not need: git's own files and the CI
# entry point (which clones the repository).
(cd "$tmp/d" && find . -type f | sed 's|^\./||' | sort) > "$tmp/dist"
git -C "$src" ls-files | grep -v -e '^\.gitignore$' -e '/\.gitkeep$' -e '^\.ci/' \
    | while IFS= read -r f; do [ -f "$src/$f" ] && echo "$f"; done | sort > "$tmp/git"
missing=$(comm -23 "$tmp/git" "$tmp/dist")
n=$(wc -l < "$tmp/git")
if [ -z "$missing" ]; then
    echo "ok 2 - all $n tracked files are in the distribution"
else
    echo "$missing" | sed 's/^/# not in EXTRA_DIST or any _SOURCES: /'
    echo "not ok 2 - tracked files missing from the distribution"
fi
echo "1..2"
[ -z "$missing" ]
