/* timefmt.c - date and time text: ISO 8601 and RFC 1123 (see timefmt.h).
 *
 * Locale-independent: our own civil-calendar arithmetic (no timegm or
 * strftime) and fixed English day and month names. */
#include "core/timefmt.h"

#include <string.h>
#include <time.h>

#define TICKS_PER_DAY (86400LL * TIMEFMT_TICKS_PER_SECOND)

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

/* "hh:mm:ss" of secs seconds into the day (8 bytes, no NUL). */
static void put_hms(char *out, int64_t secs)
{
    put_digits(out, 2, secs / 3600);
    out[2] = ':';
    put_digits(out + 3, 2, secs / 60 % 60);
    out[5] = ':';
    put_digits(out + 6, 2, secs % 60);
}

/* ---------------------------------------------------------------- DateTime */

/* Parses "YYYY-MM-DDThh:mm[:ss[.f+]][Z|+hh:mm|-hh:mm]"; see timefmt.h. Field
 * values are validated (month lengths, leap years, hour < 24 ...) before
 * the range check so that a malformed date is EINVAL, not ERANGE. */
/* timefmt_iso_parse with the lower bound min (ticks). */
static int iso_parse_from(const char *s, size_t n, int64_t min, int64_t *ticks)
{
    int year, mon, day, hh, mi, ss = 0;
    int64_t frac = 0;
    size_t i;

    if (n < 16)
        return TIMEFMT_EINVAL;
    if (read_digits(s, 4, &year) || s[4] != '-' || read_digits(s + 5, 2, &mon) ||
        s[7] != '-' || read_digits(s + 8, 2, &day) || (s[10] != 'T' && s[10] != 't') ||
        read_digits(s + 11, 2, &hh) || s[13] != ':' || read_digits(s + 14, 2, &mi))
        return TIMEFMT_EINVAL;
    i = 16;
    if (i < n && s[i] == ':') {
        if (n - i < 3 || read_digits(s + i + 1, 2, &ss))
            return TIMEFMT_EINVAL;
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
                return TIMEFMT_EINVAL;
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
            return TIMEFMT_EINVAL;
        offset_min = sign * (oh * 60 + om);
        i += 6;
    }
    if (i != n)
        return TIMEFMT_EINVAL;

    if (mon < 1 || mon > 12 || day < 1 || hh > 23 || mi > 59 || ss > 59)
        return TIMEFMT_EINVAL;
    if (day > days_in_month(year, mon))
        return TIMEFMT_EINVAL;
    if (year == 0) /* year 0 does not exist in .NET: out of range */
        return TIMEFMT_ERANGE;

    int64_t days = days_from_civil(year, mon, day);
    int64_t secs = (int64_t)hh * 3600 + mi * 60 + ss - offset_min * 60;
    int64_t t = TIMEFMT_UNIX_EPOCH_TICKS + days * TICKS_PER_DAY + secs * TIMEFMT_TICKS_PER_SECOND + frac;
    if (t < min || t > TIMEFMT_MAX_TICKS)
        return TIMEFMT_ERANGE;
    *ticks = t;
    return 0;
}

int timefmt_iso_parse(const char *s, size_t n, int64_t *ticks)
{
    return iso_parse_from(s, n, TIMEFMT_MIN_TICKS, ticks);
}

int timefmt_iso_parse_wide(const char *s, size_t n, int64_t *ticks)
{
    return iso_parse_from(s, n, 0, ticks);
}

/* Writes "YYYY-MM-DDThh:mm:ss" for ticks (clamped to year 1..9999) and
 * returns the 7-digit fraction through *frac. */
static size_t format_base(int64_t ticks, char *out, int64_t *frac)
{
    if (ticks < 0)
        ticks = 0;
    if (ticks > TIMEFMT_MAX_TICKS)
        ticks = TIMEFMT_MAX_TICKS;
    int64_t rel = ticks - TIMEFMT_UNIX_EPOCH_TICKS;
    int64_t days = floor_div(rel, TICKS_PER_DAY);
    int64_t in_day = rel - days * TICKS_PER_DAY;
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int64_t secs = in_day / TIMEFMT_TICKS_PER_SECOND;
    *frac = in_day % TIMEFMT_TICKS_PER_SECOND;

    put_digits(out, 4, y);
    out[4] = '-';
    put_digits(out + 5, 2, m);
    out[7] = '-';
    put_digits(out + 8, 2, d);
    out[10] = 'T';
    put_hms(out + 11, secs);
    return 19;
}

size_t timefmt_invariant_format(int64_t ticks, char *out)
{
    char iso[24];
    int64_t frac;
    format_base(ticks, iso, &frac);
    /* "YYYY-MM-DDThh:mm:ss" -> "MM/DD/YYYY hh:mm:ss" */
    memcpy(out, iso + 5, 2);
    out[2] = '/';
    memcpy(out + 3, iso + 8, 2);
    out[5] = '/';
    memcpy(out + 6, iso, 4);
    out[10] = ' ';
    memcpy(out + 11, iso + 11, 8);
    out[19] = '\0';
    return 19;
}

/* Response form: fraction with trailing zeros removed, no dot when zero. */
size_t timefmt_iso_format(int64_t ticks, char *out)
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
size_t timefmt_iso_format7(int64_t ticks, char *out)
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
size_t timefmt_rfc1123_format(int64_t unix_seconds, char *out)
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
    put_hms(out + 17, secs);
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
int timefmt_rfc1123_parse(const char *s, size_t n, int64_t *unix_seconds)
{
    int wday, d, m, y, hh, mi, ss;
    if (n != 29)
        return TIMEFMT_EINVAL;
    wday = find_name(s, day_names, 7);
    m = find_name(s + 8, month_names, 12);
    if (wday < 0 || s[3] != ',' || s[4] != ' ' || read_digits(s + 5, 2, &d) || s[7] != ' ' ||
        m < 0 || s[11] != ' ' || read_digits(s + 12, 4, &y) || s[16] != ' ' ||
        read_digits(s + 17, 2, &hh) || s[19] != ':' || read_digits(s + 20, 2, &mi) ||
        s[22] != ':' || read_digits(s + 23, 2, &ss) || memcmp(s + 25, " GMT", 4) != 0)
        return TIMEFMT_EINVAL;
    m += 1;
    if (y < 1 || d < 1 || d > days_in_month(y, m) || hh > 23 || mi > 59 || ss > 59)
        return TIMEFMT_EINVAL;
    int64_t days = days_from_civil(y, m, d);
    if ((int)((days % 7 + 11) % 7) != wday)
        return TIMEFMT_EINVAL;
    *unix_seconds = days * 86400 + hh * 3600 + mi * 60 + ss;
    return 0;
}

/* ---------------------------------------------------------------- clock */

/* CLOCK_REALTIME truncated to 100 ns ticks. */
int64_t timefmt_now_ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return TIMEFMT_UNIX_EPOCH_TICKS + (int64_t)ts.tv_sec * TIMEFMT_TICKS_PER_SECOND + ts.tv_nsec / 100;
}

