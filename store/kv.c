/* kv.c - the one caller of the backend vtable (see kv.h). */
#include "store/kv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coro.h"
#include "core/errfmt.h"
#include "core/log.h"
#include "backends/checks.h"
#include "backends/registry.h"

struct kv {
    const struct backend_ops *ops;
    struct backend_store *st;
    int v2;                    /* the vtable is version 2 or newer */
    int v3;                    /* ... 3 or newer (max_key_len, get_multi_v2,
                                  sync_v2, compact_v2: never read before) */
    size_t max_key;            /* the backend's key limit (max_key_len) */
    void *v1_val;              /* a version-1 get()'s copy, freed at the next */
    void *kept;                /* key and value of the last call waited for on
                                  the main stack (see kv_call_done) */
    void (*wait_once)(void *arg);
    void *wait_arg;
    struct kv_watcher watcher;  /* before == NULL: none (kv_watch) */
};

struct kv_iter {
    struct kv *kv;
    struct backend_iter *it;
    int failed;                /* a step failed: the cursor only reports it */
    char err[256];
};

/* One outstanding call: who waits for it. Lives on the waiter's stack. */
struct kv_wait {
    struct coro *co;           /* the coroutine to resume, or NULL */
    int done;
    struct kv *keep;           /* waited for on the main stack: copy results */
};

/* Copies a completed call's borrowed key and value into kv->kept (freeing
   the previous copy) and points the call at them. A backend's borrowed
   results last only until done() returns; a coroutine runs inside done(),
   but the main stack's waiter looks at them after it, and kv.h promises
   them until the caller's next kv call. */
static void kv_keep(struct kv *kv, struct backend_call *call)
{
    free(kv->kept);
    kv->kept = NULL;
    size_t kl = call->key ? call->key_len : 0, vl = call->val ? call->val_len : 0;
    if (!call->key && !call->val)
        return;
    unsigned char *p = malloc(kl + vl + 1);
    if (!p) {
        call->status = BACKEND_NOMEM;
        snprintf(call->err, sizeof call->err, "out of memory");
        return;
    }
    if (kl)
        memcpy(p, call->key, kl);
    if (vl)
        memcpy(p + kl, call->val, vl);
    if (call->key)
        call->key = p;
    if (call->val)
        call->val = p + kl;
    kv->kept = p;
}

/* The backend's completion callback: marks the call done and resumes the
   coroutine that waits for it (from the event loop). After the resume the
   call and its waiter may be gone: nothing is touched then. */
static void kv_call_done(struct backend_call *call)
{
    struct kv_wait *w = call->arg;
    if (w->keep && call->status >= 0)
        kv_keep(w->keep, call);
    w->done = 1;
    if (w->co)
        coro_resume(w->co);
}

/* Prepares call for a backend method: every field zero but the
   completion and its waiter (setting the fields one by one instead of
   the memset saved under 1%: doc/performance.md, "Speed tricks and what
   they earn"). */
static void kv_call_init(struct backend_call *call, struct kv_wait *w)
{
    *w = (struct kv_wait){NULL, 0, NULL};
    memset(call, 0, sizeof *call);
    call->done = kv_call_done;
    call->arg = w;
}

/* Returns the final status of a call whose method returned rc, waiting
   for a deferred completion (yield on a coroutine, else the waiter). */
static int kv_finish(struct kv *kv, struct backend_call *call, int rc)
{
    struct kv_wait *w = call->arg;
    if (rc != BACKEND_PENDING)
        return rc;
    if (!w->done) {
        w->co = coro_current();
        if (w->co) {
            while (!w->done)
                coro_yield();
        } else if (kv->wait_once) {
            w->keep = kv;
            while (!w->done)
                kv->wait_once(kv->wait_arg);
        } else {
            /* The call stays outstanding and would complete into a dead
               frame: a caller that cannot wait must never get here. */
            log_error("backend call deferred where nothing can wait for it");
            abort();
        }
    }
    return call->status;
}

