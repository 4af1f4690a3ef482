/* entity_json.c - OData JSON entity bodies <-> struct entity.
 *
 * Parsing (doc/protocol.md, Data model; Request bodies) runs yajl's callback parser over the whole
 * body and collects members first, because a "X@odata.type" annotation may
 * come after X's value; types are resolved once the body is complete.
 *
 * Error precedence when several problems apply (first rule that matches):
 *   1. the body is not well-formed JSON, or its top level is not an object
 *      -> InvalidInput (checked over the whole body, so it beats anything
 *      found earlier in it);
 *   2. member by member in body order, the first of: a nested object/array
 *      value -> InvalidInput; an annotation value that is not a string or
 *      names an unknown type -> InvalidInput; a PartitionKey/RowKey that is
 *      a number or boolean -> PrimaryKeyPropertyIsInvalidType (doc/protocol.md, Key values; a
 *      null key counts as absent, see 4); an invalid property name or
 *      ill-formed UTF-8 in it -> PropertyNameInvalid / InvalidInput; a name
 *      over 255 UTF-16 units -> PropertyNameTooLong; a member given twice
 *      (property, key or annotation) -> DuplicatePropertiesSpecified; the
 *      253rd non-null custom property -> TooManyProperties;
 *   3. property values in body order: value not convertible to its type ->
 *      InvalidInput (DateTime out of range -> OutOfRangeInput), String over
 *      32768 UTF-16 units or Binary over 65536 bytes -> PropertyValueTooLarge;
 *   4. keys (doc/protocol.md, Validation order, step 6): INSERT without PartitionKey or RowKey ->
 *      PropertiesNeedValue; then PartitionKey, then RowKey: over 1024
 *      UTF-16 units -> KeyValueTooLarge, then entity_check_key
 *      (OutOfRangeInput for a forbidden character, InvalidInput);
 *   5. the whole entity over 1 MiB (doc/protocol.md, Entity size) -> EntityTooLarge.
 *
 * Writing (doc/protocol.md, JSON payloads; $select) emits compact JSON in the service's member
 * order for each metadata level. */
#include "codec/entity_json.h"

#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <yajl/yajl_parse.h>

#include "core/coding.h"
#include "core/timefmt.h"
#include "core/jsonwalk.h"
#include "codec/edm.h"
#include "codec/jsonflat.h"
#include "codec/url.h"

#define MAX_CUSTOM_PROPS 252
#define MAX_NAME_UTF16 255
#define MAX_STRING_UTF16 32768
#define MAX_BINARY_BYTES 65536
#define MAX_KEY_UTF16 1024
#define MAX_ENTITY_SIZE (1024 * 1024)

/* ------------------------------------------------------------------ */
/* Parsing                                                              */
/* ------------------------------------------------------------------ */

enum jkind { JK_NULL, JK_BOOL, JK_NUMBER, JK_STRING };

/* What the member currently being read is. */
enum mclass { MC_IGNORE, MC_PK, MC_RK, MC_ANNOT, MC_PROP };

/* One custom property name seen in the body: its value and/or its type
 * annotation. Found again through a small chained hash table. */
struct member {
    const char *name;
    size_t name_len;
    unsigned hash;
    struct member *next;   /* hash chain */
    int has_value, has_annot;
    enum jkind kind;
    int b;                 /* JK_BOOL */
    const char *text;      /* JK_STRING (decoded) / JK_NUMBER (raw) */
    size_t text_len;
    enum edm_type annot;
};

struct jkey {
    int seen;
    const char *s;  /* NULL when absent or null */
    size_t n;
};

struct jparse {
    struct arena *a;
    int depth;
    int top_object;        /* the top-level value was an object */
    int not_object;        /* the top-level value was something else */
    enum terr err;         /* first member-level error (rule 2) */
    enum mclass cls;       /* class of the member whose value comes next */
    const char *key;       /* its name (property / annotation base) */
    size_t key_len;
    unsigned key_hash;
    struct member **buckets;
    size_t nbuckets, nmembers;
    struct member **order; /* non-null property values in body order */
    size_t norder, ordercap;
    struct jkey pk, rk;
    int in_body;           /* strings handed to the callbacks point into the
                              request body (jsonflat), not into yajl's
                              scratch buffer: values need no copy */
};

