/* store.h - the store layer: entities and writes on top of kv.h.
 *
 * protocol/ decides what a request means; this layer carries it out on
 * storage and keeps the rules that hold for every write:
 *   - Timestamps: one per commit, strictly increasing in this process
 *     (entities written together share it, doc/protocol.md, Timestamp and ETag); the ETag is made of
 *     it, and it is the stored value's version (backend.h). A commit's
 *     Timestamp is also above the Timestamp of every entity it replaces
 *     (max(now, last + 1, current + 1)), so an entity's versions increase
 *     even when the clock stepped back or another process wrote it. Only
 *     a commit that was applied moves "last" past such a version: an
 *     If-Match is the client's word until the backend confirms it, so a
 *     refused write (412, 404, a failed $batch) leaves later Timestamps
 *     as they were.
 *   - Several front ends on one store (kv_shared(): BACKEND_CAP_SHARED).
 *     Every write of an existing entity then expects the version it read
 *     (BACKEND_EXPECT_VERSION; a blind Insert Or Replace and an Update
 *     with If-Match "*" too) and every write of an absent one expects it
 *     absent (a blind upsert too). Since the new Timestamp exceeds the
 *     version expected, and the backend checks the expectation atomically
 *     with the write, each entity's Timestamps (its ETags) are strictly
 *     increasing and unique across every front end: of two front ends
 *     writing the same entity in the same 100 ns tick from the same
 *     version, one write conflicts and is prepared again from a fresh read,
 *     so it gets a Timestamp above the winner's. No front-end id is needed
 *     for that; Timestamps of different entities may coincide across
 *     front ends, as they may within one commit (doc/protocol.md, Timestamp and ETag). A delete and
 *     re-create starts again from the clock: with clocks skewed between
 *     hosts the new entity's first Timestamp may be below the deleted
 *     one's (its ETag is still new: the entity did not exist in between).
 *     Deletes keep their weaker expectations (present, or If-Match's
 *     version): a delete's outcome does not depend on the version. The
 *     local backends (one process) keep the cheaper expectations.
 *   - ETag preconditions: store_judge() turns If-Match and the entity's
 *     current state into an answer (go on, 404, 409, 412) and into the
 *     expectation the backend checks atomically with the write, so that a
 *     write that raced another (a deferred backend, or several front ends
 *     on one engine) is refused (BACKEND_CONFLICT) instead of lost; the
 *     caller then prepares it again.
 *   - Entity counts for metrics: the backend counts new and removed keys
 *     inside the apply that makes them (want_counts), never a hidden get.
 *   - Failures: a write or sync that fails for lack of space or an I/O
 *     error puts the store in the failed state (logged once, on /healthz,
 *     metric tabled_store_writable) until a write works again; store_probe
 *     tries an empty apply about once a second meanwhile. A database
 *     server that cannot be reached (BACKEND_UNAVAILABLE, or UNKNOWN from
 *     a write) is the failed state "unreachable" (2): on a shared store
 *     store_probe runs about once a second even while all is well (an
 *     empty apply and one get), so /healthz says 503 while the database is
 *     away, with no requests needed to notice, and 200 once it answers.
 *   - Group commit: writes mark the store dirty; store_sync makes them
 *     durable (the server calls it once per loop turn, holding that turn's
 *     replies until it returns).
 *   - Pipelined group commit (batch mode, a backend that syncs off the
 *     loop: kv_syncs_off_loop). The replies are held here instead, through
 *     store_hold: a reply waits for the sync that covers every write
 *     applied before the reply was made (the request's own writes, and
 *     those of others it may have seen). One sync is in flight at a time,
 *     run by the backend's worker thread; the loop keeps applying writes
 *     meanwhile, and those are covered by the next sync, begun as soon as
 *     the one in flight ends. Visibility is as before: reads see applied
 *     writes at once, but no reply that could show an unsynced write is
 *     sent before that write is durable. A failed sync fails the replies
 *     it held (and puts the store in the failed state). */
