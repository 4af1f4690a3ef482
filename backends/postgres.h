/* postgres.h - the "postgres" backend's vtable (backends/postgres.c), built
 * only when configure found libpq (HAVE_LIBPQ). */
#ifndef TABLED_POSTGRES_H
#define TABLED_POSTGRES_H
#include "backends/backend.h"

/* Schema version this build creates and understands (tabled_meta row
   'schema_version'); a database with a newer one is refused at open. */
#define PG_SCHEMA_VERSION 2

extern const struct backend_ops backend_postgres_ops;

#endif
