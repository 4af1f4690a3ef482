/* pg_pool.c - the postgres backend's connections and calls on the event
 * loop: a pool of non-blocking libpq connections (each in pipeline mode,
 * its socket watched through the host's fd hooks), the FIFO of calls
 * waiting for one, connection attempts with outage and backoff, per-call
 * timeouts, and delivery of completed calls (done) at the end of each host
 * callback. See postgres.c for the design. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/pg.h"

static void pg_conn_io(void *arg, unsigned ready);

static void pg_reconnect(void *arg);

/* Writes a message into a caller's err buffer (may be NULL). */
void pg_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* libpq's message without its trailing newline, for err strings. */
const char *pg_msg(const char *m, char *buf, size_t len)
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

/* Classifies a failed connection attempt's libpq message (what a person
   can act on: the server is not there, it has no free slot, it refuses
   the credentials) into buf, naming the server; returns buf. */
const char *pg_connect_why(PGconn *pg, const char *why, unsigned pool, char *buf, size_t len,
                           enum pg_why *kind)
{
    enum pg_why k = PG_WHY_OTHER;
    char m[200];
    pg_msg(why, m, sizeof m);
    const char *host = pg ? PQhost(pg) : NULL, *port = pg ? PQport(pg) : NULL;
    char at[160];
    snprintf(at, sizeof at, "%s:%s", host && *host ? host : "(default host)",
             port && *port ? port : "(default port)");
    if (strstr(m, "too many clients") || strstr(m, "connection slots are reserved")) {
        k = PG_WHY_NO_SLOT;
        snprintf(buf, len, "PostgreSQL at %s has no free connection slot (%s): raise "
                 "max_connections on the server or lower pool-size (now %u) on the front ends "
                 "that share it", at, m, pool);
    } else if (strstr(m, "authentication failed") || strstr(m, "no pg_hba.conf entry") ||
               strstr(m, "password") || (strstr(m, "role \"") && strstr(m, "does not exist"))) {
        k = PG_WHY_AUTH;
        snprintf(buf, len, "PostgreSQL at %s refuses the credentials (%s): check user and "
                 "password in conninfo and the server's pg_hba.conf", at, m);
    } else if (strstr(m, "Connection refused") || strstr(m, "No such file or directory") ||
             strstr(m, "could not translate host name") || strstr(m, "unreachable") ||
             strstr(m, "No route to host") || strstr(m, "timed out") ||
             strstr(m, "timeout expired") || strstr(m, "starting up") ||
             strstr(m, "shutting down") || strstr(m, "recovery mode")) {
        k = PG_WHY_UNREACHABLE;
        snprintf(buf, len, "PostgreSQL at %s refuses connections; is it running? (%s)", at, m);
    } else {
        snprintf(buf, len, "cannot connect to PostgreSQL at %s: %s", at, m);
    }
    if (kind)
        *kind = k;
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

/* Logs a failed connection attempt's message as a warning, at most one
   line per PG_LOG_EVERY_S seconds; the next line that passes says how
   many were left out meanwhile. */
static void pg_log_limited(struct backend_store *st, const char *m)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (st->limit_logged && ts.tv_sec - st->limit_at < PG_LOG_EVERY_S) {
        st->limit_suppressed++;
        return;
    }
    if (st->limit_suppressed)
        pg_log(st, BACKEND_LOG_WARN, "%s (%u similar lines suppressed)", m,
               st->limit_suppressed);
    else
        pg_log(st, BACKEND_LOG_WARN, "%s", m);
    st->limit_logged = 1;
    st->limit_at = ts.tv_sec;
    st->limit_suppressed = 0;
}

/* libpq notice processor: notices (CREATE TABLE IF NOT EXISTS's
   "already exists, skipping") are not worth a log line. */
void pg_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* ---- op lifetime and delivery ---- */

