/* keys.c - backend key encoding whose byte order is the service's order
 * (see keys.h for the layouts).
 *
 * UTF-8 byte order equals code point order; the service orders by UTF-16
 * code units, which differs only in that U+E000..U+FFFF sort after the
 * surrogate pairs of U+10000.. . In UTF-8 the bytes 0xEE and 0xEF only ever
 * appear as lead bytes of U+E000..U+FFFF, and 0xF5/0xF6 never appear at
 * all, so a plain byte substitution moves those characters after every
 * 4-byte sequence (lead 0xF0..0xF4) while keeping their relative order. */
#include "core/coding.h"
#include "store/keys.h"

#include <string.h>

/* Appends s with lead bytes 0xEE/0xEF rewritten to 0xF5/0xF6. */
void keys_put_string(struct buf *b, const char *s, size_t n)
{
    buf_reserve(b, n);
    unsigned char *out = (unsigned char *)b->data + b->len;
    const unsigned char *in = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = in[i];
        if (c == 0xEE)
            c = 0xF5;
        else if (c == 0xEF)
            c = 0xF6;
        out[i] = c;
    }
    b->len += n;
    b->data[b->len] = '\0';
}

/* Undoes keys_put_string into a NUL-terminated arena copy. */
char *keys_get_string(struct arena *a, const uint8_t *p, size_t n, size_t *outlen)
{
    char *s = arena_alloc(a, n + 1);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c == 0xF5)
            c = 0xEE;
        else if (c == 0xF6)
            c = 0xEF;
        s[i] = (char)c;
    }
    s[n] = '\0';
    if (outlen)
        *outlen = n;
    return s;
}

/* Table rows are keyed by the lower-cased name: lookups are case-insensitive
 * (doc/protocol.md, Tables and table names) and names are ASCII alphanumerics. */
void keys_table(struct buf *b, const char *account, const char *table, size_t table_len)
{
    keys_table_prefix(b, account);
    buf_reserve(b, table_len);
    for (size_t i = 0; i < table_len; i++) {
        char c = table[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        b->data[b->len++] = c;
    }
    b->data[b->len] = '\0';
}

/* 't' account 0x00: every table row of the account starts with it. */
void keys_table_prefix(struct buf *b, const char *account)
{
    buf_put_u8(b, KEY_TAG_TABLE);
    buf_puts(b, account);
    buf_put_u8(b, 0);
}

/* 'p' account: the account's service-properties row. */
void keys_props(struct buf *b, const char *account)
{
    buf_put_u8(b, KEY_TAG_PROPS);
    buf_puts(b, account);
}

/* 'd' be64(id): the purge record of a deleted table (store/purge.h). */
void keys_purge(struct buf *b, uint64_t table_id)
{
    buf_put_u8(b, KEY_TAG_PURGE);
    buf_put_be64(b, table_id);
}

void keys_table_id_counter(struct buf *b)
{
    buf_put_u8(b, KEY_TAG_COUNTER);
    buf_append(b, "tableid", 7);
}

/* 'e' be64(id): every entity of one table starts with it. */
void keys_entity_table_prefix(struct buf *b, uint64_t table_id)
{
    buf_put_u8(b, KEY_TAG_ENTITY);
    buf_put_be64(b, table_id);
}

/* 'e' be64(id) PK' 0x00: every entity of one partition starts with it. */
void keys_entity_partition_prefix(struct buf *b, uint64_t table_id, const char *pk, size_t pk_len)
{
    keys_entity_table_prefix(b, table_id);
    keys_put_string(b, pk, pk_len);
    buf_put_u8(b, 0);
}

/* 'e' be64(id) PK' 0x00 RK': one entity. The 0x00 separator sorts below
 * every byte a key can contain, so (PK, RK) order is lexicographic. */
void keys_entity(struct buf *b, uint64_t table_id, const char *pk, size_t pk_len,
                 const char *rk, size_t rk_len)
{
    keys_entity_partition_prefix(b, table_id, pk, pk_len);
    keys_put_string(b, rk, rk_len);
}

/* Turns a prefix into the exclusive upper bound of its range: drop trailing
 * 0xFF bytes, then increment the last remaining byte. */
int keys_prefix_end(struct buf *b)
{
    unsigned char *p = (unsigned char *)b->data;
    while (b->len > 0 && p[b->len - 1] == 0xFF)
        b->len--;
    if (b->len == 0) {
        if (b->data)
            b->data[0] = '\0';
        return -1;
    }
    p[b->len - 1]++;
    b->data[b->len] = '\0';
    return 0;
}

/* Parses 'e' be64(id) PK' 0x00 RK' back into its parts. Returns 0, or -1
 * when the key is not an entity key. */
int keys_entity_decode(struct arena *a, const void *key, size_t len, uint64_t *table_id,
                       const char **pk, size_t *pk_len, const char **rk, size_t *rk_len)
{
    const uint8_t *p = key;
    if (len < 10 || p[0] != KEY_TAG_ENTITY)
        return -1;
    uint64_t id = coding_get_be64(p + 1);
    const uint8_t *start = p + 9;
    const uint8_t *sep = memchr(start, 0, len - 9);
    if (!sep)
        return -1;
    size_t plen = (size_t)(sep - start);
    size_t rstart = 9 + plen + 1;
    if (table_id)
        *table_id = id;
    const char *s = keys_get_string(a, start, plen, pk_len);
    if (pk)
        *pk = s;
    s = keys_get_string(a, p + rstart, len - rstart, rk_len);
    if (rk)
        *rk = s;
    return 0;
}
