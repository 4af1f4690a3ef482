/* options.c - applying, defaulting and describing settings from a table of
 * rows (see options.h). Knows nothing of tabled's settings themselves. */
#include "core/options.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/errfmt.h"

int opt_parse_bool(const char *s, int *out)
{
    static const char *yes[] = {"on", "true", "yes", "1"};
    static const char *no[] = {"off", "false", "no", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

int opt_parse_long(const char *s, long long min, long long max, long long *out)
{
    if (!*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int opt_parse_size(const char *s, size_t *out)
{
    return opt_parse_size_range(s, 1, 1ULL << 40, out);
}

int opt_parse_size_range(const char *s, unsigned long long min, unsigned long long max,
                         size_t *out)
{
    char num[32];
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof num)
        return -1;
    memcpy(num, s, n + 1);
    long long mult = 1;
    char last = (char)toupper((unsigned char)num[n - 1]);
    if (last == 'K' || last == 'M' || last == 'G') {
        mult = last == 'K' ? 1024LL : last == 'M' ? 1024LL * 1024 : 1024LL * 1024 * 1024;
        num[n - 1] = '\0';
    }
    long long v;
    if (opt_parse_long(num, 0, (1LL << 40) / mult, &v) < 0)
        return -1;
    unsigned long long x = (unsigned long long)v * (unsigned long long)mult;
    if (x < min || x > max)
        return -1;
    *out = (size_t)x;
    return 0;
}

int opt_parse_double(const char *s, double min, double max, double *out)
{
    if (!*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !(v >= min && v <= max))
        return -1;
    *out = v;
    return 0;
}

const struct opt *opt_find(const struct opt *tab, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(tab[i].name, name) == 0 || (tab[i].alias && strcmp(tab[i].alias, name) == 0))
            return &tab[i];
    return NULL;
}

/* The value of name among names (case-insensitive); -1 when absent. */
static int find_name(const struct opt_name *names, const char *s, int *out)
{
    for (; names && names->name; names++) {
        if (strcasecmp(names->name, s) == 0) {
            *out = names->value;
            return 0;
        }
    }
    return -1;
}

/* The visible names joined with '|' ("sync|batch|none"), for messages. */
static void join_names(const struct opt_name *names, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (; names && names->name; names++) {
        if (names->hidden)
            continue;
        int w = snprintf(buf + len, cap - len, "%s%s", len ? "|" : "", names->name);
        if (w < 0 || (size_t)w >= cap - len)
            return;
        len += (size_t)w;
    }
}

/* Stores an integer into an int or long long field (by the row's size). */
static void store_int(const struct opt *o, char *field, long long v)
{
    if (o->size == sizeof(long long)) {
        long long x = v;
        memcpy(field, &x, sizeof x);
    } else {
        int x = (int)v;
        memcpy(field, &x, sizeof x);
    }
}

/* Copies s into a fixed field of cap bytes; fails when it does not fit. */
static int copy_value(const struct opt *o, char *dst, size_t cap, const char *s, char *err,
                      size_t errlen)
{
    size_t n = strlen(s);
    if (n >= cap) {
        errfmt_set(err, errlen, "--%s is too long (at most %zu bytes)", o->name, cap - 1);
        return -1;
    }
    memcpy(dst, s, n + 1);
    return 0;
}

/* Appends v to an OPT_LIST row's array. */
static int list_add(const struct opt *o, char *base, const char *v, char *err, size_t errlen)
{
    size_t count;
    memcpy(&count, base + o->count_offset, sizeof count);
    if (o->flags & OPTF_PAIR) {
        const char *eq = strchr(v, '=');
        if (!eq || eq == v) {
            errfmt_set(err, errlen, "--%s expects NAME=VALUE, got '%s'", o->name, v);
            return -1;
        }
    }
    if (count >= (size_t)o->max) {
        errfmt_set(err, errlen, "too many --%s settings (at most %lld)", o->name, o->max);
        return -1;
    }
    if (copy_value(o, base + o->offset + count * o->size, o->size, v, err, errlen) < 0)
        return -1;
    count++;
    memcpy(base + o->count_offset, &count, sizeof count);
    return 0;
}

/* The message for a refused value: "--NAME expects WHAT, got 'V'". */
static int refuse(const struct opt *o, const char *v, char *err, size_t errlen)
{
    char what[256];
    if (o->expect)
        snprintf(what, sizeof what, "%s", o->expect);
    else if (o->type == OPT_BOOL)
        snprintf(what, sizeof what, "on|off");
    else if (o->type == OPT_ENUM)
        join_names(o->names, what, sizeof what);
    else if (o->type == OPT_SIZE && o->max > 0)
        snprintf(what, sizeof what, "a byte count %lld-%lld (K/M/G suffix allowed)", o->min,
                 o->max);
    else if (o->type == OPT_SIZE)
        snprintf(what, sizeof what, "a byte count > 0 (K/M/G suffix allowed)");
    else if (o->type == OPT_DOUBLE)
        snprintf(what, sizeof what, "a number in %g..%g", o->dmin, o->dmax);
    else if (o->min == 0)
        snprintf(what, sizeof what, "a number >= 0");
    else if (o->min == 1)
        snprintf(what, sizeof what, "a number > 0");
    else
        snprintf(what, sizeof what, "a number %lld-%lld", o->min, o->max);
    errfmt_set(err, errlen, "--%s expects %s, got '%s'", o->name, what, v);
    return -1;
}

int opt_apply(const struct opt *o, void *obj, const char *v, char *err, size_t errlen)
{
    char *field = (char *)obj + o->offset;
    long long n;
    int b;
    size_t sz;
    double d;
    switch (o->type) {
    case OPT_BOOL:
        if (opt_parse_bool(v, &b) < 0)
            return refuse(o, v, err, errlen);
        memcpy(field, &b, sizeof b);
        return 0;
    case OPT_INT:
        if (find_name(o->names, v, &b) == 0)
            n = b;
        else if (opt_parse_long(v, o->min, o->max, &n) < 0)
            return refuse(o, v, err, errlen);
        store_int(o, field, n);
        return 0;
    case OPT_SIZE:
        if ((o->max > 0 ? opt_parse_size_range(v, (unsigned long long)o->min,
                                               (unsigned long long)o->max, &sz)
                        : opt_parse_size(v, &sz)) < 0)
            return refuse(o, v, err, errlen);
        memcpy(field, &sz, sizeof sz);
        return 0;
    case OPT_DOUBLE:
        if (opt_parse_double(v, o->dmin, o->dmax, &d) < 0)
            return refuse(o, v, err, errlen);
        memcpy(field, &d, sizeof d);
        return 0;
    case OPT_STRING:
        if ((o->flags & OPTF_NONEMPTY) && !*v) {
            errfmt_set(err, errlen, "--%s needs %s", o->name, o->expect ? o->expect : "a value");
            return -1;
        }
        return copy_value(o, field, o->size, v, err, errlen);
    case OPT_ENUM:
        if (find_name(o->names, v, &b) < 0)
            return refuse(o, v, err, errlen);
        memcpy(field, &b, sizeof b);
        return 0;
    case OPT_LIST:
        return list_add(o, obj, v, err, errlen);
    case OPT_CUSTOM:
        return o->set(obj, v, err, errlen);
    case OPT_SWITCH:
    case OPT_FILE:
        break;
    }
    errfmt_set(err, errlen, "--%s is not a setting", o->name);
    return -1;
}

int opt_defaults(const struct opt *tab, size_t n, void *obj, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        if (tab[i].def && opt_apply(&tab[i], obj, tab[i].def, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* Writes text word-wrapped from column col to 79, continuation lines
 * indented to column indent. */
static void wrap(FILE *out, const char *text, int col, int indent)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t w = strcspn(p, " ");
        if (!w)
            break;
        if (col > indent && col + 1 + (int)w > 79) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, w, out);
        col += (int)w;
        p += w;
    }
    fputc('\n', out);
}

void opt_usage(const struct opt *tab, size_t n, FILE *out)
{
    enum { INDENT = 26 };
    for (size_t i = 0; i < n; i++) {
        const struct opt *o = &tab[i];
        char flag[128], text[768];
        int col;
        if (o->type == OPT_BOOL && (o->flags & OPTF_BARE))
            col = snprintf(flag, sizeof flag, "  --%s[=on|off]", o->name);
        else if (o->type == OPT_BOOL && !o->arg)
            col = snprintf(flag, sizeof flag, "  --%s on|off", o->name);
        else
            col = snprintf(flag, sizeof flag, "  --%s%s%s", o->name, o->arg ? " " : "",
                           o->arg ? o->arg : "");
        fputs(flag, out);
        if (col < INDENT - 1) {
            fprintf(out, "%*s", INDENT - col, "");
            col = INDENT;
        } else {
            fputc(' ', out);  /* wrap() adds the second blank */
            col++;
        }
        if (o->def && *o->def && !strstr(o->help, "default"))
            snprintf(text, sizeof text, "%s (default %s)", o->help, o->def);
        else
            snprintf(text, sizeof text, "%s", o->help);
        wrap(out, text, col, INDENT);
    }
}
