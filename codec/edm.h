/* edm.h - the eight Edm types: parsing request text and formatting responses.
 *
 * All functions are locale-independent and allocation-free unless they take
 * an arena or a buf. Status: 0 ok, EDM_EINVAL (malformed), EDM_ERANGE (well
 * formed but out of the type's range). doc/protocol.md, Edm value forms gives the rules. */
#ifndef TABLED_EDM_H
#define TABLED_EDM_H
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/coding.h"
#include "core/buf.h"
#include "core/timefmt.h"

#define EDM_EINVAL TIMEFMT_EINVAL
#define EDM_ERANGE TIMEFMT_ERANGE

/* Ticks, the DateTime range and the Unix epoch are the floor's
 * (core/timefmt.h); the dates below are core/timefmt.c's. */
#define EDM_TICKS_PER_SECOND TIMEFMT_TICKS_PER_SECOND
#define EDM_DATETIME_MIN_TICKS TIMEFMT_MIN_TICKS
#define EDM_DATETIME_MAX_TICKS TIMEFMT_MAX_TICKS
#define EDM_UNIX_EPOCH_TICKS TIMEFMT_UNIX_EPOCH_TICKS

/* Parses ISO 8601 "YYYY-MM-DDThh:mm[:ss[.f{1,}]][Z|+hh:mm|-hh:mm]"; no zone
 * means UTC; more than 7 fraction digits are truncated. Result must be in
 * [EDM_DATETIME_MIN_TICKS, EDM_DATETIME_MAX_TICKS] else EDM_ERANGE. */
int edm_datetime_parse(const char *s, size_t n, int64_t *ticks);
/* Formats "YYYY-MM-DDThh:mm:ss[.fffffff trimmed]Z" into out (>= 32 bytes);
 * returns the length. */
size_t edm_datetime_format(int64_t ticks, char *out);
/* Same, always with 7 fraction digits (error message Time:, ACL times). */
size_t edm_datetime_format7(int64_t ticks, char *out);
/* RFC 1123 "Sun, 06 Nov 1994 08:49:37 GMT" into out (>= 30 bytes). */
size_t edm_rfc1123_format(int64_t unix_seconds, char *out);
/* Parses RFC 1123 (two-digit day required). Returns 0 or EDM_EINVAL. */
int edm_rfc1123_parse(const char *s, size_t n, int64_t *unix_seconds);

/* Guid: 36-char canonical form (hex any case), optionally in braces. */
int edm_guid_parse(const char *s, size_t n, uint8_t out[16]);
/* Lower-case 8-4-4-4-12 into out (>= 37 bytes); returns 36. */
size_t edm_guid_format(const uint8_t g[16], char *out);

/* Standard base64 with padding (RFC 4648 section 4). decode rejects bad
 * characters, bad padding and bad length; *out is arena memory. */
int edm_base64_decode(struct arena *a, const char *s, size_t n, uint8_t **out, size_t *outlen);
void edm_base64_encode(struct buf *b, const uint8_t *p, size_t n);

/* Int32/Int64 from decimal text (optional leading '-', digits only). */
int edm_int32_parse(const char *s, size_t n, int32_t *out);
int edm_int64_parse(const char *s, size_t n, int64_t *out);
/* Double from JSON number text or "NaN"/"Infinity"/"-Infinity" (allow_named);
 * overflow to infinity from finite text is EDM_ERANGE. */
int edm_double_parse(const char *s, size_t n, int allow_named, double *out);
/* .NET "R"-style shortest round-trip text: "12.5", "5.0", "1E+300",
 * "1.23456789012346E+24", "-0.0" ... into out (>= 40 bytes); returns length.
 * NaN/Infinity produce "NaN", "Infinity", "-Infinity". */
size_t edm_double_format(double d, char *out);

/* UTF-8 helpers. utf8_check: 0 if s is well-formed UTF-8 (no surrogates,
 * no overlongs), else EDM_EINVAL. (utf16_len is in core/coding.h.) */
int utf8_check(const char *s, size_t n);

/* Current time as ticks (CLOCK_REALTIME truncated to 100 ns). */
int64_t edm_now_ticks(void);

#endif
