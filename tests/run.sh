#!/bin/sh
# Runs every unit test program and integration test; prints one line per
# failing test, and ends with "N passed, M failed". Exit status 1 on failure.
# Environment (set by make check): TOP_SRCDIR, TOP_BUILDDIR, UNIT_TESTS,
# INTEGRATION_TESTS.
: "${TOP_SRCDIR:=.}" "${TOP_BUILDDIR:=.}"
passed=0
failed=0
logdir="$TOP_BUILDDIR/tests/logs"
mkdir -p "$logdir"

# count_tap LOG STATUS NAME: adds the log's ok / not ok lines to the totals;
# a program that failed without reporting a failing case counts as one.
count_tap() {
    ok=$(grep -c '^ok ' "$1")
    nok=$(grep -c '^not ok ' "$1")
    if [ "$2" -ne 0 ] && [ "$nok" -eq 0 ]; then
        nok=1
        echo "FAIL: $3 exited with status $2 (see $1)"
    fi
    grep '^not ok ' "$1" | sed "s|^|FAIL: $3: |"
    passed=$((passed + ok))
    failed=$((failed + nok))
}

for t in $UNIT_TESTS; do
    name=$(basename "$t")
    "$TOP_BUILDDIR/$t" > "$logdir/$name.log" 2>&1
    count_tap "$logdir/$name.log" $? "$t"
done

for t in $INTEGRATION_TESTS; do
    name=$(basename "$t")
    TABLED="$TOP_BUILDDIR/tabled" "$TOP_SRCDIR/$t" > "$logdir/$name.log" 2>&1
    count_tap "$logdir/$name.log" $? "$t"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
