/* test_coding.c - hex, base64 and percent coding (core/coding.c): the
 * edge cases every caller relies on for its error codes; and the arena's
 * string builders (core/arena.c). */
#include <stdint.h>
#include <string.h>

#include "core/arena.h"
#include "core/buf.h"
#include "core/coding.h"
#include "tests/unit/tap.h"

static void test_hex(void)
{
    TEST_EQ_INT(coding_hexval('0'), 0, "hexval 0");
    TEST_EQ_INT(coding_hexval('9'), 9, "hexval 9");
    TEST_EQ_INT(coding_hexval('a'), 10, "hexval a");
    TEST_EQ_INT(coding_hexval('F'), 15, "hexval F");
    TEST_EQ_INT(coding_hexval('g'), -1, "hexval g is not a digit");
    TEST_EQ_INT(coding_hexval('/'), -1, "hexval / (one below '0')");
    TEST_EQ_INT(coding_hexval(':'), -1, "hexval : (one above '9')");
    TEST_EQ_INT(coding_hexval('@'), -1, "hexval @ (one below 'A')");
    TEST_EQ_INT(coding_hexval('`'), -1, "hexval ` (one below 'a')");
    TEST_EQ_INT(coding_hexval(0), -1, "hexval NUL");
    TEST_EQ_INT(coding_hexval(0xC3), -1, "hexval high byte");

    uint8_t out[8];
    memset(out, 0xEE, sizeof out);
    TEST_EQ_INT(coding_hex_decode("00fFa5", 6, out), 0, "hex_decode mixed case");
    TEST_CHECK(out[0] == 0x00 && out[1] == 0xFF && out[2] == 0xA5 && out[3] == 0xEE,
               "hex_decode bytes, nothing past n / 2");
    TEST_EQ_INT(coding_hex_decode("abc", 3, out), -1, "hex_decode odd length refused");
    TEST_EQ_INT(coding_hex_decode("abcd", 3, out), -1, "hex_decode odd n: no byte past n read");
    TEST_EQ_INT(coding_hex_decode("0g", 2, out), -1, "hex_decode invalid digit refused");
    TEST_EQ_INT(coding_hex_decode("g0", 2, out), -1, "hex_decode invalid high digit refused");
    TEST_EQ_INT(coding_hex_decode("", 0, out), 0, "hex_decode empty");

    TEST_EQ_INT(coding_hex4("00e9", 4), 0xE9, "hex4 value");
    TEST_EQ_INT(coding_hex4("FFFFx", 5), 0xFFFF, "hex4 reads four only");
    TEST_EQ_INT(coding_hex4("D83", 3), -1, "hex4 too short");
    TEST_EQ_INT(coding_hex4("12z4", 4), -1, "hex4 bad digit");

    char u[37];
    const uint8_t g[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                           0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10};
    TEST_EQ_INT(coding_uuid_format(g, u), 36, "uuid_format length");
    TEST_EQ_STR(u, "01234567-89ab-cdef-fedc-ba9876543210", "uuid_format text");

    char s[16];
    const uint8_t b[] = {0x01, 0xAB, 0xff};
    TEST_EQ_INT(coding_hex_encode(b, 3, s, 0), 6, "hex_encode length");
    TEST_EQ_STR(s, "01abff", "hex_encode lower");
    coding_hex_encode(b, 3, s, 1);
    TEST_EQ_STR(s, "01ABFF", "hex_encode upper");
}

/* Decodes s (strict unless flags) and compares with want (wantlen bytes,
 * -1 for an error). */
static int b64_is(const char *s, unsigned flags, const char *want, long wantlen)
{
    uint8_t out[64];
    size_t n = strlen(s);
    long r = coding_b64_decode(s, n, out, flags);
    if (r != wantlen)
        return 0;
    return r < 0 || memcmp(out, want, (size_t)r) == 0;
}

