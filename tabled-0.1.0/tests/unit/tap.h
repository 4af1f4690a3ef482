/* tap.h - minimal TAP output for the C unit tests.
 *
 *   TEST_CHECK(cond, "what")        one "ok N - what" / "not ok N - what" line
 *   TEST_EQ_INT(a, b, "what")       with both values printed on failure
 *   TEST_EQ_STR(a, b, "what")
 *   return test_done();             prints the plan, exit status 1 on failure
 *
 * tests/run.sh counts the ok / not ok lines of every test program. */
#ifndef TABLED_TAP_H
#define TABLED_TAP_H
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

static inline int tap_check(int ok, const char *file, int line, const char *what)
{
    tap_n++;
    if (ok) {
        printf("ok %d - %s\n", tap_n, what);
    } else {
        tap_failed++;
        printf("not ok %d - %s (%s:%d)\n", tap_n, what, file, line);
    }
    fflush(stdout);
    return ok;
}

#define TEST_CHECK(cond, what) tap_check(!!(cond), __FILE__, __LINE__, (what))
#define TEST_EQ_INT(a, b, what)                                                        \
    do {                                                                               \
        long long tap_a = (long long)(a), tap_b = (long long)(b);                      \
        if (!tap_check(tap_a == tap_b, __FILE__, __LINE__, (what)))                    \
            printf("#   got %lld, expected %lld\n", tap_a, tap_b);                     \
    } while (0)
#define TEST_EQ_STR(a, b, what)                                                        \
    do {                                                                               \
        const char *tap_a = (a), *tap_b = (b);                                         \
        int tap_ok = tap_a && tap_b && strcmp(tap_a, tap_b) == 0;                      \
        if (!tap_check(tap_ok, __FILE__, __LINE__, (what)))                            \
            printf("#   got \"%s\", expected \"%s\"\n", tap_a ? tap_a : "(null)",      \
                   tap_b ? tap_b : "(null)");                                          \
    } while (0)

static inline int test_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
