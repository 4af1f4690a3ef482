/* test_entity_json.c - OData JSON entity parsing, validation, writing and
 * ETags (codec/entity_json.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/buf.h"
#include "codec/edm.h"
#include "store/entity.h"
#include "codec/entity_json.h"
#include "tests/unit/tap.h"

static struct arena *A;

static enum terr parse_mode(const char *body, enum entity_parse_mode mode, struct entity *e)
{
    return entity_json_parse(A, body, strlen(body), mode, e);
}

static enum terr parse(const char *body, struct entity *e)
{
    return parse_mode(body, ENTITY_PARSE_INSERT, e);
}

static const struct property *prop(const struct entity *e, const char *name)
{
    long i = entity_find(e, name, strlen(name));
    return i < 0 ? NULL : &e->props[i];
}

static int str_is(const struct property *p, const char *s)
{
    return p && p->v.type == EDM_STRING && p->v.u.s.len == strlen(s) &&
           memcmp(p->v.u.s.ptr, s, p->v.u.s.len) == 0;
}

static int64_t ticks_of(const char *s)
{
    int64_t t = 0;
    edm_datetime_parse(s, strlen(s), &t);
    return t;
}

/* Deep equality of two entities' keys and properties (bit-exact doubles). */
static int same_props(const struct entity *a, const struct entity *b)
{
    if (a->nprops != b->nprops)
        return 0;
    if (a->pk_len != b->pk_len || memcmp(a->pk, b->pk, a->pk_len) != 0)
        return 0;
    if (a->rk_len != b->rk_len || memcmp(a->rk, b->rk, a->rk_len) != 0)
        return 0;
    for (size_t i = 0; i < a->nprops; i++) {
        const struct property *p = &a->props[i], *q = &b->props[i];
        if (p->name_len != q->name_len || memcmp(p->name, q->name, p->name_len) != 0 ||
            p->v.type != q->v.type)
            return 0;
        const struct edm_value *x = &p->v, *y = &q->v;
        switch (x->type) {
        case EDM_STRING:
        case EDM_BINARY:
            if (x->u.s.len != y->u.s.len || memcmp(x->u.s.ptr, y->u.s.ptr, x->u.s.len) != 0)
                return 0;
            break;
        case EDM_BOOLEAN:
            if (x->u.b != y->u.b)
                return 0;
            break;
        case EDM_DATETIME:
            if (x->u.ticks != y->u.ticks)
                return 0;
            break;
        case EDM_DOUBLE:
            if (memcmp(&x->u.d, &y->u.d, sizeof(double)) != 0 &&
                !(isnan(x->u.d) && isnan(y->u.d)))
                return 0;
            break;
        case EDM_GUID:
            if (memcmp(x->u.guid, y->u.guid, 16) != 0)
                return 0;
            break;
        case EDM_INT32:
            if (x->u.i32 != y->u.i32)
                return 0;
            break;
        case EDM_INT64:
            if (x->u.i64 != y->u.i64)
                return 0;
            break;
        }
    }
    return 1;
}

/* An entity body of every type (doc/protocol.md, Request bodies) plus a few extra values. */
static const char SAMPLE[] =
    "{\"PartitionKey\":\"2024\",\n \"RowKey\":\"0001\",\n \"Total\":12.5,\n \"Qty\":3,\n"
    " \"Sku@odata.type\":\"Edm.Int64\",\"Sku\":\"9007199254740993\",\n"
    " \"Placed@odata.type\":\"Edm.DateTime\",\"Placed\":\"2024-06-01T08:30:00Z\",\n"
    " \"Ref@odata.type\":\"Edm.Guid\",\"Ref\":\"4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11\",\n"
    " \"Blob@odata.type\":\"Edm.Binary\",\"Blob\":\"AAEC/w==\",\n"
    " \"Ratio@odata.type\":\"Edm.Double\",\"Ratio\":\"NaN\",\n"
    " \"Active\":true,\n \"Note\":\"hello\",\n"
    " \"Five\":5.0, \"Inf\":\"-Infinity\", \"Inf@odata.type\":\"Edm.Double\",\n"
    " \"Esc\":\"a\\\"b\\\\c\\n\\u0001\\u00fc/\"}";

static void test_parse_sample(void)
{
    struct entity e;
    TEST_EQ_INT(parse(SAMPLE, &e), TERR_NONE, "sample body of every type parses");
    TEST_EQ_STR(e.pk, "2024", "PartitionKey");
    TEST_EQ_STR(e.rk, "0001", "RowKey");
    TEST_EQ_INT(e.pk_len + e.rk_len, 8, "key lengths");
    TEST_EQ_INT(e.timestamp, 0, "timestamp not set by the parser");
    TEST_EQ_INT(e.nprops, 12, "12 custom properties");
    static const char *order[] = { "Total", "Qty",  "Sku",  "Placed", "Ref", "Blob",
                                   "Ratio", "Active", "Note", "Five", "Inf", "Esc" };
    int in_order = e.nprops == 12;
    for (size_t i = 0; in_order && i < 12; i++)
        in_order = strcmp(e.props[i].name, order[i]) == 0;
    TEST_CHECK(in_order, "properties keep the body's order");
    const struct property *p = prop(&e, "Total");
    TEST_CHECK(p && p->v.type == EDM_DOUBLE && p->v.u.d == 12.5, "Total: Double 12.5");
    p = prop(&e, "Qty");
    TEST_CHECK(p && p->v.type == EDM_INT32 && p->v.u.i32 == 3, "Qty: Int32 3");
    p = prop(&e, "Sku");
    TEST_CHECK(p && p->v.type == EDM_INT64 && p->v.u.i64 == 9007199254740993LL,
               "Sku: Int64 without loss");
    p = prop(&e, "Placed");
    TEST_CHECK(p && p->v.type == EDM_DATETIME && p->v.u.ticks == ticks_of("2024-06-01T08:30:00Z"),
               "Placed: DateTime");
    p = prop(&e, "Ref");
    TEST_CHECK(p && p->v.type == EDM_GUID && p->v.u.guid[0] == 0x4e && p->v.u.guid[15] == 0x11,
               "Ref: Guid");
    p = prop(&e, "Blob");
    TEST_CHECK(p && p->v.type == EDM_BINARY && p->v.u.s.len == 4 &&
                   memcmp(p->v.u.s.ptr, "\0\1\2\xff", 4) == 0,
               "Blob: Binary");
    p = prop(&e, "Ratio");
    TEST_CHECK(p && p->v.type == EDM_DOUBLE && isnan(p->v.u.d), "Ratio: Double NaN");
    p = prop(&e, "Active");
    TEST_CHECK(p && p->v.type == EDM_BOOLEAN && p->v.u.b == 1, "Active: Boolean true");
    TEST_CHECK(str_is(prop(&e, "Note"), "hello"), "Note: String");
    p = prop(&e, "Five");
    TEST_CHECK(p && p->v.type == EDM_DOUBLE && p->v.u.d == 5.0, "Five: 5.0 is a Double");
    p = prop(&e, "Inf");
    TEST_CHECK(p && p->v.type == EDM_DOUBLE && isinf(p->v.u.d) && p->v.u.d < 0,
               "Inf: annotation after the value honoured");
    TEST_CHECK(str_is(prop(&e, "Esc"), "a\"b\\c\n\001\xc3\xbc/"), "Esc: JSON escapes decoded");
}

