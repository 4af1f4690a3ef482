/* memory.c - the in-memory backend: an ordered skip list, nothing on disk.
 *
 * Keys are arbitrary byte strings ordered by memcmp with the shorter of two
 * equal prefixes first. Every entry is ONE malloc() block: the node header,
 * its forward pointers, then the key bytes and the value bytes inline. Node
 * heights are drawn with p = 1/4, so a node carries 4/3 forward pointers on
 * average and the overhead per entry is about 27 bytes plus malloc's own.
 * get/put/delete are O(log n); iteration walks level 0 in order.
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
 * the store keeps a list of its open cursors, and when apply() unlinks the node a
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/checks.h"

#define MEM_MAX_HEIGHT 16               /* 4^16 entries before it degrades */
#define MEM_STACK_WRITES 16             /* apply() batches up to this size
                                           need no scratch allocation */

/* One entry: header, then next[height], then key bytes, then value bytes. */
struct mem_node {
    uint32_t key_len;
    uint32_t val_len;
    uint8_t height;
    struct mem_node *next[];
};

struct backend_store {
    struct mem_node *head[MEM_MAX_HEIGHT];  /* forward pointers of the head */
    int height;                             /* levels in use, >= 1 */
    uint64_t rng;                           /* xorshift state for heights */
    struct backend_iter *iters;             /* open cursors (intrusive list) */
    /* The finger: the last node before the last key searched (or linked)
     * on every level, NULL meaning the head. finger_ok is cleared when a
     * node is unlinked, as it may be one of them. */
    struct mem_node *finger[MEM_MAX_HEIGHT];
    int finger_ok;
};

