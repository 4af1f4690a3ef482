/* query.c - $filter / $select / $top parsing (see query.h). */
#include "protocol/query.h"

#include "filter/filter.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* $top: an integer 0..1000 in plain digits (doc/protocol-notes.md,
 * "$top"): OData makes it a non-negative integer, the service answers 0
 * with an empty page, and refuses more than its 1000-item page. */
static enum terr parse_top(const char *s, int *top)
{
    if (!*s)
        return TERR_InvalidInput;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (!isdigit((unsigned char)*p))
            return TERR_InvalidInput;
        v = v * 10 + (*p - '0');
        if (v > 1000)
            return TERR_InvalidInput;
    }
    *top = (int)v;
    return TERR_NONE;
}

/* A $select name: a property name or "*". */
static int select_name_ok(const char *s, size_t n)
{
    if (n == 1 && s[0] == '*')
        return 1;
    if (n == 0 || n > 255)
        return 0;
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_' || (unsigned char)s[0] >= 0x80))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || (unsigned char)s[i] >= 0x80))
            return 0;
    return 1;
}

/* $select: comma-separated names, blanks around commas, duplicates once. */
static enum terr parse_select(struct req_ctx *c, const char *s, struct query_opts *q)
{
    size_t cap = 8, n = 0;
    const char **names = arena_alloc(c->a, cap * sizeof *names);
    struct buf echo;
    buf_init(&echo);
    int star = 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        size_t len = (size_t)(end - start);
        if (!select_name_ok(start, len)) {
            buf_free(&echo);
            return TERR_InvalidInput;
        }
        if (echo.len)
            buf_putc(&echo, ',');
        buf_append(&echo, start, len);
        if (len == 1 && *start == '*') {
            star = 1;
        } else {
            int dup = 0;
            for (size_t i = 0; i < n; i++)
                if (strlen(names[i]) == len && memcmp(names[i], start, len) == 0)
                    dup = 1;
            if (!dup) {
                if (n == 255) {
                    buf_free(&echo);
                    return TERR_InvalidInput;
                }
                if (n == cap) {
                    const char **nn = arena_alloc(c->a, 2 * cap * sizeof *nn);
                    memcpy(nn, names, n * sizeof *nn);
                    names = nn;
                    cap *= 2;
                }
                names[n++] = arena_strndup(c->a, start, len);
            }
        }
        if (!*p)
            break;
        p++;
    }
    q->select_text = arena_strndup(c->a, echo.data, echo.len);
    buf_free(&echo);
    if (!star) {
        q->select = names;
        q->nselect = n;
    }
    return TERR_NONE;
}

enum terr query_opts_parse(struct req_ctx *c, enum query_kind kind, struct query_opts *q)
{
    memset(q, 0, sizeof *q);
    q->top = QUERY_NO_TOP;
    const struct query_param *p;
    enum terr e;
    if (kind != QUERY_POINT && (p = url_query_get(c->qp, c->nqp, "$top")) &&
        (e = parse_top(p->value, &q->top)))
        return e;
    /* An empty $select= or $filter= is no option at all: Azure Storage
     * Explorer sends "?$select=&$filter=..." and the service answers it
     * like an absent one (Azure/Azurite#1573). $top= stays an error. */
    if ((p = url_query_get(c->qp, c->nqp, "$select")) && p->value_len > 0 &&
        kind != QUERY_TABLES && (e = parse_select(c, p->value, q)))
        return e;
    if (kind != QUERY_POINT && (p = url_query_get(c->qp, c->nqp, "$filter")) &&
        p->value_len > 0) {
        /* Compiled once here; evaluated per row without re-parsing. */
        if (filter_compile(c->a, p->value, p->value_len,
                           kind == QUERY_TABLES ? FILTER_TABLES : FILTER_ENTITIES, NULL,
                           &q->filter, &e, &q->message) != 0)
            return e;
    }
    return TERR_NONE;
}

int query_match_table(const struct query_opts *q, const char *name, size_t n)
{
    return !q->filter || filter_match_table(q->filter, name, n);
}

int query_match_entity(const struct query_opts *q, const struct filter_row *row)
{
    return !q->filter ? 1 : filter_match(q->filter, row);
}
