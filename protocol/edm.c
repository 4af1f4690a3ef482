/* edm.c - Edm type parsing and formatting (see edm.h, SPEC 4.6 and 4.6.1).
 *
 * Everything here is locale-independent: dates use our own civil-calendar
 * arithmetic (no timegm/strftime), names come from fixed English tables and
 * doubles go through strtod_l/snprintf under a private "C" locale. */
#include "protocol/edm.h"

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
#include <time.h>

#include "core/coding.h"

#define TICKS_PER_DAY (86400LL * EDM_TICKS_PER_SECOND)

static const char *const day_names[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const month_names[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* ---------------------------------------------------------------- calendar */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil); valid for any year, including before 1970. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Inverse of days_from_civil: date of a day count since 1970-01-01. */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m)
{
    static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : len[m - 1];
}

/* Floor division and modulo for possibly negative a (b > 0). */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Reads exactly n decimal digits at s into *v; 0 on success. */
static int read_digits(const char *s, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return 0;
}

/* Writes v as exactly n zero-padded digits (v >= 0 and fits). */
static void put_digits(char *out, int n, int64_t v)
{
    for (int i = n - 1; i >= 0; i--) {
        out[i] = (char)('0' + v % 10);
        v /= 10;
    }
}

/* ---------------------------------------------------------------- DateTime */

/* Parses "YYYY-MM-DDThh:mm[:ss[.f+]][Z|+hh:mm|-hh:mm]"; see edm.h. Field
 * values are validated (month lengths, leap years, hour < 24 ...) before
 * the range check so that a malformed date is EINVAL, not ERANGE. */
int edm_datetime_parse(const char *s, size_t n, int64_t *ticks)
{
    int year, mon, day, hh, mi, ss = 0;
    int64_t frac = 0;
    size_t i;

    if (n < 16)
        return EDM_EINVAL;
    if (read_digits(s, 4, &year) || s[4] != '-' || read_digits(s + 5, 2, &mon) ||
        s[7] != '-' || read_digits(s + 8, 2, &day) || (s[10] != 'T' && s[10] != 't') ||
        read_digits(s + 11, 2, &hh) || s[13] != ':' || read_digits(s + 14, 2, &mi))
        return EDM_EINVAL;
    i = 16;
    if (i < n && s[i] == ':') {
        if (n - i < 3 || read_digits(s + i + 1, 2, &ss))
            return EDM_EINVAL;
        i += 3;
        if (i < n && s[i] == '.') {
            size_t digits = 0; /* all fraction digits seen; only 7 are kept */
            i++;
            while (i < n && s[i] >= '0' && s[i] <= '9') {
                if (digits < 7)
                    frac = frac * 10 + (s[i] - '0');
                digits++;
                i++;
            }
            if (digits == 0)
                return EDM_EINVAL;
            for (size_t k = digits; k < 7; k++)
                frac *= 10;
        }
    }

    int64_t offset_min = 0;
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-')) {
        int oh, om;
        int sign = s[i] == '-' ? -1 : 1;
        if (n - i != 6 || read_digits(s + i + 1, 2, &oh) || s[i + 3] != ':' ||
            read_digits(s + i + 4, 2, &om) || oh > 23 || om > 59)
            return EDM_EINVAL;
        offset_min = sign * (oh * 60 + om);
        i += 6;
    }
    if (i != n)
        return EDM_EINVAL;

    if (mon < 1 || mon > 12 || day < 1 || hh > 23 || mi > 59 || ss > 59)
        return EDM_EINVAL;
    if (day > days_in_month(year, mon))
        return EDM_EINVAL;
    if (year == 0) /* year 0 does not exist in .NET: out of range */
        return EDM_ERANGE;

    int64_t days = days_from_civil(year, mon, day);
    int64_t secs = (int64_t)hh * 3600 + mi * 60 + ss - offset_min * 60;
    int64_t t = EDM_UNIX_EPOCH_TICKS + days * TICKS_PER_DAY + secs * EDM_TICKS_PER_SECOND + frac;
    if (t < EDM_DATETIME_MIN_TICKS || t > EDM_DATETIME_MAX_TICKS)
        return EDM_ERANGE;
    *ticks = t;
    return 0;
}

/* Writes "YYYY-MM-DDThh:mm:ss" for ticks (clamped to year 1..9999) and
 * returns the 7-digit fraction through *frac. */
static size_t format_base(int64_t ticks, char *out, int64_t *frac)
{
    if (ticks < 0)
        ticks = 0;
    if (ticks > EDM_DATETIME_MAX_TICKS)
        ticks = EDM_DATETIME_MAX_TICKS;
    int64_t rel = ticks - EDM_UNIX_EPOCH_TICKS;
    int64_t days = floor_div(rel, TICKS_PER_DAY);
    int64_t in_day = rel - days * TICKS_PER_DAY;
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int64_t secs = in_day / EDM_TICKS_PER_SECOND;
    *frac = in_day % EDM_TICKS_PER_SECOND;

    put_digits(out, 4, y);
    out[4] = '-';
    put_digits(out + 5, 2, m);
    out[7] = '-';
    put_digits(out + 8, 2, d);
    out[10] = 'T';
    put_digits(out + 11, 2, secs / 3600);
    out[13] = ':';
    put_digits(out + 14, 2, secs / 60 % 60);
    out[16] = ':';
    put_digits(out + 17, 2, secs % 60);
    return 19;
}