static unsigned name_hash(const char *s, size_t n)
{
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* An empty parse state whose allocations come from a. */
static void jp_init(struct jparse *jp, struct arena *a)
{
    memset(jp, 0, sizeof *jp);
    jp->a = a;
}

static void set_err(struct jparse *jp, enum terr e)
{
    if (jp->err == TERR_NONE)
        jp->err = e;
}

/* Finds or creates the member for name (rehashing as it grows, so huge
 * bodies of annotations or nulls stay linear). */
static struct member *member_get(struct jparse *jp, const char *name, size_t n, unsigned h)
{
    if (jp->nbuckets) {
        for (struct member *m = jp->buckets[h & (jp->nbuckets - 1)]; m; m = m->next)
            if (m->hash == h && m->name_len == n && memcmp(m->name, name, n) == 0)
                return m;
    }
    if (jp->nmembers >= jp->nbuckets) {
        size_t nb = jp->nbuckets ? jp->nbuckets * 4 : 8;   /* most entities are small */
        struct member **b = arena_calloc(jp->a, nb * sizeof *b);
        for (size_t i = 0; i < jp->nbuckets; i++) {
            struct member *m = jp->buckets[i];
            while (m) {
                struct member *next = m->next;
                m->next = b[m->hash & (nb - 1)];
                b[m->hash & (nb - 1)] = m;
                m = next;
            }
        }
        jp->buckets = b;
        jp->nbuckets = nb;
    }
    struct member *m = arena_calloc(jp->a, sizeof *m);
    m->name = name;
    m->name_len = n;
    m->hash = h;
    m->next = jp->buckets[h & (jp->nbuckets - 1)];
    jp->buckets[h & (jp->nbuckets - 1)] = m;
    jp->nmembers++;
    return m;
}

/* doc/protocol.md, Property names [REC]: first character [A-Za-z_] or non-ASCII, the rest
 * [A-Za-z0-9_] or non-ASCII. Non-ASCII stands in for "Unicode letter"
 * (no Unicode tables here), except the C1 controls U+0080..U+009F. */
static int name_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (c >= 0x80) {
            if (c == 0xC2 && i + 1 < n && p[i + 1] <= 0x9F)
                return 0;
            continue;
        }
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_')
            continue;
        if (c >= '0' && c <= '9' && i > 0)
            continue;
        return 0;
    }
    return 1;
}

static int has_prefix(const char *s, size_t n, const char *pre)
{
    size_t k = strlen(pre);
    return n >= k && memcmp(s, pre, k) == 0;
}

static int is_name(const char *s, size_t n, const char *name)
{
    return strlen(name) == n && memcmp(s, name, n) == 0;
}

/* Classifies a top-level member name and checks it (rule 2). */
static int cb_map_key(void *ctx, const unsigned char *key, size_t len)
{
    struct jparse *jp = ctx;
    const char *k = (const char *)key;
    if (jp->depth != 1)
        return 1;
    jp->cls = MC_IGNORE;
    if (jp->err != TERR_NONE)
        return 1;   /* only well-formedness matters from here on */
    if (has_prefix(k, len, "odata.") || is_name(k, len, "Timestamp"))
        return 1;
    if (utf8_check(k, len) != 0) {
        set_err(jp, TERR_InvalidInput);
        return 1;
    }
    if (is_name(k, len, "PartitionKey")) {
        jp->cls = MC_PK;
        return 1;
    }
    if (is_name(k, len, "RowKey")) {
        jp->cls = MC_RK;
        return 1;
    }
    static const char annot[] = "@odata.type";
    size_t alen = sizeof annot - 1;
    size_t base_len = len;
    enum mclass cls = MC_PROP;
    if (len >= alen && memcmp(k + len - alen, annot, alen) == 0) {
        base_len = len - alen;
        if (is_name(k, base_len, "PartitionKey") || is_name(k, base_len, "RowKey") ||
            is_name(k, base_len, "Timestamp"))
            return 1;   /* system types are fixed (doc/protocol.md, Ignored annotations) */
        cls = MC_ANNOT;
    } else {
        if (!name_valid(k, len)) {
            set_err(jp, TERR_PropertyNameInvalid);
            return 1;
        }
        if (len > MAX_NAME_UTF16 && utf16_len(k, len) > MAX_NAME_UTF16) {
            set_err(jp, TERR_PropertyNameTooLong);
            return 1;
        }
    }
    jp->cls = cls;
    jp->key = arena_strndup(jp->a, k, base_len);
    jp->key_len = base_len;
    jp->key_hash = name_hash(k, base_len);
    return 1;
}

/* Records a key member's value: strings only; null = absent. */
static void key_value(struct jparse *jp, struct jkey *key, enum jkind kind, const char *s,
                      size_t n)
{
    if (key->seen) {
        set_err(jp, TERR_DuplicatePropertiesSpecified);
        return;
    }
    key->seen = 1;
    if (kind == JK_NULL)
        return;
    if (kind != JK_STRING) {
        set_err(jp, TERR_PrimaryKeyPropertyIsInvalidType);
        return;
    }
    key->s = arena_strndup(jp->a, s, n);
    key->n = n;
}

