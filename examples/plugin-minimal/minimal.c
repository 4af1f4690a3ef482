/* minimal.c - the smallest complete tabled storage backend plug-in.
 *
 * An in-memory ordered key/value store: a sorted array of pointers to
 * entries, binary search for every lookup. It implements interface
 * version 3 (backends/backend.h) with the version-2 methods (get_v2,
 * iter_next_v2, apply_v2: borrowed results, conditional writes, counts),
 * completes every call at once, and passes tabled-backend-check. Its data
 * lives as long as the store is open: like tabled's built-in "memory"
 * backend, it is not durable.
 *
 * Build (see the Makefile beside it; doc/plugins.md walks through it):
 *     cc -shared -fPIC $(pkg-config --cflags tabled-backend) minimal.c \
 *        -o minimal.so
 * Run: tabled --backend /path/to/minimal.so
 * Check: tabled-backend-check /path/to/minimal.so
 *
 * Built with -DBREAK_ORDER it orders keys by length first, which is not
 * the byte order backend.h asks for: tabled-backend-check must fail on
 * that build (tabled's own tests check that it does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/checks.h"

/* One key and its value (the value has at least one byte allocated, so
   that a zero-length value still has a non-NULL pointer). */
struct ent {
    size_t kl, vl;
    unsigned char *k, *v;
};

struct backend_store {
    struct ent **e;             /* sorted by min_cmp */
    size_t n, cap;
};

/* A cursor holds its bounds and where it stands, not a position in the
   array: the array moves under it when writes insert or delete. */
struct backend_iter {
    struct backend_store *st;
    unsigned char *start;       /* the lower bound (start_len 0: none) */
    size_t start_len;
    unsigned char *end;         /* NULL: to the last key */
    size_t end_len;
    unsigned char *pos;         /* the next key is the first >= pos (incl) or > pos */
    size_t pos_len, pos_cap;
    int incl;
};

/* Byte order, a proper prefix first: what backend.h asks for. */
static int min_cmp(const void *a, size_t al, const void *b, size_t bl)
{
#ifdef BREAK_ORDER
    if (al != bl)
        return al < bl ? -1 : 1;
#endif
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c)
        return c;
    return al < bl ? -1 : al > bl;
}

/* Index of the first entry whose key is >= key (or > key when !incl). */
static size_t min_find(const struct backend_store *st, const void *key, size_t kl, int incl)
{
    size_t lo = 0, hi = st->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = min_cmp(st->e[mid]->k, st->e[mid]->kl, key, kl);
        if (c < 0 || (c == 0 && !incl))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The entry of key, or NULL. */
static struct ent *min_lookup(const struct backend_store *st, const void *key, size_t kl)
{
    size_t i = min_find(st, key, kl, 1);
    if (i < st->n && min_cmp(st->e[i]->k, st->e[i]->kl, key, kl) == 0)
        return st->e[i];
    return NULL;
}

/* Options: this backend has none, and refuses every one by name, as
   backend.h asks (a misspelt option must not be silently ignored). */
static int min_open(const struct backend_options *opt, struct backend_store **out, char *err,
                    size_t errlen)
{
    for (const char *const *p = opt->params; p && *p; p++) {
        snprintf(err, errlen, "minimal: unknown option '%s' (this backend takes none)", *p);
        return BACKEND_INVALID;
    }
    struct backend_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "minimal: out of memory");
        return BACKEND_NOMEM;
    }
    *out = st;
    return BACKEND_OK;
}

static void min_free_ent(struct ent *e)
{
    free(e->k);
    free(e->v);
    free(e);
}

static void min_close(struct backend_store *st)
{
    for (size_t i = 0; i < st->n; i++)
        min_free_ent(st->e[i]);
    free(st->e);
    free(st);
}

