/* postgres.c - the "postgres" backend: the ordered key/value store kept in
 * one PostgreSQL table, reached through libpq's asynchronous API on the
 * server's event loop (backend interface version 2, deferred completion).
 * This file has the vtable's methods; pg_pool.c the connections, the wait
 * queue, timeouts and delivery; pg_sql.c the SQL and its results and the
 * schema; pg.h their shared structs.
 *
 * Schema (created by open() when missing; see pg_schema()):
 *   tabled_meta(name text PRIMARY KEY, value bigint NOT NULL)
 *       row ('schema_version', PG_SCHEMA_VERSION); a newer one is refused.
 *   tabled_kv(kp bytea, kh bytea, kr bytea, v bytea, ver bigint,
 *             PRIMARY KEY (kp, kh))            (all NOT NULL)
 *       A key is stored split (pg_key_split in pg_sql.c): kp its first
 *       PG_KEY_PREFIX (2600) bytes, kr the rest, kh a SHA-256 digest of
 *       the whole key when it is longer than that (else empty). A btree
 *       entry must fit in 2704 bytes, so the whole key (up to backend.h's
 *       64 KiB; an entity key of two 1,024-character keys is up to 6,154)
 *       cannot be the index; (kp, kh) always fits and is unique. bytea
 *       compares as memcmp with the shorter prefix first, and (kp, kr)
 *       compared column by column is the whole key's order, the order
 *       backend.h requires: cursors are index range scans on kp with
 *       ORDER BY kp, kr, an incremental sort that sorts only keys whose
 *       first 2600 bytes are equal (for the service's keys: a partition
 *       whose PartitionKey is over about 2,590 bytes of UTF-8 is read
 *       whole for each page). Gets, checks and writes find a row by its
 *       primary key. ver is backend_value_version(v), kept beside v so
 *       that version expectations compare a column, not bytes of the value.
 *       Schema version 1 (k bytea PRIMARY KEY, keys of at most 2600 bytes)
 *       is upgraded at open (pg_migrate_v1).
 *
 * Connections. A pool of up to pool-size connections, each in libpq's
 * non-blocking pipeline mode, its socket watched through the host's
 * fd_watch. Every call is one "op" that runs on one connection: a few
 * queries followed by a pipeline sync, sent together (one round trip).
 * When no connection is free the op waits in a FIFO queue; when a
 * connection frees and the queue's first op is a multi-get, the multi-gets
 * queued behind it ride along in its statement (pg_coalesce in pg_pool.c:
 * one statement, snapshot and round trip for up to PG_COALESCE_OPS point
 * reads, each answered from its own keys' rows). open() alone
 * connects synchronously (start-up, before serving) to create or check the
 * schema, and keeps that connection as the pool's first.
 *
 * Applies run as the implicit transaction of one pipeline (no BEGIN: an
 * error anywhere rolls back the whole pipeline and skips the rest up to the
 * sync; the commit happens at the sync, whose result arrives only after
 * it). Every expectation is checked before the first write, so all see the
 * store as it was before the call (pg_plan() in pg_sql.c has the details
 * and why this is safe for concurrent front ends). Expectations are
 * checked inside that transaction by statements that
 * divide by the number of matching rows: a failed expectation raises
 * SQLSTATE 22012 (division_by_zero) at a known statement, which aborts the
 * pipeline, so nothing is applied and the statement's index names the
 * failed write. Row locks (FOR UPDATE, the unique index of INSERT ... ON
 * CONFLICT DO NOTHING) hold each checked key until the commit, so two front
 * ends can never both pass the same expectation. SQLSTATE 40001 / 40P01
 * (serialization failure, deadlock) are retried up to PG_RETRIES times.
 * Only portable SQL is used (no functions, triggers, advisory locks,
 * LISTEN/NOTIFY or extensions): PostgreSQL, and the distributed engines
 * that speak its protocol, accept it.
 *
 * Statements. The point read, the multi-get and every statement of an
 * apply are prepared once per connection (pg_prep_sql in pg_sql.c: sent
 * with PQsendPrepare in the pipeline of the first op that needs one, then
 * executed by name): the database parses and plans them once, not per
 * call. A new connection (after a restart or a lost connection) starts
 * with none and prepares again; a prepare that fails drops its
 * connection. Cursors' batch queries vary with their bounds and stay
 * unnamed. An apply that is one insert under ABSENT and nothing else
 * sends a plain INSERT ... ON CONFLICT DO NOTHING and reads its row count
 * (ST_INSERT_ONLY): with no other statement to abort it needs no error.
 *
 * Multi-get (get_multi_v2, for a $batch's reads): one statement,
 * "SELECT kp || kr, v ... WHERE kp = ANY ($1)" with every key's kp in one
 * binary bytea[] parameter: one round trip and one snapshot for all the
 * keys; its rows (whole keys) are matched to the keys by binary search
 * (pg_mget_answer in pg_sql.c), and a row of a longer key that only
 * shares a named key's 2600-byte prefix matches none.
 *
 * Cursors. iter_open sends nothing. The first step takes a connection and
 * begins a REPEATABLE READ transaction on it (one snapshot for the cursor's
 * life); steps fetch batch-rows rows at a time (key >= pos or key > last
 * key, key < end, in key order, LIMIT) and serve them from the kept result.
 * iter_seek only moves the position. iter_close rolls the transaction back
 * and returns the connection to the pool.
 *
 * Faults. A failed connection attempt with no other connection alive puts
 * the store in "outage": queued and new calls fail at once with
 * BACKEND_UNAVAILABLE while a host timer retries with backoff (100 ms
 * doubling to 2 s). A connection lost under an op fails it with
 * BACKEND_UNKNOWN when it was an apply whose writes were sent, else
 * BACKEND_UNAVAILABLE (a read with no snapshot yet is first moved, once, to
 * a new connection). Every op has a timeout (timeout=SECONDS, default 30):
 * its connection is dropped and it fails the same way. A connection
 * attempt gets 5 s at most.
 *
 * Replicas. backend_postgres_replica_ops is the same backend opened
 * read-only over the hot standbys that replica-conninfo names, for the
 * secondary endpoint: the same reads, no schema work, writes refused, and
 * a status poll (pg_replica.c has the details).
 *
 * Completion. Ops complete onto a list that is delivered (call->done) at
 * the end of each host callback, after the backend's own state is
 * settled; close() from inside a done() is safe (the store is freed when
 * the outermost callback returns). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/bfs.h"
#include "backends/bkey.h"
#include "backends/bopts.h"
#include "backends/checks.h"
#include "backends/pg.h"
#include "backends/postgres.h"

/* Returns a method's status, recording a final one in call->status as
   backend.h requires of a call completed at once (BACKEND_PENDING: done()
   fills it later). */
