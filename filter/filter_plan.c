/* filter_plan.c - key ranges from a compiled $filter (see filter.h).
 *
 * Each subtree is planned as a union of boxes: a PartitionKey interval
 * times a RowKey interval (TableName uses the PartitionKey axis). A
 * comparison on PartitionKey / RowKey / TableName gives one box (two for
 * ne), anything else the whole space; `and` intersects box by box, `or`
 * concatenates, `not` gives the whole space. Too many boxes are replaced by
 * their hull, so the result stays a superset. At the end boxes become key
 * ranges (a box whose PartitionKey interval is one value keeps its RowKey
 * interval exactly; otherwise the RowKey interval can only trim the first
 * and last partition), which are sorted and merged. */
#include <string.h>

#include "filter/filter_ast.h"

/* One side of a string interval. */
struct end {
    int set; /* 0: unbounded */
    const char *s;
    size_t n;
    int inc;
};

struct ivl {
    struct end lo, hi;
};

struct box {
    struct ivl pk, rk;
};

struct boxes {
    struct box *b;
    size_t n;
};

/* Intersecting two sets of more than this many box pairs first replaces the
 * larger side by its hull, so planning stays cheap on adversarial input. */
#define PLAN_MAX_PAIRS FILTER_PLAN_MAX_RANGES

/* UTF-16 order of the strings of two set ends. */
static int str_cmp(const struct end *a, const struct end *b)
{
    return filter_strcmp16(a->s, a->n, b->s, b->n);
}

/* The tighter of two lower ends (max) or of two upper ends (min). */
static struct end tighter(struct end a, struct end b, int upper)
{
    if (!a.set)
        return b;
    if (!b.set)
        return a;
    int c = str_cmp(&a, &b);
    if (c == 0)
        return a.inc ? b : a; /* exclusive is tighter */
    return (c > 0) != upper ? a : b;
}

/* The looser of two ends (for hulls). */
static struct end looser(struct end a, struct end b, int upper)
{
    if (!a.set)
        return a;
    if (!b.set)
        return b;
    int c = str_cmp(&a, &b);
    if (c == 0)
        return a.inc ? a : b;
    return (c > 0) != upper ? b : a;
}

/* 1 when no string lies in v. */
static int ivl_empty(const struct ivl *v)
{
    if (!v->lo.set || !v->hi.set)
        return 0;
    int c = str_cmp(&v->lo, &v->hi);
    return c > 0 || (c == 0 && !(v->lo.inc && v->hi.inc));
}

/* Intersection of two intervals. */
static struct ivl ivl_meet(const struct ivl *a, const struct ivl *b)
{
    struct ivl r = {tighter(a->lo, b->lo, 0), tighter(a->hi, b->hi, 1)};
    return r;
}

/* Smallest interval covering both. */
static struct ivl ivl_join(const struct ivl *a, const struct ivl *b)
{
    struct ivl r = {looser(a->lo, b->lo, 0), looser(a->hi, b->hi, 1)};
    return r;
}

/* 1 when b restricts neither key. */
static int box_full(const struct box *b)
{
    return !b->pk.lo.set && !b->pk.hi.set && !b->rk.lo.set && !b->rk.hi.set;
}

/* n zeroed (that is, unbounded) boxes. */
static struct boxes boxes_alloc(struct arena *a, size_t n)
{
    struct boxes r = {arena_calloc(a, (n ? n : 1) * sizeof(struct box)), n};
    return r;
}

/* The whole key space: one unbounded box. */
static struct boxes boxes_full(struct arena *a)
{
    return boxes_alloc(a, 1);
}

/* Widens *h to cover b[0..n). */
static void hull_into(struct box *h, const struct box *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h->pk = ivl_join(&h->pk, &b[i].pk);
        h->rk = ivl_join(&h->rk, &b[i].rk);
    }
}

