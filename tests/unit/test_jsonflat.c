/* test_jsonflat.c - the flat-object fast path against yajl itself: for
 * every input it accepts, yajl (configured as entity_json.c configures it)
 * must accept the same bytes and deliver the same callbacks with the same
 * arguments; inputs outside the fast path must be declined. Hand-written
 * cases, then a differential run over random mutations of seed bodies. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "codec/jsonflat.h"
#include "tests/unit/jsontrace.h"
#include "tests/unit/tap.h"

static struct trace ty, tf;

/* Checks one input: accepted with yajl's trace, or declined (want_ok). */
static void check(const char *s, int want_ok, const char *what)
{
    size_t n = strlen(s);
    int rf = run_flat(s, n, &tf);
    if (want_ok) {
        int ry = run_yajl(s, n, &ty);
        TEST_CHECK(rf == JSONFLAT_OK && ry, what);
        if (rf == JSONFLAT_OK && ry && strcmp(tf.buf, ty.buf) != 0)
            TEST_EQ_STR(tf.buf, ty.buf, what);
    } else {
        TEST_EQ_INT(rf, JSONFLAT_DECLINED, what);
    }
}

/* Stops at the first callback: a canceled parse is reported as such. */
static int stop_key(void *c, const unsigned char *s, size_t n)
{
    (void)c, (void)s, (void)n;
    return 0;
}

static void test_cases(void)
{
    check("{}", 1, "empty object");
    check(" \t\r\n{ \t\r\n} \t\r\n", 1, "white space everywhere");
    check("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"A\":1,\"B\":-0.5e+10,\"C\":true,"
          "\"D\":false,\"E\":null,\"F\":\"\"}",
          1, "every kind of scalar");
    check("{\"a\" : \"x\" , \"b\" :\n 12345678901234567890123 }", 1, "spaces around : and ,");
    check("{\"n\":0,\"m\":-0,\"o\":0.0,\"p\":1E5,\"q\":1e-5,\"r\":10}", 1, "number forms");
    check("{\"caf\xc3\xa9\":\"\xe2\x82\xac \xf0\x9f\x98\x80\"}", 1, "UTF-8 passes through");
    check("{\"a\":\"0123456789abcdef0123456789abcdef0123456789\"}", 1, "long runs");
    check("{\"a\":\"x\",\"a\":\"y\"}", 1, "duplicates are the callbacks' business");
    /* declined: yajl decides */
    check("", 0, "empty body");
    check("   ", 0, "white space only");
    check("[]", 0, "array");
    check("\"s\"", 0, "top-level string");
    check("{\"a\":\"x\\\"y\"}", 0, "escape in a value");
    check("{\"a\\u0041\":1}", 0, "escape in a name");
    check("{\"a\":{}}", 0, "nested object");
    check("{\"a\":[1]}", 0, "nested array");
    check("{\"a\":1,}", 0, "trailing comma");
    check("{,\"a\":1}", 0, "leading comma");
    check("{\"a\" 1}", 0, "missing colon");
    check("{\"a\":}", 0, "missing value");
    check("{\"a\":1", 0, "unterminated object");
    check("{\"a\":\"x", 0, "unterminated string");
    check("{\"a\":\"x\ty\"}", 0, "control byte in a string");
    check("{\"a\":01}", 0, "leading zero");
    check("{\"a\":1.}", 0, "bare decimal point");
    check("{\"a\":.5}", 0, "no integer part");
    check("{\"a\":1e}", 0, "empty exponent");
    check("{\"a\":-}", 0, "bare minus");
    check("{\"a\":+1}", 0, "plus sign");
    check("{\"a\":truex}", 0, "word run on");
    check("{\"a\":tru}", 0, "short word");
    check("{\"a\":nul", 0, "cut word");
    check("{\"a\":NaN}", 0, "NaN");
    check("{\"a\":1x}", 0, "number run on");
    check("{} x", 0, "trailing bytes");
    check("{}{}", 0, "two objects");
    check("{\f}", 0, "form feed is left to yajl");
    check("{'a':1}", 0, "single quotes");
    check("{a:1}", 0, "bare name");
    check("{\"a\":1 /* c */}", 0, "comment");
    /* every special byte at every offset of a 48-byte run (16-byte, 8-byte
     * and byte steps), among bytes >= 0x80 and DEL, which are plain */
    static const char plain[] = "x\xc3\xa9\x7f\xff\x80";
    static const struct { char c; int ok; const char *name; } special[] = {
        {'\\', 0, "backslash"}, {'\x1f', 0, "control byte"}, {'"', 1, "closing quote"}};
    for (size_t k = 0; k < sizeof special / sizeof special[0]; k++) {
        int seen = 0;
        for (int pos = 0; pos < 48; pos++) {
            char body[80];
            memcpy(body, "{\"k\":\"", 6);
            for (int j = 0; j < 48; j++)
                body[6 + j] = plain[j % (sizeof plain - 1)];
            body[6 + pos] = special[k].c;
            if (special[k].ok)
                memcpy(body + 7 + pos, "}", 2);   /* the string ends there */
            else
                memcpy(body + 54, "\"}", 3);
            size_t n = strlen(body);
            int rf = run_flat(body, n, &tf);
            int want = special[k].ok ? JSONFLAT_OK : JSONFLAT_DECLINED;
            if (rf == want && special[k].ok && (!run_yajl(body, n, &ty) || strcmp(tf.buf, ty.buf)))
                rf = -1;
            if (rf == want)
                seen++;
        }
        char what[80];
        snprintf(what, sizeof what, "%s found at each of 48 offsets of a run", special[k].name);
        TEST_EQ_INT(seen, 48, what);
    }
    static const yajl_callbacks stop = {t_null, t_bool, NULL, NULL, t_num, t_str,
                                        t_smap, stop_key, t_emap, t_sarr, t_earr};
    memset(&tf, 0, sizeof tf);
    TEST_EQ_INT(jsonflat_parse(&stop, &tf, "{\"a\":1}", 7), JSONFLAT_CANCELED,
                "a callback returning 0 cancels");
}

