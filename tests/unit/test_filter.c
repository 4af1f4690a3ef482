/* test_filter.c - $filter lexer, parser, evaluator and planner (doc/protocol.md, Queries). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "codec/edm.h"
#include "filter/filter.h"
#include "filter/filter_ast.h"
#include "store/keys.h"
#include "tests/unit/tap.h"


/* The switches the compiles below use (filter_compile's opt), changed by
 * the tests of each switch and set back after. */
static struct filter_options topt;
static struct arena *A;
static char what[512];

/* printf into the shared label buffer used by the checks. */
static const char *label(const char *fmt, const char *arg)
{
    snprintf(what, sizeof what, fmt, arg);
    return what;
}

static struct filter *compile_t(const char *text, enum filter_target t)
{
    struct filter *f;
    enum terr err;
    const char *msg;
    if (filter_compile(A, text, strlen(text), t, &topt, &f, &err, &msg) != 0)
        return NULL;
    return f;
}

static struct filter *compile(const char *text)
{
    return compile_t(text, FILTER_ENTITIES);
}

/* Error code of compiling text (TERR_NONE when it compiles); *msg gets the
 * message when msg is not NULL. */
static enum terr compile_err_t(const char *text, enum filter_target t, const char **msg)
{
    struct filter *f;
    enum terr err;
    const char *m;
    int rc = filter_compile(A, text, strlen(text), t, &topt, &f, &err, &m);
    if (msg)
        *msg = m;
    if (rc == 0)
        return TERR_NONE;
    return err;
}

static enum terr compile_err(const char *text, const char **msg)
{
    return compile_err_t(text, FILTER_ENTITIES, msg);
}

/* ---- entities ---- */

#define MAXP 16

struct ent {
    struct entity e;
    struct property p[MAXP];
};

static void ent_init(struct ent *x, const char *pk, const char *rk)
{
    memset(x, 0, sizeof *x);
    x->e.pk = pk;
    x->e.pk_len = strlen(pk);
    x->e.rk = rk;
    x->e.rk_len = strlen(rk);
    x->e.timestamp = 638000000000000000LL; /* 2022 */
    x->e.props = x->p;
}

static struct edm_value *ent_add(struct ent *x, const char *name, enum edm_type t)
{
    struct property *p = &x->p[x->e.nprops++];
    p->name = name;
    p->name_len = strlen(name);
    p->v.type = t;
    return &p->v;
}

static void add_i32(struct ent *x, const char *n, int32_t v) { ent_add(x, n, EDM_INT32)->u.i32 = v; }
static void add_i64(struct ent *x, const char *n, int64_t v) { ent_add(x, n, EDM_INT64)->u.i64 = v; }
static void add_dbl(struct ent *x, const char *n, double v) { ent_add(x, n, EDM_DOUBLE)->u.d = v; }
static void add_bool(struct ent *x, const char *n, int v) { ent_add(x, n, EDM_BOOLEAN)->u.b = v; }
static void add_ticks(struct ent *x, const char *n, int64_t v) { ent_add(x, n, EDM_DATETIME)->u.ticks = v; }

static int64_t ticks_of(const char *iso)
{
    int64_t t;
    if (edm_datetime_parse(iso, strlen(iso), &t) != 0)
        abort();
    return t;
}

static void add_str(struct ent *x, const char *n, const char *s)
{
    struct edm_value *v = ent_add(x, n, EDM_STRING);
    v->u.s.ptr = s;
    v->u.s.len = strlen(s);
}

static void add_bin(struct ent *x, const char *n, const char *s, size_t len)
{
    struct edm_value *v = ent_add(x, n, EDM_BINARY);
    v->u.s.ptr = s;
    v->u.s.len = len;
}

static void add_guid(struct ent *x, const char *n, const char *text)
{
    struct edm_value *v = ent_add(x, n, EDM_GUID);
    if (edm_guid_parse(text, strlen(text), v->u.guid) != 0)
        abort();
}

/* filter_match on e as a scan meets it: its keys and entity_encode of it.
 * The keys are always passed: filter_needs_keys is checked on its own. */
static int ematch(const struct filter *f, const struct entity *e)
{
    struct buf v;
    buf_init(&v);
    entity_encode(e, &v);
    struct filter_row row = {e->pk, e->rk, e->pk_len, e->rk_len, v.data, v.len};
    int r = filter_match(f, &row);
    buf_free(&v);
    return r;
}

/* 1/0 for a filter that compiles, -1 when it does not. */
static int match(const char *text, const struct ent *x)
{
    struct filter *f = compile(text);
    return f ? ematch(f, &x->e) : -1;
}

static void check_match(const char *text, const struct ent *x, int expected)
{
    TEST_EQ_INT(match(text, x), expected, label("match: %s", text));
}

/* ---- literals ---- */

/* The single comparison node of text, or NULL. */
static const struct fnode *cmp_node(const char *text)
{
    struct filter *f = compile(text);
    if (!f || f->root->kind != FN_CMP)
        return NULL;
    return f->root;
}

static void test_literals(void)
{
    const struct fnode *n;

    n = cmp_node("S eq 'Smith'");
    TEST_CHECK(n && n->lit.type == EDM_STRING && n->lit.u.s.len == 5 &&
                   memcmp(n->lit.u.s.ptr, "Smith", 5) == 0,
               "string literal");
    n = cmp_node("S eq 'O''Neil'");
    TEST_CHECK(n && n->lit.u.s.len == 6 && memcmp(n->lit.u.s.ptr, "O'Neil", 6) == 0,
               "doubled quote inside string");
    n = cmp_node("S eq ''");
    TEST_CHECK(n && n->lit.type == EDM_STRING && n->lit.u.s.len == 0, "empty string");
    n = cmp_node("S eq ''''");
    TEST_CHECK(n && n->lit.u.s.len == 1 && n->lit.u.s.ptr[0] == '\'', "string of one quote");
    n = cmp_node("S eq 'a b\t(c) eq ''x'' and'");
    TEST_CHECK(n && n->lit.u.s.len == 18 && memcmp(n->lit.u.s.ptr, "a b\t(c) eq 'x' and", 18) == 0,
               "operators and spaces inside a string");
    n = cmp_node("S eq 'h\xc3\xa9\xf0\x9f\x98\x80'");
    TEST_CHECK(n && n->lit.u.s.len == 7, "UTF-8 inside a string");

    n = cmp_node("I eq 42");
    TEST_CHECK(n && n->lit.type == EDM_INT32 && n->lit.u.i32 == 42, "Int32 literal");
    n = cmp_node("I eq -7");
    TEST_CHECK(n && n->lit.type == EDM_INT32 && n->lit.u.i32 == -7, "negative Int32");
    n = cmp_node("I eq 2147483647");
    TEST_CHECK(n && n->lit.type == EDM_INT32 && n->lit.u.i32 == 2147483647, "Int32 max");
    n = cmp_node("I eq -2147483648");
    TEST_CHECK(n && n->lit.type == EDM_INT32 && n->lit.u.i32 == INT32_MIN, "Int32 min");
    n = cmp_node("I eq 2147483648");
    TEST_CHECK(n && n->lit.type == EDM_INT64 && n->lit.u.i64 == 2147483648LL,
               "Int32 overflow becomes Int64");
    n = cmp_node("I eq -2147483649");
    TEST_CHECK(n && n->lit.type == EDM_INT64 && n->lit.u.i64 == -2147483649LL,
               "negative Int32 overflow becomes Int64");
    n = cmp_node("I eq 42L");
    TEST_CHECK(n && n->lit.type == EDM_INT64 && n->lit.u.i64 == 42, "Int64 literal L");
    n = cmp_node("I eq 42l");
    TEST_CHECK(n && n->lit.type == EDM_INT64 && n->lit.u.i64 == 42, "Int64 literal l");
    n = cmp_node("I eq -9223372036854775808L");
    TEST_CHECK(n && n->lit.type == EDM_INT64 && n->lit.u.i64 == INT64_MIN, "Int64 min");
    n = cmp_node("I eq 9223372036854775807");
    TEST_CHECK(n && n->lit.type == EDM_INT64 && n->lit.u.i64 == INT64_MAX,
               "Int64 max without L");
    n = cmp_node("I eq 007");
    TEST_CHECK(n && n->lit.type == EDM_INT32 && n->lit.u.i32 == 7, "leading zeros");

    n = cmp_node("D eq 3.5");
    TEST_CHECK(n && n->lit.type == EDM_DOUBLE && n->lit.u.d == 3.5, "Double literal");
    n = cmp_node("D eq 2.0");
    TEST_CHECK(n && n->lit.type == EDM_DOUBLE && n->lit.u.d == 2.0, "Double 2.0");
    n = cmp_node("D eq 1e10");
    TEST_CHECK(n && n->lit.type == EDM_DOUBLE && n->lit.u.d == 1e10, "Double exponent");
    n = cmp_node("D eq 1.5E+300");
    TEST_CHECK(n && n->lit.type == EDM_DOUBLE && n->lit.u.d == 1.5e300, "Double E+");
    n = cmp_node("D eq -2.5e-3");
    TEST_CHECK(n && n->lit.type == EDM_DOUBLE && n->lit.u.d == -2.5e-3, "Double negative e-");
    n = cmp_node("D eq 3D");
    TEST_CHECK(n && n->lit.type == EDM_DOUBLE && n->lit.u.d == 3.0, "Double D suffix");
    n = cmp_node("D eq 3.25d");
    TEST_CHECK(n && n->lit.type == EDM_DOUBLE && n->lit.u.d == 3.25, "Double d suffix");
    n = cmp_node("D eq .5");
    TEST_CHECK(n && n->lit.type == EDM_DOUBLE && n->lit.u.d == 0.5, "Double .5");
    n = cmp_node("D eq 5.");
    TEST_CHECK(n && n->lit.type == EDM_DOUBLE && n->lit.u.d == 5.0, "Double 5.");
    n = cmp_node("D eq -.5");
    TEST_CHECK(n && n->lit.type == EDM_DOUBLE && n->lit.u.d == -0.5, "Double -.5");

    n = cmp_node("B eq true");
    TEST_CHECK(n && n->lit.type == EDM_BOOLEAN && n->lit.u.b == 1, "true");
    n = cmp_node("B eq false");
    TEST_CHECK(n && n->lit.type == EDM_BOOLEAN && n->lit.u.b == 0, "false");
    n = cmp_node("B eq TRUE");
    TEST_CHECK(n && n->lit.type == EDM_BOOLEAN && n->lit.u.b == 1, "TRUE (any case)");
    n = cmp_node("B eq False");
    TEST_CHECK(n && n->lit.type == EDM_BOOLEAN && n->lit.u.b == 0, "False (any case)");

    int64_t t;
    edm_datetime_parse("2024-06-01T00:00:00Z", 20, &t);
    n = cmp_node("T eq datetime'2024-06-01T00:00:00Z'");
    TEST_CHECK(n && n->lit.type == EDM_DATETIME && n->lit.u.ticks == t, "datetime literal");
    n = cmp_node("T eq DateTime'2024-06-01T00:00:00Z'");
    TEST_CHECK(n && n->lit.type == EDM_DATETIME && n->lit.u.ticks == t, "DateTime keyword case");
    n = cmp_node("T eq DATETIME'2024-06-01T02:00:00+02:00'");
    TEST_CHECK(n && n->lit.type == EDM_DATETIME && n->lit.u.ticks == t, "datetime with offset");
    n = cmp_node("T eq datetime'2024-06-01T00:00:00.1234567Z'");
    TEST_CHECK(n && n->lit.u.ticks == t + 1234567, "datetime 7 fraction digits");
    n = cmp_node("T ge datetime'0001-01-01T00:00:00.0000000Z'");
    TEST_CHECK(n && n->lit.type == EDM_DATETIME && n->lit.u.ticks < EDM_DATETIME_MIN_TICKS,
               "DateTime.MinValue literal accepted (below the stored range)");

    n = cmp_node("G eq guid'4E2E8B0C-5BB7-4C3C-9F43-3A6F1D0B2C11'");
    TEST_CHECK(n && n->lit.type == EDM_GUID && n->lit.u.guid[0] == 0x4e &&
                   n->lit.u.guid[15] == 0x11 &&
                   strcmp(n->guid_text, "4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11") == 0,
               "guid literal (upper-case hex) and its canonical text");
    n = cmp_node("G eq GUID'4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11'");
    TEST_CHECK(n && n->lit.type == EDM_GUID, "GUID keyword case");

    n = cmp_node("X eq X'0001ff'");
    TEST_CHECK(n && n->lit.type == EDM_BINARY && n->lit.u.s.len == 3 &&
                   memcmp(n->lit.u.s.ptr, "\x00\x01\xff", 3) == 0,
               "X'hex' literal");
    n = cmp_node("X eq binary'0001FF'");
    TEST_CHECK(n && n->lit.type == EDM_BINARY && n->lit.u.s.len == 3 &&
                   memcmp(n->lit.u.s.ptr, "\x00\x01\xff", 3) == 0,
               "binary'HEX' literal");
    n = cmp_node("X eq x'0a'");
    TEST_CHECK(n && n->lit.type == EDM_BINARY && n->lit.u.s.len == 1, "x'' lower-case prefix");
    n = cmp_node("X eq Binary''");
    TEST_CHECK(n && n->lit.type == EDM_BINARY && n->lit.u.s.len == 0, "empty binary");

    /* Literal on the left flips the operator. */
    n = cmp_node("3 lt Qty");
    TEST_CHECK(n && n->op == FOP_GT && n->lit.u.i32 == 3 && n->name_len == 3, "3 lt Qty -> Qty gt 3");
    n = cmp_node("3 ge Qty");
    TEST_CHECK(n && n->op == FOP_LE, "3 ge Qty -> Qty le 3");
    n = cmp_node("'a' eq Name");
    TEST_CHECK(n && n->op == FOP_EQ && n->prop == FP_CUSTOM, "literal left with eq");
    n = cmp_node("PartitionKey eq 'a'");
    TEST_CHECK(n && n->prop == FP_PK, "PartitionKey resolved");
    n = cmp_node("RowKey eq 'a'");
    TEST_CHECK(n && n->prop == FP_RK, "RowKey resolved");
    n = cmp_node("Timestamp eq datetime'2024-06-01T00:00:00Z'");
    TEST_CHECK(n && n->prop == FP_TIMESTAMP, "Timestamp resolved");
    n = cmp_node("partitionkey eq 'a'");
    TEST_CHECK(n && n->prop == FP_CUSTOM, "property names are case-sensitive");

    /* Whitespace: SP, HTAB, CR, LF, leading and trailing. */
    TEST_CHECK(cmp_node(" \t\r\nQty\teq\r\n3 \n") != NULL, "all whitespace kinds");
    TEST_CHECK(cmp_node("Qty   eq   3") != NULL, "runs of spaces");
    TEST_CHECK(compile("(Qty eq 3)and(Qty eq 3)") != NULL, "no space needed around parentheses");
    TEST_CHECK(compile("not(Qty eq 3)") != NULL, "not(...)");
    TEST_CHECK(compile("Name eq'x'") != NULL, "no space needed before a quote");
    TEST_CHECK(compile("_a1 eq 1 and \xc3\xa9t\xc3\xa9 eq 2") != NULL,
               "underscore and non-ASCII property names");
}