/* Bodies that parse, and what one property becomes. */
static void test_parse_values(void)
{
    struct entity e;
    const struct property *p;

    TEST_EQ_INT(parse("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"odata.metadata\":\"x\","
                      "\"odata.etag\":{\"x\":[1]},\"odata.type\":5,\"Timestamp\":\"junk\","
                      "\"Timestamp@odata.type\":\"Edm.Foo\",\"PartitionKey@odata.type\":\"Edm.Int32\","
                      "\"RowKey@odata.type\":7,\"X\":1}",
                      &e),
                TERR_NONE, "odata.*, Timestamp and system annotations ignored");
    TEST_CHECK(e.nprops == 1 && strcmp(e.props[0].name, "X") == 0, "only X is a property");
    TEST_EQ_INT(parse("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"Timestamp\":{\"a\":[]}}", &e),
                TERR_NONE, "Timestamp object value ignored");
    TEST_EQ_INT(parse("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"N\":null,\"M\":1}", &e),
                TERR_NONE, "null property accepted");
    TEST_CHECK(e.nprops == 1 && prop(&e, "N") == NULL, "null property not stored");
    TEST_EQ_INT(parse("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"N@odata.type\":\"Edm.Guid\","
                      "\"N\":null}",
                      &e),
                TERR_NONE, "annotated null skipped");
    TEST_EQ_INT(e.nprops, 0, "no property");
    TEST_EQ_INT(parse("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"Lonely@odata.type\":\"Edm.Int64\"}",
                      &e),
                TERR_NONE, "annotation without property ignored");
    TEST_EQ_INT(e.nprops, 0, "still no property");
    TEST_EQ_INT(parse("{\"PartitionKey\":\"\",\"RowKey\":\"\",\"E\":\"\"}", &e), TERR_NONE,
                "empty keys and empty string");
    TEST_CHECK(e.pk && e.pk_len == 0 && e.rk && e.rk_len == 0 && str_is(prop(&e, "E"), ""),
               "empty values kept");
    TEST_EQ_INT(parse("{\"RowKey\":\"b\",\"partitionkey\":1,\"PartitionKey\":\"a\"}", &e),
                TERR_NONE, "key names are case-sensitive");
    p = prop(&e, "partitionkey");
    TEST_CHECK(p && p->v.type == EDM_INT32, "lower-case partitionkey is a custom property");

    struct {
        const char *member;   /* one or more members for property V */
        enum edm_type type;
        const char *what;
    } ok[] = {
        { "\"V\":42", EDM_INT32, "42 -> Int32" },
        { "\"V\":-2147483648", EDM_INT32, "Int32 min inferred" },
        { "\"V\":2147483647", EDM_INT32, "Int32 max inferred" },
        { "\"V\":3.0", EDM_DOUBLE, "3.0 -> Double" },
        { "\"V\":3e2", EDM_DOUBLE, "3e2 -> Double" },
        { "\"V\":-5E-1", EDM_DOUBLE, "-5E-1 -> Double" },
        { "\"V\":\"s\"", EDM_STRING, "string -> String" },
        { "\"V\":false", EDM_BOOLEAN, "false -> Boolean" },
        { "\"V@odata.type\":\"Edm.String\",\"V\":\"s\"", EDM_STRING, "annotated String" },
        { "\"V@odata.type\":\"Edm.Int32\",\"V\":\"123\"", EDM_INT32, "Int32 from \"123\"" },
        { "\"V@odata.type\":\"Edm.Int32\",\"V\":7", EDM_INT32, "annotated Int32 number" },
        { "\"V@odata.type\":\"Edm.Int64\",\"V\":\"-9223372036854775808\"", EDM_INT64,
          "Int64 min string" },
        { "\"V@odata.type\":\"Edm.Int64\",\"V\":\"9223372036854775807\"", EDM_INT64,
          "Int64 max string" },
        { "\"V@odata.type\":\"Edm.Int64\",\"V\":9007199254740993", EDM_INT64,
          "Int64 from a number" },
        { "\"V@odata.type\":\"Edm.Double\",\"V\":5", EDM_DOUBLE, "Double from integer" },
        { "\"V@odata.type\":\"Edm.Double\",\"V\":\"Infinity\"", EDM_DOUBLE, "Double Infinity" },
        { "\"V@odata.type\":\"Edm.Double\",\"V\":\"1.23456789012346e+24\"", EDM_DOUBLE,
          "Double from numeric string" },
        { "\"V@odata.type\":\"Edm.Boolean\",\"V\":\"true\"", EDM_BOOLEAN, "Boolean \"true\"" },
        { "\"V@odata.type\":\"Edm.Boolean\",\"V\":\"false\"", EDM_BOOLEAN, "Boolean \"false\"" },
        { "\"V@odata.type\":\"Edm.Boolean\",\"V\":true", EDM_BOOLEAN, "annotated Boolean" },
        { "\"V@odata.type\":\"Edm.DateTime\",\"V\":\"2012-01-02T23:00:00\"", EDM_DATETIME,
          "DateTime without zone" },
        { "\"V@odata.type\":\"Edm.Guid\",\"V\":\"{4E2E8B0C-5BB7-4C3C-9F43-3A6F1D0B2C11}\"",
          EDM_GUID, "Guid upper case in braces" },
        { "\"V@odata.type\":\"Edm.Binary\",\"V\":\"\"", EDM_BINARY, "empty Binary" },
        { "\"V\":\"x\",\"V@odata.type\":\"Edm.Int64\",\"W\":1", EDM_STRING,
          "(placeholder, replaced below)" },
    };
    ok[23].member = "\"V\":\"12\",\"V@odata.type\":\"Edm.Int64\"";
    ok[23].type = EDM_INT64;
    ok[23].what = "Int64 annotation after the value";
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char body[512];
        snprintf(body, sizeof body, "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",%s}", ok[i].member);
        enum terr r = parse(body, &e);
        p = prop(&e, "V");
        TEST_CHECK(r == TERR_NONE && p && p->v.type == ok[i].type, ok[i].what);
    }
    parse("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"V@odata.type\":\"Edm.Int64\","
          "\"V\":\"-9223372036854775808\"}",
          &e);
    TEST_CHECK(prop(&e, "V") && prop(&e, "V")->v.u.i64 == INT64_MIN, "Int64 min value");
    parse("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"V@odata.type\":\"Edm.Int32\",\"V\":\"123\"}",
          &e);
    TEST_CHECK(prop(&e, "V") && prop(&e, "V")->v.u.i32 == 123, "Int32 \"123\" value");
    parse("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"V\":-2147483648}", &e);
    TEST_CHECK(prop(&e, "V") && prop(&e, "V")->v.u.i32 == INT32_MIN, "Int32 min value");
    parse("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"V@odata.type\":\"Edm.DateTime\","
          "\"V\":\"2024-06-01T10:30:00+02:00\"}",
          &e);
    TEST_CHECK(prop(&e, "V") && prop(&e, "V")->v.u.ticks == ticks_of("2024-06-01T08:30:00Z"),
               "DateTime offset converted to UTC");

    /* Unicode: \u escapes, surrogate pairs, raw UTF-8, in names too */
    TEST_EQ_INT(parse("{\"PartitionKey\":\"\\u00fc\\ud83d\\ude00\",\"RowKey\":\"\xe4\xb8\xad\","
                      "\"\\u00e9t\\u00e9\":\"\\ud83d\\ude00x\",\"\xc3\xa9t\xc3\xa9_2\":\"\\u0000\"}",
                      &e),
                TERR_NONE, "Unicode escapes parse");
    TEST_EQ_STR(e.pk, "\xc3\xbc\xf0\x9f\x98\x80", "PK surrogate pair decoded");
    TEST_EQ_STR(e.rk, "\xe4\xb8\xad", "raw UTF-8 key");
    TEST_CHECK(str_is(prop(&e, "\xc3\xa9t\xc3\xa9"), "\xf0\x9f\x98\x80x"),
               "escaped non-ASCII name and surrogate pair value");
    p = prop(&e, "\xc3\xa9t\xc3\xa9_2");
    TEST_CHECK(p && p->v.u.s.len == 1 && p->v.u.s.ptr[0] == '\0', "\\u0000 kept in a string");

    TEST_EQ_INT(parse("\xef\xbb\xbf{\"PartitionKey\":\"a\",\"RowKey\":\"b\"}", &e), TERR_NONE,
                "leading UTF-8 BOM skipped");
    TEST_EQ_INT(parse("{\"PartitionKey\":\"a\",\"RowKey\":\"b\"}\xef\xbb\xbf", &e),
                TERR_InvalidInput, "BOM elsewhere is garbage");

    TEST_EQ_INT(parse("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":\"\\\\ud800\\\\\",\"Y\":\"\\uDBFF\\uDFFF\"}",
                      &e),
                TERR_NONE, "escaped backslash before 'ud800' text; upper-case pair");
    TEST_CHECK(str_is(prop(&e, "X"), "\\ud800\\") && str_is(prop(&e, "Y"), "\xf4\x8f\xbf\xbf"),
               "literal text and U+10FFFF");

    /* update mode: keys optional, validated when present */
    TEST_EQ_INT(parse_mode("{}", ENTITY_PARSE_UPDATE, &e), TERR_NONE, "{} is a valid update");
    TEST_CHECK(e.pk == NULL && e.rk == NULL && e.nprops == 0, "no keys, no properties");
    TEST_EQ_INT(parse_mode("{\"RowKey\":\"r\",\"A\":1}", ENTITY_PARSE_UPDATE, &e), TERR_NONE,
                "update with RowKey only");
    TEST_CHECK(e.pk == NULL && e.rk && strcmp(e.rk, "r") == 0, "RowKey kept, PK absent");
    TEST_EQ_INT(parse_mode("{\"PartitionKey\":null}", ENTITY_PARSE_UPDATE, &e), TERR_NONE,
                "update with a null key");
    TEST_EQ_INT(parse_mode("{\"PartitionKey\":\"a/b\"}", ENTITY_PARSE_UPDATE, &e),
                TERR_OutOfRangeInput, "update validates body keys");
    TEST_EQ_INT(parse_mode("{\"RowKey\":\"a#b\"}", ENTITY_PARSE_UPDATE, &e),
                TERR_OutOfRangeInput, "update validates a body RowKey");
}

