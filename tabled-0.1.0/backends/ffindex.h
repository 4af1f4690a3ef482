/* ffindex.h - the in-memory ordered index of the flatfile backend.
 *
 * A skip list of keys (memcmp order, shorter prefix first), each node
 * holding where its value lies in the log file. Values stay on disk; a node
 * is about 40 bytes plus its key. Two locations per node let compaction
 * build the next file while every read still uses the current one: loc[p]
 * is the value offset in the file of parity p (see flatfile.c).
 *
 * Start-up does not insert keys one by one (random inserts into a large
 * skip list are cache-miss bound, several microseconds each): recovery
 * hands every logged write to ffidx_bulk_add(), and ffidx_bulk_finish()
 * sorts them (multikey quicksort on 8-byte chunks), keeps the last write of
 * each key and links the survivors in one ordered pass.
 *
 * Cursors registered with the index survive writes: when a node a cursor
 * would return next is unlinked, the cursor moves to its replacement (same
 * key) or successor. */
#ifndef TABLED_FFINDEX_H
#define TABLED_FFINDEX_H
#include <stddef.h>
#include <stdint.h>

#define FFIDX_MAX_HEIGHT 20
#define FFIDX_TOMB 1u            /* node flag: a delete, only during bulk load */
#define FFIDX_ENTRY_OVERHEAD 9u  /* bytes of a logged put beside key and value */

struct ffidx_node {
    uint64_t loc[2];            /* value offset in the file of each parity */
    uint32_t vlen;
    uint32_t klen;
    uint32_t cgen;              /* compaction number that set loc[!parity] */
    uint8_t height;
    uint8_t flags;
    struct ffidx_node *next[];  /* then klen key bytes */
};

/* A position in the index that writes keep valid. */
struct ffidx_cursor {
    struct ffidx_node *next;    /* node returned next, NULL at the end */
    struct ffidx_cursor *prev_c, *next_c;
    int attached;               /* 0 once the index was freed */
};

struct ffidx_bulk_ent {
    uint64_t cache;             /* 8 key bytes at the current sort depth */
    struct ffidx_node *node;
    uint64_t seq;               /* write order */
};

struct ffidx {
    struct ffidx_node *head[FFIDX_MAX_HEIGHT];
    int height;
    uint64_t rng;
    size_t count;               /* linked nodes */
    uint64_t live_bytes;        /* sum of klen + vlen + FFIDX_ENTRY_OVERHEAD */
    struct ffidx_cursor *cursors;
    struct ffidx_bulk_ent *bulk;
    size_t nbulk, capbulk;
    uint64_t bulk_seq;
};

static inline uint8_t *ffidx_key(const struct ffidx_node *n)
{
    return (uint8_t *)&n->next[n->height];
}

/* Byte order of the keyspace. */
int ffidx_cmp(const void *a, size_t alen, const void *b, size_t blen);

void ffidx_init(struct ffidx *ix, uint64_t seed);
/* Frees every node and pending bulk entry; registered cursors are detached
 * (they report the end). */
void ffidx_free(struct ffidx *ix);

/* A new unlinked node holding a copy of key; NULL when out of memory. */
struct ffidx_node *ffidx_node_new(struct ffidx *ix, const void *key, size_t klen);

/* The node with exactly this key, or NULL. */
struct ffidx_node *ffidx_find(struct ffidx *ix, const void *key, size_t klen);
/* The first node with key >= key (klen 0: the first node), or NULL. */
struct ffidx_node *ffidx_find_ge(struct ffidx *ix, const void *key, size_t klen);

/* Links n (vlen set), replacing the node with the same key. Returns the
 * replaced node, unlinked, for the caller to free; NULL when it was new.
 * Cannot fail. */
struct ffidx_node *ffidx_put(struct ffidx *ix, struct ffidx_node *n);
/* Unlinks the node with this key and returns it (caller frees), or NULL. */
struct ffidx_node *ffidx_remove(struct ffidx *ix, const void *key, size_t klen);

/* Registers a cursor positioned at the first key >= start. */
void ffidx_cursor_open(struct ffidx *ix, struct ffidx_cursor *c, const void *start, size_t slen);
void ffidx_cursor_seek(struct ffidx *ix, struct ffidx_cursor *c, const void *key, size_t klen);
/* Unregisters the cursor (safe after ffidx_free). */
void ffidx_cursor_close(struct ffidx *ix, struct ffidx_cursor *c);

/* Start-up: queues a logged write (n->flags FFIDX_TOMB for a delete).
 * Returns 0, or -1 when out of memory (n is then not queued). */
int ffidx_bulk_add(struct ffidx *ix, struct ffidx_node *n);
/* Sorts the queued writes and merges them into the index (the last write
 * of a key wins; superseded nodes and tombstones are freed). */
void ffidx_bulk_finish(struct ffidx *ix);

#endif
