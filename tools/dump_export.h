/* dump_export.h - the export file's lines (format in tools/dump.h), made
 * in bounded steps from one store cursor. Both `tabled export` on a
 * stopped store and the admin listener's GET /export of a running server
 * use it, so the two write the same file. */
#ifndef TABLED_DUMP_EXPORT_H
#define TABLED_DUMP_EXPORT_H
#include <stddef.h>

#include "store/kv.h"
#include "core/buf.h"

struct dump_export;

/* Starts an export of kv (account and table filters may be NULL; not
 * copied: they must outlive the export). live: the store may be written
 * while the export runs (the server's GET /export); 0 when nothing writes
 * to it (tabled export of a stopped store). NULL with a message on
 * error. */
struct dump_export *dump_export_new(struct kv *kv, const char *account, const char *table,
                                    int live, char *err, size_t errlen);
/* Appends the header line, the service properties and the tables (with
 * their ACLs) to out, and opens the snapshot (store/snap.h) the entities
 * are read from: everything the export holds is as of this call, whatever
 * is written after it. 0, -1 with a message, or 1 when --table names no
 * table (err says so). Called once, before the first dump_export_step. */
int dump_export_catalogue(struct dump_export *x, struct buf *out, char *err, size_t errlen);
/* Appends entity lines to out until it holds at least max bytes or the
 * entities are done. 1: more to come, 0: done, -1 with a message. */
int dump_export_step(struct dump_export *x, struct buf *out, size_t max, char *err,
                     size_t errlen);
/* Tables and entities written so far. */
void dump_export_counts(const struct dump_export *x, unsigned long long *ntables,
                        unsigned long long *nentities);
/* What the snapshot kept of keys written while the export ran: keys, and
 * the bytes of their values in its temporary file (store/snap.h). */
void dump_export_kept(const struct dump_export *x, unsigned long long *keys,
                      unsigned long long *bytes);
/* Closes the cursors and frees x (NULL is fine). */
void dump_export_free(struct dump_export *x);

/* A running server's store, for GET /export (tools/dump_serve.c). */
struct dump_stream;
struct dump_source {
    struct kv *kv;
    struct dump_stream *running;   /* the export in progress, or NULL */
};
struct response_stream;
/* Starts the body of GET /export for src (a struct dump_source): the
 * store as of this call (store/snap.h), made in steps as the client takes
 * the data, across loop turns, on every backend. 0 with s filled; 404
 * when the table filter names no table; 503 while another export runs
 * (one at a time); 501 on a store whose calls complete later (kv_defers);
 * 500 with a message on error. */
int dump_serve_start(void *src, const char *account, const char *table,
                     struct response_stream *s, char *err, size_t errlen);

#endif
