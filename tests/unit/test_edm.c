/* test_edm.c - unit tests for codec/edm.c: DateTime, RFC 1123, Guid,
 * base64, Int32/Int64, Double parse/format, UTF-8/UTF-16 helpers. */
#include "codec/edm.h"

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/unit/tap.h"

#define TICKS_PER_DAY (86400LL * EDM_TICKS_PER_SECOND)

/* ---------------------------------------------------------------- helpers */

static int dt_parse(const char *s, int64_t *t)
{
    return edm_datetime_parse(s, strlen(s), t);
}

/* Parses s and checks it formats back as want. */
static void dt_roundtrip(const char *s, const char *want)
{
    int64_t t = 0;
    char out[32], what[160];
    int rc = dt_parse(s, &t);
    snprintf(what, sizeof what, "datetime %s parses", s);
    TEST_EQ_INT(rc, 0, what);
    edm_datetime_format(t, out);
    snprintf(what, sizeof what, "datetime %s formats as %s", s, want);
    TEST_EQ_STR(out, want, what);
}

static void dt_rejects(const char *s, int want_rc)
{
    int64_t t = 12345;
    char what[160];
    snprintf(what, sizeof what, "datetime \"%s\" -> %s", s,
             want_rc == EDM_ERANGE ? "ERANGE" : "EINVAL");
    TEST_EQ_INT(dt_parse(s, &t), want_rc, what);
}

static void dt_ticks(const char *s, int64_t want)
{
    int64_t t = 0;
    char what[160];
    snprintf(what, sizeof what, "datetime %s ticks", s);
    int rc = dt_parse(s, &t);
    TEST_EQ_INT(rc == 0 ? t : rc, want, what);
}

static void dbl_format(double d, const char *want)
{
    char out[40], what[160];
    edm_double_format(d, out);
    snprintf(what, sizeof what, "double %.17g formats as %s", d, want);
    TEST_EQ_STR(out, want, what);
}

static void dbl_parse_ok(const char *s, int named, double want)
{
    double d = 0;
    char what[160];
    int rc = edm_double_parse(s, strlen(s), named, &d);
    snprintf(what, sizeof what, "double parse \"%s\"", s);
    TEST_CHECK(rc == 0 && (d == want || (isnan(d) && isnan(want))) &&
                   !!signbit(d) == !!signbit(want),
               what);
}

static void dbl_parse_rc(const char *s, int named, int want_rc)
{
    double d = 0;
    char what[160];
    snprintf(what, sizeof what, "double parse \"%s\" (named=%d) -> %s", s, named,
             want_rc == EDM_ERANGE ? "ERANGE" : "EINVAL");
    TEST_EQ_INT(edm_double_parse(s, strlen(s), named, &d), want_rc, what);
}

/* Reference shortest digits: the smallest %.*e precision that parses
 * back to d, mantissa digits with trailing zeros removed. */
static void shortest_ref(double d, char *digits)
{
    char sci[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec - 1, d);
        if (strtod(sci, NULL) == d)
            break;
    }
    int nd = 0;
    for (const char *p = sci; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
}

/* Significant digits of a formatted double: mantissa digits without
 * leading or trailing zeros (so "0.00012" -> "12", "1.5E+300" -> "15"). */
static void significant_digits(const char *s, char *digits)
{
    int nd = 0;
    for (const char *p = s; *p && *p != 'E'; p++)
        if (*p >= '0' && *p <= '9' && (nd > 0 || *p != '0'))
            digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
}

/* The formatted text carries exactly the reference shortest digits. */
static int dbl_is_shortest(double d)
{
    char out[40], a[40], b[40];
    edm_double_format(d, out);
    significant_digits(out, a);
    shortest_ref(d, b);
    return strcmp(a, b) == 0;
}

/* format -> parse must give back the identical bits. */
static int dbl_roundtrips(double d)
{
    char out[40];
    double back;
    size_t n = edm_double_format(d, out);
    if (n != strlen(out) || n >= 40)
        return 0;
    if (edm_double_parse(out, n, 1, &back) != 0)
        return 0;
    return memcmp(&back, &d, sizeof d) == 0 || (isnan(d) && isnan(back));
}

/* ---------------------------------------------------------------- DateTime */

static void test_datetime_values(void)
{
    dt_ticks("1601-01-01T00:00:00Z", EDM_DATETIME_MIN_TICKS);
    dt_ticks("9999-12-31T23:59:59.9999999Z", EDM_DATETIME_MAX_TICKS);
    dt_ticks("1970-01-01T00:00:00Z", EDM_UNIX_EPOCH_TICKS);
    dt_ticks("2024-06-01T08:30:00Z", 638528274000000000LL);
    dt_ticks("2000-02-29T12:00:00Z", 630874224000000000LL);
    dt_ticks("1700-03-01T00:00:00Z", 536203584000000000LL);
    dt_ticks("1970-01-01T00:00:00.0000001Z", EDM_UNIX_EPOCH_TICKS + 1);
    dt_ticks("1969-12-31T23:59:59.9999999Z", EDM_UNIX_EPOCH_TICKS - 1);
    /* more than 7 fraction digits are truncated, not rounded */
    dt_ticks("9999-12-31T23:59:59.99999999999Z", EDM_DATETIME_MAX_TICKS);
    dt_ticks("1970-01-01T00:00:00.12345678Z", EDM_UNIX_EPOCH_TICKS + 1234567);
    /* offsets convert to UTC */
    dt_ticks("1601-01-01T01:00:00+01:00", EDM_DATETIME_MIN_TICKS);
    dt_ticks("9999-12-31T22:59:59.9999999-01:00", EDM_DATETIME_MAX_TICKS);
    dt_ticks("1970-01-01T05:30:00+05:30", EDM_UNIX_EPOCH_TICKS);
    dt_ticks("1970-01-01T00:00:00-00:00", EDM_UNIX_EPOCH_TICKS);
    dt_ticks("1970-01-01T00:00:00+00:00", EDM_UNIX_EPOCH_TICKS);
    /* no zone = UTC; lower-case t/z accepted */
    dt_ticks("1970-01-01T00:00:00", EDM_UNIX_EPOCH_TICKS);
    dt_ticks("1970-01-01t00:00:00z", EDM_UNIX_EPOCH_TICKS);
    /* seconds optional */
    dt_ticks("1970-01-01T00:01Z", EDM_UNIX_EPOCH_TICKS + 60 * EDM_TICKS_PER_SECOND);
    dt_ticks("1970-01-01T00:01", EDM_UNIX_EPOCH_TICKS + 60 * EDM_TICKS_PER_SECOND);
    dt_ticks("1970-01-01T00:01+00:01", EDM_UNIX_EPOCH_TICKS);
}

