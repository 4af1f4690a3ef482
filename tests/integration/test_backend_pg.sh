#!/bin/sh
# Runs the postgres backend's tests (tests/unit/test_backend_pg) against a
# private PostgreSQL started by tests/integration/pg_harness.py (initdb in
# a temporary directory, a unix socket there and a free port, no TCP
# listener, no system service touched; as root the server runs as
# "nobody"; stopped and removed at the end). The C program stops it
# (-m immediate: a crash, so a write blocked on a row lock can never
# commit meanwhile) and starts it again through "pg_harness.py stop" and
# "pg_harness.py start". Skipped (TAP "1..0 # SKIP") only when tabled was
# built without libpq or the server binaries (Debian postgresql-15) are
# not installed.
: "${TOP_BUILDDIR:=.}" "${TOP_SRCDIR:=.}"
prog="$TOP_BUILDDIR/tests/unit/test_backend_pg"
if [ ! -x "$prog" ]; then
    echo "1..0 # SKIP tabled was configured without libpq (no postgres backend)"
    exit 0
fi
harness="$TOP_SRCDIR/tests/integration/pg_harness.py"
exec "$harness" run sh -c '"$1" "$TABLED_PG_CONNINFO" "$2 stop" "$2 start"' sh "$prog" "$harness"
