/* edm.c - Edm type parsing and formatting (see edm.h, doc/protocol.md, Edm types; Edm value forms).
 *
 * Everything here is locale-independent: dates are core/timefmt.c's and
 * doubles go through strtod_l/snprintf under a private "C" locale. */
#include "codec/edm.h"

#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "core/coding.h"
#include "core/timefmt.h"

/* ---------------------------------------------------------------- dates */

/* Edm.DateTime and the HTTP dates are the floor's (core/timefmt.h); these
 * names keep the Edm codec's vocabulary for its callers. */
int edm_datetime_parse(const char *s, size_t n, int64_t *ticks)
{
    return timefmt_iso_parse(s, n, ticks);
}

size_t edm_datetime_format(int64_t ticks, char *out)
{
    return timefmt_iso_format(ticks, out);
}

size_t edm_datetime_format7(int64_t ticks, char *out)
{
    return timefmt_iso_format7(ticks, out);
}

size_t edm_rfc1123_format(int64_t unix_seconds, char *out)
{
    return timefmt_rfc1123_format(unix_seconds, out);
}

int edm_rfc1123_parse(const char *s, size_t n, int64_t *unix_seconds)
{
    return timefmt_rfc1123_parse(s, n, unix_seconds);
}

int64_t edm_now_ticks(void)
{
    return timefmt_now_ticks();
}

/* ---------------------------------------------------------------- Guid */

/* 8-4-4-4-12 hex digits, optionally wrapped in one pair of braces. Bytes
 * are stored in text order (not .NET's mixed-endian layout): only the text
 * form is ever exchanged. */
int edm_guid_parse(const char *s, size_t n, uint8_t out[16])
{
    if (n == 38 && s[0] == '{' && s[37] == '}') {
        s++;
        n = 36;
    }
    if (n != 36)
        return EDM_EINVAL;
    uint8_t g[16];
    int k = 0;
    for (size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return EDM_EINVAL;
            i++;
            continue;
        }
        if (coding_hex_decode(s + i, 2, &g[k++]) != 0)
            return EDM_EINVAL;
        i += 2;
    }
    memcpy(out, g, 16);
    return 0;
}

size_t edm_guid_format(const uint8_t g[16], char *out)
{
    return coding_uuid_format(g, out);
}

/* ---------------------------------------------------------------- base64 */

/* Strict RFC 4648 section 4 decoding into arena memory (see
 * coding_b64_decode: non-zero pad bits are tolerated). */
int edm_base64_decode(struct arena *a, const char *s, size_t n, uint8_t **out, size_t *outlen)
{
    uint8_t *p = arena_alloc(a, n / 4 * 3 + 3);
    long o = coding_b64_decode(s, n, p, 0);
    if (o < 0)
        return EDM_EINVAL;
    *out = p;
    *outlen = (size_t)o;
    return 0;
}

/* Appends the padded base64 text of p to b. */
void edm_base64_encode(struct buf *b, const uint8_t *p, size_t n)
{
    buf_reserve(b, CODING_B64_LEN(n));
    b->len += coding_b64_encode(p, n, b->data + b->len);
}

/* ---------------------------------------------------------------- integers */

/* Shared integer parser: optional '-', one or more digits, nothing else;
 * the magnitude limit is max for positives and max+1 for negatives. */
static int parse_integer(const char *s, size_t n, uint64_t max, int *neg, uint64_t *mag)
{
    size_t i = 0;
    *neg = 0;
    if (n > 0 && s[0] == '-') {
        *neg = 1;
        i = 1;
    }
    if (i == n)
        return EDM_EINVAL;
    for (size_t k = i; k < n; k++)
        if (s[k] < '0' || s[k] > '9')
            return EDM_EINVAL;
    uint64_t limit = *neg ? max + 1 : max;
    uint64_t v = 0;
    for (; i < n; i++) {
        unsigned dgt = (unsigned)(s[i] - '0');
        if (v > (limit - dgt) / 10)
            return EDM_ERANGE;
        v = v * 10 + dgt;
    }
    *mag = v;
    return 0;
}

int edm_int32_parse(const char *s, size_t n, int32_t *out)
{
    int neg;
    uint64_t mag;
    int rc = parse_integer(s, n, INT32_MAX, &neg, &mag);
    if (rc)
        return rc;
    *out = neg ? (int32_t)(-(int64_t)mag) : (int32_t)mag;
    return 0;
}

int edm_int64_parse(const char *s, size_t n, int64_t *out)
{
    int neg;
    uint64_t mag;
    int rc = parse_integer(s, n, INT64_MAX, &neg, &mag);
    if (rc)
        return rc;
    if (neg)
        *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    else
        *out = (int64_t)mag;
    return 0;
}

/* ---------------------------------------------------------------- doubles */

