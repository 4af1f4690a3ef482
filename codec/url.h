/* url.h - percent-decoding, query strings and the service's URL encoding. */
#ifndef TABLED_URL_H
#define TABLED_URL_H
#include <stddef.h>

#include "core/arena.h"
#include "core/buf.h"

/* Percent-decodes s into arena memory (NUL-terminated). plus_as_space turns
 * '+' into ' ' (query values). Returns NULL for a bad %-escape or when the
 * result is not well-formed UTF-8. */
char *url_decode(struct arena *a, const char *s, size_t n, int plus_as_space, size_t *outlen);

/* Appends s percent-encoding every byte that is not an RFC 3986 pchar
 * (doc/protocol.md, Key encoding in URLs: keeps A-Z a-z 0-9 - . _ ~ ! $ & ' ( ) * + , ; = : @). */
void url_encode_pchar(struct buf *b, const char *s, size_t n);
/* Appends TABLE(PartitionKey='PK',RowKey='RK') with quotes doubled and
 * percent-encoded as the service emits it in Location and odata.id. */
void url_entity_path(struct buf *b, const char *table, const char *pk, size_t pk_len,
                     const char *rk, size_t rk_len);

struct query_param {
    const char *name;    /* decoded, NUL-terminated */
    const char *value;   /* decoded ('+' as space), NUL-terminated */
    size_t value_len;
};

/* A memo of recent query strings and their parse (an SDK sends the same
 * query text again and again): its owner's (the service's), not the
 * process's. url_memo_new aborts when out of memory; free takes NULL. */
struct url_memo;
struct url_memo *url_memo_new(void);
void url_memo_free(struct url_memo *memo);
/* Splits and decodes a raw query string, through memo when not NULL.
 * Returns 0, or -1 when an escape or the UTF-8 is malformed. */
int url_parse_query(struct url_memo *memo, struct arena *a, const char *q, size_t n,
                    struct query_param **out, size_t *count);
/* First parameter named name (exact match), or NULL. */
const struct query_param *url_query_get(const struct query_param *p, size_t n, const char *name);

#endif
