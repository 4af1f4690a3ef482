/* registry.h - the backends tabled itself holds, and the lookup that finds
 * one by name or loads a plug-in. Private to tabled's build: plug-ins see
 * only the interface (backends/backend.h, backends/checks.h). */
#ifndef TABLED_REGISTRY_H
#define TABLED_REGISTRY_H
#include <stddef.h>

#include "backends/backend.h"

/* Finds a built-in backend by name, or loads a plug-in when name contains a
   '/' (a path to a .so). Returns NULL with a message in err on failure. */
const struct backend_ops *backend_lookup(const char *name, char *err, size_t errlen);

/* Built-in vtables. */
extern const struct backend_ops backend_memory_ops;
extern const struct backend_ops backend_leveldb_ops;
extern const struct backend_ops backend_flatfile_ops;
/* Only in a build with libpq (HAVE_LIBPQ). */
extern const struct backend_ops backend_postgres_ops;

#endif
