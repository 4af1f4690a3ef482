/* pg_metrics.c - the postgres backend's connection pool as metrics: its
 * size, what its connections are doing, the calls waiting for one, and
 * the failed connection attempts by cause (a PostgreSQL server out of
 * connection slots among them). The server shows them on the admin
 * listener's /metrics (doc/scale-out.md, Connections). */
#include "backends/postgres.h"

#include "backends/pg.h"
#include "core/buf.h"

/* Fills *out from the pool's current state and counters. */
void postgres_pool_stats(const struct backend_store *st, struct postgres_pool_stats *out)
{
    *out = (struct postgres_pool_stats){.size = st->pool_size, .waits = st->waits};
    for (unsigned i = 0; i < st->pool_size; i++) {
        switch (st->conns[i].state) {
        case PGC_IDLE: out->idle++; break;
        case PGC_BUSY: out->busy++; break;
        case PGC_HELD: out->held++; break;
        case PGC_CONNECTING: out->connecting++; break;
        case PGC_DOWN: break;
        }
    }
    for (const struct pg_op *op = st->queue; op; op = op->next)
        out->waiting++;
    out->failed_unreachable = st->connect_failed[PG_WHY_UNREACHABLE];
    out->failed_no_slot = st->connect_failed[PG_WHY_NO_SLOT];
    out->failed_auth = st->connect_failed[PG_WHY_AUTH];
    out->failed_other = st->connect_failed[PG_WHY_OTHER];
    out->outage = st->outage;
}

/* metrics_add_series renderer (arg: the struct backend_store): the
   tabled_postgres_* families in the Prometheus text format. */
void postgres_render_metrics(void *arg, struct buf *b)
{
    struct postgres_pool_stats s;
    postgres_pool_stats(arg, &s);
    buf_puts(b, "# HELP tabled_postgres_pool_size Connections the pool may open (pool-size).\n"
                "# TYPE tabled_postgres_pool_size gauge\n");
    buf_printf(b, "tabled_postgres_pool_size %u\n", s.size);
    buf_puts(b, "# HELP tabled_postgres_pool_connections Pool connections by state: idle, busy "
                "(a call running), held (a scan's transaction between pages), connecting.\n"
                "# TYPE tabled_postgres_pool_connections gauge\n");
    buf_printf(b, "tabled_postgres_pool_connections{state=\"idle\"} %u\n"
                  "tabled_postgres_pool_connections{state=\"busy\"} %u\n"
                  "tabled_postgres_pool_connections{state=\"held\"} %u\n"
                  "tabled_postgres_pool_connections{state=\"connecting\"} %u\n",
               s.idle, s.busy, s.held, s.connecting);
    buf_puts(b, "# HELP tabled_postgres_pool_waiting Calls waiting for a free connection now.\n"
                "# TYPE tabled_postgres_pool_waiting gauge\n");
    buf_printf(b, "tabled_postgres_pool_waiting %u\n", s.waiting);
    buf_puts(b, "# HELP tabled_postgres_pool_waits_total Calls that found every connection "
                "busy and waited for one.\n# TYPE tabled_postgres_pool_waits_total counter\n");
    buf_printf(b, "tabled_postgres_pool_waits_total %llu\n", (unsigned long long)s.waits);
    buf_puts(b, "# HELP tabled_postgres_connect_failures_total Failed connection attempts by "
                "cause (no_slot: the server's max_connections was reached).\n"
                "# TYPE tabled_postgres_connect_failures_total counter\n");
    buf_printf(b, "tabled_postgres_connect_failures_total{cause=\"unreachable\"} %llu\n"
                  "tabled_postgres_connect_failures_total{cause=\"no_slot\"} %llu\n"
                  "tabled_postgres_connect_failures_total{cause=\"auth\"} %llu\n"
                  "tabled_postgres_connect_failures_total{cause=\"other\"} %llu\n",
               (unsigned long long)s.failed_unreachable, (unsigned long long)s.failed_no_slot,
               (unsigned long long)s.failed_auth, (unsigned long long)s.failed_other);
    buf_puts(b, "# HELP tabled_postgres_reachable 0 while no connection to the database can "
                "be made (calls fail with 503 and are retried by clients).\n"
                "# TYPE tabled_postgres_reachable gauge\n");
    buf_printf(b, "tabled_postgres_reachable %d\n", !s.outage);
}
