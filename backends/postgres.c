/* postgres.c - the "postgres" backend: the ordered key/value store kept in
 * one PostgreSQL table, reached through libpq's asynchronous API on the
 * server's event loop (backend interface version 2, deferred completion).
 *
 * Schema (created by open() when missing; see pg_schema()):
 *   tabled_meta(name text PRIMARY KEY, value bigint NOT NULL)
 *       row ('schema_version', PG_SCHEMA_VERSION); a newer one is refused.
 *   tabled_kv(k bytea PRIMARY KEY, v bytea NOT NULL, ver bigint NOT NULL)
 *       bytea compares as memcmp with the shorter prefix first, which is
 *       the order backend.h requires, so cursors are index range scans.
 *       ver is backend_value_version(v), kept beside v so that version
 *       expectations compare a column, not bytes of the value.
 *       Keys are at most PG_MAX_KEY bytes (a btree entry's limit), less
 *       than backend.h's 64 KiB: longer ones are refused (BACKEND_INVALID).
 *
 * Connections. A pool of up to pool-size connections, each in libpq's
 * non-blocking pipeline mode, its socket watched through the host's
 * fd_watch. Every call is one "op" that runs on one connection: a few
 * queries followed by a pipeline sync, sent together (one round trip).
 * When no connection is free the op waits in a FIFO queue. open() alone
 * connects synchronously (start-up, before serving) to create or check the
 * schema, and keeps that connection as the pool's first.
 *
 * Applies run as the implicit transaction of one pipeline (no BEGIN: an
 * error anywhere rolls back the whole pipeline and skips the rest up to the
 * sync; the commit happens at the sync, whose result arrives only after
 * it). Expectations are checked inside that transaction by statements that
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
 * Cursors. iter_open sends nothing. The first step takes a connection and
 * begins a REPEATABLE READ transaction on it (one snapshot for the cursor's
 * life); steps fetch batch-rows rows at a time (k >= pos or k > last key,
 * k < end, ORDER BY k, LIMIT) and serve them from the kept result.
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
 * Completion. Ops complete onto a list that is delivered (call->done) at
 * the end of each host callback, after the backend's own state is
 * settled; close() from inside a done() is safe (the store is freed when
 * the outermost callback returns). */
#include <errno.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/bfs.h"
#include "backends/postgres.h"

#define PG_MAX_POOL 64
#define PG_RETRIES 5                    /* serialization failures retried */
#define PG_BACKOFF_MIN_MS 100
#define PG_BACKOFF_MAX_MS 2000
#define PG_CONNECT_MS 5000              /* a connection attempt, at most */
/* Longest key: a btree index entry must fit in a third of an 8 KiB page
   (2704 bytes with its headers); incompressible keys above this fail. */
#define PG_MAX_KEY 2600
#define PG_OID_BYTEA 17
#define PG_OID_INT8 20

enum pgc_state {
    PGC_DOWN,           /* no connection */
    PGC_CONNECTING,     /* PQconnectPoll in progress */
    PGC_IDLE,           /* free in the pool */
    PGC_HELD,           /* carries a cursor's transaction, nothing running */
    PGC_BUSY,           /* an op is running on it */
};

enum pg_kind { OP_GET, OP_STEP, OP_APPLY, OP_ROLLBACK };

/* Statements an apply sends for one write (see pg_plan). */
enum pg_stmt_kind {
    ST_CHECK_PRESENT,   /* error 22012 unless the key exists (locks it) */
    ST_CHECK_VERSION,   /* error 22012 unless it exists with that ver */
    ST_INSERT_ABSENT,   /* insert; error 22012 when the key exists */
    ST_PLACEHOLDER,     /* the same with an empty value (ABSENT + DELETE) */
    ST_EXISTS,          /* count of rows with the key (want_counts) */
    ST_UPSERT,
    ST_DELETE,
};

struct pg_stmt {
    enum pg_stmt_kind kind;
    size_t w;           /* index of its write */
    int count;          /* ST_DELETE: add the affected rows to removed */
};

struct pg_conn;

/* One call in flight (or one cursor's rollback, which has no call). */
struct pg_op {
    enum pg_kind kind;
    struct backend_store *st;
    struct backend_call *call;      /* NULL for OP_ROLLBACK */
    struct backend_iter *it;        /* OP_STEP */
    struct pg_conn *conn;           /* while running */
    struct pg_op *next;             /* queue / done list link */
    void *timer;                    /* timeout */
    /* get */
    const void *key;
    size_t key_len;
    PGresult *res;                  /* kept until done() returns */
    /* apply */
    const struct backend_write *w;
    const struct backend_cond *cond;
    size_t n;
    struct pg_stmt *stmts;
    size_t nstmts;
    int retries;
    int fresh;                      /* OP_STEP: began the cursor's transaction */
    int resent;                     /* a read already moved to a new connection */
    int connect_failed;             /* saw a connection attempt fail while queued */
    /* progress of the running pipeline */
    size_t nq;                      /* queries sent before the sync */
    size_t qi;                      /* query whose results come now */
    int seen;                       /* a result of query qi was read */
    int sent;                       /* the sync is queued: it may commit */
    int status;                     /* first failure, or BACKEND_OK */
    int retry;                      /* the failure was 40001/40P01 */
    size_t failed, created, removed;
    char err[256];
};

struct pg_conn {
    struct backend_store *st;
    PGconn *pg;
    void *watch;
    int fd;
    unsigned events;
    enum pgc_state state;
    struct pg_op *op;               /* PGC_BUSY */
    struct backend_iter *holder;    /* cursor whose transaction it carries */
    void *timer;                    /* connect timeout */
};

