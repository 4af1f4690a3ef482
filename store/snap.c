/* snap.c - a cursor over the store as of one instant (see snap.h). */
#include "backends/registry.h"
#include "core/coding.h"
#include "store/snap.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/bkey.h"
#include "core/buf.h"
#include "core/errfmt.h"

/* A kept key's map value: SNAP_ABSENT, or SNAP_VALUE then the value's
 * offset and length in the temporary file (big-endian u64 each). */
#define SNAP_ABSENT 'A'
#define SNAP_VALUE 'V'
#define SNAP_MAPVAL_LEN 17

/* One side of the merge: a cursor and the entry it would return next. */
struct snap_side {
    struct kv_iter *it;
    int state;                   /* 0: not read, 1: entry below, 2: range ended */
    const void *k, *v;
    size_t kl, vl;
};

struct snap {
    struct kv *kv;
    struct snap_range *r;        /* copies, in the order they are read */
    size_t n;
    size_t *by_lo;               /* indexes of r, ascending by lo */
    unsigned char *bytes;        /* the bounds' bytes (r points into it) */
    size_t cur;                  /* the range being read */
    int entered;                 /* snap_enter was called */
    struct buf pos;              /* last key returned from r[cur] */
    int has_pos;
    struct snap_side live;       /* the store */
    int failed;
    char err[256];
    /* live snaps of stores without snapshot cursors only: */
    int watching;
    struct kv_iter *probe;       /* reads a key's state before a write */
    struct kv *map;              /* kept keys -> SNAP_ABSENT / value place */
    struct snap_side kept;
    int fd;                      /* the kept values, -1 when none */
    uint64_t fsize;
    int dirty;                   /* a write came: both sides repositioned */
    struct buf val;              /* a kept value read back */
    unsigned long long nkept, kept_bytes;
};

/* Records the first failure: the snap then only reports it. */
static void snap_fail(struct snap *s, const char *fmt, const char *detail)
{
    if (s->failed)
        return;
    s->failed = BACKEND_IOERR;
    snprintf(s->err, sizeof s->err, fmt, detail);
}

/* Whether the store's cursors read a snapshot of their own (backend.h:
 * LevelDB's give one as of iter_open). */
static int snapshot_cursors(const struct kv *kv)
{
    return kv_ops(kv) == &backend_leveldb_ops;
}

/* Copies the ranges and sorts their lookup index by lower bound. */
static void copy_ranges(struct snap *s, const struct snap_range *r, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += r[i].lo_len + (r[i].hi ? r[i].hi_len : 0);
    s->r = calloc(n ? n : 1, sizeof *s->r);
    s->by_lo = calloc(n ? n : 1, sizeof *s->by_lo);
    s->bytes = malloc(total ? total : 1);
    if (!s->r || !s->by_lo || !s->bytes)
        abort();
    unsigned char *p = s->bytes;
    for (size_t i = 0; i < n; i++) {
        s->r[i] = r[i];
        s->r[i].lo = p;
        if (r[i].lo_len)
            memcpy(p, r[i].lo, r[i].lo_len);
        p += r[i].lo_len;
        if (r[i].hi) {
            s->r[i].hi = p;
            if (r[i].hi_len)
                memcpy(p, r[i].hi, r[i].hi_len);
            p += r[i].hi_len;
        }
        /* insertion sort: a few hundred tables at most, once */
        size_t j = i;
        while (j > 0 && bkey_cmp(s->r[s->by_lo[j - 1]].lo, s->r[s->by_lo[j - 1]].lo_len,
                                 s->r[i].lo, s->r[i].lo_len) > 0) {
            s->by_lo[j] = s->by_lo[j - 1];
            j--;
        }
        s->by_lo[j] = i;
    }
    s->n = n;
}

/* Whether key k lies below range r's upper bound. */
static int below_hi(const struct snap_range *r, const void *k, size_t kl)
{
    return !r->hi || bkey_cmp(k, kl, r->hi, r->hi_len) < 0;
}