/* Each malformed text -> InvalidInput with the syntax message at pos. */
static void check_syntax(const char *text, size_t pos)
{
    const char *msg = NULL;
    enum terr e = compile_err(text, &msg);
    TEST_EQ_INT(e, TERR_InvalidInput, label("syntax error code: %s", text));
    char expect[512];
    snprintf(expect, sizeof expect, "Syntax error at position %zu in '%s'.", pos, text);
    TEST_EQ_STR(msg, expect, label("syntax error message: %s", text));
}

static void check_code(const char *text, enum terr code)
{
    TEST_EQ_INT(compile_err(text, NULL), code, label("error code: %s", text));
}

static void test_errors(void)
{
    /* Malformed literals. */
    check_syntax("Name eq 'abc", 8);          /* 185 unterminated string */
    check_syntax("Name eq 'ab''", 8);
    check_syntax("T eq datetime'2024-13-01T00:00:00Z'", 5);
    check_syntax("T eq datetime'yesterday'", 5);
    check_syntax("T eq datetime'2024-06-01T00:00:00Z", 5);
    check_syntax("G eq guid'4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c1'", 5);
    check_syntax("G eq guid'zzzzzzzz-5bb7-4c3c-9f43-3a6f1d0b2c11'", 5);
    check_syntax("X eq X'abc'", 5);           /* odd number of digits */
    check_syntax("X eq X'zz'", 5);
    check_syntax("X eq binary'0g'", 5);
    check_syntax("Qty eq 3abc", 7);
    check_syntax("Qty eq 1.5.2", 7);
    check_syntax("Qty eq 1e", 7);
    check_syntax("Qty eq 1e+", 7);
    check_syntax("Qty eq 1.5L", 7);
    check_syntax("Qty eq 1e5L", 7);
    check_syntax("Qty eq 3LL", 7);
    check_syntax("Qty eq 1.5M", 7);
    check_syntax("Qty eq 3f", 7);
    check_syntax("Qty eq 9223372036854775808", 7);
    check_syntax("Qty eq 9223372036854775808L", 7);
    check_syntax("Qty eq -", 7);
    check_syntax("Qty eq .", 7);
    check_syntax("Qty eq 1e400", 7);
    check_syntax("Qty eq 3'x'", 7);
    check_syntax("T eq time'12:00'", 9);    /* unknown prefix: word then string */

    /* Grammar. */
    check_syntax("Qty eq", 6);                /* last row of doc/protocol.md, Filter examples */
    check_syntax("a eq 1 eq 2", 7);           /* 165 non-associative */
    check_syntax("", 0);
    check_syntax("   ", 3);
    check_syntax("Qty eq 3 and", 12);
    check_syntax("Qty eq 3 or", 11);
    check_syntax("and Qty eq 3", 0);
    check_syntax("(Qty eq 3", 9);
    check_syntax("Qty eq 3)", 8);
    check_syntax("()", 1);
    check_syntax("not", 3);
    check_syntax("Qty eq 3 Qty eq 4", 9);
    check_syntax("Qty eq 3 $", 9);
    check_syntax("Qty eq \"x\"", 7);
    check_syntax("Qty eq and", 7);
    check_syntax("Qty eq eq 3", 7);
    check_syntax("Qty == 3", 4);
    check_syntax("Qty eq 3 && Qty eq 4", 9);
    check_syntax("Name EQ 'x'", 5);           /* 186 upper-case operator */
    check_syntax("Name Eq 'x'", 5);
    check_syntax("Qty eq 3 AND Qty eq 4", 9);
    check_syntax("Qty eq 3 Or Qty eq 4", 9);
    check_syntax("NOT Active", 4);
    check_syntax("Qty eq 3,", 8);
    check_syntax("A/", 2);
    check_syntax("startswith(Name, 'x'", 20); /* unbalanced call */
    check_syntax("(Qty) eq 3", 6);
    check_syntax("Qty\x01 eq 3", 3);
    /* Positions count UTF-16 units: 'é' is one, U+1F600 two. */
    check_syntax("N eq '\xc3\xa9' eq 1", 9);
    check_syntax("N eq '\xf0\x9f\x98\x80' eq 1", 10);
    /* A syntax error wins over unsupported constructs before it. */
    check_syntax("Qty eq Total and", 16);
    check_syntax("Prop eq null and (", 18);

    /* 166, 167, functions, arithmetic, navigation. */
    check_code("Qty eq Total", TERR_NotImplemented);
    check_code("1 eq 1", TERR_NotImplemented);
    check_code("'a' eq 'b'", TERR_NotImplemented);
    check_code("true eq true", TERR_NotImplemented);
    /* A term that is not Boolean where one is needed: InvalidInput (issue
     * 14 point 5; it was NotImplemented). true / false compile. */
    check_code("3", TERR_InvalidInput);
    check_code("'x'", TERR_InvalidInput);
    check_code("true", TERR_NONE);
    check_code("Active and true", TERR_NONE);
    check_code("not false", TERR_NONE);
    check_code("startswith(Name,'x')", TERR_NotImplemented);          /* 187 */
    check_code("startswith(Name, 'x') eq true", TERR_NotImplemented);
    check_code("substringof('x', Name)", TERR_NotImplemented);
    check_code("tolower(Name) eq 'x'", TERR_NotImplemented);
    check_code("Qty add 1 eq 4", TERR_NotImplemented);
    check_code("Qty sub 1 eq 4", TERR_NotImplemented);
    check_code("Qty mul 2 eq 4", TERR_NotImplemented);
    check_code("Qty div 2 eq 4", TERR_NotImplemented);
    check_code("Qty mod 2 eq 0", TERR_NotImplemented);
    check_code("4 eq Qty add 1", TERR_NotImplemented);
    check_code("Address/City eq 'x'", TERR_NotImplemented);
    check_code("Tags/any(t: t eq 'x')", TERR_NotImplemented);
    check_code("Tags/all(t: t eq 'x')", TERR_NotImplemented);
    check_code("Qty eq 3 and Qty eq Total", TERR_NotImplemented);

    /* 184: null in any form. */
    const char *msg;
    TEST_EQ_INT(compile_err("Prop eq null", &msg), TERR_InvalidInput, "Prop eq null");
    TEST_EQ_STR(msg, "A query expression may not contain null values.", "null message");
    check_code("null eq Prop", TERR_InvalidInput);
    check_code("Prop ne NULL", TERR_InvalidInput);
    check_code("null", TERR_InvalidInput);
    check_code("Qty eq 3 or Prop eq null", TERR_InvalidInput);

    /* Limits. */
    {
        char deep[2 * (FILTER_MAX_DEPTH + 1) + 16];
        size_t n = 0;
        for (int i = 0; i < FILTER_MAX_DEPTH; i++)
            deep[n++] = '(';
        memcpy(deep + n, "A", 1);
        n++;
        for (int i = 0; i < FILTER_MAX_DEPTH; i++)
            deep[n++] = ')';
        deep[n] = '\0';
        TEST_CHECK(compile(deep) != NULL, "nesting of FILTER_MAX_DEPTH parentheses accepted");
        memmove(deep + 1, deep, n + 1);
        deep[0] = '(';
        strcat(deep, ")");
        TEST_EQ_INT(compile_err(deep, NULL), TERR_InvalidInput, "one level deeper rejected");
    }
    {
        char *nots = malloc(4 * (FILTER_MAX_DEPTH + 1) + 8);
        nots[0] = '\0';
        for (int i = 0; i < FILTER_MAX_DEPTH; i++)
            strcat(nots, "not ");
        strcat(nots, "A");
        TEST_CHECK(compile(nots) != NULL, "FILTER_MAX_DEPTH nots accepted");
        memmove(nots + 4, nots, strlen(nots) + 1);
        memcpy(nots, "not ", 4);
        TEST_EQ_INT(compile_err(nots, NULL), TERR_InvalidInput, "one not more rejected");
        free(nots);
    }
    {
        size_t n = FILTER_MAX_TEXT + 1;
        char *big = malloc(n + 1);
        memset(big, ' ', n);
        memcpy(big, "A eq 1", 6);
        big[n] = '\0';
        struct filter *f;
        enum terr e;
        const char *m;
        TEST_EQ_INT(filter_compile(A, big, n, FILTER_ENTITIES, &topt, &f, &e, &m), -1, "too long text");
        TEST_EQ_INT(e, TERR_InvalidInput, "too long text -> InvalidInput");
        TEST_EQ_INT(filter_compile(A, big, n - 1, FILTER_ENTITIES, &topt, &f, &e, &m), 0,
                    "FILTER_MAX_TEXT bytes accepted");
        free(big);
    }
    {
        /* A long flat chain is fine (and/or are not recursive). */
        size_t n = 0, cap = 20 * 2000 + 16;
        char *chain = malloc(cap);
        for (int i = 0; i < 2000; i++)
            n += (size_t)snprintf(chain + n, cap - n, "%sQty eq %d", i ? " or " : "", i);
        struct ent x;
        ent_init(&x, "a", "1");
        add_i32(&x, "Qty", 1999);
        TEST_EQ_INT(match(chain, &x), 1, "2000-term or chain");
        free(chain);
    }
    {
        struct filter_options o = {FILTER_MISMATCH_FALSE, 2, 0};
        topt = o;
        TEST_CHECK(compile("A eq 1 and B eq 2") != NULL, "max_comparisons 2: two accepted");
        TEST_EQ_INT(compile_err("A eq 1 and B eq 2 and C", NULL), TERR_InvalidInput,
                    "max_comparisons 2: three rejected");
        o.max_comparisons = 0;
        topt = o;
        TEST_CHECK(compile("A eq 1 and B eq 2 and C") != NULL, "no comparison limit by default");
    }
    /* Malformed UTF-8 anywhere: InvalidInput, generic message. */
    {
        static const char *const bad[] = {
            "S eq '\xff'", "S eq '\xc3'", "S eq '\xc0\xaf'", "S eq '\xe0\x80\xaf'",
            "S eq '\xed\xa0\x80'", "S eq '\xf4\x90\x80\x80'", "S eq '\xf5\x80\x80\x80'",
            "\xc3\xa9\x80 eq 1", "S eq 'a' \xfe", "S eq '\xf0\x9f\x98'",
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            const char *m = "unset";
            TEST_EQ_INT(compile_err(bad[i], &m), TERR_InvalidInput, "malformed UTF-8 rejected");
            TEST_CHECK(m == NULL, "malformed UTF-8: generic message");
        }
        TEST_CHECK(compile("S eq '\xf4\x8f\xbf\xbf' and S eq '\xed\x9f\xbf' and S eq '\xee\x80\x80'"),
                   "U+10FFFF, U+D7FF, U+E000 accepted");
    }
    /* Bytes the lexer never expects, and a NUL inside the text. */
    {
        struct filter *f;
        enum terr e;
        const char *m;
        TEST_EQ_INT(filter_compile(A, "A eq 1\0", 7, FILTER_ENTITIES, &topt, &f, &e, &m), -1, "NUL byte");
        TEST_EQ_INT(e, TERR_InvalidInput, "NUL byte -> InvalidInput");
        TEST_CHECK(m && memcmp(m, "Syntax error at position 6 in 'A eq 1", 37) == 0,
                   "NUL byte message");
        TEST_EQ_INT(filter_compile(A, "S eq 'a\0b'", 10, FILTER_ENTITIES, &topt, &f, &e, &m), 0,
                    "NUL inside a string literal");
    }
}

