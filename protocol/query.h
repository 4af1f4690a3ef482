/* query.h - query options shared by Query Tables, Query Entities and Get
 * Entity: $filter (compiled once), $select, $top (doc/protocol.md, $select; $top). */
#ifndef TABLED_QUERY_H
#define TABLED_QUERY_H
#include <stddef.h>

#include "protocol/ctx.h"

enum query_kind { QUERY_TABLES, QUERY_ENTITIES, QUERY_POINT };

struct filter;
struct filter_row;

/* query_opts.top when the query has no $top. */
#define QUERY_NO_TOP (-1)

struct query_opts {
    int top;                    /* 0..1000, or QUERY_NO_TOP; 0 asks for an
                                   empty page (doc/protocol-notes.md) */
    const char *const *select;  /* NULL = all properties */
    size_t nselect;
    const char *select_text;    /* "a,b" as echoed in odata.metadata, or NULL */
    struct filter *filter;      /* compiled $filter, NULL when absent */
    const char *message;        /* detail for an error return, or NULL */
};

/* Parses the options of c's query string for kind. TERR_NONE or the error
 * (q->message may then hold the service's detailed message). */
enum terr query_opts_parse(struct req_ctx *c, enum query_kind kind, struct query_opts *q);

/* Query Tables: does table name match q's filter? */
int query_match_table(const struct query_opts *q, const char *name, size_t n);
/* Query Entities: does a stored row match q's filter? 1, 0, or -1 when
 * its value is malformed (see filter_match). */
int query_match_entity(const struct query_opts *q, const struct filter_row *row);

#endif