struct backend_iter {
    struct backend_store *st;       /* NULL once the store was closed */
    struct mem_node *next;          /* entry iter_next returns next */
    struct backend_iter *prev_it, *next_it;  /* the store's cursor list */
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

static uint8_t *mem_key(const struct mem_node *n)
{
    return (uint8_t *)&n->next[n->height];
}

static uint8_t *mem_val(const struct mem_node *n)
{
    return mem_key(n) + n->key_len;
}

/* Byte order of the keyspace: memcmp, and a proper prefix sorts first. */
static int mem_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* Random node height: each extra level with probability 1/4. (xorshift64
 * written out, not core/rand.h: the example plug-in compiles this file
 * with nothing but backend.h and the header-only backends/checks.h.) */
static int mem_random_height(struct backend_store *st)
{
    uint64_t x = st->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    st->rng = x;
    uint32_t r = (uint32_t)(x >> 32);
    int h = 1;
    while (h < MEM_MAX_HEIGHT && (r & 3) == 0) {
        h++;
        r >>= 2;
    }
    return h;
}

/* Allocates a node holding copies of key and value. NULL when out of
 * memory. */
static struct mem_node *mem_node_new(struct backend_store *st, const void *key, size_t key_len,
                                     const void *val, size_t val_len)
{
    int h = mem_random_height(st);
    size_t size = sizeof(struct mem_node) + (size_t)h * sizeof(struct mem_node *) + key_len + val_len;
    struct mem_node *n = malloc(size);
    if (!n)
        return NULL;
    n->key_len = (uint32_t)key_len;
    n->val_len = (uint32_t)val_len;
    n->height = (uint8_t)h;
    memcpy(mem_key(n), key, key_len);
    if (val_len)
        memcpy(mem_val(n), val, val_len);
    return n;
}

/* Forward pointer slot at level lvl of x, where x == NULL is the head. */
static struct mem_node **mem_slot(struct backend_store *st, struct mem_node *x, int lvl)
{
    return x ? &x->next[lvl] : &st->head[lvl];
}

/* Returns the first node with key >= key and, when update is not NULL,
 * fills update[lvl] with the last node before it on every level (NULL
 * meaning the head); the finger then holds the same.
 *
 * Searches mostly move a little forward from the last one: the keys of a
 * batch in one partition, an insert after the get that checked it. When
 * the finger's level-0 node still sorts before key, so does every finger
 * node (each lies at or before the one a level below), and each is a
 * valid place to start its level from. The search starts each level from
 * the finger while no level above needed a step, else from where the level
 * above ended, as a plain search does. Either way every start sorts before
 * key, so the result is the same; only the nodes visited differ. When no
 * node lies between the finger and key, the finger is the answer as it
 * stands (two comparisons instead of one or more per level). */
static struct mem_node *mem_find_ge(struct backend_store *st, const void *key, size_t key_len,
                                    struct mem_node **update)
{
    struct mem_node *path[MEM_MAX_HEIGHT];
    if (!update)
        update = path;
    int fresh = st->finger_ok && st->finger[0] &&
                mem_cmp(mem_key(st->finger[0]), st->finger[0]->key_len, key, key_len) < 0;
    if (fresh) {
        /* No node between the finger and key (the finger's successor does
         * not sort before key): then no level has one either, and the
         * finger is the whole path. So it is for a get and the apply() of
         * the same key, and for each insert of an ascending run. */
        struct mem_node *n = st->finger[0]->next[0];
        if (!n || mem_cmp(mem_key(n), n->key_len, key, key_len) >= 0) {
            memcpy(update, st->finger, MEM_MAX_HEIGHT * sizeof *update);
            return n;
        }
    }
    struct mem_node *x = NULL;
    struct mem_node *stop = NULL;   /* known to be >= key: not compared again */
    for (int lvl = st->height - 1; lvl >= 0; lvl--) {
        if (fresh && st->finger[lvl])
            x = st->finger[lvl];
        struct mem_node *n;
        while ((n = *mem_slot(st, x, lvl)) && n != stop &&
               mem_cmp(mem_key(n), n->key_len, key, key_len) < 0) {
            x = n;
            fresh = 0;
        }
        stop = n;
        update[lvl] = x;
    }
    memcpy(st->finger, update, (size_t)st->height * sizeof *update);
    memset(st->finger + st->height, 0, (size_t)(MEM_MAX_HEIGHT - st->height) * sizeof *update);
    st->finger_ok = 1;
    return *mem_slot(st, x, 0);
}

/* Moves every open cursor that would return old next to repl (or, when
 * repl is NULL, to old's successor), so that freeing old is safe. */
static void mem_fix_iters(struct backend_store *st, struct mem_node *old, struct mem_node *repl)
{
    for (struct backend_iter *it = st->iters; it; it = it->next_it)
        if (it->next == old)
            it->next = repl ? repl : old->next[0];
}

/* Links node n after the predecessors in update (from mem_find_ge on its
 * key), raising the list height if needed. Cannot fail. */
static void mem_link(struct backend_store *st, struct mem_node *n, struct mem_node **update)
{
    for (int lvl = st->height; lvl < n->height; lvl++)
        update[lvl] = NULL;
    if (n->height > st->height)
        st->height = n->height;
    for (int lvl = 0; lvl < n->height; lvl++) {
        struct mem_node **slot = mem_slot(st, update[lvl], lvl);
        n->next[lvl] = *slot;
        *slot = n;
    }
}

/* Unlinks node old, whose predecessors are in update. Cannot fail. */
static void mem_unlink(struct backend_store *st, struct mem_node *old, struct mem_node **update)
{
    st->finger_ok = 0;
    for (int lvl = 0; lvl < old->height; lvl++) {
        struct mem_node **slot = mem_slot(st, update[lvl], lvl);
        if (*slot == old)
            *slot = old->next[lvl];
    }
    while (st->height > 1 && st->head[st->height - 1] == NULL)
        st->height--;
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
    struct backend_store *st = calloc(1, sizeof(*st));
    if (!st) {
        mem_err(err, errlen, "open: out of memory");
        return BACKEND_NOMEM;
    }
    st->height = 1;
    st->rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)st;
    if (!st->rng)
        st->rng = 1;
    *out = st;
    return BACKEND_OK;
}

/* Frees every entry and the store; open cursors are detached, not freed. */
static void mem_close(struct backend_store *st)
{
    if (!st)
        return;
    for (struct backend_iter *it = st->iters; it; it = it->next_it) {
        it->st = NULL;
        it->next = NULL;
    }
    struct mem_node *n = st->head[0];
    while (n) {
        struct mem_node *next = n->next[0];
        free(n);
        n = next;
    }
    free(st);
}