/* Response form: fraction with trailing zeros removed, no dot when zero. */
size_t edm_datetime_format(int64_t ticks, char *out)
{
    int64_t frac;
    size_t len = format_base(ticks, out, &frac);
    if (frac != 0) {
        int digits = 7;
        while (frac % 10 == 0) {
            frac /= 10;
            digits--;
        }
        out[len++] = '.';
        put_digits(out + len, digits, frac);
        len += (size_t)digits;
    }
    out[len++] = 'Z';
    out[len] = '\0';
    return len;
}

/* Error-message / ACL form: always seven fraction digits. */
size_t edm_datetime_format7(int64_t ticks, char *out)
{
    int64_t frac;
    size_t len = format_base(ticks, out, &frac);
    out[len++] = '.';
    put_digits(out + len, 7, frac);
    len += 7;
    out[len++] = 'Z';
    out[len] = '\0';
    return len;
}

/* ---------------------------------------------------------------- RFC 1123 */

/* Unix seconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z. */
#define RFC_MIN_SECONDS (-62135596800LL)
#define RFC_MAX_SECONDS 253402300799LL

/* "Sun, 06 Nov 1994 08:49:37 GMT"; the time is clamped to years 1..9999
 * so the output always has the fixed 29-character shape. */
size_t edm_rfc1123_format(int64_t unix_seconds, char *out)
{
    if (unix_seconds < RFC_MIN_SECONDS)
        unix_seconds = RFC_MIN_SECONDS;
    if (unix_seconds > RFC_MAX_SECONDS)
        unix_seconds = RFC_MAX_SECONDS;
    int64_t days = floor_div(unix_seconds, 86400);
    int64_t secs = unix_seconds - days * 86400;
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int wday = (int)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday (4) */

    memcpy(out, day_names[wday], 3);
    out[3] = ',';
    out[4] = ' ';
    put_digits(out + 5, 2, d);
    out[7] = ' ';
    memcpy(out + 8, month_names[m - 1], 3);
    out[11] = ' ';
    put_digits(out + 12, 4, y);
    out[16] = ' ';
    put_digits(out + 17, 2, secs / 3600);
    out[19] = ':';
    put_digits(out + 20, 2, secs / 60 % 60);
    out[22] = ':';
    put_digits(out + 23, 2, secs % 60);
    memcpy(out + 25, " GMT", 5); /* includes the NUL */
    return 29;
}

/* ASCII-only lower-casing (strncasecmp would follow the locale). */
static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Index of the 3-letter name at s in names[count] (ASCII case-insensitive),
 * or -1. */
static int find_name(const char *s, const char *const *names, int count)
{
    for (int i = 0; i < count; i++) {
        int k = 0;
        while (k < 3 && ascii_lower(s[k]) == ascii_lower(names[i][k]))
            k++;
        if (k == 3)
            return i;
    }
    return -1;
}

/* Parses exactly "Www, DD Mmm YYYY hh:mm:ss GMT" (two-digit day, GMT
 * required); names match case-insensitively and the weekday must agree
 * with the date, as .NET's "r" parser demands. */
int edm_rfc1123_parse(const char *s, size_t n, int64_t *unix_seconds)
{
    int wday, d, m, y, hh, mi, ss;
    if (n != 29)
        return EDM_EINVAL;
    wday = find_name(s, day_names, 7);
    m = find_name(s + 8, month_names, 12);
    if (wday < 0 || s[3] != ',' || s[4] != ' ' || read_digits(s + 5, 2, &d) || s[7] != ' ' ||
        m < 0 || s[11] != ' ' || read_digits(s + 12, 4, &y) || s[16] != ' ' ||
        read_digits(s + 17, 2, &hh) || s[19] != ':' || read_digits(s + 20, 2, &mi) ||
        s[22] != ':' || read_digits(s + 23, 2, &ss) || memcmp(s + 25, " GMT", 4) != 0)
        return EDM_EINVAL;
    m += 1;
    if (y < 1 || d < 1 || d > days_in_month(y, m) || hh > 23 || mi > 59 || ss > 59)
        return EDM_EINVAL;
    int64_t days = days_from_civil(y, m, d);
    if ((int)((days % 7 + 11) % 7) != wday)
        return EDM_EINVAL;
    *unix_seconds = days * 86400 + hh * 3600 + mi * 60 + ss;
    return 0;
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

    /* Shortest round-trip digits from %.*e in the C locale. For normal
     * doubles DBL_DIG (15) digits reproduce any decimal of up to 15
     * significant digits, so when 15 digits round-trip, those digits with
     * trailing zeros removed are the shortest form; otherwise 16 or 17.
     * Subnormals have less precision and take the plain 1..17 search. */
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
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    char digits[20];
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    int exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;

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

/* ---------------------------------------------------------------- clock */

int64_t edm_now_ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return EDM_UNIX_EPOCH_TICKS + (int64_t)ts.tv_sec * EDM_TICKS_PER_SECOND + ts.tv_nsec / 100;
}
