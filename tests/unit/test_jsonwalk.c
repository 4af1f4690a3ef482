/* test_jsonwalk.c - core/jsonwalk.c: the nesting limit (1 MiB of '[' and of
 * '{"a":' refused after max_depth levels, never more delivered), "\u0000"
 * delivered inside strings with their length or refused with
 * JSONWALK_NO_NUL, syntax errors with a message, canceling callbacks. */
#include <stdlib.h>
#include <string.h>

#include "core/jsonwalk.h"
#include "tests/unit/tap.h"

/* What the callbacks saw. */
struct seen {
    int opens, max_open, open_now;
    int strings, keys, numbers;
    char last[64];
    size_t last_len;
    int cancel_on_string;
};

static void keep_last(struct seen *s, const unsigned char *p, size_t n)
{
    s->last_len = n;
    memcpy(s->last, p, n < sizeof s->last ? n : sizeof s->last);
}

static int c_open(void *ctx)
{
    struct seen *s = ctx;
    s->opens++;
    if (++s->open_now > s->max_open)
        s->max_open = s->open_now;
    return 1;
}

static int c_close(void *ctx)
{
    struct seen *s = ctx;
    s->open_now--;
    return 1;
}

static int c_string(void *ctx, const unsigned char *p, size_t n)
{
    struct seen *s = ctx;
    s->strings++;
    keep_last(s, p, n);
    return !s->cancel_on_string;
}

static int c_key(void *ctx, const unsigned char *p, size_t n)
{
    struct seen *s = ctx;
    s->keys++;
    keep_last(s, p, n);
    return 1;
}

static int c_number(void *ctx, const char *p, size_t n)
{
    struct seen *s = ctx;
    s->numbers++;
    keep_last(s, (const unsigned char *)p, n);
    return 1;
}

static const yajl_callbacks cbs = {
    NULL, NULL, NULL, NULL, c_number, c_string, c_open, c_key, c_close, c_open, c_close,
};

/* Walks the NUL-terminated text s with the counting callbacks. */
static int walk(const char *text, int max_depth, unsigned flags, struct seen *s)
{
    memset(s, 0, sizeof *s);
    return jsonwalk_parse(&cbs, s, text, strlen(text), max_depth, flags, NULL, 0);
}

/* reps copies of open, then mid, then reps copies of close: a well-formed
 * document nested reps deep when close is given (1 MiB of brackets). */
static char *repeat(const char *open, const char *mid, const char *close, size_t reps,
                    size_t *len)
{
    size_t u = strlen(open), m = strlen(mid), c = strlen(close), o = 0;
    char *b = malloc((u + c) * reps + m + 1);
    for (size_t i = 0; i < reps; i++, o += u)
        memcpy(b + o, open, u);
    memcpy(b + o, mid, m);
    o += m;
    for (size_t i = 0; i < reps; i++, o += c)
        memcpy(b + o, close, c);
    b[o] = '\0';
    *len = o;
    return b;
}

