/* errfmt.c - caller-buffer error messages (see errfmt.h). */
#include "core/errfmt.h"

#include <stdio.h>
#include <string.h>

void errfmt_set(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    err[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    errfmt_vappend(err, errlen, fmt, ap);
    va_end(ap);
}

void errfmt_vappend(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (!err || !errlen)
        return;
    size_t n = strnlen(err, errlen);
    if (n + 1 >= errlen)
        return;
    vsnprintf(err + n, errlen - n, fmt, ap);
}
