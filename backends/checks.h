/* checks.h - the argument checks and the expectation check that every
 * built-in backend makes, written once (issue 15 item 6), for plug-ins
 * too: it is installed beside backend.h
 * ($(includedir)/tabled/backends/checks.h).
 *
 * Header-only (static inline): backends/memory.c includes it and is
 * compiled into plug-ins (backends/examples/counting.c's build line lists
 * memory.c alone, against the installed headers), so there is no object
 * file to link. It needs nothing but backend.h and the C library.
 *
 * Each check returns NULL when the arguments are good, else a short reason
 * ("apply: empty, missing or oversized key") that the backend prefixes
 * with its name in the err buffer and answers with BACKEND_INVALID. */
#ifndef TABLED_BACKEND_CHECKS_H
#define TABLED_BACKEND_CHECKS_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backends/backend.h"

#define BACKEND_KEY_MAX (64u * 1024)        /* the interface's key limit */
#define BACKEND_VAL_MAX (8u * 1024 * 1024)  /* and value limit */

/* 1 when key is a usable key: not NULL, 1 to BACKEND_KEY_MAX bytes. */
static inline int backend_key_ok(const void *key, size_t key_len)
{
    return key && key_len > 0 && key_len <= BACKEND_KEY_MAX;
}

/* The bounds of iter_open: start may be empty (from the first key), end
 * may be NULL (to the last key). NULL when good, else the reason. */
static inline const char *backend_check_bounds(const void *start, size_t start_len,
                                               const void *end, size_t end_len)
{
    if ((start_len && !start) || start_len > BACKEND_KEY_MAX || (end && end_len > BACKEND_KEY_MAX))
        return "iter_open: bad bounds";
    return NULL;
}

/* The key of iter_seek (empty: the first key). 1 when good. */
static inline int backend_seek_ok(const void *key, size_t key_len)
{
    return !(key_len && !key) && key_len <= BACKEND_KEY_MAX;
}

/* The arguments of apply()/apply_v2: the array, each write's op, key and
 * value, and each expectation's kind (cond may be NULL). NULL when every
 * one is good, else the reason. */
static inline const char *backend_check_writes(const struct backend_write *w,
                                               const struct backend_cond *cond, size_t n)
{
    if (n && !w)
        return "apply: no writes";
    for (size_t i = 0; i < n; i++) {
        if (w[i].op != BACKEND_PUT && w[i].op != BACKEND_DELETE)
            return "apply: unknown write op";
        if (!backend_key_ok(w[i].key, w[i].key_len))
            return "apply: empty, missing or oversized key";
        if (w[i].op == BACKEND_PUT && (w[i].val_len > BACKEND_VAL_MAX || (w[i].val_len && !w[i].val)))
            return "apply: missing or oversized value";
        if (cond && (unsigned)cond[i].expect > BACKEND_EXPECT_VERSION)
            return "apply: unknown expectation";
    }
    return NULL;
}

/* How a backend looks a key up for the expectation check: 1 when the key
 * exists (then, when want_version is set, *version is
 * backend_value_version() of its value), 0 when it does not, or a negative
 * status (with the detail in err). */
typedef int (*backend_probe_fn)(void *ctx, const void *key, size_t key_len, int want_version,
                                uint64_t *version, char *err, size_t errlen);

/* Checks the expectations of one apply_v2 against the store as it is
 * before any of the writes (so two writes of one key both see the state
 * before the call). Call it after the argument checks and before changing
 * anything; in a single process nothing can come between the check and
 * the writes, which makes the pair atomic. Returns BACKEND_OK when every
 * expectation holds (or cond is NULL), BACKEND_CONFLICT with *failed set
 * to the first write whose expectation does not hold, or the probe's
 * error. */
static inline int backend_check_conds(const struct backend_write *w,
                                      const struct backend_cond *cond, size_t n,
                                      backend_probe_fn probe, void *ctx, size_t *failed,
                                      char *err, size_t errlen)
{
    for (size_t i = 0; cond && i < n; i++) {
        enum backend_expect e = cond[i].expect;
        if (e == BACKEND_EXPECT_ANY)
            continue;
        uint64_t version = 0;
        int r = probe(ctx, w[i].key, w[i].key_len, e == BACKEND_EXPECT_VERSION, &version, err,
                      errlen);
        if (r < 0)
            return r;
        int holds = e == BACKEND_EXPECT_ABSENT ? r == 0
                  : e == BACKEND_EXPECT_PRESENT ? r == 1
                  : r == 1 && version == cond[i].version;
        if (!holds) {
            *failed = i;
            return BACKEND_CONFLICT;
        }
    }
    return BACKEND_OK;
}

/* Starts a version-2 call: clears the outputs a backend may leave unset. */
static inline void backend_call_reset(struct backend_call *call)
{
    call->status = BACKEND_OK;
    call->key = call->val = NULL;
    call->key_len = call->val_len = 0;
    call->failed = 0;
    call->created = call->removed = 0;
    call->err[0] = 0;
}

/* Ends a version-2 call that completes at once: records the status. */
static inline int backend_call_end(struct backend_call *call, int status)
{
    call->status = status;
    return status;
}

#endif
