/* filter_ast.h - private to protocol/filter*.c: tokens and the compiled tree.
 *
 * filter_lex.c turns text into tokens, filter_parse.c builds the tree,
 * filter_eval.c evaluates it per entity, filter_plan.c derives key ranges.
 * Comparisons are normalised at compile time to "property OP literal"
 * (a literal on the left flips the operator), so later stages never look at
 * operand order again. */
#ifndef TABLED_FILTER_AST_H
#define TABLED_FILTER_AST_H
#include <stddef.h>

#include "core/arena.h"
#include "store/entity.h"
#include "filter/filter.h"

/* ---- tokens ---- */

enum ftok_kind {
    FT_END,     /* end of text */
    FT_LPAREN,
    FT_RPAREN,
    FT_SLASH,   /* navigation: not implemented */
    FT_PUNCT,   /* ',' or ':': only inside (unsupported) function calls */
    FT_WORD,    /* identifier or keyword (eq, and, not, ...) */
    FT_LITERAL, /* string, number, boolean, datetime, guid, binary */
    FT_NULL,    /* the null literal (any case) */
};

struct ftok {
    enum ftok_kind kind;
    size_t pos;           /* byte offset of the token's first character */
    const char *word;     /* FT_WORD: points into the text */
    size_t word_len;
    struct edm_value lit; /* FT_LITERAL; strings and bytes in the arena */
};

struct flexer {
    struct arena *a;
    const char *s;
    size_t n, i; /* text and the read position */
};

/* Reads the next token into *t. Returns 0, or -1 for a lexical error at
 * byte offset t->pos. */
int flex_next(struct flexer *lx, struct ftok *t);
/* 1 when w[0..n) is the keyword kw (exact, lower-case). */
int flex_is(const char *w, size_t n, const char *kw);

/* ---- tree ---- */

enum fnode_kind {
    FN_AND,  /* all children true (children: kids, linked by next) */
    FN_OR,   /* any child true */
    FN_NOT,  /* kids is the only child */
    FN_CMP,  /* prop op lit */
    FN_BOOL, /* bare property: its value is Boolean true */
    FN_CONST, /* the literal true or false: lit.u.b */
};

enum fop { FOP_EQ, FOP_NE, FOP_GT, FOP_GE, FOP_LT, FOP_LE };

enum fprop {
    FP_CUSTOM,    /* looked up by name among the entity's properties */
    FP_PK,        /* PartitionKey (String, always present) */
    FP_RK,        /* RowKey (String, always present) */
    FP_TIMESTAMP, /* Timestamp (DateTime, always present) */
    FP_TABLENAME, /* TableName of a FILTER_TABLES filter */
};

struct fnode {
    enum fnode_kind kind;
    struct fnode *kids; /* AND / OR / NOT */
    struct fnode *next; /* next sibling */
    size_t nkids;
    /* FN_CMP and FN_BOOL (FN_CONST: lit only) */
    enum fprop prop;
    const char *name; /* property name (points into the arena) */
    size_t name_len;
    enum fop op;
    struct edm_value lit;
    char guid_text[37]; /* Guid literal in lower-case canonical text */
};

struct filter {
    enum filter_target target;
    struct filter_options opt;
    int never; /* tables: a property other than TableName -> no match */
    struct fnode *root;
    struct filter_stats *stats;
};

/* Compares value v (property side) with n's literal; see filter_eval.c. */
int fnode_eval_cmp(const struct filter *f, const struct fnode *n, const struct edm_value *v);

#endif
