/* ffindex.h - the in-memory ordered index of the flatfile backend.
 *
 * The shared skip list of backends/skiplist.h (keys in bkey_cmp() order),
 * each node holding where its value lies in the log file. Values stay on disk; a node
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
 * Cursors are the list's (struct skl_cursor on ix->sl): they survive
 * writes, moving to a replaced node's replacement or a removed one's
 * successor. */
#ifndef TABLED_FFINDEX_H
#define TABLED_FFINDEX_H
#include <stddef.h>
#include <stdint.h>

#include "backends/ffhash.h"
#include "backends/skiplist.h"

#define FFIDX_TOMB 1u            /* sk.flags: a delete, only during bulk load */
#define FFIDX_ARENA 2u           /* sk.flags: carved from the arena, not malloc()ed */
#define FFIDX_ENTRY_OVERHEAD 9u  /* bytes of a logged put beside key and value */

/* One key: where its value lies, then the shared list's node (its forward
 * pointers and key bytes follow). */
struct ffidx_node {
    uint64_t loc[2];            /* value offset in the file of each parity */
    uint32_t vlen;
    uint32_t cgen;              /* compaction number that set loc[!parity] */
    struct skl_node sk;         /* last: klen, height, flags, next[], key */
};

struct ffidx_bulk_ent {
    uint64_t cache;             /* 8 key bytes at the current sort depth */
    struct ffidx_node *node;
    uint64_t seq;               /* write order */
};

/* A block of nodes loaded from a checkpoint (ffidx_node_arena). */
struct ffidx_chunk {
    struct ffidx_chunk *next;
    size_t size, used;          /* bytes mapped, bytes handed out (header included) */
};

struct ffidx_thread;

struct ffidx {
    struct skl sl;              /* the linked nodes; its cursors survive writes */
    struct ffidx_chunk *chunks; /* arena blocks, freed with the index */
    struct ffidx_thread *fill;  /* the thread faulting in a reserved block, or NULL */
    struct ffidx_thread *huge;  /* the thread making it huge pages afterwards, or NULL */
    uint64_t arena_bytes;       /* their size */
    uint64_t arena_hint;        /* bytes of arena nodes expected in all */
    uint64_t live_bytes;        /* sum of klen + vlen + FFIDX_ENTRY_OVERHEAD */
    struct ffidx_bulk_ent *bulk;
    size_t nbulk, capbulk;
    uint64_t bulk_seq;
    struct ffh hash;            /* the keys' hash for point look-ups (ffhash.h), or off */
    int hash_job;               /* a large checkpoint load starts the hash's build on a
                                   thread (set it before the load when the hash is wanted) */
};

/* The ffidx node of a list node (NULL stays NULL). */
static inline struct ffidx_node *ffidx_of(const struct skl_node *n)
{
    return n ? (struct ffidx_node *)((char *)n - offsetof(struct ffidx_node, sk)) : NULL;
}

static inline uint8_t *ffidx_key(const struct ffidx_node *n)
{
    return skl_key(&n->sk);
}

/* The node after n in key order, or NULL. */
static inline struct ffidx_node *ffidx_next(const struct ffidx_node *n)
{
    return ffidx_of(n->sk.next[0]);
}

/* Linked nodes. */
static inline size_t ffidx_count(const struct ffidx *ix)
{
    return ix->sl.count;
}

void ffidx_init(struct ffidx *ix, uint64_t seed);
/* Stops the arena's threads, then frees every node and pending bulk
 * entry; registered cursors are detached (they report the end). */
void ffidx_free(struct ffidx *ix);

/* A new unlinked node holding a copy of key; NULL when out of memory. */
struct ffidx_node *ffidx_node_new(struct ffidx *ix, const void *key, size_t klen);
/* Like ffidx_node_new, from the arena: start-up from a checkpoint makes
 * millions of nodes, and one malloc() each costs more than the rest of
 * the load. An arena node's memory is given back only with the whole
 * index (ffidx_free): when it is replaced or removed it stays, so the
 * arena holds at most the checkpoint's nodes. */
