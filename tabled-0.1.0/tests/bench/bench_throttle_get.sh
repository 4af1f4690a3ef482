#!/bin/sh
# bench_throttle_get.sh - point-GET throughput of tabled with wrk, to show
# what the throttle/fault/metrics hooks cost when they are off (not part of
# make check; `make bench-throttle-get BASELINE=/path/to/old/tabled`).
#
#   bench_throttle_get.sh TABLED [BASELINE] [SECONDS] [ROUNDS] [CONNS]
#
# Each round runs wrk -t1 -cCONNS (default 32) for SECONDS (default 10)
# against GET /devstoreaccount1/bench(PartitionKey='p',RowKey='r') on a fresh
# server (--auth off --access-log off --backend memory --durability none),
# for: BASELINE (when given), TABLED as is (throttling and faults off),
# TABLED --admin-port 0 (metrics on), TABLED --throttle (buckets on). The
# configurations alternate within a round so machine noise hits them alike;
# the median requests/s of ROUNDS (default 5) rounds is printed per
# configuration, with the min and max.
set -eu
NEW=$1
BASE=${2:-}
SECS=${3:-10}
ROUNDS=${4:-5}
CONNS=${5:-32}
command -v wrk >/dev/null || { echo "wrk not found" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME BINARY ARGS...: one wrk run, appends requests/s to $tmp/NAME
run() {
    name=$1; bin=$2; shift 2
    out="$tmp/server.out"
    "$bin" --port 0 --auth off --access-log off --backend memory --durability none \
        --log-level warn "$@" >"$out" 2>&1 &
    pid=$!
    port=""
    for _ in $(seq 50); do
        port=$(sed -n 's/.*ready at http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || { echo "$name: server did not start" >&2; kill "$pid"; exit 1; }
    base="http://127.0.0.1:$port/devstoreaccount1"
    h1="x-ms-version: 2019-02-02"
    h2="Accept: application/json;odata=nometadata"
    curl -s -o /dev/null -H "$h1" -H "$h2" -H "Content-Type: application/json" \
        -d '{"TableName":"bench"}' "$base/Tables"
    curl -s -o /dev/null -X PUT -H "$h1" -H "$h2" -H "Content-Type: application/json" \
        -d '{"PartitionKey":"p","RowKey":"r","Name":"some value","Qty":3}' \
        "$base/bench(PartitionKey='p',RowKey='r')"
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "$h1" -H "$h2" \
        "$base/bench(PartitionKey='p',RowKey='r')")
    [ "$code" = 200 ] || { echo "$name: GET answered $code" >&2; kill "$pid"; exit 1; }
    rps=$(wrk -t1 -c"$CONNS" -d"${SECS}s" -H "$h1" -H "$h2" \
        "$base/bench(PartitionKey='p',RowKey='r')" | awk '/Requests\/sec/ {print $2}')
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    echo "$rps" >>"$tmp/$name"
    printf '  %-22s %s req/s\n' "$name" "$rps"
}

for r in $(seq "$ROUNDS"); do
    echo "round $r"
    [ -n "$BASE" ] && run baseline "$BASE"
    run off "$NEW"
    run metrics "$NEW" --admin-port 0
    run throttle "$NEW" --throttle
done
echo "median req/s over $ROUNDS rounds of ${SECS}s (wrk -t1 -c$CONNS), min..max:"
for name in baseline off metrics throttle; do
    [ -f "$tmp/$name" ] || continue
    sort -n "$tmp/$name" | awk -v n="$name" '{v[NR]=$1} END {
        m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2;
        printf "  %-10s %10.0f   (%.0f..%.0f)\n", n, m, v[1], v[NR] }'
done