struct bad {
    const char *body;
    enum terr want;
    const char *what;
};

/* Every validation error with a small body (INSERT mode). */
static void test_parse_errors(void)
{
    static const struct bad bad[] = {
        /* InvalidInput: JSON shape */
        { "", TERR_InvalidInput, "empty body" },
        { "{", TERR_InvalidInput, "unterminated object" },
        { "{\"PartitionKey\":\"a\",}", TERR_InvalidInput, "trailing comma" },
        { "{\"PartitionKey\":'a'}", TERR_InvalidInput, "single quotes" },
        { "{} x", TERR_InvalidInput, "trailing garbage" },
        { "{}{}", TERR_InvalidInput, "two top-level values" },
        { "[]", TERR_InvalidInput, "top-level array" },
        { "\"s\"", TERR_InvalidInput, "top-level string" },
        { "5", TERR_InvalidInput, "top-level number" },
        { "null", TERR_InvalidInput, "top-level null" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\" /*c*/}", TERR_InvalidInput, "comment" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":\"\xc3\"}", TERR_InvalidInput,
          "invalid raw UTF-8 in a string" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":\"\xc0\xaf\"}", TERR_InvalidInput,
          "overlong raw UTF-8 in a string (yajl lets it through)" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":\"\xed\xa0\x80\"}", TERR_InvalidInput,
          "raw encoded surrogate in a string" },
        { "{\"PartitionKey\":\"\xf4\x90\x80\x80\",\"RowKey\":\"b\"}", TERR_InvalidInput,
          "raw code point above U+10FFFF in a key" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\xc0\xaf\":1}", TERR_InvalidInput,
          "overlong raw UTF-8 in a name" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":\"\\udc00\"}", TERR_InvalidInput,
          "lone low surrogate escape" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":\"\\ud800x\"}", TERR_InvalidInput,
          "lone high surrogate escape" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":\"\\ud800\"}", TERR_InvalidInput,
          "high surrogate escape at the end of a string" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":\"\\ud800\\u0041\"}", TERR_InvalidInput,
          "high surrogate followed by a non-surrogate escape" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":\"\\ud800\\ud800\"}", TERR_InvalidInput,
          "two high surrogates" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"\\udc00\":1}", TERR_InvalidInput,
          "lone surrogate in a name" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":\"\\u12\"}", TERR_InvalidInput,
          "short \\u escape" },
        /* InvalidInput: values */
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":{}}", TERR_InvalidInput, "object value" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":[1]}", TERR_InvalidInput, "array value" },
        { "{\"PartitionKey\":{},\"RowKey\":\"b\"}", TERR_InvalidInput, "object key value" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":5,\"X\":1}", TERR_InvalidInput,
          "annotation value not a string" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":{},\"X\":1}", TERR_InvalidInput,
          "annotation value an object" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Decimal\",\"X\":\"1\"}",
          TERR_InvalidInput, "unknown Edm type" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"edm.int32\",\"X\":1}",
          TERR_InvalidInput, "type names are case-sensitive" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":3000000000}", TERR_InvalidInput,
          "unannotated integer outside Int32" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":-2147483649}", TERR_InvalidInput,
          "unannotated integer below Int32" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Int64\",\"X\":\"abc\"}",
          TERR_InvalidInput, "Int64 non-numeric string" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Int64\",\"X\":1.5}",
          TERR_InvalidInput, "Int64 fractional number" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Int64\","
          "\"X\":\"9223372036854775808\"}",
          TERR_InvalidInput, "Int64 out of range" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Int64\",\"X\":true}",
          TERR_InvalidInput, "Int64 boolean" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Int32\",\"X\":1.5}",
          TERR_InvalidInput, "Int32 fractional number" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Int32\","
          "\"X\":\"2147483648\"}",
          TERR_InvalidInput, "Int32 string out of range" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":1.8e308}", TERR_InvalidInput,
          "Double overflow" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Double\","
          "\"X\":\"1.8e308\"}",
          TERR_InvalidInput, "Double string overflow" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Double\",\"X\":\"abc\"}",
          TERR_InvalidInput, "Double non-numeric string" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":\"NaN\",\"Y\":1,"
          "\"X@odata.type\":\"Edm.Double\",\"Z@odata.type\":\"Edm.Double\",\"Z\":true}",
          TERR_InvalidInput, "Double from a boolean" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Boolean\",\"X\":\"yes\"}",
          TERR_InvalidInput, "Boolean \"yes\"" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Boolean\",\"X\":1}",
          TERR_InvalidInput, "Boolean from a number" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.String\",\"X\":1}",
          TERR_InvalidInput, "String from a number" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.DateTime\",\"X\":\"\"}",
          TERR_InvalidInput, "empty DateTime" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.DateTime\","
          "\"X\":\"yesterday\"}",
          TERR_InvalidInput, "malformed DateTime" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.DateTime\",\"X\":5}",
          TERR_InvalidInput, "DateTime from a number" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Guid\",\"X\":\"123\"}",
          TERR_InvalidInput, "invalid Guid" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Guid\",\"X\":1}",
          TERR_InvalidInput, "Guid from a number" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Binary\",\"X\":\"A===\"}",
          TERR_InvalidInput, "invalid base64" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Binary\",\"X\":\"!!!!\"}",
          TERR_InvalidInput, "base64 bad characters" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Binary\",\"X\":[]}",
          TERR_InvalidInput, "Binary array" },
        /* OutOfRangeInput: key characters */
        { "{\"PartitionKey\":\"a/b\",\"RowKey\":\"b\"}", TERR_OutOfRangeInput, "key with /" },
        { "{\"PartitionKey\":\"a\\\\b\",\"RowKey\":\"b\"}", TERR_OutOfRangeInput, "key with \\" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"#\"}", TERR_OutOfRangeInput, "key with #" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"x?\"}", TERR_OutOfRangeInput, "key with ?" },
        { "{\"PartitionKey\":\"a\\tb\",\"RowKey\":\"b\"}", TERR_OutOfRangeInput, "key with TAB" },
        { "{\"PartitionKey\":\"a\\u0000\",\"RowKey\":\"b\"}", TERR_OutOfRangeInput, "key with NUL" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"\\u007f\"}", TERR_OutOfRangeInput, "key with DEL" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"\\u0085\"}", TERR_OutOfRangeInput, "key with U+0085" },
        { "{\"PartitionKey\":\"\\u009f\",\"RowKey\":\"b\"}", TERR_OutOfRangeInput, "key with U+009F" },
        /* OutOfRangeInput is the service's answer for a forbidden key
         * character in a body (doc/protocol.md, Key values; it was InvalidInput). */
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"\\u001f\"}", TERR_OutOfRangeInput, "key with U+001F" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"\\u0080\"}", TERR_OutOfRangeInput, "key with U+0080" },
        { "{\"PartitionKey\":\"a\\r\\n\",\"RowKey\":\"b\"}", TERR_OutOfRangeInput, "key with CR LF" },
        /* OutOfRangeInput */
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.DateTime\","
          "\"X\":\"1600-12-31T23:59:59Z\"}",
          TERR_OutOfRangeInput, "DateTime before 1601" },
        /* PropertyNameInvalid */
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"1abc\":1}", TERR_PropertyNameInvalid,
          "name starting with a digit" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"a-b\":1}", TERR_PropertyNameInvalid,
          "name with -" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"a b\":1}", TERR_PropertyNameInvalid,
          "name with space" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"a.b\":1}", TERR_PropertyNameInvalid,
          "name with ." },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"a@b\":1}", TERR_PropertyNameInvalid,
          "name with @ (not an annotation)" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"\":1}", TERR_PropertyNameInvalid,
          "empty name" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"a\\u0085\":1}", TERR_PropertyNameInvalid,
          "name with a C1 control" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"a\\n\":null}", TERR_PropertyNameInvalid,
          "invalid name with a null value" },
        /* DuplicatePropertiesSpecified */
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":1,\"X\":2}",
          TERR_DuplicatePropertiesSpecified, "same property twice" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X\":null,\"X\":2}",
          TERR_DuplicatePropertiesSpecified, "same property twice, first null" },
        { "{\"PartitionKey\":\"a\",\"PartitionKey\":\"a\",\"RowKey\":\"b\"}",
          TERR_DuplicatePropertiesSpecified, "PartitionKey twice" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Int64\","
          "\"X@odata.type\":\"Edm.Int64\",\"X\":\"1\"}",
          TERR_DuplicatePropertiesSpecified, "annotation twice" },
        /* PropertiesNeedValue */
        { "{}", TERR_PropertiesNeedValue, "{} on insert" },
        { "{\"PartitionKey\":\"a\"}", TERR_PropertiesNeedValue, "insert without RowKey" },
        { "{\"RowKey\":\"a\"}", TERR_PropertiesNeedValue, "insert without PartitionKey" },
        { "{\"PartitionKey\":null,\"RowKey\":\"b\"}", TERR_PropertiesNeedValue,
          "null PartitionKey" },
        /* PrimaryKeyPropertyIsInvalidType */
        { "{\"PartitionKey\":5,\"RowKey\":\"b\"}", TERR_PrimaryKeyPropertyIsInvalidType,
          "numeric PartitionKey" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":true}", TERR_PrimaryKeyPropertyIsInvalidType,
          "boolean RowKey" },
        /* precedence */
        { "{\"1a\":1,", TERR_InvalidInput, "malformed JSON beats an earlier name error" },
        { "{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"X@odata.type\":\"Edm.Guid\",\"X\":\"z\","
          "\"1b\":2}",
          TERR_PropertyNameInvalid, "member errors beat value conversion errors" },
        { "{\"X@odata.type\":\"Edm.Guid\",\"X\":\"z\"}", TERR_InvalidInput,
          "value errors beat missing keys" },
        { "{\"PartitionKey\":\"a/\",\"X\":1,\"X\":2}", TERR_DuplicatePropertiesSpecified,
          "member errors beat key errors" },
        { "{\"PartitionKey\":\"a/\"}", TERR_PropertiesNeedValue,
          "missing key beats invalid key" },
        { "{\"a-b\":1,\"X\":1,\"X\":2}", TERR_PropertyNameInvalid,
          "first member error in body order" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct entity e;
        enum terr r = parse(bad[i].body, &e);
        TEST_EQ_INT(r, bad[i].want, bad[i].what);
    }
}