struct backend_store {
    const struct backend_host *host;
    void (*log)(enum backend_log_level, const char *);
    char *conninfo;
    unsigned pool_size, timeout_ms, batch_rows;
    struct pg_conn conns[PG_MAX_POOL];
    struct pg_op *queue, **queue_tail;      /* waiting for a connection */
    struct pg_op *done, **done_tail;        /* completed, to deliver */
    void *deliver_timer;
    void *reconnect_timer;
    unsigned backoff_ms;
    int outage;                     /* no connection could be made */
    char outage_err[256];
    int depth;                      /* host callbacks on the stack */
    int closed;                     /* close() ran inside a callback */
};

struct backend_iter {
    struct backend_store *st;
    unsigned char *start, *end;     /* bounds (end NULL: none) */
    size_t start_len, end_len;
    unsigned char *pos;             /* next fetch starts here */
    size_t pos_len, pos_cap;
    int pos_incl;                   /* k >= pos (1) or k > pos (0) */
    struct pg_conn *conn;           /* carries its transaction */
    PGresult *batch;                /* rows being served */
    int row;                        /* next row of batch */
    int eof;                        /* no rows after the batch */
    int broken;                     /* a failure every later step reports */
    char err[256];
};

static void pg_conn_io(void *arg, unsigned ready);
static void pg_reconnect(void *arg);
static int pg_send(struct pg_conn *c, struct pg_op *op);

/* Writes a message into a caller's err buffer (may be NULL). */
static void pg_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* libpq's message without its trailing newline, for err strings. */
static const char *pg_msg(const char *m, char *buf, size_t len)
{
    snprintf(buf, len, "%s", m ? m : "");
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = 0;
    return buf;
}

