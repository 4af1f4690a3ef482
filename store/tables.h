/* tables.h - the table catalogue: table rows in the backend plus an
 * in-memory cache of them (tables are few; every entity request looks its
 * table up, so this is a hash lookup, not a backend read).
 *
 * A table row lives at keys_table(account, lower(name)); its value is
 *     u8 version (=1), be64 table id, varint name length, name (original
 *     casing), varint ACL length, ACL bytes (opaque here; format in protocol/acl.h).
 * Table ids grow and are never reused, so a table's entities (keyed by id)
 * can never leak into a later table of the same name. */
#ifndef TABLED_TABLES_H
#define TABLED_TABLES_H
#include <stddef.h>
#include <stdint.h>

#include "store/kv.h"
#include "core/buf.h"

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
void tables_free(struct table_cache *tc);

/* Case-insensitive lookup; NULL when the table does not exist. It keeps
 * the table found last, to answer the next lookup of it at once. */
const struct table_info *tables_find(struct table_cache *tc, const char *account,
                                     const char *name, size_t name_len);
/* A fresh id for a new table. */
uint64_t tables_next_id(struct table_cache *tc);
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