static void test_b64(void)
{
    char s[64];
    TEST_EQ_INT(coding_b64_encode((const uint8_t *)"", 0, s), 0, "encode empty");
    TEST_EQ_STR(s, "", "encode empty text");
    coding_b64_encode((const uint8_t *)"f", 1, s);
    TEST_EQ_STR(s, "Zg==", "encode 1 byte: two pads");
    coding_b64_encode((const uint8_t *)"fo", 2, s);
    TEST_EQ_STR(s, "Zm8=", "encode 2 bytes: one pad");
    TEST_EQ_INT(coding_b64_encode((const uint8_t *)"foobar", 6, s), 8, "encode 6 bytes length");
    TEST_EQ_STR(s, "Zm9vYmFy", "encode 6 bytes");
    const uint8_t hi[] = {0xfb, 0xff, 0xbf};
    coding_b64_encode(hi, 3, s);
    TEST_EQ_STR(s, "+/+/", "encode uses + and /");
    TEST_EQ_INT(CODING_B64_LEN(32), 44, "CODING_B64_LEN of an HMAC");

    TEST_CHECK(b64_is("", 0, "", 0), "strict: empty");
    TEST_CHECK(b64_is("Zg==", 0, "f", 1), "strict: two pads");
    TEST_CHECK(b64_is("Zm8=", 0, "fo", 2), "strict: one pad");
    TEST_CHECK(b64_is("Zm9vYmFy", 0, "foobar", 6), "strict: no pad");
    TEST_CHECK(b64_is("Zh==", 0, "f", 1), "strict: non-zero pad bits tolerated");
    TEST_CHECK(b64_is("+/+/", 0, "\xfb\xff\xbf", 3), "strict: + and /");
    TEST_CHECK(b64_is("Zg", 0, NULL, -1), "strict: missing padding refused");
    TEST_CHECK(b64_is("Zm9", 0, NULL, -1), "strict: length 3 refused");
    TEST_CHECK(b64_is("Zg=", 0, NULL, -1), "strict: length 3 with pad refused");
    TEST_CHECK(b64_is("Z===", 0, NULL, -1), "strict: three pads refused");
    TEST_CHECK(b64_is("====", 0, NULL, -1), "strict: only pads refused");
    TEST_CHECK(b64_is("Zg==Zg==", 0, NULL, -1), "strict: pad inside refused");
    TEST_CHECK(b64_is("Z=g=", 0, NULL, -1), "strict: pad not at the end refused");
    TEST_CHECK(b64_is("Zm 9", 0, NULL, -1), "strict: whitespace refused");
    TEST_CHECK(b64_is("-_-_", 0, NULL, -1), "strict: url alphabet refused");
    TEST_CHECK(b64_is("Zm9v\n", 0, NULL, -1), "strict: trailing newline refused");

    const unsigned opt = CODING_B64_PAD_OPTIONAL | CODING_B64_CANONICAL;
    TEST_CHECK(b64_is("Zg", opt, "f", 1), "optional pad: left off");
    TEST_CHECK(b64_is("Zg==", opt, "f", 1), "optional pad: present");
    TEST_CHECK(b64_is("Zm8", opt, "fo", 2), "optional pad: length 3");
    TEST_CHECK(b64_is("Zg=", opt, NULL, -1), "optional pad: partial padding refused");
    TEST_CHECK(b64_is("Zm9vY", opt, NULL, -1), "optional pad: length 4k+1 refused");
    TEST_CHECK(b64_is("Zg===", opt, NULL, -1), "optional pad: three pads refused");
    TEST_CHECK(b64_is("Zh==", opt, NULL, -1), "canonical: non-zero pad bits refused");
    TEST_CHECK(b64_is("Zm9=", opt, NULL, -1), "canonical: non-zero pad bits refused (one pad)");
    TEST_CHECK(b64_is("-_-_", opt, NULL, -1), "optional pad: url alphabet refused");

    TEST_CHECK(b64_is("-_-_", CODING_B64_URL, "\xfb\xff\xbf", 3), "url: - and _");
    TEST_CHECK(b64_is("+/+/", CODING_B64_URL, "\xfb\xff\xbf", 3), "url: + and / too");
    TEST_CHECK(b64_is("Zg", CODING_B64_URL, "f", 1), "url: padding optional");
    TEST_CHECK(b64_is("Zm8", CODING_B64_URL, "fo", 2), "url: length 3");
    TEST_CHECK(b64_is("Zg===", CODING_B64_URL, "f", 1), "url: any trailing pads stripped");
    TEST_CHECK(b64_is("Zm9vY", CODING_B64_URL, NULL, -1), "url: length 4k+1 refused");
    TEST_CHECK(b64_is("Zm.v", CODING_B64_URL, NULL, -1), "url: bad character refused");
}

/* Percent-decodes s with flags into a buffer of cap bytes; the text or
 * NULL for an error. */
static const char *pct(const char *s, size_t n, unsigned flags, size_t cap)
{
    static char out[64];
    long r = coding_pct_decode(s, n, out, cap, flags);
    if (r < 0)
        return NULL;
    return (size_t)r == strlen(out) ? out : "(length mismatch)";
}