/* One box covering all of s (s non-empty). */
static struct boxes boxes_hull(struct arena *a, struct boxes s)
{
    struct boxes r = boxes_alloc(a, 1);
    r.b[0] = s.b[0];
    hull_into(&r.b[0], s.b + 1, s.n - 1);
    return r;
}

/* Boxes where "key OP value" holds on one axis (rk_axis selects RowKey). */
static struct boxes boxes_cmp(struct arena *a, int rk_axis, enum fop op, const char *s, size_t n)
{
    struct end v = {1, s, n, 1};
    struct boxes r = boxes_alloc(a, op == FOP_NE ? 2 : 1);
    struct ivl *x = rk_axis ? &r.b[0].rk : &r.b[0].pk;
    switch (op) {
    case FOP_EQ:
        x->lo = x->hi = v;
        break;
    case FOP_GE:
        x->lo = v;
        break;
    case FOP_LE:
        x->hi = v;
        break;
    case FOP_GT:
    case FOP_LT:
    case FOP_NE:
        v.inc = 0;
        if (op != FOP_LT)
            x->lo = v;
        if (op != FOP_GT) {
            struct ivl *y = op == FOP_NE ? (rk_axis ? &r.b[1].rk : &r.b[1].pk) : x;
            y->hi = v;
        }
        break;
    }
    return r;
}

/* Plan of one comparison or bare property. */
static struct boxes plan_leaf(const struct filter *f, const struct fnode *n, struct arena *a)
{
    int keyed = n->prop == FP_PK || n->prop == FP_RK || n->prop == FP_TABLENAME;
    if (!keyed)
        return boxes_full(a);
    struct boxes none = {NULL, 0};
    if (n->kind == FN_BOOL)
        return none; /* a String key is never a true Boolean */
    if (n->lit.type != EDM_STRING) {
        if (f->opt.mismatch == FILTER_MISMATCH_CLOUDSTUB &&
            (n->op == FOP_NE || n->op == FOP_LT || n->op == FOP_LE))
            return boxes_full(a);
        return none;
    }
    const char *s = n->lit.u.s.ptr;
    size_t len = n->lit.u.s.len;
    enum fop op = n->op;
    const char *nul = memchr(s, 0, len);
    if (nul) {
        /* Keys never hold U+0000, and the backend layout uses 0x00 as the
         * PK/RK separator, so restate the bound without it: for keys K,
         * K >= "a\0x" and K > "a\0x" mean K > "a"; K < / <= "a\0x" mean
         * K <= "a"; eq never holds and ne always does. */
        if (op == FOP_EQ)
            return none;
        if (op == FOP_NE)
            return boxes_full(a);
        len = (size_t)(nul - s);
        op = (op == FOP_GT || op == FOP_GE) ? FOP_GT : FOP_LE;
    }
    return boxes_cmp(a, n->prop == FP_RK, op, s, len);
}

/* Intersects every box of x with y, in place (each box set belongs to the
 * one node that produced it), dropping empty results. */
static struct boxes meet_one(struct boxes x, const struct box *y)
{
    size_t n = 0;
    for (size_t i = 0; i < x.n; i++) {
        struct box b = {ivl_meet(&x.b[i].pk, &y->pk), ivl_meet(&x.b[i].rk, &y->rk)};
        if (!ivl_empty(&b.pk) && !ivl_empty(&b.rk))
            x.b[n++] = b;
    }
    x.n = n;
    return x;
}

