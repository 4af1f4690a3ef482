/* keys.h - backend key encoding whose byte order is the service's order.
 *
 * The whole server shares one ordered keyspace:
 *     't' ACCOUNT 0x00 lower(TABLE)             -> table row (store/tables.c)
 *     'p' ACCOUNT                               -> service properties
 *     'e' be64(TABLE_ID) PK' 0x00 RK'           -> entity (entity_encode value)
 *     'd' be64(TABLE_ID)                        -> purge record of a deleted
 *                                                  table (store/purge.h)
 *     'n' "tableid"                             -> the next table id, on
 *                                                  stores shared by several
 *                                                  front ends (store/tables.h)
 * where PK' and RK' are the keys in an order-preserving form of UTF-8: the
 * service compares UTF-16 code units, so code points U+E000..U+FFFF (UTF-8
 * lead bytes 0xEE, 0xEF) must sort after supplementary characters (lead
 * bytes 0xF0..0xF4); the encoding rewrites those two lead bytes to 0xF5 and
 * 0xF6, which makes memcmp order equal UTF-16 order. Keys cannot contain
 * U+0000..U+001F, so 0x00 safely ends PK'. Table ids are never reused, so a
 * deleted table's name can be re-created at once. */
#ifndef TABLED_KEYS_H
#define TABLED_KEYS_H
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/buf.h"

#define KEY_TAG_TABLE 't'
#define KEY_TAG_PROPS 'p'
#define KEY_TAG_ENTITY 'e'
#define KEY_TAG_PURGE 'd'
#define KEY_TAG_COUNTER 'n'

/* Appends the order-preserving form of UTF-8 s (no terminator). */
void keys_put_string(struct buf *b, const char *s, size_t n);
/* Inverse of keys_put_string into arena memory (NUL-terminated). */
char *keys_get_string(struct arena *a, const uint8_t *p, size_t n, size_t *outlen);

/* 't' account 0x00 lower(table) */
void keys_table(struct buf *b, const char *account, const char *table, size_t table_len);
/* 't' account 0x00 : prefix of all table rows of an account. */
void keys_table_prefix(struct buf *b, const char *account);
void keys_props(struct buf *b, const char *account);
/* 'd' id: the purge record of deleted table id. */
void keys_purge(struct buf *b, uint64_t table_id);
/* 'n' "tableid": the table id counter of a shared store. */
void keys_table_id_counter(struct buf *b);
/* 'e' id PK' 0x00 RK' */
void keys_entity(struct buf *b, uint64_t table_id, const char *pk, size_t pk_len,
                 const char *rk, size_t rk_len);
/* 'e' id: prefix of every entity of a table. */
void keys_entity_table_prefix(struct buf *b, uint64_t table_id);
/* 'e' id PK' 0x00: prefix of every entity of a partition. */
void keys_entity_partition_prefix(struct buf *b, uint64_t table_id, const char *pk, size_t pk_len);
/* Smallest key greater than every key starting with prefix (prefix with
 * its last byte incremented, carrying); in place. Returns 0, or -1 if the
 * prefix is all 0xFF (no upper bound). */
int keys_prefix_end(struct buf *b);
/* Splits an entity key into table id, PK, RK (arena copies, decoded). */
int keys_entity_decode(struct arena *a, const void *key, size_t len, uint64_t *table_id,
                       const char **pk, size_t *pk_len, const char **rk, size_t *rk_len);

#endif