static void test_pct(void)
{
    TEST_EQ_STR(pct("a%20b%2fc", 9, 0, 64), "a b/c", "escapes of either case");
    TEST_EQ_STR(pct("a+b", 3, 0, 64), "a+b", "'+' kept by default");
    TEST_EQ_STR(pct("a+b", 3, CODING_PCT_PLUS, 64), "a b", "'+' is a space with PLUS");
    TEST_EQ_STR(pct("%2B", 3, CODING_PCT_PLUS, 64), "+", "%2B stays '+' with PLUS");
    TEST_EQ_STR(pct("", 0, 0, 64), "", "empty");
    TEST_CHECK(pct("%", 1, 0, 64) == NULL, "lone % at the end refused");
    TEST_CHECK(pct("ab%4", 4, 0, 64) == NULL, "one digit at the end refused");
    TEST_CHECK(pct("ab%41", 4, 0, 64) == NULL, "escape cut by n not completed from past n");
    TEST_CHECK(pct("ab%411", 3, 0, 64) == NULL, "lone % cut by n refused");
    TEST_CHECK(pct("%4g", 3, 0, 64) == NULL, "non-hex digit refused");
    TEST_CHECK(pct("%%41", 4, 0, 64) == NULL, "%% refused");
    TEST_EQ_STR(pct("x%41", 4, 0, 64), "xA", "escape as the last three bytes");

    char out[8];
    TEST_EQ_INT(coding_pct_decode("a%00b", 5, out, sizeof out, 0), 3, "%00 kept by default");
    TEST_CHECK(out[1] == '\0' && out[2] == 'b', "%00 decodes to a NUL byte");
    TEST_EQ_INT(coding_pct_decode("a%00b", 5, out, sizeof out, CODING_PCT_NO_NUL), -1,
                "%00 refused with NO_NUL");
    TEST_EQ_INT(coding_pct_decode("a\0b", 3, out, sizeof out, CODING_PCT_NO_NUL), -1,
                "raw NUL refused with NO_NUL");

    TEST_EQ_INT(coding_pct_decode("abcd", 4, out, 5, 0), 4, "fits exactly with its NUL");
    TEST_EQ_INT(coding_pct_decode("abcde", 5, out, 5, 0), -1, "overlong refused");
    TEST_EQ_INT(coding_pct_decode("%41%42%43%44", 12, out, 5, 0), 4,
                "cap counts decoded bytes, not input");
    TEST_EQ_INT(coding_pct_decode("", 0, out, 0, 0), -1, "no room for the NUL refused");
}

/* Fixed-width readers against buf_put_be*, varints both ways. */
static void test_ints(void)
{
    struct buf b;
    buf_init(&b);
    buf_put_be16(&b, 0x1234);
    buf_put_be32(&b, 0x89abcdefu);
    buf_put_be64(&b, 0x0102030405060708ull);
    const uint8_t *p = (const uint8_t *)b.data;
    TEST_CHECK(coding_get_be(p, 2) == 0x1234, "be16");
    TEST_CHECK(coding_get_be(p + 2, 4) == 0x89abcdefu, "be32");
    TEST_CHECK(coding_get_be64(p + 6) == 0x0102030405060708ull, "be64");
    TEST_CHECK(coding_get_le(p + 6, 8) == 0x0807060504030201ull, "le64 of the same bytes");
    TEST_CHECK(coding_get_le(p, 2) == 0x3412, "le16");

    static const uint64_t vals[] = {0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX,
                                    (uint64_t)1 << 63, UINT64_MAX};
    int all = 1, truncated_refused = 1;
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        b.len = 0;
        buf_put_varint(&b, vals[i]);
        const uint8_t *q = (const uint8_t *)b.data, *end = q + b.len;
        uint64_t v = 0;
        if (coding_get_varint(&q, end, &v) != 0 || v != vals[i] || q != end)
            all = 0;
        for (size_t cut = 0; cut < b.len; cut++) {
            q = (const uint8_t *)b.data;
            if (coding_get_varint(&q, q + cut, &v) == 0)
                truncated_refused = 0;
        }
    }
    TEST_CHECK(all, "varints round-trip through buf_put_varint");
    TEST_CHECK(truncated_refused, "every truncated varint is refused");
    static const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    static const uint8_t longer[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                     0x00};
    const uint8_t *q = over;
    uint64_t v;
    TEST_CHECK(coding_get_varint(&q, over + sizeof over, &v) == -1, "a varint over 64 bits is refused");
    q = longer;
    TEST_CHECK(coding_get_varint(&q, longer + sizeof longer, &v) == -1,
               "a varint longer than 10 bytes is refused");
    buf_free(&b);

    char out[21];
    size_t n = coding_u64_dec(0, out);
    TEST_CHECK(n == 1 && out[0] == '0', "decimal 0");
    n = coding_u64_dec(UINT64_MAX, out);
    out[n] = 0;
    TEST_CHECK(n == 20 && strcmp(out, "18446744073709551615") == 0, "decimal UINT64_MAX");
    n = coding_u64_dec(1000, out);
    out[n] = 0;
    TEST_CHECK(strcmp(out, "1000") == 0, "decimal 1000");
}

/* arena_concat against arena_sprintf of the same pieces, one of them
 * longer than arena_sprintf's stack buffer. */
static void test_arena_strings(void)
{
    struct arena *a = arena_new(64);
    char big[700];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    TEST_CHECK(strcmp(arena_concat(a, "http://h/acct", "/$metadata#", "t/@Element", (char *)NULL),
                      "http://h/acct/$metadata#t/@Element") == 0, "concat of three");
    TEST_CHECK(strcmp(arena_concat(a, (char *)NULL), "") == 0, "concat of none");
    TEST_CHECK(strcmp(arena_concat(a, "", "x", "", (char *)NULL), "x") == 0, "empty pieces");
    char *c = arena_concat(a, "a", big, "z", (char *)NULL);
    TEST_CHECK(strcmp(c, arena_sprintf(a, "a%sz", big)) == 0 && strlen(c) == sizeof big + 1,
               "a long concat equals the sprintf");
    arena_free(a);
}

int main(void)
{
    test_arena_strings();
    test_hex();
    test_b64();
    test_pct();
    test_ints();
    return test_done();
}
