/* memory.c - the in-memory backend: an ordered skip list, nothing on disk.
 *
 * The list is the shared one of backends/skiplist.h (the flat-file index
 * uses it too): keys in bkey_cmp() order (memcmp, a proper prefix first).
 * Every entry is ONE malloc() block: the value length, the list's node
 * header, its forward pointers, then the key bytes and the value bytes
 * inline. A node carries 4/3 forward pointers on average, so the overhead
 * per entry is about 27 bytes plus malloc's own. get/put/delete are
 * O(log n), with a search finger for nearby keys; iteration walks level 0.
 *
 * apply() is atomic: it validates every write, checks the expectations
 * (version 2) and allocates every new node first, and only then mutates
 * the list, which cannot fail.
 *
 * Interface version 2, completing every call at once (caps 0): get_v2
 * lends a pointer into the entry's node, iter_next_v2 into the node the
 * cursor passed. The version-1 methods stay (backends/examples/counting.c
 * wraps them): get copies the value out with malloc(), as version 1 says.
 *
 * Cursors and writes (the guarantee backend.h documents for iter_open):
 * the list keeps its open cursors, and when apply() unlinks the node a
 * cursor would return next, the cursor is moved to that node's replacement
 * (same key) or successor. So a cursor left open across writes never reads
 * freed memory; it continues in key order from where it was and sees the
 * store as it is now, except that it may miss keys inserted before its
 * current position. What it cannot protect are the key/value pointers that
 * iter_next already handed out: if apply() deletes or overwrites that
 * entry, those pointers dangle (they are only promised until the next
 * iter_* call anyway, and writes in between break that promise). Closing a
 * store detaches its open cursors: they return 0 (end) and may still be
 * closed afterwards. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/checks.h"
#include "backends/skiplist.h"

#define MEM_STACK_WRITES 16             /* apply() batches up to this size
                                           need no scratch allocation */

/* One entry, one block: the value length, the list's node, its forward
 * pointers, the key bytes, then the value bytes (the node's tail). */
struct mem_node {
    uint32_t val_len;
    struct skl_node sk;         /* last: the list's part, key and value follow */
};

struct backend_store {
    struct skl sl;              /* every entry, in key order */
};

struct backend_iter {
    struct backend_store *st;       /* read only while cur.attached */
    struct skl_cursor cur;          /* registered with st->sl */
    int has_end;
    size_t end_len;
    uint8_t end[];                  /* copy of the end bound */
};

/* Writes a formatted detail message when the caller gave a buffer. */
static void mem_err(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "memory backend: %s", msg);
}

/* The entry of a list node (NULL stays NULL). */
static struct mem_node *mem_of(const struct skl_node *n)
{
    return n ? (struct mem_node *)((char *)n - offsetof(struct mem_node, sk)) : NULL;
}

/* The value bytes of a list node. */
static uint8_t *mem_val(const struct skl_node *n)
{
    return skl_tail(n);
}

/* Opens an empty store; options are ignored (nothing is durable). */
static int mem_open(const struct backend_options *opt, struct backend_store **out, char *err,
                    size_t errlen)
{
    (void)opt;
    if (!out) {
        mem_err(err, errlen, "open: no output pointer");
        return BACKEND_INVALID;
    }
    struct backend_store *st = malloc(sizeof(*st));
    if (!st) {
        mem_err(err, errlen, "open: out of memory");
        return BACKEND_NOMEM;
    }
    skl_init(&st->sl, offsetof(struct mem_node, sk),
             0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)st, 1);
    *out = st;
    return BACKEND_OK;
}

/* Frees every entry and the store; open cursors are detached, not freed. */
static void mem_close(struct backend_store *st)
{
    if (!st)
        return;
    skl_free(&st->sl);
    free(st);
}

/* Point lookup (version 2): lends a pointer to the value inside its node,
 * valid until the next apply() or close(). */
static int mem_get_v2(struct backend_store *st, const void *key, size_t key_len,
                      struct backend_call *call)
{
    backend_call_reset(call);
    if (!st || !backend_key_ok(key, key_len)) {
        mem_err(call->err, sizeof call->err, "get: empty, missing or oversized key");
        return backend_call_end(call, BACKEND_INVALID);
    }
    struct skl_node *n = skl_find(&st->sl, key, key_len);
    if (!n)
        return backend_call_end(call, BACKEND_NOTFOUND);   /* an answer: no detail */
    call->val = mem_val(n);
    call->val_len = mem_of(n)->val_len;
    return backend_call_end(call, BACKEND_OK);
}