/* Reports an event through options.log, or stderr without one. */
static void pg_log(struct backend_store *st, enum backend_log_level lv, const char *fmt, ...)
{
    char m[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (st->log)
        st->log(lv, m);
    else
        fprintf(stderr, "postgres: %s\n", m);
}

/* libpq notice processor: notices (CREATE TABLE IF NOT EXISTS's
   "already exists, skipping") are not worth a log line. */
static void pg_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* ---- op lifetime and delivery ---- */

/* Frees an op (its kept result too); cancels its timeout. */
static void pg_op_free(struct pg_op *op)
{
    if (op->timer)
        op->st->host->timer_cancel(op->st->host->arg, op->timer);
    PQclear(op->res);
    free(op->stmts);
    free(op);
}

/* Delivers every completed op: fills its call, calls done, frees it.
   Stops when a done() closed the store (the rest are dropped). */
static void pg_deliver_all(struct backend_store *st)
{
    while (st->done && !st->closed) {
        struct pg_op *op = st->done;
        st->done = op->next;
        if (!st->done)
            st->done_tail = &st->done;
        if (op->timer) {
            st->host->timer_cancel(st->host->arg, op->timer);
            op->timer = NULL;
        }
        struct backend_call *call = op->call;
        call->status = op->status;
        if (op->status < 0 && op->status != BACKEND_NOTFOUND)
            snprintf(call->err, sizeof call->err, "%s", op->err);
        if (op->kind == OP_APPLY) {
            call->failed = op->failed;
            call->created = op->created;
            call->removed = op->removed;
        }
        call->done(call);
        pg_op_free(op);
    }
}

/* Entering a host callback: the store survives a close() until leave. */
static void pg_enter(struct backend_store *st)
{
    st->depth++;
}

/* Leaving a host callback: delivers completions, then frees the store if
   a done() closed it and this is the outermost callback. */
static void pg_leave(struct backend_store *st)
{
    pg_deliver_all(st);
    if (--st->depth == 0 && st->closed)
        free(st);
}

/* Host timer: delivers completions recorded inside a method. */
static void pg_deliver_timer(void *arg)
{
    struct backend_store *st = arg;
    st->deliver_timer = NULL;
    pg_enter(st);
    pg_leave(st);
}

/* Records an op's completion; it is delivered from the event loop. */
static void pg_complete(struct pg_op *op)
{
    struct backend_store *st = op->st;
    op->conn = NULL;
    if (op->timer) {
        st->host->timer_cancel(st->host->arg, op->timer);
        op->timer = NULL;
    }
    if (!op->call) {                    /* a cursor's rollback */
        pg_op_free(op);
        return;
    }
    op->next = NULL;
    *st->done_tail = op;
    st->done_tail = &op->next;
    if (st->depth == 0 && !st->deliver_timer)
        st->deliver_timer = st->host->timer_add(st->host->arg, 0, pg_deliver_timer, st);
}

/* Completes an op with a failure. */
static void pg_fail(struct pg_op *op, int status, const char *fmt, ...)
{
    op->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(op->err, sizeof op->err, fmt, ap);
    va_end(ap);
    pg_complete(op);
}

/* Completes an op with a failure whose message op->err already holds. */
static void pg_fail_as(struct pg_op *op, int status)
{
    op->status = status;
    pg_complete(op);
}

/* ---- connections ---- */

/* Number of connections alive or being made. */
static unsigned pg_live(struct backend_store *st)
{
    unsigned n = 0;
    for (unsigned i = 0; i < st->pool_size; i++)
        n += st->conns[i].state != PGC_DOWN;
    return n;
}

/* Watches a connection's socket for events (re-registering when libpq
   switched sockets, as it may while connecting). */
static int pg_watch(struct pg_conn *c, unsigned events)
{
    const struct backend_host *h = c->st->host;
    int fd = PQsocket(c->pg);
    if (c->watch && fd != c->fd) {
        h->fd_unwatch(h->arg, c->watch);
        c->watch = NULL;
    }
    if (!c->watch) {
        if (fd < 0)
            return -1;
        c->watch = h->fd_watch(h->arg, fd, events, pg_conn_io, c);
        if (!c->watch)
            return -1;
        c->fd = fd;
    } else if (events != c->events) {
        h->fd_modify(h->arg, c->watch, events);
    }
    c->events = events;
    return 0;
}

/* Closes a connection's socket and watches; the slot becomes PGC_DOWN. */
static void pg_conn_drop(struct pg_conn *c)
{
    const struct backend_host *h = c->st->host;
    if (c->watch)
        h->fd_unwatch(h->arg, c->watch);
    if (c->timer)
        h->timer_cancel(h->arg, c->timer);
    PQfinish(c->pg);
    c->watch = NULL;
    c->timer = NULL;
    c->pg = NULL;
    c->fd = -1;
    c->events = 0;
    c->state = PGC_DOWN;
    c->op = NULL;
    c->holder = NULL;
}

static void pg_kick(struct backend_store *st);
static void pg_drain(struct backend_store *st);
static void pg_connect_start(struct pg_conn *c);

/* True when idle connection c is usable: non-blocking reads find no
   end-of-file (after a database restart every idle socket has one; a
   write sent there would end with an unknown outcome). Two reads: a
   server going down first sends a FATAL message, and libpq stops at the
   data it read without looking for the end-of-file behind it. Else drops
   it. */
static int pg_idle_ok(struct pg_conn *c)
{
    if (PQconsumeInput(c->pg) && PQconsumeInput(c->pg) && PQstatus(c->pg) == CONNECTION_OK)
        return 1;
    pg_conn_drop(c);
    return 0;
}

/* A connection failed (I/O error, timeout): fails its op (UNKNOWN for an
   apply whose writes were sent), breaks the cursor it carried, and starts
   new connections for queued ops. */
static void pg_conn_lost(struct pg_conn *c, int timed_out, const char *why)
{
    struct backend_store *st = c->st;
    char m[160];
    pg_msg(why, m, sizeof m);
    struct pg_op *op = c->op;
    struct backend_iter *it = c->holder;
    if (op && op->kind == OP_STEP)
        it = op->it;
    pg_conn_drop(c);
    if (it) {
        it->conn = NULL;
        it->broken = BACKEND_UNAVAILABLE;
        snprintf(it->err, sizeof it->err, "cursor's database connection %s: %s",
                 timed_out ? "timed out" : "lost", m);
    }
    if (op && !timed_out && !op->resent &&
        (op->kind == OP_GET || (op->kind == OP_STEP && op->fresh))) {
        /* a read that changed nothing and had no snapshot yet: once more
           on a new connection (a database restart costs no error) */
        op->resent = 1;
        if (it) {
            it->broken = 0;
            it->err[0] = 0;
        }
        op->next = st->queue;
        st->queue = op;
        if (!op->next)
            st->queue_tail = &op->next;
        op = NULL;
    }
    /* the server may have gone for every connection: idle ones whose
       socket already reads end-of-file are dropped before reuse */
    for (unsigned i = 0; i < st->pool_size; i++) {
        struct pg_conn *o = &st->conns[i];
        if (o->state == PGC_IDLE)
            pg_idle_ok(o);
    }
    if (op) {
        if (op->kind == OP_APPLY && op->sent)
            pg_fail(op, BACKEND_UNKNOWN, "database connection %s after the writes were sent "
                    "(outcome unknown): %s", timed_out ? "timed out" : "lost", m);
        else
            pg_fail(op, BACKEND_UNAVAILABLE, "database connection %s: %s",
                    timed_out ? "timed out" : "lost", m);
    }
    pg_drain(st);
    pg_kick(st);
}

/* Gives queued ops to free connections (in order). */
static void pg_drain(struct backend_store *st)
{
    for (unsigned i = 0; i < st->pool_size && st->queue; i++) {
        struct pg_conn *c = &st->conns[i];
        if (c->state != PGC_IDLE || !pg_idle_ok(c))
            continue;
        struct pg_op *op = st->queue;
        st->queue = op->next;
        if (!st->queue)
            st->queue_tail = &st->queue;
        op->next = NULL;
        int rc = pg_send(c, op);
        if (rc < 0)
            pg_fail_as(op, rc);
        i = (unsigned)-1;               /* rescan: a send may drop a conn */
    }
    if (st->queue)                      /* dead idle ones were dropped */
        pg_kick(st);
}

/* Connection attempt failed: when nothing else is alive, the store enters
   outage (queued ops fail UNAVAILABLE) and retries on a backoff timer. */
static void pg_connect_failed(struct pg_conn *c, const char *why)
{
    struct backend_store *st = c->st;
    char m[160];
    pg_msg(why, m, sizeof m);
    pg_conn_drop(c);
    if (pg_live(st))
        return;
    /* the attempt may have begun before the ops now waiting (a server
       that went down under a handshake and is back): each waiting op gets
       one more attempt before the store declares an outage */
    int again = 0;
    for (struct pg_op *op = st->queue; op; op = op->next)
        if (!op->connect_failed)
            again = op->connect_failed = 1;
    if (again && !st->outage) {
        pg_connect_start(c);
        return;
    }
    if (!st->outage)
        pg_log(st, BACKEND_LOG_WARN, "database unreachable: %s", m);
    st->outage = 1;
    snprintf(st->outage_err, sizeof st->outage_err, "database unreachable: %s", m);
    while (st->queue) {
        struct pg_op *op = st->queue;
        st->queue = op->next;
        pg_fail(op, BACKEND_UNAVAILABLE, "%s", st->outage_err);
    }
    st->queue_tail = &st->queue;
    if (!st->reconnect_timer) {
        st->reconnect_timer = st->host->timer_add(st->host->arg, st->backoff_ms, pg_reconnect, st);
        st->backoff_ms = st->backoff_ms * 2 > PG_BACKOFF_MAX_MS ? PG_BACKOFF_MAX_MS : st->backoff_ms * 2;
    }
}

/* A connection is up: pipeline mode, non-blocking, idle in the pool. */
static void pg_connected(struct pg_conn *c)
{
    struct backend_store *st = c->st;
    if (c->timer) {
        st->host->timer_cancel(st->host->arg, c->timer);
        c->timer = NULL;
    }
    if (PQsetnonblocking(c->pg, 1) != 0 || !PQenterPipelineMode(c->pg) ||
        pg_watch(c, BACKEND_FD_READ) < 0) {
        pg_connect_failed(c, PQerrorMessage(c->pg));
        return;
    }
    c->state = PGC_IDLE;
    if (st->outage)
        pg_log(st, BACKEND_LOG_INFO, "database reachable again");
    st->outage = 0;
    st->backoff_ms = PG_BACKOFF_MIN_MS;
    pg_drain(st);
}

/* Advances a connection attempt (PQconnectPoll) and watches accordingly. */
static void pg_connect_step(struct pg_conn *c)
{
    PostgresPollingStatusType ps = PQconnectPoll(c->pg);
    /* libpq may have closed the socket and opened another one (the next
       host or address) under the same number: watch afresh each step */
    if (c->watch) {
        c->st->host->fd_unwatch(c->st->host->arg, c->watch);
        c->watch = NULL;
    }
    switch (ps) {
    case PGRES_POLLING_READING:
        if (pg_watch(c, BACKEND_FD_READ) < 0)
            pg_connect_failed(c, "cannot watch the socket");
        break;
    case PGRES_POLLING_WRITING:
        if (pg_watch(c, BACKEND_FD_WRITE) < 0)
            pg_connect_failed(c, "cannot watch the socket");
        break;
    case PGRES_POLLING_OK:
        pg_connected(c);
        break;
    default:
        pg_connect_failed(c, PQerrorMessage(c->pg));
        break;
    }
}

/* Host timer: a connection attempt took longer than the timeout. */
static void pg_connect_timeout(void *arg)
{
    struct pg_conn *c = arg;
    struct backend_store *st = c->st;
    c->timer = NULL;
    pg_enter(st);
    pg_connect_failed(c, "connection attempt timed out");
    pg_leave(st);
}

/* Starts connecting slot c (asynchronously). */
static void pg_connect_start(struct pg_conn *c)
{
    struct backend_store *st = c->st;
    c->pg = PQconnectStart(st->conninfo);
    c->state = PGC_CONNECTING;
    c->fd = -1;
    if (!c->pg || PQstatus(c->pg) == CONNECTION_BAD) {
        pg_connect_failed(c, c->pg ? PQerrorMessage(c->pg) : "out of memory");
        return;
    }
    PQsetNoticeProcessor(c->pg, pg_notice, NULL);
    c->timer = st->host->timer_add(st->host->arg, st->timeout_ms < PG_CONNECT_MS ?
                                   st->timeout_ms : PG_CONNECT_MS, pg_connect_timeout, c);
    if (pg_watch(c, BACKEND_FD_WRITE) < 0)
        pg_connect_failed(c, "cannot watch the socket");
}

/* Starts connections while ops wait and the pool has room (none while in
   outage: the reconnect timer makes the next attempt). */
static void pg_kick(struct backend_store *st)
{
    if (st->outage)
        return;
    unsigned connecting = 0;
    for (unsigned i = 0; i < st->pool_size; i++)
        connecting += st->conns[i].state == PGC_CONNECTING;
    size_t waiting = 0;
    for (struct pg_op *op = st->queue; op; op = op->next)
        waiting++;
    for (unsigned i = 0; i < st->pool_size && waiting > connecting && !st->outage; i++) {
        if (st->conns[i].state != PGC_DOWN)
            continue;
        connecting++;
        pg_connect_start(&st->conns[i]);
    }
}

/* Host timer: one reconnection attempt during an outage. */
static void pg_reconnect(void *arg)
{
    struct backend_store *st = arg;
    st->reconnect_timer = NULL;
    pg_enter(st);
    if (st->outage && !pg_live(st))
        pg_connect_start(&st->conns[0]);
    pg_leave(st);
}

/* ---- sending ---- */

/* Sends one query with binary parameters and results. */
static int pg_query(struct pg_conn *c, struct pg_op *op, const char *sql, int n,
                    const Oid *types, const char *const *vals, const int *lens)
{
    static const int fmts[3] = { 1, 1, 1 };
    if (!PQsendQueryParams(c->pg, sql, n, types, vals, lens, fmts, 1))
        return -1;
    op->nq++;
    return 0;
}

/* The 8-byte big-endian (binary int8) form of a value's version. */
static void pg_ver(const struct backend_write *w, unsigned char out[8])
{
    uint64_t v = w->op == BACKEND_PUT ? backend_value_version(w->val, w->val_len) : 0;
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (unsigned char)v;
}

/* Sends one statement of an apply's plan. */
static int pg_send_stmt(struct pg_conn *c, struct pg_op *op, const struct pg_stmt *s)
{
    static const Oid kvv[3] = { PG_OID_BYTEA, PG_OID_BYTEA, PG_OID_INT8 };
    static const Oid kver[2] = { PG_OID_BYTEA, PG_OID_INT8 };
    const struct backend_write *w = &op->w[s->w];
    unsigned char ver[8];
    const char *vals[3] = { w->key, w->op == BACKEND_PUT && w->val ? w->val : "", (const char *)ver };
    int lens[3] = { (int)w->key_len, w->op == BACKEND_PUT ? (int)w->val_len : 0, 8 };
    pg_ver(w, ver);
    switch (s->kind) {
    case ST_CHECK_PRESENT:
        return pg_query(c, op, "SELECT 1 / count(*) FROM (SELECT 1 FROM tabled_kv WHERE k = $1 "
                        "FOR UPDATE) s", 1, kvv, vals, lens);
    case ST_CHECK_VERSION: {
        uint64_t v = op->cond[s->w].version;
        for (int i = 7; i >= 0; i--, v >>= 8)
            ver[i] = (unsigned char)v;
        const char *cv[2] = { vals[0], (const char *)ver };
        int cl[2] = { lens[0], 8 };
        return pg_query(c, op, "SELECT 1 / count(*) FROM (SELECT 1 FROM tabled_kv WHERE k = $1 "
                        "AND ver = $2 FOR UPDATE) s", 2, kver, cv, cl);
    }
    case ST_PLACEHOLDER:
        vals[1] = "";
        lens[1] = 0;
        memset(ver, 0, sizeof ver);
        /* fall through */
    case ST_INSERT_ABSENT:
        return pg_query(c, op, "WITH i AS (INSERT INTO tabled_kv (k, v, ver) VALUES ($1, $2, $3) "
                        "ON CONFLICT (k) DO NOTHING RETURNING 1) SELECT 1 / count(*) FROM i",
                        3, kvv, vals, lens);
    case ST_EXISTS:
        return pg_query(c, op, "SELECT count(*) FROM tabled_kv WHERE k = $1", 1, kvv, vals, lens);
    case ST_UPSERT:
        return pg_query(c, op, "INSERT INTO tabled_kv (k, v, ver) VALUES ($1, $2, $3) "
                        "ON CONFLICT (k) DO UPDATE SET v = excluded.v, ver = excluded.ver",
                        3, kvv, vals, lens);
    case ST_DELETE:
        return pg_query(c, op, "DELETE FROM tabled_kv WHERE k = $1", 1, kvv, vals, lens);
    }
    return -1;
}

/* Sends a cursor's next batch query (after BEGIN on a fresh connection). */
static int pg_send_step(struct pg_conn *c, struct pg_op *op)
{
    static const Oid types[2] = { PG_OID_BYTEA, PG_OID_BYTEA };
    struct backend_iter *it = op->it;
    char sql[160];
    if (!it->conn) {
        if (!PQsendQueryParams(c->pg, "BEGIN ISOLATION LEVEL REPEATABLE READ", 0, NULL, NULL,
                               NULL, NULL, 0))
            return -1;
        op->nq++;
        op->fresh = 1;
        it->conn = c;
        c->holder = it;
    }
    snprintf(sql, sizeof sql, "SELECT k, v FROM tabled_kv WHERE k %s $1%s ORDER BY k LIMIT %u",
             it->pos_incl ? ">=" : ">", it->end ? " AND k < $2" : "", it->st->batch_rows);
    const char *vals[2] = { it->pos_len ? (const char *)it->pos : "", (const char *)it->end };
    int lens[2] = { (int)it->pos_len, (int)it->end_len };
    return pg_query(c, op, sql, it->end ? 2 : 1, types, vals, lens);
}

/* Sends an op's queries and the pipeline sync on connection c (idle, or
   held by the op's cursor). Returns 0, or a failure status with op->err
   set (the connection is then dropped). */
static int pg_send(struct pg_conn *c, struct pg_op *op)
{
    struct backend_store *st = c->st;
    int rc = 0;
    op->nq = op->qi = 0;
    op->seen = op->sent = op->retry = op->fresh = 0;
    op->status = BACKEND_OK;
    op->created = op->removed = op->failed = 0;
    switch (op->kind) {
    case OP_GET: {
        static const Oid t[1] = { PG_OID_BYTEA };
        const char *v[1] = { op->key };
        int l[1] = { (int)op->key_len };
        rc = pg_query(c, op, "SELECT v FROM tabled_kv WHERE k = $1", 1, t, v, l);
        break;
    }
    case OP_STEP:
        rc = pg_send_step(c, op);
        break;
    case OP_APPLY:
        for (size_t i = 0; i < op->nstmts && rc == 0; i++)
            rc = pg_send_stmt(c, op, &op->stmts[i]);
        break;
    case OP_ROLLBACK:
        rc = PQsendQueryParams(c->pg, "ROLLBACK", 0, NULL, NULL, NULL, NULL, 0) ? 0 : -1;
        op->nq++;
        break;
    }
    int fl = -1;
    if (rc == 0 && PQpipelineSync(c->pg)) {
        op->sent = 1;                   /* from now on it may commit */
        fl = PQflush(c->pg);
    }
    if (fl >= 0 && pg_watch(c, fl ? BACKEND_FD_READ | BACKEND_FD_WRITE : BACKEND_FD_READ) == 0) {
        c->state = PGC_BUSY;
        c->op = op;
        op->conn = c;
        return 0;
    }
    char m[160];
    pg_msg(PQerrorMessage(c->pg), m, sizeof m);
    int status = op->kind == OP_APPLY && op->sent ? BACKEND_UNKNOWN : BACKEND_UNAVAILABLE;
    snprintf(op->err, sizeof op->err, "sending to the database failed%s: %s",
             status == BACKEND_UNKNOWN ? " (outcome unknown)" : "", m);
    struct backend_iter *it = c->holder;
    pg_conn_drop(c);
    if (it && it != op->it) {           /* cannot happen: held conns run their cursor's ops */
        it->conn = NULL;
        it->broken = BACKEND_UNAVAILABLE;
    }
    if (op->kind == OP_STEP) {
        op->it->conn = NULL;
        op->it->broken = status;
        snprintf(op->it->err, sizeof op->it->err, "%s", op->err);
    }
    pg_kick(st);
    return status;
}

/* ---- results ---- */

/* True for statements whose 22012 means "expectation failed". */
static int pg_is_check(enum pg_stmt_kind k)
{
    return k == ST_CHECK_PRESENT || k == ST_CHECK_VERSION || k == ST_INSERT_ABSENT ||
           k == ST_PLACEHOLDER;
}

/* Reads an int8 column in binary format. */
static uint64_t pg_int8(const PGresult *r, int row, int col)
{
    const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
    uint64_t v = 0;
    if (PQgetlength(r, row, col) != 8)
        return 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Records a failed query of op (the first failure wins). */
static void pg_result_error(struct pg_op *op, const PGresult *r)
{
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    char m[160];
    pg_msg(PQresultErrorMessage(r), m, sizeof m);
    if (!state)
        state = "";
    if (op->status != BACKEND_OK)
        return;
    if (op->kind == OP_APPLY && !strcmp(state, "22012") && op->qi < op->nstmts &&
        pg_is_check(op->stmts[op->qi].kind)) {
        op->status = BACKEND_CONFLICT;
        op->failed = op->stmts[op->qi].w;
        snprintf(op->err, sizeof op->err, "expectation of write %zu failed", op->failed);
        return;
    }
    op->retry = !strcmp(state, "40001") || !strcmp(state, "40P01");
    op->status = !strcmp(state, "53100") ? BACKEND_FULL : BACKEND_IOERR;
    snprintf(op->err, sizeof op->err, "database error %s: %s", state, m);
}

/* Takes one result of query op->qi (consumes r unless it keeps it). */
static void pg_result(struct pg_op *op, PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    if (s == PGRES_PIPELINE_ABORTED) {
        PQclear(r);
        return;
    }
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        pg_result_error(op, r);
        PQclear(r);
        return;
    }
    if (op->status != BACKEND_OK) {
        PQclear(r);
        return;
    }
    switch (op->kind) {
    case OP_GET:
        if (PQntuples(r) == 1 && PQnfields(r) == 1) {
            PQclear(op->res);
            op->res = r;
            return;
        }
        op->status = BACKEND_NOTFOUND;
        break;
    case OP_STEP:
        if (s == PGRES_TUPLES_OK) {
            struct backend_iter *it = op->it;
            if (PQnfields(r) != 2) {
                op->status = BACKEND_CORRUPT;
                snprintf(op->err, sizeof op->err, "unexpected result shape");
                break;
            }
            PQclear(it->batch);
            it->batch = r;
            it->row = 0;
            it->eof = PQntuples(r) < (int)it->st->batch_rows;
            return;
        }
        break;
    case OP_APPLY: {
        const struct pg_stmt *st = &op->stmts[op->qi < op->nstmts ? op->qi : 0];
        if (st->kind == ST_EXISTS && PQntuples(r) == 1 && pg_int8(r, 0, 0) == 0)
            op->created++;
        else if (st->kind == ST_INSERT_ABSENT)
            op->created++;
        else if (st->kind == ST_DELETE && st->count)
            op->removed += (size_t)strtoul(PQcmdTuples(r), NULL, 10);
        break;
    }
    case OP_ROLLBACK:
        break;
    }
    PQclear(r);
}

/* Serves the cursor's next buffered row into call; 1, or 0 at the end. */
static int pg_iter_serve(struct backend_iter *it, struct backend_call *call)
{
    if (!it->batch || it->row >= PQntuples(it->batch))
        return 0;
    call->key = PQgetvalue(it->batch, it->row, 0);
    call->key_len = (size_t)PQgetlength(it->batch, it->row, 0);
    call->val = PQgetvalue(it->batch, it->row, 1);
    call->val_len = (size_t)PQgetlength(it->batch, it->row, 1);
    it->row++;
    return 1;
}

/* The pipeline sync of op arrived: the op is over on this connection
   (retried when a serialization failure allows), completed, and the
   connection goes back to the pool or to its cursor. */
static void pg_finish(struct pg_conn *c, struct pg_op *op)
{
    struct backend_store *st = c->st;
    c->op = NULL;
    op->conn = NULL;
    if (op->kind == OP_ROLLBACK)
        c->holder = NULL;
    c->state = c->holder ? PGC_HELD : PGC_IDLE;
    if (op->kind == OP_APPLY && op->retry && op->retries < PG_RETRIES) {
        op->retries++;
        int rc = pg_send(c, op);
        if (rc < 0)
            pg_fail_as(op, rc);
        pg_drain(st);
        return;
    }
    if (op->kind == OP_GET && op->status == BACKEND_OK) {
        if (!op->res) {
            op->status = BACKEND_NOTFOUND;
        } else {
            op->call->val = PQgetvalue(op->res, 0, 0);
            op->call->val_len = (size_t)PQgetlength(op->res, 0, 0);
        }
    }
    if (op->kind == OP_STEP) {
        struct backend_iter *it = op->it;
        if (op->status == BACKEND_OK) {
            op->status = pg_iter_serve(it, op->call);
        } else {
            it->broken = op->status;
            snprintf(it->err, sizeof it->err, "%s", op->err);
        }
    }
    pg_complete(op);
    pg_drain(st);
}

/* Reads what the connection has: results of its op, or (idle) the news
   that the server closed it. */
static void pg_conn_pump(struct pg_conn *c, unsigned ready)
{
    if ((ready & BACKEND_FD_WRITE) || (c->events & BACKEND_FD_WRITE)) {
        int fl = PQflush(c->pg);
        if (fl < 0 || pg_watch(c, fl ? BACKEND_FD_READ | BACKEND_FD_WRITE : BACKEND_FD_READ) < 0) {
            pg_conn_lost(c, 0, PQerrorMessage(c->pg));
            return;
        }
    }
    if (!PQconsumeInput(c->pg) || PQstatus(c->pg) == CONNECTION_BAD) {
        pg_conn_lost(c, 0, PQerrorMessage(c->pg));
        return;
    }
    while (c->state == PGC_BUSY && !PQisBusy(c->pg)) {
        struct pg_op *op = c->op;
        PGresult *r = PQgetResult(c->pg);
        if (!r) {
            if (!op->seen)
                break;
            op->qi++;
            op->seen = 0;
            continue;
        }
        if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            pg_finish(c, op);
            break;
        }
        op->seen = 1;
        pg_result(op, r);
    }
}

