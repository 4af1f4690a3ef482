/* sqlite.c - a durable tabled storage backend plug-in over SQLite.
 *
 * One SQLite database per store, DATA_DIR/tabled.sqlite, holding one
 * table: kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID. SQLite compares
 * BLOBs with memcmp() and a shorter prefix first: exactly the key order
 * backend.h asks for, so ORDER BY k is the store's order.
 *
 * Durability (tabled --durability, struct backend_options.durability):
 *   sync   journal_mode=WAL, synchronous=FULL: every COMMIT fsyncs the
 *          write-ahead log, so apply is durable when it returns;
 *   batch  synchronous=NORMAL: COMMIT only appends to the log; sync()
 *          (once per event-loop turn, before the replies are sent)
 *          fdatasync()s the log, which makes every committed write
 *          durable (SQLite replays the log's committed frames on open);
 *   none   synchronous=OFF.
 * A failed fsync cannot be retried safely, so after one the store refuses
 * writes until it is reopened (backend.h, sync()). locking_mode=EXCLUSIVE
 * keeps a second process (or a second open) away from the database, as
 * the built-in backends' lock files do.
 *
 * Every call completes at once (no BACKEND_CAP_DEFERS). A cursor reads
 * ahead up to 64 entries with one SELECT and copies them, so that no
 * SQLite statement stays open across writes; where it stands is a copy of
 * the last key it returned, and the next batch starts after that key.
 *
 * Options (tabled --backend-option): sqlite-cache-kb=N, SQLite's page
 * cache in KiB (default 8192). Anything else is refused by name.
 *
 * Build: see the Makefile beside it (pkg-config tabled-backend sqlite3). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/checks.h"

#define SQ_AHEAD 64                 /* entries a cursor reads at once */

struct backend_store {
    sqlite3 *db;
    enum backend_durability durability;
    sqlite3_stmt *get, *put, *del, *begin, *commit, *rollback;
    sqlite3_stmt *scan[2][2];       /* [inclusive start][bounded end] */
    char dir[PATH_MAX];
    int wal_fd;                     /* the log, for sync(); -1 until opened */
    int broken;                     /* a sync failed: writes refused */
    unsigned char *val;             /* get_v2's lent value */
    size_t val_cap;
};

/* One read-ahead entry of a cursor (key then value in one allocation). */
struct sq_row {
    unsigned char *kv;
    size_t kl, vl;
};

struct backend_iter {
    struct backend_store *st;
    unsigned char *start, *end, *pos;   /* copies; end NULL: unbounded */
    size_t start_len, end_len, pos_len;
    int incl;                       /* the next key is >= pos (else > pos) */
    struct sq_row rows[SQ_AHEAD];
    size_t nrows, next;             /* read-ahead rows, the next to return */
    int at_end;                     /* the last SELECT returned everything */
    int failed;                     /* an error, reported by every step */
};

/* The status of an SQLite result code. */
static int sq_status(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_FULL:
        return BACKEND_FULL;
    case SQLITE_NOMEM:
        return BACKEND_NOMEM;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return BACKEND_CORRUPT;
    default:
        return BACKEND_IOERR;
    }
}

