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

/* argv[0] is "export" or "import". Returns the process exit status. */
int dump_main(int argc, char **argv);

#endif
