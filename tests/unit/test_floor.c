/* test_floor.c - the floor's clock, generators, error buffers and
 * coroutines (core/clock.c, core/rand.c, core/errfmt.c, core/coro.c). */
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "core/clock.h"
#include "core/coro.h"
#include "core/errfmt.h"
#include "core/rand.h"
#include "tests/unit/tap.h"

static void test_clock(void)
{
    uint64_t a = clock_mono_us();
    int64_t ma = clock_mono_ms();
    uint64_t b = clock_mono_us();
    int64_t mb = clock_mono_ms();
    TEST_CHECK(a > 0 && b >= a, "mono_us never goes back");
    TEST_CHECK(mb >= ma, "mono_ms never goes back");
    TEST_CHECK((uint64_t)ma <= b / 1000 + 1 && b / 1000 <= (uint64_t)mb + 1,
               "mono_ms and mono_us share one time base");
}

static void test_rand(void)
{
    /* xorshift64 from 1: the first outputs of Marsaglia's (13, 7, 17). */
    uint64_t s = 1;
    TEST_EQ_INT(rand_xorshift64(&s), 1082269761ULL, "xorshift64 first value from 1");
    TEST_EQ_INT(s, 1082269761ULL, "xorshift64 state advanced");
    TEST_EQ_INT(rand_xorshift64(&s), 1152992998833853505ULL, "xorshift64 second value");

    struct rand_x128 r1, r2;
    rand_x128_seed(&r1, 42);
    rand_x128_seed(&r2, 42);
    TEST_EQ_INT(r1.s[0], 43, "x128 seed: s0 = seed | 1");
    TEST_CHECK(r1.s[1] == 42 * 0x9e3779b97f4a7c15ULL + 1, "x128 seed: s1 spread");
    int same = 1;
    for (int i = 0; i < 100; i++)
        same &= rand_x128_next(&r1) == rand_x128_next(&r2);
    TEST_CHECK(same, "x128 fixed seed reproduces");
    rand_x128_seed(&r1, 0);
    TEST_CHECK(r1.s[0] & 1, "x128 random seed: state never zero");
    int in_range = 1;
    double lo = 1, hi = 0;
    for (int i = 0; i < 10000; i++) {
        double u = rand_x128_unit(&r2);
        in_range &= u >= 0.0 && u < 1.0;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    TEST_CHECK(in_range, "x128 unit within [0, 1)");
    TEST_CHECK(lo < 0.01 && hi > 0.99, "x128 unit spreads over [0, 1)");
}

static void append(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errfmt_vappend(err, len, fmt, ap);
    va_end(ap);
}

static void test_errfmt(void)
{
    char e[16];
    errfmt_set(e, sizeof e, "bad %s %d", "key", 7);
    TEST_EQ_STR(e, "bad key 7", "set formats");
    errfmt_set(e, sizeof e, "%s", "a message longer than sixteen");
    TEST_EQ_STR(e, "a message longe", "set truncates, NUL-terminated");
    errfmt_set(NULL, 10, "x");
    errfmt_set(e, 0, "x");
    TEST_EQ_STR(e, "a message longe", "no buffer or no room writes nothing");

    errfmt_set(e, sizeof e, "ldb: ");
    append(e, sizeof e, "open %s", "dir");
    TEST_EQ_STR(e, "ldb: open dir", "prefix then detail");
    errfmt_set(e, sizeof e, "%s", "fifteen chars..");
    append(e, sizeof e, "more");
    TEST_EQ_STR(e, "fifteen chars..", "append into a full buffer writes nothing");
    errfmt_set(e, 4, "prefix: ");
    append(e, 4, "x");
    TEST_EQ_STR(e, "pre", "truncated prefix, no detail");
}

/* ---- coroutines ---- */

static struct {
    int steps[4];              /* progress of each coroutine */
    int finished[4];           /* fin ran (on the main stack) */
    int fin_in_coro;           /* fin ran while a coroutine was current */
    int deep_ok;
} co;

/* Yields n times, counting its steps; checks it is the current one. */
static void co_body(void *arg)
{
    int i = (int)(intptr_t)arg;
    for (int k = 0; k < 3; k++) {
        co.steps[i]++;
        if (coro_current() == NULL)
            co.steps[i] = -100;
        coro_yield();
    }
    co.steps[i]++;
}

static void co_fin(void *arg)
{
    int i = (int)(intptr_t)arg;
    co.finished[i]++;
    if (coro_current())
        co.fin_in_coro = 1;
}

/* Recursion deep enough to use a good part of the stack (the frames are
 * written, so they are really there). */
static int co_deep(int n, volatile char *prev)
{
    volatile char frame[512];
    frame[0] = 1;
    frame[511] = prev ? prev[0] : 1;
    if (n == 0)
        return 0;
    int below = co_deep(n - 1, frame);
    return below + (frame[0] == 1 && frame[511] == 1);
}

static void co_deep_body(void *arg)
{
    (void)arg;
    co.deep_ok = co_deep(400, NULL) == 400;   /* ~200 KiB of frames */
}

static void test_coro(void)
{
    TEST_CHECK(coro_current() == NULL, "coro: the main stack has no current coroutine");
    struct coro *c[3];
    for (int i = 0; i < 3; i++)
        c[i] = coro_new(co_body, co_fin, (void *)(intptr_t)i);
    TEST_CHECK(c[0] && c[1] && c[2], "coro: three made");
    /* interleave: each resume runs one step of one coroutine */
    int r0 = coro_resume(c[0]), r1 = coro_resume(c[1]);
    TEST_CHECK(r0 == 0 && r1 == 0 && co.steps[0] == 1 && co.steps[1] == 1 && co.steps[2] == 0,
               "coro: a resume runs one coroutine up to its yield");
    coro_resume(c[0]);
    coro_resume(c[0]);
    TEST_EQ_INT(co.steps[0], 3, "coro: its locals survive the yields");
    TEST_EQ_INT(co.finished[0], 0, "coro: fin not yet");
    TEST_EQ_INT(coro_resume(c[0]), 1, "coro: the last resume reports the end");
    TEST_CHECK(co.steps[0] == 4 && co.finished[0] == 1 && !co.fin_in_coro,
               "coro: fin ran once, on the main stack");
    TEST_CHECK(coro_current() == NULL, "coro: back on the main stack");
    /* one never resumed to the end (shutdown): freed without fin */
    coro_free(c[1]);
    TEST_EQ_INT(co.finished[1], 0, "coro: coro_free does not run fin");
    while (coro_resume(c[2]) == 0)
        ;
    TEST_CHECK(co.steps[2] == 4 && co.finished[2] == 1, "coro: a second one runs to its end");
    /* stacks come back from the pool: many in a row */
    int ok = 1;
    for (int i = 0; i < 200 && ok; i++) {
        struct coro *d = coro_new(co_deep_body, NULL, NULL);
        co.deep_ok = 0;
        ok = d && coro_resume(d) == 1 && co.deep_ok;
    }
    TEST_CHECK(ok, "coro: 200 coroutines with deep stacks in a row (pooled stacks)");
    coro_pool_drain();
}

int main(void)
{
    test_clock();
    test_rand();
    test_errfmt();
    test_coro();
    return test_done();
}
