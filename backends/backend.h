/* backend.h - the storage backend interface, version 4.
 *
 * A backend is an ordered key/value store with atomic multi-key writes. It
 * stores opaque byte strings; it knows nothing of HTTP, JSON, tables or
 * entities. All Table semantics (ETags, merge, validation, filters) live
 * above it, in store/ and protocol/, which encode keys so that plain
 * unsigned byte order (memcmp, shorter-prefix first) is the service's order.
 * The store layer (store/kv.c) is the only code that calls these methods.
 *
 * The interface is one struct of function pointers, modelled on SQLite's
 * sqlite3_vfs. A backend fills a static struct backend_ops and hands it out;
 * everything else (struct backend_store, struct backend_iter) is opaque to
 * the caller. tabled is single-threaded: no method is ever called
 * concurrently with another on the same store (but see "Deferred
 * completion": several calls may be outstanding at once). A backend may
 * run its group-commit fdatasync on a worker thread of its own (sync_v2,
 * backends/bsync.h); everything the server sees still happens on the
 * loop thread.
 *
 * Versions. A version freezes when it is declared: the layout of every
 * struct it covers never changes again, and every field appended after
 * that belongs to the next version (which bumps TABLED_BACKEND_VERSION).
 * Fields of struct backend_ops, struct backend_options and the other
 * structs passed by pointer are only ever appended; each says the version
 * it appeared in. A backend sets .version to the version it was written
 * for; the server accepts every version from 1 up to
 * TABLED_BACKEND_VERSION_MAX and reads no field newer than the vtable's
 * version, so a plug-in built against an older header keeps working: its
 * struct may end before the first field of the next version
 * (tests/unit/test_abi.c pins every field's offset per version, and loads
 * a vtable of exactly version 2's size). A field of a newer version may
 * also be NULL: the server then uses the older method. A plug-in that
 * wants to stay at an older version builds with -DTABLED_BACKEND_VERSION=N
 * (the struct layout is the same; only the default of .version changes).
 *   version 1  open, close, get, iter_open, iter_seek, iter_next,
 *              iter_close, apply, sync
 *   version 2  caps, get_v2, iter_next_v2, apply_v2 (deferred completion
 *              through struct backend_call, conditional writes through
 *              struct backend_cond, struct backend_options.host)
 *   version 3  max_key_len, get_multi_v2 (struct backend_mget), sync_v2,
 *              compact_v2 (appended to version 2 after it was declared:
 *              they are read only from a vtable of version 3)
 *   version 4  options (struct backend_option: the --backend-option rows
 *              tabled checks and lists for the backend)
 *
 * Built-in backends are registered in backends/registry.c (registry.h,
 * private to tabled's build). A plug-in is a
 * shared object exporting
 *
 *     const struct backend_ops *tabled_backend_init(void);
 *
 * Status codes: every method that can fail returns 0 (BACKEND_OK) or one of
 * the negative enum backend_status values, and writes a NUL-terminated
 * human-readable detail into err (at most errlen bytes; in version-2
 * methods: into the call's err) when err is not NULL. The layers above map
 * any failure other than BACKEND_NOTFOUND and BACKEND_CONFLICT to "500
 * InternalError" (BACKEND_FULL: the service's out-of-space answer) and log
 * the detail.
 *
 * Deferred completion (version 2). get_v2, iter_next_v2 and apply_v2 take
 * a struct backend_call. A backend either completes the call at once
 * (returns its final status, having filled the call's result fields) or
 * returns BACKEND_PENDING and later, from the event loop (a host timer or
 * fd callback, never from inside the method itself), fills the result
 * fields and calls call->done(call) exactly once. Until then the caller
 * keeps the call, the key and the write array alive and unchanged.
 * done() may re-enter the backend: it may call any method of the store,
 * start new calls and close cursors or the store itself (the server
 * resumes the waiting request inside it); after done() returns the
 * backend touches neither the call nor, when it was closed, the store.
 * There is no cancellation: an outstanding call ends through done(), or
 * is dropped by iter_close / close. Out of memory: inside its own
 * buffers a backend may abort as the server does; across this interface
 * it answers BACKEND_NOMEM. Several
 * calls on one store may be outstanding at once (one per cursor at most);
 * a backend completes applies in the order it makes their effects visible,
 * and a get or cursor step reflects every apply that completed before the
 * get or step was called. Local backends (memory, leveldb, flatfile)
 * always complete at once; a backend that talks to a server uses the
 * host's fd and timer hooks (struct backend_host) to wait without
 * blocking the loop. While a deferred backend keeps a cursor across loop
 * turns, other requests' applies complete meanwhile: such a backend must
 * give each cursor one consistent view (a snapshot as of iter_open), so
 * that a query page never shows half a batch.
 *
 * Conditional writes (version 2). Each write of apply_v2 may carry an
 * expectation about its key's current state (absent; present; present
 * with a given version), checked by the backend atomically with the
 * writes: either every expectation holds and every write is applied, or
 * nothing is applied and BACKEND_CONFLICT says which write's expectation
 * failed. Several tabled processes sharing one storage engine rely on this
 * for ETag and insert-if-absent checks, so a backend shared by several
 * processes must check inside its transaction. The version of a stored
 * value is the big-endian unsigned 64-bit number in its bytes 1..8
 * (backend_value_version(); 0 for values shorter than 9 bytes): the
 * server's entity encoding puts the entity's Timestamp ticks there, which
 * are unique per write of an entity. */
