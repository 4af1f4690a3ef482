/* pg_replica.c - the postgres backend opened read-only over hot standbys
 * (backend_postgres_replica_ops, postgres.h): what the secondary endpoint
 * reads (doc/scale-out.md, Secondary endpoint on a read replica).
 *
 * Replicas. Every replica-conninfo option names one hot standby of the
 * primary's database; one of them is in use at a time (all the pool's
 * connections and the poll go to it), so that what a read sees and the
 * sync time the poll found come from the same server. When no connection
 * to it can be made, the next one is tried (pg_replica_next, from the
 * pool's connection failure; and from the poll's), round after round.
 * Switching drops the idle connections to the old one and forgets its
 * sync time.
 *
 * The store is opened without connecting: the first read, or the first
 * poll, connects, on the event loop. No schema is created or upgraded;
 * the poll checks the version it finds (tabled_meta), and a replica
 * without tabled's schema, or with another version, has no sync time.
 * The catalogue's purge steps never run on it (store/catalog.h,
 * catalog_open_reader) and every write is refused (postgres.c).
 *
 * Sync time. A poll every PG_REPLICA_POLL_MS on a connection of its own
 * (plain libpq, not pipelined) asks the replica:
 *   1. pg_is_in_recovery(), pg_last_xact_replay_timestamp() (the commit
 *      time of the last transaction replayed) and the schema version;
 *   2. pg_control_checkpoint()'s checkpoint_time: the start of the last
 *      checkpoint the standby replayed (its restartpoint). A commit
 *      acknowledged before a checkpoint starts is in the WAL before the
 *      checkpoint's redo point, so replayed. This gives a sync time
 *      after a restart of the standby while the primary is idle (no
 *      transaction replayed since). Every role may call it by default; if
 *      an administrator revoked that, only the replay time counts.
 * The sync time is the larger of the two, rounded down to the second: a
 * write acknowledged before it is readable on the replica. Nothing later
 * is claimed (the primary's time of the last streamed message would be
 * later when all that was received is replayed, but this is left out:
 * the receiver's bookkeeping does not say that every commit acknowledged
 * before it was received). The answer is trusted for
 * PG_REPLICA_FRESH_MS after the poll that found it; a poll that fails or
 * goes unanswered for PG_REPLICA_POLL_TIMEOUT_MS drops it at once. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/pg.h"
#include "backends/postgres.h"
#include "core/clock.h"

#define PG_REPLICA_POLL_MS 1000
#define PG_REPLICA_POLL_TIMEOUT_MS 3000
#define PG_REPLICA_FRESH_MS 3500
#define PG_REPLICA_MAX 16
#define PG_REPLICA_PREFIX "replica-conninfo="
#define PG_REPLICA_LOG_EVERY_US (30 * 1000000ull)

enum poll_state { POLL_DOWN, POLL_CONNECTING, POLL_IDLE, POLL_QUERY, POLL_CHECKPOINT };

struct pg_replica {
    struct backend_store *st;
    char *ci[PG_REPLICA_MAX];        /* the replicas' connection strings */
    size_t n, cur;                   /* how many; the one in use */
    size_t tried;                    /* others tried since one answered */
    uint64_t gen;                    /* switches so far */
    /* the poll's connection */
    PGconn *pg;
    void *watch;
    int fd;
    unsigned events;
    enum poll_state state;
    uint64_t pg_gen;                 /* gen it was made for */
    uint64_t sent_us;                /* when the running poll began */
    void *timer;                     /* the next poll */
    /* what the poll found */
    int in_recovery, schema_ok;
    int64_t replay_s;                /* -1: none replayed since start */
    uint64_t ok_us;                  /* poll that found a sync time (0: none) */
    int64_t sync_s;
    /* per replica: the last line logged about it and when (the same line
       is not repeated within PG_REPLICA_LOG_EVERY_US) */
    char last_log[PG_REPLICA_MAX][400];
    uint64_t last_log_us[PG_REPLICA_MAX];
};

static void poll_io(void *arg, unsigned ready);

/* Logs a line about replica i; the same line as the last one about it
   only after PG_REPLICA_LOG_EVERY_US (all of them down: the poll and the
   pool go round them every second). */