/* Point lookup (version 1): a malloc()ed copy of what get_v2 lends. */
static int mem_get(struct backend_store *st, const void *key, size_t key_len, void **val,
                   size_t *val_len, char *err, size_t errlen)
{
    struct backend_call call;
    if (!val || !val_len) {
        mem_err(err, errlen, "get: no output pointer");
        return BACKEND_INVALID;
    }
    int rc = mem_get_v2(st, key, key_len, &call);
    if (rc == BACKEND_OK) {
        void *copy = malloc(call.val_len ? call.val_len : 1);
        if (!copy) {
            mem_err(err, errlen, "get: out of memory");
            return BACKEND_NOMEM;
        }
        if (call.val_len)
            memcpy(copy, call.val, call.val_len);
        *val = copy;
        *val_len = call.val_len;
    } else if (rc != BACKEND_NOTFOUND && err && errlen) {
        snprintf(err, errlen, "%s", call.err);
    }
    return rc;
}

/* Opens a cursor over [start, end); it keeps a copy of end. */
static int mem_iter_open(struct backend_store *st, const void *start, size_t start_len,
                         const void *end, size_t end_len, struct backend_iter **out, char *err,
                         size_t errlen)
{
    const char *why = backend_check_bounds(start, start_len, end, end_len);
    if (!st || !out || why) {
        mem_err(err, errlen, why ? why : "iter_open: no store or no output pointer");
        return BACKEND_INVALID;
    }
    size_t keep = end ? end_len : 0;
    struct backend_iter *it = malloc(sizeof(*it) + keep);
    if (!it) {
        mem_err(err, errlen, "iter_open: out of memory");
        return BACKEND_NOMEM;
    }
    it->st = st;
    it->has_end = end != NULL;
    it->end_len = keep;
    if (keep)
        memcpy(it->end, end, keep);
    skl_cursor_open(&st->sl, &it->cur, start, start_len);
    *out = it;
    return BACKEND_OK;
}

/* Repositions at the first key >= key. The start bound of iter_open is not
 * applied: seeking below it returns keys below it. */
static int mem_iter_seek(struct backend_iter *it, const void *key, size_t key_len)
{
    if (!it || !backend_seek_ok(key, key_len))
        return BACKEND_INVALID;
    if (it->cur.attached)
        skl_cursor_seek(&it->st->sl, &it->cur, key, key_len);
    return BACKEND_OK;
}

/* Returns the next entry below the end bound, or 0 at the end. */
static int mem_iter_next(struct backend_iter *it, const void **key, size_t *key_len,
                         const void **val, size_t *val_len)
{
    if (!it)
        return BACKEND_INVALID;
    struct skl_node *n = it->cur.next;
    if (!n)
        return 0;
    if (it->has_end && bkey_cmp(skl_key(n), n->klen, it->end, it->end_len) >= 0) {
        it->cur.next = NULL;
        return 0;
    }
    it->cur.next = n->next[0];
    if (key)
        *key = skl_key(n);
    if (key_len)
        *key_len = n->klen;
    if (val)
        *val = mem_val(n);
    if (val_len)
        *val_len = mem_of(n)->val_len;
    return 1;
}

/* iter_next with the entry lent through the call (version 2). */
static int mem_iter_next_v2(struct backend_iter *it, struct backend_call *call)
{
    backend_call_reset(call);
    int rc = mem_iter_next(it, &call->key, &call->key_len, &call->val, &call->val_len);
    if (rc < 0)
        mem_err(call->err, sizeof call->err, "iter_next: no cursor");
    return backend_call_end(call, rc);
}

/* Unregisters and frees a cursor (after close() too: it is detached). */
static void mem_iter_close(struct backend_iter *it)
{
    if (!it)
        return;
    skl_cursor_close(it->cur.attached ? &it->st->sl : NULL, &it->cur);
    free(it);
}