/* {"PartitionKey":"p","RowKey":"r", <extra> } built in a buf. */
static void body_start(struct buf *b)
{
    buf_reset(b);
    buf_puts(b, "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"");
}

static void put_repeat(struct buf *b, const char *unit, size_t times)
{
    for (size_t i = 0; i < times; i++)
        buf_puts(b, unit);
}

static enum terr parse_buf(struct buf *b, struct entity *e)
{
    return entity_json_parse(A, b->data, b->len, ENTITY_PARSE_INSERT, e);
}

/* Nesting: 1 MiB of brackets (also inside an ignored odata.* member, whose
 * nested values are otherwise allowed) is malformed input, refused by the
 * depth limit of core/jsonwalk.c; shallow nesting there still passes. */
static void test_deep(void)
{
    struct entity e;
    static const char *shapes[][3] = {
        {"[", "", "]"},
        {"{\"a\":", "1", "}"},
    };
    for (int k = 0; k < 2; k++) {
        for (int inside = 0; inside < 2; inside++) {
            const char *pre = inside ? "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"odata.x\":" : "";
            const char *post = inside ? "}" : "";
            size_t u = strlen(shapes[k][0]), c = strlen(shapes[k][2]);
            size_t reps = (1u << 20) / (u + c), o = 0;
            char *b = malloc(strlen(pre) + (u + c) * reps + 8);
            o += (size_t)sprintf(b, "%s", pre);
            for (size_t i = 0; i < reps; i++, o += u)
                memcpy(b + o, shapes[k][0], u);
            o += (size_t)sprintf(b + o, "%s", shapes[k][1]);
            for (size_t i = 0; i < reps; i++, o += c)
                memcpy(b + o, shapes[k][2], c);
            sprintf(b + o, "%s", post);
            char what[96];
            snprintf(what, sizeof what, "1 MiB of %s...%s%s is InvalidInput", shapes[k][0],
                     shapes[k][2], inside ? " in an odata.* member" : "");
            TEST_EQ_INT(parse(b, &e), TERR_InvalidInput, what);
            free(b);
        }
    }
    TEST_EQ_INT(parse("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"odata.x\":[[[{\"a\":[]}]]]}", &e),
                TERR_NONE, "shallow nesting in an odata.* member is ignored");
    char b[256];
    int o = sprintf(b, "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"odata.x\":");
    for (int i = 0; i < 64; i++)
        b[o++] = '[';
    for (int i = 0; i < 64; i++)
        b[o++] = ']';
    sprintf(b + o, "}");
    TEST_EQ_INT(parse(b, &e), TERR_InvalidInput, "65 levels in all are over the limit");
}

static void test_limits(void)
{
    struct buf b;
    struct entity e;
    buf_init(&b);

    /* property count */
    body_start(&b);
    for (int i = 0; i < 252; i++)
        buf_printf(&b, ",\"P%d\":%d", i, i);
    buf_puts(&b, ",\"N\":null}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_NONE, "252 custom properties (and a null) accepted");
    TEST_EQ_INT(e.nprops, 252, "252 stored");
    b.len--;
    buf_puts(&b, ",\"P252\":1}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_TooManyProperties, "253 custom properties rejected");

    /* name length in UTF-16 units */
    body_start(&b);
    buf_puts(&b, ",\"");
    put_repeat(&b, "n", 255);
    buf_puts(&b, "\":1}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_NONE, "255-character name accepted");
    body_start(&b);
    buf_puts(&b, ",\"");
    put_repeat(&b, "n", 256);
    buf_puts(&b, "\":1}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_PropertyNameTooLong, "256-character name rejected");
    body_start(&b);
    buf_puts(&b, ",\"");
    put_repeat(&b, "\xe4\xb8\xad", 255);
    buf_puts(&b, "\":1}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_NONE, "255 CJK characters (765 bytes) accepted");

    /* String value size in UTF-16 units */
    body_start(&b);
    buf_puts(&b, ",\"S\":\"");
    put_repeat(&b, "s", 32768);
    buf_puts(&b, "\"}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_NONE, "String of 32768 units accepted");
    body_start(&b);
    buf_puts(&b, ",\"S\":\"");
    put_repeat(&b, "s", 32769);
    buf_puts(&b, "\"}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_PropertyValueTooLarge, "String of 32769 units rejected");
    body_start(&b);
    buf_puts(&b, ",\"S\":\"");
    put_repeat(&b, "\xf0\x9f\x98\x80", 16384);
    buf_puts(&b, "\"}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_NONE, "16384 surrogate pairs (32768 units) accepted");
    body_start(&b);
    buf_puts(&b, ",\"S\":\"");
    put_repeat(&b, "\xf0\x9f\x98\x80", 16384);
    buf_puts(&b, "x\"}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_PropertyValueTooLarge, "32769 units with pairs rejected");

    /* Binary size: 65536 bytes = 21845 groups + 1 byte ("AA==") */
    body_start(&b);
    buf_puts(&b, ",\"B@odata.type\":\"Edm.Binary\",\"B\":\"");
    put_repeat(&b, "AAAA", 21845);
    buf_puts(&b, "AA==\"}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_NONE, "Binary of 65536 bytes accepted");
    TEST_CHECK(e.nprops == 1 && e.props[0].v.u.s.len == 65536, "65536 bytes decoded");
    body_start(&b);
    buf_puts(&b, ",\"B@odata.type\":\"Edm.Binary\",\"B\":\"");
    put_repeat(&b, "AAAA", 21845);
    buf_puts(&b, "AAA=\"}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_PropertyValueTooLarge, "Binary of 65537 bytes rejected");

    /* key length */
    buf_reset(&b);
    buf_puts(&b, "{\"RowKey\":\"r\",\"PartitionKey\":\"");
    put_repeat(&b, "k", 1024);
    buf_puts(&b, "\"}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_NONE, "PartitionKey of 1024 characters accepted");
    buf_reset(&b);
    buf_puts(&b, "{\"RowKey\":\"r\",\"PartitionKey\":\"");
    put_repeat(&b, "k", 1025);
    buf_puts(&b, "\"}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_KeyValueTooLarge, "PartitionKey of 1025 rejected");
    buf_reset(&b);
    buf_puts(&b, "{\"PartitionKey\":\"p\",\"RowKey\":\"");
    put_repeat(&b, "\xf0\x9f\x98\x80", 513);
    buf_puts(&b, "\"}");
    TEST_EQ_INT(parse_buf(&b, &e), TERR_RowKeyValueTooLarge, "RowKey of 1026 UTF-16 units rejected (RowKey message)");

    /* whole entity: 8 (keys) + 4 + 15 * (8 + 2*3 + 4 + 65536) + (8 + 2 + 4 + 2L) */
    for (int extra = 0; extra < 2; extra++) {
        body_start(&b);
        for (int i = 0; i < 15; i++) {
            buf_printf(&b, ",\"P%02d\":\"", i);
            put_repeat(&b, "x", 32768);
            buf_puts(&b, "\"");
        }
        buf_puts(&b, ",\"Q\":\"");
        put_repeat(&b, "x", 32622 + (size_t)extra);
        buf_puts(&b, "\"}");
        enum terr r = parse_buf(&b, &e);
        if (extra == 0) {
            TEST_EQ_INT(r, TERR_NONE, "entity of exactly 1 MiB by the size estimate accepted");
            TEST_EQ_INT(entity_size(&e), 1048576, "its size is 1048576");
        } else {
            TEST_EQ_INT(r, TERR_EntityTooLarge, "entity of 1 MiB + 2 rejected");
        }
    }

    /* entity_check_limits on its own (e.g. after a merge) */
    struct entity m;
    memset(&m, 0, sizeof m);
    for (int i = 0; i < 253; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        entity_add(A, &m, name, strlen(name))->v.type = EDM_BOOLEAN;
        if (i == 251)
            TEST_EQ_INT(entity_check_limits(&m), TERR_NONE, "check_limits: 252 ok");
    }
    TEST_EQ_INT(entity_check_limits(&m), TERR_TooManyProperties, "check_limits: 253");
    buf_free(&b);
}

static void test_check_key(void)
{
    struct buf b;
    buf_init(&b);
    TEST_EQ_INT(entity_check_key("", 0), TERR_NONE, "empty key");
    TEST_EQ_INT(entity_check_key("O'Neil \"A\" \xc2\xa0\xc3\xbc", 15), TERR_NONE,
                "quotes, space, U+00A0, u-umlaut");
    TEST_EQ_INT(entity_check_key("\xc2\x80", 2), TERR_OutOfRangeInput, "U+0080");
    TEST_EQ_INT(entity_check_key("a\x1f", 2), TERR_OutOfRangeInput, "U+001F");
    TEST_EQ_INT(entity_check_key("/", 1), TERR_OutOfRangeInput, "/");
    TEST_EQ_INT(entity_check_key("a\\", 2), TERR_OutOfRangeInput, "backslash");
    TEST_EQ_INT(entity_check_key("#", 1), TERR_OutOfRangeInput, "#");
    TEST_EQ_INT(entity_check_key("a?b", 3), TERR_OutOfRangeInput, "?");
    TEST_EQ_INT(entity_check_key("\x7f", 1), TERR_OutOfRangeInput, "U+007F");
    TEST_EQ_INT(entity_check_key("\xc2\x9f", 2), TERR_OutOfRangeInput, "U+009F");
    TEST_EQ_INT(entity_check_key("\x20~\xc2\xa0", 4), TERR_NONE, "U+0020, U+007E, U+00A0 allowed");
    TEST_EQ_INT(entity_check_key("\xc3", 1), TERR_InvalidInput, "ill-formed UTF-8");
    TEST_EQ_INT(entity_check_key("\xed\xa0\x80", 3), TERR_InvalidInput, "encoded surrogate");
    put_repeat(&b, "\xf0\x9f\x98\x80", 512);
    TEST_EQ_INT(entity_check_key(b.data, b.len), TERR_NONE, "512 pairs = 1024 units");
    buf_puts(&b, "a");
    TEST_EQ_INT(entity_check_key(b.data, b.len), TERR_KeyValueTooLarge, "1025 units");
    buf_free(&b);
}

/* What an OutOfRangeInput names (entity_json_parse_range) and the
 * service's message built from it (terr_range_message). */
static void range_is(const char *body, enum terr want, const char *name, const char *value,
                     size_t value_len, const char *what)
{
    struct entity e;
    struct entity_range r;
    char w[160];
    enum terr got = entity_json_parse_range(A, body, strlen(body), ENTITY_PARSE_INSERT, &e, &r);
    snprintf(w, sizeof w, "%s: the error", what);
    TEST_EQ_INT(got, want, w);
    snprintf(w, sizeof w, "%s: the name", what);
    TEST_CHECK(name ? r.name && r.name_len == strlen(name) && memcmp(r.name, name,
                                                                      r.name_len) == 0
                    : r.name == NULL, w);
    snprintf(w, sizeof w, "%s: the value", what);
    TEST_CHECK(!name || (r.value_len == value_len && memcmp(r.value, value, value_len) == 0), w);
}

static void test_range(void)
{
    range_is("{\"PartitionKey\":\"a/b\",\"RowKey\":\"r\"}", TERR_OutOfRangeInput, "PartitionKey",
             "a/b", 3, "PartitionKey a/b");
    range_is("{\"PartitionKey\":\"p\",\"RowKey\":\"x\\u0000y\"}", TERR_OutOfRangeInput, "RowKey",
             "x\0y", 3, "RowKey with NUL (the value keeps it)");
    range_is("{\"PartitionKey\":\"a?\",\"RowKey\":\"b#\"}", TERR_OutOfRangeInput, "PartitionKey",
             "a?", 2, "both keys bad: PartitionKey first");
    range_is("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"When@odata.type\":\"Edm.DateTime\","
             "\"When\":\"1600-12-31T23:59:59.9999999Z\"}", TERR_OutOfRangeInput, "When",
             "12/31/1600 23:59:59", 19, "DateTime before 1601: invariant text");
    range_is("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"When@odata.type\":\"Edm.DateTime\","
             "\"When\":\"0001-01-01T00:30:00+01:00\"}", TERR_OutOfRangeInput, NULL, NULL, 0,
             "DateTime before year 1 after its offset: names nothing");
    range_is("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"When@odata.type\":\"Edm.DateTime\","
             "\"When\":\"0000-06-01T00:00:00Z\"}", TERR_OutOfRangeInput, NULL, NULL, 0,
             "DateTime of year 0: names nothing");
    range_is("{\"PartitionKey\":\"a\",\"RowKey\":\"b\",\"When@odata.type\":\"Edm.DateTime\","
             "\"When\":\"1000-06-15T08:09:10+02:00\"}", TERR_OutOfRangeInput, "When",
             "06/15/1000 06:09:10", 19, "DateTime with an offset: shown in UTC");
    range_is("{\"PartitionKey\":\"a\",\"RowKey\":\"b\"}", TERR_NONE, NULL, NULL, 0,
             "a good entity names nothing");
    /* a key over 1024 units is too large before its characters are looked
       at: the message that names a key stays bounded */
    struct buf b;
    buf_init(&b);
    buf_puts(&b, "{\"PartitionKey\":\"p\",\"RowKey\":\"");
    put_repeat(&b, "/", 1025);
    buf_puts(&b, "\"}");
    buf_putc(&b, '\0');
    range_is(b.data, TERR_RowKeyValueTooLarge, NULL, NULL, 0, "1,025 '/' in a RowKey");
    buf_reset(&b);
    buf_puts(&b, "{\"PartitionKey\":\"");
    put_repeat(&b, "k", 1023);
    buf_puts(&b, "#\",\"RowKey\":\"r\"}");
    buf_putc(&b, '\0');
    struct entity e;
    struct entity_range r;
    TEST_EQ_INT(entity_json_parse_range(A, b.data, strlen(b.data), ENTITY_PARSE_INSERT, &e, &r),
                TERR_OutOfRangeInput, "1,024 characters with #: OutOfRangeInput");
    TEST_EQ_INT((long)r.value_len, 1024, "... naming all 1,024");
    buf_free(&b);

    size_t len;
    const char *m = terr_range_message(A, "RowKey", 6, "x\0y", 3, &len);
    static const char want[] = "The 'RowKey' parameter of value 'x\0y' is out of range.";
    TEST_CHECK(len == sizeof want - 1 && memcmp(m, want, len) == 0 && m[len] == '\0',
               "terr_range_message: the service's text, NUL bytes kept, NUL-terminated");
}

/* ---- writer ---- */

#define BASE "http://127.0.0.1:10002/devstoreaccount1"
#define ETAG "\"odata.etag\":\"W/\\\"datetime'2024-06-03T10%3A00%3A00.1234567Z'\\\"\""
#define KEYS "\"PartitionKey\":\"2024\",\"RowKey\":\"0001\""
#define TS "\"Timestamp\":\"2024-06-03T10:00:00.1234567Z\""
#define TSFULL "\"Timestamp@odata.type\":\"Edm.DateTime\"," TS
#define FULLHEAD                                                                              \
    "\"odata.type\":\"devstoreaccount1.orders\",\"odata.id\":\"" BASE                         \
    "/orders(PartitionKey='2024',RowKey='0001')\"," ETAG                                      \
    ",\"odata.editLink\":\"orders(PartitionKey='2024',RowKey='0001')\""
#define PROPS_MIN                                                                             \
    "\"Total\":12.5,\"Qty\":3,\"Sku@odata.type\":\"Edm.Int64\",\"Sku\":\"9007199254740993\","  \
    "\"Placed@odata.type\":\"Edm.DateTime\",\"Placed\":\"2024-06-01T08:30:00Z\","             \
    "\"Ref@odata.type\":\"Edm.Guid\",\"Ref\":\"4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11\","       \
    "\"Blob@odata.type\":\"Edm.Binary\",\"Blob\":\"AAEC/w==\","                               \
    "\"Ratio@odata.type\":\"Edm.Double\",\"Ratio\":\"NaN\",\"Active\":true,"                  \
    "\"Note\":\"hello\",\"Five\":5.0,\"Inf@odata.type\":\"Edm.Double\",\"Inf\":\"-Infinity\"," \
    "\"Esc\":\"a\\\"b\\\\c\\n\\u0001\xc3\xbc/\""
#define PROPS_NOMETA                                                                          \
    "\"Total\":12.5,\"Qty\":3,\"Sku\":\"9007199254740993\","                                  \
    "\"Placed\":\"2024-06-01T08:30:00Z\",\"Ref\":\"4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11\","   \
    "\"Blob\":\"AAEC/w==\",\"Ratio\":\"NaN\",\"Active\":true,\"Note\":\"hello\","             \
    "\"Five\":5.0,\"Inf\":\"-Infinity\",\"Esc\":\"a\\\"b\\\\c\\n\\u0001\xc3\xbc/\""

static void write_one(struct buf *b, const struct entity *e, enum odata_level level,
                      const char *metadata, const char *const *select, size_t nselect)
{
    struct entity_json_ctx ctx = { level, BASE, "devstoreaccount1", "orders", metadata, select,
                                   nselect };
    buf_reset(b);
    entity_json_write(b, e, &ctx);
    /* the scan's writer, from the stored bytes, must say the same */
    struct buf v, w;
    buf_init(&v);
    buf_init(&w);
    entity_encode(e, &v);
    int rc = entity_json_write_value(&w, e->pk ? e->pk : "", e->pk ? e->pk_len : 0,
                                     e->rk ? e->rk : "", e->rk ? e->rk_len : 0, v.data, v.len,
                                     &ctx);
    TEST_CHECK(rc == 0 && w.len == b->len && memcmp(w.data, b->data, b->len) == 0,
               "write from the stored value = write from the entity");
    buf_free(&v);
    buf_free(&w);
}

static void test_write(void)
{
    struct entity e;
    struct buf b;
    buf_init(&b);
    TEST_EQ_INT(parse(SAMPLE, &e), TERR_NONE, "sample parses for writing");
    e.timestamp = ticks_of("2024-06-03T10:00:00.1234567Z");
    const char *md = BASE "/$metadata#orders/@Element";

    write_one(&b, &e, ODATA_MINIMAL, md, NULL, 0);
    TEST_EQ_STR(b.data,
                "{\"odata.metadata\":\"" BASE "/$metadata#orders/@Element\"," ETAG "," KEYS
                "," TS "," PROPS_MIN "}",
                "minimal metadata, single entry");
    write_one(&b, &e, ODATA_MINIMAL, NULL, NULL, 0);
    TEST_EQ_STR(b.data, "{" ETAG "," KEYS "," TS "," PROPS_MIN "}", "minimal metadata, in a feed");
    write_one(&b, &e, ODATA_FULL, md, NULL, 0);
    TEST_EQ_STR(b.data,
                "{\"odata.metadata\":\"" BASE "/$metadata#orders/@Element\"," FULLHEAD "," KEYS
                "," TSFULL "," PROPS_MIN "}",
                "full metadata, single entry");
    write_one(&b, &e, ODATA_FULL, NULL, NULL, 0);
    TEST_EQ_STR(b.data, "{" FULLHEAD "," KEYS "," TSFULL "," PROPS_MIN "}",
                "full metadata, in a feed");
    write_one(&b, &e, ODATA_NOMETADATA, md, NULL, 0);
    TEST_EQ_STR(b.data, "{" KEYS "," TS "," PROPS_NOMETA "}",
                "nometadata: no odata.* members, no annotations");

    static const char *const sel[] = { "Note", "RowKey", "Missing", "Sku", "Note", "Timestamp",
                                       "Missing" };
    write_one(&b, &e, ODATA_MINIMAL, NULL, sel, 7);
    TEST_EQ_STR(b.data,
                "{" ETAG ",\"RowKey\":\"0001\"," TS ",\"Sku@odata.type\":\"Edm.Int64\","
                "\"Sku\":\"9007199254740993\",\"Note\":\"hello\",\"Missing\":null}",
                "minimal with $select");
    write_one(&b, &e, ODATA_FULL, NULL, sel, 7);
    TEST_EQ_STR(b.data,
                "{" FULLHEAD ",\"RowKey\":\"0001\"," TSFULL ",\"Sku@odata.type\":\"Edm.Int64\","
                "\"Sku\":\"9007199254740993\",\"Note\":\"hello\",\"Missing\":null}",
                "full with $select");
    write_one(&b, &e, ODATA_NOMETADATA, NULL, sel, 7);
    TEST_EQ_STR(b.data,
                "{\"RowKey\":\"0001\"," TS ",\"Sku\":\"9007199254740993\",\"Note\":\"hello\","
                "\"Missing\":null}",
                "nometadata with $select");
    static const char *const sel2[] = { "Five", "PartitionKey" };
    write_one(&b, &e, ODATA_NOMETADATA, NULL, sel2, 2);
    TEST_EQ_STR(b.data, "{\"PartitionKey\":\"2024\",\"Five\":5.0}",
                "$select without RowKey/Timestamp omits them; stored order");
    static const char *const star[] = { "*" };
    write_one(&b, &e, ODATA_MINIMAL, NULL, star, 1);
    TEST_EQ_STR(b.data, "{" ETAG "," KEYS "," TS "," PROPS_MIN "}", "$select=* is everything");
    static const char *const none[] = { "Nope" };
    write_one(&b, &e, ODATA_NOMETADATA, NULL, none, 1);
    TEST_EQ_STR(b.data, "{\"Nope\":null}", "only an absent property");

    /* keys needing encoding in odata.id / editLink, escaping in values */
    struct entity k;
    memset(&k, 0, sizeof k);
    k.pk = "O'Neil \"A\"";
    k.pk_len = strlen(k.pk);
    k.rk = "r 1-\xc3\xbc";
    k.rk_len = strlen(k.rk);
    k.timestamp = ticks_of("2024-06-01T08:30:00Z");
    write_one(&b, &k, ODATA_FULL, NULL, NULL, 0);
    TEST_EQ_STR(b.data,
                "{\"odata.type\":\"devstoreaccount1.orders\",\"odata.id\":\"" BASE
                "/orders(PartitionKey='O''Neil%20%22A%22',RowKey='r%201-%C3%BC')\","
                "\"odata.etag\":\"W/\\\"datetime'2024-06-01T08%3A30%3A00Z'\\\"\","
                "\"odata.editLink\":\"orders(PartitionKey='O''Neil%20%22A%22',"
                "RowKey='r%201-%C3%BC')\",\"PartitionKey\":\"O'Neil \\\"A\\\"\","
                "\"RowKey\":\"r 1-\xc3\xbc\",\"Timestamp@odata.type\":\"Edm.DateTime\","
                "\"Timestamp\":\"2024-06-01T08:30:00Z\"}",
                "full metadata: encoded keys, zero fraction trimmed");

    /* value forms */
    struct entity v;
    memset(&v, 0, sizeof v);
    v.pk = v.rk = "";
    v.timestamp = ticks_of("2024-06-01T08:30:00.9999900Z");
    struct property *p = entity_add(A, &v, "I", 1);
    p->v.type = EDM_INT32;
    p->v.u.i32 = INT32_MIN;
    p = entity_add(A, &v, "L", 1);
    p->v.type = EDM_INT64;
    p->v.u.i64 = INT64_MIN;
    p = entity_add(A, &v, "D", 1);
    p->v.type = EDM_DOUBLE;
    p->v.u.d = 1e300;
    p = entity_add(A, &v, "P", 1);
    p->v.type = EDM_DOUBLE;
    p->v.u.d = INFINITY;
    p = entity_add(A, &v, "F", 1);
    p->v.type = EDM_BOOLEAN;
    write_one(&b, &v, ODATA_MINIMAL, NULL, NULL, 0);
    TEST_EQ_STR(b.data,
                "{\"odata.etag\":\"W/\\\"datetime'2024-06-01T08%3A30%3A00.99999Z'\\\"\","
                "\"PartitionKey\":\"\",\"RowKey\":\"\",\"Timestamp\":\"2024-06-01T08:30:00.99999Z\","
                "\"I\":-2147483648,\"L@odata.type\":\"Edm.Int64\",\"L\":\"-9223372036854775808\","
                "\"D\":1E+300,\"P@odata.type\":\"Edm.Double\",\"P\":\"Infinity\",\"F\":false}",
                "value forms: Int32, Int64, Double exponent, Infinity, false");

    buf_reset(&b);
    json_put_string(&b, "q\"b\\s/\x01\x1f\x7f\b\f\n\r\t\xe2\x82\xac", 17);
    TEST_EQ_STR(b.data, "\"q\\\"b\\\\s/\\u0001\\u001f\x7f\\b\\f\\n\\r\\t\xe2\x82\xac\"",
                "json_put_string escapes");
    buf_reset(&b);
    json_put_string(&b, "a\0b", 3);
    TEST_CHECK(b.len == 10 && memcmp(b.data, "\"a\\u0000b\"", 10) == 0, "NUL escaped");
    buf_free(&b);
}

/* The JSON form of one byte, written plainly: the reference that the
 * sixteen-byte (SSE2) scan of json_put_string must agree with. */
static void ref_escape(struct buf *b, unsigned char c)
{
    switch (c) {
    case '"': buf_puts(b, "\\\""); break;
    case '\\': buf_puts(b, "\\\\"); break;
    case '\n': buf_puts(b, "\\n"); break;
    case '\r': buf_puts(b, "\\r"); break;
    case '\t': buf_puts(b, "\\t"); break;
    case '\b': buf_puts(b, "\\b"); break;
    case '\f': buf_puts(b, "\\f"); break;
    default:
        if (c < 0x20)
            buf_printf(b, "\\u%04x", c);
        else
            buf_putc(b, (char)c);
    }
}

/* Every byte value at every position of a 37-byte string: in its first
 * and second sixteen-byte block and in the tail, against ref_escape. */
static void test_escape_blocks(void)
{
    struct buf got, want;
    buf_init(&got);
    buf_init(&want);
    int bad = 0;
    for (int c = 0; c < 256; c++) {
        for (size_t at = 0; at < 37; at++) {
            char s[37];
            memset(s, c == 'a' ? 'b' : 'a', sizeof s);
            s[at] = (char)c;
            buf_reset(&got);
            buf_reset(&want);
            json_put_string(&got, s, sizeof s);
            buf_putc(&want, '"');
            for (size_t i = 0; i < sizeof s; i++)
                ref_escape(&want, (unsigned char)s[i]);
            buf_putc(&want, '"');
            if (got.len != want.len || memcmp(got.data, want.data, got.len) != 0)
                bad++;
        }
    }
    TEST_CHECK(bad == 0, "json_put_string escapes every byte at every block position");
    buf_free(&got);
    buf_free(&want);
}

/* Every Edm type, with edge values, through write -> parse. */
static void test_round_trip(void)
{
    struct entity e, back;
    struct buf b, body;
    buf_init(&b);
    buf_init(&body);
    memset(&e, 0, sizeof e);
    e.pk = "p\xc3\xbc";
    e.pk_len = 3;
    e.rk = "\xf0\x9f\x98\x80'";
    e.rk_len = 5;
    e.timestamp = ticks_of("2024-06-03T10:00:00.1234567Z");
    struct {
        const char *name;
        enum edm_type t;
    } defs[] = {
        { "S", EDM_STRING },      { "S0", EDM_STRING },   { "Bin", EDM_BINARY },
        { "B0", EDM_BINARY },     { "T", EDM_BOOLEAN },   { "F", EDM_BOOLEAN },
        { "Dmin", EDM_DATETIME }, { "Dmax", EDM_DATETIME }, { "G", EDM_GUID },
        { "I32a", EDM_INT32 },    { "I32b", EDM_INT32 },  { "I64a", EDM_INT64 },
        { "I64b", EDM_INT64 },    { "I64c", EDM_INT64 },
    };
    static uint8_t bytes[256];
    for (int i = 0; i < 256; i++)
        bytes[i] = (uint8_t)i;
    static const char str[] = "a\0\"\\\x01\x7f\xc3\xbc\xe4\xb8\xad\xef\xbf\xbf\xf0\x9f\x98\x80 ";
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        struct property *p = entity_add(A, &e, defs[i].name, strlen(defs[i].name));
        p->v.type = defs[i].t;
    }
    e.props[0].v.u.s.ptr = str;
    e.props[0].v.u.s.len = sizeof str - 1;
    e.props[1].v.u.s.ptr = "";
    e.props[2].v.u.s.ptr = (const char *)bytes;
    e.props[2].v.u.s.len = 256;
    e.props[3].v.u.s.ptr = "";
    e.props[4].v.u.b = 1;
    e.props[6].v.u.ticks = EDM_DATETIME_MIN_TICKS;
    e.props[7].v.u.ticks = EDM_DATETIME_MAX_TICKS;
    for (int i = 0; i < 16; i++)
        e.props[8].v.u.guid[i] = (uint8_t)(0xF0 ^ i * 13);
    e.props[9].v.u.i32 = INT32_MIN;
    e.props[10].v.u.i32 = INT32_MAX;
    e.props[11].v.u.i64 = INT64_MIN;
    e.props[12].v.u.i64 = INT64_MAX;
    e.props[13].v.u.i64 = 0;
    static const double doubles[] = { 0.0,     -0.0,   5.0,      -12.5,    0.1,     1e300,
                                      1e-300,  5e-324, 1.7976931348623157e308, 123456789012345.0,
                                      1e15,    1e-5,   1e-6,     2.5e-7,   NAN,     INFINITY,
                                      -INFINITY, 3.141592653589793 };
    for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++) {
        char name[8];
        snprintf(name, sizeof name, "D%zu", i);
        struct property *p = entity_add(A, &e, name, strlen(name));
        p->v.type = EDM_DOUBLE;
        p->v.u.d = doubles[i];
    }
    for (int level = ODATA_MINIMAL; level <= ODATA_FULL; level++) {
        write_one(&b, &e, (enum odata_level)level, "x", NULL, 0);
        enum terr r = parse_mode(b.data, ENTITY_PARSE_INSERT, &back);
        TEST_EQ_INT(r, TERR_NONE, level == ODATA_FULL ? "full output parses back"
                                                      : "minimal output parses back");
        TEST_CHECK(r == TERR_NONE && same_props(&e, &back),
                   level == ODATA_FULL ? "every type round-trips through full metadata JSON"
                                       : "every type round-trips through minimal metadata JSON");
    }
    /* parse -> write -> parse on the sample body */
    struct entity s1, s2;
    parse(SAMPLE, &s1);
    write_one(&b, &s1, ODATA_MINIMAL, NULL, NULL, 0);
    TEST_EQ_INT(parse(b.data, &s2), TERR_NONE, "sample: written form parses");
    TEST_CHECK(same_props(&s1, &s2), "sample: parse -> write -> parse is stable");
    /* and through the binary codec */
    buf_reset(&body);
    entity_encode(&e, &body);
    struct entity d = e;
    TEST_EQ_INT(entity_decode(A, body.data, body.len, &d), 0, "binary decode");
    TEST_CHECK(same_props(&e, &d), "every type round-trips through encode/decode");
    buf_free(&b);
    buf_free(&body);
}

static void test_etag(void)
{
    char out[64];
    int64_t t = ticks_of("2022-02-01T20:52:35.2732889Z"), got = 0;
    size_t n = entity_etag(t, out);
    TEST_EQ_STR(out, "W/\"datetime'2022-02-01T20%3A52%3A35.2732889Z'\"", "ETag text from the Timestamp");
    TEST_EQ_INT(n, strlen(out), "ETag length");
    TEST_EQ_INT(entity_etag_parse(out, n, &got), 0, "ETag parses back");
    TEST_EQ_INT(got, t, "same ticks");
    const char *colon = "W/\"datetime'2022-02-01T20:52:35.2732889Z'\"";
    got = 0;
    TEST_EQ_INT(entity_etag_parse(colon, strlen(colon), &got), 0, "':' accepted");
    TEST_EQ_INT(got, t, "':' form gives the same ticks");
    const char *lower = "W/\"datetime'2022-02-01T20%3a52%3a35.2732889Z'\"";
    TEST_EQ_INT(entity_etag_parse(lower, strlen(lower), &got), 0, "%3a accepted");
    n = entity_etag(ticks_of("2024-06-01T08:30:00Z"), out);
    TEST_EQ_STR(out, "W/\"datetime'2024-06-01T08%3A30%3A00Z'\"", "ETag without fraction");
    static const char *bad[] = {
        "", "*", "\"datetime'2022-02-01T20%3A52%3A35.2732889Z'\"",
        "W/datetime'2022-02-01T20%3A52%3A35.2732889Z'",
        "W/\"datetime'2022-02-01T20%3A52%3A35.2732889Z'",
        "W/\"datetime'2022-02-01T20%3A52%3A35.2732889Z\"",
        "W/\"datetime'2022-02-01T20%3A52%3A35.2732889Z'\" ",
        "w/\"datetime'2022-02-01T20%3A52%3A35.2732889Z'\"",
        "W/\"date'2022-02-01T20%3A52%3A35.2732889Z'\"", "W/\"datetime''\"",
        "W/\"datetime'junk'\"", "W/\"datetime'2022-02-01T20%3B52%3A35Z'\"",
        "W/\"datetime'2022-02-01T20%3'\"", "W/\"datetime'1600-02-01T20%3A52%3A35Z'\"",
        "W/\"datetime'2022-02-01T20%3A52%3A35.2732889Z'\", W/\"datetime'2022-02-01T20%3A52%3A35Z'\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        TEST_EQ_INT(entity_etag_parse(bad[i], strlen(bad[i]), &got), -1, bad[i]);
    /* Any weak ETag is well-formed (If-Match: 412 when stale); strong or
     * unquoted values and lists are not (400; doc/protocol.md, If-Match, Azurite#1229). */
    static const char *weak[] = {
        "W/\"wrong\"", "w/\"wrong\"", "W/\"\"", "W/\"datetime'junk'\"",
        "W/\"datetime'2022-02-01T20%3A52%3A35.2732889Z'\"", "W/\"a\\\"b\"",
    };
    for (size_t i = 0; i < sizeof weak / sizeof weak[0]; i++)
        TEST_EQ_INT(entity_etag_wellformed(weak[i], strlen(weak[i])), 1, weak[i]);
    static const char *notetag[] = {
        "", "*", "\"x\"", "wrong", "W/wrong", "W/\"", "W\"x\"", "X/\"x\"", "W/\"a\"b\"",
        "W/\"a\", W/\"b\"", "W/\"a\" ", " W/\"a\"", "\"datetime'2022-02-01T20%3A52%3A35Z'\"",
    };
    for (size_t i = 0; i < sizeof notetag / sizeof notetag[0]; i++)
        TEST_EQ_INT(entity_etag_wellformed(notetag[i], strlen(notetag[i])), 0, notetag[i]);
}

/* ---- the stored-value writer against the entity writer ---------------- */

static uint64_t rng = 0x243F6A8885A308D3ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A random string of n bytes from pieces that matter to JSON, URLs and
 * UTF-8: plain runs (long ones cross the 16-byte scan), quotes,
 * backslashes, controls, DEL, multi-byte characters. */
static char *rnd_text(size_t max)
{
    static const char *const bits[] = {"a", "Zz9", "\"", "\\", "\n", "\x01", "\x1f", " ",
                                       "\x7f", "\xc3\xbc", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                       "'", "/", "%", "0123456789abcdefghijkl", "(", "&"};
    size_t n = rnd() % (max + 1), len = 0;
    char *s = arena_alloc(A, n * 22 + 1);
    for (size_t i = 0; i < n; i++) {
        const char *b = bits[rnd() % (sizeof bits / sizeof *bits)];
        memcpy(s + len, b, strlen(b));
        len += strlen(b);
    }
    s[len] = '\0';
    return s;
}

static double rnd_double(void)
{
    uint64_t x = rnd();
    double d;
    switch (x % 6) {
    case 0:
        memcpy(&d, &x, sizeof d);
        return d;   /* any bits: NaN, infinities, subnormals included */
    case 1:
        return (double)(int64_t)(x >> 20) / 1000.0;
    case 2:
        return (double)(x % 100000) / 100.0;
    case 3:
        return x % 2 ? -0.0 : 0.0;
    case 4:
        return (double)(int64_t)x;
    default:
        return 1.0 / (double)(x % 1000 + 1);
    }
}

static void test_write_value_differential(void)
{
    static const char *const names[] = {"A", "Num", "Name", "x_1", "\xc3\xa9t\xc3\xa9",
                                        "Data", "B", "Timestamp2", "_", "V"};
    static const char *const sel_pool[] = {"A", "Num", "Name", "Missing", "PartitionKey",
                                           "RowKey", "Timestamp", "*", "x_1", "Data", "V"};
    struct buf want, got, v;
    buf_init(&want);
    buf_init(&got);
    buf_init(&v);
    int bad = 0, bad_rc = 0, n = 0;
    for (int i = 0; i < 20000; i++) {
        struct entity e;
        memset(&e, 0, sizeof e);
        e.pk = rnd_text(6);
        e.pk_len = strlen(e.pk);
        e.rk = rnd_text(6);
        e.rk_len = strlen(e.rk);
        e.timestamp = EDM_DATETIME_MIN_TICKS +
                      (int64_t)(rnd() % (uint64_t)(EDM_DATETIME_MAX_TICKS - EDM_DATETIME_MIN_TICKS));
        size_t np = rnd() % 9;
        for (size_t k = 0; k < np; k++) {
            const char *nm = names[rnd() % (sizeof names / sizeof *names)];
            struct property *p = entity_add(A, &e, nm, strlen(nm));
            p->v.type = (enum edm_type)(1 + rnd() % 8);
            switch (p->v.type) {
            case EDM_STRING:
                p->v.u.s.ptr = rnd_text(rnd() % 4 ? 8 : 60);
                p->v.u.s.len = strlen(p->v.u.s.ptr);
                break;
            case EDM_BINARY:
                p->v.u.s.ptr = rnd_text(5);
                p->v.u.s.len = strlen(p->v.u.s.ptr);
                break;
            case EDM_BOOLEAN: p->v.u.b = (int)(rnd() % 2); break;
            case EDM_DATETIME:
                p->v.u.ticks = EDM_DATETIME_MIN_TICKS + (int64_t)(rnd() % 3155378975999999999ull);
                break;
            case EDM_DOUBLE: p->v.u.d = rnd_double(); break;
            case EDM_GUID: {
                uint64_t a = rnd(), b = rnd();
                memcpy(p->v.u.guid, &a, 8);
                memcpy(p->v.u.guid + 8, &b, 8);
                break;
            }
            case EDM_INT32:
                p->v.u.i32 = rnd() % 5 ? (int32_t)(rnd() % 2001) - 1000
                                       : (rnd() % 2 ? INT32_MIN : INT32_MAX);
                break;
            case EDM_INT64:
                p->v.u.i64 = rnd() % 5 ? (int64_t)rnd() : (rnd() % 2 ? INT64_MIN : INT64_MAX);
                break;
            }
        }
        const char *sel[6];
        size_t nsel = rnd() % 7;   /* 6 = no $select */
        for (size_t k = 0; k < nsel && k < 6; k++)
            sel[k] = sel_pool[rnd() % (sizeof sel_pool / sizeof *sel_pool)];
        struct entity_json_ctx ctx = {(enum odata_level)(rnd() % 3), BASE, "devstoreaccount1",
                                      rnd() % 2 ? "orders" : "T\xc3\xa9", rnd() % 4 ? NULL : "m",
                                      nsel == 6 ? NULL : sel, nsel == 6 ? 0 : nsel};
        buf_reset(&want);
        buf_reset(&got);
        buf_reset(&v);
        buf_puts(&want, "[");
        buf_puts(&got, "[");
        entity_json_write(&want, &e, &ctx);
        entity_encode(&e, &v);
        if (entity_json_write_value(&got, e.pk, e.pk_len, e.rk, e.rk_len, v.data, v.len, &ctx))
            bad_rc++;
        if (got.len != want.len || memcmp(got.data, want.data, want.len) != 0) {
            if (bad++ < 3)
                printf("# differs:\n#  %s\n#  %s\n", want.data, got.data);
        }
        /* A cut value is malformed: -1 and the buffer as it was. */
        size_t cut = v.len ? rnd() % v.len : 0;
        size_t at = got.len;
        if (entity_json_write_value(&got, e.pk, e.pk_len, e.rk, e.rk_len, v.data, cut, &ctx) !=
                -1 ||
            got.len != at || got.data[at] != '\0')
            bad_rc++;
        n++;
    }
    TEST_EQ_INT(n, 20000, "random entities written both ways");
    TEST_EQ_INT(bad, 0, "stored-value writer = entity writer, byte for byte");
    TEST_EQ_INT(bad_rc, 0, "stored-value writer: 0 for whole values, -1 for cut ones");
    buf_free(&want);
    buf_free(&got);
    buf_free(&v);
}

int main(void)
{
    A = arena_new(1 << 20);
    test_parse_sample();
    test_parse_values();
    test_parse_errors();
    test_limits();
    test_deep();
    test_check_key();
    test_range();
    test_write();
    test_escape_blocks();
    test_round_trip();
    test_etag();
    test_write_value_differential();
    arena_free(A);
    return test_done();
}