#ifndef TABLED_BACKEND_H
#define TABLED_BACKEND_H
#include <stddef.h>
#include <stdint.h>

/* The newest interface version this header describes (and the default of
   .version for a backend built against it). */
#ifndef TABLED_BACKEND_VERSION
#define TABLED_BACKEND_VERSION 4
#endif
#define TABLED_BACKEND_VERSION_MAX 4
#define TABLED_BACKEND_SYMBOL "tabled_backend_init"

enum backend_status {
    BACKEND_OK = 0,
    BACKEND_NOTFOUND = -1,  /* get(): no such key */
    BACKEND_IOERR = -2,     /* read/write/fsync failed; nothing was applied */
    BACKEND_NOMEM = -3,
    BACKEND_CORRUPT = -4,   /* stored data failed a checksum or format check */
    BACKEND_INVALID = -5,   /* bad argument (e.g. empty key, bad option) */
    BACKEND_FULL = -6,      /* out of space; nothing was applied */
    BACKEND_CONFLICT = -7,  /* v2 apply_v2: an expectation failed (call.failed
                               says which write); nothing was applied */
    BACKEND_PENDING = -8,   /* v2: the call completes later through
                               call.done (never a final status) */
    BACKEND_UNAVAILABLE = -9, /* v2: the storage server cannot be reached
                               now; nothing was attempted (retry later) */
    BACKEND_UNKNOWN = -10,  /* v2 apply_v2: the outcome is unknown (the
                               connection broke after the writes were sent) */
};

/* Durability of apply(), chosen at open time (the server's --durability). */
enum backend_durability {
    BACKEND_DURABLE_NONE = 0,   /* apply() need not reach stable storage */
    BACKEND_DURABLE_BATCH = 1,  /* apply() may buffer; sync() makes every
                                   earlier apply() durable (group commit) */
    BACKEND_DURABLE_SYNC = 2,   /* apply() is durable when it returns */
};

/* Severity of a message given to backend_options.log. */
enum backend_log_level {
    BACKEND_LOG_ERROR = 0,
    BACKEND_LOG_WARN = 1,
    BACKEND_LOG_INFO = 2,
};

enum backend_write_op {
    BACKEND_PUT = 1,
    BACKEND_DELETE = 2,         /* deleting an absent key is not an error */
};

/* One write of an apply() call. Keys are at most 64 KiB, values at most
 * 8 MiB; the backend copies what it keeps. The layout never changes (it is
 * passed as an array); version-2 expectations travel beside it. */
struct backend_write {
    enum backend_write_op op;
    const void *key;
    size_t key_len;
    const void *val;            /* ignored for BACKEND_DELETE */
    size_t val_len;
};

/* Version 2: what apply_v2 expects of a write's key before the writes. */
enum backend_expect {
    BACKEND_EXPECT_ANY = 0,     /* no expectation */
    BACKEND_EXPECT_ABSENT = 1,  /* the key does not exist */
    BACKEND_EXPECT_PRESENT = 2, /* the key exists */
    BACKEND_EXPECT_VERSION = 3, /* the key exists and its value's version
                                   (backend_value_version) equals .version */
};

/* Version 2: the expectation of one write (same index as the write).
   Every expectation of a call refers to the store as it was before the
   call, even when earlier writes of the same array touch the key. */
struct backend_cond {
    enum backend_expect expect;
    uint64_t version;           /* for BACKEND_EXPECT_VERSION */
};