/* Frees an op (its kept result too); cancels its timeout. */
void pg_op_free(struct pg_op *op)
{
    while (op->riders) {                /* close(): the group goes whole */
        struct pg_op *r = op->riders;
        op->riders = r->rnext;
        pg_op_free(r);
    }
    if (op->timer)
        op->st->host->timer_cancel(op->st->host->arg, op->timer);
    PQclear(op->res);
    free(op->stmts);
    free(op->first);
    free(op->before);
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
void pg_complete(struct pg_op *op)
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
    /* a multi-get's riders complete before it: their values are borrowed
       from its result, which goes when it is delivered */
    while (op->riders) {
        struct pg_op *r = op->riders;
        op->riders = r->rnext;
        r->rnext = NULL;
        if (op->status != BACKEND_OK) {
            r->status = op->status;
            snprintf(r->err, sizeof r->err, "%s", op->err);
        }
        pg_complete(r);
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
void pg_fail_as(struct pg_op *op, int status)
{
    op->status = status;
    pg_complete(op);
}

/* ---- connections ---- */

/* Number of connections alive or being made. */
unsigned pg_live(struct backend_store *st)
{
    unsigned n = 0;
    for (unsigned i = 0; i < st->pool_size; i++)
        n += st->conns[i].state != PGC_DOWN;
    return n;
}

/* Watches a connection's socket for events (re-registering when libpq
   switched sockets, as it may while connecting). */
int pg_watch(struct pg_conn *c, unsigned events)
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
void pg_conn_drop(struct pg_conn *c)
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
    c->prepared = 0;                    /* a new connection has none */
    c->prep_failed = 0;
}


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
        (op->kind == OP_MGET || (op->kind == OP_STEP && op->fresh))) {
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

/* Takes queued multi-gets out of the queue to ride on op, a multi-get
   about to be sent: one statement ("kp = ANY" of every key) answers them
   all, each from the rows of its own keys (pg_finish). When every
   connection is busy, point reads pile up in the queue; sending them
   together costs the database one statement, one snapshot and one
   round trip instead of one each. At most PG_COALESCE_OPS ops and
   PG_COALESCE_KEYS keys (beyond op's own) ride; the other ops keep
   their places; the scan stops after PG_COALESCE_SCAN of them. Each
   rider keeps its own timeout, which fires later than op's (it was
   queued after op, and finds nothing to do then): op's timeout fails
   them all. */
void pg_coalesce(struct backend_store *st, struct pg_op *op)
{
    size_t ops = 1, keys = op->nmget;
    struct pg_op **tail = &op->riders;
    for (struct pg_op *r = op->riders; r; r = r->rnext) {   /* a resent group */
        ops++;
        keys += r->nmget;
        tail = &r->rnext;
    }
    struct pg_op **pp = &st->queue;
    for (unsigned seen = 0; *pp && ops < PG_COALESCE_OPS && seen < PG_COALESCE_SCAN; seen++) {
        struct pg_op *r = *pp;
        if (r->kind != OP_MGET || keys + r->nmget > op->nmget + PG_COALESCE_KEYS) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;                  /* out of the queue */
        r->next = NULL;
        r->rnext = NULL;
        *tail = r;
        tail = &r->rnext;
        ops++;
        keys += r->nmget;
    }
    if (!*pp)                           /* the queue's last op may have gone */
        st->queue_tail = pp;
}

/* Gives queued ops to free connections (in order). */
void pg_drain(struct backend_store *st)
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
        if (op->kind == OP_MGET)         /* gets too: see pg_op */
            pg_coalesce(st, op);
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
    char m[400];
    enum pg_why kind;
    pg_connect_why(c->pg, why, st->pool_size, m, sizeof m, &kind);
    st->connect_failed[kind]++;
    pg_conn_drop(c);
    if (pg_live(st)) {
        /* the pool could not grow (no free slot on the server, most
           often): worth a line, at most one per PG_LOG_EVERY_S */
        pg_log_limited(st, m);
        return;
    }
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
    if (pg_replica_next(st)) {          /* a read-only store: another replica */
        pg_connect_start(c);
        return;
    }
    if (!st->outage) {
        st->limit_logged = 0;           /* an outage's start is always told */
        pg_log_limited(st, m);
    }
    st->outage = 1;
    snprintf(st->outage_err, sizeof st->outage_err, "%.255s", m);
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
    pg_replica_up(st);
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
void pg_connect_start(struct pg_conn *c)
{
    struct backend_store *st = c->st;
    c->pg = PQconnectStart(st->conninfo);
    c->state = PGC_CONNECTING;
    c->prepared = 0;
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
void pg_kick(struct backend_store *st)
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
            if (op->skip)
                op->skip--;             /* a prepare's */
            else
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
        if (op->skip)
            pg_prep_result(c, op, r);
        else
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
void pg_op_timeout(void *arg)
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

/* Runs a new op: on a free connection now, or queued for one. Returns
   BACKEND_PENDING, or a failure (the op is then freed, its call's err
   set). */
int pg_start(struct backend_store *st, struct pg_op *op)
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
            st->waits++;
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
struct pg_op *pg_op_new(struct backend_store *st, enum pg_kind kind, struct backend_call *call)
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
