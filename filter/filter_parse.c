/* filter_parse.c - $filter grammar (doc/protocol.md, Filter grammar) into the tree of filter_ast.h.
 *
 *   filter  = or-expr END
 *   or-expr = and-expr *("or" and-expr)        n-ary FN_OR
 *   and-expr= unary *("and" unary)             n-ary FN_AND
 *   unary   = "not" unary / primary
 *   primary = "(" or-expr ")" / operand [comp-op operand]
 *
 * Unsupported but well-formed constructs (property vs property, literal vs
 * literal, functions, arithmetic, '/' paths, null) and terms that are not
 * Boolean where a Boolean is needed (`1`, `'x'`, a bare PartitionKey) are
 * parsed on to the end and only remembered, so a syntax error anywhere in
 * the text wins over them, as it would in a parse-then-check service. The
 * literals true and false are constants wherever a Boolean is needed. */
#include <stdio.h>
#include <string.h>

#include "codec/edm.h"
#include "filter/filter_ast.h"

enum operand_kind { OPD_PROP, OPD_LIT, OPD_NULL, OPD_OTHER };

struct operand {
    enum operand_kind kind;
    const char *name; /* OPD_PROP */
    size_t name_len;
    struct edm_value lit; /* OPD_LIT */
};

struct fparser {
    struct flexer lx;
    struct ftok tok; /* current token */
    struct filter *f;
    int depth;
    int ncmp;
    int syntax;        /* a syntax error was found ... */
    size_t syntax_pos; /* ... at this byte offset */
    enum terr sem;     /* first non-syntax error, or TERR_NONE */
    const char *sem_msg;
    const struct fnode *sem_node; /* the non-Boolean term behind sem, if any */
};

/* The service's words for a whole $filter that is not Boolean (seen for
 * `$filter=1`, Azure/Azurite#1185). */
static const char not_boolean_msg[] = "The $filter expression must evaluate to a single boolean value.";

/* Records a syntax error at byte offset pos; returns NULL for chaining. */
static struct fnode *syntax_error(struct fparser *p, size_t pos)
{
    if (!p->syntax) {
        p->syntax = 1;
        p->syntax_pos = pos;
    }
    return NULL;
}

/* Remembers the first unsupported construct; parsing goes on. */
static void semantic_error(struct fparser *p, enum terr e, const char *msg)
{
    if (p->sem == TERR_NONE) {
        p->sem = e;
        p->sem_msg = msg;
    }
}

/* Moves to the next token; 0, or -1 after recording a lexical error. */
static int advance(struct fparser *p)
{
    if (flex_next(&p->lx, &p->tok) != 0) {
        syntax_error(p, p->tok.pos);
        return -1;
    }
    return 0;
}

/* 1 when the current token is the (lower-case) keyword kw. */
static int tok_is(const struct fparser *p, const char *kw)
{
    return p->tok.kind == FT_WORD && flex_is(p->tok.word, p->tok.word_len, kw);
}

/* Comparison operator at the current token, or -1. */
static int tok_comp_op(const struct fparser *p)
{
    static const char *const ops[] = {"eq", "ne", "gt", "ge", "lt", "le"};
    for (int i = 0; i < 6; i++)
        if (tok_is(p, ops[i]))
            return i; /* same order as enum fop */
    return -1;
}

/* 1 at an arithmetic operator (parsed, not implemented). */
static int tok_arith_op(const struct fparser *p)
{
    return tok_is(p, "add") || tok_is(p, "sub") || tok_is(p, "mul") || tok_is(p, "div") ||
           tok_is(p, "mod");
}

/* Words that can never name a property. */
static int tok_reserved(const struct fparser *p)
{
    return tok_is(p, "and") || tok_is(p, "or") || tok_is(p, "not") || tok_comp_op(p) >= 0;
}

