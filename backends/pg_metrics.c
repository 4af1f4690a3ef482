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

/* One family's HELP and TYPE lines. */
static void pgm_family(struct buf *b, const char *name, const char *type, const char *help)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* metrics_add_series renderer (arg: a struct postgres_pools): the
   tabled_postgres_* families in the Prometheus text format, a series per
   pool. */
void postgres_render_metrics(void *arg, struct buf *b)
{
    const struct postgres_pools *pools = arg;
    struct postgres_pool_stats s[2];
    const char *role[2] = {"primary", "replica"};
    int n = 0;
    if (pools->primary)
        postgres_pool_stats(pools->primary, &s[n++]);
    else
        role[0] = "replica";
    if (pools->replica)
        postgres_pool_stats(pools->replica, &s[n++]);
    pgm_family(b, "tabled_postgres_pool_size", "gauge",
               "Connections the pool may open (pool-size).");
    for (int i = 0; i < n; i++)
        buf_printf(b, "tabled_postgres_pool_size{role=\"%s\"} %u\n", role[i], s[i].size);
    pgm_family(b, "tabled_postgres_pool_connections", "gauge",
               "Pool connections by state: idle, busy (a call running), held (a scan's "
               "transaction between pages), connecting.");
    for (int i = 0; i < n; i++)
        buf_printf(b, "tabled_postgres_pool_connections{role=\"%s\",state=\"idle\"} %u\n"
                      "tabled_postgres_pool_connections{role=\"%s\",state=\"busy\"} %u\n"
                      "tabled_postgres_pool_connections{role=\"%s\",state=\"held\"} %u\n"
                      "tabled_postgres_pool_connections{role=\"%s\",state=\"connecting\"} "
                      "%u\n",
                   role[i], s[i].idle, role[i], s[i].busy, role[i], s[i].held, role[i],
                   s[i].connecting);
    pgm_family(b, "tabled_postgres_pool_waiting", "gauge",
               "Calls waiting for a free connection now.");
    for (int i = 0; i < n; i++)
        buf_printf(b, "tabled_postgres_pool_waiting{role=\"%s\"} %u\n", role[i],
                   s[i].waiting);
    pgm_family(b, "tabled_postgres_pool_waits_total", "counter",
               "Calls that found every connection busy and waited for one.");
    for (int i = 0; i < n; i++)
        buf_printf(b, "tabled_postgres_pool_waits_total{role=\"%s\"} %llu\n", role[i],
                   (unsigned long long)s[i].waits);
    pgm_family(b, "tabled_postgres_connect_failures_total", "counter",
               "Failed connection attempts by cause (no_slot: the server's max_connections "
               "was reached).");
    for (int i = 0; i < n; i++)
        buf_printf(b, "tabled_postgres_connect_failures_total{role=\"%s\",cause=\"unreachable\"} "
                      "%llu\n"
                      "tabled_postgres_connect_failures_total{role=\"%s\",cause=\"no_slot\"} "
                      "%llu\n"
                      "tabled_postgres_connect_failures_total{role=\"%s\",cause=\"auth\"} %llu\n"
                      "tabled_postgres_connect_failures_total{role=\"%s\",cause=\"other\"} "
                      "%llu\n",
                   role[i], (unsigned long long)s[i].failed_unreachable, role[i],
                   (unsigned long long)s[i].failed_no_slot, role[i],
                   (unsigned long long)s[i].failed_auth, role[i],
                   (unsigned long long)s[i].failed_other);
    pgm_family(b, "tabled_postgres_reachable", "gauge",
               "0 while no connection to the database can be made (calls fail with 503 and "
               "are retried by clients).");
    for (int i = 0; i < n; i++)
        buf_printf(b, "tabled_postgres_reachable{role=\"%s\"} %d\n", role[i], !s[i].outage);
}