/* Writes "sqlite: WHAT: SQLite's message" into err and returns the status. */
static int sq_fail(struct backend_store *st, int rc, const char *what, char *err, size_t errlen)
{
    if (err && errlen)
        snprintf(err, errlen, "sqlite: %s: %s", what,
                 st && st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
    return sq_status(rc);
}

/* Runs one statement of a prepared set to its end and resets it. */
static int sq_run(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

/* Binds a blob; a zero-length one still needs a non-NULL pointer, or
   SQLite binds NULL instead of an empty blob. */
static int sq_bind(sqlite3_stmt *s, int i, const void *p, size_t n)
{
    return sqlite3_bind_blob64(s, i, n ? p : "", n, SQLITE_STATIC);
}

/* Reads the sqlite-* options. */
static int sq_options(const struct backend_options *opt, long *cache_kb, char *err,
                      size_t errlen)
{
    for (const char *const *p = opt->params; p && *p; p++) {
        const char *v = strchr(*p, '=');
        char *end = NULL;
        if (v && (size_t)(v - *p) == strlen("sqlite-cache-kb") &&
            !strncmp(*p, "sqlite-cache-kb", (size_t)(v - *p))) {
            long n = strtol(v + 1, &end, 10);
            if (!v[1] || *end || n < 64 || n > 16L * 1024 * 1024) {
                snprintf(err, errlen, "sqlite: sqlite-cache-kb must be 64 to 16777216, "
                                      "not '%s'", v + 1);
                return BACKEND_INVALID;
            }
            *cache_kb = n;
            continue;
        }
        snprintf(err, errlen, "sqlite: unknown option '%s' (known: sqlite-cache-kb=KIB)", *p);
        return BACKEND_INVALID;
    }
    return BACKEND_OK;
}

static void sq_close(struct backend_store *st);

/* Prepares every statement the store uses. */
static int sq_prepare(struct backend_store *st)
{
    static const char *const scan_sql[2][2] = {
        {"SELECT k, v FROM kv WHERE k > ?1 ORDER BY k LIMIT 64",
         "SELECT k, v FROM kv WHERE k > ?1 AND k < ?2 ORDER BY k LIMIT 64"},
        {"SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT 64",
         "SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k LIMIT 64"},
    };
    struct {
        sqlite3_stmt **s;
        const char *sql;
    } all[] = {
        {&st->get, "SELECT v FROM kv WHERE k = ?1"},
        {&st->put, "INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)"},
        {&st->del, "DELETE FROM kv WHERE k = ?1"},
        {&st->begin, "BEGIN IMMEDIATE"},
        {&st->commit, "COMMIT"},
        {&st->rollback, "ROLLBACK"},
        {&st->scan[0][0], scan_sql[0][0]},
        {&st->scan[0][1], scan_sql[0][1]},
        {&st->scan[1][0], scan_sql[1][0]},
        {&st->scan[1][1], scan_sql[1][1]},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        int rc = sqlite3_prepare_v3(st->db, all[i].sql, -1, SQLITE_PREPARE_PERSISTENT, all[i].s,
                                    NULL);
        if (rc != SQLITE_OK)
            return rc;
    }
    return SQLITE_OK;
}

/* Opens DATA_DIR/tabled.sqlite (creating the directory and the table),
   with the journal and sync settings of the durability mode. */
static int sq_open(const struct backend_options *opt, struct backend_store **out, char *err,
                   size_t errlen)
{
    long cache_kb = 8192;
    int rc = sq_options(opt, &cache_kb, err, errlen);
    if (rc != BACKEND_OK)
        return rc;
    if (!opt->data_dir || !opt->data_dir[0]) {
        snprintf(err, errlen, "sqlite: no data directory given (tabled --data DIR)");
        return BACKEND_INVALID;
    }
    if (mkdir(opt->data_dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "sqlite: cannot create %s: %s", opt->data_dir, strerror(errno));
        return errno == ENOSPC ? BACKEND_FULL : BACKEND_IOERR;
    }
    struct backend_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "sqlite: out of memory");
        return BACKEND_NOMEM;
    }
    st->wal_fd = -1;
    st->durability = opt->durability;
    snprintf(st->dir, sizeof st->dir, "%s", opt->data_dir);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/tabled.sqlite", opt->data_dir);
    rc = sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                         SQLITE_OPEN_NOMUTEX, NULL);
    const char *sync_mode = opt->durability == BACKEND_DURABLE_SYNC    ? "FULL"
                          : opt->durability == BACKEND_DURABLE_BATCH ? "NORMAL"
                                                                     : "OFF";
    char pragmas[512];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; "
             "PRAGMA synchronous=%s; PRAGMA cache_size=-%ld; "
             "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) "
             "WITHOUT ROWID; BEGIN IMMEDIATE; COMMIT;", sync_mode, cache_kb);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(st->db, pragmas, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sq_prepare(st);
    if (rc != SQLITE_OK) {
        if ((rc & 0xff) == SQLITE_BUSY)
            snprintf(err, errlen, "sqlite: %s is in use by another process (or another "
                                  "open store): close that first", path);
        else
            sq_fail(st, rc, path, err, errlen);
        int status = (rc & 0xff) == SQLITE_BUSY ? BACKEND_IOERR : sq_status(rc);
        sq_close(st);
        return status;
    }
    *out = st;
    return BACKEND_OK;
}

