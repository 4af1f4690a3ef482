/* pg_module.h - the postgres backend as a module of its own
 * (backends/postgres.so, installed in tabled's library directory).
 *
 * libpq and the libraries it pulls in (Kerberos, LDAP, GnuTLS, ...) cost
 * about 3 MiB of resident memory in every process that links them, used
 * or not (doc/performance.md, Idle footprint). So the postgres backend is
 * not linked into tabled: the registry (backends/registry.c) loads this
 * module with dlopen when --backend postgres is chosen, and asks it for
 * the one entry point below. The module is built from the same tree as
 * the server and is refused unless both were (PG_MODULE_ABI). Not the
 * plug-in interface (backends/backend.h): the module also hands over the
 * server-side pieces of the built-in backend (metrics, replicas). */
#ifndef TABLED_PG_MODULE_H
#define TABLED_PG_MODULE_H
#include <stdint.h>

#include "backends/backend.h"
#include "backends/bopts.h"

struct buf;

/* The module's file name, and the symbol it exports. */
#define PG_MODULE_FILE "postgres.so"
#define PG_MODULE_SYMBOL "tabled_postgres_module"

/* What a module and the server that loads it must agree on: the version
 * and the layouts they share. */
#define PG_MODULE_ABI_SIZES \
    ((unsigned)(sizeof(struct backend_ops) * 7 + sizeof(struct bopt_desc) * 5 + \
                sizeof(struct opt) * 3))

struct pg_module {
    const char *version;            /* TABLED_VERSION of its build */
    unsigned sizes;                 /* PG_MODULE_ABI_SIZES of its build */
    const struct backend_ops *ops;          /* backend_postgres_ops */
    const struct backend_ops *replica_ops;  /* backend_postgres_replica_ops */
    const struct bopt_desc *opts;           /* backend_postgres_opts */
    /* postgres_render_metrics: arg is a struct postgres_pools */
    void (*render_metrics)(void *arg, struct buf *b);
    /* pg_replica_sync_time */
    int (*replica_sync_time)(struct backend_store *st, int64_t *unix_s);
};

/* The module's entry point (PG_MODULE_SYMBOL). */
const struct pg_module *tabled_postgres_module(void);

#endif