/* ---- evaluation ---- */

static const char *const op_names[] = {"eq", "ne", "gt", "ge", "lt", "le"};

static int op_expect(int op, int c)
{
    switch (op) {
    case 0: return c == 0;
    case 1: return c != 0;
    case 2: return c > 0;
    case 3: return c >= 0;
    case 4: return c < 0;
    default: return c <= 0;
    }
}

/* Property P (value "mid") against literals low, mid, high with every
 * operator, in both operand orders. */
static void check_type(const char *type, const struct ent *x, const char *low, const char *mid,
                       const char *high)
{
    const char *lits[3] = {low, mid, high};
    static const int flip[] = {0, 1, 4, 5, 2, 3};
    for (int op = 0; op < 6; op++)
        for (int k = 0; k < 3; k++) {
            if (!lits[k])
                continue;
            char text[256];
            int c = 1 - k; /* property minus literal: mid vs low = +1 ... */
            snprintf(text, sizeof text, "P %s %s", op_names[op], lits[k]);
            int got = match(text, x);
            snprintf(what, sizeof what, "%s: %s", type, text);
            TEST_EQ_INT(got, op_expect(op, c), what);
            snprintf(text, sizeof text, "%s %s P", lits[k], op_names[flip[op]]);
            got = match(text, x);
            snprintf(what, sizeof what, "%s: %s", type, text);
            TEST_EQ_INT(got, op_expect(op, c), what);
        }
}

