/* backend_adapter.c - see backend_adapter.h. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/host.h"
#include "tests/unit/backend_adapter.h"

static struct event_base *bta_evbase;
static struct host *bta_h;
static int bta_bad;

/* One call the adapter waits for, and the copies of what it lent. */
struct bta_wait {
    struct backend_call call;
    int in_method;                  /* the method has not returned yet */
    int done;                       /* times done() was called */
    unsigned char *buf;             /* key then value, copied in done() */
    size_t cap;
    struct backend_mget *mget;      /* get_multi_v2: the keys, whose
                                       values done() copies into buf */
    size_t nmget;
};

static struct bta_wait bta_get_w, bta_next_w, bta_mget_w;

struct event_base *bta_base(void)
{
    if (!bta_evbase) {
        bta_evbase = event_base_new();
        bta_h = bta_evbase ? host_new(bta_evbase) : NULL;
        if (!bta_h) {
            fprintf(stderr, "backend_adapter: cannot make an event loop\n");
            exit(99);
        }
    }
    return bta_evbase;
}

const struct backend_host *bta_host(void)
{
    bta_base();
    return host_hooks(bta_h);
}

int bta_violations(void)
{
    return bta_bad;
}

/* Counts a breach of a rule of backend.h. */
static void bta_breach(const char *what)
{
    /* the first 20 are printed; a backend that breaks a rule on every
       call would otherwise write a line per call (millions) */
    if (bta_bad < 20)
        printf("# backend broke the interface: %s\n", what);
    else if (bta_bad == 20)
        printf("# (further breaches are counted, not printed)\n");
    bta_bad++;
}

/* done() of the adapter's calls: copies what the backend lent, which is
 * only valid until done() returns. */
static void bta_done(struct backend_call *call)
{
    struct bta_wait *w = call->arg;
    if (w->in_method)
        bta_breach("done() called from inside the method");
    if (w->done++)
        bta_breach("done() called twice");
    size_t need = call->key_len + call->val_len + 1;
    for (size_t i = 0; i < w->nmget; i++)
        if (w->mget[i].status == BACKEND_OK)
            need += w->mget[i].val_len;
    if (need > w->cap) {
        unsigned char *p = realloc(w->buf, need);
        if (!p) {
            bta_breach("(adapter out of memory)");
            return;
        }
        w->buf = p;
        w->cap = need;
    }
    if (call->key_len)
        memcpy(w->buf, call->key, call->key_len);
    if (call->val_len)
        memcpy(w->buf + call->key_len, call->val, call->val_len);
    if (call->key)
        call->key = w->buf;
    if (call->val)
        call->val = w->buf + call->key_len;
    size_t off = call->key_len + call->val_len;
    for (size_t i = 0; i < w->nmget; i++) {
        struct backend_mget *m = &w->mget[i];
        if (m->status != BACKEND_OK)
            continue;
        if (!m->val) {
            bta_breach("get_multi_v2: a found key with a NULL value pointer");
            continue;
        }
        memcpy(w->buf + off, m->val, m->val_len);
        m->val = w->buf + off;
        off += m->val_len;
    }
}

int bta_run_until(int *flag)
{
    struct event_base *b = bta_base();
    time_t deadline = time(NULL) + 10;
    while (!*flag) {
        int r = event_base_loop(b, EVLOOP_ONCE);
        if (r != 0 && !*flag) {
            bta_breach("BACKEND_PENDING with nothing left in the event loop");
            return -1;
        }
        if (time(NULL) > deadline && !*flag) {
            bta_breach("a deferred call did not complete within 10 s");
            return -1;
        }
    }
    return 0;
}

/* Prepares a wait for one version-2 call. */
static void bta_start(const struct backend_ops *ops, struct bta_wait *w, int want_counts)
{
    (void)ops;
    memset(&w->call, 0, sizeof w->call);
    w->call.done = bta_done;
    w->call.arg = w;
    w->call.want_counts = want_counts;
    w->done = 0;
    w->in_method = 1;
}

/* After the method returned rc: waits when it is pending and returns the
 * final status. */
static int bta_finish(const struct backend_ops *ops, struct bta_wait *w, int rc)
{
    w->in_method = 0;
    if (rc != BACKEND_PENDING) {
        if (w->done)
            bta_breach("done() called for a call that completed at once");
        if (w->call.status != rc)
            bta_breach("call.status differs from the returned status");
        return rc;
    }
    if (!(ops->caps & BACKEND_CAP_DEFERS))
        bta_breach("BACKEND_PENDING from a backend without BACKEND_CAP_DEFERS");
    if (bta_run_until(&w->done) != 0)
        return BACKEND_IOERR;
    if (w->call.status == BACKEND_PENDING)
        bta_breach("done() with call.status still BACKEND_PENDING");
    return w->call.status;
}

