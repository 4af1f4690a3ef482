/* entity.c - the entity model: property list, merge, binary value codec and
 * the size estimate of doc/protocol.md, Entity size (layout in entity.h). */
#include "store/entity.h"

#include "core/coding.h"

#include <endian.h>
#include <string.h>



#define ENTITY_VERSION 1

static const char *const edm_names[] = {
    [EDM_STRING] = "Edm.String", [EDM_BINARY] = "Edm.Binary", [EDM_BOOLEAN] = "Edm.Boolean",
    [EDM_DATETIME] = "Edm.DateTime", [EDM_DOUBLE] = "Edm.Double", [EDM_GUID] = "Edm.Guid",
    [EDM_INT32] = "Edm.Int32", [EDM_INT64] = "Edm.Int64",
};

/* "Edm.X" for a type, NULL for a value outside the enum. */
const char *edm_type_name(enum edm_type t)
{
    if ((int)t < EDM_STRING || (int)t > EDM_INT64)
        return NULL;
    return edm_names[t];
}

/* Exact, case-sensitive lookup of an Edm type name; 0 when unknown. */
enum edm_type edm_type_from_name(const char *s, size_t n)
{
    for (int t = EDM_STRING; t <= EDM_INT64; t++) {
        if (strlen(edm_names[t]) == n && memcmp(edm_names[t], s, n) == 0)
            return (enum edm_type)t;
    }
    return (enum edm_type)0;
}

/* Appends a property named name (copied into the arena, NUL-terminated, so
 * callers may pass unterminated text). The value is zeroed; the caller
 * fills it in. The array doubles in the arena; the old one is abandoned to
 * the arena. */
struct property *entity_add(struct arena *a, struct entity *e, const char *name, size_t name_len)
{
    return entity_add_ref(a, e, arena_strndup(a, name, name_len), name_len);
}

struct property *entity_add_ref(struct arena *a, struct entity *e, const char *name,
                                size_t name_len)
{
    if (e->nprops == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 8;
        struct property *p = arena_alloc(a, cap * sizeof *p);
        if (e->nprops)
            memcpy(p, e->props, e->nprops * sizeof *p);
        e->props = p;
        e->cap = cap;
    }
    struct property *p = &e->props[e->nprops++];
    memset(p, 0, sizeof *p);
    p->name = name;
    p->name_len = name_len;
    return p;
}

/* Linear search by exact (case-sensitive) name; entities have <= 252
 * custom properties. */
long entity_find(const struct entity *e, const char *name, size_t name_len)
{
    for (size_t i = 0; i < e->nprops; i++) {
        const struct property *p = &e->props[i];
        if (p->name_len == name_len && memcmp(p->name, name, name_len) == 0)
            return (long)i;
    }
    return -1;
}

/* Merge (doc/protocol.md, Replace and merge): each property of src overwrites (value and type) the one
 * of the same name in dst in place, or is appended. Values are shared with
 * src, not copied. */
void entity_merge(struct arena *a, struct entity *dst, const struct entity *src)
{
    for (size_t i = 0; i < src->nprops; i++) {
        const struct property *s = &src->props[i];
        long at = entity_find(dst, s->name, s->name_len);
        struct property *d = at >= 0 ? &dst->props[at] : entity_add(a, dst, s->name, s->name_len);
        d->v = s->v;
    }
}

/* Serialises timestamp and properties (keys live in the backend key). */
void entity_encode(const struct entity *e, struct buf *out)
{
    buf_put_u8(out, ENTITY_VERSION);
    buf_put_be64(out, (uint64_t)e->timestamp);
    buf_put_varint(out, e->nprops);
    for (size_t i = 0; i < e->nprops; i++) {
        const struct property *p = &e->props[i];
        const struct edm_value *v = &p->v;
        buf_put_u8(out, (uint8_t)v->type);
        buf_put_varint(out, p->name_len);
        buf_append(out, p->name, p->name_len);
        switch (v->type) {
        case EDM_STRING:
        case EDM_BINARY:
            buf_put_varint(out, v->u.s.len);
            buf_append(out, v->u.s.ptr, v->u.s.len);
            break;
        case EDM_INT32:
            buf_put_be32(out, (uint32_t)v->u.i32);
            break;
        case EDM_INT64:
            buf_put_be64(out, (uint64_t)v->u.i64);
            break;
        case EDM_DATETIME:
            buf_put_be64(out, (uint64_t)v->u.ticks);
            break;
        case EDM_DOUBLE: {
            uint64_t bits;
            memcpy(&bits, &v->u.d, sizeof bits);
            buf_put_be64(out, bits);
            break;
        }
        case EDM_BOOLEAN:
            buf_put_u8(out, v->u.b ? 1 : 0);
            break;
        case EDM_GUID:
            buf_append(out, v->u.guid, 16);
            break;
        }
    }
}