/* Pairwise intersection of x and y, empty boxes dropped. */
static struct boxes boxes_meet(struct arena *a, struct boxes x, struct boxes y)
{
    if (x.n == 0 || y.n == 0)
        return x.n == 0 ? x : y;
    if (x.n * y.n > PLAN_MAX_PAIRS) {
        if (x.n >= y.n)
            x = boxes_hull(a, x);
        else
            y = boxes_hull(a, y);
    }
    if (y.n == 1)
        return meet_one(x, &y.b[0]);
    if (x.n == 1)
        return meet_one(y, &x.b[0]);
    struct boxes r = boxes_alloc(a, x.n * y.n);
    r.n = 0;
    for (size_t i = 0; i < x.n; i++)
        for (size_t j = 0; j < y.n; j++) {
            struct box b = {ivl_meet(&x.b[i].pk, &y.b[j].pk), ivl_meet(&x.b[i].rk, &y.b[j].rk)};
            if (!ivl_empty(&b.pk) && !ivl_empty(&b.rk))
                r.b[r.n++] = b;
        }
    if (r.n > FILTER_PLAN_MAX_RANGES)
        r = boxes_hull(a, r);
    return r;
}

/* The union being built for an `or`: an array grown by doubling, collapsed
 * to its hull when it would pass FILTER_PLAN_MAX_RANGES boxes. */
struct unite {
    struct box *b;
    size_t n, cap;
    int full;
};

/* Adds the boxes of y to the union u. */
static void unite_add(struct arena *a, struct unite *u, struct boxes y)
{
    if (u->full || y.n == 0)
        return;
    for (size_t i = 0; i < y.n; i++)
        if (box_full(&y.b[i])) {
            u->full = 1;
            return;
        }
    if (u->n + y.n > FILTER_PLAN_MAX_RANGES) {
        struct box h = u->n ? u->b[0] : y.b[0];
        hull_into(&h, u->b, u->n);
        hull_into(&h, y.b, y.n);
        if (u->cap == 0) {
            u->b = arena_alloc(a, sizeof *u->b);
            u->cap = 1;
        }
        u->b[0] = h;
        u->n = 1;
        return;
    }
    if (u->n + y.n > u->cap) {
        size_t cap = u->cap ? u->cap : 4;
        while (cap < u->n + y.n)
            cap *= 2;
        struct box *nb = arena_alloc(a, cap * sizeof *nb);
        if (u->n)
            memcpy(nb, u->b, u->n * sizeof *nb);
        u->b = nb;
        u->cap = cap;
    }
    memcpy(u->b + u->n, y.b, y.n * sizeof *y.b);
    u->n += y.n;
}

/* 1 / 0 when subtree n is the constant true / false whatever the entity
 * (built from the literals true and false only), else -1. */
static int const_value(const struct fnode *n)
{
    int all = 1, v;
    switch (n->kind) {
    case FN_CONST:
        return n->lit.u.b != 0;
    case FN_NOT:
        v = const_value(n->kids);
        return v < 0 ? v : !v;
    case FN_AND:
    case FN_OR:
        /* and: a false kid decides; or: a true kid decides */
        for (const struct fnode *k = n->kids; k; k = k->next) {
            v = const_value(k);
            if (v == (n->kind == FN_OR))
                return v;
            if (v < 0)
                all = 0;
        }
        return all ? n->kind == FN_AND : -1;
    default:
        return -1;
    }
}

/* Boxes covering every key for which subtree n can be true. */
static struct boxes plan_node(const struct filter *f, const struct fnode *n, struct arena *a)
{
    struct boxes r;
    struct boxes none = {NULL, 0};
    switch (n->kind) {
    case FN_AND:
        r = boxes_full(a);
        for (const struct fnode *k = n->kids; k && r.n; k = k->next)
            r = boxes_meet(a, r, plan_node(f, k, a));
        return r;
    case FN_OR: {
        struct unite u = {NULL, 0, 0, 0};
        for (const struct fnode *k = n->kids; k && !u.full; k = k->next)
            unite_add(a, &u, plan_node(f, k, a));
        if (u.full)
            return boxes_full(a);
        r.b = u.b;
        r.n = u.n;
        return r;
    }
    case FN_NOT:
        /* Only a constant subtree is planned through a `not`. */
        return const_value(n->kids) == 1 ? none : boxes_full(a);
    case FN_CONST:
        return n->lit.u.b ? boxes_full(a) : none;
    case FN_CMP:
    case FN_BOOL:
        return plan_leaf(f, n, a);
    }
    return boxes_full(a);
}

