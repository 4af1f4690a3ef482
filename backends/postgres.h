/* postgres.h - the "postgres" backend's vtable (backends/postgres.c), built
 * only when configure found libpq (HAVE_LIBPQ), into the module postgres.so
 * (backends/pg_module.h). */
#ifndef TABLED_POSTGRES_H
#define TABLED_POSTGRES_H
#include <stdint.h>

#include "backends/backend.h"

/* Schema version this build creates and understands (tabled_meta row
   'schema_version'); a database with a newer one is refused at open. */
#define PG_SCHEMA_VERSION 2

extern const struct backend_ops backend_postgres_ops;

/* The connection pool of an open postgres store, for the metrics
   (backends/pg_metrics.c). Not part of the plug-in interface: the server
   asks it of the built-in backend only. */
struct postgres_pool_stats {
    unsigned size;              /* pool-size: connections it may open */
    unsigned idle;              /* connected, free */
    unsigned busy;              /* running a call */
    unsigned held;              /* carrying a scan's transaction */
    unsigned connecting;        /* being opened */
    unsigned waiting;           /* calls queued for a connection now */
    uint64_t waits;             /* calls that ever had to queue */
    uint64_t failed_unreachable;    /* failed attempts: server not there */
    uint64_t failed_no_slot;        /* ... max_connections reached */
    uint64_t failed_auth;           /* ... credentials refused */
    uint64_t failed_other;          /* ... anything else */
    int outage;                 /* no connection can be made now */
};

/* Fills *out for an open postgres store. */
void postgres_pool_stats(const struct backend_store *st, struct postgres_pool_stats *out);

/* The pools the metrics show: the primary's, and the replicas' when the
   secondary endpoint has them (NULL otherwise). */
struct postgres_pools {
    struct backend_store *primary;
    struct backend_store *replica;
};

struct buf;
/* Renders the pools' metrics (tabled_postgres_*, each series labelled
   role="primary" or role="replica") into b in the Prometheus text format;
   arg is a struct postgres_pools. For metrics_add_series. */
void postgres_render_metrics(void *arg, struct buf *b);

/* The same backend, read-only over the hot standbys that the
 * replica-conninfo options name (backends/pg_replica.c): what the
 * secondary endpoint reads. open() connects to nothing at once (the first
 * read, and a poll every second, do, on the event loop), creates nothing
 * and writes nothing; any write is refused. */
extern const struct backend_ops backend_postgres_replica_ops;

/* For a store opened through backend_postgres_replica_ops: 1 with
 * *unix_s, the time (Unix seconds, rounded down) before which every
 * commit of the primary is readable on the replica in use, as its last
 * poll (at most a few seconds old) found it: the larger of the replica's
 * last replayed commit time and its last restartpoint's time; 0 when no
 * replica answered such a poll lately (down, not a standby, or without
 * tabled's schema). Answers from memory: never waits. */
int pg_replica_sync_time(struct backend_store *st, int64_t *unix_s);

#endif
