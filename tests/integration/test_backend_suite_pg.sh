#!/bin/sh
# The backend conformance suite (tests/unit/test_backend) on the postgres
# backend, against a private PostgreSQL started by
# tests/integration/pg_harness.py. Every section of the suite gets a fresh
# database of its own (test_backend -s: "pg_harness.py newdb --option
# SECTION" prints its conninfo), so sections see an empty store and a
# reopen finds the same data; the exclusive-lock and disk-full sections do
# not apply to a shared database server and are not run. Skipped (TAP
# "1..0 # SKIP") only when tabled was built without libpq or the server
# binaries are not installed.
: "${TOP_BUILDDIR:=.}" "${TOP_SRCDIR:=.}"
if [ ! -x "$TOP_BUILDDIR/tests/unit/test_backend_pg" ]; then
    echo "1..0 # SKIP tabled was configured without libpq (no postgres backend)"
    exit 0
fi
harness="$(cd "$TOP_SRCDIR/tests/integration" && pwd)/pg_harness.py"
exec "$harness" run "$TOP_BUILDDIR/tests/unit/test_backend" -s "$harness newdb --option" postgres
