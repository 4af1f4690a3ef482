/* test_cors.c - CORS list validation and rule matching (codec/cors.c). */
#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "core/buf.h"
#include "codec/cors.h"
#include "tests/unit/tap.h"

static struct arena *A;

/* Normalised form of s, or NULL when invalid. */
static const char *norm(enum cors_list kind, const char *s)
{
    return cors_list_normalize(A, kind, s, strlen(s));
}

/* n comma-separated items "prefix0,prefix1,..." (arena). */
static const char *items(const char *prefix, int n, size_t pad)
{
    struct buf b;
    buf_init(&b);
    for (int i = 0; i < n; i++) {
        if (i)
            buf_putc(&b, ',');
        buf_printf(&b, "%s%d", prefix, i);
        for (size_t k = 0; k < pad; k++)
            buf_putc(&b, 'x');
    }
    const char *s = arena_strndup(A, b.data ? b.data : "", b.len);
    buf_free(&b);
    return s;
}

static void test_normalize(void)
{
    TEST_EQ_STR(norm(CORS_ORIGINS, "*"), "*", "origins: *");
    TEST_EQ_STR(norm(CORS_ORIGINS, " http://a.com , https://b.org:8080 "),
                "http://a.com,https://b.org:8080", "origins: items trimmed and joined");
    TEST_CHECK(norm(CORS_ORIGINS, "") == NULL, "origins: empty refused");
    TEST_CHECK(norm(CORS_ORIGINS, "  ") == NULL, "origins: blank refused");
    TEST_CHECK(norm(CORS_ORIGINS, "http://a,,http://b") == NULL, "origins: empty item refused");
    TEST_CHECK(norm(CORS_ORIGINS, "http://a,") == NULL, "origins: trailing comma refused");
    TEST_CHECK(norm(CORS_ORIGINS, "http://a b") == NULL, "origins: blank inside an item refused");
    TEST_CHECK(norm(CORS_ORIGINS, items("http://o", 64, 0)) != NULL, "origins: 64 accepted");
    TEST_CHECK(norm(CORS_ORIGINS, items("http://o", 65, 0)) == NULL, "origins: 65 refused");
    /* "o0" + pad: 256 and 257 characters */
    TEST_CHECK(norm(CORS_ORIGINS, items("o", 1, 254)) != NULL, "origins: 256 chars accepted");
    TEST_CHECK(norm(CORS_ORIGINS, items("o", 1, 255)) == NULL, "origins: 257 chars refused");

    TEST_EQ_STR(norm(CORS_METHODS, "GET, PUT,DELETE,HEAD,MERGE,POST,OPTIONS,PATCH"),
                "GET,PUT,DELETE,HEAD,MERGE,POST,OPTIONS,PATCH", "methods: every allowed verb");
    TEST_CHECK(norm(CORS_METHODS, "GET,TRACE") == NULL, "methods: TRACE refused");
    TEST_CHECK(norm(CORS_METHODS, "get") == NULL, "methods: lower case refused");
    TEST_CHECK(norm(CORS_METHODS, "") == NULL, "methods: empty refused");
    TEST_CHECK(norm(CORS_METHODS, "*") == NULL, "methods: * refused");

    TEST_EQ_STR(norm(CORS_HEADERS, ""), "", "headers: empty accepted");
    TEST_EQ_STR(norm(CORS_HEADERS, " "), "", "headers: blank is empty");
    TEST_EQ_STR(norm(CORS_HEADERS, "x-ms-meta*, x-ms-client-request-id"),
                "x-ms-meta*,x-ms-client-request-id", "headers: prefix and literal");
    TEST_CHECK(norm(CORS_HEADERS, "a*,b*") != NULL, "headers: two prefixes accepted");
    TEST_CHECK(norm(CORS_HEADERS, "a*,b*,c*") == NULL, "headers: three prefixes refused");
    TEST_CHECK(norm(CORS_HEADERS, "a*b") == NULL, "headers: '*' inside a name refused");
    TEST_CHECK(norm(CORS_HEADERS, items("h", 64, 0)) != NULL, "headers: 64 literal accepted");
    TEST_CHECK(norm(CORS_HEADERS, items("h", 65, 0)) == NULL, "headers: 65 literal refused");
    TEST_CHECK(norm(CORS_HEADERS, "a,,b") == NULL, "headers: empty item refused");
}

static struct cors_rules rules(void)
{
    struct cors_rules rs;
    memset(&rs, 0, sizeof rs);
    rs.n = 3;
    rs.r[0] = (struct cors_rule){"http://a.com,https://B.example", "GET,PUT",
                                 "x-ms-meta*,x-ms-client-request-id,Content-Type", "x-ms-*", 60};
    rs.r[1] = (struct cors_rule){"*", "GET,DELETE", "", "", 10};
    rs.r[2] = (struct cors_rule){"http://a.com", "MERGE", "*", "", 5};
    return rs;
}