/* Host fd callback for a connection. */
static void pg_conn_io(void *arg, unsigned ready)
{
    struct pg_conn *c = arg;
    struct backend_store *st = c->st;
    pg_enter(st);
    if (c->state == PGC_CONNECTING)
        pg_connect_step(c);
    else if (c->state != PGC_DOWN)
        pg_conn_pump(c, ready);
    pg_leave(st);
}

/* Host timer: an op ran out of time (queued: nothing was attempted;
   running: its connection is dropped). */
static void pg_op_timeout(void *arg)
{
    struct pg_op *op = arg;
    struct backend_store *st = op->st;
    op->timer = NULL;
    pg_enter(st);
    if (op->conn) {
        char m[80];
        snprintf(m, sizeof m, "no answer within %u ms", st->timeout_ms);
        pg_conn_lost(op->conn, 1, m);
    } else {
        struct pg_op **pp = &st->queue;
        while (*pp && *pp != op)
            pp = &(*pp)->next;
        if (*pp) {
            *pp = op->next;
            if (!*pp)
                st->queue_tail = pp;
            pg_fail(op, BACKEND_UNAVAILABLE, "no database connection within %u ms",
                    st->timeout_ms);
        }
    }
    pg_leave(st);
}

/* ---- methods ---- */

/* Runs a new op: on a free connection now, or queued for one. Returns
   BACKEND_PENDING, or a failure (the op is then freed, its call's err
   set). */