/* ---- ranges ---- */

/* A range end as a point of the (PK, RK) line: pk, then rk where
 * rk_kind -1/+1 stand for before/after every RowKey, then eps -1/0/+1 for
 * "just before" / "at" / "just after". inf -1/+1: the ends of the line. */
struct edge {
    int inf;
    const char *pk;
    size_t pk_n;
    int rk_kind;
    const char *rk;
    size_t rk_n;
    int eps;
};

/* The point of the key line where bound b (lower or upper) sits. */
static struct edge edge_of(const struct filter_bound *b, int upper)
{
    struct edge e = {0, b->pk, b->pk_len, 0, b->rk, b->rk_len, 0};
    if (b->unbounded) {
        e.inf = upper ? 1 : -1;
    } else if (!b->has_rk) {
        /* PK >= p: from (p,-inf); PK > p: after (p,+inf); PK <= p: up to
         * (p,+inf); PK < p: before (p,-inf). */
        e.rk_kind = (upper == b->inclusive) ? 1 : -1;
        e.eps = b->inclusive ? 0 : upper ? -1 : 1;
    } else {
        e.eps = b->inclusive ? 0 : upper ? -1 : 1;
    }
    return e;
}

/* Order of two edges along the key line. */
static int edge_cmp(const struct edge *x, const struct edge *y)
{
    if (x->inf || y->inf)
        return x->inf < y->inf ? -1 : x->inf > y->inf ? 1 : 0;
    int c = filter_strcmp16(x->pk, x->pk_n, y->pk, y->pk_n);
    if (c)
        return c;
    if (x->rk_kind != y->rk_kind)
        return x->rk_kind < y->rk_kind ? -1 : 1;
    if (x->rk_kind == 0 && (c = filter_strcmp16(x->rk, x->rk_n, y->rk, y->rk_n)))
        return c;
    return x->eps < y->eps ? -1 : x->eps > y->eps ? 1 : 0;
}

/* 1 when r's lower edge lies past its upper edge. */
static int range_empty(const struct filter_range *r)
{
    struct edge lo = edge_of(&r->lo, 0), hi = edge_of(&r->hi, 1);
    return edge_cmp(&lo, &hi) > 0;
}

/* A range end from a box's PartitionKey end and RowKey end (the same
 * side); the RowKey end only sharpens an inclusive PartitionKey end. */
static struct filter_bound bound_of(const struct end *pk, const struct end *rk)
{
    struct filter_bound b;
    memset(&b, 0, sizeof b);
    if (!pk->set) {
        b.unbounded = 1;
        return b;
    }
    b.pk = pk->s;
    b.pk_len = pk->n;
    b.inclusive = pk->inc;
    if (pk->inc && rk->set) {
        /* The RowKey bound applies within partition pk itself. */
        b.has_rk = 1;
        b.rk = rk->s;
        b.rk_len = rk->n;
        b.inclusive = rk->inc;
    }
    return b;
}

/* Sorts r[0..n) by lower edge (insertion sort: n <= FILTER_PLAN_MAX_RANGES). */
static void ranges_sort(struct filter_range *r, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct filter_range x = r[i];
        struct edge ex = edge_of(&x.lo, 0);
        size_t j = i;
        while (j > 0) {
            struct edge ej = edge_of(&r[j - 1].lo, 0);
            if (edge_cmp(&ej, &ex) <= 0)
                break;
            r[j] = r[j - 1];
            j--;
        }
        r[j] = x;
    }
}

