/* counting.c - an example backend plug-in: the built-in memory backend
 * wrapped with a counter of calls per method.
 *
 * Build (make check builds it as backends/examples/.libs/libcounting.so):
 *     cc -shared -fPIC -I. backends/examples/counting.c backends/memory.c \
 *        -o libcounting.so
 * Run:
 *     ./tabled --backend ./libcounting.so \
 *              --backend-option counting-report=/tmp/counts.txt
 *
 * A plug-in is a shared object exporting one function,
 * tabled_backend_init (TABLED_BACKEND_SYMBOL), that returns its vtable;
 * tabled checks the vtable's version before it trusts anything else in it.
 * Everything else should stay hidden (here: -fvisibility=hidden or
 * libtool's -export-symbols-regex), so that the memory backend compiled in
 * does not clash with tabled's own copy.
 *
 * The counts are appended at close() to the file named by the option
 * counting-report (one "method count" line each), or written to stderr
 * when the option is absent. They are kept per store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"

enum counting_method {
    CNT_OPEN, CNT_GET, CNT_ITER_OPEN, CNT_ITER_SEEK, CNT_ITER_NEXT, CNT_ITER_CLOSE,
    CNT_APPLY, CNT_WRITES, CNT_SYNC, CNT_N
};

static const char *const counting_names[CNT_N] = {
    "open", "get", "iter_open", "iter_seek", "iter_next", "iter_close", "apply", "writes", "sync",
};

/* The wrapper's store: the inner memory store plus the counters. */
struct backend_store {
    struct backend_store *inner;
    unsigned long long count[CNT_N];
    char *report;                   /* counting-report path, or NULL */
};

/* The wrapper's cursor: the inner cursor and its store's counters. */
struct backend_iter {
    struct backend_iter *inner;
    struct backend_store *st;
};

/* The built-in backends this plug-in wraps (compiled into it with their
 * sources; tabled's own copies stay hidden behind the plug-in's symbol
 * visibility). */
extern const struct backend_ops backend_memory_ops;

static const struct backend_ops *const inner_ops = &backend_memory_ops;

/* The value of "name=value" in params, or NULL. */
static const char *counting_param(const char *const *params, const char *name)
{
    size_t n = strlen(name);
    for (; params && *params; params++)
        if (strncmp(*params, name, n) == 0 && (*params)[n] == '=')
            return *params + n + 1;
    return NULL;
}

static int counting_open(const struct backend_options *opt, struct backend_store **out, char *err,
                         size_t errlen)
{
    struct backend_store *st = calloc(1, sizeof(*st));
    if (!st) {
        snprintf(err, errlen, "counting: out of memory");
        return BACKEND_NOMEM;
    }
    int rc = inner_ops->open(opt, &st->inner, err, errlen);
    if (rc != BACKEND_OK) {
        free(st);
        return rc;
    }
    const char *r = opt ? counting_param(opt->params, "counting-report") : NULL;
    st->report = r ? strdup(r) : NULL;
    st->count[CNT_OPEN] = 1;
    *out = st;
    return BACKEND_OK;
}

/* Writes the counters, then closes the inner store. */
static void counting_close(struct backend_store *st)
{
    if (!st)
        return;
    FILE *f = st->report ? fopen(st->report, "a") : stderr;
    if (f) {
        for (int i = 0; i < CNT_N; i++)
            fprintf(f, "%s%s %llu\n", f == stderr ? "counting: " : "", counting_names[i],
                    st->count[i]);
        if (f != stderr)
            fclose(f);
    }
    inner_ops->close(st->inner);
    free(st->report);
    free(st);
}

static int counting_get(struct backend_store *st, const void *key, size_t klen, void **val,
                        size_t *vlen, char *err, size_t errlen)
{
    st->count[CNT_GET]++;
    return inner_ops->get(st->inner, key, klen, val, vlen, err, errlen);
}

static int counting_iter_open(struct backend_store *st, const void *start, size_t slen,
                              const void *end, size_t elen, struct backend_iter **out, char *err,
                              size_t errlen)
{
    st->count[CNT_ITER_OPEN]++;
    struct backend_iter *it = malloc(sizeof(*it));
    if (!it) {
        snprintf(err, errlen, "counting: out of memory");
        return BACKEND_NOMEM;
    }
    int rc = inner_ops->iter_open(st->inner, start, slen, end, elen, &it->inner, err, errlen);
    if (rc != BACKEND_OK) {
        free(it);
        return rc;
    }
    it->st = st;
    *out = it;
    return BACKEND_OK;
}

static int counting_iter_seek(struct backend_iter *it, const void *key, size_t klen)
{
    it->st->count[CNT_ITER_SEEK]++;
    return inner_ops->iter_seek(it->inner, key, klen);
}

static int counting_iter_next(struct backend_iter *it, const void **key, size_t *klen,
                              const void **val, size_t *vlen)
{
    it->st->count[CNT_ITER_NEXT]++;
    return inner_ops->iter_next(it->inner, key, klen, val, vlen);
}

static void counting_iter_close(struct backend_iter *it)
{
    if (!it)
        return;
    it->st->count[CNT_ITER_CLOSE]++;
    inner_ops->iter_close(it->inner);
    free(it);
}

static int counting_apply(struct backend_store *st, const struct backend_write *w, size_t n,
                          char *err, size_t errlen)
{
    st->count[CNT_APPLY]++;
    st->count[CNT_WRITES] += n;
    return inner_ops->apply(st->inner, w, n, err, errlen);
}

static int counting_sync(struct backend_store *st, char *err, size_t errlen)
{
    st->count[CNT_SYNC]++;
    return inner_ops->sync(st->inner, err, errlen);
}

static const struct backend_ops counting_ops = {
    .version = TABLED_BACKEND_VERSION,
    .name = "counting",
    .open = counting_open,
    .close = counting_close,
    .get = counting_get,
    .iter_open = counting_iter_open,
    .iter_seek = counting_iter_seek,
    .iter_next = counting_iter_next,
    .iter_close = counting_iter_close,
    .apply = counting_apply,
    .sync = counting_sync,
};

/* The one exported symbol (TABLED_BACKEND_SYMBOL). */
__attribute__((visibility("default")))
const struct backend_ops *tabled_backend_init(void)
{
    return &counting_ops;
}