static int pg_start(struct backend_store *st, struct pg_op *op)
{
    struct backend_call *call = op->call;
    int rc = BACKEND_PENDING;
    if (st->outage) {
        snprintf(call->err, sizeof call->err, "%s", st->outage_err);
        rc = BACKEND_UNAVAILABLE;
    } else {
        struct pg_conn *c = NULL;
        for (unsigned i = 0; i < st->pool_size && !c; i++)
            if (st->conns[i].state == PGC_IDLE && pg_idle_ok(&st->conns[i]))
                c = &st->conns[i];
        if (c) {
            int s = pg_send(c, op);
            if (s < 0) {
                snprintf(call->err, sizeof call->err, "%s", op->err);
                rc = s;
            }
        } else {
            op->next = NULL;
            *st->queue_tail = op;
            st->queue_tail = &op->next;
            pg_kick(st);
        }
    }
    if (rc != BACKEND_PENDING) {
        pg_op_free(op);
        return rc;
    }
    op->timer = st->host->timer_add(st->host->arg, st->timeout_ms, pg_op_timeout, op);
    return BACKEND_PENDING;
}

/* Allocates an op for call. */
static struct pg_op *pg_op_new(struct backend_store *st, enum pg_kind kind,
                               struct backend_call *call)
{
    struct pg_op *op = calloc(1, sizeof *op);
    if (!op) {
        snprintf(call->err, sizeof call->err, "out of memory");
        return NULL;
    }
    op->st = st;
    op->kind = kind;
    op->call = call;
    return op;
}

