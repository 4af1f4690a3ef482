/* kv.h - the one caller of the backend vtable.
 *
 * Everything above backends/ reaches storage through these functions. They
 * hide what differs between backends:
 *   - versions: a version-1 vtable's get() returns a malloc()ed copy (kept
 *     here and freed at the next call), it has no conditional writes (they
 *     are checked here, before its apply(), which is atomic because tabled
 *     is single-threaded and a version-1 backend completes at once) and no
 *     counts (asked here with a get per write, only when wanted);
 *   - deferred completion: when a version-2 backend answers
 *     BACKEND_PENDING, the caller waits here. On a coroutine (core/coro.h)
 *     it yields, and the backend's completion resumes it: the event loop
 *     serves others meanwhile. On the main stack (start-up, offline tools)
 *     it runs the waiter given by kv_set_waiter (one event-loop turn)
 *     until the completion arrives;
 *   - argument checks, before any backend sees the call (backends/checks.h:
 *     empty or over-long keys, over-long values, unknown write kinds:
 *     BACKEND_INVALID).
 *
 * Borrowed results (kv_get's value, kv_iter_next's key and value) stay
 * valid until the caller's next kv call: copy what must live longer. Other
 * requests only run while this caller waits inside a kv call, so nothing
 * else invalidates them in between. */
#ifndef TABLED_KV_H
#define TABLED_KV_H
#include <stddef.h>

#include "backends/backend.h"

struct kv;
struct kv_iter;

/* What kv_apply reports besides its status. */
struct kv_result {
    size_t failed;             /* BACKEND_CONFLICT: index of the write */
    size_t created, removed;   /* with want_counts, on BACKEND_OK */
};

/* Opens a store of backend ops with opt (opt->host is passed to version-2
   backends only). On success the kv owns the store until kv_close. */
int kv_open(const struct backend_ops *ops, const struct backend_options *opt, struct kv **out,
            char *err, size_t errlen);
/* Closes the store (a sync first, as backend close does). */
void kv_close(struct kv *kv);
const struct backend_ops *kv_ops(const struct kv *kv);
/* The backend's own store handle, for a built-in backend's extra
   functions (the postgres pool's metrics); calls go through kv_*. */
struct backend_store *kv_backend(const struct kv *kv);

/* 1 when calls may complete later (BACKEND_CAP_DEFERS): callers then run
   on coroutines, or have a waiter. */
int kv_defers(const struct kv *kv);
/* 1 when several processes may open the store at once
   (BACKEND_CAP_SHARED): the callers then keep nothing of it in memory that
   another process could change (store/tables.h, store/store.h). */
int kv_shared(const struct kv *kv);
/* A store opened read-only over replicas (backends/registry.h,
   backend_replica_of): 1 with *unix_s, the time before which every write
   of the primary is readable there; 0 when none can tell now; -1 when kv
   is no such store. Never waits. */
int kv_replica_sync_time(struct kv *kv, int64_t *unix_s);
/* How to wait on the main stack: wait_once(arg) runs one event-loop turn.
   NULL: no waiting there. A store whose calls complete later must then be
   called from coroutines only: a deferred call off a coroutine without a
   waiter is a bug, logged and the process aborted (the call would
   complete into a frame that is gone). */
void kv_set_waiter(struct kv *kv, void (*wait_once)(void *arg), void *arg);

/* Point lookup: BACKEND_OK with a borrowed *val, BACKEND_NOTFOUND, or a
   failure (detail in err). */
int kv_get(struct kv *kv, const void *key, size_t key_len, const void **val, size_t *val_len,
           char *err, size_t errlen);

/* Several point lookups, in one round trip where the backend can
   (get_multi_v2), else one get each. For every key i that exists,
   found(arg, i, val, val_len) is called with the value borrowed for the
   length of that call only (keys absent get no call; the calls may come
   in any order). BACKEND_OK, or a failure (detail in err; some keys may
   have been reported before it). keys[i].key/.key_len are read; the rest
   of each element is the backend's to fill. */
int kv_get_multi(struct kv *kv, struct backend_mget *keys, size_t n,
                 void (*found)(void *arg, size_t i, const void *val, size_t val_len), void *arg,
                 char *err, size_t errlen);

/* A cursor over start <= key < end (see backend.h iter_open). */
int kv_iter_open(struct kv *kv, const void *start, size_t start_len, const void *end,
                 size_t end_len, struct kv_iter **out, char *err, size_t errlen);
/* Repositions at the first key >= key. 0 or a failure. */
int kv_iter_seek(struct kv_iter *it, const void *key, size_t key_len);
/* 1 with borrowed key and value, 0 at the end, or a failure (detail in
   kv_iter_error). */
int kv_iter_next(struct kv_iter *it, const void **key, size_t *key_len, const void **val,
                 size_t *val_len);
const char *kv_iter_error(const struct kv_iter *it);
void kv_iter_close(struct kv_iter *it);

/* Applies n writes atomically, each with its expectation (cond NULL: none).
   BACKEND_OK, BACKEND_CONFLICT (res->failed), or a failure. With
   want_counts, res->created/removed count the puts of new keys and the
   deletes of existing ones. res may be NULL when neither is needed. */
int kv_apply(struct kv *kv, const struct backend_write *w, const struct backend_cond *cond,
             size_t n, int want_counts, struct kv_result *res, char *err, size_t errlen);

/* Told of the writes kv_apply passes to the backend: before(arg, w, n)
   runs after the argument checks and ahead of the backend's apply, after(arg,
   w, n, rc) once the apply has its final status rc. store/snap.c keeps a
   snapshot with it. One watcher per store (kv_watch with w set while one
   is set fails: -1); NULL removes it. Only on a store whose calls complete
   at once (not kv_defers): the hooks may read the store, through cursors
   of their own (never kv_get, whose result a caller may be about to
   write back), and may not apply to it. */
struct kv_watcher {
    void (*before)(void *arg, const struct backend_write *w, size_t n);
    void (*after)(void *arg, const struct backend_write *w, size_t n, int rc);
    void *arg;
};
int kv_watch(struct kv *kv, const struct kv_watcher *w);

/* Group commit (backend sync). */
int kv_sync(struct kv *kv, char *err, size_t errlen);

/* 1 when the backend can sync off the event loop (backend.h sync_v2). */
int kv_syncs_off_loop(const struct kv *kv);
/* Starts such a sync of every write applied so far (sync_v2): a final
   status now, or BACKEND_PENDING and call->done(call) later from the
   loop. The caller fills call->done and call->arg and keeps call alive
   until then; one at a time. */
int kv_sync_start(struct kv *kv, struct backend_call *call);

/* 1 when the backend takes the hint that a key range was emptied
   (backend.h compact_v2). */
int kv_compacts(const struct kv *kv);
/* Tells it that [lo, hi) holds no live key any more (compact_v2): a final
   status now, or BACKEND_PENDING and call->done(call) later from the
   loop. The caller fills call->done and call->arg and keeps call (and
   nothing else) alive until then; one at a time. BACKEND_INVALID: bad
   bounds, or a backend without the hint. */
int kv_compact_start(struct kv *kv, const void *lo, size_t lo_len, const void *hi,
                     size_t hi_len, struct backend_call *call);

#endif