static int pg_ret(struct backend_call *call, int rc)
{
    if (rc != BACKEND_PENDING)
        call->status = rc;
    return rc;
}

/* get_v2: a multi-get of one key (it may ride with other queued reads:
   pg_coalesce); the value is borrowed from the kept result until done()
   returns. */
static int pg_get_v2_run(struct backend_store *st, const void *key, size_t key_len,
                         struct backend_call *call)
{
    if (!backend_key_ok(key, key_len)) {
        snprintf(call->err, sizeof call->err, "get: empty, missing or oversized key");
        return BACKEND_INVALID;
    }
    struct pg_op *op = pg_op_new(st, OP_MGET, call);
    if (!op)
        return BACKEND_NOMEM;
    op->one = (struct backend_mget){ key, key_len, BACKEND_NOTFOUND, NULL, 0 };
    op->mget = &op->one;
    op->nmget = 1;
    op->single = 1;
    return pg_start(st, op);
}

/* get_v2 (see pg_get_v2_run) with call->status filled. */
static int pg_get_v2(struct backend_store *st, const void *key, size_t key_len,
                     struct backend_call *call)
{
    return pg_ret(call, pg_get_v2_run(st, key, key_len, call));
}

/* get_multi_v2: SELECT kp || kr, v ... WHERE kp = ANY ($1), one statement
   for every key (one round trip, one snapshot); the values are borrowed from
   the kept result until done() returns. */
static int pg_get_multi_v2_run(struct backend_store *st, struct backend_mget *keys, size_t n,
                               struct backend_call *call)
{
    for (size_t i = 0; i < n; i++) {
        if (!backend_key_ok(keys[i].key, keys[i].key_len)) {
            snprintf(call->err, sizeof call->err,
                     "get_multi: empty, missing or oversized key (key %zu)", i);
            return BACKEND_INVALID;
        }
        keys[i].status = BACKEND_NOTFOUND;
    }
    if (n == 0)
        return BACKEND_OK;
    struct pg_op *op = pg_op_new(st, OP_MGET, call);
    if (!op)
        return BACKEND_NOMEM;
    op->mget = keys;
    op->nmget = n;
    return pg_start(st, op);
}