struct ffidx_node *ffidx_node_arena(struct ffidx *ix, const void *key, size_t klen);
/* Start-up from a checkpoint, before its nodes: maps one arena block of
 * about bytes (the expected size of them all) and, when it is large,
 * starts a thread that faults it in ahead of the nodes filled into it:
 * the kernel zeroing the fresh pages is most of a large load, and this
 * way it runs on another core while this one reads and builds. The
 * block has small pages while it is filled: on a virtual machine that
 * hands free memory back to its hypervisor, huge pages take several
 * times longer to fault in (ffidx_arena_done makes them afterwards).
 * Without the block or the thread the load works as before. */
void ffidx_arena_reserve(struct ffidx *ix, uint64_t bytes);
/* Ends the start-up's reservation: stops and joins the fault-in thread
 * (if any), gives back the reserved block's unused end, and starts a
 * thread that turns the rest into huge pages in the background
 * (MADV_COLLAPSE, 2 MiB a call; ix->huge, stopped by ffidx_free), for
 * fewer TLB misses in lookups. With hash_job set, also starts the build
 * of the keys' hash on a thread over the arena's nodes (ffh_job_start).
 * Idempotent; called on every path of a load. */
void ffidx_arena_done(struct ffidx *ix);
/* Frees an unlinked node (NULL: nothing; an arena node: nothing now). */
void ffidx_node_free(struct ffidx *ix, struct ffidx_node *n);

/* The node with exactly this key, or NULL: through the keys' hash where
 * it answers, else the list's search. */
struct ffidx_node *ffidx_find(struct ffidx *ix, const void *key, size_t klen);

/* Turns the keys' hash on once the index is loaded (a start-up's bulk
 * load and checkpoint appends turn it off): maps its table and starts its
 * build, which ffidx_hash_step then does a slice at a time. Returns 0, or
 * -1 when it stays off (out of memory): look-ups then search the list. */
int ffidx_hash_start(struct ffidx *ix);
/* One slice of the hash's build (FFIDX_HASH_STEP nodes). Returns 1 while
 * more remains. Puts and removes may run between slices. */
int ffidx_hash_step(struct ffidx *ix);
#define FFIDX_HASH_STEP 4096
/* 1 while the hash's build has slices left (a put or remove that grew
 * or shrank the table past its bounds starts a new build). */
static inline int ffidx_hash_pending(const struct ffidx *ix)
{
    return ffh_pending(&ix->hash);
}
/* 1 while a thread builds the hash (see hash_job): a step then only
 * looks whether it is done, worth a call every FFH_JOB_POLL_MS. */
static inline int ffidx_hash_waiting(const struct ffidx *ix)
{
    return ffh_waiting(&ix->hash);
}

/* Links n (vlen set), replacing the node with the same key. Returns the
 * replaced node, unlinked, for the caller to free; NULL when it was new.
 * Cannot fail. */
struct ffidx_node *ffidx_put(struct ffidx *ix, struct ffidx_node *n);
/* Unlinks the node with this key and returns it (caller frees), or NULL. */
struct ffidx_node *ffidx_remove(struct ffidx *ix, const void *key, size_t klen);

/* Start-up: queues a logged write (n->sk.flags FFIDX_TOMB for a delete).
 * Returns 0, or -1 when out of memory (n is then not queued). */
int ffidx_bulk_add(struct ffidx *ix, struct ffidx_node *n);
/* Sorts the queued writes and merges them into the index (the last write
 * of a key wins; superseded nodes and tombstones are freed). */
void ffidx_bulk_finish(struct ffidx *ix);

/* Start-up from a checkpoint: links n (vlen set) after every linked node;
 * keys must come in strictly ascending order. tail[] (SKL_MAX_HEIGHT
 * entries, all NULL before the first call) keeps the last node of each
 * level between calls, so each append is O(height). */
void ffidx_append(struct ffidx *ix, struct ffidx_node *n, struct skl_node **tail);

#endif
