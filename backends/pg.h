/* pg.h - internals shared by the postgres backend's files (not an
 * interface): backends/postgres.c (the vtable's methods), pg_pool.c
 * (connections, the wait queue, completion delivery, timeouts) and
 * pg_sql.c (the SQL each call sends and how its results are read, the
 * schema). See postgres.c for the design. */
#ifndef TABLED_PG_H
#define TABLED_PG_H
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"

#define PG_MAX_POOL 64
#define PG_RETRIES 5                    /* serialization failures retried */
#define PG_BACKOFF_MIN_MS 100
#define PG_BACKOFF_MAX_MS 2000
#define PG_CONNECT_MS 5000              /* a connection attempt, at most */
#define PG_LOG_EVERY_S 10               /* connection failures: a line at most */
/* Keys are stored split (see postgres.c): the primary key is (kp, kh),
   kp the first PG_KEY_PREFIX bytes of the key and kh a SHA-256 digest of
   the whole key when it is longer (empty otherwise), so that an index
   entry fits in a btree's limit (2704 bytes with its headers, a third of
   an 8 KiB page) however long the key; kr holds the rest of the key. */
#define PG_KEY_PREFIX 2600
#define PG_KEY_HASH 32
#define PG_OID_BYTEA 17
#define PG_OID_INT8 20
#define PG_OID_BYTEA_ARRAY 1001
/* Multi-gets waiting for a connection are sent together (pg_coalesce):
   at most this many ops, and keys in all (the first op's always go). */
#define PG_COALESCE_OPS 32
#define PG_COALESCE_KEYS 1024
#define PG_COALESCE_SCAN 256      /* queued ops looked at, at most */

enum pgc_state {
    PGC_DOWN,           /* no connection */
    PGC_CONNECTING,     /* PQconnectPoll in progress */
    PGC_IDLE,           /* free in the pool */
    PGC_HELD,           /* carries a cursor's transaction, nothing running */
    PGC_BUSY,           /* an op is running on it */
};

/* Why a connection attempt failed (pg_connect_why), as counted for the
   metrics (postgres_pool_stats). */
enum pg_why {
    PG_WHY_UNREACHABLE, /* not running, not reachable, starting or stopping */
    PG_WHY_NO_SLOT,     /* max_connections reached ("too many clients") */
    PG_WHY_AUTH,        /* credentials or pg_hba.conf refused */
    PG_WHY_OTHER,
    PG_WHY_N
};

/* A get is a multi-get of one key (OP_MGET with single set), so that
   queued point reads of every kind coalesce (pg_coalesce). */
enum pg_kind { OP_MGET, OP_STEP, OP_APPLY, OP_ROLLBACK };

/* Statements an apply sends (see pg_plan): every check first, then every
   write. */
enum pg_stmt_kind {
    ST_CHECK_ABSENT,    /* inserts an empty placeholder row (a later write
                           of the array replaces or deletes it); error
                           22012 when the key exists */
    ST_INSERT_ABSENT,   /* the same with the write's value: an ABSENT put
                           that is the only write of its key (no write
                           statement follows) */
    ST_CHECK_PRESENT,   /* error 22012 unless the key exists (locks it) */
    ST_CHECK_VERSION,   /* error 22012 unless it exists with that ver */
    ST_FAIL,            /* error 22012: contradicts an earlier ABSENT check
                           of the same key, which passed */
    ST_EXISTS,          /* count of rows with the key (want_counts; locks
                           it when present) */
    ST_UPSERT,
    ST_DELETE,
    ST_INSERT_ONLY,     /* an apply's only statement, an ABSENT put: a plain
                           INSERT ... ON CONFLICT DO NOTHING, whose row
                           count (0) tells a failed expectation; nothing
                           else is in its transaction to abort */
};

struct pg_stmt {
    enum pg_stmt_kind kind;
    size_t w;           /* index of its write */
};

