/* filter_eval.c - evaluates a compiled $filter against one entity or one
 * table name (doc/protocol.md, Filter evaluation).
 *
 * Every comparison is "property OP literal". A property the entity lacks
 * makes the comparison false whatever the operator; numbers widen only as
 * the table of doc/protocol.md, Filter evaluation allows (Int32 literal: Int32/Int64/Double properties;
 * Int64 literal: Int64/Double; Double literal: Double); any other pair of
 * types is a mismatch, decided by the one switch filter_options.mismatch. */
#include <math.h>
#include <string.h>

#include "codec/edm.h"
#include "filter/filter_ast.h"

/* Outcome of comparing a property value with a literal. */
enum cmp_kind {
    CMP_ORDERED,   /* c holds <0, 0, >0 */
    CMP_UNORDERED, /* NaN involved: only ne is true */
    CMP_MISMATCH,  /* types that do not compare */
};

/* Decodes one UTF-8 sequence of s[i..n) into *cp; returns its length. A
 * malformed byte is returned as itself (length 1) so that comparison stays
 * total and memory-safe on any input. */
static size_t utf8_decode(const unsigned char *s, size_t n, size_t i, uint32_t *cp)
{
    unsigned char c = s[i];
    size_t len;
    uint32_t v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        v = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        v = c & 0x07;
    } else {
        *cp = c;
        return 1;
    }
    if (i + len > n) {
        *cp = c;
        return 1;
    }
    for (size_t k = 1; k < len; k++) {
        if ((s[i + k] & 0xC0) != 0x80) {
            *cp = c;
            return 1;
        }
        v = v << 6 | (s[i + k] & 0x3F);
    }
    *cp = v;
    return len;
}

/* First and second UTF-16 code unit of code point cp (second 0 if none). */
static void utf16_units(uint32_t cp, uint32_t *u1, uint32_t *u2)
{
    if (cp >= 0x10000 && cp <= 0x10FFFF) {
        *u1 = 0xD800 + ((cp - 0x10000) >> 10);
        *u2 = 0xDC00 + ((cp - 0x10000) & 0x3FF);
    } else {
        *u1 = cp;
        *u2 = 0;
    }
}

/* Finds the first differing byte; the code point holding it starts at the
 * same offset in both strings (they agree before it), so decoding from
 * there and comparing UTF-16 units gives the UTF-16 order. */
int filter_strcmp16(const char *a, size_t an, const char *b, size_t bn)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    size_t n = an < bn ? an : bn, i = 0;
    while (i < n && x[i] == y[i])
        i++;
    if (i == n)
        return an < bn ? -1 : an > bn ? 1 : 0;
    size_t start = i;
    while (start > 0 && i - start < 3 && (x[start] & 0xC0) == 0x80)
        start--;
    uint32_t ca, cb, a1, a2, b1, b2;
    utf8_decode(x, an, start, &ca);
    utf8_decode(y, bn, start, &cb);
    utf16_units(ca, &a1, &a2);
    utf16_units(cb, &b1, &b2);
    if (a1 != b1)
        return a1 < b1 ? -1 : 1;
    if (a2 != b2)
        return a2 < b2 ? -1 : 1;
    return x[i] < y[i] ? -1 : 1; /* malformed input: fall back to bytes */
}

/* Exact comparison of a double with an int64 (no rounding of i). */
static enum cmp_kind cmp_double_int64(double d, int64_t i, int *c)
{
    if (isnan(d))
        return CMP_UNORDERED;
    if (d < -9223372036854775808.0) {
        *c = -1;
    } else if (d >= 9223372036854775808.0) {
        *c = 1;
    } else {
        int64_t t = (int64_t)d; /* truncation, in range */
        if (t != i) {
            *c = t < i ? -1 : 1;
        } else {
            double frac = d - (double)t;
            *c = frac < 0 ? -1 : frac > 0 ? 1 : 0;
        }
    }
    return CMP_ORDERED;
}

/* -1, 0, 1 as a is below, equal to, above b. */
static int sign64(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b ? 1 : 0;
}