/* xorshift64: repeatable random numbers. */
static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Random edits of seed bodies: whenever the fast path accepts, yajl must
 * accept with the same trace; a decline is always allowed. */
static void test_differential(void)
{
    static const char *const seeds[] = {
        "{\"PartitionKey\":\"pk\",\"RowKey\":\"rk\",\"Seq\":12,\"Data\":\"abcdefghijklmnopqrstuvwxyz\"}",
        "{ \"A\" : -1.25e-3 , \"B\" : true , \"C\" : null , \"D\" : \"\xc3\xa9t\xc3\xa9\" }",
        "{\"x@odata.type\":\"Edm.Int64\",\"x\":\"9223372036854775807\",\"y\":false}",
        "{}",
    };
    static const char alphabet[] = "{}[]\":,\\ \t\r\n0123456789-+.eEtrufalsn\x01\x1f\x7f\x80\xc3\xff";
    const int rounds = 200000;
    int accepted = 0, mismatches = 0;
    char buf[256];
    for (int r = 0; r < rounds; r++) {
        const char *seed = seeds[rnd() % (sizeof seeds / sizeof seeds[0])];
        size_t n = strlen(seed);
        memcpy(buf, seed, n);
        int edits = 1 + (int)(rnd() % 3);
        for (int e = 0; e < edits; e++) {
            size_t at = n ? rnd() % n : 0;
            char c = alphabet[rnd() % (sizeof alphabet - 1)];
            switch (rnd() % 3) {
            case 0:   /* replace */
                if (n)
                    buf[at] = c;
                break;
            case 1:   /* insert */
                if (n + 1 < sizeof buf) {
                    memmove(buf + at + 1, buf + at, n - at);
                    buf[at] = c;
                    n++;
                }
                break;
            default:  /* delete */
                if (n) {
                    memmove(buf + at, buf + at + 1, n - at - 1);
                    n--;
                }
            }
        }
        if (run_flat(buf, n, &tf) != JSONFLAT_OK)
            continue;
        accepted++;
        if (!run_yajl(buf, n, &ty) || strcmp(tf.buf, ty.buf) != 0) {
            if (mismatches++ < 5)
                printf("# mismatch on: %.*s\n", (int)n, buf);
        }
    }
    printf("# %d of %d mutated bodies took the fast path\n", accepted, rounds);
    TEST_CHECK(accepted > rounds / 20, "the mutations reach the fast path often");
    TEST_EQ_INT(mismatches, 0, "yajl agrees on every body the fast path accepted");
}

int main(void)
{
    test_cases();
    test_differential();
    return test_done();
}