static void test_datetime_format(void)
{
    dt_roundtrip("2024-06-01T08:30:00Z", "2024-06-01T08:30:00Z");
    dt_roundtrip("2024-06-01T08:30:00.0000000Z", "2024-06-01T08:30:00Z");
    dt_roundtrip("2020-09-17T00:00:00.9999900Z", "2020-09-17T00:00:00.99999Z");
    dt_roundtrip("2020-09-17T00:00:00.99999Z", "2020-09-17T00:00:00.99999Z");
    dt_roundtrip("2022-02-01T20:52:35.2732889Z", "2022-02-01T20:52:35.2732889Z");
    dt_roundtrip("2022-02-01T20:52:27.4746800Z", "2022-02-01T20:52:27.47468Z");
    dt_roundtrip("2022-02-01T20:52:27.0000001Z", "2022-02-01T20:52:27.0000001Z");
    dt_roundtrip("2022-02-01T20:52:27.1Z", "2022-02-01T20:52:27.1Z");
    dt_roundtrip("2022-02-01T20:52:27.100Z", "2022-02-01T20:52:27.1Z");
    dt_roundtrip("2022-02-01T20:52:27.050Z", "2022-02-01T20:52:27.05Z");
    dt_roundtrip("2024-06-01T08:30:00.123456789Z", "2024-06-01T08:30:00.1234567Z");
    dt_roundtrip("2012-01-02T23:00:00", "2012-01-02T23:00:00Z");
    dt_roundtrip("2024-06-01T10:30:00+02:00", "2024-06-01T08:30:00Z");
    dt_roundtrip("2024-06-01T00:30:00+02:00", "2024-05-31T22:30:00Z");
    dt_roundtrip("2024-03-01T01:00:00+02:00", "2024-02-29T23:00:00Z");
    dt_roundtrip("2023-03-01T01:00:00+02:00", "2023-02-28T23:00:00Z");
    dt_roundtrip("2024-12-31T23:30:00-01:00", "2025-01-01T00:30:00Z");
    dt_roundtrip("2024-06-01T08:30:00.5-05:45", "2024-06-01T14:15:00.5Z");
    dt_roundtrip("2024-06-01T08:30Z", "2024-06-01T08:30:00Z");
    dt_roundtrip("1601-01-01T00:00:00Z", "1601-01-01T00:00:00Z");
    dt_roundtrip("9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.9999999Z");
    dt_roundtrip("2000-02-29T00:00:00Z", "2000-02-29T00:00:00Z");
    dt_roundtrip("2024-02-29T23:59:59Z", "2024-02-29T23:59:59Z");
    dt_roundtrip("1904-02-29T00:00:00Z", "1904-02-29T00:00:00Z");

    char out[32];
    size_t n = edm_datetime_format(EDM_UNIX_EPOCH_TICKS, out);
    TEST_EQ_INT(n, strlen("1970-01-01T00:00:00Z"), "format returns the length");
    n = edm_datetime_format(EDM_DATETIME_MAX_TICKS, out);
    TEST_EQ_INT(n, 28, "longest format is 28 characters");
    n = edm_datetime_format(0, out);
    TEST_EQ_STR(out, "0001-01-01T00:00:00Z", "ticks 0 formats as 0001-01-01");

    n = edm_datetime_format7(EDM_UNIX_EPOCH_TICKS, out);
    TEST_EQ_STR(out, "1970-01-01T00:00:00.0000000Z", "format7 zero fraction");
    TEST_EQ_INT(n, 28, "format7 length");
    edm_datetime_format7(638528274000000000LL + 1000000, out);
    TEST_EQ_STR(out, "2024-06-01T08:30:00.1000000Z", "format7 keeps trailing zeros");
    edm_datetime_format7(EDM_DATETIME_MAX_TICKS, out);
    TEST_EQ_STR(out, "9999-12-31T23:59:59.9999999Z", "format7 max");
    edm_datetime_format7(EDM_DATETIME_MIN_TICKS + 12345, out);
    TEST_EQ_STR(out, "1601-01-01T00:00:00.0012345Z", "format7 min + 12345 ticks");
}

