/* skiplist.h - the ordered in-memory structure of the memory backend
 * (backends/memory.c) and of the flat-file index (backends/ffindex.c),
 * written once: a skip list of byte-string keys in bkey_cmp() order, with
 * a search finger, cursors that survive writes, and the node and its key
 * in one malloc() block.
 *
 * A node is intrusive: the owner's node type ends with a struct skl_node
 * member (its last member; the forward pointers, the key bytes and the
 * owner's tail bytes follow it), and skl_init() is told that member's
 * offset so that the list can free whole blocks. Heights are drawn with
 * p = 1/4 (4/3 forward pointers per node on average).
 *
 * Ownership: a linked node belongs to the list (skl_free() frees it); an
 * unlinked one (from skl_node_new(), or returned by skl_put() or
 * skl_remove()) belongs to the caller, who links it or frees it with
 * skl_node_free().
 *
 * Cursors registered with the list survive writes: when a node a cursor
 * would return next is unlinked, the cursor moves to its replacement (same
 * key) or successor, so it never reads freed memory.
 *
 * Header-only (static inline) and installed beside backend.h: plug-ins
 * compile backends/memory.c alone against the installed headers, and the
 * searches inline bkey_cmp(). Needs only the C library. */
#ifndef TABLED_BACKEND_SKIPLIST_H
#define TABLED_BACKEND_SKIPLIST_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/bkey.h"

#define SKL_MAX_HEIGHT 20       /* 4^20 nodes before searches degrade */

/* The list's part of a node. */
struct skl_node {
    uint32_t klen;              /* key bytes after next[height] */
    uint8_t height;             /* forward pointers, 1..SKL_MAX_HEIGHT */
    uint8_t flags;              /* the owner's: the list never reads it */
    struct skl_node *next[];    /* then klen key bytes, then the tail */
};

/* A position in the list that writes keep valid. */
struct skl_cursor {
    struct skl_node *next;              /* node returned next, NULL at the end */
    struct skl_cursor *prev_c, *next_c; /* the list's cursors */
    int attached;                       /* 0 once closed or the list freed */
};

struct skl {
    struct skl_node *head[SKL_MAX_HEIGHT];  /* forward pointers of the head */
    int height;                 /* levels in use, >= 1 */
    uint64_t rng;               /* xorshift64 state for node heights */
    size_t count;               /* linked nodes */
    size_t node_off;            /* offset of struct skl_node in the owner's node */
    struct skl_cursor *cursors; /* registered cursors (intrusive list) */
    /* The finger (when use_finger): the last node before the last key
     * searched, linked or unlinked on every level below height (NULL
     * meaning the head), valid while finger_ok. Every unlink leaves it on
     * the predecessors of the unlinked key, which are all still linked. It
     * pays where searches move a little forward (the memory backend's
     * get-then-put of one key, a batch in one partition); for keys in
     * random order (the flat-file index's gets) keeping it costs more
     * than it saves, and ascending runs can use skl_find_ge_from(). */
    int use_finger;
    int finger_ok;
    struct skl_node *finger[SKL_MAX_HEIGHT];
};

/* The key bytes of n. */
static inline uint8_t *skl_key(const struct skl_node *n)
{
    return (uint8_t *)&n->next[n->height];
}

/* The owner's tail bytes after n's key (unaligned). */
static inline uint8_t *skl_tail(const struct skl_node *n)
{
    return skl_key(n) + n->klen;
}

/* The whole malloc() block of n: its forward pointers and key included,
 * not the tail (for memory accounting). */
static inline size_t skl_node_size(const struct skl *sl, const struct skl_node *n)
{
    return sl->node_off + sizeof *n + (size_t)n->height * sizeof n->next[0] + n->klen;
}

/* Starts an empty list whose owner's nodes hold their struct skl_node at
 * byte node_off; seed picks the node heights (0: a fixed seed);
 * use_finger: searches keep and start from the finger (see struct skl). */