/* The node holding exactly key, or NULL. */
static struct mem_node *mem_find(struct backend_store *st, const void *key, size_t key_len)
{
    struct mem_node *n = mem_find_ge(st, key, key_len, NULL);
    if (!n || mem_cmp(mem_key(n), n->key_len, key, key_len) != 0)
        return NULL;
    return n;
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
    struct mem_node *n = mem_find(st, key, key_len);
    if (!n)
        return backend_call_end(call, BACKEND_NOTFOUND);   /* an answer: no detail */
    call->val = mem_val(n);
    call->val_len = n->val_len;
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
    it->next = start_len ? mem_find_ge(st, start, start_len, NULL) : st->head[0];
    it->prev_it = NULL;
    it->next_it = st->iters;
    if (st->iters)
        st->iters->prev_it = it;
    st->iters = it;
    *out = it;
    return BACKEND_OK;
}

/* Repositions at the first key >= key. The start bound of iter_open is not
 * applied: seeking below it returns keys below it. */
static int mem_iter_seek(struct backend_iter *it, const void *key, size_t key_len)
{
    if (!it || !backend_seek_ok(key, key_len))
        return BACKEND_INVALID;
    if (!it->st)
        return BACKEND_OK;
    it->next = key_len ? mem_find_ge(it->st, key, key_len, NULL) : it->st->head[0];
    return BACKEND_OK;
}

/* Returns the next entry below the end bound, or 0 at the end. */
static int mem_iter_next(struct backend_iter *it, const void **key, size_t *key_len,
                         const void **val, size_t *val_len)
{
    if (!it)
        return BACKEND_INVALID;
    struct mem_node *n = it->next;
    if (!n)
        return 0;
    if (it->has_end && mem_cmp(mem_key(n), n->key_len, it->end, it->end_len) >= 0) {
        it->next = NULL;
        return 0;
    }
    it->next = n->next[0];
    if (key)
        *key = mem_key(n);
    if (key_len)
        *key_len = n->key_len;
    if (val)
        *val = mem_val(n);
    if (val_len)
        *val_len = n->val_len;
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

/* Unregisters and frees a cursor. */
static void mem_iter_close(struct backend_iter *it)
{
    if (!it)
        return;
    if (it->st) {
        if (it->prev_it)
            it->prev_it->next_it = it->next_it;
        else
            it->st->iters = it->next_it;
        if (it->next_it)
            it->next_it->prev_it = it->prev_it;
    }
    free(it);
}

/* The expectation check's look-up (backend_probe_fn). */
static int mem_probe(void *ctx, const void *key, size_t key_len, int want_version,
                     uint64_t *version, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct mem_node *n = mem_find(ctx, key, key_len);
    if (n && want_version)
        *version = backend_value_version(mem_val(n), n->val_len);
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

    struct mem_node *stack_nodes[MEM_STACK_WRITES];
    struct mem_node **nodes = stack_nodes;
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
        nodes[i] = mem_node_new(st, w[i].key, w[i].key_len, w[i].val, w[i].val_len);
        if (!nodes[i]) {
            for (size_t j = 0; j < i; j++)
                free(nodes[j]);
            if (nodes != stack_nodes)
                free(nodes);
            mem_err(call->err, sizeof call->err, "apply: out of memory");
            return backend_call_end(call, BACKEND_NOMEM);
        }
    }

    /* Phase 2: nothing below can fail. */
    for (size_t i = 0; i < n; i++) {
        struct mem_node *update[MEM_MAX_HEIGHT];
        struct mem_node *old = mem_find_ge(st, w[i].key, w[i].key_len, update);
        if (old && mem_cmp(mem_key(old), old->key_len, w[i].key, w[i].key_len) != 0)
            old = NULL;
        if (nodes[i])
            call->created += old == NULL;
        else
            call->removed += old != NULL;
        if (old) {
            mem_unlink(st, old, update);
        }
        if (nodes[i]) {
            mem_link(st, nodes[i], update);
            /* the finger now stands just after the new node: update[] holds
             * no unlinked node (they all sort before the key) */
            for (int lvl = 0; lvl < st->height; lvl++)
                st->finger[lvl] = lvl < nodes[i]->height ? nodes[i] : update[lvl];
            st->finger_ok = 1;
        }
        if (old) {
            mem_fix_iters(st, old, nodes[i]);
            free(old);
        }
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