/* Handles the scalar value of the current top-level member. */
static void member_value(struct jparse *jp, enum jkind kind, int b, const char *s, size_t n)
{
    if (jp->err != TERR_NONE || jp->cls == MC_IGNORE)
        return;
    if (kind == JK_STRING && utf8_check(s, n) != 0) {
        /* yajl checks UTF-8 structure only, not overlongs or surrogates */
        set_err(jp, TERR_InvalidInput);
        return;
    }
    switch (jp->cls) {
    case MC_PK:
        key_value(jp, &jp->pk, kind, s, n);
        return;
    case MC_RK:
        key_value(jp, &jp->rk, kind, s, n);
        return;
    case MC_ANNOT: {
        enum edm_type t = kind == JK_STRING ? edm_type_from_name(s, n) : (enum edm_type)0;
        if (t == 0) {
            set_err(jp, TERR_InvalidInput);
            return;
        }
        struct member *m = member_get(jp, jp->key, jp->key_len, jp->key_hash);
        if (m->has_annot) {
            set_err(jp, TERR_DuplicatePropertiesSpecified);
            return;
        }
        m->has_annot = 1;
        m->annot = t;
        return;
    }
    case MC_PROP: {
        struct member *m = member_get(jp, jp->key, jp->key_len, jp->key_hash);
        if (m->has_value) {
            set_err(jp, TERR_DuplicatePropertiesSpecified);
            return;
        }
        m->has_value = 1;
        m->kind = kind;
        m->b = b;
        if (kind == JK_STRING || kind == JK_NUMBER) {
            m->text = jp->in_body ? s : arena_strndup(jp->a, s, n);
            m->text_len = n;
        }
        if (kind == JK_NULL)
            return;   /* doc/protocol.md, Null values: not stored */
        if (jp->norder == MAX_CUSTOM_PROPS) {
            set_err(jp, TERR_TooManyProperties);
            return;
        }
        if (jp->norder == jp->ordercap) {
            size_t cap = jp->ordercap ? jp->ordercap * 2 : 16;
            struct member **o = arena_alloc(jp->a, cap * sizeof *o);
            if (jp->norder)
                memcpy(o, jp->order, jp->norder * sizeof *o);
            jp->order = o;
            jp->ordercap = cap;
        }
        jp->order[jp->norder++] = m;
        return;
    }
    case MC_IGNORE:
        return;
    }
}

/* Any scalar: a top-level scalar is "not an object"; inside nested values
 * it is skipped (the nested value already produced its error). */
static void scalar(struct jparse *jp, enum jkind kind, int b, const char *s, size_t n)
{
    if (jp->depth == 0)
        jp->not_object = 1;
    else if (jp->depth == 1)
        member_value(jp, kind, b, s, n);
}

static int cb_null(void *ctx)
{
    scalar(ctx, JK_NULL, 0, NULL, 0);
    return 1;
}

static int cb_boolean(void *ctx, int v)
{
    scalar(ctx, JK_BOOL, v ? 1 : 0, NULL, 0);
    return 1;
}

static int cb_number(void *ctx, const char *s, size_t n)
{
    scalar(ctx, JK_NUMBER, 0, s, n);
    return 1;
}

static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
    scalar(ctx, JK_STRING, 0, (const char *)s, n);
    return 1;
}

/* An object or array opens: the top-level object, or a nested value,
 * which only ignored members (odata.*, Timestamp) may have. */
static void open_value(struct jparse *jp, int is_map)
{
    if (jp->depth == 0) {
        if (is_map)
            jp->top_object = 1;
        else
            jp->not_object = 1;
    } else if (jp->depth == 1 && jp->err == TERR_NONE && jp->cls != MC_IGNORE) {
        set_err(jp, TERR_InvalidInput);
    }
    jp->depth++;
}

static int cb_start_map(void *ctx)
{
    open_value(ctx, 1);
    return 1;
}

static int cb_start_array(void *ctx)
{
    open_value(ctx, 0);
    return 1;
}

static int cb_end(void *ctx)
{
    struct jparse *jp = ctx;
    jp->depth--;
    return 1;
}

static const yajl_callbacks parse_callbacks = {
    cb_null, cb_boolean, NULL, NULL, cb_number, cb_string,
    cb_start_map, cb_map_key, cb_end, cb_start_array, cb_end,
};

static int has_fraction_or_exponent(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '.' || s[i] == 'e' || s[i] == 'E')
            return 1;
    return 0;
}

static enum terr edm_status(int rc)
{
    if (rc == 0)
        return TERR_NONE;
    return TERR_InvalidInput;
}

/* Rule 3: turns a collected member into a typed value, per doc/protocol.md, Edm value forms
 * (annotated) or 4.7 (inferred). */