/* Bounds-checked reader over an encoded value. */
struct reader {
    const uint8_t *p;
    size_t len, off;
};

static int rd_bytes(struct reader *r, size_t n, const uint8_t **out)
{
    if (n > r->len - r->off)
        return -1;
    *out = r->p + r->off;
    r->off += n;
    return 0;
}

static int rd_be(struct reader *r, int nbytes, uint64_t *out)
{
    const uint8_t *p;
    if (rd_bytes(r, (size_t)nbytes, &p) < 0)
        return -1;
    uint64_t v = 0;
    if (nbytes == 8) {   /* the common widths as one load each */
        memcpy(&v, p, 8);
        *out = be64toh(v);
        return 0;
    }
    if (nbytes == 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        *out = be32toh(w);
        return 0;
    }
    *out = coding_get_be(p, (size_t)nbytes);
    return 0;
}

/* LEB128 as written by buf_put_varint; at most 10 bytes, no overflow. */
static int rd_varint(struct reader *r, uint64_t *out)
{
    const uint8_t *p = r->p + r->off;
    if (coding_get_varint(&p, r->p + r->len, out) < 0)
        return -1;
    r->off = (size_t)(p - r->p);
    return 0;
}

/* Reads a varint length and that many bytes. */
static int rd_blob(struct reader *r, const uint8_t **p, size_t *n)
{
    uint64_t len;
    if (rd_varint(r, &len) < 0 || len > r->len - r->off)
        return -1;
    *n = (size_t)len;
    return rd_bytes(r, *n, p);
}

/* Checks an entity_encode value's header (version, timestamp, a property
 * count the bytes can hold) and positions c on its first property. */
int entity_cursor_open(struct entity_cursor *c, const void *val, size_t len, int64_t *timestamp)
{
    struct reader r = { val, len, 0 };
    uint64_t u, count;
    const uint8_t *p;
    if (rd_bytes(&r, 1, &p) < 0 || *p != ENTITY_VERSION)
        return -1;
    if (rd_be(&r, 8, &u) < 0)
        return -1;
    if (rd_varint(&r, &count) < 0)
        return -1;
    /* each property takes at least 3 bytes: type, name length, value */
    if (count > (len - r.off) / 3)
        return -1;
    *timestamp = (int64_t)u;
    c->p = val;
    c->len = len;
    c->off = r.off;
    c->left = count;
    return 0;
}

/* Reads one property's type and name. 1, 0 when none is left (-1 when
 * bytes trail the last one), -1 when malformed. */
static int cursor_head(struct entity_cursor *c, enum edm_type *type, const char **name,
                       size_t *name_len)
{
    struct reader r = { c->p, c->len, c->off };
    const uint8_t *p;
    if (c->left == 0)
        return c->off == c->len ? 0 : -1;
    if (rd_bytes(&r, 1, &p) < 0 || *p < EDM_STRING || *p > EDM_INT64)
        return -1;
    *type = (enum edm_type)*p;
    if (rd_blob(&r, &p, name_len) < 0)
        return -1;
    *name = (const char *)p;
    c->off = r.off;
    c->left--;
    return 1;
}

/* Reads the value of a property of type t into *v (NULL: skips it).
 * Non-0/1 booleans are malformed. 0 or -1. */
