/* backend_adapter.h - the conformance tests' way into a backend: the
 * version-2 methods when the vtable has them, the version-1 methods
 * otherwise, and for a call answered BACKEND_PENDING the event loop, run
 * (event_base_loop EVLOOP_ONCE) until done() arrives.
 *
 * Every function takes the vtable, so that a test can run several. The
 * event loop and its host (store/host.c) are created on first use; pass
 * bta_host() in backend_options.host. The adapter also checks the rules
 * of backend.h that a caller can see: a backend without
 * BACKEND_CAP_DEFERS never answers BACKEND_PENDING, done() is never called
 * from inside the method, and exactly once; bta_violations() counts the
 * breaches (with a "#" line each). */
#ifndef TABLED_BACKEND_ADAPTER_H
#define TABLED_BACKEND_ADAPTER_H
#include <stddef.h>

#include "backends/backend.h"

struct event_base;

/* The hooks to pass in backend_options.host. */
const struct backend_host *bta_host(void);
/* The adapter's event loop (for tests that drive it themselves). */
struct event_base *bta_base(void);

/* 1 when the vtable's version has field f (a version-1 vtable may end
   before the version-2 fields: never read them there). */
#define BTA_HAS(ops, f) ((ops)->version >= 2 && (ops)->f != NULL)
/* The same for a version-3 field (get_multi_v2, sync_v2, compact_v2). */
#define BTA_HAS3(ops, f) ((ops)->version >= 3 && (ops)->f != NULL)

/* get: BACKEND_OK with *val and *val_len lent until the next bta_get (a copy
   when the call was deferred), BACKEND_NOTFOUND, or a failure (detail in
   err when not NULL). */
int bta_get(const struct backend_ops *ops, struct backend_store *st, const void *key,
            size_t key_len, const void **val, size_t *val_len, char *err, size_t errlen);

/* get_multi_v2 (only when BTA_HAS3(ops, get_multi_v2)): BACKEND_OK with
   each key's status and value filled, the values lent until the next
   bta_get_multi (copies when the call was deferred), or a failure. */
int bta_get_multi(const struct backend_ops *ops, struct backend_store *st,
                  struct backend_mget *keys, size_t n, char *err, size_t errlen);

/* iter_next: 1 with the entry lent until the next bta_next (any of the
   out pointers may be NULL), 0 at the end, or a failure. */
int bta_next(const struct backend_ops *ops, struct backend_iter *it, const void **key,
             size_t *key_len, const void **val, size_t *val_len);

/* apply with expectations (cond NULL: none). When out is not NULL it
   receives the completed call (status, failed, created, removed, err);
   want_counts asks for the counts. A version-1 backend is called through
   apply() and cond must be NULL (else BACKEND_INVALID). */
int bta_apply(const struct backend_ops *ops, struct backend_store *st,
              const struct backend_write *w, const struct backend_cond *cond, size_t n,
              int want_counts, struct backend_call *out, char *err, size_t errlen);

/* Group commit: sync_v2 when the vtable has it (the sync may run off the
   loop: the loop is run until it is over), else sync(). */
int bta_sync(const struct backend_ops *ops, struct backend_store *st, char *err, size_t errlen);

/* Runs the event loop until call->arg's wait says done (see
   backend_adapter.c); exposed for tests that issue several calls. Returns
   0, or -1 when nothing is left to wait for or 10 s passed. */
int bta_run_until(int *flag);

/* Breaches of the caller-visible rules seen so far. */
int bta_violations(void);

#endif
