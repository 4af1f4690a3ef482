/* dump.h - "tabled export" and "tabled import": an account (or one table)
 * to and from a portable JSON-lines file, working directly on a backend's
 * store (the server of that store must be stopped; see dump.c), or from
 * a running server's admin listener (GET /export, tools/dump_serve.c).
 *
 * File format (one JSON object per line, UTF-8):
 *   {"tabled-export":1,"version":"0.1.0"}                     first line
 *   {"account":A,"service-properties":BASE64}                 stored bytes
 *   {"account":A,"table":NAME,"acl":BASE64}                   one per table
 *   {"account":A,"table":NAME,"ticks":N,"entity":ENTRY}       one per entity
 * ENTRY is the entity as the service's OData JSON with minimal metadata
 * (odata.etag, PartitionKey, RowKey, Timestamp, and "@odata.type" beside
 * every value whose type JSON cannot tell), N its Timestamp in 100 ns
 * ticks (the ETag is derived from it, so both survive the round trip). */
#ifndef TABLED_DUMP_H
#define TABLED_DUMP_H

#include <stddef.h>

#include "core/account.h"

/* The store a tool opens, named by tabled's own options (--config FILE,
 * --backend, --data, --backend-option, --durability). server/main.c reads
 * those options for the tool, as it does for the server: the tools never
 * see the application's configuration. */
struct dump_store {
    const char *backend;              /* built-in name or plug-in path */
    const char *data_dir;
    const char *const *params;        /* "name=value", NULL-terminated */
    enum durability durability;
};

/* Reads tabled's store options in argv[0..argc) into *st, whose strings
 * the callee keeps valid until the tool returns. Returns 0; 1 when it
 * printed --help or --version; -1 with a message in err. */
typedef int (*dump_store_args)(int argc, char **argv, struct dump_store *st, char *err,
                               size_t errlen);

/* argv[0] is "export" or "import"; store_args reads the store options.
 * Returns the process exit status. */
int dump_main(int argc, char **argv, dump_store_args store_args);

#endif