/* Numeric comparison per the widening table; v is the property value. */
static enum cmp_kind cmp_numeric(const struct edm_value *v, const struct edm_value *lit, int *c)
{
    int64_t li;
    switch (lit->type) {
    case EDM_INT32:
    case EDM_INT64:
        li = lit->type == EDM_INT32 ? lit->u.i32 : lit->u.i64;
        if (v->type == EDM_INT32 && lit->type == EDM_INT32) {
            *c = sign64(v->u.i32, li);
            return CMP_ORDERED;
        }
        if (v->type == EDM_INT64) {
            *c = sign64(v->u.i64, li);
            return CMP_ORDERED;
        }
        if (v->type == EDM_DOUBLE)
            return cmp_double_int64(v->u.d, li, c);
        return CMP_MISMATCH;
    case EDM_DOUBLE:
        if (v->type != EDM_DOUBLE)
            return CMP_MISMATCH;
        if (isnan(v->u.d) || isnan(lit->u.d))
            return CMP_UNORDERED;
        *c = v->u.d < lit->u.d ? -1 : v->u.d > lit->u.d ? 1 : 0;
        return CMP_ORDERED;
    default:
        return CMP_MISMATCH;
    }
}

/* Same-type comparison of v with n's literal (numbers via cmp_numeric). */
static enum cmp_kind cmp_value(const struct fnode *n, const struct edm_value *v, int *c)
{
    const struct edm_value *lit = &n->lit;
    if (lit->type == EDM_INT32 || lit->type == EDM_INT64 || lit->type == EDM_DOUBLE)
        return cmp_numeric(v, lit, c);
    if (v->type != lit->type)
        return CMP_MISMATCH;
    switch (lit->type) {
    case EDM_STRING:
        *c = filter_strcmp16(v->u.s.ptr, v->u.s.len, lit->u.s.ptr, lit->u.s.len);
        return CMP_ORDERED;
    case EDM_BINARY: {
        size_t m = v->u.s.len < lit->u.s.len ? v->u.s.len : lit->u.s.len;
        int r = m ? memcmp(v->u.s.ptr, lit->u.s.ptr, m) : 0;
        *c = r ? r : v->u.s.len < lit->u.s.len ? -1 : v->u.s.len > lit->u.s.len ? 1 : 0;
        return CMP_ORDERED;
    }
    case EDM_BOOLEAN:
        *c = (v->u.b != 0) - (lit->u.b != 0);
        return CMP_ORDERED;
    case EDM_DATETIME:
        *c = sign64(v->u.ticks, lit->u.ticks);
        return CMP_ORDERED;
    case EDM_GUID:
        if (n->op == FOP_EQ || n->op == FOP_NE) {
            *c = memcmp(v->u.guid, lit->u.guid, 16) != 0;
        } else {
            char text[37];
            edm_guid_format(v->u.guid, text);
            *c = strcmp(text, n->guid_text);
        }
        return CMP_ORDERED;
    default:
        return CMP_MISMATCH;
    }
}

/* Result of n's comparison for property value v (never NULL here). */
int fnode_eval_cmp(const struct filter *f, const struct fnode *n, const struct edm_value *v)
{
    int c = 0;
    switch (cmp_value(n, v, &c)) {
    case CMP_ORDERED:
        switch (n->op) {
        case FOP_EQ: return c == 0;
        case FOP_NE: return c != 0;
        case FOP_GT: return c > 0;
        case FOP_GE: return c >= 0;
        case FOP_LT: return c < 0;
        case FOP_LE: return c <= 0;
        }
        return 0;
    case CMP_UNORDERED:
        return n->op == FOP_NE;
    case CMP_MISMATCH:
        if (f->opt.mismatch == FILTER_MISMATCH_CLOUDSTUB)
            return n->op == FOP_NE || n->op == FOP_LT || n->op == FOP_LE;
        return 0;
    }
    return 0;
}