static enum terr convert(struct arena *a, const struct member *m, struct edm_value *v)
{
    enum edm_type t = m->has_annot ? m->annot : (enum edm_type)0;
    const char *s = m->text;
    size_t n = m->text_len;
    memset(v, 0, sizeof *v);
    if (t == 0) {
        switch (m->kind) {
        case JK_STRING:
            t = EDM_STRING;
            break;
        case JK_BOOL:
            t = EDM_BOOLEAN;
            break;
        case JK_NUMBER:
            /* integers outside Int32 are rejected below (doc/protocol.md, Type inference [REC]) */
            t = has_fraction_or_exponent(s, n) ? EDM_DOUBLE : EDM_INT32;
            break;
        case JK_NULL:
            return TERR_InvalidInput;   /* not reached: nulls are dropped */
        }
    }
    v->type = t;
    switch (t) {
    case EDM_STRING:
        if (m->kind != JK_STRING)
            return TERR_InvalidInput;
        /* n bytes never make more than n UTF-16 units */
        if (n > MAX_STRING_UTF16 && utf16_len(s, n) > MAX_STRING_UTF16)
            return TERR_PropertyValueTooLarge;
        v->u.s.ptr = s;
        v->u.s.len = n;
        return TERR_NONE;
    case EDM_BOOLEAN:
        if (m->kind == JK_BOOL)
            v->u.b = m->b;
        else if (m->kind == JK_STRING && is_name(s, n, "true"))
            v->u.b = 1;
        else if (m->kind == JK_STRING && is_name(s, n, "false"))
            v->u.b = 0;
        else
            return TERR_InvalidInput;
        return TERR_NONE;
    case EDM_INT32:
        if (m->kind != JK_NUMBER && m->kind != JK_STRING)
            return TERR_InvalidInput;
        return edm_status(edm_int32_parse(s, n, &v->u.i32));
    case EDM_INT64:
        if (m->kind != JK_NUMBER && m->kind != JK_STRING)
            return TERR_InvalidInput;
        return edm_status(edm_int64_parse(s, n, &v->u.i64));
    case EDM_DOUBLE:
        if (m->kind != JK_NUMBER && m->kind != JK_STRING)
            return TERR_InvalidInput;
        return edm_status(edm_double_parse(s, n, m->kind == JK_STRING, &v->u.d));
    case EDM_DATETIME: {
        if (m->kind != JK_STRING)
            return TERR_InvalidInput;
        int rc = edm_datetime_parse(s, n, &v->u.ticks);
        if (rc == EDM_ERANGE)
            return TERR_OutOfRangeInput;
        return edm_status(rc);
    }
    case EDM_GUID:
        if (m->kind != JK_STRING)
            return TERR_InvalidInput;
        return edm_status(edm_guid_parse(s, n, v->u.guid));
    case EDM_BINARY: {
        if (m->kind != JK_STRING)
            return TERR_InvalidInput;
        uint8_t *bytes;
        size_t len;
        if (edm_base64_decode(a, s, n, &bytes, &len) != 0)
            return TERR_InvalidInput;
        if (len > MAX_BINARY_BYTES)
            return TERR_PropertyValueTooLarge;
        v->u.s.ptr = (const char *)bytes;
        v->u.s.len = len;
        return TERR_NONE;
    }
    }
    return TERR_InvalidInput;
}

/* yajl turns a lone high-surrogate escape into '?' and pairs a high
 * surrogate with any following \u escape, silently changing the text; such
 * bodies are rejected up front instead. Backslashes only occur inside JSON
 * strings (anything else is a syntax error anyway), so escapes can be
 * walked pairwise without tracking string boundaries. Returns 0 when every
 * \u escape forms valid UTF-16. */
static int surrogates_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *bs = memchr(s + i, '\\', n - i);   /* escapes are rare: skip to the next */
        if (!bs)
            break;
        i = (size_t)(bs - s);
        if (i + 1 < n && s[i + 1] == 'u') {
            long u = coding_hex4(s + i + 2, n - i - 2), lo;
            if (u < 0)
                return -1;   /* malformed escape: yajl reports it too */
            i += 5;
            if (u >= 0xDC00 && u <= 0xDFFF)
                return -1;
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (n - i < 7 || s[i + 1] != '\\' || s[i + 2] != 'u' ||
                    (lo = coding_hex4(s + i + 3, n - i - 3)) < 0 ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return -1;
                i += 6;
            }
        } else {
            i++;   /* any other escape: skip the escaped character */
        }
    }
    return 0;
}

/* Parses the body into jp (fresh from jp_init); returns rule 1's verdict.
 * The common flat body goes through jsonflat's fast path; anything it
 * declines is parsed again from scratch by yajl. */
static enum terr parse_body(struct jparse *jp, struct arena *a, const char *body, size_t len)
{
    if (len >= 3 && memcmp(body, "\xef\xbb\xbf", 3) == 0) {
        body += 3;   /* a UTF-8 byte order mark, as .NET readers allow */
        len -= 3;
    }
    jp->in_body = 1;
    int rc = jsonflat_parse(&parse_callbacks, jp, body, len);
    if (rc == JSONFLAT_OK)
        return jp->top_object && !jp->not_object ? TERR_NONE : TERR_InvalidInput;
    jp_init(jp, a);   /* declined: forget what the fast path collected */
    if (surrogates_ok(body, len) != 0)
        return TERR_InvalidInput;
    /* Every name and string value goes through utf8_check (stricter than
     * yajl's own check), so yajl need not validate them a second time. A
     * body nested deeper than the limit is refused as malformed (rule 1)
     * as soon as the parse reaches that depth. */
    rc = jsonwalk_parse(&parse_callbacks, jp, body, len, JSONWALK_MAX_DEPTH,
                        JSONWALK_RAW_STRINGS, NULL, 0);
    if (rc == JSONWALK_NOMEM)
        return TERR_InternalError;
    if (rc != JSONWALK_OK || !jp->top_object || jp->not_object)
        return TERR_InvalidInput;
    return TERR_NONE;
}