int kv_open(const struct backend_ops *ops, const struct backend_options *opt, struct kv **out,
            char *err, size_t errlen)
{
    struct kv *kv = calloc(1, sizeof *kv);
    if (!kv) {
        errfmt_set(err, errlen, "out of memory");
        return BACKEND_NOMEM;
    }
    kv->ops = ops;
    kv->v2 = ops->version >= 2;
    kv->v3 = ops->version >= 3;
    kv->max_key = kv->v3 && ops->max_key_len && ops->max_key_len < BACKEND_KEY_MAX
                      ? ops->max_key_len
                      : BACKEND_KEY_MAX;
    struct backend_options o = *opt;
    if (!kv->v2)
        o.host = NULL;
    int rc = ops->open(&o, &kv->st, err, errlen);
    if (rc != BACKEND_OK) {
        free(kv);
        return rc;
    }
    *out = kv;
    return BACKEND_OK;
}

void kv_close(struct kv *kv)
{
    if (!kv)
        return;
    kv->ops->close(kv->st);
    free(kv->v1_val);
    free(kv->kept);
    free(kv);
}

const struct backend_ops *kv_ops(const struct kv *kv)
{
    return kv->ops;
}

struct backend_store *kv_backend(const struct kv *kv)
{
    return kv->st;
}

int kv_defers(const struct kv *kv)
{
    return kv->v2 && (kv->ops->caps & BACKEND_CAP_DEFERS);
}

int kv_replica_sync_time(struct kv *kv, int64_t *unix_s)
{
    return backend_replica_sync_time(kv->ops, kv->st, unix_s);
}

int kv_shared(const struct kv *kv)
{
    return kv->v2 && (kv->ops->caps & BACKEND_CAP_SHARED);
}

void kv_set_waiter(struct kv *kv, void (*wait_once)(void *arg), void *arg)
{
    kv->wait_once = wait_once;
    kv->wait_arg = arg;
}

/* The key check of backends/checks.h and the backend's own key limit,
   with a message. */
static int kv_check_key(const struct kv *kv, const void *key, size_t key_len, char *err,
                        size_t errlen)
{
    if (!backend_key_ok(key, key_len) || key_len > kv->max_key) {
        errfmt_set(err, errlen, "key length %zu is outside 1..%zu", key_len, kv->max_key);
        return BACKEND_INVALID;
    }
    return BACKEND_OK;
}

int kv_get(struct kv *kv, const void *key, size_t key_len, const void **val, size_t *val_len,
           char *err, size_t errlen)
{
    int rc = kv_check_key(kv, key, key_len, err, errlen);
    if (rc != BACKEND_OK)
        return rc;
    if (kv->v2 && kv->ops->get_v2) {
        struct backend_call call;
        struct kv_wait w;
        kv_call_init(&call, &w);
        rc = kv_finish(kv, &call, kv->ops->get_v2(kv->st, key, key_len, &call));
        if (rc == BACKEND_OK) {
            *val = call.val;
            *val_len = call.val_len;
        } else if (rc != BACKEND_NOTFOUND && err && errlen) {
            snprintf(err, errlen, "%s", call.err);
        }
        return rc;
    }
    free(kv->v1_val);
    kv->v1_val = NULL;
    void *v = NULL;
    size_t vl = 0;
    rc = kv->ops->get(kv->st, key, key_len, &v, &vl, err, errlen);
    if (rc == BACKEND_OK) {
        kv->v1_val = v;
        *val = v;
        *val_len = vl;
    }
    return rc;
}

int kv_get_multi(struct kv *kv, struct backend_mget *keys, size_t n,
                 void (*found)(void *arg, size_t i, const void *val, size_t val_len), void *arg,
                 char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        int rc = kv_check_key(kv, keys[i].key, keys[i].key_len, err, errlen);
        if (rc != BACKEND_OK)
            return rc;
    }
    if (n == 0)
        return BACKEND_OK;
    /* A deferred answer's values last only until done() returns: a
       coroutine reads them inside it, but the main stack's waiter (start-up,
       the tools) only after, so there each key is a get (kv_keep copies). */
    if (!kv->v3 || !kv->ops->get_multi_v2 || (!coro_current() && kv_defers(kv))) {
        /* one get per key: each value is handed on before the next get
           (which invalidates it) */
        for (size_t i = 0; i < n; i++) {
            const void *v;
            size_t vl;
            int rc = kv_get(kv, keys[i].key, keys[i].key_len, &v, &vl, err, errlen);
            if (rc == BACKEND_OK)
                found(arg, i, v, vl);
            else if (rc != BACKEND_NOTFOUND)
                return rc;
        }
        return BACKEND_OK;
    }
    struct backend_call call;
    struct kv_wait w;
    kv_call_init(&call, &w);
    int rc = kv_finish(kv, &call, kv->ops->get_multi_v2(kv->st, keys, n, &call));
    if (rc != BACKEND_OK) {
        if (err && errlen)
            snprintf(err, errlen, "%s", call.err);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if (keys[i].status == BACKEND_OK)
            found(arg, i, keys[i].val, keys[i].val_len);
        else if (keys[i].status != BACKEND_NOTFOUND) {
            errfmt_set(err, errlen, "multi-get: key %zu answered status %d", i, keys[i].status);
            return BACKEND_IOERR;
        }
    }
    return BACKEND_OK;
}