/* What the filter is evaluated against. */
struct subject {
    const struct filter_row *row; /* FILTER_ENTITIES */
    struct entity_cursor first;   /* its value opened at the first property */
    int64_t timestamp;            /* its Timestamp (from the header) */
    const char *table;            /* FILTER_TABLES */
    size_t table_len;
    int bad;                      /* the row's value is malformed */
};

/* The value of n's property, or NULL when the subject lacks it (or its
 * value turns out malformed: s->bad). Custom properties are looked up in
 * the stored bytes, skipping the others unread. */
static const struct edm_value *lookup(struct subject *s, const struct fnode *n,
                                      struct edm_value *tmp)
{
    switch (n->prop) {
    case FP_PK:
        tmp->type = EDM_STRING;
        tmp->u.s.ptr = s->row->pk;
        tmp->u.s.len = s->row->pk_len;
        return tmp;
    case FP_RK:
        tmp->type = EDM_STRING;
        tmp->u.s.ptr = s->row->rk;
        tmp->u.s.len = s->row->rk_len;
        return tmp;
    case FP_TIMESTAMP:
        tmp->type = EDM_DATETIME;
        tmp->u.ticks = s->timestamp;
        return tmp;
    case FP_TABLENAME:
        tmp->type = EDM_STRING;
        tmp->u.s.ptr = s->table;
        tmp->u.s.len = s->table_len;
        return tmp;
    case FP_CUSTOM: {
        if (!s->row)
            return NULL;
        struct entity_cursor c = s->first;
        int rc = entity_cursor_find(&c, n->name, n->name_len, tmp);
        if (rc < 0)
            s->bad = 1;
        return rc == 1 ? tmp : NULL;
    }
    }
    return NULL;
}

/* Value of subtree n for subject s; and/or short-circuit. */
static int eval(const struct filter *f, const struct fnode *n, struct subject *s)
{
    struct edm_value tmp;
    const struct edm_value *v;
    switch (n->kind) {
    case FN_AND:
        for (const struct fnode *k = n->kids; k; k = k->next)
            if (!eval(f, k, s))
                return 0;
        return 1;
    case FN_OR:
        for (const struct fnode *k = n->kids; k; k = k->next)
            if (eval(f, k, s))
                return 1;
        return 0;
    case FN_NOT:
        return !eval(f, n->kids, s);
    case FN_CMP:
        v = lookup(s, n, &tmp);
        return v ? fnode_eval_cmp(f, n, v) : 0;
    case FN_BOOL:
        v = lookup(s, n, &tmp);
        return v && v->type == EDM_BOOLEAN && v->u.b;
    case FN_CONST:
        return n->lit.u.b != 0;
    }
    return 0;
}

/* Bumps the caller's counters, if any, and passes r through. */
static int count(const struct filter *f, int r)
{
    if (f->stats) {
        f->stats->examined++;
        if (r)
            f->stats->matched++;
    }
    return r;
}

void filter_set_stats(struct filter *f, struct filter_stats *st)
{
    f->stats = st;
}

/* 1 when a subtree names PartitionKey or RowKey. */
static int uses_keys(const struct fnode *n)
{
    if (n->kind == FN_CMP || n->kind == FN_BOOL)
        return n->prop == FP_PK || n->prop == FP_RK;
    for (const struct fnode *k = n->kids; k; k = k->next)
        if (uses_keys(k))
            return 1;
    return 0;
}

int filter_needs_keys(const struct filter *f)
{
    return f->target == FILTER_ENTITIES && uses_keys(f->root);
}

int filter_match(const struct filter *f, const struct filter_row *row)
{
    struct subject s = {.row = row};
    if (f->target != FILTER_ENTITIES)
        return count(f, 0);
    if (row && entity_cursor_open(&s.first, row->val, row->val_len, &s.timestamp) < 0)
        return -1;
    int r = eval(f, f->root, &s);
    if (s.bad)
        return -1;
    return count(f, r);
}

int filter_match_table(const struct filter *f, const char *name, size_t len)
{
    struct subject s = {.table = name, .table_len = len};
    if (f->target != FILTER_TABLES || f->never)
        return count(f, 0);
    return count(f, eval(f, f->root, &s));
}