static void test_types(void)
{
    struct ent x;

    ent_init(&x, "a", "1");
    add_str(&x, "P", "m");
    check_type("String", &x, "'a'", "'m'", "'z'");
    ent_init(&x, "a", "1");
    add_str(&x, "P", "bob");
    check_type("String case", &x, "'Bob'", "'bob'", "'bobby'");

    ent_init(&x, "a", "1");
    add_i32(&x, "P", 5);
    check_type("Int32", &x, "4", "5", "6");
    check_type("Int32 vs negative", &x, "-5", "5", "2147483647");

    ent_init(&x, "a", "1");
    add_i64(&x, "P", 12345543221LL);
    check_type("Int64", &x, "12345543220L", "12345543221L", "12345543222L");
    check_type("Int64 vs Int32-overflow literal", &x, "12345543220", "12345543221", "12345543222");

    ent_init(&x, "a", "1");
    add_dbl(&x, "P", 2.5);
    check_type("Double", &x, "2.25", "2.5", "2.75");
    check_type("Double vs d suffix", &x, "-1e300", "2.5d", "1E+300");

    ent_init(&x, "a", "1");
    add_bool(&x, "P", 1);
    check_type("Boolean true", &x, "false", "true", NULL);
    ent_init(&x, "a", "1");
    add_bool(&x, "P", 0);
    check_type("Boolean false", &x, NULL, "false", "true");

    ent_init(&x, "a", "1");
    add_ticks(&x, "P", ticks_of("2024-06-01T00:00:00Z"));
    check_type("DateTime", &x, "datetime'2024-05-31T23:59:59.9999999Z'",
               "datetime'2024-06-01T00:00:00Z'", "datetime'2024-06-01T00:00:00.0000001Z'");
    check_type("DateTime offsets", &x, "datetime'2024-06-01T01:59:00+02:00'",
               "datetime'2024-05-31T20:00:00-04:00'", "datetime'2024-06-01T00:00:00.5'");

    ent_init(&x, "a", "1");
    add_guid(&x, "P", "4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11");
    check_type("Guid", &x, "guid'4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c10'",
               "guid'4E2E8B0C-5BB7-4C3C-9F43-3A6F1D0B2C11'",
               "guid'4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c1A'");
    check_type("Guid braces", &x, "guid'{0e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11}'",
               "guid'{4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11}'",
               "guid'ae2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11'");

    ent_init(&x, "a", "1");
    add_bin(&x, "P", "\x0a\x0b", 2);
    check_type("Binary", &x, "X'0A'", "X'0A0B'", "X'0A0B00'");
    check_type("Binary bytes unsigned", &x, "binary'00ff'", "binary'0a0b'", "binary'ff'");

    /* Timestamp, PartitionKey and RowKey are always there. */
    ent_init(&x, "b", "r5");
    check_match("Timestamp ge datetime'2000-01-01T00:00:00Z'", &x, 1);
    check_match("Timestamp lt datetime'2000-01-01T00:00:00Z'", &x, 0);
    check_match("Timestamp gt datetime'0001-01-01T00:00:00Z'", &x, 1);
    check_match("Timestamp ne datetime'0001-01-01T00:00:00Z'", &x, 1);
    check_match("PartitionKey eq 'b'", &x, 1);
    check_match("PartitionKey gt 'a'", &x, 1);
    check_match("RowKey lt 'r6'", &x, 1);
    check_match("RowKey eq 'R5'", &x, 0);
    /* Declared non-Boolean properties cannot stand alone (test_constants). */
    check_match("PartitionKey", &x, -1);
    check_match("Timestamp", &x, -1);

    /* NaN: unequal to everything. */
    ent_init(&x, "a", "1");
    add_dbl(&x, "P", NAN);
    for (int op = 0; op < 6; op++) {
        char text[64];
        snprintf(text, sizeof text, "P %s 1.0", op_names[op]);
        check_match(text, &x, op == 1);
        snprintf(text, sizeof text, "P %s 1", op_names[op]);
        check_match(text, &x, op == 1);
        snprintf(text, sizeof text, "P %s 1L", op_names[op]);
        check_match(text, &x, op == 1);
    }
    ent_init(&x, "a", "1");
    add_dbl(&x, "P", INFINITY);
    check_match("P gt 1e308", &x, 1);
    check_match("P gt 9223372036854775807L", &x, 1);
    check_match("P gt 2147483647", &x, 1);
    ent_init(&x, "a", "1");
    add_dbl(&x, "P", -0.0);
    check_match("P eq 0.0", &x, 1);
    check_match("P eq 0", &x, 1);

    /* Int64 vs Double compares exactly (2^53 + 1 is not a double). */
    ent_init(&x, "a", "1");
    add_dbl(&x, "P", 9007199254740992.0);
    check_match("P eq 9007199254740993L", &x, 0);
    check_match("P lt 9007199254740993L", &x, 1);
    check_match("P eq 9007199254740992L", &x, 1);
    ent_init(&x, "a", "1");
    add_dbl(&x, "P", 2.5);
    check_match("P gt 2", &x, 1);
    check_match("P lt 3", &x, 1);
    check_match("P gt 2L", &x, 1);
    check_match("P ne 2", &x, 1);
    ent_init(&x, "a", "1");
    add_dbl(&x, "P", -2.5);
    check_match("P lt -2", &x, 1);
    check_match("P gt -3", &x, 1);
    ent_init(&x, "a", "1");
    add_dbl(&x, "P", 1e19);
    check_match("P gt 9223372036854775807L", &x, 1);
    ent_init(&x, "a", "1");
    add_dbl(&x, "P", -1e19);
    check_match("P lt -9223372036854775808L", &x, 1);

    /* Strings compare by UTF-16 code units: U+1F600 (surrogates D83D DE00)
     * sorts before U+FFFD although its UTF-8 bytes are larger. */
    ent_init(&x, "a", "1");
    add_str(&x, "P", "\xf0\x9f\x98\x80");
    check_match("P lt '\xef\xbf\xbd'", &x, 1);
    check_match("P gt '\xed\x9f\xbf'", &x, 1); /* U+D7FF */
    check_match("P gt '\xf0\x9f\x97\xbf'", &x, 1);
    check_match("P lt '\xf0\x9f\x98\x81'", &x, 1);
    check_match("P eq '\xf0\x9f\x98\x80'", &x, 1);
    check_match("P gt 'z'", &x, 1);
    check_match("'b' gt 'B' or P eq 'x'", &x, -1); /* literal vs literal */
    ent_init(&x, "a", "1");
    add_str(&x, "P", "b");
    check_match("P gt 'B'", &x, 1);
}

static void test_strcmp16(void)
{
    TEST_CHECK(filter_strcmp16("a", 1, "b", 1) < 0, "a < b");
    TEST_CHECK(filter_strcmp16("b", 1, "a", 1) > 0, "b > a");
    TEST_CHECK(filter_strcmp16("ab", 2, "ab", 2) == 0, "equal");
    TEST_CHECK(filter_strcmp16("a", 1, "ab", 2) < 0, "prefix shorter first");
    TEST_CHECK(filter_strcmp16("", 0, "a", 1) < 0, "empty first");
    TEST_CHECK(filter_strcmp16("B", 1, "a", 1) < 0, "upper before lower");
    TEST_CHECK(filter_strcmp16("\xef\xbf\xbd", 3, "\xf0\x9f\x98\x80", 4) > 0,
               "U+FFFD after U+1F600");
    TEST_CHECK(filter_strcmp16("\xee\x80\x80", 3, "\xf0\x90\x80\x80", 4) > 0,
               "U+E000 after U+10000");
    TEST_CHECK(filter_strcmp16("\xed\x9f\xbf", 3, "\xf0\x90\x80\x80", 4) < 0,
               "U+D7FF before U+10000");
    TEST_CHECK(filter_strcmp16("x\xc3\xa9", 3, "x\xc3\xa8", 3) > 0, "e-acute after e-grave");
    TEST_CHECK(filter_strcmp16("\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x81", 4) < 0,
               "supplementary order kept");
    TEST_CHECK(filter_strcmp16("\xf0\x9f", 2, "\xf0\x9f\x98\x80", 4) < 0,
               "truncated sequence is safe");
    TEST_CHECK(filter_strcmp16("\xff", 1, "\xfe", 1) > 0, "invalid bytes compare as bytes");
}

/* Numeric widening (doc/protocol.md, Filter evaluation): literal type x property type. */
static void test_widening(void)
{
    struct ent i32, i64, dbl;
    ent_init(&i32, "a", "1");
    add_i32(&i32, "P", 3);
    ent_init(&i64, "a", "1");
    add_i64(&i64, "P", 3);
    ent_init(&dbl, "a", "1");
    add_dbl(&dbl, "P", 3.0);
    const struct ent *props[3] = {&i32, &i64, &dbl};
    const char *pnames[3] = {"Int32", "Int64", "Double"};
    const char *lits[3] = {"3", "3L", "3.0"};
    /* numeric[lit][prop] */
    static const int numeric[3][3] = {{1, 1, 1}, {0, 1, 1}, {0, 0, 1}};
    for (int l = 0; l < 3; l++)
        for (int p = 0; p < 3; p++)
            for (int op = 0; op < 6; op++) {
                char text[64];
                snprintf(text, sizeof text, "P %s %s", op_names[op], lits[l]);
                int expect = numeric[l][p] ? op_expect(op, 0) : 0;
                snprintf(what, sizeof what, "widening: %s property, %s", pnames[p], text);
                TEST_EQ_INT(match(text, props[p]), expect, what);
            }
    /* Values that differ, to see the direction survives the widening. */
    check_match("P lt 4", &i64, 1);
    check_match("P gt 2", &dbl, 1);
    check_match("P lt 4L", &dbl, 1);
    check_match("P gt 3000000000", &i32, 0); /* Int64 literal vs Int32: no match */
    check_match("P lt 3000000000", &i32, 0);
    check_match("P lt 3000000000", &i64, 1);
}

/* Type mismatches under both switch positions. */
static void test_mismatch(void)
{
    struct ent x;
    ent_init(&x, "a", "1");
    add_str(&x, "S", "3");
    add_i32(&x, "I", 3);
    add_ticks(&x, "T", ticks_of("2024-06-01T00:00:00Z"));
    add_bool(&x, "B", 1);
    add_guid(&x, "G", "4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11");
    add_bin(&x, "X", "\x01", 1);
    add_dbl(&x, "D", 3.0);
    const char *cases[] = {
        "S %s 3",
        "I %s '3'",
        "T %s guid'4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11'",
        "G %s datetime'2024-06-01T00:00:00Z'",
        "B %s 'true'",
        "S %s true",
        "X %s '\x01'",
        "S %s X'33'",
        "I %s 3.0",
        "I %s 3L",
        "D %s true",
        "I %s true",
        "B %s 1",
        "PartitionKey %s 1",
        "RowKey %s true",
        "Timestamp %s 'x'",
    };
    for (int mode = 0; mode < 2; mode++) {
        struct filter_options o = {mode ? FILTER_MISMATCH_CLOUDSTUB : FILTER_MISMATCH_FALSE, 0, 0};
        topt = o;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (int op = 0; op < 6; op++) {
                char text[128];
                snprintf(text, sizeof text, cases[c], op_names[op]);
                int expect = mode ? (op == 1 || op == 4 || op == 5) : 0;
                snprintf(what, sizeof what, "mismatch (%s): %s", mode ? "cloudstub" : "false",
                         text);
                TEST_EQ_INT(match(text, &x), expect, what);
            }
        /* A missing property stays false in both modes. */
        for (int op = 0; op < 6; op++) {
            char text[64];
            snprintf(text, sizeof text, "Missing %s 'x'", op_names[op]);
            snprintf(what, sizeof what, "missing, mode %d: %s", mode, text);
            TEST_EQ_INT(match(text, &x), 0, what);
        }
        /* A bare non-Boolean property is false in both modes. */
        TEST_EQ_INT(match("S", &x), 0, "bare String property is false");
    }
    struct filter_options o = {FILTER_MISMATCH_FALSE, 0, 0};
    topt = o;
    /* The switch is captured at compile time. */
    o.mismatch = FILTER_MISMATCH_CLOUDSTUB;
    topt = o;
    struct filter *f = compile("S ne 3");
    o.mismatch = FILTER_MISMATCH_FALSE;
    topt = o;
    TEST_EQ_INT(ematch(f, &x.e), 1, "mismatch rule fixed when compiled");
    TEST_EQ_INT(topt.mismatch, FILTER_MISMATCH_FALSE, "the switches are back to the defaults");
}

static void test_missing(void)
{
    struct ent x;
    ent_init(&x, "a", "1");
    add_i32(&x, "Qty", 3);
    const char *lits[] = {"1", "1L", "1.0", "'x'", "true", "datetime'2024-06-01T00:00:00Z'",
                          "guid'4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11'", "X'01'"};
    for (size_t l = 0; l < sizeof lits / sizeof *lits; l++)
        for (int op = 0; op < 6; op++) {
            char text[128];
            snprintf(text, sizeof text, "Missing %s %s", op_names[op], lits[l]);
            check_match(text, &x, 0);
            snprintf(text, sizeof text, "not (Missing %s %s)", op_names[op], lits[l]);
            check_match(text, &x, 1);
        }
    check_match("Missing", &x, 0);
    check_match("not Missing", &x, 1);
    check_match("qty eq 3", &x, 0); /* names are case-sensitive */
    check_match("Missing ne 3 or Qty eq 3", &x, 1);
    check_match("Missing ne 3 and Qty eq 3", &x, 0);
}

