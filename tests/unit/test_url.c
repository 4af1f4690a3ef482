/* test_url.c - percent-decoding, pchar encoding, entity paths and query
 * strings (codec/url.c). */
#include <string.h>

#include "core/arena.h"
#include "core/buf.h"
#include "codec/url.h"
#include "tests/unit/tap.h"

static struct arena *A;

static const char *dec(const char *s, int plus)
{
    return url_decode(A, s, strlen(s), plus, NULL);
}

static void test_decode(void)
{
    size_t n = 99;
    const char *r = url_decode(A, "a%20b%2fc", 9, 0, &n);
    TEST_EQ_STR(r, "a b/c", "%20 and lower-case %2f decode");
    TEST_EQ_INT(n, 5, "decoded length");
    TEST_EQ_STR(dec("r%201-%C3%BC", 0), "r 1-\xc3\xbc", "UTF-8 escapes decode");
    TEST_EQ_STR(dec("a+b", 0), "a+b", "'+' kept without plus_as_space");
    TEST_EQ_STR(dec("a+b", 1), "a b", "'+' is a space with plus_as_space");
    TEST_EQ_STR(dec("%2B", 1), "+", "%2B is always '+'");
    TEST_EQ_STR(dec("", 0), "", "empty string");
    TEST_EQ_STR(dec("\xc3\xbc", 0), "\xc3\xbc", "raw UTF-8 passes");
    TEST_CHECK(dec("%", 0) == NULL, "lone % rejected");
    TEST_CHECK(dec("a%2", 0) == NULL, "truncated %2 rejected");
    TEST_CHECK(dec("%zz", 0) == NULL, "%zz rejected");
    TEST_CHECK(dec("%g0", 0) == NULL, "%g0 rejected");
    TEST_CHECK(dec("%C3", 0) == NULL, "truncated UTF-8 sequence rejected");
    TEST_CHECK(dec("%FF", 0) == NULL, "byte FF rejected");
    TEST_CHECK(dec("%C0%AF", 0) == NULL, "overlong UTF-8 rejected");
    TEST_CHECK(dec("%ED%A0%80", 0) == NULL, "encoded surrogate rejected");
    TEST_CHECK(dec("\xc3", 0) == NULL, "raw invalid UTF-8 rejected");
    r = url_decode(A, "a%00b", 5, 0, &n);
    TEST_CHECK(r && n == 3 && r[1] == '\0' && r[2] == 'b', "%00 decodes (length reported)");
}

static void test_encode(void)
{
    struct buf b;
    buf_init(&b);
    char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (char)i;
    url_encode_pchar(&b, all, 256);
    /* expected: every byte outside the pchar set as %XX */
    const char *keep = "-._~!$&'()*+,;=:@";
    struct buf want;
    buf_init(&want);
    for (int c = 0; c < 256; c++) {
        int k = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                (c != 0 && strchr(keep, c));
        if (k)
            buf_putc(&want, (char)c);
        else
            buf_printf(&want, "%%%02X", c);
    }
    TEST_EQ_STR(b.data, want.data, "pchar encoding of all 256 bytes");
    buf_reset(&b);
    url_encode_pchar(&b, "a b\"/?#%", 8);
    TEST_EQ_STR(b.data, "a%20b%22%2F%3F%23%25", "space, quote, / ? # % encoded");
    buf_free(&want);
    buf_free(&b);
}

static void test_entity_path(void)
{
    struct buf b;
    buf_init(&b);
    const char *pk = "O'Neil \"A\"", *rk = "r 1-\xc3\xbc";
    url_entity_path(&b, "orders", pk, strlen(pk), rk, strlen(rk));
    TEST_EQ_STR(b.data, "orders(PartitionKey='O''Neil%20%22A%22',RowKey='r%201-%C3%BC')",
                "key with quote, blank, double quote and non-ASCII");
    buf_reset(&b);
    url_entity_path(&b, "t1", "", 0, "''", 2);
    TEST_EQ_STR(b.data, "t1(PartitionKey='',RowKey='''''')", "empty key and doubled quotes");
    buf_reset(&b);
    url_entity_path(&b, "Tab", "2024", 4, "0001", 4);
    TEST_EQ_STR(b.data, "Tab(PartitionKey='2024',RowKey='0001')", "plain keys");
    buf_free(&b);
}

/* The parse memo the service keeps; the first tests run without one, the
 * memo tests with one, and the answers must be the same. */
static struct url_memo *memo;