static void test_datetime_errors(void)
{
    /* out of range */
    dt_rejects("1600-12-31T23:59:59Z", EDM_ERANGE);
    dt_rejects("1600-12-31T23:59:59.9999999Z", EDM_ERANGE);
    dt_rejects("0001-01-01T00:00:00Z", EDM_ERANGE);
    dt_rejects("0000-01-01T00:00:00Z", EDM_ERANGE);
    dt_rejects("1601-01-01T00:59:59+01:00", EDM_ERANGE);
    dt_rejects("9999-12-31T23:00:00-01:00", EDM_ERANGE);
    dt_rejects("9999-12-31T23:59:59.9999999-00:01", EDM_ERANGE);
    /* impossible dates and times */
    dt_rejects("2023-02-29T00:00:00Z", EDM_EINVAL);
    dt_rejects("1900-02-29T00:00:00Z", EDM_EINVAL);
    dt_rejects("2100-02-29T00:00:00Z", EDM_EINVAL);
    dt_rejects("2024-02-30T00:00:00Z", EDM_EINVAL);
    dt_rejects("2024-04-31T00:00:00Z", EDM_EINVAL);
    dt_rejects("2024-06-31T00:00:00Z", EDM_EINVAL);
    dt_rejects("2024-01-32T00:00:00Z", EDM_EINVAL);
    dt_rejects("2024-00-10T00:00:00Z", EDM_EINVAL);
    dt_rejects("2024-13-10T00:00:00Z", EDM_EINVAL);
    dt_rejects("2024-01-00T00:00:00Z", EDM_EINVAL);
    dt_rejects("2024-01-01T24:00:00Z", EDM_EINVAL);
    dt_rejects("2024-01-01T23:60:00Z", EDM_EINVAL);
    dt_rejects("2024-01-01T23:59:60Z", EDM_EINVAL);
    dt_rejects("2024-01-01T00:00:00+24:00", EDM_EINVAL);
    dt_rejects("2024-01-01T00:00:00+01:60", EDM_EINVAL);
    /* malformed */
    dt_rejects("", EDM_EINVAL);
    dt_rejects("2024", EDM_EINVAL);
    dt_rejects("2024-06-01", EDM_EINVAL);
    dt_rejects("2024-06-01T", EDM_EINVAL);
    dt_rejects("2024-06-01T08", EDM_EINVAL);
    dt_rejects("2024-06-01T08:3", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:0", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:0Z", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00.", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00.Z", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00ZZ", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00Z ", EDM_EINVAL);
    dt_rejects(" 2024-06-01T08:30:00Z", EDM_EINVAL);
    dt_rejects("2024-06-01 08:30:00Z", EDM_EINVAL);
    dt_rejects("2024-6-01T08:30:00Z", EDM_EINVAL);
    dt_rejects("2024-06-1T08:30:00Z", EDM_EINVAL);
    dt_rejects("24-06-01T08:30:00Z", EDM_EINVAL);
    dt_rejects("+2024-06-01T08:30:00Z", EDM_EINVAL);
    dt_rejects("20240601T083000Z", EDM_EINVAL);
    dt_rejects("2024/06/01T08:30:00Z", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00+02", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00+0200", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00+02:0", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00+02:000", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00Z+02:00", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00.5.5Z", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00.-5Z", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30.5Z", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00 Z", EDM_EINVAL);
    dt_rejects("2024-06-01T08:30:00GMT", EDM_EINVAL);
    dt_rejects("x024-06-01T08:30:00Z", EDM_EINVAL);

    /* the length argument is honoured: no reading past n */
    int64_t t = 0;
    TEST_EQ_INT(edm_datetime_parse("2024-06-01T08:30:00Zjunk", 20, &t), 0, "length bounds the parse");
    TEST_EQ_INT(t, 638528274000000000LL, "length-bounded parse value");
    TEST_EQ_INT(edm_datetime_parse("2024-06-01T08:30:00Z", 15, &t), EDM_EINVAL, "truncated by length");
    TEST_EQ_INT(edm_datetime_parse("2024-06-01T08:30:00\0Z", 21, &t), EDM_EINVAL, "embedded NUL");
    t = 777;
    dt_parse("2023-02-29T00:00:00Z", &t);
    TEST_EQ_INT(t, 777, "failed parse leaves the output alone");
}

/* Writes "YYYY-MM-DDThh:mm:ssZ" by hand (snprintf is too slow for the
 * 3.6 million dates below under the sanitizers). */
static void make_date(char *o, int y, int m, int d, int sec)
{
    const int v[6] = {y, m, d, sec / 3600, sec / 60 % 60, sec % 60};
    const int width[6] = {4, 2, 2, 2, 2, 2};
    const char sep[6] = {'-', '-', 'T', ':', ':', 'Z'};
    for (int f = 0; f < 6; f++) {
        for (int k = width[f] - 1, x = v[f]; k >= 0; k--, x /= 10)
            o[k] = (char)('0' + x % 10);
        o += width[f];
        *o++ = sep[f];
    }
    *o = '\0';
}

/* Every day from 0001-01-01 to 9999-12-31, counted independently with
 * month lengths: format must produce the date, parse (1601+) the ticks. */
static void test_datetime_every_day(void)
{
    static const int mlen[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t ticks = 0;
    long fmt_bad = 0, parse_bad = 0, days = 0;
    char want[64], got[32];
    for (int y = 1; y <= 9999; y++) {
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        for (int m = 1; m <= 12; m++) {
            int dim = mlen[m - 1] + (m == 2 && leap);
            for (int d = 1; d <= dim; d++) {
                /* vary the time of day so hours/minutes/seconds are covered */
                int64_t sec = (days * 7919) % 86400;
                int64_t t = ticks + sec * EDM_TICKS_PER_SECOND;
                make_date(want, y, m, d, (int)sec);
                edm_datetime_format(t, got);
                if (strcmp(got, want) != 0 && fmt_bad++ < 3)
                    printf("# format %lld: got %s want %s\n", (long long)t, got, want);
                if (y >= 1601) {
                    int64_t back = -1;
                    if ((edm_datetime_parse(want, strlen(want), &back) != 0 || back != t) &&
                        parse_bad++ < 3)
                        printf("# parse %s: got %lld want %lld\n", want, (long long)back,
                               (long long)t);
                }
                ticks += TICKS_PER_DAY;
                days++;
            }
        }
    }
    TEST_EQ_INT(days, 3652059, "day count 0001..9999");
    TEST_EQ_INT(ticks, EDM_DATETIME_MAX_TICKS + 1, "ticks after the last day");
    TEST_EQ_INT(fmt_bad, 0, "every day formats correctly");
    TEST_EQ_INT(parse_bad, 0, "every day from 1601 parses correctly");
}

/* ---------------------------------------------------------------- RFC 1123 */

static void test_rfc1123(void)
{
    char out[30];
    int64_t s = 0;
    size_t n = edm_rfc1123_format(784111777, out);
    TEST_EQ_STR(out, "Sun, 06 Nov 1994 08:49:37 GMT", "rfc1123 format RFC example");
    TEST_EQ_INT(n, 29, "rfc1123 length");
    edm_rfc1123_format(0, out);
    TEST_EQ_STR(out, "Thu, 01 Jan 1970 00:00:00 GMT", "rfc1123 epoch");
    edm_rfc1123_format(-1, out);
    TEST_EQ_STR(out, "Wed, 31 Dec 1969 23:59:59 GMT", "rfc1123 before epoch");
    edm_rfc1123_format(951782400, out);
    TEST_EQ_STR(out, "Tue, 29 Feb 2000 00:00:00 GMT", "rfc1123 leap day");
    edm_rfc1123_format(-2208988800LL, out);
    TEST_EQ_STR(out, "Mon, 01 Jan 1900 00:00:00 GMT", "rfc1123 1900");
    edm_rfc1123_format(253402300799LL, out);
    TEST_EQ_STR(out, "Fri, 31 Dec 9999 23:59:59 GMT", "rfc1123 last second");
    edm_rfc1123_format(-62135596800LL, out);
    TEST_EQ_STR(out, "Mon, 01 Jan 0001 00:00:00 GMT", "rfc1123 first second");

    const char *ex = "Sun, 06 Nov 1994 08:49:37 GMT";
    TEST_EQ_INT(edm_rfc1123_parse(ex, strlen(ex), &s), 0, "rfc1123 parse example");
    TEST_EQ_INT(s, 784111777, "rfc1123 parse value");
    ex = "Tue, 07 Apr 2026 12:34:56 GMT";
    TEST_EQ_INT(edm_rfc1123_parse(ex, strlen(ex), &s), 0, "rfc1123 parse 2026");
    edm_rfc1123_format(s, out);
    TEST_EQ_STR(out, ex, "rfc1123 2026 round trip");
    ex = "sun, 06 nov 1994 08:49:37 GMT";
    TEST_EQ_INT(edm_rfc1123_parse(ex, strlen(ex), &s), 0, "rfc1123 names case-insensitive");
    TEST_EQ_INT(s, 784111777, "rfc1123 lower-case value");

    static const char *const bad[] = {
        "Sun, 6 Nov 1994 08:49:37 GMT",    /* one-digit day */
        "Sun,  6 Nov 1994 08:49:37 GMT",   /* space-padded day */
        "Sun, 06 Nov 1994 08:49:37 UTC",   /* not GMT */
        "Sun, 06 Nov 1994 08:49:37 +0000", /* numeric zone */
        "Sun, 06 Nov 1994 08:49:37",       /* no zone */
        "Mon, 06 Nov 1994 08:49:37 GMT",   /* wrong weekday */
        "Sunday, 06-Nov-94 08:49:37 GMT",  /* RFC 850 */
        "Sun Nov  6 08:49:37 1994",        /* asctime */
        "Sun, 06 Nov 1994 08:49:37 GMT ",  /* trailing space */
        "Sun, 06 Nox 1994 08:49:37 GMT",   /* bad month */
        "Xyz, 06 Nov 1994 08:49:37 GMT",   /* bad day name */
        "Thu, 30 Feb 2012 00:00:00 GMT",   /* no such date */
        "Sun, 06 Nov 1994 24:00:00 GMT",   /* hour */
        "Sun, 06 Nov 1994 08:60:00 GMT",   /* minute */
        "Sun, 06 Nov 1994 08:49:60 GMT",   /* second */
        "Sun, 06 Nov 1994 08:49:3x GMT",   /* digit */
        "Sun; 06 Nov 1994 08:49:37 GMT",   /* punctuation */
        "Sun, 06 Nov 1994 08.49.37 GMT",
        "Sat, 00 Nov 1994 08:49:37 GMT",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char what[80];
        snprintf(what, sizeof what, "rfc1123 rejects \"%s\"", bad[i]);
        TEST_EQ_INT(edm_rfc1123_parse(bad[i], strlen(bad[i]), &s), EDM_EINVAL, what);
    }

    /* format -> parse over a wide spread of instants */
    long bad_rt = 0;
    for (int64_t t = -62135596800LL; t <= 253402300799LL; t += 9876543) {
        int64_t back = 0;
        edm_rfc1123_format(t, out);
        if (edm_rfc1123_parse(out, strlen(out), &back) != 0 || back != t)
            bad_rt++;
    }
    TEST_EQ_INT(bad_rt, 0, "rfc1123 round trip over years 1..9999");
}

/* ---------------------------------------------------------------- Guid */

static void test_guid(void)
{
    uint8_t g[16];
    char out[37];
    const char *s = "0F8FAD5B-D9CB-469F-A165-70867728950E";
    TEST_EQ_INT(edm_guid_parse(s, 36, g), 0, "guid upper-case parses");
    TEST_EQ_INT(g[0], 0x0F, "guid first byte");
    TEST_EQ_INT(g[15], 0x0E, "guid last byte");
    TEST_EQ_INT(edm_guid_format(g, out), 36, "guid format length");
    TEST_EQ_STR(out, "0f8fad5b-d9cb-469f-a165-70867728950e", "guid formats lower-case");

    s = "{0f8fad5b-d9cb-469f-A165-70867728950E}";
    memset(g, 0, sizeof g);
    TEST_EQ_INT(edm_guid_parse(s, strlen(s), g), 0, "guid in braces parses");
    edm_guid_format(g, out);
    TEST_EQ_STR(out, "0f8fad5b-d9cb-469f-a165-70867728950e", "guid in braces value");

    uint8_t all[16];
    for (int i = 0; i < 16; i++)
        all[i] = (uint8_t)(i * 17);
    edm_guid_format(all, out);
    TEST_EQ_STR(out, "00112233-4455-6677-8899-aabbccddeeff", "guid byte order");
    TEST_EQ_INT(edm_guid_parse(out, 36, g), 0, "guid reparse");
    TEST_CHECK(memcmp(g, all, 16) == 0, "guid round trip bytes");

    static const char *const bad[] = {
        "",
        "0f8fad5b-d9cb-469f-a165-70867728950",    /* 35 */
        "0f8fad5b-d9cb-469f-a165-70867728950e0",  /* 37 */
        "0f8fad5bd9cb469fa16570867728950e",       /* no hyphens */
        "0f8fad5b-d9cb-469f-a165-70867728950g",   /* bad hex */
        "0f8fad5bd-9cb-469f-a165-70867728950e",   /* hyphen misplaced */
        "0f8fad5b-d9cb-469f-a165_70867728950e",
        "{0f8fad5b-d9cb-469f-a165-70867728950e",  /* unbalanced */
        "0f8fad5b-d9cb-469f-a165-70867728950e}",
        "(0f8fad5b-d9cb-469f-a165-70867728950e)", /* parens */
        "{{0f8fad5b-d9cb-469f-a165-70867728950e}}",
        " 0f8fad5b-d9cb-469f-a165-70867728950e",
        "0x8fad5b-d9cb-469f-a165-70867728950e",
        "+f8fad5b-d9cb-469f-a165-70867728950e",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char what[80];
        snprintf(what, sizeof what, "guid rejects \"%s\"", bad[i]);
        TEST_EQ_INT(edm_guid_parse(bad[i], strlen(bad[i]), g), EDM_EINVAL, what);
    }
}

/* ---------------------------------------------------------------- base64 */

static void test_base64(void)
{
    struct arena *a = arena_new(4096);
    struct buf b;
    buf_init(&b);
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        char what[80];
        buf_reset(&b);
        edm_base64_encode(&b, (const uint8_t *)plain[i], strlen(plain[i]));
        snprintf(what, sizeof what, "base64 encode \"%s\"", plain[i]);
        TEST_EQ_STR(b.data ? b.data : "", enc[i], what);
        uint8_t *out = NULL;
        size_t outlen = 99;
        int rc = edm_base64_decode(a, enc[i], strlen(enc[i]), &out, &outlen);
        snprintf(what, sizeof what, "base64 decode \"%s\"", enc[i]);
        TEST_CHECK(rc == 0 && out != NULL && outlen == strlen(plain[i]) &&
                       memcmp(out, plain[i], outlen) == 0,
                   what);
    }

    /* encode appends to what is already in the buffer */
    buf_reset(&b);
    buf_puts(&b, "x=");
    edm_base64_encode(&b, (const uint8_t *)"hi", 2);
    TEST_EQ_STR(b.data, "x=aGk=", "base64 encode appends");
    TEST_EQ_INT(b.len, 6, "base64 encode length");

    /* all byte values, every length 0..300 */
    uint8_t bytes[300];
    for (int i = 0; i < 300; i++)
        bytes[i] = (uint8_t)(i * 7 + 3);
    int bad_rt = 0;
    for (size_t len = 0; len <= 300; len++) {
        buf_reset(&b);
        edm_base64_encode(&b, bytes, len);
        uint8_t *out;
        size_t outlen;
        if (b.len != (len + 2) / 3 * 4 ||
            edm_base64_decode(a, b.data ? b.data : "", b.len, &out, &outlen) != 0 ||
            outlen != len || memcmp(out, bytes, len) != 0)
            bad_rt++;
    }
    TEST_EQ_INT(bad_rt, 0, "base64 round trip lengths 0..300");
    buf_reset(&b);
    uint8_t ff[3] = {0xFB, 0xFF, 0xBF};
    edm_base64_encode(&b, ff, 3);
    TEST_EQ_STR(b.data, "+/+/", "base64 uses + and /");

    static const char *const bad[] = {
        "Zg=", "Zg", "Z", "Zm9vY", "Z===", "====", "=Zg=", "Zm9v!A==", "Zm=v", "Zg==Zg==",
        " Zg=", "Zg== ", "Zm9vYg=a", "-_-_", "Zm9v\nYmFy", "Zm9vYmFy=", "Zm9vYmFy====", "Zm8=\0\0\0\0",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char what[80];
        uint8_t *out;
        size_t outlen;
        size_t len = strlen(bad[i]);
        if (i == sizeof bad / sizeof bad[0] - 1)
            len = 8; /* embedded NULs */
        snprintf(what, sizeof what, "base64 rejects \"%s\"", bad[i]);
        for (char *c = what; *c; c++)
            if (*c == '\n')
                *c = '?';
        TEST_EQ_INT(edm_base64_decode(a, bad[i], len, &out, &outlen), EDM_EINVAL, what);
    }
    /* non-zero pad bits: tolerated like .NET */
    uint8_t *out;
    size_t outlen;
    TEST_CHECK(edm_base64_decode(a, "Zh==", 4, &out, &outlen) == 0 && outlen == 1 && out[0] == 'f',
               "base64 tolerates non-zero pad bits");
    buf_free(&b);
    arena_free(a);
}

/* ---------------------------------------------------------------- integers */

static void i32_ok(const char *s, int32_t want)
{
    int32_t v = 0;
    char what[80];
    snprintf(what, sizeof what, "int32 \"%s\"", s);
    int rc = edm_int32_parse(s, strlen(s), &v);
    TEST_CHECK(rc == 0 && v == want, what);
}

static void i32_rc(const char *s, int want)
{
    int32_t v = 0;
    char what[80];
    snprintf(what, sizeof what, "int32 \"%s\" rejected", s);
    TEST_EQ_INT(edm_int32_parse(s, strlen(s), &v), want, what);
}

static void i64_ok(const char *s, int64_t want)
{
    int64_t v = 0;
    char what[80];
    snprintf(what, sizeof what, "int64 \"%s\"", s);
    int rc = edm_int64_parse(s, strlen(s), &v);
    TEST_CHECK(rc == 0 && v == want, what);
}

static void i64_rc(const char *s, int want)
{
    int64_t v = 0;
    char what[80];
    snprintf(what, sizeof what, "int64 \"%s\" rejected", s);
    TEST_EQ_INT(edm_int64_parse(s, strlen(s), &v), want, what);
}

static void test_integers(void)
{
    i32_ok("0", 0);
    i32_ok("-0", 0);
    i32_ok("42", 42);
    i32_ok("-42", -42);
    i32_ok("007", 7);
    i32_ok("2147483647", INT32_MAX);
    i32_ok("-2147483648", INT32_MIN);
    i32_ok("0002147483647", INT32_MAX);
    i32_rc("2147483648", EDM_ERANGE);
    i32_rc("-2147483649", EDM_ERANGE);
    i32_rc("3000000000", EDM_ERANGE);
    i32_rc("99999999999999999999999999", EDM_ERANGE);
    i32_rc("", EDM_EINVAL);
    i32_rc("-", EDM_EINVAL);
    i32_rc("+1", EDM_EINVAL);
    i32_rc(" 1", EDM_EINVAL);
    i32_rc("1 ", EDM_EINVAL);
    i32_rc("1.0", EDM_EINVAL);
    i32_rc("1e3", EDM_EINVAL);
    i32_rc("--1", EDM_EINVAL);
    i32_rc("0x10", EDM_EINVAL);
    i32_rc("99999999999x", EDM_EINVAL);

    i64_ok("0", 0);
    i64_ok("-0", 0);
    i64_ok("255", 255);
    i64_ok("12345543221", 12345543221LL);
    i64_ok("9007199254740993", 9007199254740993LL);
    i64_ok("9223372036854775807", INT64_MAX);
    i64_ok("-9223372036854775808", INT64_MIN);
    i64_ok("-9223372036854775807", -INT64_MAX);
    i64_ok("00000000000000000000009223372036854775807", INT64_MAX);
    i64_rc("9223372036854775808", EDM_ERANGE);
    i64_rc("-9223372036854775809", EDM_ERANGE);
    i64_rc("18446744073709551615", EDM_ERANGE);
    i64_rc("18446744073709551616", EDM_ERANGE);
    i64_rc("92233720368547758070", EDM_ERANGE);
    i64_rc("", EDM_EINVAL);
    i64_rc("-", EDM_EINVAL);
    i64_rc("+5", EDM_EINVAL);
    i64_rc("abc", EDM_EINVAL);
    i64_rc("12a", EDM_EINVAL);
    i64_rc("1.5", EDM_EINVAL);
    i64_rc("1e10", EDM_EINVAL);
    i64_rc(" 12", EDM_EINVAL);
    i64_rc("1-2", EDM_EINVAL);

    int64_t v = 0;
    TEST_EQ_INT(edm_int64_parse("123456", 3, &v), 0, "int64 honours length");
    TEST_EQ_INT(v, 123, "int64 length-bounded value");
    int32_t w = 0;
    TEST_EQ_INT(edm_int32_parse("12\0" "3", 4, &w), EDM_EINVAL, "int32 embedded NUL");
}

/* ---------------------------------------------------------------- doubles */

static void test_double_parse(void)
{
    dbl_parse_ok("12.5", 0, 12.5);
    dbl_parse_ok("0", 0, 0.0);
    dbl_parse_ok("-0", 0, -0.0);
    dbl_parse_ok("-0.0", 0, -0.0);
    dbl_parse_ok("3.", 0, 3.0);
    dbl_parse_ok(".5", 0, 0.5);
    dbl_parse_ok("+1.5", 0, 1.5);
    dbl_parse_ok("5", 0, 5.0);
    dbl_parse_ok("3e2", 0, 300.0);
    dbl_parse_ok("3E-2", 0, 0.03);
    dbl_parse_ok("1.23456789012346e+24", 0, 1.23456789012346e24);
    dbl_parse_ok("1.23456789012346E+24", 0, 1.23456789012346e24);
    dbl_parse_ok("1E+300", 0, 1e300);
    dbl_parse_ok("1.7976931348623157e308", 0, DBL_MAX);
    dbl_parse_ok("-1.7976931348623157E+308", 0, -DBL_MAX);
    dbl_parse_ok("2.2250738585072014E-308", 0, DBL_MIN);
    dbl_parse_ok("5E-324", 0, 4.9406564584124654e-324);
    dbl_parse_ok("1e-400", 0, 0.0);
    dbl_parse_ok("-1e-400", 0, -0.0);
    dbl_parse_ok("100000000000000.0", 0, 1e14);
    dbl_parse_ok("0.30000000000000004", 0, 0.1 + 0.2);
    dbl_parse_ok("NaN", 1, NAN);
    dbl_parse_ok("Infinity", 1, INFINITY);
    dbl_parse_ok("-Infinity", 1, -INFINITY);
    dbl_parse_ok("INF", 1, INFINITY);
    dbl_parse_ok("-INF", 1, -INFINITY);
    dbl_parse_ok("12.5", 1, 12.5);

    /* a long number text (beyond the internal stack copy) */
    char longnum[400];
    memset(longnum, '0', sizeof longnum);
    longnum[0] = '0';
    longnum[1] = '.';
    longnum[2] = '1';
    longnum[399] = '\0';
    dbl_parse_ok(longnum, 0, 0.1);
    memset(longnum, '0', sizeof longnum);
    longnum[0] = '1';
    longnum[301] = '\0';
    dbl_parse_ok(longnum, 0, 1e300);
    char longint[330];
    memset(longint, '9', sizeof longint - 1);
    longint[329] = '\0';
    dbl_parse_rc(longint, 0, EDM_ERANGE);

    dbl_parse_rc("1.797693134862316e308", 0, EDM_ERANGE);
    dbl_parse_rc("1.8e308", 0, EDM_ERANGE);
    dbl_parse_rc("-1.8e308", 0, EDM_ERANGE);
    dbl_parse_rc("1e999999", 1, EDM_ERANGE);
    dbl_parse_rc("", 0, EDM_EINVAL);
    dbl_parse_rc("", 1, EDM_EINVAL);
    dbl_parse_rc("-", 0, EDM_EINVAL);
    dbl_parse_rc(".", 0, EDM_EINVAL);
    dbl_parse_rc("-.e1", 0, EDM_EINVAL);
    dbl_parse_rc("e5", 0, EDM_EINVAL);
    dbl_parse_rc("1e", 0, EDM_EINVAL);
    dbl_parse_rc("1e+", 0, EDM_EINVAL);
    dbl_parse_rc("1..2", 0, EDM_EINVAL);
    dbl_parse_rc("1.2.3", 0, EDM_EINVAL);
    dbl_parse_rc("1,5", 0, EDM_EINVAL);
    dbl_parse_rc(" 1", 0, EDM_EINVAL);
    dbl_parse_rc("1 ", 0, EDM_EINVAL);
    dbl_parse_rc("0x10", 0, EDM_EINVAL);
    dbl_parse_rc("0x1p3", 0, EDM_EINVAL);
    dbl_parse_rc("abc", 0, EDM_EINVAL);
    dbl_parse_rc("--1", 0, EDM_EINVAL);
    dbl_parse_rc("1e5.5", 0, EDM_EINVAL);
    dbl_parse_rc("NaN", 0, EDM_EINVAL);
    dbl_parse_rc("Infinity", 0, EDM_EINVAL);
    dbl_parse_rc("-Infinity", 0, EDM_EINVAL);
    dbl_parse_rc("nan", 1, EDM_EINVAL);
    dbl_parse_rc("inf", 1, EDM_EINVAL);
    dbl_parse_rc("infinity", 1, EDM_EINVAL);
    dbl_parse_rc("+Infinity", 1, EDM_EINVAL);
    dbl_parse_rc("NaN ", 1, EDM_EINVAL);
    dbl_parse_rc("Infinit", 1, EDM_EINVAL);

    double d = 0;
    TEST_EQ_INT(edm_double_parse("12.5e3", 4, 0, &d), 0, "double honours length");
    TEST_CHECK(d == 12.5, "double length-bounded value");
}

static void test_double_format(void)
{
    dbl_format(12.5, "12.5");
    dbl_format(3.14, "3.14");
    dbl_format(5.0, "5.0");
    dbl_format(-3.0, "-3.0");
    dbl_format(100.0, "100.0");
    dbl_format(0.0, "0.0");
    dbl_format(-0.0, "-0.0");
    dbl_format(0.1, "0.1");
    dbl_format(-0.5, "-0.5");
    dbl_format(1.0 / 3.0, "0.3333333333333333");
    dbl_format(2.0 / 3.0, "0.6666666666666666");
    dbl_format(0.1 + 0.2, "0.30000000000000004");
    dbl_format(1e14, "100000000000000.0");
    dbl_format(123456789012345.0, "123456789012345.0");
    dbl_format(99999999999999.5, "99999999999999.5");
    dbl_format(1e15, "1E+15");
    dbl_format(-1e15, "-1E+15");
    dbl_format(1234567890123456.0, "1.234567890123456E+15");
    dbl_format(1e21, "1E+21");
    dbl_format(1e23, "1E+23");
    dbl_format(123456789012345680000.0, "1.2345678901234568E+20");
    dbl_format(1.23456789012346e24, "1.23456789012346E+24");
    dbl_format(1.5e300, "1.5E+300");
    dbl_format(1e100, "1E+100");
    dbl_format(0.0001, "0.0001");
    dbl_format(0.00012, "0.00012");
    dbl_format(0.00012345, "0.00012345");
    dbl_format(1e-5, "1E-05");
    dbl_format(1.5e-7, "1.5E-07");
    dbl_format(-2.5e-10, "-2.5E-10");
    dbl_format(DBL_MAX, "1.7976931348623157E+308");
    dbl_format(-DBL_MAX, "-1.7976931348623157E+308");
    dbl_format(DBL_MIN, "2.2250738585072014E-308");
    dbl_format(4.9406564584124654e-324, "5E-324");
    dbl_format(9007199254740993.0, "9.007199254740992E+15");
    dbl_format(NAN, "NaN");
    dbl_format(INFINITY, "Infinity");
    dbl_format(-INFINITY, "-Infinity");

    char out[40];
    TEST_EQ_INT(edm_double_format(12.5, out), 4, "double format returns the length");

    static const double vals[] = {
        0.1, 0.2, 0.3, 1.0 / 3.0, 2.0 / 3.0, 1e21, 1e22, 1e23, 123456789012345680000.0,
        DBL_MAX, -DBL_MAX, DBL_MIN, DBL_MIN / 2, 4.9406564584124654e-324, 2.225073858507201e-308,
        DBL_EPSILON, 1 + DBL_EPSILON, 9007199254740991.0, 9007199254740992.0, 1e-5, 1e-4,
        123.456, 5e-324 * 3, 1.7976931348623155e308, 0.000001, 1e15 - 1, 1e15 + 1, 1e16,
        299792458.0, 6.02214076e23, 1.602176634e-19, 3.141592653589793, 2.718281828459045,
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        if (!dbl_roundtrips(vals[i]) || !dbl_roundtrips(-vals[i])) {
            bad++;
            edm_double_format(vals[i], out);
            printf("# no round trip for %.17g (%s)\n", vals[i], out);
        }
    }
    TEST_EQ_INT(bad, 0, "named doubles round-trip");

    /* pseudo-random bit patterns (xorshift64, fixed seed) */
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    long tried = 0;
    int notshort = 0;
    bad = 0;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double d;
        memcpy(&d, &x, sizeof d);
        if (!isfinite(d))
            continue;
        tried++;
        if (!dbl_roundtrips(d) && bad++ < 3) {
            edm_double_format(d, out);
            printf("# no round trip for %.17g (%s)\n", d, out);
        }
        if (!dbl_is_shortest(d) && notshort++ < 3) {
            edm_double_format(d, out);
            printf("# not shortest for %.17g (%s)\n", d, out);
        }
    }
    TEST_CHECK(tried > 18000, "random doubles tried");
    TEST_EQ_INT(bad, 0, "random doubles round-trip");
    TEST_EQ_INT(notshort, 0, "random doubles use the shortest digits");

    /* short decimals typed by people: "d.ddd" with few digits, times
     * powers of ten, must come out with the same digits */
    bad = 0;
    notshort = 0;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char text[40];
        int ndig = 1 + (int)(x % 15);
        long long mant = (long long)(x >> 8) % 1000000000000000LL;
        int e = (int)((x >> 4) % 601) - 300;
        snprintf(text, sizeof text, "%.*lld", ndig, mant % 100000000000000LL);
        snprintf(text + strlen(text), sizeof text - strlen(text), "e%d", e);
        double d = strtod(text, NULL);
        if (d == 0 || !isfinite(d))
            continue;
        if (!dbl_roundtrips(d))
            bad++;
        if (!dbl_is_shortest(d) && notshort++ < 3) {
            edm_double_format(d, out);
            printf("# not shortest for %s (%s)\n", text, out);
        }
    }
    TEST_EQ_INT(bad, 0, "short decimals round-trip");
    TEST_EQ_INT(notshort, 0, "short decimals use the shortest digits");

    /* m / 10^k with m of up to 15 digits and k up to 15: the formatter's
     * printf-free path (and its edges: m near 10^15, k = 0, negatives) */
    bad = 0;
    notshort = 0;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8,
                                     1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
        uint64_t lim = 1;
        for (int k = (int)(x % 15) + 1; k > 0; k--)
            lim *= 10;
        uint64_t m = (x >> 8) % lim;
        if (i % 7 == 0)
            m = lim - 1 - m % 3;
        double d = (double)m / p10[(x >> 60) % 16];
        if (x & 8)
            d = -d;
        if (d == 0)
            continue;
        if (!dbl_roundtrips(d) && bad++ < 3) {
            edm_double_format(d, out);
            printf("# no round trip for %.17g (%s)\n", d, out);
        }
        if (!dbl_is_shortest(d) && notshort++ < 3) {
            edm_double_format(d, out);
            printf("# not shortest for %.17g (%s)\n", d, out);
        }
    }
    TEST_EQ_INT(bad, 0, "m/10^k doubles round-trip");
    TEST_EQ_INT(notshort, 0, "m/10^k doubles use the shortest digits");
    dbl_format(5.25, "5.25");
    dbl_format(-1234.5, "-1234.5");
    dbl_format(999999999999999.0, "999999999999999.0");
    dbl_format(99999999999999.9, "99999999999999.9");
    dbl_format(0.000123, "0.000123");
    dbl_format(0.0000123, "1.23E-05");
    dbl_format(100000000000000.0, "100000000000000.0");
    dbl_format(0.1 + 0.2, "0.30000000000000004");

    /* subnormals take the slow path */
    bad = 0;
    int subnormals = 0;
    for (uint64_t bits = 1; bits < 0x0010000000000000ULL; bits = bits + bits / 3 + 1) {
        double d;
        memcpy(&d, &bits, sizeof d);
        subnormals++;
        if (!dbl_roundtrips(d) || !dbl_is_shortest(d))
            bad++;
    }
    TEST_CHECK(subnormals > 100, "subnormals tried");
    TEST_EQ_INT(bad, 0, "subnormals round-trip with shortest digits");

    /* short decimals stay short: k/1000 formats with at most 4 digits */
    bad = 0;
    for (int k = 1; k < 30000; k++) {
        char want[40];
        double d = k / 1000.0;
        edm_double_format(d, out);
        snprintf(want, sizeof want, "%d.%03d", k / 1000, k % 1000);
        /* trim trailing zeros but keep one digit after the dot */
        size_t wl = strlen(want);
        while (want[wl - 1] == '0' && want[wl - 2] != '.')
            want[--wl] = '\0';
        if (strcmp(out, want) != 0 && bad++ < 3)
            printf("# %d/1000: got %s want %s\n", k, out, want);
    }
    TEST_EQ_INT(bad, 0, "k/1000 formats as the short decimal");

    /* random integers in plain range end with ".0" */
    bad = 0;
    x = 12345;
    for (int i = 0; i < 10000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int64_t v = (int64_t)(x % 100000000000000ULL);
        char want[40];
        snprintf(want, sizeof want, "%lld.0", (long long)v);
        edm_double_format((double)v, out);
        if (strcmp(out, want) != 0 && bad++ < 3)
            printf("# integer %lld: got %s\n", (long long)v, out);
    }
    TEST_EQ_INT(bad, 0, "integral doubles below 1e14 format as N.0");

    /* powers of ten switch layout at 1e15 and 1e-5 */
    bad = 0;
    for (int e = -30; e <= 30; e++) {
        char want[40];
        double d;
        snprintf(want, sizeof want, "1e%d", e);
        d = strtod(want, NULL);
        if (e >= 15 || e < -4)
            snprintf(want, sizeof want, "1E%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
        else if (e >= 0)
            snprintf(want, sizeof want, "1%.*s.0", e, "000000000000000");
        else
            snprintf(want, sizeof want, "0.%.*s1", -e - 1, "0000");
        edm_double_format(d, out);
        if (strcmp(out, want) != 0 && bad++ < 3)
            printf("# 1e%d: got %s want %s\n", e, out, want);
    }
    TEST_EQ_INT(bad, 0, "powers of ten layout");
}