static int cursor_value(struct entity_cursor *c, enum edm_type t, struct edm_value *v)
{
    struct reader r = { c->p, c->len, c->off };
    const uint8_t *p = NULL;
    uint64_t u = 0;
    size_t n = 0;
    switch (t) {
    case EDM_STRING:
    case EDM_BINARY:
        if (rd_blob(&r, &p, &n) < 0)
            return -1;
        break;
    case EDM_INT32:
        if (rd_be(&r, 4, &u) < 0)
            return -1;
        break;
    case EDM_INT64:
    case EDM_DATETIME:
    case EDM_DOUBLE:
        if (rd_be(&r, 8, &u) < 0)
            return -1;
        break;
    case EDM_BOOLEAN:
        if (rd_bytes(&r, 1, &p) < 0 || *p > 1)
            return -1;
        break;
    case EDM_GUID:
        if (rd_bytes(&r, 16, &p) < 0)
            return -1;
        break;
    default:
        return -1;
    }
    c->off = r.off;
    if (!v)
        return 0;
    v->type = t;
    switch (t) {
    case EDM_STRING:
    case EDM_BINARY:
        v->u.s.ptr = (const char *)p;
        v->u.s.len = n;
        break;
    case EDM_INT32:
        v->u.i32 = (int32_t)(uint32_t)u;
        break;
    case EDM_INT64:
        v->u.i64 = (int64_t)u;
        break;
    case EDM_DATETIME:
        v->u.ticks = (int64_t)u;
        break;
    case EDM_DOUBLE:
        memcpy(&v->u.d, &u, sizeof v->u.d);
        break;
    case EDM_BOOLEAN:
        v->u.b = *p;
        break;
    case EDM_GUID:
        memcpy(v->u.guid, p, 16);
        break;
    }
    return 0;
}

int entity_cursor_next(struct entity_cursor *c, const char **name, size_t *name_len,
                       struct edm_value *v)
{
    enum edm_type t;
    int rc = cursor_head(c, &t, name, name_len);
    if (rc <= 0)
        return rc;
    return cursor_value(c, t, v) < 0 ? -1 : 1;
}

int entity_cursor_find(struct entity_cursor *c, const char *name, size_t name_len,
                       struct edm_value *v)
{
    for (;;) {
        enum edm_type t;
        const char *pn;
        size_t pl;
        int rc = cursor_head(c, &t, &pn, &pl);
        if (rc <= 0)
            return rc;
        if (pl == name_len && memcmp(pn, name, name_len) == 0)
            return cursor_value(c, t, v) < 0 ? -1 : 1;
        if (cursor_value(c, t, NULL) < 0)   /* other properties: skipped */
            return -1;
    }
}

/* Parses an entity_encode value through the cursor, so both readers agree
 * on what is malformed (unknown versions/types, non-0/1 booleans, trailing
 * bytes). Names are copied into the arena (they must be NUL-terminated);
 * string and binary values point into val. */
int entity_decode(struct arena *a, const void *val, size_t len, struct entity *e)
{
    struct entity_cursor c;
    int64_t ts;
    if (entity_cursor_open(&c, val, len, &ts) < 0)
        return -1;
    e->timestamp = ts;
    e->props = NULL;
    e->nprops = e->cap = 0;
    if (c.left) {
        e->props = arena_alloc(a, (size_t)c.left * sizeof *e->props);
        e->cap = (size_t)c.left;
    }
    const char *name;
    size_t name_len;
    struct edm_value v;
    int rc;
    while ((rc = entity_cursor_next(&c, &name, &name_len, &v)) == 1) {
        struct property *prop = entity_add(a, e, name, name_len);
        prop->v = v;
    }
    return rc;
}

/* doc/protocol.md, Entity size: 4 + 2*(len16(PK)+len16(RK)) + sum(8 + 2*len16(name) + value),
 * with len16 the UTF-16 length or (for a cheap bound) the byte length. */
static size_t size_by(const struct entity *e, size_t (*len16)(const char *, size_t))
{
    size_t size = 4;
    if (e->pk)
        size += 2 * len16(e->pk, e->pk_len);
    if (e->rk)
        size += 2 * len16(e->rk, e->rk_len);
    for (size_t i = 0; i < e->nprops; i++) {
        const struct property *p = &e->props[i];
        size += 8 + 2 * len16(p->name, p->name_len);
        switch (p->v.type) {
        case EDM_STRING:
            size += 4 + 2 * len16(p->v.u.s.ptr, p->v.u.s.len);
            break;
        case EDM_BINARY:
            size += 4 + p->v.u.s.len;
            break;
        case EDM_INT32:
            size += 4;
            break;
        case EDM_INT64:
        case EDM_DOUBLE:
        case EDM_DATETIME:
            size += 8;
            break;
        case EDM_GUID:
            size += 16;
            break;
        case EDM_BOOLEAN:
            size += 1;
            break;
        }
    }
    return size;
}

/* A UTF-8 string never has more UTF-16 units than bytes. */
static size_t len16_bound(const char *s, size_t n)
{
    (void)s;
    return n;
}

size_t entity_size(const struct entity *e)
{
    return size_by(e, utf16_len);
}

size_t entity_size_bound(const struct entity *e)
{
    return size_by(e, len16_bound);
}