/* A DateTime value the service refuses as out of range: its name and, when
 * .NET can hold the instant (year 1 on, i.e. before 1601 here), its
 * invariant-culture text "MM/dd/yyyy HH:mm:ss" (in UTC), which the
 * service's message shows instead of the text sent. Other out-of-range
 * instants (year 0, past 9999 after the offset) name nothing. */
static void range_datetime(struct arena *a, const struct member *m, struct entity_range *r)
{
    int64_t ticks;
    if (!r || timefmt_iso_parse_wide(m->text, m->text_len, &ticks) != 0)
        return;
    char *t = arena_alloc(a, 24);
    r->value_len = timefmt_invariant_format(ticks, t);
    r->value = t;
    r->name = m->name;
    r->name_len = m->name_len;
}

/* Checks a body key (doc/protocol.md, Key values) as entity_check_key does, but its length
 * before its characters: a key refused for a character is named in the
 * message with its value, which is then at most 1024 UTF-16 units (a few
 * KiB, however long the body). name: "PartitionKey" or "RowKey". */
static enum terr check_body_key(const char *s, size_t n, const char *name,
                                struct entity_range *r)
{
    if (n > MAX_KEY_UTF16 && utf8_check(s, n) == 0 && utf16_len(s, n) > MAX_KEY_UTF16)
        return TERR_KeyValueTooLarge;
    enum terr err = entity_check_key(s, n);
    if (err == TERR_OutOfRangeInput && r) {
        r->name = name;
        r->name_len = strlen(name);
        r->value = s;
        r->value_len = n;
    }
    return err;
}

enum terr entity_json_parse(struct arena *a, const char *body, size_t len,
                            enum entity_parse_mode mode, struct entity *e)
{
    return entity_json_parse_range(a, body, len, mode, e, NULL);
}

enum terr entity_json_parse_range(struct arena *a, const char *body, size_t len,
                                  enum entity_parse_mode mode, struct entity *e,
                                  struct entity_range *range)
{
    struct jparse jp;
    jp_init(&jp, a);
    memset(e, 0, sizeof *e);
    if (range)
        memset(range, 0, sizeof *range);
    enum terr err = parse_body(&jp, a, body, len);
    if (err != TERR_NONE)
        return err;
    if (jp.err != TERR_NONE)
        return jp.err;
    for (size_t i = 0; i < jp.norder; i++) {
        const struct member *m = jp.order[i];
        struct edm_value v;
        err = convert(a, m, &v);
        if (err != TERR_NONE) {
            if (err == TERR_OutOfRangeInput)
                range_datetime(a, m, range);
            return err;
        }
        struct property *p = entity_add_ref(a, e, m->name, m->name_len);
        p->v = v;
    }
    if (mode == ENTITY_PARSE_INSERT && (!jp.pk.s || !jp.rk.s))
        return TERR_PropertiesNeedValue;
    if (jp.pk.s && (err = check_body_key(jp.pk.s, jp.pk.n, "PartitionKey", range)) != TERR_NONE)
        return err;
    if (jp.rk.s && (err = check_body_key(jp.rk.s, jp.rk.n, "RowKey", range)) != TERR_NONE)
        return err == TERR_KeyValueTooLarge ? TERR_RowKeyValueTooLarge : err;
    e->pk = jp.pk.s;
    e->pk_len = jp.pk.n;
    e->rk = jp.rk.s;
    e->rk_len = jp.rk.n;
    return entity_check_limits(e);
}

/* doc/protocol.md, Key values: well-formed UTF-8 (else InvalidInput) without / \ # ?
 * U+0000-001F U+007F-009F (else OutOfRangeInput, the service's answer for
 * such a key in a body), at most 1024 UTF-16 units. */