/* Makes every committed write durable (see the top of the file). */
static int sq_sync(struct backend_store *st, char *err, size_t errlen)
{
    if (st->broken) {
        snprintf(err, errlen, "sqlite: an earlier sync failed: reopen the store");
        return BACKEND_IOERR;
    }
    if (st->durability != BACKEND_DURABLE_BATCH)
        return BACKEND_OK;
    if (st->wal_fd < 0) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/tabled.sqlite-wal", st->dir);
        st->wal_fd = open(path, O_RDONLY | O_CLOEXEC);
        if (st->wal_fd < 0)
            return errno == ENOENT ? BACKEND_OK : BACKEND_IOERR;   /* nothing written yet */
        /* the log's directory entry is durable once, when first seen */
        int dfd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int bad = dfd < 0 || fsync(dfd) != 0, why = errno;
        if (dfd >= 0)
            close(dfd);
        if (bad) {
            close(st->wal_fd);
            st->wal_fd = -1;
            snprintf(err, errlen, "sqlite: fsync of %s failed: %s", st->dir, strerror(why));
            return BACKEND_IOERR;
        }
    }
    if (fdatasync(st->wal_fd) != 0) {
        st->broken = 1;
        snprintf(err, errlen, "sqlite: fdatasync of the write-ahead log in %s failed: %s",
                 st->dir, strerror(errno));
        return BACKEND_IOERR;
    }
    return BACKEND_OK;
}

static void sq_close(struct backend_store *st)
{
    if (st->db) {
        char err[256];
        if (sq_sync(st, err, sizeof err) != BACKEND_OK)
            fprintf(stderr, "%s\n", err);
        sqlite3_stmt *all[] = {st->get, st->put, st->del, st->begin, st->commit, st->rollback,
                               st->scan[0][0], st->scan[0][1], st->scan[1][0], st->scan[1][1]};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            sqlite3_finalize(all[i]);
        sqlite3_close(st->db);
    }
    if (st->wal_fd >= 0)
        close(st->wal_fd);
    free(st->val);
    free(st);
}

/* Point lookup: the value is copied into the store's buffer, lent until
   the next call on the store. */
static int sq_get_v2(struct backend_store *st, const void *key, size_t kl,
                     struct backend_call *call)
{
    backend_call_reset(call);
    if (!backend_key_ok(key, kl)) {
        snprintf(call->err, sizeof call->err, "sqlite: get: empty or oversized key");
        return backend_call_end(call, BACKEND_INVALID);
    }
    sq_bind(st->get, 1, key, kl);
    int rc = sqlite3_step(st->get), status = BACKEND_NOTFOUND;
    if (rc == SQLITE_ROW) {
        size_t n = (size_t)sqlite3_column_bytes(st->get, 0);
        if (n + 1 > st->val_cap) {
            unsigned char *p = realloc(st->val, n + 1);
            if (!p) {
                sqlite3_reset(st->get);
                snprintf(call->err, sizeof call->err, "sqlite: get: out of memory");
                return backend_call_end(call, BACKEND_NOMEM);
            }
            st->val = p;
            st->val_cap = n + 1;
        }
        if (n)
            memcpy(st->val, sqlite3_column_blob(st->get, 0), n);
        call->val = st->val;
        call->val_len = n;
        status = BACKEND_OK;
    } else if (rc != SQLITE_DONE) {
        status = sq_fail(st, rc, "get", call->err, sizeof call->err);
    }
    sqlite3_reset(st->get);
    return backend_call_end(call, status);
}

/* Copies n bytes into *dst (at least one byte allocated); 0 or -1. */
static int sq_copy(unsigned char **dst, size_t *dst_len, const void *src, size_t n)
{
    unsigned char *p = malloc(n ? n : 1);
    if (!p)
        return -1;
    if (n)
        memcpy(p, src, n);
    free(*dst);
    *dst = p;
    *dst_len = n;
    return 0;
}

/* Drops the cursor's read-ahead rows. */
static void sq_drop_rows(struct backend_iter *it)
{
    for (size_t i = 0; i < it->nrows; i++)
        free(it->rows[i].kv);
    it->nrows = it->next = 0;
    it->at_end = 0;
}

