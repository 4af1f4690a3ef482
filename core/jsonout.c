/* jsonout.c - JSON string output (see jsonout.h). */
#include "core/jsonout.h"

#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Bytes that need escaping in a JSON string: '"', '\\' and controls. */
static const unsigned char json_special[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
};

/* Runs of plain bytes are copied in one go (the hot loop of every entity
 * response). */
void json_escape(struct buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t start = 0, i = 0;
    buf_reserve(b, n);
    for (;;) {
#ifdef __SSE2__
        /* sixteen bytes at a time up to the first special one: below
         * 0x20 (max(x, 0x1F) == 0x1F), '"' or '\\' */
        while (n - i >= 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
            __m128i lo = _mm_set1_epi8(0x1F);
            __m128i hit = _mm_or_si128(
                _mm_cmpeq_epi8(_mm_max_epu8(x, lo), lo),
                _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))));
            unsigned m = (unsigned)_mm_movemask_epi8(hit);
            if (m) {
                i += (size_t)__builtin_ctz(m);
                break;
            }
            i += 16;
        }
#else
        /* without SSE2, eight bytes at a time while none of them is
         * special: a byte below 0x20, '"' or '\\' (the classic
         * has-zero-byte tests; only the "any" answer is used, so borrows do
         * not matter) */
        while (n - i >= 8) {
            uint64_t x;
            memcpy(&x, p + i, 8);
            const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
            uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');
            uint64_t hit = ((x - ones * 0x20) | (q - ones) | (bs - ones)) & ~x & highs;
            if (hit)
                break;
            i += 8;
        }
#endif
        while (i < n && !json_special[p[i]])
            i++;
        buf_append(b, s + start, i - start);
        if (i == n)
            return;
        unsigned char c = p[i];
        char u[7] = {'\\', 0, 0, 0, 0, 0, 0};
        switch (c) {
        case '"': u[1] = '"'; break;
        case '\\': u[1] = '\\'; break;
        case '\n': u[1] = 'n'; break;
        case '\r': u[1] = 'r'; break;
        case '\t': u[1] = 't'; break;
        case '\b': u[1] = 'b'; break;
        case '\f': u[1] = 'f'; break;
        default:
            memcpy(u + 1, "u00", 3);
            u[4] = hex[c >> 4];
            u[5] = hex[c & 15];
        }
        buf_append(b, u, u[2] ? 6 : 2);
        start = ++i;
    }
}

void json_put_string(struct buf *b, const char *s, size_t n)
{
    buf_putc(b, '"');
    json_escape(b, s, n);
    buf_putc(b, '"');
}
