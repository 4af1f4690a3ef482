/* filter_lex.c - $filter tokens (doc/protocol.md, Filter tokens; Filter literals).
 *
 * Words are identifiers and keywords; the parser decides which. Literals
 * are decoded here, once: strings lose their doubled quotes, numbers get
 * their Edm type (Int32, Int32 overflowing to Int64, Int64 with L, Double),
 * datetime/guid/binary literals are parsed with the edm.h helpers. */
#include <string.h>

#include "core/coding.h"
#include "codec/edm.h"
#include "filter/filter_ast.h"

/* Whitespace (doc/protocol.md, Filter tokens): SP, HTAB, and (REC) CR, LF. */
static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Identifier characters: ASCII letters, '_', and any non-ASCII byte (the
 * letters of other scripts; doc/protocol.md, Property names). Digits only after the first. */
static int is_word_start(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static int is_word_char(unsigned char c)
{
    return is_word_start(c) || is_digit(c);
}

/* Case-insensitive ASCII equality of w[0..n) and the lower-case word kw. */
static int word_ieq(const char *w, size_t n, const char *kw)
{
    size_t k = strlen(kw);
    if (n != k)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        if (c != (unsigned char)kw[i])
            return 0;
    }
    return 1;
}

int flex_is(const char *w, size_t n, const char *kw)
{
    return strlen(kw) == n && memcmp(w, kw, n) == 0;
}

/* 'text' with '' standing for one quote; lx->i is at the opening quote. */
static int lex_string(struct flexer *lx, struct ftok *t)
{
    size_t i = lx->i + 1, quotes = 0;
    for (;;) {
        if (i >= lx->n)
            return -1; /* unterminated: error at the opening quote */
        if (lx->s[i] == '\'') {
            if (i + 1 < lx->n && lx->s[i + 1] == '\'') {
                quotes++;
                i += 2;
                continue;
            }
            break;
        }
        i++;
    }
    size_t start = lx->i + 1, raw = i - start;
    char *out = arena_alloc(lx->a, raw - quotes + 1);
    size_t o = 0;
    for (size_t k = start; k < i; k++) {
        out[o++] = lx->s[k];
        if (lx->s[k] == '\'')
            k++; /* skip the second quote of a pair */
    }
    out[o] = '\0';
    t->kind = FT_LITERAL;
    t->lit.type = EDM_STRING;
    t->lit.u.s.ptr = out;
    t->lit.u.s.len = o;
    lx->i = i + 1;
    return 0;
}

/* Value of a datetime literal the edm parser calls out of range: the text
 * is well-formed but before 1601 (e.g. .NET DateTime.MinValue) or past
 * 9999 after a zone offset. Any tick count beyond the stored range compares
 * the same way with every stored value, so one just past the limit is used. */
static int64_t datetime_clamp(const char *s, size_t n)
{
    int year = 0;
    for (size_t i = 0; i < 4 && i < n; i++)
        year = year * 10 + (is_digit((unsigned char)s[i]) ? s[i] - '0' : 0);
    return year < 5000 ? EDM_DATETIME_MIN_TICKS - 1 : EDM_DATETIME_MAX_TICKS + 1;
}

/* prefix'body' for prefix in datetime, guid, X, binary (any case); lx->i
 * is at the quote after the prefix. Error position: the prefix. */
static int lex_typed(struct flexer *lx, struct ftok *t, const char *w, size_t wn)
{
    size_t start = lx->i + 1, i = start;
    while (i < lx->n && lx->s[i] != '\'')
        i++;
    if (i >= lx->n)
        return -1;
    const char *body = lx->s + start;
    size_t n = i - start;
    t->kind = FT_LITERAL;
    if (word_ieq(w, wn, "datetime")) {
        int rc = edm_datetime_parse(body, n, &t->lit.u.ticks);
        if (rc == EDM_ERANGE)
            t->lit.u.ticks = datetime_clamp(body, n);
        else if (rc != 0)
            return -1;
        t->lit.type = EDM_DATETIME;
    } else if (word_ieq(w, wn, "guid")) {
        if (edm_guid_parse(body, n, t->lit.u.guid) != 0)
            return -1;
        t->lit.type = EDM_GUID;
    } else {
        uint8_t *out = arena_alloc(lx->a, n / 2 + 1);
        if (coding_hex_decode(body, n, out) != 0)
            return -1;
        t->lit.type = EDM_BINARY;
        t->lit.u.s.ptr = (const char *)out;
        t->lit.u.s.len = n / 2;
    }
    lx->i = i + 1;
    return 0;
}