static inline void skl_init(struct skl *sl, size_t node_off, uint64_t seed, int use_finger)
{
    memset(sl, 0, sizeof *sl);
    sl->height = 1;
    sl->node_off = node_off;
    sl->use_finger = use_finger;
    sl->rng = seed ? seed : 0x9E3779B97F4A7C15ull;
}

/* Frees an unlinked node (its whole block). */
static inline void skl_node_free(const struct skl *sl, struct skl_node *n)
{
    if (n)
        free((char *)n - sl->node_off);
}

/* Frees every linked node and detaches the registered cursors (they
 * report the end and may still be closed); the list is empty afterwards. */
static inline void skl_free(struct skl *sl)
{
    for (struct skl_cursor *c = sl->cursors; c; c = c->next_c) {
        c->attached = 0;
        c->next = NULL;
    }
    sl->cursors = NULL;
    struct skl_node *n = sl->head[0];
    while (n) {
        struct skl_node *next = n->next[0];
        skl_node_free(sl, n);
        n = next;
    }
    memset(sl->head, 0, sizeof sl->head);
    sl->height = 1;
    sl->count = 0;
    sl->finger_ok = 0;
}

/* Random node height: each extra level with probability 1/4 (xorshift64
 * written out: plug-ins build this header with the C library alone). */
static inline int skl_random_height(struct skl *sl)
{
    uint64_t x = sl->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    sl->rng = x;
    uint32_t r = (uint32_t)(x >> 32);
    int h = 1;
    while (h < SKL_MAX_HEIGHT && (r & 3) == 0) {
        h++;
        r >>= 2;
    }
    return h;
}

/* A new unlinked node, one block: node_off owner bytes (left
 * uninitialised), the node, its forward pointers, a copy of key and tail
 * bytes (uninitialised). NULL when out of memory. */
static inline struct skl_node *skl_node_new(struct skl *sl, const void *key, size_t klen,
                                            size_t tail)
{
    int h = skl_random_height(sl);
    size_t size = sl->node_off + sizeof(struct skl_node) + (size_t)h * sizeof(struct skl_node *) +
                  klen + tail;
    char *block = malloc(size);
    if (!block)
        return NULL;
    struct skl_node *n = (struct skl_node *)(block + sl->node_off);
    n->klen = (uint32_t)klen;
    n->height = (uint8_t)h;
    n->flags = 0;
    if (klen)
        memcpy(skl_key(n), key, klen);
    return n;
}

/* Forward pointer slot at level lvl after x (x NULL: the head). */
static inline struct skl_node **skl_slot(struct skl *sl, struct skl_node *x, int lvl)
{
    return x ? &x->next[lvl] : &sl->head[lvl];
}

/* Starts loading node n's first two cache lines (its header, pointers
 * and the start of its key), as the search will compare it. */
static inline void skl_prefetch(const struct skl_node *n)
{
    __builtin_prefetch(n);
    __builtin_prefetch((const char *)n + 64);
}

/* Compares node n's key with key. */
static inline int skl_node_cmp(const struct skl_node *n, const void *key, size_t klen)
{
    return bkey_cmp(skl_key(n), n->klen, key, klen);
}

/* Returns the first node with key >= key (NULL: none) and, when update is
 * not NULL, fills update[lvl] with the last node before it on every level
 * below height (NULL meaning the head); with use_finger the finger then
 * holds the same.
 *
 * Searches mostly move a little forward from the last one: the keys of a
 * batch in one partition, an insert after the get that checked it. When
 * the finger's level-0 node still sorts before key, so does every finger
 * node (each lies at or before the one a level below), and each is a
 * valid place to start its level from. The search
 * starts each level from the finger while no level above needed a step,
 * else from where the level above ended, as a plain search does. Either
 * way every start sorts before key, so the result is the same; only the
 * nodes visited differ. When no node lies between the finger and key, the
 * finger is the answer as it stands. */