/* Point lookup: the value is lent until the next call on the store. */
static int min_get_v2(struct backend_store *st, const void *key, size_t kl,
                      struct backend_call *call)
{
    backend_call_reset(call);
    if (!backend_key_ok(key, kl)) {
        snprintf(call->err, sizeof call->err, "minimal: get: empty or oversized key");
        return backend_call_end(call, BACKEND_INVALID);
    }
    struct ent *e = min_lookup(st, key, kl);
    if (!e)
        return backend_call_end(call, BACKEND_NOTFOUND);
    call->val = e->v;
    call->val_len = e->vl;
    return backend_call_end(call, BACKEND_OK);
}

/* Sets where the cursor stands (a copy: the key may be freed meanwhile). */
static int min_set_pos(struct backend_iter *it, const void *key, size_t kl, int incl)
{
    if (kl > it->pos_cap) {
        unsigned char *p = realloc(it->pos, kl);
        if (!p)
            return BACKEND_NOMEM;
        it->pos = p;
        it->pos_cap = kl;
    }
    if (kl)
        memcpy(it->pos, key, kl);
    it->pos_len = kl;
    it->incl = incl;
    return BACKEND_OK;
}

static int min_iter_open(struct backend_store *st, const void *start, size_t start_len,
                         const void *end, size_t end_len, struct backend_iter **out, char *err,
                         size_t errlen)
{
    const char *bad = backend_check_bounds(start, start_len, end, end_len);
    if (bad) {
        snprintf(err, errlen, "minimal: %s", bad);
        return BACKEND_INVALID;
    }
    struct backend_iter *it = calloc(1, sizeof *it);
    if (!it || min_set_pos(it, start, start_len, 1) != BACKEND_OK ||
        !(it->start = malloc(start_len ? start_len : 1)) ||
        (end && !(it->end = malloc(end_len ? end_len : 1)))) {
        if (it) {
            free(it->pos);
            free(it->start);
        }
        free(it);
        snprintf(err, errlen, "minimal: out of memory");
        return BACKEND_NOMEM;
    }
    if (start_len)
        memcpy(it->start, start, start_len);
    it->start_len = start_len;
    if (end && end_len)
        memcpy(it->end, end, end_len);
    it->end_len = end_len;
    it->st = st;
    *out = it;
    return BACKEND_OK;
}

/* The next step returns the first key >= key; a key below the start
   bound means the start. */
static int min_iter_seek(struct backend_iter *it, const void *key, size_t kl)
{
    if (!backend_seek_ok(key, kl))
        return BACKEND_INVALID;
    if (min_cmp(key, kl, it->start, it->start_len) < 0)
        return min_set_pos(it, it->start, it->start_len, 1);
    return min_set_pos(it, key, kl, 1);
}

/* One step: the entry is lent until the next call on the cursor or a
   write to the store. */
static int min_iter_next_v2(struct backend_iter *it, struct backend_call *call)
{
    backend_call_reset(call);
    struct backend_store *st = it->st;
    size_t i = min_find(st, it->pos, it->pos_len, it->incl);
    if (i >= st->n || (it->end && min_cmp(st->e[i]->k, st->e[i]->kl, it->end, it->end_len) >= 0))
        return backend_call_end(call, 0);
    struct ent *e = st->e[i];
    if (min_set_pos(it, e->k, e->kl, 0) != BACKEND_OK) {
        snprintf(call->err, sizeof call->err, "minimal: out of memory");
        return backend_call_end(call, BACKEND_NOMEM);
    }
    call->key = e->k;
    call->key_len = e->kl;
    call->val = e->v;
    call->val_len = e->vl;
    return backend_call_end(call, 1);
}

static void min_iter_close(struct backend_iter *it)
{
    free(it->pos);
    free(it->start);
    free(it->end);
    free(it);
}

/* The expectation check's lookup (backends/checks.h). */
static int min_probe(void *ctx, const void *key, size_t kl, int want_version, uint64_t *version,
                     char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct ent *e = min_lookup(ctx, key, kl);
    if (e && want_version)
        *version = backend_value_version(e->v, e->vl);
    return e != NULL;
}

