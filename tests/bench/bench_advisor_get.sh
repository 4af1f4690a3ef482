#!/bin/sh
# bench_advisor_get.sh - what the partition advisor costs a point GET:
# requests/s with the admin listener off (no metrics, no advisor) and on
# (metrics and the advisor recording every GET), in the same run (not part
# of make check; `make bench-advisor`).
#
#   bench_advisor_get.sh TABLED [SECONDS] [ROUNDS] [CONNS]
#
# Each round runs wrk -t1 -cCONNS (default 32) for SECONDS (default 10)
# against GET /devstoreaccount1/bench(PartitionKey='p',RowKey='r') on a
# fresh server (--auth off --access-log off --backend memory --durability
# none), off then on; the median of ROUNDS (default 5) is printed per
# configuration with min and max, and on/off as a percentage.
set -eu
BIN=$1
SECS=${2:-10}
ROUNDS=${3:-5}
CONNS=${4:-32}
command -v wrk >/dev/null || { echo "wrk not found (apt-get install wrk)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME ARGS...: one wrk run, appends requests/s to $tmp/NAME
run() {
    name=$1; shift
    out="$tmp/server-$name-$$-$(date +%s%N).out"  # fresh: no old port read
    "$BIN" --port 0 --auth off --access-log off --backend memory --durability none \
        --log-level warn "$@" >"$out" 2>&1 &
    pid=$!
    port=""
    for _ in $(seq 50); do
        port=$(sed -n 's/.*ready at http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out" 2>/dev/null || true)
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || { echo "$name: server did not start" >&2; kill "$pid"; exit 1; }
    base="http://127.0.0.1:$port/devstoreaccount1"
    h1="x-ms-version: 2019-02-02"
    h2="Accept: application/json;odata=nometadata"
    curl -sS --retry 3 --retry-connrefused -o /dev/null -H "$h1" -H "$h2" -H "Content-Type: application/json" \
        -d '{"TableName":"bench"}' "$base/Tables"
    curl -sS --retry 3 -o /dev/null -X PUT -H "$h1" -H "$h2" -H "Content-Type: application/json" \
        -d '{"PartitionKey":"p","RowKey":"r","Name":"some value","Qty":3}' \
        "$base/bench(PartitionKey='p',RowKey='r')"
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "$h1" -H "$h2" \
        "$base/bench(PartitionKey='p',RowKey='r')")
    [ "$code" = 200 ] || { echo "$name: GET answered $code" >&2; kill "$pid"; exit 1; }
    rps=$(wrk -t1 -c"$CONNS" -d"${SECS}s" -H "$h1" -H "$h2" \
        "$base/bench(PartitionKey='p',RowKey='r')" | awk '/Requests\/sec/ {print $2}')
    if [ "$name" = advisor ]; then
        aport=$(sed -n 's/.*Admin endpoint: *http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
        got=$(curl -s "http://127.0.0.1:$aport/advisor" | grep -o '"get":[0-9]*' | head -1)
        printf '  (advisor counted %s)\n' "$got"
    fi
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    echo "$rps" >>"$tmp/$name"
    printf '  %-10s %s req/s\n' "$name" "$rps"
}

for r in $(seq "$ROUNDS"); do
    echo "round $r"
    if [ $((r % 2)) -eq 1 ]; then
        run off
        run advisor --admin-port 0
    else
        run advisor --admin-port 0
        run off
    fi
done
echo "median req/s over $ROUNDS rounds of ${SECS}s (wrk -t1 -c$CONNS), min..max:"
for name in off advisor; do
    sort -n "$tmp/$name" | awk -v n="$name" '{v[NR]=$1} END {
        m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2;
        printf "  %-10s %10.0f   (%.0f..%.0f)\n", n, m, v[1], v[NR]; print m > "/dev/stderr" }' \
        2>"$tmp/$name.median"
done
awk -v a="$(cat "$tmp/advisor.median")" -v o="$(cat "$tmp/off.median")" \
    'BEGIN { printf "  advisor on / off: %.1f%%\n", 100 * a / o }'
