/* entity_json.h - OData JSON <-> struct entity (yajl), with validation.
 *
 * Parsing follows doc/protocol.md, Data model; Request bodies: type inference, @odata.type
 * annotations before or after the value, odata.* members and system-key
 * annotations ignored, Timestamp ignored, null properties skipped, every
 * limit of doc/protocol.md, Entity limits checked with the service's error code. Writing follows
 * doc/protocol.md, JSON payloads: member order and annotations per metadata level. */
#ifndef TABLED_ENTITY_JSON_H
#define TABLED_ENTITY_JSON_H
#include <stddef.h>

#include "core/jsonout.h"
#include "core/arena.h"
#include "core/buf.h"
#include "store/entity.h"
#include "codec/errors.h"

enum odata_level { ODATA_NOMETADATA = 0, ODATA_MINIMAL = 1, ODATA_FULL = 2 };

enum entity_parse_mode {
    ENTITY_PARSE_INSERT = 0,  /* PartitionKey and RowKey required in the body */
    ENTITY_PARSE_UPDATE = 1,  /* body keys optional (the URL names the entity) */
};

/* Parses body into *e (zeroed first). Names and keys are copied into the
 * arena (NUL-terminated); String (and other) values may point into body,
 * which must therefore outlive *e (a request body outlives its request).
 * With ENTITY_PARSE_UPDATE, body keys (when present) are still validated
 * and left in e->pk/e->rk, NULL when absent. Checks every per-property
 * limit, the 252-property limit and the 1 MiB size of what was parsed.
 * Returns TERR_NONE or the error to answer. */
enum terr entity_json_parse(struct arena *a, const char *body, size_t len,
                            enum entity_parse_mode mode, struct entity *e);

/* What a TERR_OutOfRangeInput of a body names, for the service's message
 * "The '{0}' parameter of value '{1}' is out of range." (errors.h,
 * terr_range_message): the key or property and its value as the message
 * shows it (a key as sent; a DateTime as .NET's invariant text). name is
 * NULL when the error names nothing (the generic message then). Pointers
 * into the body or the arena. */
struct entity_range {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};
/* entity_json_parse that also fills *range (zeroed first; may be NULL). */
enum terr entity_json_parse_range(struct arena *a, const char *body, size_t len,
                                  enum entity_parse_mode mode, struct entity *e,
                                  struct entity_range *range);

/* Validates a PartitionKey/RowKey value (from a body or a URL): ill-formed
 * UTF-8 -> TERR_InvalidInput; a forbidden character (doc/protocol.md, Key values) ->
 * TERR_OutOfRangeInput (a body's answer; callers checking URL keys map it);
 * more than 1024 UTF-16 units -> TERR_KeyValueTooLarge. (A body's keys are
 * checked for length before characters, so that the message naming a key
 * stays bounded; see entity_json.c.) */
enum terr entity_check_key(const char *s, size_t n);

/* Count (<= 252 custom) and size (<= 1 MiB, doc/protocol.md, Entity size) of a whole entity,
 * e.g. after a merge. */
enum terr entity_check_limits(const struct entity *e);

struct entity_json_ctx {
    enum odata_level level;
    const char *base;        /* "http://127.0.0.1:10002/devstoreaccount1", no trailing '/' */
    const char *account;     /* for odata.type "ACCOUNT.TABLE" */
    const char *table;       /* table name as stored (original casing) */
    const char *metadata;    /* odata.metadata value for single-entry
                                responses, NULL inside a feed */
    const char *const *select;  /* $select names, NULL = all properties */
    size_t nselect;
};

/* Appends one entry object: {"odata.metadata":..,"odata.etag":..,
 * "PartitionKey":..,"RowKey":..,"Timestamp":..,props...} per level. With a
 * select list only listed properties appear (PartitionKey/RowKey/Timestamp
 * only if listed; listed-but-absent ones as null), in stored order. */
void entity_json_write(struct buf *b, const struct entity *e, const struct entity_json_ctx *ctx);
/* The same entry written straight from a stored entity: its keys and its
 * value as entity_encode made it (Timestamp and properties are read in
 * place; nothing is decoded into a struct entity or allocated). The
 * output is byte for byte entity_json_write's for entity_decode of val.
 * 0, or -1 for a malformed value (b is then as it was). */
int entity_json_write_value(struct buf *b, const char *pk, size_t pk_len, const char *rk,
                            size_t rk_len, const void *val, size_t val_len,
                            const struct entity_json_ctx *ctx);

/* json_put_string (a JSON string literal, quotes included, escapes per
 * doc/protocol.md, JSON encoding) is core/jsonout.h's, included here. */

/* ETag text W/"datetime'2024-06-03T10%3A00%3A00.1234567Z'" into out
 * (>= 64 bytes); returns its length (doc/protocol.md, Timestamp and ETag). */
size_t entity_etag(int64_t ticks, char *out);
/* Parses an If-Match ETag of that form (':' or '%3A' accepted) into ticks.
 * Returns 0 or -1 when the text is not an ETag this server issues. */
int entity_etag_parse(const char *s, size_t n, int64_t *ticks);
/* 1 when s is a well-formed weak ETag (W/"..." or w/"...", inner quotes
 * backslash-escaped), whatever it holds; 0 otherwise. */
int entity_etag_wellformed(const char *s, size_t n);

#endif
