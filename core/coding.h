/* coding.h - hex, base64 and percent coding, fixed-width and varint
 * integers in stored bytes, decimal integers: the one copy every layer
 * uses (request paths, query strings, SAS and SharedKey signatures,
 * account keys, Edm.Binary and Guid values, continuation tokens, JWT
 * payloads, keys and stored values).
 * Allocation-free: callers pass output buffers sized as documented. */
#ifndef TABLED_CODING_H
#define TABLED_CODING_H
#include <stddef.h>
#include <stdint.h>

/* Value 0..15 of the hex digit c (either case), else -1. */
int coding_hexval(int c);

/* Decodes n hex digits (n even) into out (n / 2 bytes). 0, or -1 when n is
 * odd or a character is not a hex digit (out is then partly written). */
int coding_hex_decode(const char *s, size_t n, uint8_t *out);

/* Value of exactly four hex digits at s (JSON's \uXXXX), or -1 when fewer
 * than four bytes remain (n) or one is not a hex digit. */
long coding_hex4(const char *s, size_t n);

/* Writes 2 * n hex digits of p at out (lower case unless upper) and a NUL;
 * out holds 2 * n + 1 bytes. Returns 2 * n. */
size_t coding_hex_encode(const uint8_t *p, size_t n, char *out, int upper);

/* The 8-4-4-4-12 text of a 16-byte UUID (lower-case hex, bytes in text
 * order) at out, NUL-terminated. Returns 36. */
size_t coding_uuid_format(const uint8_t g[16], char out[37]);

/* Bytes base64 text of n bytes takes (padded), without the NUL. */
#define CODING_B64_LEN(n) (((n) + 2) / 3 * 4)

/* Standard base64 (RFC 4648 section 4, padded) of p at out, NUL-terminated;
 * out holds CODING_B64_LEN(n) + 1 bytes. Returns the text length. */
size_t coding_b64_encode(const uint8_t *p, size_t n, char *out);

/* Decoding flags. Without flags the decoding is strict RFC 4648 section 4:
 * length a multiple of 4, '=' only as the last one or two characters, no
 * whitespace; non-zero pad bits are tolerated (as .NET's
 * Convert.FromBase64String does). */
enum {
    /* base64url as JWTs carry it: '-' '_' as well as '+' '/', trailing
     * '=' optional (any number stripped), only a length of 4k+1 refused. */
    CODING_B64_URL = 1,
    /* Standard alphabet, padding may be left off (a length of 4k+1 is
     * refused; when '=' is present the length is a multiple of 4). */
    CODING_B64_PAD_OPTIONAL = 2,
    /* Refuse non-zero pad bits (canonical text only, as account keys). */
    CODING_B64_CANONICAL = 4,
};

/* Decodes n characters of base64 at s into out, which holds n / 4 * 3 + 3
 * bytes. Returns the byte count, or -1 when malformed. */
long coding_b64_decode(const char *s, size_t n, uint8_t *out, unsigned flags);

/* Percent-decoding flags. Without flags: "%XX" with two hex digits is
 * required after every '%', '+' stays '+', a decoded %00 is kept. */
enum {
    CODING_PCT_PLUS = 1,   /* '+' decodes to a space (form encoding) */
    CODING_PCT_NO_NUL = 2, /* refuse a NUL byte in the result, raw or %00 */
};

/* Percent-decodes n bytes of s into out (cap bytes, NUL-terminated; n + 1
 * always suffices). Returns the decoded length, or -1 when a '%' is not
 * followed by two hex digits, a NUL is refused, or the result with its NUL
 * does not fit. */
long coding_pct_decode(const char *s, size_t n, char *out, size_t cap, unsigned flags);

/* Number of UTF-16 code units of well-formed UTF-8 s (the service counts
   string sizes in them). */
size_t utf16_len(const char *s, size_t n);

/* The length of the longest prefix of UTF-8 s[0..n) that is at most max
 * bytes and does not end inside a multi-byte character: where to cut a
 * text kept in a fixed field so that what is kept stays UTF-8. n when
 * n <= max. */
size_t utf8_cut(const char *s, size_t n, size_t max);

/* ---- fixed-width integers and varints in stored bytes ----
 * The readers of what core/buf.h's buf_put_be16/32/64 and buf_put_varint
 * write (keys, values, records), one copy for every layer. Inline: they
 * sit on the decoding paths of every stored value. Bounds are the
 * caller's, except for the varint reader, which checks them. */

/* The big-endian unsigned integer of the n (at most 8) bytes at p. */
static inline uint64_t coding_get_be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The big-endian u64 at p. */
static inline uint64_t coding_get_be64(const uint8_t *p)
{
    return coding_get_be(p, 8);
}

/* The little-endian unsigned integer of the n (at most 8) bytes at p. */
static inline uint64_t coding_get_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i > 0; i--)
        v = v << 8 | p[i - 1];
    return v;
}

/* Reads a LEB128 varint (as buf_put_varint writes it) at *p, before end,
 * and advances *p. 0, or -1 when it is truncated, longer than 10 bytes
 * or over 64 bits. */
static inline int coding_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t c = *(*p)++;
        uint64_t part = c & 0x7f;
        if (shift == 63 && part > 1)
            return -1;
        r |= part << shift;
        if (!(c & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

/* Writes the decimal digits of v at out (room for 20, no NUL); returns
 * how many. */
size_t coding_u64_dec(uint64_t v, char *out);

#endif