#ifndef TABLED_STORE_H
#define TABLED_STORE_H
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/account.h"
#include "core/buf.h"
#include "store/entity.h"

struct store;
struct metrics;
struct kv;

/* What a store call answers: 0 or a negative status. The values are the
 * backends' (backends/backend.h), so a backend's answer passes through
 * unchanged; the layers above see only these names. */
enum store_status {
    STORE_OK = 0,
    STORE_NOTFOUND = -1,       /* no such key, table or document */
    STORE_IOERR = -2,          /* a read or write failed; nothing was applied */
    STORE_NOMEM = -3,
    STORE_CORRUPT = -4,        /* stored data failed a format check */
    STORE_INVALID = -5,        /* a bad argument */
    STORE_FULL = -6,           /* out of space; nothing was applied */
    STORE_CONFLICT = -7,       /* an expectation failed; nothing was applied */
    STORE_UNAVAILABLE = -9,    /* the database cannot be reached now (retry) */
    STORE_UNKNOWN = -10,       /* the outcome of a write is unknown */
};

/* What a write expects of its key, checked atomically with it. */
enum store_expect_kind {
    STORE_EXPECT_ANY = 0,      /* nothing */
    STORE_EXPECT_ABSENT = 1,   /* the key does not exist */
    STORE_EXPECT_PRESENT = 2,  /* the key exists */
    STORE_EXPECT_VERSION = 3,  /* the key exists with this version (the
                                  stored Timestamp; a table row: its id) */
};
struct store_expect {
    enum store_expect_kind kind;
    uint64_t version;
};

/* A store on kv (not owned: the caller closes it after store_free). */
struct store *store_new(struct kv *kv, enum durability durability);
void store_free(struct store *s);
/* The store's kv, for store/'s own modules (store/catalog.c) and the
   tools; the request pipeline never uses it. */
struct kv *store_kv(struct store *s);
/* 1 when the store's calls complete later (kv_defers): a request then
   runs on a coroutine of its own. */
int store_defers(const struct store *s);

/* Metrics to keep (NULL: none). With m, every account's entities are
   counted once now (a scan) and kept current from then on. 0, or a
   backend status with a message. */
int store_set_metrics(struct store *s, struct metrics *m, const struct account_cfg *accounts,
                      size_t naccounts, char *err,
                      size_t errlen);
/* Called when the store fails or recovers (the server's background step
   then probes it, and resumes purges). */
void store_set_wake(struct store *s, void (*wake)(void *arg), void *arg);

/* A store opened read-only over replicas of the primary's database (the
   secondary endpoint's, server/main.c): STORE_OK with *unix_s, the time
   (Unix seconds, rounded down) before which every write of the primary
   is readable through s; STORE_UNAVAILABLE when no replica can tell now
   (none reachable: the secondary is unavailable); STORE_INVALID when s
   reads no replica. Answers from what the backend last found: never
   waits. */
int store_replica_sync_time(struct store *s, int64_t *unix_s);

/* 1 when other processes share the store (kv_shared). */
int store_shared(const struct store *s);

/* The Timestamp of the next commit: now in ticks, above every earlier one
   of this process and above after (the largest Timestamp the commit
   replaces; 0: none). Only the clock's part is kept here: after may come
   from the request (an If-Match the backend has yet to confirm), so it
   moves this process's clock only through store_timestamp_applied, once
   the commit succeeded. A refused write changes no later Timestamp. */
int64_t store_next_timestamp(struct store *s, int64_t after);
/* The commit of Timestamp ts was applied: later commits of this process
   go above it (ts exceeds a version the backend confirmed it replaced). */
void store_timestamp_applied(struct store *s, int64_t ts);

/* Reads the entity at key (an entity key of store/keys.h): 1 found (e
   decoded, its strings in a), 0 absent, or a failure: a negative backend
   status (logged; BACKEND_CORRUPT for a value that does not decode). */
