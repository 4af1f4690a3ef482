/* log.c - diagnostics on stderr, the access log on stdout, or both in
 * the file of --log-file (reopened by log_open_file on SIGHUP).
 *
 * The access log is on the hot path (one line per request), so it formats
 * by hand into a stack buffer, reuses the "YYYY-MM-DDTHH:MM:SS" text while
 * the second does not change, and relies on stdout's own buffering (the
 * server flushes it shortly after a burst of requests and at exit). */
#include "core/coding.h"
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum log_level log_level = LOG_INFO;
/* The --log-file stream, or NULL (stderr and stdout). Once made it stays
 * the same FILE: a reopen moves the new file under its descriptor with
 * dup2(), so a thread writing meanwhile writes to one file or the other,
 * never to a closed stream. */
static FILE *log_file;

int log_open_file(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open log file %s: %s", path, strerror(errno));
        return -1;
    }
    if (!log_file) {
        log_file = fdopen(fd, "a");
        if (!log_file) {
            snprintf(err, errlen, "cannot open log file %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        return 0;
    }
    fflush(log_file);  /* what was written before goes to the old file */
    int rc = dup2(fd, fileno(log_file));
    if (rc < 0)
        snprintf(err, errlen, "cannot switch to log file %s: %s", path, strerror(errno));
    close(fd);
    return rc < 0 ? -1 : 0;
}

int log_to_file(void)
{
    return log_file != NULL;
}

void log_flush(void)
{
    fflush(log_file ? log_file : stdout);
}

void log_set_level(enum log_level level)
{
    log_level = level;
}

enum log_level log_get_level(void)
{
    return log_level;
}

/* Writes "YYYY-MM-DDTHH:MM:SS.mmmZ" (24 chars + NUL) for the current UTC
 * time; the date-and-seconds part is cached per second. */
static void log_timestamp(char out[32])
{
    static time_t cached_sec = (time_t)-1;
    static char cached[19];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != cached_sec) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        char tmp[96];
        snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        memcpy(cached, tmp, 19);
        cached_sec = ts.tv_sec;
    }
    int ms = (int)(ts.tv_nsec / 1000000);
    memcpy(out, cached, 19);
    out[19] = '.';
    out[20] = (char)('0' + ms / 100);
    out[21] = (char)('0' + ms / 10 % 10);
    out[22] = (char)('0' + ms % 10);
    out[23] = 'Z';
    out[24] = '\0';
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (level > log_level)
        return;
    char line[2048], ts[32];
    log_timestamp(ts);
    int n = snprintf(line, sizeof line, "%s %s: ", ts, names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    if (log_file) {
        /* locked writes: another thread may log too; a diagnostic is seen at once */
        fwrite(line, 1, len, log_file);
        fflush(log_file);
    } else {
        fwrite(line, 1, len, stderr);
    }
}

/* The rate limiter's state (see log.h); a mutex, because a backend
 * thread may log too. */
struct log_limit_slot {
    int64_t second;             /* the monotonic second counted */
    unsigned lines;             /* lines written in it */
    unsigned long suppressed;   /* lines dropped in it or earlier, not yet reported */
    const char *what;
};
static struct log_limit_slot log_limit_slots[LOG_LIMIT_KEYS];
static int64_t log_limit_second = -1;
static unsigned log_limit_lines;
static pthread_mutex_t log_limit_mu = PTHREAD_MUTEX_INITIALIZER;

/* The current monotonic second. */
static int64_t log_limit_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

/* Reports and clears the suppressed count of s when its second is over. */
static void log_limit_report(struct log_limit_slot *s, int64_t now)
{
    if (s->second == now || !s->suppressed)
        return;
    log_msg(LOG_INFO, "suppressed %lu similar lines (%s)", s->suppressed,
            s->what ? s->what : "-");
    s->suppressed = 0;
}

int log_limit_take(enum log_level level, unsigned key, const char *what)
{
    if (level > log_level || key >= LOG_LIMIT_KEYS)
        return 0;
    int64_t now = log_limit_now();
    pthread_mutex_lock(&log_limit_mu);
    struct log_limit_slot *s = &log_limit_slots[key];
    s->what = what;
    log_limit_report(s, now);
    if (s->second != now) {
        s->second = now;
        s->lines = 0;
    }
    if (log_limit_second != now) {
        log_limit_second = now;
        log_limit_lines = 0;
    }
    int ok = s->lines < LOG_LIMIT_PER_KEY && log_limit_lines < LOG_LIMIT_TOTAL;
    if (ok) {
        s->lines++;
        log_limit_lines++;
    } else {
        s->suppressed++;
    }
    pthread_mutex_unlock(&log_limit_mu);
    return ok;
}

void log_limit_flush(void)
{
    int64_t now = log_limit_now();
    pthread_mutex_lock(&log_limit_mu);
    for (unsigned i = 0; i < LOG_LIMIT_KEYS; i++)
        log_limit_report(&log_limit_slots[i], now);
    pthread_mutex_unlock(&log_limit_mu);
}

/* Appends the decimal form of v at p; returns the new end. */
static char *put_u64(char *p, uint64_t v)
{
    return p + coding_u64_dec(v, p);
}

/* Appends at most max bytes of s at p; returns the new end. */
static char *put_str(char *p, const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    memcpy(p, s, n);
    return p + n;
}

void log_access(const char *method, const char *path, int status, size_t bytes,
                uint64_t micros, const char *request_id)
{
    char line[1400];
    char *p = line;
    log_timestamp(p);
    p += 24;
    *p++ = ' ';
    p = put_str(p, method ? method : "-", 32);
    *p++ = ' ';
    p = put_str(p, path && *path ? path : "-", 1024);
    *p++ = ' ';
    p = put_u64(p, status < 0 ? 0 : (uint64_t)status);
    *p++ = ' ';
    p = put_u64(p, bytes);
    *p++ = 'B';
    *p++ = ' ';
    p = put_u64(p, micros);
    *p++ = 'u';
    *p++ = 's';
    *p++ = ' ';
    p = put_str(p, request_id && *request_id ? request_id : "-", 128);
    *p++ = '\n';
    if (log_file)
        fwrite(line, 1, (size_t)(p - line), log_file);
    else
        fwrite_unlocked(line, 1, (size_t)(p - line), stdout);
}