static void rp_log(struct pg_replica *r, size_t i, enum backend_log_level lv, const char *fmt,
                   ...)
{
    char m[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    uint64_t now = clock_mono_us();
    if (strcmp(m, r->last_log[i]) == 0 &&
        now - r->last_log_us[i] < PG_REPLICA_LOG_EVERY_US)
        return;
    snprintf(r->last_log[i], sizeof r->last_log[i], "%s", m);
    r->last_log_us[i] = now;
    if (r->st->log)
        r->st->log(lv, m);
    else
        fprintf(stderr, "postgres: %s\n", m);
}

/* Closes the poll's connection; the sync time it found stays (until it
   is no longer fresh). */
static void poll_drop(struct pg_replica *r)
{
    const struct backend_host *h = r->st->host;
    if (r->watch)
        h->fd_unwatch(h->arg, r->watch);
    PQfinish(r->pg);
    r->watch = NULL;
    r->pg = NULL;
    r->fd = -1;
    r->events = 0;
    r->state = POLL_DOWN;
}

/* Watches the poll's socket for events (afresh when libpq switched). */
static int poll_watch(struct pg_replica *r, unsigned events)
{
    const struct backend_host *h = r->st->host;
    int fd = PQsocket(r->pg);
    if (r->watch && fd != r->fd) {
        h->fd_unwatch(h->arg, r->watch);
        r->watch = NULL;
    }
    if (!r->watch) {
        if (fd < 0 || !(r->watch = h->fd_watch(h->arg, fd, events, poll_io, r)))
            return -1;
        r->fd = fd;
    } else if (events != r->events) {
        h->fd_modify(h->arg, r->watch, events);
    }
    r->events = events;
    return 0;
}

/* Makes replica i the one in use: new connections go there, idle ones to
   the old one close, its sync time is forgotten. */
static void rp_switch(struct pg_replica *r, size_t i)
{
    struct backend_store *st = r->st;
    char *ci = strdup(r->ci[i]);
    if (!ci)
        return;                         /* stays on the current one */
    free(st->conninfo);
    st->conninfo = ci;
    r->cur = i;
    r->gen++;
    r->ok_us = 0;
    for (unsigned k = 0; k < PG_MAX_POOL; k++)
        if (st->conns[k].state == PGC_IDLE)
            pg_conn_drop(&st->conns[k]);
    if (r->pg)
        poll_drop(r);
}

int pg_replica_next(struct backend_store *st)
{
    struct pg_replica *r = st->replica;
    if (!r || r->n < 2 || r->tried + 1 >= r->n)
        return 0;
    r->tried++;
    rp_switch(r, (r->cur + 1) % r->n);
    rp_log(r, (r->cur + r->n - 1) % r->n, BACKEND_LOG_WARN,
           "replica %zu of %zu cannot be reached; trying replica %zu",
           (r->cur + r->n - 1) % r->n + 1, r->n, r->cur + 1);
    return 1;
}

void pg_replica_up(struct backend_store *st)
{
    if (st->replica)
        st->replica->tried = 0;
}

/* The poll failed (why): no sync time until one succeeds; with other
   replicas and nothing alive in the pool, the next one is tried. A
   failure on a replica the store has left meanwhile only closes the
   poll's connection (the next tick connects to the one in use). */
static void poll_failed(struct pg_replica *r, const char *why)
{
    char m[300];
    if (r->pg_gen != r->gen) {          /* about a replica no longer in use */
        poll_drop(r);
        return;
    }
    rp_log(r, r->cur, BACKEND_LOG_WARN, "replica %zu of %zu: %s; the secondary's status is "
           "unavailable until it answers", r->cur + 1, r->n, pg_msg(why, m, sizeof m));
    poll_drop(r);
    r->ok_us = 0;
    if (r->n > 1 && !pg_live(r->st)) {
        r->tried = 0;                   /* the pool's round starts there too */
        rp_switch(r, (r->cur + 1) % r->n);
    }
}

/* Sends the poll's query of the current step. */
static void poll_send(struct pg_replica *r, enum poll_state step)
{
    static const char q1[] =
        "SELECT pg_is_in_recovery(),"
        " floor(extract(epoch FROM pg_last_xact_replay_timestamp()))::bigint,"
        " (SELECT value FROM tabled_meta WHERE name = 'schema_version')";
    static const char q2[] =
        "SELECT floor(extract(epoch FROM checkpoint_time))::bigint FROM pg_control_checkpoint()";
    if (!PQsendQuery(r->pg, step == POLL_QUERY ? q1 : q2)) {
        poll_failed(r, PQerrorMessage(r->pg));
        return;
    }
    r->state = step;
    if (step == POLL_QUERY)
        r->sent_us = clock_mono_us();
    int fl = PQflush(r->pg);
    if (fl < 0 || poll_watch(r, BACKEND_FD_READ | (fl ? BACKEND_FD_WRITE : 0)) < 0)
        poll_failed(r, PQerrorMessage(r->pg));
}

/* Reads the first query's row (recovery, replay time, schema version). */
static int poll_first(struct pg_replica *r, PGresult *res)
{
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        char m[300];
        if (strcmp(PQresultErrorField(res, PG_DIAG_SQLSTATE) ?
                   PQresultErrorField(res, PG_DIAG_SQLSTATE) : "", "42P01") == 0)
            snprintf(m, sizeof m, "no tabled database there (no table tabled_meta): check "
                     "its dbname and that it is a standby of the primary's database");
        else
            snprintf(m, sizeof m, "%s", PQresultErrorMessage(res));
        poll_failed(r, m);
        return -1;
    }
    r->in_recovery = PQgetvalue(res, 0, 0)[0] == 't';
    r->replay_s = PQgetisnull(res, 0, 1) ? -1 : strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    long long v = PQgetisnull(res, 0, 2) ? -1 : strtoll(PQgetvalue(res, 0, 2), NULL, 10);
    r->schema_ok = v == PG_SCHEMA_VERSION;
    if (!r->schema_ok)
        rp_log(r, r->cur, BACKEND_LOG_WARN, "replica %zu has tabled schema version %lld, this tabled "
               "reads version %d: the secondary's status is unavailable until the primary "
               "front end has upgraded it and the replica replayed that", r->cur + 1, v,
               PG_SCHEMA_VERSION);
    else if (!r->in_recovery)
        rp_log(r, r->cur, BACKEND_LOG_WARN, "replica %zu is not a standby (not in recovery): the "
               "secondary's status is unavailable; name hot standbys in replica-conninfo",
               r->cur + 1);
    return 0;
}