/* Sorts, drops empty ranges and merges overlapping ones, in place. */
static void ranges_normalise(struct filter_plan *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        if (!range_empty(&p->ranges[i]))
            p->ranges[n++] = p->ranges[i];
    ranges_sort(p->ranges, n);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out > 0) {
            struct filter_range *cur = &p->ranges[out - 1];
            struct edge chi = edge_of(&cur->hi, 1), nlo = edge_of(&p->ranges[i].lo, 0);
            if (edge_cmp(&nlo, &chi) <= 0) {
                struct edge nhi = edge_of(&p->ranges[i].hi, 1);
                if (edge_cmp(&nhi, &chi) > 0)
                    cur->hi = p->ranges[i].hi;
                continue;
            }
        }
        p->ranges[out++] = p->ranges[i];
    }
    p->n = out;
}

int filter_plan(const struct filter *f, struct arena *a, struct filter_plan *out)
{
    /* Boxes live in a scratch arena freed below; they point only into the
     * filter's literals, and only the final ranges go into a. */
    struct arena *tmp = arena_new(0);
    struct boxes bx = {NULL, 0};
    if (!(f->target == FILTER_TABLES && f->never))
        bx = plan_node(f, f->root, tmp);
    out->ranges = arena_calloc(a, (bx.n ? bx.n : 1) * sizeof *out->ranges);
    out->n = bx.n;
    for (size_t i = 0; i < bx.n; i++) {
        const struct box *b = &bx.b[i];
        struct filter_range *r = &out->ranges[i];
        if (b->pk.lo.set && b->pk.hi.set && b->pk.lo.inc && b->pk.hi.inc &&
            str_cmp(&b->pk.lo, &b->pk.hi) == 0) {
            /* One partition: the RowKey interval is exact. */
            struct end whole = b->pk.lo;
            r->lo = bound_of(&whole, &b->rk.lo);
            r->hi = bound_of(&whole, &b->rk.hi);
        } else {
            r->lo = bound_of(&b->pk.lo, &b->rk.lo);
            r->hi = bound_of(&b->pk.hi, &b->rk.hi);
        }
    }
    arena_free(tmp);
    ranges_normalise(out);
    return 0;
}

int filter_plan_is_full(const struct filter_plan *p)
{
    return p->n == 1 && p->ranges[0].lo.unbounded && p->ranges[0].hi.unbounded;
}

int filter_range_is_point(const struct filter_range *r)
{
    const struct filter_bound *lo = &r->lo, *hi = &r->hi;
    return !lo->unbounded && !hi->unbounded && lo->has_rk && hi->has_rk && lo->inclusive &&
           hi->inclusive && filter_strcmp16(lo->pk, lo->pk_len, hi->pk, hi->pk_len) == 0 &&
           filter_strcmp16(lo->rk, lo->rk_len, hi->rk, hi->rk_len) == 0;
}

int filter_plan_contains(const struct filter_plan *p, const char *pk, size_t pk_len,
                         const char *rk, size_t rk_len)
{
    struct edge k = {0, pk, pk_len, 0, rk ? rk : "", rk ? rk_len : 0, 0};
    for (size_t i = 0; i < p->n; i++) {
        struct edge lo = edge_of(&p->ranges[i].lo, 0), hi = edge_of(&p->ranges[i].hi, 1);
        if (edge_cmp(&lo, &k) <= 0 && edge_cmp(&k, &hi) <= 0)
            return 1;
    }
    return 0;
}

/* ---- case folding for table names ---- */

/* Arena copy of s[0..n) with A-Z lower-cased. */
static char *ascii_lower(struct arena *a, const char *s, size_t n)
{
    char *r = arena_alloc(a, n + 1);
    for (size_t i = 0; i < n; i++)
        r[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] + 32) : s[i];
    r[n] = '\0';
    return r;
}

/* Upper end "< the first string after every string starting with s[0..n)"
 * (s is ASCII), or unbounded when there is none. */
static struct filter_bound prefix_end(struct arena *a, const char *s, size_t n)
{
    struct filter_bound b;
    memset(&b, 0, sizeof b);
    while (n > 0 && (unsigned char)s[n - 1] >= 0x7F)
        n--;
    if (n == 0) {
        b.unbounded = 1;
        return b;
    }
    char *r = ascii_lower(a, s, n);
    r[n - 1]++;
    b.pk = r;
    b.pk_len = n;
    return b;
}

