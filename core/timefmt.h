/* timefmt.h - date and time text every layer reads and writes: ISO 8601
 * (Edm.DateTime, SAS st/se, ACL times) and RFC 1123 (Date, x-ms-date,
 * Last-Modified), over one time base, .NET ticks. auth/ checks request
 * dates and SAS windows with it; codec/edm.c's DateTime is built on it.
 *
 * Allocation-free and locale-independent. Status: 0 ok, TIMEFMT_EINVAL
 * (malformed), TIMEFMT_ERANGE (well formed but out of range). */
#ifndef TABLED_TIMEFMT_H
#define TABLED_TIMEFMT_H
#include <stddef.h>
#include <stdint.h>

#define TIMEFMT_EINVAL (-1)
#define TIMEFMT_ERANGE (-2)

/* Ticks are 100 ns units since 0001-01-01T00:00:00Z (.NET DateTime). */
#define TIMEFMT_TICKS_PER_SECOND 10000000LL
/* 1601-01-01T00:00:00Z and 9999-12-31T23:59:59.9999999Z: the DateTime range. */
#define TIMEFMT_MIN_TICKS 504911232000000000LL
#define TIMEFMT_MAX_TICKS 3155378975999999999LL
/* Ticks at 1970-01-01T00:00:00Z. */
#define TIMEFMT_UNIX_EPOCH_TICKS 621355968000000000LL

/* Parses ISO 8601 "YYYY-MM-DDThh:mm[:ss[.f{1,}]][Z|+hh:mm|-hh:mm]"; no zone
 * means UTC; more than 7 fraction digits are truncated. Result must be in
 * [TIMEFMT_MIN_TICKS, TIMEFMT_MAX_TICKS] else TIMEFMT_ERANGE. */
int timefmt_iso_parse(const char *s, size_t n, int64_t *ticks);
/* The same text with the lower bound year 1 (ticks 0, .NET's
 * DateTime.MinValue) instead of 1601: what a DateTime before 1601 was,
 * for the message that names it. */
int timefmt_iso_parse_wide(const char *s, size_t n, int64_t *ticks);
/* Formats "MM/DD/YYYY hh:mm:ss" (.NET's invariant-culture DateTime text,
 * the fraction dropped) into out (>= 20 bytes); returns the length. */
size_t timefmt_invariant_format(int64_t ticks, char *out);
/* Formats "YYYY-MM-DDThh:mm:ss[.fffffff trimmed]Z" into out (>= 32 bytes);
 * returns the length. */
size_t timefmt_iso_format(int64_t ticks, char *out);
/* Same, always with 7 fraction digits (error message Time:, ACL times). */
size_t timefmt_iso_format7(int64_t ticks, char *out);
/* RFC 1123 "Sun, 06 Nov 1994 08:49:37 GMT" into out (>= 30 bytes). */
size_t timefmt_rfc1123_format(int64_t unix_seconds, char *out);
/* Parses RFC 1123 (two-digit day required). Returns 0 or TIMEFMT_EINVAL. */
int timefmt_rfc1123_parse(const char *s, size_t n, int64_t *unix_seconds);

/* Current time as ticks (CLOCK_REALTIME truncated to 100 ns). */
int64_t timefmt_now_ticks(void);

#endif
