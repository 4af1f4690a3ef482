/* ctlscan.h - finding control bytes in header text, shared by the $batch
 * parser (which refuses them) and writer (which blanks them). Every header
 * line of every batch operation passes here, so runs are checked 16 bytes
 * a step with SSE2 (every x86-64), else 8 with word arithmetic. */
#ifndef TABLED_PROTOCOL_CTLSCAN_H
#define TABLED_PROTOCOL_CTLSCAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* A control byte of header text: below 0x20 except tab, or DEL. */
static inline int ctl_byte(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* Length of the prefix of p[0..n) that holds no control byte (n when
 * there is none). */
static inline size_t ctl_span(const char *p, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    /* Bytes >= 0x80 are negative as signed chars: exclude them from the
     * signed "below 0x20" compare. */
    const __m128i space = _mm_set1_epi8(0x20), zero = _mm_setzero_si128();
    const __m128i tab = _mm_set1_epi8('\t'), del = _mm_set1_epi8(0x7f);
    while (n - i >= 16 || (n >= 16 && i < n)) {
        /* The last block is the final 16 bytes, overlapping checked ones
         * (they are clean, so the first hit is still the first bad byte). */
        size_t at = n - i >= 16 ? i : n - 16;
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + at));
        __m128i low = _mm_andnot_si128(_mm_cmplt_epi8(v, zero), _mm_cmplt_epi8(v, space));
        __m128i bad = _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(v, tab), low),
                                   _mm_cmpeq_epi8(v, del));
        unsigned mask = (unsigned)_mm_movemask_epi8(bad);
        if (mask)
            return at + (size_t)__builtin_ctz(mask);
        i = at + 16;
    }
#else
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (n - i >= 8) {
        uint64_t w, x;
        memcpy(&w, p + i, 8);
        x = w ^ (0x7f * ones);
        /* below 0x20 (tab included: rechecked below) or DEL */
        if ((((w - 0x20 * ones) & ~w) | ((x - ones) & ~x)) & highs)
            break;
        i += 8;
    }
#endif
    while (i < n && !ctl_byte((unsigned char)p[i]))
        i++;
    return i;
}

#endif