/* ---------------------------------------------------------------- UTF-8 */

static void utf8_case(const char *s, size_t n, int want_ok, const char *what)
{
    TEST_EQ_INT(utf8_check(s, n), want_ok ? 0 : EDM_EINVAL, what);
}

static void test_utf8(void)
{
    utf8_case("", 0, 1, "utf8 empty");
    utf8_case("abc", 3, 1, "utf8 ascii");
    utf8_case("a\0b", 3, 1, "utf8 embedded U+0000");
    utf8_case("\xC3\xBC", 2, 1, "utf8 U+00FC");
    utf8_case("\xC2\x80", 2, 1, "utf8 U+0080");
    utf8_case("\xDF\xBF", 2, 1, "utf8 U+07FF");
    utf8_case("\xE0\xA0\x80", 3, 1, "utf8 U+0800");
    utf8_case("\xE2\x82\xAC", 3, 1, "utf8 U+20AC");
    utf8_case("\xED\x9F\xBF", 3, 1, "utf8 U+D7FF");
    utf8_case("\xEE\x80\x80", 3, 1, "utf8 U+E000");
    utf8_case("\xEF\xBF\xBF", 3, 1, "utf8 U+FFFF");
    utf8_case("\xF0\x90\x80\x80", 4, 1, "utf8 U+10000");
    utf8_case("\xF0\x9D\x84\x9E", 4, 1, "utf8 U+1D11E");
    utf8_case("\xF4\x8F\xBF\xBF", 4, 1, "utf8 U+10FFFF");
    utf8_case("O'Neil \"A\" r 1/\xC3\xBC", 17, 1, "utf8 mixed key text");

    utf8_case("\x80", 1, 0, "utf8 lone continuation");
    utf8_case("a\xBF", 2, 0, "utf8 continuation after ascii");
    utf8_case("\xC0\x80", 2, 0, "utf8 overlong NUL");
    utf8_case("\xC1\xBF", 2, 0, "utf8 overlong C1");
    utf8_case("\xE0\x80\x80", 3, 0, "utf8 overlong 3-byte");
    utf8_case("\xE0\x9F\xBF", 3, 0, "utf8 overlong U+07FF in 3 bytes");
    utf8_case("\xF0\x80\x80\x80", 4, 0, "utf8 overlong 4-byte");
    utf8_case("\xF0\x8F\xBF\xBF", 4, 0, "utf8 overlong U+FFFF in 4 bytes");
    utf8_case("\xED\xA0\x80", 3, 0, "utf8 surrogate U+D800");
    utf8_case("\xED\xBF\xBF", 3, 0, "utf8 surrogate U+DFFF");
    utf8_case("\xED\xA0\xBD\xED\xB2\xA9", 6, 0, "utf8 CESU surrogate pair");
    utf8_case("\xF4\x90\x80\x80", 4, 0, "utf8 U+110000");
    utf8_case("\xF5\x80\x80\x80", 4, 0, "utf8 F5 lead");
    utf8_case("\xF8\x88\x80\x80\x80", 5, 0, "utf8 5-byte form");
    utf8_case("\xFE", 1, 0, "utf8 FE");
    utf8_case("\xFF", 1, 0, "utf8 FF");
    utf8_case("\xC3", 1, 0, "utf8 truncated 2-byte");
    utf8_case("\xE2\x82", 2, 0, "utf8 truncated 3-byte");
    utf8_case("\xF0\x9D\x84", 3, 0, "utf8 truncated 4-byte");
    utf8_case("\xC3\xBC\xC3", 3, 0, "utf8 truncated at end");
    utf8_case("\xC3\x41", 2, 0, "utf8 bad continuation 2-byte");
    utf8_case("\xE2\x28\xA1", 3, 0, "utf8 bad continuation 3-byte (2nd)");
    utf8_case("\xE2\x82\x41", 3, 0, "utf8 bad continuation 3-byte (3rd)");
    utf8_case("\xF0\x9D\x41\x9E", 4, 0, "utf8 bad continuation 4-byte");
    utf8_case("\xF0\x9D\x84\xC0", 4, 0, "utf8 bad last continuation 4-byte");
    /* n bounds the check: a valid prefix of an invalid buffer is valid */
    utf8_case("ab\xFF", 2, 1, "utf8 honours length");
    utf8_case("\xE2\x82\xAC", 2, 0, "utf8 length cuts a sequence");

    TEST_EQ_INT(utf16_len("", 0), 0, "utf16 empty");
    TEST_EQ_INT(utf16_len("abc", 3), 3, "utf16 ascii");
    TEST_EQ_INT(utf16_len("\xC3\xBC", 2), 1, "utf16 U+00FC is one unit");
    TEST_EQ_INT(utf16_len("\xE2\x82\xAC", 3), 1, "utf16 U+20AC is one unit");
    TEST_EQ_INT(utf16_len("\xEF\xBF\xBF", 3), 1, "utf16 U+FFFF is one unit");
    TEST_EQ_INT(utf16_len("\xF0\x90\x80\x80", 4), 2, "utf16 U+10000 is two units");
    TEST_EQ_INT(utf16_len("\xF0\x9D\x84\x9E", 4), 2, "utf16 U+1D11E is two units");
    TEST_EQ_INT(utf16_len("\xF4\x8F\xBF\xBF", 4), 2, "utf16 U+10FFFF is two units");
    TEST_EQ_INT(utf16_len("a\xF0\x9D\x84\x9E\xC3\xBC\xE2\x82\xAC", 10), 5, "utf16 mixed");
    TEST_EQ_INT(utf16_len("a\0b", 3), 3, "utf16 counts U+0000");

    /* 32K-unit boundary: 16384 supplementary chars = 32768 units */
    static char big[16384 * 4];
    for (size_t i = 0; i < sizeof big; i += 4)
        memcpy(big + i, "\xF0\x9F\x98\x80", 4);
    TEST_EQ_INT(utf8_check(big, sizeof big), 0, "utf8 large supplementary buffer");
    TEST_EQ_INT(utf16_len(big, sizeof big), 32768, "utf16 large supplementary buffer");

    /* the ASCII fast paths (16- and 8-byte steps, then bytes) must stop at
     * a bad byte or a sequence at any offset of a long run */
    int bad_found = 0, good_found = 0;
    for (int pos = 0; pos < 48; pos++) {
        char run[49];
        memset(run, 'a', 48);
        run[48] = 0;
        run[pos] = (char)0xC0;          /* overlong lead byte: always invalid */
        bad_found += utf8_check(run, 48) == EDM_EINVAL;
        if (pos < 47) {
            memcpy(run + pos, "\xC3\xBC", 2);   /* a valid 2-byte sequence */
            good_found += utf8_check(run, 48) == 0 && utf16_len(run, 48) == 47;
        }
    }
    TEST_EQ_INT(bad_found, 48, "utf8 bad byte found at each of 48 offsets of an ASCII run");
    TEST_EQ_INT(good_found, 47, "utf8 valid sequence accepted at each offset of an ASCII run");
}

