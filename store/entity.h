/* entity.h - an entity in memory, and its compact binary encoding.
 *
 * struct entity is what the protocol layer works on: keys, Timestamp and an
 * ordered list of typed custom properties (order = stored order, doc/protocol.md, Member order).
 * Strings and binary values point into memory owned by someone else (the
 * request arena, a request body, or a decoded backend value): an entity
 * never owns what it points to.
 *
 * The backend stores an entity as key = keys_entity(...) (keys.h) and
 * value = entity_encode(...). The value holds the Timestamp and properties,
 * not the keys. Layout (version 1):
 *     u8  version (=1)
 *     be64 timestamp ticks
 *     varint property count
 *     per property: u8 edm type, varint name length, name bytes, value:
 *        STRING/BINARY: varint length + bytes; INT32: be32; INT64, DOUBLE
 *        (IEEE bits), DATETIME: be64; BOOLEAN: u8; GUID: 16 bytes.
 */
#ifndef TABLED_ENTITY_H
#define TABLED_ENTITY_H
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/buf.h"

enum edm_type {
    EDM_STRING = 1,
    EDM_BINARY = 2,
    EDM_BOOLEAN = 3,
    EDM_DATETIME = 4,
    EDM_DOUBLE = 5,
    EDM_GUID = 6,
    EDM_INT32 = 7,
    EDM_INT64 = 8,
};

/* "Edm.String", ... and back (exact, case-sensitive); 0 when unknown. */
const char *edm_type_name(enum edm_type t);
enum edm_type edm_type_from_name(const char *s, size_t n);

struct edm_value {
    enum edm_type type;
    union {
        int32_t i32;
        int64_t i64;
        double d;
        int b;             /* 0 or 1 */
        int64_t ticks;     /* DATETIME */
        uint8_t guid[16];
        struct {
            const char *ptr;   /* STRING: UTF-8 (no NUL guaranteed); BINARY: bytes */
            size_t len;
        } s;
    } u;
};

struct property {
    const char *name;      /* UTF-8, NUL-terminated */
    size_t name_len;
    struct edm_value v;
};

struct entity {
    const char *pk, *rk;   /* UTF-8, NUL-terminated */
    size_t pk_len, rk_len;
    int64_t timestamp;     /* ticks; 0 = not yet set */
    struct property *props;
    size_t nprops, cap;    /* props is arena memory, grown by entity_add */
};

/* Appends a property (props array grows in the arena). */
struct property *entity_add(struct arena *a, struct entity *e, const char *name, size_t name_len);
/* The same without copying name, which must be NUL-terminated and outlive e. */
struct property *entity_add_ref(struct arena *a, struct entity *e, const char *name,
                                size_t name_len);
/* Index of property name, or -1. */
long entity_find(const struct entity *e, const char *name, size_t name_len);
/* Merge: for each property of src set/overwrite in dst (existing ones keep
 * their position, new ones are appended). */
void entity_merge(struct arena *a, struct entity *dst, const struct entity *src);

/* Encodes timestamp + properties (not keys) into out (appends). */
void entity_encode(const struct entity *e, struct buf *out);
/* Decodes a value made by entity_encode. Strings point into val (which must
 * outlive e); the property array comes from the arena. Keys are left as
 * they are in *e. Returns 0 or -1 for a malformed value. */
int entity_decode(struct arena *a, const void *val, size_t len, struct entity *e);

/* Reading an encoded value property by property where it lies, without a
 * struct entity or any allocation (what a scan does with every row: its
 * filter and its JSON are evaluated and written from the stored bytes).
 * Every read is bounds-checked; the cursor and entity_decode agree on what
 * is malformed, but a cursor only finds out about the bytes it reaches. */
struct entity_cursor {
    const uint8_t *p;
    size_t len, off;
    uint64_t left;   /* properties not read yet */
};

/* Opens val (an entity_encode value) at its first property and returns its
 * Timestamp in *timestamp. 0, or -1 for a malformed header. */
int entity_cursor_open(struct entity_cursor *c, const void *val, size_t len, int64_t *timestamp);
/* The next property in stored order: its name (pointing into the value,
 * NOT NUL-terminated) and value (strings and bytes point into the value).
 * 1, 0 after the last one, -1 when malformed (also for bytes after it). */
int entity_cursor_next(struct entity_cursor *c, const char **name, size_t *name_len,
                       struct edm_value *v);
/* Moves on to the first property named name[0..name_len) (exact) and
 * reads its value; the values of the properties before it are skipped
 * unread. 1 found, 0 absent, -1 malformed (as far as it read). */
int entity_cursor_find(struct entity_cursor *c, const char *name, size_t name_len,
                       struct edm_value *v);

/* Size per doc/protocol.md, Entity size (UTF-16 based), for the 1 MiB EntityTooLarge check. */
size_t entity_size(const struct entity *e);
/* An upper bound of entity_size() that reads no string (byte lengths for
 * UTF-16 lengths): when it is within a limit, so is the exact size. */
size_t entity_size_bound(const struct entity *e);

#endif