int kv_iter_open(struct kv *kv, const void *start, size_t start_len, const void *end,
                 size_t end_len, struct kv_iter **out, char *err, size_t errlen)
{
    struct kv_iter *it = calloc(1, sizeof *it);
    if (!it) {
        errfmt_set(err, errlen, "out of memory");
        return BACKEND_NOMEM;
    }
    it->kv = kv;
    int rc = kv->ops->iter_open(kv->st, start, start_len, end, end_len, &it->it, err, errlen);
    if (rc != BACKEND_OK) {
        free(it);
        return rc;
    }
    *out = it;
    return BACKEND_OK;
}

int kv_iter_seek(struct kv_iter *it, const void *key, size_t key_len)
{
    if (it->failed)
        return BACKEND_IOERR;
    int rc = it->kv->ops->iter_seek(it->it, key, key_len);
    if (rc != BACKEND_OK) {
        it->failed = rc;
        snprintf(it->err, sizeof it->err, "cursor seek failed (status %d)", rc);
    }
    return rc;
}

int kv_iter_next(struct kv_iter *it, const void **key, size_t *key_len, const void **val,
                 size_t *val_len)
{
    if (it->failed)
        return it->failed;
    const struct backend_ops *ops = it->kv->ops;
    int rc;
    if (it->kv->v2 && ops->iter_next_v2) {
        struct backend_call call;
        struct kv_wait w;
        kv_call_init(&call, &w);
        rc = kv_finish(it->kv, &call, ops->iter_next_v2(it->it, &call));
        if (rc == 1) {
            *key = call.key;
            *key_len = call.key_len;
            *val = call.val;
            *val_len = call.val_len;
        } else if (rc < 0) {
            snprintf(it->err, sizeof it->err, "%s", call.err[0] ? call.err : "cursor step failed");
        }
    } else {
        rc = ops->iter_next(it->it, key, key_len, val, val_len);
        if (rc < 0)
            snprintf(it->err, sizeof it->err, "cursor step failed (status %d)", rc);
    }
    if (rc < 0)
        it->failed = rc;
    return rc;
}

const char *kv_iter_error(const struct kv_iter *it)
{
    return it->err;
}

void kv_iter_close(struct kv_iter *it)
{
    if (!it)
        return;
    it->kv->ops->iter_close(it->it);
    free(it);
}

/* Whether the key of a version-1 store exists now: 1, 0, or a failure. */
static int kv_v1_probe(struct kv *kv, const void *key, size_t key_len, uint64_t *version,
                       char *err, size_t errlen)
{
    void *v = NULL;
    size_t vl = 0;
    int rc = kv->ops->get(kv->st, key, key_len, &v, &vl, err, errlen);
    if (rc == BACKEND_NOTFOUND)
        return 0;
    if (rc != BACKEND_OK)
        return rc;
    if (version)
        *version = backend_value_version(v, vl);
    free(v);
    return 1;
}

/* Version-1 stores: checks the expectations against the store before the
   writes, and counts as backend.h says (each write sees the earlier ones
   of the array, so created - removed is the change in keys). The apply
   that follows is atomic with it: a version-1 backend completes at once
   and tabled runs one thing at a time. */
static int kv_v1_precheck(struct kv *kv, const struct backend_write *w,
                          const struct backend_cond *cond, size_t n, int want_counts,
                          struct kv_result *res, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        enum backend_expect e = cond ? cond[i].expect : BACKEND_EXPECT_ANY;
        if (e == BACKEND_EXPECT_ANY && !want_counts)
            continue;
        uint64_t ver = 0;
        int have = kv_v1_probe(kv, w[i].key, w[i].key_len, &ver, err, errlen);
        if (have < 0)
            return have;
        if ((e == BACKEND_EXPECT_ABSENT && have) || (e == BACKEND_EXPECT_PRESENT && !have) ||
            (e == BACKEND_EXPECT_VERSION && (!have || ver != cond[i].version))) {
            res->failed = i;
            return BACKEND_CONFLICT;
        }
        if (!want_counts)
            continue;
        /* the latest earlier write of the same key decides its state */
        for (size_t j = i; j-- > 0;)
            if (w[j].key_len == w[i].key_len && memcmp(w[j].key, w[i].key, w[i].key_len) == 0) {
                have = w[j].op == BACKEND_PUT;
                break;
            }
        if (w[i].op == BACKEND_PUT && !have)
            res->created++;
        else if (w[i].op == BACKEND_DELETE && have)
            res->removed++;
    }
    return BACKEND_OK;
}