int bta_get(const struct backend_ops *ops, struct backend_store *st, const void *key,
            size_t key_len, const void **val, size_t *val_len, char *err, size_t errlen)
{
    if (!BTA_HAS(ops, get_v2)) {
        static void *v1copy;        /* the version-1 copy, lent like a v2 value */
        free(v1copy);
        v1copy = NULL;
        size_t n = 0;
        int rc = ops->get(st, key, key_len, &v1copy, &n, err, errlen);
        if (rc == BACKEND_OK) {
            *val = v1copy;
            *val_len = n;
        } else {
            v1copy = NULL;
        }
        return rc;
    }
    struct bta_wait *w = &bta_get_w;
    bta_start(ops, w, 0);
    int rc = bta_finish(ops, w, ops->get_v2(st, key, key_len, &w->call));
    if (rc == BACKEND_OK) {
        if (!w->call.val)
            bta_breach("get_v2: BACKEND_OK with a NULL value pointer");
        *val = w->call.val;
        *val_len = w->call.val_len;
    } else if (rc != BACKEND_NOTFOUND && err && errlen) {
        snprintf(err, errlen, "%s", w->call.err);
    }
    return rc;
}

int bta_get_multi(const struct backend_ops *ops, struct backend_store *st,
                  struct backend_mget *keys, size_t n, char *err, size_t errlen)
{
    if (!BTA_HAS3(ops, get_multi_v2)) {
        snprintf(err, errlen, "(adapter) no get_multi_v2");
        return BACKEND_INVALID;
    }
    struct bta_wait *w = &bta_mget_w;
    bta_start(ops, w, 0);
    w->mget = keys;
    w->nmget = n;
    int rc = bta_finish(ops, w, ops->get_multi_v2(st, keys, n, &w->call));
    w->mget = NULL;
    w->nmget = 0;
    for (size_t i = 0; rc == BACKEND_OK && i < n; i++)
        if (keys[i].status == BACKEND_OK && !keys[i].val)
            bta_breach("get_multi_v2: a found key with a NULL value pointer");
    if (rc != BACKEND_OK && err && errlen)
        snprintf(err, errlen, "%s", w->call.err);
    return rc;
}

int bta_next(const struct backend_ops *ops, struct backend_iter *it, const void **key,
             size_t *key_len, const void **val, size_t *val_len)
{
    const void *k = NULL, *v = NULL;
    size_t kl = 0, vl = 0;
    int rc;
    if (!BTA_HAS(ops, iter_next_v2)) {
        rc = ops->iter_next(it, &k, &kl, &v, &vl);
    } else {
        struct bta_wait *w = &bta_next_w;
        bta_start(ops, w, 0);
        rc = bta_finish(ops, w, ops->iter_next_v2(it, &w->call));
        k = w->call.key;
        kl = w->call.key_len;
        v = w->call.val;
        vl = w->call.val_len;
        if (rc == 1 && (!k || !v))
            bta_breach("iter_next_v2: an entry with a NULL key or value pointer");
    }
    if (rc == 1) {
        if (key)
            *key = k;
        if (key_len)
            *key_len = kl;
        if (val)
            *val = v;
        if (val_len)
            *val_len = vl;
    }
    return rc;
}

int bta_apply(const struct backend_ops *ops, struct backend_store *st,
              const struct backend_write *w, const struct backend_cond *cond, size_t n,
              int want_counts, struct backend_call *out, char *err, size_t errlen)
{
    int rc;
    if (!BTA_HAS(ops, apply_v2)) {
        char e[256] = "";
        rc = cond || want_counts ? BACKEND_INVALID : ops->apply(st, w, n, e, sizeof e);
        if (cond || want_counts)
            snprintf(e, sizeof e, "(adapter) a version-1 apply() takes no expectations or counts");
        if (out) {
            memset(out, 0, sizeof *out);
            out->status = rc;
            snprintf(out->err, sizeof out->err, "%s", e);
        }
        if (rc != BACKEND_OK && err && errlen)
            snprintf(err, errlen, "%s", e);
        return rc;
    }
    struct bta_wait wt;
    memset(&wt, 0, sizeof wt);
    bta_start(ops, &wt, want_counts);
    rc = bta_finish(ops, &wt, ops->apply_v2(st, w, cond, n, &wt.call));
    free(wt.buf);
    if (out)
        *out = wt.call;
    if (rc != BACKEND_OK && err && errlen)
        snprintf(err, errlen, "%s", wt.call.err);
    return rc;
}

int bta_sync(const struct backend_ops *ops, struct backend_store *st, char *err, size_t errlen)
{
    if (!BTA_HAS3(ops, sync_v2))
        return ops->sync(st, err, errlen);
    struct bta_wait wt;
    memset(&wt, 0, sizeof wt);
    bta_start(ops, &wt, 0);
    int rc = ops->sync_v2(st, &wt.call);
    wt.in_method = 0;
    if (rc == BACKEND_INVALID && !wt.done)   /* no sync off the loop here */
        return ops->sync(st, err, errlen);
    if (rc == BACKEND_PENDING) {
        /* a sync off the loop needs no BACKEND_CAP_DEFERS */
        rc = bta_run_until(&wt.done) != 0 ? BACKEND_IOERR : wt.call.status;
        if (rc == BACKEND_PENDING)
            bta_breach("sync_v2: done() with call.status still BACKEND_PENDING");
    } else if (wt.done) {
        bta_breach("sync_v2: done() called for a sync that completed at once");
    }
    free(wt.buf);
    if (rc != BACKEND_OK && err && errlen)
        snprintf(err, errlen, "%s", wt.call.err);
    return rc;
}