int main(void)
{
    struct seen s;
    char err[128];

    TEST_EQ_INT(walk("{\"a\":[1,{\"b\":\"x\"}],\"c\":2.5e3}", 64, 0, &s), JSONWALK_OK,
                "a small document");
    TEST_EQ_INT(s.opens, 3, "its three containers were delivered");
    TEST_EQ_INT(s.numbers, 2, "numbers arrive as text");
    TEST_EQ_INT(s.keys, 3, "member names arrive");

    /* the limit counts open levels: the top-level value is level 1 */
    TEST_EQ_INT(walk("[[[]]]", 3, 0, &s), JSONWALK_OK, "3 levels with max_depth 3");
    TEST_EQ_INT(walk("[[[[]]]]", 3, 0, &s), JSONWALK_TOO_DEEP, "4 levels with max_depth 3");
    TEST_EQ_INT(s.max_open, 3, "the fourth level never reached the callbacks");
    TEST_EQ_INT(walk("[[],[[]],{\"a\":[]},[[]]]", 3, 0, &s), JSONWALK_OK,
                "closed levels are given back");
    TEST_EQ_INT(walk("{\"a\":{\"b\":{\"c\":{}}}}", 3, 0, &s), JSONWALK_TOO_DEEP,
                "objects count as levels");

    /* 1 MiB of nesting: refused at the limit, in one pass, no recursion */
    size_t n;
    char *deep = repeat("[", "", "]", 1 << 19, &n);
    memset(&s, 0, sizeof s);
    TEST_EQ_INT(jsonwalk_parse(&cbs, &s, deep, n, JSONWALK_MAX_DEPTH, 0, err, sizeof err),
                JSONWALK_TOO_DEEP, "1 MiB of [...] is too deep");
    TEST_EQ_INT(s.max_open, JSONWALK_MAX_DEPTH, "no more than the limit was delivered");
    TEST_CHECK(strstr(err, "nested deeper than 64") != NULL, "the message says why");
    TEST_EQ_INT(jsonwalk_parse(NULL, NULL, deep, n, JSONWALK_MAX_DEPTH, 0, NULL, 0),
                JSONWALK_TOO_DEEP, "without callbacks too");
    free(deep);
    deep = repeat("{\"a\":", "1", "}", (1 << 20) / 6, &n);
    memset(&s, 0, sizeof s);
    TEST_EQ_INT(jsonwalk_parse(&cbs, &s, deep, n, JSONWALK_MAX_DEPTH, 0, NULL, 0),
                JSONWALK_TOO_DEEP, "1 MiB of {\"a\":...} is too deep");
    TEST_EQ_INT(s.max_open, JSONWALK_MAX_DEPTH, "no more than the limit was delivered");
    free(deep);
    deep = repeat("[", "", "", 1 << 20, &n);
    TEST_EQ_INT(jsonwalk_parse(&cbs, &s, deep, n, JSONWALK_MAX_DEPTH, 0, NULL, 0),
                JSONWALK_TOO_DEEP, "1 MiB of unclosed '[' is too deep, not truncated");
    free(deep);
    deep = repeat("[", "", "]", JSONWALK_MAX_DEPTH, &n);
    TEST_EQ_INT(jsonwalk_parse(&cbs, &s, deep, n, JSONWALK_MAX_DEPTH, 0, NULL, 0), JSONWALK_OK,
                "exactly JSONWALK_MAX_DEPTH levels pass");
    free(deep);

    /* "\u0000" is a character, not an end */
    TEST_EQ_INT(walk("[\"tab\\u0000le\"]", 64, 0, &s), JSONWALK_OK, "a NUL escape is JSON");
    TEST_CHECK(s.last_len == 6 && memcmp(s.last, "tab\0le", 6) == 0,
               "the string arrives whole, NUL and length included");
    TEST_EQ_INT(walk("{\"a\\u0000b\":1}", 64, 0, &s), JSONWALK_OK, "a NUL escape in a name");
    TEST_CHECK(s.keys == 1 && s.last_len == 1 && s.last[0] == '1',
               "the name came and then its value");
    TEST_EQ_INT(walk("[\"tab\\u0000le\"]", 64, JSONWALK_NO_NUL, &s), JSONWALK_NUL,
                "JSONWALK_NO_NUL refuses it in a string");
    TEST_EQ_INT(s.strings, 0, "before the callback hears of it");
    TEST_EQ_INT(walk("{\"a\\u0000b\":1}", 64, JSONWALK_NO_NUL, &s), JSONWALK_NUL,
                "and in a member name");
    TEST_EQ_INT(walk("[\"tab\\u0001le\"]", 64, JSONWALK_NO_NUL, &s), JSONWALK_OK,
                "other control escapes pass");

    /* syntax, encoding, cancel */
    memset(&s, 0, sizeof s);
    err[0] = '\0';
    TEST_EQ_INT(jsonwalk_parse(&cbs, &s, "{\"a\":", 5, 64, 0, err, sizeof err), JSONWALK_SYNTAX,
                "truncated JSON");
    TEST_CHECK(err[0] && !strchr(err, '\n'), "a one-line message");
    TEST_EQ_INT(walk("[1] [2]", 64, 0, &s), JSONWALK_SYNTAX, "trailing values");
    TEST_EQ_INT(walk("[\"\xff\"]", 64, 0, &s), JSONWALK_SYNTAX, "ill-formed UTF-8");
    TEST_EQ_INT(walk("[\"\xff\"]", 64, JSONWALK_RAW_STRINGS, &s), JSONWALK_OK,
                "passes with JSONWALK_RAW_STRINGS");
    TEST_EQ_INT(jsonwalk_parse(&cbs, &s, "[\"a\",\"b\"]x", 9, 64, 0, NULL, 0), JSONWALK_OK,
                "only n bytes are read");
    memset(&s, 0, sizeof s);
    s.cancel_on_string = 1;
    TEST_EQ_INT(jsonwalk_parse(&cbs, &s, "[\"a\",\"b\"]", 9, 64, 0, NULL, 0), JSONWALK_CANCELED,
                "a callback returning 0 cancels");
    TEST_EQ_INT(s.strings, 1, "at once");
    return test_done();
}