/* get_multi_v2 (see pg_get_multi_v2_run) with call->status filled. */
static int pg_get_multi_v2(struct backend_store *st, struct backend_mget *keys, size_t n,
                           struct backend_call *call)
{
    return pg_ret(call, pg_get_multi_v2_run(st, keys, n, call));
}

/* apply_v2: the writes and their checks as one pipelined transaction. */
static int pg_apply_v2_run(struct backend_store *st, const struct backend_write *w,
                           const struct backend_cond *cond, size_t n, struct backend_call *call)
{
    call->created = call->removed = call->failed = 0;
    if (n == 0) {
        if (st->outage) {
            snprintf(call->err, sizeof call->err, "%s", st->outage_err);
            return BACKEND_UNAVAILABLE;
        }
        if (!pg_live(st)) {             /* all lost: find out by trying */
            pg_connect_start(&st->conns[0]);
            snprintf(call->err, sizeof call->err, "no database connection (reconnecting)");
            return BACKEND_UNAVAILABLE;
        }
        return BACKEND_OK;
    }
    const char *why = backend_check_writes(w, cond, n);
    if (why) {
        snprintf(call->err, sizeof call->err, "%s", why);
        return BACKEND_INVALID;
    }
    struct pg_op *op = pg_op_new(st, OP_APPLY, call);
    if (!op)
        return BACKEND_NOMEM;
    op->w = w;
    op->cond = cond;
    op->n = n;
    if (pg_plan(op, call->want_counts) < 0) {
        pg_op_free(op);
        snprintf(call->err, sizeof call->err, "out of memory");
        return BACKEND_NOMEM;
    }
    return pg_start(st, op);
}

/* apply_v2 (see pg_apply_v2_run) with call->status filled. */
static int pg_apply_v2(struct backend_store *st, const struct backend_write *w,
                       const struct backend_cond *cond, size_t n, struct backend_call *call)
{
    return pg_ret(call, pg_apply_v2_run(st, w, cond, n, call));
}