static int sq_iter_open(struct backend_store *st, const void *start, size_t start_len,
                        const void *end, size_t end_len, struct backend_iter **out, char *err,
                        size_t errlen)
{
    const char *bad = backend_check_bounds(start, start_len, end, end_len);
    if (bad) {
        snprintf(err, errlen, "sqlite: %s", bad);
        return BACKEND_INVALID;
    }
    struct backend_iter *it = calloc(1, sizeof *it);
    if (!it || sq_copy(&it->start, &it->start_len, start, start_len) != 0 ||
        sq_copy(&it->pos, &it->pos_len, start, start_len) != 0 ||
        (end && sq_copy(&it->end, &it->end_len, end, end_len) != 0)) {
        if (it) {
            free(it->start);
            free(it->pos);
        }
        free(it);
        snprintf(err, errlen, "sqlite: out of memory");
        return BACKEND_NOMEM;
    }
    it->st = st;
    it->incl = 1;
    *out = it;
    return BACKEND_OK;
}

/* The next step returns the first key >= key; a key below the start
   bound means the start. */
static int sq_iter_seek(struct backend_iter *it, const void *key, size_t kl)
{
    if (!backend_seek_ok(key, kl))
        return it->failed = BACKEND_INVALID;
    size_t n = kl < it->start_len ? kl : it->start_len;
    int c = memcmp(key, it->start, n);
    int below = c < 0 || (c == 0 && kl < it->start_len);
    sq_drop_rows(it);
    it->incl = 1;
    if (sq_copy(&it->pos, &it->pos_len, below ? it->start : key, below ? it->start_len : kl))
        return it->failed = BACKEND_NOMEM;
    return BACKEND_OK;
}

/* Reads up to SQ_AHEAD entries after where the cursor stands. */
static int sq_fill(struct backend_iter *it, char *err, size_t errlen)
{
    sqlite3_stmt *s = it->st->scan[it->incl][it->end != NULL];
    sq_bind(s, 1, it->pos, it->pos_len);
    if (it->end)
        sq_bind(s, 2, it->end, it->end_len);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        size_t kl = (size_t)sqlite3_column_bytes(s, 0), vl = (size_t)sqlite3_column_bytes(s, 1);
        struct sq_row *r = &it->rows[it->nrows];
        r->kv = malloc(kl + vl + 1);
        if (!r->kv) {
            sqlite3_reset(s);
            snprintf(err, errlen, "sqlite: out of memory");
            return BACKEND_NOMEM;
        }
        memcpy(r->kv, sqlite3_column_blob(s, 0), kl);
        if (vl)
            memcpy(r->kv + kl, sqlite3_column_blob(s, 1), vl);
        r->kl = kl;
        r->vl = vl;
        it->nrows++;
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return sq_fail(it->st, rc, "scan", err, errlen);
    it->at_end = it->nrows < SQ_AHEAD;
    return BACKEND_OK;
}

/* One step: the entry is lent until the next call on the cursor. */
static int sq_iter_next_v2(struct backend_iter *it, struct backend_call *call)
{
    backend_call_reset(call);
    if (it->failed) {
        snprintf(call->err, sizeof call->err, "sqlite: the cursor failed earlier");
        return backend_call_end(call, it->failed);
    }
    if (it->next == it->nrows) {
        if (it->at_end)
            return backend_call_end(call, 0);
        sq_drop_rows(it);
        if ((it->failed = sq_fill(it, call->err, sizeof call->err)) != BACKEND_OK)
            return backend_call_end(call, it->failed);
        if (it->nrows == 0)
            return backend_call_end(call, 0);
    }
    struct sq_row *r = &it->rows[it->next++];
    if (sq_copy(&it->pos, &it->pos_len, r->kv, r->kl) != 0) {
        snprintf(call->err, sizeof call->err, "sqlite: out of memory");
        return backend_call_end(call, it->failed = BACKEND_NOMEM);
    }
    it->incl = 0;
    call->key = r->kv;
    call->key_len = r->kl;
    call->val = r->kv + r->kl;
    call->val_len = r->vl;
    return backend_call_end(call, 1);
}

static void sq_iter_close(struct backend_iter *it)
{
    sq_drop_rows(it);
    free(it->start);
    free(it->end);
    free(it->pos);
    free(it);
}