/* [-] digits [. digits] [e [+-] digits] [L | l | D | d]; also ".5" and
 * "5.". Plain integers are Int32, or Int64 when they do not fit. */
static int lex_number(struct flexer *lx, struct ftok *t)
{
    const char *s = lx->s;
    size_t i = lx->i, n = lx->n, digits = 0;
    int is_double = 0;
    if (s[i] == '-')
        i++;
    while (i < n && is_digit((unsigned char)s[i])) {
        i++;
        digits++;
    }
    if (i < n && s[i] == '.') {
        is_double = 1;
        i++;
        while (i < n && is_digit((unsigned char)s[i])) {
            i++;
            digits++;
        }
    }
    if (digits == 0)
        return -1;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t exp_digits = 0;
        is_double = 1;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        while (i < n && is_digit((unsigned char)s[i])) {
            i++;
            exp_digits++;
        }
        if (exp_digits == 0)
            return -1;
    }
    size_t text_end = i;
    int is_long = 0;
    if (i < n && (s[i] == 'L' || s[i] == 'l') && !is_double) {
        is_long = 1;
        i++;
    } else if (i < n && (s[i] == 'D' || s[i] == 'd')) {
        is_double = 1;
        i++;
    }
    /* A number must end at a delimiter: "3abc", "1.5.2", "7'x'" are errors. */
    if (i < n && (is_word_char((unsigned char)s[i]) || s[i] == '.' || s[i] == '\''))
        return -1;

    const char *txt = s + lx->i;
    size_t len = text_end - lx->i;
    t->kind = FT_LITERAL;
    if (is_double) {
        if (edm_double_parse(txt, len, 0, &t->lit.u.d) != 0)
            return -1;
        t->lit.type = EDM_DOUBLE;
    } else if (!is_long && edm_int32_parse(txt, len, &t->lit.u.i32) == 0) {
        t->lit.type = EDM_INT32;
    } else {
        if (edm_int64_parse(txt, len, &t->lit.u.i64) != 0)
            return -1;
        t->lit.type = EDM_INT64;
    }
    lx->i = i;
    return 0;
}

int flex_next(struct flexer *lx, struct ftok *t)
{
    const char *s = lx->s;
    size_t n = lx->n;
    memset(t, 0, sizeof *t);
    while (lx->i < n && is_space((unsigned char)s[lx->i]))
        lx->i++;
    t->pos = lx->i;
    if (lx->i >= n) {
        t->kind = FT_END;
        return 0;
    }
    unsigned char c = (unsigned char)s[lx->i];
    switch (c) {
    case '(':
        t->kind = FT_LPAREN;
        lx->i++;
        return 0;
    case ')':
        t->kind = FT_RPAREN;
        lx->i++;
        return 0;
    case '/':
        t->kind = FT_SLASH;
        lx->i++;
        return 0;
    case ',':
    case ':':
        t->kind = FT_PUNCT;
        lx->i++;
        return 0;
    case '\'':
        return lex_string(lx, t);
    default:
        break;
    }
    if (is_digit(c) || c == '-' || c == '.')
        return lex_number(lx, t);
    if (!is_word_start(c))
        return -1;

    size_t start = lx->i;
    while (lx->i < n && is_word_char((unsigned char)s[lx->i]))
        lx->i++;
    const char *w = s + start;
    size_t wn = lx->i - start;
    if (lx->i < n && s[lx->i] == '\'' &&
        (word_ieq(w, wn, "datetime") || word_ieq(w, wn, "guid") || word_ieq(w, wn, "x") ||
         word_ieq(w, wn, "binary")))
        return lex_typed(lx, t, w, wn);
    if (word_ieq(w, wn, "true") || word_ieq(w, wn, "false")) {
        t->kind = FT_LITERAL;
        t->lit.type = EDM_BOOLEAN;
        t->lit.u.b = (w[0] == 't' || w[0] == 'T');
        return 0;
    }
    if (word_ieq(w, wn, "null")) {
        t->kind = FT_NULL;
        return 0;
    }
    t->kind = FT_WORD;
    t->word = w;
    t->word_len = wn;
    return 0;
}
