/* pg_module.c - the entry point of the postgres module (pg_module.h):
 * the only symbol backends/postgres.so exports. */
#include "backends/pg_module.h"

#include "backends/postgres.h"
#include "core/version.h"

/* The module's pieces, for the registry that loaded it. */
__attribute__((visibility("default"))) const struct pg_module *tabled_postgres_module(void)
{
    static const struct pg_module m = {
        .version = TABLED_VERSION,
        .sizes = PG_MODULE_ABI_SIZES,
        .ops = &backend_postgres_ops,
        .replica_ops = &backend_postgres_replica_ops,
        .opts = &backend_postgres_opts,
        .render_metrics = postgres_render_metrics,
        .replica_sync_time = pg_replica_sync_time,
    };
    return &m;
}
