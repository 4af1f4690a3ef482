/* backend.h - the storage backend interface.
 *
 * A backend is an ordered key/value store with atomic multi-key writes. It
 * stores opaque byte strings; it knows nothing of HTTP, JSON, tables or
 * entities. All Table semantics (ETags, merge, validation, filters) live in
 * protocol/, which encodes its keys so that plain unsigned byte order
 * (memcmp, shorter-prefix first) is the service's order.
 *
 * The interface is one struct of function pointers, modelled on SQLite's
 * sqlite3_vfs. A backend fills a static struct backend_ops and hands it out;
 * everything else (struct backend_store, struct backend_iter) is opaque to
 * the caller. tabled is single-threaded: no method is ever called
 * concurrently with another on the same store.
 *
 * Built-in backends are registered in backends/registry.c. A plug-in is a
 * shared object exporting
 *
 *     const struct backend_ops *tabled_backend_init(void);
 *
 * which returns a vtable whose version field must equal
 * TABLED_BACKEND_VERSION (checked at load time).
 *
 * Status codes: every method that can fail returns 0 (BACKEND_OK) or one of
 * the negative enum backend_status values, and writes a NUL-terminated
 * human-readable detail into err (at most errlen bytes) when err is not
 * NULL. The protocol layer maps any failure other than BACKEND_NOTFOUND to
 * "500 InternalError" and logs the detail.
 */
#ifndef TABLED_BACKEND_H
#define TABLED_BACKEND_H
#include <stddef.h>

#define TABLED_BACKEND_VERSION 1
#define TABLED_BACKEND_SYMBOL "tabled_backend_init"

enum backend_status {
    BACKEND_OK = 0,
    BACKEND_NOTFOUND = -1,  /* get(): no such key */
    BACKEND_IOERR = -2,     /* read/write/fsync failed; nothing was applied */
    BACKEND_NOMEM = -3,
    BACKEND_CORRUPT = -4,   /* stored data failed a checksum or format check */
    BACKEND_INVALID = -5,   /* bad argument (e.g. empty key, bad option) */
    BACKEND_FULL = -6,      /* out of space; nothing was applied */
};

/* Durability of apply(), chosen at open time (see DESIGN.md). */
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
 * 8 MiB; the backend copies what it keeps. */
struct backend_write {
    enum backend_write_op op;
    const void *key;
    size_t key_len;
    const void *val;            /* ignored for BACKEND_DELETE */
    size_t val_len;
};

struct backend_options {
    const char *data_dir;       /* directory for durable files; the backend
                                   creates it if missing. Unused by memory. */
    enum backend_durability durability;
    /* Backend-specific settings as "name=value" strings, NULL-terminated;
       unknown names are ignored. May be NULL. tabled fills it from
       --backend-option (see README for the names each backend knows). */
    const char *const *params;
    /* Where a backend reports events that deserve a log line (recovery
       truncated a torn tail, compaction ran, a sync failed). NULL: the
       backend writes them to stderr. msg has no trailing newline. */
    void (*log)(enum backend_log_level level, const char *msg);
};

struct backend_store;           /* one open database, opaque */
struct backend_iter;            /* one ordered cursor, opaque */

struct backend_ops {
    /* Must be TABLED_BACKEND_VERSION. First so that it can be checked before
       anything else of a plug-in is trusted. */
    int version;

    /* Short name used in logs and for --backend ("memory", "leveldb"). */
    const char *name;

    /* Opens (creating if needed) a store. On success *out is set and the
       caller owns it until close(). Crash recovery (torn tails, replay)
       happens here. */
    int (*open)(const struct backend_options *opt, struct backend_store **out,
                char *err, size_t errlen);

    /* Makes every applied write durable (as sync() does), releases all
       resources. Never fails from the caller's point of view. */
    void (*close)(struct backend_store *st);

    /* Point lookup. On BACKEND_OK *val points to a malloc()ed copy of the
       value (the caller frees it with free()) and *val_len is its length;
       a zero-length value still yields a non-NULL pointer. Returns
       BACKEND_NOTFOUND when the key is absent; that is an answer, not a
       failure (every insert asks it), so err need not be written then. */
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
       The cursor must be closed before close() of its store. */
    int (*iter_open)(struct backend_store *st, const void *start, size_t start_len,
                     const void *end, size_t end_len, struct backend_iter **out,
                     char *err, size_t errlen);

    /* Repositions the cursor at the first key >= key (still bounded by the
       end given at iter_open). */
    int (*iter_seek)(struct backend_iter *it, const void *key, size_t key_len);

    /* Advances to the next entry. Returns 1 with *key and *val set, 0 at
       the end, or a negative status on error. The first call returns the
       first entry. The pointers are valid until the next iter_* call on
       this cursor or the next apply() or close() of its store, whichever
       comes first. */
    int (*iter_next)(struct backend_iter *it, const void **key, size_t *key_len,
                     const void **val, size_t *val_len);

    void (*iter_close)(struct backend_iter *it);

    /* Applies n puts and deletes atomically: after a crash either all of
       them or none are visible. Later writes in the array win over earlier
       ones to the same key. With BACKEND_DURABLE_SYNC the writes are durable
       when apply() returns BACKEND_OK. On failure nothing was applied and
       the store stays usable (a disk-full error can be retried later);
       BACKEND_FULL means out of space. Only when the failure is in making
       the writes durable (a failed fsync in BACKEND_DURABLE_SYNC) may they
       still appear after a restart; see sync(). */
    int (*apply)(struct backend_store *st, const struct backend_write *w, size_t n,
                 char *err, size_t errlen);

    /* Group commit: makes every earlier apply() durable. Called by the
       server once per event-loop turn in BACKEND_DURABLE_BATCH mode, before
       the replies of that turn's writes are sent. A no-op for stores
       without durable storage. On failure the writes since the last
       successful sync() may or may not survive a crash (the server drops
       the held replies and closes those connections), and because a failed
       fsync cannot be retried safely the backend may refuse every later
       write until it is reopened. */
    int (*sync)(struct backend_store *st, char *err, size_t errlen);
};

/* Finds a built-in backend by name, or loads a plug-in when name contains a
   '/' (a path to a .so). Returns NULL with a message in err on failure. */
const struct backend_ops *backend_lookup(const char *name, char *err, size_t errlen);

/* Built-in vtables. */
extern const struct backend_ops backend_memory_ops;
extern const struct backend_ops backend_leveldb_ops;
extern const struct backend_ops backend_flatfile_ops;

#endif