/* The expectation check's and the counts' lookup (backends/checks.h). */
static int sq_probe(void *ctx, const void *key, size_t kl, int want_version, uint64_t *version,
                    char *err, size_t errlen)
{
    struct backend_store *st = ctx;
    sq_bind(st->get, 1, key, kl);
    int rc = sqlite3_step(st->get), found = rc == SQLITE_ROW;
    if (found && want_version)
        *version = backend_value_version(sqlite3_column_blob(st->get, 0),
                                         (size_t)sqlite3_column_bytes(st->get, 0));
    sqlite3_reset(st->get);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sq_fail(st, rc, "lookup", err, errlen);
    return found;
}

/* The writes of one apply_v2 inside the open transaction. */
static int sq_writes(struct backend_store *st, const struct backend_write *w, size_t n,
                     struct backend_call *call)
{
    for (size_t i = 0; i < n; i++) {
        int existed = 0;
        if (call->want_counts && w[i].op == BACKEND_PUT) {
            existed = sq_probe(st, w[i].key, w[i].key_len, 0, NULL, call->err,
                               sizeof call->err);
            if (existed < 0)
                return existed;
        }
        sqlite3_stmt *s = w[i].op == BACKEND_PUT ? st->put : st->del;
        sq_bind(s, 1, w[i].key, w[i].key_len);
        if (w[i].op == BACKEND_PUT)
            sq_bind(s, 2, w[i].val, w[i].val_len);
        int rc = sq_run(s);
        if (rc != SQLITE_OK)
            return sq_fail(st, rc, "write", call->err, sizeof call->err);
        if (w[i].op == BACKEND_PUT)
            call->created += !existed;
        else
            call->removed += (size_t)sqlite3_changes(st->db);
    }
    return BACKEND_OK;
}

/* Atomic writes: one transaction, the expectations checked inside it. */
static int sq_apply_v2(struct backend_store *st, const struct backend_write *w,
                       const struct backend_cond *cond, size_t n, struct backend_call *call)
{
    backend_call_reset(call);
    const char *bad = backend_check_writes(w, cond, n);
    if (bad) {
        snprintf(call->err, sizeof call->err, "sqlite: %s", bad);
        return backend_call_end(call, BACKEND_INVALID);
    }
    if (st->broken) {
        snprintf(call->err, sizeof call->err, "sqlite: an earlier sync failed: writes are "
                                              "refused until the store is reopened");
        return backend_call_end(call, BACKEND_IOERR);
    }
    if (n == 0)
        return backend_call_end(call, BACKEND_OK);
    int rc = sq_run(st->begin);
    if (rc != SQLITE_OK)
        return backend_call_end(call, sq_fail(st, rc, "begin", call->err, sizeof call->err));
    int status = backend_check_conds(w, cond, n, sq_probe, st, &call->failed, call->err,
                                     sizeof call->err);
    if (status == BACKEND_OK)
        status = sq_writes(st, w, n, call);
    if (status == BACKEND_OK && (rc = sq_run(st->commit)) != SQLITE_OK) {
        status = sq_fail(st, rc, "commit", call->err, sizeof call->err);
        /* a failed fsync of the log (sync mode) cannot be retried safely */
        if ((rc & 0xff) == SQLITE_IOERR && st->durability == BACKEND_DURABLE_SYNC)
            st->broken = 1;
    }
    if (status != BACKEND_OK && !sqlite3_get_autocommit(st->db))
        sq_run(st->rollback);
    if (status != BACKEND_OK || !call->want_counts)
        call->created = call->removed = 0;
    return backend_call_end(call, status);
}

/* The option rows (interface version 4): tabled checks the name and the
 * range before open() and lists them in `tabled --backend PATH --help`;
 * sq_open still parses the value (and checks it again, for a server that
 * reads no rows). */
static const struct backend_option sq_option_rows[] = {
    {"sqlite-cache-kb", BACKEND_OPTION_INT, 64, 16777216, "2000",
     "SQLite's page cache per connection, in KiB"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const struct backend_ops sq_ops = {
    .version = 4,
    .options = sq_option_rows,
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .iter_open = sq_iter_open,
    .iter_seek = sq_iter_seek,
    .iter_close = sq_iter_close,
    .sync = sq_sync,
    .get_v2 = sq_get_v2,
    .iter_next_v2 = sq_iter_next_v2,
    .apply_v2 = sq_apply_v2,
};

/* The one symbol tabled looks up (TABLED_BACKEND_SYMBOL). */
__attribute__((visibility("default"))) const struct backend_ops *tabled_backend_init(void)
{
    return &sq_ops;
}