/* The poll is over: the sync time, when the replica is a standby with
   tabled's schema and has one. */
static void poll_done(struct pg_replica *r, int64_t checkpoint_s)
{
    r->state = POLL_IDLE;
    int64_t t = r->replay_s > checkpoint_s ? r->replay_s : checkpoint_s;
    if (!r->in_recovery || !r->schema_ok || t <= 0) {
        r->ok_us = 0;
        return;
    }
    if (!r->ok_us) {
        r->last_log[r->cur][0] = '\0';  /* its next failure is told at once */
        rp_log(r, r->cur, BACKEND_LOG_INFO, "replica %zu answers: the secondary is live",
               r->cur + 1);
    }
    r->sync_s = t;
    r->ok_us = clock_mono_us();
}

/* Reads the results that have arrived. */
static void poll_read(struct pg_replica *r)
{
    if (!PQconsumeInput(r->pg)) {
        poll_failed(r, PQerrorMessage(r->pg));
        return;
    }
    while (r->pg && !PQisBusy(r->pg)) {
        PGresult *res = PQgetResult(r->pg);
        if (!res) {                     /* the query's results are all in */
            if (r->state == POLL_QUERY)
                poll_send(r, POLL_CHECKPOINT);
            return;
        }
        if (r->state == POLL_QUERY) {
            int bad = poll_first(r, res);
            PQclear(res);
            if (bad)
                return;
        } else if (r->state == POLL_CHECKPOINT) {
            int64_t cp = -1;            /* not allowed: the replay time alone */
            if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
                !PQgetisnull(res, 0, 0))
                cp = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
            PQclear(res);
            while ((res = PQgetResult(r->pg)))
                PQclear(res);
            poll_done(r, cp);
            if (r->pg && poll_watch(r, BACKEND_FD_READ) < 0)
                poll_failed(r, "cannot watch the socket");
            return;
        } else {                        /* nothing was asked */
            PQclear(res);
        }
    }
}

/* Host callback: the poll's socket is ready. */
static void poll_io(void *arg, unsigned ready)
{
    struct pg_replica *r = arg;
    if (r->state == POLL_CONNECTING) {
        PostgresPollingStatusType ps = PQconnectPoll(r->pg);
        if (ps == PGRES_POLLING_OK) {
            r->state = POLL_IDLE;
            poll_send(r, POLL_QUERY);
        } else if (ps == PGRES_POLLING_READING || ps == PGRES_POLLING_WRITING) {
            if (poll_watch(r, ps == PGRES_POLLING_READING ? BACKEND_FD_READ
                                                          : BACKEND_FD_WRITE) < 0)
                poll_failed(r, "cannot watch the socket");
        } else {
            char m[400];
            poll_failed(r, pg_connect_why(r->pg, PQerrorMessage(r->pg), 1, m, sizeof m, NULL));
        }
        return;
    }
    if (ready & BACKEND_FD_WRITE) {
        int fl = PQflush(r->pg);
        if (fl < 0 || poll_watch(r, BACKEND_FD_READ | (fl ? BACKEND_FD_WRITE : 0)) < 0) {
            poll_failed(r, PQerrorMessage(r->pg));
            return;
        }
    }
    if (ready & BACKEND_FD_READ)
        poll_read(r);
}