int store_entity_get(struct store *s, struct arena *a, const char *key, size_t key_len,
                     struct entity *e);

/* Reads the entities at keys[0..n) (entity keys, lens[i] bytes each) in
   one backend call where the backend can (kv_get_multi: one round trip
   on postgres): found[i] is 1 with e[i] decoded (its strings in a) or 0
   when absent. 0, or a negative backend status (logged; BACKEND_CORRUPT
   for a value that does not decode). */
int store_entity_get_many(struct store *s, struct arena *a, const char *const *keys,
                          const size_t *lens, size_t n, struct entity *e, int *found);

/* If-Match of a write, as parsed by protocol/. */
struct store_precond {
    int present;               /* the header was sent (or implied) */
    int any;                   /* "*" */
    int never;                 /* a value that can never match */
    int64_t ticks;             /* the ETag's Timestamp otherwise */
};

/* What a write does to its entity. */
enum store_intent {
    STORE_INSERT,              /* must not exist */
    STORE_REPLACE,             /* Update; without If-Match: insert or replace */
    STORE_MERGE,               /* Merge; without If-Match: insert or merge */
    STORE_UPSERT,              /* Insert Or Replace */
    STORE_UPSERT_MERGE,        /* Insert Or Merge */
    STORE_DELETE,
};

/* The answer of store_judge. */
enum store_verdict {
    STORE_GO = 0,              /* write it (with the expectation given) */
    STORE_EXISTS,              /* an insert of an existing entity: 409 */
    STORE_NOT_FOUND,           /* a condition on an absent entity: 404 */
    STORE_MISMATCH,            /* If-Match names another version: 412 */
};

/* Judges a write of intent under pc against the entity's current state
   (found, and its Timestamp cur_ticks), and sets the expectation that the
   backend checks with the write (cond); shared: the store is shared by
   several front ends (store_shared; the stricter expectations above). */
enum store_verdict store_judge(enum store_intent intent, const struct store_precond *pc,
                               int found, int64_t cur_ticks, int shared,
                               struct store_expect *cond);

/* A write judged without reading (an insert; an update or delete under
   If-Match): its expectation alone (absent; present; the ETag's version). */
void store_judge_blind(enum store_intent intent, const struct store_precond *pc,
                       struct store_expect *cond);

/* 1 when the store may change between a read and a later write (its calls
   complete later, or other processes share it): expectations judged on a
   read must then go with the write. A local store that completes at once
   cannot change in between (one thread, no wait). */
int store_checks_needed(const struct store *s);

/* One entity write of a commit (store_commit). */
struct store_put {
    const char *key;           /* the entity key (store/keys.h) */
    size_t key_len;
    struct entity *e;          /* the entity to store; NULL: a delete. Its
                                  Timestamp is set by the commit. */
    struct store_expect expect;/* store_judge's or store_judge_blind's */
    int blind;                 /* judged without a read: the expectation
                                  goes with the write on every store */
    int64_t cur_ticks;         /* Timestamp of the version it replaces
                                  (0: none, or a delete) */
};

/* Commits w[0..n) atomically: one Timestamp for all (above the clock and
   above every version replaced: the rules at the top), the entities
   encoded (into vbuf, the caller's scratch buffer, kept for its capacity)
   and applied with their expectations (a judgement made on a read is
   sent only where the store may change in between: store_checks_needed).
   account >= 0 counts the writes for its entity gauge. Returns 0 with
   *ts, STORE_CONFLICT (*failed: the write refused, when failed is not
   NULL; the clock did not move) or a failure status (logged). */
int store_commit(struct store *s, int account, struct store_put *w, size_t n,
                 struct buf *vbuf, int64_t *ts, size_t *failed);

/* A stored value put as it is (an import's entities, already encoded). */
struct store_raw {
    const void *key, *val;
    size_t key_len, val_len;
};
/* Puts w[0..n) in one atomic apply, without expectations; account >= 0
   counts them for its gauge. 0 or a failure status (logged). */