/* A key as the columns it is stored in: kp (its first PG_KEY_PREFIX
   bytes, or all of a shorter key), kr (the rest, empty for a short key)
   and kh (SHA-256 of the whole key when it is longer than PG_KEY_PREFIX,
   else empty). kp and kr point into the key, never NULL (an empty
   parameter is "", not SQL NULL). */
struct pg_key {
    const char *kp, *kr, *kh;
    int kp_len, kr_len, kh_len;
    unsigned char hash[PG_KEY_HASH];
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
    /* get: its one key, answered into call->val */
    struct backend_mget one;
    int single;
    PGresult *res;                  /* kept until done() returns (get,
                                       get_multi) */
    /* get_multi: the caller's keys, answered from res's rows */
    struct backend_mget *mget;
    size_t nmget;
    /* get_multi: queued multi-gets sent in this op's statement and
       answered from its result (pg_coalesce); riders link by rnext */
    struct pg_op *riders, *rnext;
    /* apply */
    const struct backend_write *w;
    const struct backend_cond *cond;
    size_t n;
    struct pg_stmt *stmts;
    size_t nstmts;
    size_t *first;                  /* per write: first write of its key */
    unsigned char *before;          /* per first write: its key existed
                                       before the call (want_counts) */
    int retries;
    int fresh;                      /* OP_STEP: began the cursor's transaction */
    int resent;                     /* a read already moved to a new connection */
    int connect_failed;             /* saw a connection attempt fail while queued */
    size_t skip;                    /* prepare results still to come before
                                       query 0's (pg_send) */
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

/* The statements sent prepared (named "t0".."t9", prepared on a
   connection the first time one of its ops needs them; see pg_sql.c). */
enum pg_prep {
    PP_MGET, PP_CHECK_ABSENT, PP_INSERT_ABSENT, PP_CHECK_PRESENT, PP_CHECK_VERSION,
    PP_FAIL, PP_EXISTS, PP_UPSERT, PP_DELETE, PP_INSERT_ONLY, PP_COUNT
};

struct pg_conn {
    struct backend_store *st;
    PGconn *pg;
    unsigned prepared;              /* bit (1 << enum pg_prep): sent on pg */
    int prep_failed;                /* a prepare failed: dropped after its op */
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
    int limit_logged;               /* pg_log_limited wrote a line at limit_at */
    long long limit_at;             /* its monotonic second */
    unsigned limit_suppressed;      /* lines left out since */
    uint64_t waits;                 /* calls that found every connection
                                       busy and queued */
    uint64_t connect_failed[PG_WHY_N];  /* failed attempts, by cause */
    int depth;                      /* host callbacks on the stack */
    int closed;                     /* close() ran inside a callback */
    struct pg_replica *replica;     /* read-only over hot standbys
                                       (pg_replica.c); NULL: the primary */
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

/* ---- pg_pool.c ---- */

/* Writes a message into a caller's err buffer (may be NULL). */
void pg_err(char *err, size_t errlen, const char *fmt, ...);

/* libpq's message without its trailing newline, for err strings. */
const char *pg_msg(const char *m, char *buf, size_t len);

/* Classifies a failed connection attempt's libpq message (why) into buf:
   server not there, no free connection slot, credentials refused, or
   other; names the server (pg may be NULL). Stores the class in *kind
   when kind is not NULL. Returns buf. */
const char *pg_connect_why(PGconn *pg, const char *why, unsigned pool, char *buf, size_t len,
                           enum pg_why *kind);

/* libpq notice processor: notices (CREATE TABLE IF NOT EXISTS's
   "already exists, skipping") are not worth a log line. */
void pg_notice(void *arg, const char *message);

/* Frees an op (its kept result too); cancels its timeout. */
void pg_op_free(struct pg_op *op);

/* Records an op's completion; it is delivered from the event loop. */
void pg_complete(struct pg_op *op);

/* Completes an op with a failure whose message op->err already holds. */
void pg_fail_as(struct pg_op *op, int status);

/* Number of connections alive or being made. */
unsigned pg_live(struct backend_store *st);

/* Watches a connection's socket for events (re-registering when libpq
   switched sockets, as it may while connecting). */
int pg_watch(struct pg_conn *c, unsigned events);

/* Closes a connection's socket and watches; the slot becomes PGC_DOWN. */
void pg_conn_drop(struct pg_conn *c);

/* Takes queued multi-gets out of the queue to ride on op, a multi-get
   about to be sent (see pg_coalesce in pg_pool.c). */
void pg_coalesce(struct backend_store *st, struct pg_op *op);

/* Gives queued ops to free connections (in order); starts connections
   when some are still waiting. */
void pg_drain(struct backend_store *st);

/* Starts connections while ops wait and the pool has room (none while in
   outage: the reconnect timer makes the next attempt). */
void pg_kick(struct backend_store *st);

/* Starts connecting slot c (asynchronously). */
void pg_connect_start(struct pg_conn *c);

/* Host timer: an op ran out of time (queued: nothing was attempted;
   running: its connection is dropped). */
void pg_op_timeout(void *arg);

/* Runs a new op: on a free connection now, or queued for one. Returns
   BACKEND_PENDING, or a failure (the op is then freed, its call's err
   set). */
int pg_start(struct backend_store *st, struct pg_op *op);

/* Allocates an op for call. */
struct pg_op *pg_op_new(struct backend_store *st, enum pg_kind kind, struct backend_call *call);

/* ---- pg_sql.c ---- */

/* Splits key into its columns (struct pg_key); k->kh points into k. */
void pg_key_split(const void *key, size_t len, struct pg_key *k);

/* Sends an op's queries and the pipeline sync on connection c (idle, or
   held by the op's cursor). Returns 0, or a failure status with op->err
   set (the connection is then dropped). */
int pg_send(struct pg_conn *c, struct pg_op *op);

/* Takes one result of query op->qi (consumes r unless it keeps it). */
void pg_result(struct pg_op *op, PGresult *r);

/* Takes the result of one of the prepares pg_send put before op's
   queries (consumes r): a failure fails op and marks c to be dropped. */
void pg_prep_result(struct pg_conn *c, struct pg_op *op, PGresult *r);

/* Serves the cursor's next buffered row into call; 1, or 0 at the end. */
int pg_iter_serve(struct backend_iter *it, struct backend_call *call);

/* The pipeline sync of op arrived: the op is over on this connection
   (retried when a serialization failure allows), completed, and the
   connection goes back to the pool or to its cursor. */
void pg_finish(struct pg_conn *c, struct pg_op *op);

/* Plans an apply's statements: all checks, then all writes (see there). */
int pg_plan(struct pg_op *op, int want_counts);

/* Creates the tables when missing and checks the schema version (at open,
   synchronously). Concurrent first starts of several front ends may
   collide on CREATE TABLE IF NOT EXISTS; that is retried. */
int pg_schema(PGconn *pg, char *err, size_t errlen);

/* ---- postgres.c ---- */

/* Checks a libpq connection string (what names the option in err): 0, or
   BACKEND_INVALID / BACKEND_NOMEM with err. */
int pg_conninfo_check(const char *what, const char *ci, char *err, size_t errlen);

/* A new store from o's options (the rows of postgres.c), connected to
   nothing yet; NULL with *rc and err on a bad option or no memory. */
struct backend_store *pg_store_new(const struct backend_options *o, int *rc, char *err,
                                   size_t errlen);

/* ---- pg_replica.c: the read-only store over hot standbys ---- */

/* open() of backend_postgres_replica_ops (see pg_replica.c). */
int pg_replica_open(const struct backend_options *o, struct backend_store **out, char *err,
                    size_t errlen);

/* The pool found no replica reachable (no connection alive and the last
   attempt failed): switches to the next replica not yet tried since one
   last answered, and returns 1 (try again now), or 0 (every one was
   tried: the caller declares the outage). Always 0 on a primary store. */
int pg_replica_next(struct backend_store *st);

/* A pool connection came up: a new round of replicas begins. */
void pg_replica_up(struct backend_store *st);

/* Stops the poll and frees the replica state (from close()). */
void pg_replica_close(struct backend_store *st);

#endif