/* The range holding key k, or -1. */
static long range_of(const struct snap *s, const void *k, size_t kl)
{
    size_t lo = 0, hi = s->n;   /* the last range with lo <= k */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct snap_range *r = &s->r[s->by_lo[mid]];
        if (bkey_cmp(r->lo, r->lo_len, k, kl) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    size_t i = s->by_lo[lo - 1];
    return below_hi(&s->r[i], k, kl) ? (long)i : -1;
}

/* Whether the snap may still return key k (so its state as of snap_open
 * must be kept before a write changes it). */
static int ahead(const struct snap *s, const void *k, size_t kl)
{
    long i = range_of(s, k, kl);
    if (i < 0)
        return 0;
    if (!s->entered || (size_t)i > s->cur)
        return 1;
    if ((size_t)i < s->cur)
        return 0;
    return !s->has_pos || bkey_cmp(k, kl, s->pos.data, s->pos.len) > 0;
}

/* The store's state of key k now, through the probe cursor: 1 with the
 * value, 0 when absent, or a failure. */
static int probe(struct snap *s, const void *k, size_t kl, const void **v, size_t *vl)
{
    const void *gk;
    size_t gkl;
    if (kv_iter_seek(s->probe, k, kl) != 0)
        return BACKEND_IOERR;
    int rc = kv_iter_next(s->probe, &gk, &gkl, v, vl);
    if (rc < 0)
        return rc;
    return rc == 1 && bkey_cmp(gk, gkl, k, kl) == 0;
}

/* The map's entry for k: 1 with its value, 0 when none, or a failure. */
static int map_get(struct snap *s, const void *k, size_t kl, const unsigned char **mv)
{
    const void *v;
    size_t vl;
    char e[200];
    int rc = kv_get(s->map, k, kl, &v, &vl, e, sizeof e);
    if (rc == BACKEND_NOTFOUND)
        return 0;
    if (rc != BACKEND_OK || vl < 1)
        return rc < 0 ? rc : BACKEND_CORRUPT;
    *mv = v;
    return 1;
}

/* Writes all of p at offset off of the temporary file. */
static int write_at(int fd, const void *p, size_t n, uint64_t off)
{
    const char *c = p;
    while (n) {
        ssize_t w = pwrite(fd, c, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

/* Keeps the state of key k as it is now, when the snap may still return
 * it and has kept nothing for it yet. */
static void keep(struct snap *s, const void *k, size_t kl)
{
    const unsigned char *mv;
    int rc = map_get(s, k, kl, &mv);
    if (rc != 0) {
        if (rc < 0)
            snap_fail(s, "reading the map of kept keys failed%s", "");
        return;
    }
    const void *v;
    size_t vl;
    rc = probe(s, k, kl, &v, &vl);
    if (rc < 0) {
        snap_fail(s, "reading the store before a write failed%s", "");
        return;
    }
    unsigned char m[SNAP_MAPVAL_LEN];
    size_t ml = 1;
    m[0] = SNAP_ABSENT;
    if (rc == 1) {
        if (write_at(s->fd, v, vl, s->fsize) < 0) {
            snap_fail(s, "writing the temporary file failed: %s", strerror(errno));
            return;
        }
        m[0] = SNAP_VALUE;
        for (int i = 0; i < 8; i++) {
            m[1 + i] = (unsigned char)(s->fsize >> (56 - 8 * i));
            m[9 + i] = (unsigned char)((uint64_t)vl >> (56 - 8 * i));
        }
        ml = SNAP_MAPVAL_LEN;
        s->fsize += vl;
        s->kept_bytes += vl;
    }
    struct backend_write w = {BACKEND_PUT, k, kl, m, ml};
    char e[200];
    if (kv_apply(s->map, &w, NULL, 1, 0, NULL, e, sizeof e) != BACKEND_OK) {
        snap_fail(s, "keeping a key's state failed: %s", e);
        return;
    }
    s->nkept++;
}

/* Before a write (kv_watcher.before): keeps the state of every key it
 * touches that the snap may still return. */
static void watch_before(void *arg, const struct backend_write *w, size_t n)
{
    struct snap *s = arg;
    s->dirty = 1;
    for (size_t i = 0; i < n && !s->failed; i++)
        if (ahead(s, w[i].key, w[i].key_len))
            keep(s, w[i].key, w[i].key_len);
}

/* After a write (kv_watcher.after): a key kept as absent that is absent
 * again is as it was at snap_open, and leaves the map. */
static void watch_after(void *arg, const struct backend_write *w, size_t n, int rc)
{
    struct snap *s = arg;
    s->dirty = 1;
    if (rc != BACKEND_OK)
        return;
    for (size_t i = 0; i < n && !s->failed; i++) {
        const unsigned char *mv;
        const void *v;
        size_t vl;
        if (w[i].op != BACKEND_DELETE || map_get(s, w[i].key, w[i].key_len, &mv) != 1 ||
            mv[0] != SNAP_ABSENT || probe(s, w[i].key, w[i].key_len, &v, &vl) != 0)
            continue;
        struct backend_write d = {BACKEND_DELETE, w[i].key, w[i].key_len, NULL, 0};
        char e[200];
        if (kv_apply(s->map, &d, NULL, 1, 0, NULL, e, sizeof e) == BACKEND_OK)
            s->nkept--;
    }
}

/* Opens the temporary file of kept values under $TMPDIR and unlinks it. */
static int open_tmp(struct snap *s, char *err, size_t errlen)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/tabled-snap-XXXXXX", dir) >= sizeof path) {
        errfmt_set(err, errlen, "the temporary directory's name is too long: %s", dir);
        return BACKEND_INVALID;
    }
    s->fd = mkstemp(path);
    if (s->fd < 0) {
        errfmt_set(err, errlen, "cannot create a temporary file in %s (set TMPDIR to a "
                   "writable directory): %s", dir, strerror(errno));
        return BACKEND_IOERR;
    }
    unlink(path);
    return 0;
}

/* Sets up the watching of a live snap: map, probe cursor, file, watcher. */
static int start_watching(struct snap *s, char *err, size_t errlen)
{
    if (kv_defers(s->kv)) {
        errfmt_set(err, errlen, "a consistent read of a store whose calls complete later "
                   "is not available (%s)", kv_ops(s->kv)->name);
        return BACKEND_INVALID;
    }
    struct backend_options o;
    memset(&o, 0, sizeof o);
    int rc = kv_open(&backend_memory_ops, &o, &s->map, err, errlen);
    if (rc == 0)
        rc = kv_iter_open(s->map, NULL, 0, NULL, 0, &s->kept.it, err, errlen);
    if (rc == 0)
        rc = kv_iter_open(s->kv, NULL, 0, NULL, 0, &s->probe, err, errlen);
    if (rc == 0)
        rc = open_tmp(s, err, errlen);
    if (rc != 0)
        return rc;
    struct kv_watcher w = {watch_before, watch_after, s};
    if (kv_watch(s->kv, &w) != 0) {
        errfmt_set(err, errlen, "another consistent read of the store is running");
        return BACKEND_INVALID;
    }
    s->watching = 1;
    return 0;
}

int snap_open(struct kv *kv, const struct snap_range *r, size_t n, int live, struct snap **out,
              char *err, size_t errlen)
{
    struct snap *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->kv = kv;
    s->fd = -1;
    buf_init(&s->pos);
    buf_init(&s->val);
    copy_ranges(s, r, n);
    int rc = kv_iter_open(kv, NULL, 0, NULL, 0, &s->live.it, err, errlen);
    if (rc == 0 && live && !snapshot_cursors(kv))
        rc = start_watching(s, err, errlen);
    if (rc != 0) {
        snap_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* Positions side d at the first key after the last one returned (or at
 * the current range's start) in its store. */
static int side_seek(struct snap *s, struct snap_side *d)
{
    d->state = 0;
    if (!s->has_pos)
        return kv_iter_seek(d->it, s->r[s->cur].lo, s->r[s->cur].lo_len);
    buf_putc(&s->pos, '\0');   /* the smallest key after pos */
    int rc = kv_iter_seek(d->it, s->pos.data, s->pos.len);
    s->pos.len--;
    return rc;
}

int snap_enter(struct snap *s, size_t i)
{
    if (s->failed)
        return s->failed;
    if (i >= s->n || (s->entered && i <= s->cur)) {
        s->failed = BACKEND_INVALID;
        snprintf(s->err, sizeof s->err, "snap_enter: range %zu is behind or past the end", i);
        return s->failed;
    }
    s->cur = i;
    s->entered = 1;
    s->has_pos = 0;
    s->dirty = 0;
    int rc = side_seek(s, &s->live);
    if (rc == 0 && s->watching)
        rc = side_seek(s, &s->kept);
    if (rc != 0)
        snap_fail(s, "positioning a cursor failed%s", "");
    return s->failed;
}

/* Reads side d's next entry when it has none: 0, or a failure. */
static int side_fill(struct snap *s, struct snap_side *d)
{
    if (d->state)
        return 0;
    int rc = kv_iter_next(d->it, &d->k, &d->kl, &d->v, &d->vl);
    if (rc < 0) {
        snap_fail(s, "%s", kv_iter_error(d->it));
        return rc;
    }
    d->state = rc == 1 && below_hi(&s->r[s->cur], d->k, d->kl) ? 1 : 2;
    return 0;
}

/* Reads a kept value back from the temporary file into s->val. */
static int read_kept(struct snap *s, const unsigned char *m, size_t ml)
{
    if (ml != SNAP_MAPVAL_LEN) {
        snap_fail(s, "a kept key's record is malformed%s", "");
        return -1;
    }
    uint64_t off = coding_get_be64(m + 1), len = coding_get_be64(m + 9);
    buf_reset(&s->val);
    buf_reserve(&s->val, len + 1);
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(s->fd, s->val.data + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snap_fail(s, "reading the temporary file failed: %s",
                      r < 0 ? strerror(errno) : "short file");
            return -1;
        }
        got += (size_t)r;
    }
    s->val.len = len;
    return 0;
}

/* Remembers k as the last key returned. */
static void set_pos(struct snap *s, const void *k, size_t kl)
{
    buf_reset(&s->pos);
    buf_append(&s->pos, k, kl);
    s->has_pos = 1;
}

int snap_next(struct snap *s, const void **key, size_t *key_len, const void **val,
              size_t *val_len)
{
    if (s->failed)
        return s->failed;
    if (!s->entered) {
        snap_fail(s, "snap_next before snap_enter%s", "");
        return s->failed;
    }
    if (!s->watching) {
        if (side_fill(s, &s->live) < 0)
            return s->failed;
        if (s->live.state == 2)
            return 0;
        s->live.state = 0;
        *key = s->live.k;
        *key_len = s->live.kl;
        *val = s->live.v;
        *val_len = s->live.vl;
        return 1;
    }
    for (;;) {
        if (s->dirty) {
            /* a write may have moved or freed what both cursors hold */
            s->dirty = 0;
            if (side_seek(s, &s->live) != 0 || side_seek(s, &s->kept) != 0) {
                snap_fail(s, "positioning a cursor failed%s", "");
                return s->failed;
            }
        }
        if (side_fill(s, &s->live) < 0 || side_fill(s, &s->kept) < 0)
            return s->failed;
        struct snap_side *L = &s->live, *K = &s->kept;
        if (L->state == 2 && K->state == 2)
            return 0;
        int c = L->state == 2 ? 1 : K->state == 2 ? -1 : bkey_cmp(L->k, L->kl, K->k, K->kl);
        if (c < 0) {
            /* unchanged since snap_open: from the store */
            L->state = 0;
            set_pos(s, L->k, L->kl);
            *key = L->k;
            *key_len = L->kl;
            *val = L->v;
            *val_len = L->vl;
            return 1;
        }
        if (c == 0)
            L->state = 0;   /* changed since: the kept state wins */
        K->state = 0;
        set_pos(s, K->k, K->kl);
        const unsigned char *m = K->v;
        if (K->vl < 1 || m[0] == SNAP_ABSENT)
            continue;       /* written since snap_open, absent then */
        if (read_kept(s, m, K->vl) < 0)
            return s->failed;
        *key = s->pos.data;
        *key_len = s->pos.len;
        *val = s->val.data;
        *val_len = s->val.len;
        return 1;
    }
}

const char *snap_error(const struct snap *s)
{
    return s->err;
}

void snap_kept(const struct snap *s, unsigned long long *keys, unsigned long long *bytes)
{
    *keys = s->nkept;
    *bytes = s->kept_bytes;
}

void snap_close(struct snap *s)
{
    if (!s)
        return;
    if (s->watching)
        kv_watch(s->kv, NULL);
    kv_iter_close(s->live.it);
    kv_iter_close(s->kept.it);
    kv_iter_close(s->probe);
    kv_close(s->map);
    if (s->fd >= 0)
        close(s->fd);
    buf_free(&s->pos);
    buf_free(&s->val);
    free(s->r);
    free(s->by_lo);
    free(s->bytes);
    free(s);
}
