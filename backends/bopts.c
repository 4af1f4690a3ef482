/* bopts.c - parses, checks and lists a built-in backend's option rows
 * (see bopts.h). The values go through core/options.c, the machinery of
 * tabled's own settings, so a backend option takes the same forms (K/M/G
 * sizes, on|off) and is refused with the same kind of message. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "backends/bopts.h"
#include "core/errfmt.h"

/* Writes n bytes the short way ("64K", "1G") when it is a whole unit. */
static void bopt_bytes(unsigned long long n, char *buf, size_t len)
{
    static const char unit[] = "KMG";
    int u = -1;
    while (u < 2 && n >= 1024 && n % 1024 == 0) {
        n /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%llu", n);
    else
        snprintf(buf, len, "%llu%c", n, unit[u]);
}

void bopt_describe(const struct opt *o, char *buf, size_t len)
{
    char lo[32], hi[32];
    switch (o->type) {
    case OPT_SIZE:
        bopt_bytes((unsigned long long)o->min, lo, sizeof lo);
        bopt_bytes((unsigned long long)o->max, hi, sizeof hi);
        snprintf(buf, len, "bytes %s..%s (K/M/G suffix)", lo, hi);
        break;
    case OPT_INT:
        snprintf(buf, len, "integer %lld..%lld", o->min, o->max);
        break;
    case OPT_BOOL:
        snprintf(buf, len, "on|off");
        break;
    case OPT_STRING:
        snprintf(buf, len, "string");
        break;
    default:
        snprintf(buf, len, "value");
        break;
    }
}

/* The known names of d, comma-separated, for the unknown-name message. */
static void bopt_known(const struct bopt_desc *d, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < d->nrows && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", d->rows[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (!d->nrows)
        snprintf(buf, len, "none");
}

int bopt_parse(const struct bopt_desc *d, const char *const *params, void *obj, char *err,
               size_t errlen)
{
    char msg[512];
    memset(obj, 0, d->objsize);
    if (opt_defaults(d->rows, d->nrows, obj, msg, sizeof msg) < 0) {
        errfmt_set(err, errlen, "backend %s: %s", d->backend, msg);
        return -1;
    }
    for (; params && *params; params++) {
        const char *eq = strchr(*params, '=');
        char name[64];
        size_t n = eq ? (size_t)(eq - *params) : strlen(*params);
        if (n >= sizeof name)
            n = sizeof name - 1;
        memcpy(name, *params, n);
        name[n] = '\0';
        const struct opt *o = opt_find(d->rows, d->nrows, name);
        if (!o) {
            char known[400];
            bopt_known(d, known, sizeof known);
            errfmt_set(err, errlen, "unknown option '%s' for backend %s (known: %s)", name,
                       d->backend, known);
            return -1;
        }
        if (!eq) {
            errfmt_set(err, errlen, "option '%s' for backend %s needs a value (%s=VALUE)", name,
                       d->backend, name);
            return -1;
        }
        if (opt_apply(o, obj, eq + 1, msg, sizeof msg) < 0) {
            char what[96];
            bopt_describe(o, what, sizeof what);
            errfmt_set(err, errlen, "option '%s' for backend %s is out of range: got '%s', "
                       "expected %s", name, d->backend, eq + 1, what);
            return -1;
        }
    }
    return 0;
}

int bopt_check(const struct bopt_desc *d, const char *const *params, char *err, size_t errlen)
{
    void *obj = malloc(d->objsize ? d->objsize : 1);
    if (!obj) {
        errfmt_set(err, errlen, "out of memory");
        return -1;
    }
    int rc = bopt_parse(d, params, obj, err, errlen);
    free(obj);
    return rc;
}

void bopt_usage(const struct bopt_desc *d, FILE *out)
{
    if (!d->nrows) {
        fprintf(out, "The %s backend takes no --backend-option.\n", d->backend);
        return;
    }
    fprintf(out, "Options of the %s backend (--backend-option NAME=VALUE, or backend-option = "
            "NAME=VALUE in a config file):\n", d->backend);
    for (size_t i = 0; i < d->nrows; i++) {
        const struct opt *o = &d->rows[i];
        char what[96];
        bopt_describe(o, what, sizeof what);
        fprintf(out, "  %s=%s\n      %s; %s (default %s)\n", o->name, o->arg ? o->arg : "VALUE",
                o->help, what, o->def && *o->def ? o->def : "none");
    }
}