/* Lower end for lower(N) given N >= / > lo: the leading run of lo free of
 * upper-case letters and non-ASCII is unchanged by folding, and every N
 * past lo folds to at least that run. */
static struct filter_bound fold_lo(struct arena *a, const struct filter_bound *lo)
{
    struct filter_bound b = *lo;
    if (lo->unbounded)
        return b;
    size_t k = 0;
    while (k < lo->pk_len && !(lo->pk[k] >= 'A' && lo->pk[k] <= 'Z') &&
           (unsigned char)lo->pk[k] < 0x80)
        k++;
    if (k == lo->pk_len)
        return b;
    if (k == 0) {
        b.unbounded = 1;
        return b;
    }
    b.pk = arena_strndup(a, lo->pk, k);
    b.pk_len = k;
    b.inclusive = 1;
    return b;
}

/* Upper end for lower(N) given N <= / < hi: while hi's characters are not
 * in '['..'z' (nor non-ASCII), a smaller character folds below hi's folded
 * one; past that point only hi's folded prefix can bound lower(N). */
static struct filter_bound fold_hi(struct arena *a, const struct filter_bound *hi)
{
    struct filter_bound b = *hi;
    if (hi->unbounded)
        return b;
    size_t k = 0;
    while (k < hi->pk_len && !(hi->pk[k] >= '[' && hi->pk[k] <= 'z') &&
           (unsigned char)hi->pk[k] < 0x80)
        k++;
    if (k == hi->pk_len) {
        b.pk = ascii_lower(a, hi->pk, hi->pk_len);
        return b;
    }
    return prefix_end(a, hi->pk, k);
}

/* The tighter of two lower (upper = 0) or upper (upper = 1) bounds. */
static struct filter_bound tighter_bound(const struct filter_bound *x, const struct filter_bound *y,
                                         int upper)
{
    struct edge ex = edge_of(x, upper), ey = edge_of(y, upper);
    int c = edge_cmp(&ex, &ey);
    return (c > 0) != upper ? *x : *y;
}

void filter_plan_fold_case(struct arena *a, const struct filter_plan *in, struct filter_plan *out)
{
    out->ranges = arena_calloc(a, (in->n ? in->n : 1) * sizeof *out->ranges);
    out->n = in->n;
    for (size_t i = 0; i < in->n; i++) {
        const struct filter_range *r = &in->ranges[i];
        struct filter_range *o = &out->ranges[i];
        if (!r->lo.unbounded && !r->hi.unbounded && r->lo.inclusive && r->hi.inclusive &&
            r->lo.pk_len == r->hi.pk_len && memcmp(r->lo.pk, r->hi.pk, r->lo.pk_len) == 0) {
            /* eq: the folded point. */
            o->lo = r->lo;
            o->lo.pk = ascii_lower(a, r->lo.pk, r->lo.pk_len);
            o->hi = o->lo;
            continue;
        }
        o->lo = fold_lo(a, &r->lo);
        o->hi = fold_hi(a, &r->hi);
        if (!r->lo.unbounded && !r->hi.unbounded) {
            /* Every N between lo and hi starts with their common prefix. */
            size_t c = 0;
            while (c < r->lo.pk_len && c < r->hi.pk_len && r->lo.pk[c] == r->hi.pk[c] &&
                   (unsigned char)r->lo.pk[c] < 0x80)
                c++;
            if (c > 0) {
                struct filter_bound plo;
                memset(&plo, 0, sizeof plo);
                plo.pk = ascii_lower(a, r->lo.pk, c);
                plo.pk_len = c;
                plo.inclusive = 1;
                struct filter_bound phi = prefix_end(a, r->lo.pk, c);
                o->lo = tighter_bound(&o->lo, &plo, 0);
                o->hi = tighter_bound(&o->hi, &phi, 1);
            }
        }
    }
    ranges_normalise(out);
}