static inline struct skl_node *skl_find_ge(struct skl *sl, const void *key, size_t klen,
                                           struct skl_node **update)
{
    struct skl_node *path[SKL_MAX_HEIGHT];
    if (!update)
        update = path;
    int fresh = sl->finger_ok && sl->finger[0] && skl_node_cmp(sl->finger[0], key, klen) < 0;
    if (fresh) {
        struct skl_node *n = sl->finger[0]->next[0];
        if (!n || skl_node_cmp(n, key, klen) >= 0) {
            memcpy(update, sl->finger, (size_t)sl->height * sizeof *update);
            return n;
        }
    }
    struct skl_node *x = NULL;
    struct skl_node *stop = NULL;   /* known to be >= key: not compared again */
    for (int lvl = sl->height - 1; lvl >= 0; lvl--) {
        if (fresh && sl->finger[lvl])
            x = sl->finger[lvl];
        struct skl_node *n;
        while ((n = *skl_slot(sl, x, lvl)) && n != stop) {
            /* the node the next level starts with, should the search go
               down here: its load overlaps this comparison's */
            if (lvl > 0) {
                struct skl_node *d = *skl_slot(sl, x, lvl - 1);
                if (d && d != n)
                    skl_prefetch(d);
            }
            if (skl_node_cmp(n, key, klen) >= 0)
                break;
            x = n;
            fresh = 0;
        }
        stop = n;
        update[lvl] = x;
    }
    if (sl->use_finger) {
        memcpy(sl->finger, update, (size_t)sl->height * sizeof *update);
        sl->finger_ok = 1;
    }
    return *skl_slot(sl, x, 0);
}

/* skl_find_ge() for keys given in ascending order, with the caller's
 * finger: update[] must hold the predecessors of an earlier key k0 <= key
 * on every level (NULL meaning the head), as the previous search's
 * update[] does, also after a link or unlink at k0; update then holds the
 * new predecessors. Each level starts from update[lvl] while no level
 * above needed a step, else from where the level above ended: a step on
 * a level passes that level's successor of k0, which sorts at or after k0
 * and so after update[] of every level below, and starting there skips
 * the nodes between, as a plain search does (starting every level from
 * update[lvl] walked level 0 over every node between k0 and key: a merge
 * of a few keys spread over a large list cost O(list size)). A sorted run
 * of n keys costs O(n log) plus the upper-level steps between them. */
static inline struct skl_node *skl_find_ge_from(struct skl *sl, const void *key, size_t klen,
                                                struct skl_node **update)
{
    struct skl_node *x = NULL;
    int moved = 0;
    for (int lvl = sl->height - 1; lvl >= 0; lvl--) {
        if (!moved)
            x = update[lvl];
        struct skl_node *n;
        while ((n = *skl_slot(sl, x, lvl)) && skl_node_cmp(n, key, klen) < 0) {
            x = n;
            moved = 1;
        }
        update[lvl] = x;
    }
    return *skl_slot(sl, update[0], 0);
}

/* The node holding exactly key, or NULL. */
static inline struct skl_node *skl_find(struct skl *sl, const void *key, size_t klen)
{
    struct skl_node *n = skl_find_ge(sl, key, klen, NULL);
    return n && skl_node_cmp(n, key, klen) == 0 ? n : NULL;
}

/* The first node with key >= key (klen 0: the first node), or NULL. */
static inline struct skl_node *skl_seek(struct skl *sl, const void *key, size_t klen)
{
    return klen ? skl_find_ge(sl, key, klen, NULL) : sl->head[0];
}

/* Links n after the predecessors in update (from skl_find_ge() or
 * skl_find_ge_from() on its key), raising the list height when needed;
 * the finger (with use_finger) then stands just after n. Cannot fail. */
