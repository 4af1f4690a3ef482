/* catalog.h - the table catalogue of a store and its upkeep: table rows
 * (create, delete, ACL, lookups) through the store's writes, the queue of
 * deleted tables whose entities are still being removed (store/purge.h),
 * and the compaction after them (store/reclaim.h).
 *
 * The request pipeline asks for tables by name and gets struct table_info
 * (store/tables.h); it never writes a row itself. On a store one process
 * owns, the rows are cached (store/tables.h); on a store shared by several
 * front ends every lookup reads the row, and creates claim their id from
 * the shared counter (the rules in store/tables.h).
 *
 * Every function returns 0 (STORE_OK) or a store status (store.h). */
#ifndef TABLED_CATALOG_H
#define TABLED_CATALOG_H
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "store/store.h"
#include "store/tables.h"

struct catalog;
struct metrics;

/* Opens the catalogue of s: reads every table row and the deletions a
 * stop or crash interrupted (their ids stay taken). wake(arg) asks the
 * server for a catalog_step soon (a table was deleted, a compaction is
 * due). NULL with a message in err. */
struct catalog *catalog_open(struct store *s, void (*wake)(void *arg), void *arg, char *err,
                             size_t errlen);
/* A catalogue of s for reading only (the secondary endpoint's, over a
 * replica: store_replica_sync_time): nothing is read now, every lookup
 * reads the row (as on a shared store), and it has no purges or
 * compactions (nothing may be written there). Only catalog_table,
 * catalog_table_with, catalog_guess, catalog_known and catalog_shared
 * may be called on it. NULL when out of memory. */
struct catalog *catalog_open_reader(struct store *s);
void catalog_free(struct catalog *cat);
/* The metrics to keep the purge series of (NULL: none). */
void catalog_set_metrics(struct catalog *cat, struct metrics *m);
/* 1 when other front ends share the store (rows are read, not cached). */
int catalog_shared(const struct catalog *cat);

/* The table account/name: STORE_OK with *out (cached, or read into a on a
 * shared store), STORE_NOTFOUND, or a failure status (logged). */
int catalog_table(struct catalog *cat, struct arena *a, const char *account, const char *name,
                  size_t name_len, const struct table_info **out);
/* Shared stores: catalog_table and, in the same store call, the value
 * under key2 (built with the id catalog_guess gave): *val2 and *len2 copied
 * into a, *found2 1 or 0. The caller uses them only when (*out)->id is
 * the id it guessed. */
int catalog_table_with(struct catalog *cat, struct arena *a, const char *account,
                       const char *name, size_t name_len, const struct table_info **out,
                       const void *key2, size_t key2_len, void **val2, size_t *len2,
                       int *found2);
/* Shared stores: the id the table's row showed last (1 and *id), or 0. */
int catalog_guess(const struct catalog *cat, const char *account, const char *name,
                  size_t name_len, uint64_t *id);
/* 1 when this process's cache knows the table (a store of one process;
 * 0 on a shared store). */
int catalog_known(struct catalog *cat, const char *account, const char *name,
                  size_t name_len);

/* Creates table account/name with a fresh id (*id): STORE_OK,
 * STORE_CONFLICT when it exists, or a failure status (STORE_UNAVAILABLE
 * when creates of other front ends kept taking the id). */
int catalog_create(struct catalog *cat, const char *account, const char *name,
                   size_t name_len, uint64_t *id);
/* Deletes table account/name: its row goes and, in the same atomic
 * write, a record that its entities are to be removed, which the
 * background steps then do (so the answer takes the same time for a
 * table of any size). account_index (or -1) names the entity gauge.
 * STORE_OK, STORE_NOTFOUND (absent, or deleted or re-created meanwhile),
 * or a failure status. */
int catalog_delete(struct catalog *cat, int account_index, const char *account,
                   const char *name, size_t name_len);
/* Replaces the ACL of table t (as catalog_table gave it) of account:
 * STORE_OK, STORE_NOTFOUND when the table went away meanwhile, or a
 * failure status. */
int catalog_set_acl(struct catalog *cat, const struct table_info *t, const char *account,
                    const unsigned char *acl, size_t acl_len);
/* An import's table: the id of account/name (*id), creating it when
 * missing (*created 1); with set_acl its ACL becomes acl (a create sets it
 * too). A write that raced another is tried again from a fresh read.
 * STORE_OK or a status with a message in err. */
int catalog_import_table(struct catalog *cat, const char *account, const char *name,
                         const unsigned char *acl, size_t acl_len, int set_acl, uint64_t *id,
                         int *created, char *err, size_t errlen);

/* ---- upkeep (the server's background steps) ---- */

/* After a failed sync (a backend may drop the writes it covered) the
 * cache and the queue of deletions are read again from the store; only
 * when no request holds pointers into the cache (busy 0). */
void catalog_resync(struct catalog *cat, int busy);
/* Deleted tables whose entities are still being removed. */
size_t catalog_purges_pending(const struct catalog *cat);
/* One bounded step of removing them: the milliseconds after which to
 * call again (0: soon), or -1 when none is left. */
int catalog_purge_step(struct catalog *cat);
/* Shared stores: queues the deletions other front ends started (and
 * perhaps did not live to finish); looks at most every few seconds. */
void catalog_adopt(struct catalog *cat);

#endif
