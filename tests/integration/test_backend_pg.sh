#!/bin/sh
# Runs the postgres backend's tests (tests/unit/test_backend_pg) against a
# private PostgreSQL: initdb in a temporary directory, a unix socket there
# and a free port, no TCP listener, no system service touched; stopped and
# removed at the end. The C program stops it (-m immediate: a crash, so a
# write blocked on a row lock can never commit meanwhile) and starts it
# again through the stop.sh / start.sh written here. PostgreSQL refuses to run as root, so as root the
# server runs as "nobody" (runuser) in a directory that user owns.
# Skipped (TAP "1..0 # SKIP") only when tabled was built without libpq or
# the server binaries (Debian postgresql-15) are not installed.
: "${TOP_BUILDDIR:=.}"
prog="$TOP_BUILDDIR/tests/unit/test_backend_pg"
if [ ! -x "$prog" ]; then
    echo "1..0 # SKIP tabled was configured without libpq (no postgres backend)"
    exit 0
fi
bindir=""
for d in "$(pg_config --bindir 2>/dev/null)" $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && [ -x "$d/pg_ctl" ]; then
        bindir="$d"
        break
    fi
done
if [ -z "$bindir" ]; then
    echo "1..0 # SKIP PostgreSQL server binaries (initdb, postgres, pg_ctl; Debian postgresql-15) not installed"
    exit 0
fi

tmp=$(mktemp -d /tmp/tabled-pg.XXXXXX) || exit 1
as=""
if [ "$(id -u)" = 0 ]; then
    as="runuser -u nobody --"
    chown nobody "$tmp"
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

cat > "$tmp/start.sh" <<EOS
#!/bin/sh
exec $as "$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w -t 60 \\
    -o "-k $tmp -p $port -c listen_addresses= -c fsync=off" start >/dev/null
EOS
cat > "$tmp/stop.sh" <<EOS
#!/bin/sh
exec $as "$bindir/pg_ctl" -D "$tmp/data" -w -t 60 -m immediate stop >/dev/null
EOS
chmod 755 "$tmp/start.sh" "$tmp/stop.sh"

cleanup() {
    $as "$bindir/pg_ctl" -D "$tmp/data" -w -m immediate stop >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if ! $as "$bindir/initdb" -D "$tmp/data" -A trust -U tabled --no-sync >"$tmp/initdb.log" 2>&1; then
    cat "$tmp/initdb.log"
    echo "not ok 1 - initdb failed"
    exit 1
fi
if ! "$tmp/start.sh"; then
    cat "$tmp/server.log"
    echo "not ok 1 - the PostgreSQL server did not start"
    exit 1
fi
"$prog" "host=$tmp port=$port user=tabled dbname=postgres" "$tmp/stop.sh" "$tmp/start.sh"
rc=$?
[ $rc -eq 0 ] || tail -n 20 "$tmp/server.log" | sed 's/^/# server: /'
exit $rc