/* Atomic writes: every allocation is made before anything changes, so
   that out of memory leaves the store as it was (BACKEND_NOMEM). */
static int min_apply_v2(struct backend_store *st, const struct backend_write *w,
                        const struct backend_cond *cond, size_t n, struct backend_call *call)
{
    backend_call_reset(call);
    const char *bad = backend_check_writes(w, cond, n);
    if (bad) {
        snprintf(call->err, sizeof call->err, "minimal: %s", bad);
        return backend_call_end(call, BACKEND_INVALID);
    }
    int rc = backend_check_conds(w, cond, n, min_probe, st, &call->failed, call->err,
                                 sizeof call->err);
    if (rc != BACKEND_OK)
        return backend_call_end(call, rc);
    struct ent **fresh = calloc(n ? n : 1, sizeof *fresh);
    if (!fresh || st->n + n > st->cap) {
        size_t cap = st->cap * 2 > st->n + n ? st->cap * 2 : st->n + n + 16;
        struct ent **grown = fresh ? realloc(st->e, cap * sizeof *grown) : NULL;
        if (!grown) {
            free(fresh);
            snprintf(call->err, sizeof call->err, "minimal: out of memory");
            return backend_call_end(call, BACKEND_NOMEM);
        }
        st->e = grown;
        st->cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        if (w[i].op != BACKEND_PUT)
            continue;
        struct ent *e = fresh[i] = calloc(1, sizeof *e);
        if (e) {
            e->k = malloc(w[i].key_len);
            e->v = malloc(w[i].val_len ? w[i].val_len : 1);
        }
        if (!e || !e->k || !e->v) {
            for (size_t j = 0; j <= i; j++)
                if (fresh[j])
                    min_free_ent(fresh[j]);
            free(fresh);
            snprintf(call->err, sizeof call->err, "minimal: out of memory");
            return backend_call_end(call, BACKEND_NOMEM);
        }
        memcpy(e->k, w[i].key, w[i].key_len);
        if (w[i].val_len)
            memcpy(e->v, w[i].val, w[i].val_len);
        e->kl = w[i].key_len;
        e->vl = w[i].val_len;
    }
    /* Nothing can fail from here on; later writes win. */
    for (size_t i = 0; i < n; i++) {
        size_t at = min_find(st, w[i].key, w[i].key_len, 1);
        int found = at < st->n &&
                    min_cmp(st->e[at]->k, st->e[at]->kl, w[i].key, w[i].key_len) == 0;
        if (w[i].op == BACKEND_PUT) {
            if (found) {
                min_free_ent(st->e[at]);
            } else {
                memmove(st->e + at + 1, st->e + at, (st->n - at) * sizeof *st->e);
                st->n++;
                call->created++;
            }
            st->e[at] = fresh[i];
        } else if (found) {
            min_free_ent(st->e[at]);
            memmove(st->e + at, st->e + at + 1, (st->n - at - 1) * sizeof *st->e);
            st->n--;
            call->removed++;
        }
    }
    free(fresh);
    if (!call->want_counts)
        call->created = call->removed = 0;
    return backend_call_end(call, BACKEND_OK);
}

/* Nothing is durable: sync has nothing to do. */
static int min_sync(struct backend_store *st, char *err, size_t errlen)
{
    (void)st;
    (void)err;
    (void)errlen;
    return BACKEND_OK;
}

static const struct backend_ops min_ops = {
    .version = TABLED_BACKEND_VERSION,
    .name = "minimal",
    .open = min_open,
    .close = min_close,
    .iter_open = min_iter_open,
    .iter_seek = min_iter_seek,
    .iter_close = min_iter_close,
    .sync = min_sync,
    .get_v2 = min_get_v2,
    .iter_next_v2 = min_iter_next_v2,
    .apply_v2 = min_apply_v2,
};

/* The one symbol tabled looks up (TABLED_BACKEND_SYMBOL). */
__attribute__((visibility("default"))) const struct backend_ops *tabled_backend_init(void)
{
    return &min_ops;
}
