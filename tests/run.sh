#!/bin/sh
# Runs every unit test program and integration test; prints one line per
# failing test, and ends with "N passed, M failed". Exit status 1 on failure.
# Environment (set by make check): TOP_SRCDIR, TOP_BUILDDIR, UNIT_TESTS,
# INTEGRATION_TESTS. Optional: TEST_TIMEOUT (seconds per test program,
# default 600), TESTS (run only the tests whose path contains this text),
# TABLED_NO_DEPS_SETUP=1 (skip the package set-up below).
: "${TOP_SRCDIR:=.}" "${TOP_BUILDDIR:=.}" "${TEST_TIMEOUT:=600}"
export TOP_SRCDIR TOP_BUILDDIR
passed=0
failed=0
logdir="$TOP_BUILDDIR/tests/logs"
mkdir -p "$logdir"

# A hung test must fail, not hang the run: use timeout(1) when available.
if command -v timeout >/dev/null 2>&1; then
    limit="timeout -k 10 $TEST_TIMEOUT"
else
    limit=""
fi

# count_tap LOG STATUS NAME: adds the log's ok / not ok lines to the totals;
# a program that failed without reporting a failing case counts as one, and
# so do checks announced by the plan line ("1..N") but never reported.
count_tap() {
    ok=$(grep -c '^ok ' "$1")
    nok=$(grep -c '^not ok ' "$1")
    grep '^not ok ' "$1" | sed "s|^|FAIL: $3: |"
    if [ "$2" -eq 124 ] || [ "$2" -eq 137 ]; then
        echo "FAIL: $3 timed out after $TEST_TIMEOUT s (see $1)"
        nok=$((nok + 1))
    elif [ "$2" -ne 0 ] && [ "$nok" -eq 0 ]; then
        echo "FAIL: $3 exited with status $2 (see $1)"
        nok=1
    fi
    plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$1" | tail -n 1)
    if [ -n "$plan" ] && [ $((ok + nok)) -lt "$plan" ]; then
        echo "FAIL: $3 planned $plan checks but reported $((ok + nok)) (see $1)"
        nok=$((nok + 1))
    fi
    passed=$((passed + ok))
    failed=$((failed + nok))
}

# Set-up: the tests need packages beyond the build's (the SDKs, PostgreSQL,
# Node.js, the packaging tools). They are installed through the same path
# as a developer's: autogen.sh --test-deps, here without regenerating
# configure. As root it installs what is missing; otherwise it names the
# command, and the tests needing a missing component skip or fail saying so.
if [ "${TABLED_NO_DEPS_SETUP:-}" != 1 ]; then
    if [ "$(id -u)" = 0 ]; then
        sh "$TOP_SRCDIR/autogen.sh" --test-deps --no-autoreconf ||
            echo "tests/run.sh: installing the test packages failed; run: ./autogen.sh --test-deps"
    else
        sh "$TOP_SRCDIR/autogen.sh" --test-deps --check >/dev/null ||
            echo "tests/run.sh: test packages are missing (tests needing them will say so); run: ./autogen.sh --test-deps"
    fi
fi

# selected NAME: true unless TESTS is set and NAME does not contain it.
selected() {
    case "$1" in
        *"${TESTS:-}"*) return 0 ;;
        *) return 1 ;;
    esac
}

for t in $UNIT_TESTS; do
    selected "$t" || continue
    name=$(basename "$t")
    $limit "$TOP_BUILDDIR/$t" > "$logdir/$name.log" 2>&1
    count_tap "$logdir/$name.log" $? "$t"
done

for t in $INTEGRATION_TESTS; do
    selected "$t" || continue
    name=$(basename "$t")
    TABLED="$TOP_BUILDDIR/tabled" $limit "$TOP_SRCDIR/$t" > "$logdir/$name.log" 2>&1
    count_tap "$logdir/$name.log" $? "$t"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