/* The "C" numeric locale, created on first use and kept for the process. */
static locale_t c_locale(void)
{
    static locale_t loc;
    if (!loc) {
        loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
        if (!loc) {
            fputs("tabled: newlocale failed\n", stderr);
            abort();
        }
    }
    return loc;
}

/* strtod of exactly n bytes in the C locale; *end_ok is set when all n
 * bytes were consumed. Long texts get a temporary heap copy. */
static double strtod_n(const char *s, size_t n, int *end_ok)
{
    char stack[128];
    char *tmp = n < sizeof stack ? stack : malloc(n + 1);
    if (!tmp) {
        fputs("tabled: out of memory\n", stderr);
        abort();
    }
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    double d = strtod_l(tmp, &end, c_locale());
    *end_ok = end == tmp + n;
    if (tmp != stack)
        free(tmp);
    return d;
}

/* Accepts [+-] digits [. digits] [(e|E) [+-] digits] with at least one
 * mantissa digit ("3.", ".5", "-0", "1.5e+24"); with allow_named also
 * "NaN", "Infinity", "-Infinity", "INF", "-INF". Finite text that rounds
 * to infinity is EDM_ERANGE; underflow to a denormal or zero is fine. */
int edm_double_parse(const char *s, size_t n, int allow_named, double *out)
{
    if (allow_named) {
        if ((n == 3 && memcmp(s, "NaN", 3) == 0)) {
            *out = NAN;
            return 0;
        }
        if ((n == 8 && memcmp(s, "Infinity", 8) == 0) || (n == 3 && memcmp(s, "INF", 3) == 0)) {
            *out = INFINITY;
            return 0;
        }
        if ((n == 9 && memcmp(s, "-Infinity", 9) == 0) || (n == 4 && memcmp(s, "-INF", 4) == 0)) {
            *out = -INFINITY;
            return 0;
        }
    }
    size_t i = 0, mant_digits = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        i++;
        mant_digits++;
    }
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            i++;
            mant_digits++;
        }
    }
    if (mant_digits == 0)
        return EDM_EINVAL;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t exp_digits = 0;
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            i++;
            exp_digits++;
        }
        if (exp_digits == 0)
            return EDM_EINVAL;
    }
    if (i != n)
        return EDM_EINVAL;
    int end_ok;
    double d = strtod_n(s, n, &end_ok);
    if (!end_ok)
        return EDM_EINVAL;
    if (isinf(d))
        return EDM_ERANGE;
    *out = d;
    return 0;
}

/* Copies s with its NUL into out; returns its length. */
static size_t put_str(char *out, const char *s)
{
    size_t n = strlen(s);
    memcpy(out, s, n + 1);
    return n;
}

/* The digits and decimal exponent (of the first digit) of d when d is the
 * double nearest to m / 10^k for an integer m of at most 15 digits and
 * 0 <= k <= 15 (prices, measures, counters: most stored doubles), found
 * without printf. For such a d the %.14e search below stops at 15 digits,
 * and by DBL_DIG's guarantee those are m's digits: this is the same
 * answer, trailing zeros removed. Returns 1, or 0 when d is not of that
 * form (the caller then searches). */
static int short_decimal(double d, char *digits, int *nd, int *exp10)
{
    static const double pow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8,
                                   1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    double a = fabs(d);
    if (!(a >= DBL_MIN) || a >= 1e15)
        return 0;
    for (int k = 0; k <= 15; k++) {
        double scaled = a * pow10[k];
        if (scaled >= 1e15)
            return 0;
        double m = nearbyint(scaled);
        if (m < 1 || m / pow10[k] != a)
            continue;   /* both exact: one correctly rounded division */
        uint64_t u = (uint64_t)m;
        char tmp[20];
        int n = 0;
        while (u) {
            tmp[n++] = (char)('0' + u % 10);
            u /= 10;
        }
        *exp10 = n - 1 - k;
        int z = 0;
        while (z < n - 1 && tmp[z] == '0')
            z++;   /* trailing zeros of m */
        *nd = 0;
        for (int i = n - 1; i >= z; i--)
            digits[(*nd)++] = tmp[i];
        return 1;
    }
    return 0;
}

/* .NET Core "R" text: the fewest significant digits (1..17) that parse
 * back to d (the closest such when several exist), laid out plainly when
 * the decimal exponent is in [-4, 14] (.NET's "G" rule: greater than -5
 * and less than 15, so 0.0001 but 1E-05) and as d.dddE+XX otherwise; an
 * integral plain result gets ".0" so it reads back as a Double. */
