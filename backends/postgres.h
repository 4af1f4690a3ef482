/* postgres.h - the "postgres" backend's vtable (backends/postgres.c), built
 * only when configure found libpq (HAVE_LIBPQ). */
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

struct buf;
/* Renders the pool's metrics (tabled_postgres_*) into b in the Prometheus
   text format; arg is the struct backend_store. For metrics_add_series. */
void postgres_render_metrics(void *arg, struct buf *b);

#endif