/* Host timer: one poll (or a connection attempt for it), every
   PG_REPLICA_POLL_MS; a poll still running after
   PG_REPLICA_POLL_TIMEOUT_MS fails. */
static void poll_tick(void *arg)
{
    struct pg_replica *r = arg;
    const struct backend_host *h = r->st->host;
    r->timer = NULL;
    uint64_t now = clock_mono_us();
    if (r->pg && r->pg_gen != r->gen)
        poll_drop(r);
    if (r->state == POLL_CONNECTING || r->state == POLL_QUERY || r->state == POLL_CHECKPOINT) {
        if (now - r->sent_us > PG_REPLICA_POLL_TIMEOUT_MS * 1000ull)
            poll_failed(r, r->state == POLL_CONNECTING ? "connection attempt timed out"
                                                       : "no answer to the status query");
    } else if (r->state == POLL_IDLE) {
        poll_send(r, POLL_QUERY);
    } else {
        r->pg = PQconnectStart(r->st->conninfo);
        r->pg_gen = r->gen;
        r->sent_us = now;
        r->fd = -1;
        r->state = POLL_CONNECTING;
        if (r->pg)                      /* a standby's shutdown notice: no line */
            PQsetNoticeProcessor(r->pg, pg_notice, NULL);
        if (!r->pg || PQstatus(r->pg) == CONNECTION_BAD)
            poll_failed(r, r->pg ? PQerrorMessage(r->pg) : "out of memory");
        else if (poll_watch(r, BACKEND_FD_WRITE) < 0)
            poll_failed(r, "cannot watch the socket");
    }
    r->timer = h->timer_add(h->arg, PG_REPLICA_POLL_MS, poll_tick, r);
}

int pg_replica_sync_time(struct backend_store *st, int64_t *unix_s)
{
    struct pg_replica *r = st ? st->replica : NULL;
    if (!r || !r->ok_us || clock_mono_us() - r->ok_us > PG_REPLICA_FRESH_MS * 1000ull)
        return 0;
    *unix_s = r->sync_s;
    return 1;
}

int pg_replica_open(const struct backend_options *o, struct backend_store **out, char *err,
                    size_t errlen)
{
    int rc;
    struct backend_store *st = pg_store_new(o, &rc, err, errlen);
    if (!st)
        return rc;
    struct pg_replica *r = calloc(1, sizeof *r);
    if (!r) {
        free(st->conninfo);
        free(st);
        pg_err(err, errlen, "out of memory");
        return BACKEND_NOMEM;
    }
    r->st = st;
    r->fd = -1;
    st->replica = r;
    rc = BACKEND_OK;
    size_t plen = strlen(PG_REPLICA_PREFIX);
    for (size_t i = 0; o->params && o->params[i] && rc == BACKEND_OK; i++) {
        const char *p = o->params[i];
        if (strncmp(p, PG_REPLICA_PREFIX, plen) != 0)
            continue;
        if (r->n == PG_REPLICA_MAX) {
            pg_err(err, errlen, "replica-conninfo: at most %d replicas", PG_REPLICA_MAX);
            rc = BACKEND_INVALID;
        } else if ((rc = pg_conninfo_check("replica-conninfo", p + plen, err, errlen)) ==
                   BACKEND_OK && !(r->ci[r->n++] = strdup(p + plen))) {
            pg_err(err, errlen, "out of memory");
            rc = BACKEND_NOMEM;
        }
    }
    if (rc == BACKEND_OK && r->n == 0) {
        pg_err(err, errlen, "the read-only store needs replica-conninfo");
        rc = BACKEND_INVALID;
    }
    char *ci = rc == BACKEND_OK ? strdup(r->ci[0]) : NULL;
    if (rc == BACKEND_OK && !ci) {
        pg_err(err, errlen, "out of memory");
        rc = BACKEND_NOMEM;
    }
    if (rc == BACKEND_OK && !(r->timer = st->host->timer_add(st->host->arg, 0, poll_tick, r))) {
        pg_err(err, errlen, "out of memory");
        rc = BACKEND_NOMEM;
    }
    if (rc != BACKEND_OK) {
        free(ci);
        pg_replica_close(st);
        free(st->conninfo);
        free(st);
        return rc;
    }
    free(st->conninfo);
    st->conninfo = ci;
    *out = st;
    return BACKEND_OK;
}

void pg_replica_close(struct backend_store *st)
{
    struct pg_replica *r = st->replica;
    if (!r)
        return;
    if (r->timer)
        st->host->timer_cancel(st->host->arg, r->timer);
    poll_drop(r);
    for (size_t i = 0; i < r->n; i++)
        free(r->ci[i]);
    free(r);
    st->replica = NULL;
}