size_t edm_double_format(double d, char *out)
{
    if (isnan(d))
        return put_str(out, "NaN");
    if (isinf(d))
        return put_str(out, d < 0 ? "-Infinity" : "Infinity");
    if (d == 0)
        return put_str(out, signbit(d) ? "-0.0" : "0.0");

    char digits[20];
    int nd, exp10, neg = 0;
    if (short_decimal(d, digits, &nd, &exp10)) {
        neg = d < 0;
    } else {
        /* Shortest round-trip digits from %.*e in the C locale. For normal
         * doubles DBL_DIG (15) digits reproduce any decimal of up to 15
         * significant digits, so when 15 digits round-trip, those digits
         * with trailing zeros removed are the shortest form; otherwise 16
         * or 17. Subnormals have less precision and take the plain 1..17
         * search. */
        char sci[40];
        locale_t old = uselocale(c_locale());
        int prec = fabs(d) >= DBL_MIN ? 15 : 1;
        for (; prec <= 17; prec++) {
            snprintf(sci, sizeof sci, "%.*e", prec - 1, d);
            if (strtod_l(sci, NULL, c_locale()) == d)
                break;
        }
        uselocale(old);

        /* Split "-d.ddde+XX" into sign, digit string and exponent. */
        const char *p = sci;
        if (*p == '-') {
            neg = 1;
            p++;
        }
        nd = 0;
        for (; *p && *p != 'e'; p++)
            if (*p >= '0' && *p <= '9')
                digits[nd++] = *p;
        exp10 = atoi(p + 1);
        while (nd > 1 && digits[nd - 1] == '0')
            nd--;
    }

    size_t o = 0;
    if (neg)
        out[o++] = '-';
    if (exp10 >= 15 || exp10 < -4) {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            memcpy(out + o, digits + 1, (size_t)nd - 1);
            o += (size_t)nd - 1;
        }
        out[o++] = 'E';
        out[o++] = exp10 < 0 ? '-' : '+';
        int ae = exp10 < 0 ? -exp10 : exp10;
        if (ae >= 100)
            out[o++] = (char)('0' + ae / 100);
        out[o++] = (char)('0' + ae / 10 % 10);
        out[o++] = (char)('0' + ae % 10);
    } else if (exp10 >= 0) {
        int k;
        for (k = 0; k <= exp10; k++)
            out[o++] = k < nd ? digits[k] : '0';
        out[o++] = '.';
        if (k < nd) {
            memcpy(out + o, digits + k, (size_t)(nd - k));
            o += (size_t)(nd - k);
        } else {
            out[o++] = '0';
        }
    } else {
        out[o++] = '0';
        out[o++] = '.';
        for (int k = -1; k > exp10; k--)
            out[o++] = '0';
        memcpy(out + o, digits, (size_t)nd);
        o += (size_t)nd;
    }
    out[o] = '\0';
    return o;
}

/* ---------------------------------------------------------------- UTF-8 */

/* Well-formed UTF-8 per RFC 3629: shortest form only, no surrogates, no
 * code points above U+10FFFF, no truncated sequences. */
int utf8_check(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    /* Short ASCII strings (keys, names) answer at once: two overlapping
     * words, or an OR of the bytes. */
    if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, u, 8);
        memcpy(&b, u + n - 8, 8);
        if (!((a | b) & 0x8080808080808080ULL))
            return 0;
    } else if (n < 8) {
        unsigned acc = 0;
        for (size_t k = 0; k < n; k++)
            acc |= u[k];
        if (acc < 0x80)
            return 0;
    }
    while (i < n) {
        /* ASCII fast path: 64 or sixteen (SSE2) or eight bytes at a time;
         * a block with a high bit set skips to its first such byte. */
#ifdef __SSE2__
        while (n - i >= 64) {
            const __m128i *p = (const __m128i *)(const void *)(u + i);
            __m128i any = _mm_or_si128(_mm_or_si128(_mm_loadu_si128(p), _mm_loadu_si128(p + 1)),
                                       _mm_or_si128(_mm_loadu_si128(p + 2), _mm_loadu_si128(p + 3)));
            if (_mm_movemask_epi8(any))
                break;
            i += 64;
        }
        while (n - i >= 16) {
            unsigned m = (unsigned)_mm_movemask_epi8(
                _mm_loadu_si128((const __m128i *)(const void *)(u + i)));
            if (m) {
                i += (size_t)__builtin_ctz(m);
                break;
            }
            i += 16;
        }
#endif
        while (n - i >= 8) {
            uint64_t w;
            memcpy(&w, u + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        unsigned c = u[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0)
                lo = 0xA0; /* overlong */
            else if (c == 0xED)
                hi = 0x9F; /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0)
                lo = 0x90; /* overlong */
            else if (c == 0xF4)
                hi = 0x8F; /* > U+10FFFF */
        } else {
            return EDM_EINVAL; /* continuation byte, C0/C1, F5..FF */
        }
        if (n - i < len)
            return EDM_EINVAL;
        if (u[i + 1] < lo || u[i + 1] > hi)
            return EDM_EINVAL;
        for (size_t k = 2; k < len; k++)
            if (u[i + k] < 0x80 || u[i + k] > 0xBF)
                return EDM_EINVAL;
        i += len;
    }
    return 0;
}