static void test_preflight(void)
{
    struct cors_rules rs = rules(), none;
    memset(&none, 0, sizeof none);
    TEST_EQ_INT(cors_match_preflight(&none, "http://a.com", "GET", NULL), -1, "no rules: no match");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://a.com", "GET", NULL), 0, "origin + method: rule 0");
    TEST_EQ_INT(cors_match_preflight(&rs, "HTTP://A.COM", "GET", NULL), 0,
                "origins compare case-insensitively");
    TEST_EQ_INT(cors_match_preflight(&rs, "https://b.example", "PUT", NULL), 0,
                "second listed origin, any case");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://a.com", "get", NULL), -1,
                "methods compare exactly");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://other", "GET", NULL), 1,
                "other origin falls through to the * rule");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://a.com", "DELETE", NULL), 1,
                "method not in rule 0 falls through to rule 1");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://other", "PUT", NULL), -1,
                "no rule allows the pair");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://a.com", "GET", "x-ms-meta-foo"), 0,
                "prefix entry x-ms-meta* allows x-ms-meta-foo");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://a.com", "GET", "X-MS-META-Foo , content-type"), 0,
                "header names case-insensitive, list trimmed");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://a.com", "GET", "x-ms-meta-a,x-custom"), -1,
                "one disallowed header among allowed ones: no match");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://z", "DELETE", "x-ms-meta-a"), -1,
                "a rule without allowed headers refuses requested headers");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://a.com", "PUT", "x-custom"), -1,
                "disallowed request header: no match");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://a.com", "PUT", ""), 0,
                "empty Access-Control-Request-Headers is no headers");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://a.com", "MERGE", "anything,at-all"), 2,
                "* allows every header");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://a.comx", "MERGE", NULL), -1,
                "origin must match whole");
    TEST_EQ_INT(cors_match_preflight(&rs, "http://a.com", "GET", "x-ms-met"), -1,
                "a name shorter than the prefix does not match it");
}

static void test_actual(void)
{
    struct cors_rules rs = rules();
    TEST_EQ_INT(cors_match_actual(&rs, "http://a.com", "GET"), 0, "actual: first rule wins");
    TEST_EQ_INT(cors_match_actual(&rs, "http://z", "GET"), 1, "actual: * rule");
    TEST_EQ_INT(cors_match_actual(&rs, "http://z", "POST"), -1, "actual: method not allowed");
    TEST_EQ_INT(cors_match_actual(&rs, "http://a.com", "MERGE"), 2, "actual: third rule");
    TEST_CHECK(!cors_any_origin(&rs.r[0]) && cors_any_origin(&rs.r[1]), "cors_any_origin");
}

/* One row of the Vary table of the service's CORS documentation
 * ("Understanding how the Vary header is set"), GET/HEAD requests. */
static void row(const struct cors_rules *rs, const char *origin, const char *method, int rule,
                int vary, int star, const char *what)
{
    struct cors_answer a;
    memset(&a, 0x55, sizeof a);
    cors_actual(rs, origin, method, &a);
    char msg[200];
    snprintf(msg, sizeof msg, "%s: rule, Vary, ACAO *", what);
    TEST_CHECK(a.rule == rule && a.vary == vary && a.any == star, msg);
    if (a.rule != rule || a.vary != vary || a.any != star)
        printf("# got rule %d vary %d any %d\n", a.rule, a.vary, a.any);
}

static void test_vary_table(void)
{
    struct cors_rules none, exact, star;
    memset(&none, 0, sizeof none);
    memset(&exact, 0, sizeof exact);
    memset(&star, 0, sizeof star);
    exact.n = 2;
    exact.r[0] = (struct cors_rule){"http://a.com", "GET,HEAD,PUT", "", "x-ms-*", 60};
    exact.r[1] = (struct cors_rule){"*", "DELETE", "", "", 1};   /* not for GET */
    star.n = 2;
    star.r[0] = (struct cors_rule){"http://a.com", "PUT", "", "", 60};
    star.r[1] = (struct cors_rule){"*", "GET,HEAD,PUT", "", "*", 10};
    /* the seven rows; the last three columns are Vary, ACAO "*" and
     * Expose-Headers (present exactly when a rule matched) */
    row(&none, NULL, "GET", -1, 0, 0, "row 1: no Origin, no rules: nothing");
    row(&exact, NULL, "GET", -1, 1, 0, "row 2: no Origin, rules, none for all origins: Vary");
    row(&star, NULL, "GET", 1, 0, 1, "row 3: no Origin, an all-origins rule: ACAO *, Expose, no Vary");
    row(&none, "http://a.com", "GET", -1, 0, 0, "row 4: Origin, no rules: nothing");
    row(&exact, "http://a.com", "GET", 0, 1, 0, "row 5: Origin matches exactly: Vary, echo, Expose");
    row(&exact, "http://z.org", "GET", -1, 1, 0, "row 6: Origin, no rule matches: Vary only");
    row(&star, "http://z.org", "GET", 1, 0, 1, "row 7: Origin, all-origins rule: ACAO *, Expose, no Vary");
    /* HEAD is GET's twin; other methods never get Vary */
    row(&exact, NULL, "HEAD", -1, 1, 0, "row 2 for HEAD");
    row(&star, "http://z.org", "HEAD", 1, 0, 1, "row 7 for HEAD");
    row(&exact, "http://a.com", "PUT", 0, 0, 0, "PUT, exact match: echo, no Vary");
    row(&exact, "http://z.org", "PUT", -1, 0, 0, "PUT, no match: no Vary");
    row(&exact, NULL, "PUT", -1, 0, 0, "PUT without Origin, no all-origins rule for it: nothing");
    row(&star, NULL, "PUT", 1, 0, 1, "PUT without Origin, all-origins rule: ACAO *, no Vary");
    row(&exact, NULL, "DELETE", 1, 0, 1, "no Origin: the all-origins rule of the method");
    row(&star, "http://a.com", "PUT", 0, 0, 0, "exact rule listed first wins over *");
    row(&star, "http://a.com", "GET", 1, 0, 1, "exact rule without the method: * rule");
}

int main(void)
{
    A = arena_new(1 << 16);
    test_normalize();
    test_preflight();
    test_actual();
    test_vary_table();
    arena_free(A);
    return test_done();
}