int kv_watch(struct kv *kv, const struct kv_watcher *w)
{
    if (w && (kv->watcher.before || kv_defers(kv) || !w->before))
        return -1;
    if (w)
        kv->watcher = *w;
    else
        memset(&kv->watcher, 0, sizeof kv->watcher);
    return 0;
}

/* kv_apply's call of the backend, its arguments checked. */
static int kv_apply_backend(struct kv *kv, const struct backend_write *w,
                            const struct backend_cond *cond, size_t n, int want_counts,
                            struct kv_result *res, char *err, size_t errlen)
{
    if (kv->v2 && kv->ops->apply_v2) {
        struct backend_call call;
        struct kv_wait wt;
        kv_call_init(&call, &wt);
        call.want_counts = want_counts;
        int rc = kv_finish(kv, &call, kv->ops->apply_v2(kv->st, w, cond, n, &call));
        if (rc == BACKEND_OK) {
            res->created = call.created;
            res->removed = call.removed;
        } else if (rc == BACKEND_CONFLICT) {
            res->failed = call.failed;
        } else if (err && errlen) {
            snprintf(err, errlen, "%s", call.err);
        }
        return rc;
    }
    int rc = kv_v1_precheck(kv, w, cond, n, want_counts, res, err, errlen);
    if (rc != BACKEND_OK)
        return rc;
    return kv->ops->apply(kv->st, w, n, err, errlen);
}

int kv_apply(struct kv *kv, const struct backend_write *w, const struct backend_cond *cond,
             size_t n, int want_counts, struct kv_result *res, char *err, size_t errlen)
{
    struct kv_result local;
    if (!res)
        res = &local;
    memset(res, 0, sizeof *res);
    const char *why = backend_check_writes(w, cond, n);
    if (why) {
        errfmt_set(err, errlen, "%s", why);
        return BACKEND_INVALID;
    }
    for (size_t i = 0; kv->max_key < BACKEND_KEY_MAX && i < n; i++)
        if (kv_check_key(kv, w[i].key, w[i].key_len, err, errlen) != BACKEND_OK)
            return BACKEND_INVALID;
    if (!kv->watcher.before)
        return kv_apply_backend(kv, w, cond, n, want_counts, res, err, errlen);
    /* a copy: the hooks may remove the watcher */
    struct kv_watcher wt = kv->watcher;
    wt.before(wt.arg, w, n);
    int rc = kv_apply_backend(kv, w, cond, n, want_counts, res, err, errlen);
    if (wt.after)
        wt.after(wt.arg, w, n, rc);
    return rc;
}

int kv_sync(struct kv *kv, char *err, size_t errlen)
{
    return kv->ops->sync(kv->st, err, errlen);
}

int kv_syncs_off_loop(const struct kv *kv)
{
    return kv->v3 && kv->ops->sync_v2 != NULL;
}

int kv_sync_start(struct kv *kv, struct backend_call *call)
{
    return kv->ops->sync_v2(kv->st, call);
}

int kv_compacts(const struct kv *kv)
{
    return kv->v3 && kv->ops->compact_v2 != NULL;
}

/* Checks the bounds as kv does for a cursor, then passes the hint on. */
int kv_compact_start(struct kv *kv, const void *lo, size_t lo_len, const void *hi,
                     size_t hi_len, struct backend_call *call)
{
    if (!kv_compacts(kv) || backend_check_bounds(lo, lo_len, hi, hi_len)) {
        call->status = BACKEND_INVALID;
        snprintf(call->err, sizeof call->err, "compact: %s",
                 kv_compacts(kv) ? "bad bounds" : "the backend takes no such hint");
        return BACKEND_INVALID;
    }
    return kv->ops->compact_v2(kv->st, lo, lo_len, hi, hi_len, call);
}