static void test_logic(void)
{
    struct ent x;
    ent_init(&x, "a", "1");
    add_bool(&x, "T", 1);
    add_bool(&x, "F", 0);

    /* 164: not binds tighter than and: "not T and F" is (not T) and F = 0,
     * while not (T and F) would be 1. Same with or. */
    check_match("not T and F", &x, 0);
    check_match("(not T) and F", &x, 0);
    check_match("not (T and F)", &x, 1);
    check_match("not F or T", &x, 1);
    check_match("not F and T", &x, 1);
    check_match("not T or T", &x, 1);
    check_match("not (T or T)", &x, 0);
    /* and before or: "T or T and F" is T or (T and F) = 1, not (T or T) and F. */
    check_match("T or T and F", &x, 1);
    check_match("(T or T) and F", &x, 0);
    check_match("F and T or T", &x, 1);
    check_match("F and (T or T)", &x, 0);
    check_match("F or F or T", &x, 1);
    check_match("T and T and F", &x, 0);
    check_match("not not T", &x, 1);
    check_match("not not not T", &x, 0);
    check_match("((T))", &x, 1);
    check_match("T eq true and F eq false", &x, 1);
    check_match("T eq false or F ne false", &x, 0);
    check_match("T gt F", &x, -1); /* property vs property */
    check_match("T gt false", &x, 1);
    check_match("F lt true", &x, 1);
    check_match("T le false", &x, 0);

    /* Tree shapes. */
    struct filter *f = compile("not A and B");
    TEST_CHECK(f && f->root->kind == FN_AND && f->root->nkids == 2 &&
                   f->root->kids->kind == FN_NOT && f->root->kids->next->kind == FN_BOOL,
               "tree: not A and B = AND(NOT A, B)");
    f = compile("A or B and C or D");
    TEST_CHECK(f && f->root->kind == FN_OR && f->root->nkids == 3 &&
                   f->root->kids->next->kind == FN_AND && f->root->kids->next->nkids == 2,
               "tree: A or B and C or D = OR(A, AND(B,C), D)");
    f = compile("A and B and C");
    TEST_CHECK(f && f->root->kind == FN_AND && f->root->nkids == 3, "and chain is one node");
}

/* doc/protocol.md, Filter examples: the three entities of table orders and each filter's rows. */
static void test_spec_examples(void)
{
    static struct ent rows[3];
    ent_init(&rows[0], "a", "1");
    add_i32(&rows[0], "Qty", 3);
    add_dbl(&rows[0], "Total", 12.5);
    add_i64(&rows[0], "Sku", 10);
    add_bool(&rows[0], "Active", 1);
    add_str(&rows[0], "Name", "Ann");
    ent_init(&rows[1], "a", "2");
    add_i32(&rows[1], "Qty", 7);
    add_dbl(&rows[1], "Total", 3.0);
    add_i64(&rows[1], "Sku", 20);
    add_bool(&rows[1], "Active", 0);
    add_str(&rows[1], "Name", "bob");
    ent_init(&rows[2], "b", "1");
    add_dbl(&rows[2], "Total", 99.0);
    add_bool(&rows[2], "Active", 1);
    add_str(&rows[2], "Name", "O'Neil");

    static const struct {
        const char *filter;
        const char *rows; /* "a/1 a/2" etc., "" for none */
    } table[] = {
        {"PartitionKey eq 'a'", "a/1 a/2"},
        {"PartitionKey eq 'a' and RowKey eq '2'", "a/2"},
        {"Qty gt 3", "a/2"},
        {"Qty ne 3", "a/2"},
        {"not (Qty eq 3)", "a/2 b/1"},
        {"Total ge 12", "a/1 b/1"},
        {"Sku eq 10", "a/1"},
        {"Qty eq 3.0", ""},
        {"Active", "a/1 b/1"},
        {"not Active", "a/2"},
        {"Name eq 'O''Neil'", "b/1"},
        {"Name gt 'B'", "a/2 b/1"},
        {"Name eq 'ann'", ""},
        {"Timestamp ge datetime'2000-01-01T00:00:00Z'", "a/1 a/2 b/1"},
        {"Qty eq 'x'", ""},
        {"(PartitionKey eq 'a' or PartitionKey eq 'b') and Active eq true", "a/1 b/1"},
        /* more cases */
        {"3 lt Qty", "a/2"},
        {"Sku eq 10L", "a/1"},
        {"Sku eq 10.0", ""},
        {"Total eq 3", "a/2"},
        {"Total lt 99", "a/1 a/2"},
        {"Qty eq 3L", ""},
        {"Active eq false", "a/2"},
        {"Active lt true", "a/2"},
        {"Active ge false", "a/1 a/2 b/1"},
        {"not (Missing eq 1)", "a/1 a/2 b/1"},
        {"Missing eq 1", ""},
        {"Name ge 'a'", "a/2"},
        {"Name lt 'a'", "a/1 b/1"},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        struct filter *f = compile(table[i].filter);
        char got[64] = "";
        if (!f) {
            strcpy(got, "(error)");
        } else {
            for (int r = 0; r < 3; r++)
                if (ematch(f, &rows[r].e)) {
                    if (got[0])
                        strcat(got, " ");
                    strcat(got, rows[r].e.pk);
                    strcat(got, "/");
                    strcat(got, rows[r].e.rk);
                }
        }
        snprintf(what, sizeof what, "filter example: %s", table[i].filter);
        TEST_EQ_STR(got, table[i].rows, what);
    }
    check_code("Qty eq Total", TERR_NotImplemented);
    check_code("Qty eq", TERR_InvalidInput);

    /* Counters: every examined entity is counted. */
    struct filter *f = compile("Qty gt 3");
    struct filter_stats st = {0, 0};
    filter_set_stats(f, &st);
    for (int r = 0; r < 3; r++)
        ematch(f, &rows[r].e);
    TEST_EQ_INT(st.examined, 3, "stats: examined");
    TEST_EQ_INT(st.matched, 1, "stats: matched");
    filter_set_stats(f, NULL);
    ematch(f, &rows[0].e);
    TEST_EQ_INT(st.examined, 3, "stats: detached");
}

static void test_tables(void)
{
    struct filter *f = compile_t("TableName eq 'orders'", FILTER_TABLES);
    TEST_CHECK(f != NULL, "tables: eq compiles");
    TEST_EQ_INT(filter_match_table(f, "orders", 6), 1, "tables: eq match");
    TEST_EQ_INT(filter_match_table(f, "Orders", 6), 0, "tables: eq is case-sensitive");
    TEST_EQ_INT(filter_match_table(f, "orders2", 7), 0, "tables: eq exact");
    f = compile_t("TableName ge 'ord' and TableName lt 'ore'", FILTER_TABLES);
    TEST_EQ_INT(filter_match_table(f, "orders", 6), 1, "tables: prefix idiom in");
    TEST_EQ_INT(filter_match_table(f, "ord", 3), 1, "tables: prefix idiom, the prefix itself");
    TEST_EQ_INT(filter_match_table(f, "ore", 3), 0, "tables: prefix idiom, the end");
    TEST_EQ_INT(filter_match_table(f, "Orders", 6), 0, "tables: prefix idiom, other case");
    f = compile_t("not (TableName eq 'a')", FILTER_TABLES);
    TEST_EQ_INT(filter_match_table(f, "b", 1), 1, "tables: not");
    TEST_EQ_INT(filter_match(f, NULL), 0, "tables filter never matches entities");

    /* doc/protocol.md, Filtering tables: other properties -> empty result. */
    f = compile_t("Name eq 'orders'", FILTER_TABLES);
    TEST_CHECK(f != NULL, "tables: other property compiles");
    TEST_EQ_INT(filter_match_table(f, "orders", 6), 0, "tables: other property never matches");
    f = compile_t("not (Name eq 'orders') or TableName eq 'orders'", FILTER_TABLES);
    TEST_EQ_INT(filter_match_table(f, "orders", 6), 0, "tables: whole filter never matches");
    f = compile_t("PartitionKey eq 'a'", FILTER_TABLES);
    TEST_EQ_INT(filter_match_table(f, "a", 1), 0, "tables: PartitionKey is another property");
    struct filter_plan p;
    filter_plan(f, A, &p);
    TEST_EQ_INT(p.n, 0, "tables: other property -> empty plan");
    struct filter_options o = {FILTER_MISMATCH_FALSE, 0, 1};
    topt = o;
    TEST_EQ_INT(compile_err_t("Name eq 'x'", FILTER_TABLES, NULL), TERR_InternalError,
                "tables strict: InternalError");
    o.tables_strict = 0;
    topt = o;
    /* In an entity filter TableName is an ordinary property. */
    struct ent x;
    ent_init(&x, "a", "1");
    add_str(&x, "TableName", "t");
    check_match("TableName eq 't'", &x, 1);
    /* Table filters report errors like entity filters. */
    TEST_EQ_INT(compile_err_t("TableName eq", FILTER_TABLES, NULL), TERR_InvalidInput,
                "tables: syntax error");
    /* A table filter with its counters. */
    f = compile_t("TableName gt 'm'", FILTER_TABLES);
    struct filter_stats st = {0, 0};
    filter_set_stats(f, &st);
    filter_match_table(f, "a", 1);
    filter_match_table(f, "z", 1);
    TEST_CHECK(st.examined == 2 && st.matched == 1, "tables: stats");
}

/* ---- the literals true and false (issue 14 point 5) ---- */

/* Error code and message of text for target t. */
static void check_not_boolean(const char *text, enum filter_target t, int whole)
{
    const char *msg = NULL;
    TEST_EQ_INT(compile_err_t(text, t, &msg), TERR_InvalidInput, label("not Boolean: %s", text));
    if (whole)
        TEST_EQ_STR(msg, "The $filter expression must evaluate to a single boolean value.",
                    label("not Boolean message: %s", text));
    else
        TEST_CHECK(msg == NULL, label("generic message under and/or/not: %s", text));
}

