/* jsonflat.c - the flat-object fast path in front of yajl (see jsonflat.h).
 * yajl lexes strings one byte at a time through a state machine, which was
 * the largest single cost of parsing a ~1 KiB entity; here a string is
 * scanned 32 or 16 (SSE2) or 8 bytes at a time for its closing quote (an
 * AVX2 step for strings past 32 bytes saved 1.7% of the instructions of a
 * $batch of 100 ~1 KiB inserts, under the 3% a speed trick must show:
 * removed, README "Performance"). */
#include "codec/jsonflat.h"

#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <immintrin.h>
#endif

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Non-zero when one of the 8 bytes of w is '"', '\\' or below 0x20: the
 * bytes a plain string run cannot hold (exact, no false positives). */
static uint64_t special_bytes(uint64_t w)
{
    uint64_t q = w ^ (ONES * '"');
    uint64_t b = w ^ (ONES * '\\');
    uint64_t has_q = (q - ONES) & ~q;
    uint64_t has_b = (b - ONES) & ~b;
    uint64_t has_ctl = (w - ONES * 0x20) & ~w;
    return (has_q | has_b | has_ctl) & HIGHS;
}

/* Index of the closing quote of the string whose contents start at s[i],
 * or 0 when the string has an escape or a control byte, or does not end
 * before n (the caller declines then). */
static size_t string_end(const char *s, size_t i, size_t n)
{
#ifdef __SSE2__
    /* 32, then 16 bytes a step where SSE2 is there (every x86-64). A byte
     * is below 0x20 exactly when min(byte, 0x1f) == byte (unsigned). */
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i ctl_max = _mm_set1_epi8(0x1f);
#define JSONFLAT_SPECIAL(v)                                                                   \
    _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),          \
                 _mm_cmpeq_epi8(_mm_min_epu8(v, ctl_max), v))
    while (i + 32 <= n) {   /* long values: two blocks a step */
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
        if (_mm_movemask_epi8(_mm_or_si128(JSONFLAT_SPECIAL(a), JSONFLAT_SPECIAL(b))))
            break;   /* the block loop below finds the byte */
        i += 32;
    }
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        unsigned mask = (unsigned)_mm_movemask_epi8(JSONFLAT_SPECIAL(v));
        if (mask) {   /* the first special byte decides */
            i += (size_t)__builtin_ctz(mask);
            return s[i] == '"' ? i : 0;
        }
        i += 16;
    }
#undef JSONFLAT_SPECIAL
#endif
    while (i + 8 <= n) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (special_bytes(w))
            break;
        i += 8;
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            return i;
        if (c == '\\' || c < 0x20)
            return 0;
    }
    return 0;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_ws(const char *s, size_t i, size_t n)
{
    while (i < n && is_ws(s[i]))
        i++;
    return i;
}

/* A value may only be followed by white space, ',' or '}' here. */
static int ends_value(const char *s, size_t i, size_t n)
{
    return i < n && (is_ws(s[i]) || s[i] == ',' || s[i] == '}');
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* End of the JSON number starting at s[i] (RFC 8259 grammar), or 0 when
 * it is not one. */
static size_t number_end(const char *s, size_t i, size_t n)
{
    if (i < n && s[i] == '-')
        i++;
    if (i >= n || !is_digit(s[i]))
        return 0;
    if (s[i] == '0') {
        i++;
    } else {
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || !is_digit(s[i]))
            return 0;
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n || !is_digit(s[i]))
            return 0;
        while (i < n && is_digit(s[i]))
            i++;
    }
    return i;
}

/* The literal word at s[i], when it is one and properly ended. */
static int literal_at(const char *s, size_t i, size_t n, const char *word, size_t wl)
{
    return n - i > wl && memcmp(s + i, word, wl) == 0 && ends_value(s, i + wl, n);
}

/* Parses one member value at s[*pi] and delivers it; JSONFLAT_* status. */
static int value(const yajl_callbacks *cb, void *ctx, const char *s, size_t *pi, size_t n)
{
    size_t i = *pi;
    int keep = 1;
    switch (s[i]) {
    case '"': {
        size_t e = string_end(s, i + 1, n);
        if (!e)
            return JSONFLAT_DECLINED;
        keep = cb->yajl_string(ctx, (const unsigned char *)s + i + 1, e - i - 1);
        i = e + 1;
        break;
    }
    case 't':
        if (!literal_at(s, i, n, "true", 4))
            return JSONFLAT_DECLINED;
        keep = cb->yajl_boolean(ctx, 1);
        i += 4;
        break;
    case 'f':
        if (!literal_at(s, i, n, "false", 5))
            return JSONFLAT_DECLINED;
        keep = cb->yajl_boolean(ctx, 0);
        i += 5;
        break;
    case 'n':
        if (!literal_at(s, i, n, "null", 4))
            return JSONFLAT_DECLINED;
        keep = cb->yajl_null(ctx);
        i += 4;
        break;
    default: {
        size_t e = number_end(s, i, n);
        if (!e || !ends_value(s, e, n))
            return JSONFLAT_DECLINED;
        keep = cb->yajl_number(ctx, s + i, e - i);
        i = e;
        break;
    }
    }
    *pi = i;
    return keep ? JSONFLAT_OK : JSONFLAT_CANCELED;
}

int jsonflat_parse(const yajl_callbacks *cb, void *ctx, const char *s, size_t n)
{
    size_t i = skip_ws(s, 0, n);
    if (i >= n || s[i] != '{')
        return JSONFLAT_DECLINED;
    if (!cb->yajl_start_map(ctx))
        return JSONFLAT_CANCELED;
    i = skip_ws(s, i + 1, n);
    if (i < n && s[i] == '}') {
        i++;
    } else {
        for (;;) {
            if (i >= n || s[i] != '"')
                return JSONFLAT_DECLINED;
            size_t e = string_end(s, i + 1, n);
            if (!e)
                return JSONFLAT_DECLINED;
            size_t k = i + 1, kl = e - k;
            i = skip_ws(s, e + 1, n);
            if (i >= n || s[i] != ':')
                return JSONFLAT_DECLINED;
            i = skip_ws(s, i + 1, n);
            if (i >= n)
                return JSONFLAT_DECLINED;
            if (!cb->yajl_map_key(ctx, (const unsigned char *)s + k, kl))
                return JSONFLAT_CANCELED;
            int rc = value(cb, ctx, s, &i, n);
            if (rc != JSONFLAT_OK)
                return rc;
            i = skip_ws(s, i, n);
            if (i < n && s[i] == ',') {
                i = skip_ws(s, i + 1, n);
                continue;
            }
            if (i < n && s[i] == '}') {
                i++;
                break;
            }
            return JSONFLAT_DECLINED;
        }
    }
    if (skip_ws(s, i, n) != n)
        return JSONFLAT_DECLINED;   /* trailing bytes: yajl's verdict */
    return cb->yajl_end_map(ctx) ? JSONFLAT_OK : JSONFLAT_CANCELED;
}
