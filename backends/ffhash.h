/* ffhash.h - a hash of the flat-file index's keys beside its skip list.
 *
 * A point look-up in the skip list visits about 45 nodes at ten million
 * keys, each in a different cache line of a large arena; this table finds
 * the node in one or two. It maps a key to its linked list node and holds
 * nothing else: the list stays the index (order, cursors, scans).
 *
 * Open addressing with linear probing over slots of 8 bytes: the
 * node's address in the low 48 bits, then 6 bits of the key's hash (so
 * that most slots of another key are passed without reading its node) and
 * 10 bits of the slot's distance from the key's home slot (so that a
 * remove can shift the run after it back without hashing other keys). 0
 * is an empty slot. The hash is seeded at random per table; no key is
 * looked for past FFH_PROBE slots, so keys chosen to collide cost a
 * bounded probe and then the list's search, never a long scan.
 *
 * The table is built after start-up, a few thousand nodes per event-loop
 * turn (ffh_step walks the list with a registered cursor, so writes in
 * between are safe), and kept by every put and remove meanwhile. Until the
 * walk ends it holds a subset of the list: a key it lacks may still be
 * linked, and ffh_find says so. After a large checkpoint load the table is
 * built on a thread instead (ffh_job_start), from the load's arena of
 * nodes, which no one frees or changes the keys of while the index
 * lives: the loop keeps a journal of its puts and removes meanwhile (each
 * with its key's hash, so that replaying it reads no node) and replays it
 * when the thread is done, then uses the table.
 *
 * A table is sized for FFH_BUILD_LOAD of its slots, and built anew when
 * the keys pass FFH_MAX_LOAD (then sized for FFH_GROW_LOAD: the walks of
 * a growing list's builds add up to about twice its keys, not five
 * times) or fall under an eighth (a key's home slot is the hash scaled to
 * the table's size, so any size will do): about 13 bytes a key after a
 * start, 20 after a build for growth, between 11 and 64 in between.
 *
 * Needs the C library, POSIX threads and Linux's mmap. */
#ifndef TABLED_FFHASH_H
#define TABLED_FFHASH_H
#include <stddef.h>
#include <stdint.h>

#include "backends/skiplist.h"

#define FFH_PROBE 512u          /* slots looked at for one key, at most */
#define FFH_MIN_SLOTS 1024      /* the smallest table */
#define FFH_BUILD_LOAD 0.6      /* a table is built for keys this share of its slots */
#define FFH_MAX_LOAD 0.75       /* and built anew, larger, when they pass this: */
#define FFH_GROW_LOAD 0.4       /* then for this share, so that a growing list
                                   is walked for a build every 1.9x keys */
#define FFH_JOURNAL_MAX ((size_t)1 << 20) /* writes kept while a thread builds; past
                                             it the thread's build is given up */
#define FFH_JOB_POLL_MS 5       /* how often the loop looks whether the thread is done */

struct ffh_job;                 /* a build on a thread (ffhash.c) */

/* Where a thread's build finds nodes: [first, end) holds whole nodes one
 * after another, each skl_node_size() bytes (its owner's fields up to the
 * list's node_off, its struct skl_node, forward pointers and key) rounded
 * up to 8 (as ffidx_node_arena carves them). */
struct ffh_range {
    const char *first, *end;
};

struct ffh {
    uint64_t *slot;             /* nslots slots (mmap'ed), or NULL: the table is off */
    size_t nslots;
    size_t used;                /* occupied slots */
    uint64_t seed;              /* of the hash; a new one for every table */
    uint64_t seed_base;         /* mixed into each new seed (ffh_init's) */
    int walking;                /* the build's walk is under way (walk attached) */
    int refused;                /* a key found no slot within FFH_PROBE since the build began */
    int disabled;               /* node addresses do not fit 48 bits: never on */
    struct ffh_job *job;        /* a build on a thread, or NULL */
    struct skl_cursor walk;     /* the walk's position on the list */
    uint64_t builds;            /* tables built (statistics, tests) */
    size_t replayed;            /* journal entries replayed at the last take-over (tests) */
};

/* An empty, off table; seed is mixed into the random seed of each table. */
void ffh_init(struct ffh *h, uint64_t seed);
/* Ends the walk or stops and joins the thread, and unmaps the table; it is off afterwards (ffh_start
 * turns it on again). sl is the list the walk is registered with. */
void ffh_free(struct ffh *h, struct skl *sl);

/* Maps an empty table sized for the list's keys (FFH_BUILD_LOAD) and
 * starts the walk from the list's first node; an earlier table is dropped
 * first. While a thread builds (ffh_job_start) it does nothing and
 * returns 0. Returns 0, or -1 (out of memory, or disabled): the table is then
 * off and every look-up goes to the list. */
int ffh_start(struct ffh *h, struct skl *sl);
/* Adds up to budget more nodes of the walk, or, while a thread builds,
 * adopts its table once it is done (joins it and replays the journal).
 * Returns 1 while the build has more to do, 0 once it is over (or the
 * table is off). */
int ffh_step(struct ffh *h, struct skl *sl, size_t budget);
/* 1 when every linked node is in the table: it is on, its build has
 * ended and no key was refused since it began. */
static inline int ffh_complete(const struct ffh *h)
{
    return h->slot && !h->walking && !h->job && !h->refused;
}

/* 1 while ffh_step has work: a build under way (a walk or a thread). */
static inline int ffh_pending(const struct ffh *h)
{
    return h->job || (h->slot && h->walking);
}
/* 1 while a thread builds: ffh_step then only looks whether it is done,
 * and is worth calling every FFH_JOB_POLL_MS rather than every turn. */
static inline int ffh_waiting(const struct ffh *h)
{
    return h->job != NULL;
}

/* Starts a build of a table for sl's keys on a thread, over the nodes of
 * ranges r[0..nr) (they must be exactly the list's nodes now). An earlier
 * table is dropped first. From now until ffh_step adopts the table, puts and removes are
 * journalled and look-ups search the list. Returns 0, or -1 (out of
 * memory, no thread, or disabled): the table is then off. */
int ffh_job_start(struct ffh *h, struct skl *sl, const struct ffh_range *r, size_t nr);

/* The home slot of a key in the table (it must be on); for tests and
 * diagnostics. */
size_t ffh_home_of(const struct ffh *h, const void *key, size_t klen);

/* The linked node with this key, or NULL. *sure is set to 1 when a NULL
 * answer is final (the table is complete and the key is not in it) and
 * to 0 when the list must be searched (off, mid-build, or a key that
 * found no slot). */
struct skl_node *ffh_find(const struct ffh *h, const void *key, size_t klen, int *sure);

/* After the list linked n, replacing old (NULL: n's key is new): keeps
 * the table, and rebuilds it larger when the keys pass FFH_MAX_LOAD. */
void ffh_put(struct ffh *h, struct skl *sl, struct skl_node *n, struct skl_node *old);
/* After the list unlinked old (no replacement): keeps the table, and
 * rebuilds it smaller when the keys fall under an eighth of it. */
void ffh_remove(struct ffh *h, struct skl *sl, struct skl_node *old);

#endif