static inline void skl_link(struct skl *sl, struct skl_node *n, struct skl_node **update)
{
    for (int lvl = sl->height; lvl < n->height; lvl++)
        update[lvl] = NULL;
    if (n->height > sl->height)
        sl->height = n->height;
    for (int lvl = 0; lvl < n->height; lvl++) {
        struct skl_node **slot = skl_slot(sl, update[lvl], lvl);
        n->next[lvl] = *slot;
        *slot = n;
    }
    if (sl->use_finger) {
        for (int lvl = 0; lvl < sl->height; lvl++)
            sl->finger[lvl] = lvl < n->height ? n : update[lvl];
        sl->finger_ok = 1;
    }
    sl->count++;
}

/* Unlinks old, whose predecessors are in update (from skl_find_ge() on its
 * key), and moves the cursors that would return it next to repl (which
 * the caller links at once) or, when repl is NULL, to its successor. The
 * finger (with use_finger) is left on the predecessors. Cannot fail. */
static inline void skl_unlink(struct skl *sl, struct skl_node *old, struct skl_node **update,
                              struct skl_node *repl)
{
    for (int lvl = 0; lvl < old->height; lvl++) {
        struct skl_node **slot = skl_slot(sl, update[lvl], lvl);
        if (*slot == old)
            *slot = old->next[lvl];
    }
    while (sl->height > 1 && sl->head[sl->height - 1] == NULL)
        sl->height--;
    for (struct skl_cursor *c = sl->cursors; c; c = c->next_c)
        if (c->next == old)
            c->next = repl ? repl : old->next[0];
    if (sl->use_finger) {
        memcpy(sl->finger, update, (size_t)sl->height * sizeof *update);
        sl->finger_ok = 1;
    }
    sl->count--;
}

/* Links n, replacing the node with the same key. Returns the replaced
 * node, unlinked (the caller's to free), or NULL when the key was new.
 * Cannot fail. */
static inline struct skl_node *skl_put(struct skl *sl, struct skl_node *n)
{
    struct skl_node *update[SKL_MAX_HEIGHT];
    struct skl_node *old = skl_find_ge(sl, skl_key(n), n->klen, update);
    if (old && skl_node_cmp(old, skl_key(n), n->klen) != 0)
        old = NULL;
    if (old)
        skl_unlink(sl, old, update, n);
    skl_link(sl, n, update);
    return old;
}

/* Unlinks the node with this key and returns it (the caller's to free),
 * or NULL when there is none. */
static inline struct skl_node *skl_remove(struct skl *sl, const void *key, size_t klen)
{
    struct skl_node *update[SKL_MAX_HEIGHT];
    struct skl_node *old = skl_find_ge(sl, key, klen, update);
    if (!old || skl_node_cmp(old, key, klen) != 0)
        return NULL;
    skl_unlink(sl, old, update, NULL);
    return old;
}

/* Registers cursor c, positioned at the first key >= start (slen 0: the
 * first key). */
static inline void skl_cursor_open(struct skl *sl, struct skl_cursor *c, const void *start,
                                   size_t slen)
{
    c->attached = 1;
    c->next = skl_seek(sl, start, slen);
    c->prev_c = NULL;
    c->next_c = sl->cursors;
    if (sl->cursors)
        sl->cursors->prev_c = c;
    sl->cursors = c;
}

/* Moves a registered cursor to the first key >= key (klen 0: the first
 * key); a detached cursor stays at the end. */
static inline void skl_cursor_seek(struct skl *sl, struct skl_cursor *c, const void *key,
                                   size_t klen)
{
    if (c->attached)
        c->next = skl_seek(sl, key, klen);
}

/* Unregisters the cursor; safe on a detached one (sl is then not read, so
 * it may be NULL or freed). */
static inline void skl_cursor_close(struct skl *sl, struct skl_cursor *c)
{
    if (!c->attached)
        return;
    if (c->prev_c)
        c->prev_c->next_c = c->next_c;
    else
        sl->cursors = c->next_c;
    if (c->next_c)
        c->next_c->prev_c = c->prev_c;
    c->attached = 0;
}

#endif