static void test_constants(void)
{
    struct ent x;
    ent_init(&x, "a", "1");
    add_bool(&x, "Active", 1);
    add_str(&x, "Name", "n");
    /* Whole filters and operands of and / or / not, any case. */
    check_match("true", &x, 1);
    check_match("false", &x, 0);
    check_match("TRUE", &x, 1);
    check_match("False", &x, 0);
    check_match("(true)", &x, 1);
    check_match("not true", &x, 0);
    check_match("not false", &x, 1);
    check_match("not not false", &x, 0);
    check_match("true and Active", &x, 1);
    check_match("false and Active", &x, 0);
    check_match("false or Active", &x, 1);
    check_match("true or RowKey eq '2'", &x, 1);
    check_match("(true and RowKey eq '1') or (false or PartitionKey eq 'x')", &x, 1);
    check_match("(true and RowKey eq '2') or (false or PartitionKey eq 'x')", &x, 0);
    check_match("(false or PartitionKey eq 'a') and not false", &x, 1);
    /* A bare custom property is still a per-entity Boolean test. */
    check_match("Active", &x, 1);
    check_match("Name", &x, 0);
    check_match("not Name", &x, 1);
    /* Not Boolean at the top: the service's message (Azurite#1185). */
    check_not_boolean("1", FILTER_ENTITIES, 1);
    check_not_boolean("(1)", FILTER_ENTITIES, 1);
    check_not_boolean("((1.5))", FILTER_ENTITIES, 1);
    check_not_boolean("'x'", FILTER_ENTITIES, 1);
    check_not_boolean("datetime'2024-06-01T00:00:00Z'", FILTER_ENTITIES, 1);
    check_not_boolean("guid'4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11'", FILTER_ENTITIES, 1);
    check_not_boolean("X'01'", FILTER_ENTITIES, 1);
    check_not_boolean("5L", FILTER_ENTITIES, 1);
    check_not_boolean("PartitionKey", FILTER_ENTITIES, 1);
    check_not_boolean("RowKey", FILTER_ENTITIES, 1);
    check_not_boolean("(Timestamp)", FILTER_ENTITIES, 1);
    check_not_boolean("TableName", FILTER_TABLES, 1);
    /* ... and under and / or / not: the generic message. */
    check_not_boolean("1 and Active", FILTER_ENTITIES, 0);
    check_not_boolean("Active or 'x'", FILTER_ENTITIES, 0);
    check_not_boolean("not 1", FILTER_ENTITIES, 0);
    check_not_boolean("not PartitionKey", FILTER_ENTITIES, 0);
    check_not_boolean("true and RowKey", FILTER_ENTITIES, 0);
    check_not_boolean("TableName eq 'a' or TableName", FILTER_TABLES, 0);
    /* Syntax errors still win; null keeps its own message. */
    check_syntax("true and", 8);
    check_syntax("1 and (", 7);
    TEST_EQ_INT(compile_err("null", NULL), TERR_InvalidInput, "bare null");
    const char *msg = NULL;
    compile_err("null", &msg);
    TEST_EQ_STR(msg, "A query expression may not contain null values.", "bare null message");
    /* Constants are no comparisons for the comparison limit. */
    struct filter_options o = {FILTER_MISMATCH_FALSE, 1, 0};
    topt = o;
    TEST_EQ_INT(compile_err("true and PartitionKey eq 'a' and not false", NULL), TERR_NONE,
                "constants do not count towards max_comparisons");
    o.max_comparisons = 0;
    topt = o;
    /* Query Tables. */
    struct filter *f = compile_t("true", FILTER_TABLES);
    TEST_CHECK(f && filter_match_table(f, "orders", 6) == 1, "tables: true matches");
    f = compile_t("false or TableName eq 'orders'", FILTER_TABLES);
    TEST_CHECK(f && filter_match_table(f, "orders", 6) == 1 && filter_match_table(f, "x", 1) == 0,
               "tables: false or TableName eq");
    f = compile_t("false", FILTER_TABLES);
    TEST_CHECK(f && filter_match_table(f, "orders", 6) == 0, "tables: false matches nothing");
}

/* ---- planner ---- */

static struct filter_plan plan_t(const char *text, enum filter_target t)
{
    struct filter_plan p = {NULL, 0};
    struct filter *f = compile_t(text, t);
    if (!f) {
        p.n = 999;
        return p;
    }
    filter_plan(f, A, &p);
    return p;
}

static struct filter_plan plan(const char *text)
{
    return plan_t(text, FILTER_ENTITIES);
}

/* Renders a bound as "-inf", "+inf", "[pk" / "(pk" (partition) or
 * "[pk/rk" / "(pk/rk"; upper bounds end with ']' or ')' instead. */
static void bound_text(char *out, size_t cap, const struct filter_bound *b, int upper)
{
    size_t n = strlen(out);
    if (b->unbounded) {
        snprintf(out + n, cap - n, "%s", upper ? "+inf" : "-inf");
        return;
    }
    char key[200];
    if (b->has_rk)
        snprintf(key, sizeof key, "%.*s/%.*s", (int)b->pk_len, b->pk, (int)b->rk_len, b->rk);
    else
        snprintf(key, sizeof key, "%.*s", (int)b->pk_len, b->pk);
    if (upper)
        snprintf(out + n, cap - n, "%s%c", key, b->inclusive ? ']' : ')');
    else
        snprintf(out + n, cap - n, "%c%s", b->inclusive ? '[' : '(', key);
}

/* "lo,hi lo,hi ..." for a plan; "none" when empty. */
static const char *plan_text(const struct filter_plan *p)
{
    static char out[4096];
    out[0] = '\0';
    if (p->n == 999)
        return "(error)";
    if (p->n == 0)
        return "none";
    for (size_t i = 0; i < p->n && strlen(out) < sizeof out - 600; i++) {
        if (i)
            strcat(out, " ");
        bound_text(out, sizeof out, &p->ranges[i].lo, 0);
        strcat(out, ",");
        bound_text(out, sizeof out, &p->ranges[i].hi, 1);
    }
    return out;
}

static void check_plan_t(const char *text, enum filter_target t, const char *expect)
{
    struct filter_plan p = plan_t(text, t);
    TEST_EQ_STR(plan_text(&p), expect, label("plan: %s", text));
}

static void check_plan(const char *text, const char *expect)
{
    check_plan_t(text, FILTER_ENTITIES, expect);
}

