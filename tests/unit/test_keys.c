/* test_keys.c - order-preserving key encoding (store/keys.c).
 *
 * The central property: memcmp order of keys_entity() equals the service's
 * order, PartitionKey then RowKey, each compared as UTF-16 code units. The
 * reference comparison here works on code point arrays converted to UTF-16
 * independently of keys.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/buf.h"
#include "store/keys.h"
#include "tests/unit/tap.h"

#define MAXCP 6

struct skey {
    uint32_t cp[MAXCP];
    int n;
};

/* UTF-8 of a code point array (test-local encoder). */
static size_t to_utf8(const struct skey *k, char *out)
{
    size_t n = 0;
    for (int i = 0; i < k->n; i++) {
        uint32_t c = k->cp[i];
        if (c < 0x80) {
            out[n++] = (char)c;
        } else if (c < 0x800) {
            out[n++] = (char)(0xC0 | c >> 6);
            out[n++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out[n++] = (char)(0xE0 | c >> 12);
            out[n++] = (char)(0x80 | (c >> 6 & 0x3F));
            out[n++] = (char)(0x80 | (c & 0x3F));
        } else {
            out[n++] = (char)(0xF0 | c >> 18);
            out[n++] = (char)(0x80 | (c >> 12 & 0x3F));
            out[n++] = (char)(0x80 | (c >> 6 & 0x3F));
            out[n++] = (char)(0x80 | (c & 0x3F));
        }
    }
    out[n] = '\0';
    return n;
}

/* UTF-16 code units of a code point array. */
static int to_utf16(const struct skey *k, uint16_t *out)
{
    int n = 0;
    for (int i = 0; i < k->n; i++) {
        uint32_t c = k->cp[i];
        if (c >= 0x10000) {
            c -= 0x10000;
            out[n++] = (uint16_t)(0xD800 | c >> 10);
            out[n++] = (uint16_t)(0xDC00 | (c & 0x3FF));
        } else {
            out[n++] = (uint16_t)c;
        }
    }
    return n;
}

/* Ordinal UTF-16 comparison, the service's rule (doc/protocol.md, String order). */
static int cmp16(const struct skey *a, const struct skey *b)
{
    uint16_t ua[2 * MAXCP], ub[2 * MAXCP];
    int na = to_utf16(a, ua), nb = to_utf16(b, ub);
    for (int i = 0; i < na && i < nb; i++)
        if (ua[i] != ub[i])
            return ua[i] < ub[i] ? -1 : 1;
    return na < nb ? -1 : na > nb ? 1 : 0;
}

static int sign(int v)
{
    return v < 0 ? -1 : v > 0 ? 1 : 0;
}

static int cmp_bytes(const struct buf *a, const struct buf *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->data, b->data, n);
    if (c)
        return sign(c);
    return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

static void entity_key(struct buf *b, uint64_t id, const struct skey *pk, const struct skey *rk)
{
    char p[4 * MAXCP + 1], r[4 * MAXCP + 1];
    size_t pn = to_utf8(pk, p), rn = to_utf8(rk, r);
    buf_reset(b);
    keys_entity(b, id, p, pn, r, rn);
}

/* Characters chosen around every boundary that matters: ASCII, Latin-1,
 * CJK, the top of the BMP below the surrogates, U+E000..U+FFFF (the
 * rewritten lead bytes) and supplementary characters. */
static const uint32_t pool[] = {
    0x20,   0x21,   0x41,    0x42,    0x5A,    0x61,    0x62,    0x7A,    0x7E,
    0xA0,   0xE9,   0xFC,    0xFF,    0x100,   0x7FF,   0x800,   0x4E2D,  0x6587,
    0xD7FF, 0xE000, 0xE001,  0xEFFF,  0xF000,  0xF8FF,  0xFB01,  0xFFFD,  0xFFFF,
    0x10000, 0x1F600, 0x20000, 0xFFFFF, 0x10FFFF,
};

static void random_key(struct skey *k)
{
    k->n = rand() % (MAXCP + 1);
    for (int i = 0; i < k->n; i++)
        k->cp[i] = pool[(size_t)rand() % (sizeof pool / sizeof pool[0])];
}

static struct skey mk(const uint32_t *cp, int n)
{
    struct skey k;
    k.n = n;
    for (int i = 0; i < n; i++)
        k.cp[i] = cp[i];
    return k;
}

/* Checks that memcmp of the two entity keys orders like (PK, RK) in UTF-16. */
static int order_ok(struct buf *ba, struct buf *bb, const struct skey *pa, const struct skey *ra,
                    const struct skey *pb, const struct skey *rb)
{
    int want = cmp16(pa, pb);
    if (want == 0)
        want = cmp16(ra, rb);
    entity_key(ba, 7, pa, ra);
    entity_key(bb, 7, pb, rb);
    return cmp_bytes(ba, bb) == want;
}

static void test_order(void)
{
    struct buf ba, bb;
    buf_init(&ba);
    buf_init(&bb);

    /* hand-picked pairs */
    static const uint32_t A[] = { 'a' }, AB[] = { 'a', 'b' }, Z[] = { 'z' }, UA[] = { 'A' },
                          B[] = { 'B' }, E000[] = { 0xE000 }, FFFF[] = { 0xFFFF },
                          SUPP[] = { 0x10000 }, SUPP2[] = { 0x10FFFF }, D7FF[] = { 0xD7FF },
                          CJK[] = { 0x4E2D }, LAT[] = { 0xFC }, AE000[] = { 'a', 0xE000 },
                          ASUPP[] = { 'a', 0x1F600 };
    struct skey empty = mk(NULL, 0);
    struct {
        struct skey pa, ra, pb, rb;
        const char *what;
    } cases[] = {
        { mk(A, 1), mk(Z, 1), mk(AB, 2), empty, "(a,z) < (ab,'')" },
        { empty, empty, mk(A, 1), empty, "('','') < (a,'')" },
        { mk(A, 1), empty, mk(A, 1), mk(A, 1), "(a,'') < (a,a)" },
        { mk(A, 1), mk(AB, 2), mk(A, 1), mk(A, 1), "(a,ab) > (a,a)" },
        { mk(B, 1), empty, mk(A, 1), empty, "B < a (ordinal, case-sensitive)" },
        { mk(UA, 1), empty, mk(A, 1), empty, "A < a" },
        { mk(SUPP, 1), empty, mk(E000, 1), empty, "U+10000 < U+E000 (UTF-16 order)" },
        { mk(SUPP2, 1), empty, mk(E000, 1), empty, "U+10FFFF < U+E000" },
        { mk(SUPP2, 1), empty, mk(FFFF, 1), empty, "U+10FFFF < U+FFFF" },
        { mk(D7FF, 1), empty, mk(SUPP, 1), empty, "U+D7FF < U+10000" },
        { mk(CJK, 1), empty, mk(E000, 1), empty, "CJK < U+E000" },
        { mk(LAT, 1), empty, mk(CJK, 1), empty, "u-umlaut < CJK" },
        { mk(ASUPP, 2), empty, mk(AE000, 2), empty, "a+U+1F600 < a+U+E000" },
        { mk(A, 1), mk(E000, 1), mk(A, 1), mk(SUPP, 1), "RK: U+E000 > U+10000" },
        { mk(E000, 1), empty, mk(FFFF, 1), empty, "U+E000 < U+FFFF" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        TEST_CHECK(order_ok(&ba, &bb, &cases[i].pa, &cases[i].ra, &cases[i].pb, &cases[i].rb),
                   cases[i].what);

    /* random pairs */
    srand(12345);
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        struct skey pa, ra, pb, rb;
        random_key(&pa);
        random_key(&ra);
        if (rand() % 3 == 0) {
            pb = pa;   /* same partition, so RowKey decides */
        } else if (rand() % 2 == 0 && pa.n > 0) {
            pb = pa;   /* a prefix or an extension of pa */
            pb.n = rand() % (pa.n + 1);
        } else {
            random_key(&pb);
        }
        random_key(&rb);
        if (!order_ok(&ba, &bb, &pa, &ra, &pb, &rb))
            bad++;
    }
    TEST_EQ_INT(bad, 0, "200000 random key pairs: memcmp order == (PK, RK) UTF-16 order");

    /* table id is the major order */
    buf_reset(&ba);
    buf_reset(&bb);
    keys_entity(&ba, 1, "z", 1, "z", 1);
    keys_entity(&bb, 256, "a", 1, "a", 1);
    TEST_CHECK(cmp_bytes(&ba, &bb) < 0, "table id 1 < table id 256 regardless of keys");
    buf_free(&ba);
    buf_free(&bb);
}

static void test_layouts(void)
{
    struct buf b;
    buf_init(&b);
    keys_entity(&b, 0x0102030405060708ULL, "p\xee\x80\x80", 4, "r\xef\xbf\xbf", 4);
    static const char want[] = "e\x01\x02\x03\x04\x05\x06\x07\x08p\xf5\x80\x80\x00r\xf6\xbf\xbf";
    TEST_EQ_INT(b.len, sizeof want - 1, "entity key length");
    TEST_CHECK(b.len == sizeof want - 1 && memcmp(b.data, want, b.len) == 0,
               "entity key bytes: 'e' be64 PK' 00 RK' with EE->F5, EF->F6");

    buf_reset(&b);
    keys_entity_table_prefix(&b, 0x0102030405060708ULL);
    TEST_CHECK(b.len == 9 && memcmp(b.data, want, 9) == 0, "table prefix = 'e' be64");
    buf_reset(&b);
    keys_entity_partition_prefix(&b, 0x0102030405060708ULL, "p\xee\x80\x80", 4);
    TEST_CHECK(b.len == 14 && memcmp(b.data, want, 14) == 0, "partition prefix = 'e' be64 PK' 00");

    buf_reset(&b);
    keys_table(&b, "devstoreaccount1", "MyTable9", 8);
    TEST_CHECK(b.len == 26 && memcmp(b.data, "tdevstoreaccount1\0mytable9", 26) == 0,
               "table key: 't' account 00 lower(name)");
    buf_reset(&b);
    keys_table_prefix(&b, "acct");
    TEST_CHECK(b.len == 6 && memcmp(b.data, "tacct\0", 6) == 0, "table prefix: 't' account 00");
    buf_reset(&b);
    keys_props(&b, "acct");
    TEST_CHECK(b.len == 5 && memcmp(b.data, "pacct", 5) == 0, "props key: 'p' account");
    buf_free(&b);
}

static void test_strings(void)
{
    struct arena *a = arena_new(4096);
    struct buf b;
    buf_init(&b);
    const char *s = "a\xc3\xbc\xe4\xb8\xad\xee\x80\x80\xef\xbf\xbf\xf0\x9f\x98\x80z";
    keys_put_string(&b, s, strlen(s));
    TEST_EQ_INT(b.len, strlen(s), "put_string keeps the length");
    TEST_CHECK(memchr(b.data, 0xEE, b.len) == NULL && memchr(b.data, 0xEF, b.len) == NULL,
               "no 0xEE/0xEF bytes remain");
    size_t n = 0;
    char *back = keys_get_string(a, (const uint8_t *)b.data, b.len, &n);
    TEST_EQ_INT(n, strlen(s), "get_string length");
    TEST_EQ_STR(back, s, "get_string inverts put_string");
    back = keys_get_string(a, (const uint8_t *)"", 0, &n);
    TEST_CHECK(back && back[0] == '\0' && n == 0, "empty string round trip");
    buf_free(&b);
    arena_free(a);
}

static void test_prefix_end(void)
{
    struct buf b;
    buf_init(&b);
    buf_append(&b, "ab", 2);
    TEST_EQ_INT(keys_prefix_end(&b), 0, "prefix_end(ab) ok");
    TEST_CHECK(b.len == 2 && memcmp(b.data, "ac", 2) == 0, "prefix_end(ab) = ac");

    buf_reset(&b);
    buf_append(&b, "a\xff\xff", 3);
    TEST_EQ_INT(keys_prefix_end(&b), 0, "prefix_end(a FF FF) ok");
    TEST_CHECK(b.len == 1 && b.data[0] == 'b', "prefix_end(a FF FF) = b (carry)");

    buf_reset(&b);
    buf_append(&b, "a\xfe\xff", 3);
    keys_prefix_end(&b);
    TEST_CHECK(b.len == 2 && memcmp(b.data, "a\xff", 2) == 0, "prefix_end(a FE FF) = a FF");

    buf_reset(&b);
    buf_append(&b, "\xff\xff", 2);
    TEST_EQ_INT(keys_prefix_end(&b), -1, "prefix_end(FF FF) has no bound");

    buf_reset(&b);
    TEST_EQ_INT(keys_prefix_end(&b), -1, "prefix_end(empty) has no bound");

    /* every key of a partition is inside [prefix, prefix_end) and other
     * partitions' keys are outside */
    struct buf lo, hi, k;
    buf_init(&lo);
    buf_init(&hi);
    buf_init(&k);
    keys_entity_partition_prefix(&lo, 5, "p\xef\xbf\xbf", 4);
    buf_append(&hi, lo.data, lo.len);
    TEST_EQ_INT(keys_prefix_end(&hi), 0, "partition prefix has an end");
    const char *rks[] = { "", "a", "\xf4\x8f\xbf\xbf", "\xef\xbf\xbf\xef\xbf\xbf", "zzzz" };
    int inside = 1;
    for (size_t i = 0; i < 5; i++) {
        buf_reset(&k);
        keys_entity(&k, 5, "p\xef\xbf\xbf", 4, rks[i], strlen(rks[i]));
        if (cmp_bytes(&k, &lo) < 0 || cmp_bytes(&k, &hi) >= 0)
            inside = 0;
    }
    TEST_CHECK(inside, "partition keys lie in [prefix, prefix_end)");
    const char *others[] = { "p", "p\xef\xbf\xbf" "a", "q" };
    int outside = 1;
    for (size_t i = 0; i < 3; i++) {
        buf_reset(&k);
        keys_entity(&k, 5, others[i], strlen(others[i]), "x", 1);
        if (cmp_bytes(&k, &lo) >= 0 && cmp_bytes(&k, &hi) < 0)
            outside = 0;
    }
    buf_reset(&k);
    keys_entity(&k, 6, "p\xef\xbf\xbf", 4, "", 0);
    if (cmp_bytes(&k, &lo) >= 0 && cmp_bytes(&k, &hi) < 0)
        outside = 0;
    TEST_CHECK(outside, "other partitions and tables lie outside the range");
    buf_free(&lo);
    buf_free(&hi);
    buf_free(&k);
    buf_free(&b);
}

static void test_decode(void)
{
    struct arena *a = arena_new(4096);
    struct buf b;
    buf_init(&b);
    srand(99);
    int bad = 0;
    for (int i = 0; i < 2000; i++) {
        struct skey pk, rk;
        random_key(&pk);
        random_key(&rk);
        char p[4 * MAXCP + 1], r[4 * MAXCP + 1];
        size_t pn = to_utf8(&pk, p), rn = to_utf8(&rk, r);
        uint64_t id = (uint64_t)rand() * 2654435761u;
        buf_reset(&b);
        keys_entity(&b, id, p, pn, r, rn);
        uint64_t gid;
        const char *gp, *gr;
        size_t gpn, grn;
        if (keys_entity_decode(a, b.data, b.len, &gid, &gp, &gpn, &gr, &grn) != 0 || gid != id ||
            gpn != pn || grn != rn || strcmp(gp, p) != 0 || strcmp(gr, r) != 0)
            bad++;
    }
    TEST_EQ_INT(bad, 0, "2000 random entity keys decode to (id, PK, RK)");

    uint64_t id;
    const char *pk, *rk;
    size_t pn, rn;
    TEST_EQ_INT(keys_entity_decode(a, "e\0\0\0\0\0\0\0\1\0", 10, &id, &pk, &pn, &rk, &rn), 0,
                "decode empty keys");
    TEST_CHECK(id == 1 && pn == 0 && rn == 0 && pk[0] == 0 && rk[0] == 0, "empty PK and RK");
    TEST_EQ_INT(keys_entity_decode(a, "e\0\0\0\0\0\0\0\1", 9, &id, &pk, &pn, &rk, &rn), -1,
                "decode rejects a key without separator");
    TEST_EQ_INT(keys_entity_decode(a, "e\0\0\0\0\0\0\0\1abc", 12, &id, &pk, &pn, &rk, &rn), -1,
                "decode rejects PK without 00");
    TEST_EQ_INT(keys_entity_decode(a, "t\0\0\0\0\0\0\0\1\0", 10, &id, &pk, &pn, &rk, &rn), -1,
                "decode rejects a non-entity tag");
    TEST_EQ_INT(keys_entity_decode(a, "e", 1, &id, &pk, &pn, &rk, &rn), -1,
                "decode rejects a short key");
    buf_free(&b);
    arena_free(a);
}

int main(void)
{
    test_order();
    test_layouts();
    test_strings();
    test_prefix_end();
    test_decode();
    return test_done();
}