/* A zeroed tree node from the compile arena. */
static struct fnode *node_new(struct fparser *p, enum fnode_kind kind)
{
    struct fnode *n = arena_calloc(p->lx.a, sizeof *n);
    n->kind = kind;
    return n;
}

/* Skips a balanced "( ... )" of an unsupported function call. */
static int skip_call(struct fparser *p)
{
    int open = 0;
    do {
        if (p->tok.kind == FT_END) {
            syntax_error(p, p->tok.pos);
            return -1;
        }
        if (p->tok.kind == FT_LPAREN)
            open++;
        else if (p->tok.kind == FT_RPAREN)
            open--;
        if (advance(p))
            return -1;
    } while (open > 0);
    return 0;
}

/* One operand term: literal, null, property, or (not implemented) a
 * function call or a '/' path. */
static int parse_term(struct fparser *p, struct operand *o)
{
    memset(o, 0, sizeof *o);
    switch (p->tok.kind) {
    case FT_LITERAL:
        o->kind = OPD_LIT;
        o->lit = p->tok.lit;
        return advance(p);
    case FT_NULL:
        o->kind = OPD_NULL;
        return advance(p);
    case FT_WORD:
        if (tok_reserved(p))
            break;
        o->kind = OPD_PROP;
        o->name = arena_strndup(p->lx.a, p->tok.word, p->tok.word_len);
        o->name_len = p->tok.word_len;
        if (advance(p))
            return -1;
        for (;;) {
            if (p->tok.kind == FT_LPAREN) {
                semantic_error(p, TERR_NotImplemented, NULL);
                o->kind = OPD_OTHER;
                if (skip_call(p))
                    return -1;
            } else if (p->tok.kind == FT_SLASH) {
                semantic_error(p, TERR_NotImplemented, NULL);
                o->kind = OPD_OTHER;
                if (advance(p))
                    return -1;
                if (p->tok.kind != FT_WORD || tok_reserved(p)) {
                    syntax_error(p, p->tok.pos);
                    return -1;
                }
                if (advance(p))
                    return -1;
            } else {
                return 0;
            }
        }
    default:
        break;
    }
    syntax_error(p, p->tok.pos);
    return -1;
}

/* term *(arith-op term); arithmetic is parsed but not implemented. */
static int parse_operand(struct fparser *p, struct operand *o)
{
    if (parse_term(p, o))
        return -1;
    while (tok_arith_op(p)) {
        struct operand rhs;
        semantic_error(p, TERR_NotImplemented, NULL);
        o->kind = OPD_OTHER;
        if (advance(p) || parse_term(p, &rhs))
            return -1;
    }
    return 0;
}

/* Fills the property part of a FN_CMP / FN_BOOL node from o. */
static void set_property(struct fparser *p, struct fnode *n, const struct operand *o)
{
    n->name = o->name;
    n->name_len = o->name_len;
    n->prop = FP_CUSTOM;
    if (p->f->target == FILTER_TABLES) {
        if (flex_is(o->name, o->name_len, "TableName")) {
            n->prop = FP_TABLENAME;
        } else {
            p->f->never = 1;
            if (p->f->opt.tables_strict)
                semantic_error(p, TERR_InternalError, NULL);
        }
        return;
    }
    if (flex_is(o->name, o->name_len, "PartitionKey"))
        n->prop = FP_PK;
    else if (flex_is(o->name, o->name_len, "RowKey"))
        n->prop = FP_RK;
    else if (flex_is(o->name, o->name_len, "Timestamp"))
        n->prop = FP_TIMESTAMP;
}

static const enum fop flipped[] = {FOP_EQ, FOP_NE, FOP_LT, FOP_LE, FOP_GT, FOP_GE};

