/* test_table_json.c - codec/table_json.c: Create Table's TableName
 * (first top-level member decides, other members ignored, the name kept
 * with its length so "\u0000" stays in it, 1 MiB of nesting refused). */
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "codec/table_json.h"
#include "tests/unit/tap.h"

static struct arena *a;

/* The name found in json (as text with \0 shown as "\\0"), or "(InvalidInput)". */
static const char *name_of(const char *json)
{
    const char *name;
    size_t n;
    if (table_json_name(a, json, strlen(json), &name, &n) != TERR_NONE)
        return "(InvalidInput)";
    char *out = arena_alloc(a, 2 * n + 1), *o = out;
    for (size_t i = 0; i < n; i++) {
        if (name[i] == '\0') {
            *o++ = '\\';
            *o++ = '0';
        } else {
            *o++ = name[i];
        }
    }
    *o = '\0';
    return out;
}

int main(void)
{
    a = arena_new(4096);
    TEST_EQ_STR(name_of("{\"TableName\":\"orders\"}"), "orders", "a plain body");
    TEST_EQ_STR(name_of(" {\"Other\":{\"TableName\":\"inner\"},\"x\":[1,{\"y\":2}],"
                        "\"TableName\" : \"outer\" , \"odata.type\":\"x\"} "),
                "outer", "nested members and other members are ignored");
    TEST_EQ_STR(name_of("{\"TableName\":\"first\",\"TableName\":\"second\"}"), "first",
                "the first TableName decides");
    TEST_EQ_STR(name_of("{\"TableName\":5,\"TableName\":\"second\"}"), "(InvalidInput)",
                "even when it is not a string");
    TEST_EQ_STR(name_of("{\"Table\\u004eame\":\"esc\"}"), "esc", "an escaped member name");
    TEST_EQ_STR(name_of("{\"TableName\":\"tab\\u0000le\"}"), "tab\\0le",
                "a NUL escape stays inside the name, with the length");
    TEST_EQ_STR(name_of("{\"TableName\":\"\\u0000abc\"}"), "\\0abc", "even as its first character");
    TEST_EQ_STR(name_of("{\"TableName\":\"\"}"), "(InvalidInput)", "an empty name");
    TEST_EQ_STR(name_of("{\"TableName\":null}"), "(InvalidInput)", "a null name");
    TEST_EQ_STR(name_of("{\"TableName\":[\"abc\"]}"), "(InvalidInput)", "an array name");
    TEST_EQ_STR(name_of("{\"TableName\":{\"a\":\"abc\"}}"), "(InvalidInput)", "an object name");
    TEST_EQ_STR(name_of("{}"), "(InvalidInput)", "no TableName");
    TEST_EQ_STR(name_of("[\"TableName\",\"abc\"]"), "(InvalidInput)", "an array body");
    TEST_EQ_STR(name_of("\"abc\""), "(InvalidInput)", "a string body");
    TEST_EQ_STR(name_of("{\"TableName\":"), "(InvalidInput)", "truncated JSON");
    TEST_EQ_STR(name_of("{\"TableName\":\"abc\"} x"), "(InvalidInput)", "trailing bytes");
    TEST_EQ_STR(name_of("{\"TableName\":\"ab\xff" "cd\"}"), "(InvalidInput)", "ill-formed UTF-8");
    TEST_EQ_STR(name_of(""), "(InvalidInput)", "an empty body");
    const char *name;
    size_t n;
    TEST_CHECK(table_json_name(a, NULL, 0, &name, &n) == TERR_InvalidInput, "no body");
    const char *cut = "{\"TableName\":\"abc\"}trailing";
    TEST_CHECK(table_json_name(a, cut, 19, &name, &n) == TERR_NONE && n == 3,
               "only len bytes are read");

    /* 1 MiB of well-formed nesting around, or before, the name */
    for (int shape = 0; shape < 2; shape++) {
        const char *open = shape ? "{\"a\":" : "[", *close = shape ? "}" : "]";
        size_t u = strlen(open), reps = (1u << 20) / (u + 1), o = 0;
        char *b = malloc(64 + (u + 1) * reps);
        o += (size_t)strlen(strcpy(b, "{\"TableName\":\"deep\",\"x\":"));
        for (size_t i = 0; i < reps; i++, o += u)
            memcpy(b + o, open, u);
        if (shape)
            b[o++] = '1';
        memset(b + o, *close, reps);
        strcpy(b + o + reps, "}");
        TEST_EQ_STR(name_of(b), "(InvalidInput)",
                    shape ? "1 MiB of {\"a\":...} in another member is InvalidInput"
                          : "1 MiB of [...] in another member is InvalidInput");
        free(b);
    }
    char b[256];
    int o = sprintf(b, "{\"TableName\":\"ok\",\"x\":");
    for (int i = 0; i < 63; i++)
        b[o++] = '[';
    for (int i = 0; i < 63; i++)
        b[o++] = ']';
    strcpy(b + o, "}");
    TEST_EQ_STR(name_of(b), "ok", "64 levels in all are allowed");
    arena_free(a);
    return test_done();
}