static void test_query(void)
{
    struct query_param *p = NULL;
    size_t n = 0;
    const char *q = "$filter=PartitionKey%20eq%20'a+b'&$top=5&&flag&a+b=c+d&empty=&x=1=2";
    TEST_EQ_INT(url_parse_query(memo, A, q, strlen(q), &p, &n), 0, "query parses");
    TEST_EQ_INT(n, 6, "six parameters (empty piece skipped)");
    if (n == 6) {
        TEST_EQ_STR(p[0].name, "$filter", "name 0");
        TEST_EQ_STR(p[0].value, "PartitionKey eq 'a b'", "value 0 decoded, + as space");
        TEST_EQ_INT(p[0].value_len, 21, "value 0 length");
        TEST_EQ_STR(p[1].name, "$top", "name 1");
        TEST_EQ_STR(p[1].value, "5", "value 1");
        TEST_EQ_STR(p[2].name, "flag", "name without '='");
        TEST_EQ_STR(p[2].value, "", "has an empty value");
        TEST_EQ_STR(p[3].name, "a b", "'+' in a name is a space");
        TEST_EQ_STR(p[3].value, "c d", "'+' in a value is a space");
        TEST_EQ_STR(p[4].value, "", "empty= value");
        TEST_EQ_STR(p[5].name, "x", "split on the first '='");
        TEST_EQ_STR(p[5].value, "1=2", "rest of the piece is the value");
    }
    const struct query_param *g = url_query_get(p, n, "$top");
    TEST_CHECK(g && strcmp(g->value, "5") == 0, "query_get finds $top");
    TEST_CHECK(url_query_get(p, n, "$TOP") == NULL, "query_get is exact (case-sensitive)");
    TEST_CHECK(url_query_get(p, n, "nope") == NULL, "query_get: absent");

    q = "a=1&a=2";
    url_parse_query(memo, A, q, strlen(q), &p, &n);
    g = url_query_get(p, n, "a");
    TEST_CHECK(g && strcmp(g->value, "1") == 0, "query_get returns the first match");

    TEST_EQ_INT(url_parse_query(memo, A, "", 0, &p, &n), 0, "empty query ok");
    TEST_EQ_INT(n, 0, "empty query has no parameters");
    q = "a=%zz";
    TEST_EQ_INT(url_parse_query(memo, A, q, strlen(q), &p, &n), -1, "bad escape in a value");
    q = "%C3=1";
    TEST_EQ_INT(url_parse_query(memo, A, q, strlen(q), &p, &n), -1, "bad UTF-8 in a name");
}

/* A query parsed again comes from the memo of decoded queries: the same
 * parameters, in fresh memory the caller may change, %00 in values kept,
 * and failures failing again. */
static void test_query_memo(void)
{
    const char *q = "sv=2019-02-02&ss=t&sig=ab%2Bc%3D&v=x%00y&$filter=a+b&&flag";
    struct query_param *p1 = NULL, *p2 = NULL;
    size_t n1 = 0, n2 = 0;
    int same = 1;
    for (int round = 0; round < 3; round++) {
        TEST_EQ_INT(url_parse_query(memo, A, q, strlen(q), round ? &p2 : &p1, round ? &n2 : &n1), 0,
                    "query parses (again)");
        if (!round)
            continue;
        same &= n1 == n2 && n1 == 6;
        for (size_t i = 0; same && i < n1; i++)
            same &= strcmp(p1[i].name, p2[i].name) == 0 && p1[i].value_len == p2[i].value_len &&
                    memcmp(p1[i].value, p2[i].value, p1[i].value_len + 1) == 0 &&
                    p1[i].name != p2[i].name && p1[i].value != p2[i].value;
        ((char *)p2[0].value)[0] = '!'; /* the caller's copy, not the memo's */
    }
    TEST_CHECK(same, "a memoized parse equals the first, in fresh memory");
    TEST_CHECK(n2 == 6 && p2[2].value_len == 5 && memcmp(p2[2].value, "ab+c=", 6) == 0 &&
                   p2[3].value_len == 3 && memcmp(p2[3].value, "x\0y", 4) == 0 &&
                   strcmp(p2[4].value, "a b") == 0 && strcmp(p2[5].name, "flag") == 0,
               "memoized values: escapes, an embedded NUL, '+' as space");
    struct query_param *p3 = NULL;
    size_t n3 = 0;
    TEST_CHECK(url_parse_query(memo, A, q, strlen(q), &p3, &n3) == 0 && n3 == 6 &&
                   strcmp(p3[0].value, "2019-02-02") == 0,
               "changing a returned value leaves the memo as it was");
    q = "a=%C3";
    for (int round = 0; round < 2; round++)
        TEST_EQ_INT(url_parse_query(memo, A, q, strlen(q), &p3, &n3), -1, "bad UTF-8 fails every time");
}

int main(void)
{
    A = arena_new(4096);
    test_decode();
    test_encode();
    test_entity_path();
    test_query();
    memo = url_memo_new();
    test_query();
    test_query_memo();
    url_memo_free(memo);
    arena_free(A);
    return test_done();
}