int store_put_raw(struct store *s, int account, const struct store_raw *w, size_t n);

/* The stored service properties document of account (its bytes copied
   into a): STORE_OK with *doc, *len; STORE_NOTFOUND when none is stored;
   or a failure status (logged). */
int store_props_get(struct store *s, struct arena *a, const char *account, const char **doc,
                    size_t *len);
/* Stores the service properties document of account. 0 or a failure
   status (logged). */
int store_props_put(struct store *s, const char *account, const void *doc, size_t len);

/* A scan over the stored values of keys in [start, end) in key order
   (entities of a table: store/keys.h builds the bounds). */
struct store_scan;
/* Opens a scan. 0 with *out, or a failure status (err). */
int store_scan_open(struct store *s, const void *start, size_t start_len, const void *end,
                    size_t end_len, struct store_scan **out, char *err, size_t errlen);
/* Moves to the first key >= key (inside the bounds). 0 or a failure
   status (store_scan_error says why). */
int store_scan_seek(struct store_scan *sc, const void *key, size_t key_len);
/* The next key and value (borrowed until the next call): 1, 0 at the end,
   or a failure status (store_scan_error says why). */
int store_scan_next(struct store_scan *sc, const void **key, size_t *key_len,
                    const void **val, size_t *val_len);
const char *store_scan_error(const struct store_scan *sc);
void store_scan_close(struct store_scan *sc);

/* Group commit: 1 when writes were applied since the last store_sync
   (always 0 when pipelined: store_hold holds the replies then). */
int store_dirty(const struct store *s);
/* Makes them durable. 0 or a backend status (logged). */
int store_sync(struct store *s);

/* 1 when the group commit is pipelined (see the top): every reply goes
   through store_hold. */
int store_pipelined(const struct store *s);

/* A reply waiting for a sync (store_hold). The caller owns it and fills
   fn; the store links it until it calls fn(w, status) from the event loop
   once the sync covering it is over: status BACKEND_OK (send the reply),
   or the sync's failure (answer an error instead). */
struct store_waiter {
    void (*fn)(struct store_waiter *w, int status);
    uint64_t gen;              /* the sync it waits for (the store's) */
    int status;
    struct store_waiter *next;
};
/* Holds a reply made now until every write applied so far is durable:
   0: it is already, or the backend turned out to sync on the loop (send
   now: store_dirty then says whether the server must hold it); 1: w
   waits (fn follows; never from inside this call); or a failure status (a sync that failed at once: answer an
   error now). Only when store_pipelined. */
int store_hold(struct store *s, struct store_waiter *w);
/* 1 when every write applied so far is covered by a sync that is over
   (store_hold would answer 0). */
int store_synced(const struct store *s);
/* 1 while a sync is in flight or a reply waits (shutdown waits for it). */
int store_holding(const struct store *s);
/* Forgets every waiting reply (at shutdown, before they are freed). */
void store_drop_waiters(struct store *s);

/* 0 while all is well; 1 while writes fail (read-only), 2 while the
   database cannot be reached. */
int store_failed(const struct store *s);

/* How many syncs have failed so far. A backend may drop the writes a
   failed sync covered (flatfile rolls them back), so what the server
   keeps beside the store (its table cache, its queue of purges) is read
   again from the store when this changes. */
uint64_t store_sync_failures(const struct store *s);
/* While failed, and always on a shared store: tries an empty apply (and
   on a shared store a get) when the probe is due. Returns 1 when the
   backend answered it (the caller may then confirm with a real write), 0
   when still failing (a shared store that fails it becomes unreachable),
   and sets *wait_ms to the time until the next probe. */
int store_probe(struct store *s, int *wait_ms);
/* A write outside store_apply (a purge step) succeeded or failed. */
void store_note(struct store *s, int rc, const char *err);

#endif
