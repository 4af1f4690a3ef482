/* test_jsonpeek.c - core/jsonpeek.c: finding an entity body's PartitionKey
 * without parsing the body (escapes, nesting, odd spacing, malformed). */
#include <string.h>

#include "core/arena.h"
#include "core/jsonpeek.h"
#include "tests/unit/tap.h"

static struct arena *a;

/* The PartitionKey found in json as a NUL-terminated copy, or "(none)". */
static const char *pk_of(const char *json)
{
    const char *v;
    size_t n;
    if (!jsonpeek_string(a, json, strlen(json), "PartitionKey", &v, &n))
        return "(none)";
    return arena_strndup(a, v, n);
}

int main(void)
{
    a = arena_new(4096);
    TEST_EQ_STR(pk_of("{\"PartitionKey\":\"p1\",\"RowKey\":\"r\"}"), "p1", "first member");
    TEST_EQ_STR(pk_of("{\"RowKey\":\"r\",\"n\":12.5e3,\"b\":true,\"z\":null,\"PartitionKey\":\"p2\"}"),
                "p2", "after scalars of every kind");
    TEST_EQ_STR(pk_of(" \r\n\t{ \"a\" : { \"PartitionKey\" : \"inner\", \"x\": [1, {\"y\": \"}\"}] } ,"
                      " \"PartitionKey\" : \"outer\" } "),
                "outer", "a nested PartitionKey is not the top-level one; blanks anywhere");
    TEST_EQ_STR(pk_of("{\"s\":\"a \\\" quote, } and ] inside\",\"PartitionKey\":\"p3\"}"), "p3",
                "escaped quotes and brackets inside skipped strings");
    TEST_EQ_STR(pk_of("{\"PartitionKey\":\"a\\\"b\\\\c\\/d\\n\\u00e9\\ud83d\\ude00\"}"),
                "a\"b\\c/d\n\xc3\xa9\xf0\x9f\x98\x80", "escapes in the value are decoded");
    TEST_EQ_STR(pk_of("{\"Partition\\u004bey\":\"p4\"}"), "p4", "an escaped member name matches");
    TEST_EQ_STR(pk_of("{\"PartitionKey\":\"\"}"), "", "an empty key");
    TEST_EQ_STR(pk_of("{\"PartitionKey\":\"first\",\"PartitionKey\":\"second\"}"), "first",
                "the first of duplicate members");
    TEST_EQ_STR(pk_of("{\"PartitionKeyX\":\"no\",\"partitionkey\":\"no\"}"), "(none)",
                "names are compared exactly");
    TEST_EQ_STR(pk_of("{\"PartitionKey\":5}"), "(none)", "a non-string value");
    TEST_EQ_STR(pk_of("{\"PartitionKey\":\"unterminated}"), "(none)", "an unterminated value");
    TEST_EQ_STR(pk_of("{\"PartitionKey\":\"\\ud83d\"}"), "(none)", "a lone surrogate");
    TEST_EQ_STR(pk_of("{\"PartitionKey\":\"\\q\"}"), "(none)", "an unknown escape");
    TEST_EQ_STR(pk_of("[\"PartitionKey\",\"p\"]"), "(none)", "not an object");
    TEST_EQ_STR(pk_of("{\"a\":[1,2"), "(none)", "truncated before the key");
    TEST_EQ_STR(pk_of("{\"a\" 1, \"PartitionKey\":\"p\"}"), "(none)", "missing colon");
    TEST_EQ_STR(pk_of("{\"a\":1 \"PartitionKey\":\"p\"}"), "(none)", "missing comma");
    TEST_EQ_STR(pk_of(""), "(none)", "empty body");
    /* The length bound is respected: the value is cut off by n. */
    const char *body = "{\"PartitionKey\":\"abc\"}";
    const char *v;
    size_t n;
    TEST_CHECK(!jsonpeek_string(a, body, 18, "PartitionKey", &v, &n),
               "a body cut inside the value is not found");
    TEST_CHECK(jsonpeek_string(a, body, strlen(body), "PartitionKey", &v, &n) && n == 3 &&
                   v == body + 17,
               "an unescaped value points into the body");
    arena_free(a);
    return test_done();
}
