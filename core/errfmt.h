/* errfmt.h - writing a message into a caller's (char *err, size_t errlen)
 * buffer, the error convention of config, backends, the registry and the
 * command-line tools. A NULL buffer or zero length writes nothing; long
 * messages are truncated, always NUL-terminated. */
#ifndef TABLED_ERRFMT_H
#define TABLED_ERRFMT_H
#include <stdarg.h>
#include <stddef.h>

/* Replaces err's content with the formatted message. */
void errfmt_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends the formatted message after err's current (NUL-terminated)
 * content, as far as it fits: a prefix set first, the detail after. */
void errfmt_vappend(char *err, size_t errlen, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
