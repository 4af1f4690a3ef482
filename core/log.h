/* log.h - error/diagnostic log (stderr) and the access log (stdout), or
 * both appended to one file (--log-file). */
#ifndef TABLED_LOG_H
#define TABLED_LOG_H
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* "2026-11-22T13:31:50.123Z warn: message" on stderr, when level allows. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* Rate-limited diagnostics, for lines a client can provoke at will (a
 * refused request, a TLS handshake on the plain port): within one second
 * at most LOG_LIMIT_PER_KEY lines of one key and LOG_LIMIT_TOTAL of all
 * keys together pass; the rest are counted, and once their second is over
 * one "suppressed N similar lines (what)" line per key says how many (at
 * the next line of the key or at log_limit_flush(), which the server calls
 * every second). So a flood of bad requests writes at most
 * LOG_LIMIT_TOTAL + LOG_LIMIT_KEYS lines a second. */
#define LOG_LIMIT_PER_KEY 5
#define LOG_LIMIT_TOTAL 50
#define LOG_LIMIT_KEYS 32
/* The keys: refused requests, one per reason (auth/auth.h's enum
 * auth_why, fewer than 30), and a TLS handshake on the plain port. */
#define LOG_KEY_AUTH 0u
#define LOG_KEY_TLS_ON_PLAIN 31u
/* 1 when a line of key (< LOG_LIMIT_KEYS; what names it in the summary,
 * a static string) at level may be written now, else 0 (counted). Writes
 * the key's pending summary first. A level the log does not show is
 * neither written nor counted. */
int log_limit_take(enum log_level level, unsigned key, const char *what);
/* Writes the summaries of the keys whose second is over. */
void log_limit_flush(void);

/* Appends both logs to path from now on. The first call makes the log
 * stream; a later one (SIGHUP, after logrotate moved the file) opens the
 * new file first and switches only when that worked, so a failure leaves
 * the old file in use. Returns 0, or -1 with a message in err. */
int log_open_file(const char *path, char *err, size_t errlen);
/* 1 once log_open_file() succeeded. */
int log_to_file(void);
/* Flushes the access log's buffer (the server does after a burst). */
void log_flush(void);

/* One access-log line per request: time, method, path, status, bytes,
 * microseconds, request id. */
void log_access(const char *method, const char *path, int status, size_t bytes,
                uint64_t micros, const char *request_id);

#endif