/* Copies bytes into a malloc()ed buffer (one byte more, never NULL). */
static unsigned char *pg_dup(const void *p, size_t n)
{
    unsigned char *d = malloc(n + 1);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

/* Sets the position the next fetch starts at. */
static int pg_iter_setpos(struct backend_iter *it, const void *key, size_t len, int incl)
{
    if (len + 1 > it->pos_cap) {
        unsigned char *p = realloc(it->pos, len + 1);
        if (!p)
            return -1;
        it->pos = p;
        it->pos_cap = len + 1;
    }
    if (len)
        memcpy(it->pos, key, len);
    it->pos_len = len;
    it->pos_incl = incl;
    return 0;
}

/* iter_open: remembers the bounds; nothing is sent. */
static int pg_iter_open(struct backend_store *st, const void *start, size_t start_len,
                        const void *end, size_t end_len, struct backend_iter **out,
                        char *err, size_t errlen)
{
    const char *why = backend_check_bounds(start, start_len, end, end_len);
    if (!st || !out || why) {
        pg_err(err, errlen, "%s", why ? why : "iter_open: no store or no output pointer");
        return BACKEND_INVALID;
    }
    struct backend_iter *it = calloc(1, sizeof *it);
    if (!it || !(it->start = pg_dup(start, start_len)) ||
        (end && !(it->end = pg_dup(end, end_len))) ||
        pg_iter_setpos(it, start, start_len, 1) < 0) {
        if (it) {
            free(it->start);
            free(it->end);
            free(it->pos);
        }
        free(it);
        pg_err(err, errlen, "out of memory");
        return BACKEND_NOMEM;
    }
    it->st = st;
    it->start_len = start_len;
    it->end_len = end ? end_len : 0;
    *out = it;
    return BACKEND_OK;
}

/* iter_seek: drops the buffered rows and moves the position (no I/O; the
   cursor keeps its transaction, so its snapshot too). */
static int pg_iter_seek(struct backend_iter *it, const void *key, size_t key_len)
{
    if (!it || !backend_seek_ok(key, key_len))
        return BACKEND_INVALID;
    if (it->broken)
        return it->broken;
    if (bkey_cmp(key, key_len, it->start, it->start_len) < 0) {
        key = it->start;
        key_len = it->start_len;
    }
    if (pg_iter_setpos(it, key, key_len, 1) < 0) {
        it->broken = BACKEND_NOMEM;
        snprintf(it->err, sizeof it->err, "out of memory");
        return BACKEND_NOMEM;
    }
    PQclear(it->batch);
    it->batch = NULL;
    it->row = 0;
    it->eof = 0;
    return BACKEND_OK;
}

/* iter_next_v2: a buffered row at once, else fetches the next batch. */
static int pg_iter_next_v2_run(struct backend_iter *it, struct backend_call *call)
{
    struct backend_store *st = it->st;
    if (it->broken) {
        snprintf(call->err, sizeof call->err, "%s", it->err);
        return it->broken;
    }
    if (pg_iter_serve(it, call))
        return 1;
    if (it->batch && it->eof)
        return 0;
    if (it->batch) {
        int last = PQntuples(it->batch) - 1;
        if (pg_iter_setpos(it, PQgetvalue(it->batch, last, 0),
                           (size_t)PQgetlength(it->batch, last, 0), 0) < 0) {
            snprintf(call->err, sizeof call->err, "out of memory");
            return BACKEND_NOMEM;
        }
        PQclear(it->batch);
        it->batch = NULL;
    }
    struct pg_op *op = pg_op_new(st, OP_STEP, call);
    if (!op)
        return BACKEND_NOMEM;
    op->it = it;
    if (!it->conn)
        return pg_start(st, op);
    int rc = pg_send(it->conn, op);
    if (rc < 0) {
        snprintf(call->err, sizeof call->err, "%s", op->err);
        pg_op_free(op);
        return rc;
    }
    op->timer = st->host->timer_add(st->host->arg, st->timeout_ms, pg_op_timeout, op);
    return BACKEND_PENDING;
}

/* iter_next_v2 (see pg_iter_next_v2_run) with call->status filled. */
static int pg_iter_next_v2(struct backend_iter *it, struct backend_call *call)
{
    return pg_ret(call, pg_iter_next_v2_run(it, call));
}

/* iter_close: rolls the cursor's transaction back (asynchronously; the
   connection returns to the pool when that is done) and frees it. */
static void pg_iter_close(struct backend_iter *it)
{
    struct pg_conn *c = it->conn;
    if (c && c->holder == it) {
        struct backend_store *st = it->st;
        struct pg_op *op = calloc(1, sizeof *op);
        c->holder = NULL;
        if (op) {
            op->st = st;
            op->kind = OP_ROLLBACK;
            if (c->state == PGC_HELD) {
                c->state = PGC_IDLE;
                if (pg_send(c, op) == 0)
                    op->timer = st->host->timer_add(st->host->arg, st->timeout_ms,
                                                    pg_op_timeout, op);
                else
                    pg_op_free(op);
            } else {
                pg_op_free(op);
            }
        } else {
            pg_conn_drop(c);            /* cannot roll back: let the server do it */
        }
    }
    PQclear(it->batch);
    free(it->start);
    free(it->end);
    free(it->pos);
    free(it);
}

/* sync: commits are durable when their sync result arrives. */
static int pg_sync(struct backend_store *st, char *err, size_t errlen)
{
    (void)st;
    (void)err;
    (void)errlen;
    return BACKEND_OK;
}

/* The settings the --backend-option rows below fill. */
struct pg_conf {
    char conninfo[1024];
    char replica[1024];             /* the last replica-conninfo (checked
                                       here; pg_replica.c reads them all) */
    long long pool, timeout, batch;
};

#define PG_AT(f) .offset = offsetof(struct pg_conf, f), .size = sizeof(((struct pg_conf *)0)->f)
static const struct opt pg_rows[] = {
    {.name = "conninfo", .type = OPT_STRING, PG_AT(conninfo), .arg = "STRING",
     .help = "libpq connection string (\"host=/run/postgresql dbname=tabled\"; "
             "empty: libpq's PG* environment variables)"},
    {.name = "pool-size", .type = OPT_INT, PG_AT(pool), .min = 1, .max = PG_MAX_POOL,
     .def = "4", .arg = "N", .help = "connections to the database"},
    {.name = "timeout", .type = OPT_INT, PG_AT(timeout), .min = 1, .max = 3600, .def = "30",
     .arg = "SECONDS", .help = "a statement that runs longer fails"},
    {.name = "batch-rows", .type = OPT_INT, PG_AT(batch), .min = 1, .max = 100000,
     .def = "256", .arg = "N", .help = "rows fetched per round trip of a scan"},
    {.name = "replica-conninfo", .type = OPT_STRING, PG_AT(replica), .arg = "STRING",
     .help = "a hot standby of the database that serves the secondary endpoint's reads "
             "(repeatable: any one of them serves)"},
};

const struct bopt_desc backend_postgres_opts = {
    "postgres", pg_rows, sizeof pg_rows / sizeof pg_rows[0], sizeof(struct pg_conf)};

/* Checks a libpq connection string (a malformed one is a configuration
   error, not a server to wait for). 0, or a backend status with err. */
int pg_conninfo_check(const char *what, const char *ci, char *err, size_t errlen)
{
    char msg[512];
    char *perr = NULL;
    PQconninfoOption *parsed = PQconninfoParse(ci ? ci : "", &perr);
    if (!parsed) {
        pg_err(err, errlen, "%s: %s", what, perr ? pg_msg(perr, msg, sizeof msg) :
               "out of memory");
        PQfreemem(perr);
        return perr ? BACKEND_INVALID : BACKEND_NOMEM;
    }
    PQconninfoFree(parsed);
    return BACKEND_OK;
}

/* A store from o's rows, connected to nothing (pg_open connects it;
   pg_replica_open lets the pool and the poll connect later). */
struct backend_store *pg_store_new(const struct backend_options *o, int *rc, char *err,
                                   size_t errlen)
{
    struct pg_conf pc;
    char msg[512];
    *rc = BACKEND_INVALID;
    if (!o->host || !o->host->timer_add || !o->host->fd_watch) {
        pg_err(err, errlen, "the postgres backend needs the server's event loop (no host hooks)");
        return NULL;
    }
    if (bopt_parse(&backend_postgres_opts, o->params, &pc, msg, sizeof msg) < 0) {
        pg_err(err, errlen, "%s", msg);
        return NULL;
    }
    const char *ci = pc.conninfo;
    if ((*rc = pg_conninfo_check("conninfo", ci, err, errlen)) != BACKEND_OK)
        return NULL;
    unsigned long long pool = (unsigned long long)pc.pool,
                       timeout = (unsigned long long)pc.timeout,
                       batch = (unsigned long long)pc.batch;
    struct backend_store *st = calloc(1, sizeof *st);
    if (!st || !(st->conninfo = strdup(ci ? ci : ""))) {
        free(st);
        pg_err(err, errlen, "out of memory");
        *rc = BACKEND_NOMEM;
        return NULL;
    }
    st->host = o->host;
    st->log = o->log;
    st->pool_size = (unsigned)pool;
    st->timeout_ms = (unsigned)timeout * 1000;
    st->batch_rows = (unsigned)batch;
    st->queue_tail = &st->queue;
    st->done_tail = &st->done;
    st->backoff_ms = PG_BACKOFF_MIN_MS;
    for (unsigned i = 0; i < PG_MAX_POOL; i++) {
        st->conns[i].st = st;
        st->conns[i].fd = -1;
    }
    *rc = BACKEND_OK;
    return st;
}

/* open: options, a synchronous first connection and the schema; that
   connection becomes the pool's first. A server that cannot be reached
   (or refuses the connection: no slot, credentials) is BACKEND_UNAVAILABLE
   with a message saying which (pg_connect_why): the server's start-up
   waits and tries again. */
static int pg_open(const struct backend_options *o, struct backend_store **out, char *err,
                   size_t errlen)
{
    int rc;
    struct backend_store *st = pg_store_new(o, &rc, err, errlen);
    if (!st)
        return rc;
    char m[160];
    PGconn *pg = PQconnectdb(st->conninfo);
    if (!pg || PQstatus(pg) != CONNECTION_OK) {
        char why[512];
        if (pg)
            pg_err(err, errlen, "%s", pg_connect_why(pg, PQerrorMessage(pg), st->pool_size,
                                                      why, sizeof why, NULL));
        else
            pg_err(err, errlen, "cannot connect to the database: out of memory");
        /* the server may come later: the caller may retry (server/main.c) */
        rc = pg ? BACKEND_UNAVAILABLE : BACKEND_NOMEM;
    } else {
        PQsetNoticeProcessor(pg, pg_notice, NULL);
        rc = pg_schema(pg, err, errlen);
    }
    struct pg_conn *c = &st->conns[0];
    c->pg = pg;
    if (rc == BACKEND_OK) {
        if (PQsetnonblocking(pg, 1) != 0 || !PQenterPipelineMode(pg) ||
            pg_watch(c, BACKEND_FD_READ) < 0) {
            pg_err(err, errlen, "cannot set up the connection: %s",
                   pg_msg(PQerrorMessage(pg), m, sizeof m));
            rc = BACKEND_IOERR;
        }
    }
    if (rc != BACKEND_OK) {
        pg_conn_drop(c);
        free(st->conninfo);
        free(st);
        return rc;
    }
    c->state = PGC_IDLE;
    *out = st;
    return BACKEND_OK;
}

/* close: drops every connection, timer and outstanding op (their done is
   not called). Inside a callback the memory goes when it returns. */
static void pg_close(struct backend_store *st)
{
    const struct backend_host *h = st->host;
    if (st->deliver_timer)
        h->timer_cancel(h->arg, st->deliver_timer);
    if (st->reconnect_timer)
        h->timer_cancel(h->arg, st->reconnect_timer);
    st->deliver_timer = st->reconnect_timer = NULL;
    for (unsigned i = 0; i < PG_MAX_POOL; i++) {
        struct pg_conn *c = &st->conns[i];
        struct pg_op *op = c->op;
        if (op)
            pg_op_free(op);
        if (c->holder)
            c->holder->conn = NULL;
        if (c->state != PGC_DOWN)
            pg_conn_drop(c);
    }
    struct pg_op *lists[2] = { st->queue, st->done };
    for (int l = 0; l < 2; l++)
        while (lists[l]) {
            struct pg_op *op = lists[l];
            lists[l] = op->next;
            pg_op_free(op);
        }
    st->queue = st->done = NULL;
    pg_replica_close(st);
    free(st->conninfo);
    st->conninfo = NULL;
    if (st->depth)
        st->closed = 1;
    else
        free(st);
}

/* apply_v2 of the read-only store: an empty apply (the probe) as on the
   primary, any write refused (a standby could not take it anyway). */
static int pg_replica_apply_v2(struct backend_store *st, const struct backend_write *w,
                               const struct backend_cond *cond, size_t n,
                               struct backend_call *call)
{
    if (n) {
        call->created = call->removed = call->failed = 0;
        snprintf(call->err, sizeof call->err, "the replica store is read-only");
        return pg_ret(call, BACKEND_INVALID);
    }
    return pg_apply_v2(st, w, cond, n, call);
}

/* The same backend opened read-only over the hot standbys that
   replica-conninfo names (pg_replica.c): reads as on the primary, no
   schema work, no writes. */
const struct backend_ops backend_postgres_replica_ops = {
    .version = 3,
    .name = "postgres",
    .open = pg_replica_open,
    .close = pg_close,
    .get = NULL,
    .iter_open = pg_iter_open,
    .iter_seek = pg_iter_seek,
    .iter_next = NULL,
    .iter_close = pg_iter_close,
    .apply = NULL,
    .sync = pg_sync,
    .caps = BACKEND_CAP_DEFERS | BACKEND_CAP_SHARED,
    .get_v2 = pg_get_v2,
    .iter_next_v2 = pg_iter_next_v2,
    .apply_v2 = pg_replica_apply_v2,
    .get_multi_v2 = pg_get_multi_v2,
};

const struct backend_ops backend_postgres_ops = {
    .version = 3,
    .name = "postgres",
    .open = pg_open,
    .close = pg_close,
    .get = NULL,
    .iter_open = pg_iter_open,
    .iter_seek = pg_iter_seek,
    .iter_next = NULL,
    .iter_close = pg_iter_close,
    .apply = NULL,
    .sync = pg_sync,
    .caps = BACKEND_CAP_DEFERS | BACKEND_CAP_SHARED,
    .get_v2 = pg_get_v2,
    .iter_next_v2 = pg_iter_next_v2,
    .apply_v2 = pg_apply_v2,
    .get_multi_v2 = pg_get_multi_v2,
};
