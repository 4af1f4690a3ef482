/* coding.c - hex, base64 and percent coding (see coding.h). */
#include "core/coding.h"

#include <stdint.h>
#include <string.h>

int coding_hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Pairs of digits, high nibble first (Guids, Binary filter literals). */
int coding_hex_decode(const char *s, size_t n, uint8_t *out)
{
    if (n % 2)
        return -1;
    for (size_t i = 0; i < n; i += 2) {
        int hi = coding_hexval((unsigned char)s[i]), lo = coding_hexval((unsigned char)s[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* Four digits, as JSON's \u escapes carry them. */
long coding_hex4(const char *s, size_t n)
{
    if (n < 4)
        return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = coding_hexval((unsigned char)s[i]);
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

/* Two digits a byte, high nibble first. */
size_t coding_hex_encode(const uint8_t *p, size_t n, char *out, int upper)
{
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
    return 2 * n;
}

/* Hex pairs with a dash before bytes 4, 6, 8 and 10. */
size_t coding_uuid_format(const uint8_t g[16], char out[37])
{
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        o += coding_hex_encode(&g[i], 1, out + o, 0);
    }
    return o;
}

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Three bytes to four characters, the tail padded with '='. */
size_t coding_b64_encode(const uint8_t *p, size_t n, char *out)
{
    char *o = out;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t w = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = b64_alphabet[w >> 18];
        *o++ = b64_alphabet[(w >> 12) & 63];
        *o++ = b64_alphabet[(w >> 6) & 63];
        *o++ = b64_alphabet[w & 63];
    }
    if (n - i >= 1) {
        uint32_t w = (uint32_t)p[i] << 16 | (n - i == 2 ? (uint32_t)p[i + 1] << 8 : 0);
        *o++ = b64_alphabet[w >> 18];
        *o++ = b64_alphabet[(w >> 12) & 63];
        *o++ = n - i == 2 ? b64_alphabet[(w >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return (size_t)(o - out);
}

/* Value of one base64 character, or -1; url also admits '-' and '_'. */
static int b64_value(unsigned char c, int url)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || (url && c == '-'))
        return 62;
    if (c == '/' || (url && c == '_'))
        return 63;
    return -1;
}

/* The padding is checked and stripped first; the characters left are then
 * read six bits at a time (pad bits of the last one are dropped). */
long coding_b64_decode(const char *s, size_t n, uint8_t *out, unsigned flags)
{
    int url = (flags & CODING_B64_URL) != 0;
    if (url) {
        while (n > 0 && s[n - 1] == '=')
            n--;
        if (n % 4 == 1)
            return -1;
    } else {
        size_t pad = 0;
        while (pad < n && s[n - 1 - pad] == '=')
            pad++;
        if (pad > 2)
            return -1;
        if (flags & CODING_B64_PAD_OPTIONAL) {
            if ((pad && n % 4 != 0) || (n - pad) % 4 == 1)
                return -1;
        } else if (n % 4 != 0) {
            return -1;
        }
        n -= pad;
    }
    long o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value((unsigned char)s[i], url);
        if (v < 0)
            return -1;
        acc = (acc << 6 | (uint32_t)v) & 0xFFFFFF;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    if ((flags & CODING_B64_CANONICAL) && (acc & ((1u << bits) - 1)))
        return -1;
    return o;
}

/* One pass; the output is never longer than the input. */
long coding_pct_decode(const char *s, size_t n, char *out, size_t cap, unsigned flags)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (n - i < 3)
                return -1;
            int hi = coding_hexval((unsigned char)s[i + 1]);
            int lo = coding_hexval((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+' && (flags & CODING_PCT_PLUS)) {
            c = ' ';
        }
        if (c == '\0' && (flags & CODING_PCT_NO_NUL))
            return -1;
        if (o + 1 >= cap)
            return -1;
        out[o++] = c;
    }
    if (cap == 0)
        return -1;
    out[o] = '\0';
    return (long)o;
}

/* Every non-continuation byte starts one code point; 4-byte sequences
 * (U+10000 and above) need a surrogate pair in UTF-16. */
size_t utf16_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t count = 0, i = 0;
    while (i < n) {
        /* ASCII runs count one unit per byte, eight bytes at a time. */
        uint64_t w;
        if (n - i >= 8 && (memcpy(&w, u + i, 8), !(w & 0x8080808080808080ULL))) {
            count += 8;
            i += 8;
            continue;
        }
        size_t end = n - i >= 8 ? i + 8 : n;
        for (; i < end; i++) {
            if ((u[i] & 0xC0) != 0x80)
                count++;
            if (u[i] >= 0xF0)
                count++;
        }
    }
    return count;
}

size_t utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    /* s[max] is the first byte left out: back up over the continuation
       bytes before it to the start of its character (at most 3; more are
       not UTF-8, and then a cut anywhere is as good). */
    size_t cut = max;
    for (int i = 0; i < 3 && cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80; i++)
        cut--;
    return ((unsigned char)s[cut] & 0xC0) == 0x80 ? max : cut;
}

size_t coding_u64_dec(uint64_t v, char *out)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}
