/* badplugin.c - vtables the loader must judge, so that the conformance
 * suite can check backends/registry.c. The environment variable
 * TABLED_BADPLUGIN picks the vtable tabled_backend_init returns:
 *
 *   (unset)        interface version 43
 *   version0       version 0
 *   version3       version TABLED_BACKEND_VERSION_MAX + 1
 *   v1-no-get      version 1 without get (v1 needs every method)
 *   v1-no-apply    version 1 without apply, get_v2 and apply_v2 set (a v1
 *                  vtable's v2 fields do not count)
 *   v2-no-get      version 2 with neither get nor get_v2
 *   v2-no-next     version 2 with neither iter_next nor iter_next_v2
 *   v2-no-apply    version 2 with neither apply nor apply_v2
 *   v2-no-open     version 2 without open
 *   v2-only        version 2 with get, iter_next and apply NULL and their
 *                  _v2 forms set: accepted
 *   v4-bad-row     version 4 with an option row whose range is backwards
 *   v4-rows        version 4 with two well-formed option rows: accepted
 *   v1-short       a complete version-1 vtable that ends where version 2's
 *                  fields begin, at the end of a page whose next page is
 *                  unreadable: accepted, and reading any v2 field faults
 *
 * The methods are never called; they only need to exist. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backends/backend.h"

static int bad_open(const struct backend_options *o, struct backend_store **out, char *e, size_t l)
{
    (void)o, (void)out, (void)e, (void)l;
    return BACKEND_INVALID;
}
static void bad_close(struct backend_store *st) { (void)st; }
static int bad_get(struct backend_store *st, const void *k, size_t kl, void **v, size_t *vl,
                   char *e, size_t l)
{
    (void)st, (void)k, (void)kl, (void)v, (void)vl, (void)e, (void)l;
    return BACKEND_INVALID;
}
static int bad_iter_open(struct backend_store *st, const void *s, size_t sl, const void *e,
                         size_t el, struct backend_iter **out, char *err, size_t l)
{
    (void)st, (void)s, (void)sl, (void)e, (void)el, (void)out, (void)err, (void)l;
    return BACKEND_INVALID;
}
static int bad_iter_seek(struct backend_iter *it, const void *k, size_t kl)
{
    (void)it, (void)k, (void)kl;
    return BACKEND_INVALID;
}
static int bad_iter_next(struct backend_iter *it, const void **k, size_t *kl, const void **v,
                         size_t *vl)
{
    (void)it, (void)k, (void)kl, (void)v, (void)vl;
    return BACKEND_INVALID;
}
static void bad_iter_close(struct backend_iter *it) { (void)it; }
static int bad_apply(struct backend_store *st, const struct backend_write *w, size_t n, char *e,
                     size_t l)
{
    (void)st, (void)w, (void)n, (void)e, (void)l;
    return BACKEND_INVALID;
}
static int bad_sync(struct backend_store *st, char *e, size_t l)
{
    (void)st, (void)e, (void)l;
    return BACKEND_INVALID;
}
static int bad_get_v2(struct backend_store *st, const void *k, size_t kl, struct backend_call *c)
{
    (void)st, (void)k, (void)kl, (void)c;
    return BACKEND_INVALID;
}
static int bad_iter_next_v2(struct backend_iter *it, struct backend_call *c)
{
    (void)it, (void)c;
    return BACKEND_INVALID;
}
static int bad_apply_v2(struct backend_store *st, const struct backend_write *w,
                        const struct backend_cond *cond, size_t n, struct backend_call *c)
{
    (void)st, (void)w, (void)cond, (void)n, (void)c;
    return BACKEND_INVALID;
}

/* Every method of both versions set. */
static const struct backend_ops bad_full = {
    .version = 2, .name = "bad", .open = bad_open, .close = bad_close, .get = bad_get,
    .iter_open = bad_iter_open, .iter_seek = bad_iter_seek, .iter_next = bad_iter_next,
    .iter_close = bad_iter_close, .apply = bad_apply, .sync = bad_sync,
    .get_v2 = bad_get_v2, .iter_next_v2 = bad_iter_next_v2, .apply_v2 = bad_apply_v2,
};

static struct backend_ops bad_ops;

/* A version-1 vtable as an old plug-in lays it out: only the fields up to
 * sync, ending at a page boundary followed by a PROT_NONE page. */
static const struct backend_ops *bad_short_v1(void)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t v1_size = offsetof(struct backend_ops, caps);
    unsigned char *m = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    unsigned char *at = m + page - v1_size;
    struct backend_ops v1 = bad_full;
    v1.version = 1;
    memcpy(at, &v1, v1_size);
    if (mprotect(m + page, (size_t)page, PROT_NONE) != 0)
        return NULL;
    return (const struct backend_ops *)(void *)at;   /* never unmapped */
}

__attribute__((visibility("default")))
const struct backend_ops *tabled_backend_init(void)
{
    const char *c = getenv("TABLED_BADPLUGIN");
    bad_ops = bad_full;
    if (!c || !*c) {
        bad_ops.version = 43;
    } else if (!strcmp(c, "version0")) {
        bad_ops.version = 0;
    } else if (!strcmp(c, "version3")) {
        bad_ops.version = TABLED_BACKEND_VERSION_MAX + 1;
    } else if (!strcmp(c, "v1-no-get")) {
        bad_ops.version = 1;
        bad_ops.get = NULL;
    } else if (!strcmp(c, "v1-no-apply")) {
        bad_ops.version = 1;
        bad_ops.apply = NULL;
    } else if (!strcmp(c, "v2-no-get")) {
        bad_ops.get = NULL;
        bad_ops.get_v2 = NULL;
    } else if (!strcmp(c, "v2-no-next")) {
        bad_ops.iter_next = NULL;
        bad_ops.iter_next_v2 = NULL;
    } else if (!strcmp(c, "v2-no-apply")) {
        bad_ops.apply = NULL;
        bad_ops.apply_v2 = NULL;
    } else if (!strcmp(c, "v2-no-open")) {
        bad_ops.open = NULL;
    } else if (!strcmp(c, "v2-only")) {
        bad_ops.get = NULL;
        bad_ops.iter_next = NULL;
        bad_ops.apply = NULL;
    } else if (!strcmp(c, "v4-bad-row")) {
        static const struct backend_option backwards[] = {
            {"bad-size", BACKEND_OPTION_SIZE, 100, 10, NULL, "min above max"},
            {NULL, 0, 0, 0, NULL, NULL},
        };
        bad_ops.version = 4;
        bad_ops.options = backwards;
    } else if (!strcmp(c, "v4-rows")) {
        static const struct backend_option rows[] = {
            {"bad-text", BACKEND_OPTION_STRING, 0, 0, NULL, "any text"},
            {"bad-on", BACKEND_OPTION_BOOL, 0, 0, "off", "a switch"},
            {NULL, 0, 0, 0, NULL, NULL},
        };
        bad_ops.version = 4;
        bad_ops.options = rows;
    } else if (!strcmp(c, "v1-short")) {
        return bad_short_v1();
    } else {
        return NULL;
    }
    return &bad_ops;
}