/* get_v2: SELECT v ... WHERE k = $1; the value is borrowed from the kept
   result until done() returns. */
static int pg_get_v2(struct backend_store *st, const void *key, size_t key_len,
                     struct backend_call *call)
{
    if (!key_len || key_len > 65536) {
        snprintf(call->err, sizeof call->err, "bad key length %zu", key_len);
        return BACKEND_INVALID;
    }
    if (key_len > PG_MAX_KEY)           /* cannot have been stored */
        return BACKEND_NOTFOUND;
    struct pg_op *op = pg_op_new(st, OP_GET, call);
    if (!op)
        return BACKEND_NOMEM;
    op->key = key;
    op->key_len = key_len;
    return pg_start(st, op);
}

/* Plans an apply's statements (check, then write; see the file comment). */
static int pg_plan(struct pg_op *op, int want_counts)
{
    op->stmts = malloc(2 * op->n * sizeof *op->stmts);
    if (!op->stmts)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < op->n; i++) {
        enum backend_expect e = op->cond ? op->cond[i].expect : BACKEND_EXPECT_ANY;
        int put = op->w[i].op == BACKEND_PUT;
        struct pg_stmt *s = op->stmts;
        switch (e) {
        case BACKEND_EXPECT_ABSENT:
            if (put) {
                s[k++] = (struct pg_stmt){ ST_INSERT_ABSENT, i, 0 };
                continue;
            }
            s[k++] = (struct pg_stmt){ ST_PLACEHOLDER, i, 0 };
            s[k++] = (struct pg_stmt){ ST_DELETE, i, 0 };
            continue;
        case BACKEND_EXPECT_PRESENT:
            s[k++] = (struct pg_stmt){ ST_CHECK_PRESENT, i, 0 };
            break;
        case BACKEND_EXPECT_VERSION:
            s[k++] = (struct pg_stmt){ ST_CHECK_VERSION, i, 0 };
            break;
        default:
            if (want_counts && put)
                s[k++] = (struct pg_stmt){ ST_EXISTS, i, 0 };
            break;
        }
        s[k++] = (struct pg_stmt){ put ? ST_UPSERT : ST_DELETE, i, want_counts };
    }
    op->nstmts = k;
    return 0;
}

