/* tables.h - the table catalogue: table rows in the backend plus an
 * in-memory cache of them (tables are few; every entity request looks its
 * table up, so this is a hash lookup, not a backend read).
 *
 * A table row lives at keys_table(account, lower(name)); its value is
 *     u8 version (=1), be64 table id, varint name length, name (original
 *     casing), varint ACL length, ACL bytes (opaque here; format in codec/acl.h).
 * Table ids grow and are never reused, so a table's entities (keyed by id)
 * can never leak into a later table of the same name.
 *
 * Several front ends on one store (kv_shared(): BACKEND_CAP_SHARED). Any
 * of them may create or delete a table or change its ACL at any moment, so
 * the cache is not trusted there:
 *   - every lookup reads the table's row (tables_read: one kv_get per
 *     request that names a table; the row's value is small) into the
 *     request's arena; the cache is neither used nor kept current. A
 *     point read may read the row and its entity together
 *     (tables_read_with), its key built with the id the row showed last
 *     (tables_guess: the only thing the cache keeps there), which the row
 *     then confirms or refutes. Query
 *     Tables always lists the rows from the store.
 *   - the row's version (backend.h: its bytes 1..8) is the table id, so a
 *     delete or an ACL change expects BACKEND_EXPECT_VERSION(id): it
 *     cannot hit a table of the same name created meanwhile by another
 *     front end (it answers 404 instead).
 *   - ids come from one counter row ('n' "tableid" -> u8 1, be64 next id;
 *     its version is the next id). A create reads it (tables_claim_id),
 *     takes max(counter, this process's tables_next_id) and writes, in one
 *     atomic apply, the new row (expecting it absent) and the counter + 1
 *     (expecting the version read, or the counter absent). Two front ends
 *     that read the same counter cannot both succeed: the loser's apply
 *     conflicts on the counter and it claims again. So ids are unique
 *     across front ends and, as before, never reused.
 *   - a table created by one front end may have entities written by
 *     another that resolved it just before a delete: such entities are
 *     unreachable (their id has no row) and are left in the store (the
 *     start-up orphan scan of store/purge.h is skipped on shared stores,
 *     since another front end may be creating a table at that moment). */
#ifndef TABLED_TABLES_H
#define TABLED_TABLES_H
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/buf.h"

struct kv;
struct backend_cond;

struct table_info {
    uint64_t id;
    char *account;       /* owned by the cache */
    char *name;          /* original casing, owned by the cache */
    size_t name_len;
    unsigned char *acl;  /* stored access policies, opaque; owned */
    size_t acl_len;
};

struct table_cache;

/* Reads every table row of the store into a new cache. NULL on error. */
struct table_cache *tables_load(struct kv *kv,
                                char *err, size_t errlen);
/* An empty cache (a reader's: store/catalog.h, catalog_open_reader). */
struct table_cache *tables_empty(void);
void tables_free(struct table_cache *tc);

/* Case-insensitive lookup; NULL when the table does not exist. It keeps
 * the table found last, to answer the next lookup of it at once. */
const struct table_info *tables_find(struct table_cache *tc, const char *account,
                                     const char *name, size_t name_len);
/* A fresh id for a new table (one process's store). */
uint64_t tables_next_id(struct table_cache *tc);
/* Shared stores: reads the id counter; *id receives the id to take, and
 * key/val/cond (appended / set) the counter's write that takes it, to be
 * applied with the new table's row. 0 or a failure status (err). */
int tables_claim_id(struct table_cache *tc, struct kv *kv, uint64_t *id, struct buf *key,
                    struct buf *val, struct backend_cond *cond, char *err, size_t errlen);
/* Shared stores: reads the row of account/name from the store into out
 * (strings copied into a). 0, BACKEND_NOTFOUND, or a failure status (err;
 * BACKEND_CORRUPT for a row that does not decode). */
int tables_read(struct kv *kv, struct arena *a, const char *account, const char *name,
                size_t name_len, struct table_info *out, char *err, size_t errlen);
/* Shared stores: remembers the id account/name's row showed (a slot per
 * hash of the name, case folded; a later table in the slot replaces it). */
void tables_guess_note(struct table_cache *tc, const char *account, const char *name,
                       size_t name_len, uint64_t id);
/* Shared stores: the id account/name's row showed when last noted (1 and
 * *id), or 0. Only a guess: another front end may have deleted or
 * re-created the table since, and two names may share a slot, so a read
 * built on it must be confirmed by the row (tables_read_with). */
int tables_guess(const struct table_cache *tc, const char *account, const char *name,
                 size_t name_len, uint64_t *id);
/* Shared stores: tables_read, and in the same store call (one snapshot;
 * one round trip on a backend with get_multi_v2) the value under key2,
 * copied into a (*val2, *len2; *found2 1, or 0 when absent). For a read
 * whose key needs the table's id: the caller guesses the id, builds key2
 * with it and uses *val2 only if out->id is the id it guessed. Returns as
 * tables_read; *found2 is set only when it returns 0. */
int tables_read_with(struct kv *kv, struct arena *a, const char *account, const char *name,
                     size_t name_len, struct table_info *out, const void *key2,
                     size_t key2_len, void **val2, size_t *len2, int *found2, char *err,
                     size_t errlen);
/* Makes every later tables_next_id() greater than id (the id of a deleted
 * table whose entities are still being purged, store/purge.h). */
void tables_reserve_id(struct table_cache *tc, uint64_t id);
/* Encodes the row value of t into out (appends). */
void tables_encode(const struct table_info *t, struct buf *out);
/* Decodes a row value; name/acl point into val. 0 or -1. */
int tables_decode(const void *val, size_t len, uint64_t *id, const char **name,
                  size_t *name_len, const unsigned char **acl, size_t *acl_len);
/* Records a table in the cache (after its row was written). Copies all. */
const struct table_info *tables_add(struct table_cache *tc, const char *account,
                                    uint64_t id, const char *name, size_t name_len,
                                    const unsigned char *acl, size_t acl_len);
/* Forgets a table (after its row was deleted). */
void tables_remove(struct table_cache *tc, const char *account, const char *name,
                   size_t name_len);
/* Replaces the cached ACL of a table. */
void tables_set_acl(struct table_cache *tc, const struct table_info *t,
                    const unsigned char *acl, size_t acl_len);

#endif