static void test_plan(void)
{
    const char *full = "-inf,+inf";
    /* Point, partition, RowKey range in a partition, PartitionKey range. */
    check_plan("PartitionKey eq 'a' and RowKey eq '1'", "[a/1,a/1]");
    check_plan("RowKey eq '1' and PartitionKey eq 'a'", "[a/1,a/1]");
    check_plan("PartitionKey eq 'a'", "[a,a]");
    check_plan("'a' eq PartitionKey", "[a,a]");
    check_plan("PartitionKey eq 'a' and RowKey ge '5'", "[a/5,a]");
    check_plan("PartitionKey eq 'a' and RowKey gt '5'", "(a/5,a]");
    check_plan("PartitionKey eq 'a' and RowKey lt '5'", "[a,a/5)");
    check_plan("PartitionKey eq 'a' and RowKey le '5'", "[a,a/5]");
    check_plan("PartitionKey eq 'a' and RowKey ge '2' and RowKey lt '5'", "[a/2,a/5)");
    check_plan("PartitionKey eq 'a' and '5' gt RowKey", "[a,a/5)");
    check_plan("PartitionKey gt 'a'", "(a,+inf");
    check_plan("PartitionKey ge 'a'", "[a,+inf");
    check_plan("PartitionKey lt 'm'", "-inf,m)");
    check_plan("PartitionKey le 'm'", "-inf,m]");
    check_plan("PartitionKey ge 'a' and PartitionKey lt 'm'", "[a,m)");
    check_plan("PartitionKey ne 'm'", "-inf,m) (m,+inf");
    /* A RowKey bound on a PartitionKey range trims the first and last
     * partition only when they are included. */
    check_plan("PartitionKey ge 'a' and PartitionKey le 'm' and RowKey ge '5' and RowKey lt '7'",
               "[a/5,m/7)");
    check_plan("PartitionKey gt 'a' and PartitionKey lt 'm' and RowKey ge '5'", "(a,m)");
    /* Full scans. */
    check_plan("RowKey eq '1'", full);
    check_plan("Qty eq 3", full);
    check_plan("Active", full);
    check_plan("Timestamp ge datetime'2000-01-01T00:00:00Z'", full);
    check_plan("not (PartitionKey eq 'a')", full);
    check_plan("not (PartitionKey ne 'a')", full);
    check_plan("PartitionKey eq 'a' or Qty eq 3", full);
    /* Or of points / partitions. */
    check_plan("(PartitionKey eq 'a' and RowKey eq '1') or (PartitionKey eq 'b' and RowKey eq '2')",
               "[a/1,a/1] [b/2,b/2]");
    check_plan("(PartitionKey eq 'b' and RowKey eq '2') or (PartitionKey eq 'a' and RowKey eq '1')",
               "[a/1,a/1] [b/2,b/2]");
    check_plan("PartitionKey eq 'c' or PartitionKey eq 'a' or PartitionKey eq 'b'",
               "[a,a] [b,b] [c,c]");
    check_plan("PartitionKey eq 'a' or PartitionKey eq 'a'", "[a,a]");
    check_plan("PartitionKey eq 'a' and (RowKey eq '1' or RowKey eq '2')", "[a/1,a/1] [a/2,a/2]");
    check_plan("(PartitionKey eq 'a' or PartitionKey eq 'b') and RowKey eq '1'",
               "[a/1,a/1] [b/1,b/1]");
    /* Overlapping ranges merge. */
    check_plan("PartitionKey eq 'b' or (PartitionKey ge 'a' and PartitionKey lt 'c')", "[a,c)");
    check_plan("(PartitionKey ge 'a' and PartitionKey le 'f') or (PartitionKey ge 'd' and "
               "PartitionKey le 'k')",
               "[a,k]");
    check_plan("PartitionKey lt 'b' or PartitionKey gt 'a'", full);
    check_plan("(PartitionKey eq 'a' and RowKey lt '5') or (PartitionKey eq 'a' and RowKey ge '3')",
               "[a,a]");
    check_plan("(PartitionKey eq 'a' and RowKey lt '3') or (PartitionKey eq 'a' and RowKey gt '5')",
               "[a,a/3) (a/5,a]");
    /* And of ranges intersects. */
    check_plan("PartitionKey ge 'a' and PartitionKey ge 'c' and PartitionKey le 'x' and "
               "PartitionKey lt 'k'",
               "[c,k)");
    check_plan("(PartitionKey ge 'a' and PartitionKey le 'f') and (PartitionKey ge 'd' and "
               "PartitionKey le 'k')",
               "[d,f]");
    /* Other properties mixed in: ranges from the key parts only. */
    check_plan("PartitionKey eq 'a' and Qty gt 3", "[a,a]");
    check_plan("Qty gt 3 and PartitionKey eq 'a' and Name eq 'x' and RowKey eq '1'", "[a/1,a/1]");
    check_plan("PartitionKey eq 'a' and (Qty gt 3 or RowKey eq '1')", "[a,a]");
    check_plan("PartitionKey eq 'a' and not (RowKey eq '1')", "[a,a]");
    /* Contradictions -> empty plan. */
    check_plan("PartitionKey eq 'a' and PartitionKey eq 'b'", "none");
    check_plan("PartitionKey gt 'm' and PartitionKey lt 'c'", "none");
    check_plan("PartitionKey gt 'm' and PartitionKey le 'm'", "none");
    check_plan("PartitionKey eq 'a' and RowKey eq '1' and RowKey eq '2'", "none");
    check_plan("PartitionKey eq 1", "none"); /* type mismatch never matches */
    check_plan("false", "none");
    check_plan("PartitionKey eq 'a' and PartitionKey ne 'a'", "none");
    check_plan("(PartitionKey eq 'a' and PartitionKey eq 'b') or PartitionKey eq 'c'", "[c,c]");
    /* Constants fold: false scans nothing, true and X plans as X. */
    check_plan("false", "none");
    check_plan("not true", "none");
    check_plan("not (true and not false)", "none");
    check_plan("true", full);
    check_plan("not false", full);
    check_plan("true and PartitionKey eq 'a' and RowKey eq '1'", "[a/1,a/1]");
    check_plan("PartitionKey eq 'a' and true", "[a,a]");
    check_plan("false or PartitionKey eq 'a'", "[a,a]");
    check_plan("PartitionKey eq 'a' or false or PartitionKey eq 'b'", "[a,a] [b,b]");
    check_plan("false and PartitionKey eq 'a'", "none");
    check_plan("PartitionKey eq 'a' and not true", "none");
    check_plan("true or PartitionKey eq 'a'", full);
    check_plan("(true and RowKey eq '1' and PartitionKey eq 'p') or (false or PartitionKey eq 'x')",
               "[p/1,p/1] [x,x]");
    check_plan("not (false or PartitionKey eq 'a')", full);
    /* Under the CloudStub mismatch rule ne/lt/le on a mismatch match all. */
    struct filter_options o = {FILTER_MISMATCH_CLOUDSTUB, 0, 0};
    topt = o;
    check_plan("PartitionKey ne 1", full);
    check_plan("PartitionKey eq 1", "none");
    o.mismatch = FILTER_MISMATCH_FALSE;
    topt = o;

    /* Point detection and membership. */
    struct filter_plan p = plan("PartitionKey eq 'a' and RowKey eq '1'");
    TEST_CHECK(p.n == 1 && filter_range_is_point(&p.ranges[0]), "point detected");
    TEST_CHECK(filter_plan_contains(&p, "a", 1, "1", 1), "point contains its key");
    TEST_CHECK(!filter_plan_contains(&p, "a", 1, "2", 1), "point excludes others");
    TEST_CHECK(!filter_plan_is_full(&p), "point is not full");
    p = plan("PartitionKey eq 'a'");
    TEST_CHECK(p.n == 1 && !filter_range_is_point(&p.ranges[0]), "partition is not a point");
    TEST_CHECK(filter_plan_contains(&p, "a", 1, "", 0), "partition contains empty RK");
    TEST_CHECK(filter_plan_contains(&p, "a", 1, "zzz", 3), "partition contains any RK");
    TEST_CHECK(!filter_plan_contains(&p, "ab", 2, "", 0), "partition excludes longer PK");
    TEST_CHECK(!filter_plan_contains(&p, "", 0, "a", 1), "partition excludes smaller PK");
    p = plan("PartitionKey gt 'a'");
    TEST_CHECK(!filter_plan_contains(&p, "a", 1, "zzz", 3), "PK gt excludes the partition");
    TEST_CHECK(filter_plan_contains(&p, "a ", 2, "", 0), "PK gt includes the next key");
    p = plan("PartitionKey lt 'b'");
    TEST_CHECK(!filter_plan_contains(&p, "b", 1, "", 0), "PK lt excludes the partition");
    TEST_CHECK(filter_plan_contains(&p, "a", 1, "zzz", 3), "PK lt includes below");
    p = plan("Qty eq 1");
    TEST_CHECK(filter_plan_is_full(&p), "full plan");
    TEST_CHECK(filter_plan_contains(&p, "x", 1, "y", 1), "full contains anything");

    /* Too many ranges fall back to their hull. */
    {
        size_t n = 0, cap = 64 * 1024;
        char *t = malloc(cap);
        for (int i = 0; i < FILTER_PLAN_MAX_RANGES + 1; i++)
            n += (size_t)snprintf(t + n, cap - n, "%sPartitionKey eq 'k%03d'", i ? " or " : "",
                                  i);
        struct filter_plan q = plan(t);
        TEST_EQ_STR(plan_text(&q), "[k000,k100]", "101 partitions -> hull");
        n = 0;
        for (int i = 0; i < FILTER_PLAN_MAX_RANGES; i++)
            n += (size_t)snprintf(t + n, cap - n, "%sPartitionKey eq 'k%03d'", i ? " or " : "",
                                  i);
        q = plan(t);
        TEST_EQ_INT(q.n, FILTER_PLAN_MAX_RANGES, "100 partitions -> 100 ranges");
        TEST_CHECK(filter_plan_contains(&q, "k050", 4, "x", 1) &&
                       !filter_plan_contains(&q, "k0505", 5, "x", 1),
                   "100 partitions: membership");
        /* (100 partitions) and (100 row keys): product capped, still sound. */
        n = 0;
        n += (size_t)snprintf(t + n, cap - n, "(");
        for (int i = 0; i < 60; i++)
            n += (size_t)snprintf(t + n, cap - n, "%sPartitionKey eq 'p%02d'", i ? " or " : "", i);
        n += (size_t)snprintf(t + n, cap - n, ") and (");
        for (int i = 0; i < 60; i++)
            n += (size_t)snprintf(t + n, cap - n, "%sRowKey eq 'r%02d'", i ? " or " : "", i);
        n += (size_t)snprintf(t + n, cap - n, ")");
        q = plan(t);
        TEST_CHECK(q.n >= 1 && q.n <= FILTER_PLAN_MAX_RANGES, "60 x 60 product capped");
        TEST_CHECK(filter_plan_contains(&q, "p17", 3, "r42", 3), "60 x 60: sound");
        free(t);
    }

    /* Tables: TableName ranges, case-sensitive; folded for lower-case keys. */
    check_plan_t("TableName eq 'orders'", FILTER_TABLES, "[orders,orders]");
    check_plan_t("TableName ge 'ord' and TableName lt 'ore'", FILTER_TABLES, "[ord,ore)");
    check_plan_t("TableName eq 'b' or TableName eq 'a'", FILTER_TABLES, "[a,a] [b,b]");
    check_plan_t("TableName ne 'a'", FILTER_TABLES, "-inf,a) (a,+inf");
    check_plan_t("false", FILTER_TABLES, "none");
    check_plan_t("true and TableName eq 'a'", FILTER_TABLES, "[a,a]");
    check_plan_t("not (TableName eq 'a')", FILTER_TABLES, full);
    check_plan_t("TableName eq 'a' and Other eq 1", FILTER_TABLES, "none");

    static const struct {
        const char *filter, *folded;
    } folds[] = {
        {"TableName eq 'Orders'", "[orders,orders]"},
        {"TableName ge 'ord' and TableName lt 'ore'", "[ord,os)"},
        {"TableName ge 'Ord' and TableName lt 'Ore'", "[or,os)"},
        {"TableName ge 'abc'", "[abc,+inf"},
        {"TableName gt 'abc'", "(abc,+inf"},
        {"TableName ge 'aBc'", "[a,+inf"},
        {"TableName ge 'Z'", "-inf,+inf"},
        {"TableName lt 'M'", "-inf,m)"},
        {"TableName le 'M1'", "-inf,m1]"},
        {"TableName lt 'Ma'", "-inf,n)"},
        {"TableName lt 'a'", "-inf,+inf"},
        {"TableName eq 'a' or TableName eq 'B'", "[a,a] [b,b]"},
        {"TableName eq 'a' or TableName eq 'A'", "[a,a]"},
    };
    for (size_t i = 0; i < sizeof folds / sizeof *folds; i++) {
        struct filter_plan in = plan_t(folds[i].filter, FILTER_TABLES), out;
        filter_plan_fold_case(A, &in, &out);
        TEST_EQ_STR(plan_text(&out), folds[i].folded, label("fold: %s", folds[i].filter));
    }

    /* Soundness: for many filters and names, every name matching the filter
     * lies in the plan, and its lower-cased form in the folded plan. */
    static const char *const names[] = {"a", "A", "Z", "z", "ab", "aB", "Ab", "ord", "Orders",
                                        "orders", "ore", "ORE", "m", "M1", "m1", "Ma", "mA",
                                        "n", "x9", "X9", "0a", "a0", "Az", "aZ", "zz"};
    static const char *const bounds[] = {"a", "A", "Z", "ord", "Ore", "m", "M1", "Ma", "aZ",
                                         "0", "["};
    int sound = 1, fold_sound = 1;
    size_t nn = sizeof names / sizeof *names;
    for (size_t b1 = 0; b1 < sizeof bounds / sizeof *bounds; b1++)
        for (size_t b2 = 0; b2 < sizeof bounds / sizeof *bounds; b2++)
            for (int o1 = 0; o1 < 6; o1++)
                for (int o2 = 0; o2 < 6; o2++) {
                    char text[128];
                    snprintf(text, sizeof text, "TableName %s '%s' %s TableName %s '%s'",
                             op_names[o1], bounds[b1], (o1 + o2) % 2 ? "or" : "and",
                             op_names[o2], bounds[b2]);
                    struct filter *f = compile_t(text, FILTER_TABLES);
                    struct filter_plan in, out;
                    filter_plan(f, A, &in);
                    filter_plan_fold_case(A, &in, &out);
                    for (size_t k = 0; k < nn; k++) {
                        size_t ln = strlen(names[k]);
                        if (!filter_match_table(f, names[k], ln))
                            continue;
                        char low[16];
                        for (size_t j = 0; j <= ln; j++)
                            low[j] = (char)((names[k][j] >= 'A' && names[k][j] <= 'Z')
                                                ? names[k][j] + 32
                                                : names[k][j]);
                        if (!filter_plan_contains(&in, names[k], ln, NULL, 0)) {
                            if (sound)
                                printf("# unsound: %s for %s\n", text, names[k]);
                            sound = 0;
                        }
                        if (!filter_plan_contains(&out, low, ln, NULL, 0)) {
                            if (fold_sound)
                                printf("# fold unsound: %s for %s\n", text, names[k]);
                            fold_sound = 0;
                        }
                    }
                }
    TEST_CHECK(sound, "table plans contain every matching name");
    TEST_CHECK(fold_sound, "folded table plans contain every matching lower-cased name");
}