/* a op b, normalised to "property op literal". */
static struct fnode *make_cmp(struct fparser *p, const struct operand *a, enum fop op,
                              const struct operand *b)
{
    struct fnode *n = node_new(p, FN_CMP);
    p->ncmp++;
    if (a->kind == OPD_NULL || b->kind == OPD_NULL) {
        semantic_error(p, TERR_InvalidInput, "A query expression may not contain null values.");
        return n;
    }
    if (a->kind == OPD_OTHER || b->kind == OPD_OTHER)
        return n; /* already recorded */
    if (a->kind == b->kind) {
        semantic_error(p, TERR_NotImplemented, NULL);
        return n;
    }
    const struct operand *prop = a, *lit = b;
    if (a->kind == OPD_LIT) {
        prop = b;
        lit = a;
        op = flipped[op];
    }
    n->op = op;
    n->lit = lit->lit;
    if (n->lit.type == EDM_GUID)
        edm_guid_format(n->lit.u.guid, n->guid_text);
    set_property(p, n, prop);
    return n;
}

/* Records that term n stands where a Boolean is needed but is none. */
static void not_boolean(struct fparser *p, const struct fnode *n)
{
    if (p->sem == TERR_NONE)
        p->sem_node = n;
    semantic_error(p, TERR_InvalidInput, not_boolean_msg);
}

/* An operand standing alone, where a Boolean is needed: true / false (a
 * constant), or a property whose value is tested for Boolean true. A
 * property of a declared non-Boolean type (PartitionKey, RowKey, Timestamp,
 * TableName) or any other literal is no Boolean: InvalidInput. */
static struct fnode *make_bare(struct fparser *p, const struct operand *o)
{
    if (o->kind == OPD_LIT && o->lit.type == EDM_BOOLEAN) {
        struct fnode *c = node_new(p, FN_CONST);
        c->lit = o->lit;
        return c;
    }
    struct fnode *n = node_new(p, FN_BOOL);
    p->ncmp++;
    if (o->kind == OPD_NULL) {
        semantic_error(p, TERR_InvalidInput, "A query expression may not contain null values.");
    } else if (o->kind == OPD_LIT) {
        not_boolean(p, n);
    } else if (o->kind == OPD_PROP) {
        set_property(p, n, o);
        if (n->prop != FP_CUSTOM)
            not_boolean(p, n);
    }
    return n;
}

/* and-expr *("or" and-expr) */
static struct fnode *parse_or(struct fparser *p);

/* "(" or-expr ")", a comparison, or a bare operand. */
static struct fnode *parse_primary(struct fparser *p)
{
    if (p->tok.kind == FT_LPAREN) {
        if (++p->depth > FILTER_MAX_DEPTH)
            return syntax_error(p, p->tok.pos);
        if (advance(p))
            return NULL;
        struct fnode *n = parse_or(p);
        if (!n)
            return NULL;
        if (p->tok.kind != FT_RPAREN)
            return syntax_error(p, p->tok.pos);
        if (advance(p))
            return NULL;
        p->depth--;
        return n;
    }
    struct operand a, b;
    if (parse_operand(p, &a))
        return NULL;
    int op = tok_comp_op(p);
    if (op < 0)
        return make_bare(p, &a);
    if (advance(p) || parse_operand(p, &b))
        return NULL;
    return make_cmp(p, &a, (enum fop)op, &b);
}

/* "not" unary / primary; nesting counts towards FILTER_MAX_DEPTH. */
static struct fnode *parse_unary(struct fparser *p)
{
    if (!tok_is(p, "not"))
        return parse_primary(p);
    if (++p->depth > FILTER_MAX_DEPTH)
        return syntax_error(p, p->tok.pos);
    if (advance(p))
        return NULL;
    struct fnode *kid = parse_unary(p);
    if (!kid)
        return NULL;
    p->depth--;
    struct fnode *n = node_new(p, FN_NOT);
    n->kids = kid;
    n->nkids = 1;
    return n;
}

