/* registry.h - the backends tabled itself holds, and the lookup that finds
 * one by name or loads a plug-in. Private to tabled's build: plug-ins see
 * only the interface (backends/backend.h, backends/checks.h). */
#ifndef TABLED_REGISTRY_H
#define TABLED_REGISTRY_H
#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"

/* Finds a built-in backend by name, or loads a plug-in when name contains a
   '/' (a path to a .so). Returns NULL with a message in err on failure. */
const struct backend_ops *backend_lookup(const char *name, char *err, size_t errlen);

/* The read-only variant of built-in backend ops that serves the secondary
   endpoint from replicas of the primary's database (postgres: its
   replica-conninfo options; backends/postgres.h), or NULL when ops has
   none. */
const struct backend_ops *backend_replica_of(const struct backend_ops *ops);

/* For a store st opened through a backend_replica_of vtable (ops): 1 with
   *unix_s, the time (Unix seconds) before which every write of the
   primary is readable there; 0 when no replica can tell now (none
   reachable); -1 when ops is no such vtable. Never waits. */
int backend_replica_sync_time(const struct backend_ops *ops, struct backend_store *st,
                              int64_t *unix_s);

struct buf;
/* Renders the metrics of the stores of a built-in backend (ops) into b
   (Prometheus text): postgres's pools, arg a struct postgres_pools
   (backends/postgres.h). NULL when the backend has none. */
typedef void (*backend_metrics_fn)(void *arg, struct buf *b);
backend_metrics_fn backend_metrics_of(const struct backend_ops *ops);

/* Built-in vtables. */
extern const struct backend_ops backend_memory_ops;
extern const struct backend_ops backend_leveldb_ops;
extern const struct backend_ops backend_flatfile_ops;
/* postgres is in a module (backends/pg_module.h): backend_lookup loads
   it; its vtable is not linked into tabled. */

#endif