/* ---------------------------------------------------------------- clock */

static void test_now(void)
{
    time_t before = time(NULL);
    int64_t now = edm_now_ticks();
    time_t after = time(NULL);
    TEST_CHECK(now >= EDM_UNIX_EPOCH_TICKS + ((int64_t)before - 1) * EDM_TICKS_PER_SECOND &&
                   now < EDM_UNIX_EPOCH_TICKS + ((int64_t)after + 2) * EDM_TICKS_PER_SECOND,
               "now ticks agree with time()");
    TEST_CHECK(now >= EDM_DATETIME_MIN_TICKS && now <= EDM_DATETIME_MAX_TICKS,
               "now is a valid DateTime");
    char out[32];
    int64_t back = 0;
    size_t n = edm_datetime_format(now, out);
    TEST_CHECK(edm_datetime_parse(out, n, &back) == 0 && back == now, "now formats and parses back");
}

/* Locale independence: with the environment's locale active (if any
 * non-C locale is installed) parsing and formatting must not change. */
static void test_locale(void)
{
    const char *names[] = {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE", "fr_FR", NULL};
    const char *got = NULL;
    for (int i = 0; names[i] && !got; i++)
        got = setlocale(LC_ALL, names[i]);
    if (!got)
        printf("# no comma-decimal locale installed; locale test runs in C\n");
    char out[40];
    double d = 0;
    edm_double_format(12.5, out);
    TEST_EQ_STR(out, "12.5", "double format uses '.' whatever the locale");
    TEST_CHECK(edm_double_parse("12.5", 4, 0, &d) == 0 && d == 12.5,
               "double parse uses '.' whatever the locale");
    TEST_EQ_INT(edm_double_parse("12,5", 4, 0, &d), EDM_EINVAL, "comma is never a decimal point");
    setlocale(LC_ALL, "C");
}

int main(void)
{
    test_datetime_values();
    test_datetime_format();
    test_datetime_errors();
    test_datetime_every_day();
    test_rfc1123();
    test_guid();
    test_base64();
    test_integers();
    test_double_parse();
    test_double_format();
    test_utf8();
    test_now();
    test_locale();
    return test_done();
}