/* The expectation check's look-up (backend_probe_fn). */
static int mem_probe(void *ctx, const void *key, size_t key_len, int want_version,
                     uint64_t *version, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct backend_store *st = ctx;
    struct skl_node *n = skl_find(&st->sl, key, key_len);
    if (n && want_version)
        *version = backend_value_version(mem_val(n), mem_of(n)->val_len);
    return n != NULL;
}

/* Applies the writes atomically (version 2): the arguments and the
 * expectations are checked and every new node is allocated first (any
 * failure frees them and changes nothing), then phase 2 links them in
 * array order, so a later write to the same key replaces an earlier one,
 * and counts what each write found. */
static int mem_apply_v2(struct backend_store *st, const struct backend_write *w,
                        const struct backend_cond *cond, size_t n, struct backend_call *call)
{
    backend_call_reset(call);
    const char *why = st ? backend_check_writes(w, cond, n) : "apply: no store";
    if (why) {
        mem_err(call->err, sizeof call->err, why);
        return backend_call_end(call, BACKEND_INVALID);
    }
    int rc = backend_check_conds(w, cond, n, mem_probe, st, &call->failed, call->err,
                                 sizeof call->err);
    if (rc != BACKEND_OK)
        return backend_call_end(call, rc);

    struct skl_node *stack_nodes[MEM_STACK_WRITES];
    struct skl_node **nodes = stack_nodes;
    if (n > MEM_STACK_WRITES) {
        nodes = calloc(n, sizeof(*nodes));
        if (!nodes) {
            mem_err(call->err, sizeof call->err, "apply: out of memory");
            return backend_call_end(call, BACKEND_NOMEM);
        }
    }
    for (size_t i = 0; i < n; i++) {
        nodes[i] = NULL;
        if (w[i].op != BACKEND_PUT)
            continue;
        nodes[i] = skl_node_new(&st->sl, w[i].key, w[i].key_len, w[i].val_len);
        if (!nodes[i]) {
            for (size_t j = 0; j < i; j++)
                skl_node_free(&st->sl, nodes[j]);
            if (nodes != stack_nodes)
                free(nodes);
            mem_err(call->err, sizeof call->err, "apply: out of memory");
            return backend_call_end(call, BACKEND_NOMEM);
        }
        mem_of(nodes[i])->val_len = (uint32_t)w[i].val_len;
        if (w[i].val_len)
            memcpy(mem_val(nodes[i]), w[i].val, w[i].val_len);
    }

    /* Phase 2: nothing below can fail. The list moves open cursors off a
     * replaced or removed node before it is freed here. */
    for (size_t i = 0; i < n; i++) {
        struct skl_node *old;
        if (nodes[i]) {
            old = skl_put(&st->sl, nodes[i]);
            call->created += old == NULL;
        } else {
            old = skl_remove(&st->sl, w[i].key, w[i].key_len);
            call->removed += old != NULL;
        }
        skl_node_free(&st->sl, old);
    }
    if (nodes != stack_nodes)
        free(nodes);
    if (!call->want_counts)
        call->created = call->removed = 0;
    return backend_call_end(call, BACKEND_OK);
}

/* apply() of version 1: apply_v2 without expectations. */
static int mem_apply(struct backend_store *st, const struct backend_write *w, size_t n, char *err,
                     size_t errlen)
{
    struct backend_call call;
    call.want_counts = 0;                   /* the rest is set by apply_v2 */
    int rc = mem_apply_v2(st, w, NULL, n, &call);
    if (rc != BACKEND_OK && err && errlen)
        snprintf(err, errlen, "%s", call.err);
    return rc;
}

/* Nothing is durable, so there is nothing to flush. */
static int mem_sync(struct backend_store *st, char *err, size_t errlen)
{
    (void)st;
    (void)err;
    (void)errlen;
    return BACKEND_OK;
}

const struct backend_ops backend_memory_ops = {
    .version = 3,
    .name = "memory",
    .open = mem_open,
    .close = mem_close,
    .get = mem_get,
    .iter_open = mem_iter_open,
    .iter_seek = mem_iter_seek,
    .iter_next = mem_iter_next,
    .iter_close = mem_iter_close,
    .apply = mem_apply,
    .sync = mem_sync,
    .caps = 0,
    .get_v2 = mem_get_v2,
    .iter_next_v2 = mem_iter_next_v2,
    .apply_v2 = mem_apply_v2,
};