/* memcmp order of two byte strings (shorter prefix first). */
static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : an < bn ? -1 : an > bn ? 1 : 0;
}

/* 1 when the backend key of (pk, rk) in table id falls into one of the
 * [start, end) intervals filter_range_keys gives for p. */
static int keys_contain(const struct filter_plan *p, uint64_t id, const char *pk, const char *rk)
{
    struct buf k, start, end;
    int in = 0;
    buf_init(&k);
    buf_init(&start);
    buf_init(&end);
    keys_entity(&k, id, pk, strlen(pk), rk, strlen(rk));
    for (size_t i = 0; i < p->n && !in; i++) {
        buf_reset(&start);
        buf_reset(&end);
        filter_range_keys(&p->ranges[i], id, &start, &end);
        in = bytes_cmp(start.data, start.len, k.data, k.len) <= 0 &&
             bytes_cmp(k.data, k.len, end.data, end.len) < 0;
    }
    buf_free(&k);
    buf_free(&start);
    buf_free(&end);
    return in;
}

static void test_plan_nul(void)
{
    static const struct {
        const char *text;
        size_t len;
        const char *plan;
    } cases[] = {
        {"PartitionKey ge 'a\0x'", 21, "(a,+inf"},
        {"PartitionKey gt 'a\0x'", 21, "(a,+inf"},
        {"PartitionKey lt 'a\0x'", 21, "-inf,a]"},
        {"PartitionKey le 'a\0'", 20, "-inf,a]"},
        {"PartitionKey eq 'a\0'", 20, "none"},
        {"PartitionKey ne 'a\0'", 20, "-inf,+inf"},
        {"PartitionKey eq 'a' and RowKey ge 'r\0'", 38, "(a/r,a]"},
        {"PartitionKey eq 'a' and RowKey le '\0'", 37, "[a,a/]"},
    };
    static const char *const keys[] = {"", "a", "ab", "b", "r", "rr"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct filter *f;
        enum terr e;
        const char *m;
        struct filter_plan p = {NULL, 999};
        if (filter_compile(A, cases[i].text, cases[i].len, FILTER_ENTITIES, &topt, &f, &e, &m) == 0)
            filter_plan(f, A, &p);
        TEST_EQ_STR(plan_text(&p), cases[i].plan, label("NUL in key literal: %s", cases[i].text));
        if (p.n == 999)
            continue;
        int sound = 1;
        for (size_t a = 0; a < 6; a++)
            for (size_t b = 0; b < 6; b++) {
                struct ent x;
                ent_init(&x, keys[a], keys[b]);
                if (ematch(f, &x.e) && !keys_contain(&p, 7, keys[a], keys[b]))
                    sound = 0;
            }
        TEST_CHECK(sound, label("NUL in key literal, key intervals sound: %s", cases[i].text));
    }
}

/* Entity plans against brute force: every matching (pk, rk) of a small key
 * grid must be inside the plan, and filter_range_keys must give backend
 * key intervals holding exactly the keys filter_plan_contains accepts. */
static void test_plan_soundness(void)
{
    static const char *const keys[] = {"", "a", "a1", "b", "b\xc3\xa9", "\xef\xbf\xbd",
                                       "\xf0\x9f\x98\x80", "c"};
    static const char *const atoms[] = {
        "PartitionKey eq 'a'", "PartitionKey ne 'b'", "PartitionKey gt 'a'",
        "PartitionKey ge 'b'", "PartitionKey lt 'b'", "PartitionKey le 'a1'",
        "RowKey eq 'a'", "RowKey gt 'a1'", "RowKey lt '\xef\xbf\xbd'",
        "PartitionKey ge '\xf0\x9f\x98\x80'", "RowKey le 'b'", "Qty eq 1",
        "PartitionKey lt '\xef\xbf\xbd'", "RowKey ge ''", "true", "false"};
    static const char *const shapes[] = {"%s and %s", "%s or %s", "not (%s) and %s",
                                         "(%s or %s) and PartitionKey eq 'a'",
                                         "(%s and %s) or RowKey eq 'c'", "%s and not (%s)"};
    size_t nk = sizeof keys / sizeof *keys, na = sizeof atoms / sizeof *atoms;
    int sound = 1, plans = 0, keys_agree = 1;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t i = 0; i < na; i++)
            for (size_t j = 0; j < na; j++) {
                char text[256];
                snprintf(text, sizeof text, shapes[s], atoms[i], atoms[j]);
                struct filter *f = compile(text);
                if (!f) {
                    sound = 0;
                    continue;
                }
                struct filter_plan p;
                filter_plan(f, A, &p);
                plans++;
                for (size_t a = 0; a < nk; a++)
                    for (size_t b = 0; b < nk; b++) {
                        struct ent x;
                        ent_init(&x, keys[a], keys[b]);
                        add_i32(&x, "Qty", 1);
                        int in = filter_plan_contains(&p, keys[a], strlen(keys[a]), keys[b],
                                                      strlen(keys[b]));
                        if (ematch(f, &x.e) && !in) {
                            if (sound)
                                printf("# unsound: %s for %s/%s\n", text, keys[a], keys[b]);
                            sound = 0;
                        }
                        uint64_t id = (a + b) % 2 ? 5 : 0xFF; /* 0xFF: carry in prefix_end */
                        if (keys_contain(&p, id, keys[a], keys[b]) != in) {
                            if (keys_agree)
                                printf("# key interval differs: %s for %s/%s\n", text, keys[a],
                                       keys[b]);
                            keys_agree = 0;
                        }
                    }
                /* Each range must be sorted and disjoint from the next. */
                for (size_t r = 1; r < p.n; r++)
                    if (filter_strcmp16(p.ranges[r - 1].lo.pk, p.ranges[r - 1].lo.pk_len,
                                        p.ranges[r].lo.pk, p.ranges[r].lo.pk_len) > 0 &&
                        !p.ranges[r - 1].lo.unbounded)
                        sound = 0;
            }
    TEST_CHECK(plans > 1000, "many plans built");
    TEST_CHECK(sound, "entity plans contain every matching key");
    TEST_CHECK(keys_agree, "filter_range_keys intervals agree with filter_plan_contains");
}

/* filter_match reads the stored value in place: properties after long
 * strings and binaries are found, the first of a repeated name counts,
 * keys are read only by filters that name them, and a value the filter
 * reads malformed gives -1 (the scan skips the row). */
static void test_stored_rows(void)
{
    struct ent x;
    ent_init(&x, "pk", "rk");
    char big[300];
    memset(big, 'q', sizeof big);
    struct edm_value *v = ent_add(&x, "Big", EDM_STRING);
    v->u.s.ptr = big;
    v->u.s.len = sizeof big;
    add_bin(&x, "Bin", big, 200);
    add_i32(&x, "Num", 7);
    add_i32(&x, "Dup", 1);
    add_i32(&x, "Dup", 2);
    check_match("Num lt 10", &x, 1);
    check_match("Num lt 7", &x, 0);
    check_match("Dup eq 1", &x, 1);
    check_match("Dup eq 2", &x, 0);
    check_match("Nope eq 1 or Num eq 7", &x, 1);

    struct filter *f = compile("Num lt 10");
    TEST_EQ_INT(filter_needs_keys(f), 0, "a property filter needs no keys");
    struct buf val;
    buf_init(&val);
    entity_encode(&x.e, &val);
    struct filter_row row = {NULL, NULL, 0, 0, val.data, val.len};
    TEST_EQ_INT(filter_match(f, &row), 1, "matches without its keys decoded");
    TEST_EQ_INT(filter_needs_keys(compile("not (RowKey eq 'a') and Num lt 10")), 1,
                "RowKey under not: keys needed");
    TEST_EQ_INT(filter_needs_keys(compile("Num lt 10 or PartitionKey eq 'a'")), 1,
                "PartitionKey under or: keys needed");
    TEST_EQ_INT(filter_needs_keys(compile("Timestamp lt datetime'2030-01-01T00:00:00Z'")), 0,
                "Timestamp is in the value");

    /* Cut values: -1 where the filter reads past the cut, else its answer. */
    int wrong = 0;
    for (size_t cut = 0; cut < val.len; cut++) {
        row.val_len = cut;
        int r = filter_match(f, &row);
        if (r != -1 && r != 1)
            wrong++;
    }
    TEST_EQ_INT(wrong, 0, "cut values: -1 or the right answer");
    row.val_len = 5;
    TEST_EQ_INT(filter_match(f, &row), -1, "cut header: -1");
    row.val_len = val.len;
    struct filter *t = compile("true");
    row.val_len = 3;
    TEST_EQ_INT(filter_match(t, &row), -1, "a malformed header is -1 even for true");
    ((uint8_t *)val.data)[0] = 9;
    row.val_len = val.len;
    TEST_EQ_INT(filter_match(f, &row), -1, "unknown version: -1");
    buf_free(&val);
}

int main(void)
{
    A = arena_new(0);
    test_literals();
    test_errors();
    test_types();
    test_strcmp16();
    test_widening();
    test_mismatch();
    test_missing();
    test_logic();
    test_spec_examples();
    test_tables();
    test_constants();
    test_plan();
    test_plan_soundness();
    test_plan_nul();
    test_stored_rows();
    arena_free(A);
    return test_done();
}