/* The version of a stored value: its bytes 1..8 read as a big-endian
   unsigned number, or 0 when the value is shorter than 9 bytes. */
static inline uint64_t backend_value_version(const void *val, size_t len)
{
    const unsigned char *p = (const unsigned char *)val;
    uint64_t v = 0;
    if (len < 9)
        return 0;
    for (int i = 1; i <= 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Version 2: one call of get_v2, iter_next_v2 or apply_v2 (see "Deferred
 * completion" above). The caller fills done and arg (and want_counts) and
 * owns the struct; the backend fills the rest before it returns a final
 * status or before it calls done. */
struct backend_call {
    /* In: called once, from the event loop, when a call that returned
       BACKEND_PENDING completes. */
    void (*done)(struct backend_call *call);
    void *arg;                  /* in: for the caller; the backend ignores it */
    int want_counts;            /* in, apply_v2: fill created/removed */

    /* Out. status: the final status (what the method would have
       returned). */
    int status;
    /* get_v2 (val) and iter_next_v2 (key and val), on BACKEND_OK / 1:
       borrowed pointers, valid until the next call on the same store or
       cursor, or until done() returns, whichever comes first. A
       zero-length value still has a non-NULL pointer. */
    const void *key;
    size_t key_len;
    const void *val;
    size_t val_len;
    /* apply_v2 on BACKEND_CONFLICT: index of the first write whose
       expectation failed. */
    size_t failed;
    /* apply_v2 with want_counts, on BACKEND_OK: puts whose key did not
       exist before, deletes whose key did exist. Each write sees the
       earlier writes of the same array (put k, delete k, put k of an
       absent key: created 2, removed 1), so created - removed is the
       change in the number of keys. (Expectations, in contrast, all see
       the store before the call.) */
    size_t created, removed;
    /* Detail of a failure status, NUL-terminated. */
    char err[256];
};

/* Version 3: one key of get_multi_v2 and its answer (passed as an array,
   one per key; the layout never changes). */
struct backend_mget {
    const void *key;            /* in: 1..max_key_len bytes (kv checks) */
    size_t key_len;             /* in */
    int status;                 /* out: BACKEND_OK or BACKEND_NOTFOUND */
    const void *val;            /* out, on BACKEND_OK: borrowed as
                                   call.val of get_v2 is (valid until the
                                   next call on the store, or until done()
                                   returns); a zero-length value still has
                                   a non-NULL pointer */
    size_t val_len;             /* out, on BACKEND_OK */
};

/* Version 2: readiness bits for backend_host.fd_watch. */
#define BACKEND_FD_READ 1u
#define BACKEND_FD_WRITE 2u

/* Version 2: event-loop services the server lends a backend (through
 * backend_options.host) so that it can wait for a network peer without
 * blocking. Every callback runs from the event loop. */
struct backend_host {
    void *arg;                  /* pass as the first argument of each hook */
    /* Calls fn(fn_arg) once after ms milliseconds (0: at the next loop
       turn). Returns a handle for timer_cancel, or NULL (out of memory). A
       timer that has fired is freed by the host; do not cancel it. */
    void *(*timer_add)(void *arg, unsigned ms, void (*fn)(void *fn_arg), void *fn_arg);
    void (*timer_cancel)(void *arg, void *timer);
    /* Calls fn(fn_arg, ready) whenever fd is ready for one of the events
       (BACKEND_FD_READ, BACKEND_FD_WRITE) until fd_unwatch. Returns a
       handle, or NULL (out of memory). */
    void *(*fd_watch)(void *arg, int fd, unsigned events,
                      void (*fn)(void *fn_arg, unsigned ready), void *fn_arg);
    /* Changes the events a watch waits for (0: none for now). */
    void (*fd_modify)(void *arg, void *watch, unsigned events);
    void (*fd_unwatch)(void *arg, void *watch);
};

struct backend_options {
    const char *data_dir;       /* directory for durable files; the backend
                                   creates it if missing. Unused by memory. */
    enum backend_durability durability;
    /* Backend-specific settings as "name=value" strings, NULL-terminated.
       May be NULL. tabled fills it from --backend-option. The built-in
       backends declare their names as rows (backends/bopts.h) and refuse
       an unknown name or a value out of range; a plug-in should refuse
       what it does not know too (BACKEND_INVALID with the name). */
    const char *const *params;
    /* Where a backend reports events that deserve a log line (recovery
       truncated a torn tail, compaction ran, a sync failed). NULL: the
       backend writes them to stderr. msg has no trailing newline. */
    void (*log)(enum backend_log_level level, const char *msg);

    /* Version 2: the event-loop hooks, or NULL when there is no loop (the
       offline tools): a backend then completes every call at once or
       drives its own waiting. Read it only when the vtable's version is 2
       or more (a version-1 caller does not pass it). */
    const struct backend_host *host;
};

struct backend_store;           /* one open database, opaque */
struct backend_iter;            /* one ordered cursor, opaque */

/* Version 4: one option a backend takes (--backend-option NAME=VALUE, or
   backend-option = NAME=VALUE in a config file). tabled checks every
   option given against the rows before open() (an unknown name, or a
   value of the wrong kind or out of range, is refused with its name, and
   tabled exits 2) and lists the rows in `tabled --backend PATH --help`.
   open() still receives the NAME=VALUE strings in options->params and
   parses them itself; the rows only describe them. */
enum backend_option_kind {
    BACKEND_OPTION_STRING = 0, /* any text (at most 255 bytes) */
    BACKEND_OPTION_INT = 1,    /* a decimal integer in [min, max] */
    BACKEND_OPTION_SIZE = 2,   /* a byte count > 0, K/M/G suffix allowed;
                                  in [min, max] when max > 0 */
    BACKEND_OPTION_BOOL = 3,   /* on|off (true/false, yes/no, 1/0) */
};
struct backend_option {
    const char *name;          /* "cache-kb"; NULL ends the rows */
    enum backend_option_kind kind;
    long long min, max;        /* INT and SIZE: the accepted range */
    const char *def;           /* the default, as text (for the list), or NULL */
    const char *help;          /* one line: what it does */
};

struct backend_ops {
    /* The interface version this vtable was written for, 1 to
       TABLED_BACKEND_VERSION_MAX. First so that it can be checked before
       anything else of a plug-in is trusted. (version 1) */
    int version;

    /* Short name used in logs and for --backend ("memory", "leveldb"). */
    const char *name;

    /* Opens (creating if needed) a store. On success *out is set and the
       caller owns it until close(). Crash recovery (torn tails, replay)
       happens here. Returns BACKEND_OK, BACKEND_INVALID (bad option),
       BACKEND_IOERR, BACKEND_CORRUPT, BACKEND_NOMEM or BACKEND_FULL.
       (version 1) */
    int (*open)(const struct backend_options *opt, struct backend_store **out,
                char *err, size_t errlen);

    /* Makes every applied write durable (as sync() does), releases all
       resources. Never fails from the caller's point of view. Calls may
       still be outstanding (a deferring backend's; the conformance suite
       closes a store so): they are dropped, and their done() is never
       called once close has returned. close may be called from inside a
       done() callback. (version 1) */
    void (*close)(struct backend_store *st);

    /* Point lookup. On BACKEND_OK *val points to a malloc()ed copy of the
       value (the caller frees it with free()) and *val_len is its length;
       a zero-length value still yields a non-NULL pointer. Returns
       BACKEND_NOTFOUND when the key is absent; that is an answer, not a
       failure (every insert asks it), so err need not be written then.
       Other failures: BACKEND_IOERR, BACKEND_CORRUPT, BACKEND_NOMEM.
       (version 1; may be NULL in a version-2 vtable with get_v2) */
    int (*get)(struct backend_store *st, const void *key, size_t key_len,
               void **val, size_t *val_len, char *err, size_t errlen);

    /* Opens a cursor over keys k with start <= k < end in ascending byte
       order. start_len == 0 means from the first key; end == NULL means to
       the last key.

       Cursors and writes. A cursor may stay open while apply() changes the
       store (tabled itself finishes a query page within one event-loop
       turn, but a backend must not break when a caller does not). Every
       backend guarantees, for a cursor open across writes:
         - it never crashes and never returns freed memory;
         - it returns keys in strictly ascending order, inside its bounds,
           each at most once (until iter_seek repositions it);
         - every key that is in range and unchanged from iter_open (or the
           last iter_seek) until the cursor passes it is returned;
         - every value returned is a value its key held at some moment
           between iter_open/iter_seek and that iter_next (never a torn or
           mixed value);
         - keys inserted, overwritten or deleted meanwhile may or may not be
           seen (LevelDB gives a snapshot as of iter_open; memory and
           flatfile show the live store).
       The cursor must be closed before close() of its store. iter_open does
       no waiting (a networked backend sends its query at the first step).
       Returns BACKEND_OK, or BACKEND_NOMEM / BACKEND_IOERR. (version 1) */
    int (*iter_open)(struct backend_store *st, const void *start, size_t start_len,
                     const void *end, size_t end_len, struct backend_iter **out,
                     char *err, size_t errlen);

    /* Repositions the cursor at the first key >= key (still bounded by the
       end given at iter_open; a key below the start bound means the start);
       the next step returns that entry. Does no waiting. Returns
       BACKEND_OK, or BACKEND_NOMEM / BACKEND_IOERR, after which the cursor
       only reports that error. (version 1) */
    int (*iter_seek)(struct backend_iter *it, const void *key, size_t key_len);

    /* Advances to the next entry. Returns 1 with *key and *val set, 0 at
       the end, or a negative status on error. The first call returns the
       first entry. The pointers are valid until the next iter_* call on
       this cursor or the next apply() or close() of its store, whichever
       comes first. Errors: BACKEND_IOERR, BACKEND_CORRUPT, BACKEND_NOMEM.
       (version 1; may be NULL in a version-2 vtable with iter_next_v2) */
    int (*iter_next)(struct backend_iter *it, const void **key, size_t *key_len,
                     const void **val, size_t *val_len);

    /* Frees the cursor. A step of it may still be outstanding: it is
       dropped, and its done() is never called. (version 1) */
    void (*iter_close)(struct backend_iter *it);

    /* Applies n puts and deletes atomically: after a crash either all of
       them or none are visible. Later writes in the array win over earlier
       ones to the same key. With BACKEND_DURABLE_SYNC the writes are durable
       when apply() returns BACKEND_OK. On failure nothing was applied and
       the store stays usable (a disk-full error can be retried later);
       BACKEND_FULL means out of space. Only when the failure is in making
       the writes durable (a failed fsync in BACKEND_DURABLE_SYNC) may they
       still appear after a restart; see sync().
       With n == 0 nothing is written: a store that refuses writes until it
       recovers from a failure may answer that failure (and may try to
       recover in this call); the server calls it so, about once a second,
       to find out when writes work again. Otherwise it returns BACKEND_OK.
       Errors: BACKEND_IOERR, BACKEND_FULL, BACKEND_NOMEM, BACKEND_INVALID.
       (version 1; may be NULL in a version-2 vtable with apply_v2) */
    int (*apply)(struct backend_store *st, const struct backend_write *w, size_t n,
                 char *err, size_t errlen);

    /* Group commit: makes every earlier apply() durable (of a deferring
       backend: every apply_v2 that has completed). Called by the
       server once per event-loop turn in BACKEND_DURABLE_BATCH mode, before
       the replies of that turn's writes are sent (unless the vtable has
       sync_v2, which the server then uses instead; the offline tools and
       close() still sync this way). A no-op for stores
       without durable storage. On failure the writes since the last
       successful sync() may or may not survive a crash (the server drops
       the held replies and closes those connections), and because a failed
       fsync cannot be retried safely the backend may refuse every later
       write until it is reopened. Returns BACKEND_OK or BACKEND_IOERR.
       (version 1) */
    int (*sync)(struct backend_store *st, char *err, size_t errlen);

    /* ---- version 2 ---- */

    /* BACKEND_CAP_* bits. (version 2) */
    unsigned caps;

    /* Point lookup into a borrowed value (call.val, call.val_len; see
       struct backend_call). Returns BACKEND_OK, BACKEND_NOTFOUND, a
       failure, or BACKEND_PENDING. (version 2) */
    int (*get_v2)(struct backend_store *st, const void *key, size_t key_len,
                  struct backend_call *call);

    /* iter_next with borrowed call.key/call.val: returns 1 (an entry), 0
       (the end), a failure, or BACKEND_PENDING (call.status then carries
       1, 0 or the failure). (version 2) */
    int (*iter_next_v2)(struct backend_iter *it, struct backend_call *call);

    /* apply with expectations: cond is NULL (no expectations) or n
       entries, one per write. Returns BACKEND_OK, BACKEND_CONFLICT
       (call.failed), a failure as apply() does, BACKEND_UNAVAILABLE
       (nothing attempted), BACKEND_UNKNOWN (the writes may or may not have
       been applied), or BACKEND_PENDING. n == 0 is the probe described at
       apply(). (version 2) */
    int (*apply_v2)(struct backend_store *st, const struct backend_write *w,
                    const struct backend_cond *cond, size_t n, struct backend_call *call);

    /* ---- version 3 ---- */

    /* The longest key this backend stores, in bytes; 0: the interface's
       64 KiB. A backend whose engine limits keys says so here; the server
       refuses longer keys with BACKEND_INVALID before the backend sees
       them. The service's entity keys reach 6,154 bytes (two keys of 1,024
       three-byte characters), so a lower limit refuses legal entities: an
       engine that limits index entries (PostgreSQL's btree: 2,704 bytes)
       is better served by splitting keys, as backends/postgres.c does.
       (version 3) */
    size_t max_key_len;

    /* Several point lookups in one call, for a backend that answers them
       in one round trip (postgres: one statement): keys[i].status, .val
       and .val_len are filled for every i (the same key may appear twice;
       each gets its answer). All n lookups see one state of the store (as
       of some moment during the call). Returns BACKEND_OK (every key
       answered, found or not), a failure (the keys' answers are then
       undefined), or BACKEND_PENDING. The caller keeps keys alive and
       unchanged until the call completes. NULL: the server asks get_v2
       (or get) once per key instead; memory, leveldb and flatfile leave
       it NULL (a local get is as cheap). (version 3) */
    int (*get_multi_v2)(struct backend_store *st, struct backend_mget *keys, size_t n,
                        struct backend_call *call);

    /* Group commit off the event loop (BACKEND_DURABLE_BATCH): starts
       making every apply that completed before this call durable, as
       sync() does, and returns at once. BACKEND_OK or a failure when the
       answer is known now (nothing to sync; a store that refuses writes);
       BACKEND_PENDING when the sync runs off the loop (a worker thread,
       backends/bsync.h): call->done(call) follows from the event loop
       with call->status (BACKEND_OK, or a failure with call->err, meaning
       what a failed sync() means). Meanwhile get, cursors and apply are
       called as usual; writes applied meanwhile are not covered by this
       sync (the next one covers them), so the server answers them only
       after that one. At most one sync is outstanding per store; close()
       waits for it and drops its done. BACKEND_INVALID, with nothing
       done: this store does not sync off the loop (opened without a host,
       or configured so; or not in BACKEND_DURABLE_BATCH mode): the server
       then calls sync() from the loop instead, as when sync_v2 is NULL.
       (version 3) */
    int (*sync_v2)(struct backend_store *st, struct backend_call *call);

    /* A hint: no live key is left in [lo, hi) (the caller deleted every
       one of them; lo_len == 0: from the first key, hi == NULL: to the
       last key; bounds as iter_open's), so the space their
       deleted data still holds may be reclaimed, on disk and in memory.
       An engine that keeps deleted data until a compaction reaches it
       (LevelDB: deletion markers in the memtable, the old values in table
       files, which stay mapped) compacts that range now. Nothing visible
       changes: keys written into the range meanwhile stay, as every other
       key does. Returns BACKEND_OK (done at once, or nothing to do), a
       failure (nothing was reclaimed; the store works as before), or
       BACKEND_PENDING: the work runs off the loop (a worker thread,
       backends/bsync.h) and call->done(call) follows from the event loop
       with call->status (BACKEND_OK or a failure with call->err).
       The backend copies lo and hi. Meanwhile every other method is
       called as usual. At most one is outstanding per store; close()
       waits for it and drops its done.
       Heap the backend frees this way stays the process's until the
       server trims it (core/heap.h), which it does after the call
       completes. NULL: the backend reclaims deleted data by
       itself (memory frees it at once, flatfile compacts its log) or
       leaves it to its engine (postgres: autovacuum). (version 3) */
    int (*compact_v2)(struct backend_store *st, const void *lo, size_t lo_len,
                      const void *hi, size_t hi_len, struct backend_call *call);

    /* ---- version 4 ---- */

    /* The backend's options, ending with a row whose name is NULL (see
       struct backend_option), or NULL: tabled then passes every option to
       open() unchecked and the backend refuses what it does not know
       (the built-in backends declare theirs inside tabled). (version 4) */
    const struct backend_option *options;
};

/* backend_ops.caps bits (version 2). */
#define BACKEND_CAP_DEFERS 1u   /* may return BACKEND_PENDING */
#define BACKEND_CAP_SHARED 2u   /* several processes may open one store
                                   (expectations are then the only
                                   cross-process guarantee) */

#endif