/* apply_v2: the writes and their checks as one pipelined transaction. */
static int pg_apply_v2(struct backend_store *st, const struct backend_write *w,
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
    for (size_t i = 0; i < n; i++) {
        int bad = !w[i].key_len || w[i].key_len > 65536 ||
                  (w[i].op != BACKEND_PUT && w[i].op != BACKEND_DELETE) ||
                  (w[i].op == BACKEND_PUT && w[i].val_len > 8u * 1024 * 1024) ||
                  (cond && (cond[i].expect < BACKEND_EXPECT_ANY ||
                            cond[i].expect > BACKEND_EXPECT_VERSION));
        if (bad) {
            snprintf(call->err, sizeof call->err, "bad write %zu", i);
            return BACKEND_INVALID;
        }
        if (w[i].key_len > PG_MAX_KEY) {
            snprintf(call->err, sizeof call->err, "key of write %zu is %zu bytes; the postgres "
                     "backend stores keys of at most %d bytes", i, w[i].key_len, PG_MAX_KEY);
            return BACKEND_INVALID;
        }
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

/* Byte order of backend.h: memcmp, the shorter prefix first. */
static int pg_keycmp(const void *a, size_t al, const void *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

/* iter_open: remembers the bounds; nothing is sent. */
static int pg_iter_open(struct backend_store *st, const void *start, size_t start_len,
                        const void *end, size_t end_len, struct backend_iter **out,
                        char *err, size_t errlen)
{
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
    if (it->broken)
        return it->broken;
    if (pg_keycmp(key, key_len, it->start, it->start_len) < 0) {
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
static int pg_iter_next_v2(struct backend_iter *it, struct backend_call *call)
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

/* Runs one schema statement synchronously; returns its SQLSTATE class
   ("" when it succeeded). */
static int pg_exec(PGconn *pg, const char *sql, PGresult **out, char *state, size_t statelen)
{
    PGresult *r = PQexec(pg, sql);
    ExecStatusType s = PQresultStatus(r);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
        if (out)
            *out = r;
        else
            PQclear(r);
        return 0;
    }
    const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    snprintf(state, statelen, "%s", st ? st : "");
    PQclear(r);
    return -1;
}

/* Creates the tables when missing and checks the schema version (at open,
   synchronously). Concurrent first starts of several front ends may
   collide on CREATE TABLE IF NOT EXISTS; that is retried. */
static int pg_schema(PGconn *pg, char *err, size_t errlen)
{
    char ins[200], state[8] = "", m[160];
    snprintf(ins, sizeof ins, "INSERT INTO tabled_meta (name, value) VALUES ('schema_version', %d) "
             "ON CONFLICT (name) DO NOTHING", PG_SCHEMA_VERSION);
    const char *ddl[] = {
        "CREATE TABLE IF NOT EXISTS tabled_meta (name text PRIMARY KEY, value bigint NOT NULL)",
        "CREATE TABLE IF NOT EXISTS tabled_kv (k bytea PRIMARY KEY, v bytea NOT NULL, "
        "ver bigint NOT NULL)",
        ins,
    };
    for (int attempt = 0;; attempt++) {
        size_t i = 0;
        while (i < sizeof ddl / sizeof *ddl && pg_exec(pg, ddl[i], NULL, state, sizeof state) == 0)
            i++;
        if (i == sizeof ddl / sizeof *ddl)
            break;
        int race = !strcmp(state, "23505") || !strcmp(state, "42P07") || !strcmp(state, "40001");
        if (!race || attempt >= 3) {
            pg_err(err, errlen, "creating the schema failed (%s): %s", state,
                   pg_msg(PQerrorMessage(pg), m, sizeof m));
            return BACKEND_IOERR;
        }
    }
    PGresult *r = NULL;
    if (pg_exec(pg, "SELECT value FROM tabled_meta WHERE name = 'schema_version'", &r, state,
                sizeof state) < 0) {
        pg_err(err, errlen, "reading the schema version failed: %s",
               pg_msg(PQerrorMessage(pg), m, sizeof m));
        return BACKEND_IOERR;
    }
    long long v = PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    if (v > PG_SCHEMA_VERSION) {
        pg_err(err, errlen, "the database's tabled schema is version %lld, newer than this "
               "tabled's (%d): upgrade tabled, or use another database", v, PG_SCHEMA_VERSION);
        return BACKEND_INVALID;
    }
    if (v < 1) {
        pg_err(err, errlen, "the database's tabled schema version row is missing or bad");
        return BACKEND_CORRUPT;
    }
    return BACKEND_OK;
}

/* Finds "name=value" in params; the value or NULL. */
static const char *pg_param(const char *const *params, const char *name)
{
    size_t n = strlen(name);
    for (; params && *params; params++)
        if (!strncmp(*params, name, n) && (*params)[n] == '=')
            return *params + n + 1;
    return NULL;
}

/* open: options, a synchronous first connection and the schema; that
   connection becomes the pool's first. */
static int pg_open(const struct backend_options *o, struct backend_store **out, char *err,
                   size_t errlen)
{
    uint64_t pool = 4, timeout = 30, batch = 256;
    if (!o->host || !o->host->timer_add || !o->host->fd_watch) {
        pg_err(err, errlen, "the postgres backend needs the server's event loop (no host hooks)");
        return BACKEND_INVALID;
    }
    if (bfs_param_size(o->params, "pool-size", 1, PG_MAX_POOL, &pool) < 0 ||
        bfs_param_size(o->params, "timeout", 1, 3600, &timeout) < 0 ||
        bfs_param_size(o->params, "batch-rows", 1, 100000, &batch) < 0) {
        pg_err(err, errlen, "bad pool-size (1-%d), timeout (1-3600 s) or batch-rows (1-100000)",
               PG_MAX_POOL);
        return BACKEND_INVALID;
    }
    const char *ci = pg_param(o->params, "conninfo");
    struct backend_store *st = calloc(1, sizeof *st);
    if (!st || !(st->conninfo = strdup(ci ? ci : ""))) {
        free(st);
        pg_err(err, errlen, "out of memory");
        return BACKEND_NOMEM;
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
    char m[160];
    PGconn *pg = PQconnectdb(st->conninfo);
    int rc = BACKEND_OK;
    if (!pg || PQstatus(pg) != CONNECTION_OK) {
        pg_err(err, errlen, "cannot connect to the database: %s",
               pg ? pg_msg(PQerrorMessage(pg), m, sizeof m) : "out of memory");
        rc = BACKEND_IOERR;
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
    free(st->conninfo);
    st->conninfo = NULL;
    if (st->depth)
        st->closed = 1;
    else
        free(st);
}

const struct backend_ops backend_postgres_ops = {
    .version = 2,
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
};