enum terr entity_check_key(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    if (utf8_check(s, n) != 0)
        return TERR_InvalidInput;
    /* 1: never in a key; 2: 0xC2, which starts U+0080..U+009F (refused)
     * when the next byte is at most 0x9F */
    static const unsigned char bad[256] = {
        [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1,
        [0x07] = 1, [0x08] = 1, [0x09] = 1, [0x0a] = 1, [0x0b] = 1, [0x0c] = 1, [0x0d] = 1,
        [0x0e] = 1, [0x0f] = 1, [0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1,
        [0x15] = 1, [0x16] = 1, [0x17] = 1, [0x18] = 1, [0x19] = 1, [0x1a] = 1, [0x1b] = 1,
        [0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1, [0x7f] = 1, ['/'] = 1, ['\\'] = 1,
        ['#'] = 1, ['?'] = 1, [0xc2] = 2,
    };
    for (size_t i = 0; i < n; i++) {
        unsigned char k = bad[p[i]];
        if (k == 1 || (k == 2 && i + 1 < n && p[i + 1] <= 0x9F))
            return TERR_OutOfRangeInput;
    }
    if (n > MAX_KEY_UTF16 && utf16_len(s, n) > MAX_KEY_UTF16)
        return TERR_KeyValueTooLarge;
    return TERR_NONE;
}

/* Whole-entity limits (doc/protocol.md, Entity limits; Entity size), also used after a merge. */
enum terr entity_check_limits(const struct entity *e)
{
    if (e->nprops > MAX_CUSTOM_PROPS)
        return TERR_TooManyProperties;
    if (entity_size_bound(e) > MAX_ENTITY_SIZE && entity_size(e) > MAX_ENTITY_SIZE)
        return TERR_EntityTooLarge;
    return TERR_NONE;
}

/* ------------------------------------------------------------------ */
/* Writing                                                              */
/* ------------------------------------------------------------------ */

/* Appends "s" for text that has nothing to escape (dates, GUIDs and ETags
 * this file formats itself): one copy, no scan. */
static void put_plain_string(struct buf *b, const char *s, size_t n)
{
    buf_reserve(b, n + 2);
    b->data[b->len++] = '"';
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len++] = '"';
    b->data[b->len] = '\0';
}

/* ,"name": (with the comma unless first) */
static void put_member(struct buf *b, int *first, const char *name, size_t n)
{
    if (!*first)
        buf_putc(b, ',');
    *first = 0;
    json_put_string(b, name, n);
    buf_putc(b, ':');
}

static void put_annotation(struct buf *b, int *first, const char *name, size_t n,
                           enum edm_type t)
{
    if (!*first)
        buf_putc(b, ',');
    *first = 0;
    buf_putc(b, '"');
    json_escape(b, name, n);
    buf_puts(b, "@odata.type\":\"");
    buf_puts(b, edm_type_name(t));
    buf_putc(b, '"');
}

/* Whether a stored value is written with its "@odata.type" (doc/protocol.md, Member order). */
static int needs_annotation(const struct edm_value *v)
{
    switch (v->type) {
    case EDM_INT64:
    case EDM_DATETIME:
    case EDM_GUID:
    case EDM_BINARY:
        return 1;
    case EDM_DOUBLE:
        return !isfinite(v->u.d);
    default:
        return 0;
    }
}

/* Decimal text of v (as printf's %lld) into out; returns its length. */
static size_t put_int(int64_t v, char *out)
{
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    size_t o = 0;
    if (v < 0)
        out[o++] = '-';
    return o + coding_u64_dec(u, out + o);
}

/* The value in its JSON form (doc/protocol.md, Edm value forms). */
static void put_value(struct buf *b, const struct edm_value *v)
{
    char tmp[64];
    size_t n;
    switch (v->type) {
    case EDM_STRING:
        json_put_string(b, v->u.s.ptr, v->u.s.len);
        break;
    case EDM_BINARY:
        buf_putc(b, '"');
        edm_base64_encode(b, (const uint8_t *)v->u.s.ptr, v->u.s.len);
        buf_putc(b, '"');
        break;
    case EDM_BOOLEAN:
        buf_puts(b, v->u.b ? "true" : "false");
        break;
    case EDM_DATETIME:
        n = edm_datetime_format(v->u.ticks, tmp);
        put_plain_string(b, tmp, n);
        break;
    case EDM_DOUBLE:
        n = edm_double_format(v->u.d, tmp);
        if (isfinite(v->u.d))
            buf_append(b, tmp, n);
        else
            json_put_string(b, tmp, n);
        break;
    case EDM_GUID:
        n = edm_guid_format(v->u.guid, tmp);
        put_plain_string(b, tmp, n);
        break;
    case EDM_INT32:
        n = put_int(v->u.i32, tmp);
        buf_append(b, tmp, n);
        break;
    case EDM_INT64:
        tmp[0] = '"';
        n = put_int(v->u.i64, tmp + 1);
        tmp[n + 1] = '"';
        buf_append(b, tmp, n + 2);
        break;
    }
}

static int select_has_star(const struct entity_json_ctx *ctx)
{
    for (size_t i = 0; i < ctx->nselect; i++)
        if (strcmp(ctx->select[i], "*") == 0)
            return 1;
    return 0;
}

/* Whether a property name is projected (doc/protocol.md, $select). */
static int selected(const struct entity_json_ctx *ctx, int all, const char *name, size_t n)
{
    if (all)
        return 1;
    for (size_t i = 0; i < ctx->nselect; i++)
        if (strlen(ctx->select[i]) == n && memcmp(ctx->select[i], name, n) == 0)
            return 1;
    return 0;
}

static size_t etag_from_text(const char *ts, size_t tn, char *out);

static void put_string_member(struct buf *b, int *first, const char *name, const char *s,
                              size_t n)
{
    put_member(b, first, name, strlen(name));
    json_put_string(b, s, n);
}

/* The custom properties of what is written, in stored order: a struct
 * entity's array, or an encoded value read in place (no decoding into an
 * entity, no allocation). */
struct prop_src {
    const struct entity *e; /* NULL: val */
    const void *val;
    size_t val_len;
};

struct prop_iter {
    const struct prop_src *src;
    size_t i;
    struct entity_cursor c;
};

/* Starts at the first property; for a value, also its Timestamp. 0, or -1
 * for a malformed value. */
static int prop_iter_open(struct prop_iter *it, const struct prop_src *src, int64_t *ts)
{
    it->src = src;
    it->i = 0;
    if (src->e) {
        *ts = src->e->timestamp;
        return 0;
    }
    return entity_cursor_open(&it->c, src->val, src->val_len, ts);
}

/* The next property: 1, 0 after the last, -1 malformed. */
static int prop_iter_next(struct prop_iter *it, const char **name, size_t *name_len,
                          struct edm_value *v)
{
    const struct entity *e = it->src->e;
    if (!e)
        return entity_cursor_next(&it->c, name, name_len, v);
    if (it->i == e->nprops)
        return 0;
    const struct property *p = &e->props[it->i++];
    *name = p->name;
    *name_len = p->name_len;
    *v = p->v;
    return 1;
}

/* 1 when the source has a property named name[0..n). */
static int prop_src_has(const struct prop_src *src, const char *name, size_t n)
{
    if (src->e)
        return entity_find(src->e, name, n) >= 0;
    struct entity_cursor c;
    struct edm_value v;
    int64_t ts;
    return entity_cursor_open(&c, src->val, src->val_len, &ts) == 0 &&
           entity_cursor_find(&c, name, n, &v) == 1;
}

/* One entry (see entity_json_write). 0, or -1 when an encoded value turns
 * out malformed part way (the entry is then incomplete). */
static int write_entry(struct buf *b, const char *pk, size_t pk_len, const char *rk,
                       size_t rk_len, const struct prop_src *src,
                       const struct entity_json_ctx *ctx)
{
    int first = 1;
    int all = ctx->select == NULL || select_has_star(ctx);
    char tmp[64];
    size_t n;
    int64_t timestamp;
    struct prop_iter it;
    if (prop_iter_open(&it, src, &timestamp) < 0)
        return -1;

    buf_putc(b, '{');
    if (ctx->level != ODATA_NOMETADATA && ctx->metadata)
        put_string_member(b, &first, "odata.metadata", ctx->metadata, strlen(ctx->metadata));
    if (ctx->level == ODATA_FULL) {
        put_member(b, &first, "odata.type", 10);
        buf_putc(b, '"');
        json_escape(b, ctx->account, strlen(ctx->account));
        buf_putc(b, '.');
        json_escape(b, ctx->table, strlen(ctx->table));
        buf_putc(b, '"');
        /* url_entity_path emits only pchars, none of which need escaping */
        put_member(b, &first, "odata.id", 8);
        buf_putc(b, '"');
        json_escape(b, ctx->base, strlen(ctx->base));
        buf_putc(b, '/');
        url_entity_path(b, ctx->table, pk, pk_len, rk, rk_len);
        buf_putc(b, '"');
    }
    /* the Timestamp's text, once: for the ETag and for the member */
    char ts[40];
    size_t tn = edm_datetime_format(timestamp, ts);
    if (ctx->level != ODATA_NOMETADATA) {
        /* the ETag's JSON text: its two inner quotes escaped */
        n = etag_from_text(ts, tn, tmp + 1);   /* W/"datetime'...'" */
        memcpy(tmp, "W/\\", 3);                 /* W/\"datetime'...'" */
        memcpy(tmp + n, "\\\"", 2);              /* W/\"datetime'...'\" */
        put_member(b, &first, "odata.etag", 10);
        put_plain_string(b, tmp, n + 2);
    }
    if (ctx->level == ODATA_FULL) {
        put_member(b, &first, "odata.editLink", 14);
        buf_putc(b, '"');
        url_entity_path(b, ctx->table, pk, pk_len, rk, rk_len);
        buf_putc(b, '"');
    }
    if (selected(ctx, all, "PartitionKey", 12))
        put_string_member(b, &first, "PartitionKey", pk, pk_len);
    if (selected(ctx, all, "RowKey", 6))
        put_string_member(b, &first, "RowKey", rk, rk_len);
    if (selected(ctx, all, "Timestamp", 9)) {
        if (ctx->level == ODATA_FULL)
            put_annotation(b, &first, "Timestamp", 9, EDM_DATETIME);
        put_member(b, &first, "Timestamp", 9);
        put_plain_string(b, ts, tn);
    }
    const char *name;
    size_t name_len;
    struct edm_value v;
    int rc;
    while ((rc = prop_iter_next(&it, &name, &name_len, &v)) == 1) {
        if (!selected(ctx, all, name, name_len))
            continue;
        if (ctx->level != ODATA_NOMETADATA && needs_annotation(&v))
            put_annotation(b, &first, name, name_len, v.type);
        put_member(b, &first, name, name_len);
        put_value(b, &v);
    }
    if (rc < 0)
        return -1;
    /* listed but absent: "X":null, in $select order, each once */
    for (size_t i = 0; !all && i < ctx->nselect; i++) {
        const char *s = ctx->select[i];
        size_t sl = strlen(s);
        if (strcmp(s, "PartitionKey") == 0 || strcmp(s, "RowKey") == 0 ||
            strcmp(s, "Timestamp") == 0 || prop_src_has(src, s, sl))
            continue;
        size_t j = 0;
        while (j < i && strcmp(ctx->select[j], s) != 0)
            j++;
        if (j < i)
            continue;
        put_member(b, &first, s, sl);
        buf_puts(b, "null");
    }
    buf_putc(b, '}');
    return 0;
}

void entity_json_write(struct buf *b, const struct entity *e, const struct entity_json_ctx *ctx)
{
    struct prop_src src = {e, NULL, 0};
    write_entry(b, e->pk ? e->pk : "", e->pk ? e->pk_len : 0, e->rk ? e->rk : "",
                e->rk ? e->rk_len : 0, &src, ctx);
}

int entity_json_write_value(struct buf *b, const char *pk, size_t pk_len, const char *rk,
                            size_t rk_len, const void *val, size_t val_len,
                            const struct entity_json_ctx *ctx)
{
    struct prop_src src = {NULL, val, val_len};
    size_t at = b->len;
    if (write_entry(b, pk, pk_len, rk, rk_len, &src, ctx) == 0)
        return 0;
    if (b->len > at) {   /* nothing of a malformed entry stays */
        b->len = at;
        b->data[at] = '\0';
    }
    return -1;
}

/* ------------------------------------------------------------------ */
/* ETags                                                                */
/* ------------------------------------------------------------------ */

#define ETAG_HEAD "W/\"datetime'"
#define ETAG_TAIL "'\""

/* W/"datetime'<Timestamp with ':' as %3A>'" (doc/protocol.md, Timestamp and ETag). */
size_t entity_etag(int64_t ticks, char *out)
{
    char ts[40];
    size_t tn = edm_datetime_format(ticks, ts);
    return etag_from_text(ts, tn, out);
}

/* The ETag of a Timestamp already formatted as ts[0..tn). */
static size_t etag_from_text(const char *ts, size_t tn, char *out)
{
    size_t n = 0;
    memcpy(out, ETAG_HEAD, sizeof ETAG_HEAD - 1);
    n += sizeof ETAG_HEAD - 1;
    for (size_t i = 0; i < tn; i++) {
        if (ts[i] == ':') {
            memcpy(out + n, "%3A", 3);
            n += 3;
        } else {
            out[n++] = ts[i];
        }
    }
    memcpy(out + n, ETAG_TAIL, sizeof ETAG_TAIL - 1);
    n += sizeof ETAG_TAIL - 1;
    out[n] = '\0';
    return n;
}

/* Weak ETags are the only well-formed If-Match values: W/ or w/, then a
 * quoted string whose inner quotes are escaped with a backslash. The
 * service answers one that names no current version with 412 and anything
 * else with 400 (doc/protocol.md, If-Match; Azure/Azurite#1229, #2013). */
int entity_etag_wellformed(const char *s, size_t n)
{
    if (n < 4 || (s[0] != 'W' && s[0] != 'w') || s[1] != '/' || s[2] != '"' || s[n - 1] != '"')
        return 0;
    for (size_t i = 3; i < n - 1; i++)
        if (s[i] == '"' && s[i - 1] != '\\')
            return 0;
    return 1;
}

/* Accepts exactly W/"datetime'T'" where T is a DateTime with ':' written
 * as ':' or %3A (doc/protocol.md, If-Match). */
int entity_etag_parse(const char *s, size_t n, int64_t *ticks)
{
    size_t hl = sizeof ETAG_HEAD - 1, tl = sizeof ETAG_TAIL - 1;
    if (n < hl + tl || memcmp(s, ETAG_HEAD, hl) != 0 || memcmp(s + n - tl, ETAG_TAIL, tl) != 0)
        return -1;
    const char *t = s + hl;
    size_t tn = n - hl - tl;
    char ts[64];
    size_t k = 0;
    for (size_t i = 0; i < tn; i++) {
        if (k == sizeof ts)
            return -1;
        if (t[i] == '%') {
            if (tn - i < 3 || t[i + 1] != '3' || (t[i + 2] != 'A' && t[i + 2] != 'a'))
                return -1;
            ts[k++] = ':';
            i += 2;
        } else {
            ts[k++] = t[i];
        }
    }
    return edm_datetime_parse(ts, k, ticks) == 0 ? 0 : -1;
}