/* item *(kw item) as one n-ary node (or the single item itself). */
static struct fnode *parse_list(struct fparser *p, const char *kw, enum fnode_kind kind,
                                struct fnode *(*item)(struct fparser *))
{
    struct fnode *first = item(p);
    if (!first || !tok_is(p, kw))
        return first;
    struct fnode *n = node_new(p, kind), *last = first;
    n->kids = first;
    n->nkids = 1;
    while (tok_is(p, kw)) {
        if (advance(p))
            return NULL;
        struct fnode *k = item(p);
        if (!k)
            return NULL;
        last->next = k;
        last = k;
        n->nkids++;
    }
    return n;
}

/* unary *("and" unary) */
static struct fnode *parse_and(struct fparser *p)
{
    return parse_list(p, "and", FN_AND, parse_unary);
}

static struct fnode *parse_or(struct fparser *p)
{
    return parse_list(p, "or", FN_OR, parse_and);
}

/* Number of UTF-16 code units in the first off bytes of s (lenient with
 * malformed UTF-8: every byte that is not a continuation byte counts). */
static size_t utf16_offset(const char *s, size_t off)
{
    size_t u = 0;
    for (size_t i = 0; i < off; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c & 0xC0) != 0x80)
            u++;
        if (c >= 0xF0)
            u++; /* a 4-byte sequence is a surrogate pair */
    }
    return u;
}

/* Length of the longest well-formed UTF-8 prefix of s[0..n) (no overlongs,
 * surrogates or code points past U+10FFFF). String comparison and the key
 * encoding agree only on well-formed text, so anything else is refused. */
static size_t utf8_valid_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        size_t len;
        unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return i;
        }
        if (n - i < len || p[i + 1] < lo || p[i + 1] > hi)
            return i;
        for (size_t k = 2; k < len; k++)
            if ((p[i + k] & 0xC0) != 0x80)
                return i;
        i += len;
    }
    return n;
}

/* "Syntax error at position N in '<text>'." (built by hand: text may hold
 * any byte, including NUL). */
static const char *syntax_message(struct arena *a, const char *text, size_t len, size_t pos)
{
    char head[64];
    int hn = snprintf(head, sizeof head, "Syntax error at position %zu in '",
                      utf16_offset(text, pos));
    char *m = arena_alloc(a, (size_t)hn + len + 3);
    memcpy(m, head, (size_t)hn);
    memcpy(m + hn, text, len);
    memcpy(m + hn + len, "'.", 3);
    return m;
}

int filter_compile(struct arena *a, const char *text, size_t len, enum filter_target target,
                   const struct filter_options *opt, struct filter **out, enum terr *err,
                   const char **message)
{
    *out = NULL;
    *err = TERR_NONE;
    *message = NULL;
    if (len > FILTER_MAX_TEXT) {
        *err = TERR_InvalidInput;
        return -1;
    }
    struct filter *f = arena_calloc(a, sizeof *f);
    f->target = target;
    if (opt)
        f->opt = *opt;

    size_t valid = utf8_valid_len(text, len);
    if (valid != len) {
        *err = TERR_InvalidInput; /* the generic message: no bad bytes echoed */
        return -1;
    }

    struct fparser p;
    memset(&p, 0, sizeof p);
    p.lx.a = a;
    p.lx.s = text;
    p.lx.n = len;
    p.f = f;
    p.sem = TERR_NONE;
    if (advance(&p) == 0) {
        f->root = parse_or(&p);
        if (f->root && p.tok.kind != FT_END)
            syntax_error(&p, p.tok.pos);
    }
    if (p.syntax) {
        *err = TERR_InvalidInput;
        *message = syntax_message(a, text, len, p.syntax_pos);
        return -1;
    }
    if (p.sem != TERR_NONE) {
        *err = p.sem;
        *message = p.sem_msg;
        /* A non-Boolean operand of and / or / not: the generic message. */
        if (p.sem_node && p.sem_node != f->root)
            *message = NULL;
        return -1;
    }
    if (f->opt.max_comparisons > 0 && p.ncmp > f->opt.max_comparisons) {
        *err = TERR_InvalidInput;
        return -1;
    }
    *out = f;
    return 0;
}
